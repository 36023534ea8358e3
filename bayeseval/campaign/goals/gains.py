"""What one more label is worth toward a campaign's goal, stratum by stratum.

Each goal (:mod:`bayeseval.campaign.goals.goal`) answers :meth:`Goal.gains
<bayeseval.campaign.goals.goal.Goal.gains>` with a :class:`Gains`: the gain ``one(j, t)`` of one
more label to stratum ``j`` when ``t`` further trials are already expected there, the
probability ``p_trial`` that a label is a trial of the metric, and the strata that may get
labels. The allocation rules (:mod:`bayeseval.campaign.loop.rules`) hand out a batch one label at
a time to the largest gain. Each goal's gain lives in its own file:

* :func:`~bayeseval.campaign.goals.each.width_gains` (:class:`~bayeseval.campaign.goals.each.Each`):
  the expected reduction of the stratum's stopping half-width's excess over the target;
* :func:`~bayeseval.campaign.goals.overall.weighted_gains`
  (:class:`~bayeseval.campaign.goals.overall.Overall`): of the weighted rate's posterior variance;
* :func:`~bayeseval.campaign.goals.decide.decision_gains`
  (:class:`~bayeseval.campaign.goals.decide.Decide`): of the expected undecidedness
  (:func:`~bayeseval.campaign.goals.decide.undecided_excess`);
* :func:`~bayeseval.campaign.goals.gap.gap_gains` (:class:`~bayeseval.campaign.goals.gap.Gap`): of
  the half-width of the strata that keep the gap verdict undecided
  (:func:`~bayeseval.campaign.goals.gap.gap_targets`).

The gain functions read a campaign state (:class:`~bayeseval.campaign.loop.rule_state.RuleState`)
through its methods only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from bayeseval.campaign.goals.state import GoalState, fill_goal_doc

__all__ = ["Gains", "trial_probabilities"]


class Gains(NamedTuple):
    """What one more label is worth per stratum (:meth:`bayeseval.campaign.goals.goal.Goal.gains`).

    Attributes
    ----------
    one : callable
        ``one(j, t)``: the gain of one more label to stratum ``j`` with ``t`` further trials
        already expected there.
    p_trial : numpy.ndarray
        Probability that a label of each stratum is a trial of the metric (at least 1e-6).
    eligible : numpy.ndarray of bool
        Strata that may get labels.
    every : callable or None
        ``every(t)``: ``one`` for every stratum at once (an array ``t``), where the goal has it.
    """

    one: Callable[[int, float], float]
    p_trial: np.ndarray
    eligible: np.ndarray
    every: Callable[[np.ndarray], np.ndarray] | None = None


@fill_goal_doc
def trial_probabilities(state: GoalState) -> np.ndarray:
    """Each stratum's probability that a label is a trial of the metric, at least 1e-6.

    Parameters
    ----------
    {campaign_state}

    Returns
    -------
    numpy.ndarray
        :meth:`RuleState.p_trial <bayeseval.campaign.loop.rule_state.RuleState.p_trial>` clipped to
        ``[1e-6, 1]``.

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> trial_probabilities(RuleState.from_counts([1], [10], available=[5])).tolist()
    [1.0]
    """
    return np.clip(state.p_trial(), 1e-6, 1.0)
