"""Hardening of evaluate/Report and the main command line.

Classes covered: evaluate refuses every bad argument before any work (no fallback, no
swallowed errors); the Markdown output escapes user text; every CLI error is one line on
stderr with exit 2; --pos-label reaches tabulate.
"""

import ast
import importlib.metadata
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

import bayeseval
from bayeseval import Counts
from bayeseval._render.report_page import display_table
from bayeseval.cli import plan as cli_plan
from bayeseval.cli.main import main
from bayeseval.counts.metrics import Metric
from bayeseval.demo import run_demo
from bayeseval.report import Finding, evaluate, pipeline, sections

ROOT = Path(bayeseval.__file__).resolve().parent.parent


# -- evaluate: every argument checked before any work ------------------------------------------
def _rows() -> pd.DataFrame:
    return pd.DataFrame({"y": [1, 0, 1, 1] * 10, "p": [1, 0, 0, 1] * 10, "g": ["a", "b"] * 20})


COUNTS = Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"])

BAD_EVALUATE = [
    ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
    ({"random_seed": 1.5}, TypeError, ["random_seed", "1.5"]),
    ({"random_seed": "7"}, TypeError, ["random_seed", "'7'"]),
    ({"level": 1.2}, ValueError, ["level", "1.2"]),
    ({"level": "0.9"}, TypeError, ["level", "'0.9'"]),
    ({"metric": "nope"}, ValueError, ["metric", "'nope'"]),
    ({"metric": 3}, TypeError, ["metric", "3"]),
    ({"engine": "stan"}, ValueError, ["engine", "'stan'"]),
    ({"model": "nope"}, ValueError, ["model", "'nope'"]),
    ({"model": "logit_normal"}, ValueError, ["model", "'logit_normal'", "pymc"]),
    ({"prior": "nope"}, ValueError, ["prior", "'nope'"]),
    ({"weights": {"a": 0.7, "b": 0.7}}, ValueError, ["weights", "1.4"]),
    ({"weights": [0.5, float("nan"), 0.5]}, ValueError, ["weights", "nan"]),
    ({"weights": "ab"}, TypeError, ["weights", "'ab'"]),
    ({"target_halfwidth": 0.7}, ValueError, ["target_halfwidth", "0.7"]),
    ({"target_halfwidth": "0.1"}, TypeError, ["target_halfwidth", "'0.1'"]),
]


@pytest.mark.parametrize("kwargs, exc, words", BAD_EVALUATE)
def test_evaluate_refuses_bad_arguments_on_rows_before_tabulating(monkeypatch, kwargs, exc, words):
    calls = []
    monkeypatch.setattr(sections, "tabulate", lambda *a, **k: calls.append(1))
    with pytest.raises(exc) as info:
        evaluate(_rows(), y_true="y", y_pred="p", strata="g", **kwargs)
    for word in words:
        assert word in str(info.value)
    assert calls == []  # refused before any work


@pytest.mark.parametrize("kwargs, exc, words", BAD_EVALUATE)
def test_evaluate_refuses_bad_arguments_on_counts_before_fitting(monkeypatch, kwargs, exc, words):
    import bayeseval.models

    def no_fit(*a, **k):
        raise AssertionError("the model was fitted before the arguments were checked")

    monkeypatch.setattr(bayeseval.models, "fit_hierarchical", no_fit)
    with pytest.raises(exc) as info:
        evaluate(COUNTS, **kwargs)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"strata": "g"}, ["strata", "'g'"]),
        ({"y_true": "y", "y_pred": "p"}, ["y_true", "'y'"]),
        ({"pos_label": 1}, ["pos_label"]),
    ],
)
def test_row_arguments_with_counts_are_refused(kwargs, words):
    with pytest.raises(TypeError) as info:
        evaluate(COUNTS, **kwargs)
    for word in words:
        assert word in str(info.value)


def test_rows_need_column_names_and_strata_of_the_right_type():
    with pytest.raises(TypeError, match=r"y_pred=None"):
        evaluate(_rows(), y_true="y")
    with pytest.raises(TypeError, match=r"strata must be .*got 5"):
        evaluate(_rows(), y_true="y", y_pred="p", strata=5)


