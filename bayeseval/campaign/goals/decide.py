"""The goal :class:`Decide`: every stratum decided against a threshold."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval.campaign.fields import GOAL_DEFAULTS
from bayeseval.campaign.goals.gains import Gains, decision_gains
from bayeseval.campaign.goals.goal import DIRECTIONS, Goal, check_margin, check_threshold

__all__ = ["Decide"]


class Decide(Goal):
    """Every stratum decided against ``threshold``: meets it, fails it, or (with a margin) at it.

    Parameters
    ----------
    threshold : float, dict or sequence
        The rate's threshold: one number in (0, 1) for every stratum, or a mapping stratum ->
        number (every stratum named), or one number per stratum.
    direction : {"below", "above"}, optional
        A stratum meets the threshold when its rate is below it or above it; default: above
        for accuracy-type metrics, below for error-type ones (resolved by the campaign).
    margin : float
        Indifference margin in [0, 0.5): a stratum whose interval lies within
        ``threshold +/- margin`` is decided ``"at the threshold"``.

    Examples
    --------
    >>> Decide(0.1, "below").settings()
    {'threshold': 0.1, 'direction': 'below', 'margin': 0.0}
    """

    name = "decide"
    _fields = {"threshold": "threshold", "direction": "direction", "margin": "margin"}
    decides = True

    def __init__(
        self,
        threshold: Any,
        direction: str | None = GOAL_DEFAULTS["direction"],
        margin: float = GOAL_DEFAULTS["margin"],
    ) -> None:
        self.threshold = check_threshold(threshold)
        if direction is not None and direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {list(DIRECTIONS)}, got {direction!r}")
        self.direction = direction
        self.margin = check_margin(margin)

    def met(self, state: Any) -> np.ndarray:
        """Strata decided on one side of the threshold or at it.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return state.side_decided() | state.at_threshold()

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The expected progress toward each stratum's decision (:func:`~bayeseval.campaign.goals.gains.decision_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Labels looked ahead (the allocation passes its batch size, at least 5).

        Returns
        -------
        Gains
            Undecided strata with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([0, 3], [100, 30], available=[500, 500], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> Decide(0.1).gains(st).eligible.tolist()  # stratum 0 is decided
        [False, True]
        """
        return decision_gains(state, horizon)

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
        return f"decide each stratum against threshold {self.threshold} ({self.direction}) at level {level}"
