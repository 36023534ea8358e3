"""A finite pool of units: the interval for the pool's own rate, and campaigns that sample whole units.

Part 1 (``--widths``): one stratum of a pool holds ``N`` units (items of 1-5 rows, uniform);
each unit's rows share an item error rate drawn from ``Beta(2 mu, 2 (1 - mu))`` (within-unit
correlation 1/3) and its successes are binomial given it. The estimand is the pool's own
row-level rate, successes summed over all ``N`` units over their rows. A simple random sample
of ``n = f N`` units (without replacement) is labelled, for sampling fractions ``f`` from 0.1
to 1.0. Side by side on the same seeded datasets (a new pool per dataset), at level 0.95:

``pool``: :func:`bayeseval._kernels.finite_pool.pool_units_ci` (the betting interval for
sampling without replacement, with the pool's units, rows and largest unit known);
``process``: :func:`bayeseval._kernels.bounded_mean.units_ci` of the same units (the
``"process"`` units interval, for the rate of the process that made the pool).

Coverage of the pool rate by each (MC SE ``sqrt(c (1 - c) / datasets)``), mean width and the
width ratio ``pool / process``.

Part 2 (``--campaign``): a pool of 12 strata of 20-120 units (evenly spaced) of 1-5 rows, item
error rates as above with stratum rates 0.05-0.5 (evenly spaced; seed 0), replayed by
:func:`bayeseval.campaign.simulate` with ``design=Design(cluster="item", population=...)``, goal
``Each(0.05)``, ``guarantee="stratum"``, level 0.95, batch size 10: labels per campaign and each
stratum's coverage of its pool rate at stop (one pool, the campaigns' unit orders seeded).

Run from the repository root (one process)::

    python benchmarks/pool_units.py --widths --datasets 500      # about 2 min
    python benchmarks/pool_units.py --campaign --repeats 100    # about 6 min

Results go to ``benchmarks/results/pool_units_widths.csv`` and ``pool_units_campaign.csv``
(the campaign file as written by the run for docs/validation.md: 100 ``"pool"`` campaigns and
3 ``"process"`` ones, which label every unit of the pool whatever the seed).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval import Design
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval._kernels.finite_pool import pool_units_ci
from bayeseval.campaign import Budget, Each, simulate

RESULTS = Path(__file__).resolve().parent / "results"
LEVEL = 0.95
FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CONCENTRATION = 2.0


def draw_pools(n_pool: int, rate: float, datasets: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``datasets`` pools of ``n_pool`` units: successes and rows per unit, arrays (datasets, n_pool)."""
    rng = np.random.default_rng(seed)
    b = rng.integers(1, 6, (datasets, n_pool))
    p = rng.beta(CONCENTRATION * rate, CONCENTRATION * (1 - rate), (datasets, n_pool))
    a = rng.binomial(b, p).astype(float)
    return a, b


