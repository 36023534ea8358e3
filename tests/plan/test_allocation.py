"""Tests for bayeseval.plan.allocation: allocating a budget across strata and the variance
of the weighted risk.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bayeseval import plan
from bayeseval._kernels.allocation import plain_inputs
from bayeseval.plan import allocate, allocation, risk_variance, se_for
from tests.helpers import BIG, FAST, _raises, assert_raises_naming, labelled_counts, shares


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


def _general_allocate(monkeypatch, *args, **kwargs):
    """``plan.allocate`` reading every input with pandas (its path for labelled inputs)."""
    with monkeypatch.context() as m:
        m.setattr(allocation, "plain_inputs", lambda *_: None)
        return allocation.allocate(*args, **kwargs)


def _outcome(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


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


@settings(max_examples=150, deadline=None)
@given(_allocation_problem())
@example((81, np.array([0.5, 0.5]), [0.45642243402227745, 1e-12], [0, 0], [0, 81], "equal_precision"))
def test_allocate_property_sums_and_bounds(problem):
    total, w, rates, mins, caps, method = problem
    n = allocate(total, w, rates, method=method, minimum=mins, capacity=caps)
    assert int(n.sum()) == total
    assert np.all(n.to_numpy() >= np.array(mins))
    assert np.all(n.to_numpy() <= np.array(caps))


def test_a_total_equal_to_the_capacity_fills_it_whatever_the_scores():
    # a rate of 1e-12 gives a score so small that hi / s * s rounds below hi: the fill level
    # must still place every label (the only allocation within the capacity)
    for method in ("proportional", "equal", "optimal", "equal_precision", "compromise"):
        n = allocate(81, [0.5, 0.5], [0.456, 1e-12], method=method, minimum=[0, 0], capacity=[0, 81])
        assert n.tolist() == [0, 81]


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


def test_plain_inputs_allocate_as_the_pandas_reading_does(monkeypatch):
    """Plain dicts and lists (the command line's JSON) give the same Series, or the same error."""
    import pandas as pd

    rng = np.random.default_rng(11)
    plain = 0
    for _ in range(400):
        k = int(rng.integers(1, 7))
        shares = rng.dirichlet(np.ones(k)).tolist()
        if rng.random() < 0.1:
            shares[0] += 0.01  # no longer sums to 1
        rates = rng.uniform(-0.1, 1.1 if rng.random() < 0.3 else 1.0, k).tolist()
        if rng.random() < 0.05:
            rates[-1] = float("nan")
        keys = [f"s{i}" for i in rng.permutation(k)]
        as_dict = rng.random() < 0.6
        weights = dict(zip(keys, shares, strict=True)) if as_dict else shares
        if rng.random() < 0.2:
            rates = None
        elif as_dict and rng.random() < 0.7:
            rates = dict(zip(rng.permutation(keys).tolist(), rates, strict=True))
        minimum = [None, 0, 5, 60, 300, 2.0, 2.5, -1, True][int(rng.integers(0, 9))]
        capacity = [None, None, 100, 1000, 3.5][int(rng.integers(0, 5))]
        method = ["optimal", "proportional", "equal", "equal_precision", "compromise"][int(rng.integers(0, 5))]
        total = int(rng.integers(0, 2000))
        kwargs = {"method": method, "minimum": minimum, "capacity": capacity}
        plain += plain_inputs(weights, rates, minimum, capacity) is not None
        ours = _outcome(plan.allocate, total, weights, rates, **kwargs)
        ref = _outcome(_general_allocate, monkeypatch, total, weights, rates, **kwargs)
        if isinstance(ref, pd.Series):
            assert isinstance(ours, pd.Series), (ours, weights, rates, kwargs)
            pd.testing.assert_series_equal(ours, ref, check_exact=True)
            assert type(ours.index) is type(ref.index)
        else:
            assert ours == ref
    assert plain > 100  # the plain path was taken often enough to be tested


def test_planning_pairs_per_stratum_series_by_label():
    w = pd.Series([0.8, 0.2], index=["a", "b"])
    rates = pd.Series([0.30, 0.05], index=["b", "a"])
    assert allocate(500, w, rates).to_dict() == allocate(500, w, [0.05, 0.30]).to_dict()
    n = pd.Series([114, 286], index=["b", "a"])
    v = risk_variance(w, rates, n)
    assert v == pytest.approx(0.64 * 0.05 * 0.95 / 286 + 0.04 * 0.3 * 0.7 / 114, rel=1e-12)
    _raises(lambda: allocate(500, w, pd.Series([0.1, 0.2], index=["a", "a"])), "rates", "duplicate")
    se = se_for(pd.Series([0.5, 0.1], index=["x", "y"]), pd.Series([400, 100], index=["y", "x"]))
    assert se.to_dict() == pytest.approx({"x": np.sqrt(0.25 / 100), "y": np.sqrt(0.09 / 400)})


def test_planning_missing_per_stratum_values_are_value_errors():
    _raises(lambda: allocate(100, [0.5, 0.5], rates=[0.1, pd.NA]), "rates", "[1]")
    _raises(lambda: risk_variance([0.5, 0.5], [0.1, 0.2], pd.Series([10, pd.NA], dtype=object)), "counts", "[1]")


@given(labelled_counts(), st.sampled_from(["optimal", "proportional", "equal_precision"]))
@FAST
def test_permuted_planning_series_equal_the_aligned_plan(data, method):
    s, n, labels, perm = data
    w = np.arange(1, len(n) + 1, dtype=float)
    w /= w.sum()
    rates = np.clip(s / n, 0.01, 0.99)
    ws = pd.Series(w, index=labels)
    rs = pd.Series(rates, index=labels).iloc[perm]
    ns = pd.Series(n, index=labels).iloc[perm[::-1]]
    got = allocate(1000, ws, rs, method=method)
    assert list(got.index) == labels
    assert got.tolist() == allocate(1000, w, rates, method=method).tolist()
    assert risk_variance(ws, rs, ns) == pytest.approx(float(np.sum(w**2 * rates * (1 - rates) / n)), rel=1e-12)
    se = se_for(rs, ns)
    np.testing.assert_allclose(se.reindex(labels).to_numpy(), np.sqrt(rates * (1 - rates) / n), rtol=1e-12)


def test_planning_counts_beyond_exact_floats_are_refused():
    _raises(lambda: allocate(2**60, [0.3, 0.7]), "total", "2**53")
    _raises(lambda: allocate(100, [0.3, 0.7], capacity=2**53 + 1), "capacity", str(2**53 + 1))
    _raises(lambda: allocate(100, [0.3, 0.7], minimum=[0, 2**62]), "minimum", "2**53")
    from bayeseval.plan import halfwidth_table

    _raises(lambda: halfwidth_table(0.5, [100, 1e20]), "trials", "2**53")
    # at the limit the allocation is exact: the counts sum to the total in integer arithmetic
    got = allocate(2**53, [0.3, 0.7], method="proportional")
    assert sum(int(v) for v in got) == 2**53


@FAST
@given(st.data(), st.integers(0, 10**7), st.sampled_from(["proportional", "equal", "optimal", "equal_precision"]))
def test_allocate_sums_to_total(data, total, method):
    k = data.draw(st.integers(1, 30))
    w = data.draw(shares(k))
    rates = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.01, 0.2]), min_size=k, max_size=k)))
    out = allocate(total, w, rates, method=method)
    assert len(out) == k
    assert int(out.sum()) == total
    assert np.all(out.to_numpy() >= 0)


