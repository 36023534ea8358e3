"""The campaign's HTML report: the evaluation report's page, counts without decimals, no empty table."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup

from bayeseval.campaign import Annotation, Budget, Campaign
from bayeseval.campaign.report import campaign_report_html

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def _pool(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["north", "south", "east"], n)
    pred = rng.integers(0, 2, n)
    wrong = rng.random(n) < np.where(g == "south", 0.15, 0.06)
    pool = pd.DataFrame({"g": g, "pred": pred}, index=pd.RangeIndex(n, name="rid"))
    return pool, pd.Series(np.where(wrong, 1 - pred, pred), index=pool.index)


def _tables(text):
    """Heading -> (column names, rows of cell texts) of every table of the page."""
    soup = BeautifulSoup(text, "html.parser")
    out = {}
    for table in soup.find_all("table"):
        heading = table.find_previous("h2").text
        head = [th.text for th in table.find("thead").find_all("tr")[-1].find_all("th")]
        if len(table.find("thead").find_all("tr")) > 1:  # grouped: the index heading spans both rows
            head = [table.find("thead").find("th").text, *head]
        rows = [[td.text for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")]
        out[heading] = (head, rows)
    return out, soup


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    pool, truth = _pool()
    c = Campaign.create(
        tmp_path_factory.mktemp("r") / "c.db",
        pool,
        strata="g",
        y_pred="pred",
        random_seed=0,
        budget=Budget(costs={"south": 2.5}),
    )
    for _ in range(3):
        batch = c.propose(75)
        c.ingest(truth.loc[batch.index])
    text = campaign_report_html(c, plots=False)
    status, labels = c.status(), c.labels()
    c.close()
    return text, status, labels, pool


def test_report_is_the_evaluation_reports_page(report):
    text, *_ = report
    soup = BeautifulSoup(text, "html.parser")
    style = soup.find("style").text
    assert ".bayeseval-report" in style and "border-collapse" in style  # the shared style sheet
    assert soup.find("div", class_="bayeseval-report") is not None
    for table in soup.find_all("table"):  # every table scrolls inside its box, in the shared style
        assert table.parent.get("class") == ["bv-scroll"] and "bv-strata" in table.get("class")


def test_counts_print_as_integers_and_match_the_labels(report):
    text, status, labels, pool = report
    tables, _ = _tables(text)
    head, rows = tables["Strata: status and labels still needed"]
    by = {row[0]: dict(zip(head, row, strict=True)) for row in rows}
    g = pool.loc[labels.index, "g"]
    for stratum, n in g.value_counts().items():  # counted by hand from the stored labels
        assert by[stratum]["labelled"] == str(n)
        assert by[stratum]["pool_rows"] == str(int((pool["g"] == stratum).sum()))
        cost = n * (2.5 if stratum == "south" else 1.0)  # the example: cost 225.0 printed 225.0000
        assert by[stratum]["cost"] == (str(int(cost)) if cost.is_integer() else f"{cost:g}")
    whole = ["pool_rows", "labelled", "pending", "trials", "successes", "forecast"]
    for row in by.values():
        assert all("." not in row[c] for c in whole), row
        assert "." in row["mean"] and len(row["lower"].split(".")[1]) == 4  # rates keep 4 decimals
    progress = tables["Progress over rounds (labels per stratum)"][1]
    assert all(cell.isdigit() for row in progress for cell in row[1:])
    facts = BeautifulSoup(text, "html.parser").find("ul", class_="bv-meta").text
    assert "(cost " in facts and ".0000" not in facts


def test_no_table_without_content(report, tmp_path):
    text, *_ = report
    _, soup = _tables(text)
    assert "Agreement between annotators" not in text  # one annotator: no agreement table
    for table in soup.find_all("table"):
        cells = [td.text.strip() for td in table.find_all("td")]
        assert any(c and c not in ("None", "nan") for c in cells[1:])
        for tr in table.find("tbody").find_all("tr"):
            assert "None" not in [td.text for td in tr.find_all("td")]
    # annotations of one annotator per row: a note, not a table of missing kappas
    pool, truth = _pool(n=600, seed=1)
    c = Campaign.create(
        tmp_path / "a.db", pool, strata="g", y_pred="pred", random_seed=0, annotation=Annotation(annotators=2)
    )
    batch = c.propose(10)
    c.ingest(
        pd.DataFrame({"rid": batch.index, "annotator": "x", "label": truth.loc[batch.index].to_numpy()}),
        id_column="rid",
        annotator_column="annotator",
    )
    assert not c.agreement()["kappa"].notna().any()
    page = campaign_report_html(c, plots=False)
    c.close()
    tables, _ = _tables(page)
    assert "Agreement between annotators" not in tables and "No row has two annotations yet" in page


def test_status_text_prints_counts_and_costs_without_decimals(tmp_path, capsys):
    from bayeseval.cli.main import main

    pool, truth = _pool(n=600, seed=2)
    path = tmp_path / "pool.csv"
    pool.reset_index().to_csv(path, index=False)
    db = str(tmp_path / "c.db")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(path),
                "--id-column",
                "rid",
                "--strata",
                "g",
                "--y-pred",
                "pred",
                "--costs",
                "south=2.5",
                "--db",
                db,
                "--seed",
                "1",
            ]
        )
        == 0
    )
    assert main(["campaign", "propose", "--db", db, "--batch-size", "40", "--out", str(tmp_path / "b.csv")]) == 0
    batch = pd.read_csv(tmp_path / "b.csv")
    batch["label"] = truth.loc[batch["rid"]].to_numpy()
    batch.to_csv(tmp_path / "b.csv", index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(tmp_path / "b.csv")]) == 0
    capsys.readouterr()
    assert main(["campaign", "status", "--db", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    # columns are right-aligned under their names, and a cell may hold a space ("not met")
    ends = [(m.group(), m.end()) for m in re.finditer(r"\S+", lines[0])]
    starts = [0] + [end for _, end in ends[:-1]]
    rows = {
        line.split()[0]: {name: line[start:end].strip() for (name, end), start in zip(ends, starts, strict=True)}
        for line in lines[2:5]
    }
    n = pool.loc[batch["rid"], "g"].value_counts()
    for stratum, row in rows.items():
        assert row["labelled"] == str(n.get(stratum, 0)) and "." not in row["pool_rows"]
        cost = n.get(stratum, 0) * (2.5 if stratum == "south" else 1.0)
        assert row["cost"] == (str(int(cost)) if float(cost).is_integer() else f"{cost:g}")
    total = sum(n.get(s, 0) * (2.5 if s == "south" else 1.0) for s in n.index)
    assert f"(cost {total:g})" in lines[-1]
