"""Proposal rules of the active loop, and the fast posterior they work on.

Every rule has the signature ``propose_allocation(state, batch_size, rng) -> pandas.Series``
(labels to request per stratum, aligned with ``state.strata``). A :class:`RuleState` holds the
per-stratum counts (successes, trials, labelled, pending, rows still available) and the goal;
its :attr:`RuleState.posterior` is a :class:`MixturePosterior`: the hierarchical Beta-binomial
posterior of :mod:`bayeseval.models.exact` on the fast preset of its grid over
``(logit mu, log kappa)``, given which each ``theta_k`` is
``Beta(alpha_gk + s_k, beta_gk + n_k - s_k)``. Posterior moments and quantiles of each
``theta_k`` are those of a mixture of Betas (:mod:`bayeseval._kernels.mixture`), so no sampling
is needed.

Preposterior variance
---------------------
For ``theta ~ Beta(a, b)`` and ``m`` more Bernoulli trials, the expected posterior variance is
``Var(theta) * (a + b) / (a + b + m)`` (law of total variance; ``Var(E[theta | y]) =
Var(theta) * m / (a + b + m)``). For the hierarchical mixture the rule uses the effective
sample size ``n_eff = mean (1 - mean) / var - 1`` of each stratum's posterior, which includes
the strength borrowed from the other strata, so a small stratum that pooling already pins down
is asked for fewer labels. The expected half-width after ``t`` more trials is
``halfwidth * sqrt(n_eff / (n_eff + t))``.
"""

from __future__ import annotations

import dataclasses
import heapq
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import betaincinv

from bayeseval._api.validation import check_level, check_probability
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.anytime import (
    anytime_decisions,
    confidence_sequence_bounds,
    tuned_concentration,
)
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.conflict import adaptive_bounds
from bayeseval._kernels.disparity import bonferroni_level, gap_interval
from bayeseval._kernels.mixture import BetaMixture
from bayeseval._kernels.ppc import loo_mixed_check
from bayeseval.counts.counts import Counts
from bayeseval.models.exact import ExactFit
from bayeseval.models.priors import resolve_prior

__all__ = [
    "RULES",
    "MixturePosterior",
    "RuleState",
    "get_rule",
    "hierarchical_grid",
    "independent_posterior",
    "outlying_strata",
    "expected_width",
    "independent_beta",
    "thompson",
    "neyman",
    "proportional",
    "uniform",
    "forecast_labels",
    "forecast_decision",
    "decision_allocation",
    "decision_gains",
    "gap_targets",
    "undecided_excess",
    "target_feasibility",
    "stratum_feasibility",
    "full_size_state",
    "AT_THRESHOLD",
    "decision_reach",
    "GUARANTEES",
    "guarantee_stop_level",
    "guaranteed_bounds",
]

#: the decision of a stratum known to lie within the indifference margin of its threshold
AT_THRESHOLD = "at the threshold"


# ---------------------------------------------------------------------------------------
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




