"""Counting with clusters vs without: ``tabulate(..., design=Design(cluster=...))`` at 10,000,000 rows.

Run:  .venv/bin/python benchmarks/bench_cluster_count.py [--rows 10000000] [--strata 1000] [--size 5] [--repeats 3]

Generates ``--rows`` answers: ``rows / size`` items (2,000,000 at the defaults) answered ``--size``
times each, every item in one of ``--strata`` strata, with a 0/1 outcome (item-level accuracy
drawn from Beta(4, 1)) and binary labels and predictions agreeing with it. Then times, on the
in-memory pandas frame and on the same rows written to Parquet (counted inside DuckDB):

* ``outcome=``: the per-row outcome counted per stratum with ``design=Design()`` (each row its
  own unit: one aggregation by stratum and outcome) and with ``design=Design(cluster="item")``
  (a first aggregation by item, a second by stratum and the units' pair);
* labels: ``y_true``/``y_pred`` with the error rate counted today (the one-pass count of 0/1
  labels by stratum) and with the cluster (the same count, then the units' two aggregations).

Each line is the best of ``--repeats`` runs, wall and CPU time (the process's, DuckDB's threads
included); the ratio is clustered / unclustered in the same run. Target: clustered
counting within 1.5x of the same count without clusters, for pandas and DuckDB.

The floor: the same two counts written by hand in the same engine, with no checks and no
Counts (NumPy ``bincount`` for the frame, one SQL statement each over the Parquet file). A
group-by over the 2,000,000 (stratum, item) keys costs several times a group-by over 1,000
strata whatever the code around it; the floor's ratio is what the target is up against.

Then ``evaluate(..., design=Design(cluster="item"))`` on ``--eval-strata`` strata (20,000) of
``--eval-items`` items (10) answered ``--size`` times, a 0/1 outcome: target under 10 s.
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

from targets import record  # noqa: E402

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


def floor_numpy(df: pd.DataFrame, x: np.ndarray) -> dict[str, object]:
    """The two counts by hand in NumPy: per stratum (one ``bincount``) and the units' histogram."""
    stratum, item = df["stratum"].to_numpy(), df["item"].to_numpy()

    def plain() -> np.ndarray:
        return np.bincount(stratum.astype(np.int64) * 2 + x).reshape(-1, 2)

    def units() -> np.ndarray:
        size = int(item.max()) + 1
        both = np.bincount(item * 2 + x, minlength=2 * size)
        ones = both[1::2]
        rows = both[0::2] + ones
        of_item = np.full(size, -1, dtype=stratum.dtype)
        of_item[item] = stratum
        assert np.array_equal(of_item[item], stratum)
        used = np.flatnonzero(rows)
        t, s = rows[used], ones[used]
        width = int(t.max()) + 1
        return np.bincount((of_item[used].astype(np.int64) * width + t) * width + s)

    return {"plain": plain, "units": units}


def floor_duckdb(path: str, labels: bool) -> dict[str, object]:
    """The two counts by hand in DuckDB SQL over the Parquet file."""
    import duckdb

    con = duckdb.connect()
    src = f"read_parquet('{path}')"
    if labels:
        plain = (
            f"SELECT stratum, count(*), count_if(y <> pred), bit_or(coalesce(y | pred, 2)) FROM {src} "
            "GROUP BY ALL ORDER BY stratum"
        )
        per_unit = (
            f"SELECT stratum, item, count_if(y <> pred) s, count(*) t, bit_or(coalesce(y | pred, 2)) b FROM {src}"
        )
        units = f"SELECT stratum, s, t, count(*), bit_or(b) FROM ({per_unit} GROUP BY ALL) GROUP BY ALL"
    else:
        plain = f"SELECT stratum, ok, count(*) FROM {src} GROUP BY ALL"
        units = f"SELECT stratum, s, t, count(*) FROM (SELECT stratum, item, sum(ok) s, count(*) t FROM {src} GROUP BY ALL) GROUP BY ALL"
    return {"plain": lambda: con.sql(plain).df(), "units": lambda: con.sql(units).df()}


