"""Tests of ``bayeseval._kernels.crossed``."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval._kernels.crossed import zero_sum_basis


@pytest.mark.parametrize("n_levels", [2, 3, 6])
def test_zero_sum_basis_is_orthonormal_and_sums_to_zero(n_levels):
    q = zero_sum_basis(n_levels)
    assert q.shape == (n_levels, n_levels - 1)
    np.testing.assert_allclose(q.T @ q, np.eye(n_levels - 1), atol=1e-12)
    np.testing.assert_allclose(q.sum(axis=0), 0.0, atol=1e-12)
    # Q Q' is the covariance of pymc.ZeroSumNormal(sigma=1): I - J / L
    np.testing.assert_allclose(q @ q.T, np.eye(n_levels) - 1.0 / n_levels, atol=1e-12)
