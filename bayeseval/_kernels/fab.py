"""FAB ("frequentist, assisted by Bayes") binomial intervals with a given prior.

The interval inverts, for every null rate ``p0``, an exact level-``alpha`` binomial test of
``H0: p = p0`` whose acceptance region ``[a, b]`` (integers) satisfies
``P(X < a) + P(X > b) <= alpha`` under ``Binomial(n, p0)`` and, among all such regions, has
the smallest prior-predictive probability (Yu and Hoff 2018, Biometrika 105(2), "Adaptive
multigroup confidence intervals with constant coverage", for normal means; the same
construction for binomial proportions). The share ``w(p0)`` of ``alpha`` in the lower tail
is a non-decreasing function of ``p0`` that minimises the prior-expected length (Pratt's
identity; dynamic programming on a grid, :func:`fab_split`): both ends of the acceptance
region are then non-decreasing in ``p0``, the set ``{p0 : x in A(p0)}`` is one interval,
and its ends are found by bisection. Every test is exact whatever ``w``, so the interval
covers the true rate with probability at least ``1 - alpha`` at every true rate, whatever
the prior.

* :func:`fab_regions`, :func:`fab_split` -- acceptance regions and the optimal tail split;
* :func:`fab_interval` -- intervals for observed counts under one prior per stratum;
* :func:`fab_intervals_all_counts` -- the intervals of every count ``0..n`` at once;
* :func:`split_trials` -- the number of trials a stratum's split is optimised for.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import special

from bayeseval._api.validation import as_float_array, check_counts, check_level, check_probability
from bayeseval._kernels.betabinom import kept_components, mixture_pmfs

__all__ = [
    "FABInterval",
    "DIFFUSE_WEIGHT",
    "MAX_FAB_TRIALS",
    "MAX_SPLIT_TRIALS",
    "fab_regions",
    "fab_split",
    "fab_interval",
    "fab_intervals_all_counts",
    "split_trials",
]


class FABInterval(NamedTuple):
    """Lower and upper ends of adaptive intervals."""

    lower: np.ndarray
    upper: np.ndarray


def _check_beta_prior(prior_a: Any, prior_b: Any, prior_weights: Any, shape: tuple) -> tuple:
    """Return (weights, a, b) as arrays of shape ``shape + (G,)`` after validation."""
    a = as_float_array(prior_a, "prior_a")
    b = as_float_array(prior_b, "prior_b")
    for arr, name in ((a, "prior_a"), (b, "prior_b")):
        bad = ~(np.isfinite(arr) & (arr > 0))
        if np.any(bad):
            raise ValueError(f"{name} must hold finite positive Beta parameters, got {arr[bad].ravel()[0]!r}")
    if prior_weights is None:
        try:
            a, b = (np.broadcast_to(v, shape)[..., None] for v in (a, b))
        except ValueError as exc:
            raise ValueError(
                f"prior_a and prior_b (shapes {np.shape(prior_a)}, {np.shape(prior_b)}) must "
                f"broadcast to the shape of successes {shape}"
            ) from exc
        return np.ones_like(a), a, b
    w = as_float_array(prior_weights, "prior_weights")
    if w.ndim == 0:
        raise ValueError(f"prior_weights must be an array whose last axis indexes mixture components, got {w!r}")
    bad = ~(np.isfinite(w) & (w >= 0))
    if np.any(bad):
        raise ValueError(f"prior_weights must be finite and non-negative, got {w[bad].ravel()[0]!r}")
    try:
        w, a, b = np.broadcast_arrays(w, a, b)
        full = shape + (w.shape[-1],)
        w, a, b = (np.broadcast_to(v, full) for v in (w, a, b))
    except ValueError as exc:
        raise ValueError(
            f"prior_weights, prior_a and prior_b (shapes {np.shape(prior_weights)}, "
            f"{np.shape(prior_a)}, {np.shape(prior_b)}) must broadcast to the shape of "
            f"successes {shape} plus one axis of mixture components"
        ) from exc
    total = w.sum(axis=-1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError(f"prior_weights must have a positive sum, got {total.min()!r}")
    return w / total, a, b


_GRID_SIZE = 201  # points of the split function, uniform in theta = arcsin(sqrt(p))
#: strata with more trials get the equal-tailed split (Clopper-Pearson): the split tables
#: need (trials + 1) x 201 cells, and with that many trials the prior hardly shortens them
MAX_FAB_TRIALS = 20_000
_THETA = np.linspace(0.0, np.pi / 2, _GRID_SIZE)
#: up to this many trials the split is optimised for the stratum's own number of trials
EXACT_SPLIT_TRIALS = 100
#: above, for the nearest smaller value on a geometric grid of this ratio
SPLIT_TRIALS_RATIO = 1.1
#: and for at most this many trials (the grid's 1,919): the split tables' cost is then bounded
#: whatever the trials (the prior predictive of 1,919 trials, thinned, instead of n's)
MAX_SPLIT_TRIALS = 2_000
_SPLIT_GRID = np.unique(np.round(EXACT_SPLIT_TRIALS * SPLIT_TRIALS_RATIO ** np.arange(80)).astype(np.int64))
_BISECT_STEPS = 56
_LEVELS = np.linspace(0.0, 1.0, 101)  # split levels searched by fab_split
_DP0 = np.sin(2.0 * _THETA)[:, None]  # dp0 / dtheta at the grid points
_TIE_BREAK = 1e-12 * np.abs(_LEVELS - 0.5)[None, :]  # toward equal tails
#: weight of the uniform component mixed into each leave-one-out prior by default
DIFFUSE_WEIGHT = 0.1


def _binom_pmf(k: np.ndarray, n: int, p0: np.ndarray) -> np.ndarray:
    """Binomial pmf, rows = null rates, columns = counts (exact at p0 = 0 and 1)."""
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    logp = special.xlogy(k[None, :], p0[:, None]) + special.xlog1py(n - k[None, :], -p0[:, None])
    return np.exp(log_choose[None, :] + logp)


def _tails(p0: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``P(X < a)`` for a = 0..n+1 and ``P(X > b)`` for b = 0..n, rows = null rates."""
    pmf = _binom_pmf(np.arange(n + 1), n, p0)
    lower = np.zeros((p0.size, n + 2))
    lower[:, 1:] = np.cumsum(pmf, axis=1)
    lower[:, -1] = 1.0
    upper = np.zeros((p0.size, n + 1))
    upper[:, :-1] = np.cumsum(pmf[:, :0:-1], axis=1)[:, ::-1]  # accurate in the tail
    return lower, upper


