"""Infeasible campaign targets are said at create time and by the forecast."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval import PrecisionLimitedWarning
from bayeseval.campaign import Campaign


def _pool():
    sizes = {"small": 46, "mid": 200, "large": 727}
    return pd.DataFrame({"g": np.repeat(list(sizes), list(sizes.values())), "pred": 0})


def _label_everything(c, truth):
    while len(batch := c.propose(500)):
        c.ingest(pd.DataFrame({"row": batch.index, "label": truth.loc[batch.index].to_numpy()}),
                 id_column="row", label_column="label")


def test_the_achievable_halfwidth_is_what_the_campaign_reaches_labelled_to_the_end(tmp_path):
    # every stratum at an error rate of exactly 0.5, the planning rate at creation (the prior
    # mean), and a target no stratum can meet: the campaign labels every row of every stratum
    sizes = {"small": 40, "mid": 120, "large": 300}
    pool = pd.DataFrame({"g": np.repeat(list(sizes), list(sizes.values())), "pred": 0,
                         "truth": np.concatenate([[0, 1] * (n // 2) for n in sizes.values()])})
    expected = r"3 of 3 strata \(achievable half-width per stratum, every row labelled"
    with pytest.warns(PrecisionLimitedWarning, match=expected) as record:
        c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", target_halfwidth=0.03,
                            random_seed=0, guarantee="average")
    assert np.allclose(c.state().posterior.mean(), 0.5)  # the planning rate
    table = c.feasibility()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        _label_everything(c, pool["truth"])
        status = c.status()
    assert status["labelled"].to_dict() == sizes and not status["done"].any()
    assert (table["max_trials"] == status["trials"]).all()
    # independent reference: the half-width the campaign ends with, every row labelled
    np.testing.assert_allclose(table["achievable_halfwidth"], status["halfwidth"], rtol=1e-9)
    message = str(record[0].message)
    for name, hw in status["halfwidth"].items():
        assert f"{name}: {hw:.3f}" in message
    # the own-data Wilson half-width, the figure before, overstates it (0.148 against 0.107)
    lo, hi = proportion_confint(20, 40, alpha=0.05, method="wilson")
    assert (hi - lo) / 2 > status.loc["small", "halfwidth"] + 0.03
    c.close()


def test_create_warns_naming_the_strata_that_cannot_reach_the_target(tmp_path):
    with pytest.warns(PrecisionLimitedWarning, match=r"2 of 3 strata.*mid: 0\.0\d\d.*small: 0\.\d\d\d"):
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred",
                            target_halfwidth=0.05)
    table = c.feasibility()
    assert table["feasible"].to_dict() == {"large": True, "mid": False, "small": False}
    assert table["max_trials"].to_dict() == {"large": 727, "mid": 200, "small": 46}
    c.close()


def test_a_feasible_target_is_silent_and_the_forecast_repeats_the_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionLimitedWarning)
        Campaign.create(tmp_path / "ok.db", _pool(), strata="g", y_pred="pred", target_halfwidth=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred",
                            target_halfwidth=0.05)
    with pytest.warns(PrecisionLimitedWarning, match="small"):
        c.forecast()
