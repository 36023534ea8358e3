"""The ``bayeseval`` command line: a thin layer over the public functions.

Every sub-command accepts ``--json`` for machine-readable output. Exit codes:
0 on success, 1 when a gate fails, 2 on bad input with one line on stderr,
``bayeseval: error: <message>``, naming the option or file at fault, 3 when
``campaign propose`` has nothing to propose (no file is written; ``audit`` has its own
meaning of 3, a criterion not measured).

Options are checked by typed converters when the command line is parsed, so
a bad value is refused before any work starts. Files are read by
:func:`bayeseval.cli.io.read_table`, which turns every reader error (empty, garbled or
unreadable file) into a ``ValueError`` naming the file. ``main`` catches
``ValueError``, ``TypeError``, ``OSError``, ``OverflowError`` and
``sqlite3.Error`` (a campaign database that cannot be used) and nothing
else: any other exception is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bayeseval._api import metric_names
from bayeseval._api.version import VERSION
from bayeseval.cli.audit_args import AUDIT_DESCRIPTION, AUDIT_HELP, add_audit_arguments
from bayeseval.cli.compare import COMPARE_DESCRIPTION, COMPARE_EPILOG, COMPARE_HELP, add_compare_arguments
from bayeseval.cli.harness import add_harness_args, check_one_input
from bayeseval.cli.impact_args import (
    IMPACT_DESCRIPTION,
    IMPACT_EPILOG,
    IMPACT_HELP,
    add_impact_arguments,
)
from bayeseval.cli.io import (
    HelpFormatter,
    check_output,
    cli_warnings,
    one_line,
    read_table,
    save_and_print,
)
from bayeseval.cli.plan import add_plan
from bayeseval.cli.shared import (
    EXIT_OK,
    LEVEL,
    SEED,
    add_design_args,
    add_row_columns,
    design_from_args,
    float_between,
    int_at_least,
    json_default,
    metric_name,
    weights_json,
)

__all__ = ["main", "build_parser"]

EXIT_GATE_FAILED, EXIT_BAD_INPUT = 1, 2

# the exceptions that mean "bad input" at the top of main(); anything else is a bug
_INPUT_ERRORS = (ValueError, TypeError, OSError, OverflowError, sqlite3.Error)

# the interval methods of ``proportion_ci`` (``bayeseval.estimate.intervals.PROPORTION_METHODS``, spelled
# out so that the parser does not import SciPy; a test keeps the two equal)
PROPORTION_METHODS = ("wilson", "jeffreys", "clopper_pearson", "agresti_coull", "wald")
# and the per-stratum methods of ``gate`` (``bayeseval._kernels.binomial.STRATA_METHODS``): the
# adaptive interval borrows its tail split from the other strata
STRATA_METHODS = (*PROPORTION_METHODS, "adaptive")
# what the per-stratum intervals of report and gate promise (``bayeseval._kernels.binomial.GUARANTEES``)
GUARANTEES = ("stratum", "average")
_GUARANTEE_HELP = (
    "stratum (default): every stratum's interval covers its own rate at every true "
    "rate (exact); average: the pooled interval, covering on average over strata"
)

PROXY_HELP = (
    "column known on every row (a judge's label, a stronger model's prediction, or a "
    "probability): rows with an empty --y-true are the unlabelled rows, and each "
    "stratum's interval uses the proxy and the labels (metrics error_rate, accuracy, "
    "precision, npv)"
)

# the formats of ``Report.save`` (spelled out so that the parser does not import the report
# module; a test keeps the two equal)
_REPORT_SUFFIXES = (".html", ".htm", ".md", ".markdown", ".json", ".csv", ".xlsx", ".tex")


class _UsageError(ValueError):
    """A command-line usage error (unknown option, bad option value)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are raised (one line in main) instead of printed with usage."""

    def error(self, message: str) -> Any:  # noqa: D102 (argparse API)
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def _report_path(text: str) -> Path:
    """--out of report: a file in an existing folder whose suffix ``Report.save`` writes."""
    path = Path(text)
    if path.suffix.lower() not in _REPORT_SUFFIXES:
        raise argparse.ArgumentTypeError(f"must end in {', '.join(_REPORT_SUFFIXES)}, got {text!r}")
    _check_writable_parent(path, text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"is a folder, not a file: {text!r}")
    return path


def _folder(text: str) -> Path:
    """--out of demo: a folder (created if missing), not an existing file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"must be a folder, but {text!r} is an existing file")
    return path


