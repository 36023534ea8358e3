"""Leave-one-out priors: for each stratum, the hierarchical posterior predictive of a new
stratum's rate given the OTHER strata only, as a mixture of Beta distributions.

The model is Beta-binomial with BDA3's hyperprior ``p(alpha, beta) ~ (alpha + beta)^(-5/2)``,
evaluated on a hyper-grid whose range comes from the other strata's rates, so a stratum's own
count never enters its prior (:func:`loo_beta_mixture`, :func:`loo_mixture_groups`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from bayeseval._api.validation import check_counts
from bayeseval._kernels.rows import unique_rows

__all__ = ["loo_beta_mixture", "loo_mixture_groups"]

_MARGIN = 0.75  # logit units added each side of the other strata's range of rates


def _hyper_grid(
    mu_lo: float, mu_hi: float, n_mu: int, n_kappa: int, kappa_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grid over (logit mean, log concentration) and the log hyperprior weight per point.

    Hyperprior: BDA3 (5.9), ``p(alpha, beta) ~ (alpha + beta)^(-5/2)``, i.e.
    ``p(mu, kappa) ~ kappa^(-3/2)`` (uniform mean), truncated to the grid; in the grid
    coordinates ``(logit mu, log kappa)`` the Jacobian adds ``mu (1 - mu) kappa``.

    The mean's nodes are logit-spaced over ``[mu_lo, mu_hi]``, with the node nearest to
    each end of the other strata's range of rates (``_MARGIN`` inside the grid's ends) moved
    onto it: when the other strata agree closely (their rates' spread far below the
    spacing), the grid holds their common rate, so a large concentration is not penalised
    for a mean one spacing away, and the predictive narrows as their trials grow.
    """
    eta = np.linspace(special.logit(mu_lo), special.logit(mu_hi), n_mu)
    if n_mu > 2:
        for end in (special.logit(mu_lo) + _MARGIN, special.logit(mu_hi) - _MARGIN):
            eta[np.argmin(np.abs(eta - end))] = end
    log_kappa = np.linspace(np.log(kappa_range[0]), np.log(kappa_range[1]), n_kappa)
    eta, log_kappa = (v.ravel() for v in np.meshgrid(eta, log_kappa, indexing="ij"))
    mu, kappa = special.expit(eta), np.exp(log_kappa)
    log_prior = np.log(mu) + np.log1p(-mu) - 0.5 * log_kappa
    return mu * kappa, (1.0 - mu) * kappa, log_prior


