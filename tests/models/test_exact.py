"""Tests of the exact grid engine (bayeseval.models.exact) and the robust model."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest
from hypothesis import given
from scipy import stats
from scipy.special import betaln, expit

from bayeseval import (
    Counts,
    ZeroVarianceWarning,
    fit_hierarchical,
    proportion_ci,
    stratified_risk,
    tabulate,
)
from bayeseval._api.warnings import BayesevalWarning, PrecisionLimitedWarning
from bayeseval._kernels.grid import integrate
from bayeseval.models.exact import ExactFit, prior_offsets
from bayeseval.models.robust import fit_robust, robust_logpmf
from tests.helpers import (
    BIG,
    RATS_N,
    RATS_Y,
    SLOWER,
    WEIGHTS,
    assert_raises_naming,
    bisect_quantiles,
    count_arrays,
    load_result,
)

matplotlib.use("Agg")


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


# Efron and Morris (1975), Table 1 (tests/results/efron_morris_1975.csv): hits in the first 45
# at-bats of 1970 for 18 players and their average over the rest of the season
BASEBALL = load_result("efron_morris_1975")


def _brute_force(s, n, log_prior, u_range, v_range, m=500):
    """Independent midpoint-rule integration over (logit mu, log kappa) on a fixed fine grid.

    The likelihood is the Beta-binomial ratio of Beta functions (no gammaln tables, no
    adaptive box), the prior is given as a density of (mu, kappa) and the Jacobian of
    (u, v) -> (mu, kappa) is added here.
    """
    u = np.linspace(*u_range, m)
    v = np.linspace(*v_range, m)
    U, V = np.meshgrid(u, v, indexing="ij")
    mu, kappa = expit(U), np.exp(V)
    a, b = mu * kappa, (1 - mu) * kappa
    ll = np.zeros_like(U)
    pairs, mult = np.unique(np.column_stack([s, n]), axis=0, return_counts=True)
    for (sk, nk), c in zip(pairs, mult, strict=True):
        # Beta-binomial log pmf up to the binomial coefficient: B(a + s, b + n - s) / B(a, b)
        ll += c * (betaln(a + sk, b + nk - sk) - betaln(a, b))
    lp = ll + log_prior(mu, kappa) + np.log(mu * (1 - mu)) + V
    w = np.exp(lp - lp.max())
    w /= w.sum()
    theta_mean = np.array([np.sum(w * (a + sk) / (kappa + nk)) for sk, nk in zip(s, n, strict=True)])
    return {
        "mu": np.sum(w * mu),
        "kappa": np.sum(w * kappa),
        "log_kappa": np.sum(w * V),
        "theta": theta_mean,
        "alpha": np.sum(w * a),
        "beta": np.sum(w * b),
    }


def _sbc_ranks(n_reps, n_draws, seed):
    rng = np.random.default_rng(seed)
    n = np.array([10, 25, 40, 60, 15, 80])
    ranks = np.empty((n_reps, 2), dtype=int)
    prior_mu, prior_kappa = stats.beta(1, 1), stats.lognorm(2.5, scale=20.0)
    for r in range(n_reps):
        mu, kappa = prior_mu.rvs(random_state=rng), prior_kappa.rvs(random_state=rng)
        theta = rng.beta(max(mu * kappa, 1e-12), max((1 - mu) * kappa, 1e-12), size=n.size)
        s = rng.binomial(n, theta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrecisionLimitedWarning)
            post = fit_hierarchical(s, n, draws=n_draws, random_seed=rng.integers(2**32))
        ranks[r, 0] = np.sum(post.draws("mu") < mu)
        ranks[r, 1] = np.sum(post.theta[:, 0] < theta[0])
    return ranks


def _uniformity_pvalue(ranks, n_draws, bins):
    hist = np.bincount(ranks * bins // (n_draws + 1), minlength=bins)
    return stats.chisquare(hist).pvalue


def _outlier_dataset(rng):
    """14 strata with rates from Beta(8, 80) clipped to [0.03, 0.15], one stratum at 0.35."""
    true = np.r_[np.clip(rng.beta(8, 80, 14), 0.03, 0.15), 0.35]
    n = rng.integers(40, 201, 15)
    return true, n, rng.binomial(n, true)


def _robust_study(n_reps, seed, level=0.9):
    """Mean width ratio (robust / plain) and coverage of the 14 ordinary strata."""
    rng = np.random.default_rng(seed)
    ratio, cover_plain, cover_robust = [], [], []
    tail = (1 - level) / 2
    for _ in range(n_reps):
        true, n, s = _outlier_dataset(rng)
        c = Counts.from_arrays(s, n)
        q = {}
        for model in ("beta_binomial", "robust"):
            # equal-tailed intervals from 4000 exact draws (the exact mixture quantiles agree to
            # Monte Carlo error and are slower)
            post = fit_hierarchical(c, model=model, draws=4000, random_seed=rng.integers(2**32))
            q[model] = np.quantile(post.theta, [tail, 1 - tail], axis=0)
        qp, qr = q["beta_binomial"], q["robust"]
        ratio.append((qr[1] - qr[0])[:14].mean() / (qp[1] - qp[0])[:14].mean())
        cover_plain.append(((qp[0] <= true) & (true <= qp[1]))[:14].mean())
        cover_robust.append(((qr[0] <= true) & (true <= qr[1]))[:14].mean())
    return np.array(ratio), np.mean(cover_plain), np.mean(cover_robust)


def _outlier_design():
    """The deterministic 15-stratum design of test_robust_model_keeps_pooling_with_one_outlier."""
    true = np.r_[np.clip(stats.beta(8, 80).ppf((np.arange(14) + 0.5) / 14), 0.03, 0.15), 0.35]
    n = np.linspace(40, 200, 15).astype(int)
    return np.round(n * true).astype(int), n


def _generated(k, seed=0):
    """The simulated data of benchmarks/bench_exact.py: trials log-uniform in [10, 2000]."""
    rng = np.random.default_rng(seed)
    n = np.round(np.exp(rng.uniform(np.log(10), np.log(2000), k))).astype(int)
    return rng.binomial(n, rng.beta(2, 30, k)), n


def _brute_force_quantiles(fit, qs, strata):
    """Invert the mixture CDF by 60 bisection steps on [0, 1] with scipy.stats.beta.cdf.

    The mixture is the engine's quadrature grid (``fit._quadrature()``: points and weights).
    For the plain model its Beta components are rebuilt here from (logit mu, log kappa); the
    robust model's two-component weights come from ``fit._components``.
    """
    u, v, w = fit._quadrature()
    s = fit._s[strata].astype(float)
    n = fit._n[strata].astype(float)
    if fit.model == "robust":
        comps = fit._components(u, v)
        comps = [(np.broadcast_to(r, A.shape)[:, fit._inverse[strata]],
                  A[:, fit._inverse[strata]], B[:, fit._inverse[strata]]) for r, A, B in comps]  # fmt: skip
    else:
        a = expit(u)[:, None] * np.exp(v)[:, None]
        b = expit(-u)[:, None] * np.exp(v)[:, None]
        comps = [(np.ones((len(u), len(s))), a + s, b + n - s)]

    def cdf(x):  # x (Q, K) -> mixture CDF (Q, K)
        return sum(
            np.einsum("g,gqk->qk", w, r[:, None, :] * stats.beta.cdf(x[None], A[:, None], B[:, None]))
            for r, A, B in comps
        )

    lo = np.zeros((len(qs), len(s)))
    hi = np.ones_like(lo)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = cdf(mid) < np.asarray(qs)[:, None]
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def _brute_force_outlier_safety(s, n, w, m=500):
    """Moments on a fixed fine grid with scipy's betaln (default prior, trapezoid rule)."""
    u = np.linspace(-7.0, 1.5, m)
    v = np.linspace(np.log(1e-2), np.log(1e6), m)
    U, V = np.meshgrid(u, v, indexing="ij")
    mu, kappa = expit(U), np.exp(V)
    a, b = mu * kappa, (1 - mu) * kappa
    lp = np.log(mu * (1 - mu)) + stats.norm.logpdf(V, np.log(20.0), 2.5)
    for sk, nk in zip(s, n, strict=True):
        lp = lp + betaln(a + sk, b + nk - sk) - betaln(a, b)
    wt = np.exp(lp - lp.max())
    wt[0, :] *= 0.5
    wt[-1, :] *= 0.5
    wt[:, 0] *= 0.5
    wt[:, -1] *= 0.5
    wt /= wt.sum()
    A = a[..., None] + np.asarray(s)
    B = b[..., None] + np.asarray(n) - np.asarray(s)
    node_mean = A / (A + B)
    node_var = A * B / ((A + B) ** 2 * (A + B + 1))
    mean = np.einsum("ij,ijk->k", wt, node_mean)
    var = np.einsum("ij,ijk->k", wt, node_var + node_mean**2) - mean**2
    wm = node_mean @ w
    wmean = float((wt * wm).sum())
    wvar = float((wt * (node_var @ (w**2) + wm**2)).sum() - wmean**2)
    return mean, var, wmean, wvar


