"""Proposal rules of the active loop, and the fast posterior they work on.

Every rule has the signature ``propose_allocation(state, batch_size, rng) -> pandas.Series``
(labels to request per stratum, aligned with ``state.strata``). A :class:`RuleState` holds the
per-stratum counts (successes, trials, labelled, pending, rows still available) and the goal;
its :attr:`RuleState.posterior` is a :class:`GridPosterior`: the hierarchical Beta-binomial
posterior of SPEC section 8 on a grid of ``(logit mu, log kappa)``, given which each
``theta_k`` is ``Beta(alpha_gk + s_k, beta_gk + n_k - s_k)``. Posterior moments of each
``theta_k`` are mixtures of Beta moments, so no sampling is needed.

Preposterior variance
---------------------
For ``theta ~ Beta(a, b)`` and ``m`` more Bernoulli trials, the expected posterior variance is
``Var(theta) * (a + b) / (a + b + m)`` (law of total variance; ``Var(E[theta | y]) =
Var(theta) * m / (a + b + m)``). For the hierarchical mixture the rule uses the effective
sample size ``n_eff = mean (1 - mean) / var - 1`` of each stratum's posterior, which includes
the strength borrowed from the other strata, so a small stratum that pooling already pins down
is asked for fewer labels. The expected half-width after ``t`` more trials is
``halfwidth * sqrt(n_eff / (n_eff + t))``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import betainc, betaincinv, betaln, expit, logit

__all__ = [
    "RULES",
    "GridPosterior",
    "RuleState",
    "get_rule",
    "hierarchical_grid",
    "independent_posterior",
    "outlying_strata",
    "expected_width",
    "independent_beta",
    "thompson",
    "neyman",
    "proportional",
    "uniform",
    "forecast_labels",
    "stopping_options",
    "STOPPING_DEFAULTS",
]


# ---------------------------------------------------------------------------------------
# the posterior object the rules work on
# ---------------------------------------------------------------------------------------
@dataclass
class GridPosterior:
    """Posterior of per-stratum rates as a mixture of Betas over a hyperparameter grid.

    ``theta_k | data, grid point g ~ Beta(a[g, k], b[g, k])`` with grid weights ``weights[g]``
    (normalised). The independent model is the special case of one grid point. For the robust
    model (:mod:`bayeseval.models.robust`) the conditional posterior is a two-component mixture:
    ``Beta(a[g, k], b[g, k])`` with probability ``resp[g, k]`` and the wide component's
    ``Beta(1 + s_k, 1 + n_k - s_k)`` (``a_wide``, ``b_wide``) otherwise.

    Attributes
    ----------
    weights : numpy.ndarray, shape (G,)
    a, b : numpy.ndarray, shape (G, K)
        Posterior Beta parameters of each stratum at each grid point (data included).
    strata : pandas.Index
    outliers : list
        Strata flagged as outlying (by the predictive check, or with posterior outlier
        probability above 0.5 under the robust model).
    model : str
        ``"beta_binomial"``, ``"robust"`` or ``"independent"``.
    resp, a_wide, b_wide : numpy.ndarray or None
        Robust model only: probability of the population component per grid point and
        stratum, and the wide component's Beta parameters per stratum.

    Examples
    --------
    >>> post = independent_posterior([2, 30], [20, 100])
    >>> post.mean().round(3).tolist()
    [0.136, 0.304]
    """

    weights: np.ndarray
    a: np.ndarray
    b: np.ndarray
    strata: pd.Index
    outliers: list = field(default_factory=list)
    model: str = "beta_binomial"
    hyper: dict[str, np.ndarray] = field(default_factory=dict)
    resp: np.ndarray | None = None
    a_wide: np.ndarray | None = None
    b_wide: np.ndarray | None = None

    def _component_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of each theta_k given each grid point, shape (G, K)."""
        tot = self.a + self.b
        m = self.a / tot
        if self.resp is None:
            return m, m * (1.0 - m) / (tot + 1.0)
        ex2 = m * (self.a + 1.0) / (tot + 1.0)
        tw = self.a_wide + self.b_wide
        m0 = self.a_wide / tw
        ex2_0 = m0 * (self.a_wide + 1.0) / (tw + 1.0)
        r = self.resp
        mean = r * m + (1 - r) * m0
        second = r * ex2 + (1 - r) * ex2_0
        return mean, np.maximum(second - mean * mean, 0.0)

    def outlier_probability(self) -> pd.Series:
        """Posterior probability that each stratum belongs to the wide component (robust model)."""
        if self.resp is None:
            return pd.Series(0.0, index=self.strata, name="outlier_probability")
        return pd.Series(1.0 - self.weights @ self.resp, index=self.strata, name="outlier_probability")

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws of the rates, shape ``(size, K)`` (grid point, then component, then Beta)."""
        g = rng.choice(len(self.weights), size=size, p=self.weights)
        a, b = self.a[g], self.b[g]
        if self.resp is not None:
            wide = rng.random(a.shape) >= self.resp[g]
            a = np.where(wide, self.a_wide[None, :], a)
            b = np.where(wide, self.b_wide[None, :], b)
        return rng.beta(a, b)

    def mean(self) -> pd.Series:
        """Posterior mean of each stratum's rate."""
        m, _ = self._component_moments()
        return pd.Series(self.weights @ m, index=self.strata, name="mean")

    def var(self) -> pd.Series:
        """Posterior variance of each stratum's rate (law of total variance over the grid)."""
        m, v = self._component_moments()
        mean = self.weights @ m
        second = self.weights @ (v + m * m)
        return pd.Series(np.maximum(second - mean * mean, 1e-300), index=self.strata, name="var")

    def n_eff(self) -> pd.Series:
        """Effective sample size ``mean (1 - mean) / var - 1`` of each stratum's posterior."""
        mean, var = self.mean().to_numpy(), self.var().to_numpy()
        return pd.Series(np.maximum(mean * (1 - mean) / var - 1.0, 1e-3), index=self.strata)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of each rate (quantiles of the Beta mixture)."""
        alpha = (1.0 - level) / 2.0
        q = _mixture_quantiles(self, [alpha, 1.0 - alpha])
        return q[0], q[1]

    def weighted(self, weights: np.ndarray) -> tuple[float, float]:
        """Mean and variance of ``sum_k weights_k theta_k`` (exact over the grid)."""
        w = np.asarray(weights, dtype=float)
        m, v = self._component_moments()
        cond_mean = m @ w
        cond_var = v @ (w * w)
        mean = float(self.weights @ cond_mean)
        var = float(self.weights @ (cond_var + cond_mean**2) - mean**2)
        return mean, max(var, 1e-300)


def _moment_beta(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = np.clip(mean, 1e-12, 1 - 1e-12)
    nu = np.maximum(mean * (1 - mean) / np.maximum(var, 1e-300) - 1.0, 1e-6)
    return mean * nu, (1 - mean) * nu


def _mixture_quantiles(post: GridPosterior, probs: Any, tol: float = 2e-5, max_steps: int = 16) -> np.ndarray:
    """Quantiles ``probs`` of each stratum's Beta mixture, shape ``(len(probs), K)``.

    Moment-matched Beta start, then safeguarded Newton steps (bisection inside the current
    bracket when a step leaves it) on the mixture CDF over the grid points that carry the
    mass, iterating only on the quantiles whose CDF is not yet within ``tol`` of the target.
    """
    probs = np.atleast_1d(np.asarray(probs, dtype=float))
    if len(post.weights) == 1 and post.resp is None:
        return betaincinv(post.a[0][None, :], post.b[0][None, :], probs[:, None])
    mean, var = post.mean().to_numpy(), post.var().to_numpy()
    a0, b0 = _moment_beta(mean, var)
    k = len(mean)
    q = betaincinv(a0[None, :], b0[None, :], probs[:, None]).ravel()
    pr = np.repeat(probs, k)
    order = np.argsort(post.weights)[::-1]
    cum = np.cumsum(post.weights[order])
    keep = order[: min(int(np.searchsorted(cum, 1 - 1e-5)) + 1, 300)]
    w = post.weights[keep] / post.weights[keep].sum()
    a_all = np.tile(post.a[keep], (1, len(probs)))
    b_all = np.tile(post.b[keep], (1, len(probs)))
    lb_all = betaln(a_all, b_all)
    robust = post.resp is not None
    if robust:
        r_all = np.tile(post.resp[keep], (1, len(probs)))
        wide_w = 1.0 - w @ r_all  # (2K,) weight of the wide component
        a0_all = np.tile(post.a_wide, len(probs))
        b0_all = np.tile(post.b_wide, len(probs))
        lb0_all = betaln(a0_all, b0_all)
    lo, hi = np.zeros_like(q), np.ones_like(q)
    active = np.arange(len(q))
    for _ in range(max_steps):
        a, b, lb = a_all[:, active], b_all[:, active], lb_all[:, active]
        qa = q[active]
        qc = np.clip(qa, 1e-15, 1 - 1e-15)
        wr = w[:, None] * r_all[:, active] if robust else w[:, None]
        cdf = (wr * betainc(a, b, qc)).sum(axis=0)
        if robust:
            a0, b0 = a0_all[active], b0_all[active]
            cdf = cdf + wide_w[active] * betainc(a0, b0, qc)
        f = cdf - pr[active]
        conv = np.abs(f) < tol
        if conv.all():
            break
        pdf = (wr * np.exp((a - 1) * np.log(qc) + (b - 1) * np.log1p(-qc) - lb)).sum(axis=0)
        if robust:
            pdf = pdf + wide_w[active] * np.exp(
                (a0 - 1) * np.log(qc) + (b0 - 1) * np.log1p(-qc) - lb0_all[active]
            )
        lo[active] = np.where(f < 0, np.maximum(lo[active], qa), lo[active])
        hi[active] = np.where(f > 0, np.minimum(hi[active], qa), hi[active])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = qa - f / pdf
        la, ha = lo[active], hi[active]
        bad = ~np.isfinite(step) | (step <= la) | (step >= ha)
        q[active] = np.where(conv, qa, np.where(bad, 0.5 * (la + ha), step))
        active = active[~conv]
    return q.reshape(len(probs), k)


# ---------------------------------------------------------------------------------------
# fitting: the exact Beta-binomial posterior on a (logit mu, log kappa) grid
# ---------------------------------------------------------------------------------------
def _log_prior(prior: Any, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    from bayeseval.models.priors import resolve_prior

    return resolve_prior(prior).log_density(u, v)


def _resolve_prior(prior: Any) -> Any:
    from bayeseval.models.priors import resolve_prior

    return resolve_prior(prior)


def _grid_loglik(u, v, s, n, offsets):
    mu = expit(u[:, None] + offsets[None, :])
    kappa = np.exp(v)[:, None]
    a, b = mu * kappa, (1 - mu) * kappa
    ll = betaln(a + s, b + n - s) - betaln(a, b)
    return a, b, ll


def hierarchical_grid(
    successes: Any,
    trials: Any,
    *,
    strata: pd.Index | None = None,
    prior: Any = "default",
    prior_mean: Any = None,
    model: str = "beta_binomial",
    outlier_prob: float = 0.1,
    exclude: Any = None,
    size: tuple[int, int] = (20, 16),
) -> GridPosterior:
    """The exact Beta-binomial hierarchical posterior on an adaptive 2-D grid.

    Stage one scans a wide ``(logit mu, log kappa)`` box, stage two a medium grid on the box
    holding the mass, stage three the final grid on the refined box. ``model="robust"`` is the
    two-component population of :mod:`bayeseval.models.robust` (``Beta(mu kappa, (1 - mu)
    kappa)`` with probability ``1 - outlier_prob``, ``Beta(1, 1)`` otherwise). Strata in
    ``exclude`` do not inform the hyperparameters and get an independent ``Beta(1 + s, 1 + n
    - s)`` posterior.

    Parameters
    ----------
    successes, trials : array-like
        Counts per stratum.
    strata : pandas.Index, optional
        Stratum labels.
    prior : str, dict or Prior
        Hyperprior, see :func:`bayeseval.models.priors.resolve_prior`.
    prior_mean : array-like, optional
        Prior guesses of each stratum's rate; they shift the strata on the logit scale
        (``mu_k = expit(logit mu + o_k)``, offsets centred).
    model : {"beta_binomial", "robust"}
        Population model.
    outlier_prob : float
        Robust model: prior probability that a stratum is an outlier.
    exclude : array-like of bool, optional
        Strata modelled without pooling.
    size : (int, int)
        Grid points in ``logit mu`` and ``log kappa`` per stage.

    Returns
    -------
    GridPosterior

    Examples
    --------
    >>> post = hierarchical_grid([1, 3, 2, 30], [50, 60, 40, 60])
    >>> bool(post.mean().iloc[0] > 1 / 50)  # pooled toward the others
    True
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    k = len(s)
    strata = pd.RangeIndex(k) if strata is None else strata
    offsets = np.zeros(k)
    if prior_mean is not None:
        pm = np.clip(np.asarray(prior_mean, dtype=float), 1e-4, 1 - 1e-4)
        offsets = logit(pm) - logit(pm).mean()
    excl = np.zeros(k, bool) if exclude is None else np.asarray(exclude, bool)
    prior = _resolve_prior(prior)
    use = (n > 0) & ~excl
    su, nu, ou = s[use], n[use], offsets[use]

    robust = model == "robust"
    if robust:
        l_wide = betaln(1.0 + su, 1.0 + nu - su)  # wide component, binomial coefficient dropped
        log_eps, log_1m = np.log(outlier_prob), np.log1p(-outlier_prob)

    def logpost(u, v):
        lp = _log_prior(prior, u, v)
        if use.any():
            _, _, ll = _grid_loglik(u, v, su, nu, ou)
            if robust:
                ll = np.logaddexp(log_1m + ll, log_eps + l_wide)
            lp = lp + ll.sum(axis=1)
        return lp

    nu_, nv_ = size
    # stage 1: wide box
    c1u, c1v = 16, 16
    u1, v1 = np.meshgrid(np.linspace(-10, 8, c1u), np.linspace(-6, 13.8, c1v), indexing="ij")
    u1, v1 = u1.ravel(), v1.ravel()
    lp1 = logpost(u1, v1)
    good = lp1 > np.nanmax(lp1) - 16.0
    du, dv = 18 / (c1u - 1), 19.8 / (c1v - 1)
    ulo, uhi = u1[good].min() - du, u1[good].max() + du
    vlo, vhi = v1[good].min() - dv, min(v1[good].max() + dv, 13.8)
    # stage 2: a medium grid on that box, stage 3: the final grid on the box holding the mass
    u2, v2 = np.meshgrid(np.linspace(ulo, uhi, 12), np.linspace(vlo, vhi, 12), indexing="ij")
    u2, v2 = u2.ravel(), v2.ravel()
    lp2 = logpost(u2, v2)
    good = lp2 > np.nanmax(lp2) - 14.0
    du, dv = (uhi - ulo) / 11, (vhi - vlo) / 11
    ulo, uhi = max(u2[good].min() - du, ulo), min(u2[good].max() + du, uhi)
    vlo, vhi = max(v2[good].min() - dv, vlo), min(v2[good].max() + dv, vhi)
    u3, v3 = np.meshgrid(np.linspace(ulo, uhi, nu_), np.linspace(vlo, vhi, nv_), indexing="ij")
    u, v = u3.ravel(), v3.ravel()
    lp = logpost(u, v)
    w = np.exp(lp - np.nanmax(lp))
    w = np.where(np.isfinite(w), w, 0.0)
    keep = w > 1e-12 * w.max()
    u, v, w = u[keep], v[keep], w[keep] / w[keep].sum()
    mu = expit(u[:, None] + offsets[None, :])
    kappa = np.exp(v)[:, None]
    a = mu * kappa + s
    b = (1 - mu) * kappa + (n - s)
    if excl.any():
        a[:, excl] = 1.0 + s[excl]
        b[:, excl] = 1.0 + (n - s)[excl]
    resp = a_wide = b_wide = None
    outliers = list(strata[excl])
    if robust:
        a_prior, b_prior = a - s, b - (n - s)
        l_main = betaln(a, b) - betaln(a_prior, b_prior)
        resp = expit((np.log1p(-outlier_prob) + l_main) - (np.log(outlier_prob) + betaln(1.0 + s, 1.0 + n - s)))
        resp[:, excl] = 0.0
        a_wide, b_wide = 1.0 + s, 1.0 + (n - s)
        outliers = list(strata[(1.0 - w @ resp) > 0.5])
    return GridPosterior(
        weights=w,
        a=a,
        b=b,
        strata=strata,
        outliers=outliers,
        model="robust" if (robust or excl.any()) else "beta_binomial",
        hyper={"logit_mu": u, "log_kappa": v, "offsets": offsets},
        resp=resp,
        a_wide=a_wide,
        b_wide=b_wide,
    )


