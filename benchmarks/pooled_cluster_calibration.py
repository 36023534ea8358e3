"""Calibration of the pooled model over units (``guarantee="average"`` with clusters).

Each dataset has ``K`` strata. Stratum ``h`` has a rate ``theta_h ~ Beta(mu phi, (1 - mu) phi)``
(``mu = 0.75``, ``phi = 12``: strata from about 0.45 to 0.95), and ``G`` items whose accuracies
are ``p_i ~ Beta(theta_h k, (1 - theta_h) k)`` with ``k = 1/rho - 1`` (``rho`` the within-item
correlation of two answers; ``rho = 0``: every item at ``theta_h``). Item ``i`` is answered
``m_i`` times (equal sizes, or uniform on 1-10), ``a_i ~ Binomial(m_i, p_i)``. The estimand is
``theta_h``, the stratum's expected item accuracy (equal to its expected row-level rate since
the sizes do not depend on the accuracies).

Side by side on the same seeded datasets, the 95% equal-tailed posterior intervals of

* ``units``: the pooled model over units (:class:`bayeseval.models.exact_units.UnitsFit`,
  accurate preset), what ``evaluate(..., design=Design(cluster=...), guarantee="average")``
  reports;
* ``rows``: today's pooled model on the rows (:class:`bayeseval.models.exact.ExactFit`), which
  treats every answer as an independent draw.

The ``"average"`` guarantee is coverage averaged over the strata: the table gives the share
of (dataset, stratum) pairs whose interval covers ``theta_h``, with Monte Carlo SE from the
spread of the per-dataset shares over datasets (strata of one dataset share their
hyperparameters), and the mean width.

Run from the repository root (one core; about 2 s per dataset)::

    python benchmarks/pooled_cluster_calibration.py               # 200 datasets per configuration
    python benchmarks/pooled_cluster_calibration.py --datasets 50 --configs A
    python benchmarks/pooled_cluster_calibration.py --reference   # today's model on independent rows
    python benchmarks/pooled_cluster_calibration.py --write       # the table of the CSV into the docs

The table goes to ``benchmarks/results/pooled_cluster_calibration.csv`` (one row per
configuration and model, appended as each configuration finishes).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval.counts.counts import Counts
from bayeseval.models.exact import ExactFit
from bayeseval.models.exact_units import UnitsFit

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LEVEL = 0.95
MU, PHI = 0.75, 12.0

#: name -> (strata, items per stratum, answers per item (int, or "1-10"), within-item correlation)
CONFIGS: dict[str, tuple[int, int, object, float]] = {
    "A": (12, 30, 5, 0.5),
    "B": (12, 30, 5, 0.0),
    "C": (8, 10, 10, 0.9),
    "D": (20, 50, "1-10", 0.3),
    "E": (16, 20, 10, 0.1),
}


def simulate(rng: np.random.Generator, K: int, G: int, m: object, rho: float) -> tuple[Counts, np.ndarray]:
    """One dataset: Counts with units, and the strata's true rates."""
    theta = rng.beta(MU * PHI, (1 - MU) * PHI, K)
    rows = []
    idx = pd.Index([f"s{h:02d}" for h in range(K)], name="stratum")
    for h in range(K):
        if rho > 0:
            k = 1.0 / rho - 1.0
            p = rng.beta(theta[h] * k, (1 - theta[h]) * k, G)
        else:
            p = np.full(G, theta[h])
        sizes = rng.integers(1, 11, G) if m == "1-10" else np.full(G, int(m))
        a = rng.binomial(sizes, p)
        pairs, counts = np.unique(np.column_stack([a, sizes]), axis=0, return_counts=True)
        rows += [(idx[h], float(x), int(n), int(c)) for (x, n), c in zip(pairs, counts, strict=True)]
    units = pd.DataFrame(rows, columns=["stratum", "unit_successes", "unit_trials", "units"])
    tot = units.assign(s=units.unit_successes * units.units, n=units.unit_trials * units.units)
    s = tot.groupby("stratum")["s"].sum().reindex(idx)
    n = tot.groupby("stratum")["n"].sum().reindex(idx)
    return Counts(successes=s.astype(float), trials=n.astype(np.int64), units=units), theta


