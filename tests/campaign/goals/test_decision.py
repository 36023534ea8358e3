"""Tests of ``bayeseval.campaign.goals.decision``."""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayeseval.campaign.goals.decision import decision_allocation
from bayeseval.campaign.loop.forecast import forecast_decision
from bayeseval.campaign.loop.rule_state import RuleState


def own_p(s, n, threshold):
    return float(stats.beta.cdf(threshold, s + 0.5, n - s + 0.5))


def test_allocation_skips_decided_strata_and_forecast_is_zero_there():
    st = RuleState.from_counts(
        [0, 3, 9], [100, 30, 60], available=[500] * 3, model="independent", goal="decide", threshold=np.full(3, 0.1)
    )
    assert stats.beta.cdf(0.1, 1, 101) > 0.95  # stratum 0 is decided
    alloc = decision_allocation(st, 30)
    assert alloc.iloc[0] == 0 and alloc.sum() == 30
    f = forecast_decision(st)
    assert f.iloc[0] == 0 and (f.iloc[1:] > 0).all()


def test_costs_move_labels_to_the_cheap_twin():
    st = RuleState.from_counts(
        [3, 3], [30, 30], available=[500, 500], model="independent", goal="decide", threshold=np.full(2, 0.2)
    )
    even = decision_allocation(st, 20)
    costly = decision_allocation(st, 20, costs=np.array([1.0, 5.0]))
    assert even.sum() == costly.sum() == 20 and min(even) > 0  # identical strata share the batch
    assert costly.iloc[0] > costly.iloc[1] and costly.iloc[0] >= max(even)


def test_a_held_stratum_shares_a_batch_with_an_undecided_one():
    # stratum 1 (5 errors in 30: its own data lie above 0.16) is undecided; stratum 0 is decided
    # by the pooled posterior only, so neither is decided by its anytime test
    st = RuleState.from_counts(
        [3, 5] + [3] * 8,
        [25, 30] + [60] * 8,
        available=[500] * 10,
        goal="decide",
        threshold=np.full(10, 0.16),
        guarantee="stratum",
    )
    assert own_p(5, 30, 0.16) < 0.5 and own_p(3, 25, 0.16) < 0.95 and st.p_meets()[0] >= 0.95
    assert st.decisions()[:2].tolist() == ["undecided", "undecided"]
    alloc = decision_allocation(st, 20).to_numpy()
    assert alloc[0] > 0 and alloc[1] > 0 and alloc.sum() == 20 and (alloc[2:] == 0).all()
