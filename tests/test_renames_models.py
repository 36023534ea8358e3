"""Renamed keywords of the model modules: old names warn and give identical results."""

import numpy as np
import pytest

from bayeseval._warnings import BayesevalDeprecationWarning
from bayeseval.counts import Counts
from bayeseval.models.exact import ExactFit
from bayeseval.models.priors import prior_predictive_spread, resolve_prior


@pytest.fixture(scope="module")
def fit():
    return ExactFit(Counts.from_arrays([2, 5, 9], [40, 50, 60]))


def test_sample_hyper_rng_alias_warns_and_matches_random_seed(fit):
    new = fit.sample_hyper(50, random_seed=np.random.default_rng(4))
    with pytest.warns(BayesevalDeprecationWarning, match="'rng' is renamed 'random_seed'"):
        old = fit.sample_hyper(50, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(new[0], old[0])
    np.testing.assert_array_equal(new[1], old[1])


def test_sample_theta_seed_reproduces_numpy_beta_draws(fit):
    u, v = fit.sample_hyper(20, random_seed=1)
    with pytest.warns(BayesevalDeprecationWarning, match="sample_theta"):
        old = fit.sample_theta(u, v, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(fit.sample_theta(u, v, random_seed=2), old)


def test_random_seed_positional_is_type_error(fit):
    with pytest.raises(TypeError):
        fit.sample_hyper(5, 0)
    with pytest.raises(TypeError):
        resolve_prior("default").sample(5, 0)


def test_both_old_and_new_names_is_type_error_naming_both(fit):
    with pytest.raises(TypeError, match="'rng'.*'random_seed'"):
        fit.sample_hyper(5, rng=np.random.default_rng(0), random_seed=0)


def test_prior_predictive_spread_n_draws_alias():
    new = prior_predictive_spread(draws=500, random_seed=0)
    with pytest.warns(BayesevalDeprecationWarning, match="'n_draws' is renamed 'draws'"):
        old = prior_predictive_spread(n_draws=500, random_seed=0)
    assert len(new["sd"]) == 500
    np.testing.assert_array_equal(new["sd"], old["sd"])
    # the sd is sqrt(mu (1 - mu) / (kappa + 1)) of the prior draws with the same seed
    mu, kappa = resolve_prior("default").sample(500, random_seed=0)
    np.testing.assert_allclose(new["sd"], np.sqrt(mu * (1 - mu) / (kappa + 1)))