def test_a_failing_model_or_check_surfaces_instead_of_a_silent_fallback(monkeypatch):
    assert not hasattr(sections, "_ppc_fallback")

    def broken(*a, **k):
        raise RuntimeError("broken check")

    monkeypatch.setattr(sections, "posterior_predictive_check", broken)
    with pytest.raises(RuntimeError, match="broken check"):
        evaluate(COUNTS, random_seed=0)
    monkeypatch.undo()
    monkeypatch.setattr(sections, "fit_hierarchical", broken)
    with pytest.raises(RuntimeError, match="broken check"):
        evaluate(COUNTS, random_seed=0)


def test_a_failing_plot_surfaces_in_to_html(monkeypatch):
    import bayeseval.plots

    rep = evaluate(COUNTS, random_seed=0)

    def broken(*a, **k):
        raise RuntimeError("broken plot")

    monkeypatch.setattr(bayeseval.plots, "forest", broken)
    with pytest.raises(RuntimeError, match="broken plot"):
        rep.to_html(plot=True)
    assert "<img" not in rep.to_html(plot=False)


@pytest.mark.parametrize("module", ["report/report.py", "report/pipeline.py", "report/sections.py", "report/findings.py", "report/arguments.py", "cli/main.py", "report/gates.py", "demo.py"])
def test_no_broad_except_in_the_module(module):
    tree = ast.parse((ROOT / "bayeseval" / module).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler):
            names = [n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)] if node.type else []
            assert node.type is not None, f"bare except at line {node.lineno}"
            assert not {"Exception", "BaseException"} & set(names), f"broad except at line {node.lineno}"


def test_findings_are_data_and_drive_warnings_and_flags():
    # a: rate 0; b: ordinary; c: empty; d: rate 1
    s, n = [0, 7, 0, 12], [60, 80, 0, 12]
    rep = evaluate(Counts.from_arrays(s, n, strata=list("abcd")), random_seed=0)
    assert all(isinstance(f, Finding) for f in rep.findings)
    assert rep.warnings == [f.message for f in rep.findings if f.severity == "warning"]
    assert rep.notes == [f.message for f in rep.findings if f.severity == "note"]
    by_flag = {f.flag: f.strata for f in rep.findings}
    # independent reference: the counts themselves
    assert by_flag["empty"] == tuple(k for k, nk in zip("abcd", n, strict=True) if nk == 0)
    rate0 = {f.strata for f in rep.findings if f.flag == "rate 0"}
    rate1 = {f.strata for f in rep.findings if f.flag == "rate 1"}
    assert rate0 == {(k,) for k, sk, nk in zip("abcd", s, n, strict=True) if nk and sk == 0}
    assert rate1 == {(k,) for k, sk, nk in zip("abcd", s, n, strict=True) if nk and sk == nk}
    for k in "abcd":
        expected = [f.flag for f in rep.findings if k in f.strata]
        assert sorted(filter(None, rep.table.loc[k, "flags"].split(", "))) == sorted(expected)
    d = json.loads(json.dumps(rep.to_dict()))
    assert [f["message"] for f in d["findings"]] == [f.message for f in rep.findings]


def test_no_trials_anywhere_is_a_finding_not_a_fit():
    rep = evaluate(Counts.from_arrays([0, 0], [0, 0], strata=["a", "b"]), random_seed=0)
    assert rep.posterior is None
    assert [f.flag for f in rep.findings if f.flag == "no trials"] == ["no trials"]
    assert rep.table["pooled_mean"].isna().all()


def test_reweighted_rate_undefined_when_a_weighted_stratum_is_empty():
    counts = Counts.from_arrays([3, 0, 5], [10, 0, 20], strata=list("abc"))
    rep = evaluate(counts, weights={"a": 0.3, "b": 0.3, "c": 0.4}, random_seed=0)
    assert rep.stratified is None and math.isnan(rep.overall.loc["reweighted", "estimate"])
    undefined = [f for f in rep.findings if f.flag == "no reweighted rate"]
    assert len(undefined) == 1 and undefined[0].strata == ("b",)
    assert not any("(nan)" in w for w in rep.warnings)
    # a zero share for the empty stratum: defined, sum of share x rate (3/10 * 0.6 + 5/20 * 0.4)
    rep = evaluate(counts, weights={"a": 0.6, "b": 0.0, "c": 0.4}, random_seed=0)
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(0.6 * 3 / 10 + 0.4 * 5 / 20)


