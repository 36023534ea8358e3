"""Tests of ``bayeseval.estimate.stratified``."""

from __future__ import annotations

import inspect
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bayeseval
import bayeseval as be
from bayeseval import (
    Counts,
    ReweightingWarning,
    ZeroVarianceWarning,
    proportion_ci,
    stratified_risk,
)
from bayeseval._api.results import Result
from bayeseval._api.warnings import BayesevalWarning, EmptyStratumWarning
from bayeseval.estimate.classic import error_reject_curve, risk_averaging
from bayeseval.estimate.intervals import f1_score
from bayeseval.estimate.reweighting import ReweightedMetrics, reweight, weighted_metric
from bayeseval.estimate.stratified import StratifiedRisk, clustered_risk
from tests.estimate.helpers import METHODS, _quietly, _silenced, bad_levels, rows_hardening_inputs
from tests.helpers import (
    BIG,
    FAST,
    Z95,
    _raises,
    assert_raises_naming,
    count_arrays,
    labelled_counts,
    levels,
    shares,
)


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _clustered_sample(seed: int = 5, n_rows: int = 600, k: int = 3):
    rng = np.random.default_rng(seed)
    cl = rng.integers(0, 50, n_rows)
    strata = rng.integers(0, k, n_rows)
    y = (rng.random(n_rows) < 0.15 + 0.03 * (cl % 7) + 0.05 * strata).astype(int)
    return y, strata, cl


def _warning_sites(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        func()
    return {(w.category.__name__, Path(w.filename).name) for w in caught}


MISSING = [np.nan, None, pd.NA]


def _binary_sample(rng: np.random.Generator, n: int = 2000):
    y = (rng.random(n) < 0.3).astype(int)  # test positive share ~0.3
    flip = rng.random(n) < np.where(y == 1, 0.25, 0.08)
    p = np.where(flip, 1 - y, y)
    return y, p


def test_stratified_adaptive_errors_name_the_method():
    with (
        pytest.raises(ValueError, match=r"method='adaptive'.*two strata with trials.*got 1"),
        pytest.warns(EmptyStratumWarning),
    ):
        be.stratified_risk([3, 0], [10, 0], {0: 1.0, 1: 0.0}, method="adaptive")
    with pytest.raises(ValueError, match=r"method='adaptive'.*clustered rows"):
        be.clustered_risk([1, 0, 1, 0], cluster=[0, 0, 1, 1], method="adaptive")


def test_clustered_risk_matches_statsmodels_cluster_robust_ols():
    # R = w' beta of an OLS on stratum dummies; statsmodels' cluster covariance carries
    # G/(G-1) (N-1)/(N-K), ours G/(G-1): undo the second factor.
    import statsmodels.api as sm

    y, strata, cl = _clustered_sample()
    w = np.array([0.5, 0.3, 0.2])
    res = clustered_risk(y, cluster=cl, strata=strata, weights=w)
    x = np.eye(3)[strata]
    fit = sm.OLS(y.astype(float), x).fit(cov_type="cluster", cov_kwds={"groups": cl})
    n_rows, k = y.size, 3
    var_sm = w @ fit.cov_params() @ w * (n_rows - k) / (n_rows - 1)
    assert isinstance(res, StratifiedRisk)
    assert res.estimate == pytest.approx(float(w @ fit.params), abs=1e-14)
    assert res.se == pytest.approx(math.sqrt(var_sm), rel=1e-10)
    # design effect against the plug-in variance computed by hand
    rates = np.array([y[strata == j].mean() for j in range(k)])
    counts = np.bincount(strata)
    var_ind = float(np.sum(w**2 * rates * (1 - rates) / counts))
    assert res.se_independent == pytest.approx(math.sqrt(var_ind), rel=1e-12)
    assert res.design_effect == pytest.approx(var_sm / var_ind, rel=1e-10)
    assert res.n_clusters == 50


def test_clustered_risk_design_effect_by_hand():
    # one stratum, 4 clusters of 2 rows: e_c = (sum_{i in c} y_i - r m_c) / n
    y = np.array([1, 1, 0, 0, 0, 0, 1, 0])
    cl = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    res = clustered_risk(y, cluster=cl)
    r, n, g = 3 / 8, 8, 4
    e = np.array([2 - 2 * r, 0 - 2 * r, 0 - 2 * r, 1 - 2 * r]) / n
    var = g / (g - 1) * np.sum(e**2)
    assert res.estimate == pytest.approx(r)
    assert res.se == pytest.approx(math.sqrt(var), rel=1e-12)
    assert res.design_effect == pytest.approx(var / (r * (1 - r) / n), rel=1e-12)


def test_clustered_risk_is_exported_and_keyword_only():
    assert bayeseval.clustered_risk is clustered_risk
    assert "clustered_risk" in bayeseval.__all__
    params = inspect.signature(clustered_risk).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in params.items() if n != "outcomes")


