"""Tests of ``bayeseval._kernels.allocation``."""

from __future__ import annotations

import numpy as np
from scipy import optimize

from bayeseval._kernels.allocation import _water_fill


def _brentq_allocation(total, scores, lo, hi):
    """Reference: the multiplier of n_k = clip(lam s_k, lo_k, hi_k) found by SciPy's brentq."""
    scores = scores / scores.max()

    def g(lam):
        return np.clip(lam * scores, lo, hi).sum() - total

    upper = 1.0
    while g(upper) < 0:
        upper *= 2
    lam = optimize.brentq(g, 0.0, upper, xtol=1e-14, rtol=1e-15, maxiter=500)
    return np.clip(lam * scores, lo, hi)


def test_bounded_allocation_matches_a_brentq_solution():
    rng = np.random.default_rng(3)
    for _ in range(200):
        k = int(rng.integers(2, 40))
        scores = rng.gamma(0.5, 1.0, k) + 1e-9
        lo = rng.integers(0, 30, k).astype(float)
        hi = lo + rng.integers(0, 400, k)
        hi[rng.random(k) < 0.3] = np.inf
        total = float(rng.uniform(lo.sum() + 1, min(hi.sum(), lo.sum() + 5000)))
        ours = _water_fill(total, scores, lo, hi)
        ref = _brentq_allocation(total, scores, lo, hi)
        assert abs(ours.sum() - total) <= 1e-9 * total
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-7)