def test_robust_model_is_passed_through():
    from bayeseval.models import fit_hierarchical

    s = [5, 4, 6, 5, 5, 4, 6, 5, 5, 120]
    counts = Counts.from_arrays(s, [100] * 9 + [200], strata=[f"g{i}" for i in range(10)])
    rep = evaluate(counts, model="robust", random_seed=3)
    ref = fit_hierarchical(counts, model="robust", random_seed=3).summary()
    np.testing.assert_allclose(rep.table["pooled_mean"], ref["mean"], rtol=1e-10)


# -- Markdown escaping -------------------------------------------------------------------------
HOSTILE = [
    "<script>alert(1)</script>",
    "a|b",
    "line1\nline2",
    "`code` span",
    "back\\slash|",
    " padded ",
    "&amp; entity",
    "cr\r\nlf",
    "<img src=x onerror=alert(1)>",
]


def _md_tables(md: str) -> tuple[BeautifulSoup, list[list[str]]]:
    html_out = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    soup = BeautifulSoup(html_out, "html.parser")
    table = soup.find("table")
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")]
    return soup, rows


def test_markdown_renders_hostile_stratum_names_verbatim_without_html(tmp_path):
    counts = Counts.from_arrays([3, 5, 0, 2, 4, 6, 1, 2, 3], [40] * 9, strata=HOSTILE)
    rep = evaluate(counts, random_seed=0)
    md = rep.to_markdown()
    soup, rows = _md_tables(md)
    assert soup.find("script") is None and soup.find("img") is None
    assert len(rows) == len(HOSTILE)  # no row broken by a newline or a pipe
    assert [r[0] for r in rows] == HOSTILE  # each name shown as its exact text
    n_cols = len(display_table(rep).columns) + 1
    assert all(len(r) == n_cols for r in rows)
    # even a naive reader splitting on lines and "|" sees one row per stratum, right width
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert sum(ln.count("|") == n_cols + 1 for ln in lines) >= len(HOSTILE) + 1
    # warnings quoting a name are escaped as well
    assert "<script>" not in md and "<img" not in md
    assert rep.save(tmp_path / "r.md").read_text() == md


def test_markdown_escapes_a_hostile_metric_label_and_multiindex_names():
    counts = Counts.from_arrays([3, 5], [40, 50], strata=["x", "y"])
    metric = Metric("<b>err|rate</b>\n# heading", "all", "wrong", "a custom label")
    rep = evaluate(counts, metric=metric, random_seed=0)
    soup, _ = _md_tables(rep.to_markdown())
    assert soup.find("h1").get_text() == f"bayeseval report: {metric.name}"
    assert soup.find("b") is None and len(soup.find_all("h1")) == 1
    df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["<i>|"] * 20 + ["ok"] * 20,
                       "h": ["x\ny", "z"] * 20})
    rep = evaluate(df, y_true="y", y_pred="p", strata=["g", "h"], random_seed=0)
    soup, rows = _md_tables(rep.to_markdown())
    assert soup.find("i") is None
    assert [r[0] for r in rows] == [" | ".join(k) for k in rep.table.index]


def test_html_and_markdown_escape_the_same_names():
    counts = Counts.from_arrays([3, 5], [40, 50], strata=["<script>x</script>", "a|b"])
    rep = evaluate(counts, random_seed=0)
    soup = BeautifulSoup(rep.to_html(plot=False), "html.parser")
    html_names = [tr.find("td").get_text() for tr in soup.find("table").find("tbody").find_all("tr")]
    _, rows = _md_tables(rep.to_markdown())
    assert html_names == [r[0] for r in rows] == list(counts.strata)


