"""Per-category coverage of the difference between two models on the same items.

Two models answer the same items in 6 categories of 20-200 items, 1-5 epochs each. Item ``i``
of category ``c`` has model a's accuracy ``p_i ~ Beta(mu_c k, (1 - mu_c) k)`` (intra-class
correlation 0.3, ``k = 1/0.3 - 1``) and model b's accuracy ``s_c q_i`` where ``q_i = p_i``
with probability 0.7 and an independent draw of the same Beta otherwise (the two models find
the same items hard, not perfectly). Each epoch scores Bernoulli(p) (``binary``) or
(Bernoulli(p) + Bernoulli(p)) / 2 (``graded``: partial credit 0.5). The estimand is the
difference in item-averaged expected score, ``D_c = mu_c (1 - s_c)`` exactly; two categories
have ``D_c = 0``.

Per category, on the same seeded datasets (level 0.95, no multiplicity adjustment: the
per-category interval itself):

(a) ``betting``: ours, :func:`bayeseval.compare_models` with ``adjust="none"`` (the betting
    interval on ``(d_i + 1)/2`` of the item differences; computed here with the same kernel
    call vectorised over datasets, and checked equal to ``compare_models`` on dataset 0);
(b) ``t_items``: the paired t interval on item means (errorbars ``paired_compare`` on the
    epoch-averaged item scores; Inspect's paired route and lm-eval's stderr are the same CLT);
(c) ``t_rows``: the paired t interval on rows, epoch ``e`` of a paired with epoch ``e`` of b,
    every row independent (errorbars ``paired_compare`` on the answers without clusters: the
    default when epochs are simply rows of the log); equal to (b) with one epoch;
(d) ``t_rows_cluster``: the same with ``clusters=item`` (errorbars' cluster-robust SE, t
    with G - 1 degrees of freedom);
(e) ``bootstrap``: truescore ``paired_bootstrap`` on item means (percentile, resamples as
    given by ``--resamples``, default 1,000).

When ``--packages DIR`` names a site-packages folder holding ``errorbars`` and ``truescore``
(``python -m venv /tmp/cmpvenv && /tmp/cmpvenv/bin/pip install errorbars truescore``), (b)-(e)
are computed by those packages; otherwise by the same formulas written here (t: mean +/-
t_{n-1} sd / sqrt(n); bootstrap: percentile of resampled means), and the table says which.

Coverage has Monte Carlo SE ``sqrt(c (1 - c) / datasets)`` (0.0069 at 0.95 with 1,000
datasets); width is the mean of upper - lower.

Run from the repository root::

    python benchmarks/compare_coverage.py                        # 1,000 datasets per configuration
    python benchmarks/compare_coverage.py --packages /tmp/cmpvenv/lib/python3.11/site-packages
    python benchmarks/compare_coverage.py --quick                 # 200 datasets, a smoke run

The table goes to ``benchmarks/results/compare_coverage.csv`` (``--quick``:
``compare_coverage_quick.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._kernels.bounded_mean import units_ci
from bayeseval.estimate.paired import compare_models

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LEVEL = 0.95
ICC = 0.3
SHARED = 0.7
ITEMS = (20, 35, 50, 80, 120, 200)
MUS = (0.55, 0.7, 0.8, 0.9, 0.95, 0.97)
SCALES = (0.9, 1.0, 0.95, 0.9, 1.0, 0.97)
CONFIGS = (("binary", 1), ("binary", 3), ("binary", 5), ("graded", 3))
METHODS = ("betting", "t_items", "t_rows", "t_rows_cluster", "bootstrap")


def simulate(kind: str, epochs: int, n_sets: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per category: scores of a and b, arrays (n_sets, items, epochs)."""
    rng = np.random.default_rng(seed)
    k = 1.0 / ICC - 1.0
    out = []
    for n, mu, s in zip(ITEMS, MUS, SCALES, strict=True):
        p = rng.beta(mu * k, (1 - mu) * k, size=(n_sets, n))
        other = rng.beta(mu * k, (1 - mu) * k, size=(n_sets, n))
        q = s * np.where(rng.random((n_sets, n)) < SHARED, p, other)
        scores = []
        for prob in (p, q):
            pe = np.broadcast_to(prob[:, :, None], (n_sets, n, epochs))
            y = (rng.random(pe.shape) < pe).astype(float)
            if kind == "graded":
                y = (y + (rng.random(pe.shape) < pe)) / 2.0
            scores.append(y)
        out.append((scores[0], scores[1]))
    return out


