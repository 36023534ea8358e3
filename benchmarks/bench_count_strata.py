"""Counting at the engine's speed: ``tabulate`` at 1,000 and 100,000 strata against a hand-written group-by.

Run:  python benchmarks/bench_count_strata.py [--before DIR] [--repeats 7] [--rows-1k 12000000] [--rows-100k 1000000]
      [--rows-names 1000000] [--names-strata 1000]

Two cases, each a seeded frame of 0/1 labels (int8) and a string stratum column: 12,000,000 rows in
1,000 strata and 1,000,000 rows in 100,000 strata, written once to Parquet; and a third, without a
target, of class names: 1,000,000 rows in 1,000 strata whose labels are "cat"/"dog" (pandas strings),
counted with ``pos_label="cat"`` (the anchors compare with "cat" where the others compare with 1). For
each, in a fresh process per code version, it times recall (``pos_label`` left to default) counted

* from the pandas frame (read from the Parquet file), against the anchor a pandas user writes: the
  metric's trial and success columns, then ``groupby(stratum)[...].sum()``;
* from the Parquet path (counted inside DuckDB), against the anchor a DuckDB user writes:
  ``SELECT stratum, SUM(CASE WHEN ...), SUM(CASE WHEN ...) FROM read_parquet(...) GROUP BY stratum
  ORDER BY stratum`` (sorted, as ``Counts`` are);
* from a polars DataFrame and from a polars LazyFrame over it (both in memory, when polars is
  installed), against the anchor a polars user writes in the same mode:
  ``group_by(stratum).agg((y == 1).sum(), ((y == 1) & (pred == 1)).sum()).sort(stratum)``
  (``.collect()`` for the lazy frame).

Each figure is the median, and the best, of ``--repeats`` calls, CPU time (the process's: DuckDB's and
polars' threads included) and wall time; the anchors are timed in the same process, interleaved with
``tabulate``, so a ratio compares calls made under the same load. ``--before DIR`` runs the same
measurements with the package found in ``DIR`` (e.g. ``git archive <commit> bayeseval | tar -x -C DIR``),
before and after side by side, each version in its own process. Every count is checked against its
anchor. Targets: ``tabulate`` within 1.2x of the anchor in every engine at both sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from targets import record

ROOT = Path(__file__).resolve().parents[1]
#: the section of docs/scaling.md this script writes (run_all.py includes it in the page)
RESULT = ROOT / "benchmarks" / "results" / "count_strata.md"
ANCHORS = {
    "pandas frame": "pandas `groupby(stratum)` sums",
    "Parquet path": "DuckDB SQL, conditional sums by stratum",
    "polars frame": "polars `group_by(stratum).agg(...)`, conditional sums, sorted",
    "polars lazy": "the same on the LazyFrame, `.collect()`",
}


#: the positive class of the class-name case (its labels are "cat" and "dog")
NAMED = "cat"


def make_data(rows: int, strata: int, seed: int = 0, named: bool = False) -> pd.DataFrame:
    """Seeded rows: 0/1 labels (int8), or with ``named`` the classes "cat" (1) and "dog" (0) as pandas strings."""
    rng = np.random.default_rng(seed)
    y = (rng.random(rows) < 0.3).astype(np.int8)
    u = rng.random(rows)
    pred = np.where(y == 1, u < 0.7, u < 0.1).astype(np.int8)
    names = np.array([f"s{j:06d}" for j in range(strata)], dtype=object)
    g = pd.array(names[rng.integers(0, strata, rows)], dtype="str")
    if named:
        classes = np.array(["dog", NAMED], dtype=object)
        return pd.DataFrame(
            {"g": g, "y": pd.array(classes[y], dtype="str"), "pred": pd.array(classes[pred], dtype="str")}
        )
    return pd.DataFrame({"g": g, "y": y, "pred": pred})


def best(fn, repeats: int) -> tuple[float, float, object]:
    """Best wall and CPU seconds of ``repeats`` calls, and the last result."""
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), out


def polars_pairs(path: str, positive: object = 1) -> dict:
    """``tabulate`` and the polars anchor on a polars DataFrame and on a LazyFrame of it (none without polars)."""
    try:
        import polars as pl
    except ImportError:
        return {}
    import bayeseval

    frame = pl.read_parquet(path)
    lazy = frame.lazy()
    y, pred = pl.col("y"), pl.col("pred")
    sums = [((y == positive) & (pred == positive)).sum().alias("successes"), (y == positive).sum().alias("trials")]
    pos_label = None if positive == 1 else positive

    def ours(data):
        return lambda: bayeseval.tabulate(
            data, y_true="y", y_pred="pred", strata="g", metric="recall", pos_label=pos_label
        )

    return {
        "polars frame": (ours(frame), lambda: frame.group_by("g").agg(*sums).sort("g").to_pandas()),
        "polars lazy": (ours(lazy), lambda: lazy.group_by("g").agg(*sums).sort("g").collect().to_pandas()),
    }


def measure(path: str, repeats: int, positive: object = 1) -> dict:
    """Time tabulate and the anchors on the frames and the Parquet file at ``path``; the labels' positive
    class is ``positive`` (1, or :data:`NAMED` for class names, given to ``tabulate`` as ``pos_label``)."""
    import duckdb

    import bayeseval

    df = pd.read_parquet(path)
    pos_label = None if positive == 1 else positive
    literal = "1" if positive == 1 else f"'{positive}'"

    def pandas_anchor():
        y, p = df["y"].to_numpy(), df["pred"].to_numpy()
        work = pd.DataFrame({"g": df["g"], "trials": y == positive, "successes": (y == positive) & (p == positive)})
        return work.groupby("g")[["successes", "trials"]].sum()

    def duckdb_anchor():
        return (
            duckdb.connect()
            .sql(
                f"SELECT g, SUM(CASE WHEN y = {literal} AND pred = {literal} THEN 1 ELSE 0 END) AS successes, "
                f"SUM(CASE WHEN y = {literal} THEN 1 ELSE 0 END) AS trials FROM read_parquet('{path}') "
                "GROUP BY g ORDER BY g"
            )
            .df()
        )

    def ours(data):
        return lambda: bayeseval.tabulate(
            data, y_true="y", y_pred="pred", strata="g", metric="recall", pos_label=pos_label
        )

    pairs = {
        "pandas frame": (ours(df), pandas_anchor),
        "Parquet path": (ours(path), duckdb_anchor),
        **polars_pairs(path, positive),
    }
    out = {}
    for name, (ours, anchor) in pairs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # strata without positives: an EmptyStratumWarning per call
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
        out[name] = {key: {"wall": walls[key], "cpu": cpus[key]} for key in ("ours", "anchor")}
    return out


def child(code_dir: str, path: str, repeats: int, named: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=code_dir)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", path, "--repeats", str(repeats), *(["--named"] if named else [])],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ratios(res: dict, kind: str) -> tuple[float, float]:
    """tabulate / anchor: the ratio of the medians and the ratio of the best calls, of ``kind`` time."""
    ours, anchor = res["ours"][kind], res["anchor"][kind]
    return statistics.median(ours) / statistics.median(anchor), min(ours) / min(anchor)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="a directory holding the package before the change (its bayeseval/)")
    ap.add_argument(
        "--before-note",
        default="the package before the change",
        help="what --before holds, for the table's caption",
    )
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--rows-1k", type=int, default=12_000_000, help="rows of the 1,000-strata case (0: skipped, as every case)"
    )
    ap.add_argument("--rows-100k", type=int, default=1_000_000, help="rows of the 100,000-strata case")
    ap.add_argument(
        "--rows-names",
        type=int,
        default=1_000_000,
        help='rows of the 1,000-strata case of labels "cat"/"dog"',
    )
    ap.add_argument("--names-strata", type=int, default=1_000, help="strata of the case of class names")
    ap.add_argument("--write", action="store_true", help=f"write the table to {RESULT.relative_to(ROOT)}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--named", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.repeats, NAMED if args.named else 1)))
        return 0

    versions = {"after": str(ROOT)}
    if args.before:
        versions = {"before": os.path.abspath(args.before), **versions}
    load = os.getloadavg()[0]
    print(f"{args.repeats} interleaved calls each; {os.cpu_count()} cores; load {load:.1f}")
    worst = 0.0
    rows_md = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            (args.rows_1k, 1_000, False),
            (args.rows_100k, 100_000, False),
            (args.rows_names, args.names_strata, True),
        ]
        cases = [case for case in cases if case[0]]  # 0 rows: the case is skipped
        for rows, strata, named in cases:
            path = os.path.join(tmp, f"rows_{strata}{'_named' if named else ''}.parquet")
            make_data(rows, strata, named=named).to_parquet(path, row_group_size=1 << 20)
            results = {v: child(d, path, args.repeats, named) for v, d in versions.items()}
            what = f'recall, labels "cat"/"dog", pos_label={NAMED!r}' if named else "recall"
            print(f"\n{rows:,} rows, {strata:,} strata ({what}); tabulate / anchor, median (best)")
            print(f"{'source':<14} {'version':<7} {'anchor cpu s':>12} {'cpu ratio':>15} {'wall ratio':>15}  target")
            for source in results["after"]:
                cells = []
                for version, res in results.items():
                    if source not in res:
                        cells.append("-")
                        continue
                    (cpu_med, cpu_min), (wall_med, wall_min) = ratios(res[source], "cpu"), ratios(res[source], "wall")
                    if version == "after" and not named:  # class names: a figure without a target
                        worst = max(worst, cpu_med)
                        record(f"tabulate / anchor, {rows:,} rows, {strata:,} strata, {source}", cpu_med, 1.2)
                    anchor_cpu = statistics.median(res[source]["anchor"]["cpu"])
                    print(
                        f"{source:<14} {version:<7} {anchor_cpu:12.3f} {cpu_med:8.2f} ({cpu_min:4.2f}) "
                        f"{wall_med:8.2f} ({wall_min:4.2f})  {'-' if named else '<= 1.2'}"
                    )
                    cells.append(f"{cpu_med:.2f}x ({cpu_min:.2f}x)")
                anchor_s = statistics.median(results["after"][source]["anchor"]["cpu"])
                labels = '"cat"/"dog"' if named else "0/1"
                rows_md.append(
                    f"| {rows:,} | {strata:,} | {labels} | {source} | {ANCHORS[source]} | {anchor_s:.3f} | "
                    f"{' | '.join(cells)} |"
                )
    print(f"\nworst CPU-time ratio (medians) after: {worst:.2f} (target <= 1.2)")
    if args.write:
        versions_head = " | ".join(f"tabulate / anchor, {v}" for v in versions)
        lines = [
            "## Counting by stratum",
            "",
            '`tabulate` of 0/1 labels (int8), and of class names "cat"/"dog" with `pos_label="cat"`, '
            "for recall by a string stratum column, against the group-by "
            "a user writes in the same engine, timed in the same process, interleaved: the ratio of the "
            f"median CPU times of {args.repeats} calls each (the ratio of the best calls in parentheses; "
            f"CPU time of the process, the engines' threads included; load average {load:.1f} on "
            f"{os.cpu_count()} cores). The anchor's median CPU seconds are given. Measured on "
            f"{time.strftime('%Y-%m-%d')} by "
            f"`python benchmarks/bench_count_strata.py --write{' --before DIR' if args.before else ''}`"
            + (f"; *before* is {args.before_note}." if args.before else "."),
            "",
            f"| rows | strata | labels | source | anchor | anchor CPU s | {versions_head} |",
            "|---:|---:|---|---|---|---:|" + "---:|" * len(versions),
            *rows_md,
            "",
            "Target: within 1.2x of the anchor, for the 0/1 labels (the class names are measured without a target).",
        ]
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text("\n".join(lines) + "\n")
        print(f"wrote {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
