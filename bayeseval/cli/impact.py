"""``bayeseval impact-ratio``: the impact-ratio report from a table of rows."""

from __future__ import annotations

from typing import Any

from bayeseval.cli.io import check_output, read_table, save_and_print
from bayeseval.fairness.impact import impact_ratio_report


def run_impact(args: Any) -> int:
    """Run ``bayeseval impact-ratio`` from parsed arguments; print the report, return 0.

    The command line's text is :meth:`ImpactRatioReport.to_text` (at most 100 columns);
    ``--json`` prints :meth:`ImpactRatioReport.to_dict`; ``--out`` also writes a file,
    atomically, never onto the data file, and over an existing file only with ``--force``.
    """
    if args.out:
        check_output(args.out, force=getattr(args, "force", False), inputs=[("data", args.data)])
    data = read_table(args.data, name="data")
    groups = [c.strip() for c in args.groups.split(",") if c.strip()]
    report = impact_ratio_report(
        data,
        groups=groups,
        selected=args.selected,
        score=args.score,
        level=args.level,
        threshold=args.threshold,
        exclude_below=args.exclude_below,
        justification=args.justification,
        source=args.source or args.data,
        explanation=args.explanation,
        test_data=args.test_data,
        auditor=args.auditor,
        date=args.date,
    )
    save_and_print(report, args.out, args.json, lambda: report.to_text(100))
    return 0
