"""Text, Markdown, LaTeX and HTML of an evaluation's report (:class:`bayeseval.report.Report`).

The report is data (its table, overall rates, checks and findings); these functions only format
it. Every piece of text that can come from the user is escaped for the format it goes into.
"""

from __future__ import annotations

import base64
import html
import math
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._render import audit_html
from bayeseval._render.formats import (
    fixed,
    index_labels,
    md_escape,
    md_row,
    n_strata,
    printable,
    tex_escape,
)
from bayeseval._render.html_page import REPORT_CSS

# display order of the table's columns, in groups: the counts and the interval of each stratum,
# the pooled model, and the checks
COLUMN_GROUPS = (
    (
        "estimate",
        (
            "successes",
            "trials",
            "n_units",
            "rate",
            "lower",
            "upper",
            "halfwidth",
            "pool_trials",
            "proxy_used",
            "agreement",
            "effective_labels",
            "sample_share",
            "weight",
        ),
    ),
    ("pooled", ("pooled_mean", "pooled_lower", "pooled_upper", "shrinkage", "read")),
    ("checks", ("ppc_p", "extra_needed", "flags")),
)

# columns left out of the renderings when they hold nothing (no weights, no target, no model)
OPTIONAL_COLUMNS = (
    "weight",
    "pooled_mean",
    "pooled_lower",
    "pooled_upper",
    "shrinkage",
    "read",
    "read_reason",
    "ppc_p",
    "extra_needed",
)

# columns of the data (to_frame, JSON, CSV) that the rendered tables leave out: the HTML
# shows the reason as the ``read`` cell's tooltip, and the findings name the strata and why
HIDDEN_COLUMNS = ("read_reason",)

# the HTML rendering plots every stratum up to this many strata; above, the worst WORST_PLOT_STRATA
MAX_PLOT_STRATA = 60

#: the forest plot of a report of more than MAX_PLOT_STRATA strata shows this many, worst first
#: (:func:`worst_first`): a plot of every stratum would be taller than anyone reads
WORST_PLOT_STRATA = 30

#: the HTML table shows every stratum up to this many; above, this many, worst first, with the
#: total and where the full table is (a page of 20,000 rows is megabytes nobody scrolls through)
MAX_TABLE_STRATA = 200

#: a page of more than MAX_TABLE_STRATA strata lists this many per-stratum warnings of each kind
#: (flag), then how many more there are
MAX_WARNINGS_PER_FLAG = 3

_POOLED_DOC = "covers on average over strata like these, not for a stratum that differs"

_COLUMN_DOC = {
    "successes": "successes (e.g. errors) in the stratum",
    "trials": "trials (rows counted by the metric)",
    "n_units": "sampling units (e.g. items) holding the trials, with a design's cluster",
    "rate": "raw rate successes / trials",
    "halfwidth": "half the width of the interval (lower, upper)",
    "pooled_mean": "pooled (hierarchical) posterior mean",
    "pooled_lower": f"pooled posterior credible interval, lower bound: {_POOLED_DOC}",
    "pooled_upper": f"pooled posterior credible interval, upper bound: {_POOLED_DOC}",
    "shrinkage": "weight of the population mean in the pooled estimate, 0 (own data only) to 1",
    "read": "which interval lower and upper are: pooled (pooled_lower, pooled_upper), or "
    "adaptive (exact coverage for the stratum) when its count is not clearly typical of what "
    "the other strata predict (leave-one-out conflict p-value at most 0.20, or flagged)",
    "read_reason": "why the stratum reads that interval, with the leave-one-out conflict p-value",
    "sample_share": "the stratum's share of the test set's trials",
    "weight": "population share (given weights)",
    "ppc_p": "posterior predictive p-value of the stratum's count",
    "extra_needed": "more labels needed for the target half-width (at the observed rate)",
    "flags": "short flags: empty, rate 0, rate 1, too wide, model check, strong shrinkage, estimates disagree",
    "pool_trials": "trials in the pool, labelled or not (with a proxy)",
    "proxy_used": "whether the stratum's interval reads the proxy's cells (else labels only)",
    "agreement": "share of labelled trials where the label proxy's verdict is the truth",
    "effective_labels": "labels the proxy's cells are worth (labels-only variance over the "
    "cells' variance, times the labels)",
}

