"""Report: shrinkage that means what it says, flags that fire exactly on their definition,
no pooling with one stratum, provenance header, responsive HTML and the export formats."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

import bayeseval
from bayeseval import Counts, evaluate, proportion_ci
from bayeseval._render.report_page import display_table
from bayeseval.models import fit_hierarchical
from bayeseval.report.findings import model_findings
from bayeseval.report.sections import Pooled


def _flags(rep, k):
    return set(filter(None, rep.table.loc[k, "flags"].split(", ")))


# -- shrinkage -----------------------------------------------------------------------------------
def test_shrinkage_is_the_population_means_weight_in_the_pooled_estimate():
    # given (mu, kappa) the posterior mean is (mu kappa + s) / (kappa + n)
    # = (1 - B) s/n + B mu with B = kappa / (kappa + n) (BDA3 section 5.3): averaging that
    # identity over the hyper draws must give the posterior mean the report shows
    s, n = [3, 40, 12], [50, 100, 80]
    rep = evaluate(Counts.from_arrays(s, n, strata=list("abc")), random_seed=0)
    post = fit_hierarchical(Counts.from_arrays(s, n, strata=list("abc")), random_seed=0)
    mu, kappa = post.draws("mu"), post.draws("kappa")
    for k, (sk, nk) in zip("abc", zip(s, n, strict=True), strict=True):
        b = kappa / (kappa + nk)
        assert rep.table.loc[k, "shrinkage"] == pytest.approx(b.mean(), rel=1e-10)
        mean = np.mean((1 - b) * sk / nk + b * mu)
        assert rep.table.loc[k, "pooled_mean"] == pytest.approx(mean, abs=2e-3)


@pytest.mark.parametrize(
    ("s", "n"),
    [([3, 40], [50, 100]),  # the two-group example that showed 1.285
     ([10, 5, 20], [100, 50, 200]),  # every raw rate equals the pooled mean (was NaN)
     ([0, 7, 12], [60, 80, 12])],  # rates 0 and 1
)
def test_shrinkage_is_defined_and_between_0_and_1(s, n):
    rep = evaluate(Counts.from_arrays(s, n), random_seed=0)
    sh = rep.table["shrinkage"]
    assert sh.notna().all() and sh.between(0, 1).all()


def test_shrinkage_falls_as_a_stratum_grows_at_the_same_rate():
    rep = evaluate(Counts.from_arrays([2, 10, 50], [20, 100, 500], strata=list("abc")),
                   random_seed=0)
    sh = rep.table["shrinkage"]
    assert sh["a"] > sh["b"] > sh["c"]


def test_one_stratum_skips_pooling_and_says_why():
    rep = evaluate(Counts.from_arrays([3], [50], strata=["only"]), random_seed=0)
    assert rep.posterior is None
    assert rep.table["pooled_mean"].isna().all() and rep.table["shrinkage"].isna().all()
    text = str(rep)
    assert "1 strata" not in text and "1 stratum, 50 trials" in text
    assert any("Only one stratum has trials" in n and "no other strata to pool" in n
               for n in rep.notes)
    # nothing to build the adaptive interval's prior from: Clopper-Pearson (statsmodels "beta")
    lo, hi = proportion_confint(3, 50, alpha=0.05, method="beta")
    assert rep.table.loc["only", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
    assert "pooled_mean" not in rep.to_markdown()  # no empty pooled columns


def test_one_stratum_with_trials_among_empty_ones_skips_pooling():
    rep = evaluate(Counts.from_arrays([3, 0], [50, 0], strata=["a", "b"]), random_seed=0)
    assert rep.posterior is None
    assert _flags(rep, "b") == {"empty"}


# -- flags, each on a constructed case with a known answer ---------------------------------------
def _table(rows):
    cols = ["lower", "upper", "pooled_lower", "pooled_upper", "shrinkage"]
    return pd.DataFrame(rows, columns=cols, index=pd.Index(list("abcd")[: len(rows)]))


def _findings(table, flagged=None):
    flagged = np.zeros(len(table), bool) if flagged is None else np.asarray(flagged)
    pooled = Pooled(post=object(), flagged=flagged)
    own = (table["lower"].to_numpy(), table["upper"].to_numpy())
    return {f.flag: f.strata for f in model_findings(table, own, pooled)}


def test_estimates_disagree_fires_exactly_when_the_intervals_do_not_overlap():
    table = _table([
        [0.30, 0.80, 0.05, 0.25, 0.9],   # credible interval entirely below: disagree
        [0.30, 0.80, 0.05, 0.50, 0.9],   # overlap, posterior mean may be outside: agree
        [0.01, 0.10, 0.12, 0.20, 0.1],   # credible interval entirely above: disagree
        [0.30, 0.80, 0.80, 0.90, 0.1],   # touching at 0.80: overlap, agree
    ])
    assert _findings(table)["estimates disagree"] == ("a", "c")


def test_strong_shrinkage_needs_half_the_weight_and_half_the_width():
    table = _table([
        [0.2, 0.6, 0.30, 0.39, 0.50],  # shrinkage 0.5, width ratio 0.225: fires
        [0.2, 0.6, 0.30, 0.39, 0.49],  # shrinkage below 0.5: no
        [0.2, 0.6, 0.30, 0.50, 0.90],  # width ratio exactly 0.5: no
        [0.2, 0.6, 0.30, 0.49, 0.99],  # width ratio 0.475: fires
    ])
    assert _findings(table)["strong shrinkage"] == ("a", "d")


def test_model_check_flags_the_strata_the_check_singles_out():
    table = _table([[0.2, 0.6, 0.3, 0.5, 0.1]] * 3)
    assert _findings(table, [False, True, False])["model check"] == ("b",)


def test_flags_end_to_end_match_their_definitions():
    # twenty strata at 5% of 1,000 and one at 6 of 10: pooled far from its own data
    s, n = [50] * 20 + [6], [1000] * 20 + [10]
    rep = evaluate(Counts.from_arrays(s, n), random_seed=0, target_halfwidth=0.02)
    t = rep.table
    lo, hi = proportion_ci(s, n, method="adaptive")
    np.testing.assert_allclose(t["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(t["upper"], hi, rtol=1e-9)
    threshold = 0.05 / len(s)
    for k, row in t.iterrows():
        flags = _flags(rep, k)
        apart = row["pooled_upper"] < row["lower"] or row["pooled_lower"] > row["upper"]
        ratio = (row["pooled_upper"] - row["pooled_lower"]) / (row["upper"] - row["lower"])
        assert ("estimates disagree" in flags) == apart
        assert ("strong shrinkage" in flags) == (row["shrinkage"] >= 0.5 and ratio < 0.5)
        assert ("model check" in flags) == (row["ppc_p"] < threshold)
        assert ("too wide" in flags) == ((hi[k] - lo[k]) / 2 > 0.02)
    assert {"estimates disagree", "strong shrinkage", "model check"} <= _flags(rep, 20)


def test_overlapping_intervals_are_not_flagged_as_disagreeing():
    # eight strata at 5% and one at 6 of 10: the posterior mean (about 0.16) lies outside the
    # Wilson interval [0.31, 0.83], but the credible interval reaches into it
    s, n = [5] * 8 + [6], [100] * 8 + [10]
    rep = evaluate(Counts.from_arrays(s, n), random_seed=0)
    row = rep.table.loc[8]
    assert row["pooled_mean"] < row["lower"] and row["pooled_upper"] >= row["lower"]
    assert "estimates disagree" not in _flags(rep, 8)


# -- header and HTML -------------------------------------------------------------------------------
def test_header_names_version_date_source_metric_level_engine(tmp_path):
    df = pd.DataFrame({"y": [1, 0, 1, 1] * 25, "p": [1, 0, 0, 1] * 25, "g": list("ab") * 50})
    rep = evaluate(df, y_true="y", y_pred="p", strata="g", level=0.9, random_seed=0)
    assert rep.source == "pandas DataFrame (100 rows)" and rep.version == bayeseval.__version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", rep.created)
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    rep2 = evaluate(str(path), y_true="y", y_pred="p", strata="g", random_seed=0)
    assert rep2.source == str(path)
    for text in (str(rep), rep.to_html(plot=False), rep.to_markdown()):
        for piece in (bayeseval.__version__, rep.created, "pandas DataFrame (100 rows)",
                      "error_rate", "90%", "exact"):
            assert piece in text
    assert evaluate(Counts.from_arrays([1, 2], [9, 9]), source="db.table x",
                    random_seed=0).source == "db.table x"
    with pytest.raises(TypeError, match=r"source must be a string or None, got 3"):
        evaluate(Counts.from_arrays([1, 2], [9, 9]), source=3)


def test_html_table_scrolls_and_groups_columns_estimate_pooled_checks():
    rep = evaluate(Counts.from_arrays([3, 5, 0], [40, 50, 20], strata=list("abc")),
                   target_halfwidth=0.05, random_seed=0)
    text = rep.to_html(plot=False)
    assert "<div class='bv-scroll'><table class='bv-strata'>" in text
    assert ".bayeseval-report .bv-scroll{overflow-x:auto" in text
    groups = re.findall(r"<th class='g gs' colspan='(\d+)'>(\w+)</th>", text)
    shown = display_table(rep).columns
    raw = [c for c in ("successes", "trials", "rate", "lower", "upper", "halfwidth",
                       "sample_share", "weight") if c in shown]
    assert groups == [(str(len(raw)), "estimate"), ("4", "pooled"), ("3", "checks")]
    cells = re.findall(r"<th(?: class=gs| class=f)? title='[^']*'>([\w<>]+)</th>", text)
    names = [n.replace("<wbr>", "") for n in cells]  # long names may break after "_"
    assert names == raw + ["pooled_mean", "pooled_lower", "pooled_upper", "shrinkage",
                           "ppc_p", "extra_needed", "flags"]


def test_saved_html_page_is_styled_and_self_contained(tmp_path):
    rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"]), random_seed=0)
    text = rep.save(tmp_path / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "name='viewport'" in text
    assert "body{" in text and "data:image/png;base64," in text
    assert not re.search(r"(src|href)=['\"]https?:", text)  # nothing fetched from a network


# -- export -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rep():
    return evaluate(Counts.from_arrays([3, 5, 0], [40, 50, 30], strata=["a_1", "b&c", "d%"]),
                    random_seed=0)


def test_save_csv_reads_back(rep, tmp_path):
    back = pd.read_csv(rep.save(tmp_path / "r.csv"), keep_default_na=False)
    assert back["stratum"].tolist() == ["a_1", "b&c", "d%"]
    assert back["successes"].tolist() == [3, 5, 0] and back["trials"].tolist() == [40, 50, 30]
    lo, hi = proportion_ci([3, 5, 0], [40, 50, 30], method="adaptive")
    np.testing.assert_allclose(back["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(back["upper"], hi, rtol=1e-9)
    assert back["flags"].tolist() == rep.table["flags"].tolist()


def test_save_json_reads_back(rep, tmp_path):
    back = json.loads(rep.save(tmp_path / "r.json").read_text())
    assert [r["stratum"] for r in back["strata"]] == ["a_1", "b&c", "d%"]
    assert [r["successes"] for r in back["strata"]] == [3, 5, 0]
    assert back["overall"]["unweighted"]["estimate"] == pytest.approx(8 / 120)


def test_save_tex_reads_back_with_escaped_names(rep, tmp_path):
    text = rep.save(tmp_path / "r.tex").read_text()
    assert text.count("\\begin{tabular}") == 2 and text.count("\\end{tabular}") == 2
    rows = [ln.removesuffix(" \\\\").split(" & ") for ln in text.splitlines()
            if ln.endswith(" \\\\")]
    header, body = rows[0], rows[1:4]
    assert [r[0] for r in body] == ["a\\_1", "b\\&c", "d\\%"]
    assert [int(r[header.index("successes")]) for r in body] == [3, 5, 0]
    lo, _ = proportion_ci([3, 5, 0], [40, 50, 30], method="adaptive")
    got = [float(r[header.index("lower")]) for r in body]
    np.testing.assert_allclose(got, np.round(lo, 4), atol=1e-12)
    assert rows[4] == ["estimand", "estimate", "lower", "upper"]
    assert rows[5][0] == "unweighted" and float(rows[5][1]) == pytest.approx(8 / 120, abs=5e-5)


def test_save_xlsx_without_an_engine_names_the_missing_engines(rep, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("openpyxl", "xlsxwriter") else real(name, *a))
    with pytest.raises(ValueError, match=r"\.xlsx needs an Excel engine: neither openpyxl nor "
                                         r"xlsxwriter is installed"):
        rep.save(tmp_path / "r.xlsx")
    assert not (tmp_path / "r.xlsx").exists()


def test_save_xlsx_reads_back(rep, tmp_path):
    pytest.importorskip("openpyxl")  # optional: not a dependency of bayeseval
    path = rep.save(tmp_path / "r.xlsx")
    sheets = pd.read_excel(path, sheet_name=None, keep_default_na=False)
    assert list(sheets) == ["strata", "overall", "checks", "findings"]
    assert sheets["strata"]["successes"].tolist() == [3, 5, 0]
    assert sheets["strata"]["stratum"].tolist() == ["a_1", "b&c", "d%"]
    assert sheets["findings"]["message"].tolist() == [f.message for f in rep.findings]


def test_save_refuses_an_unknown_suffix_naming_the_path(rep, tmp_path):
    with pytest.raises(ValueError, match=r"path must end in .*\.tex.*got '.*r\.pdf'"):
        rep.save(tmp_path / "r.pdf")


