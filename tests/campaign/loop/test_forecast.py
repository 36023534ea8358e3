"""Tests of ``bayeseval.campaign.loop.forecast``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.anytime import anytime_decisions
from bayeseval.campaign.loop.forecast import (
    NO_TRIALS,
    decision_reach,
    forecast_decision,
    forecast_labels,
    forecast_table,
    forecast_text,
    forecast_total,
    target_feasibility,
)
from bayeseval.campaign.loop.rule_state import RuleState
from tests.campaign.helpers import atypical_state


def _p_decided_scipy(a, b, m, thr, margin, level=0.95):
    """P(decided after m trials) by enumerating SciPy's Beta-binomial predictive."""
    y = np.arange(m + 1)
    pmf = stats.betabinom(m, a, b).pmf(y)
    post = stats.beta(a + y, b + m - y)
    p = post.cdf(thr)
    band = (post.ppf((1 - level) / 2) >= thr - margin) & (post.ppf((1 + level) / 2) <= thr + margin)
    return float(pmf @ ((p >= level) | (p <= 1 - level) | band))


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
        m
        for m in range(0, 5000, 5)
        if np.diff(stats.beta.ppf([0.025, 0.975], 13 + 0.12 * m, 89 + 0.88 * m))[0] / 2 <= 0.05
    )
    assert abs(f.iloc[0] - need) <= 0.1 * need + 5


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


def test_forecast_with_a_margin_is_where_a_decision_becomes_more_likely_than_not():
    st = RuleState.from_counts(
        [1230], [10000], available=[10000], model="independent", goal="decide", threshold=np.array([0.12]), margin=0.008
    )
    f = int(forecast_decision(st).iloc[0])
    a, b = 1 + 1230, 1 + 10000 - 1230  # the independent posterior Beta(1 + s, 1 + n - s)
    assert _p_decided_scipy(a, b, f, 0.12, 0.008) > 0.5 > _p_decided_scipy(a, b, int(f * 0.9), 0.12, 0.008)
    assert decision_reach(st).tolist() == [None]
    bare = RuleState.from_counts(
        [1230], [10000], available=[10000], model="independent", goal="decide", threshold=np.array([0.12])
    )
    assert decision_reach(bare).tolist() == ["rows"]
    assert _p_decided_scipy(a, b, 10000, 0.12, 0.0) < 0.5  # no margin: out of reach of its rows


def test_the_forecast_of_a_held_stratum_comes_from_its_own_posterior():
    # the predictive of its own Jeffreys posterior, and the test the campaign stops on (the
    # anytime test under guarantee="stratum"), enumerated with SciPy's Beta-binomial
    s0, n0, thr = 3, 25, 0.16
    st = atypical_state(s0, n0, 3, thr, guarantee="stratum")
    m = int(forecast_decision(st).iloc[0])
    a, b = s0 + 0.5, n0 - s0 + 0.5

    def p_undecided(k):
        y = np.arange(k + 1)
        d = anytime_decisions(
            s0 + y, np.full(k + 1, n0 + k), thr, level=st.anytime_level(), concentration=st.decision_concentration()
        )
        return float(stats.betabinom.pmf(y, k, a, b) @ (d == "undecided"))

    assert m > 1
    assert p_undecided(m) <= 0.5 < p_undecided(m - 1)


