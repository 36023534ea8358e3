"""The shared bootstrap kernel (bayeseval._kernels.resampling) and the two public functions on it.

References: scipy.stats.bootstrap on the same replicates (same generator stream), closed forms
of the jackknife acceleration, exact stratum sizes, and a seeded coverage simulation.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval import bootstrap_ci
from bayeseval._api.warnings import BayesevalWarning
from bayeseval._kernels import resampling as rs
from tests.helpers import TOL


def test_kernel_interval_formula_on_scipy_replicates():
    # identical replicate arrays: the kernel's percentile and BCa levels are SciPy's formulas
    rng = np.random.default_rng(7)
    x = rng.gamma(0.7, size=45)
    res = stats.bootstrap((x,), np.std, n_resamples=4000, method="BCa", rng=np.random.default_rng(3))
    reps = res.bootstrap_distribution[:, None]

    def jack():
        return rs.jackknife_values(lambda idx: np.std(x[idx], axis=1), np.zeros(x.size, int))

    (lo,), (hi,) = rs.confidence_interval(reps, [np.std(x)], level=0.95, method="bca", jackknife=jack)
    assert lo == pytest.approx(res.confidence_interval.low, abs=TOL)
    assert hi == pytest.approx(res.confidence_interval.high, abs=TOL)
    (lo,), (hi,) = rs.confidence_interval(reps, [np.std(x)], level=0.8, method="percentile")
    np.testing.assert_allclose([lo, hi], np.quantile(reps[:, 0], [0.1, 0.9]), atol=TOL)


def test_stratified_indices_keep_every_stratum_size_exactly():
    codes = np.repeat([2, 0, 1], [7, 1, 30])[np.random.default_rng(0).permutation(38)]
    layout = rs.stratum_layout(codes, codes.size)
    batches = list(rs.resample_indices(layout, 500, np.random.default_rng(1), max_cells=38 * 64))
    assert len(batches) == 8  # 64 replicates per batch
    idx = np.concatenate(batches)
    assert idx.shape == (500, 38)
    drawn = codes[idx]
    for k, (start, size) in enumerate(zip(layout.starts, layout.sizes, strict=True)):
        assert np.all(drawn[:, start : start + size] == k)
        assert np.all(np.sum(drawn == k, axis=1) == np.sum(codes == k))


def test_batches_do_not_change_the_replicates():
    # one stratum: the stream of draws does not depend on the batch size (as in SciPy)
    layout = rs.stratum_layout(None, 63)
    small = np.concatenate(list(rs.resample_indices(layout, 300, np.random.default_rng(3), max_cells=100)))
    whole = np.concatenate(list(rs.resample_indices(layout, 300, np.random.default_rng(3))))
    np.testing.assert_array_equal(small, whole)
    x = np.random.default_rng(2).normal(size=63)
    jk_small = rs.jackknife_values(lambda i: x[i].mean(axis=1), layout.codes, max_cells=70)
    jk_whole = rs.jackknife_values(lambda i: x[i].mean(axis=1), layout.codes)
    np.testing.assert_allclose(jk_small.values, jk_whole.values, atol=TOL)
    np.testing.assert_allclose(jk_whole.values[:, 0], (x.sum() - x) / 62, atol=TOL)


def test_count_resampling_keeps_stratum_sizes_and_shares():
    counts = np.array([[5.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
    reps = rs.resample_counts(lambda c: c.reshape(len(c), -1), counts, 4000, np.random.default_rng(0), max_cells=600)
    draws = reps.reshape(4000, 2, 3)
    assert np.all(draws.sum(axis=2) == counts.sum(axis=1))
    assert np.all(draws[:, 0, 1] == 0) and np.all(draws[:, 1, 2] == 0)
    # multinomial means n_s * share: 3/8 of 8 rows in cell (0, 2); SE of the mean ~0.022
    assert draws[:, 0, 2].mean() == pytest.approx(3.0, abs=0.1)


def test_acceleration_of_the_mean_closed_form():
    # theta_(i) = (sum x - x_i) / (n - 1), so a = sum (x_i - m)^3 / (6 (sum (x_i - m)^2)^1.5)
    x = np.array([0.2, 1.5, 0.1, 3.0, 0.7, 0.0])
    d = x - x.mean()
    closed = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    jk = rs.jackknife_values(lambda idx: x[idx].mean(axis=1), np.zeros(x.size, int))
    assert rs.acceleration(jk)[0] == pytest.approx(closed, abs=TOL)


def test_stratified_acceleration_closed_form():
    # weighted mean of stratum means: U_i = w_j (x_i - m_j), so
    # a = sum_j w_j^3 sum_i (x_i - m_j)^3 / n_j^3 / (6 (sum_j w_j^2 sum_i (x_i - m_j)^2 / n_j^2)^1.5)
    x = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 2.5])
    codes = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    w = np.array([0.7, 0.3])
    num = den = 0.0
    for j in range(2):
        xj = x[codes == j]
        dj = xj - xj.mean()
        num += w[j] ** 3 * np.sum(dj**3) / xj.size**3
        den += w[j] ** 2 * np.sum(dj**2) / xj.size**2
    closed = num / (6 * den**1.5)

    def risk(idx):
        c = codes[idx]
        return sum(w[j] * np.sum(np.where(c == j, x[idx], 0), axis=1) / np.sum(c == j, axis=1) for j in range(2))

    assert rs.acceleration(rs.jackknife_values(risk, codes))[0] == pytest.approx(closed, abs=TOL)


def test_cell_jackknife_equals_row_jackknife():
    # identical rows share one jackknife value: weighting each cell by its count gives the
    # acceleration of the delete-one jackknife over the rows
    counts = np.array([[4.0, 2.0, 0.0, 1.0], [3.0, 0.0, 5.0, 2.0]])
    value = np.array([0.0, 1.0, 2.0, 7.0])

    def stat(c):
        return np.sum(c @ value / c.sum(-1) * np.array([0.4, 0.6]), axis=-1)

    codes = np.repeat([0, 0, 0, 0, 1, 1, 1, 1], counts.ravel().astype(int))
    rows = np.repeat(np.tile(value, 2), counts.ravel().astype(int))

    def row_stat(idx):
        c = codes[idx]
        return sum(
            wj * np.sum(np.where(c == j, rows[idx], 0), 1) / np.sum(c == j, 1) for j, wj in enumerate((0.4, 0.6))
        )

    a_cells = rs.acceleration(rs.jackknife_counts(stat, counts))
    a_rows = rs.acceleration(rs.jackknife_values(row_stat, codes))
    assert a_cells[0] == pytest.approx(a_rows[0], abs=TOL)


def test_bias_correction_counts_ties_half_like_scipy():
    reps = np.array([0.1, 0.2, 0.2, 0.2, 0.5])
    assert rs.bias_correction(reps, 0.2) == pytest.approx(stats.norm.ppf((1 + 4) / 10), abs=TOL)
    assert rs.bias_correction(reps, 0.3) == pytest.approx(stats.norm.ppf(0.8), abs=TOL)


def test_estimate_outside_the_replicates_falls_back_to_percentile():
    reps = np.linspace(1.0, 2.0, 50)[:, None]
    jack = rs.Jackknife(np.array([[0.0], [1.0], [3.0]]), np.zeros(3, int), np.ones(3))
    with pytest.warns(BayesevalWarning, match="BCa interval of the statistic is undefined"):
        (lo,), (hi,) = rs.confidence_interval(reps, [0.5], level=0.9, method="bca", jackknife=lambda: jack)
    np.testing.assert_allclose([lo, hi], np.quantile(reps[:, 0], [0.05, 0.95]), atol=TOL)


def test_jackknife_groups_are_nested_in_strata_and_balanced():
    codes = np.repeat([0, 1, 2], [9000, 2990, 3])
    gid = rs.jackknife_groups(codes, 2000)
    for g in np.unique(gid):  # every group lies in one stratum
        assert np.unique(codes[gid == g]).size == 1
    sizes = np.bincount(gid)
    assert sizes.max() == 6 and sizes[:-2].min() >= 5  # ceil(11993 / 2000) = 6 rows a group
    assert np.bincount(gid[codes == 2]).tolist()[-2:] == [2, 1]  # a small stratum keeps two groups


def test_group_jackknife_acceleration_estimates_the_delete_one_value():
    # above MAX_DELETIONS rows a callable's acceleration comes from ~2000 deleted groups: for the
    # mean of 12000 exponential rows it must be close to the delete-one closed form
    # sum d^3 / (6 (sum d^2)^1.5) (measured over 20 seeds: ratio 0.91..1.17), and the BCa
    # interval close to the one with the exact (closed-form) jackknife on the same replicates
    x = np.random.default_rng(0).exponential(size=12000)
    d = x - x.mean()
    closed = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    jk = rs.jackknife_values(lambda idx: x[idx].mean(axis=1), np.zeros(x.size, int))
    assert jk.values.shape == (2000, 1)
    assert 0.75 <= rs.acceleration(jk)[0] / closed <= 1.25
    exact = bootstrap_ci(x, "mean", n_resamples=400, random_seed=3)
    grouped = bootstrap_ci(x, lambda v, axis=-1: np.mean(v, axis=axis), vectorized=True, n_resamples=400, random_seed=3)
    np.testing.assert_allclose(grouped.distribution, exact.distribution, atol=TOL)
    width = exact.upper - exact.lower
    assert abs(grouped.lower - exact.lower) < 0.02 * width and abs(grouped.upper - exact.upper) < 0.02 * width