def _check_writable_parent(path: Path, text: str) -> None:
    parent = path.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {str(parent)!r} does not exist (for {text!r})")


def _split_columns(value: str | None) -> list[str] | None:
    if value is None:
        return None
    cols = [c.strip() for c in value.split(",") if c.strip()]
    return cols or None


def _check_columns(frame: Any, path: str, columns: dict[str, Any]) -> None:
    """Every option naming a column must name a column of the file."""
    have = [str(c) for c in frame.columns]
    for option, names in columns.items():
        for col in [names] if isinstance(names, str) else (names or []):
            if col not in frame.columns:
                raise ValueError(f"{option} column {col!r} is not in {path!r}; columns are {have}")
    if len(frame) == 0:
        raise ValueError(f"data file {path!r} has a header but no rows")


def _typed_like(text: str, column: Any, option: str) -> Any:
    """Parse ``text`` to the type of ``column``'s values: int, float, bool or the text itself."""
    import pandas as pd  # deferred: fast start-up

    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype):
        table = {"true": True, "1": True, "false": False, "0": False}
        if text.strip().lower() not in table:
            raise ValueError(f"{option} {text!r} must be true or false: column {column.name!r} is boolean")
        return table[text.strip().lower()]
    if pd.api.types.is_integer_dtype(dtype):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{option} {text!r} must be an integer: column {column.name!r} holds integers") from None
    if pd.api.types.is_float_dtype(dtype):
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{option} {text!r} must be a number: column {column.name!r} holds numbers") from None
    return text


def _pos_label(args: argparse.Namespace, frame: Any, metric: str) -> Any:
    """The positive class: --pos-label parsed to the y_true column's type, or None.

    A class metric on one or two labels other than 0/1 needs --pos-label (which one is positive
    is not a guess the command makes).
    """
    import pandas as pd  # deferred: fast start-up

    from bayeseval.counts.metrics import get_metric  # deferred: fast start-up

    if getattr(args, "outcome", None) is not None:
        if args.pos_label is not None:
            raise ValueError(f"--pos-label applies to --y-true/--y-pred, not to --outcome {args.outcome!r}")
        return None
    if args.y_true is None or args.y_pred is None:
        raise ValueError("give --y-true and --y-pred (the label columns), or --outcome (per-row outcomes in [0, 1])")
    truth, pred = frame[args.y_true], frame[args.y_pred]
    labels = sorted({*pd.unique(truth.dropna()), *pd.unique(pred.dropna())}, key=repr)
    if args.pos_label is not None:
        value = _typed_like(args.pos_label, truth, "--pos-label")
        if value not in set(labels):
            raise ValueError(
                f"--pos-label {args.pos_label!r} is not a label of columns {args.y_true!r} and "
                f"{args.y_pred!r}; labels are {[_plain(v) for v in labels][:10]}"
            )
        return value
    binary = set(labels) <= {0, 1} or set(labels) <= {False, True}
    if get_metric(metric).needs_positive and len(labels) <= 2 and not binary:
        raise ValueError(
            f"metric {metric!r} needs --pos-label: columns {args.y_true!r}/{args.y_pred!r} hold "
            f"the labels {[_plain(v) for v in labels]}; say which one is the positive class"
        )
    return None


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _weights_for(value: Any, frame: Any, strata: list[str] | None) -> Any:
    """--weights keys (JSON strings) parsed to the strata columns' types; lists pass through."""
    if not isinstance(value, dict) or not strata:
        return value
    out = {}
    for key, share in value.items():
        parts = key.split(" | ") if len(strata) > 1 else [key]
        if len(parts) != len(strata):
            raise ValueError(f"--weights key {key!r} must give one label per strata column {strata}, joined by ' | '")
        typed = tuple(_typed_like(p, frame[c], "--weights key") for p, c in zip(parts, strata, strict=True))
        out[typed if len(typed) > 1 else typed[0]] = share
    return out


