"""Tests for bayeseval.plan.gaps: detectable gaps between two groups."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bayeseval.plan import detectable_gap
from tests.helpers import FAST, assert_raises_naming


@pytest.mark.parametrize("pa, pb", [(0.663, 0.709), (0.1, 0.15), (0.5, 0.4), (0.02, 0.05)])
def test_detectable_gap_matches_statsmodels(pa, pb):
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import (
        proportion_effectsize,
        samplesize_proportions_2indep_onetail,
    )

    # pooled-under-null z-test (statsmodels: explicit one-tail sample size)
    ref = samplesize_proportions_2indep_onetail(pb - pa, pa, 0.8, alpha=0.05)
    assert detectable_gap(rate_a=pa, rate_b=pb).n_per_group == math.ceil(ref - 1e-9)
    # Cohen's h (statsmodels NormalIndPower with proportion_effectsize)
    h = proportion_effectsize(pb, pa)
    ref_h = NormalIndPower().solve_power(effect_size=h, alpha=0.05, power=0.8, ratio=1.0)
    got = detectable_gap(rate_a=pa, rate_b=pb, method="arcsine").n_per_group
    # NormalIndPower includes the negligible far tail; allow a difference of one row
    assert abs(got - math.ceil(ref_h)) <= 1


def test_detectable_gap_round_trip():
    plan = detectable_gap(rate_a=0.3, gap=0.05, power=0.9, level=0.99)
    n = plan.n_per_group
    back = detectable_gap(rate_a=0.3, n_per_group=n, power=0.9, level=0.99)
    assert 0 < back.gap <= 0.05 + 1e-12
    assert detectable_gap(rate_a=0.3, n_per_group=n - 1, power=0.9, level=0.99).gap > 0.05
    # power at the solved gap (statsmodels) equals the requested power
    from statsmodels.stats.proportion import power_proportions_2indep

    res = power_proportions_2indep(-back.gap, back.rate_b, n, alpha=0.01, return_results=False)
    assert res == pytest.approx(0.9, abs=2e-3)
    down = detectable_gap(rate_a=0.3, n_per_group=n, power=0.9, level=0.99, direction="down")
    assert down.gap < 0


def test_detectable_gap_bad_input():
    with pytest.raises(ValueError, match="exactly one"):
        detectable_gap(rate_a=0.3)
    with pytest.raises(ValueError, match="exactly one"):
        detectable_gap(rate_a=0.3, rate_b=0.4, n_per_group=100)
    with pytest.raises(ValueError, match="rate_b"):
        detectable_gap(rate_a=0.3, rate_b=0.3)
    with pytest.raises(ValueError, match="gap"):
        detectable_gap(rate_a=0.9, gap=0.2)
    with pytest.raises(ValueError, match="power"):
        detectable_gap(rate_a=0.3, rate_b=0.4, power=1.0)
    with pytest.raises(ValueError, match="too small"):
        detectable_gap(rate_a=0.3, n_per_group=2)


@FAST
@given(st.floats(0.001, 0.999), st.floats(0.001, 0.999), st.sampled_from(["pooled", "arcsine"]))
def test_detectable_gap_positive_trials(ra, rb, method):
    assume(abs(ra - rb) > 1e-3)
    plan = detectable_gap(rate_a=ra, rate_b=rb, method=method)
    n = plan.n_per_group
    assert math.isfinite(n) and n >= 1


def test_detectable_gap_bad_input_names_argument():
    assert_raises_naming(detectable_gap, "rate_a", rate_a=1.5, rate_b=0.2)
    assert_raises_naming(detectable_gap, "rate_b", rate_a=0.1, rate_b=-0.2)
    assert_raises_naming(detectable_gap, "power", rate_a=0.1, rate_b=0.2, power=1.0)
    assert_raises_naming(detectable_gap, "level", rate_a=0.1, rate_b=0.2, level=0.0)
    assert_raises_naming(detectable_gap, "method", rate_a=0.1, rate_b=0.2, method="bogus")
