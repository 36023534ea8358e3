"""Input hardening: pandas inputs paired by index label, missing row values, counts that
are not exact.

Three defect classes, each pinned by regression tests and hypothesis properties:

* alignment: two or more pandas inputs are paired by index label, never by position; the
  result on permuted inputs equals the result on pre-aligned inputs (checked against an
  independent reference: statsmodels, closed forms, hand counts); label sets that differ or
  duplicate labels are a ValueError naming the arguments;
* missing values (NaN, None, pd.NA, NaT) in row-level inputs are a ValueError naming the
  argument and the first position (or, where offered, dropped with ``dropna=True``);
* counts above 2**53 (not exact as float64) or totals beyond int64 are a ValueError naming
  the argument, checked with exact integer arithmetic.
"""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint
from test_reliability import FAST, SLOWER, assert_raises_naming

from bayeseval import (
    BayesevalWarning,
    Counts,
    clustered_risk,
    proportion_ci,
    proportion_se,
    stratified_risk,
)
from bayeseval.counts.counts import as_counts
from bayeseval.estimate.classic import error_reject_curve, estimate_error, risk_averaging
from bayeseval.estimate.intervals import f1_score
from bayeseval.estimate.stratified import reweight, weighted_metric
from bayeseval.plan import allocate, risk_variance, se_for

MISSING = [np.nan, None, pd.NA]
SM_METHOD = {"wilson": "wilson", "clopper_pearson": "beta", "agresti_coull": "agresti_coull",
             "wald": "normal"}


@contextmanager
def _silenced():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        yield


def _quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        return fn(*args, **kwargs)


