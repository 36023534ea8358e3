"""What a campaign can still reach: labels each stratum needs, whether its target is feasible, and
which strata the rows left can decide.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._api.validation import check_level, check_probability
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.campaign.loop.rule_state import RuleState

__all__ = [
    "forecast_labels",
    "forecast_decision",
    "forecast_table",
    "forecast_notes",
    "forecast_total",
    "forecast_text",
    "decision_reach",
    "target_feasibility",
    "stratum_feasibility",
    "full_size_state",
    "feasibility_table",
]

#: what a forecast that cannot be computed says, before its reason
CANNOT = "cannot forecast yet"
NO_TRIALS = "no labelled trials in this stratum yet"


# forecast
# ---------------------------------------------------------------------------------------
def forecast_labels(state: RuleState) -> pd.Series:
    """Labels still needed per stratum so the expected half-width meets the target.

    Goal ``"each"``: the smallest ``m`` with ``halfwidth * sqrt(n_eff / (n_eff + P(trial) m))
    <= target`` (pending labels count as already requested). Goal ``"overall"``: the
    allocation minimising total labels subject to the expected variance of the weighted rate
    reaching the target, by water-filling. Capped at the rows available (a stratum that cannot
    reach the target gets its remaining rows). The numbers are the goal's
    (:meth:`Goal.labels_needed <bayeseval.campaign.goals.goal.Goal.labels_needed>`), so the
    decision goals give :func:`forecast_decision`.

    Parameters
    ----------
    state : RuleState
        The campaign's current state (goal, target and counts).

    Returns
    -------
    pandas.Series
        Labels still needed per stratum (``Int64``, indexed by stratum, named ``"forecast"``):
        ``<NA>`` where the forecast cannot be made yet, e.g. a stratum without a labelled trial
        (:func:`forecast_notes` says why; never a NaN cast to an integer).

    Examples
    --------
    >>> st = RuleState.from_counts([10], [100], available=[10_000], model="independent")
    >>> int(forecast_labels(st).iloc[0]) > 0
    True
    """
    return _finish(state, state.goal.labels_needed(state))


def _wilson_halfwidth(rate: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        hw = z / (1.0 + z**2 / n) * np.sqrt(rate * (1.0 - rate) / n + z**2 / (4.0 * n**2))
    return np.where(n > 0, hw, 0.5)


def target_feasibility(
    available: Any,
    p_trial: Any,
    target_halfwidth: float,
    *,
    trials: Any = 0,
    rate: Any = 0.5,
    level: float = 0.95,
    strata: Any = None,
    warn: bool = False,
) -> pd.DataFrame:
    """Whether each stratum's half-width target can be met from the rows of the pool.

    A stratum can contribute at most ``trials + available * p_trial`` trials (its trials so
    far plus the expected trials among its rows not yet labelled: for recall, the rows
    whose true label is positive). The achievable half-width is the Wilson score half-width
    at that number of trials and the assumed ``rate`` (0.5, the worst case, unless a
    prior guess is given); pooling can narrow a stratum's interval below it only by
    borrowing, which the stopping rule does not let stand in for a stratum's own data.

    Parameters
    ----------
    available : array_like of int
        Rows per stratum that can still be labelled.
    p_trial : array_like of float
        Probability that a labelled row is a trial of the metric (1 for error rate and
        accuracy; the share of positives for recall).
    target_halfwidth : float
        The half-width goal, in (0, 0.5).
    trials : array_like of int
        Trials already labelled per stratum.
    rate : array_like of float
        Assumed rate per stratum (default 0.5, which gives the widest interval).
    level : float
        Level of the intervals.
    strata : array_like, optional
        Stratum labels (the index of the table).
    warn : bool
        Emit a :class:`~bayeseval._api.warnings.PrecisionLimitedWarning` listing the strata
        that cannot reach the target and their achievable half-widths.
    proxy : bool, default False
        The half-widths are a proxy campaign's worst case (a proxy that tells nothing): the
        warning then says the target may still be met where the proxy separates errors.

    Returns
    -------
    pandas.DataFrame
        Per stratum: ``max_trials``, ``achievable_halfwidth`` and ``feasible``
        (``achievable_halfwidth <= target_halfwidth``).

    Examples
    --------
    A recall campaign: 46 positives in the smallest stratum cannot give a 0.05 half-width.

    >>> t = target_feasibility([460, 7270], [0.1, 0.1], 0.05, strata=["small", "large"])
    >>> t["feasible"].tolist()
    [False, True]
    >>> round(float(t.loc["small", "achievable_halfwidth"]), 3)
    0.139
    """
    from scipy.stats import norm

    level = check_level(level, "level")
    target = check_probability(target_halfwidth, "target_halfwidth", open_interval=True)
    avail = np.asarray(available, dtype=float).ravel()
    k = avail.size
    p = np.broadcast_to(np.asarray(p_trial, dtype=float), (k,))
    if np.any((p < 0) | (p > 1)) or np.any(avail < 0):
        raise ValueError(
            f"p_trial must be in [0, 1] and available >= 0, got p_trial={p.tolist()[:10]} "
            f"and available={avail.tolist()[:10]}"
        )
    done = np.broadcast_to(np.asarray(trials, dtype=float), (k,))
    r = np.broadcast_to(np.asarray(rate, dtype=float), (k,))
    max_trials = done + avail * p
    z = float(norm.ppf(0.5 + level / 2))
    hw = _wilson_halfwidth(r, max_trials, z)
    return feasibility_table(max_trials, hw, hw <= target, strata, target, warn)


@fill_doc()
def feasibility_table(
    max_trials: np.ndarray,
    hw: np.ndarray,
    feasible: np.ndarray,
    strata: Any,
    target: float,
    warn: bool,
    *,
    proxy: bool = False,
) -> pd.DataFrame:
    """The feasibility table, and the warning naming the strata that cannot reach ``target``.

    Parameters
    ----------
    max_trials, hw, feasible : numpy.ndarray
        Per stratum: trials with every row labelled, the achievable half-width, and whether
        it is within ``target``.
    strata : array_like or None
        Stratum labels (the index of the table).
    target : float
        The half-width target (named in the warning).
    warn : bool
        Emit a :class:`~bayeseval._api.warnings.PrecisionLimitedWarning` listing the strata
        that cannot reach the target and their achievable half-widths.

    {feasibility_returned}

    Examples
    --------
    >>> t = feasibility_table(np.array([40.0]), np.array([0.15]), np.array([False]), ["a"], 0.05, False)
    >>> t["feasible"].tolist()
    [False]
    """
    k = len(hw)
    index = pd.RangeIndex(k, name="stratum") if strata is None else pd.Index(strata, name="stratum")
    out = pd.DataFrame({"max_trials": max_trials, "achievable_halfwidth": hw, "feasible": feasible}, index=index)
    if warn and not out["feasible"].all():
        bad = out[~out["feasible"]]
        listing = ", ".join(f"{i}: {h:.3f}" for i, h in bad["achievable_halfwidth"].head(10).items())
        if proxy:
            what = (
                f"may not be met from the pool in {len(bad)} of {k} strata unless the proxy separates "
                f"errors from correct predictions (half-width per stratum, every row labelled and a "
                f"proxy that tells nothing: {listing})"
            )
        else:
            what = (
                f"cannot be met from the pool in {len(bad)} of {k} strata "
                f"(achievable half-width per stratum, every row labelled: {listing})"
            )
        warnings.warn(
            f"target_halfwidth={target} {what}; raise the target, "
            "lower the level, add rows to these strata or accept their achievable half-widths",
            PrecisionLimitedWarning,
            stacklevel=3,
        )
    return out


def full_size_state(state: RuleState) -> RuleState:
    """``state`` with every eligible row of every stratum labelled at its planning rate.

    The rows not yet labelled (pending or never proposed) are added as labelled rows, of
    which the expected share :meth:`RuleState.p_trial` are trials, with successes at the
    stratum's current posterior mean rate (the planning rate; at creation, the prior mean).
    Counts are rounded to whole numbers.

    Parameters
    ----------
    state : RuleState
        The campaign's current state.

    Returns
    -------
    RuleState
        The projected state, with nothing left to propose.

    Examples
    --------
    >>> st = RuleState.from_counts([2], [10], available=[30])
    >>> full = full_size_state(st)
    >>> int(full.trials[0]), int(full.labelled[0]), int(full.available[0])
    (40, 40, 0)
    """
    rate = np.clip(np.asarray(state.posterior.mean(), dtype=float), 0.0, 1.0)
    rest = state.available + state.pending
    trials = np.rint(state.trials + rest * state.p_trial()).astype(np.int64)
    successes = np.rint(state.successes + rate * (trials - state.trials)).astype(np.int64)
    none = np.zeros(len(state.strata), np.int64)
    return state.with_counts(
        successes=successes, trials=trials, labelled=state.labelled + rest, pending=none, available=none
    )


def stratum_feasibility(state: RuleState, *, warn: bool = False) -> pd.DataFrame:
    """Whether the stopping rule can end each stratum once every one of its rows is labelled.

    The achievable half-width is the half-width of the interval the stopping rule checks
    (:meth:`RuleState.stop_halfwidths`) in :func:`full_size_state`: every eligible row of
    every stratum labelled, at the planning rate. A stratum is feasible when that
    half-width is within the target. This is
    what the campaign can reach: a stratum labelled to its last row ends with this
    half-width when its rate is the planning rate (checked in the tests against campaigns
    labelled to the end). :func:`target_feasibility` is the model-free bound (the Wilson
    interval of the stratum's own trials), which ignores the pooling the campaign stops on.

    Parameters
    ----------
    state : RuleState
        The campaign's current state.
    warn : bool, default False
        Emit a :class:`~bayeseval._api.warnings.PrecisionLimitedWarning` listing the strata that
        cannot reach the target and their achievable half-widths.

    Returns
    -------
    pandas.DataFrame
        Per stratum: ``max_trials`` (trials with every row labelled),
        ``achievable_halfwidth`` and ``feasible``.

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[40, 4000], strata=["small", "large"],
    ...                            target_halfwidth=0.05)
    >>> stratum_feasibility(st)["feasible"].tolist()
    [False, True]
    """
    full = full_size_state(state)
    hw = full.stop_halfwidths()
    feasible = hw <= state.target_halfwidth
    return feasibility_table(full.trials.astype(float), hw, feasible, state.strata, state.target_halfwidth, warn)


# ---------------------------------------------------------------------------------------
@fill_doc()
def forecast_decision(state: RuleState) -> pd.Series:
    """Labels each stratum still needs before it is more likely decided than not.

    Goal ``"decide"``: the smallest number of further labels ``m`` after which the
    preposterior probability that the stratum is decided (``P(meets)`` at least the
    decision level or at most one minus it, on the Beta approximation of its posterior;
    for a stratum whose pooled ``P(meets)`` is decided while its own decision is not, its
    own Jeffreys ``P(meets)``; with a ``margin``, also
    its interval within ``threshold +/- margin``, see :meth:`RuleState.at_threshold`)
    reaches 0.5; pending labels count as requested (:func:`decision_reach` says which
    strata the rows left cannot decide). Goal ``"gap"``: for each target stratum
    (:func:`~bayeseval.campaign.goals.gap.gap_targets`), the labels that bring its Bonferroni interval's half-width to half
    the distance between the gap estimate and the tolerance. Capped at the rows available.

    Parameters
    ----------
    {campaign_state}

    Returns
    -------
    pandas.Series
        Labels per stratum (``Int64``), named ``"forecast"``: ``<NA>`` where the forecast
        cannot be made yet (a stratum without a labelled trial; for ``"gap"``, fewer than two
        strata with trials), see :func:`forecast_notes`.

    Examples
    --------
    >>> st = RuleState.from_counts([3, 5], [50, 500], available=[5000, 5000], model="independent",
    ...                            goal="decide", threshold=np.array([0.05, 0.05]))
    >>> f = forecast_decision(st)
    >>> bool(f.iloc[0] > 0), int(f.iloc[1])
    (True, 0)
    """
    return forecast_labels(state)


def _cannot(state: RuleState) -> np.ndarray:
    """Per stratum, why its forecast cannot be made yet (None where it can).

    A stratum that still needs labels (not done, rows left or pending) and has no labelled
    trial yet: nothing but the prior speaks for its rate, so any number would be the prior's.
    Goals ``"overall"`` and ``"gap"``: every stratum, when one such stratum exists (the
    allocation depends on every stratum's variance; the max-min gap on every stratum's rate),
    as the goal says (:meth:`Goal.forecast_blocked <bayeseval.campaign.goals.goal.Goal.forecast_blocked>`).
    """
    k = len(state.strata)
    out = np.full(k, None, dtype=object)
    open_ = ~state.stratum_done() & (state.available + state.pending > 0)
    empty = open_ & (state.trials <= 0)
    out[empty] = NO_TRIALS
    blocked = state.goal.forecast_blocked(state, empty)
    if blocked is not None:
        out[open_] = blocked
    return out


def _finish(state: RuleState, need: np.ndarray) -> pd.Series:
    """Labels per stratum capped at the rows available, ``<NA>`` where the forecast cannot be made.

    Never casts a NaN to an integer: the values are pandas' nullable ``Int64``.
    """
    need = np.asarray(need, dtype=float).copy()
    need[_cannot(state) != None] = np.nan  # noqa: E711 - elementwise on an object array
    need = np.where(np.isfinite(need), np.minimum(need, state.available.astype(float)), np.nan)
    return pd.Series(need, index=state.strata, name="forecast").astype("Int64")


@fill_doc()
def forecast_notes(state: RuleState) -> pd.Series:
    """Why each stratum's forecast cannot be made yet (None where it can).

    A stratum without any labelled trial that still needs labels gets no forecast
    (:func:`forecast_labels`, :func:`forecast_decision` give ``<NA>`` there): before its first
    label only the prior speaks for its rate, and a number from it can be far off (a decision
    forecast of 8 labels for a stratum that needed 3,350). With goals ``"overall"`` and
    ``"gap"`` every stratum waits for such a stratum. A number that is not finite for any other reason is ``<NA>`` too, noted
    ``"not computable from the current counts"``.

    Parameters
    ----------
    {campaign_state}

    Returns
    -------
    pandas.Series
        Per stratum, the reason (str) or None, named ``"note"``.

    Examples
    --------
    >>> st = RuleState.from_counts([3, 0], [40, 0], available=[500, 500], target_halfwidth=0.05)
    >>> forecast_notes(st).tolist()
    [None, 'no labelled trials in this stratum yet']
    """
    return forecast_table(state)["note"]


def forecast_table(state: RuleState | Any) -> pd.DataFrame:
    """The forecast of every goal: ``labels`` still needed per stratum and a ``note`` where none can be made.

    The goal's numbers (:meth:`Goal.labels_needed
    <bayeseval.campaign.goals.goal.Goal.labels_needed>`: :func:`forecast_decision` for the
    decision goals ``"decide"`` and ``"gap"``, :func:`forecast_labels` for the others); for a
    campaign on several metrics
    (:class:`~bayeseval.campaign.loop.metric_states.MetricStates`) the most any metric needs (``<NA>``
    where any metric's forecast cannot be made). ``labels`` is ``Int64``: ``<NA>`` where the
    forecast cannot be made, and ``note`` then says why (:func:`forecast_notes`).

    Parameters
    ----------
    state : RuleState or MetricStates
        The campaign's state.

    Returns
    -------
    pandas.DataFrame
        Indexed by stratum: ``labels`` (Int64) and ``note`` (str or None).

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[500, 500], goal="gap", tolerance=0.05)
    >>> t = forecast_table(st)
    >>> bool(t["labels"].isna().all()), t["note"].iloc[0]
    (True, 'the gap needs labelled trials in at least two strata')
    """
    states = list(state.states.values()) if hasattr(state, "states") else [state]
    values, notes = [], np.full(len(states[0].strata), None, dtype=object)
    for st in states:
        raw = st.goal.labels_needed(st)
        why = _cannot(st)
        why[(why == None) & ~np.isfinite(raw)] = "not computable from the current counts"  # noqa: E711
        notes = np.where(notes == None, why, notes)  # noqa: E711
        values.append(_finish(st, np.where(why == None, raw, np.nan)).to_numpy(dtype=float, na_value=np.nan))  # noqa: E711
    labels = np.max(values, axis=0)  # NaN wherever any metric's forecast is NaN
    notes = np.where(np.isnan(labels), notes, np.array(None))
    return pd.DataFrame(
        {
            "labels": pd.Series(labels, index=states[0].strata).astype("Int64"),
            "note": pd.Series(notes, index=states[0].strata, dtype=object),
        }
    )


def forecast_total(labels: pd.Series) -> int | None:
    """The labels still needed in total, or None when any stratum's forecast cannot be made.

    Parameters
    ----------
    labels : pandas.Series
        A forecast (:func:`forecast_table`'s ``labels``, or :meth:`Campaign.forecast
        <bayeseval.campaign.Campaign.forecast>`).

    Returns
    -------
    int or None
        The sum, or None where a value is missing (never a sum that skips them).

    Examples
    --------
    >>> forecast_total(pd.Series([3, 4], dtype="Int64")), forecast_total(pd.Series([3, None], dtype="Int64"))
    (7, None)
    """
    values = pd.to_numeric(pd.Series(labels), errors="coerce").astype("Float64")
    if values.isna().any():
        return None
    return int(values.sum())


@fill_doc()
def forecast_text(table: pd.DataFrame) -> str:
    """The forecast total in words: ``"N"`` or ``"cannot forecast yet: <reason> (strata)"``.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`forecast_table` (or :meth:`Campaign.forecast(cost=True)
        <bayeseval.campaign.Campaign.forecast>`): the columns ``labels`` and ``note``.

    {line_returned}

    Examples
    --------
    >>> st = RuleState.from_counts([3, 0], [40, 0], available=[500, 500], strata=["a", "b"])
    >>> forecast_text(forecast_table(st))
    'cannot forecast yet: no labelled trials yet in b'
    """
    total = forecast_total(table["labels"])
    if total is not None:
        return str(total)
    notes = table["note"] if "note" in table else pd.Series(None, index=table.index, dtype=object)
    reasons: dict[str, list[str]] = {}
    for name in table.index[table["labels"].isna().to_numpy()]:
        reasons.setdefault(str(notes.get(name) or "not computable from the current counts"), []).append(str(name))
    parts = []
    for why, names in reasons.items():
        listing = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        parts.append(f"no labelled trials yet in {listing}" if why == NO_TRIALS else why)
    return f"{CANNOT}: " + "; ".join(parts)


@fill_doc()
def decision_reach(state: RuleState, budget_left: int | None = None) -> np.ndarray:
    """Which undecided strata the rows or the budget left cannot decide (goal ``"decide"``).

    A stratum is out of reach of its rows when it is more likely undecided than not after
    every row left of it is labelled (the preposterior of :func:`forecast_decision` at the
    rows available), and out of reach of the budget when that holds at the ``budget_left``
    labels (fewer than its rows). A rate close to its threshold needs about
    ``z^2 rate (1 - rate) / (rate - threshold)^2`` trials (``z`` the normal quantile at the
    decision level, one-sided): 32,000 for 0.123 against 0.12 at level 0.95. An indifference
    ``margin`` (see :meth:`RuleState.at_threshold`) brings such a stratum within reach.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``"decide"``).
    budget_left : int, optional
        Labels the budget still allows (None: no budget).

    {reach_returned}

    Examples
    --------
    >>> st = RuleState.from_counts([1230, 1], [10000, 100], available=[3000, 3000], model="independent",
    ...                            goal="decide", threshold=np.array([0.12, 0.12]))
    >>> decision_reach(st).tolist(), decision_reach(st, budget_left=500).tolist()
    (['rows', None], ['rows', None])
    >>> st = RuleState.from_counts([1230], [10000], available=[90000], model="independent",
    ...                            goal="decide", threshold=np.array([0.12]))
    >>> decision_reach(st).tolist(), decision_reach(st, budget_left=500).tolist()
    ([None], ['budget'])
    """
    reach = state.goal.out_of_reach(state, budget_left)
    return np.full(len(state.strata), None, dtype=object) if reach is None else reach