def test_clustered_risk_validation_names_the_argument_and_the_row():
    with pytest.raises(ValueError, match=r"outcomes must imply trials: row 0"):
        clustered_risk([1, 0], trials=[0, 1], cluster=[0, 1])
    with pytest.raises(ValueError, match=r"outcomes must be 0/1.*rows \[1\] hold \[2\]"):
        clustered_risk([1, 2], cluster=[0, 1])
    with pytest.raises(ValueError, match=r"trials must be 0/1.*rows \[2\] hold \[2\]"):
        clustered_risk([1, 0, 1], trials=[1, 1, 2], cluster=[0, 1, 1])
    with pytest.raises(ValueError, match=r"cluster.*\[1\]"):
        clustered_risk([1, 0, 1], cluster=np.array([0, None, 1], dtype=object))
    with pytest.raises(ValueError, match=r"cluster must give one id per row \(3\)"):
        clustered_risk([1, 0, 1], cluster=[0, 1])
    with pytest.raises(TypeError, match="Counts"):
        clustered_risk(bayeseval.Counts.from_arrays([1], [2]), cluster=[0, 1])
    with pytest.raises(ValueError, match=r"level.*1\.5"):
        clustered_risk([1, 0], cluster=[0, 1], level=1.5)


def test_reweight_is_population_share_over_sample_share():
    strata = ["a", "a", "b", "b", "b"]
    shares = {"a": 0.2, "b": 0.8}
    new = reweight(strata, weights=shares)
    np.testing.assert_allclose(new, [0.2 / 0.4, 0.2 / 0.4, 0.8 / 0.6, 0.8 / 0.6, 0.8 / 0.6])


def test_weighted_precision_matches_a_hand_reweighting():
    y = [1, 1, 1, 1, 0, 0, 0, 0]
    p = [1, 1, 1, 0, 1, 0, 0, 0]
    new = _quiet(weighted_metric, y, p, weights=0.1, metric="precision")
    # precision reweighted by hand: TP weight 0.1/0.5, FP weight 0.9/0.5
    assert new.report.loc["precision", "reweighted"] == pytest.approx(3 * 0.2 / (3 * 0.2 + 1 * 1.8))
    np.testing.assert_allclose(new.row_weights, [0.2] * 4 + [1.8] * 4)


def test_stratified_risk_table_is_the_per_stratum_table_and_html_is_escaped():
    res = _quiet(stratified_risk, [26, 26], [286, 114], {"<b>x</b>": 0.8, "b": 0.2}, strata=["<b>x</b>", "b"])
    assert isinstance(res, Result)
    frame = res.to_frame()
    assert frame.loc["b", "rate"] == pytest.approx(26 / 114)
    frame.loc["b", "rate"] = 0.0
    assert res.table.loc["b", "rate"] == pytest.approx(26 / 114)
    html = res._repr_html_()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert res.summary().loc["reweighted", "estimate"] == pytest.approx(0.8 * 26 / 286 + 0.2 * 26 / 114)


def test_reweighted_metrics_follow_the_protocol():
    res = _quiet(weighted_metric, [1, 0, 1, 0], [1, 0, 0, 0], weights=0.5, metric="recall")
    assert isinstance(res, ReweightedMetrics) and isinstance(res, Result)
    assert res.to_frame().loc["recall", "unweighted"] == pytest.approx(0.5)
    assert res.summary().equals(res.report)


def test_warnings_point_at_the_caller():
    here = Path(__file__).name
    sites = _warning_sites(lambda: stratified_risk([0, 0], [10, 0], [0.5, 0.5]))
    assert sites == {("ZeroVarianceWarning", here), ("EmptyStratumWarning", here)}
    sites = _warning_sites(
        lambda: clustered_risk([0, 0, 1, 1], cluster=[0, 1, 2, 3], strata=list("aabb"), weights=[0.5, 0.5])
    )
    assert sites == {("ZeroVarianceWarning", here)}
    sites = _warning_sites(
        lambda: weighted_metric([1, 0, 0, 0], [0, 0, 0, 0], weights=0.5, metric=["recall", "precision"])
    )
    assert sites == {("ReweightingWarning", here), ("EmptyStratumWarning", here)}


def test_weights_with_duplicate_labels_name_weights():
    _raises(
        lambda: stratified_risk([1, 2], [10, 20], pd.Series([0.5, 0.5], index=["a", "a"]), strata=["a", "b"]),
        "weights",
        "duplicate",
    )


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
    res = _quietly(weighted_metric, y, p, strata=g, weights={"x": 0.5, "y": 0.5}, metric="accuracy")
    yt = np.array([1, 1, 1, 0, 0, 0])
    yp = np.array([1, 1, 0, 0, 0, 1])
    gg = np.array(["x", "y", "x", "y", "x", "y"])
    acc = {s: np.mean(yt[gg == s] == yp[gg == s]) for s in ("x", "y")}
    assert res.report.loc["accuracy", "reweighted"] == pytest.approx(0.5 * acc["x"] + 0.5 * acc["y"])
    assert res.report.loc["accuracy", "unweighted"] == pytest.approx(np.mean(yt == yp))
    _raises(lambda: weighted_metric(y, p.rename(index={"a": "z"}), weights=0.5), "y_true", "y_pred")