# -- the command line: one line on stderr, exit 2 ------------------------------------------------
@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({
        "y": rng.integers(0, 2, n),
        "p": rng.integers(0, 2, n),
        "g": rng.choice(["a", "b", "c"], n),
        "k": rng.choice([1, 2], n),
        "ys": rng.choice(["yes", "no"], n),
        "ps": rng.choice(["yes", "no"], n),
        "yb": rng.integers(0, 2, n).astype(bool),
    })
    df["pb"] = df["yb"] ^ (rng.random(n) < 0.2)
    paths = {"csv": tmp_path / "preds.csv", "parquet": tmp_path / "preds.parquet"}
    df.to_csv(paths["csv"], index=False)
    df.to_parquet(paths["parquet"])
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("y,p,g\n")
    (tmp_path / "garbled.csv").write_text('y,p\n1,"2\n')
    (tmp_path / "garbled.parquet").write_bytes(b"not parquet at all" * 4)
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "preds.xlsx").write_text("x")
    (tmp_path / "adir").mkdir()
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "notadb.db").write_text("hello, I am not SQLite")
    return df, tmp_path


def _one_line_error(capsys, argv, *words):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bayeseval: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0], out


DATA = ["--y-true", "y", "--y-pred", "p", "--strata", "g"]


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


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--seed", "-1"], ["--seed", "-1"]),
        (["--seed", "x"], ["--seed", "'x'"]),
        (["--level", "95"], ["--level", "95"]),
        (["--target-halfwidth", "0.7"], ["--target-halfwidth", "0.7"]),
        (["--metric", "nope"], ["--metric", "'nope'"]),
        (["--model", "nope"], ["--model", "'nope'"]),
        (["--out", "/nonexistent/dir/r.html"], ["--out", "/nonexistent/dir"]),
        (["--out", "r.pdf"], ["--out", "r.pdf"]),
        (["--weights", "{bad"], ["--weights", "{bad"]),
        (["--weights", "[0.5, 0.6]"], ["--weights", "1.1"]),
        (["--weights", '"x"'], ["--weights", '"x"']),
        (["--weights", '{"a": "0.5", "b": 0.5}'], ["--weights", "numbers"]),
        (["--metric", "recall", "--pos-label", "x"], ["--pos-label", "'x'", "integers"]),
        (["--metric", "recall", "--pos-label", "7"], ["--pos-label", "'7'"]),
    ],
)
def test_report_option_errors_are_one_line_before_any_work(files, capsys, monkeypatch, extra, words):
    _, tmp = files
    calls = []
    monkeypatch.setattr(pipeline, "evaluate", lambda *a, **k: calls.append(1))
    _one_line_error(capsys, ["report", str(tmp / "preds.csv"), *DATA, *extra], *words)
    assert calls == []


def test_weights_that_miss_a_stratum_are_one_line(files, capsys):
    _, tmp = files
    _one_line_error(capsys, ["report", str(tmp / "preds.csv"), *DATA, "--weights", '{"a": 0.5, "b": 0.5}'],
                    "weights", "'c'")


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
    _one_line_error(capsys, [command, str(tmp / name), "--y-true", "y", "--y-pred", "p", *criterion],
                    *words)


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


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"out": "FILE"}, ValueError, ["out", "a_file"]),
        ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
        ({"random_seed": 2**32}, ValueError, ["random_seed", str(2**32)]),
        ({"random_seed": "0"}, TypeError, ["random_seed", "'0'"]),
        ({"quick": "yes"}, TypeError, ["quick", "'yes'"]),
        ({"out": 3}, TypeError, ["out", "3"]),
    ],
)
def test_run_demo_checks_its_arguments_first(files, kwargs, exc, words):
    _, tmp = files
    if kwargs.get("out") == "FILE":
        kwargs = {"out": tmp / "a_file"}
    kwargs.setdefault("out", tmp / "demo-out")
    with pytest.raises(exc) as info:
        run_demo(**kwargs)
    for word in words:
        assert word in str(info.value)
    assert not (tmp / "demo-out").exists()  # nothing was done


@pytest.mark.parametrize("exc", [OverflowError("int too large to convert"),
                                 sqlite3.OperationalError("database is locked"),
                                 OSError(28, "No space left on device")])
def test_main_maps_input_errors_to_one_line(monkeypatch, capsys, exc):
    def raising(args):
        raise exc

    monkeypatch.setattr(cli_plan, "_cmd_plan", raising)
    line, _ = _one_line_error(capsys, ["plan", "--halfwidth", "0.05"])
    assert str(exc.args[-1]) in line


