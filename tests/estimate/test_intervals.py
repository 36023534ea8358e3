"""Tests of ``bayeseval.estimate.intervals``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

import bayeseval
import bayeseval as be
from bayeseval import (
    Counts,
    ZeroVarianceWarning,
    bootstrap_ci,
    proportion_ci,
    proportion_se,
    stratified_risk,
)
from bayeseval._api.results import Result
from bayeseval._api.warnings import BayesevalWarning, EmptyStratumWarning
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval.counts.counts import as_counts
from bayeseval.estimate.classic import risk_averaging
from bayeseval.estimate.compare import paired_bootstrap
from bayeseval.estimate.intervals import PROPORTION_METHODS, confidence_sequence, f1_score
from bayeseval.estimate.reweighting import weighted_metric
from bayeseval.estimate.stratified import clustered_risk
from tests.estimate.helpers import (
    METHODS,
    _quietly,
    _raises_naming,
    _scipy_ci,
    _silenced,
    bad_levels,
    rows_hardening_inputs,
)
from tests.helpers import (
    BIG,
    FAST,
    SLOWER,
    TOL,
    _proportion_coverage,
    _raises,
    assert_raises_naming,
    bad_counts,
    count_arrays,
    labelled_counts,
    levels,
    load_result,
)
from tests.results.make_reference import count_grid

SM_METHOD = {"wilson": "wilson", "clopper_pearson": "beta", "agresti_coull": "agresti_coull", "wald": "normal"}


# our name -> statsmodels' name
SM_NAMES = {
    "wald": "normal",
    "wilson": "wilson",
    "agresti_coull": "agresti_coull",
    "clopper_pearson": "beta",
    "jeffreys": "jeffreys",
}


PROPORTION_CONFINT = load_result("proportion_confint")


def _mixture_value(p: float, s: int, n: int, c: float) -> float:
    """M_n(p) by quadrature of its defining integral (prior Beta(c p, c (1 - p)))."""
    from scipy import integrate

    dens = stats.beta(c * p, c * (1 - p)).pdf
    num = integrate.quad(
        lambda q: (q / p) ** s * ((1 - q) / (1 - p)) ** (n - s) * dens(q), 0, 1, epsabs=0, epsrel=1e-10, limit=200
    )[0]
    return num


@st.composite
def count_pair(draw, max_n: int = BIG):
    n = draw(st.one_of(st.just(1), st.just(max_n), st.integers(1, max_n)))
    s = draw(st.one_of(st.just(0), st.just(n), st.integers(0, n)))
    return s, n


def test_adaptive_equals_the_kernel_and_keeps_the_container():
    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    lo, hi = proportion_ci(s, n, level=0.9, method="adaptive")
    ref = adaptive_interval(s, n, level=0.9)
    np.testing.assert_array_equal(lo, ref.lower)
    np.testing.assert_array_equal(hi, ref.upper)
    # the alias, Series in and out, and a Counts object give the same numbers
    idx = list("abcdefg")
    slo, shi = proportion_ci(pd.Series(s, index=idx), pd.Series(n, index=idx), level=0.9, method="FAB")
    assert list(slo.index) == idx
    np.testing.assert_array_equal(slo.to_numpy(), lo)
    clo, chi = proportion_ci(be.Counts.from_arrays(s, n), level=0.9, method="adaptive")
    np.testing.assert_array_equal(chi.to_numpy(), hi)


def test_adaptive_empty_stratum_is_nan_and_others_keep_their_interval():
    s, n = [4, 6, 0, 5], [50, 70, 0, 60]
    with pytest.warns(EmptyStratumWarning, match="trials=0"):
        lo, hi = proportion_ci(s, n, method="adaptive")
    assert np.isnan(lo[2]) and np.isnan(hi[2])
    ref = adaptive_interval(s, n)
    np.testing.assert_array_equal(lo[[0, 1, 3]], ref.lower[[0, 1, 3]])


@pytest.mark.parametrize(
    ("s", "n", "match"),
    [
        (3, 10, r"method='adaptive'.*at least two strata.*shape \(\)"),
        ([3], [10], r"method='adaptive'.*at least two strata.*shape \(1,\)"),
        ([[1, 2], [3, 4]], [[10, 10], [10, 10]], r"method='adaptive'.*shape \(2, 2\)"),
        ([3, 0, 0], [10, 0, 0], r"method='adaptive'.*two strata with trials.*\[10, 0, 0\]"),
    ],
)
def test_adaptive_needs_two_strata(s, n, match):
    with pytest.raises(ValueError, match=match):
        proportion_ci(s, n, method="adaptive")


def test_unknown_method_lists_adaptive_and_one_rate_tools_refuse_it():
    with pytest.raises(ValueError, match=r"unknown method 'fabulous'.*'adaptive'"):
        proportion_ci([1, 2], [10, 10], method="fabulous")
    from bayeseval._kernels.binomial import normalise_method

    with pytest.raises(ValueError, match=r"method 'adaptive'.*several strata"):
        normalise_method("adaptive")


def test_group_intervals_are_wilson_and_pooled_brackets(crossed, data):
    g = crossed.groups[crossed.groups["metric"] == "fpr"].set_index("group")
    lo, hi = proportion_ci(g["successes"].to_numpy(int), g["trials"].to_numpy(int), method="wilson")
    assert np.allclose(g["wilson_lower"], lo) and np.allclose(g["wilson_upper"], hi)
    assert (g["adaptive_lower"] <= g["rate"]).all() and (g["rate"] <= g["adaptive_upper"]).all()
    assert (g["pooled_lower"] <= g["pooled_mean"]).all() and (g["pooled_mean"] <= g["pooled_upper"]).all()


@pytest.mark.parametrize("method, scipy_method", [("bca", "BCa"), ("percentile", "percentile")])
@pytest.mark.parametrize("kind", ["skewed", "binary"])
def test_unstratified_mean_equals_scipy(method, scipy_method, kind):
    # binary data put replicates exactly on the estimate: the ties counted half in z0 matter
    rng = np.random.default_rng(4)
    x = rng.exponential(size=70) if kind == "skewed" else (rng.random(90) < 0.2).astype(float)
    ours = bootstrap_ci(x, "mean", method=method, level=0.9, n_resamples=3000, random_seed=11)
    lo, hi, dist = _scipy_ci((x,), np.mean, method=scipy_method, level=0.9, n_resamples=3000, seed=11)
    np.testing.assert_allclose(ours.distribution, dist, rtol=0, atol=TOL)
    assert ours.lower == pytest.approx(lo, abs=TOL) and ours.upper == pytest.approx(hi, abs=TOL)


@pytest.mark.parametrize("method, scipy_method", [("bca", "BCa"), ("percentile", "percentile")])
def test_f1_and_callables_equal_scipy(method, scipy_method):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 150)
    p = np.where(rng.random(150) < 0.75, y, 1 - y)

    def f1(a, b, axis=-1):
        return f1_score(a, b, axis=axis)

    lo, hi, _ = _scipy_ci((y, p), f1, method=scipy_method, n_resamples=1500, seed=2)
    for res in (
        bootstrap_ci((y, p), "f1", method=method, n_resamples=1500, random_seed=2),
        bootstrap_ci((y, p), f1, vectorized=True, method=method, n_resamples=1500, random_seed=2),
        bootstrap_ci((y, p), lambda a, b: f1_score(a, b), method=method, n_resamples=1500, random_seed=2),
    ):
        assert res.lower == pytest.approx(lo, abs=TOL) and res.upper == pytest.approx(hi, abs=TOL)


@pytest.mark.parametrize("method, scipy_method", [("bca", "BCa"), ("percentile", "percentile")])
def test_stratified_weighted_risk_equals_scipy_multisample(method, scipy_method):
    # strata resampled within themselves = SciPy's bootstrap of independent samples (one per
    # stratum, paired=False) drawn in the same order; its BCa uses the multi-sample acceleration
    rng = np.random.default_rng(6)
    sizes, rates, w = (40, 25, 12), (0.1, 0.3, 0.5), (0.5, 0.3, 0.2)
    labels = np.repeat(["a", "b", "c"], sizes)
    x = np.concatenate([(rng.random(n) < r).astype(float) for n, r in zip(sizes, rates, strict=True)])
    order = rng.permutation(x.size)  # rows need not be sorted by stratum
    ours = bootstrap_ci(
        x[order],
        "weighted_risk",
        strata=labels[order],
        weights=dict(zip("abc", w, strict=True)),
        method=method,
        n_resamples=2000,
        random_seed=8,
    )
    samples = tuple(x[order][labels[order] == k] for k in "abc")

    def risk(*s, axis=-1):
        return sum(wk * np.mean(sk, axis=axis) for wk, sk in zip(w, s, strict=True))

    lo, hi, _ = _scipy_ci(samples, risk, method=scipy_method, n_resamples=2000, seed=8, paired=False)
    assert ours.lower == pytest.approx(lo, abs=TOL) and ours.upper == pytest.approx(hi, abs=TOL)


def test_undefined_replicates_are_dropped_with_a_warning():
    rng = np.random.default_rng(0)
    x = np.r_[1.0, np.zeros(9)] + rng.normal(0, 0.01, 10)

    def first_row_mean(v, axis=-1):  # undefined when the first row is not drawn
        return np.where(np.any(v == x[0], axis=axis), np.mean(v, axis=axis), np.nan)

    with pytest.warns(BayesevalWarning, match=r"\d+ of 500 bootstrap replicates gave an undefined"):
        res = bootstrap_ci(x, first_row_mean, vectorized=True, method="percentile", n_resamples=500, random_seed=1)
    idx = rng_indices = np.random.default_rng(1).integers(0, 10, (500, 10))
    full = first_row_mean(x[rng_indices], axis=-1)
    kept = full[np.isfinite(full)]
    assert res.distribution.size == kept.size == np.sum(np.any(idx == 0, axis=1))
    np.testing.assert_allclose([res.lower, res.upper], np.quantile(kept, [0.025, 0.975]), atol=TOL)


def test_pos_label_policy():
    y = np.array(["yes", "no", "yes", "yes", "no", "no"])
    p = np.array(["yes", "no", "no", "yes", "yes", "no"])
    for call in (
        lambda: bootstrap_ci((y, p), "f1", n_resamples=50),
        lambda: paired_bootstrap(y, p, y, metric="recall", n_resamples=50),
    ):
        with pytest.raises(ValueError, match=r"needs pos_label .*'no', 'yes'"):
            call()
    with pytest.raises(ValueError, match=r"pos_label 1 is not among the labels"):
        bootstrap_ci((y, p), "f1", pos_label=1, n_resamples=50)
    with pytest.raises(ValueError, match=r"pos_label 'maybe' is not among"):
        paired_bootstrap(y, p, y, metric="recall", pos_label="maybe", n_resamples=50)
    res = bootstrap_ci((y, p), "f1", pos_label="yes", n_resamples=50, random_seed=0)
    from sklearn.metrics import f1_score as sk_f1

    assert res.estimate == pytest.approx(sk_f1(y, p, pos_label="yes"), abs=TOL)
    # booleans and 0/1 need no pos_label
    yb = np.array([True, False, True, True, False, True])
    pb = np.array([True, True, False, True, False, True])
    assert bootstrap_ci((yb, pb), "f1", n_resamples=50, random_seed=0).estimate == pytest.approx(sk_f1(yb, pb), abs=TOL)


def test_f1_of_labels_other_than_0_1_needs_pos_label():
    y = np.array([1, 2, 3, 1, 2, 1, 3, 1])
    p = np.array([1, 2, 1, 1, 3, 2, 3, 1])
    with pytest.raises(ValueError, match=r"needs pos_label .*\[1, 2, 3\]"):
        bootstrap_ci((y, p), "f1", n_resamples=50, random_seed=0)
    res = bootstrap_ci((y, p), "f1", pos_label=1, n_resamples=50, random_seed=0)
    from sklearn.metrics import f1_score as sk_f1

    assert res.estimate == pytest.approx(sk_f1(y, p, labels=[1], average="macro"), abs=TOL)


def test_bootstrap_ci_refuses_missing_values():
    _raises_naming(lambda: bootstrap_ci([0.0, np.nan, 1.0, np.nan], n_resamples=50), "data has 2 missing")
    _raises_naming(lambda: bootstrap_ci(([1, 0, 1], [1, None, 0]), "f1", n_resamples=50), "data[1] has 1 missing")
    frame = pd.DataFrame({"y": [1, 0, 1], "p": pd.array([1, pd.NA, pd.NA], dtype="Int64")})
    _raises_naming(lambda: bootstrap_ci(frame, "f1", n_resamples=50), "data['p'] has 2 missing")
    _raises_naming(
        lambda: bootstrap_ci([1.0, 0.0, 1.0], strata=["a", None, "b"], n_resamples=50), "strata has 1 missing"
    )
    _raises_naming(lambda: bootstrap_ci([1.0], n_resamples=50), "data has 1 row")


def test_bootstrap_of_a_proportion_covers():
    # seeded simulation: n = 150 rows, p = 0.3, 300 data sets, 95% intervals with 999 resamples.
    # The normal-theory coverage is ~0.95 (the bootstrap runs slightly below at finite n); the
    # binomial SE of a coverage estimate over 300 runs is 0.0126: accept [0.91, 0.985].
    for method, coverage in _proportion_coverage(150, 0.3, 300, seed=17).items():
        assert 0.91 <= coverage <= 0.985, (method, coverage)


def test_f1_score_refuses_missing_labels():
    _raises_naming(lambda: f1_score([1, 0, np.nan], [1, 0, 1]), "y_true has 1 missing")
    _raises_naming(lambda: f1_score([1, 0, 1], pd.Series([1, pd.NA, None], dtype=object)), "y_pred has 2 missing")


def test_proportion_ci_and_se_pair_series_by_label():
    s = pd.Series([1, 2, 30], index=["a", "b", "c"])
    n = pd.Series([10, 3, 40], index=["b", "a", "c"])  # a: 1/3, b: 2/10, c: 30/40
    lo, hi = proportion_ci(s, n, method="wilson")
    ref_lo, ref_hi = proportion_confint([1, 2, 30], [3, 10, 40], alpha=0.05, method="wilson")
    assert list(lo.index) == ["a", "b", "c"]
    np.testing.assert_allclose(lo.to_numpy(), ref_lo, atol=1e-12)
    np.testing.assert_allclose(hi.to_numpy(), ref_hi, atol=1e-12)
    se = _quietly(proportion_se, s, n)
    p = np.array([1 / 3, 2 / 10, 30 / 40])
    np.testing.assert_allclose(se.to_numpy(), np.sqrt(p * (1 - p) / [3, 10, 40]), rtol=1e-12)


@pytest.mark.parametrize(
    "fn",
    [
        proportion_ci,
        proportion_se,
        Counts.from_arrays,
        as_counts,
        lambda s, n: stratified_risk(s, n, {"a": 0.5, "b": 0.5}),
    ],
)
def test_different_label_sets_name_both_arguments(fn):
    s = pd.Series([1, 2], index=["a", "b"])
    n = pd.Series([10, 3], index=["b", "c"])
    msg = _raises(lambda: fn(s, n), "successes", "trials")
    assert "'a'" in msg and "'c'" in msg


@pytest.mark.parametrize("fn", [proportion_ci, Counts.from_arrays, proportion_se])
def test_duplicate_labels_are_refused(fn):
    s = pd.Series([1, 2], index=["a", "a"])
    n = pd.Series([10, 3], index=["b", "a"])
    _raises(lambda: fn(s, n), "successes", "duplicate", "'a'")


def test_identical_indexes_are_paired_as_given_even_with_duplicates():
    # same index object on both sides: label pairing equals position pairing, nothing to refuse
    idx = pd.Index(["a", "a"])
    lo, _ = proportion_ci(pd.Series([1, 2], index=idx), pd.Series([10, 3], index=idx))
    ref, _ = proportion_confint([1, 2], [10, 3], method="wilson")
    np.testing.assert_allclose(lo.to_numpy(), ref, atol=1e-12)


def test_f1_score_pairs_series_by_label():
    yt = pd.Series([1, 1, 0, 0], index=list("abcd"))
    yp = pd.Series([0, 1, 0, 1], index=list("dcba"))  # aligned: a1 b0 c1 d0
    # tp = 1 (a), fp = 1 (c), fn = 1 (b): F1 = 2 / 4
    assert f1_score(yt, yp) == pytest.approx(0.5)


def test_counts_with_missing_entries_name_the_argument():
    _raises(lambda: proportion_ci(pd.Series([1, pd.NA], dtype=object), [3, 4]), "successes", "missing")
    _raises(lambda: Counts.from_arrays([1, 2], pd.Series([3, None], dtype="Int64")), "trials")


def test_overflowing_counts_are_refused_issue_examples():
    _raises(lambda: proportion_ci(1e19, 1e20), "successes", "2**53")
    _raises(lambda: proportion_ci(2**53 + 1, 2**53), "successes", str(2**53 + 1))
    _raises(lambda: proportion_ci(5, 2**53 + 1), "trials", str(2**53 + 1))
    big = [2**53] * 1025  # each exact, the total 2**63 + 2**53 is past int64
    _raises(lambda: Counts.from_arrays(big, big), "successes", "2**63")
    _raises(lambda: Counts.from_arrays([0] * 1025, big), "trials", "2**63")


def test_exact_limits_are_accepted_and_totals_stay_exact():
    lo, hi = proportion_ci(2**53, 2**53, method="clopper_pearson")
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 2**53), abs=1e-15)
    c = Counts.from_arrays([2**53 - 1] * 1023, [2**53] * 1023)
    assert c.total_trials == 1023 * 2**53  # exact Python int, no wrap
    assert c.total_successes == 1023 * (2**53 - 1)


@pytest.mark.parametrize(
    "value",
    [np.uint64(2**63), np.array([2**63], dtype=np.uint64), 2**70, [1, 2**64], np.int64(2**62)],
)
def test_huge_integers_of_every_container_are_refused(value):
    _raises(lambda: proportion_ci(0, value), "trials")
    _raises(lambda: Counts.from_arrays(np.zeros(np.size(value), dtype=int), value), "trials")


@given(labelled_counts(), st.sampled_from(sorted(SM_METHOD)))
@FAST
def test_permuted_series_give_the_aligned_statsmodels_interval(data, method):
    s, n, labels, perm = data
    ss = pd.Series(s, index=labels)
    nn = pd.Series(n, index=labels).iloc[perm]
    with _silenced():
        lo, hi = proportion_ci(ss, nn, method=method)
        se = proportion_se(ss, nn)
    ref_lo, ref_hi = proportion_confint(s, n, alpha=0.05, method=SM_METHOD[method])
    assert list(lo.index) == labels and list(se.index) == labels
    np.testing.assert_allclose(lo.to_numpy(), np.clip(ref_lo, 0, 1), atol=1e-9)
    np.testing.assert_allclose(hi.to_numpy(), np.clip(ref_hi, 0, 1), atol=1e-9)
    np.testing.assert_allclose(se.to_numpy(), np.sqrt(s / n * (1 - s / n) / n), rtol=1e-12)
    c = Counts.from_arrays(ss, nn)
    assert c.trials.to_dict() == dict(zip(labels, n.tolist(), strict=True))


@given(labelled_counts(), st.sampled_from(["extra", "renamed"]))
@FAST
def test_label_sets_that_differ_are_refused_naming_both(data, how):
    s, n, labels, perm = data
    other = list(labels)
    if how == "renamed":
        other[0] = "zz"
    nn = pd.Series(n, index=other).iloc[perm]
    if how == "extra":
        nn = pd.concat([nn, pd.Series([5], index=["zz"])])
    for fn in (proportion_ci, proportion_se, Counts.from_arrays):
        _raises(lambda fn=fn: fn(pd.Series(s, index=labels), nn), "successes", "trials", "zz")


@given(rows_hardening_inputs())
@SLOWER
def test_permuted_rows_give_the_aligned_result(data):
    y, p, g, perm = data
    idx = pd.Index([f"r{i}" for i in range(y.size)])
    ys, ps, gs = pd.Series(y, index=idx), pd.Series(p, index=idx), pd.Series(g, index=idx)
    shares = {"a": 0.4, "b": 0.6}
    with _silenced():
        got = weighted_metric(ys, ps.iloc[perm], strata=gs.iloc[perm[::-1]], weights=shares, metric="error_rate")
        sr = clustered_risk(ys, weights=shares, strata=gs.iloc[perm], cluster=ps.iloc[perm[::-1]])
    err = {k: np.mean((y != p)[g == k]) for k in ("a", "b")}
    assert got.report.loc["error_rate", "reweighted"] == pytest.approx(0.4 * err["a"] + 0.6 * err["b"])
    rate = {k: np.mean(y[g == k]) for k in ("a", "b")}
    assert sr.estimate == pytest.approx(0.4 * rate["a"] + 0.6 * rate["b"])
    proba = pd.Series(np.linspace(0.05, 0.95, y.size), index=idx)
    ra = risk_averaging(proba, strata=gs.iloc[perm])
    risk = np.minimum(proba.to_numpy(), 1 - proba.to_numpy())
    assert ra.to_dict() == pytest.approx({k: risk[g == k].mean() for k in ("a", "b")})
    assert f1_score(ys, ps.iloc[perm]) == pytest.approx(f1_score(y, p), nan_ok=True)


@given(
    st.lists(st.integers(0, 2**53), min_size=1, max_size=20),
    st.integers(2**53 + 1, 2**63 - 1),
    st.data(),
)
@FAST
def test_huge_counts_are_refused_exactly(trials, huge, draw):
    trials = np.array(trials, dtype=np.int64)
    i = draw.draw(st.integers(0, trials.size - 1))
    bad = trials.copy()
    bad[i] = huge
    assert_raises_naming(proportion_ci, "trials", np.zeros_like(bad), bad)
    assert_raises_naming(Counts.from_arrays, "successes", bad, np.full(bad.size, 2**63 - 1))
    # every count <= 2**53 is accepted and its total is exact (Python int arithmetic)
    with _silenced():
        c = Counts.from_arrays(np.zeros_like(trials), trials)
    if sum(int(t) for t in trials) <= 2**63 - 1:
        assert c.total_trials == sum(int(t) for t in trials)


@pytest.mark.parametrize("method", PROPORTION_METHODS)
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_bounds_match_statsmodels(method: str, level: float) -> None:
    # reference: statsmodels.stats.proportion.proportion_confint(x, n, alpha, method), stored in
    # tests/results/proportion_confint.csv by tests/results/make_reference.py
    ref = PROPORTION_CONFINT[
        (PROPORTION_CONFINT["method"] == SM_NAMES[method]) & (PROPORTION_CONFINT["level"] == level)
    ]
    x, n = ref["x"].to_numpy(), ref["n"].to_numpy()
    assert len(x) == len(count_grid()[0])  # every count of the grid the file was made on
    lo, hi = proportion_ci(x, n, level=level, method=method)
    ref_lo, ref_hi = ref["lower"].to_numpy(), ref["upper"].to_numpy()
    ref_lo = np.clip(ref_lo, 0, 1)
    ref_hi = np.clip(ref_hi, 0, 1)
    if method == "jeffreys":
        # statsmodels keeps the Beta quantile at the edges; we use the modified
        # Jeffreys interval (Brown, Cai & DasGupta 2001): lower 0 at x=0, upper 1 at x=n
        assert np.all(lo[x == 0] == 0.0) and np.all(hi[x == n] == 1.0)
        ref_lo = np.where(x == 0, 0.0, ref_lo)
        ref_hi = np.where(x == n, 1.0, ref_hi)
    np.testing.assert_allclose(lo, ref_lo, atol=1e-10, rtol=0)
    np.testing.assert_allclose(hi, ref_hi, atol=1e-10, rtol=0)


def test_clopper_pearson_closed_form_edges() -> None:
    # at x = 0: (0, 1 - (alpha/2)^(1/n)); at x = n: ((alpha/2)^(1/n), 1)
    for n in (1, 7, 100):
        lo, hi = proportion_ci(0, n, method="clopper_pearson")
        assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / n), abs=1e-15)
        lo, hi = proportion_ci(n, n, method="clopper_pearson")
        assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / n), abs=1e-15)


def test_scipy_binomtest_agrees_for_exact_and_wilson() -> None:
    # reference: scipy.stats.binomtest(k, n).proportion_ci(method="exact" / "wilson")
    for k, n in [(0, 12), (3, 12), (12, 12), (40, 97)]:
        res = stats.binomtest(k, n)
        for ours, theirs in [("clopper_pearson", "exact"), ("wilson", "wilson")]:
            ci = res.proportion_ci(confidence_level=0.9, method=theirs)
            lo, hi = proportion_ci(k, n, level=0.9, method=ours)
            assert lo == pytest.approx(ci.low, abs=1e-10)
            assert hi == pytest.approx(ci.high, abs=1e-10)


def test_aliases_and_containers() -> None:
    assert proportion_ci(3, 10, method="normal") == proportion_ci(3, 10, method="wald")
    assert proportion_ci(3, 10, method="beta") == proportion_ci(3, 10, method="Clopper-Pearson")
    lo, hi = proportion_ci(3, 10)
    assert isinstance(lo, float) and isinstance(hi, float)
    lo, hi = proportion_ci(np.array([1, 2]), np.array([10, 10]))
    assert isinstance(lo, np.ndarray) and lo.shape == (2,)
    s = pd.Series([1, 5], index=pd.Index(["x", "y"], name="g"))
    lo, hi = proportion_ci(s, pd.Series([10, 10], index=s.index))
    assert isinstance(lo, pd.Series) and list(lo.index) == ["x", "y"]
    assert lo["y"] == pytest.approx(proportion_ci(5, 10)[0])
    # broadcasting: one trials value for many successes
    lo, _ = proportion_ci([0, 1, 2], 10)
    assert lo.shape == (3,)


def test_zero_trials_gives_nan_and_warning() -> None:
    with pytest.warns(EmptyStratumWarning, match="trials=0"):
        lo, hi = proportion_ci([0, 3], [0, 10])
    assert np.isnan(lo[0]) and np.isnan(hi[0])
    assert np.isfinite(lo[1])


def test_wald_collapses_and_wilson_does_not() -> None:
    assert proportion_ci(0, 50, method="wald") == (0.0, 0.0)
    lo, hi = proportion_ci(0, 50, method="wilson")
    assert lo == 0.0 and hi > 0.05


def test_spec_accuracy_figures() -> None:
    # accuracy 0.9 -> n=100 SE 0.030 (half-width about 0.059); n=1000 SE 0.0095
    # (half-width 0.019); n=10000 half-width 0.006
    z = stats.norm.isf(0.025)
    se100 = proportion_se(90, 100)
    assert round(se100, 3) == 0.030 and round(z * se100, 3) == 0.059
    se1000 = proportion_se(900, 1000)
    assert round(se1000, 4) == 0.0095 and round(z * se1000, 3) == 0.019
    assert round(z * proportion_se(9000, 10000), 3) == 0.006


# recall 0.70 with n+ positives: se and 95% half-width (tests/results/recall_se.csv)
@pytest.mark.parametrize("n_pos, se, half_pct", list(load_result("recall_se").itertuples(index=False)))
def test_recall_table(n_pos: int, se: float, half_pct: float) -> None:
    got = proportion_se(round(0.7 * n_pos), n_pos)
    assert round(got, 4) == se
    assert round(100 * stats.norm.isf(0.025) * got, 1) == half_pct


def test_proportion_se_zero_variance_warning() -> None:
    with pytest.warns(ZeroVarianceWarning, match="not certainty"):
        se = proportion_se([0, 5], [10, 10])
    assert se[0] == 0.0 and se[1] == pytest.approx(np.sqrt(0.25 / 10))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=10**9),
    frac=st.floats(min_value=0, max_value=1),
    level=st.floats(min_value=0.01, max_value=0.999),
    method=st.sampled_from(PROPORTION_METHODS),
)
def test_valid_input_gives_ordered_bounds(n: int, frac: float, level: float, method: str) -> None:
    x = int(round(frac * n))
    lo, hi = proportion_ci(x, n, level=level, method=method)
    assert np.isfinite(lo) and np.isfinite(hi)
    assert 0.0 <= lo <= hi <= 1.0
    if method in ("wilson", "clopper_pearson"):  # score/exact test inversions contain x/n
        assert lo <= x / n <= hi
    if method in ("wilson", "jeffreys", "clopper_pearson", "agresti_coull"):
        assert hi > lo  # never collapses, even at 0 or n successes


@pytest.mark.parametrize("method", PROPORTION_METHODS)
@pytest.mark.parametrize("x, n", [(0, 1), (1, 1), (0, 10**9), (10**9, 10**9), (1, 10**9)])
def test_extreme_counts(method: str, x: int, n: int) -> None:
    lo, hi = proportion_ci(x, n, method=method)
    assert 0.0 <= lo <= hi <= 1.0 and np.isfinite(lo) and np.isfinite(hi)


@settings(max_examples=40, deadline=None)
@given(s=st.integers(min_value=-1000, max_value=-1), n=st.integers(min_value=0, max_value=1000))
def test_negative_successes_rejected(s: int, n: int) -> None:
    with pytest.raises(ValueError, match="successes"):
        proportion_ci(s, n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=0, max_value=1000), extra=st.integers(min_value=1, max_value=100))
def test_successes_above_trials_rejected(n: int, extra: int) -> None:
    with pytest.raises(ValueError, match="successes must not exceed trials"):
        proportion_ci(n + extra, n)


@settings(max_examples=40, deadline=None)
@given(level=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(float("nan"))))
def test_level_outside_unit_interval_rejected(level: float) -> None:
    with pytest.raises(ValueError, match="level"):
        proportion_ci(3, 10, level=level)


@settings(max_examples=30, deadline=None)
@given(
    method=st.text(min_size=1, max_size=12).filter(
        lambda m: (
            m.lower().replace("-", "_")
            not in set(PROPORTION_METHODS) | {"normal", "beta", "exact", "score", "cp", "ac"}
        )
    )
)
def test_unknown_method_rejected(method: str) -> None:
    with pytest.raises(ValueError, match="method"):
        proportion_ci(3, 10, method=method)


@pytest.mark.parametrize(
    "successes, trials, exc, word",
    [
        (np.nan, 10, ValueError, "successes"),
        (3, np.nan, ValueError, "trials"),
        ([], [], ValueError, "empty"),
        ([1, 2, 3], [10, 10], ValueError, "mismatched"),
        (2.5, 10, ValueError, "whole"),
        ("3", 10, TypeError, "successes"),
        (3, 10, TypeError, "level"),  # level given as a string below
    ],
)
def test_bad_inputs_name_the_argument(successes, trials, exc, word) -> None:
    with pytest.raises(exc, match=word):
        if word == "level":
            proportion_ci(successes, trials, level="95%")
        else:
            proportion_ci(successes, trials)


def test_method_type_error() -> None:
    with pytest.raises(TypeError, match="method"):
        proportion_ci(3, 10, method=None)


def test_f1_matches_sklearn() -> None:
    from sklearn.metrics import f1_score as sk_f1

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 500)
    p = np.where(rng.random(500) < 0.7, y, 1 - y)
    assert f1_score(y, p) == pytest.approx(sk_f1(y, p), abs=1e-12)
    assert f1_score(y, p, pos_label=0) == pytest.approx(sk_f1(y, p, pos_label=0), abs=1e-12)


def test_bootstrap_unstratified_matches_scipy() -> None:
    # same statistic through scipy.stats.bootstrap directly with the same generator seed
    rng = np.random.default_rng(0)
    x = rng.exponential(size=80)
    ours = bootstrap_ci(x, "mean", n_resamples=2000, random_seed=5)
    ref = stats.bootstrap((x,), np.mean, n_resamples=2000, vectorized=True, paired=True, rng=np.random.default_rng(5))
    assert ours.lower == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.upper == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert ours.estimate == pytest.approx(x.mean())


def test_stratified_bca_reduces_to_scipy_bca_with_one_stratum() -> None:
    # one stratum: within-stratum resampling is ordinary resampling; with the same seed the
    # replicates are those of scipy.stats.bootstrap, so the BCa bounds must coincide.
    rng = np.random.default_rng(1)
    x = rng.exponential(size=60)
    a = bootstrap_ci(x, "mean", n_resamples=3000, random_seed=9)
    b = bootstrap_ci(x, "mean", strata=np.zeros(60), n_resamples=3000, random_seed=9)
    assert b.stratified and not a.stratified
    assert b.lower == pytest.approx(a.lower, rel=1e-9)
    assert b.upper == pytest.approx(a.upper, rel=1e-9)


def test_stratified_resampling_never_drops_a_stratum() -> None:
    # a stratum of 2 rows among 500: plain resampling loses it in ~2% of replicates
    n_small = 2
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500).astype(float)
    y[-2:] = [0.0, 1.0]
    strata = np.r_[np.zeros(498, int), np.ones(n_small, int)]
    seen = []

    def stat(values, groups):
        seen.append(np.bincount(groups, minlength=2))
        return values[groups == 1].mean()  # NaN if the small stratum vanished

    res = bootstrap_ci((y, strata), stat, strata=strata, n_resamples=2000, method="percentile", random_seed=0)
    counts = np.array(seen[1:])  # the first call is the statistic on the data
    assert counts.shape == (2000, 2)
    assert np.all(counts[:, 1] == n_small) and np.all(counts[:, 0] == 498)
    assert np.all(np.isfinite(res.distribution))


def test_weighted_risk_bootstrap_needs_strata_and_weights() -> None:
    with pytest.raises(ValueError, match="strata"):
        bootstrap_ci(np.ones(5), "weighted_risk", weights=[1.0])
    with pytest.raises(ValueError, match="weights"):
        bootstrap_ci(np.ones(5), "weighted_risk", strata=np.zeros(5))
    with pytest.raises(ValueError, match="sum to 1"):
        bootstrap_ci(np.ones(4), "weighted_risk", strata=[0, 0, 1, 1], weights=[0.5, 0.6])


def test_bootstrap_bad_input() -> None:
    with pytest.raises(ValueError, match="mismatched lengths"):
        bootstrap_ci(([1, 0, 1], [1, 0]), "f1")
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci([1, 0, 1], "mean", method="basic")
    with pytest.raises(ValueError, match="strata"):
        bootstrap_ci([1, 0, 1], "mean", strata=[0, 1])
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([1, 0, 1], "mean", level=1.5)


def test_degenerate_bootstrap_warns() -> None:
    with pytest.warns(ZeroVarianceWarning, match="not certainty"):
        res = bootstrap_ci(
            np.zeros(50),
            "weighted_risk",
            strata=np.repeat([0, 1], 25),
            weights=[0.3, 0.7],
            n_resamples=200,
            random_seed=0,
        )
    assert res.lower == res.upper == 0.0


def test_bootstrap_interval_is_a_tuple_with_details() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = bootstrap_ci([0, 1, 1, 0, 1, 1, 1, 0], "mean", n_resamples=500, random_seed=1)
    lo, hi = res
    assert lo == res.lower and hi == res.upper and lo < res.estimate < hi
    assert res.distribution.shape == (500,)
    assert res.se == pytest.approx(np.std(res.distribution, ddof=1))


def test_closed_form_jackknives_match_brute_force() -> None:
    from bayeseval.estimate.intervals import (
        _f1_jackknife,
        _jackknife,
        _mean_jackknife,
        _mean_statistic,
        _weighted_risk_jackknife,
        _weighted_risk_statistic,
    )

    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 300)
    p = np.where(rng.random(300) < 0.7, y, 1 - y)
    x = (y != p).astype(float)
    codes = rng.integers(0, 3, 300)
    w = np.array([0.2, 0.5, 0.3])

    def f1_stat(a, b, axis=-1):
        return f1_score(a, b, axis=axis)

    np.testing.assert_allclose(_mean_jackknife(x), _jackknife(_mean_statistic, [x], True), atol=1e-14)
    np.testing.assert_allclose(_f1_jackknife(1)(y, p), _jackknife(f1_stat, [y, p], True), atol=1e-14)
    np.testing.assert_allclose(
        _weighted_risk_jackknife(w)(x, codes),
        _jackknife(_weighted_risk_statistic(w), [x, codes], True),
        atol=1e-14,
    )


def test_large_n_bca_engine_matches_scipy() -> None:
    # above 5000 rows the built-in statistics use the internal engine with a closed-form
    # jackknife; with the same generator stream it must reproduce scipy.stats.bootstrap's BCa
    rng = np.random.default_rng(12)
    n = 6000
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.8, y, 1 - y)
    ours = bootstrap_ci((y, p), "f1", n_resamples=600, random_seed=3)
    ref = stats.bootstrap(
        (y, p),
        lambda a, b, axis=-1: f1_score(a, b, axis=axis),
        n_resamples=600,
        vectorized=True,
        paired=True,
        batch=2_000_000 // n,
        rng=np.random.default_rng(3),
    )
    assert not ours.stratified
    assert ours.lower == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.upper == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_counts_object_input() -> None:

    c = Counts.from_arrays([3, 0], [40, 12], strata=["a", "b"])
    lo, hi = proportion_ci(c, method="jeffreys")
    assert list(lo.index) == ["a", "b"] and lo["b"] == 0.0
    assert hi["a"] == pytest.approx(proportion_ci(3, 40, method="jeffreys")[1])
    with pytest.raises(TypeError, match="not both"):
        proportion_ci(c, [1, 2])
    with pytest.raises(TypeError, match="trials is required"):
        proportion_ci([1, 2])


def test_bools_where_counts_are_wanted_are_type_errors_naming_the_argument():
    with pytest.raises(TypeError, match=r"^n_resamples must be an integer >= 10, got True"):
        bootstrap_ci(np.arange(20.0), n_resamples=True)
    with pytest.raises(TypeError, match=r"^successes must be counts, not bools, got True"):
        proportion_ci(True, 10)
    with pytest.raises(TypeError, match=r"^trials must be counts, not bools"):
        proportion_ci([1, 2], np.array([True, True]))
    lo, hi = proportion_ci(1, 10, method="wilson")  # the count 1, as statsmodels reads it
    ref = proportion_confint(1, 10, method="wilson")
    assert np.allclose((lo, hi), ref)


def test_confidence_sequence_ends_are_where_the_mixture_reaches_one_over_alpha() -> None:
    for s, n, level in ((10, 100, 0.95), (3, 40, 0.9), (55, 60, 0.99)):
        lo, hi = confidence_sequence(s, n, level=level)
        assert isinstance(lo, float) and 0 < lo < s / n < hi < 1
        for end in (lo, hi):
            assert _mixture_value(end, s, n, 2.0) == pytest.approx(1 / (1 - level), rel=1e-6)


def test_confidence_sequence_containers_counts_and_empty_strata() -> None:
    s = pd.Series([0, 0, 9], index=["a", "b", "c"])
    n = pd.Series([20, 0, 30], index=["a", "b", "c"])
    with pytest.warns(EmptyStratumWarning, match="1 of 3"):
        lo, hi = confidence_sequence(s, n)
    assert list(lo.index) == ["a", "b", "c"] and lo.name == "lower" and hi.name == "upper"
    assert np.isnan(lo["b"]) and np.isnan(hi["b"]) and lo["a"] == 0.0
    a_lo, a_hi = confidence_sequence(np.array([0, 9]), np.array([20, 30]))
    assert isinstance(a_lo, np.ndarray)
    np.testing.assert_allclose(a_hi, hi[["a", "c"]].to_numpy(), rtol=1e-15)
    counts = Counts.from_arrays([0, 9], [20, 30])
    c_lo, c_hi = confidence_sequence(counts)
    np.testing.assert_allclose(np.asarray(c_lo), a_lo, rtol=1e-15)


def test_confidence_sequence_is_time_uniform_when_read_after_every_label() -> None:
    from bayeseval._kernels.sequential import sequential_outcome

    for p, planned in ((0.1, None), (0.35, 100)):
        memo: dict[int, np.ndarray] = {}  # the rule and the event are the same: one call per look

        def excludes(s, n, p=p, planned=planned, memo=memo):
            if n not in memo:
                lo, hi = confidence_sequence(s, np.full(s.shape, n), planned_trials=planned)
                memo[n] = (p < lo) | (p > hi)
            return memo[n]

        out = sequential_outcome(p, excludes, excludes, every=1, max_trials=100)
        assert 0.005 < out.event_probability <= 0.05  # the interval actually misses sometimes


def test_confidence_sequence_width_against_wilson() -> None:
    # expected width at a true rate of 0.1 over Binomial(n, 0.1), against Wilson's (statsmodels)
    for n, untuned, tuned in ((100, (1.55, 1.70), (1.45, 1.60)), (4000, (1.85, 2.0), (1.5, 1.6))):
        s = np.arange(n + 1)
        pmf = stats.binom.pmf(s, n, 0.1)
        w_lo, w_hi = proportion_confint(s, n, alpha=0.05, method="wilson")
        wilson = pmf @ (w_hi - w_lo)
        for planned, (low, high) in ((None, untuned), (n, tuned)):
            lo, hi = confidence_sequence(s, np.full(n + 1, n), planned_trials=planned)
            assert low < (pmf @ (hi - lo)) / wilson < high


def test_confidence_sequence_bad_input() -> None:
    with pytest.raises(ValueError, match="planned_trials must be an integer >= 1, got 0"):
        confidence_sequence(1, 10, planned_trials=0)
    with pytest.raises(TypeError, match="planned_trials"):
        confidence_sequence(1, 10, planned_trials="many")
    with pytest.raises(ValueError, match="level"):
        confidence_sequence(1, 10, level=1.5)
    with pytest.raises(ValueError, match="successes"):
        confidence_sequence(11, 10)
    with pytest.raises(TypeError, match="trials is required"):
        confidence_sequence(3)


@pytest.mark.parametrize("n", [1, 50, 10**6, 10**9])
def test_confidence_sequence_mirrors_at_extreme_counts(n: int) -> None:
    # the prior centred at p mirrors to the one centred at 1 - p: lower(s) = 1 - upper(n - s)
    s = np.unique(np.array([0, 1, 2, n // 3, n - 2, n - 1, n]).clip(0, n))
    lo, hi = confidence_sequence(s, np.full(s.shape, n))
    m_lo, m_hi = confidence_sequence(n - s, np.full(s.shape, n))
    np.testing.assert_allclose(lo, 1 - m_hi, rtol=0, atol=1e-12)
    assert np.all((lo <= s / n) & (s / n <= hi)) and np.all(hi - lo > 0)


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


def test_bootstrap_ci_bad_random_seed_names_random_seed():
    from bayeseval import bootstrap_ci

    assert_raises_naming(bootstrap_ci, "random_seed", [0, 1, 1, 0], n_resamples=50, random_seed="x")


def test_save_csv_reads_back(rep_report_flags_export, tmp_path):
    back = pd.read_csv(rep_report_flags_export.save(tmp_path / "r.csv"), keep_default_na=False)
    assert back["stratum"].tolist() == ["a_1", "b&c", "d%"]
    assert back["successes"].tolist() == [3, 5, 0] and back["trials"].tolist() == [40, 50, 30]
    lo, hi = proportion_ci([3, 5, 0], [40, 50, 30], method="adaptive")
    np.testing.assert_allclose(back["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(back["upper"], hi, rtol=1e-9)
    assert back["flags"].tolist() == rep_report_flags_export.table["flags"].tolist()


def test_save_tex_reads_back_with_escaped_names(rep_report_flags_export, tmp_path):
    text = rep_report_flags_export.save(tmp_path / "r.tex").read_text()
    assert text.count("\\begin{tabular}") == 2 and text.count("\\end{tabular}") == 2
    rows = [ln.removesuffix(" \\\\").split(" & ") for ln in text.splitlines() if ln.endswith(" \\\\")]
    header, body = rows[0], rows[1:4]
    assert [r[0] for r in body] == ["a\\_1", "b\\&c", "d\\%"]
    assert [int(r[header.index("successes")]) for r in body] == [3, 5, 0]
    lo, _ = proportion_ci([3, 5, 0], [40, 50, 30], method="adaptive")
    got = [float(r[header.index("lower")]) for r in body]
    np.testing.assert_allclose(got, np.round(lo, 4), atol=1e-12)
    assert rows[4] == ["estimand", "estimate", "lower", "upper"]
    assert rows[5][0] == "unweighted" and float(rows[5][1]) == pytest.approx(8 / 120, abs=5e-5)


def test_bootstrap_interval_keeps_tuple_unpacking_and_gets_a_table():
    data = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    ci = bayeseval.bootstrap_ci(data, np.mean, method="percentile", n_resamples=999, random_seed=0)
    lo, hi = ci
    assert isinstance(ci, tuple) and isinstance(ci, Result)
    row = ci.table.loc["statistic"]
    assert row["estimate"] == pytest.approx(0.7)
    assert (row["lower"], row["upper"]) == (lo, hi)
    assert row["n_resamples"] == ci.distribution.size
