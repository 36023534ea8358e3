"""Tests of the HTML report of many strata: the strata to read first, the full table beside the page."""

from __future__ import annotations

import dataclasses
import html
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest

from bayeseval import Counts, evaluate
from bayeseval._render import report_page
from bayeseval.cli import main as cli

matplotlib.use("Agg")

SHOWN = report_page.MAX_TABLE_STRATA


def _report(k: int, metric: str = "error_rate", seed: int = 0, **kwargs):
    """A report of ``k`` strata with 5 to 60 trials each (many ties in the bounds)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 60, k)
    y = rng.binomial(n, rng.beta(2, 12, k))
    counts = Counts.from_arrays(y, n, strata=[f"s{i:05d}" for i in range(k)], metric=metric)
    return evaluate(counts, random_seed=0, **kwargs)


def _strata_rows(page: str) -> list[str]:
    """The stratum names of the page's strata table, top to bottom."""
    table = page[page.index("<table class='bv-strata'>") :]
    table = table[: table.index("</table>")]
    return [html.unescape(m) for m in re.findall(r"<td class='s'>(.*?)</td>", table)]


def _worst(table: pd.DataFrame, metric: str) -> list[str]:
    """The reference order, by pandas: the bad end of each interval, worst first, ties in table order."""
    if metric == "error_rate":
        order = table.sort_values("upper", ascending=False, kind="stable", na_position="first")
    elif metric == "recall":
        order = table.sort_values("lower", ascending=True, kind="stable", na_position="first")
    else:
        order = table.sort_values("halfwidth", ascending=False, kind="stable", na_position="first")
    return [str(k) for k in order.index]


def _same_table(back: pd.DataFrame, table: pd.DataFrame, rtol: float = 0.0) -> None:
    """``back`` (read from a file) holds ``table``: numbers to ``rtol`` (0: to the float), text with
    empty cells as ""."""
    assert list(back.columns) == list(table.columns)
    assert [str(k) for k in back.index] == [str(k) for k in table.index]
    for col in table.columns:
        want, got = table[col], back[col]
        if pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(want):
            np.testing.assert_allclose(got.to_numpy(dtype=float), want.to_numpy(dtype=float), rtol=rtol, err_msg=col)
        else:
            assert got.fillna("").astype(str).tolist() == want.fillna("").astype(str).tolist(), col


@pytest.fixture(scope="module")
def big():
    return _report(450, target_halfwidth=0.1)


def test_a_page_of_many_strata_shows_the_worst_first_and_links_the_full_table(big, tmp_path):
    page_path = big.save(tmp_path / "x.html", plot=False)
    page = page_path.read_text(encoding="utf-8")
    assert big.metric == "error_rate" and big.higher_is_better is False
    assert _strata_rows(page) == _worst(big.table, "error_rate")[:SHOWN]
    assert f"This page shows {SHOWN} of the 450 strata" in page
    assert "<a href='x.strata.csv'>x.strata.csv</a>" in page
    # the flags counted over every stratum, not only those shown
    too_wide = int(big.table["flags"].str.contains("too wide").sum())
    assert too_wide > 0 and f"too wide {too_wide:,}" in page
    back = pd.read_csv(tmp_path / "x.strata.csv", index_col="stratum")
    _same_table(back, big.table)


@pytest.mark.parametrize(("metric", "higher_is_better"), [("recall", True), ("selection_rate", None)])
def test_the_order_follows_the_bad_side_of_the_metric(metric, higher_is_better):
    rep = _report(230, metric=metric, seed=3)
    assert rep.higher_is_better is higher_is_better
    assert _strata_rows(rep.to_html(plot=False)) == _worst(rep.table, metric)[:SHOWN]


def test_the_warnings_of_a_page_of_many_strata_are_bounded_per_kind(big):
    page = big.to_html(plot=False)
    warned = page[page.index("<ul class='warn'>") :]
    warned = warned[: warned.index("</ul>")]
    per_flag: dict[str, int] = {}
    for f in big.findings:
        if f.severity == "warning" and len(f.strata) == 1:
            per_flag[f.flag] = per_flag.get(f.flag, 0) + 1
    many = {f: k for f, k in per_flag.items() if k > report_page.MAX_WARNINGS_PER_FLAG}
    assert many, "the fixture should have many per-stratum warnings"
    for flag, k in many.items():
        assert f"{k - report_page.MAX_WARNINGS_PER_FLAG:,} more {flag!r}" in html.unescape(warned)
    shown = warned.count("<li>")
    assert shown == len(big.warnings) - sum(k - report_page.MAX_WARNINGS_PER_FLAG for k in many.values()) + 1
    # a page of every stratum lists every warning
    small = _report(50, target_halfwidth=0.1)
    assert small.to_html(plot=False).count("<li>") >= len(small.warnings)
    assert "more 'too wide'" not in small.to_html(plot=False)


def test_the_forest_plot_of_many_strata_is_of_the_worst_ones(big):
    rows = _worst(big.table, "error_rate")[: report_page.WORST_PLOT_STRATA]
    reference = dataclasses.replace(big, table=big.table.loc[rows]).forest_png()
    assert big._page_forest_png() == reference
    page = big.to_html(plot=True)
    assert f"Forest plot of {report_page.WORST_PLOT_STRATA} of the 450 strata, by the upper bound" in page


