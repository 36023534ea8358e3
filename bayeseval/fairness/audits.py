"""Fairness audits: per-group rates, disparities with honest intervals, and verdicts.

The module is ``fairness`` so that the package attribute ``bayeseval.fairness`` can be the
function :func:`audit` (a submodule of the same name would replace it once imported).

:func:`audit` counts each metric per group once, then reports three intervals per
group and metric, the disparities between groups, and a verdict per fairness
criterion:

* **adaptive** (the default reading): the FAB interval ("frequentist, assisted by
  Bayes") whose tail split comes from a leave-one-out prior built from the *other*
  groups; coverage at least ``level`` for every group whatever its true rate, and
  shorter than Clopper-Pearson when the groups are alike
  (:func:`bayeseval._kernels.adaptive.adaptive_interval`);
* **Wilson**: the plain score interval of the group's own counts;
* **pooled**: the posterior of a hierarchical model across groups, which borrows
  strength but pulls an outlying group toward the others; for a group with no data it
  is a *prediction*, flagged as such. With one group column the groups are
  exchangeable (robust Beta-binomial); with several, the crossed-factor model
  (:func:`bayeseval.fit_crossed`: main effects plus a shrunk interaction), so a cell
  borrows from the cells that share its levels (``model=`` chooses).

Disparities per metric: the difference and the ratio of each group to the reference
group (default: per metric, the measured group with the most trials) with Newcombe's
hybrid score interval and Katz's log interval, and the max-min gap across groups with a
simultaneous interval (default: max-t intervals over every pair of groups, calibrated by
parametric bootstrap; ``method="bonferroni"``: the exact projection of Bonferroni-adjusted
Clopper-Pearson intervals); each beside its posterior interval and
``P(|gap| > tolerance)``.

Verdicts per criterion (demographic parity: selection rate; equal opportunity: TPR;
equalized odds: TPR and FPR; predictive parity: PPV): "outside" when the gap
interval lies above the tolerance, "within tolerance" when it lies below,
"undecided" otherwise, with the trials each group would need to decide at the
current rates, and "not measured" when fewer than two groups have ``min_trials``
trials (default 30): a gap, probability or verdict that is not measured is ``NaN`` or
"not measured", never 0. Groups with fewer trials stay in the groups table, flagged.

Every table has one column per group column, as in the data, and a display label.
"""

from __future__ import annotations

import html
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayeseval._api import metric_names
from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_int,
    check_random_seed,
    iter_columns,
)
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.binomial import GUARANTEES
from bayeseval._kernels.conflict import loo_conflict, read_choice
from bayeseval._kernels.disparity import (
    bonferroni_level,
    gap_interval,
    katz_ratio,
    max_t_gap,
    mover_difference,
    mover_mean,
    mover_ratio,
)
from bayeseval._render import audit_html, audit_text
from bayeseval._render.formats import md_escape, md_table
from bayeseval._render.html_page import page
from bayeseval._render.spreadsheet import csv_safe_frame, write_xlsx
from bayeseval.counts.counts import Counts, stratum_labels, tabulate
from bayeseval.counts.proxy import PROXY_METRICS
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.estimate.proxy import effective_counts, proxy_ci
from bayeseval.fairness.options import GAP_METHODS, MIN_TRIALS, MODELS
from bayeseval.models import fit_crossed, fit_hierarchical
from bayeseval.plan.sizes import sample_size

__all__ = ["Audit", "audit", "METRICS", "CRITERIA", "MODELS", "GAP_METHODS", "MIN_TRIALS", "exit_code"]

#: audit metric names and the :data:`bayeseval.counts.metrics.METRICS` definition each one uses
_BASE = {
    "selection_rate": "selection_rate", "tpr": "recall", "fnr": "fnr", "fpr": "fpr",
    "tnr": "specificity", "ppv": "precision", "npv": "npv", "error_rate": "error_rate",
    "accuracy": "accuracy",
}
_AUDIT_NAME = {base: name for name, base in _BASE.items()} | {"balanced_accuracy": "balanced_accuracy"}

#: every metric :func:`audit` reports, in display order
METRICS = tuple(_BASE) + ("balanced_accuracy",)

#: fairness criteria and the metrics whose max-min gap each one bounds
CRITERIA = {
    "demographic_parity": ("selection_rate",),
    "equal_opportunity": ("tpr",),
    "equalized_odds": ("tpr", "fpr"),
    "predictive_parity": ("ppv",),
}

_N_DRAWS = 4000

#: parametric-bootstrap replicates of the max-t critical value
_N_RESAMPLES = 2000

#: how a message names an option, per interface (Python keyword or command-line flag)
_SPELLING = {
    "python": {"min_trials": "min_trials={}", "reference": "reference="},
    "cli": {"min_trials": "--min-trials {}", "reference": "--reference"},
}


class PooledFit(NamedTuple):
    """Pooled estimates per group: mean, interval ends and draws (n_draws x groups)."""

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    draws: np.ndarray


class _MetricFit(NamedTuple):
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


class _Layout(NamedTuple):
    """The groups: their factor values (one column per group column) and display labels."""

    factors: pd.DataFrame  # one column per group column, one row per group
    labels: list[str]
    columns: list[str]  # the group columns, in order


# --------------------------------------------------------------------------- inputs


#: audit metrics that take a proxy: the selection rate (no true label needed) and the metrics
#: whose trials are known without the true label
PROXY_AUDIT_METRICS = ("selection_rate",) + tuple(_AUDIT_NAME[m] for m in PROXY_METRICS)


def _check_proxy_metrics(names: list[str], proxy: Any, inclusion: Any) -> None:
    for name, value in (("proxy", proxy), ("inclusion", inclusion)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str) or None, got {value!r}")
    if inclusion is not None and proxy is None:
        raise TypeError(f"inclusion applies to the labelled rows of a proxy design: give proxy too, "
                        f"got inclusion={inclusion!r} and proxy=None")
    bad = [m for m in names if m not in PROXY_AUDIT_METRICS]
    if proxy is not None and bad:
        raise ValueError(
            f"metrics {bad} do not take a proxy: their trials depend on the true label, unknown on "
            f"unlabelled rows; metrics that take a proxy are {list(PROXY_AUDIT_METRICS)}"
        )


def _check_metrics(metrics: Any, proxy: Any = None) -> dict[str, str]:
    """Audit metric key -> the name as the user wrote it (shown in every table), in order."""
    if metrics is None:
        return {m: m for m in (METRICS if proxy is None else PROXY_AUDIT_METRICS)}
    items = [metrics] if isinstance(metrics, str) else metrics
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"metrics must be a metric name or a list of names, got {metrics!r}") from None
    if not items:
        raise ValueError(f"metrics must name at least one metric, got {metrics!r}")
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"metrics must hold metric names (str), got {item!r}")
        name = metric_names.canonical(item)
        key = _AUDIT_NAME.get(name, name)
        if key not in METRICS:
            raise ValueError(metric_names.unknown_metric(item, "metrics"))
        out.setdefault(key, item.strip())
    return out


def _check_tolerance(tolerance: Any) -> float | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, (int, float, np.number)):
        raise TypeError(f"tolerance must be a number in (0, 1), got {tolerance!r}")
    value = float(tolerance)
    if not (0.0 < value < 1.0):
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
    return value


def _count(data: Any, cols: list[str], y_true: str, y_pred: str, name: str, pos_label: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyStratumWarning)
        counts = tabulate(
            data, y_true=y_true, y_pred=y_pred, strata=cols,
            metric=_BASE[name], pos_label=pos_label,
        )
    if counts.successes.index.nlevels > len(cols):
        raise ValueError(
            f"pos_label is required: the labels of y_true {y_true!r} and y_pred {y_pred!r} "
            "are not binary 0/1, so the positive class is unknown; got pos_label=None"
        )
    return counts


def _full_index(index: pd.Index, n_columns: int) -> pd.Index:
    """Every combination of the observed levels (crossed groups never observed included)."""
    if n_columns < 2:
        return index
    return pd.MultiIndex.from_product(
        [index.levels[i] for i in range(n_columns)], names=index.names
    )


#: separator of the factor values in a joined group label
_SEP = " | "


