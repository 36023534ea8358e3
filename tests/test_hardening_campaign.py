"""Hardening of labelling campaigns: exact labels, validated atomic create, safe open,
idempotent ingest, propose/file as one unit, one-line CLI errors, simulate's inputs.

References are independent of the code under test: the known label set and Python's own
number semantics (``1.0 == 1``; ``0.5`` equals no integer), recounts of the error rate
from the oracle labels, the SQLite file-format header (https://www.sqlite.org/fileformat.html:
bytes 18-19 are 1 for a rollback journal, 2 for WAL) and exact comparisons of table dumps.
"""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayeseval.campaign import Campaign, simulate, synthetic_pool
from bayeseval.campaign import store as store_module
from bayeseval.campaign.labels import LabelSet
from bayeseval.cli.campaign import main

ROOT = Path(__file__).resolve().parents[1]

# the 400-row pools cannot reach target_halfwidth=0.01 (chosen so that no campaign stops
# early) nor the command line's default 0.05: Campaign.create says so with a
# PrecisionLimitedWarning, which is not the subject here
pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def make_pool(n=400, k=3, seed=0, pred=None):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "g": rng.choice([f"g{i}" for i in range(k)], n),
            "pred": rng.integers(0, 2, n) if pred is None else pred,
        },
        index=pd.Index(np.arange(n) * 7 + 3, name="rid"),
    )


def truth_of(rid) -> int:
    return int(sum(map(ord, str(rid))) % 3 == 0)


def new_campaign(tmp_path, name="c.db", pool=None, **kw):
    pool = make_pool() if pool is None else pool
    kw.setdefault("random_seed", 1)
    kw.setdefault("target_halfwidth", 0.01)
    return Campaign.create(tmp_path / name, pool, strata="g", y_pred="pred", **kw), pool


def recount(c, pool):
    """Error-rate successes and trials per stratum recomputed from the stored labels."""
    lab = c.labels()
    rows = pool.loc[lab.index]
    wrong = (lab["label"].to_numpy() != rows["pred"].to_numpy()).astype(int)
    s = pd.Series(wrong, index=lab.index).groupby(rows["g"].to_numpy()).sum()
    n = rows.groupby("g").size()
    return s, n


def assert_counts_match_labels(c, pool):
    s, n = recount(c, pool)
    st_ = c.status()
    assert (st_["successes"].reindex(s.index) == s).all()
    assert (st_["trials"].reindex(n.index) == n).all()
    assert st_["labelled"].sum() == n.sum()


# ---------------------------------------------------------------------------------------
# item 1: a label must equal a known label exactly after a lossless normalisation
# ---------------------------------------------------------------------------------------
def test_fractional_labels_are_refused_with_the_row_ids(tmp_path):
    c, _ = new_campaign(tmp_path)
    b = c.propose(6)
    before = c._store.dump()
    with pytest.raises(ValueError, match="invalid labels") as err:
        c.ingest(pd.Series([0.5, 1.9, -0.7], index=b.index[:3]))
    for rid in b.index[:3]:
        assert repr(int(rid)) in str(err.value)
    assert c._store.dump() == before  # nothing stored (atomic)
    c.close()


@pytest.mark.parametrize(
    "bad, kind",
    [
        (math.inf, "invalid"),
        (-math.inf, "invalid"),
        (2, "invalid"),  # an integer outside the known labels
        ("cat", "invalid"),
        ("1.5", "invalid"),
        (b"1", "invalid"),
        (None, "missing"),
        (np.nan, "missing"),
        (pd.NA, "missing"),
    ],
)
def test_every_non_label_is_refused_and_nothing_is_stored(tmp_path, bad, kind):
    c, _ = new_campaign(tmp_path)
    b = c.propose(4)
    before = c._store.dump()
    labels = pd.Series([1, bad, 0], index=b.index[:3], dtype=object)
    with pytest.raises(ValueError, match=kind) as err:
        c.ingest(labels)
    assert repr(int(b.index[1])) in str(err.value)
    assert c._store.dump() == before
    c.close()


