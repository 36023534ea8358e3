"""Deprecation shims for renamed keywords and functions."""

from __future__ import annotations

import inspect
import warnings

import pytest

from bayeseval import BayesevalWarning
from bayeseval._core.deprecation import deprecated_alias, renamed_kwargs
from bayeseval._warnings import BayesevalDeprecationWarning


@renamed_kwargs(population_shares="weights", n_bootstrap="n_resamples")
def _weighted(values, *, weights=None, n_resamples=10):
    """Stand-in for a renamed public function."""
    return values, weights, n_resamples


def test_old_name_warns_and_is_passed_under_the_new_name():
    with pytest.warns(BayesevalDeprecationWarning, match="'population_shares' is renamed 'weights'"):
        assert _weighted(1, population_shares=[0.5, 0.5]) == (1, [0.5, 0.5], 10)


def test_new_name_is_silent_and_the_signature_shows_only_new_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _weighted(1, weights=[1.0], n_resamples=3) == (1, [1.0], 3)
    assert list(inspect.signature(_weighted).parameters) == ["values", "weights", "n_resamples"]


def test_both_names_is_a_type_error_naming_both():
    with pytest.raises(TypeError, match="'n_bootstrap'.*'n_resamples'"):
        _weighted(1, n_bootstrap=5, n_resamples=3)


def test_deprecation_warnings_are_visible_by_default_and_part_of_the_family():
    assert issubclass(BayesevalDeprecationWarning, FutureWarning)
    assert issubclass(BayesevalDeprecationWarning, BayesevalWarning)


def test_deprecated_alias_warns_and_calls_through():
    old = deprecated_alias(_weighted, "weighted_old")
    with pytest.warns(BayesevalDeprecationWarning, match=r"weighted_old\(\) is renamed _weighted\(\)"):
        assert old(2, weights=None) == (2, None, 10)
    assert old.__name__ == "weighted_old"
