"""Tests of ``bayeseval.campaign.loop.fast_posterior``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from bayeseval import Counts, fit_hierarchical
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.campaign import Campaign
from bayeseval.campaign.loop.fast_posterior import (
    hierarchical_grid,
    independent_posterior,
    outlying_strata,
)
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.models.exact import ExactFit
from bayeseval.models.posterior import Posterior
from tests.campaign.helpers import RNG, make_pool, oracle


def test_preposterior_variance_identity():
    # E over y ~ BetaBinom(m, a, b) of Var(theta | y) = Var(theta) (a + b) / (a + b + m),
    # checked by enumerating the Beta-binomial predictive (scipy.stats.betabinom)
    a, b, m = 3.0, 17.0, 25
    y = np.arange(m + 1)
    pmf = stats.betabinom.pmf(y, m, a, b)
    post_var = stats.beta.var(a + y, b + m - y)
    expected = float(pmf @ post_var)
    var = stats.beta.var(a, b)
    assert expected == pytest.approx(var * (a + b) / (a + b + m), rel=1e-12)
    # the rules' effective sample size of a single Beta is exactly a + b
    post = independent_posterior([a - 1], [a + b - 2])
    assert post.n_eff().iloc[0] == pytest.approx(a + b, rel=1e-9)


def test_independent_intervals_are_beta_quantiles():
    post = independent_posterior([3, 0], [40, 10])
    lo, hi = post.interval(0.9)
    np.testing.assert_allclose(lo, stats.beta.ppf(0.05, [4, 1], [38, 11]), rtol=1e-10)
    np.testing.assert_allclose(hi, stats.beta.ppf(0.95, [4, 1], [38, 11]), rtol=1e-10)


def test_hierarchical_grid_pools():
    # the campaign grid itself is checked against the accurate preset and a brute-force
    # reference in tests/kernels/test_mixture.py; here only the pooling direction
    s = np.array([0, 2, 5, 9, 4, 1, 12, 3])
    n = np.array([12, 40, 60, 80, 35, 20, 90, 30])
    post = hierarchical_grid(s, n)
    # pooling: the 0/12 stratum is pulled up toward the others, and narrower than alone
    alone = independent_posterior(s, n)
    assert post.mean().iloc[0] > alone.mean().iloc[0]
    assert post.var().iloc[0] < alone.var().iloc[0]


def test_weighted_moments_against_draws():
    s = np.array([3, 10, 30])
    n = np.array([30, 60, 100])
    post = hierarchical_grid(s, n)
    w = np.array([0.5, 0.3, 0.2])
    mean, var = post.weighted_moments(w)
    # independent Monte Carlo: a grid node by its weight, then independent Betas given it
    mix = post.mixture
    rng = RNG(0)
    g = rng.choice(len(mix.weights), size=200_000, p=mix.weights)
    draws = rng.beta(mix.a[g], mix.b[g]) @ w
    assert mean == pytest.approx(draws.mean(), abs=5e-4)
    assert np.sqrt(var) == pytest.approx(draws.std(), rel=0.01)
    # weighted() gives draws of the same quantity (seeded; sd of the mean about 1e-4)
    d = post.weighted(w, draws=100_000, random_seed=1)
    assert d.shape == (100_000,)
    assert d.mean() == pytest.approx(mean, abs=5e-4)
    assert d.std() == pytest.approx(np.sqrt(var), rel=0.01)


def test_outlier_flagged_and_robust_model_keeps_pooling_for_others():
    rng = RNG(3)
    n = np.full(10, 200)
    s = rng.binomial(n, 0.1)
    assert not outlying_strata(hierarchical_grid(s, n), s, n).any()
    s_out = s.copy()
    s_out[4] = 120  # 60% where the others are near 10%
    flags = outlying_strata(hierarchical_grid(s_out, n), s_out, n)
    assert flags.tolist() == [i == 4 for i in range(10)]
    st = RuleState.from_counts(s_out, n, available=np.full(10, 1000))
    post = st.posterior
    assert post.model == "robust" and post.outliers == [4]
    # robust mixture population: the outlier sits in the wide Beta(1, 1) component,
    # so its posterior is close to Beta(1 + 120, 1 + 80)
    assert post.outlier_probability().iloc[4] > 0.99
    assert post.mean().iloc[4] == pytest.approx(121 / 202, abs=1e-3)
    # the others still pool (posterior sd below their independent sd)
    alone = independent_posterior(s_out, n)
    others = [i for i in range(10) if i != 4]
    assert (post.var().iloc[others] < alone.var().iloc[others]).all()
    # while the plain model lets the outlier inflate the spread (weaker pooling)
    plain = hierarchical_grid(s_out, n)
    assert (plain.var().iloc[others] > post.var().iloc[others]).all()


def test_campaign_posterior_is_the_fast_exact_fit():
    s, n = np.array([3, 5, 4, 60, 2, 6]), np.array([50, 60, 45, 100, 30, 70])
    post = hierarchical_grid(s, n, model="robust")
    assert isinstance(post, Posterior) and post.storage == "mixture"
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


def test_mixture_posterior_sample_random_seed_is_keyword_only():
    post = independent_posterior([2, 30], [20, 100])
    with pytest.raises(TypeError):
        post.sample(5, 0)
    draws = post.sample(20_000, random_seed=0)
    # independent Beta(1 + s, 1 + n - s) posteriors (uniform prior): compare the means
    ref = stats.beta.mean(1 + np.array([2, 30]), 1 + np.array([18, 70]))
    assert np.allclose(draws.mean(axis=0), ref, atol=0.005)


def test_mixture_posterior_sample_is_seeded_and_follows_the_beta_posterior():
    post = independent_posterior([2, 30], [20, 100])
    a = post.sample(4000, random_seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a, post.sample(4000, random_seed=np.random.default_rng(3)))
    # independent uniform-prior posteriors Beta(1 + s, 1 + n - s): means 3/22 and 31/102
    np.testing.assert_allclose(a.mean(axis=0), [3 / 22, 31 / 102], atol=4 * 0.08 / np.sqrt(4000))


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


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_status_intervals_match_exact_engine(tmp_path):
    """The campaign's fast grid agrees with bayeseval.models' exact engine (ExactFit)."""
    from bayeseval.models.exact import ExactFit

    pool = make_pool(n=4000, k=6, seed=2)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=2, model="beta_binomial")
    for _ in range(6):
        c.ingest(oracle(c.propose(40)))
    st = c.status()
    fit = ExactFit(c.counts(), grid_size=64)
    mean, _ = fit.posterior_moments()
    q = fit.quantiles([0.025, 0.975])
    np.testing.assert_allclose(st["pooled_mean"], mean, atol=2e-3)  # the pooled posterior, beside the
    np.testing.assert_allclose(st["pooled_lower"], q[0], atol=3e-3)  # guaranteed interval
    np.testing.assert_allclose(st["pooled_upper"], q[1], atol=3e-3)
    c.close()