def _moment_beta(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


# ---------------------------------------------------------------------------------------
# the per-stratum guarantee
# ---------------------------------------------------------------------------------------
#: what a campaign's per-stratum intervals and decisions promise (see :class:`RuleState`)
GUARANTEES = ("stratum", "average")

#: share of ``1 - level`` left to the stopping interval of the width goal under
#: ``guarantee="stratum"`` (0.95 -> 0.965; see :func:`guarantee_stop_level`)
STOP_ALPHA_SHARE = 0.7

#: fewest trials of its own a stratum needs before an anytime decision
DECISION_MIN_TRIALS = 5


def guarantee_stop_level(level: float) -> float:
    """Level of the interval the width goal stops on (and reports) under ``guarantee="stratum"``.

    ``1 - 0.7 (1 - level)``: 0.965 at level 0.95. Stopping when an interval is narrow
    enough selects the runs whose interval happens to be narrow, which costs coverage at
    stop; the higher level pays for it.

    Parameters
    ----------
    level : float
        The campaign's level.

    Returns
    -------
    float

    Notes
    -----
    Measured exactly for one stratum (:func:`bayeseval._kernels.sequential.sequential_outcome`,
    adaptive interval with a fixed ``Beta(2, 18)`` prior, target half-width 0.05, at most
    1,000 labels, looks every 1, 5, 20 and 50 labels, true rates 0.02-0.50): computed at
    0.95 the interval covers the true rate at stop 0.945 on average and 0.924 at worst
    (rate 0.11, a look after every label); computed at 0.965 its worst coverage at stop is
    0.94 or more for every rate and schedule (``tests/test_active_rules.py`` checks rates
    0.05, 0.11 and 0.30).

    Examples
    --------
    >>> round(guarantee_stop_level(0.95), 4)
    0.965
    """
    return 1.0 - STOP_ALPHA_SHARE * (1.0 - float(level))


def guaranteed_bounds(successes: Any, trials: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's interval with coverage at least ``level`` at every value of its own rate.

    The adaptive (FAB) interval from the leave-one-out prior of the other strata
    (:func:`bayeseval._kernels.conflict.adaptive_bounds`), for every stratum with trials while
    at least two other strata have trials; Clopper-Pearson for a stratum with trials otherwise;
    ``[0, 1]`` without trials. Which interval a stratum gets depends only on which strata
    have trials, never on the counts' values.

    Parameters
    ----------
    successes, trials : array_like of int
        Counts per stratum.
    level : float
        Confidence level.

    Returns
    -------
    lower, upper : numpy.ndarray

    Examples
    --------
    Two strata only: Clopper-Pearson (``scipy.stats.binomtest(3, 40).proportion_ci()``).

    >>> lo, hi = guaranteed_bounds([3, 5], [40, 50], 0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.0157, 0.2039)
    """
    s = np.asarray(successes, dtype=np.int64)
    n = np.asarray(trials, dtype=np.int64)
    lo, hi = np.zeros(s.size), np.ones(s.size)
    has = n > 0
    if np.count_nonzero(has) >= 3:  # every stratum with trials has two others with trials
        alo, ahi = adaptive_bounds(s, n, level)
        lo[has], hi[has] = alo[has], ahi[has]
    elif has.any():
        lo[has], hi[has] = binomial_bounds(s[has].astype(float), n[has].astype(float), 1.0 - level,
                                           "clopper_pearson")
    return lo, hi


def _implied_size(halfwidth: np.ndarray, mean: np.ndarray, level: float) -> np.ndarray:
    """Effective sample size a half-width stands for: ``z^2 m (1 - m) / h^2`` (at least 1)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2.0)
    m = np.clip(mean, 0.02, 0.98)
    return np.maximum(z**2 * m * (1.0 - m) / np.maximum(halfwidth, 1e-9) ** 2, 1.0)


# ---------------------------------------------------------------------------------------
# the state a rule sees
# ---------------------------------------------------------------------------------------
@dataclass
class RuleState:
    """What a rule needs to know about a campaign, per stratum (arrays aligned to ``strata``).

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
    target_halfwidth, level, goal
        The goal: ``"each"`` stratum's or the ``"overall"`` weighted rate's credible interval
        half-width at most ``target_halfwidth``.
    trial_known : bool
        True when every labelled row is a trial (error rate, accuracy, or precision-type
        metrics where only trials are eligible). Otherwise each stratum's probability that a
        labelled row is a trial has a ``Beta(1 + trials, 1 + labelled - trials)`` posterior.
    model : str
        ``"auto"`` (hierarchical, robust when a stratum looks outlying), ``"beta_binomial"``,
        ``"robust"`` or ``"independent"``.
    prior, prior_mean
        Hyperprior and optional per-stratum prior guesses.
    threshold : numpy.ndarray, optional
        Goal ``"decide"``: the threshold of each stratum's rate (one value per stratum).
    direction : {"below", "above"}
        Goal ``"decide"``: a stratum meets its threshold when its rate is below it
        (error-type metrics) or above it (accuracy-type metrics).
    tolerance : float, optional
        Goal ``"gap"``: the largest acceptable max-min gap between the strata's rates.
    margin : float
        Goal ``"decide"``: the indifference margin; a stratum whose interval lies within
        ``threshold +/- margin`` is decided ``"at the threshold"`` (see :meth:`at_threshold`).
        Default 0: off.
    guarantee : {"average", "stratum"}
        What the per-stratum intervals and decisions promise (goals ``"each"``, ``"decide"``
        and ``"gap"``; goal ``"overall"`` is the same under both). ``"stratum"``: each
        stratum's interval is :func:`guaranteed_bounds` at :func:`guarantee_stop_level`
        (coverage at least ``level`` at every true rate of that stratum, also at the moment it
        stops) and decisions are anytime-valid tests
        (:func:`bayeseval._kernels.anytime.anytime_decisions`; wrong with probability at most
        ``1 - level`` per stratum whatever the look schedule). ``"average"`` (the default of a
        bare state; campaigns default to ``"stratum"``): a stratum stops when its pooled
        interval at ``level`` reaches the target and is decided when its pooled ``P(meets)``
        reaches ``level``; these cover on average over strata like these.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 100], target_halfwidth=0.1)
    >>> int(expected_width(st, 10, np.random.default_rng(0)).sum())
    10
    """

    strata: pd.Index
    successes: np.ndarray
    trials: np.ndarray
    labelled: np.ndarray
    pending: np.ndarray
    available: np.ndarray
    weights: np.ndarray
    target_halfwidth: float = 0.05
    level: float = 0.95
    goal: str = "each"
    trial_known: bool = True
    model: str = "auto"
    prior: Any = "default"
    prior_mean: np.ndarray | None = None
    threshold: np.ndarray | None = None
    direction: str = "below"
    tolerance: float | None = None
    margin: float = 0.0
    guarantee: str = "average"
    _posterior: MixturePosterior | None = field(default=None, init=False, repr=False)
    _interval: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)
    _decision: dict = field(default_factory=dict, init=False, repr=False)
    _adaptive: dict = field(default_factory=dict, init=False, repr=False)

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
    ) -> RuleState:
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
            Further :class:`RuleState` fields (``target_halfwidth``, ``level``, ``goal``,
            ``model``, ...).

        Returns
        -------
        RuleState
            The state, with nothing cached yet.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 300])
        >>> st.weights.round(3).tolist()
        [0.267, 0.733]
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

    # -- derived quantities (cached) ------------------------------------------------------
    @property
    def posterior(self) -> MixturePosterior:
        """The current posterior (hierarchical unless ``model="independent"``)."""
        if self._posterior is None:
            self._posterior = fit_state_posterior(self)
        return self._posterior

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-stratum equal-tailed credible intervals at ``level`` (cached).

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.
        """
        if self._interval is None:
            self._interval = self.posterior.interval(self.level)
        return self._interval

    def halfwidths(self) -> np.ndarray:
        """Per-stratum credible-interval half-widths at ``level``.

        Returns
        -------
        numpy.ndarray
            Half the width of each stratum's credible interval.
        """
        lo, hi = self.intervals()
        return (hi - lo) / 2.0

    def per_stratum(self) -> bool:
        """Whether the per-stratum guarantee applies: ``guarantee="stratum"`` and a goal other than ``"overall"``.

        Returns
        -------
        bool
            True when the guaranteed intervals and the anytime tests are in force.
        """
        return self.guarantee == "stratum" and self.goal != "overall"

    def guaranteed_intervals(self, level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every stratum's :func:`guaranteed_bounds` (cached).

        Parameters
        ----------
        level : float, optional
            Interval level (default :func:`guarantee_stop_level` of ``level``: the interval
            the width goal stops on and the campaign reports).

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.
        """
        level = guarantee_stop_level(self.level) if level is None else float(level)
        key = ("guaranteed", level)
        if key not in self._adaptive:
            self._adaptive[key] = guaranteed_bounds(self.successes, self.trials, level)
        return self._adaptive[key]

    def stop_neff(self) -> np.ndarray:
        """Effective sample sizes the expected-width rules scale :meth:`stop_halfwidths` with.

        The posterior's ``n_eff`` under ``guarantee="average"``. Under ``"stratum"`` the size
        the guaranteed half-width stands for, ``z^2 m (1 - m) / h^2`` with ``m`` the stratum's
        own ``(s + 1/2) / (n + 1)``: the guaranteed interval borrows from the other strata only
        as far as its data look typical, and this size says how far it did, so ``t`` more
        trials are expected to bring the half-width to ``h sqrt(n_eff / (n_eff + t))`` (the
        square-root law of the interval's own width), not the pooled interval's.

        Returns
        -------
        numpy.ndarray
            One effective sample size per stratum.
        """
        if not self.per_stratum():
            return self.posterior.n_eff().to_numpy()
        own = (self.successes + 0.5) / (self.trials + 1.0)
        return _implied_size(self.stop_halfwidths(), own, guarantee_stop_level(self.level))

    def stop_halfwidths(self) -> np.ndarray:
        """Per-stratum half-widths the width goal stops on.

        Under ``guarantee="stratum"``: of :meth:`guaranteed_intervals`; under ``"average"``:
        of the posterior interval at ``level`` (:meth:`halfwidths`).

        Returns
        -------
        numpy.ndarray
            One half-width per stratum.
        """
        if self.per_stratum():
            lo, hi = self.guaranteed_intervals()
            return (hi - lo) / 2.0
        return self.halfwidths()

    def read_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The interval each stratum reports at ``level``, and which one it is.

        Returns
        -------
        read : numpy.ndarray of str
            ``"guaranteed"`` under ``guarantee="stratum"`` (:meth:`guaranteed_intervals`),
            else ``"pooled"`` (``"own"`` for the independent model).
        lower, upper : numpy.ndarray
            Its ends.
        """
        k = len(self.strata)
        if self.per_stratum():
            glo, ghi = self.guaranteed_intervals()
            return np.full(k, "guaranteed", dtype=object), glo, ghi
        lo, hi = self.intervals()
        return np.full(k, "own" if self.model == "independent" else "pooled", dtype=object), lo, hi

    def read_halfwidths(self) -> np.ndarray:
        """Per-stratum half-widths of the interval each stratum reports (:meth:`read_intervals`).

        Returns
        -------
        numpy.ndarray
            One half-width per stratum.
        """
        _, lo, hi = self.read_intervals()
        return (hi - lo) / 2.0

    def overall(self) -> tuple[float, float, float]:
        """Mean and equal-tailed interval of the weighted rate (moment-matched Beta).

        Returns
        -------
        mean, lower, upper : float
            Posterior mean of :math:`\\sum_k w_k \\theta_k` and its interval at ``level``.
        """
        mean, var = self.posterior.weighted_moments(self.weights)
        a, b = _moment_beta(np.array([mean]), np.array([var]))
        alpha = (1 - self.level) / 2
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

    def stratum_done(self) -> np.ndarray:
        """Strata that meet the goal (:meth:`goal_met`).

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return self.goal_met()

    def exhausted(self) -> np.ndarray:
        """Strata with no row left to propose.

        Returns
        -------
        numpy.ndarray of bool
            True where ``available`` is 0.
        """
        return self.available <= 0

    def is_done(self) -> bool:
        """Whether the goal is met (or nothing is left to label).

        Returns
        -------
        bool
            True when the ``goal`` is reached, or every unfinished stratum is exhausted
            with nothing pending.
        """
        if self.goal == "overall":
            _, lo, hi = self.overall()
            return (hi - lo) / 2 <= self.target_halfwidth or bool(self.exhausted().all())
        if self.goal == "gap":
            return self.gap_decided() or bool(np.all(self.exhausted() & (self.pending == 0)))
        return bool(np.all(self.stratum_done() | (self.exhausted() & (self.pending == 0))))

    def invalidate(self) -> None:
        """Drop cached posterior and intervals after the counts changed."""
        self._posterior = None
        self._interval = None
        self._decision = {}
        self._adaptive = {}

    # -- decision goals ("decide" and "gap") -----------------------------------------------
    def pooled_decided(self) -> np.ndarray:
        """Strata whose posterior ``P(meets)`` alone is decided (at least or at most one minus the level).

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum (goal ``"decide"``).
        """
        p, lv = self.p_meets(), self.level
        return (p >= lv) | (p <= 1.0 - lv)

    def p_meets(self) -> np.ndarray:
        """Posterior probability that each stratum's rate meets its threshold (goal ``"decide"``).

        ``P(theta_k < threshold_k)`` for direction ``"below"`` and ``P(theta_k >
        threshold_k)`` for ``"above"``, from the exact CDF of the posterior Beta mixture.

        Returns
        -------
        numpy.ndarray
            One probability per stratum.

        Raises
        ------
        ValueError
            When the state has no ``threshold``.

        Examples
        --------
        >>> st = RuleState.from_counts([2], [100], available=[0], model="independent",
        ...                            goal="decide", threshold=np.array([0.05]))
        >>> round(float(st.p_meets()[0]), 4)  # scipy.stats.beta.cdf(0.05, 3, 99)
        0.8858
        """
        if self.threshold is None:
            raise ValueError(f"p_meets needs a threshold (goal='decide'), got threshold={self.threshold!r}")
        if "p_meets" not in self._decision:
            below = self.posterior.mixture.cdf(np.asarray(self.threshold, dtype=float))
            self._decision["p_meets"] = below if self.direction == "below" else 1.0 - below
        return self._decision["p_meets"]

    def goal_met(self) -> np.ndarray:
        """Strata that meet the goal.

        Goal ``"each"``: the half-width it stops on (:meth:`stop_halfwidths`) within the
        target. ``"decide"``: decided on one side of the threshold (:meth:`side_decided`) or
        at it (:meth:`at_threshold`). ``"gap"``: the verdict on the max-min gap is decided
        (every stratum alike). ``"overall"``: the weighted rate's half-width is within the
        target (every stratum alike).

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 30], [200, 200], available=[0, 0], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> st.goal_met().tolist()
        [True, True]
        """
        k = len(self.strata)
        if self.goal == "decide":
            return self.side_decided() | self.at_threshold()
        if self.goal == "gap":
            return np.full(k, self.gap()["verdict"] != "undecided")
        if self.goal == "overall":
            _, lo, hi = self.overall()
            return np.full(k, (hi - lo) / 2 <= self.target_halfwidth)
        return self.stop_halfwidths() <= self.target_halfwidth

    def side_decided(self) -> np.ndarray:
        """Strata decided on one side of the threshold: the ``P(meets)`` part of :meth:`goal_met`.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum (goal ``"decide"``).
        """
        if self.per_stratum():
            return self.anytime_decisions() != "undecided"
        return self.pooled_decided()

    def at_threshold(self) -> np.ndarray:
        """Strata whose rate is known to lie within the indifference margin of the threshold.

        Goal ``"decide"`` with ``margin > 0``: the stratum's equal-tailed credible interval at
        ``level`` (exact quantiles of the posterior Beta mixture) lies within
        ``[threshold - margin, threshold + margin]``. Such a stratum is decided ``"at the threshold"``: labelling it further could only tell on which
        side of the threshold a rate lies that is, for the user's purpose, on it. Under
        ``guarantee="stratum"`` the interval is instead the stratum's confidence sequence
        (:func:`bayeseval._kernels.anytime.confidence_sequence_bounds` at :meth:`anytime_level`,
        valid at every look) and the stratum needs at least 5 trials.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum; all False without a margin or for other goals.

        Examples
        --------
        123 errors in 1,000 trials against a threshold of 0.12: the 95% interval
        (0.103, 0.144) is within 0.12 +/- 0.03, not within 0.12 +/- 0.01.

        >>> st = RuleState.from_counts([123], [1000], available=[0], model="independent",
        ...                            goal="decide", threshold=np.array([0.12]), margin=0.03)
        >>> st.at_threshold().tolist(), st.decisions().tolist()
        ([True], ['at the threshold'])
        >>> st.margin = 0.01; st.invalidate(); st.decisions().tolist()
        ['undecided']
        """
        k = len(self.strata)
        if self.goal != "decide" or not self.margin:
            return np.zeros(k, bool)
        if "at" not in self._decision and self.per_stratum():
            self._decision["at"] = self._sequence_within()
        if "at" not in self._decision:
            thr = np.asarray(self.threshold, dtype=float)
            lo, hi = self.posterior.interval(self.level)
            self._decision["at"] = (lo >= thr - self.margin) & (hi <= thr + self.margin) & (self.trials > 0)
        return self._decision["at"]

    def decisions(self) -> np.ndarray:
        """Each stratum's decision: ``"meets"``, ``"fails"``, ``"at the threshold"`` or ``"undecided"``.

        Goal ``"decide"``. Under ``guarantee="stratum"`` the anytime-valid tests
        (:meth:`anytime_decisions`); under ``"average"`` the pooled ``P(meets)`` at ``level``
        (:meth:`pooled_decided`). ``"at the threshold"`` (only with a ``margin``, see
        :meth:`at_threshold`) is given to a stratum not decided on either side.

        Returns
        -------
        numpy.ndarray of str
            One value per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 30, 18], [200, 200, 200], available=[0, 0, 0],
        ...                            model="independent", goal="decide", threshold=np.array([0.1] * 3))
        >>> st.decisions().tolist()
        ['meets', 'fails', 'undecided']

        """
        if self.per_stratum():
            out = self.anytime_decisions().copy()
            out[self.at_threshold() & (out == "undecided")] = AT_THRESHOLD
            return out
        p = self.p_meets()
        out = np.where(p >= 0.5, "meets", "fails").astype(object)
        out[self.at_threshold() & ~self.side_decided()] = AT_THRESHOLD
        out[~self.stratum_done()] = "undecided"
        return out

    def anytime_level(self) -> float:
        """Level of each anytime test under ``guarantee="stratum"``.

        ``level``; with a ``margin``, ``1 - (1 - level) / 2`` for the two side tests and
        for the confidence sequence of :meth:`at_threshold`, so that a wrong decision of
        either kind has probability at most ``1 - level`` (union bound).

        Returns
        -------
        float
            The level of each test and of the confidence sequence.
        """
        return self.level if not self.margin else 1.0 - (1.0 - self.level) / 2.0

    def decision_concentration(self) -> float:
        """Prior concentration of the anytime tests: tuned for the median stratum size.

        :func:`bayeseval._kernels.anytime.tuned_concentration` at the median over strata of
        their rows (labelled, pending and available, which stays the same through a
        campaign), clipped to 20-4,000; fixed before any label, as the guarantee needs.

        Returns
        -------
        float
            The concentration ``c`` of the ``Beta(c t, c (1 - t))`` prior of the tests.
        """
        size = np.median(self.available + self.labelled + self.pending) if len(self.strata) else 20
        return tuned_concentration(int(np.clip(size, 20, 4000)), self.anytime_level())

    def anytime_decisions(self) -> np.ndarray:
        """Each stratum's anytime-valid decision (``guarantee="stratum"``), cached.

        :func:`bayeseval._kernels.anytime.anytime_decisions` at :meth:`anytime_level` with
        :meth:`decision_concentration` and at least 5 trials of the stratum's own: the
        probability that a stratum is ever decided wrongly is at most ``1 - level`` whatever
        the batch size and number of looks.

        Returns
        -------
        numpy.ndarray of str
            ``"meets"``, ``"fails"`` or ``"undecided"`` per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([2, 60, 18], [300, 300, 200], available=[0, 0, 0], goal="decide",
        ...                            threshold=np.array([0.1] * 3), guarantee="stratum")
        >>> st.anytime_decisions().tolist()
        ['meets', 'fails', 'undecided']
        """
        if "anytime" not in self._decision:
            k = len(self.strata)
            thr = np.broadcast_to(np.asarray(self.threshold, dtype=float), (k,))
            out = np.full(k, "undecided", dtype=object)
            lv, c = self.anytime_level(), self.decision_concentration()
            for t in np.unique(thr):
                sel = thr == t
                out[sel] = anytime_decisions(self.successes[sel], self.trials[sel], float(t), level=lv,
                                             direction=self.direction, concentration=c,
                                             min_trials=DECISION_MIN_TRIALS)
            self._decision["anytime"] = out
        return self._decision["anytime"]

    def _sequence_within(self) -> np.ndarray:
        """``at_threshold`` under ``guarantee="stratum"``: the confidence sequence within the band."""
        k = len(self.strata)
        if not self.margin:
            return np.zeros(k, bool)
        thr = np.broadcast_to(np.asarray(self.threshold, dtype=float), (k,))
        used = self.trials >= DECISION_MIN_TRIALS
        inside = np.zeros(k, bool)
        if used.any():
            lo, hi = confidence_sequence_bounds(self.successes[used], self.trials[used], self.anytime_level(),
                                                self.decision_concentration())
            inside[used] = (lo >= thr[used] - self.margin) & (hi <= thr[used] + self.margin)
        return inside

    def gap(self) -> dict[str, Any]:
        """The max-min gap across the strata and its verdict against ``tolerance`` (goal ``"gap"``).

        The audit's rule (:func:`bayeseval.fairness`), on each stratum's own counts so that
        pooling cannot narrow a gap: Clopper-Pearson intervals at the Bonferroni level
        ``1 - (1 - decision_level()) / K`` are projected to an interval of the gap
        (:func:`bayeseval._kernels.disparity.gap_interval`, coverage at least the level for every
        configuration of true rates at a fixed sample size); the verdict is ``"outside"`` when
        its lower end exceeds the tolerance, ``"within tolerance"`` when its upper end is at
        most the tolerance, ``"undecided"`` otherwise. Strata without trials are left out.

        Returns
        -------
        dict
            ``gap`` (max - min of the observed rates), ``lower``, ``upper``, ``level`` (the
            per-stratum Bonferroni level), ``tolerance``, ``verdict`` and ``bounds`` (each
            stratum's interval; ``[0, 1]`` without trials).

        Examples
        --------
        >>> st = RuleState.from_counts([10, 12], [1000, 1000], available=[0, 0], model="independent",
        ...                            goal="gap", tolerance=0.02)
        >>> st.gap()["verdict"]
        'within tolerance'
        """
        if self.tolerance is None:
            raise ValueError(f"gap needs a tolerance (goal='gap'), got tolerance={self.tolerance!r}")
        if "gap" not in self._decision:
            level = bonferroni_level(self.level, len(self.strata))
            s, n = self.successes.astype(float), self.trials.astype(float)
            lo, hi = np.zeros(len(n)), np.ones(len(n))
            used = n > 0
            if used.any() and self.per_stratum():
                lo[used], hi[used] = confidence_sequence_bounds(s[used], n[used], level, self.decision_concentration())
            elif used.any():
                lo[used], hi[used] = binomial_bounds(s[used], n[used], 1.0 - level, "clopper_pearson")
            rate = np.where(used, s / np.maximum(n, 1.0), np.nan)
            gap, glo, ghi = gap_interval(rate, np.where(used, lo, np.nan), np.where(used, hi, np.nan))
            tol = float(self.tolerance)
            verdict = "outside" if glo > tol else ("within tolerance" if ghi <= tol else "undecided")
            self._decision["gap"] = {"gap": gap, "lower": glo, "upper": ghi, "level": level, "tolerance": tol,
                                     "verdict": verdict, "bounds": (lo, hi)}
        return self._decision["gap"]

    def gap_decided(self) -> bool:
        """Whether the gap verdict is decided and every stratum's own data support it.

        Returns
        -------
        bool
            The verdict is not ``"undecided"``, every stratum has trials and
            :meth:`stratum_done` holds for every stratum.
        """
        return bool(self.gap()["verdict"] != "undecided" and np.all(self.trials > 0) and self.stratum_done().all())


