"""Release gate: per-stratum minimum trials and maximum half-widths."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval import Counts
from bayeseval.report.gates import gate


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


# -- the guarantee ------------------------------------------------------------------------------
def test_stratum_guarantee_judges_the_adaptive_interval_by_default():
    from bayeseval import evaluate, proportion_ci

    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    res = gate(Counts.from_arrays(s, n), max_halfwidth=0.08)
    assert res.guarantee == "stratum" and (res.table["method"] == "adaptive").all()
    lo, hi = proportion_ci(s, n, method="adaptive")
    np.testing.assert_allclose(res.table["halfwidth"], (hi - lo) / 2, rtol=1e-12)
    # the same interval as the report's (whose coverage tests/test_report.py enumerates)
    rep = evaluate(Counts.from_arrays(s, n), random_seed=0)
    np.testing.assert_allclose(res.table[["lower", "upper"]], rep.table[["lower", "upper"]],
                               rtol=1e-12)
    assert res.table["passed"].tolist() == ((hi - lo) / 2 <= 0.08).tolist()


def test_stratum_guarantee_falls_back_to_clopper_pearson_with_one_stratum():
    res = gate(Counts.from_arrays([5], [50], strata=["a"]), max_halfwidth=0.2)
    lo, hi = proportion_confint(5, 50, alpha=0.05, method="beta")  # Clopper-Pearson
    assert res.table.loc["a", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
    assert res.table.loc["a", "method"] == "clopper_pearson"
    res = gate(Counts.from_arrays([5, 9], [50, 80]), max_halfwidth=0.2, method="clopper_pearson")
    lo, hi = proportion_confint([5, 9], [50, 80], alpha=0.05, method="beta")
    np.testing.assert_allclose(res.table["lower"], lo, rtol=1e-9)


def test_stratum_guarantee_refuses_a_method_without_exact_coverage():
    counts = Counts.from_arrays([5, 9], [50, 80])
    for method in ("wilson", "wald", "jeffreys", "agresti_coull"):
        with pytest.raises(ValueError, match=rf"method '{method}' does not cover every stratum.*"
                                             r"\['adaptive', 'clopper_pearson'\]"):
            gate(counts, max_halfwidth=0.1, method=method)
    res = gate(counts, max_halfwidth=0.1, method="wald", guarantee="average")
    lo, hi = proportion_confint([5, 9], [50, 80], alpha=0.05, method="normal")
    np.testing.assert_allclose(res.table["lower"], np.clip(lo, 0, 1), rtol=1e-9)
    assert res.guarantee == "average" and (res.table["method"] == "wald").all()


@pytest.mark.parametrize(("value", "error"), [("each", ValueError), (0.5, TypeError)])
def test_bad_guarantee_is_refused_naming_it(value, error):
    with pytest.raises(error, match=r"guarantee") as err:
        gate(Counts.from_arrays([5, 9], [50, 80]), max_halfwidth=0.1, guarantee=value)
    assert "['stratum', 'average']" in str(err.value) and repr(value) in str(err.value)
