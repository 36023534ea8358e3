"""Harness files on the command line: ``report``, ``audit``, ``compare`` and ``campaign create`` with
``--inspect``, ``--lm-eval`` and ``--promptfoo``, each against the same function called in Python on
the reader's frame, and against counts made by hand from the values the logs were written with.

The Inspect logs are written by Inspect's mock model (one module fixture); lm-eval and promptfoo
read the committed files of tests/io/data.
"""

from __future__ import annotations

import json
import sqlite3
import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design, PrecisionLimitedWarning, compare_models, evaluate
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval._kernels.proxy import mover_sum
from bayeseval.cli.main import main
from bayeseval.fairness import audit
from bayeseval.io import join_labels, read_inspect, read_lm_eval, read_promptfoo
from tests.io.helpers import CATEGORIES, DATA, judged, write_judged_logs

N = 90
ACCURACY = {"a": {"math": 0.9, "geo": 0.6, "bio": 0.3}, "b": {"math": 0.5, "geo": 0.6, "bio": 0.7}}
EPOCHS_LOG = DATA / "inspect_model-a.eval"  # 6 items in 3 epochs


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    verdicts = {m: judged(N, acc, seed=k) for k, (m, acc) in enumerate(ACCURACY.items())}
    paths = write_judged_logs(tmp_path_factory.mktemp("logs"), verdicts)
    return dict(zip(verdicts, paths, strict=True)), verdicts


