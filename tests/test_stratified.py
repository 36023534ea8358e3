"""Tests for bayeseval.estimate.stratified: stratified_risk, reweight, weighted_metric, clustered rows."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bayeseval import (
    Counts,
    EmptyStratumWarning,
    ReweightingWarning,
    ZeroVarianceWarning,
)
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.estimate.stratified import (
    StratifiedRisk,
    clustered_risk,
    reweight,
    stratified_risk,
    weighted_metric,
)

Z95 = stats.norm.isf(0.025)


# -- worked figures of a population-weighted risk (closed form) ---------------------------------


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
        "successes", "trials", "rate", "se", "lower", "upper", "weight", "sample_share", "contribution",
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
@given(
    w=st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=6).filter(
        lambda w: abs(sum(w) - 1) > 1e-6
    )
)
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


# -- zero variance and empty strata ------------------------------------------------------------


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


@pytest.mark.parametrize("rates", [(0.003, 0.01), (0.001, 0.003), (0.0005, 0.02), (0.01, 0.03)])
def test_zero_rate_interval_exact_coverage(rates) -> None:
    # Exact coverage by enumeration: pi = (0.8, 0.2), n = (286, 114), small true rates so
    # zero counts are frequent; outcomes s_k in 0..14 carry all but < 3e-6 of the mass
    # (the rest counted as misses). The non-collapsing interval covers >= 0.93 (measured
    # 0.998, 0.999, 0.975, 0.940); the plug-in interval estimate +/- z * se misses
    # whenever every stratum has 0 errors.
    n, w = np.array([286, 114]), np.array([0.8, 0.2])
    truth = float(w @ np.array(rates))
    grid = np.arange(15)
    pmf = [stats.binom.pmf(grid, n[k], rates[k]) for k in range(2)]
    cover = plug = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroVarianceWarning)
        for s1 in grid:
            for s2 in grid:
                prob = pmf[0][s1] * pmf[1][s2]
                res = stratified_risk([s1, s2], n, w)
                cover += prob * (res.ci[0] <= truth <= res.ci[1])
                plug += prob * (abs(res.estimate - truth) <= Z95 * res.se)
    assert cover >= 0.93
    if max(rates) <= 0.01:  # all-zero outcomes are frequent
        assert plug < 0.9


def test_empty_stratum_with_weight_gives_nan() -> None:
    with pytest.warns(EmptyStratumWarning, match="no trials"):
        res = stratified_risk([1, 0], [10, 0], [0.5, 0.5])
    assert np.isnan(res.estimate) and np.isnan(res.ci[0])
    assert np.isnan(res.table.loc[1, "rate"])
    with pytest.warns(EmptyStratumWarning):
        res = stratified_risk([1, 0], [10, 0], [1.0, 0.0])
    assert res.estimate == pytest.approx(0.1)


# -- clustered rows ----------------------------------------------------------------------------


def test_cluster_of_one_row_each_is_independent() -> None:
    # every row its own cluster: Var_cluster = G/(G-1) Var_indep exactly
    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.2).astype(int)
    g = rng.choice(["a", "b"], 500)
    res = clustered_risk(y, cluster=np.arange(500), strata=g, weights={"a": 0.3, "b": 0.7})
    assert res.design_effect == pytest.approx(500 / 499, rel=1e-12)
    plain = stratified_risk(
        pd.Series(y).groupby(g).sum().to_numpy(), pd.Series(g).value_counts().sort_index().to_numpy(),
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


def test_design_effect_and_coverage_with_known_icc() -> None:
    # Seeded simulation: G = 150 clusters of m = 10 rows, cluster rates ~ Beta with mean
    # 0.3 and intra-cluster correlation rho = 0.2 (a + b = (1 - rho) / rho), two strata of
    # whole clusters with shares (0.5, 0.5). Expected design effect 1 + (m - 1) rho = 2.8.
    # 400 replications; the cluster-robust 95% interval should cover (binomial sd of the
    # coverage estimate 0.011: accept [0.92, 0.975]); the independent-rows interval
    # undercovers (about 0.78).
    rng = np.random.default_rng(7)
    n_cl, m, rho, p = 150, 10, 0.2, 0.3
    ab = (1 - rho) / rho
    cl = np.repeat(np.arange(n_cl), m)
    strata = np.where(np.arange(n_cl) % 3 == 0, "a", "b")[cl]
    deffs, hit, hit_naive, reps = [], 0, 0, 400
    for _ in range(reps):
        pc = rng.beta(p * ab, (1 - p) * ab, n_cl)
        y = (rng.random((n_cl, m)) < pc[:, None]).astype(float).ravel()
        res = clustered_risk(y, cluster=cl, strata=strata, weights={"a": 0.5, "b": 0.5})
        deffs.append(res.design_effect)
        hit += res.ci[0] <= p <= res.ci[1]
        hit_naive += abs(res.estimate - p) <= Z95 * res.se_independent
    assert np.mean(deffs) == pytest.approx(1 + (m - 1) * rho, rel=0.1)
    assert 0.92 <= hit / reps <= 0.975
    assert hit_naive / reps < 0.85
    assert "design effect" in repr(res)
    assert set(res.table.columns) >= {"n_clusters", "design_effect"}


# -- row reweighting ---------------------------------------------------------------------------


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


def _binary_sample(rng: np.random.Generator, n: int = 2000):
    y = (rng.random(n) < 0.3).astype(int)  # test positive share ~0.3
    flip = rng.random(n) < np.where(y == 1, 0.25, 0.08)
    p = np.where(flip, 1 - y, y)
    return y, p


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


def test_reweighted_interval_coverage() -> None:
    # Seeded simulation: population positive share 0.05, test sets of 600 rows with 30%
    # positives (oversampled), classifier recall 0.8 and FPR 0.05; the population
    # precision is 0.05*0.8 / (0.05*0.8 + 0.95*0.05) = 0.4571. Coverage of the reweighted
    # precision's normal interval over 150 replications (measured 0.94; binomial sd 0.018):
    # accept [0.89, 0.99].
    rng = np.random.default_rng(21)
    truth = 0.04 / (0.04 + 0.0475)
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReweightingWarning)
        for _ in range(150):
            y = np.r_[np.ones(180, int), np.zeros(420, int)]
            p = np.where(y == 1, rng.random(600) < 0.8, rng.random(600) < 0.05).astype(int)
            t = weighted_metric(y, p, weights=0.05, metric="precision").table
            hits += t.loc["precision", "lower"] <= truth <= t.loc["precision", "upper"]
    assert 0.89 <= hits / 150 <= 0.99


def test_html_repr_names_the_population_estimate() -> None:
    html = stratified_risk([3, 9], [50, 60], [0.5, 0.5])._repr_html_()
    assert "Population-weighted" in html and "<table" in html
