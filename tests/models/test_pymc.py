"""Tests of the PyMC engine (bayeseval.models.pymc).

The default run makes ONE real PyMC fit (module-scoped fixture, so PyTensor compiles once) and
checks it against the exact grid engine; the other sampling tests are marked ``slow``. The
remaining default tests compare log densities (no sampling): the PyMC model's log posterior must
equal the exact engine's up to a constant, which is what "both engines implement the same model
and prior" means.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import special, stats

from bayeseval import ConvergenceWarning, Counts, fit_hierarchical
from bayeseval.models import pymc as bp
from bayeseval.models.exact import ExactFit
from bayeseval.models.priors import resolve_prior
from tests.helpers import (
    ROOT,
    _close_figures,  # noqa: F401
)

matplotlib.use("Agg")


def realistic_counts(seed: int = 20261129, k: int = 12) -> Counts:
    """k strata with true rates 0.05-0.3 and 20-300 trials (seeded)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(20, 301, size=k)
    theta = rng.uniform(0.05, 0.30, size=k)
    s = rng.binomial(n, theta)
    return Counts.from_arrays(s, n, strata=[f"group_{i:02d}" for i in range(k)])


def outlier_counts() -> tuple[Counts, np.ndarray]:
    """15 strata: 14 with rates 0.04-0.15 and one at 0.35 (the issue's robust scenario).

    Deterministic design (as in tests/models/test_exact.py): the 14 rates are the quantiles of
    Beta(8, 80), trials 40-200, successes = round(n * rate).
    """
    true = np.r_[np.clip(stats.beta(8, 80).ppf((np.arange(14) + 0.5) / 14), 0.03, 0.15), 0.35]
    n = np.linspace(40, 200, 15).astype(int)
    s = np.round(n * true).astype(int)
    return Counts.from_arrays(s, n, strata=[f"s{i:02d}" for i in range(15)]), true


@pytest.fixture(scope="module")
def realistic_fit():
    counts = realistic_counts()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = fit_hierarchical(counts, engine="pymc", draws=4000, chains=2, random_seed=11)
    convergence = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    exact = fit_hierarchical(counts, engine="exact", draws=4000, random_seed=11)
    return counts, post, exact, convergence


def _logp_difference(pm_model, counts, prior, model, u, v, prior_mean=None):
    f = pm_model.compile_logp(mode="FAST_COMPILE")
    names = [vv.name for vv in pm_model.value_vars]
    lp_pm = np.array([f({names[0]: a, names[1]: b}) for a, b in zip(u, v, strict=True)])
    fit = ExactFit(counts, prior=prior, model=model, prior_mean=prior_mean)
    return lp_pm - fit.log_posterior(u, v)


U = np.array([-2.5, -1.6, -1.0, -0.3, 0.5])


V = np.array([0.0, 1.5, 2.5, 3.5, 6.0])


KAPPA_PRIORS = [
    stats.lognorm(1.3, scale=15),
    stats.gamma(2.0, scale=10),
    stats.halfcauchy(scale=5),
    stats.pareto(1.5, scale=0.5),
    stats.expon(scale=20),
    stats.halfnorm(scale=30),
    stats.invgamma(3.0, scale=10),
    stats.uniform(0.1, 50),
    stats.lognorm(1.0, loc=0.5, scale=10),
]


def run_python(code: str, **env: str) -> tuple[dict, str]:
    """Run ``code`` in a fresh interpreter; the JSON it prints last, and its stderr."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTENSOR_FLAGS", "PYTENSORRC")}
    full_env.update(PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=full_env, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


CONFIGURE = r"""
import json, warnings
from bayeseval.models import pymc as bp
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    first = bp.configure_pytensor()
    second = bp.configure_pytensor()
import pytensor
print(json.dumps({"first": first, "second": second, "config": pytensor.config.blas__ldflags,
                  "warnings": [[w.category.__name__, str(w.message)] for w in caught]}))
