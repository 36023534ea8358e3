"""A campaign on a finite pool: labels and coverage at stop with ``population="pool"`` against ``"process"``.

The pool of ``benchmarks/pool_labels.py`` (12 strata of 100-600 rows at rates 0.05-0.5, seed 45),
as rows with a prediction and a true label (a row is an error when it is a success of the
stratum). :func:`bayeseval.campaign.simulate` replays the campaign (goal ``Each(0.05)``,
``guarantee="stratum"``, level 0.95, the default rule and batch size) with
``design=Design(population="pool")`` and with the default ``"process"``: labels used per
campaign, and each stratum's coverage of its pool rate at stop by the interval it reads (for
``"pool"``, :func:`bayeseval._kernels.finite_pool.pool_ci` at the stop level 0.965), with its
Monte Carlo standard error.

Run from the repository root (a ``"pool"`` campaign takes about 1-3 s, a ``"process"`` one
about 30 s; results go to ``benchmarks/results/pool_campaign_<population>_<seed>.csv``)::

    python benchmarks/pool_campaign.py --population pool --repeats 250 --seed 1
    python benchmarks/pool_campaign.py --population process --repeats 10 --seed 1
    python benchmarks/pool_campaign.py --summary
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pool_labels import LEVEL, TARGET, make_pool  # noqa: E402

from bayeseval import Design  # noqa: E402
from bayeseval.campaign import Each, simulate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
POOL_SEED = 45


def pool_rows(seed: int = POOL_SEED) -> pd.DataFrame:
    """The pool as rows: ``g`` (stratum), ``truth`` (always 1) and ``pred`` (0 on the stratum's successes)."""
    frames = []
    for rec in make_pool(seed).itertuples():
        err = np.zeros(rec.rows, np.int64)
        err[: rec.successes] = 1
        frames.append(pd.DataFrame({"g": rec.stratum, "truth": 1, "pred": 1 - err}))
    return pd.concat(frames, ignore_index=True)


def run(population: str, repeats: int, seed: int) -> pd.DataFrame:
    """Per-stratum results of ``repeats`` seeded campaigns (the simulation's ``intervals`` and labels)."""
    t0 = time.perf_counter()
    res = simulate(
        pool_rows(),
        strata="g",
        y_pred="pred",
        y_true="truth",
        goal=Each(TARGET),
        level=LEVEL,
        n_repeats=repeats,
        random_seed=seed,
        design=Design(population=population),
        progress=False,
    )
    out = res.intervals[["repeat", "stratum", "labelled", "lower", "upper", "true_rate", "covered", "read"]].copy()
    out["population"], out["seed"] = population, seed
    out["campaign_labels"] = out["repeat"].map(res.table.set_index("repeat")["labels_used"])
    out["reached_goal"] = out["repeat"].map(res.table.set_index("repeat")["reached_goal"])
    print(f"{population}: {repeats} campaigns in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def summary() -> str:
    """Labels per campaign and per-stratum coverage from every results file, as text."""
    files = sorted(RESULTS.glob("pool_campaign_*.csv"))
    frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    lines = []
    camp = frame.drop_duplicates(["population", "seed", "repeat"])
    labels = camp.groupby("population")["campaign_labels"].agg(["mean", "std", "count"])
    for pop, row in labels.iterrows():
        lines.append(f"{pop}: {row['count']:.0f} campaigns, labels {row['mean']:.0f} (sd {row['std']:.0f})")
    if {"pool", "process"} <= set(labels.index):
        lines.append(f"ratio pool / process: {labels.loc['pool', 'mean'] / labels.loc['process', 'mean']:.3f}")
    for pop, sub in frame.groupby("population"):
        cov = sub.groupby("stratum")["covered"].agg(["mean", "count"])
        se = np.sqrt(cov["mean"] * (1 - cov["mean"]) / cov["count"])
        worst = cov["mean"].idxmin()
        lines.append(
            f"{pop}: coverage of the pool rate at stop per stratum {cov['mean'].min():.4f} (worst, {worst}, "
            f"MC SE {se[worst]:.4f}) to {cov['mean'].max():.4f}; mean {sub['covered'].mean():.4f}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", choices=("pool", "process"), default="pool")
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--summary", action="store_true", help="summarise every results file and exit")
    args = ap.parse_args()
    if args.summary:
        print(summary())
        return
    out = run(args.population, args.repeats, args.seed)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.to_csv(RESULTS / f"pool_campaign_{args.population}_{args.seed}.csv", index=False)


if __name__ == "__main__":
    main()
