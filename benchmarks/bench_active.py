"""Benchmark of the active loop (issue 4).

1. Time of one proposal step with 50 strata (fresh posterior fit + intervals + allocation).
2. Rule comparison on a generated pool with 12 strata of very unequal sizes (largest 100x the
   smallest) and error rates: labels needed to bring every stratum's 95% credible interval to
   a half-width of 0.05, and coverage of the true rates at stop.
3. Wall time of a simulated campaign of about 10,000 labels over 50 strata.

Run: ``.venv/bin/python benchmarks/bench_active.py [--quick]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from bayeseval.active.rules import RuleState, expected_width, independent_beta, thompson
from bayeseval.active.simulate import simulate, synthetic_pool


def bench_step(n_strata: int = 50, reps: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rates = rng.beta(4, 28, n_strata)
    n = rng.integers(5, 300, n_strata)
    s = rng.binomial(n, rates)
    rows = []
    for name, rule in [("expected_width", expected_width), ("thompson", thompson), ("independent_beta", independent_beta)]:
        times, cpu = [], []
        for i in range(reps):
            st = RuleState.from_counts(s, n, available=np.full(n_strata, 10_000),
                                       model="independent" if name == "independent_beta" else "auto")
            t0, c0 = time.perf_counter(), time.process_time()
            rule(st, 50, np.random.default_rng(i))
            st.is_done()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        rows.append({"rule": name, "strata": n_strata, "median_ms": 1e3 * np.median(times),
                     "p90_ms": 1e3 * np.quantile(times, 0.9), "median_cpu_ms": 1e3 * np.median(cpu)})
    return pd.DataFrame(rows)


def bench_rules(repeats: int, quick: bool) -> pd.DataFrame:
    pool = synthetic_pool(n_rows=200_000, n_strata=12, random_seed=1)
    rules = ["expected_width", "independent_beta", "thompson", "neyman", "uniform"]
    res = simulate(pool, strata="stratum", prediction="pred", truth="truth", rules=rules,
                   repeats=repeats, batch_size=20, random_seed=0, progress=False)
    summary = res.summary()
    # proportional random labelling: random sampling does not depend on the batch size,
    # so bigger batches keep the run short (overshoot at most 200 labels)
    prop = simulate(pool, strata="stratum", prediction="pred", truth="truth", rules=["proportional"],
                    repeats=1 if quick else 3, batch_size=200, random_seed=0, progress=False)
    robust = simulate(pool, strata="stratum", prediction="pred", truth="truth", rules=["expected_width"],
                      repeats=repeats, batch_size=20, random_seed=0, progress=False, model="robust").summary()
    robust.index = ["expected_width [model=robust]"]
    summary = pd.concat([summary, robust, prop.summary()])
    ew = summary.loc["expected_width", "labels_mean"]
    summary["saving_of_expected_width"] = 1 - ew / summary["labels_mean"]
    return summary


def bench_outlier(repeats: int) -> pd.DataFrame:
    """One stratum far from the others (error rate 0.45): plain pooling vs auto (robust on a flag)."""
    pool = synthetic_pool(n_rows=200_000, n_strata=12, random_seed=1)
    rng = np.random.default_rng(5)
    m = (pool["stratum"] == "s06").to_numpy()
    err = rng.random(m.sum()) < 0.45
    pool.loc[m, "pred"] = np.where(err, 1 - pool.loc[m, "truth"], pool.loc[m, "truth"])
    rows = []
    for model in ("auto", "beta_binomial"):
        res = simulate(pool, strata="stratum", prediction="pred", truth="truth", rules=["expected_width"],
                       repeats=repeats, batch_size=20, random_seed=0, progress=False, model=model)
        out = res.summary()
        out.index = [f"expected_width [model={model}]"]
        iv = res.intervals
        out["coverage_outlier"] = iv.loc[iv["stratum"] == "s06", "covered"].mean()
        rows.append(out)
    return pd.concat(rows)


def bench_campaign_10k() -> dict:
    pool = synthetic_pool(n_rows=1_000_000, n_strata=50, size_ratio=20, random_seed=2)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(pool, strata="stratum", prediction="pred", truth="truth", rules=["expected_width"],
                   repeats=1, batch_size=50, target_halfwidth=0.045, random_seed=0, progress=False)
    row = res.table.iloc[0]
    return {"labels_used": int(row["labels_used"]), "rounds": int(row["rounds"]),
            "wall_time_s": round(time.perf_counter() - t0, 2),
            "cpu_time_s": round(time.process_time() - c0, 2), "coverage": round(row["coverage"], 3),
            "reached_goal": bool(row["reached_goal"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    pd.set_option("display.width", 160)
    print("## one proposal step, 50 strata (fit + intervals + allocation of 50 labels)")
    print(bench_step().round(1).to_string(index=False))
    print("\n## rules on the generated pool (12 strata, 200,000 rows, target half-width 0.05, level 0.95)")
    print(bench_rules(repeats=3 if args.quick else 10, quick=args.quick).round(3).to_string())
    print("\n## one outlying stratum (s06 at 0.45): plain pooling vs auto")
    print(bench_outlier(repeats=3 if args.quick else 10).round(3).to_string())
    print("\n## simulated ~10,000-label campaign, 50 strata, batch 50")
    print(bench_campaign_10k())


if __name__ == "__main__":
    main()
