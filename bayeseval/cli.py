"""The ``bayeseval`` command line: a thin layer over the public functions.

Every sub-command accepts ``--json`` for machine-readable output, exits 0 on
success, 1 when a gate fails, and 2 with a one-line reason on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_GATE_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class _Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def _read_table(path: str) -> Any:
    """Read a .csv (.csv.gz) or .parquet file, with a one-line error for anything else."""
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise ValueError(f"file not found: {path}")
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return pd.read_parquet(p)
    if suffix in (".csv", ".txt") or p.name.lower().endswith(".csv.gz"):
        return pd.read_csv(p)
    raise ValueError(f"unsupported file type {p.suffix!r} for {path}; use .csv or .parquet")


def _split_columns(value: str | None) -> list[str] | None:
    if value is None:
        return None
    cols = [c.strip() for c in value.split(",") if c.strip()]
    return cols or None


def _emit(payload: Any, as_json: bool, text: str) -> None:
    if as_json:
        print(json.dumps(payload, indent=2, default=_json_default))
    else:
        print(text)


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return None if np.isnan(obj) else float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def _frame_records(frame: Any) -> list[dict[str, Any]]:
    out = frame.reset_index()
    out.columns = [str(c) for c in out.columns]
    return json.loads(out.to_json(orient="records"))


# -- demo ----------------------------------------------------------------------------------
def _cmd_demo(args: argparse.Namespace) -> int:
    from bayeseval.demo import run_demo

    return run_demo(out=Path(args.out), quick=args.quick, random_seed=args.seed, as_json=args.json)


# -- plan ----------------------------------------------------------------------------------
def _cmd_plan(args: argparse.Namespace) -> int:
    from bayeseval import planning

    n = planning.sample_size(
        se=args.se, halfwidth=args.halfwidth, rate=args.rate, level=args.level, method=args.method
    )
    payload: dict[str, Any] = {
        "n_per_stratum": n,
        "halfwidth": args.halfwidth,
        "se": args.se,
        "rate": args.rate,
        "level": args.level,
        "method": args.method,
    }
    lines = [f"trials needed per stratum: {n}"]
    if args.groups and args.groups > 1:
        payload["n_groups"] = args.groups
        payload["minority_rows"] = n * args.groups
        lines.append(f"across {args.groups} groups: {n * args.groups} minority rows")
    if args.share:
        total = n * (args.groups or 1) / args.share
        payload["total_rows"] = int(-(-total // 1))
        lines.append(f"at a minority share of {args.share:g}: about {payload['total_rows']:,} rows in all")
    _emit(payload, args.json, "\n".join(lines))
    return EXIT_OK


# -- report ----------------------------------------------------------------------------------
def _cmd_report(args: argparse.Namespace) -> int:
    from bayeseval.report import evaluate

    data = _read_table(args.data)
    weights = json.loads(args.weights) if args.weights else None
    report = evaluate(
        data,
        y_true=args.y_true,
        y_pred=args.y_pred,
        strata=_split_columns(args.strata),
        metric=args.metric,
        weights=weights,
        level=args.level,
        target_halfwidth=args.target_halfwidth,
        random_seed=args.seed,
    )
    if args.out:
        report.save(args.out)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=_json_default))
    else:
        print(str(report))
        if args.out:
            print(f"\nreport written to {args.out}")
    return EXIT_OK


# -- gate ----------------------------------------------------------------------------------
def _cmd_gate(args: argparse.Namespace) -> int:
    from bayeseval.gate import gate

    if args.min_trials is None and args.max_halfwidth is None:
        raise ValueError("give --min-trials and/or --max-halfwidth: the gate needs a criterion")
    data = _read_table(args.data)
    result = gate(
        data,
        y_true=args.y_true,
        y_pred=args.y_pred,
        strata=_split_columns(args.strata),
        metric=args.metric,
        min_trials=args.min_trials,
        max_halfwidth=args.max_halfwidth,
        level=args.level,
        method=args.method,
    )
    if args.json:
        print(json.dumps({"passed": result.passed, "strata": _frame_records(result.table)}, indent=2))
    else:
        print(result.summary())
    return EXIT_OK if result.passed else EXIT_GATE_FAILED


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the ``bayeseval`` command."""
    parser = argparse.ArgumentParser(
        prog="bayeseval",
        formatter_class=_Formatter,
        description="How good is a fixed classifier, per subgroup, with honest uncertainty.",
        epilog=textwrap.dedent(
            """\
            examples:
              bayeseval demo
              bayeseval plan --halfwidth 0.05 --rate 0.7
              bayeseval report preds.csv --y-true y --y-pred pred --strata group --metric recall
              bayeseval gate preds.csv --y-true y --y-pred pred --strata group --max-halfwidth 0.1
              bayeseval campaign --help
            """
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run the end-to-end example on bundled data",
        formatter_class=_Formatter,
        description="Fit a classifier on bundled data, evaluate it per group with intervals, pool "
        "small groups, check the model, plan a test set and run a short simulated labelling campaign.",
        epilog="example:\n  bayeseval demo --out demo-report",
    )
    demo.add_argument("--out", default="bayeseval-report", help="folder for the HTML report and plots")
    demo.add_argument("--seed", type=int, default=0, help="random seed")
    demo.add_argument("--quick", action="store_true", help="smaller simulation, for a fast look")
    demo.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    demo.set_defaults(func=_cmd_demo)

    plan = sub.add_parser(
        "plan",
        help="trials needed for a target interval width",
        formatter_class=_Formatter,
        description="Sample size for one rate from a target half-width or standard error.",
        epilog="examples:\n  bayeseval plan --halfwidth 0.05 --rate 0.7\n"
        "  bayeseval plan --halfwidth 0.05 --rate 0.7 --groups 8 --share 0.004 --json",
    )
    target = plan.add_mutually_exclusive_group(required=True)
    target.add_argument("--halfwidth", type=float, help="target half-width of the interval")
    target.add_argument("--se", type=float, help="target standard error")
    plan.add_argument("--rate", type=float, default=None, help="planning rate (default: conservative 0.5)")
    plan.add_argument("--level", type=float, default=0.95, help="interval level")
    plan.add_argument("--method", default="normal", help="normal, wilson or clopper_pearson")
    plan.add_argument("--groups", type=int, default=None, help="number of subgroups needing this n")
    plan.add_argument("--share", type=float, default=None, help="minority share in the population")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.set_defaults(func=_cmd_plan)

    def add_data_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("data", help="predictions file (.csv or .parquet)")
        p.add_argument("--y-true", required=True, help="column with the true labels")
        p.add_argument("--y-pred", required=True, help="column with the predicted labels")
        p.add_argument("--strata", default=None, help="stratum column(s), comma separated")
        p.add_argument("--metric", default="error_rate", help="error_rate, accuracy, recall, precision, ...")
        p.add_argument("--level", type=float, default=0.95, help="interval level")
        p.add_argument("--json", action="store_true", help="machine-readable output")

    report = sub.add_parser(
        "report",
        help="per-stratum report with intervals and pooled estimates",
        formatter_class=_Formatter,
        description="Evaluate predictions per stratum: raw rates with Wilson intervals, pooled "
        "posterior estimates, the overall rate unweighted and reweighted, and model checks.",
        epilog="example:\n  bayeseval report preds.csv --y-true y --y-pred pred --strata group "
        "--metric recall --out report.html",
    )
    add_data_args(report)
    report.add_argument("--weights", default=None, help='population shares as JSON, e.g. \'{"a": 0.7, "b": 0.3}\'')
    report.add_argument("--target-halfwidth", type=float, default=None, help="flag strata wider than this")
    report.add_argument("--seed", type=int, default=0, help="random seed")
    report.add_argument("--out", default=None, help="write the report to .html or .md")
    report.set_defaults(func=_cmd_report)

    gate_p = sub.add_parser(
        "gate",
        help="fail (exit 1) when strata miss minimum counts or maximum widths",
        formatter_class=_Formatter,
        description="Check a labelled test set against per-stratum minimum trial counts and/or "
        "maximum interval half-widths. Exits 1 with a table of the failing strata, so a release "
        "pipeline can block on it.",
        epilog="example:\n  bayeseval gate test.csv --y-true y --y-pred pred --strata region "
        "--metric recall --min-trials 300 --max-halfwidth 0.05",
    )
    add_data_args(gate_p)
    gate_p.add_argument("--min-trials", type=int, default=None, help="minimum trials per stratum")
    gate_p.add_argument("--max-halfwidth", type=float, default=None, help="maximum interval half-width")
    gate_p.add_argument("--method", default="wilson", help="interval method")
    gate_p.set_defaults(func=_cmd_gate)

    try:
        from bayeseval.active import cli as campaign_cli
    except ImportError:  # the campaign module is optional at this level
        campaign_cli = None
    if campaign_cli is not None and hasattr(campaign_cli, "register"):
        campaign_cli.register(sub)
        campaign = sub.choices.get("campaign")
        if campaign is not None and campaign.get_default("func") is None:
            campaign.set_defaults(func=campaign_cli.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, KeyError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"bayeseval {args.command}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
