"""The campaign's fast posterior: the hierarchical Beta-binomial posterior on a small grid.

:class:`MixturePosterior` is the posterior a campaign recomputes after every batch: the
hierarchical Beta-binomial posterior of :mod:`bayeseval.models.exact` on the fast preset of its
grid over ``(logit mu, log kappa)``, given which each ``theta_k`` is
``Beta(alpha_gk + s_k, beta_gk + n_k - s_k)``. Posterior moments and quantiles of each
``theta_k`` are those of a mixture of Betas (:mod:`bayeseval._kernels.mixture`), so no sampling
is needed. It is the same model as :class:`bayeseval.models.posterior.Posterior` fitted by
the exact engine, kept as its Beta mixture (no draws) because the campaign reads only
per-stratum quantiles, moments and the weighted rate's moments.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import check_level
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.mixture import BetaMixture
from bayeseval._kernels.ppc import loo_mixed_check
from bayeseval.counts.counts import Counts
from bayeseval.models.exact import ExactFit

__all__ = ["MixturePosterior", "hierarchical_grid", "independent_posterior", "outlying_strata"]


# the posterior object the rules work on
# ---------------------------------------------------------------------------------------
@dataclass
class MixturePosterior:
    """Posterior of the per-stratum rates as a mixture of Betas over a hyperparameter grid.

    A labelled view of a :class:`bayeseval._kernels.mixture.BetaMixture` (one column per
    stratum): ``theta_k | data, grid node g ~ Beta(a[g, k], b[g, k])`` with node weights
    ``w_g``, and for the robust population a second, wide component (see
    :mod:`bayeseval.models.robust`). The independent model is the one-node case.

    ``weighted_moments(weights)`` gives the exact mean and variance of the weighted rate
    ``sum_k weights_k theta_k``; ``weighted(weights, ...)`` gives draws of it (as
    :meth:`bayeseval.models.posterior.Posterior.weighted` does).

    Parameters
    ----------
    mixture : BetaMixture
        The rates' posterior, one column per stratum.
    strata : pandas.Index
        Stratum labels.
    model : str
        ``"beta_binomial"``, ``"robust"`` or ``"independent"``.
    outliers : list
        Strata flagged as outlying (by the predictive check, or with posterior outlier
        probability above 0.5 under the robust model).
    fit : ExactFit or None
        The exact engine's grid fit behind the mixture (None for the independent model).
    fit_strata : numpy.ndarray or None
        Positions of the strata in ``fit`` (strata modelled without pooling are not in it).

    Examples
    --------
    >>> post = independent_posterior([2, 30], [20, 100])
    >>> post.mean().round(3).tolist()
    [0.136, 0.304]
    """

    mixture: BetaMixture
    strata: pd.Index
    model: str = "beta_binomial"
    outliers: list = field(default_factory=list)
    fit: Any = None
    fit_strata: np.ndarray | None = None

    def mean(self) -> pd.Series:
        """Posterior mean of each stratum's rate.

        Returns
        -------
        pandas.Series
            One value per stratum.
        """
        return pd.Series(self.mixture.mean(), index=self.strata, name="mean")

    def var(self) -> pd.Series:
        """Posterior variance of each stratum's rate.

        Returns
        -------
        pandas.Series
            One value per stratum.
        """
        return pd.Series(self.mixture.var(), index=self.strata, name="var")

    def n_eff(self) -> pd.Series:
        """Effective sample size ``mean (1 - mean) / var - 1`` of each stratum's posterior.

        Returns
        -------
        pandas.Series
            One value per stratum (at least 1e-3).
        """
        mean, var = self.mixture.mean(), self.mixture.var()
        return pd.Series(np.maximum(mean * (1 - mean) / var - 1.0, 1e-3), index=self.strata)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of each rate (exact quantiles of the Beta mixture).

        Parameters
        ----------
        level : float
            Credible level (0.95 = 95%).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Lower and upper bounds, one per stratum.
        """
        return self.mixture.interval(level)

    def outlier_probability(self) -> pd.Series:
        """Posterior probability that each stratum belongs to the wide component.

        Returns
        -------
        pandas.Series
            One value per stratum (zeros unless the population is robust).
        """
        return pd.Series(self.mixture.outlier_probability(), index=self.strata, name="outlier_probability")

    def sample(self, size: int, *, random_seed: Any = None) -> np.ndarray:
        """Joint draws of the rates (grid node, then component, then Beta).

        Parameters
        ----------
        size : int
            Number of draws.
        random_seed : int or numpy.random.Generator, optional
            Seed or generator (the rules pass theirs).

        Returns
        -------
        numpy.ndarray
            Shape ``(size, K)``.

        Examples
        --------
        >>> independent_posterior([2, 30], [20, 100]).sample(5, random_seed=0).shape
        (5, 2)
        """
        return self.mixture.sample(size, np.random.default_rng(random_seed))

    def weighted_moments(self, weights: Any) -> tuple[float, float]:
        """Exact mean and variance of ``sum_k weights_k theta_k`` (over the grid).

        Parameters
        ----------
        weights : array-like
            One weight per stratum (population shares).

        Returns
        -------
        (float, float)
            Mean and variance.
        """
        return self.mixture.weighted_moments(weights)

    def weighted(self, weights: Any, *, draws: int = 4000, random_seed: Any = None) -> np.ndarray:
        """Draws of ``sum_k weights_k theta_k`` (see :meth:`weighted_moments` for its moments).

        Parameters
        ----------
        weights : array-like
            One weight per stratum (population shares).
        draws : int
            Number of draws.
        random_seed : int or numpy Generator, optional
            Seed for ``numpy.random.default_rng``.

        Returns
        -------
        numpy.ndarray
            Shape ``(draws,)``.
        """
        return self.mixture.weighted_draws(weights, draws, np.random.default_rng(random_seed))




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
) -> MixturePosterior:
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
    MixturePosterior

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
    counts = Counts.from_arrays(s[use], n[use], strata=strata[use])
    with warnings.catch_warnings():
        # the campaign reports rates; a posterior of kappa truncated at its bound (complete
        # pooling) does not change them
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        fit = ExactFit(counts, prior=prior, model=model, prior_mean=pm, outlier_prob=outlier_prob,
                       preset="fast", grid_size=_grid_size(size))
    mix = fit.stratum_mixture()
    if excl.any():
        mix = _with_unpooled(mix, use, s, n)
    outliers = list(strata[excl])
    if model == "robust":
        outliers = list(strata[mix.outlier_probability() > 0.5])
    return MixturePosterior(
        mixture=mix, strata=strata, model="robust" if (model == "robust" or excl.any()) else model,
        outliers=outliers, fit=fit, fit_strata=use,
    )


