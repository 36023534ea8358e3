"""Tests of bayeseval.checks: predictive checks, side-by-side, pooling by LOO, calibration."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval._api.warnings import ModelCheckWarning, PrecisionLimitedWarning
from bayeseval._kernels.ppc import mid_p as _mid_p
from bayeseval.checks import (
    calibration_study,
    compare_frequentist,
    compare_pooling,
    conflict_check,
    posterior_predictive_check,
    simulation_based_calibration,
)
from bayeseval.models import fit_hierarchical


def fit(s, n, seed=0, draws=4000, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        return fit_hierarchical(s, n, draws=draws, random_seed=seed, **kw)


def quiet_ppc(post, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelCheckWarning)
        return posterior_predictive_check(post, **kw)


def planted_outlier(seed: int, k: int = 15, n: int = 100):
    # k - 1 strata from Beta(20, 180) (mean 0.10, sd 0.021) and one at 0.35
    rng = np.random.default_rng([8, seed])
    theta = rng.beta(20, 180, size=k)
    theta[-1] = 0.35
    trials = np.full(k, n)
    return rng.binomial(trials, theta), trials


# ------------------------------------------------------------------ posterior predictive


def test_mid_p_by_hand():
    rep = np.tile(np.arange(10), 100)[:, None]  # uniform on 0..9
    # obs 3: P(<3) = 0.3, P(=3) = 0.1 -> lower mid-p 0.35, two-sided 0.70
    lower, p = _mid_p(rep, np.array([3]))
    assert lower[0] == pytest.approx(0.35) and p[0] == pytest.approx(0.70)
    # obs 0: lower 0.05 -> 0.10; obs 9: lower 0.95 -> 0.10; obs 12: lower 1 -> 0
    _, p = _mid_p(np.repeat(rep, 3, axis=1), np.array([0, 9, 12]))
    assert p.tolist() == pytest.approx([0.10, 0.10, 0.0])


def test_ppc_mixed_pvalue_matches_beta_binomial_mixture():
    # For a stratum checked by the mixed replicate, P(rep < s) + P(rep = s)/2 is the average
    # over hyperparameter draws of the Beta-binomial cdf/pmf (scipy.stats.betabinom).
    s = np.array([5, 9, 7, 12, 6, 8, 10, 4, 11, 7])
    n = np.full(10, 80)
    post = fit(s, n, seed=1, draws=20000)
    ppc = quiet_ppc(post, random_seed=2)
    mu, kappa = post.draws("mu"), post.draws("kappa")
    a, b = mu * kappa, (1 - mu) * kappa
    mixed = ppc.table.index[ppc.table["check"] == "mixed"]
    assert len(mixed) >= 3
    for k in mixed:
        obs = s[k]
        lower = np.mean(
            stats.betabinom.cdf(obs - 1, 80, a, b) + 0.5 * stats.betabinom.pmf(obs, 80, a, b)
        )
        ref = min(1.0, 2 * min(lower, 1 - lower))
        # Monte Carlo sd of a two-sided p with 20,000 draws is at most 0.007
        assert ppc.table.loc[k, "p_value"] == pytest.approx(ref, abs=0.025)
        assert ppc.table.loc[k, "pred_lower"] <= obs <= ppc.table.loc[k, "pred_upper"]
    assert ppc.outliers == []
    assert list(ppc.table.columns) == [
        "successes", "trials", "pred_lower", "pred_upper", "p_value", "p_posterior", "check",
        "direction", "p_conflict", "flag",
    ]


def test_ppc_global_statistics_observed_values():
    s = np.array([3, 10, 6, 15, 8])
    n = np.array([50, 60, 40, 70, 55])
    ppc = quiet_ppc(fit(s, n), random_seed=0)
    g = ppc.global_table.set_index("statistic")
    # Pearson chi-square of the 2 x K table = sum (s - n p)^2 / (n p (1 - p)), p pooled
    chi2 = stats.chi2_contingency(np.vstack([s, n - s]), correction=False).statistic
    assert g.loc["dispersion", "observed"] == pytest.approx(chi2)
    assert g.loc["min", "observed"] == pytest.approx((s / n).min())
    assert g.loc["max", "observed"] == pytest.approx((s / n).max())
    assert ((g["p_value"] >= 0) & (g["p_value"] <= 1)).all()


def test_ppc_pvalues_roughly_uniform_under_the_true_model():
    # 25 data sets of 20 strata from the model itself (Beta(5, 45) rates, 100 trials each):
    # the per-stratum p-values should be roughly uniform. Tolerances: the mean of 500
    # p-values has sd about 0.29/sqrt(500) = 0.013 if independent (allow 0.05); the share
    # below 0.1 has sd about 0.013 (allow 0.05 either side). Bonferroni flags: about 5% of
    # data sets by design, allow at most 3 of 25.
    pvals, flagged = [], 0
    for r in range(25):
        rng = np.random.default_rng([5, r])
        n = np.full(20, 100)
        s = rng.binomial(n, rng.beta(5, 45, size=20))
        ppc = quiet_ppc(fit(s, n, seed=r, draws=2000), random_seed=r)
        pvals.append(ppc.table["p_value"].to_numpy())
        flagged += bool(ppc.outliers)
    p = np.concatenate(pvals)
    assert p.mean() == pytest.approx(0.5, abs=0.05)
    assert 0.05 <= np.mean(p < 0.1) <= 0.15
    assert 0.35 <= np.mean(p < 0.4) <= 0.45
    assert flagged <= 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_outlier_stratum_is_flagged(seed):
    s, n = planted_outlier(seed)
    post = fit(s, n, seed=seed)
    with pytest.warns(ModelCheckWarning, match="extreme"):
        ppc = posterior_predictive_check(post, random_seed=seed)
    assert ppc.outliers == [14]
    assert ppc.table.loc[14, "direction"] == "high"
    assert ppc.table.loc[14, "check"] == "cross-validated"
    # the plain posterior predictive p-value cannot see it (theta_14 was fit to s_14)
    assert ppc.table.loc[14, "p_posterior"] > 0.05


def test_ppc_rejects_unknown_statistic():
    post = fit([1, 2, 3], [10, 10, 10])
    with pytest.raises(ValueError, match="statistics"):
        posterior_predictive_check(post, statistics=("median",))


# ------------------------------------------------------------------ frequentist side by side


def test_compare_frequentist_reference_values_and_reasons():
    s = np.array([1, 6, 5, 7, 9, 4])
    n = np.array([4, 60, 50, 70, 80, 45])
    post = fit(s, n, seed=3)
    weights = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.1])
    t = compare_frequentist(post, weights=weights, random_seed=0)
    per = t.iloc[:-1]
    # Wilson and Clopper-Pearson from statsmodels (method="wilson", method="beta")
    wl, wu = proportion_confint(s, n, alpha=0.05, method="wilson")
    cl, cu = proportion_confint(s, n, alpha=0.05, method="beta")
    np.testing.assert_allclose(per["wilson_lower"], wl, atol=1e-9)
    np.testing.assert_allclose(per["wilson_upper"], wu, atol=1e-9)
    np.testing.assert_allclose(per["cp_lower"], cl, atol=1e-9)
    np.testing.assert_allclose(per["cp_upper"], cu, atol=1e-9)
    summ = post.summary()
    np.testing.assert_allclose(per["pooled_mean"], summ["mean"])
    np.testing.assert_allclose(
        per["width_ratio"], (summ["upper"] - summ["lower"]) / (wu - wl), rtol=1e-12
    )
    # the 1-of-4 stratum is pulled hard toward the pool: flagged with that reason
    assert per.loc[0, "reason"] == "strong shrinkage of a small stratum"
    assert bool(per.loc[0, "flag"])
    assert not per.loc[[1, 2, 3, 4], "flag"].any()
    # weighted row: stratified estimate sum w r, SE sqrt(sum w^2 r (1 - r) / n)
    r = s / n
    last = t.loc["weighted overall"]
    assert last["raw_rate"] == pytest.approx(np.sum(weights * r))
    assert last["se"] == pytest.approx(np.sqrt(np.sum(weights**2 * r * (1 - r) / n)))
    assert last["pooled_mean"] == pytest.approx(post.weighted(weights).mean())
    assert last["pooled_sd"] == pytest.approx(post.weighted(weights).std(ddof=1))


def test_compare_frequentist_flags_misfit_of_planted_outlier():
    s, n = planted_outlier(0)
    post = fit(s, n, seed=0)
    t = compare_frequentist(post, random_seed=0)
    assert t.loc[14, "reason"] == "misfit"
    assert t["flag"].sum() >= 1


# --------------------------------------------------------------------------- pooling by LOO


def test_compare_pooling_prefers_pooling_that_matches_the_data():
    rng = np.random.default_rng(11)
    # strong heterogeneity: rates spread over 0.02-0.5 with 200 trials each
    s = rng.binomial(200, rng.uniform(0.02, 0.5, size=10))
    table, verdict = compare_pooling(s, [200] * 10, random_seed=1)
    assert table.index[-1] == "complete pooling"
    assert table.index[0] in ("no pooling", "partial pooling")
    assert table.loc["complete pooling", "elpd_diff"] > 4 * table.loc["complete pooling", "dse"]
    assert "clearly favour it over complete pooling" in verdict
    # identical rates: no pooling predicts a left-out stratum worst
    s = rng.binomial(200, np.full(10, 0.1))
    result = compare_pooling(s, [200] * 10, random_seed=2)
    assert result.table.index[0] in ("complete pooling", "partial pooling")
    assert result.table.index[-1] == "no pooling"
    assert result.table.loc["no pooling", "elpd_diff"] > 0
    assert set(result.loo) == {"complete pooling", "no pooling", "partial pooling"}


# --------------------------------------------------------------------------- calibration


def test_calibration_study_coverage():
    t = calibration_study(("exchangeable", "outlier"), n_repeats=60, random_seed=4)
    t = t.set_index(["configuration", "method"])
    for config in ("exchangeable", "outlier"):
        row = t.loc[(config, "wilson")]
        # 720 intervals; Wilson near nominal at n = 40, p = 0.1 (Brown, Cai & DasGupta 2001)
        assert abs(row["coverage"] - 0.95) < 0.03
        assert t.loc[(config, "clopper_pearson"), "coverage"] >= 0.95  # conservative
        assert t.loc[(config, "wald"), "coverage"] < 0.92  # Wald under-covers at p = 0.1
        # hierarchical: near nominal over all strata and narrower than Wilson
        assert t.loc[(config, "hierarchical"), "coverage"] > 0.91
        assert t.loc[(config, "hierarchical"), "mean_width"] < row["mean_width"]
    # the outlying stratum alone: pooling pulls it toward the rest and under-covers it
    out = t.loc["outlier (outlying stratum)"]
    assert out.loc["hierarchical", "coverage"] < out.loc["wilson", "coverage"] - 0.05


@pytest.mark.slow
def test_calibration_study_full():
    t = calibration_study(n_repeats=300, random_seed=5).set_index(["configuration", "method"])
    for config in ("exchangeable", "outlier", "unequal_sizes"):
        assert abs(t.loc[(config, "wilson"), "coverage"] - 0.95) < 0.02
        assert abs(t.loc[(config, "hierarchical"), "coverage"] - 0.95) < 0.03
        assert abs(t.loc[(config, "jeffreys"), "coverage"] - 0.95) < 0.025


def test_simulation_based_calibration_uniform_and_detects_a_wrong_prior():
    ok = simulation_based_calibration(n_repeats=100, random_seed=1).table.set_index("parameter")
    assert (ok["p_value"] > 0.01).all()
    # fitting with a prior far from the simulating one: ranks pile up, test rejects
    bad = simulation_based_calibration(
        n_repeats=100, random_seed=1, fit_prior={"kappa": stats.lognorm(0.3, scale=300)}
    ).table.set_index("parameter")
    assert bad.loc["kappa", "p_value"] < 1e-6
    assert bad.loc["theta[0]", "p_value"] < 1e-3


def test_input_errors_name_the_argument():
    with pytest.raises(ValueError, match="configurations"):
        calibration_study(("bimodal",), n_repeats=2)
    with pytest.raises(ValueError, match="trials"):
        simulation_based_calibration(trials=[10])
    with pytest.raises(ValueError, match="methods"):
        calibration_study(methods=("bayes",), n_repeats=2)


def test_ppc_works_on_multi_level_strata_and_flags_the_planted_cell():
    # group x label cells: five near 0.08, one planted at 0.375 (30 of 80)
    import pandas as pd

    from bayeseval import Counts

    idx = pd.MultiIndex.from_product([["a", "b", "c"], ["x", "y"]], names=["group", "label"])
    counts = Counts(pd.Series([3, 5, 2, 4, 4, 30], index=idx), pd.Series([40, 50, 30, 60, 40, 80], index=idx))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = posterior_predictive_check(fit_hierarchical(counts, random_seed=0), random_seed=0)
    assert list(res.table.index) == list(idx)
    assert list(res.outliers) == [("c", "y")]


@pytest.mark.parametrize("trials", [50_000, 1_000_000])
def test_conflict_check_flags_an_outlier_of_many_trials(trials):
    # nine strata at 0.20 and one at 0.10: the binomial z of the gap is over 50, so any
    # sound check flags it and reads its own interval
    n = np.full(10, trials)
    s = (n // 5).copy()
    s[-1] = trials // 10
    table = conflict_check(s, n).table
    assert table["flag"].tolist() == [False] * 9 + [True]
    assert table["read"].iloc[-1] == "adaptive" and table["direction"].iloc[-1] == "low"
    assert 0.0 <= table["p_value"].iloc[-1] < 1e-12 < 0.5 < table["p_value"].iloc[:9].min()
