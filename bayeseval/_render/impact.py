"""Rendering of impact-ratio reports: terminal text, Markdown, HTML and files.

The functions read an :class:`bayeseval.fairness.impact.ImpactRatioReport` (its ``tables``,
``unknown`` and ``fields``) and return text; nothing here computes a statistic.
"""

from __future__ import annotations

import html
import json
import math
import textwrap
from pathlib import Path
from typing import Any

from bayeseval._api.validation import output_suffix
from bayeseval._render.formats import md_escape, md_row, printable
from bayeseval._render.html_page import page

__all__ = ["text", "markdown", "html_fragment", "save", "SUFFIXES"]

#: the formats ``save`` writes
SUFFIXES = (".html", ".htm", ".md", ".json", ".csv", ".xlsx")


# -- pieces shared by every format ---------------------------------------------------------------
def _rate_words(fields: dict) -> tuple[str, str]:
    """Headings of the count and rate columns."""
    if fields["rate_kind"] == "selection":
        return "Selected", "Selection rate"
    return "Scoring above median", "Scoring rate"


def _outcome_line(fields: dict) -> str:
    col = fields["outcome_column"]
    if fields["rate_kind"] == "selection":
        return f"selection rate: share of applicants with {col} = 1"
    return (
        f"scoring rate: share of applicants whose {col} is above the full sample's median ({fields['median_score']:g})"
    )


def _field_items(fields: dict) -> list[tuple[str, str]]:
    """The report's fields as (label, value) pairs, in reading order."""
    missing = "not given"
    items = [
        ("Date of the audit", fields["date"]),
        ("Auditor", fields["auditor"] or missing),
        ("Data source", fields["source"] or missing),
        ("Explanation of the data", fields["explanation"] or missing),
        ("Test data", f"used: {fields['test_data']}" if fields["test_data"] else "no (historical data)"),
        ("Applicants (rows)", f"{fields['rows']:,}"),
        ("Rate", _outcome_line(fields)),
        ("Impact ratio", "the category's rate over the highest rate among the categories included"),
        ("Exclusion", _exclusion_line(fields)),
        ("Intervals", f"{fields['level']:.0%}, for the ratio to the true highest rate"),
        ("Verdict", f"four-fifths rule: impact ratio below {fields['threshold']:g}, read from the interval"),
        ("Package", f"bayeseval {fields['version']}"),
    ]
    if fields.get("design"):
        items.insert(6, ("Sampling design", fields["design"]))
    return items


def _exclusion_line(fields: dict) -> str:
    if fields["exclude_below"] is None:
        return "none (every category is in the impact ratios)"
    return (
        f"categories under {fields['exclude_below']:.0%} of the data are left out of the impact "
        f"ratios; justification: {fields['justification']}"
    )


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    try:
        if value != value:  # NaN or pd.NA-like
            return ""
    except TypeError:
        return ""
    return f"{value:.{digits}f}"


def _interval(row: Any) -> str:
    lo, hi = _number(row["lower"]), _number(row["upper"])
    return f"{lo} to {hi}" if lo else ""


def _percent(value: float) -> str:
    """A share as a percentage: one decimal, two under 0.1% (so that no share shows as 0.0%)."""
    return f"{100 * value:.2f}%" if 0 < value < 0.001 else f"{100 * value:.1f}%"


def _display_rows(report: Any, name: str, frame: Any) -> tuple[list[str], list[list[str]]]:
    """Headings and cell texts of one table, as every format shows it."""
    count_word, rate_word = _rate_words(report.fields)
    factors = report.fields["tables"][name]
    level = f"{report.fields['level']:.0%} interval"
    head = [*factors, "Applicants", count_word, rate_word, "Share of data", "Impact ratio", level, "Verdict"]
    rows = []
    for _, row in frame.iterrows():
        rows.append(
            [
                *(str(row[f]) for f in factors),
                f"{row['applicants']:,}",
                f"{row['successes']:,}",
                _percent(row["rate"]),
                _percent(row["share"]),
                _number(row["impact_ratio"]),
                _interval(row),
                str(row["verdict"]),
            ]
        )
    return head, rows


