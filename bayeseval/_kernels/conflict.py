"""Per-stratum conflict check: each stratum's count against its leave-one-out predictive.

For stratum ``i`` the predictive distribution of its count given the *other* strata is
the exact Beta-binomial hierarchical posterior predictive, a mixture of
Beta-binomials over a hyper-grid (:func:`bayeseval._kernels.loo_prior.loo_beta_mixture`),
so a stratum that differs from the others cannot pull its own reference toward
itself. The check reports a two-sided p-value per stratum and flags strata with a
multiplicity-aware rule.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from bayeseval._api.docs import fill_doc
from bayeseval._api.validation import check_counts, check_method, check_probability
from bayeseval._kernels.betabinom import (
    beta_mixture_log_tails,
    beta_mixture_predictive,
    kept_components,
)
from bayeseval._kernels.fab import DIFFUSE_WEIGHT, fab_interval
from bayeseval._kernels.loo_prior import loo_beta_mixture, loo_mixture_groups

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
    "conflict_from_p_values",
    "pmf_p_value",
]

#: a stratum whose leave-one-out conflict p-value is at or below this is not clearly typical
#: of the other strata: read its adaptive interval instead of the pooled one (measured
#: trade-off: ``benchmarks/validate_default_fit.py``, docs/validation.md 6d)
READ_ADAPTIVE_P = 0.20

_P_VALUES = ("doubled", "mid_p")
#: :func:`flag_power` enumerates every count of a stratum with at most this many trials
#: (``trials + 1`` per mixture component); above, it finds the two ends of the flagged
#: counts by bisection on the log tails
MAX_TRIALS = 20_000
_CONTROLS = ("holm", "per_stratum")


class ConflictCheck(NamedTuple):
    """Result of :func:`loo_conflict`, one entry per stratum."""

    p_value: np.ndarray
    flagged: np.ndarray
    expected: np.ndarray
    p_below: np.ndarray
    p_above: np.ndarray
    #: natural log of ``p_value``, finite where ``p_value`` underflows to 0.0 (below ~1e-308)
    log_p_value: np.ndarray


#: the two parameters :func:`loo_conflict` and :func:`flag_power` share
_P_VALUE_AND_MIXTURE = """\
p_value : {"mid_p", "doubled"}
    Two-sided p-value (see :func:`predictive_p_values`).
mixture : (weights, a, b), optional
    The leave-one-out mixtures of :func:`loo_beta_mixture` when already computed."""


def predictive_p_values(
    successes: Any,
    trials: Any,
    weights: Any,
    a: Any,
    b: Any,
    *,
    p_value: str = "mid_p",
    log: bool = False,
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
    log : bool
        Return the natural logs of the p-value and of the two tails (exact far below the
        smallest double) instead of the values.

    Returns
    -------
    p_value, expected, p_below, p_above : numpy.ndarray, shape (S,)
        The two-sided p-value, the predictive mean count, ``P(Y <= y)`` and
        ``P(Y >= y)`` (their logs with ``log=True``), from the exact log-space tails of
        :func:`bayeseval._kernels.betabinom.beta_mixture_log_tails` at any number of trials.

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
    logs = np.full((3, s.size), np.nan)  # log P(Y < s), log P(Y = s), log P(Y > s)
    logs[:, n == 0] = np.array([[-np.inf], [0.0], [-np.inf]])
    expected = np.zeros(s.size)
    kw, ka, kb, live = kept_components(weights, a, b)
    use = (n > 0) & live.any(axis=1)  # no non-zero weight: the predictive is undefined
    if use.any():
        kw = np.where(live, kw, 0.0)[use]
        logs[:, use] = beta_mixture_log_tails(s[use], n[use], kw, ka[use], kb[use])
        expected[use] = n[use] * ((kw * ka[use] / (ka[use] + kb[use])).sum(axis=1) / kw.sum(axis=1))
    expected[(n > 0) & ~use] = np.nan
    log_below, log_at, log_above = logs
    log_p, below, above = _log_p_values(log_below, log_at, log_above, p_value)
    if log:
        return log_p, expected, below, above
    return np.exp(log_p), expected, np.exp(below), np.exp(above)


def _log_p_values(
    below: np.ndarray, at: np.ndarray, above: np.ndarray, p_value: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log two-sided p-value, ``log P(Y <= y)`` and ``log P(Y >= y)`` from the log tails
    ``log P(Y < y)``, ``log P(Y = y)`` and ``log P(Y > y)``."""
    with np.errstate(invalid="ignore"):
        le, ge = np.logaddexp(below, at), np.logaddexp(above, at)
        if p_value == "doubled":
            log_p = np.log(2.0) + np.minimum(le, ge)
        else:
            log_p = np.logaddexp(np.log(2.0) + np.minimum(below, above), at)
    return np.minimum(log_p, 0.0), np.minimum(le, 0.0), np.minimum(ge, 0.0)


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


