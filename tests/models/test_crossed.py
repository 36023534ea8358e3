"""The crossed-factor logit-normal model fitted by integrated nested Laplace approximation.

References are independent of the engine: brute-force quadrature of the same posterior,
closed forms (zero-sum basis, large-sample limits), pandas aggregation and the raw COMPAS
rates. The agreement with PyMC's NUTS is in ``test_crossed_nuts.py`` (slow).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special

from bayeseval import Counts, fit_crossed, tabulate
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval.datasets import load_compas
from bayeseval.models import fit_exact
from bayeseval.models.crossed import CrossedFit
from tests.helpers import _audit, _logit_cells


def _cells(*levels, names):
    return pd.MultiIndex.from_product(levels, names=names)


def _compas_fpr_race_age():
    df = load_compas()
    with pytest.warns(EmptyStratumWarning):  # one cell has no true negatives
        counts = tabulate(
            df,
            y_true="two_year_recid",
            y_pred="predicted_recid",
            strata=["race", "age_cat"],
            metric="fpr",
        )
    return counts


def _small_counts():
    cells = _cells(["a", "b"], ["x", "y"], names=["g", "h"])
    return Counts.from_arrays([3, 9, 4, 6], [40, 50, 45, 30], strata=cells)


def test_posterior_disparities_come_from_the_crossed_draws():
    df = _logit_cells((2, 4))
    res = _audit(df, tolerance=0.2, min_trials=1)
    counts = tabulate(df, y_true="y", y_pred="p", strata=["A", "B"], metric="selection_rate")
    fit = fit_crossed(counts, factors=["A", "B"], random_seed=123, draws=20_000)
    labels = [" | ".join(k) for k in fit.table.index]
    theta = fit.posterior.theta
    diff = theta[:, labels.index("a4 | b1")] - theta[:, labels.index(res.reference["selection_rate"])]
    gap = theta.max(axis=1) - theta.min(axis=1)
    d = res.disparities.set_index(["measure", "group"])
    # 4,000 draws in the audit: Monte Carlo error of a 2.5% quantile about 0.01
    for key, draws in ((("difference", "a4 | b1"), diff), (("max-min gap", "all measured"), gap)):
        row = d.loc[key]
        lo, hi = np.quantile(draws, [0.025, 0.975])
        assert row["posterior_mean"] == pytest.approx(draws.mean(), abs=0.01)
        assert (row["posterior_lower"], row["posterior_upper"]) == pytest.approx((lo, hi), abs=0.03)
    assert d.loc[("max-min gap", "all measured"), "p_exceeds"] == pytest.approx(np.mean(gap > 0.2), abs=0.02)
    # the exchangeable fit gives a clearly different difference (not the same draws)
    other = _audit(df, model="robust").disparities.set_index(["measure", "group"])
    assert abs(other.loc[("difference", "a4 | b1"), "posterior_mean"] - diff.mean()) > 0.2


def test_matches_brute_force_quadrature_of_the_same_posterior():
    # one factor with two levels, no interaction: eta_k = alpha + sigma z_k, z zero-sum, so
    # z = (w, -w) / sqrt(2) with w ~ N(0, 1); the posterior is three-dimensional
    s, n = np.array([3, 9]), np.array([20, 25])
    a = np.linspace(-5, 3, 81)
    w = np.linspace(-5.5, 5.5, 81)
    log_sd = np.linspace(-9, 2.5, 81)
    A, W, L = np.meshgrid(a, w, log_sd, indexing="ij")
    sd = np.exp(L)
    etas = (A + sd * W / np.sqrt(2), A - sd * W / np.sqrt(2))
    lp = (
        -0.5 * (A / 1.5) ** 2
        - 0.5 * W**2
        - 0.5 * sd**2
        + L  # N(0, 1.5), N(0, 1), HalfNormal(1)
        + sum(sk * e - nk * np.logaddexp(0, e) for sk, nk, e in zip(s, n, etas, strict=True))
    )
    p = np.exp(lp - lp.max()).ravel()
    p /= p.sum()
    counts = Counts.from_arrays(s, n, strata=pd.MultiIndex.from_arrays([["a", "b"]], names=["g"]))
    table = fit_crossed(counts, factors="g", interaction=False, random_seed=0).table
    for k, eta in enumerate(etas):
        e = eta.ravel()
        order = np.argsort(e)
        cum = np.cumsum(p[order])
        lo, hi = special.expit(np.interp([0.025, 0.975], cum, e[order]))
        row = table.iloc[k]
        assert abs(row["mean"] - np.sum(p * special.expit(e))) < 0.003
        assert abs(row["lower"] - lo) < 0.005
        assert abs(row["upper"] - hi) < 0.005


def test_large_counts_give_the_raw_rates():
    cells = _cells(["a", "b", "c"], ["x", "y"], names=["g", "h"])
    rates = np.array([0.1, 0.3, 0.2, 0.6, 0.45, 0.05])
    n = np.full(6, 200_000)
    counts = Counts.from_arrays(np.round(rates * n).astype(int), n, strata=cells)
    table = fit_crossed(counts, factors=["g", "h"], random_seed=0, draws=200).table
    np.testing.assert_allclose(table["mean"], rates, atol=0.002)
    # the interval is about the binomial one: rate +- 1.96 sqrt(r (1 - r) / n)
    half = 1.96 * np.sqrt(rates * (1 - rates) / n)
    np.testing.assert_allclose(table["upper"] - table["lower"], 2 * half, rtol=0.15)


def test_compas_asian_young_is_pulled_toward_young_cells_not_the_overall_rate():
    counts = _compas_fpr_race_age()
    cell = ("Asian", "Less than 25")
    assert counts.successes[cell] == 0 and counts.trials[cell] == 4
    raw = counts.rates
    young = raw.xs("Less than 25", level="age_cat").drop(["Asian", "Native American"])
    overall = counts.total_successes / counts.total_trials
    assert young.min() > 0.44 and overall < 0.33  # the data: young cells near 0.5

    table = fit_crossed(counts, factors=["race", "age_cat"], random_seed=0, draws=500).table
    exchangeable = fit_exact(counts, draws=500, random_seed=0).summary()
    # exchangeable pooling pulls 0 of 4 toward the overall rate only; the crossed model
    # predicts the young Asian cell from the age effect as well, which lifts it well above
    assert table.loc[cell, "mean"] > exchangeable.loc[cell, "mean"] + 0.08
    # within the Asian row the posterior means follow the age order of every large race
    asian = table.xs("Asian", level="race")["mean"]
    assert asian["Less than 25"] > asian["25 - 45"] > asian["Greater than 45"]
    for race in ["African-American", "Caucasian", "Hispanic", "Other"]:
        r = raw.xs(race, level="race")
        assert r["Less than 25"] > r["25 - 45"] > r["Greater than 45"]
    # the prediction from the factors alone (the cell's own 0 of 4 removed) sits among the
    # young cells, above the overall rate
    dropped = Counts.from_arrays(counts.successes, counts.trials.where(counts.trials.index != cell, 0))
    predicted = fit_crossed(dropped, factors=["race", "age_cat"], random_seed=0, draws=200).table
    assert predicted.loc[cell, "predicted"]
    assert predicted.loc[cell, "mean"] > overall + 0.05


def test_empty_cells_are_added_and_flagged_as_predictions():
    cells = pd.MultiIndex.from_tuples([("a", "x"), ("a", "y"), ("b", "x")], names=["g", "h"])
    counts = Counts.from_arrays([4, 20, 6], [50, 50, 60], strata=cells)
    table = fit_crossed(counts, factors=["g", "h"], random_seed=1, draws=300).table
    assert ("b", "y") in table.index and len(table) == 4
    assert table.loc[("b", "y"), "trials"] == 0
    assert table["predicted"].tolist() == [False, False, False, True]
    # additive on the logit scale: b,y sits well above b,x as a,y sits above a,x
    assert table.loc[("b", "y"), "mean"] > table.loc[("b", "x"), "mean"] + 0.1
    not_completed = fit_crossed(counts, factors=["g", "h"], complete=False, random_seed=1).table
    assert len(not_completed) == 3


def test_draws_have_the_summarised_marginals_and_are_reproducible():
    cells = _cells(["a", "b", "c"], ["x", "y"], names=["g", "h"])
    counts = Counts.from_arrays([1, 6, 0, 9, 3, 2], [10, 20, 4, 30, 15, 5], strata=cells)
    fit = fit_crossed(counts, factors=["g", "h"], random_seed=3, draws=20000)
    theta = fit.posterior.theta
    table = fit.table
    # Monte Carlo standard error of a mean is sd / sqrt(20000); allow 5 of them
    sd = theta.std(axis=0)
    assert np.all(np.abs(theta.mean(axis=0) - table["mean"].to_numpy()) < 5 * sd / np.sqrt(20000))
    q = np.quantile(theta, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(q[0], table["lower"], atol=0.01)
    np.testing.assert_allclose(q[1], table["upper"], atol=0.01)
    again = fit_crossed(counts, factors=["g", "h"], random_seed=3, draws=20000)
    np.testing.assert_array_equal(again.posterior.theta, theta)
    assert set(fit.posterior.hyper) == {"sigma_g", "sigma_h", "sigma"}
    assert fit.sd_summary().index.tolist() == ["sigma_g", "sigma_h", "sigma"]


def test_frame_inputs_match_counts():
    df = load_compas().head(3000)
    counts = tabulate(
        df, y_true="two_year_recid", y_pred="predicted_recid", strata=["sex", "age_cat"], metric="error_rate"
    )
    from_counts = fit_crossed(counts, factors=["sex", "age_cat"], random_seed=0, draws=100)
    from_rows = fit_crossed(
        df, factors=["sex", "age_cat"], y_true="two_year_recid", y_pred="predicted_recid", random_seed=0, draws=100
    )
    pd.testing.assert_frame_equal(from_counts.table, from_rows.table)
    agg = counts.to_frame().reset_index()
    split = pd.concat(
        [
            agg.assign(successes=agg.successes // 2, trials=agg.trials // 2),
            agg.assign(successes=agg.successes - agg.successes // 2, trials=agg.trials - agg.trials // 2),
        ]
    )
    from_sums = fit_crossed(split, factors=["sex", "age_cat"], random_seed=0, draws=100)
    np.testing.assert_array_equal(from_sums.table["trials"], counts.trials.to_numpy())
    np.testing.assert_allclose(from_sums.table["mean"], from_counts.table["mean"], atol=1e-12)


def test_result_protocol():
    cells = _cells(["a", "b"], ["x", "y"], names=["g", "h"])
    counts = Counts.from_arrays([3, 9, 4, 6], [40, 50, 45, 30], strata=cells)
    fit = fit_crossed(counts, factors=["g", "h"], level=0.8, random_seed=0, draws=200)
    assert isinstance(fit, CrossedFit)
    frame = fit.to_frame()
    frame.loc[:, "mean"] = -1.0
    assert (fit.table["mean"] > 0).all()
    wide = fit.summary(0.95)
    assert (wide["upper"] - wide["lower"] > fit.table["upper"] - fit.table["lower"]).all()
    assert "<strong>Crossed-factor pooling</strong>" in fit._repr_html_()
    assert "Crossed-factor pooling" in repr(fit)


def test_unknown_factor_is_named():
    with pytest.raises(ValueError, match=r"factors \['race'\].*\['g', 'h'\]"):
        fit_crossed(_small_counts(), factors=["g", "race"])
    with pytest.raises(ValueError, match=r"factors \['race'\] are not columns"):
        fit_crossed(pd.DataFrame({"g": [1], "successes": [1], "trials": [2]}), factors=["race"])


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        ({"factors": []}, TypeError, r"factors must be .* got \[\]"),
        ({"factors": ["g", "g"]}, ValueError, r"factors must be distinct, got \['g', 'g'\]"),
        ({"factors": ["g"], "level": 1.5}, ValueError, r"level .* got 1.5"),
        ({"factors": ["g"], "draws": 0}, ValueError, r"draws must be an integer >= 1, got 0"),
        ({"factors": ["g"], "random_seed": -1}, ValueError, r"random_seed .* got -1"),
        ({"factors": ["g"], "interaction": "no"}, TypeError, r"interaction must be .* got 'no'"),
        ({"factors": ["g"], "complete": 1}, TypeError, r"complete must be .* got 1"),
    ],
)
def test_invalid_arguments_name_argument_and_value(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        fit_crossed(_small_counts(), **kwargs)


def test_bad_data_types_are_named():
    with pytest.raises(TypeError, match="counts_or_frame must be a Counts or a pandas DataFrame, got list"):
        fit_crossed([1, 2], factors=["g"])
    frame = pd.DataFrame({"g": ["a"], "y": [1]})
    with pytest.raises(ValueError, match="y_true='y', y_pred=None"):
        fit_crossed(frame, factors=["g"], y_true="y")
    with pytest.raises(ValueError, match=r"'successes' and 'trials'; columns are \['g', 'y'\]"):
        fit_crossed(frame, factors=["g"])


def test_cells_without_any_data_get_the_prior_predictive():
    # no trials anywhere: each cell's logit is alpha + sigma_g z_g + sigma_h z_h + sigma gamma,
    # simulated directly from the priors (zero-sum z over L levels: variance (L - 1) / L)
    cells = _cells(["a", "b", "c"], ["x", "y"], names=["g", "h"])
    counts = Counts.from_arrays([0] * 6, [0] * 6, strata=cells)
    table = fit_crossed(counts, factors=["g", "h"], random_seed=0, draws=200).table
    rng = np.random.default_rng(5)
    size = 400_000
    sd = np.abs(rng.standard_normal((3, size)))
    eta = (
        1.5 * rng.standard_normal(size)
        + sd[0] * np.sqrt(2 / 3) * rng.standard_normal(size)
        + sd[1] * np.sqrt(1 / 2) * rng.standard_normal(size)
        + sd[2] * rng.standard_normal(size)
    )
    lo, hi = special.expit(np.quantile(eta, [0.025, 0.975]))
    assert table["predicted"].all()
    np.testing.assert_allclose(table["mean"], 0.5, atol=1e-6)
    np.testing.assert_allclose(table["lower"], lo, atol=0.005)
    np.testing.assert_allclose(table["upper"], hi, atol=0.005)


def test_missing_factor_values_in_a_frame_of_counts_are_refused():
    frame = pd.DataFrame({"g": ["a", None, "b"], "successes": [1, 2, 3], "trials": [5, 5, 5]})
    with pytest.raises(ValueError, match=r"column 'g' has 1 missing value.*position\(s\) \[1\]"):
        fit_crossed(frame, factors=["g"])


@pytest.mark.slow
def test_at_least_100_times_faster_than_pymc_in_the_same_run(comparison):
    assert comparison["ratio"] >= 100, (comparison["laplace_seconds"], comparison["pymc_seconds"])