@pytest.mark.parametrize("na", MISSING)
def test_weighted_metric_missing_truth_is_an_error_issue_example(na):
    y = pd.Series([1, na, 0, 1], dtype=object)
    _raises(lambda: weighted_metric(y, [1, 0, 0, 1], weights=0.3), "y_true", "[1]")
    _raises(lambda: weighted_metric([1, 0, 0, 1], [1, 0, na, 1], weights=0.3), "y_pred", "[2]")
    _raises(
        lambda: weighted_metric([1, 0, 0, 1], [1, 0, 0, 1], strata=["a", na, "b", "a"], weights={"a": 0.5, "b": 0.5}),
        "strata",
        "[1]",
    )


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
    _raises(lambda: risk_averaging(proba, strata=np.array(["a", na, "b"], dtype=object)), "strata", "[1]")
    _raises(lambda: risk_averaging(np.array([0.2, na, 0.7], dtype=object)), "proba", "[1]")
    _raises(lambda: reweight(np.array(["a", "b", na], dtype=object), {"a": 0.5, "b": 0.5}), "strata", "[2]")
    _raises(lambda: f1_score([1, 0, 1], np.array([1, na, 0], dtype=object)), "y_pred", "[1]")
    y = np.array([1, 0, 1, 0, 1, 0], dtype=object)
    y[3] = na
    _raises(lambda: clustered_risk(y, weights=None, cluster=[1, 1, 2, 2, 3, 3]), "outcomes", "[3]")
    _raises(
        lambda: clustered_risk(
            [1, 0, 1, 0],
            weights={"a": 0.5, "b": 0.5},
            strata=np.array(["a", "b", na, "b"], dtype=object),
            cluster=[1, 1, 2, 2],
        ),
        "strata",
        "[2]",
    )
    _raises(lambda: clustered_risk([1, 0, 1, 0], cluster=np.array([1, na, 2, 2], dtype=object)), "cluster", "[1]")


@given(labelled_counts())
@FAST
def test_permuted_stratified_risk_equals_the_closed_form(data):
    s, n, labels, perm = data
    w = np.arange(1, len(s) + 1, dtype=float)
    w /= w.sum()
    with _silenced():
        res = stratified_risk(
            pd.Series(s, index=labels),
            pd.Series(n, index=labels).iloc[perm],
            pd.Series(w, index=labels).iloc[perm[::-1]],
        )
    r = s / n
    assert res.estimate == pytest.approx(float(np.sum(w * r)), rel=1e-9, abs=1e-15)
    assert res.se == pytest.approx(float(np.sqrt(np.sum(w**2 * r * (1 - r) / n))), rel=1e-9, abs=1e-15)


@given(rows_hardening_inputs(), st.sampled_from(MISSING), st.data())
@FAST
def test_a_missing_value_anywhere_names_the_argument_and_position(data, na, draw):
    y, p, g, _ = data
    i = draw.draw(st.integers(0, y.size - 1))
    which = draw.draw(st.sampled_from(["y_true", "y_pred", "strata"]))
    cols = {"y_true": y.astype(object), "y_pred": p.astype(object), "strata": g.astype(object)}
    cols[which][i] = na
    _raises(
        lambda: weighted_metric(cols["y_true"], cols["y_pred"], strata=cols["strata"], weights={"a": 0.5, "b": 0.5}),
        which,
        f"[{i}]",
    )
    if which == "y_true":
        _raises(lambda: error_reject_curve(np.full(y.size, 0.3), cols["y_true"]), "y_true", f"[{i}]")
        _raises(lambda: f1_score(cols["y_true"], p), "y_true", f"[{i}]")
    if which == "strata":
        _raises(lambda: risk_averaging(np.full(y.size, 0.3), strata=cols["strata"]), "strata", f"[{i}]")
        _raises(lambda: reweight(cols["strata"], {"a": 0.5, "b": 0.5}), "strata", f"[{i}]")
        _raises(
            lambda: clustered_risk(y, weights={"a": 0.5, "b": 0.5}, strata=cols["strata"], cluster=np.arange(y.size)),
            "strata",
            f"[{i}]",
        )


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
    w = [
        0.15324321880937372,
        0.1741020222634683,
        0.16984617858461468,
        0.02639650050407304,
        0.17258204177922165,
        0.15790905335663924,
        0.14592098470260945,
    ]
    assert np.sum(w) > 1.0  # 1.0000000000000002 in binary floating point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk([1] * 7, [1] * 7, weights=w, method="wald", level=0.5)
    assert res.estimate == 1.0 and res.ci[1] == 1.0