# what lower and upper are, per guarantee
_INTERVAL_DOC = {
    "stratum": "the stratum's interval, covering its own rate at least at the level whatever "
    "that rate is: adaptive (exact tests, tails split by a prior from the other strata only), "
    "Clopper-Pearson when fewer than two strata have trials",
    "average": "the interval read for the stratum (see read): pooled posterior, or adaptive "
    "where the count is atypical; pooled rows cover on average over strata, not for a stratum "
    "that differs",
    "units": "the stratum's unit interval (a betting interval over its sampling units), covering "
    "its own rate at least at the level in finite samples",
    "units_average": "the interval read for the stratum (see read): the pooled model's posterior interval over "
    "sampling units, or the stratum's unit interval where its count is atypical; covering on average over strata",
}

# the header's words for what lower/upper promise
GUARANTEE_TEXT = {
    "stratum": "cover each stratum's own rate at every true rate",
    "average": "are the interval read (pooled, or adaptive where atypical), covering on average over strata",
    "units": "cover each stratum's own rate (unit intervals, valid in finite samples)",
    "units_average": "are the pooled model's intervals over units (or unit intervals where atypical), covering on "
    "average over strata",
}


def interval_kind(report: Any) -> str:
    """Which intervals ``lower``/``upper`` are: the key of the header's and the columns' words.

    ``"stratum"`` and ``"average"`` by the guarantee; with sampling units (an ``n_units`` column)
    ``"units"`` (each stratum's unit interval) or, under ``guarantee="average"`` with the pooled
    model over units, ``"units_average"``.

    Examples
    --------
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> interval_kind(SimpleNamespace(guarantee="average", table=pd.DataFrame({"n_units": [3]}), posterior=None))
    'units'
    """
    if "n_units" not in report.table.columns:
        return str(report.guarantee)
    # the pooled model over units is fitted only under guarantee="average", where it gives lower/upper
    pooled = report.posterior is not None and getattr(report.posterior, "model", None) == "units"
    return "units_average" if pooled else "units"


def column_doc(column: str, kind: str) -> str:
    """What a column of the table holds, for intervals of ``kind`` (:func:`interval_kind`)."""
    if column in ("lower", "upper"):
        return f"{column} bound of {_INTERVAL_DOC[kind]}"
    return _COLUMN_DOC.get(column, column)


def display_table(report: Any) -> pd.DataFrame:
    """The table in display order (estimate | pooled | checks), without columns that are all NaN."""
    t = report.table.drop(columns=[c for c in HIDDEN_COLUMNS if c in report.table.columns])
    t.index = pd.Index(index_labels(t.index), name="stratum")
    order = [c for _, cols in COLUMN_GROUPS for c in cols if c in t.columns]
    t = t[order + [c for c in t.columns if c not in order]]
    empty = [c for c in OPTIONAL_COLUMNS if c in t.columns and t[c].isna().all()]
    return t.drop(columns=empty)


