"""Scaling study: how bayeseval's main calls grow with rows and strata; writes docs/scaling.md.

Every call goes through the public API, one size after another in this process:

* counting: ``bayeseval.tabulate`` of an in-memory pandas frame for recall, 1e5 to 1e7 rows
  (1e8 with ``--full``; 100 groups), beside a hand-written pandas filter-then-groupby and a
  hand-written DuckDB query over the same frame (the anchors the page's ratios use);
* strata, 10 to 100,000: the exact hierarchical fit (``fit_hierarchical``), its
  ``Posterior.summary()``, a report (``evaluate`` on the counts), and a labelling campaign
  (``Campaign.create`` on a pool of 20 rows per stratum, one ``propose`` round of 100 labels,
  ``status``).

With ``--quick`` (or ``--targets``) it also runs the scripts of ``targets.QUICK``, each checking the
speed targets it measures against the anchor timed in the same run, and puts their table of targets
at the top of the page (``--targets`` runs only those, keeping the rest of the page as it was).

Each point is the best of up to three calls (fewer when a call takes over 0.3 s), after one
untimed warm-up call at the smallest size. A curve stops once the next size is predicted to
take longer than ``--budget`` seconds (default 60; the prediction extrapolates the last point
with the curve's slope so far, at least 1), so the default run stays within a few minutes on a
2-core machine whatever the current speed; skipped points are listed on the page. The slope
of each curve is the least-squares slope of log(time) on log(size): 1 is linear.

Usage::

    .venv/bin/python benchmarks/run_all.py                # writes docs/scaling.md (rows <= 1e7)
    .venv/bin/python benchmarks/run_all.py --full         # rows up to 1e8
    .venv/bin/python benchmarks/run_all.py --quick        # rows <= 1e6, strata <= 1,000, and every target
    .venv/bin/python benchmarks/run_all.py --scripts      # instead: run every bench_*.py script
    .venv/bin/python benchmarks/run_all.py --scripts import memory   # a selection of them
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

ROWS = (10**5, 10**6, 10**7)
ROWS_FULL = ROWS + (10**8,)
STRATA = (10, 100, 1_000, 10_000, 100_000)


# -- the bench_*.py runner (``--scripts``) -------------------------------------------------------
def scripts(selected: list[str]) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if not selected:
        return found
    wanted = {s.removeprefix("bench_").removesuffix(".py") for s in selected}
    chosen = [p for p in found if p.stem.removeprefix("bench_") in wanted]
    missing = wanted - {p.stem.removeprefix("bench_") for p in chosen}
    if missing:
        raise SystemExit(f"no benchmark named {sorted(missing)}; present: {[p.stem for p in found]}")
    return chosen


def run_scripts(todo: list[Path], timeout: float) -> int:
    """Run each script in a fresh interpreter; print a summary of status and wall time."""
    results = []
    for path in todo:
        print(f"\n=== {path.name} " + "=" * max(0, 60 - len(path.name)), flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(path)], cwd=ROOT, timeout=timeout)
            status: Any = proc.returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
        results.append((path.name, status, time.perf_counter() - t0))
    print("\n=== summary " + "=" * 50)
    print(f"{'script':<28}{'status':>10}{'wall s':>10}")
    for name, status, secs in results:
        print(f"{name:<28}{str(status):>10}{secs:>10.1f}")
    return int(any(status != 0 for _, status, _ in results))


# -- measuring ----------------------------------------------------------------------------------
def slope(points: dict[int, float]) -> float:
    """Least-squares slope of log(seconds) on log(size); nan with fewer than two points."""
    xs = [math.log(n) for n in points]
    ys = [math.log(max(t, 1e-9)) for t in points.values()]
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


class Curve:
    """Seconds per size of one operation, with the budget rule that skips sizes."""

    def __init__(self, name: str, family: str, budget: float, anchor: bool = False) -> None:
        self.name, self.family, self.budget, self.anchor = name, family, budget, anchor
        self.points: dict[int, float] = {}
        self.skipped: dict[int, float] = {}

    def predict(self, n: int) -> float:
        """Predicted seconds at size ``n`` (0 before any point)."""
        if not self.points:
            return 0.0
        last = max(self.points)
        k = max(1.0, slope(self.points)) if len(self.points) > 1 else 1.0
        return self.points[last] * (n / last) ** k

    def wants(self, n: int) -> bool:
        """Whether size ``n`` fits in the budget (a skipped size skips every larger one)."""
        if self.skipped:
            self.skipped[n] = float("nan")
            return False
        guess = self.predict(n)
        if guess > self.budget:
            self.skipped[n] = guess
            return False
        return True

    def time(self, n: int, call: Callable[[], Any]) -> Any:
        """Best wall time of up to three calls of ``call`` (one when it takes over 0.3 s)."""
        best, result = math.inf, None
        for _ in range(3):
            gc.collect()
            t0 = time.perf_counter()
            result = call()
            best = min(best, time.perf_counter() - t0)
            if best > 0.3:
                break
        self.points[n] = best
        print(f"  {self.name:<44}{n:>12,}{best:>10.3f} s", flush=True)
        return result


# -- counting -----------------------------------------------------------------------------------
def make_frame(n_rows: int, seed: int = 0) -> Any:
    """``n_rows`` predictions in 100 groups: a label with 30% positives, 80% agreement."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    y_true = (rng.random(n_rows, dtype=np.float32) < 0.3).astype(np.int8)
    flip = rng.random(n_rows, dtype=np.float32) < 0.2
    y_pred = np.where(flip, 1 - y_true, y_true).astype(np.int8)
    group = rng.integers(0, 100, n_rows, dtype=np.int16)
    return pd.DataFrame({"y_true": y_true, "y_pred": y_pred, "group": group})


