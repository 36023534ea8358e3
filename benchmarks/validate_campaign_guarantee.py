"""Coverage at stop per stratum, and labels, under the two campaign guarantees.

A 12-stratum pool (stratum sizes 150 to 19,000 rows, geometric; eleven strata at error
rates 0.06-0.10) with one stratum ``s03`` (1,000 rows) that is atypical at 0.25 or at 0.14,
or typical at 0.08 (exchangeable); and a low-side outlier (``s03`` at 0.01 among strata at
0.08-0.12). ``expected_width`` campaigns to a 0.05 half-width at level 0.95 with
``guarantee="stratum"`` (the default: each stratum stops on, and reports, its adaptive
interval from the leave-one-out prior of the other strata at level 0.965) and
``guarantee="average"`` (each stratum stops on its pooled interval), and ``rule="independent_beta"``
(every stratum on its own ``Beta(1, 1)`` posterior); the same seeds for all three. Coverage at
stop is of the interval each stratum reads (``simulate``'s ``covered``); its Monte Carlo
standard error is ``sqrt(c (1 - c) / repeats)``.

Run: ``python benchmarks/validate_campaign_guarantee.py [--repeats 12] [--batch-size 50]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from bayeseval.campaign.simulation import simulate

N_STRATA = 12
SIZES = np.round(np.geomspace(150, 19_000, N_STRATA)).astype(int)
OTHERS = np.linspace(0.06, 0.10, N_STRATA - 1)
LOW_OTHERS = np.linspace(0.08, 0.12, N_STRATA - 1)
ODD = 3  # the stratum whose rate the scenarios set (about 1,000 rows)

SCENARIOS = {
    "atypical 0.25": (0.25, OTHERS),
    "atypical 0.14": (0.14, OTHERS),
    "exchangeable": (0.08, OTHERS),
    "low-side 0.01": (0.01, LOW_OTHERS),
}

#: (label, simulate keyword arguments)
RULES = (
    ("stratum", {"rules": ["expected_width"], "guarantee": "stratum"}),
    ("average", {"rules": ["expected_width"], "guarantee": "average"}),
    ("independent_beta", {"rules": ["independent_beta"], "guarantee": "average"}),
)


def scenario_pool(odd_rate: float, others: np.ndarray) -> pd.DataFrame:
    """The pool: exact error counts per stratum (``round(rate * rows)`` errors, shuffled by the campaign)."""
    rates = np.insert(others, ODD, odd_rate)
    frames = []
    for k, (rate, rows) in enumerate(zip(rates, SIZES, strict=True)):
        errors = np.zeros(rows, int)
        errors[: round(rate * rows)] = 1
        frames.append(pd.DataFrame({"stratum": f"s{k:02d}", "pred": 0, "truth": errors}))
    return pd.concat(frames, ignore_index=True)


def run(repeats: int, batch_size: int) -> pd.DataFrame:
    rows = []
    for name, (odd_rate, others) in SCENARIOS.items():
        pool = scenario_pool(odd_rate, others)
        for label, kwargs in RULES:
            t0 = time.process_time()
            res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth", target_halfwidth=0.05,
                           n_repeats=repeats, batch_size=batch_size, random_seed=7, progress=False, **kwargs)
            cov = res.intervals.groupby("stratum")["covered"].mean()
            odd = f"s{ODD:02d}"
            rows.append({
                "scenario": name, "rule": label, "odd stratum": float(cov[odd]),
                "se": float(np.sqrt(cov[odd] * (1 - cov[odd]) / repeats)),
                "lowest other": float(cov.drop(odd).min()), "mean (all strata)": float(cov.mean()),
                "labels (median)": float(res.table["labels_used"].median()),
                "odd stratum labels": float(res.intervals.loc[res.intervals["stratum"] == odd, "labelled"].median()),
                "cpu s": time.process_time() - t0,
            })
    return pd.DataFrame(rows)


def markdown(out: pd.DataFrame, repeats: int) -> str:
    head = ("| scenario | guarantee / rule | coverage of `s03` (se) | lowest other stratum | mean over strata "
            "| labels (median) | labels vs independent_beta | labels of `s03` |")
    lines = [head, "|" + "---|" * 8]
    for name, grp in out.groupby("scenario", sort=False):
        ib = float(grp.loc[grp["rule"] == "independent_beta", "labels (median)"].iloc[0])
        for _, r in grp.iterrows():
            lines.append(f"| {name} | {r['rule']} | {r['odd stratum']:.3f} ({r['se']:.3f}) | {r['lowest other']:.3f} "
                         f"| {r['mean (all strata)']:.3f} | {r['labels (median)']:.0f} | "
                         f"{r['labels (median)'] / ib:.2f}x | {r['odd stratum labels']:.0f} |")
    return "\n".join(lines) + f"\n\n{repeats} seeded repeats per row (the same seeds for every row)."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=50)
    args = parser.parse_args()
    out = run(args.repeats, args.batch_size)
    print(markdown(out, args.repeats))
    print(f"\nCPU seconds: {out['cpu s'].sum():.0f}")


if __name__ == "__main__":
    main()
