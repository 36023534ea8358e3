r"""Exact engine for the hierarchical Beta-binomial model (no PyMC).

Model
-----
.. math::

    s_k \mid \theta_k \sim \mathrm{Bin}(n_k, \theta_k), \qquad
    \theta_k \sim \mathrm{Beta}(\mu_k \kappa, (1 - \mu_k) \kappa), \qquad
    \mu_k = \mathrm{expit}(\mathrm{logit}\,\mu + o_k),

with ``o_k = 0`` unless per-stratum prior means are given. The hyperparameters are
two-dimensional, so the marginal posterior of ``(u, v) = (logit mu, log kappa)``

.. math::

    \log p(u, v \mid s) = \log p(u, v) + \sum_k \left[ \log B(a_k + s_k, b_k + n_k - s_k)
        - \log B(a_k, b_k) \right] + \mathrm{const}, \quad a_k = \mu_k\kappa,\ b_k = (1-\mu_k)\kappa,

is integrated numerically on an adaptive grid (``preset="accurate"``, the default): the mode is
found by damped Newton steps, the curvature (a finite-difference Hessian) sets the initial box
(+-7.5 sd), and the box is expanded where the posterior has mass on its edge and shrunk to the
region holding all but a negligible mass (each end of each axis may leave out at most 1e-8 of
the mass), then evaluated at the final resolution (``grid_size`` points per axis, default 48).
``preset="fast"`` (used by the labelling campaigns, which refit after every batch) uses 20
points per axis on a box that may leave out 1e-5 of the mass at each end of each axis, skips
the half-resolution pass when the first box fits, and computes moments
and quantiles from the grid points holding all but 1e-5 of the mass (1e-7 for the accurate
preset); see :mod:`bayeseval._kernels.grid`.
``log kappa`` is bounded to
``[log 1e-4, log 1e6]``: when the data are consistent with complete pooling the posterior is flat
toward large kappa and the bound truncates it (reported in ``diagnostics["edge_mass"]``).

Strata with identical ``(s_k, n_k, o_k)`` are collapsed, and without offsets the sum is
rewritten as sums of ``gammaln`` over the distinct values of ``s``, ``n - s`` and ``n``
weighted by their multiplicities, so the cost grows with the number of distinct values, not
strata. Draws of ``(u, v)`` pick grid cells by their mass with uniform jitter within the cell;
``theta_k | mu, kappa ~ Beta(a_k + s_k, b_k + n_k - s_k)`` is then drawn exactly. The grid
(:class:`ExactFit`) also gives exact posterior moments and quantiles of each ``theta_k`` as a
mixture of Beta distributions, without sampling.

The robust model (``model="robust"``) is described in :mod:`bayeseval.models.robust`.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
from scipy.special import betaln, expit, gammaln, logit, logsumexp

from bayeseval._api.validation import check_positive_int, check_probability
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.grid import PRESETS, integrate
from bayeseval._kernels.mixture import BetaMixture
from bayeseval._kernels.ppc import Nodes
from bayeseval._kernels.rows import unique_rows
from bayeseval.counts.counts import Counts
from bayeseval.models.posterior import Posterior
from bayeseval.models.priors import Prior, check_proper_posterior, resolve_prior

__all__ = ["ExactFit", "fit_exact", "prior_offsets", "U_BOUNDS", "V_BOUNDS"]

#: Bounds of u = logit(mu).
U_BOUNDS = (-25.0, 25.0)
#: Bounds of v = log(kappa): kappa in [1e-4, 1e6].
V_BOUNDS = (float(np.log(1e-4)), float(np.log(1e6)))

_EPS_NODES = 8  # quadrature nodes for a prior on the robust model's outlier share
_TRIM = 1e-8  # mass each end of each axis may leave outside the grid (4e-8 in all)
_MODELS = ("beta_binomial", "robust")
#: mass the quadrature of moments and quantiles may drop, per preset
_QUAD_TRIM = {"accurate": 1e-7, "fast": 1e-5}


def prior_offsets(prior_mean: Any, counts: Counts) -> np.ndarray | None:
    """Logit offsets ``o_k = logit(m_k) - mean_j logit(m_j)`` from per-stratum prior means.

    Parameters
    ----------
    prior_mean : array-like, dict, Series or None
        Prior guesses ``m_k`` in (0, 1), one per stratum (aligned by label for dict/Series).
    counts : Counts
        The strata.

    Returns
    -------
    numpy.ndarray or None

    Examples
    --------
    >>> c = Counts.from_arrays([1, 2], [10, 10])
    >>> prior_offsets([0.1, 0.1], c).tolist()
    [0.0, 0.0]
    """
    if prior_mean is None:
        return None
    import pandas as pd

    index = counts.strata
    if isinstance(prior_mean, dict):
        prior_mean = pd.Series(prior_mean)
    if isinstance(prior_mean, pd.Series):
        missing = [k for k in index if k not in prior_mean.index]
        if missing:
            raise ValueError(f"prior_mean has no value for strata {missing[:5]}")
        m = prior_mean.reindex(index).to_numpy(dtype=float)
    else:
        m = np.atleast_1d(np.asarray(prior_mean, dtype=float))
        if m.size == 1:
            m = np.full(len(index), float(m[0]))
    if m.shape != (len(index),):
        raise ValueError(f"prior_mean must have one value per stratum ({len(index)}), got shape {m.shape}")
    if not np.all((m > 0) & (m < 1)):
        raise ValueError(
            f"prior_mean values must be strictly between 0 and 1, got {m[~((m > 0) & (m < 1))][:5].tolist()}"
        )
    lm = logit(m)
    return lm - lm.mean()


class ExactFit:
    """The exact engine's grid over ``(u, v) = (logit mu, log kappa)``.

    Parameters
    ----------
    counts : Counts
        Successes and trials per stratum.
    prior, model, prior_mean, outlier_prob
        As in :func:`fit_exact`.
    grid_size : int, optional
        Points per axis of the final grid (default: 48 for the accurate preset, 20 for fast).
    preset : {"accurate", "fast"}
        How the grid is found (see the module docstring).

    Attributes
    ----------
    grid_u, grid_v : numpy.ndarray
        Grid point coordinates (flattened, shape (G,)).
    weights : numpy.ndarray
        Normalised posterior mass of each grid cell (sums to 1).
    du, dv : float
        Cell widths.
    log_post : numpy.ndarray
        Unnormalised log posterior at the grid points.
    log_evidence : float
        Log marginal likelihood of the model (prior normalised; up to the binomial
        coefficients, which do not depend on the model; meaningless for the improper ``"bda"``
        prior).
    diagnostics : dict
        ``mode``, ``hessian``, ``grid_shape``, ``box``, ``edge_mass`` (mass on the grid's
        edge), ``kappa_bound_mass`` (posterior mass per unit of log kappa at kappa = 1e6), ``n_evaluations``, ``distinct``
        (number of distinct (s, n) pairs).

    Examples
    --------
    >>> c = Counts.from_arrays([2, 5, 9], [40, 50, 60])
    >>> fit = ExactFit(c)
    >>> round(float(fit.weights.sum()), 6)
    1.0
    >>> mean, var = fit.posterior_moments()
    >>> mean.shape
    (3,)
    """

    def __init__(
        self,
        counts: Counts,
        *,
        prior: Any = "default",
        model: str = "beta_binomial",
        prior_mean: Any = None,
        grid_size: int | None = None,
        outlier_prob: Any = 0.1,
        preset: str = "accurate",
    ) -> None:
        if not isinstance(counts, Counts):
            raise TypeError(f"counts must be a Counts object, got {type(counts).__name__}")
        if model not in _MODELS:
            raise ValueError(f"unknown model {model!r} for the exact engine; valid choices are {list(_MODELS)}")
        self.counts = counts
        self.prior: Prior = resolve_prior(prior)
        self.model = model
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; valid choices are {sorted(PRESETS)}")
        self.preset = preset
        if grid_size is None:
            grid_size = PRESETS[preset]
        self.grid_size = check_positive_int(grid_size, "grid_size", minimum=8)
        if hasattr(outlier_prob, "ppf") and hasattr(outlier_prob, "support"):
            lo_e, hi_e = (float(x) for x in outlier_prob.support())
            if lo_e < 0 or hi_e > 1:
                raise ValueError(
                    f"outlier_prob as a distribution must live on (0, 1), got support ({lo_e:g}, {hi_e:g})"
                )
            # equal-mass quadrature of the prior of eps (INLA-style 1-D integration)
            self.outlier_prob = outlier_prob
            nodes = np.asarray(outlier_prob.ppf((np.arange(_EPS_NODES) + 0.5) / _EPS_NODES))
            self._eps = np.clip(nodes.astype(float), 1e-9, 1 - 1e-9)
        else:
            self.outlier_prob = check_probability(outlier_prob, "outlier_prob", open_interval=True)
            self._eps = np.array([self.outlier_prob])
        s = counts.successes.to_numpy().astype(np.int64)
        n = counts.trials.to_numpy().astype(np.int64)
        check_proper_posterior(self.prior, s, n)
        self.offsets = prior_offsets(prior_mean, counts)
        self._s, self._n = s, n
        # distinct (s, n, o) triples
        o = self.offsets if self.offsets is not None else np.zeros(len(s))
        uniq, inverse, mult = unique_rows(s.astype(float), n.astype(float), o)
        self._ps = uniq[:, 0]
        self._pn = uniq[:, 1]
        self._pf = self._pn - self._ps
        self._po = uniq[:, 2]
        self._pm = mult.astype(float)
        self._inverse = inverse.ravel()
        self._fast = self.offsets is None and model == "beta_binomial"
        if self._fast:
            self._tabs = [self._table(self._ps), self._table(self._pf), self._table(self._pn)]
        if model == "robust":
            # log marginal of the wide component Beta(1, 1), without the binomial coefficient
            self._l0 = betaln(1.0 + self._ps, 1.0 + self._pf)
        self.n_evaluations = 0
        self._build()
        self._moments: tuple[np.ndarray, np.ndarray] | None = None

    # -- log posterior -------------------------------------------------------------------
    def _table(self, values: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """Precompute ``sum_j m_j [gammaln(x + c_j) - gammaln(x)]`` for distinct values c_j.

        Values up to a cut ``T`` use ``sum_{i<T} C_i log(x + i)`` with ``C_i`` the number of
        strata whose value exceeds ``i`` (a log is several times cheaper than a gammaln);
        values above ``T`` add ``gammaln(x + c) - gammaln(x + T)``.
        """
        vals, inv = np.unique(values, return_inverse=True)
        w = np.bincount(inv.ravel(), weights=self._pm, minlength=len(vals))
        keep = vals > 0
        vals, w = vals[keep], w[keep]
        if vals.size == 0:
            return 0, np.zeros(0), vals, w
        # cost model: one log per integer below the cut, ~5 logs per gammaln above it
        cand = np.concatenate([[0.0], vals])
        cost = cand + 5.0 * (len(vals) - np.arange(len(cand)))
        cut = int(cand[int(np.argmin(cost))])
        i = np.arange(cut)
        # C_i = sum of multiplicities of values > i (for i < cut)
        csum = np.concatenate([[0.0], np.cumsum(w)])
        pos = np.searchsorted(vals, i, side="right")
        C = csum[-1] - csum[pos]
        big = vals > cut
        return cut, C, vals[big], w[big]

    @staticmethod
    def _table_term(x: np.ndarray, table: tuple) -> np.ndarray:
        cut, C, bvals, bw = table
        out = np.zeros(x.size)
        if cut:
            out += np.log(x[:, None] + np.arange(cut)[None, :]) @ C
        if bvals.size:
            out += (gammaln(x[:, None] + bvals[None, :]) - gammaln(x + cut)[:, None]) @ bw
        return out

    def _pair_loglik(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Log Beta-binomial marginal (no binomial coefficient) per grid point and pair, (G, J)."""
        kappa = np.exp(v)[:, None]
        mu = expit(u[:, None] + self._po[None, :])
        a = mu * kappa
        b = kappa - a
        b = np.maximum(b, 1e-300)
        a = np.maximum(a, 1e-300)
        return betaln(a + self._ps, b + self._pf) - betaln(a, b)

    def _loglik(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Marginal log likelihood of the hyperparameters at points (u, v)."""
        u = np.asarray(u, dtype=float).ravel()
        v = np.asarray(v, dtype=float).ravel()
        self.n_evaluations += u.size
        if self._fast:
            kappa = np.exp(v)
            a = np.maximum(expit(u) * kappa, 1e-300)
            b = np.maximum(expit(-u) * kappa, 1e-300)
            out = np.zeros(u.size)
            step = max(1, int(4_000_000 // max(max(tab[0] for tab in self._tabs), 1)))
            for i in range(0, u.size, step):
                sl = slice(i, i + step)
                out[sl] = (
                    self._table_term(a[sl], self._tabs[0])
                    + self._table_term(b[sl], self._tabs[1])
                    - self._table_term(kappa[sl], self._tabs[2])
                )
            return out
        out = np.empty(u.size)
        chunk = max(1, int(2_000_000 // max(len(self._ps), 1)))
        for i in range(0, u.size, chunk):
            l1 = self._pair_loglik(u[i : i + chunk], v[i : i + chunk])
            if self.model == "robust" and len(self._eps) == 1:
                out[i : i + chunk] = self._eps_loglik(l1)[:, 0]
            elif self.model == "robust":
                out[i : i + chunk] = logsumexp(self._eps_loglik(l1), axis=1) - np.log(len(self._eps))
            else:
                out[i : i + chunk] = l1 @ self._pm
        return out

    def _eps_loglik(self, l1: np.ndarray) -> np.ndarray:
        """Robust model: log likelihood (G, E) at each eps node from the main-component terms."""
        out = np.empty((l1.shape[0], len(self._eps)))
        for e, eps in enumerate(self._eps):
            both = np.logaddexp(np.log1p(-eps) + l1, np.log(eps) + self._l0[None, :])
            out[:, e] = both @ self._pm
        return out

    def _eps_posterior(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Robust model: posterior probabilities (G, E) of the eps nodes given (u, v)."""
        if len(self._eps) == 1:
            return np.ones((len(u), 1))
        out = np.empty((len(u), len(self._eps)))
        chunk = max(1, int(2_000_000 // max(len(self._ps), 1)))
        for i in range(0, len(u), chunk):
            ll = self._eps_loglik(self._pair_loglik(u[i : i + chunk], v[i : i + chunk]))
            out[i : i + chunk] = np.exp(ll - logsumexp(ll, axis=1, keepdims=True))
        return out

    def sample_outlier_prob(self, u: np.ndarray, v: np.ndarray, *, random_seed: Any = None) -> np.ndarray:
        """Robust model: draw ``eps`` (one of its quadrature nodes) given each ``(u, v)``.

        Parameters
        ----------
        u, v : numpy.ndarray
            Draws of ``logit mu`` and ``log kappa`` (same length).
        random_seed : int, numpy.random.Generator or None, optional
            Seed or generator for ``numpy.random.default_rng``.

        Returns
        -------
        numpy.ndarray
            One outlier share per ``(u, v)`` draw, shape ``(len(u),)``.
        """
        rng = np.random.default_rng(random_seed)
        p = self._eps_posterior(u, v)
        c = np.cumsum(p, axis=1)
        idx = (rng.random(len(u))[:, None] > c[:, :-1]).sum(axis=1)
        return self._eps[idx]

    def log_posterior(self, u: Any, v: Any) -> np.ndarray:
        """Unnormalised log posterior of ``(logit mu, log kappa)`` (prior Jacobian included).

        Parameters
        ----------
        u : float or array-like
            ``logit mu`` value(s).
        v : float or array-like
            ``log kappa`` value(s), broadcast against ``u``.

        Returns
        -------
        numpy.ndarray
            Log posterior up to a constant, with the broadcast shape of ``u`` and ``v``.

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([2, 5], [40, 50]))
        >>> bool(np.isfinite(fit.log_posterior(-2.0, 3.0)).all())
        True
        """
        u = np.asarray(u, dtype=float)
        v = np.asarray(v, dtype=float)
        u, v = np.broadcast_arrays(u, v)
        lp = self._loglik(u, v) + np.asarray(self.prior.log_density(u, v)).ravel()
        return lp.reshape(u.shape)

    # -- grid --------------------------------------------------------------------------------
    def _build(self) -> None:
        start_u = float(logit((self._s.sum() + 0.5) / (self._n.sum() + 1.0)))
        grid = integrate(
            self.log_posterior,
            (U_BOUNDS, V_BOUNDS),
            preset=self.preset,
            grid_size=self.grid_size,
            start_u=start_u,
        )
        self._grid = grid
        self.grid_u, self.grid_v = grid.u, grid.v
        self.log_post = grid.log_post
        self.weights = grid.weights
        self.log_weights = grid.log_weights
        self.du, self.dv = grid.du, grid.dv
        self.log_evidence = grid.log_evidence
        box_u = (float(grid.u[0]), float(grid.u[-1]))
        box_v = (float(grid.v[0]), float(grid.v[-1]))
        self.diagnostics = {
            "mode": {"logit_mu": float(grid.mode[0]), "log_kappa": float(grid.mode[1])},
            "hessian": grid.hessian,
            "grid_shape": grid.shape,
            "box": {"logit_mu": box_u, "log_kappa": box_v},
            "edge_mass": grid.edge_mass,
            "n_evaluations": self.n_evaluations,
            "distinct": len(self._ps),
            "kappa_bound_mass": grid.top_mass,
            "preset": self.preset,
        }
        self._warn_edge(grid)

    @staticmethod
    def _warn_edge(grid: Any) -> None:
        other = grid.edge_mass - grid.top_edge
        if grid.top_mass > 1e-2 or other > 1e-4:
            where = (
                "at the upper bound of kappa (1e6): the data are consistent with complete "
                "pooling; the rates are unaffected but the posterior of kappa is truncated"
                if grid.top_mass > 1e-2
                else "on the edge of the integration grid (kappa in [1e-4, 1e6], logit mu in "
                "[-25, 25]); the result depends on these bounds"
            )
            warnings.warn(
                f"the posterior of (mu, kappa) has mass {max(grid.top_mass, other):.2g} {where}",
                PrecisionLimitedWarning,
                stacklevel=5,
            )

    # -- exact posterior summaries --------------------------------------------------------------
    def _components(
        self,
        u: np.ndarray,
        v: np.ndarray,
        idx: np.ndarray | None = None,
        eps: np.ndarray | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Conditional Beta components of theta for each (u, v) point and distinct pair.

        Returns a list of (weight, A, B) arrays of shape (G, J) (J = len(idx) when given).
        Robust model: ``eps`` gives the outlier share per point (G,); by default the fixed
        share, or with a prior on it the component weights averaged over its posterior nodes.
        """
        sel = slice(None) if idx is None else idx
        ps, pf, po = self._ps[sel], self._pf[sel], self._po[sel]
        kappa = np.exp(v)[:, None]
        if self.offsets is None:  # mu_k = mu: no (G, J) expit needed
            a = expit(u)[:, None] * kappa
            b = expit(-u)[:, None] * kappa
        else:
            a = expit(u[:, None] + po[None, :]) * kappa
            b = kappa - a
        A = a + ps[None, :]
        B = b + pf[None, :]
        if self.model != "robust":
            return [(np.ones((1, A.shape[1])), A, B)]
        a = np.broadcast_to(a, A.shape)
        b = np.broadcast_to(b, A.shape)
        l1 = betaln(A, B) - betaln(np.maximum(a, 1e-300), np.maximum(b, 1e-300))
        l0 = self._l0[sel][None, :]

        def main_prob(e: Any) -> np.ndarray:  # P(main component | u, v, eps, s)
            return expit((np.log1p(-e) + l1) - (np.log(e) + l0))

        if eps is not None:
            r = main_prob(np.asarray(eps, dtype=float).reshape(-1, 1))
        elif len(self._eps) == 1:
            r = main_prob(self._eps[0])
        else:
            pe = self._eps_posterior(u, v)
            r = sum(pe[:, [e]] * main_prob(val) for e, val in enumerate(self._eps))
        ones = np.ones_like(A)
        return [
            (r, A, B),
            (1.0 - r, ones + ps[None, :], ones + pf[None, :]),
        ]

    def posterior_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact posterior mean and variance of each ``theta_k`` (mixture over the grid).

        Returns
        -------
        mean : numpy.ndarray
            Posterior mean of each stratum, shape (K,).
        variance : numpy.ndarray
            Posterior variance of each stratum, shape (K,).

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([2, 5], [40, 50]))
        >>> m, v = fit.posterior_moments()
        >>> bool(np.all((m > 0) & (m < 1) & (v > 0)))
        True
        """
        if self._moments is None:
            m1, var = np.empty(len(self._ps)), np.empty(len(self._ps))
            for sub in self._pair_chunks():
                mix = self.mixture(sub)
                m1[sub], var[sub] = mix.mean(), mix.var()
            self._moments = (m1[self._inverse], var[self._inverse])
        return self._moments

    def _pair_chunks(self, budget: int = 2_000_000) -> Any:
        """Index arrays of distinct pairs, in chunks of about ``budget`` (points x pairs)."""
        J = len(self._ps)
        step = max(1, int(budget // max(len(self._quadrature()[2]), 1)))
        for i in range(0, J, step):
            yield np.arange(i, min(i + step, J))

    def mixture(self, idx: Any = None, points: Any = None) -> BetaMixture:
        """Posterior of ``theta`` of the distinct pairs ``idx`` as a Beta mixture over the grid.

        Parameters
        ----------
        idx : array-like of int, optional
            Distinct ``(successes, trials, offset)`` pairs (default: all).
        points : (u, v, weights), optional
            Grid points and their weights (default: the quadrature points).

        Returns
        -------
        bayeseval._kernels.mixture.BetaMixture
            Columns are the pairs; :meth:`stratum_mixture` has one column per stratum.
        """
        u, v, w = self._quadrature() if points is None else points
        sel = slice(None) if idx is None else np.asarray(idx)
        comps = self._components(u, v, None if idx is None else sel)
        r, A, B = comps[0]
        if len(comps) == 1:
            return BetaMixture(w, A, B)
        return BetaMixture(w, A, B, resp=r, a_wide=1.0 + self._ps[sel], b_wide=1.0 + self._pf[sel])

    def stratum_mixture(self) -> BetaMixture:
        """The posterior of every stratum's rate as a Beta mixture (one column per stratum).

        Returns
        -------
        bayeseval._kernels.mixture.BetaMixture
            Columns in the order of the strata.

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([2, 5, 2], [40, 50, 40]))
        >>> mix = fit.stratum_mixture()
        >>> bool(np.allclose(mix.mean(), fit.posterior_moments()[0]))
        True
        """
        return self.mixture().columns(self._inverse)

    def _check_pairs(self, limit: int = 200) -> np.ndarray:
        """Up to ``limit`` distinct pairs spread over the range of trials and successes."""
        J = len(self._ps)
        if J <= limit:
            return np.arange(J)
        order = np.lexsort((self._ps, self._pn))
        return np.unique(order[np.linspace(0, J - 1, limit).round().astype(int)])

    def _quadrature(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Grid points for exact moments and quantiles: every other point when as accurate.

        The grid is dense for sampling; for the smooth Beta mixtures a grid with twice the
        spacing is usually as accurate. It is used when the posterior means and sds of theta
        computed on it agree with the full grid to 1e-5 (checked on up to 200 distinct strata
        spread over the range of trials); otherwise the full grid is used. Points holding less
        than 1e-7 of the mass are dropped (moving a mean by at most 1e-7).
        """
        if getattr(self, "_quad", None) is not None:
            return self._quad
        full = self._grid.compact(_QUAD_TRIM[self.preset])
        self._quad = full
        if self.preset == "accurate":
            coarse = self._grid.every_other(1e-7)
            idx = self._check_pairs()
            fine_mix, coarse_mix = self.mixture(idx, full), self.mixture(idx, coarse)
            d_mean = np.max(np.abs(fine_mix.mean() - coarse_mix.mean()))
            d_sd = np.max(np.abs(np.sqrt(fine_mix.var()) - np.sqrt(coarse_mix.var())))
            if d_mean < 1e-5 and d_sd < 1e-5:
                self._quad = coarse
        self.diagnostics["quadrature_points"] = len(self._quad[2])
        return self._quad

    def cdf(self, x: Any) -> np.ndarray:
        """Exact posterior ``P(theta_k <= x)`` for each stratum (x scalar or per stratum).

        Parameters
        ----------
        x : float or array-like of float
            Threshold, one for all strata or one per stratum.

        Returns
        -------
        numpy.ndarray
            Posterior probability ``P(theta_k <= x_k)`` per stratum, shape (K,).

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([2, 5], [40, 50]))
        >>> p = fit.cdf(0.5)
        >>> bool(np.all(p > 0.99))
        True
        """
        x = np.broadcast_to(np.asarray(x, dtype=float), (len(self._s),))
        # evaluate per distinct (pair, x) combination (x may vary by stratum)
        uniq, inv, _ = unique_rows(self._inverse, x)
        pair = uniq[:, 0].astype(int)
        cdf = np.empty(len(pair))
        step = max(1, int(2_000_000 // max(len(self._quadrature()[2]), 1)))
        for i in range(0, len(pair), step):
            sl = slice(i, i + step)
            cdf[sl] = self.mixture(pair[sl]).cdf(uniq[sl, 1])
        return cdf[inv.ravel()]

    def quantiles(self, q: Any) -> np.ndarray:
        """Exact posterior quantiles of each ``theta_k`` (mixture of Betas over the grid).

        The mixture is the one used by :meth:`posterior_moments` (the quadrature grid points
        holding all but 1e-7 of the mass, :meth:`mixture`). For each distinct stratum and all
        requested probabilities at once (vectorised over strata), the solver
        (:meth:`bayeseval._kernels.mixture.BetaMixture.quantiles`) works on the logit scale,
        where each Beta component has a smooth log-concave density:

        1. start from the quantiles of a Beta with the exact mixture mean and variance;
        2. evaluate the mixture CDF exactly (``scipy.special.betainc``) at one anchor per
           stratum, the start of the median;
        3. carry the CDF from the anchor to the other starts by integrating the mixture
           density (15-point Gauss-Kronrod on the logit scale; where the 15-point and the
           embedded 7-point Gauss results differ by more than 1e-10, or the interval spans
           more than 8 sds of the narrowest component, the CDF is evaluated with ``betainc``
           instead);
        4. Halley steps on ``F(t) - q`` with the CDF updated by 4-point (2-point for tiny
           steps) Gauss-Legendre integrals of the density over each step (steps longer than
           half the narrowest component's logit-scale sd are integrated as in 3), stopping per
           stratum and probability when ``|F - q| < 1e-11``.

        The CDF is thus evaluated with ``betainc`` typically once per grid point and stratum
        (not once per iteration and probability); the result solves the exact mixture CDF to
        about 1e-9 in probability (``diagnostics["quantile_method"]``; measured accuracy:
        docs/validation.md, section 12b).

        Parameters
        ----------
        q : float or sequence of float
            Probabilities in (0, 1).

        Returns
        -------
        numpy.ndarray
            Quantiles of shape (len(q), K), or (K,) for a scalar ``q``.

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([2, 5], [40, 50]))
        >>> lo, hi = fit.quantiles([0.025, 0.975])
        >>> bool(np.all(lo < hi))
        True
        """
        scalar = np.ndim(q) == 0
        qs = np.atleast_1d(np.asarray(q, dtype=float))
        if qs.ndim != 1 or np.any(~((qs > 0) & (qs < 1))):
            raise ValueError(f"q must be strictly between 0 and 1, got {qs.tolist()}")
        out = np.empty((len(qs), len(self._ps)))
        for sub in self._pair_chunks():
            out[:, sub] = self.mixture(sub).quantiles(qs)
        self.diagnostics["quantile_method"] = "exact mixture"
        res = out[:, self._inverse]
        return res[0] if scalar else res

    # -- sampling -------------------------------------------------------------------------------
    def sample_hyper(self, draws: int, *, random_seed: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``(u, v)``: a grid cell by its mass, then uniform jitter within the cell.

        Parameters
        ----------
        draws : int
            Number of draws.
        random_seed : int, numpy.random.Generator or None, optional
            Seed or generator for ``numpy.random.default_rng``.

        Returns
        -------
        u : numpy.ndarray
            Draws of ``logit mu``, shape (draws,).
        v : numpy.ndarray
            Draws of ``log kappa``, shape (draws,).

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([2, 5], [40, 50]))
        >>> u, v = fit.sample_hyper(10, random_seed=0)
        >>> u.shape
        (10,)
        """
        rng = np.random.default_rng(random_seed)
        idx = rng.choice(self.weights.size, size=draws, p=self.weights)
        u = self.grid_u[idx] + (rng.random(draws) - 0.5) * self.du
        v = self.grid_v[idx] + (rng.random(draws) - 0.5) * self.dv
        # edge cells carry half weight (trapezoid rule) and cover the inner half-cell only:
        # reflect jitter that falls outside the grid back inside
        for x, g in ((u, self.grid_u), (v, self.grid_v)):
            lo, hi = g.min(), g.max()
            np.copyto(x, np.where(x < lo, 2 * lo - x, x))
            np.copyto(x, np.where(x > hi, 2 * hi - x, x))
        return u, v

    def sample_theta(
        self,
        u: np.ndarray,
        v: np.ndarray,
        eps: np.ndarray | None = None,
        *,
        random_seed: Any = None,
    ) -> np.ndarray:
        """Draw ``theta`` (len(u), K) exactly from its conditional given each ``(u, v)``.

        Robust model with a prior on the outlier share: pass the draws of ``eps`` (from
        :meth:`sample_outlier_prob`) so that all strata of one draw share it.

        Parameters
        ----------
        u, v : numpy.ndarray
            Draws of ``logit mu`` and ``log kappa`` (same length).
        eps : numpy.ndarray, optional
            Draws of the outlier share, one per ``(u, v)`` (robust model only).
        random_seed : int, numpy.random.Generator or None, optional
            Seed or generator for ``numpy.random.default_rng``.

        Returns
        -------
        numpy.ndarray
            Draws of every stratum's rate, shape (len(u), K).
        """
        rng = np.random.default_rng(random_seed)
        S = len(u)
        out = np.empty((S, len(self._ps)))
        chunk = max(1, int(4_000_000 // max(len(self._ps), 1)))
        for i in range(0, S, chunk):
            sl = slice(i, i + chunk)
            comps = self._components(u[sl], v[sl], eps=None if eps is None else eps[sl])
            r, A, B = comps[0]
            th = rng.beta(A, B)
            if len(comps) > 1:
                _, A0, B0 = comps[1]
                alt = rng.beta(A0, B0)
                th = np.where(rng.random(th.shape) < r, th, alt)
            out[sl] = th
        return out[:, self._inverse]

    def outlier_probability(self) -> np.ndarray:
        """Robust model: posterior probability that each stratum belongs to the wide component.

        Returns
        -------
        numpy.ndarray
            Probability per stratum, shape (K,) (zeros for the plain beta-binomial model).
        """
        if self.model != "robust":
            return np.zeros(len(self._s))
        out = np.empty(len(self._ps))
        for sub in self._pair_chunks():
            out[sub] = self.mixture(sub).outlier_probability()
        return out[self._inverse]

    def predictive_nodes(self, strata: Any = None) -> Nodes:
        """Population Beta parameters and each stratum's own log likelihood at every grid point.

        The input of the leave-one-out mixed predictive check
        (:func:`bayeseval._kernels.ppc.loo_mixed_check`), with the grid's log masses (finite
        where the masses underflow to 0), its open edges, and a ``refit`` that integrates a
        stratum's leave-one-out posterior on a grid of its own (:meth:`loo_mixture`). The
        robust model with a prior on the outlier share uses its prior mean.

        Parameters
        ----------
        strata : array-like of int, optional
            Positions of the strata to include (default: all).

        Returns
        -------
        bayeseval._kernels.ppc.Nodes
            Grid weights, population Beta parameters and log likelihoods (grid points x strata).
        """
        pos = np.arange(len(self._s)) if strata is None else np.asarray(strata, dtype=int)
        pairs = self._inverse[pos]
        a, b = self._population(self.grid_u, self.grid_v, self._po[pairs])
        ll = betaln(a + self._ps[pairs], b + self._pf[pairs]) - betaln(a, b)
        eps = 0.0
        if self.model == "robust":
            eps = float(self._eps.mean())
            ll = np.logaddexp(np.log1p(-eps) + ll, np.log(eps) + self._l0[pairs][None, :])
        return Nodes(
            self.weights,
            a,
            b,
            ll,
            eps,
            log_weights=self.log_weights,
            open_edge=self._grid.open_edge,
            refit=lambda j: self.loo_mixture(int(pos[j])),
        )

    @staticmethod
    def _population(u: np.ndarray, v: np.ndarray, offsets: np.ndarray) -> tuple:
        """Population Beta parameters ``(a, b)`` at points ``(u, v)`` (rows) per offset (columns)."""
        kappa = np.exp(v)[:, None]
        a = np.maximum(expit(u[:, None] + offsets[None, :]) * kappa, 1e-300)
        return a, np.maximum(kappa - a, 1e-300)

    def loo_mixture(self, position: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The population's Beta mixture for a stratum, from the posterior without its count.

        The posterior of ``(logit mu, log kappa)`` given every other stratum is integrated on
        a grid of its own (same prior, model and preset), so it is exact where leaving the
        stratum out moves the posterior off this fit's grid.

        Parameters
        ----------
        position : int
            Position of the stratum.

        Returns
        -------
        weights, a, b : numpy.ndarray
            Mass of each point of the new grid and the stratum's population Beta
            parameters there.

        Examples
        --------
        >>> fit = ExactFit(Counts.from_arrays([5, 6, 4, 40], [50, 50, 50, 50]))
        >>> w, a, b = fit.loo_mixture(3)  # the population mean without the fourth stratum
        >>> round(float(w @ (a / (a + b))), 2)
        0.12
        """
        pair = self._inverse[int(position)]
        other = copy.copy(self)
        other._pm = self._pm.copy()
        other._pm[pair] -= 1.0
        if self._fast:
            other._tabs = [other._table(other._ps), other._table(other._pf), other._table(other._pn)]
        rest = self._pm @ self._ps - self._ps[pair], self._pm @ self._pn - self._pn[pair]
        grid = integrate(
            other.log_posterior,
            (U_BOUNDS, V_BOUNDS),
            preset=self.preset,
            grid_size=self.grid_size,
            start_u=float(logit((rest[0] + 0.5) / (rest[1] + 1.0))),
        )
        a, b = self._population(grid.u, grid.v, self._po[[pair]])
        return grid.weights, a[:, 0], b[:, 0]

    def hyper_moments(self) -> dict[str, float]:
        """Posterior means of mu and kappa from the grid (exact up to the grid).

        Returns
        -------
        dict of str to float
            Posterior means of ``mu``, ``kappa``, ``logit_mu`` and ``log_kappa``.
        """
        mu = expit(self.grid_u)
        kappa = np.exp(self.grid_v)
        return {
            "mu": float(self.weights @ mu),
            "kappa": float(self.weights @ kappa),
            "logit_mu": float(self.weights @ self.grid_u),
            "log_kappa": float(self.weights @ self.grid_v),
        }


def fit_exact(
    counts: Counts,
    *,
    model: str = "beta_binomial",
    prior: Any = "default",
    prior_mean: Any = None,
    draws: int = 4000,
    random_seed: Any = None,
    grid_size: int | None = None,
    outlier_prob: Any = 0.1,
    preset: str = "accurate",
) -> Posterior:
    """Fit the hierarchical Beta-binomial (or robust) model with the exact grid engine.

    Parameters
    ----------
    counts : Counts
        Successes and trials per stratum.
    model : {"beta_binomial", "robust"}
        The population model (see :mod:`bayeseval.models.robust` for ``"robust"``).
    prior : {"default", "bda"}, dict or Prior
        Prior on ``(mu, kappa)`` (see :mod:`bayeseval.models.priors`).
    prior_mean : array-like, dict or Series, optional
        Per-stratum prior guesses of the rate; become logit offsets of the population mean.
    draws : int
        Number of posterior draws.
    random_seed : int or numpy Generator, optional
        Seed for ``numpy.random.default_rng``.
    grid_size : int, optional
        Points per axis of the final grid (default: 48 for the accurate preset, 20 for fast).
    outlier_prob : float or scipy.stats frozen distribution
        Robust model only: prior probability ``eps`` that a stratum is an outlier, fixed
        (default 0.1), or a prior on it (e.g. ``scipy.stats.beta(1, 9)``), integrated on an
        8-node equal-mass quadrature of that prior.
    preset : {"accurate", "fast"}
        Resolution of the grid over ``(logit mu, log kappa)`` (see the module docstring).

    Returns
    -------
    Posterior
        ``theta`` draws are generated lazily on first use; ``posterior.exact`` holds the
        :class:`ExactFit` for exact moments and quantiles.

    Examples
    --------
    >>> post = fit_exact(Counts.from_arrays([2, 5, 9], [40, 50, 60]), random_seed=0, draws=1000)
    >>> post.engine, post.n_draws
    ('exact', 1000)
    """
    draws = check_positive_int(draws, "draws")
    fit = ExactFit(
        counts,
        prior=prior,
        model=model,
        prior_mean=prior_mean,
        grid_size=grid_size,
        outlier_prob=outlier_prob,
        preset=preset,
    )
    rng = np.random.default_rng(random_seed)
    u, v = fit.sample_hyper(draws, random_seed=rng)
    hyper = {"mu": expit(u), "kappa": np.exp(v)}
    eps = None
    if model == "robust" and len(fit._eps) > 1:
        eps = fit.sample_outlier_prob(u, v, random_seed=rng)
        hyper["outlier_prob"] = eps
    theta_rng = np.random.default_rng(rng.integers(2**63))

    def theta() -> np.ndarray:
        return fit.sample_theta(u, v, eps, random_seed=theta_rng)

    diagnostics = dict(fit.diagnostics)
    if fit.offsets is not None:
        diagnostics["offsets"] = fit.offsets
    if model == "robust":
        diagnostics["outlier_prob"] = fit.outlier_prob if len(fit._eps) == 1 else float(fit.outlier_prob.mean())
    return Posterior(
        theta=theta,
        counts=counts,
        hyper=hyper,
        engine="exact",
        model=model,
        prior=fit.prior,
        diagnostics=diagnostics,
        exact=fit,
    )
