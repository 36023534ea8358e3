"""Fairness audits side by side with fairlearn's MetricFrame.

1. Point estimates: ``bayeseval.fairness.audit`` against ``MetricFrame.by_group`` for every
   metric and group (COMPAS-like synthetic data, two crossed group columns).
2. Coverage by seeded simulation: 6 groups of 20 to 2,000 rows, selection rate
   (demographic parity), (a) equal true rates 0.3 and (b) one disadvantaged group
   (50 rows at 0.15). For each dataset:

   * ours: Newcombe intervals of each group minus the reference (the largest group),
     the Bonferroni/Clopper-Pearson max-min gap interval, and the pooled posterior
     intervals of both (one ``audit`` call);
   * fairlearn: ``MetricFrame(..., n_boot, ci_quantiles=[0.025, 0.975])`` and its
     ``difference_ci()`` (percentile bootstrap of the max-min gap), and a percentile
     bootstrap of the group-minus-reference differences resampling rows the same way
     (MetricFrame has no reference comparison).

   Coverage, mean width and time per dataset are printed as Markdown tables.
3. Tiny groups and the max-min gap (``min_trials``): on COMPAS race x sex x age (36 cells,
   two empty, several of one to three people) the gap interval over every measured cell,
   over the cells with at least 30 trials, and the posterior gap under the crossed and the
   exchangeable (robust) model; and by simulation, the six groups above plus a group of 5
   rows: coverage and width of the gap among the groups with at least 20 rows.

Run: ``python benchmarks/validate_fairness.py`` (about 30 minutes on 2 idle cores, most of it
in MetricFrame's bootstrap) or ``--quick`` (about 3 minutes); ``--gaps-only`` runs part 3
alone (about 2 minutes of CPU; 200 datasets for the simulation, 40 with ``--quick``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from fairlearn.metrics import (
    MetricFrame,
    false_negative_rate,
    false_positive_rate,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)
from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_score, zero_one_loss

from bayeseval.datasets import load_compas
from bayeseval.fairness import audit

SIZES = np.array([20, 50, 100, 300, 1000, 2000])
SCENARIOS = {
    "equal rates (all 0.30)": np.full(6, 0.3),
    "one disadvantaged (50 rows at 0.15)": np.array([0.3, 0.15, 0.3, 0.3, 0.3, 0.3]),
}
LABELS = np.array(list("abcdef"))


def _npv(y_true, y_pred):
    neg = np.asarray(y_pred) == 0
    return float(np.mean(np.asarray(y_true)[neg] == 0))


FAIRLEARN = {
    "selection_rate": selection_rate, "tpr": true_positive_rate, "fnr": false_negative_rate,
    "fpr": false_positive_rate, "tnr": true_negative_rate, "ppv": precision_score, "npv": _npv,
    "error_rate": zero_one_loss, "accuracy": accuracy_score, "balanced_accuracy": balanced_accuracy_score,
}


def parity(seed: int = 0) -> pd.DataFrame:
    """Largest absolute difference between our rates and MetricFrame's, per metric."""
    rng = np.random.default_rng(seed)
    n = 5000
    race = rng.choice(["w", "b", "h", "a"], n, p=[0.45, 0.35, 0.15, 0.05])
    age = rng.choice(["<25", "25-45", ">45"], n)
    y = rng.binomial(1, np.where(age == "<25", 0.5, 0.3))
    p = np.where(rng.random(n) < 0.2, 1 - y, y)
    df = pd.DataFrame({"y": y, "p": p, "race": race, "age": age})
    ours = audit(df, y_true="y", y_pred="p", groups=["race", "age"], random_seed=0)
    mf = MetricFrame(metrics=FAIRLEARN, y_true=df["y"], y_pred=df["p"], sensitive_features=df[["race", "age"]])
    table = ours.groups.set_index(["group", "metric"])["rate"]
    rows = []
    for metric in FAIRLEARN:
        theirs = mf.by_group[metric]
        diffs = [abs(table[(f"{r} | {a}", metric)] - v) for (r, a), v in theirs.items()]
        rows.append({"metric": metric, "groups": len(diffs), "max |ours - MetricFrame|": max(diffs)})
    return pd.DataFrame(rows)


def _dataset(rng: np.random.Generator, rates: np.ndarray) -> pd.DataFrame:
    g = np.repeat(LABELS, SIZES)
    p = rng.binomial(1, np.repeat(rates, SIZES))
    return pd.DataFrame({"y": rng.integers(0, 2, g.size), "p": p, "g": g})


