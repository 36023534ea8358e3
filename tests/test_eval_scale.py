"""Work shared or bounded at scale: leave-one-out mixtures of some strata, cached conflict
p-values, and the predictive check's replicate budget."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayeseval._kernels import conflict
from bayeseval._kernels.betabinom import beta_mixture_predictive
from bayeseval._kernels.conflict import loo_conflict, predictive_p_values, read_bounds, read_choice
from bayeseval._kernels.loo_prior import loo_beta_mixture, loo_mixture_groups
from bayeseval.checks import predictive as checks
from bayeseval.models import fit_hierarchical


def _counts(k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 150, k)
    s = rng.binomial(n, rng.beta(2, 25, k))
    s[-1] = int(0.45 * n[-1])  # one outlier
    return s, n


def test_mixtures_of_selected_strata_equal_those_rows_of_the_full_result():
    s, n = _counts(40)
    rows = np.zeros(40, bool)
    rows[[0, 7, 39]] = True
    full = loo_beta_mixture(s, n)
    part = loo_beta_mixture(s, n, rows=rows)
    for f, p in zip(full, part, strict=True):
        assert p.shape == (3, f.shape[1])
        np.testing.assert_array_equal(p, f[rows])
    with pytest.raises(ValueError, match="rows must be a boolean mask of length 40"):
        loo_beta_mixture(s, n, rows=np.ones(3, bool))


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


@pytest.mark.parametrize("p_value", ["mid_p", "doubled"])
def test_p_values_in_blocks_of_equal_trials_equal_one_pmf_per_stratum(p_value):
    # leave-one-out mixtures (mostly zero weights) and dense mixtures with shared parameters,
    # repeated trials, zero trials and a stratum of more than 20,000 trials
    s, n = _counts(300, seed=7)
    n[:40] = 60
    s[:40] = np.arange(40) % 12
    w, a, b = loo_beta_mixture(s, n)
    got = np.array(predictive_p_values(s, n, w, a, b, p_value=p_value))
    np.testing.assert_allclose(got, _p_values_one_by_one(s, n, w, a, b, p_value), rtol=1e-12,
                               atol=1e-15)
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(9), 30)
    w[:6, :4] = 0.0
    a, b = rng.uniform(0.5, 30.0, 9), rng.uniform(5.0, 300.0, 9)
    n = rng.integers(0, 40, 30)
    n[[3, 4]], n[5] = 0, conflict.MAX_TRIALS + 1
    s = rng.binomial(n, 0.1)
    got = np.array(predictive_p_values(s, n, w, a, b, p_value=p_value))
    ref = _p_values_one_by_one(s, n, w, np.broadcast_to(a, w.shape), np.broadcast_to(b, w.shape),
                               p_value)
    # summed in another order (20,001 trials: the two agree to 3e-11)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)


def test_mixture_groups_are_the_rows_of_the_full_mixtures():
    s, n = _counts(50, seed=2)
    rows = np.arange(50) % 3 == 0
    rate = (s + 0.5) / (n + 1.0)
    rows[[np.argmin(rate), np.argmax(rate)]] = True  # their grids differ from the others'
    w, a, b = loo_beta_mixture(s, n, rows=rows)
    size, groups = loo_mixture_groups(s, n, rows=rows)
    assert size == rows.sum() and len(groups) == 3
    seen = np.concatenate([pos for pos, *_ in groups])
    np.testing.assert_array_equal(np.sort(seen), np.arange(size))
    for pos, wg, ag, bg in groups:
        np.testing.assert_array_equal(wg, w[pos])
        np.testing.assert_array_equal(np.broadcast_to(ag, (pos.size, ag.size)), a[pos])
        np.testing.assert_array_equal(np.broadcast_to(bg, (pos.size, bg.size)), b[pos])


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


def test_evaluate_with_a_huge_flagged_stratum_stays_small():
    from bayeseval import Counts, evaluate

    s, n = [0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 67_108_862, 173]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evaluate(Counts.from_arrays(s, n), random_seed=0)
    t = rep.table
    assert np.all(t["lower"] <= t["upper"])
    assert t.loc[4, "upper"] < 1e-6  # 0 of 67 million: the interval stays tiny


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
