"""Arguments of the ``bayeseval impact-ratio`` command, without the report engine.

Declaring the command needs only argparse, so ``bayeseval impact-ratio --help`` starts without
pandas or SciPy.
"""

from __future__ import annotations

import argparse

IMPACT_HELP = "bias-audit impact ratios (NYC Local Law 144) with intervals and four-fifths verdicts"
IMPACT_DESCRIPTION = (
    "Per group column and every intersection of them: applicants, selection rate (--selected) or "
    "scoring rate (--score: share above the full sample's median), impact ratio against the "
    "highest rate with an interval for the ratio to the highest true rate, and a four-fifths "
    "verdict. Rows with a missing group value are counted as unknown. Exits 2 on bad input."
)
IMPACT_EPILOG = (
    "example:\n  bayeseval impact-ratio applicants.csv --groups sex,race --selected hired "
    "--source 'ATS export 2024' --auditor 'A. Auditor' --out audit.html"
)

#: the formats of ``ImpactRatioReport.save`` (a test keeps the two equal)
SUFFIXES = (".html", ".htm", ".md", ".json", ".csv", ".xlsx")


def _out_path(text: str) -> str:
    if not text.lower().endswith(SUFFIXES):
        raise argparse.ArgumentTypeError(f"must end in {', '.join(SUFFIXES)}, got {text!r}")
    return text


def add_impact_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Declare the ``impact-ratio`` command's arguments on ``p`` and return it.

    Examples
    --------
    >>> p = add_impact_arguments(argparse.ArgumentParser())
    >>> p.parse_args(["x.csv", "--groups", "sex", "--selected", "hired"]).level
    0.95
    """
    p.add_argument("data", help="applicants file (.csv, .csv.gz or .parquet)")
    p.add_argument("--groups", required=True, help="group column(s), comma separated")
    outcome = p.add_mutually_exclusive_group(required=True)
    outcome.add_argument("--selected", default=None, help="0/1 column: 1 when selected")
    outcome.add_argument("--score", default=None, help="numeric score column (scoring rates)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals")
    p.add_argument("--threshold", type=float, default=0.8, help="impact ratio of the verdicts")
    p.add_argument(
        "--exclude-below",
        type=float,
        default=None,
        help="leave categories under this share of the rows out of the ratios (e.g. 0.02)",
    )
    p.add_argument("--justification", default=None, help="the reason for --exclude-below")
    p.add_argument("--source", default=None, help="where the data come from")
    p.add_argument("--explanation", default=None, help="what the data are")
    p.add_argument("--test-data", default=None, help="why test data were used, if they were")
    p.add_argument("--auditor", default=None, help="who performed the audit")
    p.add_argument("--date", default=None, help="date of the audit, YYYY-MM-DD (default: today)")
    p.add_argument(
        "--out", type=_out_path, default=None, help="also write the report: .html, .md, .json, .csv or .xlsx"
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p
