"""An evaluation whose rows come in sampling units (clusters) or carry graded outcomes.

When :func:`~bayeseval.tabulate` counted the rows by unit (``design=Design(cluster=...)`` or
``outcome=`` with partial credit), the rows of a unit are not independent yes/no draws and the
binomial intervals of the other sections do not hold. Each stratum's interval is then the
finite-sample valid interval of its units (:mod:`bayeseval._kernels.bounded_mean`: a betting
test inverted, no borrowing across strata), the overall rates combine units, and the row-level
pooled model is not fitted (it treats rows as independent binomial draws); under
``guarantee="average"`` the pooled model over units
(:func:`~bayeseval.models.exact_units.fit_exact_units`) gives the intervals, for binary outcomes. Binary rows in units of one row each
are not "by unit": they keep every binomial section, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from bayeseval._kernels.bounded_mean import unit_ci, units_ci
from bayeseval._kernels.conflict import READ_ADAPTIVE_P
from bayeseval._kernels.finite_pool import pool_ci, pool_units_ci
from bayeseval._render.formats import fixed, key_label, labels_text, n_strata
from bayeseval.counts.counts import Counts, tabulate
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.metrics import get_metric
from bayeseval.counts.units import level_names
from bayeseval.estimate.proxy import weighted_interval
from bayeseval.report.findings import Finding, Pooled
from bayeseval.report.sections import posterior_weighted

__all__ = [
    "by_unit",
    "partial_pool",
    "partial_pool_overall",
    "partial_pool_target",
    "unit_bounds",
    "unit_findings",
    "unit_overall",
    "unit_pooled",
    "unit_target",
    "whole_pool_bounds",
    "whole_pool_overall",
]


def by_unit(counts: Counts) -> bool:
    """Whether ``counts`` need the unit interval: a unit with more than one trial, or a graded outcome."""
    units = counts.units
    if units is None or len(units) == 0:
        return False
    s = units["unit_successes"].to_numpy(float)
    return bool((units["unit_trials"].to_numpy() > 1).any() or (s != np.round(s)).any())


def unit_bounds(counts: Counts, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's finite-sample valid interval from its units (NaN for a stratum without trials)."""
    assert counts.units is not None
    names = level_names(counts.strata)
    res = units_ci(counts.units, names, level)
    res = res.reindex(counts.strata)
    empty = counts.trials.to_numpy() == 0
    lo = np.where(empty, np.nan, res["lower"].to_numpy(float))
    hi = np.where(empty, np.nan, res["upper"].to_numpy(float))
    return lo, hi


def _all_units(counts: Counts) -> pd.DataFrame:
    """The units of every stratum as one histogram (the strata ignored)."""
    assert counts.units is not None
    return counts.units.groupby(["unit_successes", "unit_trials"], as_index=False, sort=True)["units"].sum()


def unit_overall(
    counts: Counts, table: pd.DataFrame, level: float, post: Any = None
) -> tuple[pd.DataFrame, list[Finding]]:
    """Overall rates by unit: unweighted (every unit of the test set, the unit interval) and, with
    ``weights``, reweighted (share x stratum rate, the strata's unit intervals combined by MOVER;
    ``table``'s ``lower``/``upper`` are those unit intervals) and, with the pooled model over units
    (``post``, ``guarantee="average"``), the posterior of the weighted rate (``posterior_weighted``)."""
    z = float(norm.ppf((1 + level) / 2))
    rows: dict[str, list[float]] = {"unweighted": [np.nan] * 4}
    units = _all_units(counts)
    if len(units):
        est, lo, hi = unit_ci(
            units["unit_successes"].to_numpy(float),
            units["unit_trials"].to_numpy(np.int64),
            units["units"].to_numpy(np.int64),
            level,
        )
        rows["unweighted"] = [est, lo, hi, (hi - lo) / (2 * z)]
    findings = [
        Finding(
            "unit overall",
            (),
            (
                "The unweighted overall rate treats the test set's units as one sample (its interval is the "
                "unit interval over all of them)."
            ),
            "note",
        )
    ]
    if counts.weights is not None:
        w = counts.weights.reindex(table.index).to_numpy(float)
        est, lo, hi = weighted_interval(table, w)
        rows["reweighted"] = [est, lo, hi, (hi - lo) / (2 * z) if math.isfinite(est) else np.nan]
        findings.append(
            Finding(
                "reweighted",
                (),
                (
                    "The reweighted rate (population share x stratum rate, summed) is the population estimate; "
                    "its interval combines the strata's unit intervals by MOVER (approximate: each stratum's "
                    "interval is valid, their combination is not exact)."
                ),
                "note",
            )
        )
        if post is not None:
            rows["posterior_weighted"] = posterior_weighted(post, counts.weights, level)
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    return overall, findings