def worst_first(report: Any) -> tuple[np.ndarray, str]:
    """The positions of ``report.table``'s rows, the strata to read first in front, and that order in words.

    A reader of a report with thousands of strata looks for those that may be doing badly;
    ``report.higher_is_better`` (the metric's :attr:`Metric.higher_is_better
    <bayeseval.counts.metrics.Metric.higher_is_better>`) says which side is bad.
    For an error-type metric (a high rate is bad: error rate, FPR, FNR) that is the upper
    bound of each stratum's interval, highest first: a stratum comes early when its rate is
    high or when it has too few trials to rule a high rate out, the two reasons to look at it.
    For an accuracy-type metric (accuracy, recall, precision, specificity, NPV) it is the lower
    bound, lowest first. For any other metric, whose bad side is not known (selection rate,
    a mean outcome, a user's metric), it is the
    half-width, widest first: the strata known least. A stratum without a bound (no trials)
    comes first; ties keep the table's order.

    Examples
    --------
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> t = pd.DataFrame({"lower": [0.1, 0.0, 0.3], "upper": [0.2, 0.5, 0.6], "halfwidth": [0.05, 0.25, 0.15]})
    >>> worst_first(SimpleNamespace(table=t, higher_is_better=False))[0].tolist()  # error_rate
    [2, 1, 0]
    >>> worst_first(SimpleNamespace(table=t, higher_is_better=True))[0].tolist()  # recall
    [1, 0, 2]
    """
    t = report.table
    if report.higher_is_better is False:
        key = -t["upper"].to_numpy(dtype=float)
        words = (
            "by the upper bound of the interval, highest first: the strata whose rate may be highest "
            "(a high rate, or too few trials to rule one out)"
        )
    elif report.higher_is_better:
        key = t["lower"].to_numpy(dtype=float)
        words = (
            "by the lower bound of the interval, lowest first: the strata whose rate may be lowest "
            "(a low rate, or too few trials to rule one out)"
        )
    else:
        key = -t["halfwidth"].to_numpy(dtype=float)
        words = "by the half-width of the interval, widest first: the strata known least"
    return np.argsort(np.where(np.isnan(key), -np.inf, key), kind="stable"), words


def fmt_cell(col: str, val: Any) -> str:
    """A table cell as text: counts as integers, flags and words as they are, rates to 4 decimals."""
    if val is None or (isinstance(val, float) and math.isnan(val)):
        return ""
    if col in ("successes", "trials", "extra_needed", "pool_trials", "n_units"):
        v = float(val)  # graded outcomes sum to fractional successes
        return f"{int(v):d}" if v.is_integer() else f"{v:.1f}"
    if col in ("flags", "read", "read_reason"):
        return str(val)
    if col == "proxy_used":
        return "yes" if val else "no"
    if col == "effective_labels":
        return f"{float(val):.1f}"
    return fixed(val)


def provenance(report: Any) -> list[tuple[str, str]]:
    """What the report was made from and with: version, date, data, metric, level, engine, guarantee."""
    engine = report.engine if report.posterior is not None else f"{report.engine} (no pooled model)"
    return [
        ("bayeseval", report.version),
        ("created", report.created or "not recorded"),
        ("data", report.source or "not recorded"),
        *([("design", report.design)] if getattr(report, "design", "") else []),
        ("metric", report.metric),
        ("level", f"{100 * report.level:g}%"),
        ("engine", engine),
        ("guarantee", report.guarantee),
    ]


def header(report: Any) -> list[str]:
    """Title, provenance line, what the table holds, and the target if any."""
    pct = f"{100 * report.level:g}%"
    pooled = (
        f"pooled_* the pooled posterior from the {report.engine} engine, covering on average over strata like these"
        if report.posterior is not None
        else "no pooled model"
    )
    lines = [
        report.title or f"bayeseval report: {report.metric}",
        "; ".join(f"{k}: {v}" for k, v in provenance(report)),
        f"{n_strata(len(report.table))}, {int(report.table['trials'].sum())} trials, "
        f"{pct} intervals (guarantee {report.guarantee!r}: lower/upper {GUARANTEE_TEXT[interval_kind(report)]}; "
        f"{pooled})",
    ]
    if report.target_halfwidth is not None:
        lines.append(f"target half-width: {report.target_halfwidth:g}")
    return lines


def overall_lines(report: Any) -> list[str]:
    """The overall rates, one line each, the population estimate marked."""
    names = {
        "unweighted": "unweighted (test-set composition)",
        "reweighted": "reweighted by population shares  <- population estimate",
        "posterior_weighted": "pooled posterior, population-weighted",
    }
    out = []
    for est, row in report.overall.iterrows():
        out.append(
            f"  {fixed(row['estimate'])}  [{fixed(row['lower'])}, {fixed(row['upper'])}]  "
            f"{names.get(str(est), str(est))}"
        )
    return out


