"""Tests for bayeseval.estimate.intervals: proportion_ci, confidence_sequence, proportion_se, bootstrap_ci."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval import Counts, EmptyStratumWarning, ZeroVarianceWarning
from bayeseval.estimate.intervals import (
    PROPORTION_METHODS,
    bootstrap_ci,
    confidence_sequence,
    f1_score,
    proportion_ci,
    proportion_se,
)

# our name -> statsmodels' name
SM_NAMES = {
    "wald": "normal",
    "wilson": "wilson",
    "agresti_coull": "agresti_coull",
    "clopper_pearson": "beta",
    "jeffreys": "jeffreys",
}


def _grid() -> tuple[np.ndarray, np.ndarray]:
    xs, ns = [], []
    for n in (1, 2, 5, 10, 17, 50, 100, 1000, 12345):
        for x in sorted({0, 1, 2, n // 3, n // 2, n - 2, n - 1, n}):
            if 0 <= x <= n:
                xs.append(x)
                ns.append(n)
    return np.array(xs), np.array(ns)


# -- agreement with statsmodels ---------------------------------------------------------------


@pytest.mark.parametrize("method", PROPORTION_METHODS)
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_bounds_match_statsmodels(method: str, level: float) -> None:
    x, n = _grid()
    lo, hi = proportion_ci(x, n, level=level, method=method)
    # reference: statsmodels.stats.proportion.proportion_confint(x, n, alpha, method)
    ref_lo, ref_hi = proportion_confint(x, n, alpha=1 - level, method=SM_NAMES[method])
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


# -- exact coverage ---------------------------------------------------------------------------


def _coverage(n: int, ps: np.ndarray, method: str) -> np.ndarray:
    """Exact coverage: sum over x of Binomial(n, p) pmf where the interval covers p."""
    x = np.arange(n + 1)
    lo, hi = proportion_ci(x, n, method=method)
    covers = (lo[None, :] <= ps[:, None]) & (ps[:, None] <= hi[None, :])
    pmf = stats.binom.pmf(x[None, :], n, ps[:, None])
    return np.sum(pmf * covers, axis=1)


def test_exact_coverage_enumeration() -> None:
    ps = np.linspace(0.05, 0.95, 181)
    for n in (10, 20, 50, 100):
        cp = _coverage(n, ps, "clopper_pearson")
        assert cp.min() >= 0.95, (n, cp.min())
        for method in ("wilson", "jeffreys"):
            cov = _coverage(n, ps, method)
            assert 0.94 <= cov.mean() <= 0.96, (n, method, cov.mean())
    wald10 = _coverage(10, ps, "wald")
    assert wald10.mean() < 0.93  # Wald undercovers at n = 10 (mean about 0.85)
    assert wald10.min() < 0.7


# -- worked standard errors via proportion_se (closed form r(1 - r)/n) ---------------------------


def test_spec_accuracy_figures() -> None:
    # accuracy 0.9 -> n=100 SE 0.030 (half-width about 0.059); n=1000 SE 0.0095
    # (half-width 0.019); n=10000 half-width 0.006
    z = stats.norm.isf(0.025)
    se100 = proportion_se(90, 100)
    assert round(se100, 3) == 0.030 and round(z * se100, 3) == 0.059
    se1000 = proportion_se(900, 1000)
    assert round(se1000, 4) == 0.0095 and round(z * se1000, 3) == 0.019
    assert round(z * proportion_se(9000, 10000), 3) == 0.006


@pytest.mark.parametrize(
    "n_pos, se, half_pct",
    [(2000, 0.0102, 2.0), (500, 0.0205, 4.0), (200, 0.0324, 6.4), (80, 0.0512, 10.0), (40, 0.0725, 14.2)],
)
def test_spec_recall_table(n_pos: int, se: float, half_pct: float) -> None:
    # recall 0.70 with n+ positives
    got = proportion_se(round(0.7 * n_pos), n_pos)
    assert round(got, 4) == se
    assert round(100 * stats.norm.isf(0.025) * got, 1) == half_pct


def test_proportion_se_zero_variance_warning() -> None:
    with pytest.warns(ZeroVarianceWarning, match="not certainty"):
        se = proportion_se([0, 5], [10, 10])
    assert se[0] == 0.0 and se[1] == pytest.approx(np.sqrt(0.25 / 10))


# -- bad and extreme input (hypothesis) -------------------------------------------------------


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
@given(method=st.text(min_size=1, max_size=12).filter(
    lambda m: m.lower().replace("-", "_") not in set(PROPORTION_METHODS) | {"normal", "beta", "exact", "score", "cp", "ac"}
))
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


# -- bootstrap --------------------------------------------------------------------------------


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
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=2000, vectorized=True, paired=True, rng=np.random.default_rng(5)
    )
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
        res = bootstrap_ci(np.zeros(50), "weighted_risk", strata=np.repeat([0, 1], 25),
                           weights=[0.3, 0.7], n_resamples=200, random_seed=0)
    assert res.lower == res.upper == 0.0


def _weighted_risk_coverage(seed: int, reps: int) -> dict[str, float]:
    """Coverage of stratified percentile and BCa bootstrap intervals (999 resamples) of the
    weighted risk for pi = (0.8, 0.2), n = (286, 114), r = (0.09, 0.2275), true R = 0.1175."""
    rng = np.random.default_rng(seed)
    weights = {"a": 0.8, "b": 0.2}
    strata = np.r_[np.repeat("a", 286), np.repeat("b", 114)]
    truth = 0.8 * 0.09 + 0.2 * 0.2275
    hits = {"percentile": 0, "bca": 0}
    for i in range(reps):
        errors = np.r_[rng.random(286) < 0.09, rng.random(114) < 0.2275].astype(float)
        for method in hits:
            lo, hi = bootstrap_ci(errors, "weighted_risk", strata=strata, weights=weights,
                                  method=method, n_resamples=999, random_seed=i)
            hits[method] += lo <= truth <= hi
    return {method: h / reps for method, h in hits.items()}


def test_weighted_risk_bootstrap_coverage() -> None:
    # seeded simulation: pi = (0.8, 0.2), n = (286, 114), r = (0.09, 0.2275);
    # true R = 0.1175. 200 replications of a stratified percentile and BCa bootstrap
    # (999 resamples). Binomial sd of a 0.95 coverage estimate over 200 runs is 0.015;
    # accept [0.90, 0.99].
    for method, coverage in _weighted_risk_coverage(seed=2024, reps=200).items():
        assert 0.90 <= coverage <= 0.99, (method, coverage)


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
        (y, p), lambda a, b, axis=-1: f1_score(a, b, axis=axis), n_resamples=600, vectorized=True,
        paired=True, batch=2_000_000 // n, rng=np.random.default_rng(3),
    )
    assert not ours.stratified
    assert ours.lower == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.upper == pytest.approx(ref.confidence_interval.high, abs=1e-12)


@pytest.mark.slow
def test_weighted_risk_bootstrap_coverage_long() -> None:
    # As above with 1000 replications (binomial sd 0.007). Measured: percentile 0.941,
    # BCa 0.950; the normal interval of stratified_risk gives 0.938 on the same draws.
    for method, coverage in _weighted_risk_coverage(seed=99, reps=1000).items():
        assert 0.925 <= coverage <= 0.97, (method, coverage)


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


# -- confidence_sequence ----------------------------------------------------------------------
def _mixture_value(p: float, s: int, n: int, c: float) -> float:
    """M_n(p) by quadrature of its defining integral (prior Beta(c p, c (1 - p)))."""
    from scipy import integrate

    dens = stats.beta(c * p, c * (1 - p)).pdf
    num = integrate.quad(lambda q: (q / p) ** s * ((1 - q) / (1 - p)) ** (n - s) * dens(q), 0, 1,
                         epsabs=0, epsrel=1e-10, limit=200)[0]
    return num


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