"""


class _Stop(Exception):
    """Raised by the stub sampler once it has seen the keyword arguments."""


@pytest.fixture
def sample_kwargs(monkeypatch):
    """Capture what ``fit_pymc`` passes to ``pymc.sample`` (no model is built or sampled)."""
    seen: dict = {}

    def fake_sample(model, kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(bp, "_beta_binomial_model", lambda *a, **k: (None, ["mu", "kappa"]))
    monkeypatch.setattr(bp, "sample_nuts", fake_sample)
    return seen


COUNTS = Counts.from_arrays([2, 5, 9], [40, 50, 60], strata=["a", "b", "c"])


FIT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from bayeseval import Counts
from bayeseval.models.pymc import fit_pymc
counts = Counts.from_arrays([2, 5, 9], [40, 50, 60], strata=["a", "b", "c"])
post = fit_pymc(counts, draws=200, tune=200, random_seed=1, progress=sys.argv[1] == "on")
sys.stdout.flush()
sys.stderr.flush()
print(json.dumps({"means": post.summary()["mean"].tolist()}))
"""


@pytest.mark.slow
def test_pymc_agrees_with_exact_engine(realistic_fit):
    counts, post, exact, _ = realistic_fit
    sp, se = post.summary(), exact.summary()  # exact summary: grid moments/quantiles, no MC error
    mcse = az.mcse(post.idata, var_names=["theta"])["theta"].to_numpy()
    diff = np.abs(sp["mean"].to_numpy() - se["mean"].to_numpy())
    # posterior means within Monte Carlo error of the PyMC draws
    assert np.all(diff < np.maximum(4 * mcse, 0.002)), (diff, mcse)
    # 95% equal-tailed interval endpoints within 0.01
    assert np.max(np.abs(sp["lower"] - se["lower"])) < 0.01
    assert np.max(np.abs(sp["upper"] - se["upper"])) < 0.01
    # the hyperparameters agree too: E[mu] within 4 MCSE, median kappa within 10%
    mu_mcse = float(az.mcse(post.idata, var_names=["mu"])["mu"])
    assert abs(post.draws("mu").mean() - exact.draws("mu").mean()) < 4 * mu_mcse + 0.002
    k_p, k_e = np.median(post.draws("kappa")), np.median(exact.draws("kappa"))
    assert abs(k_p / k_e - 1) < 0.1


@pytest.mark.slow
def test_pymc_fit_converged_and_reports_diagnostics(realistic_fit):
    _, post, _, convergence = realistic_fit
    d = post.diagnostics
    assert convergence == []
    assert d["ok"] and d["failed"] == []
    assert d["rhat_max"] <= bp.RHAT_THRESHOLD
    assert d["ess_bulk_min"] >= 200 and d["ess_tail_min"] >= 200  # 100 per chain, 2 chains
    assert d["divergences"] == 0
    assert d["chains"] == 2 and d["draws_per_chain"] == 2000
    # the diagnostics equal ArviZ's own numbers on the same InferenceData
    rhat = az.rhat(post.idata, var_names=["mu", "kappa", "theta"])
    assert d["rhat_max"] == pytest.approx(max(float(rhat[v].max()) for v in rhat.data_vars))
    ess = az.ess(post.idata, var_names=["mu", "kappa", "theta"], method="tail")
    assert d["ess_tail_min"] == pytest.approx(min(float(ess[v].min()) for v in ess.data_vars))


