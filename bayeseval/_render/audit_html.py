"""HTML and text renderings of a fairness audit, shared by :class:`bayeseval.fairness.result.Audit`
and the evaluation report's audit section.

The audit's tables are data; these functions only render them: the verdicts, the
differences and gaps, the labels needed to decide and the per-group table, each an escaped
HTML table that scrolls sideways inside the page instead of overflowing it. The forest plot
is drawn by :func:`bayeseval.plots.disparities` and handed in as PNG bytes.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._render.formats import fixed

#: the audit's forest plot is embedded up to this many rows (differences and gaps)
MAX_PLOT_ROWS = 80
#: the audit's groups table starts folded beyond this many rows
_OPEN_GROUP_ROWS = 40


def _fmt_num(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return fixed(value, digits)


def _fmt_interval(lo: Any, hi: Any) -> str:
    return "" if _fmt_num(lo) == "" or _fmt_num(hi) == "" else f"[{_fmt_num(lo)}, {_fmt_num(hi)}]"


def _audit_group_flags(row: Any) -> str:
    flags = []
    if row["empty"]:
        flags.append("empty: pooled value is a prediction")
    if row["zero_successes"]:
        flags.append("0 of n")
    if row["conflict"]:
        flags.append("conflicts with the other groups")
    if not row["empty"] and not row["in_gap"]:
        flags.append("not in the gap (few trials)")
    return ", ".join(flags)


def _html_rows(header: Sequence[str], rows: Sequence[tuple[Sequence[str], bool]], left: int = 1) -> str:
    """A scrolling table: cells are escaped; the first ``left`` columns align left."""
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for cells, flagged in rows:
        tds = "".join(f"<td{' class=s' if i < left else ''}>{esc(c)}</td>" for i, c in enumerate(cells))
        body.append(f"<tr{' class=flag' if flagged else ''}>{tds}</tr>")
    return (
        f"<div class='bv-scroll'><table><thead><tr>{head}</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table></div>"
    )


def gap_text(r: Any) -> str:
    """One metric's gap in words: 'tpr gap 0.120 [0.010, 0.230]', or 'tpr gap not measured'."""
    if not np.isfinite(r.gap):
        return f"{r.metric} gap not measured"
    return f"{r.metric} gap {fixed(r.gap, 3)} [{fixed(r.lower, 3)}, {fixed(r.upper, 3)}]"


def _html_verdicts(res: Any) -> str:
    rows = [
        (
            [
                r.criterion,
                r.metric,
                _fmt_num(r.gap) or "not measured",
                _fmt_interval(r.lower, r.upper),
                f"{r.level:g}",
                r.metric_verdict,
                _fmt_num(r.p_exceeds),
                r.verdict,
                f"{r.high} / {r.low}" if r.high else "",
                r.note,
            ],
            r.verdict in ("outside", "not measured"),
        )
        for r in res.verdicts.itertuples()
    ]
    return "<b>Verdicts</b>" + _html_rows(
        [
            "criterion",
            "metric",
            "max-min gap",
            "interval",
            "level",
            "metric verdict",
            "P(gap > tol)",
            "verdict",
            "highest / lowest group",
            "note",
        ],
        rows,
        left=2,
    )


def _html_disparities(res: Any) -> str:
    d = res.disparities[res.disparities["measure"] != "ratio"]
    rows = []
    for r in d.itertuples():
        versus = "max-min gap: " + r.group if r.measure == "max-min gap" else f"{r.group} - {r.reference}"
        measured = "prediction, no data" if r.predicted else _fmt_num(r.estimate)
        rows.append(
            (
                [
                    r.metric,
                    versus,
                    measured,
                    _fmt_interval(r.lower, r.upper),
                    _fmt_num(r.posterior_mean),
                    _fmt_interval(r.posterior_lower, r.posterior_upper),
                    _fmt_num(r.p_exceeds),
                ],
                bool(r.predicted),
            )
        )
    methods = ", ".join(sorted(set(d["method"])))
    return (
        "<b>Disparities</b> (differences to the reference group and the max-min gap per "
        f"metric; intervals: {html.escape(methods)}; ratios are in the JSON and in "
        "<code>Audit.disparities</code>)"
        + _html_rows(
            ["metric", "comparison", "estimate", "interval", "posterior mean", "posterior interval", "P(|d| > tol)"],
            rows,
            left=2,
        )
    )


