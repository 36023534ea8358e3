r"""Intervals for a stratum's rate from a proxy known on every row and a few true labels.

Within a stratum the proxy puts each pool row in one of ``K`` ordered cells (a judge's verdict,
a bin of a score), with pool shares :math:`w_c = N_c / N` known from every row. ``n`` labelled
rows drawn at random within the stratum fall ``n_c`` in cell ``c``, ``s_c`` of them successes.
The prediction-powered estimate with the cells as the proxy is the post-stratified estimate

.. math::

    \hat\theta = \sum_c w_c\, s_c / n_c ,

which is what PPI++ gives with the cells' indicators as a linear proxy and the rectifier tuned
optimally (a linear regression on the cell indicators is saturated; Cochran 1977, *Sampling
Techniques*, 3rd ed., section 5A.9, post-stratification). It stays unbiased however wrong the
proxy is, because each cell's rate is estimated from that cell's own labels.

The interval for the weighted sum of binomial rates :math:`\sum_c w_c p_c` is MOVER (Zou and
Donner 2008, *Statistics in Medicine* 27; Zou, Huang and Zhang 2009, *Statistics in Medicine*
28, for linear functions of proportions) on each cell's one-proportion limits
:math:`[l_c, u_c]` (Wilson by default):

.. math::

    L = \hat\theta - \sqrt{\textstyle\sum_c w_c^2 (\hat p_c - l_c)^2}, \quad
    U = \hat\theta + \sqrt{\textstyle\sum_c w_c^2 (u_c - \hat p_c)^2}.

Two rules keep it honest at small counts and make a useless proxy cost (almost) nothing:

* **sparse cells are merged**: walking the ordered cells, a cell joins the next until the group
  holds at least :data:`MIN_CELL_TRIALS` labels (a short tail joins the group before it). A
  merged group is still estimated without bias (labels are random within the stratum), so a
  cell without labels never gets an invented rate.
* **the proxy is used only where it pays**: the cells' interval is used when the estimated
  variance of :math:`\hat\theta` is below :data:`VARIANCE_RATIO` times that of the labels-only
  rate ``s / n`` (both from the smoothed rates ``(s + 1/2) / (n + 1)``); otherwise the stratum
  gets the labels-only interval of ``s / n`` with the same method.

Both rules look at the labels, so the coverage they give is measured, not assumed, by exact
enumeration of every labelled table of truth by proxy cell: docs/validation.md, section 7.

**Units** (:func:`units_proxy_interval`: an item answered several times, its answers judged,
some items labelled on every answer). A cell holds whole units (the unit's proxy aggregated:
see :func:`bayeseval.tabulate`); the labelled units of a cell are a random sample of its units,
so each merged group's row-level rate :math:`R_g = E[a]/E[b]` over its units (``a`` the unit's
successes, ``b`` its trials) gets the betting interval of
:func:`bayeseval._kernels.bounded_mean.units_ci` (valid in finite samples for the ratio),
and the groups are combined with their known row shares :math:`W_g` by the same MOVER rule,
each group's limits at the full level (no Bonferroni split: MOVER is the rule of the rows'
path, and its coverage is measured, not proved). The same two rules apply with units in
place of rows: a group closes at :data:`MIN_CELL_TRIALS` labelled units, and the cells are
read when their smoothed variance is below :data:`VARIANCE_RATIO` of the labels-only one
(both from the linearised ratio, :func:`mean_variance` of
:math:`u_i = \hat R + (a_i - \hat R b_i)/\bar b`, which is the row's 0/1 outcome for units
of one row); otherwise the stratum gets the betting interval of all its labelled units.
With labelled units drawn per cell at known, cell-wise constant probabilities (``by_cell``:
a calibration set chosen by the judge's verdict) neither rule applies: each cell keeps its
own betting interval and the cells are always read, as the rows' path with inclusion does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.bins import edge_ranks

__all__ = [
    "MIN_CELL_TRIALS",
    "VARIANCE_RATIO",
    "ProxyBounds",
    "merge_sparse_cells",
    "effective_labels",
    "mean_variance",
    "hajek_counts",
    "mover_sum",
    "cells_interval",
    "proxy_interval",
    "units_proxy_interval",
    "score_cells",
]

#: a group of proxy cells needs at least this many labels before it gets its own rate
MIN_CELL_TRIALS = 3

#: the cells' interval is used when their estimated variance is below this share of the
#: labels-only variance; 0.8 keeps the labels-only interval within 1/sqrt(0.8) = 1.12x of the
#: asymptotic optimum when the proxy is weak
VARIANCE_RATIO = 0.8


class ProxyBounds(NamedTuple):
    """Per-table results of :func:`proxy_interval` (arrays over the leading axes)."""

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    uses_proxy: np.ndarray
    effective_labels: np.ndarray
    groups: np.ndarray


def merge_sparse_cells(trials: Any, min_trials: int = MIN_CELL_TRIALS) -> np.ndarray:
    """Group index of each ordered cell after merging cells with too few labels.

    Walking the cells in order, a group closes once it holds ``min_trials`` labels; a final
    group with fewer joins the one before it (a stratum with fewer than ``min_trials`` labels
    is one group).

    Parameters
    ----------
    trials : array-like of int, shape (..., K)
        Labels per cell (last axis), any leading axes.
    min_trials : int
        Labels a group needs.

    Returns
    -------
    numpy.ndarray of int, shape (..., K)
        Group index of each cell, 0, 1, ... in cell order.

    Examples
    --------
    >>> merge_sparse_cells([4, 0, 1, 2, 5, 1]).tolist()
    [0, 1, 1, 1, 2, 2]
    """
    n = np.asarray(trials)
    groups = np.zeros(n.shape, dtype=int)
    current = np.zeros(n.shape[:-1], dtype=int)
    filled = np.zeros(n.shape[:-1], dtype=n.dtype if n.dtype.kind in "iuf" else float)
    for c in range(n.shape[-1]):
        groups[..., c] = current
        filled = filled + n[..., c]
        closed = filled >= min_trials
        current = current + closed
        filled = np.where(closed, 0, filled)
    tail = (groups == current[..., None]) & (current[..., None] > 0)
    return np.where(tail, groups - 1, groups)


def _sum_groups(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    k = groups.shape[-1]
    onehot = groups[..., :, None] == np.arange(k)
    return (np.asarray(values, dtype=float)[..., :, None] * onehot).sum(axis=-2)


def _smoothed_variance(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    rate = (s + 0.5) / (n + 1.0)
    return rate * (1.0 - rate) / np.maximum(n, 1.0)


def effective_labels(successes: Any, trials: Any, shares: Any) -> np.ndarray:
    """Labels-only variance over the cells' variance, times the labels (last axis = cells).

    Both variances use the smoothed rates ``(s + 1/2) / (n + 1)``; cells without labels
    contribute nothing (merge them first, :func:`merge_sparse_cells`).

    Examples
    --------
    >>> # a proxy that splits the rows into a 5% and a 95% cell of equal shares
    >>> round(float(effective_labels([1, 19], [20, 20], [0.5, 0.5])), 1)
    150.8
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    w = np.asarray(shares, dtype=float)
    total = n.sum(axis=-1)
    v_labels = _smoothed_variance(s.sum(axis=-1), total)
    v_cells = np.where(n > 0, w**2 * _smoothed_variance(s, n), 0.0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v_cells > 0, total * v_labels / v_cells, total)