@pytest.mark.slow
def test_pymc_posterior_object_and_inference_data(realistic_fit):
    counts, post, _, _ = realistic_fit
    assert post.engine == "pymc" and post.model == "beta_binomial"
    assert post.theta.shape == (4000, len(counts))
    idata = post.idata
    theta = idata.posterior["theta"]
    assert theta.dims == ("chain", "draw", "stratum")
    assert list(theta["stratum"].to_numpy()) == [str(s) for s in counts.strata]
    # Posterior.theta is the InferenceData's theta flattened over chains (chain-major)
    np.testing.assert_array_equal(post.theta, theta.to_numpy().reshape(4000, -1))
    np.testing.assert_allclose(post.draws("alpha"), post.draws("mu") * post.draws("kappa"))
    np.testing.assert_allclose(
        idata.posterior["beta"].to_numpy().ravel(),
        (1 - post.draws("mu")) * post.draws("kappa"),
    )
    # pointwise binomial log-likelihood, checked against SciPy
    ll = idata.log_likelihood["successes"].to_numpy().reshape(4000, -1)
    ref = stats.binom.logpmf(counts.successes.to_numpy(), counts.trials.to_numpy(), post.theta)
    np.testing.assert_allclose(ll, ref)
    np.testing.assert_allclose(post.log_likelihood, ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k: theta_k is fitted per stratum
        loo = az.loo(idata, pointwise=True)
    np.testing.assert_allclose(float(loo["elpd_loo"]), float(loo["loo_i"].sum()))
    np.testing.assert_array_equal(idata.observed_data["successes"], counts.successes.to_numpy())
    np.testing.assert_array_equal(idata.constant_data["trials"], counts.trials.to_numpy())


@pytest.mark.slow
def test_theta_draws_follow_their_conjugate_conditional(realistic_fit):
    # In the marginal parametrisation theta_k | mu, kappa, s ~ Beta(mu kappa + s, ...):
    # E[theta_k] must match the average of the conditional means over the (mu, kappa) draws
    # within the Monte Carlo error of the Beta draws themselves.
    counts, post, _, _ = realistic_fit
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    a = post.draws("alpha")[:, None] + s
    b = post.draws("beta")[:, None] + (n - s)
    cond_mean = a / (a + b)
    resid = post.theta - cond_mean
    se = resid.std(axis=0) / np.sqrt(len(resid))
    assert np.all(np.abs(resid.mean(axis=0)) < 4 * se)


@pytest.mark.parametrize(
    ("model", "prior", "with_prior_mean"),
    [
        ("beta_binomial", "default", False),
        ("beta_binomial", "bda", True),
        ("robust", "default", True),
        ("robust", "bda", False),
    ],
)
def test_pymc_log_posterior_equals_exact_engine(model, prior, with_prior_mean):
    counts = realistic_counts()
    k = len(counts)
    prior_mean = np.linspace(0.05, 0.3, k) if with_prior_mean else None
    offsets = np.zeros(k)
    if with_prior_mean:
        lm = special.logit(prior_mean)
        offsets = lm - lm.mean()
    labels = [str(x) for x in counts.strata]
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    p = resolve_prior(prior)
    if model == "robust":
        pm_model, _ = bp._robust_model(s, n, labels, offsets, p, 0.1)
    else:
        pm_model, _ = bp._beta_binomial_model(s, n, labels, offsets, p, "marginal")
    diff = _logp_difference(pm_model, counts, prior, model, U, V, prior_mean)
    # equal up to a constant (the binomial coefficients the exact engine drops)
    expected_const = np.sum(special.gammaln(n + 1) - special.gammaln(s + 1) - special.gammaln(n - s + 1))
    np.testing.assert_allclose(diff, expected_const, rtol=0, atol=1e-7)


def test_bda_potential_matches_prior_log_density():
    # BDA3 section 5.3: p(alpha, beta) ∝ (alpha + beta)^(-5/2); in (u, v) = (logit mu, log kappa)
    # p(u, v) ∝ alpha * beta * (alpha + beta)^(-5/2) (BDA3 eq. 5.9 transformed).
    u, v = np.meshgrid(np.linspace(-4, 3, 7), np.linspace(-2, 8, 6))
    got = bp._bda_log_density(u, v).eval()
    alpha, beta = special.expit(u) * np.exp(v), special.expit(-u) * np.exp(v)
    bda3 = np.log(alpha) + np.log(beta) - 2.5 * np.log(alpha + beta)
    np.testing.assert_allclose(got, bda3, atol=1e-12)
    np.testing.assert_allclose(got, resolve_prior("bda").log_density(u, v), atol=1e-12)


def test_scipy_priors_map_to_identical_pymc_densities():
    import pytensor

    x = np.array([0.7, 3.0, 12.0, 40.0])
    outs, refs = [], []
    for frozen in KAPPA_PRIORS:
        cls, kw, loc = bp._pm_spec(frozen, "kappa")
        outs.append(pm.logp(cls.dist(**kw), x - loc))
        refs.append(frozen.logpdf(x))
    for frozen in (stats.beta(2, 8), stats.beta(0.5, 0.5), stats.uniform(0, 1)):
        cls, kw, _ = bp._pm_spec(frozen, "mu")
        outs.append(pm.logp(cls.dist(**kw), np.array([0.05, 0.3, 0.9])))
        refs.append(frozen.logpdf([0.05, 0.3, 0.9]))
    got = pytensor.function([], outs, mode="FAST_COMPILE")()
    for frozen, g, r in zip(KAPPA_PRIORS + [None] * 3, got, refs, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-7, err_msg=str(frozen and frozen.dist.name))


def test_custom_prior_log_posterior_equals_exact_engine():
    counts = realistic_counts()
    prior = {"mu": stats.beta(2, 8), "kappa": stats.gamma(2.0, scale=10)}
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    pm_model, _ = bp._beta_binomial_model(
        s, n, [str(x) for x in counts.strata], np.zeros(len(s)), resolve_prior(prior), "marginal"
    )
    diff = _logp_difference(pm_model, counts, prior, "beta_binomial", U, V)
    assert np.ptp(diff) < 1e-7


def test_logit_normal_log_density_matches_scipy():
    # logit theta_k = intercept + o_k + x_k beta + sigma z_k, written out with SciPy
    counts = realistic_counts()
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    k = len(s)
    rng = np.random.default_rng(3)
    x_raw = rng.normal(5.0, 2.0, size=k)
    cov = pd.DataFrame({"x": x_raw}, index=counts.strata)
    m = np.linspace(0.05, 0.3, k)
    offsets = special.logit(m) - special.logit(m).mean()
    labels = [str(c) for c in counts.strata]
    pm_model, hyper = bp._logit_normal_model(counts, s, n, labels, offsets, cov, None, True)
    assert hyper == ["intercept", "coef", "sigma"]
    f = pm_model.compile_logp(mode="FAST_COMPILE")
    intercept, coef, log_sigma, z = -1.7, np.array([0.4]), np.log(0.6), rng.normal(size=k)
    point = {"intercept": intercept, "coef": coef, "sigma_log__": log_sigma, "z": z}
    sigma = np.exp(log_sigma)
    x = (x_raw - x_raw.mean()) / x_raw.std()
    theta = special.expit(intercept + offsets + x * coef[0] + sigma * z)
    expected = (
        stats.norm(0, 1.5).logpdf(intercept)
        + stats.norm(0, 1).logpdf(coef).sum()
        + stats.halfnorm(scale=1).logpdf(sigma)
        + log_sigma  # Jacobian of sigma = exp(log_sigma)
        + stats.norm.logpdf(z).sum()
        + stats.binom.logpmf(s, n, theta).sum()
    )
    assert f(point) == pytest.approx(expected, rel=1e-10)


def test_rhat_failure_warns_with_value_and_advice():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 500)) + np.array([[0.0], [0.5]])  # two chains that disagree
    idata = az.from_dict(posterior={"kappa": x})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = bp.check_convergence(idata)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert out["failed"][0] == "rhat" and not out["ok"]
    assert out["rhat_max"] == pytest.approx(float(az.rhat(idata)["kappa"]))
    assert re.match(r"R-hat = 1\.\d+ for 'kappa' exceeds 1\.01.*tune", messages[0])
    assert "engine='exact'" in messages[0]
    assert caught[0].filename == __file__  # the warning points at the caller, not the package


