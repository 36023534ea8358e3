"""Outlier safety: conflict check, own-data gating in campaigns, improper posteriors,
target feasibility, and the accurate grid preset with few strata."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import betaln, expit
from statsmodels.stats.proportion import proportion_confint

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.conflict import flag_power
from bayeseval._kernels.loo_prior import loo_beta_mixture
from bayeseval.campaign.forecast import target_feasibility
from bayeseval.campaign.posterior import independent_posterior
from bayeseval.checks import conflict_check
from bayeseval.counts.counts import Counts
from bayeseval.models import fit_hierarchical
from bayeseval.models.exact import ExactFit


# ----------------------------------------------------------------------- conflict check
def _scipy_p_values(n: int, w, a, b) -> np.ndarray:
    """Two-sided mid-p of every count 0..n under a Beta-binomial mixture (scipy)."""
    y = np.arange(n + 1)
    pmf = (w[:, None] * stats.betabinom.pmf(y[None, :], n, a[:, None], b[:, None])).sum(axis=0)
    pmf = pmf / pmf.sum()
    below, above = np.cumsum(pmf), np.cumsum(pmf[::-1])[::-1]
    return np.minimum(1, 2 * np.minimum(below - pmf, above - pmf) + pmf)


def test_flag_power_matches_enumeration_with_scipy():
    s, n = np.array([4, 5, 3, 4, 6, 4, 9]), np.array([50, 60, 40, 50, 70, 50, 25])
    w, a, b = loo_beta_mixture(s, n)
    rates = np.array([[0.08, 0.25, 0.4]] * 7)
    power = flag_power(s, n, rates, alpha=0.05)
    for i in (0, 6):
        flagged = np.flatnonzero(_scipy_p_values(int(n[i]), w[i], a[i], b[i]) <= 0.05)
        ref = stats.binom.pmf(flagged[:, None], n[i], rates[i][None, :]).sum(axis=0)
        np.testing.assert_allclose(power[i], ref, atol=1e-6)
    # one rate per stratum gives one value per stratum
    assert flag_power(s, n, np.full(7, 0.4)).shape == (7,)


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


@pytest.mark.slow
def test_conflict_check_power_and_false_flags_seeded():
    # one stratum at 0.40 with 20 trials among 10-20 strata with Beta(80, 920) rates (near
    # 0.08, sd 0.009) and 50-500 trials; 150 datasets. Holm at 0.05: power measured 0.71
    # on 400 datasets (se here 0.037, bound 0.60 = 3 se below); false flags per dataset
    # measured 0.003 (bound 0.05). With Beta(8, 92) rates (sd 0.027) the power is lower
    # (0.55 measured on 150 datasets): the others' spread widens the reference.
    rng = np.random.default_rng(2026)
    hits, false = [], []
    for _ in range(150):
        m = int(rng.integers(10, 21))
        n = rng.integers(50, 501, m)
        rates = rng.beta(80, 920, m)
        n[0], rates[0] = 20, 0.40
        hits.append(bool(conflict_check(rng.binomial(n, rates), n).table["flag"].iloc[0]))
        rates[0] = rng.beta(80, 920)
        false.append(bool(conflict_check(rng.binomial(n, rates), n).table["flag"].any()))
    assert np.mean(hits) >= 0.60
    assert np.mean(false) <= 0.05


# ----------------------------------------------------------------------- campaigns
def test_mixture_posterior_sample_is_seeded_and_follows_the_beta_posterior():
    post = independent_posterior([2, 30], [20, 100])
    a = post.sample(4000, random_seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a, post.sample(4000, random_seed=np.random.default_rng(3)))
    # independent uniform-prior posteriors Beta(1 + s, 1 + n - s): means 3/22 and 31/102
    np.testing.assert_allclose(a.mean(axis=0), [3 / 22, 31 / 102], atol=4 * 0.08 / np.sqrt(4000))


# ----------------------------------------------------------------------- target feasibility
def test_target_feasibility_recall_campaign_against_statsmodels():
    # recall: trials are the positives; 46-727 positives per stratum, target 0.05
    positives = np.array([46, 80, 150, 300, 727])
    rows = positives * 10
    table = target_feasibility(rows, 0.1, 0.05, strata=list("abcde"))
    for k, m in zip("abcde", positives, strict=True):
        lo, hi = proportion_confint(0.5 * m, m, alpha=0.05, method="wilson")
        assert table.loc[k, "achievable_halfwidth"] == pytest.approx((hi - lo) / 2, rel=1e-9)
        assert table.loc[k, "max_trials"] == pytest.approx(m)
    assert table["feasible"].tolist() == [False, False, False, False, True]
    with pytest.warns(PrecisionLimitedWarning, match=r"a: 0\.139"):
        target_feasibility(rows, 0.1, 0.05, strata=list("abcde"), warn=True)
    with pytest.raises(ValueError, match="p_trial"):
        target_feasibility(rows, 1.5, 0.05)
    with pytest.raises(ValueError, match="target_halfwidth"):
        target_feasibility(rows, 0.1, 0.0)


# ----------------------------------------------------------------------- improper posteriors
@pytest.mark.parametrize("s", [[0, 0, 0], [10, 20, 30]])
def test_bda_prior_with_all_zero_or_all_n_raises(s):
    n = [10, 20, 30]
    with pytest.raises(ValueError, match=r"prior='bda' is improper.*successes=\[.*use prior='default'"):
        ExactFit(Counts.from_arrays(s, n), prior="bda")
    with pytest.raises(ValueError, match="improper"):
        fit_hierarchical(s, n, prior="bda", random_seed=0)


@pytest.mark.parametrize(
    "s, n",
    [([0, 0, 0], [10, 20, 30]), ([10, 20, 30], [10, 20, 30]), ([1000] * 4, [1000] * 4),
     ([0] * 5, [1000] * 5), ([0, 0, 1], [5000, 5000, 5000]), ([0, 50], [50, 50])],
)
def test_summary_mean_lies_inside_its_interval_on_extreme_counts(s, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fit_hierarchical(s, n, random_seed=0, draws=200).summary()
    assert ((t["lower"] <= t["mean"]) & (t["mean"] <= t["upper"])).all()


# ----------------------------------------------------------------------- accurate grid
def _brute_force(s, n, w, m=500):
    """Moments on a fixed fine grid with scipy's betaln (default prior, trapezoid rule)."""
    u = np.linspace(-7.0, 1.5, m)
    v = np.linspace(np.log(1e-2), np.log(1e6), m)
    U, V = np.meshgrid(u, v, indexing="ij")
    mu, kappa = expit(U), np.exp(V)
    a, b = mu * kappa, (1 - mu) * kappa
    lp = np.log(mu * (1 - mu)) + stats.norm.logpdf(V, np.log(20.0), 2.5)
    for sk, nk in zip(s, n, strict=True):
        lp = lp + betaln(a + sk, b + nk - sk) - betaln(a, b)
    wt = np.exp(lp - lp.max())
    wt[0, :] *= 0.5
    wt[-1, :] *= 0.5
    wt[:, 0] *= 0.5
    wt[:, -1] *= 0.5
    wt /= wt.sum()
    A = a[..., None] + np.asarray(s)
    B = b[..., None] + np.asarray(n) - np.asarray(s)
    node_mean = A / (A + B)
    node_var = A * B / ((A + B) ** 2 * (A + B + 1))
    mean = np.einsum("ij,ijk->k", wt, node_mean)
    var = np.einsum("ij,ijk->k", wt, node_var + node_mean**2) - mean**2
    wm = node_mean @ w
    wmean = float((wt * wm).sum())
    wvar = float((wt * (node_var @ (w**2) + wm**2)).sum() - wmean**2)
    return mean, var, wmean, wvar


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_accurate_preset_matches_a_brute_force_grid_with_few_strata(k):
    rng = np.random.default_rng(k)
    n = rng.integers(100, 2000, k)
    s = rng.binomial(n, 0.08)
    w = n / n.sum()
    fit = ExactFit(Counts.from_arrays(s, n), preset="accurate")
    mix = fit.stratum_mixture()
    mean, var, wmean, wvar = _brute_force(s, n, w)
    np.testing.assert_allclose(mix.mean(), mean, rtol=2e-3)
    np.testing.assert_allclose(mix.var(), var, rtol=2e-2)
    got_m, got_v = mix.weighted_moments(w)
    assert got_m == pytest.approx(wmean, rel=2e-3)
    assert got_v == pytest.approx(wvar, rel=2e-2)
    # interval ends against a much finer run of the same engine on its own box
    fine = ExactFit(Counts.from_arrays(s, n), preset="accurate", grid_size=300).stratum_mixture()
    np.testing.assert_allclose(np.ravel(mix.interval(0.95)), np.ravel(fine.interval(0.95)), rtol=5e-3)
