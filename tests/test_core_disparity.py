"""Disparity interval kernels against published values, statsmodels and exact enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep

from bayeseval import proportion_ci
from bayeseval._kernels.disparity import (
    bonferroni_level,
    gap_interval,
    katz_ratio,
    max_t_critical,
    max_t_gap,
    mover_difference,
    mover_mean,
    mover_ratio,
)


def _wilson(s, n, level=0.95):
    return proportion_ci(np.asarray(s), np.asarray(n), level=level, method="wilson")


def _newcombe(s1, n1, s2, n2, level=0.95):
    l1, u1 = _wilson(s1, n1, level)
    l2, u2 = _wilson(s2, n2, level)
    return mover_difference(np.asarray(s1) / n1, l1, u1, np.asarray(s2) / n2, l2, u2)


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # Newcombe (1998), Stat Med 17:873-890, Table II, method 10
        ((56, 70, 48, 80), (0.0524, 0.3339)),
        ((9, 10, 3, 10), (0.1705, 0.8090)),
        ((5, 56, 0, 29), (-0.0381, 0.1926)),
        ((0, 10, 0, 20), (-0.1611, 0.2775)),
        ((0, 10, 0, 10), (-0.2775, 0.2775)),
        ((10, 10, 0, 20), (0.6791, 1.0000)),
        ((10, 10, 0, 10), (0.6075, 1.0000)),
    ],
)
def test_newcombe_matches_published_table(counts, expected):
    lo, hi = _newcombe(*counts)
    assert (round(float(lo), 4), round(float(hi), 4)) == expected


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


def _exact_coverage(n, p, accept):
    """Probability that accept(outcome) is true, summing over every outcome of the counts."""
    pmfs = [stats.binom.pmf(np.arange(k + 1), k, q) for k, q in zip(n, p, strict=True)]
    grids = np.meshgrid(*[np.arange(k + 1) for k in n], indexing="ij")
    weight = np.ones(grids[0].shape)
    for axis, pmf in enumerate(pmfs):
        shape = [1] * len(n)
        shape[axis] = -1
        weight = weight * pmf.reshape(shape)
    return float((weight * accept(*grids)).sum())


@pytest.mark.parametrize(("p1", "p2"), [(0.1, 0.1), (0.3, 0.5), (0.05, 0.4), (0.8, 0.6)])
def test_newcombe_coverage_by_exact_enumeration(p1, p2):
    n = (15, 40)

    def covered(x1, x2):
        lo, hi = _newcombe(x1, n[0], x2, n[1])
        return (lo <= p1 - p2) & (p1 - p2 <= hi)

    # Newcombe (1998) reports a minimum coverage near 0.93 for method 10 at level 0.95
    assert _exact_coverage(n, (p1, p2), covered) >= 0.925


@pytest.mark.parametrize(("tpr", "tnr"), [(0.5, 0.5), (0.9, 0.7), (0.95, 0.6)])
def test_mover_mean_coverage_by_exact_enumeration(tpr, tnr):
    n = (25, 30)

    def covered(x1, x2):
        r1, r2 = x1 / n[0], x2 / n[1]
        lo, hi = mover_mean(r1, *_wilson(x1, n[0]), r2, *_wilson(x2, n[1]))
        return (lo <= 0.5 * (tpr + tnr)) & (0.5 * (tpr + tnr) <= hi)

    assert _exact_coverage(n, (tpr, tnr), covered) >= 0.93


def test_bonferroni_level_closed_form():
    assert bonferroni_level(0.95, 4) == pytest.approx(0.9875)
    assert bonferroni_level(0.9, 1) == pytest.approx(0.9)


@pytest.mark.parametrize(
    "rates", [(0.2, 0.2, 0.2), (0.1, 0.3, 0.5), (0.02, 0.02, 0.6), (0.5, 0.55, 0.5)]
)
def test_gap_interval_coverage_is_guaranteed_by_exact_enumeration(rates):
    n, level = (8, 12, 20), 0.9
    true_gap = max(rates) - min(rates)
    per_group = bonferroni_level(level, 3)

    def covered(*xs):
        out = np.empty(xs[0].shape, bool)
        for idx in itertools.product(*[range(s) for s in xs[0].shape]):
            counts = np.array([x[idx] for x in xs])
            lo, hi = proportion_ci(counts, np.array(n), level=per_group, method="clopper_pearson")
            _, glo, ghi = gap_interval(counts / np.array(n), lo, hi)
            out[idx] = glo <= true_gap <= ghi
        return out

    assert _exact_coverage(n, rates, covered) >= level


def test_gap_interval_ignores_groups_without_estimates():
    gap, lo, hi = gap_interval([0.2, np.nan, 0.4], [0.1, np.nan, 0.3], [0.3, np.nan, 0.5])
    assert gap == pytest.approx(0.2)
    assert lo == pytest.approx(0.0) and hi == pytest.approx(0.4)
    assert all(np.isnan(gap_interval([0.2, np.nan], [0.1, np.nan], [0.3, np.nan])))


# --------------------------------------------------------------------------- max-t gap interval


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
    ends = [(t[i] - t[j] - c * np.hypot(se[i], se[j]), t[i] - t[j] + c * np.hypot(se[i], se[j]))
            for i, j in pairs]
    assert gap == pytest.approx(0.5 - 0.3)
    assert lo == pytest.approx(max(0.0, max(max(a, -b) for a, b in ends)))
    assert hi == pytest.approx(max(max(b, -a) for a, b in ends))
    assert np.isnan(max_t_gap([3], [10], 0.95, rng=np.random.default_rng(0))).all()


_SIZES = np.array([20, 50, 100, 300, 1000, 2000])


def _gap_study(rates, reps, seed):
    """Coverage, mean width and detection (lower end > 0) of both gap intervals."""
    rng = np.random.default_rng(seed)
    truth = np.ptp(rates)
    out = {"max_t": [], "bonferroni": []}
    for _ in range(reps):
        s = rng.binomial(_SIZES, rates)
        out["max_t"].append(max_t_gap(s, _SIZES, 0.95, n_resamples=1000, rng=rng))
        lo, hi = proportion_ci(s, _SIZES, level=bonferroni_level(0.95, 6), method="clopper_pearson")
        out["bonferroni"].append(gap_interval(s / _SIZES, lo, hi))
    return {k: (np.mean([a <= truth <= b for _, a, b in v]), np.mean([b - a for _, a, b in v]),
                np.mean([a > 0 for _, a, b in v])) for k, v in out.items()}


def test_max_t_gap_coverage_and_power_small_simulation():
    # 150 seeded datasets of six groups of 20-2,000 rows: binomial SE of a coverage of 0.95 is
    # 0.018, so 0.95 - 0.04 allows about 2.2 SE; power with the 50-row group at 0.15
    equal = _gap_study(np.full(6, 0.3), 150, 5)
    apart = _gap_study(np.array([0.3, 0.15, 0.3, 0.3, 0.3, 0.3]), 150, 6)
    for study in (equal, apart):
        assert study["max_t"][0] >= 0.95 - 0.04
        assert study["max_t"][1] < 0.9 * study["bonferroni"][1]  # narrower
    assert apart["max_t"][2] > apart["bonferroni"][2] + 0.15  # detects the 0.15 gap more often


@pytest.mark.slow
def test_max_t_gap_coverage_long_run():
    # 2,000 datasets per scenario: SE of a coverage of 0.95 is 0.005
    for rates in (np.full(6, 0.3), np.array([0.3, 0.15, 0.3, 0.3, 0.3, 0.3]), np.full(6, 0.05)):
        assert _gap_study(rates, 2000, 9)["max_t"][0] >= 0.95 - 0.01
