"""Disparities of a fairness audit: each group's difference and ratio to the reference group,
the max-min gap across groups with its simultaneous interval, and the notes about them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bayeseval._kernels.disparity import (
    bonferroni_level,
    gap_interval,
    katz_ratio,
    max_t_gap,
    mover_difference,
    mover_ratio,
)
from bayeseval.fairness.groups import N_RESAMPLES, MetricFit
from bayeseval.fairness.inputs import Layout, factor_columns

__all__: list[str] = []


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


#: the method of the differences and ratios of a metric whose rows come in units
UNIT_METHOD = "units_bonferroni"


def unit_pairwise(fit: MetricFit, others: np.ndarray, ref: int, level: float) -> tuple[np.ndarray, ...]:
    """Differences and ratios to the reference from the groups' unit intervals, simultaneous at ``level``.

    Each measured group's unit interval is taken at the Bonferroni level ``1 - (1 - level) / G``
    (``G`` the measured groups), so that with probability at least ``level`` every group's rate lies
    in its interval, whatever the dependence between the intervals; on that event
    ``theta_g - theta_ref`` lies in ``[l_g - u_ref, u_g - l_ref]`` and, the rates being nonnegative,
    ``theta_g / theta_ref`` in ``[l_g / u_ref, u_g / l_ref]`` (infinite when ``l_ref`` is 0). Every
    difference and ratio therefore covers at least ``level`` of the time, jointly, for any valid
    per-group intervals: the per-group intervals are finite-sample valid under any dependence
    within a unit, and no independence between groups is used.

    Returns
    -------
    difference_lower, difference_upper, ratio_estimate, ratio_lower, ratio_upper : numpy.ndarray
    """
    measured = int(np.count_nonzero(np.isfinite(fit.rate)))
    lo, hi = fit.gap_bounds(bonferroni_level(level, max(measured, 2)))
    e = fit.rate
    with np.errstate(divide="ignore", invalid="ignore"):
        r_est = e[others] / e[ref]
        rlo = np.where(hi[ref] > 0, lo[others] / hi[ref], 0.0)
        rhi = np.where(lo[ref] > 0, hi[others] / lo[ref], np.inf)
    undefined = ~np.isfinite(lo[others]) | ~np.isfinite(lo[ref])
    rlo, rhi = np.where(undefined, np.nan, rlo), np.where(undefined, np.nan, rhi)
    return lo[others] - hi[ref], hi[others] - lo[ref], r_est, rlo, rhi


def _pairwise(name: str, fit: MetricFit, layout: Layout, ref: int, level: float, tol) -> pd.DataFrame:
    labels = layout.labels
    others = np.array([g for g in range(len(labels)) if g != ref], dtype=int)
    e, lo, hi = fit.rate, fit.lower, fit.upper
    if fit.units is not None:
        dlo, dhi, r_est, rlo, rhi = unit_pairwise(fit, others, ref, level)
        methods = (UNIT_METHOD, UNIT_METHOD)
    elif name == "balanced_accuracy" or fit.proxy is not None:
        dlo, dhi = mover_difference(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
        with np.errstate(divide="ignore", invalid="ignore"):
            r_est = e[others] / e[ref]
        rlo, rhi = mover_ratio(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
        methods = ("mover", "mover_r")
    else:
        dlo, dhi = mover_difference(e[others], lo[others], hi[others], e[ref], lo[ref], hi[ref])
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
        parts.append(
            pd.DataFrame(
                {
                    "metric": name,
                    "measure": measure,
                    **factor_columns(layout, others),
                    "group": [labels[g] for g in others],
                    **factor_columns(layout, np.full(len(others), ref), "reference_"),
                    "reference": labels[ref],
                    "estimate": np.where(predicted, np.nan, est),
                    "lower": np.where(predicted, np.nan, low),
                    "upper": np.where(predicted, np.nan, upp),
                    "method": method,
                    "posterior_mean": post[0],
                    "posterior_lower": post[1],
                    "posterior_upper": post[2],
                    "p_exceeds": p_exceeds if measure == "difference" else np.nan,
                    "predicted": predicted,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def gap_groups(fit: MetricFit) -> np.ndarray:
    """The groups the max-min gap is taken over: measured, with at least ``min_trials``."""
    return np.isfinite(fit.rate) & fit.in_gap


def gap_method(fit: MetricFit, method: str) -> str:
    """The gap interval's method: a proxy's groups (and groups of units) have no binomial counts
    to resample, so their gap is the projection of Bonferroni-adjusted proxy (unit) intervals: each
    group's interval at ``1 - (1 - level) / G`` over the gap's ``G`` groups (not over the pairs)."""
    return "bonferroni" if fit.proxy is not None or fit.units is not None else method


def max_min_gap(fit: MetricFit, level: float, method: str) -> tuple[float, float, float]:
    """Max-min gap over the gap's groups and its interval at ``level`` (NaN: not measured)."""
    method = gap_method(fit, method)
    key = (method, level)
    if key not in fit.cache:
        used = gap_groups(fit)
        if method == "bonferroni":
            lo, hi = fit.gap_bounds(bonferroni_level(level, max(int(np.count_nonzero(used)), 1)))
            fit.cache[key] = gap_interval(np.where(used, fit.rate, np.nan), lo, hi)
        else:
            s, n, w = fit.components
            fit.cache[key] = max_t_gap(
                s[used], n[used], level, weights=w, n_resamples=N_RESAMPLES, rng=np.random.default_rng(fit.seed)
            )
    return fit.cache[key]