@FAST
@given(st.data(), levels, st.sampled_from(METHODS))
def test_stratified_risk_extremes_finite_ordered(data, level, method):
    s, n = data.draw(count_arrays(max_k=30))
    w = data.draw(shares(len(s)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk(s, n, w, level=level, method=method)
    lo, hi = res.ci
    assert all(math.isfinite(v) for v in (res.estimate, res.se, lo, hi))
    assert 0.0 <= lo <= res.estimate <= hi <= 1.0
    assert res.se >= 0
    t = res.table
    assert np.all((0 <= t["lower"]) & (t["lower"] <= t["upper"]) & (t["upper"] <= 1))


def test_stratified_risk_ten_thousand_strata():
    rng = np.random.default_rng(1)
    n = rng.integers(1, BIG, 10_000)
    s = np.floor(rng.choice([0.0, 1.0, 0.1], 10_000) * n).astype(np.int64)
    w = rng.random(10_000)
    w /= w.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk(s, n, w)
    # reference: the weighted mean of the raw rates
    assert res.estimate == pytest.approx(float(np.sum(w * s / n)), rel=1e-9)
    assert 0.0 <= res.ci[0] <= res.estimate <= res.ci[1] <= 1.0


@FAST
@given(st.sampled_from([[0.5, 0.6], [1.2, -0.2], [0.5], [float("nan"), 1.0], [0.3, 0.3, 0.4]]))
def test_stratified_risk_bad_weights_name_weights(w):
    assert_raises_naming(stratified_risk, "weights", [1, 2], [10, 10], w)


@FAST
@given(bad_levels)
def test_stratified_risk_bad_level_names_level(level):
    assert_raises_naming(stratified_risk, "level", [1, 2], [10, 10], [0.5, 0.5], level=level)


def test_stratified_risk_bad_counts_name_the_argument():
    assert_raises_naming(stratified_risk, "successes", [-1, 2], [10, 10], [0.5, 0.5])
    assert_raises_naming(stratified_risk, "trials", [1, 2], [10, 1.5], [0.5, 0.5])
    assert_raises_naming(stratified_risk, "successes", [11, 2], [10, 10], [0.5, 0.5])


@FAST
@given(st.data())
def test_reweight_gives_the_population_composition(data):
    from bayeseval import reweight

    k = data.draw(st.integers(1, 8))
    labels = [f"s{i}" for i in range(k)]
    counts = data.draw(st.lists(st.integers(1, 50), min_size=k, max_size=k))
    strata = np.repeat(labels, counts)
    pi = data.draw(shares(k))
    w = reweight(strata, dict(zip(labels, pi, strict=True)))
    assert np.all(np.isfinite(w)) and np.all(w > 0)
    # weighted rows have the population composition, and the weights sum to N
    got = pd.Series(w).groupby(strata).sum() / w.sum()
    np.testing.assert_allclose(got.loc[labels].to_numpy(), pi, atol=1e-12)
    assert w.sum() == pytest.approx(len(strata), rel=1e-12)


def test_reweight_bad_input_names_argument():
    from bayeseval import reweight

    assert_raises_naming(reweight, "weights", ["a", "b"], {"a": 0.5, "b": 0.6})
    assert_raises_naming(reweight, "weights", ["a", "b"], {"a": -0.5, "b": 1.5})
    assert_raises_naming(reweight, "weights", ["a", "c"], {"a": 0.5, "b": 0.5})


def test_spec_weighted_risk_figures() -> None:
    # pi = (0.8, 0.2), n = (286, 114), r = (0.09, 0.2275): R = 0.1175,
    # Var = 0.0002450, SE = 0.0157. Rates 0.09 and 0.2275 are whole counts only at
    # 200 x n = (57200, 22800) -> s = (5148, 5187); the variance scales as 1/n, so the
    # worked example's variance is 200 x the variance at the scaled counts.
    res = stratified_risk([5148, 5187], [57200, 22800], [0.8, 0.2])
    assert res.table["rate"].tolist() == pytest.approx([0.09, 0.2275], abs=1e-15)
    assert round(res.estimate, 4) == 0.1175
    # exact value 0.00024494: the worked example's "0.0002450" holds to 3 significant digits
    # (2.45e-4); at 7 decimals it is 0.0002449 (a rounding slip in the worked example)
    assert f"{200 * res.se**2:.3g}" == "0.000245"
    assert 200 * res.se**2 == pytest.approx(0.00024494, abs=5e-9)
    assert round(np.sqrt(200) * res.se, 4) == 0.0157
    # the same formula by hand: sum pi^2 r (1 - r) / n at the worked example's counts
    hand = 0.8**2 * 0.09 * 0.91 / 286 + 0.2**2 * 0.2275 * 0.7725 / 114
    assert 200 * res.se**2 == pytest.approx(hand, rel=1e-12)


def test_spec_like_counts_at_real_sizes() -> None:
    # n = (286, 114) with s = (26, 26): r = (0.0909, 0.2281), plug-in SE by hand
    res = stratified_risk([26, 26], [286, 114], {"a": 0.8, "b": 0.2}, strata=["a", "b"])
    r = np.array([26 / 286, 26 / 114])
    se = np.sqrt(np.sum(np.array([0.64, 0.04]) * r * (1 - r) / np.array([286, 114])))
    assert res.estimate == pytest.approx(0.8 * r[0] + 0.2 * r[1], abs=1e-15)
    assert res.se == pytest.approx(se, abs=1e-15)
    assert res.ci == pytest.approx((res.estimate - Z95 * se, res.estimate + Z95 * se), abs=1e-12)
    assert res.unweighted == pytest.approx(52 / 400)
    assert res.design_effect is None
    # per-stratum interval columns are proportion_ci with the chosen method
    lo, hi = proportion_ci([26, 26], [286, 114], method="wilson")
    np.testing.assert_allclose(res.table["lower"], lo, atol=1e-14)
    np.testing.assert_allclose(res.table["upper"], hi, atol=1e-14)
    assert list(res.table.columns[:9]) == [
        "successes",
        "trials",
        "rate",
        "se",
        "lower",
        "upper",
        "weight",
        "sample_share",
        "contribution",
    ]
    assert res.table["contribution"].sum() == pytest.approx(res.estimate)
    assert res.table["sample_share"].tolist() == pytest.approx([286 / 400, 114 / 400])
    summ = res.summary()
    assert list(summ.index) == ["reweighted", "unweighted"]
    assert summ.loc["reweighted", "estimate"] == res.estimate
    assert summ.attrs["population_estimate"] == "reweighted"
    assert "population estimate" in repr(res)


def test_counts_input_and_weight_alignment() -> None:
    c = Counts.from_arrays([3, 10, 5], [40, 120, 60], strata=["x", "y", "z"])
    by_key = stratified_risk(c, weights={"z": 0.2, "x": 0.5, "y": 0.3})
    by_pos = stratified_risk([3, 10, 5], [40, 120, 60], [0.5, 0.3, 0.2])
    assert by_key.estimate == pytest.approx(by_pos.estimate, abs=1e-15)
    assert by_key.se == pytest.approx(by_pos.se, abs=1e-15)
    from_counts = stratified_risk(c.with_weights({"x": 0.5, "y": 0.3, "z": 0.2}))
    assert from_counts.estimate == pytest.approx(by_pos.estimate, abs=1e-15)
    assert list(from_counts.table.index) == ["x", "y", "z"]
    # one stratum needs no weights
    one = stratified_risk([7], [20])
    assert one.estimate == pytest.approx(0.35)
    assert one.ci == pytest.approx(proportion_ci(7, 20))


@pytest.mark.parametrize(
    "weights, match",
    [
        ([0.5, 0.4], "sum to 1"),
        ([0.5, 0.5, 0.0], "one share per stratum"),
        ({"a": 0.5, "c": 0.5}, "do not match the strata"),
        ([1.5, -0.5], "non-negative"),
        ([np.nan, 1.0], "finite"),
        (None, "weights are required"),
    ],
)
def test_bad_weights_raise_with_message(weights, match) -> None:
    with pytest.raises(ValueError, match=match) as info:
        stratified_risk([1, 2], [10, 10], weights, strata=["a", "b"])
    assert "weights" in str(info.value)


@settings(max_examples=50, deadline=None)
@given(w=st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=6).filter(lambda w: abs(sum(w) - 1) > 1e-6))
def test_weights_not_summing_to_one_rejected(w: list[float]) -> None:
    k = len(w)
    with pytest.raises(ValueError, match="weights"):
        stratified_risk([1] * k, [10] * k, w)


@settings(max_examples=50, deadline=None)
@given(
    s=st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=5),
    extra=st.lists(st.integers(min_value=1, max_value=10**9), min_size=5, max_size=5),
    raw=st.lists(st.floats(min_value=0.01, max_value=1), min_size=5, max_size=5),
)
def test_valid_extreme_counts_give_ordered_interval(s, extra, raw) -> None:
    k = len(s)
    n = [a + b for a, b in zip(s, extra[:k], strict=True)]
    w = np.array(raw[:k]) / np.sum(raw[:k])
    w[-1] = 1 - w[:-1].sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroVarianceWarning)
        res = stratified_risk(s, n, w)
    assert np.isfinite(res.estimate) and np.isfinite(res.se)
    assert 0.0 <= res.ci[0] <= res.estimate <= res.ci[1] <= 1.0


