"""Verdicts of a fairness audit per criterion (outside, within tolerance, undecided, not
measured) and the labels each group needs before an undecided gap decides.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeseval._kernels.disparity import bonferroni_level
from bayeseval.fairness.disparities import (
    few_groups,
    gap_draws,
    gap_groups,
    gap_method,
    left_out,
    max_min_gap,
)
from bayeseval.fairness.groups import MetricFit
from bayeseval.fairness.inputs import (
    CRITERIA,
    LABEL_COLUMNS,
    VERDICT_COLUMNS,
    Layout,
    factor_columns,
)
from bayeseval.fairness.options import MIN_TRIALS
from bayeseval.plan.sizes import sample_size

__all__: list[str] = []

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


def _ends(fit: MetricFit) -> tuple[int, int]:
    """The groups with the highest and the lowest rate among the gap's groups (-1: none)."""
    used = np.flatnonzero(gap_groups(fit))
    if len(used) < 2:
        return -1, -1
    return int(used[np.argmax(fit.rate[used])]), int(used[np.argmin(fit.rate[used])])


def _small_note(fit: MetricFit, labels: list[str], ends: tuple[int, int]) -> str:
    """Says so when a group with fewer than :data:`MIN_TRIALS` trials sets the gap."""
    small = np.array([g for g in dict.fromkeys(ends) if g >= 0 and fit.size[g] < MIN_TRIALS], dtype=int)
    if not len(small):
        return ""
    return (
        f"gap set by group(s) with fewer than {MIN_TRIALS} trials: "
        f"{few_groups(labels, fit.size, small)}; read it as noisy"
    )


def _note(fit: MetricFit, labels: list[str], ends: tuple[int, int], min_trials: int) -> str:
    """The verdict's note: every group outside the gap by name (``not measured`` where it has
    no trials, ``left out`` where it has fewer than ``min_trials``), and a gap set by a small group."""
    empty, small = left_out(fit)
    parts = []
    if len(empty):
        parts.append(f"{NOT_MEASURED} (no trials): {few_groups(labels, fit.size, empty, counts=False)}")
    if len(small):
        parts.append(f"left out (fewer than {min_trials} trials): {few_groups(labels, fit.size, small)}")
    small_note = _small_note(fit, labels, ends)
    return "; ".join([*parts, small_note] if small_note else parts)


#: a criterion's metric and the audited metric with the same max-min gap (one minus its rate)
COMPLEMENTS = {"tpr": "fnr", "fpr": "tnr"}


def criterion_metrics(needed: tuple[str, ...], names: list[str]) -> tuple[str, ...] | None:
    """The audited metrics that measure a criterion's (its own, or the complement), or None."""
    out = []
    for m in needed:
        if m in names:
            out.append(m)
        elif COMPLEMENTS.get(m) in names:
            out.append(COMPLEMENTS[m])
        else:
            return None
    return tuple(out)


def verdict_criteria(names: list[str], explicit: bool) -> dict[str, tuple[str, ...]]:
    """Criterion -> the audited metrics whose gaps it bounds.

    The named criteria (:data:`~bayeseval.fairness.inputs.CRITERIA`) whose metrics, or their
    complements (FNR for TPR, TNR for FPR: the same gap), are audited; with ``metrics``
    given by the user (``explicit``), every other audited metric gets its own criterion
    ``"<metric>_parity"``, so that a tolerance is never left without a verdict to bound.

    Examples
    --------
    >>> verdict_criteria(["fpr", "fnr"], explicit=True)
    {'equal_opportunity': ('fnr',), 'equalized_odds': ('fnr', 'fpr')}
    >>> verdict_criteria(["tpr", "error_rate"], explicit=True)
    {'equal_opportunity': ('tpr',), 'error_rate_parity': ('error_rate',)}
    """
    out: dict[str, tuple[str, ...]] = {}
    for criterion, needed in CRITERIA.items():
        metrics = criterion_metrics(needed, names)
        if metrics is not None:
            out[criterion] = metrics
    same_gap = COMPLEMENTS | {v: k for k, v in COMPLEMENTS.items()}
    covered = {m for ms in out.values() for m in ms}
    covered |= {same_gap[m] for m in covered if m in same_gap}
    if explicit:
        out |= {f"{m}_parity": (m,) for m in names if m not in covered}
    return out