def counting(sizes: tuple[int, ...], budget: float) -> list[Curve]:
    import duckdb

    import bayeseval

    def ours(df: Any) -> Any:
        return bayeseval.tabulate(df, y_true="y_true", y_pred="y_pred", strata="group", metric="recall")

    def by_hand(df: Any) -> Any:  # recall: the positives, and how many of them were predicted
        return df.loc[df["y_true"] == 1].groupby("group")["y_pred"].agg(["sum", "size"])

    con = duckdb.connect()  # one connection, as a hand-written script would keep

    def sql(df: Any) -> Any:
        con.register("df", df)
        q = 'SELECT "group", sum(y_pred), count(*) FROM df WHERE y_true = 1 GROUP BY "group"'
        out = con.execute(q).fetchall()
        con.unregister("df")
        return out

    curves = [
        (Curve("tabulate (pandas frame, recall)", "rows", budget), ours),
        (Curve("hand-written pandas filter + groupby", "rows", budget, anchor=True), by_hand),
        (Curve("hand-written DuckDB SQL over the frame", "rows", budget, anchor=True), sql),
    ]
    warm = make_frame(1000)
    for _, call in curves:
        call(warm)
    print("counting (rows)")
    for n in sizes:
        todo = [(c, f) for c, f in curves if c.wants(n)]
        if not todo:
            continue
        df = make_frame(n)
        for curve, call in todo:
            curve.time(n, lambda f=call, d=df: f(d))
        del df
    con.close()
    return [c for c, _ in curves]


# -- strata -------------------------------------------------------------------------------------
def make_counts(k: int, seed: int = 0) -> Any:
    """``k`` strata with 20-200 trials and rates drawn from Beta(2, 20)."""
    import numpy as np

    from bayeseval import Counts

    rng = np.random.default_rng(seed)
    n = rng.integers(20, 201, k)
    s = rng.binomial(n, rng.beta(2, 20, k))
    return Counts.from_arrays(s, n, strata=[f"s{i:06d}" for i in range(k)])


