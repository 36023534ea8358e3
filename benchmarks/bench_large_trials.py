"""Statistics at large trial counts: their cost against the trials per stratum, and ``evaluate``
against the count alone.

Run:  python benchmarks/bench_large_trials.py [--part curve|evaluate|count|all] [--rows 20000000]

Three parts, 20 strata with rates drawn once (seeded) from U(0.05, 0.15):

* ``curve``: ``proportion_ci(method="adaptive")``, the predictive check
  (``posterior_predictive_check`` of the exact fit, the leave-one-out mixed check of its
  suspects included) and ``evaluate`` from ready-made counts, at 10 to 10^9 trials per
  stratum; best of 3, CPU and wall seconds (target: the adaptive interval at most 0.3 s at
  every trial count);
* ``count``: a Parquet file of ``--rows`` rows (20 strata, int8 label and prediction), counted
  by ``tabulate`` through DuckDB and by a hand-written DuckDB ``GROUP BY``; then ``evaluate``
  of the same path (count and statistics);
* ``ratio`` (with ``count``): ``evaluate`` on 20 strata of 10^7 rows each, counted by DuckDB
  from Parquet, against the count alone (target: at most 2x). 2 x 10^8 rows is a large file
  for a shared machine, so by default the count is measured on ``--rows`` rows and scaled
  linearly to 2 x 10^8 (a scan: linear in rows), and the statistics are timed on
  ready-made counts of 10^7 trials per stratum; ``--rows 200000000`` measures it directly.

DuckDB runs with one thread (``--threads``) so that the figures do not depend on the other
work on the machine; the ratio is what to compare between runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from targets import record  # noqa: E402

import bayeseval as be  # noqa: E402

GRID = [10, 100, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000, 1_000_000_000]
STRATA = 20


def rates() -> np.ndarray:
    return np.random.default_rng(0).uniform(0.05, 0.15, STRATA)


def counts_at(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.round(rates() * n).astype(np.int64), np.full(STRATA, n, dtype=np.int64)


def best_of(fn, repeats: int = 3) -> tuple[float, float]:
    """Best CPU and best wall seconds of ``repeats`` calls (after one warm-up call)."""
    fn()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def curve(grid: list[int], repeats: int) -> None:
    print(
        "| trials per stratum | adaptive CPU | adaptive wall | check CPU | check wall | evaluate CPU | evaluate wall |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    names = [f"s{i:02d}" for i in range(STRATA)]
    slowest = (0.0, 0)
    for n in grid:
        s, t = counts_at(n)
        ad = best_of(lambda s=s, t=t: be.proportion_ci(s, t, method="adaptive"), repeats)
        slowest = max(slowest, (ad[0], n))
        counts = be.Counts.from_arrays(s, t, strata=names)
        post = be.fit_hierarchical(counts)
        ck = best_of(lambda post=post: be.posterior_predictive_check(post, random_seed=0), repeats)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ev = best_of(lambda counts=counts: be.evaluate(counts), repeats)
        print(
            f"| {n:,} | {ad[0]:.3f} | {ad[1]:.3f} | {ck[0]:.3f} | {ck[1]:.3f} | {ev[0]:.3f} | {ev[1]:.3f} |",
            flush=True,
        )
    record(
        "adaptive interval, 20 strata, slowest trial count",
        slowest[0],
        0.3,
        unit="s CPU",
        note=f"at {slowest[1]:,} trials of {grid[0]:,} to {grid[-1]:,}",
    )


def write_parquet(path: Path, rows: int, threads: int) -> None:
    import duckdb

    p = rates()
    case = " ".join(f"WHEN {k} THEN {float(p[k])!r}" for k in range(STRATA))
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SELECT setseed(0.5)")
    con.execute(
        f"""COPY (
            SELECT 's' || lpad(CAST(k AS VARCHAR), 2, '0') AS stratum, y,
                   CAST(CASE WHEN random() < (CASE k {case} END) THEN 1 - y ELSE y END AS TINYINT) AS pred
            FROM (SELECT CAST(i % {STRATA} AS INTEGER) AS k, CAST(random() < 0.3 AS TINYINT) AS y
                  FROM range({rows}) t(i))
        ) TO '{path}' (FORMAT parquet)"""
    )
    con.close()


def count(rows: int, threads: int, repeats: int) -> None:
    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.parquet"
        t0 = time.perf_counter()
        write_parquet(path, rows, threads)
        print(f"wrote {rows:,} rows in {time.perf_counter() - t0:.1f} s ({path.stat().st_size / 1e6:.0f} MB)")
        con = duckdb.connect()
        con.execute(f"SET threads = {threads}")
        sql = (
            f"SELECT stratum, count(*) AS trials, sum(CAST(y <> pred AS INTEGER)) AS errors "
            f"FROM read_parquet('{path}') GROUP BY stratum"
        )
        hand = best_of(lambda: con.execute(sql).fetchall(), repeats)
        kw = {"y_true": "y", "y_pred": "pred", "strata": "stratum", "pos_label": 1}
        rel = con.read_parquet(str(path))
        tab = best_of(lambda: be.tabulate(rel, metric="error_rate", **kw), repeats)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ev = best_of(lambda: be.evaluate(rel, **kw), repeats)
            trials = rows // STRATA
            s, t = counts_at(10_000_000)
            counts = be.Counts.from_arrays(s, t, strata=[f"s{i:02d}" for i in range(STRATA)])
            stats = best_of(lambda: be.evaluate(counts), repeats)
    print()
    print(f"| {rows:,} rows, {STRATA} strata ({trials:,} each), DuckDB threads {threads} | wall s | CPU s |")
    print("|---|---:|---:|")
    print(f"| hand-written DuckDB GROUP BY | {hand[1]:.3f} | {hand[0]:.3f} |")
    print(f"| tabulate (DuckDB relation) | {tab[1]:.3f} | {tab[0]:.3f} |")
    print(f"| evaluate (same relation: count and statistics) | {ev[1]:.3f} | {ev[0]:.3f} |")
    print(f"| evaluate of ready-made counts, 10^7 trials per stratum | {stats[1]:.3f} | {stats[0]:.3f} |")
    scale = 2e8 / rows
    count_2e8 = tab[1] * scale
    print()
    print(
        f"evaluate / count at {rows:,} rows: {ev[1] / tab[1]:.2f}x; "
        f"at 2e8 rows (count scaled x{scale:g}: {count_2e8:.2f} s, statistics {stats[1]:.3f} s): "
        f"{(count_2e8 + stats[1]) / count_2e8:.2f}x (target <= 2x)"
    )
    record(
        "evaluate / count, 20 strata of 10^7 rows from Parquet",
        (count_2e8 + stats[1]) / count_2e8,
        2.0,
        note=f"count measured on {rows:,} rows, scaled to 2e8",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["curve", "count", "all"], default="all")
    ap.add_argument("--rows", type=float, default=2e7, help="rows of the Parquet file (default 2e7)")
    ap.add_argument("--threads", type=int, default=1, help="DuckDB threads (default 1)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--grid", type=float, nargs="*", help="trials per stratum (default 10 to 1e9)")
    args = ap.parse_args()
    print(f"bayeseval {be.__version__} from {Path(be.__file__).parent}", file=sys.stderr)
    if args.part in ("curve", "all"):
        curve([int(v) for v in args.grid] if args.grid else GRID, args.repeats)
    if args.part in ("count", "all"):
        count(int(args.rows), args.threads, args.repeats)


if __name__ == "__main__":
    main()
