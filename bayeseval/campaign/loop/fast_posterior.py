"""The campaign's fast posterior: the hierarchical Beta-binomial posterior on a small grid.

The posterior a campaign recomputes after every batch is a
:class:`bayeseval.models.posterior.Posterior` in mixture storage: the hierarchical
Beta-binomial posterior of :mod:`bayeseval.models.exact` on the fast preset of its grid over
``(logit mu, log kappa)``, given which each ``theta_k`` is
``Beta(alpha_gk + s_k, beta_gk + n_k - s_k)``. Posterior moments and quantiles of each
``theta_k`` are those of a mixture of Betas (:mod:`bayeseval._kernels.mixture`), so no sampling
is needed. This module fits it (:func:`hierarchical_grid`, :func:`independent_posterior`) and
flags outlying strata (:func:`outlying_strata`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import check_level
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.mixture import BetaMixture
from bayeseval._kernels.ppc import loo_mixed_check
from bayeseval.counts.counts import Counts
from bayeseval.models.exact import ExactFit
from bayeseval.models.posterior import Posterior

__all__ = ["hierarchical_grid", "independent_posterior", "outlying_strata"]


def moment_beta(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = np.clip(mean, 1e-12, 1 - 1e-12)
    nu = np.maximum(mean * (1 - mean) / np.maximum(var, 1e-300) - 1.0, 1e-6)
    return mean * nu, (1 - mean) * nu


# ---------------------------------------------------------------------------------------
# fitting: the exact engine's fast preset
# ---------------------------------------------------------------------------------------
def _grid_size(size: Any) -> int | None:
    if size is None:
        return None
    return int(max(np.atleast_1d(size)))


def hierarchical_grid(
    successes: Any,
    trials: Any,
    *,
    strata: pd.Index | None = None,
    prior: Any = "default",
    prior_mean: Any = None,
    model: str = "beta_binomial",
    outlier_prob: float = 0.1,
    exclude: Any = None,
    size: Any = None,
) -> Posterior:
    """The hierarchical Beta-binomial posterior of the rates on the exact engine's fast grid.

    :class:`bayeseval.models.exact.ExactFit` with ``preset="fast"`` (see
    :mod:`bayeseval._kernels.grid`); ``model="robust"`` is the two-component population of
    :mod:`bayeseval.models.robust`. Strata in ``exclude`` do not inform the hyperparameters
    and get an independent ``Beta(1 + s, 1 + n - s)`` posterior.

    Parameters
    ----------
    successes, trials : array-like
        Counts per stratum.
    strata : pandas.Index, optional
        Stratum labels.
    prior : str, dict or Prior
        Hyperprior, see :func:`bayeseval.models.priors.resolve_prior`.
    prior_mean : array-like, optional
        Prior guesses of each stratum's rate, strictly between 0 and 1; they shift the strata
        on the logit scale (``mu_k = expit(logit mu + o_k)``, offsets centred).
    model : {"beta_binomial", "robust"}
        Population model.
    outlier_prob : float
        Robust model: prior probability that a stratum is an outlier.
    exclude : array-like of bool, optional
        Strata modelled without pooling.
    size : int or (int, int), optional
        Points per axis of the final grid (default 20; of a pair the larger is used).

    Returns
    -------
    Posterior
        Mixture storage; ``exact`` holds the grid fit, ``exact_strata`` the positions of the
        pooled strata, ``outliers`` the strata modelled without pooling (or, under the robust
        model, those with outlier probability above 0.5).

    Examples
    --------
    >>> post = hierarchical_grid([1, 3, 2, 30], [50, 60, 40, 60])
    >>> bool(post.mean().iloc[0] > 1 / 50)  # pooled toward the others
    True
    """
    s = np.asarray(successes, dtype=np.int64)
    n = np.asarray(trials, dtype=np.int64)
    k = len(s)
    strata = pd.RangeIndex(k) if strata is None else pd.Index(strata)
    excl = np.zeros(k, bool) if exclude is None else np.asarray(exclude, bool)
    use = np.flatnonzero(~excl)
    pm = None if prior_mean is None else np.broadcast_to(np.asarray(prior_mean, dtype=float), (k,))[use]
    # every stratum pooled: the arrays and labels as they are (taking all of a large index costs a copy and a check)
    kept = strata if use.size == k else strata[use]
    counts = Counts.from_arrays(s[use], n[use], strata=kept)
    with warnings.catch_warnings():
        # the campaign reports rates; a posterior of kappa truncated at its bound (complete
        # pooling) does not change them
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        fit = ExactFit(
            counts,
            prior=prior,
            model=model,
            prior_mean=pm,
            outlier_prob=outlier_prob,
            preset="fast",
            grid_size=_grid_size(size),
        )
    mix = fit.stratum_mixture()
    if excl.any():
        mix = _with_unpooled(mix, use, s, n)
        counts = Counts.from_arrays(s, n, strata=strata)
    outliers = list(strata[excl])
    if model == "robust":
        outliers = list(strata[mix.outlier_probability() > 0.5])
    return Posterior(
        counts=counts,
        engine="exact",
        model="robust" if (model == "robust" or excl.any()) else model,
        prior=fit.prior,
        mixture=mix,
        exact=fit,
        exact_strata=use if excl.any() else None,
        outliers=outliers,
        diagnostics=fit.diagnostics,
    )


def _with_unpooled(mix: BetaMixture, use: np.ndarray, s: np.ndarray, n: np.ndarray) -> BetaMixture:
    """Add the strata not in ``use`` as independent ``Beta(1 + s, 1 + n - s)`` columns."""
    others = np.ones(len(s), bool)
    others[use] = False
    return mix.with_independent(use, 1.0 + s[others].astype(float), 1.0 + (n - s)[others].astype(float))


def independent_posterior(successes: Any, trials: Any, *, strata: pd.Index | None = None) -> Posterior:
    """Independent ``Beta(1 + s_k, 1 + n_k - s_k)`` posteriors (no pooling).

    Parameters
    ----------
    successes, trials : array-like
        Counts per stratum.
    strata : pandas.Index, optional
        Stratum labels.

    Returns
    -------
    Posterior
        Mixture storage with one node (``model="independent"``, uniform priors).

    Examples
    --------
    >>> independent_posterior([0], [10]).mean().round(4).tolist()
    [0.0833]
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    strata = pd.RangeIndex(len(s)) if strata is None else strata
    counts = Counts.from_arrays(np.asarray(successes), np.asarray(trials), strata=strata)
    return Posterior(
        counts=counts,
        engine="exact",
        model="independent",
        prior="uniform",
        mixture=BetaMixture.single(1 + s, 1 + n - s),
    )


