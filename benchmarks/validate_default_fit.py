"""Default fit and a small outlier: which interval the ``read`` column should point to.

Scenario (as in ``docs/validation.md`` 6d): one stratum at 0.40 with 10-30 trials among 12
strata whose rates are drawn from Beta(8, 92) (near 0.08) with 50-500 trials; control: the
same design with the small stratum's rate also drawn from Beta(8, 92) (exchangeable). Per
seeded dataset, default ``fit_hierarchical`` (exact engine, plain Beta-binomial) and the
robust model, and a set of candidate ``read`` rules: read the pooled interval unless the
stratum's leave-one-out conflict p-value (two-sided mid-p, :func:`bayeseval.checks.
conflict_check`) is at most ``c``, then read Wilson or the adaptive (FAB) interval.

The small stratum's coverage is computed EXACTLY given the other strata (its conflict
p-value and its adaptive interval depend on the others only; the pooled and robust fits are
refitted for each of its possible counts): ``sum_x Bin(x; n, p) 1[covered(x)]``; only the
draw of the other strata, the sizes and (control) the rate is random. Alike strata (the 12
others): Monte Carlo over the datasets, width relative to Wilson and coverage of the
interval read. Monte Carlo standard errors over datasets in parentheses.

Run from the repository root::

    python benchmarks/validate_default_fit.py                 # 400 datasets, ~10 min
    python benchmarks/validate_default_fit.py --reps 20       # smoke run
    python benchmarks/validate_default_fit.py --write         # also rewrite section 6d
    python benchmarks/validate_default_fit.py --csv r.csv     # keep the per-dataset results
    python benchmarks/validate_default_fit.py --from-csv r.csv --write   # table from them
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.conflict import _p_values_all_counts, loo_conflict
from bayeseval._kernels.fab import fab_intervals_all_counts
from bayeseval._kernels.loo_prior import loo_beta_mixture
from bayeseval.models import fit_hierarchical

LEVEL = 0.95
OUTLIER_RATE = 0.40
N_ALIKE = 12
DIFFUSE = 0.1  # the adaptive interval's default diffuse weight
#: candidate rules: (name, conflict level c, interval read when p <= c)
RULES = (
    ("Wilson if p <= 0.05", 0.05, "wilson"),
    ("Wilson if p <= 0.10", 0.10, "wilson"),
    ("adaptive if p <= 0.05", 0.05, "adaptive"),
    ("adaptive if p <= 0.10", 0.10, "adaptive"),
    ("adaptive if p <= 0.15", 0.15, "adaptive"),
    ("adaptive if p <= 0.20", 0.20, "adaptive"),
    ("adaptive if p <= 0.30", 0.30, "adaptive"),
    ("adaptive if p <= 0.50", 0.50, "adaptive"),
    ("adaptive always", 1.01, "adaptive"),
)
ROOT = Path(__file__).resolve().parents[1]


def wilson(x, n):
    return binomial_bounds(np.asarray(x, float), np.asarray(n, float), 1 - LEVEL, "wilson")


def _pooled_all_counts(s, n, k, xs, model):
    """Pooled (or robust) interval of stratum ``k`` for each of its counts ``xs``."""
    lo, hi = np.full(n[k] + 1, np.nan), np.full(n[k] + 1, np.nan)
    for x in xs:
        s2 = s.copy()
        s2[k] = x
        post = fit_hierarchical(s2, n, model=model, random_seed=0, draws=10)
        q = post.exact.quantiles([(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        lo[x], hi[x] = q[0, k], q[1, k]
    return lo, hi


def one_dataset(rng, outlier: bool) -> dict:
    n = np.concatenate([rng.integers(50, 501, N_ALIKE), [rng.integers(10, 31)]])
    theta = np.concatenate([rng.beta(8, 92, N_ALIKE), [OUTLIER_RATE if outlier else rng.beta(8, 92)]])
    s = rng.binomial(n, theta)
    k, nk, pk = N_ALIKE, int(n[N_ALIKE]), theta[N_ALIKE]
    out = {}
    # ---- the small stratum, exact over its own count
    w, a, b = loo_beta_mixture(s, n)
    pred = beta_mixture_predictive(nk, w[k], a[k], b[k])
    p_all = _p_values_all_counts(pred, "mid_p")
    ad = fab_intervals_all_counts(nk, pred, LEVEL, diffuse_weight=DIFFUSE)
    x = np.arange(nk + 1)
    wl, wh = wilson(x, np.full(nk + 1, nk))
    pmf = stats.binom.pmf(x, nk, pk)
    need = np.flatnonzero(pmf > 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pl, ph = _pooled_all_counts(s, n, k, need, "beta_binomial")
        rl, rh = _pooled_all_counts(s, n, k, need, "robust")
    pl, ph, rl, rh = (np.nan_to_num(v) for v in (pl, ph, rl, rh))  # pmf ~0 there

    def cov(lo, hi):
        return float(pmf @ ((lo <= pk) & (pk <= hi)))

    out["small: pooled"] = cov(pl, ph)
    out["small: robust"] = cov(rl, rh)
    out["small: wilson"] = cov(wl, wh)
    out["small: adaptive"] = cov(ad.lower, ad.upper)
    for name, c, other in RULES:
        flag = p_all <= c
        ol, oh = (wl, wh) if other == "wilson" else (ad.lower, ad.upper)
        lo, hi = np.where(flag, ol, pl), np.where(flag, oh, ph)
        hit = (lo <= pk) & (pk <= hi)
        out[f"small: {name}"] = float(pmf @ hit)
        out[f"flag: {name}"] = float(pmf @ flag)
        out[f"hit&flag: {name}"] = float(pmf @ (hit & flag))
        out[f"hit&noflag: {name}"] = float(pmf @ (hit & ~flag))
    # ---- the alike strata, Monte Carlo (the observed counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fit_hierarchical(s, n, random_seed=0, draws=10)
        q = post.exact.quantiles([(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        rob = fit_hierarchical(s, n, model="robust", random_seed=0, draws=10)
        rq = rob.exact.quantiles([(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    iv = adaptive_interval(s, n, level=LEVEL)
    # the adaptive interval of the small stratum equals the enumerated one at its count
    assert abs(iv.lower[k] - ad.lower[s[k]]) < 1e-12 and abs(iv.upper[k] - ad.upper[s[k]]) < 1e-12
    p = loo_conflict(s, n, control="per_stratum", mixture=(w, a, b)).p_value
    al = slice(0, N_ALIKE)
    wl, wh = wilson(s, n)
    ww = (wh - wl)[al]
    th = theta[al]

    def alike(name, lo, hi):
        out[f"width: {name}"] = float(np.mean((hi - lo)[al] / ww))
        out[f"alike cov: {name}"] = float(np.mean((lo[al] <= th) & (th <= hi[al])))

    alike("pooled", q[0], q[1])
    alike("robust", rq[0], rq[1])
    alike("wilson", wl, wh)
    alike("adaptive", iv.lower, iv.upper)
    for name, c, other in RULES:
        flag = p <= c
        ol, oh = (wl, wh) if other == "wilson" else (iv.lower, iv.upper)
        alike(name, np.where(flag, ol, q[0]), np.where(flag, oh, q[1]))
        out[f"false flags: {name}"] = float(flag[al].sum())
    return out


def study(reps: int, outlier: bool, random_seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(random_seed)
    return pd.DataFrame([one_dataset(rng, outlier) for _ in range(reps)])


def _fmt(col: pd.Series, digits: int = 3) -> str:
    se = col.std(ddof=1) / np.sqrt(len(col))
    return f"{col.mean():.{digits}f} ({se:.{digits}f})"


DEFAULT_RULE = "adaptive if p <= 0.20"  # what ``summary()["read"]`` does (READ_ADAPTIVE_P)


def table(out: pd.DataFrame, ctl: pd.DataFrame) -> str:
    names = ["pooled", "robust", "wilson", "adaptive"] + [r[0] for r in RULES]
    head = (
        "| interval read | small outlier coverage | when flagged | when not flagged | "
        "outlier flagged | false flags per dataset (12 alike) | alike width / Wilson | "
        "alike coverage | exchangeable small stratum coverage | exchangeable width / Wilson |"
    )
    lines = [head, "|" + "---|" * 10]
    for name in names:
        is_rule = f"flag: {name}" in out
        if is_rule:
            f = out[f"flag: {name}"].sum()
            when = f"{out[f'hit&flag: {name}'].sum() / f:.3f}" if f > 0 else "-"
            nf = len(out) - f
            when_not = f"{out[f'hit&noflag: {name}'].sum() / nf:.3f}" if nf > 1e-9 else "-"
            flagged, false = _fmt(out[f"flag: {name}"]), f"{out[f'false flags: {name}'].mean():.2f}"
        else:
            when = when_not = flagged = false = "-"
        label = f"**{name} (default `read`)**" if name == DEFAULT_RULE else name
        lines.append(
            f"| {label} | {_fmt(out[f'small: {name}'])} | {when} | {when_not} | {flagged} | {false} | "
            f"{_fmt(out[f'width: {name}'])} | {_fmt(out[f'alike cov: {name}'])} | "
            f"{_fmt(ctl[f'small: {name}'])} | {_fmt(ctl[f'width: {name}'])} |"
        )
    return "\n".join(lines)


def section(out: pd.DataFrame, ctl: pd.DataFrame) -> str:
    """Section 6d of docs/validation.md."""
    return f"""### 6d. Default fit: which interval to read for a small outlier

