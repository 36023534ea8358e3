"""Planning: sample sizes, budget allocation, the split decision, detectable gaps.

Everything here works before a single label is bought (SPEC sections 3 to 5):

* :func:`sample_size` -- trials needed for a target standard error or
  half-width on one rate (normal formula, or a search over Wilson or
  Clopper-Pearson intervals);
* :func:`sample_size_multi` -- several metrics at once (the maximum of the
  rows each one needs);
* :func:`subgroup_rows` -- K subgroups each needing ``n_min`` minority rows;
* :func:`allocate` -- split a fixed budget across strata (proportional, equal,
  optimal for the weighted risk, equal precision, compromise) with hard
  minimums and capacities;
* :func:`risk_variance`, :func:`se_for`, :func:`halfwidth_table` -- the
  variance and half-width a design achieves;
* :func:`split_decision` -- keep the class proportion, grow the test set,
  raise the minority share, or degrade (SPEC section 5);
* :func:`detectable_gap` -- rows per group to detect a difference between two
  groups' rates, and the smallest gap detectable with given rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
from scipy import stats

from bayeseval._validation import (
    _short,
    check_positive_int,
    check_probability,
)

__all__ = [
    "SplitDecision",
    "split_decision",
]

# Relative slack used when rounding a real-valued requirement up to an integer:
# 1.96**2 * 0.25 / 0.02**2 evaluates to 2400.9999999999995 in floating point and
# must give 2401, while 100.00000000001 (a rounding artefact of an exact 100)
# must give 100, not 101.
_CEIL_RTOL = 1e-9


def _ceil(x: float) -> int:
    """Round a positive requirement up, ignoring floating-point noise."""
    return int(math.ceil(x * (1.0 - _CEIL_RTOL)))


def _z(level: float) -> float:
    """Two-sided normal quantile for a confidence ``level``."""
    return float(stats.norm.ppf(0.5 + level / 2.0))


def _check_positive_real(value: Any, name: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a positive number, got {_short(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return value


# ---------------------------------------------------------------------------
# Split decision (SPEC section 5)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitDecision:
    """Outcome of :func:`split_decision`.

    Attributes
    ----------
    branch : str
        ``"proportional"`` (keep the class share), ``"grow_test"`` (a larger
        test set at the population share), ``"raise_share"`` (same test size,
        minority oversampled; report with reweighting) or ``"degraded"``
        (no option meets the request; the report is precision limited).
    n_total : int
        Rows available in all.
    n_test : int
        Final test-set size.
    share : float
        Population minority share.
    test_share : float
        Minority share of the final test set.
    n_minority_test : int
        Minority rows in the final test set.
    n_min_total : int
        Minority rows requested, ``n_groups * n_min``.
    n_minority_proportional : int
        Minority rows a proportional split of the *requested* test size gives,
        ``share * n_test`` (rounded).
    reweight : bool
        True when the test set over-represents the minority, so that overall
        metrics must be reweighted (SPEC section 1).
    reason : str
        Plain-English account of the decision.
    warning : str or None
        What the user must do or know (re-calibrate thresholds, precision
        limited), or None.
    n_minority_available : int
        Minority rows in all the data, ``share * n_total`` (rounded).
    max_groups : int
        Largest number of groups of ``n_min`` minority rows the final test set
        supports (useful for the "merge groups" remedy).
    n_min_achievable : int
        Minority rows per group the final test set gives (``n_minority_test //
        n_groups``).
    """

    branch: str
    n_total: int
    n_test: int
    share: float
    test_share: float
    n_minority_test: int
    n_min_total: int
    n_minority_proportional: int
    reweight: bool
    reason: str
    warning: str | None
    n_minority_available: int = 0
    max_groups: int = 0
    n_min_achievable: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return the decision as a plain dictionary."""
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def split_decision(
    *,
    n_total: int,
    n_test: int,
    share: float,
    n_min: int,
    n_groups: int = 1,
    max_test_share: float = 0.3,
    max_inflate: float = 5.0,
) -> SplitDecision:
    r"""Decide between keeping the class proportion and meeting a minimum count.

    A class-stratified split keeps the minority share but may leave the
    minority with a few dozen test rows. This function follows SPEC section 5:

    1. :math:`n_{\min,\text{total}} = K\, n_{\min}`.
    2. :math:`n^+_{\text{prop}} = \pi\, n_{\text{test}}`. If
       :math:`n^+_{\text{prop}} \ge n_{\min,\text{total}}`: keep the proportion.
    3. Grow the test set: :math:`n'_{\text{test}} = \lceil n_{\min,\text{total}}/\pi \rceil`;
       accepted when :math:`n'_{\text{test}} \le c\, N` (``max_test_share``).
    4. Raise the minority share: :math:`\pi'_{\text{test}} = n_{\min,\text{total}}/n_{\text{test}}`;
       accepted when :math:`\pi'_{\text{test}} \le \pi \cdot` ``max_inflate``.
       Overall metrics then need reweighting, and thresholds tuned on this set
       must be re-calibrated to the population share.
    5. Otherwise degrade: relax the target half-width, merge groups, or use
       cross-validation; the report is flagged "precision limited".

    Options 3 and 4 also require that the data hold enough minority rows,
    :math:`n_{\min,\text{total}} \le \pi N`.

    Parameters
    ----------
    n_total : int
        Rows available (N).
    n_test : int
        Requested test-set size.
    share : float
        Population share of the minority class, in (0, 1).
    n_min : int
        Minority test rows each group needs (from :func:`sample_size`).
    n_groups : int, default 1
        Number of groups (K) each needing ``n_min``.
    max_test_share : float, default 0.3
        Cap on the test set as a share of all rows.
    max_inflate : float, default 5.0
        Cap on the test minority share as a multiple of the population share.

    Returns
    -------
    SplitDecision

    Examples
    --------
    >>> d = split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    >>> d.branch, d.n_test, d.n_minority_proportional
    ('grow_test', 76905, 252)
    >>> split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323,
    ...                n_groups=8).branch
    'degraded'
    """
    n_total = check_positive_int(n_total, "n_total")
    n_test = check_positive_int(n_test, "n_test")
    if n_test > n_total:
        raise ValueError(f"n_test must not exceed n_total ({n_total}), got {n_test}")
    share = check_probability(share, "share", open_interval=True)
    n_min = check_positive_int(n_min, "n_min")
    n_groups = check_positive_int(n_groups, "n_groups")
    max_test_share = check_probability(max_test_share, "max_test_share")
    if max_test_share == 0:
        raise ValueError(f"max_test_share must be positive, got {max_test_share!r}")
    max_inflate = _check_positive_real(max_inflate, "max_inflate")
    if max_inflate < 1:
        raise ValueError(f"max_inflate must be >= 1 (1 means no oversampling), got {max_inflate!r}")

    n_min_total = n_groups * n_min
    prop_exact = share * n_test
    n_prop = int(round(prop_exact))
    available = int(round(share * n_total))
    cap_rows = max_test_share * n_total
    groups_txt = f" ({n_groups} groups x {n_min})" if n_groups > 1 else ""

    def done(branch: str, final_n: int, n_minority: int, reweight: bool, reason: str,
             warning: str | None, max_groups: int | None = None) -> SplitDecision:
        test_share = n_minority / final_n if branch == "raise_share" else share
        return SplitDecision(
            branch=branch,
            n_total=n_total,
            n_test=final_n,
            share=share,
            test_share=float(test_share),
            n_minority_test=int(n_minority),
            n_min_total=n_min_total,
            n_minority_proportional=n_prop,
            reweight=reweight,
            reason=reason,
            warning=warning,
            n_minority_available=available,
            max_groups=int(n_minority // n_min) if max_groups is None else max_groups,
            n_min_achievable=int(n_minority // n_groups),
        )

    # 2. keep the proportion
    if prop_exact >= n_min_total * (1.0 - _CEIL_RTOL):
        return done(
            "proportional", n_test, n_prop, False,
            f"a proportional test set of {n_test:,} rows holds about {n_prop:,} minority rows "
            f"(share {share:.4g}), at least the {n_min_total:,} requested{groups_txt}; "
            "keep the class proportion",
            None,
        )

    enough_minority = n_min_total <= share * n_total * (1.0 + _CEIL_RTOL)
    # 3. grow the test set at the population share
    grown = _ceil(n_min_total / share)
    if enough_minority and grown <= cap_rows * (1.0 + _CEIL_RTOL):
        n_minority = max(n_min_total, int(math.floor(share * grown + 1e-9)))
        return done(
            "grow_test", grown, n_minority, False,
            f"a proportional test set of {n_test:,} rows holds only about {n_prop:,} minority rows, "
            f"fewer than the {n_min_total:,} requested{groups_txt}; growing the test set to "
            f"{grown:,} rows ({grown / n_total:.1%} of the data, cap {max_test_share:.0%}) keeps "
            f"the population share and meets the request",
            None,
        )

    # 4. raise the minority share of the test set
    raised = n_min_total / n_test
    if enough_minority and raised <= share * max_inflate * (1.0 + _CEIL_RTOL) and n_min_total <= n_test:
        return done(
            "raise_share", n_test, n_min_total, True,
            f"growing the test set to {grown:,} rows would exceed the cap of {max_test_share:.0%} "
            f"of {n_total:,} rows; instead the {n_test:,}-row test set takes {n_min_total:,} "
            f"minority rows (share {raised:.4g}, {raised / share:.2f} x the population share "
            f"{share:.4g}, within the inflate cap {max_inflate:g})",
            "the test set over-represents the minority: report overall metrics with reweighting "
            "(population share / sample share), and re-calibrate any threshold tuned on this set "
            "to the population share",
        )

    # 5. degrade
    why = []
    if not enough_minority:
        why.append(f"the data hold only about {available:,} minority rows, fewer than the "
                   f"{n_min_total:,} requested")
    else:
        why.append(f"growing the test set would need {grown:,} rows (> {max_test_share:.0%} of "
                   f"{n_total:,})")
        why.append(f"raising the minority share would need {raised:.4g} (> {max_inflate:g} x "
                   f"{share:.4g})")
    # the most minority rows any option could give, for the "merge groups" remedy
    best = max(
        n_prop,
        min(available, int(math.floor(cap_rows * share + 1e-9))),
        min(available, n_test, int(math.floor(n_test * share * max_inflate + 1e-9))),
    )
    max_groups = best // n_min
    merge = (f"merge groups (at most {max_groups} groups of {n_min} can be met)" if max_groups
             else f"merge groups (not even one group of {n_min} can be met; at most {best:,} "
                  "minority rows are reachable)")
    return done(
        "degraded", n_test, n_prop, False,
        "the request cannot be met: " + "; ".join(why) + f". The proportional test set keeps "
        f"about {n_prop:,} minority rows ({n_prop // n_groups:,} per group); relax the target "
        f"half-width, {merge}, or fall back to cross-validation",
        f"precision limited: about {n_prop // n_groups:,} minority rows per group instead of "
        f"{n_min:,}",
        max_groups=int(max_groups),
    )
