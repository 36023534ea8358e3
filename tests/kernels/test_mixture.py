"""Tests of the shared posterior kernels: the Beta mixture, the hyper-grid integrator (fast and
accurate presets) and the predictive-check kernel, against independent references.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate as sp_integrate
from scipy import optimize, special, stats

from bayeseval._kernels.mixture import BetaMixture
from tests.helpers import bisect_quantiles


def random_mixture(seed: int, G: int = 6, K: int = 3, robust: bool = False) -> BetaMixture:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(G))
    a = rng.uniform(0.5, 30.0, (G, K))
    b = rng.uniform(0.5, 60.0, (G, K))
    if not robust:
        return BetaMixture(w, a, b)
    return BetaMixture(
        w, a, b, resp=rng.uniform(0.2, 1.0, (G, K)), a_wide=rng.uniform(1, 5, K), b_wide=rng.uniform(1, 5, K)
    )


def scipy_components(mix: BetaMixture, k: int) -> list[tuple[float, float, float]]:
    """The mixture of column k as (weight, a, b) triples, built from the raw arrays."""
    out = []
    for g in range(mix.weights.size):
        r = 1.0 if mix.resp is None else mix.resp[g, k]
        out.append((mix.weights[g] * r, mix.a[g, k], mix.b[g, k]))
        if mix.resp is not None:
            out.append((mix.weights[g] * (1 - r), mix.a_wide[k], mix.b_wide[k]))
    return out


def mixture_cdf(W, A, B, x):
    """P(theta_j <= x_j) by scipy, x of shape (Q, J)."""
    return np.einsum("gj,gqj->qj", W, special.betainc(A[:, None, :], B[:, None, :], x[None]))


@pytest.mark.parametrize("robust", [False, True])
def test_mixture_cdf_moments_quantiles_against_scipy(robust):
    mix = random_mixture(1, robust=robust)
    for k in range(mix.n_columns):
        cw, ca, cb = np.array(scipy_components(mix, k)).T

        def cdf(x, cw=cw, ca=ca, cb=cb):
            return float(cw @ stats.beta.cdf(x, ca, cb))

        def pdf(x, cw=cw, ca=ca, cb=cb):
            return float(cw @ stats.beta.pdf(x, ca, cb))

        # moments by numerical integration of x pdf(x) and x^2 pdf(x) (quad error ~1e-10)
        m1 = sp_integrate.quad(lambda x: x * pdf(x), 0, 1, limit=200)[0]
        m2 = sp_integrate.quad(lambda x: x * x * pdf(x), 0, 1, limit=200)[0]
        assert mix.mean()[k] == pytest.approx(m1, abs=1e-8)
        assert mix.var()[k] == pytest.approx(m2 - m1**2, abs=1e-8)
        for x in (0.05, 0.2, 0.5):
            assert mix.cdf(x)[k] == pytest.approx(cdf(x), abs=1e-12)
        # quantiles: brentq root of the scipy mixture CDF
        for q in (0.025, 0.5, 0.975):
            ref = optimize.brentq(lambda x, q=q: cdf(x) - q, 1e-12, 1 - 1e-12, xtol=1e-14)
            assert mix.quantiles(q)[k] == pytest.approx(ref, abs=1e-8)


def test_mixture_quantiles_by_exact_enumeration_of_a_two_point_mixture():
    # equal mixture of Beta(1, 1) and Beta(2, 1): F(x) = (x + x^2) / 2, so the q-quantile is
    # the positive root of x^2 + x - 2q = 0
    mix = BetaMixture([0.5, 0.5], [[1.0], [2.0]], [[1.0], [1.0]])
    qs = np.array([0.01, 0.3, 0.5, 0.9])
    np.testing.assert_allclose(mix.quantiles(qs)[:, 0], (-1 + np.sqrt(1 + 8 * qs)) / 2, atol=1e-10)
    lo, hi = mix.interval(0.8)
    np.testing.assert_allclose([lo[0], hi[0]], (-1 + np.sqrt(1 + 8 * np.array([0.1, 0.9]))) / 2, atol=1e-10)


def test_weighted_moments_closed_form_and_draws():
    mix = random_mixture(2, robust=True)
    w = np.array([0.2, 0.5, 0.3])
    # closed form: given node g the columns are independent with moments m_gk, v_gk
    cond_mean = np.zeros(mix.weights.size)
    cond_var = np.zeros(mix.weights.size)
    for g in range(mix.weights.size):
        for k in range(3):
            r = mix.resp[g, k]
            m_main, m_wide = stats.beta.mean(mix.a[g, k], mix.b[g, k]), stats.beta.mean(mix.a_wide[k], mix.b_wide[k])
            e2 = r * stats.beta.moment(2, mix.a[g, k], mix.b[g, k]) + (1 - r) * stats.beta.moment(
                2, mix.a_wide[k], mix.b_wide[k]
            )
            m = r * m_main + (1 - r) * m_wide
            cond_mean[g] += w[k] * m
            cond_var[g] += w[k] ** 2 * (e2 - m * m)
    mean = mix.weights @ cond_mean
    var = mix.weights @ (cond_var + cond_mean**2) - mean**2
    got_mean, got_var = mix.weighted_moments(w)
    assert got_mean == pytest.approx(mean, rel=1e-12)
    assert got_var == pytest.approx(var, rel=1e-10)
    # seeded draws: 200,000 draws, sd of the mean < 3e-4 here (allow 1.5e-3); sd within 2%
    d = mix.weighted_draws(w, 200_000, np.random.default_rng(0))
    assert d.mean() == pytest.approx(mean, abs=1.5e-3)
    assert d.std() == pytest.approx(np.sqrt(var), rel=0.02)


def test_mixture_validation_names_the_argument():
    with pytest.raises(ValueError, match=r"a and b must have shape .*\(2, 1\) and \(2, 2\)"):
        BetaMixture([0.5, 0.5], np.ones((2, 1)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"weights must be non-negative.*-0.5"):
        BetaMixture([-0.5, 1.5], np.ones((2, 1)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="resp needs a_wide and b_wide"):
        BetaMixture([1.0], np.ones((1, 1)), np.ones((1, 1)), resp=[[0.5]])
    mix = BetaMixture.single([1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"weights must have one value per column \(2\), got shape \(3,\)"):
        mix.weighted_moments([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match=r"q must be strictly between 0 and 1, got \[0.0, 0.5\]"):
        mix.quantiles([0.0, 0.5])


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
