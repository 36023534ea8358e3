"""Per-group intervals of a fairness audit: adaptive, Wilson, Clopper-Pearson and the pooled
model (exchangeable or crossed factors), each metric fitted once, and the groups table.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval._kernels.conflict import loo_conflict, read_choice
from bayeseval._kernels.disparity import bonferroni_level, mover_mean
from bayeseval._kernels.finite_pool import pool_ci, pool_units_ci
from bayeseval._kernels.guarantee import Guarantee
from bayeseval.counts.counts import Counts, stratum_labels
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.estimate.proxy import effective_counts, in_units, proxy_ci
from bayeseval.fairness.inputs import AuditCounts, Layout, factor_columns, tabulate_all
from bayeseval.models import fit_crossed, fit_hierarchical

__all__: list[str] = []

#: posterior draws of the pooled model
N_DRAWS = 4000

#: parametric-bootstrap replicates of the max-t critical value
N_RESAMPLES = 2000


class PooledFit(NamedTuple):
    """Pooled estimates per group: mean, interval ends and draws (n_draws x groups)."""

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    draws: np.ndarray


class MetricFit(NamedTuple):
    """Everything computed for one metric, arrays aligned with the groups."""

    successes: np.ndarray
    trials: np.ndarray
    rate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    adaptive: tuple[np.ndarray, np.ndarray]
    pooled: PooledFit
    conflict: np.ndarray
    gap_bounds: Any  # callable level -> (lower, upper) per group: the Bonferroni projection's inputs
    in_gap: np.ndarray  # measured groups with at least min_trials trials: the gap's groups
    components: tuple[np.ndarray, np.ndarray, np.ndarray]  # (G, K) successes, trials; (K,) weights
    size: np.ndarray  # trials per group (rows for balanced accuracy): ranks the default reference
    seed: int  # seed of the max-t critical value's replicates
    cache: dict  # gap intervals already computed, by (method, level)
    proxy: Any = None  # with a proxy: the groups' ProxyCI table (labelled, trials, ...)
    units: Any = None  # with rows in units of several rows: the groups' UnitFit


class UnitFit(NamedTuple):
    """A metric read from units (clusters of rows): units per group and the groups' unit intervals.

    ``bounds(level)`` gives each group's finite-sample valid interval of its row-level rate at
    ``level`` from its units' histogram (:func:`bayeseval._kernels.bounded_mean.units_ci`); NaN
    for a group without trials. Every disparity is built from these intervals at a
    Bonferroni-adjusted level (:func:`bayeseval.fairness.disparities.unit_pairwise`).
    """

    n_units: np.ndarray
    bounds: Any


def _pooled(counts: Any, cells: pd.Index, level: float, random_seed: Any, model: str) -> PooledFit:
    """Pooled estimate per group from the hierarchical model across groups.

    ``counts`` is a ``(successes, trials)`` pair aligned with ``cells`` (the groups; a
    MultiIndex over the group columns for crossed groups). ``model="crossed"`` fits the
    crossed-factor logit-normal model (:func:`bayeseval.fit_crossed`: main effects plus a
    shrunk interaction, so a cell borrows from the cells sharing its levels);
    ``"robust"`` and ``"beta_binomial"`` the exchangeable models of
    :func:`bayeseval.fit_hierarchical` (exact engine).
    """
    s, n = counts
    if model == "crossed":
        fit = fit_crossed(
            Counts.from_arrays(s, n, strata=cells),
            factors=list(cells.names),
            level=level,
            random_seed=random_seed,
            draws=N_DRAWS,
            complete=False,
        )
        summary, theta = fit.table, fit.posterior.theta
    else:
        post = fit_hierarchical(
            s,
            n,
            strata=stratum_labels(cells),
            model=model,
            draws=N_DRAWS,
            random_seed=random_seed,
        )
        summary, theta = post.summary(level), post.theta
    return PooledFit(
        summary["mean"].to_numpy(float),
        summary["lower"].to_numpy(float),
        summary["upper"].to_numpy(float),
        np.asarray(theta, float),
    )


def _wilson(s: np.ndarray, n: np.ndarray, level: float, method: str = "wilson") -> tuple[np.ndarray, np.ndarray]:
    """Each group's Wilson (or ``method``) interval; NaN for a group without trials."""
    lo, hi = np.full(s.shape, np.nan), np.full(s.shape, np.nan)
    used = n > 0
    if used.any():
        lo[used], hi[used] = proportion_ci(s[used], n[used], level=level, method=method)
    return lo, hi


