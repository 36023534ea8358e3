"""Tests of ``bayeseval.campaign.loop.rule_state``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval.campaign import Campaign, Each
from bayeseval.campaign.loop.metric_states import MetricStates
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.rules import cost_allocation, metrics_allocation

# one stratum at 20/150 among nine near 0.06 with 100 trials each
S = np.r_[20, [5, 6, 7, 5, 6, 7, 5, 6, 7]]


N = np.r_[150, [100] * 9]


def _state(s=S, n=N, **kw) -> RuleState:
    kw.setdefault("target_halfwidth", 0.05)
    return RuleState.from_counts(s, n, available=np.full(len(s), 1000), **kw)


def _state_stop_validity(s, n, **kw):
    return RuleState.from_counts(s, n, available=np.full(len(s), 1000), target_halfwidth=0.05, **kw)


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


def test_p_meets_and_decisions_match_scipy_beta_for_independent_posteriors():
    s, n = np.array([1, 30, 18, 40]), np.array([200, 200, 200, 300])
    thr = np.array([0.1, 0.1, 0.1, 0.15])
    st = RuleState.from_counts(s, n, available=[0] * 4, model="independent", goal="decide", threshold=thr)
    below = stats.beta.cdf(thr, 1 + s, 1 + n - s)
    np.testing.assert_allclose(st.p_meets(), below, rtol=1e-9)
    expected = np.where(below >= 0.95, "meets", np.where(below <= 0.05, "fails", "undecided"))
    assert st.decisions().tolist() == expected.tolist()
    up = RuleState.from_counts(
        s, n, available=[0] * 4, model="independent", goal="decide", threshold=thr, direction="above"
    )
    np.testing.assert_allclose(up.p_meets(), 1 - below, rtol=1e-9)
    # a higher level asks more of the same probabilities
    strict = RuleState.from_counts(
        s, n, available=[0] * 4, model="independent", goal="decide", threshold=thr, level=0.999
    )
    assert strict.goal_met().tolist() == ((below >= 0.999) | (below <= 0.001)).tolist()


def test_pooled_p_meets_is_the_posterior_share_of_draws_below_the_threshold():
    st = RuleState.from_counts(
        [2, 5, 9, 30],
        [60, 80, 90, 100],
        available=[100] * 4,
        goal="decide",
        threshold=np.full(4, 0.1),
        model="beta_binomial",
    )
    draws = st.posterior.sample(200_000, random_seed=1)
    mc = (draws < 0.1).mean(axis=0)
    np.testing.assert_allclose(st.p_meets(), mc, atol=0.004)  # Monte Carlo sd <= 0.0011


def test_gap_verdict_is_the_audit_rule_on_bonferroni_clopper_pearson_intervals():
    s, n = np.array([40, 100, 55]), np.array([1000, 1000, 1000])
    level = 1 - 0.05 / 3
    lo = stats.beta.ppf((1 - level) / 2, s, n - s + 1)  # Clopper-Pearson, from SciPy
    hi = stats.beta.ppf((1 + level) / 2, s + 1, n - s)
    mean = s / n
    for tol in (0.005, 0.2, 0.05):
        st = RuleState.from_counts(s, n, available=[0] * 3, model="independent", goal="gap", tolerance=tol)
        info = st.gap()
        assert info["lower"] == pytest.approx(max(0.0, lo.max() - hi.min()), abs=1e-7)
        assert info["upper"] == pytest.approx(hi.max() - lo.min(), abs=1e-7)
        assert info["gap"] == pytest.approx(mean.max() - mean.min(), rel=1e-12)
        # the pooled posterior does not enter the verdict: the same counts give it under pooling
        pooled = RuleState.from_counts(s, n, available=[0] * 3, goal="gap", tolerance=tol)
        assert pooled.gap()["verdict"] == info["verdict"]
        expected = (
            "outside"
            if lo.max() - hi.min() > tol
            else "within tolerance"
            if hi.max() - lo.min() <= tol
            else "undecided"
        )
        assert info["verdict"] == expected
    assert (
        RuleState.from_counts(s, n, available=[0] * 3, model="independent", goal="gap", tolerance=0.005).gap()[
            "verdict"
        ]
        == "outside"
    )
    assert (
        RuleState.from_counts(s, n, available=[0] * 3, model="independent", goal="gap", tolerance=0.2).gap()["verdict"]
        == "within tolerance"
    )


@pytest.mark.parametrize("s, n", [(123, 1000), (1230, 10000), (380, 3200), (400, 3200), (60, 500), (0, 0)])
def test_at_threshold_is_the_interval_within_the_band_by_scipy_beta_quantiles(s, n):
    thr, margin, level = 0.12, 0.01, 0.95
    st = RuleState.from_counts(
        [s],
        [n],
        available=[0],
        model="independent",
        goal="decide",
        threshold=np.array([thr]),
        margin=margin,
        level=level,
    )
    lo, hi = stats.beta(1 + s, 1 + n - s).ppf([(1 - level) / 2, (1 + level) / 2])
    inside = n > 0 and thr - margin <= lo and hi <= thr + margin
    assert bool(st.at_threshold()[0]) == inside
    p = stats.beta(1 + s, 1 + n - s).cdf(thr)
    side = p >= level or p <= 1 - level
    expected = ("meets" if p >= 0.5 else "fails") if side else ("at the threshold" if inside else "undecided")
    assert st.decisions()[0] == expected


def test_at_threshold_with_a_pooled_model_is_the_pooled_interval_within_the_band():
    s, n = np.array([1230, 600, 610, 590]), np.array([10000, 10000, 10000, 10000])
    st = RuleState.from_counts(
        s, n, available=[0] * 4, model="beta_binomial", goal="decide", threshold=np.full(4, 0.12), margin=0.01
    )
    # the equal-tailed 95% interval lies within [0.11, 0.13] exactly when the posterior puts at
    # most 2.5% below 0.11 and at most 2.5% above 0.13 (the mixture's cdf at the band's ends)
    cdf = st.posterior.mixture.cdf
    inside = (cdf(np.full(4, 0.11)) <= 0.025) & (cdf(np.full(4, 0.13)) >= 0.975)
    assert st.at_threshold().tolist() == inside.tolist()
    assert inside[0] and not inside[1:].any()


def test_with_one_metric_done_the_allocation_is_the_other_metrics_own():
    tpr = RuleState.from_counts(
        [20, 18, 10],
        [25, 25, 12],
        labelled=[100, 100, 40],
        available=[500] * 3,
        trial_known=False,
        target_halfwidth=0.05,
    )
    fpr = RuleState.from_counts(
        [1, 2, 1], [75, 75, 28], labelled=[100, 100, 40], available=[500] * 3, trial_known=False, target_halfwidth=0.2
    )
    assert fpr.stratum_done().all() and not tpr.stratum_done().any()
    both = metrics_allocation(MetricStates({"tpr": tpr, "fpr": fpr}), 30)
    alone = cost_allocation(tpr, 30, np.ones(3))
    assert both.tolist() == alone.tolist()


def test_the_allocation_weighs_the_probability_that_a_row_is_a_trial():
    # same TPR counts (so the same posterior), but positives are common in stratum 0 and rare in 1
    tpr = RuleState.from_counts(
        [15, 15],
        [20, 20],
        labelled=[22, 200],
        available=[1000, 1000],
        trial_known=False,
        target_halfwidth=0.05,
        model="independent",
    )
    fpr = RuleState.from_counts(
        [0, 10],
        [2, 180],
        labelled=[22, 200],
        available=[1000, 1000],
        trial_known=False,
        target_halfwidth=0.5,
        model="independent",
    )
    assert tpr.p_trial()[0] > 0.8 and tpr.p_trial()[1] < 0.11
    alloc = metrics_allocation(MetricStates({"tpr": tpr, "fpr": fpr}), 20)
    assert alloc[0] > alloc[1]


def test_average_stops_every_stratum_on_its_pooled_interval():
    st = _state(guarantee="average")
    lo, hi = st.posterior.mixture.interval(0.95)
    np.testing.assert_allclose(st.stop_halfwidths(), (hi - lo) / 2, rtol=1e-12)
    read, rlo, rhi = st.read_intervals()
    assert set(read) == {"pooled"}
    np.testing.assert_array_equal(rlo, lo)
    # a stratum is done exactly when its pooled half-width reaches the target, for targets
    # on either side of the half-widths
    hw = (hi - lo) / 2
    for target in (hw.min() - 1e-6, float(np.median(hw)), hw.max() + 1e-6):
        np.testing.assert_array_equal(_state(guarantee="average", target_halfwidth=target).stratum_done(), hw <= target)


def test_independent_model_reads_its_own_interval():
    st = _state(model="independent", guarantee="average")
    read, rlo, rhi = st.read_intervals()
    assert set(read) == {"own"}
    np.testing.assert_allclose(rlo, stats.beta.ppf(0.025, 1 + S, 1 + N - S), rtol=1e-9)
    np.testing.assert_allclose(rhi, stats.beta.ppf(0.975, 1 + S, 1 + N - S), rtol=1e-9)


def test_an_all_zero_start_stops_only_the_average_guarantee():
    # the first 6 labels of every stratum are all correct: pooling alone narrows every pooled
    # interval within the target, while no interval valid for the stratum's own rate can be:
    # even the Clopper-Pearson upper bound of 0 of 6 at 0.965 is far above 0.05 (scipy)
    s, n = np.zeros(10, int), np.full(10, 6)
    assert stats.beta.ppf(0.965, 1, 6) > 2 * 0.05
    average, stratum = _state_stop_validity(s, n, guarantee="average"), _state_stop_validity(s, n, guarantee="stratum")
    assert average.is_done() and np.all(average.stop_halfwidths() <= 0.05)
    assert not stratum.is_done() and np.all(stratum.stop_halfwidths() > 0.05)


def run_campaign(path, pool_campaign_metrics, **kw) -> Campaign:
    c = Campaign.create(
        path, pool_campaign_metrics[["stratum", "y_pred"]], strata="stratum", y_pred="y_pred", random_seed=0, **kw
    )
    while not c.done:
        batch = c.propose(40)
        if batch.empty:
            break
        c.ingest(pool_campaign_metrics.loc[batch.index, "y_true"])
    return c


def test_each_metric_counts_every_labelled_row_it_is_a_trial_of(tmp_path, pool_campaign_metrics):
    c = run_campaign(tmp_path / "c.db", pool_campaign_metrics, metric=["tpr", "fpr"], goal=Each(0.1))
    labelled = pool_campaign_metrics.loc[c.labels().index]
    truth, pred = labelled["y_true"].to_numpy(), labelled["y_pred"].to_numpy()
    g = labelled["stratum"].to_numpy()
    for metric, trial, success in (
        ("recall", truth == 1, (truth == 1) & (pred == 1)),
        ("fpr", truth == 0, (truth == 0) & (pred == 1)),
    ):
        counts = c.counts(metric).to_frame()
        expected_n = pd.Series(trial.astype(int)).groupby(g).sum()
        expected_s = pd.Series(success.astype(int)).groupby(g).sum()
        assert counts["trials"].tolist() == expected_n.tolist()
        assert counts["successes"].tolist() == expected_s.tolist()
    status = c.status()
    assert list(status.index.names) == ["metric", "stratum"]
    assert status.index.get_level_values("metric").unique().tolist() == ["recall", "fpr"]
    # stopped because every metric of every stratum met the target (none ran out of rows)
    assert (status["halfwidth"] <= 0.1).all() and not status["exhausted"].any()
    # the rows are shared: labelled per stratum is the same in both metric blocks
    assert (status.loc["recall", "labelled"].to_numpy() == status.loc["fpr", "labelled"].to_numpy()).all()
    assert int(status.loc["recall", "labelled"].sum()) == c.labels_used
    c.close()
