"""The campaign's state: counts per stratum and the cached posterior.

A :class:`CampaignState` holds what the labels so far say, per stratum (successes, trials,
labelled and pending rows, rows still available, population weights), the model and prior
the campaign's fast posterior is fitted with, and that posterior, cached
(:attr:`CampaignState.posterior`, a :class:`~bayeseval.models.posterior.Posterior` in mixture
storage). What the goal and the guarantee decide from it (the intervals each stratum stops on
and reports, the decisions, the gap verdict) is :class:`~bayeseval.campaign.loop.rule_state.RuleState`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import betaincinv

from bayeseval._kernels.finite_pool import pool_ci
from bayeseval.campaign.loop.fast_posterior import (
    hierarchical_grid,
    independent_posterior,
    moment_beta,
    outlying_strata,
)
from bayeseval.models.posterior import Posterior
from bayeseval.models.priors import resolve_prior

__all__ = ["CampaignState", "StrataDesign", "fit_state_posterior"]


@dataclass(frozen=True, eq=False)
class StrataDesign:
    """The strata of a campaign as its rule sees them.

    Attributes
    ----------
    strata : pandas.Index
        The strata, sorted (a MultiIndex for several columns).
    n_rows, n_eligible : numpy.ndarray
        Pool rows and rows that may be proposed, per stratum.
    weights : numpy.ndarray
        Population shares of the strata.
    prior_mean : numpy.ndarray or None
        Per-stratum prior guesses from the mean score.
    costs : numpy.ndarray or None
        Label cost per stratum (None: every label costs 1).
    threshold : numpy.ndarray or None
        Decision threshold per stratum (goal ``"decide"``).
    concentration : numpy.ndarray or None
        Prior concentration of each stratum's confidence sequence (``anytime=True``; see
        :func:`~bayeseval._kernels.guarantee.anytime_concentrations`).
    """

    strata: pd.Index
    n_rows: np.ndarray
    n_eligible: np.ndarray
    weights: np.ndarray
    prior_mean: np.ndarray | None
    costs: np.ndarray | None = None
    threshold: np.ndarray | None = None
    concentration: np.ndarray | None = None


# the counts and the posterior
# ---------------------------------------------------------------------------------------
@dataclass
class CampaignState:
    """A campaign's counts per stratum (arrays aligned to ``strata``) and its cached posterior.

    Parameters
    ----------
    strata : pandas.Index
        Stratum labels; every array below is aligned to them.
    successes, trials : numpy.ndarray
        Counted successes and trials of the metric among the labelled rows.
    labelled : numpy.ndarray
        Labelled rows (for metrics whose trials are only known after labelling,
        ``trials <= labelled``).
    pending : numpy.ndarray
        Rows proposed and not yet labelled.
    available : numpy.ndarray
        Eligible rows never proposed.
    weights : numpy.ndarray
        Population shares (sum to 1).
    trial_known : bool
        True when every labelled row is a trial (error rate, accuracy, or precision-type
        metrics where only trials are eligible). Otherwise each stratum's probability that a
        labelled row is a trial has a ``Beta(1 + trials, 1 + labelled - trials)`` posterior.
    model : str
        ``"auto"`` (hierarchical, robust when a stratum looks outlying), ``"beta_binomial"``,
        ``"robust"`` or ``"independent"``.
    prior, prior_mean
        Hyperprior and optional per-stratum prior guesses.

    Examples
    --------
    >>> cs = CampaignState.from_counts([1, 2], [20, 30], available=[100, 300], model="independent")
    >>> upper = cs.interval(0.95)[1]  # scipy.stats.beta.ppf(0.975, 1 + s, 1 + n - s)
    >>> cs.weights.round(3).tolist(), [round(float(x), 4) for x in upper]
    ([0.267, 0.733], [0.2382, 0.2142])
    """

    strata: pd.Index
    successes: np.ndarray
    trials: np.ndarray
    labelled: np.ndarray
    pending: np.ndarray
    available: np.ndarray
    weights: np.ndarray
    trial_known: bool = True
    model: str = "auto"
    prior: Any = "default"
    prior_mean: np.ndarray | None = None
    _posterior: Posterior | None = field(default=None, init=False, repr=False)
    _intervals: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.model != "independent":
            self.prior = resolve_prior(self.prior)

    @classmethod
    def from_counts(
        cls,
        successes: Any,
        trials: Any,
        *,
        available: Any,
        labelled: Any = None,
        pending: Any = None,
        weights: Any = None,
        strata: Any = None,
        **kwargs: Any,
    ) -> CampaignState:
        """Build a state from arrays (labelled defaults to trials, pending to 0).

        Parameters
        ----------
        successes, trials : array-like of int
            Counted successes and trials per stratum.
        available : array-like of int
            Eligible rows never proposed, per stratum.
        labelled : array-like of int, optional
            Labelled rows per stratum (default: ``trials``).
        pending : array-like of int, optional
            Rows proposed and not yet labelled (default: 0).
        weights : array-like of float, optional
            Population shares (default: each stratum's share of available, labelled and
            pending rows; equal shares when all are 0).
        strata : array-like, optional
            Stratum labels (default: ``0..K-1``).
        **kwargs
            ``trial_known``, ``model``, ``prior``, ``prior_mean``.

        Returns
        -------
        CampaignState
            The state, with nothing cached yet.

        Examples
        --------
        >>> cs = CampaignState.from_counts([1, 2], [20, 30], available=[100, 300])
        >>> cs.weights.round(3).tolist(), cs.labelled.tolist()
        ([0.267, 0.733], [20, 30])
        """
        s = np.asarray(successes, dtype=np.int64)
        n = np.asarray(trials, dtype=np.int64)
        k = len(s)
        avail = np.asarray(available, dtype=np.int64)
        lab = n.copy() if labelled is None else np.asarray(labelled, dtype=np.int64)
        pend = np.zeros(k, np.int64) if pending is None else np.asarray(pending, dtype=np.int64)
        if weights is None:
            size = avail + lab + pend
            weights = size / size.sum() if size.sum() else np.full(k, 1.0 / k)
        idx = pd.RangeIndex(k) if strata is None else pd.Index(strata)
        return cls(idx, s, n, lab, pend, avail, np.asarray(weights, float), **kwargs)

    @property
    def posterior(self) -> Posterior:
        """The current posterior (hierarchical unless ``model="independent"``), cached."""
        if self._posterior is None:
            self._posterior = fit_state_posterior(self)
        return self._posterior

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Per-stratum equal-tailed credible intervals of the posterior at ``level`` (cached).

        Parameters
        ----------
        level : float
            Credible level.

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.
        """
        key = float(level)
        if key not in self._intervals:
            self._intervals[key] = self.posterior.interval(key)
        return self._intervals[key]

    def overall(self, level: float) -> tuple[float, float, float]:
        """Mean and equal-tailed interval of the weighted rate (moment-matched Beta).

        Parameters
        ----------
        level : float
            Credible level.

        Returns
        -------
        mean, lower, upper : float
            Posterior mean of :math:`\\sum_k w_k \\theta_k` and its interval at ``level``.
        """
        mean, var = self.posterior.weighted_moments(self.weights)
        a, b = moment_beta(np.array([mean]), np.array([var]))
        alpha = (1 - level) / 2
        lo, hi = betaincinv(a[0], b[0], np.array([alpha, 1 - alpha]))
        return mean, float(lo), float(hi)

    def p_trial(self) -> np.ndarray:
        """Posterior mean probability that a labelled row is a trial, per stratum.

        Returns
        -------
        numpy.ndarray
            ``(1 + trials) / (2 + labelled)``, or all 1 when ``trial_known``.
        """
        if self.trial_known:
            return np.ones(len(self.strata))
        return (1.0 + self.trials) / (2.0 + self.labelled)

    def exhausted(self) -> np.ndarray:
        """Strata with no row left to propose.

        Returns
        -------
        numpy.ndarray of bool
            True where ``available`` is 0.
        """
        return self.available <= 0

    def invalidate(self) -> None:
        """Drop the cached posterior and intervals after the counts changed."""
        self._posterior = None
        self._intervals = {}