def test_low_ess_and_divergences_warn():
    rng = np.random.default_rng(1)
    # AR(1) chains with phi = 0.97: ESS ~ N (1 - phi) / (1 + phi), about 15 per chain of 1000
    e = rng.normal(size=(2, 1000))
    x = np.zeros_like(e)
    for t in range(1, 1000):
        x[:, t] = 0.97 * x[:, t - 1] + e[:, t]
    diverging = np.zeros((2, 1000), dtype=bool)
    diverging[0, [3, 50, 700]] = True
    idata = az.from_dict(posterior={"mu": x}, sample_stats={"diverging": diverging})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = bp.check_convergence(idata)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert {"ess_bulk", "ess_tail", "divergences"} <= set(out["failed"])
    assert out["divergences"] == 3
    assert out["ess_bulk_min"] == pytest.approx(float(az.ess(idata, method="bulk")["mu"]))
    assert any(m.startswith("bulk ESS") and "below 200" in m for m in messages)
    assert any(m.startswith("tail ESS") for m in messages)
    assert any("3 divergent transitions" in m and "target_accept" in m for m in messages)


def test_good_chains_pass_silently():
    rng = np.random.default_rng(2)
    idata = az.from_dict(posterior={"mu": rng.normal(size=(2, 1000))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = bp.check_convergence(idata)
    assert out["ok"] and out["divergences"] == 0


def test_invalid_arguments_raise_clear_errors():
    counts = realistic_counts()
    with pytest.raises(ValueError, match="unknown model 'poisson'"):
        bp.fit_pymc(counts, model="poisson")
    with pytest.raises(ValueError, match="weibull_min is not supported"):
        bp.fit_pymc(counts, prior={"kappa": stats.weibull_min(1.5, scale=10)})
    with pytest.raises(ValueError, match="covariates and factors need model='logit_normal'"):
        bp.fit_pymc(counts, covariates=pd.DataFrame({"x": range(12)}, index=counts.strata))
    with pytest.raises(ValueError, match="prior='default' only"):
        bp.fit_pymc(counts, model="logit_normal", prior="bda")
    with pytest.raises(ValueError, match="factor 'region' is not a level"):
        bp.fit_pymc(counts, model="logit_normal", factors=["region"])
    with pytest.raises(ValueError, match="unknown parametrization 'noncentral'"):
        bp.fit_pymc(counts, parametrization="noncentral")
    with pytest.raises(ValueError, match="valid choices are \\['marginal'\\]"):
        bp.fit_pymc(counts, model="robust", parametrization="centered")
    with pytest.raises(TypeError, match="counts must be a bayeseval Counts"):
        bp.fit_pymc([1, 2])
    with pytest.raises(ValueError, match="prior_mean values must be strictly between 0 and 1"):
        bp.fit_pymc(counts, prior_mean=np.full(12, 1.5))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::bayeseval.ConvergenceWarning")
def test_seeded_runs_are_reproducible():
    counts = realistic_counts(k=6)
    a = bp.fit_pymc(counts, draws=400, tune=300, random_seed=5)
    b = bp.fit_pymc(counts, draws=400, tune=300, random_seed=5)
    c = bp.fit_pymc(counts, draws=400, tune=300, random_seed=6)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.draws("kappa"), b.draws("kappa"))
    assert not np.array_equal(a.theta, c.theta)


@pytest.mark.slow
def test_centred_parametrisation_targets_the_same_posterior():
    counts = realistic_counts()
    post = bp.fit_pymc(counts, parametrization="centered", draws=4000, random_seed=4)
    exact = fit_hierarchical(counts, engine="exact", draws=4000, random_seed=4)
    diff = np.abs(post.summary()["mean"] - exact.summary()["mean"])
    assert diff.max() < 0.005


@pytest.mark.slow
def test_robust_model_agrees_with_exact_approximation():
    counts, _ = outlier_counts()
    post = fit_hierarchical(counts, engine="pymc", model="robust", draws=4000, random_seed=8)
    exact = fit_hierarchical(counts, engine="exact", model="robust", draws=4000, random_seed=8)
    sp, se = post.summary(), exact.summary()
    assert np.max(np.abs(sp["mean"] - se["mean"])) < 0.01
    assert np.max(np.abs(sp["lower"] - se["lower"])) < 0.01
    assert np.max(np.abs(sp["upper"] - se["upper"])) < 0.015
    # and the outlier stands apart while the other 14 keep strong pooling: their intervals are
    # clearly narrower than under the plain Beta-binomial model fitted with PyMC
    plain = bp.fit_pymc(counts, draws=4000, random_seed=8).summary()
    width_robust = (sp["upper"] - sp["lower"]).iloc[:-1].mean()
    width_plain = (plain["upper"] - plain["lower"]).iloc[:-1].mean()
    assert width_robust < 0.8 * width_plain  # exact engine on the same data: 0.67
    assert sp["mean"].iloc[-1] > 0.25  # the outlier is not shrunk into the population


@pytest.mark.slow
def test_prior_mean_offsets_agree_with_exact_engine():
    counts = realistic_counts()
    m = pd.Series(np.linspace(0.3, 0.05, 12), index=counts.strata)
    post = fit_hierarchical(counts, engine="pymc", prior_mean=m, draws=4000, random_seed=9)
    exact = fit_hierarchical(counts, engine="exact", prior_mean=m, draws=4000, random_seed=9)
    assert np.max(np.abs(post.summary()["mean"] - exact.summary()["mean"])) < 0.005
    np.testing.assert_allclose(post.diagnostics["offsets"], exact.diagnostics["offsets"])


@pytest.mark.slow
def test_logit_normal_recovers_known_parameters():
    rng = np.random.default_rng(2026)
    k, alpha, sigma = 30, -2.0, 0.6
    theta = special.expit(alpha + sigma * rng.normal(size=k))
    n = rng.integers(50, 400, size=k)
    counts = Counts.from_arrays(rng.binomial(n, theta), n)
    post = bp.fit_pymc(counts, model="logit_normal", draws=4000, random_seed=1)
    lo, hi = np.quantile(post.draws("intercept"), [0.025, 0.975])
    assert lo < alpha < hi
    lo, hi = np.quantile(post.draws("sigma"), [0.025, 0.975])
    assert lo < sigma < hi
    s = post.summary()
    covered = np.mean((s["lower"] < theta) & (theta < s["upper"]))
    assert covered >= 25 / 30  # nominal 0.95; P(fewer than 25 of 30) ~ 0.016
    assert post.diagnostics["divergences"] == 0


@pytest.mark.slow
def test_logit_normal_crossed_factors_and_covariate():
    rng = np.random.default_rng(99)
    groups, labels = ["g0", "g1", "g2", "g3", "g4"], ["l0", "l1", "l2"]
    g_eff = np.array([-0.8, -0.3, 0.0, 0.4, 0.9])
    l_eff = np.array([-0.5, 0.0, 0.5])
    index = pd.MultiIndex.from_product([groups, labels], names=["group", "label"])
    x = rng.normal(size=len(index))
    eta = -2.0 + np.repeat(g_eff, 3) + np.tile(l_eff, 5) + 0.7 * x
    n = np.full(len(index), 600)
    counts = Counts.from_arrays(rng.binomial(n, special.expit(eta)), n, strata=index)
    cov = pd.DataFrame({"x": x}, index=index)
    post = bp.fit_pymc(
        counts,
        model="logit_normal",
        factors=["group", "label"],
        covariates=cov,
        interaction=False,
        draws=2000,
        target_accept=0.95,
        random_seed=2,
    )
    assert post.diagnostics["ok"], post.diagnostics["failed"]
    idata = post.idata
    # coefficients are per sd of the covariate
    coef = post.draws("coef_x")
    assert np.quantile(coef, 0.025) < 0.7 * x.std() < np.quantile(coef, 0.975)
    # group and label effects recovered up to the intercept (differences between levels)
    ge = (idata.posterior["sigma_group"] * idata.posterior["z_group"]).mean(("chain", "draw"))
    le = (idata.posterior["sigma_label"] * idata.posterior["z_label"]).mean(("chain", "draw"))
    np.testing.assert_allclose(ge - ge.mean(), g_eff - g_eff.mean(), atol=0.2)
    np.testing.assert_allclose(le - le.mean(), l_eff - l_eff.mean(), atol=0.2)
    assert list(idata.posterior["theta"]["stratum"].to_numpy())[:2] == ["g0 | l0", "g0 | l1"]


@pytest.mark.slow
def test_too_few_draws_trigger_convergence_warnings():
    counts = realistic_counts()
    with pytest.warns(ConvergenceWarning) as caught:  # ESS, and R-hat on some seeds
        post = bp.fit_pymc(counts, draws=100, tune=50, random_seed=1)
    assert any("ESS" in str(w.message) for w in caught)
    assert not post.diagnostics["ok"]
    assert any(f.startswith("ess") for f in post.diagnostics["failed"])


def test_the_bundled_blas_is_the_library_scipy_loaded():
    import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)
    from threadpoolctl import threadpool_info

    found = bp._bundled_blas()
    if found is None:
        pytest.skip("SciPy does not ship its own OpenBLAS here (e.g. a conda build)")
    path, prefix = found
    assert path.is_file()
    loaded = {Path(info["filepath"]).resolve() for info in threadpool_info() if info["user_api"] == "blas"}
    assert path.resolve() in loaded
    flags = bp._blas_flags(path, prefix)
    assert str(path) in flags
    if prefix:  # every routine PyTensor's GEMM/GEMV/GER/dot code calls is renamed
        for name in ("dgemm_", "sgemm_", "dgemv_", "dger_", "ddot_", "sdot_"):
            assert f"-D{name}={prefix}{name}" in flags


