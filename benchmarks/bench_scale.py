"""Benchmark: campaigns, ``evaluate`` and exact summaries against the number of strata.

Prints, per number of strata (10, 100, 1,000, 10,000, 100,000), the wall time and the
process CPU time (the machine may be shared: CPU time is the steadier figure) of

- ``create``: ``Campaign.create`` of a pool with 20 rows per stratum (error rate, target
  half-width 0.2, batch size = number of strata);
- ``propose``: the first ``propose()`` (fit, intervals, allocation, rows);
- ``status``: ``status()`` after ingesting the proposed labels (10% errors);
- ``propose2``: the second ``propose()`` (a round of a running campaign);
- ``evaluate``: ``bayeseval.evaluate`` of ready-made counts (exact engine, all checks);
- ``summary``: ``Posterior.summary()`` of an exact-engine fit (exact means, mixture
  quantiles, shrinkage; the interval to read is left out, as by default);

- ``rats``: the exact engine's fit plus ``summary()`` on the 71 rat tumour strata (Gelman et
  al., *Bayesian Data Analysis*, 3rd ed., Table 5.1; median of 5) against the PyMC engine's
  fit (NUTS, ``draws=1000`` in total: 2 chains x 500 draws after 1,000 tuning steps each,
  one core) on the same data: its first call in the process (``cold``: model compilation
  included) and a second call (``warm``: compiled model); both ratios are printed
  (``--no-pymc`` skips it);

the counts for ``evaluate`` and ``summary`` are simulated as in ``bench_exact.py``
(trials log-uniform in [10, 2000], rates Beta(2, 30)). Then the slope of each curve (least
squares on log time against log strata, sizes from 1,000 up) and the ratio of each measured
time to its target (issue targets; below 1 meets it):

=========================  ==================  ========
target                     strata              seconds
=========================  ==================  ========
propose + status, a round  10,000              1
create + propose           100,000             30
evaluate                   20,000              10
exact summary              10,000              0.5
PyMC fit / exact fit+summ  71 (rats)           >= 300x
=========================  ==================  ========

An anchor measured in the same run (``anchor``: sorting 4,000,000 random floats with
numpy, best of 3) shows how fast the machine is at the time, and each target time is also
given in anchor units (time / anchor), comparable between runs on different machines.

``evaluate`` and ``summary`` at 100,000 strata hold several arrays of (draws or grid points)
x strata (gigabytes); they run only with ``--full``. ``evaluate`` runs at 20,000 strata
(its target) unless ``--quick``.

Usage::

    .venv/bin/python benchmarks/bench_scale.py            # up to 100,000 strata (campaigns)
    .venv/bin/python benchmarks/bench_scale.py --quick    # up to 10,000 strata, no 20,000
    .venv/bin/python benchmarks/bench_scale.py --full     # evaluate and summary at 100,000 too
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
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engines import RAT_N, RAT_Y  # noqa: E402
from bench_exact import simulated  # noqa: E402

from bayeseval.campaign import Budget, Each

TARGETS = [  # (label, columns summed, strata, seconds)
    ("propose + status, a round", ("propose2", "status"), 10_000, 1.0),
    ("create + propose", ("create", "propose"), 100_000, 30.0),
    ("evaluate", ("evaluate",), 20_000, 10.0),
    ("exact summary", ("summary",), 10_000, 0.5),
]


def timed(fn):
    """(result, wall seconds, CPU seconds) of ``fn()``."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def anchor() -> float:
    x = np.random.default_rng(0).random(4_000_000)
    return min(timed(lambda: np.sort(x))[1] for _ in range(3))


def campaign_times(k: int, rows_per: int = 20) -> dict:
    from bayeseval.campaign.campaign import Campaign

    rng = np.random.default_rng(0)
    n = k * rows_per
    pool = pd.DataFrame({"stratum": np.repeat(np.arange(k), rows_per), "pred": rng.integers(0, 2, n)})
    truth = np.where(rng.random(n) < 0.1, 1 - pool["pred"].to_numpy(), pool["pred"].to_numpy())
    out = {}
    with tempfile.TemporaryDirectory() as d:
        camp, *out["create"] = timed(
            lambda: Campaign.create(
                os.path.join(d, "c.db"),
                pool,
                strata="stratum",
                y_pred="pred",
                goal=Each(0.2),
                random_seed=0,
                budget=Budget(batch_size=k),
            )
        )
        batch, *out["propose"] = timed(camp.propose)
        camp.ingest(pd.Series(truth[batch.index.to_numpy()], index=batch.index))
        _, *out["status"] = timed(camp.status)
        _, *out["propose2"] = timed(camp.propose)
        camp.close()
    return out


