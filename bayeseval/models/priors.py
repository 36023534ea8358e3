"""Priors on the population hyperparameters of the Beta-binomial model.

The population of stratum rates is ``theta_k ~ Beta(mu * kappa, (1 - mu) * kappa)``:
``mu`` is the population mean rate and ``kappa`` the prior "sample size" (concentration).
Large ``kappa`` means strong pooling (all rates close to ``mu``), small ``kappa`` means almost
none. The between-stratum standard deviation of the rates is
``sqrt(mu * (1 - mu) / (kappa + 1))``.

Both engines work with the transformed hyperparameters ``u = logit(mu)`` and
``v = log(kappa)``; :meth:`Prior.log_density` is the log density of ``(u, v)``, Jacobian
included, so the exact engine can integrate it on a grid and the PyMC engine can use the same
density as a potential.

Available priors
----------------
``"default"``
    ``mu ~ Beta(1, 1)`` and ``log(kappa) ~ Normal(log 20, 2.5)`` (``kappa`` log-normal with
    median 20). Reasons: a median of 20 means the population adds the weight of about 20
    labelled rows to each stratum, a mild amount of pooling; the 95% prior range of ``kappa``
    is about 0.15 to 2,700, so both "almost no pooling" (between-stratum sd of 0.2 or more at
    ``mu = 0.1``) and "complete pooling" (sd below 0.006 at ``mu = 0.1``) keep real prior mass,
    and the data decide. It is proper, so simulation-based calibration and PPCs are possible.
    :func:`prior_predictive_spread` shows the implied between-stratum sd of the rates.
``"bda"``
    The improper reference prior ``p(alpha, beta) ∝ (alpha + beta)^(-5/2)`` of Gelman et al.,
    *Bayesian Data Analysis*, 3rd ed., section 5.3, with ``alpha = mu * kappa`` and
    ``beta = (1 - mu) * kappa``. Its density in ``(u, v) = (logit mu, log kappa)``:
    ``|d(alpha, beta)/d(mu, kappa)| = kappa`` and ``|d(mu, kappa)/d(u, v)| = mu (1 - mu) kappa``,
    so ``p(u, v) ∝ kappa^(-5/2) * kappa * mu (1 - mu) * kappa = mu (1 - mu) kappa^(-1/2)``
    (= ``alpha * beta * (alpha + beta)^(-5/2)``, BDA3 eq. 5.9 transformed). The posterior is
    proper when at least one stratum has 0 < s_k < n_k.
dict
    ``{"mu": scipy.stats.beta(2, 8), "kappa": scipy.stats.lognorm(2, scale=50)}``: frozen SciPy
    distributions on (0, 1) and (0, inf); a missing key takes the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import expit, log_expit

from bayeseval._api.validation import make_rng

__all__ = [
    "Prior",
    "resolve_prior",
    "default_prior",
    "prior_predictive_spread",
    "check_proper_posterior",
    "DEFAULT_KAPPA_MEDIAN",
    "DEFAULT_LOG_KAPPA_SD",
]

#: Median of the default log-normal prior on kappa.
DEFAULT_KAPPA_MEDIAN = 20.0
#: Standard deviation of log(kappa) under the default prior.
DEFAULT_LOG_KAPPA_SD = 2.5

_PRIOR_NAMES = ("default", "bda")


@dataclass(frozen=True)
class Prior:
    """A prior on ``(mu, kappa)``.

    Parameters
    ----------
    name : str
        ``"default"``, ``"bda"`` or ``"custom"``.
    mu : scipy.stats frozen distribution or None
        Prior of the population mean rate on (0, 1); None for ``"bda"``.
    kappa : scipy.stats frozen distribution or None
        Prior of the concentration on (0, inf); None for ``"bda"``.
    improper : bool
        True for ``"bda"``.

    Examples
    --------
    >>> p = resolve_prior("default")
    >>> p.name, p.improper
    ('default', False)
    >>> float(p.log_density(0.0, np.log(20.0))) < 0
    True
    """

    name: str
    mu: Any = None
    kappa: Any = None
    improper: bool = False

    def log_density(self, logit_mu: Any, log_kappa: Any) -> np.ndarray:
        """Log density of ``(u, v) = (logit mu, log kappa)``, Jacobian included.

        For ``"bda"`` it is ``log(mu (1 - mu)) - v / 2`` (up to a constant).

        Parameters
        ----------
        logit_mu, log_kappa : array-like
            Broadcastable arrays of ``u`` and ``v``.

        Returns
        -------
        numpy.ndarray
            The log density (``-inf`` outside the support).

        Examples
        --------
        >>> p = resolve_prior("bda")
        >>> round(float(p.log_density(0.0, 0.0)), 4)  # log(0.25)
        -1.3863
        """
        u = np.asarray(logit_mu, dtype=float)
        v = np.asarray(log_kappa, dtype=float)
        log_jac_mu = log_expit(u) + log_expit(-u)  # log mu(1-mu) = log dmu/du
        if self.improper:  # bda
            return log_jac_mu - 0.5 * v
        if self.name == "default" and self.mu is _DEFAULT_MU and self.kappa is _DEFAULT_KAPPA:
            # closed form of the default prior (fast path): Beta(1, 1) density is 1 and
            # log kappa ~ Normal(log median, sd), so p(v) is a normal density in v
            z = (v - np.log(DEFAULT_KAPPA_MEDIAN)) / DEFAULT_LOG_KAPPA_SD
            return log_jac_mu - 0.5 * z**2 - np.log(DEFAULT_LOG_KAPPA_SD * np.sqrt(2 * np.pi))
        mu = expit(u)
        kappa = np.exp(v)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lp = self.mu.logpdf(mu) + log_jac_mu + self.kappa.logpdf(kappa) + v
        return np.where(np.isnan(lp), -np.inf, lp)

    def sample(self, size: int, *, random_seed: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``(mu, kappa)`` from a proper prior.

        Parameters
        ----------
        size : int
            Number of draws.
        random_seed : int or numpy Generator, optional
            Seed for ``numpy.random.default_rng``.

        Returns
        -------
        mu : numpy.ndarray
            Draws of the population mean rate, shape (size,).
        kappa : numpy.ndarray
            Draws of the concentration, shape (size,).

        Examples
        --------
        >>> mu, kappa = resolve_prior("default").sample(3, random_seed=1)
        >>> mu.shape
        (3,)
        """
        if self.improper:
            raise ValueError(f"prior {self.name!r} is improper and cannot be sampled")
        rng = make_rng(random_seed)
        mu = np.asarray(self.mu.rvs(size=size, random_state=rng), dtype=float)
        kappa = np.asarray(self.kappa.rvs(size=size, random_state=rng), dtype=float)
        return mu, kappa

    def __repr__(self) -> str:
        if self.improper:
            return f"Prior(name={self.name!r}, p(alpha, beta) ∝ (alpha+beta)^(-5/2), improper)"
        return f"Prior(name={self.name!r}, mu={_describe(self.mu)}, kappa={_describe(self.kappa)})"