def _frame_records(frame: Any) -> list[dict[str, Any]]:
    out = frame.reset_index()
    out.columns = [str(c) for c in out.columns]
    return json.loads(out.to_json(orient="records"))


# -- demo ----------------------------------------------------------------------------------
def _cmd_demo(args: argparse.Namespace) -> int:
    from bayeseval.demo import run_demo  # deferred: fast start-up

    if args.out.is_dir() and any(args.out.iterdir()) and not args.force:
        raise ValueError(
            f"--out {str(args.out)!r} already holds files; give --force to let the demo "
            "replace its files there, or choose a new folder"
        )
    return run_demo(out=args.out, quick=args.quick, random_seed=args.seed, as_json=args.json)


# -- report ----------------------------------------------------------------------------------
def _load(args: argparse.Namespace) -> tuple[Any, list[str] | None]:
    """Read the data file and check that every column option names one of its columns."""
    data = read_table(args.data, name="data")
    strata = _split_columns(args.strata)
    _check_columns(
        data,
        args.data,
        {
            "--y-true": args.y_true,
            "--y-pred": args.y_pred,
            "--outcome": getattr(args, "outcome", None),
            "--strata": strata,
            "--proxy": getattr(args, "proxy", None),
            "--inclusion": getattr(args, "inclusion", None),
            "--cluster": getattr(args, "cluster", None),
        },
    )
    return data, strata


def _cmd_report(args: argparse.Namespace) -> int:
    from bayeseval.report.pipeline import evaluate  # deferred: fast start-up

    check_one_input(args)
    if args.out:  # before the work: never onto the data file, never over a file without --force
        check_output(args.out, force=args.force, inputs=[("data", args.data)] if args.data else [])
    if args.data is None:
        from bayeseval.cli.harness import report_inputs  # deferred: the readers load pandas

        data, strata, columns = report_inputs(args)
    else:
        data, strata = _load(args)
        columns = {
            "y_true": args.y_true,
            "y_pred": args.y_pred,
            "outcome": args.outcome,
            "proxy": args.proxy,
            "pos_label": _pos_label(args, data, args.metric),
            "design": design_from_args(args),
            "source": args.data,
        }
    groups = _split_columns(args.groups)
    source = columns.pop("source")
    _check_columns(data, source, {"--groups": groups})
    report = evaluate(
        data,
        strata=strata,
        metric=args.metric,
        weights=_weights_for(args.weights, data, strata),
        level=args.level,
        target_halfwidth=args.target_halfwidth,
        random_seed=args.seed,
        model=args.model,
        groups=_groups(groups, args.tolerance, args.min_trials),
        guarantee=args.guarantee,
        **columns,
    )
    report.source = source
    # a page of part of the strata links to the full table beside it, named after --out (not after
    # the temporary file that is renamed onto --out)
    beside = {"table_path": _table_beside(args.out)} if _is_html(args.out) else None
    save_and_print(report, args.out, args.json, lambda: str(report), default=json_default, save_options=beside)
    return EXIT_OK


def _groups(groups: Any, tolerance: Any, min_trials: Any) -> Any:
    """``groups=`` of evaluate: the group columns with the audit's options (refused without groups)."""
    from bayeseval._api.options import Groups

    if groups is None:
        for name, value in (("tolerance", tolerance), ("min_trials", min_trials)):
            if value is not None:
                raise TypeError(
                    f"{name} applies to the fairness audit: give groups too, got {name}={value!r} and groups=None"
                )
        return None
    return Groups(groups, tolerance=tolerance, min_trials=min_trials)


def _is_html(out: Any) -> bool:
    """Whether ``--out`` is an HTML page."""
    return bool(out) and Path(out).suffix.lower() in (".html", ".htm")


def _table_beside(out: Any) -> Path:
    """The full table's file beside the page ``out``: ``<name>.strata.csv``."""
    return Path(out).with_name(f"{Path(out).stem}.strata.csv")


