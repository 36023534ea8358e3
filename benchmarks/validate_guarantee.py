"""Validation: per-stratum coverage and width of the report's two guarantees.

``evaluate(..., guarantee="stratum")`` gives each stratum its adaptive interval (exact tests
whose tail split comes from a leave-one-out prior built from the other strata);
``guarantee="average"`` gives the interval the read rule points to (the pooled posterior, or
the adaptive interval where the stratum's count looks atypical). This script measures, for
one stratum under study among other strata drawn from a seed:

1. **coverage** of the stratum's interval under both guarantees. The other strata are drawn
   (``--datasets`` seeded datasets); given them, the coverage is exact: every own count
   ``0..n`` is enumerated with its Binomial(n, p) probability. The interval of each count
   is what the report shows: ``fab_intervals_all_counts`` under the stratum's leave-one-out
   prior for ``"stratum"`` (the tests check that it equals ``evaluate``'s), and
   ``Posterior.summary(read=True)``'s ``read_lower``/``read_upper`` for ``"average"`` (and its
   ``lower``/``upper``, the pooled interval) (the report adds
   the strata its model check flags, which this leaves out). Mean over datasets, with its
   Monte Carlo standard error;
2. **expected width** of the adaptive interval against Clopper-Pearson and Wilson, exact
   given the other strata (mean over the same datasets), for a stratum like the others and
   for a low-side outlier, at n = 20 to 1,000.

Scenarios (the stratum under study last):

- ``low outlier``: 12 strata at 0.08-0.12 with 50-500 trials; the stratum at 0.01, 40 trials;
- ``masking``: 10 strata at 0.06-0.10 with 50-500 trials, a second stratum at 0.30 with 25
  trials (its count drawn); the stratum at 0.30, 25 trials;
- ``exchangeable``: 12 strata at 0.08-0.12; the stratum at 0.10, 40 trials.

Usage::

    .venv/bin/python benchmarks/validate_guarantee.py              # 40 datasets (~3 CPU-min)
    .venv/bin/python benchmarks/validate_guarantee.py --datasets 10
"""

from __future__ import annotations

import argparse
import os
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from bayeseval import proportion_ci  # noqa: E402
from bayeseval._kernels.betabinom import beta_mixture_predictive  # noqa: E402
from bayeseval._kernels.fab import DIFFUSE_WEIGHT, fab_intervals_all_counts
from bayeseval._kernels.loo_prior import loo_beta_mixture
from bayeseval.models import fit_hierarchical  # noqa: E402

LEVEL = 0.95
SCENARIOS = {  # name: (number of others, their rate range, extra strata (rate, trials), own rate, own n)
    "low outlier": (12, (0.08, 0.12), [], 0.01, 40),
    "masking": (10, (0.06, 0.10), [(0.30, 25)], 0.30, 25),
    "exchangeable": (12, (0.08, 0.12), [], 0.10, 40),
}