def fit_state_posterior(state: RuleState) -> MixturePosterior:
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
        pos = post.fit_strata
        flags = np.zeros(len(state.strata), bool)
        flags[pos] = outlying_strata(post, state.successes, state.trials)[pos] if len(pos) >= 3 else False
        if flags.any():
            post = hierarchical_grid(state.successes, state.trials, model="robust", **kw)
            post.outliers = sorted(set(post.outliers) | set(state.strata[flags]), key=list(state.strata).index)
    return post


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------
def _as_series(state: RuleState, counts: np.ndarray, rule: str) -> pd.Series:
    return pd.Series(counts.astype(np.int64), index=state.strata, name=rule)


def _greedy_width(state: RuleState, batch_size: int) -> np.ndarray:
    """Greedy batch with diminishing returns on the expected excess half-width (or variance)."""
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64).copy()
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    t0 = p * state.pending
    target = state.target_halfwidth
    if state.goal == "overall":
        neff = state.posterior.n_eff().to_numpy()
        var = state.posterior.var().to_numpy()
        c = state.weights**2 * var * neff  # contribution = c / (neff + t)

        def gain(t: np.ndarray) -> np.ndarray:
            return c / (neff + t) - c / (neff + t + p)

        def gain_one(j: int) -> float:
            return c[j] / (neff[j] + t[j]) - c[j] / (neff[j] + t[j] + p[j])

        eligible = cap > 0
    else:
        hw = state.stop_halfwidths()
        neff = state.stop_neff()
        # strata held back only by the sanity checks count every reduction of their width
        target = np.where(state.stratum_done() | (hw > target), target, 0.0)

        def gain(t: np.ndarray) -> np.ndarray:
            h0 = hw * np.sqrt(neff / (neff + t))
            h1 = hw * np.sqrt(neff / (neff + t + p))
            excess = np.maximum(h0 - target, 0) - np.maximum(h1 - target, 0)
            return excess + 1e-3 * (h0 - h1)

        def gain_one(j: int) -> float:
            h0 = hw[j] * np.sqrt(neff[j] / (neff[j] + t[j]))
            h1 = hw[j] * np.sqrt(neff[j] / (neff[j] + t[j] + p[j]))
            return max(h0 - target[j], 0.0) - max(h1 - target[j], 0.0) + 1e-3 * (h0 - h1)

        eligible = (cap > 0) & ~state.stratum_done()
        if not eligible.any():
            eligible = cap > 0
    if not eligible.any():
        return counts
    t = t0.astype(float).copy()
    g = np.where(eligible, gain(t), -np.inf)
    return _greedy_take(g, t, p, cap, batch_size, gain_one, counts)


