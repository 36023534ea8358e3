"""Goal "decide" with a pooled model under ``guarantee="stratum"``: a stratum the pooled posterior
decides while its own anytime test does not is planned on its own data.

References: SciPy's Beta CDF (the own-data Jeffreys posterior ``Beta(s + 1/2, n - s + 1/2)``)
and the Beta-binomial predictive enumerated with ``scipy.stats.betabinom`` (the expected
undecidedness the allocation scores).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayeseval.campaign.decision import decision_allocation, decision_gains
from bayeseval.campaign.forecast import forecast_decision
from bayeseval.campaign.state import RuleState


def atypical_state(s0, n0, others, threshold, **kw) -> RuleState:
    """Stratum 0 with s0 errors in n0 among nine strata with ``others`` errors in 60."""
    return RuleState.from_counts([s0] + [others] * 9, [n0] + [60] * 9, available=[500] * 10, goal="decide",
                                 threshold=np.full(10, threshold), **kw)


def own_p(s, n, threshold):
    return float(stats.beta.cdf(threshold, s + 0.5, n - s + 0.5))


def betabinom_excess(a, b, thr, m, floor):
    """E[max(min(P, 1 - P) - floor, 0)] after m trials, by enumeration with SciPy."""
    y = np.arange(m + 1)
    w = stats.betabinom.pmf(y, m, a, b)
    p = stats.beta.cdf(thr, a + y, b + m - y)
    return float(w @ np.maximum(np.minimum(p, 1 - p) - floor, 0.0))


def test_a_stratum_decided_by_pooling_only_is_scored_on_its_own_posterior_and_gets_labels():
    s0, n0, thr = 3, 25, 0.16
    st = atypical_state(s0, n0, 3, thr, guarantee="stratum")
    assert st.p_meets()[0] >= 0.95 and st.decisions()[0] == "undecided"
    horizon = 10
    gain, p_trial, eligible = decision_gains(st, horizon)
    a, b = s0 + 0.5, n0 - s0 + 0.5
    ref = (betabinom_excess(a, b, thr, 0, 0.05) - betabinom_excess(a, b, thr, horizon, 0.05)) / horizon
    assert ref > 0.005
    # the 1e-3 tie-break is at most 1e-3 of the stratum's half-width
    assert abs(gain(0, 0.0) - ref) <= 1e-3 * st.halfwidths()[0]
    assert eligible[0]



def test_a_held_stratum_shares_a_batch_with_an_undecided_one():
    # stratum 1 (5 errors in 30: its own data lie above 0.16) is undecided; stratum 0 is decided
    # by the pooled posterior only, so neither is decided by its anytime test
    st = RuleState.from_counts([3, 5] + [3] * 8, [25, 30] + [60] * 8, available=[500] * 10, goal="decide",
                               threshold=np.full(10, 0.16), guarantee="stratum")
    assert own_p(5, 30, 0.16) < 0.5 and own_p(3, 25, 0.16) < 0.95 and st.p_meets()[0] >= 0.95
    assert st.decisions()[:2].tolist() == ["undecided", "undecided"]
    alloc = decision_allocation(st, 20).to_numpy()
    assert alloc[0] > 0 and alloc[1] > 0 and alloc.sum() == 20 and (alloc[2:] == 0).all()


def test_the_forecast_of_a_held_stratum_comes_from_its_own_posterior():
    s0, n0, thr = 3, 25, 0.16
    st = atypical_state(s0, n0, 3, thr, guarantee="stratum")
    m = int(forecast_decision(st).iloc[0])
    a, b = s0 + 0.5, n0 - s0 + 0.5

    def p_undecided(k):
        y = np.arange(k + 1)
        p = stats.beta.cdf(thr, a + y, b + k - y)
        return float(stats.betabinom.pmf(y, k, a, b) @ (np.minimum(p, 1 - p) > 0.05))

    assert m > 1
    assert p_undecided(m) <= 0.5 < p_undecided(m - 1)