def test_lossless_normalisation_stores_the_known_label(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(8)
    sent = ["1", 1.0, True, np.int64(0), " 0 ", "1.0", np.float32(0.0), False]
    expected = [1, 1, 1, 0, 0, 1, 0, 0]
    assert c.ingest(pd.Series(sent, index=b.index, dtype=object)) == 8
    stored = c.labels()["label"].reindex(b.index)
    assert stored.tolist() == expected
    assert all(type(x) is int for x in stored)  # stored as the known label, not the sent value
    assert_counts_match_labels(c, pool)
    c.close()


def test_string_labels_match_exactly_and_numbers_never_match(tmp_path):
    pool = make_pool(pred=np.random.default_rng(0).choice(["cat", "dog"], 400))
    c, _ = new_campaign(tmp_path, pool=pool)
    b = c.propose(4)
    for bad in ["Cat", "cat ", 1, 0.0]:
        with pytest.raises(ValueError, match="invalid labels") as err:
            c.ingest(pd.Series([bad], index=b.index[:1], dtype=object))
        assert repr(int(b.index[0])) in str(err.value)
    assert c.ingest(pd.Series(["cat", "dog"], index=b.index[:2])) == 2
    assert c.labels()["label"].reindex(b.index[:2]).tolist() == ["cat", "dog"]
    c.close()


def test_boolean_labels(tmp_path):
    pool = make_pool(pred=np.random.default_rng(0).integers(0, 2, 400).astype(bool))
    c, _ = new_campaign(tmp_path, pool=pool)
    assert c.config["label_set"] == [False, True]
    b = c.propose(5)
    assert c.ingest(pd.Series([True, 0, "true", "FALSE", 1.0], index=b.index, dtype=object)) == 5
    # SQLite stores booleans as 0/1
    assert c.labels()["label"].reindex(b.index).tolist() == [1, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="invalid labels"):
        c.ingest(pd.Series(["yes"], index=c.propose(1).index, dtype=object))
    c.close()


def test_a_class_the_model_never_predicts_needs_label_set(tmp_path):
    preds = np.random.default_rng(0).choice(["a", "b"], 400)
    c, _ = new_campaign(tmp_path, "x.db", pool=make_pool(pred=preds))
    b = c.propose(2)
    with pytest.raises(ValueError, match="invalid labels"):
        c.ingest(pd.Series(["c"], index=b.index[:1]))
    c.close()
    c, pool = new_campaign(tmp_path, "y.db", pool=make_pool(pred=preds), label_set=["a", "b", "c"])
    b = c.propose(2)
    assert c.ingest(pd.Series(["c", "a"], index=b.index)) == 2
    lab = c.labels().reindex(b.index)
    # "c" is never the prediction, so it is an error (success) of the error rate
    assert lab["success"].tolist() == [1, int(pool.loc[b.index[1], "pred"] != "a")]
    c.close()


def test_label_set_that_mixes_types_or_misses_predictions_is_refused(tmp_path):
    with pytest.raises(ValueError, match="label_set mixes strings and numbers"):
        new_campaign(tmp_path, label_set=[0, 1, "1"])
    with pytest.raises(ValueError, match=r"y_pred column 'pred' has values \[1\]"):
        new_campaign(tmp_path, label_set=[0, 2])
    assert os.listdir(tmp_path) == []


def test_cli_ingest_of_fractional_and_infinite_labels(tmp_path, capsys):
    pool = make_pool()
    pool.reset_index().to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    assert main(["campaign", "create", "--pool", str(tmp_path / "pool.csv"), "--id-column", "rid",
                 "--strata", "g", "--y-pred", "pred", "--db", db, "--seed", "1"]) == 0
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "4", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    for bad in ([0.5, 1, 0, 1], [1, 0, np.inf, 0]):
        batch["label"] = bad
        batch.to_csv(out, index=False)
        capsys.readouterr()
        assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "invalid labels" in err and "--labels" in err
        bad_id = int(batch["rid"][int(np.flatnonzero(np.isin(bad, [0.5, np.inf]))[0])])
        assert repr(bad_id) in err
    c = Campaign.open(db)
    assert c.labels_used == 0
    c.close()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans()))
def test_property_numbers_match_a_known_label_only_when_equal(x):
    labels = LabelSet([0, 1])
    got = labels.normalise(x)
    if isinstance(x, float) and math.isnan(x):
        assert got is not None and got not in (0, 1)  # the missing marker
    elif x in (0, 1):  # Python equality: 1.0 == 1, True == 1
        assert got == x and type(got) is int
    else:
        assert got is None
    # the text of a number normalises like the number when the labels are numbers
    if isinstance(x, int) and not isinstance(x, bool):
        assert labels.normalise(str(x)) == labels.normalise(x)


