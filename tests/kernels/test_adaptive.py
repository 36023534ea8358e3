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
