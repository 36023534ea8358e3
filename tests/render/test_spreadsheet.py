"""Spreadsheet-safe writers: openpyxl cell types and CSV neutralisation (OWASP CSV injection)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from bayeseval._render.spreadsheet import csv_safe_frame, write_xlsx

openpyxl = pytest.importorskip("openpyxl")


RISKY = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\t=1", " =1"]


def test_workbook_text_cells_are_text_and_numbers_numbers(tmp_path):
    frame = pd.DataFrame({"name": RISKY + ["plain"], "x": [-1.5, 2, -3, 4, 5, 6, np.nan], "ok": [True] * 7})
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


def test_dates_stay_dates_and_aware_times_become_text(tmp_path):
    import datetime

    day = datetime.datetime(2026, 1, 2, 3, 4)
    frame = pd.DataFrame({"when": [pd.Timestamp(day)], "aware": [pd.Timestamp(day, tz="UTC")]})
    ws = openpyxl.load_workbook(write_xlsx(tmp_path / "d.xlsx", {"t": frame}))["t"]
    assert ws["A2"].value == day and ws["A2"].is_date
    assert ws["B2"].data_type == "s" and ws["B2"].value == "2026-01-02T03:04:00+00:00"


def test_without_openpyxl_text_goes_through_xlsxwriters_write_string(tmp_path, monkeypatch):
    # XlsxWriter writes a string cell only through write_string (write() would parse '=')
    import importlib.util
    import sys
    import types

    calls = []

    class Sheet:
        def write_string(self, r, c, v):
            calls.append(("string", r, c, v))

        def write(self, r, c, v):
            calls.append(("write", r, c, v))

    class Book:
        def __init__(self, path):
            self.path = path

        def add_worksheet(self, name):
            return Sheet()

        def close(self):
            calls.append(("close", self.path))

    fake = types.ModuleType("xlsxwriter")
    fake.Workbook = Book
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "openpyxl" else (fake if name == "xlsxwriter" else real(name, *a)),
    )
    monkeypatch.setitem(sys.modules, "xlsxwriter", fake)
    write_xlsx(tmp_path / "x.xlsx", {"s": pd.DataFrame({"name": ["=1+2"], "x": [-2.0]})})
    assert ("string", 1, 0, "=1+2") in calls and ("write", 1, 1, -2.0) in calls
    assert calls[-1] == ("close", str(tmp_path / "x.xlsx"))