@pytest.mark.parametrize(
    "successes, trials, exc, word",
    [
        ([-1, 2], [10, 10], ValueError, "successes"),
        ([11, 2], [10, 10], ValueError, "successes must not exceed trials"),
        ([np.nan, 2], [10, 10], ValueError, "successes"),
        ([1, 2], [10, np.nan], ValueError, "trials"),
        ([], [], ValueError, "empty"),
        ([1, 2, 3], [10, 10], ValueError, "mismatched"),
    ],
)
def test_bad_counts_raise(successes, trials, exc, word) -> None:
    with pytest.raises(exc, match=word):
        stratified_risk(successes, trials, [0.5, 0.5])


def test_bad_level_and_method() -> None:
    with pytest.raises(ValueError, match="level"):
        stratified_risk([1, 2], [10, 10], [0.5, 0.5], level=95)
    with pytest.raises(ValueError, match="method"):
        stratified_risk([1, 2], [10, 10], [0.5, 0.5], method="laplace")


def test_zero_rate_warns_and_interval_does_not_collapse() -> None:
    with pytest.warns(ZeroVarianceWarning, match="not certainty"):
        res = stratified_risk([0, 0], [286, 114], [0.8, 0.2])
    assert res.estimate == 0.0 and res.se == 0.0  # the plug-in value r(1 - r)/n at r = 0
    assert res.se_interval > 0 and res.ci[0] == 0.0
    # the upper bound is of the order of the weighted per-stratum Wilson upper bounds
    wil = proportion_ci([0, 0], [286, 114])[1] @ np.array([0.8, 0.2])
    assert 0.5 * wil < res.ci[1] < 2 * wil
    assert res.zero_variance == [0, 1]
    assert "not certainty" in repr(res)