def _describe(dist: Any) -> str:
    try:
        name = dist.dist.name
        args = ", ".join(f"{a:g}" for a in dist.args)
        kw = ", ".join(f"{k}={v:g}" for k, v in dist.kwds.items())
        return f"{name}({', '.join(x for x in (args, kw) if x)})"
    except (AttributeError, TypeError, ValueError):
        return repr(dist)


def default_prior() -> Prior:
    """The default proper prior: ``mu ~ Beta(1, 1)``, ``log kappa ~ Normal(log 20, 2.5)``.

    Examples
    --------
    >>> round(float(default_prior().kappa.median()), 6)
    20.0
    """
    return Prior(name="default", mu=_DEFAULT_MU, kappa=_DEFAULT_KAPPA, improper=False)


_DEFAULT_MU = stats.beta(1.0, 1.0)
_DEFAULT_KAPPA = stats.lognorm(DEFAULT_LOG_KAPPA_SD, scale=DEFAULT_KAPPA_MEDIAN)


def _check_frozen(dist: Any, key: str, lower: float, upper: float) -> Any:
    if not (hasattr(dist, "logpdf") and hasattr(dist, "rvs") and hasattr(dist, "support")):
        raise TypeError(f"prior[{key!r}] must be a frozen scipy.stats distribution, got {type(dist).__name__}")
    lo, hi = (float(x) for x in dist.support())
    if lo < lower or hi > upper:
        raise ValueError(f"prior[{key!r}] must have support inside ({lower:g}, {upper:g}), got ({lo:g}, {hi:g})")
    return dist


