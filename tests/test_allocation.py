"""Tests for bayeseval.plan.allocation: allocating a budget across strata and the variance
of the weighted risk."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayeseval.plan import (
    allocate,
    risk_variance,
)


def test_risk_variance_figure():
    # pi = (0.8, 0.2), n = (286, 114), r = (0.09, 0.2275)
    pi, r, n = [0.8, 0.2], [0.09, 0.2275], [286, 114]
    assert round(float(np.dot(pi, r)), 4) == 0.1175
    v = risk_variance(pi, r, n)
    # closed form: 0.64*0.09*0.91/286 + 0.04*0.2275*0.7725/114 = 0.00024494;
    # the worked example prints 0.0002450 (3 significant digits, 0.000245)
    assert v == pytest.approx(0.64 * 0.09 * 0.91 / 286 + 0.04 * 0.2275 * 0.7725 / 114, rel=1e-12)
    assert round(v, 6) == 0.000245
    assert round(math.sqrt(v), 4) == 0.0157
    # labels: dict weights align the other arguments by stratum
    v2 = risk_variance({"a": 0.8, "b": 0.2}, {"b": 0.2275, "a": 0.09}, {"a": 286, "b": 114})
    assert v2 == pytest.approx(v, rel=1e-12)


# ---------------------------------------------------------------------------



# ---------------------------------------------------------------------------
# allocate
# ---------------------------------------------------------------------------


def test_allocate_optimal_figure():
    pi, r = [0.8, 0.2], [0.05, 0.30]
    n = allocate(500, pi, r)
    assert n.tolist() == [328, 172]
    v = risk_variance(pi, r, n)
    assert round(v, 8) == 0.00014152
    assert round(math.sqrt(v), 5) == 0.01190
    # minimum variance (sum pi sqrt(v))^2 / n at the real-valued optimum
    s = sum(p * math.sqrt(x * (1 - x)) for p, x in zip(pi, r, strict=True))
    assert round(s**2 / 500, 8) == 0.00014152
    prop = allocate(500, pi, r, method="proportional")
    assert prop.tolist() == [400, 100]
    vp = risk_variance(pi, r, prop)
    assert round(vp, 6) == 0.000160 and round(math.sqrt(vp), 5) == 0.01265


def test_allocate_methods_and_labels():
    w = pd.Series({"x": 0.5, "y": 0.3, "z": 0.2})
    r = {"x": 0.05, "y": 0.3, "z": 0.1}
    eq = allocate(99, w, r, method="equal")
    assert eq.to_dict() == {"x": 33, "y": 33, "z": 33}
    ep = allocate(10_000, w, r, method="equal_precision")
    v = np.array([0.05 * 0.95, 0.3 * 0.7, 0.1 * 0.9])
    # equal precision: v_k / n_k equal across strata
    ratio = v / ep.to_numpy()
    assert ratio.max() / ratio.min() < 1.001
    assert list(ep.index) == ["x", "y", "z"] and ep.dtype == np.int64


def test_allocate_minimum_and_capacity():
    pi, r = [0.8, 0.2], [0.05, 0.30]
    n = allocate(500, pi, r, minimum=200)
    assert n.tolist() == [300, 200]
    n = allocate(500, pi, r, capacity=[1000, 150])
    assert n.tolist() == [350, 150]
    # compromise: minimums first, then the remaining 300 optimally (65.5% / 34.5%)
    n = allocate(500, pi, r, minimum=100, method="compromise")
    share = 0.8 * math.sqrt(0.0475) / (0.8 * math.sqrt(0.0475) + 0.2 * math.sqrt(0.21))
    assert n.tolist() == [100 + round(300 * share), 100 + 300 - round(300 * share)]
    # the constrained optimum has lower variance than the compromise
    assert risk_variance(pi, r, allocate(500, pi, r, minimum=100)) <= risk_variance(pi, r, n)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(minimum=300), "minimum"),
        (dict(capacity=200), "capacity"),
        (dict(minimum=[10, 50], capacity=[100, 40]), "minimum exceeds capacity"),
        (dict(method="compromise"), "minimum"),
        (dict(method="neyman"), "method"),
    ],
)
def test_allocate_infeasible(kwargs, match):
    with pytest.raises(ValueError, match=match):
        allocate(500, [0.8, 0.2], [0.05, 0.30], **kwargs)


def test_allocate_bad_weights():
    with pytest.raises(ValueError, match="weights"):
        allocate(100, [0.5, 0.4])
    with pytest.raises(ValueError, match="weights"):
        allocate(100, [1.2, -0.2])
    with pytest.raises(ValueError, match="rates"):
        allocate(100, [0.5, 0.5], [0.2, 1.3])
    with pytest.raises(ValueError, match="total"):
        allocate(-1, [0.5, 0.5])


@st.composite
def _allocation_problem(draw):
    k = draw(st.integers(1, 6))
    raw = draw(st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k))
    w = np.array(raw) / sum(raw)
    w[-1] = 1.0 - w[:-1].sum()
    rates = draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k))
    mins = draw(st.lists(st.integers(0, 50), min_size=k, max_size=k))
    caps = [m + draw(st.integers(0, 400)) for m in mins]
    total = draw(st.integers(sum(mins), sum(caps)))
    method = draw(st.sampled_from(["proportional", "equal", "optimal", "equal_precision", "compromise"]))
    return total, w, rates, mins, caps, method


@settings(max_examples=150, deadline=None)
@given(_allocation_problem())
def test_allocate_property_sums_and_bounds(problem):
    total, w, rates, mins, caps, method = problem
    n = allocate(total, w, rates, method=method, minimum=mins, capacity=caps)
    assert int(n.sum()) == total
    assert np.all(n.to_numpy() >= np.array(mins))
    assert np.all(n.to_numpy() <= np.array(caps))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.floats(0.01, 0.99), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_allocate_optimal_beats_proportional(total, p, r1, r2):
    w = [p, 1 - p]
    n_opt = allocate(total, w, [r1, r2])
    assert int(n_opt.sum()) == total
    if total >= 100 and min(n_opt) > 0:
        n_prop = allocate(total, w, [r1, r2], method="proportional")
        if min(n_prop) > 0:
            # integer rounding costs at most a little; the optimum is never clearly worse
            assert risk_variance(w, [r1, r2], n_opt) <= risk_variance(w, [r1, r2], n_prop) * 1.02 + 1e-15


# ---------------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=2, max_size=5).filter(lambda w: abs(sum(w) - 1) > 1e-6),
)
def test_weights_not_summing_to_one(w):
    with pytest.raises(ValueError, match="weights"):
        allocate(100, w)
    with pytest.raises(ValueError, match="weights"):
        risk_variance(w, [0.1] * len(w), [10] * len(w))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(0, 1000))
def test_infeasible_minimums(k, total):
    minimum = total // k + 1
    with pytest.raises(ValueError, match="minimum"):
        allocate(total, [1 / k] * k, minimum=minimum)



@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["rates", "counts"]),
    st.sampled_from([-1.0, float("nan"), float("inf"), 0.0, 2.0]),
)
def test_risk_variance_bad_values(which, bad):
    args = {"rates": [0.1, 0.2], "counts": [10, 20]}
    if which == "rates" and bad == 0.0:
        bad = -0.5  # a rate of 0 is valid
    if which == "counts" and bad == 2.0:
        bad = -2.0  # a count of 2 is valid
    args[which] = [bad, args[which][1]]
    with pytest.raises((ValueError, TypeError), match=which):
        risk_variance([0.5, 0.5], args["rates"], args["counts"])




def test_bools_where_counts_or_shares_are_wanted_are_type_errors_naming_the_argument():
    with pytest.raises(TypeError, match=r"^total must be an integer >= 0, got True"):
        allocate(True, [0.5, 0.5])
    with pytest.raises(TypeError, match=r"^weights must be numbers, not bools"):
        allocate(100, [True, False])
