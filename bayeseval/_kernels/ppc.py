r"""Predictive checks of stratum counts: mid-p values and leave-one-out mixed predictives.

A stratum's count ``s_k`` out of ``n_k`` is judged against a predictive distribution of the
count: either replicates (Monte Carlo, :func:`mid_p`) or the exact mixture of Beta-binomial
distributions that a hierarchical Beta-binomial posterior implies for a *fresh* rate from
the population (the mixed replicate of Marshall & Spiegelhalter, 2007):

.. math::

    p(s^{rep}_k) = \sum_g w_{gk} \, \mathrm{BetaBin}(s^{rep}_k \mid n_k, a_{gk}, b_{gk}),

where the nodes ``g`` are hyperparameter grid points or posterior draws and ``a, b`` the
population's Beta parameters there (the robust population adds a ``Beta(1, 1)`` component).
Leaving stratum ``k`` out reweights the nodes by its own marginal likelihood,
``w_gk ∝ w_g / p(s_k | g)`` (:func:`loo_weights`), so an outlier cannot widen the population it
is judged against. The reweighting is done in logs, from the log masses of the nodes: with
large counts the full posterior's mass underflows to 0 at most grid points, while
``1 / p(s_k | g)`` there can exceed ``e^2000``. Where the reweighted nodes do not describe
the leave-one-out posterior (its mass reaches an open edge of the grid, or sits on a few
points), the nodes' ``refit`` integrates it afresh (:func:`loo_mixed_check`).

p-values are two-sided mid-p values for discrete counts, ``p = 2 min(P-, 1 - P-)`` with
``P- = P(rep < s) + P(rep = s) / 2``; a stratum is flagged when ``p < (1 - level) / K``
(Bonferroni over the ``K`` strata with trials, :func:`bonferroni_flags`).

Reference: Marshall, E. C. & Spiegelhalter, D. J. (2007). Identifying outliers in Bayesian
hierarchical models: a simulation-based approach. Bayesian Analysis 2, 409-444.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bayeseval._kernels.betabinom import beta_mixture_log_tails, kept_components, mixture_pmfs

__all__ = [
    "Nodes",
    "mid_p",
    "two_sided",
    "loo_weights",
    "betabinom_mixture_pmf",
    "mixture_mid_p",
    "bonferroni_flags",
    "loo_mixed_check",
]

_MAX_CELLS = 4_000_000  # components x support points above which a pmf is sampled instead
_DRAWS = 20_000  # replicates of a predictive too large to tabulate

#: one stratum's predictive Beta mixture: component weights, a and b
_BetaComponents = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class Nodes:
    """Hyperparameter nodes of a hierarchical Beta-binomial posterior, per stratum column.

    Attributes
    ----------
    weights : numpy.ndarray, shape (G,)
        Posterior weight of each node (grid mass, or ``1 / S`` for S draws).
    a, b : numpy.ndarray, shape (G, K)
        Population Beta parameters of each stratum at each node (``mu_k kappa``,
        ``(1 - mu_k) kappa``).
    loglik : numpy.ndarray, shape (G, K)
        Log marginal likelihood of each stratum's own count at each node (up to a constant
        per stratum).
    outlier_prob : float
        Robust population: weight of the ``Beta(1, 1)`` component (0 for the plain model).
    log_weights : numpy.ndarray, shape (G,), optional
        Log of ``weights`` (up to a constant), finite where ``weights`` underflows to 0; the
        leave-one-out reweighting uses it when given.
    open_edge : numpy.ndarray of bool, shape (G,), optional
        Grid nodes on an edge of the grid that is not a bound of the parameters.
    refit : callable, optional
        ``refit(k) -> (weights, a, b)``: the nodes of the posterior fitted without column
        ``k``'s stratum and the population Beta parameters of that stratum there, for the
        columns whose reweighted nodes do not resolve their leave-one-out posterior (None
        where it cannot be had: the reweighted nodes are used).
    """

    weights: np.ndarray
    a: np.ndarray
    b: np.ndarray
    loglik: np.ndarray
    outlier_prob: float = 0.0
    log_weights: np.ndarray | None = None
    open_edge: np.ndarray | None = None
    refit: Callable[[int], _BetaComponents | None] | None = None


def two_sided(lower: np.ndarray) -> np.ndarray:
    """Two-sided p-value ``min(1, 2 min(P-, 1 - P-))`` from the lower mid-p ``P-``."""
    lower = np.asarray(lower, dtype=float)
    return np.minimum(1.0, 2.0 * np.minimum(lower, 1.0 - lower))


def mid_p(rep: np.ndarray, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower mid-p ``P(rep < obs) + 0.5 P(rep == obs)`` and the two-sided p-value.

    ``rep`` has replicates along axis 0; ``obs`` broadcasts against ``rep[0]``.

    Examples
    --------
    >>> lower, p = mid_p(np.arange(10)[:, None], np.array([3]))
    >>> float(lower[0]), float(p[0])
    (0.35, 0.7)
    """
    below = np.mean(rep < obs, axis=0)
    equal = np.mean(rep == obs, axis=0)
    lower = below + 0.5 * equal
    return lower, two_sided(lower)


