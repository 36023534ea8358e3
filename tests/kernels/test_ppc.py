"""Tests of ``bayeseval._kernels.ppc``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from bayeseval._kernels.ppc import (
    Nodes,
    betabinom_mixture_pmf,
    loo_mixed_check,
    loo_weights,
    mid_p,
    mixture_mid_p,
)
from bayeseval._kernels.ppc import mid_p as _mid_p


def _reference(s, n, w, a, b):
    """Lower and upper mid-p of the mixture from SciPy's log pmf, summed in logs."""
    k = np.arange(n + 1)
    logpmf = special.logsumexp(
        np.log(w)[:, None] + stats.betabinom.logpmf(k[None, :], n, a[:, None], b[:, None]), axis=0
    )
    half = logpmf[s] - np.log(2.0)
    lower = np.logaddexp(special.logsumexp(logpmf[:s]) if s else -np.inf, half)
    upper = np.logaddexp(special.logsumexp(logpmf[s + 1 :]) if s < n else -np.inf, half)
    return lower, upper


def test_mid_p_by_hand():
    rep = np.tile(np.arange(10), 100)[:, None]  # uniform on 0..9
    # obs 3: P(<3) = 0.3, P(=3) = 0.1 -> lower mid-p 0.35, two-sided 0.70
    lower, p = _mid_p(rep, np.array([3]))
    assert lower[0] == pytest.approx(0.35) and p[0] == pytest.approx(0.70)
    # obs 0: lower 0.05 -> 0.10; obs 9: lower 0.95 -> 0.10; obs 12: lower 1 -> 0
    _, p = _mid_p(np.repeat(rep, 3, axis=1), np.array([0, 9, 12]))
    assert p.tolist() == pytest.approx([0.10, 0.10, 0.0])


def test_betabinom_mixture_pmf_matches_scipy():
    w = np.array([0.3, 0.7])
    a, b = np.array([2.0, 5.0]), np.array([9.0, 3.0])
    ref = 0.3 * stats.betabinom.pmf(np.arange(26), 25, 2, 9) + 0.7 * stats.betabinom.pmf(np.arange(26), 25, 5, 3)
    np.testing.assert_allclose(betabinom_mixture_pmf(25, w, a, b), ref, atol=1e-14)


def test_loo_check_against_direct_monte_carlo():
    # nodes: 400 hyperparameter draws; stratum 3 is far from the others. Reference: leave-one-out
    # weights computed with scipy's betabinom, then 200,000 seeded replicates (a node, a fresh
    # rate, a binomial count); the mid-p of a proportion has sd <= 0.0012 (allow 0.005)
    rng = np.random.default_rng(11)
    G = 400
    mu, kappa = rng.beta(10, 90, G), np.exp(rng.normal(4.0, 0.5, G))
    s, n = np.array([9, 12, 7, 30, 11]), np.array([100, 120, 80, 100, 90])
    a = np.tile((mu * kappa)[:, None], (1, 5))
    b = np.tile(((1 - mu) * kappa)[:, None], (1, 5))
    ll = stats.betabinom.logpmf(s[None, :], n[None, :], a, b)
    nodes = Nodes(np.full(G, 1 / G), a, b, ll)
    res = loo_mixed_check(s, n, nodes, level=0.95)
    for k in range(5):
        wl = np.exp(-ll[:, k]) / np.exp(-ll[:, k]).sum()
        g = rng.choice(G, size=200_000, p=wl)
        rep = rng.binomial(n[k], rng.beta(a[g, k], b[g, k]))
        lower, p = mid_p(rep[:, None], np.array([s[k]]))
        assert res["lower"][k] == pytest.approx(lower[0], abs=0.005)
        assert res["p_value"][k] == pytest.approx(p[0], abs=0.01)
        lo, hi = np.quantile(rep, [0.025, 0.975], method="lower"), np.quantile(rep, 0.975, method="higher")
        assert abs(res["pred_lower"][k] - lo[0]) <= 1 and abs(res["pred_upper"][k] - hi) <= 1
    assert res["flag"].tolist() == [False, False, False, True, False]
    # leave-one-out weights: proportional to w_g / p(s_k | g)
    np.testing.assert_allclose(loo_weights(nodes.weights, ll)[:, 3], np.exp(-ll[:, 3]) / np.exp(-ll[:, 3]).sum())


def test_robust_population_adds_the_uniform_component():
    # with eps = 0.2 the predictive pmf is 0.8 BetaBin + 0.2 / (n + 1)
    nodes = Nodes(np.array([1.0]), np.array([[3.0]]), np.array([[27.0]]), np.zeros((1, 1)), outlier_prob=0.2)
    res = loo_mixed_check(np.array([12]), np.array([40]), nodes, level=0.95)
    x = np.arange(41)
    pmf = 0.8 * stats.betabinom.pmf(x, 40, 3, 27) + 0.2 / 41
    lower = pmf[:12].sum() + 0.5 * pmf[12]
    assert res["lower"][0] == pytest.approx(lower, abs=1e-12)
    assert res["p_value"][0] == pytest.approx(2 * min(lower, 1 - lower), abs=1e-12)