def _with_unpooled(mix: BetaMixture, use: np.ndarray, s: np.ndarray, n: np.ndarray) -> BetaMixture:
    """Add the strata not in ``use`` as independent ``Beta(1 + s, 1 + n - s)`` columns."""
    others = np.ones(len(s), bool)
    others[use] = False
    return mix.with_independent(use, 1.0 + s[others].astype(float), 1.0 + (n - s)[others].astype(float))


def independent_posterior(successes: Any, trials: Any, *, strata: pd.Index | None = None) -> MixturePosterior:
    """Independent ``Beta(1 + s_k, 1 + n_k - s_k)`` posteriors (no pooling).

    Examples
    --------
    >>> independent_posterior([0], [10]).mean().round(4).tolist()
    [0.0833]
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    strata = pd.RangeIndex(len(s)) if strata is None else strata
    return MixturePosterior(BetaMixture.single(1 + s, 1 + n - s), strata, model="independent")


def outlying_strata(
    post: MixturePosterior, successes: Any, trials: Any, *, level: float = 0.99
) -> np.ndarray:
    """Flag strata whose count is extreme under the others (leave-one-out predictive check).

    The leave-one-out mixed predictive check of :mod:`bayeseval._kernels.ppc` (the kernel of
    :func:`bayeseval.checks.predictive.posterior_predictive_check`): for stratum ``k`` the grid nodes are
    reweighted to leave its own likelihood out, and its count is compared with the exact
    mixture of Beta-binomial predictives of a fresh rate from the population. A two-sided
    mid-p value below ``(1 - level) / K`` (Bonferroni over the strata with data) flags it.
    Only strata more than two predictive sd from the predictive mean are tabulated.

    Parameters
    ----------
    post : MixturePosterior
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
    if post.fit is None or int((n > 0).sum()) < 3:
        return flags
    pos = post.fit_strata
    fs, fn = post.fit.counts.successes.to_numpy(), post.fit.counts.trials.to_numpy()
    if s.shape != n.shape or s.shape != (len(post.strata),) or np.any(s[pos] != fs) or np.any(n[pos] != fn):
        raise ValueError(
            f"successes and trials must be the counts the posterior was fitted to, got {s.tolist()[:5]} "
            f"and {n.tolist()[:5]}"
        )
    res = loo_mixed_check(s[pos], n[pos], post.fit.predictive_nodes(), level=level, screen=True)
    flags[pos] = res["flag"]
    return flags