def _label_part(value: Any) -> str:
    """One factor value in a joined label: bare, or JSON-quoted when it could be misread."""
    text = str(value)
    if "|" in text or '"' in text or text != text.strip() or not text:
        return json.dumps(text, ensure_ascii=False)
    return text


def _layout(cells: pd.Index, cols: list[str]) -> _Layout:
    """Factor values and labels of the groups; labels are unique (ambiguous values quoted)."""
    if isinstance(cells, pd.MultiIndex):
        factors = pd.DataFrame({c: cells.get_level_values(i) for i, c in enumerate(cols)})
        labels = [_SEP.join(_label_part(v) for v in key) for key in cells]
    else:
        factors = pd.DataFrame({cols[0]: cells})
        labels = [str(v) for v in cells]
    if len(set(labels)) < len(labels):  # values whose text coincides (1 and "1"): their repr
        labels = [_SEP.join(repr(v) for v in (key if isinstance(key, tuple) else (key,))) for key in cells]
    return _Layout(factors.reset_index(drop=True), labels, list(cols))


def _check_factor_names(cols: list[str]) -> None:
    """Group columns become table columns: refuse names the audit's tables already use."""
    for col in cols:
        if col == "group" and len(cols) == 1:
            continue  # one group column named "group": the label column is its column
        if col in _RESERVED or any(col == p + c for p in _PREFIXES for c in cols):
            raise ValueError(
                f"groups: the group column {col!r} has the name of a column of the audit's "
                f"tables ({sorted(_RESERVED)}); rename it, e.g. data.rename(columns={{{col!r}: "
                f"'{col}_value'}})"
            )


def _factor_columns(layout: _Layout, index: Any, prefix: str = "") -> dict:
    """One column per group factor for the groups at ``index`` (-1: no group, missing)."""
    index = np.asarray(index, dtype=int)
    out = {}
    for col in layout.columns:
        if not prefix and col == "group" and len(layout.columns) == 1:
            continue
        out[prefix + col] = layout.factors[col].reindex(index).to_numpy()
    return out


def _count_proxy(data: Any, cols: list[str], y_true: str, y_pred: str, name: str, pos_label: Any,
                 proxy: tuple[str, str | None]) -> Any:
    """Counts per group and proxy cell (ProxyCounts) for a metric that reads labels."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyStratumWarning)
        return tabulate(data, y_true=y_true, y_pred=y_pred, strata=cols, metric=_BASE[name],
                        pos_label=pos_label, proxy=proxy[0], inclusion=proxy[1])


def _tabulate_all(data: Any, cols: list[str], y_true: str, y_pred: str, names: list[str], pos_label: Any,
                  proxy: tuple[str, str | None] | None = None):
    """Successes and trials per group for each base metric, and rows per group.

    With a proxy, a metric that reads the true label gets its ProxyCounts; the row counts and
    the selection rate (which reads only ``y_pred``) count every row.
    """
    needed = [m for m in _BASE if m in names]
    if "balanced_accuracy" in names:
        needed += [m for m in ("tpr", "tnr") if m not in needed]
    every = y_pred if proxy is not None else y_true  # a proxy's unlabelled rows count as rows
    rows = _count(data, cols, every, y_pred, "accuracy", pos_label).trials
    index = _full_index(rows.index, len(cols))
    rows = rows.reindex(index, fill_value=0)
    counts = {}
    for name in needed:
        if proxy is not None and name != "selection_rate":
            counts[name] = _count_proxy(data, cols, y_true, y_pred, name, pos_label, proxy)
            continue
        c = _count(data, cols, every if name == "selection_rate" else y_true, y_pred, name, pos_label)
        counts[name] = (
            c.successes.reindex(index, fill_value=0).to_numpy(np.int64),
            c.trials.reindex(index, fill_value=0).to_numpy(np.int64),
        )
    return index, rows.to_numpy(np.int64), counts


def _check_model(model: Any, n_columns: int) -> str:
    """The pooled model: ``None`` is "crossed" for several group columns, else "robust"."""
    if model is None:
        return "crossed" if n_columns > 1 else "robust"
    key = check_method(model, MODELS, "model")
    if key == "crossed" and n_columns < 2:
        raise ValueError(
            f"model='crossed' pools along crossed group columns and needs at least two; got "
            f"{n_columns} group column: use model='robust' or 'beta_binomial' (or None)"
        )
    return key


def _check_min_trials(min_trials: Any) -> int:
    if min_trials is None:
        raise TypeError(f"min_trials must be an integer >= 1 (1 keeps every measured group), got "
                        f"{min_trials!r}")
    return check_positive_int(min_trials, "min_trials")


# --------------------------------------------------------------------------- per group


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
            Counts.from_arrays(s, n, strata=cells), factors=list(cells.names), level=level,
            random_seed=random_seed, draws=_N_DRAWS, complete=False,
        )
        summary, theta = fit.table, fit.posterior.theta
    else:
        post = fit_hierarchical(
            s, n, strata=stratum_labels(cells), model=model, draws=_N_DRAWS,
            random_seed=random_seed,
        )
        summary, theta = post.summary(level), post.theta
    return PooledFit(
        summary["mean"].to_numpy(float),
        summary["lower"].to_numpy(float),
        summary["upper"].to_numpy(float),
        np.asarray(theta, float),
    )


def _wilson(s: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = np.full(s.shape, np.nan), np.full(s.shape, np.nan)
    used = n > 0
    if used.any():
        lo[used], hi[used] = proportion_ci(s[used], n[used], level=level, method="wilson")
    return lo, hi


def _clopper_pearson(s: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = np.full(s.shape, np.nan), np.full(s.shape, np.nan)
    used = n > 0
    if used.any():
        lo[used], hi[used] = proportion_ci(s[used], n[used], level=level, method="clopper_pearson")
    return lo, hi


def _adaptive(s: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = adaptive_interval(s, n, level=level)
    empty = n == 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def _conflict(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    if np.count_nonzero(n) < 2:
        return np.zeros(s.shape, bool)
    return np.asarray(loo_conflict(s, n).flagged, bool)


def _fit_proportion(s, n, cells, level, seed, model: str, min_trials: int) -> _MetricFit:
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    lo, hi = _wilson(s, n, level)
    return _MetricFit(
        s, n, rate, lo, hi, _adaptive(s, n, level), _pooled((s, n), cells, level, seed, model),
        _conflict(s, n), lambda lev: _clopper_pearson(s, n, lev), n >= max(min_trials, 1),
        (s[:, None], n[:, None], np.ones(1)), n, int(seed), {},
    )


def _proxy_table(pc: Any, cells: pd.Index, level: float) -> pd.DataFrame:
    """The groups' proxy estimates and intervals, one row per group (NaN: no labels)."""
    table = proxy_ci(pc, level=level).table.reindex(cells)
    fill = {"labelled": 0, "trials": 0, "cells": 0, "effective_labels": 0.0, "proxy_used": False}
    table = table.fillna(fill).astype({"labelled": np.int64, "trials": np.int64, "proxy_used": bool})
    none = table["labelled"].to_numpy() == 0
    table.loc[none, ["estimate", "lower", "upper"]] = np.nan
    return table


def _fit_proxy(pc: Any, cells: pd.Index, level: float, seed: int, model: str, min_trials: int) -> _MetricFit:
    """A metric read from a few labels and a proxy: each group's proxy estimate and interval
    (its own interval, exact-validated), the pooled model on the groups' effective counts."""
    table = _proxy_table(pc, cells, level)
    s, n = effective_counts(table)
    labelled = table["labelled"].to_numpy(np.int64)
    rate, lo, hi = (table[c].to_numpy(float) for c in ("estimate", "lower", "upper"))

    def gap_bounds(lev: float) -> tuple[np.ndarray, np.ndarray]:
        t = _proxy_table(pc, cells, lev)
        return t["lower"].to_numpy(float), t["upper"].to_numpy(float)

    return _MetricFit(
        s, n, rate, lo, hi, (lo, hi), _pooled((s, n), cells, level, seed, model), _conflict(s, n),
        gap_bounds, labelled >= max(min_trials, 1), (s[:, None], n[:, None], np.ones(1)), labelled,
        int(seed), {}, table,
    )