def text(report: Any) -> str:
    """The report as plain text for a terminal: above :data:`MAX_TABLE_STRATA` strata, the first
    :data:`MAX_TABLE_STRATA` in :func:`worst_first` order, after a note, and the per-stratum
    warnings bounded as on the HTML page."""
    t = display_table(report)
    rows, order_words = part_rows(report)
    part = []
    if rows is not None:
        t = t.iloc[rows]
        part = ["", printable(part_note(report, len(rows), order_words, None))]
    body = t.apply(lambda col: col.map(lambda v, c=col.name: fmt_cell(c, v)))
    body.index = pd.Index([printable(k) for k in body.index], name=body.index.name)
    lines = [printable(h) for h in header(report)] + part + ["", body.to_string(), "", "Overall rate:"]
    lines += overall_lines(report)
    if len(report.checks):
        lines += ["", "Model checks:"]
        for name, row in report.checks.iterrows():
            p = (
                ""
                if pd.isna(row["p_value"])
                else f" (smallest p = {fixed(row['p_value'], 3)})"
                if name == "ppc_counts"
                else f" (p = {fixed(row['p_value'], 3)})"
            )
            lines.append(f"  {name}: {row['verdict']}{p}")
    if report.audit is not None:
        lines += ["", "Fairness audit:"] + [f"  {printable(x)}" for x in audit_html.audit_lines(report.audit)]
    if report.notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in report.notes]
    if report.warnings:
        shown, more = _bounded_warnings(report) if rows is not None else (report.warnings, "")
        lines += ["", "Warnings:"] + [f"  ! {w}" for w in shown] + ([f"  ! {more}"] if more else [])
    else:
        lines += ["", "No warnings."]
    return "\n".join(lines)


def markdown(report: Any, full_table: str | None = None) -> str:
    """The report as Markdown, every user text escaped; above :data:`MAX_TABLE_STRATA` strata the
    first :data:`MAX_TABLE_STRATA` in :func:`worst_first` order after a note naming where the full
    table is (``full_table``: the file beside the document), per-stratum warnings bounded."""
    t = display_table(report)
    rows, order_words = part_rows(report)
    cols = ["stratum"] + list(t.columns)
    head = header(report)
    out = [f"# {md_escape(head[0])}", ""] + [f"{md_escape(h)}  " for h in head[1:]] + [""]
    if rows is not None:
        t = t.iloc[rows]
        out += [md_escape(part_note(report, len(rows), order_words, full_table)), ""]
    out.append("| " + " | ".join(cols) + " |")  # the report's own column names
    out.append("|" + "|".join("---" if c in ("stratum", "flags") else "---:" for c in cols) + "|")
    for key, row in t.iterrows():
        out.append(md_row([str(key)] + [fmt_cell(c, row[c]) for c in t.columns]))
    out += ["", "## Overall rate", "", "| estimand | estimate | lower | upper |", "|---|---:|---:|---:|"]
    for est, row in report.overall.iterrows():
        out.append(md_row([str(est)] + [fixed(row[c]) for c in ("estimate", "lower", "upper")]))
    if len(report.checks):
        out += ["", "## Model checks", "", "| check | p-value | verdict |", "|---|---:|---|"]
        for name, row in report.checks.iterrows():
            p = "" if pd.isna(row["p_value"]) else fixed(row["p_value"], 3)
            out.append(md_row([str(name), p, str(row["verdict"])]))
    if report.audit is not None:
        out += ["", "## Fairness audit", ""] + [f"- {md_escape(x)}" for x in audit_html.audit_lines(report.audit)]
    if report.notes:
        out += ["", "## Notes", ""] + [f"- {md_escape(n)}" for n in report.notes]
    out += ["", "## Warnings", ""]
    shown, more = _bounded_warnings(report) if rows is not None else (report.warnings, "")
    out += [f"- {md_escape(w)}" for w in shown] + ([f"- {md_escape(more)}"] if more else [])
    out += [] if report.warnings else ["No warnings."]
    return "\n".join(out) + "\n"


