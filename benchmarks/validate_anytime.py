"""What ``anytime=True`` costs and buys: the confidence sequence against fixed-size intervals.

Three tables.

``--widths``: expected width (exact, over Binomial(n, p)) of the conjugate-mixture
confidence sequence (``bayeseval._kernels.anytime``) as a multiple of Wilson's fixed-n width,
untuned (concentration 2), tuned for n (the best a plan can do) and tuned for the campaign's
plan at a target half-width of 0.05 (918 trials, ``planned_trials``), at n = 100 and 4,000
and true rates 0.1 and 0.5; and the planned trials against Wilson's fixed-n count for the
same half-width at rate 1/2.

``--exact``: one stratum, a look after every label, stop when the interval's half-width
reaches 0.05 (at most 1,000 labels), exactly (``bayeseval._kernels.sequential``): expected
labels and coverage at stop of the tuned sequence (what an ``anytime=True`` stratum of at
least 918 rows does) against Clopper-Pearson at 0.95 and at the compensated level 0.965
(``guarantee="stratum"``'s interval for a stratum with fewer than two other strata labelled).

``--campaigns``: seeded ``simulate`` campaigns on the 12-stratum pools of
``validate_campaign_guarantee.py`` (exchangeable, and ``s03`` at 0.14), target 0.05, level
0.95, ``expected_width``: the default campaign (``guarantee="stratum"``) against
``anytime=True``, at batch sizes 10 and 1. Labels and coverage at stop of the interval each
stratum reads (true rate: the stratum's share of errors in the pool). Results are appended to
``benchmarks/results/anytime_campaigns.csv`` one chunk at a time (chunks already there are
skipped; ``--from-csv`` rebuilds the table).

Run::

    python benchmarks/validate_anytime.py --widths --exact
    python benchmarks/validate_anytime.py --campaigns --repeats 10 --batch-sizes 10 1
    python benchmarks/validate_anytime.py --from-csv
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._kernels.anytime import (
    UNTUNED_CONCENTRATION,
    confidence_sequence_bounds,
    planned_trials,
    tuned_concentration,
)
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.sequential import sequential_outcome
from bayeseval.campaign import Budget

CSV = Path(__file__).resolve().parent / "results" / "anytime_campaigns.csv"
TARGET = 0.05
LEVEL = 0.95
SCENARIOS = ("exchangeable", "atypical 0.14")
VARIANTS = {"default": {}, "anytime": {"guarantee": "anytime"}}


# -- widths ------------------------------------------------------------------------------
def expected_width(n: int, p: float, bounds) -> float:
    s = np.arange(n + 1, dtype=float)
    lo, hi = bounds(s, np.full(n + 1, float(n)))
    return float(stats.binom.pmf(s, n, p) @ (hi - lo))


def width_table() -> pd.DataFrame:
    plan = planned_trials(TARGET, LEVEL)
    rows = []
    for n in (100, 4000):
        for p in (0.1, 0.5):
            wilson = expected_width(n, p, lambda s, m: binomial_bounds(s, m, 1 - LEVEL, "wilson"))
            row = {"n": n, "rate": p, "wilson width": wilson}
            for name, c in (
                ("untuned", UNTUNED_CONCENTRATION),
                ("tuned for n", tuned_concentration(n, LEVEL)),
                (f"tuned for {plan}", tuned_concentration(plan, LEVEL)),
            ):
                row[name] = expected_width(n, p, lambda s, m, c=c: confidence_sequence_bounds(s, m, LEVEL, c)) / wilson
            rows.append(row)
    return pd.DataFrame(rows)


def wilson_trials(halfwidth: float, level: float) -> int:
    """Fewest n whose Wilson interval at s = n/2 has at most ``halfwidth``."""
    n = 1
    while True:
        lo, hi = binomial_bounds(np.array([n / 2]), np.array([float(n)]), 1 - level, "wilson")
        if (hi[0] - lo[0]) / 2 <= halfwidth:
            return n
        n += 1


def width_markdown(tab: pd.DataFrame) -> str:
    cols = [c for c in tab.columns if c not in ("n", "rate", "wilson width")]
    lines = ["| n | true rate | Wilson width | " + " | ".join(cols) + " |", "|" + "---|" * (3 + len(cols))]
    for _, r in tab.iterrows():
        lines.append(
            f"| {int(r['n'])} | {r['rate']:g} | {r['wilson width']:.4f} | "
            + " | ".join(f"{r[c]:.2f}x" for c in cols)
            + " |"
        )
    plan, wilson = planned_trials(TARGET, LEVEL), wilson_trials(TARGET, LEVEL)
    lines.append("")
    lines.append(
        f"planned trials for half-width {TARGET} at rate 1/2: {plan} (tuned sequence) vs {wilson} "
        f"(Wilson, fixed n): {plan / wilson:.2f}x"
    )
    return "\n".join(lines)


# -- one stratum, exact --------------------------------------------------------------------
def exact_table(rates=(0.02, 0.05, 0.1, 0.11, 0.2, 0.3, 0.5), max_trials: int = 1000) -> pd.DataFrame:
    plan = planned_trials(TARGET, LEVEL)
    c = tuned_concentration(plan, LEVEL)
    cache: dict = {}

    def bounds(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
        if (kind, n) not in cache:
            s = np.arange(n + 1, dtype=float)
            m = np.full(n + 1, float(n))
            if kind == "anytime":
                cache[kind, n] = confidence_sequence_bounds(s, m, LEVEL, c)
            else:
                level = {"clopper_pearson 0.95": 0.95, "clopper_pearson 0.965": 0.965}[kind]
                cache[kind, n] = binomial_bounds(s, m, 1 - level, "clopper_pearson")
        return cache[kind, n]

    rows = []
    for kind in ("anytime", "clopper_pearson 0.95", "clopper_pearson 0.965"):
        for p in rates:

            def stop(s, n, kind=kind):
                lo, hi = bounds(kind, n)
                return (hi - lo) / 2 <= TARGET

            def event(s, n, kind=kind, p=p):
                lo, hi = bounds(kind, n)
                return (lo <= p) & (p <= hi)

            out = sequential_outcome(float(p), stop, event, max_trials=max_trials)
            rows.append({"interval": kind, "rate": p, "labels": out.expected_trials, "coverage": out.event_at_end})
    return pd.DataFrame(rows)


def exact_markdown(tab: pd.DataFrame) -> str:
    rates = sorted(tab["rate"].unique())
    lines = [
        "| interval | " + " | ".join(f"labels at {r:g}" for r in rates) + " | coverage at stop (lowest, rate) |",
        "|" + "---|" * (len(rates) + 2),
    ]
    for kind, g in tab.groupby("interval", sort=False):
        lab = g.set_index("rate")["labels"]
        worst = g.loc[g["coverage"].idxmin()]
        lines.append(
            f"| {kind} | "
            + " | ".join(f"{lab[r]:.0f}" for r in rates)
            + f" | {worst['coverage']:.4f} ({worst['rate']:g}) |"
        )
    return "\n".join(lines)


# -- campaigns ---------------------------------------------------------------------------
def run_chunk(name: str, variant: str, chunk: int, size: int, batch_size: int) -> pd.DataFrame:
    from validate_campaign_guarantee import scenario_pool

    from bayeseval.campaign import Each
    from bayeseval.campaign.simulation import simulate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(
            scenario_pool(name),
            strata="stratum",
            y_pred="pred",
            y_true="truth",
            goal=Each(TARGET),
            level=LEVEL,
            n_repeats=size,
            random_seed=(7, chunk),
            progress=False,
            rules=["expected_width"],
            **VARIANTS[variant],
            budget=Budget(batch_size=batch_size),
        )
    out = res.intervals[["repeat", "stratum", "labelled", "lower", "upper", "true_rate", "covered"]].copy()
    out = out.rename(columns={"lower": "read_lower", "upper": "read_upper"})  # the results file's columns
    for i, (col, value) in enumerate(
        (("scenario", name), ("variant", variant), ("batch_size", batch_size), ("chunk", chunk))
    ):
        out.insert(i, col, value)
    return out


def run_campaigns(scenarios, variants, repeats: int, chunk: int, batch_sizes, csv: Path) -> None:
    csv.parent.mkdir(parents=True, exist_ok=True)
    have = set()
    if csv.exists():
        old = pd.read_csv(csv, usecols=["scenario", "variant", "batch_size", "chunk"]).drop_duplicates()
        have = set(map(tuple, old.to_numpy().tolist()))
    for c in range(-(-repeats // chunk)):
        for batch in batch_sizes:
            for name in scenarios:
                for variant in variants:
                    if (name, variant, batch, c) in have:
                        continue
                    t0 = time.process_time()
                    out = run_chunk(name, variant, c, chunk, batch)
                    out.to_csv(csv, mode="a", header=not csv.exists(), index=False)
                    print(
                        f"chunk {c} batch {batch} {name:>14} {variant:>8}: {time.process_time() - t0:6.1f} cpu s",
                        flush=True,
                    )


def campaign_markdown(data: pd.DataFrame) -> str:
    lines = [
        "| pool | campaign | batch | repeats | labels (mean) | vs default | coverage: lowest stratum (se) "
        "| mean over strata | s03 coverage | s03 labels (median) |",
        "|" + "---|" * 10,
    ]
    keys = ["scenario", "batch_size", "variant"]
    base = data[data["variant"] == "default"].groupby(["scenario", "batch_size", "chunk", "repeat"])["labelled"].sum()
    base = base.groupby(["scenario", "batch_size"]).mean()
    for (name, batch, variant), g in data.groupby(keys, sort=False):
        reps = g.groupby(["chunk", "repeat"]).ngroups
        labels = g.groupby(["chunk", "repeat"])["labelled"].sum().mean()
        cov = g.groupby("stratum")["covered"].mean()
        low = cov.min()
        ref = base.get((name, batch), np.nan)
        odd = g[g["stratum"] == "s03"]
        ratio = "-" if np.isnan(ref) else f"{labels / ref:.2f}x"
        lines.append(
            f"| {name} | {variant} | {batch} | {reps} | {labels:.0f} | {ratio} "
            f"| {low:.3f} ({np.sqrt(low * (1 - low) / reps):.3f}) | {cov.mean():.3f} "
            f"| {cov['s03']:.3f} | {odd['labelled'].median():.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", action="store_true", help="the width table")
    parser.add_argument("--exact", action="store_true", help="the one-stratum exact table")
    parser.add_argument("--campaigns", action="store_true", help="run the seeded campaigns")
    parser.add_argument("--from-csv", action="store_true", help="the campaign table from the CSV")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=5, help="repeats per seeded chunk")
    parser.add_argument("--batch-sizes", type=int, nargs="*", default=[10, 1])
    parser.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args()
    if args.widths:
        print(width_markdown(width_table()), flush=True)
    if args.exact:
        print(exact_markdown(exact_table()), flush=True)
    if args.campaigns:
        run_campaigns(args.scenarios, args.variants, args.repeats, args.chunk, args.batch_sizes, args.csv)
    if args.campaigns or args.from_csv:
        print(campaign_markdown(pd.read_csv(args.csv)))


if __name__ == "__main__":
    main()
