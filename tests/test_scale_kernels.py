"""Kernels behind campaigns, ``evaluate`` and exact summaries at many strata.

References are independent of the code under test: SciPy's Beta CDF (``betainc``) solved by
bisection, closed forms, and plain loops written here.
"""

from __future__ import annotations

import json
import sqlite3
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from bayeseval import PrecisionLimitedWarning
from bayeseval._kernels.conflict import loo_conflict, predictive_p_values
from bayeseval._kernels.loo_prior import _hyper_grid, _loo_weights, loo_beta_mixture
from bayeseval._kernels.mixture import BetaMixture
from bayeseval.campaign.posterior import hierarchical_grid
from bayeseval.campaign.rules import _greedy_width
from bayeseval.campaign.state import RuleState
from bayeseval.counts.counts import Counts
from bayeseval.models import fit_hierarchical
from bayeseval.models.exact import ExactFit


def bisect_quantiles(W, A, B, qs, iters=80):
    """Quantiles (len(qs), J) of sum_g W[g] Beta(A[g], B[g]) by bisection on scipy's CDF."""
    J = A.shape[1]
    lo = np.zeros((len(qs), J))
    hi = np.ones((len(qs), J))
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        F = np.einsum("gj,gqj->qj", W, special.betainc(A[:, None, :], B[:, None, :], mid[None]))
        below = F < np.asarray(qs)[:, None]
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def mixture_cdf(W, A, B, x):
    """P(theta_j <= x_j) by scipy, x of shape (Q, J)."""
    return np.einsum("gj,gqj->qj", W, special.betainc(A[:, None, :], B[:, None, :], x[None]))


# -- shared columns ---------------------------------------------------------------------------
def test_shared_columns_match_scipy_and_expanded_arrays():
    rng = np.random.default_rng(3)
    G, J = 5, 4
    w = rng.dirichlet(np.ones(G))
    a, b = rng.uniform(0.5, 30, (G, J)), rng.uniform(0.5, 80, (G, J))
    r = rng.uniform(0.3, 1, (G, J))
    aw, bw = rng.uniform(1, 4, J), rng.uniform(1, 4, J)
    idx = np.array([2, 0, 2, 3, 3, 3, 1, 0])
    shared = BetaMixture(w, a, b, resp=r, a_wide=aw, b_wide=bw).columns(idx)
    assert shared.n_columns == 8 and shared.n_distinct == 4
    # reference: the stacked components of each column, by scipy
    Wc = np.vstack([w[:, None] * r, 1 - w @ r])[:, idx]
    Ac, Bc = np.vstack([a, aw])[:, idx], np.vstack([b, bw])[:, idx]
    qs = np.array([0.025, 0.5, 0.975])
    ref = bisect_quantiles(Wc, Ac, Bc, qs)
    np.testing.assert_allclose(shared.quantiles(qs), ref, atol=1e-9)
    mean = np.sum(Wc * Ac / (Ac + Bc), axis=0)
    np.testing.assert_allclose(shared.mean(), mean, rtol=1e-12)
    x = rng.uniform(0.05, 0.9, 8)
    np.testing.assert_allclose(shared.cdf(x), mixture_cdf(Wc, Ac, Bc, x[None])[0], atol=1e-12)
    np.testing.assert_allclose(shared.cdf(0.3), mixture_cdf(Wc, Ac, Bc, np.full((1, 8), 0.3))[0], atol=1e-12)
    # the (G, K) arrays, weighted moments and draws see the same columns
    np.testing.assert_array_equal(shared.a, a[:, idx])
    np.testing.assert_array_equal(shared.resp, r[:, idx])
    wts = rng.dirichlet(np.ones(8))
    full = BetaMixture(w, a[:, idx], b[:, idx], resp=r[:, idx], a_wide=aw[idx], b_wide=bw[idx])
    np.testing.assert_allclose(shared.weighted_moments(wts), full.weighted_moments(wts), rtol=1e-12)
    np.testing.assert_array_equal(shared.sample(5, np.random.default_rng(1)), full.sample(5, np.random.default_rng(1)))
    # a sub-selection of columns uses only what it needs
    sub = shared.columns([6, 0])
    np.testing.assert_allclose(sub.quantiles(qs), ref[:, [6, 0]], atol=1e-9)