# -- gate ----------------------------------------------------------------------------------
def _cmd_gate(args: argparse.Namespace) -> int:
    from bayeseval.report.gates import gate  # deferred: fast start-up

    if args.min_trials is None and args.max_halfwidth is None:
        raise ValueError("give --min-trials and/or --max-halfwidth: the gate needs a criterion")
    data, strata = _load(args)
    result = gate(
        data,
        y_true=args.y_true,
        y_pred=args.y_pred,
        outcome=args.outcome,
        strata=strata,
        metric=args.metric,
        min_trials=args.min_trials,
        max_halfwidth=args.max_halfwidth,
        level=args.level,
        method=args.method,
        pos_label=_pos_label(args, data, args.metric),
        guarantee=args.guarantee,
        design=design_from_args(args),
    )
    if args.json:
        print(json.dumps({"passed": result.passed, "strata": _frame_records(result.table)}, indent=2))
    else:
        print(result.to_text())
    return EXIT_OK if result.passed else EXIT_GATE_FAILED


_EPILOG = """\
examples:
  bayeseval demo
  bayeseval plan --halfwidth 0.05 --rate 0.7
  bayeseval report preds.csv --y-true y --y-pred pred --strata group --metric recall
  bayeseval gate preds.csv --y-true y --y-pred pred --strata group --max-halfwidth 0.1
  bayeseval compare answers.csv --strata task
  bayeseval campaign --help

exit codes: 0 success, 1 a gate failed, 2 bad input (one line on stderr),
  3 nothing to propose ('campaign propose': goal met, budget or pool spent; no file written;
  'audit' uses 3 for a criterion not measured, see 'bayeseval audit --help')
"""


def _add_demo(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="run the end-to-end example on bundled data",
        formatter_class=HelpFormatter,
        description="Fit a classifier on bundled data, evaluate it per group with intervals, pool "
        "small groups, check the model, plan a test set and run a short simulated labelling campaign.",
        epilog="example:\n  bayeseval demo --out demo-report",
    )
    demo.add_argument(
        "--out",
        type=_folder,
        default="bayeseval-report",
        help="folder for the HTML report and plots (created if missing)",
    )
    demo.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0, help="random seed")
    demo.add_argument("--quick", action="store_true", help="smaller simulation, for a fast look")
    demo.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    demo.add_argument("--force", action="store_true", help="replace the demo's files in a folder that holds files")
    demo.set_defaults(func=_cmd_demo)


def _add_data_args(p: argparse.ArgumentParser, outcome: bool = False, harness: bool = False) -> None:
    add_row_columns(p, outcome=outcome, harness=harness)
    p.add_argument("--strata", default=None, help="stratum column(s), comma separated")
    p.add_argument(
        "--metric",
        type=metric_name,
        default="error_rate",
        help=f"one of {metric_names.choices(composite=False)} (aliases in parentheses; "
        "balanced_accuracy, the mean of two rates, is reported by audit)",
    )
    p.add_argument(
        "--pos-label",
        default=None,
        help="positive class for recall, precision, ...: parsed as an integer when the "
        "--y-true column holds integers (a number for floats, true/false for booleans); "
        "required for two labels other than 0/1",
    )
    p.add_argument("--level", type=LEVEL, default=0.95, help="interval level")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _add_report(sub: Any) -> None:
    report = sub.add_parser(
        "report",
        help="per-stratum report with intervals and pooled estimates",
        formatter_class=HelpFormatter,
        description="Evaluate predictions per stratum: each stratum's rate with an interval that "
        "covers its own rate (--guarantee stratum, the default; --guarantee average reads the "
        "pooled interval), the pooled posterior beside it, the overall rate unweighted and "
        "reweighted, and model checks.",
        epilog="examples:\n  bayeseval report preds.csv --y-true y --y-pred pred --strata group "
        "--metric recall --pos-label yes --out report.html\n"
        "  bayeseval report preds.csv --y-true y --y-pred pred --strata group "
        '--weights \'{"a": 0.7, "b": 0.3}\'\n'
        "  bayeseval report --inspect logs/model-a.eval --strata metadata.category --metric accuracy\n"
        "  bayeseval report --inspect logs/model-a.eval --labels labels.csv --selected-by outcome "
        "--strata metadata.category --metric accuracy",
    )
    _add_data_args(report, outcome=True, harness=True)
    report.add_argument(
        "--weights",
        type=weights_json,
        default=None,
        help='population shares as JSON, e.g. \'{"a": 0.7, "b": 0.3}\' (keys parsed '
        "to the strata column's type; with several strata columns join the labels "
        "with ' | '), or a list in stratum order",
    )
    report.add_argument(
        "--target-halfwidth", type=float_between(0.0, 0.5), default=None, help="flag strata wider than this"
    )
    report.add_argument(
        "--model",
        default="beta_binomial",
        choices=("beta_binomial", "robust"),
        help="pooled model; 'robust' lets outlying strata stand apart",
    )
    report.add_argument("--seed", type=SEED, default=0, help="random seed (a non-negative integer)")
    report.add_argument("--guarantee", default="stratum", choices=GUARANTEES, help=_GUARANTEE_HELP)
    report.add_argument("--proxy", default=None, help=PROXY_HELP)
    add_design_args(report)
    add_harness_args(report)
    report.add_argument(
        "--groups", default=None, help="group column(s), comma separated: adds a fairness audit section"
    )
    report.add_argument(
        "--tolerance",
        type=float_between(0.0, 1.0),
        default=None,
        help="largest acceptable max-min gap of the audit (needs --groups)",
    )
    report.add_argument(
        "--min-trials",
        type=int_at_least(1),
        default=None,
        help="audit: leave groups with fewer trials out of the gap (needs --groups)",
    )
    report.add_argument(
        "--out",
        type=_report_path,
        default=None,
        help="also write the report to a file: .html, .md, .json, .csv, .xlsx (needs openpyxl) or .tex; "
        "an .html page of more than 200 strata shows the 200 to read first and links to the full "
        "table, written beside it as <name>.strata.csv",
    )
    report.add_argument("--force", action="store_true", help="replace --out if it exists (never the data file)")
    report.set_defaults(func=_cmd_report)


