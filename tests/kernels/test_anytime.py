"""Anytime-valid decisions and the mixture confidence sequence of one binomial rate.

References: numerical quadrature of the defining mixture integrals (scipy.integrate.quad),
the closed form of Robbins' uniform mixture, the exact one-step conditional mean (the
martingale and supermartingale properties), brute-force evaluation over every count, and
the exact sequential engine (itself checked against enumeration) for the error and
coverage guarantees at every look schedule.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from bayeseval._kernels.anytime import (
    anytime_decisions,
    confidence_sequence_bounds,
    decision_boundaries,
    decision_evidence,
    log_mixture_martingale,
    tuned_concentration,
)
from tests.helpers import CRIT, _decision_state


def _lik(q, s, n):
    return q**s * (1 - q) ** (n - s)


def test_stratum_margin_decides_at_the_threshold_on_the_confidence_sequence():
    from bayeseval._kernels.anytime import confidence_sequence_bounds

    st = _decision_state(np.array([120, 300]), 1200, margin=0.04)
    c, lv = st.decision_concentration(), st.anytime_level()
    assert lv == pytest.approx(0.975)
    lo, hi = confidence_sequence_bounds(np.array([120.0, 300.0]), np.array([1200.0, 1200.0]), lv, c)
    assert lo[0] >= 0.06 and hi[0] <= 0.14  # the first stratum's sequence is inside 0.10 +/- 0.04
    assert st.decisions().tolist() == ["at the threshold", "fails"]


@pytest.mark.parametrize("s, n", [(0, 10), (3, 40), (17, 60), (40, 40)])
@pytest.mark.parametrize("c", [2.0, 30.0])
def test_decision_evidence_is_the_truncated_mixture_integral(s, n, c):
    t = 0.2
    a, b = c * t, c * (1 - t)
    dens = stats.beta(a, b).pdf
    ref = []
    for lo, hi in ((0.0, t), (t, 1.0)):
        num = integrate.quad(lambda q: _lik(q, s, n) * dens(q), lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0]
        mass = integrate.quad(dens, lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0]
        ref.append(math.log(num / mass / _lik(t, s, n)))
    got = decision_evidence(s, n, t, c)
    np.testing.assert_allclose([float(v) for v in got], ref, rtol=1e-7, atol=1e-8)


def test_decision_boundaries_agree_with_every_count():
    n = np.array([0, 1, 4, 30, 150, 700])
    below, above = decision_boundaries(n, 0.12, 0.95, 40.0)
    for i, m in enumerate(n):
        s = np.arange(m + 1)
        lb, la = decision_evidence(s, m, 0.12, 40.0)
        assert below[i] == (s[lb >= CRIT].max() if np.any(lb >= CRIT) else -1)
        assert above[i] == (s[la >= CRIT].min() if np.any(la >= CRIT) else m + 1)


def test_decisions_mirror_and_need_min_trials():
    s, n = np.array([0, 0, 3, 3, 30, 12]), np.array([40, 40, 3, 3, 100, 100])
    below = anytime_decisions(s, n, 0.1, concentration=20.0, min_trials=5)
    above = anytime_decisions(s, n, 0.1, direction="above", concentration=20.0, min_trials=5)
    flip = {"meets": "fails", "fails": "meets", "undecided": "undecided"}
    assert above.tolist() == [flip[d] for d in below.tolist()]
    assert below[2] == "undecided"  # 3 of 3 is strong evidence, but under min_trials
    lb, la = decision_evidence(s, n, 0.1, 20.0)
    expected = np.where(n < 5, "undecided", np.where(lb >= CRIT, "meets", np.where(la >= CRIT, "fails", "undecided")))
    assert below.tolist() == expected.tolist()
    # one error in the first label cannot decide "fails": the e-value is at most 1 / threshold
    assert float(np.exp(decision_evidence(1, 1, 0.1, 0.01)[1])) < 10.0 < 20.0
    assert anytime_decisions(1, 1, 0.1, concentration=0.01, min_trials=0).tolist() == "undecided"


def test_decision_bad_input():
    with pytest.raises(ValueError, match="direction must be 'below' or 'above', got 'up'"):
        anytime_decisions(1, 10, 0.1, direction="up")
    with pytest.raises(ValueError, match="threshold"):
        anytime_decisions(1, 10, 1.0)
    with pytest.raises(ValueError, match="level"):
        anytime_decisions(1, 10, 0.1, level=1.2)


@pytest.mark.parametrize("p, s, n, c", [(0.3, 4, 20, 2.0), (0.07, 0, 50, 10.0), (0.6, 80, 100, 13.0)])
def test_mixture_martingale_is_the_integral(p, s, n, c):
    dens = stats.beta(c * p, c * (1 - p)).pdf
    ref = integrate.quad(lambda q: _lik(q, s, n) * dens(q), 0, 1, epsabs=0, epsrel=1e-11, limit=200)[0]
    got = float(log_mixture_martingale(p, s, n, c))
    assert got == pytest.approx(math.log(ref / _lik(p, s, n)), rel=1e-7, abs=1e-8)


def test_mixture_martingale_has_mean_one_step_ahead():
    s, n = np.meshgrid(np.arange(41), np.arange(41))
    s, n = s[s <= n], n[s <= n]
    for p, c in ((0.05, 3.0), (0.5, 40.0)):
        m = np.exp(log_mixture_martingale(p, s, n, c))
        nxt = p * np.exp(log_mixture_martingale(p, s + 1, n + 1, c)) + (1 - p) * np.exp(
            log_mixture_martingale(p, s, n + 1, c)
        )
        np.testing.assert_allclose(nxt, m, rtol=1e-9)


@pytest.mark.parametrize("c", [2.0, 25.0])
def test_sequence_is_the_set_of_rates_the_martingale_does_not_reject(c):
    # on a fine grid of rates: inside the interval <=> M_n(p) < 20, for every count up to 30
    grid = np.linspace(1e-4, 1 - 1e-4, 4001)
    for n in (1, 2, 7, 30):
        s = np.arange(n + 1)
        lo, hi = confidence_sequence_bounds(s.astype(float), np.full(n + 1, float(n)), 0.95, c)
        keep = log_mixture_martingale(grid[None, :], s[:, None], n, c) < CRIT
        inside = (grid[None, :] >= lo[:, None]) & (grid[None, :] <= hi[:, None])
        assert np.array_equal(keep, inside)
        ends = np.concatenate([lo[s > 0], hi[s < n]])
        ss = np.concatenate([s[s > 0], s[s < n]])
        open_end = (ends > 0) & (ends < 1)  # at n = 1, M_1(p) = 1 for every p: the interval is [0, 1]
        assert n > 1 or not open_end.any()
        np.testing.assert_allclose(log_mixture_martingale(ends[open_end], ss[open_end], n, c), CRIT, atol=1e-9)


def test_uniform_prior_at_one_half_is_robbins_closed_form():
    # c = 2, p = 1/2: M_n = 2^n / ((n + 1) C(n, s))
    for s, n in ((0, 5), (3, 10), (20, 50)):
        expected = 2.0**n / ((n + 1) * math.comb(n, s))
        assert float(np.exp(log_mixture_martingale(0.5, s, n, 2.0))) == pytest.approx(expected, rel=1e-12)


def test_tuned_concentration_minimises_the_width_at_the_planned_size():
    m = 400
    c = tuned_concentration(m)

    def width(conc):
        lo, hi = confidence_sequence_bounds(m / 2, float(m), 0.95, conc)
        return float(hi - lo)

    assert width(c) <= min(width(c / 1.5), width(c * 1.5))
    assert 0.08 < c / m < 0.2  # about m / 8


def test_sequence_is_an_interval_down_to_tiny_rates():
    # on a log grid of rates from 1e-12: no rate outside the interval has M_n(p) < 20
    grid = np.concatenate([np.logspace(-12, -0.5, 3000), 1 - np.logspace(-12, -0.5, 3000)])
    n = 1000
    s = np.array([0, 1, 2, 3, 10, 500, 990, 998, 999, 1000])
    for c in (2.0, 150.0):
        lo, hi = confidence_sequence_bounds(s.astype(float), np.full(s.size, float(n)), 0.95, c)
        keep = log_mixture_martingale(grid[None, :], s[:, None], n, c) < CRIT
        inside = (grid[None, :] >= lo[:, None]) & (grid[None, :] <= hi[:, None])
        assert np.array_equal(keep, inside)