def _extreme_counts(k: int = 900, seed: int = 0) -> Counts:
    rng = np.random.default_rng(seed)
    n = np.round(np.exp(rng.uniform(np.log(10), np.log(2000), k))).astype(int)
    s = rng.binomial(n, rng.beta(2, 30, k))
    extra_s = [0, 40, 0, 0, 1_000_000, 3, 999_990]
    extra_n = [40, 40, 0, 1_000_000, 1_000_000, 1_000_000, 1_000_000]
    return Counts.from_arrays(np.r_[s, extra_s], np.r_[n, extra_n])


def test_unknown_preset_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match=r"unknown preset 'quick'; valid choices are \['accurate', 'fast'\]"):
        integrate(lambda u, v: -(u**2) - v**2, ((-5, 5), (-5, 5)), preset="quick")
    with pytest.raises(ValueError, match=r"unknown preset 'quick'"):
        ExactFit(Counts.from_arrays([1, 2], [10, 10]), preset="quick")


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


def test_posterior_weighted_moments_exact_and_from_draws():
    s, n = np.array([3, 10, 30]), np.array([30, 60, 100])
    post = fit_hierarchical(s, n, draws=40_000, random_seed=0)
    w = np.array([0.5, 0.3, 0.2])
    mean, var = post.weighted_moments(w)
    d = post.weighted(w)  # draws of the same quantity: sd of the mean ~ 1e-4
    assert mean == pytest.approx(d.mean(), abs=6e-4)
    assert var == pytest.approx(d.var(), rel=0.03)