def whole_pool_bounds(counts: Counts) -> tuple[np.ndarray, np.ndarray]:
    """``population="pool"`` with every row labelled: each stratum's rate is the pool's rate, exactly."""
    rate = counts.rates.to_numpy(float)
    return rate.copy(), rate.copy()


def whole_pool_overall(counts: Counts) -> tuple[pd.DataFrame, list[Finding]]:
    """The pool's overall rates, exact: unweighted (every row), and reweighted by ``weights``."""
    total = float(counts.trials.sum())
    rate = float(counts.successes.sum()) / total if total else np.nan
    rows = {"unweighted": [rate, rate, rate, 0.0]}
    if counts.weights is not None:
        w = counts.weights.to_numpy(float)
        r = counts.rates.to_numpy(float)
        used = w > 0
        est = float(np.sum(w[used] * r[used])) if np.isfinite(r[used]).all() else np.nan
        rows["reweighted"] = [est, est, est, 0.0]
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    return overall, []


@dataclass
class PartialPool:
    """``population="pool"`` with unlabelled rows: the labelled rows' counts (on every stratum of the
    pool), the pool's trials per stratum and each stratum's finite-pool interval."""

    counts: Counts
    pool_trials: pd.Series
    sizes: pd.DataFrame | None  # with units: pool_units, pool_trials, pool_largest per stratum
    pool: Counts  # every row of the pool, counted with the truth set to the prediction (its sizes)
    lower: np.ndarray
    upper: np.ndarray

    def bounds(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Each stratum's finite-pool interval at ``level`` (NaN for a stratum without trials in the pool,
        [0, 1] for one without labels)."""
        index = self.counts.strata
        big_n = self.pool_trials.to_numpy(float)
        s, n = self.counts.successes.to_numpy(float), self.counts.trials.to_numpy(float)
        lo, hi = np.full(len(index), np.nan), np.full(len(index), np.nan)
        has = big_n > 0
        if self.sizes is not None and self.counts.units is not None:
            res = pool_units_ci(self.counts.units, level_names(index), self.sizes, level).reindex(index)
            lo = np.where(has, res["lower"].to_numpy(float), np.nan)
            hi = np.where(has, res["upper"].to_numpy(float), np.nan)
        elif has.any():
            lo[has], hi[has] = pool_ci(np.rint(s[has]), n[has], big_n[has], level)
        unlabelled = has & (n == 0)
        lo[unlabelled], hi[unlabelled] = 0.0, 1.0
        return lo, hi

    @property
    def labelled(self) -> int:
        return int(self.counts.trials.sum())

    @property
    def rows(self) -> int:
        return int(self.pool_trials.sum())

    def describe(self) -> str:
        """The design in words: the pool's sizes, and labelled n of N."""
        design = self.counts.design if self.counts.design is not None else Design(population="pool")
        return (
            f"{design.describe(self.pool)}; {self.labelled:,} of the pool's {self.rows:,} trials labelled, taken as "
            "a simple random sample without replacement within each stratum"
        )


def _unlabelled(data: Any, column: Any) -> np.ndarray | None:
    """Rows of a pandas frame whose ``column`` is missing (None: not a frame with that column)."""
    if not isinstance(data, pd.DataFrame) or not isinstance(column, str) or column not in data.columns:
        return None
    return data[column].isna().to_numpy()