def _json(capsys, *argv):
    code = main([*map(str, argv), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _error(capsys, *argv):
    assert main(list(map(str, argv))) == 2
    return capsys.readouterr().err


def _strata(payload):
    table = pd.DataFrame(payload["strata"])
    return table.set_index(table.columns[0])


def test_report_of_an_inspect_log_counts_the_verdicts_and_equals_evaluate(logs, capsys):
    paths, verdicts = logs
    got = _strata(
        _json(capsys, "report", "--inspect", paths["a"], "--strata", "metadata.category", "--metric", "accuracy")
    )
    by_hand = pd.Series(verdicts["a"]).groupby([CATEGORIES[i % 3] for i in range(N)]).agg(["sum", "size"])
    assert got["successes"].to_dict() == by_hand["sum"].to_dict()
    assert got["trials"].to_dict() == by_hand["size"].to_dict()
    frame, design = read_inspect(paths["a"])
    ref = evaluate(
        frame, outcome="outcome", strata="metadata.category", metric="accuracy", design=design, random_seed=0
    )
    for col in ("rate", "lower", "upper"):
        np.testing.assert_allclose(got[col].to_numpy(float), ref.table[col].to_numpy(float), rtol=1e-12)


def test_report_of_epochs_treats_the_item_as_the_unit_and_population_overrides(capsys):
    payload = _json(capsys, "report", "--inspect", EPOCHS_LOG, "--strata", "metadata.category", "--metric", "accuracy")
    got = _strata(payload)
    assert got["n_units"].tolist() == [2, 2, 2] and got["trials"].tolist() == [6, 6, 6]  # 2 items x 3 epochs
    assert "item" in payload["design"]
    records = read_inspect(EPOCHS_LOG)
    ref = evaluate(
        records.frame, outcome="outcome", strata="metadata.category", metric="accuracy", design=records.design
    )
    np.testing.assert_allclose(got["upper"].to_numpy(float), ref.table["upper"].to_numpy(float))
    pool = _json(capsys, "report", "--inspect", EPOCHS_LOG, "--strata", "metadata.category", "--population", "pool")
    ref = evaluate(
        records.frame,
        outcome="outcome",
        strata="metadata.category",
        design=Design(cluster="item", population="pool"),
    )
    np.testing.assert_allclose(_strata(pool)["upper"].to_numpy(float), ref.table["upper"].to_numpy(float))


def test_report_with_a_calibration_set_weights_the_labels_as_the_python_call_does(logs, capsys, tmp_path):
    paths, verdicts = logs
    rng = np.random.default_rng(3)
    passed = np.flatnonzero(np.array(verdicts["a"]) == 1)
    failed = np.flatnonzero(np.array(verdicts["a"]) == 0)
    chosen = np.concatenate([rng.choice(passed, 15, replace=False), rng.choice(failed, 15, replace=False)])
    human = [verdicts["a"][i] if rng.random() < 0.85 else 1 - verdicts["a"][i] for i in chosen]
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item": chosen, "label": human}).to_csv(labels, index=False)
    argv = ["report", "--inspect", paths["a"], "--labels", labels, "--selected-by", "outcome"]
    got = _strata(_json(capsys, *argv, "--strata", "metadata.category", "--metric", "accuracy"))
    records = join_labels(read_inspect(paths["a"]), labels, selected_by="outcome")
    frame = records.frame.assign(claim=1.0)
    ref = evaluate(
        frame,
        y_true="human",
        y_pred="claim",
        proxy="outcome",
        strata="metadata.category",
        metric="accuracy",
        design=records.design,
        random_seed=0,
    )
    assert records.design.inclusion == "inclusion"
    assert got["trials"].sum() == 30 and got["pool_trials"].sum() == N
    for col in ("rate", "lower", "upper"):
        np.testing.assert_allclose(got[col].to_numpy(float), ref.table[col].to_numpy(float), rtol=1e-12)


def test_compare_of_two_logs_equals_compare_models_and_the_mean_item_difference(logs, capsys):
    paths, verdicts = logs
    payload = _json(capsys, "compare", "--inspect", paths["a"], paths["b"], "--strata", "metadata.category")
    table = pd.DataFrame(payload["differences"])
    overall = table[table["stratum"] == "(all)"].iloc[0]
    sign = 1 if overall["model_a"] == "mockllm/a" else -1
    assert overall["estimate"] == pytest.approx(sign * np.mean(np.subtract(verdicts["a"], verdicts["b"])))
    frame = read_inspect([paths["a"], paths["b"]]).frame
    ref = compare_models(frame, strata="metadata.category").table
    np.testing.assert_allclose(table["lower"].to_numpy(float), ref["lower"].to_numpy(float))
    np.testing.assert_allclose(table["p_adjusted"].to_numpy(float), ref["p_adjusted"].to_numpy(float))


def test_audit_of_one_log_equals_the_audit_of_its_answers_and_refuses_epochs_and_models(logs, capsys):
    paths, verdicts = logs
    payload = _json(capsys, "audit", "--inspect", paths["a"], "--groups", "metadata.category")
    frame = read_inspect(paths["a"]).frame.assign(claim=1.0)
    ref = audit(frame, y_true="outcome", y_pred="claim", groups="metadata.category", metrics="accuracy", random_seed=0)
    assert json.loads(json.dumps(ref.to_dict(), default=str))["groups"] == payload["groups"]
    # epochs: the item is the unit, each group's interval its units' interval
    payload = _json(capsys, "audit", "--inspect", EPOCHS_LOG, "--groups", "metadata.category", "--min-trials", "1")
    epochs = read_inspect(EPOCHS_LOG)
    assert epochs.design.cluster is not None
    ref = audit(
        epochs.frame,
        outcome="outcome",
        groups="metadata.category",
        metrics="accuracy",
        random_seed=0,
        min_trials=1,
        design=Design(cluster=epochs.design.cluster),
    )
    assert json.loads(json.dumps(ref.to_dict(), default=str))["groups"] == payload["groups"]
    assert {g["read"] for g in payload["groups"]} == {"units"}
    err = _error(capsys, "audit", "--inspect", paths["a"], paths["b"], "--groups", "metadata.category")
    assert "2 models" in err
    err = _error(capsys, "audit", "--inspect", paths["a"], "--groups", "metadata.category", "--metrics", "tpr")
    assert "--metrics 'tpr'" in err


def test_campaign_create_from_a_log_has_one_row_per_item_and_the_judge_as_proxy(logs, capsys, tmp_path):
    paths, _ = logs
    db = tmp_path / "c.db"
    argv = ["campaign", "create", "--inspect", paths["a"], "--strata", "metadata.category", "--metric", "accuracy"]
    payload = _json(capsys, *argv, "--target-halfwidth", "0.2", "--db", db, "--seed", "1")
    assert payload["pool_rows"] == N and payload["strata"] == 3 and payload["config"]["proxy"] == "outcome"
    assert main(["campaign", "propose", "--db", str(db), "--out", str(tmp_path / "batch.csv")]) == 0
    batch = pd.read_csv(tmp_path / "batch.csv")
    assert batch.columns[0] == "item" and set(batch["item"]) <= set(range(N)) and len(batch) > 0
    with sqlite3.connect(db) as con:  # the pool holds one row per item
        assert con.execute("select count(*) from pool").fetchone()[0] == N
    strata = ["--strata", "metadata.category"]
    err = _error(capsys, "campaign", "create", "--inspect", EPOCHS_LOG, *strata, "--db", tmp_path / "d.db")
    assert "3 epochs" in err and "--epoch 1" in err and not (tmp_path / "d.db").exists()
    with warnings.catch_warnings():  # 2 items per category: the command warns, on one line
        warnings.simplefilter("always", PrecisionLimitedWarning)
        argv = ["campaign", "create", "--inspect", EPOCHS_LOG, "--epoch", "1", *strata, "--db", tmp_path / "e.db"]
        assert main([*map(str, argv), "--json"]) == 0
    out = capsys.readouterr()
    assert "warning: target_halfwidth" in out.err
    epoch_one = json.loads(out.out)
    assert epoch_one["pool_rows"] == 6


def test_lm_eval_and_promptfoo_files_give_the_readers_frames(capsys):
    runs = DATA / "lm_eval"
    files = sorted(runs.glob("*/samples_toy_mc_*.jsonl"))
    payload = _json(
        capsys,
        "report",
        "--lm-eval",
        *files,
        "--scorer",
        "acc",
        "--strata",
        "model,metadata.category",
        "--metric",
        "accuracy",
    )
    frame = read_lm_eval(files, metric="acc").frame
    by_hand = frame.groupby(["model", "metadata.category"])["outcome"].agg(["sum", "size"])
    got = pd.DataFrame(payload["strata"])
    assert got["successes"].tolist() == by_hand["sum"].tolist() and got["trials"].tolist() == by_hand["size"].tolist()
    results = DATA / "promptfoo" / "results.json"
    payload = _json(capsys, "compare", "--promptfoo", results)
    ref = compare_models(read_promptfoo(results).frame, item=["task", "item"]).table
    np.testing.assert_allclose(
        pd.DataFrame(payload["differences"])["estimate"].to_numpy(float), ref["estimate"].to_numpy(float)
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "x.csv", "--inspect", "a.eval"], "not both"),
        (["report", "--metric", "accuracy"], "--inspect, --lm-eval or --promptfoo"),
        (["report", "--inspect", str(EPOCHS_LOG), "--filter", "strict"], "--filter does not apply to --inspect"),
        (["report", "--inspect", str(EPOCHS_LOG), "--scorer", "nope"], "--inspect: --scorer 'nope'"),
        (["report", "--inspect", str(EPOCHS_LOG), "--strata", "category"], "--strata column 'category'"),
        (["report", "--inspect", str(EPOCHS_LOG), "--y-true", "y"], "--y-true does not apply"),
        (["report", "--inspect", str(EPOCHS_LOG), "--selected-by", "outcome"], "give --labels too"),
    ],
)
def test_input_errors_name_the_option(capsys, argv, message):
    assert message in _error(capsys, *argv)


