"""Counting at the engine's speed: ``tabulate`` at 1,000 and 100,000 strata against a hand-written group-by.

Run:  python benchmarks/bench_count_strata.py [--before DIR] [--repeats 5] [--rows-1k 12000000] [--rows-100k 1000000]

Two cases, each a seeded frame of 0/1 labels (int8) and a string stratum column: 12,000,000 rows in
1,000 strata and 1,000,000 rows in 100,000 strata, written once to Parquet. For each, in a fresh
process per code version, it times recall (``pos_label`` left to default) counted

* from the pandas frame (read from the Parquet file), against the anchor a pandas user writes: the
  metric's trial and success columns, then ``groupby(stratum)[...].sum()``;
* from the Parquet path (counted inside DuckDB), against the anchor a DuckDB user writes:
  ``SELECT stratum, SUM(CASE WHEN ...), SUM(CASE WHEN ...) FROM read_parquet(...) GROUP BY stratum
  ORDER BY stratum`` (sorted, as ``Counts`` are).

Each figure is the best of ``--repeats`` calls, wall and CPU time (the process's, DuckDB's threads
included); the anchors are timed in the same process, interleaved with ``tabulate``, so a ratio compares
calls made under the same load. ``--before DIR`` runs the same measurements with the package found in
``DIR`` (e.g. ``git archive <commit> bayeseval | tar -x -C DIR``), before and after side by side, the two
versions alternating. Every count is checked against its anchor. Targets: ``tabulate`` within 1.2x of
the anchor in both engines at both sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: the section of docs/scaling.md this script writes (run_all.py includes it in the page)
RESULT = ROOT / "benchmarks" / "results" / "count_strata.md"
ANCHORS = {"pandas frame": "pandas `groupby(stratum)` sums", "Parquet path": "DuckDB SQL, conditional sums by stratum"}


def make_data(rows: int, strata: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = (rng.random(rows) < 0.3).astype(np.int8)
    u = rng.random(rows)
    pred = np.where(y == 1, u < 0.7, u < 0.1).astype(np.int8)
    names = np.array([f"s{j:06d}" for j in range(strata)], dtype=object)
    return pd.DataFrame({"g": pd.array(names[rng.integers(0, strata, rows)], dtype="str"), "y": y, "pred": pred})


def best(fn, repeats: int) -> tuple[float, float, object]:
    """Best wall and CPU seconds of ``repeats`` calls, and the last result."""
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), out


def measure(path: str, repeats: int) -> dict:
    """Time tabulate and the two anchors on the frame and the Parquet file at ``path``."""
    import duckdb

    import bayeseval

    df = pd.read_parquet(path)

    def pandas_anchor():
        y, p = df["y"].to_numpy(), df["pred"].to_numpy()
        work = pd.DataFrame({"g": df["g"], "trials": y == 1, "successes": (y == 1) & (p == 1)})
        return work.groupby("g")[["successes", "trials"]].sum()

    def duckdb_anchor():
        return (
            duckdb.connect()
            .sql(
                "SELECT g, SUM(CASE WHEN y = 1 AND pred = 1 THEN 1 ELSE 0 END) AS successes, "
                f"SUM(CASE WHEN y = 1 THEN 1 ELSE 0 END) AS trials FROM read_parquet('{path}') GROUP BY g ORDER BY g"
            )
            .df()
        )

    pairs = {
        "pandas frame": (
            lambda: bayeseval.tabulate(df, y_true="y", y_pred="pred", strata="g", metric="recall"),
            pandas_anchor,
        ),
        "Parquet path": (
            lambda: bayeseval.tabulate(path, y_true="y", y_pred="pred", strata="g", metric="recall"),
            duckdb_anchor,
        ),
    }
    out = {}
    for name, (ours, anchor) in pairs.items():
        ours(), anchor()  # warm: imports, file cache
        walls, cpus = {"ours": [], "anchor": []}, {"ours": [], "anchor": []}
        for _ in range(repeats):  # interleaved, so both see the same load
            for key, fn in (("ours", ours), ("anchor", anchor)):
                w, c, res = best(fn, 1)
                walls[key].append(w)
                cpus[key].append(c)
                if key == "ours":
                    counts = res
                else:
                    ref = res.set_index("g") if "g" in res.columns else res
        assert counts.successes.tolist() == ref["successes"].astype(np.int64).tolist(), name
        assert counts.trials.tolist() == ref["trials"].astype(np.int64).tolist(), name
        assert counts.strata.tolist() == ref.index.tolist(), name
        out[name] = {
            "ours": (min(walls["ours"]), min(cpus["ours"])),
            "anchor": (min(walls["anchor"]), min(cpus["anchor"])),
        }
    return out


def child(code_dir: str, path: str, repeats: int) -> dict:
    env = dict(os.environ, PYTHONPATH=code_dir)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", path, "--repeats", str(repeats)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="a directory holding the package before the change (its bayeseval/)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rows-1k", type=int, default=12_000_000, help="rows of the 1,000-strata case")
    ap.add_argument("--rows-100k", type=int, default=1_000_000, help="rows of the 100,000-strata case")
    ap.add_argument("--write", action="store_true", help=f"write the table to {RESULT.relative_to(ROOT)}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.repeats)))
        return 0

    versions = {"after": str(ROOT)}
    if args.before:
        versions = {"before": os.path.abspath(args.before), **versions}
    print(f"best of {args.repeats} interleaved calls; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
    worst = 0.0
    rows_md = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows, strata in ((args.rows_1k, 1_000), (args.rows_100k, 100_000)):
            path = os.path.join(tmp, f"rows_{strata}.parquet")
            make_data(rows, strata).to_parquet(path, row_group_size=1 << 20)
            results = {v: child(d, path, args.repeats) for v, d in versions.items()}
            print(f"\n{rows:,} rows, {strata:,} strata (recall)")
            print(
                f"{'source':<14} {'version':<7} {'tabulate s':>10} {'anchor s':>9} {'ratio':>6} {'cpu ratio':>9}  target"
            )
            for source in ("pandas frame", "Parquet path"):
                cells = []
                for version, res in results.items():
                    (w1, c1), (w0, c0) = res[source]["ours"], res[source]["anchor"]
                    if version == "after":
                        worst = max(worst, w1 / w0)
                    print(f"{source:<14} {version:<7} {w1:10.3f} {w0:9.3f} {w1 / w0:6.2f} {c1 / c0:9.2f}  <= 1.2")
                    cells.append(f"{w1 / w0:.2f}x ({c1 / c0:.2f}x)")
                anchor_s = results["after"][source]["anchor"][0]
                rows_md.append(
                    f"| {rows:,} | {strata:,} | {source} | {ANCHORS[source]} | {anchor_s:.3f} | {' | '.join(cells)} |"
                )
    print(f"\nworst wall-time ratio after: {worst:.2f} (target <= 1.2)")
    if args.write:
        versions_head = " | ".join(f"tabulate / anchor, {v}" for v in versions)
        lines = [
            "## Counting by stratum",
            "",
            "`tabulate` of 0/1 labels (int8) for recall by a string stratum column, against the group-by "
            "a user writes in the same engine, timed in the same process, interleaved (best of "
            f"{args.repeats}; wall time, CPU time in parentheses; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores). Measured on {time.strftime('%Y-%m-%d')} by "
            f"`python benchmarks/bench_count_strata.py --write{' --before DIR' if args.before else ''}`"
            + (
                "; *before* is the package as it was before the count in one aggregation (the confusion "
                "table by stratum and label pair, regrouped by stratum in pandas)."
                if args.before
                else "."
            ),
            "",
            f"| rows | strata | source | anchor | anchor s | {versions_head} |",
            "|---:|---:|---|---|---:|" + "---:|" * len(versions),
            *rows_md,
            "",
            "Target: within 1.2x of the anchor.",
        ]
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text("\n".join(lines) + "\n")
        print(f"wrote {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