def mean_variance(totals: Any, squares: Any, trials: Any) -> np.ndarray:
    """Smoothed variance of the mean of ``n`` values in [0, 1] from their sum and sum of squares.

    Half a value at 0 and half at 1 are added (the smoothing of :func:`effective_labels`):
    ``r = (sum + 1/2) / (n + 1)``, ``m2 = (sum of squares + 1/2) / (n + 1)``, variance
    ``(m2 - r**2) / n``; for 0/1 values it is ``r (1 - r) / n`` with the smoothed rate.

    Examples
    --------
    >>> bool(np.isclose(mean_variance(3, 3, 10), (3.5 / 11) * (7.5 / 11) / 10))
    True
    """
    t = np.asarray(totals, dtype=float)
    n = np.asarray(trials, dtype=float)
    rate = (t + 0.5) / (n + 1.0)
    second = (np.asarray(squares, dtype=float) + 0.5) / (n + 1.0)
    return np.maximum(second - rate**2, 0.0) / np.maximum(n, 1.0)


def hajek_counts(w: Any, wz: Any, w2: Any, w2z: Any, w2z2: Any) -> tuple[np.ndarray, np.ndarray]:
    r"""Hajek mean of outcomes in [0, 1] and its effective (successes, trials), per group.

    From the inverse-probability sums over a group's labelled rows (:math:`w_i = 1/\pi_i`):
    ``w`` :math:`= \sum w_i`, ``wz`` :math:`= \sum w_i z_i`, ``w2`` :math:`= \sum w_i^2`,
    ``w2z`` :math:`= \sum w_i^2 z_i`, ``w2z2`` :math:`= \sum w_i^2 z_i^2`. The mean is
    :math:`\hat r = \sum w_i z_i / \sum w_i`, its with-replacement variance
    :math:`\hat V = \sum w_i^2 (z_i - \hat r)^2 / (\sum w_i)^2`, and the effective trials
    :math:`n^* = \hat r (1 - \hat r) / \hat V` (Kish's :math:`(\sum w_i)^2 / \sum w_i^2` when
    :math:`\hat r` is 0 or 1 or :math:`\hat V = 0`), successes :math:`\hat r n^*` (Korn and
    Graubard 1998). For 0/1 outcomes ``w2z2`` equals ``w2z``. A group without labels gets (0, 0).

    Examples
    --------
    >>> s, n = hajek_counts([4.0], [2.0], [4.0], [2.0], [2.0])  # four rows of weight 1, two successes
    >>> float(s[0]), float(n[0])
    (2.0, 4.0)
    """
    w, wz, w2, w2z, w2z2 = (np.asarray(v, dtype=float) for v in (w, wz, w2, w2z, w2z2))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(w > 0, wz / w, 0.0)
        var = (w2z2 - 2.0 * r * w2z + r**2 * w2) / w**2
        kish = w**2 / w2
        n_eff = np.where((r > 0) & (r < 1) & (var > 1e-15 * r * (1 - r)), r * (1 - r) / var, kish)
    n_eff = np.where(w > 0, n_eff, 0.0)
    return r * n_eff, n_eff