def _named_tables(report: Any) -> list[tuple[str, Any]]:
    """Each table with its (unique) name, in the report's order."""
    tables = report.tables
    return [(name, tables[tuple(factors)]) for name, factors in report.fields["tables"].items()]


def _unknown(report: Any, name: str) -> int:
    frame = report.unknown
    return int(frame.loc[frame["table"] == name, "unknown"].iloc[0])


def _table_title(report: Any, name: str) -> str:
    if len(report.fields["tables"][name]) == 1:
        return f"Categories: {name}"
    return f"Intersectional categories: {name}"


_NOTES = (
    "The impact ratio of a category is its rate over the highest rate among the categories "
    "included (the DCWP rules, 6 RCNY 5-301). The law asks for no interval. The interval shown "
    "is for the ratio to the highest true rate, whichever category has it: its lower end is the "
    "smallest lower end of the category's ratios to each other category, its upper end the "
    "smallest Bonferroni-adjusted upper end (MOVER-R intervals with Clopper-Pearson parts). A verdict is "
    "'below' when the whole interval is below the threshold, 'not below' when it is at or above "
    "it, and otherwise undecided, with the number of further rows, in the same category mix and "
    "at the observed rates, after which the interval would lie on one side."
)


# -- terminal text -------------------------------------------------------------------------------
def _short_verdict(row: Any) -> str:
    """The verdict in a few words for the terminal ("undecided, ~N more rows")."""
    if row["excluded"]:
        return "excluded"
    if row["verdict"].startswith("undecided"):
        try:
            return f"undecided, ~{int(row['more_rows']):,} more rows"
        except (TypeError, ValueError):  # no number of rows decides it (missing count)
            return "undecided"
    return str(row["verdict"])


def _text_table(report: Any, name: str, frame: Any, width: int) -> list[str]:
    label_w = max(8, min(26, max(len(printable(c)) for c in frame["category"])))
    head = f"  {'category':<{label_w}} {'rows':>7} {'rate':>6} {'ratio':>5} {'interval':>12}  verdict"
    lines = [f"{_table_title(report, name)} (unknown: {_unknown(report, name):,} rows)", head]
    for _, row in frame.iterrows():
        label = printable(row["category"])
        label = label if len(label) <= label_w else label[: label_w - 1] + "~"
        cells = (
            f"  {label:<{label_w}} {row['applicants']:>7,} {_percent(row['rate']):>6} "
            f"{_number(row['impact_ratio']):>5} {_interval(row):>12}  {_short_verdict(row)}"
        )
        lines.append(cells[:width])
    return lines


def text(report: Any, width: int = 100) -> str:
    """The report for a terminal: the fields, then each table, no line wider than ``width``."""
    lines = [report.title]
    for label, value in _field_items(report.fields):
        lines += textwrap.wrap(printable(f"{label}: {value}"), width, subsequent_indent="    ")
    for name, frame in _named_tables(report):
        lines += [""] + _text_table(report, name, frame, width)
    lines += [""] + textwrap.wrap(_NOTES, width)
    return "\n".join(lines)


# -- Markdown ------------------------------------------------------------------------------------
def markdown(report: Any) -> str:
    """The report as Markdown: a field list, one table per group column and intersection."""
    out = [f"# {md_escape(report.title)}", ""]
    out += [f"- **{md_escape(label)}**: {md_escape(value)}" for label, value in _field_items(report.fields)]
    for name, frame in _named_tables(report):
        head, rows = _display_rows(report, name, frame)
        out += [
            "",
            f"## {md_escape(_table_title(report, name))}",
            "",
            md_row(head),
            "|" + "|".join([" --- "] * len(head)) + "|",
        ]
        out += [md_row(r) for r in rows]
        out += ["", f"Unknown category: {_unknown(report, name):,} rows (not in this table)."]
    out += ["", "## Notes", "", md_escape(_NOTES), ""]
    return "\n".join(out)


