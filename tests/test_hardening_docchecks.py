"""Argument validation and Monte Carlo bookkeeping of the model checks and the active rules."""

import warnings

import numpy as np
import pytest
from scipy import stats

from bayeseval.campaign.forecast import forecast_labels
from bayeseval.campaign.posterior import independent_posterior
from bayeseval.campaign.state import RuleState
from bayeseval.checks import calibration_study, simulation_based_calibration


def test_calibration_study_mc_se_is_the_binomial_se_of_its_intervals():
    kw = dict(configurations=("exchangeable",), methods=("wilson",), n_strata=3, trials=20,
              random_seed=0)
    new = calibration_study(n_repeats=5, **kw)
    # 5 data sets x 3 strata: Monte Carlo SE of a proportion from 15 intervals
    cov = new["coverage"].iloc[0]
    assert new["mc_se"].iloc[0] == pytest.approx(np.sqrt(cov * (1 - cov) / 15))


def test_sbc_ranks_stay_within_draws():
    res = simulation_based_calibration(n_repeats=4, draws=19, bins=4, random_seed=1)
    assert len(res.ranks) == 4
    assert res.ranks.to_numpy().min() >= 0 and res.ranks.to_numpy().max() <= 19


def test_sbc_validation_names_the_new_arguments():
    with pytest.raises(ValueError, match="n_repeats.*1"):
        simulation_based_calibration(n_repeats=1)
    with pytest.raises(ValueError, match="draws.*0"):
        simulation_based_calibration(draws=0)


def test_mixture_posterior_sample_random_seed_is_keyword_only():
    post = independent_posterior([2, 30], [20, 100])
    with pytest.raises(TypeError):
        post.sample(5, 0)
    draws = post.sample(20_000, random_seed=0)
    # independent Beta(1 + s, 1 + n - s) posteriors (uniform prior): compare the means
    ref = stats.beta.mean(1 + np.array([2, 30]), 1 + np.array([18, 70]))
    assert np.allclose(draws.mean(axis=0), ref, atol=0.005)


def test_rule_state_from_counts_default_weights_are_row_shares():
    st = RuleState.from_counts([1, 2], [20, 30], available=[100, 300], pending=[5, 0])
    assert np.allclose(st.weights, np.array([125, 330]) / 455)


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