def make_pool(k: int, seed: int = 0) -> Any:
    """A campaign pool: 20 unlabelled rows per stratum with a 0/1 prediction."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame({"g": np.repeat([f"s{i:06d}" for i in range(k)], 20), "pred": rng.integers(0, 2, 20 * k)})


def strata_models(sizes: tuple[int, ...], budget: float) -> list[Curve]:
    import bayeseval

    fit = Curve("fit_hierarchical (exact, 1,000 draws)", "strata", budget)
    summary = Curve("Posterior.summary()", "strata", budget)
    report = Curve("evaluate (report from counts)", "strata", budget)
    warm = make_counts(sizes[0], seed=1)
    bayeseval.fit_hierarchical(warm, draws=1000, random_seed=0).summary()
    bayeseval.evaluate(warm, random_seed=0)
    print("fits and reports (strata)")
    for k in sizes:
        counts = make_counts(k)
        if fit.wants(k):
            post = fit.time(k, lambda c=counts: bayeseval.fit_hierarchical(c, draws=1000, random_seed=0))
            if summary.wants(k):
                summary.time(k, post.summary)
            del post
        else:
            summary.skipped.setdefault(k, float("nan"))
        if report.wants(k):
            report.time(k, lambda c=counts: bayeseval.evaluate(c, random_seed=0))
        gc.collect()
    return [fit, summary, report]


def strata_campaigns(sizes: tuple[int, ...], budget: float) -> list[Curve]:
    from bayeseval import Campaign
    from bayeseval.campaign import Budget

    create = Curve("Campaign.create (20 pool rows per stratum)", "strata", budget)
    propose = Curve("Campaign.propose (one round, 100 labels)", "strata", budget)
    status = Curve("Campaign.status()", "strata", budget)
    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(10**6))

        def new(pool: Any) -> Any:
            path = os.path.join(tmp, f"c{next(counter)}.db")
            return Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, budget=Budget(batch_size=100))

        warm = new(make_pool(sizes[0], seed=1))
        warm.propose()
        warm.status()
        warm.close()
        print("labelling campaigns (strata)")
        for k in sizes:
            if not create.wants(k):
                propose.skipped.setdefault(k, float("nan"))
                status.skipped.setdefault(k, float("nan"))
                continue
            pool = make_pool(k)
            campaigns: list[Any] = []
            create.time(k, lambda p=pool, made=campaigns: made.append(new(p)))
            for c in campaigns[1:]:
                c.close()
            camp = campaigns[0]
            if propose.wants(k):
                propose.time(k, lambda c=camp: c.propose())
            if status.wants(k):
                status.time(k, camp.status)
            camp.close()
    return [create, propose, status]


# -- the page -----------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.0f} GB"
    except OSError:
        pass
    return "unknown"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "bayeseval"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def header(command: str, load: tuple[float, float, float]) -> list[str]:
    import duckdb
    import numpy
    import pandas
    import scipy

    import bayeseval

    versions = (
        f"Python {platform.python_version()}, bayeseval {bayeseval.__version__} (commit "
        f"{_commit()}), NumPy {numpy.__version__}, pandas {pandas.__version__}, SciPy "
        f"{scipy.__version__}, DuckDB {duckdb.__version__}"
    )
    return [
        "# Scaling",
        "",
        "How long the main calls take as the data grow: rows for counting, strata for fits, "
        "reports and labelling campaigns. Each figure is the best of up to three calls through "
        "the public API, in seconds of wall time. The **slope** is the least-squares slope of "
        "log(time) on log(size) over the measured sizes: 1 means the time grows in proportion "
        "to the size, 2 quadratically; fixed overheads at the smallest sizes pull it below 1, "
        "so the slope over the largest three sizes is shown too.",
        "",
        f"Generated by `{command}` on {dt.date.today().isoformat()}.",
        "",
        f"- Machine: {_cpu_model()}, {os.cpu_count()} logical cores, {_memory_gb()} RAM, "
        f"{platform.system()} {platform.release()}; load average at the start "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min).",
        f"- Versions: {versions}.",
        "",
    ]


def _cell(curve: Curve, n: int) -> str:
    if n in curve.points:
        t = curve.points[n]
        return f"{t:.3f}" if t < 10 else f"{t:.1f}"
    if n in curve.skipped:
        return "skipped"
    return ""


def _slopes(curve: Curve) -> tuple[str, str]:
    pts = curve.points
    tail = dict(sorted(pts.items())[-3:])
    fmt = lambda x: "" if math.isnan(x) else f"{x:.2f}"  # noqa: E731
    return fmt(slope(pts)), fmt(slope(tail)) if len(pts) > 3 else fmt(slope(pts))


def table(curves: list[Curve], sizes: tuple[int, ...], what: str) -> list[str]:
    heads = [f"{n:,}" if n < 10**5 or what == "strata" else f"1e{round(math.log10(n))}" for n in sizes]
    lines = [f"| {what} | " + " | ".join(heads) + " | slope | slope, largest 3 |", "|---|" + "---:|" * (len(sizes) + 2)]
    for c in curves:
        name = f"*{c.name}*" if c.anchor else c.name
        lines.append(f"| {name} | " + " | ".join(_cell(c, n) for n in sizes) + " | " + " | ".join(_slopes(c)) + " |")
    return lines


def ratios(curves: list[Curve], sizes: tuple[int, ...]) -> list[str]:
    ours, *anchors = curves
    lines = [
        "| tabulate / anchor | " + " | ".join(f"1e{round(math.log10(n))}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for a in anchors:
        cells = [f"{ours.points[n] / a.points[n]:.1f}x" if n in ours.points and n in a.points else "" for n in sizes]
        lines.append(f"| {a.name} | " + " | ".join(cells) + " |")
    return lines


def skipped_notes(curves: list[Curve], budget: float) -> list[str]:
    notes = []
    for c in curves:
        for n, guess in sorted(c.skipped.items()):
            why = f"predicted {guess:.0f} s" if not math.isnan(guess) else "a smaller size was skipped"
            notes.append(f"- {c.name} at {n:,}: {why} (budget {budget:g} s per call).")
    return ["", "Skipped sizes:", "", *notes] if notes else []


def targets_section(records: list[dict[str, Any]], runs: list[str]) -> list[str]:
    """The page's table of speed targets, from the records of the scripts ``targets.QUICK`` runs."""
    from targets import targets_table

    if not records:
        return []
    met = sum(r["met"] for r in records)
    lines = [
        "## Targets",
        "",
        f"Each figure against its target, measured by the bench scripts in this run ({met} of {len(records)} met); "
        "ratios compare CPU or wall time with the anchor timed in the same process.",
        "",
        *targets_table(records),
        "",
        "Scripts run:",
        "",
        *[f"- {r}" for r in runs],
        "",
    ]
    return lines