def test_a_page_of_up_to_200_strata_shows_every_stratum_and_writes_no_table(tmp_path):
    rep = _report(SHOWN)
    page = rep.save(tmp_path / "x.html", plot=False).read_text(encoding="utf-8")
    assert _strata_rows(page) == [str(k) for k in rep.table.index]
    assert "This page shows" not in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.html"]


def test_table_path_chooses_the_full_table_file(big, tmp_path):
    (tmp_path / "sub").mkdir()
    page = big.save(tmp_path / "r.htm", plot=False, table_path=tmp_path / "sub" / "all strata.xlsx")
    text = page.read_text(encoding="utf-8")
    assert "<a href='sub/all%20strata.xlsx'>" in text
    back = pd.read_excel(tmp_path / "sub" / "all strata.xlsx", sheet_name="strata", index_col="stratum")
    _same_table(back, big.table, rtol=1e-14)  # a spreadsheet stores 15 significant digits


def test_table_path_is_checked(big, tmp_path):
    with pytest.raises(ValueError, match=r"table_path must end in \.csv or \.xlsx"):
        big.save(tmp_path / "r.html", table_path=tmp_path / "t.json")
    with pytest.raises(TypeError, match="table_path must be a path"):
        big.save(tmp_path / "r.html", table_path=3)
    assert not any(tmp_path.iterdir())


def test_the_command_line_writes_the_full_table_beside_its_page(tmp_path, capsys):
    rng = np.random.default_rng(5)
    k, per = 230, 12
    data = pd.DataFrame({"g": np.repeat([f"g{i:03d}" for i in range(k)], per), "y": rng.integers(0, 2, k * per)})
    data["p"] = np.where(rng.random(k * per) < 0.2, 1 - data["y"], data["y"])
    data.to_csv(tmp_path / "rows.csv", index=False)
    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()
    argv = ["report", str(tmp_path / "rows.csv"), "--y-true", "y", "--y-pred", "p", "--strata", "g"]
    assert cli.main([*argv, "--out", str(out), "--seed", "0", "--json"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.html", "r.strata.csv"]
    assert "<a href='r.strata.csv'>r.strata.csv</a>" in out.read_text(encoding="utf-8")
    back = pd.read_csv(out.parent / "r.strata.csv")
    assert back["g"].tolist() == [f"g{i:03d}" for i in range(k)]
    assert back["trials"].tolist() == [per] * k


@pytest.mark.slow
def test_a_page_of_20000_strata(tmp_path):
    rep = _report(20_000, target_halfwidth=0.05)
    page = rep.save(tmp_path / "x.html").read_text(encoding="utf-8")
    assert _strata_rows(page) == _worst(rep.table, "error_rate")[:SHOWN]
    assert f"This page shows {SHOWN} of the 20,000 strata" in page
    assert "<a href='x.strata.csv'>x.strata.csv</a>" in page
    assert len(page) < 1_000_000
    _same_table(pd.read_csv(tmp_path / "x.strata.csv", index_col="stratum"), rep.table)


def _md_strata(doc: str) -> list[str]:
    """The stratum names of a Markdown report's strata table, top to bottom."""
    body = doc[: doc.index("## Overall rate")]
    return [
        ln.split(" | ")[0][2:] for ln in body.splitlines() if ln.startswith("| ") and not ln.startswith("| stratum")
    ]


def _text_strata(doc: str) -> list[str]:
    """The stratum names of the terminal report's table (the first word of each row)."""
    body = doc[: doc.index("Overall rate:")].strip().splitlines()
    start = next(i for i, ln in enumerate(body) if ln.startswith("stratum"))
    return [ln.split()[0] for ln in body[start + 1 :] if ln.strip()]


def test_text_and_markdown_of_many_strata_show_the_worst_first_and_bound_the_warnings(big, tmp_path):
    want = _worst(big.table, "error_rate")[:SHOWN]
    doc = big.save(tmp_path / "x.md").read_text(encoding="utf-8")
    assert _md_strata(doc) == want
    assert f"This report shows {SHOWN} of the 450 strata" in doc
    assert "x.strata.csv, beside this file" in doc
    _same_table(pd.read_csv(tmp_path / "x.strata.csv", index_col="stratum"), big.table)
    text = str(big)
    assert _text_strata(text) == want
    assert f"This report shows {SHOWN} of the 450 strata" in text and "save('strata.csv')" in text
    # per-stratum warnings: at most MAX_WARNINGS_PER_FLAG of each kind, then how many more
    per_flag: dict[str, int] = {}
    for f in big.findings:
        if f.severity == "warning" and len(f.strata) == 1:
            per_flag[f.flag] = per_flag.get(f.flag, 0) + 1
    left = {
        f: k - report_page.MAX_WARNINGS_PER_FLAG for f, k in per_flag.items() if k > report_page.MAX_WARNINGS_PER_FLAG
    }
    assert "too wide" in left
    for flag, k in left.items():
        assert f"{k:,} more {flag!r}" in text and f"{k:,} more {flag!r}" in doc.replace("&#x27;", "'")
    assert text.count("  ! ") == len(big.warnings) - sum(left.values()) + 1


def test_text_and_markdown_of_up_to_200_strata_list_every_stratum(tmp_path):
    rep = _report(SHOWN, target_halfwidth=0.1)
    assert _md_strata(rep.save(tmp_path / "x.md").read_text(encoding="utf-8")) == [str(k) for k in rep.table.index]
    assert _text_strata(str(rep)) == [str(k) for k in rep.table.index]
    assert "This report shows" not in str(rep)
    assert str(rep).count("  ! ") == len(rep.warnings)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.md"]
