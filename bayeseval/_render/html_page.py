"""Self-contained HTML pages: one style sheet for reports, saved pages and the demo.

Everything a page needs is inline (styles here, plots as base64 PNGs), so a saved file
shows the same offline, in a browser, an e-mail attachment or a notebook.
"""

from __future__ import annotations

import html

__all__ = ["REPORT_CSS", "PAGE_CSS", "page"]

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
