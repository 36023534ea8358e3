"""Goals as objects: the same campaign whether the goal is named or given as an object.

References: SciPy's Beta quantiles and CDF for the independent posteriors the goals read, and the
campaign with the goal given by name (settings as keyword arguments).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval.campaign import Campaign, CampaignSpec, Decide, Each, Gap, Overall
from bayeseval.campaign.simulation import simulate, synthetic_pool
from bayeseval.campaign.state import RuleState


@pytest.fixture(scope="module")
def pool():
    return synthetic_pool(n_rows=4000, n_strata=4, random_seed=2)


@pytest.mark.parametrize(("obj", "named"), [
    (Each(0.08), dict(goal="each", target_halfwidth=0.08)),
    (Overall(0.03), dict(goal="overall", target_halfwidth=0.03)),
    (Decide(0.12, margin=0.02), dict(goal="decide", threshold=0.12, margin=0.02)),
    (Gap(0.2), dict(goal="gap", tolerance=0.2)),
])
def test_a_goal_object_is_its_name_with_its_settings(obj, named):
    spec = CampaignSpec(y_pred="pred", strata="stratum", goal=obj)
    assert spec == CampaignSpec(y_pred="pred", strata="stratum", **named)
    assert spec.goal == named["goal"] and spec.goal.name == named["goal"]
    # stored as a name and settings: the configuration reads back to the same spec
    assert CampaignSpec.from_config(spec.to_config()) == spec


def test_simulate_and_create_run_the_same_campaign_with_either(tmp_path, pool):
    kw = dict(strata="stratum", y_pred="pred", y_true="truth", rules=["expected_width"], n_repeats=1, batch_size=40,
              random_seed=3, progress=False)
    a = simulate(pool, goal=Decide(0.1), **kw).table
    b = simulate(pool, goal="decide", threshold=0.1, **kw).table
    pd.testing.assert_frame_equal(a.drop(columns="wall_time"), b.drop(columns="wall_time"))
    with Campaign.create(tmp_path / "c.db", pool.drop(columns="truth"), strata="stratum", y_pred="pred",
                         goal=Gap(0.3), random_seed=1) as camp:
        assert camp.spec.goal == Gap(0.3) and camp.spec.tolerance == 0.3
    with Campaign.open(tmp_path / "c.db") as camp:
        assert camp.spec.goal == Gap(0.3)


def test_goal_settings_given_twice_or_out_of_range_name_the_argument():
    with pytest.raises(TypeError, match=r"goal=Each.*\['target_halfwidth'\]"):
        CampaignSpec(y_pred="pred", goal=Each(0.1), target_halfwidth=0.2)
    with pytest.raises(ValueError, match="halfwidth.*0.7"):
        Each(0.7)
    with pytest.raises(ValueError, match="direction.*'up'"):
        Decide(0.1, "up")
    with pytest.raises(ValueError, match="tolerance.*1.5"):
        Gap(1.5)
    with pytest.raises(ValueError, match="goal .some.*valid choices"):
        CampaignSpec(y_pred="pred", goal="some")


def test_each_and_decide_read_the_independent_posterior_like_scipy():
    s, n = np.array([3, 30, 12]), np.array([200, 200, 150])
    st = RuleState.from_counts(s, n, available=[0] * 3, model="independent", guarantee="average",
                               target_halfwidth=0.03)
    hw = (stats.beta.ppf(0.975, 1 + s, 1 + n - s) - stats.beta.ppf(0.025, 1 + s, 1 + n - s)) / 2
    assert Each(0.03).met(st).tolist() == (hw <= 0.03).tolist()
    dec = RuleState.from_counts(s, n, available=[10] * 3, model="independent", guarantee="average",
                                goal=Decide(0.1, "below"), threshold=np.full(3, 0.1))
    p = stats.beta.cdf(0.1, 1 + s, 1 + n - s)
    assert dec.goal.met(dec).tolist() == ((p >= 0.95) | (p <= 0.05)).tolist()
    assert not dec.is_done()  # stratum 2 is undecided and has rows left
    assert dec.decisions().tolist() == [
        "meets" if q >= 0.95 else "fails" if q <= 0.05 else "undecided" for q in p]
