"""The goal :class:`Overall`: the population-weighted rate's interval within a half-width."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval.campaign.fields import GOAL_DEFAULTS
from bayeseval.campaign.goals.gains import Gains, weighted_gains
from bayeseval.campaign.goals.goal import Goal, check_halfwidth

__all__ = ["Overall"]


class Overall(Goal):
    """The population-weighted rate's interval within ``halfwidth``.

    Parameters
    ----------
    halfwidth : float
        Target half-width, in (0, 0.5).

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

    def _reached(self, state: Any) -> bool:
        _, lo, hi = state.overall()
        return bool((hi - lo) / 2 <= state.target_halfwidth)

    def met(self, state: Any) -> np.ndarray:
        """Every stratum alike: whether the weighted rate's half-width is within the target.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return np.full(len(state.strata), self._reached(state))

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The expected reduction of the weighted rate's variance (:func:`~bayeseval.campaign.goals.gains.weighted_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Not used.

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

    def is_done(self, state: Any) -> bool:
        """The weighted rate's half-width within the target, or no row left anywhere.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when done.
        """
        return self._reached(state) or bool(state.exhausted().all())

    def reached(self, state: Any) -> bool:
        """Whether the weighted rate's half-width is within the target (:meth:`Goal.reached`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when the goal is met.
        """
        return self._reached(state)
