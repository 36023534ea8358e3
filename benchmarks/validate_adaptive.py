"""Validation of the adaptive (FAB) interval and of the leave-one-out conflict check.

Prints four tables (Markdown):

1. Coverage of the adaptive interval by EXACT ENUMERATION over the stratum's own count
   (its prior depends only on the other strata): minimum over 2,001 true rates plus
   every interval end (and a point just inside and outside each end), for n in
   {5, 10, 20, 50, 100, 500}, levels 0.90 and 0.95 and several priors, some centred
   at the truth, some far from it.
2. Mean width (expected under the true rate, exact) against Clopper-Pearson and
   Wilson, when the group is like the others (truth 0.08) and when it is an outlier
   (truth 0.40), with the leave-one-out prior of 15 other strata near 0.08.
3. Conflict check by seeded simulation: power for an outlier at 0.40 with 20 trials
   among 10-20 strata near 0.08 (50-500 trials each) and false-flag rates when every
   stratum is near 0.08 (per dataset and per stratum), for the default rule (Holm over
   strata, mid-p) and the alternatives.
4. Coverage of the outlier's adaptive interval in the same simulation (exact given the
   other strata: enumeration over the outlier's own count).
5. What the grid of ``split_trials`` costs: above 100 trials the split is optimised for
   the nearest smaller value on a geometric grid (ratio 1.1) rather than for the
   stratum's own number of trials. Expected width (exact, under the prior-predictive
   distribution and at five true rates) against the split optimised for n itself, and
   the minimum coverage (exact enumeration), for n from 105 to 20,000 (above 2,000 the
   split is optimised for 1,919 trials whatever n), smallest and largest over the priors
   of table 1 (``--split-grid`` prints only this table; ``--sizes`` picks the n).

Run from the repository root::

    python benchmarks/validate_adaptive.py            # about 5-10 minutes
    python benchmarks/validate_adaptive.py --quick    # smoke version
    python benchmarks/validate_adaptive.py --split-grid   # table 5 only (about 1 minute)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.conflict import holm_flags, predictive_p_values
from bayeseval._kernels.fab import (
    MAX_SPLIT_TRIALS,
    FABInterval,
    _invert,
    fab_intervals_all_counts,
    fab_split,
    split_trials,
)
from bayeseval._kernels.loo_prior import loo_beta_mixture

SIZES = (5, 10, 20, 50, 100, 500)
LEVELS = (0.90, 0.95)


def wilson(x: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval (closed form)."""
    z = stats.norm.ppf(0.5 + level / 2)
    phat = x / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def coverage(lower: np.ndarray, upper: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    """Exact coverage at each true rate in ``p`` of intervals indexed by the count."""
    pmf = stats.binom.pmf(np.arange(n + 1)[:, None], n, p[None, :])
    inside = (lower[:, None] <= p[None, :]) & (p[None, :] <= upper[:, None])
    return (pmf * inside).sum(axis=0)


def rate_grid(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    ends = np.concatenate([lower, upper])
    pts = np.concatenate([np.linspace(0, 1, 2001), ends, ends - 1e-9, ends + 1e-9])
    return np.unique(np.clip(pts, 0, 1))


def others_prior(rng: np.random.Generator, m: int = 15) -> tuple:
    """LOO prior of a new stratum from m strata near 0.08 (seeded)."""
    n = rng.integers(50, 501, m)
    s = rng.binomial(n, rng.beta(80, 920, m))
    s_all, n_all = np.append(s, 0), np.append(n, 0)  # the new stratum carries no data
    w, a, b = loo_beta_mixture(s_all, n_all)
    return w[-1], a[-1], b[-1]


def priors(rng: np.random.Generator) -> dict:
    loo = others_prior(rng)
    return {
        "Beta(8, 92) (mean 0.08)": ([1.0], [8.0], [92.0]),
        "Beta(80, 920) (mean 0.08, strong)": ([1.0], [80.0], [920.0]),
        "Beta(50, 50) (mean 0.5)": ([1.0], [50.0], [50.0]),
        "Beta(0.5, 0.5) (Jeffreys)": ([1.0], [0.5], [0.5]),
        "0.5 Beta(8,92) + 0.5 Beta(60,40)": ([0.5, 0.5], [8.0, 60.0], [92.0, 40.0]),
        "LOO of 15 strata near 0.08": loo,
        "0.9 LOO + 0.1 Beta(1, 1) (adaptive_interval)": (
            np.append(0.9 * np.asarray(loo[0]), 0.1),
            np.append(loo[1], 1.0),
            np.append(loo[2], 1.0),
        ),
    }


def table_coverage(prior_set: dict, sizes) -> None:
    print("\n## 1. Adaptive interval: minimum coverage over the true rate (exact enumeration)\n")
    print("Grid: 2,001 rates in [0, 1] plus every interval end and the points 1e-9 either side.\n")
    header = " | ".join(f"n={n} {lv:.2f}" for n in sizes for lv in LEVELS)
    print(f"| prior | {header} |")
    print("|---|" + "---|" * (len(sizes) * len(LEVELS)))
    worst = 1.0
    for name, (w, a, b) in prior_set.items():
        cells = []
        for n in sizes:
            pmf = beta_mixture_predictive(n, w, a, b)
            for level in LEVELS:
                iv = fab_intervals_all_counts(n, pmf, level)
                cov = coverage(iv.lower, iv.upper, n, rate_grid(iv.lower, iv.upper))
                worst = min(worst, cov.min() - level)
                cells.append(f"{cov.min():.4f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nLargest shortfall below the level: {max(0.0, -worst):.2e} (target <= 0.005).")


def table_width(loo: tuple, sizes) -> None:
    print("\n## 2. Mean width (exact expectation under the true rate), level 0.95\n")
    print("Prior: leave-one-out prior from 15 strata near 0.08 (the group is not among them);")
    print("'adaptive' mixes in a uniform component of weight 0.1 (the default of")
    print("adaptive_interval), 'pure' does not. Ratios are to Clopper-Pearson (CP).\n")
    print("| n | truth | adaptive | pure | Clopper-Pearson | Wilson | adaptive / CP | pure / CP | adaptive / Wilson |")
    print("|---|---|---|---|---|---|---|---|---|")
    for truth in (0.08, 0.15, 0.40):
        for n in sizes:
            pmf = beta_mixture_predictive(n, *loo)
            iv = fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1)
            pure = fab_intervals_all_counts(n, pmf, 0.95)
            cp = fab_intervals_all_counts(n, pmf, 0.95, split=0.5)
            wl = wilson(np.arange(n + 1), n, 0.95)
            prob = stats.binom.pmf(np.arange(n + 1), n, truth)
            w = [float(prob @ (u - lo)) for lo, u in (iv, pure, cp, wl)]
            print(
                f"| {n} | {truth:.2f} | {w[0]:.4f} | {w[1]:.4f} | {w[2]:.4f} | {w[3]:.4f} | "
                f"{w[0] / w[2]:.3f} | {w[1] / w[2]:.3f} | {w[0] / w[3]:.3f} |"
            )


def simulate(repeats: int, seed: int) -> dict:
    """Seeded datasets: outlier scenario and exchangeable scenario."""
    rng = np.random.default_rng(seed)
    out: dict = {}
    for scenario in ("outlier", "exchangeable"):
        rows = []
        for _ in range(repeats):
            m = int(rng.integers(10, 21))
            n = rng.integers(50, 501, m)
            rates = rng.beta(80, 920, m)  # "near 0.08": sd about 0.009
            if scenario == "outlier":
                n[0], rates[0] = 20, 0.40
            else:
                n[0] = rng.integers(10, 31)  # a small stratum, like the outlier's size
            s = rng.binomial(n, rates)
            w, a, b = loo_beta_mixture(s, n)
            row = {}
            for pv in ("mid_p", "doubled"):
                p = predictive_p_values(s, n, w, a, b, p_value=pv)[0]
                row[(pv, "holm")] = holm_flags(p, 0.05)
                row[(pv, "per_stratum")] = p <= 0.05
            # exact coverage of stratum 0's adaptive interval given the other strata
            pmf = beta_mixture_predictive(int(n[0]), w[0], a[0], b[0])
            iv95 = fab_intervals_all_counts(int(n[0]), pmf, 0.95, diffuse_weight=0.1)
            iv90 = fab_intervals_all_counts(int(n[0]), pmf, 0.90, diffuse_weight=0.1)
            truth = np.array([rates[0]])
            row["cov95"] = coverage(iv95.lower, iv95.upper, int(n[0]), truth)[0]
            row["cov90"] = coverage(iv90.lower, iv90.upper, int(n[0]), truth)[0]
            row["hit95"] = iv95.lower[s[0]] <= rates[0] <= iv95.upper[s[0]]
            rows.append(row)
        out[scenario] = rows
    return out


def table_conflict(sim: dict, repeats: int) -> None:
    print(f"\n## 3. Conflict check ({repeats} seeded datasets per scenario, flag level 0.05)\n")
    print("Outlier: stratum 0 at 0.40 with 20 trials; others Beta(80, 920) rates (near 0.08),")
    print("50-500 trials, 10-20 strata. Exchangeable: the same with stratum 0 near 0.08 and")
    print("10-30 trials. Power = P(outlier flagged).\n")
    print("| p-value | rule | power | false flags per dataset | false flags per stratum |")
    print("|---|---|---|---|---|")
    for key in sim["outlier"][0]:
        if not isinstance(key, tuple):
            continue
        power = np.mean([r[key][0] for r in sim["outlier"]])
        per_dataset = np.mean([r[key].any() for r in sim["exchangeable"]])
        per_stratum = np.mean(np.concatenate([r[key] for r in sim["exchangeable"]]))
        se = np.sqrt(power * (1 - power) / repeats)
        label = "Holm (per dataset)" if key[1] == "holm" else "p <= 0.05 (per stratum)"
        print(f"| {key[0]} | {label} | {power:.3f} (se {se:.3f}) | {per_dataset:.3f} | {per_stratum:.4f} |")


def table_outlier_coverage(sim: dict) -> None:
    print("\n## 4. Adaptive interval of stratum 0 (exact given the other strata)\n")
    print(
        "| scenario | mean coverage 0.95 | min coverage 0.95 | mean coverage 0.90 | "
        "min coverage 0.90 | simulated hit rate 0.95 |"
    )
    print("|---|---|---|---|---|---|")
    for scenario, rows in sim.items():
        c95 = np.array([r["cov95"] for r in rows])
        c90 = np.array([r["cov90"] for r in rows])
        hit = np.mean([r["hit95"] for r in rows])
        print(f"| {scenario} | {c95.mean():.4f} | {c95.min():.4f} | {c90.mean():.4f} | {c90.min():.4f} | {hit:.3f} |")


GRID_SIZES = (105, 150, 250, 500, 1000, 2000, 5000, 20000)


def coverage_by_cdf(lower: np.ndarray, upper: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    """:func:`coverage` for intervals whose ends are non-decreasing in the count (as the
    adaptive interval's are): the counts covering ``p`` are one run ``k1..k2``, so the
    coverage is ``F(k2) - F(k1 - 1)`` under ``Binomial(n, p)``; cheap at any ``n``."""
    assert np.all(np.diff(lower) >= 0) and np.all(np.diff(upper) >= 0)
    k2 = np.searchsorted(lower, p, side="right") - 1  # last count with lower <= p
    k1 = np.searchsorted(upper, p, side="left")  # first count with upper >= p
    cov = stats.binom.cdf(k2, n, p) - stats.binom.cdf(k1 - 1, n, p)
    return np.where(k2 >= k1, cov, 0.0)


def split_intervals(n: int, w, a, b, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of every count 0..n with the split optimised for ``m`` trials, the prior
    predictive of ``m`` trials computed directly (what ``fab_intervals_all_counts`` gets by
    thinning the pmf of ``n`` trials, and ``fab_interval`` computes), uniform weight 0.1."""
    pmf = 0.9 * beta_mixture_predictive(m, w, a, b) + 0.1 / (m + 1.0)
    table = fab_split(m, pmf, 0.05)
    return _invert(np.arange(n + 1), np.full(n + 1, n), np.tile(table, (n + 1, 1)), 0.05)


GRID_TRUTHS = (0.02, 0.08, 0.15, 0.40, 0.70)


def table_split_grid(prior_set: dict, sizes) -> None:
    print("\n## 5. The split's trials grid: width against the split optimised for n itself\n")
    print("Level 0.95, uniform weight 0.1 mixed into each prior (the default of")
    print("adaptive_interval). Ratios grid / own n of the expected width: 'prior-averaged'")
    print("under the prior-predictive distribution of the count, 'at true rates' under")
    print(f"Binomial(n, p) for p in {', '.join(map(str, GRID_TRUTHS))}; smallest and largest over")
    print(f"the {len(prior_set)} priors of table 1. Coverage: minimum over the priors and the rates.\n")
    print("| n | optimised for | prior-averaged | at true rates | min coverage |")
    print("|---|---|---|---|---|")
    ratios = []
    for n in sizes:
        avg, at, cov = [], [], []
        for w, a, b in prior_set.values():
            pmf = beta_mixture_predictive(n, w, a, b)
            if n <= MAX_SPLIT_TRIALS:
                grid = fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1)
                own = fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1, optimise_for=n)
            else:  # the (m + 1) x (n + 1) thinning matrix is large: the same pmfs directly
                grid = FABInterval(*split_intervals(n, w, a, b, int(split_trials(n))))
                own = FABInterval(*split_intervals(n, w, a, b, n))
            wg, wo = grid.upper - grid.lower, own.upper - own.lower
            prob = stats.binom.pmf(np.arange(n + 1)[:, None], n, np.array(GRID_TRUTHS)[None, :])
            at.extend((prob * wg[:, None]).sum(axis=0) / (prob * wo[:, None]).sum(axis=0))
            avg.append(float(pmf @ wg / (pmf @ wo)))
            cov.append(coverage_by_cdf(grid.lower, grid.upper, n, rate_grid(grid.lower, grid.upper)).min())
        ratios.append((min(avg), max(avg), min(at), max(at), min(cov)))
        print(
            f"| {n} | {int(split_trials(n))} | {min(avg):.3f} - {max(avg):.3f} | "
            f"{min(at):.3f} - {max(at):.3f} | {min(cov):.5f} |"
        )
    r = np.array(ratios)
    print(
        f"\nPrior-averaged ratio {r[:, 0].min():.3f} to {r[:, 1].max():.3f}; at single true "
        f"rates {r[:, 2].min():.3f} to {r[:, 3].max():.3f}; largest coverage shortfall below "
        f"0.95: {max(0.0, 0.95 - r[:, 4].min()):.1e}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke version")
    parser.add_argument("--repeats", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--split-grid", action="store_true", help="table 5 only")
    parser.add_argument("--sizes", type=int, nargs="*", help="n of table 5 (default: all)")
    args = parser.parse_args()
    if args.split_grid:
        table_split_grid(priors(np.random.default_rng(args.seed)), args.sizes or GRID_SIZES)
        return
    sizes = (5, 20, 100) if args.quick else SIZES
    repeats = 30 if args.quick else args.repeats
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    prior_set = priors(rng)
    table_coverage(prior_set, sizes)
    table_width(prior_set["LOO of 15 strata near 0.08"], sizes)
    sim = simulate(repeats, args.seed + 1)
    table_conflict(sim, repeats)
    table_outlier_coverage(sim)
    table_split_grid(prior_set, GRID_SIZES[:3] if args.quick else GRID_SIZES)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
