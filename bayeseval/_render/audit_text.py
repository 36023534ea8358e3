"""Plain-text rendering of a fairness audit: a summary that fits a terminal.

The audit's tables are data (:class:`bayeseval.fairness.result.Audit`); this module only renders
them. The summary names each criterion's verdict, the gap with its interval and the two
groups at its ends (with their rates and trials), then the notes; every line is at most
``width`` characters (long group labels are wrapped onto indented lines, never cut), except
a single word longer than the width (a long file path), which is kept whole.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from bayeseval._render.formats import fixed

#: the widest line of the summary by default (a terminal of 100 columns)
WIDTH = 100


def _num(value: Any, digits: int = 3) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(v) else fixed(v, digits)


def _group_rate(groups: Any, metric: str, label: Any) -> str:
    """``label (rate 0.721, 1,212 trials)`` from the groups table, or the bare label."""
    rows = groups[(groups["metric"] == metric) & (groups["group"] == label)]
    if not len(rows):
        return str(label)
    row = rows.iloc[0]
    return f"{label} (rate {_num(row['rate'])}, {int(row['trials']):,} trials)"


def verdict_lines(audit: Any, width: int = WIDTH) -> list[str]:
    """One headline per criterion and metric, and the groups at the ends of its gap."""
    lines = []
    for _, v in audit.verdicts.iterrows():
        level = f"{float(v['level']):.3g}"
        head = (
            f"{v['criterion']} / {v['metric']}: {v['verdict']}; gap {_num(v['gap'])}, "
            f"{level} interval [{_num(v['lower'])}, {_num(v['upper'])}]"
        )
        if isinstance(v.get("p_exceeds"), float) and not math.isnan(v["p_exceeds"]):
            head += f", P(gap > tolerance) {_num(v['p_exceeds'], 2)}"
        lines += _wrap(head, width, "  ", "      ")
        if isinstance(v.get("high"), str) and v["high"]:
            ends = (
                f"highest {_group_rate(audit.groups, v['metric'], v['high'])}; lowest "
                f"{_group_rate(audit.groups, v['metric'], v['low'])}"
            )
            lines += _wrap(ends, width, "      ", "      ")
        if isinstance(v.get("note"), str) and v["note"]:
            lines += _wrap(v["note"], width, "      ", "      ")
    return lines


def headline(audit: Any) -> str:
    """The audit in one sentence: what was audited and how many criteria are decided how."""
    metrics = list(dict.fromkeys(audit.groups["metric"]))
    factors = " x ".join(audit.columns) if audit.columns else "groups"
    n_groups = audit.groups["group"].nunique()
    verdicts = audit.verdicts["verdict"] if len(audit.verdicts) else audit.verdicts
    counts = verdicts[verdicts != "no tolerance"].value_counts() if len(verdicts) else {}
    decided = ", ".join(f"{int(n)} {verdict}" for verdict, n in counts.items())
    return (
        f"Fairness audit of {', '.join(metrics)} over {factors} ({n_groups} groups)"
        + (f": {decided}" if decided else f": {_no_verdict(audit)}")
        + "."
    )


def _no_verdict(audit: Any) -> str:
    if audit.tolerance is None:
        return "no tolerance given, so no verdicts"
    return "no fairness criterion among the metrics, so no verdicts"


def _wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """Lines of at most ``width`` characters; paths and long labels break only at spaces."""
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False, break_long_words=False
    )


def summary(audit: Any, *, width: int = WIDTH, more: str | None = None) -> str:
    """The summary text (see the module docstring); ``more`` is a last line on where to read on."""
    if width < 40:
        raise ValueError(f"width must be at least 40 characters, got {width!r}")
    out = _wrap(headline(audit), width)
    out += _wrap(audit.settings, width)
    if len(audit.verdicts):
        out += ["", "Verdicts"] + verdict_lines(audit, width)
    if audit.notes:
        out.append("")
        for note in audit.notes:
            out += _wrap(note, width, "note: ", "      ")
    if more:
        out += [""] + _wrap(more, width)
    return "\n".join(out)
