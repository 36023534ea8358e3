"""Coverage and width of per-stratum intervals for clustered and graded outcomes.

A stratum holds ``G`` sampling units (items answered several times, passages with several
questions, documents with several positives). Unit ``i`` has ``b_i`` rows and an item
accuracy ``p_i`` drawn from a Beta with mean ``mu`` and within-unit (intra-class)
correlation ``rho`` (``Beta(mu k, (1 - mu) k)``, ``k = 1/rho - 1``; ``rho = 0``: every unit
at ``mu``); its successes ``a_i`` are ``Binomial(b_i, p_i)`` (binary rows) or
``Binomial(2 b_i, p_i) / 2`` (graded rows scoring 0, 0.5 or 1). The estimand is the
stratum's row-level rate ``R = E[a] / E[b]``. Grid: ``G`` in 10, 20, 50, 200; unit sizes 1, 5,
20 (equal) and 1-20 (uniform); ``rho`` 0, 0.3, 0.9; ``mu`` 0.5, 0.8, 0.98; binary and graded
rows; and a recall-type ratio estimand: units with 1-20 positives whose recall falls with the
number of positives (``mu_b = mu + 0.1 - 0.2 (b - 1)/19``, clipped to [0.01, 0.99]), so that
``R = sum_b b mu_b / sum_b b`` differs from the mean of unit recalls.

Side by side, on the same seeded datasets (level 0.95):

(a) ``wilson_rows``: Wilson on the rows (successes summed over units, trials summed), the
    per-stratum default of today, which treats every row as independent;
(b) ``cr1``: the cluster-robust CLT interval, estimate +/- z SE with the CR1 linearisation
    variance ``G/(G-1) sum_i (a_i - R^ b_i)^2 / N^2`` (as ``bayeseval.clustered_risk``
    computes it, with its Agresti-Coull floor at an observed rate of 0 or 1 and its
    independent-rows fallback when every unit has exactly the stratum's rate; Inspect's
    ``stderr(cluster=)`` and errorbars' clustered SE compute the same variance);
(c) ``t_units``: the t interval on unit means (truescore ``gold_only(clusters=)``, Inspect's
    ``grouped(ci())``), which targets the mean of unit means;
(d) ``hoeffding``: Hoeffding's inequality inverted on ``y_i(r) = (a_i - r b_i)/M + r`` (with
    equal sizes, Hoeffding on unit means);
(e) ``betting``: ``bayeseval._kernels.bounded_mean.units_ci`` (``M`` = the largest unit size
    observed in the stratum, the kernel's default);
(f) ``star``: the same test inversion with the kernel's private STaR-Bets variant
    (``units_ci(..., bets="star")``: the target-recalculating bets of Voracek and Orabona 2025,
    arXiv:2505.22422).

Coverage has Monte Carlo SE ``sqrt(c (1 - c) / datasets)`` (0.0049 at 0.95 with 2,000
datasets); width is the mean of upper - lower.

Run from the repository root::

    python benchmarks/design_coverage.py             # full grid, 2,000 datasets (about 30 min, one core)
    python benchmarks/design_coverage.py --quick     # 300 datasets, G in 10 and 50, binary + recall
    python benchmarks/design_coverage.py --write     # also rewrite the section of docs/validation.md
    python benchmarks/design_coverage.py --from-csv benchmarks/results/design_coverage.csv --write
    python benchmarks/design_coverage.py --datasets 1000 --units 10 50   # a subset of the grid

The table goes to ``benchmarks/results/design_coverage.csv`` (``--quick``:
``design_coverage_quick.csv``).
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._kernels.bounded_mean import units_ci

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs" / "validation.md"
MARK = ("<!-- design_coverage:start -->", "<!-- design_coverage:end -->")
LEVEL = 0.95
UNITS = (10, 20, 50, 200)
SIZES = ("1", "5", "20", "1-20")
RHOS = (0.0, 0.3, 0.9)
MUS = (0.5, 0.8, 0.98)
METHODS = ("wilson_rows", "cr1", "t_units", "hoeffding", "betting", "star")
LABELS = {
    "wilson_rows": "(a) Wilson, rows",
    "cr1": "(b) CR1 CLT",
    "t_units": "(c) t, unit means",
    "hoeffding": "(d) Hoeffding",
    "betting": "(e) betting (ours)",
    "star": "(f) betting, STaR bets",
}


# -- data ------------------------------------------------------------------------------------


def _sizes(spec: str, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    if spec == "1-20":
        return rng.integers(1, 21, shape)
    return np.full(shape, int(spec))


def _recall_means(b: np.ndarray, mu: float) -> np.ndarray:
    return np.clip(mu + 0.1 - 0.2 * (b - 1) / 19.0, 0.01, 0.99)


def truth(estimand: str, mu: float) -> float:
    """The stratum's rate ``R = E[a]/E[b]`` of a configuration."""
    if estimand == "rate":
        return mu
    b = np.arange(1, 21, dtype=float)
    return float(np.sum(b * _recall_means(b, mu)) / np.sum(b))


