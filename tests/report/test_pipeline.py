"""Tests of ``bayeseval.report.pipeline``."""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
import re
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from statsmodels.stats.proportion import proportion_confint

import bayeseval
from bayeseval import Counts, Groups, evaluate, fit_hierarchical, proportion_ci, tabulate
from bayeseval._api.warnings import BayesevalWarning, ModelCheckWarning
from bayeseval._render.report_page import display_table
from bayeseval.counts.metrics import Metric
from bayeseval.report import pipeline, sections
from tests.helpers import (
    APART,
    BIG,
    DATA,
    N,
    S,
    _audit_pool,
    _one_line_error,
    _pool,
    _report,
    _small,
    assert_raises_naming,
    count_arrays,
    shares,
)
from tests.report.helpers import COUNTS, _rows

matplotlib.use("Agg")


ALIKE = {("x", "f"): (300, 1000), ("x", "m"): (300, 1000), ("y", "f"): (300, 1000), ("y", "m"): (300, 1000)}


BAD_EVALUATE = [
    ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
    ({"random_seed": 1.5}, TypeError, ["random_seed", "1.5"]),
    ({"random_seed": "7"}, TypeError, ["random_seed", "'7'"]),
    ({"level": 1.2}, ValueError, ["level", "1.2"]),
    ({"level": "0.9"}, TypeError, ["level", "'0.9'"]),
    ({"metric": "nope"}, ValueError, ["metric", "'nope'"]),
    ({"metric": 3}, TypeError, ["metric", "3"]),
    ({"engine": "stan"}, TypeError, ["engine=", "model=PooledModel("]),
    ({"model": "nope"}, ValueError, ["model", "'nope'"]),
    ({"model": "logit_normal"}, ValueError, ["model", "'logit_normal'", "pymc"]),
    ({"prior": "nope"}, TypeError, ["prior=", "model=PooledModel("]),
    ({"weights": {"a": 0.7, "b": 0.7}}, ValueError, ["weights", "1.4"]),
    ({"weights": [0.5, float("nan"), 0.5]}, ValueError, ["weights", "nan"]),
    ({"weights": "ab"}, TypeError, ["weights", "'ab'"]),
    ({"target_halfwidth": 0.7}, ValueError, ["target_halfwidth", "0.7"]),
    ({"target_halfwidth": "0.1"}, TypeError, ["target_halfwidth", "'0.1'"]),
]


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


def _parse_md_table(md: str) -> pd.DataFrame:
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0] == "estimand" or len(cells) != len(header):
            break
        rows.append(cells)
    return pd.DataFrame(rows, columns=header).set_index("stratum")


def _flags(rep_report_flags_export, k):
    return set(filter(None, rep_report_flags_export.table.loc[k, "flags"].split(", ")))


def test_alike_groups_give_no_fairness_warning():
    rep = _report(ALIKE, groups=Groups(["race", "sex"], tolerance=0.2))
    assert set(rep.audit.verdicts["verdict"]) == {"within tolerance"}
    assert not [w for w in rep.warnings if w.startswith("Fairness")]


def test_html_section_tables_escape_and_plot(apart):
    rep = apart
    page = rep.to_html(plot=True)
    section = page[page.index("<section class='bv-audit'>") :]
    assert "<h3>Fairness audit</h3>" in section
    assert "&lt;a&gt; | f" in section and "<a> | f" not in section
    assert "pooled model: crossed factors" in section
    for title in ("<b>Verdicts</b>", "<b>Disparities</b>", "<b>Groups</b>"):
        assert title in section
    n_verdicts = len(rep.audit.verdicts)
    assert section.count("<tr class=flag><td class=s>demographic_parity") == 1
    assert section.count("<td class=s>equalized_odds") == 2 and n_verdicts == 5
    assert "alt='forest plot of the disparities' src='data:image/png;base64," in section
    assert "<img" not in rep.to_html(plot=False).split("<section class='bv-audit'>")[1]
    assert "Fairness audit:" in str(rep) and "## Fairness audit" in rep.to_markdown()


def test_empty_cell_is_a_labelled_prediction_in_the_section():
    spec = dict(APART)
    spec[("b", "m")] = (0, 0)
    rep = _report(spec, groups=["race", "sex"])
    section = rep.to_html(plot=False).split("<section class='bv-audit'>")[1]
    assert section.count("prediction, no data") == 4  # one difference per metric
    row = rep.audit.groups.set_index(["group", "metric"]).loc[("b | m", "tpr")]
    assert row["predicted"] and np.isfinite(row["pooled_mean"])
    assert f"{row['pooled_mean']:.3f} (predicted)" in section


def test_plot_is_omitted_beyond_eighty_rows():
    spec = {(f"r{i}", s): (10 + i, 60) for i in range(12) for s in ("f", "m")}
    rep = _report(spec, groups=["race", "sex"])
    rows = int((rep.audit.disparities["measure"] != "ratio").sum())
    assert rows == 4 * 24  # 23 differences and one gap per metric
    assert f"(disparity plot omitted: {rows} rows are more than 80" in rep.to_html(plot=True)


