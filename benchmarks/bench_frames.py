"""Counting from a polars frame (the narwhals back end) and from a pandas frame, against hand-written group-bys.

Run:  .venv/bin/python benchmarks/bench_frames.py [--rows 1000000] [--strata 1000 100000] [--repeats 3]
      [--threads 1]

Generates ``--rows`` rows with a text stratum column (``--strata`` strata, one run per value),
0/1 labels and predictions (int8), and times (CPU seconds, best of ``--repeats``, the two sides
interleaved):

* ``tabulate`` on a polars frame (eager), counted by polars through narwhals, against a hand-written
  polars ``group_by`` of the same figures (errors and rows per stratum);
* ``tabulate`` on a polars LazyFrame, against the same hand-written query made lazy and collected;
* ``tabulate`` on the pandas frame (the pandas back end), against a hand-written pandas ``groupby``;
* the narwhals back end on the pandas frame (what dispatching pandas frames to narwhals would
  cost), against the pandas back end: the measurement behind keeping pandas on its own back end.

``design=Design()`` (rows independent) so that only the counting is timed. ``--threads`` sets
``POLARS_MAX_THREADS`` (before polars is imported) and DuckDB's threads. Prints one table: seconds
and the ratio bayeseval / hand-written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_data(rows: int, strata: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows, dtype=np.int8)
    wrong = rng.random(rows) < 0.1
    names = np.array([f"s{i:06d}" for i in range(strata)])
    g = pd.Series(names[rng.integers(0, strata, rows)], dtype="str")
    return pd.DataFrame({"g": g, "y": y, "p": np.where(wrong, 1 - y, y).astype(np.int8)})


def best_pair(ours, anchor, repeats: int) -> tuple[float, float]:
    """Best CPU seconds (the process's, all its threads) of ``repeats`` calls of each, interleaved.

    CPU time rather than wall time, and the two calls alternating, so that other work on a shared
    machine moves neither figure much; one warm-up call each first.
    """
    ours(), anchor()
    a, b = [], []
    for _ in range(repeats):
        for fn, out in ((ours, a), (anchor, b)):
            t0 = time.process_time()
            fn()
            out.append(time.process_time() - t0)
    return min(a), min(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--strata", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="polars and DuckDB threads (default 1)")
    args = parser.parse_args()
    os.environ["POLARS_MAX_THREADS"] = str(args.threads)

    import polars as pl

    import bayeseval as be
    from bayeseval._backends import pandas_backend
    from bayeseval._backends.narwhals_backend import NarwhalsBackend
    from bayeseval.counts.counts import _counts_from_table
    from bayeseval.counts.metrics import get_metric

    pandas_backend._connection().execute(f"SET threads = {args.threads}")
    design = be.Design()

    def hand_polars(frame):
        return frame.group_by("g").agg((pl.col("y") != pl.col("p")).sum().alias("s"), pl.len().alias("n"))

    def narwhals_on_pandas(df):
        backend = NarwhalsBackend(df)
        backend.check_labels([("y_true", "y"), ("y_pred", "p")])
        return _counts_from_table(backend.confusion(["g"], "y", "p"), get_metric("error_rate"), None, None)

    def measure(strata: int) -> list[tuple]:
        df = make_data(args.rows, strata)
        plf = pl.from_pandas(df)
        lazy = plf.lazy()
        kw = dict(y_true="y", y_pred="p", strata="g", design=design)
        # the same figures whichever way they are counted
        ref = be.tabulate(df, **kw).to_frame()
        for data in (plf, lazy):
            pd.testing.assert_frame_equal(be.tabulate(data, **kw).to_frame(), ref)
        hand = hand_polars(plf).sort("g")
        assert hand["s"].to_list() == ref["successes"].astype(int).tolist()
        timings = [
            ("polars frame", lambda: be.tabulate(plf, **kw), lambda: hand_polars(plf)),
            ("polars LazyFrame", lambda: be.tabulate(lazy, **kw), lambda: hand_polars(lazy).collect()),
            (
                "pandas frame",
                lambda: be.tabulate(df, **kw),
                lambda: df.assign(e=df["y"] != df["p"]).groupby("g")["e"].agg(["sum", "size"]),
            ),
            ("pandas via narwhals", lambda: narwhals_on_pandas(df), lambda: be.tabulate(df, **kw)),
        ]
        out = []
        for name, ours, anchor in timings:
            a, b = best_pair(ours, anchor, args.repeats)
            out.append((f"{args.rows:,} rows, {strata:,} strata", name, a, b, a / b))
        return out

    rows = [row for strata in args.strata for row in measure(strata)]
    print(f"threads={args.threads}, CPU seconds, best of {args.repeats}")
    print("| what | input | bayeseval (s) | anchor (s) | ratio |\n|---|---|---|---|---|")
    for what, name, a, b, r in rows:
        print(f"| {what} | {name} | {a:.3f} | {b:.3f} | {r:.2f}x |")
    print(
        "anchors: a hand-written group_by in the same engine; for 'pandas via narwhals' the anchor is "
        "the pandas back end (ratio > 1: narwhals on pandas is slower)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