def test_labels_on_answers_in_units_read_the_item_as_the_unit(capsys, tmp_path):
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item": [0, 1], "label": [1, 0]}).to_csv(labels, index=False)
    argv = ["report", "--inspect", EPOCHS_LOG, "--scorer", "match", "--labels", labels, "--metric", "accuracy"]
    got = _strata(_json(capsys, *argv))
    records = join_labels(read_inspect(EPOCHS_LOG, scorer="match"), labels)
    assert records.design.cluster == "item"
    ref = evaluate(
        records.frame.assign(claim=1.0),
        y_true="human",
        y_pred="claim",
        proxy="outcome",
        metric="accuracy",
        design=records.design,
    )
    assert got["trials"].tolist() == [6] and got["pool_trials"].tolist() == [18]  # 2 labelled items x 3 epochs of 6
    for col in ("rate", "lower", "upper"):
        np.testing.assert_allclose(got[col].to_numpy(float), ref.table[col].to_numpy(float), rtol=1e-12)
    # two labelled units are one cell group: the betting interval of the items (3 of 3 right, 0 of 3)
    by_hand = units_ci(pd.DataFrame({"k": 0, "unit_successes": [3.0, 0.0], "unit_trials": 3, "units": 1}), "k")
    assert (got["lower"].iloc[0], got["upper"].iloc[0]) == (by_hand["lower"].iloc[0], by_hand["upper"].iloc[0])
    got = _strata(_json(capsys, *argv, "--epoch", "1"))
    assert got["trials"].tolist() == [2] and got["pool_trials"].tolist() == [6]
    # labels chosen by the judge's verdict: the unit's cell is its majority verdict (items 0 and 3 pass,
    # 1, 2, 4, 5 fail), item 0 labelled of the passes and item 1 of the fails
    got = _strata(_json(capsys, *argv, "--selected-by", "outcome"))
    frame = records.frame.assign(claim=1.0)
    frame["inclusion"] = np.where(frame["item"].isin([0, 3]), 1 / 2, 1 / 4)
    ref = evaluate(
        frame,
        y_true="human",
        y_pred="claim",
        proxy="outcome",
        metric="accuracy",
        design=Design(cluster="item", inclusion="inclusion"),
    )
    assert bool(ref.table["proxy_used"].iloc[0])
    for col in ("rate", "lower", "upper"):
        np.testing.assert_allclose(got[col].to_numpy(float), ref.table[col].to_numpy(float), rtol=1e-12)
    # each cell's betting interval at its row share (2 of 6 items pass): MOVER of the two
    cells = units_ci(pd.DataFrame({"k": [1, 0], "unit_successes": [3.0, 0.0], "unit_trials": 3, "units": 1}), "k")
    est, lo, hi = mover_sum([4 / 6, 2 / 6], cells["estimate"], cells["lower"], cells["upper"])
    np.testing.assert_allclose(got[["rate", "lower", "upper"]].iloc[0].to_numpy(float), [est, max(lo, 0), hi])


