"""Release gate: per-stratum minimum trials and maximum half-widths."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval import Counts
from bayeseval.gate import gate


def test_gate_flags_exactly_the_strata_that_miss_each_criterion():
    counts = Counts.from_arrays([5, 40, 30], [50, 400, 120], strata=["a", "b", "c"])
    res = gate(counts, min_trials=100, max_halfwidth=0.05, guarantee="average")
    # half-widths from statsmodels' Wilson interval (the default under "average")
    lo, hi = proportion_confint([5, 40, 30], [50, 400, 120], alpha=0.05, method="wilson")
    hw = (np.asarray(hi) - np.asarray(lo)) / 2
    np.testing.assert_allclose(res.table["halfwidth"].to_numpy(), hw, rtol=0, atol=1e-12)
    expected_fail = [s for s, n, h in zip("abc", [50, 400, 120], hw, strict=True) if n < 100 or h > 0.05]
    assert list(res.failing.index) == expected_fail
    assert not res.passed
    assert "FAILED" in res.to_text() and "a" in res.to_text()


def test_gate_passes_when_every_stratum_is_wide_enough_and_large_enough():
    res = gate(Counts.from_arrays([100, 90], [1000, 900], strata=["x", "y"]), max_halfwidth=0.03)
    assert res.passed
    assert res.to_text().startswith("PASSED")


def test_gate_on_a_frame_counts_the_metric_trials():
    df = pd.DataFrame({"y": [1] * 10 + [0] * 10, "p": [1] * 8 + [0] * 2 + [0] * 10, "g": ["a"] * 20})
    res = gate(df, y_true="y", y_pred="p", strata="g", metric="recall", min_trials=11)
    assert res.table.loc["a", "trials"] == 10  # recall trials are the 10 true positives
    assert not res.passed


def test_empty_stratum_fails_the_gate():
    res = gate(Counts.from_arrays([0, 5], [0, 500], strata=["e", "f"]), min_trials=10)
    assert list(res.failing.index) == ["e"]
    assert res.table.loc["e", "reason"] == "no trials"


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        ({}, ValueError, "min_trials"),
        ({"min_trials": 0}, ValueError, "min_trials"),
        ({"max_halfwidth": 1.5}, ValueError, "max_halfwidth"),
        ({"max_halfwidth": 0.1, "level": 2}, ValueError, "level"),
    ],
)
def test_gate_rejects_bad_criteria(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        gate(Counts.from_arrays([1], [10]), **kwargs)
