"""Fairness audits: per-group rates, disparities with honest intervals, and verdicts.

The module is ``fairness`` so that the package attribute ``bayeseval.audit`` can be the
function :func:`audit` (a submodule of the same name would replace it once imported).

:func:`audit` counts each metric per group once, then reports three intervals per
group and metric, the disparities between groups, and a verdict per fairness
criterion:

* **adaptive** (the default reading): the FAB interval ("frequentist, assisted by
  Bayes") whose tail split comes from a leave-one-out prior built from the *other*
  groups; coverage at least ``level`` for every group whatever its true rate, and
  shorter than Clopper-Pearson when the groups are alike
  (:func:`bayeseval._core.adaptive.adaptive_interval`);
* **Wilson**: the plain score interval of the group's own counts;
* **pooled**: the posterior of a hierarchical model across groups, which borrows
  strength but pulls an outlying group toward the others; for a group with no data it
  is a *prediction*, flagged as such. With one group column the groups are
  exchangeable (robust Beta-binomial); with several, the crossed-factor model
  (:func:`bayeseval.fit_crossed`: main effects plus a shrunk interaction), so a cell
  borrows from the cells that share its levels (``model=`` chooses).

Disparities per metric: the difference and the ratio of each group to the reference
group (default: the group with most rows) with Newcombe's hybrid score interval and
Katz's log interval, and the max-min gap across groups with a simultaneous interval
projected from Bonferroni-adjusted Clopper-Pearson intervals (coverage at least
``level`` for every configuration of true rates); each beside its posterior interval
and ``P(|gap| > tolerance)``.

Verdicts per criterion (demographic parity: selection rate; equal opportunity: TPR;
equalized odds: TPR and FPR; predictive parity: PPV): "outside" when the gap
interval lies above the tolerance, "within tolerance" when it lies below, and
"undecided" otherwise, with the trials each group would need to decide at the
current rates. ``min_trials`` leaves groups with fewer trials out of the gap and the
verdicts (they stay in the groups table, flagged), because one group with a handful
of trials makes the gap interval reach 1.
"""

from __future__ import annotations

import argparse
import html
import json
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayeseval._core import metric_names
from bayeseval._core.adaptive import adaptive_interval
from bayeseval._core.audit_args import AUDIT_DESCRIPTION, AUDIT_HELP, MODELS, add_audit_arguments
from bayeseval._core.cli_io import read_table
from bayeseval._core.conflict import loo_conflict
from bayeseval._core.disparity import (
    bonferroni_level,
    gap_interval,
    katz_ratio,
    mover_difference,
    mover_mean,
    mover_ratio,
)
from bayeseval._results import Result
from bayeseval._validation import (
    check_level,
    check_method,
    check_positive_int,
    check_random_seed,
    iter_columns,
)
from bayeseval._warnings import EmptyStratumWarning
from bayeseval.counts import Counts, stratum_labels, tabulate
from bayeseval.intervals import proportion_ci
from bayeseval.models import fit_crossed, fit_hierarchical
from bayeseval.planning import sample_size

__all__ = ["Audit", "audit", "METRICS", "CRITERIA", "MODELS"]

#: audit metric names and the :data:`bayeseval.metrics.METRICS` definition each one uses
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
#: pooled models: crossed factors (several group columns), robust and plain Beta-binomial


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
    gap_bounds: Any  # callable level -> (lower, upper) per group, simultaneous inputs
    in_gap: np.ndarray  # measured groups with at least min_trials trials: the gap's groups


# --------------------------------------------------------------------------- inputs


def _check_metrics(metrics: Any) -> dict[str, str]:
    """Audit metric key -> the name as the user wrote it (shown in every table), in order."""
    if metrics is None:
        return {m: m for m in METRICS}
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


def _tabulate_all(data: Any, cols: list[str], y_true: str, y_pred: str, names: list[str], pos_label: Any):
    """Successes and trials per group for each base metric, and rows per group."""
    needed = [m for m in _BASE if m in names]
    if "balanced_accuracy" in names:
        needed += [m for m in ("tpr", "tnr") if m not in needed]
    rows = _count(data, cols, y_true, y_pred, "accuracy", pos_label).trials
    index = _full_index(rows.index, len(cols))
    rows = rows.reindex(index, fill_value=0)
    counts = {}
    for name in needed:
        c = _count(data, cols, y_true, y_pred, name, pos_label)
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