def test_grid_matches_brute_force_default_prior():
    # default prior: mu ~ Beta(1, 1), kappa ~ lognormal(sigma=2.5, median 20)
    kappa_prior = stats.lognorm(2.5, scale=20.0)
    ref = _brute_force(RATS_Y, RATS_N, lambda mu, k: kappa_prior.logpdf(k), (-3.5, 0.0), (-2.0, np.log(1e6)))
    fit = ExactFit(Counts.from_arrays(RATS_Y, RATS_N), prior="default")
    mom = fit.hyper_moments()
    assert mom["mu"] == pytest.approx(ref["mu"], abs=1e-3)
    assert mom["log_kappa"] == pytest.approx(ref["log_kappa"], abs=1e-3)
    assert mom["kappa"] == pytest.approx(ref["kappa"], rel=1e-3)
    mean, _ = fit.posterior_moments()
    np.testing.assert_allclose(mean, ref["theta"], atol=1e-3)


def test_grid_matches_brute_force_bda_prior_small_data():
    s, n = np.array([0, 2, 5, 9, 1]), np.array([15, 30, 40, 60, 12])
    # the posterior is wide here (mu poorly determined at small kappa): integrate the same
    # bounded region as the engine's hard bounds in log kappa
    ref = _brute_force(
        s, n, lambda mu, k: -1.5 * np.log(k), (-12.0, 8.0), (np.log(1e-4), np.log(1e6)), m=800
    )  # p(alpha, beta) ∝ (alpha+beta)^-2.5 times |d(alpha,beta)/d(mu,kappa)| = kappa
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        fit = ExactFit(Counts.from_arrays(s, n), prior="bda")
    mom = fit.hyper_moments()
    assert mom["mu"] == pytest.approx(ref["mu"], abs=1e-3)
    assert mom["log_kappa"] == pytest.approx(ref["log_kappa"], abs=2e-3)
    mean, _ = fit.posterior_moments()
    np.testing.assert_allclose(mean, ref["theta"], atol=1e-3)


