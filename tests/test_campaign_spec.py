"""One campaign specification shared by Campaign.create and simulate.

The reference for a real campaign is the simulation of the same spec (and the other way
round): a campaign whose labeller answers with the true labels must propose the same rows,
stop at the same round and report the same intervals as repeat 0 of ``simulate``.
"""

from __future__ import annotations

import inspect
import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from bayeseval._api.results import Result
from bayeseval.campaign import Campaign, CampaignSpec, SimulationResult, simulate, synthetic_pool
from bayeseval.campaign.ingest import IngestResult
from bayeseval.cli.campaign import main


@pytest.fixture(scope="module")
def pool():
    return synthetic_pool(n_rows=6_000, n_strata=4, size_ratio=8, random_seed=3)


def drive(campaign: Campaign, pool: pd.DataFrame) -> list[pd.DataFrame]:
    """Label every proposed batch with the true labels until the campaign stops."""
    batches = []
    while not campaign.done:
        batch = campaign.propose()
        if len(batch) == 0:
            break
        batches.append(batch)
        campaign.ingest(pool.loc[batch.index, "truth"])
    return batches


def run_both(tmp_path, pool, spec):
    sim = simulate(pool, y_true="truth", spec=spec, n_repeats=1, progress=False)
    camp = Campaign.create(tmp_path / "c.db", pool, spec=spec)
    batches = drive(camp, pool)
    return sim, camp, batches


@pytest.mark.parametrize("rule", ["expected_width", "thompson"])
def test_simulate_replays_the_campaign_of_the_same_spec(tmp_path, pool, rule):
    spec = CampaignSpec(y_pred="pred", strata="stratum", target_halfwidth=0.08, batch_size=25, rule=rule,
                        random_seed=11)
    sim, camp, batches = run_both(tmp_path, pool, spec)
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
    rows = pool.loc[pd.concat(batches).index]
    errors = (rows["pred"] != rows["truth"]).groupby(rows["stratum"]).sum()
    assert status["successes"].tolist() == errors.reindex(status.index, fill_value=0).tolist()
    camp.close()


# PrecisionLimitedWarning expected: small strata of the pool cannot reach target_halfwidth=0.08
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_the_average_guarantee_stops_a_campaign_as_in_simulate(tmp_path, pool):
    spec = CampaignSpec(y_pred="pred", strata="stratum", target_halfwidth=0.08, batch_size=25, random_seed=5,
                        guarantee="average")
    sim, camp, _ = run_both(tmp_path, pool, spec)
    assert camp.labels_used == int(sim.table["labels_used"].iloc[0])
    st = camp.state()
    # at stop every stratum's pooled 95% interval is within the target, or its rows ran out
    lo, hi = st.posterior.interval(0.95)
    assert np.all(((hi - lo) / 2 <= 0.08) | (st.available == 0))
    camp.close()


def test_the_spec_is_stored_and_read_back(tmp_path, pool):
    spec = CampaignSpec(y_pred="pred", strata="stratum", target_halfwidth=0.07, level=0.9, batch_size=13,
                        guarantee="average", model="auto", random_seed=4)
    Campaign.create(tmp_path / "c.db", pool, spec=spec).close()
    with Campaign.open(tmp_path / "c.db") as camp:
        # the default label set is resolved on the pool and stored with the rest
        assert camp.spec == spec.replace(label_set=[0, 1])
        assert len(camp.propose()) == 13  # the stored batch size is propose's default


def test_an_older_file_without_the_new_settings_still_opens(tmp_path, pool):
    Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", random_seed=0).close()
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
    "kwargs, exc, names",
    [
        ({"y_pred": None}, TypeError, ["y_pred", "None"]),
        ({"batch_size": 0}, ValueError, ["batch_size", "0"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"goal": "some"}, ValueError, ["goal", "some"]),
        ({"score_bins": 3}, ValueError, ["score_bins", "3"]),
        ({"target_halfwidth": 0.5}, ValueError, ["target_halfwidth", "0.5"]),
        ({"rule": "nope"}, ValueError, ["rule", "nope"]),
        ({"label_set": [0, "a"]}, ValueError, ["label_set", "'a'"]),
    ],
)
def test_spec_validation_names_the_field_and_the_value(kwargs, exc, names):
    settings = {"y_pred": "pred", "strata": "stratum", **kwargs}
    with pytest.raises(exc) as err:
        CampaignSpec(**settings)
    assert all(n in str(err.value) for n in names), str(err.value)


def test_spec_and_settings_together_are_refused(tmp_path, pool):
    spec = CampaignSpec(y_pred="pred", strata="stratum")
    with pytest.raises(TypeError, match=r"spec=.*\['budget', 'target_halfwidth'\]"):
        simulate(pool, y_true="truth", spec=spec, target_halfwidth=0.1, budget=20, progress=False)
    with pytest.raises(TypeError, match=r"spec=.*\['budget'\]"):
        Campaign.create(tmp_path / "c.db", pool, spec=spec, budget=10)
    assert not (tmp_path / "c.db").exists()


