"""Tests for bayeseval.estimate.compare: McNemar tests and the paired bootstrap."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from bayeseval import bootstrap_ci
from bayeseval._api.results import Result
from bayeseval._api.warnings import BayesevalWarning, ZeroVarianceWarning
from bayeseval.estimate.compare import (
    McNemarResult,
    PairedBootstrap,
    mcnemar,
    mcnemar_from_predictions,
    paired_bootstrap,
)
from tests.estimate.helpers import _raises_naming, _scipy_ci
from tests.helpers import FAST, TOL, _raises, _shared_hard, assert_raises_naming


def _pairs(n11: int, b: int, c: int, n22: int) -> tuple[np.ndarray, np.ndarray]:
    """correct_a, correct_b with the given 2x2 table (rows A right/wrong, cols B right/wrong)."""
    a = np.array([1] * n11 + [1] * b + [0] * c + [0] * n22, dtype=bool)
    bb = np.array([1] * n11 + [0] * b + [1] * c + [0] * n22, dtype=bool)
    return a, bb


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 40), st.integers(0, 60), st.integers(0, 60), st.integers(0, 40))
def test_mcnemar_matches_statsmodels(n11, b, c, n22):
    if n11 + b + c + n22 == 0:
        return
    a, bb = _pairs(n11, b, c, n22)
    table = [[n11, b], [c, n22]]
    res = mcnemar(a, bb, method="exact")
    assert (res.b, res.c) == (b, c)
    if b + c == 0:
        assert res.pvalue == 1.0
        return
    ref = sm_mcnemar(table, exact=True)
    assert res.statistic == ref.statistic
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12, rel=1e-12)
    ref = sm_mcnemar(table, exact=False, correction=True)
    res = mcnemar(a, bb, method="asymptotic")
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-12, rel=1e-12)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12, rel=1e-12)


@pytest.mark.parametrize("b, c", [(0, 5), (3, 9), (10, 10), (25, 12), (1, 0), (40, 61)])
def test_mcnemar_midp_closed_form(b, c):
    # mid-p: 2 * sum_{i < k} C(m, i) / 2^m + C(m, k) / 2^m, capped at 1, k = min(b, c)
    m, k = b + c, min(b, c)
    ref = min(1.0, (2 * sum(math.comb(m, i) for i in range(k)) + math.comb(m, k)) / 2**m)
    a, bb = _pairs(7, b, c, 3)
    res = mcnemar(a, bb, method="midp")
    assert res.pvalue == pytest.approx(ref, abs=1e-12, rel=1e-12)
    # mid-p is never above the exact p-value
    assert res.pvalue <= mcnemar(a, bb, method="exact").pvalue + 1e-15


def test_mcnemar_fields_and_predictions_helper():
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    pa = np.array([1, 0, 1, 0, 0, 1, 1, 0])  # wrong at 3, 5
    pb = np.array([0, 0, 1, 1, 1, 1, 1, 1])  # wrong at 0, 4, 5, 7
    res = mcnemar_from_predictions(y, pa, pb, method="exact")
    assert isinstance(res, McNemarResult)
    # b: A right & B wrong = rows 0, 4, 7; c: A wrong & B right = row 3
    assert (res.b, res.c, res.n) == (3, 1, 8)
    assert res.difference == pytest.approx((6 - 4) / 8)
    assert res.pvalue == pytest.approx(stats.binomtest(1, 4, 0.5).pvalue, abs=1e-12)


@pytest.mark.parametrize(
    "a, b, kwargs, exc, match",
    [
        ([1, 0], [1, 0, 1], {}, ValueError, "same length"),
        ([], [], {}, ValueError, "correct_a"),
        ([1, 2], [1, 0], {}, ValueError, "correct_a"),
        ([1, 0], [1, float("nan")], {}, ValueError, "correct_b"),
        ([1, 0], [1, 0], {"method": "fisher"}, ValueError, "method"),
        ("10", [1, 0], {}, TypeError, "correct_a"),
    ],
)
def test_mcnemar_bad_input(a, b, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        mcnemar(a, b, **kwargs)


def test_paired_interval_is_narrower_when_models_share_hard_rows():
    # pairing: the difference's interval is far narrower than either model's own
    rng = np.random.default_rng(20261129)
    y, a, b = _shared_hard(1500, rng)
    res = paired_bootstrap(y, a, b, metric="accuracy", random_seed=7)
    assert isinstance(res, PairedBootstrap)
    wa, wb = res.ci_a[1] - res.ci_a[0], res.ci_b[1] - res.ci_b[0]
    assert res.width < 0.6 * min(wa, wb)
    assert res.width < 0.5 * res.independent_width
    assert res.correlation > 0.7
    # point estimates are the plain accuracies
    assert res.estimate_a == pytest.approx(np.mean(a == y))
    assert res.difference == pytest.approx(np.mean(a == y) - np.mean(b == y))
    # the table and the sentence carry both widths
    assert res.table.loc["difference", "width"] == pytest.approx(res.width)
    assert f"{wa:.3g}" in res.sentence and f"{res.width:.3g}" in res.sentence
    assert "narrower" in res.sentence


def test_pattern_bootstrap_matches_row_bootstrap():
    # a named metric (multinomial over row patterns) and the same metric as a callable
    # (explicit row resampling) are the same bootstrap: intervals agree within MC error
    rng = np.random.default_rng(3)
    y, a, b = _shared_hard(600, rng)
    named = paired_bootstrap(y, a, b, metric="recall", random_seed=1, n_resamples=2000)

    def recall(yt, yp):
        return np.mean(yp[yt == 1] == 1)

    rows = paired_bootstrap(y, a, b, metric=recall, random_seed=2, n_resamples=1000)
    assert named.estimate_a == pytest.approx(rows.estimate_a)
    for x, z in ((named.ci, rows.ci), (named.ci_a, rows.ci_a), (named.ci_b, rows.ci_b)):
        assert x[0] == pytest.approx(z[0], abs=0.012)
        assert x[1] == pytest.approx(z[1], abs=0.012)


def test_bca_single_model_matches_scipy():
    # model A's own BCa interval for accuracy equals scipy.stats.bootstrap's BCa on the
    # per-row correctness (a mean) within Monte-Carlo error
    rng = np.random.default_rng(11)
    y, a, b = _shared_hard(800, rng)
    res = paired_bootstrap(y, a, b, metric="accuracy", method="bca", random_seed=5, n_resamples=4000)
    ref = stats.bootstrap(
        ((a == y).astype(float),), np.mean, method="BCa", n_resamples=4000, random_state=6
    ).confidence_interval
    assert res.ci_a[0] == pytest.approx(ref.low, abs=0.006)
    assert res.ci_a[1] == pytest.approx(ref.high, abs=0.006)


def test_weighted_metric_and_strata():
    rng = np.random.default_rng(5)
    n = 3000
    strata = rng.choice(["u", "v", "w"], n, p=[0.7, 0.2, 0.1])
    y, a, b = _shared_hard(n, rng)
    w = {"u": 0.2, "v": 0.3, "w": 0.5}
    res = paired_bootstrap(y, a, b, metric="error_rate", strata=strata, weights=w, random_seed=0)
    manual_a = sum(w[k] * np.mean(a[strata == k] != y[strata == k]) for k in w)
    manual_b = sum(w[k] * np.mean(b[strata == k] != y[strata == k]) for k in w)
    assert res.estimate_a == pytest.approx(manual_a, rel=1e-12)
    assert res.difference == pytest.approx(manual_a - manual_b, rel=1e-12)
    # weighted SE: sum w_k^2 var_k / n_k of the difference per stratum, normal approximation
    var = 0.0
    for k, wk in w.items():
        d = (a[strata == k] != y[strata == k]).astype(float) - (b[strata == k] != y[strata == k])
        var += wk**2 * d.var() / d.size
    normal_width = 2 * stats.norm.ppf(0.975) * math.sqrt(var)
    assert res.width == pytest.approx(normal_width, rel=0.12)
    # a sequence of weights is aligned with the sorted stratum labels
    res2 = paired_bootstrap(y, a, b, metric="error_rate", strata=strata, weights=[0.2, 0.3, 0.5], random_seed=0)
    assert res2.ci == res.ci


def test_reproducible_with_seed():
    rng = np.random.default_rng(9)
    y, a, b = _shared_hard(300, rng)
    r1 = paired_bootstrap(y, a, b, metric="accuracy", random_seed=42)
    r2 = paired_bootstrap(y, a, b, metric="accuracy", random_seed=42)
    r3 = paired_bootstrap(y, a, b, metric="accuracy", random_seed=43)
    assert r1.ci == r2.ci and r1.ci_a == r2.ci_a
    assert not np.array_equal(r1.replicates.to_numpy(), r3.replicates.to_numpy())


def test_warns_when_replicates_lose_all_trials():
    rng = np.random.default_rng(0)
    y = np.zeros(200, dtype=int)
    y[:3] = 1
    a = np.where(rng.random(200) < 0.1, 1 - y, y)
    b = y.copy()
    with (
        pytest.warns(BayesevalWarning, match="no trials"),
        pytest.warns(ZeroVarianceWarning, match=r"recall \(model B\) is 1: its interval \[1, 1\]"),
    ):
        res = paired_bootstrap(y, a, b, metric="recall", random_seed=1)
    assert res.n_resamples < 9999  # the default number of resamples; some were dropped
    assert res.ci_b == (1.0, 1.0)  # model B finds all 3 positives in every resample that has one


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(pred_b=[1, 0]), ValueError, "same length"),
        (dict(y_true=[]), ValueError, "y_true"),
        (dict(y_true=[1.0, float("nan"), 0.0]), ValueError, "y_true"),
        (dict(weights=[0.5, 0.5]), ValueError, "strata"),
        (dict(strata=["a", "b", "a"], weights=[0.5, 0.6]), ValueError, "weights"),
        (dict(strata=["a", "b"]), ValueError, "strata"),
        (dict(metric="auc"), ValueError, "metric"),
        (dict(method="bc"), ValueError, "method"),
        (dict(level=1.5), ValueError, "level"),
        (dict(level=0.0), ValueError, "level"),
        (dict(n_resamples=5), ValueError, "n_resamples"),
        (dict(y_true="abc"), TypeError, "y_true"),
    ],
)
def test_paired_bootstrap_bad_input(kwargs, exc, match):
    args = dict(y_true=[1, 0, 1], pred_a=[1, 0, 0], pred_b=[1, 1, 1], metric="accuracy")
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        paired_bootstrap(args.pop("y_true"), args.pop("pred_a"), args.pop("pred_b"), **args)


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(float("nan"))))
def test_paired_bootstrap_level_property(level):
    with pytest.raises((ValueError, TypeError), match="level"):
        paired_bootstrap([1, 0, 1], [1, 0, 0], [1, 1, 1], level=level)


def test_independent_errors_pairing_gains_little():
    # models whose errors are independent: the paired interval is about as wide as the
    # independent one (sqrt(wa^2 + wb^2)), and the sentence says pairing gains little
    rng = np.random.default_rng(21)
    n = 2000
    y = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.2, 1 - y, y)
    b = np.where(rng.random(n) < 0.2, 1 - y, y)
    res = paired_bootstrap(y, a, b, metric="accuracy", random_seed=3)
    assert abs(res.correlation) < 0.15
    assert res.width == pytest.approx(res.independent_width, rel=0.1)
    assert "gains little" in res.sentence


def test_fractional_labels_are_refused_naming_the_argument():
    y = [0, 1, 1, 0]
    with pytest.raises(ValueError, match=r"^pred_b holds the fractional value 0\.7"):
        mcnemar_from_predictions(y, [0, 1, 0, 0], [0, 0.7, 1, 0])
    with pytest.raises(ValueError, match=r"^y_true holds the fractional value 0\.999999"):
        paired_bootstrap([0, 0.999999, 1, 0] * 5, [0, 1, 0, 0] * 5, [0, 1, 1, 0] * 5, n_resamples=99, random_seed=0)


def test_paired_callable_metric_equals_scipy():
    # a callable metric is resampled by rows: model A's interval is SciPy's bootstrap of A's
    # per-row correctness and the difference's that of (correct_a, correct_b), same stream
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 120)
    a = np.where(rng.random(120) < 0.2, 1 - y, y)
    b = np.where(rng.random(120) < 0.3, 1 - y, y)
    ca, cb = (a == y).astype(float), (b == y).astype(float)

    def accuracy(t, p):
        return np.mean(t == p)

    res = paired_bootstrap(y, a, b, metric=accuracy, n_resamples=1000, random_seed=4)
    lo, hi, _ = _scipy_ci((ca,), np.mean, method="BCa", n_resamples=1000, seed=4)
    assert res.ci_a == pytest.approx((lo, hi), abs=TOL)
    lo, hi, _ = _scipy_ci(
        (ca, cb), lambda u, v, axis=-1: np.mean(u, axis) - np.mean(v, axis), method="BCa", n_resamples=1000, seed=4
    )
    assert res.ci == pytest.approx((lo, hi), abs=TOL)


def test_both_functions_share_the_default_policy():
    a = inspect.signature(bootstrap_ci).parameters
    b = inspect.signature(paired_bootstrap).parameters
    for name in ("method", "n_resamples", "pos_label", "level"):
        assert a[name].default == b[name].default, name
    assert (a["method"].default, a["n_resamples"].default, a["pos_label"].default) == ("bca", 9999, None)
    for params in (a, b):
        assert params["random_seed"].kind is inspect.Parameter.KEYWORD_ONLY


def test_paired_functions_refuse_missing_values():
    y, a, b = [1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 1, 1]
    _raises_naming(lambda: paired_bootstrap(y, [1, None, None, 1], b, n_resamples=50), "pred_a has 2 missing")
    _raises_naming(
        lambda: paired_bootstrap(pd.Series(y, dtype="Int64").where([True, False, True, True]), a, b, n_resamples=50),
        "y_true has 1 missing",
    )
    _raises_naming(
        lambda: paired_bootstrap(y, a, b, strata=[0.0, np.nan, 1.0, 1.0], n_resamples=50), "strata has 1 missing"
    )
    _raises_naming(lambda: mcnemar_from_predictions(y, a, [1, 0, np.nan, 1]), "pred_b has 1 missing")
    _raises_naming(lambda: mcnemar([1, 0, None], [1, 1, 0]), "correct_a has 1 missing")


def test_pandas_inputs_are_paired_by_label():
    rng = np.random.default_rng(9)
    n = 120
    idx = [f"r{i}" for i in range(n)]
    y = pd.Series(rng.integers(0, 2, n), index=idx)
    a = pd.Series(np.where(rng.random(n) < 0.2, 1 - y, y), index=idx)
    b = pd.Series(np.where(rng.random(n) < 0.3, 1 - y, y), index=idx)
    s = pd.Series(rng.choice(["u", "v"], n), index=idx)
    perm = rng.permutation(n)
    ref = paired_bootstrap(
        y.to_numpy(), a.to_numpy(), b.to_numpy(), strata=s.to_numpy(), metric="recall", n_resamples=300, random_seed=1
    )
    got = paired_bootstrap(
        y, a.iloc[perm], b.iloc[perm[::-1]], strata=s.iloc[perm], metric="recall", n_resamples=300, random_seed=1
    )
    assert got.ci == ref.ci and got.estimate_a == ref.estimate_a
    _raises_naming(
        lambda: paired_bootstrap(y, a.set_axis([f"x{i}" for i in range(n)]), b, n_resamples=50),
        "y_true and pred_a have different index labels",
    )
    errors = (a != y).astype(float)
    ref_ci = bootstrap_ci(
        errors.to_numpy(),
        "weighted_risk",
        strata=s.to_numpy(),
        weights={"u": 0.4, "v": 0.6},
        n_resamples=300,
        random_seed=2,
    )
    got_ci = bootstrap_ci(
        errors, "weighted_risk", strata=s.iloc[perm], weights={"u": 0.4, "v": 0.6}, n_resamples=300, random_seed=2
    )
    assert tuple(got_ci) == tuple(ref_ci)


def test_labels_mixing_numbers_and_strings_are_refused():
    # int truth against str predictions never match: refused, naming both arguments
    _raises_naming(
        lambda: paired_bootstrap([1, 0, 1], ["1", "0", "1"], [1, 0, 0], n_resamples=50),
        "y_true holds numbers, pred_a holds strings",
    )
    _raises_naming(
        lambda: mcnemar_from_predictions([1, 0, 1], [1, 0, 1], np.array([1, "0", 1], dtype=object)),
        "pred_b holds mixed types",
    )
    _raises_naming(
        lambda: bootstrap_ci((np.array(["a", "b", "a"]), np.array([1, 0, 1])), "f1", pos_label="a", n_resamples=50),
        "data[0] (y_true) holds strings",
    )


def test_mcnemar_pairs_series_by_label_and_refuses_missing():
    from scipy.stats import binomtest

    from bayeseval import mcnemar
    from bayeseval.estimate.compare import mcnemar_from_predictions

    idx = [f"r{i}" for i in range(12)]
    a = pd.Series([1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1], index=idx)
    b = pd.Series([0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1], index=idx)
    res = mcnemar(a, b.iloc[::-1])
    assert (res.b, res.c) == (5, 1)  # A right, B wrong: r0..r4; A wrong, B right: r7
    assert res.pvalue == pytest.approx(binomtest(1, 6, 0.5).pvalue)
    y = pd.Series(np.ones(12, dtype=int), index=idx)
    res2 = mcnemar_from_predictions(y, a.iloc[::-1], b.sample(frac=1.0, random_state=0))
    assert (res2.b, res2.c) == (5, 1)
    _raises(lambda: mcnemar([1, None, 0], [1, 1, 0]), "correct_a", "[1]")
    _raises(
        lambda: mcnemar_from_predictions([1, 0, 1], [1, 0, 1], np.array([1, pd.NA, 0], dtype=object)), "pred_b", "[1]"
    )


@FAST
@given(
    st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300),
    st.sampled_from(["exact", "midp", "asymptotic"]),
)
def test_mcnemar_pvalue_in_unit_interval(pairs, method):
    a, b = map(np.array, zip(*pairs, strict=True))
    res = mcnemar(a, b, method=method)
    assert 0.0 <= res.pvalue <= 1.0
    assert res.b == int(np.sum(a & ~b)) and res.c == int(np.sum(~a & b))


def test_mcnemar_bad_input_names_argument():
    assert_raises_naming(mcnemar, "correct_a", [1, 0, 1], [1, 0])
    assert_raises_naming(mcnemar, "correct_a", [1, 2, 1], [1, 0, 1])
    assert_raises_naming(mcnemar, "correct_b", [1, 0, 1], [1, float("nan"), 1])
    assert_raises_naming(mcnemar, "method", [1, 0, 1], [1, 0, 1], method="bogus")


def test_paired_bootstrap_bad_input_names_argument():
    from bayeseval import paired_bootstrap

    y = [0, 1, 1, 0, 1]
    assert_raises_naming(paired_bootstrap, "level", y, y, y, level=0.0)
    assert_raises_naming(paired_bootstrap, "n_resamples", y, y, y, n_resamples=0)
    assert_raises_naming(paired_bootstrap, "method", y, y, y, method="bogus")


def test_mcnemar_result_table_matches_scipy_binomial_test():
    rng = np.random.default_rng(0)
    a = rng.random(300) < 0.8
    b = np.where(rng.random(300) < 0.15, ~a, a)
    res = mcnemar(a, b)
    n01, n10 = int((a & ~b).sum()), int((~a & b).sum())
    ref = stats.binomtest(n01, n01 + n10, 0.5).pvalue
    assert isinstance(res, McNemarResult) and isinstance(res, Result)
    row = res.table.loc["exact"]
    assert (row["b"], row["c"], row["n"]) == (n01, n10, 300)
    assert row["pvalue"] == pytest.approx(ref, rel=1e-12)
    assert row["difference"] == pytest.approx(a.mean() - b.mean())
    assert res.table.index.name == "test"
    assert "McNemar test" in repr(res)


def test_paired_bootstrap_is_a_frozen_result_with_its_table():
    y = np.array([1, 0] * 100)
    a, b = y.copy(), y.copy()
    a[:20] = 1 - a[:20]
    b[:30] = 1 - b[:30]
    res = paired_bootstrap(y, a, b, metric="accuracy", n_resamples=500, random_seed=0)
    assert isinstance(res, PairedBootstrap) and isinstance(res, Result)
    est = res.table["estimate"]
    assert est.to_dict() == pytest.approx({"model_a": 0.9, "model_b": 0.85, "difference": 0.05})
    assert res.to_frame().columns.tolist() == ["estimate", "lower", "upper", "width"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.table = None
    assert str(res) == res.sentence
    assert repr(res).splitlines()[0] == "Paired bootstrap"


def test_a_perfect_model_warns_that_its_zero_width_interval_is_not_certainty():
    # model B is right on every row, so every resample gives it accuracy 1: its bootstrap
    # interval is [1, 1], while Clopper-Pearson on 100 of 100 (scipy) reaches down to 0.964
    from scipy import stats

    y = np.array([0, 1] * 50)
    a = y.copy()
    a[:10] = 1 - a[:10]
    with pytest.warns(ZeroVarianceWarning, match=r"accuracy \(model B\) is 1"):
        res = paired_bootstrap(y, a, y, random_seed=0, n_resamples=999)
    assert res.ci_b == (1.0, 1.0) and stats.beta.ppf(0.025, 100, 1) < 0.97
    text = res.sentence  # no division by the zero width
    assert "wider than model B's (0)" in text and "correlation is undefined" in text
    # the difference interval keeps its width: model A's 10 errors vary across resamples
    assert res.ci[0] < -0.1 < res.ci[1] < 0