#: the groups table's optional interval columns: (header, lower column, upper column); shown when any group has one
_GROUP_INTERVALS = (
    ("adaptive", "adaptive_lower", "adaptive_upper"),
    ("Wilson", "wilson_lower", "wilson_upper"),
    ("pooled interval", "pooled_lower", "pooled_upper"),
)


def _html_audit_groups(res: Any) -> str:
    """Each group's rate and the interval it reads (``read``: adaptive, units, ...), then the
    other intervals that any group has (a units or proxy audit has no Wilson or pooled ones)."""
    g = res.groups
    shown = [c for c in _GROUP_INTERVALS if g[[c[1], c[2]]].notna().to_numpy().any()]
    rows = []
    for _, r in g.iterrows():
        flags = _audit_group_flags(r)
        cells = [str(r["group"]), str(r["metric"]), _fmt_num(r["successes"]), _fmt_num(r["trials"])]
        cells += [_fmt_num(r["rate"]), _fmt_interval(r["lower"], r["upper"]), str(r["read"])]
        for header, lo, hi in shown:
            if header == "pooled interval":
                cells.append(_fmt_num(r["pooled_mean"]) + (" (predicted)" if r["predicted"] else ""))
            cells.append(_fmt_interval(r[lo], r[hi]))
        rows.append((cells + [flags], bool(flags)))
    header = ["group", "metric", "successes", "trials", "rate", "interval", "read"]
    for name, _, _ in shown:
        header += ["pooled mean", name] if name == "pooled interval" else [name]
    table = _html_rows([*header, "flags"], rows, left=2)
    opened = " open" if len(rows) <= _OPEN_GROUP_ROWS else ""
    return (
        f"<details{opened}><summary><b>Groups</b> ({len(rows)} rows: group x metric; "
        "interval: the one each group reads, named in read)</summary>" + table + "</details>"
    )


def audit_lines(res: Any) -> list[str]:
    """The audit's verdicts as text lines (terminal and Markdown)."""
    lines = [res.settings]
    for r in res.verdicts.itertuples():
        gap = gap_text(r).removeprefix(f"{r.metric} ")
        ends = f" (highest {r.high}, lowest {r.low})" if r.high else ""
        note = f"; {r.note}" if r.note else ""
        lines.append(f"{r.criterion} ({r.metric}): {gap}{ends} -> {r.verdict}{note}")
    return lines


def plot_rows(res: Any) -> int:
    """Rows of the disparity forest plot: the differences and the gaps (not the ratios)."""
    return int((res.disparities["measure"] != "ratio").sum())


def section(res: Any, png: bytes | None = None, *, heading: str = "h3") -> str:
    """The audit as one HTML ``<section>``: settings, notes, verdicts, disparities, groups, plot.

    ``png`` is the forest plot (None: no plot); with more than :data:`MAX_PLOT_ROWS` rows
    the section says how to draw a subset instead.
    """
    esc = html.escape
    parts = [f"<{heading}>Fairness audit</{heading}>", f"<p>{esc(res.settings)}</p>"]
    if res.notes:
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in res.notes) + "</ul>")
    if len(res.verdicts):
        parts.append(_html_verdicts(res))
    parts.append(_html_disparities(res))
    if len(res.labels_needed):
        rows = [
            (
                [r.criterion, r.metric, r.group, _fmt_num(r.trials), _fmt_num(r.extra_trials), _fmt_num(r.extra_rows)],
                False,
            )
            for r in res.labels_needed.itertuples()
        ]
        parts.append(
            "<b>Labels needed to decide</b> (at the current rates)"
            + _html_rows(["criterion", "metric", "group", "trials", "extra trials", "extra rows"], rows, left=3)
        )
    parts.append(_html_audit_groups(res))
    n_rows = plot_rows(res)
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<img alt='forest plot of the disparities' src='data:image/png;base64,{data}'/>")
    elif n_rows > MAX_PLOT_ROWS:
        parts.append(
            f"<p>(disparity plot omitted: {n_rows} rows are more than {MAX_PLOT_ROWS}; "
            "draw a subset with bayeseval.plots.disparities(audit, metrics=...))</p>"
        )
    return "<section class='bv-audit'>" + "\n".join(parts) + "</section>"
