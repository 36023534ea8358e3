"""Benchmark: one campaign round against a hand-written pandas round doing the same work.

A round is ``propose()`` of 100 rows, ``ingest()`` of their labels and ``status()``, on a
campaign over a pool of 20 rows per stratum
(at least 24,000 rows, so that the rounds timed never exhaust 12 strata; a 0/1 prediction, labels wrong 10% of the time)
with the default settings: goal ``"each"`` under ``guarantee="stratum"``, so that every
round computes each stratum's guaranteed (adaptive) interval. The anchor is the same round
written by hand over a pandas frame of the pool: the 100 unlabelled rows drawn from the
strata whose guaranteed interval is widest (a random order within each stratum), their
labels set, the per-stratum labelled / trials / successes recounted by a group-by, and the
guaranteed interval (:func:`bayeseval._kernels.guarantee.guaranteed_bounds`, the interval
the campaign reads) computed once on the new counts.

Both run the same number of rounds from the same state (two warm-up rounds first); each
figure is the median seconds of a round, wall and CPU (the steadier figure on a shared machine). Also ``Campaign.create`` against pandas ``to_sql``
of the pool's stored columns into SQLite plus an index on the stratum column (the anchor a
hand-written campaign file would need), wall and CPU (target: within 1.2x at 100,000 strata).

Usage::

    python benchmarks/bench_campaign_round.py                 # 12, 1k, 10k, 100k strata
    python benchmarks/bench_campaign_round.py --sizes 12 1000 # a subset
    python benchmarks/bench_campaign_round.py --rounds 5      # rounds timed per size
"""

from __future__ import annotations

import argparse
import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typing import Any

import numpy as np
import pandas as pd
from targets import record  # noqa: E402

BATCH = 100
ROWS_PER_STRATUM = 20
POOL_ROWS = 24_000  # at least: the rounds timed never exhaust a small campaign's pool
ERROR_RATE = 0.1


