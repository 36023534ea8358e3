"""``method="adaptive"`` wherever per-stratum frequentist intervals are offered.

The coverage reference is independent of the code under test: for a stratum whose prior
comes from the other strata only, the exact coverage at a true rate ``p`` is the binomial
pmf (SciPy) summed over the counts whose interval contains ``p``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayeseval as be
from bayeseval import proportion_ci
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval._kernels.adaptive import adaptive_interval

OTHERS_S = np.array([4, 6, 5, 3, 7, 4, 9, 5])
OTHERS_N = np.array([50, 70, 60, 40, 80, 50, 90, 60])


def _intervals_for_every_count(n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The last stratum's public adaptive interval for each of its counts 0..n."""
    lo, hi = np.empty(n + 1), np.empty(n + 1)
    trials = np.append(OTHERS_N, n)
    for x in range(n + 1):
        l_all, h_all = proportion_ci(np.append(OTHERS_S, x), trials, level=level, method="adaptive")
        lo[x], hi[x] = l_all[-1], h_all[-1]
    return lo, hi


def _exact_coverage(lo: np.ndarray, hi: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    pmf = stats.binom.pmf(np.arange(n + 1)[:, None], n, p[None, :])
    return (pmf * ((lo[:, None] <= p) & (p <= hi[:, None]))).sum(axis=0)


@pytest.mark.parametrize(("n", "level"), [(5, 0.95), (20, 0.95), (30, 0.90)])
def test_public_adaptive_interval_has_exact_coverage_at_every_rate(n, level):
    lo, hi = _intervals_for_every_count(n, level)
    ends = np.concatenate([lo, hi])
    grid = np.unique(np.clip(np.concatenate(
        [np.linspace(0, 1, 2001), ends, ends - 1e-9, ends + 1e-9]), 0, 1))
    cov = _exact_coverage(lo, hi, n, grid)
    assert cov.min() >= level - 1e-9
    # and it borrows: near the others' rate (about 0.08) it is shorter than Clopper-Pearson
    x = np.arange(n + 1)
    cp_lo, cp_hi = stats.beta.ppf((1 - level) / 2, x, n - x + 1), stats.beta.isf((1 - level) / 2, x + 1, n - x)
    cp_lo, cp_hi = np.nan_to_num(cp_lo, nan=0.0), np.nan_to_num(cp_hi, nan=1.0)
    pmf = stats.binom.pmf(x, n, 0.08)
    assert pmf @ (hi - lo) < pmf @ (cp_hi - cp_lo)


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


def test_stratified_and_gate_offer_the_adaptive_interval():
    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    ref = adaptive_interval(s, n)
    res = be.stratified_risk(s, n, [1 / 7] * 7, method="adaptive")
    np.testing.assert_array_equal(res.table["lower"].to_numpy(), ref.lower)
    np.testing.assert_array_equal(res.table["upper"].to_numpy(), ref.upper)
    assert res.method == "adaptive"
    # the population interval is the normal one, unaffected by the per-stratum method
    wil = be.stratified_risk(s, n, [1 / 7] * 7)
    assert res.ci == pytest.approx(wil.ci)
    from bayeseval.report.gates import gate

    g = gate(be.Counts.from_arrays(s, n), max_halfwidth=0.2, method="adaptive")
    np.testing.assert_allclose(g.table["halfwidth"].to_numpy(), (ref.upper - ref.lower) / 2)
    assert g.failing.index.tolist() == [6]  # half-width 0.25 for 9 of 20


def test_stratified_adaptive_errors_name_the_method():
    with pytest.raises(ValueError, match=r"method='adaptive'.*two strata with trials.*got 1"), \
            pytest.warns(EmptyStratumWarning):
        be.stratified_risk([3, 0], [10, 0], {0: 1.0, 1: 0.0}, method="adaptive")
    with pytest.raises(ValueError, match=r"method='adaptive'.*clustered rows"):
        be.clustered_risk([1, 0, 1, 0], cluster=[0, 0, 1, 1], method="adaptive")


def test_calibration_study_offers_the_adaptive_and_read_intervals():
    from bayeseval.checks import calibration_study

    with pytest.raises(ValueError, match=r"unknown methods 'fab'.*'adaptive', 'read'"):
        calibration_study(("exchangeable",), n_repeats=2, methods=("fab",))
