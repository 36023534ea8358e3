"""Benchmark: the crossed-factor Laplace engine against PyMC's NUTS on the same model.

Data: COMPAS (``bayeseval.datasets.load_compas``), error rate of the score's binarisation
(``predicted_recid`` against ``two_year_recid``) per race x sex x age cell: 36 cells, two of
them empty (Asian and Native American women under 25), several with one to three people.

Model (both engines): ``logit theta_c = alpha + sum_f sigma_f z_f[level_f(c)] + sigma z_c``,
``alpha ~ N(0, 1.5)``, zero-sum ``z_f``, ``sigma_f, sigma ~ HalfNormal(1)``:
``fit_pymc(model="logit_normal", factors=[...])`` (4 chains x 1,000 draws after 1,000 tuning
steps, ``target_accept=0.95``, one core) against :func:`bayeseval.models.crossed.fit_crossed`.

A second reference, free of the sampler's Monte Carlo noise on interval ends, is importance
sampling of the exact posterior (``importance_reference``): 40,000 draws of the log standard
deviations from a multivariate t (5 degrees of freedom, covariance 1.3 times the inverse
curvature at the mode) and of the latent field from its Gaussian approximation at each draw,
weighted by exact posterior over proposal density (effective sample size about 20,000).

Prints, per cell, the posterior mean and 95% equal-tailed interval of both, the largest
absolute differences, the wall time of both in the same run (the PyMC time includes model
compilation, as a user sees it; the Laplace time is the median of 5 fits, each with 4,000
joint draws) and their ratio. Targets: means within 0.01, interval ends within 0.02,
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


def importance_reference(
    counts: Counts, factors: list[str] = FACTORS, size: int = 40_000, seed: int = 0
) -> tuple[pd.DataFrame, float]:
    """Posterior mean and 95% interval per cell by importance sampling; and the ESS."""
    from scipy import special, stats

    from bayeseval._kernels import crossed as cr

    cells = counts.strata
    codes = [pd.factorize(cells.get_level_values(f), sort=True)[0] for f in factors]
    design = cr.build_design(codes, [int(k.max()) + 1 for k in codes], factors, True)
    s, n = counts.successes.to_numpy(float), counts.trials.to_numpy(float)
    h0, x0 = cr._hyper_mode(design, s, n)
    cov = np.linalg.inv(cr._hessian(h0, design, s, n, x0))
    rng = np.random.default_rng(seed)
    proposal = stats.multivariate_t(h0, 1.3 * cov, df=5)
    h = proposal.rvs(size, random_state=rng)
    f = cr.inner_modes(h, design, s, n, x0)
    B = design.fixed
    chol = np.linalg.cholesky(f.schur)
    z = rng.standard_normal((size, B.shape[1]))
    db = np.linalg.solve(np.swapaxes(chol, 1, 2), z[..., None])[..., 0]
    zg = rng.standard_normal((size, B.shape[0]))
    b = f.b + db
    g = f.gamma - (f.site / f.diag) * (db @ B.T) + zg / np.sqrt(f.diag)
    log_q = (
        proposal.logpdf(h)
        + np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), 1)
        - 0.5 * np.sum(z * z, 1)
        + 0.5 * np.sum(np.log(f.diag), 1)
        - 0.5 * np.sum(zg * zg, 1)
    )
    d_b, d_g = design.prior_precision(h)
    eta = b @ B.T + g
    log_p = (
        cr._binomial_loglik(eta, s, n).sum(1)
        - 0.5 * np.sum(d_b * b * b, 1)
        + 0.5 * np.sum(np.log(d_b), 1)
        - 0.5 * d_g * np.sum(g * g, 1)
        + 0.5 * B.shape[0] * np.log(d_g)
        + cr.log_sd_prior(h)
    )
    w = np.exp(log_p - log_q - np.max(log_p - log_q))
    w /= w.sum()
    theta = special.expit(eta)

    def quantile(x, p):
        order = np.argsort(x)
        return np.interp(p, np.cumsum(w[order]), x[order])

    frame = pd.DataFrame(
        {
            "mean": w @ theta,
            "lower": [quantile(theta[:, k], 0.025) for k in range(theta.shape[1])],
            "upper": [quantile(theta[:, k], 0.975) for k in range(theta.shape[1])],
        },
        index=cells,
    )
    return frame, float(1.0 / np.sum(w**2))


def compas_counts(factors: list[str] = FACTORS, metric: str = "error_rate") -> Counts:
    """COMPAS counts per cell of the full cross of ``factors`` (empty cells with 0 trials)."""
    counts = tabulate(load_compas(), y_true="two_year_recid", y_pred="predicted_recid", strata=factors, metric=metric)
    full = pd.MultiIndex.from_product(counts.strata.levels, names=counts.strata.names)
    return Counts.from_arrays(counts.successes.reindex(full, fill_value=0), counts.trials.reindex(full, fill_value=0))


def compare(
    seed: int = 20240601, chains: int = 4, draws_per_chain: int = 1000, tune: int = 1000, repeats: int = 5
) -> dict:
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
        nuts = fit_pymc(
            counts,
            model="logit_normal",
            factors=FACTORS,
            chains=chains,
            draws=chains * draws_per_chain,
            tune=tune,
            target_accept=0.95,
            random_seed=seed,
            cores=1,
        )
    pymc_seconds = time.perf_counter() - start
    theta = nuts.theta
    table = pd.DataFrame(
        {
            "trials": counts.trials,
            "nuts_mean": theta.mean(axis=0),
            "laplace_mean": laplace["mean"],
            "nuts_lower": np.quantile(theta, 0.025, axis=0),
            "laplace_lower": laplace["lower"],
            "nuts_upper": np.quantile(theta, 0.975, axis=0),
            "laplace_upper": laplace["upper"],
        },
        index=counts.strata,
    )
    diffs = {
        "mean": float(np.max(np.abs(table.nuts_mean - table.laplace_mean))),
        "lower": float(np.max(np.abs(table.nuts_lower - table.laplace_lower))),
        "upper": float(np.max(np.abs(table.nuts_upper - table.laplace_upper))),
    }
    laplace_seconds = statistics.median(times)
    reference, ess = importance_reference(counts)
    is_diffs = {k: float(np.max(np.abs(reference[k] - laplace[k]))) for k in ("mean", "lower", "upper")}
    return {
        "importance_max_abs_diff": is_diffs,
        "importance_ess": ess,
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
    print(f"\nlargest |NUTS - Laplace|: mean {d['mean']:.4f}, lower {d['lower']:.4f}, upper {d['upper']:.4f}")
    d = out["importance_max_abs_diff"]
    print(
        f"largest |importance sampling - Laplace| (ESS {out['importance_ess']:.0f}): mean "
        f"{d['mean']:.4f}, lower {d['lower']:.4f}, upper {d['upper']:.4f}"
    )
    diag = out["nuts_diagnostics"]
    print(
        f"NUTS: R-hat max {diag['rhat_max']:.3f}, bulk ESS min {diag['ess_bulk_min']:.0f}, "
        f"tail ESS min {diag['ess_tail_min']:.0f}, divergences {diag['divergences']}"
    )
    print(f"Laplace grid points: {out['grid_points']}")
    print(
        f"time: Laplace {out['laplace_seconds']:.3f} s (median of 5), PyMC "
        f"{out['pymc_seconds']:.1f} s, ratio {out['ratio']:.0f}x"
    )


if __name__ == "__main__":
    main()
