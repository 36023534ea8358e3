"""``bayeseval campaign create|propose|ingest|status|pending|release|export|forecast|history|report|labelstudio-config``.

Run a labelling campaign from files. The main ``bayeseval/cli/main.py`` calls :func:`register` on
its sub-parsers; this module can also run on its own (``python -m bayeseval.cli.campaign
campaign ...``).

Exit codes: 0 on success; 2 on bad input, with exactly one line on stderr naming the option
or file at fault (malformed options included); 3 when ``propose`` has nothing to propose (the
goal is met, or the budget or the pool is spent): no file is written, so a script that
proposes until no batch comes stops. Batch files (``.csv``, ``.csv.gz``,
``.parquet``) carry the row id as a column (named after the pool's id column, ``row`` by
default), so a batch file can be read back by ``ingest`` as it is. ``propose`` writes the
batch under a temporary name, commits the proposal and only then renames the file onto
``--out``: if the file cannot be written or the commit fails, nothing is recorded and
``--out`` is left as it was. No command writes its output onto the campaign database, and
none replaces an existing file unless ``--force`` is given. ``status``, ``pending``,
``history``, ``forecast``, ``export`` and ``report`` open the database read-only, so a
campaign on a read-only mount can be read. ``export`` writes the pending rows
again, ``release`` withdraws them and ``pending`` lists them. ``forecast`` gives the labels
(and their cost) still needed, ``history`` the proposal rounds and ``report`` writes an HTML
report. Every command takes ``--json`` for machine-readable output.

Batches leave out the model's prediction (and score) unless ``--show-prediction`` is given.
``--format`` (default: from the file name) writes a batch as ``csv``, ``parquet``,
``labelstudio`` (Label Studio tasks, ``.json``) or ``jsonl``; ``ingest`` recognises a Label
Studio JSON or CSV export and JSON Lines by their content, one annotation per annotator.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bayeseval.campaign.fields import FIELDS, GOAL_FIELDS
from bayeseval.cli import labelstudio as labelstudio_cli
from bayeseval.cli.campaign_args import (
    CSV_SUFFIXES,
    EXIT_BAD_INPUT,
    EXIT_NOTHING_TO_PROPOSE,
    EXIT_OK,
    FORMATS,
    PARQUET_SUFFIXES,
    add_command,
    add_create_parser,
    add_other_parsers,
    one_line_errors,
)
from bayeseval.cli.harness import check_one_input
from bayeseval.cli.io import HelpFormatter as _Formatter
from bayeseval.cli.io import atomic_output, check_output, cli_warnings, one_line, read_table
from bayeseval.cli.shared import design_from_args

__all__ = ["register", "run", "build_parser", "main"]


# -- files ---------------------------------------------------------------------------------
def _kind(path: str, option: str) -> str:
    name = Path(path).name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise ValueError(f"{option} {path!r}: unsupported file type; use .csv, .csv.gz or .parquet")


def _read_input(path: str, option: str, *, text_columns: Sequence[str] = ()) -> Any:
    """Read a .csv/.csv.gz/.parquet file; any failure is a ValueError naming ``option``."""
    _kind(path, option)
    return read_table(path, name=option, text_columns=text_columns, require_rows=True)


def _batch_format(path: str, fmt: str | None) -> str:
    """The batch format of ``--out`` (``fmt``, or from its name), else raise."""
    name = Path(path).name.lower()
    if fmt is None:
        fmt = next((f for f, suffixes in FORMATS.items() if name.endswith(suffixes)), None)
        if fmt is None:
            raise ValueError(f"--out {path!r}: unsupported file type; use .csv, .csv.gz, .parquet, .json or .jsonl")
    elif not name.endswith(FORMATS[fmt]):
        raise ValueError(f"--out {path!r}: --format {fmt} writes a {' or '.join(FORMATS[fmt])} file")
    return fmt


def _check_out(args: argparse.Namespace) -> Path:
    """``args.out`` if it may be written: never the campaign database (or its journal files),
    never an existing file without ``--force``."""
    db = str(args.db)
    inputs = [("--db", db)] + [(f"--db {suffix}", db + suffix) for suffix in ("-wal", "-shm", "-journal")]
    return check_output(args.out, force=args.force, inputs=inputs)


def _write_batch(campaign: Any, batch: Any, path: Path, kind: str) -> None:
    """Write a batch in its format to ``path`` (the temporary file of :func:`atomic_output`).

    CSV and Parquet: the row id as a column and an empty label column (CSV: other text cells
    starting with ``= + - @``, tab or carriage return get a leading ``'``, so that no
    spreadsheet runs them); Label Studio: tasks in its JSON import format; JSON Lines: one
    object per row with an empty label.
    """
    from bayeseval._render.spreadsheet import csv_safe_frame
    from bayeseval.campaign.labels.annotations import to_jsonl, to_labelstudio

    frame = _batch_table(campaign, batch) if kind in ("csv", "parquet") else None
    if kind == "labelstudio":
        path.write_text(json.dumps(to_labelstudio(batch), indent=1), encoding="utf-8")
    elif kind == "jsonl":
        path.write_text(to_jsonl(batch, id_name=_id_name(campaign), label_name=_label_name(campaign)), encoding="utf-8")
    elif kind == "parquet":
        frame.to_parquet(path, index=False)
    else:
        gz = path.name.lower().endswith(".gz")
        # text cells a spreadsheet would run as formulas get a leading quote; the row ids
        # and the label column, which ingest reads back, are written as they are
        safe = csv_safe_frame(frame, keep=(_id_name(campaign), _label_name(campaign)))
        safe.to_csv(path, index=False, compression="gzip" if gz else None)


def _label_name(campaign: Any) -> str:
    """The batch files' label column: ``label`` unless a campaign column already has that name."""
    used = set(campaign.config["strata"]) | {campaign.spec.y_pred, campaign.spec.score}
    return "label" if "label" not in used else "true_label"