def _check_min_trials(min_trials: Any) -> int | None:
    if min_trials is None:
        return None
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


def _fit_proportion(s, n, cells, level, seed, model: str, min_trials: int | None) -> _MetricFit:
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    lo, hi = _wilson(s, n, level)
    return _MetricFit(
        s, n, rate, lo, hi, _adaptive(s, n, level), _pooled((s, n), cells, level, seed, model),
        _conflict(s, n), lambda lev: _clopper_pearson(s, n, lev), n >= max(min_trials or 1, 1),
    )


def _fit_balanced(tpr: _MetricFit, tnr: _MetricFit, level: float) -> _MetricFit:
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
    return _MetricFit(
        missing, missing, rate, lo, hi, (alo, ahi), pooled, tpr.conflict | tnr.conflict, gap_bounds,
        tpr.in_gap & tnr.in_gap,
    )


def _group_frame(name: str, labels: list[str], fit: _MetricFit) -> pd.DataFrame:
    measured = np.isfinite(fit.rate)
    is_prop = name != "balanced_accuracy"
    counts = pd.array(fit.successes, dtype="Int64"), pd.array(fit.trials, dtype="Int64")
    if not is_prop:
        counts = tuple(pd.array([pd.NA] * len(labels), dtype="Int64") for _ in range(2))
    return pd.DataFrame({
        "group": labels,
        "metric": name,
        "successes": counts[0],
        "trials": counts[1],
        "rate": fit.rate,
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
    })


# --------------------------------------------------------------------------- disparities


def _posterior_summary(draws: np.ndarray, level: float, tolerance: float | None, absolute: bool):
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: undefined ratios
        q = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        mean = np.nanmean(draws, axis=0)
        if tolerance is None:
            p = np.full(draws.shape[1:], np.nan)
        else:
            p = np.mean((np.abs(draws) if absolute else draws) > tolerance, axis=0)
    return mean, q[0], q[1], p


