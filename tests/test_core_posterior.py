"""Tests of the shared posterior kernels: the Beta mixture, the hyper-grid integrator (fast and
accurate presets) and the predictive-check kernel, against independent references."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import integrate as sp_integrate
from scipy import optimize, stats
from scipy.special import betaln, expit
from test_exact import RATS_N, RATS_Y

from bayeseval import PrecisionLimitedWarning
from bayeseval._kernels.grid import integrate
from bayeseval._kernels.mixture import BetaMixture
from bayeseval._kernels.ppc import Nodes, betabinom_mixture_pmf, loo_mixed_check, loo_weights, mid_p
from bayeseval.campaign.posterior import MixturePosterior, hierarchical_grid, outlying_strata
from bayeseval.campaign.state import RuleState
from bayeseval.counts.counts import Counts
from bayeseval.models import fit_hierarchical
from bayeseval.models.exact import ExactFit


def random_mixture(seed: int, G: int = 6, K: int = 3, robust: bool = False) -> BetaMixture:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(G))
    a = rng.uniform(0.5, 30.0, (G, K))
    b = rng.uniform(0.5, 60.0, (G, K))
    if not robust:
        return BetaMixture(w, a, b)
    return BetaMixture(w, a, b, resp=rng.uniform(0.2, 1.0, (G, K)),
                       a_wide=rng.uniform(1, 5, K), b_wide=rng.uniform(1, 5, K))


def scipy_components(mix: BetaMixture, k: int) -> list[tuple[float, float, float]]:
    """The mixture of column k as (weight, a, b) triples, built from the raw arrays."""
    out = []
    for g in range(mix.weights.size):
        r = 1.0 if mix.resp is None else mix.resp[g, k]
        out.append((mix.weights[g] * r, mix.a[g, k], mix.b[g, k]))
        if mix.resp is not None:
            out.append((mix.weights[g] * (1 - r), mix.a_wide[k], mix.b_wide[k]))
    return out


# -- Beta mixture ------------------------------------------------------------------------------
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
                2, mix.a_wide[k], mix.b_wide[k])
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


# -- grid integrator ---------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["fast", "accurate"])
def test_integrator_gaussian_moments(preset):
    # correlated Gaussian: mean (1, 2), sd (0.5, 2), correlation 0.6 (closed-form moments)
    cov = np.array([[0.25, 0.6], [0.6, 4.0]])
    prec = np.linalg.inv(cov)

    def log_post(u, v):
        d = np.stack([u - 1.0, v - 2.0])
        return -0.5 * np.einsum("i...,ij,j...->...", d, prec, d)

    g = integrate(log_post, ((-20, 20), (-20, 20)), preset=preset)
    assert g.weights.sum() == pytest.approx(1.0)
    assert g.weights @ g.u == pytest.approx(1.0, abs=2e-3)
    assert g.weights @ g.v == pytest.approx(2.0, abs=1e-2)
    assert g.weights @ (g.u - 1) ** 2 == pytest.approx(0.25, rel=0.02)
    assert g.weights @ ((g.u - 1) * (g.v - 2)) == pytest.approx(0.6, rel=0.02)
    # log evidence of exp(-d'Pd/2) is log(2 pi sqrt(det cov))
    assert g.log_evidence == pytest.approx(np.log(2 * np.pi * np.sqrt(np.linalg.det(cov))), abs=0.02)


def test_unknown_preset_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match=r"unknown preset 'quick'; valid choices are \['accurate', 'fast'\]"):
        integrate(lambda u, v: -(u**2) - v**2, ((-5, 5), (-5, 5)), preset="quick")
    with pytest.raises(ValueError, match=r"unknown preset 'quick'"):
        ExactFit(Counts.from_arrays([1, 2], [10, 10]), preset="quick")


def _dense_reference(s, n, m=600):
    """Midpoint rule on a fixed dense box (default prior) for the theta means and the
    variance of the equally weighted rate; independent of the adaptive grid code."""
    kappa_prior = stats.lognorm(2.5, scale=20.0)
    u = np.linspace(-6.0, 4.0, m)
    v = np.linspace(np.log(1e-4), np.log(1e6), m)
    U, V = np.meshgrid(u, v, indexing="ij")
    mu, kappa = expit(U).ravel(), np.exp(V).ravel()
    a, b = mu * kappa, (1 - mu) * kappa
    lp = kappa_prior.logpdf(kappa) + np.log(mu * (1 - mu)) + V.ravel()
    for sk, nk in zip(s, n, strict=True):
        lp += betaln(a + sk, b + nk - sk) - betaln(a, b)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    A, B = a[:, None] + s, b[:, None] + (n - s)
    m1 = A / (A + B)
    v1 = m1 * (1 - m1) / (A + B + 1)
    wk = np.full(len(s), 1 / len(s))
    cm = m1 @ wk
    wvar = w @ (v1 @ wk**2 + cm**2) - (w @ cm) ** 2
    return w @ m1, wvar


def test_fast_preset_against_a_dense_reference_with_few_strata():
    # four strata: a funnel-shaped posterior of (logit mu, log kappa); the fast preset keeps the
    # rates' means within 1e-3 and the weighted rate's variance within 5% of a 600 x 600 grid
    s, n = np.array([64, 23, 9, 5]), np.array([145, 53, 33, 9])
    ref_mean, ref_wvar = _dense_reference(s, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        fit = ExactFit(Counts.from_arrays(s, n), preset="fast")
    mix = fit.stratum_mixture()
    np.testing.assert_allclose(mix.mean(), ref_mean, atol=1e-3)
    assert mix.weighted_moments(np.full(4, 0.25))[1] == pytest.approx(ref_wvar, rel=0.05)


@pytest.mark.parametrize("model", ["beta_binomial", "robust"])
def test_fast_preset_matches_accurate_preset(model):
    # tolerance: 2e-4 on means and 95% bounds (the campaign's grid on the rat tumour data of
    # BDA3 Table 5.1 and a 60-stratum simulated set)
    rng = np.random.default_rng(4)
    n60 = rng.integers(5, 300, 60)
    s60 = rng.binomial(n60, rng.beta(4, 28, 60))
    for s, n in ((RATS_Y, RATS_N), (s60, n60)):
        c = Counts.from_arrays(s, n)
        fast, acc = ExactFit(c, model=model, preset="fast"), ExactFit(c, model=model)
        np.testing.assert_allclose(fast.posterior_moments()[0], acc.posterior_moments()[0], atol=2e-4)
        np.testing.assert_allclose(fast.quantiles([0.025, 0.975]), acc.quantiles([0.025, 0.975]), atol=2e-4)
        assert fast.diagnostics["preset"] == "fast" and fast.grid_size == 20


def test_fast_preset_rats_bda_prior_matches_bda3():
    # BDA3 section 5.3: the posterior of (alpha, beta) centred near alpha = 2.4, beta = 14.3
    fit = ExactFit(Counts.from_arrays(RATS_Y, RATS_N), prior="bda", preset="fast")
    kappa = np.exp(fit.grid_v)
    assert fit.weights @ (expit(fit.grid_u) * kappa) == pytest.approx(2.4, abs=0.1)
    assert fit.weights @ (expit(-fit.grid_u) * kappa) == pytest.approx(14.3, abs=0.5)


def test_campaign_posterior_is_the_fast_exact_fit():
    s, n = np.array([3, 5, 4, 60, 2, 6]), np.array([50, 60, 45, 100, 30, 70])
    post = hierarchical_grid(s, n, model="robust")
    assert isinstance(post, MixturePosterior)
    fit = ExactFit(Counts.from_arrays(s, n), model="robust", preset="fast")
    np.testing.assert_allclose(post.mean(), fit.posterior_moments()[0], rtol=1e-12)
    np.testing.assert_allclose(post.outlier_probability(), fit.outlier_probability(), rtol=1e-12)
    assert post.outliers == [3]


def test_campaign_prior_mean_is_validated_like_the_exact_engine():
    # the campaign grid used to clip prior means silently; both now raise
    with pytest.raises(ValueError, match=r"prior_mean values must be strictly between 0 and 1, got \[0.0\]"):
        hierarchical_grid([1, 2, 3], [10, 10, 10], prior_mean=[0.1, 0.0, 0.2])
    st = RuleState.from_counts([1, 2, 3], [10, 10, 10], available=[5, 5, 5], prior_mean=np.array([0.1, 1.2, 0.2]))
    with pytest.raises(ValueError, match=r"prior_mean values must be strictly between 0 and 1, got \[1.2\]"):
        st.posterior  # noqa: B018


def test_posterior_weighted_moments_exact_and_from_draws():
    s, n = np.array([3, 10, 30]), np.array([30, 60, 100])
    post = fit_hierarchical(s, n, draws=40_000, random_seed=0)
    w = np.array([0.5, 0.3, 0.2])
    mean, var = post.weighted_moments(w)
    d = post.weighted(w)  # draws of the same quantity: sd of the mean ~ 1e-4
    assert mean == pytest.approx(d.mean(), abs=6e-4)
    assert var == pytest.approx(d.var(), rel=0.03)


# -- predictive-check kernel ---------------------------------------------------------------------
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


def test_outlying_strata_level():
    s, n = np.array([4, 5, 6, 5, 40, 6]), np.full(6, 50)
    post = hierarchical_grid(s, n)
    flags = outlying_strata(post, s, n, level=0.99)
    assert flags.tolist() == [False, False, False, False, True, False]
    with pytest.raises(ValueError, match=r"level must be .*1\.5"):
        outlying_strata(post, s, n, level=1.5)
    with pytest.raises(ValueError, match=r"successes and trials must be the counts the posterior was fitted to"):
        outlying_strata(post, s + 1, n)


def test_campaign_check_and_model_check_agree_on_the_planted_outlier():
    # one kernel: the campaign's flags and posterior_predictive_check's cross-validated check
    from bayeseval.checks import posterior_predictive_check

    rng = np.random.default_rng([8, 1])
    theta = rng.beta(20, 180, size=15)
    theta[-1] = 0.35
    n = np.full(15, 100)
    s = rng.binomial(n, theta)
    flags = outlying_strata(hierarchical_grid(s, n), s, n, level=0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ppc = posterior_predictive_check(fit_hierarchical(s, n, random_seed=0), random_seed=0)
    assert list(np.flatnonzero(flags)) == ppc.outliers == [14]


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