def partial_pool(data: Any, cfg: Any, y_true: Any, y_pred: Any, strata: Any, pos_label: Any) -> PartialPool | None:
    """``population="pool"`` where the label (``y_true`` or ``outcome``) is missing on some rows of a
    pandas frame: every row is a row of the pool, the labelled ones a simple random sample within each
    stratum. None when every row is labelled (the pool is then known exactly) or the data are not such a
    frame.

    The pool's trials per stratum are those the prediction alone fixes (the rows counted with the
    truth set to the prediction, or with outcome 0); a metric whose trials need the truth (recall) is
    refused, and so is a cluster holding labelled and unlabelled rows.
    """
    column = cfg.outcome if cfg.outcome is not None else y_true
    missing = _unlabelled(data, column)
    if missing is None or not missing.any():
        return None
    design = cfg.design
    if not cfg.guarantee.per_stratum:
        raise ValueError(
            f"guarantee={cfg.guarantee.name!r} with design.population='pool' and {int(missing.sum())} unlabelled "
            "rows: the pooled model is for the rates of a process, not of the pool's rows; use guarantee='stratum' "
            "(each stratum's finite-pool interval)"
        )
    metric = cfg.metric if cfg.metric is not None else get_metric("error_rate")
    if cfg.outcome is None and metric.trials_need_truth:
        raise ValueError(
            f"metric={metric.name!r} with design.population='pool' and {int(missing.sum())} unlabelled rows: "
            f"the rows counting for {metric.name!r} are only known once labelled, so the pool's size for it is "
            "unknown; label every row, use a metric whose trials the prediction fixes (error_rate, accuracy, "
            "precision), or population='process'"
        )
    if design.cluster is not None:
        mixed = pd.Series(missing).groupby(data[design.cluster].to_numpy()).nunique() > 1
        if mixed.any():
            raise ValueError(
                f"design.cluster={design.cluster!r} with design.population='pool': {int(mixed.sum())} clusters hold "
                f"labelled and unlabelled rows (e.g. {mixed.index[mixed.to_numpy()][0]!r}); the labelled units must "
                "be whole units (every row of each)"
            )
    rows = {"outcome": cfg.outcome} if cfg.outcome is not None else {"y_true": y_true, "y_pred": y_pred}
    filled = data.assign(**{column: 0.0 if cfg.outcome is not None else data[y_pred]})
    pool = tabulate(filled, strata=strata, metric=metric, pos_label=pos_label, **rows, design=design)
    lab = tabulate(data.loc[~missing], strata=strata, metric=metric, pos_label=pos_label, **rows, design=design)
    index = pool.strata
    s = lab.successes.reindex(index, fill_value=0)
    n = lab.trials.reindex(index, fill_value=0)
    counts = Counts(s, n, metric=lab.metric, weights=cfg.weights, units=lab.units, design=design)
    sizes = None
    if pool.units is not None and lab.units is not None:
        pu = pool.units.assign(_rows=pool.units["unit_trials"] * pool.units["units"])
        sizes = pu.groupby(level_names(index), sort=False).agg(
            pool_units=("units", "sum"), pool_trials=("_rows", "sum"), pool_largest=("unit_trials", "max")
        )
    pool_trials = pd.Series(pool.trials.to_numpy(np.int64), index=index, name="pool_trials")
    part = PartialPool(counts, pool_trials, sizes, pool, np.array([]), np.array([]))
    part.lower, part.upper = part.bounds(cfg.level)
    return part


def partial_pool_target(part: PartialPool, target: float, level: float) -> tuple[np.ndarray, list[Finding]]:
    """Labels still needed for ``target`` per stratum of a partly labelled pool: the draws
    :func:`~bayeseval._kernels.finite_pool.pool_sample_size` plans at the stratum's observed rate,
    less the labels it has (binary rows; with units, the unit planning of :func:`unit_target`)."""
    from bayeseval._kernels.finite_pool import pool_sample_size  # deferred: planning only

    counts = part.counts
    extra = np.zeros(len(counts))
    findings = []
    half = (part.upper - part.lower) / 2
    n, s = counts.trials.to_numpy(float), counts.successes.to_numpy(float)
    for i, k in enumerate(counts.strata):
        big_n = int(part.pool_trials.iloc[i])
        if big_n == 0 or not math.isfinite(half[i]) or half[i] <= target:
            continue
        rate = s[i] / n[i] if n[i] > 0 else 0.5
        if counts.units is not None and part.sizes is not None:
            # units: the half-width scales as sqrt((1 - u / U) / u) over u of the stratum's U units
            u = float(counts.n_units.iloc[i]) if counts.n_units is not None else 0.0
            big_u = float(part.sizes["pool_units"].reindex([k]).fillna(0).iloc[0])
            if u > 0 and big_u > u:
                c = half[i] ** 2 * u / (1.0 - u / big_u)
                need = 1.0 / (target**2 / c + 1.0 / big_u)
                extra[i] = min(max(1.0, math.ceil(need - u)), big_u - u)
            else:
                extra[i] = big_u - u
            what = "units"
        else:  # the finite-pool planning at the stratum's observed rate, at most the rows not yet labelled
            extra[i] = min(
                max(1.0, pool_sample_size(target, big_n, min(max(rate, 0.0), 1.0), level) - n[i]), big_n - n[i]
            )
            what = "labels"
        findings.append(
            Finding(
                "too wide",
                (k,),
                (
                    f"Stratum {key_label(k)!r} is too small for a half-width of {target:g}: {int(n[i])} of its "
                    f"{big_n} trials labelled give {fixed(float(half[i]), 3)}; it needs about {extra[i]:.0f} more "
                    f"{what} from the pool."
                ),
            )
        )
    return extra, findings


