"""Validity at a campaign's stop: coverage of the intervals read when a stratum stops, and what may stop it."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.sequential import sequential_outcome as sequential_outcome_core_anytime


def _fab_table(level):
    from bayeseval._kernels.betabinom import beta_mixture_predictive
    from bayeseval._kernels.fab import fab_intervals_all_counts

    cache = {}

    def table(n):
        if n not in cache:
            iv = fab_intervals_all_counts(n, beta_mixture_predictive(n, [1.0], [2.0], [18.0]), level)
            cache[n] = (iv.lower, iv.upper)
        return cache[n]

    return table


def _coverage_at_stop(table, rate, every, cap=400, target=0.05):
    from bayeseval._kernels.sequential import sequential_outcome

    def stop(s, n):
        lo, hi = table(n)
        return (hi - lo) / 2 <= target

    def covers(s, n):
        lo, hi = table(n)
        return (lo <= rate) & (rate <= hi)

    out = sequential_outcome(rate, stop, covers, every=every, max_trials=cap)
    assert out.cap_probability < 1e-3  # (nearly) every run stops on its own
    return out.event_at_end


def _wilson_rule(target, level):
    alpha = 1 - level

    def bounds(s, n):
        return binomial_bounds(
            np.asarray(s, float), np.broadcast_to(np.asarray(n, float), np.shape(s)), alpha, "wilson"
        )

    def stop(s, n):
        lo, hi = bounds(s, n)
        return (hi - lo) / 2 <= target

    return bounds, stop


def _simulate(rate, rows, every, cap, bounds, stop, reps, seed):
    """Seeded runs of the rule (all runs at once): coverage at stop and mean labels."""
    rng = np.random.default_rng(seed)
    if rows is None:
        x = rng.random((reps, cap)) < rate
    else:
        x = rng.permuted(np.tile(np.arange(rows) < round(rate * rows), (reps, 1)), axis=1)[:, :cap]
    looks = np.array([*range(every, cap, every), cap])
    s = np.cumsum(x, axis=1)[:, looks - 1]
    halt = np.column_stack([stop(s[:, j], n) for j, n in enumerate(looks)])
    halt[:, -1] = True
    first = np.argmax(halt, axis=1)
    s_stop, n_stop = s[np.arange(reps), first], looks[first]
    lo, hi = bounds(s_stop, n_stop)
    return float(np.mean((lo <= rate) & (rate <= hi))), float(n_stop.mean())


def test_compensated_stop_level_keeps_coverage_at_stop_exactly():
    # exact dynamic programme over (look, count): the adaptive interval with a fixed Beta(2, 18)
    # prior at the worst rate (0.11); stopping on the 95% interval loses coverage (0.938 with a
    # look every 5 labels), the interval at guarantee_stop_level(0.95) = 0.965 keeps >= 0.94
    from bayeseval.campaign.goals.guarantee import guarantee_stop_level

    plain, kept = _fab_table(0.95), _fab_table(guarantee_stop_level(0.95))
    assert _coverage_at_stop(plain, 0.11, 5) < 0.94
    for every in (5, 20, 50):
        assert _coverage_at_stop(kept, 0.11, every) >= 0.94


@pytest.mark.slow
def test_compensated_stop_level_every_schedule_and_rate():
    # looking after every label is the worst schedule: 0.924 at level 0.95, 0.941 at 0.965
    from bayeseval.campaign.goals.guarantee import guarantee_stop_level

    kept = _fab_table(guarantee_stop_level(0.95))
    assert _coverage_at_stop(_fab_table(0.95), 0.11, 1) < 0.93
    for rate in (0.05, 0.11, 0.30):
        for every in (1, 5, 20, 50):
            assert _coverage_at_stop(kept, rate, every, cap=500) >= 0.94


@pytest.mark.parametrize("rows", [None, 400])
def test_coverage_at_stop_matches_a_seeded_simulation(rows):
    rate, every, cap, reps = 0.2, 7, 300, 20_000
    bounds, stop = _wilson_rule(0.07, 0.9)

    def covers(s, n):
        lo, hi = bounds(s, n)
        return (lo <= rate) & (rate <= hi)

    out = sequential_outcome_core_anytime(rate, stop, covers, every=every, max_trials=cap, rows=rows)
    cov, labels = _simulate(rate, rows, every, cap, bounds, stop, reps, seed=3)
    se = np.sqrt(out.event_at_end * (1 - out.event_at_end) / reps)
    assert abs(cov - out.event_at_end) < 4 * se  # 4 Monte Carlo standard errors
    assert labels == pytest.approx(out.expected_trials, rel=0.02)
