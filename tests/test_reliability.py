"""Reliability: property-based tests (hypothesis) over the public functions taking counts,
weights, levels or frames.

Two properties, for every function:

* bad input (negative, fractional, NaN or infinite counts, successes > trials, levels
  outside (0, 1), weights that are negative or do not sum to 1, unknown methods, missing
  columns) raises ValueError or TypeError whose message names the offending argument;
* valid extreme input (0 and n successes, n = 1, 10,000 strata, counts up to 10^9) gives
  finite results, intervals ordered and inside [0, 1].
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bayeseval import (
    BayesevalWarning,
    Counts,
    allocate,
    fit_hierarchical,
    mcnemar,
    proportion_ci,
    proportion_se,
    sample_size,
    stratified_risk,
    tabulate,
)
from bayeseval.plan import detectable_gap, risk_variance, split_decision
from bayeseval.report.gates import gate

METHODS = ("wald", "wilson", "agresti_coull", "clopper_pearson", "jeffreys")
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOWER = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BIG = 10**9


def quiet():
    """Silence the package's own warnings (ZeroVariance, EmptyStratum...) inside a property."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore", BayesevalWarning)
    return ctx


def assert_raises_naming(fn, name: str, *args, **kwargs) -> None:
    """``fn(*args, **kwargs)`` raises ValueError/TypeError and the message names ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        with pytest.raises((ValueError, TypeError)) as info:
            fn(*args, **kwargs)
    assert re.search(re.escape(name), str(info.value)), (
        f"error message does not name {name!r}: {info.value!s}"
    )


# -- strategies -----------------------------------------------------------------------------
@st.composite
def count_pair(draw, max_n: int = BIG):
    n = draw(st.one_of(st.just(1), st.just(max_n), st.integers(1, max_n)))
    s = draw(st.one_of(st.just(0), st.just(n), st.integers(0, n)))
    return s, n


@st.composite
def count_arrays(draw, max_k: int = 30, max_n: int = BIG, min_n: int = 1):
    k = draw(st.integers(1, max_k))
    n = np.array(draw(st.lists(st.integers(min_n, max_n), min_size=k, max_size=k)), dtype=np.int64)
    frac = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.01, 0.99, 0.3]),
                                  min_size=k, max_size=k)))
    s = np.floor(frac * n).astype(np.int64)
    return s, n


@st.composite
def shares(draw, k: int):
    raw = np.array(draw(st.lists(st.floats(0.001, 1.0), min_size=k, max_size=k)))
    return raw / raw.sum()


levels = st.floats(0.5, 0.999)
bad_levels = st.sampled_from([0.0, 1.0, -0.5, 1.5, 95, float("nan"), float("inf"), "0.95", None, True])
bad_counts = st.sampled_from([-1, 2.5, float("nan"), float("inf"), "ten", None])


# -- proportion_ci / proportion_se ----------------------------------------------------------
@FAST
@given(count_pair(), levels, st.sampled_from(METHODS))
def test_proportion_ci_extremes_finite_ordered_in_unit_interval(pair, level, method):
    s, n = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        lo, hi = proportion_ci(s, n, level=level, method=method)
    assert math.isfinite(lo) and math.isfinite(hi)
    assert 0.0 <= lo <= hi <= 1.0
    # every method's interval contains the observed rate (up to rounding)
    assert lo - 1e-12 <= s / n <= hi + 1e-12


@FAST
@given(count_arrays(max_k=50), levels, st.sampled_from(METHODS))
def test_proportion_ci_arrays_and_series_keep_shape_and_order(arrays, level, method):
    s, n = arrays
    idx = pd.Index([f"g{i}" for i in range(len(s))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        lo, hi = proportion_ci(pd.Series(s, index=idx), pd.Series(n, index=idx), level=level, method=method)
    assert lo.index.equals(idx) and hi.index.equals(idx)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all((0 <= lo) & (lo <= hi) & (hi <= 1))


def test_proportion_ci_ten_thousand_strata_with_huge_counts():
    rng = np.random.default_rng(0)
    n = rng.integers(1, BIG, 10_000)
    s = np.floor(rng.choice([0.0, 1.0, 0.5, 1e-9], 10_000) * n).astype(np.int64)
    for method in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BayesevalWarning)
            lo, hi = proportion_ci(s, n, method=method)
        assert lo.shape == (10_000,)
        assert np.all(np.isfinite(lo) & np.isfinite(hi))
        assert np.all((0 <= lo) & (lo <= hi) & (hi <= 1)), method


@FAST
@given(bad_counts, st.sampled_from(["successes", "trials"]))
def test_proportion_ci_bad_counts_name_the_argument(bad, which):
    args = {"successes": 3, "trials": 10}
    args[which] = bad
    assert_raises_naming(proportion_ci, which, args["successes"], args["trials"])
    assert_raises_naming(proportion_se, which, args["successes"], args["trials"])


@FAST
@given(count_pair(max_n=10**6))
def test_successes_above_trials_is_rejected(pair):
    s, n = pair
    assert_raises_naming(proportion_ci, "successes", n + 1, n)
    assert_raises_naming(proportion_se, "trials", n + 1 + s, n)


@FAST
@given(bad_levels)
def test_proportion_ci_bad_level_names_level(level):
    assert_raises_naming(proportion_ci, "level", 3, 10, level=level)


def test_proportion_ci_unknown_method_names_method():
    assert_raises_naming(proportion_ci, "method", 3, 10, method="bogus")
    assert_raises_naming(proportion_ci, "method", 3, 10, method=3)


@FAST
@given(count_pair())
def test_proportion_se_finite_and_bounded(pair):
    s, n = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        se = proportion_se(s, n)
    assert math.isfinite(se)
    assert 0.0 <= se <= 0.5 / math.sqrt(n) + 1e-15


# -- Counts ----------------------------------------------------------------------------------
@FAST
@given(count_arrays(max_k=40))
def test_counts_from_arrays_round_trip(arrays):
    s, n = arrays
    c = Counts.from_arrays(s, n, strata=[f"s{i}" for i in range(len(s))])
    assert c.successes.to_numpy().tolist() == s.tolist()
    assert c.trials.to_numpy().tolist() == n.tolist()
    r = c.rates.to_numpy()
    assert np.all((0 <= r) & (r <= 1))


@FAST
@given(bad_counts, st.sampled_from(["successes", "trials"]))
def test_counts_from_arrays_bad_counts_name_the_argument(bad, which):
    args = {"successes": [1, 2], "trials": [5, 5]}
    args[which] = [bad, 2] if which == "successes" else [5, bad]
    assert_raises_naming(Counts.from_arrays, which, args["successes"], args["trials"])


def test_counts_from_arrays_bad_strata_and_weights():
    assert_raises_naming(Counts.from_arrays, "strata", [1, 2], [5, 5], strata=["a"])
    assert_raises_naming(Counts.from_arrays, "strata", [1, 2], [5, 5], strata=["a", "a"])
    assert_raises_naming(Counts.from_arrays, "weights", [1, 2], [5, 5], weights=[0.5, 0.6])
    assert_raises_naming(Counts.from_arrays, "weights", [1, 2], [5, 5], weights=[1.5, -0.5])
    assert_raises_naming(Counts.from_arrays, "weights", [1, 2], [5, 5], weights=[1.0])


# -- stratified_risk -------------------------------------------------------------------------
@FAST
@given(st.data(), levels, st.sampled_from(METHODS))
def test_stratified_risk_extremes_finite_ordered(data, level, method):
    s, n = data.draw(count_arrays(max_k=30))
    w = data.draw(shares(len(s)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk(s, n, w, level=level, method=method)
    lo, hi = res.ci
    assert all(math.isfinite(v) for v in (res.estimate, res.se, lo, hi))
    assert 0.0 <= lo <= res.estimate <= hi <= 1.0
    assert res.se >= 0
    t = res.table
    assert np.all((0 <= t["lower"]) & (t["lower"] <= t["upper"]) & (t["upper"] <= 1))


def test_stratified_risk_ten_thousand_strata():
    rng = np.random.default_rng(1)
    n = rng.integers(1, BIG, 10_000)
    s = np.floor(rng.choice([0.0, 1.0, 0.1], 10_000) * n).astype(np.int64)
    w = rng.random(10_000)
    w /= w.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = stratified_risk(s, n, w)
    # reference: the weighted mean of the raw rates
    assert res.estimate == pytest.approx(float(np.sum(w * s / n)), rel=1e-9)
    assert 0.0 <= res.ci[0] <= res.estimate <= res.ci[1] <= 1.0


@FAST
@given(st.sampled_from([[0.5, 0.6], [1.2, -0.2], [0.5], [float("nan"), 1.0], [0.3, 0.3, 0.4]]))
def test_stratified_risk_bad_weights_name_weights(w):
    assert_raises_naming(stratified_risk, "weights", [1, 2], [10, 10], w)


@FAST
@given(bad_levels)
def test_stratified_risk_bad_level_names_level(level):
    assert_raises_naming(stratified_risk, "level", [1, 2], [10, 10], [0.5, 0.5], level=level)


def test_stratified_risk_bad_counts_name_the_argument():
    assert_raises_naming(stratified_risk, "successes", [-1, 2], [10, 10], [0.5, 0.5])
    assert_raises_naming(stratified_risk, "trials", [1, 2], [10, 1.5], [0.5, 0.5])
    assert_raises_naming(stratified_risk, "successes", [11, 2], [10, 10], [0.5, 0.5])


# -- planning --------------------------------------------------------------------------------
@FAST
@given(st.floats(1e-4, 0.2), st.floats(0.0, 1.0), levels, st.sampled_from(["normal", "wilson", "clopper_pearson"]))
def test_sample_size_positive_int(halfwidth, rate, level, method):
    if method == "normal" and rate in (0.0, 1.0):
        # documented: the normal formula has SE 0 there; the error says so and names rate
        assert_raises_naming(sample_size, "rate", halfwidth=halfwidth, rate=rate, level=level, method=method)
        return
    n = sample_size(halfwidth=halfwidth, rate=rate, level=level, method=method)
    assert isinstance(n, int) and n >= 1


@FAST
@given(st.floats(1e-3, 0.2), st.floats(0.01, 0.99))
def test_sample_size_normal_matches_closed_form(se, rate):
    # n = ceil(r(1-r)/se^2) (floating noise ignored)
    n = sample_size(se=se, rate=rate)
    exact = rate * (1 - rate) / se**2
    assert math.ceil(exact - 1e-9) <= n <= math.ceil(exact) + 1


def test_sample_size_bad_input_names_argument():
    assert_raises_naming(sample_size, "se", se=-0.01)
    assert_raises_naming(sample_size, "se", se=float("nan"))
    assert_raises_naming(sample_size, "halfwidth", halfwidth=0.0)
    assert_raises_naming(sample_size, "rate", halfwidth=0.02, rate=1.5)
    assert_raises_naming(sample_size, "level", halfwidth=0.02, level=1.0)
    assert_raises_naming(sample_size, "method", halfwidth=0.02, method="bogus")


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


def test_split_decision_bad_input_names_argument():
    assert_raises_naming(split_decision, "share", n_total=1000, n_test=100, share=1.5, n_min=10)
    assert_raises_naming(split_decision, "n_test", n_total=1000, n_test=-1, share=0.1, n_min=10)
    assert_raises_naming(split_decision, "n_min", n_total=1000, n_test=100, share=0.1, n_min=2.5)


# -- mcnemar ---------------------------------------------------------------------------------
@FAST
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300),
       st.sampled_from(["exact", "midp", "asymptotic"]))
def test_mcnemar_pvalue_in_unit_interval(pairs, method):
    a, b = map(np.array, zip(*pairs, strict=True))
    res = mcnemar(a, b, method=method)
    assert 0.0 <= res.pvalue <= 1.0
    assert res.b == int(np.sum(a & ~b)) and res.c == int(np.sum(~a & b))


def test_mcnemar_bad_input_names_argument():
    assert_raises_naming(mcnemar, "correct_a", [1, 0, 1], [1, 0])
    assert_raises_naming(mcnemar, "correct_a", [1, 2, 1], [1, 0, 1])
    assert_raises_naming(mcnemar, "correct_b", [1, 0, 1], [1, float("nan"), 1])
    assert_raises_naming(mcnemar, "method", [1, 0, 1], [1, 0, 1], method="bogus")


# -- fit_hierarchical (exact engine) ---------------------------------------------------------
@SLOWER
@given(count_arrays(max_k=12, max_n=BIG))
def test_fit_hierarchical_exact_extremes(arrays):
    s, n = arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        post = fit_hierarchical(s, n, draws=400, random_seed=0)
        summ = post.summary()
    m, lo, hi = summ["mean"].to_numpy(), summ["lower"].to_numpy(), summ["upper"].to_numpy()
    assert np.all(np.isfinite(m) & np.isfinite(lo) & np.isfinite(hi))
    assert np.all((0 <= lo) & (lo <= m) & (m <= hi) & (hi <= 1))


@SLOWER
@given(count_arrays(max_k=8, max_n=3))
def test_fit_hierarchical_exact_tiny_counts(arrays):
    s, n = arrays  # n in {1, 2, 3}: every stratum at 0 or n is common here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        summ = fit_hierarchical(s, n, draws=400, random_seed=0).summary()
    assert np.all(np.isfinite(summ[["mean", "lower", "upper"]].to_numpy()))
    assert np.all((summ["lower"] <= summ["mean"]) & (summ["mean"] <= summ["upper"]))


def test_fit_hierarchical_bad_input_names_argument():
    assert_raises_naming(fit_hierarchical, "successes", [-1, 2], [10, 10])
    assert_raises_naming(fit_hierarchical, "trials", [1, 2], [10, 2.5])
    assert_raises_naming(fit_hierarchical, "successes", [11, 2], [10, 10])
    assert_raises_naming(fit_hierarchical, "engine", [1, 2], [10, 10], engine="stan")
    assert_raises_naming(fit_hierarchical, "model", [1, 2], [10, 10], model="bogus")
    assert_raises_naming(fit_hierarchical, "draws", [1, 2], [10, 10], draws=0)
    assert_raises_naming(fit_hierarchical, "prior", [1, 2], [10, 10], prior="bogus")


@pytest.mark.slow
def test_fit_hierarchical_exact_ten_thousand_strata():
    rng = np.random.default_rng(3)
    n = rng.integers(1, 10**6, 10_000)
    s = rng.binomial(n, rng.beta(2, 18, 10_000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        summ = fit_hierarchical(s, n, draws=200, random_seed=0).summary()
    assert np.all(np.isfinite(summ[["mean", "lower", "upper"]].to_numpy()))
    assert np.all((0 <= summ["lower"]) & (summ["lower"] <= summ["mean"]) & (summ["mean"] <= summ["upper"]))


# -- tabulate and gate -----------------------------------------------------------------------
@st.composite
def frames(draw):
    k = draw(st.integers(1, 200))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=k, max_size=k)))
    p = np.array(draw(st.lists(st.integers(0, 1), min_size=k, max_size=k)))
    g = np.array(draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=k, max_size=k)))
    return pd.DataFrame({"y": y, "p": p, "g": g})


@FAST
@given(frames(), st.sampled_from(["error_rate", "accuracy", "recall", "precision", "fpr"]))
def test_tabulate_counts_are_consistent(df, metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        c = tabulate(df, y_true="y", y_pred="p", strata="g", metric=metric)
    assert np.all(c.successes <= c.trials)
    if metric in ("error_rate", "accuracy"):
        assert int(c.trials.sum()) == len(df)
        errors = int((df.y != df.p).sum())
        assert int(c.successes.sum()) == (errors if metric == "error_rate" else len(df) - errors)


def test_tabulate_bad_input_names_argument():
    df = pd.DataFrame({"y": [1, 0], "p": [1, 1], "g": ["a", "b"]})
    assert_raises_naming(tabulate, "y_true", df, y_true="nope", y_pred="p")
    assert_raises_naming(tabulate, "y_pred", df, y_true="y", y_pred="nope")
    assert_raises_naming(tabulate, "strata", df, y_true="y", y_pred="p", strata="nope")
    assert_raises_naming(tabulate, "metric", df, y_true="y", y_pred="p", metric="bogus")
    assert_raises_naming(tabulate, "data", [1, 2, 3], y_true="y", y_pred="p")
    assert_raises_naming(tabulate, "weights", df, y_true="y", y_pred="p", strata="g", weights={"a": 0.5, "b": 0.6})


@FAST
@given(count_arrays(max_k=30, min_n=1), st.integers(1, 10**6), st.floats(0.001, 0.5), levels)
def test_gate_table_is_consistent(arrays, min_trials, max_halfwidth, level):
    s, n = arrays
    res = gate(Counts.from_arrays(s, n), min_trials=min_trials, max_halfwidth=max_halfwidth, level=level)
    t = res.table
    assert np.all((0 <= t["lower"]) & (t["lower"] <= t["upper"]) & (t["upper"] <= 1))
    expected = (t["trials"] >= min_trials) & (t["halfwidth"] <= max_halfwidth)
    assert t["passed"].tolist() == expected.tolist()
    assert res.passed == bool(expected.all())


def test_gate_bad_input_names_argument():
    c = Counts.from_arrays([1, 2], [10, 20])
    assert_raises_naming(gate, "min_trials", c, min_trials=0)
    assert_raises_naming(gate, "min_trials", c, min_trials=2.5)
    assert_raises_naming(gate, "max_halfwidth", c, max_halfwidth=1.5)
    assert_raises_naming(gate, "level", c, min_trials=5, level=1.2)
    assert_raises_naming(gate, "method", c, min_trials=5, method="bogus")



# -- bootstrap_ci, reweight, risk_averaging, paired_bootstrap, evaluate --------------------------
@SLOWER
@given(st.integers(1, 200), st.floats(0.0, 1.0), st.sampled_from(["bca", "percentile"]), levels)
def test_bootstrap_ci_of_a_rate_is_ordered_in_unit_interval(n, frac, method, level):
    from bayeseval import bootstrap_ci

    x = int(round(frac * n))
    data = np.r_[np.ones(x), np.zeros(n - x)]
    if n == 1:  # one row cannot be resampled (SciPy's error names `data`)
        assert_raises_naming(bootstrap_ci, "data", data, "mean", method=method, n_resamples=200)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = bootstrap_ci(data, "mean", method=method, level=level, n_resamples=200, random_seed=0)
    lo, hi = float(res[0]), float(res[1])
    assert math.isfinite(lo) and math.isfinite(hi)
    assert 0.0 <= lo <= x / n <= hi <= 1.0


def test_bootstrap_ci_bad_input_names_argument():
    from bayeseval import bootstrap_ci

    assert_raises_naming(bootstrap_ci, "level", [0, 1, 1], level=1.5)
    assert_raises_naming(bootstrap_ci, "method", [0, 1, 1], method="bogus")
    assert_raises_naming(bootstrap_ci, "n_resamples", [0, 1, 1], n_resamples=0)
    assert_raises_naming(bootstrap_ci, "statistic", [0, 1, 1], statistic="bogus")
    assert_raises_naming(bootstrap_ci, "strata", [0, 1, 1], strata=["a", "b"])


@FAST
@given(st.data())
def test_reweight_gives_the_population_composition(data):
    from bayeseval import reweight

    k = data.draw(st.integers(1, 8))
    labels = [f"s{i}" for i in range(k)]
    counts = data.draw(st.lists(st.integers(1, 50), min_size=k, max_size=k))
    strata = np.repeat(labels, counts)
    pi = data.draw(shares(k))
    w = reweight(strata, dict(zip(labels, pi, strict=True)))
    assert np.all(np.isfinite(w)) and np.all(w > 0)
    # weighted rows have the population composition, and the weights sum to N
    got = pd.Series(w).groupby(strata).sum() / w.sum()
    np.testing.assert_allclose(got.loc[labels].to_numpy(), pi, atol=1e-12)
    assert w.sum() == pytest.approx(len(strata), rel=1e-12)


def test_reweight_bad_input_names_argument():
    from bayeseval import reweight

    assert_raises_naming(reweight, "weights", ["a", "b"], {"a": 0.5, "b": 0.6})
    assert_raises_naming(reweight, "weights", ["a", "b"], {"a": -0.5, "b": 1.5})
    assert_raises_naming(reweight, "weights", ["a", "c"], {"a": 0.5, "b": 0.5})


@FAST
@given(st.integers(2, 6), st.integers(1, 100), st.integers(0, 2**31))
def test_risk_averaging_in_range(k, n, seed):
    from bayeseval import risk_averaging

    p = np.random.default_rng(seed).dirichlet(np.full(k, 0.3), n)
    r = risk_averaging(p)
    # the conditional risk 1 - max_k P(k|x) lies in [0, 1 - 1/K]
    assert 0.0 <= r <= 1 - 1 / k + 1e-12
    assert r == pytest.approx(float(np.mean(1 - p.max(axis=1))), abs=1e-12)


def test_risk_averaging_bad_input_names_argument():
    from bayeseval import risk_averaging

    assert_raises_naming(risk_averaging, "proba", np.array([[0.2, 0.9], [0.5, 0.5]]))
    assert_raises_naming(risk_averaging, "proba", np.array([[-0.2, 1.2]]))
    assert_raises_naming(risk_averaging, "proba", np.array([[np.nan, 1.0]]))


def test_paired_bootstrap_bad_input_names_argument():
    from bayeseval import paired_bootstrap

    y = [0, 1, 1, 0, 1]
    assert_raises_naming(paired_bootstrap, "level", y, y, y, level=0.0)
    assert_raises_naming(paired_bootstrap, "n_resamples", y, y, y, n_resamples=0)
    assert_raises_naming(paired_bootstrap, "method", y, y, y, method="bogus")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_evaluate_on_extreme_counts_is_finite_and_ordered(data):
    from bayeseval import evaluate

    s, n = data.draw(count_arrays(max_k=8, max_n=BIG))
    w = data.draw(shares(len(s)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        rep = evaluate(Counts.from_arrays(s, n), weights=w, random_seed=0)
    t = rep.table
    # with fewer than two strata with trials the report fits no pooled model (nothing to pool)
    assert (rep.posterior is None) == (int((np.asarray(n) > 0).sum()) < 2)
    pairs = [("lower", "rate", "upper")]
    if rep.posterior is not None:
        pairs.append(("pooled_lower", "pooled_mean", "pooled_upper"))
    for lo, mid, hi in pairs:
        v = t[[lo, mid, hi]].to_numpy()
        assert np.all(np.isfinite(v))
        assert np.all((0 <= v[:, 0]) & (v[:, 0] <= v[:, 1] + 1e-12) & (v[:, 1] <= v[:, 2] + 1e-12) & (v[:, 2] <= 1))
    o = rep.overall[["estimate", "lower", "upper"]].to_numpy()
    assert np.all(np.isfinite(o))
    assert np.all((0 <= o[:, 1]) & (o[:, 1] <= o[:, 0]) & (o[:, 0] <= o[:, 2]) & (o[:, 2] <= 1))


def test_evaluate_bad_input_names_argument():
    from bayeseval import evaluate

    c = Counts.from_arrays([1, 2], [10, 20])
    assert_raises_naming(evaluate, "level", c, level=1.0)
    assert_raises_naming(evaluate, "weights", c, weights=[0.5, 0.6])
    assert_raises_naming(evaluate, "target_halfwidth", c, target_halfwidth=0.7)
    assert_raises_naming(evaluate, "engine", c, engine="stan")


# -- defects found by these properties, now fixed ---------------------------------------------
def test_fit_hierarchical_prior_mean_length_is_checked():
    assert_raises_naming(fit_hierarchical, "prior_mean", [1, 2], [5, 5], prior_mean=[0.2])


def test_fit_hierarchical_bad_random_seed_names_random_seed():
    assert_raises_naming(fit_hierarchical, "random_seed", [1, 2], [5, 5], random_seed="x")


def test_bootstrap_ci_bad_random_seed_names_random_seed():
    from bayeseval import bootstrap_ci

    assert_raises_naming(bootstrap_ci, "random_seed", [0, 1, 1, 0], n_resamples=50, random_seed="x")
