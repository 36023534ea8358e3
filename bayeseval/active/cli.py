"""``bayeseval campaign create|propose|ingest|status``: run a labelling campaign from files.

The lead's ``bayeseval/cli.py`` calls :func:`register` on its sub-parsers; this module can also
run on its own (``python -m bayeseval.active.cli campaign ...``). Exit codes: 0 on success,
2 with a one-line reason on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bayeseval.cli import _Formatter, _read_table

__all__ = ["register", "run", "build_parser", "main"]

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def _write_table(frame: Any, path: str) -> None:
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        frame.to_parquet(p)
    elif suffix == ".csv":
        frame.to_csv(p)
    else:
        raise ValueError(f"unsupported output type {p.suffix!r} for {path}; use .csv or .parquet")


def _columns(value: str) -> list[str]:
    cols = [c.strip() for c in value.split(",") if c.strip()]
    if not cols:
        raise ValueError(f"--strata needs one or more column names, got {value!r}")
    return cols


def _scalar(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return value


# -- commands ------------------------------------------------------------------------------
def _create(args: argparse.Namespace) -> int:
    from bayeseval.active import Campaign

    pool = _read_table(args.pool)
    if args.id_column:
        if args.id_column not in pool.columns:
            raise ValueError(f"--id-column {args.id_column!r} is not in {args.pool}; columns are {list(pool.columns)[:20]}")
        pool = pool.set_index(args.id_column)
    else:
        pool.index.name = "row"
    bins: Any = None
    if args.score_bins:
        bins = int(args.score_bins) if args.score_bins.isdigit() else [float(x) for x in args.score_bins.split(",")]
    c = Campaign.create(
        args.db,
        pool,
        strata=_columns(args.strata) if args.strata else None,
        prediction=args.prediction,
        metric=args.metric,
        target_halfwidth=args.target_halfwidth,
        level=args.level,
        goal=args.goal,
        rule=args.rule,
        score=args.score,
        score_bins=bins,
        budget=args.budget,
        pos_label=_scalar(args.pos_label),
        random_seed=args.seed,
    )
    print(f"created campaign {args.db}: {len(pool)} pool rows, {len(c.strata)} strata, metric {c.metric.name}, rule {args.rule}")
    c.close()
    return EXIT_OK


def _propose(args: argparse.Namespace) -> int:
    from bayeseval.active import Campaign

    c = Campaign.open(args.db)
    try:
        batch = c.propose(args.batch_size)
        out = batch.copy()
        if out.index.name is None:
            out.index.name = "row"
        out["label"] = None
        _write_table(out, args.out)
        if len(batch) == 0:
            reason = "the goal is met" if c.done else "the budget or the pool is spent"
            print(f"nothing to propose: {reason}; wrote an empty file {args.out}")
        else:
            print(f"proposed {len(batch)} rows (round {int(batch['round'].iloc[0])}); fill the 'label' column of {args.out} and run 'bayeseval campaign ingest'")
    finally:
        c.close()
    return EXIT_OK


def _ingest(args: argparse.Namespace) -> int:
    from bayeseval.active import Campaign

    frame = _read_table(args.labels)
    c = Campaign.open(args.db)
    try:
        id_col = args.id_column or c.config.get("index_name") or "row"
        if id_col not in frame.columns:
            raise ValueError(f"--id-column {id_col!r} is not in {args.labels}; columns are {list(frame.columns)[:20]}")
        if args.label_column not in frame.columns:
            raise ValueError(f"--label-column {args.label_column!r} is not in {args.labels}; columns are {list(frame.columns)[:20]}")
        n = c.ingest(frame, id_column=id_col, label_column=args.label_column)
        state = "goal met" if c.done else "not done yet"
        print(f"ingested {n} labels; {c.labels_used} labels in all; {state}")
    finally:
        c.close()
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from bayeseval.active import Campaign
    from bayeseval.counts import stratum_labels

    c = Campaign.open(args.db)
    try:
        st = c.status()
        forecast = c.forecast()
        st["forecast"] = forecast.to_numpy()
        done, used = c.done, c.labels_used
        if args.json:
            table = st.copy()
            table.index = stratum_labels(st.index)
            payload = {
                "db": str(args.db),
                "done": bool(done),
                "labels_used": int(used),
                "target_halfwidth": c.config["target_halfwidth"],
                "level": c.config["level"],
                "goal": c.config["goal"],
                "overall": st.attrs.get("overall"),
                "strata": json.loads(table.reset_index(names="stratum").to_json(orient="records")),
            }
            print(json.dumps(payload, indent=2, default=float))
        else:
            cols = ["labelled", "pending", "trials", "successes", "mean", "lower", "upper", "halfwidth", "done", "forecast"]
            print(st[cols].to_string(float_format=lambda x: f"{x:.4f}"))
            if "overall" in st.attrs:
                o = st.attrs["overall"]
                print(f"overall: {o['mean']:.4f} [{o['lower']:.4f}, {o['upper']:.4f}] half-width {o['halfwidth']:.4f}")
            print(
                f"labels used: {used}; target half-width {c.config['target_halfwidth']} at level "
                f"{c.config['level']}; {'done' if done else 'not done'}"
            )
    finally:
        c.close()
    return EXIT_OK


_COMMANDS = {"create": _create, "propose": _propose, "ingest": _ingest, "status": _status}


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``campaign`` command; return the exit code (2 with a one-line reason on bad input)."""
    cmd = getattr(args, "campaign_command", None)
    if cmd not in _COMMANDS:
        print("bayeseval campaign: error: choose a sub-command: create, propose, ingest or status", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return _COMMANDS[cmd](args)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        text = str(exc).strip()
        message = text.splitlines()[0] if text else type(exc).__name__
        print(f"bayeseval campaign {cmd}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``campaign`` command (with create/propose/ingest/status) to ``subparsers``."""
    campaign = subparsers.add_parser(
        "campaign",
        help="run an active labelling campaign (create, propose, ingest, status)",
        description=(
            "Run a labelling campaign that stops when every stratum's credible interval is "
            "narrow enough. State lives in one SQLite file (--db); 'propose' writes the rows to "
            "label, 'ingest' reads them back with a filled 'label' column."
        ),
        epilog=(
            "examples:\n"
            "  bayeseval campaign create --pool pool.csv --id-column id --strata region "
            "--prediction pred --db camp.db --seed 1\n"
            "  bayeseval campaign propose --db camp.db --batch-size 50 --out batch.csv\n"
            "  bayeseval campaign ingest --db camp.db --labels batch.csv\n"
            "  bayeseval campaign status --db camp.db"
        ),
        formatter_class=_Formatter,
    )
    sub = campaign.add_subparsers(dest="campaign_command", metavar="SUBCOMMAND")

    p = sub.add_parser(
        "create",
        help="create a campaign from a pool file",
        description="Create a campaign database from a pool of unlabelled predictions (CSV or Parquet).",
        epilog="example:\n  bayeseval campaign create --pool pool.parquet --id-column id --strata region,age "
        "--prediction pred --metric error_rate --target-halfwidth 0.05 --db camp.db --seed 1",
        formatter_class=_Formatter,
    )
    p.add_argument("--pool", required=True, help="pool file (.csv or .parquet)")
    p.add_argument("--id-column", default=None, help="column holding the row id (default: the row number)")
    p.add_argument("--strata", default=None, help="stratum column(s), comma separated")
    p.add_argument("--prediction", required=True, help="column with the predicted label")
    p.add_argument("--metric", default="error_rate", help="error_rate, accuracy, recall, precision, ...")
    p.add_argument("--target-halfwidth", type=float, default=0.05, help="target credible-interval half-width")
    p.add_argument("--level", type=float, default=0.95, help="credible level")
    p.add_argument("--goal", default="each", choices=["each", "overall"], help="every stratum or the weighted overall rate")
    p.add_argument("--rule", default="expected_width", help="proposal rule")
    p.add_argument("--score", default=None, help="column with the top-class probability (informative prior)")
    p.add_argument("--score-bins", default=None, help="N equal-count score bins, or comma-separated edges")
    p.add_argument("--pos-label", default="1", help="positive class for class metrics")
    p.add_argument("--budget", type=int, default=None, help="maximum number of labels")
    p.add_argument("--seed", type=int, default=None, help="random seed")
    p.add_argument("--db", required=True, help="campaign database file to create")

    p = sub.add_parser(
        "propose",
        help="write the next rows to label",
        description="Propose the next batch and write it with an empty 'label' column.",
        epilog="example:\n  bayeseval campaign propose --db camp.db --batch-size 50 --out batch.csv",
        formatter_class=_Formatter,
    )
    p.add_argument("--db", required=True, help="campaign database")
    p.add_argument("--batch-size", type=int, default=50, help="rows to propose")
    p.add_argument("--out", required=True, help="output file (.csv or .parquet)")

    p = sub.add_parser(
        "ingest",
        help="read labelled rows back",
        description="Record labels for proposed rows; all or nothing (any bad row rejects the file).",
        epilog="example:\n  bayeseval campaign ingest --db camp.db --labels batch.csv --label-column label",
        formatter_class=_Formatter,
    )
    p.add_argument("--db", required=True, help="campaign database")
    p.add_argument("--labels", required=True, help="labelled file (.csv or .parquet)")
    p.add_argument("--id-column", default=None, help="row id column (default: the pool's id column name)")
    p.add_argument("--label-column", default="label", help="column with the true labels")

    p = sub.add_parser(
        "status",
        help="show per-stratum progress",
        description="Per-stratum labels, posterior mean and credible interval, half-width, done flag and forecast.",
        epilog="example:\n  bayeseval campaign status --db camp.db --json",
        formatter_class=_Formatter,
    )
    p.add_argument("--db", required=True, help="campaign database")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    campaign.set_defaults(func=run)
    return campaign


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser with only the ``campaign`` command (for tests and ``python -m``)."""
    parser = argparse.ArgumentParser(prog="bayeseval", formatter_class=_Formatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "command", None) != "campaign":
        parser.print_help()
        return EXIT_BAD_INPUT
    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
