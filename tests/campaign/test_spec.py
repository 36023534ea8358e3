"""One campaign specification shared by Campaign.create and simulate.

The reference for a real campaign is the simulation of the same spec (and the other way
round): a campaign whose labeller answers with the true labels must propose the same rows,
stop at the same round and report the same intervals as repeat 0 of ``simulate``.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval import Guarantee, PooledModel
from bayeseval.campaign import Annotation, Budget, Campaign, CampaignSpec, Decide, Each, Gap, Overall, Score
from bayeseval.campaign.simulation import simulate
from tests.campaign.helpers import _twin_pool
from tests.helpers import _campaign_pool, make_pool_hardening_campaign


def drive(campaign: Campaign, pool_campaign_spec: pd.DataFrame) -> list[pd.DataFrame]:
    """Label every proposed batch with the true labels until the campaign stops."""
    batches = []
    while not campaign.done:
        batch = campaign.propose()
        if len(batch) == 0:
            break
        batches.append(batch)
        campaign.ingest(pool_campaign_spec.loc[batch.index, "truth"])
    return batches


def run_both(tmp_path, pool_campaign_spec, spec):
    sim = simulate(pool_campaign_spec, y_true="truth", **spec.keywords("simulate"), n_repeats=1, progress=False)
    camp = Campaign.create(tmp_path / "c.db", pool_campaign_spec, **spec.keywords())
    batches = drive(camp, pool_campaign_spec)
    return sim, camp, batches


@pytest.mark.parametrize(
    "goal, exc, names",
    [
        ("decide", ValueError, ["goal='decide'", "Decide(threshold)"]),
        ("gap", ValueError, ["goal='gap'", "Gap(tolerance)"]),
        ("some", ValueError, ["goal", "'some'", "Each"]),
        (0.05, ValueError, ["goal", "0.05"]),
    ],
)
def test_goal_names_other_than_the_width_shorthands_are_refused_naming_the_goal(goal, exc, names):
    with pytest.raises(exc) as info:
        CampaignSpec(y_pred="pred", strata="stratum", goal=goal)
    for name in names:
        assert name in str(info.value)


@pytest.mark.parametrize(
    "make, exc, names",
    [
        (lambda: Decide(1.5), ValueError, ["threshold", "1.5"]),
        (lambda: Decide("x"), TypeError, ["threshold", "'x'"]),
        (lambda: Decide(0.1, "up"), ValueError, ["direction", "'up'"]),
        (lambda: Gap(0), ValueError, ["tolerance", "0"]),
        (lambda: Each(0.5), ValueError, ["halfwidth", "0.5"]),
    ],
)
def test_goal_parameters_are_validated_naming_the_argument_and_value(make, exc, names):
    with pytest.raises(exc) as info:
        make()
    for name in names:
        assert name in str(info.value)


@pytest.mark.parametrize("name", ["target_halfwidth", "threshold", "direction", "tolerance", "margin"])
def test_goal_parameters_are_not_campaign_settings(tmp_path, pool_campaign_spec, name):
    # a goal parameter given beside the goal is Python's own TypeError: the goal object carries it
    for call in (
        lambda: CampaignSpec(y_pred="pred", **{name: 0.1}),
        lambda: Campaign.create(tmp_path / "c.db", pool_campaign_spec, y_pred="pred", **{name: 0.1}),
        lambda: simulate(pool_campaign_spec, y_pred="pred", y_true="truth", **{name: 0.1}),
    ):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
            call()
    assert not (tmp_path / "c.db").exists()


@pytest.mark.parametrize(
    "metric, direction",
    [
        ("error_rate", "below"),
        ("fpr", "below"),
        ("fnr", "below"),
        ("accuracy", "above"),
        ("recall", "above"),
        ("precision", "above"),
    ],
)
def test_direction_defaults_to_the_metric_kind(metric, direction):
    assert CampaignSpec(y_pred="p", metric=metric, goal=Decide(0.2)).goal.direction == direction


def test_margin_is_validated_naming_it():
    with pytest.raises(ValueError, match="margin"):
        CampaignSpec(y_pred="pred", goal=Decide(0.1, margin=0.6))
    with pytest.raises(TypeError, match="margin"):
        CampaignSpec(y_pred="pred", goal=Decide(0.1, margin=True))


@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"metric": ["tpr", "recall"]}, ValueError, ["same metric twice", "recall"]),
        ({"metric": []}, ValueError, ["metric", "[]"]),
        ({"metric": ["tpr", "fpr"], "rule": "neyman"}, ValueError, ["rule='neyman'", "'recall', 'fpr'"]),
        ({"metric": ["tpr", "fpr"], "goal": Decide(0.1)}, ValueError, ["goal='decide'", "one metric"]),
        ({"metric": 3}, TypeError, ["metric", "3"]),
    ],
)
def test_several_metrics_are_validated_naming_the_argument(kwargs, exc, names):
    with pytest.raises(exc) as info:
        CampaignSpec(y_pred="p", strata="g", **kwargs)
    for name in names:
        assert name in str(info.value)


@pytest.mark.parametrize("rule", ["expected_width", "thompson"])
def test_simulate_replays_the_campaign_of_the_same_spec(tmp_path, pool_campaign_spec, rule):
    spec = CampaignSpec(y_pred="pred", strata="stratum", goal=Each(0.08), batch_size=25, rule=rule, random_seed=11)
    sim, camp, batches = run_both(tmp_path, pool_campaign_spec, spec)
    # same number of rounds and labels, the same labels per stratum and the same counts
    assert len(batches) == int(sim.table["rounds"].iloc[0])
    assert camp.labels_used == int(sim.table["labels_used"].iloc[0])
    status = camp.status()
    final = sim.intervals.set_index("stratum")
    assert status["labelled"].tolist() == final["labelled"].tolist()
    assert status["trials"].tolist() == final["trials"].tolist()
    np.testing.assert_allclose(status["lower"], final["lower"], rtol=1e-12)
    np.testing.assert_allclose(status["upper"], final["upper"], rtol=1e-12)
    # the half-width before each round, as the campaign logged it, is the simulation's trace
    logged = [d["max_halfwidth"] for d in camp.history()["details"]]
    np.testing.assert_allclose(logged, sim.trace["max_halfwidth"].to_numpy()[:-1], rtol=1e-12)
    # and the successes come from the labelled rows themselves (independent count)
    rows = pool_campaign_spec.loc[pd.concat(batches).index]
    errors = (rows["pred"] != rows["truth"]).groupby(rows["stratum"]).sum()
    assert status["successes"].tolist() == errors.reindex(status.index, fill_value=0).tolist()
    camp.close()


# PrecisionLimitedWarning expected: small strata of the pool cannot reach target_halfwidth=0.08
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_the_average_guarantee_stops_a_campaign_as_in_simulate(tmp_path, pool_campaign_spec):
    spec = CampaignSpec(
        y_pred="pred", strata="stratum", goal=Each(0.08), batch_size=25, random_seed=5, guarantee="average"
    )
    sim, camp, _ = run_both(tmp_path, pool_campaign_spec, spec)
    assert camp.labels_used == int(sim.table["labels_used"].iloc[0])
    st = camp.state()
    # at stop every stratum's pooled 95% interval is within the target, or its rows ran out
    lo, hi = st.posterior.interval(0.95)
    assert np.all(((hi - lo) / 2 <= 0.08) | (st.available == 0))
    camp.close()


def test_the_spec_is_stored_and_read_back(tmp_path, pool_campaign_spec):
    spec = CampaignSpec(
        y_pred="pred",
        strata="stratum",
        goal=Each(0.07),
        level=0.9,
        batch_size=13,
        guarantee="average",
        model="auto",
        random_seed=4,
    )
    Campaign.create(tmp_path / "c.db", pool_campaign_spec, **spec.keywords()).close()
    with Campaign.open(tmp_path / "c.db") as camp:
        # the default label set is resolved on the pool and stored with the rest
        assert camp.spec == spec.replace(label_set=[0, 1])
        assert len(camp.propose()) == 13  # the stored batch size is propose's default


@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"y_pred": None}, TypeError, ["y_pred", "None"]),
        ({"batch_size": 0}, ValueError, ["batch_size", "0"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"goal": "some"}, ValueError, ["goal", "some"]),
        ({"score_bins": 3}, ValueError, ["score_bins", "3"]),
        ({"rule": "nope"}, ValueError, ["rule", "nope"]),
        ({"label_set": [0, "a"]}, ValueError, ["label_set", "'a'"]),
    ],
)
def test_spec_validation_names_the_field_and_the_value(kwargs, exc, names):
    settings = {"y_pred": "pred", "strata": "stratum", **kwargs}
    with pytest.raises(exc) as err:
        CampaignSpec(**settings)
    assert all(n in str(err.value) for n in names), str(err.value)


def test_spec_is_refused_and_its_keywords_name_the_way(tmp_path, pool_campaign_spec):
    spec = CampaignSpec(y_pred="pred", strata="stratum")
    with pytest.raises(TypeError, match=r"simulate\(\) no longer takes spec=.*spec.keywords\('simulate'\)"):
        simulate(pool_campaign_spec, y_true="truth", spec=spec, progress=False)
    with pytest.raises(TypeError, match=r"Campaign.create\(\) no longer takes spec=.*\*\*spec.keywords\(\)"):
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, spec=spec)
    assert not (tmp_path / "c.db").exists()


def test_simulate_applies_the_same_costs_overall_goal_matches_neyman_with_costs():
    # goal "overall" on two identical strata with equal weights: the cost-optimal allocation
    # (Cochran, Sampling Techniques, 5.5) is n_k proportional to w_k S_k / sqrt(c_k), so the
    # cheap twin gets sqrt(4) = 2 times the labels of the one 4x as expensive
    pool_campaign_spec = _twin_pool(4000)
    spec = CampaignSpec(y_pred="pred", strata="g", goal=Overall(0.03), batch_size=20, costs=[1.0, 4.0], random_seed=0)
    res = simulate(pool_campaign_spec, y_true="truth", **spec.keywords("simulate"), n_repeats=2, progress=False)
    n = res.intervals.groupby("stratum")["labelled"].sum()
    assert 1.7 <= n["cheap"] / n["dear"] <= 2.3


def test_costs_need_a_gain_rule():
    with pytest.raises(ValueError, match="costs need a rule .* got rule='neyman'"):
        CampaignSpec(y_pred="p", costs=[1.0, 2.0], rule="neyman")


def test_the_guarantee_is_stored_and_older_files_open_as_average(tmp_path, pool_campaign_spec):
    assert CampaignSpec(y_pred="pred").guarantee is Guarantee.stratum()
    with pytest.raises(ValueError, match="guarantee.*'each'"):
        CampaignSpec(y_pred="pred", guarantee="each")
    Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="stratum", y_pred="pred", guarantee="average").close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.guarantee is Guarantee.average()
    Campaign.create(tmp_path / "d.db", pool_campaign_spec, strata="stratum", y_pred="pred").close()
    conn = sqlite3.connect(tmp_path / "d.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    assert config.pop("guarantee") == "stratum"
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "d.db") as c:  # written before the setting: the rule it had then
        assert c.spec.guarantee is Guarantee.average()


@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"anytime": "yes"}, TypeError, ["anytime", "'yes'"]),
        ({"anytime": 1}, TypeError, ["anytime", "1"]),
        ({"anytime": True, "guarantee": "average"}, ValueError, ["anytime", "guarantee='average'"]),
        ({"anytime": True, "goal": "overall"}, ValueError, ["anytime", "goal='overall'"]),
        ({"anytime": True, "proxy": "judge"}, ValueError, ["anytime", "proxy='judge'"]),
    ],
)
def test_anytime_settings_are_validated(kwargs, exc, names):
    with pytest.raises(exc) as err:
        CampaignSpec(y_pred="pred", strata="stratum", **kwargs)
    assert all(n in str(err.value) for n in names), str(err.value)


def test_anytime_is_stored_and_defaults_to_false(pool_campaign_spec):
    spec = CampaignSpec(y_pred="pred", strata="stratum", anytime=True, goal=Each(0.1))
    assert CampaignSpec.from_config(spec.to_config()).anytime is True
    assert CampaignSpec(y_pred="pred", strata="stratum").anytime is False
    # decision goals plan each stratum's sequence for its rows (at most 4,000)
    from bayeseval._kernels.anytime import tuned_concentration
    from bayeseval.campaign.loop.pool import design_pool

    spec = CampaignSpec(y_pred="pred", strata="stratum", anytime=True, goal=Decide(0.1))
    design = design_pool(spec, pool_campaign_spec)
    expected = [tuned_concentration(int(min(max(n, 20), 4000))) for n in design.strata.n_eligible]
    np.testing.assert_allclose(design.strata.concentration, expected)


def test_the_metrics_are_stored_and_read_back(tmp_path, pool_campaign_metrics):
    spec = CampaignSpec(y_pred="y_pred", strata="stratum", metric=["recall", "precision"], random_seed=2)
    assert spec.metrics == ("recall", "precision")
    Campaign.create(tmp_path / "c.db", pool_campaign_metrics[["stratum", "y_pred"]], **spec.keywords()).close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.metrics == ("recall", "precision")
        assert [m.name for m in c.metrics] == ["recall", "precision"]
        # recall needs every row, so every row is eligible, not only the predicted positives
        batch = c.propose(200)
        assert (pool_campaign_metrics.loc[batch.index, "y_pred"] == 0).any()


def test_old_files_with_stopping_fields_open_without_them(tmp_path):
    pool = _campaign_pool()
    spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.08), random_seed=3)
    Campaign.create(tmp_path / "c.db", pool, **spec.keywords()).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    assert "own_floor" not in config
    config.update(
        stop_level=None,
        own_check=None,
        min_data_share=0.0,
        own_level="default",
        own_floor=2.0,
        min_pooling_gain=None,
        read_threshold=0.2,
        adaptive_floor=None,
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as camp:
        # the campaign stores the label set it found in the pool and the batch size scaled to it
        # (one per 400 rows, at least 10); every other setting is the spec's
        assert camp.spec.batch_size == max(len(pool) // 400, 10)
        assert camp.spec.replace(label_set=None) == spec.replace(batch_size=camp.spec.batch_size)
        assert camp.status()["labelled"].sum() == 0


def test_an_older_file_without_the_new_settings_still_opens(tmp_path, pool_campaign_spec):
    Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="stratum", y_pred="pred", random_seed=0).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    for key in ("batch_size", "model"):
        config.pop(key)
    config.update(stop_level=None, own_check=None, min_data_share=0.0)  # settings files once had
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as camp:
        spec = camp.spec
        assert spec.batch_size == 10 and not hasattr(spec, "stop_level")
        assert spec.model == "auto"  # files from before the model setting used the automatic switch
        assert len(camp.propose()) == 10


@pytest.mark.parametrize(
    "name, keywords",
    [
        ("annotators", lambda v: {"annotation": Annotation(annotators=v)}),
        ("budget", lambda v: {"budget": v}),
        ("batch_size", lambda v: {"budget": Budget(batch_size=v)}),
    ],
)
# PrecisionLimitedWarning expected: 50 rows a stratum cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_bool_where_a_count_is_wanted_is_a_type_error_naming_it(name, keywords, tmp_path):
    pool_campaign_spec = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
    with pytest.raises(TypeError, match=rf"^(\w+\.)?{name} must be an integer >= 1, got True \(a bool, not a count\)"):
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="g", y_pred="pred", **keywords(True))
    assert not (tmp_path / "c.db").exists()
    c = Campaign.create(tmp_path / "d.db", pool_campaign_spec, strata="g", y_pred="pred", random_seed=0, **keywords(1))
    assert getattr(c.spec, name) == 1


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"model": PooledModel("robust", prior={"mu": stats.beta(2, 8)})}, TypeError, ["model.prior", "dict"]),
        ({"model": PooledModel("robust", engine="pymc")}, ValueError, ["model.engine", "'pymc'"]),
        ({"metric": "recall", "pos_label": 2}, ValueError, ["pos_label", "2"]),
        ({"metric": "precision", "pos_label": "yes"}, ValueError, ["pos_label", "yes"]),
        ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
        ({"random_seed": "abc"}, TypeError, ["random_seed", "abc"]),
        ({"random_seed": 1.5}, TypeError, ["random_seed", "1.5"]),
        ({"goal": "decide"}, ValueError, ["goal='decide'", "Decide(threshold)"]),
        ({"goal": Decide({"g0": 0.1})}, ValueError, ["threshold", "g1"]),
        ({"goal": Gap(0.1), "metric": ["tpr", "fpr"]}, ValueError, ["goal='gap'", "one metric"]),
        ({"budget": 0}, ValueError, ["budget", "0"]),
        ({"level": 1.0}, ValueError, ["level", "1.0"]),
        ({"rule": "best"}, ValueError, ["rule", "best"]),
        ({"model": "flat"}, ValueError, ["model", "flat"]),
        ({"busy_timeout": 5}, TypeError, ["busy_timeout", "Campaign.open"]),
        ({"weights": {"g0": 1.0}}, ValueError, ["weights", "g1"]),
    ],
)
def test_bad_settings_are_refused_before_any_file_exists(tmp_path, kwargs, exc, names):
    with pytest.raises(exc) as err:
        Campaign.create(tmp_path / "c.db", make_pool_hardening_campaign(), strata="g", y_pred="pred", **kwargs)
    for name in names:
        assert name in str(err.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("bins", [0, -2, [0.5], [0.9, 0.5], [0.1, math.nan, 0.9], "3", True])
def test_bad_score_bins(tmp_path, bins):
    pool = make_pool_hardening_campaign()
    pool["score"] = np.linspace(0.5, 1.0, len(pool))
    with pytest.raises((ValueError, TypeError), match=r"score\.bins"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", score=Score("score", bins=bins))
    assert os.listdir(tmp_path) == []
