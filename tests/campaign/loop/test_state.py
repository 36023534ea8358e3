"""Tests of ``bayeseval.campaign.loop.state``."""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayeseval import Guarantee
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.state import CampaignState

S, N = np.array([3, 0, 12]), np.array([40, 10, 90])


def test_from_counts_default_weights_are_row_shares():
    cs = CampaignState.from_counts([1, 2], [20, 30], available=[100, 300], pending=[5, 0])
    assert np.allclose(cs.weights, np.array([125, 330]) / 455)
    assert cs.labelled.tolist() == [20, 30] and cs.pending.tolist() == [5, 0]
    empty = CampaignState.from_counts([0, 0], [0, 0], available=[0, 0])
    assert empty.weights.tolist() == [0.5, 0.5]


def test_independent_interval_is_each_strata_beta_quantiles():
    cs = CampaignState.from_counts(S, N, available=[100] * 3, model="independent")
    for level in (0.9, 0.95):
        lo, hi = cs.interval(level)
        a = (1 - level) / 2
        np.testing.assert_allclose(lo, stats.beta.ppf(a, 1 + S, 1 + N - S), rtol=1e-9)
        np.testing.assert_allclose(hi, stats.beta.ppf(1 - a, 1 + S, 1 + N - S), rtol=1e-9)


def test_overall_is_the_moment_matched_beta_of_the_weighted_independent_rates():
    w = np.array([0.5, 0.2, 0.3])
    cs = CampaignState.from_counts(S, N, available=[100] * 3, weights=w, model="independent")
    a, b = 1.0 + S, 1.0 + N - S
    mean = float(w @ (a / (a + b)))
    var = float(w**2 @ (a * b / ((a + b) ** 2 * (a + b + 1))))
    k = mean * (1 - mean) / var - 1  # Beta with this mean and variance (closed form)
    got = cs.overall(0.95)
    assert abs(got[0] - mean) < 1e-9
    np.testing.assert_allclose(got[1:], stats.beta.ppf([0.025, 0.975], mean * k, (1 - mean) * k), rtol=1e-7)


def test_p_trial_is_the_beta_posterior_mean_unless_every_row_is_a_trial():
    cs = CampaignState.from_counts(S, N, available=[100] * 3, labelled=[80, 10, 100], trial_known=False)
    np.testing.assert_allclose(cs.p_trial(), (1 + N) / (2 + np.array([80, 10, 100])))
    assert CampaignState.from_counts(S, N, available=[100] * 3).p_trial().tolist() == [1.0] * 3


def test_the_posterior_is_cached_until_invalidated():
    cs = CampaignState.from_counts(S.copy(), N, available=[100] * 3, model="independent")
    first = cs.posterior
    assert cs.posterior is first
    cs.successes[0] = 20
    cs.invalidate()
    lo, _ = cs.interval(0.95)
    assert cs.posterior is not first
    assert abs(lo[0] - stats.beta.ppf(0.025, 21, 21)) < 1e-9


def test_rule_state_reads_its_counts_and_with_counts_keeps_the_goal():
    st = RuleState.from_counts(
        S, N, available=[100] * 3, model="independent", goal="decide", threshold=np.full(3, 0.1), guarantee="stratum"
    )
    assert st.counts.model == "independent" and st.successes is st.counts.successes
    assert st.posterior is st.counts.posterior
    new = st.with_counts(successes=np.array([0, 0, 0]))
    assert new.goal == st.goal and new.guarantee is Guarantee.stratum() and new.counts is not st.counts
    # the new counts give the scipy answer, the old state keeps its own
    below = new.p_meets()
    np.testing.assert_allclose(below, stats.beta.cdf(0.1, 1, 1 + N), rtol=1e-9)
    np.testing.assert_allclose(st.p_meets(), stats.beta.cdf(0.1, 1 + S, 1 + N - S), rtol=1e-9)
