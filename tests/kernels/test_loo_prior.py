"""Tests of ``bayeseval._kernels.loo_prior``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from bayeseval._kernels.loo_prior import (
    _hyper_grid,
    _loo_weights,
    loo_beta_mixture,
    loo_mixture_groups,
)
from tests.kernels.helpers import _counts


def _dense_loo_weights(s, n, a, b, log_prior):
    """The leave-one-out weights on the full grid, every point computed (reference)."""
    pairs, inv, mult = np.unique(np.column_stack([s, n]), axis=0, return_inverse=True, return_counts=True)
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


def test_loo_prior_does_not_depend_on_own_count():
    s = np.array([3, 4, 5, 4, 6, 3, 30, 0])
    n = np.array([50, 60, 50, 40, 70, 50, 50, 30])
    w, a, b = loo_beta_mixture(s, n)
    for i, y in ((6, 2), (7, 30), (0, 50)):  # includes moving the min and the max
        s2 = s.copy()
        s2[i] = y
        w2, a2, b2 = loo_beta_mixture(s2, n)
        np.testing.assert_allclose(w2[i], w[i], atol=1e-12)
        np.testing.assert_array_equal(a2[i], a[i])
        np.testing.assert_array_equal(b2[i], b[i])


def test_loo_prior_mean_matches_brute_force_posterior():
    # Brute force: the same hierarchical model (p(alpha, beta) ~ (alpha + beta)^(-5/2),
    # mean restricted to the others' range of rates widened by 0.75 on the logit scale,
    # concentration in [0.5, 1e6]) integrated on an independent fine grid, linear in
    # the mean, with scipy's betabinom.
    s = np.array([5, 9, 12, 7, 30])
    n = np.array([60, 80, 100, 70, 60])
    w, a, b = loo_beta_mixture(s, n)
    mean_loo = (w * a / (a + b)).sum(axis=1)
    rates = (s + 0.5) / (n + 1)
    for i in (0, 4):
        others = np.arange(s.size) != i
        lo = special.expit(special.logit(rates[others].min()) - 0.75)
        hi = special.expit(special.logit(rates[others].max()) + 0.75)
        mu = np.linspace(lo, hi, 800)
        log_kappa = np.linspace(np.log(0.5), np.log(1e6), 200)
        mu_g, lk_g = np.meshgrid(mu, log_kappa, indexing="ij")
        kappa = np.exp(lk_g)
        log_prior = -1.5 * lk_g + lk_g  # kappa^(-3/2) d kappa = kappa^(-1/2) d log kappa
        loglik = sum(
            stats.betabinom.logpmf(sj, nj, mu_g * kappa, (1 - mu_g) * kappa)
            for sj, nj in zip(s[others], n[others], strict=True)
        )
        post = np.exp(loglik + log_prior - (loglik + log_prior).max())
        assert mean_loo[i] == pytest.approx((post * mu_g).sum() / post.sum(), abs=0.002)


def test_hyperprior_grid_uses_bda_density():
    # the grid weights must equal p(alpha, beta) (alpha + beta)^(-5/2) times the Jacobian
    # of (alpha, beta) -> (logit mu, log kappa), which is alpha * beta (closed form)
    from bayeseval._kernels.loo_prior import _hyper_grid

    a, b, log_prior = _hyper_grid(0.05, 0.6, 7, 5, (1.0, 100.0))
    expect = -2.5 * np.log(a + b) + np.log(a * b)
    diff = log_prior - expect
    assert np.ptp(diff) < 1e-10
    assert special.logit(0.05) == pytest.approx(np.log(a / b).min())


def test_mixtures_of_selected_strata_equal_those_rows_of_the_full_result():
    s, n = _counts(40)
    rows = np.zeros(40, bool)
    rows[[0, 7, 39]] = True
    full = loo_beta_mixture(s, n)
    part = loo_beta_mixture(s, n, rows=rows)
    for f, p in zip(full, part, strict=True):
        assert p.shape == (3, f.shape[1])
        np.testing.assert_array_equal(p, f[rows])
    with pytest.raises(ValueError, match="rows must be a boolean mask of length 40"):
        loo_beta_mixture(s, n, rows=np.ones(3, bool))


def test_mixture_groups_are_the_rows_of_the_full_mixtures():
    s, n = _counts(50, seed=2)
    rows = np.arange(50) % 3 == 0
    rate = (s + 0.5) / (n + 1.0)
    rows[[np.argmin(rate), np.argmax(rate)]] = True  # their grids differ from the others'
    w, a, b = loo_beta_mixture(s, n, rows=rows)
    size, groups = loo_mixture_groups(s, n, rows=rows)
    assert size == rows.sum() and len(groups) == 3
    seen = np.concatenate([pos for pos, *_ in groups])
    np.testing.assert_array_equal(np.sort(seen), np.arange(size))
    for pos, wg, ag, bg in groups:
        np.testing.assert_array_equal(wg, w[pos])
        np.testing.assert_array_equal(np.broadcast_to(ag, (pos.size, ag.size)), a[pos])
        np.testing.assert_array_equal(np.broadcast_to(bg, (pos.size, bg.size)), b[pos])


def test_loo_weights_once_per_distinct_pair_match_the_direct_formula():
    s = np.array([3, 4, 3, 9, 4, 3, 0])
    n = np.array([50, 50, 50, 40, 50, 50, 10])
    a, b, log_prior = _hyper_grid(0.02, 0.4, 12, 6, (0.5, 1e4))
    loglik = special.betaln(s[:, None] + a, (n - s)[:, None] + b) - special.betaln(a, b)
    logw = (loglik.sum(axis=0) + log_prior)[None, :] - loglik
    ref = np.exp(logw - special.logsumexp(logw, axis=1, keepdims=True))
    np.testing.assert_allclose(_loo_weights(s, n, a, b, log_prior), ref, rtol=1e-9, atol=1e-300)
    rows = np.array([False, True, False, True, True, False, False])
    np.testing.assert_allclose(_loo_weights(s, n, a, b, log_prior, rows), ref[rows], rtol=1e-9, atol=1e-300)


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
