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
about 30 s; each run's per-stratum results are added to ``benchmarks/results/pool_campaign.csv``,
replacing an earlier run of the same population and seed)::

    python benchmarks/pool_campaign.py --population pool --repeats 250 --seed 1
    python benchmarks/pool_campaign.py --population process --repeats 10 --seed 1
    python benchmarks/pool_campaign.py --summary
    python benchmarks/pool_campaign.py --write     # the campaign part of docs/validation.md section 14
"""

from __future__ import annotations

import argparse
import re
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
CSV = RESULTS / "pool_campaign.csv"
DOC = ROOT / "docs" / "validation.md"
SUBHEADING = "\n### A campaign on the pool"
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
    out = res.intervals[["repeat", "stratum", "labelled", "lower", "upper", "true_rate", "covered"]].round(6)
    out["population"], out["seed"] = population, seed
    out["campaign_labels"] = out["repeat"].map(res.table.set_index("repeat")["labels_used"])
    out["reached_goal"] = out["repeat"].map(res.table.set_index("repeat")["reached_goal"])
    print(f"{population}: {repeats} campaigns in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def summary() -> str:
    """Labels per campaign and per-stratum coverage from every results file, as text."""
    frame = pd.read_csv(CSV)
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


def section() -> str:
    """The campaign part of section 14 of docs/validation.md, from every results file."""
    frame = pd.read_csv(CSV)
    camp = frame.drop_duplicates(["population", "seed", "repeat"])
    labels = camp.groupby("population")["campaign_labels"].agg(["mean", "std", "count"])
    n_pool, n_proc = int(labels.loc["pool", "count"]), int(labels.loc["process", "count"])
    ratio = labels.loc["pool", "mean"] / labels.loc["process", "mean"]
    per = frame.groupby(["stratum", "population"]).agg(
        rows=("true_rate", "size"),
        rate=("true_rate", "first"),
        labelled=("labelled", "mean"),
        covered=("covered", "mean"),
    )
    pool, proc = per.xs("pool", level="population"), per.xs("process", level="population")
    se = np.sqrt(pool["covered"] * (1 - pool["covered"]) / pool["rows"])
    worst = pool["covered"].idxmin()
    reached = camp.groupby("population")["reached_goal"].mean()
    sizes = make_pool(POOL_SEED).set_index("stratum")["rows"]
    lines = [
        SUBHEADING.strip(),
        "",
        "Generated by `python benchmarks/pool_campaign.py --write` (raw results "
        "`benchmarks/results/pool_campaign.csv`). The same pool as rows, replayed by "
        '`bayeseval.campaign.simulate` (goal `Each(0.05)`, `guarantee="stratum"`, level 0.95, the default '
        'rule `expected_width` and batch size 10 over all strata) with `design=Design(population="pool")` '
        'and with the default `"process"`. With `"pool"` each stratum stops on, and reads, `pool_ci` at '
        "the stop level 0.965; the allocation projects each stratum's half-width with the finite-population "
        "correction. Unlike the table above, the strata do not get 10 labels each per look: a round's 10 "
        "labels go where the expected gain is largest, so a stratum is looked at after 1-10 of its own labels.",
        "",
        f"Labels per campaign: {labels.loc['pool', 'mean']:.0f} (sd {labels.loc['pool', 'std']:.0f}, "
        f'{n_pool} campaigns) with `"pool"` against {labels.loc["process", "mean"]:.0f} (sd '
        f"{labels.loc['process', 'std']:.0f}, {n_proc} campaigns; a process campaign took 40-60 s on two shared cores, so fewer) "
        f'with `"process"`: **{ratio:.2f}x** (target: at most 0.7x). Goal reached: '
        f"{reached['pool']:.0%} and {reached['process']:.0%} of the campaigns (a process stratum labelled to its "
        "last row can stay wider than 0.05). Coverage of each stratum's pool rate at stop by the interval it "
        f"reads: lowest **{pool['covered'].min():.3f}** ({worst}, rate {pool.loc[worst, 'rate']:.3f}, MC SE "
        f"{se[worst]:.3f}; target at least 0.94), mean {frame[frame.population == 'pool']['covered'].mean():.4f}; "
        f"the process interval covers the pool rate in {proc['covered'].mean():.0%} of its strata (it is wider).",
        "",
        "| stratum | rows | rate | pool labels | process labels | ratio | pool coverage at stop (MC se) |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in pool.index:
        lines.append(
            f"| {g} | {sizes[g]} | {pool.loc[g, 'rate']:.3f} | {pool.loc[g, 'labelled']:.0f} | "
            f"{proc.loc[g, 'labelled']:.0f} | {pool.loc[g, 'labelled'] / proc.loc[g, 'labelled']:.2f} | "
            f"{pool.loc[g, 'covered']:.3f} ({se[g]:.3f}) |"
        )
    return "\n".join(lines) + "\n"


def write_section() -> None:
    """Put :func:`section` at the end of section 14 of docs/validation.md (replacing an earlier one)."""
    text = DOC.read_text()
    start = text.find("\n## 14. ")
    if start < 0:
        raise SystemExit("docs/validation.md has no section 14: run benchmarks/pool_labels.py --write first")
    end_match = re.search(r"\n## ", text[start + 1 :])
    end = start + 1 + end_match.start() if end_match else len(text)
    sub = text.find(SUBHEADING, start, end)
    head = text[: sub if sub >= 0 else end].rstrip("\n")
    DOC.write_text(head + "\n\n" + section().rstrip() + "\n" + text[end:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", choices=("pool", "process"), default="pool")
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--summary", action="store_true", help="summarise every results file and exit")
    ap.add_argument("--write", action="store_true", help="write the campaign part of docs/validation.md section 14")
    args = ap.parse_args()
    if args.summary:
        print(summary())
        return
    if args.write:
        write_section()
        return
    out = run(args.population, args.repeats, args.seed)
    if CSV.exists():
        old = pd.read_csv(CSV)
        out = pd.concat([old[(old["population"] != args.population) | (old["seed"] != args.seed)], out])
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.to_csv(CSV, index=False)


if __name__ == "__main__":
    main()
