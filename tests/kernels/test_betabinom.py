"""Tests of ``bayeseval._kernels.betabinom``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special, stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval._kernels.betabinom import beta_mixture_predictive, betabinom_log_tails
from bayeseval._kernels.fab import fab_intervals_all_counts, fab_regions
from tests.kernels.helpers import _expected_width, clopper_pearson


def _scipy_log_side(lo, hi, n, a, b):
    """log of the Beta-binomial probability of counts lo..hi-1 (SciPy's pmf, summed in logs)."""
    return special.logsumexp(stats.betabinom.logpmf(np.arange(lo, hi), n, a, b))


@pytest.mark.parametrize("p0", [0.0, 0.03, 0.08, 0.2, 0.5, 0.93, 1.0])
def test_regions_minimise_prior_mass_among_level_alpha_regions(p0):
    n, alpha = 12, 0.05
    weights, a, b = [0.3, 0.7], [1.0, 16.0], [3.0, 4.0]
    prior = 0.3 * stats.betabinom.pmf(np.arange(n + 1), n, 1, 3) + 0.7 * stats.betabinom.pmf(np.arange(n + 1), n, 16, 4)
    binom = stats.binom.pmf(np.arange(n + 1), n, p0)
    best = min(
        prior[lo : hi + 1].sum()
        for lo, hi in itertools.product(range(n + 1), repeat=2)
        if lo <= hi and binom[:lo].sum() + binom[hi + 1 :].sum() <= alpha + 1e-15
    )
    (ra,), (rb,) = fab_regions([p0], n, beta_mixture_predictive(n, weights, a, b), alpha)
    assert binom[:ra].sum() + binom[rb + 1 :].sum() <= alpha + 1e-12
    assert prior[ra : rb + 1].sum() == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("n", [20, 50, 100])
def test_width_when_alike_beats_clopper_pearson_and_wilson(n):
    pmf = beta_mixture_predictive(n, [1.0], [8.0], [92.0])
    iv = fab_intervals_all_counts(n, pmf, 0.95)
    x = np.arange(n + 1)
    cp = clopper_pearson(x, n, 0.95)
    wl = proportion_confint(x, n, alpha=0.05, method="wilson")
    width = _expected_width(iv.lower, iv.upper, n, 0.08)
    assert width <= 0.90 * _expected_width(*cp, n, 0.08)  # measured 0.871, 0.875, 0.872
    assert width <= 0.97 * _expected_width(*wl, n, 0.08)  # measured 0.960, 0.946, 0.932


def test_predictive_pmf_matches_scipy_betabinom():
    n = 40
    pmf = beta_mixture_predictive(n, [0.25, 0.75], [0.5, 30.0], [2.0, 300.0])
    k = np.arange(n + 1)
    expect = 0.25 * stats.betabinom.pmf(k, n, 0.5, 2.0) + 0.75 * stats.betabinom.pmf(k, n, 30.0, 300.0)
    np.testing.assert_allclose(pmf, expect, rtol=1e-9, atol=1e-15)


def test_log_tails_by_quadrature_and_by_sums_match_scipy_at_random():
    # random components (concentration 0.5 to 1e6) and counts (edges, bulk, tails) at 5,000
    # trials: both routes of betabinom_log_tails against SciPy's pmf summed in logs
    from bayeseval._kernels.betabinom import _quadrature_applies, betabinom_log_tails

    rng = np.random.default_rng(5)
    n = 5_000
    mu, kappa = rng.uniform(0.01, 0.99, 120), np.exp(rng.uniform(np.log(0.5), np.log(1e6), 120))
    a, b = mu * kappa, (1 - mu) * kappa
    s = np.clip(
        np.r_[
            rng.integers(0, 60, 40),
            rng.integers(0, n + 1, 40),
            np.round(mu[80:] * n + rng.normal(0, 3, 40) * n / np.sqrt(kappa[80:] + 1)),
        ],
        0,
        n,
    )
    routes = _quadrature_applies(s, np.full(120, float(n)), a, b)
    assert 10 < routes.sum() < 110  # both routes are exercised
    lower, at, upper = betabinom_log_tails(s, n, a, b)
    k = np.arange(n + 1)
    for i in range(120):
        lp = stats.betabinom.logpmf(k, n, a[i], b[i])
        si = int(s[i])
        ref_lo = special.logsumexp(lp[:si]) if si else -np.inf
        ref_hi = special.logsumexp(lp[si + 1 :]) if si < n else -np.inf
        for got, ref in ((lower[i], ref_lo), (upper[i], ref_hi)):
            if np.isinf(ref):
                assert got == ref
            else:  # relative error of the probability below 1e-8
                assert abs(got - ref) < 1e-8, (i, si, a[i], b[i], got, ref)


@pytest.mark.parametrize(
    ("n", "s", "a", "b"),
    [
        (1_000_000, 200_000, 2_000.0, 8_000.0),  # at the mean of a narrow component
        (1_000_000, 190_000, 2_000.0, 8_000.0),  # 2.5 sd below it
        (1_000_000, 302_000, 30_000.0, 70_000.0),  # above the mean
    ],
)
def test_binomial_side_quadrature_matches_scipy_sums(n, s, a, b):
    # a component narrower than the binomial spread at many trials (the pmf sums would be
    # long): the quadrature over the component's rate against SciPy's pmf summed in logs
    from bayeseval._kernels.betabinom import _binomial_quadrature_applies, betabinom_log_tails

    assert _binomial_quadrature_applies(np.array([float(s)]), np.array([float(n)]), np.array([a]), np.array([b]))[0]
    lo, _, hi = betabinom_log_tails(s, n, a, b)
    k = np.arange(n + 1)
    logpmf = stats.betabinom.logpmf(k, n, a, b)
    assert lo == pytest.approx(special.logsumexp(logpmf[:s]), rel=1e-5, abs=1e-9)
    assert hi == pytest.approx(special.logsumexp(logpmf[s + 1 :]), rel=1e-5, abs=1e-9)


@pytest.mark.parametrize(
    ("n", "s", "a", "b"),
    [
        (10**5, 10_000, 2e3, 8e3),  # far in the lower tail: P(Y < s) ~ exp(-85)
        (10**5, 22_000, 20.0, 80.0),  # in the bulk of a broad component (quadrature)
        (10**5, 2_000, 20.0, 80.0),  # in the tail of a broad component: P(Y < s) ~ exp(-32)
        (10**6, 150_000, 0.5, 1.5),  # a U-shaped component (quadrature)
        (10**6, 40, 3.0, 50.0),  # near the lower edge (summed)
        (10**6, 100_000, 2e4, 8e4),  # P(Y < s) ~ exp(-3950): below the smallest double
        (10**6, 3, 0.3, 0.6),  # U-shaped component, count at the edge
        # ten million trials (SciPy's reference pmf takes seconds there)
        pytest.param(10**7, 1_500_000, 2e3, 8e3, marks=pytest.mark.slow),  # exp(-94)
        pytest.param(10**7, 9_999_990, 3.0, 0.2, marks=pytest.mark.slow),  # upper edge
    ],
)
def test_log_tails_match_scipy_betabinom_at_large_trials(n, s, a, b):
    lower, at, upper = betabinom_log_tails(s, n, a, b)
    assert at == pytest.approx(stats.betabinom.logpmf(s, n, a, b), abs=1e-7)
    # the far side summed from SciPy's pmf; the other side from SciPy's pmf as well
    ref_lower = _scipy_log_side(0, s, n, a, b)
    ref_upper = _scipy_log_side(s + 1, n + 1, n, a, b)
    # relative 1e-6 on the probabilities (SciPy's log pmf itself is good to ~1e-8 at 1e7)
    assert lower == pytest.approx(ref_lower, abs=1e-6)
    assert upper == pytest.approx(ref_upper, abs=1e-6)


def test_mixture_pmfs_of_rows_sharing_components_match_scipy():
    # rows that share some Beta components (computed once) and not others, with padding;
    # each row against SciPy's Beta-binomial pmfs summed with the row's weights
    from bayeseval._kernels.betabinom import mixture_pmfs

    n = 300
    kw = np.array([[0.5, 0.3, 0.2], [0.6, 0.4, 0.0], [1.0, 0.0, 0.0]])
    ka = np.array([[2.0, 40.0, 0.5], [2.0, 7.0, 1.0], [40.0, 1.0, 1.0]])
    kb = np.array([[18.0, 60.0, 0.5], [18.0, 3.0, 1.0], [60.0, 1.0, 1.0]])
    live = kw > 0
    got = mixture_pmfs(n, kw, ka, kb, live)
    x = np.arange(n + 1)
    for r in range(3):
        ref = sum(kw[r, c] * stats.betabinom.pmf(x, n, ka[r, c], kb[r, c]) for c in np.flatnonzero(live[r]))
        np.testing.assert_allclose(got[r], ref, rtol=1e-9, atol=1e-300)