def test_column_index_validation_names_the_argument():
    with pytest.raises(ValueError, match=r"column_index must lie in \[0, 2\), got values from 0 to 5"):
        BetaMixture([1.0], np.ones((1, 2)), np.ones((1, 2)), column_index=[0, 5])
    with pytest.raises(ValueError, match=r"idx must lie in \[0, 2\), got 0 to 7"):
        BetaMixture.single([1.0, 2.0], [1.0, 1.0]).columns([0, 7])


def test_unpooled_strata_are_independent_jeffreys_free_betas():
    # strata excluded from pooling get Beta(1 + s, 1 + n - s); the others keep the pooled fit
    s = np.array([3, 5, 4, 40, 6, 40])
    n = np.array([50, 60, 55, 50, 70, 50])
    excl = np.array([False, False, False, True, False, True])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        post = hierarchical_grid(s, n, exclude=excl)
        pooled = hierarchical_grid(s[~excl], n[~excl])
    lo, hi = post.interval(0.9)
    np.testing.assert_allclose(lo[excl], stats.beta.ppf(0.05, 41, 11), atol=1e-9)
    np.testing.assert_allclose(hi[excl], stats.beta.ppf(0.95, 41, 11), atol=1e-9)
    plo, phi = pooled.interval(0.9)
    np.testing.assert_allclose(lo[~excl], plo, atol=1e-9)
    np.testing.assert_allclose(post.mean().to_numpy()[~excl], pooled.mean().to_numpy(), rtol=1e-12)
    assert post.mixture.n_distinct == pooled.mixture.n_distinct + 1  # one stored (41, 11) column


# -- exact quantiles --------------------------------------------------------------------------
def _extreme_counts(k: int = 900, seed: int = 0) -> Counts:
    rng = np.random.default_rng(seed)
    n = np.round(np.exp(rng.uniform(np.log(10), np.log(2000), k))).astype(int)
    s = rng.binomial(n, rng.beta(2, 30, k))
    extra_s = [0, 40, 0, 0, 1_000_000, 3, 999_990]
    extra_n = [40, 40, 0, 1_000_000, 1_000_000, 1_000_000, 1_000_000]
    return Counts.from_arrays(np.r_[s, extra_s], np.r_[n, extra_n])


def test_exact_quantiles_against_bisection_including_extreme_counts():
    # ~800 distinct pairs (several chunks of the solver) plus 0/n, n/n, n = 0 and a million
    # trials; the reference is bisection on scipy's CDF of the mixture on the quadrature points
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        fit = ExactFit(_extreme_counts())
    qs = np.array([0.5, 0.025, 0.975])
    got = fit.quantiles(qs)
    K = len(fit._s)
    cols = np.r_[np.random.default_rng(1).choice(K - 7, 40, replace=False), np.arange(K - 7, K)]
    pairs = fit._inverse[cols]
    mix = fit.mixture(pairs, fit._quadrature())
    W, A, B = mix.stacked()
    ref = bisect_quantiles(np.array(W), A, B, qs, iters=90)
    np.testing.assert_allclose(got[:, cols], ref, atol=1e-8)


def test_mixture_solver_meets_its_tolerance_at_extreme_parameters():
    rng = np.random.default_rng(7)
    G, J = 12, 30
    w = rng.dirichlet(np.ones(G))
    base_a = np.exp(rng.uniform(np.log(1e-2), np.log(5e6), J))
    base_b = np.exp(rng.uniform(np.log(1e-2), np.log(5e6), J))
    a = base_a[None, :] * rng.uniform(0.8, 1.25, (G, J))
    b = base_b[None, :] * rng.uniform(0.8, 1.25, (G, J))
    qs = np.array([0.01, 0.5, 0.99])
    got = BetaMixture(w, a, b).quantiles(qs)
    W = np.broadcast_to(w[:, None], a.shape)
    q = np.broadcast_to(qs[:, None], got.shape)
    # the CDF at the solution is q to 1e-8 (the verification threshold), by scipy, or the
    # solution is the double where the CDF crosses q, or it lies within 1e-12 of 0 or 1 (with
    # b = 0.03 the 0.99 quantile is closer to 1 than doubles resolve: the CDF jumps by
    # several percent between the last doubles below 1)
    near = np.abs(mixture_cdf(W, a, b, got) - q) <= 1e-8
    below = mixture_cdf(W, a, b, np.nextafter(got, 0.0)) <= q + 1e-8
    above = mixture_cdf(W, a, b, np.nextafter(got, 1.0)) >= q - 1e-8
    edge = (got < 1e-12) | (got > 1 - 1e-12)
    assert np.all(near | (below & above) | edge)
    assert np.count_nonzero(near) >= 80  # of 90 solutions


