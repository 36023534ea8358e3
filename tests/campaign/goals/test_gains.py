"""Tests of ``bayeseval.campaign.goals.gains``: what one more label is worth toward each goal."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval.campaign import Decide, Each, Gap, Overall
from bayeseval.campaign.goals.decide import decision_gains, undecided_excess
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.rules import expected_width
from tests.campaign.helpers import atypical_state


def betabinom_excess(a, b, thr, m, floor):
    """E[max(min(P, 1 - P) - floor, 0)] after m trials, by enumeration with SciPy."""
    y = np.arange(m + 1)
    w = stats.betabinom.pmf(y, m, a, b)
    p = stats.beta.cdf(thr, a + y, b + m - y)
    return float(w @ np.maximum(np.minimum(p, 1 - p) - floor, 0.0))


def test_undecided_excess_matches_enumeration_of_the_next_trials():
    a, b, thr, m, floor = 3.0, 17.0, 0.12, 6, 0.05
    y = np.arange(m + 1)
    pmf = stats.betabinom.pmf(y, m, a, b)
    p = stats.beta.cdf(thr, a + y, b + m - y)
    expected = float(pmf @ np.maximum(np.minimum(p, 1 - p) - floor, 0))
    assert undecided_excess(a, b, thr, m, floor) == pytest.approx(expected, rel=1e-10)


def test_a_stratum_decided_by_pooling_only_is_scored_on_its_own_posterior_and_gets_labels():
    s0, n0, thr = 3, 25, 0.16
    st = atypical_state(s0, n0, 3, thr, guarantee="stratum")
    assert st.p_meets()[0] >= 0.95 and st.decisions()[0] == "undecided"
    horizon = 10
    gain, p_trial, eligible = decision_gains(st, horizon)[:3]
    a, b = s0 + 0.5, n0 - s0 + 0.5
    ref = (betabinom_excess(a, b, thr, 0, 0.05) - betabinom_excess(a, b, thr, horizon, 0.05)) / horizon
    assert ref > 0.005
    # the 1e-3 tie-break is at most 1e-3 of the stratum's half-width
    assert abs(gain(0, 0.0) - ref) <= 1e-3 * st.halfwidths()[0]
    assert eligible[0]


def test_overall_gains_are_the_preposterior_variance_reduction_of_the_weighted_rate():
    # independent Beta(1 + s, 1 + n - s) posteriors: after t more trials the expected posterior
    # variance is Var * (a + b) / (a + b + t) (law of total variance), weighted by w^2
    s, n, w = np.array([3, 10, 40]), np.array([20, 60, 400]), np.array([0.2, 0.3, 0.5])
    st = RuleState.from_counts(s, n, available=[100] * 3, model="independent", goal="overall", weights=w)
    g = Overall(0.02).gains(st)
    a, b = 1.0 + s, 1.0 + n - s
    var = stats.beta.var(a, b)
    t = np.array([0.0, 2.0, 7.5])
    ref = w**2 * var * ((a + b) / (a + b + t) - (a + b) / (a + b + t + 1.0))
    np.testing.assert_allclose(g.every(t), ref, rtol=1e-9)
    np.testing.assert_allclose([g.one(j, t[j]) for j in range(3)], ref, rtol=1e-9)


def test_each_gains_one_and_every_agree_and_done_strata_get_nothing():
    st = RuleState.from_counts([2, 5, 30], [15, 400, 300], available=[200, 200, 200], target_halfwidth=0.05)
    g = Each(0.05).gains(st)
    t = np.array([0.0, 3.0, 11.0])
    assert g.every(t).tolist() == [g.one(j, t[j]) for j in range(3)]
    assert g.eligible.tolist() == (~st.stratum_done()).tolist() and g.eligible[0] and not g.eligible[1]


def _argmax_greedy(gains, state, batch):
    """The batch by a plain scan: each label to the eligible stratum of largest gain (first on ties)."""
    t = gains.p_trial * state.pending
    counts = np.zeros(len(state.strata), int)
    for _ in range(batch):
        g = [
            gains.one(j, t[j]) if gains.eligible[j] and counts[j] < state.available[j] else -np.inf
            for j in range(len(t))
        ]
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += gains.p_trial[j]
    return counts


@pytest.mark.parametrize(
    "goal, kw",
    [
        (Each(0.04), {}),
        (Overall(0.02), {"goal": "overall", "weights": [0.1, 0.2, 0.3, 0.4]}),
    ],
)
def test_the_width_rule_hands_out_the_batch_by_the_goals_gains(goal, kw):
    st = RuleState.from_counts(
        [2, 5, 9, 1], [15, 60, 80, 10], available=[300, 300, 6, 300], target_halfwidth=0.04, **kw
    )
    alloc = expected_width(st, 40, np.random.default_rng(0)).to_numpy()
    np.testing.assert_array_equal(alloc, _argmax_greedy(goal.gains(st), st, 40))


def test_decide_and_gap_gains_follow_their_goals():
    st = RuleState.from_counts(
        [0, 3], [100, 30], available=[500, 500], model="independent", goal="decide", threshold=np.array([0.1, 0.1])
    )
    assert stats.beta.cdf(0.1, 1, 101) > 0.95  # stratum 0 is decided: no gain is asked of it
    assert Decide(0.1).gains(st).eligible.tolist() == [False, True]
    gap = RuleState.from_counts([2, 9, 5], [40, 40, 40], available=[100] * 3, goal="gap", tolerance=0.05)
    g = Gap(0.05).gains(gap)
    lo, hi = gap.gap()["bounds"]
    neff = gap.posterior.n_eff().to_numpy()
    ref = (hi[0] - lo[0]) / 2 * (np.sqrt(neff[0] / neff[0]) - np.sqrt(neff[0] / (neff[0] + 1.0)))
    assert g.one(0, 0.0) == pytest.approx(ref, rel=1e-12)