def test_without_user_flags_pytensor_links_the_bundled_blas():
    if bp._bundled_blas() is None:
        pytest.skip("SciPy does not ship its own OpenBLAS here (e.g. a conda build)")
    out, err = run_python(CONFIGURE)
    assert out["first"]["source"] == "bundled" and out["second"] == out["first"]
    assert out["config"] == out["first"]["ldflags"]
    assert str(bp._bundled_blas()[0]) in out["config"]
    assert out["warnings"] == [] and "could not link" not in err


def test_user_flags_win():
    out, _ = run_python(CONFIGURE, PYTENSOR_FLAGS="blas__ldflags=-lm")
    assert out["first"] == {"ldflags": "-lm", "source": "user"}
    assert out["config"] == "-lm"
    assert out["warnings"] == []


def test_no_blas_warns_once_with_the_fix():
    # no compiler (cxx empty): PyTensor's own search finds nothing; the bundled library is hidden
    code = "from bayeseval.models import pymc as bp\nbp._bundled_blas = lambda: None\n" + CONFIGURE
    out, err = run_python(code, PYTENSOR_FLAGS="cxx=")
    assert out["first"] == {"ldflags": "", "source": "pytensor"}
    ours = [m for cat, m in out["warnings"] if cat == "PerformanceWarning"]
    assert len(ours) == 1 and "PYTENSOR_FLAGS='blas__ldflags=" in ours[0]
    assert not any("could not link" in m for _, m in out["warnings"])  # PyTensor's own is replaced


