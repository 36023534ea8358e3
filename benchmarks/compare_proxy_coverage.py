"""Per-category coverage of the difference between two models from a judge and a few human labels.

Two models answer the same items in 6 categories of 20-200 items (640 in all), one answer each.
Item ``i`` of category ``c`` has model a's accuracy ``p_i ~ Beta(mu_c k, (1 - mu_c) k)``
(intra-class correlation 0.3) and model b's ``s_c q_i`` with ``q_i = p_i`` with probability
0.7 and an independent draw otherwise; the human labels ``h_a, h_b`` are Bernoulli draws of
these. A judge gives a verdict on every answer: on model a's it errs with probability
``e_c = 1 - agree_c`` either way (``agree_c`` from 0.80 to 0.97 by category); on model b's it
is lenient (self-preference): it passes a wrong answer with probability ``min(4 e_c, 0.6)``
and fails a right one with probability ``e_c / 2``. ``labels`` items, drawn at random from all
640, get both human labels. The estimand is the category's difference of human-judged
accuracy over its items, ``mean(h_a - h_b)`` (the items evaluated; two categories have
``D_c = 0`` in expectation).

Per category, on the same seeded datasets (level 0.95, no multiplicity adjustment):

(a) ``ours``: :func:`bayeseval.compare_models` with ``human=`` and ``adjust="none"``: judge cells
    ``(j_a, j_b)``, betting limits per merged cell, MOVER (computed here with the same
    functions vectorised over datasets, and checked equal to ``compare_models`` on dataset 0);
(b) ``judge_only``: :func:`bayeseval.compare_models` on the judge's verdicts of every item (the
    betting interval of today's path without ``human``), biased by the judge's leniency;
(c) ``ppi``: ``ppi_py.ppi_mean_ci`` (PPI++, power-tuned) on the rectified difference, ``Y = h_a - h_b``
    on the labelled items of the category, ``Yhat = j_a - j_b`` on them and on the unlabelled
    items; undefined with fewer than 2 labels or no unlabelled item (the ``undefined`` column
    gives the share; its coverage is over the datasets where it is defined).

Coverage has Monte Carlo SE ``sqrt(c (1 - c) / datasets)`` (0.0097 at 0.95 with 500 datasets);
width is the median of upper - lower.

Run from the repository root::

    python benchmarks/compare_proxy_coverage.py            # 500 datasets per configuration
    python benchmarks/compare_proxy_coverage.py --quick    # 100 datasets, a smoke run

The table goes to ``benchmarks/results/compare_proxy_coverage.csv`` (``--quick``:
``compare_proxy_coverage_quick.csv``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval._kernels.bounded_mean import units_ci
from bayeseval.estimate import paired_proxy
from bayeseval.estimate.paired import compare_models

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LEVEL = 0.95
ICC = 0.3
SHARED = 0.7
ITEMS = (20, 50, 80, 120, 170, 200)
MUS = (0.9, 0.55, 0.8, 0.7, 0.95, 0.65)
SCALES = (0.9, 1.0, 0.95, 0.9, 1.0, 0.97)
AGREE = (0.97, 0.80, 0.93, 0.85, 0.95, 0.90)
LABELS = (100, 300, 600)
METHODS = ("ours", "judge_only", "ppi")


def simulate(n_sets: int, labels: int, seed: int) -> dict[str, np.ndarray]:
    """Arrays (n_sets, items): category, h_a, h_b, j_a, j_b, labelled."""
    rng = np.random.default_rng(seed)
    k = 1.0 / ICC - 1.0
    cat = np.concatenate([np.full(n, c) for c, n in enumerate(ITEMS)])
    mu = np.asarray(MUS)[cat]
    s = np.asarray(SCALES)[cat]
    e = 1.0 - np.asarray(AGREE)[cat]
    shape = (n_sets, cat.size)
    p = rng.beta(mu * k, (1 - mu) * k, size=shape)
    other = rng.beta(mu * k, (1 - mu) * k, size=shape)
    q = s * np.where(rng.random(shape) < SHARED, p, other)
    ha = (rng.random(shape) < p).astype(float)
    hb = (rng.random(shape) < q).astype(float)
    ja = np.where(rng.random(shape) < e, 1.0 - ha, ha)
    flip_b = np.where(hb == 1, e / 2, np.minimum(4 * e, 0.6))
    jb = np.where(rng.random(shape) < flip_b, 1.0 - hb, hb)
    labelled = np.argsort(rng.random(shape), axis=1) < labels
    return {"cat": np.broadcast_to(cat, shape), "ha": ha, "hb": hb, "ja": ja, "jb": jb, "lab": labelled}


def ours(data: dict[str, np.ndarray]) -> np.ndarray:
    """(n_sets, 6, 2) intervals of compare_models(human=, adjust="none"), one plan over all datasets."""
    n_sets, n = data["ha"].shape
    key = (np.arange(n_sets)[:, None] * len(ITEMS) + data["cat"]).ravel()
    z = np.where(data["lab"], (data["ha"] - data["hb"] + 1.0) / 2.0, np.nan).ravel()
    obs = pd.DataFrame(
        {"key": key, "block": key, "cell": paired_proxy.cell_of(data["ja"].ravel(), data["jb"].ravel()), "z": z}
    )
    n_keys = n_sets * len(ITEMS)
    plan = paired_proxy.plan(obs, n_keys, np.zeros(n_keys, dtype=bool))
    _, lo, hi = paired_proxy.intervals(plan, LEVEL)
    return np.stack([lo, hi], axis=1).reshape(n_sets, len(ITEMS), 2)


def judge_only(data: dict[str, np.ndarray]) -> np.ndarray:
    """(n_sets, 6, 2) betting intervals of the judge's item differences (compare_models without human)."""
    n_sets, _ = data["ha"].shape
    key = (np.arange(n_sets)[:, None] * len(ITEMS) + data["cat"]).ravel()
    z = ((data["ja"] - data["jb"] + 1.0) / 2.0).ravel()
    hist = (
        pd.DataFrame({"key": key, "unit_successes": z, "unit_trials": 1})
        .groupby(["key", "unit_successes", "unit_trials"])
        .size()
        .rename("units")
        .reset_index()
    )
    ci = units_ci(hist, "key", LEVEL).sort_index()
    out = np.c_[2 * ci["lower"].to_numpy() - 1, 2 * ci["upper"].to_numpy() - 1]
    return out.reshape(n_sets, len(ITEMS), 2)


