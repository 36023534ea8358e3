"""Per-stratum conflict check: each stratum's count against its leave-one-out predictive.

For stratum ``i`` the predictive distribution of its count given the *other* strata is
the exact Beta-binomial hierarchical posterior predictive, a mixture of
Beta-binomials over a hyper-grid (:func:`bayeseval._core.adaptive.loo_beta_mixture`),
so a stratum that differs from the others cannot pull its own reference toward
itself. The check reports a two-sided p-value per stratum and flags strata with a
multiplicity-aware rule.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from bayeseval._core.adaptive import (
    DIFFUSE_WEIGHT,
    _kept_components,
    _mixture_pmfs,
    beta_mixture_predictive,
    fab_interval,
    loo_beta_mixture,
    loo_mixture_groups,
)
from bayeseval._validation import check_counts, check_method, check_probability

__all__ = [
    "ConflictCheck",
    "ReadChoice",
    "READ_ADAPTIVE_P",
    "predictive_p_values",
    "holm_flags",
    "loo_conflict",
    "flag_power",
    "read_choice",
    "read_bounds",
    "adaptive_bounds",
]

#: a stratum whose leave-one-out conflict p-value is at or below this is not clearly typical
#: of the other strata: read its adaptive interval instead of the pooled one (measured
#: trade-off: ``benchmarks/validate_default_fit.py``, docs/validation.md 6d)
READ_ADAPTIVE_P = 0.20

_P_VALUES = ("doubled", "mid_p")
#: strata with more trials are not checked (p-value 1, never flagged): the exact predictive
#: pmf has ``trials + 1`` points per mixture component, and at this size pooling hardly
#: moves a stratum's interval, so there is nothing for the check to protect
MAX_TRIALS = 20_000
_CONTROLS = ("holm", "per_stratum")


class ConflictCheck(NamedTuple):
    """Result of :func:`loo_conflict`, one entry per stratum."""

    p_value: np.ndarray
    flagged: np.ndarray
    expected: np.ndarray
    p_below: np.ndarray
    p_above: np.ndarray


def predictive_p_values(
    successes: Any, trials: Any, weights: Any, a: Any, b: Any, *, p_value: str = "mid_p"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two-sided p-values of counts under Beta-mixture predictive distributions.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Observed counts.
    weights : array_like, shape (S, G)
        Mixture weights per stratum.
    a, b : array_like, shape (G,) or (S, G)
        Beta parameters of the components (shared, or per stratum).
    p_value : {"mid_p", "doubled"}
        ``"doubled"``: ``min(1, 2 min(P(Y <= y), P(Y >= y)))``, never anti-conservative
        when the predictive is right. ``"mid_p"``: the same with half of ``P(Y = y)``
        on each side, ``min(1, 2 min(P(Y < y), P(Y > y)) + P(Y = y))``, closer to
        nominal for discrete counts (no randomisation).

    Returns
    -------
    p_value, expected, p_below, p_above : numpy.ndarray, shape (S,)
        The two-sided p-value, the predictive mean count, ``P(Y <= y)`` and
        ``P(Y >= y)``.

    Examples
    --------
    With one Beta(8, 92) component the predictive is a Beta-binomial:

    >>> from scipy import stats
    >>> p, mean, lo, hi = predictive_p_values([9], [20], [[1.0]], [8.0], [92.0],
    ...                                       p_value="doubled")
    >>> bool(np.isclose(hi[0], stats.betabinom.sf(8, 20, 8.0, 92.0)))
    True
    >>> bool(np.isclose(p[0], 2 * hi[0]))
    True
    """
    p_value = check_method(p_value, _P_VALUES, "p_value")
    s, n = check_counts(successes, trials)
    s, n = s.ravel(), n.ravel()
    weights = np.asarray(weights, float).reshape(s.size, -1)
    a, b = (np.broadcast_to(np.asarray(v, float), weights.shape) for v in (a, b))
    out = np.ones((4, s.size))
    out[1, n == 0] = 0.0
    for i in np.flatnonzero(n > MAX_TRIALS):  # not checked: p-value 1 (see MAX_TRIALS)
        out[1, i] = float(n[i] * (weights[i] @ (a[i] / (a[i] + b[i]))))
    kept = _kept_components(weights, a, b)
    empty = ~kept[3].any(axis=1)  # no non-zero weight: the predictive is undefined
    for rows in _same_trials_blocks(n, (n > 0) & (n <= MAX_TRIALS) & ~empty):
        ni = int(n[rows[0]])
        width = int(kept[3][rows].sum(axis=1).max())
        pmfs = _mixture_pmfs(ni, *(v[rows, :width] for v in kept))
        for i, pmf in zip(rows, pmfs, strict=True):
            out[:, i] = _p_value_of(int(s[i]), ni, pmf, p_value)
    for i in np.flatnonzero((n > 0) & (n <= MAX_TRIALS) & empty):
        out[:, i] = _p_value_of(int(s[i]), int(n[i]),
                                beta_mixture_predictive(int(n[i]), weights[i], a[i], b[i]), p_value)
    return out[0], out[1], out[2], out[3]


