"""Infeasible campaign targets are said at create time and by the forecast."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval import PrecisionLimitedWarning
from bayeseval.active import Campaign


def _pool():
    sizes = {"small": 46, "mid": 200, "large": 727}
    return pd.DataFrame({"g": np.repeat(list(sizes), list(sizes.values())), "pred": 0})


def test_create_warns_naming_the_strata_that_cannot_reach_the_target(tmp_path):
    with pytest.warns(PrecisionLimitedWarning, match=r"2 of 3 strata.*mid: 0\.0\d\d.*small: 0\.1\d\d"):
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred",
                            target_halfwidth=0.05)
    table = c.feasibility()
    rate = np.asarray(c.state().posterior.mean(), dtype=float)
    # independent reference: the Wilson half-width at all the stratum's rows and that rate
    for k, name in enumerate(table.index):
        n = int(table.loc[name, "max_trials"])
        lo, hi = proportion_confint(rate[k] * n, n, alpha=0.05, method="wilson")
        assert table.loc[name, "achievable_halfwidth"] == pytest.approx((hi - lo) / 2, abs=2e-3)
    assert table["feasible"].to_dict() == {"large": True, "mid": False, "small": False}


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