def outlying_strata(post: Posterior, successes: Any, trials: Any, *, level: float = 0.99) -> np.ndarray:
    """Flag strata whose count is extreme under the others (leave-one-out predictive check).

    The leave-one-out mixed predictive check of :mod:`bayeseval._kernels.ppc` (the kernel of
    :func:`bayeseval.checks.predictive.posterior_predictive_check`): for stratum ``k`` the grid nodes are
    reweighted to leave its own likelihood out, and its count is compared with the exact
    mixture of Beta-binomial predictives of a fresh rate from the population. A two-sided
    mid-p value below ``(1 - level) / K`` (Bonferroni over the strata with data) flags it.
    Only strata more than two predictive sd from the predictive mean are tabulated.

    Parameters
    ----------
    post : Posterior
        A pooled posterior (:func:`hierarchical_grid`).
    successes, trials : array-like
        The counts ``post`` was fitted to.
    level : float
        Family-wise level (default 0.99: a 1% chance of any false flag under the model).

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> s, n = [4, 5, 6, 5, 40], [50, 50, 50, 50, 50]
    >>> outlying_strata(hierarchical_grid(s, n), s, n).tolist()
    [False, False, False, False, True]
    """
    level = check_level(level, "level")
    s = np.asarray(successes, dtype=np.int64)
    n = np.asarray(trials, dtype=np.int64)
    flags = np.zeros(len(s), bool)
    if post.exact is None or int((n > 0).sum()) < 3:
        return flags
    pos = np.arange(len(post.strata)) if post.exact_strata is None else post.exact_strata
    fs, fn = post.exact.counts.successes.to_numpy(), post.exact.counts.trials.to_numpy()
    if s.shape != n.shape or s.shape != (len(post.strata),) or np.any(s[pos] != fs) or np.any(n[pos] != fn):
        raise ValueError(
            f"successes and trials must be the counts the posterior was fitted to, got {s.tolist()[:5]} "
            f"and {n.tolist()[:5]}"
        )
    res = loo_mixed_check(s[pos], n[pos], post.exact.predictive_nodes(), level=level, screen=True)
    flags[pos] = res["flag"]
    return flags