def test_audit_with_labels_on_epochs_reads_each_groups_units_proxy_interval(capsys, tmp_path):
    """Labels on items 0-3 of a 3-epoch log, chosen by the judge's majority verdict (items 0 and 3 pass,
    both labelled: 1; 1, 2, 4, 5 fail, two labelled: 1/2): the audit of the command equals the audit
    of the answers with the item as the unit and those probabilities."""
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item": [0, 1, 2, 3], "label": [1, 0, 1, 1]}).to_csv(labels, index=False)
    argv = ["audit", "--inspect", EPOCHS_LOG, "--labels", labels, "--groups", "metadata.category"]
    payload = _json(capsys, *argv, "--selected-by", "outcome", "--min-trials", "1")
    frame = join_labels(read_inspect(EPOCHS_LOG), labels).frame.assign(claim=1.0)
    frame["inclusion"] = np.where(frame["item"].isin([0, 3]), 1.0, 0.5)
    ref = audit(
        frame,
        y_true="human",
        y_pred="claim",
        proxy="outcome",
        groups="metadata.category",
        metrics="accuracy",
        random_seed=0,
        min_trials=1,
        design=Design(cluster="item", inclusion="inclusion"),
    )
    assert json.loads(json.dumps(ref.to_dict(), default=str))["groups"] == payload["groups"]
    assert {g["read"] for g in payload["groups"]} == {"proxy"}
    assert [g["units"] for g in payload["groups"]] == ref.groups["units"].tolist()