def _pairwise(name: str, fit: _MetricFit, labels: list[str], ref: int, level: float, tol) -> pd.DataFrame:
    others = np.array([g for g in range(len(labels)) if g != ref], dtype=int)
    e, lo, hi = fit.rate, fit.lower, fit.upper
    dlo, dhi = mover_difference(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
    if name == "balanced_accuracy":
        with np.errstate(divide="ignore", invalid="ignore"):
            r_est = e[others] / e[ref]
        rlo, rhi = mover_ratio(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
        methods = ("mover", "mover-r")
    else:
        r_est, rlo, rhi = katz_ratio(
            fit.successes[others], fit.trials[others], fit.successes[ref], fit.trials[ref], level
        )
        methods = ("newcombe", "katz-log")
    draws = fit.pooled.draws
    with np.errstate(divide="ignore", invalid="ignore"):
        d_post = _posterior_summary(draws[:, others] - draws[:, [ref]], level, tol, True)
        r_post = _posterior_summary(draws[:, others] / draws[:, [ref]], level, None, False)
    predicted = ~np.isfinite(e[others]) | ~np.isfinite(e[ref])
    parts = []
    for measure, est, low, upp, method, post in (
        ("difference", e[others] - e[ref], dlo, dhi, methods[0], d_post),
        ("ratio", r_est, rlo, rhi, methods[1], r_post),
    ):
        parts.append(pd.DataFrame({
            "metric": name, "measure": measure, "group": [labels[g] for g in others],
            "reference": labels[ref], "estimate": est, "lower": low, "upper": upp, "method": method,
            "posterior_mean": post[0], "posterior_lower": post[1], "posterior_upper": post[2],
            "p_exceeds": post[3], "predicted": predicted,
        }))
    return pd.concat(parts, ignore_index=True)


def _gap_groups(fit: _MetricFit) -> np.ndarray:
    """The groups the max-min gap is taken over: measured, with at least ``min_trials``."""
    return np.isfinite(fit.rate) & fit.in_gap


def _gap(fit: _MetricFit, level: float, n_metrics: int = 1) -> tuple[float, float, float]:
    used = _gap_groups(fit)
    k = int(np.count_nonzero(used))
    lo, hi = fit.gap_bounds(bonferroni_level(level, max(k, 1) * n_metrics))
    return gap_interval(np.where(used, fit.rate, np.nan), lo, hi)


def _gap_draws(fit: _MetricFit) -> np.ndarray:
    draws = fit.pooled.draws[:, _gap_groups(fit)]
    if draws.shape[1] < 2:
        return np.full(draws.shape[0], np.nan)
    return draws.max(axis=1) - draws.min(axis=1)


def _gap_row(name: str, fit: _MetricFit, level: float, tol: float | None,
             min_trials: int | None = None) -> pd.DataFrame:
    gap, lo, hi = _gap(fit, level)
    post = _posterior_summary(_gap_draws(fit)[:, None], level, tol, True)
    method = "bonferroni-mover" if name == "balanced_accuracy" else "bonferroni-clopper-pearson"
    measured = np.isfinite(fit.rate)
    k, k_all = int(np.count_nonzero(_gap_groups(fit))), int(np.count_nonzero(measured))
    groups = "all measured" if k == k_all else f"{k} of {k_all} measured (>= {min_trials} trials)"
    return pd.DataFrame({
        "metric": [name], "measure": "max-min gap", "group": groups, "reference": "",
        "estimate": gap, "lower": lo, "upper": hi, "method": method,
        "posterior_mean": post[0], "posterior_lower": post[1], "posterior_upper": post[2],
        "p_exceeds": post[3], "predicted": False,
    })


def _few(labels: list[str], trials: np.ndarray, groups: np.ndarray, limit: int = 4) -> str:
    def one(g: int) -> str:
        n = int(trials[g])
        return repr(labels[g]) if n < 0 else f"{labels[g]!r} ({n} trial{'' if n == 1 else 's'})"

    shown = [one(g) for g in groups[:limit]]
    more = len(groups) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _gap_notes(name: str, fit: _MetricFit, labels: list[str], level: float,
               min_trials: int | None) -> list[str]:
    """Plain-English notes on which groups set the max-min gap interval."""
    trials = fit.trials if name != "balanced_accuracy" else np.full(len(labels), -1)
    measured = np.isfinite(fit.rate)
    left_out = np.flatnonzero(measured & ~fit.in_gap)
    if len(left_out):
        return [f"{name}: {len(left_out)} group(s) with fewer than {min_trials} trials are "
                f"reported but left out of the max-min gap and the verdicts: "
                f"{_few(labels, trials, left_out)}."]
    used = _gap_groups(fit)
    if np.count_nonzero(used) < 2 or name == "balanced_accuracy":
        return []
    lo, hi = fit.gap_bounds(bonferroni_level(level, int(np.count_nonzero(used))))
    wide = np.flatnonzero(used & (hi - lo > 0.5))
    gap, g_lo, g_hi = _gap(fit, level)
    ends = {int(np.nanargmax(np.where(used, hi, np.nan))), int(np.nanargmin(np.where(used, lo, np.nan)))}
    setters = np.array(sorted(g for g in ends if g in set(wide)), dtype=int)
    if not len(setters):
        return []
    return [f"{name}: the max-min gap interval [{g_lo:.2f}, {g_hi:.2f}] is set by groups with few "
            f"trials, {_few(labels, trials, setters)}; min_trials= leaves such groups out of the "
            "gap and the verdicts (they stay in the groups table), and the pooled (posterior) "
            "gap borrows strength for them."]


# --------------------------------------------------------------------------- verdicts


def _decide(lower: float, upper: float, tol: float | None) -> str:
    if tol is None:
        return "no tolerance"
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return "undecided"
    if lower > tol:
        return "outside"
    if upper <= tol:
        return "within tolerance"
    return "undecided"


def _verdict_rows(criterion: str, fits: dict, level: float, tol: float | None) -> list[dict]:
    names = CRITERIA[criterion]
    gaps = {m: _gap(fits[m], level, len(names)) for m in names}
    decisions = [_decide(lo, hi, tol) for _, lo, hi in gaps.values()]
    if "outside" in decisions:
        verdict = "outside"
    elif decisions and all(d == "within tolerance" for d in decisions):
        verdict = "within tolerance"
    else:
        verdict = decisions[0] if tol is None else "undecided"
    joint = np.stack([_gap_draws(fits[m]) for m in names], axis=1)
    p_joint = float(np.mean(np.nanmax(joint, axis=1) > tol)) if tol is not None else np.nan
    return [
        {"criterion": criterion, "metric": m, "gap": g, "lower": lo, "upper": hi,
         "level": bonferroni_level(level, len(names)), "tolerance": tol, "metric_verdict": d,
         "p_exceeds": p_joint, "verdict": verdict}
        for (m, (g, lo, hi)), d in zip(gaps.items(), decisions, strict=True)
    ]


def _trials_needed(fit: _MetricFit, groups: np.ndarray, halfwidth: float, level: float) -> np.ndarray:
    out = np.zeros(fit.rate.shape, np.int64)
    for g in groups:
        rate = float(np.clip(fit.rate[g], 0.0, 1.0))
        need = sample_size(halfwidth=min(halfwidth, 0.49), rate=rate, level=level, method="clopper_pearson")
        out[g] = max(0, need - int(fit.trials[g]))
    return out


def _labels_rows(row: dict, fit: _MetricFit, labels: list[str], rows: np.ndarray) -> list[dict]:
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
    for g in measured:
        share = fit.trials[g] / rows[g] if rows[g] else np.nan
        out.append({
            "criterion": row["criterion"], "metric": row["metric"], "group": labels[g],
            "trials": int(fit.trials[g]), "extra_trials": int(extra[g]),
            "extra_rows": int(np.ceil(extra[g] / share)) if share and np.isfinite(share) else pd.NA,
        })
    return out


# --------------------------------------------------------------------------- result


@dataclass(repr=False)
class Audit(Result):
    """Result of :func:`audit`: per-group rates, disparities and verdicts.

    Parameters
    ----------
    groups : pandas.DataFrame
        One row per group x metric: ``successes``, ``trials``, ``rate``, the adaptive
        interval (``adaptive_lower``/``adaptive_upper``, the default reading), the
        Wilson interval, the pooled estimate and interval, and flags ``empty`` (no
        trials), ``zero_successes`` (0 of n), ``predicted`` (the pooled value is a
        prediction from the other groups, not a measurement) and ``conflict`` (the
        group's count conflicts with what the other groups predict: read its own
        interval, not the pooled one).
    disparities : pandas.DataFrame
        One row per metric x group x measure (``difference`` and ``ratio`` to the
        reference group, and one ``max-min gap`` row per metric): ``estimate``,
        ``lower``, ``upper`` (frequentist, ``method`` names it), the posterior mean
        and interval, ``p_exceeds`` (``P(|difference| > tolerance)``) and
        ``predicted`` (a group without data: only the posterior, a prediction, exists).
    verdicts : pandas.DataFrame
        One row per criterion x metric: the gap, its simultaneous interval (level
        Bonferroni-adjusted over the criterion's metrics), the metric's own verdict,
        the posterior ``P(max gap > tolerance)`` and the criterion's ``verdict``.
    labels_needed : pandas.DataFrame
        For undecided criteria, per group: the extra trials (and rows) that would let
        the gap interval decide if the rates stay as estimated.
    reference : str
        Label of the reference group.
    level : float
        Confidence level.
    tolerance : float or None
        Largest acceptable gap.
    model : str
        The pooled model behind the ``pooled_*`` columns and the posterior intervals:
        ``"crossed"`` (crossed-factor logit-normal, :func:`bayeseval.fit_crossed`),
        ``"robust"`` or ``"beta_binomial"`` (exchangeable, :func:`bayeseval.fit_hierarchical`).
    min_trials : int or None
        Groups with fewer trials are reported but left out of the max-min gap and the
        verdicts (``in_gap`` in :attr:`groups`); None keeps every measured group.
    notes : list of str
        Plain-English notes: groups left out of the gap, or tiny groups that set the gap
        interval.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 25, "p": [1, 0, 0, 0] * 25,
    ...                    "g": ["a"] * 60 + ["b"] * 40})
    >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr"], random_seed=0)
    >>> res.groups[["group", "rate"]].values.tolist()
    [['a', 0.5], ['b', 0.5]]
    """

    groups: pd.DataFrame
    disparities: pd.DataFrame
    verdicts: pd.DataFrame
    labels_needed: pd.DataFrame
    reference: str
    level: float
    tolerance: float | None
    model: str = "robust"
    min_trials: int | None = None
    notes: list[str] = field(default_factory=list)

    title = "Fairness audit"

    @property
    def table(self) -> pd.DataFrame:
        """The per-group table (:attr:`groups`)."""
        return self.groups

    @property
    def outside(self) -> bool:
        """Whether any criterion is decided outside the tolerance."""
        return bool((self.verdicts["verdict"] == "outside").any()) if len(self.verdicts) else False

    def _repr_html_(self) -> str:
        parts = [f"<p>{html.escape(self.settings)}</p>"]
        parts += [f"<p>Note: {html.escape(n)}</p>" for n in self.notes]
        parts.append(Result._repr_html_(self))
        for title, frame in (("Disparities", self.disparities), ("Verdicts", self.verdicts)):
            parts.append(_Titled(title, frame)._repr_html_())
        return "".join(parts)

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
        parts = ["<section class='audit'><h2>Fairness audit</h2>", f"<p>{html.escape(self.settings)}</p>"]
        if self.notes:
            parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in self.notes) + "</ul>")
        for title, frame in (("Verdicts", self.verdicts), ("Disparities", self.disparities),
                             ("Groups", self.groups), ("Labels needed to decide", self.labels_needed)):
            if len(frame):
                parts.append(_Titled(title, frame)._repr_html_())
        if plot:
            parts.append(f"<img alt='disparities' src='data:image/png;base64,{self._forest_png()}'/>")
        return "".join(parts) + "</section>"

    @property
    def settings(self) -> str:
        """One sentence: reference group, level, tolerance, pooled model and ``min_trials``."""
        tol = "none" if self.tolerance is None else f"{self.tolerance:g}"
        model = _MODEL_TEXT.get(self.model, self.model)
        gap = "" if self.min_trials is None else f"; gap over groups with at least {self.min_trials} trials"
        return (f"Reference group: {self.reference}; level {self.level:g}; tolerance {tol}; "
                f"pooled model: {model}{gap}.")

    def _forest_png(self) -> str:
        import base64
        import io

        import matplotlib.pyplot as plt

        from bayeseval.plots import disparities

        ax = disparities(self)
        buf = io.BytesIO()
        ax.figure.savefig(buf, format="png", dpi=90, bbox_inches="tight")
        plt.close(ax.figure)
        return base64.b64encode(buf.getvalue()).decode("ascii")

    def to_dict(self) -> dict:
        """The audit as plain JSON-ready data.

        Returns
        -------
        dict
            ``reference``, ``level``, ``tolerance`` and the four tables as lists of records.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["a", "b"] * 20})
        >>> sorted(audit(df, y_true="y", y_pred="p", groups="g", metrics="fpr",
        ...              random_seed=0).to_dict())
        ['disparities', 'groups', 'labels_needed', 'level', 'min_trials', 'model', 'notes', 'reference', 'tolerance', 'verdicts']
        """
        def records(frame: pd.DataFrame) -> list:
            return json.loads(frame.to_json(orient="records"))

        return {
            "reference": self.reference, "level": self.level, "tolerance": self.tolerance,
            "model": self.model, "min_trials": self.min_trials, "notes": list(self.notes),
            "groups": records(self.groups), "disparities": records(self.disparities),
            "verdicts": records(self.verdicts), "labels_needed": records(self.labels_needed),
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


def _reference(reference: Any, labels: list[str], rows: np.ndarray) -> int:
    if reference is None:
        return int(np.argmax(rows))
    key = " | ".join(str(v) for v in reference) if isinstance(reference, tuple) else str(reference)
    if key not in labels:
        raise ValueError(f"reference {reference!r} is not one of the groups {labels[:10]}")
    return labels.index(key)


def _fit_all(names, counts, cells, level, seed, model, min_trials) -> dict:
    rng = np.random.default_rng(seed)
    fits = {}
    for name in counts:
        s, n = counts[name]
        fits[name] = _fit_proportion(s, n, cells, level, rng.integers(2**32), model, min_trials)
    if "balanced_accuracy" in names:
        fits["balanced_accuracy"] = _fit_balanced(fits["tpr"], fits["tnr"], level)
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
    min_trials: int | None = None,
) -> Audit:
    """Audit a classifier's rates across groups: intervals, disparities and verdicts.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or Spark DataFrame
        One row per example (anything :func:`bayeseval.tabulate` accepts).
    y_true, y_pred : str
        Columns holding the true and predicted labels (binary).
    groups : str or list of str
        Group column(s). With several columns the groups are their crossed cells
        (labels joined by ``" | "``); cells never observed are listed as empty, with a
        pooled prediction.
    metrics : str or list of str, optional
        Any of ``selection_rate``, ``tpr`` (``recall``), ``fnr``, ``fpr``, ``tnr``
        (``specificity``), ``ppv`` (``precision``), ``npv``, ``error_rate``,
        ``accuracy``, ``balanced_accuracy`` or any alias of
        :data:`bayeseval._core.metric_names.NAMES`; default all. Every table and note
        names a metric as it is written here (``recall`` stays ``recall``; the default
        names are the short ones above). Balanced accuracy is the mean
        of TPR and TNR; its interval is the MOVER combination (Zou and Donner 2008) of
        the two rates' intervals, which treats them as independent proportions (they
        come from disjoint rows).
    reference : str or tuple, optional
        Reference group of differences and ratios (default: the group with most rows).
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
    min_trials : int, optional
        Groups with fewer trials (for a metric) are reported in :attr:`Audit.groups`
        (``in_gap`` False) but left out of the max-min gap, its posterior and the
        verdicts, and a note names them. The gap is then the gap among the groups with
        at least ``min_trials`` trials. Default None: every measured group.

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
    The max-min gap interval projects Clopper-Pearson intervals at level
    ``1 - (1 - level) / G`` (the ``G`` groups with trials): its coverage is at least
    ``level`` whatever the true rates, so a decided verdict is wrong with probability
    at most ``1 - level`` (see the module docstring). One group with a handful of
    trials makes that interval reach 1: on COMPAS race x sex x age the TPR gap interval
    is [0.25, 1.00] over all 33 measured cells, and [0.27, 0.83] over the 14 cells with
    at least 30 positives (``min_trials=30``); the crossed model's posterior gap is
    [0.62, 0.88] and [0.46, 0.67] (``benchmarks/validate_fairness.py``).

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
    written = _check_metrics(metrics)
    names = list(written)
    tol = _check_tolerance(tolerance)
    level = check_level(level)
    random_seed = check_random_seed(random_seed)
    cols = iter_columns(groups, "groups")
    if not cols:
        raise ValueError(f"groups must name at least one column, got {groups!r}")
    model = _check_model(model, len(cols))
    min_trials = _check_min_trials(min_trials)
    cells, rows, counts = _tabulate_all(data, cols, y_true, y_pred, names, pos_label)
    labels = stratum_labels(cells)
    ref = _reference(reference, labels, rows)
    fits = _fit_all(names, counts, cells, level, random_seed, model, min_trials)
    verdicts, labels_needed = _verdict_tables(names, fits, labels, rows, level, tol)
    return _as_written(written, Audit(
        groups=pd.concat([_group_frame(m, labels, fits[m]) for m in names], ignore_index=True),
        disparities=_disparity_table(names, fits, labels, ref, level, tol, min_trials),
        verdicts=verdicts,
        labels_needed=labels_needed,
        reference=labels[ref],
        level=level,
        tolerance=tol,
        model=model,
        min_trials=min_trials,
        notes=[note for m in names for note in _gap_notes(m, fits[m], labels, level, min_trials)],
    ))


def _as_written(written: dict[str, str], result: Audit) -> Audit:
    """Every table and note names each metric as the user wrote it (``recall`` stays ``recall``)."""
    if all(key == name for key, name in written.items()):
        return result
    for frame in (result.groups, result.disparities, result.verdicts, result.labels_needed):
        frame["metric"] = frame["metric"].map(lambda m: written.get(m, m))
    for i, note in enumerate(result.notes):
        key, sep, rest = note.partition(": ")
        result.notes[i] = written.get(key, key) + sep + rest
    return result


def _disparity_table(names, fits, labels, ref, level, tol, min_trials) -> pd.DataFrame:
    parts = []
    for m in names:
        if len(labels) > 1:
            parts.append(_pairwise(m, fits[m], labels, ref, level, tol))
        parts.append(_gap_row(m, fits[m], level, tol, min_trials))
    return pd.concat(parts, ignore_index=True)


def _verdict_tables(names, fits, labels, rows, level, tol) -> tuple[pd.DataFrame, pd.DataFrame]:
    verdict_rows, label_rows = [], []
    for criterion, needed in CRITERIA.items():
        if all(m in names for m in needed):
            new = _verdict_rows(criterion, fits, level, tol)
            verdict_rows += new
            for row in new:
                label_rows += _labels_rows(row, fits[row["metric"]], labels, rows)
    return (pd.DataFrame(verdict_rows, columns=_VERDICT_COLUMNS),
            pd.DataFrame(label_rows, columns=_LABEL_COLUMNS))


_VERDICT_COLUMNS = ["criterion", "metric", "gap", "lower", "upper", "level", "tolerance",
                    "metric_verdict", "p_exceeds", "verdict"]
_LABEL_COLUMNS = ["criterion", "metric", "group", "trials", "extra_trials", "extra_rows"]


# --------------------------------------------------------------------------- command line


def add_audit_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the ``audit`` subcommand on an argparse subparsers object.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``bayeseval`` command's subparsers.

    Returns
    -------
    argparse.ArgumentParser
        The ``audit`` parser (its ``func`` default is :func:`run_audit`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> p = add_audit_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["audit", "x.csv", "--y-true", "y", "--y-pred", "p",
    ...                           "--groups", "race,sex", "--tolerance", "0.1"])
    >>> args.groups, args.tolerance
    ('race,sex', 0.1)
    """
    p = sub.add_parser("audit", help=AUDIT_HELP, description=AUDIT_DESCRIPTION)
    add_audit_arguments(p)
    p.set_defaults(func=run_audit)
    return p