def _same_table(a, b):
    cols = [c for c in a.table.columns if c != "wall_time"]
    pd.testing.assert_frame_equal(a.table[cols], b.table[cols])


def test_cli_ingest_reads_the_y_true_column_in_two_batches(tmp_path, pool):
    path = tmp_path / "pool.csv"
    pool.reset_index().to_csv(path, index=False)
    db, out = str(tmp_path / "c.db"), tmp_path / "b.csv"
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "row_id", "--strata", "stratum",
                 "--y-pred", "pred", "--db", db, "--seed", "1"]) == 0
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["answer"] = pool.loc[batch["row_id"], "truth"].to_numpy()
    batch.iloc[:4].to_csv(tmp_path / "first.csv", index=False)
    batch.iloc[4:].to_csv(tmp_path / "second.csv", index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(tmp_path / "first.csv"),
                 "--y-true", "answer"]) == 0
    assert main(["campaign", "ingest", "--db", db, "--labels", str(tmp_path / "second.csv"), "--y-true", "answer"]) == 0
    with Campaign.open(db) as camp:
        labels = camp.labels()["label"]
        assert labels.sort_index().tolist() == pool.loc[sorted(batch["row_id"]), "truth"].tolist()


def test_cli_without_y_pred_exits_2_naming_it(tmp_path, pool, capsys):
    path = tmp_path / "pool.csv"
    pool.reset_index().to_csv(path, index=False)
    assert main(["campaign", "create", "--pool", str(path), "--strata", "stratum", "--db", str(tmp_path / "c.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--y-pred" in err and err.count("\n") == 0


def test_random_seed_is_keyword_only():
    for func in (simulate, Campaign.create, synthetic_pool):
        param = inspect.signature(func).parameters["random_seed"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, func


def test_results_follow_the_results_protocol(pool):
    res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth", rules=["uniform"], n_repeats=1,
                   target_halfwidth=0.1, random_seed=0, progress=False)
    assert isinstance(res, SimulationResult) and isinstance(res, Result)
    frame = res.to_frame()
    frame.loc[0, "labels_used"] = -1
    assert res.table.loc[0, "labels_used"] > 0  # to_frame is a copy
    assert "<strong>SimulationResult</strong>" in res._repr_html_()
    r = IngestResult(3, unchanged=2, relabelled=1)
    assert isinstance(r, Result) and r == 3 and repr(r) == "3"
    assert r.table.to_dict("records") == [{"new": 3, "unchanged": 2, "relabelled": 1}]


# -- label costs -----------------------------------------------------------------------------
def _twin_pool(n=2000):
    """Two identical strata: same size, same predictions, same true labels."""
    half = pd.DataFrame({"pred": [0, 1] * (n // 4), "truth": [0, 1, 1, 0] * (n // 8)})
    both = pd.concat([half.assign(g="cheap"), half.assign(g="dear")], ignore_index=True)
    return both


# PrecisionLimitedWarning expected: the twin strata cannot reach target_halfwidth=0.03
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_costs_favour_the_cheap_twin_and_totals_are_hand_sums(tmp_path):
    pool = _twin_pool()
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", costs={"dear": 4.0},
                        target_halfwidth=0.03, random_seed=1)
    plain = Campaign.create(tmp_path / "p.db", pool, strata="g", y_pred="pred", target_halfwidth=0.03, random_seed=1)
    for _ in range(3):
        b = c.propose(40)
        n = b["g"].value_counts()
        assert n.get("cheap", 0) > n.get("dear", 0)  # the cheap stratum gets more labels every round
        c.ingest(pool.loc[b.index, "truth"])
        bp = plain.propose(40)
        assert abs(bp["g"].value_counts().get("cheap", 0) - 20) <= 1  # equal costs: an even split
        plain.ingest(pool.loc[bp.index, "truth"])
    st = c.status()
    labelled = st["labelled"]
    assert st["cost"].tolist() == [labelled["cheap"] * 1.0, labelled["dear"] * 4.0]
    f = c.forecast(cost=True)
    assert f["cost"].tolist() == [f.loc["cheap", "labels"] * 1.0, f.loc["dear", "labels"] * 4.0]
    assert c.forecast().tolist() == f["labels"].tolist()
    assert c.label_costs.tolist() == [1.0, 4.0]
    with Campaign.open(tmp_path / "c.db") as again:  # the costs are stored in the file
        assert again.label_costs.tolist() == [1.0, 4.0]
    c.close()
    plain.close()


def test_simulate_applies_the_same_costs_overall_goal_matches_neyman_with_costs():
    # goal "overall" on two identical strata with equal weights: the cost-optimal allocation
    # (Cochran, Sampling Techniques, 5.5) is n_k proportional to w_k S_k / sqrt(c_k), so the
    # cheap twin gets sqrt(4) = 2 times the labels of the one 4x as expensive
    pool = _twin_pool(4000)
    spec = CampaignSpec(y_pred="pred", strata="g", target_halfwidth=0.03, goal="overall", batch_size=20,
                        costs=[1.0, 4.0], random_seed=0)
    res = simulate(pool, y_true="truth", spec=spec, n_repeats=2, progress=False)
    n = res.intervals.groupby("stratum")["labelled"].sum()
    assert 1.7 <= n["cheap"] / n["dear"] <= 2.3


@pytest.mark.parametrize(
    "costs, error, match",
    [
        ({"north": 0.0}, ValueError, r"costs must be finite numbers > 0, got 0.0 for stratum 'north'"),
        ({"west": 2.0}, ValueError, r"costs name strata that are not in the pool: \['west'\]"),
        ([1.0], ValueError, r"costs must give one cost per stratum \(2\), got 1"),
        ("cheap", TypeError, "costs must be a dict"),
    ],
)
def test_bad_costs_name_the_argument_and_value(tmp_path, costs, error, match):
    pool = pd.DataFrame({"g": ["north", "south"] * 20, "pred": [0, 1] * 20})
    with pytest.raises(error, match=match):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", costs=costs)
    assert not (tmp_path / "c.db").exists()


def test_costs_need_a_gain_rule():
    with pytest.raises(ValueError, match="costs need a rule .* got rule='neyman'"):
        CampaignSpec(y_pred="p", costs=[1.0, 2.0], rule="neyman")


# PrecisionLimitedWarning expected: 200 rows in two strata cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_refuses_a_score_column_as_y_pred_and_a_fractional_label_set(tmp_path):
    rng = np.random.default_rng(4)
    pool = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "score": rng.uniform(0.01, 0.99, 200)})
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="score", random_seed=0)
    assert "score=" in str(err.value) and not (tmp_path / "c.db").exists()
    ints = pool.assign(pred=(pool["score"] >= 0.5).astype(float))  # 0.0/1.0 are the classes 0 and 1
    with pytest.raises(ValueError, match=r"label_set holds the fractional value 0\.5"):
        Campaign.create(tmp_path / "d.db", ints, strata="g", y_pred="pred", label_set=[0, 0.5, 1])
    c = Campaign.create(tmp_path / "e.db", ints, strata="g", y_pred="pred", random_seed=0)
    assert sorted(c.spec.label_set or [0, 1]) == [0, 1]


@pytest.mark.parametrize("name", ["annotators", "budget", "batch_size"])
# PrecisionLimitedWarning expected: 50 rows a stratum cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_bool_where_a_count_is_wanted_is_a_type_error_naming_it(name, tmp_path):
    pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
    with pytest.raises(TypeError, match=rf"^{name} must be an integer >= 1, got True \(a bool, not a count\)"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", **{name: True})
    assert not (tmp_path / "c.db").exists()
    c = Campaign.create(tmp_path / "d.db", pool, strata="g", y_pred="pred", random_seed=0, **{name: 1})
    assert getattr(c.spec, name) == 1


# -- the guarantee ----------------------------------------------------------------------------
def test_the_guarantee_is_stored_and_older_files_open_as_average(tmp_path, pool):
    assert CampaignSpec(y_pred="pred").guarantee == "stratum"
    with pytest.raises(ValueError, match="guarantee.*'each'"):
        CampaignSpec(y_pred="pred", guarantee="each")
    Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", guarantee="average").close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.guarantee == "average"
    Campaign.create(tmp_path / "d.db", pool, strata="stratum", y_pred="pred").close()
    conn = sqlite3.connect(tmp_path / "d.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    assert config.pop("guarantee") == "stratum"
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "d.db") as c:  # written before the setting: the rule it had then
        assert c.spec.guarantee == "average"


def test_cli_create_stores_the_guarantee(tmp_path, pool):
    path = tmp_path / "pool.csv"
    pool.to_csv(path, index_label="id")
    args = ["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "stratum", "--y-pred", "pred"]
    assert main([*args, "--db", str(tmp_path / "a.db"), "--guarantee", "average"]) == 0
    assert main([*args, "--db", str(tmp_path / "s.db")]) == 0
    with Campaign.open(tmp_path / "a.db") as a, Campaign.open(tmp_path / "s.db") as s:
        assert (a.spec.guarantee, s.spec.guarantee) == ("average", "stratum")


def test_status_reports_the_guaranteed_interval_with_the_pooled_one_beside_it(tmp_path, pool):
    from bayeseval.campaign.guarantee import guarantee_stop_level, guaranteed_bounds

    with Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", batch_size=60,
                         random_seed=2) as c:
        for _ in range(2):
            batch = c.propose()
            c.ingest(pool.loc[batch.index, "truth"])
        status = c.status()
        post_lo, post_hi = c.state().intervals()
    lo, hi = guaranteed_bounds(status["successes"], status["trials"], guarantee_stop_level(0.95))
    np.testing.assert_allclose(status["lower"], lo)
    np.testing.assert_allclose(status["upper"], hi)
    np.testing.assert_allclose(status["halfwidth"], (hi - lo) / 2)
    np.testing.assert_allclose(status["pooled_lower"], post_lo)
    np.testing.assert_allclose(status["pooled_upper"], post_hi)
    assert "pooled_mean" in status and "mean" not in status
    assert status["done"].tolist() == ((hi - lo) / 2 <= 0.05).tolist()
