"""The speed targets the benchmarks check, recorded as data and gathered in one run.

A bench script calls :func:`record` where it has measured a figure that has a target (a ratio
against the anchor measured in the same run, or seconds); the record is printed and, when the
environment variable ``BAYESEVAL_BENCH_SUMMARY`` names a file, appended to it as one JSON line.
``python benchmarks/run_all.py --quick`` runs the scripts of :data:`QUICK` with that variable set,
each at the sizes its arguments give, and writes the table of targets (:func:`targets_table`) at
the top of ``docs/scaling.md``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUMMARY_ENV = "BAYESEVAL_BENCH_SUMMARY"

#: the scripts ``run_all.py --quick`` runs for the targets, with their arguments (sizes chosen so
#: that the whole set takes a few minutes on 2 cores; each script's docstring gives the full sizes)
QUICK: list[tuple[str, list[str]]] = [
    ("bench_count_strata.py", ["--rows-1k", "3000000", "--rows-100k", "1000000", "--repeats", "3"]),
    ("bench_large_trials.py", ["--rows", "4e6", "--repeats", "2"]),
    ("bench_campaign_round.py", ["--sizes", "12", "100000", "--rounds", "3"]),
    ("bench_report_scale.py", []),
    ("bench_cluster_count.py", ["--rows", "4000000", "--repeats", "2"]),
    ("bench_simulate_proxy.py", ["--strata", "12", "--repeats", "5", "--times", "2", "--no-files"]),
]


def record(check: str, measured: float, target: float, *, unit: str = "x", note: str = "") -> dict[str, Any]:
    """Print and (with ``BAYESEVAL_BENCH_SUMMARY`` set) append one measured figure and its target.

    ``measured`` meets ``target`` when it is at most the target (every target here is an upper
    limit: a ratio against an anchor, or seconds).
    """
    row = {
        "check": check,
        "measured": float(measured),
        "target": float(target),
        "unit": unit,
        "met": bool(math.isfinite(measured) and measured <= target),
        "note": note,
        "script": Path(sys.argv[0]).name,
    }
    print(
        f"target: {check}: {_figure(row['measured'], unit)} (target <= {_figure(row['target'], unit)}): "
        f"{'met' if row['met'] else 'MISSED'}",
        flush=True,
    )
    path = os.environ.get(SUMMARY_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
    return row


def _figure(value: float, unit: str) -> str:
    return f"{value:.2f}x" if unit == "x" else f"{value:.3g} {unit}"


def run_quick(timeout: float = 900.0) -> tuple[list[dict[str, Any]], list[str]]:
    """Run the scripts of :data:`QUICK`, each in a fresh interpreter, gathering their records; the
    records and one line per script (its status and wall time)."""
    out = HERE / "results" / "targets.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("")
    env = {**os.environ, SUMMARY_ENV: str(out)}
    runs = []
    for script, args in QUICK:
        print(f"\n=== {script} {' '.join(args)}", flush=True)
        t0 = time.perf_counter()
        try:
            status: Any = subprocess.run(
                [sys.executable, str(HERE / script), *args], cwd=HERE.parent, env=env, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
        runs.append(f"`{script} {' '.join(args)}`: {'ok' if status == 0 else status}, {time.perf_counter() - t0:.0f} s")
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return records, runs


def targets_table(records: list[dict[str, Any]]) -> list[str]:
    """The records as a Markdown table: check, measured, target, met."""
    lines = ["| check | measured | target | met |", "|---|---:|---:|---|"]
    for r in records:
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(
            f"| {r['check']}{note} | {_figure(r['measured'], r['unit'])} | <= {_figure(r['target'], r['unit'])} "
            f"| {'yes' if r['met'] else '**no**'} |"
        )
    return lines
