"""The interval for a finite pool of units: the betting interval for sampling without replacement.

Estimand: the pool's own row-level rate, successes summed over all its units over their rows.
References: exact enumeration of every sample of a small pool (coverage of the pool rate), the
exact hypergeometric limits of ``pool_ci`` (units of one binary row), the ``"process"`` units
interval (the limit of a pool much larger than the sample) and the pool rate itself (every unit
drawn).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from bayeseval._kernels.bounded_mean import unit_ci, units_ci
from bayeseval._kernels.finite_pool import pool_ci, pool_units_ci

SIZES = np.array([1, 1, 2, 2, 2, 3, 3, 3])  # the small pool enumerated: N = 8 units of 1-3 rows


def _pools(count, seed):
    """``count`` seeded assignments of unit successes on the grid {0, b/2, b}, and the three extremes."""
    rng = np.random.default_rng(seed)
    grid = rng.integers(0, 3, (count, SIZES.size)) / 2.0 * SIZES
    return [*grid, SIZES * 0.0, SIZES * 1.0, np.array([0, 1, 0, 2, 0, 3, 0, 3.0])]


def _every_sample(pools, n, level):
    """The pool interval of every sample of ``n`` units of every pool: (coverage per pool, mean width)."""
    subsets = list(itertools.combinations(range(SIZES.size), n))
    keys, a, b = [], [], []
    for i, pool in enumerate(pools):
        for j, sub in enumerate(subsets):
            keys += [i * len(subsets) + j] * n
            a += [pool[u] for u in sub]
            b += [SIZES[u] for u in sub]
    table = pd.DataFrame({"s": keys, "unit_successes": a, "unit_trials": b, "units": 1})
    index = pd.Index(sorted(set(keys)), name="s")
    sizes = pd.DataFrame({"pool_units": SIZES.size, "pool_trials": SIZES.sum(), "pool_largest": 3}, index=index)
    ci = units_ci(table, "s", level, pool=sizes)
    truth = np.array([p.sum() / SIZES.sum() for p in pools])[ci.index.to_numpy() // len(subsets)]
    hit = (ci["lower"].to_numpy() <= truth + 1e-12) & (truth <= ci["upper"].to_numpy() + 1e-12)
    return hit.reshape(len(pools), len(subsets)).mean(axis=1), float((ci["upper"] - ci["lower"]).mean())


@pytest.mark.parametrize("level", [0.5, 0.9])
def test_every_sample_of_a_small_pool_covers_its_rate_at_least_level(level):
    """Exact: coverage over every sample of ``n`` of 8 units, per pool (15 pools), at every ``n``.

    Measured minimum over pools and ``n`` (63 pools, the slow test below): 0.625 at level 0.3,
    0.750 at level 0.5, 0.964 at level 0.8, 1.0 at 0.95 (where, with 8 units, the sure bounds
    are the narrower part).
    """
    pools = _pools(12, seed=3)
    for n in range(1, SIZES.size + 1):
        coverage, _ = _every_sample(pools, n, level)
        assert coverage.min() >= level, (n, coverage.min())


@pytest.mark.slow
def test_every_sample_of_more_pools_covers_at_every_level():
    pools = _pools(60, seed=1)
    for level in (0.3, 0.5, 0.8, 0.95):
        for n in range(1, SIZES.size + 1):
            coverage, _ = _every_sample(pools, n, level)
            assert coverage.min() >= level, (level, n, coverage.min())


def test_every_unit_drawn_gives_the_pool_rate_itself():
    pools = _pools(5, seed=4)
    coverage, width = _every_sample(pools, SIZES.size, 0.95)
    assert width == 0.0 and (coverage == 1.0).all()
    est, lo, hi = unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3], pool_units=10, pool_trials=50)
    assert est == lo == hi == 0.68


def test_the_width_falls_as_the_sampling_fraction_grows_and_stays_below_the_process_interval():
    """Mean width over every sample of ``n`` of the 8 units, against the process interval of the same samples."""
    pools = _pools(10, seed=5)
    widths = [_every_sample(pools, n, 0.95)[1] for n in range(2, SIZES.size + 1)]
    assert all(w1 > w2 for w1, w2 in zip(widths, widths[1:], strict=False)), widths
    rng = np.random.default_rng(0)
    for n in (3, 5, 7):
        pick = rng.choice(SIZES.size, n, replace=False)
        a, b = pools[0][pick], SIZES[pick]
        _, plo, phi = unit_ci(a, b, np.ones(n), bound=3, pool_units=8, pool_trials=SIZES.sum())
        _, lo, hi = unit_ci(a, b, np.ones(n), bound=3)
        assert lo <= plo and phi <= hi and phi - plo < hi - lo


def test_a_pool_much_larger_than_the_sample_gives_the_process_interval():
    _, lo, hi = unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3])
    _, plo, phi = unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3], pool_units=10**6, pool_trials=5 * 10**6)
    assert abs(plo - lo) < 1e-5 and abs(phi - hi) < 1e-5 and lo <= plo and phi <= hi


def test_the_interval_holds_the_rates_the_unseen_units_can_still_make_only():
    """10 of 20 items of 5 rows drawn, 34 successes in 50: the pool rate lies in [34/100, 84/100] for sure."""
    est, lo, hi = unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3], pool_units=20, pool_trials=100)
    assert 0.34 <= lo < est < hi <= 0.84 and hi == 0.84


def test_units_of_one_binary_row_get_the_exact_hypergeometric_limits():
    rng = np.random.default_rng(2)
    rows = []
    pools = {}
    for j in range(30):
        n_pool = int(rng.integers(5, 200))
        n = int(rng.integers(1, n_pool + 1))
        s = int(rng.integers(0, n + 1))
        pools[f"g{j:02d}"] = (s, n, n_pool)
        rows += [(f"g{j:02d}", 1.0, 1, s), (f"g{j:02d}", 0.0, 1, n - s)]
    table = pd.DataFrame(rows, columns=["g", "unit_successes", "unit_trials", "units"])
    sizes = pd.DataFrame(
        {
            "pool_units": [v[2] for v in pools.values()],
            "pool_trials": [v[2] for v in pools.values()],
            "pool_largest": 1,
        },
        index=pd.Index(list(pools), name="g"),
    )
    out = pool_units_ci(table, "g", sizes, 0.95)
    s, n, big = (np.array([v[i] for v in pools.values()], float) for i in range(3))
    lo, hi = pool_ci(s, n, big, 0.95)
    np.testing.assert_array_equal(out["lower"].to_numpy(), lo)
    np.testing.assert_array_equal(out["upper"].to_numpy(), hi)
    graded = table.assign(unit_successes=table["unit_successes"] * 0.5)  # not binary: the betting interval
    other = pool_units_ci(graded, "g", sizes, 0.95)
    ref = units_ci(graded, "g", 0.95, pool=sizes)
    np.testing.assert_array_equal(other["lower"].to_numpy(), ref["lower"].to_numpy())


@pytest.mark.slow
def test_seeded_coverage_of_larger_pools_at_level():
    """2,000 seeded pools of 200 units of 1-5 rows (item rates Beta(0.4, 1.6)), 40 units drawn.

    Measured: coverage 0.999, mean width 0.266 (MC SE at 0.95: 0.005); stated tolerance: at least 0.95 - 0.01.
    """
    rng = np.random.default_rng(11)
    d, n_pool, n = 2000, 200, 40
    b = rng.integers(1, 6, (d, n_pool))
    a = rng.binomial(b, rng.beta(0.4, 1.6, (d, n_pool))).astype(float)
    truth = a.sum(axis=1) / b.sum(axis=1)
    pick = np.argsort(rng.random((d, n_pool)), axis=1)[:, :n]
    table = pd.DataFrame(
        {
            "s": np.repeat(np.arange(d), n),
            "unit_successes": np.take_along_axis(a, pick, 1).ravel(),
            "unit_trials": np.take_along_axis(b, pick, 1).ravel(),
            "units": 1,
        }
    )
    sizes = pd.DataFrame(
        {"pool_units": n_pool, "pool_trials": b.sum(axis=1), "pool_largest": b.max(axis=1)},
        index=pd.Index(np.arange(d), name="s"),
    )
    ci = pool_units_ci(table, "s", sizes, 0.95)
    assert np.mean((ci["lower"] <= truth) & (truth <= ci["upper"])) >= 0.94


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"pool_units": 10}, "pool_units and pool_trials go together"),
        ({"pool_units": 5, "pool_trials": 50}, "pool_units must be whole numbers at least the units drawn"),
        ({"pool_units": 12, "pool_trials": 50}, "pool_trials must lie between"),
        ({"pool_units": 12, "pool_trials": 61}, "pool_trials must lie between"),
        ({"pool_units": 12, "pool_trials": 55, "bets": "star"}, "a finite pool takes bets='wsr'"),
    ],
)
def test_pool_sizes_that_cannot_be_are_refused_naming_the_argument(kw, match):
    with pytest.raises(ValueError, match=match):
        unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3], **kw)


def test_units_ci_refuses_a_pool_table_without_its_columns_or_strata():
    table = pd.DataFrame({"g": ["x"], "unit_successes": [1.0], "unit_trials": [2], "units": [3]})
    with pytest.raises(ValueError, match="pool must be a DataFrame with the columns"):
        units_ci(table, "g", pool=pd.DataFrame({"pool_units": [5]}, index=pd.Index(["x"], name="g")))
    other = pd.DataFrame({"pool_units": [5], "pool_trials": [10], "pool_largest": [2]}, index=pd.Index(["y"], name="g"))
    with pytest.raises(ValueError, match="for every stratum of the table"):
        units_ci(table, "g", pool=other)