def simulate(cfg: dict, datasets: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Unit successes and trials, arrays (datasets, G)."""
    shape = (datasets, cfg["units"])
    b = _sizes(cfg["sizes"], shape, rng)
    mean = _recall_means(b, cfg["mu"]) if cfg["estimand"] == "recall" else np.full(shape, cfg["mu"])
    rho = cfg["rho"]
    if rho > 0:
        k = 1.0 / rho - 1.0
        p = rng.beta(mean * k, (1.0 - mean) * k)
    else:
        p = mean
    if cfg["outcome"] == "graded":
        a = rng.binomial(2 * b, p) / 2.0
    else:
        a = rng.binomial(b, p).astype(float)
    return a, b.astype(float)


# -- intervals (vectorised over datasets) -----------------------------------------------------


def wilson_rows(a: np.ndarray, b: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    s, n = a.sum(axis=1), b.sum(axis=1)
    p = s / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def cr1(a: np.ndarray, b: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    g = a.shape[1]
    s, n = a.sum(axis=1), b.sum(axis=1)
    r = s / n
    e = (a - r[:, None] * b) / n[:, None]
    var = g / (g - 1) * np.sum(e * e, axis=1)
    var_ind = r * (1 - r) / n
    var = np.where((var <= 1e-12 * var_ind) & (var_ind > 0), var_ind, var)  # every unit at the rate
    degenerate = (s == 0) | (s == n)
    n_adj = n + z * z
    r_adj = (s + z * z / 2) / n_adj
    var = np.where(degenerate, r_adj * (1 - r_adj) / n_adj, var)  # Agresti-Coull floor
    centre = np.where(degenerate, r_adj, r)
    se = np.sqrt(var)
    return np.clip(np.minimum(centre - z * se, r), 0, 1), np.clip(np.maximum(centre + z * se, r), 0, 1)


def t_units(a: np.ndarray, b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    g = a.shape[1]
    m = a / b
    centre = m.mean(axis=1)
    half = stats.t.ppf(0.5 + level / 2, g - 1) * m.std(axis=1, ddof=1) / np.sqrt(g)
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def hoeffding(a: np.ndarray, b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    g = a.shape[1]
    big_m = b.max(axis=1)
    h = np.sqrt(np.log(2 / (1 - level)) / (2 * g))
    abar, bbar = a.mean(axis=1), b.mean(axis=1)
    return np.clip((abar - big_m * h) / bbar, 0, 1), np.clip((abar + big_m * h) / bbar, 0, 1)


def betting(a: np.ndarray, b: np.ndarray, level: float, **kw) -> tuple[np.ndarray, np.ndarray]:
    d, g = a.shape
    table = pd.DataFrame(
        {
            "dataset": np.repeat(np.arange(d), g),
            "unit_successes": a.ravel(),
            "unit_trials": b.ravel().astype(np.int64),
            "units": 1,
        }
    )
    out = units_ci(table, "dataset", level, **kw)
    return out["lower"].to_numpy(), out["upper"].to_numpy()


def intervals(a: np.ndarray, b: np.ndarray, level: float, methods=METHODS, **kw) -> dict:
    z = float(stats.norm.isf((1 - level) / 2))
    fns = {
        "wilson_rows": lambda: wilson_rows(a, b, z),
        "cr1": lambda: cr1(a, b, z),
        "t_units": lambda: t_units(a, b, level),
        "hoeffding": lambda: hoeffding(a, b, level),
        "betting": lambda: betting(a, b, level, **kw),
        "star": lambda: betting(a, b, level, bets="star", **kw),
    }
    return {m: fns[m]() for m in methods}


# -- study -----------------------------------------------------------------------------------


def grid(quick: bool, units: tuple | None = None) -> list[dict]:
    units = units or ((10, 50) if quick else UNITS)
    outcomes = ("binary",) if quick else ("binary", "graded")
    cfgs = []
    for g in units:  # one number of units after the other (each configuration has its own seed)
        for sizes, rho, mu, outcome in itertools.product(SIZES, RHOS, MUS, outcomes):
            cfgs.append({"units": g, "sizes": sizes, "rho": rho, "mu": mu, "outcome": outcome, "estimand": "rate"})
        for rho, mu, outcome in itertools.product(RHOS, MUS, outcomes):
            cfgs.append({"units": g, "sizes": "1-20", "rho": rho, "mu": mu, "outcome": outcome, "estimand": "recall"})
    return cfgs


def run_config(cfg: dict, datasets: int, seed: int, level: float = LEVEL) -> dict:
    key = [seed, cfg["units"], SIZES.index(cfg["sizes"]), int(cfg["rho"] * 10), int(cfg["mu"] * 100)]
    key += [cfg["outcome"] == "graded", cfg["estimand"] == "recall"]
    rng = np.random.default_rng(key)
    a, b = simulate(cfg, datasets, rng)
    r = truth(cfg["estimand"], cfg["mu"])
    row = dict(cfg, truth=r, datasets=datasets)
    t0 = time.process_time()
    for m in METHODS:
        t1 = time.process_time()
        lo, hi = intervals(a, b, level, methods=(m,))[m]
        row[f"{m}_seconds"] = time.process_time() - t1
        cov = float(np.mean((lo <= r) & (r <= hi)))
        row[f"{m}_coverage"] = cov
        row[f"{m}_mcse"] = float(np.sqrt(cov * (1 - cov) / datasets))
        row[f"{m}_width"] = float(np.mean(hi - lo))
    row["seconds"] = time.process_time() - t0
    return row


def _methods(df: pd.DataFrame) -> tuple:
    """The methods a results table holds (older tables lack the later columns)."""
    return tuple(m for m in METHODS if f"{m}_coverage" in df.columns)


def summary(df: pd.DataFrame, level: float = LEVEL) -> str:
    """Markdown tables: worst and mean coverage by number of units, and width against CR1."""
    METHODS = _methods(df)  # noqa: N806
    lines = [
        "| units per stratum | configurations | "
        + " | ".join(f"{LABELS[m]}: min / mean coverage" for m in METHODS)
        + " |",
        "|---" * (2 + len(METHODS)) + "|",
    ]
    for g, part in df.groupby("units"):
        cells = [f"{part[f'{m}_coverage'].min():.3f} / {part[f'{m}_coverage'].mean():.3f}" for m in METHODS]
        lines.append(f"| {g} | {len(part)} | " + " | ".join(cells) + " |")
    lines += ["", "Configurations with coverage below level - 0.01 (count, of all with that many units):", ""]
    lines += ["| units per stratum | " + " | ".join(LABELS[m] for m in METHODS) + " |"]
    lines += ["|---" * (1 + len(METHODS)) + "|"]
    for g, part in df.groupby("units"):
        lines.append(
            f"| {g} | "
            + " | ".join(f"{int((part[f'{m}_coverage'] < level - 0.01).sum())}/{len(part)}" for m in METHODS)
            + " |"
        )
    lines += ["", "Mean width, and width relative to (b) CR1 (median over configurations):", ""]
    lines += ["| units per stratum | " + " | ".join(LABELS[m] for m in METHODS) + " |"]
    lines += ["|---" * (1 + len(METHODS)) + "|"]
    for g, part in df.groupby("units"):
        cells = []
        for m in METHODS:
            ratio = (part[f"{m}_width"] / part["cr1_width"]).median()
            cells.append(f"{part[f'{m}_width'].mean():.3f} ({ratio:.2f}x)")
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def variants(df: pd.DataFrame) -> str:
    """Per number of units: worst coverage (with its MC SE) and width over CR1, min / median / max, of (e) and (f)."""
    lines = ["| units | configurations | interval | worst coverage (MC SE) | width / CR1: min / median / max |"]
    lines.append("|---|---|---|---|---|")
    for g, part in df.groupby("units"):
        for m in ("betting", "star"):
            if f"{m}_coverage" not in part.columns:
                continue
            i = part[f"{m}_coverage"].idxmin()
            ratio = part[f"{m}_width"] / part["cr1_width"]
            lines.append(
                f"| {g} | {len(part)} | {LABELS[m]} | {part.loc[i, f'{m}_coverage']:.3f} ({part.loc[i, f'{m}_mcse']:.3f}) "
                f"| {ratio.min():.2f} / {ratio.median():.2f} / {ratio.max():.2f} |"
            )
    return "\n".join(lines)


def detail(df: pd.DataFrame) -> str:
    """Per (outcome, sizes, estimand, units): worst coverage over rho and mu, and width ratio (e)/(b)."""
    METHODS = _methods(df)  # noqa: N806
    head = "| rows | unit sizes | estimand | units | " + " | ".join(LABELS[m] for m in METHODS)
    head += " | width (e)/(b), median [max] |"
    lines = [head, "|---" * (5 + len(METHODS)) + "|"]
    for (outcome, sizes, est, g), part in df.groupby(["outcome", "sizes", "estimand", "units"], sort=False):
        cells = []
        for m in METHODS:
            i = part[f"{m}_coverage"].idxmin()
            cells.append(f"{part.loc[i, f'{m}_coverage']:.3f}")
        ratio = part["betting_width"] / part["cr1_width"]
        lines.append(
            f"| {outcome} | {sizes} | {est} | {g} | "
            + " | ".join(cells)
            + f" | {ratio.median():.2f} [{ratio.max():.2f}] |"
        )
    return "\n".join(lines)


def section(df: pd.DataFrame, seconds: float) -> str:
    d = int(df["datasets"].iloc[0])
    mcse = np.sqrt(0.95 * 0.05 / d)
    return f"""{MARK[0]}

Generated by `python benchmarks/design_coverage.py --write` ({len(df)} configurations, {d:,} seeded
datasets each, {seconds / 60:.0f} CPU minutes for the intervals; table in `benchmarks/results/design_coverage.csv`).
Level 0.95; Monte Carlo SE of a coverage near 0.95 is {mcse:.4f} (near 0.90, {np.sqrt(0.09 / d):.4f}).
See the script's docstring for the design and the intervals.

{summary(df)}

Worst coverage over the within-unit correlation (0, 0.3, 0.9) and the mean accuracy (0.5, 0.8, 0.98)
per layout:

{detail(df)}

{MARK[1]}"""


INTRO = """Rows that share a sampling unit (an item answered several times, a passage with several
questions, a document with several positives) are not independent draws, and graded rows (partial
credit) are not 0/1. The kernel `bayeseval._kernels.bounded_mean` gives each stratum an interval
for its row-level rate that is valid in finite samples whatever the dependence within a unit: a
test inversion of the betting confidence interval of Waudby-Smith and Ramdas (2024) applied to
the bounded unit scores `y_i(r) = (a_i - r b_i)/M + r`, averaged over seeded unit orders (the
module docstring has the construction and the variants tried). Below, its coverage and width
beside today's default (Wilson on the rows), the cluster-robust CLT interval, the t interval on
unit means, Hoeffding and the kernel's private STaR-Bets variant, on the same seeded datasets.
"""


def write_docs(text: str) -> None:
    doc = DOCS.read_text()
    if MARK[0] in doc:
        start, end = doc.index(MARK[0]), doc.index(MARK[1]) + len(MARK[1])
        doc = doc[:start] + text + doc[end:]
    else:
        doc = doc.rstrip() + "\n\n## 15. Clustered and graded outcomes\n\n" + INTRO + "\n" + text + "\n"
    DOCS.write_text(doc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="300 datasets, 10 and 50 units, binary and recall only")
    ap.add_argument("--datasets", type=int, default=None, help="datasets per configuration (default 2,000)")
    ap.add_argument("--seed", type=int, default=45)
    ap.add_argument("--units", type=int, nargs="+", default=None, help="numbers of units per stratum to run")
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/design_coverage[_quick].csv)")
    ap.add_argument("--write", action="store_true", help="rewrite the section of docs/validation.md")
    ap.add_argument("--from-csv", default=None, help="rebuild the tables from a saved results file")
    args = ap.parse_args()
    if args.from_csv:
        df = pd.read_csv(args.from_csv)
        print(summary(df))
        print()
        print(detail(df))
        print()
        print(variants(df))
        if args.write:
            write_docs(section(df, float(df["seconds"].sum())))
        return
    datasets = args.datasets or (300 if args.quick else 2000)
    t0 = time.process_time()
    rows = []
    out = (
        Path(args.out) if args.out else RESULTS / ("design_coverage_quick.csv" if args.quick else "design_coverage.csv")
    )
    RESULTS.mkdir(exist_ok=True)
    cfgs = grid(args.quick, tuple(args.units) if args.units else None)
    for i, cfg in enumerate(cfgs):
        rows.append(run_config(cfg, datasets, args.seed))
        r = rows[-1]
        print(
            f"[{i + 1}/{len(cfgs)}] {cfg['outcome']:6s} sizes {cfg['sizes']:4s} {cfg['estimand']:6s} G={cfg['units']:3d} "
            f"rho={cfg['rho']:.1f} mu={cfg['mu']:.2f}  " + "  ".join(f"{m}={r[f'{m}_coverage']:.3f}" for m in METHODS),
            flush=True,
        )
        pd.DataFrame(rows).to_csv(out, index=False)  # partial results survive an interrupted run
    df = pd.DataFrame(rows)
    seconds = time.process_time() - t0
    df.to_csv(out, index=False)
    print()
    print(summary(df))
    print()
    print(detail(df))
    print()
    print(variants(df))
    print(f"\n{seconds:.0f} CPU seconds")
    if args.write:
        write_docs(section(df, seconds))


if __name__ == "__main__":
    main()
