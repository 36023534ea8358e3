"""Leave-one-out conflict check: p-values against scipy, Holm against statsmodels,
power and false-flag rates by seeded simulation with stated tolerances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats
from statsmodels.stats.multitest import multipletests

from bayeseval._kernels.betabinom import betabinom_log_tails
from bayeseval._kernels.conflict import flag_power, holm_flags, loo_conflict, predictive_p_values
from bayeseval._kernels.loo_prior import loo_beta_mixture


@pytest.mark.parametrize("y", [0, 1, 3, 9, 20])
def test_p_values_match_scipy_betabinom(y):
    n, a, b = 20, 8.0, 92.0
    below, above, at = (
        stats.betabinom.cdf(y, n, a, b),
        stats.betabinom.sf(y - 1, n, a, b),
        stats.betabinom.pmf(y, n, a, b),
    )
    p, mean, lo, hi = predictive_p_values([y], [n], [[1.0]], [a], [b], p_value="doubled")
    assert lo[0] == pytest.approx(below, rel=1e-9)
    assert hi[0] == pytest.approx(above, rel=1e-9)
    assert mean[0] == pytest.approx(stats.betabinom.mean(n, a, b), rel=1e-9)
    assert p[0] == pytest.approx(min(1.0, 2 * min(below, above)), rel=1e-9)
    mid, *_ = predictive_p_values([y], [n], [[1.0]], [a], [b], p_value="mid_p")
    assert mid[0] == pytest.approx(min(1.0, 2 * min(below - at, above - at) + at), rel=1e-9)


def test_p_values_of_a_mixture_match_scipy():
    n, y = 30, 11
    w, a, b = np.array([0.2, 0.8]), np.array([2.0, 40.0]), np.array([18.0, 360.0])
    above = sum(wi * stats.betabinom.sf(y - 1, n, ai, bi) for wi, ai, bi in zip(w, a, b, strict=True))
    p, *_ = predictive_p_values([y], [n], w[None, :], a, b, p_value="doubled")
    assert p[0] == pytest.approx(2 * above, rel=1e-8)


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        p = rng.uniform(0, 0.2, rng.integers(2, 30)) ** 2
        expect = multipletests(p, alpha=0.05, method="holm")[0]
        np.testing.assert_array_equal(holm_flags(p, 0.05), expect)


def _datasets(rng, repeats, outlier):
    for _ in range(repeats):
        m = int(rng.integers(10, 21))
        n = rng.integers(50, 501, m)
        rates = rng.beta(80, 920, m)  # strata "near 0.08" (sd about 0.009)
        if outlier:
            n[0], rates[0] = 20, 0.40
        else:
            n[0] = rng.integers(10, 31)
        yield rng.binomial(n, rates), n


def _rates(repeats, seed):
    rng = np.random.default_rng(seed)
    power = np.mean([loo_conflict(s, n).flagged[0] for s, n in _datasets(rng, repeats, True)])
    null = [loo_conflict(s, n).flagged for s, n in _datasets(rng, repeats, False)]
    per_dataset = np.mean([f.any() for f in null])
    return power, per_dataset


def test_power_and_false_flags_short():
    # 25 datasets per scenario. Long-run values (benchmarks/validate_adaptive.py, 400
    # datasets): power 0.71, per-dataset false-flag rate 0.003. Tolerance: a binomial
    # 99% band for 25 trials (about 2.6 standard errors) around the targets 0.7 / 0.05.
    power, per_dataset = _rates(25, seed=11)
    assert power >= 0.70 - 2.6 * np.sqrt(0.70 * 0.30 / 25)
    assert per_dataset <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / 25)


@pytest.mark.slow
def test_power_and_false_flags_long():
    # 300 datasets per scenario: power target 0.7 (standard error about 0.025 at 0.76),
    # per-dataset false-flag target 0.05 (standard error about 0.013 at 0.05).
    power, per_dataset = _rates(300, seed=12)
    assert power >= 0.70
    assert per_dataset <= 0.05


def test_flagged_stratum_is_far_in_its_loo_predictive():
    # a stratum flagged by Holm has a p-value below alpha / m by construction; check the
    # p-value itself against scipy for the outlier with the LOO mixture from the others
    s = np.array([4, 6, 5, 3, 7, 4, 12])
    n = np.array([50, 70, 60, 40, 80, 50, 20])
    check = loo_conflict(s, n)
    w, a, b = loo_beta_mixture(s, n)
    keep = w[-1] > 0
    above = sum(
        wi * stats.betabinom.sf(12, 20, ai, bi)
        for wi, ai, bi in zip(w[-1][keep], a[-1][keep], b[-1][keep], strict=True)
    )
    at = sum(
        wi * stats.betabinom.pmf(12, 20, ai, bi)
        for wi, ai, bi in zip(w[-1][keep], a[-1][keep], b[-1][keep], strict=True)
    )
    expect = min(1.0, 2 * above + at)
    # the predictive drops mixture components holding 1e-6 of the weight in total
    assert check.p_value[-1] == pytest.approx(expect, rel=0, abs=2e-6)
    assert check.flagged[-1] == (expect <= 0.05 / 7)
    assert not check.flagged[:-1].any()


def test_zero_trial_stratum_is_never_flagged_and_has_p_one():
    check = loo_conflict([4, 0, 5, 30], [50, 0, 60, 50], control="per_stratum")
    assert check.p_value[1] == 1.0 and not check.flagged[1]


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"alpha": 1.5}, ValueError, ["alpha", "1.5"]),
        ({"alpha": 0.0}, ValueError, ["alpha", "0.0"]),
        ({"control": "bonf"}, ValueError, ["control", "'bonf'", "holm"]),
        ({"p_value": "exact"}, ValueError, ["p_value", "'exact'", "mid_p"]),
        ({"successes": [3, 40]}, ValueError, ["successes", "40"]),
        ({"trials": [10, 0]}, ValueError, ["trials", "[10, 0]"]),
    ],
)
def test_validation_names_argument_and_value(kwargs, exc, words):
    args = {"successes": [3, 0], "trials": [10, 10]}
    args.update(kwargs)
    with pytest.raises(exc) as info:
        loo_conflict(**args)
    for word in words:
        assert word in str(info.value)


def _scipy_log_side(lo, hi, n, a, b):
    """log of the Beta-binomial probability of counts lo..hi-1 (SciPy's pmf, summed in logs)."""
    return special.logsumexp(stats.betabinom.logpmf(np.arange(lo, hi), n, a, b))


@pytest.mark.parametrize(
    ("n", "s", "a", "b"),
    [
        (10**5, 10_000, 2e3, 8e3),  # far in the lower tail: P(Y < s) ~ exp(-85)
        (10**5, 22_000, 20.0, 80.0),  # in the bulk of a broad component (quadrature)
        (10**5, 2_000, 20.0, 80.0),  # in the tail of a broad component: P(Y < s) ~ exp(-32)
        (10**6, 150_000, 0.5, 1.5),  # a U-shaped component (quadrature)
        (10**6, 40, 3.0, 50.0),  # near the lower edge (summed)
        (10**6, 100_000, 2e4, 8e4),  # P(Y < s) ~ exp(-3950): below the smallest double
        (10**6, 3, 0.3, 0.6),  # U-shaped component, count at the edge
        # ten million trials (SciPy's reference pmf takes seconds there)
        pytest.param(10**7, 1_500_000, 2e3, 8e3, marks=pytest.mark.slow),  # exp(-94)
        pytest.param(10**7, 9_999_990, 3.0, 0.2, marks=pytest.mark.slow),  # upper edge
    ],
)
def test_log_tails_match_scipy_betabinom_at_large_trials(n, s, a, b):
    lower, at, upper = betabinom_log_tails(s, n, a, b)
    assert at == pytest.approx(stats.betabinom.logpmf(s, n, a, b), abs=1e-7)
    # the far side summed from SciPy's pmf; the other side from SciPy's pmf as well
    ref_lower = _scipy_log_side(0, s, n, a, b)
    ref_upper = _scipy_log_side(s + 1, n + 1, n, a, b)
    # relative 1e-6 on the probabilities (SciPy's log pmf itself is good to ~1e-8 at 1e7)
    assert lower == pytest.approx(ref_lower, abs=1e-6)
    assert upper == pytest.approx(ref_upper, abs=1e-6)


def _outlier(trials, rate, outlier_rate, strata=10):
    n = np.full(strata, trials)
    s = np.round(n * rate).astype(int)
    s[-1] = round(trials * outlier_rate)
    return s, n


def test_outlier_flagged_beyond_20000_trials_with_p_falling():
    # nine strata at 0.20 and one at 0.10: the p-value keeps falling past 20,000 trials,
    # below the smallest double at a million (its log still falls)
    checks = [loo_conflict(*_outlier(t, 0.2, 0.1)) for t in (20_000, 50_000, 10**6)]
    for c in checks:
        assert c.flagged.tolist() == [False] * 9 + [True]
        assert c.p_value[:9].min() > 0.5 and c.p_above[-1] > 1.0 - 1e-12
        np.testing.assert_allclose(np.exp(c.log_p_value), c.p_value, rtol=1e-12, atol=0.0)
    logs = [c.log_p_value[-1] for c in checks]
    assert logs[0] < np.log(1e-12) and logs[0] > logs[1] > logs[2] > -np.inf
    # the binomial tail of 100,000 of 1e6 at 0.2 is exp(-44,000): a wider predictive
    # (unknown concentration) must not be sharper than the pooled binomial
    assert logs[2] > stats.binom.logcdf(100_000, 10**6, 0.2)


def test_outliers_flagged_at_a_million_trials():
    high = loo_conflict(*_outlier(10**6, 0.2, 0.1))
    assert high.flagged.tolist() == [False] * 9 + [True] and high.log_p_value[-1] < np.log(1e-300)
    # another member: a low outlier at 0.01 among strata at 0.05
    low = loo_conflict(*_outlier(10**6, 0.05, 0.01))
    assert low.flagged.tolist() == [False] * 9 + [True] and low.log_p_value[-1] < np.log(1e-40)
    assert low.p_below[-1] < 1e-40 and low.p_above[-1] > 1.0 - 1e-12
    assert low.log_p_value[-1] < loo_conflict(*_outlier(10**5, 0.05, 0.01)).log_p_value[-1]


def test_low_outlier_flagged_at_100000_trials():
    # a low outlier at 0.01 among strata at 0.05; its lower tail is ~1e-27 (exp(-61))
    s, n = _outlier(10**5, 0.05, 0.01)
    check = loo_conflict(s, n)
    assert check.flagged.tolist() == [False] * 9 + [True]
    assert 0.0 < check.p_value[-1] < 1e-20
    # the mid-p value is twice the lower tail plus the point mass
    w, a, b = loo_beta_mixture(s, n)
    p, *_ = predictive_p_values(s, n, w, a, b)
    assert p[-1] == pytest.approx(check.p_value[-1], rel=1e-12)


@pytest.mark.slow  # the reference pmfs take seconds
@pytest.mark.parametrize("p_value", ["mid_p", "doubled"])
def test_flag_power_beyond_20000_trials_matches_enumeration(p_value):
    # 25,000 trials: the two ends of the flagged counts by bisection against enumerating
    # every count's p-value from the predictive pmf; the power from SciPy's binomial pmf
    from bayeseval._kernels.betabinom import beta_mixture_predictive

    s, n = _outlier(25_000, 0.2, 0.17, strata=4)
    s = s + np.array([40, -60, 25, 0])  # some spread among the others
    w, a, b = loo_beta_mixture(s, n)
    rates = np.array([0.15, 0.17, 0.19, 0.2, 0.21, 0.25])
    got = flag_power(s[2:], n[2:], np.tile(rates, (2, 1)), p_value=p_value,
                     mixture=(w[2:], a[2:], b[2:]))
    for j, i in enumerate((2, 3)):
        pmf = beta_mixture_predictive(int(n[i]), w[i], a[i], b[i])
        below, above = np.cumsum(pmf), np.cumsum(pmf[::-1])[::-1]
        if p_value == "doubled":
            p = np.minimum(1.0, 2.0 * np.minimum(below, above))
        else:
            p = np.minimum(1.0, 2.0 * np.minimum(below - pmf, above - pmf) + pmf)
        flagged = np.flatnonzero(p <= 0.05)
        ref = stats.binom.pmf(flagged[:, None], int(n[i]), rates[None, :]).sum(axis=0)
        np.testing.assert_allclose(got[j], ref, atol=1e-9)
    # rates far from the others' are flagged more often than rates near them
    assert got[1, 0] > 0.5 > 0.01 > got[1, 3] and got[1, 5] > 0.5


def test_adaptive_bounds_of_every_stratum_equal_proportion_ci_adaptive():
    from bayeseval import proportion_ci
    from bayeseval._kernels.conflict import adaptive_bounds

    s, n = [4, 6, 5, 3, 7, 4, 9, 4, 0], [50, 70, 60, 40, 80, 50, 20, 50, 0]
    lo, hi = adaptive_bounds(s, n, 0.9)
    with pytest.warns(Warning):  # the empty stratum
        ref_lo, ref_hi = proportion_ci(s, n, level=0.9, method="adaptive")
    np.testing.assert_array_equal(lo[:8], ref_lo[:8])
    np.testing.assert_array_equal(hi[:8], ref_hi[:8])
    assert np.isnan(lo[8]) and np.isnan(hi[8])
    with pytest.raises(ValueError, match=r"two strata with trials, got trials \[40, 0\]"):
        adaptive_bounds([3, 0], [40, 0], 0.95)
