"""Tests of ``bayeseval._kernels.adaptive``."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval._kernels.adaptive import adaptive_interval


def test_adaptive_interval_shapes_and_empty_strata():
    s = np.array([[4, 0], [9, 3]])
    n = np.array([[50, 0], [20, 40]])
    lo, hi = adaptive_interval(s, n, level=0.9)
    assert lo.shape == (2, 2) and hi.shape == (2, 2)
    assert (lo[0, 1], hi[0, 1]) == (0.0, 1.0)
    assert np.all(lo <= s / np.maximum(n, 1)) and np.all(s / np.maximum(n, 1) <= hi)


def test_adaptive_interval_validation():
    with pytest.raises(ValueError, match=r"level .*0\.0"):
        adaptive_interval([1, 2], [5, 5], level=0.0)
    with pytest.raises(ValueError, match=r"successes must not exceed trials.*7"):
        adaptive_interval([7, 2], [5, 5])


def test_split_of_many_trials_is_optimised_for_the_capped_grid_value_and_stays_exact():
    # 5,000 trials: the split is optimised for 1,919 trials (SciPy's Beta-binomial pmf of
    # the leave-one-out prior, with the uniform component), the tests inverted at 5,000
    from scipy import stats

    from bayeseval._kernels.fab import DIFFUSE_WEIGHT, _invert, fab_split, split_trials
    from bayeseval._kernels.loo_prior import loo_beta_mixture

    n = 5_000
    trials = np.full(6, n)
    s = np.array([402, 395, 425, 414, 400, 410])
    lo, hi = adaptive_interval(s, trials)
    m = int(split_trials(n))
    assert m == 1919
    w, a, b = loo_beta_mixture(s, trials)
    x = np.arange(m + 1)
    for i in (0,):
        keep = w[i] > 1e-12
        pmf = w[i][keep] @ stats.betabinom.pmf(x[None, :], m, a[i][keep][:, None], b[i][keep][:, None])
        pmf = (1.0 - DIFFUSE_WEIGHT) * pmf / pmf.sum() + DIFFUSE_WEIGHT / (m + 1.0)
        table = fab_split(m, pmf, 0.05)
        ref_lo, ref_hi = _invert(np.array([s[i]]), np.array([n]), table[None, :], 0.05)
        assert (lo[i], hi[i]) == pytest.approx((ref_lo[0], ref_hi[0]), abs=1e-7)
        # every count's interval with this split: exact coverage at a few rates, by the
        # binomial CDF over the run of counts whose interval holds the rate
        k = np.arange(n + 1)
        every_lo, every_hi = _invert(k, np.full(n + 1, n), np.tile(table, (n + 1, 1)), 0.05)
        assert np.all(np.diff(every_lo) >= 0) and np.all(np.diff(every_hi) >= 0)
        for p in (0.079, 0.08, 0.0815, 0.3):
            k2 = np.searchsorted(every_lo, p, side="right") - 1
            k1 = np.searchsorted(every_hi, p, side="left")
            assert stats.binom.cdf(k2, n, p) - stats.binom.cdf(k1 - 1, n, p) >= 0.95 - 1e-9
