"""Outlier safety of the campaign stopping rule, the default fit and the conflict check.

Scenarios (seeded): one atypical stratum (error rate 0.16) among nine homogeneous strata
with rates near 0.06, the atypical stratum holding 2%, 6.4% or 15% of a 40,000-row pool; and
the exchangeable control (all ten strata near 0.06). ``expected_width`` campaigns with the
default settings to a 0.05 half-width at level 0.95; coverage at stop of every stratum on
the interval it reports (``simulate``'s ``covered``), and labels used. Each pooled rule runs
under both guarantees of ``VARIANTS``: ``guarantee="average"`` (every stratum stops on its
pooled interval) and ``guarantee="stratum"`` (the default: every stratum stops on its
guaranteed interval), on the same seeds. ``--write-docs`` rewrites the table of
docs/validation.md section 6a.

Run: ``python benchmarks/validate_outlier.py campaigns [--repeats 40] [--rules expected_width,independent_beta]
[--out file.csv] [--write-docs]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval.campaign.simulation import simulate

N_STRATA = 10
HOMOGENEOUS = np.linspace(0.05, 0.07, N_STRATA - 1)


def atypical_pool(
    share: float | None, *, n_rows: int = 40_000, atypical_rate: float = 0.16, random_seed: int = 0
) -> pd.DataFrame:
    """Pool with stratum ``s00`` at ``atypical_rate`` holding ``share`` of the rows (None: exchangeable)."""
    rng = np.random.default_rng(random_seed)
    rest = 1.0 - (share if share is not None else 1.0 / N_STRATA)
    other = np.geomspace(1.0, 4.0, N_STRATA - 1)
    shares = np.concatenate([[1.0 - rest], rest * other / other.sum()])
    sizes = np.round(shares * n_rows).astype(int)
    rates = np.concatenate([[atypical_rate if share is not None else 0.06], HOMOGENEOUS])
    strata = np.repeat([f"s{i:02d}" for i in range(N_STRATA)], sizes)
    err = rng.random(sizes.sum()) < np.repeat(rates, sizes)
    truth = rng.integers(0, 2, sizes.sum())
    pred = np.where(err, 1 - truth, truth)
    return pd.DataFrame({"stratum": strata, "truth": truth, "pred": pred})


SCENARIOS = {"atypical 2%": 0.02, "atypical 6.4%": 0.064, "atypical 15%": 0.15, "exchangeable": None}


#: stopping rules compared (labels and keyword arguments of ``simulate``; same seeds)
VARIANTS = {
    '`guarantee="average"`': {"guarantee": "average"},
    '`guarantee="stratum"` (default)': {},
}


def _campaign_rows(name: str, res, rules, label: str, t0: float) -> list[dict]:
    iv = res.intervals
    rows = []
    for rule in rules:
        tab = res.table[res.table["rule"] == rule]
        mine = iv[iv["rule"] == rule]
        cov = mine.groupby("stratum")["covered"].mean()
        s00 = mine[mine["stratum"] == "s00"]
        row = {
            "scenario": name,
            "rule": rule,
            "variant": label,
            "labels_mean": tab["labels_used"].mean(),
            "labels_s00": s00["trials"].mean(),
            "coverage_s00": cov.get("s00"),
            "coverage_min_other": cov.drop("s00").min(),
            "coverage_mean": cov.mean(),
            "seconds": time.perf_counter() - t0,
        }
        row.update({f"cov_{k}": v for k, v in cov.items()})
        rows.append(row)
    return rows


def run_campaigns(repeats: int, rules=("expected_width",), variants=tuple(VARIANTS), **kw) -> pd.DataFrame:
    """Coverage at stop of every stratum (on the interval it reports) and labels, per scenario,
    rule and guarantee (same seeds)."""
    rows = []
    todo = {v: VARIANTS[v] for v in variants}
    for name, share in SCENARIOS.items():
        pool = atypical_pool(share, random_seed=1)
        args = dict(
            strata="stratum",
            y_pred="pred",
            y_true="truth",
            n_repeats=repeats,
            batch_size=20,
            random_seed=0,
            progress=False,
            **kw,
        )
        pooled = [r for r in rules if r != "independent_beta"]
        for label, options in todo.items():
            if pooled:
                t0 = time.perf_counter()
                rows += _campaign_rows(name, simulate(pool, rules=pooled, **args, **options), pooled, label, t0)
        if "independent_beta" in rules:
            t0 = time.perf_counter()
            # the own Beta(1, 1) posterior is the interval it reads under the average guarantee
            rows += _campaign_rows(
                name,
                simulate(pool, rules=["independent_beta"], guarantee="average", **args),
                ["independent_beta"],
                "own interval",
                t0,
            )
    out = pd.DataFrame(rows)
    first = next(iter(todo), "own interval")
    base = out[out["variant"] == first].set_index(["scenario", "rule"])["labels_mean"]
    before = out["scenario"].map(base.groupby("scenario").first())
    out.insert(4, "x_before", out["labels_mean"] / before)
    return out


def docs_table(out: pd.DataFrame) -> str:
    """The markdown table of section 6a."""
    lines = [
        "| scenario | stopping rule | labels (mean) | x average | labels in s00 | "
        "coverage s00 | lowest other stratum | mean coverage | coverage s01..s09 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in out.iterrows():
        others = " ".join(f"{r[f'cov_s{i:02d}']:.3f}" for i in range(1, N_STRATA))
        lines.append(
            f"| {r['scenario']} | {r['rule']}, {r['variant']} | {r['labels_mean']:.0f} | "
            f"{r['x_before']:.2f} | {r['labels_s00']:.0f} | "
            f"{r['coverage_s00']:.3f} | {r['coverage_min_other']:.3f} | {r['coverage_mean']:.3f} | "
            f"{others} |"
        )
    return "\n".join(lines)


def docs_section(out: pd.DataFrame, repeats: int, command: str) -> str:
    """The generated head of docs/validation.md section 6a (up to the 12-stratum comparison)."""
    return f"""### 6a. Campaign stops with one atypical stratum

