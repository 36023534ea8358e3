"""Campaigns that stop when the decision is made: labels to stop and wrong decisions at stop.

Every campaign is simulated sequentially, batch after batch, with an oracle that knows the
true labels, and stops the first time its stopping rule says so (honest optional stopping:
the decision is read exactly when the campaign would stop). Compared, at level 0.95:

* ``decide (pooled)``: ``goal=Decide(threshold)`` with the default ``expected_width`` rule, i.e. the
  decision-targeted allocation on the robust hierarchical posterior; under the default
  ``guarantee="stratum"`` a stratum is decided by its anytime-valid test;
* ``decide (pooled, average)``: the same with ``guarantee="average"``: a stratum is decided
  when its pooled ``P(meets)`` reaches the level;
* ``decide (independent)``: ``goal=Decide(threshold)`` with ``rule="independent_beta"``: independent
  ``Beta(1, 1)`` posteriors per stratum, a Bayesian sequential test per stratum;
* ``width goal``: ``goal=Each(halfwidth)``, the decision read from the final
  interval ("meets" when the interval lies wholly on the meeting side of the threshold,
  "fails" when wholly on the other, otherwise undecided).

Scenarios (true rates are the pool's exact shares, so the right decision is known):

* ``synthetic``: ``synthetic_pool(n_rows=100_000, n_strata=12, random_seed=3)`` (strata of
  very unequal sizes, rates from the hierarchical population), threshold 0.10;
* ``constructed``: 8 strata of 4,000 rows whose error rates lie at known distances
  (0.015, 0.03, 0.05, 0.08) either side of the threshold 0.10;
* ``atypical``: one stratum at 0.16 holding 2% of a 40,000-row pool among nine near 0.06
  (the outlier-safety scenario), threshold 0.12: pooling pulls the atypical stratum toward
  the threshold's meeting side.

A wrong decision is a decided stratum whose decision the true rate contradicts. Strata whose
true rate lies within ``ZONE`` (0.01) of the threshold are reported apart: for a rate at the
threshold either decision is an error of the sequential test's kind that repeated looks
make likely (the law of the iterated logarithm), and such strata need labels without bound.

Run from the repository root::

    python benchmarks/validate_decide.py                  # 40 repeats, about 15 minutes
    python benchmarks/validate_decide.py --quick          # 4 repeats
    python benchmarks/validate_decide.py --write-docs     # also update docs/guide/campaigns.md
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval.campaign import Budget, Decide, Each
from bayeseval.campaign.goals.decide import true_decisions
from bayeseval.campaign.simulation import simulate, synthetic_pool

LEVEL = 0.95
ZONE = 0.01
WIDTH_TARGET = 0.025
BATCH = 50
DOCS = Path(__file__).resolve().parents[1] / "docs" / "guide" / "campaigns.md"
MARK = ("<!-- validate_decide:start -->", "<!-- validate_decide:end -->")


def exact_pool(rates: list[float], sizes: list[int], *, random_seed: int = 0) -> pd.DataFrame:
    """A pool whose strata have exactly ``round(rate * size)`` errors each (shuffled)."""
    rng = np.random.default_rng(random_seed)
    parts = []
    for i, (rate, size) in enumerate(zip(rates, sizes, strict=True)):
        err = np.zeros(size, bool)
        err[: int(round(rate * size))] = True
        rng.shuffle(err)
        truth = rng.integers(0, 2, size)
        parts.append(pd.DataFrame({"stratum": f"s{i:02d}", "truth": truth, "pred": np.where(err, 1 - truth, truth)}))
    return pd.concat(parts, ignore_index=True)


def scenarios() -> dict[str, tuple[pd.DataFrame, float]]:
    constructed = [0.02, 0.05, 0.07, 0.085, 0.115, 0.13, 0.15, 0.18]
    atypical_sizes = list(
        np.round(np.r_[0.02, 0.98 * np.geomspace(1, 4, 9) / np.geomspace(1, 4, 9).sum()] * 40_000).astype(int)
    )
    atypical_rates = [0.16, *np.linspace(0.05, 0.07, 9)]
    return {
        "synthetic": (synthetic_pool(n_rows=100_000, n_strata=12, random_seed=3), 0.10),
        "constructed": (exact_pool(constructed, [4000] * 8, random_seed=1), 0.10),
        "atypical": (exact_pool(atypical_rates, atypical_sizes, random_seed=2), 0.12),
    }


METHODS = {
    "decide (pooled)": dict(goal="decide", rules=["expected_width"]),
    "decide (pooled, average)": dict(goal="decide", rules=["expected_width"], guarantee="average"),
    "decide (independent)": dict(goal="decide", rules=["independent_beta"]),
    "width goal": dict(goal=Each(WIDTH_TARGET), rules=["expected_width"]),
}


def run(pool: pd.DataFrame, threshold: float, method: dict, repeats: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-run table and per-stratum final rows (with ``made`` and ``right`` decisions)."""
    kw = dict(method)
    if kw["goal"] == "decide":
        kw["goal"] = Decide(threshold)
    res = simulate(
        pool,
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        level=LEVEL,
        n_repeats=repeats,
        random_seed=0,
        progress=False,
        **kw,
        budget=Budget(batch_size=BATCH),
    )
    iv = res.intervals.copy()
    if kw["goal"] == "decide":
        iv["made"] = iv["decision"]
    else:
        iv["made"] = np.where(iv["upper"] < threshold, "meets", np.where(iv["lower"] > threshold, "fails", "undecided"))
    iv["right"] = true_decisions(iv["true_rate"], threshold, "below")
    iv["zone"] = (iv["true_rate"] - threshold).abs() < ZONE
    iv["wrong"] = (iv["made"] != "undecided") & (iv["made"] != iv["right"])
    return res.table, iv


