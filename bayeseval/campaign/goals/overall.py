"""The goal :class:`Overall`: the population-weighted rate's interval within a half-width."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval.campaign.fields import GOAL_DEFAULTS
from bayeseval.campaign.goals.gains import Gains, trial_probabilities
from bayeseval.campaign.goals.goal import Goal, check_halfwidth, strata_named
from bayeseval.campaign.goals.state import GoalState, fill_goal_doc

__all__ = ["Overall", "weighted_gains"]


@fill_goal_doc
class Overall(Goal):
    """The population-weighted rate's interval within ``halfwidth``.

    Parameters
    ----------
    {target_halfwidth}

    Examples
    --------
    >>> Overall(0.02).weighted, Overall(0.02) == "overall"
    (True, True)
    """

    name = "overall"
    _fields = {"target_halfwidth": "halfwidth"}
    weighted = True
    stops_strata = False
    per_stratum = False

    def __init__(self, halfwidth: float = GOAL_DEFAULTS["halfwidth"]) -> None:
        self.halfwidth = check_halfwidth(halfwidth, "halfwidth")

    def _reached(self, state: GoalState) -> bool:
        _, lo, hi = state.overall()
        return bool((hi - lo) / 2 <= state.target_halfwidth)

    def met(self, state: GoalState) -> np.ndarray:
        """Every stratum alike: whether the weighted rate's half-width is within the target.

        {goal_sections}
        """
        return np.full(len(state.strata), self._reached(state))

    def gains(self, state: GoalState, horizon: int = 10) -> Gains:
        """The expected reduction of the weighted rate's variance (:func:`weighted_gains`).

        {goal_sections}

        Returns
        -------
        Gains
            Every stratum with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([5, 5], [20, 200], available=[50, 50], goal="overall", weights=[0.5, 0.5])
        >>> g = Overall(0.02).gains(st)
        >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
        True
        """
        return weighted_gains(state)

    def is_done(self, state: GoalState) -> bool:
        """The weighted rate's half-width within the target, or no row left anywhere.

        {goal_sections}
        """
        return self._reached(state) or bool(state.exhausted().all())

    def reached(self, state: GoalState) -> bool:
        """Whether the weighted rate's half-width is within the target (:meth:`Goal.reached`).

        {goal_sections}
        """
        return self._reached(state)

    def labels_needed(self, state: GoalState) -> np.ndarray:
        """Labels per stratum so the weighted rate's expected half-width meets the target (:meth:`Goal.labels_needed`).

        The allocation minimising total labels subject to the expected variance of the
        weighted rate reaching the target, by water-filling (the preposterior variance of
        :func:`weighted_gains`); pending labels count as already requested. Zero everywhere
        when the target is met.

        {goal_sections}

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([5, 5], [50, 50], available=[5000, 5000], goal="overall",
        ...                            target_halfwidth=0.02, weights=[0.9, 0.1])
        >>> need = Overall(0.02).labels_needed(st)
        >>> bool(need[0] > need[1] > 0)
        True
        """
        post = state.posterior
        neff = post.n_eff().to_numpy()
        p = np.clip(state.p_trial(), 1e-6, 1)
        t0 = p * state.pending
        cap = state.available.astype(float)
        target = state.target_halfwidth
        _, lo, hi = state.overall()
        hw = (hi - lo) / 2
        if hw <= target:
            return np.zeros(len(neff))
        c = state.weights**2 * post.var().to_numpy() * neff
        v_target = np.sum(c / (neff + t0)) * (target / hw) ** 2

        def alloc(lam: float) -> np.ndarray:
            x = np.sqrt(lam * c * p)  # neff + t0 + p m at the optimum
            return np.clip((x - neff - t0) / p, 0, cap)

        def vexp(m: np.ndarray) -> float:
            return float(np.sum(c / (neff + t0 + p * m)))

        lo_l, hi_l = 0.0, 1.0
        while vexp(alloc(hi_l)) > v_target and hi_l < 1e30:
            hi_l *= 10
        for _ in range(100):
            mid = np.sqrt(lo_l * hi_l) if lo_l > 0 else hi_l / 10
            if vexp(alloc(mid)) > v_target:
                lo_l = mid
            else:
                hi_l = mid
            if hi_l / max(lo_l, 1e-300) < 1 + 1e-9:
                break
        return np.asarray(np.ceil(alloc(hi_l)), dtype=float)

    def forecast_blocked(self, state: GoalState, empty: np.ndarray) -> str | None:
        """Every stratum waits for labelled trials in each stratum (:meth:`Goal.forecast_blocked`).

        {goal_sections}

        Returns
        -------
        str or None
            The reason while a stratum is empty.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([3, 0], [40, 0], available=[500, 500], goal="overall", strata=["a", "b"])
        >>> Overall().forecast_blocked(st, np.array([False, True]))
        'the weighted rate needs labelled trials in every stratum; none yet in b'
        """
        if not empty.any():
            return None
        return (
            f"the weighted rate needs labelled trials in every stratum; none yet in {strata_named(state.strata, empty)}"
        )

    def status_summary(self, state: GoalState) -> dict[str, dict[str, Any]]:
        """The weighted rate under ``overall``: ``mean``, ``lower``, ``upper``, ``halfwidth`` and ``done``.

        {goal_sections}

        Returns
        -------
        dict
            ``{"overall": record}`` (:meth:`Goal.status_summary`).

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([5, 5], [50, 50], available=[0, 0], goal="overall", target_halfwidth=0.2)
        >>> Overall(0.2).status_summary(st)["overall"]["done"]
        True
        """
        mean, olo, ohi = state.overall()
        return {
            "overall": {
                "mean": mean,
                "lower": olo,
                "upper": ohi,
                "halfwidth": (ohi - olo) / 2,
                "done": (ohi - olo) / 2 <= state.target_halfwidth,
            }
        }

    def shortfall(self, state: GoalState) -> str:
        """``"overall half-width above the target"`` (:meth:`Goal.shortfall`).

        {goal_sections}

        {phrase_returned}
        """
        return "overall half-width above the target"


@fill_goal_doc
def weighted_gains(state: GoalState) -> Gains:
    """Gains of goal ``Overall``: the reduction of the weighted rate's expected posterior variance.

    Stratum ``j`` contributes ``c_j / (n_eff_j + t)`` with ``c_j = w_j^2 Var_j n_eff_j``
    (preposterior variance on the effective sample size); a label adds ``p_trial`` trials.

    Parameters
    ----------
    {campaign_state}

    Returns
    -------
    Gains
        Every stratum with rows left is eligible.

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> st = RuleState.from_counts([5, 5], [20, 200], available=[50, 50], goal="overall", weights=[0.5, 0.5])
    >>> g = weighted_gains(st)
    >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
    True
    """
    p = trial_probabilities(state)
    neff = state.posterior.n_eff().to_numpy()
    c = state.weights**2 * state.posterior.var().to_numpy() * neff

    def every(t: np.ndarray) -> np.ndarray:
        return c / (neff + t) - c / (neff + t + p)

    def one(j: int, t: float) -> float:
        return c[j] / (neff[j] + t) - c[j] / (neff[j] + t + p[j])

    return Gains(one, p, state.available > 0, every)
