"""Checks of a hierarchical model against the data and the frequentist estimators.

* :func:`posterior_predictive_check`: replicated counts per stratum and for global statistics
  (between-stratum dispersion, minimum and maximum stratum rate), predictive p-values, and
  the strata whose observed count is extreme under the model.
* :func:`compare_frequentist`: per stratum, the raw rate with Wilson and Clopper-Pearson
  intervals beside the posterior mean and credible interval, with the reason when they
  disagree; the same for the weighted overall rate.
* :func:`compare_pooling`: complete, no and partial pooling compared by PSIS-LOO (ArviZ).
* :func:`calibration_study` and :func:`simulation_based_calibration`: frequentist coverage of
  the interval types on simulated configurations, and rank uniformity of the exact engine.

References
----------
Gelman, A., Meng, X.-L. & Stern, H. (1996). Posterior predictive assessment of model fitness
via realized discrepancies. Statistica Sinica 6, 733-807.

Marshall, E. C. & Spiegelhalter, D. J. (2007). Identifying outliers in Bayesian hierarchical
models: a simulation-based approach. Bayesian Analysis 2, 409-444.

Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation using
leave-one-out cross-validation and WAIC. Statistics and Computing 27, 1413-1432.

Talts, S., Betancourt, M., Simpson, D., Vehtari, A. & Gelman, A. (2018). Validating Bayesian
inference algorithms with simulation-based calibration. arXiv:1804.06788.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import betaln, expit, logit

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_int,
    make_rng,
)
from bayeseval._api.warnings import ModelCheckWarning, PrecisionLimitedWarning
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, read_choice
from bayeseval._kernels.ppc import Nodes, bonferroni_flags, loo_mixed_check, mid_p
from bayeseval.counts.counts import Counts, as_counts

__all__ = [
    "ConflictResult",
    "conflict_check",
    "PPCResult",
    "PoolingComparison",
    "SBCResult",
    "posterior_predictive_check",
    "compare_frequentist",
    "compare_pooling",
    "calibration_study",
    "simulation_based_calibration",
]

_STATISTICS = ("dispersion", "min", "max")
_CONFIGURATIONS = ("exchangeable", "outlier", "unequal_sizes")
_INTERVAL_METHODS = ("hierarchical", "wilson", "jeffreys", "clopper_pearson", "wald")
#: also accepted by calibration_study (not run by default): the per-stratum adaptive
#: interval and the interval ``Posterior.summary()["read"]`` points to
_STUDY_METHODS = (*_INTERVAL_METHODS, "adaptive", "read")


# --------------------------------------------------------------------------------- helpers


def _population_theta(
    posterior: Any, rng: np.random.Generator, draws: int | None = None
) -> np.ndarray | None:
    """Rates of fresh strata drawn from the fitted population, one per draw and stratum.

    Beta-binomial (and robust): ``Beta(mu_k kappa, (1 - mu_k) kappa)`` with the prior-mean
    offsets, and with probability ``outlier_prob`` a Uniform(0, 1) rate for the robust
    model. Logit-normal without covariates: ``expit(intercept + sigma z)``. None otherwise.
    ``draws``: the first this many posterior draws only (default all).
    """
    hyper = {k: np.asarray(v)[:draws] for k, v in posterior.hyper.items()}
    K = len(posterior.counts)
    offsets = posterior.diagnostics.get("offsets")
    if "mu" in hyper and "kappa" in hyper:
        mu, kappa = hyper["mu"], hyper["kappa"]
        S = mu.size
        lm = logit(np.clip(mu, 1e-12, 1 - 1e-12))[:, None]
        if offsets is not None:
            lm = lm + np.asarray(offsets, dtype=float)[None, :]
        mu_k = expit(lm)  # (S, 1) without offsets: the draws broadcast it (same stream)
        a = np.maximum(mu_k * kappa[:, None], 1e-300)
        b = np.maximum((1.0 - mu_k) * kappa[:, None], 1e-300)
        theta = rng.beta(a, b, size=(S, K))
        if posterior.model == "robust":
            eps = float(posterior.diagnostics.get("outlier_prob", 0.1))
            wide = rng.uniform(size=(S, K)) < eps
            theta = np.where(wide, rng.uniform(size=(S, K)), theta)
        return theta
    if "intercept" in hyper and "sigma" in hyper and not any(k.startswith("coef_") for k in hyper):
        S = hyper["intercept"].size
        eta = hyper["intercept"][:, None] + hyper["sigma"][:, None] * rng.standard_normal((S, K))
        return expit(eta)
    return None


#: the Monte Carlo replicates of the predictive check use at most this many draws x strata
#: (and at least _MIN_REPS draws): all 4,000 default draws up to 2,000 strata
_REP_CELLS = 8_000_000
_MIN_REPS = 400


def _n_reps(draws: int, strata: int) -> int:
    """Replicate draws of the predictive check for ``strata`` strata (at most ``draws``)."""
    return int(min(draws, max(_MIN_REPS, _REP_CELLS // max(strata, 1))))


def _posterior_rows(posterior: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of every stratum's rate for the first ``draws`` hyperparameter draws.

    The posterior's own ``theta`` rows when it holds them already (or all draws are
    wanted); otherwise, with the exact engine, fresh draws from the exact conditional of
    ``theta`` given those hyperparameter draws, so the other draws are never sampled.
    """
    exact = getattr(posterior, "exact", None)
    hyper = posterior.hyper
    if draws >= posterior.n_draws or getattr(posterior, "_theta", None) is not None \
            or not hasattr(exact, "sample_theta") or not {"mu", "kappa"} <= set(hyper):
        return posterior.theta[:draws]
    u = logit(np.clip(hyper["mu"][:draws], 1e-300, 1.0))
    eps = hyper.get("outlier_prob")
    return exact.sample_theta(u, np.log(hyper["kappa"][:draws]),
                              None if eps is None else eps[:draws], random_seed=rng)