def _p_value_of(si: int, ni: int, pmf: np.ndarray, p_value: str) -> tuple:
    """(p-value, expected count, P(Y <= y), P(Y >= y)) of the count ``si`` under ``pmf``."""
    below, above, at = pmf[: si + 1].sum(), pmf[si:].sum(), pmf[si]
    if p_value == "doubled":
        p = min(1.0, 2.0 * min(below, above))
    else:
        p = min(1.0, 2.0 * min(below - at, above - at) + at)
    return p, float(np.arange(ni + 1) @ pmf), min(below, 1.0), min(above, 1.0)


#: cells (rows x components x counts) of one block of predictive pmfs
_PMF_CELLS = 1 << 20


def _same_trials_blocks(n: np.ndarray, use: np.ndarray) -> list:
    """Positions of the ``use`` strata in blocks of equal trials (at most ``_PMF_CELLS`` / 8
    counts per block)."""
    idx = np.flatnonzero(use)
    idx = idx[np.argsort(n[idx], kind="stable")]
    cuts = np.flatnonzero(np.diff(n[idx])) + 1
    blocks = []
    for group in np.split(idx, cuts) if idx.size else ():
        step = max(1, _PMF_CELLS // (8 * (int(n[group[0]]) + 1)))
        blocks.extend(group[i : i + step] for i in range(0, group.size, step))
    return blocks


def holm_flags(p_values: Any, alpha: float) -> np.ndarray:
    """Holm's step-down rule: flags with family-wise error rate at most ``alpha``.

    Sort the p-values ascending; flag the ``k``-th smallest while
    ``p_(k) <= alpha / (m - k + 1)`` and stop at the first that fails.

    Examples
    --------
    >>> holm_flags([0.001, 0.02, 0.04, 0.5], 0.05).tolist()
    [True, False, False, False]
    """
    p = np.asarray(p_values, float).ravel()
    order = np.argsort(p, kind="stable")
    m = p.size
    passed = p[order] <= alpha / (m - np.arange(m))
    keep = np.cumprod(passed).astype(bool)
    flags = np.zeros(m, bool)
    flags[order[keep]] = True
    return flags


def loo_conflict(
    successes: Any,
    trials: Any,
    *,
    alpha: float = 0.05,
    control: str = "holm",
    p_value: str = "mid_p",
    mixture: tuple | None = None,
) -> ConflictCheck:
    """Flag strata whose counts conflict with what the other strata predict.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts per stratum (at least two strata; zero-trial strata, and strata with more
        than ``MAX_TRIALS`` trials, get p-value 1).
    alpha : float
        Error rate of the flag rule.
    control : {"holm", "per_stratum"}
        ``"holm"`` (default): Holm's step-down rule over the strata with trials,
        which bounds the probability of flagging *any* stratum of an exchangeable
        dataset (per-dataset false-flag rate) by ``alpha``. ``"per_stratum"``: flag
        ``p <= alpha``, which bounds the false-flag rate of each stratum.
    p_value : {"mid_p", "doubled"}
        Two-sided p-value (see :func:`predictive_p_values`).
    mixture : (weights, a, b), optional
        The leave-one-out mixtures of :func:`loo_beta_mixture` when already computed.

    Returns
    -------
    ConflictCheck
        ``p_value``, ``flagged``, ``expected`` (predictive mean count), ``p_below``
        (``P(Y <= y)``) and ``p_above`` (``P(Y >= y)``) per stratum.

    Notes
    -----
    The reference of stratum ``i`` is the posterior predictive of its count under the
    Beta-binomial model fitted to the other strata (BDA3 hyperprior, hyper-grid), so
    an outlier is compared with the others only. The p-value is mid-p by default (no
    randomisation). Measured by seeded simulation (``benchmarks/validate_adaptive.py``,
    400 datasets per scenario; one stratum at 0.40 with 20 trials among 10-20 strata
    with rates near 0.08 and 50-500 trials; exchangeable: all near 0.08):

    ============  =======  ===========  ======================  ======================
    p-value       control  power        false flags / dataset   false flags / stratum
    ============  =======  ===========  ======================  ======================
    mid_p         holm     0.71 (0.02)  0.003                   0.0002
    mid_p         per      0.94 (0.01)  0.36                    0.026
    doubled       holm     0.66 (0.02)  0.000                   0.0000
    doubled       per      0.92 (0.01)  0.27                    0.019
    ============  =======  ===========  ======================  ======================

    With Holm the power is close to its ceiling: a Bin(20, 0.4) count is 6 or less
    with probability 0.25, and 6 of 20 is not extreme enough at ``alpha / m`` for
    15 strata near 0.08. ``control="per_stratum"`` trades per-dataset control for
    power when a false flag only costs width (reading the stratum's own interval).
    About 0.1 s of CPU for 1,000 strata (trials 10-2,000).

    Examples
    --------
    >>> check = loo_conflict([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20])
    >>> check.flagged.tolist()
    [False, False, False, False, False, False, True]
    """
    alpha = check_probability(alpha, "alpha", open_interval=True)
    control = check_method(control, _CONTROLS, "control")
    s, n = check_counts(successes, trials)
    shape = s.shape
    s, n = s.ravel(), n.ravel()
    if np.count_nonzero(n) < 2:
        raise ValueError(
            f"trials must have at least two strata with trials to compare, got {n.tolist()!r}"
        )
    if mixture is None:
        p, expected, below, above = _cached_p_values(s, n, p_value)
    else:
        p, expected, below, above = predictive_p_values(s, n, *mixture, p_value=p_value)
    used = n > 0
    flagged = np.zeros(s.size, bool)
    if control == "holm":
        flagged[used] = holm_flags(p[used], alpha)
    else:
        flagged = used & (p <= alpha)
    return ConflictCheck(*(v.reshape(shape) for v in (p, flagged, expected, below, above)))


#: the leave-one-out p-values of the last few count vectors: the conflict check of a
#: report's model check and the ``read`` columns of its summary share one computation
_P_CACHE: dict = {}
_P_CACHE_SIZE = 4


def _cached_p_values(s: np.ndarray, n: np.ndarray, p_value: str) -> tuple:
    """Leave-one-out predictive p-values of ``(s, n)`` (:func:`predictive_p_values`), cached.

    Strata with the same counts have the same leave-one-out predictive (the same other
    strata), so each distinct ``(s, n)`` pair is computed once.
    """
    key = (s.astype(np.int64).tobytes(), n.astype(np.int64).tobytes(), p_value)
    hit = _P_CACHE.pop(key, None)
    if hit is None:
        _, first, inv = np.unique(np.column_stack([s, n]), axis=0, return_index=True,
                                  return_inverse=True)
        keep = np.zeros(s.size, bool)
        keep[first] = True
        # rows of the kept strata in index order; first[j] is the stratum of pair j
        pos = np.cumsum(keep) - 1
        sk, nk = s[keep], n[keep]
        size, groups = loo_mixture_groups(s, n, rows=keep)
        out = np.empty((4, size))
        for sel, w, a, b in groups:  # one hyper-grid per group, shared by its strata
            out[:, sel] = predictive_p_values(sk[sel], nk[sel], w, a, b, p_value=p_value)
        hit = tuple(v[pos[first]][inv.ravel()] for v in out)
        for arr in hit:
            arr.setflags(write=False)
    _P_CACHE[key] = hit  # most recent last
    while len(_P_CACHE) > _P_CACHE_SIZE:
        _P_CACHE.pop(next(iter(_P_CACHE)))
    return tuple(v.copy() for v in hit)


def _p_values_all_counts(pmf: np.ndarray, p_value: str) -> np.ndarray:
    """Two-sided p-value of every count ``0..n`` under one predictive pmf."""
    below = np.minimum(np.cumsum(pmf), 1.0)
    above = np.minimum(np.cumsum(pmf[::-1])[::-1], 1.0)
    if p_value == "doubled":
        return np.minimum(1.0, 2.0 * np.minimum(below, above))
    return np.minimum(1.0, 2.0 * np.minimum(below - pmf, above - pmf) + pmf)


def flag_power(
    successes: Any,
    trials: Any,
    rates: Any,
    *,
    alpha: float = 0.05,
    p_value: str = "mid_p",
    mixture: tuple | None = None,
) -> np.ndarray:
    """Power of the per-stratum conflict rule at given true rates (exact, by enumeration).

    For stratum ``i`` the rule flags the counts ``y`` in ``0..n_i`` whose two-sided
    p-value under the leave-one-out predictive (:func:`loo_conflict`) is at most
    ``alpha``; the power at a true rate ``r`` is ``sum over flagged y of Bin(y; n_i, r)``.
    The reference depends only on the other strata, so the enumeration is exact.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts per stratum (at least two strata with trials).
    rates : array_like, shape (S,) or (S, R)
        True rates at which the power is wanted, one per stratum or ``R`` per stratum
        (values outside [0, 1] give power 0).
    alpha : float
        Per-stratum level of the rule (``control="per_stratum"``).
    p_value : {"mid_p", "doubled"}
        Two-sided p-value (see :func:`predictive_p_values`).
    mixture : (weights, a, b), optional
        The leave-one-out mixtures of :func:`loo_beta_mixture` when already computed.

    Returns
    -------
    numpy.ndarray, shape (S,) or (S, R)
        Probability of a flag per stratum and rate (0 for strata without trials).

    Examples
    --------
    One stratum of 40 trials among strata near 0.08: the rule almost never flags it at
    its own rate, and usually does at 0.30.

    >>> s, n = [4, 5, 3, 4, 6, 4, 3], [50, 60, 40, 50, 70, 50, 40]
    >>> pw = flag_power(s, n, [[0.08, 0.3]] * 7)
    >>> bool(pw[-1, 0] < 0.05 < 0.8 < pw[-1, 1])
    True
    """
    p_value = check_method(p_value, _P_VALUES, "p_value")
    alpha = check_probability(alpha, "alpha", open_interval=True)
    s, n = check_counts(successes, trials)
    s, n = s.ravel(), n.ravel()
    r = np.asarray(rates, float)
    squeeze = r.ndim <= 1
    r2 = np.broadcast_to(r[:, None] if r.ndim == 1 else r, (s.size, 1 if squeeze else r.shape[-1]))
    weights, a, b = loo_beta_mixture(s, n) if mixture is None else mixture
    out = np.zeros(r2.shape)
    for i, ni in enumerate(n):
        if ni == 0 or ni > MAX_TRIALS:
            continue
        pmf = beta_mixture_predictive(int(ni), weights[i], a[i], b[i])
        flagged = np.flatnonzero(_p_values_all_counts(pmf, p_value) <= alpha)
        if flagged.size == 0:
            continue
        ok = (r2[i] >= 0) & (r2[i] <= 1)
        pr = np.clip(r2[i], 0.0, 1.0)
        out[i] = np.where(ok, stats.binom.pmf(flagged[:, None], int(ni), pr[None, :]).sum(axis=0), 0.0)
    return out[:, 0] if squeeze else out


#: ``ReadChoice.mixture`` when the leave-one-out mixtures are computed on demand, for the
#: strata whose adaptive interval is needed (:func:`read_bounds`)
LOO_MIXTURE = "leave-one-out"


class ReadChoice(NamedTuple):
    """Which interval to read per stratum (:func:`read_choice`)."""

    read: np.ndarray
    reason: np.ndarray
    adaptive: np.ndarray
    check: ConflictCheck | None
    successes: np.ndarray
    trials: np.ndarray
    mixture: tuple | str | None


def read_choice(
    successes: Any,
    trials: Any,
    *,
    alpha: float = 0.05,
    control: str = "per_stratum",
    threshold: float = READ_ADAPTIVE_P,
) -> ReadChoice:
    """Read the pooled interval, or the adaptive one where the stratum is not clearly typical.

    A stratum with trials reads ``"adaptive"`` when the conflict rule flags it (at
    ``alpha`` under ``control``) or its two-sided mid-p value under the leave-one-out
    predictive is at most ``threshold``; otherwise ``"pooled"``. With fewer than two
    strata with trials there is nothing to compare and every stratum reads ``"pooled"``.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts per stratum.
    alpha : float
        Error rate of the conflict flag (the reason then says "above" or "below").
    control : {"per_stratum", "holm"}
        Flag rule (see :func:`loo_conflict`).
    threshold : float
        Mid-p value at or below which an unflagged stratum reads its adaptive interval.

    Returns
    -------
    ReadChoice
        ``read`` and ``reason`` (object arrays), the ``adaptive`` mask, the conflict
        ``check`` (None without two strata to compare), the counts and the leave-one-out
        ``mixture`` (for :func:`read_bounds`: ``LOO_MIXTURE``, computed there for the strata
        that need it).

    Examples
    --------
    >>> c = read_choice([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20])
    >>> c.read.tolist()[-2:], c.reason[-1]
    (['pooled', 'adaptive'], 'count above what the other strata predict (p = 0.0015)')
    """
    s, n = check_counts(successes, trials)
    s, n = s.ravel(), n.ravel()
    k = s.size
    if np.count_nonzero(n) < 2:
        why = np.full(k, "fewer than two strata to compare", dtype=object)
        none = np.zeros(k, bool)
        return ReadChoice(np.full(k, "pooled", dtype=object), why, none, None, s, n, None)
    check = loo_conflict(s, n, alpha=alpha, control=control)
    flag = np.asarray(check.flagged, bool)
    adaptive = (n > 0) & (flag | (check.p_value <= threshold))
    side = np.where(check.p_below > check.p_above, "above", "below").astype(object)
    p_text = np.array([f"p = {p:.2g}" for p in check.p_value], dtype=object)
    reason = np.where(
        flag,
        "count " + side + " what the other strata predict (" + p_text + ")",
        np.where(
            adaptive,
            "count not clearly typical of the other strata (" + p_text + ")",
            np.where(n > 0, "consistent with the other strata", "no trials: pooled prediction"),
        ),
    ).astype(object)
    read = np.where(adaptive, "adaptive", "pooled").astype(object)
    return ReadChoice(read, reason, adaptive, check, s, n, LOO_MIXTURE)


def read_bounds(
    choice: ReadChoice, lower: Any, upper: Any, level: float, rows: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Ends of the interval ``read`` points to: ``lower``/``upper`` or the adaptive interval.

    The adaptive interval of a stratum is :func:`bayeseval._core.adaptive.adaptive_interval`
    at ``level`` (default diffuse weight), computed only for the strata that read it
    (``rows``, a boolean mask: default ``choice.adaptive``), and once per distinct
    ``(successes, trials)`` pair among them: a stratum's leave-one-out prior depends only on
    the other strata, so two strata with the same counts have the same prior and interval.

    Examples
    --------
    >>> c = read_choice([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20])
    >>> lo, hi = read_bounds(c, np.zeros(7), np.ones(7), 0.95)
    >>> bool(lo[0] == 0.0 and 0.1 < lo[6] < 0.45 < hi[6] < 1.0)
    True
    """
    lo = np.array(lower, dtype=float, copy=True)
    hi = np.array(upper, dtype=float, copy=True)
    rows = choice.adaptive if rows is None else np.asarray(rows, bool) & (choice.trials > 0)
    if choice.mixture is not None and rows.any():
        idx = np.flatnonzero(rows)
        rep, back = _distinct_pairs(choice.successes[idx], choice.trials[idx])
        rep = idx[rep]  # one stratum per distinct pair, in stratum order
        if isinstance(choice.mixture, tuple):
            groups = [(np.arange(rep.size), *(v[rep] for v in choice.mixture))]
        else:  # the leave-one-out mixtures of these strata only, one group per grid
            mask = np.zeros(choice.trials.size, bool)
            mask[rep] = True  # rep is in stratum order: the groups' positions index it
            _, groups = loo_mixture_groups(choice.successes, choice.trials, rows=mask)
        lo_rep, hi_rep = np.empty(rep.size), np.empty(rep.size)
        for pos, w, a, b in groups:  # a grid's Beta parameters shared, not copied per stratum
            iv = fab_interval(
                choice.successes[rep[pos]], choice.trials[rep[pos]], a, b, w,
                level=level, diffuse_weight=DIFFUSE_WEIGHT,
            )
            lo_rep[pos], hi_rep[pos] = iv.lower, iv.upper
        lo[idx], hi[idx] = lo_rep[back], hi_rep[back]
    return lo, hi


def adaptive_bounds(successes: Any, trials: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Every stratum's adaptive interval from its leave-one-out prior (NaN without trials).

    The interval of :func:`read_bounds` for every stratum with trials, without the conflict
    check (nothing is chosen): ``proportion_ci(..., method="adaptive")`` computed once per
    distinct ``(successes, trials)`` pair. Needs two strata with trials.

    Examples
    --------
    >>> lo, hi = adaptive_bounds([4, 6, 5, 3, 7, 4, 9, 0], [50, 70, 60, 40, 80, 50, 20, 0], 0.95)
    >>> (hi - lo)[:7].round(3).tolist(), bool(np.isnan(lo[7]))
    ([0.154, 0.131, 0.142, 0.167, 0.126, 0.154, 0.496], True)
    """
    s, n = check_counts(successes, trials)
    s, n = s.ravel(), n.ravel()
    if np.count_nonzero(n) < 2:
        raise ValueError(f"the adaptive interval needs two strata with trials, got trials {n.tolist()}")
    k = s.size
    choice = ReadChoice(np.full(k, "adaptive", dtype=object), np.full(k, "", dtype=object),
                        n > 0, None, s, n, LOO_MIXTURE)
    return read_bounds(choice, np.full(k, np.nan), np.full(k, np.nan), level)


def _distinct_pairs(successes: np.ndarray, trials: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First position of each distinct ``(successes, trials)`` pair, in increasing order,
    and for every position the index of its pair among those firsts."""
    pairs = np.stack([np.asarray(successes, float), np.asarray(trials, float)], axis=1)
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    return first[order], rank[np.reshape(inverse, -1)]
