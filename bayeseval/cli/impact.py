"""``bayeseval impact-ratio``: the impact-ratio report from a table of rows."""

from __future__ import annotations

import json
from typing import Any

from bayeseval.cli.io import atomic_output, check_output, read_table
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
    if args.out:
        with atomic_output(args.out) as tmp:
            report.save(tmp)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.to_text(100))
        if args.out:
            print(f"\nreport written to {args.out}")
    return 0
