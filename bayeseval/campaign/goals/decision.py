"""Where the decision goals (``"decide"``, ``"gap"``) send labels: the expected progress toward a decision."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeseval.campaign.loop.rule_state import RuleState

__all__ = ["decision_allocation"]


# decision goals: proposal and forecast
# ---------------------------------------------------------------------------------------
def greedy_decision(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> np.ndarray:
    """Greedy batch for goals ``"decide"`` and ``"gap"``: largest gain per unit cost first
    (the gains are the goal's, :meth:`~bayeseval.campaign.goals.goal.Goal.gains`)."""
    k = len(state.strata)
    cost = np.ones(k) if costs is None else np.asarray(costs, dtype=float)
    cap = state.available.astype(np.int64)
    counts = np.zeros(k, np.int64)
    gains = state.goal.gains(state, max(int(batch_size), 5))
    gain, p, eligible = gains.one, gains.p_trial, gains.eligible
    t = np.clip(state.p_trial(), 1e-6, 1.0) * state.pending
    g = np.array([gain(j, t[j]) / cost[j] if eligible[j] else -np.inf for j in range(k)])
    for _ in range(int(batch_size)):
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += p[j]
        g[j] = -np.inf if counts[j] >= cap[j] else gain(j, t[j]) / cost[j]
    return counts


def decision_allocation(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> pd.Series:
    """Labels per stratum for goals ``"decide"`` and ``"gap"`` (the rules' decision mode).

    Goal ``"decide"``: each label goes to the undecided stratum whose next label most reduces
    the expected excess of ``min(P(meets), 1 - P(meets))`` over ``1 - level`` (see
    :func:`bayeseval.campaign.goals.gains.decision_gains`), per unit of label cost; after each label that stratum's expected
    trials grow by ``P(trial)``, so a batch spreads over strata near a decision and leaves
    strata whose rate sits on the threshold for last. Goal ``"gap"``: the strata keeping the
    verdict undecided (:func:`bayeseval.campaign.goals.gains.gap_targets`) by expected half-width reduction.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``"decide"`` or ``"gap"``).
    batch_size : int
        Labels in the batch.
    costs : numpy.ndarray, optional
        Label cost per stratum (default 1 each).

    Returns
    -------
    pandas.Series
        Labels per stratum, at most the rows available.

    Examples
    --------
    Stratum 0 (no error in 100 against a 0.10 threshold) is decided and gets nothing:

    >>> st = RuleState.from_counts([0, 3, 9], [100, 30, 60], available=[500, 500, 500],
    ...                            model="independent", goal="decide", threshold=np.array([0.1] * 3))
    >>> st.decisions().tolist()
    ['meets', 'undecided', 'undecided']
    >>> a = decision_allocation(st, 20)
    >>> int(a.iloc[0]), int(a.sum())
    (0, 20)
    """
    return pd.Series(greedy_decision(state, batch_size, costs), index=state.strata, name="decision")
