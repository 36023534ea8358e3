"""Tests of ``bayeseval.cli.audit``."""

from __future__ import annotations

import argparse
import contextlib
import io
import json

import numpy as np
import pytest

from bayeseval import proxy_ci
from bayeseval.cli.audit import run_audit
from bayeseval.cli.main import build_parser
from bayeseval.cli.main import main as main_audit_report
from tests.helpers import _audit_pool, _collide, _rows, _three_groups, _two_groups


def _cli(args):
    """Run ``bayeseval audit`` as the command line parses it, letting bad input raise."""
    ns = build_parser(campaign=False, impact=False).parse_args(["audit", *args])
    return ns.func(ns)


def test_command_line_exit_codes_and_json(tmp_path, capsys):
    path = tmp_path / "preds.csv"
    _two_groups(2000, 0.4, 0.8).to_csv(path, index=False)
    base = [str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--metrics", "tpr"]
    assert _cli(base + ["--tolerance", "0.1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verdicts"][0]["verdict"] == "outside" and out["reference"] == {"tpr": "a"}
    # the groups' counts and Wilson limits as SciPy-free closed forms give them
    groups = {g["group"]: g for g in out["groups"]}
    assert (groups["a"]["successes"], groups["a"]["trials"]) == (800, 2000)
    z, n, r = 1.959963984540054, 2000, 0.4
    centre, half = (
        (r + z * z / (2 * n)) / (1 + z * z / n),
        z * np.sqrt(r * (1 - r) / n + z * z / (4 * n * n)) / (1 + z * z / n),
    )
    assert abs(groups["a"]["wilson_lower"] - (centre - half)) < 1e-8
    assert _cli(base + ["--tolerance", "0.5"]) == 0
    with pytest.raises(ValueError, match="--groups column 'zz'"):
        _cli([str(path), "--y-true", "y", "--y-pred", "p", "--groups", "zz"])
    (tmp_path / "x.txt.bz2").write_bytes(b"BZh9")
    with pytest.raises(ValueError, match="unsupported"):
        _cli([str(tmp_path / "x.txt.bz2"), "--y-true", "y", "--y-pred", "p", "--groups", "g"])


def test_command_line_exit_code_when_not_measured(tmp_path, capsys):
    path = tmp_path / "p.csv"
    _rows({"a": (40, 20, 10, 30), "b": (3, 2, 30, 70)}).to_csv(path, index=False)
    base = [str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--metrics", "tpr", "--tolerance", "0.3"]
    assert _cli(base) == 3  # b has 5 positives, under the default 30: not measured
    out = capsys.readouterr().out
    assert "--min-trials 30" in out and "min_trials=" not in out
    assert _cli(base + ["--min-trials", "5"]) == 0  # measured, undecided or within


def test_command_line_reference_is_a_label_and_its_messages_name_the_flag(tmp_path):
    path = tmp_path / "c.csv"
    _collide().to_csv(path, index=False)
    base = [
        str(path),
        "--y-true",
        "y",
        "--y-pred",
        "p",
        "--groups",
        "f1,f2",
        "--metrics",
        "tpr",
        "--min-trials",
        "1",
        "--json",
    ]
    with pytest.raises(
        ValueError,
        match=r"ambiguous.*give --reference as the tables label the group: "
        r"\['a \| \"b \| c\"', '\"a \| b\" \| c'\]",
    ):
        _cli(base + ["--reference", "a | b | c"])
    assert _cli(base + ["--reference", '"a | b" | c']) == 0


def test_the_audit_command_prints_a_summary_that_fits_100_columns(tmp_path, capsys):
    from bayeseval.cli.main import main
    from bayeseval.datasets import load_compas

    path = tmp_path / "compas.csv"
    load_compas().to_csv(path, index=False)
    code = main(
        [
            "audit",
            str(path),
            "--y-true",
            "two_year_recid",
            "--y-pred",
            "predicted_recid",
            "--groups",
            "race,sex",
            "--metrics",
            "fpr,tpr",
            "--tolerance",
            "0.1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1  # decided outside the tolerance (the published COMPAS disparities)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert len(out.splitlines()) < 40
    assert "equal_opportunity / tpr: outside" in out and "--out" in out
    # the notes speak the command line's spelling
    assert "--min-trials 30" in out and "min_trials=" not in out


def test_min_trials_and_model_on_the_command_line(tmp_path):
    path = tmp_path / "p.csv"
    _three_groups().to_csv(path, index=False)
    args = argparse.Namespace(
        data=str(path),
        y_true="y",
        y_pred="p",
        groups="g",
        metrics="selection_rate",
        reference=None,
        tolerance=0.2,
        level=0.95,
        pos_label=None,
        seed=0,
        json=True,
        model="beta_binomial",
        min_trials=10,
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_audit(args)
    got = json.loads(out.getvalue())
    assert code == 0 and got["model"] == "beta_binomial" and got["min_trials"] == 10
    assert [v["verdict"] for v in got["verdicts"]] == ["within tolerance"]


def test_cli_report_and_audit_with_proxy(tmp_path, capsys):
    df = _audit_pool(0.6, size=20_000)
    path = tmp_path / "pool.csv"
    df.to_csv(path, index=False)
    code = main_audit_report(
        [
            "report",
            str(path),
            "--y-true",
            "y",
            "--y-pred",
            "p",
            "--strata",
            "g",
            "--proxy",
            "j",
            "--metric",
            "precision",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    ref = proxy_ci(df, y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table
    assert code == 0
    rates = {r["stratum"]: r["rate"] for r in out["strata"]}
    assert rates == pytest.approx(ref["rate"].to_dict())
    code = main_audit_report(
        [
            "audit",
            str(path),
            "--y-true",
            "y",
            "--y-pred",
            "p",
            "--groups",
            "g",
            "--proxy",
            "j",
            "--metrics",
            "ppv",
            "--tolerance",
            "0.1",
            "--guarantee",
            "average",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # decided outside the tolerance
    assert {r["read"] for r in out["groups"]} <= {"pooled", "proxy"}
    code = main_audit_report(["report", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g"])
    assert code == 2 and "missing labels" in capsys.readouterr().err
    code = main_audit_report(["audit", str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--proxy", "nope"])
    assert code == 2 and "--proxy column 'nope'" in capsys.readouterr().err


def test_print_of_an_audit_is_the_summary_the_command_line_prints(tmp_path, capsys):
    import pandas as pd

    from bayeseval import audit

    path = tmp_path / "preds.csv"
    _three_groups().to_csv(path, index=False)
    data = pd.read_csv(path)
    res = audit(data, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.2, random_seed=3)
    _cli(
        [
            str(path),
            "--y-true",
            "y",
            "--y-pred",
            "p",
            "--groups",
            "g",
            "--metrics",
            "tpr,fpr",
            "--tolerance",
            "0.2",
            "--seed",
            "3",
        ]
    )
    printed = capsys.readouterr().out
    assert str(res) == repr(res) == res.to_text()
    # the same text, each option named as the interface spells it, then where to read on
    assert printed.replace("--min-trials 30", "min_trials=30").startswith(str(res) + "\n\n")
    assert str(res).splitlines()[0].startswith("Fairness audit of tpr, fpr over g")
    # the summary, not the 20-odd columns of the groups table
    assert "adaptive_lower" not in str(res) and max(map(len, str(res).splitlines())) <= 100
