"""Leave-one-out conflict check: p-values against scipy, Holm against statsmodels,
power and false-flag rates by seeded simulation with stated tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from bayeseval._kernels import conflict
from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.conflict import (
    holm_flags,
    loo_conflict,
    predictive_p_values,
    read_bounds,
    read_choice,
)
from bayeseval._kernels.loo_prior import loo_beta_mixture
from tests.helpers import _outlier
from tests.kernels.helpers import _counts


def _p_values_one_by_one(s, n, w, a, b, p_value):
    """The predictive p-values stratum by stratum, one pmf each (reference)."""
    out = np.ones((4, len(s)))
    for i, (si, ni) in enumerate(zip(s, n, strict=True)):
        if ni == 0:
            out[1, i] = 0.0
            continue
        pmf = beta_mixture_predictive(int(ni), w[i], a[i], b[i])
        below, above, at = pmf[: si + 1].sum(), pmf[si:].sum(), pmf[si]
        out[2, i], out[3, i] = min(below, 1.0), min(above, 1.0)
        out[1, i] = float(np.arange(ni + 1) @ pmf)
        if p_value == "doubled":
            out[0, i] = min(1.0, 2.0 * min(below, above))
        else:
            out[0, i] = min(1.0, 2.0 * min(below - at, above - at) + at)
    return out


@pytest.mark.parametrize("y", [0, 1, 3, 9, 20])
def test_p_values_match_scipy_betabinom(y):
    n, a, b = 20, 8.0, 92.0
    below, above, at = (
        stats.betabinom.cdf(y, n, a, b),
        stats.betabinom.sf(y - 1, n, a, b),
        stats.betabinom.pmf(y, n, a, b),
    )
    p, mean, lo, hi = predictive_p_values([y], [n], [[1.0]], [a], [b], p_value="doubled")
    assert lo[0] == pytest.approx(below, rel=1e-9)
    assert hi[0] == pytest.approx(above, rel=1e-9)
    assert mean[0] == pytest.approx(stats.betabinom.mean(n, a, b), rel=1e-9)
    assert p[0] == pytest.approx(min(1.0, 2 * min(below, above)), rel=1e-9)
    mid, *_ = predictive_p_values([y], [n], [[1.0]], [a], [b], p_value="mid_p")
    assert mid[0] == pytest.approx(min(1.0, 2 * min(below - at, above - at) + at), rel=1e-9)


def test_p_values_of_a_mixture_match_scipy():
    n, y = 30, 11
    w, a, b = np.array([0.2, 0.8]), np.array([2.0, 40.0]), np.array([18.0, 360.0])
    above = sum(wi * stats.betabinom.sf(y - 1, n, ai, bi) for wi, ai, bi in zip(w, a, b, strict=True))
    p, *_ = predictive_p_values([y], [n], w[None, :], a, b, p_value="doubled")
    assert p[0] == pytest.approx(2 * above, rel=1e-8)


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        p = rng.uniform(0, 0.2, rng.integers(2, 30)) ** 2
        expect = multipletests(p, alpha=0.05, method="holm")[0]
        np.testing.assert_array_equal(holm_flags(p, 0.05), expect)


def test_flagged_stratum_is_far_in_its_loo_predictive():
    # a stratum flagged by Holm has a p-value below alpha / m by construction; check the
    # p-value itself against scipy for the outlier with the LOO mixture from the others
    s = np.array([4, 6, 5, 3, 7, 4, 12])
    n = np.array([50, 70, 60, 40, 80, 50, 20])
    check = loo_conflict(s, n)
    w, a, b = loo_beta_mixture(s, n)
    keep = w[-1] > 0
    above = sum(
        wi * stats.betabinom.sf(12, 20, ai, bi)
        for wi, ai, bi in zip(w[-1][keep], a[-1][keep], b[-1][keep], strict=True)
    )
    at = sum(
        wi * stats.betabinom.pmf(12, 20, ai, bi)
        for wi, ai, bi in zip(w[-1][keep], a[-1][keep], b[-1][keep], strict=True)
    )
    expect = min(1.0, 2 * above + at)
    # the predictive drops mixture components holding 1e-6 of the weight in total
    assert check.p_value[-1] == pytest.approx(expect, rel=0, abs=2e-6)
    assert check.flagged[-1] == (expect <= 0.05 / 7)
    assert not check.flagged[:-1].any()


def test_zero_trial_stratum_is_never_flagged_and_has_p_one():
    check = loo_conflict([4, 0, 5, 30], [50, 0, 60, 50], control="per_stratum")
    assert check.p_value[1] == 1.0 and not check.flagged[1]


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"alpha": 1.5}, ValueError, ["alpha", "1.5"]),
        ({"alpha": 0.0}, ValueError, ["alpha", "0.0"]),
        ({"control": "bonf"}, ValueError, ["control", "'bonf'", "holm"]),
        ({"p_value": "exact"}, ValueError, ["p_value", "'exact'", "mid_p"]),
        ({"successes": [3, 40]}, ValueError, ["successes", "40"]),
        ({"trials": [10, 0]}, ValueError, ["trials", "[10, 0]"]),
    ],
)
def test_validation_names_argument_and_value(kwargs, exc, words):
    args = {"successes": [3, 0], "trials": [10, 10]}
    args.update(kwargs)
    with pytest.raises(exc) as info:
        loo_conflict(**args)
    for word in words:
        assert word in str(info.value)


def test_outlier_flagged_beyond_20000_trials_with_p_falling():
    # nine strata at 0.20 and one at 0.10: the p-value keeps falling past 20,000 trials,
    # below the smallest double at a million (its log still falls)
    checks = [loo_conflict(*_outlier(t, 0.2, 0.1)) for t in (20_000, 50_000, 10**6)]
    for c in checks:
        assert c.flagged.tolist() == [False] * 9 + [True]
        assert c.p_value[:9].min() > 0.5 and c.p_above[-1] > 1.0 - 1e-12
        np.testing.assert_allclose(np.exp(c.log_p_value), c.p_value, rtol=1e-12, atol=0.0)
    logs = [c.log_p_value[-1] for c in checks]
    assert logs[0] < np.log(1e-12) and logs[0] > logs[1] > logs[2] > -np.inf
    # the binomial tail of 100,000 of 1e6 at 0.2 is exp(-44,000): a wider predictive
    # (unknown concentration) must not be sharper than the pooled binomial
    assert logs[2] > stats.binom.logcdf(100_000, 10**6, 0.2)


def test_outliers_flagged_at_a_million_trials():
    high = loo_conflict(*_outlier(10**6, 0.2, 0.1))
    assert high.flagged.tolist() == [False] * 9 + [True] and high.log_p_value[-1] < np.log(1e-300)
    # another member: a low outlier at 0.01 among strata at 0.05
    low = loo_conflict(*_outlier(10**6, 0.05, 0.01))
    assert low.flagged.tolist() == [False] * 9 + [True] and low.log_p_value[-1] < np.log(1e-40)
    assert low.p_below[-1] < 1e-40 and low.p_above[-1] > 1.0 - 1e-12
    assert low.log_p_value[-1] < loo_conflict(*_outlier(10**5, 0.05, 0.01)).log_p_value[-1]


def test_low_outlier_flagged_at_100000_trials():
    # a low outlier at 0.01 among strata at 0.05; its lower tail is ~1e-27 (exp(-61))
    s, n = _outlier(10**5, 0.05, 0.01)
    check = loo_conflict(s, n)
    assert check.flagged.tolist() == [False] * 9 + [True]
    assert 0.0 < check.p_value[-1] < 1e-20
    # the mid-p value is twice the lower tail plus the point mass
    w, a, b = loo_beta_mixture(s, n)
    p, *_ = predictive_p_values(s, n, w, a, b)
    assert p[-1] == pytest.approx(check.p_value[-1], rel=1e-12)


def test_adaptive_bounds_of_every_stratum_equal_proportion_ci_adaptive():
    from bayeseval import proportion_ci
    from bayeseval._kernels.conflict import adaptive_bounds

    s, n = [4, 6, 5, 3, 7, 4, 9, 4, 0], [50, 70, 60, 40, 80, 50, 20, 50, 0]
    lo, hi = adaptive_bounds(s, n, 0.9)
    with pytest.warns(Warning):  # the empty stratum
        ref_lo, ref_hi = proportion_ci(s, n, level=0.9, method="adaptive")
    np.testing.assert_array_equal(lo[:8], ref_lo[:8])
    np.testing.assert_array_equal(hi[:8], ref_hi[:8])
    assert np.isnan(lo[8]) and np.isnan(hi[8])
    with pytest.raises(ValueError, match=r"two strata with trials, got trials \[40, 0\]"):
        adaptive_bounds([3, 0], [40, 0], 0.95)


def test_cached_p_values_equal_the_full_mixture_computation_and_are_not_shared():
    s, n = _counts(60, seed=3)
    s[:10], n[:10] = s[10:20], n[10:20]  # repeated count pairs share one computation
    conflict._P_CACHE.clear()
    ref = predictive_p_values(s, n, *loo_beta_mixture(s, n))
    for _ in range(2):  # computed, then from the cache
        got = loo_conflict(s, n, control="per_stratum")
        for v, r in zip((got.p_value, got.expected, got.p_below, got.p_above), ref, strict=True):
            np.testing.assert_allclose(v, r, rtol=1e-13, atol=0.0)
        got.p_value[:] = -1.0  # a caller's edit must not reach the cache
    assert len(conflict._P_CACHE) == 1
    for i in range(conflict._P_CACHE_SIZE + 2):  # bounded: oldest entries dropped
        loo_conflict(s + (np.arange(60) == i), n)
    assert len(conflict._P_CACHE) == conflict._P_CACHE_SIZE


@pytest.mark.parametrize("p_value", ["mid_p", "doubled"])
def test_p_values_in_blocks_of_equal_trials_equal_one_pmf_per_stratum(p_value):
    # leave-one-out mixtures (mostly zero weights) and dense mixtures with shared parameters,
    # repeated trials, zero trials and a stratum of more than 20,000 trials
    s, n = _counts(300, seed=7)
    n[:40] = 60
    s[:40] = np.arange(40) % 12
    w, a, b = loo_beta_mixture(s, n)
    got = np.array(predictive_p_values(s, n, w, a, b, p_value=p_value))
    np.testing.assert_allclose(got, _p_values_one_by_one(s, n, w, a, b, p_value), rtol=1e-12, atol=1e-15)
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(9), 30)
    w[:6, :4] = 0.0
    a, b = rng.uniform(0.5, 30.0, 9), rng.uniform(5.0, 300.0, 9)
    n = rng.integers(0, 40, 30)
    n[[3, 4]], n[5] = 0, conflict.MAX_TRIALS + 1
    s = rng.binomial(n, 0.1)
    got = np.array(predictive_p_values(s, n, w, a, b, p_value=p_value))
    ref = _p_values_one_by_one(s, n, w, np.broadcast_to(a, w.shape), np.broadcast_to(b, w.shape), p_value)
    # summed in another order (20,001 trials: the two agree to 3e-11)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)


def test_read_bounds_on_demand_equal_those_from_the_full_mixtures():
    s, n = _counts(30, seed=5)
    choice = read_choice(s, n)
    assert choice.mixture == conflict.LOO_MIXTURE and choice.adaptive.any()
    full = choice._replace(mixture=loo_beta_mixture(s, n))
    for rows in (None, n > 0):
        for level in (0.9, 0.95):
            got = read_bounds(choice, np.zeros(30), np.ones(30), level, rows=rows)
            ref = read_bounds(full, np.zeros(30), np.ones(30), level, rows=rows)
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_array_equal(got[1], ref[1])


def test_read_bounds_once_per_distinct_pair_equals_every_stratum_alone() -> None:
    """Strata with equal counts share their leave-one-out prior, so computing the adaptive
    interval once per distinct (successes, trials) pair gives, bit for bit, the interval
    ``fab_interval`` gives each stratum with its own leave-one-out mixture."""
    from bayeseval._kernels.conflict import read_bounds, read_choice
    from bayeseval._kernels.fab import DIFFUSE_WEIGHT, fab_interval
    from bayeseval._kernels.loo_prior import loo_beta_mixture

    rng = np.random.default_rng(7)
    n = rng.choice([5, 10, 20, 50], 240)
    s = rng.binomial(n, rng.beta(2, 20, n.size))
    assert len(set(zip(s.tolist(), n.tolist(), strict=True))) < 60  # many repeated pairs
    w, a, b = loo_beta_mixture(s, n)
    ref = fab_interval(s, n, a, b, w, level=0.9, diffuse_weight=DIFFUSE_WEIGHT)
    choice = read_choice(s, n)
    every = np.ones(n.size, bool)
    for c in (choice, choice._replace(mixture=(w, a, b))):
        lo, hi = read_bounds(c, np.zeros(n.size), np.ones(n.size), 0.9, rows=every)
        np.testing.assert_array_equal(lo, ref.lower)
        np.testing.assert_array_equal(hi, ref.upper)


def test_conflict_p_values_once_per_distinct_pair_match_every_stratum():
    s = np.array([4, 6, 5, 3, 7, 4, 9, 4, 6])
    n = np.array([50, 70, 60, 40, 80, 50, 20, 50, 70])
    w, a, b = loo_beta_mixture(s, n)
    ref = predictive_p_values(s, n, w, a, b)
    got = loo_conflict(s, n, control="per_stratum")
    np.testing.assert_allclose(got.p_value, ref[0], rtol=1e-12)
    np.testing.assert_allclose(got.expected, ref[1], rtol=1e-12)
