"""A campaign on several metrics: one :class:`~bayeseval.campaign.loop.rule_state.RuleState` per metric.

:class:`MetricStates` holds the states; the rules allocate over all of them
(:func:`~bayeseval.campaign.loop.rules.metrics_allocation`) and the campaign is done when every
metric's goal is met.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bayeseval.campaign.loop.rule_state import RuleState

__all__ = ["MetricStates"]


class MetricStates:
    """The states of a campaign on several metrics, one :class:`RuleState` per metric.

    A labelled row counts for every metric it is a trial of, so the metrics share the
    labelled, pending and available rows per stratum; each has its own successes, trials,
    posterior and goal. The campaign is done when every metric's goal is met.

    Parameters
    ----------
    states : dict
        Metric name -> :class:`RuleState` (same strata and row counts).

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> a = RuleState.from_counts([1, 2], [400, 400], available=[100, 100], target_halfwidth=0.05)
    >>> b = RuleState.from_counts([5, 9], [20, 20], available=[100, 100], target_halfwidth=0.05)
    >>> a.is_done(), b.is_done(), MetricStates({"fpr": a, "tpr": b}).is_done()
    (True, False, False)
    """

    def __init__(self, states: dict[str, RuleState]) -> None:
        self.states = dict(states)
        first = next(iter(self.states.values()))
        self.strata = first.strata
        self.labelled, self.pending, self.available = first.labelled, first.pending, first.available
        self.goal = first.goal

    @property
    def metrics(self) -> list[str]:
        """The metric names."""
        return list(self.states)

    def is_done(self) -> bool:
        """Whether every metric's goal is met (or nothing is left to label).

        Returns
        -------
        bool
        """
        return all(st.is_done() for st in self.states.values())

    def halfwidths(self) -> np.ndarray:
        """Per stratum, the largest half-width over the metrics.

        Returns
        -------
        numpy.ndarray
        """
        return np.max([st.halfwidths() for st in self.states.values()], axis=0)

    def read_halfwidths(self) -> np.ndarray:
        """Per stratum, the largest half-width of the read interval over the metrics.

        Returns
        -------
        numpy.ndarray
            One half-width per stratum (:meth:`RuleState.read_halfwidths` of each metric).
        """
        return np.max([st.read_halfwidths() for st in self.states.values()], axis=0)
