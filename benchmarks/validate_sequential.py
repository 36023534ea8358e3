"""Exact operating characteristics of sequential rules on one stratum.

Every figure comes from the exact dynamic programme over (look, count) of
``bayeseval._kernels.sequential.sequential_outcome`` (no simulation). Prints Markdown tables:

1. Decisions against a threshold of 0.10 (level 0.95, cap 4,000 labels, Bernoulli labels):
   the probability of a wrong decision by look schedule (a look every 1, 5, 10, 20 or 50
   labels) and true rate (0.08-0.12), for the fixed-level posterior rule (stop when the
   ``Beta(1 + s, 1 + n - s)`` posterior probability of meeting the threshold is at least
   the level or at most one minus it) and for the anytime-valid mixture test, untuned
   and tuned for 1,500 labels (at least 5 labels); then the expected labels and the share
   undecided at the cap, and the wrong-decision probability when the labels are drawn
   without replacement from a stratum of 5,000 rows.
2. The confidence sequence: the probability that some look excludes the true rate, with a
   look after every label up to 2,000 labels, 25 true rates 0.02-0.98 (largest and
   smallest over the rates), untuned and tuned; then its expected width against Wilson's
   at 100 and 4,000 labels (true rates 0.1 and 0.5).
3. Coverage at stop of width-based stopping: stop when the interval's half-width is at
   most 0.05 (a look every 1, 5, 10, 20 or 50 labels, cap 1,000), read that interval;
   Wilson and the adaptive (FAB) interval with a fixed ``Beta(2, 18)`` prior, true rates
   0.02-0.50 (step 0.01); then the level the stopping interval must be computed at so that the
   coverage at stop is at least 0.94 at every rate and schedule.

Run from the repository root::

    python benchmarks/validate_sequential.py                 # all tables, about 8 minutes
    python benchmarks/validate_sequential.py --part decide   # table 1 only (about 1 minute)
    python benchmarks/validate_sequential.py --quick         # smoke version
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from scipy import stats
from scipy.special import betainc

from bayeseval._kernels.anytime import (
    UNTUNED_CONCENTRATION,
    confidence_sequence_bounds,
    decision_boundaries,
    decision_evidence,
    log_mixture_martingale,
    tuned_concentration,
)
from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.fab import fab_intervals_all_counts
from bayeseval._kernels.sequential import sequential_outcome

LEVEL = 0.95
THRESHOLD = 0.10
SCHEDULES = (1, 5, 10, 20, 50)
DECISION_RATES = (0.08, 0.09, 0.10, 0.11, 0.12)
MIN_TRIALS = 5


def _row(cells: list) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _header(cells: list) -> str:
    return _row(cells) + "\n" + _row(["---"] * len(cells))


# -- 1. decisions -----------------------------------------------------------------------------
def posterior_boundaries(cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Count boundaries of the fixed-level posterior rule (Beta(1, 1) prior) at each n."""
    below = np.full(cap + 1, -1)
    above = np.arange(cap + 1) + 1
    for n in range(1, cap + 1):
        s = np.arange(n + 1)
        p_meets = betainc(1.0 + s, 1.0 + n - s, THRESHOLD)
        hit_b, hit_a = s[p_meets >= LEVEL], s[p_meets <= 1 - LEVEL]
        below[n] = hit_b.max() if hit_b.size else -1
        above[n] = hit_a.min() if hit_a.size else n + 1
    return below, above


def decision_outcome(p: float, every: int, cap: int, bounds: tuple, min_trials: int, rows: int | None = None):
    """Exact outcome of a decision rule given by its count boundaries (``s <= below[n]``: meets)."""
    below, above = bounds

    def stop(s: np.ndarray, n: int) -> np.ndarray:
        return (n >= min_trials) & ((s <= below[n]) | (s >= above[n]))

    def wrong(s: np.ndarray, n: int) -> np.ndarray:
        meets = (n >= min_trials) & (s <= below[n])
        return meets if p >= THRESHOLD else (n >= min_trials) & (s >= above[n]) & ~meets

    return sequential_outcome(p, stop, wrong, every=every, max_trials=cap, rows=rows)


