"""Tests of ``bayeseval.cli.main``."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import matplotlib
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score, precision_score, recall_score
from statsmodels.stats.proportion import proportion_confint

from bayeseval import __version__, evaluate, plan, proportion_ci, tabulate
from bayeseval._kernels.binomial import STRATA_METHODS
from bayeseval.cli import main as cli
from bayeseval.cli import plan as cli_plan
from bayeseval.cli.main import main as main_audit_report
from bayeseval.fairness import audit
from bayeseval.report.report import _WRITERS
from tests.helpers import (
    ALLOCATE,
    APART,
    DATA,
    REPORT_LIST,
    ROOT_hardening_report_cli,
    _close_figures,  # noqa: F401
    _flat,
    _one_line_error,
    _rows_audit_report,
    _saved_audit,
    run_cli,
)

matplotlib.use("Agg")


@pytest.fixture
def labelled_csv(tmp_path):
    df = pd.DataFrame(
        {
            "y": [1] * 40 + [0] * 40 + [1] * 400 + [0] * 400,
            "p": [1] * 30 + [0] * 10 + [0] * 40 + [1] * 380 + [0] * 20 + [0] * 400,
            "g": ["small"] * 80 + ["big"] * 800,
        }
    )
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    return path


def _digest(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def csv_path(tmp_path):
    rng = np.random.default_rng(4)
    sizes = {"a": 40, "b": 60, "c": 50, "d": 30, "e": 80, "f": 25}
    groups = np.repeat(list(sizes), list(sizes.values()))
    pred = (rng.random(groups.size) > 0.1).astype(int)
    pred[groups == "f"] = (rng.random(25) > 0.5).astype(int)  # an outlying stratum
    path = tmp_path / "preds.csv"
    pd.DataFrame({"g": groups, "y": 1, "p": pred}).to_csv(path, index=False)
    return path, groups, pred


def _wilson_halfwidth(rate, n):
    lo, hi = proportion_confint(rate * n, n, alpha=0.05, method="wilson")
    return (hi - lo) / 2


def _parsers(parser, prog=()):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for sub in action.choices.values():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from _parsers(sub)


@pytest.fixture
def preds(tmp_path):
    df = pd.DataFrame({"y": [1, 0] * 60, "p": [1, 0, 0, 0] * 30, "g": ["a"] * 60 + ["b"] * 60})
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    return path


def _recall_reference(df, truth, pred, positive):
    pos = df[df[truth] == positive]
    return {g: (int((sub[pred] == positive).sum()), len(sub)) for g, sub in pos.groupby("g")}


def _run(*argv):
    return subprocess.run(
        [sys.executable, "-m", "bayeseval", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT_hardening_report_cli,
    )


def _all_parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_parsers(sub)


def test_report_command_adds_the_audit(tmp_path, capsys):
    path = tmp_path / "p.csv"
    _rows_audit_report(APART).to_csv(path, index=False)
    out = tmp_path / "r.html"
    code = main_audit_report(
        [
            "report",
            str(path),
            "--y-true",
            "y",
            "--y-pred",
            "p",
            "--strata",
            "race",
            "--groups",
            "race,sex",
            "--tolerance",
            "0.1",
            "--out",
            str(out),
            "--json",
        ]
    )
    got = json.loads(capsys.readouterr().out)
    assert code == 0 and got["audit"]["model"] == "crossed"
    assert "<h3>Fairness audit</h3>" in out.read_text()
    assert main_audit_report(["report", str(path), "--y-true", "y", "--y-pred", "p", "--groups", "nope"]) == 2
    assert "--groups column 'nope' is not in" in capsys.readouterr().err


def test_audit_command_out_never_replaces_its_data_or_a_file_without_force(tmp_path, capsys):

    df, _ = _saved_audit()
    data = tmp_path / "preds.csv"
    df.to_csv(data, index=False)
    args = ["audit", str(data), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--metrics", "tpr"]
    before = data.read_bytes()
    assert main_audit_report([*args, "--out", str(data), "--force"]) == 2
    assert data.read_bytes() == before and "data" in capsys.readouterr().err
    out = tmp_path / "audit.html"
    out.write_text("mine")
    assert main_audit_report([*args, "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and out.read_text() == "mine"
    assert main_audit_report([*args, "--out", str(out), "--force"]) == 0
    assert "Fairness audit" in out.read_text() and str(out) in capsys.readouterr().out
    assert main_audit_report([*args, "--out", str(tmp_path / "a.pdf")]) == 2


def test_plan_json_matches_the_library_and_spec(capsys):
    assert (
        main_audit_report(
            ["plan", "--halfwidth", "0.05", "--rate", "0.7", "--groups", "8", "--share", "0.004", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["n_per_stratum"] == plan.sample_size(halfwidth=0.05, rate=0.7) == 323
    assert out["minority_rows"] == 2584  # 8 regions x 323
    assert abs(out["total_rows"] - 646_000) <= 1_000  # about 646,000 rows


def test_bad_input_exits_2_with_one_line_reason(capsys):
    assert main_audit_report(["plan", "--halfwidth", "1.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bayeseval: error:") and "--halfwidth" in err and "1.5" in err
    assert len(err.splitlines()) == 1


def test_no_command_prints_help_and_exits_2(capsys):
    assert main_audit_report([]) == 2
    assert "usage" in capsys.readouterr().out


def test_gate_exit_code_and_failing_table(labelled_csv, capsys):
    args = ["gate", str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--metric", "recall"]
    assert main_audit_report(args + ["--min-trials", "100", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    failing = {row["g"] for row in out["strata"] if not row["passed"]}
    assert failing == {"small"}  # 40 true positives < 100
    assert main_audit_report(args + ["--min-trials", "30"]) == 0
    assert "PASSED" in capsys.readouterr().out


def test_missing_file_is_a_one_line_error(tmp_path, capsys):
    code = main_audit_report(
        ["gate", str(tmp_path / "nope.csv"), "--y-true", "y", "--y-pred", "p", "--min-trials", "5"]
    )
    assert code == 2
    assert "file not found" in capsys.readouterr().err


def test_report_out_never_onto_its_data_and_never_over_a_file_without_force(labelled_csv, tmp_path, capsys):
    args = ["report", str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--strata", "g"]
    data = _digest(labelled_csv)
    for extra in ([], ["--force"]):
        assert main_audit_report([*args, "--out", str(labelled_csv), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "is the data file itself" in err
    assert _digest(labelled_csv) == data
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("keep me\n")
    assert main_audit_report([*args, "--out", str(earlier)]) == 2
    assert "--force" in capsys.readouterr().err and earlier.read_text() == "keep me\n"
    assert main_audit_report([*args, "--out", str(earlier), "--force"]) == 0
    table = pd.read_csv(earlier).set_index("g")
    # hand count: small has 10 errors in 80 rows (10 missed positives); big 20 in 800
    assert table.loc["small", ["successes", "trials"]].tolist() == [10, 80]
    assert table.loc["big", ["successes", "trials"]].tolist() == [20, 800]
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".writing-")]


def test_report_out_failing_mid_write_leaves_the_file_as_it_was(labelled_csv, tmp_path, capsys, monkeypatch):
    import errno

    from bayeseval.report.report import Report

    def full_disk(self, path, **kwargs):
        Path(path).write_text("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Report, "save", full_disk)
    target = tmp_path / "r.md"
    target.write_text("earlier report\n")
    args = ["report", str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--out", str(target), "--force"]
    assert main_audit_report(args) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert target.read_text() == "earlier report\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["preds.csv", "r.md"]


def test_demo_does_not_overwrite_a_folder_that_holds_files_without_force(tmp_path, capsys):
    (tmp_path / "report.html").write_text("mine")
    assert main_audit_report(["demo", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--force" in err
    assert (tmp_path / "report.html").read_text() == "mine"


# the subject: the command prints the EmptyStratumWarning as one stderr line
@pytest.mark.filterwarnings("always::bayeseval.EmptyStratumWarning")
def test_both_command_lines_print_a_package_warning_as_one_line(tmp_path, capsys):
    import warnings

    # a stratum without positives has no recall: EmptyStratumWarning, shown as one line
    df = pd.DataFrame({"y": [0] * 40 + [1] * 50 + [0] * 50, "p": [1] * 20 + [0] * 120, "g": ["a"] * 40 + ["b"] * 100})
    df.to_csv(tmp_path / "p.csv", index=False)
    hook = warnings.showwarning
    args = [
        "gate",
        str(tmp_path / "p.csv"),
        "--y-true",
        "y",
        "--y-pred",
        "p",
        "--strata",
        "g",
        "--metric",
        "recall",
        "--min-trials",
        "5",
    ]
    main_audit_report(args)
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert err == ["warning: 1 strata have no trials for recall and no rate: ['a']"]
    assert warnings.showwarning is hook


@pytest.mark.parametrize("command", ["report", "gate", "audit"])
def test_a_score_column_read_from_a_file_is_a_one_line_error(command, tmp_path, capsys):
    df = pd.DataFrame({"y": [0, 1] * 20, "score": [0.25, 0.75] * 20, "g": ["a"] * 20 + ["b"] * 20})
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    extra = {"report": [], "gate": ["--min-trials", "5"], "audit": ["--groups", "g"]}[command]
    code = main_audit_report(
        [command, str(path), "--y-true", "y", "--y-pred", "score", "--strata", "g", *extra]
        if command != "audit"
        else [command, str(path), "--y-true", "y", "--y-pred", "score", *extra]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "y_pred column 'score' holds the fractional value 0.25" in err


def test_guarantee_flag_of_report_and_gate(labelled_csv, capsys):
    from bayeseval._kernels.binomial import GUARANTEES
    from bayeseval.cli import main as cli

    assert cli.GUARANTEES == GUARANTEES
    data = [str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--json"]
    assert main_audit_report(["report", *data]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "stratum" and "read" not in out["strata"][0]
    assert main_audit_report(["report", *data, "--guarantee", "average"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "average" and out["strata"][0]["read"] in ("pooled", "adaptive")
    assert main_audit_report(["gate", *data, "--max-halfwidth", "0.5"]) == 0
    assert {r["method"] for r in json.loads(capsys.readouterr().out)["strata"]} == {"adaptive"}
    assert main_audit_report(["gate", *data, "--max-halfwidth", "0.5", "--method", "wilson"]) == 2
    err = capsys.readouterr().err
    assert "method 'wilson' does not cover every stratum" in err and "guarantee" in err
    assert (
        main_audit_report(["gate", *data, "--max-halfwidth", "0.5", "--method", "wilson", "--guarantee", "average"])
        == 0
    )
    assert {r["method"] for r in json.loads(capsys.readouterr().out)["strata"]} == {"wilson"}
    assert main_audit_report(["report", *data, "--guarantee", "each"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--guarantee" in err and "'each'" in err and len(err.splitlines()) == 1


def test_gate_methods_of_the_parser_are_the_strata_methods() -> None:
    assert cli.STRATA_METHODS == STRATA_METHODS


def test_gate_adaptive_on_the_command_line_matches_proportion_ci(csv_path, capsys) -> None:
    path, groups, pred = csv_path
    code = cli.main(
        [
            "gate",
            str(path),
            "--y-true",
            "y",
            "--y-pred",
            "p",
            "--strata",
            "g",
            "--metric",
            "recall",
            "--max-halfwidth",
            "0.12",
            "--method",
            "adaptive",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    keys = sorted(set(groups))
    s = np.array([pred[groups == k].sum() for k in keys])
    n = np.array([(groups == k).sum() for k in keys])
    lo, hi = proportion_ci(s, n, method="adaptive")
    rows = {r["g"]: r for r in out["strata"]}
    np.testing.assert_allclose([rows[k]["lower"] for k in keys], lo, rtol=0, atol=1e-9)  # JSON carries 10 digits
    np.testing.assert_allclose([rows[k]["upper"] for k in keys], hi, rtol=0, atol=1e-9)  # JSON carries 10 digits
    failing = (hi - lo) / 2 > 0.12
    assert code == (1 if failing.any() else 0)
    assert [not rows[k]["passed"] for k in keys] == failing.tolist()


def test_gate_rejects_an_unknown_method_naming_it(csv_path, capsys) -> None:
    path, _, _ = csv_path
    code = cli.main(
        [
            "gate",
            str(path),
            "--y-true",
            "y",
            "--y-pred",
            "p",
            "--strata",
            "g",
            "--max-halfwidth",
            "0.1",
            "--method",
            "fab",
        ]
    )
    assert code == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--method" in err and "'fab'" in err


def test_plan_warns_near_the_edge_and_offers_the_wilson_size(capsys):
    assert main_audit_report(["plan", "--halfwidth", "0.03", "--rate", "0.03"]) == 0
    out = capsys.readouterr().out
    # hand computation: z^2 r (1 - r) / e^2 = 1.959964^2 * 0.0291 / 0.0009 = 124.2 -> 125
    z = 1.959963984540054
    assert math.ceil(z * z * 0.03 * 0.97 / 0.03**2) == 125
    assert "trials needed per stratum: 125" in out
    # the Wilson search: the smallest n whose Wilson half-width at rate 0.03 is <= 0.03 (statsmodels)
    assert _wilson_halfwidth(0.03, 144) > 0.03 >= _wilson_halfwidth(0.03, 145)
    assert _wilson_halfwidth(0.03, 125) > 0.03
    assert "planning rate: 0.03 (from --rate)" in out
    assert "warning:" in out and "Wilson search needs 145" in out and "--method wilson" in out
    assert main_audit_report(["plan", "--halfwidth", "0.03", "--rate", "0.03", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["n_per_stratum"], d["wilson_n_per_stratum"], d["assumed_rate"]) == (125, 145, 0.03)


def test_plan_states_the_assumed_rate_and_is_quiet_in_the_middle(capsys):
    assert main_audit_report(["plan", "--halfwidth", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "trials needed per stratum: 385" in out  # 1.96^2 / 4 / 0.05^2 = 384.1 -> 385
    assert "planning rate: 0.5 (assumed: no --rate given" in out and "warning" not in out
    assert _wilson_halfwidth(0.5, 385) <= 0.05  # the normal size is enough for Wilson here
    assert main_audit_report(["plan", "--halfwidth", "0.05", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["assumed_rate"] == 0.5 and d["rate"] is None and "warning" not in d


def test_plan_without_a_target_names_the_options(capsys):
    assert main_audit_report(["plan"]) == 2
    err = capsys.readouterr().err
    assert "--halfwidth" in err and "--se" in err and len(err.strip().splitlines()) == 1


def test_plan_allocate_is_neyman_allocation(capsys):
    args = [
        "plan",
        "allocate",
        "--budget",
        "400",
        "--weights",
        '{"a": 0.7, "b": 0.3}',
        "--rates",
        '{"a": 0.1, "b": 0.4}',
        "--json",
    ]
    assert main_audit_report(args) == 0
    d = json.loads(capsys.readouterr().out)
    # n_k proportional to pi_k sqrt(r_k (1 - r_k)): 0.7 * 0.3 = 0.21, 0.3 * sqrt(0.24) = 0.1470
    share_a = 0.21 / (0.21 + 0.3 * math.sqrt(0.24))
    assert d["allocation"] == {"a": round(400 * share_a), "b": 400 - round(400 * share_a)}
    assert d["allocation"] == {"a": 235, "b": 165}
    assert main_audit_report(args[:-1]) == 0
    out = capsys.readouterr().out
    assert "a        235" in out and "b        165" in out


def test_plan_allocate_refuses_rates_keyed_unlike_weights(capsys):
    assert (
        main_audit_report(
            [
                "plan",
                "allocate",
                "--budget",
                "10",
                "--weights",
                '{"a": 0.5, "b": 0.5}',
                "--rates",
                '{"a": 0.1, "c": 0.4}',
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--rates keys ['a', 'c']" in err and "['a', 'b']" in err
    assert main_audit_report(["plan", "allocate", "--budget", "10", "--weights", '{"a": 1}', "--rates", "oops"]) == 2
    assert "--rates" in capsys.readouterr().err


def test_plan_split_follows_the_decision_rule(capsys):
    base = [
        "plan",
        "split",
        "--n-total",
        "300000",
        "--n-test",
        "60000",
        "--share",
        "0.0042",
        "--n-min",
        "323",
        "--json",
    ]
    assert main_audit_report(base) == 0
    d = json.loads(capsys.readouterr().out)
    # 0.0042 * 60,000 = 252 < 323 minority rows: grow the test set to ceil(323 / 0.0042) rows,
    # 25.6% of the data, under the 30% cap
    assert d["n_minority_proportional"] == 252
    assert d["branch"] == "grow_test" and d["n_test"] == math.ceil(323 / 0.0042) == 76905
    assert main_audit_report(base + ["--groups", "8"]) == 0
    d = json.loads(capsys.readouterr().out)
    # 8 x 323 = 2,584 minority rows requested, but only 0.0042 * 300,000 = 1,260 exist
    assert d["n_min_total"] == 2584 and d["n_minority_available"] == 1260
    assert d["branch"] == "degraded"
    assert main_audit_report(base[:-1]) == 0
    assert "decision: grow_test" in capsys.readouterr().out
    for alias in ("split-decision", "split_decision"):
        assert main_audit_report(["plan", alias, *base[2:]]) == 0
        assert json.loads(capsys.readouterr().out)["branch"] == "grow_test"


def test_every_result_command_outside_campaign_has_json():
    parser = cli.build_parser(campaign=False)
    progs = {p.prog: p for p in _parsers(parser)}
    for prog in (
        "bayeseval demo",
        "bayeseval plan",
        "bayeseval plan allocate",
        "bayeseval plan split",
        "bayeseval report",
        "bayeseval gate",
    ):
        assert any("--json" in a.option_strings for a in progs[prog]._actions), prog


def test_version_flag(capsys):
    assert main_audit_report(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bayeseval {__version__}"


def test_report_out_suffixes_are_the_report_writers():
    assert set(cli._REPORT_SUFFIXES) == set(_WRITERS)


@pytest.mark.parametrize("suffix", [".csv", ".json", ".tex", ".md", ".html"])
def test_report_out_writes_every_format(preds, tmp_path, suffix, capsys):
    out = tmp_path / f"r{suffix}"
    assert (
        main_audit_report(
            ["report", str(preds), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--out", str(out), "--json"]
        )
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    # reference: errors per group counted with pandas
    df = pd.read_csv(preds)
    errors = (df["y"] != df["p"]).groupby(df["g"]).sum().tolist()
    assert [r["successes"] for r in d["strata"]] == errors
    text = out.read_text()
    if suffix == ".csv":
        assert pd.read_csv(out)["successes"].tolist() == errors
    elif suffix == ".json":
        assert [r["successes"] for r in json.loads(text)["strata"]] == errors
    else:
        assert str(preds) in text.replace("\\_", "_")  # the header names the data file


def test_plan_outputs_match_closed_forms_computed_here():
    # normal formula n = ceil(z^2 r (1 - r) / e^2) with z from the standard library
    z = NormalDist().inv_cdf(0.975)
    sized = json.loads(run_cli("plan", "--halfwidth", "0.05", "--rate", "0.7", "--json")["out"])
    assert sized["n_per_stratum"] == math.ceil(z * z * 0.7 * 0.3 / 0.05**2) == 323
    # Neyman allocation without bounds: n_k proportional to w_k sqrt(r_k (1 - r_k))
    alloc = json.loads(run_cli(*ALLOCATE)["out"])["allocation"]
    share = 0.7 * math.sqrt(0.1 * 0.9) / (0.7 * math.sqrt(0.09) + 0.3 * math.sqrt(0.4 * 0.6))
    assert alloc["a"] == round(400 * share) and alloc["a"] + alloc["b"] == 400


def test_an_alias_counts_its_metric_and_is_echoed_as_written(preds_core_metric_names, capsys):
    df, path = preds_core_metric_names
    for alias, ref in (
        ("tpr", recall_score(df["y"], df["p"])),
        ("Sensitivity", recall_score(df["y"], df["p"])),
        ("tnr", recall_score(df["y"], df["p"], pos_label=0)),
        ("ppv", precision_score(df["y"], df["p"])),
    ):
        counts = tabulate(df, y_true="y", y_pred="p", metric=alias)
        assert counts.total_successes / counts.total_trials == pytest.approx(ref, rel=1e-12)
        rep = evaluate(df, y_true="y", y_pred="p", strata="g", metric=alias, random_seed=0)
        assert rep.metric == alias and rep.to_dict()["metric"] == alias
    assert (
        main_audit_report(
            ["report", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--metric", "tpr", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "tpr"
    assert main_audit_report(["report", str(path), "--y-true", "y", "--y-pred", "p", "--metric", "tpr"]) == 0
    text = capsys.readouterr().out
    assert "report: tpr" in text and "recall" not in text


def test_balanced_accuracy_is_audit_only_and_the_refusal_says_why(preds_core_metric_names, capsys):
    df, path = preds_core_metric_names
    with pytest.raises(ValueError, match=r"mean of recall \(tpr\) and specificity \(tnr\)") as err:
        evaluate(df, y_true="y", y_pred="p", metric="balanced_accuracy")
    assert str(err.value).endswith(f"Valid choices here are {REPORT_LIST}")
    assert (
        main_audit_report(["report", str(path), "--y-true", "y", "--y-pred", "p", "--metric", "balanced-accuracy"]) == 2
    )
    assert "bayeseval audit --metrics balanced_accuracy" in _flat(capsys.readouterr().err)
    res = audit(df.assign(g="all"), y_true="y", y_pred="p", groups="g", metrics="balanced_accuracy")
    rate = res.groups.loc[res.groups["metric"] == "balanced_accuracy", "rate"].iloc[0]
    assert rate == pytest.approx(balanced_accuracy_score(df["y"], df["p"]), rel=1e-12)


@pytest.mark.slow
def test_demo_campaign_rule_beats_proportional_and_pooling_keeps_small_groups_sane(demo_summary):
    summary, _ = demo_summary
    labels = {row["rule"]: row["labels_mean"] for row in summary["campaign"]}
    assert labels["expected_width"] < labels["proportional"]
    pooled = {row["race"]: row for row in summary["compas"]["pooled"]}
    # the 8 Native American defendants: pooled interval is narrower than the raw range [0, 1]
    small = pooled["Native American"]
    assert small["trials"] < 30
    assert 0 < small["lower"] < small["mean"] < small["upper"] < 1


@pytest.mark.slow
def test_demo_writes_an_html_report_with_plots(demo_summary):
    summary, out = demo_summary
    html = (out / "report.html").read_text()
    assert "German credit" in html and "COMPAS" in html
    assert html.count("data:image/png;base64,") >= 3
    assert (out / "german_credit.md").exists()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["plan", "--halfwidth", "1e-300"], ["--halfwidth", "1e-300"]),
        (["plan", "--se", "1e-300"], ["--se", "1e-300"]),
        (["plan", "--halfwidth", "1e-10"], ["--halfwidth", "1e-10", "2**53"]),
        (["plan", "--halfwidth", "0.05", "--groups", "-3", "--share", "0.1"], ["--groups", "-3"]),
        (["plan", "--halfwidth", "0.05", "--groups", "0"], ["--groups", "'0'"]),
        (["plan", "--halfwidth", "0.05", "--groups", "2.5"], ["--groups", "2.5"]),
        (["plan", "--halfwidth", "0.05", "--share", "0"], ["--share", "'0'"]),
        (["plan", "--halfwidth", "0.05", "--share", "1.5"], ["--share", "1.5"]),
        (["plan", "--halfwidth", "0.05", "--share", "1e-300"], ["--share", "1e-300"]),
        (["plan", "--halfwidth", "0.05", "--rate", "2"], ["--rate", "'2'"]),
        (["plan", "--halfwidth", "nan"], ["--halfwidth", "nan"]),
        (["plan", "--halfwidth", "0.05", "--level", "1"], ["--level", "'1'"]),
        (["plan", "--halfwidth", "0.05", "--method", "nope"], ["--method", "'nope'"]),
        (["plan", "--halfwidth", "0.05", "--se", "0.1"], ["--se", "--halfwidth"]),
        (["plan"], ["--halfwidth", "--se"]),
        (["nope"], ["nope"]),
        (["plan", "--halfwidth", "0.05", "--bogus"], ["--bogus"]),
    ],
)
def test_plan_and_usage_errors_are_one_line(capsys, argv, words):
    _, out = _one_line_error(capsys, argv, *words)
    assert out == ""  # in particular no "-11,550 rows"


def test_weights_that_miss_a_stratum_are_one_line(files, capsys):
    _, tmp = files
    _one_line_error(
        capsys, ["report", str(tmp / "preds.csv"), *DATA, "--weights", '{"a": 0.5, "b": 0.5}'], "weights", "'c'"
    )


@pytest.mark.parametrize(
    "name, words",
    [
        ("missing.csv", ["data", "file not found", "missing.csv"]),
        ("empty.csv", ["data", "empty.csv", "empty"]),
        ("header.csv", ["header.csv", "no rows"]),
        ("garbled.csv", ["garbled.csv", "could not be read as CSV"]),
        ("binary.csv", ["binary.csv", "could not be read as CSV"]),
        ("garbled.parquet", ["garbled.parquet", "could not be read as Parquet"]),
        ("preds.xlsx", ["preds.xlsx", "unsupported file type"]),
        ("adir", ["adir", "folder"]),
    ],
)
@pytest.mark.parametrize("command", ["report", "gate"])
def test_bad_files_are_one_line_errors_naming_the_file(files, capsys, name, words, command):
    _, tmp = files
    criterion = ["--min-trials", "5"] if command == "gate" else []
    _one_line_error(capsys, [command, str(tmp / name), "--y-true", "y", "--y-pred", "p", *criterion], *words)


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--y-pred", "nope"], ["--y-pred", "'nope'"]),
        (["--strata", "g,nope"], ["--strata", "'nope'"]),
    ],
)
def test_unknown_columns_name_the_option(files, capsys, extra, words):
    _, tmp = files
    argv = ["report", str(tmp / "preds.csv"), "--y-true", "y", "--y-pred", "p", *extra]
    _one_line_error(capsys, argv, *words)


@pytest.mark.parametrize(
    "extra, words",
    [
        ([], ["--min-trials", "--max-halfwidth"]),
        (["--min-trials", "0"], ["--min-trials", "'0'"]),
        (["--max-halfwidth", "1.5"], ["--max-halfwidth", "1.5"]),
        (["--max-halfwidth", "0.1", "--method", "nope"], ["--method", "'nope'"]),
        (["--min-trials", "5", "--metric", "recall", "--pos-label", "maybe"], ["--pos-label"]),
    ],
)
def test_gate_errors_are_one_line_with_exit_2_not_1(files, capsys, extra, words):
    _, tmp = files
    _one_line_error(capsys, ["gate", str(tmp / "preds.csv"), *DATA, *extra], *words)


def test_demo_out_must_not_be_a_file(files, capsys):
    _, tmp = files
    _one_line_error(capsys, ["demo", "--out", str(tmp / "a_file")], "--out", "a_file")
    _one_line_error(capsys, ["demo", "--seed", "-1"], "--seed", "-1")


def test_main_lets_a_bug_show_its_traceback(monkeypatch):
    def buggy(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_plan, "_cmd_plan", buggy)
    with pytest.raises(RuntimeError, match="a bug"):
        main_audit_report(["plan", "--halfwidth", "0.05"])


@pytest.mark.parametrize(
    "truth, pred, label, positive",
    [("ys", "ps", "yes", "yes"), ("ys", "ps", "no", "no"), ("y", "p", "0", 0), ("yb", "pb", "false", False)],
)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_pos_label_reaches_tabulate_in_report_and_gate(files, capsys, truth, pred, label, positive, fmt):
    df, tmp = files
    path = str(tmp / f"preds.{fmt}")
    expected = _recall_reference(df, truth, pred, positive)
    args = [
        path,
        "--y-true",
        truth,
        "--y-pred",
        pred,
        "--strata",
        "g",
        "--metric",
        "recall",
        "--pos-label",
        label,
        "--json",
    ]
    assert main_audit_report(["report", *args]) == 0
    got = {s["stratum"]: (s["successes"], s["trials"]) for s in json.loads(capsys.readouterr().out)["strata"]}
    assert got == expected
    assert main_audit_report(["gate", *args, "--min-trials", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)["strata"]
    assert {r["g"]: (r["successes"], r["trials"]) for r in rows} == expected


@pytest.mark.parametrize("command", ["report", "gate"])
@pytest.mark.parametrize("metric", ["recall", "precision", "fpr"])
def test_two_string_labels_with_a_class_metric_need_pos_label(files, capsys, command, metric):
    _, tmp = files
    argv = [
        command,
        str(tmp / "preds.csv"),
        "--y-true",
        "ys",
        "--y-pred",
        "ps",
        "--strata",
        "g",
        "--metric",
        metric,
        "--min-trials",
        "5",
    ][: None if command == "gate" else -2]
    _one_line_error(capsys, argv, "--pos-label", "'no'", "'yes'")


def test_string_labels_with_error_rate_need_no_pos_label(files, capsys):
    df, tmp = files
    argv = ["report", str(tmp / "preds.csv"), "--y-true", "ys", "--y-pred", "ps", "--strata", "g", "--json"]
    assert main_audit_report(argv) == 0
    strata = json.loads(capsys.readouterr().out)["strata"]
    ref = df.assign(err=df["ys"] != df["ps"]).groupby("g")["err"].agg(["sum", "size"])
    assert {s["stratum"]: (s["successes"], s["trials"]) for s in strata} == {
        g: (int(r["sum"]), int(r["size"])) for g, r in ref.iterrows()
    }


def test_weights_keys_follow_the_strata_column_type(files, capsys):
    df, tmp = files
    argv = [
        "report",
        str(tmp / "preds.csv"),
        "--y-true",
        "y",
        "--y-pred",
        "p",
        "--strata",
        "k",
        "--weights",
        '{"1": 0.25, "2": 0.75}',
        "--json",
    ]
    assert main_audit_report(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rate = df.assign(err=df["y"] != df["p"]).groupby("k")["err"].mean()
    assert out["overall"]["reweighted"]["estimate"] == pytest.approx(0.25 * rate[1] + 0.75 * rate[2])
    # several strata columns: labels joined by " | "
    shares = {f"{g} | {k}": 1 / 6 for g in "abc" for k in (1, 2)}
    argv = [
        "report",
        str(tmp / "preds.csv"),
        "--y-true",
        "y",
        "--y-pred",
        "p",
        "--strata",
        "g,k",
        "--weights",
        json.dumps(shares),
        "--json",
    ]
    assert main_audit_report(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rate = df.assign(err=df["y"] != df["p"]).groupby(["g", "k"])["err"].mean()
    assert out["overall"]["reweighted"]["estimate"] == pytest.approx(rate.mean())


def test_report_out_writes_the_file(files, capsys):
    _, tmp = files
    target = tmp / "r.md"
    assert main_audit_report(["report", str(tmp / "preds.csv"), *DATA, "--out", str(target)]) == 0
    assert "report written to" in capsys.readouterr().out
    assert target.read_text().startswith("# bayeseval report: error_rate")


def test_version(capsys):
    assert main_audit_report(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bayeseval {importlib.metadata.version('bayeseval')}"


def test_help_exits_0(capsys):
    assert main_audit_report(["report", "--help"]) == 0
    assert "--pos-label" in capsys.readouterr().out


def test_subprocess_report_bad_seed_exits_2_with_one_line(files):
    _, tmp = files
    proc = _run("report", str(tmp / "preds.csv"), *DATA, "--seed", "-1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and "--seed" in proc.stderr


def test_subprocess_plan_negative_groups_exits_2_with_one_line():
    proc = _run("plan", "--halfwidth", "0.05", "--groups", "-3", "--share", "0.1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "bayeseval: error: argument --groups: must be an integer >= 1 "
        "and <= 2**53, got '-3' (see 'bayeseval plan --help')"
    ]


def test_help_never_shows_a_none_default_nor_two_defaults():
    parsers = list(_all_parsers(cli.build_parser()))
    assert len(parsers) > 8  # every command and the campaign sub-commands
    for parser in parsers:
        text = parser.format_help()
        assert "(default: None)" not in text, parser.prog
        assert "(default: False)" not in text, parser.prog
        for action in parser._actions:
            if action.help and action.option_strings:
                rendered = parser._get_formatter()._expand_help(action)
                # a default is stated once: "(default: X)" or "default X" in the text, not both
                stated = rendered.lower().count("(default:") + rendered.lower().count("default ")
                assert stated <= 1, (parser.prog, rendered)
    plan = cli.build_parser().parse_args(["plan", "--halfwidth", "0.1"])
    assert plan.rate is None  # the rate's default is stated once, in words
    level_help = [a for a in parsers[2]._actions if "--level" in a.option_strings][0]
    assert "(default: 0.95)" in parsers[2]._get_formatter()._expand_help(level_help)


def test_gate_methods_of_the_parser_are_proportion_cis():
    from bayeseval.estimate.intervals import PROPORTION_METHODS

    assert cli.PROPORTION_METHODS == PROPORTION_METHODS