_LABEL_VALUES = st.one_of(
    st.sampled_from([0, 1, 1.0, 0.0, "1", "0", True, False, 2, -1, 0.5, 1.9, math.inf, "x", "", None, np.nan, pd.NA]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _acceptable(v):
    """Independent statement of the rule for the known labels [0, 1]."""
    if v is None or v is pd.NA:
        return False
    if isinstance(v, str):
        return v in ("0", "1")
    if isinstance(v, float) and math.isnan(v):
        return False
    return v in (0, 1)  # Python equality: 1.0 == 1, True == 1; 0.5, inf, 2 are not


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_LABEL_VALUES, min_size=1, max_size=4))
def test_property_ingest_is_exact_or_refuses_everything(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("prop") / "c.db"
    pool = make_pool(n=60, k=2)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, target_halfwidth=0.01)
    b = c.propose(len(values))
    ids = b.index[: len(values)]
    ok = [_acceptable(v) for v in values]
    before = c._store.dump()
    if all(ok):
        assert c.ingest(pd.Series(values, index=ids, dtype=object)) == len(values)
        expected = [int(v) for v in values]
        assert c.labels()["label"].reindex(ids).tolist() == expected
        assert_counts_match_labels(c, pool)
    else:
        with pytest.raises(ValueError) as err:
            c.ingest(pd.Series(values, index=ids, dtype=object))
        for rid, good in zip(ids, ok, strict=True):
            if not good:
                assert repr(int(rid)) in str(err.value)
        assert c._store.dump() == before
    c.close()


# ---------------------------------------------------------------------------------------
# item 10: create validates everything first and never leaves a half-made file
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"prior": "flat"}, ValueError, ["prior", "flat"]),
        ({"prior": {"mu": None}}, TypeError, ["prior"]),
        ({"metric": "recall", "pos_label": 2}, ValueError, ["pos_label", "2"]),
        ({"metric": "precision", "pos_label": "yes"}, ValueError, ["pos_label", "yes"]),
        ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
        ({"random_seed": "abc"}, TypeError, ["random_seed", "abc"]),
        ({"random_seed": 1.5}, TypeError, ["random_seed", "1.5"]),
        ({"target_halfwidth": math.nan}, ValueError, ["target_halfwidth", "nan"]),
        ({"target_halfwidth": 0.5}, ValueError, ["target_halfwidth", "0.5"]),
        ({"target_halfwidth": "0.1"}, TypeError, ["target_halfwidth", "0.1"]),
        ({"budget": 0}, ValueError, ["budget", "0"]),
        ({"level": 1.0}, ValueError, ["level", "1.0"]),
        ({"rule": "best"}, ValueError, ["rule", "best"]),
        ({"model": "flat"}, ValueError, ["model", "flat"]),
        ({"busy_timeout": -1}, ValueError, ["busy_timeout", "-1"]),
        ({"weights": {"g0": 1.0}}, ValueError, ["weights", "g1"]),
    ],
)
def test_bad_settings_are_refused_before_any_file_exists(tmp_path, kwargs, exc, names):
    with pytest.raises(exc) as err:
        Campaign.create(tmp_path / "c.db", make_pool(), strata="g", y_pred="pred", **kwargs)
    for name in names:
        assert name in str(err.value)
    assert os.listdir(tmp_path) == []


def test_rule_callable_is_refused_because_it_cannot_be_reopened(tmp_path):
    with pytest.raises(TypeError, match="rule must be a rule name"):
        Campaign.create(tmp_path / "c.db", make_pool(), strata="g", y_pred="pred", rule=lambda s, n, r: None)
    assert os.listdir(tmp_path) == []


def test_pos_label_of_a_declared_class_is_accepted(tmp_path):
    c, _ = new_campaign(tmp_path, metric="recall", pos_label=2, label_set=[0, 1, 2])
    assert c.config["pos_label"] == 2
    c.close()
    # the positive label is normalised like a true label: "1" and 1.0 are the label 1
    c, _ = new_campaign(tmp_path, "d.db", metric="recall", pos_label="1")
    assert c.config["pos_label"] == 1 and type(c.config["pos_label"]) is int
    c.close()


@pytest.mark.parametrize("bins", [0, -2, [0.5], [0.9, 0.5], [0.1, math.nan, 0.9], "3", True])
def test_bad_score_bins(tmp_path, bins):
    pool = make_pool()
    pool["score"] = np.linspace(0.5, 1.0, len(pool))
    with pytest.raises((ValueError, TypeError), match="score_bins"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", score="score", score_bins=bins)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "index",
    [
        pd.Index(np.arange(5, dtype=np.uint64) + np.uint64(2**63)),
        pd.Index([2**64 + i for i in range(5)], dtype=object),
        pd.Index([-(2**63) - 1 - i for i in range(5)], dtype=object),
    ],
)
def test_row_ids_beyond_int64_are_refused(tmp_path, index):
    pool = make_pool(n=5)
    pool.index = index
    with pytest.raises(ValueError, match="64-bit") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")
    assert str(int(index.max() if index.max() > 0 else index.min())) in str(err.value)
    assert os.listdir(tmp_path) == []


