"""Tests of ``bayeseval.campaign.loop.status``: the status table's outcomes and the campaign's end state."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.campaign import Campaign, Decide, Each
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.status import outcome_text, status_frame, stratum_outcomes
from tests.helpers import exact_pool


def _label_all(c, pool, batch=400):
    """Propose and ingest the true labels until nothing is proposed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        while len(b := c.propose(batch)):
            c.ingest(pool.loc[b.index, "truth"])


def test_the_example_every_row_labelled_and_south_undecided_is_a_stop_not_a_goal_met():
    # south: 130 errors in 1,539, every row labelled; interval 0.0706-0.1006 against 0.10
    st = RuleState.from_counts(
        [2, 130],
        [400, 1539],
        available=[0, 0],
        goal="decide",
        guarantee="stratum",
        threshold=np.array([0.1, 0.1]),
        strata=["north", "south"],
    )
    frame = status_frame(st)
    assert frame.loc["south", "lower"] == pytest.approx(0.0706, abs=6e-4)
    assert frame.loc["south", "upper"] == pytest.approx(0.1006, abs=6e-4)
    assert frame.loc["south", "lower"] < 0.10 < frame.loc["south", "upper"]
    assert frame["outcome"].tolist() == ["decided: meets", "undecided: pool exhausted"]
    assert st.is_done() and not st.goal.reached(st)
    text = outcome_text([st])
    assert text.startswith("stopped: ") and "goal met" not in text
    assert "1 of 2 strata undecided, pool exhausted (south)" in text


def test_decided_and_undecided_strata_against_scipy_beta():
    # pooled guarantee, independent model: decided when the Beta(1 + s, 1 + n - s) posterior puts
    # at least 0.95 on one side of the threshold (SciPy), whatever the campaign computes
    s, n, thr = np.array([5, 30, 48, 70]), np.array([300, 300, 400, 300]), 0.12
    p_meets = stats.beta.cdf(thr, 1 + s, 1 + n - s)
    want_decided = (p_meets >= 0.95) | (p_meets <= 0.05)
    assert want_decided.tolist() == [True, False, False, True]  # the cases cover both kinds
    st = RuleState.from_counts(
        s,
        n,
        available=[0, 0, 0, 0],
        goal="decide",
        guarantee="average",
        model="independent",
        threshold=np.full(4, thr),
        strata=list("abcd"),
    )
    out = stratum_outcomes(st)
    assert [o.startswith("decided") for o in out] == want_decided.tolist()
    assert out[~want_decided].tolist() == ["undecided: pool exhausted"] * 2
    assert outcome_text([st]).startswith("stopped: 2 of 4 strata undecided, pool exhausted (b, c)")
    # rows left: still running, and the strata are "undecided" without a reason
    running = st.with_counts(available=np.array([0, 50, 50, 0]))
    assert stratum_outcomes(running)[1:3].tolist() == ["undecided", "undecided"]
    assert outcome_text([running]).startswith("running: ")
    # the budget spent: the open strata say so
    assert stratum_outcomes(running, budget_spent=True)[1] == "undecided: budget spent"
    assert outcome_text([running], budget_spent=True).startswith("stopped: ")


def test_at_the_threshold_within_the_margin_is_its_own_outcome_and_counts_as_decided():
    # 1,230 errors in 10,000 against 0.12 with a margin of 0.012: the Beta(1231, 8771) interval
    # at 0.95 lies within 0.108-0.132 while P(rate < 0.12) is between 0.05 and 0.95 (SciPy)
    lo, hi = stats.beta.ppf([0.025, 0.975], 1231, 8771)
    assert 0.108 < lo and hi < 0.132 and 0.05 < stats.beta.cdf(0.12, 1231, 8771) < 0.95
    st = RuleState.from_counts(
        [1230, 10],
        [10000, 1000],
        available=[0, 0],
        goal="decide",
        guarantee="average",
        model="independent",
        threshold=np.array([0.12, 0.12]),
        margin=0.012,
    )
    assert stratum_outcomes(st).tolist() == ["at the threshold (within the margin)", "decided: meets"]
    assert st.goal.reached(st) and outcome_text([st]).startswith("goal met: ")


def test_a_half_width_goal_stopped_by_an_exhausted_stratum_is_not_met():
    # 3 errors in 40, every row labelled: the Jeffreys 95% interval is wider than 0.05 (SciPy)
    lo, hi = stats.beta.ppf([0.025, 0.975], 3.5, 37.5)
    assert (hi - lo) / 2 > 0.05
    st = RuleState.from_counts(
        [3, 20], [40, 4000], available=[0, 0], model="independent", target_halfwidth=0.05, strata=["small", "large"]
    )
    assert stratum_outcomes(st).tolist() == ["not met: pool exhausted", "met"]
    assert st.is_done() and not st.goal.reached(st)
    assert outcome_text([st]).startswith("stopped: 1 of 2 strata not met, pool exhausted (small)")


def test_a_decision_campaign_labelled_to_the_end_says_stopped_in_status_cli_and_report(tmp_path, capsys):
    from bayeseval.campaign.report import campaign_report_html
    from bayeseval.cli.campaign import main

    pool = exact_pool([0.0, 0.095], [300, 600], random_seed=3)  # s1 sits just below the 0.10 threshold
    db = tmp_path / "c.db"
    c = Campaign.create(db, pool, strata="stratum", y_pred="pred", goal=Decide(0.1), random_seed=1)
    _label_all(c, pool)
    status = c.status()
    assert c.done and not c.goal_met
    assert status.loc["s1", "labelled"] == 600  # every row of s1 labelled
    assert status.loc["s0", "outcome"] == "decided: meets"
    assert status.loc["s1", "outcome"] == "undecided: pool exhausted"
    assert status.loc["s1", "lower"] < 0.1 < status.loc["s1", "upper"]
    assert c.outcome.startswith("stopped: ") and "s1" in c.outcome
    html = campaign_report_html(c, plots=False)
    assert "stopped: " in html and "goal met" not in html
    c.close()
    assert main(["campaign", "status", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "stopped: 1 of 2 strata undecided, pool exhausted (s1)" in out and "goal met" not in out
    assert main(["campaign", "status", "--db", str(db), "--json"]) == 0
    import json

    payload = json.loads(capsys.readouterr().out)
    assert payload["done"] is True and payload["goal_met"] is False and payload["outcome"].startswith("stopped")


def test_a_campaign_that_meets_its_goal_says_goal_met(tmp_path):
    pool = exact_pool([0.0, 0.3], [300, 300], random_seed=4)  # far from 0.10 on both sides
    c = Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", goal=Decide(0.1), random_seed=1)
    _label_all(c, pool, batch=50)
    assert c.done and c.goal_met
    assert c.outcome == "goal met: 1 decided, meets, 1 decided, fails"
    assert (c.status()["outcome"].str.startswith("decided")).all()
    assert (c.forecast() == 0).all()
    c.close()


def test_each_goal_campaign_with_a_small_stratum_stops_without_meeting_it(tmp_path):
    pool = exact_pool([0.1, 0.1], [30, 3000], random_seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        c = Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", goal=Each(0.08), random_seed=1)
    _label_all(c, pool)
    st = c.status()
    assert c.done and not c.goal_met
    assert st.loc["s0", "outcome"] == "not met: pool exhausted" and st.loc["s0", "halfwidth"] > 0.08
    assert st.loc["s1", "outcome"] == "met"
    assert c.outcome.startswith("stopped: ")
    c.close()