def test_one_degenerate_stratum_only_widens() -> None:
    with pytest.warns(ZeroVarianceWarning):
        res = stratified_risk([0, 20], [286, 114], [0.8, 0.2])
    assert res.se_interval > res.se > 0
    assert res.ci[0] <= res.estimate <= res.ci[1]
    assert res.ci[1] - res.ci[0] > 2 * Z95 * res.se


def test_zero_rate_single_stratum_uses_method_interval() -> None:
    with pytest.warns(ZeroVarianceWarning):
        res = stratified_risk([0], [30], method="jeffreys")
    assert res.ci == pytest.approx(proportion_ci(0, 30, method="jeffreys"))


def test_empty_stratum_with_weight_gives_nan() -> None:
    with pytest.warns(EmptyStratumWarning, match="no trials"):
        res = stratified_risk([1, 0], [10, 0], [0.5, 0.5])
    assert np.isnan(res.estimate) and np.isnan(res.ci[0])
    assert np.isnan(res.table.loc[1, "rate"])
    with pytest.warns(EmptyStratumWarning):
        res = stratified_risk([1, 0], [10, 0], [1.0, 0.0])
    assert res.estimate == pytest.approx(0.1)


def test_cluster_of_one_row_each_is_independent() -> None:
    # every row its own cluster: Var_cluster = G/(G-1) Var_indep exactly
    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.2).astype(int)
    g = rng.choice(["a", "b"], 500)
    res = clustered_risk(y, cluster=np.arange(500), strata=g, weights={"a": 0.3, "b": 0.7})
    assert res.design_effect == pytest.approx(500 / 499, rel=1e-12)
    plain = stratified_risk(
        pd.Series(y).groupby(g).sum().to_numpy(),
        pd.Series(g).value_counts().sort_index().to_numpy(),
        [0.3, 0.7],
    )
    assert res.estimate == pytest.approx(plain.estimate, abs=1e-15)
    assert res.se_independent == pytest.approx(plain.se, abs=1e-15)


def test_cluster_se_matches_statsmodels() -> None:
    # reference: statsmodels OLS of the outcome on stratum dummies with cluster-robust
    # covariance (use_correction: G/(G-1) (N-1)/(N-K)); R = w' beta. Ours uses G/(G-1).
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    n_rows, k = 600, 3
    cl = rng.integers(0, 50, n_rows)
    strata = rng.integers(0, k, n_rows)
    y = (rng.random(n_rows) < 0.15 + 0.03 * (cl % 7) + 0.05 * strata).astype(float)
    w = np.array([0.5, 0.3, 0.2])
    res = clustered_risk(y, cluster=cl, strata=strata, weights=w)
    x = np.eye(k)[strata]
    fit = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": cl})
    var_sm = w @ fit.cov_params() @ w * (n_rows - k) / (n_rows - 1)
    assert res.estimate == pytest.approx(w @ fit.params, abs=1e-14)
    assert res.se == pytest.approx(np.sqrt(var_sm), rel=1e-10)
    assert res.n_clusters == 50


def test_cluster_with_trial_indicator() -> None:
    # recall-like: only rows with trials=1 count; cluster ids of non-trials are irrelevant
    y = np.array([1, 0, 1, 0, 0, 1, 0, 0])
    t = np.array([1, 1, 1, 0, 0, 1, 1, 0])
    cl = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    res = clustered_risk(y, trials=t, cluster=cl)
    assert res.estimate == pytest.approx(3 / 5)
    assert int(res.table["trials"].iloc[0]) == 5
    with pytest.raises(ValueError, match="outcomes must imply trials"):
        clustered_risk(np.array([1, 0]), trials=np.array([0, 1]), cluster=[0, 1])
    with pytest.raises(ValueError, match="cluster"):
        clustered_risk(y, trials=t, cluster=cl[:-1])
    with pytest.raises(TypeError, match="row-level"):
        clustered_risk(Counts.from_arrays([1], [2]), cluster=[0, 1])


def test_reweight_binary_label_formula() -> None:
    # w+ = pi / pi_t, w- = (1 - pi) / (1 - pi_t); population pi = 0.05, test pi_t = 0.25
    labels = np.r_[np.ones(25, int), np.zeros(75, int)]
    w = reweight(labels, {1: 0.05, 0: 0.95})
    assert w[0] == pytest.approx(0.05 / 0.25) and w[-1] == pytest.approx(0.95 / 0.75)
    assert w.mean() == pytest.approx(1.0)