def decision_tables(cap: int, planned: int) -> None:
    c_tuned = tuned_concentration(planned, LEVEL)
    n_all = np.arange(cap + 1)
    rules = {
        "posterior (fixed level)": (posterior_boundaries(cap), 0),
        f"anytime, untuned (c = {UNTUNED_CONCENTRATION:g})": (
            decision_boundaries(n_all, THRESHOLD, LEVEL, UNTUNED_CONCENTRATION),
            MIN_TRIALS,
        ),
        f"anytime, tuned for {planned} (c = {c_tuned:.0f})": (
            decision_boundaries(n_all, THRESHOLD, LEVEL, c_tuned),
            MIN_TRIALS,
        ),
    }
    print(f"\n### Wrong-decision probability (threshold {THRESHOLD}, level {LEVEL}, cap {cap} labels)\n")
    print(_header(["rule", "true rate", *[f"every {k}" for k in SCHEDULES]]))
    cost = {}
    for name, (bounds, mt) in rules.items():
        for p in DECISION_RATES:
            outs = [decision_outcome(p, k, cap, bounds, mt) for k in SCHEDULES]
            cost[name, p] = outs
            print(_row([name, p, *[f"{o.event_probability:.4f}" for o in outs]]))
    print(f"\n### Expected labels (share undecided at {cap} labels)\n")
    print(_header(["rule", "true rate", *[f"every {k}" for k in SCHEDULES]]))
    for name in rules:
        for p in (0.08, 0.12):
            print(_row([name, p, *[f"{o.expected_trials:.0f} ({o.cap_probability:.3f})" for o in cost[name, p]]]))
    rows = 5000
    print(f"\n### Without replacement from a stratum of {rows} rows (cap {cap})\n")
    print(_header(["rule", "true rate", *[f"every {k}" for k in SCHEDULES]]))
    for name, (bounds, mt) in rules.items():
        for p in (0.08, 0.10, 0.12):
            outs = [decision_outcome(p, k, cap, bounds, mt, rows=rows) for k in SCHEDULES]
            print(_row([name, p, *[f"{o.event_probability:.4f}" for o in outs]]))
    print(f"\n### Why at least {MIN_TRIALS} labels: decisions possible on fewer labels without min_trials\n")
    print(
        _header(
            [
                "rule",
                "P(decided within 4 labels) at 0.08",
                "at 0.5",
                *[f"e-value, {k} of {k} labels errors, t = {t}" for k in (1, 2) for t in (0.01, 0.05, 0.1)],
            ]
        )
    )
    for name, (bounds, _) in list(rules.items())[1:]:
        c = UNTUNED_CONCENTRATION if "untuned" in name else c_tuned
        early = [decision_outcome(p, 1, MIN_TRIALS - 1, bounds, 0).stop_probability.sum() for p in (0.08, 0.5)]
        one = [float(np.exp(decision_evidence(k, k, t, c)[1])) for k in (1, 2) for t in (0.01, 0.05, 0.1)]
        print(_row([name, f"{early[0]:.2g}", f"{early[1]:.2g}", *[f"{v:.1f}" for v in one]]))


