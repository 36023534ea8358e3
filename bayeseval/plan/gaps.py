"""Detectable gaps: trials per group to detect a difference between two groups' rates, and
the smallest gap detectable with given trials (two-sided two-proportion z-test).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from bayeseval._api.results import OneRowResult
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_real,
    check_probability,
    short_repr,
)
from bayeseval._kernels.sizing import STANDARD_NORMAL, ceil_count, normal_quantile

__all__ = ["detectable_gap", "GapPlan"]

_GAP_METHODS = ("pooled", "arcsine")


@dataclass(frozen=True, repr=False)
class GapPlan(OneRowResult):
    """Outcome of :func:`detectable_gap`.

    Attributes
    ----------
    n_per_group : int or float
        Trials per group: the (rounded-up) requirement when a gap was given,
        the given count when the gap was solved for.
    rate_a, rate_b : float
        The two groups' rates.
    gap : float
        ``rate_b - rate_a``.
    level, power : float
        Confidence level (1 - alpha) of the two-sided test and its power.
    method : str
        ``"pooled"`` or ``"arcsine"``.
    solved_for : str
        ``"n_per_group"`` or ``"gap"``.
    """

    n_per_group: float
    rate_a: float
    rate_b: float
    gap: float
    level: float
    power: float
    method: str
    solved_for: str


def _gap_n(pa: float, pb: float, za: float, zb: float, method: str) -> float:
    """Real-valued trials per group for the two-sided two-proportion z-test."""
    if method == "arcsine":
        h = 2 * np.arcsin(np.sqrt(pb)) - 2 * np.arcsin(np.sqrt(pa))
        return float(2.0 * ((za + zb) / h) ** 2)
    pbar = (pa + pb) / 2.0
    num = za * np.sqrt(2 * pbar * (1 - pbar)) + zb * np.sqrt(pa * (1 - pa) + pb * (1 - pb))
    return float(num**2 / (pb - pa) ** 2)


def detectable_gap(
    *,
    rate_a: float,
    rate_b: float | None = None,
    n_per_group: float | None = None,
    gap: float | None = None,
    level: float = 0.95,
    power: float = 0.8,
    method: str = "pooled",
    direction: str = "up",
) -> GapPlan:
    r"""Trials per group to detect a difference between two rates, or the reverse.

    Two groups with ``n`` trials each; the two-sided two-proportion z-test at
    significance :math:`\alpha = 1 - \text{level}` should reject with
    probability ``power`` when the rates are :math:`p_a` and :math:`p_b`.
    With :math:`\bar p = (p_a + p_b)/2` (``method="pooled"``, variance pooled
    under the null, unpooled under the alternative; the far tail ignored):

    .. math::

        n = \frac{\left(z_{1-\alpha/2}\sqrt{2\bar p(1-\bar p)}
              + z_{\text{power}}\sqrt{p_a(1-p_a) + p_b(1-p_b)}\right)^2}{(p_b - p_a)^2}

    rounded up. ``method="arcsine"`` uses Cohen's effect size
    :math:`h = 2\arcsin\sqrt{p_b} - 2\arcsin\sqrt{p_a}` and
    :math:`n = 2\,((z_{1-\alpha/2} + z_{\text{power}})/h)^2` (each arcsine-transformed
    rate has variance :math:`1/(4n)`, so :math:`2\arcsin\sqrt{\hat p}` has :math:`1/n`).

    Give ``rate_b`` (or ``gap``, with ``rate_b = rate_a + gap``) to get the
    trials per group; give ``n_per_group`` instead to get the smallest gap
    :math:`|p_b - p_a|` detectable with that many trials, upward
    (:math:`p_b > p_a`, ``direction="up"``) or downward (``"down"``), as the
    root of :math:`n(p_b) = n_{\text{per group}}` (found with
    :func:`scipy.optimize.brentq`; :math:`n(p_b)` decreases as :math:`p_b`
    moves away from :math:`p_a`).

    Parameters
    ----------
    rate_a : float
        Rate of group A, in (0, 1).
    rate_b : float, optional
        Rate of group B, in (0, 1), different from ``rate_a``.
    n_per_group : float, optional
        Trials per group (to solve for the gap).
    gap : float, optional
        ``rate_b - rate_a`` (alternative to ``rate_b``).
    level : float, default 0.95
        1 - significance level of the two-sided test.
    power : float, default 0.8
        Probability of detecting the gap.
    method : {"pooled", "arcsine"}, default "pooled"
        Variance of the test statistic: pooled under the null, or the
        arcsine transform (Cohen's h).
    direction : {"up", "down"}, default "up"
        Side of ``rate_a`` on which the detectable ``rate_b`` is searched
        (only when solving for the gap).

    Returns
    -------
    GapPlan
        The trials per group, both rates, the gap and what was solved for.

    Examples
    --------
    >>> detectable_gap(rate_a=0.663, rate_b=0.709).n_per_group
    1597
    >>> round(detectable_gap(rate_a=0.663, n_per_group=1597).gap, 4)
    0.046
    """
    rate_a = check_probability(rate_a, "rate_a", open_interval=True)
    level = check_level(level)
    power = check_level(power, "power")
    method = check_method(method, _GAP_METHODS)
    direction = check_method(direction, ("up", "down"), "direction")
    given = [x is not None for x in (rate_b, n_per_group, gap)]
    if sum(given) != 1:
        raise ValueError(
            "give exactly one of rate_b, gap (to get n_per_group) and n_per_group (to get the gap); "
            f"got rate_b={rate_b!r}, gap={gap!r}, n_per_group={n_per_group!r}"
        )
    za = normal_quantile(level)
    zb = STANDARD_NORMAL.inv_cdf(power)
    if n_per_group is None:
        rate_b = _rate_b(rate_a, rate_b, gap)
        n = ceil_count(_gap_n(rate_a, rate_b, za, zb, method))
        return GapPlan(n, rate_a, rate_b, rate_b - rate_a, level, power, method, "n_per_group")
    n_target = check_positive_real(n_per_group, "n_per_group")
    rate_b = _detectable_rate(rate_a, n_target, za, zb, method, direction, power)
    return GapPlan(n_target, rate_a, rate_b, rate_b - rate_a, level, power, method, "gap")


def _rate_b(rate_a: float, rate_b: Any, gap: Any) -> float:
    """The validated rate of group B, given directly or as ``rate_a + gap``."""
    if gap is not None:
        if isinstance(gap, bool) or not isinstance(gap, Real) or not np.isfinite(gap):
            raise TypeError(f"gap must be a finite number, got {short_repr(gap)}")
        if gap == 0:
            raise ValueError("gap must not be 0 (no sample size detects a zero difference)")
        rate_b = rate_a + float(gap)
        if not 0 < rate_b < 1:
            raise ValueError(f"gap={gap!r} puts rate_b = rate_a + gap = {rate_b!r} outside (0, 1)")
    rate_b = check_probability(rate_b, "rate_b", open_interval=True)
    if rate_b == rate_a:
        raise ValueError(f"rate_b must differ from rate_a (both {rate_a!r})")
    return rate_b


def _detectable_rate(
    rate_a: float, n_target: float, za: float, zb: float, method: str, direction: str, power: float
) -> float:
    """The rate B at which ``n_target`` trials per group give the requested power."""

    def f(pb: float) -> float:
        return _gap_n(rate_a, pb, za, zb, method) - n_target

    edge = 1.0 - 1e-12 if direction == "up" else 1e-12
    if f(edge) > 0:
        raise ValueError(
            f"n_per_group={n_target:g} is too small to detect any "
            f"{'increase' if direction == 'up' else 'decrease'} "
            f"from rate_a={rate_a!r} at power {power:g}"
        )
    from scipy import optimize  # deferred: only this solve needs it

    near = rate_a + 1e-12 if direction == "up" else rate_a - 1e-12
    return float(optimize.brentq(f, min(near, edge), max(near, edge), xtol=1e-14, rtol=1e-14, maxiter=500))
