"""Splitting a budget of trials across strata, on plain arrays (no pandas).

:func:`bayeseval.plan.allocation.allocate` reads its inputs (any labels, pandas objects), calls
:func:`allocation_counts` and returns a labelled Series. The command line's ``plan allocate``
reads its JSON inputs with :func:`plain_inputs` and calls :func:`allocation_counts` itself,
so that it runs without importing pandas.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayeseval._api.validation import MAX_EXACT_COUNT, check_weights

__all__ = ["allocation_counts", "plain_inputs"]


def _is_number(value: Any) -> bool:
    """A finite Python float, or a Python int (not a bool) no larger than 2**53 in size."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_EXACT_COUNT
    return isinstance(value, float) and math.isfinite(value)


def _plain_numbers(values: Any) -> np.ndarray | None:
    """A non-empty list or tuple of finite plain numbers as floats, else None."""
    if not isinstance(values, (list, tuple)) or not values or not all(_is_number(v) for v in values):
        return None
    return np.asarray(values, dtype=float)


def _plain_bound(value: Any, n: int, default: float) -> np.ndarray | None:
    """None or one plain count (a whole number in [0, 2**53]) for every stratum, else None."""
    if value is None:
        return np.full(n, default)
    if not _is_number(value) or not float(value).is_integer() or not 0 <= value <= MAX_EXACT_COUNT:
        return None
    return np.full(n, float(value))


