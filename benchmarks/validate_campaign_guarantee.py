"""Coverage at stop per stratum, and labels, under the two campaign guarantees.

Seeded campaign simulations (``bayeseval.campaign.simulation.simulate``) on a 12-stratum pool
(stratum sizes 150 to 19,000 rows, geometric; eleven strata at error rates 0.06-0.10) with
``s03`` (562 rows) at 0.25 or at 0.14, or typical at 0.08 (exchangeable); a low-side outlier
(``s03`` at 0.01 among strata at 0.08-0.12); and two masking outliers (``s02`` and ``s03``,
362 and 562 rows, at 0.30 among strata at 0.06-0.10). ``expected_width`` campaigns to a 0.05
half-width at level 0.95 with ``guarantee="stratum"`` (the default: each stratum stops on,
and reports, its adaptive interval from the leave-one-out prior of the other strata at the
compensated level 0.965) and ``guarantee="average"`` (each stratum stops on its pooled interval),
and ``rule="independent_beta"`` (every stratum on its own ``Beta(1, 1)`` posterior), the label
anchor. Every variant sees the same seeds: repeats run in chunks of ``--chunk`` campaigns,
chunk ``c`` seeded ``(7, c)``, and repeat ``r`` of a chunk is the ``r``-th child of that seed
in every variant (common random numbers).

Coverage at stop is of the interval each stratum reads (``simulate``'s ``covered``: the
true rate is the stratum's share of errors in the pool); its Monte Carlo standard error
is ``sqrt(c (1 - c) / repeats)``. Per-stratum results of every campaign are appended to a
CSV (``--csv``, default ``benchmarks/results/campaign_guarantee.csv``), one chunk at a time, so
a run can be stopped and resumed (chunks already in the file are skipped) and the tables
rebuilt without rerunning (``--from-csv``).

Prototype variants (not package options; for measuring where the labels go):

- ``stratum@0.95``: the guaranteed interval computed at the level itself (no compensation;
  ``bayeseval._kernels.guarantee.STOP_ALPHA_SHARE = 1``);
- ``stratum@share=X``: the stop level ``1 - X (1 - level)``.

``--exact`` prints the exact one-stratum coverage at stop and expected labels of the
adaptive interval (``bayeseval._kernels.sequential.sequential_outcome``; fixed ``Beta(2, 18)``
prior, stop at half-width 0.05, at most ``--exact-max-trials`` labels) for looks every 1, 5, 10, 20 and 50
labels, at several interval levels, beside the independent ``Beta(1, 1)`` interval at 0.95.

Run::

    python benchmarks/validate_campaign_guarantee.py --repeats 100            # the table
    python benchmarks/validate_campaign_guarantee.py --from-csv               # table from the CSV
    python benchmarks/validate_campaign_guarantee.py --exact                  # the one-stratum table
    python benchmarks/validate_campaign_guarantee.py --variants stratum@0.95 --scenarios exchangeable
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval._kernels import guarantee as campaign_rules  # the stop level reads STOP_ALPHA_SHARE here
from bayeseval.campaign import Budget, Each
from bayeseval.campaign.simulation import simulate

N_STRATA = 12
SIZES = np.round(np.geomspace(150, 19_000, N_STRATA)).astype(int)
OTHERS = np.linspace(0.06, 0.10, N_STRATA - 1)
LOW_OTHERS = np.linspace(0.08, 0.12, N_STRATA - 1)
ODD = 3  # the stratum whose rate the scenarios set (562 rows)
CSV = Path(__file__).resolve().parent / "results" / "campaign_guarantee.csv"

#: name -> ({stratum index: rate}, rates of the others in order)
SCENARIOS = {
    "atypical 0.25": ({ODD: 0.25}, OTHERS),
    "atypical 0.14": ({ODD: 0.14}, OTHERS),
    "exchangeable": ({ODD: 0.08}, OTHERS),
    "low-side 0.01": ({ODD: 0.01}, LOW_OTHERS),
    "masking 0.30 x2": ({ODD - 1: 0.30, ODD: 0.30}, np.linspace(0.06, 0.10, N_STRATA - 2)),
}
EXCHANGEABLE = ("exchangeable", "6a exchangeable")

#: the scenarios of section 6a (``benchmarks/validate_outlier.py``): 40,000 rows in 10 strata,
#: ``s00`` at 0.16 holding 2%, 6.4% or 15% of the rows (0.06 in the exchangeable control)
#: among nine at 0.05-0.07 (rows drawn with seed 1), batches of 20 labels
SCENARIOS_6A = {"6a atypical 2%": 0.02, "6a atypical 6.4%": 0.064, "6a atypical 15%": 0.15, "6a exchangeable": None}
BATCH_6A = 20

#: variant -> simulate keyword arguments (prototype variants are parsed in ``variant_kwargs``)
VARIANTS = {
    "stratum": {"rules": ["expected_width"], "guarantee": "stratum"},
    "average": {"rules": ["expected_width"], "guarantee": "average"},
    "independent_beta": {"rules": ["independent_beta"], "guarantee": "average"},
}


def scenario_rates(name: str) -> np.ndarray:
    odd, others = SCENARIOS[name]
    rates = np.empty(N_STRATA)
    free = [k for k in range(N_STRATA) if k not in odd]
    rates[free] = others
    for k, r in odd.items():
        rates[k] = r
    return rates


def scenario_pool(name: str) -> pd.DataFrame:
    """The pool: ``round(rate * rows)`` errors per stratum (the campaign shuffles the rows)."""
    if name in SCENARIOS_6A:
        from validate_outlier import atypical_pool

        return atypical_pool(SCENARIOS_6A[name], random_seed=1)
    frames = []
    for k, (rate, rows) in enumerate(zip(scenario_rates(name), SIZES, strict=True)):
        errors = np.zeros(rows, int)
        errors[: round(rate * rows)] = 1
        frames.append(pd.DataFrame({"stratum": f"s{k:02d}", "pred": 0, "truth": errors}))
    return pd.concat(frames, ignore_index=True)


def odd_strata(name: str) -> list[str]:
    if name in SCENARIOS_6A:
        return ["s00"]
    odd = SCENARIOS[name][0]
    return [f"s{k:02d}" for k in odd] if name not in EXCHANGEABLE else [f"s{ODD:02d}"]


@contextlib.contextmanager
def variant_kwargs(variant: str):
    """simulate's keyword arguments for a variant, with the prototype's patch in force."""
    base, _, opt = variant.partition("@")
    kwargs = dict(VARIANTS[base])
    old = campaign_rules.STOP_ALPHA_SHARE
    if opt:
        share = 1.0 if opt == "0.95" else float(opt.removeprefix("share="))
        campaign_rules.STOP_ALPHA_SHARE = share
    try:
        yield kwargs
    finally:
        campaign_rules.STOP_ALPHA_SHARE = old


def run_chunk(name: str, pool: pd.DataFrame, variant: str, chunk: int, size: int, batch_size: int) -> pd.DataFrame:
    with variant_kwargs(variant) as kwargs, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(
            pool,
            strata="stratum",
            y_pred="pred",
            y_true="truth",
            goal=Each(0.05),
            n_repeats=size,
            random_seed=(7, chunk),
            progress=False,
            **kwargs,
            budget=Budget(batch_size=batch_size),
        )
    cols = ["repeat", "stratum", "labelled", "trials", "lower", "upper", "true_rate", "covered"]
    out = res.intervals[cols].copy()
    # the results file keeps its columns: read_lower/read_upper, the interval read, are lower/upper
    out.insert(6, "read_lower", out["lower"])
    out.insert(7, "read_upper", out["upper"])
    out.insert(0, "scenario", name)
    out.insert(1, "variant", variant)
    out.insert(2, "batch_size", batch_size)
    out.insert(3, "chunk", chunk)
    rounds = res.table.set_index("repeat")["rounds"]
    out["rounds"] = out["repeat"].map(rounds).to_numpy()
    return out


def done_chunks(csv: Path) -> set:
    if not csv.exists():
        return set()
    old = pd.read_csv(csv, usecols=["scenario", "variant", "batch_size", "chunk"]).drop_duplicates()
    return set(map(tuple, old.to_numpy().tolist()))


def run(scenarios, variants, repeats: int, chunk: int, batch_size: int, csv: Path) -> None:
    csv.parent.mkdir(parents=True, exist_ok=True)
    have = done_chunks(csv)
    n_chunks = -(-repeats // chunk)
    for c in range(n_chunks):  # chunk-major: every variant and scenario advances together
        for name in scenarios:
            pool = scenario_pool(name)
            for variant in variants:
                batch = BATCH_6A if name in SCENARIOS_6A else batch_size
                if (name, variant, batch, c) in have:
                    continue
                t0 = time.process_time()
                out = run_chunk(name, pool, variant, c, chunk, batch)
                out.to_csv(csv, mode="a", header=not csv.exists(), index=False)
                print(f"chunk {c} {name:>16} {variant:>20}: {time.process_time() - t0:6.1f} cpu s", flush=True)


def summarise(data: pd.DataFrame) -> pd.DataFrame:
    """One line per scenario, variant and batch size."""
    rows = []
    for (name, variant, batch), grp in data.groupby(["scenario", "variant", "batch_size"], sort=False):
        cov = grp.groupby("stratum")["covered"].mean()
        reps = grp.groupby(["chunk", "repeat"]).ngroups
        odd = odd_strata(name)
        labels = grp.groupby(["chunk", "repeat"])["labelled"].sum()
        odd_cov = cov[odd].min()
        rows.append(
            {
                "scenario": name,
                "variant": variant,
                "batch_size": batch,
                "repeats": reps,
                "odd coverage": float(odd_cov),
                "odd se": float(np.sqrt(odd_cov * (1 - odd_cov) / reps)),
                "lowest other": float(cov.drop(odd).min()),
                "mean coverage": float(cov.mean()),
                "labels (mean)": float(labels.mean()),
                "labels (median)": float(labels.median()),
                "odd labels": float(grp[grp["stratum"] == odd[-1]]["labelled"].median()),
            }
        )
    out = pd.DataFrame(rows)
    anchor = out[out["variant"] == "independent_beta"].set_index(["scenario", "batch_size"])["labels (mean)"]
    key = list(zip(out["scenario"], out["batch_size"], strict=True))
    out["vs independent_beta"] = [out["labels (mean)"].iloc[i] / anchor.get(k, np.nan) for i, k in enumerate(key)]
    return out


def markdown(out: pd.DataFrame) -> str:
    head = (
        "| scenario | guarantee / rule | batch | repeats | coverage of the odd stratum (se) | lowest other stratum "
        "| mean over strata | labels (mean) | vs independent_beta | labels of the odd stratum (median) |"
    )
    lines = [head, "|" + "---|" * 10]
    for _, r in out.iterrows():
        lines.append(
            f"| {r['scenario']} | {r['variant']} | {r['batch_size']} | {r['repeats']} "
            f"| {r['odd coverage']:.3f} ({r['odd se']:.3f}) | {r['lowest other']:.3f} "
            f"| {r['mean coverage']:.3f} | {r['labels (mean)']:.0f} | {r['vs independent_beta']:.2f}x "
            f"| {r['odd labels']:.0f} |"
        )
    return "\n".join(lines)


# -- the exact one-stratum programme ------------------------------------------------------
def exact_table(
    levels=(0.95, 0.965), rates=None, schedules=(1, 5, 10, 20, 50), max_trials: int = 1000, target: float = 0.05
) -> pd.DataFrame:
    """Coverage at stop and expected labels of width-based stopping, one stratum, exactly."""
    from scipy import stats

    from bayeseval._kernels.betabinom import beta_mixture_predictive
    from bayeseval._kernels.fab import fab_intervals_all_counts
    from bayeseval._kernels.sequential import sequential_outcome

    rates = np.round(np.arange(0.02, 0.51, 0.01), 2) if rates is None else np.asarray(rates)
    cache: dict = {}

    def bounds(kind: str, level: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        key = (kind, level, n)
        if key not in cache:
            s = np.arange(n + 1)
            if kind == "adaptive":
                iv = fab_intervals_all_counts(n, beta_mixture_predictive(n, [1.0], [2.0], [18.0]), level)
                cache[key] = (iv.lower, iv.upper)
            else:  # independent Beta(1, 1), equal tails
                a = (1 - level) / 2
                cache[key] = (stats.beta.ppf(a, s + 1, n - s + 1), stats.beta.ppf(1 - a, s + 1, n - s + 1))
        return cache[key]

    rows = []
    kinds = [("adaptive", lv) for lv in levels] + [("beta11", 0.95)]
    for kind, level in kinds:
        for every in schedules:
            for p in rates:

                def stop(s, n, kind=kind, level=level):
                    lo, hi = bounds(kind, level, n)
                    return (hi - lo) / 2 <= target

                def event(s, n, p=p, kind=kind, level=level):
                    lo, hi = bounds(kind, level, n)
                    return (lo <= p) & (p <= hi)

                out = sequential_outcome(float(p), stop, event, every=every, max_trials=max_trials)
                rows.append(
                    {
                        "interval": kind,
                        "level": level,
                        "every": every,
                        "rate": float(p),
                        "coverage": out.event_at_end,
                        "labels": out.expected_trials,
                    }
                )
    return pd.DataFrame(rows)


def exact_markdown(tab: pd.DataFrame) -> str:
    lines = [
        "| interval | level | every | min coverage at stop (rate) | mean coverage | labels at 0.06 | at 0.10 "
        "| at 0.14 | at 0.30 |",
        "|" + "---|" * 9,
    ]
    for (kind, level, every), g in tab.groupby(["interval", "level", "every"], sort=False):
        worst = g.loc[g["coverage"].idxmin()]
        lab = g.set_index("rate")["labels"]
        lines.append(
            f"| {kind} | {level:g} | {every} | {worst['coverage']:.4f} ({worst['rate']:.2f}) "
            f"| {g['coverage'].mean():.4f} | "
            + " | ".join(f"{lab.get(r, np.nan):.0f}" for r in (0.06, 0.10, 0.14, 0.30))
            + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=10, help="repeats per seeded chunk")
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument(
        "--scenarios", nargs="*", default=list(SCENARIOS), help=f"names among {list(SCENARIOS) + list(SCENARIOS_6A)}"
    )
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--from-csv", action="store_true", help="only rebuild the table from the CSV")
    parser.add_argument("--exact", action="store_true", help="the exact one-stratum table")
    parser.add_argument("--exact-levels", type=float, nargs="*", default=[0.95, 0.965])
    parser.add_argument("--exact-max-trials", type=int, default=1000)
    parser.add_argument("--exact-rate-step", type=float, default=0.01)
    args = parser.parse_args()
    if args.exact:
        rates = np.round(np.arange(0.02, 0.5001, args.exact_rate_step), 3)
        tab = exact_table(levels=tuple(args.exact_levels), rates=rates, max_trials=args.exact_max_trials)
        path = args.csv.parent / "campaign_guarantee_exact.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        tab.to_csv(path, index=False)
        print(exact_markdown(tab))
        return
    if not args.from_csv:
        run(args.scenarios, args.variants, args.repeats, args.chunk, args.batch_size, args.csv)
    print(markdown(summarise(pd.read_csv(args.csv))))


if __name__ == "__main__":
    main()