def fit_state_posterior(state: CampaignState) -> Posterior:
    """Fit the posterior a state asks for.

    ``model="auto"``: the plain Beta-binomial unless the leave-one-out predictive check
    (:func:`outlying_strata`) flags a stratum, then the robust mixture population
    (:mod:`bayeseval.models.robust`); the flagged strata are listed in ``outliers``.
    """
    if state.model == "independent":
        return independent_posterior(state.successes, state.trials, strata=state.strata)
    kw = dict(strata=state.strata, prior=state.prior, prior_mean=state.prior_mean)
    if state.model == "robust":
        return hierarchical_grid(state.successes, state.trials, model="robust", **kw)
    post = hierarchical_grid(state.successes, state.trials, **kw)
    if state.model == "auto":
        flags = np.zeros(len(state.strata), bool)
        if len(state.strata) >= 3:
            flags = outlying_strata(post, state.successes, state.trials)
        if flags.any():
            post = hierarchical_grid(state.successes, state.trials, model="robust", **kw)
            post.outliers = sorted(set(post.outliers) | set(state.strata[flags]), key=list(state.strata).index)
    return post


# -- what a state built on the counts reads of them ---------------------------------------------
#: the settings of :meth:`RuleState.from_counts <bayeseval.campaign.loop.rule_state.RuleState.from_counts>`
#: that belong to the counts
COUNT_SETTINGS = ("labelled", "pending", "weights", "strata", "trial_known", "model", "prior", "prior_mean")


def counted_view(name: str) -> property:
    """A read-only view of the :class:`CampaignState` field ``name`` (of a holder's ``counts``)."""
    return property(lambda self: getattr(self.counts, name), doc=f"``counts.{name}`` (:class:`CampaignState`).")


#: (level, successes, trials, pool trials) -> the pool interval's ends, for :func:`cached_pool_ci`
_POOL_CACHE: dict[tuple[float, int, int, int], tuple[float, float]] = {}
_POOL_CACHE_SIZE = 200_000


def cached_pool_ci(s: np.ndarray, n: np.ndarray, rows: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~bayeseval._kernels.finite_pool.pool_ci`, computed only for counts not seen before.

    A campaign changes few strata between looks, and the interval is a function of the
    counts alone, so the others are read back.
    """
    keys = [(level, int(a), int(b), int(c)) for a, b, c in zip(s, n, rows, strict=True)]
    todo = [j for j, key in enumerate(keys) if key not in _POOL_CACHE]
    if todo:
        if len(_POOL_CACHE) > _POOL_CACHE_SIZE:
            _POOL_CACHE.clear()
        new_lo, new_hi = pool_ci(s[todo], n[todo], rows[todo], level)
        _POOL_CACHE.update((keys[j], (float(a), float(b))) for j, a, b in zip(todo, new_lo, new_hi, strict=True))
    ends = [_POOL_CACHE[key] for key in keys]
    return np.array([e[0] for e in ends]), np.array([e[1] for e in ends])
