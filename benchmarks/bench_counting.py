"""Counting 12,000,000 predictions: bayeseval.tabulate (DuckDB and pandas paths) vs hand-written code.

Run:  .venv/bin/python benchmarks/bench_counting.py [--rows 12000000] [--repeats 3]

Generates a fraud-scale case (12,000,000 rows, 8 groups, a label with 0.5%
positives, predictions with recall about 0.7) and first times, for every metric,
``bayeseval.tabulate`` on the in-memory pandas frame against a hand-written
DuckDB query over the same frame (conditional sums of the metric's trial and
success rows, target: within 2x) and a hand-written pandas filter-then-groupby,
printing the ratios measured in this run. It then writes the data to Parquet in
a temporary directory and times, side by side:

* ``bayeseval.tabulate`` on the Parquet path (counted inside DuckDB),
  with ``pos_label`` unknown (confusion-table GROUP BY) and given (conditional sums);
* a hand-written DuckDB ``GROUP BY`` on the same file (target: within 1.5x);
* ``bayeseval.tabulate`` on the in-memory pandas frame, and a hand-written
  pandas groupby;
* fairlearn ``MetricFrame`` grouped recall on the same data in memory
  (target: the DuckDB path at least 10x faster);

and the peak resident memory of a fresh process that only counts the Parquet
file through DuckDB, versus one that loads it into pandas and counts there
(``VmHWM`` from /proc/self/status; ``resource.getrusage`` ru_maxrss is printed
too, but on Linux it keeps the parent's high-water mark across fork/exec, so it
overstates a child started from this large process). Timings are the best of
``--repeats`` runs (fairlearn: one run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd


def make_data(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.005).astype(np.int8)
    u = rng.random(n)
    pred = np.where(y == 1, u < 0.7, u < 0.01).astype(np.int8)
    names = np.array([f"region_{k}" for k in range(8)])
    group = names[rng.integers(0, 8, n)]
    return pd.DataFrame({"group": group, "y": y, "pred": pred})


#: per metric: SQL conditions of (trials, successes) with positive class 1, as an expert writes them
HAND_SQL = {
    "error_rate": ("TRUE", "y <> pred"),
    "accuracy": ("TRUE", "y = pred"),
    "recall": ("y = 1", "y = 1 AND pred = 1"),
    "precision": ("pred = 1", "pred = 1 AND y = 1"),
    "fpr": ("y <> 1", "y <> 1 AND pred = 1"),
    "specificity": ("y <> 1", "y <> 1 AND pred <> 1"),
    "npv": ("pred <> 1", "pred <> 1 AND y <> 1"),
}


def hand_pandas(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Filter the metric's trial rows, then group: what an expert writes in pandas."""
    y, pred = df["y"], df["pred"]
    trial = {
        "error_rate": None,
        "accuracy": None,
        "recall": y == 1,
        "precision": pred == 1,
        "fpr": y != 1,
        "specificity": y != 1,
        "npv": pred != 1,
    }[metric]
    rows = df if trial is None else df[trial]
    success = {
        "error_rate": rows["y"] != rows["pred"],
        "accuracy": rows["y"] == rows["pred"],
        "recall": rows["pred"] == 1,
        "precision": rows["y"] == 1,
        "fpr": rows["pred"] == 1,
        "specificity": rows["pred"] != 1,
        "npv": rows["y"] != 1,
    }[metric]
    return success.groupby(rows["group"]).agg(["sum", "count"])


def in_memory_ratios(df: pd.DataFrame, repeats: int, label: str = "string groups") -> None:
    """tabulate(frame) against hand-written DuckDB SQL and pandas over the same frame, every metric."""
    import duckdb

    import bayeseval

    con = duckdb.connect()
    con.register("frame", df)
    print(f"\nin-memory frame, {label} ({df.memory_usage(deep=True).sum() / 2**20:.0f} MiB), best of {repeats}:")
    print(
        f"{'metric':12s} {'tabulate s':>11s} {'DuckDB SQL s':>13s} {'pandas s':>9s} "
        f"{'/ DuckDB SQL':>13s} {'/ pandas':>9s}"
    )
    worst = 0.0
    for metric, (trial, success) in HAND_SQL.items():
        sql = (
            f'SELECT "group", SUM(CASE WHEN {success} THEN 1 ELSE 0 END) AS successes, '
            f'SUM(CASE WHEN {trial} THEN 1 ELSE 0 END) AS trials FROM frame GROUP BY "group" ORDER BY "group"'
        )
        t_bz, counts = best_of(
            lambda m=metric: bayeseval.tabulate(df, y_true="y", y_pred="pred", strata="group", metric=m), repeats
        )
        t_db, hand = best_of(lambda q=sql: con.sql(q).df(), repeats)
        t_pd, ref = best_of(lambda m=metric: hand_pandas(df, m), repeats)
        hand = hand.set_index("group")
        assert (counts.trials.to_numpy() == hand["trials"].to_numpy()).all(), metric
        assert (counts.successes.to_numpy() == hand["successes"].to_numpy()).all(), metric
        assert (counts.trials.to_numpy() == ref["count"].to_numpy()).all(), metric
        worst = max(worst, t_bz / t_db)
        print(f"{metric:12s} {t_bz:11.3f} {t_db:13.3f} {t_pd:9.3f} {t_bz / t_db:13.2f} {t_bz / t_pd:9.2f}")
    print(
        f"target: tabulate(frame) / DuckDB SQL over the frame <= 2 for every metric: worst {worst:.2f} "
        f"({'met' if worst <= 2 else 'NOT met'})"
    )