def _verdict_rows(
    criterion: str,
    names: tuple[str, ...],
    fits: dict,
    layout: Layout,
    level: float,
    tol: float | None,
    method: str,
    min_trials: int = MIN_TRIALS,
) -> list[dict]:
    lev = bonferroni_level(level, len(names))
    gaps = {m: max_min_gap(fits[m], lev, method) for m in names}
    decisions = [_decide(g, lo, hi, tol) for g, lo, hi in gaps.values()]
    verdict = _combine(decisions, tol)
    joint = np.stack([gap_draws(fits[m]) for m in names], axis=1)
    measured = NOT_MEASURED not in decisions
    drawn = bool(np.isfinite(joint).all())  # no posterior draws for groups of units
    p_joint = float(np.mean(np.max(joint, axis=1) > tol)) if tol is not None and measured and drawn else np.nan
    rows = []
    for (m, (g, lo, hi)), d in zip(gaps.items(), decisions, strict=True):
        high, low = _ends(fits[m])
        rows.append(
            {
                "criterion": criterion,
                "metric": m,
                "gap": g,
                "lower": lo,
                "upper": hi,
                "level": lev,
                "method": gap_method(fits[m], method),
                "tolerance": tol,
                "metric_verdict": d,
                "p_exceeds": p_joint,
                "verdict": verdict,
                **{k: v[0] for k, v in factor_columns(layout, [high], "high_").items()},
                "high": layout.labels[high] if high >= 0 else "",
                **{k: v[0] for k, v in factor_columns(layout, [low], "low_").items()},
                "low": layout.labels[low] if low >= 0 else "",
                "note": _note(fits[m], layout.labels, (high, low), min_trials),
            }
        )
    return rows


def _trials_needed(fit: MetricFit, groups: np.ndarray, halfwidth: float, level: float) -> np.ndarray:
    """Extra trials per group for a Clopper-Pearson half-width at the current rate; with a proxy,
    the need in effective labels divided by the group's effective labels per label."""
    out = np.zeros(fit.rate.shape, np.int64)
    if fit.units is not None:
        return _unit_trials_needed(fit, groups, halfwidth, level)
    for g in groups:
        rate = float(np.clip(fit.rate[g], 0.0, 1.0))
        need = sample_size(halfwidth=min(halfwidth, 0.49), rate=rate, level=level, method="clopper_pearson")
        extra = max(0, need - int(fit.trials[g]))
        if fit.proxy is not None:
            per_label = max(fit.trials[g] / max(int(fit.size[g]), 1), 1.0)
            extra = int(np.ceil(extra / per_label))
        out[g] = extra
    return out


def _unit_trials_needed(fit: MetricFit, groups: np.ndarray, halfwidth: float, level: float) -> np.ndarray:
    """Extra trials per group of units: the unit interval's half-width scales as one over the square
    root of the units, so ``u`` units at half-width ``h`` need about ``u (h / halfwidth)^2`` units in
    all, each of the group's mean trials per unit (a planning figure at the group's own spread)."""
    out = np.zeros(fit.rate.shape, np.int64)
    lo, hi = fit.gap_bounds(level)
    for g in groups:
        u, h = float(fit.units.n_units[g]), float(hi[g] - lo[g]) / 2
        if u <= 0 or not np.isfinite(h) or h <= halfwidth:
            continue
        extra_units = np.ceil(u * (h / halfwidth) ** 2 - u)
        out[g] = int(np.ceil(extra_units * fit.size[g] / u))
    return out


def _labels_rows(row: dict, fit: MetricFit, layout: Layout, rows: np.ndarray) -> list[dict]:
    """Extra trials (and rows) per group for the gap interval to decide, at the current rates."""
    tol, gap = row["tolerance"], row["gap"]
    if tol is None or row["metric_verdict"] != "undecided" or not np.isfinite(gap) or gap == tol:
        return []
    measured = np.flatnonzero(gap_groups(fit))
    if gap > tol:  # the lower end must rise above tol: the two extreme groups decide it
        rate = fit.rate[measured]
        measured = np.unique(measured[[int(np.argmax(rate)), int(np.argmin(rate))]])
    k = len(np.flatnonzero(gap_groups(fit)))
    level = bonferroni_level(row["level"], k)
    extra = _trials_needed(fit, measured, abs(tol - gap) / 2, level)
    out = []
    trials = fit.trials if fit.proxy is None else fit.proxy["pool_trials"].to_numpy()
    for g in measured:
        share = trials[g] / rows[g] if rows[g] else np.nan
        out.append(
            {
                "criterion": row["criterion"],
                "metric": row["metric"],
                **{k: v[0] for k, v in factor_columns(layout, [g]).items()},
                "group": layout.labels[g],
                "trials": int(fit.size[g] if fit.proxy is not None else fit.trials[g]),
                "extra_trials": int(extra[g]),
                "extra_rows": int(np.ceil(extra[g] / share)) if share and np.isfinite(share) else pd.NA,
            }
        )
    return out


def verdict_tables(
    names, fits, layout, rows, level, tol, method, explicit=False, min_trials=MIN_TRIALS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    verdict_rows, label_rows = [], []
    for criterion, metrics in verdict_criteria(names, explicit).items():
        new = _verdict_rows(criterion, metrics, fits, layout, level, tol, method, min_trials)
        verdict_rows += new
        for row in new:
            label_rows += _labels_rows(row, fits[row["metric"]], layout, rows)
    factors = list(factor_columns(layout, []))
    verdict_columns = (
        VERDICT_COLUMNS[:-3]
        + [f"high_{c}" for c in layout.columns]
        + ["high"]
        + [f"low_{c}" for c in layout.columns]
        + ["low", "note"]
    )
    label_columns = LABEL_COLUMNS[:2] + factors + LABEL_COLUMNS[2:]
    return (pd.DataFrame(verdict_rows, columns=verdict_columns), pd.DataFrame(label_rows, columns=label_columns))