def width_table(datasets: int, sizes: tuple[int, ...] = (50, 200), rates: tuple[float, ...] = (0.05, 0.2, 0.5)):
    """Coverage and width of the pool and process units intervals per pool size, rate and sampling fraction."""
    out = []
    for n_pool in sizes:
        for rate in rates:
            a, b = draw_pools(n_pool, rate, datasets, seed=int(1000 * rate) + n_pool)
            truth = a.sum(axis=1) / b.sum(axis=1)
            rng = np.random.default_rng(7)
            order = np.argsort(rng.random(a.shape), axis=1)  # each pool's units in a random order
            for f in FRACTIONS:
                n = max(1, round(f * n_pool))
                pick = order[:, :n]
                sa, sb = np.take_along_axis(a, pick, 1), np.take_along_axis(b, pick, 1)
                table = pd.DataFrame(
                    {
                        "d": np.repeat(np.arange(datasets), n),
                        "unit_successes": sa.ravel(),
                        "unit_trials": sb.ravel(),
                        "units": 1,
                    }
                )
                pool = pd.DataFrame(
                    {"pool_units": n_pool, "pool_trials": b.sum(axis=1), "pool_largest": b.max(axis=1)},
                    index=pd.Index(np.arange(datasets), name="d"),
                )
                t0 = time.perf_counter()
                wor = pool_units_ci(table, "d", pool, LEVEL)
                t1 = time.perf_counter()
                proc = units_ci(table, "d", LEVEL)
                row = {"units": n_pool, "rate": rate, "fraction": f, "n": n, "datasets": datasets}
                for name, ci in (("pool", wor), ("process", proc)):
                    lo, hi = ci["lower"].to_numpy(), ci["upper"].to_numpy()
                    row[f"{name}_coverage"] = float(np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12)))
                    row[f"{name}_width"] = float(np.mean(hi - lo))
                row["ratio"] = row["pool_width"] / row["process_width"]
                row["seconds"] = t1 - t0
                out.append(row)
                print(
                    f"N={n_pool} rate={rate} f={f}: pool {row['pool_coverage']:.4f} {row['pool_width']:.4f}  "
                    f"process {row['process_coverage']:.4f} {row['process_width']:.4f}  ratio {row['ratio']:.3f}  "
                    f"({row['seconds']:.1f} s)",
                    flush=True,
                )
    return pd.DataFrame(out)


def campaign_pool(seed: int = 0, n_strata: int = 12) -> pd.DataFrame:
    """The campaign pool as rows: ``g``, ``item``, ``truth`` (1) and ``pred`` (0 on an error)."""
    rng = np.random.default_rng(seed)
    rates = np.linspace(0.05, 0.5, n_strata)
    n_units = np.linspace(20, 120, n_strata).round().astype(int)
    rows = []
    for j in range(n_strata):
        g = f"s{j:02d}"
        for i in range(n_units[j]):
            p = rng.beta(CONCENTRATION * rates[j], CONCENTRATION * (1 - rates[j]))
            for _ in range(rng.integers(1, 6)):
                rows.append((g, f"{g}u{i}", 1, int(rng.random() >= p)))
    return pd.DataFrame(rows, columns=["g", "item", "truth", "pred"])


def campaigns(repeats: int, seed: int = 1) -> pd.DataFrame:
    """Per stratum: labels at stop and coverage of the pool rate, with population "pool" and "process"."""
    frame = campaign_pool()
    out = []
    for population, runs in (("pool", repeats), ("process", min(repeats, 3))):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = simulate(
                frame,
                strata="g",
                y_pred="pred",
                y_true="truth",
                design=Design(cluster="item", population=population),
                goal=Each(0.05),
                level=LEVEL,
                n_repeats=runs,
                random_seed=seed,
                progress=False,
                budget=Budget(batch_size=10),
            )
        iv = res.intervals
        per = iv.groupby("stratum").agg(
            rows=("labelled", "size"),
            labelled=("labelled", "mean"),
            covered=("covered", "mean"),
            rate=("true_rate", "first"),
        )
        per["population"] = population
        per["campaign_labels"] = res.table["labels_used"].mean()
        per["campaign_units"] = res.table["units_used"].mean()
        per["reached_goal"] = res.table["reached_goal"].mean()
        out.append(per.reset_index())
        print(
            f"{population}: {runs} campaigns in {time.perf_counter() - t0:.0f} s, labels "
            f"{res.table['labels_used'].mean():.0f}, units {res.table['units_used'].mean():.0f}, reached "
            f"{res.table['reached_goal'].mean():.2f}, lowest coverage {per['covered'].min():.4f}",
            flush=True,
        )
    return pd.concat(out, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", action="store_true")
    parser.add_argument("--campaign", action="store_true")
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args()
    if args.widths:
        table = width_table(args.datasets)
        table.to_csv(RESULTS / "pool_units_widths.csv")
        print(table.round(4).to_string(index=False))
    if args.campaign:
        table = campaigns(args.repeats)
        table.to_csv(RESULTS / "pool_units_campaign.csv")
        print(table.round(4).to_string(index=False))


if __name__ == "__main__":
    main()