# -- allocation ----------------------------------------------------------------------------------
def _argmax_greedy(gain0, gain_one, p, cap, batch):
    """The plain rule: each label to the largest gain (lowest index on ties)."""
    g = gain0.copy()
    counts = np.zeros(len(g), np.int64)
    t = np.zeros(len(g))
    for _ in range(batch):
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += p[j]
        g[j] = -np.inf if counts[j] >= cap[j] else gain_one(j, t)
    return counts


@pytest.mark.parametrize("goal", ["each", "overall"])
def test_greedy_allocation_equals_the_argmax_rule(goal):
    rng = np.random.default_rng(5)
    k = 40
    trials = np.r_[np.full(10, 20), rng.integers(0, 200, k - 10)]  # ties among the first ten
    s = rng.binomial(trials, 0.1)
    st = RuleState.from_counts(s, trials, available=rng.integers(0, 30, k), target_halfwidth=0.03,
                               goal=goal)
    got = _greedy_width(st, 300)
    neff = st.posterior.n_eff().to_numpy()
    p = np.clip(st.p_trial(), 1e-6, 1.0)
    cap = st.available
    if goal == "overall":
        c = st.weights**2 * st.posterior.var().to_numpy() * neff

        def one(j, t):
            return c[j] / (neff[j] + t[j]) - c[j] / (neff[j] + t[j] + p[j])

        eligible = cap > 0
    else:
        hw = st.stop_halfwidths()
        tgt = np.where(st.stratum_done() | (hw > st.target_halfwidth), st.target_halfwidth, 0.0)

        def one(j, t):
            h0 = hw[j] * np.sqrt(neff[j] / (neff[j] + t[j]))
            h1 = hw[j] * np.sqrt(neff[j] / (neff[j] + t[j] + p[j]))
            return max(h0 - tgt[j], 0.0) - max(h1 - tgt[j], 0.0) + 1e-3 * (h0 - h1)

        eligible = (cap > 0) & ~st.stratum_done()
        if not eligible.any():
            eligible = cap > 0
    g0 = np.array([one(j, np.zeros(k)) if eligible[j] else -np.inf for j in range(k)])
    np.testing.assert_array_equal(got, _argmax_greedy(g0, one, p, cap, 300))
    assert got.sum() == min(300, int(cap[eligible].sum()))


# -- summaries and checks --------------------------------------------------------------------------
def test_shrinkage_is_the_mean_of_kappa_over_kappa_plus_n():
    post = fit_hierarchical([1, 9, 20, 9, 0], [30, 60, 80, 60, 0], random_seed=0, draws=800)
    kappa = np.asarray(post.hyper["kappa"], float).ravel()
    ref = [np.mean(kappa / (kappa + n)) for n in (30, 60, 80, 60, 0)]
    np.testing.assert_allclose(post.shrinkage().to_numpy(), ref, rtol=1e-12)


def test_loo_weights_once_per_distinct_pair_match_the_direct_formula():
    s = np.array([3, 4, 3, 9, 4, 3, 0])
    n = np.array([50, 50, 50, 40, 50, 50, 10])
    a, b, log_prior = _hyper_grid(0.02, 0.4, 12, 6, (0.5, 1e4))
    loglik = special.betaln(s[:, None] + a, (n - s)[:, None] + b) - special.betaln(a, b)
    logw = (loglik.sum(axis=0) + log_prior)[None, :] - loglik
    ref = np.exp(logw - special.logsumexp(logw, axis=1, keepdims=True))
    np.testing.assert_allclose(_loo_weights(s, n, a, b, log_prior), ref, rtol=1e-9, atol=1e-300)
    rows = np.array([False, True, False, True, True, False, False])
    np.testing.assert_allclose(_loo_weights(s, n, a, b, log_prior, rows), ref[rows], rtol=1e-9,
                               atol=1e-300)


