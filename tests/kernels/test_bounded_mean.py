"""The finite-sample valid interval of a stratum's rate from a units histogram.

References: a direct loop implementation of the Waudby-Smith and Ramdas (2024) hedged capital
with fixed-n predictable plug-in bets, written here from the paper's formulas; the exact
martingale property (the capital at the true rate has mean 1) by simulation; the true rate of
seeded datasets for coverage; brute-force evaluation of the capital on a fine grid.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from bayeseval._kernels.bounded_mean import _orders, log_capital, unit_ci, units_ci

LEVEL = 0.95


def _wsr_capital(x, m, level, n_total, c=0.75):
    """Hedged capital of WSR for one sequence ``x`` in [0, 1] and null mean ``m`` (plain loops)."""
    alpha = 1 - level
    kp = kn = 1.0
    mu_sum, sq_sum, sigma2_prev = 0.0, 0.0, 0.25
    for t, xt in enumerate(x, start=1):
        lam = math.sqrt(2 * math.log(2 / alpha) / (n_total * sigma2_prev))
        lp = min(lam, c / m) if m > 0 else lam
        ln = min(lam, c / (1 - m)) if m < 1 else lam
        kp *= 1 + lp * (xt - m)
        kn *= 1 - ln * (xt - m)
        mu_sum += xt
        mu_hat = (0.5 + mu_sum) / (t + 1)
        sq_sum += (xt - mu_hat) ** 2
        sigma2_prev = (0.25 + sq_sum) / (t + 1)
    return 0.5 * kp + 0.5 * kn


def _reference_capital(values, m, level):
    """WSR capital of the sorted values averaged over the kernel's fixed orders."""
    x = np.sort(np.asarray(values, dtype=float))
    perms = _orders(len(x), 16)
    return float(np.mean([_wsr_capital(x[p], m, level, len(x)) for p in perms]))


def _simulate(rng, datasets, g, sizes, mu, rho, graded=False):
    b = rng.integers(1, 21, (datasets, g)) if sizes == "1-20" else np.full((datasets, g), int(sizes))
    k = 1 / rho - 1
    p = rng.beta(mu * k, (1 - mu) * k, (datasets, g))
    a = rng.binomial(2 * b, p) / 2 if graded else rng.binomial(b, p).astype(float)
    return a, b


def _table(a, b):
    d, g = a.shape
    return pd.DataFrame(
        {"s": np.repeat(np.arange(d), g), "unit_successes": a.ravel(), "unit_trials": b.ravel(), "units": 1}
    )


# -- (vi) equal sizes: the plain WSR interval on a_i / M ---------------------------------------


def test_equal_sizes_capital_is_the_wsr_capital_of_unit_means():
    rng = np.random.default_rng(3)
    a = rng.binomial(5, rng.beta(2, 1, 12)).astype(float)
    vals, counts = np.unique(a, return_counts=True)
    rates = np.array([0.05, 0.3, 0.55, 0.8, 0.97])
    ours = np.exp(log_capital(vals, np.full(len(vals), 5), counts, rates, LEVEL))
    ref = [_reference_capital(a / 5, m, LEVEL) for m in rates]
    np.testing.assert_allclose(ours, ref, rtol=1e-10)


def test_equal_sizes_interval_matches_the_reference_inversion():
    rng = np.random.default_rng(4)
    a = rng.binomial(4, rng.beta(3, 2, 9)).astype(float)
    est, lo, hi = unit_ci(a, np.full(9, 4), np.ones(9), LEVEL)
    crit = 1 / (1 - LEVEL)

    def end(inside, outside):  # bisection on the reference capital
        for _ in range(60):
            mid = 0.5 * (inside + outside)
            inside, outside = (mid, outside) if _reference_capital(a / 4, mid, LEVEL) < crit else (inside, mid)
        return outside

    assert est == pytest.approx(a.sum() / 36)
    assert lo == pytest.approx(end(est, 0.0), abs=1e-7)
    assert hi == pytest.approx(end(est, 1.0), abs=1e-7)


