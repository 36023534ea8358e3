"""Calibration of the intervals: frequentist coverage on simulated configurations
(:func:`calibration_study`) and rank uniformity of the exact engine
(:func:`simulation_based_calibration`).

References
----------
Talts, S., Betancourt, M., Simpson, D., Vehtari, A. & Gelman, A. (2018). Validating Bayesian
inference algorithms with simulation-based calibration. arXiv:1804.06788.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_int,
    make_rng,
)
from bayeseval._api.warnings import PrecisionLimitedWarning

__all__ = [
    "calibration_study",
    "SBCResult",
    "simulation_based_calibration",
]

_CONFIGURATIONS = ("exchangeable", "outlier", "unequal_sizes")
_INTERVAL_METHODS = ("hierarchical", "wilson", "jeffreys", "clopper_pearson", "wald")
#: also accepted by calibration_study (not run by default): the per-stratum adaptive
#: interval and the interval ``Posterior.summary(read=True)["read"]`` points to
_STUDY_METHODS = (*_INTERVAL_METHODS, "adaptive", "read")


# --------------------------------------------------------------------------- calibration


def _config_rates(
    name: str, n_strata: int, trials: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True rates, trials and an outlier mask for one simulated data set."""
    theta = rng.beta(6.0, 54.0, size=n_strata)  # mean 0.10, sd about 0.04
    n = np.full(n_strata, trials, dtype=np.int64)
    out = np.zeros(n_strata, dtype=bool)
    if name == "outlier":
        theta[-1] = 0.35
        out[-1] = True
    elif name == "unequal_sizes":
        n = np.unique(np.geomspace(5, 20 * trials, n_strata).round().astype(np.int64))
        n = np.resize(n, n_strata)
    return theta, n, out


def calibration_study(
    configurations: Sequence[str] = _CONFIGURATIONS,
    *,
    n_strata: int = 12,
    trials: int = 40,
    n_repeats: int = 200,
    level: float = 0.95,
    methods: Sequence[str] = _INTERVAL_METHODS,
    random_seed: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    r"""Frequentist coverage and mean width of hierarchical and classical intervals.

    For each configuration, ``n_repeats`` data sets are simulated: true rates
    :math:`\theta_k \sim \mathrm{Beta}(6, 54)` (mean 0.10), :math:`s_k \sim
    \mathrm{Bin}(n_k, \theta_k)`:

    * ``exchangeable``: ``n_strata`` strata of ``trials`` rows each;
    * ``outlier``: the same with the last stratum's rate set to 0.35;
    * ``unequal_sizes``: trials spread geometrically from 5 to ``20 * trials``.

    Each data set is fit with the exact engine (equal-tailed credible intervals) and the
    classical intervals of :func:`bayeseval.estimate.intervals.proportion_ci` are computed per
    stratum. Coverage is the share of (data set, stratum) pairs whose interval contains the
    true rate. For ``outlier`` an extra configuration ``"outlier (outlying stratum)"``
    reports the outlying stratum alone.

    Parameters
    ----------
    configurations : sequence of str
        Among ``"exchangeable"``, ``"outlier"``, ``"unequal_sizes"``.
    n_strata : int
        Strata per data set.
    trials : int
        Trials per stratum (the scale of the sizes for ``unequal_sizes``).
    n_repeats : int
        Simulated data sets per configuration.
    level : float
        Interval level (0.95 = 95%).
    methods : sequence of str
        Among ``"hierarchical"``, ``"wilson"``, ``"jeffreys"``, ``"clopper_pearson"``,
        ``"wald"`` (the default runs these five), ``"adaptive"`` (the per-stratum adaptive
        interval, ``proportion_ci(..., method="adaptive")``) and ``"read"`` (the interval
        ``Posterior.summary(read=True)["read"]`` points to: pooled, or adaptive for a stratum not
        clearly typical of the others).
    random_seed : int or numpy Generator, optional
        Seed of the simulated data sets and of the hierarchical fits.

    Returns
    -------
    pandas.DataFrame
        Columns ``configuration, method, coverage, mean_width, mc_se`` (Monte Carlo standard
        error of the coverage, treating the intervals as independent).

    Examples
    --------
    >>> t = calibration_study(("exchangeable",), n_repeats=20, methods=("wilson",),
    ...                       random_seed=0)
    >>> t[["configuration", "method"]].values.tolist()
    [['exchangeable', 'wilson']]
    """
    from bayeseval.estimate.intervals import proportion_ci
    from bayeseval.models import fit_hierarchical

    if isinstance(configurations, str):
        configurations = (configurations,)
    configurations = [check_method(c, _CONFIGURATIONS, "configurations") for c in configurations]
    if isinstance(methods, str):
        methods = (methods,)
    methods = [check_method(m, _STUDY_METHODS, "methods") for m in methods]
    n_strata = check_positive_int(n_strata, "n_strata", minimum=2)
    trials = check_positive_int(trials, "trials")
    n_repeats = check_positive_int(n_repeats, "n_repeats")
    level = check_level(level)
    rng = make_rng(random_seed)
    rows = []
    for config in configurations:
        hits = {m: [] for m in methods}
        widths = {m: [] for m in methods}
        outlier_mask = []
        for _ in range(n_repeats):
            theta, n, out = _config_rates(config, n_strata, trials, rng)
            s = rng.binomial(n, theta)
            for m in methods:
                if m in ("hierarchical", "read"):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PrecisionLimitedWarning)
                        post = fit_hierarchical(s, n, draws=400, random_seed=int(rng.integers(2**31 - 1)))
                    summ = post.summary(level=level, read=m != "hierarchical")
                    ends = ("lower", "upper") if m == "hierarchical" else ("read_lower", "read_upper")
                    lo, hi = summ[ends[0]].to_numpy(), summ[ends[1]].to_numpy()
                else:
                    lo, hi = proportion_ci(s, n, level=level, method=m)
                    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
                hits[m].append((lo <= theta) & (theta <= hi))
                widths[m].append(hi - lo)
            outlier_mask.append(out)
        mask = np.concatenate(outlier_mask)
        subsets = [(config, np.ones_like(mask))]
        if mask.any():
            subsets.append((f"{config} (outlying stratum)", mask))
        for label, sel in subsets:
            for m in methods:
                h = np.concatenate(hits[m])[sel]
                w = np.concatenate(widths[m])[sel]
                cov = float(h.mean())
                rows.append(
                    {
                        "configuration": label,
                        "method": m,
                        "coverage": cov,
                        "mean_width": float(w.mean()),
                        "mc_se": float(np.sqrt(cov * (1 - cov) / h.size)),
                    }
                )
    return pd.DataFrame(rows, columns=["configuration", "method", "coverage", "mean_width", "mc_se"])


