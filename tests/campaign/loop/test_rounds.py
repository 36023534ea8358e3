"""A campaign's round from its spec: the state, the round's size and its allocation.

References: rows left and budgets counted by hand, SciPy's Beta quantiles for the independent
model's intervals, and the spec, which holds settings only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval import Guarantee
from bayeseval.campaign import CampaignSpec, Decide, Each
from bayeseval.campaign.loop.rounds import allocate, round_size, spec_state, spec_states
from bayeseval.campaign.loop.state import StrataDesign


def design(n_eligible=(500, 500), costs=None, threshold=None):
    k = len(n_eligible)
    return StrataDesign(
        pd.Index([f"s{j}" for j in range(k)]),
        n_rows=np.array(n_eligible) + 10,
        n_eligible=np.array(n_eligible),
        weights=np.full(k, 1.0 / k),
        prior_mean=None,
        costs=None if costs is None else np.asarray(costs, float),
        threshold=threshold,
    )


def test_the_state_counts_the_rows_left_and_carries_the_spec():
    spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.04), level=0.9, guarantee="average")
    st = spec_state(spec, design((100, 30)), successes=[3, 1], trials=[50, 20], labelled=[60, 20], pending=[10, 15])
    assert st.available.tolist() == [100 - 60 - 10, 0]  # never below zero
    assert (st.level, st.target_halfwidth, st.guarantee, st.model) == (0.9, 0.04, Guarantee.average(), "robust")


def test_a_rule_that_asks_for_the_independent_model_gets_it():
    spec = CampaignSpec(y_pred="pred", strata="g", rule="independent_beta", guarantee="average", level=0.95)
    st = spec_state(spec, design(), successes=[3, 0], trials=[40, 10], labelled=[40, 10], pending=[0, 0])
    assert st.model == "independent"
    lo, hi = st.intervals()
    ref = stats.beta.interval(0.95, 1 + np.array([3, 0]), 1 + np.array([37, 10]))
    np.testing.assert_allclose(lo, ref[0], rtol=1e-6)
    np.testing.assert_allclose(hi, ref[1], rtol=1e-6)


def test_several_metrics_share_the_rows_and_keep_their_counts():
    spec = CampaignSpec(y_pred="pred", strata="g", metric=("fpr", "fnr"))
    counts = {"fpr": ([2, 3], [30, 40]), "fnr": ([1, 1], [10, 12])}
    states = spec_states(spec, design(), counts=counts, labelled=[50, 60], pending=[5, 0])
    assert states.metrics == ["fpr", "fnr"]
    assert states.states["fpr"].successes.tolist() == [2, 3] and states.states["fnr"].trials.tolist() == [10, 12]
    assert states.available.tolist() == [445, 440]
    assert round_size(spec, states, 7) == 7


@pytest.mark.parametrize(
    ("budget", "batch", "expected"),
    [(None, None, 20), (None, 5, 5), (100, None, 100 - 70 - 15), (85, None, 0), (80, 30, 0)],
)
def test_the_round_is_the_batch_capped_by_the_budget_left(budget, batch, expected):
    spec = CampaignSpec(y_pred="pred", strata="g", batch_size=20, budget=budget, goal=Each(0.01))
    st = spec_state(spec, design(), successes=[3, 4], trials=[35, 35], labelled=[35, 35], pending=[15, 0])
    assert round_size(spec, st, batch) == expected


def test_a_round_is_zero_once_the_goal_is_met():
    spec = CampaignSpec(y_pred="pred", strata="g", batch_size=20, goal=Each(0.2), guarantee="average")
    st = spec_state(spec, design(), successes=[5, 5], trials=[400, 400], labelled=[400, 400], pending=[0, 0])
    assert st.is_done() and round_size(spec, st) == 0


def test_the_allocation_spends_the_round_within_the_rows_left():
    spec = CampaignSpec(y_pred="pred", strata="g", batch_size=40)
    st = spec_state(spec, design((500, 6)), successes=[0, 0], trials=[0, 0], labelled=[0, 0], pending=[0, 0])
    alloc = allocate(spec, st, 40, random_seed=np.random.default_rng(1))
    assert alloc.dtype == np.int64 and int(alloc.sum()) == 40 and 0 < alloc[1] <= 6


def test_with_costs_the_cheaper_stratum_gets_more_labels():
    """Two strata alike but for the label's cost: gain per unit cost favours the cheap one."""
    d = design(costs=[1.0, 4.0])
    spec = CampaignSpec(y_pred="pred", strata="g", batch_size=40, costs={"s0": 1.0, "s1": 4.0})
    st = spec_state(spec, d, successes=[5, 5], trials=[50, 50], labelled=[50, 50], pending=[0, 0])
    alloc = allocate(spec, st, 40, random_seed=np.random.default_rng(1), design=d)
    assert int(alloc.sum()) == 40 and alloc[0] > alloc[1]


def test_a_decision_goal_with_costs_skips_the_decided_stratum():
    """No error in 300 trials decides s0 against 0.1; s1 (10 in 100) sits on the threshold."""
    d = design(costs=[1.0, 1.0], threshold=np.array([0.1, 0.1]))
    spec = CampaignSpec(y_pred="pred", strata="g", batch_size=20, goal=Decide(0.1, "below"), costs=[1.0, 1.0])
    st = spec_state(spec, d, successes=[0, 10], trials=[300, 100], labelled=[300, 100], pending=[0, 0])
    assert st.decisions().tolist() == ["meets", "undecided"]
    alloc = allocate(spec, st, 20, random_seed=np.random.default_rng(1), design=d)
    assert alloc.tolist() == [0, 20]


def test_the_spec_holds_settings_only():
    for name in ("rule_state", "rule_states", "round_size", "allocate"):
        assert not hasattr(CampaignSpec, name)