def _ours(df: pd.DataFrame, rates: np.ndarray, seed: int) -> dict:
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="selection_rate", random_seed=seed)
    d = res.disparities
    diff = d[d["measure"] == "difference"].set_index("group")
    truth = pd.Series(rates - rates[-1], index=LABELS).loc[diff.index]
    gap = d[d["measure"] == "max-min gap"].iloc[0]
    true_gap = np.ptp(rates)
    return {
        "diff_cover": ((diff["lower"] <= truth) & (truth <= diff["upper"])).to_numpy(),
        "diff_width": (diff["upper"] - diff["lower"]).to_numpy(),
        "post_diff_cover": ((diff["posterior_lower"] <= truth) & (truth <= diff["posterior_upper"])).to_numpy(),
        "post_diff_width": (diff["posterior_upper"] - diff["posterior_lower"]).to_numpy(),
        "gap_cover": gap["lower"] <= true_gap <= gap["upper"],
        "gap_width": gap["upper"] - gap["lower"],
        "post_gap_cover": gap["posterior_lower"] <= true_gap <= gap["posterior_upper"],
        "post_gap_width": gap["posterior_upper"] - gap["posterior_lower"],
    }


def _boot_differences(df: pd.DataFrame, rates: np.ndarray, n_boot: int, rng: np.random.Generator) -> dict:
    """Percentile bootstrap of group - reference, resampling all rows (as MetricFrame does)."""
    codes = pd.Categorical(df["g"], categories=LABELS).codes
    p = df["p"].to_numpy()
    idx = rng.integers(0, len(df), (n_boot, len(df)))
    c, pp = codes[idx], p[idx]
    offs = (np.arange(n_boot)[:, None] * 6 + c).ravel()
    n = np.bincount(offs, minlength=n_boot * 6).reshape(n_boot, 6)
    s = np.bincount(offs, weights=pp.ravel(), minlength=n_boot * 6).reshape(n_boot, 6)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = s[:, :5] / n[:, :5] - (s[:, 5] / n[:, 5])[:, None]
    lo, hi = np.nanquantile(diff, [0.025, 0.975], axis=0)
    truth = rates[:5] - rates[5]
    return {"diff_cover": (lo <= truth) & (truth <= hi), "diff_width": hi - lo}


def _fairlearn(df: pd.DataFrame, rates: np.ndarray, n_boot: int, seed: int) -> dict:
    mf = MetricFrame(metrics=selection_rate, y_true=df["y"], y_pred=df["p"], sensitive_features=df["g"],
                     n_boot=n_boot, ci_quantiles=[0.025, 0.975], random_state=seed)
    lo, hi = (float(v) for v in mf.difference_ci())
    return {"gap_cover": lo <= np.ptp(rates) <= hi, "gap_width": hi - lo}