def test_forecast_labels_each_goal_matches_the_closed_form():
    # independent model: n_eff = a + b of the Beta posterior; labels needed so that
    # halfwidth * sqrt(n_eff / (n_eff + m)) <= target
    st = RuleState.from_counts([10], [100], available=[10_000], model="independent", target_halfwidth=0.02)
    a, b = 11, 91
    lo, hi = stats.beta.ppf([0.025, 0.975], a, b)
    hw = (hi - lo) / 2
    m = int(np.ceil((a + b) * (hw / 0.02) ** 2 - (a + b)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = int(forecast_labels(st).iloc[0])
    assert abs(got - m) <= 1


def test_target_feasibility_recall_campaign_against_statsmodels():
    # recall: trials are the positives; 46-727 positives per stratum, target 0.05
    positives = np.array([46, 80, 150, 300, 727])
    rows = positives * 10
    table = target_feasibility(rows, 0.1, 0.05, strata=list("abcde"))
    for k, m in zip("abcde", positives, strict=True):
        lo, hi = proportion_confint(0.5 * m, m, alpha=0.05, method="wilson")
        assert table.loc[k, "achievable_halfwidth"] == pytest.approx((hi - lo) / 2, rel=1e-9)
        assert table.loc[k, "max_trials"] == pytest.approx(m)
    assert table["feasible"].tolist() == [False, False, False, False, True]
    with pytest.warns(PrecisionLimitedWarning, match=r"a: 0\.139"):
        target_feasibility(rows, 0.1, 0.05, strata=list("abcde"), warn=True)
    with pytest.raises(ValueError, match="p_trial"):
        target_feasibility(rows, 1.5, 0.05)
    with pytest.raises(ValueError, match="target_halfwidth"):
        target_feasibility(rows, 0.1, 0.0)


# forecasts that cannot be made say so -------------------------------------------------------
GOALS = {
    "each": {"goal": "each", "target_halfwidth": 0.05},
    "overall": {"goal": "overall", "target_halfwidth": 0.02},
    "gap": {"goal": "gap", "tolerance": 0.05},
    "decide": {"goal": "decide", "threshold": np.array([0.1, 0.1, 0.1])},
}


def _state(goal, s, n, available, **kw):
    return RuleState.from_counts(s, n, available=available, strata=["a", "b", "c"], **GOALS[goal], **kw)


def test_the_example_a_gap_forecast_before_two_strata_have_trials_is_missing_not_int64_min():
    for s, n in (([0, 0, 0], [0, 0, 0]), ([3, 0, 0], [40, 0, 0])):
        st = _state("gap", s, n, [500, 500, 500])
        t = forecast_table(st)
        assert t["labels"].dtype == "Int64" and t["labels"].isna().all()
        assert forecast_total(t["labels"]) is None
        assert forecast_text(t) == "cannot forecast yet: the gap needs labelled trials in at least two strata"
        assert forecast_decision(st).isna().all()


@pytest.mark.parametrize("goal", list(GOALS))
def test_no_label_in_a_stratum_means_no_forecast_for_it(goal):
    st = _state(goal, [0, 0, 0], [0, 0, 0], [500, 500, 500])
    t = forecast_table(st)
    assert t["labels"].isna().all() and t["note"].notna().all()
    assert forecast_text(t).startswith("cannot forecast yet: ")
    # one stratum without labels among labelled ones
    st = _state(goal, [4, 9, 0], [60, 60, 0], [500, 500, 500])
    t = forecast_table(st)
    assert pd.isna(t.loc["c", "labels"]) and forecast_text(t).startswith("cannot forecast yet: ")
    assert "no labelled trials yet in c" in forecast_text(t) or "none yet in c" in forecast_text(t)
    if goal in ("each", "decide"):  # per-stratum goals: the labelled strata keep their number
        assert t.loc[["a", "b"], "labels"].notna().all() and t.loc[["a", "b"], "note"].isna().all()
    else:  # the weighted rate and the gap depend on every stratum
        assert t["labels"].isna().all()


@pytest.mark.parametrize("goal", list(GOALS))
def test_every_row_labelled_forecasts_zero_whatever_the_goal(goal):
    st = _state(goal, [0, 6, 30], [40, 60, 50], [0, 0, 0])  # zero variance in "a", all rows labelled
    t = forecast_table(st)
    assert t["labels"].tolist() == [0, 0, 0] and forecast_total(t["labels"]) == 0


@pytest.mark.parametrize("goal", list(GOALS))
def test_zero_variance_and_a_zero_gap_give_finite_forecasts_within_the_rows(goal):
    # no error at all in any stratum: every rate's posterior is piled at 0, the gap is 0
    st = _state(goal, [0, 0, 0], [40, 40, 40], [500, 500, 500])
    labels = forecast_table(st)["labels"]
    assert labels.notna().all() and ((labels >= 0) & (labels <= 500)).all()


def test_zero_variance_each_forecast_matches_the_beta_closed_form():
    # 0 errors in 40, independent Beta(1, 41) posterior, target 0.01 (SciPy for the half-width)
    st = RuleState.from_counts([0], [40], available=[10_000], model="independent", target_halfwidth=0.01)
    lo, hi = stats.beta.ppf([0.025, 0.975], 1, 41)
    want = int(np.ceil(42 * (((hi - lo) / 2) / 0.01) ** 2 - 42))
    got = forecast_labels(st).iloc[0]
    assert abs(int(got) - want) <= 1


def test_the_decision_forecast_plans_on_the_test_the_campaign_stops_on():
    # 85 errors in 1,000 against 0.10 with 539 rows left: under guarantee="stratum" the anytime
    # test decides; enumerated with SciPy's Beta-binomial, it is more likely undecided than not
    # after every row left, so the forecast is every row and the stratum is beyond reach
    st = RuleState.from_counts(
        [85],
        [1000],
        available=[539],
        goal="decide",
        guarantee="stratum",
        model="independent",
        threshold=np.array([0.1]),
    )
    y = np.arange(540)
    a, b = 85 + 1, 1000 - 85 + 1  # the independent Beta(1 + s, 1 + n - s) posterior
    d = anytime_decisions(
        85 + y, np.full(540, 1539), 0.1, level=st.anytime_level(), concentration=st.decision_concentration()
    )
    assert float(stats.betabinom.pmf(y, 539, a, b) @ (d == "undecided")) > 0.5
    assert int(forecast_decision(st).iloc[0]) == 539 and decision_reach(st).tolist() == ["rows"]


def test_forecast_total_and_text_never_skip_missing_strata():
    labels = pd.Series([5, None, 7], index=["a", "b", "c"], dtype="Int64")
    assert forecast_total(labels) is None and forecast_total(labels.fillna(0)) == 12
    table = pd.DataFrame({"labels": labels, "note": [None, NO_TRIALS, None]})
    assert forecast_text(table) == "cannot forecast yet: no labelled trials yet in b"
