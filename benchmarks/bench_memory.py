"""Benchmark: peak resident memory of counting 12,000,000 rows and of a 1,000-stratum exact fit.

Each case runs in a fresh subprocess and reads ``resource.getrusage(RUSAGE_SELF).ru_maxrss``
(the peak resident set size of that process) at checkpoints:

* ``pandas``: build a 12M-row frame (int8 labels, 200 strata as a categorical), then
  ``tabulate(frame, ...)``. Reported: the frame's own size, the peak after building it, the
  peak after counting; the extra memory of counting as a multiple of the frame size.
* ``duckdb``: the same rows in a Parquet file; ``tabulate("rows.parquet", ...)`` counts
  inside DuckDB with one GROUP BY, so the rows never enter pandas.
* ``exact_fit``: ``fit_hierarchical`` on 1,000 strata (4,000 draws, the default), then
  ``.summary()``.

``ru_maxrss`` of a child also counts the parent's resident memory at fork time (Linux keeps
the high-water mark across fork/exec); this runner imports no NumPy, so that is small, and the
``VmHWM`` column (/proc/self/status, the child's own peak) is shown beside it as a check.
Times are CPU seconds of the counting/fitting step (``time.process_time``) and wall seconds;
on a shared machine only the CPU figure is comparable between runs.

The in-memory cases also reset the peak (``/proc/self/clear_refs``) just before counting and
report the peak while counting above the resident memory before it, as a share of the frame.

Targets: counting a frame in memory adds at most 50% of the frame size; the DuckDB path
stays well below the size of the data in pandas; the 1,000-stratum fit stays under ~0.5 GB.

Usage::

    .venv/bin/python benchmarks/bench_memory.py [--rows 12000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMON = r"""
import json, resource, sys, time, warnings
import numpy as np, pandas as pd
def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
def reset_hwm():
    # Linux: writing 5 to clear_refs resets VmHWM to the current RSS, so the next VmHWM reading
    # is the peak of what follows (the frame's construction temporaries do not mask it)
    import gc
    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
def hwm_mb():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
ROWS = int(sys.argv[1]); PATH = sys.argv[2]
def frame():
    rng = np.random.default_rng(0)
    g = rng.integers(0, 200, ROWS).astype(np.int16)
    y = (rng.random(ROWS) < 0.1).astype(np.int8)
    p = np.where(rng.random(ROWS) < 0.05, 1 - y, y).astype(np.int8)
    return pd.DataFrame({"y": y, "p": p, "g": pd.Categorical(g)})
def frame_str():
    rng = np.random.default_rng(0)
    names = np.array([f"region_{k}" for k in range(8)])
    g = pd.Series(names[rng.integers(0, 8, ROWS)], dtype="str")
    y = (rng.random(ROWS) < 0.005).astype(np.int8)
    p = np.where(y == 1, rng.random(ROWS) < 0.7, rng.random(ROWS) < 0.01).astype(np.int8)
    return pd.DataFrame({"y": y, "p": p, "g": g})
def count_peak(df, metric):
    # peak resident memory while counting, above the resident memory just before (MB): first the
    # one-off cost of a first call (lazy imports, on a 1,000-row slice), then the counting itself
    reset_hwm()
    before = rss_mb()
    bayeseval.tabulate(df.head(1000), y_true="y", y_pred="p", strata="g", metric=metric)
    one_off = hwm_mb() - before
    reset_hwm()
    before = rss_mb()
    t0 = time.perf_counter(); c0 = time.process_time()
    c = bayeseval.tabulate(df, y_true="y", y_pred="p", strata="g", metric=metric)
    secs = time.perf_counter() - t0; cpu = time.process_time() - c0
    return c, (one_off, hwm_mb() - before), secs, cpu
"""

CASES = {
    "write_parquet": COMMON
    + r"""
df = frame()
df.assign(g=df.g.astype(np.int16)).to_parquet(PATH, index=False)
print(json.dumps({}))
""",
    "pandas": COMMON
    + r"""
import bayeseval, duckdb  # the import's fixed memory (about 40 MB) is not part of counting
base = peak_mb()
df = frame()
size = df.memory_usage(deep=True).sum() / 2**20
after_frame = peak_mb()
c, during, secs, cpu = count_peak(df, "error_rate")
print(json.dumps({"base": base, "data_mb": size, "after_data": after_frame, "after_count": peak_mb(),
                  "during": during, "seconds": secs, "cpu": cpu, "hwm": hwm_mb(), "strata": len(c),
                  "trials": int(c.trials.sum())}))
""",
    "pandas_str": COMMON
    + r"""