@dataclass(frozen=True, repr=False)
class SBCResult(Result):
    """Result of :func:`simulation_based_calibration`.

    Parameters
    ----------
    ranks : pandas.DataFrame
        One row per replication: the rank of the true ``mu``, ``kappa`` and ``theta[0]``
        among the posterior draws (0 to ``draws``).
    table : pandas.DataFrame
        Per parameter: ``parameter``, ``chi2``, ``p_value`` (chi-square test of uniform rank
        histograms over ``bins`` bins).
    """

    ranks: pd.DataFrame
    table: pd.DataFrame

    title = "Simulation-based calibration (rank uniformity)"


def simulation_based_calibration(
    *,
    trials: Sequence[int] = (10, 25, 40, 60, 15, 80),
    n_repeats: int = 200,
    draws: int = 99,
    bins: int = 10,
    prior: Any = "default",
    fit_prior: Any = None,
    random_seed: int | np.random.Generator | None = None,
) -> SBCResult:
    r"""Simulation-based calibration of the exact engine (Talts et al. 2018).

    Each replication draws :math:`(\mu, \kappa)` from ``prior``, rates
    :math:`\theta_k \sim \mathrm{Beta}(\mu\kappa, (1-\mu)\kappa)` and counts
    :math:`s_k \sim \mathrm{Bin}(n_k, \theta_k)`, fits the exact engine with ``fit_prior``
    (default: the same prior) and records the rank of each true value among ``draws``
    posterior draws. With a correct engine and the same prior the ranks are uniform on
    ``0..draws``; a chi-square test over ``bins`` bins measures it. Passing a different
    ``fit_prior`` shows what a miscalibrated posterior looks like.

    Parameters
    ----------
    trials : sequence of int
        Trials of each simulated stratum.
    n_repeats : int
        Replications.
    draws : int
        Posterior draws per fit (ranks range over ``0..draws``); ``draws + 1`` should be
        a multiple of ``bins``.
    bins : int
        Histogram bins of the chi-square test.
    prior : {"default"}, dict or Prior
        A proper prior to simulate from.
    fit_prior : optional
        Prior of the fits; defaults to ``prior``.
    random_seed : int or numpy Generator, optional
        Seed of the simulations and of the fits.

    Returns
    -------
    SBCResult
        Rank of each true value per replication and the chi-square uniformity test per
        parameter.

    Examples
    --------
    >>> res = simulation_based_calibration(n_repeats=30, random_seed=0)
    >>> res.table["parameter"].tolist()
    ['mu', 'kappa', 'theta[0]']
    """
    from bayeseval.models import fit_hierarchical
    from bayeseval.models.priors import resolve_prior

    n = np.asarray(trials, dtype=np.int64)
    if n.ndim != 1 or n.size < 2 or np.any(n < 1):
        raise ValueError(f"trials must list at least two positive counts, got {trials!r}")
    n_repeats = check_positive_int(n_repeats, "n_repeats", minimum=2)
    draws = check_positive_int(draws, "draws")
    bins = check_positive_int(bins, "bins", minimum=2)
    sim_prior = resolve_prior(prior)
    fit_with = sim_prior if fit_prior is None else fit_prior
    rng = make_rng(random_seed)
    ranks = np.empty((n_repeats, 3), dtype=np.int64)
    for r in range(n_repeats):
        mu, kappa = (float(x[0]) for x in sim_prior.sample(1, random_seed=rng))
        theta = rng.beta(max(mu * kappa, 1e-12), max((1 - mu) * kappa, 1e-12), size=n.size)
        s = rng.binomial(n, theta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrecisionLimitedWarning)
            post = fit_hierarchical(s, n, prior=fit_with, draws=draws, random_seed=int(rng.integers(2**31 - 1)))
        ranks[r] = (
            np.sum(post.draws("mu") < mu),
            np.sum(post.draws("kappa") < kappa),
            np.sum(post.theta[:, 0] < theta[0]),
        )
    frame = pd.DataFrame(ranks, columns=["mu", "kappa", "theta[0]"])
    rows = []
    for col in frame.columns:
        hist = np.bincount(frame[col].to_numpy() * bins // (draws + 1), minlength=bins)
        res = stats.chisquare(hist)
        rows.append({"parameter": col, "chi2": float(res.statistic), "p_value": float(res.pvalue)})
    return SBCResult(ranks=frame, table=pd.DataFrame(rows))
