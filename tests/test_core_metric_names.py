"""The one metric vocabulary: every help and error lists the same table; aliases echo as written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score, precision_score, recall_score

from bayeseval import audit, get_metric, tabulate
from bayeseval._api import metric_names
from bayeseval.cli.campaign import main as campaign_main
from bayeseval.cli.main import main
from bayeseval.counts.metrics import METRICS
from bayeseval.fairness import METRICS as AUDIT_METRICS
from bayeseval.report import evaluate

REPORT_LIST = metric_names.choices(composite=False)
AUDIT_LIST = metric_names.choices()


@pytest.fixture(scope="module")
def preds(tmp_path_factory):
    rng = np.random.default_rng(8)
    n = 800
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.85, y, 1 - y)
    df = pd.DataFrame({"y": y, "p": p, "g": rng.choice(["a", "b"], n)})
    path = tmp_path_factory.mktemp("m") / "preds.csv"
    df.to_csv(path, index=False)
    return df, path


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_table_names_every_single_rate_metric_and_the_audit_ones():
    assert set(metric_names.NAMES) - set(metric_names.COMPOSITE) == set(METRICS)
    assert {metric_names.canonical(m) for m in AUDIT_METRICS} == set(metric_names.NAMES)
    every = [n for name, aliases in metric_names.NAMES.items() for n in (name, *aliases)]
    assert len(every) == len(set(every))  # no word names two metrics
    for word in every:  # each word is listed in the one list
        assert word in AUDIT_LIST.replace("(", " ").replace(")", " ").replace(",", " ").split()


@pytest.mark.parametrize("argv, listed", [
    (["report", "--help"], REPORT_LIST),
    (["gate", "--help"], REPORT_LIST),
    (["audit", "--help"], AUDIT_LIST),
])
def test_every_help_prints_the_list_of_the_table(argv, listed, capsys):
    assert main(argv) == 0
    assert listed in _flat(capsys.readouterr().out)


def test_campaign_help_prints_the_list_of_the_table(capsys):
    assert campaign_main(["campaign", "create", "--help"]) == 0
    assert REPORT_LIST in _flat(capsys.readouterr().out)


def test_every_error_prints_the_list_of_the_table(preds, tmp_path, capsys):
    _, path = preds
    base = [str(path), "--y-true", "y", "--y-pred", "p"]
    for argv, listed in ((["report", *base, "--metric", "f1"], REPORT_LIST),
                         (["gate", *base, "--metric", "f1", "--min-trials", "5"], REPORT_LIST),
                         (["audit", *base, "--groups", "g", "--metrics", "f1"], AUDIT_LIST)):
        assert main(argv) == 2
        err = _flat(capsys.readouterr().err)
        assert "unknown metric 'f1'" in err and f"valid choices are {listed}" in err
    pool = tmp_path / "pool.csv"
    pd.DataFrame({"g": ["a", "b"] * 20, "p": [0, 1] * 20}).to_csv(pool, index=False)
    code = campaign_main(["campaign", "create", "--pool", str(pool), "--strata", "g", "--y-pred", "p",
                          "--metric", "f1", "--db", str(tmp_path / "c.db")])
    assert code == 2 and f"valid choices are {REPORT_LIST}" in _flat(capsys.readouterr().err)
    with pytest.raises(ValueError, match="valid choices are") as err:
        get_metric("f1")
    assert str(err.value).endswith(REPORT_LIST)
    with pytest.raises(ValueError) as err:
        audit(preds[0], y_true="y", y_pred="p", groups="g", metrics="f1")
    assert str(err.value).endswith(AUDIT_LIST)


def test_an_alias_counts_its_metric_and_is_echoed_as_written(preds, capsys):
    df, path = preds
    for alias, ref in (("tpr", recall_score(df["y"], df["p"])), ("Sensitivity", recall_score(df["y"], df["p"])),
                       ("tnr", recall_score(df["y"], df["p"], pos_label=0)),
                       ("ppv", precision_score(df["y"], df["p"]))):
        counts = tabulate(df, y_true="y", y_pred="p", metric=alias)
        assert counts.total_successes / counts.total_trials == pytest.approx(ref, rel=1e-12)
        rep = evaluate(df, y_true="y", y_pred="p", strata="g", metric=alias, random_seed=0)
        assert rep.metric == alias and rep.to_dict()["metric"] == alias
    assert main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--metric", "tpr",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "tpr"
    assert main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--metric", "tpr"]) == 0
    text = capsys.readouterr().out
    assert "report: tpr" in text and "recall" not in text


def test_balanced_accuracy_is_audit_only_and_the_refusal_says_why(preds, capsys):
    df, path = preds
    with pytest.raises(ValueError, match=r"mean of recall \(tpr\) and specificity \(tnr\)") as err:
        evaluate(df, y_true="y", y_pred="p", metric="balanced_accuracy")
    assert str(err.value).endswith(f"Valid choices here are {REPORT_LIST}")
    assert main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--metric", "balanced-accuracy"]) == 2
    assert "bayeseval audit --metrics balanced_accuracy" in _flat(capsys.readouterr().err)
    res = audit(df.assign(g="all"), y_true="y", y_pred="p", groups="g", metrics="balanced_accuracy")
    rate = res.groups.loc[res.groups["metric"] == "balanced_accuracy", "rate"].iloc[0]
    assert rate == pytest.approx(balanced_accuracy_score(df["y"], df["p"]), rel=1e-12)
