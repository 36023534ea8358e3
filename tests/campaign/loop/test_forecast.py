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
from bayeseval.campaign import Campaign, Decide, Each
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
from tests.helpers import exact_pool


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


def _run_rounds(c, pool, rounds, batch):
    """Propose and ingest the true labels ``rounds`` times; the campaign's warnings."""
    seen = []
    for _ in range(rounds):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            b = c.propose(batch)
        seen += [str(w.message) for w in rec if issubclass(w.category, PrecisionLimitedWarning)]
        if len(b) == 0:
            break
        c.ingest(pool.loc[b.index, "truth"])
    return seen


def _pool():
    sizes = {"small": 46, "mid": 200, "large": 727}
    return pd.DataFrame({"g": np.repeat(list(sizes), list(sizes.values())), "pred": 0})


def _label_everything(c, truth):
    while len(batch := c.propose(500)):
        c.ingest(
            pd.DataFrame({"row": batch.index, "label": truth.loc[batch.index].to_numpy()}),
            id_column="row",
            label_column="label",
        )


def test_warning_once_when_a_stratum_cannot_be_decided_with_its_rows_left(tmp_path):
    pool = exact_pool([0.123, 0.02], [3000, 1000], random_seed=5)
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="stratum",
        y_pred="pred",
        goal=Decide(0.12),
        rule="independent_beta",
        random_seed=2,
    )
    seen = _run_rounds(c, pool, 8, 250)
    about_s0 = [m for m in seen if "'s0'" in m]
    assert len(about_s0) == 1 and "\n" not in about_s0[0] and "rows left of it" in about_s0[0]
    assert not any("'s1'" in m for m in seen)
    # independent check: at the current rate the one-sided test needs more trials than the
    # stratum has rows (normal approximation)
    st = c.status().loc["s0"]
    rate = st["successes"] / st["trials"]
    need = stats.norm.ppf(0.95) ** 2 * rate * (1 - rate) / (rate - 0.12) ** 2
    assert need > 3000
    f = c.forecast(cost=True)
    assert f.loc["s0", "beyond"] == "rows" and f.loc["s0", "labels"] == 3000 - st["labelled"] - st["pending"]
    c.close()
    c = Campaign.open(tmp_path / "c.db")  # remembered in the file: not said again
    assert not [m for m in _run_rounds(c, pool, 1, 100) if "'s0'" in m]
    c.close()


def test_warning_once_when_the_budget_runs_out_before_a_stratum_is_decided(tmp_path):
    pool = exact_pool([0.123, 0.02], [40_000, 1000], random_seed=6)
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="stratum",
        y_pred="pred",
        goal=Decide(0.12),
        rule="independent_beta",
        budget=3000,
        random_seed=2,
    )
    seen = _run_rounds(c, pool, 8, 250)
    about_s0 = [m for m in seen if "'s0'" in m]
    assert len(about_s0) == 1 and "labels left in the budget" in about_s0[0]
    f = c.forecast(cost=True)
    assert f.loc["s0", "beyond"] == "budget"
    assert pd.isna(f.loc["s1", "beyond"])
    c.close()


def test_the_achievable_halfwidth_is_what_the_campaign_reaches_labelled_to_the_end(tmp_path):
    # every stratum at an error rate of exactly 0.5, the planning rate at creation (the prior
    # mean), and a target no stratum can meet: the campaign labels every row of every stratum
    sizes = {"small": 40, "mid": 120, "large": 300}
    pool = pd.DataFrame(
        {
            "g": np.repeat(list(sizes), list(sizes.values())),
            "pred": 0,
            "truth": np.concatenate([[0, 1] * (n // 2) for n in sizes.values()]),
        }
    )
    expected = r"3 of 3 strata \(achievable half-width per stratum, every row labelled"
    with pytest.warns(PrecisionLimitedWarning, match=expected) as record:
        c = Campaign.create(
            tmp_path / "c.db", pool, strata="g", y_pred="pred", goal=Each(0.03), random_seed=0, guarantee="average"
        )
    assert np.allclose(c.state().posterior.mean(), 0.5)  # the planning rate
    table = c.feasibility()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        _label_everything(c, pool["truth"])
        status = c.status()
    assert status["labelled"].to_dict() == sizes and not status["done"].any()
    assert (table["max_trials"] == status["trials"]).all()
    # independent reference: the half-width the campaign ends with, every row labelled
    np.testing.assert_allclose(table["achievable_halfwidth"], status["halfwidth"], rtol=1e-9)
    message = str(record[0].message)
    for name, hw in status["halfwidth"].items():
        assert f"{name}: {hw:.3f}" in message
    # the own-data Wilson half-width, the figure before, overstates it (0.148 against 0.107)
    lo, hi = proportion_confint(20, 40, alpha=0.05, method="wilson")
    assert (hi - lo) / 2 > status.loc["small", "halfwidth"] + 0.03
    c.close()


def test_create_warns_naming_the_strata_that_cannot_reach_the_target(tmp_path):
    with pytest.warns(PrecisionLimitedWarning, match=r"2 of 3 strata.*mid: 0\.0\d\d.*small: 0\.\d\d\d"):
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred", goal=Each(0.05))
    table = c.feasibility()
    assert table["feasible"].to_dict() == {"large": True, "mid": False, "small": False}
    assert table["max_trials"].to_dict() == {"large": 727, "mid": 200, "small": 46}
    c.close()


def test_a_feasible_target_is_silent_and_the_forecast_repeats_the_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionLimitedWarning)
        Campaign.create(tmp_path / "ok.db", _pool(), strata="g", y_pred="pred", goal=Each(0.2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred", goal=Each(0.05))
    with pytest.warns(PrecisionLimitedWarning, match="small"):
        c.forecast()
