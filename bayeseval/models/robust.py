r"""Robust pooling: a population that lets outlying strata stand apart.

Definition (both engines implement exactly this model)
-------------------------------------------------------
Each stratum's rate comes from a two-component mixture population:

.. math::

    \theta_k \sim (1 - \varepsilon)\,\mathrm{Beta}(\mu\kappa, (1 - \mu)\kappa)
                  + \varepsilon\,\mathrm{Beta}(1, 1), \qquad
    s_k \mid \theta_k \sim \mathrm{Bin}(n_k, \theta_k),

with ``eps = outlier_prob`` fixed (default 0.1; the exact engine also accepts a prior on
``eps``, integrated on an 8-node equal-mass quadrature), the same prior on ``(mu, kappa)`` as the plain
Beta-binomial model (``prior="default"``, ``"bda"`` or a dict; see
:mod:`bayeseval.models.priors`), and, with ``prior_mean``, ``mu`` replaced by
``mu_k = expit(logit(mu) + o_k)`` in the main component only.

Integrating ``theta_k`` out, the likelihood of one stratum is a mixture of two Beta-binomial
terms (``C(n, s)`` is the binomial coefficient, ``B`` the Beta function):

.. math::

    p(s_k \mid \mu, \kappa) = (1 - \varepsilon)\,\binom{n_k}{s_k}
        \frac{B(\mu\kappa + s_k, (1 - \mu)\kappa + n_k - s_k)}{B(\mu\kappa, (1 - \mu)\kappa)}
        + \varepsilon\,\frac{1}{n_k + 1},

since ``C(n, s) B(1 + s, 1 + n - s) = 1 / (n + 1)``. In PyMC this is
``pm.Mixture(w=[1 - eps, eps], comp_dists=[pm.BetaBinomial.dist(alpha=mu*kappa,
beta=(1-mu)*kappa, n=n), pm.BetaBinomial.dist(alpha=1, beta=1, n=n)], observed=s)`` (or the
per-stratum latent-``theta`` form with ``pm.Mixture`` of two Beta distributions), with
``theta`` recovered as below. :func:`robust_logpmf` evaluates this density so the engines can
be checked against each other.

Given ``(mu, kappa)`` the posterior of ``theta_k`` is again a two-component mixture:
``Beta(mu kappa + s_k, (1 - mu) kappa + n_k - s_k)`` with probability ``r_k`` and
``Beta(1 + s_k, 1 + n_k - s_k)`` with probability ``1 - r_k``, where
``r_k = (1 - eps) BB_k / ((1 - eps) BB_k + eps / (n_k + 1))`` and ``BB_k`` is the first
Beta-binomial term above. ``1 - E[r_k]`` is the posterior probability that stratum k is an
outlier.

Why it helps: with one Beta population a single outlying stratum (0.35 among strata near 0.10)
must be explained by a wide population, so ``kappa`` drops and pooling vanishes for everyone.
Under the mixture the outlier is absorbed by the wide ``Beta(1, 1)`` component, ``kappa`` stays
large and the other strata keep their strong pooling.

The exact engine integrates ``(logit mu, log kappa)`` on the same adaptive grid as the plain
model (the likelihood is a mixture per stratum, so strata are collapsed by distinct
``(s_k, n_k)`` pairs only) and draws ``theta`` exactly from the conditional mixture:
a fast deterministic approximation (INLA-style low-dimensional numerical integration; "exact"
up to the grid) that refits in milliseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import betaln, gammaln

from bayeseval.counts.counts import Counts, as_counts
from bayeseval.models.posterior import Posterior

__all__ = ["fit_robust", "robust_logpmf", "DEFAULT_OUTLIER_PROB"]

#: Default prior probability that a stratum belongs to the wide outlier component.
DEFAULT_OUTLIER_PROB = 0.1


def robust_logpmf(
    successes: Any, trials: Any, mu: Any, kappa: Any, outlier_prob: float = DEFAULT_OUTLIER_PROB
) -> np.ndarray:
    r"""Log probability of ``s`` successes under the robust population, ``theta`` integrated out.

    ``log[(1 - eps) BetaBinom(s | n, mu kappa, (1 - mu) kappa) + eps / (n + 1)]``.

    Parameters
    ----------
    successes, trials : array-like
        Counts (broadcast together with ``mu`` and ``kappa``).
    mu, kappa : array-like
        Population mean and concentration of the main component.
    outlier_prob : float
        ``eps``.

    Returns
    -------
    numpy.ndarray
        Log probabilities, with the broadcast shape of the inputs.

    Examples
    --------
    >>> from scipy import stats
    >>> ref = stats.betabinom.logpmf(3, 20, 5, 45)
    >>> bool(abs(robust_logpmf(3, 20, 0.1, 50.0, outlier_prob=0.0) - ref) < 1e-12)
    True
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    mu = np.asarray(mu, dtype=float)
    kappa = np.asarray(kappa, dtype=float)
    eps = float(outlier_prob)
    a = mu * kappa
    b = (1.0 - mu) * kappa
    log_choose = gammaln(n + 1) - gammaln(s + 1) - gammaln(n - s + 1)
    main = log_choose + betaln(a + s, b + n - s) - betaln(a, b)
    wide = -np.log(n + 1.0)
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log1p(-eps) + main, np.log(eps) + wide)


def fit_robust(
    successes: Any,
    trials: Any = None,
    *,
    strata: Any = None,
    prior: Any = "default",
    prior_mean: Any = None,
    outlier_prob: Any = DEFAULT_OUTLIER_PROB,
    draws: int = 4000,
    random_seed: Any = None,
    grid_size: int = 48,
) -> Posterior:
    """Fit the robust (two-component) population with the exact grid engine.

    Same as ``fit_hierarchical(..., model="robust", engine="exact")``.

    Parameters
    ----------
    successes, trials, strata
        Counts per stratum, or a Counts as ``successes``.
    prior, prior_mean
        As in :func:`bayeseval.models.fit_hierarchical`.
    outlier_prob : float or scipy.stats frozen distribution
        Prior probability ``eps`` that a stratum is an outlier (default 0.1), or a prior on
        it such as ``scipy.stats.beta(1, 9)`` (integrated on an 8-node equal-mass quadrature
        of the prior; the draws of ``eps`` are then in ``posterior.draws("outlier_prob")``).
    draws, random_seed, grid_size
        Number of draws, seed, grid points per axis.

    Returns
    -------
    Posterior
        ``posterior.outlier_probability()`` gives each stratum's posterior probability of
        belonging to the wide component.

    Examples
    --------
    >>> post = fit_robust([3, 4, 5, 14], [40, 40, 40, 40], random_seed=0, draws=1000)
    >>> p_out = post.outlier_probability()
    >>> bool(p_out.iloc[3] > p_out.iloc[0])
    True
    """
    from bayeseval.models.exact import fit_exact

    counts = successes if isinstance(successes, Counts) else as_counts(successes, trials, strata=strata)
    return fit_exact(
        counts,
        model="robust",
        prior=prior,
        prior_mean=prior_mean,
        draws=draws,
        random_seed=random_seed,
        grid_size=grid_size,
        outlier_prob=outlier_prob,
    )