def test_binary_units_of_size_one_use_the_rows():
    # 0/1 units of size one: the same capital as the WSR test on the 0/1 rows
    a = np.array([1.0] * 14 + [0.0] * 6)
    ours = float(np.exp(log_capital([1, 0], [1, 1], [14, 6], [0.4], LEVEL))[0])
    assert ours == pytest.approx(_reference_capital(a, 0.4, LEVEL), rel=1e-10)


# -- (ii) the capital at the true rate is a martingale: mean exactly 1 -------------------------


@pytest.mark.parametrize(("sizes", "graded"), [("5", False), ("1-20", True)])
def test_capital_at_the_true_rate_has_mean_one(sizes, graded):
    rng = np.random.default_rng(7)
    a, b = _simulate(rng, 600, 8, sizes, 0.7, 0.3, graded)
    caps = np.array([np.exp(log_capital(a[i], b[i], np.ones(8), [0.7], LEVEL, bound=20)[0]) for i in range(600)])
    se = caps.std(ddof=1) / np.sqrt(len(caps))
    assert abs(caps.mean() - 1.0) < 4 * se + 1e-3


# -- (i) seeded coverage -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("g", "sizes", "mu", "rho", "graded"),
    [
        (10, "5", 0.8, 0.3, False),
        (50, "5", 0.8, 0.3, False),
        (10, "1-20", 0.5, 0.9, True),
        (50, "1-20", 0.9, 0.3, True),
    ],
)
def test_seeded_coverage(g, sizes, mu, rho, graded):
    datasets = 400
    rng = np.random.default_rng([11, g, int(mu * 10)])
    a, b = _simulate(rng, datasets, g, sizes, mu, rho, graded)
    out = units_ci(_table(a, b), "s", LEVEL)
    cov = float(np.mean((out["lower"] <= mu) & (mu <= out["upper"])))
    # the interval is valid in finite samples: coverage at least level - 0.01 within 3 MC SE
    assert cov >= LEVEL - 0.01 - 3 * np.sqrt(LEVEL * (1 - LEVEL) / datasets)
    np.testing.assert_allclose(out["estimate"], a.sum(axis=1) / b.sum(axis=1))


@pytest.mark.slow
def test_seeded_coverage_long():
    datasets = 2000
    for g, sizes, mu, rho, graded in [(10, "1", 0.5, 0.3, False), (20, "20", 0.98, 0.9, False)]:
        rng = np.random.default_rng([12, g])
        a, b = _simulate(rng, datasets, g, sizes, mu, rho, graded)
        out = units_ci(_table(a, b), "s", LEVEL)
        cov = float(np.mean((out["lower"] <= mu) & (mu <= out["upper"])))
        assert cov >= LEVEL - 0.01 - 3 * np.sqrt(LEVEL * (1 - LEVEL) / datasets)


# -- (iii) order of the histogram ----------------------------------------------------------------


def test_invariant_to_the_order_and_the_splitting_of_histogram_rows():
    a = [0.0, 2.5, 5.0, 3.0, 1.0]
    b = [5, 5, 5, 4, 2]
    k = [3, 2, 4, 1, 2]
    base = unit_ci(a, b, k, LEVEL)
    perm = [3, 0, 4, 2, 1]
    assert unit_ci(np.take(a, perm), np.take(b, perm), np.take(k, perm), LEVEL) == base
    # the same units, one row per unit, shuffled
    a1, b1 = np.repeat(a, k), np.repeat(b, k)
    p = np.random.default_rng(0).permutation(len(a1))
    assert unit_ci(a1[p], b1[p], np.ones(len(a1)), LEVEL) == base
    # rows with no unit or no trial are ignored
    assert unit_ci([*a, 1.0, 0.0], [*b, 3, 0], [*k, 0, 5], LEVEL) == base