def gap_draws(fit: MetricFit) -> np.ndarray:
    draws = fit.pooled.draws[:, gap_groups(fit)]
    if draws.shape[1] < 2:
        return np.full(draws.shape[0], np.nan)
    return draws.max(axis=1) - draws.min(axis=1)


def _gap_row(
    name: str, fit: MetricFit, layout: Layout, level: float, tol: float | None, method: str, min_trials: int
) -> pd.DataFrame:
    gap, lo, hi = max_min_gap(fit, level, method)
    post = _posterior_summary(gap_draws(fit)[:, None], level, tol, True)
    measured = np.isfinite(fit.rate)
    k, k_all = int(np.count_nonzero(gap_groups(fit))), int(np.count_nonzero(measured))
    groups = "all measured" if k == k_all else f"{k} of {k_all} measured (>= {min_trials} trials)"
    none = np.array([-1])
    return pd.DataFrame(
        {
            "metric": [name],
            "measure": "max-min gap",
            **factor_columns(layout, none),
            "group": groups,
            **factor_columns(layout, none, "reference_"),
            "reference": "",
            "estimate": gap,
            "lower": lo,
            "upper": hi,
            "method": gap_method(fit, method),
            "posterior_mean": post[0],
            "posterior_lower": post[1],
            "posterior_upper": post[2],
            "p_exceeds": post[3],
            "predicted": False,
        }
    )


def few_groups(
    labels: list[str], trials: np.ndarray, groups: np.ndarray, limit: int | None = None, counts: bool = True
) -> str:
    """The groups at ``groups`` by label (with their trials when ``counts``), every one of them
    unless ``limit`` is given."""

    def one(g: int) -> str:
        n = int(trials[g])
        return f"{labels[g]!r} ({n} trial{'' if n == 1 else 's'})" if counts else repr(labels[g])

    shown = [one(g) for g in (groups if limit is None else groups[:limit])]
    more = 0 if limit is None else len(groups) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def left_out(fit: MetricFit) -> tuple[np.ndarray, np.ndarray]:
    """The groups outside the max-min gap: those with no trials (not measured) and those
    measured with fewer than ``min_trials`` trials."""
    measured = np.isfinite(fit.rate)
    return np.flatnonzero(~measured), np.flatnonzero(measured & ~fit.in_gap)


def gap_notes(name: str, fit: MetricFit, labels: list[str], min_trials: int, spell: dict) -> list[str]:
    """Plain-English notes naming every group outside the gap (no trials: not measured; fewer
    than ``min_trials``: left out), or a gap measured over fewer than two groups."""
    empty, small = left_out(fit)
    notes = []
    if len(empty):
        notes.append(
            f"{name}: {len(empty)} group(s) with no trials for {name} are not measured "
            f"(no rate, left out of the max-min gap and the verdicts): "
            f"{few_groups(labels, fit.size, empty, counts=False)}."
        )
    if len(small):
        notes.append(
            f"{name}: {len(small)} group(s) with fewer than {min_trials} trials are "
            f"reported but left out of the max-min gap and the verdicts "
            f"({spell['min_trials'].format(min_trials)}): {few_groups(labels, fit.size, small)}."
        )
    if np.count_nonzero(gap_groups(fit)) < 2:
        notes.append(
            f"{name}: the max-min gap is not measured: fewer than two groups have at "
            f"least {min_trials} trials ({spell['min_trials'].format(min_trials)})."
        )
    return notes


def reference_notes(name: str, fit: MetricFit, labels: list[str], ref: int, given: bool, spell: dict) -> list[str]:
    if np.isfinite(fit.rate[ref]):
        return []
    if given:
        return [
            f"{name}: the reference group {labels[ref]!r} has no trials for {name}; its "
            "differences and ratios are not measured (NaN); choose another with "
            f"{spell['reference']}."
        ]
    return [f"{name}: no group has trials for {name}; nothing is measured."]


def disparity_table(names, fits, layout, refs, level, tol, method, min_trials) -> pd.DataFrame:
    parts = []
    for m in names:
        if len(layout.labels) > 1:
            parts.append(_pairwise(m, fits[m], layout, refs[m], level, tol))
        parts.append(_gap_row(m, fits[m], layout, level, tol, method, min_trials))
    return pd.concat(parts, ignore_index=True)
