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


# -- the sampling design -------------------------------------------------------------------------
def _epochs(seed: int = 3) -> pd.DataFrame:
    """Items answered several times (1-6 answers), some with partial credit, in three strata."""
    rng = np.random.default_rng(seed)
    items = pd.DataFrame({"item": np.arange(90), "g": np.repeat(["a", "b", "c"], 30)})
    items["p"] = rng.beta(2, 1, len(items))
    items["k"] = rng.integers(1, 7, len(items))
    df = items.loc[items.index.repeat(items["k"])].reset_index(drop=True)
    df["ok"] = (rng.random(len(df)) < df["p"]).astype(float)
    df.loc[df.index % 7 == 0, "ok"] = 0.5
    df["y"] = 1
    df["pred"] = (df["ok"] >= 1).astype(int)
    return df


def test_gate_by_unit_judges_each_stratums_unit_interval():
    from bayeseval._kernels.bounded_mean import unit_ci

    df = _epochs()
    res = gate(df, outcome="ok", strata="g", metric="accuracy", design=be.Design(cluster="item"), min_trials=60)
    # reference: each stratum's histogram of (item sum, item size) built by groupby, through the kernel
    per_item = df.groupby(["g", "item"])["ok"].agg(["sum", "size"])
    for g, part in per_item.groupby(level="g"):
        hist = part.groupby(["sum", "size"]).size().reset_index(name="units")
        _, lo, hi = unit_ci(hist["sum"].to_numpy(float), hist["size"].to_numpy(np.int64), hist["units"].to_numpy())
        row = res.table.loc[g]
        assert (row["lower"], row["upper"]) == (lo, hi)
        assert row["halfwidth"] == (hi - lo) / 2
        assert row["n_units"] == 30 and row["trials"] == part["size"].sum()
        assert row["method"] == "units"
    # min_trials counts trials (rows), as without a design
    trials = df.groupby("g").size()
    assert res.table["passed"].tolist() == (trials >= 60).tolist()
    # the half-width criterion reads the unit interval, so clustering widens what the rows would claim
    tight = gate(df, outcome="ok", strata="g", metric="accuracy", design=be.Design(cluster="item"), max_halfwidth=0.1)
    assert not tight.passed and "half-width" in tight.failing["reason"].iloc[0]


@pytest.mark.parametrize(
    ("metric", "guarantee", "method"),
    [("error_rate", "stratum", None), ("recall", "stratum", "clopper_pearson"), ("accuracy", "average", None)],
)
def test_gate_binary_rows_in_units_of_one_row_are_todays_gate(metric, guarantee, method):
    df = _epochs()
    df["pred"] = (np.arange(len(df)) % 3 != 0).astype(int)
    df["y"] = (np.arange(len(df)) % 5 != 0).astype(int)
    df = df.drop(columns="item")  # rows that repeat no identifier: today's gate warns of nothing
    df["row"] = np.arange(len(df))
    kw = {"y_true": "y", "y_pred": "pred", "strata": "g", "metric": metric, "guarantee": guarantee}
    kw |= {"method": method, "min_trials": 50, "max_halfwidth": 0.09}
    today = gate(df, **kw)
    by_row = gate(df, design=be.Design(cluster="row"), **kw)
    assert by_row.table["n_units"].tolist() == today.table["trials"].tolist()
    pd.testing.assert_frame_equal(by_row.table.drop(columns="n_units"), today.table, check_exact=True)
    assert by_row.passed == today.passed


def test_gate_of_a_whole_pool_has_zero_halfwidth_at_the_pool_rate():
    df = _epochs()
    res = gate(
        df, y_true="y", y_pred="pred", strata="g", design=be.Design(cluster="item", population="pool"),
        max_halfwidth=0.001, min_trials=100,
    )  # fmt: skip
    rate = (1 - df["pred"]).groupby(df["g"]).sum() / df.groupby("g").size()  # error rate of every row of the pool
    np.testing.assert_array_equal(res.table["lower"].to_numpy(), rate.to_numpy())
    np.testing.assert_array_equal(res.table["upper"].to_numpy(), rate.to_numpy())
    assert (res.table["halfwidth"] == 0).all() and (res.table["method"] == "whole pool").all()
    assert res.table["passed"].tolist() == (df.groupby("g").size() >= 100).tolist()


def test_gate_refuses_designs_it_cannot_honour():
    df = _epochs()
    rows = {"y_true": "y", "y_pred": "pred", "strata": "g", "min_trials": 5}
    assert_raises_naming(gate, "design.inclusion", df, design=be.Design(inclusion="p"), **rows)
    assert_raises_naming(gate, "design", Counts.from_arrays([1], [5]), design=be.Design(cluster="item"), min_trials=5)
    assert_raises_naming(gate, "outcome", Counts.from_arrays([1], [5]), outcome="ok", min_trials=5)
    # a binomial method cannot be honoured when the interval is the units' or the pool is known
    unit = {"outcome": "ok", "strata": "g", "min_trials": 5, "method": "clopper_pearson"}
    assert_raises_naming(gate, "method", df, design=be.Design(cluster="item"), **unit)
    assert_raises_naming(gate, "method", df, design=be.Design(population="pool"), **rows, method="clopper_pearson")


def test_cli_gate_takes_outcome_and_design(tmp_path, capsys):
    import json

    from bayeseval.cli.main import main

    df = _epochs()
    path = tmp_path / "answers.csv"
    df.to_csv(path, index=False)
    base = ["gate", str(path), "--outcome", "ok", "--strata", "g", "--metric", "accuracy", "--json"]
    assert main([*base, "--cluster", "item", "--max-halfwidth", "0.5"]) == 0
    out = pd.DataFrame(json.loads(capsys.readouterr().out)["strata"]).set_index("g")
    ref = gate(df, outcome="ok", strata="g", metric="accuracy", design=be.Design(cluster="item"), max_halfwidth=0.5)
    np.testing.assert_allclose(out["halfwidth"].to_numpy(), ref.table["halfwidth"].to_numpy(), rtol=0, atol=1e-9)
    assert out["n_units"].tolist() == [30, 30, 30]
    assert main([*base, "--population", "pool", "--max-halfwidth", "0.01"]) == 0
    assert [r["halfwidth"] for r in json.loads(capsys.readouterr().out)["strata"]] == [0.0] * 3
    assert main([*base, "--inclusion", "p", "--min-trials", "5"]) == 2
    assert "design.inclusion" in capsys.readouterr().err
