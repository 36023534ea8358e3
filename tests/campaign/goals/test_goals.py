"""Goals as objects that carry their parameters, stored under the campaign file's keys.

References: SciPy's Beta quantiles and CDF for the independent posteriors the goals read, the
campaign with the goal given by its shorthand name, and campaign files' keys written by hand.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval.campaign import Budget, Campaign, CampaignSpec, Decide, Each, Gap, Overall
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.simulation import simulate, synthetic_pool
from tests.campaign.helpers import make_pool, oracle
from tests.helpers import exact_pool


@pytest.fixture(scope="module")
def pool():
    return synthetic_pool(n_rows=4000, n_strata=4, random_seed=2)


@pytest.mark.parametrize(
    "goal",
    [Each(0.08), Overall(0.03), Decide(0.12, "below", margin=0.02), Decide((0.1, 0.2, 0.1, 0.3), "above"), Gap(0.2)],
)
def test_a_goal_is_stored_as_its_name_and_parameters_and_read_back(goal):
    spec = CampaignSpec(y_pred="pred", strata="stratum", goal=goal)
    assert spec.goal == goal and spec.goal == goal.name
    config = spec.to_config()
    # the campaign file keeps one key per goal parameter, whatever the goal
    assert {"goal", "target_halfwidth", "threshold", "direction", "margin", "tolerance"} <= set(config)
    assert config["goal"] == goal.name
    assert CampaignSpec.from_config(config) == spec


@pytest.mark.parametrize(("name", "goal"), [("each", Each(0.05)), ("overall", Overall(0.05))])
def test_the_width_shorthands_are_the_goals_with_the_default_halfwidth(name, goal):
    spec = CampaignSpec(y_pred="pred", strata="stratum", goal=name)
    assert spec == CampaignSpec(y_pred="pred", strata="stratum", goal=goal)
    assert type(spec.goal) is type(goal) and spec.goal.halfwidth == 0.05


def test_a_file_written_with_goal_settings_as_keys_opens_with_its_goal():
    # the keys of campaign files (goal name plus one key per parameter) read back as the goal object
    old = {
        "prediction": "pred",
        "strata": ["stratum"],
        "goal": "decide",
        "target_halfwidth": 0.05,
        "threshold": [0.1, 0.2],
        "direction": "above",
        "margin": 0.01,
        "tolerance": None,
        "metric": "accuracy",
    }
    assert CampaignSpec.from_config(old).goal == Decide((0.1, 0.2), "above", margin=0.01)
    each = {
        "prediction": "pred",
        "strata": ["stratum"],
        "goal": "each",
        "target_halfwidth": 0.02,
        "threshold": None,
        "direction": None,
        "margin": 0.0,
        "tolerance": None,
    }
    assert CampaignSpec.from_config(each).goal == Each(0.02)


def test_simulate_and_create_run_the_same_campaign_with_either(tmp_path, pool):
    kw = dict(
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        rules=["expected_width"],
        n_repeats=1,
        budget=Budget(batch_size=40),
        random_seed=3,
        progress=False,
    )
    a = simulate(pool, goal=Each(0.05), **kw).table
    b = simulate(pool, goal="each", **kw).table
    pd.testing.assert_frame_equal(a.drop(columns="wall_time"), b.drop(columns="wall_time"))
    with Campaign.create(
        tmp_path / "c.db", pool.drop(columns="truth"), strata="stratum", y_pred="pred", goal=Gap(0.3), random_seed=1
    ) as camp:
        assert camp.spec.goal == Gap(0.3) and camp.spec.goal.tolerance == 0.3
    with Campaign.open(tmp_path / "c.db") as camp:
        assert camp.spec.goal == Gap(0.3)


def test_goal_parameters_out_of_range_name_the_argument():
    with pytest.raises(ValueError, match="halfwidth.*0.7"):
        Each(0.7)
    with pytest.raises(ValueError, match="direction.*'up'"):
        Decide(0.1, "up")
    with pytest.raises(ValueError, match="tolerance.*1.5"):
        Gap(1.5)
    with pytest.raises(ValueError, match="goal must be a goal object.*'some'"):
        CampaignSpec(y_pred="pred", goal="some")


def test_each_and_decide_read_the_independent_posterior_like_scipy():
    s, n = np.array([3, 30, 12]), np.array([200, 200, 150])
    st = RuleState.from_counts(s, n, available=[0] * 3, model="independent", guarantee="average", target_halfwidth=0.03)
    hw = (stats.beta.ppf(0.975, 1 + s, 1 + n - s) - stats.beta.ppf(0.025, 1 + s, 1 + n - s)) / 2
    assert Each(0.03).met(st).tolist() == (hw <= 0.03).tolist()
    dec = RuleState.from_counts(
        s,
        n,
        available=[10] * 3,
        model="independent",
        guarantee="average",
        goal=Decide(0.1, "below"),
        threshold=np.full(3, 0.1),
    )
    p = stats.beta.cdf(0.1, 1 + s, 1 + n - s)
    assert dec.goal.met(dec).tolist() == ((p >= 0.95) | (p <= 0.05)).tolist()
    assert not dec.is_done()  # stratum 2 is undecided and has rows left
    assert dec.decisions().tolist() == ["meets" if q >= 0.95 else "fails" if q <= 0.05 else "undecided" for q in p]


def test_overall_goal_status(tmp_path):
    pool = make_pool(n=3000, k=4, seed=10)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", goal=Overall(0.08), random_seed=0)
    while not c.done:
        c.ingest(oracle(c.propose(40)))
    o = c.status().attrs["overall"]
    assert o["done"] and o["halfwidth"] <= 0.08
    # a 0.08 half-width on a rate near 0.4 needs about 1.96^2 * 0.24 / 0.08^2 ~ 144 labels
    assert 80 <= c.labels_used <= 240
    assert c.forecast().sum() == 0
    c.close()


# PrecisionLimitedWarning expected: two strata of 400 rows reach a guaranteed half-width of 0.054
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_file_without_the_goal_settings_still_opens(tmp_path):
    pool = exact_pool([0.05, 0.2], [400, 400])
    Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", random_seed=0).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    for key in ("threshold", "direction", "tolerance", "margin"):
        config.pop(key)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.goal == Each(0.05) and c.spec.to_config()["threshold"] is None


@pytest.mark.parametrize(
    ("metric", "direction"),
    [
        ("error_rate", "below"),
        ("fpr", "below"),
        ("fnr", "below"),
        ("selection_rate", "below"),  # no good side: the default, below
        ("accuracy", "above"),
        ("recall", "above"),
        ("precision", "above"),
        ("specificity", "above"),
        ("npv", "above"),
        ("tnr", "above"),
    ],
)
def test_a_decision_is_met_from_the_good_side_of_its_metric(metric, direction):
    assert CampaignSpec(y_pred="pred", metric=metric, goal=Decide(0.5)).goal.direction == direction
    assert Decide(0.5, "below").for_metric(metric).direction == "below"  # a direction given stays