def loo_weights(weights: np.ndarray, loglik: np.ndarray, log_weights: np.ndarray | None = None) -> np.ndarray:
    """Node weights with each column's own likelihood left out, shape (G, K), columns sum 1.

    ``w_gk ∝ w_g / p(s_k | g)``, in logs: from ``log_weights`` when given (a node whose
    mass underflowed to 0 in ``weights`` keeps its true, finite log mass, which dividing by
    a likelihood of ``e^-2000`` can make the largest), else from ``log(weights)`` (a node
    of weight 0 stays at 0).

    Examples
    --------
    >>> w = loo_weights(np.array([0.5, 0.5]), np.log([[0.2], [0.8]]))
    >>> w.ravel().round(3).tolist()
    [0.8, 0.2]
    >>> # masses e^-800 and 1 (the first is 0 as a double), likelihoods e^-1000 and 1
    >>> w = loo_weights(np.array([0.0, 1.0]), np.array([[-1000.0], [0.0]]), np.array([-800.0, 0.0]))
    >>> w.ravel().round(6).tolist()
    [1.0, 0.0]
    """
    if log_weights is None:
        with np.errstate(divide="ignore"):
            log_weights = np.log(np.asarray(weights, dtype=float))
    log_weights = np.asarray(log_weights, dtype=float)[:, None]
    logw = np.where(np.isfinite(log_weights), log_weights - loglik, -np.inf)
    logw = logw - logw.max(axis=0, keepdims=True)
    w = np.exp(logw)
    return w / w.sum(axis=0, keepdims=True)


def _components(w: np.ndarray, a: np.ndarray, b: np.ndarray, eps: float) -> _BetaComponents:
    """Population components of one column: weights, a, b (with the Beta(1, 1) component)."""
    if eps <= 0:
        return w, a, b
    return np.r_[(1.0 - eps) * w, eps], np.r_[a, 1.0], np.r_[b, 1.0]