def test_draws_agree_with_exact_moments_and_quantiles():
    post = fit_hierarchical(RATS_Y, RATS_N, random_seed=3, draws=20_000)
    theta = post.theta
    mean, var = post.exact.posterior_moments()
    se = np.sqrt(var / theta.shape[0])
    assert np.all(np.abs(theta.mean(axis=0) - mean) < 5 * se)
    q = post.exact.quantiles([0.025, 0.5, 0.975])
    emp = np.quantile(theta, [0.025, 0.5, 0.975], axis=0)
    np.testing.assert_allclose(emp, q, atol=0.01)
    # the quantiles solve the mixture CDF
    np.testing.assert_allclose(post.exact.cdf(q[2]), 0.975, atol=1e-7)


def test_baseball_shrinkage_beats_raw_rates():
    # Efron & Morris (1975): the pooled estimates predict the rest of the season better
    hits, n, rest = (BASEBALL[c].to_numpy() for c in ("hits", "at_bats", "rest_of_season"))
    raw = hits / n
    for prior in ("default", "bda"):
        post = fit_hierarchical(hits, n, prior=prior, random_seed=0)
        pooled = post.summary()["mean"].to_numpy()
        sse_raw = np.sum((raw - rest) ** 2)
        sse_pooled = np.sum((pooled - rest) ** 2)
        # measured: raw 0.0755; pooled about 0.02 (a reduction of more than half)
        assert sse_pooled < 0.5 * sse_raw


def test_identical_strata_are_collapsed_and_give_equal_results():
    s = np.array([1, 3, 1, 3, 1, 7])
    n = np.array([20, 30, 20, 30, 20, 40])
    fit = ExactFit(Counts.from_arrays(s, n))
    assert fit.diagnostics["distinct"] == 3
    mean, var = fit.posterior_moments()
    assert mean[0] == mean[2] == mean[4]
    # the collapsed likelihood equals the per-stratum sum of Beta-binomial log pmfs
    u, v = np.array([-2.0, -1.0]), np.array([1.0, 4.0])
    a, b = expit(u) * np.exp(v), expit(-u) * np.exp(v)
    ref = sum(stats.betabinom.logpmf(sk, nk, a, b) for sk, nk in zip(s, n, strict=True))
    log_choose = sum(stats.binom.logpmf(sk, nk, 0.5) - nk * np.log(0.5) for sk, nk in zip(s, n, strict=True))
    np.testing.assert_allclose(fit._loglik(u, v) + log_choose, ref, rtol=1e-10)


def test_fast_and_general_likelihood_paths_agree():
    rng = np.random.default_rng(5)
    n = rng.integers(1, 3000, 60)
    s = rng.binomial(n, 0.07)
    c = Counts.from_arrays(s, n)
    fast = ExactFit(c)
    slow = ExactFit(c, prior_mean=np.full(60, 0.2))  # equal prior means: zero offsets, general path
    assert slow.offsets is not None and np.allclose(slow.offsets, 0)
    u, v = np.array([-3.0, -2.5, 0.5]), np.array([0.0, 3.0, 12.0])
    np.testing.assert_allclose(fast._loglik(u, v), slow._loglik(u, v), rtol=1e-9, atol=1e-6)


def test_prior_mean_offsets_move_the_population_mean():
    c = Counts.from_arrays([1, 1], [10, 10], strata=["low", "high"])
    o = prior_offsets({"low": 0.05, "high": 0.4}, c)
    assert o.sum() == pytest.approx(0.0)
    assert o[1] - o[0] == pytest.approx(np.log(0.4 / 0.6) - np.log(0.05 / 0.95))
    post = fit_hierarchical(c, prior_mean={"low": 0.05, "high": 0.4}, random_seed=0)
    mean = post.summary()["mean"]
    assert mean["high"] > mean["low"] + 0.02  # same data, different prior guesses
    with pytest.raises(ValueError, match="prior_mean"):
        fit_hierarchical(c, prior_mean=[0.1, 1.2])


def test_empty_stratum_gets_the_population_predictive():
    c = Counts.from_arrays([2, 3, 4, 0], [40, 40, 40, 0], strata=list("abcd"))
    post = fit_hierarchical(c, random_seed=1, draws=8000)
    s = post.summary()
    assert np.isnan(s.loc["d", "raw_rate"]) and s.loc["d", "shrinkage"] == 1.0  # no data: all pooled
    # E[theta_d] = E[mu] (up to the 1e-7 of grid mass the moment quadrature leaves out)
    assert s.loc["d", "mean"] == pytest.approx(post.exact.hyper_moments()["mu"], abs=1e-6)
    assert s.loc["d", "upper"] - s.loc["d", "lower"] > s.loc["a", "upper"] - s.loc["a", "lower"]


