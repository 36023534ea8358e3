"""Campaigns with design=Design(cluster=...): whole units proposed, stored, read and replayed."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval.campaign import Budget, Campaign, CampaignSpec, Each, Gap, simulate
from bayeseval.cli.campaign import main

ITEM = Design(cluster="item")
STOP_LEVEL = 1 - 0.7 * (1 - 0.95)  # the stratum guarantee's stop level at 0.95, as documented


def _items(n_items=(40, 80), max_size=5, seed=0, concentration=2.0):
    """Rows of strata ``a``, ``b``, ...: items of 1..max_size answers sharing an item error rate (mean 0.3)."""
    rng = np.random.default_rng(seed)
    rows = []
    for j, n in enumerate(n_items):
        g = chr(97 + j)
        for i in range(n):
            p_err = rng.beta(concentration * 0.3, concentration * 0.7)
            for _ in range(rng.integers(1, max_size + 1)):
                rows.append((g, f"{g}{i}", 1, int(rng.random() >= p_err)))
    frame = pd.DataFrame(rows, columns=["g", "item", "truth", "pred"])
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _create(path, frame, **kw):
    kw.setdefault("random_seed", 3)
    kw.setdefault("goal", Each(0.15))
    kw.setdefault("design", ITEM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Campaign.create(path, frame[["g", "item", "pred"]], strata="g", y_pred="pred", **kw)


def _truth(frame, index):
    return pd.Series(frame.loc[index, "truth"].to_numpy(), index=index)


def _by_hand(frame, labelled_ids):
    """Each stratum's units interval from the labelled rows, the histogram built with pandas."""
    rows = frame.loc[list(labelled_ids)].assign(err=lambda f: (f["pred"] != f["truth"]).astype(float))
    size = frame.groupby("item").size()
    per = rows.groupby(["g", "item"]).agg(unit_successes=("err", "sum"), unit_trials=("err", "size")).reset_index()
    per = per[per["unit_trials"].to_numpy() == size.reindex(per["item"]).to_numpy()]  # complete units only
    hist = per.groupby(["g", "unit_successes", "unit_trials"]).size().rename("units").reset_index()
    return units_ci(hist, "g", STOP_LEVEL)


# -- proposals: whole units, never split -------------------------------------------------------------
def test_propose_returns_whole_units_and_never_splits_one(tmp_path):
    frame = _items()
    unit_rows = frame.groupby("item").groups
    c = _create(tmp_path / "c.db", frame, budget=Budget(batch_size=7))
    seen: set[str] = set()
    rng = np.random.default_rng(1)
    for _ in range(6):
        batch = c.propose()
        items = set(frame.loc[batch.index, "item"])
        assert 0 < len(items) <= 7 and not items & seen  # at most n units, each proposed once
        for item in items:  # every row of each proposed unit, no other row
            assert set(unit_rows[item]) <= set(batch.index)
        assert len(batch) == sum(len(unit_rows[i]) for i in items)
        assert (batch.groupby(frame.loc[batch.index, "item"].to_numpy())["g"].nunique() == 1).all()
        seen |= items
        keep = batch.index[rng.random(len(batch)) < 0.8]  # some rows come back later
        c.ingest(_truth(frame, keep))
    status = c.status()
    labelled = set(c.labels().index)
    complete = {i for i in seen if set(unit_rows[i]) <= labelled}
    waiting = seen - complete
    assert status["n_units"].sum() == len(complete) and status["units_pending"].sum() == len(waiting)
    assert status["labelled"].sum() == len(labelled) and status["pending"].sum() == len(c.pending)
    assert (status["read"] == "units").all() and "pooled_mean" not in status.columns
    c.close()


def test_a_released_row_releases_its_whole_unit_and_the_unit_comes_back_whole(tmp_path):
    frame = _items(n_items=(30,), max_size=4)
    c = _create(tmp_path / "c.db", frame, budget=Budget(batch_size=3))
    batch = c.propose()
    item = frame.loc[batch.index[0], "item"]
    rows = set(frame.index[frame["item"] == item])
    assert c.release([batch.index[0]]) == len(rows)
    assert not rows & set(c.pending_batch().index)
    again = c.propose(30)
    assert rows <= set(again.index)
    c.close()


