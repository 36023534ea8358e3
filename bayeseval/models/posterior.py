"""Posterior: draws of per-stratum rates plus summaries and derived quantities.

Both engines (exact and PyMC) return a :class:`Posterior`. It holds draws of
``theta`` (n_draws x K strata), draws of the hyperparameters, and the
:class:`~bayeseval.counts.counts.Counts` it was fitted to.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logit

from bayeseval._api.validation import check_level, check_method, check_probability, check_weights
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, read_bounds, read_choice
from bayeseval.counts.counts import Counts, stratum_labels
from bayeseval.models.priors import Prior

__all__ = ["Posterior", "which_interval"]

_INTERVALS = ("eti", "hdi")


class Posterior:
    """Posterior of a hierarchical model of per-stratum rates.

    Parameters
    ----------
    theta : numpy.ndarray of shape (n_draws, K), or a callable returning one
        Posterior draws of the stratum rates, columns in the order of ``counts.strata``.
        An engine may pass a zero-argument callable to draw them lazily on first use.
    counts : Counts
        The data the model was fitted to.
    hyper : dict of str to numpy.ndarray
        Hyperparameter draws, each of shape (n_draws,), e.g. ``{"mu": ..., "kappa": ...}``
        (logit-normal: ``{"intercept": ..., "sigma": ...}``).
    engine : str
        ``"exact"`` or ``"pymc"``.
    model : str
        ``"beta_binomial"``, ``"robust"`` or ``"logit_normal"``.
    prior : Prior or str
        The prior used.
    idata : arviz.InferenceData, optional
        The engine's InferenceData (PyMC); built lazily from the draws when None.
    diagnostics : dict, optional
        Engine diagnostics (R-hat, ESS, divergences, grid size...). The exact engine stores
        ``"offsets"`` (logit offsets from ``prior_mean``) here when used.
    exact : object, optional
        The exact engine's grid fit (:class:`~bayeseval.models.exact.ExactFit`); when given,
        :meth:`summary` uses exact mixture moments and quantiles instead of draws.

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 9], [40, 50, 60], random_seed=0, draws=1000)
    >>> post.summary().columns.tolist()
    ['successes', 'trials', 'raw_rate', 'mean', 'median', 'lower', 'upper', 'shrinkage']
    >>> post.draws("theta").shape
    (1000, 3)
    """

    def __init__(
        self,
        *,
        theta: np.ndarray | Callable[[], np.ndarray],
        counts: Counts,
        hyper: dict[str, np.ndarray],
        engine: str,
        model: str,
        prior: Prior | str,
        idata: Any = None,
        diagnostics: dict | None = None,
        exact: Any = None,
    ) -> None:
        if not isinstance(counts, Counts):
            raise TypeError(f"counts must be a Counts object, got {type(counts).__name__}")
        self._counts = counts
        self._theta_source = theta
        self._theta: np.ndarray | None = None
        if not callable(theta):
            self._theta = self._check_theta(theta)
        self._hyper = {str(k): np.asarray(v, dtype=float) for k, v in (hyper or {}).items()}
        for key, val in self._hyper.items():
            if val.ndim != 1:
                raise ValueError(
                    f"hyper[{key!r}] must be one-dimensional draws, got shape {val.shape}"
                )
        self.engine = str(engine)
        self.model = str(model)
        self.prior = prior
        self._idata = idata
        self.diagnostics = dict(diagnostics or {})
        self.exact = exact

    # -- basic attributes ------------------------------------------------------------------
    def _check_theta(self, theta: Any) -> np.ndarray:
        arr = np.asarray(theta, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != len(self._counts):
            raise ValueError(
                f"theta must have shape (n_draws, {len(self._counts)}), got {arr.shape}"
            )
        return arr

    @property
    def theta(self) -> np.ndarray:
        """Draws of the stratum rates, shape (n_draws, K) (drawn on first use if lazy)."""
        if self._theta is None:
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
        """Number of posterior draws."""
        if self._theta is not None:
            return int(self._theta.shape[0])
        if self._hyper:
            return int(next(iter(self._hyper.values())).shape[0])
        return int(self.theta.shape[0])

    def __repr__(self) -> str:
        name = self.prior.name if isinstance(self.prior, Prior) else str(self.prior)
        return (
            f"<Posterior engine={self.engine!r} model={self.model!r} prior={name!r} "
            f"strata={len(self._counts)} draws={self.n_draws}>"
        )

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
                raise ValueError(
                    "weights is None and the counts carry no population shares; pass weights"
                )
            return self._counts.weights.to_numpy()
        return check_weights(weights, self.strata)

    def weighted(self, weights: Any = None) -> np.ndarray:
        """Draws of the population-weighted rate ``sum_k pi_k theta_k``.

        :meth:`weighted_moments` gives its mean and variance (exact with the exact engine).

        Parameters
        ----------
        weights : array-like, dict or Series, optional
            Population shares ``pi_k`` (summing to 1); defaults to ``counts.weights``.

        Returns
        -------
        numpy.ndarray
            One value per draw, shape ``(n_draws,)``.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 5], [40, 50], random_seed=0, draws=500)
        >>> post.weighted([0.5, 0.5]).shape
        (500,)
        """
        return self.theta @ self._population_weights(weights)

    def weighted_moments(self, weights: Any = None) -> tuple[float, float]:
        """Mean and variance of the population-weighted rate ``sum_k pi_k theta_k``.

        With the exact engine they are computed exactly from the Beta mixture over the grid
        (given the hyperparameters the rates are independent; law of total variance), else
        from the draws of :meth:`weighted`.

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
        if self.exact is not None and hasattr(self.exact, "stratum_mixture"):
            return self.exact.stratum_mixture().weighted_moments(w)
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

    def prob_below(self, threshold: float) -> pd.Series:
        """Posterior probability that each stratum's rate is below ``threshold``.

        Parameters
        ----------
        threshold : float
            Rate threshold.

        Returns
        -------
        pandas.Series
            ``P(theta_k < threshold)`` per stratum (exact for the exact engine), indexed by
            stratum.

        Examples
        --------
        >>> from bayeseval.models import fit_hierarchical
        >>> post = fit_hierarchical([2, 9], [40, 50], strata=["x", "y"], random_seed=0, draws=500)
        >>> post.prob_below(0.5).round(2).tolist()
        [1.0, 1.0]
        """
        thr = float(threshold)
        if self.exact is not None and hasattr(self.exact, "cdf"):
            p = self.exact.cdf(thr)
        else:
            p = np.mean(self.theta < thr, axis=0)
        return pd.Series(p, index=self.strata, name=f"P(theta < {thr:g})")

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
        if "kappa" in hyper:
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

    def _post_mean(self) -> np.ndarray:
        if self.exact is not None and hasattr(self.exact, "posterior_moments"):
            return np.asarray(self.exact.posterior_moments()[0], dtype=float)
        return self.theta.mean(axis=0)

    def summary(
        self, level: float = 0.95, interval: str = "eti", *, read_threshold: float = READ_ADAPTIVE_P,
        read: bool = False,
    ) -> pd.DataFrame:
        """Per-stratum summary.

        Parameters
        ----------
        level : float
            Credible level (0.95 = 95%).
        interval : {"eti", "hdi"}
            Equal-tailed interval, or highest-density interval (``arviz.hdi`` on the draws).
            With the exact engine, the mean and the equal-tailed quantiles are computed exactly
            from the grid mixture of Beta distributions rather than from draws (see
            :meth:`bayeseval.models.exact.ExactFit.quantiles`).
        read_threshold : float
            Leave-one-out conflict p-value at or below which a stratum reads its adaptive
            interval (see :func:`which_interval`; default 0.20); used with ``read=True``.
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
            reason ``read_reason`` (see :func:`which_interval`) and its ends ``read_lower``
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
        exact = self.exact is not None and hasattr(self.exact, "quantiles")
        mean = self._post_mean()
        if exact:
            q = self.exact.quantiles([0.5, alpha / 2, 1 - alpha / 2])
            median = q[0]
            lower, upper = q[1], q[2]
        else:
            median = np.median(self.theta, axis=0)
            lower = np.quantile(self.theta, alpha / 2, axis=0)
            upper = np.quantile(self.theta, 1 - alpha / 2, axis=0)
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
            self._counts.successes.to_numpy(), self._counts.trials.to_numpy(),
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

    def plot(self, *, level: float = 0.95, ax: Any = None) -> Any:
        """Forest plot of raw rates beside the pooled posterior (see :func:`bayeseval.plots.forest`).

        Parameters
        ----------
        level : float
            Credible level of the intervals.
        ax : matplotlib.axes.Axes, optional
            Axes to draw on (default: a new figure).

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