def _optimal(p0: np.ndarray, n: int, prior_pmf: np.ndarray, alpha: float) -> tuple:
    """FAB-optimal regions and the range of lower-tail shares ``w`` that give them."""
    lower, upper = _tails(p0, n)
    budget = alpha - lower[:, :-1]  # upper-tail budget left by each a = 0..n
    rows = np.arange(p0.size)
    # smallest b with P(X > b) <= budget: one sorted search over rows offset by 2
    keys = (2.0 * rows[:, None] - upper).ravel()
    b_all = np.searchsorted(keys, (2.0 * rows[:, None] - budget).ravel(), side="left")
    b_all = np.clip(b_all.reshape(budget.shape) - (n + 1) * rows[:, None], 0, n)
    prior_cdf = np.concatenate([[0.0], np.cumsum(prior_pmf)])
    mass = prior_cdf[b_all + 1] - prior_cdf[:-1][None, :]
    # near-ties go to the split closest to equal tails (deterministic, symmetric)
    objective = mass + 1e-12 * np.abs(lower[:, :-1] / alpha - 0.5)
    objective[budget < 0] = np.inf
    a = np.argmin(objective, axis=1)
    b = b_all[rows, a]
    w_lo = lower[rows, a] / alpha
    w_hi = np.minimum(lower[rows, a + 1] / alpha, 1.0 - upper[rows, b] / alpha)
    return a, b, np.clip(w_lo, 0.0, 1.0), np.clip(w_hi, 0.0, 1.0)