def test_large_predictives_are_sampled_with_a_seed(monkeypatch):
    # above the tabulation budget the kernel samples 20,000 replicates; against the exact pmf
    # the lower mid-p has sd <= 0.0036 (allow 0.015)
    import bayeseval._kernels.ppc as ppc

    w, a, b = np.array([0.4, 0.6]), np.array([4.0, 9.0]), np.array([40.0, 60.0])
    exact = ppc.mixture_mid_p(14, 120, w, a, b)
    monkeypatch.setattr(ppc, "_MAX_CELLS", 10)
    sampled = ppc.mixture_mid_p(14, 120, w, a, b, rng=np.random.default_rng(3))
    assert sampled[0] == pytest.approx(exact[0], abs=0.015)
    assert abs(sampled[2] - exact[2]) <= 1 and abs(sampled[3] - exact[3]) <= 1
    assert sampled == ppc.mixture_mid_p(14, 120, w, a, b, rng=np.random.default_rng(3))


@pytest.mark.parametrize(
    ("s", "n", "w", "a", "b"),
    [
        # far in the upper tail: 1 - P- would round to 0 (p about 1e-60)
        (32_000, 100_000, [1.0], [2e3], [8e3]),
        # a two-component mixture with 100,000 trials, tabulated: p about 2e-220
        (9_000, 100_000, [0.7, 0.3], [4e3, 2e3], [1.6e4, 8e3]),
        # 41 components x 100,001 counts: the interval is simulated, the p-value is not
        pytest.param(
            29_000,
            100_000,
            np.full(41, 1 / 41),
            np.linspace(1e3, 2e3, 41),
            np.linspace(4e3, 8e3, 41),
            marks=pytest.mark.slow,
        ),  # SciPy's reference: 3 s
    ],
)
def test_mid_p_values_match_scipy_far_in_the_tails(s, n, w, a, b):
    w, a, b = (np.asarray(v, float) for v in (w, a, b))
    lower, p, lo, hi = mixture_mid_p(s, n, w, a, b, rng=np.random.default_rng(0))
    ref_lower, ref_upper = _reference(s, n, w, a, b)
    assert lower == pytest.approx(min(np.exp(ref_lower), 1.0), rel=1e-7)
    ref_p = np.exp(np.log(2.0) + min(ref_lower, ref_upper))
    assert 0.0 < p < 1e-40
    assert p == pytest.approx(ref_p, rel=1e-7)
    assert lo <= hi <= n


def test_loo_weights_keep_nodes_whose_mass_underflowed():
    # Node masses e^-900, e^-1 and 1 (the first is 0 as a double) and the held-out stratum's
    # likelihoods e^-1000, e^-2 and e^-50 there: leaving it out gives masses proportional to
    # e^100, e^1 and e^50, by hand.
    log_w = np.array([-900.0, -1.0, 0.0])
    ll = np.array([[-1000.0], [-2.0], [-50.0]])
    ref = np.exp(np.array([100.0, 1.0, 50.0]) - special.logsumexp([100.0, 1.0, 50.0]))
    np.testing.assert_allclose(loo_weights(np.exp(log_w), ll, log_w)[:, 0], ref, rtol=1e-12)
    # without log masses a node of mass 0 stays at 0 (it used to be floored at 1e-300, which
    # a likelihood of e^-1000 turned into all the weight)
    rest = np.exp(np.array([1.0, 50.0]) - special.logsumexp([1.0, 50.0]))
    np.testing.assert_allclose(loo_weights(np.exp(log_w), ll)[:, 0], [0.0, *rest], rtol=1e-12)


def test_a_column_whose_leave_one_out_mass_leaves_the_grid_is_refitted():
    # Sixty nodes on a line, the last on an open edge of the grid. Column 0's own likelihood
    # is far higher at the first nodes, so leaving it out piles its mass on the open edge:
    # its predictive comes from the refit (a Beta(30, 70) population here, reference SciPy),
    # column 1 (flat likelihood) keeps the reweighted nodes.
    G = 60
    w = np.full(G, 1 / G)
    a = np.tile(np.linspace(5.0, 15.0, G)[:, None], (1, 2))
    b = 100.0 - a
    ll = np.column_stack([np.linspace(0.0, -40.0, G), np.zeros(G)])
    calls = []

    def refit(k):
        calls.append(k)
        return np.array([1.0]), np.array([30.0]), np.array([70.0])

    edge = np.zeros(G, bool)
    edge[-1] = True
    res = loo_mixed_check(
        np.array([31, 9]), np.array([100, 100]), Nodes(w, a, b, ll, open_edge=edge, refit=refit), level=0.95
    )
    assert calls == [0]
    lower = stats.betabinom.cdf(30, 100, 30, 70) + 0.5 * stats.betabinom.pmf(31, 100, 30, 70)
    assert res["lower"][0] == pytest.approx(lower, rel=1e-9)
    x = np.arange(101)
    mix = w @ stats.betabinom.pmf(x[None, :], 100, a[:, 1:2], b[:, 1:2])
    assert res["lower"][1] == pytest.approx(mix[:9].sum() + 0.5 * mix[9], rel=1e-9)
    # without a refit the reweighted nodes are used
    res = loo_mixed_check(np.array([31, 9]), np.array([100, 100]), Nodes(w, a, b, ll, open_edge=edge), level=0.95)
    wl = np.exp(-ll[:, 0]) / np.exp(-ll[:, 0]).sum()
    ref = wl @ (stats.betabinom.cdf(30, 100, a[:, 0], b[:, 0]) + 0.5 * stats.betabinom.pmf(31, 100, a[:, 0], b[:, 0]))
    assert res["lower"][0] == pytest.approx(ref, rel=1e-6)
