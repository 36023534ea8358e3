"""Benchmark of the active loop.

1. Time of one proposal step with 50 strata (fresh posterior fit + intervals + allocation).
2. Rule comparison on a generated pool with 12 strata of very unequal sizes (largest 100x the
   smallest) and error rates: labels needed to bring every stratum's 95% credible interval to
   a half-width of 0.05, and coverage of the true rates at stop (mean over repeats and strata,
   and over the three strata whose true rate is farthest from the others, ``coverage_extreme``).
3. Calibration of the pooled intervals without sequential stopping: rates drawn with the
   hyperparameters from the prior (should be nominal) and from one fixed population.
4. Wall time of a simulated campaign of about 10,000 labels over 50 strata.

Run: ``.venv/bin/python benchmarks/bench_active.py [--quick]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from bayeseval.campaign import Budget, Each
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.rules import expected_width, independent_beta, thompson
from bayeseval.campaign.simulation import simulate, synthetic_pool


def bench_step(n_strata: int = 50, reps: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rates = rng.beta(4, 28, n_strata)
    n = rng.integers(5, 300, n_strata)
    s = rng.binomial(n, rates)
    rows = []
    for name, rule in [
        ("expected_width", expected_width),
        ("thompson", thompson),
        ("independent_beta", independent_beta),
    ]:
        times, cpu = [], []
        for i in range(reps):
            st = RuleState.from_counts(
                s,
                n,
                available=np.full(n_strata, 10_000),
                model="independent" if name == "independent_beta" else "robust",
            )
            t0, c0 = time.perf_counter(), time.process_time()
            rule(st, 50, np.random.default_rng(i))
            st.is_done()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        rows.append(
            {
                "rule": name,
                "strata": n_strata,
                "median_ms": 1e3 * np.median(times),
                "p90_ms": 1e3 * np.quantile(times, 0.9),
                "median_cpu_ms": 1e3 * np.median(cpu),
            }
        )
    return pd.DataFrame(rows)


def _extreme_strata(res) -> list:
    rates = res.true_rates
    z = np.abs(np.log(rates / (1 - rates)) - np.log(rates / (1 - rates)).mean())
    return list(z.sort_values(ascending=False).index[:3])


def _summarise(res, label: str | None = None) -> pd.DataFrame:
    out = res.summary()
    iv = res.intervals
    ext = iv[iv["stratum"].isin(_extreme_strata(res))]
    out["coverage_min_run"] = res.table.groupby("rule", sort=False)["coverage"].min()
    out["coverage_extreme"] = ext.groupby("rule", sort=False)["covered"].mean()
    out["labels_min"] = res.table.groupby("rule", sort=False)["labels_used"].min()
    if label is not None:
        out.index = [label]
    return out


def bench_rules(repeats: int, quick: bool) -> pd.DataFrame:
    pool = synthetic_pool(n_rows=200_000, n_strata=12, random_seed=1)
    kw = dict(strata="stratum", y_pred="pred", y_true="truth", batch_size=20, random_seed=0, progress=False)
    rules = ["expected_width", "independent_beta", "thompson", "neyman", "uniform"]
    parts = [_summarise(simulate(pool, rules=rules, n_repeats=repeats, **kw))]
    # the previous default model (plain Beta-binomial unless the predictive check flags a
    # stratum), the plain model, and the pooled stop of guarantee="average"
    variants = [
        ("expected_width [model=auto, before]", dict(model="auto")),
        ("expected_width [model=beta_binomial]", dict(model="beta_binomial")),
        ('expected_width [guarantee="average"]', dict(guarantee="average")),
    ]
    if quick:
        variants = variants[:1]
    for label, extra in variants:
        parts.append(_summarise(simulate(pool, rules=["expected_width"], n_repeats=repeats, **kw, **extra), label))
    # proportional random labelling: random sampling does not depend on the batch size,
    # so bigger batches keep the run short (overshoot at most 200 labels)
    kw["batch_size"] = 200
    parts.append(_summarise(simulate(pool, rules=["proportional"], n_repeats=1 if quick else 3, **kw)))
    summary = pd.concat(parts)
    ew = summary.loc["expected_width", "labels_mean"]
    summary["saving_of_expected_width"] = 1 - ew / summary["labels_mean"]
    return summary


def bench_calibration(pools: int = 400) -> pd.DataFrame:
    """Coverage of the pooled 95% intervals at a fixed 100 labels per stratum (no stopping)."""
    from bayeseval.campaign.loop.fast_posterior import hierarchical_grid
    from bayeseval.models.priors import resolve_prior

    rng = np.random.default_rng(12)
    mu, kappa = resolve_prior("default").sample(pools, random_seed=3)
    rows = []
    for source in ("hyperparameters from the prior", "fixed population mu=0.12, kappa=40"):
        for model in ("beta_binomial", "robust"):
            cov = []
            for r in range(pools):
                if source.startswith("fixed"):
                    th = rng.beta(4.8, 35.2, 12)
                else:
                    th = rng.beta(mu[r] * kappa[r], (1 - mu[r]) * kappa[r], 12)
                s = rng.binomial(100, th)
                lo, hi = hierarchical_grid(s, np.full(12, 100), model=model).interval(0.95)
                cov.append(((lo <= th) & (th <= hi)).mean())
            rows.append({"rates": source, "model": model, "coverage": np.mean(cov), "se": np.std(cov) / np.sqrt(pools)})
    return pd.DataFrame(rows)


def bench_outlier(repeats: int) -> pd.DataFrame:
    """One stratum far from the others (error rate 0.45): plain pooling vs auto (robust on a flag)."""
    pool = synthetic_pool(n_rows=200_000, n_strata=12, random_seed=1)
    rng = np.random.default_rng(5)
    m = (pool["stratum"] == "s06").to_numpy()
    err = rng.random(m.sum()) < 0.45
    pool.loc[m, "pred"] = np.where(err, 1 - pool.loc[m, "truth"], pool.loc[m, "truth"])
    rows = []
    for model in ("robust", "auto", "beta_binomial"):
        res = simulate(
            pool,
            strata="stratum",
            y_pred="pred",
            y_true="truth",
            rules=["expected_width"],
            n_repeats=repeats,
            random_seed=0,
            progress=False,
            model=model,
            budget=Budget(batch_size=20),
        )
        out = res.summary()
        out.index = [f"expected_width [model={model}]"]
        iv = res.intervals
        out["coverage_outlier"] = iv.loc[iv["stratum"] == "s06", "covered"].mean()
        rows.append(out)
    return pd.concat(rows)


def bench_campaign_10k() -> dict:
    pool = synthetic_pool(n_rows=1_000_000, n_strata=50, size_ratio=20, random_seed=2)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(
        pool,
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        rules=["expected_width"],
        n_repeats=1,
        goal=Each(0.045),
        random_seed=0,
        progress=False,
        budget=Budget(batch_size=50),
    )
    row = res.table.iloc[0]
    return {
        "labels_used": int(row["labels_used"]),
        "rounds": int(row["rounds"]),
        "wall_time_s": round(time.perf_counter() - t0, 2),
        "cpu_time_s": round(time.process_time() - c0, 2),
        "coverage": round(row["coverage"], 3),
        "reached_goal": bool(row["reached_goal"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=40, help="campaigns per rule (default 40)")
    args = parser.parse_args()
    pd.set_option("display.width", 160)
    print("## one proposal step, 50 strata (fit + intervals + allocation of 50 labels)")
    print(bench_step().round(1).to_string(index=False))
    print(
        f"\n## rules on the generated pool (12 strata, 200,000 rows, target half-width 0.05, level 0.95, {3 if args.quick else args.repeats} repeats)"
    )
    print(bench_rules(repeats=3 if args.quick else args.repeats, quick=args.quick).round(3).to_string())
    print("\n## calibration of the pooled intervals without sequential stopping (12 strata x 100 labels)")
    print(bench_calibration(100 if args.quick else 400).round(4).to_string(index=False))
    print("\n## one outlying stratum (s06 at 0.45): robust (default), auto and plain pooling")
    print(bench_outlier(repeats=3 if args.quick else 10).round(3).to_string())
    print("\n## simulated ~10,000-label campaign, 50 strata, batch 50")
    print(bench_campaign_10k())


if __name__ == "__main__":
    main()