def fab_regions(
    p0: Any, n: int, prior_pmf: Any, alpha: float, split: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Acceptance regions ``[a, b]`` of the exact binomial tests of ``p = p0``.

    With ``split=None`` the region minimises the prior-predictive probability
    ``sum(prior_pmf[a:b + 1])`` among all integer regions with
    ``P(X < a) + P(X > b) <= alpha`` under ``Binomial(n, p0)`` (the FAB test). With a
    fixed ``split = w`` the region has ``P(X < a) <= alpha * w`` and
    ``P(X > b) <= alpha * (1 - w)`` with ``a`` largest and ``b`` smallest; ``w = 0.5``
    gives the equal-tailed (Clopper-Pearson) test.

    The pointwise optimum can jump back and forth between lower-tail shares as ``p0``
    moves, which would make the set of accepted rates for a count a union of pieces;
    the intervals therefore use the best *non-decreasing* share (:func:`fab_split`),
    which coincides with this optimum wherever the optimum is monotone.

    Parameters
    ----------
    p0 : array_like, shape (K,)
        Null rates.
    n : int
        Number of trials.
    prior_pmf : array_like, shape (n + 1,)
        Prior-predictive probabilities of the counts ``0..n`` (ignored with ``split``).
    alpha : float
        Test size (1 - level).
    split : float or None
        Force the share of ``alpha`` in the lower tail.

    Returns
    -------
    a, b : numpy.ndarray of int, shape (K,)
        The region's smallest and largest accepted count.

    Examples
    --------
    Under a prior concentrated near 0.1, the test of ``p0 = 0.5`` with 20 trials puts
    all of ``alpha`` it can in the lower tail (below 6) and the rest above 14:

    >>> from bayeseval._kernels.betabinom import beta_mixture_predictive
    >>> pmf = beta_mixture_predictive(20, [1.0], [10.0], [90.0])
    >>> a, b = fab_regions([0.5], 20, pmf, 0.05)
    >>> int(a[0]), int(b[0])
    (6, 14)
    """
    p0 = np.atleast_1d(np.asarray(p0, float))
    if split is not None:
        lower, upper = _tails(p0, n)
        a = np.sum(lower[:, :-1] <= alpha * split, axis=1) - 1
        b = np.sum(upper > alpha * (1.0 - split), axis=1)
        return a, b
    a, b, _, _ = _optimal(p0, n, np.asarray(prior_pmf, float), alpha)
    return a, b


def _region_ends(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Ends ``a``, ``b`` of the acceptance region at each (grid rate, split level).

    ``a(w)`` is the largest ``a`` with ``P(X < a) <= alpha w`` and ``b(w)`` the smallest
    ``b`` with ``P(X > b) <= alpha (1 - w)`` under ``Binomial(n, p0)``.
    """
    p0 = np.sin(_THETA) ** 2
    lower, upper = _tails(p0, n)
    rows = np.arange(p0.size)[:, None]
    # one sorted search over rows offset by 2 (rows hold values in [0, 1])
    keys = (2.0 * rows + lower[:, :-1]).ravel()
    a = np.searchsorted(keys, (2.0 * rows + alpha * _LEVELS).ravel(), side="right")
    a = a.reshape(p0.size, -1) - (n + 1) * rows - 1
    keys = (2.0 * rows - upper).ravel()
    b = np.searchsorted(keys, (2.0 * rows - alpha * (1.0 - _LEVELS)).ravel(), side="left")
    b = np.clip(b.reshape(p0.size, -1) - (n + 1) * rows, 0, n)
    return np.clip(a, 0, n), b


def fab_split(n: int, prior_pmf: Any, alpha: float) -> np.ndarray:
    """Lower-tail share ``w(p0)`` of the adaptive tests, on the grid ``arcsin(sqrt(p0))``.

    The share is chosen, among all non-decreasing functions of ``p0`` taking values on
    101 levels in [0, 1] at 201 grid points (uniform in ``theta = arcsin(sqrt(p0))``),
    to minimise the prior-expected interval length, which by Pratt's identity is
    ``integral of P_prior(X in A(p0)) dp0`` (dynamic programming, exact on the grid).
    At each rate the test has ``P(X < a) <= alpha w`` and ``P(X > b) <= alpha (1 - w)``
    with ``a`` largest and ``b`` smallest, so it is exact whatever ``w``; between grid
    points ``w`` is linear in ``theta``. A non-decreasing ``w`` makes both ends of the
    acceptance region non-decreasing in ``p0``, so the set of rates accepting a count
    is always one interval, and its ends are found exactly by bisection.

    Parameters
    ----------
    n : int
        Number of trials.
    prior_pmf : array_like, shape (n + 1,)
        Prior-predictive probabilities of the counts.
    alpha : float
        Test size.

    Returns
    -------
    numpy.ndarray, shape (201,)
        ``w`` at the grid points.

    Examples
    --------
    With a prior near 0.1 the rejection goes to the upper tail below 0.1 and to the
    lower tail above it:

    >>> from bayeseval._kernels.betabinom import beta_mixture_predictive
    >>> w = fab_split(20, beta_mixture_predictive(20, [1.0], [10.0], [90.0]), 0.05)
    >>> bool(w[10] < 0.5 < w[150])
    True
    """
    cost = _split_cost(_region_ends(n, alpha), np.asarray(prior_pmf, float))
    return _LEVELS[_best_monotone_path(cost[None])[0]]


def _split_cost(ends: tuple[np.ndarray, np.ndarray], prior_pmf: np.ndarray) -> np.ndarray:
    """Cost of each split level at each grid point: the prior-predictive probability of
    the acceptance region (``ends`` from :func:`_region_ends`) times dp0."""
    a, b = ends
    prior_cdf = np.concatenate([[0.0], np.cumsum(prior_pmf)])
    # dp0 = sin(2 theta) dtheta, plus a tie-break toward w = 1/2
    return (prior_cdf[b + 1] - prior_cdf[a]) * _DP0 + _TIE_BREAK


def _best_monotone_path(cost: np.ndarray) -> np.ndarray:
    """Level indices, non-decreasing along the grid, minimising the summed cost.

    ``cost`` has shape (B, K, W): B independent problems, K grid points, W levels.
    Dynamic programming: ``total_k(j) = cost_k(j) + min_{j' <= j} total_(k-1)(j')``.
    """
    return _monotone_path_by_point(np.ascontiguousarray(np.transpose(cost, (1, 0, 2))))


def _monotone_path_by_point(cost: np.ndarray) -> np.ndarray:
    """:func:`_best_monotone_path` of ``cost`` laid out (K, B, W): one contiguous block per
    grid point, the work arrays written in place (W <= 256 levels)."""
    size, batch, levels = cost.shape
    best = np.zeros((size, batch, levels), dtype=np.uint8)  # argmin of the prefix, per step
    total = cost[0].copy()
    index = np.arange(levels, dtype=np.uint8)
    running = np.empty_like(total)
    is_new = np.ones(total.shape, bool)
    step = np.empty(total.shape, np.uint8)
    for k in range(1, size):
        np.minimum.accumulate(total, axis=1, out=running)
        np.less(total[:, 1:], running[:, :-1], out=is_new[:, 1:])  # a new prefix minimum
        np.multiply(is_new, index, out=step)
        np.maximum.accumulate(step, axis=1, out=best[k])
        np.add(cost[k], running, out=total)
    path = np.empty((batch, size), dtype=np.int64)
    path[:, -1] = np.argmin(total, axis=1)
    rows = np.arange(batch)
    for k in range(size - 1, 0, -1):
        path[:, k - 1] = best[k, rows, path[:, k]]
    return path


# --------------------------------------------------------------------------- inversion


def _split_at(theta: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Interpolate each row's split table (rows of ``table``) at that row's ``theta``."""
    pos = np.clip(theta / _THETA[-1] * (_GRID_SIZE - 1), 0.0, _GRID_SIZE - 1)
    i = np.minimum(pos.astype(np.int64), _GRID_SIZE - 2)
    frac = pos - i
    rows = np.arange(table.shape[0])
    return (1.0 - frac) * table[rows, i] + frac * table[rows, i + 1]


def _invert(x: np.ndarray, n: np.ndarray, table: np.ndarray, alpha: float) -> tuple:
    """Exact ends of ``{p0 : x accepted}`` for rows (x, n, split table), by bisection.

    Lower end: inf of ``P(X >= x) > alpha (1 - w(p0))`` (increasing in p0); upper end:
    sup of ``P(X <= x) > alpha w(p0)`` (decreasing). Each end is returned on the
    rejecting side of its bracket, so the interval contains the acceptance set.
    """
    x, n = np.asarray(x, float), np.asarray(n, float)
    x_lo, n_hi = np.maximum(x, 1.0), np.maximum(n - x, 1.0)  # ends 0 and 1 are set below
    zero, half = np.zeros(x.shape), np.full(x.shape, np.pi / 2)
    out_lo, in_lo = zero.copy(), half.copy()  # lower end: rejecting at 0, accepting at 1
    in_hi, out_hi = zero.copy(), half.copy()
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (out_lo + in_lo)  # P(X >= x) = I_p(x, n - x + 1)
        acc = special.betainc(x_lo, n - x + 1, np.sin(mid) ** 2) > alpha * (1.0 - _split_at(mid, table))
        in_lo, out_lo = np.where(acc, mid, in_lo), np.where(acc, out_lo, mid)
        mid = 0.5 * (in_hi + out_hi)  # P(X <= x) = I_(1-p)(n - x, x + 1)
        acc = special.betainc(n_hi, x + 1, np.cos(mid) ** 2) > alpha * _split_at(mid, table)
        in_hi, out_hi = np.where(acc, mid, in_hi), np.where(acc, out_hi, mid)
    lower = np.where(x <= 0, 0.0, np.sin(out_lo) ** 2)
    upper = np.where(x >= n, 1.0, np.sin(out_hi) ** 2)
    empty = n <= 0
    return np.where(empty, 0.0, lower), np.where(empty, 1.0, upper)


def fab_interval(
    successes: Any,
    trials: Any,
    prior_a: Any,
    prior_b: Any,
    prior_weights: Any = None,
    *,
    level: float = 0.95,
    split: float | None = None,
    diffuse_weight: float = 0.0,
) -> FABInterval:
    """Adaptive (FAB) confidence intervals for binomial proportions, one per stratum.

    Each interval inverts exact binomial tests whose tail split is chosen from the
    prior to minimise the prior-predictive probability of acceptance (see
    :func:`fab_split`), so its coverage is at least ``level`` at every true rate
    whatever the prior; the prior (one Beta or a Beta mixture per stratum) only
    decides where the interval is short.

    Parameters
    ----------
    successes, trials : array_like of int
        Counts per stratum (broadcast together).
    prior_a, prior_b : array_like
        Beta parameters. Without ``prior_weights``: one Beta per stratum (broadcast to
        the shape of ``successes``). With ``prior_weights``: the last axis indexes the
        mixture components, e.g. shape ``(G,)`` for one mixture shared by all strata or
        ``(S, G)`` for one mixture per stratum.
    prior_weights : array_like, optional
        Mixture weights (non-negative, normalised per stratum).
    level : float
        Confidence level in (0, 1).
    split : float, optional
        Force the lower-tail share of ``1 - level``; ``0.5`` gives the equal-tailed
        Clopper-Pearson interval, whatever the prior.
    diffuse_weight : float
        Weight of a uniform (Beta(1, 1)) component mixed into the prior before the
        tests are chosen: it bounds how much wider than Clopper-Pearson the interval
        of a stratum far from the prior can be, at a small cost when the prior is
        right (see :func:`bayeseval._kernels.adaptive.adaptive_interval`).

    Returns
    -------
    FABInterval
        ``lower`` and ``upper``, shaped like ``successes``; ``[0, 1]`` where
        ``trials`` is 0.

    Notes
    -----
    A stratum with more than ``MAX_FAB_TRIALS`` (20,000) trials gets the equal-tailed
    split, i.e. the Clopper-Pearson interval (the split tables would need (trials + 1)
    x 201 cells, and so many trials leave the prior almost nothing to shorten). Above
    100 trials the split is optimised for :func:`split_trials` of the stratum's trials
    (a geometric grid of ratio 1.1, at most 1,919 trials), so strata share the tail
    tables and the cost per stratum is bounded whatever its trials; the tests are
    still exact at the stratum's own number of trials. Because the split is
    non-decreasing in the null rate, the set of null rates whose test accepts the
    observed count is one interval; its ends are found by bisection to about 1e-15 on
    the ``arcsin(sqrt(p))`` scale and rounded outward. Measured minimum coverage: at
    least ``level`` (docs/validation.md, sections 6e and 6f).

    Examples
    --------
    A prior near 0.08 gives a shorter interval than Clopper-Pearson for 2 of 50:

    >>> lo, hi = fab_interval(2, 50, prior_a=8.0, prior_b=92.0)
    >>> cp = fab_interval(2, 50, prior_a=8.0, prior_b=92.0, split=0.5)
    >>> bool(hi - lo < cp.upper - cp.lower)
    True
    >>> round(float(cp.upper), 4)  # equal-tailed Clopper-Pearson upper end
    0.1371
    """
    level = check_level(level)
    if split is not None:
        split = check_probability(split, "split")
    diffuse_weight = check_probability(diffuse_weight, "diffuse_weight")
    s, n = check_counts(successes, trials)
    w, a, b = _check_beta_prior(prior_a, prior_b, prior_weights, s.shape)
    alpha = 1.0 - level
    if split is not None:
        table = np.full((s.size, _GRID_SIZE), split)
    else:
        prior = tuple(v.reshape(s.size, -1) for v in (w, a, b))
        table = _split_tables(n.ravel(), prior, alpha, diffuse_weight)
    lower, upper = _invert(s.ravel(), n.ravel(), table, alpha)
    return FABInterval(lower.reshape(s.shape), upper.reshape(s.shape))


def split_trials(trials: Any) -> np.ndarray:
    """Number of trials each stratum's split function is optimised for.

    Up to ``EXACT_SPLIT_TRIALS`` (100) trials, the stratum's own number; above, the
    largest value not above it (nor above ``MAX_SPLIT_TRIALS``, 2,000) on a geometric
    grid of ratio ``SPLIT_TRIALS_RATIO`` (1.1) from 100: 100, 110, 121, 133, ..., 1,919.
    Strata whose trials round to the same value share the tail tables behind the split
    (the costly part), so the split tables of thousands of strata cost about as much as
    those of a few dozen, and a stratum of 20,000 trials costs what one of 2,000 does
    (the prior-predictive pmf and the tail tables have 1,920 cells, not 20,001). The interval itself
    inverts the tests at the stratum's own number of trials, and every split gives
    exact tests, so the coverage guarantee is untouched; only the split's optimality is
    approximate (docs/validation.md, section 6e, gives the measured width: at 5,000 and
    20,000 trials, whose split is optimised for 1,919, the prior-averaged width is
    0.996-1.008x that of the split optimised for the stratum's own trials, and the minimum
    coverage by exact enumeration is the level, 0.95000).
    :func:`fab_intervals_all_counts` uses the same rule, so exact enumeration checks
    the intervals :func:`fab_interval` gives.

    Parameters
    ----------
    trials : array_like of int
        Numbers of trials.

    Returns
    -------
    numpy.ndarray of int
        The number of trials per stratum that the split is optimised for (<= trials).

    Examples
    --------
    >>> split_trials([5, 100, 109, 110, 2000, 20_000]).tolist()
    [5, 100, 100, 110, 1919, 1919]
    """
    n = np.asarray(trials, dtype=np.int64)
    pos = np.searchsorted(_SPLIT_GRID, np.minimum(n, MAX_SPLIT_TRIALS), side="right") - 1
    return np.where(n <= EXACT_SPLIT_TRIALS, n, _SPLIT_GRID[np.maximum(pos, 0)])


def _thin(pmf: np.ndarray, n: int, m: int) -> np.ndarray:
    """Pmf of the successes among ``m`` of ``n`` trials drawn without replacement.

    If the count of ``n`` exchangeable trials has pmf ``pmf``, a random subset of ``m``
    of them has ``sum_k pmf(k) Hypergeometric(j; n, k, m)``: for a (mixture of)
    Beta-binomial(n) this is exactly the same mixture's Beta-binomial(m) pmf.
    """
    if m == n:
        return pmf
    from scipy import stats  # deferred: only enumeration uses it

    k, j = np.arange(n + 1), np.arange(m + 1)
    out = stats.hypergeom.pmf(j[:, None], n, k[None, :], m) @ pmf
    return out / out.sum()


def _split_tables(n: np.ndarray, prior: tuple, alpha: float, diffuse_weight: float) -> np.ndarray:
    """Split table per stratum (rows): tail tables once per value of :func:`split_trials`,
    the prior-predictive masses per stratum, the dynamic programme in batches."""
    table = np.full((n.size, _GRID_SIZE), 0.5)
    todo = np.flatnonzero((n > 0) & (n <= MAX_FAB_TRIALS))  # beyond: equal tails
    ref = split_trials(n)
    todo = todo[np.argsort(ref[todo], kind="stable")]  # strata sharing tail tables together
    ends: dict[int, tuple] = {}
    # one cost buffer (one block per grid point) and one gather buffer, reused by every chunk
    buffer = np.empty((_GRID_SIZE, 128, _LEVELS.size))
    gathered = np.empty((2, _GRID_SIZE, _LEVELS.size))
    for start in range(0, todo.size, 128):
        chunk = todo[start : start + 128]
        cost = buffer[:, : chunk.size]
        m_chunk = ref[chunk]
        for m in np.unique(m_chunk):  # increasing: earlier sizes are done
            m = int(m)
            if m not in ends:
                lo_end, hi_end = _region_ends(m, alpha)
                ends = {m: (lo_end, hi_end + 1)}
            at = np.flatnonzero(m_chunk == m)
            pmfs = _predictives(m, *(v[chunk[at]] for v in prior))
            for j, pmf in zip(at, pmfs, strict=True):
                cdf = np.concatenate([[0.0], np.cumsum((1.0 - diffuse_weight) * pmf + diffuse_weight / (m + 1.0))])
                _cost_into(cdf, ends[m], cost[:, j], gathered)
        table[chunk] = _LEVELS[_monotone_path_by_point(cost)]
    return table


def _cost_into(prior_cdf: np.ndarray, ends: tuple, out: np.ndarray, gathered: np.ndarray) -> None:
    """:func:`_split_cost` written into ``out`` (``ends`` holding the region's first count
    and one past its last), the same floating-point operations without temporaries.

    ``gathered`` is a contiguous (2, grid points, levels) buffer: ``np.take`` into a strided
    ``out`` (one stratum's column of the batch) is two orders of magnitude slower."""
    hi, lo = gathered[0], gathered[1]
    np.take(prior_cdf, ends[1], out=hi, mode="clip")  # the indices are in range
    np.take(prior_cdf, ends[0], out=lo, mode="clip")
    np.subtract(hi, lo, out=hi)
    np.multiply(hi, _DP0, out=hi)
    np.add(hi, _TIE_BREAK, out=out)


def _predictives(n: int, w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`beta_mixture_predictive` of each row of ``(w, a, b)``, computed at once (the
    same pmfs: padding components add exact zeros); NaN rows where there is no weight."""
    pmf = np.full((w.shape[0], n + 1), np.nan)
    some = np.any(w, axis=1)
    if some.any():
        pmf[some] = mixture_pmfs(n, *kept_components(w[some], a[some], b[some]))
    return pmf


def fab_intervals_all_counts(
    n: int,
    prior_pmf: Any,
    level: float = 0.95,
    split: float | None = None,
    *,
    diffuse_weight: float = 0.0,
    optimise_for: int | None = None,
) -> FABInterval:
    """Adaptive intervals for every count ``0..n`` under one prior-predictive pmf.

    Used for exact-enumeration coverage: the prior of a stratum depends only on the
    other strata, so its interval for each possible own count is computed here once.
    The intervals are those :func:`fab_interval` gives for the same prior: the split is
    optimised for :func:`split_trials` of the ``n`` trials (the prior-predictive pmf of
    that many trials is obtained from ``prior_pmf`` exactly, by hypergeometric
    thinning), and beyond ``MAX_FAB_TRIALS`` the tails are equal.

    Parameters
    ----------
    n : int
        Number of trials.
    prior_pmf : array_like, shape (n + 1,)
        Prior-predictive pmf of the count (ignored with ``split``).
    level : float
        Confidence level.
    split : float, optional
        Force the lower-tail share (0.5: Clopper-Pearson).
    diffuse_weight : float
        Weight of a uniform component mixed into the prior (as in :func:`fab_interval`).
    optimise_for : int, optional
        Number of trials (at most ``n``) the split is optimised for; default
        ``split_trials(n)``, as in :func:`fab_interval`. ``optimise_for=n`` gives the
        split optimised for ``n`` itself (used to measure what the grid costs).

    Returns
    -------
    FABInterval
        Arrays of shape ``(n + 1,)``: the interval for each count.

    Examples
    --------
    >>> from bayeseval._kernels.betabinom import beta_mixture_predictive
    >>> pmf = beta_mixture_predictive(5, [1.0], [1.0], [1.0])
    >>> iv = fab_intervals_all_counts(5, pmf, 0.9)
    >>> iv.lower.shape
    (6,)
    """
    level = check_level(level)
    diffuse_weight = check_probability(diffuse_weight, "diffuse_weight")
    alpha = 1.0 - level
    if split is not None or n > MAX_FAB_TRIALS:  # beyond MAX_FAB_TRIALS: equal tails
        table = np.full(_GRID_SIZE, 0.5 if split is None else check_probability(split, "split"))
    else:  # the split of fab_interval: optimised for split_trials(n) of the n trials
        pmf = (1.0 - diffuse_weight) * np.asarray(prior_pmf, float) + diffuse_weight / (n + 1.0)
        m = int(split_trials(n)) if optimise_for is None else int(optimise_for)
        if optimise_for is not None and not 0 < m <= n:
            raise ValueError(f"optimise_for must be in 1..n = {n}, got {optimise_for!r}")
        table = fab_split(m, _thin(pmf, n, m), alpha)
    x = np.arange(n + 1)
    return FABInterval(*_invert(x, np.full(n + 1, n), np.tile(table, (n + 1, 1)), alpha))