@pytest.mark.slow
def test_blas_ops_compiled_against_the_bundled_library_match_numpy():
    if bp._bundled_blas() is None:
        pytest.skip("SciPy does not ship its own OpenBLAS here (e.g. a conda build)")
    code = r"""
import json
import numpy as np
from bayeseval.models import pymc as bp
state = bp.configure_pytensor()
import pytensor, pytensor.tensor as pt
A, B, v, w = pt.dmatrix("A"), pt.dmatrix("B"), pt.dvector("v"), pt.dvector("w")
f = pytensor.function([A, B, v, w], [pt.dot(A, B), pt.dot(A, v), A + pt.outer(v, w)])
ops = sorted({type(node.op).__name__ for node in f.maker.fgraph.apply_nodes})
rng = np.random.default_rng(0)
a, b, x, y = rng.normal(size=(30, 30)), rng.normal(size=(30, 30)), rng.normal(size=30), rng.normal(size=30)
got = f(a, b, x, y)
err = max(float(np.max(np.abs(g - r))) for g, r in zip(got, [a @ b, a @ x, a + np.outer(x, y)]))
print(json.dumps({"source": state["source"], "ops": ops, "err": err}))
"""
    out, stderr = run_python(code)
    assert out["source"] == "bundled"
    assert {"Dot22", "CGemv", "CGer"} <= set(out["ops"])  # the C BLAS ops, not Python fallbacks
    assert out["err"] < 1e-12
    assert "could not link" not in stderr