def _dense_loo_weights(s, n, a, b, log_prior):
    """The leave-one-out weights on the full grid, every point computed (reference)."""
    pairs, inv, mult = np.unique(np.column_stack([s, n]), axis=0, return_inverse=True,
                                 return_counts=True)
    ps, pn = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    m = mult.astype(float)

    def sum_ratio(values, x):
        vals, j = np.unique(values, return_inverse=True)
        w = np.bincount(j.ravel(), weights=m, minlength=vals.size)
        return special.gammaln(x[None, :] + vals[:, None]).T @ w - w.sum() * special.gammaln(x)

    total = sum_ratio(ps, a) + sum_ratio(pn - ps, b) - sum_ratio(pn, a + b) + log_prior
    loglik = special.betaln(ps[:, None] + a[None, :], (pn - ps)[:, None] + b[None, :])
    loglik -= special.betaln(a, b)[None, :]
    logw = total[None, :] - loglik
    top = logw.max(axis=1, keepdims=True)
    logw -= top + np.log(np.exp(logw - top).sum(axis=1, keepdims=True))
    return np.exp(logw)[inv.ravel()]


def test_loo_weights_skip_only_points_that_underflow_to_zero():
    # many strata: the hyper-posterior is sharp and most grid points get weight exactly 0
    rng = np.random.default_rng(3)
    n = np.round(np.exp(rng.uniform(np.log(10), np.log(2000), 3000))).astype(int)
    n[:5] = 0
    s = rng.binomial(n, rng.beta(2, 30, n.size))
    a, b, log_prior = _hyper_grid(0.005, 0.5, 60, 20, (0.5, 1e6))
    ref = _dense_loo_weights(s, n, a, b, log_prior)
    got = _loo_weights(s, n, a, b, log_prior)
    assert (ref == 0).mean() > 0.5
    np.testing.assert_array_equal(got, ref)
    rows = rng.random(n.size) < 0.2
    np.testing.assert_array_equal(_loo_weights(s, n, a, b, log_prior, rows), ref[rows])


def test_conflict_p_values_once_per_distinct_pair_match_every_stratum():
    s = np.array([4, 6, 5, 3, 7, 4, 9, 4, 6])
    n = np.array([50, 70, 60, 40, 80, 50, 20, 50, 70])
    w, a, b = loo_beta_mixture(s, n)
    ref = predictive_p_values(s, n, w, a, b)
    got = loo_conflict(s, n, control="per_stratum")
    np.testing.assert_allclose(got.p_value, ref[0], rtol=1e-12)
    np.testing.assert_allclose(got.expected, ref[1], rtol=1e-12)


# -- campaign store ------------------------------------------------------------------------------
def test_store_stratum_keys_round_trip(tmp_path):
    from bayeseval.campaign.campaign import Campaign

    pool = pd.DataFrame({"g": ["a b", "é", "x", "x", "a b", "q\"uote"], "h": [1, 2, 3, 3, 1, 2],
                         "pred": [0, 1, 0, 1, 1, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)  # a tiny pool
        camp = Campaign.create(tmp_path / "c.db", pool, strata=["g", "h"], y_pred="pred",
                               target_halfwidth=0.3, batch_size=2, random_seed=0)
    camp.close()
    with sqlite3.connect(tmp_path / "c.db") as conn:
        stored = [json.loads(k) for (k,) in conn.execute("SELECT key FROM strata ORDER BY code")]
    assert sorted(map(tuple, stored)) == sorted({(g, h) for g, h in zip(pool["g"], pool["h"], strict=True)})
    camp = Campaign.open(tmp_path / "c.db")
    assert camp._store.strata()["key"].tolist() == stored
    camp.close()