import bayeseval, duckdb  # the import's fixed memory (about 40 MB) is not part of counting
base = peak_mb()
df = frame_str()
size = df.memory_usage(deep=True).sum() / 2**20
after_frame = peak_mb()
c, during, secs, cpu = count_peak(df, "recall")
print(json.dumps({"base": base, "data_mb": size, "after_data": after_frame, "after_count": peak_mb(),
                  "during": during, "seconds": secs, "cpu": cpu, "hwm": hwm_mb(), "strata": len(c),
                  "trials": int(c.trials.sum())}))
""",
    "duckdb": COMMON
    + r"""
import bayeseval, duckdb
base = peak_mb()
t0 = time.perf_counter(); c0 = time.process_time()
c = bayeseval.tabulate(PATH, y_true="y", y_pred="p", strata="g", metric="error_rate")
secs = time.perf_counter() - t0; cpu = time.process_time() - c0
print(json.dumps({"base": base, "data_mb": float("nan"), "after_data": base, "after_count": peak_mb(),
                  "seconds": secs, "cpu": cpu, "hwm": hwm_mb(), "strata": len(c), "trials": int(c.trials.sum())}))
""",
    "exact_fit": COMMON
    + r"""
import bayeseval
base = peak_mb()
rng = np.random.default_rng(1)
n = rng.integers(20, 2000, 1000)
s = rng.binomial(n, rng.beta(4, 36, 1000))
t0 = time.perf_counter(); c0 = time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    post = bayeseval.fit_hierarchical(s, n, random_seed=0)
    summ = post.summary()
secs = time.perf_counter() - t0; cpu = time.process_time() - c0
theta_mb = post.theta.nbytes / 2**20
print(json.dumps({"base": base, "data_mb": theta_mb, "after_data": base, "after_count": peak_mb(),
                  "seconds": secs, "cpu": cpu, "hwm": hwm_mb(), "strata": len(summ), "trials": int(n.sum())}))
""",
}


def run(case: str, rows: int, path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CASES[case], str(rows), path], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"{case} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=12_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "rows.parquet")
        run("write_parquet", args.rows, path)
        parquet_mb = Path(path).stat().st_size / 2**20
        res = {c: run(c, args.rows, path) for c in ("pandas", "pandas_str", "duckdb", "exact_fit")}
    print(f"Peak resident memory (MB), fresh subprocess per case; {args.rows:,} rows, 200 strata")
    print(
        f"{'case':<34}{'import':>8}{'data':>8}{'peak':>8}{'extra':>8}{'extra/data':>11}{'VmHWM':>8}{'cpu s':>8}{'wall s':>8}"
    )
    for name, label in (
        ("pandas", "count, pandas path"),
        ("duckdb", f"count, DuckDB on Parquet ({parquet_mb:.0f} MB)"),
        ("exact_fit", "exact fit, 1,000 strata (theta)"),
    ):
        r = res[name]
        extra = r["after_count"] - r["after_data"]
        ratio = extra / r["data_mb"] if r["data_mb"] == r["data_mb"] and r["data_mb"] > 0 else float("nan")
        data = f"{r['data_mb']:.0f}" if r["data_mb"] == r["data_mb"] else "-"
        print(
            f"{label:<34}{r['base']:>8.0f}{data:>8}{r['after_count']:>8.0f}{extra:>8.0f}"
            f"{ratio:>11.2f}{r['hwm']:>8.0f}{r['cpu']:>8.2f}{r['seconds']:>8.2f}"
        )
    print()
    for name, label in (
        ("pandas", "error_rate, int8 labels, categorical strata"),
        ("pandas_str", "recall, int8 labels, string strata"),
    ):
        r = res[name]
        one_off, during = r["during"]
        print(
            f"in-memory frame, {label}: frame {r['data_mb']:.0f} MB; peak while counting above the "
            f"resident memory before it: {during:.0f} MB = {during / r['data_mb']:.0%} of the frame "
            f"(target <= 50%: {'met' if during <= 0.5 * r['data_mb'] else 'NOT met'}); one-off cost of "
            f"the first call (lazy imports, measured on 1,000 rows before): {one_off:.0f} MB"
        )
    p, d = res["pandas"], res["duckdb"]
    print(
        f"DuckDB peak / pandas peak: {d['after_count'] / p['after_count']:.2f}; "
        f"DuckDB extra over import / pandas frame size: {(d['after_count'] - d['base']) / p['data_mb']:.2f}"
    )
    assert p["trials"] == d["trials"] == args.rows, "both paths must count every row"
    return 0


if __name__ == "__main__":
    sys.exit(main())