# -- 2. the confidence sequence ---------------------------------------------------------------
def cs_tables(cap: int, rates: np.ndarray) -> None:
    crit = -np.log1p(-LEVEL)
    designs = {
        "untuned": UNTUNED_CONCENTRATION,
        "tuned for 100": tuned_concentration(100, LEVEL),
        f"tuned for {cap}": tuned_concentration(cap, LEVEL),
    }
    print(f"\n### Confidence sequence: P(some look excludes the true rate), a look after every label up to {cap}\n")
    print(_header(["prior", "c", "max over rates", "min over rates", "at 0.02", "at 0.10", "at 0.50"]))
    for name, c in designs.items():
        miss = {}
        for p in rates:

            def excluded(s: np.ndarray, n: int, p: float = float(p), c: float = c) -> np.ndarray:
                return log_mixture_martingale(p, s, n, c) >= crit

            miss[round(float(p), 2)] = sequential_outcome(
                float(p), excluded, excluded, every=1, max_trials=cap
            ).event_probability
        vals = list(miss.values())
        print(
            _row(
                [
                    name,
                    f"{c:.1f}",
                    f"{max(vals):.4f}",
                    f"{min(vals):.4f}",
                    *[f"{miss.get(r, float('nan')):.4f}" for r in (0.02, 0.1, 0.5)],
                ]
            )
        )
    print("\n### Expected width against Wilson's (exact, over Binomial(n, p))\n")
    print(_header(["n", "true rate", "Wilson width", "untuned", "tuned for n", "tuned for 100", "tuned for 4000"]))
    for n in (100, 4000):
        s = np.arange(n + 1.0)
        nn = np.full(n + 1, float(n))
        w_lo, w_hi = binomial_bounds(s, nn, 1 - LEVEL, "wilson")
        for p in (0.1, 0.5):
            pmf = stats.binom.pmf(s, n, p)
            wilson = float(pmf @ (w_hi - w_lo))
            cells = []
            for c in (
                UNTUNED_CONCENTRATION,
                tuned_concentration(n, LEVEL),
                tuned_concentration(100, LEVEL),
                tuned_concentration(4000, LEVEL),
            ):
                lo, hi = confidence_sequence_bounds(s, nn, LEVEL, c)
                cells.append(f"{float(pmf @ (hi - lo)) / wilson:.2f}x")
            print(_row([n, p, f"{wilson:.4f}", *cells]))