def test_json_carries_the_audit_or_none():
    rep = _report({k: v for k, v in APART.items() if k[1] == "f"}, groups=Groups("race", tolerance=0.1, min_trials=5))
    got = json.loads(json.dumps(rep.to_dict()))
    assert got["audit"]["model"] == "robust" and got["audit"]["min_trials"] == 5
    assert [v["verdict"] for v in got["audit"]["verdicts"]][0] == "outside"
    assert json.loads(json.dumps(_report(APART).to_dict()))["audit"] is None


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"tolerance": 0.1}, TypeError, r"evaluate\(\) no longer takes tolerance=; pass groups=Groups\("),
        ({"min_trials": 5}, TypeError, r"evaluate\(\) no longer takes min_trials=; pass groups=Groups\("),
        ({"groups": []}, ValueError, r"groups must name at least one column, got \[\]"),
    ],
)
def test_bad_audit_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        _report(APART, **kwargs)


def test_groups_need_rows_not_counts():
    counts = Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"])
    with pytest.raises(TypeError, match="groups .*needs one row per example.*groups='g'"):
        evaluate(counts, groups="g", random_seed=0)


def test_unmeasured_criterion_is_a_warning_and_shown_as_not_measured():
    # 40 rows per cell: TPR, FPR and PPV have 20 or fewer trials per cell, under the default 30
    spec = {("a", "f"): (4, 40), ("a", "m"): (4, 40), ("b", "f"): (36, 40), ("b", "m"): (36, 40)}
    rep = _report(spec, groups=Groups(["race", "sex"], tolerance=0.1))
    verdicts = rep.audit.verdicts.set_index("criterion")["verdict"]
    assert verdicts["equal_opportunity"] == "not measured"
    assert verdicts["demographic_parity"] == "outside"  # 40 rows per cell: measured
    found = [w for w in rep.warnings if "equal_opportunity is not measured" in w]
    assert len(found) == 1 and "tpr" in found[0]
    assert "equal_opportunity (tpr): gap not measured -> not measured" in str(rep)
    section = rep.to_html(plot=False).split("<section class='bv-audit'>")[1]
    assert "<tr class=flag><td class=s>equal_opportunity</td><td class=s>tpr</td><td>not measured" in section


def test_evaluate_with_a_huge_flagged_stratum_stays_small():
    from bayeseval import Counts, evaluate

    s, n = [0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 67_108_862, 173]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evaluate(Counts.from_arrays(s, n), random_seed=0)
    t = rep.table
    assert np.all(t["lower"] <= t["upper"])
    assert t.loc[4, "upper"] < 1e-6  # 0 of 67 million: the interval stays tiny


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


def test_a_failing_plot_surfaces_in_to_html(monkeypatch):
    import bayeseval.plots

    rep = evaluate(COUNTS, random_seed=0)

    def broken(*a, **k):
        raise RuntimeError("broken plot")

    monkeypatch.setattr(bayeseval.plots, "forest", broken)
    with pytest.raises(RuntimeError, match="broken plot"):
        rep.to_html(plot=True)
    assert "<img" not in rep.to_html(plot=False)


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
    df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["<i>|"] * 20 + ["ok"] * 20, "h": ["x\ny", "z"] * 20})
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
    expected = [
        sample_size(halfwidth=1e-5, rate=3 / 40, method="clopper_pearson") - 40,
        sample_size(halfwidth=1e-5, rate=5 / 50, method="clopper_pearson") - 50,
    ]
    assert rep.table["extra_needed"].tolist() == expected


def test_text_rendering_keeps_one_line_per_stratum():
    names = ["line1\nline2", "tab\there", "Zürich"]
    rep = evaluate(Counts.from_arrays([3, 5, 2], [40, 50, 30], strata=names), random_seed=0)
    text = str(rep)
    table = text.split("\n\n")[1].splitlines()
    assert len(table) == 2 + len(names)  # two header lines + one line per stratum
    assert "line1\\nline2" in text and "tab\\there" in text and "Zürich" in text


def test_missing_labels_without_proxy_stay_an_error():
    with pytest.raises(ValueError, match=r"y_true column 'y_true' has missing labels in 6 rows.*proxy="):
        tabulate(_small(), y_true="y_true", y_pred="y_pred", strata="g")
    with pytest.raises(ValueError, match="missing labels"):
        evaluate(_small(), y_true="y_true", y_pred="y_pred", strata="g", random_seed=0)


def test_evaluate_point_estimate_is_the_hand_post_stratified_estimate():
    rng = np.random.default_rng(5)
    size = 3000
    right = rng.random(size) < 0.8
    judge = np.where(rng.random(size) < 0.9, right, ~right)
    df = pd.DataFrame({"y_pred": 1, "judge": judge.astype(int), "y_true": right.astype(float)})
    keep = rng.random(size) < 0.05
    df.loc[~keep, "y_true"] = np.nan
    rep = evaluate(df, y_true="y_true", y_pred="y_pred", proxy="judge", metric="accuracy", random_seed=0)
    row = rep.table.loc["all"]
    # by hand: cell c = the judge's verdict; share N_c / N times the labelled rate in the cell
    hand = sum(np.mean(judge == c) * right[keep & (judge == c)].mean() for c in (0, 1))
    assert bool(row["proxy_used"])
    assert row["rate"] == pytest.approx(hand, abs=1e-12)
    assert (row["successes"], row["trials"], row["pool_trials"]) == (right[keep].sum(), keep.sum(), size)
    assert row["agreement"] == pytest.approx(np.mean(judge[keep] == right[keep]))
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx(hand, abs=1e-12)
    assert row["lower"] < hand < row["upper"]


