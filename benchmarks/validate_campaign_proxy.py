"""Labels to target and coverage at stop per stratum: labels only, uniform with a proxy, proxy campaign.

A pool of 12 strata of 5,000 rows (60,000 rows), error rates 0.05 to 0.30, a label proxy (a
judge's label) whose agreement with the truth runs from 0.85 to 0.97 over eleven strata and is
0.60 in stratum ``s05`` (the poor proxy). Target half-width 0.05 at level 0.95, batches of
``--batch-size`` labels. Three designs, the same pool and seeds:

(a) ``labels``: the labels-only campaign with the stratum guarantee (``simulate``,
    ``expected_width``, ``guarantee="stratum"``).
(b) ``uniform``: labels at random within each stratum, each stratum stopping when its proxy
    interval (``proxy_ci``'s rule: Clopper-Pearson cells, at the guarantee's stop level)
    reaches the target, checked after every batch.
(c) ``proxy``: the proxy campaign (``simulate(..., proxy="judge")``: Neyman allocation across
    the proxy's cells within each stratum, strata stopping on their proxy intervals).

Coverage at stop is of the interval each stratum stops on; its Monte Carlo standard error is
``sqrt(c (1 - c) / repeats)``. Raw results go to ``benchmarks/results/campaign_proxy.csv``.

Run: ``nice -n 5 python benchmarks/validate_campaign_proxy.py [--repeats 20] [--batch-size 50]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval._kernels.proxy import proxy_interval
from bayeseval.campaign import Each
from bayeseval.campaign.guarantee import guarantee_stop_level
from bayeseval.campaign.simulation import simulate

N_STRATA, ROWS, POOR = 12, 5_000, 5
RATES = np.linspace(0.05, 0.30, N_STRATA)
AGREEMENT = np.insert(np.linspace(0.85, 0.97, N_STRATA - 1), POOR, 0.60)
TARGET, LEVEL = 0.05, 0.95
OUT = Path(__file__).parent / "results" / "campaign_proxy.csv"


def make_pool(seed: int = 0) -> pd.DataFrame:
    """The pool: predictions, true labels with each stratum's error rate, the judge's labels."""
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(N_STRATA):
        pred = rng.integers(0, 2, ROWS)
        truth = pred ^ (rng.random(ROWS) < RATES[k])
        judge = truth ^ (rng.random(ROWS) >= AGREEMENT[k])
        frames.append(pd.DataFrame({"stratum": f"s{k:02d}", "pred": pred, "truth": truth.astype(int),
                                    "judge": judge.astype(int)}))
    return pd.concat(frames, ignore_index=True)


def uniform_run(pool: pd.DataFrame, seed: int, batch: int) -> pd.DataFrame:
    """Design (b): random labels within each stratum until its proxy interval is narrow enough."""
    rng = np.random.default_rng(seed)
    level = guarantee_stop_level(LEVEL)
    rows = []
    for key, g in pool.groupby("stratum"):
        err = (g["pred"] != g["truth"]).to_numpy(int)
        cell = (g["judge"] != g["pred"]).to_numpy(int)
        shares = np.bincount(cell, minlength=2) / len(g)
        order = rng.permutation(len(g))
        n = 0
        while True:
            n = min(n + batch, len(g))
            idx = order[:n]
            s = np.bincount(cell[idx], weights=err[idx], minlength=2)
            t = np.bincount(cell[idx], minlength=2).astype(float)
            b = proxy_interval(s, t, shares, level, "clopper_pearson")
            if (b.upper - b.lower) / 2 <= TARGET or n == len(g):
                break
        true = err.mean()
        rows.append({"stratum": key, "labelled": n, "covered": bool(b.lower <= true <= b.upper)})
    return pd.DataFrame(rows)


def campaign_runs(pool: pd.DataFrame, repeats: int, batch: int, seed: int, proxy: str | None) -> pd.DataFrame:
    """Designs (a) and (c): per-stratum labels and coverage at stop of every repeat."""
    res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth", rules=["expected_width"],
                   n_repeats=repeats, goal=Each(TARGET), level=LEVEL, batch_size=batch,
                   guarantee="stratum", proxy=proxy, random_seed=seed, progress=False)
    return res.intervals[["repeat", "stratum", "labelled", "covered"]]


def run(repeats: int, batch: int, seed: int) -> pd.DataFrame:
    pool = make_pool(seed)
    out = []
    for design, proxy in (("labels", None), ("proxy", "judge")):
        t0 = time.perf_counter()
        out.append(campaign_runs(pool, repeats, batch, seed, proxy).assign(design=design))
        print(f"{design}: {time.perf_counter() - t0:.0f}s", flush=True)
    t0 = time.perf_counter()
    seeds = np.random.SeedSequence(seed).spawn(repeats)
    out.extend(uniform_run(pool, s, batch).assign(design="uniform", repeat=r) for r, s in enumerate(seeds))
    print(f"uniform: {time.perf_counter() - t0:.0f}s", flush=True)
    return pd.concat(out, ignore_index=True)


def summary(raw: pd.DataFrame) -> pd.DataFrame:
    """Per design: mean total labels, and per stratum mean labels and coverage with its MC SE."""
    reps = raw.groupby("design")["repeat"].nunique()
    per = raw.groupby(["design", "stratum"]).agg(labels=("labelled", "mean"), coverage=("covered", "mean"))
    per["mc_se"] = np.sqrt(per["coverage"] * (1 - per["coverage"]) / reps.reindex(
        per.index.get_level_values("design")).to_numpy())
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    raw = run(args.repeats, args.batch_size, args.seed)
    OUT.parent.mkdir(exist_ok=True)
    raw.to_csv(OUT, index=False)
    per = summary(raw)
    total = raw.groupby(["design", "repeat"])["labelled"].sum().groupby("design").agg(["mean", "std"])
    print(per.unstack("design").round(3).to_string())
    print(total.round(1).to_string())
    t = total["mean"]
    print(f"proxy/labels {t['proxy'] / t['labels']:.3f}  proxy/uniform {t['proxy'] / t['uniform']:.3f}")


if __name__ == "__main__":
    main()