def test_allocate_ten_thousand_strata():
    rng = np.random.default_rng(2)
    w = rng.random(10_000)
    w /= w.sum()
    out = allocate(10**9, w, rng.random(10_000), method="optimal")
    assert int(out.sum()) == 10**9 and np.all(out.to_numpy() >= 0)


def test_allocate_bad_input_names_argument():
    assert_raises_naming(allocate, "total", -5, [0.5, 0.5])
    assert_raises_naming(allocate, "total", 2.5, [0.5, 0.5])
    assert_raises_naming(allocate, "weights", 100, [0.5, 0.6])
    assert_raises_naming(allocate, "weights", 100, [-0.5, 1.5])
    assert_raises_naming(allocate, "rates", 100, [0.5, 0.5], [0.1, 1.2])
    assert_raises_naming(allocate, "method", 100, [0.5, 0.5], method="bogus")


@FAST
@given(st.data())
def test_risk_variance_finite_and_matches_formula(data):
    k = data.draw(st.integers(1, 30))
    w = data.draw(shares(k))
    r = np.array(data.draw(st.lists(st.floats(0, 1), min_size=k, max_size=k)))
    n = np.array(data.draw(st.lists(st.integers(1, BIG), min_size=k, max_size=k)))
    v = risk_variance(w, r, n)
    # Var = sum pi^2 r (1 - r) / n
    assert math.isfinite(v) and v >= 0
    assert v == pytest.approx(float(np.sum(w**2 * r * (1 - r) / n)), rel=1e-9, abs=1e-300)


def test_risk_variance_bad_input_names_argument():
    assert_raises_naming(risk_variance, "weights", [0.5, 0.6], [0.1, 0.1], [10, 10])
    assert_raises_naming(risk_variance, "rates", [0.5, 0.5], [0.1, 1.1], [10, 10])
    assert_raises_naming(risk_variance, "counts", [0.5, 0.5], [0.1, 0.1], [10, 0])
    assert_raises_naming(risk_variance, "counts", [0.5, 0.5], [0.1, 0.1], [10, float("nan")])