def test_units_ci_agrees_with_unit_ci_per_stratum():
    t = pd.DataFrame(
        {
            "g": ["y", "x", "x", "y", "z", "x"],
            "h": [1, 1, 1, 1, 2, 1],
            "unit_successes": [1.0, 3.0, 5.0, 0.5, 2.0, 0.0],
            "unit_trials": [2, 5, 5, 1, 3, 5],
            "units": [3, 4, 2, 5, 0, 1],
        }
    )
    out = units_ci(t, ["g", "h"], LEVEL)
    assert list(out.index) == [("x", 1), ("y", 1), ("z", 2)]
    for key, rows in t.groupby(["g", "h"]):
        est, lo, hi = unit_ci(rows["unit_successes"], rows["unit_trials"], rows["units"], LEVEL)
        got = out.loc[key]
        if np.isnan(est):
            assert np.isnan(got["estimate"]) and (got["lower"], got["upper"]) == (0.0, 1.0)
        else:
            assert (got["estimate"], got["lower"], got["upper"]) == (est, lo, hi)
    assert out["n_units"].tolist() == [7, 8, 0]
    assert out["n_trials"].tolist() == [35.0, 11.0, 0.0]


# -- (iv) edges -------------------------------------------------------------------------------


def test_all_failures_lower_is_zero_and_all_successes_upper_is_one():
    est, lo, hi = unit_ci([0.0, 0.0], [5, 3], [6, 4], LEVEL)
    assert (est, lo) == (0.0, 0.0) and 0.0 < hi < 1.0
    est, lo, hi = unit_ci([5.0, 3.0], [5, 3], [6, 4], LEVEL)
    assert (est, hi) == (1.0, 1.0) and 0.0 < lo < 1.0
    # the upper end for all failures: the reference capital at it reaches 1/alpha
    hi = unit_ci([0.0], [1], [10], LEVEL)[2]
    assert _reference_capital(np.zeros(10), hi, LEVEL) >= (1 - 1e-9) / (1 - LEVEL)
    assert _reference_capital(np.zeros(10), hi - 1e-6, LEVEL) < 1 / (1 - LEVEL)


def test_empty_stratum():
    assert np.isnan(unit_ci([], [], [], LEVEL)[0])
    assert unit_ci([2.0], [0], [3], LEVEL)[1:] == (0.0, 1.0)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="unit_successes must lie"):
        unit_ci([6.0], [5], [1])
    with pytest.raises(ValueError, match="units must hold whole"):
        unit_ci([1.0], [5], [1.5])
    with pytest.raises(ValueError, match="bound must be at least"):
        unit_ci([1.0], [5], [2], bound=4)
    with pytest.raises(ValueError, match="same length"):
        unit_ci([1.0, 2.0], [5], [2])
    with pytest.raises(ValueError, match="level"):
        unit_ci([1.0], [5], [2], level=1.5)
    with pytest.raises(ValueError, match="missing the columns"):
        units_ci(pd.DataFrame({"g": [1]}), "g")


# -- (v) the confidence set is an interval -------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_confidence_set_is_an_interval_on_a_fine_grid(seed):
    rng = np.random.default_rng(seed)
    a, b = _simulate(rng, 1, 15, "1-20", [0.3, 0.7, 0.95][seed], 0.3, graded=True)
    a, b = a[0], b[0]
    grid = np.linspace(0, 1, 4001)
    accepted = log_capital(a, b, np.ones(15), grid, LEVEL) < np.log(1 / (1 - LEVEL))
    idx = np.flatnonzero(accepted)
    assert idx.size and np.all(np.diff(idx) == 1)  # one run of accepted rates
    est, lo, hi = unit_ci(a, b, np.ones(15), LEVEL)
    assert lo <= grid[idx[0]] and grid[idx[-1]] <= hi
    assert grid[idx[0]] - lo < 2.5e-4 + 1e-9 and hi - grid[idx[-1]] < 2.5e-4 + 1e-9
    assert lo <= est <= hi


def test_graded_outcomes_and_a_bound():
    # a bound above the largest unit is allowed and never gives a narrower interval here
    a, b, k = [1.5, 2.0, 0.5], [3, 2, 1], [4, 3, 5]
    e1, lo1, hi1 = unit_ci(a, b, k, LEVEL)
    e2, lo2, hi2 = unit_ci(a, b, k, LEVEL, bound=3)
    assert e1 == pytest.approx(14.5 / 23) and (lo1, hi1) == (lo2, hi2)
    assert 0 < lo1 < e1 < hi1 < 1