def ppi(data: dict[str, np.ndarray]) -> np.ndarray:
    """(n_sets, 6, 2) ppi_py.ppi_mean_ci intervals (NaN where fewer than 2 labels)."""
    from ppi_py import ppi_mean_ci

    n_sets, _ = data["ha"].shape
    out = np.full((n_sets, len(ITEMS), 2), np.nan)
    d = data["ha"] - data["hb"]
    jd = data["ja"] - data["jb"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in range(n_sets):
            for c in range(len(ITEMS)):
                sel = data["cat"][t] == c
                lab = sel & data["lab"][t]
                unl = sel & ~data["lab"][t]
                if lab.sum() < 2 or unl.sum() < 1:
                    continue
                lo, hi = ppi_mean_ci(d[t, lab], jd[t, lab], jd[t, unl], alpha=1 - LEVEL)
                out[t, c] = float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
    return out


def check_against_compare_models(data: dict[str, np.ndarray], got: np.ndarray) -> None:
    """Dataset 0 through the public function gives the same per-category intervals."""
    frame = pd.concat(
        pd.DataFrame(
            {
                "model": m,
                "category": [f"c{c}" for c in data["cat"][0]],
                "item": np.arange(data["ha"].shape[1]),
                "outcome": data["j" + m][0],
                "human": np.where(data["lab"][0], data["h" + m][0], np.nan),
            }
        )
        for m in ("a", "b")
    )
    res = compare_models(frame, strata="category", reference="b", adjust="none", human="human").table
    res = res[res["stratum"] != "(all)"].set_index("stratum")
    for c in range(len(ITEMS)):
        pub = res.loc[f"c{c}", ["lower", "upper"]].to_numpy(dtype=float)
        assert np.allclose(pub, got[0, c], atol=1e-9), (c, pub, got[0, c])


def run(n_sets: int) -> pd.DataFrame:
    rows = []
    for j, labels in enumerate(LABELS):
        t0 = time.perf_counter()
        data = simulate(n_sets, labels, seed=4602 + j)
        t1 = time.perf_counter()
        intervals = {"ours": ours(data)}
        t_ours = time.perf_counter() - t1
        check_against_compare_models(data, intervals["ours"])
        intervals["judge_only"] = judge_only(data)
        intervals["ppi"] = ppi(data)
        d = data["ha"] - data["hb"]
        for c, n in enumerate(ITEMS):
            sel = data["cat"][0] == c
            truth = d[:, sel].mean(axis=1)
            n_lab = data["lab"][:, sel].sum(axis=1)
            for m in METHODS:
                ci = intervals[m][:, c]
                ok = np.isfinite(ci[:, 0])
                hit = (ci[ok, 0] <= truth[ok] + 1e-12) & (truth[ok] - 1e-12 <= ci[ok, 1])
                cov = float(hit.mean()) if ok.any() else np.nan
                rows.append(
                    {
                        "labels": labels,
                        "category": c + 1,
                        "items": n,
                        "agree": AGREE[c],
                        "median_labelled": float(np.median(n_lab)),
                        "method": m,
                        "coverage": cov,
                        "mc_se": float(np.sqrt(cov * (1 - cov) / ok.sum())) if ok.any() else np.nan,
                        "median_width": float(np.median(ci[ok, 1] - ci[ok, 0])) if ok.any() else np.nan,
                        "undefined": float(1 - ok.mean()),
                    }
                )
        print(
            f"labels={labels}: simulated in {t1 - t0:.1f} s, ours in {t_ours:.1f} s, total {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=None, help="datasets per configuration (default 500)")
    parser.add_argument("--quick", action="store_true", help="100 datasets, a smoke run")
    args = parser.parse_args()
    n_sets = args.datasets or (100 if args.quick else 500)
    table = run(n_sets)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / ("compare_proxy_coverage_quick.csv" if args.quick else "compare_proxy_coverage.csv")
    table.to_csv(out, index=False)
    wide = table.pivot_table(index=["labels", "category", "items", "agree"], columns="method", values="coverage")
    width = table.pivot_table(index=["labels", "category", "items", "agree"], columns="method", values="median_width")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(f"{n_sets} datasets per configuration; coverage (MC SE {np.sqrt(0.95 * 0.05 / n_sets):.4f} at 0.95)")
        print(wide.round(3).to_string())
        print("median width")
        print(width.round(3).to_string())
        undefined = table[table["method"] == "ppi"].set_index(["labels", "category"])["undefined"]
        print(
            "ppi undefined share (fewer than 2 labels, or every item labelled):",
            undefined[undefined > 0].round(3).to_dict(),
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
