"""Tests of ``bayeseval._kernels.grid``."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval._kernels.grid import integrate


@pytest.mark.parametrize("preset", ["fast", "accurate"])
def test_integrator_gaussian_moments(preset):
    # correlated Gaussian: mean (1, 2), sd (0.5, 2), correlation 0.6 (closed-form moments)
    cov = np.array([[0.25, 0.6], [0.6, 4.0]])
    prec = np.linalg.inv(cov)

    def log_post(u, v):
        d = np.stack([u - 1.0, v - 2.0])
        return -0.5 * np.einsum("i...,ij,j...->...", d, prec, d)

    g = integrate(log_post, ((-20, 20), (-20, 20)), preset=preset)
    assert g.weights.sum() == pytest.approx(1.0)
    assert g.weights @ g.u == pytest.approx(1.0, abs=2e-3)
    assert g.weights @ g.v == pytest.approx(2.0, abs=1e-2)
    assert g.weights @ (g.u - 1) ** 2 == pytest.approx(0.25, rel=0.02)
    assert g.weights @ ((g.u - 1) * (g.v - 2)) == pytest.approx(0.6, rel=0.02)
    # log evidence of exp(-d'Pd/2) is log(2 pi sqrt(det cov))
    assert g.log_evidence == pytest.approx(np.log(2 * np.pi * np.sqrt(np.linalg.det(cov))), abs=0.02)
