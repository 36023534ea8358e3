"""The confidence sequence of a stratum's rate from units in arrival order (``unit_cs``).

References: a plain-loop implementation of the Waudby-Smith and Ramdas (2024) hedged capital
with their time-uniform predictable plug-in bets, written here from the paper's formulas;
exact enumeration of every binary sequence of units of size one (n <= 12) for coverage at every
look at once; seeded clustered sequences with a known rate; brute-force grids for the inversion.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bayeseval._kernels.bounded_mean import _sequence_ends, _sequence_log_capital, unit_ci, unit_cs

LEVEL = 0.95


def _wsr_anytime_capital(x, m, level, c=0.75):
    """Hedged capital after each of the values ``x`` in [0, 1] at null mean ``m`` (plain loops)."""
    alpha = 1 - level
    kp = kn = 1.0
    mu_sum, sq_sum, sigma2_prev = 0.0, 0.0, 0.25
    out = []
    for t, xt in enumerate(x, start=1):
        lam = math.sqrt(2 * math.log(2 / alpha) / (sigma2_prev * t * math.log(1 + t)))
        lp = min(lam, c / m) if m > 0 else lam
        ln = min(lam, c / (1 - m)) if m < 1 else lam
        kp *= 1 + lp * (xt - m)
        kn *= 1 - ln * (xt - m)
        mu_sum += xt
        mu_hat = (0.5 + mu_sum) / (t + 1)
        sq_sum += (xt - mu_hat) ** 2
        sigma2_prev = (0.25 + sq_sum) / (t + 1)
        out.append(0.5 * kp + 0.5 * kn)
    return np.array(out)


def _clustered(rng, s, n, mu, rho, graded, bound=5):
    b = rng.integers(1, bound + 1, (s, n)).astype(float)
    k = 1 / rho - 1
    p = rng.beta(mu * k, (1 - mu) * k, (s, n))
    ib = b.astype(int)
    a = rng.binomial(2 * ib, p) / 2 if graded else rng.binomial(ib, p).astype(float)
    return a, b


def test_capital_is_the_wsr_time_uniform_capital_with_equal_sizes():
    rng = np.random.default_rng(1)
    a = rng.binomial(4, 0.7, 30).astype(float)
    b = np.full(30, 4.0)
    for r in (0.2, 0.55, 0.7, 0.93):
        got = _sequence_log_capital(a[None], b[None], np.array([4.0]), LEVEL, 0.75, np.array([[r]]))[0, :, 0]
        assert np.allclose(np.exp(got), _wsr_anytime_capital(a / 4, r, LEVEL), rtol=1e-10)


def _exact_worst_coverage(n, level, grid):
    seqs = np.array(list(itertools.product([0.0, 1.0], repeat=n)))
    ones = np.ones_like(seqs)
    _, lo, hi = _sequence_ends(seqs, ones, np.ones(len(seqs)), level, 0.75, np.arange(1, n + 1))
    k = seqs.sum(axis=1)
    worst = 1.0
    for p in grid:
        covered = ((lo <= p) & (p <= hi)).all(axis=1)
        worst = min(worst, float((p**k * (1 - p) ** (n - k) * covered).sum()))
    return worst


@pytest.mark.parametrize("level", [0.8, 0.95])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_exact_coverage_at_every_look_binary_units_of_size_one(n, level):
    # every sequence of n binary units, p on a grid of 199: the running interval holds p after
    # every unit at once with probability at least the level
    assert _exact_worst_coverage(n, level, np.linspace(0.005, 0.995, 199)) >= level


@pytest.mark.slow
def test_exact_coverage_at_every_look_twelve_units():
    # measured: 0.9723 at level 0.95 (p on a grid of 999; 0.9869 at n = 4, 0.9830 at n = 8)
    worst = _exact_worst_coverage(12, LEVEL, np.linspace(0.001, 0.999, 999))
    assert worst >= LEVEL
    assert worst == pytest.approx(0.9723, abs=1e-3)


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize(("mu", "rho"), [(0.5, 0.3), (0.9, 0.5), (0.2, 0.1)])
def test_seeded_time_uniform_coverage_clustered(mu, rho, graded):
    # 500 sequences of 200 units of 1-5 rows (bound 5), item rates Beta(mean mu, correlation rho);
    # MC SE 0.0097 at 0.95. Measured (these seeds), at every unit: 0.972, 0.982, 0.988 (binary),
    # 0.974, 0.990, 0.994 (graded); the reported intervals read every 10 units: 0.978-0.996.
    rng = np.random.default_rng([45, int(graded), int(mu * 10)])
    a, b = _clustered(rng, 500, 200, mu, rho, graded)
    m = np.full(500, 5.0)
    lk = _sequence_log_capital(a, b, m, LEVEL, 0.75, np.full((500, 1), mu))[:, :, 0]
    every_unit = (lk < -math.log(1 - LEVEL)).all(axis=1).mean()
    _, lo, hi = _sequence_ends(a, b, m, LEVEL, 0.75, np.arange(10, 201, 10))
    every_look = ((lo <= mu) & (mu <= hi)).all(axis=1).mean()
    assert every_unit >= LEVEL - 0.02
    assert every_look >= every_unit  # the reported intervals hold the accepted set
    assert every_look >= LEVEL - 0.02


def test_reported_interval_holds_every_rate_accepted_at_every_look():
    rng = np.random.default_rng(3)
    a, b = _clustered(rng, 1, 60, 0.7, 0.3, True)
    cs = unit_cs(a[0], b[0], bound=5)
    grid = np.linspace(0, 1, 2001)
    lk = _sequence_log_capital(a, b, np.array([5.0]), LEVEL, 0.75, grid[None])[0]  # (n, R)
    alive = np.logical_and.accumulate(lk < -math.log(1 - LEVEL), axis=0)
    for t in (0, 9, 29, 59):
        acc = grid[alive[t]]
        assert acc.size > 0
        assert cs["lower"].iloc[t] <= acc.min() and acc.max() <= cs["upper"].iloc[t]
        # and tight: the lower end is the last look's running maximum, within a grid step of
        # an accepted rate, the estimate or an earlier look's end
        ends = [min(grid[alive[j]].min(), cs["estimate"].iloc[j]) for j in range(t + 1)]
        assert cs["lower"].iloc[t] <= max(ends) + 5e-4


def test_nested_and_order_matters():
    a = [5, 4, 0, 5, 3, 5, 5, 2, 4, 5, 1, 5, 4, 5, 3, 5, 0, 4, 5, 5]
    cs = unit_cs(a, [5] * 20)
    assert (np.diff(cs["lower"]) >= 0).all() and (np.diff(cs["upper"]) <= 0).all()
    assert cs["estimate"].iloc[-1] == pytest.approx(sum(a) / 100)
    # a different arrival order is a different (still valid) sequence; the last estimate is the same
    back = unit_cs(a[::-1], [5] * 20)
    assert back["estimate"].iloc[-1] == pytest.approx(cs["estimate"].iloc[-1])
    assert (back["lower"].iloc[-1], back["upper"].iloc[-1]) != (cs["lower"].iloc[-1], cs["upper"].iloc[-1])
    # looks: the intersection over fewer looks holds the one over every unit
    few = unit_cs(a, [5] * 20, looks=[5, 20])
    assert few["lower"].iloc[-1] <= cs["lower"].iloc[-1] + 1e-9
    assert few["upper"].iloc[-1] >= cs["upper"].iloc[-1] - 1e-9
    # and it is wider than the fixed-n interval of the same units
    _, lo, hi = unit_ci(a, [5] * 20, [1] * 20)
    assert cs["lower"].iloc[-1] < lo and hi < cs["upper"].iloc[-1]


def test_all_failures_and_all_successes():
    cs = unit_cs([0.0] * 15, [3] * 15)
    assert (cs["lower"] == 0).all() and cs["upper"].iloc[-1] < 0.5
    cs = unit_cs([3.0] * 15, [3] * 15)
    assert (cs["upper"] == 1).all() and cs["lower"].iloc[-1] > 0.5


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="looks"):
        unit_cs([1, 0], [1, 1], looks=[2, 1])
    with pytest.raises(ValueError, match="looks"):
        unit_cs([1, 0], [1, 1], looks=[3])
    with pytest.raises(ValueError, match="bound"):
        unit_cs([1, 0], [2, 1], bound=1)
    with pytest.raises(ValueError, match="unit_successes"):
        unit_cs([3, 0], [2, 1])
    assert len(unit_cs([], [])) == 0
