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


def test_log_weights_stay_finite_where_the_weights_underflow():
    # a Gaussian with correlation 0.9999: the box holds the marginals, and its corners lie
    # some 10^5 nats below the top, where the masses are 0 as doubles; the log masses are
    # log_post minus the log of the normaliser (trapezoid weights: half on the edges)
    rho = 0.9999
    g = integrate(lambda u, v: -0.5 * (u**2 - 2 * rho * u * v + v**2) / (1 - rho**2), ((-20, 20), (-20, 20)))
    w, lw = g.weights, g.log_weights
    assert np.all(np.isfinite(lw)) and np.any(w == 0.0)
    np.testing.assert_allclose(np.exp(lw[w > 1e-300]), w[w > 1e-300], rtol=1e-9)
    m = np.array(g.shape)
    half = np.zeros(m)
    half[0, :] += np.log(0.5)
    half[-1, :] += np.log(0.5)
    half[:, 0] += np.log(0.5)
    half[:, -1] += np.log(0.5)
    lp = g.log_post + half.ravel()
    np.testing.assert_allclose(lw, lp - np.logaddexp.reduce(lp), atol=1e-9)
    # open edges: every edge of this grid lies inside the bounds
    edge = np.zeros(m, bool)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = True
    np.testing.assert_array_equal(g.open_edge, edge.ravel())
    # an edge on a bound is not open: the posterior of v is cut at the bound 0
    g = integrate(lambda u, v: -0.5 * u**2 - 0.5 * (v - 0.5) ** 2, ((-20, 20), (0, 20)))
    inner = (g.u > g.u.min()) & (g.u < g.u.max())
    assert g.v.min() == 0.0 and not g.open_edge[inner & (g.v == 0.0)].any()
    assert g.open_edge[g.v == g.v.max()].all() and not g.open_edge[inner & (g.v > 0) & (g.v < g.v.max())].any()
