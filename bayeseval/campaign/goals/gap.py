"""The goal :class:`Gap`: a verdict on the max-min gap between strata against a tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval.campaign.goals.gains import Gains, gap_gains
from bayeseval.campaign.goals.goal import Goal, unit_value

__all__ = ["Gap"]


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

    def met(self, state: Any) -> np.ndarray:
        """Every stratum alike: whether the gap verdict is decided.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return np.full(len(state.strata), state.gap()["verdict"] != "undecided")

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The half-width reduction of the strata that keep the verdict open (:func:`~bayeseval.campaign.goals.gains.gap_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Not used.

        Returns
        -------
        Gains
            The strata of :func:`~bayeseval.campaign.goals.gains.gap_targets` with rows left.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([2, 9], [40, 40], available=[100, 100], goal="gap", tolerance=0.05)
        >>> bool(Gap(0.05).gains(st).one(0, 0.0) > 0)
        True
        """
        return gap_gains(state)

    def is_done(self, state: Any) -> bool:
        """The verdict decided with trials in every stratum, or nothing left to label.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when done.
        """
        return state.gap_decided() or bool(np.all(state.exhausted() & (state.pending == 0)))

    def reached(self, state: Any) -> bool:
        """Whether the gap verdict is decided with every stratum's data behind it (:meth:`Goal.reached`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when the goal is met.
        """
        return state.gap_decided()

    def describe(self, level: float) -> str:
        """The goal in words.

        Parameters
        ----------
        level : float
            The campaign's level.

        Returns
        -------
        str
            One line.
        """
        return f"decide whether the max-min gap is within {self.tolerance} at level {level}"