def eval_frame(strata: int, items: int, size: int, seed: int = 1) -> pd.DataFrame:
    """``strata * items`` items answered ``size`` times, a 0/1 outcome (item accuracy Beta(4, 1))."""
    rng = np.random.default_rng(seed)
    n_items = strata * items
    item = np.repeat(np.arange(n_items, dtype=np.int64), size)
    ok = (rng.random(len(item)) < rng.beta(4.0, 1.0, n_items)[item]).astype(np.int8)
    return pd.DataFrame({"stratum": (np.arange(n_items) % strata)[item], "item": item, "ok": ok})


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
    ap.add_argument("--eval-strata", type=int, default=20_000)
    ap.add_argument("--eval-items", type=int, default=10, help="items per stratum in the evaluate run")
    args = ap.parse_args()

    df = make_data(args.rows, args.strata, args.size)
    print(
        f"{len(df):,} rows, {args.strata:,} strata, {len(df) // args.size:,} clusters of {args.size}; "
        f"best of {args.repeats}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}"
    )
    flat, unit = be.Design(), be.Design(cluster="item")
    forms = {
        "outcome": {"outcome": "ok"},
        "labels (error_rate)": {"y_true": "y", "y_pred": "pred", "metric": "error_rate"},
    }
    xs = {"outcome": df["ok"].to_numpy(), "labels (error_rate)": (df["y"] != df["pred"]).to_numpy().view(np.int8)}
    worst, worst_at = 0.0, ""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "answers.parquet")
        df.to_parquet(path, row_group_size=1 << 20)
        engines = {"pandas frame": df, "Parquet (DuckDB)": path}
        print(
            f"\n{'engine':<18} {'form':<20} {'plain s':>8} {'cluster s':>10} {'ratio':>6} {'cpu ratio':>9} "
            f"{'floor plain s':>13} {'floor cluster s':>15} {'floor ratio':>11} {'ours/floor':>10}"
        )
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
                if engine == "pandas frame":
                    hand = floor_numpy(df, xs[form])
                else:
                    hand = floor_duckdb(path, labels=form != "outcome")
                f0, _ = best(hand["plain"], args.repeats)
                f1, _ = best(hand["units"], args.repeats)
                if w1 / w0 > worst:
                    worst, worst_at = w1 / w0, f"{engine}, {form}"
                print(
                    f"{engine:<18} {form:<20} {w0:8.2f} {w1:10.2f} {w1 / w0:6.2f} {c1 / c0:9.2f} "
                    f"{f0:13.3f} {f1:15.3f} {f1 / f0:11.2f} {w1 / f1:10.2f}",
                    flush=True,
                )
    print(f"\nworst wall-time ratio: {worst:.2f} (target <= 1.5)")
    record(
        f"counting with clusters vs without, {len(df):,} rows (worst of pandas, DuckDB)",
        worst,
        1.5,
        note=f"{worst_at}; {len(df):,} rows in {len(df) // args.size:,} clusters",
    )

    frame = eval_frame(args.eval_strata, args.eval_items, args.size)
    be.evaluate(frame.head(1000), strata="stratum", outcome="ok", design=unit)  # imports, outside the timing
    w, c = best(lambda: be.evaluate(frame, strata="stratum", outcome="ok", design=unit), args.repeats)
    print(
        f"\nevaluate, design=Design(cluster='item'): {args.eval_strata:,} strata x {args.eval_items} items x "
        f"{args.size} answers ({len(frame):,} rows): {w:.2f} s wall, {c:.2f} s CPU (load average "
        f"{os.getloadavg()[0]:.1f})"
    )
    record(
        f"evaluate with clusters, {args.eval_strata:,} strata",
        w,
        10.0,
        unit="s",
        note=f"{len(frame):,} rows: {args.eval_strata:,} strata x {args.eval_items} items x {args.size} answers",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
