"""Tests of ``bayeseval._kernels.finite_pool``: exact intervals for the rate of a finite pool.

References: ``scipy.stats.hypergeom`` (its tails, computed by other code than the kernel's
series), a brute-force inversion written here that scans every count the pool may hold,
exact enumeration of the coverage, and Clopper-Pearson from ``scipy.stats.beta`` quantiles
for the limit of a large pool.

Exact enumeration (every draw count ``n`` and every pool count ``K`` of pools of 1, 2, 5,
12, 30 and 61 rows): the smallest coverage of the two-sided interval is 0.9530 at level 0.95
(61 rows, 15 drawn, 43 successes in the pool) and 0.9004 at level 0.90 (30 rows, 15 drawn,
4 successes); of the one-sided bounds 0.9502 and 0.9001. Pools of up to 5 rows are covered
with probability 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval import sample_size
from bayeseval._kernels.finite_pool import (
    _upper_tail,
    expected_pool_halfwidth,
    pool_ci,
    pool_halfwidth,
    pool_sample_size,
)


def _brute_force(s: int, n: int, rows: int, level: float, side: str = "two") -> tuple[float, float]:
    """Scan every count the pool may hold; keep those whose tails reach the threshold (closed)."""
    a = (1 - level) / 2 if side == "two" else 1 - level
    k = np.arange(rows + 1)
    feasible = (k >= s) & (rows - k >= n - s)
    up = stats.hypergeom.sf(s - 1, rows, k, n)  # P(S >= s | K)
    down = stats.hypergeom.cdf(s, rows, k, n)  # P(S <= s | K)
    keep = feasible.copy()
    if side != "upper":
        keep &= up >= a * (1 - 1e-9)
    if side != "lower":
        keep &= down >= a * (1 - 1e-9)
    kept = k[keep]
    lo = kept.min() if side != "upper" else 0
    hi = kept.max() if side != "lower" else rows
    return lo / rows, hi / rows


def _coverage(rows: int, n: int, level: float, side: str = "two") -> np.ndarray:
    """Exact coverage of the pool's rate for every count K = 0..rows, with n draws."""
    s = np.arange(n + 1)
    lo, hi = pool_ci(s, np.full(n + 1, n), np.full(n + 1, rows), level, side=side)
    k = np.arange(rows + 1)[:, None]
    pmf = stats.hypergeom.pmf(s[None, :], rows, k, n)
    covers = (np.round(lo * rows)[None, :] <= k) & (k <= np.round(hi * rows)[None, :])
    return (pmf * covers).sum(axis=1)


@pytest.mark.parametrize("rows", [1, 2, 5, 12, 30, 61])
@pytest.mark.parametrize("level", [0.90, 0.95])
@pytest.mark.parametrize("side", ["two", "lower", "upper"])
def test_coverage_is_at_least_the_level_for_every_pool_count(rows, level, side):
    worst = min(_coverage(rows, n, level, side).min() for n in range(rows + 1))
    assert worst >= level - 1e-12


def test_coverage_is_not_trivially_one():
    # the interval is not simply [0, 1]: at some (n, K) its coverage is within 0.005 of 0.95
    assert min(_coverage(30, n, 0.95).min() for n in range(31)) < 0.9555


@pytest.mark.parametrize("rows", [7, 25])
@pytest.mark.parametrize("side", ["two", "lower", "upper"])
def test_matches_brute_force_inversion_for_every_sample(rows, side):
    for n in range(rows + 1):
        s = np.arange(n + 1)
        lo, hi = pool_ci(s, np.full(n + 1, n), np.full(n + 1, rows), 0.9, side=side)
        ref = np.array([_brute_force(int(x), n, rows, 0.9, side) for x in s])
        np.testing.assert_array_equal(np.round(lo * rows), np.round(ref[:, 0] * rows))
        np.testing.assert_array_equal(np.round(hi * rows), np.round(ref[:, 1] * rows))


def test_matches_brute_force_inversion_on_large_pools():
    rng = np.random.default_rng(3)
    rows = rng.integers(200, 4000, 12)
    n = (rows * rng.uniform(0.01, 0.9, 12)).astype(int)
    s = rng.binomial(n, rng.uniform(0.0, 1.0, 12))
    s[0], s[1] = 0, n[1]  # the edges: no success, every draw a success
    lo, hi = pool_ci(s, n, rows, 0.95)
    ref = np.array([_brute_force(int(a), int(b), int(c), 0.95) for a, b, c in zip(s, n, rows, strict=True)])
    np.testing.assert_array_equal(np.round(lo * rows), np.round(ref[:, 0] * rows))
    np.testing.assert_array_equal(np.round(hi * rows), np.round(ref[:, 1] * rows))


def test_tail_matches_scipy_hypergeom():
    rng = np.random.default_rng(5)
    m = 4000
    rows = rng.integers(1, 20000, m).astype(float)
    n = np.floor(rng.random(m) * (rows + 1))
    k = np.floor(rng.random(m) * (rows + 1))
    s = np.floor(rng.random(m) * (n + 2)) - 1
    ours = _upper_tail(s, rows, k, n)
    ref = stats.hypergeom.sf(s - 1, rows, k, n)
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-14)


def test_every_row_drawn_gives_the_rate_exactly():
    s = np.arange(41)
    lo, hi = pool_ci(s, np.full(41, 40), np.full(41, 40), 0.99)
    np.testing.assert_array_equal(lo, s / 40)
    np.testing.assert_array_equal(hi, s / 40)
    assert pool_halfwidth(7, 40, 40, 0.95) == 0.0