def resolve_prior(prior: Any = "default") -> Prior:
    """Turn ``prior`` (a name, a dict of distributions or a Prior) into a :class:`Prior`.

    Parameters
    ----------
    prior : {"default", "bda"}, dict or Prior
        A name, or ``{"mu": frozen, "kappa": frozen}`` with SciPy frozen distributions
        (a missing key takes the default).

    Returns
    -------
    Prior
        The resolved prior (``prior`` itself when it is already a :class:`Prior`).

    Examples
    --------
    >>> from scipy import stats
    >>> p = resolve_prior({"mu": stats.beta(2, 8)})
    >>> p.name, round(float(p.mu.mean()), 2)
    ('custom', 0.2)
    """
    if isinstance(prior, Prior):
        return prior
    if prior is None:
        prior = "default"
    if isinstance(prior, str):
        key = prior.lower()
        if key == "default":
            return default_prior()
        if key == "bda":
            return Prior(name="bda", mu=None, kappa=None, improper=True)
        raise ValueError(
            f"unknown prior {prior!r}; valid choices are {list(_PRIOR_NAMES)} or a dict "
            "{'mu': frozen scipy distribution, 'kappa': frozen scipy distribution}"
        )
    if isinstance(prior, Mapping):
        extra = set(prior) - {"mu", "kappa"}
        if extra:
            raise ValueError(f"prior dict keys must be 'mu' and/or 'kappa', got {sorted(extra)}")
        base = default_prior()
        mu = _check_frozen(prior["mu"], "mu", 0.0, 1.0) if "mu" in prior else base.mu
        kappa = _check_frozen(prior["kappa"], "kappa", 0.0, np.inf) if "kappa" in prior else base.kappa
        return Prior(name="custom", mu=mu, kappa=kappa, improper=False)
    raise TypeError(
        f"prior must be 'default', 'bda', a dict of scipy distributions or a Prior, got {type(prior).__name__}"
    )


def prior_predictive_spread(
    prior: Any = "default",
    *,
    draws: int = 20_000,
    random_seed: Any = None,
    quantiles: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95),
) -> dict[str, Any]:
    """Prior predictive check of the between-stratum spread implied by a prior.

    Draws ``(mu, kappa)`` from the prior and returns the implied between-stratum standard
    deviation of the rates, ``sd = sqrt(mu (1 - mu) / (kappa + 1))``, its quantiles and the
    prior mass in practical bands.

    Parameters
    ----------
    prior : str, dict or Prior
        A proper prior (``"bda"`` is improper and raises).
    draws : int
        Number of prior draws.
    random_seed : int, optional
        Seed.
    quantiles : tuple of float
        Quantiles of the sd to report.

    Returns
    -------
    dict
        ``sd`` (draws), ``quantiles`` (dict), ``mass`` (dict of band -> probability) with bands
        ``"<0.005"`` (practically complete pooling), ``"0.005-0.02"``, ``"0.02-0.05"``,
        ``"0.05-0.2"`` and ``">0.2"`` (practically no pooling).

    Examples
    --------
    >>> out = prior_predictive_spread(random_seed=0)
    >>> out["mass"]["0.005-0.02"] > 0.05
    True
    """
    p = resolve_prior(prior)
    mu, kappa = p.sample(draws, random_seed=random_seed)
    sd = np.sqrt(mu * (1.0 - mu) / (kappa + 1.0))
    edges = [0.0, 0.005, 0.02, 0.05, 0.2, np.inf]
    names = ["<0.005", "0.005-0.02", "0.02-0.05", "0.05-0.2", ">0.2"]
    mass = {nm: float(np.mean((sd >= lo) & (sd < hi))) for nm, lo, hi in zip(names, edges[:-1], edges[1:], strict=True)}
    return {
        "sd": sd,
        "quantiles": {q: float(np.quantile(sd, q)) for q in quantiles},
        "mass": mass,
    }


def check_proper_posterior(prior: Prior, successes: Any, trials: Any) -> None:
    """Raise when an improper prior meets data that leave the posterior improper.

    Under the improper ``"bda"`` prior the posterior of ``(mu, kappa)`` is proper only when
    at least one stratum has ``0 < successes < trials``. With every stratum at 0 successes
    (or every one at its number of trials) the likelihood stays bounded away from 0 as the
    population mean goes to 0 (or 1) while the prior does not decay fast enough, so the
    posterior has infinite mass there: any interval or mean computed from it is an artefact
    of the integration bounds.

    Parameters
    ----------
    prior : Prior
        The resolved prior.
    successes, trials : array_like of int
        Counts per stratum.

    Raises
    ------
    ValueError
        Naming the prior, the counts and what to do (use a proper prior).

    Examples
    --------
    >>> check_proper_posterior(resolve_prior("bda"), [0, 2], [10, 10])  # proper: no error
    >>> check_proper_posterior(resolve_prior("bda"), [0, 0], [10, 10])
    Traceback (most recent call last):
    ...
    ValueError: prior='bda' is improper, and so is its posterior when no stratum has 0 < successes < trials (successes=[0, 0], trials=[10, 10]); use prior='default' (proper) or another proper prior
    """
    if not prior.improper:
        return
    s = np.asarray(successes, dtype=np.int64).ravel()
    n = np.asarray(trials, dtype=np.int64).ravel()
    if np.any((s > 0) & (s < n)):
        return
    raise ValueError(
        f"prior={prior.name!r} is improper, and so is its posterior when no stratum has "
        f"0 < successes < trials (successes={s.tolist()[:10]}, trials={n.tolist()[:10]}); "
        f"use prior='default' (proper) or another proper prior"
    )
