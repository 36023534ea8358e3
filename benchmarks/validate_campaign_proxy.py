"""Labels to target and coverage at stop per stratum: labels only, uniform with a proxy, proxy campaign.

A pool of 12 strata of 5,000 rows (60,000 rows), error rates 0.05 to 0.30, a label proxy (a
judge's label) whose agreement with the truth runs from 0.85 to 0.97 over eleven strata and is
0.60 in stratum ``s05`` (the poor proxy). Target half-width 0.05 at level 0.95, batches of
``--batch-size`` labels. Four designs (``--designs``), the same pool:

``labels``: the labels-only campaign with the stratum guarantee (``simulate``,
    ``expected_width``, ``guarantee="stratum"``).
``uniform``: labels at random within each stratum, each stratum stopping when its proxy
    interval (``proxy_ci``'s rule: Clopper-Pearson cells, at the guarantee's stop level)
    reaches the target, checked every ``--batch-size`` labels of the stratum.
``uniform5``: the same, checked every 5 labels of the stratum (about the granularity at
    which the proxy campaign's batches of 50 over 12 strata look at each stratum).
``proxy``: the proxy campaign (``simulate(..., proxy="judge")``: Neyman allocation across
    the proxy's cells within each stratum, strata stopping on their proxy intervals).

Repeat ``r`` of every design uses the seed ``[seed, r]``, so chunks of repeats run apart
(``--start``, ``--repeats``, ``--out``) combine into one run (``--summarise`` CSV...).
Coverage at stop is of the interval each stratum stops on; its Monte Carlo standard error is
``sqrt(c (1 - c) / repeats)``. The summary also prints the normal-theory limit of Neyman
allocation across the proxy's cells against proportional allocation (:func:`neyman_limit`).

Run: ``nice -n 10 python benchmarks/validate_campaign_proxy.py --designs proxy --start 0
--repeats 10 --out benchmarks/results/campaign_proxy_parts/proxy_0.csv``, then
``python benchmarks/validate_campaign_proxy.py --summarise benchmarks/results/campaign_proxy_parts/*.csv``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval._kernels.proxy import proxy_interval
from bayeseval.campaign import Budget, Each
from bayeseval.campaign.goals.guarantee import guarantee_stop_level
from bayeseval.campaign.simulation import simulate

N_STRATA, ROWS, POOR = 12, 5_000, 5
RATES = np.linspace(0.05, 0.30, N_STRATA)
AGREEMENT = np.insert(np.linspace(0.85, 0.97, N_STRATA - 1), POOR, 0.60)
TARGET, LEVEL = 0.05, 0.95
OUT = Path(__file__).parent / "results" / "campaign_proxy.csv"
UNIFORM_LOOKS = {"uniform5": 5}
DESIGNS = ("labels", "proxy", "uniform", *UNIFORM_LOOKS)


def make_pool(seed: int = 0) -> pd.DataFrame:
    """The pool: predictions, true labels with each stratum's error rate, the judge's labels."""
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(N_STRATA):
        pred = rng.integers(0, 2, ROWS)
        truth = pred ^ (rng.random(ROWS) < RATES[k])
        judge = truth ^ (rng.random(ROWS) >= AGREEMENT[k])
        frames.append(
            pd.DataFrame({"stratum": f"s{k:02d}", "pred": pred, "truth": truth.astype(int), "judge": judge.astype(int)})
        )
    return pd.concat(frames, ignore_index=True)


def uniform_run(pool: pd.DataFrame, seed: np.random.SeedSequence, batch: int) -> pd.DataFrame:
    """Designs (b) and (b5): random labels within each stratum until its proxy interval is narrow enough."""
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


def campaign_run(pool: pd.DataFrame, batch: int, seed: list[int], proxy: str | None) -> pd.DataFrame:
    """Designs (a) and (c), one repeat: per-stratum labels and coverage at stop."""
    res = simulate(
        pool,
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        rules=["expected_width"],
        n_repeats=1,
        goal=Each(TARGET),
        level=LEVEL,
        guarantee="stratum",
        proxy=proxy,
        random_seed=seed,
        progress=False,
        budget=Budget(batch_size=batch),
    )
    return res.intervals[["stratum", "labelled", "covered"]]


def one_repeat(design: str, pool: pd.DataFrame, batch: int, seed: list[int]) -> pd.DataFrame:
    """One repeat of one design; ``seed`` is ``[seed, repeat]``, so chunks of repeats combine."""
    if design in ("labels", "proxy"):
        return campaign_run(pool, batch, seed, "judge" if design == "proxy" else None)
    look = batch if design == "uniform" else UNIFORM_LOOKS[design]
    return uniform_run(pool, np.random.SeedSequence(seed), look)


def run(designs: list[str], repeats: int, start: int, batch: int, seed: int, out: Path) -> pd.DataFrame:
    """Repeats ``start .. start + repeats - 1`` of each design; the CSV is rewritten after each one."""
    pool = make_pool(seed)
    frames: list[pd.DataFrame] = []
    for design in designs:
        t0 = time.perf_counter()
        for r in range(start, start + repeats):
            frames.append(one_repeat(design, pool, batch, [seed, r]).assign(design=design, repeat=r))
            pd.concat(frames, ignore_index=True).to_csv(out, index=False)
        print(f"{design}: {time.perf_counter() - t0:.0f}s", flush=True)
    return pd.concat(frames, ignore_index=True)


def summary(raw: pd.DataFrame) -> pd.DataFrame:
    """Per design and stratum: mean labels, coverage at stop and its Monte Carlo SE."""
    reps = raw.groupby("design")["repeat"].nunique()
    per = raw.groupby(["design", "stratum"]).agg(labels=("labelled", "mean"), coverage=("covered", "mean"))
    per["mc_se"] = np.sqrt(
        per["coverage"] * (1 - per["coverage"]) / reps.reindex(per.index.get_level_values("design")).to_numpy()
    )
    return per


def neyman_limit(pool: pd.DataFrame) -> pd.Series:
    """Normal-theory variance of Neyman allocation across the proxy's cells over proportional.

    Per stratum, with cell shares ``W_c`` and true cell error rates ``p_c``:
    ``(sum W_c sd_c)^2 / sum W_c sd_c^2`` with ``sd_c = sqrt(p_c (1 - p_c))``, the labels the
    Neyman split needs for a given variance as a share of those uniform sampling (proportional
    allocation, the same post-stratified estimator) needs. The pooled figure weighs the strata
    by the labels proportional allocation gives them at a common target.
    """
    rows = {}
    for key, g in pool.groupby("stratum"):
        err = (g["pred"] != g["truth"]).to_numpy(float)
        cell = (g["judge"] != g["pred"]).to_numpy(int)
        w = np.bincount(cell, minlength=2) / len(g)
        p = np.bincount(cell, weights=err, minlength=2) / np.maximum(np.bincount(cell, minlength=2), 1)
        sd = np.sqrt(p * (1 - p))
        rows[key] = {"proportional": float(w @ sd**2), "neyman": float((w @ sd) ** 2)}
    frame = pd.DataFrame(rows).T
    out = frame["neyman"] / frame["proportional"]
    out["pooled"] = frame["neyman"].sum() / frame["proportional"].sum()
    return out


def report(raw: pd.DataFrame, pool: pd.DataFrame) -> str:
    """The printed summary: per stratum labels and coverage, totals with MC SEs, ratios, the limit."""
    per = summary(raw)
    total = raw.groupby(["design", "repeat"])["labelled"].sum().groupby("design").agg(["count", "mean", "std"])
    total["mc_se"] = total["std"] / np.sqrt(total["count"])
    lines = [per.unstack("design").round(3).to_string(), "", total.round(1).to_string(), ""]
    t, se = total["mean"], total["mc_se"]
    if "proxy" in t:
        # Monte Carlo SE of a ratio of two means (delta method, the designs taken as independent)
        lines += [
            f"proxy/{d} {t['proxy'] / t[d]:.3f} (MC SE "
            f"{t['proxy'] / t[d] * np.hypot(se['proxy'] / t['proxy'], se[d] / t[d]):.3f})"
            for d in t.index
            if d != "proxy"
        ]
    lim = neyman_limit(pool)
    lines += ["", "Neyman over proportional (normal theory, labels for equal variance):", lim.round(3).to_string()]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--designs", default=",".join(DESIGNS), help=f"comma-separated, among {', '.join(DESIGNS)} (default all)"
    )
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--start", type=int, default=0, help="first repeat (chunks of repeats combine)")
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT, help="raw results CSV (rewritten after every repeat)")
    ap.add_argument(
        "--summarise",
        type=Path,
        nargs="+",
        metavar="CSV",
        help="combine these result CSVs and print the summary (nothing is run)",
    )
    args = ap.parse_args()
    pool = make_pool(args.seed)
    if args.summarise:
        raw = pd.concat([pd.read_csv(p) for p in args.summarise], ignore_index=True)
        raw = raw.drop_duplicates(["design", "repeat", "stratum"])
    else:
        designs = [d.strip() for d in args.designs.split(",") if d.strip()]
        unknown = sorted(set(designs) - set(DESIGNS))
        if unknown:
            ap.error(f"--designs: unknown {unknown}; choose among {list(DESIGNS)}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        raw = run(designs, args.repeats, args.start, args.batch_size, args.seed, args.out)
    print(report(raw, pool))


if __name__ == "__main__":
    main()
