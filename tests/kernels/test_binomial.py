"""Tests of ``bayeseval._kernels.binomial``."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval._kernels.binomial import binomial_bounds, normalise_method


@pytest.mark.parametrize(
    ("method", "sm_method"),
    [
        ("wilson", "wilson"),
        ("jeffreys", "jeffreys"),
        ("clopper_pearson", "beta"),
        ("agresti_coull", "agresti_coull"),
        ("wald", "normal"),
    ],
)
def test_binomial_bounds_match_statsmodels(method, sm_method):
    from statsmodels.stats.proportion import proportion_confint

    # interior counts: at s = n the Jeffreys upper bound is set to 1 (Brown, Cai and
    # DasGupta 2001), which statsmodels does not do
    s = np.array([1, 7, 19, 39])
    n = np.array([10, 10, 60, 40])
    lo, hi = binomial_bounds(s, n, 0.1, method)
    ref_lo, ref_hi = proportion_confint(s, n, alpha=0.1, method=sm_method)
    np.testing.assert_allclose(lo, np.clip(ref_lo, 0, 1), atol=1e-10)
    np.testing.assert_allclose(hi, np.clip(ref_hi, 0, 1), atol=1e-10)


def test_normalise_method_names_the_value():
    assert normalise_method("Clopper-Pearson") == "clopper_pearson"
    with pytest.raises(ValueError, match="method.*'bogus'"):
        normalise_method("bogus")
