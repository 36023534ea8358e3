"""Counting with clusters vs without: ``tabulate(..., design=Design(cluster=...))`` at 10,000,000 rows.

Run:  .venv/bin/python benchmarks/bench_cluster_count.py [--rows 10000000] [--strata 1000] [--size 5] [--repeats 3]

Generates ``--rows`` answers: ``rows / size`` items (2,000,000 at the defaults) answered ``--size``
times each, every item in one of ``--strata`` strata, with a 0/1 outcome (item-level accuracy
drawn from Beta(4, 1)) and binary labels and predictions agreeing with it. Then times, on the
in-memory pandas frame and on the same rows written to Parquet (counted inside DuckDB):

* ``outcome=``: the per-row outcome counted per stratum with ``design=Design()`` (each row its
  own unit: one aggregation by stratum and outcome) and with ``design=Design(cluster="item")``
  (a first aggregation by stratum and item, a second by stratum and the units' pair);
* labels: ``y_true``/``y_pred`` with the error rate counted today (one confusion table) and
  with the cluster (the confusion table, then the units' two aggregations).

Each line is the best of ``--repeats`` runs, wall and CPU time (the process's, DuckDB's threads
included); the ratio is clustered / unclustered in the same run. Target: clustered
counting within 1.5x of the same count without clusters, for pandas and DuckDB.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bayeseval as be  # noqa: E402


def make_data(rows: int, strata: int, size: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = rows // size
    item = np.repeat(np.arange(items, dtype=np.int64), size)
    p_item = rng.beta(4.0, 1.0, items).astype(np.float32)
    ok = (rng.random(items * size, dtype=np.float32) < p_item[item]).astype(np.int8)
    y = rng.integers(0, 2, items * size, dtype=np.int8)
    stratum = (rng.permutation(items) % strata).astype(np.int32)[item]
    return pd.DataFrame({"stratum": stratum, "item": item, "ok": ok, "y": y, "pred": np.where(ok == 1, y, 1 - y)})


def best(fn, repeats: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--strata", type=int, default=1_000)
    ap.add_argument("--size", type=int, default=5, help="answers per item (rows per cluster)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    df = make_data(args.rows, args.strata, args.size)
    print(
        f"{len(df):,} rows, {args.strata:,} strata, {len(df) // args.size:,} clusters of {args.size}; "
        f"best of {args.repeats}; {os.cpu_count()} cores"
    )
    flat, unit = be.Design(), be.Design(cluster="item")
    forms = {
        "outcome": {"outcome": "ok"},
        "labels (error_rate)": {"y_true": "y", "y_pred": "pred", "metric": "error_rate"},
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "answers.parquet")
        df.to_parquet(path, row_group_size=1 << 20)
        engines = {"pandas frame": df, "Parquet (DuckDB)": path}
        print(f"\n{'engine':<18} {'form':<20} {'plain s':>8} {'cluster s':>10} {'ratio':>6} {'cpu ratio':>9}  target")
        worst = 0.0
        for engine, data in engines.items():
            for form, kw in forms.items():
                check = be.tabulate(data, strata="stratum", design=unit, **kw)
                plain = be.tabulate(data, strata="stratum", design=flat, **kw)
                assert check.successes.equals(plain.successes) and check.trials.equals(plain.trials)
                assert int(check.units["units"].sum()) == len(df) // args.size
                w0, c0 = best(
                    lambda data=data, kw=kw: be.tabulate(data, strata="stratum", design=flat, **kw), args.repeats
                )
                w1, c1 = best(
                    lambda data=data, kw=kw: be.tabulate(data, strata="stratum", design=unit, **kw), args.repeats
                )
                worst = max(worst, w1 / w0)
                print(f"{engine:<18} {form:<20} {w0:8.2f} {w1:10.2f} {w1 / w0:6.2f} {c1 / c0:9.2f}  <= 1.5")
    print(f"\nworst wall-time ratio: {worst:.2f} (target <= 1.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
