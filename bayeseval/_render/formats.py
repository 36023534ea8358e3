"""Text renderings shared by every result: Markdown and LaTeX escapes, JSON-ready values.

One implementation for the reports, the audits and the impact-ratio report: a value shown in
a Markdown cell, a LaTeX table or a JSON document goes through these functions.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

# Markdown: HTML characters become entities as in the HTML output, and so do the characters
# that would change the document's structure (table pipe, line breaks, code-span backtick, the
# backslash escape). Entities, not backslashes, so that even a naive split on "|" or on lines
# sees the right cells and rows.
MD_ENTITIES = {"|": "&#124;", "`": "&#96;", "\\": "&#92;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


def md_escape(text: str) -> str:
    """Escape ``text`` so that Markdown shows it as text inside one line or one table cell."""
    escaped = "".join(MD_ENTITIES.get(ch, ch) for ch in html.escape(str(text), quote=False))
    # a table cell loses its leading and trailing spaces: keep them as entities
    body = escaped.strip(" ")
    lead = len(escaped) - len(escaped.lstrip(" "))
    trail = len(escaped) - len(escaped.rstrip(" ")) if body else 0
    return "&#32;" * lead + body + "&#32;" * trail


def printable(text: str) -> str:
    """``text`` with control characters (newline, tab...) shown as escapes, for one text line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def md_row(cells: Sequence[str]) -> str:
    """One Markdown table row of escaped cells."""
    return "| " + " | ".join(md_escape(c) for c in cells) + " |"


# LaTeX: the ten special characters, and line breaks as spaces
TEX_ESCAPES = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "\n": " ",
    "\r": " ",
}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped, so that it prints as itself."""
    return "".join(TEX_ESCAPES.get(ch, ch) for ch in str(text))


def json_key(key: Any) -> Any:
    """A stratum key as JSON: a tuple key becomes a list of JSON values."""
    if isinstance(key, tuple):
        return [json_value(k) for k in key]
    return json_value(key)


def json_value(val: Any) -> Any:
    """A cell as a JSON value: NumPy scalars as Python numbers, NaN and missing as None."""
    if val is None:
        return None
    if isinstance(val, (np.integer,)):
        return int(val)
    if isinstance(val, (float, np.floating)):
        return None if math.isnan(float(val)) else float(val)
    if isinstance(val, (np.bool_, bool)):
        return bool(val)
    if isinstance(val, (str, int)):
        return val
    try:
        if pd.isna(val):
            return None
    except (TypeError, ValueError):
        pass
    return str(val)


def fixed(value: Any, places: int = 4) -> str:
    """A number to ``places`` decimals, with more where rounding would hide what it is.

    At 4 decimals a rate of 3 in a million reads ``0.0000`` and one of 6 in 10,000 ``0.0006``:
    a value that would show fewer than two significant digits gets as many decimals as two
    need (e-notation with 3 significant digits below 1e-4), and a value just below 1 enough
    decimals to tell it from 1. Exact 0 and 1 keep ``places`` decimals; NaN and infinities
    are ``"nan"``, ``"inf"``.

    Examples
    --------
    >>> fixed(0.12345), fixed(0.0), fixed(3e-6), fixed(-2e-7), fixed(0.000632), fixed(0.999997)
    ('0.1235', '0.0000', '3.00e-06', '-2.00e-07', '0.00063', '0.999997')
    >>> fixed(1.0), fixed(73.66, 1), fixed(0.000602, 3), fixed(1.00002, 3), fixed(float("nan"))
    ('1.0000', '73.7', '0.00060', '1.00002', 'nan')
    """
    x = float(value)
    text = f"{x:.{places}f}"
    ax = abs(x)
    if not math.isfinite(x) or ax in (0.0, 1.0):
        return text
    if ax < 10.0 ** -(places - 1):  # fewer than two significant digits at ``places`` decimals
        return f"{x:.2e}" if ax < 1e-4 else f"{x:.{1 - math.floor(math.log10(ax))}f}"
    if abs(float(text)) == 1.0:  # rounds to 1: decimals down to the distance from 1
        return f"{x:.{max(places, math.ceil(-math.log10(abs(1.0 - ax))))}f}"
    return text


def cell_text(value: Any, *, whole: bool = False, places: int = 4) -> str:
    """A table cell as text: missing as ``""``, yes/no, integers without decimals, rates fixed.

    ``whole`` marks a column of counts or amounts (``trials``, ``cost``): a whole float
    (``225.0``) prints as ``225``, another one (a cost of 2.5) with ``:g``.

    Examples
    --------
    >>> cell_text(225.0, whole=True), cell_text(2.5, whole=True), cell_text(12), cell_text(0.12345)
    ('225', '2.5', '12', '0.1235')
    >>> cell_text(None), cell_text(float("nan")), cell_text(True), cell_text("pooled")
    ('', '', 'yes', 'pooled')
    """
    value = json_value(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if whole:
            return str(int(value)) if value.is_integer() else f"{value:g}"
        return fixed(value, places)
    return str(value)


def whole_columns(frame: pd.DataFrame, counts: Any = ()) -> set[Any]:
    """Columns of ``frame`` to print without decimals: integer dtypes and the ``counts`` named.

    Examples
    --------
    >>> sorted(whole_columns(pd.DataFrame({"n": [1], "cost": [2.0], "rate": [0.5]}), {"cost"}))
    ['cost', 'n']
    """
    out = set()
    for col in frame.columns:
        dtype = frame[col].dtype
        integer = pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        if integer or col in counts:
            out.add(col)
    return out


def empty_columns(frame: pd.DataFrame) -> list[Any]:
    """Columns of ``frame`` with no value at all (every cell missing)."""
    return [c for c in frame.columns if all(json_value(v) is None for v in frame[c])]


def md_table(frame: pd.DataFrame, digits: int = 3) -> list[str]:
    """A DataFrame as Markdown table lines (header, rule, rows); numbers to ``digits`` places.

    Examples
    --------
    >>> md_table(pd.DataFrame({"group": ["a|b"], "rate": [0.12345]}))
    ['| group | rate |', '| --- | --- |', '| a&#124;b | 0.123 |']
    """

    def cell(v: Any) -> str:
        v = json_value(v)
        if v is None:
            return ""
        if isinstance(v, float):
            return fixed(v, digits)
        return str(v)

    lines = [md_row([str(c) for c in frame.columns]), "| " + " | ".join("---" for _ in frame.columns) + " |"]
    lines += [md_row([cell(v) for v in row]) for row in frame.itertuples(index=False)]
    return lines


def n_strata(n: int) -> str:
    """``"1 stratum"``, ``"n strata"``."""
    return f"{n} stratum" if n == 1 else f"{n} strata"


def key_label(key: Any) -> str:
    """A stratum key as one label: the parts of a tuple joined by ``" | "``."""
    return " | ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def labels_text(keys: Sequence[Any], limit: int = 6) -> str:
    """The first ``limit`` stratum keys as quoted labels, and how many more there are."""
    names = [key_label(k) for k in keys]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def index_labels(index: pd.Index) -> list[str]:
    """String labels for a stratum index (levels of a MultiIndex joined by ``" | "``)."""
    if isinstance(index, pd.MultiIndex):
        return [" | ".join(str(v) for v in key) for key in index]
    return [str(v) for v in index]