def _adaptive(s: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = adaptive_interval(s, n, level=level)
    empty = n == 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def _conflict(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    if np.count_nonzero(n) < 2:
        return np.zeros(s.shape, bool)
    return np.asarray(loo_conflict(s, n).flagged, bool)


def _fit_proportion(s, n, cells, level, seed, model: str, min_trials: int) -> MetricFit:
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    lo, hi = _wilson(s, n, level)
    return MetricFit(
        s,
        n,
        rate,
        lo,
        hi,
        _adaptive(s, n, level),
        _pooled((s, n), cells, level, seed, model),
        _conflict(s, n),
        lambda lev: _wilson(s, n, lev, "clopper_pearson"),
        n >= max(min_trials, 1),
        (s[:, None], n[:, None], np.ones(1)),
        n,
        int(seed),
        {},
    )


def _proxy_table(pc: Any, cells: pd.Index, level: float) -> pd.DataFrame:
    """The groups' proxy estimates and intervals, one row per group (NaN: no labels)."""
    table = proxy_ci(pc, level=level).table.reindex(cells)
    fill = {"trials": 0, "pool_trials": 0, "cells": 0, "effective_labels": 0.0, "proxy_used": False}
    kinds: dict[str, Any] = {"trials": np.int64, "pool_trials": np.int64, "proxy_used": bool}
    if "n_units" in table.columns:  # units
        fill |= {"n_units": 0, "pool_units": 0}
        kinds |= {"n_units": np.int64, "pool_units": np.int64}
    table = table.fillna(fill).astype(kinds)
    none = table["trials"].to_numpy() == 0
    table.loc[none, ["rate", "lower", "upper"]] = np.nan
    cells_of = pc.table.groupby(level=[n for n in pc.table.index.names if n != "cell"], sort=False)
    table["successes"] = cells_of["successes"].sum().reindex(cells, fill_value=0).to_numpy(np.int64)
    return table


def _fit_proxy(pc: Any, cells: pd.Index, level: float, seed: int, model: str, min_trials: int) -> MetricFit:
    """A metric read from a few labels and a proxy: each group's proxy estimate and interval
    (its own interval, exact-validated), the pooled model on the groups' effective counts.

    With rows in units (a cluster with a unit of several rows) each group's interval is the
    units proxy interval (:func:`bayeseval.proxy_ci` with the cluster), there is no pooled model
    (it treats rows as independent draws) and the fit carries a :class:`UnitFit`, so that the
    differences, ratios and gap come from the groups' intervals at the Bonferroni level
    (:func:`bayeseval.fairness.disparities.unit_pairwise`), as for units without a proxy."""
    table = _proxy_table(pc, cells, level)
    s, n = effective_counts(table)
    labelled = table["trials"].to_numpy(np.int64)
    rate, lo, hi = (table[c].to_numpy(float) for c in ("rate", "lower", "upper"))
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {level: (lo, hi)}

    def gap_bounds(lev: float) -> tuple[np.ndarray, np.ndarray]:
        if lev not in cache:
            t = _proxy_table(pc, cells, lev)
            cache[lev] = (t["lower"].to_numpy(float), t["upper"].to_numpy(float))
        return cache[lev]

    units = UnitFit(table["n_units"].to_numpy(np.int64), gap_bounds) if in_units(pc) else None
    return MetricFit(
        s,
        n,
        rate,
        lo,
        hi,
        (lo, hi),
        _no_pooled(len(cells)) if units is not None else _pooled((s, n), cells, level, seed, model),
        np.zeros(len(cells), bool) if units is not None else _conflict(s, n),
        gap_bounds,
        labelled >= max(min_trials, 1),
        (s[:, None], n[:, None], np.ones(1)),
        labelled,
        int(seed),
        {},
        table,
        units,
    )


def _no_pooled(groups: int) -> PooledFit:
    """No pooled model (rows in units: it treats every row as an independent draw): NaN throughout."""
    nan = np.full(groups, np.nan)
    return PooledFit(nan, nan.copy(), nan.copy(), np.full((1, groups), np.nan))


def _unit_bounds(units: pd.DataFrame, cells: pd.Index, trials: np.ndarray):
    """``level -> (lower, upper)``: each group's unit interval (NaN without trials), cached per level."""
    names = [str(n) for n in cells.names]
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    empty = trials == 0

    def bounds(level: float) -> tuple[np.ndarray, np.ndarray]:
        if level not in cache:
            if len(units):
                res = units_ci(units, names if len(names) > 1 else names[0], level).reindex(cells)
                lo, hi = res["lower"].to_numpy(float), res["upper"].to_numpy(float)
            else:
                lo, hi = np.zeros(len(cells)), np.ones(len(cells))
            cache[level] = (np.where(empty, np.nan, lo), np.where(empty, np.nan, hi))
        return cache[level]

    return bounds


def _fit_units(s, n, units, cells, level, seed, min_trials: int) -> MetricFit:
    """A metric whose rows come in units: each group's own unit interval, no pooled model."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    names = [str(name) for name in cells.names]
    per = units.groupby(names, sort=False)["units"].sum() if len(units) else pd.Series(dtype=np.int64)
    n_units = per.reindex(cells, fill_value=0).to_numpy(np.int64)
    return _own_interval_fit(s, n, rate, _unit_bounds(units, cells, n), n_units, level, seed, min_trials)


def _own_interval_fit(s, n, rate, bounds, n_units, level: float, seed: int, min_trials: int) -> MetricFit:
    """A metric each group reads from its own interval (``bounds``: level -> (lower, upper)), no pooled model."""
    lo, hi = bounds(level)
    return MetricFit(
        s,
        n,
        rate,
        lo,
        hi,
        (lo, hi),
        _no_pooled(len(rate)),
        np.zeros(len(rate), bool),
        bounds,
        n >= max(min_trials, 1),
        (np.asarray(s)[:, None], np.asarray(n)[:, None], np.ones(1)),
        n,
        int(seed),
        {},
        None,
        UnitFit(n_units, bounds),
    )


def _balanced_units(tpr: MetricFit, tnr: MetricFit, level: float, seed: int) -> MetricFit:
    """Balanced accuracy from units: the mean of the TPR and TNR unit intervals, each at the
    Bonferroni level over the two (valid whatever their dependence)."""
    rate = 0.5 * (tpr.rate + tnr.rate)

    def bounds(lev: float) -> tuple[np.ndarray, np.ndarray]:
        half = bonferroni_level(lev, 2)
        (a_lo, a_hi), (b_lo, b_hi) = tpr.gap_bounds(half), tnr.gap_bounds(half)
        return 0.5 * (a_lo + b_lo), 0.5 * (a_hi + b_hi)

    lo, hi = bounds(level)
    missing = np.full(rate.shape, -1, np.int64)
    return MetricFit(
        missing,
        missing,
        rate,
        lo,
        hi,
        (lo, hi),
        _no_pooled(len(rate)),
        np.zeros(len(rate), bool),
        bounds,
        tpr.in_gap & tnr.in_gap,
        (np.stack([tpr.successes, tnr.successes], axis=1), np.stack([tpr.trials, tnr.trials], axis=1), np.ones(2) / 2),
        tpr.trials + tnr.trials,
        int(seed),
        {},
        None,
        UnitFit(np.minimum(tpr.units.n_units, tnr.units.n_units), bounds),
    )


def _fit_balanced(tpr: MetricFit, tnr: MetricFit, level: float, seed: int) -> MetricFit:
    """Balanced accuracy = (TPR + TNR) / 2, intervals by MOVER from the two rates' intervals."""
    rate = 0.5 * (tpr.rate + tnr.rate)
    lo, hi = mover_mean(tpr.rate, tpr.lower, tpr.upper, tnr.rate, tnr.lower, tnr.upper)
    alo, ahi = mover_mean(tpr.rate, *tpr.adaptive, tnr.rate, *tnr.adaptive)
    q = [(1 - level) / 2, (1 + level) / 2]
    draws = 0.5 * (tpr.pooled.draws + tnr.pooled.draws)
    bounds = np.quantile(draws, q, axis=0)
    pooled = PooledFit(draws.mean(axis=0), bounds[0], bounds[1], draws)

    def gap_bounds(lev: float) -> tuple[np.ndarray, np.ndarray]:
        t, u = _wilson(tpr.successes, tpr.trials, lev), _wilson(tnr.successes, tnr.trials, lev)
        return mover_mean(tpr.rate, *t, tnr.rate, *u)

    missing = np.full(rate.shape, -1, np.int64)
    components = (
        np.stack([tpr.successes, tnr.successes], axis=1),
        np.stack([tpr.trials, tnr.trials], axis=1),
        np.array([0.5, 0.5]),
    )
    return MetricFit(
        missing,
        missing,
        rate,
        lo,
        hi,
        (alo, ahi),
        pooled,
        tpr.conflict | tnr.conflict,
        gap_bounds,
        tpr.in_gap & tnr.in_gap,
        components,
        tpr.trials + tnr.trials,
        int(seed),
        {},
    )


def guarantee_bounds(fit: MetricFit, guarantee: Guarantee) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's interval under ``guarantee`` and which one it is (``read``).

    :meth:`Guarantee.choose <bayeseval.Guarantee.choose>` between the group's own interval,
    with coverage at least the level at every rate (adaptive, from a leave-one-out prior;
    with a proxy, the proxy interval), and the pooled one: a per-stratum guarantee reads the
    own interval; ``"average"`` the pooled one, except where the group's count is not
    clearly typical of what the other groups predict (the read rule of
    :func:`bayeseval._kernels.conflict.read_choice`, the one :func:`bayeseval.evaluate`
    applies), which read their own interval.
    """
    own_name = "proxy" if fit.proxy is not None else "units" if fit.units is not None else "adaptive"
    lower, upper, own = guarantee.choose(fit.adaptive, (fit.pooled.lower, fit.pooled.upper), lambda: _atypical(fit))
    return lower, upper, np.where(own, own_name, "pooled").astype(object)


def _atypical(fit: MetricFit) -> np.ndarray:
    """Groups whose count is not clearly typical of what the other groups predict (they read their own interval)."""
    own = np.zeros(fit.rate.shape[0], bool)
    if np.all(fit.trials >= 0) and np.count_nonzero(fit.trials) >= 2:  # balanced accuracy: -1
        own = np.asarray(read_choice(fit.successes, fit.trials).read == "adaptive", bool)
    return own


def _proxy_columns(fit: MetricFit) -> dict:
    if fit.proxy is None:
        return {}
    t = fit.proxy
    return {
        "successes": pd.array(t["successes"].to_numpy(np.int64), dtype="Int64"),
        "trials": pd.array(t["trials"].to_numpy(np.int64), dtype="Int64"),
        "pool_trials": t["pool_trials"].to_numpy(np.int64),
        "effective_labels": t["effective_labels"].to_numpy(float),
        "agreement": t["agreement"].to_numpy(float),
        "proxy_used": t["proxy_used"].to_numpy(bool),
    }


def group_frame(name: str, layout: Layout, fit: MetricFit, ref: int, guarantee: Guarantee) -> pd.DataFrame:
    measured = np.isfinite(fit.rate)
    is_prop = name != "balanced_accuracy"
    labels = layout.labels
    whole = np.issubdtype(np.asarray(fit.successes).dtype, np.integer)  # graded outcomes: fractional sums
    counts = pd.array(fit.successes, dtype="Int64" if whole else "Float64"), pd.array(fit.trials, dtype="Int64")
    if not is_prop:
        counts = tuple(pd.array([pd.NA] * len(labels), dtype="Int64") for _ in range(2))
    lower, upper, read = guarantee_bounds(fit, guarantee)
    adaptive, wilson = fit.adaptive, (fit.lower, fit.upper)
    if fit.units is not None:  # row intervals do not hold for rows in units: not shown
        adaptive = wilson = (np.full(len(labels), np.nan), np.full(len(labels), np.nan))
    return pd.DataFrame(
        {
            **factor_columns(layout, np.arange(len(labels))),
            "group": labels,
            "metric": name,
            "successes": counts[0],
            "trials": counts[1],
            **_proxy_columns(fit),
            **({"units": fit.units.n_units} if fit.units is not None else {}),
            "rate": fit.rate,
            "lower": lower,
            "upper": upper,
            "read": read,
            "adaptive_lower": adaptive[0],
            "adaptive_upper": adaptive[1],
            "wilson_lower": wilson[0],
            "wilson_upper": wilson[1],
            "pooled_mean": fit.pooled.mean,
            "pooled_lower": fit.pooled.lower,
            "pooled_upper": fit.pooled.upper,
            "empty": ~measured,
            "zero_successes": (fit.successes == 0) & (fit.trials > 0) if is_prop else False,
            "predicted": ~measured,
            "conflict": fit.conflict,
            "in_gap": fit.in_gap & measured,
            "is_reference": np.arange(len(labels)) == ref,
        }
    )


def fit_all(names, counts, cells, level, seed, model, min_trials) -> dict:
    rng = np.random.default_rng(seed)
    fits = {}
    for name in counts:
        if not isinstance(counts[name], tuple):  # ProxyCounts
            fits[name] = _fit_proxy(counts[name], cells, level, int(rng.integers(2**32)), model, min_trials)
            continue
        if len(counts[name]) == 3:  # rows in units
            s, n, units = counts[name]
            fits[name] = _fit_units(s, n, units, cells, level, int(rng.integers(2**32)), min_trials)
            continue
        s, n = counts[name]
        fits[name] = _fit_proportion(s, n, cells, level, rng.integers(2**32), model, min_trials)
    if "balanced_accuracy" in names:
        fit = _balanced_units if fits["tpr"].units is not None else _fit_balanced
        fits["balanced_accuracy"] = fit(fits["tpr"], fits["tnr"], level, int(rng.integers(2**32)))
    return fits


def default_reference(fit: MetricFit, rows: np.ndarray) -> int:
    """The measured group with the most trials for the metric (ties: most rows, then first)."""
    key = np.where(np.isfinite(fit.rate), fit.size, -1)
    return int(np.lexsort((-np.arange(len(rows)), rows, key))[-1])


# population="pool": the groups of a fixed decision set, partly labelled
# ---------------------------------------------------------------------------------------
class PoolCounts(NamedTuple):
    """An audit of a pool: the labelled rows' counts per group (on every group of the pool), the
    pool's counts (trials the prediction fixes; successes too for the selection rate), and the
    labelled and pool trials in all."""

    labelled: AuditCounts
    pool: AuditCounts
    missing: int  # unlabelled rows


#: audit metrics whose trials are known only once a row is labelled (actual positives or negatives)
_NEED_TRUTH = ("tpr", "fnr", "fpr", "tnr", "balanced_accuracy")

#: audit metrics whose trials and successes both read the prediction alone
_PREDICTION_ONLY = ("selection_rate",)


def _prediction_only(name: str) -> bool:
    """Whether a metric's trials and successes are both known from the prediction (selection rate)."""
    return name in _PREDICTION_ONLY


def tabulate_pool(
    data: Any,
    cols: list[str],
    y_true: str | None,
    y_pred: str | None,
    names: list[str],
    pos_label: Any,
    cluster: str | None = None,
    outcome: str | None = None,
) -> PoolCounts:
    """The counts of an audit with ``population="pool"``: every row of ``data`` is a row of the pool,
    those whose label (``y_true`` or ``outcome``) is missing unlabelled, the labelled ones a simple
    random sample within each group. A metric whose trials need the truth (tpr, fpr, ...) is refused
    when rows are unlabelled (the pool's size for it is unknown), and so is a cluster holding labelled
    and unlabelled rows."""
    column = outcome if outcome is not None else y_true
    missing = None
    if isinstance(data, pd.DataFrame) and isinstance(column, str) and column in data.columns:
        missing = data[column].isna().to_numpy()
    if missing is None or not missing.any():
        every = tabulate_all(data, cols, y_true, y_pred, names, pos_label, cluster=cluster, outcome=outcome)
        return PoolCounts(every, every, 0)
    bad = [m for m in names if m in _NEED_TRUTH]
    if bad:
        raise ValueError(
            f"metrics {bad} with design.population='pool' and {int(missing.sum())} unlabelled rows: their trials "
            "are only known once a row is labelled, so the pool's size for them is unknown; give metrics whose "
            "trials the prediction fixes (selection_rate, ppv, npv, accuracy, error_rate), label every row, or use "
            "population='process'"
        )
    if cluster is not None:
        mixed = pd.Series(missing).groupby(data[cluster].to_numpy()).nunique() > 1
        if mixed.any():
            raise ValueError(
                f"design.cluster={cluster!r} with design.population='pool': {int(mixed.sum())} clusters hold "
                f"labelled and unlabelled rows (e.g. {mixed.index[mixed.to_numpy()][0]!r}); the labelled units must "
                "be whole units (every row of each)"
            )
    filled = data.assign(**{column: 0.0 if outcome is not None else data[y_pred]})
    pool = tabulate_all(filled, cols, y_true, y_pred, names, pos_label, cluster=cluster, outcome=outcome)
    lab = tabulate_all(data.loc[~missing], cols, y_true, y_pred, names, pos_label, cluster=cluster, outcome=outcome)
    counts = {}
    for name, entry in pool.counts.items():
        if _prediction_only(name):  # known for every row of the pool
            counts[name] = entry
            continue
        own = lab.counts[name]
        pos = pd.Series(np.arange(len(lab.cells)), index=lab.cells).reindex(pool.cells)
        at, has = pos.fillna(0).to_numpy(np.int64), pos.notna().to_numpy()
        s = np.where(has, own[0][at], 0).astype(own[0].dtype)
        n = np.where(has, own[1][at], 0).astype(np.int64)
        counts[name] = (s, n) + tuple(own[2:]) if len(entry) == len(own) else (s, n)
    labelled = AuditCounts(pool.cells, pool.rows, counts, lab.clustered, pool.by_unit)
    return PoolCounts(labelled, pool, int(missing.sum()))


def _pool_sizes(units: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per group of a pool's units' histogram: ``pool_units``, ``pool_trials``, ``pool_largest``."""
    u = units.assign(_rows=units["unit_trials"] * units["units"])
    return u.groupby(names if len(names) > 1 else names[0], sort=False).agg(
        pool_units=("units", "sum"), pool_trials=("_rows", "sum"), pool_largest=("unit_trials", "max")
    )


def _pool_bounds(own: tuple, pool: tuple, cells: pd.Index):
    """``level -> (lower, upper)``: each group's finite-pool interval from its labelled rows (exact
    hypergeometric limits for binary rows, the betting interval without replacement for units); NaN
    for a group without trials in the pool, [0, 1] for one without labels. Cached per level."""
    names = [str(n) for n in cells.names]
    s, n, big_n = np.asarray(own[0], float), np.asarray(own[1], float), np.asarray(pool[1], float)
    has = big_n > 0
    sizes = _pool_sizes(pool[2], names) if len(pool) == 3 and len(own) == 3 else None
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def bounds(level: float) -> tuple[np.ndarray, np.ndarray]:
        if level not in cache:
            lo, hi = np.full(len(cells), np.nan), np.full(len(cells), np.nan)
            if sizes is not None and len(own[2]):
                res = pool_units_ci(own[2], names if len(names) > 1 else names[0], sizes, level).reindex(cells)
                lo = np.where(has, res["lower"].to_numpy(float), np.nan)
                hi = np.where(has, res["upper"].to_numpy(float), np.nan)
            elif has.any():
                lo[has], hi[has] = pool_ci(np.rint(s[has]), n[has], big_n[has], level)
            bare = has & (n == 0)
            lo[bare], hi[bare] = 0.0, 1.0
            cache[level] = (lo, hi)
        return cache[level]

    return bounds


def fit_pool(names: list[str], counted: PoolCounts, level: float, seed: Any, min_trials: int) -> dict:
    """Each metric of a pool's audit: the groups' finite-pool intervals (no pooled model; read
    'units'), and the differences, ratios and gap from them at the Bonferroni level over the
    groups (interval arithmetic), as for groups of units."""
    rng = np.random.default_rng(seed)
    cells = counted.pool.cells
    fits = {}
    for name in counted.labelled.counts:
        own, pool = counted.labelled.counts[name], counted.pool.counts[name]
        s, n = own[0], own[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(n > 0, s / np.maximum(n, 1), np.nan)
        if len(own) == 3 and len(own[2]):
            unit_names = [str(c) for c in cells.names]
            per = own[2].groupby(unit_names, sort=False)["units"].sum()
            n_units = per.reindex(cells, fill_value=0).to_numpy(np.int64)
        else:
            n_units = np.asarray(n, np.int64)
        bounds = _pool_bounds(own, pool, cells)
        fits[name] = _own_interval_fit(s, n, rate, bounds, n_units, level, int(rng.integers(2**32)), min_trials)
    if "balanced_accuracy" in names:
        fits["balanced_accuracy"] = _balanced_units(fits["tpr"], fits["tnr"], level, int(rng.integers(2**32)))
    return fits