def test_seeded_fits_are_reproducible():
    a = fit_hierarchical(RATS_Y, RATS_N, random_seed=42, draws=500)
    b = fit_hierarchical(RATS_Y, RATS_N, random_seed=42, draws=500)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.draws("kappa"), b.draws("kappa"))


def test_engine_and_model_validation():
    with pytest.raises(ValueError, match="engine"):
        fit_hierarchical([1], [2], engine="stan")
    with pytest.raises(ValueError, match="logit_normal"):
        fit_hierarchical([1, 2], [5, 5], model="logit_normal")
    with pytest.raises(ValueError, match="prior"):
        fit_hierarchical([1, 2], [5, 5], prior="flat")
    with pytest.raises(TypeError, match="draws"):
        fit_hierarchical([1, 2], [5, 5], draws=1.5)


def test_complete_pooling_data_warns_about_the_kappa_bound():
    # identical rates in many strata under the improper bda prior: flat toward kappa -> inf
    with pytest.warns(PrecisionLimitedWarning, match="complete pooling"):
        ExactFit(Counts.from_arrays(np.full(30, 5), np.full(30, 50)), prior="bda")


def test_simulation_based_calibration_small():
    # 150 replications, 99 draws each: ranks of mu and theta_1 uniform on 0..99 (10 bins)
    ranks = _sbc_ranks(150, 99, seed=2024)
    for j in range(2):
        assert _uniformity_pvalue(ranks[:, j], 99, 10) > 0.001


@pytest.mark.slow
def test_simulation_based_calibration_large():
    ranks = _sbc_ranks(1000, 99, seed=7)
    for j in range(2):
        assert _uniformity_pvalue(ranks[:, j], 99, 20) > 0.001


def test_robust_grid_likelihood_matches_logpmf():
    s, n = np.array([2, 5, 30]), np.array([40, 60, 80])
    fit = ExactFit(Counts.from_arrays(s, n), model="robust", outlier_prob=0.2)
    u, v = np.array([-2.0, -1.0]), np.array([2.0, 5.0])
    ref = sum(robust_logpmf(sk, nk, expit(u), np.exp(v), 0.2) for sk, nk in zip(s, n, strict=True))
    log_choose = sum(stats.binom.logpmf(sk, nk, 0.5) - nk * np.log(0.5) for sk, nk in zip(s, n, strict=True))
    np.testing.assert_allclose(fit._loglik(u, v) + log_choose, ref, rtol=1e-10)
    # the conditional posterior of theta is the stated two-component mixture: check its mean
    r, A, B = fit._components(u, v)[0]
    bb = betaln(A, B) - betaln(expit(u)[:, None] * np.exp(v)[:, None], expit(-u)[:, None] * np.exp(v)[:, None])
    r_ref = 0.8 * np.exp(bb) / (0.8 * np.exp(bb) + 0.2 * np.exp(betaln(1 + s, 1 + n - s)))
    np.testing.assert_allclose(r, r_ref, rtol=1e-10)


def test_robust_model_keeps_pooling_with_one_outlier():
    # deterministic design: 14 rates at the quantiles of Beta(8, 80) (0.04-0.15), one at 0.35,
    # trials 40-200, successes = round(n * rate)
    true = np.r_[np.clip(stats.beta(8, 80).ppf((np.arange(14) + 0.5) / 14), 0.03, 0.15), 0.35]
    n = np.linspace(40, 200, 15).astype(int)
    s = np.round(n * true).astype(int)
    plain = fit_hierarchical(s, n, random_seed=0)
    robust = fit_robust(s, n, random_seed=0)
    wp = (plain.summary()["upper"] - plain.summary()["lower"]).to_numpy()
    wr = (robust.summary()["upper"] - robust.summary()["lower"]).to_numpy()
    # measured: 0.67
    assert wr[:14].mean() / wp[:14].mean() < 0.8
    # kappa stays large, and the outlier is recognised as one
    assert robust.exact.hyper_moments()["log_kappa"] > plain.exact.hyper_moments()["log_kappa"] + 1
    p_out = robust.exact.outlier_probability()
    assert p_out[14] > 0.5 and np.median(p_out[:14]) < 0.1