def latex(report: Any) -> str:
    """The strata table and the overall rates as LaTeX ``tabular`` environments."""
    t = display_table(report)
    cols = ["stratum"] + list(t.columns)
    lines = [
        f"% {tex_escape(header(report)[0])}",
        f"% {tex_escape(header(report)[1])}",
        "\\begin{tabular}{l" + "r" * (len(cols) - 2) + "l}",
        "\\hline",
        " & ".join(tex_escape(c) for c in cols) + " \\\\",
        "\\hline",
    ]
    for key, row in t.iterrows():
        cells = [str(key)] + [fmt_cell(c, row[c]) for c in t.columns]
        lines.append(" & ".join(tex_escape(c) for c in cells) + " \\\\")
    lines += [
        "\\hline",
        "\\end{tabular}",
        "",
        "\\begin{tabular}{lrrr}",
        "\\hline",
        "estimand & estimate & lower & upper \\\\",
        "\\hline",
    ]
    for est, row in report.overall.iterrows():
        vals = [fixed(row[c]) if np.isfinite(row[c]) else "" for c in ("estimate", "lower", "upper")]
        lines.append(" & ".join([tex_escape(str(est))] + vals) + " \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def html_fragment(
    report: Any, *, plot: bool, png: bytes | None, audit: str | None, full_table: str | None = None
) -> str:
    """The report as one self-contained HTML ``div``.

    Up to :data:`MAX_TABLE_STRATA` strata the table holds every stratum in the table's order;
    above, the first :data:`MAX_TABLE_STRATA` in :func:`worst_first` order, after a note with
    the total, the flags over every stratum and where the full table is (``full_table``: the
    link to the file beside the page, or None for the Report's own table). ``png`` is the
    forest plot: of every stratum up to :data:`MAX_PLOT_STRATA`, else of the first
    :data:`WORST_PLOT_STRATA` in :func:`worst_first` order, as its caption says.
    """
    esc = html.escape
    head = header(report)
    n = len(report.table)
    rows, order_words = None, ""
    if n > MAX_TABLE_STRATA or (plot and n > MAX_PLOT_STRATA):
        rows, order_words = part_rows(report)
        if rows is None:
            order_words = worst_first(report)[1]
    parts = [
        "<div class='bayeseval-report'>",
        f"<style>{REPORT_CSS}</style>",
        f"<h3>{esc(head[0])}</h3>",
        "<ul class='bv-meta'>" + "".join(f"<li><b>{esc(k)}</b> {esc(v)}</li>" for k, v in provenance(report)) + "</ul>",
        "<p>" + "<br>".join(esc(h) for h in head[2:]) + "</p>",
    ]
    if rows is not None:
        parts.append(part_note(report, len(rows), order_words, full_table, page=True))
    parts += [_html_strata(report, rows), _html_overall(report), _html_findings(report, bounded=rows is not None)]
    if plot and png is not None:
        data = base64.b64encode(png).decode("ascii")
        img = f"<img alt='forest plot of the strata' src='data:image/png;base64,{data}'/>"
        if n > MAX_PLOT_STRATA:
            k = min(WORST_PLOT_STRATA, n)
            img = (
                f"<figure>{img}<figcaption>Forest plot of {k} of the {n:,} strata, {esc(order_words)}; "
                f"a plot of every stratum would be too tall to read.</figcaption></figure>"
            )
        parts.append(img)
    if audit is not None:
        parts.append(audit)
    parts.append("</div>")
    return "\n".join(parts)