def independent_posterior(successes: Any, trials: Any, *, strata: pd.Index | None = None) -> GridPosterior:
    """Independent ``Beta(1 + s_k, 1 + n_k - s_k)`` posteriors (no pooling).

    Examples
    --------
    >>> independent_posterior([0], [10]).mean().round(4).tolist()
    [0.0833]
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    strata = pd.RangeIndex(len(s)) if strata is None else strata
    return GridPosterior(
        weights=np.ones(1), a=(1 + s)[None, :], b=(1 + n - s)[None, :], strata=strata, model="independent"
    )


def outlying_strata(post: GridPosterior, successes: Any, trials: Any, *, alpha: float = 0.01) -> np.ndarray:
    """Flag strata whose count is extreme under the others (leave-one-out predictive check).

    For stratum ``k`` the grid weights are reweighted to leave its own likelihood out; the
    predictive of ``s_k`` is the Beta-binomial with the moment-matched Beta of the
    leave-one-out ``theta_k``. A two-sided tail probability below ``alpha / K`` (Bonferroni
    over the strata with data) flags it.

    Returns
    -------
    numpy.ndarray of bool
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    has = n > 0
    flags = np.zeros(len(s), bool)
    if has.sum() < 3 or len(post.weights) < 2:
        return flags
    # prior Beta parameters per grid point: a - s, b - (n - s)
    a0 = post.a - s
    b0 = post.b - (n - s)
    ll = betaln(post.a, post.b) - betaln(a0, b0)  # log p(s_k | g) up to a constant in g
    logw = np.log(np.maximum(post.weights, 1e-300))[:, None] - ll
    logw -= logw.max(axis=0, keepdims=True)
    wl = np.exp(logw)
    wl /= wl.sum(axis=0, keepdims=True)
    m = a0 / (a0 + b0)
    v = m * (1 - m) / (a0 + b0 + 1)
    mean = (wl * m).sum(axis=0)
    var = (wl * (v + m * m)).sum(axis=0) - mean**2
    pa, pb = _moment_beta(mean, var)
    # normal screen, then the exact Beta-binomial tails for strata that could be flagged
    tot = pa + pb
    pm = n * pa / tot
    psd = np.sqrt(n * pa * pb * (tot + n) / (tot**2 * (tot + 1)) + 1e-12)
    screen = has & (np.abs(s - pm) > 2.0 * psd)
    p = np.ones(len(s))
    for j in np.flatnonzero(screen):
        support = np.arange(int(n[j]) + 1)
        logpmf = stats.betabinom.logpmf(support, n[j], pa[j], pb[j])
        pmf = np.exp(logpmf - logpmf.max())
        pmf /= pmf.sum()
        sj = int(s[j])
        p[j] = min(1.0, 2 * min(pmf[: sj + 1].sum(), pmf[sj:].sum()))
    flags = has & (p < alpha / max(int(has.sum()), 1))
    return flags