def test_main_lets_a_bug_show_its_traceback(monkeypatch):
    def buggy(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_plan, "_cmd_plan", buggy)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["plan", "--halfwidth", "0.05"])


def test_sqlite_file_that_is_not_a_database_is_one_line(files, capsys):
    _, tmp = files
    code = main(["campaign", "status", "--db", str(tmp / "notadb.db")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "error:" in err and "Traceback" not in err


def test_multi_line_messages_become_one_line(monkeypatch, capsys):
    def raising(args):
        raise ValueError("first line\n  second line\n")

    monkeypatch.setattr(cli_plan, "_cmd_plan", raising)
    line, _ = _one_line_error(capsys, ["plan", "--halfwidth", "0.05"])
    assert line == "bayeseval: error: first line second line"


# -- --pos-label, typed weights, version -----------------------------------------------------------
def _recall_reference(df, truth, pred, positive):
    pos = df[df[truth] == positive]
    return {g: (int((sub[pred] == positive).sum()), len(sub)) for g, sub in pos.groupby("g")}


@pytest.mark.parametrize(
    "truth, pred, label, positive",
    [("ys", "ps", "yes", "yes"), ("ys", "ps", "no", "no"), ("y", "p", "0", 0), ("yb", "pb", "false", False)],
)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_pos_label_reaches_tabulate_in_report_and_gate(files, capsys, truth, pred, label, positive, fmt):
    df, tmp = files
    path = str(tmp / f"preds.{fmt}")
    expected = _recall_reference(df, truth, pred, positive)
    args = [path, "--y-true", truth, "--y-pred", pred, "--strata", "g", "--metric", "recall",
            "--pos-label", label, "--json"]
    assert main(["report", *args]) == 0
    got = {s["stratum"]: (s["successes"], s["trials"]) for s in json.loads(capsys.readouterr().out)["strata"]}
    assert got == expected
    assert main(["gate", *args, "--min-trials", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)["strata"]
    assert {r["g"]: (r["successes"], r["trials"]) for r in rows} == expected


@pytest.mark.parametrize("command", ["report", "gate"])
@pytest.mark.parametrize("metric", ["recall", "precision", "fpr"])
def test_two_string_labels_with_a_class_metric_need_pos_label(files, capsys, command, metric):
    _, tmp = files
    argv = [command, str(tmp / "preds.csv"), "--y-true", "ys", "--y-pred", "ps", "--strata", "g",
            "--metric", metric, "--min-trials", "5"][: None if command == "gate" else -2]
    _one_line_error(capsys, argv, "--pos-label", "'no'", "'yes'")


def test_string_labels_with_error_rate_need_no_pos_label(files, capsys):
    df, tmp = files
    argv = ["report", str(tmp / "preds.csv"), "--y-true", "ys", "--y-pred", "ps", "--strata", "g", "--json"]
    assert main(argv) == 0
    strata = json.loads(capsys.readouterr().out)["strata"]
    ref = df.assign(err=df["ys"] != df["ps"]).groupby("g")["err"].agg(["sum", "size"])
    assert {s["stratum"]: (s["successes"], s["trials"]) for s in strata} == {
        g: (int(r["sum"]), int(r["size"])) for g, r in ref.iterrows()}


def test_weights_keys_follow_the_strata_column_type(files, capsys):
    df, tmp = files
    argv = ["report", str(tmp / "preds.csv"), "--y-true", "y", "--y-pred", "p", "--strata", "k",
            "--weights", '{"1": 0.25, "2": 0.75}', "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rate = df.assign(err=df["y"] != df["p"]).groupby("k")["err"].mean()
    assert out["overall"]["reweighted"]["estimate"] == pytest.approx(0.25 * rate[1] + 0.75 * rate[2])
    # several strata columns: labels joined by " | "
    shares = {f"{g} | {k}": 1 / 6 for g in "abc" for k in (1, 2)}
    argv = ["report", str(tmp / "preds.csv"), "--y-true", "y", "--y-pred", "p", "--strata", "g,k",
            "--weights", json.dumps(shares), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rate = df.assign(err=df["y"] != df["p"]).groupby(["g", "k"])["err"].mean()
    assert out["overall"]["reweighted"]["estimate"] == pytest.approx(rate.mean())


def test_report_out_writes_the_file(files, capsys):
    _, tmp = files
    target = tmp / "r.md"
    assert main(["report", str(tmp / "preds.csv"), *DATA, "--out", str(target)]) == 0
    assert "report written to" in capsys.readouterr().out
    assert target.read_text().startswith("# bayeseval report: error_rate")


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bayeseval {importlib.metadata.version('bayeseval')}"


def test_help_exits_0(capsys):
    assert main(["report", "--help"]) == 0
    assert "--pos-label" in capsys.readouterr().out


# -- a few real processes ----------------------------------------------------------------------------
def _run(*argv):
    return subprocess.run([sys.executable, "-m", "bayeseval", *argv], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_subprocess_report_bad_seed_exits_2_with_one_line(files):
    _, tmp = files
    proc = _run("report", str(tmp / "preds.csv"), *DATA, "--seed", "-1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and "--seed" in proc.stderr


def test_subprocess_plan_negative_groups_exits_2_with_one_line():
    proc = _run("plan", "--halfwidth", "0.05", "--groups", "-3", "--share", "0.1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["bayeseval: error: argument --groups: must be an integer >= 1 "
                                        "and <= 2**53, got '-3' (see 'bayeseval plan --help')"]


# -- gate: the same rule as evaluate ---------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"method": "nope"}, ValueError, ["method", "'nope'"]),
        ({"metric": "nope"}, ValueError, ["metric", "'nope'"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"min_trials": -2}, ValueError, ["min_trials", "-2"]),
        ({"y_true": None}, TypeError, ["y_true", "None"]),
    ],
)
def test_gate_refuses_bad_arguments_before_counting(monkeypatch, kwargs, exc, words):
    from bayeseval.report import gates as gate_mod

    calls = []
    monkeypatch.setattr(gate_mod, "tabulate", lambda *a, **k: calls.append(1))
    args = {"y_true": "y", "y_pred": "p", "strata": "g", "max_halfwidth": 0.2, **kwargs}
    with pytest.raises(exc) as info:
        gate_mod.gate(_rows(), **args)
    for word in words:
        assert word in str(info.value)
    assert calls == []


def test_gate_refuses_row_arguments_with_counts():
    from bayeseval.report.gates import gate

    with pytest.raises(TypeError, match=r"strata.*'g'"):
        gate(COUNTS, strata="g", min_trials=5)


def test_a_target_too_small_to_plan_is_refused_before_fitting(monkeypatch):
    import bayeseval.models
    from bayeseval.plan import sample_size

    monkeypatch.setattr(bayeseval.models, "fit_hierarchical", lambda *a, **k: 1 / 0)
    with pytest.raises(ValueError, match=r"target_halfwidth 1e-300 is too small"):
        evaluate(COUNTS, target_halfwidth=1e-300)
    with pytest.raises(ValueError, match=r"target_halfwidth 1e-08 is too small"):
        evaluate(COUNTS, target_halfwidth=1e-8)
    monkeypatch.undo()
    # a small target that the planner can still count is accepted, with its extra labels
    rep = evaluate(COUNTS, target_halfwidth=1e-5, random_seed=0)
    expected = [sample_size(halfwidth=1e-5, rate=3 / 40, method="clopper_pearson") - 40,
                sample_size(halfwidth=1e-5, rate=5 / 50, method="clopper_pearson") - 50]
    assert rep.table["extra_needed"].tolist() == expected


@pytest.mark.parametrize("names", [["$$", "x"], ["$\\frac{$", "$5-$10"]])
def test_html_plot_shows_dollar_names_as_text(names):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from bayeseval import plots

    rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=names), random_seed=0)
    assert "data:image/png;base64," in rep.to_html(plot=True)
    ax = Figure().subplots()
    plots.forest(rep, ax=ax)
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(names)


def test_text_rendering_keeps_one_line_per_stratum():
    names = ["line1\nline2", "tab\there", "Zürich"]
    rep = evaluate(Counts.from_arrays([3, 5, 2], [40, 50, 30], strata=names), random_seed=0)
    text = str(rep)
    table = text.split("\n\n")[1].splitlines()
    assert len(table) == 2 + len(names)  # two header lines + one line per stratum
    assert "line1\\nline2" in text and "tab\\there" in text and "Zürich" in text
