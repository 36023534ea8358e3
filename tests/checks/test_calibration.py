"""Tests of ``bayeseval.checks.calibration``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval.checks import calibration_study, simulation_based_calibration


def test_calibration_study_offers_the_adaptive_and_read_intervals():
    from bayeseval.checks import calibration_study

    with pytest.raises(ValueError, match=r"unknown methods 'fab'.*'adaptive', 'read'"):
        calibration_study(("exchangeable",), n_repeats=2, methods=("fab",))


def test_calibration_study_coverage():
    t = calibration_study(("exchangeable", "outlier"), n_repeats=60, random_seed=4)
    t = t.set_index(["configuration", "method"])
    for config in ("exchangeable", "outlier"):
        row = t.loc[(config, "wilson")]
        # 720 intervals; Wilson near nominal at n = 40, p = 0.1 (Brown, Cai & DasGupta 2001)
        assert abs(row["coverage"] - 0.95) < 0.03
        assert t.loc[(config, "clopper_pearson"), "coverage"] >= 0.95  # conservative
        assert t.loc[(config, "wald"), "coverage"] < 0.92  # Wald under-covers at p = 0.1
        # hierarchical: near nominal over all strata and narrower than Wilson
        assert t.loc[(config, "hierarchical"), "coverage"] > 0.91
        assert t.loc[(config, "hierarchical"), "mean_width"] < row["mean_width"]
    # the outlying stratum alone: pooling pulls it toward the rest and under-covers it
    out = t.loc["outlier (outlying stratum)"]
    assert out.loc["hierarchical", "coverage"] < out.loc["wilson", "coverage"] - 0.05


@pytest.mark.slow
def test_calibration_study_full():
    t = calibration_study(n_repeats=300, random_seed=5).set_index(["configuration", "method"])
    for config in ("exchangeable", "outlier", "unequal_sizes"):
        assert abs(t.loc[(config, "wilson"), "coverage"] - 0.95) < 0.02
        assert abs(t.loc[(config, "hierarchical"), "coverage"] - 0.95) < 0.03
        assert abs(t.loc[(config, "jeffreys"), "coverage"] - 0.95) < 0.025


def test_simulation_based_calibration_uniform_and_detects_a_wrong_prior():
    ok = simulation_based_calibration(n_repeats=100, random_seed=1).table.set_index("parameter")
    assert (ok["p_value"] > 0.01).all()
    # fitting with a prior far from the simulating one: ranks pile up, test rejects
    bad = simulation_based_calibration(
        n_repeats=100, random_seed=1, fit_prior={"kappa": stats.lognorm(0.3, scale=300)}
    ).table.set_index("parameter")
    assert bad.loc["kappa", "p_value"] < 1e-6
    assert bad.loc["theta[0]", "p_value"] < 1e-3


def test_input_errors_name_the_argument():
    with pytest.raises(ValueError, match="configurations"):
        calibration_study(("bimodal",), n_repeats=2)
    with pytest.raises(ValueError, match="trials"):
        simulation_based_calibration(trials=[10])
    with pytest.raises(ValueError, match="methods"):
        calibration_study(methods=("bayes",), n_repeats=2)


def test_calibration_study_mc_se_is_the_binomial_se_of_its_intervals():
    kw = dict(configurations=("exchangeable",), methods=("wilson",), n_strata=3, trials=20, random_seed=0)
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
