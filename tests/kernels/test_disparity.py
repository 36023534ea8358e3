"""Disparity interval kernels against published values, statsmodels and exact enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep

from bayeseval._kernels.disparity import (
    bonferroni_level,
    gap_interval,
    katz_ratio,
    max_t_critical,
    max_t_gap,
    mover_ratio,
)
from tests.helpers import _newcombe, _wilson, load_result


# Newcombe (1998), Stat Med 17:873-890, Table II, method 10 (tests/results/newcombe_1998.csv)
@pytest.mark.parametrize("row", list(load_result("newcombe_1998").itertuples(index=False)))
def test_newcombe_matches_published_table(row):
    lo, hi = _newcombe(row.s1, row.n1, row.s2, row.n2)
    assert (round(float(lo), 4), round(float(hi), 4)) == (row.lower, row.upper)


def test_newcombe_matches_statsmodels_on_many_tables():
    rng = np.random.default_rng(1)
    n1, n2 = rng.integers(1, 400, 60), rng.integers(1, 400, 60)
    s1, s2 = rng.binomial(n1, rng.random(60)), rng.binomial(n2, rng.random(60))
    s1[:5], s2[5:10] = 0, n2[5:10]  # the edges
    lo, hi = _newcombe(s1, n1, s2, n2, level=0.9)
    for i in range(60):
        ref = confint_proportions_2indep(s1[i], n1[i], s2[i], n2[i], method="newcomb", alpha=0.1)
        assert lo[i] == pytest.approx(ref[0], abs=1e-10)
        assert hi[i] == pytest.approx(ref[1], abs=1e-10)


def test_katz_ratio_matches_statsmodels_log_and_log_adjusted():
    rng = np.random.default_rng(2)
    n1, n2 = rng.integers(5, 500, 40), rng.integers(5, 500, 40)
    s1, s2 = rng.binomial(n1, 0.3), rng.binomial(n2, 0.4)
    s1[:4] = 0  # zero counts: 0.5 added (statsmodels "log-adjusted")
    est, lo, hi = katz_ratio(s1, n1, s2, n2, 0.95)
    for i in range(40):
        method = "log-adjusted" if s1[i] == 0 else "log"
        ref = confint_proportions_2indep(s1[i], n1[i], s2[i], n2[i], compare="ratio", method=method)
        assert hi[i] == pytest.approx(ref[1], rel=1e-10)
        # a zero numerator: the lower end is 0, so the interval holds the raw ratio 0
        assert lo[i] == (0.0 if s1[i] == 0 else pytest.approx(ref[0], rel=1e-10))
        assert est[i] == pytest.approx((s1[i] / n1[i]) / (s2[i] / n2[i]))


def test_katz_ratio_zero_denominator_has_infinite_upper_end():
    est, lo, hi = katz_ratio(5, 20, 0, 30, 0.95)
    ref = confint_proportions_2indep(5, 20, 0, 30, compare="ratio", method="log-adjusted")
    assert np.isinf(est) and np.isinf(hi) and lo == pytest.approx(ref[0], rel=1e-10)


def test_katz_ratio_without_trials_is_nan():
    est, lo, hi = katz_ratio([3, 2], [0, 10], [4, 5], [10, 0], 0.95)
    assert np.isnan(est).all() and np.isnan(lo).all() and np.isnan(hi).all()


def test_mover_ratio_close_to_koopman_score_for_large_groups():
    s1, n1, s2, n2 = 300, 1000, 250, 1000
    lo, hi = mover_ratio(s1 / n1, *_wilson(s1, n1), s2 / n2, *_wilson(s2, n2))
    ref = confint_proportions_2indep(s1, n1, s2, n2, compare="ratio", method="score", correction=False)
    assert (float(lo), float(hi)) == pytest.approx(ref, abs=1e-3)


def test_mover_ratio_undefined_for_zero_denominator():
    lo, hi = mover_ratio(0.5, 0.4, 0.6, 0.0, 0.0, 0.2)
    assert np.isnan(lo) and np.isnan(hi)


def test_bonferroni_level_closed_form():
    assert bonferroni_level(0.95, 4) == pytest.approx(0.9875)
    assert bonferroni_level(0.9, 1) == pytest.approx(0.9)


def test_gap_interval_ignores_groups_without_estimates():
    gap, lo, hi = gap_interval([0.2, np.nan, 0.4], [0.1, np.nan, 0.3], [0.3, np.nan, 0.5])
    assert gap == pytest.approx(0.2)
    assert lo == pytest.approx(0.0) and hi == pytest.approx(0.4)
    assert all(np.isnan(gap_interval([0.2, np.nan], [0.1, np.nan], [0.3, np.nan])))


@pytest.mark.parametrize("k", [3, 6])
def test_max_t_critical_is_the_studentized_range_for_large_equal_groups(k):
    # k large equal groups: max over pairs |Z_i - Z_j| / sqrt(2) is the studentized range / sqrt(2)
    c = max_t_critical(np.full(k, 3000), np.full(k, 10_000), 0.95, rng=np.random.default_rng(k))
    expect = stats.studentized_range.ppf(0.95, k, 1e5) / np.sqrt(2)
    assert c == pytest.approx(expect, abs=0.06)  # Monte Carlo error of a 95% quantile of 2,000


def test_max_t_critical_is_never_below_the_normal_quantile():
    # every rate 0 (observed and pooled): every replicate equals the data; the single-pair
    # normal quantile is the floor
    c = max_t_critical([0, 0, 0], [30, 40, 30], 0.9, rng=np.random.default_rng(0))
    assert c == pytest.approx(stats.norm.ppf(0.95))
    gap, lo, hi = max_t_gap([30, 30], [30, 30], 0.95, rng=np.random.default_rng(0))
    assert gap == 0.0 and lo == 0.0 and hi > 0.05


def test_max_t_gap_is_the_projection_of_the_pairwise_intervals():
    s, n = np.array([12, 30, 75]), np.array([40, 100, 150])
    gap, lo, hi = max_t_gap(s, n, 0.95, rng=np.random.default_rng(3))
    c = max_t_critical(s, n, 0.95, rng=np.random.default_rng(3))
    t = (s + 1) / (n + 2)
    se = np.sqrt(t * (1 - t) / (n + 2))
    pairs = [(i, j) for i in range(3) for j in range(i + 1, 3)]
    ends = [(t[i] - t[j] - c * np.hypot(se[i], se[j]), t[i] - t[j] + c * np.hypot(se[i], se[j])) for i, j in pairs]
    assert gap == pytest.approx(0.5 - 0.3)
    assert lo == pytest.approx(max(0.0, max(max(a, -b) for a, b in ends)))
    assert hi == pytest.approx(max(max(b, -a) for a, b in ends))
    assert np.isnan(max_t_gap([3], [10], 0.95, rng=np.random.default_rng(0))).all()
