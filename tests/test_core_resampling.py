"""The shared bootstrap kernel (bayeseval._kernels.resampling) and the two public functions on it.

References: scipy.stats.bootstrap on the same replicates (same generator stream), closed forms
of the jackknife acceleration, exact stratum sizes, and a seeded coverage simulation.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval import BayesevalWarning, ZeroVarianceWarning, bootstrap_ci, paired_bootstrap
from bayeseval._kernels import resampling as rs
from bayeseval.estimate.compare import mcnemar, mcnemar_from_predictions
from bayeseval.estimate.intervals import f1_score

TOL = 1e-12


def _scipy_ci(data, statistic, *, method, level=0.95, n_resamples, seed, paired=True, batch=None):
    res = stats.bootstrap(
        data, statistic, n_resamples=n_resamples, vectorized=True, paired=paired, batch=batch,
        confidence_level=level, method=method, rng=np.random.default_rng(seed),
    )
    return res.confidence_interval.low, res.confidence_interval.high, res.bootstrap_distribution


# -- intervals equal SciPy's on the same replicates -------------------------------------------------


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
    ours = bootstrap_ci(x[order], "weighted_risk", strata=labels[order], weights=dict(zip("abc", w, strict=True)),
                        method=method, n_resamples=2000, random_seed=8)
    samples = tuple(x[order][labels[order] == k] for k in "abc")

    def risk(*s, axis=-1):
        return sum(wk * np.mean(sk, axis=axis) for wk, sk in zip(w, s, strict=True))

    lo, hi, _ = _scipy_ci(samples, risk, method=scipy_method, n_resamples=2000, seed=8, paired=False)
    assert ours.lower == pytest.approx(lo, abs=TOL) and ours.upper == pytest.approx(hi, abs=TOL)


def test_kernel_interval_formula_on_scipy_replicates():
    # identical replicate arrays: the kernel's percentile and BCa levels are SciPy's formulas
    rng = np.random.default_rng(7)
    x = rng.gamma(0.7, size=45)
    res = stats.bootstrap((x,), np.std, n_resamples=4000, method="BCa", rng=np.random.default_rng(3))
    reps = res.bootstrap_distribution[:, None]

    def jack():
        return rs.jackknife_values(lambda idx: np.std(x[idx], axis=1), np.zeros(x.size, int))

    (lo,), (hi,) = rs.confidence_interval(reps, [np.std(x)], level=0.95, method="bca", jackknife=jack)
    assert lo == pytest.approx(res.confidence_interval.low, abs=TOL)
    assert hi == pytest.approx(res.confidence_interval.high, abs=TOL)
    (lo,), (hi,) = rs.confidence_interval(reps, [np.std(x)], level=0.8, method="percentile")
    np.testing.assert_allclose([lo, hi], np.quantile(reps[:, 0], [0.1, 0.9]), atol=TOL)


def test_paired_callable_metric_equals_scipy():
    # a callable metric is resampled by rows: model A's interval is SciPy's bootstrap of A's
    # per-row correctness and the difference's that of (correct_a, correct_b), same stream
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 120)
    a = np.where(rng.random(120) < 0.2, 1 - y, y)
    b = np.where(rng.random(120) < 0.3, 1 - y, y)
    ca, cb = (a == y).astype(float), (b == y).astype(float)

    def accuracy(t, p):
        return np.mean(t == p)

    res = paired_bootstrap(y, a, b, metric=accuracy, n_resamples=1000, random_seed=4)
    lo, hi, _ = _scipy_ci((ca,), np.mean, method="BCa", n_resamples=1000, seed=4)
    assert res.ci_a == pytest.approx((lo, hi), abs=TOL)
    lo, hi, _ = _scipy_ci((ca, cb), lambda u, v, axis=-1: np.mean(u, axis) - np.mean(v, axis),
                          method="BCa", n_resamples=1000, seed=4)
    assert res.ci == pytest.approx((lo, hi), abs=TOL)


# -- resampling keeps every stratum's size; batches do not change the replicates ---------------------


def test_stratified_indices_keep_every_stratum_size_exactly():
    codes = np.repeat([2, 0, 1], [7, 1, 30])[np.random.default_rng(0).permutation(38)]
    layout = rs.stratum_layout(codes, codes.size)
    batches = list(rs.resample_indices(layout, 500, np.random.default_rng(1), max_cells=38 * 64))
    assert len(batches) == 8  # 64 replicates per batch
    idx = np.concatenate(batches)
    assert idx.shape == (500, 38)
    drawn = codes[idx]
    for k, (start, size) in enumerate(zip(layout.starts, layout.sizes, strict=True)):
        assert np.all(drawn[:, start:start + size] == k)
        assert np.all(np.sum(drawn == k, axis=1) == np.sum(codes == k))


def test_batches_do_not_change_the_replicates():
    # one stratum: the stream of draws does not depend on the batch size (as in SciPy)
    layout = rs.stratum_layout(None, 63)
    small = np.concatenate(list(rs.resample_indices(layout, 300, np.random.default_rng(3), max_cells=100)))
    whole = np.concatenate(list(rs.resample_indices(layout, 300, np.random.default_rng(3))))
    np.testing.assert_array_equal(small, whole)
    x = np.random.default_rng(2).normal(size=63)
    jk_small = rs.jackknife_values(lambda i: x[i].mean(axis=1), layout.codes, max_cells=70)
    jk_whole = rs.jackknife_values(lambda i: x[i].mean(axis=1), layout.codes)
    np.testing.assert_allclose(jk_small.values, jk_whole.values, atol=TOL)
    np.testing.assert_allclose(jk_whole.values[:, 0], (x.sum() - x) / 62, atol=TOL)


def test_count_resampling_keeps_stratum_sizes_and_shares():
    counts = np.array([[5.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
    reps = rs.resample_counts(lambda c: c.reshape(len(c), -1), counts, 4000, np.random.default_rng(0),
                              max_cells=600)
    draws = reps.reshape(4000, 2, 3)
    assert np.all(draws.sum(axis=2) == counts.sum(axis=1))
    assert np.all(draws[:, 0, 1] == 0) and np.all(draws[:, 1, 2] == 0)
    # multinomial means n_s * share: 3/8 of 8 rows in cell (0, 2); SE of the mean ~0.022
    assert draws[:, 0, 2].mean() == pytest.approx(3.0, abs=0.1)


# -- jackknife acceleration against closed forms ------------------------------------------------------


def test_acceleration_of_the_mean_closed_form():
    # theta_(i) = (sum x - x_i) / (n - 1), so a = sum (x_i - m)^3 / (6 (sum (x_i - m)^2)^1.5)
    x = np.array([0.2, 1.5, 0.1, 3.0, 0.7, 0.0])
    d = x - x.mean()
    closed = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    jk = rs.jackknife_values(lambda idx: x[idx].mean(axis=1), np.zeros(x.size, int))
    assert rs.acceleration(jk)[0] == pytest.approx(closed, abs=TOL)


def test_stratified_acceleration_closed_form():
    # weighted mean of stratum means: U_i = w_j (x_i - m_j), so
    # a = sum_j w_j^3 sum_i (x_i - m_j)^3 / n_j^3 / (6 (sum_j w_j^2 sum_i (x_i - m_j)^2 / n_j^2)^1.5)
    x = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 2.5])
    codes = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    w = np.array([0.7, 0.3])
    num = den = 0.0
    for j in range(2):
        xj = x[codes == j]
        dj = xj - xj.mean()
        num += w[j] ** 3 * np.sum(dj**3) / xj.size**3
        den += w[j] ** 2 * np.sum(dj**2) / xj.size**2
    closed = num / (6 * den**1.5)

    def risk(idx):
        c = codes[idx]
        return sum(w[j] * np.sum(np.where(c == j, x[idx], 0), axis=1) / np.sum(c == j, axis=1) for j in range(2))

    assert rs.acceleration(rs.jackknife_values(risk, codes))[0] == pytest.approx(closed, abs=TOL)


def test_cell_jackknife_equals_row_jackknife():
    # identical rows share one jackknife value: weighting each cell by its count gives the
    # acceleration of the delete-one jackknife over the rows
    counts = np.array([[4.0, 2.0, 0.0, 1.0], [3.0, 0.0, 5.0, 2.0]])
    value = np.array([0.0, 1.0, 2.0, 7.0])

    def stat(c):
        return np.sum(c @ value / c.sum(-1) * np.array([0.4, 0.6]), axis=-1)

    codes = np.repeat([0, 0, 0, 0, 1, 1, 1, 1], counts.ravel().astype(int))
    rows = np.repeat(np.tile(value, 2), counts.ravel().astype(int))

    def row_stat(idx):
        c = codes[idx]
        return sum(wj * np.sum(np.where(c == j, rows[idx], 0), 1) / np.sum(c == j, 1)
                   for j, wj in enumerate((0.4, 0.6)))

    a_cells = rs.acceleration(rs.jackknife_counts(stat, counts))
    a_rows = rs.acceleration(rs.jackknife_values(row_stat, codes))
    assert a_cells[0] == pytest.approx(a_rows[0], abs=TOL)


def test_bias_correction_counts_ties_half_like_scipy():
    reps = np.array([0.1, 0.2, 0.2, 0.2, 0.5])
    assert rs.bias_correction(reps, 0.2) == pytest.approx(stats.norm.ppf((1 + 4) / 10), abs=TOL)
    assert rs.bias_correction(reps, 0.3) == pytest.approx(stats.norm.ppf(0.8), abs=TOL)


def test_estimate_outside_the_replicates_falls_back_to_percentile():
    reps = np.linspace(1.0, 2.0, 50)[:, None]
    jack = rs.Jackknife(np.array([[0.0], [1.0], [3.0]]), np.zeros(3, int), np.ones(3))
    with pytest.warns(BayesevalWarning, match="BCa interval of the statistic is undefined"):
        (lo,), (hi,) = rs.confidence_interval(reps, [0.5], level=0.9, method="bca", jackknife=lambda: jack)
    np.testing.assert_allclose([lo, hi], np.quantile(reps[:, 0], [0.05, 0.95]), atol=TOL)


def test_undefined_replicates_are_dropped_with_a_warning():
    rng = np.random.default_rng(0)
    x = np.r_[1.0, np.zeros(9)] + rng.normal(0, 0.01, 10)

    def first_row_mean(v, axis=-1):  # undefined when the first row is not drawn
        return np.where(np.any(v == x[0], axis=axis), np.mean(v, axis=axis), np.nan)

    with pytest.warns(BayesevalWarning, match=r"\d+ of 500 bootstrap replicates gave an undefined"):
        res = bootstrap_ci(x, first_row_mean, vectorized=True, method="percentile", n_resamples=500,
                           random_seed=1)
    idx = rng_indices = np.random.default_rng(1).integers(0, 10, (500, 10))
    full = first_row_mean(x[rng_indices], axis=-1)
    kept = full[np.isfinite(full)]
    assert res.distribution.size == kept.size == np.sum(np.any(idx == 0, axis=1))
    np.testing.assert_allclose([res.lower, res.upper], np.quantile(kept, [0.025, 0.975]), atol=TOL)


# -- one default policy -----------------------------------------------------------------------------


def test_both_functions_share_the_default_policy():
    a = inspect.signature(bootstrap_ci).parameters
    b = inspect.signature(paired_bootstrap).parameters
    for name in ("method", "n_resamples", "pos_label", "level"):
        assert a[name].default == b[name].default, name
    assert (a["method"].default, a["n_resamples"].default, a["pos_label"].default) == ("bca", 9999, None)
    for params in (a, b):
        assert params["random_seed"].kind is inspect.Parameter.KEYWORD_ONLY


def test_pos_label_policy():
    y = np.array(["yes", "no", "yes", "yes", "no", "no"])
    p = np.array(["yes", "no", "no", "yes", "yes", "no"])
    for call in (lambda: bootstrap_ci((y, p), "f1", n_resamples=50),
                 lambda: paired_bootstrap(y, p, y, metric="recall", n_resamples=50)):
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
    assert bootstrap_ci((yb, pb), "f1", n_resamples=50, random_seed=0).estimate == pytest.approx(
        sk_f1(yb, pb), abs=TOL)


def test_f1_of_labels_other_than_0_1_needs_pos_label():
    y = np.array([1, 2, 3, 1, 2, 1, 3, 1])
    p = np.array([1, 2, 1, 1, 3, 2, 3, 1])
    with pytest.raises(ValueError, match=r"needs pos_label .*\[1, 2, 3\]"):
        bootstrap_ci((y, p), "f1", n_resamples=50, random_seed=0)
    res = bootstrap_ci((y, p), "f1", pos_label=1, n_resamples=50, random_seed=0)
    from sklearn.metrics import f1_score as sk_f1

    assert res.estimate == pytest.approx(sk_f1(y, p, labels=[1], average="macro"), abs=TOL)


# -- missing values and pandas alignment ----------------------------------------------------------


def _raises_naming(fn, *names):
    with pytest.raises(ValueError) as info:
        fn()
    for name in names:
        assert re.search(re.escape(name), str(info.value)), (name, str(info.value))


def test_bootstrap_ci_refuses_missing_values():
    _raises_naming(lambda: bootstrap_ci([0.0, np.nan, 1.0, np.nan], n_resamples=50), "data has 2 missing")
    _raises_naming(lambda: bootstrap_ci(([1, 0, 1], [1, None, 0]), "f1", n_resamples=50), "data[1] has 1 missing")
    frame = pd.DataFrame({"y": [1, 0, 1], "p": pd.array([1, pd.NA, pd.NA], dtype="Int64")})
    _raises_naming(lambda: bootstrap_ci(frame, "f1", n_resamples=50), "data['p'] has 2 missing")
    _raises_naming(lambda: bootstrap_ci([1.0, 0.0, 1.0], strata=["a", None, "b"], n_resamples=50),
                   "strata has 1 missing")
    _raises_naming(lambda: bootstrap_ci([1.0], n_resamples=50), "data has 1 row")


def test_paired_functions_refuse_missing_values():
    y, a, b = [1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 1, 1]
    _raises_naming(lambda: paired_bootstrap(y, [1, None, None, 1], b, n_resamples=50), "pred_a has 2 missing")
    _raises_naming(lambda: paired_bootstrap(pd.Series(y, dtype="Int64").where([True, False, True, True]),
                                            a, b, n_resamples=50), "y_true has 1 missing")
    _raises_naming(lambda: paired_bootstrap(y, a, b, strata=[0.0, np.nan, 1.0, 1.0], n_resamples=50),
                   "strata has 1 missing")
    _raises_naming(lambda: mcnemar_from_predictions(y, a, [1, 0, np.nan, 1]), "pred_b has 1 missing")
    _raises_naming(lambda: mcnemar([1, 0, None], [1, 1, 0]), "correct_a has 1 missing")


def test_pandas_inputs_are_paired_by_label():
    rng = np.random.default_rng(9)
    n = 120
    idx = [f"r{i}" for i in range(n)]
    y = pd.Series(rng.integers(0, 2, n), index=idx)
    a = pd.Series(np.where(rng.random(n) < 0.2, 1 - y, y), index=idx)
    b = pd.Series(np.where(rng.random(n) < 0.3, 1 - y, y), index=idx)
    s = pd.Series(rng.choice(["u", "v"], n), index=idx)
    perm = rng.permutation(n)
    ref = paired_bootstrap(y.to_numpy(), a.to_numpy(), b.to_numpy(), strata=s.to_numpy(), metric="recall",
                           n_resamples=300, random_seed=1)
    got = paired_bootstrap(y, a.iloc[perm], b.iloc[perm[::-1]], strata=s.iloc[perm], metric="recall",
                           n_resamples=300, random_seed=1)
    assert got.ci == ref.ci and got.estimate_a == ref.estimate_a
    _raises_naming(lambda: paired_bootstrap(y, a.set_axis([f"x{i}" for i in range(n)]), b, n_resamples=50),
                   "y_true and pred_a have different index labels")
    errors = (a != y).astype(float)
    ref_ci = bootstrap_ci(errors.to_numpy(), "weighted_risk", strata=s.to_numpy(), weights={"u": 0.4, "v": 0.6},
                          n_resamples=300, random_seed=2)
    got_ci = bootstrap_ci(errors, "weighted_risk", strata=s.iloc[perm], weights={"u": 0.4, "v": 0.6},
                          n_resamples=300, random_seed=2)
    assert tuple(got_ci) == tuple(ref_ci)


# -- coverage of the bootstrap of a proportion --------------------------------------------------------


def _proportion_coverage(n: int, p: float, reps: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {"percentile": 0, "bca": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroVarianceWarning)
        for i in range(reps):
            x = (rng.random(n) < p).astype(float)
            for method in hits:
                lo, hi = bootstrap_ci(x, "mean", method=method, n_resamples=999, random_seed=i)
                hits[method] += lo <= p <= hi
    return {m: h / reps for m, h in hits.items()}


def test_bootstrap_of_a_proportion_covers():
    # seeded simulation: n = 150 rows, p = 0.3, 300 data sets, 95% intervals with 999 resamples.
    # The normal-theory coverage is ~0.95 (the bootstrap runs slightly below at finite n); the
    # binomial SE of a coverage estimate over 300 runs is 0.0126: accept [0.91, 0.985].
    for method, coverage in _proportion_coverage(150, 0.3, 300, seed=17).items():
        assert 0.91 <= coverage <= 0.985, (method, coverage)


@pytest.mark.slow
def test_bootstrap_of_a_proportion_covers_long():
    # as above with 2000 data sets (SE 0.005): accept [0.93, 0.965]
    for method, coverage in _proportion_coverage(150, 0.3, 2000, seed=18).items():
        assert 0.93 <= coverage <= 0.965, (method, coverage)


# -- delete-a-group jackknife on many rows --------------------------------------------------------


def test_jackknife_groups_are_nested_in_strata_and_balanced():
    codes = np.repeat([0, 1, 2], [9000, 2990, 3])
    gid = rs.jackknife_groups(codes, 2000)
    for g in np.unique(gid):  # every group lies in one stratum
        assert np.unique(codes[gid == g]).size == 1
    sizes = np.bincount(gid)
    assert sizes.max() == 6 and sizes[:-2].min() >= 5  # ceil(11993 / 2000) = 6 rows a group
    assert np.bincount(gid[codes == 2]).tolist()[-2:] == [2, 1]  # a small stratum keeps two groups


def test_group_jackknife_acceleration_estimates_the_delete_one_value():
    # above MAX_DELETIONS rows a callable's acceleration comes from ~2000 deleted groups: for the
    # mean of 12000 exponential rows it must be close to the delete-one closed form
    # sum d^3 / (6 (sum d^2)^1.5) (measured over 20 seeds: ratio 0.91..1.17), and the BCa
    # interval close to the one with the exact (closed-form) jackknife on the same replicates
    x = np.random.default_rng(0).exponential(size=12000)
    d = x - x.mean()
    closed = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    jk = rs.jackknife_values(lambda idx: x[idx].mean(axis=1), np.zeros(x.size, int))
    assert jk.values.shape == (2000, 1)
    assert 0.75 <= rs.acceleration(jk)[0] / closed <= 1.25
    exact = bootstrap_ci(x, "mean", n_resamples=400, random_seed=3)
    grouped = bootstrap_ci(x, lambda v, axis=-1: np.mean(v, axis=axis), vectorized=True, n_resamples=400,
                           random_seed=3)
    np.testing.assert_allclose(grouped.distribution, exact.distribution, atol=TOL)
    width = exact.upper - exact.lower
    assert abs(grouped.lower - exact.lower) < 0.02 * width and abs(grouped.upper - exact.upper) < 0.02 * width


def test_labels_mixing_numbers_and_strings_are_refused():
    # int truth against str predictions never match: refused, naming both arguments
    _raises_naming(lambda: paired_bootstrap([1, 0, 1], ["1", "0", "1"], [1, 0, 0], n_resamples=50),
                   "y_true holds numbers, pred_a holds strings")
    _raises_naming(lambda: mcnemar_from_predictions([1, 0, 1], [1, 0, 1], np.array([1, "0", 1], dtype=object)),
                   "pred_b holds mixed types")
    _raises_naming(lambda: bootstrap_ci((np.array(["a", "b", "a"]), np.array([1, 0, 1])), "f1", pos_label="a",
                                        n_resamples=50), "data[0] (y_true) holds strings")


def test_f1_score_refuses_missing_labels():
    _raises_naming(lambda: f1_score([1, 0, np.nan], [1, 0, 1]), "y_true has 1 missing")
    _raises_naming(lambda: f1_score([1, 0, 1], pd.Series([1, pd.NA, None], dtype=object)), "y_pred has 2 missing")
