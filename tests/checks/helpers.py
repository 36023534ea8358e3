"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import warnings

import numpy as np

from bayeseval import fit_hierarchical
from bayeseval._api.warnings import PrecisionLimitedWarning


def fit(s, n, seed=0, draws=4000, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        return fit_hierarchical(s, n, draws=draws, random_seed=seed, **kw)


def planted_outlier(seed: int, k: int = 15, n: int = 100):
    # k - 1 strata from Beta(20, 180) (mean 0.10, sd 0.021) and one at 0.35
    rng = np.random.default_rng([8, seed])
    theta = rng.beta(20, 180, size=k)
    theta[-1] = 0.35
    trials = np.full(k, n)
    return rng.binomial(trials, theta), trials


def loo_reference(s, n, k, nv=81, nu=31):
    """Leave-one-out posterior of ``(logit mu, log kappa)`` without stratum ``k``, by brute force.

    Independent of the engine's grid and of its leave-one-out reweighting: the posterior
    given the other strata only, under the default prior (``mu ~ Uniform(0, 1)``, ``log
    kappa ~ Normal(log 20, 2.5)`` on ``kappa in [1e-4, 1e6]``), with SciPy's
    ``betabinom.logpmf`` for the likelihood, integrated on a conditional grid: ``nv`` values
    of ``log kappa`` over the range where the marginal is within ``e^-40`` of its top, and at
    each ``nu`` values of ``logit mu`` over +-9 conditional sd about the conditional mode
    (found by zooming grids), so the funnel of few strata is resolved at every ``kappa``.
    Returns ``(weights, a, b)`` of the nodes holding all but 1e-10 of the mass.
    """
    from scipy import special, stats

    s, n = np.asarray(s), np.asarray(n)
    keep = np.arange(len(s)) != k
    so, no = s[keep][:, None, None], n[keep][:, None, None]

    def log_post(u, v):
        kappa = np.exp(v)
        a, b = special.expit(u) * kappa, special.expit(-u) * kappa
        ll = stats.betabinom.logpmf(so, no, a[None], b[None]).sum(axis=0)
        return ll + special.log_expit(u) + special.log_expit(-u) + stats.norm.logpdf(v, np.log(20.0), 2.5)

    def conditional(vs):
        c = special.logit((so.sum() + 0.5) / (no.sum() + 1.0))
        lo, hi = np.full(vs.size, c - 12.0), np.full(vs.size, c + 12.0)
        for _ in range(6):
            gu = np.linspace(lo, hi, 41, axis=1)
            m = gu[np.arange(vs.size), np.argmax(log_post(gu, vs[:, None]), axis=1)]
            step = gu[:, 1] - gu[:, 0]
            lo, hi = m - 2 * step, m + 2 * step
        h = 1e-4
        f = log_post(m[:, None] + np.array([-h, 0.0, h])[None, :], vs[:, None])
        sd = 1.0 / np.sqrt(np.maximum(-(f[:, 0] - 2 * f[:, 1] + f[:, 2]) / h**2, 1e-10))
        return m, sd, f[:, 1]

    vs = np.linspace(np.log(1e-4), np.log(1e6), 301)
    m, sd, top = conditional(vs)
    marg = top + np.log(sd)  # Laplace: the log marginal of log kappa, up to a constant
    live = np.flatnonzero(marg > marg.max() - 40.0)
    gv = np.linspace(vs[max(live[0] - 1, 0)], vs[min(live[-1] + 1, vs.size - 1)], nv)
    m, sd, _ = conditional(gv)
    gu = m[:, None] + sd[:, None] * np.linspace(-9.0, 9.0, nu)[None, :]
    logw = log_post(gu, gv[:, None]) + np.log(gu[:, 1] - gu[:, 0])[:, None]
    w = np.exp(logw - logw.max()).ravel()
    order = np.argsort(w)[::-1]
    kept = order[: np.searchsorted(np.cumsum(w[order]) / w.sum(), 1 - 1e-10) + 1]
    kappa = np.exp(np.broadcast_to(gv[:, None], gu.shape).ravel()[kept])
    u = gu.ravel()[kept]
    return w[kept] / w[kept].sum(), special.expit(u) * kappa, special.expit(-u) * kappa


def predictive_reference(sk, nk, w, a, b, level=0.95):
    """Lower mid-p, two-sided mid-p and the central ``level`` interval of count ``sk`` of
    ``nk`` under ``sum_g w_g BetaBinomial(nk, a_g, b_g)``, from SciPy's ``betabinom.pmf``."""
    from scipy import stats

    x = np.arange(nk + 1)
    pmf = np.zeros(nk + 1)
    step = max(1, 2_000_000 // (nk + 1))
    for i in range(0, w.size, step):
        sl = slice(i, i + step)
        pmf += w[sl] @ stats.betabinom.pmf(x[None, :], nk, a[sl, None], b[sl, None])
    lower = pmf[:sk].sum() + 0.5 * pmf[sk]
    upper = pmf[sk + 1 :].sum() + 0.5 * pmf[sk]
    cdf = np.cumsum(pmf)
    half = (1.0 - level) / 2.0
    return (
        lower,
        min(1.0, 2.0 * min(lower, upper)),
        int(np.searchsorted(cdf, half)),
        int(np.searchsorted(cdf, 1.0 - half)),
        cdf,
    )
