"""Tests of the priors on (mu, kappa) (bayeseval.models.priors)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from bayeseval.models.priors import Prior, resolve_prior


def _grid(u_range=(-15, 15), v_range=(-15, 25), m=700):
    u = np.linspace(*u_range, m)
    v = np.linspace(*v_range, m)
    return np.meshgrid(u, v, indexing="ij"), (u[1] - u[0]) * (v[1] - v[0])


@pytest.mark.parametrize(
    "prior",
    [
        "default",
        {"mu": stats.beta(2, 8), "kappa": stats.lognorm(1.0, scale=50.0)},
        {"kappa": stats.gamma(2.0, scale=10.0)},
    ],
)
def test_proper_log_density_integrates_to_one(prior):
    # the Jacobian of (u, v) = (logit mu, log kappa) is included: the density integrates to 1
    (U, V), cell = _grid()
    p = resolve_prior(prior)
    total = np.exp(p.log_density(U, V)).sum() * cell
    assert total == pytest.approx(1.0, abs=1e-4)


def test_default_prior_is_beta11_and_lognormal_and_fast_path_matches_scipy():
    p = resolve_prior("default")
    assert p.name == "default" and not p.improper
    assert p.mu.mean() == pytest.approx(0.5)
    assert p.kappa.median() == pytest.approx(20.0)
    # log kappa ~ Normal(log 20, 2.5): check via scipy on kappa
    q = stats.lognorm(2.5, scale=20.0)
    assert p.kappa.ppf(0.975) == pytest.approx(q.ppf(0.975))
    custom = resolve_prior({"mu": stats.beta(1, 1), "kappa": stats.lognorm(2.5, scale=20.0)})
    u = np.linspace(-6, 6, 13)
    v = np.linspace(-5, 13, 13)
    np.testing.assert_allclose(p.log_density(u, v), custom.log_density(u, v), atol=1e-12)


def test_bda_density_in_transformed_coordinates():
    # BDA3 section 5.3: p(alpha, beta) ∝ (alpha + beta)^(-5/2); in (logit mu, log kappa) the
    # density is alpha * beta * (alpha + beta)^(-5/2) (BDA3 eq. for the transformed prior),
    # i.e. mu (1 - mu) kappa^(-1/2). Check the difference is constant across points.
    p = resolve_prior("bda")
    assert p.improper and p.mu is None and p.kappa is None
    rng = np.random.default_rng(0)
    u = rng.uniform(-5, 5, 50)
    v = rng.uniform(-3, 12, 50)
    mu, kappa = expit(u), np.exp(v)
    alpha, beta = mu * kappa, (1 - mu) * kappa
    ref = np.log(alpha * beta * (alpha + beta) ** -2.5)
    diff = p.log_density(u, v) - ref
    assert np.ptp(diff) < 1e-10
    # and the Jacobian chain explicitly: p(alpha,beta) * |d(alpha,beta)/d(u,v)|
    # d(alpha, beta)/d(u, v) by finite differences
    h = 1e-6
    da_du = (expit(u + h) - expit(u - h)) / (2 * h) * kappa
    da_dv = mu * kappa
    db_du = -da_du
    db_dv = (1 - mu) * kappa
    jac = np.abs(da_du * db_dv - da_dv * db_du)
    ref2 = -2.5 * np.log(alpha + beta) + np.log(jac)
    assert np.ptp(p.log_density(u, v) - ref2) < 1e-6
    with pytest.raises(ValueError, match="improper"):
        p.sample(10)


def test_resolve_prior_errors_name_the_argument():
    with pytest.raises(ValueError, match="unknown prior 'flat'"):
        resolve_prior("flat")
    with pytest.raises(ValueError, match="keys"):
        resolve_prior({"sigma": stats.norm()})
    with pytest.raises(TypeError, match=r"prior\['mu'\]"):
        resolve_prior({"mu": 0.5})
    with pytest.raises(ValueError, match=r"prior\['mu'\]"):
        resolve_prior({"mu": stats.norm(0, 1)})  # support outside (0, 1)
    with pytest.raises(TypeError, match="prior must be"):
        resolve_prior(3)
    p = resolve_prior("bda")
    assert resolve_prior(p) is p
    assert isinstance(resolve_prior(None), Prior)


def test_custom_prior_sampling_is_seeded():
    p = resolve_prior({"mu": stats.beta(2, 8)})
    a = p.sample(100, random_seed=3)
    b = p.sample(100, random_seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert abs(a[0].mean() - 0.2) < 0.05