def betabinom_mixture_pmf(n: int, w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """pmf on ``0..n`` of ``sum_g w_g BetaBin(n, a_g, b_g)`` (exact; the components' pmfs by
    the ratio recursion of :func:`bayeseval._kernels.betabinom.mixture_pmfs`).

    Examples
    --------
    >>> betabinom_mixture_pmf(3, np.array([1.0]), np.array([1.0]), np.array([1.0])).round(12).tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    keep = np.asarray(w) > 0
    w, a, b = (np.asarray(v, dtype=float)[keep][None, :] for v in (w, a, b))
    return mixture_pmfs(int(n), w, a, b, np.ones(w.shape, dtype=bool))[0]


def _sample_counts(
    n: int, w: np.ndarray, a: np.ndarray, b: np.ndarray, size: int, rng: np.random.Generator
) -> np.ndarray:
    g = rng.choice(w.size, size=size, p=w / w.sum())
    return rng.binomial(n, rng.beta(a[g], b[g]))


def mixture_mid_p(
    s: int,
    n: int,
    w: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    *,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    draws: int = _DRAWS,
) -> tuple[float, float, int, int]:
    """Lower mid-p, two-sided p and the central ``level`` predictive interval of one count.

    The mid-p values are exact at any number of trials: both tails are summed in logs
    (:func:`bayeseval._kernels.betabinom.beta_mixture_log_tails`, the components holding all
    but 1e-6 of the weight), so the two-sided p-value keeps falling with the evidence
    instead of stopping at about 1e-16 (``1 - P-``) or at the ``1 / draws`` of a
    simulation. The interval is read from the Beta-binomial mixture pmf of the same
    components; when ``components x (n + 1)`` exceeds a few million cells, from ``draws``
    seeded replicates instead.

    Returns
    -------
    (lower, p, pred_lower, pred_upper)

    Examples
    --------
    >>> lower, p, lo, hi = mixture_mid_p(0, 3, np.array([1.0]), np.array([1.0]), np.array([1.0]))
    >>> round(lower, 12), round(p, 12), lo, hi
    (0.125, 0.25, 0, 3)
    """
    w, a, b = _kept(w, a, b)
    lower, p = _exact_mid_p(s, n, w, a, b)
    if w.size * (n + 1) <= _MAX_CELLS:
        return (lower, p, *_tabulated_intervals(n, [(w, a, b)], level)[0])
    return (lower, p, *_sampled_interval(n, w, a, b, level, rng, draws))


def _kept(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> _BetaComponents:
    """The components holding all but 1e-6 of the weight (:func:`kept_components`)."""
    kw, ka, kb, live = kept_components(*(np.asarray(v, float).reshape(1, -1) for v in (w, a, b)))
    return kw[live], ka[live], kb[live]


def _tabulated_intervals(n: int, mixtures: list[_BetaComponents], level: float) -> list[tuple[int, int]]:
    """Central ``level`` intervals of a count of ``n`` trials under each Beta-binomial mixture
    (components with positive weight), from the pmfs on ``0..n``.

    The pmfs are computed together (:func:`bayeseval._kernels.betabinom.mixture_pmfs`): the
    components that the mixtures share (strata of one grid with the same trials) once, when
    their union fits in twice the tabulation budget; else one mixture at a time.
    """
    half = (1.0 - level) / 2.0
    pairs = np.unique(np.concatenate([np.column_stack([a, b]) for _, a, b in mixtures]), axis=0)
    if len(mixtures) > 1 and pairs.shape[0] * (n + 1) > 2 * _MAX_CELLS:
        return [_tabulated_intervals(n, [mix], level)[0] for mix in mixtures]
    size = max(w.size for w, _, _ in mixtures)
    kw, ka, kb = np.zeros((len(mixtures), size)), np.ones((len(mixtures), size)), np.ones((len(mixtures), size))
    live = np.zeros((len(mixtures), size), dtype=bool)
    for r, (w, a, b) in enumerate(mixtures):
        kw[r, : w.size], ka[r, : w.size], kb[r, : w.size], live[r, : w.size] = w, a, b, w > 0
    cdf = np.cumsum(mixture_pmfs(int(n), kw, ka, kb, live), axis=1)
    out = []
    for row in cdf:
        lo = int(np.searchsorted(row, half * (1 - 1e-12)))
        hi = min(int(np.searchsorted(row, (1.0 - half) * (1 - 1e-12))), n)
        out.append((lo, hi))
    return out


def _sampled_interval(
    n: int, w: np.ndarray, a: np.ndarray, b: np.ndarray, level: float, rng: np.random.Generator | None, draws: int
) -> tuple[int, int]:
    """Central ``level`` interval of the count from ``draws`` seeded replicates."""
    half = (1.0 - level) / 2.0
    rep = _sample_counts(n, w, a, b, draws, rng if rng is not None else np.random.default_rng(0))
    return int(np.quantile(rep, half, method="lower")), int(np.quantile(rep, 1.0 - half, method="higher"))


def _exact_mid_p(s: int, n: int, w: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
    """Lower mid-p ``P(Y < s) + P(Y = s) / 2`` and the two-sided ``min(1, 2 min(P-, P+))``
    (``P+`` the upper mid-p), from the log tails of the mixture (components with positive
    weight)."""
    below, at, above = beta_mixture_log_tails([s], [n], w[None, :], a[None, :], b[None, :])
    half_at = at[0] - np.log(2.0)
    lower, upper = np.logaddexp(below[0], half_at), np.logaddexp(above[0], half_at)
    return float(np.exp(min(lower, 0.0))), float(np.exp(min(np.log(2.0) + min(lower, upper), 0.0)))


def bonferroni_flags(p: np.ndarray, has: np.ndarray, level: float) -> np.ndarray:
    """Strata with trials whose p-value is below ``(1 - level) / K`` (K strata with trials).

    Examples
    --------
    >>> bonferroni_flags(np.array([0.001, 0.03, 0.5]), np.array([True, True, False]), 0.95).tolist()
    [True, False, False]
    """
    has = np.asarray(has, dtype=bool)
    return has & (np.asarray(p, dtype=float) < (1.0 - level) / max(int(has.sum()), 1))


def _screen(s: np.ndarray, n: np.ndarray, wl: np.ndarray, a: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """Columns more than 2 predictive sd from the predictive mean (candidates for a flag)."""
    tot = a + b
    m1 = a / tot
    m2 = m1 * (a + 1.0) / (tot + 1.0)
    e1 = (1 - eps) * np.einsum("gk,gk->k", wl, m1) + eps / 2.0
    e2 = (1 - eps) * np.einsum("gk,gk->k", wl, m2) + eps / 3.0
    mean = n * e1
    var = n * (e1 - e2) + n * n * (e2 - e1 * e1)
    return np.abs(s - mean) > 2.0 * np.sqrt(np.maximum(var, 0.0) + 1e-12)


#: a leave-one-out posterior with more than this share of its mass on an open edge of the
#: grid (and ten times the full posterior's share) is integrated afresh
_EDGE_MASS = 1e-5
#: ... and so is one whose effective number of nodes is below this share of the full's
_ESS_SHARE = 0.1


def _unresolved(nodes: Nodes, wl: np.ndarray) -> np.ndarray:
    """Columns whose reweighted nodes do not describe their leave-one-out posterior.

    Leaving out an outlying stratum moves the posterior of the hyperparameters, possibly
    off the grid that was laid for the full posterior: its mass then piles up on an open
    edge of the grid (more than :data:`_EDGE_MASS`, and ten times the full posterior's
    share there), or on a few nodes (an effective number of nodes, ``1 / sum w^2``, below
    :data:`_ESS_SHARE` of the full posterior's).
    """
    w = np.asarray(nodes.weights, dtype=float)
    bad = 1.0 / np.sum(wl * wl, axis=0) < _ESS_SHARE / np.sum(w * w)
    edge = nodes.open_edge
    if edge is not None and edge.any():
        bad |= wl[edge].sum(axis=0) > max(_EDGE_MASS, 10.0 * float(w[edge].sum()))
    return bad


def _column_mixtures(nodes: Nodes, wl: np.ndarray, cols: np.ndarray) -> dict[int, _BetaComponents]:
    """Refitted leave-one-out mixtures ``{k: (weights, a, b)}`` of the columns among ``cols``
    whose reweighted nodes do not resolve their posterior (none without ``nodes.refit``)."""
    if nodes.refit is None or not cols.size:
        return {}
    refits = {int(k): nodes.refit(int(k)) for k in cols[_unresolved(nodes, wl[:, cols])]}
    return {k: v for k, v in refits.items() if v is not None}


def _screened(
    s: np.ndarray, n: np.ndarray, nodes: Nodes, wl: np.ndarray, cols: np.ndarray, refits: dict[int, _BetaComponents]
) -> np.ndarray:
    """The columns among ``cols`` more than 2 predictive sd from their predictive mean."""
    far = np.zeros(cols.size, dtype=bool)
    plain = np.array([k not in refits for k in cols], dtype=bool)
    pc = cols[plain]
    far[plain] = _screen(s[pc], n[pc], wl[:, pc], nodes.a[:, pc], nodes.b[:, pc], nodes.outlier_prob)
    for i in np.flatnonzero(~plain):
        w, a, b = refits[int(cols[i])]
        k = cols[i : i + 1]
        far[i] = _screen(s[k], n[k], w[:, None], a[:, None], b[:, None], nodes.outlier_prob)[0]
    return cols[far]


def loo_mixed_check(
    s: np.ndarray,
    n: np.ndarray,
    nodes: Nodes,
    *,
    level: float,
    columns: np.ndarray | None = None,
    screen: bool = False,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """Leave-one-out mixed predictive check of each stratum's count.

    Parameters
    ----------
    s, n : numpy.ndarray, shape (K,)
        Observed successes and trials.
    nodes : Nodes
        The posterior's hyperparameter nodes (population parameters and own likelihood).
        A column whose reweighted nodes do not describe its leave-one-out posterior (mass
        on an open edge of the grid, or on a few nodes) takes the nodes of ``nodes.refit``
        when given.
    level : float
        Family-wise level of the flags and level of the predictive intervals.
    columns : numpy.ndarray of int, optional
        Strata to check (default: all with trials); the others get p = 1.
    screen : bool
        Compute the exact p-value only for strata more than 2 predictive sd from the
        predictive mean (the others cannot be flagged in practice; they get p = 1).
    rng : numpy.random.Generator, optional
        For predictives too large to tabulate (see :func:`mixture_mid_p`).

    Returns
    -------
    dict
        ``lower`` (lower mid-p), ``p_value``, ``pred_lower``, ``pred_upper``, ``checked``
        (bool) and ``flag`` (Bonferroni over the strata with trials), arrays of shape (K,).
    """
    s = np.asarray(s, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    K = len(s)
    has = n > 0
    wl = loo_weights(nodes.weights, nodes.loglik, nodes.log_weights)
    cols = np.flatnonzero(has) if columns is None else np.asarray(columns, dtype=int)
    refits = _column_mixtures(nodes, wl, cols)
    if screen and cols.size:
        cols = _screened(s, n, nodes, wl, cols, refits)
    out = {
        "lower": np.full(K, 0.5),
        "p_value": np.ones(K),
        "pred_lower": np.zeros(K, np.int64),
        "pred_upper": n.copy(),
        "checked": np.zeros(K, bool),
    }
    tabulate: dict[int, list[tuple[int, _BetaComponents]]] = {}  # trials -> (column, mixture)
    for k in cols:
        mix = refits.get(int(k), (wl[:, k], nodes.a[:, k], nodes.b[:, k]))
        w, a, b = _kept(*_components(*mix, nodes.outlier_prob))
        nk = int(n[k])
        out["lower"][k], out["p_value"][k] = _exact_mid_p(int(s[k]), nk, w, a, b)
        if w.size * (nk + 1) <= _MAX_CELLS:  # as mixture_mid_p, the strata of n trials together
            tabulate.setdefault(nk, []).append((int(k), (w, a, b)))
        else:
            out["pred_lower"][k], out["pred_upper"][k] = _sampled_interval(nk, w, a, b, level, rng, _DRAWS)
        out["checked"][k] = True
    for nk, todo in tabulate.items():
        ends = _tabulated_intervals(nk, [mix for _, mix in todo], level)
        for (k, _), (lo, hi) in zip(todo, ends, strict=True):
            out["pred_lower"][k], out["pred_upper"][k] = lo, hi
    out["flag"] = bonferroni_flags(out["p_value"], has, level)
    return out
