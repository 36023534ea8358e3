"""Impact-ratio reports (``bayeseval.fairness.impact``): counts, rates and ratios against hand counts,
the worked example of the DCWP rules, the interval's coverage by seeded simulation, the
files written (openpyxl cell types, BeautifulSoup reading of the HTML).
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from bayeseval import impact_ratio_report
from bayeseval.fairness.impact import impact_ratio_interval, table_name


def _hand_count(df, cols):
    """Applicants and selections per category, counted row by row in plain Python."""
    n, s = Counter(), Counter()
    for row in df[cols + ["low_risk"]].itertuples(index=False):
        key = tuple(row[:-1])
        if any(pd.isna(k) for k in key):
            continue
        n[key] += 1
        s[key] += row[-1]
    return n, s


def _dcwp_scoring_example():
    """Applicants of the scoring example of 6 RCNY 5-301(c) ("culture fit").

    The sex table and five race/ethnicity rows are the rule's; the rule's last two
    race/ethnicity rows (36 applicants, 20 above the median, so that 84 of 168 score above
    it) are constructed here, with rates below the highest so that they change no ratio.
    """
    race = [
        ("Hispanic or Latino", 28, 18),
        ("White (Not Hispanic or Latino)", 40, 15),
        ("Black or African American (Not Hispanic or Latino)", 32, 16),
        ("Native Hawaiian or Pacific Islander (Not Hispanic or Latino)", 8, 5),
        ("Asian (Not Hispanic or Latino)", 24, 10),
        ("Native American or Alaska Native (Not Hispanic or Latino)", 12, 6),
        ("Two or More Races (Not Hispanic or Latino)", 24, 14),
    ]
    rows = [(r, above) for r, n, k in race for above in [1] * k + [0] * (n - k)]
    above = [r for r in rows if r[1] == 1]
    below = [r for r in rows if r[1] == 0]
    sex = {}  # 50 of the 84 above the median and 42 of the 84 below are men: 92 men, 76 women
    for i, r in enumerate(above):
        sex[id(r)] = "Male" if i < 50 else "Female"
    for i, r in enumerate(below):
        sex[id(r)] = "Male" if i < 42 else "Female"
    score = {id(r): 100 + i for i, r in enumerate(above)} | {id(r): i for i, r in enumerate(below)}
    return pd.DataFrame(
        {"sex": [sex[id(r)] for r in rows], "race": [r[0] for r in rows], "culture_fit": [score[id(r)] for r in rows]}
    )


@pytest.fixture(scope="module")
def filed(compas_impact):
    df = compas_impact.copy()
    df.loc[df.index[:3], "race"] = '=HYPERLINK("x")'  # a category a spreadsheet would run
    return impact_ratio_report(
        df,
        groups=["race", "sex"],
        selected="low_risk",
        auditor="A. Auditor",
        source="ProPublica COMPAS",
        explanation="risk ratings",
        test_data=None,
        date="2024-05-01",
    )


def test_counts_rates_and_ratios_match_a_hand_count_on_compas(compas_impact):
    rep = impact_ratio_report(compas_impact, groups=["race", "sex"], selected="low_risk", date="2024-05-01")
    for cols, name in ((["race"], "race"), (["sex"], "sex"), (["race", "sex"], "race x sex")):
        n, s = _hand_count(compas_impact, cols)
        top = max(s[k] / n[k] for k in n)
        got = rep.table[rep.table["table"] == name]
        assert len(got) == len(n)
        for _, row in got.iterrows():
            key = tuple(row[c] for c in cols)
            assert row["applicants"] == n[key] and row["successes"] == s[key]
            assert row["rate"] == pytest.approx(s[key] / n[key], abs=1e-12)
            assert row["impact_ratio"] == pytest.approx(s[key] / n[key] / top, abs=1e-12)
    # a few figures read off ProPublica's data by hand: 3,696 African-American defendants,
    # 1,522 of them rated Low; Asian women: 2 of 2 rated Low, the highest intersection rate
    race = rep.tables["race"].set_index("race")
    assert race.loc["African-American", ["applicants", "successes"]].tolist() == [3696, 1522]
    inter = rep.tables["race x sex"].set_index(["race", "sex"])
    assert inter.loc[("Asian", "Female"), "impact_ratio"] == 1.0


def test_the_dcwp_scoring_example_is_reproduced():
    df = _dcwp_scoring_example()
    rep = impact_ratio_report(df, groups=["sex", "race"], score="culture_fit", date="2023-07-05")
    sex = rep.tables["sex"].set_index("sex")
    # the rule's table: Male 92, 54.3%, 1.00; Female 76, 44.7%, 0.82
    assert sex.loc["Male", "applicants"] == 92 and sex.loc["Female", "applicants"] == 76
    assert round(100 * sex.loc["Male", "rate"], 1) == 54.3 and round(100 * sex.loc["Female", "rate"], 1) == 44.7
    assert sex["impact_ratio"].round(2).to_dict() == {"Female": 0.82, "Male": 1.0}
    race = rep.tables["race"].set_index("race")
    official = {
        "Hispanic or Latino": (28, 64.2, 1.00),
        "White (Not Hispanic or Latino)": (40, 37.5, 0.58),
        "Black or African American (Not Hispanic or Latino)": (32, 50.0, 0.78),
        "Native Hawaiian or Pacific Islander (Not Hispanic or Latino)": (8, 62.5, 0.97),
        "Asian (Not Hispanic or Latino)": (24, 41.7, 0.65),
    }
    for name, (n, rate, ratio) in official.items():
        assert race.loc[name, "applicants"] == n
        # the rule prints 18/28 = 64.29% as 64.2% (cut, not rounded): compare to 0.1 point
        assert abs(100 * race.loc[name, "rate"] - rate) <= 0.1
        assert round(race.loc[name, "impact_ratio"], 2) == ratio
    assert rep.fields["median_score"] == pytest.approx((83 + 100) / 2)


def test_rows_with_a_missing_group_value_are_counted_as_unknown(compas_impact):
    df = compas_impact.copy()
    df.loc[df.index[::37], "race"] = None
    df.loc[df.index[5::101], "sex"] = np.nan
    rep = impact_ratio_report(df, groups=["race", "sex"], selected="low_risk")
    unknown = dict(zip(rep.unknown["table"], rep.unknown["unknown"], strict=True))
    no_race, no_sex = df["race"].isna(), df["sex"].isna()
    assert unknown == {"race": no_race.sum(), "sex": no_sex.sum(), "race x sex": (no_race | no_sex).sum()}
    for name, count in unknown.items():
        assert rep.tables[name]["applicants"].sum() + count == len(df)


def test_exclusion_leaves_small_categories_out_of_the_ratios_but_shows_them(compas_impact):
    with pytest.raises(ValueError, match="justification"):
        impact_ratio_report(compas_impact, groups="race", selected="low_risk", exclude_below=0.02)
    rep = impact_ratio_report(
        compas_impact,
        groups=["race", "sex"],
        selected="low_risk",
        exclude_below=0.02,
        justification="under 2% of the rows",
    )
    inter = rep.tables["race x sex"]
    n, s = _hand_count(compas_impact, ["race", "sex"])
    small = {k for k in n if n[k] < 0.02 * len(compas_impact)}
    assert {(r, x) for r, x in inter.loc[inter["excluded"], ["race", "sex"]].itertuples(index=False)} == small
    top = max(s[k] / n[k] for k in n if k not in small)
    for _, row in inter.iterrows():
        key = (row["race"], row["sex"])
        assert row["applicants"] == n[key] and row["rate"] == pytest.approx(s[key] / n[key])
        if key in small:
            assert np.isnan(row["impact_ratio"]) and row["verdict"].startswith("excluded")
        else:
            assert row["impact_ratio"] == pytest.approx(s[key] / n[key] / top)
    assert rep.fields["justification"] == "under 2% of the rows"


def test_three_group_columns_give_every_intersection_and_odd_names_stay_whole():
    df = pd.DataFrame(
        {"a x b": list("pq") * 30, "c": list("rrs") * 20, "d": [1, 2, 3, 4, 5, 6] * 10, "sel": [1, 0, 0, 1, 1] * 12}
    )
    rep = impact_ratio_report(df, groups=["a x b", "c", "d"], selected="sel")
    assert list(rep.tables) == [
        ("a x b",),
        ("c",),
        ("d",),
        ("a x b", "c"),
        ("a x b", "d"),
        ("c", "d"),
        ("a x b", "c", "d"),
    ]
    assert list(rep.fields["tables"]) == ['"a x b"', "c", "d", '"a x b" x c', '"a x b" x d', "c x d", '"a x b" x c x d']
    assert rep.fields["tables"]['"a x b" x c'] == ["a x b", "c"]
    # each intersection's applicants add up to all rows, its categories are the observed ones
    for cols, frame in rep.tables.items():
        cols = list(cols)
        assert frame["applicants"].sum() == len(df)
        assert len(frame) == len(df.drop_duplicates(cols))


def test_scoring_rate_uses_the_median_of_every_row():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"g": rng.choice(["a", "b", None], 301), "score": rng.normal(size=301)})
    rep = impact_ratio_report(df, groups="g", score="score")
    median = float(np.median(df["score"]))  # every row, the unknown-category ones included
    assert rep.fields["median_score"] == pytest.approx(median)
    table = rep.tables["g"].set_index("g")
    for g in ("a", "b"):
        rows = df[df["g"] == g]
        assert table.loc[g, "successes"] == int((rows["score"] > median).sum())
    assert rep.unknown["unknown"].iloc[0] == int(df["g"].isna().sum())
    flat = impact_ratio_report(df.assign(score=1.0), groups="g", score="score")  # nobody above
    assert flat.table["verdict"].str.startswith("undefined").all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"selected": "low_risk", "score": "decile_score"}, "exactly one of selected"),
        ({}, "exactly one of selected"),
        ({"selected": "decile_score"}, "0/1"),
        ({"selected": "nope"}, "'nope' is not in data"),
        ({"selected": "low_risk", "exclude_below": 1.5, "justification": "x"}, "exclude_below"),
        ({"selected": "low_risk", "date": "May 2024"}, "date"),
    ],
)
def test_bad_input_names_the_argument(compas_impact, kwargs, match):
    with pytest.raises(ValueError, match=match):
        impact_ratio_report(compas_impact, groups="race", **kwargs)


def test_rows_that_would_decide_an_undecided_verdict_do_decide_it():
    df = pd.DataFrame({"g": ["a"] * 40 + ["b"] * 60, "sel": [1] * 12 + [0] * 28 + [1] * 30 + [0] * 30})
    row = impact_ratio_report(df, groups="g", selected="sel").tables["g"].iloc[0]
    assert row["verdict"].startswith("undecided, about") and row["more_rows"] > 0
    s, n = np.array([12.0, 30.0]), np.array([40.0, 60.0])
    grow = lambda rows: 1 + rows / 100  # noqa: E731 (same mix and rates, ``rows`` more in all)
    _, lo, hi = impact_ratio_interval(s * grow(row["more_rows"]), n * grow(row["more_rows"]))
    assert hi[0] < 0.8  # decided (below 0.8) with the rows the verdict names
    _, lo, hi = impact_ratio_interval(s * grow(0.8 * row["more_rows"]), n * grow(0.8 * row["more_rows"]))
    assert hi[0] >= 0.8  # and not with a fifth fewer


def test_a_ratio_at_the_threshold_is_never_decided():
    df = pd.DataFrame({"g": ["a"] * 100 + ["b"] * 100, "sel": [1] * 40 + [0] * 60 + [1] * 50 + [0] * 50})
    rep = impact_ratio_report(df, groups="g", selected="sel")
    row = rep.tables["g"].iloc[0]
    assert row["impact_ratio"] == pytest.approx(0.8)
    assert row["verdict"] == "undecided, at the observed rates no number of rows would decide it"
    assert pd.isna(row["more_rows"])
    assert any(line.rstrip().endswith("undecided") for line in rep.to_text().splitlines())


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([1, 2], [3]), "one shape"),
        (([4, 2], [3, 3]), "0 <= successes <= trials"),
        (([1, 2], [0, 3]), "trials > 0"),
        ((["a", "b"], [3, 3]), "successes must be numeric"),
    ],
)
def test_interval_refuses_bad_counts(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        impact_ratio_interval(*args)


def test_verdicts_read_the_interval(compas_impact):
    t = impact_ratio_report(compas_impact, groups=["race", "sex"], selected="low_risk").table
    kept = t[~t["excluded"]]
    below = kept["upper"] < 0.8
    above = kept["lower"] >= 0.8
    assert (kept.loc[below, "verdict"] == "below 0.8").all()
    assert (kept.loc[above, "verdict"] == "not below 0.8").all()
    assert kept.loc[~below & ~above, "verdict"].str.startswith("undecided").all()
    assert ((kept["lower"] <= kept["impact_ratio"] + 1e-12) | (kept["impact_ratio"] == 1)).all()


def test_html_report_holds_every_table_and_field(filed, tmp_path):
    bs4 = pytest.importorskip("bs4")
    soup = bs4.BeautifulSoup(filed.save(tmp_path / "r.html").read_text(), "html.parser")
    assert not soup.find_all(["script", "link"])  # self-contained
    fields = {tr.th.get_text(): tr.td.get_text() for tr in soup.select("table.bv-fields tr")}
    assert fields["Auditor"] == "A. Auditor" and fields["Date of the audit"] == "2024-05-01"
    assert fields["Data source"] == "ProPublica COMPAS" and fields["Package"].startswith("bayeseval ")
    tables = soup.select("table.bv-impact")
    assert len(tables) == 3
    for table, (name, frame) in zip(tables, filed.tables.items(), strict=True):
        body = table.select("tbody tr")
        assert len(body) == len(frame)
        first = [td.get_text() for td in body[0].find_all("td")]
        assert first[len(name)] == f"{frame['applicants'].iloc[0]:,}"
    assert "=HYPERLINK" in soup.get_text()  # shown as text, escaped


def test_xlsx_stores_text_cells_as_text_one_sheet_per_table(filed, tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(filed.save(tmp_path / "r.xlsx"))
    assert wb.sheetnames == ["fields", "race", "sex", "race x sex", "unknown"]
    ws = wb["race"]
    header = [c.value for c in ws[1]]
    assert header[:3] == ["race", "category", "applicants"]
    cells = [ws.cell(row=r, column=1) for r in range(2, ws.max_row + 1)]
    assert all(c.data_type == "s" for c in cells)
    assert '=HYPERLINK("x")' in [c.value for c in cells]
    assert all(isinstance(ws.cell(row=r, column=3).value, int) for r in range(2, ws.max_row + 1))


def test_csv_md_and_json_files(filed, tmp_path):
    csv = pd.read_csv(filed.save(tmp_path / "r.csv"))
    assert len(csv) == len(filed.table) and csv["applicants"].sum() == filed.table["applicants"].sum()
    assert not csv["category"].astype(str).str.startswith("=").any()  # neutralised formula
    md = filed.save(tmp_path / "r.md").read_text()
    assert md.count("\n## ") == 4 and "| race | sex | Applicants |" in md
    data = json.loads(filed.save(tmp_path / "r.json").read_text())
    assert set(data["tables"]) == {"race", "sex", "race x sex"} and data["fields"]["auditor"] == "A. Auditor"
    with pytest.raises(ValueError, match="path must end in"):
        filed.save(tmp_path / "r.pdf")


# -- every table and category has its own identity, whatever the column names and values -------
def _check_tables(rep, df, expected):
    """Each table, found by its columns, holds the counts pandas gives for those columns, and
    every rendering shows as many distinct tables as there are column sets."""
    assert list(rep.tables) == expected
    names = list(rep.fields["tables"])
    assert len(set(names)) == len(expected) == rep.table["table"].nunique() == len(set(rep.unknown["table"]))
    for cols in expected:
        hand = df.groupby(list(cols))["sel"].agg(["size", "sum"])
        got = rep.tables[cols].set_index(list(cols))
        assert got["applicants"].to_dict() == hand["size"].to_dict()
        assert got["successes"].to_dict() == hand["sum"].to_dict()
        assert got["category"].is_unique
    assert len(rep.to_dict()["tables"]) == len(expected)
    assert rep.to_html().count("<table class='bv-strata bv-impact'>") == len(expected)
    titles = [line for line in rep.to_markdown().splitlines() if line.startswith("## ") and "ategories" in line]
    assert len(set(titles)) == len(expected)
    assert len([line for line in rep.to_text(width=200).splitlines() if "ategories: " in line]) == len(expected)


def test_a_column_named_like_an_intersection_is_its_own_table():
    rng = np.random.default_rng(21)
    df = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], 400),
            "race": rng.choice(["A", "B"], 400),
            "sex x race": rng.choice(["u", "v", "w"], 400),
            "sel": rng.integers(0, 2, 400),
        }
    )
    rep = impact_ratio_report(df, groups=["sex", "race", "sex x race"], selected="sel", date="2024-03-01")
    _check_tables(
        rep,
        df,
        [
            ("sex",),
            ("race",),
            ("sex x race",),
            ("sex", "race"),
            ("sex", "sex x race"),
            ("race", "sex x race"),
            ("sex", "race", "sex x race"),
        ],
    )
    # the intersection keeps its plain name; the column alone is quoted
    assert rep.tables["sex x race"] is not None and list(rep.tables["sex x race"].columns[:2]) == ["sex", "race"]
    assert rep.fields["tables"]['"sex x race"'] == ["sex x race"]
    assert 'Categories: "sex x race"' in rep.to_text(width=200)
    with tempfile.TemporaryDirectory() as d:
        book = pytest.importorskip("openpyxl").load_workbook(rep.save(f"{d}/r.xlsx"))
        assert len(book.sheetnames) == 7 + 2


def test_pairs_that_join_alike_and_values_that_join_alike_stay_apart():
    rng = np.random.default_rng(22)
    n = 300
    # ("a x", "b") and ("a", "x b") both joined to "a x x b" by " x "
    df = pd.DataFrame(
        {
            "a x": rng.choice(["0", "1"], n),
            "b": rng.choice(["0", "1"], n),
            "a": rng.choice(["0", "1"], n),
            "x b": rng.choice(["0", "1"], n),
            "sel": rng.integers(0, 2, n),
        }
    )
    rep = impact_ratio_report(df, groups=["a x", "b", "a", "x b"], selected="sel")
    pairs = [("a x", "b"), ("a", "x b")]
    _check_tables(rep, df, [c for r in range(1, 5) for c in itertools.combinations(["a x", "b", "a", "x b"], r)])
    assert table_name(pairs[0]) != table_name(pairs[1])
    # values ("p | q", "r") and ("p", "q | r") both joined to "p | q | r" by " | "
    df2 = pd.DataFrame({"s": ["p | q"] * 30 + ["p"] * 30, "t": ["r"] * 30 + ["q | r"] * 30, "sel": [1, 0, 0] * 20})
    rep2 = impact_ratio_report(df2, groups=["s", "t"], selected="sel")
    inter = rep2.tables[("s", "t")]
    assert len(inter) == 2 and inter["category"].is_unique
    assert inter["applicants"].tolist() == [30, 30]
    assert sorted(inter["category"]) == ['"p | q" | r', 'p | "q | r"']
    text = rep2.to_text(width=200)
    assert all(label in text for label in inter["category"])


def test_impact_ratio_report_refuses_the_designs_it_does_not_take():
    from bayeseval import Design
    from tests.helpers import assert_raises_naming

    df = pd.DataFrame({"sex": ["F"] * 40 + ["M"] * 60, "hired": [1] * 12 + [0] * 28 + [1] * 30 + [0] * 30})
    df["applicant"] = np.arange(len(df)) // 2
    df["w"] = 0.5
    kw = {"groups": "sex", "selected": "hired", "date": "2024-03-01"}
    plain = impact_ratio_report(df, **kw)
    for design in (Design(), {}):
        pd.testing.assert_frame_equal(impact_ratio_report(df, design=design, **kw).table, plain.table)
    df["spans"] = np.arange(len(df)) % 50  # each unit has rows in both categories
    assert_raises_naming(impact_ratio_report, "design.cluster", df, design=Design(cluster="spans"), **kw)
    assert_raises_naming(impact_ratio_report, "design.cluster", df, design=Design(cluster="absent"), **kw)
    assert_raises_naming(impact_ratio_report, "design.population", df, design=Design(population="pool"), **kw)
    assert_raises_naming(impact_ratio_report, "design.inclusion", df, design=Design(inclusion="w"), **kw)
    assert_raises_naming(impact_ratio_report, "design", df, design="cluster", **kw)