# -- (vii) the private STaR-Bets variant -------------------------------------------------------
# Reference: a plain-loop transcription of the target-recalculating bets from Voracek and
# Orabona (2025, arXiv:2505.22422, STaR-Bets), one side per call, written here from the paper's
# formulas; exact expectations by enumerating every outcome sequence; exact binomial coverage.


def _star_side(d, r, q, level, n_total, c=0.99, prior=1.0):
    """Log capital of one side: factors ``1 + lam_t d_t`` (``d_t`` = y_t - r or r - y_t), ``q`` the prior's scale."""
    target = math.log(2 / (1 - level))
    cap_var = max(r * (1 - r), 1e-12)
    cap = c / q if q > 0 else math.inf  # q = r for the lower side (y - r >= -r), 1 - r for the upper
    lw, sq = 0.0, 0.0
    for t, dt in enumerate(d):
        var = cap_var if t == 0 else min(sq / t + prior * q * n_total / t**2, cap_var)
        lam = min(math.sqrt(2 * max(target - lw, 0.0) / ((n_total - t) * max(var, 1e-12))), cap)
        lw += math.log1p(lam * dt)
        sq += dt * dt
    return lw


def _star_capital(a, b, m, r, level):
    """Hedged STaR capital of one betting order of units (a_i, b_i), bound m, at rate r."""
    d = [(ai - r * bi) / m for ai, bi in zip(a, b, strict=True)]
    up = _star_side(d, r, r, level, len(d))
    down = _star_side([-x for x in d], r, 1 - r, level, len(d))
    return 0.5 * math.exp(up) + 0.5 * math.exp(down)


def test_star_capital_matches_the_reference_loop():
    rng = np.random.default_rng(21)
    a = rng.binomial(rng.integers(1, 6, 11), 0.6).astype(float)
    b = np.maximum(rng.integers(1, 6, 11), a)
    rates = np.array([0.1, 0.45, 0.6, 0.9])
    ours = np.exp(log_capital(a, b, np.ones(11), rates, LEVEL, bets="star"))
    order = np.lexsort((b, a))
    xs, ys = a[order], b[order]
    ref = [np.mean([_star_capital(xs[p], ys[p], b.max(), r, LEVEL) for p in _orders(11, 16)]) for r in rates]
    np.testing.assert_allclose(ours, ref, rtol=1e-9)


@pytest.mark.parametrize(
    ("n", "support", "probs"),
    [
        (3, [(0.0, 1), (1.0, 1), (0.0, 2), (1.0, 2), (2.0, 2)], [0.2, 0.1, 0.15, 0.25, 0.3]),
        (3, [(0.0, 1), (0.5, 1), (1.0, 1)], [0.1, 0.3, 0.6]),
    ],
)
def test_star_capital_is_an_e_value_by_exhaustive_expectation(n, support, probs):
    # n <= 3 units: the kernel averages over every order, so E K(R) is an exact sum over all n-tuples
    probs = np.asarray(probs)
    r_true = sum(p * a for p, (a, _) in zip(probs, support, strict=True)) / sum(
        p * b for p, (_, b) in zip(probs, support, strict=True)
    )
    m = max(b for _, b in support)
    expect = {r_true: 0.0, 0.5 * r_true: 0.0}
    for seq in itertools.product(range(len(support)), repeat=n):
        a = [support[i][0] for i in seq]
        b = [support[i][1] for i in seq]
        w = float(np.prod(probs[list(seq)]))
        lk = log_capital(a, b, np.ones(n), list(expect), LEVEL, bound=m, bets="star")
        for r, v in zip(expect, np.exp(lk), strict=True):
            expect[r] += w * v
    assert expect[r_true] == pytest.approx(1.0, abs=1e-12)  # a martingale: mean exactly one
    assert expect[0.5 * r_true] > 1.0  # and not at a false rate