def _id_name(campaign: Any) -> str:
    """The batch files' row-id column: the pool's id column name, ``row`` by default."""
    return campaign.config.get("index_name") or "row"


def _batch_table(campaign: Any, batch: Any) -> Any:
    """The batch as written to a file: the row id as a column, then an empty label column."""
    out = batch.copy()
    out.index.name = _id_name(campaign)
    out[_label_name(campaign)] = None
    return out.reset_index()


def _open(db: str, *, read_only: bool = False) -> Any:
    from bayeseval.campaign import Campaign

    try:
        return Campaign.open(db, read_only=read_only)
    except ValueError as exc:
        raise ValueError(f"--db: {exc}") from exc


# -- option types (argparse turns their ValueError into a one-line usage error) -----------
def _scalar(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return value


# -- commands ------------------------------------------------------------------------------
def _print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, default=_json_default))


def _finite(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """A record with its NaN numbers as None (JSON has no NaN)."""
    if record is None:
        return None
    return {k: None if isinstance(v, float) and v != v else v for k, v in record.items()}


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def _records(frame: Any, index_name: str = "stratum") -> list[dict[str, Any]]:
    """A per-stratum frame as JSON records, the stratum as its label text."""
    from bayeseval.counts.counts import stratum_labels

    table = frame.copy()
    if "metric" in (frame.index.names or []):  # several metrics: the metric becomes a column
        table = table.reset_index("metric")
    table.index = stratum_labels(table.index)
    return json.loads(table.reset_index(names=index_name).to_json(orient="records"))


def _goal(args: argparse.Namespace) -> Any:
    """The goal object of ``--goal`` and its flags; a flag of another goal, or a missing one, raises naming it."""
    from bayeseval.campaign.goals.registry import goal_from_config

    given = {f: getattr(args, f.name) for f in GOAL_FIELDS if getattr(args, f.name) is not None}
    for f in given:
        if args.goal not in f.goals:
            raise ValueError(f"{f.flag} is only used with --goal {' or '.join(f.goals)}, got --goal {args.goal}")
    for f in GOAL_FIELDS:
        if f.required and args.goal in f.goals and f not in given:
            raise ValueError(f"--goal {args.goal} needs {f.flag}")
    return goal_from_config({"goal": args.goal, **{f.key: value for f, value in given.items()}})


def _pool(args: argparse.Namespace) -> Any:
    """The pool of ``--pool`` (indexed by ``--id-column``, else the row number) or of harness files."""
    if args.pool is None:
        from bayeseval.cli.harness import campaign_pool  # deferred: the readers

        return campaign_pool(args)
    if args.y_pred is None:
        raise ValueError("--y-pred is required: the column with the predicted label")
    pool = _read_input(args.pool, "--pool")
    if args.id_column:
        if args.id_column not in pool.columns:
            raise ValueError(
                f"--id-column {args.id_column!r} is not in {args.pool}; columns are {list(pool.columns)[:20]}"
            )
        pool = pool.set_index(args.id_column)
    else:
        pool.index.name = "row"
    return pool


def _create(args: argparse.Namespace) -> int:
    from bayeseval.campaign import Campaign
    from bayeseval.campaign.settings import fold_settings

    if Path(args.db).exists():
        raise ValueError(
            f"--db {args.db!r} already exists; run the other campaign commands on it, or choose a new file"
        )
    check_one_input(args, "--pool", dest="pool")
    pool = _pool(args)
    settings = {f.name: getattr(args, f.name) for f in FIELDS if f.flag is not None}
    settings["pos_label"] = _scalar(settings["pos_label"])
    settings["goal"] = _goal(args)
    if settings.pop("anytime"):  # --anytime: the flag of --guarantee anytime
        from bayeseval._kernels.guarantee import as_guarantee

        settings["guarantee"] = as_guarantee(settings["guarantee"], anytime=True)
    labels, _ = _seed_labels(args, str(pool.index.name))
    try:
        keywords = fold_settings(settings, content=args.content)
        c = Campaign.create(args.db, pool, labels=labels, design=design_from_args(args), **keywords)
    except (ValueError, TypeError) as exc:
        if labels is not None and str(exc).startswith(("labels", "inclusion", "design.inclusion")):
            raise type(exc)(f"--labels {args.labels!r}: {exc}") from exc
        raise
    try:
        if args.json:
            _print_json(
                {
                    "db": str(args.db),
                    "pool_rows": len(pool),
                    "labels": c.labels_used,
                    "strata": len(c.strata),
                    "metric": ",".join(m.name for m in c.metrics),
                    "rule": args.rule,
                    "config": c.config,
                }
            )
        else:
            seeded = f", {c.labels_used} labels you already had" if labels is not None else ""
            print(
                f"created campaign {args.db}: {len(pool)} pool rows{seeded}, {len(c.strata)} strata, metric "
                f"{','.join(m.name for m in c.metrics)}, rule {args.rule}; next: "
                f"'bayeseval campaign propose --db {args.db} --out batch.csv'"
            )
    finally:
        c.close()
    return EXIT_OK


class _NothingToPropose(Exception):
    """Raised inside ``atomic_output`` so that an empty proposal writes no file."""


def _propose(args: argparse.Namespace) -> int:
    kind = _batch_format(args.out, args.format)
    _check_out(args)
    c = _open(args.db)
    try:
        try:
            with atomic_output(args.out) as tmp:  # renamed onto --out only after the commit
                batch = c.propose(
                    args.batch_size,
                    show_prediction=args.show_prediction,
                    writer=lambda b: _write_batch(c, b, tmp, kind),
                )
                if len(batch) == 0:
                    raise _NothingToPropose
        except _NothingToPropose:
            return _nothing_to_propose(c, args)
        if args.json:
            _print_json(
                {
                    "db": str(args.db),
                    "out": str(args.out),
                    "proposed": len(batch),
                    "round": int(batch["round"].iloc[0]),
                    "done": bool(c.done),
                }
            )
        else:
            print(
                f"proposed {len(batch)} rows (round {int(batch['round'].iloc[0])}); label them in {args.out} "
                "and run 'bayeseval campaign ingest'"
            )
    finally:
        c.close()
    return EXIT_OK


def _nothing_reason(c: Any) -> str:
    """Why a campaign proposes nothing: its budget, its goal, or its pool."""
    budget = c.spec.budget
    if budget is not None and c.labels_used >= int(budget):
        return f"the budget of {int(budget)} labels is spent"
    if c.done:
        return c.outcome  # "goal met: ..." or "stopped: ..." naming the open strata
    return "the rows left to label are all pending: ingest their labels (or release them)"


def _nothing_to_propose(c: Any, args: argparse.Namespace) -> int:
    """Say why no row was proposed (no file is written); the exit code 3."""
    done = bool(c.done)
    reason = _nothing_reason(c)
    if args.json:
        _print_json(
            {"db": str(args.db), "out": None, "proposed": 0, "round": None, "done": done, "nothing_to_propose": reason}
        )
    else:
        print(f"nothing to propose: {reason}; no file written (exit code {EXIT_NOTHING_TO_PROPOSE})")
    return EXIT_NOTHING_TO_PROPOSE


def _annotation_file(path: str, from_name: str | None, id_col: str, *, keep_blank: bool = False) -> Any:
    """The annotation table of a Label Studio or JSON Lines file (None for a plain table), or raise naming --labels."""
    from bayeseval.campaign.labels.annotations import read_annotations

    if not str(path).lower().endswith((".json", ".jsonl")):
        _kind(path, "--labels")
    if not Path(path).is_file():
        raise ValueError(f"--labels {path!r}: no such file")
    try:
        return read_annotations(path, from_name=from_name, id_name=id_col, keep_blank=keep_blank)
    except (ValueError, KeyError, OSError) as exc:
        raise ValueError(f"--labels {path!r}: {one_line(exc)}") from exc


def _seed_labels(args: argparse.Namespace, id_col: str) -> tuple[Any, str | None]:
    """``create --labels``: the labels file as a frame indexed by row id (and --inclusion's column)."""
    if args.labels is None:
        for option, value in (
            ("--y-true", args.y_true),
            ("--inclusion", args.inclusion),
            ("--from-name", args.from_name),
        ):
            if value is not None:
                raise ValueError(f"{option} describes the --labels file: give --labels too")
        return None, None
    ann = _annotation_file(args.labels, args.from_name, id_col)
    if ann is not None:
        if args.inclusion is not None:
            raise ValueError(
                f"--inclusion {args.inclusion!r}: an annotation export has no such column; "
                "give the labels as a .csv or .parquet table"
            )
        several = ann["row"][ann["row"].duplicated()].unique()[:5].tolist()
        if several:
            raise ValueError(
                f"--labels {args.labels!r}: rows {several} have several annotations; a campaign starts "
                "from one label per row: resolve them first"
            )
        return ann.set_index("row")[["label"]], None
    used = set(args.strata or ()) | {args.y_pred, args.score}
    label_col = args.y_true or ("label" if "label" not in used else "true_label")  # as in batch files
    frame = _read_input(args.labels, "--labels", text_columns=(id_col, label_col))
    for option, col in (("--id-column", id_col), ("--y-true", label_col), ("--inclusion", args.inclusion)):
        if col is not None and col not in frame.columns:
            raise ValueError(f"{option} {col!r} is not in {args.labels}; columns are {list(frame.columns)[:20]}")
    keep = [label_col] + ([args.inclusion] if args.inclusion and args.inclusion != label_col else [])
    frame = frame.set_index(id_col)[keep]
    return frame.rename(columns={label_col: "label"}), args.inclusion


def _read_labels(c: Any, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The labels file as a frame and the ``Campaign.ingest`` keyword arguments to read it."""
    id_col = args.id_column or _id_name(c)
    ann = _annotation_file(args.labels, args.from_name, id_col, keep_blank=True)
    if ann is not None:
        if (ann["annotator"] == "").all() and not args.annotator_column:
            return ann, {"id_column": "row", "label_column": "label"}
        return ann, {"id_column": "row", "label_column": "label", "annotator_column": "annotator"}
    label_col = args.y_true or _label_name(c)
    text = (id_col, label_col) + ((args.annotator_column,) if args.annotator_column else ())
    frame = _read_input(args.labels, "--labels", text_columns=text)
    for option, col in (
        ("--id-column", id_col),
        ("--y-true", label_col),
        ("--annotator-column", args.annotator_column),
    ):
        if col is not None and col not in frame.columns:
            raise ValueError(f"{option} {col!r} is not in {args.labels}; columns are {list(frame.columns)[:20]}")
    return frame, {"id_column": id_col, "label_column": label_col, "annotator_column": args.annotator_column}


def _ingest(args: argparse.Namespace) -> int:
    c = _open(args.db)
    try:
        frame, kwargs = _read_labels(c, args)
        try:
            r = c.ingest(frame, relabel=args.relabel, strict=args.strict, **kwargs)
        except ValueError as exc:
            raise ValueError(f"--labels {args.labels!r}: {exc}") from exc
        done, used = bool(c.done), int(c.labels_used)
        if args.json:
            _print_json(
                {
                    "db": str(args.db),
                    "new": r.new,
                    "unchanged": r.unchanged,
                    "relabelled": r.relabelled,
                    "annotations": r.annotations,
                    "unresolved": r.unresolved,
                    "blank": r.blank,
                    "labels_used": used,
                    "done": done,
                }
            )
        else:
            extra = f", {r.relabelled} relabelled" if r.relabelled else ""
            if kwargs.get("annotator_column"):
                extra += f"; {r.annotations} annotations stored, {r.unresolved} rows still unresolved"
            if r.blank:
                extra += f"; {r.blank} rows without a label left as they were (pending)"
            print(
                f"ingested {r.new} new labels ({r.unchanged} already present with the same label{extra}); "
                f"{used} labels in all; {c.outcome if done else 'not done yet'}"
            )
    finally:
        c.close()
    return EXIT_OK


def _status_table(c: Any) -> tuple[Any, Any]:
    """What ``Campaign.status()`` shows, plus the forecast labels and their cost; and the forecast frame."""
    import numpy as np
    import pandas as pd

    st = c.status()
    forecast = c.forecast(cost=True)

    reps = len(st) // len(forecast)  # a campaign on several metrics: one block of strata per metric
    st["forecast"] = pd.array(np.tile(forecast["labels"].to_numpy(), reps), dtype="Int64")  # <NA>: cannot forecast yet
    st["forecast_cost"] = pd.array(np.tile(forecast["cost"].to_numpy(), reps), dtype="Float64")
    return st, forecast


def _status(args: argparse.Namespace) -> int:
    from bayeseval.campaign.goals.registry import goal_settings
    from bayeseval.campaign.loop.forecast import forecast_text, forecast_total

    c = _open(args.db, read_only=True)
    try:
        goal = goal_settings(c.spec.goal)
        st, forecast = _status_table(c)
        done, used = bool(c.done), int(c.labels_used)
        once = _one_block(st)
        need = forecast_total(once["forecast"])
        totals = {
            "cost": float(once["cost"].sum()),
            "forecast": need,
            "forecast_cost": None if need is None else float(once["forecast_cost"].sum()),
        }
        still = forecast_text(forecast)
        if need is not None:
            still += f" (cost {totals['forecast_cost']:g})"
        if args.json:
            payload = {
                "db": str(args.db),
                "done": done,
                "goal_met": bool(c.goal_met),
                "outcome": c.outcome,
                "labels_used": used,
                "forecast_note": None if need is not None else still,
                "target_halfwidth": goal["target_halfwidth"],
                "level": c.config["level"],
                "goal": c.config["goal"],
                "direction": goal["direction"],
                "tolerance": goal["tolerance"],
                "overall": st.attrs.get("overall"),
                "gap": _finite(st.attrs.get("gap")),
                **totals,
                "strata": _records(st),
            }
            if len(c.annotations()):
                from bayeseval.campaign.labels.agreement import AGREEMENT_RULE

                payload["agreement"] = _records(c.agreement())
                payload["agreement_rule"] = AGREEMENT_RULE
            _print_json(payload)
        else:
            print(_status_text(st))
            if "overall" in st.attrs:
                o = st.attrs["overall"]
                print(f"overall: {o['mean']:.4f} [{o['lower']:.4f}, {o['upper']:.4f}] half-width {o['halfwidth']:.4f}")
            if "gap" in st.attrs:
                g = st.attrs["gap"]
                est = (
                    f"{g['gap']:.4f} [{g['lower']:.4f}, {g['upper']:.4f}]"
                    if g["gap"] == g["gap"]
                    else "not estimable yet (needs labelled trials in two strata)"
                )
                print(f"max-min gap: {est} against tolerance {g['tolerance']}: {g['verdict']}")
            print(f"labels used: {used} (cost {totals['cost']:g}); still needed: {still}; {_goal_text(c)}; {c.outcome}")
    finally:
        c.close()
    return EXIT_OK


def _status_text(st: Any) -> str:
    """The status table as text: counts and costs without decimals, rates with four."""
    import pandas as pd

    from bayeseval._api.table_names import WHOLE
    from bayeseval._render.formats import cell_text, whole_columns

    whole = whole_columns(st, WHOLE)
    numeric = [
        c
        for c in st.columns
        if pd.api.types.is_numeric_dtype(st[c].dtype) and not pd.api.types.is_bool_dtype(st[c].dtype)
    ]
    return st.to_string(formatters={c: lambda v, w=c in whole: cell_text(v, whole=w) for c in numeric})


def _one_block(st: Any) -> Any:
    """The status rows of one metric (labels and costs are shared by a campaign's metrics)."""
    if "metric" in (st.index.names or []):
        return st.xs(st.index.get_level_values("metric")[0], level="metric")
    return st


def _goal_text(c: Any) -> str:
    """The campaign's goal in words, for the status line."""
    return c.spec.goal.status_line(c.spec.level)


def _pending(args: argparse.Namespace) -> int:
    c = _open(args.db, read_only=True)
    try:
        pend = c.pending
        by_round = pend.groupby("round").size() if len(pend) else None
        if args.json:
            rounds = {} if by_round is None else {str(k): int(v) for k, v in by_round.items()}
            ids = [x.item() if hasattr(x, "item") else x for x in pend.index]
            print(json.dumps({"db": str(args.db), "pending": len(pend), "rounds": rounds, "ids": ids}, indent=2))
        elif by_round is None:
            print("no pending proposals")
        else:
            parts = ", ".join(f"round {k}: {v}" for k, v in by_round.items())
            print(f"{len(pend)} pending proposals ({parts}); 'bayeseval campaign export' writes them again")
    finally:
        c.close()
    return EXIT_OK


def _release(args: argparse.Namespace) -> int:
    c = _open(args.db)
    try:
        if args.all or args.round is not None:
            n = c.release(round=args.round)
        elif args.ids is not None:
            n = c.release(args.ids)
        else:
            id_col = args.id_column or _id_name(c)
            frame = _read_input(args.file, "--file", text_columns=(id_col,))
            if id_col not in frame.columns:
                raise ValueError(
                    f"--id-column {id_col!r} is not in {args.file}; columns are {list(frame.columns)[:20]}"
                )
            n = c.release(frame[id_col].tolist())
        left = len(c.pending)
        if args.json:
            _print_json({"db": str(args.db), "released": n, "pending": left})
        else:
            print(f"released {n} pending proposals; {left} still pending")
    finally:
        c.close()
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    kind = _batch_format(args.out, args.format)
    _check_out(args)
    c = _open(args.db, read_only=True)
    try:
        batch = c.pending_batch(round=args.round, show_prediction=args.show_prediction)
        with atomic_output(args.out) as tmp:
            _write_batch(c, batch, tmp, kind)
        if args.json:
            _print_json({"db": str(args.db), "out": str(args.out), "rows": len(batch)})
        else:
            print(f"wrote {len(batch)} pending rows to {args.out}")
    finally:
        c.close()
    return EXIT_OK


def _forecast(args: argparse.Namespace) -> int:
    c = _open(args.db, read_only=True)
    try:
        from bayeseval.campaign.loop.forecast import forecast_text, forecast_total

        f = c.forecast(cost=True)
        f["cost_per_label"] = c.label_costs.to_numpy()
        total = forecast_total(f["labels"])  # None: some stratum's forecast cannot be made yet
        cost = None if total is None else float(f["cost"].sum())
        text = forecast_text(f)
        if args.json:
            _print_json(
                {
                    "db": str(args.db),
                    "labels": total,
                    "cost": cost,
                    "note": None if total is not None else text,
                    "strata": _records(f),
                }
            )
        else:
            print(f.to_string())
            print(f"labels still needed: {text}" + ("" if cost is None else f"; their cost: {cost:g}"))
    finally:
        c.close()
    return EXIT_OK


def _history(args: argparse.Namespace) -> int:
    c = _open(args.db, read_only=True)
    try:
        h = c.history()
        if args.json:
            rows = [
                {
                    "round": int(r),
                    "rule": rec["rule"],
                    "allocation": rec["allocation"],
                    "time": rec["time"].isoformat(),
                    "version": rec["version"],
                    "details": rec["details"],
                }
                for r, rec in h.iterrows()
            ]
            _print_json({"db": str(args.db), "rounds": rows})
        elif not len(h):
            print("no proposal rounds yet")
        else:
            for r, rec in h.iterrows():
                alloc = ", ".join(f"{k}: {v}" for k, v in rec["allocation"].items())
                print(f"round {r} ({rec['time']:%Y-%m-%d %H:%M:%S}, {rec['rule']}): {alloc}")
    finally:
        c.close()
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from bayeseval.campaign.report import campaign_report_html

    out = Path(args.out)
    if not out.name.lower().endswith((".html", ".htm")):
        raise ValueError(f"--out {args.out!r}: the report is an .html file")
    _check_out(args)
    c = _open(args.db, read_only=True)
    try:
        html = campaign_report_html(c)
        with atomic_output(out) as tmp:
            tmp.write_text(html, encoding="utf-8")
        if args.json:
            _print_json({"db": str(args.db), "out": str(out), "bytes": len(html.encode())})
        else:
            print(f"wrote the campaign report to {out}")
    finally:
        c.close()
    return EXIT_OK


def _labelstudio_config(args: argparse.Namespace) -> int:
    out = _check_out(args) if args.out else None
    c = _open(args.db, read_only=True)
    try:
        try:
            xml = c.labelstudio_config(
                content_types=dict(args.content_type or ()), show_prediction=args.show_prediction
            )
        except ValueError as exc:
            raise ValueError(f"--content-type: {exc}") from exc
        if out is None:
            print(xml)
            return EXIT_OK
        with atomic_output(out) as tmp:
            tmp.write_text(xml + "\n", encoding="utf-8")
        content = c.config.get("content") or []
        if args.json:
            _print_json({"db": str(args.db), "out": str(out), "content": content})
        else:
            note = "" if content else " (no content columns: it shows the row id; create the campaign with --content)"
            print(f"wrote the Label Studio labelling configuration to {out}{note}")
    finally:
        c.close()
    return EXIT_OK


_COMMANDS = {
    "create": _create,
    "propose": _propose,
    "ingest": _ingest,
    "status": _status,
    "pending": _pending,
    "release": _release,
    "export": _export,
    "forecast": _forecast,
    "history": _history,
    "report": _report,
    "labelstudio-config": _labelstudio_config,
    **labelstudio_cli.COMMANDS,
}


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``campaign`` command.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of ``bayeseval campaign ...``.

    Returns
    -------
    int
        The exit code: 0, 2 with a one-line reason on stderr for bad input, or 3 when
        ``propose`` has nothing to propose.
    """
    cmd = getattr(args, "campaign_command", None)
    if cmd not in _COMMANDS:
        print(f"bayeseval campaign: error: choose a sub-command: {', '.join(_COMMANDS)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return _COMMANDS[cmd](args)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        print(f"bayeseval campaign {cmd}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``campaign`` command and its sub-commands to ``subparsers``.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The sub-parsers of the main ``bayeseval`` parser.

    Returns
    -------
    argparse.ArgumentParser
        The ``campaign`` parser.
    """
    campaign = subparsers.add_parser(
        "campaign",
        help="run an active labelling campaign (create, propose, ingest, status, pending, release, export, "
        "forecast, history, report, labelstudio-config)",
        description=(
            "Run a labelling campaign that stops when every stratum's credible interval is "
            "narrow enough. State lives in one SQLite file (--db); 'propose' writes the rows to "
            "label, 'ingest' reads them back with a filled 'label' column."
        ),
        epilog=(
            "examples:\n"
            "  bayeseval campaign create --pool pool.csv --id-column id --strata region "
            "--y-pred pred --db camp.db --seed 1\n"
            "  bayeseval campaign propose --db camp.db --batch-size 50 --out batch.csv\n"
            "  bayeseval campaign ingest --db camp.db --labels batch.csv\n"
            "  bayeseval campaign status --db camp.db\n"
            "  bayeseval campaign export --db camp.db --out batch.csv   (the pending rows again)\n"
            "  bayeseval campaign propose --db camp.db --out tasks.json --format labelstudio\n"
            "  bayeseval campaign ingest --db camp.db --labels label-studio-export.json\n"
            "  bayeseval campaign report --db camp.db --out report.html\n"
            "exit codes: 0 success, 2 bad input (one line on stderr), 3 'propose' has nothing to propose "
            "(goal met, budget or pool spent; no file written)"
        ),
        formatter_class=_Formatter,
    )
    one_line_errors(campaign)
    sub = campaign.add_subparsers(dest="campaign_command", metavar="SUBCOMMAND")
    add_create_parser(sub)
    add_other_parsers(sub)
    labelstudio_cli.add_parsers(sub, add_command)
    campaign.set_defaults(func=run)
    return campaign


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser with only the ``campaign`` command (for tests and ``python -m``).

    Returns
    -------
    argparse.ArgumentParser
        The parser.
    """
    parser = argparse.ArgumentParser(prog="bayeseval", formatter_class=_Formatter)
    one_line_errors(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit code (0 on success, 2 on bad input, 3 when ``propose`` has nothing to propose).
    """
    parser = build_parser()
    with cli_warnings():  # a warning is one "warning: ..." line, once
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help (0) or a usage error already reported on one line (2)
            return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
        if getattr(args, "command", None) != "campaign":
            parser.print_help()
            return EXIT_BAD_INPUT
        return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
