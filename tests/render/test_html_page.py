"""HTML tables of the reports: counts without decimals, no column or table without content."""

from __future__ import annotations

import numpy as np
import pandas as pd
from bs4 import BeautifulSoup

from bayeseval._render.html_page import html_table, page


def _cells(text):
    soup = BeautifulSoup(text, "html.parser")
    head = [th.text for th in soup.find("thead").find_all("tr")[-1].find_all("th")]
    return head, [[td.text for td in tr.find_all("td")] for tr in soup.find("tbody").find_all("tr")]


def test_integer_columns_render_without_decimals():
    frame = pd.DataFrame(
        {
            "trials": np.array([225, 12]),
            "cost": [225.0, 2.5],
            "rate": [0.25, 1 / 3],
            "share": [1.0, 0.0],
            "done": [True, False],
        },
        index=["a", "b<c"],
    )
    head, rows = _cells(html_table(frame, counts={"cost"}))
    assert head == ["stratum", "trials", "cost", "rate", "share", "done"]
    assert rows == [["a", "225", "225", "0.2500", "1.0000", "yes"], ["b<c", "12", "2.5", "0.3333", "0.0000", "no"]]


def test_no_all_missing_column_or_table():
    frame = pd.DataFrame({"rows": [0, 0], "kappa": [np.nan, np.nan], "method": [None, None]}, index=["a", "b"])
    head, _ = _cells(html_table(frame))
    assert head == ["stratum", "rows"]
    assert html_table(frame[["kappa", "method"]]) == "" and html_table(frame.iloc[:0]) == ""


def test_groups_head_the_columns_they_name():
    frame = pd.DataFrame({"lower": [0.1], "labelled": [3], "other": ["x"]}, index=["a"])
    soup = BeautifulSoup(
        page("t", html_table(frame, groups=[("labels", ["labelled"]), ("estimate", ["lower"])])), "html.parser"
    )
    assert [th.text for th in soup.find("thead").find_all("tr")[0].find_all("th")] == [
        "stratum",
        "labels",
        "estimate",
        "",
    ]
    assert [th.text for th in soup.find("thead").find_all("tr")[1].find_all("th")] == ["labelled", "lower", "other"]