# ---------------------------------------------------------------------------------------
# the stopping rule
# ---------------------------------------------------------------------------------------
#: defaults of the stopping safeguards (see :func:`stopping_options`)
STOPPING_DEFAULTS: dict[str, Any] = {"stop_level": None, "own_check": None, "min_data_share": 0.0}


def stopping_options(
    level: float, *, stop_level: Any = "default", own_check: Any = "default", min_data_share: Any = "default"
) -> dict[str, Any]:
    """Resolve the stopping safeguards of a campaign to :class:`RuleState` keyword arguments.

    ``"default"`` takes the value in :data:`STOPPING_DEFAULTS` (all safeguards off: in the
    benchmark the robust population model alone brought coverage at stop to about nominal,
    while a stricter ``stop_level`` cost many labels and the floors mainly removed early
    stops). The safeguards apply to goal ``"each"``.

    Parameters
    ----------
    level : float
        Level of the reported credible intervals.
    stop_level : float or None
        Level at which the half-width goal is checked (at least ``level``); None checks at
        ``level``.
    own_check : float or None
        Level of each stratum's own Jeffreys interval that its pooled interval must overlap
        before the stratum counts as done; None switches the check off.
    min_data_share : float
        Floor on each stratum's own trials as a share of its posterior effective sample size.

    Returns
    -------
    dict

    Examples
    --------
    >>> sorted(stopping_options(0.95, stop_level=0.97))
    ['min_data_share', 'own_check', 'stop_level']
    """
    from bayeseval._validation import check_level

    out = dict(STOPPING_DEFAULTS)
    for name, value in (("stop_level", stop_level), ("own_check", own_check), ("min_data_share", min_data_share)):
        if not (isinstance(value, str) and value == "default"):
            out[name] = value
    if out["stop_level"] is not None:
        out["stop_level"] = check_level(out["stop_level"], "stop_level")
        if out["stop_level"] < level:
            raise ValueError(f"stop_level must be at least level={level}, got {out['stop_level']!r}")
    if out["own_check"] is not None:
        out["own_check"] = check_level(out["own_check"], "own_check")
    share = out["min_data_share"]
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= float(share) < 1.0:
        raise ValueError(f"min_data_share must be a number in [0, 1), got {share!r}")
    out["min_data_share"] = float(share)
    return out