def _fit_balanced(tpr: _MetricFit, tnr: _MetricFit, level: float, seed: int) -> _MetricFit:
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
    components = (np.stack([tpr.successes, tnr.successes], axis=1),
                  np.stack([tpr.trials, tnr.trials], axis=1), np.array([0.5, 0.5]))
    return _MetricFit(
        missing, missing, rate, lo, hi, (alo, ahi), pooled, tpr.conflict | tnr.conflict, gap_bounds,
        tpr.in_gap & tnr.in_gap, components, tpr.trials + tnr.trials, int(seed), {},
    )


def guarantee_bounds(fit: _MetricFit, guarantee: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's interval under ``guarantee`` and which one it is (``read``).

    ``"stratum"``: the group's own interval, with coverage at least the level at every rate
    (adaptive, from a leave-one-out prior; with a proxy, the proxy interval). ``"average"``:
    the pooled interval, except where the group's count is not clearly typical of what the
    other groups predict (the read rule of :func:`bayeseval._kernels.conflict.read_choice`,
    the one :func:`bayeseval.evaluate` applies), which read their own interval.
    """
    own_name = "proxy" if fit.proxy is not None else "adaptive"
    k = fit.rate.shape[0]
    if guarantee == "stratum":
        return fit.adaptive[0], fit.adaptive[1], np.full(k, own_name, dtype=object)
    own = np.zeros(k, bool)
    if np.all(fit.trials >= 0) and np.count_nonzero(fit.trials) >= 2:  # balanced accuracy: -1
        own = np.asarray(read_choice(fit.successes, fit.trials).read == "adaptive", bool)
    read = np.where(own, own_name, "pooled").astype(object)
    return (np.where(own, fit.adaptive[0], fit.pooled.lower),
            np.where(own, fit.adaptive[1], fit.pooled.upper), read)


def _proxy_columns(fit: _MetricFit) -> dict:
    if fit.proxy is None:
        return {}
    t = fit.proxy
    return {"labelled": t["labelled"].to_numpy(np.int64), "pool_trials": t["trials"].to_numpy(np.int64),
            "effective_labels": t["effective_labels"].to_numpy(float),
            "agreement": t["agreement"].to_numpy(float), "proxy_used": t["proxy_used"].to_numpy(bool)}


def _group_frame(name: str, layout: _Layout, fit: _MetricFit, ref: int, guarantee: str = "stratum"
                 ) -> pd.DataFrame:
    measured = np.isfinite(fit.rate)
    is_prop = name != "balanced_accuracy"
    labels = layout.labels
    counts = pd.array(fit.successes, dtype="Int64"), pd.array(fit.trials, dtype="Int64")
    if not is_prop:
        counts = tuple(pd.array([pd.NA] * len(labels), dtype="Int64") for _ in range(2))
    lower, upper, read = guarantee_bounds(fit, guarantee)
    return pd.DataFrame({
        **_factor_columns(layout, np.arange(len(labels))),
        "group": labels,
        "metric": name,
        "successes": counts[0],
        "trials": counts[1],
        **_proxy_columns(fit),
        "rate": fit.rate,
        "lower": lower,
        "upper": upper,
        "read": read,
        "adaptive_lower": fit.adaptive[0],
        "adaptive_upper": fit.adaptive[1],
        "wilson_lower": fit.lower,
        "wilson_upper": fit.upper,
        "pooled_mean": fit.pooled.mean,
        "pooled_lower": fit.pooled.lower,
        "pooled_upper": fit.pooled.upper,
        "empty": ~measured,
        "zero_successes": (fit.successes == 0) & (fit.trials > 0) if is_prop else False,
        "predicted": ~measured,
        "conflict": fit.conflict,
        "in_gap": fit.in_gap & measured,
        "is_reference": np.arange(len(labels)) == ref,
    })


# --------------------------------------------------------------------------- disparities


def _posterior_summary(draws: np.ndarray, level: float, tolerance: float | None, absolute: bool):
    """Mean, interval and ``P(|x| > tolerance)`` per column; NaN where no draw is defined."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: undefined ratios
        q = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        mean = np.nanmean(draws, axis=0)
        if tolerance is None:
            p = np.full(draws.shape[1:], np.nan)
        else:
            defined = np.isfinite(draws)
            exceeds = np.where(defined, (np.abs(draws) if absolute else draws) > tolerance, False)
            with np.errstate(divide="ignore"):
                p = np.where(defined.any(axis=0), exceeds.sum(axis=0) / defined.sum(axis=0), np.nan)
    return mean, q[0], q[1], p


def _pairwise(name: str, fit: _MetricFit, layout: _Layout, ref: int, level: float, tol) -> pd.DataFrame:
    labels = layout.labels
    others = np.array([g for g in range(len(labels)) if g != ref], dtype=int)
    e, lo, hi = fit.rate, fit.lower, fit.upper
    dlo, dhi = mover_difference(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
    if name == "balanced_accuracy" or fit.proxy is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            r_est = e[others] / e[ref]
        rlo, rhi = mover_ratio(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
        methods = ("mover", "mover_r")
    else:
        r_est, rlo, rhi = katz_ratio(
            fit.successes[others], fit.trials[others], fit.successes[ref], fit.trials[ref], level
        )
        methods = ("newcombe", "katz_log")
    draws = fit.pooled.draws
    # a ratio of posterior draws near zero can overflow to inf: a legitimate draw of an
    # unbounded ratio, summarised by its quantiles
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d_post = _posterior_summary(draws[:, others] - draws[:, [ref]], level, tol, True)
        r_post = _posterior_summary(draws[:, others] / draws[:, [ref]], level, None, False)
    predicted = ~np.isfinite(e[others]) | ~np.isfinite(e[ref])
    # an unmeasured comparison has no measured difference, ratio or probability: only the
    # posterior's prediction (flagged ``predicted``)
    p_exceeds = np.where(predicted, np.nan, d_post[3])
    parts = []
    for measure, est, low, upp, method, post in (
        ("difference", e[others] - e[ref], dlo, dhi, methods[0], d_post),
        ("ratio", r_est, rlo, rhi, methods[1], r_post),
    ):
        parts.append(pd.DataFrame({
            "metric": name, "measure": measure, **_factor_columns(layout, others),
            "group": [labels[g] for g in others],
            **_factor_columns(layout, np.full(len(others), ref), "reference_"),
            "reference": labels[ref],
            "estimate": np.where(predicted, np.nan, est), "lower": np.where(predicted, np.nan, low),
            "upper": np.where(predicted, np.nan, upp), "method": method,
            "posterior_mean": post[0], "posterior_lower": post[1], "posterior_upper": post[2],
            "p_exceeds": p_exceeds if measure == "difference" else np.nan, "predicted": predicted,
        }))
    return pd.concat(parts, ignore_index=True)


def _gap_groups(fit: _MetricFit) -> np.ndarray:
    """The groups the max-min gap is taken over: measured, with at least ``min_trials``."""
    return np.isfinite(fit.rate) & fit.in_gap


def _gap_method(fit: _MetricFit, method: str) -> str:
    """The gap interval's method: a proxy's groups have no binomial counts to resample, so
    their gap is the projection of Bonferroni-adjusted proxy intervals."""
    return "bonferroni" if fit.proxy is not None else method


def _gap(fit: _MetricFit, level: float, method: str) -> tuple[float, float, float]:
    """Max-min gap over the gap's groups and its interval at ``level`` (NaN: not measured)."""
    method = _gap_method(fit, method)
    key = (method, level)
    if key not in fit.cache:
        used = _gap_groups(fit)
        if method == "bonferroni":
            lo, hi = fit.gap_bounds(bonferroni_level(level, max(int(np.count_nonzero(used)), 1)))
            fit.cache[key] = gap_interval(np.where(used, fit.rate, np.nan), lo, hi)
        else:
            s, n, w = fit.components
            fit.cache[key] = max_t_gap(s[used], n[used], level, weights=w, n_resamples=_N_RESAMPLES,
                                       rng=np.random.default_rng(fit.seed))
    return fit.cache[key]


def _gap_draws(fit: _MetricFit) -> np.ndarray:
    draws = fit.pooled.draws[:, _gap_groups(fit)]
    if draws.shape[1] < 2:
        return np.full(draws.shape[0], np.nan)
    return draws.max(axis=1) - draws.min(axis=1)


def _gap_row(name: str, fit: _MetricFit, layout: _Layout, level: float, tol: float | None,
             method: str, min_trials: int) -> pd.DataFrame:
    gap, lo, hi = _gap(fit, level, method)
    post = _posterior_summary(_gap_draws(fit)[:, None], level, tol, True)
    measured = np.isfinite(fit.rate)
    k, k_all = int(np.count_nonzero(_gap_groups(fit))), int(np.count_nonzero(measured))
    groups = "all measured" if k == k_all else f"{k} of {k_all} measured (>= {min_trials} trials)"
    none = np.array([-1])
    return pd.DataFrame({
        "metric": [name], "measure": "max-min gap", **_factor_columns(layout, none), "group": groups,
        **_factor_columns(layout, none, "reference_"), "reference": "",
        "estimate": gap, "lower": lo, "upper": hi, "method": _gap_method(fit, method),
        "posterior_mean": post[0], "posterior_lower": post[1], "posterior_upper": post[2],
        "p_exceeds": post[3], "predicted": False,
    })


def _few(labels: list[str], trials: np.ndarray, groups: np.ndarray, limit: int = 4) -> str:
    def one(g: int) -> str:
        n = int(trials[g])
        return f"{labels[g]!r} ({n} trial{'' if n == 1 else 's'})"

    shown = [one(g) for g in groups[:limit]]
    more = len(groups) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _gap_notes(name: str, fit: _MetricFit, labels: list[str], min_trials: int, spell: dict) -> list[str]:
    """Plain-English notes: groups left out of the gap, or a gap measured over fewer than two."""
    measured = np.isfinite(fit.rate)
    left_out = np.flatnonzero(measured & ~fit.in_gap)
    notes = []
    if len(left_out):
        notes.append(f"{name}: {len(left_out)} group(s) with fewer than {min_trials} trials are "
                     f"reported but left out of the max-min gap and the verdicts "
                     f"({spell['min_trials'].format(min_trials)}): {_few(labels, fit.size, left_out)}.")
    if np.count_nonzero(_gap_groups(fit)) < 2:
        notes.append(f"{name}: the max-min gap is not measured: fewer than two groups have at "
                     f"least {min_trials} trials ({spell['min_trials'].format(min_trials)}).")
    return notes


def _reference_notes(name: str, fit: _MetricFit, labels: list[str], ref: int, given: bool,
                     spell: dict) -> list[str]:
    if np.isfinite(fit.rate[ref]):
        return []
    if given:
        return [f"{name}: the reference group {labels[ref]!r} has no trials for {name}; its "
                "differences and ratios are not measured (NaN); choose another with "
                f"{spell['reference']}."]
    return [f"{name}: no group has trials for {name}; nothing is measured."]


# --------------------------------------------------------------------------- verdicts

#: verdict of a metric whose gap is not measured (fewer than two groups in the gap)
NOT_MEASURED = "not measured"


def _decide(gap: float, lower: float, upper: float, tol: float | None) -> str:
    if not np.isfinite(gap):
        return NOT_MEASURED
    if tol is None:
        return "no tolerance"
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return "undecided"
    if lower > tol:
        return "outside"
    if upper <= tol:
        return "within tolerance"
    return "undecided"


def _combine(decisions: list[str], tol: float | None) -> str:
    """A criterion's verdict from its metrics': outside > not measured > undecided > within."""
    for verdict in ("outside", NOT_MEASURED):
        if verdict in decisions:
            return verdict
    if tol is None:
        return "no tolerance"
    return "within tolerance" if all(d == "within tolerance" for d in decisions) else "undecided"


def _ends(fit: _MetricFit) -> tuple[int, int]:
    """The groups with the highest and the lowest rate among the gap's groups (-1: none)."""
    used = np.flatnonzero(_gap_groups(fit))
    if len(used) < 2:
        return -1, -1
    return int(used[np.argmax(fit.rate[used])]), int(used[np.argmin(fit.rate[used])])


def _small_note(fit: _MetricFit, labels: list[str], ends: tuple[int, int]) -> str:
    """Says so when a group with fewer than :data:`MIN_TRIALS` trials sets the gap."""
    small = np.array([g for g in dict.fromkeys(ends) if g >= 0 and fit.size[g] < MIN_TRIALS], dtype=int)
    if not len(small):
        return ""
    return (f"gap set by group(s) with fewer than {MIN_TRIALS} trials: "
            f"{_few(labels, fit.size, small)}; read it as noisy")


def _verdict_rows(criterion: str, fits: dict, layout: _Layout, level: float, tol: float | None,
                  method: str) -> list[dict]:
    names = CRITERIA[criterion]
    lev = bonferroni_level(level, len(names))
    gaps = {m: _gap(fits[m], lev, method) for m in names}
    decisions = [_decide(g, lo, hi, tol) for g, lo, hi in gaps.values()]
    verdict = _combine(decisions, tol)
    joint = np.stack([_gap_draws(fits[m]) for m in names], axis=1)
    measured = NOT_MEASURED not in decisions
    p_joint = float(np.mean(np.max(joint, axis=1) > tol)) if tol is not None and measured else np.nan
    rows = []
    for (m, (g, lo, hi)), d in zip(gaps.items(), decisions, strict=True):
        high, low = _ends(fits[m])
        rows.append({
            "criterion": criterion, "metric": m, "gap": g, "lower": lo, "upper": hi, "level": lev,
            "method": _gap_method(fits[m], method), "tolerance": tol, "metric_verdict": d, "p_exceeds": p_joint,
            "verdict": verdict,
            **{k: v[0] for k, v in _factor_columns(layout, [high], "high_").items()},
            "high": layout.labels[high] if high >= 0 else "",
            **{k: v[0] for k, v in _factor_columns(layout, [low], "low_").items()},
            "low": layout.labels[low] if low >= 0 else "",
            "note": _small_note(fits[m], layout.labels, (high, low)),
        })
    return rows


def _trials_needed(fit: _MetricFit, groups: np.ndarray, halfwidth: float, level: float) -> np.ndarray:
    """Extra trials per group for a Clopper-Pearson half-width at the current rate; with a proxy,
    the need in effective labels divided by the group's effective labels per label."""
    out = np.zeros(fit.rate.shape, np.int64)
    for g in groups:
        rate = float(np.clip(fit.rate[g], 0.0, 1.0))
        need = sample_size(halfwidth=min(halfwidth, 0.49), rate=rate, level=level, method="clopper_pearson")
        extra = max(0, need - int(fit.trials[g]))
        if fit.proxy is not None:
            per_label = max(fit.trials[g] / max(int(fit.size[g]), 1), 1.0)
            extra = int(np.ceil(extra / per_label))
        out[g] = extra
    return out


def _labels_rows(row: dict, fit: _MetricFit, layout: _Layout, rows: np.ndarray) -> list[dict]:
    """Extra trials (and rows) per group for the gap interval to decide, at the current rates."""
    tol, gap = row["tolerance"], row["gap"]
    if tol is None or row["metric_verdict"] != "undecided" or not np.isfinite(gap) or gap == tol:
        return []
    measured = np.flatnonzero(_gap_groups(fit))
    if gap > tol:  # the lower end must rise above tol: the two extreme groups decide it
        rate = fit.rate[measured]
        measured = np.unique(measured[[int(np.argmax(rate)), int(np.argmin(rate))]])
    k = len(np.flatnonzero(_gap_groups(fit)))
    level = bonferroni_level(row["level"], k)
    extra = _trials_needed(fit, measured, abs(tol - gap) / 2, level)
    out = []
    trials = fit.trials if fit.proxy is None else fit.proxy["trials"].to_numpy()
    for g in measured:
        share = trials[g] / rows[g] if rows[g] else np.nan
        out.append({
            "criterion": row["criterion"], "metric": row["metric"],
            **{k: v[0] for k, v in _factor_columns(layout, [g]).items()}, "group": layout.labels[g],
            "trials": int(fit.size[g] if fit.proxy is not None else fit.trials[g]),
            "extra_trials": int(extra[g]),
            "extra_rows": int(np.ceil(extra[g] / share)) if share and np.isfinite(share) else pd.NA,
        })
    return out


# --------------------------------------------------------------------------- result


@dataclass(repr=False)
class Audit(Result):
    """Result of :func:`audit`: per-group rates, disparities and verdicts.

    The tables are tidy: each group column of the audit (``columns``) is a column of
    :attr:`groups`, :attr:`disparities` (``reference_<column>`` for the reference group),
    :attr:`verdicts` (``high_<column>`` and ``low_<column>``, the groups with the highest
    and lowest rate in the gap) and :attr:`labels_needed`, holding the group's value as
    in the data (fairlearn's ``MetricFrame`` keeps the same values in a MultiIndex). The
    ``group`` column (``reference``, ``high``, ``low``) is a display label: the values
    joined by ``" | "``, a value that contains ``|`` or ``"``, is empty or has outer
    spaces shown JSON-quoted, so that two groups never share a label. With one group
    column named ``group``, that column is the label column.

    Parameters
    ----------
    groups : pandas.DataFrame
        One row per group x metric: the group columns, ``group``, ``metric``,
        ``successes``, ``trials``, ``rate``, ``lower``/``upper`` (the group's interval
        under ``guarantee``) and ``read`` (which interval that is: ``"adaptive"``,
        ``"proxy"`` or ``"pooled"``), the adaptive interval
        (``adaptive_lower``/``adaptive_upper``), the Wilson
        interval, the pooled estimate and interval, and flags ``empty`` (no trials),
        ``zero_successes`` (0 of n), ``predicted`` (the pooled value is a prediction
        from the other groups, not a measurement), ``conflict`` (the group's count
        conflicts with what the other groups predict: read its own interval, not the
        pooled one), ``in_gap`` (counted in the max-min gap) and ``is_reference`` (the
        metric's reference group). With a proxy, a metric read from labels has
        ``successes``/``trials`` equal to the group's effective counts (what its proxy
        interval is worth), ``rate`` and the adaptive and Wilson columns equal to the proxy
        estimate and interval, and also ``labelled``, ``pool_trials``,
        ``effective_labels``, ``agreement`` and ``proxy_used``.
    disparities : pandas.DataFrame
        One row per metric x group x measure (``difference`` and ``ratio`` to the
        reference group, and one ``max-min gap`` row per metric, whose group columns
        are missing): ``estimate``, ``lower``, ``upper`` (frequentist, ``method`` names
        it), the posterior mean and interval, ``p_exceeds`` (``P(|difference| >
        tolerance)``) and ``predicted`` (a comparison with a group without data: only
        the posterior's prediction exists, and the estimate, interval and ``p_exceeds``
        are ``NaN``).
    verdicts : pandas.DataFrame
        One row per criterion x metric: the gap, its simultaneous interval (level
        Bonferroni-adjusted over the criterion's metrics; ``method``), the metric's own
        verdict, the posterior ``P(max gap > tolerance)``, the criterion's ``verdict``
        (``"outside"``, ``"within tolerance"``, ``"undecided"``, ``"not measured"``
        when fewer than two groups have ``min_trials`` trials, or ``"no tolerance"``),
        the groups at the two ends of the gap, and a ``note`` when a group with fewer
        than :data:`MIN_TRIALS` trials sets the gap.
    labels_needed : pandas.DataFrame
        For undecided criteria, per group: the extra trials (and rows) that would let
        the gap interval decide if the rates stay as estimated (planned with
        Clopper-Pearson half-widths at the Bonferroni level, an approximation for
        ``method="max_t"``).
    reference : dict
        The reference group's label per metric.
    level : float
        Confidence level.
    tolerance : float or None
        Largest acceptable gap.
    model : str
        The pooled model behind the ``pooled_*`` columns and the posterior intervals:
        ``"crossed"`` (crossed-factor logit-normal, :func:`bayeseval.fit_crossed`),
        ``"robust"`` or ``"beta_binomial"`` (exchangeable, :func:`bayeseval.fit_hierarchical`).
    min_trials : int
        Groups with fewer trials are reported but left out of the max-min gap and the
        verdicts (``in_gap`` in :attr:`groups`).
    notes : list of str
        Plain-English notes: groups left out of the gap, gaps or references not measured.
    method : str
        The max-min gap interval: ``"max_t"`` or ``"bonferroni"`` (see :func:`audit`).
    columns : list of str
        The group columns.
    guarantee : {"stratum", "average"}
        What the groups table's ``lower`` and ``upper`` promise (see :func:`audit`).
    proxy : str or None
        The proxy column, when the audit read a few labels and a proxy.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 25, "p": [1, 0, 0, 0] * 25,
    ...                    "g": ["a"] * 60 + ["b"] * 40})
    >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr"], random_seed=0)
    >>> res.groups[["g", "rate", "is_reference"]].values.tolist()
    [['a', 0.5, True], ['b', 0.5, False]]
    """

    groups: pd.DataFrame
    disparities: pd.DataFrame
    verdicts: pd.DataFrame
    labels_needed: pd.DataFrame
    reference: dict
    level: float
    tolerance: float | None
    model: str = "robust"
    min_trials: int = MIN_TRIALS
    notes: list[str] = field(default_factory=list)
    method: str = "max_t"
    columns: list[str] = field(default_factory=list)
    guarantee: str = "stratum"
    proxy: str | None = None

    title = "Fairness audit"

    @property
    def table(self) -> pd.DataFrame:
        """The per-group table (:attr:`groups`)."""
        return self.groups

    @property
    def outside(self) -> bool:
        """Whether any criterion is decided outside the tolerance."""
        return bool((self.verdicts["verdict"] == "outside").any()) if len(self.verdicts) else False

    @property
    def not_measured(self) -> bool:
        """Whether a criterion's gap is not measured (fewer than two groups in the gap)."""
        return bool((self.verdicts["verdict"] == NOT_MEASURED).any()) if len(self.verdicts) else False

    def _repr_html_(self) -> str:
        parts = [f"<p>{html.escape(self.settings)}</p>"]
        parts += [f"<p>Note: {html.escape(n)}</p>" for n in self.notes]
        parts.append(Result._repr_html_(self))
        for title, frame in (("Disparities", self.disparities), ("Verdicts", self.verdicts)):
            parts.append(_Titled(title, frame)._repr_html_())
        return "".join(parts)

    def to_text(self, *, width: int = 100) -> str:
        """A summary for a terminal: verdicts, the groups that drive them, notes.

        Parameters
        ----------
        width : int
            The widest line (at least 40); long group labels wrap onto indented lines.

        Returns
        -------
        str
            The headline, the settings, one entry per criterion and metric (verdict, gap
            and its interval, the highest and lowest group with their rates and trials)
            and the notes. The full tables are :attr:`groups`, :attr:`disparities` and
            :attr:`verdicts`.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 50, "p": [1, 0, 1, 1] * 50,
        ...                    "g": ["a"] * 100 + ["b"] * 100})
        >>> text = audit(df, y_true="y", y_pred="p", groups="g", metrics=["selection_rate"],
        ...              tolerance=0.3, random_seed=0).to_text()
        >>> text.splitlines()[0]
        'Fairness audit of selection_rate over g (2 groups): 1 within tolerance.'
        >>> max(len(line) for line in text.splitlines()) <= 100
        True
        """
        return audit_text.summary(self, width=check_positive_int(width, "width"))

    def to_markdown(self) -> str:
        """The audit as a Markdown document: summary, verdicts, disparities, groups, notes.

        Returns
        -------
        str
            Headings and pipe tables; every text cell escaped (a group value holding ``|``
            or a line break stays in its cell).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 40, "p": [1, 0] * 40, "g": ["a"] * 40 + ["b"] * 40})
        >>> md = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr",
        ...            random_seed=0).to_markdown()
        >>> md.splitlines()[0], "## Groups" in md
        ('# Fairness audit', True)
        """
        out = ["# Fairness audit", "", md_escape(audit_text.headline(self)), "",
               md_escape(self.settings), ""]
        for title, frame in (("Verdicts", self.verdicts), ("Disparities", self.disparities),
                             ("Groups", self.groups), ("Labels needed", self.labels_needed)):
            if len(frame):
                out += [f"## {title}", ""] + md_table(frame) + [""]
        if self.notes:
            out += ["## Notes", ""] + [f"- {md_escape(n)}" for n in self.notes] + [""]
        return "\n".join(out)

    def save(self, path: str | os.PathLike, *, plot: bool = True) -> Path:
        """Write the audit to ``path``; the suffix chooses the format.

        ``.html``/``.htm``: a self-contained page (:meth:`to_html`, with the forest plot
        inline). ``.md``: :meth:`to_markdown`. ``.json``: :meth:`to_dict`. ``.csv``: the
        per-group table (:meth:`to_frame`), a text cell starting with ``=``, ``+``, ``-``,
        ``@``, a tab or a carriage return prefixed with ``'`` so that no spreadsheet runs
        it. ``.xlsx``: sheets ``verdicts``, ``disparities``, ``groups``, ``labels_needed``
        and ``notes``, every text cell stored as text.

        Parameters
        ----------
        path : str or PathLike
            The file to write.
        plot : bool, default True
            Embed the disparity forest plot (HTML only).

        Returns
        -------
        pathlib.Path
            The path written.

        Raises
        ------
        ValueError
            For another suffix.

        Examples
        --------
        >>> import tempfile, pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 40, "p": [1, 0] * 40, "g": ["a"] * 40 + ["b"] * 40})
        >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", random_seed=0)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     pd.read_csv(res.save(f"{d}/audit.csv"))["trials"].tolist()  # 20 positives each
        [20, 20]
        """
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix not in AUDIT_SUFFIXES:
            raise ValueError(f"path must end in {', '.join(AUDIT_SUFFIXES)}, got {str(path)!r}")
        if suffix == ".xlsx":
            notes = pd.DataFrame({"note": self.notes, "settings": self.settings}
                                 if self.notes else {"note": [], "settings": []})
            write_xlsx(p, {"verdicts": self.verdicts, "disparities": self.disparities,
                           "groups": self.groups, "labels_needed": self.labels_needed,
                           "notes": notes})
            return p
        if suffix in (".html", ".htm"):
            text = page("Fairness audit", _audit_page_body(self, plot))
        elif suffix == ".md":
            text = self.to_markdown()
        elif suffix == ".json":
            text = json.dumps(self.to_dict(), indent=2) + "\n"
        else:
            text = csv_safe_frame(self.to_frame()).to_csv(index=False)
        p.write_text(text, encoding="utf-8")
        return p

    def to_html(self, *, plot: bool = True) -> str:
        """An HTML section for reports: the verdicts, disparities, groups and the forest plot.

        Parameters
        ----------
        plot : bool
            Embed the disparity forest plot as a PNG (base64).

        Returns
        -------
        str
            A ``<section>`` element; every label is escaped.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["<a>", "b"] * 20})
        >>> html = audit(df, y_true="y", y_pred="p", groups="g", metrics="fpr",
        ...              random_seed=0).to_html(plot=False)
        >>> "&lt;a&gt;" in html and "<a>" not in html
        True
        """
        from bayeseval.plots import disparities_png  # deferred: matplotlib only when drawing

        png = disparities_png(self, max_rows=audit_html.MAX_PLOT_ROWS) if plot else None
        return audit_html.section(self, png, heading="h2")

    @property
    def settings(self) -> str:
        """One sentence: reference groups, level, tolerance, gap method, pooled model, ``min_trials``."""
        tol = "none" if self.tolerance is None else f"{self.tolerance:g}"
        model = _MODEL_TEXT.get(self.model, self.model)
        refs = list(dict.fromkeys(self.reference.values()))
        ref = (f"Reference group: {refs[0]}" if len(refs) == 1 else "Reference group per metric: "
               + ", ".join(f"{m} {r}" for m, r in self.reference.items()))
        text = (f"{ref}; level {self.level:g}; tolerance {tol}; max-min gap interval: "
                f"{_METHOD_TEXT.get(self.method, self.method)}; pooled model: {model}; gap over "
                f"groups with at least {self.min_trials} trials.")
        if self.guarantee != "stratum":
            text += (f" Guarantee {self.guarantee!r}: lower/upper are the pooled interval (the "
                     "group's own where its count is atypical).")
        if self.proxy is not None:
            text += (f" Proxy {self.proxy!r}: metrics read from labels use each group's proxy "
                     "interval, and their gap interval is the projection of Bonferroni-adjusted "
                     "proxy intervals.")
        return text

    def to_dict(self) -> dict:
        """The audit as plain JSON-ready data.

        Returns
        -------
        dict
            The settings (``reference`` per metric, ``level``, ``tolerance``, ``method``,
            ``model``, ``min_trials``, ``columns``), the notes and the four tables as lists
            of records.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["a", "b"] * 20})
        >>> sorted(audit(df, y_true="y", y_pred="p", groups="g", metrics="fpr",
        ...              random_seed=0).to_dict())
        ['columns', 'disparities', 'groups', 'labels_needed', 'level', 'method', 'min_trials', 'model', 'notes', 'reference', 'tolerance', 'verdicts']
        """
        def records(frame: pd.DataFrame) -> list:
            return json.loads(frame.to_json(orient="records"))

        return {
            "reference": dict(self.reference), "level": self.level, "tolerance": self.tolerance,
            "method": self.method, "model": self.model, "min_trials": self.min_trials,
            "columns": list(self.columns), "notes": list(self.notes),
            "groups": records(self.groups), "disparities": records(self.disparities),
            "verdicts": records(self.verdicts), "labels_needed": records(self.labels_needed),
        }


#: the file types of :meth:`Audit.save`
AUDIT_SUFFIXES = (".html", ".htm", ".md", ".csv", ".xlsx", ".json")

_METHOD_TEXT = {
    "max_t": "simultaneous pairwise differences (max-t)",
    "bonferroni": "Bonferroni projection (exact)",
}

_MODEL_TEXT = {
    "crossed": "crossed factors (main effects + shrunk interaction)",
    "robust": "robust Beta-binomial (exchangeable groups)",
    "beta_binomial": "Beta-binomial (exchangeable groups)",
}


class _Titled(Result):
    def __init__(self, title: str, frame: pd.DataFrame) -> None:
        self._title, self._frame = title, frame

    def _heading(self) -> str:
        return self._title

    @property
    def table(self) -> pd.DataFrame:
        return self._frame


# --------------------------------------------------------------------------- audit


def _matches(values: list, wanted: Any) -> list[int]:
    """Positions equal to ``wanted``; failing that, those whose text equals its text."""
    exact = [i for i, v in enumerate(values) if _equal(v, wanted)]
    return exact or [i for i, v in enumerate(values) if str(v) == str(wanted)]


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _reference_key(reference: Any, cols: list[str]) -> Any:
    """A mapping ``column -> value`` as the tuple of values in column order."""
    if not isinstance(reference, Mapping):
        return reference
    if set(reference) != set(cols):
        raise ValueError(f"reference: a mapping needs one value for each group column {cols} and "
                         f"no other key; got {dict(reference)!r}")
    return tuple(reference[c] for c in cols)


def _reference(reference: Any, layout: _Layout, spelling: str = "python") -> int | None:
    """The position of the reference group given by the user (None: the default, per metric)."""
    if reference is None:
        return None
    cols, labels = layout.columns, layout.labels
    key = _reference_key(reference, cols)
    rows = list(layout.factors.itertuples(index=False, name=None))
    if isinstance(key, (tuple, list)):
        if len(key) != len(cols):
            raise ValueError(f"reference {reference!r} has {len(key)} value(s); give one per group "
                             f"column {cols} (a tuple in that order, or a mapping column -> value)")
        found = [g for g, row in enumerate(rows) if all(_matches([v], k) for v, k in zip(row, key, strict=True))]
    elif len(cols) == 1:
        found = _matches([r[0] for r in rows], key)
    else:
        found = [g for g, lab in enumerate(labels) if lab == str(key)]
        found = found or [g for g, row in enumerate(rows) if _SEP.join(map(str, row)) == str(key)]
    if len(found) > 1:
        how = (f"give the reference per group column, as a tuple {tuple(cols)} or a mapping "
               "{column: value}") if spelling == "python" else (
               f"give --reference as the tables label the group: {[labels[g] for g in found[:5]]}")
        raise ValueError(f"reference {reference!r} is ambiguous: it names the groups "
                         f"{[rows[g] for g in found[:5]]}; {how}")
    if not found:
        raise ValueError(f"reference {reference!r} is not one of the groups {labels[:10]}")
    return found[0]


def _default_reference(fit: _MetricFit, rows: np.ndarray) -> int:
    """The measured group with the most trials for the metric (ties: most rows, then first)."""
    key = np.where(np.isfinite(fit.rate), fit.size, -1)
    return int(np.lexsort((-np.arange(len(rows)), rows, key))[-1])


def _fit_all(names, counts, cells, level, seed, model, min_trials) -> dict:
    rng = np.random.default_rng(seed)
    fits = {}
    for name in counts:
        if not isinstance(counts[name], tuple):  # ProxyCounts
            fits[name] = _fit_proxy(counts[name], cells, level, rng.integers(2**32), model, min_trials)
            continue
        s, n = counts[name]
        fits[name] = _fit_proportion(s, n, cells, level, rng.integers(2**32), model, min_trials)
    if "balanced_accuracy" in names:
        fits["balanced_accuracy"] = _fit_balanced(fits["tpr"], fits["tnr"], level, rng.integers(2**32))
    return fits


def audit(
    data: Any,
    *,
    y_true: str,
    y_pred: str,
    groups: str | list[str],
    metrics: str | list[str] | None = None,
    reference: Any = None,
    tolerance: float | None = None,
    level: float = 0.95,
    pos_label: Any = None,
    random_seed: Any = None,
    model: str | None = None,
    min_trials: int = MIN_TRIALS,
    method: str = "max_t",
    guarantee: str = "stratum",
    proxy: str | None = None,
    inclusion: str | None = None,
) -> Audit:
    """Audit a classifier's rates across groups: intervals, disparities and verdicts.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or Spark DataFrame
        One row per example (anything :func:`bayeseval.tabulate` accepts).
    y_true, y_pred : str
        Columns holding the true and predicted labels (binary).
    groups : str or list of str
        Group column(s). With several columns the groups are their crossed cells; cells
        never observed are listed as empty, with a pooled prediction. Every table has one
        column per group column (named after it) and a display label ``group`` (see
        :class:`Audit`); a group column may not share a name with a column of the tables.
    metrics : str or list of str, optional
        Any of ``selection_rate``, ``tpr`` (``recall``), ``fnr``, ``fpr``, ``tnr``
        (``specificity``), ``ppv`` (``precision``), ``npv``, ``error_rate``,
        ``accuracy``, ``balanced_accuracy`` or any alias of
        :data:`bayeseval._api.metric_names.NAMES`; default all. Every table and note
        names a metric as it is written here (``recall`` stays ``recall``; the default
        names are the short ones above). Balanced accuracy is the mean
        of TPR and TNR; its interval is the MOVER combination (Zou and Donner 2008) of
        the two rates' intervals, which treats them as independent proportions (they
        come from disjoint rows).
    reference : tuple, mapping or str, optional
        Reference group of differences and ratios, given per group column: a tuple of
        values in the order of ``groups``, or a mapping ``column -> value``; with one
        group column, its value. A string names a group by its label (the values joined
        by ``" | "``) and is refused when it could name several groups (values that
        contain ``" | "``). Default: per metric, the measured group with the most trials
        for that metric (ties: most rows), shown in ``is_reference``, the ``reference``
        columns and :attr:`Audit.reference`.
    tolerance : float, optional
        Largest acceptable max-min gap, in (0, 1). Without it, no verdicts are given
        (``"no tolerance"``) and ``p_exceeds`` is ``NaN``.
    level : float
        Confidence level of every interval.
    pos_label : optional
        The positive class; defaults to 1 for 0/1 or boolean labels.
    random_seed : int or numpy.random.Generator, optional
        Seed of the posterior draws (keyword-only).
    model : {None, "crossed", "robust", "beta_binomial"}
        The pooled model (the ``pooled_*`` columns and every posterior interval). None
        (default): ``"crossed"`` with several group columns, ``"robust"`` with one.
        ``"crossed"`` is the crossed-factor logit-normal model of
        :func:`bayeseval.fit_crossed` (additive main effects on the logit scale plus a
        shrunk per-cell interaction), so a cell borrows from the cells that share its
        levels; it needs at least two group columns. ``"robust"`` and
        ``"beta_binomial"`` treat the groups as exchangeable
        (:func:`bayeseval.fit_hierarchical`): every group is pulled toward the overall rate.
    min_trials : int
        Groups with fewer trials (for a metric) are reported in :attr:`Audit.groups`
        (``in_gap`` False) but left out of the max-min gap, its posterior and the
        verdicts, and a note names them: the gap is the gap among the groups with at
        least ``min_trials`` trials, and "not measured" when fewer than two have them.
        Default :data:`MIN_TRIALS` (30): a group of 30 trials moves the headline gap by
        noise alone by at most about two standard errors, ``2 sqrt(0.25 / 30) = 0.18``,
        and its 95% Wilson interval is at most 0.33 wide, where one- and two-person cells
        put rates of 0 and 1 in the headline (a COMPAS TPR gap of 1.00) and intervals of
        width 0.79 and more. ``min_trials=1`` keeps every measured group; a verdict set
        by a group under 30 trials then says so in its ``note``.
    method : {"max_t", "bonferroni"}
        The max-min gap interval. ``"max_t"`` (default): simultaneous intervals over
        every pair of groups, Agresti-Caffo differences with a max-t critical value
        calibrated by parametric bootstrap (:func:`bayeseval._kernels.disparity.max_t_gap`),
        projected to the gap. ``"bonferroni"``: Clopper-Pearson intervals at level
        ``1 - (1 - level) / G`` projected to the gap, coverage at least ``level`` for
        every configuration of true rates (for balanced accuracy the per-group intervals
        are MOVER combinations of Wilson intervals, not exact). See Notes.
    guarantee : {"stratum", "average"}
        What the groups table's ``lower`` and ``upper`` promise, as in
        :func:`bayeseval.evaluate`. ``"stratum"`` (default): each group's own interval,
        covering its rate at least ``level`` of the time at every rate (the adaptive
        interval from a leave-one-out prior; with a proxy, the proxy interval).
        ``"average"``: the pooled interval, except for groups whose count is not clearly
        typical of what the other groups predict (the same read rule as ``evaluate``),
        which read their own interval; covers on average over groups like these.
    proxy : str, optional
        A column known on every row (a judge's label, a stronger model's prediction, or a
        probability/score; see :func:`bayeseval.tabulate`): rows whose ``y_true`` is
        missing are the unlabelled rows. Metrics that read the true label then use each
        group's proxy estimate and interval (:func:`bayeseval.proxy_ci`,
        Clopper-Pearson cells): differences and ratios are MOVER combinations of those
        intervals (``method`` ``"mover"``, ``"mover_r"``), the max-min gap the projection
        of Bonferroni-adjusted proxy intervals (whatever ``method``), the pooled model is
        fitted to the groups' effective counts, ``min_trials`` counts labelled trials and
        ``labels_needed`` gives labels (the need in effective labels over the group's
        effective labels per label). The selection rate reads only ``y_pred`` and is
        counted on every row. Metrics: ``selection_rate``, ``error_rate``, ``accuracy``,
        ``ppv``, ``npv`` (the default with a proxy); others raise ValueError.
    inclusion : str, optional
        With ``proxy``: each labelled row's inclusion probability (see
        :func:`bayeseval.proxy_ci`).

    Returns
    -------
    Audit
        ``groups``, ``disparities``, ``verdicts`` and ``labels_needed`` tables.

    Raises
    ------
    ValueError, TypeError
        Bad arguments (unknown metric, missing column, non-binary labels without
        ``pos_label``, unknown reference, out-of-range tolerance or level).

    Notes
    -----
    The max-t gap interval covered the true gap at least 0.95 of the time in every
    seeded scenario of six groups of 20 to 2,000 rows (docs/validation.md, section 8,
    with its width and power beside the Bonferroni projection's). Its coverage is
    approximate (calibrated by simulation at the observed and the pooled rates); the
    Bonferroni projection's is guaranteed, at the cost of width: ``method="bonferroni"``
    when a guarantee is needed. Below about 20 trials per group the max-t interval is an
    approximation whose width says little, one reason for the default ``min_trials``.

    The max-t calibration costs two bootstraps of 2,000 replicates over the ``G (G - 1) / 2``
    pairs: milliseconds for tens of groups, a few seconds for 200.

    Why max-t rather than an exact-test step-down: a step-down procedure (Holm over
    pairwise exact tests) decides which pairs differ, but gives no simultaneous interval
    of the size of the gap, which the verdict compares with the tolerance; the max-t
    intervals are simultaneous over every pair, so their projection bounds the gap, and
    studentising each pair by its own standard error keeps a small group from setting
    the width of the comparisons between large groups.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 50, "p": [1, 0, 1, 1] * 50,
    ...                    "g": ["a"] * 100 + ["b"] * 100})
    >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["selection_rate"],
    ...             tolerance=0.3, random_seed=0)
    >>> res.verdicts[["criterion", "verdict"]].values.tolist()
    [['demographic_parity', 'within tolerance']]
    """
    return audit_with_spelling(data, y_true=y_true, y_pred=y_pred, groups=groups, metrics=metrics,
                  reference=reference, tolerance=tolerance, level=level, pos_label=pos_label,
                  random_seed=random_seed, model=model, min_trials=min_trials, method=method,
                  spelling="python", guarantee=guarantee, proxy=proxy, inclusion=inclusion)


def audit_with_spelling(data: Any, *, y_true: str, y_pred: str, groups: Any, metrics: Any, reference: Any,
           tolerance: Any, level: Any, pos_label: Any, random_seed: Any, model: Any,
           min_trials: Any, method: Any, spelling: str, guarantee: str = "stratum",
           proxy: str | None = None, inclusion: str | None = None) -> Audit:
    """:func:`audit`, with messages naming options as the interface ``spelling`` spells them."""
    written = _check_metrics(metrics, proxy)
    names = list(written)
    _check_proxy_metrics(names, proxy, inclusion)
    guarantee = check_method(guarantee, GUARANTEES, "guarantee")
    tol = _check_tolerance(tolerance)
    level = check_level(level)
    random_seed = check_random_seed(random_seed)
    cols = iter_columns(groups, "groups")
    if not cols:
        raise ValueError(f"groups must name at least one column, got {groups!r}")
    _check_factor_names(cols)
    model = _check_model(model, len(cols))
    min_trials = _check_min_trials(min_trials)
    method = check_method(method, GAP_METHODS, "method")
    cells, rows, counts = _tabulate_all(data, cols, y_true, y_pred, names, pos_label,
                                        None if proxy is None else (proxy, inclusion))
    layout = _layout(cells, cols)
    given = _reference(reference, layout, spelling)
    fits = _fit_all(names, counts, cells, level, random_seed, model, min_trials)
    refs = {m: _default_reference(fits[m], rows) if given is None else given for m in names}
    spell = _SPELLING[spelling]
    verdicts, labels_needed = _verdict_tables(names, fits, layout, rows, level, tol, method)
    notes = [note for m in names for note in (
        _reference_notes(m, fits[m], layout.labels, refs[m], given is not None, spell)
        + _gap_notes(m, fits[m], layout.labels, min_trials, spell))]
    return _as_written(written, Audit(
        groups=pd.concat([_group_frame(m, layout, fits[m], refs[m], guarantee) for m in names],
                         ignore_index=True),
        disparities=_disparity_table(names, fits, layout, refs, level, tol, method, min_trials),
        verdicts=verdicts,
        labels_needed=labels_needed,
        reference={m: layout.labels[refs[m]] for m in names},
        level=level,
        tolerance=tol,
        model=model,
        min_trials=min_trials,
        notes=notes,
        method=method,
        columns=list(cols),
        guarantee=guarantee,
        proxy=proxy,
    ))


def _as_written(written: dict[str, str], result: Audit) -> Audit:
    """Every table and note names each metric as the user wrote it (``recall`` stays ``recall``)."""
    if all(key == name for key, name in written.items()):
        return result
    for frame in (result.groups, result.disparities, result.verdicts, result.labels_needed):
        frame["metric"] = frame["metric"].map(lambda m: written.get(m, m))
    result.reference = {written.get(m, m): label for m, label in result.reference.items()}
    for i, note in enumerate(result.notes):
        key, sep, rest = note.partition(": ")
        result.notes[i] = written.get(key, key) + sep + rest
    return result


def _disparity_table(names, fits, layout, refs, level, tol, method, min_trials) -> pd.DataFrame:
    parts = []
    for m in names:
        if len(layout.labels) > 1:
            parts.append(_pairwise(m, fits[m], layout, refs[m], level, tol))
        parts.append(_gap_row(m, fits[m], layout, level, tol, method, min_trials))
    return pd.concat(parts, ignore_index=True)


def _verdict_tables(names, fits, layout, rows, level, tol, method) -> tuple[pd.DataFrame, pd.DataFrame]:
    verdict_rows, label_rows = [], []
    for criterion, needed in CRITERIA.items():
        if all(m in names for m in needed):
            new = _verdict_rows(criterion, fits, layout, level, tol, method)
            verdict_rows += new
            for row in new:
                label_rows += _labels_rows(row, fits[row["metric"]], layout, rows)
    factors = list(_factor_columns(layout, []))
    verdict_columns = (_VERDICT_COLUMNS[:-3] + [f"high_{c}" for c in layout.columns] + ["high"]
                       + [f"low_{c}" for c in layout.columns] + ["low", "note"])
    label_columns = _LABEL_COLUMNS[:2] + factors + _LABEL_COLUMNS[2:]
    return (pd.DataFrame(verdict_rows, columns=verdict_columns),
            pd.DataFrame(label_rows, columns=label_columns))


#: the audit's tables' own columns (the group columns come in addition)
_GROUP_COLUMNS = ["group", "metric", "successes", "trials", "labelled", "pool_trials", "effective_labels",
                  "agreement", "proxy_used", "rate", "lower", "upper", "read", "adaptive_lower", "adaptive_upper",
                  "wilson_lower", "wilson_upper", "pooled_mean", "pooled_lower", "pooled_upper", "empty",
                  "zero_successes", "predicted", "conflict", "in_gap", "is_reference"]
_DISPARITY_COLUMNS = ["metric", "measure", "group", "reference", "estimate", "lower", "upper", "method",
                      "posterior_mean", "posterior_lower", "posterior_upper", "p_exceeds", "predicted"]
_VERDICT_COLUMNS = ["criterion", "metric", "gap", "lower", "upper", "level", "method", "tolerance",
                    "metric_verdict", "p_exceeds", "verdict", "high", "low", "note"]
_LABEL_COLUMNS = ["criterion", "metric", "group", "trials", "extra_trials", "extra_rows"]
_PREFIXES = ("reference_", "high_", "low_")
_RESERVED = frozenset(_GROUP_COLUMNS + _DISPARITY_COLUMNS + _VERDICT_COLUMNS + _LABEL_COLUMNS)


def _audit_page_body(result: Audit, plot: bool) -> str:
    """The saved page: the headline, when and by which version it was made, then the audit."""
    import datetime

    from bayeseval import __version__

    made = datetime.date.today().isoformat()
    meta = (f"<ul class='bv-meta'><li><b>made</b> {made}</li>"
            f"<li><b>bayeseval</b> {html.escape(__version__)}</li></ul>")
    return ("<div class='bayeseval-report'><h1>Fairness audit</h1>"
            f"<p>{html.escape(audit_text.headline(result))}</p>{meta}"
            + result.to_html(plot=plot).replace("<h2>Fairness audit</h2>", "", 1) + "</div>")


#: exit codes of ``bayeseval audit``
EXIT_OUTSIDE, EXIT_NOT_MEASURED = 1, 3


def exit_code(result: Audit) -> int:
    """Exit code of ``bayeseval audit`` for an audit.

    Parameters
    ----------
    result : Audit
        The audit.

    Returns
    -------
    int
        1 when a criterion is decided outside the tolerance; else 3 when a tolerance is
        given and a criterion is not measured (fewer than two groups with
        ``--min-trials`` trials: it is neither within the tolerance nor undecided); else 0
        (every criterion within the tolerance or undecided, or no tolerance). Bad input
        is 2.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 0] * 20, "g": ["a"] * 38 + ["b"] * 2})
    >>> exit_code(audit(df, y_true="y", y_pred="p", groups="g", metrics="selection_rate",
    ...                 tolerance=0.1, random_seed=0))
    3
    """
    if result.outside:
        return EXIT_OUTSIDE
    return EXIT_NOT_MEASURED if result.tolerance is not None and result.not_measured else 0
