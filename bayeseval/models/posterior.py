"""Posterior: the one posterior of per-stratum rates, with its summaries and derived quantities.

Every engine returns a :class:`Posterior`, in one of two storage forms:

* ``"draws"``: draws of ``theta`` (n_draws x K strata) and of the hyperparameters (the PyMC
  engine; the exact engine, whose grid fit then gives exact moments and quantiles);
* ``"mixture"``: each ``theta_k`` as an exact mixture of Betas over hyperparameter nodes
  (:mod:`bayeseval._kernels.mixture`; the labelling campaign's fast posterior and the
  independent conjugate posterior). Moments, quantiles and probabilities are computed in
  closed form; draws are sampled on first use.

Both forms answer the same methods (``mean``, ``var``, ``interval``, ``summary``,
``prob_below``, ``weighted_moments``, ``sample``, ``draws``, ``ranks``, ``idata`` ...).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logit

from bayeseval._api.docs import fill_doc
from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_int,
    check_probability,
    check_weights,
)
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, read_bounds, read_choice
from bayeseval._kernels.mixture import BetaMixture
from bayeseval.counts.counts import Counts, stratum_labels
from bayeseval.models.priors import Prior

__all__ = ["Posterior"]

_INTERVALS = ("eti", "hdi")
_STORAGE = ("draws", "mixture")


#: the Returns section of a per-stratum summary
_PER_STRATUM = """\
Returns
-------
pandas.Series
    One value per stratum."""


class Posterior(Result):
    """Posterior of a hierarchical model of per-stratum rates.

    Give either ``theta`` (draws storage) or ``mixture`` (mixture storage).

    Parameters
    ----------
    counts : Counts
        The data the model was fitted to.
    engine : str
        ``"exact"`` or ``"pymc"``.
    model : str
        ``"beta_binomial"``, ``"robust"``, ``"logit_normal"`` or ``"independent"``.
    prior : Prior or str
        The prior used.
    theta : numpy.ndarray of shape (n_draws, K), or a callable returning one, optional
        Posterior draws of the stratum rates, columns in the order of ``counts.strata``.
        An engine may pass a zero-argument callable to draw them lazily on first use.
    hyper : dict of str to numpy.ndarray, optional
        Hyperparameter draws, each of shape (n_draws,), e.g. ``{"mu": ..., "kappa": ...}``
        (logit-normal: ``{"intercept": ..., "sigma": ...}``).
    mixture : bayeseval._kernels.mixture.BetaMixture, optional
        The rates' posterior as a Beta mixture over hyperparameter nodes, one column per
        stratum (mixture storage).
    idata : arviz.InferenceData, optional
        The engine's InferenceData (PyMC); built lazily from the draws when None.
    diagnostics : dict, optional
        Engine diagnostics (R-hat, ESS, divergences, grid size...). The exact engine stores
        ``"offsets"`` (logit offsets from ``prior_mean``) here when used.
    exact : object, optional
        The exact engine's grid fit (:class:`~bayeseval.models.exact.ExactFit`). With draws
        storage, :meth:`summary` and the other summaries use its exact mixture moments and
        quantiles instead of draws.
    exact_strata : numpy.ndarray, optional
        Positions of the strata of ``exact`` among ``counts`` when it holds only some of them
        (mixture storage with strata modelled without pooling); default all.
    outliers : list, optional
        Strata flagged as outlying (by a predictive check, or with outlier probability above
        0.5 under the robust model).
    draws : int
        Mixture storage: number of draws sampled on first use of :attr:`theta`.
    random_seed : int or numpy.random.Generator, optional
        Mixture storage: seed of those draws (default 0, so that they are reproducible).

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 9], [40, 50, 60], random_seed=0, draws=1000)
    >>> post.storage, post.summary().columns.tolist()
    ('draws', ['successes', 'trials', 'raw_rate', 'mean', 'median', 'lower', 'upper', 'shrinkage'])
    >>> post.draws("theta").shape
    (1000, 3)

    The same methods on mixture storage (here independent ``Beta(1 + s, 1 + n - s)`` posteriors):

    >>> from bayeseval._kernels.mixture import BetaMixture
    >>> c = Counts.from_arrays([2, 30], [20, 100])
    >>> post = Posterior(counts=c, engine="exact", model="independent", prior="uniform",
    ...                  mixture=BetaMixture.single([3.0, 31.0], [19.0, 71.0]))
    >>> post.storage, post.mean().round(3).tolist()
    ('mixture', [0.136, 0.304])
    """

    def __init__(
        self,
        *,
        counts: Counts,
        engine: str,
        model: str,
        prior: Prior | str,
        theta: np.ndarray | Callable[[], np.ndarray] | None = None,
        hyper: dict[str, np.ndarray] | None = None,
        mixture: BetaMixture | None = None,
        idata: Any = None,
        diagnostics: dict | None = None,
        exact: Any = None,
        exact_strata: Any = None,
        outliers: list | None = None,
        draws: int = 4000,
        random_seed: Any = 0,
    ) -> None:
        if not isinstance(counts, Counts):
            raise TypeError(f"counts must be a Counts object, got {type(counts).__name__}")
        if (theta is None) == (mixture is None):
            raise ValueError("give exactly one of theta (draws storage) and mixture (mixture storage)")
        self._counts = counts
        self._mixture = self._check_mixture(mixture)
        self._theta_source = theta
        self._theta: np.ndarray | None = None
        if theta is not None and not callable(theta):
            self._theta = self._check_theta(theta)
        self._n_lazy = check_positive_int(draws, "draws")
        self._seed = random_seed
        self._hyper = {str(k): np.asarray(v, dtype=float) for k, v in (hyper or {}).items()}
        for key, val in self._hyper.items():
            if val.ndim != 1:
                raise ValueError(f"hyper[{key!r}] must be one-dimensional draws, got shape {val.shape}")
        self.engine = str(engine)
        self.model = str(model)
        self.prior = prior
        self._idata = idata
        self.diagnostics = dict(diagnostics or {})
        self.exact = exact
        self.exact_strata = None if exact_strata is None else np.asarray(exact_strata, dtype=int)
        self.outliers = list(outliers or [])
        self._exact_mixture: BetaMixture | None = None

    # -- basic attributes ------------------------------------------------------------------
    def _check_theta(self, theta: Any) -> np.ndarray:
        arr = np.asarray(theta, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != len(self._counts):
            raise ValueError(f"theta must have shape (n_draws, {len(self._counts)}), got {arr.shape}")
        return arr

    def _check_mixture(self, mixture: Any) -> BetaMixture | None:
        if mixture is None:
            return None
        if not isinstance(mixture, BetaMixture):
            raise TypeError(f"mixture must be a BetaMixture, got {type(mixture).__name__}")
        if mixture.n_columns != len(self._counts):
            raise ValueError(f"mixture must have one column per stratum ({len(self._counts)}), got {mixture.n_columns}")
        return mixture

    @property
    def storage(self) -> str:
        """``"draws"`` (draws of the rates) or ``"mixture"`` (an exact Beta mixture)."""
        return _STORAGE[self._mixture is not None]

    @property
    def mixture(self) -> BetaMixture | None:
        """The rates' posterior as a Beta mixture over hyperparameter nodes, one column per stratum.

        The stored mixture (mixture storage), the exact engine's grid mixture (draws storage
        with an exact fit), else None.
        """
        if self._mixture is not None:
            return self._mixture
        if self._exact_fit() is not None and hasattr(self.exact, "stratum_mixture"):
            if self._exact_mixture is None:
                self._exact_mixture = self.exact.stratum_mixture()
            return self._exact_mixture
        return None

    def _exact_fit(self) -> Any:
        """The exact grid fit behind draws storage (None for mixture storage)."""
        return self.exact if self._mixture is None else None

    @property
    def theta(self) -> np.ndarray:
        """Draws of the stratum rates, shape (n_draws, K) (drawn on first use if lazy)."""
        if self._theta is None:
            if self._mixture is not None:
                self._theta = self._mixture.sample(self._n_lazy, np.random.default_rng(self._seed))
            else:
                self._theta = self._check_theta(self._theta_source())
        return self._theta

    @property
    def counts(self) -> Counts:
        """The Counts the model was fitted to."""
        return self._counts

    @property
    def strata(self) -> pd.Index:
        """The stratum labels."""
        return self._counts.strata

    @property
    def hyper(self) -> dict[str, np.ndarray]:
        """Hyperparameter draws by name."""
        return dict(self._hyper)

    @property
    def n_draws(self) -> int:
        """Number of posterior draws (mixture storage: the number sampled on first use)."""
        if self._theta is not None:
            return int(self._theta.shape[0])
        if self._mixture is not None:
            return self._n_lazy
        if self._hyper:
            return int(next(iter(self._hyper.values())).shape[0])
        return int(self.theta.shape[0])

    @property
    def table(self) -> pd.DataFrame:
        """The per-stratum summary at level 0.95 (:meth:`summary` with its defaults)."""
        return self.summary()

    def _heading(self) -> str:
        name = self.prior.name if isinstance(self.prior, Prior) else str(self.prior)
        return (
            f"<Posterior engine={self.engine!r} model={self.model!r} prior={name!r} "
            f"storage={self.storage!r} strata={len(self._counts)} draws={self.n_draws}>"
        )

    # -- moments and intervals (closed form for a mixture) -----------------------------------
    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        if self._mixture is not None:
            return self._mixture.mean(), self._mixture.var()
        if self._exact_fit() is not None and hasattr(self.exact, "posterior_moments"):
            mean, var = self.exact.posterior_moments()
            return np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
        return self.theta.mean(axis=0), self.theta.var(axis=0, ddof=1)

    @fill_doc(per_stratum=_PER_STRATUM)
    def mean(self) -> pd.Series:
        """Posterior mean of each stratum's rate (exact for a mixture or an exact fit).

        {per_stratum}

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500)
        >>> bool(post.mean().iloc[0] < post.mean().iloc[1])
        True
        """
        if self._mixture is not None:
            return pd.Series(self._mixture.mean(), index=self.strata, name="mean")
        return pd.Series(self._moments()[0], index=self.strata, name="mean")

    @fill_doc(per_stratum=_PER_STRATUM)
    def var(self) -> pd.Series:
        """Posterior variance of each stratum's rate (exact for a mixture or an exact fit).

        {per_stratum}

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500)
        >>> bool((post.var() > 0).all())
        True
        """
        if self._mixture is not None:
            return pd.Series(self._mixture.var(), index=self.strata, name="var")
        return pd.Series(self._moments()[1], index=self.strata, name="var")

    def n_eff(self) -> pd.Series:
        """Effective sample size ``mean (1 - mean) / var - 1`` of each stratum's posterior.

        The size of the Beta with the posterior's mean and variance (pooling included).

        Returns
        -------
        pandas.Series
            One value per stratum (at least 1e-3).

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500)
        >>> post.n_eff().round(0).tolist()  # about the trials (40, 50), plus what pooling adds
        [40.0, 55.0]
        """
        mean, var = self._moments()
        return pd.Series(np.maximum(mean * (1 - mean) / var - 1.0, 1e-3), index=self.strata, name="n_eff")

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of each rate.

        Exact quantiles of the Beta mixture (mixture storage or an exact fit), else quantiles
        of the draws.

        Parameters
        ----------
        level : float
            Credible level (0.95 = 95%).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Lower and upper bounds, one per stratum.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> lo, hi = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500).interval(0.9)
        >>> bool((lo < hi).all())
        True
        """
        level = check_level(level)
        if self._mixture is not None:
            return self._mixture.interval(level)
        half = (1.0 - level) / 2.0
        q = self._quantiles([half, 1.0 - half])
        return q[0], q[1]

    def _quantiles(self, qs: list[float]) -> np.ndarray:
        """Quantiles of each rate, shape (len(qs), K): exact when possible, else from draws."""
        if self._mixture is not None:
            return self._mixture.quantiles(qs)
        if self._exact_fit() is not None and hasattr(self.exact, "quantiles"):
            return self.exact.quantiles(qs)
        return np.quantile(self.theta, qs, axis=0)

    def outlier_probability(self) -> pd.Series:
        """Posterior probability that each stratum belongs to the robust model's wide component.

        Returns
        -------
        pandas.Series
            One value per stratum: zeros for models without a wide component, NaN for a
            robust posterior that carries no mixture (PyMC).

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 3, 2, 30], [40, 40, 40, 40], model="robust", random_seed=0)
        >>> int(post.outlier_probability().idxmax())
        3
        """
        if self._mixture is not None:
            p = self._mixture.outlier_probability()
        elif self._exact_fit() is not None and hasattr(self.exact, "outlier_probability"):
            p = self.exact.outlier_probability()
        elif self.model == "robust":
            p = np.full(len(self._counts), np.nan)
        else:
            p = np.zeros(len(self._counts))
        return pd.Series(p, index=self.strata, name="outlier_probability")

    def sample(self, size: int, *, random_seed: Any = None) -> np.ndarray:
        """Fresh joint draws of the rates.

        From the Beta mixture (a node, then a component, then the Betas) when there is one,
        else resampled from the stored draws.

        Parameters
        ----------
        size : int
            Number of draws.
        random_seed : int or numpy.random.Generator, optional
            Seed or generator for ``numpy.random.default_rng``.

        Returns
        -------
        numpy.ndarray
            Shape ``(size, K)``.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500).sample(5, random_seed=1).shape
        (5, 2)
        """
        size = check_positive_int(size, "size")
        rng = np.random.default_rng(random_seed)
        mix = self.mixture
        if mix is not None:
            return mix.sample(size, rng)
        return self.theta[rng.integers(0, self.theta.shape[0], size)]

    # -- draws -----------------------------------------------------------------------------
    def draws(self, name: str = "theta") -> pd.DataFrame | np.ndarray:
        """Posterior draws of a quantity.

        Parameters
        ----------
        name : str
            ``"theta"`` (DataFrame, draws x strata, columns labelled by stratum), ``"mu"``,
            ``"kappa"``, ``"alpha"`` (``mu * kappa``), ``"beta"`` (``(1 - mu) * kappa``), or any
            other hyperparameter the engine stored (e.g. ``"sigma"``), as a 1-D array.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            Draws x strata DataFrame for ``"theta"``, otherwise a 1-D array of draws.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 5], [40, 50], random_seed=0, draws=500)
        >>> bool(np.allclose(post.draws("alpha"), post.draws("mu") * post.draws("kappa")))
        True
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        if name == "theta":
            return pd.DataFrame(self.theta, columns=self.strata)
        if name in self._hyper:
            return self._hyper[name].copy()
        if name in ("alpha", "beta") and "mu" in self._hyper and "kappa" in self._hyper:
            mu, kappa = self._hyper["mu"], self._hyper["kappa"]
            return mu * kappa if name == "alpha" else (1.0 - mu) * kappa
        valid = ["theta", *self._hyper]
        if "mu" in self._hyper and "kappa" in self._hyper:
            valid += ["alpha", "beta"]
        raise ValueError(f"unknown name {name!r}; this posterior has {valid}")

    def _column(self, stratum: Hashable) -> int:
        index = self.strata
        try:
            loc = index.get_loc(stratum)
        except (KeyError, TypeError):
            loc = None
        if isinstance(loc, (int, np.integer)):
            return int(loc)
        labels = stratum_labels(index)
        if isinstance(stratum, str) and stratum in labels:
            return labels.index(stratum)
        raise ValueError(f"unknown stratum {stratum!r}; strata are {list(index[:10])}")

    def _population_weights(self, weights: Any) -> np.ndarray:
        if weights is None:
            if self._counts.weights is None:
                raise ValueError("weights is None and the counts carry no population shares; pass weights")
            return self._counts.weights.to_numpy()
        return check_weights(weights, self.strata)

    def weighted(self, weights: Any = None, *, draws: int | None = None, random_seed: Any = None) -> np.ndarray:
        """Draws of the population-weighted rate ``sum_k pi_k theta_k``.

        :meth:`weighted_moments` gives its mean and variance (exact for a Beta mixture).

        Parameters
        ----------
        weights : array-like, dict or Series, optional
            Population shares ``pi_k`` (summing to 1); defaults to ``counts.weights``.
        draws : int, optional
            Number of fresh draws (:meth:`sample`); default one per posterior draw
            (:attr:`theta`).
        random_seed : int or numpy.random.Generator, optional
            Seed of the fresh draws (with ``draws``).

        Returns
        -------
        numpy.ndarray
            Shape ``(n_draws,)``, or ``(draws,)``.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 5], [40, 50], random_seed=0, draws=500)
        >>> post.weighted([0.5, 0.5]).shape, post.weighted([0.5, 0.5], draws=20, random_seed=1).shape
        ((500,), (20,))
        """
        w = self._population_weights(weights)
        if draws is None:
            return self.theta @ w
        return self.sample(draws, random_seed=random_seed) @ w

    def weighted_moments(self, weights: Any = None) -> tuple[float, float]:
        """Mean and variance of the population-weighted rate ``sum_k pi_k theta_k``.

        With a Beta mixture (mixture storage or the exact engine) they are exact: given the
        hyperparameters the rates are independent (law of total variance over the nodes);
        otherwise they come from the draws of :meth:`weighted`.

        Parameters
        ----------
        weights : array-like, dict or Series, optional
            Population shares ``pi_k`` (summing to 1); defaults to ``counts.weights``.

        Returns
        -------
        (float, float)
            Mean and variance.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 5], [40, 50], random_seed=0, draws=500)
        >>> mean, var = post.weighted_moments([0.5, 0.5])
        >>> bool(0.04 < mean < 0.12 and var > 0)
        True
        """
        w = self._population_weights(weights)
        mix = self.mixture
        if mix is not None:
            return mix.weighted_moments(w)
        d = self.theta @ w
        return float(d.mean()), float(d.var(ddof=1))

    def gap(self, a: Hashable, b: Hashable) -> np.ndarray:
        """Draws of the gap ``theta_a - theta_b`` between two strata.

        Parameters
        ----------
        a, b : hashable
            Stratum labels.

        Returns
        -------
        numpy.ndarray
            One gap per posterior draw, shape (n_draws,).

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], strata=["x", "y"], random_seed=0, draws=500)
        >>> bool(post.gap("y", "x").mean() > 0)
        True
        """
        return self.theta[:, self._column(a)] - self.theta[:, self._column(b)]

    def prob_gap(self, a: Hashable, b: Hashable, delta: float = 0.0) -> float:
        """Posterior probability ``P(theta_a - theta_b > delta)``.

        Parameters
        ----------
        a, b : hashable
            Stratum labels.
        delta : float
            Margin the gap must exceed.

        Returns
        -------
        float
            Share of posterior draws with ``theta_a - theta_b > delta``.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], strata=["x", "y"], random_seed=0, draws=500)
        >>> post.prob_gap("y", "x") > 0.5
        True
        """
        return float(np.mean(self.gap(a, b) > float(delta)))

    def prob_below(self, threshold: Any) -> pd.Series:
        """Posterior probability that each stratum's rate is below ``threshold``.

        Parameters
        ----------
        threshold : float or array-like of float
            Rate threshold, one for all strata or one per stratum.

        Returns
        -------
        pandas.Series
            ``P(theta_k < threshold_k)`` per stratum (exact for a Beta mixture or an exact
            fit), indexed by stratum.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], strata=["x", "y"], random_seed=0, draws=500)
        >>> post.prob_below(0.5).round(2).tolist()
        [1.0, 1.0]
        >>> post.prob_below([0.5, 0.01]).round(2).tolist()
        [1.0, 0.0]
        """
        thr = np.asarray(threshold, dtype=float)
        if thr.ndim > 1 or (thr.ndim == 1 and thr.shape != (len(self._counts),)):
            raise ValueError(
                f"threshold must be one value or one per stratum ({len(self._counts)}), got shape {thr.shape}"
            )
        name = f"P(theta < {float(thr):g})" if thr.ndim == 0 else "P(theta < threshold)"
        if self._mixture is not None:
            p = self._mixture.cdf(thr)
        elif self._exact_fit() is not None and hasattr(self.exact, "cdf"):
            p = self.exact.cdf(thr)
        else:
            p = np.mean(self.theta < thr, axis=0)
        return pd.Series(p, index=self.strata, name=name)

    def prob(
        self,
        a: Hashable | None = None,
        b: Hashable | None = None,
        *,
        delta: float = 0.0,
        threshold: float | None = None,
    ) -> float | pd.Series:
        """Posterior probabilities: a gap ``P(theta_a - theta_b > delta)`` or ``P(theta_k < threshold)``.

        Parameters
        ----------
        a, b : stratum labels, optional
            Give both for ``P(theta_a - theta_b > delta)`` (a float).
        delta : float
            Margin for the gap.
        threshold : float, optional
            Give it (without ``a``/``b``) for ``P(theta_k < threshold)`` per stratum (a Series),
            or with ``a`` only for one stratum (a float).

        Returns
        -------
        float or pandas.Series
            A float for a gap or a single stratum, a Series per stratum for a threshold alone.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], strata=["x", "y"], random_seed=0, draws=500)
        >>> post.prob("y", "x", delta=0.0) == post.prob_gap("y", "x")
        True
        """
        if threshold is not None:
            if b is not None:
                raise ValueError("give threshold with at most one stratum a, not b")
            out = self.prob_below(threshold)
            return float(out.iloc[self._column(a)]) if a is not None else out
        if a is None or b is None:
            raise ValueError("give both strata a and b for a gap probability, or a threshold")
        return self.prob_gap(a, b, delta)

    def ranks(self, *, descending: bool = False, probabilities: bool | None = None) -> pd.DataFrame:
        """Posterior distribution of each stratum's rank (1 = lowest rate).

        Parameters
        ----------
        descending : bool
            Rank 1 is the highest rate when True.
        probabilities : bool, optional
            Include one column per rank ``1..K`` with the probability of that rank (a K x K
            table). Default: only when K <= 50.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum: ``mean_rank``, ``median_rank``, ``lower_rank`` and
            ``upper_rank`` (95% equal-tailed), ``p_best`` (probability of rank 1), ``p_worst``
            (probability of rank K), and optionally the rank probabilities.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], strata=["x", "y"], random_seed=0, draws=500)
        >>> bool(post.ranks().loc["x", "mean_rank"] < 1.5)
        True
        """
        th = -self.theta if descending else self.theta
        r = stats.rankdata(th, axis=1, method="ordinal").astype(np.int64)
        S, K = th.shape
        frame = pd.DataFrame(
            {
                "mean_rank": r.mean(axis=0),
                "median_rank": np.median(r, axis=0),
                "lower_rank": np.quantile(r, 0.025, axis=0, method="inverted_cdf"),
                "upper_rank": np.quantile(r, 0.975, axis=0, method="inverted_cdf"),
                "p_best": np.mean(r == 1, axis=0),
                "p_worst": np.mean(r == K, axis=0),
            },
            index=self.strata,
        )
        if probabilities is None:
            probabilities = K <= 50
        if probabilities:
            flat = (np.arange(K)[None, :] * K + (r - 1)).ravel()
            probs = np.bincount(flat, minlength=K * K).reshape(K, K) / S
            for j in range(K):
                frame[j + 1] = probs[:, j]
        return frame

    # -- summaries -------------------------------------------------------------------------
    def pooled_mean(self) -> np.ndarray:
        """Posterior mean of each stratum's population mean (the point pooling moves toward).

        ``E[mu]`` for the Beta-binomial model (``E[expit(logit mu + o_k)]`` with prior-mean
        offsets), ``E[expit(intercept)]`` for the logit-normal model.

        Returns
        -------
        numpy.ndarray
            Pooled mean per stratum, shape (K,).

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500)
        >>> post.pooled_mean().shape
        (2,)
        """
        K = len(self._counts)
        offsets = self.diagnostics.get("offsets")
        if self._mixture is not None:
            # node g: A = mu_gk kappa_g + s_k, B = (1 - mu_gk) kappa_g + n_k - s_k
            s = self._counts.successes.to_numpy(dtype=float)
            n = self._counts.trials.to_numpy(dtype=float)
            A, B = self._mixture.a, self._mixture.b
            return self._mixture.weights @ ((A - s) / (A + B - n))
        if "mu" in self._hyper:
            mu = self._hyper["mu"]
            if offsets is not None:
                o = np.asarray(offsets, dtype=float)
                return expit(logit(mu)[:, None] + o[None, :]).mean(axis=0)
            return np.full(K, mu.mean())
        if "intercept" in self._hyper:
            return np.full(K, expit(self._hyper["intercept"]).mean())
        return np.full(K, np.average(self.theta.mean(axis=0), weights=self._counts.trials + 1))

    def shrinkage(self) -> pd.Series:
        """Shrinkage per stratum: the weight of the population mean in its pooled estimate.

        A number from 0 (the stratum's own data only) to 1 (the population mean only). For
        the Beta-binomial and robust models it is the posterior mean of
        ``kappa / (kappa + n_k)``, the weight of the population mean in the conditional
        posterior mean ``(kappa mu + s_k) / (kappa + n_k)`` (Gelman et al., *Bayesian Data
        Analysis*, 3rd ed., section 5.3); for the logit-normal model the analogous
        ``1 / (1 + sigma^2 n_k p_k (1 - p_k))`` (Gelman and Hill 2007, section 12.5). A
        stratum without trials gets 1. NaN for models with neither ``kappa`` nor ``sigma``
        draws (the crossed-factor model pools along several variance components).

        Returns
        -------
        pandas.Series
            Shrinkage per stratum, in [0, 1], indexed by stratum.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([1, 9, 20], [30, 60, 80], random_seed=0, draws=500)
        >>> s = post.shrinkage()
        >>> bool(((0 <= s) & (s <= 1)).all()), bool(s.iloc[0] > s.iloc[2])  # fewer trials, more pooling
        (True, True)
        """
        n = self._counts.trials.to_numpy(dtype=float)
        hyper = self.hyper or {}
        if self._mixture is not None:
            # node g: A + B = kappa_g + n_k
            total = self._mixture.a + self._mixture.b
            out = self._mixture.weights @ ((total - n) / total)
        elif "kappa" in hyper:
            kappa = np.asarray(hyper["kappa"], dtype=float).reshape(-1)[:, None]
            # once per distinct n, in blocks of about a million draws x strata
            n_u, inv = np.unique(n, return_inverse=True)
            out = np.empty(n_u.size)
            step = max(1, 1_000_000 // kappa.size)
            for i in range(0, n_u.size, step):
                out[i : i + step] = (kappa / (kappa + n_u[None, i : i + step])).mean(axis=0)
            out = out[inv.ravel()]
        elif "sigma" in hyper:
            sigma2 = np.asarray(hyper["sigma"], dtype=float).reshape(-1)[:, None] ** 2
            p = np.asarray(self.theta, dtype=float).mean(axis=0)
            out = (1.0 / (1.0 + sigma2 * (n * p * (1 - p))[None, :])).mean(axis=0)
        else:
            out = np.full(len(n), np.nan)
        return pd.Series(out, index=self.strata, name="shrinkage")

    def summary(
        self,
        level: float = 0.95,
        interval: str = "eti",
        *,
        read_threshold: float = READ_ADAPTIVE_P,
        read: bool = False,
    ) -> pd.DataFrame:
        """Per-stratum summary.

        Parameters
        ----------
        level : float
            Credible level (0.95 = 95%).
        interval : {"eti", "hdi"}
            Equal-tailed interval, or highest-density interval (``arviz.hdi`` on the draws).
            With a Beta mixture (mixture storage or the exact engine), the mean and the
            equal-tailed quantiles are computed exactly rather than from draws (see
            :meth:`bayeseval.models.exact.ExactFit.quantiles`).
        read_threshold : float
            Leave-one-out conflict p-value at or below which a stratum reads its adaptive
            interval (see :func:`bayeseval.models.read.which_interval`; default 0.20); used with ``read=True``.
        read : bool
            Also give the interval to read (``read``, ``read_reason``, ``read_lower``,
            ``read_upper``), which runs a leave-one-out conflict check and computes adaptive
            intervals; the default False describes the posterior only.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum: ``successes``, ``trials``, ``raw_rate``, ``mean``, ``median``,
            ``lower``, ``upper`` (the posterior's interval), ``shrinkage``. With ``read=True``
            also the interval to read: ``read`` (``"pooled"``, or ``"adaptive"`` when the
            stratum's count is not clearly typical of what the other strata predict), its
            reason ``read_reason`` (see :func:`bayeseval.models.read.which_interval`) and its ends ``read_lower``
            and ``read_upper``: the pooled interval, or the stratum's adaptive interval at
            ``level`` (``proportion_ci(..., method="adaptive")``).

        Notes
        -----
        Why a ``read`` column: pooling pulls every stratum toward the others, and for the
        stratum that really differs that pull is the error. Measured coverage of the read
        interval for a small outlying stratum: 0.950, against 0.317 for the pooled interval
        (docs/validation.md, section 6d).

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=500)
        >>> s = post.summary(level=0.9)
        >>> bool((s["lower"] < s["mean"]).all() and (s["mean"] < s["upper"]).all())
        True

        With ``read=True``, a small stratum far from the others reads its adaptive interval:

        >>> post = fit_hierarchical([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20],
        ...                         random_seed=0, draws=500)
        >>> row = post.summary(read=True).loc[6]
        >>> row["read"], round(float(row["read_lower"]), 3), round(float(row["read_upper"]), 3)
        ('adaptive', 0.159, 0.655)
        """
        level = check_level(level)
        interval = check_method(interval, _INTERVALS, "interval")
        alpha = 1.0 - level
        mean = self._moments()[0]
        median, lower, upper = self._quantiles([0.5, alpha / 2, 1 - alpha / 2])
        if interval == "hdi":
            import arviz as az

            h = np.asarray(az.hdi(self.theta[None, :, :], hdi_prob=level))
            lower, upper = h[:, 0], h[:, 1]
        frame = pd.DataFrame(
            {
                "successes": self._counts.successes,
                "trials": self._counts.trials,
                "raw_rate": self._counts.rates,
                "mean": mean,
                "median": median,
                "lower": lower,
                "upper": upper,
            },
            index=self.strata,
        )
        frame["shrinkage"] = self.shrinkage()
        if not read:
            return frame
        choice = read_choice(
            self._counts.successes.to_numpy(),
            self._counts.trials.to_numpy(),
            threshold=check_probability(read_threshold, "read_threshold"),
        )
        frame["read"], frame["read_reason"] = choice.read, choice.reason
        frame["read_lower"], frame["read_upper"] = read_bounds(
            choice, np.asarray(lower, float), np.asarray(upper, float), level
        )
        return frame

    # -- predictive and likelihood ------------------------------------------------------------
    def sample_predictive(self, *, random_seed: Any = None) -> np.ndarray:
        """Replicated successes ``s_k^rep ~ Binomial(n_k, theta_k)``, one per draw.

        Parameters
        ----------
        random_seed : int, numpy.random.Generator or None, optional
            Seed or generator for ``numpy.random.default_rng``.

        Returns
        -------
        numpy.ndarray
            Replicated success counts (int), shape (n_draws, K).

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], random_seed=0, draws=200)
        >>> rep = post.sample_predictive(random_seed=1)
        >>> rep.shape, bool((rep <= np.array([40, 50])).all())
        ((200, 2), True)
        """
        rng = np.random.default_rng(random_seed)
        n = self._counts.trials.to_numpy()
        return rng.binomial(n[None, :], self.theta)

    @property
    def log_likelihood(self) -> np.ndarray:
        """Pointwise binomial log-likelihood ``log Bin(s_k | n_k, theta_k)``, shape (n_draws, K)."""
        s = self._counts.successes.to_numpy()
        n = self._counts.trials.to_numpy()
        return stats.binom.logpmf(s[None, :], n[None, :], self.theta)

    # -- ArviZ ---------------------------------------------------------------------------------
    @property
    def idata(self) -> Any:
        """An ``arviz.InferenceData`` with dims chain/draw/stratum.

        For the exact engine (independent draws) the draws are split into 4 chains when the
        number of draws is divisible by 4, so ``arviz.summary`` reports R-hat and ESS. Groups:
        ``posterior`` (theta, hyperparameters, alpha/beta), ``log_likelihood`` (``successes``,
        binomial log pmf, so ``arviz.loo`` works), ``observed_data`` (successes) and
        ``constant_data`` (trials).
        """
        if self._idata is None:
            self._idata = self._build_idata()
        return self._idata

    def _build_idata(self) -> Any:
        import arviz as az

        theta = self.theta
        S, K = theta.shape
        chains = 4 if S % 4 == 0 and S >= 8 else 1
        per = S // chains

        def pack(x: np.ndarray) -> np.ndarray:
            return x.reshape((chains, per) + x.shape[1:])

        posterior = {"theta": pack(theta)}
        for key, val in self._hyper.items():
            posterior[key] = pack(val)
        if "mu" in self._hyper and "kappa" in self._hyper:
            posterior["alpha"] = pack(self.draws("alpha"))
            posterior["beta"] = pack(self.draws("beta"))
        labels = stratum_labels(self.strata)
        coords = {"stratum": labels}
        dims = {"theta": ["stratum"], "successes": ["stratum"], "trials": ["stratum"]}
        return az.from_dict(
            posterior=posterior,
            log_likelihood={"successes": pack(self.log_likelihood)},
            observed_data={"successes": self._counts.successes.to_numpy()},
            constant_data={"trials": self._counts.trials.to_numpy()},
            coords=coords,
            dims=dims,
            attrs={"engine": self.engine, "model": self.model},
        )

    @fill_doc()
    def plot(self, *, level: float = 0.95, ax: Any = None) -> Any:
        """Forest plot of raw rates beside the pooled posterior (see :func:`bayeseval.plots.forest`).

        Parameters
        ----------
        level : float
            Credible level of the intervals.
        {ax}

        Returns
        -------
        matplotlib.axes.Axes
            The axes with the plot.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from bayeseval.models import fit_hierarchical
        >>> ax = fit_hierarchical([2, 5, 9], [40, 50, 60], random_seed=0, draws=500).plot()
        >>> len(ax.get_yticklabels())
        3
        """
        from bayeseval import plots

        return plots.forest(self, level=level, ax=ax)