def make_pool(k: int, seed: int = 0) -> pd.DataFrame:
    """``k`` strata of 20 rows (24,000 rows in all when that is more), a 0/1 prediction and the
    true label (hidden from the campaign)."""
    rng = np.random.default_rng(seed)
    per = max(ROWS_PER_STRATUM, POOL_ROWS // k)
    pred = rng.integers(0, 2, per * k)
    truth = np.where(rng.random(pred.size) < ERROR_RATE, 1 - pred, pred)
    return pd.DataFrame({"g": np.repeat([f"s{i:06d}" for i in range(k)], per), "pred": pred, "y": truth})


class HandRound:
    """The campaign's round written by hand over a pandas frame."""

    def __init__(self, pool: pd.DataFrame, seed: int = 0) -> None:
        from bayeseval._kernels.guarantee import guarantee_stop_level

        self.rng = np.random.default_rng(seed)
        self.frame = pool[["g", "pred", "y"]].copy()
        self.frame["order"] = self.rng.random(len(pool))
        self.frame["label"] = np.nan
        self.codes, self.strata = pd.factorize(self.frame["g"], sort=True)
        self.frame["code"] = self.codes
        self.level = guarantee_stop_level(0.95)
        self.status = self._recount()

    def _recount(self) -> pd.DataFrame:
        from bayeseval._kernels.guarantee import guaranteed_bounds

        f = self.frame
        done = f["label"].notna()
        lab = f[done]
        counts = pd.DataFrame(
            {
                "labelled": lab.groupby("code").size(),
                "successes": (lab["label"] == lab["pred"]).groupby(lab["code"]).sum(),
            }
        ).reindex(range(len(self.strata)), fill_value=0)
        counts["trials"] = counts["labelled"]
        counts["available"] = (~done).groupby(f["code"]).sum().to_numpy()
        lo, hi = guaranteed_bounds(counts["successes"].to_numpy(), counts["trials"].to_numpy(), self.level)
        counts["lower"], counts["upper"] = lo, hi
        counts["halfwidth"] = (hi - lo) / 2
        counts.index = self.strata
        return counts

    def round(self) -> pd.DataFrame:
        st = self.status
        width = np.where(st["available"].to_numpy() > 0, st["halfwidth"].to_numpy(), -1.0)
        open_ = np.flatnonzero(width >= 0)
        take = open_[np.argsort(-width[open_], kind="stable")][:BATCH]
        f = self.frame
        cand = f[f["label"].isna() & f["code"].isin(take)].sort_values(["code", "order"])
        per = max(1, BATCH // max(len(take), 1))
        rows = cand.groupby("code").head(per).index[:BATCH]
        f.loc[rows, "label"] = f.loc[rows, "y"]
        self.status = self._recount()
        return self.status


def campaign_round(camp: Any, pool: pd.DataFrame) -> pd.DataFrame:
    batch = camp.propose()
    if len(batch):
        camp.ingest(pool.loc[batch.index, "y"])
    return camp.status()


def median_round(call: Any, rounds: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``rounds`` calls."""
    wall, cpu = [], []
    for _ in range(rounds):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def to_sql_anchor(pool: pd.DataFrame, path: str) -> tuple[float, float]:
    """Wall and CPU seconds of writing the pool's stored columns and an index with pandas ``to_sql``."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    con = sqlite3.connect(path)
    pool[["g", "pred"]].rename_axis("rid").to_sql("pool", con, index=True)
    con.execute("CREATE INDEX pool_g ON pool (g)")
    con.commit()
    con.close()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import bayeseval
    from bayeseval import Campaign
    from bayeseval.campaign import Budget

    print(f"bayeseval from {Path(bayeseval.__file__).parent}")
    warnings.simplefilter("ignore")
    header = (
        f"{'strata':>8}{'create s':>10}{'to_sql s':>10}{'ratio':>7}{'cpu ratio':>10}{'round s':>10}{'by hand s':>10}"
        f"{'ratio':>7}{'round cpu':>10}{'hand cpu':>10}{'ratio':>7}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        warm = make_pool(12, seed=1)
        c = Campaign.create(
            os.path.join(tmp, "warm.db"), warm, strata="g", y_pred="pred", budget=Budget(batch_size=BATCH)
        )
        campaign_round(c, warm)
        c.close()
        HandRound(warm).round()
        for k in args.sizes:
            pool = make_pool(k)
            stored = pool[["g", "pred"]]
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            camp = Campaign.create(
                os.path.join(tmp, f"c{k}.db"),
                stored,
                strata="g",
                y_pred="pred",
                random_seed=0,
                budget=Budget(batch_size=BATCH),
            )
            create, create_cpu = time.perf_counter() - t0, time.process_time() - c0
            anchor, anchor_cpu = to_sql_anchor(pool, os.path.join(tmp, f"a{k}.db"))
            hand = HandRound(pool)
            for _ in range(2):  # warm-up rounds: a running campaign
                campaign_round(camp, pool)
                hand.round()
            ours, ours_cpu = median_round(lambda c=camp, p=pool: campaign_round(c, p), args.rounds)
            theirs, theirs_cpu = median_round(hand.round, args.rounds)
            camp.close()
            print(
                f"{k:>8,}{create:>10.3f}{anchor:>10.3f}{create / anchor:>7.2f}{create_cpu / anchor_cpu:>10.2f}"
                f"{ours:>10.4f}{theirs:>10.4f}{ours / theirs:>7.2f}"
                f"{ours_cpu:>10.4f}{theirs_cpu:>10.4f}{ours_cpu / theirs_cpu:>7.2f}",
                flush=True,
            )
            record(f"campaign round / hand-written round, {k:,} strata", ours_cpu / theirs_cpu, 3.0, note="CPU")
            if k >= 100_000:
                record(f"Campaign.create / to_sql, {k:,} strata", create_cpu / anchor_cpu, 1.2, note="CPU")


if __name__ == "__main__":
    main()