def coverage(reps: int, fl_reps: int, n_boot: int, seed: int = 2026) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Coverage and width per scenario and method; and the per-group difference coverage."""
    rows, per_group = [], []
    for name, rates in SCENARIOS.items():
        rng = np.random.default_rng(seed)
        ours, boot, fl = [], [], []
        t_ours = t_boot = t_fl = 0.0
        for r in range(reps):
            df = _dataset(rng, rates)
            t0 = time.perf_counter()
            ours.append(_ours(df, rates, seed + r))
            t1 = time.perf_counter()
            boot.append(_boot_differences(df, rates, 1000, rng))
            t2 = time.perf_counter()
            t_ours, t_boot = t_ours + t1 - t0, t_boot + t2 - t1
            if r < fl_reps:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fl.append(_fairlearn(df, rates, n_boot, seed + r))
                t_fl += time.perf_counter() - t2

        def agg(items: list, key: str) -> np.ndarray:
            return np.mean([it[key] for it in items], axis=0)

        for label, items, cov_key, w_key, _n, secs in (
            ("ours: Newcombe difference", ours, "diff_cover", "diff_width", reps, t_ours),
            ("ours: posterior difference (robust pooled)", ours, "post_diff_cover", "post_diff_width", reps, None),
            ("bootstrap percentile difference (1,000)", boot, "diff_cover", "diff_width", reps, t_boot),
            ("ours: max-min gap, Bonferroni Clopper-Pearson", ours, "gap_cover", "gap_width", reps, None),
            ("ours: max-min gap, posterior", ours, "post_gap_cover", "post_gap_width", reps, None),
            (f"fairlearn MetricFrame difference_ci (n_boot={n_boot})", fl, "gap_cover", "gap_width", fl_reps, t_fl),
        ):
            if not items:
                continue
            cov = np.atleast_1d(agg(items, cov_key))
            rows.append({
                "scenario": name, "interval": label, "datasets": len(items),
                "coverage (min over groups)": float(cov.min()), "coverage (mean)": float(cov.mean()),
                "mean width": float(np.mean(agg(items, w_key))),
                "seconds per dataset": (secs / len(items)) if secs is not None else np.nan,
            })
            if cov.size > 1:
                per_group.append(pd.Series(cov, index=[f"{g} (n={k})" for g, k in zip(LABELS[:5], SIZES[:5],
                                                                                        strict=True)],
                                           name=f"{name}: {label}"))
    return pd.DataFrame(rows), pd.DataFrame(per_group)


def markdown(frame: pd.DataFrame, digits: int = 3, index: bool = False) -> str:
    """A DataFrame as a Markdown table (no extra dependency)."""
    frame = frame.reset_index() if index else frame

    def cell(v):
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else (f"{v:.{digits}f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}")
        return str(v)

    lines = ["| " + " | ".join(str(c) for c in frame.columns) + " |",
             "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def compas_gaps(min_trials: int = 30) -> pd.DataFrame:
    """COMPAS race x sex x age: gap intervals with and without ``min_trials``, per metric."""
    df = load_compas()
    kw = dict(y_true="two_year_recid", y_pred="predicted_recid", groups=["race", "sex", "age_cat"],
              metrics=["selection_rate", "tpr", "fpr", "ppv"], random_seed=0)
    fits = {
        "every cell, crossed": audit(df, **kw),
        f">= {min_trials} trials, crossed": audit(df, min_trials=min_trials, **kw),
        "every cell, exchangeable": audit(df, model="robust", **kw),
        f">= {min_trials} trials, exchangeable": audit(df, model="robust", min_trials=min_trials, **kw),
    }
    rows = []
    for name, res in fits.items():
        gaps = res.disparities[res.disparities["measure"] == "max-min gap"]
        for g in gaps.itertuples():
            rows.append({"metric": g.metric, "groups": name, "cells": g.group, "gap": g.estimate,
                         "interval": f"[{g.lower:.2f}, {g.upper:.2f}]",
                         "posterior": f"[{g.posterior_lower:.2f}, {g.posterior_upper:.2f}]"})
    return pd.DataFrame(rows).sort_values(["metric", "groups"], kind="stable")


def tiny_group_coverage(reps: int, min_trials: int = 20, seed: int = 7) -> pd.DataFrame:
    """The six groups (equal rates 0.3) plus a group of 5 rows: the gap with and without it."""
    rng = np.random.default_rng(seed)
    sizes, rates = np.append(SIZES, 5), np.full(7, 0.3)
    out = {None: [], min_trials: []}
    for _ in range(reps):
        g = np.repeat(np.append(LABELS, "tiny"), sizes)
        df = pd.DataFrame({"y": 1, "p": rng.binomial(1, np.repeat(rates, sizes)), "g": g})
        seed_ = int(rng.integers(2**31))
        for m in out:
            res = audit(df, y_true="y", y_pred="p", groups="g", metrics="selection_rate",
                        random_seed=seed_, min_trials=m)
            gap = res.disparities.set_index("measure").loc["max-min gap"]
            out[m].append((gap["lower"] <= 0.0 <= gap["upper"], gap["upper"] - gap["lower"]))
    return pd.DataFrame([
        {"gap over": "every group" if m is None else f"groups with >= {m} rows", "datasets": reps,
         "coverage": np.mean([c for c, _ in v]), "mean width": np.mean([w for _, w in v])}
        for m, v in out.items()
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400, help="datasets per scenario (ours, row bootstrap)")
    ap.add_argument("--fairlearn-reps", type=int, default=100, help="datasets per scenario for MetricFrame")
    ap.add_argument("--n-boot", type=int, default=200, help="MetricFrame bootstrap samples")
    ap.add_argument("--quick", action="store_true", help="40 datasets, 10 for MetricFrame (n_boot 100)")
    ap.add_argument("--gaps-only", action="store_true", help="only the tiny-group / min_trials part")
    args = ap.parse_args()
    pd.set_option("display.width", 200)
    print("## Tiny groups and the max-min gap: COMPAS race x sex x age\n")
    print(markdown(compas_gaps()))
    print("\n## Gap coverage with a group of 5 rows (equal rates 0.3, level 0.95)\n")
    print(markdown(tiny_group_coverage(40 if args.quick else 200)))
    if args.gaps_only:
        return
    if args.quick:
        args.reps, args.fairlearn_reps, args.n_boot = 40, 10, 100
    print("## Point estimates against fairlearn MetricFrame.by_group\n")
    print(markdown(parity()))
    table, per_group = coverage(args.reps, args.fairlearn_reps, args.n_boot)
    print("\n## Coverage at level 0.95 (selection rate, 6 groups of 20-2,000 rows)\n")
    print(markdown(table))
    print("\n## Coverage of group - reference (n=2,000) differences, per group\n")
    print(markdown(per_group.T, index=True))


if __name__ == "__main__":
    main()