# -- HTML ----------------------------------------------------------------------------------------
def _html_table(report: Any, name: str, frame: Any) -> str:
    head, rows = _display_rows(report, name, frame)
    n_factors = len(report.fields["tables"][name])
    parts = ["<div class='bv-scroll'><table class='bv-strata bv-impact'><thead><tr>"]
    parts += [f"<th{' class=f' if i < n_factors else ''}>{html.escape(h)}</th>" for i, h in enumerate(head[:-1])]
    parts.append(f"<th class='f' style='min-width:13em'>{html.escape(head[-1])}</th>")
    parts.append("</tr></thead><tbody>")
    for (_, row), cells in zip(frame.iterrows(), rows, strict=True):
        below = str(row["verdict"]).startswith("below")
        attr = " class='flag'" if below else (" style='color:#777'" if row["excluded"] else "")
        tds = [
            f"<td class='s'>{html.escape(c)}</td>" if i < n_factors else f"<td>{html.escape(c)}</td>"
            for i, c in enumerate(cells[:-1])
        ]
        tds.append(f"<td class='f' style='min-width:13em'>{html.escape(cells[-1])}</td>")
        parts.append(f"<tr{attr}>{''.join(tds)}</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def html_fragment(report: Any) -> str:
    """The report as an HTML fragment inside ``<div class='bayeseval-report'>``."""
    esc = html.escape
    parts = [
        "<div class='bayeseval-report bv-impact-report'>",
        f"<h1>{esc(report.title)}</h1>",
        "<table class='bv-fields'><tbody>",
    ]
    parts += [
        f"<tr><th class='f'>{esc(label)}</th><td class='f'>{esc(str(value))}</td></tr>"
        for label, value in _field_items(report.fields)
    ]
    parts.append("</tbody></table>")
    for name, frame in _named_tables(report):
        parts.append(f"<section><h2>{esc(_table_title(report, name))}</h2>")
        parts.append(f"<p>Unknown category: {_unknown(report, name):,} rows (not in this table).</p>")
        parts.append(_html_table(report, name, frame) + "</section>")
    parts.append(f"<h2>Notes</h2><p>{esc(_NOTES)}</p></div>")
    return "\n".join(parts)


# -- files ---------------------------------------------------------------------------------------
def _sheet_name(name: str, used: set[str]) -> str:
    """An Excel sheet name (at most 31 characters, none of ``[]:*?/\\``), unique in ``used``."""
    clean = "".join("_" if ch in "[]:*?/\\" else ch for ch in name)[:31] or "table"
    base, k = clean, 2
    while clean.lower() in used:
        suffix = f" ({k})"
        clean, k = base[: 31 - len(suffix)] + suffix, k + 1
    used.add(clean.lower())
    return clean


def _sheets(report: Any) -> dict[str, Any]:
    import pandas as pd  # deferred: only for workbooks

    used = {"fields", "unknown"}
    sheets = {"fields": pd.DataFrame(_field_items(report.fields), columns=["field", "value"])}
    for name, frame in _named_tables(report):
        sheets[_sheet_name(name, used)] = frame
    sheets["unknown"] = report.unknown
    return sheets


def save(report: Any, path: Path) -> Path:
    """Write ``report`` to ``path`` in the format its suffix names (see ``SUFFIXES``)."""
    suffix = output_suffix(path, SUFFIXES)
    if suffix in (".xlsx", ".csv"):
        from bayeseval._render.spreadsheet import csv_safe_frame, write_xlsx  # deferred: files only

        if suffix == ".xlsx":
            return write_xlsx(path, _sheets(report))
        path.write_text(csv_safe_frame(report.table).to_csv(index=False), encoding="utf-8")
        return path
    if suffix in (".html", ".htm"):
        content = page(report.title, html_fragment(report))
    elif suffix == ".md":
        content = markdown(report)
    else:
        content = json.dumps(report.to_dict(), indent=2) + "\n"
    path.write_text(content, encoding="utf-8")
    return path