def _sum_lgamma_ratio(values: np.ndarray, mult: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``sum_j mult_j [gammaln(x + values_j) - gammaln(x)]`` per ``x``, once per distinct value."""
    vals, inv = np.unique(values, return_inverse=True)
    w = np.bincount(inv.ravel(), weights=mult, minlength=vals.size)
    return special.gammaln(x[None, :] + vals[:, None]).T @ w - w.sum() * special.gammaln(x)


#: a log weight this far below its row's largest is exactly 0 after ``exp`` (``exp(-746) == 0``)
_UNDERFLOW_GAP = 800.0


#: distinct pairs' successes and trials (floats), each stratum's pair, and the log posterior
_Totals = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: the distinct pairs and summed log likelihoods of the last few (counts, grid) pairs: the
#: conflict check and the adaptive intervals of the same counts share one grid
_TOTALS: dict[tuple[tuple[str, tuple[int, ...], bytes], ...], _Totals] = {}
_TOTALS_SIZE = 8


def _pair_totals(s: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, log_prior: np.ndarray) -> _Totals:
    """Distinct ``(s, n)`` pairs (as floats), each stratum's pair and the log posterior of
    all strata on the grid (:func:`_loo_weights`), cached for the last few inputs."""
    s, n = np.asarray(s), np.asarray(n)
    key = tuple((v.dtype.str, v.shape, v.tobytes()) for v in (s, n, a, b, log_prior))
    hit = _TOTALS.pop(key, None)
    if hit is None:
        # once per distinct (s, n) pair (strata with the same counts have the same weights)
        pairs, inv, mult = unique_rows(s, n)
        ps, pn = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
        m = mult.astype(float)
        # the log likelihood of all strata, summed once per distinct s, n - s and n
        total = (
            _sum_lgamma_ratio(ps, m, a) + _sum_lgamma_ratio(pn - ps, m, b) - _sum_lgamma_ratio(pn, m, a + b) + log_prior
        )
        hit = (ps, pn, inv.ravel(), total)
        for arr in hit:
            arr.setflags(write=False)
    _TOTALS[key] = hit  # most recent last
    while len(_TOTALS) > _TOTALS_SIZE:
        _TOTALS.pop(next(iter(_TOTALS)))
    return hit


def _loo_weights(
    s: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, log_prior: np.ndarray, rows: np.ndarray | None = None
) -> np.ndarray:
    """Leave-one-out weights (strata ``rows``, default all) on one grid, rows summing to 1.

    ``exp`` of the normalised log weights, computed only where they can be non-zero: by
    Jensen's inequality ``log E[theta^s (1 - theta)^f] >= s E[log theta] + f E[log(1 - theta)]``
    under ``Beta(a, b)``, so ``total - s (psi(a) - psi(a + b)) - f (psi(b) - psi(a + b))``
    bounds a stratum's log weight from above, and grid points whose bound lies more than
    ``_UNDERFLOW_GAP`` below a log weight of the row get weight exactly 0 (as ``exp`` of
    their log weight would). The other points, the row maxima and sums are the same
    floating-point operations as on the full grid.
    """
    ps, pn, inv, total = _pair_totals(s, n, a, b, log_prior)
    pair = inv if rows is None else inv[rows]
    back: np.ndarray | None
    need, back = np.unique(pair, return_inverse=True)
    if need.size == pair.size:  # distinct pairs: computed in the order of the rows
        need, back = pair, None
    rs, rf = ps[need], (pn - ps)[need]
    lb_ab = special.betaln(a, b)
    r, g = _live_points(rs, rf, a, b, total, lb_ab)
    loglik = special.betaln(rs[r] + a[g], rf[r] + b[g])
    loglik -= lb_ab[g]
    logw = total[g] - loglik
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])  # every row keeps a point
    top = np.maximum.reduceat(logw, starts)
    out = np.zeros((need.size, a.size))
    out[r, g] = np.exp(logw - top[r])
    log_sum = np.log(out.sum(axis=1))
    out[r, g] = np.exp(logw - (top + log_sum)[r])
    return out if back is None else out[back.ravel()]


def _live_points(
    rs: np.ndarray, rf: np.ndarray, a: np.ndarray, b: np.ndarray, total: np.ndarray, lb_ab: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(row, grid point) pairs, row-major, whose leave-one-out weight may be non-zero.

    A row's log weight at the grid point of the largest ``total`` is exact (and at most the
    row's largest); a point is live when its Jensen bound (see :func:`_loo_weights`) is
    within ``_UNDERFLOW_GAP`` of it. Grid points whose bound is below that for every row
    (taking the largest counts) are dropped before the per-row bounds.
    """
    dig = special.digamma(a + b)
    da, db = special.digamma(a) - dig, special.digamma(b) - dig  # E[log theta], E[log(1 - theta)]
    top = int(np.argmax(total))
    floor = total[top] - (special.betaln(rs + a[top], rf + b[top]) - lb_ab[top]) - _UNDERFLOW_GAP
    cols = np.union1d(np.flatnonzero(total - rs.max() * da - rf.max() * db >= floor.min()), [top])
    bound = total[cols][None, :] - rs[:, None] * da[cols][None, :]
    bound -= rf[:, None] * db[cols][None, :]
    live = bound >= floor[:, None]
    live[:, np.searchsorted(cols, top)] = True
    r, j = np.nonzero(live)
    return r, cols[j]


def loo_beta_mixture(
    successes: Any,
    trials: Any,
    *,
    grid_size: tuple[int, int] = (60, 20),
    kappa_range: tuple[float, float] = (0.5, 1e6),
    rows: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out prior of each stratum's rate: a Beta mixture from the other strata.

    For stratum ``i`` this is the exact posterior predictive distribution of a new
    stratum's rate under the Beta-binomial hierarchical model fitted to the other
    strata only, ``p(theta | y_-i) = sum_g w_ig Beta(theta; a_g, b_g)``, evaluated on a
    grid over ``(logit mean, log concentration)`` with BDA3's hyperprior
    ``p(alpha, beta) ~ (alpha + beta)^(-5/2)`` truncated to the grid. The weights use
    ``p(phi | y_-i) ~ p(phi | y) / p(y_i | phi)``, so one likelihood matrix serves all
    strata that share a grid (cost: docs/validation.md, section 12d). The grid of the mean is
    logit-spaced over the range of the *other* strata's rates (widened), with nodes at
    that range's ends (other strata that agree closely keep their common rate on the grid),
    so stratum ``i``'s prior does not depend on its own count at all; this is what keeps
    the adaptive interval's coverage guarantee exact for every stratum.

    Why this and not a plug-in fit of the others: with 10-20 strata the marginal
    likelihood of the concentration is flat or maximal at infinity, and a plug-in Beta
    would ignore that uncertainty, making the predictive too narrow (a conflict check
    would then over-flag). The FAB interval's coverage does not depend on this choice.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts per stratum; strata with zero trials carry no information.
    grid_size : (int, int)
        Points along the mean and along the concentration.
    kappa_range : (float, float)
        Range of the concentration ``alpha + beta``.
    rows : array_like of bool, shape (S,), optional
        Return the mixtures of these strata only (each still leaves out only itself and
        uses all the other strata); default all. The arrays then have one row per
        selected stratum, equal to those rows of the full result.

    Returns
    -------
    weights, a, b : numpy.ndarray, shape (S, G)
        Mixture weights (rows sum to 1) and Beta parameters per stratum.

    Examples
    --------
    >>> w, a, b = loo_beta_mixture([3, 4, 5, 4, 6, 3, 30], [50] * 7)
    >>> means = (w * a / (a + b)).sum(axis=1)  # prior mean of each stratum's rate
    >>> bool(means[-1] < 0.1 < 0.2 < means[0])  # the outlier's prior comes from the others
    True
    """
    size, groups = loo_mixture_groups(successes, trials, grid_size=grid_size, kappa_range=kappa_range, rows=rows)
    weights = np.empty((size, int(grid_size[0]) * int(grid_size[1])))
    a, b = np.empty_like(weights), np.empty_like(weights)
    for sel, w, a_g, b_g in groups:
        weights[sel] = w
        a[sel], b[sel] = a_g, b_g
    return weights, a, b


def loo_mixture_groups(
    successes: Any,
    trials: Any,
    *,
    grid_size: tuple[int, int] = (60, 20),
    kappa_range: tuple[float, float] = (0.5, 1e6),
    rows: Any = None,
) -> tuple[int, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]:
    """The leave-one-out mixtures of :func:`loo_beta_mixture`, one group per hyper-grid.

    At most four distinct grids occur (the range of the mean comes from the other strata);
    the strata of a group share the grid's Beta parameters, which are returned once per
    group instead of once per stratum.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts per stratum.
    grid_size, kappa_range, rows
        As in :func:`loo_beta_mixture`.

    Returns
    -------
    size : int
        Number of selected strata (rows of :func:`loo_beta_mixture`'s arrays).
    groups : list of (positions, weights, a, b)
        Per grid: the positions of its strata among the selected ones (int array, shape
        (R,)), their mixture weights (shape (R, G)) and the grid's Beta parameters
        (shape (G,)).

    Examples
    --------
    >>> size, groups = loo_mixture_groups([3, 4, 5, 4, 6, 3, 30], [50] * 7)
    >>> w, a, b = loo_beta_mixture([3, 4, 5, 4, 6, 3, 30], [50] * 7)
    >>> size, all(np.array_equal(w[pos], wg) and (a[pos] == ag).all() for pos, wg, ag, _ in groups)
    (7, True)
    """
    s, n = check_counts(successes, trials)
    s, n = s.ravel(), n.ravel()
    n_mu, n_kappa = (int(v) for v in grid_size)
    lo, hi = _others_range(s, n)
    keep = np.ones(s.size, bool) if rows is None else np.asarray(rows, bool).ravel()
    if keep.shape != s.shape:
        raise ValueError(f"rows must be a boolean mask of length {s.size}, got shape {keep.shape}")
    lo, hi = lo[keep], hi[keep]
    where = np.flatnonzero(keep)
    groups = []
    for lo_g, hi_g in sorted(set(zip(lo.tolist(), hi.tolist(), strict=True))):
        sel = np.flatnonzero((lo == lo_g) & (hi == hi_g))  # of the kept rows
        a_g, b_g, log_prior = _hyper_grid(lo_g, hi_g, n_mu, n_kappa, kappa_range)
        groups.append((sel, _loo_weights(s, n, a_g, b_g, log_prior, where[sel]), a_g, b_g))
    return where.size, groups


def _extreme_of_others(rate: np.ndarray, used: np.ndarray, sign: float) -> np.ndarray:
    """Per stratum, the min (sign 1) or max (sign -1) rate of the OTHER used strata."""
    key = np.where(used, sign * rate, np.inf)
    order = np.argsort(key, kind="stable")
    out = np.full(rate.size, key[order[0]])
    out[order[0]] = key[order[1]] if rate.size > 1 else np.inf
    return sign * out


def _others_range(s: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Range of the mean's grid for each stratum, from the OTHER strata's rates only.

    On the logit scale, from the smallest to the largest rate ``(y + 0.5) / (n + 1)``
    of the other strata with trials, widened by ``_MARGIN`` each side, so a stratum's
    own count never moves its grid; at most four distinct ranges occur (the strata
    holding the extremes differ).
    """
    used = n > 0
    rate = (s + 0.5) / (n + 1.0)
    lowest, highest = _extreme_of_others(rate, used, 1.0), _extreme_of_others(rate, used, -1.0)
    lo = special.expit(np.where(np.isfinite(lowest), special.logit(lowest) - _MARGIN, -4.6))
    hi = special.expit(np.where(np.isfinite(highest), special.logit(highest) + _MARGIN, 4.6))
    return lo, hi
