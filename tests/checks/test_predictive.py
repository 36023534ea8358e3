"""Tests of bayeseval.checks: predictive checks, side-by-side, pooling by LOO, calibration."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval import fit_hierarchical, proportion_ci
from bayeseval._api.warnings import ModelCheckWarning
from bayeseval._kernels.loo_prior import loo_beta_mixture
from bayeseval._kernels.ppc import loo_mixed_check, mixture_mid_p
from bayeseval.checks import conflict_check, posterior_predictive_check
from bayeseval.checks import predictive as checks
from bayeseval.counts.counts import Counts
from tests.checks.helpers import fit, loo_reference, planted_outlier, predictive_reference
from tests.helpers import N, S, _scipy_p_values


def quiet_ppc(post, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelCheckWarning)
        return posterior_predictive_check(post, **kw)


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
        lower = np.mean(stats.betabinom.cdf(obs - 1, 80, a, b) + 0.5 * stats.betabinom.pmf(obs, 80, a, b))
        ref = min(1.0, 2 * min(lower, 1 - lower))
        # Monte Carlo sd of a two-sided p with 20,000 draws is at most 0.007
        assert ppc.table.loc[k, "p_value"] == pytest.approx(ref, abs=0.025)
        assert ppc.table.loc[k, "pred_lower"] <= obs <= ppc.table.loc[k, "pred_upper"]
    assert ppc.outliers == []
    assert list(ppc.table.columns) == [
        "successes",
        "trials",
        "pred_lower",
        "pred_upper",
        "p_value",
        "p_posterior",
        "check",
        "direction",
        "p_conflict",
        "flag",
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


def test_replicate_budget():
    assert checks._n_reps(4000, 10) == 4000
    assert checks._n_reps(4000, 2000) == 4000
    assert checks._n_reps(4000, 20_000) == 400
    assert checks._n_reps(4000, 10_000) == 800
    assert checks._n_reps(300, 20_000) == 300


def test_capped_replicates_agree_with_all_draws(monkeypatch):
    # 500 strata, 2,000 draws: a budget of 200,000 cells uses the first 400 draws. The
    # capped check must flag the same strata (the flags come from exact p-values) and give
    # replicate p-values within Monte Carlo error of the check with every draw.
    rng = np.random.default_rng(11)
    n = rng.integers(20, 200, 500)
    s = rng.binomial(n, rng.beta(3, 30, 500))
    n[:3] = 150
    s[:3] = 75  # three clear outliers (0.5 among rates near 0.09)
    post = fit_hierarchical(s, n, draws=2000, random_seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = checks.posterior_predictive_check(post, random_seed=1)
        monkeypatch.setattr(checks, "_REP_CELLS", 200_000)
        monkeypatch.setattr(checks, "_MIN_REPS", 50)
        post2 = fit_hierarchical(s, n, draws=2000, random_seed=0)  # theta not drawn yet
        capped = checks.posterior_predictive_check(post2, random_seed=1)
    assert post2._theta is None  # the capped check drew only 400 rows of theta
    assert capped.outliers == full.outliers and set(full.outliers) >= {0, 1, 2}
    a, b = full.table["p_value"].to_numpy(), capped.table["p_value"].to_numpy()
    # two-sided mid-p: Monte Carlo sd at most 1 / sqrt(draws) -> sd of the difference
    # at most sqrt(1/400 + 1/2000) = 0.055; 5 sd over 500 strata
    assert np.max(np.abs(a - b)) < 0.27
    assert abs(np.mean(a - b)) < 0.02  # no systematic shift (sd of the mean ~0.0025)
    # the posterior replicate, from the exact conditional of theta: the same distribution
    pa, pb = full.table["p_posterior"].to_numpy(), capped.table["p_posterior"].to_numpy()
    assert abs(np.mean(pa - pb)) < 0.02


def test_conflict_check_table_and_p_values_match_scipy():
    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    res = conflict_check(s, n)
    w, a, b = loo_beta_mixture(s, n)
    ref = _scipy_p_values(20, w[6], a[6], b[6])[9]
    assert res.table.loc[6, "p_value"] == pytest.approx(ref, rel=1e-3)  # components under 1e-6 dropped
    assert res.flagged == [6]
    assert res.table.loc[6, "read"] == "adaptive" and res.table.loc[6, "direction"] == "high"
    assert (res.table.loc[:5, "read"] == "pooled").all()
    # a Counts object and a posterior give the same table
    post = fit_hierarchical(s, n, random_seed=0, draws=200)
    pd.testing.assert_frame_equal(conflict_check(post).table, res.table)
    assert list(res.to_frame().columns)[-2:] == ["read", "reason"]


def test_conflict_check_validates_level_and_control():
    with pytest.raises(ValueError, match="control.*'bonferroni'|'bonferroni'.*control"):
        conflict_check([1, 2], [10, 10], control="bonferroni")
    with pytest.raises(ValueError, match="level"):
        conflict_check([1, 2], [10, 10], level=1.5)


def test_outlier_row_points_to_its_adaptive_interval(rep_report_read):
    t = rep_report_read.table
    # which interval: the leave-one-out conflict p-value at most 0.20 (or flagged) -> adaptive
    p = conflict_check(S, N).table["p_value"].to_numpy()
    assert t["read"].tolist() == np.where(p <= 0.20, "adaptive", "pooled").tolist()
    assert t["read"].tolist() == ["pooled"] * 6 + ["adaptive"]
    # its ends: the adaptive interval of proportion_ci, and the pooled interval elsewhere
    lo, hi = proportion_ci(S, N, method="adaptive")
    np.testing.assert_allclose(t["lower"].iloc[6], lo[6], rtol=1e-12)
    np.testing.assert_allclose(t["upper"].iloc[6], hi[6], rtol=1e-12)
    np.testing.assert_array_equal(t["lower"].iloc[:6], t["pooled_lower"].iloc[:6])
    np.testing.assert_array_equal(t["upper"].iloc[:6], t["pooled_upper"].iloc[:6])
    assert t.loc["g", "read_reason"].startswith("count above what the other strata predict (p = ")
    assert t.loc["a", "read_reason"] == "consistent with the other strata"
    note = [f for f in rep_report_read.findings if f.flag == "read adaptive"]
    assert len(note) == 1 and note[0].strata == () and note[0].severity == "note"
    assert "read adaptive" not in t.loc["g", "flags"]  # the read column marks it
    assert "'g'" in note[0].message and "lower and upper give it" in note[0].message
    assert any("their lower and upper are the adaptive interval" in w for w in rep_report_read.warnings)
    assert any(f.flag == "guarantee" and "'average'" in f.message for f in rep_report_read.findings)


# ------------------------------------------------ the cross-validated check at large counts
#: the example of five ordinary strata whose third got a predictive of 76-114 of 1,411
LARGE_S, LARGE_N = np.array([755, 8, 1180, 1418, 325]), np.array([1018, 12, 1411, 1764, 449])


def ppc_and_warnings(s, n):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ppc = posterior_predictive_check(fit(s, n), random_seed=1)
    return ppc, [
        w
        for w in caught
        if issubclass(w.category, ModelCheckWarning) and "stratum(s) with counts extreme" in str(w.message)
    ]


def assert_interval_within_mc(lo, hi, cdf, level=0.95, tol=0.006):
    # an interval read from 20,000 replicates: the reference cdf at its ends is within
    # 5 Monte Carlo sd (sqrt(0.025 * 0.975 / 20,000) = 0.0011) of the 2.5% and 97.5% points
    half = (1 - level) / 2
    assert cdf[lo] >= half - tol and (lo == 0 or cdf[lo - 1] <= half + tol)
    assert cdf[hi] >= 1 - half - tol and cdf[hi - 1] <= 1 - half + tol


def test_cross_validated_check_of_large_counts_matches_a_brute_force_leave_one_out_fit():
    # Reference: the posterior of (logit mu, log kappa) given the other four strata,
    # integrated by brute force with SciPy (tests/checks/helpers.py: loo_reference), and the
    # held-out count's predictive from scipy.stats.betabinom. The third stratum (1,180 of
    # 1,411) had a predictive of 76-114 and p = 0: the full posterior's grid masses
    # underflow to 0 where its own likelihood is e^-2768, and they were floored at 1e-300
    # before dividing by it.
    ppc, warned = ppc_and_warnings(LARGE_S, LARGE_N)
    t = ppc.table
    checked = np.flatnonzero(t["check"].to_numpy() == "cross-validated")
    assert 2 in checked
    for k in checked:
        lower, p, lo, hi, _ = predictive_reference(LARGE_S[k], LARGE_N[k], *loo_reference(LARGE_S, LARGE_N, k))
        assert t["p_value"].iloc[k] == pytest.approx(p, rel=1e-4)
        assert (t["pred_lower"].iloc[k], t["pred_upper"].iloc[k]) == (lo, hi)  # tabulated: exact
    assert (t.loc[2, "pred_lower"], t.loc[2, "pred_upper"]) == (779, 1249)
    assert t["p_value"].min() > 0.1 and ppc.outliers == [] and warned == []


def _scaled(factor):
    return LARGE_S * factor, LARGE_N * factor


@pytest.mark.parametrize(
    ("s", "n", "outliers"),
    [
        (*_scaled(10), []),
        (*_scaled(100), []),
        # one huge stratum at 0.45 among small ones near 0.11: the huge one is the outlier
        (np.array([5, 6, 4, 7, 9000]), np.array([50, 50, 40, 60, 20000]), [4]),
        # one huge stratum in line with small ones: nothing to flag
        (np.array([5, 6, 4, 7, 10_300]), np.array([50, 50, 40, 60, 100_000]), []),
        # four large strata at 0.10 and one at 0.15 (about 5 s: thousands of grid points
        # hold the mass of each predictive)
        pytest.param(np.array([1000, 1010, 990, 1005, 1500]), np.full(5, 10_000), [4], marks=pytest.mark.slow),
    ],
)
def test_cross_validated_check_of_large_counts_matches_a_refit_without_the_stratum(s, n, outliers):
    # Reference: the exact engine fitted to the other strata only (its own grid, no
    # reweighting), each count judged against that fit's predictive of a new stratum. The
    # kernel checks every stratum; the predictive check uses it for its suspects. Two grid
    # integrations of the hyperparameters agree to about 1% on a p-value (the huge stratum
    # in line with small ones: 0.7436 here, 0.7490 from the refit's 48 x 48 grid and 0.7436
    # from a brute-force integration, tests/checks/helpers.py:loo_reference).
    post = fit(s, n)
    res = loo_mixed_check(s, n, post.exact.predictive_nodes(), level=0.95)
    for k in range(len(s)):
        keep = np.arange(len(s)) != k
        other = fit(s[keep], n[keep]).exact
        nodes = other.predictive_nodes([0])  # no offsets: every column is a new stratum's
        ref = mixture_mid_p(int(s[k]), int(n[k]), other.weights, nodes.a[:, 0], nodes.b[:, 0])
        assert res["p_value"][k] == pytest.approx(ref[1], rel=0.01)
    ppc, warned = ppc_and_warnings(s, n)
    t = ppc.table
    checked = t["check"].to_numpy() == "cross-validated"
    np.testing.assert_array_equal(t["p_value"].to_numpy()[checked], res["p_value"][checked])
    ordinary = np.setdiff1d(np.arange(len(s)), outliers)
    assert res["p_value"][ordinary].min() > 0.05 and t["p_value"].iloc[ordinary].min() > 0.05
    assert np.all((res["pred_lower"] <= s)[ordinary] & (s <= res["pred_upper"])[ordinary])
    assert t["pred_lower"].iloc[ordinary].le(t["successes"].iloc[ordinary]).all()
    assert t["pred_upper"].iloc[ordinary].ge(t["successes"].iloc[ordinary]).all()
    assert np.flatnonzero(res["flag"]).tolist() == outliers
    assert ppc.outliers == outliers and len(warned) == (1 if outliers else 0)


@pytest.mark.slow  # SciPy's pmf over 14,000 and 20,000 counts: about 20 s
@pytest.mark.parametrize(
    ("s", "n", "k"),
    [
        (*_scaled(10), 2),
        (np.array([5, 6, 4, 7, 9000]), np.array([50, 50, 40, 60, 20000]), 4),
        (np.array([1000, 1010, 990, 1005, 1500]), np.full(5, 10_000), 4),
    ],
)
def test_cross_validated_check_of_many_trials_matches_scipy(s, n, k):
    t = ppc_and_warnings(s, n)[0].table
    assert t["check"].iloc[k] == "cross-validated"
    lower, p, lo, hi, cdf = predictive_reference(s[k], n[k], *loo_reference(s, n, k))
    assert t["p_value"].iloc[k] == pytest.approx(p, rel=1e-3)
    assert_interval_within_mc(t["pred_lower"].iloc[k], t["pred_upper"].iloc[k], cdf)


def test_cross_validated_check_from_posterior_draws_matches_the_leave_one_out_fit():
    # An engine without a grid (here: 4,000 exact-engine draws handed over as plain draws,
    # as the PyMC engine gives them): the draws are reweighted by 1 / p(s_k | mu, kappa).
    # With 1,411 trials one draw carried 64% of stratum 2's weight (p 0.057 for 0.167);
    # with so few effective draws the exact engine refits the posterior without the stratum.
    # Several suspects used to raise IndexError. Reference: the brute-force leave-one-out
    # fit with SciPy; importance sampling from 4,000 draws is within 0.02 of it here.
    from bayeseval.models.posterior import Posterior

    post = fit(LARGE_S, LARGE_N, seed=0)
    draws = Posterior(
        counts=post.counts,
        engine="pymc",
        model="beta_binomial",
        prior=post.prior,
        theta=post.theta,
        hyper={k: post.draws(k) for k in ("mu", "kappa")},
    )
    t = quiet_ppc(draws, random_seed=1).table
    checked = np.flatnonzero(t["check"].to_numpy() == "cross-validated")
    assert 2 in checked and checked.size >= 2
    for k in checked:
        p = predictive_reference(LARGE_S[k], LARGE_N[k], *loo_reference(LARGE_S, LARGE_N, k))[1]
        assert t["p_value"].iloc[k] == pytest.approx(p, abs=0.02 if k != 2 else 1e-3)


@pytest.mark.slow
def test_conflict_check_of_units_uses_the_pooled_model_over_units():
    # counts by unit: each stratum's total successes against the units model fitted to the others
    from bayeseval.models.exact_units import loo_units_p_values

    rng = np.random.default_rng(4)
    rows = []
    for k, r in enumerate([0.45] + [0.9] * 6):
        p = rng.beta(4 * r, 4 * (1 - r), 20)
        rows += [(k, float(a)) for a in rng.binomial(4, p)]
    frame = pd.DataFrame(rows, columns=["stratum", "unit_successes"]).assign(unit_trials=4)
    units = frame.groupby(["stratum", "unit_successes", "unit_trials"], as_index=False).size()
    units = units.rename(columns={"size": "units"})
    idx = pd.Index(range(7), name="stratum")
    s = frame.groupby("stratum")["unit_successes"].sum().reindex(idx)
    counts = Counts(s, pd.Series(80, index=idx), units=units)
    res = conflict_check(counts)
    np.testing.assert_allclose(res.table["p_value"], np.exp(loo_units_p_values(counts)[0]), rtol=1e-12)
    assert res.flagged == [0]
    assert res.table.loc[0, "read"] == "units" and res.table.loc[0, "direction"] == "low"
