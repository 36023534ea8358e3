"""What a goal reads from a campaign's state: the :class:`GoalState` protocol.

The goals sit below the state: the campaign's state
(:class:`~bayeseval.campaign.loop.rule_state.RuleState`) calls them, and they only read it,
through the members listed here and nothing else. A goal's methods and its gain functions take
``state: GoalState``, so the goals import nothing from :mod:`bayeseval.campaign.loop`; the
state satisfies the protocol (mypy checks it where the state is defined), and a test keeps the
list equal to the members the goals read.

The arrays are aligned to :attr:`GoalState.strata`, one value per stratum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc

if TYPE_CHECKING:
    from bayeseval.models.posterior import Posterior

__all__ = ["GoalState", "GOAL_STATE_DOC", "fill_goal_doc"]

#: the parameter block of the goals' docstrings for ``state`` (``{campaign_state}`` in them)
GOAL_STATE_DOC = """\
state : GoalState
    The campaign's state (a :class:`~bayeseval.campaign.loop.rule_state.RuleState`; the goals
    read only the members of :class:`~bayeseval.campaign.goals.state.GoalState`)."""
#: :func:`~bayeseval._api.docs.fill_doc` with ``{campaign_state}`` standing for :data:`GOAL_STATE_DOC`
fill_goal_doc = fill_doc(campaign_state=GOAL_STATE_DOC)


class GoalState(Protocol):
    """The members of a campaign's state that the goals read.

    The counts per stratum (``strata`` ... ``model``), the goal's settings as the state resolved
    them (``level`` ... ``margin``), the posterior, and what the state derives from them: the
    intervals each stratum stops on, the decisions and the gap verdict.
    :class:`~bayeseval.campaign.loop.rule_state.RuleState` is one.

    Examples
    --------
    >>> from bayeseval.campaign.goals.each import Each
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> state: GoalState = RuleState.from_counts([1, 5], [400, 10], available=[0, 0], target_halfwidth=0.05)
    >>> Each(0.05).met(state).tolist()
    [True, False]
    """

    # -- the counts ------------------------------------------------------------------------
    @property
    def strata(self) -> pd.Index:
        """The strata."""

    @property
    def successes(self) -> np.ndarray:
        """Counted successes of the metric, per stratum."""

    @property
    def trials(self) -> np.ndarray:
        """Counted trials of the metric, per stratum."""

    @property
    def pending(self) -> np.ndarray:
        """Rows proposed and not yet labelled, per stratum."""

    @property
    def available(self) -> np.ndarray:
        """Eligible rows never proposed, per stratum."""

    @property
    def weights(self) -> np.ndarray:
        """Population shares of the strata (sum to 1)."""

    @property
    def model(self) -> str:
        """The posterior's model (``"independent"``, ``"auto"``, ...)."""

    @property
    def posterior(self) -> Posterior:
        """The campaign's current posterior."""

    def p_trial(self) -> np.ndarray:
        """Probability that a labelled row is a trial of the metric, per stratum."""

    def exhausted(self) -> np.ndarray:
        """Strata with no row left to propose."""

    # -- the goal's settings, as the state resolved them -----------------------------------
    @property
    def level(self) -> float:
        """The level of the intervals and decisions."""

    @property
    def target_halfwidth(self) -> float:
        """The target half-width (goals ``Each`` and ``Overall``)."""

    @property
    def threshold(self) -> np.ndarray | None:
        """The threshold, one value per stratum (goal ``Decide``; None for the other goals)."""

    @property
    def direction(self) -> str:
        """``"below"`` or ``"above"``: on which side of its threshold a rate meets it (goal ``Decide``)."""

    @property
    def margin(self) -> float:
        """The indifference margin (goal ``Decide``; 0: off)."""

    @property
    def tolerance(self) -> float:
        """The largest acceptable max-min gap (goal ``Gap``)."""

    def per_stratum(self) -> bool:
        """Whether the per-stratum guarantee (its intervals and anytime tests) is in force."""

    # -- the intervals and the goal --------------------------------------------------------
    def halfwidths(self) -> np.ndarray:
        """Half-widths of the posterior intervals at ``level``."""

    def stop_halfwidths(self) -> np.ndarray:
        """Half-widths of the intervals the strata stop on."""

    def stop_neff(self) -> np.ndarray:
        """Effective sample sizes :meth:`stop_halfwidths` scale with."""

    def pool_trials(self) -> np.ndarray:
        """Trials of each stratum's finite pool (infinite for a process population)."""

    def read_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The interval each stratum reports, and which one it is (``"units"`` with ``design.cluster``)."""

    def read_means(self) -> np.ndarray:
        """The point estimate of the interval each stratum reports."""

    def overall(self) -> tuple[float, float, float]:
        """Mean and interval at ``level`` of the weighted rate."""

    def goal_met(self) -> np.ndarray:
        """Strata that meet the goal."""

    def stratum_done(self) -> np.ndarray:
        """Strata that are done (meet the goal)."""

    def is_done(self) -> bool:
        """Whether the campaign is done."""

    # -- the decisions and the gap verdict -------------------------------------------------
    def p_meets(self) -> np.ndarray:
        """Posterior probability that each stratum's rate meets its threshold."""

    def pooled_decided(self) -> np.ndarray:
        """Strata whose posterior ``P(meets)`` alone is decided."""

    def side_decided(self) -> np.ndarray:
        """Strata decided on one side of the threshold."""

    def at_threshold(self) -> np.ndarray:
        """Strata known to lie within the indifference margin of the threshold."""

    def decisions(self) -> np.ndarray:
        """Each stratum's decision: ``"meets"``, ``"fails"``, ``"at the threshold"`` or ``"undecided"``."""

    def anytime_level(self) -> float:
        """The level of each anytime test."""

    def decision_concentration(self) -> float:
        """The prior concentration of the anytime tests."""

    def gap(self) -> dict[str, Any]:
        """The max-min gap, its interval, the verdict, the tolerance and the strata's ``bounds``."""

    def gap_decided(self) -> bool:
        """Whether the gap verdict is decided with trials in every stratum."""