@fill_doc(p_value_and_mixture=_P_VALUE_AND_MIXTURE)
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
        Counts per stratum (at least two strata; zero-trial strata get p-value 1).
    alpha : float
        Error rate of the flag rule.
    control : {"holm", "per_stratum"}
        ``"holm"`` (default): Holm's step-down rule over the strata with trials,
        which bounds the probability of flagging *any* stratum of an exchangeable
        dataset (per-dataset false-flag rate) by ``alpha``. ``"per_stratum"``: flag
        ``p <= alpha``, which bounds the false-flag rate of each stratum.
    {p_value_and_mixture}

    Returns
    -------
    ConflictCheck
        ``p_value``, ``flagged``, ``expected`` (predictive mean count), ``p_below``
        (``P(Y <= y)``), ``p_above`` (``P(Y >= y)``) and ``log_p_value`` (the natural log
        of ``p_value``, exact where ``p_value`` underflows to 0.0) per stratum.

    Notes
    -----
    The reference of stratum ``i`` is the posterior predictive of its count under the
    Beta-binomial model fitted to the other strata (BDA3 hyperprior, hyper-grid), so
    an outlier is compared with the others only. The p-value is mid-p by default (no
    randomisation). ``control="per_stratum"`` trades per-dataset control for power when a
    false flag only costs width (reading the stratum's own interval). Measured power and
    false flags, and the cost: docs/validation.md, sections 6c and 12d.

    The tails are exact sums in logs (:func:`bayeseval._kernels.betabinom.beta_mixture_log_tails`)
    at any number of trials, so a p-value keeps falling as the evidence against a stratum
    grows; ``p_value`` is ``exp`` of ``log_p_value``, which reads 0.0 only below about
    1e-308 (``log_p_value`` keeps falling). Flags compare p-values with ``alpha / k``, so
    a p-value of 0.0 is flagged at every level and a stratum flagged with some evidence
    stays flagged with more. The grid of the leave-one-out mixture holds the other
    strata's extreme rates (:func:`bayeseval._kernels.loo_prior.loo_beta_mixture`), so with
    nine strata at 0.20 and one at 0.10 the outlier's ``log_p_value`` is -38, -102, -216,
    -966 and -2,098 at 2e4, 5e4, 1e5, 1e6 and 1e7 trials per stratum. The mixture
    keeps the components that hold all but 1e-6 of its weight (as the predictive pmf), so
    a p-value is within 1e-6 of the full mixture's.

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
        raise ValueError(f"trials must have at least two strata with trials to compare, got {n.tolist()!r}")
    if mixture is None:
        log_p, expected, below, above = _cached_p_values(s, n, p_value)
    else:
        log_p, expected, below, above = predictive_p_values(s, n, *mixture, p_value=p_value, log=True)
    check = conflict_from_p_values(log_p, expected, below, above, n, alpha=alpha, control=control)
    return ConflictCheck(*(np.asarray(v).reshape(shape) for v in check))


def conflict_from_p_values(
    log_p: Any,
    expected: Any,
    log_below: Any,
    log_above: Any,
    trials: Any,
    *,
    alpha: float = 0.05,
    control: str = "holm",
) -> ConflictCheck:
    """The conflict flags of :func:`loo_conflict` from leave-one-out predictive p-values however computed.

    :func:`loo_conflict` computes the p-values of binomial counts under the Beta-binomial
    model; the pooled model over units computes those of its strata's total successes
    (:func:`bayeseval.models.exact_units.loo_units_p_values`). Both are flagged here, by one rule.

    Parameters
    ----------
    log_p, expected, log_below, log_above : array_like, shape (S,)
        Natural logs of the two-sided p-value, the predictive mean, and the logs of
        ``P(Y <= y)`` and ``P(Y >= y)`` per stratum.
    trials : array_like, shape (S,)
        Trials per stratum (a stratum without trials is never flagged).
    alpha : float
        Error rate of the flag rule.
    control : {"holm", "per_stratum"}
        As in :func:`loo_conflict`.

    Returns
    -------
    ConflictCheck

    Examples
    --------
    >>> c = conflict_from_p_values(np.log([0.5, 0.01, 0.03]), [5, 5, 5], np.log([0.6, 1.0, 0.02]),
    ...                            np.log([0.6, 0.005, 1.0]), [10, 10, 10], alpha=0.05)
    >>> c.flagged.tolist()
    [False, True, False]
    """
    alpha = check_probability(alpha, "alpha", open_interval=True)
    control = check_method(control, _CONTROLS, "control")
    log_p, expected, below, above = (np.asarray(v, float).ravel() for v in (log_p, expected, log_below, log_above))
    n = np.asarray(trials, float).ravel()
    p, below, above = np.exp(log_p), np.exp(below), np.exp(above)
    used = n > 0
    flagged = np.zeros(p.size, bool)
    if control == "holm":
        flagged[used] = holm_flags(p[used], alpha)
    else:
        flagged = used & (p <= alpha)
    return ConflictCheck(p, flagged, expected, below, above, log_p)


def pmf_p_value(pmf: Any, count: int, p_value: str = "mid_p") -> tuple[float, float, float, float]:
    """Log two-sided p-value, predictive mean and log tails of one count under a pmf on ``0..L-1``.

    Parameters
    ----------
    pmf : array_like, shape (L,)
        Probabilities of ``0..L-1`` (negative values, from rounding, are read as 0; the
        pmf is normalised).
    count : int
        The observed count.
    p_value : {"mid_p", "doubled"}
        As in :func:`predictive_p_values`.

    Returns
    -------
    (float, float, float, float)
        ``log p``, the predictive mean, ``log P(Y <= y)`` and ``log P(Y >= y)``.

    Examples
    --------
    >>> from scipy import stats
    >>> pmf = stats.betabinom.pmf(np.arange(21), 20, 8.0, 92.0)
    >>> lp, mean, lo, hi = pmf_p_value(pmf, 9, "doubled")
    >>> bool(np.isclose(np.exp(lp), 2 * stats.betabinom.sf(8, 20, 8.0, 92.0)))
    True
    """
    p_value = check_method(p_value, _P_VALUES, "p_value")
    f = np.clip(np.asarray(pmf, float).ravel(), 0.0, None)
    f = f / f.sum()
    y = int(count)
    mean = float(np.arange(f.size) @ f)
    with np.errstate(divide="ignore"):
        below, at, above = (np.log(v) for v in (f[:y].sum(), f[y] if 0 <= y < f.size else 0.0, f[y + 1 :].sum()))
    log_p, le, ge = _log_p_values(np.array([below]), np.array([at]), np.array([above]), p_value)
    return float(log_p[0]), mean, float(le[0]), float(ge[0])


#: the leave-one-out p-values of the last few count vectors: the conflict check of a
#: report's model check and the ``read`` columns of its summary share one computation
_P_CACHE: dict = {}
_P_CACHE_SIZE = 4


def _cached_p_values(s: np.ndarray, n: np.ndarray, p_value: str) -> tuple:
    """Leave-one-out predictive log p-values and log tails of ``(s, n)`` (:func:`predictive_p_values`
    with ``log=True``), cached.

    Strata with the same counts have the same leave-one-out predictive (the same other
    strata), so each distinct ``(s, n)`` pair is computed once.
    """
    key = (s.astype(np.int64).tobytes(), n.astype(np.int64).tobytes(), p_value)
    hit = _P_CACHE.pop(key, None)
    if hit is None:
        _, first, inv = np.unique(np.column_stack([s, n]), axis=0, return_index=True, return_inverse=True)
        keep = np.zeros(s.size, bool)
        keep[first] = True
        # rows of the kept strata in index order; first[j] is the stratum of pair j
        pos = np.cumsum(keep) - 1
        sk, nk = s[keep], n[keep]
        size, groups = loo_mixture_groups(s, n, rows=keep)
        out = np.empty((4, size))
        for sel, w, a, b in groups:  # one hyper-grid per group, shared by its strata
            out[:, sel] = predictive_p_values(sk[sel], nk[sel], w, a, b, p_value=p_value, log=True)
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


@fill_doc(p_value_and_mixture=_P_VALUE_AND_MIXTURE)
def flag_power(
    successes: Any,
    trials: Any,
    rates: Any,
    *,
    alpha: float = 0.05,
    p_value: str = "mid_p",
    mixture: tuple | None = None,
) -> np.ndarray:
    """Power of the per-stratum conflict rule at given true rates (exact).

    For stratum ``i`` the rule flags the counts ``y`` in ``0..n_i`` whose two-sided
    p-value under the leave-one-out predictive (:func:`loo_conflict`) is at most
    ``alpha``; the power at a true rate ``r`` is ``sum over flagged y of Bin(y; n_i, r)``.
    The reference depends only on the other strata, so the enumeration is exact. Above
    ``MAX_TRIALS`` (20,000) trials the flagged counts are found as ``0..y_lo`` and
    ``y_hi..n`` (the p-value's two branches are monotone in the count) by bisection on the
    exact log tails, and the power is two binomial tails.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts per stratum (at least two strata with trials).
    rates : array_like, shape (S,) or (S, R)
        True rates at which the power is wanted, one per stratum or ``R`` per stratum
        (values outside [0, 1] give power 0).
    alpha : float
        Per-stratum level of the rule (``control="per_stratum"``).
    {p_value_and_mixture}

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
        if ni == 0:
            continue
        ok = (r2[i] >= 0) & (r2[i] <= 1)
        pr = np.clip(r2[i], 0.0, 1.0)
        if ni > MAX_TRIALS:  # the flagged counts are 0..y_lo and y_hi..n
            y_lo, y_hi = _flagged_ends(int(ni), weights[i], a[i], b[i], alpha, p_value)
            power = stats.binom.cdf(y_lo, int(ni), pr) + stats.binom.sf(y_hi - 1, int(ni), pr)
            out[i] = np.where(ok, np.minimum(power, 1.0) if y_lo < y_hi else 1.0, 0.0)
            continue
        pmf = beta_mixture_predictive(int(ni), weights[i], a[i], b[i])
        flagged = np.flatnonzero(_p_values_all_counts(pmf, p_value) <= alpha)
        if flagged.size:
            out[i] = np.where(ok, stats.binom.pmf(flagged[:, None], int(ni), pr[None, :]).sum(axis=0), 0.0)
    return out[:, 0] if squeeze else out


def _flagged_ends(n: int, w: np.ndarray, a: np.ndarray, b: np.ndarray, alpha: float, p_value: str) -> tuple[int, int]:
    """The largest count ``y_lo`` (-1 if none) and the smallest ``y_hi`` (``n + 1`` if none)
    flagged at ``alpha``, by bisection on the log tails.

    The two-sided p-value is ``min(1, A(y), B(y))`` with ``A = 2 P(Y < y) + P(Y = y)``
    non-decreasing and ``B = 2 P(Y > y) + P(Y = y)`` non-increasing in ``y`` (mid-p; the
    doubled p-value has ``2 P(Y <= y)`` and ``2 P(Y >= y)``), so the flagged counts are
    ``0..y_lo`` and ``y_hi..n``.
    """
    kw, ka, kb, live = kept_components(*(np.asarray(v, float).reshape(1, -1) for v in (w, a, b)))
    kw = np.where(live, kw, 0.0)
    log_alpha, log2 = np.log(alpha), np.log(2.0)
    lo_a, hi_a, lo_b, hi_b = -1, n + 1, -1, n + 1  # A(lo_a) <= alpha < A(hi_a); B(hi_b) <= alpha < B(lo_b)
    while hi_a - lo_a > 1 or hi_b - lo_b > 1:
        y = np.array([(lo_a + hi_a) // 2, (lo_b + hi_b) // 2], float)
        y = np.clip(y, 0, n)
        below, at, above = beta_mixture_log_tails(
            y, np.full(2, float(n)), np.repeat(kw, 2, axis=0), np.repeat(ka, 2, axis=0), np.repeat(kb, 2, axis=0)
        )
        if p_value == "doubled":
            A, B = log2 + np.logaddexp(below[0], at[0]), log2 + np.logaddexp(above[1], at[1])
        else:
            A, B = np.logaddexp(log2 + below[0], at[0]), np.logaddexp(log2 + above[1], at[1])
        if hi_a - lo_a > 1:
            lo_a, hi_a = (int(y[0]), hi_a) if A <= log_alpha else (lo_a, int(y[0]))
        if hi_b - lo_b > 1:
            lo_b, hi_b = (lo_b, int(y[1])) if B <= log_alpha else (int(y[1]), hi_b)
    return lo_a, hi_b


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
    check: ConflictCheck | None = None,
    own: str = "adaptive",
) -> ReadChoice:
    """Read the pooled interval, or the adaptive one where the stratum is not clearly typical.

    A stratum with trials reads ``"adaptive"`` when the conflict rule flags it (at
    ``alpha`` under ``control``) or its two-sided mid-p value under the leave-one-out
    predictive is at most ``threshold``; otherwise ``"pooled"``. With fewer than two
    strata with trials there is nothing to compare and every stratum reads ``"pooled"``.

    The same rule reads the pooled model over units: ``check`` is then its conflict check
    (:func:`conflict_from_p_values` of the leave-one-out p-values of each stratum's total
    successes) and ``own`` names the stratum's own interval (``"units"``, its units'
    interval); the choice's ``mixture`` is None (:func:`read_bounds` computes no adaptive
    interval: the caller gives the own interval).

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
    check : ConflictCheck, optional
        The conflict check to read (default: :func:`loo_conflict` of the counts).
    own : str
        The ``read`` value of a stratum that does not read the pooled interval.

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
    mixture: str | None = LOO_MIXTURE
    if check is None:
        check = loo_conflict(s, n, alpha=alpha, control=control)
    else:
        mixture = None
    flag = np.asarray(check.flagged, bool)
    adaptive = (n > 0) & (flag | (check.p_value <= threshold))
    side = np.where(check.p_below > check.p_above, "above", "below").astype(object)
    p_text = np.array([f"p = {p:.2g}" if p >= 1e-300 else "p < 1e-300" for p in check.p_value], dtype=object)
    reason = np.where(
        flag,
        "count " + side + " what the other strata predict (" + p_text + ")",
        np.where(
            adaptive,
            "count not clearly typical of the other strata (" + p_text + ")",
            np.where(n > 0, "consistent with the other strata", "no trials: pooled prediction"),
        ),
    ).astype(object)
    read = np.where(adaptive, own, "pooled").astype(object)
    return ReadChoice(read, reason, adaptive, check, s, n, mixture)


def read_bounds(
    choice: ReadChoice, lower: Any, upper: Any, level: float, rows: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Ends of the interval ``read`` points to: ``lower``/``upper`` or the adaptive interval.

    The adaptive interval of a stratum is :func:`bayeseval._kernels.adaptive.adaptive_interval`
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
                choice.successes[rep[pos]],
                choice.trials[rep[pos]],
                a,
                b,
                w,
                level=level,
                diffuse_weight=DIFFUSE_WEIGHT,
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
    choice = ReadChoice(
        np.full(k, "adaptive", dtype=object), np.full(k, "", dtype=object), n > 0, None, s, n, LOO_MIXTURE
    )
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