def test_star_single_order_capital_is_a_martingale_at_n_eight():
    # one fixed order of 8 units (the kernel's (S, K, n) evaluation): E K(R) = 1 over all 3^8 sequences
    from bayeseval._kernels.bounded_mean import _log_mean_capital_star

    vals, probs = np.array([0.0, 0.5, 1.0]), np.array([0.25, 0.35, 0.4])
    seqs = np.array(list(itertools.product(range(3), repeat=8)))
    a = vals[seqs][:, None, :]
    w = np.prod(probs[seqs], axis=1)
    r_true = float(vals @ probs)
    caps = np.exp(
        _log_mean_capital_star(a, np.ones_like(a), np.ones(len(a)), np.full((len(a), 1), r_true), LEVEL, 0.99)
    )
    assert float(w @ caps[:, 0]) == pytest.approx(1.0, abs=1e-10)
    i = 4321
    assert caps[i, 0] == pytest.approx(_star_capital(a[i, 0], np.ones(8), 1.0, r_true, LEVEL), rel=1e-10)


def _binary_intervals(n, **kw):
    k = np.arange(n + 1)
    t = pd.DataFrame(
        {
            "s": np.repeat(k, 2),
            "unit_successes": np.tile([1.0, 0.0], n + 1),
            "unit_trials": 1,
            "units": np.column_stack([k, n - k]).ravel(),
        }
    )
    out = units_ci(t, "s", LEVEL, **kw)
    return out["lower"].to_numpy(), out["upper"].to_numpy()


@pytest.mark.parametrize("n", [10, 20])
def test_star_exact_coverage_binary_units_of_size_one(n):
    # binary units of size one: the interval is a function of the number of successes k, so the
    # coverage at p is the exact sum over k of the binomial probabilities of the k whose interval holds p
    from scipy import stats

    lo, hi = _binary_intervals(n, bets="star")
    p = np.linspace(0.0005, 0.9995, 1999)
    pmf = stats.binom.pmf(np.arange(n + 1)[None, :], n, p[:, None])
    cov = (pmf * ((lo <= p[:, None]) & (p[:, None] <= hi))).sum(axis=1)
    assert cov.min() >= LEVEL
    # and narrower than the default interval for every number of successes
    lo_w, hi_w = _binary_intervals(n)
    assert np.all(hi - lo < hi_w - lo_w)


def test_star_interval_is_the_hull_of_the_accepted_rates():
    # the STaR capital need not be monotone in r: the interval must hold every accepted rate of a
    # fine grid (up to a sliver narrower than the local scan's spacing, 1/64/32)
    rng = np.random.default_rng(5)
    for _ in range(6):
        a, b = _simulate(rng, 1, 30, "1-20", 0.7, 0.3, graded=True)
        a, b = a[0], b[0]
        grid = np.linspace(0, 1, 4001)
        accepted = grid[log_capital(a, b, np.ones(30), grid, LEVEL, bets="star") < np.log(1 / (1 - LEVEL))]
        est, lo, hi = unit_ci(a, b, np.ones(30), LEVEL, bets="star")
        assert lo <= est <= hi
        assert lo <= accepted.min() + 5e-4 and accepted.max() - 5e-4 <= hi
        assert accepted.min() - lo < 2.5e-4 + 1e-9 and hi - accepted.max() < 2.5e-4 + 1e-9


@pytest.mark.slow
def test_star_seeded_coverage_clustered():
    datasets = 300
    for g, sizes, mu, rho, graded in [(10, "5", 0.8, 0.3, False), (20, "1-20", 0.9, 0.3, True)]:
        rng = np.random.default_rng([13, g])
        a, b = _simulate(rng, datasets, g, sizes, mu, rho, graded)
        out = units_ci(_table(a, b), "s", LEVEL, bets="star")
        cov = float(np.mean((out["lower"] <= mu) & (mu <= out["upper"])))
        assert cov >= LEVEL - 0.01 - 3 * np.sqrt(LEVEL * (1 - LEVEL) / datasets)


def test_bets_default_and_errors():
    a, b, k = [5.0, 0.0, 3.0], [5, 5, 5], [5, 2, 3]
    assert unit_ci(a, b, k, LEVEL) == unit_ci(a, b, k, LEVEL, bets="wsr", truncation=0.75)
    with pytest.raises(ValueError, match="bets must be one of"):
        unit_ci(a, b, k, bets="kelly")
    with pytest.raises(ValueError, match="truncation must lie"):
        unit_ci(a, b, k, truncation=1.0)