def test_reweight_errors() -> None:
    with pytest.raises(ValueError, match="weights"):
        reweight(["a", "b"], {"a": 0.5, "b": 0.6})
    with pytest.raises(ValueError, match="no share for strata"):
        reweight(["a", "b", "c"], {"a": 0.5, "b": 0.5})
    with pytest.raises(ValueError, match="no rows"):
        reweight(["a", "a"], {"a": 0.5, "b": 0.5})
    with pytest.raises(TypeError, match="weights"):
        reweight(["a"], [1.0])


def test_weighted_metric_matches_sklearn_sample_weight() -> None:
    from sklearn.metrics import accuracy_score, precision_score, recall_score

    rng = np.random.default_rng(3)
    y, p = _binary_sample(rng)
    with pytest.warns(ReweightingWarning, match="population estimate"):
        res = weighted_metric(y, p, weights=0.05, metric=["recall", "precision", "accuracy"])
    pi_t = y.mean()
    w = np.where(y == 1, 0.05 / pi_t, 0.95 / (1 - pi_t))
    np.testing.assert_allclose(res.row_weights, w, rtol=1e-12)
    rep = res.report
    assert list(rep.columns) == ["unweighted", "reweighted"]
    assert rep.attrs["population_estimate"] == "reweighted"
    assert rep.loc["recall", "unweighted"] == pytest.approx(recall_score(y, p))
    assert rep.loc["precision", "unweighted"] == pytest.approx(precision_score(y, p))
    assert rep.loc["precision", "reweighted"] == pytest.approx(precision_score(y, p, sample_weight=w))
    assert rep.loc["accuracy", "reweighted"] == pytest.approx(accuracy_score(y, p, sample_weight=w))
    # recall's trials are all positives, so label reweighting leaves it unchanged;
    # precision falls when positives are rarer in the population
    assert rep.loc["recall", "reweighted"] == pytest.approx(rep.loc["recall", "unweighted"])
    assert rep.loc["precision", "reweighted"] < rep.loc["precision", "unweighted"] - 0.1
    assert res.table.loc["recall", "trials"] == y.sum()
    assert "population estimate" in repr(res)


def test_reweighted_error_rate_equals_stratified_risk() -> None:
    rng = np.random.default_rng(4)
    g = rng.choice(["a", "b", "c"], 900, p=[0.6, 0.3, 0.1])
    y = rng.integers(0, 2, 900)
    p = np.where(rng.random(900) < np.select([g == "a", g == "b"], [0.9, 0.8], 0.6), y, 1 - y)
    shares = {"a": 0.2, "b": 0.3, "c": 0.5}
    with pytest.warns(ReweightingWarning):
        rw = weighted_metric(y, p, strata=g, weights=shares, metric="error_rate")
    err = pd.Series(y != p).groupby(g)
    sr = stratified_risk(err.sum().to_numpy(), err.size().to_numpy(), [0.2, 0.3, 0.5])
    assert rw.report.loc["error_rate", "reweighted"] == pytest.approx(sr.estimate, abs=1e-12)
    assert rw.report.loc["error_rate", "unweighted"] == pytest.approx(sr.unweighted, abs=1e-12)
    # linearised SE of the weighted ratio equals the plug-in stratified SE up to n_k/(n_k) terms
    assert rw.table.loc["error_rate", "se_reweighted"] == pytest.approx(sr.se, rel=1e-10)


def test_weighted_metric_no_warning_when_composition_matches() -> None:
    y = np.r_[np.ones(30, int), np.zeros(70, int)]
    p = y.copy()
    p[:5] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = weighted_metric(y, p, weights=0.3, metric="precision")
    assert res.report.loc["precision", "reweighted"] == pytest.approx(1.0)


def test_weighted_metric_errors() -> None:
    with pytest.raises(TypeError, match="weights"):
        weighted_metric([1, 0], [1, 0], weights={"a": 1.0})
    with pytest.raises(ValueError, match="weights"):
        weighted_metric([1, 0], [1, 0], weights=1.5)
    with pytest.raises(ValueError, match="same length"):
        weighted_metric([1, 0], [1], weights=0.5)
    with pytest.raises(ValueError, match="strata"):
        weighted_metric([1, 0], [1, 0], strata=["a"], weights={"a": 1.0})
    with pytest.raises(ValueError, match="unknown metric"):
        weighted_metric([1, 0], [1, 0], weights=0.5, metric="auc")


def test_result_type() -> None:
    assert isinstance(stratified_risk([1], [2]), StratifiedRisk)


def test_html_repr_names_the_population_estimate() -> None:
    html = stratified_risk([3, 9], [50, 60], [0.5, 0.5])._repr_html_()
    assert "Population-weighted" in html and "<table" in html


