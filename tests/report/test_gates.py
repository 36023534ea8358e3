"""Release gate: per-stratum minimum trials and maximum half-widths."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

import bayeseval as be
from bayeseval import Counts
from bayeseval._api.results import Result
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval.report.gates import GateResult, gate
from tests.helpers import (
    FAST,
    COUNTS_results_protocol_plots_cli,
    _close_figures,  # noqa: F401
    assert_raises_naming,
    count_arrays,
    levels,
)
from tests.report.helpers import COUNTS, _rows

matplotlib.use("Agg")


def test_stratified_and_gate_offer_the_adaptive_interval():
    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    ref = adaptive_interval(s, n)
    res = be.stratified_risk(s, n, [1 / 7] * 7, method="adaptive")
    np.testing.assert_array_equal(res.table["lower"].to_numpy(), ref.lower)
    np.testing.assert_array_equal(res.table["upper"].to_numpy(), ref.upper)
    assert res.method == "adaptive"
    # the population interval is the normal one, unaffected by the per-stratum method
    wil = be.stratified_risk(s, n, [1 / 7] * 7)
    assert res.ci == pytest.approx(wil.ci)
    from bayeseval.report.gates import gate

    g = gate(be.Counts.from_arrays(s, n), max_halfwidth=0.2, method="adaptive")
    np.testing.assert_allclose(g.table["halfwidth"].to_numpy(), (ref.upper - ref.lower) / 2)
    assert g.failing.index.tolist() == [6]  # half-width 0.25 for 9 of 20


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


def test_stratum_guarantee_judges_the_adaptive_interval_by_default():
    from bayeseval import evaluate, proportion_ci

    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    res = gate(Counts.from_arrays(s, n), max_halfwidth=0.08)
    assert res.guarantee == "stratum" and (res.table["method"] == "adaptive").all()
    lo, hi = proportion_ci(s, n, method="adaptive")
    np.testing.assert_allclose(res.table["halfwidth"], (hi - lo) / 2, rtol=1e-12)
    # the same interval as the report's (whose coverage tests/report/test_pipeline.py enumerates)
    rep = evaluate(Counts.from_arrays(s, n), random_seed=0)
    np.testing.assert_allclose(res.table[["lower", "upper"]], rep.table[["lower", "upper"]], rtol=1e-12)
    assert res.table["passed"].tolist() == ((hi - lo) / 2 <= 0.08).tolist()


def test_stratum_guarantee_falls_back_to_clopper_pearson_with_one_stratum():
    res = gate(Counts.from_arrays([5], [50], strata=["a"]), max_halfwidth=0.2)
    lo, hi = proportion_confint(5, 50, alpha=0.05, method="beta")  # Clopper-Pearson
    assert res.table.loc["a", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
    assert res.table.loc["a", "method"] == "clopper_pearson"
    res = gate(Counts.from_arrays([5, 9], [50, 80]), max_halfwidth=0.2, method="clopper_pearson")
    lo, hi = proportion_confint([5, 9], [50, 80], alpha=0.05, method="beta")
    np.testing.assert_allclose(res.table["lower"], lo, rtol=1e-9)


@pytest.mark.parametrize(("value", "error"), [("each", ValueError), (0.5, TypeError)])
def test_bad_guarantee_is_refused_naming_it(value, error):
    with pytest.raises(error, match=r"guarantee") as err:
        gate(Counts.from_arrays([5, 9], [50, 80]), max_halfwidth=0.1, guarantee=value)
    assert "['stratum', 'average']" in str(err.value) and repr(value) in str(err.value)


def test_the_gate_takes_a_guarantee_object_and_shows_its_name():
    counts = Counts.from_arrays([5, 9], [50, 80])
    res = gate(counts, max_halfwidth=0.2, method="clopper_pearson", guarantee=be.Guarantee.stratum())
    lo, hi = proportion_confint([5, 9], [50, 80], alpha=0.05, method="beta")
    np.testing.assert_allclose(res.table["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(res.table["upper"], hi, rtol=1e-9)
    assert res.guarantee == "stratum"
    average = gate(counts, max_halfwidth=0.2, guarantee=be.Guarantee.average())
    assert average.guarantee == "average" and (average.table["method"] == "wilson").all()
    with pytest.raises(ValueError, match="method 'wilson' does not cover every stratum"):
        gate(counts, max_halfwidth=0.2, method="wilson", guarantee=be.Guarantee.stratum())
    with pytest.raises(ValueError, match=r"guarantee.*\['stratum', 'average'\]"):
        gate(counts, max_halfwidth=0.2, guarantee=be.Guarantee.anytime())


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"method": "nope"}, ValueError, ["method", "'nope'"]),
        ({"metric": "nope"}, ValueError, ["metric", "'nope'"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"min_trials": -2}, ValueError, ["min_trials", "-2"]),
        ({"y_true": None}, TypeError, ["y_true", "None"]),
    ],
)
def test_gate_refuses_bad_arguments_before_counting(monkeypatch, kwargs, exc, words):
    from bayeseval.report import gates as gate_mod

    calls = []
    monkeypatch.setattr(gate_mod, "tabulate", lambda *a, **k: calls.append(1))
    args = {"y_true": "y", "y_pred": "p", "strata": "g", "max_halfwidth": 0.2, **kwargs}
    with pytest.raises(exc) as info:
        gate_mod.gate(_rows(), **args)
    for word in words:
        assert word in str(info.value)
    assert calls == []


def test_gate_refuses_row_arguments_with_counts():
    from bayeseval.report.gates import gate

    with pytest.raises(TypeError, match=r"strata.*'g'"):
        gate(COUNTS, strata="g", min_trials=5)


@FAST
@given(count_arrays(max_k=30, min_n=1), st.integers(1, 10**6), st.floats(0.001, 0.5), levels)
def test_gate_table_is_consistent(arrays, min_trials, max_halfwidth, level):
    s, n = arrays
    res = gate(Counts.from_arrays(s, n), min_trials=min_trials, max_halfwidth=max_halfwidth, level=level)
    t = res.table
    assert np.all((0 <= t["lower"]) & (t["lower"] <= t["upper"]) & (t["upper"] <= 1))
    expected = (t["trials"] >= min_trials) & (t["halfwidth"] <= max_halfwidth)
    assert t["passed"].tolist() == expected.tolist()
    assert res.passed == bool(expected.all())


def test_gate_bad_input_names_argument():
    c = Counts.from_arrays([1, 2], [10, 20])
    assert_raises_naming(gate, "min_trials", c, min_trials=0)
    assert_raises_naming(gate, "min_trials", c, min_trials=2.5)
    assert_raises_naming(gate, "max_halfwidth", c, max_halfwidth=1.5)
    assert_raises_naming(gate, "level", c, min_trials=5, level=1.2)
    assert_raises_naming(gate, "method", c, min_trials=5, method="bogus")


def test_gate_result_has_a_tidy_table_and_text():
    res = gate(COUNTS_results_protocol_plots_cli, max_halfwidth=0.087, guarantee="average")
    assert isinstance(res, Result) and isinstance(res, GateResult)
    # the half-widths are the Wilson intervals of statsmodels (the default under "average")
    lo, hi = proportion_confint([3, 5, 9], [40, 50, 60], alpha=0.05, method="wilson")
    np.testing.assert_allclose(res.table["halfwidth"], (hi - lo) / 2, rtol=1e-10)
    expected = (hi - lo) / 2 <= 0.087
    assert expected.tolist() == [True, True, False]
    assert res.table["passed"].tolist() == expected.tolist()
    assert res.to_frame().equals(res.table) and res.to_frame() is not res.table
    text = res.to_text()
    assert text.startswith(f"FAILED: {int((~expected).sum())} of 3 strata")
    assert str(res) == text
    # user text is escaped in the notebook display
    html = res._repr_html_()
    assert "&lt;c&gt;" in html and "<c>" not in html
    assert "failed (" in repr(res).splitlines()[0]
