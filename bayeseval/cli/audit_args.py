"""Arguments of the ``bayeseval audit`` command, without the audit engine.

Declaring the command needs only argparse, so ``bayeseval audit --help`` starts without
pandas or SciPy; the ``bayeseval`` command line declares it from here and runs it with
:func:`bayeseval.cli.audit.run_audit`.
"""

from __future__ import annotations

import argparse

from bayeseval._api.metric_names import choices
from bayeseval.cli.harness import add_harness_args
from bayeseval.cli.shared import add_row_columns
from bayeseval.fairness.options import GAP_METHODS, MIN_TRIALS, MODELS

AUDIT_HELP = "fairness audit: per-group rates, disparities and verdicts"
AUDIT_DESCRIPTION = (
    "Per-group rates with adaptive, Wilson and pooled intervals; differences, ratios and the "
    "max-min gap with their intervals; a verdict per fairness criterion. Exits 1 when a "
    "criterion is decided outside the tolerance, 3 when none is but a criterion is not measured "
    "at the tolerance given (fewer than two groups with --min-trials trials), 2 on bad input, "
    "else 0."
)


def add_audit_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Declare the ``audit`` command's arguments on ``p`` and return it.

    Examples
    --------
    >>> p = add_audit_arguments(argparse.ArgumentParser())
    >>> p.parse_args(["x.csv", "--y-true", "y", "--y-pred", "p", "--groups", "g"]).level
    0.95
    """
    add_row_columns(p, outcome=True, harness=True)
    p.add_argument("--groups", required=True, help="group column(s), comma separated")
    p.add_argument(
        "--metrics",
        default=None,
        help=f"metrics, comma separated, of {choices()} (aliases in parentheses; default: all)",
    )
    p.add_argument(
        "--reference",
        default=None,
        help="reference group: its value, or with several group columns the values "
        "joined by ' | ' as the tables label it (default, per metric: the "
        "measured group with the most trials)",
    )
    p.add_argument("--tolerance", type=float, default=None, help="largest acceptable gap, in (0, 1)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level")
    p.add_argument("--pos-label", default=None, help="positive class (default 1 for 0/1 labels)")
    p.add_argument("--seed", type=int, default=0, help="random seed (a non-negative integer)")
    p.add_argument(
        "--model",
        default=None,
        choices=MODELS,
        help="pooled model (default: crossed for several group columns, else robust)",
    )
    p.add_argument(
        "--min-trials",
        type=int,
        default=MIN_TRIALS,
        help="leave groups with fewer trials out of the max-min gap and the verdicts "
        f"(default {MIN_TRIALS}; 1 keeps every measured group)",
    )
    p.add_argument(
        "--method",
        default="max_t",
        choices=GAP_METHODS,
        help="max-min gap interval: max_t (simultaneous pairwise differences, default) "
        "or bonferroni (exact projection of Clopper-Pearson intervals)",
    )
    p.add_argument(
        "--guarantee",
        default="stratum",
        choices=("stratum", "average"),
        help="what each group's lower/upper promise: stratum (default), its own interval "
        "covering its rate at every true rate; average, the pooled interval (its "
        "own where its count is atypical), covering on average over groups",
    )
    p.add_argument(
        "--proxy",
        default=None,
        help="column known on every row (a judge's label, a stronger model's "
        "prediction, or a probability): rows with an empty --y-true are the "
        "unlabelled rows (metrics selection_rate, error_rate, accuracy, ppv, npv)",
    )
    p.add_argument(
        "--inclusion", default=None, help="with --proxy: column of each labelled row's inclusion probability"
    )
    p.add_argument(
        "--cluster",
        default=None,
        help="column whose rows sharing a value are one sampling unit (an item answered several times); "
        "each group's interval then comes from its units, and the differences and gap from those intervals",
    )
    p.add_argument(
        "--out",
        default=None,
        help="also write the audit to a file: .html (self-contained, with the forest "
        "plot), .md, .csv (the per-group table), .xlsx (every table) or .json",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_harness_args(p)
    return p