def _add_gate(sub: Any) -> None:
    gate_p = sub.add_parser(
        "gate",
        help="fail (exit 1) when strata miss minimum counts or maximum widths",
        formatter_class=HelpFormatter,
        description="Check a labelled test set against per-stratum minimum trial counts and/or "
        "maximum interval half-widths. Exits 1 with a table of the failing strata, so a release "
        "pipeline can block on it.",
        epilog="example:\n  bayeseval gate test.csv --y-true y --y-pred pred --strata region "
        "--metric recall --min-trials 300 --max-halfwidth 0.05",
    )
    _add_data_args(gate_p, outcome=True)
    gate_p.add_argument("--min-trials", type=int_at_least(1), default=None, help="minimum trials per stratum")
    gate_p.add_argument(
        "--max-halfwidth", type=float_between(0.0, 1.0), default=None, help="maximum interval half-width"
    )
    gate_p.add_argument(
        "--method",
        default=None,
        choices=STRATA_METHODS,
        help="interval method; when omitted, adaptive under --guarantee stratum "
        "(each stratum's exact-coverage interval, narrower where the stratum is "
        "typical of the others; that guarantee accepts only adaptive or "
        "clopper_pearson) and wilson under --guarantee average",
    )
    gate_p.add_argument("--guarantee", default="stratum", choices=GUARANTEES, help=_GUARANTEE_HELP)
    add_design_args(
        gate_p,
        inclusion_help="not taken by gate (it weights the labelled rows of a proxy design; gate takes no proxy)",
        population_help="'process' (default): the rate of the process that produced the rows; 'pool': the "
        "rate of the rows in the file themselves, known exactly (half-width 0)",
    )
    gate_p.set_defaults(func=_cmd_gate)


_CAMPAIGN_HELP = "run an active labelling campaign (create, propose, ingest, status, pending, release, export)"


def _add_campaign(sub: Any, *, full: bool) -> None:
    """The ``campaign`` command: in full, or a placeholder that only lists it in the help.

    The campaign command line imports the campaign engine (SciPy, pandas); the other commands
    and ``bayeseval --help`` do not need it, so ``main`` registers it in full only when the
    command is ``campaign``.
    """
    if full:
        from bayeseval.cli import campaign as campaign_cli  # deferred: heavy, campaign only

        campaign_cli.register(sub)
    else:
        sub.add_parser("campaign", help=_CAMPAIGN_HELP, add_help=False)