def which_interval(
    counts: Any,
    level: float = 0.95,
    control: str = "per_stratum",
    *,
    threshold: float = READ_ADAPTIVE_P,
) -> tuple[np.ndarray, np.ndarray]:
    """Which interval to read per stratum: the pooled one, or the adaptive one.

    The reference of each stratum is the exact leave-one-out predictive of its count
    under the Beta-binomial model fitted to the *other* strata
    (:func:`bayeseval.checks.predictive.conflict_check`). A stratum whose two-sided mid-p value is
    at most ``threshold`` (default 0.20), or that the conflict rule flags at
    ``1 - level``, is not clearly typical of the population the pooled interval borrows
    from: read its adaptive interval (``proportion_ci(..., method="adaptive")``), which
    keeps coverage >= level at every true rate whatever the other strata say. The
    others read the pooled interval. A false "adaptive" costs little width (the
    adaptive interval of a typical stratum is about as wide as Wilson's); a missed
    outlier costs coverage, which is why the threshold is above the usual 0.05.

    Measured coverage of the interval this points to, for a small outlying stratum: 0.950
    (docs/validation.md, section 6d).

    Parameters
    ----------
    counts : Counts
        Successes and trials per stratum.
    level : float
        ``1 - level`` is the error rate of the conflict flag (the reason then says the
        count is above or below what the other strata predict).
    control : {"per_stratum", "holm"}
        Error rate of the flag bounded per stratum (default) or per dataset (Holm).
    threshold : float
        Mid-p value at or below which a stratum reads its adaptive interval even when
        the flag rule does not flag it (0 turns this off: only flagged strata).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``"pooled"`` or ``"adaptive"`` per stratum, and the reason (with the p-value).

    Examples
    --------
    >>> from bayeseval.counts.counts import Counts
    >>> read, why = which_interval(Counts.from_arrays([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]))
    >>> read.tolist()[-2:]
    ['pooled', 'adaptive']
    >>> why[-1]
    'count above what the other strata predict (p = 0.0015)'
    """
    level = check_level(level)
    control = check_method(control, ("per_stratum", "holm"), "control")
    threshold = check_probability(threshold, "threshold")
    choice = read_choice(
        counts.successes.to_numpy(), counts.trials.to_numpy(),
        alpha=1.0 - level, control=control, threshold=threshold,
    )
    return choice.read, choice.reason
