"""Adaptive (FAB) binomial intervals: exactness, coverage by enumeration, widths, LOO prior.

References are independent of the code under test: scipy.stats.binom / betabinom / beta,
statsmodels' Wilson interval, brute-force enumeration of acceptance regions, and a
brute-force quadrature of the hierarchical posterior.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special, stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.fab import fab_interval, fab_intervals_all_counts, fab_regions, split_trials
from bayeseval._kernels.loo_prior import loo_beta_mixture

PRIORS = {
    "centred 0.08": ([1.0], [8.0], [92.0]),
    "strong 0.08": ([1.0], [80.0], [920.0]),
    "far 0.5": ([1.0], [50.0], [50.0]),
    "bimodal": ([0.5, 0.5], [8.0, 60.0], [92.0, 40.0]),
}


def clopper_pearson(x, n, level):
    alpha = 1 - level
    lo = np.where(x > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1), n - x + 1), 0.0)
    hi = np.where(x < n, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(n - x, 1)), 1.0)
    return lo, hi


def exact_coverage(lower, upper, n, p):
    pmf = stats.binom.pmf(np.arange(n + 1)[:, None], n, p[None, :])
    inside = (lower[:, None] <= p[None, :]) & (p[None, :] <= upper[:, None])
    return (pmf * inside).sum(axis=0)


def rate_grid(lower, upper):
    ends = np.concatenate([lower, upper])
    pts = np.concatenate([np.linspace(0, 1, 2001), ends, ends - 1e-9, ends + 1e-9])
    return np.unique(np.clip(pts, 0, 1))


@pytest.mark.parametrize("n", [1, 7, 30, 200])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_equal_split_is_clopper_pearson(n, level):
    x = np.arange(n + 1)
    iv = fab_interval(x, n, prior_a=2.0, prior_b=30.0, level=level, split=0.5)
    lo, hi = clopper_pearson(x, n, level)
    np.testing.assert_allclose(iv.lower, lo, atol=1e-10)
    np.testing.assert_allclose(iv.upper, hi, atol=1e-10)
    # the returned ends never lie inside the exact ones
    assert np.all(iv.lower <= lo + 1e-15) and np.all(iv.upper >= hi - 1e-15)


@pytest.mark.parametrize("n", [5, 10, 20, 50, 100])
@pytest.mark.parametrize("level", [0.9, 0.95])
@pytest.mark.parametrize("prior", list(PRIORS))
def test_coverage_by_exact_enumeration(n, level, prior):
    pmf = beta_mixture_predictive(n, *PRIORS[prior])
    iv = fab_intervals_all_counts(n, pmf, level)
    cov = exact_coverage(iv.lower, iv.upper, n, rate_grid(iv.lower, iv.upper))
    # every test inverted is exact, so coverage >= level (not only level - 0.005)
    assert cov.min() >= level - 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("level", [0.9, 0.95])
@pytest.mark.parametrize("prior", list(PRIORS))
def test_coverage_by_exact_enumeration_n500(level, prior):
    pmf = beta_mixture_predictive(500, *PRIORS[prior])
    iv = fab_intervals_all_counts(500, pmf, level)
    cov = exact_coverage(iv.lower, iv.upper, 500, rate_grid(iv.lower, iv.upper))
    assert cov.min() >= level - 1e-9


def test_split_trials_grid():
    n = np.arange(1, 20_001)
    m = split_trials(n)
    assert np.array_equal(m[:100], n[:100])  # own trials up to 100
    assert np.all((m <= n) & (n < 1.1 * m + 1))  # at most one grid step (ratio 1.1) below
    assert np.all(np.diff(m) >= 0)
    assert np.unique(m[100:]).size < 60  # a few dozen shared values above 100


@pytest.mark.parametrize("n", [137, 611])
@pytest.mark.parametrize("prior", ["centred 0.08", "bimodal"])
def test_off_grid_trials_same_interval_both_paths_and_exact_coverage(n, prior):
    # fab_interval optimises the split for split_trials(n) < n from the Beta mixture;
    # fab_intervals_all_counts thins a pmf of n trials (scipy's Beta-binomial here)
    w, a, b = (np.asarray(v, float) for v in PRIORS[prior])
    assert split_trials(n) < n
    x = np.arange(n + 1)
    pmf = sum(wg * stats.betabinom.pmf(x, n, ag, bg) for wg, ag, bg in zip(w, a, b, strict=True))
    every = fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1)
    each = fab_interval(x, n, a, b, w, level=0.95, diffuse_weight=0.1)
    np.testing.assert_allclose(each.lower, every.lower, atol=1e-12)
    np.testing.assert_allclose(each.upper, every.upper, atol=1e-12)
    cov = exact_coverage(each.lower, each.upper, n, rate_grid(each.lower, each.upper))
    assert cov.min() >= 0.95 - 1e-9
    # the split optimised for n itself: a different, equally exact interval of similar width
    own = fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1, optimise_for=n)
    ratio = (pmf @ (each.upper - each.lower)) / (pmf @ (own.upper - own.lower))
    assert 0.95 < ratio < 1.05
    with pytest.raises(ValueError, match="optimise_for"):
        fab_intervals_all_counts(n, pmf, 0.95, optimise_for=n + 1)


def test_all_counts_without_trials_is_the_whole_range():
    iv = fab_intervals_all_counts(0, [1.0], 0.95, diffuse_weight=0.1)
    assert iv.lower.tolist() == [0.0] and iv.upper.tolist() == [1.0]


@pytest.mark.parametrize("p0", [0.0, 0.03, 0.08, 0.2, 0.5, 0.93, 1.0])
def test_regions_minimise_prior_mass_among_level_alpha_regions(p0):
    n, alpha = 12, 0.05
    weights, a, b = [0.3, 0.7], [1.0, 16.0], [3.0, 4.0]
    prior = 0.3 * stats.betabinom.pmf(np.arange(n + 1), n, 1, 3) + 0.7 * stats.betabinom.pmf(
        np.arange(n + 1), n, 16, 4
    )
    binom = stats.binom.pmf(np.arange(n + 1), n, p0)
    best = min(
        prior[lo : hi + 1].sum()
        for lo, hi in itertools.product(range(n + 1), repeat=2)
        if lo <= hi and binom[:lo].sum() + binom[hi + 1 :].sum() <= alpha + 1e-15
    )
    (ra,), (rb,) = fab_regions([p0], n, beta_mixture_predictive(n, weights, a, b), alpha)
    assert binom[:ra].sum() + binom[rb + 1 :].sum() <= alpha + 1e-12
    assert prior[ra : rb + 1].sum() == pytest.approx(best, abs=1e-12)


def test_fixed_split_regions_match_definition():
    n, alpha, w = 15, 0.1, 0.3
    p0 = np.array([0.05, 0.3, 0.61])
    a, b = fab_regions(p0, n, None, alpha, split=w)
    for k, p in enumerate(p0):
        cdf = stats.binom.cdf(np.arange(-1, n + 1), n, p)  # P(X <= j), j = -1..n
        expect_a = max(j for j in range(n + 1) if cdf[j] <= alpha * w)  # P(X < j) = cdf[j]
        sf = stats.binom.sf(np.arange(n + 1), n, p)
        expect_b = min(j for j in range(n + 1) if sf[j] <= alpha * (1 - w))
        assert (a[k], b[k]) == (expect_a, expect_b)


def _expected_width(lower, upper, n, truth):
    return float(stats.binom.pmf(np.arange(n + 1), n, truth) @ (upper - lower))


@pytest.mark.parametrize("n", [20, 50, 100])
def test_width_when_alike_beats_clopper_pearson_and_wilson(n):
    pmf = beta_mixture_predictive(n, [1.0], [8.0], [92.0])
    iv = fab_intervals_all_counts(n, pmf, 0.95)
    x = np.arange(n + 1)
    cp = clopper_pearson(x, n, 0.95)
    wl = proportion_confint(x, n, alpha=0.05, method="wilson")
    width = _expected_width(iv.lower, iv.upper, n, 0.08)
    assert width <= 0.90 * _expected_width(*cp, n, 0.08)  # measured 0.871, 0.875, 0.872
    assert width <= 0.97 * _expected_width(*wl, n, 0.08)  # measured 0.960, 0.946, 0.932


def test_diffuse_component_bounds_the_outlier_width():
    # prior near 0.08, truth 0.40: the pure FAB interval may be much wider than
    # Clopper-Pearson; the uniform component brings it back near CP (exact expectations)
    n, truth = 100, 0.40
    pmf = beta_mixture_predictive(n, [1.0], [8.0], [92.0])
    x = np.arange(n + 1)
    cp = _expected_width(*clopper_pearson(x, n, 0.95), n, truth)
    pure = _expected_width(*fab_intervals_all_counts(n, pmf, 0.95), n, truth)
    mixed = _expected_width(*fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1), n, truth)
    assert pure > 1.15 * cp
    assert mixed < 1.15 * cp


def test_outlier_keeps_coverage_with_prior_from_the_others():
    rng = np.random.default_rng(7)
    n_others = rng.integers(50, 501, 15)
    s_others = rng.binomial(n_others, 0.08)
    # the outlier's interval depends on its own count only through the test inverted:
    # enumerate that count (0..20) with the others fixed
    s = np.append(s_others, 0)
    n = np.append(n_others, 20)
    w, a, b = loo_beta_mixture(s, n)
    pmf = beta_mixture_predictive(20, w[-1], a[-1], b[-1])
    iv = fab_intervals_all_counts(20, pmf, 0.95, diffuse_weight=0.1)
    cov = exact_coverage(iv.lower, iv.upper, 20, np.array([0.40, 0.30, 0.08]))
    assert np.all(cov >= 0.95)
    # and adaptive_interval gives these same intervals for each possible own count
    for y in (0, 8, 20):
        s[-1] = y
        lo, hi = adaptive_interval(s, n)
        assert (lo[-1], hi[-1]) == pytest.approx((iv.lower[y], iv.upper[y]), abs=1e-9)


def test_predictive_pmf_matches_scipy_betabinom():
    n = 40
    pmf = beta_mixture_predictive(n, [0.25, 0.75], [0.5, 30.0], [2.0, 300.0])
    k = np.arange(n + 1)
    expect = 0.25 * stats.betabinom.pmf(k, n, 0.5, 2.0) + 0.75 * stats.betabinom.pmf(
        k, n, 30.0, 300.0
    )
    np.testing.assert_allclose(pmf, expect, rtol=1e-9, atol=1e-15)


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


def test_adaptive_interval_shapes_and_empty_strata():
    s = np.array([[4, 0], [9, 3]])
    n = np.array([[50, 0], [20, 40]])
    lo, hi = adaptive_interval(s, n, level=0.9)
    assert lo.shape == (2, 2) and hi.shape == (2, 2)
    assert (lo[0, 1], hi[0, 1]) == (0.0, 1.0)
    assert np.all(lo <= s / np.maximum(n, 1)) and np.all(s / np.maximum(n, 1) <= hi)


def test_broadcast_prior_per_stratum_and_shared_mixture():
    s, n = np.array([2, 9]), np.array([30, 30])
    one = fab_interval(s, n, prior_a=[3.0, 3.0], prior_b=[30.0, 30.0])
    mix = fab_interval(s, n, prior_a=[3.0], prior_b=[30.0], prior_weights=[1.0])
    np.testing.assert_allclose(one.lower, mix.lower, atol=1e-12)
    np.testing.assert_allclose(one.upper, mix.upper, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"prior_a": -1.0}, ValueError, ["prior_a", "-1.0"]),
        ({"prior_b": np.nan}, ValueError, ["prior_b", "nan"]),
        ({"prior_weights": [-0.5, 1.5]}, ValueError, ["prior_weights", "-0.5"]),
        ({"prior_weights": [0.0, 0.0]}, ValueError, ["prior_weights", "0.0"]),
        ({"prior_a": [1.0, 2.0, 3.0]}, ValueError, ["prior_a", "(3,)"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"level": "high"}, TypeError, ["level", "'high'"]),
        ({"split": 2.0}, ValueError, ["split", "2.0"]),
        ({"successes": [3, 12]}, ValueError, ["successes", "12"]),
        ({"trials": [10, -1]}, ValueError, ["trials", "-1"]),
    ],
)
def test_validation_names_argument_and_value(kwargs, exc, words):
    args = {"successes": [3, 4], "trials": [10, 10], "prior_a": 1.0, "prior_b": 1.0}
    if "prior_weights" in kwargs:
        args.update(prior_a=[1.0, 2.0], prior_b=[1.0, 2.0])
    args.update(kwargs)
    with pytest.raises(exc) as info:
        fab_interval(**args)
    for word in words:
        assert word in str(info.value)


def test_adaptive_interval_validation():
    with pytest.raises(ValueError, match=r"level .*0\.0"):
        adaptive_interval([1, 2], [5, 5], level=0.0)
    with pytest.raises(ValueError, match=r"successes must not exceed trials.*7"):
        adaptive_interval([7, 2], [5, 5])


def test_hyperprior_grid_uses_bda_density():
    # the grid weights must equal p(alpha, beta) (alpha + beta)^(-5/2) times the Jacobian
    # of (alpha, beta) -> (logit mu, log kappa), which is alpha * beta (closed form)
    from bayeseval._kernels.loo_prior import _hyper_grid

    a, b, log_prior = _hyper_grid(0.05, 0.6, 7, 5, (1.0, 100.0))
    expect = -2.5 * np.log(a + b) + np.log(a * b)
    diff = log_prior - expect
    assert np.ptp(diff) < 1e-10
    assert special.logit(0.05) == pytest.approx(np.log(a / b).min())


def test_monotone_split_path_matches_brute_force():
    # the dynamic programme behind fab_split against enumeration of every
    # non-decreasing path (5 grid points x 4 levels)
    from bayeseval._kernels.fab import _best_monotone_path

    rng = np.random.default_rng(4)
    cost = rng.uniform(size=(3, 5, 4))
    paths = [p for p in itertools.product(range(4), repeat=5) if list(p) == sorted(p)]
    got = _best_monotone_path(cost)
    for i in range(3):
        best = min(sum(cost[i, k, j] for k, j in enumerate(p)) for p in paths)
        assert sum(cost[i, k, j] for k, j in enumerate(got[i])) == pytest.approx(best)
        assert np.all(np.diff(got[i]) >= 0)


def test_log_tails_by_quadrature_and_by_sums_match_scipy_at_random():
    # random components (concentration 0.5 to 1e6) and counts (edges, bulk, tails) at 5,000
    # trials: both routes of betabinom_log_tails against SciPy's pmf summed in logs
    from bayeseval._kernels.betabinom import _quadrature_applies, betabinom_log_tails

    rng = np.random.default_rng(5)
    n = 5_000
    mu, kappa = rng.uniform(0.01, 0.99, 120), np.exp(rng.uniform(np.log(0.5), np.log(1e6), 120))
    a, b = mu * kappa, (1 - mu) * kappa
    s = np.clip(np.r_[rng.integers(0, 60, 40), rng.integers(0, n + 1, 40),
                      np.round(mu[80:] * n + rng.normal(0, 3, 40) * n / np.sqrt(kappa[80:] + 1))],
                0, n)
    routes = _quadrature_applies(s, np.full(120, float(n)), a, b)
    assert 10 < routes.sum() < 110  # both routes are exercised
    lower, at, upper = betabinom_log_tails(s, n, a, b)
    k = np.arange(n + 1)
    for i in range(120):
        lp = stats.betabinom.logpmf(k, n, a[i], b[i])
        si = int(s[i])
        ref_lo = special.logsumexp(lp[:si]) if si else -np.inf
        ref_hi = special.logsumexp(lp[si + 1 :]) if si < n else -np.inf
        for got, ref in ((lower[i], ref_lo), (upper[i], ref_hi)):
            if np.isinf(ref):
                assert got == ref
            else:  # relative error of the probability below 1e-8
                assert abs(got - ref) < 1e-8, (i, si, a[i], b[i], got, ref)


@pytest.mark.parametrize(("n", "s", "a", "b"), [
    (1_000_000, 200_000, 2_000.0, 8_000.0),    # at the mean of a narrow component
    (1_000_000, 190_000, 2_000.0, 8_000.0),    # 2.5 sd below it
    (1_000_000, 302_000, 30_000.0, 70_000.0),  # above the mean
])
def test_binomial_side_quadrature_matches_scipy_sums(n, s, a, b):
    # a component narrower than the binomial spread at many trials (the pmf sums would be
    # long): the quadrature over the component's rate against SciPy's pmf summed in logs
    from bayeseval._kernels.betabinom import _binomial_quadrature_applies, betabinom_log_tails

    assert _binomial_quadrature_applies(np.array([float(s)]), np.array([float(n)]),
                                        np.array([a]), np.array([b]))[0]
    lo, _, hi = betabinom_log_tails(s, n, a, b)
    k = np.arange(n + 1)
    logpmf = stats.betabinom.logpmf(k, n, a, b)
    assert lo == pytest.approx(special.logsumexp(logpmf[:s]), rel=1e-5, abs=1e-9)
    assert hi == pytest.approx(special.logsumexp(logpmf[s + 1:]), rel=1e-5, abs=1e-9)
