"""Tests of ``bayeseval._kernels.sizing``."""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayeseval._kernels.sizing import normal_quantile


def test_normal_quantile_agrees_with_scipy():
    levels = np.concatenate([np.linspace(0.5, 0.999999, 2001), [0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-12]])
    ours = np.array([normal_quantile(float(lv)) for lv in levels])
    ref = stats.norm.ppf(0.5 + levels / 2)
    np.testing.assert_allclose(ours, ref, rtol=2e-15, atol=0)