Generated by `{command}`.
Pool of 40,000 rows in 10 strata; stratum `s00` has error rate 0.16 (0.06 in the
exchangeable control) and holds 2%, 6.4% or 15% of the rows; the other nine have rates
0.050-0.070. Goal: every stratum's 95% interval at half-width 0.05; batches of 20 labels;
{repeats} seeded repeats per row, the same seeds (common random numbers) for every row of a
scenario; robust population model. Coverage is per stratum over the {repeats} stops, on the
interval the stratum reports at its stop.

Stopping rules: `guarantee="average"` stops every stratum on its pooled interval's
half-width; `guarantee="stratum"` (the default) on its guaranteed interval (the adaptive
interval from the leave-one-out prior of the other strata at the compensated level 0.965);
`independent_beta` models each stratum on its own data.

{docs_table(out)}

{END_MARK}"""


#: where the generated part of section 6a ends (the reading below it is written by hand)
END_MARK = "<!-- end of the table generated by benchmarks/validate_outlier.py -->"


def rewrite_section(body: str) -> None:
    """Replace the generated part of docs/validation.md section 6a (up to ``END_MARK``)."""
    path = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
    text = path.read_text()
    start = text.index("### 6a.")
    end = text.index(END_MARK, start) + len(END_MARK)
    path.write_text(text[:start] + body + text[end:])


def exact_wilson_baseline(reps: int = 100) -> pd.DataFrame:
    """Wilson coverage of the hierarchical study's datasets, computed exactly.

    Same datasets as ``benchmarks/validate.py`` (seed ``7000 + scenario index``); for each
    stratum the coverage given its true rate and size is ``sum_x Bin(x; n, p) 1[covered]``,
    so only the draw of the rates and sizes is random (no Monte Carlo over the counts).
    """
    import validate as v
    from scipy import stats

    from bayeseval import proportion_ci

    rows = []
    for si, scenario in enumerate(v.SCENARIOS):
        rng = np.random.default_rng(7000 + si)
        cov, hits = [], []
        for _ in range(reps):
            s, n, theta = v.simulate_dataset(scenario, rng)
            hits.append(v.interval_hits(*proportion_ci(s, n, level=v.LEVEL, method="wilson")[:2], theta))
            for nk, pk in zip(n, theta, strict=True):
                x = np.arange(nk + 1)
                lo, hi = proportion_ci(x, np.full(nk + 1, nk), level=v.LEVEL, method="wilson")[:2]
                cov.append(float(stats.binom.pmf(x, nk, pk) @ ((np.asarray(lo) <= pk) & (pk <= np.asarray(hi)))))
        rows.append(
            {"scenario": scenario, "wilson_monte_carlo": float(np.mean(hits)), "wilson_exact": float(np.mean(cov))}
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["campaigns", "wilson"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rules", default="expected_width")
    parser.add_argument(
        "--variants",
        default=",".join(str(i) for i in range(len(VARIANTS))),
        help="comma-separated indices into VARIANTS (0 average, 1 stratum)",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/validation.md section 6a")
    args = parser.parse_args()
    if args.what == "wilson":
        print(exact_wilson_baseline().round(3).to_string(index=False))
        return
    names = list(VARIANTS)
    variants = tuple(names[int(i)] for i in args.variants.split(","))
    out = run_campaigns(args.repeats, rules=tuple(args.rules.split(",")), variants=variants)
    pd.set_option("display.width", 250)
    print(out.round(3).to_string(index=False))
    if args.out:
        out.to_csv(args.out, index=False)
    if args.write_docs:
        argv = sys.argv[1:]
        if "--out" in argv:  # where the CSV went is not part of the recipe
            i = argv.index("--out")
            argv = argv[:i] + argv[i + 2 :]
        command = "python benchmarks/validate_outlier.py " + " ".join(argv)
        rewrite_section(docs_section(out, args.repeats, command))


if __name__ == "__main__":
    main()
