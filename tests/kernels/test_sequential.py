"""The exact sequential engine of one stratum.

References: brute-force enumeration of every label sequence (all 2^n for Bernoulli
trials; the product of without-replacement draw probabilities for a finite stratum), a
closed form (geometric stopping), and seeded simulations with a stated tolerance.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from bayeseval._kernels.sequential import look_sizes
from bayeseval._kernels.sequential import sequential_outcome as sequential_outcome_core_anytime


def _stop(s, n):
    """A rule that is not monotone in s: stop at 2 successes, or at 6 failures, or at s == n == 3."""
    s = np.asarray(s)
    return (s >= 2) | (n - s >= 6) | ((s == 1) & (n == 3))


def _event(s, n):
    return s * 3 > n


def _brute_force(rate, n_max, looks, rows=None):
    """Walk every sequence of n_max labels; return (event, stop per look, cap, cap event, E[n])."""
    looks = list(looks)
    stop_p = np.zeros(len(looks))
    event = cap = cap_event = expected = 0.0
    errors = None if rows is None else round(rate * rows)
    for seq in itertools.product((0, 1), repeat=n_max):
        prob, s = 1.0, 0
        for i, x in enumerate(seq):
            q = rate if rows is None else (errors - s) / (rows - i)
            prob *= q if x else 1.0 - q
            s += x
        if prob == 0.0:
            continue
        for j, look in enumerate(looks):
            sj = sum(seq[:look])
            if _stop(sj, look):
                stop_p[j] += prob
                event += prob * _event(sj, look)
                expected += prob * look
                break
        else:
            cap += prob
            cap_event += prob * _event(sum(seq[: looks[-1]]), looks[-1])
            expected += prob * looks[-1]
    return event, stop_p, cap, cap_event, expected


@pytest.mark.parametrize("rows", [None, 14])
@pytest.mark.parametrize("schedule", [{"every": 1}, {"every": 3}, {"looks": [2, 3, 7, 10]}])
def test_matches_enumeration_of_every_label_sequence(rows, schedule):
    rate = 0.3 if rows is None else 5 / 14
    out = sequential_outcome_core_anytime(rate, _stop, _event, max_trials=10, rows=rows, **schedule)
    event, stop_p, cap, cap_event, expected = _brute_force(rate, 10, out.looks, rows)
    np.testing.assert_allclose(out.stop_probability, stop_p, rtol=0, atol=1e-12)
    assert out.event_probability == pytest.approx(event, abs=1e-12)
    assert out.cap_probability == pytest.approx(cap, abs=1e-12)
    assert out.cap_event_probability == pytest.approx(cap_event, abs=1e-12)
    assert out.expected_trials == pytest.approx(expected, abs=1e-11)
    assert out.stop_probability.sum() + out.cap_probability == pytest.approx(1.0, abs=1e-12)


def test_without_replacement_count_is_hypergeometric_and_the_last_look_sees_the_whole_stratum():
    # no rule stops: the count at the last look (all rows drawn) is the stratum's errors
    out = sequential_outcome_core_anytime(
        0.25, lambda s, n: np.zeros(n + 1, bool), lambda s, n: s == 5, every=4, rows=20
    )
    assert out.cap_probability == pytest.approx(1.0) and out.cap_event_probability == pytest.approx(1.0)
    mid = sequential_outcome_core_anytime(
        0.25, lambda s, n: np.zeros(n + 1, bool), lambda s, n: s == 2, looks=[3, 9], rows=20
    )
    assert mid.cap_event_probability == pytest.approx(stats.hypergeom.pmf(2, 20, 5, 9), abs=1e-12)


def test_geometric_stop_size():
    p = 0.15
    out = sequential_outcome_core_anytime(p, lambda s, n: s >= 1, lambda s, n: np.ones(n + 1, bool), max_trials=30)
    np.testing.assert_allclose(out.stop_probability, stats.geom.pmf(np.arange(1, 31), p), atol=1e-14)


def test_look_sizes_and_bad_input():
    assert look_sizes(every=3, max_trials=7).tolist() == [3, 6, 7]
    with pytest.raises(ValueError, match="every and looks"):
        look_sizes(every=2, looks=[1, 2])
    with pytest.raises(ValueError, match="max_trials"):
        look_sizes(every=2)
    with pytest.raises(ValueError, match=r"strictly increasing, got \[3, 3\]"):
        look_sizes(looks=[3, 3])
    with pytest.raises(ValueError, match="every must be an integer >= 1, got 0"):
        look_sizes(every=0, max_trials=5)
    with pytest.raises(ValueError, match="rate"):
        sequential_outcome_core_anytime(1.5, _stop, _event, max_trials=5)
    with pytest.raises(ValueError, match=r"rate \* rows must be a whole number.*rate=0.3, rows=7"):
        sequential_outcome_core_anytime(0.3, _stop, _event, rows=7)
    with pytest.raises(ValueError, match=r"last look \(12\) exceeds the rows of the stratum \(10\)"):
        sequential_outcome_core_anytime(0.3, _stop, _event, max_trials=12, rows=10)
