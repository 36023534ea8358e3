"""The default fit's ``read`` interval does not hide a small outlier.

References: exact coverage by enumerating the outlier's own count with the binomial pmf
(SciPy); the adaptive interval through the public ``proportion_ci(method="adaptive")``;
Wilson from statsmodels. Figures measured by ``benchmarks/validate_default_fit.py``
(docs/validation.md 6d).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval import Counts, proportion_ci
from bayeseval.checks import compare_frequentist, conflict_check
from bayeseval.models import fit_hierarchical
from bayeseval.models.posterior import which_interval


def _alike(rng, k=12):
    n = rng.integers(50, 501, k)
    theta = rng.beta(8, 92, k)
    return rng.binomial(n, theta), n, theta


def _summary(s, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_hierarchical(s, n, random_seed=0, draws=50).summary(read=True)


def test_read_interval_covers_a_small_outlier_exactly_over_its_count():
    """One seeded set of 12 strata near 0.08; the outlier (20 trials, true 0.40) takes each
    count 0..20 in turn. Its read interval must cover 0.40 with probability >= 0.90 (the
    issue's target; 0.950 on average over 400 datasets), its pooled interval covers far
    less (0.317 on average)."""
    rng = np.random.default_rng(5)
    s0, n0, _ = _alike(rng)
    n_out, rate = 20, 0.40
    n = np.append(n0, n_out)
    pooled, read = np.zeros(n_out + 1, bool), np.zeros(n_out + 1, bool)
    for x in range(n_out + 1):
        row = _summary(np.append(s0, x), n).iloc[-1]
        pooled[x] = row["lower"] <= rate <= row["upper"]
        read[x] = row["read_lower"] <= rate <= row["read_upper"]
    pmf = stats.binom.pmf(np.arange(n_out + 1), n_out, rate)
    assert pmf @ read >= 0.90
    assert pmf @ pooled <= 0.6


def test_read_columns_point_to_the_pooled_or_the_public_adaptive_interval():
    s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    t = _summary(s, n)
    assert t.columns[-4:].tolist() == ["read", "read_reason", "read_lower", "read_upper"]
    assert t["read"].tolist() == ["pooled"] * 6 + ["adaptive"]
    lo, hi = proportion_ci(s, n, method="adaptive")
    ad = (t["read"] == "adaptive").to_numpy()
    np.testing.assert_allclose(t["read_lower"][ad], lo[ad], rtol=0, atol=1e-12)
    np.testing.assert_allclose(t["read_upper"][ad], hi[ad], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(t["read_lower"][~ad], t["lower"][~ad])
    assert t.loc[6, "read_reason"].startswith("count above what the other strata predict (p = ")
    # the read interval at another level is the adaptive interval at that level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t90 = fit_hierarchical(s, n, random_seed=0, draws=50).summary(level=0.9, read=True)
    assert t90.loc[6, "read_upper"] == pytest.approx(proportion_ci(s, n, level=0.9, method="adaptive")[1][6])


def test_threshold_decides_not_clearly_typical_and_is_validated():
    # a count somewhat high for its stratum: p-value between 0.05 and 0.20 under the others
    s, n = [4, 6, 5, 3, 7, 4, 6], [50, 70, 60, 40, 80, 50, 30]
    check = conflict_check(s, n, control="per_stratum")
    p = check.table.loc[6, "p_value"]
    assert 0.05 < p <= 0.20
    read, why = which_interval(Counts.from_arrays(s, n))
    assert read[6] == "adaptive" and why[6].startswith("count not clearly typical")
    assert not check.table.loc[6, "flag"] and check.table.loc[6, "read"] == "adaptive"
    read0, _ = which_interval(Counts.from_arrays(s, n), threshold=0.0)
    assert read0[6] == "pooled"
    with pytest.raises(ValueError, match=r"threshold.*1\.5"):
        which_interval(Counts.from_arrays(s, n), threshold=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fit_hierarchical(s, n, random_seed=0, draws=50)
    with pytest.raises(ValueError, match=r"read_threshold.*-0\.1"):
        post.summary(read=True, read_threshold=-0.1)
    assert post.summary(read=True, read_threshold=0.0).loc[6, "read"] == "pooled"


def test_few_strata_and_empty_strata_read_pooled():
    t = _summary([3, 0], [10, 0])
    assert t["read"].tolist() == ["pooled", "pooled"]
    assert t.loc[0, "read_reason"] == "fewer than two strata to compare"
    np.testing.assert_array_equal(t["read_lower"], t["lower"])
    t = _summary([4, 6, 5, 0], [50, 70, 60, 0])
    assert t.loc[3, "read"] == "pooled" and t.loc[3, "read_reason"] == "no trials: pooled prediction"


def test_compare_frequentist_carries_the_read_and_adaptive_columns():
    s, n = np.array([4, 6, 5, 3, 7, 4, 9]), np.array([50, 70, 60, 40, 80, 50, 20])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fit_hierarchical(s, n, random_seed=0, draws=500)
        t = compare_frequentist(post, random_seed=0)
    summ = post.summary(read=True)
    for col in ("read", "read_reason", "read_lower", "read_upper"):
        assert t[col].tolist() == summ[col].tolist()
    lo, hi = proportion_ci(s, n, method="adaptive")
    np.testing.assert_array_equal(t["adaptive_lower"].to_numpy(), lo)
    np.testing.assert_array_equal(t["adaptive_upper"].to_numpy(), hi)
    wl, _ = proportion_confint(s, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose(t["wilson_lower"], wl, atol=1e-12)


def test_alike_strata_keep_most_of_the_width_gain_over_wilson():
    """Exchangeable strata (12 near 0.08 with 50-500 trials, 20 seeded datasets): the read
    interval's width relative to Wilson (statsmodels) stays below 0.95 on average (0.913 in
    the 400-dataset study, Monte Carlo SE per dataset about 0.06) and its coverage of the
    true rates is at least 0.90 (0.954 in the study)."""
    rng = np.random.default_rng(21)
    ratios, hits = [], []
    for _ in range(20):
        s, n, theta = _alike(rng)
        t = _summary(s, n)
        wl, wu = proportion_confint(s, n, alpha=0.05, method="wilson")
        ratios.append(np.mean((t["read_upper"] - t["read_lower"]).to_numpy() / (wu - wl)))
        hits.append(np.mean((t["read_lower"] <= theta) & (theta <= t["read_upper"])))
    assert np.mean(ratios) < 0.95
    assert np.mean(hits) >= 0.90
