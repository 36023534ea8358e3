"""Tests of ``bayeseval.checks.compare``."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval.checks import compare_frequentist, compare_pooling
from tests.checks.helpers import fit, planted_outlier


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
    np.testing.assert_allclose(per["width_ratio"], (summ["upper"] - summ["lower"]) / (wu - wl), rtol=1e-12)
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


def test_compare_pooling_does_not_call_a_small_difference_clear_when_its_se_is_zero():
    # four identical strata: every pointwise difference is the same, so ArviZ's dse is 0 and
    # any difference would be "over 2 standard errors"; complete and partial pooling differ by
    # well under 4 elpd (small, Sivula et al. 2022)
    result = compare_pooling([0, 0, 0, 0], [50] * 4, random_seed=0)
    t = result.table
    other = [m for m in ("complete pooling", "partial pooling") if m != t.index[0]][0]
    assert t.loc[other, "dse"] < 1e-9 and 0 < t.loc[other, "elpd_diff"] < 4
    assert f"do not clearly distinguish it from {other}" in result.verdict
    assert f"clearly favour it over {other}" not in result.verdict
