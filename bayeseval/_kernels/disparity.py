"""Interval kernels for disparities between groups: differences, ratios and max-min gaps.

All kernels work on arrays (one entry per comparison) and return ``NaN`` where a
comparison is undefined (a group without trials). They take per-group estimates and
intervals computed elsewhere, so the same kernel serves plain proportions and derived
rates such as balanced accuracy.

* :func:`mover_difference` -- the MOVER interval of ``theta1 - theta2`` from two
  independent per-group intervals (Zou and Donner 2008, Stat Med 27:1693-1702). With
  Wilson score intervals it is Newcombe's hybrid score interval (Newcombe 1998, Stat
  Med 17:873-890, method 10).
* :func:`mover_mean` -- the MOVER interval of ``(theta1 + theta2) / 2`` (balanced
  accuracy as the mean of the true positive and true negative rates).
* :func:`mover_ratio` -- the MOVER-R interval of ``theta1 / theta2`` (Donner and Zou
  2012, Stat Methods Med Res 21:347-359).
* :func:`katz_ratio` -- the Katz log interval of a ratio of two proportions (Katz et
  al. 1978, Biometrics 34:469-474), with 0.5 added to each count and each number of
  trials when a count is zero.
* :func:`gap_interval` -- a simultaneous interval for the max-min gap across groups,
  projected from per-group intervals at the Bonferroni level ``1 - (1 - level) / G``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = [
    "mover_difference",
    "mover_mean",
    "mover_ratio",
    "katz_ratio",
    "gap_interval",
    "bonferroni_level",
]


def _arrays(*values: Any) -> list[np.ndarray]:
    return [np.asarray(v, dtype=float) for v in np.broadcast_arrays(*values)]


def mover_difference(est1: Any, lo1: Any, hi1: Any, est2: Any, lo2: Any, hi2: Any) -> tuple[np.ndarray, np.ndarray]:
    """MOVER interval of ``theta1 - theta2`` from two independent intervals.

    ``L = d - sqrt((e1 - l1)^2 + (u2 - e2)^2)`` and
    ``U = d + sqrt((u1 - e1)^2 + (e2 - l2)^2)`` with ``d = e1 - e2``. With Wilson
    intervals for two proportions this is Newcombe's (1998) hybrid score interval
    (method 10), the interval statsmodels computes with
    ``confint_proportions_2indep(method="newcomb")``.

    Parameters
    ----------
    est1, lo1, hi1 : array_like
        Estimate and interval ends of the first group.
    est2, lo2, hi2 : array_like
        Estimate and interval ends of the second group.

    Returns
    -------
    lower, upper : numpy.ndarray
        Interval ends of the difference (``NaN`` where an input is ``NaN``).

    Examples
    --------
    Newcombe (1998), Table II, example (c) 56/70 against 48/80, Wilson 95% intervals:

    >>> lo, hi = mover_difference(0.8, 0.6918, 0.8770, 0.6, 0.4905, 0.7004)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.0524, 0.3339)
    """
    e1, l1, u1, e2, l2, u2 = _arrays(est1, lo1, hi1, est2, lo2, hi2)
    d = e1 - e2
    lower = d - np.sqrt((e1 - l1) ** 2 + (u2 - e2) ** 2)
    upper = d + np.sqrt((u1 - e1) ** 2 + (e2 - l2) ** 2)
    return lower, upper


def mover_mean(est1: Any, lo1: Any, hi1: Any, est2: Any, lo2: Any, hi2: Any) -> tuple[np.ndarray, np.ndarray]:
    """MOVER interval of ``(theta1 + theta2) / 2`` from two independent intervals.

    ``L = m - sqrt((e1 - l1)^2 + (e2 - l2)^2) / 2`` and
    ``U = m + sqrt((u1 - e1)^2 + (u2 - e2)^2) / 2`` (Zou and Donner 2008).

    Parameters
    ----------
    est1, lo1, hi1, est2, lo2, hi2 : array_like
        Estimates and interval ends of the two quantities.

    Returns
    -------
    lower, upper : numpy.ndarray
        Interval ends of the mean.

    Examples
    --------
    >>> lo, hi = mover_mean(0.8, 0.7, 0.9, 0.6, 0.5, 0.7)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.6293, 0.7707)
    """
    e1, l1, u1, e2, l2, u2 = _arrays(est1, lo1, hi1, est2, lo2, hi2)
    m = 0.5 * (e1 + e2)
    lower = m - 0.5 * np.sqrt((e1 - l1) ** 2 + (e2 - l2) ** 2)
    upper = m + 0.5 * np.sqrt((u1 - e1) ** 2 + (u2 - e2) ** 2)
    return lower, upper


def mover_ratio(est1: Any, lo1: Any, hi1: Any, est2: Any, lo2: Any, hi2: Any) -> tuple[np.ndarray, np.ndarray]:
    """MOVER-R interval of ``theta1 / theta2`` for positive quantities (Donner and Zou 2012).

    Parameters
    ----------
    est1, lo1, hi1, est2, lo2, hi2 : array_like
        Estimates and interval ends of numerator and denominator (denominator > 0).

    Returns
    -------
    lower, upper : numpy.ndarray
        Interval ends of the ratio (``NaN`` when the denominator's estimate is 0;
        the upper end is ``inf`` when the denominator's lower end is 0).

    Examples
    --------
    Equal estimates and intervals give a ratio interval around 1 that is
    symmetric on the log scale only approximately:

    >>> lo, hi = mover_ratio(0.5, 0.4, 0.6, 0.5, 0.4, 0.6)
    >>> bool(lo < 1.0 < hi)
    True
    """
    e1, l1, u1, e2, l2, u2 = _arrays(est1, lo1, hi1, est2, lo2, hi2)
    with np.errstate(divide="ignore", invalid="ignore"):
        prod = e1 * e2
        disc_lo = np.maximum(prod**2 - l1 * u2 * (2 * e1 - l1) * (2 * e2 - u2), 0.0)
        disc_hi = np.maximum(prod**2 - u1 * l2 * (2 * e1 - u1) * (2 * e2 - l2), 0.0)
        lower = (prod - np.sqrt(disc_lo)) / (u2 * (2 * e2 - u2))
        upper = (prod + np.sqrt(disc_hi)) / (l2 * (2 * e2 - l2))
    upper = np.where(l2 <= 0, np.inf, upper)
    bad = ~(e2 > 0)
    return np.where(bad, np.nan, np.maximum(lower, 0.0)), np.where(bad, np.nan, upper)


def katz_ratio(s1: Any, n1: Any, s2: Any, n2: Any, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Katz log interval of the ratio of two proportions ``(s1 / n1) / (s2 / n2)``.

    ``log(r) +- z sqrt(1/s1 - 1/n1 + 1/s2 - 1/n2)``. When either count is zero the
    interval is computed with 0.5 added to both counts and both numbers of trials
    (statsmodels' ``"log-adjusted"``), and the end on the side of the zero is then
    set to 0 (zero numerator) or infinity (zero denominator), so that the interval
    always contains the raw ratio, which is the returned estimate.

    Parameters
    ----------
    s1, n1, s2, n2 : array_like
        Successes and trials of the two groups.
    level : float
        Confidence level.

    Returns
    -------
    estimate, lower, upper : numpy.ndarray
        The raw ratio and the interval ends; ``NaN`` where a group has no trials,
        and an estimate of ``inf`` or ``NaN`` where the second rate is 0.

    Examples
    --------
    >>> est, lo, hi = katz_ratio(56, 70, 48, 80, 0.95)
    >>> round(float(est), 4), round(float(lo), 4), round(float(hi), 4)
    (1.3333, 1.0766, 1.6512)
    """
    s1, n1, s2, n2 = _arrays(s1, n1, s2, n2)
    z = special.ndtri(0.5 + level / 2)
    add = np.where((s1 == 0) | (s2 == 0), 0.5, 0.0)
    a1, m1, a2, m2 = s1 + add, n1 + add, s2 + add, n2 + add
    with np.errstate(divide="ignore", invalid="ignore"):
        est = (s1 / n1) / (s2 / n2)
        centre = np.log((a1 / m1) / (a2 / m2))
        half = z * np.sqrt(1 / a1 - 1 / m1 + 1 / a2 - 1 / m2)
    empty = (n1 <= 0) | (n2 <= 0)
    # a zero numerator (denominator) count: the ratio may be 0 (infinite), as the raw ratio says
    lower = np.where(empty, np.nan, np.where(s1 == 0, 0.0, np.exp(centre - half)))
    upper = np.where(empty, np.nan, np.where(s2 == 0, np.inf, np.exp(centre + half)))
    return np.where(empty, np.nan, est), lower, upper


def bonferroni_level(level: float, n_intervals: int) -> float:
    """Per-interval level that makes ``n_intervals`` intervals simultaneous at ``level``.

    Parameters
    ----------
    level : float
        Joint confidence level.
    n_intervals : int
        Number of intervals.

    Returns
    -------
    float
        ``1 - (1 - level) / n_intervals`` (Bonferroni's inequality).

    Examples
    --------
    >>> bonferroni_level(0.95, 5)
    0.99
    """
    return 1.0 - (1.0 - level) / max(int(n_intervals), 1)


def gap_interval(est: Any, lo: Any, hi: Any) -> tuple[float, float, float]:
    """Max-min gap across groups and its interval, projected from simultaneous intervals.

    If every group's rate lies in its interval ``[l_g, u_g]`` (which happens with
    probability at least ``level`` when each interval is exact at the Bonferroni level
    ``1 - (1 - level) / G``), then the gap ``max theta - min theta`` lies in
    ``[max(0, max_g l_g - min_g u_g), max_g u_g - min_g l_g]``: the lower end because
    the gap is at least ``theta_i - theta_j >= l_i - u_j`` for every pair, the upper end
    because every rate lies between ``min l`` and ``max u``. The coverage of the gap is
    therefore at least ``level`` for every configuration of true rates, with no
    resampling (a bootstrap of the max-min gap is biased upward when groups are small).
    Groups whose entries are ``NaN`` (no trials) are left out.

    Parameters
    ----------
    est, lo, hi : array_like, shape (G,)
        Per-group estimates and simultaneous interval ends.

    Returns
    -------
    gap, lower, upper : float
        The estimated gap (max - min of ``est``) and the interval ends; ``NaN`` when
        fewer than two groups have estimates.

    Examples
    --------
    >>> gap_interval([0.2, 0.5, 0.3], [0.1, 0.35, 0.2], [0.3, 0.65, 0.4])
    (0.3, 0.04999999999999999, 0.55)
    """
    e, low, upp = _arrays(est, lo, hi)
    keep = np.isfinite(e) & np.isfinite(low) & np.isfinite(upp)
    if np.count_nonzero(keep) < 2:
        return float("nan"), float("nan"), float("nan")
    e, low, upp = e[keep], low[keep], upp[keep]
    gap = float(e.max() - e.min())
    return gap, float(max(0.0, low.max() - upp.min())), float(upp.max() - low.min())


#: pairs x replicates held in memory at once by the max-t calibration (about 32 MB of floats)
_PAIR_CELLS = 4_000_000


def _pair_index(n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n_groups, k=1)
    return i, j


def _rates_and_variances(
    successes: np.ndarray, trials: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted rates and their Agresti-Caffo variances (one success and one failure added).

    ``successes`` and ``trials`` have shape (..., G, K): K component proportions per group,
    combined as ``sum_k weights[k] * s_k / n_k``. Returns ``(rate, adjusted_rate, variance)``
    of shape (..., G).
    """
    rate = (successes / trials) @ weights
    tilde = (successes + 1.0) / (trials + 2.0)
    adjusted = tilde @ weights
    variance = (tilde * (1.0 - tilde) / (trials + 2.0)) @ (weights**2)
    return rate, adjusted, variance


def max_t_critical(
    successes: Any,
    trials: Any,
    level: float,
    *,
    weights: Any = None,
    n_resamples: int = 2000,
    rng: np.random.Generator,
) -> float:
    """Critical value of simultaneous pairwise differences: parametric-bootstrap max |t|.

    Each group's counts are redrawn from the binomial at given rates (the multinomial
    count bootstrap of :func:`bayeseval._kernels.resampling.resample_counts`); for each
    replicate the largest studentised deviation over all pairs,
    ``max_{i<j} |d*_ij - delta_ij| / se*_ij`` (Agresti-Caffo centre and standard error, one
    success and one failure added per proportion, so a group at 0 or 1 has a positive
    standard error; ``delta`` the difference of the generating rates), is recorded, and
    its ``level`` quantile taken. This is done twice, at the observed rates and at the
    pooled rate (every group at the overall rate), and the larger value is returned, and
    never less than the single-pair normal quantile ``z_{(1 + level) / 2}``. The pooled
    calibration is the configuration of equal rates, where the gap interval must contain
    0: calibrated at the observed rates alone, whose spread is noise there, the coverage
    of a zero gap was 0.946 and 0.951 at rates 0.1 and 0.3 (six groups of 20-2,000, 2,000
    datasets, SE 0.005), and with the larger of the two 0.959 and 0.961, at the same
    power against a gap of 0.15 (0.54). The floor covers the degenerate case where every
    rate is 0 or 1 and every replicate equals the data.

    Parameters
    ----------
    successes, trials : array_like, shape (G,) or (G, K)
        Counts per group (and per component proportion, combined with ``weights``);
        every group needs trials.
    level : float
        Joint confidence level.
    weights : array_like, shape (K,), optional
        Weights of the component proportions (default one component of weight 1;
        balanced accuracy is ``(0.5, 0.5)`` over TPR and TNR).
    n_resamples : int
        Bootstrap replicates of each of the two calibrations.
    rng : numpy.random.Generator
        Source of the replicates.

    Returns
    -------
    float
        The critical value ``c`` of ``d_ij +- c se_ij``.

    Examples
    --------
    Two large groups: the max over one pair is the normal quantile, about 1.96.

    >>> c = max_t_critical([3000, 3000], [10000, 10000], 0.95, rng=np.random.default_rng(0))
    >>> bool(1.9 < c < 2.07)
    True
    """
    s, n, w = _components(successes, trials, weights)
    pooled = np.broadcast_to(s.sum(axis=0) / n.sum(axis=0), s.shape)
    found = [_bootstrap_critical(rates, n, w, level, n_resamples, rng) for rates in (s / n, pooled)]
    return float(max(*found, special.ndtri(0.5 + level / 2)))


def _bootstrap_critical(
    rates: np.ndarray, n: np.ndarray, w: np.ndarray, level: float, n_resamples: int, rng: np.random.Generator
) -> float:
    """The ``level`` quantile of max |t| over the pairs, counts drawn at ``rates`` (G, K)."""
    from bayeseval._kernels.resampling import resample_counts

    groups, k = rates.shape
    pi, pj = _pair_index(groups)
    rate = rates @ w
    truth = rate[pi] - rate[pj]
    expected = rates * n
    cells = np.stack([expected.ravel(), (n - expected).ravel()], axis=1)

    def statistic(draws: np.ndarray) -> np.ndarray:
        star = draws[..., 0].reshape(draws.shape[0], groups, k)
        _, adj, var = _rates_and_variances(star, n, w)
        t = np.abs(adj[:, pi] - adj[:, pj] - truth) / np.sqrt(var[:, pi] + var[:, pj])
        return t.max(axis=1)

    # batches of about _PAIR_CELLS studentised pairs (bounded memory with many groups)
    per_batch = max(1, _PAIR_CELLS // max(len(pi), 1))
    reps = resample_counts(statistic, cells, n_resamples, rng, max_cells=per_batch * cells.size)
    return float(np.quantile(reps[:, 0], level))


def _components(successes: Any, trials: Any, weights: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if s.ndim == 1:
        s, n = s[:, None], n[:, None]
    w = np.ones(s.shape[1]) if weights is None else np.asarray(weights, dtype=float)
    return s, n, w


def max_t_gap(
    successes: Any,
    trials: Any,
    level: float,
    *,
    weights: Any = None,
    n_resamples: int = 2000,
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """Max-min gap across groups and its interval from simultaneous pairwise differences.

    Every pair gets ``d~_ij +- c se_ij`` (Agresti-Caffo centre and standard error, ``c``
    from :func:`max_t_critical`), simultaneous at ``level``. If each pair's interval holds
    its difference, the gap ``max_ij |theta_i - theta_j|`` lies in
    ``[max(0, max_ij max(L_ij, -U_ij)), min(1, max_ij max(U_ij, -L_ij))]``, so the gap
    interval covers whenever the pairwise intervals do. The critical value is calibrated
    by parametric bootstrap at the observed rates, so coverage is approximate (measured
    coverage: docs/validation.md, section 8), not guaranteed as with :func:`gap_interval`.

    Parameters
    ----------
    successes, trials : array_like, shape (G,) or (G, K)
        Counts of the groups the gap is taken over (every group with trials).
    level : float
        Joint confidence level.
    weights : array_like, shape (K,), optional
        Weights of the component proportions (see :func:`max_t_critical`).
    n_resamples : int
        Bootstrap replicates of the critical value.
    rng : numpy.random.Generator
        Source of the replicates.

    Returns
    -------
    gap, lower, upper : float
        The observed gap (max - min of the rates) and the interval ends; ``NaN`` when
        fewer than two groups are given.

    Examples
    --------
    >>> gap, lo, hi = max_t_gap([60, 150, 300], [200, 500, 1000], 0.95, rng=np.random.default_rng(0))
    >>> round(gap, 3), bool(lo == 0.0), bool(0.05 < hi < 0.2)
    (0.0, True, True)
    """
    s, n, w = _components(successes, trials, weights)
    if s.shape[0] < 2:
        return float("nan"), float("nan"), float("nan")
    c = max_t_critical(s, n, level, weights=w, n_resamples=n_resamples, rng=rng)
    rate, adj, var = _rates_and_variances(s, n, w)
    pi, pj = _pair_index(s.shape[0])
    d, half = adj[pi] - adj[pj], c * np.sqrt(var[pi] + var[pj])
    lo, hi = d - half, d + half
    lower = max(0.0, float(np.max(np.maximum(lo, -hi))))
    upper = min(1.0, float(np.max(np.maximum(hi, -lo))))
    return float(rate.max() - rate.min()), lower, upper
