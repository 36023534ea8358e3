"""The goal :class:`Gap`: a verdict on the max-min gap between strata against a tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayeseval._render.formats import fixed
from bayeseval.campaign.goals.gains import Gains, trial_probabilities
from bayeseval.campaign.goals.goal import Goal, strata_named, unit_value
from bayeseval.campaign.goals.state import GoalState

__all__ = ["Gap", "gap_gains", "gap_targets"]


class Gap(Goal):
    """The verdict on the max-min gap between the strata's rates decided against ``tolerance``.

    Parameters
    ----------
    tolerance : float
        The largest acceptable max-min gap, in (0, 1).

    Examples
    --------
    >>> Gap(0.05).settings()
    {'tolerance': 0.05}
    """

    name = "gap"
    _fields = {"tolerance": "tolerance"}
    decides = True
    stops_strata = False

    def __init__(self, tolerance: float) -> None:
        self.tolerance = unit_value(tolerance, "tolerance")

    def met(self, state: GoalState) -> np.ndarray:
        """Every stratum alike: whether the gap verdict is decided.

        {goal_sections}
        """
        return np.full(len(state.strata), state.gap()["verdict"] != "undecided")

    def gains(self, state: GoalState, horizon: int = 10) -> Gains:
        """The half-width reduction of the strata that keep the verdict open (:func:`gap_gains`).

        {goal_sections}

        Returns
        -------
        Gains
            The strata of :func:`gap_targets` with rows left.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([2, 9], [40, 40], available=[100, 100], goal="gap", tolerance=0.05)
        >>> bool(Gap(0.05).gains(st).one(0, 0.0) > 0)
        True
        """
        return gap_gains(state)

    def is_done(self, state: GoalState) -> bool:
        """The verdict decided with trials in every stratum, or nothing left to label.

        {goal_sections}
        """
        return state.gap_decided() or bool(np.all(state.exhausted() & (state.pending == 0)))

    def reached(self, state: GoalState) -> bool:
        """Whether the gap verdict is decided with every stratum's data behind it (:meth:`Goal.reached`).

        {goal_sections}
        """
        return state.gap_decided()

    def describe(self, level: float) -> str:
        """The goal in words.

        {goal_sections}
        """
        return f"decide whether the max-min gap is within {self.tolerance} at level {level}"

    def status_line(self, level: float) -> str:
        """``"goal: "`` and :meth:`describe` (:meth:`Goal.status_line`).

        {goal_sections}

        Examples
        --------
        >>> Gap(0.05).status_line(0.95)
        'goal: decide whether the max-min gap is within 0.05 at level 0.95'
        """
        return f"goal: {self.describe(level)}"

    def report_line(self, level: float, status: pd.DataFrame) -> str:
        """:meth:`describe` with the gap, its interval and the verdict so far (:meth:`Goal.report_line`).

        The gap is read from the status table's ``attrs["gap"]`` (:meth:`status_summary`).

        {goal_sections}

        Examples
        --------
        >>> status = pd.DataFrame()
        >>> status.attrs["gap"] = {"gap": 0.08, "lower": 0.01, "upper": 0.15, "verdict": "undecided"}
        >>> Gap(0.05).report_line(0.95, status)
        'decide whether the max-min gap is within 0.05 at level 0.95 (gap 0.0800, interval [0.0100, 0.1500]: undecided)'
        """
        g = status.attrs["gap"]
        return (
            f"{self.describe(level)} (gap "
            f"{fixed(g['gap'])}, interval [{fixed(g['lower'])}, {fixed(g['upper'])}]: {g['verdict']})"
        )

    def labels_needed(self, state: GoalState) -> np.ndarray:
        """Labels per target stratum to bring its interval's half-width to half the gap's distance from the tolerance.

        For each stratum of :func:`gap_targets`, the labels that bring its Bonferroni
        interval's half-width (:meth:`RuleState.gap <bayeseval.campaign.loop.rule_state.RuleState.gap>`)
        to half the distance between the gap estimate and the tolerance (at least 1e-4);
        pending labels count as already requested (:meth:`Goal.labels_needed`).

        {goal_sections}

        Returns
        -------
        numpy.ndarray
            One value per stratum (0 outside the targets; NaN without a gap estimate).

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([2, 9], [40, 40], available=[1000, 1000], goal="gap", tolerance=0.05)
        >>> bool((Gap(0.05).labels_needed(st) > 0).all())
        True
        """
        p = np.clip(state.p_trial(), 1e-6, 1.0)
        t0 = p * state.pending
        info = state.gap()
        lo, hi = info["bounds"]
        neff = state.posterior.n_eff().to_numpy()
        want = np.fmax(abs(info["tolerance"] - info["gap"]) / 2, 1e-4)  # NaN stays NaN (no gap estimate)
        need = np.maximum(neff * (((hi - lo) / 2) / want) ** 2 - neff - t0, 0.0)
        return np.where(gap_targets(state), np.ceil(need / p), 0.0)

    def forecast_blocked(self, state: GoalState, empty: np.ndarray) -> str | None:
        """Every stratum waits for a gap estimate with trials in each stratum (:meth:`Goal.forecast_blocked`).

        {goal_sections}

        Returns
        -------
        str or None
            The reason: fewer than two strata with trials, or an empty stratum.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([0, 0], [0, 0], available=[500, 500], goal="gap", tolerance=0.05)
        >>> Gap(0.05).forecast_blocked(st, np.array([True, True]))
        'the gap needs labelled trials in at least two strata'
        """
        if not state.is_done() and not np.isfinite(state.gap()["gap"]):
            return "the gap needs labelled trials in at least two strata"
        if empty.any():
            return f"the gap needs labelled trials in every stratum; none yet in {strata_named(state.strata, empty)}"
        return None

    def status_summary(self, state: GoalState) -> dict[str, dict[str, Any]]:
        """The gap record of :meth:`RuleState.gap <bayeseval.campaign.loop.rule_state.RuleState.gap>`
        without the strata's bounds, and ``done`` (:meth:`Goal.status_summary`).

        {goal_sections}

        Returns
        -------
        dict
            ``{"gap": record}``.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([10, 12], [1000, 1000], available=[0, 0], model="independent",
        ...                            goal="gap", tolerance=0.02)
        >>> rec = Gap(0.02).status_summary(st)["gap"]
        >>> rec["verdict"], rec["done"]
        ('within tolerance', True)
        """
        gap = {key: value for key, value in state.gap().items() if key != "bounds"}
        gap["done"] = state.is_done()
        return {"gap": gap}

    def shortfall(self, state: GoalState) -> str:
        """``"gap verdict "`` and the verdict so far (:meth:`Goal.shortfall`).

        {goal_sections}

        {phrase_returned}
        """
        return f"gap verdict {state.gap()['verdict']}"

    def simulation_fields(self, state: GoalState, true_rates: np.ndarray) -> dict[str, Any]:
        """The verdict at stop, the true gap and whether the verdict is wrong (:meth:`Goal.simulation_fields`).

        {goal_sections}

        Returns
        -------
        dict
            ``verdict`` (``"undecided"`` unless :meth:`RuleState.gap_decided
            <bayeseval.campaign.loop.rule_state.RuleState.gap_decided>`), ``true_gap`` and
            ``wrong_verdict``.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([10, 12], [1000, 1000], available=[0, 0], model="independent",
        ...                            goal="gap", tolerance=0.02)
        >>> Gap(0.02).simulation_fields(st, np.array([0.01, 0.04]))["wrong_verdict"]
        True
        """
        true_gap = float(np.nanmax(true_rates) - np.nanmin(true_rates))
        verdict = state.gap()["verdict"] if state.gap_decided() else "undecided"
        right = "outside" if true_gap > state.tolerance else "within tolerance"
        return {"verdict": verdict, "true_gap": true_gap, "wrong_verdict": verdict not in ("undecided", right)}


def gap_gains(state: GoalState) -> Gains:
    """Gains of goal ``Gap``: the expected half-width reduction of the strata keeping the verdict open.

    Parameters
    ----------
    state : GoalState
        The campaign's state (goal ``Gap``).

    Returns
    -------
    Gains
        The strata of :func:`gap_targets` with rows left are eligible (all with rows left when
        none is).

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> st = RuleState.from_counts([2, 9], [40, 40], available=[100, 100], goal="gap", tolerance=0.05)
    >>> g = gap_gains(st)
    >>> bool(g.one(0, 0.0) > 0), g.eligible.tolist()
    (True, [True, True])
    """
    p = trial_probabilities(state)
    neff = state.posterior.n_eff().to_numpy()
    lo, hi = state.gap()["bounds"]
    hw = (hi - lo) / 2

    def one(j: int, t: float) -> float:
        return float(hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j]))))

    cap = state.available.astype(np.int64) > 0
    eligible = cap & gap_targets(state)
    return Gains(one, p, eligible if eligible.any() else cap)


def gap_targets(state: GoalState) -> np.ndarray:
    """The strata whose intervals keep the gap verdict undecided (goal ``"gap"``).

    When the gap estimate exceeds the tolerance the verdict can only become ``"outside"``,
    which needs the two extreme strata's intervals narrower (as the audit's labels-needed
    table says); otherwise ``"within tolerance"`` needs every stratum whose interval end lies
    more than the tolerance from the opposite end of another's. Strata without trials are
    always targets.

    Parameters
    ----------
    state : GoalState
        A state with goal ``"gap"``.

    Returns
    -------
    numpy.ndarray of bool
        One value per stratum.
    """
    info = state.gap()
    lo, hi = info["bounds"]
    mean = np.where(state.trials > 0, state.successes / np.maximum(state.trials, 1), np.nan)
    tol = info["tolerance"]
    target = (state.trials == 0) | ~state.stratum_done()
    if info["verdict"] != "undecided":
        return target & ~state.stratum_done() | (state.trials == 0)
    if info["gap"] > tol:
        target[[int(np.nanargmax(mean)), int(np.nanargmin(mean))]] = True
    else:
        target |= (hi - lo.min() > tol) | (hi.max() - lo > tol)
    return target
