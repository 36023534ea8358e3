"""Tests of the pooled model over sampling units (bayeseval.models.exact_units)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit, gammaln, log_expit

import bayeseval as be
from bayeseval._api.warnings import BayesevalWarning
from bayeseval._kernels.betabinom import units_log_likelihood
from bayeseval.counts.counts import Counts
from bayeseval.models.exact import ExactFit
from bayeseval.models.exact_units import UnitsFit, fit_exact_units
from bayeseval.models.priors import resolve_prior
from tests.helpers import assert_raises_naming


def _counts(hist: dict, order: list | None = None) -> Counts:
    """Counts from ``{stratum: [(unit_successes, unit_trials, units), ...]}``."""
    rows = [(k, float(a), int(m), int(u)) for k, units in hist.items() for a, m, u in units]
    units = pd.DataFrame(rows, columns=["stratum", "unit_successes", "unit_trials", "units"])
    idx = pd.Index(order or list(hist), name="stratum")
    s = pd.Series({k: sum(a * u for a, _, u in hist[k]) for k in hist}).reindex(idx).astype(float)
    n = pd.Series({k: sum(m * u for _, m, u in hist[k]) for k in hist}).reindex(idx).astype(np.int64)
    return Counts(successes=s, trials=n, units=units)


def _rows_as_units(s, n) -> Counts:
    """Each row its own unit: s units of (1, 1) and n - s of (0, 1) per stratum."""
    hist = {f"k{i}": [(1, 1, si), (0, 1, ni - si)] for i, (si, ni) in enumerate(zip(s, n, strict=True))}
    return _counts({k: [u for u in units if u[2] > 0] for k, units in hist.items()})


def _scipy_loglik(theta: Any, kappa: float, units: list) -> Any:
    """Log likelihood of a stratum's units, summed from scipy's Beta-binomial pmf (coefficients removed)."""
    out = 0.0
    for a, m, u in units:
        lp = stats.betabinom.logpmf(a, m, theta * kappa, (1 - theta) * kappa)
        out += u * (lp - (gammaln(m + 1) - gammaln(a + 1) - gammaln(m - a + 1)))
    return out


HIST = {"b": [(3, 3, 2), (1, 3, 1), (0, 2, 1)], "a": [(2, 2, 1), (0, 1, 3), (4, 5, 2)], "c": [(1, 4, 2)]}


def test_stratum_likelihood_is_the_sum_of_the_units_beta_binomial_log_pmfs():
    counts = _counts(HIST, order=["c", "a", "b"])  # strata not in the order of the histogram
    fit = UnitsFit(counts, preset="fast")
    for kappa in (0.05, 1.3, 40.0):
        ll = fit._loglik_theta(kappa)
        for t in (100, 320, 500):  # points of the theta grid
            theta = float(expit(fit.x[t]))
            for k, label in enumerate(counts.strata):
                assert ll[t, k] == pytest.approx(_scipy_loglik(theta, kappa, HIST[label]), rel=1e-10, abs=1e-10)


def test_units_log_likelihood_tends_to_the_binomial_as_kappa_grows():
    a, m, mult = [0, 2, 5], [3, 2, 7], [[1, 2, 1]]
    theta = np.array([0.2, 0.5, 0.9])
    binom = units_log_likelihood(theta, np.inf, a, m, mult)[:, 0]
    ref = sum(
        w * (stats.binom.logpmf(x, n, theta) - np.log(stats.binom.pmf(x, n, 0.5) * 2.0**n))
        for x, n, w in zip(a, m, mult[0], strict=True)
    )
    np.testing.assert_allclose(binom, ref, rtol=1e-12)
    # the gap is O(m^2 / kappa): 1e-4 here
    np.testing.assert_allclose(units_log_likelihood(theta, 1e5, a, m, mult)[:, 0], binom, atol=1e-3)
    assert np.abs(units_log_likelihood(theta, 10.0, a, m, mult)[:, 0] - binom).max() > 0.1


def test_units_of_one_row_have_a_likelihood_free_of_kappa():
    theta = np.linspace(0.01, 0.99, 25)
    lls = [units_log_likelihood(theta, k, [0, 1], [1, 1], [[7, 3], [2, 9]]) for k in (1e-3, 0.5, 20.0, 1e4)]
    ref = np.column_stack([3 * np.log(theta) + 7 * np.log1p(-theta), 9 * np.log(theta) + 2 * np.log1p(-theta)])
    for ll in lls:
        np.testing.assert_allclose(ll, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "s, n",
    [
        ([3, 8, 5, 12, 0, 9], [20, 25, 18, 30, 10, 22]),  # spread strata
        ([10, 11, 9, 10, 12, 10], [50, 50, 50, 50, 50, 50]),  # alike strata: phi large, the narrow Betas
    ],
)
def test_units_of_one_row_give_the_exact_engine_s_fit(s, n):
    counts = _rows_as_units(s, n)
    units, rows = UnitsFit(counts), ExactFit(counts)
    assert units.diagnostics["kappa_nodes"] == 1  # nothing to learn about kappa
    m_u, v_u = units.posterior_moments()
    m_r, v_r = rows.posterior_moments()
    np.testing.assert_allclose(m_u, m_r, atol=1e-5)
    np.testing.assert_allclose(np.sqrt(v_u), np.sqrt(v_r), atol=5e-5)
    q = [0.025, 0.5, 0.975]
    np.testing.assert_allclose(units.quantiles(q), rows.quantiles(q), atol=5e-4)
    np.testing.assert_allclose(units.cdf(0.25), rows.cdf(0.25), atol=1e-3)


@pytest.mark.slow
def test_posterior_mean_matches_a_brute_force_integral_over_all_parameters():
    # independent reference: the joint posterior of (logit mu, log phi, log kappa, theta_h) on plain
    # tensor grids, with the likelihood from scipy's Beta-binomial pmf
    hist = {"x": [(5, 5, 6), (3, 5, 2), (0, 5, 2)], "y": [(2, 5, 4), (5, 5, 1), (0, 5, 5)], "z": [(4, 5, 5), (1, 5, 3)]}
    counts = _counts(hist)
    fit = UnitsFit(counts)
    x = np.linspace(-10, 10, 801)
    th, dx = expit(x), x[1] - x[0]
    u = np.linspace(-4, 5, 61)
    v = np.linspace(-3, 12, 76)
    w = np.linspace(np.log(1e-3), np.log(1e4), 45)
    U, V = np.meshgrid(u, v, indexing="ij")
    a, b = (expit(U) * np.exp(V)).ravel(), (expit(-U) * np.exp(V)).ravel()
    beta_logit = stats.beta.logpdf(th[None, :], a[:, None], b[:, None]) + np.log(th * (1 - th))[None, :]
    log_prior = resolve_prior("default").log_density(U, V).ravel()
    row_max = beta_logit.max(axis=1, keepdims=True)
    dens = np.exp(beta_logit - row_max) * dx  # (G, T)
    log_joint, means = [], []
    for wk in w:
        ll = np.column_stack([_scipy_loglik(th, np.exp(wk), hist[k]) for k in counts.strata])  # (T, K)
        lik = np.exp(ll - ll.max(axis=0))
        z = dens @ lik  # (G, K): each stratum's integral over theta, scaled
        means.append((dens @ (lik * th[:, None])) / z)
        lz = np.log(z) + row_max + ll.max(axis=0)
        log_joint.append(lz.sum(axis=1) + log_prior + log_expit(wk) + log_expit(-wk))
    lj = np.array(log_joint)
    wts = np.exp(lj - lj.max())
    wts /= wts.sum()
    ref = np.einsum("jg,jgk->k", wts, np.array(means))
    np.testing.assert_allclose(fit.posterior_moments()[0], ref, atol=5e-4)  # measured 9e-5


def test_draws_agree_with_the_grid_moments():
    counts = _counts(HIST)
    post = fit_exact_units(counts, random_seed=1, draws=4000, preset="fast")
    mean, var = post.exact.posterior_moments()
    draws = post.theta
    assert draws.shape == (4000, 3)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=4 * np.sqrt(var / 4000).max())


def test_refuses_graded_outcomes_an_improper_prior_and_other_inputs():
    graded = _counts({"a": [(1.5, 2, 3), (2, 2, 1)], "b": [(0.5, 1, 2)]})
    assert_raises_naming(UnitsFit, "counts.units", graded)
    assert_raises_naming(UnitsFit, "binary", graded)
    assert_raises_naming(UnitsFit, "prior", _counts(HIST), prior="bda")
    assert_raises_naming(UnitsFit, "counts", {"a": 1})
    assert_raises_naming(UnitsFit, "preset", _counts(HIST), preset="quick")


def _answers(seed: int, strata: int = 5, items: int = 15, epochs: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.beta(8, 3, strata)
    p = rng.beta(theta[:, None] * 1.5, (1 - theta[:, None]) * 1.5, size=(strata, items))
    ok = (rng.random((strata, items, epochs)) < p[..., None]).astype(int)
    return pd.DataFrame(
        {
            "cat": np.repeat([f"c{k}" for k in range(strata)], items * epochs),
            "item": np.repeat(np.arange(strata * items), epochs),
            "ok": ok.ravel(),
        }
    )


def _evaluate(df: pd.DataFrame, **kw) -> be.Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        return be.evaluate(df, strata="cat", metric="accuracy", design=be.Design(cluster="item"), random_seed=0, **kw)


def test_evaluate_average_under_clusters_reports_the_units_model():
    df = _answers(2)
    rep = _evaluate(df, outcome="ok", guarantee="average")
    counts = be.tabulate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
    ref = fit_exact_units(counts).summary()
    np.testing.assert_allclose(rep.table["pooled_lower"], ref["lower"], rtol=1e-12)
    np.testing.assert_allclose(rep.table["pooled_upper"], ref["upper"], rtol=1e-12)
    np.testing.assert_allclose(rep.table["pooled_mean"], ref["mean"], rtol=1e-12)
    # lower and upper are the interval read: the pooled one, or the stratum's unit interval (read "units")
    plain_units = _evaluate(df, outcome="ok")
    own = (rep.table["read"] == "units").to_numpy()
    np.testing.assert_allclose(rep.table["lower"], np.where(own, plain_units.table["lower"], ref["lower"]), rtol=1e-12)
    np.testing.assert_allclose(rep.table["upper"], np.where(own, plain_units.table["upper"], ref["upper"]), rtol=1e-12)
    assert set(rep.table["read"]) <= {"pooled", "units"}
    assert rep.posterior.model == "units"
    assert any("pooled model over units" in n for n in rep.notes)
    # the stratum guarantee keeps each stratum's unit interval and fits no pooled model
    plain = _evaluate(df, outcome="ok")
    assert plain.posterior is None
    assert not np.allclose(plain.table["lower"], rep.table["lower"])


def test_evaluate_average_with_graded_outcomes_fits_no_pooled_model_and_says_why():
    df = _answers(3)
    df["ok"] = df["ok"] * 0.5 + 0.5 * (df.index % 2)
    rep = _evaluate(df, outcome="ok", guarantee="average")
    plain = _evaluate(df, outcome="ok")
    assert rep.posterior is None
    np.testing.assert_allclose(rep.table["lower"], plain.table["lower"])
    assert any("binary outcomes only" in n for n in rep.notes)


def _clustered_strata(rng: np.random.Generator, strata: int, items: int, answers: int, rho: float) -> tuple:
    """Strata rates from Beta(9, 3); item accuracies Beta(theta k, (1 - theta) k), k = 1/rho - 1."""
    theta = rng.beta(9.0, 3.0, strata)
    k = 1.0 / rho - 1.0
    hist = {}
    for h in range(strata):
        a = rng.binomial(answers, rng.beta(theta[h] * k, (1 - theta[h]) * k, items))
        vals, cnt = np.unique(a, return_counts=True)
        hist[f"s{h:02d}"] = [(int(x), answers, int(c)) for x, c in zip(vals, cnt, strict=True)]
    return _counts(hist), theta


@pytest.mark.slow
def test_units_model_covers_on_average_where_the_row_model_does_not():
    # benchmarks/pooled_cluster_calibration.py, configuration A (12 strata x 30 items x 5 answers,
    # rho 0.5), 200 datasets: units model 0.944 (MC SE 0.005), row model 0.761 (0.008). Here 30
    # datasets (360 intervals; MC SE about 0.012 and 0.02): 0.90 and 0.85 leave 3.5 and 4.5 SE.
    rng = np.random.default_rng(451)
    units_cov, rows_cov = [], []
    for _ in range(30):
        counts, theta = _clustered_strata(rng, 12, 30, 5, 0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BayesevalWarning)
            for fit, out in ((UnitsFit(counts), units_cov), (ExactFit(counts), rows_cov)):
                lo, hi = fit.quantiles([0.025, 0.975])
                out.append(np.mean((lo <= theta) & (theta <= hi)))
    assert np.mean(units_cov) >= 0.90
    assert np.mean(rows_cov) <= 0.85


def test_the_forest_plot_of_an_average_unit_report_names_the_pooled_interval():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import forest

    rep = _evaluate(_answers(4, strata=3), outcome="ok", guarantee="average")
    labels = [t.get_text() for t in forest(rep).get_legend().get_texts()]
    assert "raw rate, pooled interval over units (average coverage)" in labels
    assert not any("(its units)" in lab for lab in labels)