def _add_audit(sub: Any, *, full: bool) -> None:
    """The ``audit`` command: in full, or a placeholder that only lists it in the help."""
    if full:
        p = sub.add_parser("audit", help=AUDIT_HELP, description=AUDIT_DESCRIPTION)
        add_audit_arguments(p)
        p.set_defaults(func=_cmd_audit)
    else:
        sub.add_parser("audit", help=AUDIT_HELP, add_help=False)


def _add_impact(sub: Any, *, full: bool) -> None:
    """The ``impact-ratio`` command: in full, or a placeholder that only lists it in the help."""
    if full:
        p = sub.add_parser(
            "impact-ratio",
            help=IMPACT_HELP,
            description=IMPACT_DESCRIPTION,
            epilog=IMPACT_EPILOG,
            formatter_class=HelpFormatter,
        )
        add_impact_arguments(p)
        p.set_defaults(func=_cmd_impact)
    else:
        sub.add_parser("impact-ratio", help=IMPACT_HELP, add_help=False)


def _add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help=COMPARE_HELP,
        description=COMPARE_DESCRIPTION,
        epilog=COMPARE_EPILOG,
        formatter_class=HelpFormatter,
    )
    add_compare_arguments(p)
    p.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from bayeseval.cli.compare import run_compare  # the estimator is imported when the command runs

    return run_compare(args)


def _cmd_impact(args: argparse.Namespace) -> int:
    from bayeseval.cli.impact import run_impact  # deferred: heavy, run only

    return run_impact(args)


def _cmd_audit(args: argparse.Namespace) -> int:
    from bayeseval.cli.audit import run_audit  # deferred: heavy, run only

    return run_audit(args)


def build_parser(*, campaign: bool = True, audit: bool = True, impact: bool = True) -> argparse.ArgumentParser:
    """Build the argument parser of the ``bayeseval`` command.

    Parameters
    ----------
    campaign : bool, default True
        Register the ``campaign`` command with all its sub-commands. With ``False`` the command
        is only listed in the help, and the parser starts faster (no campaign engine import).
    audit : bool, default True
        Register the ``audit`` command in full (the same trade-off as ``campaign``).
    impact : bool, default True
        Register the ``impact-ratio`` command in full (the same trade-off).

    Returns
    -------
    argparse.ArgumentParser
        The parser with the ``demo``, ``plan``, ``report``, ``gate``, ``audit``, ``impact-ratio``,
        ``compare`` and ``campaign`` commands; its errors raise ``ValueError`` (``main`` prints
        them as one line and exits 2).

    Examples
    --------
    >>> args = build_parser().parse_args(["plan", "--halfwidth", "0.05"])
    >>> args.command, args.halfwidth
    ('plan', 0.05)
    """
    parser = _Parser(
        prog="bayeseval",
        formatter_class=HelpFormatter,
        description="How good is a fixed classifier, per subgroup, with honest uncertainty.",
        epilog=textwrap.dedent(_EPILOG),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_demo(sub)
    add_plan(sub)
    _add_report(sub)
    _add_gate(sub)
    _add_audit(sub, full=audit)
    _add_impact(sub, full=impact)
    _add_compare(sub)
    _add_campaign(sub, full=campaign)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` (its first argument that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the exit code.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 when a gate fails, 2 on bad input (with one line on
        stderr: ``bayeseval: error: <message>``).

    Examples
    --------
    >>> main(["plan", "--halfwidth", "0.05", "--rate", "0.7"])
    trials needed per stratum: 323
    planning rate: 0.7 (from --rate)
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command(argv)
    parser = build_parser(campaign=command == "campaign", audit=command == "audit", impact=command == "impact-ratio")
    with cli_warnings():  # a warning is one "warning: ..." line, once
        try:
            args = parser.parse_args(argv)
            if not getattr(args, "command", None):
                parser.print_help()
                return EXIT_BAD_INPUT
            return int(args.func(args) or 0)
        except SystemExit as exc:  # --help and --version end the parse with a status
            return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
        except _INPUT_ERRORS as exc:
            print(f"bayeseval: error: {one_line(exc)}", file=sys.stderr)
            return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