# -- 3. coverage at stop ----------------------------------------------------------------------
class IntervalTable:
    """Intervals for every count at each n (computed once per n, on demand)."""

    def __init__(self, method: str, level: float) -> None:
        self.method, self.level, self.cache = method, level, {}

    def __call__(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if n not in self.cache:
            s = np.arange(n + 1.0)
            if self.method == "wilson":
                self.cache[n] = binomial_bounds(s, np.full(n + 1, float(n)), 1 - self.level, "wilson")
            else:  # adaptive interval with a fixed Beta(2, 18) prior
                pmf = beta_mixture_predictive(n, [1.0], [2.0], [18.0])
                iv = fab_intervals_all_counts(n, pmf, self.level)
                self.cache[n] = (iv.lower, iv.upper)
        return self.cache[n]


def stop_coverage(table: IntervalTable, p: float, every: int, cap: int, target: float) -> float:
    def stop(s: np.ndarray, n: int) -> np.ndarray:
        lo, hi = table(n)
        return (hi - lo) / 2 <= target

    def covers(s: np.ndarray, n: int) -> np.ndarray:
        lo, hi = table(n)
        return (lo <= p) & (p <= hi)

    return sequential_outcome(p, stop, covers, every=every, max_trials=cap).event_at_end


def fixed_n_coverage(table: IntervalTable, p: float, n: int) -> float:
    lo, hi = table(n)
    return float(stats.binom.pmf(np.arange(n + 1), n, p) @ ((lo <= p) & (p <= hi)))


def coverage_grid(method: str, level: float, rates: np.ndarray, cap: int, target: float) -> tuple:
    """Coverage at stop per (rate, schedule), and the interval table (to reuse)."""
    table = IntervalTable(method, level)
    grid = np.array([[stop_coverage(table, float(p), k, cap, target) for k in SCHEDULES] for p in rates])
    return grid, table


def expected_labels(table: IntervalTable, p: float, every: int, cap: int, target: float) -> float:
    def stop(s: np.ndarray, n: int) -> np.ndarray:
        lo, hi = table(n)
        return (hi - lo) / 2 <= target

    return sequential_outcome(p, stop, stop, every=every, max_trials=cap).expected_trials


def stop_tables(rates: np.ndarray, cap: int, target: float, levels: tuple, shown: np.ndarray) -> None:
    print(f"\n### Coverage at stop: stop when the half-width is at most {target} (level {LEVEL}, cap {cap})\n")
    print(
        f"{rates.size} true rates {rates[0]:.2f}-{rates[-1]:.2f}; rows for some of them, then the minimum over all.\n"
    )
    print(_header(["interval", "true rate", "fixed n = 100", *[f"every {k}" for k in SCHEDULES]]))
    names = {"wilson": "Wilson", "adaptive": "adaptive, Beta(2, 18) prior"}
    grids = {}
    for method, name in names.items():
        grid, table = coverage_grid(method, LEVEL, rates, cap, target)
        grids[method] = {LEVEL: (grid, table)}
        for p, row in zip(rates, grid, strict=True):
            if np.any(np.isclose(p, shown)):
                print(
                    _row(
                        [name, f"{p:.2f}", f"{fixed_n_coverage(table, float(p), 100):.4f}", *[f"{v:.4f}" for v in row]]
                    )
                )
        fixed = min(fixed_n_coverage(table, float(p), 100) for p in rates)
        print(_row([name, "min (all rates)", f"{fixed:.4f}", *[f"{v:.4f}" for v in grid.min(axis=0)]]))
        print(_row([name, "mean (all rates)", "", *[f"{v:.4f}" for v in grid.mean(axis=0)]]), flush=True)
    print(f"\n### Compensation: level of the stopping interval for coverage at stop >= {LEVEL - 0.01:.2f}\n")
    print(_header(["interval", "stopping level", "min coverage at stop (rates x schedules)", "worst rate, schedule"]))
    for method, name in names.items():
        for lv in levels:
            if lv not in grids[method]:
                grids[method][lv] = coverage_grid(method, lv, rates, cap, target)
            grid = grids[method][lv][0]
            i, j = np.unravel_index(np.argmin(grid), grid.shape)
            print(_row([name, lv, f"{grid.min():.4f}", f"{rates[i]:.2f}, every {SCHEDULES[j]}"]), flush=True)
            if grid.min() >= LEVEL - 0.01:
                break
    label_costs(grids, names, cap, target)


def label_costs(grids: dict, names: dict, cap: int, target: float) -> None:
    """Expected labels at stop at the nominal level and at the compensating one (every 10)."""
    print("\n### What compensation costs: expected labels to stop (a look every 10 labels)\n")
    print(_header(["interval", "stopping level", *[f"at {p}" for p in (0.02, 0.1, 0.2, 0.3, 0.5)]]))
    for method, name in names.items():
        tried = sorted(grids[method])
        for lv in (tried[0], tried[-1]) if len(tried) > 1 else tried:
            table = grids[method][lv][1]
            print(
                _row(
                    [
                        name,
                        lv,
                        *[f"{expected_labels(table, p, 10, cap, target):.0f}" for p in (0.02, 0.1, 0.2, 0.3, 0.5)],
                    ]
                ),
                flush=True,
            )


def _timed(label: str, fn: Callable[[], None]) -> None:
    t0 = time.perf_counter()
    fn()
    print(f"\n({label}: {time.perf_counter() - t0:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("all", "decide", "cs", "stop"), default="all")
    parser.add_argument("--quick", action="store_true", help="small caps and grids (smoke test)")
    args = parser.parse_args()
    quick = args.quick
    if args.part in ("all", "decide"):
        _timed("decisions", lambda: decision_tables(400 if quick else 4000, 1500))
    if args.part in ("all", "cs"):
        rates = np.round(np.arange(0.02, 0.99, 0.24 if quick else 0.04), 2)
        _timed("confidence sequence", lambda: cs_tables(200 if quick else 2000, rates))
    if args.part in ("all", "stop"):
        rates = np.round(np.arange(0.02, 0.501, 0.16 if quick else 0.01), 2)
        shown = np.round(np.arange(0.02, 0.51, 0.04), 2)
        _timed(
            "coverage at stop",
            lambda: stop_tables(
                rates, 300 if quick else 1000, 0.05, (0.95, 0.955, 0.96, 0.965, 0.97, 0.975, 0.98), shown
            ),
        )


if __name__ == "__main__":
    main()
