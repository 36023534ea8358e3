"""``bayeseval audit``: the fairness audit from a table of rows."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from bayeseval._render import audit_text
from bayeseval.cli.harness import audit_inputs, check_one_input
from bayeseval.cli.io import check_output, read_table, save_and_print
from bayeseval.counts.design import Design
from bayeseval.fairness.audits import audit_with_spelling
from bayeseval.fairness.options import MIN_TRIALS
from bayeseval.fairness.result import AUDIT_SUFFIXES, exit_code


def _read(path: str) -> pd.DataFrame:
    return read_table(path, name="data", require_rows=True)


def _parse_pos_label(value: str | None, column: pd.Series) -> Any:
    if value is None:
        return None
    if pd.api.types.is_bool_dtype(column.dtype):
        return value.strip().lower() in ("1", "true", "yes")
    if pd.api.types.is_numeric_dtype(column.dtype):
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--pos-label {value!r} is not a number but {column.name!r} holds numbers") from None
        return int(number) if pd.api.types.is_integer_dtype(column.dtype) else number
    return value


def run_audit(args: argparse.Namespace) -> int:
    """Run ``bayeseval audit`` from parsed arguments and return the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        Arguments parsed by the ``audit`` command of :func:`bayeseval.cli.main.build_parser`.

    Returns
    -------
    int
        :func:`exit_code`: 1 when a criterion is decided outside the tolerance, 3 when
        none is but a criterion is not measured, else 0 (bad input raises
        ``ValueError``/``TypeError``, which the command line turns into exit code 2).

    Examples
    --------
    >>> import argparse, tempfile, os, pandas as pd
    >>> path = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> pd.DataFrame({"y": [1, 0] * 80, "p": [1, 0] * 80, "g": ["a"] * 80 + ["b"] * 80}).to_csv(path)
    >>> args = argparse.Namespace(data=path, y_true="y", y_pred="p", groups="g", metrics="tpr",
    ...                           reference=None, tolerance=0.5, level=0.95, pos_label=None,
    ...                           seed=0, json=True)
    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     code = run_audit(args)
    >>> code
    0
    """
    out = getattr(args, "out", None)
    harness = getattr(args, "data", None) is None
    if harness:
        check_one_input(args)
    if out is not None:
        _check_out_suffix(out)
        check_output(out, force=getattr(args, "force", False), inputs=[] if harness else [("data", args.data)])
    groups = [c.strip() for c in str(args.groups).split(",") if c.strip()]
    outcome = getattr(args, "outcome", None)
    if harness:
        data, columns = audit_inputs(args)
        for name, value in columns.items():
            setattr(args, name, value)
        outcome = columns["outcome"]  # the scorer's column (None with --labels: the human label is the truth)
    else:
        if outcome is not None and (args.y_true is not None or args.y_pred is not None):
            raise ValueError(
                f"give --outcome or --y-true and --y-pred, not both: got --outcome {outcome!r}, "
                f"--y-true {args.y_true!r}, --y-pred {args.y_pred!r}"
            )
        if outcome is None and (args.y_true is None or args.y_pred is None):
            raise ValueError(
                "give --y-true and --y-pred (the label columns), or --outcome (per-row outcomes in [0, 1]), "
                "with a data file"
            )
        if outcome is not None and args.pos_label is not None:
            raise ValueError(f"--pos-label applies to --y-true/--y-pred, not to --outcome {outcome!r}")
        data = _read(args.data)
    proxy, inclusion = getattr(args, "proxy", None), getattr(args, "inclusion", None)
    cluster = getattr(args, "cluster", None)
    extra = [
        (o, c) for o, c in (("--proxy", proxy), ("--inclusion", inclusion), ("--cluster", cluster)) if c is not None
    ]
    rows = [("--outcome", outcome)] if outcome is not None else [("--y-true", args.y_true), ("--y-pred", args.y_pred)]
    for option, col in rows + [("--groups", g) for g in groups] + extra:
        if col not in data.columns:
            raise ValueError(
                f"{option} column {col!r} is not in {args.data or 'the answers'!r} (columns: {list(data.columns)[:10]})"
            )
    metrics = [m.strip() for m in args.metrics.split(",")] if args.metrics else None
    min_trials = getattr(args, "min_trials", None)
    result = audit_with_spelling(
        data,
        y_true=None if outcome is not None else args.y_true,
        y_pred=None if outcome is not None else args.y_pred,
        outcome=outcome,
        groups=groups,
        metrics=metrics,
        reference=args.reference,
        tolerance=args.tolerance,
        level=args.level,
        pos_label=None if outcome is not None else _parse_pos_label(args.pos_label, data[args.y_true]),
        random_seed=args.seed,
        model=getattr(args, "model", None),
        min_trials=MIN_TRIALS if min_trials is None else min_trials,
        method=getattr(args, "method", None) or "max_t",
        spelling="cli",
        guarantee=getattr(args, "guarantee", None) or "stratum",
        proxy=proxy,
        design=None if inclusion is None and cluster is None else Design(cluster=cluster, inclusion=inclusion),
    )
    more = (
        f"The full audit (every table): {out}."
        if out is not None
        else "Every table: --json. The per-group rates, disparities and verdicts in full: "
        "--out audit.html (or .md, .csv, .xlsx, .json)."
    )
    save_and_print(result, out, args.json, lambda: audit_text.summary(result, more=more), say_written=False)
    return exit_code(result)


def _check_out_suffix(out: str) -> None:
    if Path(out).suffix.lower() not in AUDIT_SUFFIXES:
        raise ValueError(f"--out must end in {', '.join(AUDIT_SUFFIXES)}, got {out!r}")