def part_rows(report: Any) -> tuple[np.ndarray | None, str]:
    """The positions of the strata a page or a text of the report shows, in :func:`worst_first`
    order, and that order in words: None (every stratum, in the table's order) up to
    :data:`MAX_TABLE_STRATA` strata."""
    if len(report.table) <= MAX_TABLE_STRATA:
        return None, ""
    order, order_words = worst_first(report)
    return order[:MAX_TABLE_STRATA], order_words


def _flag_counts(report: Any) -> list[tuple[str, int]]:
    """Each flag and the number of strata carrying it, most frequent first."""
    flags: dict[str, int] = {}
    if "flags" in report.table.columns:
        for text_ in report.table["flags"].tolist():
            for flag in str(text_).split(", ") if isinstance(text_, str) and text_ else ():
                flags[flag] = flags.get(flag, 0) + 1
    return sorted(flags.items(), key=lambda fk: (-fk[1], fk[0]))


def part_note(report: Any, shown: int, order_words: str, full_table: str | None, *, page: bool = False) -> str:
    """What a report of part of the strata shows: how many of how many, in which order, the flags
    over every stratum, and where the full table is (``full_table``: the file beside it). Plain
    text, or with ``page`` an HTML paragraph (text escaped, the file linked)."""
    esc = html.escape if page else str
    n = len(report.table)
    counted = "; ".join(f"{esc(f)} {k:,}" for f, k in _flag_counts(report))
    if full_table is not None:
        link = f"<a href='{esc(full_table)}'>{esc(full_table)}</a>" if page else full_table
        where = f"{link}, beside this {'page' if page else 'file'}"
    elif page:
        where = (
            "the report's <code>table</code>, or <code>save('strata.csv')</code> or <code>save('strata.xlsx')</code>"
        )
    else:
        where = "the report's table, or save('strata.csv') or save('strata.xlsx')"
    shows = f"This {'page' if page else 'report'} shows {shown:,} of the {n:,} strata"
    text = (
        (f"<b>{shows}</b>" if page else shows)
        + f", ordered {esc(order_words)}."
        + (f" Flags over all {n:,} strata: {counted}." if counted else "")
        + f" The full table, every stratum: {where}."
    )
    return f"<p class='bv-part'>{text}</p>" if page else text


def _html_strata(report: Any, rows: np.ndarray | None = None) -> str:
    """The strata table, its columns grouped estimate | pooled | checks, in a scrolling box: every
    stratum, or the table's ``rows`` (positions) in their order."""
    esc = html.escape
    t = display_table(report)
    starts = {
        cols_present[0]
        for cols_present in ([c for c in cols if c in t.columns] for _, cols in COLUMN_GROUPS)
        if cols_present
    }
    groups = ["<th rowspan='2'>stratum</th>"]
    for name, cols in COLUMN_GROUPS:
        k = sum(c in t.columns for c in cols)
        if k:
            groups.append(f"<th class='g gs' colspan='{k}'>{name}</th>")
    names = "".join(
        f"<th{' class=gs' if c in starts else ' class=f' if c == 'flags' else ''} "
        f"title='{esc(column_doc(c, interval_kind(report)))}'>"
        f"{esc(c).replace('_', '_<wbr>')}</th>"
        for c in t.columns
    )
    reasons = report.table["read_reason"].tolist() if "read_reason" in report.table.columns else [None] * len(t)
    if rows is not None:
        t = t.iloc[rows]
        reasons = [reasons[i] for i in rows]
    lines = []
    for (key, row), why in zip(t.iterrows(), reasons, strict=True):
        cls = " class='flag'" if row.get("flags") else ""
        cells = "".join(
            f"<td class='{'f' if c == 'flags' else ''}{' gs' if c in starts else ''}'"
            f"{_read_cell_title(c, why)}>{_read_cell_text(c, row, fmt_cell(c, row[c]))}</td>"
            for c in t.columns
        )
        lines.append(f"<tr{cls}><td class='s'>{esc(str(key))}</td>{cells}</tr>")
    return (
        "<div class='bv-scroll'><table class='bv-strata'><thead><tr>"
        + "".join(groups)
        + f"</tr><tr>{names}</tr></thead><tbody>"
        + "".join(lines)
        + "</tbody></table></div>"
    )