def test_no_draws_gives_the_unit_interval():
    assert pool_ci(0, 0, 500, 0.95) == (0.0, 1.0)


@pytest.mark.parametrize("n", [10, 50, 200, 1000])
def test_large_pool_tends_to_clopper_pearson(n):
    s = np.unique(np.linspace(0, n, 9).round().astype(int))
    lo, hi = pool_ci(s, np.full(s.size, n), np.full(s.size, 10**7), 0.95)
    a = 0.025
    cp_lo = np.where(s > 0, stats.beta.ppf(a, np.maximum(s, 1), n - s + 1), 0.0)
    cp_hi = np.where(s < n, stats.beta.isf(a, s + 1, np.maximum(n - s, 1)), 1.0)
    # the difference is of order n / N plus the 1 / N grid of the pool's rate
    np.testing.assert_allclose(lo, cp_lo, atol=1e-5)
    np.testing.assert_allclose(hi, cp_hi, atol=1e-5)


def test_finite_pool_is_narrower_than_clopper_pearson():
    n = np.array([50, 100, 200, 300])
    s = n // 4
    lo, hi = pool_ci(s, n, np.full(4, 400), 0.95)
    cp = stats.binomtest(int(s[0]), int(n[0])).proportion_ci()
    assert hi[0] - lo[0] < cp.high - cp.low
    assert np.all(np.diff(hi - lo) < 0)  # and narrower as more of the pool is drawn


def test_one_sided_bound_is_the_two_sided_end_at_twice_the_tail():
    rng = np.random.default_rng(11)
    rows = rng.integers(50, 3000, 40)
    n = (rows * rng.uniform(0.05, 0.95, 40)).astype(int)
    s = rng.binomial(n, 0.3)
    lo1, hi1 = pool_ci(s, n, rows, 0.95, side="lower")
    lo2, hi2 = pool_ci(s, n, rows, 0.90)
    np.testing.assert_array_equal(lo1, lo2)
    np.testing.assert_array_equal(hi1, 1.0)
    lo3, hi3 = pool_ci(s, n, rows, 0.95, side="upper")
    np.testing.assert_array_equal(hi3, hi2)
    np.testing.assert_array_equal(lo3, 0.0)


def test_shape_is_kept_and_scalars_broadcast():
    s = np.array([[1, 2], [3, 4]])
    lo, hi = pool_ci(s, 10, [20, 50], 0.95)
    assert lo.shape == hi.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            assert (lo[i, j], hi[i, j]) == pool_ci(int(s[i, j]), 10, [20, 50][j], 0.95)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((5, 3, 10, 0.95), {}, ValueError, "successes must not exceed trials"),
        ((1, 11, 10, 0.95), {}, ValueError, "trials must not exceed pool_trials"),
        ((0, 0, 0, 0.95), {}, ValueError, "pool_trials must be positive"),
        ((1, 2, 10, 1.5), {}, ValueError, "level"),
        ((1, 2, 10, 0.95), {"side": "left"}, ValueError, "side must be one of"),
        ((1.5, 2, 10, 0.95), {}, ValueError, "successes must be whole numbers"),
        ((1, 2, -10, 0.95), {}, ValueError, "pool_trials must be non-negative"),
        (([1, 2], 2, [10, 20, 30], 0.95), {}, ValueError, "pool_trials has shape"),
    ],
)
def test_errors_name_the_argument(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        pool_ci(*args, **kwargs)


# planning
# ---------------------------------------------------------------------------------------
def _expected_halfwidth_reference(n: int, rows: int, rate: float, level: float) -> float:
    """Expected half-width over every count of the draws, weights from scipy's pmf."""
    k = round(rate * rows)
    s = np.arange(n + 1)
    p = stats.hypergeom.pmf(s, rows, k, n)
    lo, hi = pool_ci(s, np.full(n + 1, n), np.full(n + 1, rows), level)
    return float(p @ ((hi - lo) / 2))


@pytest.mark.parametrize(("rows", "rate"), [(100, 0.05), (100, 0.5), (400, 0.2), (600, 0.5)])
def test_sample_size_is_a_first_crossing_of_the_target(rows, rate):
    n = pool_sample_size(0.05, rows, rate, 0.95)
    assert 1 <= n <= rows
    assert _expected_halfwidth_reference(n, rows, rate, 0.95) <= 0.05 + 1e-12
    assert _expected_halfwidth_reference(n - 1, rows, rate, 0.95) > 0.05
    np.testing.assert_allclose(
        expected_pool_halfwidth([n], rows, rate, 0.95)[0], _expected_halfwidth_reference(n, rows, rate, 0.95), atol=1e-9
    )


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5])
def test_sample_size_of_a_large_pool_is_the_process_rate_size(rate):
    # bayeseval.sample_size treats rate * n as real; within 5% of the expected-width count
    big = pool_sample_size(0.05, 10**7, rate, 0.95)
    ref = sample_size(halfwidth=0.05, rate=rate, method="clopper_pearson")
    assert abs(big - ref) <= 0.05 * ref


def test_sample_size_shrinks_with_the_pool():
    sizes = [pool_sample_size(0.05, rows, 0.3, 0.95) for rows in (100, 300, 1000, 100_000)]
    assert sizes == sorted(sizes)
    assert sizes[0] < 100 < sizes[-1]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.0, 100), "halfwidth"),
        ((0.05, 0), "pool_trials"),
        ((0.05, 100, 1.5), "rate"),
        ((0.05, 100, 0.5, 1.0), "level"),
    ],
)
def test_sample_size_errors_name_the_argument(args, match):
    with pytest.raises(ValueError, match=match):
        pool_sample_size(*args)