def page(
    command: str,
    load: Any,
    rows: tuple[int, ...],
    strata: tuple[int, ...],
    counted: list[Curve],
    by_strata: list[Curve],
    budget: float,
    targets: list[str] | None = None,
) -> str:
    lines = header(command, load)
    if "--quick" in command:
        lines += [
            "!!! note",
            "    The curves below are a run at small sizes: `python benchmarks/run_all.py` measures them up to "
            "1e7 rows and 100,000 strata.",
            "",
        ]
    lines += targets or []
    lines += [
        "## Counting rows",
        "",
        "`tabulate` of an in-memory pandas frame (int8 label and prediction, 100 groups) "
        "for recall, against two hand-written anchors (in italics) over the same frame.",
        "",
    ]
    lines += table(counted, rows, "rows") + [""] + ratios(counted, rows)
    by_stratum = ROOT / "benchmarks" / "results" / "count_strata.md"
    if by_stratum.exists():  # written by bench_count_strata.py --write
        lines += ["", *by_stratum.read_text().rstrip("\n").splitlines()]
    lines += [
        "",
        "## Fits, reports and labelling campaigns",
        "",
        "Counts of 20-200 trials per stratum; the campaign pool has 20 rows per stratum "
        "and proposes 100 labels per round.",
        "",
    ]
    lines += table(by_strata, strata, "strata")
    lines += skipped_notes(counted + by_strata, budget)
    lines += [
        "",
        "Rerun after a change with `python benchmarks/run_all.py`; `--budget` sets the seconds allowed "
        "per call, `--full` adds 1e8 rows (about 0.4 GB of frame).",
    ]
    for name in ("large_trials", "campaign_round"):  # written by bench_large_trials.py, bench_campaign_round.py
        part = ROOT / "benchmarks" / "results" / f"{name}.md"
        if part.exists():
            lines += ["", *part.read_text().rstrip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="count up to 1e8 rows (default 1e7)")
    ap.add_argument("--quick", action="store_true", help="rows <= 1e6, strata <= 1,000, and every target")
    ap.add_argument("--targets", action="store_true", help="only the targets, the rest of the page kept")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds allowed per call (default 60)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "scaling.md", help="page to write")
    ap.add_argument(
        "--scripts",
        nargs="*",
        metavar="NAME",
        help="run bench_*.py scripts instead (all, or the names given, e.g. import memory)",
    )
    ap.add_argument("--list", action="store_true", help="list the bench_*.py scripts and exit")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per script (--scripts)")
    args = ap.parse_args()
    if args.list:
        print("\n".join(p.name for p in scripts([])))
        return 0
    if args.scripts is not None:
        return run_scripts(scripts(args.scripts), args.timeout)
    rows = ROWS_FULL if args.full else ROWS
    strata = STRATA
    if args.quick:
        rows, strata = tuple(n for n in rows if n <= 10**6), tuple(k for k in strata if k <= 1_000)
    command = "python benchmarks/run_all.py" + " --full" * args.full + " --quick" * args.quick
    if args.budget != 60.0:
        command += f" --budget {args.budget:g}"
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    warnings.simplefilter("ignore")  # convergence and precision notes are not what is timed here
    t0 = time.perf_counter()
    if args.targets:
        return _targets_only(args.out)
    counted = counting(rows, args.budget)
    by_strata = strata_models(strata, args.budget) + strata_campaigns(strata, args.budget)
    found = _run_targets() if args.quick else []
    args.out.write_text(page(command, load, rows, strata, counted, by_strata, args.budget, found))
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f} s")
    return 0


def _run_targets() -> list[str]:
    from targets import run_quick

    records, runs = run_quick()
    return targets_section(records, runs)


def _targets_only(out: Path) -> int:
    """``--targets``: run the targets and replace the page's table of targets, the rest kept."""
    text = out.read_text() if out.exists() else "# Scaling\n"
    lines = text.rstrip("\n").splitlines()
    start = next((i for i, ln in enumerate(lines) if ln == "## Targets"), None)
    if start is not None:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        del lines[start:end]
    at = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), len(lines))
    lines[at:at] = _run_targets()
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote the targets of {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
