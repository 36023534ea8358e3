"""The frequentist modules' public surface: clustered rows, renamed keywords, results protocol.

References are independent of the code under test: statsmodels (cluster-robust OLS, binomial
intervals), closed forms computed here by hand, and the numpydoc validator.
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import bayeseval
from bayeseval._api.results import Result
from bayeseval._kernels.binomial import binomial_bounds, normalise_method
from bayeseval.estimate.classic import _wilson, estimate_error
from bayeseval.estimate.stratified import (
    ReweightedMetrics,
    StratifiedRisk,
    clustered_risk,
    reweight,
    stratified_risk,
    weighted_metric,
)
from bayeseval.plan import (
    GapPlan,
    MultiPlan,
    SplitDecision,
    SubgroupPlan,
    detectable_gap,
    sample_size_multi,
    split_decision,
    subgroup_rows,
)

sys.path.insert(0, str(Path(__file__).parent))
import test_public_api as api  # noqa: E402

MODULES = ("estimate.stratified", "plan.sizes", "plan.allocation", "plan.decision", "plan.gaps", "estimate.classic", "counts.counts")


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


# -- clustered rows: their own entry point ------------------------------------------------------


def _clustered_sample(seed: int = 5, n_rows: int = 600, k: int = 3):
    rng = np.random.default_rng(seed)
    cl = rng.integers(0, 50, n_rows)
    strata = rng.integers(0, k, n_rows)
    y = (rng.random(n_rows) < 0.15 + 0.03 * (cl % 7) + 0.05 * strata).astype(int)
    return y, strata, cl


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


def test_estimate_error_bootstrap632_reports_its_fits():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(int)
    kw = dict(methods=("bootstrap632",), random_seed=3)
    new = estimate_error(LinearDiscriminantAnalysis(), X, y, n_resamples=15, **kw)
    assert "15 bootstrap fits" in new.loc[0, "notes"]
    with pytest.raises(ValueError, match=r"n_resamples.*0"):
        estimate_error(LinearDiscriminantAnalysis(), X, y, n_resamples=0, **kw)


def test_no_banned_names_and_keyword_only_seeds_in_these_modules():
    offenders = []
    for qual, func in api.public_callables():
        if not any(f"bayeseval.{m}." in qual for m in MODULES):
            continue
        sig = api._signature(func)
        for name, par in (sig.parameters.items() if sig else ()):
            if name in api.BANNED:
                offenders.append(f"{qual}({name})")
            if name == "random_seed" and par.kind is not inspect.Parameter.KEYWORD_ONLY:
                offenders.append(f"{qual}(random_seed positional)")
    assert offenders == []


def test_docstrings_of_these_modules_pass_numpydoc():
    objects = {q: f for q, f in api.public_callables() if any(f"bayeseval.{m}." in q for m in MODULES)}
    assert len(objects) > 20
    assert api.numpydoc_failures(objects) == {}


# -- results protocol ---------------------------------------------------------------------------


def test_stratified_risk_table_is_the_per_stratum_table_and_html_is_escaped():
    res = _quiet(stratified_risk, [26, 26], [286, 114], {"<b>x</b>": 0.8, "b": 0.2},
                 strata=["<b>x</b>", "b"])
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


def test_plan_results_have_one_row_tables_with_closed_form_values():
    plan = subgroup_rows(323, 8, 0.004)
    assert isinstance(plan, SubgroupPlan) and isinstance(plan, Result)
    row = plan.table.iloc[0]
    assert row["minority_rows"] == 8 * 323
    assert row["total_rows"] == math.ceil(8 * 323 / 0.004 - 1e-9)

    gap = detectable_gap(rate_a=0.1, rate_b=0.15)
    assert isinstance(gap, GapPlan)
    # pooled two-proportion z-test sample size by hand
    from scipy.stats import norm

    za, zb, pbar = norm.ppf(0.975), norm.ppf(0.8), 0.125
    n = (za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(0.1 * 0.9 + 0.15 * 0.85)) ** 2 / 0.05**2
    assert gap.table.loc[0, "n_per_group"] == math.ceil(n)
    assert gap.to_dict()["solved_for"] == "n_per_group"

    decision = split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    assert isinstance(decision, SplitDecision)
    assert decision.table.loc[0, "n_test"] == math.ceil(323 / 0.0042)
    assert decision.to_dict()["branch"] == "grow_test"

    multi = sample_size_multi({"recall": 0.7}, halfwidth=0.05, prevalence=0.1)
    assert isinstance(multi, MultiPlan) and isinstance(multi, Result)
    trials = math.ceil(norm.ppf(0.975) ** 2 * 0.21 / 0.05**2)
    assert multi.to_frame().loc["recall", "trials"] == trials
    assert multi.rows == math.ceil(trials / 0.1)
    assert "recall" in repr(multi)


# -- one binomial kernel ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "sm_method"),
    [("wilson", "wilson"), ("jeffreys", "jeffreys"), ("clopper_pearson", "beta"),
     ("agresti_coull", "agresti_coull"), ("wald", "normal")],
)
def test_binomial_bounds_match_statsmodels(method, sm_method):
    from statsmodels.stats.proportion import proportion_confint

    # interior counts: at s = n the Jeffreys upper bound is set to 1 (Brown, Cai and
    # DasGupta 2001), which statsmodels does not do
    s = np.array([1, 7, 19, 39])
    n = np.array([10, 10, 60, 40])
    lo, hi = binomial_bounds(s, n, 0.1, method)
    ref_lo, ref_hi = proportion_confint(s, n, alpha=0.1, method=sm_method)
    np.testing.assert_allclose(lo, np.clip(ref_lo, 0, 1), atol=1e-10)
    np.testing.assert_allclose(hi, np.clip(ref_hi, 0, 1), atol=1e-10)


def test_classic_wilson_is_the_shared_kernel():
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = _wilson(13, 57, 0.9)
    ref = proportion_confint(13, 57, alpha=0.1, method="wilson")
    assert (lo, hi) == pytest.approx(ref, abs=1e-12)


def test_normalise_method_names_the_value():
    assert normalise_method("Clopper-Pearson") == "clopper_pearson"
    with pytest.raises(ValueError, match="method.*'bogus'"):
        normalise_method("bogus")


# -- warnings point at the caller's line ------------------------------------------------------


def _warning_sites(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        func()
    return {(w.category.__name__, Path(w.filename).name) for w in caught}


def test_warnings_point_at_the_caller():
    here = Path(__file__).name
    sites = _warning_sites(lambda: stratified_risk([0, 0], [10, 0], [0.5, 0.5]))
    assert sites == {("ZeroVarianceWarning", here), ("EmptyStratumWarning", here)}
    sites = _warning_sites(lambda: clustered_risk([0, 0, 1, 1], cluster=[0, 1, 2, 3],
                                                  strata=list("aabb"), weights=[0.5, 0.5]))
    assert sites == {("ZeroVarianceWarning", here)}
    sites = _warning_sites(lambda: weighted_metric([1, 0, 0, 0], [0, 0, 0, 0], weights=0.5,
                                                   metric=["recall", "precision"]))
    assert sites == {("ReweightingWarning", here), ("EmptyStratumWarning", here)}


def test_calibration_warning_points_at_the_caller():
    from sklearn.naive_bayes import GaussianNB

    # Gaussian naive Bayes on strongly correlated features is overconfident
    rng = np.random.default_rng(1)
    z = rng.normal(size=(400, 1))
    X = np.hstack([z + 0.05 * rng.normal(size=(400, 1)) for _ in range(8)])
    y = (z[:, 0] + rng.normal(size=400) > 0).astype(int)
    sites = _warning_sites(lambda: estimate_error(GaussianNB(), X, y, methods=("risk_averaging",),
                                                  random_seed=0))
    assert sites == {("CalibrationWarning", Path(__file__).name)}
