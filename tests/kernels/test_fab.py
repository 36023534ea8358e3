"""Adaptive (FAB) binomial intervals: exactness, coverage by enumeration, widths, LOO prior.

References are independent of the code under test: scipy.stats.binom / betabinom / beta,
statsmodels' Wilson interval, brute-force enumeration of acceptance regions, and a
brute-force quadrature of the hierarchical posterior.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.fab import (
    MAX_SPLIT_TRIALS,
    fab_interval,
    fab_intervals_all_counts,
    fab_regions,
    split_trials,
)
from tests.kernels.helpers import _expected_width, clopper_pearson


@pytest.mark.parametrize("n", [1, 7, 30, 200])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_equal_split_is_clopper_pearson(n, level):
    x = np.arange(n + 1)
    iv = fab_interval(x, n, prior_a=2.0, prior_b=30.0, level=level, split=0.5)
    lo, hi = clopper_pearson(x, n, level)
    np.testing.assert_allclose(iv.lower, lo, atol=1e-10)
    np.testing.assert_allclose(iv.upper, hi, atol=1e-10)
    # the returned ends never lie inside the exact ones
    assert np.all(iv.lower <= lo + 1e-15) and np.all(iv.upper >= hi - 1e-15)


def test_split_trials_grid():
    n = np.arange(1, 20_001)
    m = split_trials(n)
    assert np.array_equal(m[:100], n[:100])  # own trials up to 100
    low = n <= MAX_SPLIT_TRIALS
    assert np.all((m[low] <= n[low]) & (n[low] < 1.1 * m[low] + 1))  # at most one grid step below
    # above MAX_SPLIT_TRIALS: the largest grid value below it (100 * 1.1^k rounded, k = 31)
    assert np.all(m[~low] == round(100 * 1.1**31)) and round(100 * 1.1**32) > MAX_SPLIT_TRIALS
    assert np.all(np.diff(m) >= 0)
    assert np.unique(m[100:]).size < 60  # a few dozen shared values above 100
    assert split_trials(10**9) == m[-1]


def test_all_counts_without_trials_is_the_whole_range():
    iv = fab_intervals_all_counts(0, [1.0], 0.95, diffuse_weight=0.1)
    assert iv.lower.tolist() == [0.0] and iv.upper.tolist() == [1.0]


def test_fixed_split_regions_match_definition():
    n, alpha, w = 15, 0.1, 0.3
    p0 = np.array([0.05, 0.3, 0.61])
    a, b = fab_regions(p0, n, None, alpha, split=w)
    for k, p in enumerate(p0):
        cdf = stats.binom.cdf(np.arange(-1, n + 1), n, p)  # P(X <= j), j = -1..n
        expect_a = max(j for j in range(n + 1) if cdf[j] <= alpha * w)  # P(X < j) = cdf[j]
        sf = stats.binom.sf(np.arange(n + 1), n, p)
        expect_b = min(j for j in range(n + 1) if sf[j] <= alpha * (1 - w))
        assert (a[k], b[k]) == (expect_a, expect_b)


def test_diffuse_component_bounds_the_outlier_width():
    # prior near 0.08, truth 0.40: the pure FAB interval may be much wider than
    # Clopper-Pearson; the uniform component brings it back near CP (exact expectations)
    n, truth = 100, 0.40
    pmf = beta_mixture_predictive(n, [1.0], [8.0], [92.0])
    x = np.arange(n + 1)
    cp = _expected_width(*clopper_pearson(x, n, 0.95), n, truth)
    pure = _expected_width(*fab_intervals_all_counts(n, pmf, 0.95), n, truth)
    mixed = _expected_width(*fab_intervals_all_counts(n, pmf, 0.95, diffuse_weight=0.1), n, truth)
    assert pure > 1.15 * cp
    assert mixed < 1.15 * cp


def test_broadcast_prior_per_stratum_and_shared_mixture():
    s, n = np.array([2, 9]), np.array([30, 30])
    one = fab_interval(s, n, prior_a=[3.0, 3.0], prior_b=[30.0, 30.0])
    mix = fab_interval(s, n, prior_a=[3.0], prior_b=[30.0], prior_weights=[1.0])
    np.testing.assert_allclose(one.lower, mix.lower, atol=1e-12)
    np.testing.assert_allclose(one.upper, mix.upper, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"prior_a": -1.0}, ValueError, ["prior_a", "-1.0"]),
        ({"prior_b": np.nan}, ValueError, ["prior_b", "nan"]),
        ({"prior_weights": [-0.5, 1.5]}, ValueError, ["prior_weights", "-0.5"]),
        ({"prior_weights": [0.0, 0.0]}, ValueError, ["prior_weights", "0.0"]),
        ({"prior_a": [1.0, 2.0, 3.0]}, ValueError, ["prior_a", "(3,)"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"level": "high"}, TypeError, ["level", "'high'"]),
        ({"split": 2.0}, ValueError, ["split", "2.0"]),
        ({"successes": [3, 12]}, ValueError, ["successes", "12"]),
        ({"trials": [10, -1]}, ValueError, ["trials", "-1"]),
    ],
)
def test_validation_names_argument_and_value(kwargs, exc, words):
    args = {"successes": [3, 4], "trials": [10, 10], "prior_a": 1.0, "prior_b": 1.0}
    if "prior_weights" in kwargs:
        args.update(prior_a=[1.0, 2.0], prior_b=[1.0, 2.0])
    args.update(kwargs)
    with pytest.raises(exc) as info:
        fab_interval(**args)
    for word in words:
        assert word in str(info.value)


def test_monotone_split_path_matches_brute_force():
    # the dynamic programme behind fab_split against enumeration of every
    # non-decreasing path (5 grid points x 4 levels)
    from bayeseval._kernels.fab import _best_monotone_path

    rng = np.random.default_rng(4)
    cost = rng.uniform(size=(3, 5, 4))
    paths = [p for p in itertools.product(range(4), repeat=5) if list(p) == sorted(p)]
    got = _best_monotone_path(cost)
    for i in range(3):
        best = min(sum(cost[i, k, j] for k, j in enumerate(p)) for p in paths)
        assert sum(cost[i, k, j] for k, j in enumerate(got[i])) == pytest.approx(best)
        assert np.all(np.diff(got[i]) >= 0)


def test_adaptive_interval_of_a_huge_stratum_is_clopper_pearson():
    # 67 million trials: no (trials + 1) x grid tables; the equal-tailed exact interval
    from scipy import stats

    from bayeseval._kernels.fab import MAX_FAB_TRIALS, fab_interval

    s, n = np.array([3, 12, 40_000]), np.array([50, 60, 67_108_862])
    assert n[2] > MAX_FAB_TRIALS
    lo, hi = fab_interval(s, n, prior_a=2.0, prior_b=30.0, level=0.95)
    cp_lo = stats.beta.ppf(0.025, s[2], n[2] - s[2] + 1)
    cp_hi = stats.beta.ppf(0.975, s[2] + 1, n[2] - s[2])
    np.testing.assert_allclose([lo[2], hi[2]], [cp_lo, cp_hi], rtol=1e-9)
    ref = fab_interval(s[:2], n[:2], prior_a=2.0, prior_b=30.0, level=0.95)
    np.testing.assert_array_equal(lo[:2], ref.lower)  # the others keep their adaptive split