def test_a_zero_cluster_robust_variance_falls_back_to_the_independent_rows_interval():
    from bayeseval import clustered_risk

    # each of three clusters has exactly the overall rate 1/2: the CR1 sandwich is 0, which
    # would give the interval [0.5, 0.5]; the independent-rows normal interval is
    # 0.5 +/- z sqrt(0.25 / 6) (closed form)
    with pytest.warns(ZeroVarianceWarning, match="cluster-robust variance is 0"):
        res = clustered_risk([0, 1, 0, 1, 1, 0], cluster=[1, 1, 2, 2, 3, 3])
    half = 1.959963984540054 * math.sqrt(0.25 / 6)
    assert res.ci == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    # clusters that differ keep their cluster-robust SE (CR1 by hand: G / (G - 1) sum E_c^2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroVarianceWarning)
        other = clustered_risk([1, 1, 0, 0, 0, 0, 1, 0], cluster=[0, 0, 1, 1, 2, 2, 3, 3])
    e = (np.array([1, 1, 0, 0, 0, 0, 1, 0]) - 0.375) / 8
    totals = e.reshape(4, 2).sum(axis=1)
    assert other.se == pytest.approx(math.sqrt(4 / 3 * np.sum(totals**2)), rel=1e-12)


# -- weighted_metric takes a frame and column names, like tabulate and evaluate ----------------
def _hand_reweighted(df, y, p, strata_key, shares, metric):
    """A reweighted rate by hand with pandas: rows weighted by population / sample share of
    their stratum, then sum(w * success) / sum(w * trial)."""
    sample = strata_key.value_counts(normalize=True)
    w = strata_key.map(lambda k: shares[k] / sample[k]).astype(float)
    trial, success = {
        "recall": (df[y] == 1, (df[y] == 1) & (df[p] == 1)),
        "precision": (df[p] == 1, (df[y] == 1) & (df[p] == 1)),
        "error_rate": (df[y] == df[y], df[y] != df[p]),
    }[metric]
    return float((w * success).sum() / (w * trial).sum()), float(success.sum() / trial.sum())


def _frame_rows(n=600, seed=26):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "label": rng.integers(0, 2, n),
            "pred": rng.integers(0, 2, n),
            "group": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "site": rng.choice(["x", "y"], n),
        },
        index=rng.permutation(n) + 1000,
    )


def test_weighted_metric_takes_a_frame_and_column_names():
    df = _frame_rows()
    shares = {"a": 0.2, "b": 0.3, "c": 0.5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReweightingWarning)
        res = weighted_metric(
            df,
            y_true="label",
            y_pred="pred",
            strata="group",
            weights=shares,
            metric=["recall", "precision", "error_rate"],
        )
        arrays = weighted_metric(
            df["label"].to_numpy(),
            df["pred"].to_numpy(),
            strata=df["group"].to_numpy(),
            weights=shares,
            metric=["recall", "precision", "error_rate"],
        )
    for m in ("recall", "precision", "error_rate"):
        rw, uw = _hand_reweighted(df, "label", "pred", df["group"], shares, m)
        assert res.table.loc[m, "reweighted"] == pytest.approx(rw, rel=1e-12)
        assert res.table.loc[m, "unweighted"] == pytest.approx(uw, rel=1e-12)
    pd.testing.assert_frame_equal(res.table, arrays.table)


def test_weighted_metric_frame_with_several_strata_columns_or_a_positive_share():
    df = _frame_rows(seed=27)
    shares = {("a", "x"): 0.1, ("a", "y"): 0.1, ("b", "x"): 0.2, ("b", "y"): 0.1, ("c", "x"): 0.3, ("c", "y"): 0.2}
    key = pd.Series(list(zip(df["group"], df["site"], strict=True)), index=df.index)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReweightingWarning)
        res = weighted_metric(
            df, y_true="label", y_pred="pred", strata=["group", "site"], weights=shares, metric="error_rate"
        )
        # no strata: the weights are the positive class's population share
        pos = weighted_metric(df, y_true="label", y_pred="pred", weights=0.1, metric="precision")
    assert res.table.loc["error_rate", "reweighted"] == pytest.approx(
        _hand_reweighted(df, "label", "pred", key, shares, "error_rate")[0], rel=1e-12
    )
    label = df["label"].map({1: "positive", 0: "negative"})
    assert pos.table.loc["precision", "reweighted"] == pytest.approx(
        _hand_reweighted(df, "label", "pred", label, {"positive": 0.1, "negative": 0.9}, "precision")[0], rel=1e-12
    )


def test_weighted_metric_frame_form_refuses_unknown_columns_and_mixed_forms():
    df = _frame_rows(50)
    with pytest.raises(ValueError, match="y_true must name a column of data, got 'labels'"):
        weighted_metric(df, y_true="labels", y_pred="pred", weights=0.5)
    with pytest.raises(ValueError, match="strata must name a column of data, got 'grp'"):
        weighted_metric(df, y_true="label", y_pred="pred", strata="grp", weights={"a": 1.0})
    with pytest.raises(TypeError, match="y_pred is required"):
        weighted_metric(df, y_true="label", weights=0.5)
    with pytest.raises(TypeError, match="y_pred='pred' names a column"):
        weighted_metric(y_true=df["label"], y_pred="pred", weights=0.5)
    with pytest.raises(TypeError, match="data must be a pandas DataFrame when y_true is given"):
        weighted_metric([1, 0], y_true=[1, 0], y_pred=[1, 0], weights=0.5)
