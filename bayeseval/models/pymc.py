"""The PyMC (NUTS) engine for the hierarchical models.

This is the only module of :mod:`bayeseval` that imports PyMC or PyTensor, and it does
so inside functions, so ``import bayeseval`` stays light.

Models
------
``"beta_binomial"``
    ``s_k ~ Binomial(n_k, theta_k)``, ``theta_k ~ Beta(mu_k kappa, (1 - mu_k) kappa)``
    with ``mu_k = mu`` (or ``expit(logit(mu) + o_k)`` with the offsets of ``prior_mean``)
    and the prior of :func:`bayeseval.models.priors.resolve_prior` on ``(mu, kappa)``.

    Default parametrisation ``"marginal"``: ``theta`` is integrated out, NUTS samples
    ``(mu, kappa)`` under the Beta-binomial likelihood ``s_k ~ BetaBinomial(n_k, mu_k kappa,
    (1 - mu_k) kappa)``, and each draw of ``theta_k`` is then drawn exactly from its
    conjugate conditional ``Beta(mu_k kappa + s_k, (1 - mu_k) kappa + n_k - s_k)``. This is
    the same joint posterior as the centred model (``parametrization="centered"``, which
    samples ``theta`` with NUTS too), but the sampler only sees a two-dimensional, smooth
    target, so it mixes far better and never meets the "funnel" of small ``kappa``.
``"robust"``
    The two-component population of :mod:`bayeseval.models.robust` and the exact engine:
    ``theta_k ~ (1 - eps) Beta(mu_k kappa, (1 - mu_k) kappa) + eps Beta(1, 1)`` with
    ``eps = outlier_prob`` (default 0.1). Sampled in the marginal form (a mixture of two
    Beta-binomial likelihoods); each ``theta_k`` is drawn from its posterior component
    mixture.
``"logit_normal"``
    ``logit theta_k = intercept + o_k + x_k' beta + sum_f sigma_f z_f[level_f(k)]
    + sigma z_k`` with ``intercept ~ Normal(0, 1.5)``, ``sigma, sigma_f ~ HalfNormal(1)``,
    ``z_k ~ Normal(0, 1)`` (non-centred; ``parametrization="centered"`` samples
    ``b_k = sigma z_k ~ Normal(0, sigma)`` instead), and coefficients ``beta ~ Normal(0, 1)``
    on standardised covariates. The effects of each crossed factor (``factors``, levels of a
    multi-level stratum index such as group x label) are ``sigma_f z_f`` with ``z_f`` a
    zero-sum standard normal vector (:class:`pymc.ZeroSumNormal`), so the intercept is the
    average over levels and is not confounded with the factor effects; with factors, the
    stratum term ``sigma z_k`` is their interaction (``interaction=False`` drops it).

After sampling, R-hat, bulk and tail effective sample size and divergences are checked
(:func:`check_convergence`) and each failure raises a
:class:`~bayeseval.ConvergenceWarning` that says what to try.

BLAS
----
PyTensor compiles the models to C and links them to a BLAS library. A pip-installed PyTensor
often finds none ("PyTensor could not link to a BLAS installation") and runs its matrix
operations on slow fallbacks. Before the first model is built, this engine points PyTensor at
the OpenBLAS that SciPy's wheel ships (the one SciPy's own linear algebra uses), after
checking that a test program links and runs with it. Flags the user set (``PYTENSOR_FLAGS``
``blas__ldflags=...`` or a ``.pytensorrc`` file) are never overridden. When no BLAS can be
found at all, a :class:`~bayeseval.PerformanceWarning` says so once, with the one-line fix.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import shlex
import sys
import time
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from bayeseval._api.validation import check_positive_int, check_probability, make_rng
from bayeseval._api.warnings import ConvergenceWarning, PerformanceWarning
from bayeseval.counts.counts import Counts, stratum_labels
from bayeseval.models.exact import prior_offsets
from bayeseval.models.posterior import Posterior
from bayeseval.models.priors import check_proper_posterior, resolve_prior
from bayeseval.models.robust import DEFAULT_OUTLIER_PROB

__all__ = [
    "fit_pymc",
    "check_convergence",
    "configure_pytensor",
    "MODELS",
    "RHAT_THRESHOLD",
    "ESS_PER_CHAIN",
    "ROBUST_OUTLIER_SHARE",
]

#: Models the PyMC engine fits.
MODELS = ("beta_binomial", "robust", "logit_normal")
#: Parametrisations per model; the first is the default.
_PARAMETRIZATIONS = {
    "beta_binomial": ("marginal", "centered"),
    "robust": ("marginal",),
    "logit_normal": ("noncentered", "centered"),
}

#: Largest acceptable rank-normalised split R-hat (Vehtari et al. 2021).
RHAT_THRESHOLD = 1.01
#: Smallest acceptable bulk and tail ESS per chain (Vehtari et al. 2021 ask for 100 per chain,
#: i.e. 400 with four chains).
ESS_PER_CHAIN = 100
#: Default prior share ``eps`` of the outlier component in the robust model (the exact engine's
#: :data:`bayeseval.models.robust.DEFAULT_OUTLIER_PROB`).
ROBUST_OUTLIER_SHARE = DEFAULT_OUTLIER_PROB


# -- PyTensor set-up: BLAS ----------------------------------------------------------------------
#: Real-valued BLAS routines (Fortran names) that PyTensor's generated C code may call.
_BLAS_ROUTINES = tuple(
    f"{p}{name}_"
    for p in "sd"
    for name in (
        "rot",
        "rotg",
        "rotm",
        "rotmg",
        "swap",
        "scal",
        "copy",
        "axpy",
        "dot",
        "nrm2",
        "asum",
        "gemv",
        "gbmv",
        "symv",
        "sbmv",
        "spmv",
        "trmv",
        "tbmv",
        "tpmv",
        "trsv",
        "tbsv",
        "tpsv",
        "ger",
        "syr",
        "spr",
        "syr2",
        "spr2",
        "gemm",
        "symm",
        "syrk",
        "syr2k",
        "trmm",
        "trsm",
    )
) + ("isamax_", "idamax_")

#: The one-line fix named when PyTensor runs without BLAS.
BLAS_FIX = (
    "export PYTENSOR_FLAGS='blas__ldflags=-L/path/to/blas/lib -lopenblas' before starting "
    "Python (or install PyMC with conda: conda install -c conda-forge pymc)"
)

# what the set-up decided, once per process: "ldflags" and "source" (user, bundled, pytensor)
_BLAS_STATE: dict[str, str] = {}


def _bundled_blas() -> tuple[Path, str] | None:
    """The OpenBLAS shipped in SciPy's (or NumPy's) wheel with 32-bit integers, and its symbol prefix.

    Wheels rename the BLAS symbols (``scipy_ddot_`` for ``ddot_``); NumPy's own copy uses 64-bit
    integers (``scipy_ddot_64_``), which PyTensor's C code cannot call, so it is skipped.
    """
    if sys.platform == "win32":  # a DLL is not linked by path with MinGW
        return None
    import scipy

    for package in (scipy, np):
        base = Path(package.__file__).parent
        for folder in (base.parent / f"{base.name}.libs", base / ".dylibs"):
            if not folder.is_dir():
                continue
            for path in sorted(folder.glob("*openblas*")):
                if not (path.suffix in (".so", ".dylib") or ".so." in path.name):
                    continue
                try:
                    lib = ctypes.CDLL(str(path))
                except OSError:
                    continue
                for prefix in ("scipy_", ""):
                    if hasattr(lib, f"{prefix}ddot_"):
                        return path, prefix
    return None


def _blas_flags(path: Path, prefix: str) -> list[str]:
    """PyTensor ``blas__ldflags`` that link ``path``, renaming the routines to its ``prefix``."""
    lib = ctypes.CDLL(str(path))
    # --no-as-needed: GNU ld would otherwise drop a library named before the object using it
    flags = ["-Wl,--no-as-needed"] if sys.platform.startswith("linux") else []
    flags += [str(path), f"-Wl,-rpath,{path.parent}"]
    if prefix:
        flags += [f"-D{name}={prefix}{name}" for name in _BLAS_ROUTINES if hasattr(lib, prefix + name)]
    return flags


def _checked_bundled_flags() -> str:
    """The bundled BLAS's flags if a test program links and runs with them, else ""."""
    found = _bundled_blas()
    if found is None:
        return ""
    from pytensor.link.c.cmodule import try_blas_flag

    flags = _blas_flags(*found)
    return " ".join(shlex.quote(f) for f in flags) if try_blas_flag(flags) else ""


def configure_pytensor() -> dict[str, str]:
    """Point PyTensor at a BLAS library before the first PyMC model is compiled (once per process).

    Flags the user set (``PYTENSOR_FLAGS`` or ``.pytensorrc``) and a choice PyTensor already
    made are kept. Otherwise the OpenBLAS that SciPy's wheel ships is used when a test
    program links and runs with it, and PyTensor's own search runs only when it does not.
    If no BLAS results, a :class:`~bayeseval.PerformanceWarning` names the fix (once).

    Returns
    -------
    dict
        ``ldflags`` (the flags PyTensor uses, "" for none) and ``source``: ``"user"``,
        ``"bundled"`` (SciPy's OpenBLAS) or ``"pytensor"`` (PyTensor's own search).

    Examples
    --------
    >>> configure_pytensor()["source"] in ("user", "bundled", "pytensor")  # doctest: +SKIP
    True
    """
    if _BLAS_STATE:
        return dict(_BLAS_STATE)
    import pytensor

    config = pytensor.config
    param = vars(type(config)).get("blas__ldflags")
    if param is not None and hasattr(param, "val"):  # user flags, or decided earlier
        source = "pytensor" if getattr(param, "is_default", True) else "user"
        flags = config.blas__ldflags
    else:
        flags, source = _checked_bundled_flags(), "bundled"
        if flags:
            config.blas__ldflags = flags
        else:  # PyTensor's own search; its multi-line warning is replaced by ours
            source = "pytensor"
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="PyTensor could not link", category=UserWarning)
                flags = config.blas__ldflags
    _BLAS_STATE.update(ldflags=flags, source=source)
    if not flags and source != "user":
        warnings.warn(
            "PyTensor found no BLAS library, so the PyMC engine runs its matrix operations on "
            f"slow fallbacks. To fix it: {BLAS_FIX}.",
            PerformanceWarning,
            stacklevel=_external_stacklevel(),
        )
    return dict(_BLAS_STATE)


def load_pymc() -> Any:
    """The ``pymc`` module, imported after PyTensor's BLAS is set up."""
    configure_pytensor()
    import pymc

    return pymc


@contextlib.contextmanager
def _quiet_pymc(quiet: bool) -> Iterator[None]:
    """Silence PyMC's informational log lines (sampler choice, timing) while ``quiet``."""
    logger = logging.getLogger("pymc")
    level = logger.level
    if quiet:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


# -- public entry point -----------------------------------------------------------------------
def fit_pymc(
    counts: Counts,
    *,
    model: str = "beta_binomial",
    prior: Any = "default",
    prior_mean: Any = None,
    draws: int = 4000,
    random_seed: Any = None,
    chains: int = 2,
    tune: int = 1000,
    target_accept: float = 0.9,
    covariates: pd.DataFrame | None = None,
    factors: Sequence[Hashable] | None = None,
    interaction: bool = True,
    parametrization: str | None = None,
    outlier_prob: float = ROBUST_OUTLIER_SHARE,
    progress: bool = True,
    **kwargs: Any,
):
    """Fit a hierarchical model to ``counts`` with PyMC's NUTS sampler.

    Usually called through :func:`bayeseval.fit_hierarchical` with ``engine="pymc"``.

    Parameters
    ----------
    counts : Counts
        Successes and trials per stratum.
    model : {"beta_binomial", "robust", "logit_normal"}
        The population model (see the module docstring).
    prior : str, dict or Prior
        Prior on ``(mu, kappa)`` for the Beta-binomial and robust models (see
        :func:`bayeseval.models.priors.resolve_prior`): ``"default"``, ``"bda"`` (improper,
        ``p(alpha, beta) ∝ (alpha + beta)^(-5/2)``) or frozen SciPy distributions. Supported
        families: ``beta`` and ``uniform`` for ``mu``; ``lognorm``, ``gamma``, ``halfcauchy``,
        ``pareto``, ``expon``, ``halfnorm``, ``invgamma``, ``uniform`` and ``loguniform`` for
        ``kappa``. The logit-normal model has its own fixed weakly informative priors and
        accepts only ``"default"``.
    prior_mean : array-like or Series, optional
        Prior guesses ``m_k`` of each stratum's rate (in (0, 1)); the population mean of
        stratum ``k`` becomes ``expit(logit(mu) + o_k)`` with
        ``o_k = logit(m_k) - mean_j logit(m_j)`` (for the logit-normal model ``o_k`` is added
        to the linear predictor). A Series is aligned on the strata.
    draws : int
        Total number of posterior draws, split evenly over the chains (rounded up to a
        multiple of ``chains``).
    random_seed : int or numpy.random.Generator, optional
        Seed; the same seed gives identical draws.
    chains : int
        Number of chains (at least 2 so that R-hat can be computed).
    tune : int
        Tuning (warm-up) iterations per chain, discarded.
    target_accept : float
        NUTS target acceptance rate; raise it (0.95, 0.99) when there are divergences.
    covariates : pandas.DataFrame, optional
        Logit-normal only: numeric stratum-level covariates indexed like the strata. They
        are standardised before fitting, so each coefficient is the change in the logit rate
        per standard deviation of its covariate.
    factors : list of str, optional
        Logit-normal only: names of levels of a multi-level stratum index (e.g.
        ``["group", "label"]``) that get additive random effects, each with its own sd.
    interaction : bool
        Logit-normal only: keep the stratum-level effect ``sigma z_k``. With crossed factors
        whose cells are the strata it is their interaction; False leaves the additive model.
    parametrization : str, optional
        Beta-binomial: ``"marginal"`` (default; sample ``(mu, kappa)`` with ``theta``
        integrated out, mixes best) or ``"centered"`` (sample ``theta`` with NUTS as well).
        Logit-normal: ``"noncentered"`` (default; ``sigma z_k``, best when strata have few
        trials) or ``"centered"`` (``b_k ~ Normal(0, sigma)``, better when every stratum has
        many trials). Robust: ``"marginal"`` only.
    outlier_prob : float
        Robust model only: prior probability ``eps`` that a stratum belongs to the wide
        ``Beta(1, 1)`` component (default 0.1, as in the exact engine).
    progress : bool, default True
        Show PyMC's progress bar while sampling (a live bar in terminals and Jupyter) and its
        log lines (sampler, chains, time taken). False prints nothing.
    **kwargs
        Passed to :func:`pymc.sample`, e.g. ``cores`` (default 1: the chains run one after
        the other, which avoids the start-up cost of worker processes on these small models;
        ``cores=chains`` runs them in parallel), ``nuts_sampler`` or ``init``.

    Returns
    -------
    Posterior
        With ``engine="pymc"``, the InferenceData in ``.idata`` (``theta`` with dims
        ``("chain", "draw", "stratum")``, a ``log_likelihood`` group for ``arviz.loo``) and
        the convergence diagnostics in ``.diagnostics``.

    Warns
    -----
    ConvergenceWarning
        When R-hat, bulk or tail ESS, or the number of divergences fails its threshold.

    Examples
    --------
    >>> from bayeseval import Counts
    >>> counts = Counts.from_arrays([2, 5, 9], [40, 60, 50], strata=["a", "b", "c"])
    >>> post = fit_pymc(counts, draws=1000, random_seed=1)  # doctest: +SKIP
    >>> post.summary()[["mean", "lower", "upper"]].round(2)  # doctest: +SKIP
    """
    model, parametrization = _check_model(counts, model, parametrization, covariates, factors)
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    target_accept = check_probability(target_accept, "target_accept", open_interval=True)
    outlier_prob = check_probability(outlier_prob, "outlier_prob", open_interval=True)
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    prior_obj = _model_prior(model, prior)
    s = counts.successes.to_numpy().astype(np.int64)
    n = counts.trials.to_numpy().astype(np.int64)
    labels = stratum_labels(counts.strata)
    raw_offsets = prior_offsets(prior_mean, counts)
    offsets = np.zeros(len(counts)) if raw_offsets is None else raw_offsets
    if model != "logit_normal":
        check_proper_posterior(prior_obj, s, n)
    rng = make_rng(random_seed)
    pm_seed = int(rng.integers(2**31 - 1))

    if model == "logit_normal":
        pm_model, hyper_names = _logit_normal_model(
            counts, s, n, labels, offsets, covariates, factors, interaction, parametrization
        )
    elif model == "robust":
        pm_model, hyper_names = _robust_model(s, n, labels, offsets, prior_obj, outlier_prob)
    else:
        pm_model, hyper_names = _beta_binomial_model(s, n, labels, offsets, prior_obj, parametrization)
    sample_kwargs = {
        "draws": math.ceil(draws / chains),
        "tune": tune,
        "chains": chains,
        "random_seed": pm_seed,
        "target_accept": target_accept,
        "progressbar": bool(progress),
        "cores": 1,
        "compute_convergence_checks": False,
        **kwargs,
    }
    idata, elapsed = sample_nuts(pm_model, sample_kwargs)

    hyper = _hyper_draws(idata.posterior, hyper_names)
    theta = _theta_draws(idata, hyper, (s, n, offsets, labels), model, outlier_prob, rng)
    diagnostics = check_convergence(idata, var_names=hyper_names + ["theta"], model=model)
    diagnostics.update(
        {
            "chains": int(idata.posterior.sizes["chain"]),
            "draws_per_chain": int(idata.posterior.sizes["draw"]),
            "tune": int(tune),
            "target_accept": float(target_accept),
            "parametrization": parametrization,
            "sampling_seconds": float(elapsed),
        }
    )
    if raw_offsets is not None:
        diagnostics["offsets"] = raw_offsets
    if model == "robust":
        diagnostics["outlier_prob"] = outlier_prob
    return Posterior(
        theta=theta,
        counts=counts,
        hyper=hyper,
        engine="pymc",
        model=model,
        prior=prior_obj,
        idata=idata,
        diagnostics=diagnostics,
    )


def _check_model(counts: Any, model: Any, parametrization: Any, covariates: Any, factors: Any) -> tuple[str, str]:
    """The counts, the model name and its parametrisation (lower case; the model's default)."""
    if not isinstance(counts, Counts):
        raise TypeError(f"counts must be a bayeseval Counts object, got {type(counts).__name__}")
    if len(counts) == 0:
        raise ValueError("counts has no strata")
    if not isinstance(model, str) or model.lower() not in MODELS:
        raise ValueError(f"unknown model {model!r}; valid choices are {list(MODELS)}")
    model = model.lower()
    valid = _PARAMETRIZATIONS[model]
    if parametrization is None:
        parametrization = valid[0]
    if not isinstance(parametrization, str) or parametrization.lower() not in valid:
        raise ValueError(
            f"unknown parametrization {parametrization!r} for model={model!r}; valid choices are {list(valid)}"
        )
    if model != "logit_normal" and (covariates is not None or factors):
        raise ValueError(f"covariates and factors need model='logit_normal', got model={model!r}")
    return model, parametrization.lower()


def _model_prior(model: str, prior: Any) -> Any:
    """The resolved prior; the logit-normal model has fixed priors and takes "default" only."""
    if model != "logit_normal":
        return resolve_prior(prior)
    if not (prior is None or (isinstance(prior, str) and prior.lower() == "default")):
        raise ValueError(
            "model='logit_normal' has fixed weakly informative priors and takes "
            f"prior='default' only, got prior={prior!r}"
        )
    return "default"


def sample_nuts(pm_model: Any, sample_kwargs: dict[str, Any]) -> tuple[Any, float]:
    """Run :func:`pymc.sample` on ``pm_model``; return the InferenceData and the seconds taken."""
    pm = load_pymc()  # deferred: PyMC loads only when this engine is used

    start = time.perf_counter()
    with pm_model, _quiet_pymc(not sample_kwargs.get("progressbar", True)):
        idata = pm.sample(**sample_kwargs)
    return idata, time.perf_counter() - start


def _hyper_draws(post: Any, hyper_names: Sequence[str]) -> dict[str, np.ndarray]:
    """Flat draws of each hyperparameter (one entry per covariate for ``coef``)."""
    total = post.sizes["chain"] * post.sizes["draw"]
    hyper: dict[str, np.ndarray] = {}
    for name in hyper_names:
        values = post[name].to_numpy().reshape(total, -1)
        if name == "coef":  # one entry per covariate
            for j, cov in enumerate(post["covariate"].to_numpy()):
                hyper[f"coef_{cov}"] = values[:, j]
        else:
            hyper[name] = values[:, 0]
    return hyper


def _theta_draws(
    idata: Any,
    hyper: dict[str, np.ndarray],
    data: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]],
    model: str,
    outlier_prob: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Flat draws of the stratum rates, added to ``idata`` with ``alpha``, ``beta`` and the
    log-likelihood. The marginal forms draw ``theta`` from its exact conditional given the
    hyperparameters."""
    s, n, offsets, labels = data
    post = idata.posterior
    n_chains, n_per = post.sizes["chain"], post.sizes["draw"]
    if "theta" in post:
        theta = post["theta"].to_numpy().reshape(n_chains * n_per, -1)
    else:
        mu_k = special.expit(special.logit(hyper["mu"])[:, None] + offsets[None, :])
        kappa = hyper["kappa"][:, None]
        if model == "robust":
            theta = _robust_theta(s, n, mu_k, kappa, outlier_prob, rng)
        else:
            theta = rng.beta(mu_k * kappa + s, (1.0 - mu_k) * kappa + (n - s))
        _add_to_posterior(idata, "theta", theta.reshape(n_chains, n_per, -1), labels)
    if "mu" in hyper and "kappa" in hyper:  # alpha = mu kappa, beta = (1 - mu) kappa
        post["alpha"] = post["mu"] * post["kappa"]
        post["beta"] = (1.0 - post["mu"]) * post["kappa"]
    _add_log_likelihood(idata, theta.reshape(n_chains, n_per, -1), s, n, labels)
    return theta


# -- diagnostics ------------------------------------------------------------------------------
def check_convergence(
    idata: Any,
    *,
    var_names: Sequence[str] | None = None,
    rhat_threshold: float = RHAT_THRESHOLD,
    ess_per_chain: float = ESS_PER_CHAIN,
    warn: bool = True,
    model: str | None = None,
) -> dict[str, Any]:
    """Check R-hat, bulk and tail ESS and divergences of an MCMC run with ArviZ.

    Parameters
    ----------
    idata : arviz.InferenceData
        With a ``posterior`` group (and ``sample_stats.diverging`` when available).
    var_names : list of str, optional
        Variables to check (default: all in the posterior).
    rhat_threshold : float
        Largest acceptable R-hat (default 1.01).
    ess_per_chain : float
        Smallest acceptable bulk and tail ESS per chain (default 100, i.e. 400 for 4 chains).
    warn : bool
        Emit a :class:`~bayeseval.ConvergenceWarning` per failed diagnostic.
    model : str, optional
        The model that was fitted; tailors the advice in the warnings.

    Returns
    -------
    dict
        ``rhat_max``, ``rhat_var``, ``ess_bulk_min``, ``ess_bulk_var``, ``ess_tail_min``,
        ``ess_tail_var``, ``ess_threshold``, ``divergences``, ``failed`` (list of names of
        failed diagnostics) and ``ok`` (bool).

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> idata = az.from_dict(posterior={"x": np.random.default_rng(0).normal(size=(2, 500))})
    >>> check_convergence(idata)["ok"]
    True
    """
    import arviz as az  # deferred: ArviZ loads only with the PyMC engine

    post = idata.posterior
    names = [v for v in (var_names or list(post.data_vars)) if v in post]
    n_chains = int(post.sizes["chain"])
    sub = post[names]
    if n_chains > 1:
        rhat_max, rhat_var = _extreme(az.rhat(sub), names, "max")
    else:
        rhat_max, rhat_var = float("nan"), None
    ess_bulk, ess_bulk_var = _extreme(az.ess(sub, method="bulk"), names, "min")
    ess_tail, ess_tail_var = _extreme(az.ess(sub, method="tail"), names, "min")
    divergences = 0
    if hasattr(idata, "sample_stats") and "diverging" in idata.sample_stats:
        divergences = int(idata.sample_stats["diverging"].to_numpy().sum())
    result = {
        "rhat_max": rhat_max,
        "rhat_var": rhat_var,
        "ess_bulk_min": ess_bulk,
        "ess_bulk_var": ess_bulk_var,
        "ess_tail_min": ess_tail,
        "ess_tail_var": ess_tail_var,
        "ess_threshold": float(ess_per_chain) * n_chains,
        "rhat_threshold": float(rhat_threshold),
        "divergences": divergences,
    }
    n_draws = int(post.sizes["chain"] * post.sizes["draw"])
    failed, messages = _convergence_failures(result, ess_per_chain, n_draws, model)
    if warn:
        level = _external_stacklevel()
        for msg in messages:
            warnings.warn(msg, ConvergenceWarning, stacklevel=level)
    return {**result, "failed": failed, "ok": not failed}


def _extreme(ds: Any, names: Sequence[str], worst: str) -> tuple[float, str | None]:
    """The largest (``worst="max"``) or smallest finite value over ``names``, and its variable."""
    best_val, best_name = (-np.inf if worst == "max" else np.inf), None
    for name in names:
        vals = np.asarray(ds[name].to_numpy(), dtype=float)
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            continue
        v = vals.max() if worst == "max" else vals.min()
        if (worst == "max" and v > best_val) or (worst == "min" and v < best_val):
            best_val, best_name = float(v), name
    return best_val, best_name


def _advice(model: str | None) -> tuple[str, str]:
    """What to try when sampling fails: a reparametrisation (if any) and another engine."""
    if model == "logit_normal":
        return (
            "the centred parametrisation when strata have many trials (parametrization='centered'), ",
            "or the Beta-binomial model with the exact engine (engine='exact').",
        )
    if model == "beta_binomial" or model is None:
        return "the marginal parametrisation (parametrization='marginal'), ", "or the exact engine (engine='exact')."
    return "", "or the exact engine (engine='exact')."


def _convergence_failures(
    d: dict[str, Any], ess_per_chain: float, n_draws: int, model: str | None
) -> tuple[list[str], list[str]]:
    """Names of the failed diagnostics and a plain-English message with advice for each."""
    reparam, alternative = _advice(model)
    failed: list[str] = []
    messages: list[str] = []
    if np.isfinite(d["rhat_max"]) and d["rhat_max"] > d["rhat_threshold"]:
        failed.append("rhat")
        messages.append(
            f"R-hat = {d['rhat_max']:.3f} for {d['rhat_var']!r} exceeds {d['rhat_threshold']}: the chains "
            f"disagree. Try more tuning (tune=2000 or more), more draws, {alternative}"
        )
    consequence = {
        "bulk": "posterior means and medians are imprecise. ",
        "tail": "interval endpoints (tail quantiles) are imprecise. ",
    }
    threshold = d["ess_threshold"]
    for kind in ("bulk", "tail"):
        value, var = d[f"ess_{kind}_min"], d[f"ess_{kind}_var"]
        if np.isfinite(value) and value < threshold:
            failed.append(f"ess_{kind}")
            messages.append(
                f"{kind} ESS = {value:.0f} for {var!r} is below {threshold:.0f} "
                f"({ess_per_chain:g} per chain): {consequence[kind]}"
                f"Try more draws, more tuning, {reparam}{alternative}"
            )
    if d["divergences"] > 0:
        failed.append("divergences")
        messages.append(
            f"{d['divergences']} divergent transitions out of {n_draws} draws: the sampler may have "
            "missed part of the posterior. Try a higher target_accept (0.95 or 0.99), "
            f"{reparam}{alternative}"
        )
    return failed, messages


def _external_stacklevel() -> int:
    """Stack level of the first caller outside the bayeseval package (for warnings.warn)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return level


# -- model builders ---------------------------------------------------------------------------
def _frozen_params(frozen: Any) -> tuple[str, dict[str, float]]:
    """Name and parameters (shape names, loc, scale) of a frozen SciPy distribution."""
    dist = getattr(frozen, "dist", None)
    name = getattr(dist, "name", None)
    if name is None:
        raise TypeError(f"expected a frozen scipy.stats distribution, got {type(frozen).__name__}")
    shapes = [x.strip() for x in (dist.shapes or "").split(",") if x.strip()]
    params = dict(zip(shapes + ["loc", "scale"], (float(a) for a in frozen.args), strict=False))
    params.update({k: float(v) for k, v in frozen.kwds.items()})
    params.setdefault("loc", 0.0)
    params.setdefault("scale", 1.0)
    return name, params


_MU_FAMILIES = ("beta", "uniform")
_KAPPA_FAMILIES = (
    "lognorm",
    "gamma",
    "halfcauchy",
    "pareto",
    "expon",
    "halfnorm",
    "invgamma",
    "uniform",
    "loguniform",
    "reciprocal",
)


def _pm_spec(frozen: Any, which: str) -> tuple[Any, dict[str, float], float]:
    """The PyMC distribution class and parameters equal to a frozen SciPy distribution.

    Returns ``(cls, kwargs, loc)``: ``cls(name, **kwargs)`` (or ``cls.dist(**kwargs)``) has
    the density of the SciPy distribution shifted by ``-loc``, i.e. ``kappa = loc + X``.
    ``loguniform`` comes back as ``("loguniform", {"lower": ..., "upper": ...}, loc)``.
    """
    pm = load_pymc()

    name, p = _frozen_params(frozen)
    loc, scale = p["loc"], p["scale"]
    allowed = _MU_FAMILIES if which == "mu" else _KAPPA_FAMILIES
    if name not in allowed:
        raise ValueError(
            f"prior[{which!r}] = scipy.stats.{name} is not supported by the PyMC engine; "
            f"supported families for {which} are {list(allowed)} (or use engine='exact', "
            "which accepts any frozen SciPy distribution)"
        )
    if name == "beta" and (loc != 0.0 or scale != 1.0):
        raise ValueError(f"prior['mu'] = beta with loc={loc:g}, scale={scale:g} is not supported; use loc=0, scale=1")
    if name in ("loguniform", "reciprocal"):
        # loguniform / reciprocal(a, b, scale): density ∝ 1/x on (a scale, b scale)
        return "loguniform", {"lower": p["a"] * scale, "upper": p["b"] * scale}, loc
    cls_name, params = _PM_FAMILIES[name]
    shifted = 0.0 if name in ("uniform", "beta") else loc
    return getattr(pm, cls_name), params(p, loc, scale), shifted


#: SciPy family -> (PyMC class name, its parameters from SciPy's shape parameters, loc, scale)
_PM_FAMILIES: dict[str, tuple[str, Callable[[dict, float, float], dict[str, float]]]] = {
    "uniform": ("Uniform", lambda p, loc, scale: {"lower": loc, "upper": loc + scale}),
    "beta": ("Beta", lambda p, loc, scale: {"alpha": p["a"], "beta": p["b"]}),
    "lognorm": ("LogNormal", lambda p, loc, scale: {"mu": math.log(scale), "sigma": p["s"]}),
    "gamma": ("Gamma", lambda p, loc, scale: {"alpha": p["a"], "beta": 1.0 / scale}),
    "halfcauchy": ("HalfCauchy", lambda p, loc, scale: {"beta": scale}),
    "pareto": ("Pareto", lambda p, loc, scale: {"alpha": p["b"], "m": scale}),
    "expon": ("Exponential", lambda p, loc, scale: {"lam": 1.0 / scale}),
    "halfnorm": ("HalfNormal", lambda p, loc, scale: {"sigma": scale}),
    "invgamma": ("InverseGamma", lambda p, loc, scale: {"alpha": p["a"], "beta": scale}),
}


def hyperprior(prior: Any, pooled_rate: float) -> tuple[Any, Any]:
    """Register ``mu`` and ``kappa`` in the current PyMC model; return the two tensors."""
    pm = load_pymc()
    import pytensor.tensor as pt

    if prior.improper:
        if prior.name != "bda":
            raise ValueError(f"improper prior {prior.name!r} is not supported by the PyMC engine")
        # p(alpha, beta) ∝ (alpha + beta)^(-5/2) in (u, v) = (logit mu, log kappa):
        # log p(u, v) = log mu + log(1 - mu) - v / 2, the formula of Prior.log_density.
        u = pm.Flat("logit_mu", initval=float(special.logit(np.clip(pooled_rate, 0.01, 0.99))))
        v = pm.Flat("log_kappa", initval=float(np.log(10.0)))
        pm.Potential("bda_prior", _bda_log_density(u, v))
        mu = pm.Deterministic("mu", pt.sigmoid(u))
        kappa = pm.Deterministic("kappa", pt.exp(v))
        return mu, kappa

    cls, kw, _ = _pm_spec(prior.mu, "mu")
    mu = cls("mu", **kw)
    cls, kw, loc = _pm_spec(prior.kappa, "kappa")
    if cls == "loguniform":  # log(kappa - loc) ~ Uniform(log lower, log upper)
        log_k = pm.Uniform("log_kappa", lower=math.log(kw["lower"]), upper=math.log(kw["upper"]))
        return mu, pm.Deterministic("kappa", pt.exp(log_k) + loc)
    if loc != 0.0:
        raw = cls("kappa_raw", **kw)
        return mu, pm.Deterministic("kappa", raw + loc)
    return mu, cls("kappa", **kw)


def _bda_log_density(u: Any, v: Any) -> Any:
    """log p(u, v) of the BDA prior, u = logit mu, v = log kappa (PyTensor graph)."""
    import pytensor.tensor as pt

    return pt.log(pt.sigmoid(u)) + pt.log(pt.sigmoid(-u)) - 0.5 * v


def _beta_binomial_model(
    s: np.ndarray,
    n: np.ndarray,
    labels: list[str],
    offsets: np.ndarray,
    prior: Any,
    parametrization: str,
) -> tuple[Any, list[str]]:
    pm = load_pymc()
    import pytensor.tensor as pt

    with pm.Model(coords={"stratum": labels}) as model:
        mu, kappa = hyperprior(prior, _pooled(s, n))
        if np.any(offsets != 0):
            mu_k = pt.sigmoid(pt.log(mu) - pt.log1p(-mu) + offsets)
        else:
            mu_k = mu
        a, b = mu_k * kappa, (1.0 - mu_k) * kappa
        if parametrization == "centered":
            theta = pm.Beta("theta", alpha=a, beta=b, dims="stratum")
            pm.Binomial("successes", n=n, p=theta, observed=s, dims="stratum")
        else:
            pm.BetaBinomial("successes", n=n, alpha=a, beta=b, observed=s, dims="stratum")
    return model, ["mu", "kappa"]


def _pooled(s: np.ndarray, n: np.ndarray) -> float:
    total = n.sum()
    return float(s.sum() / total) if total > 0 else 0.5


def _robust_model(
    s: np.ndarray,
    n: np.ndarray,
    labels: list[str],
    offsets: np.ndarray,
    prior: Any,
    eps: float,
) -> tuple[Any, list[str]]:
    pm = load_pymc()
    import pytensor.tensor as pt

    with pm.Model(coords={"stratum": labels}) as model:
        mu, kappa = hyperprior(prior, _pooled(s, n))
        mu_k = pt.sigmoid(pt.log(mu) - pt.log1p(-mu) + offsets) if np.any(offsets) else mu
        main = pm.logp(pm.BetaBinomial.dist(n=n, alpha=mu_k * kappa, beta=(1 - mu_k) * kappa), s)
        wide = pm.logp(pm.BetaBinomial.dist(n=n, alpha=1.0, beta=1.0), s)
        pm.Potential(
            "robust_likelihood",
            pt.sum(pt.logaddexp(math.log1p(-eps) + main, math.log(eps) + wide)),
        )
    return model, ["mu", "kappa"]


def _robust_theta(
    s: np.ndarray,
    n: np.ndarray,
    mu_k: np.ndarray,
    kappa: np.ndarray,
    eps: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw theta from its posterior component mixture given (mu, kappa) per draw."""
    a, b = mu_k * kappa, (1.0 - mu_k) * kappa
    log_main = math.log1p(-eps) + stats.betabinom.logpmf(s, n, a, b)
    log_wide = math.log(eps) + stats.betabinom.logpmf(s, n, 1.0, 1.0)
    p_wide = special.expit(log_wide - log_main)
    wide = rng.random(p_wide.shape) < p_wide
    theta = rng.beta(np.where(wide, 1.0, a) + s, np.where(wide, 1.0, b) + (n - s))
    return theta


def _logit_normal_model(
    counts: Counts,
    s: np.ndarray,
    n: np.ndarray,
    labels: list[str],
    offsets: np.ndarray,
    covariates: pd.DataFrame | None,
    factors: Sequence[Hashable] | None,
    interaction: bool,
    parametrization: str = "noncentered",
) -> tuple[Any, list[str]]:
    pm = load_pymc()

    coords: dict[str, Any] = {"stratum": labels}
    x = None
    if covariates is not None:
        x, cov_names = _design_matrix(covariates, counts)
        coords["covariate"] = cov_names
    factor_codes: dict[str, np.ndarray] = {}
    if factors:
        index = counts.strata
        names = list(index.names)
        for f in factors:
            if f not in names or f is None:
                raise ValueError(f"factor {f!r} is not a level of the stratum index; levels are {names}")
            codes, uniques = pd.factorize(index.get_level_values(f), sort=True)
            factor_codes[str(f)] = codes
            coords[f"level_{f}"] = [str(u) for u in uniques]
    if not interaction and not factors and x is None:
        raise ValueError("interaction=False needs factors or covariates, otherwise nothing varies")

    hyper = ["intercept"]
    with pm.Model(coords=coords) as model:
        intercept = pm.Normal("intercept", mu=0.0, sigma=1.5)
        eta = intercept + offsets
        if x is not None:
            coef = pm.Normal("coef", mu=0.0, sigma=1.0, dims="covariate")
            eta = eta + pm.math.dot(x, coef)
            hyper.append("coef")
        for f, codes in factor_codes.items():
            sd = pm.HalfNormal(f"sigma_{f}", sigma=1.0)
            z_f = pm.ZeroSumNormal(f"z_{f}", sigma=1.0, dims=f"level_{f}")
            eta = eta + sd * z_f[codes]
            hyper.append(f"sigma_{f}")
        if interaction:
            sigma = pm.HalfNormal("sigma", sigma=1.0)
            if parametrization == "centered":
                eta = eta + pm.Normal("b", 0.0, sigma, dims="stratum")
            else:
                eta = eta + sigma * pm.Normal("z", 0.0, 1.0, dims="stratum")
            hyper.append("sigma")
        theta = pm.Deterministic("theta", pm.math.invlogit(eta), dims="stratum")
        pm.Binomial("successes", n=n, p=theta, observed=s, dims="stratum")
    return model, hyper


def _design_matrix(covariates: pd.DataFrame, counts: Counts) -> tuple[np.ndarray, list[str]]:
    if not isinstance(covariates, pd.DataFrame):
        raise TypeError(f"covariates must be a pandas DataFrame indexed by stratum, got {type(covariates).__name__}")
    missing = counts.strata.difference(covariates.index)
    if len(missing):
        raise ValueError(f"covariates has no row for strata {list(missing[:5])}")
    frame = covariates.reindex(counts.strata)
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            if not pd.api.types.is_bool_dtype(frame[col]):
                raise TypeError(
                    f"covariate {col!r} is not numeric (dtype {frame[col].dtype}); encode it "
                    "with pandas.get_dummies or pass it as a factor"
                )
    x = frame.to_numpy(dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("covariates contain missing or infinite values")
    sd = x.std(axis=0)
    if np.any(sd == 0):
        col = frame.columns[int(np.argmax(sd == 0))]
        raise ValueError(f"covariate {col!r} is constant across strata")
    return (x - x.mean(axis=0)) / sd, [str(c) for c in frame.columns]


# -- InferenceData helpers --------------------------------------------------------------------
def _add_to_posterior(idata: Any, name: str, values: np.ndarray, labels: list[str]) -> None:
    import xarray as xr

    post = idata.posterior
    da = xr.DataArray(
        values,
        dims=("chain", "draw", "stratum"),
        coords={"chain": post["chain"], "draw": post["draw"], "stratum": labels},
    )
    idata.posterior[name] = da


def _add_log_likelihood(idata: Any, theta: np.ndarray, s: np.ndarray, n: np.ndarray, labels: list[str]) -> None:
    """Pointwise binomial log-likelihood log p(s_k | theta_k) for arviz.loo."""
    import xarray as xr

    post = idata.posterior
    ll = stats.binom.logpmf(s, n, theta)
    ds = xr.Dataset(
        {
            "successes": xr.DataArray(
                ll,
                dims=("chain", "draw", "stratum"),
                coords={"chain": post["chain"], "draw": post["draw"], "stratum": labels},
            )
        }
    )
    if "log_likelihood" in idata.groups():
        del idata.log_likelihood
    idata.add_groups(log_likelihood=ds)
    data = {
        "observed_data": ("successes", s),
        "constant_data": ("trials", n),
    }
    for group, (name, values) in data.items():
        if group not in idata.groups():
            idata.add_groups(
                {group: xr.Dataset({name: xr.DataArray(values, dims="stratum", coords={"stratum": labels})})}
            )
        elif name not in idata[group]:
            idata[group][name] = xr.DataArray(values, dims="stratum", coords={"stratum": labels})