def mover_sum(shares: Any, rates: Any, lower: Any, upper: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MOVER estimate and limits of ``sum_c shares_c * mean_c`` from each cell's own limits (last axis).

    The combination of :func:`cells_interval`, for cell limits of any construction (exact
    binomial, betting limits of a bounded mean).

    Examples
    --------
    >>> est, lo, hi = mover_sum([0.5, 0.5], [0.2, 0.6], [0.1, 0.4], [0.4, 0.7])
    >>> round(float(est), 3), round(float(lo), 3), round(float(hi), 3)
    (0.4, 0.288, 0.512)
    """
    w = np.asarray(shares, dtype=float)
    rate = np.asarray(rates, dtype=float)
    estimate = (w * rate).sum(axis=-1)
    lo = estimate - np.sqrt((w**2 * (rate - np.asarray(lower, dtype=float)) ** 2).sum(axis=-1))
    hi = estimate + np.sqrt((w**2 * (np.asarray(upper, dtype=float) - rate) ** 2).sum(axis=-1))
    return estimate, lo, hi


def cells_interval(
    successes: Any, trials: Any, shares: Any, level: float, method: str = "wilson"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Post-stratified estimate and MOVER interval of ``sum_c shares_c * p_c``.

    Every cell with a positive share needs labels (merge sparse cells first); cells with a
    zero share are ignored.

    Parameters
    ----------
    successes, trials : array-like, shape (..., K)
        Labelled successes and labels per cell.
    shares : array-like, shape (..., K) or (K,)
        Pool shares of the cells (summing to 1).
    level : float
        Confidence level.
    method : str
        One-proportion method of the cell limits (``bayeseval._kernels.binomial``).

    Returns
    -------
    estimate, lower, upper : numpy.ndarray

    Examples
    --------
    >>> est, lo, hi = cells_interval([1, 19], [20, 20], [0.5, 0.5], 0.95)
    >>> round(float(est), 3), round(float(lo), 3), round(float(hi), 3)
    (0.5, 0.405, 0.595)
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    w = np.broadcast_to(np.asarray(shares, dtype=float), s.shape)
    has = n > 0
    lo, hi = binomial_bounds(s, np.where(has, n, 1.0), 1.0 - level, method)
    rate = np.where(has, s / np.where(has, n, 1.0), 0.0)
    lo, hi = np.where(has, lo, 0.0), np.where(has, hi, 1.0)
    estimate = (w * rate).sum(axis=-1)
    lower = estimate - np.sqrt((w**2 * (rate - lo) ** 2).sum(axis=-1))
    upper = estimate + np.sqrt((w**2 * (hi - rate) ** 2).sum(axis=-1))
    return estimate, np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)


def proxy_interval(
    successes: Any,
    trials: Any,
    shares: Any,
    level: float = 0.95,
    method: str = "wilson",
    *,
    min_trials: int = MIN_CELL_TRIALS,
    variance_ratio: float = VARIANCE_RATIO,
) -> ProxyBounds:
    """A stratum's estimate and interval from labels per proxy cell and the cells' pool shares.

    Sparse cells are merged (:func:`merge_sparse_cells`); the merged cells' MOVER interval
    (:func:`cells_interval`) is used when their estimated variance is below
    ``variance_ratio`` times the labels-only variance, the labels-only interval of ``s / n``
    otherwise. A stratum without labels gets ``[0, 1]`` and a NaN estimate.

    Parameters
    ----------
    successes, trials : array-like of int, shape (..., K)
        Labelled successes and labels per ordered cell; leading axes are independent tables.
    shares : array-like, shape (..., K) or (K,)
        Pool shares of the cells (summing to 1 over the last axis).
    level : float
        Confidence level.
    method : str
        One-proportion method (canonical name) of the cell and labels-only limits.
    min_trials, variance_ratio : optional
        The two rules' constants (see the module docstring; validated at the defaults).

    Returns
    -------
    ProxyBounds
        ``estimate``, ``lower``, ``upper``, ``uses_proxy`` (bool), ``effective_labels``
        (of the merged cells) and ``groups`` (each cell's merged group).

    Examples
    --------
    >>> b = proxy_interval([1, 19], [20, 20], [0.5, 0.5])
    >>> bool(b.uses_proxy), round(float(b.lower), 3), round(float(b.upper), 3)
    (True, 0.405, 0.595)
    >>> b = proxy_interval([5, 5], [10, 10], [0.5, 0.5])  # a proxy that tells nothing
    >>> bool(b.uses_proxy), round(float(b.lower), 3), round(float(b.upper), 3)
    (False, 0.299, 0.701)
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    w = np.broadcast_to(np.asarray(shares, dtype=float), s.shape)
    groups = merge_sparse_cells(n, min_trials)
    gs, gn, gw = _sum_groups(s, groups), _sum_groups(n, groups), _sum_groups(w, groups)
    estimate, lower, upper = cells_interval(gs, gn, gw, level, method)
    total_s, total_n = s.sum(axis=-1), n.sum(axis=-1)
    has = total_n > 0
    plain_lo, plain_hi = binomial_bounds(total_s, np.where(has, total_n, 1.0), 1.0 - level, method)
    eff = effective_labels(gs, gn, gw)
    uses = has & (eff * variance_ratio > total_n) & (groups.max(axis=-1) > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        plain = np.where(has, total_s / total_n, np.nan)
    return ProxyBounds(
        estimate=np.where(uses, estimate, plain),
        lower=np.where(uses, lower, np.where(has, plain_lo, 0.0)),
        upper=np.where(uses, upper, np.where(has, plain_hi, 1.0)),
        uses_proxy=uses,
        effective_labels=np.where(has, eff, 0.0),
        groups=groups,
    )


def _unit_sums(
    key: np.ndarray, a: np.ndarray, b: np.ndarray, k: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per key: the ratio ``sum k a / sum k b``, the units and the smoothed variance of the ratio."""
    n = np.bincount(key, weights=k, minlength=size)
    total_a = np.bincount(key, weights=k * a, minlength=size)
    total_b = np.bincount(key, weights=k * b, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(total_b > 0, total_a / total_b, 0.0)
        mean_b = np.where(n > 0, total_b / n, 1.0)
    u = ratio[key] + (a - ratio[key] * b) / mean_b[key]
    ones = np.bincount(key, weights=k * u, minlength=size)
    squares = np.bincount(key, weights=k * u**2, minlength=size)
    return ratio, n, mean_variance(ones, squares, n)


def units_proxy_interval(
    cells: Any,
    hist: Any,
    n_strata: int,
    level: float = 0.95,
    *,
    min_trials: int = MIN_CELL_TRIALS,
    variance_ratio: float = VARIANCE_RATIO,
    by_cell: bool = False,
) -> ProxyBounds:
    r"""Every stratum's estimate and interval from labelled units per proxy cell (module docstring, "Units").

    With ``by_cell`` (labelled units drawn at random within each proxy cell, with a probability
    that may differ between cells: a judge calibration set chosen by verdict) the labelled units
    of a cell are a random sample of that cell only, not of the stratum: each cell keeps its own
    betting interval (no merging of sparse cells, which would pool samples drawn at different
    rates), the cells are always read (no switch to labels only), and a cell with pool units but
    no labelled unit enters MOVER with limits ``[0, 1]`` and leaves the estimate NaN (the row
    path's rule for a cell without labels).

    Parameters
    ----------
    cells : pandas.DataFrame
        One row per (stratum, cell) of the pool: ``stratum`` (code ``0 .. n_strata - 1``),
        ``cell`` (code ``0, 1, ...`` in proxy order within the stratum) and ``pool_trials``
        (the cell's trials among all units, labelled or not: its row share).
    hist : pandas.DataFrame
        The labelled units: ``stratum``, ``cell``, ``unit_successes``, ``unit_trials`` and
        ``units`` (how many labelled units have that pair), the ``Counts.units`` layout.
    n_strata : int
        Strata.
    level : float
        Confidence level.
    min_trials, variance_ratio : optional
        The two rules' constants, counted in labelled units (unused with ``by_cell``).
    by_cell : bool
        Labelled units sampled within each cell (see above).

    Returns
    -------
    ProxyBounds
        Per stratum; ``effective_labels`` is what the interval in use is worth in independent
        labelled rows (smoothed rate times one minus it over the estimate's variance), and
        ``groups`` (shape ``(n_strata, K)``) each cell's merged group. A stratum without
        labelled units gets ``(nan, 0, 1)``.

    Examples
    --------
    >>> import pandas as pd
    >>> cells = pd.DataFrame({"stratum": 0, "cell": [0, 1], "pool_trials": [50, 150]})
    >>> hist = pd.DataFrame({"stratum": 0, "cell": [0, 0, 1, 1], "unit_successes": [0.0, 1.0, 5.0, 4.0],
    ...                      "unit_trials": 5, "units": [4, 1, 8, 2]})
    >>> b = units_proxy_interval(cells, hist, 1)
    >>> bool(b.uses_proxy[0]), round(float(b.estimate[0]), 3)
    (True, 0.73)
    >>> bool(0.45 < b.lower[0] < 0.73 < b.upper[0] < 1.0)
    True
    """
    import pandas as pd

    from bayeseval._kernels.bounded_mean import units_ci  # deferred: the betting kernel is only for units

    s_cell = np.asarray(cells["stratum"], dtype=np.int64)
    c_cell = np.asarray(cells["cell"], dtype=np.int64)
    width = int(c_cell.max()) + 1 if len(c_cell) else 1
    pool = np.zeros((n_strata, width))
    np.add.at(pool, (s_cell, c_cell), np.asarray(cells["pool_trials"], dtype=float))
    shares = pool / np.maximum(pool.sum(axis=1, keepdims=True), 1.0)
    hs = np.asarray(hist["stratum"], dtype=np.int64)
    hc = np.asarray(hist["cell"], dtype=np.int64)
    a = np.asarray(hist["unit_successes"], dtype=float)
    b = np.asarray(hist["unit_trials"], dtype=float)
    k = np.asarray(hist["units"], dtype=float)
    labelled = np.zeros((n_strata, width))
    np.add.at(labelled, (hs, hc), k)
    if by_cell:
        groups = np.broadcast_to(np.arange(width), (n_strata, width)).copy()
    else:
        groups = merge_sparse_cells(labelled, min_trials)
    gid = hs * width + groups[hs, hc]
    n_groups = n_strata * width
    g_rate, g_units, g_var = _unit_sums(gid, a, b, k, n_groups)
    g_share = _sum_groups(shares, groups).ravel()
    v_cells = np.where(g_units > 0, g_share**2 * g_var, 0.0).reshape(n_strata, width).sum(axis=1)
    s_rate, s_units, v_labels = _unit_sums(hs, a, b, k, n_strata)
    has = s_units > 0
    if by_cell:
        uses = has.copy()
        blind = ((shares > 0) & (labelled == 0)).any(axis=1)  # a cell nobody labelled: its rate is unknown
    else:
        uses = has & (groups.max(axis=1) > 0) & (v_cells < variance_ratio * v_labels)
        blind = np.zeros(n_strata, dtype=bool)
    estimate = np.full(n_strata, np.nan)
    lower, upper = np.zeros(n_strata), np.ones(n_strata)
    frame = pd.DataFrame({"unit_successes": a, "unit_trials": b, "units": k})
    if uses.any():
        sel = uses[hs]
        ci = units_ci(frame[sel].assign(key=gid[sel]), "key", level)
        rate, lo, hi = np.zeros(n_groups), np.zeros(n_groups), np.ones(n_groups)
        idx = ci.index.to_numpy(dtype=np.int64)
        rate[idx], lo[idx], hi[idx] = (ci[c].to_numpy(dtype=float) for c in ("estimate", "lower", "upper"))
        share = np.where(np.repeat(uses, width), g_share, 0.0)
        est, m_lo, m_hi = mover_sum(*(v.reshape(n_strata, width) for v in (share, rate, lo, hi)))
        estimate, lower, upper = (
            np.where(uses, m, base) for m, base in ((est, estimate), (m_lo, lower), (m_hi, upper))
        )
        estimate = np.where(blind, np.nan, estimate)
    plain = has & ~uses
    if plain.any():
        sel = plain[hs]
        ci = units_ci(frame[sel].assign(key=hs[sel]), "key", level)
        idx = ci.index.to_numpy(dtype=np.int64)
        estimate[idx], lower[idx], upper[idx] = (ci[c].to_numpy(dtype=float) for c in ("estimate", "lower", "upper"))
    total_a = np.bincount(hs, weights=k * a, minlength=n_strata)
    total_b = np.bincount(hs, weights=k * b, minlength=n_strata)
    smooth = (total_a + 0.5) / (total_b + 1.0)
    used_var = np.where(uses, v_cells, v_labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        effective = np.where(has & (used_var > 0), smooth * (1.0 - smooth) / used_var, 0.0)
    return ProxyBounds(
        estimate=estimate,
        lower=np.clip(lower, 0.0, 1.0),
        upper=np.clip(upper, 0.0, 1.0),
        uses_proxy=uses,
        effective_labels=effective,
        groups=groups,
    )


def score_cells(scores: Any, n_cells: int) -> np.ndarray:
    """Cell index of each score: ``n_cells`` equal-count bins with edges at the pool's quantiles.

    The edges are the order statistics of :func:`edge_ranks`; a score's cell counts the
    distinct edges strictly below it. Tied edges collapse bins, so fewer cells may come back;
    indices are 0, 1, ... in score order.

    Examples
    --------
    >>> score_cells([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], 5).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    """
    x = np.asarray(scores, dtype=float)
    if x.size == 0:
        return np.zeros(0, dtype=int)
    edges = np.unique(np.sort(x, axis=None)[edge_ranks(x.size, n_cells)])
    cells = np.searchsorted(edges, x, side="left")
    return np.unique(cells, return_inverse=True)[1].reshape(x.shape)