@pytest.mark.parametrize(("kwargs", "expected"), [({}, True), ({"progress": False}, False), ({"progress": True}, True)])
def test_progress_reaches_pymc_sample(sample_kwargs, kwargs, expected):
    with pytest.raises(_Stop):
        fit_hierarchical(COUNTS, engine="pymc", random_seed=0, **kwargs)
    assert sample_kwargs["progressbar"] is expected


def test_progress_must_be_a_bool(sample_kwargs):
    with pytest.raises(TypeError, match=r"progress must be True or False, got 'no'"):
        bp.fit_pymc(COUNTS, random_seed=0, progress="no")


@pytest.mark.slow
@pytest.mark.parametrize("progress", ["off", "on"])
def test_a_fit_without_progress_prints_nothing(progress):
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", FIT, progress], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    *before, last = proc.stdout.strip().splitlines()
    means = json.loads(last)["means"]
    assert len(means) == 3 and all(0 < m < 1 for m in means)
    if progress == "on":
        assert "Sampling 2 chains" in proc.stderr  # PyMC's own report follows its bar
    else:
        assert (before, proc.stderr) == ([], "")


def test_check_convergence_matches_arviz_and_names_each_failure():
    import arviz as az

    from bayeseval.models.pymc import check_convergence

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 300)) + np.array([[0.0], [0.6]])  # two chains that disagree
    diverging = np.zeros((2, 300), dtype=bool)
    diverging[0, :7] = True
    idata = az.from_dict(posterior={"x": x}, sample_stats={"diverging": diverging})
    with pytest.warns(ConvergenceWarning) as caught:
        d = check_convergence(idata, model="logit_normal")
    assert d["rhat_max"] == pytest.approx(float(az.rhat(idata)["x"]))
    assert d["ess_bulk_min"] == pytest.approx(float(az.ess(idata, method="bulk")["x"]))
    assert d["divergences"] == 7 and d["ess_threshold"] == 200
    assert "rhat" in d["failed"] and "divergences" in d["failed"] and d["ok"] is False
    messages = [str(w.message) for w in caught]
    assert any("R-hat" in m and "'x'" in m for m in messages)
    assert any("7 divergent transitions out of 600 draws" in m and "parametrization='centered'" in m for m in messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        good = check_convergence(az.from_dict(posterior={"x": rng.normal(size=(2, 1000))}))
    assert good["ok"] and good["failed"] == []