# ---------------------------------------------------------------------------------------
# the state a rule sees
# ---------------------------------------------------------------------------------------
@dataclass
class RuleState:
    """What a rule needs to know about a campaign, per stratum (arrays aligned to ``strata``).

    Parameters
    ----------
    strata : pandas.Index
    successes, trials : numpy.ndarray
        Counted successes and trials of the metric among the labelled rows.
    labelled : numpy.ndarray
        Labelled rows (for metrics whose trials are only known after labelling,
        ``trials <= labelled``).
    pending : numpy.ndarray
        Rows proposed and not yet labelled.
    available : numpy.ndarray
        Eligible rows never proposed.
    weights : numpy.ndarray
        Population shares (sum to 1).
    target_halfwidth, level, goal
        The goal: ``"each"`` stratum's or the ``"overall"`` weighted rate's credible interval
        half-width at most ``target_halfwidth``.
    trial_known : bool
        True when every labelled row is a trial (error rate, accuracy, or precision-type
        metrics where only trials are eligible). Otherwise each stratum's probability that a
        labelled row is a trial has a ``Beta(1 + trials, 1 + labelled - trials)`` posterior.
    model : str
        ``"auto"`` (hierarchical, robust when a stratum looks outlying), ``"beta_binomial"``,
        ``"robust"`` or ``"independent"``.
    prior, prior_mean
        Hyperprior and optional per-stratum prior guesses.
    stop_level : float, optional
        Level at which the stopping rule checks the half-widths (default: ``level``).
    own_check : float, optional
        No-pooling sanity check: a stratum is done only when its pooled interval overlaps its
        own Jeffreys interval at this level (default: off).
    min_data_share : float
        A stratum is done only when its own trials are at least this share of its posterior
        effective sample size, so pooling cannot stand in for more than ``1 - min_data_share``
        of its information (default 0: off).

    Examples
    --------
    >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 100], target_halfwidth=0.1)
    >>> int(expected_width(st, 10, np.random.default_rng(0)).sum())
    10
    """

    strata: pd.Index
    successes: np.ndarray
    trials: np.ndarray
    labelled: np.ndarray
    pending: np.ndarray
    available: np.ndarray
    weights: np.ndarray
    target_halfwidth: float = 0.05
    level: float = 0.95
    goal: str = "each"
    trial_known: bool = True
    model: str = "auto"
    prior: Any = "default"
    prior_mean: np.ndarray | None = None
    stop_level: float | None = None
    own_check: float | None = None
    min_data_share: float = 0.0
    _posterior: GridPosterior | None = field(default=None, repr=False)
    _interval: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _stop_interval: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.model != "independent":
            self.prior = _resolve_prior(self.prior)

    @classmethod
    def from_counts(
        cls,
        successes: Any,
        trials: Any,
        *,
        available: Any,
        labelled: Any = None,
        pending: Any = None,
        weights: Any = None,
        strata: Any = None,
        **kwargs: Any,
    ) -> RuleState:
        """Build a state from arrays (labelled defaults to trials, pending to 0)."""
        s = np.asarray(successes, dtype=np.int64)
        n = np.asarray(trials, dtype=np.int64)
        k = len(s)
        avail = np.asarray(available, dtype=np.int64)
        lab = n.copy() if labelled is None else np.asarray(labelled, dtype=np.int64)
        pend = np.zeros(k, np.int64) if pending is None else np.asarray(pending, dtype=np.int64)
        if weights is None:
            size = avail + lab + pend
            weights = size / size.sum() if size.sum() else np.full(k, 1.0 / k)
        idx = pd.RangeIndex(k) if strata is None else pd.Index(strata)
        return cls(idx, s, n, lab, pend, avail, np.asarray(weights, float), **kwargs)

    # -- derived quantities (cached) ------------------------------------------------------
    @property
    def posterior(self) -> GridPosterior:
        """The current posterior (hierarchical unless ``model="independent"``)."""
        if self._posterior is None:
            self._posterior = fit_state_posterior(self)
        return self._posterior

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-stratum equal-tailed credible intervals (cached)."""
        if self._interval is None:
            self._interval = self.posterior.interval(self.level)
        return self._interval

    def halfwidths(self) -> np.ndarray:
        """Per-stratum credible-interval half-widths."""
        lo, hi = self.intervals()
        return (hi - lo) / 2.0

    def stop_halfwidths(self) -> np.ndarray:
        """Per-stratum half-widths at ``stop_level`` (the level the stopping rule checks)."""
        if self.stop_level is None or self.stop_level == self.level:
            return self.halfwidths()
        if self._stop_interval is None:
            self._stop_interval = self.posterior.interval(self.stop_level)
        lo, hi = self._stop_interval
        return (hi - lo) / 2.0

    def own_consistent(self) -> np.ndarray:
        """Strata whose pooled interval overlaps their own Jeffreys interval at ``own_check``.

        The no-pooling sanity check: a stratum whose own data disagree with where pooling put
        it (the two intervals are disjoint) is not done, whatever its half-width. All True when
        ``own_check`` is None or the posterior is not pooled.
        """
        k = len(self.strata)
        if self.own_check is None or self.model == "independent":
            return np.ones(k, bool)
        s, n = self.successes.astype(float), self.trials.astype(float)
        alpha = (1.0 - self.own_check) / 2.0
        olo = betaincinv(0.5 + s, 0.5 + n - s, alpha)
        ohi = betaincinv(0.5 + s, 0.5 + n - s, 1.0 - alpha)
        lo, hi = self.intervals()
        return (n == 0) | ((lo <= ohi) & (olo <= hi))

    def data_share(self) -> np.ndarray:
        """Share of each stratum's posterior effective sample size that is its own trials."""
        if self.model == "independent":
            return np.ones(len(self.strata))
        neff = self.posterior.n_eff().to_numpy()
        return np.minimum(self.trials / np.maximum(neff, 1e-9), 1.0)

    def overall(self) -> tuple[float, float, float]:
        """Mean and equal-tailed interval of the weighted rate (moment-matched Beta)."""
        mean, var = self.posterior.weighted(self.weights)
        a, b = _moment_beta(np.array([mean]), np.array([var]))
        alpha = (1 - self.level) / 2
        lo, hi = betaincinv(a[0], b[0], np.array([alpha, 1 - alpha]))
        return mean, float(lo), float(hi)

    def p_trial(self) -> np.ndarray:
        """Posterior mean probability that a labelled row is a trial, per stratum."""
        if self.trial_known:
            return np.ones(len(self.strata))
        return (1.0 + self.trials) / (2.0 + self.labelled)

    def stratum_done(self) -> np.ndarray:
        """Strata that meet the goal: half-width at ``stop_level`` within the target, plus the
        optional no-pooling check (``own_check``) and data-share floor (``min_data_share``)."""
        done = self.stop_halfwidths() <= self.target_halfwidth
        if self.own_check is not None:
            done &= self.own_consistent()
        if self.min_data_share > 0:
            done &= self.data_share() >= self.min_data_share
        return done

    def exhausted(self) -> np.ndarray:
        """Strata with no row left to propose."""
        return self.available <= 0

    def is_done(self) -> bool:
        """Whether the goal is met (or nothing is left to label)."""
        if self.goal == "overall":
            _, lo, hi = self.overall()
            return (hi - lo) / 2 <= self.target_halfwidth or bool(self.exhausted().all())
        return bool(np.all(self.stratum_done() | (self.exhausted() & (self.pending == 0))))

    def invalidate(self) -> None:
        """Drop cached posterior and intervals after the counts changed."""
        self._posterior = None
        self._interval = None
        self._stop_interval = None