def test_evaluate_overall_and_reweighted_by_hand():
    df = _pool(size=3000, seed=3)
    rep = evaluate(
        df,
        y_true="y_true",
        y_pred="y_pred",
        strata="g",
        proxy="judge",
        weights={"a": 0.5, "b": 0.3, "c": 0.2},
        random_seed=0,
    )
    t = rep.table
    shares = df["g"].value_counts(normalize=True).sort_index()
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx((shares * t["rate"]).sum())
    w = pd.Series({"a": 0.5, "b": 0.3, "c": 0.2})
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx((w * t["rate"]).sum())
    # MOVER: lower end from the strata's lower distances (Zou and Donner 2008)
    lo = (w * t["rate"]).sum() - math.sqrt(((w * (t["rate"] - t["lower"])) ** 2).sum())
    assert rep.overall.loc["reweighted", "lower"] == pytest.approx(lo)
    assert rep.proxy is not None and "effective_labels" in rep.to_frame().columns


def test_evaluate_refuses_proxy_with_metrics_whose_trials_need_the_truth():
    with pytest.raises(ValueError, match=r"metric 'recall' does not take a proxy"):
        evaluate(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", metric="recall", random_seed=0)


def test_evaluate_average_guarantee_reads_pooled_or_the_proxy_interval():
    df = _pool(size=3000, seed=4)
    stratum = evaluate(df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge", random_seed=0)
    average = evaluate(
        df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge", guarantee="average", random_seed=0
    )
    own = average.table["read"] == "proxy"
    for col in ("lower", "upper"):
        assert np.allclose(average.table.loc[own, col], stratum.table.loc[own, col])
        assert np.allclose(average.table.loc[~own, col], average.table.loc[~own, f"pooled_{col}"])


def test_evaluate_target_counts_labels_at_the_effective_rate():
    df = _pool(size=3000, seed=6)
    rep = evaluate(
        df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge", target_halfwidth=0.05, random_seed=0
    )
    from bayeseval import sample_size

    for k, row in rep.table.iterrows():
        eff = rep.counts.trials.loc[k]
        need = sample_size(halfwidth=0.05, rate=float(row["rate"]), level=0.95, method="clopper_pearson")
        per_label = max(eff / row["trials"], 1.0)
        assert row["extra_needed"] == math.ceil(max(need - eff, 0) / per_label)


def test_evaluate_with_groups_and_proxy_audits_selection_rate_and_ppv():
    df = _audit_pool(0.6, size=8000)
    rep = evaluate(
        df,
        y_true="y",
        y_pred="p",
        strata="g",
        groups=Groups("g", tolerance=0.1),
        proxy="j",
        metric="precision",
        random_seed=0,
    )
    assert rep.audit.proxy == "j" and set(rep.audit.groups["metric"]) == {"selection_rate", "ppv"}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_evaluate_on_extreme_counts_is_finite_and_ordered(data):
    from bayeseval import evaluate

    s, n = data.draw(count_arrays(max_k=8, max_n=BIG))
    w = data.draw(shares(len(s)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        rep = evaluate(Counts.from_arrays(s, n), weights=w, random_seed=0)
    t = rep.table
    # with fewer than two strata with trials the report fits no pooled model (nothing to pool)
    assert (rep.posterior is None) == (int((np.asarray(n) > 0).sum()) < 2)
    pairs = [("lower", "rate", "upper")]
    if rep.posterior is not None:
        pairs.append(("pooled_lower", "pooled_mean", "pooled_upper"))
    for lo, mid, hi in pairs:
        v = t[[lo, mid, hi]].to_numpy()
        assert np.all(np.isfinite(v))
        assert np.all((0 <= v[:, 0]) & (v[:, 0] <= v[:, 1] + 1e-12) & (v[:, 1] <= v[:, 2] + 1e-12) & (v[:, 2] <= 1))
    o = rep.overall[["estimate", "lower", "upper"]].to_numpy()
    assert np.all(np.isfinite(o))
    assert np.all((0 <= o[:, 1]) & (o[:, 1] <= o[:, 0]) & (o[:, 0] <= o[:, 2]) & (o[:, 2] <= 1))


def test_evaluate_bad_input_names_argument():
    from bayeseval import evaluate

    c = Counts.from_arrays([1, 2], [10, 20])
    assert_raises_naming(evaluate, "level", c, level=1.0)
    assert_raises_naming(evaluate, "weights", c, weights=[0.5, 0.6])
    assert_raises_naming(evaluate, "target_halfwidth", c, target_halfwidth=0.7)
    assert_raises_naming(evaluate, "engine", c, engine="stan")


def test_no_composition_warning_when_shares_match():
    counts = Counts.from_arrays([10, 20], [500, 500], strata=["a", "b"])
    rep = evaluate(counts, weights={"a": 0.5, "b": 0.5}, random_seed=1)
    assert not any("composition" in w for w in rep.warnings)
    # equal shares: the reweighted rate equals the unweighted one (30 / 1000)
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(0.03)
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx(0.03)


def test_without_weights_the_note_says_sample_composition():
    counts = Counts.from_arrays([3, 8], [100, 100], strata=["a", "b"])
    rep = evaluate(counts, random_seed=0)
    assert list(rep.overall.index) == ["unweighted"]
    assert any("test set's own composition" in n for n in rep.notes)
    assert rep.table["weight"].isna().all() and rep.table["extra_needed"].isna().all()


def test_model_flags_an_outlying_stratum():
    # nine strata near 5% and one at 60%: the outlier has by far the smallest predictive p-value
    s = [5, 4, 6, 5, 5, 4, 6, 5, 5, 120]
    counts = Counts.from_arrays(s, [100] * 9 + [200], strata=[f"g{i}" for i in range(10)])
    rep = evaluate(counts, random_seed=3)
    assert "ppc_counts" in rep.checks.index
    assert rep.table["ppc_p"].between(0, 1).all()
    assert rep.table["ppc_p"].idxmin() == "g9"


def test_model_check_verdicts_come_from_bayeseval_checks():
    from bayeseval import checks

    s = [5, 4, 6, 5, 5, 4, 6, 5, 5, 120]
    counts = Counts.from_arrays(s, [100] * 9 + [200], strata=[f"g{i}" for i in range(10)])
    rep = evaluate(counts, random_seed=3)
    post = fit_hierarchical(counts, random_seed=3)
    with pytest.warns(ModelCheckWarning):
        ppc = checks.posterior_predictive_check(post, random_seed=3)
    np.testing.assert_allclose(rep.table["ppc_p"], ppc.table["p_value"])
    assert ppc.outliers == ["g9"]
    assert rep.table["flags"].tolist() == [""] * 9 + ["model check"]
    assert any("'g9'" in w and "extreme under its own predictions" in w for w in rep.warnings)
    # a tiny stratum pulled hard toward the others (compare_frequentist's docstring example)
    small = evaluate(Counts.from_arrays([1, 6, 5, 7], [4, 60, 50, 70]), random_seed=0)
    side = checks.compare_frequentist(fit_hierarchical(small.counts, random_seed=0), random_seed=0)
    assert side.loc[0, "reason"] == "strong shrinkage of a small stratum"
    assert "strong shrinkage" in small.table.loc[0, "flags"]
    assert any("leans heavily on the other strata" in w for w in small.warnings)


def test_html_contains_every_stratum_and_warning(rep):
    before = dict(matplotlib.rcParams)
    text = rep._repr_html_()
    assert dict(matplotlib.rcParams) == before  # no global style change
    for k in rep.table.index:
        assert f">{k}<" in text
    for w in rep.warnings:
        assert html.escape(w) in text
    assert "data:image/png;base64," in text
    assert "population estimate" in text
    assert "<img" not in rep.to_html(plot=False)


def test_text_rendering(rep):
    text = str(rep)
    for k in rep.table.index:
        assert k in text
    assert "population estimate" in text and "Warnings:" in text
    assert f"{rep.overall.loc['reweighted', 'estimate']:.4f}" in text


def test_markdown_round_trip(rep, tmp_path):
    path = rep.save(tmp_path / "r.md")
    md = path.read_text()
    back = _parse_md_table(md)
    t = rep.table
    assert back.index.tolist() == [str(k) for k in t.index]
    assert back["trials"].astype(int).tolist() == t["trials"].tolist()
    for col in ("rate", "lower", "upper", "pooled_mean", "pooled_lower", "pooled_upper"):
        shown = back[col].astype(float).to_numpy()
        # 4 decimals, or 3 significant digits where 4 decimals would show 0 for a nonzero value
        np.testing.assert_allclose(shown, t[col], atol=0.5e-4 + 1e-12, rtol=0)
        np.testing.assert_allclose(shown[t[col].to_numpy() < 0.5e-4], t[col][t[col] < 0.5e-4], rtol=0.005)
        assert ((shown == 0) == (t[col].to_numpy() == 0)).all()
    assert back["flags"].tolist() == t["flags"].tolist()
    for w in rep.warnings:
        assert w in md


def test_save_html_and_bad_suffix(rep, tmp_path):
    path = rep.save(tmp_path / "r.html")
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "s5" in text and "base64" in text
    with pytest.raises(ValueError, match="path must end"):
        rep.save(tmp_path / "r.pdf")


def test_to_dict_is_json_and_complete(rep):
    d = json.loads(json.dumps(rep.to_dict()))
    assert [s["stratum"] for s in d["strata"]] == list(rep.table.index)
    assert d["strata"][0]["trials"] == int(rep.table["trials"].iloc[0])
    assert d["population_estimate"] == "reweighted"
    assert d["overall"]["reweighted"]["estimate"] == pytest.approx(rep.overall.loc["reweighted", "estimate"])
    assert d["warnings"] == rep.warnings


def test_to_frame_and_xarray(rep):
    frame = rep.to_frame()
    assert frame["stratum"].tolist() == list(rep.table.index)
    assert len(frame) == len(rep.table)
    ds = rep.to_xarray()
    np.testing.assert_allclose(ds["pooled_mean"].to_numpy(), rep.table["pooled_mean"].to_numpy())
    assert ds.attrs["reweighted_estimate"] == pytest.approx(rep.overall.loc["reweighted", "estimate"])


def test_recall_with_multiindex_strata_and_empty_stratum():
    df = pd.DataFrame(
        {
            "y": [1, 1, 0, 1, 1, 0, 0, 0] * 10,
            "p": [1, 0, 0, 1, 1, 1, 0, 0] * 10,
            "g": ["a", "a", "a", "b", "b", "b", "c", "c"] * 10,
            "h": ["x", "y"] * 40,
        }
    )
    rep = evaluate(df, y_true="y", y_pred="p", strata=["g", "h"], metric="recall", random_seed=0)
    assert rep.metric == "recall"
    assert isinstance(rep.table.index, pd.MultiIndex)
    # stratum c has no positives: kept, flagged empty, warned about
    empty = [k for k in rep.table.index if k[0] == "c"]
    assert all("empty" in rep.table.loc[k, "flags"] for k in empty)
    assert any("no trials" in w for w in rep.warnings)
    assert "a | x" in str(rep)
    json.dumps(rep.to_dict())


def test_html_plots_the_worst_strata_of_many():
    counts = Counts.from_arrays(list(range(61)), [100] * 61)
    rep = evaluate(counts, random_seed=0)
    text = rep.to_html()
    # one plot, of the 30 strata with the highest upper bounds (the highest counts here)
    assert text.count("<img") == 1 and "Forest plot of 30 of the 61 strata, by the upper bound" in text
    worst = dataclasses.replace(rep, table=rep.table.iloc[::-1].iloc[:30])
    png = re.search(r"src='data:image/png;base64,([^']+)'", text).group(1)
    assert base64.b64decode(png) == worst.forest_png()
    # every stratum in the table: strata, 2 header rows (column groups, column names), 1 overall
    # header, overall rows
    assert text.count("<tr") == 61 + 2 + 1 + len(rep.overall)


def test_evaluate_refuses_a_score_column_as_y_pred_naming_it():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300)
    score = np.clip(np.where(y == 1, 0.9, 0.1) + rng.normal(0, 0.05, 300), 0.01, 0.99)
    df = pd.DataFrame({"y": y, "score": score, "g": rng.choice(["a", "b"], 300)})
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        evaluate(df, y_true="y", y_pred="score", strata="g")
    assert repr(float(score[0])) in str(err.value)  # the first row's score: every score is fractional


def test_saved_workbook_and_csv_never_hold_live_formulas(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    import pandas as pd

    from bayeseval import Counts, evaluate

    names = ['=HYPERLINK("http://x","y")', "@SUM(A1)", "plain"]
    rep = evaluate(Counts.from_arrays([3, 5, 4], [40, 50, 45], strata=names), random_seed=0)
    wb = openpyxl.load_workbook(rep.save(tmp_path / "r.xlsx"))
    ws = wb["strata"]
    header = [c.value for c in ws[1]]
    col = header.index("stratum") + 1 if "stratum" in header else 1
    cells = [ws.cell(r, col) for r in range(2, 5)]
    assert [c.value for c in cells] == names and all(c.data_type == "s" for c in cells)
    assert all(ws.cell(r, header.index("successes") + 1).data_type == "n" for r in range(2, 5))
    frame = pd.read_csv(rep.save(tmp_path / "r.csv"), keep_default_na=False)
    first = frame.columns[0] if "stratum" not in frame.columns else "stratum"
    assert frame[first].tolist() == ["'" + names[0], "'" + names[1], "plain"]
    assert frame["successes"].tolist() == [3, 5, 4]


def test_without_two_strata_with_trials_the_interval_is_clopper_pearson():
    from statsmodels.stats.proportion import proportion_confint

    for guarantee in ("stratum", "average"):
        rep = evaluate(Counts.from_arrays([3, 0], [50, 0], strata=["a", "b"]), random_seed=0, guarantee=guarantee)
        lo, hi = proportion_confint(3, 50, alpha=0.05, method="beta")
        assert rep.table.loc["a", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
        assert rep.table.loc["b", ["lower", "upper"]].isna().all()


def test_the_report_says_which_guarantee_it_keeps(rep):
    assert rep.guarantee == "stratum" and rep.to_dict()["guarantee"] == "stratum"
    assert rep.to_xarray().attrs["guarantee"] == "stratum"
    note = [f for f in rep.findings if f.flag == "guarantee"]
    assert len(note) == 1 and note[0].message.startswith("Guarantee 'stratum'")
    assert "not for a stratum that differs" in note[0].message
    for text in (str(rep), rep.to_markdown(), html.unescape(rep.to_html(plot=False))):
        assert "guarantee 'stratum'" in text and "cover each stratum's own rate" in text
    assert "title='lower bound of the stratum&#x27;s interval, covering its own rate" in rep.to_html(
        plot=False
    )  # the column's header says what it promises
    ax = rep.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "raw rate, interval covering each stratum (adaptive)" in labels
    assert "pooled posterior (covers on average over strata)" in labels
    matplotlib.pyplot.close(ax.figure)
    average = evaluate(rep.counts, random_seed=0, guarantee="average")
    assert average.guarantee == "average" and "guarantee: average" in str(average)
    assert any(f.flag == "guarantee" and "covers on average" in f.message for f in average.findings)


@pytest.mark.parametrize(
    ("value", "error"), [("both", ValueError), ("", ValueError), (1, TypeError), (None, TypeError)]
)
def test_bad_guarantee_is_refused_naming_it_and_the_choices(value, error):
    with pytest.raises(error, match=r"guarantee") as err:
        evaluate(Counts.from_arrays([1, 2], [10, 10]), guarantee=value)
    assert "['stratum', 'average']" in str(err.value) and repr(value) in str(err.value)


def test_a_guarantee_object_is_its_name_and_the_report_shows_the_name():
    counts = Counts.from_arrays([3, 9, 14, 2], [50, 60, 70, 40], strata=list("abcd"))
    for name in ("stratum", "average"):
        by_name = evaluate(counts, random_seed=0, guarantee=name)
        by_object = evaluate(counts, random_seed=0, guarantee=bayeseval.Guarantee(name))
        pd.testing.assert_frame_equal(by_object.table, by_name.table, check_exact=True)
        assert by_object.guarantee == name and by_object.to_dict()["guarantee"] == name
        assert f"guarantee: {name}" in str(by_object)
    # "stratum" reads each stratum's own exact interval: Clopper-Pearson with method="clopper_pearson" in the gate,
    # the adaptive one here; without two strata with trials, Clopper-Pearson
    one = evaluate(Counts.from_arrays([3, 0], [50, 0], strata=list("ab")), guarantee=bayeseval.Guarantee.stratum())
    lo, hi = proportion_confint(3, 50, alpha=0.05, method="beta")
    assert one.table.loc["a", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)


@pytest.mark.parametrize("value", ["anytime", bayeseval.Guarantee.anytime()])
def test_the_anytime_guarantee_is_a_campaigns_not_a_reports(value):
    with pytest.raises(ValueError, match=r"guarantee") as err:
        evaluate(Counts.from_arrays([1, 2], [10, 10]), guarantee=value)
    assert "['stratum', 'average']" in str(err.value)


def test_shrinkage_is_the_population_means_weight_in_the_pooled_estimate():
    # given (mu, kappa) the posterior mean is (mu kappa + s) / (kappa + n)
    # = (1 - B) s/n + B mu with B = kappa / (kappa + n) (BDA3 section 5.3): averaging that
    # identity over the hyper draws must give the posterior mean the report shows
    s, n = [3, 40, 12], [50, 100, 80]
    rep_report_flags_export = evaluate(Counts.from_arrays(s, n, strata=list("abc")), random_seed=0)
    post = fit_hierarchical(Counts.from_arrays(s, n, strata=list("abc")), random_seed=0)
    mu, kappa = post.draws("mu"), post.draws("kappa")
    for k, (sk, nk) in zip("abc", zip(s, n, strict=True), strict=True):
        b = kappa / (kappa + nk)
        assert rep_report_flags_export.table.loc[k, "shrinkage"] == pytest.approx(b.mean(), rel=1e-10)
        mean = np.mean((1 - b) * sk / nk + b * mu)
        assert rep_report_flags_export.table.loc[k, "pooled_mean"] == pytest.approx(mean, abs=2e-3)


@pytest.mark.parametrize(
    ("s", "n"),
    [
        ([3, 40], [50, 100]),  # the two-group example that showed 1.285
        ([10, 5, 20], [100, 50, 200]),  # every raw rate equals the pooled mean (was NaN)
        ([0, 7, 12], [60, 80, 12]),
    ],  # rates 0 and 1
)
def test_shrinkage_is_defined_and_between_0_and_1(s, n):
    rep_report_flags_export = evaluate(Counts.from_arrays(s, n), random_seed=0)
    sh = rep_report_flags_export.table["shrinkage"]
    assert sh.notna().all() and sh.between(0, 1).all()


def test_shrinkage_falls_as_a_stratum_grows_at_the_same_rate():
    rep_report_flags_export = evaluate(
        Counts.from_arrays([2, 10, 50], [20, 100, 500], strata=list("abc")), random_seed=0
    )
    sh = rep_report_flags_export.table["shrinkage"]
    assert sh["a"] > sh["b"] > sh["c"]


def test_one_stratum_skips_pooling_and_says_why():
    rep_report_flags_export = evaluate(Counts.from_arrays([3], [50], strata=["only"]), random_seed=0)
    assert rep_report_flags_export.posterior is None
    assert (
        rep_report_flags_export.table["pooled_mean"].isna().all()
        and rep_report_flags_export.table["shrinkage"].isna().all()
    )
    text = str(rep_report_flags_export)
    assert "1 strata" not in text and "1 stratum, 50 trials" in text
    assert any(
        "Only one stratum has trials" in n and "no other strata to pool" in n for n in rep_report_flags_export.notes
    )
    # nothing to build the adaptive interval's prior from: Clopper-Pearson (statsmodels "beta")
    lo, hi = proportion_confint(3, 50, alpha=0.05, method="beta")
    assert rep_report_flags_export.table.loc["only", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
    assert "pooled_mean" not in rep_report_flags_export.to_markdown()  # no empty pooled columns


def test_one_stratum_with_trials_among_empty_ones_skips_pooling():
    rep_report_flags_export = evaluate(Counts.from_arrays([3, 0], [50, 0], strata=["a", "b"]), random_seed=0)
    assert rep_report_flags_export.posterior is None
    assert _flags(rep_report_flags_export, "b") == {"empty"}


def test_flags_end_to_end_match_their_definitions():
    # twenty strata at 5% of 1,000 and one at 6 of 10: pooled far from its own data
    s, n = [50] * 20 + [6], [1000] * 20 + [10]
    rep_report_flags_export = evaluate(Counts.from_arrays(s, n), random_seed=0, target_halfwidth=0.02)
    t = rep_report_flags_export.table
    lo, hi = proportion_ci(s, n, method="adaptive")
    np.testing.assert_allclose(t["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(t["upper"], hi, rtol=1e-9)
    threshold = 0.05 / len(s)
    for k, row in t.iterrows():
        flags = _flags(rep_report_flags_export, k)
        apart = row["pooled_upper"] < row["lower"] or row["pooled_lower"] > row["upper"]
        ratio = (row["pooled_upper"] - row["pooled_lower"]) / (row["upper"] - row["lower"])
        assert ("estimates disagree" in flags) == apart
        assert ("strong shrinkage" in flags) == (row["shrinkage"] >= 0.5 and ratio < 0.5)
        assert ("model check" in flags) == (row["ppc_p"] < threshold)
        assert ("too wide" in flags) == ((hi[k] - lo[k]) / 2 > 0.02)
    assert {"estimates disagree", "strong shrinkage", "model check"} <= _flags(rep_report_flags_export, 20)


def test_overlapping_intervals_are_not_flagged_as_disagreeing():
    # eight strata at 5% and one at 6 of 10: the posterior mean (about 0.16) lies outside the
    # Wilson interval [0.31, 0.83], but the credible interval reaches into it
    s, n = [5] * 8 + [6], [100] * 8 + [10]
    rep_report_flags_export = evaluate(Counts.from_arrays(s, n), random_seed=0)
    row = rep_report_flags_export.table.loc[8]
    assert row["pooled_mean"] < row["lower"] and row["pooled_upper"] >= row["lower"]
    assert "estimates disagree" not in _flags(rep_report_flags_export, 8)


def test_header_names_version_date_source_metric_level_engine(tmp_path):
    df = pd.DataFrame({"y": [1, 0, 1, 1] * 25, "p": [1, 0, 0, 1] * 25, "g": list("ab") * 50})
    rep_report_flags_export = evaluate(df, y_true="y", y_pred="p", strata="g", level=0.9, random_seed=0)
    assert (
        rep_report_flags_export.source == "pandas DataFrame (100 rows)"
        and rep_report_flags_export.version == bayeseval.__version__
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", rep_report_flags_export.created)
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    rep2 = evaluate(str(path), y_true="y", y_pred="p", strata="g", random_seed=0)
    assert rep2.source == str(path)
    for text in (
        str(rep_report_flags_export),
        rep_report_flags_export.to_html(plot=False),
        rep_report_flags_export.to_markdown(),
    ):
        for piece in (
            bayeseval.__version__,
            rep_report_flags_export.created,
            "pandas DataFrame (100 rows)",
            "error_rate",
            "90%",
            "exact",
        ):
            assert piece in text
    named = evaluate(Counts.from_arrays([1, 2], [9, 9]), random_seed=0)
    assert named.source == "Counts (2 strata)"
    named.source = "db.table x"  # the header names the data as told
    assert "db.table x" in str(named) and "db.table x" in named.to_markdown()
    with pytest.raises(TypeError, match=r"evaluate\(\) no longer takes source=; set report.source"):
        evaluate(Counts.from_arrays([1, 2], [9, 9]), source="db.table x")


def test_html_table_scrolls_and_groups_columns_estimate_pooled_checks():
    rep_report_flags_export = evaluate(
        Counts.from_arrays([3, 5, 0], [40, 50, 20], strata=list("abc")), target_halfwidth=0.05, random_seed=0
    )
    text = rep_report_flags_export.to_html(plot=False)
    assert "<div class='bv-scroll'><table class='bv-strata'>" in text
    assert ".bayeseval-report .bv-scroll{overflow-x:auto" in text
    groups = re.findall(r"<th class='g gs' colspan='(\d+)'>(\w+)</th>", text)
    shown = display_table(rep_report_flags_export).columns
    raw = [
        c
        for c in ("successes", "trials", "rate", "lower", "upper", "halfwidth", "sample_share", "weight")
        if c in shown
    ]
    assert groups == [(str(len(raw)), "estimate"), ("4", "pooled"), ("3", "checks")]
    cells = re.findall(r"<th(?: class=gs| class=f)? title='[^']*'>([\w<>]+)</th>", text)
    names = [n.replace("<wbr>", "") for n in cells]  # long names may break after "_"
    assert names == raw + ["pooled_mean", "pooled_lower", "pooled_upper", "shrinkage", "ppc_p", "extra_needed", "flags"]


def test_saved_html_page_is_styled_and_self_contained(tmp_path):
    rep_report_flags_export = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"]), random_seed=0)
    text = rep_report_flags_export.save(tmp_path / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "name='viewport'" in text
    assert "body{" in text and "data:image/png;base64," in text
    assert not re.search(r"(src|href)=['\"]https?:", text)  # nothing fetched from a network


def test_save_json_reads_back(rep_report_flags_export, tmp_path):
    back = json.loads(rep_report_flags_export.save(tmp_path / "r.json").read_text())
    assert [r["stratum"] for r in back["strata"]] == ["a_1", "b&c", "d%"]
    assert [r["successes"] for r in back["strata"]] == [3, 5, 0]
    assert back["overall"]["unweighted"]["estimate"] == pytest.approx(8 / 120)


def test_save_xlsx_without_an_engine_names_the_missing_engines(rep_report_flags_export, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("openpyxl", "xlsxwriter") else real(name, *a)
    )
    with pytest.raises(
        ValueError,
        match=r"\.xlsx needs an Excel engine: neither openpyxl nor "
        r"xlsxwriter is installed",
    ):
        rep_report_flags_export.save(tmp_path / "r.xlsx")
    assert not (tmp_path / "r.xlsx").exists()


def test_save_xlsx_reads_back(rep_report_flags_export, tmp_path):
    pytest.importorskip("openpyxl")  # optional: not a dependency of bayeseval
    path = rep_report_flags_export.save(tmp_path / "r.xlsx")
    sheets = pd.read_excel(path, sheet_name=None, keep_default_na=False)
    assert list(sheets) == ["strata", "overall", "checks", "findings"]
    assert sheets["strata"]["successes"].tolist() == [3, 5, 0]
    assert sheets["strata"]["stratum"].tolist() == ["a_1", "b&c", "d%"]
    assert sheets["findings"]["message"].tolist() == [f.message for f in rep_report_flags_export.findings]


def test_save_refuses_an_unknown_suffix_naming_the_path(rep_report_flags_export, tmp_path):
    with pytest.raises(ValueError, match=r"path must end in .*\.tex.*got '.*r\.pdf'"):
        rep_report_flags_export.save(tmp_path / "r.pdf")


def test_read_columns_belong_to_the_average_guarantee_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep_report_read = evaluate(Counts.from_arrays(S, N, strata=list("abcdefg")), random_seed=0)
    assert rep_report_read.guarantee == "stratum"
    assert not {"read", "read_reason", "read_lower", "read_upper"} & set(rep_report_read.table.columns)
    assert not any(f.flag == "read adaptive" for f in rep_report_read.findings)


def test_read_interval_follows_the_level():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep_report_read = evaluate(Counts.from_arrays(S, N), level=0.9, random_seed=0, guarantee="average")
    lo, hi = proportion_ci(S, N, method="adaptive", level=0.9)
    np.testing.assert_allclose(rep_report_read.table["lower"].iloc[6], lo[6], rtol=1e-12)
    np.testing.assert_allclose(rep_report_read.table["upper"].iloc[6], hi[6], rtol=1e-12)


def test_html_groups_read_columns_with_the_pooled_ones_and_explains_them(rep_report_read):
    text = rep_report_read.to_html(plot=False)
    groups = re.findall(r"<th class='g gs' colspan='(\d+)'>(\w+)</th>", text)
    assert ("5", "pooled") in groups
    assert re.search(r"title='which interval lower and upper are[^']*'>read</th>", text)
    assert re.search(r"title='lower bound of the interval read for the stratum[^']*'>lower</th>", text)
    assert "read_<wbr>reason</th>" not in text  # the reason is the read cell's tooltip
    reason = rep_report_read.table.loc["g", "read_reason"]
    assert f"title='{reason}'><b>adaptive</b></td>" in text
    assert f"<b>{rep_report_read.table.loc['g', 'lower']:.4f}</b>" in text
    assert "title='consistent with the other strata'>pooled</td>" in text


def test_text_markdown_and_exports_carry_the_read_columns(rep_report_read, tmp_path):
    for text in (str(rep_report_read), rep_report_read.to_markdown(), rep_report_read.to_latex()):
        header = [ln for ln in text.splitlines() if "successes" in ln][0]
        cells = header.replace("\\_", "_").replace("|", " ").replace("&", " ").split()
        assert "read" in cells and "read_reason" not in header.replace("\\_", "_")
        assert "adaptive" in text
    md = [ln for ln in rep_report_read.to_markdown().splitlines() if ln.startswith("| g |")][0]
    assert "| adaptive |" in md
    frame = pd.read_csv(rep_report_read.save(tmp_path / "r.csv"))
    assert frame["read"].tolist() == rep_report_read.table["read"].tolist()
    assert frame["read_reason"].tolist() == rep_report_read.table["read_reason"].tolist()
    d = json.loads(json.dumps(rep_report_read.to_dict()))
    assert d["strata"][6]["read"] == "adaptive"
    assert d["strata"][6]["upper"] == pytest.approx(rep_report_read.table["upper"].iloc[6])
    assert d["guarantee"] == "average"
    assert rep_report_read.to_xarray()["read"].to_numpy().tolist() == rep_report_read.table["read"].tolist()


def test_without_a_pooled_model_there_is_nothing_to_read():
    rep_report_read = evaluate(
        Counts.from_arrays([3, 0], [40, 0], strata=["a", "b"]), random_seed=0, guarantee="average"
    )
    assert rep_report_read.posterior is None
    assert rep_report_read.table[["read", "read_reason"]].isna().all().all()
    for text in (str(rep_report_read), rep_report_read.to_markdown(), rep_report_read.to_html(plot=False)):
        assert ">read</th>" not in text and "| read |" not in text
    assert rep_report_read.to_xarray()["read"].to_numpy().tolist() == ["", ""]


@pytest.mark.parametrize("trials", [50_000, 1_000_000])
def test_read_column_reads_an_outlier_of_many_trials_from_its_own_data(trials):
    # nine strata at 0.20 and one at 0.10 (a gap of over 50 binomial standard errors): the
    # outlier reads its own interval, which holds its own rate and not the others'
    n = np.full(10, trials)
    s = n // 5
    s[-1] = trials // 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = evaluate(
            Counts.from_arrays(s, n, strata=[f"s{i}" for i in range(10)]), random_seed=0, guarantee="average"
        ).to_frame()
    assert frame["read"].tolist() == ["pooled"] * 9 + ["adaptive"]
    lo, hi = frame["lower"].iloc[-1], frame["upper"].iloc[-1]
    assert lo < 0.1 < hi < 0.15