def test_largest_int64_id_round_trips(tmp_path):
    pool = make_pool(n=5)
    pool.index = pd.Index(np.arange(5, dtype=np.uint64) + np.uint64(2**63 - 5))
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=0, target_halfwidth=0.01)
    b = c.propose(5)
    assert sorted(int(x) for x in b.index) == [2**63 - 5 + i for i in range(5)]
    assert c.ingest(pd.Series(1, index=b.index)) == 5
    c.close()


@pytest.mark.parametrize("column, value", [("g", None), ("g", np.nan), ("pred", None), ("pred", pd.NA)])
def test_missing_strata_or_prediction_name_the_rows(tmp_path, column, value):
    pool = make_pool().astype({column: object})
    pool.loc[pool.index[[3, 9]], column] = value
    with pytest.raises(ValueError, match="missing values") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")
    assert column in str(err.value) and repr(int(pool.index[3])) in str(err.value)


def test_mixed_type_predictions_are_refused(tmp_path):
    pool = make_pool().astype({"pred": object})
    pool.loc[pool.index[0], "pred"] = "1"
    with pytest.raises(ValueError, match="mixes strings and numbers"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")


def test_failure_between_build_and_publish_leaves_no_file(tmp_path, monkeypatch):
    def boom(tmp, path):
        assert tmp.exists() and not path.exists()  # the database is complete, not yet published
        raise OSError("injected failure")

    monkeypatch.setattr(store_module, "publish", boom)  # the store module publishes the built file
    with pytest.raises(OSError, match="injected"):
        new_campaign(tmp_path)
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    c, _ = new_campaign(tmp_path)  # and the same create then works
    assert c.labels_used == 0
    c.close()


def test_interrupt_during_pool_insert_leaves_no_file(tmp_path):
    pool = make_pool()

    class Interrupt(BaseException):
        pass

    def rows():
        yield (1, 0, 0, None, 1, 0)
        raise Interrupt

    with pytest.raises(Interrupt):
        store_module.CampaignStore.initialise(
            tmp_path / "c.db", meta={"config": "{}"}, rid_type="INTEGER", strata_keys=[["a"]], pool_rows=rows()
        )
    assert os.listdir(tmp_path) == []
    new_campaign(tmp_path, pool=pool)[0].close()


CREATE_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np, pandas as pd
    sys.path.insert(0, {root!r})
    from bayeseval.campaign import Campaign

    n = 300_000
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({{"g": rng.integers(0, 10, n), "pred": rng.integers(0, 2, n)}})
    print("ready", flush=True)
    Campaign.create(sys.argv[1], pool, strata="g", y_pred="pred", random_seed=0).close()
    print("done", flush=True)
    """
)


@pytest.mark.slow
def test_kill9_during_create_never_leaves_an_unusable_file(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CREATE_CHILD.format(root=str(ROOT)))
    rng = np.random.default_rng(7)
    outcomes = []
    for i in range(3):
        d = tmp_path / f"run{i}"
        d.mkdir()
        path = d / "c.db"
        proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if path.exists():  # published: a complete campaign that opens
            c = Campaign.open(path)
            assert c.status()["pool_rows"].sum() == 300_000
            c.close()
            outcomes.append("complete")
        else:  # never published: create works again
            Campaign.create(path, make_pool(), strata="g", y_pred="pred").close()
            outcomes.append("absent")
    assert "absent" in outcomes  # at least one kill landed during create


# ---------------------------------------------------------------------------------------
# item 11: propose and its file are one unit; pending, release, export; file round trips
# ---------------------------------------------------------------------------------------
def test_failing_writer_records_nothing_and_the_same_batch_comes_again(tmp_path):
    c, _ = new_campaign(tmp_path)
    before = c._store.dump()

    def fail(batch):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        c.propose(7, writer=fail)
    assert c._store.dump() == before and len(c.pending) == 0
    seen = []
    b = c.propose(7, writer=seen.append)
    assert len(seen) == 1 and seen[0].index.equals(b.index)
    # a twin campaign that never failed proposes the same rows
    twin, _ = new_campaign(tmp_path, "twin.db")
    assert twin.propose(7).index.equals(b.index)
    c.close()
    twin.close()


@pytest.fixture
def cli_campaign(tmp_path):
    pool = make_pool(n=300)
    pool.reset_index().to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    assert main(["campaign", "create", "--pool", str(tmp_path / "pool.csv"), "--id-column", "rid",
                 "--strata", "g", "--y-pred", "pred", "--db", db, "--seed", "1",
                 "--target-halfwidth", "0.01"]) == 0
    return db, pool


@pytest.mark.parametrize("out", ["b.xlsx", "missing_dir/b.csv", "b"])
def test_propose_to_an_unwritable_out_strands_nothing(tmp_path, cli_campaign, capsys, out):
    db, _ = cli_campaign
    capsys.readouterr()
    assert main(["campaign", "propose", "--db", db, "--batch-size", "5", "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err
    c = Campaign.open(db)
    assert len(c.pending) == 0 and len(c.history()) == 0
    c.close()


def test_propose_whose_file_write_fails_strands_nothing(tmp_path, cli_campaign, capsys, monkeypatch):
    db, _ = cli_campaign

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    assert main(["campaign", "propose", "--db", db, "--batch-size", "5", "--out", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "No space left" in err
    assert not (tmp_path / "b.csv").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".b.csv")] == []  # no temp file left
    c = Campaign.open(db)
    assert len(c.pending) == 0 and len(c.history()) == 0
    c.close()


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_batch_file_round_trip(tmp_path, cli_campaign, suffix):
    db, pool = cli_campaign
    out = tmp_path / f"b{suffix}"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "12", "--out", str(out), "--show-prediction"]) == 0
    batch = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
    assert list(batch.columns[:1]) == ["rid"] and len(batch) == 12  # the id is a column
    assert (pool.loc[batch["rid"], "pred"].to_numpy() == batch["pred"].to_numpy()).all()
    batch["label"] = [truth_of(r) for r in batch["rid"]]
    if suffix == ".parquet":
        batch.to_parquet(out, index=False)
    else:
        batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    c = Campaign.open(db)
    assert c.labels_used == 12 and sorted(c.labels().index) == sorted(batch["rid"])
    assert_counts_match_labels(c, pool)
    c.close()


def test_export_pending_release(tmp_path, cli_campaign, capsys):
    db, pool = cli_campaign
    b1, b2 = tmp_path / "b1.csv", tmp_path / "b2.parquet"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "6", "--out", str(b1)]) == 0
    assert main(["campaign", "propose", "--db", db, "--batch-size", "4", "--out", str(b2)]) == 0
    ids1, ids2 = list(pd.read_csv(b1)["rid"]), list(pd.read_parquet(b2)["rid"])
    b1.unlink()  # the batch file is lost: export writes it again
    assert main(["campaign", "export", "--db", db, "--round", "1", "--out", str(b1)]) == 0
    again = pd.read_csv(b1)
    assert list(again["rid"]) == ids1 and again["label"].isna().all() and (again["round"] == 1).all()
    capsys.readouterr()
    assert main(["campaign", "pending", "--db", db, "--json"]) == 0
    import json

    payload = json.loads(capsys.readouterr().out)
    assert payload["pending"] == 10 and payload["rounds"] == {"1": 6, "2": 4}
    assert sorted(payload["ids"]) == sorted(ids1 + ids2)
    assert main(["campaign", "release", "--db", db, "--ids", f"{ids2[0]},{ids2[1]}"]) == 0
    assert main(["campaign", "release", "--db", db, "--file", str(b1)]) == 0
    c = Campaign.open(db)
    assert sorted(c.pending.index) == sorted(ids2[2:])
    c.close()
    assert main(["campaign", "release", "--db", db, "--all"]) == 0
    c = Campaign.open(db)
    assert len(c.pending) == 0 and c.status()["pending"].sum() == 0
    c.close()
    capsys.readouterr()
    assert main(["campaign", "release", "--db", db]) == 2  # says what to release
    assert capsys.readouterr().err.count("\n") == 1


def test_pending_batch_matches_propose(tmp_path):
    c, _ = new_campaign(tmp_path)
    b1, b2 = c.propose(5), c.propose(3)
    assert c.pending_batch().equals(pd.concat([b1, b2]))
    assert c.pending_batch(round=2).equals(b2)
    assert c.release(round=1) == 5 and c.pending_batch().equals(b2)
    c.close()


# ---------------------------------------------------------------------------------------
# item 12: ingest is idempotent; a changed label needs relabel=True
# ---------------------------------------------------------------------------------------
def test_resending_labels_is_a_no_op_and_reports_new_vs_present(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(10)
    truth = pd.Series([truth_of(r) for r in b.index], index=b.index)
    assert c.ingest(truth.iloc[:6]) == 6
    dump = c._store.dump()
    r = c.ingest(truth.iloc[:6].astype(float))  # the same labels, written as 1.0/0.0
    assert (int(r), r.new, r.unchanged, r.relabelled) == (0, 0, 6, 0)
    assert c._store.dump() == dump
    r = c.ingest(truth)  # a retry of the whole file after a crash: only the last 4 are new
    assert (r.new, r.unchanged) == (4, 6)
    assert c.labels_used == 10
    assert_counts_match_labels(c, pool)
    c.close()


def test_a_different_label_is_refused_unless_relabel(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(6)
    truth = pd.Series([truth_of(r) for r in b.index], index=b.index)
    c.ingest(truth)
    flipped = 1 - truth.iloc[[1, 4]]
    dump = c._store.dump()
    with pytest.raises(ValueError, match="already labelled with a different label") as err:
        c.ingest(flipped)
    assert repr(int(b.index[1])) in str(err.value) and repr(int(b.index[4])) in str(err.value)
    assert c._store.dump() == dump
    r = c.ingest(flipped, relabel=True)
    assert (r.new, r.relabelled) == (0, 2)
    assert c.labels()["label"].reindex(b.index).tolist() == [*truth.iloc[:1], *flipped.iloc[:1], *truth.iloc[2:4], *flipped.iloc[1:], *truth.iloc[5:]]
    assert_counts_match_labels(c, pool)
    c.close()


def test_relabel_corrects_recall_trials(tmp_path):
    c, pool = new_campaign(tmp_path, metric="recall")
    b = c.propose(20)
    truth = pd.Series([truth_of(r) for r in b.index], index=b.index)
    c.ingest(truth)
    new = 1 - truth
    c.ingest(new, relabel=True)
    pred = pool.loc[b.index, "pred"]
    g = pool.loc[b.index, "g"]
    st_ = c.status()
    assert (st_["trials"].reindex(sorted(set(g))) == new.eq(1).groupby(g).sum()).all()
    assert (st_["successes"].reindex(sorted(set(g))) == (new.eq(1) & pred.eq(1)).groupby(g).sum()).all()
    c.close()


def test_cli_ingest_twice_and_relabel(tmp_path, cli_campaign, capsys):
    db, pool = cli_campaign
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = [truth_of(r) for r in batch["rid"]]
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    assert "ingested 0 new labels (8 already present" in capsys.readouterr().out
    batch.loc[0, "label"] = 1 - batch.loc[0, "label"]
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(int(batch.loc[0, "rid"])) in err and "relabel" in err
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out), "--relabel"]) == 0
    c = Campaign.open(db)
    assert c.labels()["label"][int(batch.loc[0, "rid"])] == batch.loc[0, "label"]
    assert_counts_match_labels(c, pool)
    c.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subsets=st.lists(st.lists(st.integers(0, 14), min_size=1, max_size=15, unique=True), min_size=1, max_size=5))
def test_property_repeated_ingests_count_each_row_once(tmp_path_factory, subsets):
    path = tmp_path_factory.mktemp("idem") / "c.db"
    pool = make_pool(n=80, k=3)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, target_halfwidth=0.01)
    b = c.propose(15)
    truth = pd.Series([truth_of(r) for r in b.index], index=b.index)
    seen: set[int] = set()
    for positions in subsets:
        ids = b.index[positions]
        r = c.ingest(truth.loc[ids])
        new = set(ids) - seen
        assert (r.new, r.unchanged) == (len(new), len(ids) - len(new))
        seen |= set(ids)
    assert c.labels_used == len(seen) and int(c.status()["pending"].sum()) == 15 - len(seen)
    assert_counts_match_labels(c, pool)
    c.close()


# ---------------------------------------------------------------------------------------
# item 13: open checks the file before changing anything; locks give a clear message
# ---------------------------------------------------------------------------------------
def _foreign_sqlite(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE foo (x)")
    con.execute("INSERT INTO foo VALUES (1)")
    con.commit()
    con.close()


def _wrong_schema(path):
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE meta (key, value); INSERT INTO meta VALUES ('schema_version', '99');"
        + "".join(f"CREATE TABLE {t} (x);" for t in ("strata", "pool", "proposals", "labels", "counts", "decisions"))
    )
    con.commit()
    con.close()


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda p: p.write_text("id,label\n1,0\n"), "not an SQLite database"),
        (lambda p: p.write_bytes(b""), "empty file"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + bytes(40)), "not an SQLite database"),
        (_foreign_sqlite, "no tables"),
        (_wrong_schema, "schema version"),
        (lambda p: p.mkdir(), "not a file"),
    ],
)
def test_open_refuses_foreign_files_and_changes_nothing(tmp_path, make, reason):
    path = tmp_path / "x.db"
    make(path)
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(ValueError, match=reason) as err:
        Campaign.open(path)
    assert str(path) in str(err.value)
    if before is not None:
        assert path.read_bytes() == before
        if len(before) >= 100 and before.startswith(b"SQLite format 3"):
            assert before[18:20] == b"\x01\x01"  # still a rollback-journal file, not WAL
    assert sorted(os.listdir(tmp_path)) == ["x.db"]  # no -wal / -shm created


def test_open_refuses_a_truncated_campaign(tmp_path):
    c, _ = new_campaign(tmp_path, pool=make_pool(n=5000))
    c.close()
    data = (tmp_path / "c.db").read_bytes()
    assert data[18:20] == b"\x02\x02"  # campaign files are WAL files
    cut = tmp_path / "cut.db"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated") as err:
        Campaign.open(cut)
    assert str(cut) in str(err.value)


def test_held_write_lock_gives_a_clear_error_after_busy_timeout(tmp_path):
    c, _ = new_campaign(tmp_path)
    b = c.propose(3)
    c.close()
    c = Campaign.open(tmp_path / "c.db", busy_timeout=0.2)
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        for action in (lambda: c.propose(2), lambda: c.ingest(pd.Series(1, index=b.index)), lambda: c.release()):
            t0 = time.perf_counter()
            with pytest.raises(ValueError, match="locked by another process") as err:
                action()
            assert time.perf_counter() - t0 < 5
            assert str(tmp_path / "c.db") in str(err.value) and "busy_timeout=0.2" in str(err.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert c.ingest(pd.Series(1, index=b.index)) == 3  # and it works once the lock is gone
    c.close()


def test_cli_on_a_foreign_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "x.db"
    path.write_text("not a database\n")
    for cmd in (["status"], ["pending"], ["release", "--all"], ["export", "--out", str(tmp_path / "b.csv")]):
        assert main(["campaign", *cmd, "--db", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--db" in err and str(path) in err


# ---------------------------------------------------------------------------------------
# item 14: every campaign CLI error is one line on stderr with exit 2
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, names",
    [
        (["propose", "--batch-size", "abc", "--out", "b.csv"], "--batch-size"),
        (["propose", "--batch-size", "0", "--out", "b.csv"], "--batch-size"),
        (["propose", "--out", "b.csv", "--bogus"], "--bogus"),
        (["propose"], "--out"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--target-halfwidth", "nan"], "--target-halfwidth"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--target-halfwidth", "0.5"], "--target-halfwidth"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--level", "1.5"], "--level"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--seed", "-1"], "--seed"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--budget", "x"], "--budget"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--score-bins", "a,b"], "--score-bins"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--strata", ","], "--strata"),
        (["create", "--pool", "EMPTY", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "HEADER", "--y-pred", "pred", "--strata", "g"], "--pool"),
        (["create", "--pool", "GARBLED_PQ", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "GARBLED_CSV", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "pool.xlsx", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "nope.csv", "--y-pred", "pred"], "--pool"),
        (["ingest", "--labels", "EMPTY"], "--labels"),
        (["ingest", "--labels", "GARBLED_PQ"], "--labels"),
        (["bogus"], "bogus"),
        ([], "sub-command"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path, cli_campaign, capsys, argv, names):
    db, _ = cli_campaign
    files = {
        "POOL": tmp_path / "pool.csv",
        "EMPTY": tmp_path / "empty.csv",
        "HEADER": tmp_path / "header.csv",
        "GARBLED_PQ": tmp_path / "garbled.parquet",
        "GARBLED_CSV": tmp_path / "garbled.csv",
    }
    files["EMPTY"].write_text("")
    files["HEADER"].write_text("rid,g,pred\n")
    files["GARBLED_PQ"].write_bytes(np.random.default_rng(0).bytes(500))
    files["GARBLED_CSV"].write_bytes(b"\xff\xfe\x00\x81" * 100 + b"\n" + b'"a,"b\n1,2,3,4\n')
    argv = [str(files.get(a, a)) for a in argv]
    if argv and argv[0] == "create":
        argv += ["--db", str(tmp_path / "new.db")]
    elif argv and argv[0] in ("propose", "ingest"):
        argv += ["--db", db]
    capsys.readouterr()
    assert main(["campaign", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert names in err
    assert "Traceback" not in err
    assert not (tmp_path / "new.db").exists()


def test_cli_subprocess_error_is_one_line(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "bayeseval", "campaign", "propose", "--db", str(tmp_path / "c.db"),
         "--batch-size", "-3", "--out", str(tmp_path / "b.csv")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--batch-size" in r.stderr and "-3" in r.stderr


# ---------------------------------------------------------------------------------------
# item 6 (simulate): missing truth/prediction/strata and a bad target are refused
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim_pool():
    return synthetic_pool(n_rows=2000, n_strata=3, random_seed=0)


@pytest.mark.parametrize("target", [0, 0.5, -0.1, math.nan, math.inf, 1e-400])
def test_simulate_refuses_bad_target_halfwidth(sim_pool, target):
    with pytest.raises(ValueError, match="target_halfwidth"):
        simulate(sim_pool, strata="stratum", y_pred="pred", y_true="truth", target_halfwidth=target, progress=False)


@settings(max_examples=40, deadline=None)
@given(
    column=st.sampled_from([("y_true", "truth"), ("y_pred", "pred"), ("strata", "stratum")]),
    missing=st.sampled_from([None, np.nan, pd.NA]),
    rows=st.lists(st.integers(0, 1999), min_size=1, max_size=3, unique=True),
)
def test_property_simulate_refuses_missing_values(sim_pool, column, missing, rows):
    name, col = column
    data = sim_pool.astype({col: object})
    data.loc[data.index[rows], col] = missing
    with pytest.raises(ValueError) as err:
        simulate(data, strata="stratum", y_pred="pred", y_true="truth", n_repeats=1, progress=False)
    text = str(err.value)
    assert f"{name} column {col!r}" in text and "missing" in text
    assert repr(int(data.index[min(rows)])) in text


# ---------------------------------------------------------------------------------------
# properties across the classes: missing values at create, mixed label types, alignment
# ---------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    column=st.sampled_from([("strata", "g"), ("y_pred", "pred")]),
    missing=st.sampled_from([None, np.nan, pd.NA]),
    rows=st.lists(st.integers(0, 99), min_size=1, max_size=3, unique=True),
)
def test_property_create_refuses_missing_values_and_writes_nothing(tmp_path_factory, column, missing, rows):
    d = tmp_path_factory.mktemp("miss")
    name, col = column
    pool = make_pool(n=100).astype({col: object})
    pool.loc[pool.index[rows], col] = missing
    with pytest.raises(ValueError) as err:
        Campaign.create(d / "c.db", pool, strata="g", y_pred="pred")
    assert f"{name} column {col!r}" in str(err.value) and repr(int(pool.index[min(rows)])) in str(err.value)
    assert os.listdir(d) == []


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=4), st.none()))
def test_property_string_labels_never_match_numbers(x):
    labels = LabelSet(["cat", "dog", "1"])
    got = labels.normalise(x)
    if isinstance(x, str) and x in ("cat", "dog", "1"):
        assert got == x
    elif x is None or (isinstance(x, float) and math.isnan(x)):
        assert got is not None and got not in ("cat", "dog", "1")  # missing
    else:
        assert got is None  # 1 never matches "1"; "Cat" never matches "cat"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(list(range(8))), as_frame=st.booleans())
def test_property_labels_are_paired_by_row_id_not_position(tmp_path_factory, order, as_frame):
    path = tmp_path_factory.mktemp("align") / "c.db"
    pool = make_pool(n=60, k=2)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, target_halfwidth=0.01)
    b = c.propose(8)
    truth = pd.Series([truth_of(r) for r in b.index], index=b.index)
    shuffled = truth.iloc[list(order)]
    if as_frame:
        c.ingest(pd.DataFrame({"id": shuffled.index, "label": shuffled.to_numpy()}), id_column="id")
    else:
        c.ingest(shuffled)
    assert (c.labels()["label"].reindex(b.index) == truth).all()
    assert_counts_match_labels(c, pool)
    c.close()
