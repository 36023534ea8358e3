"""Self-contained HTML pages: one style sheet for reports, saved pages and the demo.

Everything a page needs is inline (styles here, plots as base64 PNGs), so a saved file
shows the same offline, in a browser, an e-mail attachment or a notebook.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from bayeseval._render.formats import cell_text, empty_columns, index_labels, whole_columns

__all__ = ["REPORT_CSS", "PAGE_CSS", "page", "html_table"]

#: styles of a report fragment (scoped to ``.bayeseval-report``); the strata table scrolls
#: sideways inside its own box when the page is narrower than the table, with the stratum
#: column kept in view
REPORT_CSS = (
    ".bayeseval-report{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "font-size:14px;line-height:1.4;color:#222;max-width:100%}"
    ".bayeseval-report .bv-scroll{overflow-x:auto;max-width:100%}"
    ".bayeseval-report table{border-collapse:collapse;margin:4px 0 10px 0;"
    "font-variant-numeric:tabular-nums}"
    ".bayeseval-report th,.bayeseval-report td{padding:2px 6px;border-bottom:1px solid #ddd;"
    "text-align:right;white-space:nowrap}"
    ".bayeseval-report .bv-strata{font-size:13px}"
    ".bayeseval-report .bv-strata thead th{white-space:normal;vertical-align:bottom}"
    ".bayeseval-report td.s{text-align:left}"
    ".bayeseval-report td.f,.bayeseval-report th.f{text-align:left;white-space:normal;"
    "min-width:7em}"
    ".bayeseval-report th.g{text-align:center;background:#f2f2f2;border-bottom:2px solid #999}"
    ".bayeseval-report .gs{border-left:2px solid #bbb}"
    ".bayeseval-report .bv-strata tr>:first-child{position:sticky;left:0;background:#fff}"
    ".bayeseval-report .warn{color:#8a3b00}"
    ".bayeseval-report tr.flag td,.bayeseval-report .bv-strata tr.flag>:first-child"
    "{background:#fff4e5}"
    ".bayeseval-report img{max-width:100%;height:auto}"
    ".bayeseval-report .bv-meta{display:flex;flex-wrap:wrap;gap:2px 18px;margin:2px 0 8px 0;"
    "padding:0;color:#555;font-size:13px;list-style:none}"
    ".bayeseval-report .bv-meta b{color:#222;font-weight:600}"
)

#: styles of a whole page (body width, headings, plain tables outside reports)
PAGE_CSS = (
    "body{margin:0 auto;padding:12px 20px;max-width:1500px;"
    "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:15px;"
    "line-height:1.45;color:#222}"
    "h1{font-size:1.6em}h2{font-size:1.3em;margin-top:1.8em;border-bottom:1px solid #ddd}"
    "section{margin-bottom:1.5em}.bv-wide{overflow-x:auto;max-width:100%}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "td,th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:right;white-space:nowrap}"
    "img{max-width:100%;height:auto}figure{margin:8px 0}figcaption{font-weight:600}"
    "pre{white-space:pre-wrap}"
)


def _header_cell(col: Any, css: str = "") -> str:
    """A column heading that may wrap after each ``_`` (narrow columns for long names)."""
    text = html.escape(str(col)).replace("_", "_<wbr>")
    return f"<th{f' class={css}' if css else ''}>{text}</th>"


def html_table(
    frame: Any, *, index_name: str = "stratum", groups: Sequence[tuple[str, Sequence[Any]]] = (), counts: Any = ()
) -> str:
    """``frame`` as an escaped HTML table in the reports' style, or ``""`` when it holds nothing.

    Columns without any value are left out, and a table left without rows or columns is not
    drawn. Cells go through :func:`~bayeseval._render.formats.cell_text`: integer columns and
    the ``counts`` named print without decimals, other numbers with four. ``groups`` (name,
    columns) puts a group heading over the columns it names, in that order; the other
    columns follow. The table scrolls sideways inside its box, its first column kept in view.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table; its index becomes the first column.
    index_name : str
        Heading of the index column.
    groups : sequence of (str, sequence)
        Column groups, in display order.
    counts : collection
        Columns of counts or amounts (shown as whole numbers when they are).

    Returns
    -------
    str
        The HTML (a ``div`` holding the table), or ``""``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"cost": [25.0], "kappa": [None]}, index=["a<b"])
    >>> html_table(t, counts={"cost"}).count("<td")
    2
    >>> html_table(t[["kappa"]])
    ''
    """
    frame = frame.drop(columns=empty_columns(frame))
    if frame.empty:
        return ""
    grouped = [(name, [c for c in cols if c in frame.columns]) for name, cols in groups]
    grouped = [(name, cols) for name, cols in grouped if cols]
    order = [c for _, cols in grouped for c in cols]
    rest = [c for c in frame.columns if c not in order]
    if grouped and rest:
        grouped.append(("", rest))
    frame = frame[order + rest]
    whole = whole_columns(frame, counts)
    starts = {cols[0] for _, cols in grouped[1:]}
    head = ""
    if grouped:
        head = (
            f"<tr><th rowspan='2'>{html.escape(index_name)}</th>"
            + "".join(
                f"<th class='g{' gs' if i else ''}' colspan='{len(cols)}'>{html.escape(name)}</th>"
                for i, (name, cols) in enumerate(grouped)
            )
            + "</tr><tr>"
        )
        head += "".join(_header_cell(c, "gs" if c in starts else "") for c in frame.columns) + "</tr>"
    else:
        head = f"<tr><th>{html.escape(index_name)}</th>" + "".join(map(_header_cell, frame.columns)) + "</tr>"
    columns = [(c, frame[c].tolist()) for c in frame.columns]  # per column: ints and bools stay themselves
    rows = []
    for i, label in enumerate(index_labels(frame.index)):
        cells = "".join(
            f"<td{' class=gs' if c in starts else ''}>{html.escape(cell_text(values[i], whole=c in whole))}</td>"
            for c, values in columns
        )
        rows.append(f"<tr><td class='s'>{html.escape(label)}</td>{cells}</tr>")
    return (
        "<div class='bv-scroll'><table class='bv-strata'><thead>"
        + head
        + "</thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def page(title: str, body: str) -> str:
    """A complete HTML document around ``body`` with the page and report styles inline.

    Parameters
    ----------
    title : str
        The document title (escaped here).
    body : str
        HTML of the page body (already escaped by its producer).

    Returns
    -------
    str
        The HTML document.

    Examples
    --------
    >>> text = page("a < b", "<p>hi</p>")
    >>> text.startswith("<!DOCTYPE html>"), "<title>a &lt; b</title>" in text
    (True, True)
    """
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{PAGE_CSS}{REPORT_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )
