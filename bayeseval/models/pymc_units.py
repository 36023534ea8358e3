r"""The pooled model over sampling units in PyMC: the model of :mod:`bayeseval.models.exact_units`, sampled.

The same model as the exact engine's: each stratum's rate :math:`\theta_h` (its expected unit
accuracy) is drawn from :math:`\mathrm{Beta}(\mu\phi, (1-\mu)\phi)` with the row-level model's
prior on :math:`(\mu, \phi)`; the accuracies of its units from :math:`\mathrm{Beta}(\theta_h
\kappa, (1-\theta_h)\kappa)`, with :math:`\kappa` shared by the strata and the within-unit
correlation :math:`1/(1+\kappa)` uniform on the interval that
:data:`~bayeseval.models.exact_units.KAPPA_BOUNDS` gives; a unit of :math:`m` rows with
:math:`a` successes contributes :math:`\mathrm{BetaBinomial}(a \mid m, \theta_h\kappa,
(1-\theta_h)\kappa)`. The likelihood is read from the units histogram (one term per stratum and
distinct :math:`(a, m)`, times its number of units), so the cost grows with the distinct unit
outcomes, not with the rows. NUTS samples :math:`(\mu, \phi, \theta, \kappa)` jointly.

Use it where the exact engine's grids do not reach (it is the same posterior: the tests compare
the two on the same counts); the exact engine is the default of
:func:`~bayeseval.evaluate` with ``guarantee="average"`` under units.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bayeseval._api.validation import check_positive_int, check_probability
from bayeseval.counts.counts import Counts
from bayeseval.models.exact_units import KAPPA_BOUNDS, units_histogram, units_prior
from bayeseval.models.posterior import Posterior
from bayeseval.models.pymc import check_convergence, hyperprior, load_pymc, sample_nuts

__all__ = ["fit_pymc_units"]


def fit_pymc_units(
    counts: Counts,
    *,
    prior: Any = "default",
    draws: int = 4000,
    random_seed: Any = None,
    chains: int = 2,
    tune: int = 1000,
    target_accept: float = 0.9,
    progress: bool = False,
) -> Posterior:
    """Fit the pooled model over sampling units (binary rows) with PyMC's NUTS sampler.

    Parameters
    ----------
    counts : Counts
        Counts carrying ``units`` (from ``tabulate(..., design=Design(cluster=...))``), binary
        outcomes only.
    prior : {"default"}, dict or Prior
        Prior on ``(mu, phi)``, as for the exact engine (a proper prior).
    draws : int
        Posterior draws in all (split over the chains).
    random_seed : int or numpy Generator, optional
        Seed of the sampler.
    chains, tune, target_accept :
        NUTS settings (:func:`pymc.sample`); one core.
    progress : bool
        Show PyMC's progress bar.

    Returns
    -------
    Posterior
        ``engine="pymc"``, ``model="units"``; ``diagnostics`` holds the convergence checks and
        ``correlation`` (the posterior mean within-unit correlation).

    Examples
    --------
    >>> import pandas as pd
    >>> units = pd.DataFrame({"stratum": ["a", "a", "b", "b"], "unit_successes": [3.0, 1.0, 2.0, 0.0],
    ...                       "unit_trials": [3, 3, 3, 3], "units": [6, 4, 5, 5]})
    >>> idx = pd.Index(["a", "b"], name="stratum")
    >>> c = Counts(pd.Series([22.0, 10.0], index=idx), pd.Series([30, 30], index=idx), units=units)
    >>> post = fit_pymc_units(c, draws=200, tune=200, random_seed=0)  # doctest: +SKIP
    >>> post.engine, post.model  # doctest: +SKIP
    ('pymc', 'units')
    """
    if not isinstance(counts, Counts):
        raise TypeError(f"counts must be a Counts object, got {type(counts).__name__}")
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    target_accept = check_probability(target_accept, "target_accept", open_interval=True)
    prior_obj = units_prior(prior)
    a, m, mult = units_histogram(counts)
    labels = [str(k) for k in counts.strata]
    s = counts.successes.to_numpy(float)
    n = counts.trials.to_numpy(float)
    pooled = float((s.sum() + 0.5) / (n.sum() + 1.0))
    pm = load_pymc()  # deferred: PyMC loads only when this engine is used
    import pytensor.tensor as pt

    rho_lo, rho_hi = 1.0 / (1.0 + KAPPA_BOUNDS[1]), 1.0 / (1.0 + KAPPA_BOUNDS[0])
    with pm.Model(coords={"stratum": labels}) as model:
        mu, phi = hyperprior(prior_obj, pooled)
        theta = pm.Beta("theta", alpha=mu * phi, beta=(1.0 - mu) * phi, dims="stratum")
        rho = pm.Uniform("correlation", lower=rho_lo, upper=rho_hi)
        kappa = pm.Deterministic("unit_kappa", 1.0 / rho - 1.0)
        alpha = theta[:, None] * kappa
        beta = (1.0 - theta[:, None]) * kappa
        dist = pm.BetaBinomial.dist(n=pt.as_tensor(m[None, :]), alpha=alpha, beta=beta)
        pm.Potential("units", (pt.as_tensor(mult) * pm.logp(dist, pt.as_tensor(a[None, :]))).sum())
    seed = int(np.random.default_rng(random_seed).integers(2**31 - 1))
    kwargs = {
        "draws": math.ceil(draws / chains),
        "tune": tune,
        "chains": chains,
        "cores": 1,
        "random_seed": seed,
        "target_accept": target_accept,
        "progressbar": bool(progress),
        "compute_convergence_checks": False,
    }
    idata, elapsed = sample_nuts(model, kwargs)
    post = idata.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    theta_draws = post["theta"].to_numpy().reshape(total, -1)
    hyper = {name: post[name].to_numpy().reshape(total) for name in ("mu", "kappa", "correlation")}
    diagnostics = check_convergence(idata, var_names=["mu", "kappa", "correlation", "theta"], model="units")
    diagnostics["correlation"] = float(hyper["correlation"].mean())
    diagnostics["sampling_seconds"] = float(elapsed)
    return Posterior(
        theta=theta_draws,
        counts=counts,
        hyper=hyper,
        engine="pymc",
        model="units",
        prior=prior_obj,
        idata=idata,
        diagnostics=diagnostics,
    )
