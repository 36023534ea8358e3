"""The goal :class:`Each`: every stratum's interval within a half-width."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval.campaign.fields import GOAL_DEFAULTS
from bayeseval.campaign.goals.gains import Gains, width_gains
from bayeseval.campaign.goals.goal import Goal, check_halfwidth

__all__ = ["Each"]


class Each(Goal):
    """Every stratum's interval within ``halfwidth``.

    Parameters
    ----------
    halfwidth : float
        Target half-width, in (0, 0.5).

    Examples
    --------
    >>> Each(0.05) == "each", Each(0.05).settings()
    (True, {'target_halfwidth': 0.05})
    >>> Each()
    Each(halfwidth=0.05)
    """

    name = "each"
    _fields = {"target_halfwidth": "halfwidth"}

    def __init__(self, halfwidth: float = GOAL_DEFAULTS["halfwidth"]) -> None:
        self.halfwidth = check_halfwidth(halfwidth, "halfwidth")

    def met(self, state: Any) -> np.ndarray:
        """Strata whose stopping interval (:meth:`RuleState.stop_halfwidths`) is within the target.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return state.stop_halfwidths() <= state.target_halfwidth

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The expected reduction of each stratum's excess half-width (:func:`~bayeseval.campaign.goals.gains.width_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Not used (one label's gain is known in closed form).

        Returns
        -------
        Gains
            Strata not done with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
        >>> g = Each(0.05).gains(st)
        >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
        True
        """
        return width_gains(state)
