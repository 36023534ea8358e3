"""Spreadsheet-safe table writers: no text cell is ever run as a formula.

A spreadsheet runs a cell whose text starts with ``=``, ``+``, ``-`` or ``@`` as a formula
(OWASP, "CSV Injection"; a tab or carriage return in front is stripped by some readers,
so those count too). Stratum and annotator names come from user data, so every writer of
a workbook or CSV file in the package goes through this module:

- :func:`write_xlsx` writes every text cell as a string cell (openpyxl ``data_type "s"``
  with the quote prefix set, or XlsxWriter's ``write_string``): the cell holds exactly the
  original text and is never a formula; numbers, booleans and dates keep their types.
- :func:`csv_safe_frame` returns a copy of a table in which each text cell starting with
  one of those characters is prefixed with a single quote (``'=1+2``), which a
  spreadsheet shows as text. Numbers stay numbers (``-3`` in a numeric column is not
  text). Columns named in ``keep`` (row ids the package reads back) are left as they are.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bayeseval._api.docs import fill_doc

__all__ = ["FORMULA_PREFIXES", "csv_safe_frame", "is_formula_like", "write_xlsx"]

#: first characters that make a spreadsheet read a text cell as a formula
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def is_formula_like(value: Any) -> bool:
    """Whether ``value`` is text a spreadsheet would run as a formula.

    Examples
    --------
    >>> is_formula_like("=HYPERLINK(1)"), is_formula_like("-2"), is_formula_like(-2)
    (True, True, False)
    """
    return isinstance(value, str) and value.startswith(FORMULA_PREFIXES)


def csv_safe_frame(frame: Any, keep: Iterable[str] = ()) -> Any:
    """A copy of ``frame`` whose formula-like text cells start with a single quote.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table to write as CSV.
    keep : iterable of str
        Columns left as they are (row ids the package reads back).

    Returns
    -------
    pandas.DataFrame
        The same table; text cells starting with ``= + - @``, tab or carriage return get a
        leading ``'``. Column names are treated the same way.

    Examples
    --------
    >>> import pandas as pd
    >>> out = csv_safe_frame(pd.DataFrame({"stratum": ["=1+2", "a"], "x": [-1, 2]}))
    >>> out["stratum"].tolist(), out["x"].tolist()
    (["'=1+2", 'a'], [-1, 2])
    """
    keep = set(keep)
    out = frame.copy()
    for col in out.columns:
        if col in keep or out[col].dtype.kind not in "OSU" and str(out[col].dtype) != "string":
            continue
        values = out[col]
        risky = values.map(is_formula_like).to_numpy(bool)
        if risky.any():
            out[col] = values.astype(object).where(~risky, "'" + values[risky].astype(str))
    out.columns = [("'" + c) if is_formula_like(c) and c not in keep else c for c in out.columns]
    return out


def _cell_value(value: Any) -> Any:
    """A value a workbook cell holds: numbers, booleans, dates and text; missing is None."""
    if value is None or (isinstance(value, float | np.floating) and np.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if hasattr(value, "to_pydatetime"):
        value = value.to_pydatetime()
    if isinstance(value, datetime.date | datetime.time):
        # workbooks hold no time zones: an aware time is written as its text
        return value if getattr(value, "tzinfo", None) is None else value.isoformat()
    if isinstance(value, bool | int | float | str):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _rows(frame: Any) -> list[list[Any]]:
    header = [str(c) for c in frame.columns]
    return [header] + [[_cell_value(v) for v in row] for row in frame.itertuples(index=False)]


@fill_doc()
def write_xlsx(path: str | Path, sheets: Mapping[str, Any]) -> Path:
    """Write tables to a workbook, one sheet each, every text cell stored as text.

    Parameters
    ----------
    path : str or PathLike
        The ``.xlsx`` file to write.
    sheets : mapping of str to pandas.DataFrame
        Sheet name to table (written with a header row, without the index).

    {path_returned}

    Raises
    ------
    ValueError
        When neither openpyxl nor XlsxWriter is installed.

    Examples
    --------
    >>> import tempfile, openpyxl, pandas as pd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_xlsx(f"{d}/t.xlsx", {"s": pd.DataFrame({"name": ["=1+2"], "x": [-1.5]})})
    ...     cell, num = openpyxl.load_workbook(p)["s"]["A2"], openpyxl.load_workbook(p)["s"]["B2"]
    >>> cell.data_type, cell.value, num.value
    ('s', '=1+2', -1.5)
    """
    from importlib.util import find_spec

    p = Path(path)
    if find_spec("openpyxl") is not None:
        _write_openpyxl(p, sheets)
    elif find_spec("xlsxwriter") is not None:
        _write_xlsxwriter(p, sheets)
    else:
        raise ValueError(
            "writing .xlsx needs an Excel engine: neither openpyxl nor xlsxwriter is installed "
            "(pip install openpyxl); save to .csv instead"
        )
    return p


def _write_openpyxl(path: Path, sheets: Mapping[str, Any]) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for name, frame in sheets.items():
        ws = wb.create_sheet(title=name)
        for r, row in enumerate(_rows(frame), start=1):
            for c, value in enumerate(row, start=1):
                if value is None:
                    continue
                cell = ws.cell(row=r, column=c, value=value)
                if isinstance(value, str):
                    cell.data_type = "s"  # never a formula, whatever the text
                    cell.quotePrefix = True
    wb.save(path)


def _write_xlsxwriter(path: Path, sheets: Mapping[str, Any]) -> None:
    import xlsxwriter

    wb = xlsxwriter.Workbook(str(path))
    try:
        for name, frame in sheets.items():
            ws = wb.add_worksheet(name)
            for r, row in enumerate(_rows(frame)):
                for c, value in enumerate(row):
                    if isinstance(value, str):
                        ws.write_string(r, c, value)
                    elif value is not None:
                        ws.write(r, c, value)
    finally:
        wb.close()