def test_robust_model_narrower_and_calibrated_small():
    # 30 replicate datasets, 90% intervals from 4,000 draws. Measured (seed 3): mean width
    # ratio robust / plain 0.87; coverage of the 14 ordinary strata 0.87 (robust) and 0.91
    # (plain). Slack: 420 interval checks (correlated within a dataset) give a Monte Carlo sd
    # of about 0.02, and the clipped Beta(8, 80) truth is not the model's population, so we
    # allow 0.06 below nominal here; the slow version (300 datasets) pins it to 0.03.
    ratio, cover_plain, cover_robust = _robust_study(30, seed=3)
    assert ratio.mean() < 0.9
    assert cover_robust > 0.90 - 0.06
    assert cover_plain > 0.90 - 0.06


@pytest.mark.slow
def test_robust_model_narrower_and_calibrated_large():
    # measured (seed 4, 300 datasets): ratio 0.84, coverage 0.876 (robust), 0.919 (plain).
    # The plain model fitted to the 14 ordinary strata alone (no outlier) covers 0.870 on this
    # design (150 datasets): the shortfall comes from the clipped-Beta truth under strong
    # pooling, not from the mixture; the robust model matches that outlier-free benchmark.
    ratio, cover_plain, cover_robust = _robust_study(300, seed=4)
    assert ratio.mean() < 0.88
    assert abs(cover_robust - 0.90) < 0.03
    assert abs(cover_plain - 0.90) < 0.03


def test_robust_prior_on_outlier_share():
    s = np.array([3, 4, 5, 6, 4, 5, 30])
    n = np.array([50, 60, 70, 80, 50, 60, 80])
    c = Counts.from_arrays(s, n)
    # the grid likelihood is the average over the quadrature nodes of the fixed-eps likelihood
    prior = stats.beta(2, 18)
    fit = ExactFit(c, model="robust", outlier_prob=prior)
    nodes = prior.ppf((np.arange(8) + 0.5) / 8)
    u, v = np.array([-2.5, -2.0]), np.array([2.0, 4.0])
    fixed = np.array([ExactFit(c, model="robust", outlier_prob=e)._loglik(u, v) for e in nodes])
    np.testing.assert_allclose(fit._loglik(u, v), np.log(np.mean(np.exp(fixed), axis=0)))
    # a prior concentrated at 0.1 reproduces the fixed share
    sharp = fit_robust(c, outlier_prob=stats.beta(2000, 18000), random_seed=0)
    fixed01 = fit_robust(c, outlier_prob=0.1, random_seed=0)
    np.testing.assert_allclose(sharp.exact.posterior_moments()[0], fixed01.exact.posterior_moments()[0], atol=1e-4)
    post = fit_robust(c, outlier_prob=prior, random_seed=1, draws=2000)
    eps = post.draws("outlier_prob")
    assert eps.shape == (2000,) and np.all(np.isin(eps, fit._eps))
    assert len(np.unique(eps)) > 1  # eps is integrated, not fixed
    assert post.exact.outlier_probability()[6] > 0.5
    # draws agree with the exact marginal means
    mean, var = post.exact.posterior_moments()
    assert np.all(np.abs(post.theta.mean(axis=0) - mean) < 5 * np.sqrt(var / 2000))
    with pytest.raises(ValueError, match="outlier_prob"):
        ExactFit(c, model="robust", outlier_prob=stats.norm(0, 1))


@pytest.mark.parametrize("case", ["rats", "bda_small", "robust", "generated_1000"])
def test_exact_quantiles_match_brute_force_inversion(case):
    qs = [0.5, 0.025, 0.975, 0.005]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        if case == "rats":
            fit = ExactFit(Counts.from_arrays(RATS_Y, RATS_N))
        elif case == "bda_small":
            fit = ExactFit(Counts.from_arrays([0, 2, 5, 9, 1], [15, 30, 40, 60, 12]), prior="bda")
        elif case == "robust":
            fit = ExactFit(Counts.from_arrays(*_outlier_design()), model="robust")
        else:
            fit = ExactFit(Counts.from_arrays(*_generated(1000)))
    K = len(fit._s)
    # every stratum, or 40 spread over the range of trials for the 1,000-stratum set
    strata = np.arange(K) if K <= 100 else np.argsort(fit._n)[np.linspace(0, K - 1, 40).astype(int)]
    got = fit.quantiles(qs)[:, strata]
    ref = _brute_force_quantiles(fit, qs, strata)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    # in probability: the engine's CDF at the quantiles is the target
    for q, x in zip(qs, fit.quantiles(qs), strict=True):
        np.testing.assert_allclose(fit.cdf(x), q, rtol=0, atol=1e-8)