def _column_quantiles(rep: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower ``alpha / 2`` and upper ``1 - alpha / 2`` quantiles of each column, in blocks."""
    step = max(1, 1_000_000 // max(rep.shape[0], 1))
    blocks = [rep[:, i : i + step] for i in range(0, rep.shape[1], step)]
    lo = np.concatenate([np.quantile(b, alpha / 2, axis=0, method="lower") for b in blocks])
    hi = np.concatenate([np.quantile(b, 1 - alpha / 2, axis=0, method="higher") for b in blocks])
    return lo, hi


def _dispersion(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Pearson chi-square of stratum rates about the pooled rate, per row of ``s``."""
    s_all = np.atleast_2d(s)
    out = np.empty(s_all.shape[0])
    step = max(1, 1_000_000 // max(s_all.shape[1], 1))  # rows per block
    for i in range(0, s_all.shape[0], step):
        s = s_all[i : i + step].astype(float)
        p = s.sum(axis=1, keepdims=True) / n.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            x2 = (s - n * p) ** 2 / (n * p * (1.0 - p))
        out[i : i + step] = np.where(np.isfinite(x2), x2, 0.0).sum(axis=1)
    return out


def _global_statistic(name: str, s: np.ndarray, n: np.ndarray, rates: dict | None = None) -> np.ndarray:
    """The statistic ``name`` per row of ``s``; ``rates``: a dict keeping ``s / n`` for the
    next statistic of the same counts."""
    if name == "dispersion":
        return _dispersion(s, n)
    r = None if rates is None else rates.get("rates")
    if r is None:
        r = np.atleast_2d(s) / n
        if rates is not None:
            rates["rates"] = r
    return r.min(axis=1) if name == "min" else r.max(axis=1)


def _loo_nodes(posterior: Any, strata: np.ndarray) -> Nodes | None:
    """Hyperparameter nodes for the leave-one-out check of ``strata`` (positions).

    The exact engine's grid when available, else the posterior draws of ``(mu, kappa)``
    (equal weights); None for models without a Beta population.
    """
    if getattr(posterior, "exact", None) is not None:
        return posterior.exact.predictive_nodes(strata)
    hyper = posterior.hyper
    if posterior.model not in ("beta_binomial", "robust") or not {"mu", "kappa"} <= set(hyper):
        return None
    s = posterior.counts.successes.to_numpy()[strata].astype(float)
    f = posterior.counts.trials.to_numpy()[strata] - s
    lm = logit(np.clip(hyper["mu"], 1e-12, 1 - 1e-12))[:, None]
    offsets = posterior.diagnostics.get("offsets")
    if offsets is not None:
        lm = lm + np.asarray(offsets, dtype=float)[strata][None, :]
    kappa = hyper["kappa"][:, None]
    a = np.maximum(expit(lm) * kappa, 1e-300)
    b = np.maximum(kappa - a, 1e-300)
    ll = betaln(a + s, b + f) - betaln(a, b)
    eps = 0.0
    if posterior.model == "robust":
        eps = float(posterior.diagnostics.get("outlier_prob", 0.1))
        ll = np.logaddexp(np.log1p(-eps) + ll, np.log(eps) + betaln(1.0 + s, 1.0 + f))
    return Nodes(np.full(kappa.shape[0], 1.0 / kappa.shape[0]), a, b, ll, eps)


# ------------------------------------------------------------------- per-stratum conflict


@dataclass(frozen=True, repr=False)
class ConflictResult(Result):
    """Result of :func:`conflict_check`.

    Attributes
    ----------
    table : pandas.DataFrame
        Per stratum: ``successes``, ``trials``, ``expected`` (leave-one-out predictive mean
        count), ``p_value`` (two-sided mid-p of the count under its leave-one-out
        predictive), ``direction`` (``"high"``/``"low"``: the count's side of the
        predictive), ``flag``, ``read`` (``"pooled"`` or ``"adaptive"``: which interval to
        read for the stratum, as in :meth:`bayeseval.models.Posterior.summary`: adaptive
        when flagged or when the p-value is at most 0.20) and ``reason``.
    level : float
        ``1 - level`` is the error rate of the flag rule.
    control : str
        ``"holm"`` (per-dataset error rate) or ``"per_stratum"``.
    """

    frame: pd.DataFrame
    level: float = 0.95
    control: str = "holm"
    title = "Conflict check"

    @property
    def table(self) -> pd.DataFrame:
        """Per-stratum table (see the class docstring)."""
        return self.frame

    @property
    def flagged(self) -> list:
        """Labels of the flagged strata."""
        return list(self.frame.index[self.frame["flag"].to_numpy(bool)])


def conflict_check(
    data: Any,
    trials: Any = None,
    *,
    level: float = 0.95,
    control: str = "holm",
) -> ConflictResult:
    r"""Per-stratum conflict check: each stratum's count against what the others predict.

    For stratum :math:`k` the reference is the posterior predictive distribution of its
    count under the Beta-binomial hierarchical model fitted to the *other* strata only
    (a mixture of Beta-binomials over a grid of the hyperparameters, BDA3 hyperprior), so
    an outlier cannot pull its own reference toward itself. The two-sided mid-p value of
    the count is exact (no simulation). A flagged stratum's pooled interval is not
    supported by its own data: read its adaptive interval instead (``read`` column, also
    ``"adaptive"`` for an unflagged stratum whose p-value is at most 0.20, the default of
    :func:`bayeseval.models.posterior.which_interval`; ``proportion_ci(...,
    method="adaptive")`` gives the interval).

    Measured by seeded simulation (``benchmarks/validate_adaptive.py``, 400 datasets per
    scenario): one stratum at 0.40 with 20 trials among 10-20 strata near 0.08 with
    50-500 trials is flagged with probability 0.71 under ``control="holm"`` (per-dataset
    false-flag rate 0.003 when all strata are alike) and 0.94 under
    ``control="per_stratum"`` (per-stratum false-flag rate 0.026, per dataset 0.36).

    Parameters
    ----------
    data : Posterior, Counts or array_like
        A fitted posterior (its counts are checked), a :class:`~bayeseval.counts.counts.Counts`,
        or the successes per stratum (then pass ``trials``).
    trials : array_like, optional
        Trials per stratum when ``data`` holds the successes.
    level : float
        ``1 - level`` is the error rate of the flag rule (default 0.95).
    control : {"holm", "per_stratum"}
        ``"holm"``: Holm's step-down rule over the strata with trials, so the chance of
        flagging *any* stratum of an exchangeable dataset is at most ``1 - level``.
        ``"per_stratum"``: flag ``p <= 1 - level``, which bounds each stratum's false-flag
        rate instead (more power, more false flags per dataset).

    Returns
    -------
    ConflictResult
        ``table`` (one row per stratum), ``flagged`` (labels).

    Examples
    --------
    >>> res = conflict_check([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20])
    >>> res.flagged
    [6]
    >>> res.table.loc[6, "read"]
    'adaptive'
    """
    level = check_level(level)
    control = check_method(control, ("holm", "per_stratum"), "control")
    counts = data.counts if hasattr(data, "counts") and trials is None else as_counts(data, trials)
    s = counts.successes.to_numpy()
    n = counts.trials.to_numpy()
    if np.count_nonzero(n) < 2:
        raise ValueError(
            f"trials must have at least two strata with trials to compare, got {n.tolist()!r}"
        )
    choice = read_choice(s, n, alpha=1.0 - level, control=control, threshold=READ_ADAPTIVE_P)
    res = choice.check
    flag = np.asarray(res.flagged, bool)
    p = np.where(n > 0, res.p_value, np.nan)
    high = res.p_below > res.p_above
    frame = pd.DataFrame(
        {
            "successes": counts.successes,
            "trials": counts.trials,
            "expected": res.expected,
            "p_value": p,
            "direction": np.where(high, "high", "low"),
            "flag": flag,
            "read": choice.read,
            "reason": choice.reason,
        },
        index=counts.strata,
    )
    return ConflictResult(frame=frame, level=level, control=control)


# ------------------------------------------------------------------- posterior predictive


@dataclass(frozen=True)
class PPCResult:
    """Result of :func:`posterior_predictive_check`.

    Parameters
    ----------
    table : pandas.DataFrame
        Per stratum: ``successes``, ``trials``, ``pred_lower``, ``pred_upper`` (predictive
        interval of the count), ``p_value`` (two-sided mid-p), ``p_posterior`` (the plain
        posterior predictive p-value), ``check`` (which replication gave ``p_value``),
        ``direction`` (``"high"``/``"low"``), ``p_conflict`` (p-value of
        :func:`conflict_check`) and ``flag`` (its Holm flag).
    global_table : pandas.DataFrame
        Per statistic: ``statistic``, ``observed``, ``pred_lower``, ``pred_upper``,
        ``p_value``, ``flag``.
    outliers : list
        Labels of the flagged strata.
    level : float
        Level of the predictive intervals; ``1 - level`` is the family-wise flag rate.
    """

    table: pd.DataFrame
    global_table: pd.DataFrame
    outliers: list = field(default_factory=list)
    level: float = 0.95

    def __repr__(self) -> str:
        flagged = int(self.global_table["flag"].sum())
        return (
            f"<PPCResult strata={len(self.table)} outliers={self.outliers[:5]!r} "
            f"global flags={flagged}>"
        )


def posterior_predictive_check(
    posterior: Any,
    *,
    statistics: Sequence[str] = _STATISTICS,
    random_seed: int | np.random.Generator | None = None,
    level: float = 0.95,
    cross_validate: bool = True,
) -> PPCResult:
    r"""Predictive checks of a hierarchical fit: per-stratum counts and global statistics.

    A plain posterior predictive replicate :math:`s_k^{rep} \sim \mathrm{Bin}(n_k, \theta_k)`
    reuses the stratum's own :math:`\theta_k`, which was fit to :math:`s_k`, so it can hardly
    find that stratum surprising (its p-value is reported as ``p_posterior``). The check that
    decides therefore uses the *mixed* replicate of Marshall & Spiegelhalter (2007): a fresh
    rate from the fitted population, :math:`\tilde\theta_k \sim
    \mathrm{Beta}(\mu_k\kappa, (1-\mu_k)\kappa)` per posterior draw of
    :math:`(\mu, \kappa)`, then :math:`s_k^{rep} \sim \mathrm{Bin}(n_k, \tilde\theta_k)`.
    The (at most 10) strata with the smallest mixed p-values below 0.5 are re-checked with
    that stratum left out of the posterior of :math:`(\mu, \kappa)` (cross-validated mixed
    p-value, approximately uniform under the model), so one outlier cannot hide by widening
    the population it is judged against: the hyperparameter nodes (the exact engine's grid
    points, or the posterior draws of other engines) are reweighted by
    :math:`1 / p(s_k \mid \mu, \kappa)` and the count is compared with the exact mixture
    of Beta-binomial distributions they imply (:mod:`bayeseval._kernels.ppc`, the same kernel
    the labelling campaigns use); these give the predictive intervals of the count.

    p-values are two-sided mid-p values for discrete counts. A stratum is flagged when its
    (cross-validated) mixed p-value is below :math:`(1 - \text{level}) / K` (Bonferroni
    over the :math:`K` strata with trials) *or* when :func:`conflict_check` flags it (its
    p-value in ``p_conflict``: the exact mid-p value of the count under the Beta-binomial
    predictive fitted to the *other* strata, Holm's rule at ``1 - level``). Each rule has
    at most about a ``1 - level`` chance of any false flag when the strata are alike, the
    union at most twice that. The conflict check gives the power: 0.71 against one
    stratum at 0.40 with 20 trials among 10-20 strata near 0.08, where the mixed check
    alone flagged 31%; the mixed check helps with very few strata. Global statistics (``dispersion``: Pearson chi-square of stratum rates
    about the pooled rate; ``min`` and ``max`` stratum rate) are compared with their
    mixed replicates and flagged when :math:`p < (1 - \text{level}) / J` for :math:`J`
    statistics.

    The Monte Carlo replicates use every posterior draw up to 2,000 strata (4,000 draws)
    and the first ``max(400, 8,000,000 / K)`` draws beyond, so their cost stays near
    8 million draws whatever the number of strata. A replicate p-value's Monte Carlo
    standard error is at most ``1 / sqrt(draws)`` (0.05 with 400 draws); the per-stratum
    flags do not depend on it, since beyond 2,000 strata even the smallest Monte Carlo
    p-value (``1 / draws``) exceeds the Bonferroni threshold ``(1 - level) / K``: they
    come from the exact cross-validated and conflict p-values.

    Parameters
    ----------
    posterior : Posterior
        From :func:`bayeseval.fit_hierarchical` (any engine).
    statistics : sequence of str
        Global statistics among ``"dispersion"``, ``"min"``, ``"max"``.
    random_seed : int or numpy Generator, optional
        Seed of the replicates.
    level : float
        Level of the predictive intervals (0.95 = 95%).
    cross_validate : bool
        Re-check suspicious strata with their own likelihood left out (beta-binomial and
        robust models).

    Returns
    -------
    PPCResult
        Per-stratum table, global-statistic table and the labels of the flagged strata.

    Warns
    -----
    ModelCheckWarning
        When a stratum or a global statistic is flagged.

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([4, 6, 5, 40], [50, 50, 50, 50], draws=2000, random_seed=0)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     ppc = posterior_predictive_check(post, random_seed=1)
    >>> ppc.outliers
    [3]
    """
    level = check_level(level)
    if isinstance(statistics, str):
        statistics = (statistics,)
    statistics = [check_method(s, _STATISTICS, "statistics") for s in statistics]
    rng = make_rng(random_seed)
    alpha = 1.0 - level
    counts = posterior.counts
    s = counts.successes.to_numpy()
    n = counts.trials.to_numpy()
    has = n > 0
    K = int(has.sum())

    reps = _n_reps(posterior.n_draws, len(s))
    if reps >= posterior.n_draws:
        rep_post = posterior.sample_predictive(random_seed=rng)
    else:
        rep_post = rng.binomial(n[None, :], _posterior_rows(posterior, reps, rng))
    _, p_post = mid_p(rep_post, s[None, :])
    theta_new = _population_theta(posterior, rng, reps)
    if theta_new is None:
        rep = rep_post
        check = np.full(len(s), "posterior")
    else:
        rep = rng.binomial(n[None, :], theta_new)
        check = np.full(len(s), "mixed", dtype=object)
    lower_tail, p_val = mid_p(rep, s[None, :])
    lo, hi = _column_quantiles(rep, alpha)

    if cross_validate and theta_new is not None and K >= 3:
        # the most extreme strata (at most 10): an outlier widens the population it is
        # judged against, so its mixed p-value alone may look unremarkable
        suspects = np.flatnonzero(has & (p_val < 0.5))
        suspects = suspects[np.argsort(p_val[suspects], kind="stable")][:10]
        nodes = _loo_nodes(posterior, suspects) if suspects.size else None
        if nodes is not None:
            res = loo_mixed_check(s[suspects], n[suspects], nodes, level=level, rng=rng)
            lower_tail[suspects], p_val[suspects] = res["lower"], res["p_value"]
            lo[suspects], hi[suspects] = res["pred_lower"], res["pred_upper"]
            check[suspects] = "cross-validated"

    p_val = np.where(has, p_val, np.nan)
    flag = bonferroni_flags(np.nan_to_num(p_val, nan=1.0), has, level)
    p_conflict = np.full(len(s), np.nan)
    if K >= 2:
        conflict = conflict_check(counts, level=level).table
        flag |= conflict["flag"].to_numpy(bool)
        p_conflict = conflict["p_value"].to_numpy(float)
    table = pd.DataFrame(
        {
            "successes": counts.successes,
            "trials": counts.trials,
            "pred_lower": lo.astype(np.int64),
            "pred_upper": hi.astype(np.int64),
            "p_value": p_val,
            "p_posterior": np.where(has, p_post, np.nan),
            "check": check,
            "direction": np.where(lower_tail > 0.5, "high", "low"),
            "p_conflict": p_conflict,
            "flag": flag,
        },
        index=counts.strata,
    )
    rows = []
    rep_has = rep if has.all() else rep[:, has]
    rep_rates: dict = {}  # the replicated rates, shared by "min" and "max"
    for name in statistics:
        obs = float(_global_statistic(name, s[has], n[has])[0])
        t_rep = _global_statistic(name, rep_has, n[has], rep_rates)
        _, p = mid_p(t_rep, obs)
        rows.append(
            {
                "statistic": name,
                "observed": obs,
                "pred_lower": float(np.quantile(t_rep, alpha / 2)),
                "pred_upper": float(np.quantile(t_rep, 1 - alpha / 2)),
                "p_value": float(p),
                "flag": bool(p < alpha / len(statistics)),
            }
        )
    global_table = pd.DataFrame(
        rows, columns=["statistic", "observed", "pred_lower", "pred_upper", "p_value", "flag"]
    )
    outliers = list(counts.strata[flag])
    if outliers:
        warnings.warn(
            f"{len(outliers)} stratum(s) with counts extreme under the model: {outliers[:10]} "
            "(leave-one-out conflict check, Holm at "
            f"{alpha:.2g}); read their own-data intervals, consider model='robust' "
            "or check these strata's data",
            ModelCheckWarning,
            stacklevel=2,
        )
    bad = global_table.loc[global_table["flag"], "statistic"].tolist()
    if bad:
        warnings.warn(
            f"global statistic(s) {bad} outside the model's predictive range "
            f"(p < {alpha / len(statistics):.2g}): the Beta population may not describe the spread of the strata",
            ModelCheckWarning,
            stacklevel=2,
        )
    return PPCResult(table=table, global_table=global_table, outliers=outliers, level=level)


# ------------------------------------------------------------------ frequentist side by side


def compare_frequentist(
    posterior: Any,
    *,
    level: float = 0.95,
    weights: Any = None,
    ppc: PPCResult | None = None,
    random_seed: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    r"""Frequentist and Bayesian estimates side by side, with the reason when they disagree.

    Per stratum: the raw rate, its plug-in standard error, Wilson and Clopper-Pearson
    intervals (:func:`bayeseval.estimate.intervals.proportion_ci`), the posterior mean, sd and
    equal-tailed credible interval, the width ratio (credible / Wilson width) and the
    shrinkage. A stratum is flagged, with its ``reason``, when

    * ``"misfit"``: the posterior predictive check flags it;
    * ``"strong shrinkage of a small stratum"``: shrinkage >= 0.5, trials at most the median,
      and either the estimates disagree (below) or the credible interval is less than half
      the Wilson width (certainty borrowed from the other strata);
    * ``"posterior and frequentist estimates disagree"``: the posterior mean lies outside
      the Wilson interval or the raw rate outside the credible interval.

    With ``weights``, a last row ``"weighted overall"`` compares
    :func:`bayeseval.estimate.stratified.stratified_risk` (estimate, SE and interval) with the
    posterior of :math:`\sum_k \pi_k \theta_k`; it is flagged when the means differ by more
    than two stratified SEs or the posterior sd and the SE differ by more than a factor 2.

    Parameters
    ----------
    posterior : Posterior
        From :func:`bayeseval.fit_hierarchical` (any engine).
    level : float
        Level of every interval (0.95 = 95%).
    weights : array-like, dict or Series, optional
        Population shares of the strata.
    ppc : PPCResult, optional
        A check already run; computed (seeded by ``random_seed``) when omitted.
    random_seed : int or numpy Generator, optional
        Seed of the predictive check when it is run here.

    Returns
    -------
    pandas.DataFrame
        Indexed by stratum (plus ``"weighted overall"``): ``successes, trials, raw_rate, se,
        wilson_lower, wilson_upper, cp_lower, cp_upper, adaptive_lower, adaptive_upper,
        pooled_mean, pooled_sd, pooled_lower, pooled_upper, width_ratio, shrinkage, flag, reason,
        read, read_reason, read_lower, read_upper``. ``adaptive_*`` is the adaptive
        interval (``proportion_ci(..., method="adaptive")``; NaN with fewer than two strata
        with trials). ``read`` says which interval to read, as in
        :meth:`~bayeseval.models.Posterior.summary`: ``"adaptive"`` for a stratum whose
        count is not clearly typical of what the other strata predict (leave-one-out
        conflict p-value at most 0.20), else ``"pooled"``; ``read_lower``/``read_upper``
        are that interval's ends (empty on the weighted row).

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([1, 6, 5, 7], [4, 60, 50, 70], draws=2000, random_seed=0)
    >>> table = compare_frequentist(post, random_seed=1)
    >>> table.loc[0, "reason"]
    'strong shrinkage of a small stratum'
    """
    from bayeseval.estimate.intervals import proportion_ci

    level = check_level(level)
    counts = posterior.counts
    s = counts.successes
    n = counts.trials
    summ = posterior.summary(level=level)
    if ppc is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ModelCheckWarning)
            ppc = posterior_predictive_check(posterior, random_seed=random_seed, level=level)
    has = n.to_numpy() > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(has, s / n.where(n > 0, 1), np.nan)
        se = np.sqrt(raw * (1 - raw) / n.to_numpy())
    wl, wu = proportion_ci(s, n, level=level, method="wilson")
    cl, cu = proportion_ci(s, n, level=level, method="clopper_pearson")
    al, au = np.full(len(n), np.nan), np.full(len(n), np.nan)
    if np.count_nonzero(has) >= 2:
        iv = adaptive_interval(s.to_numpy(), n.to_numpy(), level=level)
        al[has], au[has] = iv.lower[has], iv.upper[has]
    frame = pd.DataFrame(
        {
            "successes": s,
            "trials": n,
            "raw_rate": raw,
            "se": se,
            "wilson_lower": np.asarray(wl, dtype=float),
            "wilson_upper": np.asarray(wu, dtype=float),
            "cp_lower": np.asarray(cl, dtype=float),
            "cp_upper": np.asarray(cu, dtype=float),
            "adaptive_lower": al,
            "adaptive_upper": au,
            "pooled_mean": summ["mean"].to_numpy(),
            "pooled_sd": posterior.theta.std(axis=0, ddof=1),
            "pooled_lower": summ["lower"].to_numpy(),
            "pooled_upper": summ["upper"].to_numpy(),
        },
        index=counts.strata,
    )
    frame["width_ratio"] = (frame["pooled_upper"] - frame["pooled_lower"]) / (
        frame["wilson_upper"] - frame["wilson_lower"]
    )
    frame["shrinkage"] = summ["shrinkage"].to_numpy()
    outside = (
        (frame["pooled_mean"] < frame["wilson_lower"])
        | (frame["pooled_mean"] > frame["wilson_upper"])
        | (frame["raw_rate"] < frame["pooled_lower"])
        | (frame["raw_rate"] > frame["pooled_upper"])
    ).to_numpy()
    narrow = (frame["width_ratio"] < 0.5).to_numpy()
    misfit = ppc.table["flag"].reindex(frame.index).fillna(False).astype(bool).to_numpy()
    small = n.to_numpy() <= np.median(n.to_numpy()[has]) if has.any() else np.zeros(len(n), bool)
    strong = np.nan_to_num(frame["shrinkage"].to_numpy(), nan=0.0) >= 0.5
    shrunk = strong & small & (outside | narrow)
    reason = np.where(
        misfit,
        "misfit",
        np.where(
            shrunk,
            "strong shrinkage of a small stratum",
            np.where(outside, "posterior and frequentist estimates disagree", ""),
        ),
    )
    outside = outside | shrunk
    frame["flag"] = misfit | outside
    frame["reason"] = reason
    for col in ("read", "read_reason", "read_lower", "read_upper"):
        frame[col] = summ[col].to_numpy()
    if weights is not None:
        from bayeseval.estimate.stratified import stratified_risk

        sr = stratified_risk(s, n, weights, level=level)
        draws = posterior.weighted(weights)
        a = (1 - level) / 2
        p_lo, p_hi = np.quantile(draws, [a, 1 - a])
        p_mean, p_sd = float(draws.mean()), float(draws.std(ddof=1))
        why = []
        if abs(p_mean - sr.estimate) > 2 * sr.se:
            why.append("posterior mean and stratified estimate differ by more than 2 SE")
        if sr.se > 0 and not (0.5 <= p_sd / sr.se <= 2.0):
            why.append(f"posterior sd is {p_sd / sr.se:.2f} times the stratified SE")
        row = pd.DataFrame(
            {
                "successes": [int(s.sum())],
                "trials": [int(n.sum())],
                "raw_rate": [sr.estimate],
                "se": [sr.se],
                "wilson_lower": [sr.ci[0]],
                "wilson_upper": [sr.ci[1]],
                "cp_lower": [np.nan],
                "cp_upper": [np.nan],
                "adaptive_lower": [np.nan],
                "adaptive_upper": [np.nan],
                "pooled_mean": [p_mean],
                "pooled_sd": [p_sd],
                "pooled_lower": [p_lo],
                "pooled_upper": [p_hi],
                "width_ratio": [(p_hi - p_lo) / (sr.ci[1] - sr.ci[0])],
                "shrinkage": [np.nan],
                "flag": [bool(why)],
                "reason": ["; ".join(why)],
            },
            index=["weighted overall"],
        )
        frame.index = frame.index.astype(object)
        frame = pd.concat([frame, row])
    return frame


# --------------------------------------------------------------------------- pooling (LOO)


@dataclass(frozen=True)
class PoolingComparison:
    """Result of :func:`compare_pooling`: ``table`` (``arviz.compare``) and ``verdict``.

    Unpacks as ``table, verdict = compare_pooling(counts)``.

    Parameters
    ----------
    table : pandas.DataFrame
        The ``arviz.compare`` table, indexed by model name.
    verdict : str
        One plain-language sentence.
    loo : dict
        The ``arviz.loo`` result of each model, by model name.
    """

    table: pd.DataFrame
    verdict: str
    loo: dict = field(default_factory=dict)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.table, self.verdict))

    def __repr__(self) -> str:
        return f"<PoolingComparison: {self.verdict}>"