def _html_overall(report: Any) -> str:
    """The overall rates as an HTML table."""
    esc = html.escape
    rows = []
    for est, row in report.overall.iterrows():
        mark = " (population estimate)" if est == "reweighted" else ""
        rows.append(
            f"<tr><td class='s'>{esc(str(est))}{mark}</td><td>{fixed(row['estimate'])}</td>"
            f"<td>{fixed(row['lower'])}</td><td>{fixed(row['upper'])}</td></tr>"
        )
    return (
        "<b>Overall rate</b><div class='bv-scroll'><table><thead><tr><th>estimand</th>"
        "<th>estimate</th><th>lower</th><th>upper</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def _html_findings(report: Any, bounded: bool = False) -> str:
    """Model checks, notes and warnings as HTML lists; ``bounded``: at most
    :data:`MAX_WARNINGS_PER_FLAG` per-stratum warnings of each kind, then how many more."""
    esc = html.escape
    parts = []
    if len(report.checks):
        parts.append("<b>Model checks</b><ul>")
        for name, row in report.checks.iterrows():
            p = "" if pd.isna(row["p_value"]) else f" (p = {fixed(row['p_value'], 3)})"
            parts.append(f"<li>{esc(str(name))}: {esc(str(row['verdict']))}{p}</li>")
        parts.append("</ul>")
    if report.notes:
        parts.append("<b>Notes</b><ul>" + "".join(f"<li>{esc(n)}</li>" for n in report.notes) + "</ul>")
    if report.warnings:
        shown, more = _bounded_warnings(report) if bounded else (report.warnings, "")
        parts.append(
            "<b class='warn'>Warnings</b><ul class='warn'>"
            + "".join(f"<li>{esc(w)}</li>" for w in shown)
            + (f"<li>{esc(more)}</li>" if more else "")
            + "</ul>"
        )
    else:
        parts.append("<p>No warnings.</p>")
    return "\n".join(parts)


def _bounded_warnings(report: Any) -> tuple[list[str], str]:
    """The warnings with at most :data:`MAX_WARNINGS_PER_FLAG` per-stratum ones of each flag, and a
    line saying how many more of each kind there are (``""`` when none is left out)."""
    per_stratum = {f.message: f.flag for f in report.findings if len(f.strata) == 1}
    seen: dict[str, int] = {}
    shown = []
    for w in report.warnings:
        flag = per_stratum.get(w)
        if flag is not None:
            seen[flag] = seen.get(flag, 0) + 1
            if seen[flag] > MAX_WARNINGS_PER_FLAG:
                continue
        shown.append(w)
    left = [(f, k - MAX_WARNINGS_PER_FLAG) for f, k in seen.items() if k > MAX_WARNINGS_PER_FLAG]
    if not left:
        return shown, ""
    kinds = ", ".join(f"{k:,} more {f!r}" for f, k in left)
    return shown, (
        f"and {kinds} warnings, one per stratum: all in the report's warnings, "
        "and by stratum in the flags column of the full table"
    )


def _read_cell_title(col: str, reason: Any) -> str:
    """The ``read`` cell's tooltip: why the stratum reads that interval."""
    if col != "read" or not isinstance(reason, str):
        return ""
    return f" title='{html.escape(reason)}'"


def _read_cell_text(col: str, row: Any, text: str) -> str:
    """A cell's escaped text; the interval read is bold where it is not the pooled one: the adaptive
    interval (rows), or a stratum's own units interval beside the pooled model over units."""
    read = row.get("read")
    beside_pooled = read == "units" and pd.notna(row.get("pooled_mean", np.nan))
    if col in ("read", "lower", "upper") and (read == "adaptive" or beside_pooled):
        return f"<b>{html.escape(text)}</b>"
    return html.escape(text)