def _raises(fn, *names, **kwargs):
    """fn(**kwargs) raises ValueError whose message names every string in ``names``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        with pytest.raises(ValueError) as info:
            fn(**kwargs)
    for name in names:
        assert re.search(re.escape(str(name)), str(info.value)), (name, str(info.value))
    return str(info.value)


# =========================================================================== alignment
def test_counts_from_arrays_pairs_series_by_label_issue_example():
    c = Counts.from_arrays(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "a"]))
    assert list(c.strata) == ["a", "b"]
    assert c.successes.to_dict() == {"a": 1, "b": 2}
    assert c.trials.to_dict() == {"a": 3, "b": 10}
    c2 = as_counts(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "a"]))
    assert c2.trials.to_dict() == {"a": 3, "b": 10}


def test_proportion_ci_and_se_pair_series_by_label():
    s = pd.Series([1, 2, 30], index=["a", "b", "c"])
    n = pd.Series([10, 3, 40], index=["b", "a", "c"])  # a: 1/3, b: 2/10, c: 30/40
    lo, hi = proportion_ci(s, n, method="wilson")
    ref_lo, ref_hi = proportion_confint([1, 2, 30], [3, 10, 40], alpha=0.05, method="wilson")
    assert list(lo.index) == ["a", "b", "c"]
    np.testing.assert_allclose(lo.to_numpy(), ref_lo, atol=1e-12)
    np.testing.assert_allclose(hi.to_numpy(), ref_hi, atol=1e-12)
    se = _quietly(proportion_se, s, n)
    p = np.array([1 / 3, 2 / 10, 30 / 40])
    np.testing.assert_allclose(se.to_numpy(), np.sqrt(p * (1 - p) / [3, 10, 40]), rtol=1e-12)


@pytest.mark.parametrize(
    "fn",
    [proportion_ci, proportion_se, Counts.from_arrays, as_counts,
     lambda s, n: stratified_risk(s, n, {"a": 0.5, "b": 0.5})],
)
def test_different_label_sets_name_both_arguments(fn):
    s = pd.Series([1, 2], index=["a", "b"])
    n = pd.Series([10, 3], index=["b", "c"])
    msg = _raises(lambda: fn(s, n), "successes", "trials")
    assert "'a'" in msg and "'c'" in msg


@pytest.mark.parametrize("fn", [proportion_ci, Counts.from_arrays, proportion_se])
def test_duplicate_labels_are_refused(fn):
    s = pd.Series([1, 2], index=["a", "a"])
    n = pd.Series([10, 3], index=["b", "a"])
    _raises(lambda: fn(s, n), "successes", "duplicate", "'a'")


def test_identical_indexes_are_paired_as_given_even_with_duplicates():
    # same index object on both sides: label pairing equals position pairing, nothing to refuse
    idx = pd.Index(["a", "a"])
    lo, _ = proportion_ci(pd.Series([1, 2], index=idx), pd.Series([10, 3], index=idx))
    ref, _ = proportion_confint([1, 2], [10, 3], method="wilson")
    np.testing.assert_allclose(lo.to_numpy(), ref, atol=1e-12)


def test_weights_with_duplicate_labels_name_weights():
    _raises(lambda: stratified_risk([1, 2], [10, 20], pd.Series([0.5, 0.5], index=["a", "a"]),
                                    strata=["a", "b"]), "weights", "duplicate")


def test_stratified_risk_pairs_series_and_weights_by_label():
    s = pd.Series([26, 26], index=["a", "b"])
    n = pd.Series([114, 286], index=["b", "a"])
    w = pd.Series([0.2, 0.8], index=["b", "a"])
    res = _quietly(stratified_risk, s, n, w)
    r = np.array([26 / 286, 26 / 114])
    assert res.estimate == pytest.approx(0.8 * r[0] + 0.2 * r[1], rel=1e-12)
    se = np.sqrt(0.8**2 * r[0] * (1 - r[0]) / 286 + 0.2**2 * r[1] * (1 - r[1]) / 114)
    assert res.se == pytest.approx(se, rel=1e-12)


def test_clustered_risk_pairs_row_series_by_label():
    rng = np.random.default_rng(3)
    k = 200
    y = rng.integers(0, 2, k)
    g = rng.choice(["a", "b"], k)
    cl = rng.integers(0, 40, k)
    idx = pd.Index([f"r{i}" for i in range(k)])
    perm = rng.permutation(k)
    ref = _quietly(clustered_risk, y, weights={"a": 0.3, "b": 0.7}, strata=g, cluster=cl)
    got = _quietly(
        clustered_risk,
        pd.Series(y, index=idx),
        weights={"a": 0.3, "b": 0.7},
        strata=pd.Series(g, index=idx).iloc[perm],
        cluster=pd.Series(cl, index=idx).iloc[perm[::-1]],
    )
    assert got.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert got.se == pytest.approx(ref.se, rel=1e-12)
    # and the estimate is the closed form on the aligned rows
    rates = {s: y[g == s].mean() for s in ("a", "b")}
    assert got.estimate == pytest.approx(0.3 * rates["a"] + 0.7 * rates["b"], rel=1e-12)


def test_weighted_metric_pairs_series_by_label():
    y = pd.Series([1, 1, 1, 0, 0, 0], index=list("abcdef"))
    p = pd.Series([1, 0, 0, 0, 1, 1], index=list("fedcba"))  # aligned: a1 b1 c0 d0 e0 f1
    g = pd.Series(["x", "y", "x", "y", "x", "y"], index=list("cbafed"))  # aligned: a x, b y ...
    res = _quietly(weighted_metric, y, p, strata=g, weights={"x": 0.5, "y": 0.5},
                   metric="accuracy")
    yt = np.array([1, 1, 1, 0, 0, 0])
    yp = np.array([1, 1, 0, 0, 0, 1])
    gg = np.array(["x", "y", "x", "y", "x", "y"])
    acc = {s: np.mean(yt[gg == s] == yp[gg == s]) for s in ("x", "y")}
    assert res.report.loc["accuracy", "reweighted"] == pytest.approx(0.5 * acc["x"] + 0.5 * acc["y"])
    assert res.report.loc["accuracy", "unweighted"] == pytest.approx(np.mean(yt == yp))
    _raises(lambda: weighted_metric(y, p.rename(index={"a": "z"}), weights=0.5),
            "y_true", "y_pred")


def test_risk_averaging_and_error_reject_curve_pair_by_label():
    proba = pd.DataFrame({"p0": [0.9, 0.6, 0.3], "p1": [0.1, 0.4, 0.7]}, index=["u", "v", "w"])
    strata = pd.Series(["a", "b", "b"], index=["w", "v", "u"])  # u: b, v: b, w: a
    out = risk_averaging(proba, strata=strata)
    assert out.to_dict() == pytest.approx({"a": 0.3, "b": (0.1 + 0.4) / 2})
    y = pd.Series([1, 0, 1], index=["w", "v", "u"])  # u: 1 (wrong), v: 0 (right), w: 1 (right)
    curve = error_reject_curve(proba, y, thresholds=[0.5])
    assert curve["error_of_accepted"].iloc[0] == pytest.approx(1 / 3)


def test_estimate_error_pairs_frame_and_series_by_label():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.metrics import zero_one_loss

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 2)), index=[f"r{i}" for i in range(60)])
    y = pd.Series((X[0] + 0.3 * rng.normal(size=60) > 0).astype(int), index=X.index)
    shuffled = y.sample(frac=1.0, random_state=1)
    table = estimate_error(LinearDiscriminantAnalysis(), X, shuffled, methods=("resubstitution",))
    ref = zero_one_loss(y, LinearDiscriminantAnalysis().fit(X, y).predict(X))
    assert table["estimate"].iloc[0] == pytest.approx(ref)


def test_planning_pairs_per_stratum_series_by_label():
    w = pd.Series([0.8, 0.2], index=["a", "b"])
    rates = pd.Series([0.30, 0.05], index=["b", "a"])
    assert allocate(500, w, rates).to_dict() == allocate(500, w, [0.05, 0.30]).to_dict()
    n = pd.Series([114, 286], index=["b", "a"])
    v = risk_variance(w, rates, n)
    assert v == pytest.approx(0.64 * 0.05 * 0.95 / 286 + 0.04 * 0.3 * 0.7 / 114, rel=1e-12)
    _raises(lambda: allocate(500, w, pd.Series([0.1, 0.2], index=["a", "a"])), "rates", "duplicate")
    se = se_for(pd.Series([0.5, 0.1], index=["x", "y"]), pd.Series([400, 100], index=["y", "x"]))
    assert se.to_dict() == pytest.approx({"x": np.sqrt(0.25 / 100), "y": np.sqrt(0.09 / 400)})


def test_f1_score_pairs_series_by_label():
    yt = pd.Series([1, 1, 0, 0], index=list("abcd"))
    yp = pd.Series([0, 1, 0, 1], index=list("dcba"))  # aligned: a1 b0 c1 d0
    # tp = 1 (a), fp = 1 (c), fn = 1 (b): F1 = 2 / 4
    assert f1_score(yt, yp) == pytest.approx(0.5)


# ====================================================================== missing values
@pytest.mark.parametrize("na", MISSING)
def test_weighted_metric_missing_truth_is_an_error_issue_example(na):
    y = pd.Series([1, na, 0, 1], dtype=object)
    _raises(lambda: weighted_metric(y, [1, 0, 0, 1], weights=0.3), "y_true", "[1]")
    _raises(lambda: weighted_metric([1, 0, 0, 1], [1, 0, na, 1], weights=0.3),
            "y_pred", "[2]")
    _raises(lambda: weighted_metric([1, 0, 0, 1], [1, 0, 0, 1], strata=["a", na, "b", "a"],
                                    weights={"a": 0.5, "b": 0.5}), "strata", "[1]")


def test_weighted_metric_nullable_and_dropna():
    y = pd.Series([1, pd.NA, 0, 1, 1, 0], dtype="Int64")
    p = [1, 0, 0, 0, 1, 1]
    _raises(lambda: weighted_metric(y, p, weights=0.3), "y_true", "1 missing")
    got = _quietly(weighted_metric, y, p, weights=0.3, metric="recall", dropna=True)
    # kept rows: y = 1 0 1 1 0, p = 1 0 0 1 1 -> recall 2/3
    assert got.report.loc["recall", "unweighted"] == pytest.approx(2 / 3)
    assert got.row_weights.size == 5


@pytest.mark.parametrize("na", MISSING)
def test_row_functions_refuse_missing_values(na):
    proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    _raises(lambda: error_reject_curve(proba, np.array([0, na, 1], dtype=object)), "y_true", "[1]")
    _raises(lambda: risk_averaging(proba, strata=np.array(["a", na, "b"], dtype=object)),
            "strata", "[1]")
    _raises(lambda: risk_averaging(np.array([0.2, na, 0.7], dtype=object)), "proba", "[1]")
    _raises(lambda: reweight(np.array(["a", "b", na], dtype=object), {"a": 0.5, "b": 0.5}),
            "strata", "[2]")
    _raises(lambda: f1_score([1, 0, 1], np.array([1, na, 0], dtype=object)), "y_pred", "[1]")
    y = np.array([1, 0, 1, 0, 1, 0], dtype=object)
    y[3] = na
    _raises(lambda: clustered_risk(y, weights=None, cluster=[1, 1, 2, 2, 3, 3]), "outcomes", "[3]")
    _raises(lambda: clustered_risk([1, 0, 1, 0], weights={"a": 0.5, "b": 0.5},
                                   strata=np.array(["a", "b", na, "b"], dtype=object),
                                   cluster=[1, 1, 2, 2]), "strata", "[2]")
    _raises(lambda: clustered_risk([1, 0, 1, 0], cluster=np.array([1, na, 2, 2], dtype=object)),
            "cluster", "[1]")


def test_risk_averaging_no_longer_drops_missing_strata_silently():
    proba = [0.9, 0.2, 0.5, 0.3]
    _raises(lambda: risk_averaging(proba, strata=["a", "a", None, "b"]), "strata", "[2]")
    out = risk_averaging(proba, strata=["a", "a", None, "b"], dropna=True)
    assert out.to_dict() == pytest.approx({"a": (0.1 + 0.2) / 2, "b": 0.3})


def test_estimate_error_refuses_missing_labels():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.array([0, 1] * 10, dtype=object)
    y[7] = None
    _raises(lambda: estimate_error(LinearDiscriminantAnalysis(), X, y), "y", "[7]")
    y = pd.Series([0.0, 1.0] * 10)
    y[4] = np.nan
    _raises(lambda: estimate_error(LinearDiscriminantAnalysis(), X, y), "y", "[4]")


def test_counts_with_missing_entries_name_the_argument():
    _raises(lambda: proportion_ci(pd.Series([1, pd.NA], dtype=object), [3, 4]), "successes", "missing")
    _raises(lambda: Counts.from_arrays([1, 2], pd.Series([3, None], dtype="Int64")), "trials")


# ============================================================================ overflow
def test_overflowing_counts_are_refused_issue_examples():
    _raises(lambda: proportion_ci(1e19, 1e20), "successes", "2**53")
    _raises(lambda: proportion_ci(2**53 + 1, 2**53), "successes", str(2**53 + 1))
    _raises(lambda: proportion_ci(5, 2**53 + 1), "trials", str(2**53 + 1))
    big = [2**53] * 1025  # each exact, the total 2**63 + 2**53 is past int64
    _raises(lambda: Counts.from_arrays(big, big), "successes", "2**63")
    _raises(lambda: Counts.from_arrays([0] * 1025, big), "trials", "2**63")


def test_exact_limits_are_accepted_and_totals_stay_exact():
    lo, hi = proportion_ci(2**53, 2**53, method="clopper_pearson")
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 2**53), abs=1e-15)
    c = Counts.from_arrays([2**53 - 1] * 1023, [2**53] * 1023)
    assert c.total_trials == 1023 * 2**53  # exact Python int, no wrap
    assert c.total_successes == 1023 * (2**53 - 1)


@pytest.mark.parametrize(
    "value",
    [np.uint64(2**63), np.array([2**63], dtype=np.uint64), 2**70, [1, 2**64], np.int64(2**62)],
)
def test_huge_integers_of_every_container_are_refused(value):
    _raises(lambda: proportion_ci(0, value), "trials")
    _raises(lambda: Counts.from_arrays(np.zeros(np.size(value), dtype=int), value), "trials")


def test_sum_of_counts_can_overflow_a_stratum_in_counts_add():
    a = Counts.from_arrays([2**52 + 1], [2**52 + 1], strata=["x"])
    _raises(lambda: a + a, "successes", "2**53")


# ================================================================== hypothesis properties
@st.composite
def labelled_counts(draw, max_k: int = 12):
    k = draw(st.integers(2, max_k))
    n = np.array(draw(st.lists(st.integers(1, 10**6), min_size=k, max_size=k)), dtype=np.int64)
    frac = np.array(draw(st.lists(st.floats(0, 1), min_size=k, max_size=k)))
    s = np.floor(frac * n).astype(np.int64)
    labels = [f"s{i}" for i in range(k)]
    perm = np.array(draw(st.permutations(range(k))))
    return s, n, labels, perm


@given(labelled_counts(), st.sampled_from(sorted(SM_METHOD)))
@FAST
def test_permuted_series_give_the_aligned_statsmodels_interval(data, method):
    s, n, labels, perm = data
    ss = pd.Series(s, index=labels)
    nn = pd.Series(n, index=labels).iloc[perm]
    with _silenced():
        lo, hi = proportion_ci(ss, nn, method=method)
        se = proportion_se(ss, nn)
    ref_lo, ref_hi = proportion_confint(s, n, alpha=0.05, method=SM_METHOD[method])
    assert list(lo.index) == labels and list(se.index) == labels
    np.testing.assert_allclose(lo.to_numpy(), np.clip(ref_lo, 0, 1), atol=1e-9)
    np.testing.assert_allclose(hi.to_numpy(), np.clip(ref_hi, 0, 1), atol=1e-9)
    np.testing.assert_allclose(se.to_numpy(), np.sqrt(s / n * (1 - s / n) / n), rtol=1e-12)
    c = Counts.from_arrays(ss, nn)
    assert c.trials.to_dict() == dict(zip(labels, n.tolist(), strict=True))


@given(labelled_counts())
@FAST
def test_permuted_stratified_risk_equals_the_closed_form(data):
    s, n, labels, perm = data
    w = np.arange(1, len(s) + 1, dtype=float)
    w /= w.sum()
    with _silenced():
        res = stratified_risk(pd.Series(s, index=labels), pd.Series(n, index=labels).iloc[perm],
                              pd.Series(w, index=labels).iloc[perm[::-1]])
    r = s / n
    assert res.estimate == pytest.approx(float(np.sum(w * r)), rel=1e-9, abs=1e-15)
    assert res.se == pytest.approx(float(np.sqrt(np.sum(w**2 * r * (1 - r) / n))), rel=1e-9, abs=1e-15)


@given(labelled_counts(), st.sampled_from(["extra", "renamed"]))
@FAST
def test_label_sets_that_differ_are_refused_naming_both(data, how):
    s, n, labels, perm = data
    other = list(labels)
    if how == "renamed":
        other[0] = "zz"
    nn = pd.Series(n, index=other).iloc[perm]
    if how == "extra":
        nn = pd.concat([nn, pd.Series([5], index=["zz"])])
    for fn in (proportion_ci, proportion_se, Counts.from_arrays):
        _raises(lambda fn=fn: fn(pd.Series(s, index=labels), nn), "successes", "trials", "zz")


@st.composite
def rows(draw, max_n: int = 60):
    n = draw(st.integers(4, max_n))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    g = np.array(draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n)))
    g[:2] = ["a", "b"]
    perm = np.array(draw(st.permutations(range(n))))
    return y, p, g, perm


@given(rows())
@SLOWER
def test_permuted_rows_give_the_aligned_result(data):
    y, p, g, perm = data
    idx = pd.Index([f"r{i}" for i in range(y.size)])
    ys, ps, gs = pd.Series(y, index=idx), pd.Series(p, index=idx), pd.Series(g, index=idx)
    shares = {"a": 0.4, "b": 0.6}
    with _silenced():
        got = weighted_metric(ys, ps.iloc[perm], strata=gs.iloc[perm[::-1]],
                              weights=shares, metric="error_rate")
        sr = clustered_risk(ys, weights=shares, strata=gs.iloc[perm], cluster=ps.iloc[perm[::-1]])
    err = {k: np.mean((y != p)[g == k]) for k in ("a", "b")}
    assert got.report.loc["error_rate", "reweighted"] == pytest.approx(0.4 * err["a"] + 0.6 * err["b"])
    rate = {k: np.mean(y[g == k]) for k in ("a", "b")}
    assert sr.estimate == pytest.approx(0.4 * rate["a"] + 0.6 * rate["b"])
    proba = pd.Series(np.linspace(0.05, 0.95, y.size), index=idx)
    ra = risk_averaging(proba, strata=gs.iloc[perm])
    risk = np.minimum(proba.to_numpy(), 1 - proba.to_numpy())
    assert ra.to_dict() == pytest.approx({k: risk[g == k].mean() for k in ("a", "b")})
    assert f1_score(ys, ps.iloc[perm]) == pytest.approx(f1_score(y, p), nan_ok=True)


@given(rows(), st.sampled_from(MISSING), st.data())
@FAST
def test_a_missing_value_anywhere_names_the_argument_and_position(data, na, draw):
    y, p, g, _ = data
    i = draw.draw(st.integers(0, y.size - 1))
    which = draw.draw(st.sampled_from(["y_true", "y_pred", "strata"]))
    cols = {"y_true": y.astype(object), "y_pred": p.astype(object), "strata": g.astype(object)}
    cols[which][i] = na
    _raises(lambda: weighted_metric(cols["y_true"], cols["y_pred"], strata=cols["strata"],
                                    weights={"a": 0.5, "b": 0.5}), which, f"[{i}]")
    if which == "y_true":
        _raises(lambda: error_reject_curve(np.full(y.size, 0.3), cols["y_true"]), "y_true", f"[{i}]")
        _raises(lambda: f1_score(cols["y_true"], p), "y_true", f"[{i}]")
    if which == "strata":
        _raises(lambda: risk_averaging(np.full(y.size, 0.3), strata=cols["strata"]), "strata", f"[{i}]")
        _raises(lambda: reweight(cols["strata"], {"a": 0.5, "b": 0.5}), "strata", f"[{i}]")
        _raises(lambda: clustered_risk(y, weights={"a": 0.5, "b": 0.5}, strata=cols["strata"],
                                       cluster=np.arange(y.size)), "strata", f"[{i}]")


@given(
    st.lists(st.integers(0, 2**53), min_size=1, max_size=20),
    st.integers(2**53 + 1, 2**63 - 1),
    st.data(),
)
@FAST
def test_huge_counts_are_refused_exactly(trials, huge, draw):
    trials = np.array(trials, dtype=np.int64)
    i = draw.draw(st.integers(0, trials.size - 1))
    bad = trials.copy()
    bad[i] = huge
    assert_raises_naming(proportion_ci, "trials", np.zeros_like(bad), bad)
    assert_raises_naming(Counts.from_arrays, "successes", bad, np.full(bad.size, 2**63 - 1))
    # every count <= 2**53 is accepted and its total is exact (Python int arithmetic)
    with _silenced():
        c = Counts.from_arrays(np.zeros_like(trials), trials)
    if sum(int(t) for t in trials) <= 2**63 - 1:
        assert c.total_trials == sum(int(t) for t in trials)


def test_counts_constructor_pairs_series_by_label():
    c = Counts(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "a"]))
    assert c.trials.to_dict() == {"a": 3, "b": 10} and list(c.strata) == ["a", "b"]
    _raises(lambda: Counts(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "c"])),
            "successes", "trials", "'c'")


def test_planning_missing_per_stratum_values_are_value_errors():
    _raises(lambda: allocate(100, [0.5, 0.5], rates=[0.1, pd.NA]), "rates", "[1]")
    _raises(lambda: risk_variance([0.5, 0.5], [0.1, 0.2], pd.Series([10, pd.NA], dtype=object)),
            "counts", "[1]")


@given(labelled_counts(), st.sampled_from(["optimal", "proportional", "equal_precision"]))
@FAST
def test_permuted_planning_series_equal_the_aligned_plan(data, method):
    s, n, labels, perm = data
    w = np.arange(1, len(n) + 1, dtype=float)
    w /= w.sum()
    rates = np.clip(s / n, 0.01, 0.99)
    ws = pd.Series(w, index=labels)
    rs = pd.Series(rates, index=labels).iloc[perm]
    ns = pd.Series(n, index=labels).iloc[perm[::-1]]
    got = allocate(1000, ws, rs, method=method)
    assert list(got.index) == labels
    assert got.tolist() == allocate(1000, w, rates, method=method).tolist()
    assert risk_variance(ws, rs, ns) == pytest.approx(float(np.sum(w**2 * rates * (1 - rates) / n)),
                                                      rel=1e-12)
    se = se_for(rs, ns)
    np.testing.assert_allclose(se.reindex(labels).to_numpy(), np.sqrt(rates * (1 - rates) / n),
                               rtol=1e-12)


@given(rows())
@FAST
def test_permuted_error_reject_curve_equals_the_hand_count(data):
    y, p, _, perm = data
    idx = pd.Index([f"r{i}" for i in range(y.size)])
    p1 = np.linspace(0.02, 0.98, y.size)
    proba = pd.Series(p1, index=idx)
    curve = error_reject_curve(proba, pd.Series(y, index=idx).iloc[perm], thresholds=[0.3, 0.5])
    risk = np.minimum(p1, 1 - p1)
    wrong = (p1 > 0.5).astype(int) != y  # argmax of (1 - p, p): class 1 only when p > 0.5
    for t, got in zip([0.3, 0.5], curve["error_of_accepted"], strict=True):
        acc = risk <= t
        assert got == pytest.approx(wrong[acc].mean() if acc.any() else np.nan, nan_ok=True)


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
    _raises(lambda: mcnemar_from_predictions([1, 0, 1], [1, 0, 1], np.array([1, pd.NA, 0], dtype=object)),
            "pred_b", "[1]")


def test_planning_counts_beyond_exact_floats_are_refused():
    _raises(lambda: allocate(2**60, [0.3, 0.7]), "total", "2**53")
    _raises(lambda: allocate(100, [0.3, 0.7], capacity=2**53 + 1), "capacity", str(2**53 + 1))
    _raises(lambda: allocate(100, [0.3, 0.7], minimum=[0, 2**62]), "minimum", "2**53")
    from bayeseval.plan import halfwidth_table

    _raises(lambda: halfwidth_table(0.5, [100, 1e20]), "trials", "2**53")
    # at the limit the allocation is exact: the counts sum to the total in integer arithmetic
    got = allocate(2**53, [0.3, 0.7], method="proportional")
    assert sum(int(v) for v in got) == 2**53


@pytest.mark.parametrize("method", ["wald", "wilson", "agresti_coull", "jeffreys", "clopper_pearson"])
def test_stratified_risk_all_successes_at_large_counts_is_not_nan(method):
    # s = n = 759,806,365: s * n is past 2**53, so an effective count s * n_eff / n rounded
    # above n and gave a NaN Wald interval (sqrt of a negative variance). Closed form: the
    # interval of a rate of 1 has upper end 1 and lower end at most 1.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk([759806365], [759806365], weights=[1.0], method=method, level=0.999999)
    assert res.ci[1] == 1.0 and 0.0 <= res.ci[0] <= 1.0
    assert np.isfinite(res.table[["lower", "upper"]].to_numpy()).all()


def test_stratified_risk_estimate_stays_in_unit_interval_when_weights_round_past_one():
    # ten weights of 0.1 sum to 0.9999999999999999 and other splits pass 1 by an ulp; a
    # weighted mean of rates that are all 1 is 1 exactly (closed form), never 1 + eps.
    w = [0.15324321880937372, 0.1741020222634683, 0.16984617858461468, 0.02639650050407304,
         0.17258204177922165, 0.15790905335663924, 0.14592098470260945]
    assert np.sum(w) > 1.0  # 1.0000000000000002 in binary floating point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk([1] * 7, [1] * 7, weights=w, method="wald", level=0.5)
    assert res.estimate == 1.0 and res.ci[1] == 1.0