def plain_inputs(
    weights: Any, rates: Any, minimum: Any, capacity: Any
) -> tuple[Sequence[Any], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Labels, shares, planning variances and bounds of plain, valid inputs; else None.

    Plain means: ``weights`` a dict with string keys or a list of numbers (labels 0..K-1);
    ``rates`` None, a list with one rate per share, or (with dict weights) a dict with the
    same keys; ``minimum`` and ``capacity`` None or one count for every stratum. Every value
    must be valid (shares summing to 1, rates in [0, 1], whole counts). Anything else gives
    None: :func:`bayeseval.plan.allocation.allocate` then reads the inputs with pandas, and raises
    its usual message for an invalid one. Nothing here raises.

    Returns
    -------
    tuple or None
        ``(labels, shares, variances, minimums, capacities)``: the labels (the dict's keys in
        order, or ``range(K)``), the shares, :math:`r_k (1 - r_k)` (1/4 without rates) and the
        bounds as float arrays.

    Examples
    --------
    >>> labels, pi, v, lo, hi = plain_inputs({"a": 0.7, "b": 0.3}, {"b": 0.4, "a": 0.1}, 60, None)
    >>> list(labels), v.round(2).tolist(), lo.tolist(), hi.tolist()
    (['a', 'b'], [0.09, 0.24], [60.0, 60.0], [inf, inf])
    >>> plain_inputs({"a": 0.7, "b": 0.2}, None, None, None) is None   # shares sum to 0.9
    True
    """
    if isinstance(weights, dict) and all(isinstance(k, str) for k in weights):
        labels: Sequence[Any] = list(weights)
        pi = _plain_numbers(list(weights.values()))
    else:
        pi = _plain_numbers(weights)
        labels = range(0 if pi is None else pi.size)
    if pi is None:
        return None
    try:
        check_weights(pi, pi.size)
    except (TypeError, ValueError):
        return None
    if rates is None:
        v = np.full(pi.size, 0.25)
    else:
        if isinstance(rates, dict) and isinstance(weights, dict):
            if len(rates) != len(labels) or not all(k in rates for k in labels):
                return None
            rates = [rates[k] for k in labels]
        r = _plain_numbers(rates)
        if r is None or r.size != pi.size or np.any((r < 0) | (r > 1)):
            return None
        v = r * (1 - r)
    lo = _plain_bound(minimum, pi.size, 0.0)
    hi = _plain_bound(capacity, pi.size, np.inf)
    if lo is None or hi is None:
        return None
    return labels, pi, v, lo, hi


def allocation_counts(
    total: int,
    shares: np.ndarray,
    variances: np.ndarray,
    minimum: np.ndarray,
    capacity: np.ndarray,
    labels: Sequence[Any],
    method: str,
    *,
    has_minimum: bool,
) -> np.ndarray:
    """Integer trials per stratum under ``method`` (see :func:`bayeseval.plan.allocation.allocate`).

    The inputs are validated: ``total`` a count, ``method`` one of the rules, the shares,
    variances and bounds finite float arrays of one length. ``labels`` name the strata in
    messages; ``has_minimum`` says whether the caller gave minimums (``"compromise"`` needs
    them).

    Raises
    ------
    ValueError
        If the minimums exceed the total, the capacities cannot hold it, a stratum's minimum
        exceeds its capacity, or ``"compromise"`` has no minimums.

    Examples
    --------
    >>> pi, v = np.array([0.8, 0.2]), np.array([0.05 * 0.95, 0.3 * 0.7])
    >>> zero, inf = np.zeros(2), np.full(2, np.inf)
    >>> allocation_counts(500, pi, v, zero, inf, range(2), "optimal", has_minimum=False).tolist()
    [328, 172]
    """
    lo, hi = minimum, capacity
    _check_feasible(total, lo, hi, labels)
    neyman = shares * np.sqrt(variances)
    scores = {
        "proportional": shares,
        "equal": np.ones(len(shares)),
        "optimal": neyman,
        "equal_precision": variances,
        "compromise": neyman,
    }[method]
    if method == "compromise":
        if not has_minimum:
            raise ValueError("method 'compromise' needs minimum (the per-stratum counts met first)")
        extra = _water_fill(total - float(lo.sum()), scores, np.zeros_like(lo), hi - lo)
        real = lo + extra
    else:
        real = _water_fill(float(total), scores, lo, hi)
    return _largest_remainder(real, total, hi)


def _water_fill(total: float, scores: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Real allocation n_k = clip(lam * s_k, lo_k, hi_k) with sum n_k = total."""
    pos = scores > 0
    if not np.any(pos):
        return _water_fill(total, np.ones_like(scores), lo, hi)
    # The allocation is scale free: rescale, and floor positive scores at 1e-12 of the
    # largest so that the multiplier lam stays finite when tiny (even subnormal) scores
    # must absorb the budget.
    scores = np.where(pos, np.maximum(scores / float(np.max(scores)), 1e-12), 0.0)
    cap_pos = float(np.sum(np.where(pos, hi, lo)))
    if cap_pos < total:
        # strata with positive scores are all full; spread the rest over the others
        n = np.where(pos, hi, lo).astype(float)
        rest = ~pos
        n[rest] = _water_fill(total - float(np.sum(n[pos])), np.ones(int(rest.sum())), lo[rest], hi[rest])
        return n

    if float(np.sum(np.clip(0.0, lo, hi))) >= total:
        return lo.astype(float)
    lam = _fill_level(total, scores, lo, hi)
    n = np.clip(lam * scores, lo, hi)
    # make the sum exact: rescale the strata that are not at a bound
    free = (n > lo) & (n < hi)
    if np.any(free):
        fixed_sum = float(np.sum(n[~free]))
        n[free] = scores[free] * (total - fixed_sum) / float(np.sum(scores[free]))
    return n


def _fill_level(total: float, scores: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """The multiplier lam > 0 with sum_k clip(lam s_k, lo_k, hi_k) = total, exactly.

    The sum g(lam) is continuous, non-decreasing and linear between the knots lo_k / s_k and
    hi_k / s_k: a bisection over the sorted knots finds the piece holding ``total`` (about
    log2(2K) sums over K strata) and the root is read off that line. The caller ensures
    g(0) < total <= g(inf).
    """
    pos = scores > 0

    def g(lam: float) -> float:
        return float(np.sum(np.clip(lam * scores, lo, hi)))

    knots = np.concatenate([lo[pos] / scores[pos], hi[pos] / scores[pos]])
    knots = np.unique(knots[np.isfinite(knots) & (knots > 0)])
    i, j = 0, knots.size  # the first knot where g reaches the total
    while i < j:
        m = (i + j) // 2
        if g(float(knots[m])) >= total:
            j = m
        else:
            i = m + 1
    a = float(knots[i - 1]) if i > 0 else 0.0
    g_a = g(a)
    if i == knots.size:  # past the last knot only strata without capacity still grow
        uncapped = float(np.sum(scores[pos & ~np.isfinite(hi)]))
        # every stratum capped: g at the last knot is the total up to rounding of hi / s * s
        return a + (total - g_a) / uncapped if uncapped > 0 else a
    b = float(knots[i])
    return a + (total - g_a) * (b - a) / (g(b) - g_a)


def _largest_remainder(real: np.ndarray, total: int, hi: np.ndarray) -> np.ndarray:
    base = np.floor(real + 1e-9)
    base = np.minimum(base, np.where(np.isfinite(hi), hi, base)).astype(np.int64)
    remainder = int(total - base.sum())
    if remainder > 0:
        frac = real - base
        frac[base >= hi] = -np.inf
        order = np.argsort(-frac, kind="stable")
        base[order[:remainder]] += 1
    elif remainder < 0:  # pragma: no cover - defensive, floating noise only
        frac = real - base
        order = np.argsort(frac, kind="stable")
        base[order[:-remainder]] -= 1
    return base


def _check_feasible(total: int, lo: np.ndarray, hi: np.ndarray, labels: Sequence[Any]) -> None:
    """Minimums below capacities, and a total between their sums."""
    if np.any(lo > hi):
        k = int(np.flatnonzero(lo > hi)[0])
        raise ValueError(f"minimum exceeds capacity for stratum {labels[k]!r}: minimum {lo[k]:g} > capacity {hi[k]:g}")
    if lo.sum() > total:
        raise ValueError(f"minimum counts sum to {lo.sum():g}, more than the total {total}")
    if hi.sum() < total:
        raise ValueError(f"capacity sums to {hi.sum():g}, less than the total {total}")