def fit_state_posterior(state: RuleState) -> GridPosterior:
    """Fit the posterior a state asks for.

    ``model="auto"``: the plain Beta-binomial unless the leave-one-out predictive check
    (:func:`outlying_strata`) flags a stratum, then the robust mixture population
    (:mod:`bayeseval.models.robust`); the flagged strata are listed in ``outliers``.
    """
    kw = dict(strata=state.strata, prior=state.prior, prior_mean=state.prior_mean)
    if state.model == "independent":
        return independent_posterior(state.successes, state.trials, strata=state.strata)
    if state.model == "robust":
        return hierarchical_grid(state.successes, state.trials, model="robust", **kw)
    post = hierarchical_grid(state.successes, state.trials, **kw)
    if state.model == "auto":
        flags = outlying_strata(post, state.successes, state.trials)
        if flags.any():
            post = hierarchical_grid(state.successes, state.trials, model="robust", **kw)
            post.outliers = sorted(set(post.outliers) | set(state.strata[flags]), key=list(state.strata).index)
    return post


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------
def _as_series(state: RuleState, counts: np.ndarray, rule: str) -> pd.Series:
    return pd.Series(counts.astype(np.int64), index=state.strata, name=rule)


def _greedy_width(state: RuleState, batch_size: int) -> np.ndarray:
    """Greedy batch with diminishing returns on the expected excess half-width (or variance)."""
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64).copy()
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    neff = state.posterior.n_eff().to_numpy()
    t0 = p * state.pending
    target = state.target_halfwidth
    if state.goal == "overall":
        var = state.posterior.var().to_numpy()
        c = state.weights**2 * var * neff  # contribution = c / (neff + t)

        def gain(t: np.ndarray) -> np.ndarray:
            return c / (neff + t) - c / (neff + t + p)

        def gain_one(j: int) -> float:
            return c[j] / (neff[j] + t[j]) - c[j] / (neff[j] + t[j] + p[j])

        eligible = cap > 0
    else:
        hw = state.stop_halfwidths()
        # strata held back only by the sanity checks count every reduction of their width
        target = np.where(state.stratum_done() | (hw > target), target, 0.0)

        def gain(t: np.ndarray) -> np.ndarray:
            h0 = hw * np.sqrt(neff / (neff + t))
            h1 = hw * np.sqrt(neff / (neff + t + p))
            excess = np.maximum(h0 - target, 0) - np.maximum(h1 - target, 0)
            return excess + 1e-3 * (h0 - h1)

        def gain_one(j: int) -> float:
            h0 = hw[j] * np.sqrt(neff[j] / (neff[j] + t[j]))
            h1 = hw[j] * np.sqrt(neff[j] / (neff[j] + t[j] + p[j]))
            return max(h0 - target[j], 0.0) - max(h1 - target[j], 0.0) + 1e-3 * (h0 - h1)

        eligible = (cap > 0) & ~state.stratum_done()
        if not eligible.any():
            eligible = cap > 0
    if not eligible.any():
        return counts
    t = t0.astype(float).copy()
    g = np.where(eligible, gain(t), -np.inf)
    for _ in range(batch_size):
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += p[j]
        if counts[j] >= cap[j]:
            g[j] = -np.inf
        else:
            g[j] = gain_one(j)
    return counts