def partial_pool_overall(part: PartialPool, level: float) -> tuple[pd.DataFrame, list[Finding]]:
    """The pool's overall rates (unweighted: the pool's own rate, every trial of the pool; reweighted by
    ``weights``): a share-weighted sum of the strata's rates, whose interval sums the strata's
    finite-pool intervals at ``1 - (1 - level) / H`` each (Bonferroni over the ``H`` strata with
    trials, interval arithmetic: valid, conservative)."""
    counts = part.counts
    big_n = part.pool_trials.to_numpy(float)
    h = max(int((big_n > 0).sum()), 1)
    lo, hi = part.bounds(1.0 - (1.0 - level) / h)
    n, s = counts.trials.to_numpy(float), counts.successes.to_numpy(float)
    rate = np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)

    def combine(w: np.ndarray) -> list[float]:
        used = w > 0
        if not used.any() or np.isnan(lo[used]).any() or np.isnan(rate[used]).any():
            return [np.nan] * 4
        est = float(np.sum(w[used] * rate[used]))
        return [est, float(np.sum(w[used] * lo[used])), float(np.sum(w[used] * hi[used])), np.nan]

    rows = {"unweighted": combine(big_n / max(big_n.sum(), 1.0))}
    if counts.weights is not None:
        rows["reweighted"] = combine(counts.weights.reindex(counts.strata).to_numpy(float))
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    note = (
        "population='pool' with unlabelled rows: each stratum's interval is for the rate of its rows in the pool "
        "(finite-pool limits from its labelled rows, taken as drawn at random without replacement within the "
        "stratum: exact hypergeometric limits for binary rows, the betting interval without replacement for "
        "units); a stratum whose every row is labelled is known exactly, one without labels gets [0, 1]. The "
        "overall rates weight the strata's rates by their shares of the pool (or by weights); their intervals add "
        "up the strata's intervals, each at level 1 - (1 - level) / H over the H strata (Bonferroni, interval "
        "arithmetic: valid, conservative)."
    )
    return overall, [Finding("partial pool", (), note, "note")]


def unit_pooled(counts: Counts, whole_pool: bool = False, cfg: Any = None) -> Pooled:
    """The pooled section under units: under ``guarantee="average"`` (``cfg``) the pooled model over
    units for binary outcomes (:func:`~bayeseval.models.exact_units.fit_exact_units`), else no pooled
    model (and why, as a note); for a pool known exactly, nothing to pool."""
    if whole_pool:
        return Pooled(
            findings=[
                Finding(
                    "whole pool",
                    (),
                    (
                        "population='pool': the estimand is the rate of the rows themselves, and every row is "
                        "labelled, so each stratum's rate is known exactly (zero-width intervals) and nothing is "
                        "pooled. Use population='process' for the rate of the process that produced the rows."
                    ),
                    "note",
                )
            ]
        )
    if cfg is not None and not cfg.guarantee.per_stratum:
        return _units_model(counts, cfg)
    return Pooled(
        findings=[
            Finding(
                "no pooling",
                (),
                (
                    "The rows come in units (or carry graded outcomes), which the pooled Beta-binomial model "
                    "does not describe (it treats every row as an independent yes/no draw): under "
                    "guarantee='stratum' no pooled model is fitted, and each stratum's interval is its own units' "
                    "finite-sample valid interval, without borrowing from the other strata (guarantee='average' "
                    "fits the pooled model over units, for binary outcomes)."
                ),
                "note",
            )
        ]
    )


def _no_units_model(why: str) -> Pooled:
    return Pooled(
        findings=[
            Finding(
                "no pooling",
                (),
                f"{why}: no pooled model is fitted, and each stratum's interval is its own units' finite-sample "
                "valid interval, without borrowing from the other strata.",
                "note",
            )
        ]
    )


