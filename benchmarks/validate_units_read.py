"""The read rule of the pooled model over units (``guarantee="average"`` with clusters), measured.

Each dataset has 12 strata of 30 units (items) of 5 rows (answers). A unit's accuracy is
``p_i ~ Beta(r_h k, (1 - r_h) k)`` with ``k = 4`` (within-unit correlation 0.2) and its answers
``a_i ~ Binomial(5, p_i)``; the estimand is ``r_h``, the stratum's expected unit accuracy.

* ``outlier``: stratum 0 at ``r = 0.5``, the others at ``r_h ~ Uniform(0.85, 0.95)`` (drawn per
  dataset). Coverage of the outlying stratum's pooled interval (what ``evaluate`` read before the
  rule) and of its read interval (pooled, or its units' interval where the rule points to it),
  the coverage averaged over the 12 strata with the rule (the "average" guarantee's claim), and
  the width of the typical strata's read interval over their pooled one.
* ``null``: every stratum from the model, ``r_h ~ Beta(0.9 x 30, 0.1 x 30)``: the calibration of
  the leave-one-out p-values under the model (share at most 0.05, 0.20, 0.50: uniform within
  3 Monte Carlo SE, SE from the spread of the per-dataset shares), and the same coverages.
* ``agreement``: on the first datasets of each configuration, the p-values of the two ways of
  leaving a stratum out (``loo="reweight"``, the default, and ``loo="refit"``), and whether they
  give the same reading.

Intervals are 95%; the pooled one is the exact engine's (accurate preset), the units one
:func:`bayeseval._kernels.bounded_mean.units_ci` as ``evaluate`` computes it. Run from the
repository root on one core (about 3 s per dataset; ``--agreement`` datasets about 20 s each)::

    python benchmarks/validate_units_read.py --datasets 500 --null 150 --agreement 6

Results go to ``benchmarks/results/units_read.json`` (a part run with 0 datasets keeps its earlier
result there).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval.counts.counts import Counts
from bayeseval.models.exact_units import UnitsFit, loo_units_p_values
from bayeseval.models.read import units_read_choice
from bayeseval.report.units import unit_bounds

K, U, M, KAPPA, LEVEL = 12, 30, 5, 4.0, 0.95
OUT = Path(__file__).parent / "results" / "units_read.json"


def dataset(rates: np.ndarray, rng: np.random.Generator) -> Counts:
    """Counts with units for strata at ``rates``."""
    p = rng.beta(rates[:, None] * KAPPA, (1 - rates[:, None]) * KAPPA, (K, U))
    a = rng.binomial(M, p)
    frame = pd.DataFrame({"stratum": np.repeat(np.arange(K), U), "unit_successes": a.ravel().astype(float)})
    frame["unit_trials"] = M
    units = frame.groupby(["stratum", "unit_successes", "unit_trials"], as_index=False).size()
    units = units.rename(columns={"size": "units"})
    idx = pd.Index(np.arange(K), name="stratum")
    return Counts(
        pd.Series(a.sum(axis=1).astype(float), index=idx), pd.Series(np.full(K, U * M), index=idx), units=units
    )


def one(counts: Counts, rates: np.ndarray) -> dict:
    """Pooled and read intervals of one dataset, the p-values and the reading."""
    fit = UnitsFit(counts)
    lo_p, hi_p = fit.quantiles([(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    lo_u, hi_u = unit_bounds(counts, LEVEL)
    choice = units_read_choice(counts, LEVEL, fit=fit)
    own = np.asarray(choice.adaptive, bool)
    lo_r, hi_r = np.where(own, lo_u, lo_p), np.where(own, hi_u, hi_p)
    assert choice.check is not None
    return {
        "p": choice.check.p_value,
        "own": own,
        "cover_pooled": (lo_p <= rates) & (rates <= hi_p),
        "cover_read": (lo_r <= rates) & (rates <= hi_r),
        "cover_units": (lo_u <= rates) & (rates <= hi_u),
        "width_pooled": hi_p - lo_p,
        "width_read": hi_r - lo_r,
        "width_units": hi_u - lo_u,
    }


def share(x: np.ndarray) -> list[float]:
    """Mean over datasets of a per-dataset share, and its Monte Carlo SE."""
    x = np.asarray(x, float)
    return [float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x)))]


def run(config: str, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    t0 = time.time()
    for d in range(n):
        if config == "outlier":
            rates = np.concatenate([[0.5], rng.uniform(0.85, 0.95, K - 1)])
        else:
            rates = rng.beta(0.9 * 30, 0.1 * 30, K)
        rows.append(one(dataset(rates, rng), rates))
        if (d + 1) % 50 == 0:
            print(f"{config}: {d + 1}/{n} datasets, {time.time() - t0:.0f} s", flush=True)
    get = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    out = {"datasets": n, "seed": seed, "seconds": time.time() - t0}
    out["average_coverage_pooled"] = share(get["cover_pooled"].mean(axis=1))
    out["average_coverage_read"] = share(get["cover_read"].mean(axis=1))
    out["average_coverage_units"] = share(get["cover_units"].mean(axis=1))
    out["share_reading_units"] = share(get["own"].mean(axis=1))
    p = get["p"]
    for t in (0.05, 0.2, 0.5):
        out[f"p_at_most_{t:g}"] = share((p <= t).mean(axis=1))
    if config == "outlier":
        out["outlier_coverage_pooled"] = share(get["cover_pooled"][:, 0])
        out["outlier_coverage_read"] = share(get["cover_read"][:, 0])
        out["outlier_reads_units"] = share(get["own"][:, 0])
        out["typical_p_at_most_0.2"] = share((p[:, 1:] <= 0.2).mean(axis=1))
        typical = slice(1, K)
    else:
        typical = slice(0, K)
    wp, wr, wu = (get[k][:, typical] for k in ("width_pooled", "width_read", "width_units"))
    out["typical_width_pooled"] = float(wp.mean())
    out["typical_width_read"] = float(wr.mean())
    out["typical_width_units"] = float(wu.mean())
    out["typical_width_ratio_read_over_pooled"] = float(wr.mean() / wp.mean())
    out["typical_coverage_read"] = share(get["cover_read"][:, typical].mean(axis=1))
    return out


def agreement(n: int, seed: int) -> dict:
    """The reweighted and refitted leave-one-out p-values on the same datasets."""
    rng = np.random.default_rng(seed)
    pr, pf = [], []
    for d in range(n):
        rates = (
            np.concatenate([[0.5], rng.uniform(0.85, 0.95, K - 1)]) if d % 2 == 0 else rng.beta(0.9 * 30, 0.1 * 30, K)
        )
        counts = dataset(rates, rng)
        pr.append(np.exp(loo_units_p_values(counts, loo="reweight", fit=UnitsFit(counts))[0]))
        pf.append(np.exp(loo_units_p_values(counts, loo="refit")[0]))
    a, b = np.concatenate(pr), np.concatenate(pf)
    return {
        "datasets": n,
        "strata": int(a.size),
        "max_abs_difference": float(np.max(np.abs(a - b))),
        "same_reading_at_0.2": float(np.mean((a <= 0.2) == (b <= 0.2))),
        "largest_p_where_refit_below_1e-3": float(np.max(np.where(b < 1e-3, a, 0.0))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=500)
    ap.add_argument("--null", type=int, default=250)
    ap.add_argument("--agreement", type=int, default=10)
    ap.add_argument("--seed", type=int, default=20261208)
    args = ap.parse_args()
    OUT.parent.mkdir(exist_ok=True)
    results: dict = json.loads(OUT.read_text()) if OUT.exists() else {}  # a run of one part keeps the others
    for name, n, seed in (("outlier", args.datasets, args.seed), ("null", args.null, args.seed + 1)):
        if n:
            results[name] = run(name, n, seed)
            OUT.write_text(json.dumps(results, indent=2) + "\n")
            print(name, json.dumps(results[name], indent=2), flush=True)
    if args.agreement:
        results["agreement"] = agreement(args.agreement, args.seed + 2)
        OUT.write_text(json.dumps(results, indent=2) + "\n")
        print("agreement", json.dumps(results["agreement"], indent=2), flush=True)


if __name__ == "__main__":
    main()