def betting(data: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """Per category (n_sets, 2) intervals of compare_models(adjust="none"), one kernel call per category."""
    out = []
    for a, b in data:
        z = (a.mean(axis=2) - b.mean(axis=2) + 1.0) / 2.0  # (n_sets, items)
        sets = np.repeat(np.arange(z.shape[0]), z.shape[1])
        hist = (
            pd.DataFrame({"key": sets, "unit_successes": z.ravel(), "unit_trials": 1})
            .groupby(["key", "unit_successes", "unit_trials"])
            .size()
            .rename("units")
            .reset_index()
        )
        ci = units_ci(hist, "key", LEVEL).sort_index()
        out.append(np.c_[2 * ci["lower"].to_numpy() - 1, 2 * ci["upper"].to_numpy() - 1])
    return out


def check_against_compare_models(data: list[tuple[np.ndarray, np.ndarray]], ours: list[np.ndarray]) -> None:
    """Dataset 0 through the public function gives the same per-category intervals."""
    rows = []
    for c, (a, b) in enumerate(data):
        n, e = a.shape[1], a.shape[2]
        for name, y in (("a", a[0]), ("b", b[0])):
            rows.append(
                pd.DataFrame(
                    {
                        "model": name,
                        "category": f"c{c}",
                        "item": np.repeat(np.arange(n), e),
                        "outcome": y.ravel(),
                    }
                )
            )
    res = compare_models(pd.concat(rows), strata="category", reference="b", adjust="none").table
    res = res[res["stratum"] != "(all)"].set_index("stratum")
    for c in range(len(data)):
        got = res.loc[f"c{c}", ["lower", "upper"]].to_numpy(dtype=float)
        assert np.allclose(got, ours[c][0], atol=1e-9), (c, got, ours[c][0])


def _t(d: np.ndarray, clusters: np.ndarray | None = None) -> tuple[float, float]:
    n = d.size
    m = d.mean()
    if clusters is None:
        se, dof = d.std(ddof=1) / np.sqrt(n), n - 1
    else:  # CR1 on the mean: G/(G-1) sum_g (sum_{i in g} (d_i - m))^2 / n^2
        g = np.unique(clusters).size
        sums = np.bincount(clusters, weights=d - m)
        se, dof = np.sqrt(g / (g - 1) * (sums**2).sum()) / n, g - 1
    h = stats.t.ppf(0.5 + LEVEL / 2, dof) * se
    return m - h, m + h


def others(data: list[tuple[np.ndarray, np.ndarray]], packages: bool, resamples: int, seed: int) -> dict:
    """Intervals of (b)-(e): {method: per category (n_sets, 2)}."""
    if packages:
        from errorbars.compare import paired_compare
        from truescore.compare import paired_bootstrap
    out = {m: [] for m in METHODS[1:]}
    rng = np.random.default_rng(seed)
    for a, b in data:
        n_sets, n, e = a.shape
        res = {m: np.empty((n_sets, 2)) for m in METHODS[1:]}
        item = np.repeat(np.arange(n), e)
        for s in range(n_sets):
            ia, ib = a[s].mean(axis=1), b[s].mean(axis=1)
            ra, rb = a[s].ravel(), b[s].ravel()
            if packages:
                r = paired_compare(ia, ib, confidence=LEVEL)
                res["t_items"][s] = r.ci_low, r.ci_high
                r = paired_compare(ra, rb, clusters=item, confidence=LEVEL)
                res["t_rows"][s] = r.ci_low, r.ci_high
                res["t_rows_cluster"][s] = r.ci_low_clustered, r.ci_high_clustered
                r = paired_bootstrap(ia, ib, alpha=1 - LEVEL, n_bootstrap=resamples, seed=s)
                res["bootstrap"][s] = r.low, r.high
            else:
                d = ia - ib
                res["t_items"][s] = _t(d)
                res["t_rows"][s] = _t(ra - rb)
                res["t_rows_cluster"][s] = _t(ra - rb, item)
                boot = d[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
                res["bootstrap"][s] = np.percentile(boot, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
        for m in METHODS[1:]:
            out[m].append(res[m])
    return out


def run(n_sets: int, packages: bool, resamples: int) -> pd.DataFrame:
    rows = []
    for j, (kind, epochs) in enumerate(CONFIGS):
        t0 = time.perf_counter()
        data = simulate(kind, epochs, n_sets, seed=46_000 + j)
        t1 = time.perf_counter()
        ours = betting(data)
        t_ours = time.perf_counter() - t1
        check_against_compare_models(data, ours)
        intervals = {"betting": ours, **others(data, packages, resamples, seed=j)}
        for c, (n, mu, s) in enumerate(zip(ITEMS, MUS, SCALES, strict=True)):
            truth = mu * (1 - s)
            for m in METHODS:
                ci = intervals[m][c]
                cov = float(np.mean((ci[:, 0] <= truth + 1e-12) & (truth - 1e-12 <= ci[:, 1])))
                rows.append(
                    {
                        "outcome": kind,
                        "epochs": epochs,
                        "category": c + 1,
                        "items": n,
                        "mu_a": mu,
                        "difference": round(truth, 4),
                        "method": m,
                        "coverage": cov,
                        "mc_se": float(np.sqrt(max(cov * (1 - cov), LEVEL * (1 - LEVEL)) / n_sets)),
                        "width": float(np.mean(ci[:, 1] - ci[:, 0])),
                    }
                )
        print(
            f"{kind} x {epochs} epochs: {n_sets} datasets in {time.perf_counter() - t0:.0f} s "
            f"(betting intervals {t_ours:.1f} s for {6 * n_sets} categories)",
            file=sys.stderr,
        )
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> str:
    cov = table.pivot_table(index=["outcome", "epochs", "items", "difference"], columns="method", values="coverage")
    wid = table.pivot_table(index=["outcome", "epochs", "items", "difference"], columns="method", values="width")
    both = cov[list(METHODS)].round(3).astype(str) + " / " + wid[list(METHODS)].round(3).astype(str)
    ratio = wid["betting"] / wid["bootstrap"]
    lines = [
        "coverage / width per category (level 0.95)",
        both.reset_index().to_string(index=False),
        "",
        f"min coverage per method: {cov.min().round(3).to_dict()}",
        f"betting width / bootstrap width: min {ratio.min():.2f}, median {ratio.median():.2f}, max {ratio.max():.2f}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000, help="seeded datasets per configuration")
    parser.add_argument("--quick", action="store_true", help="200 datasets: a smoke run")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of (e)")
    parser.add_argument("--packages", default=None, help="site-packages folder with errorbars and truescore")
    args = parser.parse_args(argv)
    if args.packages:
        sys.path.append(args.packages)
    n_sets = 200 if args.quick else args.datasets
    table = run(n_sets, packages=bool(args.packages), resamples=args.resamples)
    table["implementation"] = "errorbars/truescore" if args.packages else "formulas in this script"
    table.loc[table["method"] == "betting", "implementation"] = "bayeseval"
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("compare_coverage_quick.csv" if args.quick else "compare_coverage.csv")
    table.to_csv(out, index=False)
    print(summary(table))
    print(f"\ntable written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
