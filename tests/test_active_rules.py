"""Tests of the proposal rules and the grid posterior they use."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval.campaign.forecast import forecast_labels
from bayeseval.campaign.posterior import hierarchical_grid, independent_posterior, outlying_strata
from bayeseval.campaign.rules import (
    expected_width,
    independent_beta,
    neyman,
    proportional,
    thompson,
    uniform,
)
from bayeseval.campaign.state import RuleState

RNG = np.random.default_rng


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
    # reference in tests/test_core_posterior.py; here only the pooling direction
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


def test_greedy_batch_spreads_over_equal_strata():
    st = RuleState.from_counts([5] * 4, [50] * 4, available=[1000] * 4, model="independent")
    alloc = expected_width(st, 40, RNG(0))
    assert alloc.tolist() == [10, 10, 10, 10]


def test_batch_not_all_from_best_stratum():
    # stratum 0 is the best single choice, but after ~k labels its marginal gain falls
    st = RuleState.from_counts([10, 8, 2], [60, 60, 60], available=[1000] * 3, model="independent")
    alloc = expected_width(st, 120, RNG(0))
    assert alloc.sum() == 120
    assert alloc.iloc[0] == alloc.max() and alloc.iloc[0] < 120 and alloc.iloc[1] > 0


def test_done_and_exhausted_strata_get_nothing():
    # stratum 0 is done (half-width far below 0.05), stratum 2 has only 3 rows left
    st = RuleState.from_counts(
        [10, 10, 10], [5000, 50, 50], available=[1000, 1000, 3], model="independent"
    )
    assert st.stratum_done().tolist() == [True, False, False]
    for rule in (expected_width, independent_beta, thompson, neyman, uniform):
        alloc = rule(st, 50, RNG(1))
        assert alloc.iloc[0] == 0, rule.__name__
        assert alloc.iloc[2] <= 3, rule.__name__
        assert alloc.sum() == 50, rule.__name__


def test_pending_labels_count_as_requested():
    base = dict(available=[1000, 1000], model="independent")
    a = expected_width(RuleState.from_counts([5, 5], [50, 50], **base), 20, RNG(0))
    b = expected_width(RuleState.from_counts([5, 5], [50, 50], pending=[40, 0], **base), 20, RNG(0))
    assert a.tolist() == [10, 10]
    assert b.iloc[1] > b.iloc[0]


def test_trial_probability_lowers_gain_per_label():
    # recall-like: same successes / trials, but stratum 1's labelled rows are rarely trials
    st = RuleState.from_counts(
        [20, 20], [40, 40], labelled=[50, 400], available=[5000, 5000], trial_known=False, model="independent"
    )
    np.testing.assert_allclose(st.p_trial(), [41 / 52, 41 / 402])
    alloc = expected_width(st, 100, RNG(0))
    assert alloc.iloc[0] > alloc.iloc[1]
    # the forecast divides the trials needed by P(trial)
    f = forecast_labels(st)
    assert f.iloc[1] > 5 * f.iloc[0]


def test_forecast_matches_brute_force():
    st = RuleState.from_counts([12, 3], [100, 30], available=[10_000, 10_000], model="independent")
    f = forecast_labels(st)
    hw = st.halfwidths()
    neff = st.posterior.n_eff().to_numpy()
    for j in range(2):
        m = next(m for m in range(100_000) if hw[j] * np.sqrt(neff[j] / (neff[j] + m)) <= 0.05)
        assert f.iloc[j] == m
    # and the forecast is close to what a Beta posterior actually needs (within 10%):
    # Beta(13 + 0.12 m, 89 + 0.88 m) half-width at 0.05
    need = next(
        m for m in range(0, 5000, 5)
        if np.diff(stats.beta.ppf([0.025, 0.975], 13 + 0.12 * m, 89 + 0.88 * m))[0] / 2 <= 0.05
    )
    assert abs(f.iloc[0] - need) <= 0.1 * need + 5


def test_overall_goal_allocation_follows_weights():
    st = RuleState.from_counts(
        [5, 5, 5], [50, 50, 50], available=[1000] * 3, weights=[0.7, 0.2, 0.1], goal="overall",
        model="independent",
    )
    # strata 1 and 2 already have more than their optimal share: everything goes to stratum 0
    assert expected_width(st, 100, RNG(0)).tolist() == [100, 0, 0]
    # from scratch (Beta(1, 1) each, n_eff = 2): the variance-optimal allocation has
    # (2 + n_k) proportional to w_k, i.e. n = 106 w - 2 = (72.2, 19.2, 8.6)
    st0 = RuleState.from_counts(
        [0, 0, 0], [0, 0, 0], available=[1000] * 3, weights=[0.7, 0.2, 0.1], goal="overall",
        model="independent",
    )
    np.testing.assert_allclose(expected_width(st0, 100, RNG(0)), [72.2, 19.2, 8.6], atol=1.5)
    # Neyman: labels proportional to w * sd (equal sds here)
    assert neyman(st, 100, RNG(0)).tolist() == [100, 0, 0]
    np.testing.assert_allclose(neyman(st0, 100, RNG(0)), [70, 20, 10], atol=1)


def test_proportional_and_uniform_baselines():
    st = RuleState.from_counts([0, 0], [0, 0], available=[9000, 1000])
    draws = np.array([proportional(st, 100, RNG(i)).iloc[1] for i in range(200)])
    # hypergeometric mean 10 per 100 draws
    assert draws.mean() == pytest.approx(10, abs=0.6)
    assert uniform(st, 100, RNG(0)).tolist() == [50, 50]


def test_thompson_respects_capacity_and_is_seeded():
    st = RuleState.from_counts([1, 1, 1], [10, 10, 10], available=[5, 500, 500])
    a = thompson(st, 60, RNG(7))
    b = thompson(st, 60, RNG(7))
    assert a.tolist() == b.tolist() and a.sum() == 60 and a.iloc[0] <= 5


# -- the stopping rule under guarantee="average" -----------------------------------------
def test_average_guarantee_stops_on_the_posterior_interval():
    # independent model: each stratum's posterior is Beta(1 + s, 1 + n - s); the stop check
    # is its equal-tailed interval at level 0.95 (scipy.stats.beta.ppf)
    base = dict(available=[1000] * 3, model="independent", guarantee="average")
    st = RuleState.from_counts([5, 5, 5], [40, 40, 40], target_halfwidth=0.12, **base)
    hw = np.diff(stats.beta.ppf([0.025, 0.975], 6, 36))[0] / 2
    np.testing.assert_allclose(st.stop_halfwidths(), hw, rtol=1e-6)
    assert hw <= 0.12 and st.is_done() and forecast_labels(st).sum() == 0
    tight = RuleState.from_counts([5, 5, 5], [40, 40, 40], target_halfwidth=0.1, **base)
    assert hw > 0.1 and not tight.is_done() and forecast_labels(tight).sum() > 0
    read, lo, hi = tight.read_intervals()
    assert set(read) == {"own"} and lo[0] == pytest.approx(stats.beta.ppf(0.025, 6, 36))


# -- guarantee="stratum" ---------------------------------------------------------------------
def _fab_table(level):
    from bayeseval._kernels.betabinom import beta_mixture_predictive
    from bayeseval._kernels.fab import fab_intervals_all_counts

    cache = {}

    def table(n):
        if n not in cache:
            iv = fab_intervals_all_counts(n, beta_mixture_predictive(n, [1.0], [2.0], [18.0]), level)
            cache[n] = (iv.lower, iv.upper)
        return cache[n]

    return table


def _coverage_at_stop(table, rate, every, cap=400, target=0.05):
    from bayeseval._kernels.sequential import sequential_outcome

    def stop(s, n):
        lo, hi = table(n)
        return (hi - lo) / 2 <= target

    def covers(s, n):
        lo, hi = table(n)
        return (lo <= rate) & (rate <= hi)

    out = sequential_outcome(rate, stop, covers, every=every, max_trials=cap)
    assert out.cap_probability < 1e-3  # (nearly) every run stops on its own
    return out.event_at_end


def test_compensated_stop_level_keeps_coverage_at_stop_exactly():
    # exact dynamic programme over (look, count): the adaptive interval with a fixed Beta(2, 18)
    # prior at the worst rate (0.11); stopping on the 95% interval loses coverage (0.938 with a
    # look every 5 labels), the interval at guarantee_stop_level(0.95) = 0.965 keeps >= 0.94
    from bayeseval.campaign.guarantee import guarantee_stop_level

    plain, kept = _fab_table(0.95), _fab_table(guarantee_stop_level(0.95))
    assert _coverage_at_stop(plain, 0.11, 5) < 0.94
    for every in (5, 20, 50):
        assert _coverage_at_stop(kept, 0.11, every) >= 0.94


@pytest.mark.slow
def test_compensated_stop_level_every_schedule_and_rate():
    # looking after every label is the worst schedule: 0.924 at level 0.95, 0.941 at 0.965
    from bayeseval.campaign.guarantee import guarantee_stop_level

    kept = _fab_table(guarantee_stop_level(0.95))
    assert _coverage_at_stop(_fab_table(0.95), 0.11, 1) < 0.93
    for rate in (0.05, 0.11, 0.30):
        for every in (1, 5, 20, 50):
            assert _coverage_at_stop(kept, rate, every, cap=500) >= 0.94


def test_guaranteed_bounds_are_clopper_pearson_then_adaptive():
    from bayeseval._kernels.adaptive import adaptive_interval
    from bayeseval.campaign.guarantee import guaranteed_bounds

    s, n = np.array([3, 5, 0]), np.array([40, 50, 0])
    lo, hi = guaranteed_bounds(s, n, 0.95)
    ref = stats.binomtest(3, 40).proportion_ci(0.95, method="exact")
    assert (lo[0], hi[0]) == pytest.approx((ref.low, ref.high), abs=1e-9)
    assert (lo[2], hi[2]) == (0.0, 1.0)  # no trials
    # with at least two other strata labelled: the leave-one-out adaptive interval
    s, n = np.array([4, 3, 5, 4, 9]), np.array([50, 40, 60, 50, 20])
    alo, ahi = adaptive_interval(s, n, level=0.95)
    lo, hi = guaranteed_bounds(s, n, 0.95)
    assert lo == pytest.approx(alo, abs=1e-12) and hi == pytest.approx(ahi, abs=1e-12)


def test_stratum_guarantee_stops_on_the_guaranteed_interval():
    from bayeseval.campaign.guarantee import guarantee_stop_level, guaranteed_bounds

    s, n = np.array([12, 15, 10, 30]), np.array([150, 160, 140, 150])
    kw = dict(available=[500] * 4, target_halfwidth=0.05)
    st = RuleState.from_counts(s, n, guarantee="stratum", **kw)
    lo, hi = guaranteed_bounds(s, n, guarantee_stop_level(0.95))
    assert st.stop_halfwidths() == pytest.approx((hi - lo) / 2)
    assert st.stratum_done().tolist() == ((hi - lo) / 2 <= 0.05).tolist()
    read, rlo, rhi = st.read_intervals()
    assert set(read) == {"guaranteed"} and rlo == pytest.approx(lo)
    # the allocation plans for the guaranteed interval: labels go only to strata above target
    alloc = expected_width(st, 40, RNG(0)).to_numpy()
    assert alloc.sum() == 40 and np.all(alloc[(hi - lo) / 2 <= 0.05] == 0)


def _decision_state(s, n, threshold=0.10, margin=0.0, size=1500):
    k = len(s)
    return RuleState.from_counts(s, np.full(k, n), available=np.full(k, size - n), goal="decide",
                                 threshold=np.full(k, threshold), guarantee="stratum", margin=margin)


def _wrong_decision_probability(rate, guarantee, max_trials=800):
    from bayeseval._kernels.sequential import sequential_outcome

    cache = {}

    def decided(s, n):
        if n not in cache:
            st = _decision_state(s, n)
            st.guarantee, st.model = guarantee, "independent"
            cache[n] = st.decisions()
        return cache[n]

    wrong_call = "fails" if rate < 0.10 else "meets"  # at the threshold itself "meets" (rate < 0.10) is wrong
    return sequential_outcome(rate, lambda s, n: decided(s, n) != "undecided",
                              lambda s, n: decided(s, n) == wrong_call, every=1, max_trials=max_trials)


@pytest.mark.parametrize("rate", [0.08, 0.10])
def test_stratum_decisions_keep_their_error_looking_after_every_label(rate):
    # the campaign's own decision rule, looked at after every label (batch size 1), through the
    # exact dynamic programme; Ville's inequality bounds the wrong-decision probability by 0.05.
    # The posterior rule of guarantee="average" is wrong with probability 0.277 at 0.08.
    out = _wrong_decision_probability(rate, "stratum")
    assert out.event_probability <= 0.05
    if rate == 0.08:
        assert _wrong_decision_probability(rate, "average").event_probability > 0.15


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.09, 0.11, 0.12])
def test_stratum_decisions_error_at_more_rates(rate):
    assert _wrong_decision_probability(rate, "stratum", max_trials=1500).event_probability <= 0.05


def test_stratum_margin_decides_at_the_threshold_on_the_confidence_sequence():
    from bayeseval._kernels.anytime import confidence_sequence_bounds

    st = _decision_state(np.array([120, 300]), 1200, margin=0.04)
    c, lv = st.decision_concentration(), st.anytime_level()
    assert lv == pytest.approx(0.975)
    lo, hi = confidence_sequence_bounds(np.array([120.0, 300.0]), np.array([1200.0, 1200.0]), lv, c)
    assert lo[0] >= 0.06 and hi[0] <= 0.14  # the first stratum's sequence is inside 0.10 +/- 0.04
    assert st.decisions().tolist() == ["at the threshold", "fails"]


def test_stratum_gap_projects_confidence_sequences_at_the_bonferroni_level():
    from bayeseval._kernels.anytime import confidence_sequence_bounds
    from bayeseval._kernels.disparity import bonferroni_level

    s, n = np.array([10, 40, 25]), np.array([400, 400, 300])
    st = RuleState.from_counts(s, n, available=[600, 600, 700], goal="gap", tolerance=0.02, guarantee="stratum")
    gap = st.gap()
    level = bonferroni_level(0.95, 3)
    lo, hi = confidence_sequence_bounds(s.astype(float), n.astype(float), level, st.decision_concentration())
    np.testing.assert_allclose(gap["bounds"][0], lo)
    # the projected gap interval: from max(lower) - min(upper) to max(upper) - min(lower)
    assert gap["upper"] == pytest.approx(hi.max() - lo.min())
    assert gap["verdict"] == ("outside" if gap["lower"] > 0.02 else "undecided")