def run(name: str, datasets: int, seed: int, preset: str = "accurate") -> list[dict]:
    K, G, m, rho = CONFIGS[name]
    rng = np.random.default_rng([seed, ord(name)])
    q = [(1 - LEVEL) / 2, (1 + LEVEL) / 2]
    cover = {"units": [], "rows": []}
    width = {"units": [], "rows": []}
    kappa_rho = []
    t0 = time.perf_counter()
    for _ in range(datasets):
        counts, theta = simulate(rng, K, G, m, rho)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = {"units": UnitsFit(counts, preset=preset), "rows": ExactFit(counts, preset=preset)}
        kappa_rho.append(fits["units"].diagnostics["correlation"])
        for key, fit in fits.items():
            lo, hi = fit.quantiles(q)
            cover[key].append(float(np.mean((lo <= theta) & (theta <= hi))))
            width[key].append(float(np.mean(hi - lo)))
    secs = (time.perf_counter() - t0) / datasets
    out = []
    for key in ("units", "rows"):
        c = np.array(cover[key])
        out.append(
            {
                "config": name,
                "strata": K,
                "items": G,
                "answers": m,
                "rho": rho,
                "model": key,
                "preset": preset,
                "datasets": datasets,
                "coverage": c.mean(),
                "mc_se": c.std(ddof=1) / np.sqrt(len(c)),
                "width": float(np.mean(width[key])),
                "rho_posterior_mean": float(np.mean(kappa_rho)) if key == "units" else np.nan,
                "seconds_per_dataset": secs,
            }
        )
    return out


def reference(strata: int, rows: int, datasets: int, seed: int) -> tuple[float, float]:
    """Today's row-level model on independent rows (``rows`` per stratum, rates as above): its
    average coverage without any clustering, the yardstick for a configuration's strata count."""
    rng = np.random.default_rng([seed, strata, rows])
    cover = []
    for _ in range(datasets):
        theta = rng.beta(MU * PHI, (1 - MU) * PHI, strata)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = ExactFit(Counts.from_arrays(rng.binomial(rows, theta), np.full(strata, rows)))
        lo, hi = fit.quantiles([(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        cover.append(float(np.mean((lo <= theta) & (theta <= hi))))
    c = np.array(cover)
    return float(c.mean()), float(c.std(ddof=1) / np.sqrt(len(c)))


def table(frame: pd.DataFrame) -> str:
    """The markdown table of the docs from the results (one row per configuration)."""
    lines = [
        "| strata x items x answers | within-item correlation | units model: coverage (MC SE) | row-level model: "
        "coverage (MC SE) | mean width, units / rows | posterior mean correlation |",
        "|---|---|---|---|---|---|",
    ]
    for _, rows in frame.groupby("config", sort=False):
        u = rows[rows["model"] == "units"].iloc[-1]
        r = rows[rows["model"] == "rows"].iloc[-1]
        lines.append(
            f"| {u['strata']} x {u['items']} x {u['answers']} | {u['rho']:g} | {u['coverage']:.3f} ({u['mc_se']:.3f}) "
            f"| {r['coverage']:.3f} ({r['mc_se']:.3f}) | {u['width']:.3f} / {r['width']:.3f} "
            f"| {u['rho_posterior_mean']:.2f} |"
        )
    return "\n".join(lines)


def write_docs(frame: pd.DataFrame) -> None:
    """Put the table between the ``pooled_cluster`` markers of the validation page and the guide."""
    text = table(frame)
    for path in (ROOT / "docs" / "validation.md", ROOT / "docs" / "guide" / "units.md"):
        doc = path.read_text()
        start, end = "<!-- pooled_cluster:start -->", "<!-- pooled_cluster:end -->"
        head, rest = doc.split(start, 1)
        _, tail = rest.split(end, 1)
        path.write_text(f"{head}{start}\n\n{text}\n\n{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--configs", default="".join(CONFIGS))
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--preset", default="accurate", choices=["accurate", "fast"])
    parser.add_argument("--write", action="store_true", help="put the table of --out into the docs and stop")
    parser.add_argument("--out", default=str(RESULTS / "pooled_cluster_calibration.csv"))
    parser.add_argument(
        "--reference", action="store_true", help="also today's model on independent rows (8 and 12 strata x 10 rows)"
    )
    args = parser.parse_args()
    if args.reference:
        for strata in (8, 12):
            cov, se = reference(strata, 10, 400, args.seed)
            print(f"row-level model, independent rows, {strata} strata x 10 rows: coverage {cov:.3f} (MC SE {se:.3f})")
    path = Path(args.out)
    if args.write:
        write_docs(pd.read_csv(path))
        return
    for name in args.configs:
        rows = run(name, args.datasets, args.seed, args.preset)
        frame = pd.DataFrame(rows)
        frame.to_csv(path, mode="a", header=not path.exists(), index=False, float_format="%.4f")
        print(frame.to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