def expected_width(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Greedy expected-width rule under the hierarchical posterior (the default).

    Each label goes to the stratum whose next label most reduces the expected excess of its
    credible-interval half-width over the target (goal ``"each"``; the sum over unfinished
    strata), or the weighted rate's expected posterior variance (goal ``"overall"``). After a
    label is assigned, that stratum's expected half-width is updated (diminishing returns),
    so one batch spreads over strata. For metrics whose trial status is only known after
    labelling the gain per label is ``P(trial) *`` the gain per trial.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
    >>> expected_width(st, 20, np.random.default_rng(0)).tolist()
    [20, 0]
    """
    return _as_series(state, _greedy_width(state, batch_size), "expected_width")


def independent_beta(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """The same greedy expected-width rule with independent ``Beta(1, 1)`` posteriors.

    The design of earlier active-assessment work (no pooling between strata); campaigns and
    simulations using it also judge the goal with the independent posteriors.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], model="independent")
    >>> int(independent_beta(st, 8, np.random.default_rng(0)).iloc[0])
    8
    """
    if state.model != "independent":
        state = _with_model(state, "independent")
    return _as_series(state, _greedy_width(state, batch_size), "independent_beta")


def _with_model(state: RuleState, model: str) -> RuleState:
    return RuleState(
        state.strata, state.successes, state.trials, state.labelled, state.pending, state.available,
        state.weights, state.target_halfwidth, state.level, state.goal, state.trial_known, model,
        state.prior, state.prior_mean, state.stop_level, state.own_check, state.min_data_share,
    )


def thompson(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Thompson-style rule: each label goes to the stratum with the largest sampled need.

    For every label a grid point and rates are drawn from the posterior; the stratum whose
    sampled variance ``theta (1 - theta) / (n_eff + t + 1)`` (goal ``"overall"``: times the
    squared weight) is largest among strata not yet done gets it.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 1], [10, 10], available=[5, 50])
    >>> int(thompson(st, 30, np.random.default_rng(1)).iloc[0]) <= 5
    True
    """
    post = state.posterior
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64)
    eligible = cap > 0
    if state.goal == "each":
        notdone = ~state.stratum_done()
        if (eligible & notdone).any():
            eligible &= notdone
    if not eligible.any() or batch_size == 0:
        return _as_series(state, counts, "thompson")
    neff = post.n_eff().to_numpy()
    p = np.clip(state.p_trial(), 1e-6, 1)
    t = p * state.pending
    theta = post.sample(batch_size, rng)
    scale = state.weights**2 if state.goal == "overall" else np.ones(k)
    for i in range(batch_size):
        score = np.where(eligible & (counts < cap), scale * theta[i] * (1 - theta[i]) / (neff + t + 1), -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
        t[j] += p[j]
    return _as_series(state, counts, "thompson")


def _greedy_priority(state: RuleState, batch_size: int, priority: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Fill the batch by largest ``priority / (n + 1)`` (gives allocations proportional to priority)."""
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64)
    eligible = eligible & (cap > 0) & (priority > 0)
    if not eligible.any():
        return counts
    n = (state.labelled + state.pending).astype(float)
    for _ in range(batch_size):
        score = np.where(eligible & (counts < cap), priority / (n + counts + 1.0), -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
    return counts


def neyman(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Neyman allocation on current posterior rates: labels proportional to ``w_k sd_k / sqrt(P(trial))``.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 30], [100, 100], available=[500, 500], weights=[0.5, 0.5])
    >>> a = neyman(st, 100, np.random.default_rng(0))
    >>> bool(a.iloc[1] > a.iloc[0])
    True
    """
    mean = state.posterior.mean().to_numpy()
    w = state.weights if state.goal == "overall" else np.ones(len(state.strata))
    priority = w * np.sqrt(mean * (1 - mean)) / np.sqrt(np.clip(state.p_trial(), 1e-6, 1))
    eligible = np.ones(len(state.strata), bool)
    if state.goal == "each":
        notdone = ~state.stratum_done()
        eligible = notdone if notdone.any() else eligible
    return _as_series(state, _greedy_priority(state, batch_size, priority, eligible), "neyman")


def proportional(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Proportional random labelling: rows drawn uniformly from the whole remaining pool.

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[900, 100])
    >>> int(proportional(st, 1000, np.random.default_rng(0)).sum())
    1000
    """
    cap = state.available.astype(np.int64)
    total = int(cap.sum())
    m = min(batch_size, total)
    if m == 0:
        return _as_series(state, np.zeros(len(cap), np.int64), "proportional")
    counts = rng.multivariate_hypergeometric(cap, m)
    return _as_series(state, counts, "proportional")


def uniform(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Equal labels per stratum among strata not yet done (balancing labelled counts).

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0, 0], [0, 0, 0], available=[900, 100, 2])
    >>> uniform(st, 12, np.random.default_rng(0)).tolist()
    [5, 5, 2]
    """
    eligible = np.ones(len(state.strata), bool)
    if state.goal == "each" and state.labelled.sum() > 0:
        notdone = ~state.stratum_done()
        eligible = notdone if notdone.any() else eligible
    priority = np.ones(len(state.strata))
    return _as_series(state, _greedy_priority(state, batch_size, priority, eligible), "uniform")


Rule = Callable[[RuleState, int, np.random.Generator], pd.Series]

#: rule name -> (function, posterior model used for the goal)
RULES: dict[str, tuple[Rule, str]] = {
    "expected_width": (expected_width, "auto"),
    "thompson": (thompson, "auto"),
    "neyman": (neyman, "auto"),
    "proportional": (proportional, "auto"),
    "uniform": (uniform, "auto"),
    "independent_beta": (independent_beta, "independent"),
}


def get_rule(rule: str | Rule) -> tuple[str, Rule, str]:
    """Resolve a rule name (or callable) to ``(name, function, model)``.

    Examples
    --------
    >>> get_rule("expected_width")[0]
    'expected_width'
    """
    if callable(rule):
        return getattr(rule, "__name__", "custom"), rule, "auto"
    if not isinstance(rule, str) or rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid choices are {sorted(RULES)}")
    fn, model = RULES[rule]
    return rule, fn, model


# ---------------------------------------------------------------------------------------
# forecast
# ---------------------------------------------------------------------------------------
def forecast_labels(state: RuleState) -> pd.Series:
    """Labels still needed per stratum so the expected half-width meets the target.

    Goal ``"each"``: the smallest ``m`` with ``halfwidth * sqrt(n_eff / (n_eff + P(trial) m))
    <= target`` (pending labels count as already requested). Goal ``"overall"``: the
    allocation minimising total labels subject to the expected variance of the weighted rate
    reaching the target, by water-filling. Capped at the rows available (a stratum that cannot
    reach the target gets its remaining rows).

    Examples
    --------
    >>> st = RuleState.from_counts([10], [100], available=[10_000], model="independent")
    >>> int(forecast_labels(st).iloc[0]) > 0
    True
    """
    post = state.posterior
    neff = post.n_eff().to_numpy()
    p = np.clip(state.p_trial(), 1e-6, 1)
    t0 = p * state.pending
    cap = state.available.astype(float)
    target = state.target_halfwidth
    if state.goal == "each":
        hw = state.stop_halfwidths()
        need_t = np.maximum(neff * (hw / target) ** 2 - neff - t0, 0.0)
        m = np.ceil(need_t / p - 1e-9)
    else:
        mean, var = post.weighted(state.weights)
        _, lo, hi = state.overall()
        hw = (hi - lo) / 2
        if hw <= target:
            m = np.zeros(len(neff))
        else:
            v_k = post.var().to_numpy()
            c = state.weights**2 * v_k * neff
            base = np.sum(c / (neff + t0))
            v_target = base * (target / hw) ** 2

            def alloc(lam: float) -> np.ndarray:
                x = np.sqrt(lam * c * p)  # neff + t0 + p m at the optimum
                return np.clip((x - neff - t0) / p, 0, cap)

            def vexp(m: np.ndarray) -> float:
                return float(np.sum(c / (neff + t0 + p * m)))

            lo_l, hi_l = 0.0, 1.0
            while vexp(alloc(hi_l)) > v_target and hi_l < 1e30:
                hi_l *= 10
            for _ in range(100):
                mid = np.sqrt(lo_l * hi_l) if lo_l > 0 else hi_l / 10
                if vexp(alloc(mid)) > v_target:
                    lo_l = mid
                else:
                    hi_l = mid
                if hi_l / max(lo_l, 1e-300) < 1 + 1e-9:
                    break
            m = np.ceil(alloc(hi_l))
    m = np.minimum(m, cap)
    return pd.Series(m.astype(np.int64), index=state.strata, name="forecast")
