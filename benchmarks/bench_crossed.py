"""Benchmark: the crossed-factor Laplace engine against PyMC's NUTS on the same model.

Data: COMPAS (``bayeseval.datasets.load_compas``), error rate of the score's binarisation
(``predicted_recid`` against ``two_year_recid``) per race x sex x age cell: 36 cells, two of
them empty (Asian and Native American women under 25), several with one to three people.

Model (both engines): ``logit theta_c = alpha + sum_f sigma_f z_f[level_f(c)] + sigma z_c``,
``alpha ~ N(0, 1.5)``, zero-sum ``z_f``, ``sigma_f, sigma ~ HalfNormal(1)``:
``fit_pymc(model="logit_normal", factors=[...])`` (4 chains x 1,000 draws after 1,000 tuning
steps, ``target_accept=0.95``, one core) against :func:`bayeseval.models.crossed.fit_crossed`.

Prints, per cell, the posterior mean and 95% equal-tailed interval of both, the largest
absolute differences, the wall time of both in the same run (the PyMC time includes model
compilation, as a user sees it; the Laplace time is the median of 5 fits, each with 4,000
joint draws) and their ratio. Targets (issue 14): means within 0.01, interval ends within 0.02,
at least 100 times faster.

Usage::

    python benchmarks/bench_crossed.py [--seed 20240601]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import pandas as pd

from bayeseval import ConvergenceWarning, Counts, tabulate
from bayeseval.datasets import load_compas
from bayeseval.models.crossed import fit_crossed

FACTORS = ["race", "sex", "age_cat"]


def compas_counts(factors: list[str] = FACTORS, metric: str = "error_rate") -> Counts:
    """COMPAS counts per cell of the full cross of ``factors`` (empty cells with 0 trials)."""
    counts = tabulate(load_compas(), y_true="two_year_recid", y_pred="predicted_recid",
                      strata=factors, metric=metric)
    full = pd.MultiIndex.from_product(counts.strata.levels, names=counts.strata.names)
    return Counts.from_arrays(counts.successes.reindex(full, fill_value=0),
                              counts.trials.reindex(full, fill_value=0))


def compare(seed: int = 20240601, chains: int = 4, draws_per_chain: int = 1000,
            tune: int = 1000, repeats: int = 5) -> dict:
    """Fit both engines on COMPAS; return the agreement table, the times and diagnostics."""
    from bayeseval.models.pymc import fit_pymc

    counts = compas_counts()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit = fit_crossed(counts, factors=FACTORS, random_seed=seed)
        times.append(time.perf_counter() - start)
    laplace = fit.table
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        nuts = fit_pymc(counts, model="logit_normal", factors=FACTORS, chains=chains,
                        draws=chains * draws_per_chain, tune=tune, target_accept=0.95,
                        random_seed=seed, cores=1)
    pymc_seconds = time.perf_counter() - start
    theta = nuts.theta
    table = pd.DataFrame({
        "trials": counts.trials,
        "nuts_mean": theta.mean(axis=0),
        "laplace_mean": laplace["mean"],
        "nuts_lower": np.quantile(theta, 0.025, axis=0),
        "laplace_lower": laplace["lower"],
        "nuts_upper": np.quantile(theta, 0.975, axis=0),
        "laplace_upper": laplace["upper"],
    }, index=counts.strata)
    diffs = {
        "mean": float(np.max(np.abs(table.nuts_mean - table.laplace_mean))),
        "lower": float(np.max(np.abs(table.nuts_lower - table.laplace_lower))),
        "upper": float(np.max(np.abs(table.nuts_upper - table.laplace_upper))),
    }
    laplace_seconds = statistics.median(times)
    return {
        "table": table,
        "max_abs_diff": diffs,
        "laplace_seconds": laplace_seconds,
        "pymc_seconds": pymc_seconds,
        "ratio": pymc_seconds / laplace_seconds,
        "grid_points": fit.posterior.diagnostics["grid_points"],
        "nuts_diagnostics": nuts.diagnostics,
        "warnings": [str(w.message) for w in caught],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    out = compare(seed=args.seed)
    with pd.option_context("display.width", 200, "display.max_rows", 100):
        print(out["table"].round(3).to_string())
    d = out["max_abs_diff"]
    print(f"\nlargest |NUTS - Laplace|: mean {d['mean']:.4f}, lower {d['lower']:.4f}, "
          f"upper {d['upper']:.4f}")
    diag = out["nuts_diagnostics"]
    print(f"NUTS: R-hat max {diag['rhat_max']:.3f}, bulk ESS min {diag['ess_bulk_min']:.0f}, "
          f"tail ESS min {diag['ess_tail_min']:.0f}, divergences {diag['divergences']}")
    print(f"Laplace grid points: {out['grid_points']}")
    print(f"time: Laplace {out['laplace_seconds']:.3f} s (median of 5), PyMC "
          f"{out['pymc_seconds']:.1f} s, ratio {out['ratio']:.0f}x")


if __name__ == "__main__":
    main()
