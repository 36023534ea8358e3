"""Outlier safety of the campaign stopping rule, the default fit and the conflict check.

Scenarios (seeded): one atypical stratum (error rate 0.16) among nine homogeneous strata
with rates near 0.06, the atypical stratum holding 2%, 6.4% or 15% of a 40,000-row pool; and
the exchangeable control (all ten strata near 0.06). ``expected_width`` campaigns with the
default settings to a 0.05 half-width at level 0.95; coverage at stop of every stratum, and
labels used. ``--before`` adds each rule once more with the stopping rule before the
own-evidence floor became the default (``RuleState(own_floor=None)``), ``--gain 1.5`` with
the opt-in ``min_pooling_gain=1.5``; all on the same seeds.

Run: ``python benchmarks/validate_outlier.py campaigns [--repeats 40] [--before] [--gain 1.5] [--out file.csv]``
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np
import pandas as pd

from bayeseval.active.rules import RuleState
from bayeseval.active.simulate import simulate

N_STRATA = 10
HOMOGENEOUS = np.linspace(0.05, 0.07, N_STRATA - 1)


def atypical_pool(share: float | None, *, n_rows: int = 40_000, atypical_rate: float = 0.16,
                  random_seed: int = 0) -> pd.DataFrame:
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


@contextlib.contextmanager
def pooling_gain(gain: float):
    """Run with ``RuleState(min_pooling_gain=gain)`` (not exposed by the campaign settings yet)."""
    original = RuleState.__post_init__

    def post_init(self) -> None:
        original(self)
        self.min_pooling_gain = gain

    RuleState.__post_init__ = post_init
    try:
        yield
    finally:
        RuleState.__post_init__ = original


@contextlib.contextmanager
def own_evidence_off():
    """Run with the stopping rule before the own-evidence check (``own_floor=None``).

    ``simulate`` builds its states from the campaign settings, which do not expose
    ``own_floor`` yet; the check is switched off here for the comparison only.
    """
    original = RuleState.own_evidence
    RuleState.own_evidence = lambda self: np.ones(len(self.strata), bool)
    try:
        yield
    finally:
        RuleState.own_evidence = original


def _campaign_rows(name: str, res, rules, label: str, t0: float) -> list[dict]:
    iv = res.intervals
    rows = []
    for rule in rules:
        tab = res.table[res.table["rule"] == rule]
        mine = iv[iv["rule"] == rule]
        cov = mine.groupby("stratum")["covered"].mean()
        row = {"scenario": name, "rule": rule + label, "labels_mean": tab["labels_used"].mean(),
               "labels_s00": mine.loc[mine["stratum"] == "s00", "trials"].mean(),
               "coverage_s00": cov.get("s00"), "coverage_min_stratum": cov.min(),
               "coverage_mean": cov.mean(), "seconds": time.perf_counter() - t0}
        row.update({f"cov_{k}": v for k, v in cov.items()})
        rows.append(row)
    return rows


def run_campaigns(repeats: int, rules=("expected_width",), before: bool = False, gain: float | None = None,
                  **kw) -> pd.DataFrame:
    """Coverage at stop of every stratum and labels, per scenario and rule (same seeds)."""
    rows = []
    for name, share in SCENARIOS.items():
        pool = atypical_pool(share, random_seed=1)
        args = dict(strata="stratum", y_pred="pred", y_true="truth", n_repeats=repeats, batch_size=20,
                    random_seed=0, progress=False, **kw)
        pooled = [r for r in rules if r != "independent_beta"]
        if before and pooled:
            t0 = time.perf_counter()
            with own_evidence_off():
                res = simulate(pool, rules=pooled, **args)
            rows += _campaign_rows(name, res, pooled, " (before)", t0)
        if gain is not None and pooled:
            t0 = time.perf_counter()
            with pooling_gain(gain):
                res = simulate(pool, rules=pooled, **args)
            rows += _campaign_rows(name, res, pooled, f" (min_pooling_gain={gain:g})", t0)
        t0 = time.perf_counter()
        rows += _campaign_rows(name, simulate(pool, rules=list(rules), **args), rules, "", t0)
    return pd.DataFrame(rows)


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
        rows.append({"scenario": scenario, "wilson_monte_carlo": float(np.mean(hits)),
                     "wilson_exact": float(np.mean(cov))})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["campaigns", "wilson"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rules", default="expected_width")
    parser.add_argument("--before", action="store_true", help="add the rule before the own-evidence check")
    parser.add_argument("--gain", type=float, default=None, help="add the rule with this min_pooling_gain")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.what == "wilson":
        print(exact_wilson_baseline().round(3).to_string(index=False))
        return
    out = run_campaigns(args.repeats, rules=tuple(args.rules.split(",")), before=args.before, gain=args.gain)
    pd.set_option("display.width", 250)
    print(out.round(3).to_string(index=False))
    if args.out:
        out.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