def best_of(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


_CHILD = r"""
import json, resource, sys, time
import pandas as pd
import bayeseval
mode, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if mode == "duckdb":
    c = bayeseval.tabulate(path, y_true="y", y_pred="pred", strata="group", metric="recall")
else:
    df = pd.read_parquet(path)
    c = bayeseval.tabulate(df, y_true="y", y_pred="pred", strata="group", metric="recall")
elapsed = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
hwm = 0
with open("/proc/self/status") as fh:  # peak of this process image only (ru_maxrss survives exec)
    for line in fh:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
print(json.dumps({"rss_mib": rss / 1024, "hwm_mib": hwm / 1024, "seconds": elapsed,
                  "trials": int(c.total_trials)}))
"""


def child_rss(mode: str, path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=12_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--in-memory-only", action="store_true", help="only the in-memory ratios per metric")
    args = ap.parse_args()

    import duckdb
    from fairlearn.metrics import MetricFrame
    from sklearn.metrics import recall_score

    import bayeseval

    t0 = time.perf_counter()
    df = make_data(args.rows)
    in_memory_ratios(df, args.repeats)
    in_memory_ratios(df.assign(group=df["group"].astype("category")), args.repeats, "categorical groups")
    if args.in_memory_only:
        return
    tmp = tempfile.mkdtemp(prefix="bayeseval-bench-")
    path = os.path.join(tmp, "predictions.parquet")
    df.to_parquet(path, index=False)
    print(
        f"{args.rows:,} rows, {df['y'].mean():.4%} positive, 8 groups; data + Parquet in "
        f"{time.perf_counter() - t0:.1f} s ({os.path.getsize(path) / 2**20:.0f} MiB)"
    )

    def bz_duckdb():
        return bayeseval.tabulate(path, y_true="y", y_pred="pred", strata="group", metric="recall")

    def bz_duckdb_pos():
        return bayeseval.tabulate(path, y_true="y", y_pred="pred", strata="group", metric="recall", pos_label=1)

    def hand_duckdb():
        con = duckdb.connect()
        return con.sql(
            'SELECT "group", SUM(CASE WHEN y = 1 AND pred = 1 THEN 1 ELSE 0 END) AS successes, '
            "SUM(CASE WHEN y = 1 THEN 1 ELSE 0 END) AS trials "
            f'FROM read_parquet(\'{path}\') GROUP BY "group" ORDER BY "group"'
        ).df()

    def bz_pandas():
        return bayeseval.tabulate(df, y_true="y", y_pred="pred", strata="group", metric="recall")

    def hand_pandas():
        pos = df[df["y"] == 1]
        return pos.groupby("group")["pred"].agg(["sum", "count"])

    def fairlearn_recall():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mf = MetricFrame(metrics=recall_score, y_true=df["y"], y_pred=df["pred"], sensitive_features=df["group"])
            return mf.by_group

    rows = []
    timings = {}
    for name, fn, reps in [
        ("bayeseval.tabulate(Parquet path) [DuckDB]", bz_duckdb, args.repeats),
        ("bayeseval.tabulate(Parquet path, pos_label=1) [DuckDB]", bz_duckdb_pos, args.repeats),
        ("hand-written DuckDB GROUP BY", hand_duckdb, args.repeats),
        ("bayeseval.tabulate(pandas frame)", bz_pandas, args.repeats),
        ("hand-written pandas groupby", hand_pandas, args.repeats),
        ("fairlearn MetricFrame recall by group", fairlearn_recall, 1),
    ]:
        seconds, out = best_of(fn, reps)
        timings[name] = (seconds, out)
        rows.append((name, seconds))

    # all methods agree
    counts = timings["bayeseval.tabulate(Parquet path) [DuckDB]"][1]
    hand = timings["hand-written DuckDB GROUP BY"][1].set_index("group")
    assert (counts.trials.to_numpy() == hand["trials"].to_numpy()).all()
    assert (counts.successes.to_numpy() == hand["successes"].to_numpy()).all()
    fl = timings["fairlearn MetricFrame recall by group"][1]
    np.testing.assert_allclose(counts.rates.to_numpy(), np.asarray(fl, dtype=float))
    pd.testing.assert_frame_equal(counts.to_frame(), timings["bayeseval.tabulate(pandas frame)"][1].to_frame())

    ref_db = timings["hand-written DuckDB GROUP BY"][0]
    ref_fl = timings["fairlearn MetricFrame recall by group"][0]
    print()
    print(f"{'method':58s} {'seconds':>9s} {'/ hand DuckDB':>14s} {'fairlearn /':>12s}")
    for name, seconds in rows:
        print(f"{name:58s} {seconds:9.3f} {seconds / ref_db:14.2f} {ref_fl / seconds:12.1f}")

    print()
    for mode in ("duckdb", "pandas"):
        info = child_rss(mode, path)
        label = "Parquet -> Counts in DuckDB" if mode == "duckdb" else "Parquet -> pandas -> Counts"
        print(
            f"peak memory, fresh process, {label:30s}: VmHWM {info['hwm_mib']:7.0f} MiB, "
            f"getrusage ru_maxrss {info['rss_mib']:7.0f} MiB ({info['seconds']:.2f} s, "
            f"{info['trials']:,} trials)"
        )
    print(
        f"this process (data in memory, all methods run): "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    shutil.rmtree(tmp, ignore_errors=True)
    ratio = timings["bayeseval.tabulate(Parquet path) [DuckDB]"][0] / ref_db
    speedup = ref_fl / timings["bayeseval.tabulate(Parquet path) [DuckDB]"][0]
    print()
    print(
        f"targets: DuckDB path / hand-written DuckDB = {ratio:.2f} (target <= 1.5): "
        f"{'met' if ratio <= 1.5 else 'NOT met'}; fairlearn / DuckDB path = {speedup:.1f}x "
        f"(target >= 10): {'met' if speedup >= 10 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