def _idata(theta: np.ndarray, s: np.ndarray, n: np.ndarray, labels: list) -> Any:
    import arviz as az

    S = theta.shape[0]
    chains = 4 if S % 4 == 0 and S >= 8 else 1
    shape = (chains, S // chains)
    ll = stats.binom.logpmf(s[None, :], n[None, :], theta)
    return az.from_dict(
        posterior={"theta": theta.reshape(shape + theta.shape[1:])},
        log_likelihood={"successes": ll.reshape(shape + ll.shape[1:])},
        observed_data={"successes": s},
        coords={"stratum": labels},
        dims={"theta": ["stratum"], "successes": ["stratum"]},
    )


def compare_pooling(
    counts: Any,
    trials: Any = None,
    *,
    draws: int = 4000,
    random_seed: int | np.random.Generator | None = None,
    prior: Any = "default",
) -> PoolingComparison:
    r"""Complete, no and partial pooling compared by PSIS-LOO, with a plain-language verdict.

    * complete pooling: one rate for every stratum, :math:`\theta \sim
      \mathrm{Beta}(1 + \sum s_k, 1 + \sum (n_k - s_k))` (conjugate, drawn exactly);
    * no pooling: independent :math:`\theta_k \sim \mathrm{Beta}(1 + s_k, 1 + n_k - s_k)`;
    * partial pooling: the hierarchical Beta-binomial (exact engine, ``prior``).

    The pointwise log-likelihood is the binomial log pmf of each stratum's count, so the
    comparison asks how well each model predicts a whole left-out stratum
    (:func:`arviz.loo`, :func:`arviz.compare`; Vehtari, Gelman & Gabry 2017). A difference
    smaller than twice its standard error is reported as not distinguishing the models.

    Parameters
    ----------
    counts : Counts, or array-like of successes
        The data (with ``trials`` when not a Counts).
    trials : array-like, optional
        Trials per stratum.
    draws : int
        Posterior draws per model.
    random_seed : int or numpy Generator, optional
        Seed of the posterior draws.
    prior : {"default", "bda"}, dict or Prior
        Prior of the partial-pooling model.

    Returns
    -------
    PoolingComparison
        ``table``: the ``arviz.compare`` DataFrame (rank, elpd_loo, p_loo, elpd_diff, weight,
        se, dse, warning), indexed by model name; ``verdict``: one sentence.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     table, verdict = compare_pooling([2, 30, 5, 45, 3, 28], [100] * 6, random_seed=0)
    >>> table.index[0] in ("no pooling", "partial pooling")
    True
    """
    import arviz as az

    from bayeseval.models import fit_hierarchical

    c = counts if isinstance(counts, Counts) else as_counts(counts, trials)
    draws = check_positive_int(draws, "draws", minimum=8)
    rng = make_rng(random_seed)
    s = c.successes.to_numpy()
    n = c.trials.to_numpy()
    labels = [str(x) for x in c.strata]
    theta_c = rng.beta(1 + s.sum(), 1 + (n - s).sum(), size=draws)
    theta_c = np.repeat(theta_c[:, None], len(s), axis=1)
    theta_n = rng.beta(1 + s[None, :], 1 + (n - s)[None, :], size=(draws, len(s)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        post = fit_hierarchical(c, engine="exact", prior=prior, draws=draws,
                                random_seed=int(rng.integers(2**31 - 1)))
    models = {
        "complete pooling": _idata(theta_c, s, n, labels),
        "no pooling": _idata(theta_n, s, n, labels),
        "partial pooling": _idata(post.theta, s, n, labels),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # high Pareto k: reported in the verdict
        loos = {k: az.loo(v, pointwise=True) for k, v in models.items()}
        table = az.compare(loos, ic="loo")
    best = table.index[0]
    parts = [f"The data support {best} best (elpd_loo {table.loc[best, 'elpd_loo']:.1f})"]
    close = [
        m for m in table.index[1:]
        if table.loc[m, "elpd_diff"] < 2 * max(float(table.loc[m, "dse"]), 1e-12)
    ]
    far = [m for m in table.index[1:] if m not in close]
    if close:
        parts.append(
            "but do not clearly distinguish it from " + " and ".join(close)
            + " (difference under 2 standard errors)"
        )
    if far:
        parts.append(
            ("; " if close else ", ") + "they clearly favour it over " + " and ".join(
                f"{m} (elpd difference {table.loc[m, 'elpd_diff']:.1f} +/- "
                f"{table.loc[m, 'dse']:.1f})" for m in far
            )
        )
    verdict = " ".join(parts[:2]) + "".join(parts[2:]) + "."
    verdict = verdict.replace(" ;", ";")
    high_k = {m: int(np.sum(np.asarray(loos[m].pareto_k) > 0.7)) for m in loos}
    if any(high_k.values()):
        verdict += " Pareto k > 0.7 for " + ", ".join(
            f"{v} {'stratum' if v == 1 else 'strata'} under {m}"
            for m, v in high_k.items()
            if v
        ) + (
            ": leaving out such a stratum changes the fit a lot (always so for no pooling, "
            "where each stratum alone determines its rate), so those LOO estimates are "
            "less reliable."
        )
    return PoolingComparison(table=table, verdict=verdict, loo=loos)


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
        ``Posterior.summary()["read"]`` points to: pooled, or adaptive for a stratum not
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
                        post = fit_hierarchical(s, n, draws=400,
                                                random_seed=int(rng.integers(2**31 - 1)))
                    summ = post.summary(level=level)
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


@dataclass(frozen=True)
class SBCResult:
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
            post = fit_hierarchical(s, n, prior=fit_with, draws=draws,
                                    random_seed=int(rng.integers(2**31 - 1)))
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