def evaluate_time(k: int) -> tuple:
    from bayeseval import evaluate

    counts = simulated(k)
    return tuple(timed(lambda: evaluate(counts, random_seed=0))[1:])


def summary_time(k: int) -> tuple:
    from bayeseval.models import fit_hierarchical

    post = fit_hierarchical(simulated(k), engine="exact", random_seed=0)
    return tuple(timed(post.summary)[1:])


def rats_times(with_pymc: bool) -> dict:
    """Exact fit + summary (median of 5) and PyMC fit (first call, warm call) on the rat data."""
    from bayeseval import Counts
    from bayeseval.models import fit_hierarchical

    counts = Counts.from_arrays(RAT_Y, RAT_N, strata=[f"rat_{i:02d}" for i in range(71)])
    fit_hierarchical(counts, engine="exact", random_seed=1).summary()  # first call: imports
    runs = [timed(lambda: fit_hierarchical(counts, engine="exact", random_seed=1).summary())[1:] for _ in range(5)]
    out = {"exact": tuple(float(np.median([r[i] for r in runs])) for i in (0, 1))}
    if with_pymc:

        def pymc():
            return fit_hierarchical(counts, engine="pymc", draws=1000, chains=2, tune=1000, cores=1, random_seed=1)

        out["pymc cold"] = timed(pymc)[1:]
        out["pymc warm"] = timed(pymc)[1:]
    return out


def slope(sizes: list, times: list) -> float:
    pts = [(s, t) for s, t in zip(sizes, times, strict=True) if s >= 1_000 and t and t > 0]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="up to 10,000 strata")
    ap.add_argument("--full", action="store_true", help="evaluate and summary at 100,000 strata too")
    ap.add_argument("--no-pymc", action="store_true", help="skip the PyMC fit of the rat data")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    sizes = [10, 100, 1_000, 10_000] + ([] if args.quick else [20_000, 100_000])
    heavy_max = 100_000 if args.full else 20_000
    a0 = anchor()
    print(f"anchor (numpy sort of 4e6 floats, best of 3): {a0:.4f} s\n")
    cols = ["create", "propose", "status", "propose2", "evaluate", "summary"]
    wall = {c: [] for c in cols}
    cpu = {c: [] for c in cols}
    print(f"{'strata':>8}" + "".join(f"{c + ' s':>14}" for c in cols) + "   (wall / cpu)")
    for k in sizes:
        row = campaign_times(k) if k != 20_000 else {}
        if k <= heavy_max:
            row["evaluate"] = evaluate_time(k)
            row["summary"] = summary_time(k)
        for c in cols:
            v = row.get(c)
            wall[c].append(v[0] if v else None)
            cpu[c].append(v[1] if v else None)
        cells = "".join(f"{(f'{row[c][0]:.3f}/{row[c][1]:.3f}' if row.get(c) else '-'):>14}" for c in cols)
        print(f"{k:>8,}{cells}", flush=True)
    print("\nslope of log time against log strata (sizes >= 1,000; 1 = linear), wall / cpu")
    for c in cols:
        print(f"  {c:<10}{slope(sizes, wall[c]):>7.2f} /{slope(sizes, cpu[c]):>6.2f}")
    print("\nratio to target (measured / target; < 1 meets it), wall and cpu; wall in anchor units")
    for label, parts, k, target in TARGETS:
        if k not in sizes or any(wall[p][sizes.index(k)] is None for p in parts):
            print(f"  {label:<28}{k:>8,} strata: not measured")
            continue
        w = sum(wall[p][sizes.index(k)] for p in parts)
        c = sum(cpu[p][sizes.index(k)] for p in parts)
        print(
            f"  {label:<28}{k:>8,} strata: {w:8.3f} s wall ({w / target:6.2f}x), "
            f"{c:8.3f} s cpu ({c / target:6.2f}x), {w / a0:8.0f} anchors"
        )
    rats = rats_times(not args.no_pymc)
    print("\nrat tumours, 71 strata (wall / cpu s)")
    for name, (w, c) in rats.items():
        print(f"  {name:<12}{w:10.4f} /{c:10.4f}")
    for name in ("pymc cold", "pymc warm"):
        if name in rats:
            (ew, ec), (pw, pc) = rats["exact"], rats[name]
            print(f"  {name} fit / exact fit + summary: wall {pw / ew:,.0f}x, cpu {pc / ec:,.0f}x (target >= 300x)")


if __name__ == "__main__":
    main()
