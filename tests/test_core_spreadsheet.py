"""Spreadsheet-safe writers: openpyxl cell types and CSV neutralisation (OWASP CSV injection)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from bayeseval._core.spreadsheet import csv_safe_frame, write_xlsx

openpyxl = pytest.importorskip("openpyxl")

RISKY = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\t=1", " =1"]


def test_workbook_text_cells_are_text_and_numbers_numbers(tmp_path):
    frame = pd.DataFrame({"name": RISKY + ["plain"], "x": [-1.5, 2, -3, 4, 5, 6, np.nan],
                          "ok": [True] * 7})
    p = write_xlsx(tmp_path / "t.xlsx", {"strata": frame, "more": frame.iloc[:2]})
    wb = openpyxl.load_workbook(p)
    assert wb.sheetnames == ["strata", "more"]
    ws = wb["strata"]
    for r, text in enumerate(RISKY + ["plain"], start=2):
        assert ws.cell(r, 1).data_type == "s" and ws.cell(r, 1).value == text
    assert [ws.cell(r, 2).value for r in range(2, 8)] == [-1.5, 2, -3, 4, 5, 6]
    assert ws.cell(8, 2).value is None and ws.cell(2, 3).value is True


def test_csv_cells_starting_like_formulas_get_a_quote():
    frame = pd.DataFrame({"name": RISKY + ["plain", "a=b"], "x": [-1.0] * 8, "id": ["=id"] * 8})
    safe = csv_safe_frame(frame, keep=["id"])
    out = pd.read_csv(io.StringIO(safe.to_csv(index=False)), keep_default_na=False)
    assert out["name"].tolist()[:5] == ["'" + t for t in RISKY[:5]]
    assert out["name"].tolist()[5] == " =1"  # a leading space is not a formula
    assert csv_safe_frame(pd.DataFrame({"c": ["\r=1"]}))["c"].tolist() == ["'\r=1"]
    assert out["name"].tolist()[-2:] == ["plain", "a=b"]
    assert out["x"].tolist() == [-1.0] * 8  # a negative number is not text
    assert out["id"].tolist() == ["=id"] * 8  # columns kept as they are
    assert frame["name"].tolist()[0] == RISKY[0]  # the input is not modified
