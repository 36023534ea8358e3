"""Tests of ``bayeseval.campaign.forecast``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.campaign.forecast import (
    decision_reach,
    forecast_decision,
    forecast_labels,
    target_feasibility,
)
from bayeseval.campaign.verdicts import RuleState
from tests.campaign.helpers import atypical_state


def _p_decided_scipy(a, b, m, thr, margin, level=0.95):
    """P(decided after m trials) by enumerating SciPy's Beta-binomial predictive."""
    y = np.arange(m + 1)
    pmf = stats.betabinom(m, a, b).pmf(y)
    post = stats.beta(a + y, b + m - y)
    p = post.cdf(thr)
    band = (post.ppf((1 - level) / 2) >= thr - margin) & (post.ppf((1 + level) / 2) <= thr + margin)
    return float(pmf @ ((p >= level) | (p <= 1 - level) | band))


def test_forecast_matches_brute_force():
    st = RuleState.from_counts([12, 3], [100, 30], available=[10_000, 10_000], model="independent")
    f = forecast_labels(st)
    hw = st.halfwidths()
    neff = st.posterior.n_eff().to_numpy()
    for j in range(2):
        m = next(m for m in range(100_000) if hw[j] * np.sqrt(neff[j] / (neff[j] + m)) <= 0.05)
        assert f.iloc[j] == m
    # and the forecast is close to what a Beta posterior actually needs (within 10%):
    # Beta(13 + 0.12 m, 89 + 0.88 m) half-width at 0.05
    need = next(
        m for m in range(0, 5000, 5)
        if np.diff(stats.beta.ppf([0.025, 0.975], 13 + 0.12 * m, 89 + 0.88 * m))[0] / 2 <= 0.05
    )
    assert abs(f.iloc[0] - need) <= 0.1 * need + 5


def test_average_guarantee_stops_on_the_posterior_interval():
    # independent model: each stratum's posterior is Beta(1 + s, 1 + n - s); the stop check
    # is its equal-tailed interval at level 0.95 (scipy.stats.beta.ppf)
    base = dict(available=[1000] * 3, model="independent", guarantee="average")
    st = RuleState.from_counts([5, 5, 5], [40, 40, 40], target_halfwidth=0.12, **base)
    hw = np.diff(stats.beta.ppf([0.025, 0.975], 6, 36))[0] / 2
    np.testing.assert_allclose(st.stop_halfwidths(), hw, rtol=1e-6)
    assert hw <= 0.12 and st.is_done() and forecast_labels(st).sum() == 0
    tight = RuleState.from_counts([5, 5, 5], [40, 40, 40], target_halfwidth=0.1, **base)
    assert hw > 0.1 and not tight.is_done() and forecast_labels(tight).sum() > 0
    read, lo, hi = tight.read_intervals()
    assert set(read) == {"own"} and lo[0] == pytest.approx(stats.beta.ppf(0.025, 6, 36))


def test_forecast_with_a_margin_is_where_a_decision_becomes_more_likely_than_not():
    st = RuleState.from_counts([1230], [10000], available=[10000], model="independent", goal="decide",
                               threshold=np.array([0.12]), margin=0.008)
    f = int(forecast_decision(st).iloc[0])
    a, b = 1 + 1230, 1 + 10000 - 1230  # the independent posterior Beta(1 + s, 1 + n - s)
    assert _p_decided_scipy(a, b, f, 0.12, 0.008) > 0.5 > _p_decided_scipy(a, b, int(f * 0.9), 0.12, 0.008)
    assert decision_reach(st).tolist() == [None]
    bare = RuleState.from_counts([1230], [10000], available=[10000], model="independent", goal="decide",
                                 threshold=np.array([0.12]))
    assert decision_reach(bare).tolist() == ["rows"]
    assert _p_decided_scipy(a, b, 10000, 0.12, 0.0) < 0.5  # no margin: out of reach of its rows


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


def test_forecast_labels_each_goal_matches_the_closed_form():
    # independent model: n_eff = a + b of the Beta posterior; labels needed so that
    # halfwidth * sqrt(n_eff / (n_eff + m)) <= target
    st = RuleState.from_counts([10], [100], available=[10_000], model="independent",
                               target_halfwidth=0.02)
    a, b = 11, 91
    lo, hi = stats.beta.ppf([0.025, 0.975], a, b)
    hw = (hi - lo) / 2
    m = int(np.ceil((a + b) * (hw / 0.02) ** 2 - (a + b)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = int(forecast_labels(st).iloc[0])
    assert abs(got - m) <= 1


def test_target_feasibility_recall_campaign_against_statsmodels():
    # recall: trials are the positives; 46-727 positives per stratum, target 0.05
    positives = np.array([46, 80, 150, 300, 727])
    rows = positives * 10
    table = target_feasibility(rows, 0.1, 0.05, strata=list("abcde"))
    for k, m in zip("abcde", positives, strict=True):
        lo, hi = proportion_confint(0.5 * m, m, alpha=0.05, method="wilson")
        assert table.loc[k, "achievable_halfwidth"] == pytest.approx((hi - lo) / 2, rel=1e-9)
        assert table.loc[k, "max_trials"] == pytest.approx(m)
    assert table["feasible"].tolist() == [False, False, False, False, True]
    with pytest.warns(PrecisionLimitedWarning, match=r"a: 0\.139"):
        target_feasibility(rows, 0.1, 0.05, strata=list("abcde"), warn=True)
    with pytest.raises(ValueError, match="p_trial"):
        target_feasibility(rows, 1.5, 0.05)
    with pytest.raises(ValueError, match="target_halfwidth"):
        target_feasibility(rows, 0.1, 0.0)