# -- the status interval against units_ci on a hand-built histogram ------------------------------------
def test_the_status_interval_is_units_ci_of_the_complete_units_at_the_stop_level(tmp_path):
    frame = _items(n_items=(40, 80, 25), seed=4)
    c = _create(tmp_path / "c.db", frame, budget=Budget(batch_size=9))
    rng = np.random.default_rng(2)
    for _ in range(5):
        batch = c.propose()
        c.ingest(_truth(frame, batch.index[rng.random(len(batch)) < 0.9]))  # partial units wait
    status = c.status()
    ref = _by_hand(frame, c.labels().index).reindex(status.index)
    has = ref["n_units"].notna()
    assert has.sum() == 3
    np.testing.assert_array_equal(status.loc[has, "lower"], ref.loc[has, "lower"])
    np.testing.assert_array_equal(status.loc[has, "upper"], ref.loc[has, "upper"])
    np.testing.assert_allclose(status.loc[has, "mean"], ref.loc[has, "estimate"], rtol=1e-12)
    assert status["n_units"].tolist() == ref["n_units"].astype(int).tolist()
    assert status["trials"].tolist() == ref["n_trials"].astype(int).tolist()
    hw = (ref["upper"] - ref["lower"]) / 2
    assert status["done"].tolist() == (hw <= 0.15).tolist()
    c.close()


def test_the_campaign_stops_when_every_stratum_units_interval_is_within_the_target(tmp_path):
    frame = _items(n_items=(60, 90), seed=5)
    c = _create(tmp_path / "c.db", frame, goal=Each(0.2), budget=Budget(batch_size=6))
    while len(batch := c.propose()):
        c.ingest(_truth(frame, batch.index))
    status = c.status()
    ref = _by_hand(frame, c.labels().index).reindex(status.index)
    assert ((ref["upper"] - ref["lower"]) / 2 <= 0.2).all() and c.goal_met
    assert (status["n_units"] < status["pool_units"]).all()  # stopped on the target, not on the pool's end
    c.close()


# -- clusters of size one: today's campaign ---------------------------------------------------------------
def test_clusters_of_one_row_give_the_row_campaign_exactly(tmp_path):
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "truth": 1, "pred": (rng.random(n) < 0.2).astype(int)})
    frame["item"] = [f"i{k}" for k in range(n)]
    runs = {}
    for name, design in (("rows", None), ("units", ITEM)):
        c = _create(tmp_path / f"{name}.db", frame, design=design, budget=Budget(batch_size=25))
        batches = []
        for _ in range(4):
            b = c.propose()
            batches.append(list(b.index))
            c.ingest(_truth(frame, b.index))
        runs[name] = (batches, c.status())
        c.close()
    assert runs["units"][0] == runs["rows"][0]
    pd.testing.assert_frame_equal(runs["units"][1], runs["rows"][1])
    assert set(runs["units"][1]["read"]) == {"guaranteed"}