def test_summary_does_not_draw_theta_unless_hdi():
    post = fit_hierarchical(RATS_Y, RATS_N, random_seed=0)
    eti = post.summary()
    assert post._theta is None  # means, quantiles and shrinkage came from the grid
    hdi = post.summary(interval="hdi")
    assert post._theta is not None and post._theta.shape == (4000, 71)
    np.testing.assert_allclose(hdi["mean"], eti["mean"])
    assert np.all(hdi["upper"] - hdi["lower"] <= eti["upper"] - eti["lower"] + 0.01)


@pytest.mark.parametrize("s", [[0, 0, 0], [10, 20, 30]])
def test_bda_prior_with_all_zero_or_all_n_raises(s):
    n = [10, 20, 30]
    with pytest.raises(ValueError, match=r"prior='bda' is improper.*successes=\[.*use prior='default'"):
        ExactFit(Counts.from_arrays(s, n), prior="bda")
    with pytest.raises(ValueError, match="improper"):
        fit_hierarchical(s, n, prior="bda", random_seed=0)


@pytest.mark.parametrize(
    "s, n",
    [
        ([0, 0, 0], [10, 20, 30]),
        ([10, 20, 30], [10, 20, 30]),
        ([1000] * 4, [1000] * 4),
        ([0] * 5, [1000] * 5),
        ([0, 0, 1], [5000, 5000, 5000]),
        ([0, 50], [50, 50]),
    ],
)
def test_summary_mean_lies_inside_its_interval_on_extreme_counts(s, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fit_hierarchical(s, n, random_seed=0, draws=200).summary()
    assert ((t["lower"] <= t["mean"]) & (t["mean"] <= t["upper"])).all()


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_accurate_preset_matches_a_brute_force_grid_with_few_strata(k):
    rng = np.random.default_rng(k)
    n = rng.integers(100, 2000, k)
    s = rng.binomial(n, 0.08)
    w = n / n.sum()
    fit = ExactFit(Counts.from_arrays(s, n), preset="accurate")
    mix = fit.stratum_mixture()
    mean, var, wmean, wvar = _brute_force_outlier_safety(s, n, w)
    np.testing.assert_allclose(mix.mean(), mean, rtol=2e-3)
    np.testing.assert_allclose(mix.var(), var, rtol=2e-2)
    got_m, got_v = mix.weighted_moments(w)
    assert got_m == pytest.approx(wmean, rel=2e-3)
    assert got_v == pytest.approx(wvar, rel=2e-2)
    # interval ends against a much finer run of the same engine on its own box
    fine = ExactFit(Counts.from_arrays(s, n), preset="accurate", grid_size=300).stratum_mixture()
    np.testing.assert_allclose(np.ravel(mix.interval(0.95)), np.ravel(fine.interval(0.95)), rtol=5e-3)


@SLOWER
@given(count_arrays(max_k=12, max_n=BIG))
def test_fit_hierarchical_exact_extremes(arrays):
    s, n = arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        post = fit_hierarchical(s, n, draws=400, random_seed=0)
        summ = post.summary()
    m, lo, hi = summ["mean"].to_numpy(), summ["lower"].to_numpy(), summ["upper"].to_numpy()
    assert np.all(np.isfinite(m) & np.isfinite(lo) & np.isfinite(hi))
    assert np.all((0 <= lo) & (lo <= m) & (m <= hi) & (hi <= 1))


@SLOWER
@given(count_arrays(max_k=8, max_n=3))
def test_fit_hierarchical_exact_tiny_counts(arrays):
    s, n = arrays  # n in {1, 2, 3}: every stratum at 0 or n is common here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        summ = fit_hierarchical(s, n, draws=400, random_seed=0).summary()
    assert np.all(np.isfinite(summ[["mean", "lower", "upper"]].to_numpy()))
    assert np.all((summ["lower"] <= summ["mean"]) & (summ["mean"] <= summ["upper"]))


def test_fit_hierarchical_bad_input_names_argument():
    assert_raises_naming(fit_hierarchical, "successes", [-1, 2], [10, 10])
    assert_raises_naming(fit_hierarchical, "trials", [1, 2], [10, 2.5])
    assert_raises_naming(fit_hierarchical, "successes", [11, 2], [10, 10])
    assert_raises_naming(fit_hierarchical, "engine", [1, 2], [10, 10], engine="stan")
    assert_raises_naming(fit_hierarchical, "model", [1, 2], [10, 10], model="bogus")
    assert_raises_naming(fit_hierarchical, "draws", [1, 2], [10, 10], draws=0)
    assert_raises_naming(fit_hierarchical, "prior", [1, 2], [10, 10], prior="bogus")


@pytest.mark.slow
def test_fit_hierarchical_exact_ten_thousand_strata():
    rng = np.random.default_rng(3)
    n = rng.integers(1, 10**6, 10_000)
    s = rng.binomial(n, rng.beta(2, 18, 10_000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        summ = fit_hierarchical(s, n, draws=200, random_seed=0).summary()
    assert np.all(np.isfinite(summ[["mean", "lower", "upper"]].to_numpy()))
    assert np.all((0 <= summ["lower"]) & (summ["lower"] <= summ["mean"]) & (summ["mean"] <= summ["upper"]))


def test_fit_hierarchical_prior_mean_length_is_checked():
    assert_raises_naming(fit_hierarchical, "prior_mean", [1, 2], [5, 5], prior_mean=[0.2])


def test_fit_hierarchical_bad_random_seed_names_random_seed():
    assert_raises_naming(fit_hierarchical, "random_seed", [1, 2], [5, 5], random_seed="x")


def test_table_matches_the_building_blocks(pool_report, rep):
    counts = tabulate(pool_report, y_true="y_true", y_pred="y_pred", strata="stratum", weights=WEIGHTS)
    t = rep.table
    assert t["successes"].tolist() == counts.successes.tolist()
    assert t["trials"].tolist() == counts.trials.tolist()
    # the default guarantee ("stratum"): each stratum's adaptive interval
    lo, hi = proportion_ci(counts.successes, counts.trials, level=0.95, method="adaptive")
    np.testing.assert_allclose(t["lower"], lo, rtol=1e-12)
    np.testing.assert_allclose(t["upper"], hi, rtol=1e-12)
    np.testing.assert_allclose(t["halfwidth"], (hi - lo) / 2, rtol=1e-12)
    post = fit_hierarchical(counts, engine="exact", random_seed=0).summary(level=0.95)
    np.testing.assert_allclose(t["pooled_mean"], post["mean"], rtol=1e-10)
    np.testing.assert_allclose(t["pooled_lower"], post["lower"], rtol=1e-10)
    np.testing.assert_allclose(t["pooled_upper"], post["upper"], rtol=1e-10)
    # shrinkage: the posterior mean of kappa / (kappa + n_k), the population mean's weight in
    # E[theta_k | mu, kappa, data] = (1 - B_k) s_k / n_k + B_k mu (BDA3 section 5.3)
    kappa = fit_hierarchical(counts, engine="exact", random_seed=0).draws("kappa")
    n = counts.trials.to_numpy()
    np.testing.assert_allclose(t["shrinkage"], [np.mean(kappa / (kappa + nk)) for nk in n], rtol=1e-10)
    assert t["shrinkage"].between(0, 1).all()
    with pytest.warns(ZeroVarianceWarning):  # s6 has rate 0
        sr = stratified_risk(counts, level=0.95)
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(sr.estimate, rel=1e-12)
    assert rep.overall.loc["reweighted", "lower"] == pytest.approx(sr.ci[0], rel=1e-12)
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx(
        counts.total_successes / counts.total_trials, rel=1e-12
    )
    # the reweighted estimate is sum pi_k r_k
    r = counts.successes / counts.trials
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(
        sum(WEIGHTS[k] * r[k] for k in WEIGHTS), rel=1e-12
    )
    assert np.allclose(t["weight"], list(WEIGHTS.values()))


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


def test_shrinkage_is_the_mean_of_kappa_over_kappa_plus_n():
    post = fit_hierarchical([1, 9, 20, 9, 0], [30, 60, 80, 60, 0], random_seed=0, draws=800)
    kappa = np.asarray(post.hyper["kappa"], float).ravel()
    ref = [np.mean(kappa / (kappa + n)) for n in (30, 60, 80, 60, 0)]
    np.testing.assert_allclose(post.shrinkage().to_numpy(), ref, rtol=1e-12)