def _units_model(counts: Counts, cfg: Any) -> Pooled:
    """``guarantee="average"`` under units: the pooled model over units, with a note naming it."""
    assert counts.units is not None
    if int((counts.trials > 0).sum()) < 2:
        return _no_units_model("Fewer than two strata have trials, so there is nothing to pool")
    s = counts.units["unit_successes"].to_numpy(float)
    if (s != np.round(s)).any():
        return _no_units_model(
            "The outcomes are graded, and the pooled model over units takes binary outcomes only (0/1 per row)"
        )
    if cfg.model != "beta_binomial":
        return _no_units_model(f"The pooled model over units has no {cfg.model!r} version")
    if cfg.engine == "pymc":
        from bayeseval.models.pymc_units import fit_pymc_units  # deferred: PyMC loads on use

        post = fit_pymc_units(counts, prior=cfg.prior, random_seed=cfg.random_seed)
    else:
        from bayeseval.models.exact_units import fit_exact_units  # deferred: loaded on use

        post = fit_exact_units(counts, prior=cfg.prior, random_seed=cfg.random_seed)
    summary = post.summary(level=cfg.level)
    from bayeseval.models.read import units_read_choice  # deferred: the units engine loads on use

    choice = units_read_choice(counts, cfg.level, prior=cfg.prior, fit=post.exact if cfg.engine != "pymc" else None)
    summary["read"], summary["read_reason"] = choice.read, choice.reason
    rho = post.diagnostics["correlation"]
    engine = " (sampled by PyMC)" if cfg.engine == "pymc" else ""
    note = (
        "guarantee='average' under units: lower and upper are the interval read for each stratum, the posterior "
        f"interval of the pooled model over units{engine} unless the stratum looks atypical of the others (then "
        "its own units' interval, read 'units'). Each stratum's rate is drawn from a Beta across strata and its "
        "units' accuracies from a Beta around that rate, with a within-unit correlation shared by the strata "
        f"(posterior mean {rho:.2f}); the intervals cover on average over the strata. A stratum reads its units' "
        "interval when its total successes are not clearly typical of what the model fitted to the other strata "
        f"predicts (leave-one-out mid-p value at most {READ_ADAPTIVE_P:g}, or flagged). The estimand is each "
        "stratum's expected unit accuracy, which is its row-level rate when the units have equal sizes (or sizes "
        "unrelated to their accuracy)."
    )
    findings = [Finding("units model", (), note, "note")]
    own = list(counts.strata[np.asarray(choice.adaptive, bool)])
    if own:
        findings.append(
            Finding(
                "read units",
                (),
                (
                    f"{n_strata(len(own))} {'reads' if len(own) == 1 else 'read'} {'its' if len(own) == 1 else 'their'} "
                    f"own units' interval instead of the pooled one: {labels_text(own)}. Pooling would pull "
                    f"{'it' if len(own) == 1 else 'them'} toward the other strata; the units' interval comes from the "
                    "stratum's own units and keeps its coverage whatever the other strata say. read_reason in the "
                    "exported table says why."
                ),
                "note",
            )
        )
    return Pooled(post=post, summary=summary, findings=findings)


def unit_findings(counts: Counts) -> list[Finding]:
    """The design in words, as a note."""
    design = as_design(counts.design) if counts.design is not None else Design()
    return [Finding("design", (), f"Sampling design: {design.describe(counts)}.", "note")]


def unit_target(table: pd.DataFrame, counts: Counts, target: float) -> tuple[np.ndarray, list[Finding]]:
    """Units still needed for ``target`` per stratum: the half-width scales as one over the square
    root of the units, so a stratum of ``u`` units at half-width ``h`` needs about
    ``u (h / target)^2`` units in all (a planning figure at the stratum's own spread)."""
    n_units = counts.n_units
    assert n_units is not None
    u = n_units.reindex(table.index).to_numpy(float)
    extra = np.zeros(len(table))
    findings = []
    for i, (k, row) in enumerate(table.iterrows()):
        h = float(row["halfwidth"])
        if u[i] == 0 or not math.isfinite(h) or h <= target:
            continue
        extra[i] = max(1.0, math.ceil(u[i] * (h / target) ** 2 - u[i]))
        findings.append(
            Finding(
                "too wide",
                (k,),
                (
                    f"Stratum {key_label(k)!r} is too small for a half-width of {target:g}: "
                    f"{int(u[i])} units give {fixed(h, 3)}; it needs about {int(extra[i])} more units "
                    "(whole units, every row of each)."
                ),
            )
        )
    return extra, findings