def upper_cp(k: int, n: int, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a rate from k events in n."""
    return 1.0 if k >= n else float(stats.beta.ppf(level, k + 1, n - k))


def summarise(name: str, table: pd.DataFrame, iv: pd.DataFrame) -> dict:
    out = iv[~iv["zone"]]
    zone = iv[iv["zone"]]
    per = out.groupby("stratum")["wrong"].mean()
    q = table["labels_used"].quantile([0.1, 0.5, 0.9]).to_numpy()
    decided = out["made"] != "undecided"
    k, n = int(out["wrong"].sum()), int(decided.sum())
    return {
        "method": name,
        "labels (median [10%, 90%])": f"{q[1]:.0f} [{q[0]:.0f}, {q[2]:.0f}]",
        "labels_median": q[1],
        "undecided at stop": f"{(~decided).mean():.3f}",
        "wrong / decided": f"{k}/{n} = {k / max(n, 1):.4f} (95% upper {upper_cp(k, n):.3f})",
        "worst stratum": f"{per.max():.3f} ({per.idxmax()})" if len(per) else "-",
        "zone: wrong / decided": (
            f"{int(zone['wrong'].sum())}/{int((zone['made'] != 'undecided').sum())}" if len(zone) else "-"
        ),
        "worst": float(per.max()) if len(per) else 0.0,
    }


def per_stratum(results: dict, threshold: float) -> pd.DataFrame:
    first = next(iter(results.values()))[1].groupby("stratum")["true_rate"].first()
    rows = {"true rate": first.round(4), "distance": (first - threshold).round(4)}
    for name, (_, iv) in results.items():
        g = iv.groupby("stratum")
        rows[f"{name} wrong"] = g["wrong"].mean()
        rows[f"{name} labels"] = g["labelled"].median()
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        cells = [
            f"{v:.3f}"
            if isinstance(v, float) and not float(v).is_integer()
            else (f"{v:.0f}" if isinstance(v, float) else str(v))
            for v in row
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="4 repeats")
    parser.add_argument("--write-docs", action="store_true", help="write the tables into docs/guide/campaigns.md")
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    args = parser.parse_args()
    repeats = 4 if args.quick else args.repeats
    text = [
        f"Level {LEVEL}, batches of {BATCH}, {repeats} seeded repeats per scenario; width goal: "
        f"half-width {WIDTH_TARGET}. Wrong decisions exclude strata within {ZONE} of the threshold "
        "(their count is the 'zone' column).\n"
    ]
    chosen = scenarios()
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    for scen, (pool, threshold) in chosen.items():
        t0 = time.perf_counter()
        results = {name: run(pool, threshold, method, repeats) for name, method in METHODS.items()}
        summary = pd.DataFrame([summarise(name, *res) for name, res in results.items()])
        anchor = summary.loc[summary["method"] == "decide (independent)", "labels_median"].iloc[0]
        summary["labels / independent"] = (summary["labels_median"] / anchor).round(3)
        shown = summary.drop(columns=["labels_median", "worst"])
        block = [
            f"\n**{scen}** (threshold {threshold}; {time.perf_counter() - t0:.0f} s)\n",
            markdown(shown),
            "\nPer stratum: share of repeats with a wrong decision at stop, median labels.\n",
            markdown(per_stratum(results, threshold).reset_index()),
        ]
        print("\n".join(block), file=sys.stderr, flush=True)  # each scenario as it is done
        text += block
    report = "\n".join(text)
    print(report)
    if args.write_docs:
        doc = DOCS.read_text()
        block = f"{MARK[0]}\n{report}\n{MARK[1]}"
        doc = re.sub(re.escape(MARK[0]) + ".*?" + re.escape(MARK[1]), lambda _: block, doc, flags=re.S)
        DOCS.write_text(doc)


if __name__ == "__main__":
    main()