def others(seed: int, k: int, rates: tuple, extra: list) -> tuple[np.ndarray, np.ndarray]:
    """The other strata's counts, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    n = rng.integers(50, 500, k)
    s = rng.binomial(n, rng.uniform(*rates, k))
    for rate, trials in extra:
        n, s = np.append(n, trials), np.append(s, rng.binomial(trials, rate))
    return s, n


def adaptive_all_counts(s: np.ndarray, n: np.ndarray, own_n: int):
    """The adaptive interval of every own count 0..own_n (the stratum appended last)."""
    ss, nn = np.append(s, 0), np.append(n, own_n)
    rows = np.zeros(ss.size, bool)
    rows[-1] = True
    w, a, b = loo_beta_mixture(ss, nn, rows=rows)
    pmf = beta_mixture_predictive(own_n, w[-1], a[-1], b[-1])
    return fab_intervals_all_counts(own_n, pmf, LEVEL, diffuse_weight=DIFFUSE_WEIGHT)


def pooled_all_counts(s: np.ndarray, n: np.ndarray, own_n: int) -> tuple:
    """For every own count: the interval read (pooled, or adaptive where atypical) and the
    pooled credible interval, as ``(read_lower, read_upper, lower, upper)`` arrays."""
    out = np.empty((4, own_n + 1))
    for x in range(own_n + 1):
        post = fit_hierarchical(np.append(s, x), np.append(n, own_n), random_seed=0)
        row = post.summary(level=LEVEL, read=True).iloc[-1]
        out[:, x] = row[["read_lower", "read_upper", "lower", "upper"]].to_numpy(float)
    return tuple(out)


def coverage(lo: np.ndarray, hi: np.ndarray, p: float) -> float:
    x = np.arange(lo.size)
    return float((stats.binom.pmf(x, lo.size - 1, p) * ((lo <= p) & (p <= hi))).sum())


def expected_width(lo: np.ndarray, hi: np.ndarray, p: float) -> float:
    x = np.arange(lo.size)
    return float((stats.binom.pmf(x, lo.size - 1, p) * (hi - lo)).sum())


def coverage_table(datasets: int) -> None:
    print(f"Coverage of the stratum under study ({datasets} seeded datasets, exact given them; level {LEVEL})")
    print(f"{'scenario':<14} {'stratum':>16} {'average':>16} {'pooled':>16}")
    for name, (k, rates, extra, p, own_n) in SCENARIOS.items():
        cov = {"stratum": [], "average": [], "pooled": []}
        for seed in range(datasets):
            s, n = others(seed, k, rates, extra)
            iv = adaptive_all_counts(s, n, own_n)
            cov["stratum"].append(coverage(iv.lower, iv.upper, p))
            lo, hi, plo, phi = pooled_all_counts(s, n, own_n)
            cov["average"].append(coverage(lo, hi, p))
            cov["pooled"].append(coverage(plo, phi, p))
        cells = [f"{np.mean(v):.3f} ({np.std(v, ddof=1) / np.sqrt(len(v)):.3f})" for v in cov.values()]
        print(f"{name:<14} " + " ".join(f"{c:>16}" for c in cells))


def width_table(datasets: int) -> None:
    print()
    print(
        f"Expected width of the adaptive interval / Clopper-Pearson and / Wilson ({datasets} "
        "datasets of 12 other strata at 0.08-0.12, exact given them)"
    )
    print(f"{'n':>6} {'alike 0.10 /CP':>15} {'/Wilson':>8} {'low 0.01 /CP':>13} {'/Wilson':>8} {'min coverage':>13}")
    for own_n in (20, 50, 100, 200, 500, 1000):
        x = np.arange(own_n + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cp = proportion_ci(x, np.full_like(x, own_n), level=LEVEL, method="clopper_pearson")
            wi = proportion_ci(x, np.full_like(x, own_n), level=LEVEL, method="wilson")
        ratios, worst = {}, 1.0
        for seed in range(datasets):
            s, n = others(seed, 12, (0.08, 0.12), [])
            iv = adaptive_all_counts(s, n, own_n)
            for p in (0.10, 0.01):
                w = expected_width(iv.lower, iv.upper, p)
                ratios.setdefault((p, "cp"), []).append(w / expected_width(*cp, p))
                ratios.setdefault((p, "wilson"), []).append(w / expected_width(*wi, p))
            grid = np.linspace(0.0, 1.0, 1001)
            worst = min(worst, min(coverage(iv.lower, iv.upper, q) for q in grid))
        cells = [np.mean(ratios[key]) for key in ((0.10, "cp"), (0.10, "wilson"), (0.01, "cp"), (0.01, "wilson"))]
        print(f"{own_n:>6} {cells[0]:>15.3f} {cells[1]:>8.3f} {cells[2]:>13.3f} {cells[3]:>8.3f} {worst:>13.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=40, help="seeded datasets of the other strata")
    ap.add_argument("--widths-only", action="store_true", help="skip the coverage table")
    args = ap.parse_args()
    if not args.widths_only:
        coverage_table(args.datasets)
    width_table(args.datasets)


if __name__ == "__main__":
    main()