def _read(path: str) -> pd.DataFrame:
    return read_table(path, name="data", require_rows=True)


def _parse_pos_label(value: str | None, column: pd.Series) -> Any:
    if value is None:
        return None
    if pd.api.types.is_bool_dtype(column.dtype):
        return value.strip().lower() in ("1", "true", "yes")
    if pd.api.types.is_numeric_dtype(column.dtype):
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--pos-label {value!r} is not a number but {column.name!r} holds numbers") from None
        return int(number) if pd.api.types.is_integer_dtype(column.dtype) else number
    return value


def run_audit(args: argparse.Namespace) -> int:
    """Run ``bayeseval audit`` from parsed arguments and return the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        Arguments parsed by the parser of :func:`add_audit_parser`.

    Returns
    -------
    int
        1 when a criterion is decided outside the tolerance, else 0 (bad input raises
        ``ValueError``/``TypeError``, which the command line turns into exit code 2).

    Examples
    --------
    >>> import argparse, tempfile, os, pandas as pd
    >>> path = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> pd.DataFrame({"y": [1, 0] * 40, "p": [1, 0] * 40, "g": ["a"] * 40 + ["b"] * 40}).to_csv(path)
    >>> args = argparse.Namespace(data=path, y_true="y", y_pred="p", groups="g", metrics="tpr",
    ...                           reference=None, tolerance=0.5, level=0.95, pos_label=None,
    ...                           seed=0, json=True)
    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     code = run_audit(args)
    >>> code
    0
    """
    data = _read(args.data)
    groups = [c.strip() for c in str(args.groups).split(",") if c.strip()]
    for option, col in [("--y-true", args.y_true), ("--y-pred", args.y_pred)] + [("--groups", g) for g in groups]:
        if col not in data.columns:
            raise ValueError(f"{option} column {col!r} is not in {args.data!r} (columns: {list(data.columns)[:10]})")
    metrics = [m.strip() for m in args.metrics.split(",")] if args.metrics else None
    result = audit(
        data, y_true=args.y_true, y_pred=args.y_pred, groups=groups, metrics=metrics,
        reference=args.reference, tolerance=args.tolerance, level=args.level,
        pos_label=_parse_pos_label(args.pos_label, data[args.y_true]), random_seed=args.seed,
        model=getattr(args, "model", None), min_trials=getattr(args, "min_trials", None),
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.settings)
        for note in result.notes:
            print(f"note: {note}")
        with pd.option_context("display.width", 160, "display.max_columns", 20):
            print(result.groups.to_string(index=False))
            print("\nDisparities\n" + result.disparities.to_string(index=False))
            if len(result.verdicts):
                print("\nVerdicts\n" + result.verdicts.to_string(index=False))
    return 1 if result.outside else 0