# -- a kill -9 and reopening ----------------------------------------------------------------------------------
def test_a_clustered_campaign_killed_after_ingest_reopens_to_the_same_estimates_and_proposals(tmp_path):
    frame = _items(seed=6)
    frame.to_csv(tmp_path / "pool.csv")
    path = tmp_path / "c.db"
    child = f"""
import os, signal, warnings
import pandas as pd
from bayeseval import Design
from bayeseval.campaign import Budget, Campaign, Each
warnings.simplefilter("ignore")
frame = pd.read_csv({str(tmp_path / "pool.csv")!r}, index_col=0)
c = Campaign.create({str(path)!r}, frame[["g", "item", "pred"]], strata="g", y_pred="pred", goal=Each(0.15),
                    design=Design(cluster="item"), random_seed=5, budget=Budget(batch_size=8))
for _ in range(3):
    b = c.propose()
    c.ingest(pd.Series(frame.loc[b.index, "truth"].to_numpy(), index=b.index))
b = c.propose()
c.ingest(pd.Series(frame.loc[b.index[:-1], "truth"].to_numpy(), index=b.index[:-1]))  # a unit left partial
print(c.status()[["lower", "upper", "mean", "n_units", "units_pending", "read"]].to_json(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert r.returncode == -9, r.stderr
    before = pd.read_json(io.StringIO(r.stdout.strip()))
    with Campaign.open(path) as c:
        after = c.status()[["lower", "upper", "mean", "n_units", "units_pending", "read"]]
        assert c.spec.design == ITEM and c.config["design"]["cluster"] == "item"
        pd.testing.assert_frame_equal(after, before, check_index_type=False, check_dtype=False, check_names=False)
        assert after["units_pending"].sum() == 1
        c.ingest(_truth(frame, c.pending_batch().index))
        resumed = list(c.propose().index)
    with sqlite3.connect(path) as conn:  # the stored units are the pool's
        stored = dict(json.loads(conn.execute("SELECT value FROM meta WHERE key = 'units'").fetchone()[0]))
    assert {int(k): v for k, v in stored.items()} == frame["item"].to_dict()
    # the same campaign run without the kill proposes the same next batch
    with _create(tmp_path / "again.db", frame, goal=Each(0.15), random_seed=5, budget=Budget(batch_size=8)) as c:
        for _ in range(4):
            b = c.propose()
            c.ingest(_truth(frame, b.index))
        assert list(c.propose().index) == resumed


def test_a_file_without_a_stored_design_still_opens_as_a_row_campaign(tmp_path):
    frame = _items()
    path = tmp_path / "old.db"
    _create(path, frame, design=None).close()
    with sqlite3.connect(path) as conn:
        config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
        del config["design"]
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    with Campaign.open(path) as c:
        assert c.spec.design == Design() and set(c.status()["read"]) == {"guaranteed"}


# -- refusals ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"guarantee": "average"}, "got guarantee='average'"),
        ({"guarantee": "anytime", "goal": Gap(0.1)}, "got guarantee='anytime' with goal='gap'"),
        ({"metric": ["error_rate", "accuracy"]}, "got metric=['error_rate', 'accuracy']"),
        ({"proxy": "judge"}, "got proxy='judge'"),
    ],
)
def test_a_cluster_refuses_what_it_does_not_serve_naming_both_settings(kw, words):
    kw = {"design": ITEM, **kw}
    pattern = r"design\.cluster='item'.*" + words.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(ValueError, match=pattern):
        CampaignSpec(y_pred="pred", strata="g", rule="expected_width", **kw)


def test_units_spanning_strata_missing_units_and_labels_are_refused_before_a_file_is_written(tmp_path):
    frame = _items(n_items=(10, 10))
    frame.loc[frame.index[frame["item"] == "a3"][0], "g"] = "b"
    frame.loc[frame.index[frame["item"] == "a5"][0], "g"] = "b"
    with pytest.raises(ValueError, match=r"design\.cluster='item': 2 of 20 units span several strata \(e\.g\. unit 'a"):
        _create(tmp_path / "a.db", frame)
    ok = _items(n_items=(10,))
    gap = ok.assign(item=ok["item"].where(ok.index != 4))
    with pytest.raises(ValueError, match=r"design\.cluster='item' is missing on 1 rows \(row ids \[4\]\)"):
        _create(tmp_path / "b.db", gap)
    with pytest.raises(ValueError, match=r"design\.cluster='item'.*got labels="):
        _create(tmp_path / "c.db", ok, labels=pd.Series([0], index=ok.index[:1]))
    with pytest.raises(ValueError, match=r"design\.cluster='unit' is not a pool column"):
        _create(tmp_path / "d.db", ok, design=Design(cluster="unit"))
    assert not any((tmp_path / f"{x}.db").exists() for x in "abcd")


# -- simulate ----------------------------------------------------------------------------------------------------
def test_simulate_replays_the_units_a_campaign_with_the_same_seed_proposes(tmp_path):
    frame = _items(seed=7)
    kw = dict(goal=Each(0.15), random_seed=4, budget=Budget(batch_size=10))
    with _create(tmp_path / "c.db", frame, **kw) as c:
        while len(batch := c.propose()):
            c.ingest(_truth(frame, batch.index))
        status = c.status()
    res = simulate(frame, strata="g", y_pred="pred", y_true="truth", design=ITEM, n_repeats=2, progress=False, **kw)
    first = res.intervals[res.intervals["repeat"] == 0].set_index("stratum")
    assert (first["read"] == "units").all()
    np.testing.assert_array_equal(first["lower"], status["lower"])
    np.testing.assert_array_equal(first["upper"], status["upper"])
    assert first["labelled"].tolist() == status["labelled"].tolist()
    assert res.table.loc[0, "units_used"] == status["n_units"].sum()
    assert res.table.loc[0, "labels_used"] == status["labelled"].sum()


@pytest.mark.slow
def test_simulated_clustered_campaigns_cover_each_stratum_unit_rate_at_stop():
    """Seeded coverage at stop of the process rate, 200 campaigns on a small pool of 2 strata.

    The process: item error rates Beta(0.6, 1.4), 1-5 answers per item. Each stratum's true rate is the
    process's row-level error rate, E[size x p] / E[size] = E[p] = 0.3 (size and error rate independent).
    The pool is drawn anew per repeat (a campaign's pool is one draw of the process). The stated
    tolerance: the per-stratum coverage is at least 0.95 - 0.03 (about 2 Monte Carlo standard errors
    at 200 campaigns).
    """
    covered = []
    for rep in range(200):
        frame = _items(n_items=(40, 60), seed=1000 + rep)
        res = simulate(
            frame,
            strata="g",
            y_pred="pred",
            y_true="truth",
            design=ITEM,
            goal=Each(0.15),
            n_repeats=1,
            random_seed=rep,
            progress=False,
            budget=Budget(batch_size=10),
        )
        iv = res.intervals
        covered.append(((iv["lower"] <= 0.3) & (0.3 <= iv["upper"])).to_numpy())
    rate = np.mean(covered, axis=0)
    assert (rate >= 0.92).all(), rate


# -- the command line ----------------------------------------------------------------------------------------------
def test_the_command_line_creates_a_clustered_campaign_and_proposes_whole_units(tmp_path, capsys):
    frame = _items(n_items=(20, 20))
    frame.to_csv(tmp_path / "pool.csv", index_label="id")
    db, out = str(tmp_path / "c.db"), str(tmp_path / "b.csv")
    assert main(["campaign", "create", "--db", db, "--pool", str(tmp_path / "pool.csv"), "--id-column", "id", "--strata", "g",
                 "--y-pred", "pred", "--cluster", "item", "--target-halfwidth", "0.3", "--seed", "1"]) == 0  # fmt: skip
    assert main(["campaign", "propose", "--db", db, "--batch-size", "4", "--out", out]) == 0
    batch = pd.read_csv(out, index_col=0)
    items = set(frame.loc[batch.index, "item"])
    assert len(items) <= 4 and sorted(batch.index) == sorted(frame.index[frame["item"].isin(items)])
    with Campaign.open(db) as c:
        assert c.spec.design == ITEM and (c.status()["read"] == "units").all()
    capsys.readouterr()


def test_counts_carry_the_complete_units_so_evaluate_reads_the_units_interval(tmp_path):
    from bayeseval import evaluate

    frame = _items(n_items=(40, 60), seed=8)
    c = _create(tmp_path / "c.db", frame, budget=Budget(batch_size=10))
    for _ in range(3):
        batch = c.propose()
        c.ingest(_truth(frame, batch.index[:-1]))  # each round leaves one unit partial
    counts = c.counts()
    ref = _by_hand(frame, c.labels().index)
    assert counts.n_units.tolist() == ref["n_units"].astype(int).tolist()
    assert counts.trials.tolist() == ref["n_trials"].astype(int).tolist()
    lo = evaluate(counts, level=STOP_LEVEL).table["lower"]
    np.testing.assert_allclose(lo.to_numpy(float), ref["lower"].to_numpy(), rtol=1e-12)
    c.close()


def test_the_budget_counts_units(tmp_path):
    frame = _items(n_items=(40, 40), seed=9)
    c = _create(tmp_path / "c.db", frame, budget=Budget(6, batch_size=4))
    first = c.propose()
    assert frame.loc[first.index, "item"].nunique() == 4 and c.budget_left == 2
    c.ingest(_truth(frame, first.index))
    second = c.propose(10)
    assert frame.loc[second.index, "item"].nunique() == 2 and c.budget_left == 0
    c.ingest(_truth(frame, second.index))
    assert c.done and not c.goal_met and len(c.propose()) == 0
    assert c.labels_used == len(first) + len(second) and c.status()["n_units"].sum() == 6
    c.close()


def test_the_next_units_go_to_the_stratum_whose_units_interval_is_furthest_from_the_target():
    from bayeseval.campaign.loop.rounds import allocate
    from bayeseval.campaign.loop.state import StrataDesign
    from bayeseval.campaign.loop.units import units_state

    spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.1), design=ITEM, batch_size=10)
    design = StrataDesign(
        pd.Index(["a", "b", "c"]), n_rows=np.array([900] * 3), n_eligible=np.array([900] * 3),
        weights=np.full(3, 1 / 3), prior_mean=None,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    sizes = {"a": 250, "b": 20, "c": 60}  # labelled units: a is within the target, b the widest
    done = pd.concat(
        [
            pd.DataFrame({"stratum": j, "rows": 3, "successes": rng.binomial(3, 0.3, n).astype(float)})
            for j, n in enumerate(sizes.values())
        ]
    ).assign(complete=True, pending=False)
    st, table = units_state(spec, design, done, np.array([300, 300, 300]))
    hist = done.groupby(["stratum", "successes", "rows"]).size().rename("units").reset_index()
    ref = units_ci(hist.rename(columns={"successes": "unit_successes", "rows": "unit_trials"}), "stratum", STOP_LEVEL)
    hw = ((ref["upper"] - ref["lower"]) / 2).to_numpy()
    assert hw[0] <= 0.1 < hw[2] < hw[1]  # the setting the test is about
    np.testing.assert_array_equal(st.stop_halfwidths(), hw)
    assert st.stop_neff().tolist() == [250, 20, 60] and st.available.tolist() == [50, 280, 240]
    alloc = allocate(spec, st, 10, random_seed=np.random.default_rng(1))
    assert alloc.sum() == 10 and alloc[0] == 0 and alloc[1] > alloc[2]


def test_the_row_model_posterior_is_refused_naming_the_cluster(tmp_path):
    frame = _items(n_items=(20,))
    with _create(tmp_path / "c.db", frame) as c:
        with pytest.raises(ValueError, match=r"posterior\(\): design\.cluster='item'"):
            c.posterior()