Generated by `python benchmarks/validate_default_fit.py --write` ({len(out)} seeded datasets
per scenario). One stratum at 0.40 with 10-30 trials among 12 strata whose rates are drawn
from Beta(8, 92) (near 0.08) with 50-500 trials; exchangeable control: the small stratum's
rate also from Beta(8, 92). Default `fit_hierarchical` (exact engine, plain Beta-binomial)
and `model="robust"`; a rule reads the pooled interval unless the small stratum's
leave-one-out conflict mid-p value (`bayeseval.checks.predictive.conflict_check`) is at most `c`, then
Wilson or the adaptive interval (`proportion_ci(..., method="adaptive")`). The small
stratum's coverage is exact given the other strata (enumeration over its own count, the
fits redone for each count); the alike strata are averaged over the datasets. Monte Carlo
standard errors over datasets in parentheses. "when flagged" is the coverage when the rule
reads the other interval; "false flags" counts alike strata that read it.

{table(out, ctl)}

Reading: the pooled interval alone covers the small outlier 0.32 of the time and the robust
model 0.87. Reading Wilson where the check flags at 0.05 gives 0.85:
the outlier is flagged 0.87 of the time and an unflagged outlier is never covered, so
coverage is capped by the check's power. Two changes lift the cap: a higher threshold (more
power) and the adaptive interval instead of Wilson (a false flag then costs less width: the
adaptive interval of an alike stratum is 0.99x Wilson's, and when flagged it covers 0.99-1.00
against Wilson's 0.97). The default, adaptive at p <= 0.20, covers the outlier 0.95 while the
alike strata keep 92% of pooling's width gain over Wilson (0.913 against 0.905; target:
at least 80%, i.e. at most 0.924) and the exchangeable control keeps 84% (0.874 against
0.850). The price: in the exchangeable control the small stratum's read interval covers
0.925 against the pooled 0.942 (it reads the pooled interval exactly when its count looks
typical), and 1.2 of the 12 alike strata per dataset read their adaptive interval.
"""


def rewrite_section(body: str) -> None:
    path = ROOT / "docs" / "validation.md"
    text = path.read_text()
    start = text.index("### 6d.")
    nxt = re.search(r"\n#{2,3} ", text[start + 5 :])
    end = start + 5 + nxt.start() + 1 if nxt else len(text)
    path.write_text(
        text[:start] + body.rstrip() + "\n\n" + text[end:].lstrip("\n") if nxt else text[:start] + body.rstrip() + "\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--write", action="store_true", help="rewrite docs/validation.md section 6d")
    ap.add_argument("--csv", default=None, help="save the per-dataset results (two files)")
    ap.add_argument("--from-csv", default=None, help="rebuild the table from saved results")
    args = ap.parse_args()
    t0 = time.process_time()
    if args.from_csv:
        out = pd.read_csv(args.from_csv).drop(columns="scenario")
        ctl = pd.read_csv(args.from_csv.replace(".csv", "_ctl.csv")).drop(columns="scenario")
    else:
        out = study(args.reps, True, args.seed)
        ctl = study(args.reps, False, args.seed + 1)
    if args.write:
        rewrite_section(section(out, ctl))
    if args.csv:
        out.assign(scenario="outlier").to_csv(args.csv, index=False)
        ctl.assign(scenario="exchangeable").to_csv(args.csv.replace(".csv", "_ctl.csv"), index=False)
    print(table(out, ctl))
    print(f"\n{len(out)} datasets per scenario, {time.process_time() - t0:.0f} s CPU")


if __name__ == "__main__":
    main()