def _greedy_take(g, t, p, cap, batch_size, gain_one, counts) -> np.ndarray:
    """Give ``batch_size`` labels one at a time to the largest gain (lowest index on ties).

    A heap of ``(-gain, stratum)``: only the chosen stratum's gain changes after a label, so
    each label costs ``O(log K)`` instead of a scan of every stratum.
    """
    live = np.flatnonzero(np.isfinite(g))
    heap = list(zip((-g[live]).tolist(), live.tolist(), strict=True))
    heapq.heapify(heap)
    for _ in range(batch_size):
        if not heap:
            break
        j = heapq.heappop(heap)[1]
        counts[j] += 1
        t[j] += p[j]
        if counts[j] < cap[j]:
            heapq.heappush(heap, (-float(gain_one(j)), j))
    return counts


def expected_width(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Greedy expected-width rule under the hierarchical posterior (the default).

    Each label goes to the stratum whose next label most reduces the expected excess of its
    credible-interval half-width over the target (goal ``"each"``; the sum over unfinished
    strata), or the weighted rate's expected posterior variance (goal ``"overall"``). After a
    label is assigned, that stratum's expected half-width is updated (diminishing returns),
    so one batch spreads over strata. For metrics whose trial status is only known after
    labelling the gain per label is ``P(trial) *`` the gain per trial.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
    >>> expected_width(st, 20, np.random.default_rng(0)).tolist()
    [20, 0]
    """
    if state.goal in ("decide", "gap"):
        return _as_series(state, _greedy_decision(state, batch_size), "expected_width")
    return _as_series(state, _greedy_width(state, batch_size), "expected_width")


def independent_beta(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """The same greedy expected-width rule with independent ``Beta(1, 1)`` posteriors.

    The design of earlier active-assessment work (no pooling between strata); campaigns and
    simulations using it also judge the goal with the independent posteriors.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], model="independent")
    >>> int(independent_beta(st, 8, np.random.default_rng(0)).iloc[0])
    8
    """
    if state.model != "independent":
        state = _with_model(state, "independent")
    if state.goal in ("decide", "gap"):
        return _as_series(state, _greedy_decision(state, batch_size), "independent_beta")
    return _as_series(state, _greedy_width(state, batch_size), "independent_beta")


def _with_model(state: RuleState, model: str) -> RuleState:
    return dataclasses.replace(state, model=model)


def thompson(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Thompson-style rule: each label goes to the stratum with the largest sampled need.

    For every label a grid point and rates are drawn from the posterior; the stratum whose
    sampled variance ``theta (1 - theta) / (n_eff + t + 1)`` (goal ``"overall"``: times the
    squared weight) is largest among strata not yet done gets it.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 1], [10, 10], available=[5, 50])
    >>> int(thompson(st, 30, np.random.default_rng(1)).iloc[0]) <= 5
    True
    """
    post = state.posterior
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64)
    eligible = cap > 0
    if state.goal in ("each", "decide"):
        notdone = ~state.stratum_done()
        if (eligible & notdone).any():
            eligible &= notdone
    if not eligible.any() or batch_size == 0:
        return _as_series(state, counts, "thompson")
    neff = post.n_eff().to_numpy()
    p = np.clip(state.p_trial(), 1e-6, 1)
    t = p * state.pending
    theta = post.sample(batch_size, random_seed=rng)
    scale = state.weights**2 if state.goal == "overall" else np.ones(k)
    for i in range(batch_size):
        score = np.where(eligible & (counts < cap), scale * theta[i] * (1 - theta[i]) / (neff + t + 1), -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
        t[j] += p[j]
    return _as_series(state, counts, "thompson")


def _greedy_priority(state: RuleState, batch_size: int, priority: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Fill the batch by largest ``priority / (n + 1)`` (gives allocations proportional to priority)."""
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64)
    eligible = eligible & (cap > 0) & (priority > 0)
    if not eligible.any():
        return counts
    n = (state.labelled + state.pending).astype(float)
    for _ in range(batch_size):
        score = np.where(eligible & (counts < cap), priority / (n + counts + 1.0), -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
    return counts


def neyman(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Neyman allocation on current posterior rates: labels proportional to ``w_k sd_k / sqrt(P(trial))``.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 30], [100, 100], available=[500, 500], weights=[0.5, 0.5])
    >>> a = neyman(st, 100, np.random.default_rng(0))
    >>> bool(a.iloc[1] > a.iloc[0])
    True
    """
    mean = state.posterior.mean().to_numpy()
    w = state.weights if state.goal == "overall" else np.ones(len(state.strata))
    priority = w * np.sqrt(mean * (1 - mean)) / np.sqrt(np.clip(state.p_trial(), 1e-6, 1))
    eligible = np.ones(len(state.strata), bool)
    if state.goal in ("each", "decide"):
        notdone = ~state.stratum_done()
        eligible = notdone if notdone.any() else eligible
    return _as_series(state, _greedy_priority(state, batch_size, priority, eligible), "neyman")


def proportional(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Proportional random labelling: rows drawn uniformly from the whole remaining pool.

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[900, 100])
    >>> int(proportional(st, 1000, np.random.default_rng(0)).sum())
    1000
    """
    cap = state.available.astype(np.int64)
    total = int(cap.sum())
    m = min(batch_size, total)
    if m == 0:
        return _as_series(state, np.zeros(len(cap), np.int64), "proportional")
    counts = rng.multivariate_hypergeometric(cap, m)
    return _as_series(state, counts, "proportional")


def uniform(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Equal labels per stratum among strata not yet done (balancing labelled counts).

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0, 0], [0, 0, 0], available=[900, 100, 2])
    >>> uniform(st, 12, np.random.default_rng(0)).tolist()
    [5, 5, 2]
    """
    eligible = np.ones(len(state.strata), bool)
    if state.goal in ("each", "decide") and state.labelled.sum() > 0:
        notdone = ~state.stratum_done()
        eligible = notdone if notdone.any() else eligible
    priority = np.ones(len(state.strata))
    return _as_series(state, _greedy_priority(state, batch_size, priority, eligible), "uniform")


Rule = Callable[[RuleState, int, np.random.Generator], pd.Series]

#: rule name -> (function, posterior model used for the goal)
RULES: dict[str, tuple[Rule, str]] = {
    "expected_width": (expected_width, "auto"),
    "thompson": (thompson, "auto"),
    "neyman": (neyman, "auto"),
    "proportional": (proportional, "auto"),
    "uniform": (uniform, "auto"),
    "independent_beta": (independent_beta, "independent"),
}


def get_rule(rule: str | Rule) -> tuple[str, Rule, str]:
    """Resolve a rule name (or callable) to ``(name, function, model)``.

    Parameters
    ----------
    rule : str or callable
        A name among the built-in rules, or a function
        ``propose_allocation(state, batch_size, rng) -> pandas.Series``.

    Returns
    -------
    name : str
        The rule's name (a callable's ``__name__``).
    function : callable
        The allocation function.
    model : str
        The posterior model the rule uses (``"auto"`` for a callable).

    Raises
    ------
    ValueError
        When ``rule`` is not a known name.

    Examples
    --------
    >>> get_rule("expected_width")[0]
    'expected_width'
    """
    if callable(rule):
        return getattr(rule, "__name__", "custom"), rule, "auto"
    if not isinstance(rule, str) or rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid choices are {sorted(RULES)}")
    fn, model = RULES[rule]
    return rule, fn, model


# ---------------------------------------------------------------------------------------
# forecast
# ---------------------------------------------------------------------------------------
def forecast_labels(state: RuleState) -> pd.Series:
    """Labels still needed per stratum so the expected half-width meets the target.

    Goal ``"each"``: the smallest ``m`` with ``halfwidth * sqrt(n_eff / (n_eff + P(trial) m))
    <= target`` (pending labels count as already requested). Goal ``"overall"``: the
    allocation minimising total labels subject to the expected variance of the weighted rate
    reaching the target, by water-filling. Capped at the rows available (a stratum that cannot
    reach the target gets its remaining rows).

    Parameters
    ----------
    state : RuleState
        The campaign's current state (goal, target and counts).

    Returns
    -------
    pandas.Series
        Labels still needed per stratum (int, indexed by stratum, named ``"forecast"``).

    Examples
    --------
    >>> st = RuleState.from_counts([10], [100], available=[10_000], model="independent")
    >>> int(forecast_labels(st).iloc[0]) > 0
    True
    """
    post = state.posterior
    neff = post.n_eff().to_numpy()
    p = np.clip(state.p_trial(), 1e-6, 1)
    t0 = p * state.pending
    cap = state.available.astype(float)
    target = state.target_halfwidth
    if state.goal == "each":
        hw = state.stop_halfwidths()
        neff = state.stop_neff()
        need_t = np.maximum(neff * (hw / target) ** 2 - neff - t0, 0.0)
        m = np.ceil(need_t / p - 1e-9)
    else:
        mean, var = post.weighted_moments(state.weights)
        _, lo, hi = state.overall()
        hw = (hi - lo) / 2
        if hw <= target:
            m = np.zeros(len(neff))
        else:
            v_k = post.var().to_numpy()
            c = state.weights**2 * v_k * neff
            base = np.sum(c / (neff + t0))
            v_target = base * (target / hw) ** 2

            def alloc(lam: float) -> np.ndarray:
                x = np.sqrt(lam * c * p)  # neff + t0 + p m at the optimum
                return np.clip((x - neff - t0) / p, 0, cap)

            def vexp(m: np.ndarray) -> float:
                return float(np.sum(c / (neff + t0 + p * m)))

            lo_l, hi_l = 0.0, 1.0
            while vexp(alloc(hi_l)) > v_target and hi_l < 1e30:
                hi_l *= 10
            for _ in range(100):
                mid = np.sqrt(lo_l * hi_l) if lo_l > 0 else hi_l / 10
                if vexp(alloc(mid)) > v_target:
                    lo_l = mid
                else:
                    hi_l = mid
                if hi_l / max(lo_l, 1e-300) < 1 + 1e-9:
                    break
            m = np.ceil(alloc(hi_l))
    m = np.minimum(m, cap)
    return pd.Series(m.astype(np.int64), index=state.strata, name="forecast")


# ---------------------------------------------------------------------------------------
# feasibility of a per-stratum target
# ---------------------------------------------------------------------------------------
def _wilson_halfwidth(rate: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        hw = z / (1.0 + z**2 / n) * np.sqrt(rate * (1.0 - rate) / n + z**2 / (4.0 * n**2))
    return np.where(n > 0, hw, 0.5)


def target_feasibility(
    available: Any,
    p_trial: Any,
    target_halfwidth: float,
    *,
    trials: Any = 0,
    rate: Any = 0.5,
    level: float = 0.95,
    strata: Any = None,
    warn: bool = False,
) -> pd.DataFrame:
    """Whether each stratum's half-width target can be met from the rows of the pool.

    A stratum can contribute at most ``trials + available * p_trial`` trials (its trials so
    far plus the expected trials among its rows not yet labelled: for recall, the rows
    whose true label is positive). The achievable half-width is the Wilson score half-width
    at that number of trials and the assumed ``rate`` (0.5, the worst case, unless a
    prior guess is given); pooling can narrow a stratum's interval below it only by
    borrowing, which the stopping rule does not let stand in for a stratum's own data.

    Parameters
    ----------
    available : array_like of int
        Rows per stratum that can still be labelled.
    p_trial : array_like of float
        Probability that a labelled row is a trial of the metric (1 for error rate and
        accuracy; the share of positives for recall).
    target_halfwidth : float
        The half-width goal, in (0, 0.5).
    trials : array_like of int
        Trials already labelled per stratum.
    rate : array_like of float
        Assumed rate per stratum (default 0.5, which gives the widest interval).
    level : float
        Level of the intervals.
    strata : array_like, optional
        Stratum labels (the index of the table).
    warn : bool
        Emit a :class:`~bayeseval._api.warnings.PrecisionLimitedWarning` listing the strata
        that cannot reach the target and their achievable half-widths.

    Returns
    -------
    pandas.DataFrame
        Per stratum: ``max_trials``, ``achievable_halfwidth`` and ``feasible``
        (``achievable_halfwidth <= target_halfwidth``).

    Examples
    --------
    A recall campaign: 46 positives in the smallest stratum cannot give a 0.05 half-width.

    >>> t = target_feasibility([460, 7270], [0.1, 0.1], 0.05, strata=["small", "large"])
    >>> t["feasible"].tolist()
    [False, True]
    >>> round(float(t.loc["small", "achievable_halfwidth"]), 3)
    0.139
    """
    from scipy.stats import norm

    level = check_level(level, "level")
    target = check_probability(target_halfwidth, "target_halfwidth", open_interval=True)
    avail = np.asarray(available, dtype=float).ravel()
    k = avail.size
    p = np.broadcast_to(np.asarray(p_trial, dtype=float), (k,))
    if np.any((p < 0) | (p > 1)) or np.any(avail < 0):
        raise ValueError(f"p_trial must be in [0, 1] and available >= 0, got p_trial={p.tolist()[:10]} "
                         f"and available={avail.tolist()[:10]}")
    done = np.broadcast_to(np.asarray(trials, dtype=float), (k,))
    r = np.broadcast_to(np.asarray(rate, dtype=float), (k,))
    max_trials = done + avail * p
    z = float(norm.ppf(0.5 + level / 2))
    hw = _wilson_halfwidth(r, max_trials, z)
    return _feasibility_table(max_trials, hw, hw <= target, strata, target, warn)


def _feasibility_table(max_trials: np.ndarray, hw: np.ndarray, feasible: np.ndarray, strata: Any,
                       target: float, warn: bool) -> pd.DataFrame:
    """The feasibility table, and the warning naming the strata that cannot reach ``target``."""
    k = len(hw)
    index = pd.RangeIndex(k, name="stratum") if strata is None else pd.Index(strata, name="stratum")
    out = pd.DataFrame({"max_trials": max_trials, "achievable_halfwidth": hw, "feasible": feasible}, index=index)
    if warn and not out["feasible"].all():
        bad = out[~out["feasible"]]
        listing = ", ".join(f"{i}: {h:.3f}" for i, h in bad["achievable_halfwidth"].head(10).items())
        warnings.warn(
            f"target_halfwidth={target} cannot be met from the pool in {len(bad)} of {k} strata "
            f"(achievable half-width per stratum, every row labelled: {listing}); raise the target, "
            "lower the level, add rows to these strata or accept their achievable half-widths",
            PrecisionLimitedWarning,
            stacklevel=3,
        )
    return out


def full_size_state(state: RuleState) -> RuleState:
    """``state`` with every eligible row of every stratum labelled at its planning rate.

    The rows not yet labelled (pending or never proposed) are added as labelled rows, of
    which the expected share :meth:`RuleState.p_trial` are trials, with successes at the
    stratum's current posterior mean rate (the planning rate; at creation, the prior mean).
    Counts are rounded to whole numbers.

    Parameters
    ----------
    state : RuleState
        The campaign's current state.

    Returns
    -------
    RuleState
        The projected state, with nothing left to propose.

    Examples
    --------
    >>> st = RuleState.from_counts([2], [10], available=[30])
    >>> full = full_size_state(st)
    >>> int(full.trials[0]), int(full.labelled[0]), int(full.available[0])
    (40, 40, 0)
    """
    rate = np.clip(np.asarray(state.posterior.mean(), dtype=float), 0.0, 1.0)
    rest = state.available + state.pending
    trials = np.rint(state.trials + rest * state.p_trial()).astype(np.int64)
    successes = np.rint(state.successes + rate * (trials - state.trials)).astype(np.int64)
    none = np.zeros(len(state.strata), np.int64)
    return dataclasses.replace(state, successes=successes, trials=trials, labelled=state.labelled + rest,
                               pending=none, available=none)


def stratum_feasibility(state: RuleState, *, warn: bool = False) -> pd.DataFrame:
    """Whether the stopping rule can end each stratum once every one of its rows is labelled.

    The achievable half-width is the half-width of the interval the stopping rule checks
    (:meth:`RuleState.stop_halfwidths`) in :func:`full_size_state`: every eligible row of
    every stratum labelled, at the planning rate. A stratum is feasible when that
    half-width is within the target. This is
    what the campaign can reach: a stratum labelled to its last row ends with this
    half-width when its rate is the planning rate (checked in the tests against campaigns
    labelled to the end). :func:`target_feasibility` is the model-free bound (the Wilson
    interval of the stratum's own trials), which ignores the pooling the campaign stops on.

    Parameters
    ----------
    state : RuleState
        The campaign's current state.
    warn : bool, default False
        Emit a :class:`~bayeseval._api.warnings.PrecisionLimitedWarning` listing the strata that
        cannot reach the target and their achievable half-widths.

    Returns
    -------
    pandas.DataFrame
        Per stratum: ``max_trials`` (trials with every row labelled),
        ``achievable_halfwidth`` and ``feasible``.

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[40, 4000], strata=["small", "large"],
    ...                            target_halfwidth=0.05)
    >>> stratum_feasibility(st)["feasible"].tolist()
    [False, True]
    """
    full = full_size_state(state)
    hw = full.stop_halfwidths()
    feasible = hw <= state.target_halfwidth
    return _feasibility_table(full.trials.astype(float), hw, feasible, state.strata, state.target_halfwidth, warn)


# ---------------------------------------------------------------------------------------
# decision goals: proposal and forecast
# ---------------------------------------------------------------------------------------
def _beta_approx(state: RuleState) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's posterior as the Beta with its mean and variance (pooling included)."""
    mean = np.clip(state.posterior.mean().to_numpy(), 1e-9, 1 - 1e-9)
    neff = state.posterior.n_eff().to_numpy()
    return mean * neff, (1.0 - mean) * neff


def _own_binding(state: RuleState) -> np.ndarray:
    """Strata whose pooled ``P(meets)`` is decided while their own decision is not.

    Goal ``"decide"`` with a pooled model (all False otherwise). Under
    ``guarantee="stratum"`` the anytime test decides on the stratum's own data, so a
    stratum the pooled posterior already decides is planned on its own data.
    """
    k = len(state.strata)
    if state.goal != "decide" or state.model == "independent":
        return np.zeros(k, bool)
    return state.pooled_decided() & ~state.goal_met()


def _decision_betas(state: RuleState) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Beta parameters, thresholds and decision floors the decision allocation works on.

    Each stratum's pooled Beta approximation with ``floor = 1 - level`` (0 when its goal is
    met); where the pooled decision runs ahead of the stratum's own (:func:`_own_binding`)
    its own Jeffreys ``Beta(s + 1/2, n - s + 1/2)`` with ``floor = 1 - level``. Mirrored for direction ``"above"``
    (``P(theta > t) = P(1 - theta < 1 - t)``).
    """
    a, b = _beta_approx(state)
    floor = np.where(state.goal_met(), 0.0, 1.0 - state.level)
    own = _own_binding(state)
    if own.any():
        s, n = state.successes.astype(float), state.trials.astype(float)
        a, b = np.where(own, s + 0.5, a), np.where(own, n - s + 0.5, b)
        floor = np.where(own, 1.0 - state.level, floor)
    thr = np.asarray(state.threshold, dtype=float)
    if state.direction == "above":
        a, b, thr = b, a, 1.0 - thr
    return a, b, thr, floor


def undecided_excess(a: float, b: float, threshold: float, m: float, floor: float) -> float:
    """Expected excess over ``floor`` of ``min(P, 1 - P)`` after ``m`` more trials.

    ``P = P(theta < threshold)`` under the posterior ``Beta(a + y, b + m - y)`` after ``y``
    successes in ``m`` trials, averaged over the Beta-binomial predictive of ``y``; a
    fractional ``m`` interpolates linearly between its neighbouring integers. Zero when the
    stratum is decided at level ``1 - floor`` whatever the next trials show.

    Parameters
    ----------
    a, b : float
        The stratum's current posterior (a Beta approximation).
    threshold : float
        The decision threshold.
    m : float
        Further trials (>= 0).
    floor : float
        ``1 - decision level`` (0 counts every reduction of the uncertainty).

    Returns
    -------
    float
        The expected excess.

    Examples
    --------
    Far from the threshold one more trial cannot undo a decision:

    >>> undecided_excess(1.0, 99.0, 0.5, 3, 0.05)
    0.0
    >>> round(undecided_excess(5.0, 5.0, 0.5, 0, 0.05), 3)  # P = 0.5 now
    0.45
    """
    lo = int(np.floor(m))
    frac = m - lo
    value = _excess_at(a, b, threshold, lo, floor)
    if frac > 1e-12:
        value = (1 - frac) * value + frac * _excess_at(a, b, threshold, lo + 1, floor)
    return float(value)


def _excess_at(a: float, b: float, thr: float, m: int, floor: float) -> float:
    from scipy.special import betainc, betaln, gammaln

    y = np.arange(m + 1, dtype=float)
    logpmf = gammaln(m + 1.0) - gammaln(y + 1) - gammaln(m - y + 1) + betaln(a + y, b + m - y) - betaln(a, b)
    p = betainc(a + y, b + m - y, thr)
    return float(np.exp(logpmf) @ np.maximum(np.minimum(p, 1.0 - p) - floor, 0.0))


def decision_gains(
    state: RuleState, horizon: int = 10
) -> tuple[Callable[[int, float], float], np.ndarray, np.ndarray]:
    """The gain of one more label per stratum for goal ``"decide"``, and who may get labels.

    The gain of a label to stratum ``j`` with ``t`` expected further trials is the expected
    reduction of its undecidedness per label over the next ``horizon`` labels,
    (:func:`undecided_excess` at ``t`` minus at ``t + horizon p_j``) / ``horizon`` (``p_j =
    P(trial)``), on the Beta approximation of its posterior (mean and effective
    sample size, so pooled strength counts), with ``floor = 1 - decision level``: the
    expected excess of ``min(P(meets), 1 - P(meets))`` over what a decision allows, so a
    stratum close to a decision gains more per label than one whose rate sits on the
    threshold. Decided strata count every reduction (floor 0). A pooled stratum whose pooled
    ``P(meets)`` is decided while its own decision is not (:func:`_own_binding`) is scored
    on its own Jeffreys posterior ``Beta(s + 1/2, n - s + 1/2)`` with ``floor = 1 - level``:
    the expected progress of the own-data decision, which is what its stop waits for. With few
    trials one label can raise the expected excess (a first success can undo a
    near-decision): looking ``horizon`` labels ahead smooths that, and the gain is
    clipped at 0; a ``1e-3`` share of the expected half-width reduction breaks ties (it
    spreads a first batch evenly).

    Parameters
    ----------
    state : RuleState
        A state with goal ``"decide"``.
    horizon : int
        Labels looked ahead (the allocation passes its batch size, at least 5).

    Returns
    -------
    gain : callable
        ``gain(j, t)``.
    p_trial : numpy.ndarray
        Probability that a label is a trial, per stratum.
    eligible : numpy.ndarray of bool
        Strata not done with rows left (all strata with rows left when every one is done).
    """
    a, b, thr, floor = _decision_betas(state)
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    neff = state.posterior.n_eff().to_numpy()
    hw = state.halfwidths()
    done = state.stratum_done()
    cap = state.available.astype(np.int64)

    def gain(j: int, t: float) -> float:
        ahead = t + horizon * p[j]
        d = (undecided_excess(a[j], b[j], thr[j], t, floor[j]) - undecided_excess(a[j], b[j], thr[j], ahead, floor[j]))
        d = max(d / horizon, 0.0)
        shrink = hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j])))
        return float(d + 1e-3 * shrink)

    eligible = (cap > 0) & ~done
    return gain, p, eligible if eligible.any() else cap > 0


def gap_targets(state: RuleState) -> np.ndarray:
    """The strata whose intervals keep the gap verdict undecided (goal ``"gap"``).

    When the gap estimate exceeds the tolerance the verdict can only become ``"outside"``,
    which needs the two extreme strata's intervals narrower (as the audit's labels-needed
    table says); otherwise ``"within tolerance"`` needs every stratum whose interval end lies
    more than the tolerance from the opposite end of another's. Strata without trials are
    always targets.

    Parameters
    ----------
    state : RuleState
        A state with goal ``"gap"``.

    Returns
    -------
    numpy.ndarray of bool
        One value per stratum.
    """
    info = state.gap()
    lo, hi = info["bounds"]
    mean = np.where(state.trials > 0, state.successes / np.maximum(state.trials, 1), np.nan)
    tol = info["tolerance"]
    target = (state.trials == 0) | ~state.stratum_done()
    if info["verdict"] != "undecided":
        return target & ~state.stratum_done() | (state.trials == 0)
    if info["gap"] > tol:
        target[[int(np.nanargmax(mean)), int(np.nanargmin(mean))]] = True
    else:
        target |= (hi - lo.min() > tol) | (hi.max() - lo > tol)
    return target


def _greedy_decision(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> np.ndarray:
    """Greedy batch for goals ``"decide"`` and ``"gap"``: largest gain per unit cost first."""
    k = len(state.strata)
    cost = np.ones(k) if costs is None else np.asarray(costs, dtype=float)
    cap = state.available.astype(np.int64)
    counts = np.zeros(k, np.int64)
    if state.goal == "gap":
        p = np.clip(state.p_trial(), 1e-6, 1.0)
        neff = state.posterior.n_eff().to_numpy()
        lo, hi = state.gap()["bounds"]
        hw = (hi - lo) / 2

        def gain(j: int, t: float) -> float:
            return float(hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j]))))

        eligible = (cap > 0) & gap_targets(state)
        eligible = eligible if eligible.any() else cap > 0
    else:
        gain, p, eligible = decision_gains(state, max(int(batch_size), 5))
    t = np.clip(state.p_trial(), 1e-6, 1.0) * state.pending
    g = np.array([gain(j, t[j]) / cost[j] if eligible[j] else -np.inf for j in range(k)])
    for _ in range(int(batch_size)):
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += p[j]
        g[j] = -np.inf if counts[j] >= cap[j] else gain(j, t[j]) / cost[j]
    return counts


def decision_allocation(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> pd.Series:
    """Labels per stratum for goals ``"decide"`` and ``"gap"`` (the rules' decision mode).

    Goal ``"decide"``: each label goes to the undecided stratum whose next label most reduces
    the expected excess of ``min(P(meets), 1 - P(meets))`` over ``1 - level`` (see
    :func:`decision_gains`), per unit of label cost; after each label that stratum's expected
    trials grow by ``P(trial)``, so a batch spreads over strata near a decision and leaves
    strata whose rate sits on the threshold for last. Goal ``"gap"``: the strata keeping the
    verdict undecided (:func:`gap_targets`) by expected half-width reduction.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``"decide"`` or ``"gap"``).
    batch_size : int
        Labels in the batch.
    costs : numpy.ndarray, optional
        Label cost per stratum (default 1 each).

    Returns
    -------
    pandas.Series
        Labels per stratum, at most the rows available.

    Examples
    --------
    Stratum 0 (no error in 100 against a 0.10 threshold) is decided and gets nothing:

    >>> st = RuleState.from_counts([0, 3, 9], [100, 30, 60], available=[500, 500, 500],
    ...                            model="independent", goal="decide", threshold=np.array([0.1] * 3))
    >>> st.decisions().tolist()
    ['meets', 'undecided', 'undecided']
    >>> a = decision_allocation(st, 20)
    >>> int(a.iloc[0]), int(a.sum())
    (0, 20)
    """
    return _as_series(state, _greedy_decision(state, batch_size, costs), "decision")


def forecast_decision(state: RuleState) -> pd.Series:
    """Labels each stratum still needs before it is more likely decided than not.

    Goal ``"decide"``: the smallest number of further labels ``m`` after which the
    preposterior probability that the stratum is decided (``P(meets)`` at least the
    decision level or at most one minus it, on the Beta approximation of its posterior;
    for a stratum whose pooled ``P(meets)`` is decided while its own decision is not, its
    own Jeffreys ``P(meets)``; with a ``margin``, also
    its interval within ``threshold +/- margin``, see :meth:`RuleState.at_threshold`)
    reaches 0.5; pending labels count as requested (:func:`decision_reach` says which
    strata the rows left cannot decide). Goal ``"gap"``: for each target stratum
    (:func:`gap_targets`), the labels that bring its Bonferroni interval's half-width to half
    the distance between the gap estimate and the tolerance. Capped at the rows available.

    Parameters
    ----------
    state : RuleState
        The campaign's state.

    Returns
    -------
    pandas.Series
        Labels per stratum (int), named ``"forecast"``.

    Examples
    --------
    >>> st = RuleState.from_counts([3, 5], [50, 500], available=[5000, 5000], model="independent",
    ...                            goal="decide", threshold=np.array([0.05, 0.05]))
    >>> f = forecast_decision(st)
    >>> bool(f.iloc[0] > 0), int(f.iloc[1])
    (True, 0)
    """
    k = len(state.strata)
    cap = state.available.astype(np.int64)
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    t0 = p * state.pending
    out = np.zeros(k, np.int64)
    done = state.stratum_done()
    if state.goal == "gap":
        info = state.gap()
        lo, hi = info["bounds"]
        neff = state.posterior.n_eff().to_numpy()
        want = max(abs(info["tolerance"] - info["gap"]) / 2, 1e-4)
        need = np.maximum(neff * (((hi - lo) / 2) / want) ** 2 - neff - t0, 0.0)
        out = np.where(gap_targets(state), np.ceil(need / p), 0).astype(np.int64)
        return pd.Series(np.minimum(out, cap), index=state.strata, name="forecast")
    undecided = _undecided_after(state)
    for j in np.flatnonzero(~done & (cap > 0)):
        hi_m = 1
        while hi_m < cap[j] and undecided(j, hi_m):
            hi_m *= 2
        hi_m = min(hi_m, int(cap[j]))
        lo_m = hi_m // 2
        while hi_m - lo_m > 1:
            mid = (lo_m + hi_m) // 2
            lo_m, hi_m = (mid, hi_m) if undecided(j, mid) else (lo_m, mid)
        out[j] = hi_m
    return pd.Series(np.minimum(out, cap), index=state.strata, name="forecast")


def _undecided_after(state: RuleState) -> Callable[[int, int], bool]:
    """``undecided(j, m)``: whether stratum ``j`` is more likely undecided than not after ``m`` more labels."""
    k = len(state.strata)
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    t0 = p * state.pending
    a, b, thr, floor = _decision_betas(state)
    floor = np.where(_own_binding(state), floor, 1.0 - state.level)
    margin = np.where(_own_binding(state), 0.0, np.full(k, float(state.margin)))
    level = state.level

    def undecided(j: int, m: int) -> bool:
        return _p_undecided(a[j], b[j], thr[j], t0[j] + m * p[j], floor[j], margin[j], level) > 0.5

    return undecided


def decision_reach(state: RuleState, budget_left: int | None = None) -> np.ndarray:
    """Which undecided strata the rows or the budget left cannot decide (goal ``"decide"``).

    A stratum is out of reach of its rows when it is more likely undecided than not after
    every row left of it is labelled (the preposterior of :func:`forecast_decision` at the
    rows available), and out of reach of the budget when that holds at the ``budget_left``
    labels (fewer than its rows). A rate close to its threshold needs about
    ``z^2 rate (1 - rate) / (rate - threshold)^2`` trials (``z`` the normal quantile at the
    decision level, one-sided): 32,000 for 0.123 against 0.12 at level 0.95. An indifference
    ``margin`` (see :meth:`RuleState.at_threshold`) brings such a stratum within reach.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``"decide"``).
    budget_left : int, optional
        Labels the budget still allows (None: no budget).

    Returns
    -------
    numpy.ndarray of object
        Per stratum ``"rows"``, ``"budget"`` or None (decided, or within reach).

    Examples
    --------
    >>> st = RuleState.from_counts([1230, 1], [10000, 100], available=[3000, 3000], model="independent",
    ...                            goal="decide", threshold=np.array([0.12, 0.12]))
    >>> decision_reach(st).tolist(), decision_reach(st, budget_left=500).tolist()
    (['rows', None], ['rows', None])
    >>> st = RuleState.from_counts([1230], [10000], available=[90000], model="independent",
    ...                            goal="decide", threshold=np.array([0.12]))
    >>> decision_reach(st).tolist(), decision_reach(st, budget_left=500).tolist()
    ([None], ['budget'])
    """
    k = len(state.strata)
    out = np.full(k, None, dtype=object)
    if state.goal != "decide":
        return out
    cap = state.available.astype(np.int64)
    undecided = _undecided_after(state)
    for j in np.flatnonzero(~state.stratum_done()):
        if undecided(j, int(cap[j])):
            out[j] = "rows"
        elif budget_left is not None and budget_left < cap[j] and undecided(j, max(int(budget_left), 0)):
            out[j] = "budget"
    return out


def _p_undecided(
    a: float, b: float, thr: float, m: float, floor: float, margin: float = 0.0, level: float = 0.95
) -> float:
    """Preposterior probability that the stratum is undecided after ``round(m)`` trials.

    Undecided: ``min(P, 1 - P) > floor`` and, with a margin, the equal-tailed interval at
    ``level`` not within ``thr +/- margin``.
    """
    from scipy.special import betainc, betaincinv, betaln, gammaln

    m = int(round(m))
    y = np.arange(m + 1, dtype=float)
    logpmf = gammaln(m + 1.0) - gammaln(y + 1) - gammaln(m - y + 1) + betaln(a + y, b + m - y) - betaln(a, b)
    keep = logpmf > -40.0  # outcomes of probability below 1e-17 change nothing
    y, pmf = y[keep], np.exp(logpmf[keep])
    p = betainc(a + y, b + m - y, thr)
    open_ = np.minimum(p, 1.0 - p) > floor
    if margin > 0 and open_.any():
        tail, i = (1.0 - level) / 2.0, np.flatnonzero(open_)
        lo = betaincinv(a + y[i], b + m - y[i], tail)
        hi = betaincinv(a + y[i], b + m - y[i], 1.0 - tail)
        open_[i] = ~((lo >= thr - margin) & (hi <= thr + margin))
    return float(pmf @ open_)
