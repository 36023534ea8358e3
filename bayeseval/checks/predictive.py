"""Predictive checks of a hierarchical model: the per-stratum conflict check and posterior
predictive checks.

* :func:`conflict_check`: each stratum's count against its leave-one-out predictive.
* :func:`posterior_predictive_check`: replicated counts per stratum and for global statistics
  (between-stratum dispersion, minimum and maximum stratum rate), predictive p-values, and
  the strata whose observed count is extreme under the model.

References
----------
Gelman, A., Meng, X.-L. & Stern, H. (1996). Posterior predictive assessment of model fitness
via realized discrepancies. Statistica Sinica 6, 733-807.

Marshall, E. C. & Spiegelhalter, D. J. (2007). Identifying outliers in Bayesian hierarchical
models: a simulation-based approach. Bayesian Analysis 2, 409-444.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import betaln, expit, logit

from bayeseval._api.results import Result, frame_html
from bayeseval._api.validation import (
    check_level,
    check_method,
    make_rng,
)
from bayeseval._api.warnings import ModelCheckWarning
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, read_choice
from bayeseval._kernels.ppc import Nodes, bonferroni_flags, loo_mixed_check, mid_p
from bayeseval.counts.counts import as_counts

__all__ = [
    "ConflictResult",
    "conflict_check",
    "PPCResult",
    "posterior_predictive_check",
]

_STATISTICS = ("dispersion", "min", "max")
# --------------------------------------------------------------------------------- helpers


def _population_theta(posterior: Any, rng: np.random.Generator, draws: int | None = None) -> np.ndarray | None:
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
    if (
        draws >= posterior.n_draws
        or getattr(posterior, "_theta", None) is not None
        or not hasattr(exact, "sample_theta")
        or not {"mu", "kappa"} <= set(hyper)
    ):
        return posterior.theta[:draws]
    u = logit(np.clip(hyper["mu"][:draws], 1e-300, 1.0))
    eps = hyper.get("outlier_prob")
    return exact.sample_theta(u, np.log(hyper["kappa"][:draws]), None if eps is None else eps[:draws], random_seed=rng)


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
    if getattr(posterior, "exact", None) is not None and getattr(posterior, "exact_strata", None) is None:
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
    a, b = np.broadcast_to(a, ll.shape), np.broadcast_to(b, ll.shape)  # one column per stratum
    eps = 0.0
    if posterior.model == "robust":
        eps = float(posterior.diagnostics.get("outlier_prob", 0.1))
        ll = np.logaddexp(np.log1p(-eps) + ll, np.log(eps) + betaln(1.0 + s, 1.0 + f))
    return Nodes(
        np.full(kappa.shape[0], 1.0 / kappa.shape[0]), a, b, ll, eps, refit=_exact_refit(posterior, strata, eps)
    )


def _exact_refit(posterior: Any, strata: np.ndarray, eps: float) -> Any:
    """``refit(j)`` for posterior draws: stratum ``strata[j]``'s leave-one-out population
    mixture from the exact engine (same counts, model, prior and prior means), fitted on
    first use, or None where the exact engine cannot fit them.

    Reweighting draws by ``1 / p(s_k | mu, kappa)`` leaves few effective draws when the
    stratum has many trials (one draw may carry most of the weight); the kernel then asks
    for this refit (:func:`bayeseval._kernels.ppc.loo_mixed_check`).
    """
    from bayeseval.models.exact import ExactFit  # deferred: the check imports no engine otherwise

    cache: dict = {}

    def refit(j: int) -> tuple | None:
        if "fit" not in cache:
            offsets = posterior.diagnostics.get("offsets")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cache["fit"] = ExactFit(
                        posterior.counts,
                        prior=posterior.prior,
                        model=posterior.model,
                        prior_mean=None if offsets is None else expit(np.asarray(offsets, dtype=float)),
                        outlier_prob=eps if eps > 0 else 0.1,
                    )
            except (TypeError, ValueError):
                cache["fit"] = None
        fit = cache["fit"]
        return None if fit is None else fit.loo_mixture(int(strata[j]))

    return refit


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
        predictive), ``flag``, ``read`` (``"pooled"`` or ``"adaptive"``, with units of several
        rows ``"units"``: which interval to read for the stratum, as in :meth:`bayeseval.models.Posterior.summary`: adaptive
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
    :func:`bayeseval.models.read.which_interval`; ``proportion_ci(...,
    method="adaptive")`` gives the interval).

    Counts with units of several rows (``tabulate(..., design=Design(cluster=...))``, binary
    outcomes) are checked under the pooled model over units: the statistic is each stratum's
    total successes given its units' sizes, its reference the leave-one-out predictive of the
    model fitted to the other strata
    (:func:`bayeseval.models.exact_units.loo_units_p_values`), and ``read`` is ``"units"`` (the
    stratum's units' interval) where it is not ``"pooled"``.

    Measured: one outlying stratum among alike ones is flagged with probability 0.71 under
    ``control="holm"``, with 0.003 false flags per dataset when all are alike
    (docs/validation.md, section 6c).

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
        raise ValueError(f"trials must have at least two strata with trials to compare, got {n.tolist()!r}")
    if counts.units is not None and (counts.units["unit_trials"].to_numpy() > 1).any():
        from bayeseval.models.read import units_read_choice  # deferred: the units engine loads on use

        choice = units_read_choice(counts, level, control, threshold=READ_ADAPTIVE_P)
    else:
        choice = read_choice(s, n, alpha=1.0 - level, control=control, threshold=READ_ADAPTIVE_P)
    res = choice.check
    assert res is not None
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


@dataclass(frozen=True, repr=False)
class PPCResult(Result):
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

    title = "Posterior predictive check"

    def _heading(self) -> str:
        flagged = int(self.global_table["flag"].sum())
        return (
            f"Posterior predictive check: {len(self.table)} strata, outliers "
            f"{self.outliers[:5]!r}, {flagged} global flag(s)"
        )

    def _repr_html_(self) -> str:
        return Result._repr_html_(self) + frame_html("Global statistics", self.global_table)

    def __repr__(self) -> str:
        return f"{Result.__repr__(self)}\nGlobal statistics\n{self.global_table.to_string()}"


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
    :math:`1 / p(s_k \mid \mu, \kappa)` (in logs, from the grid's log masses, so counts of
    any size keep their weights; with the exact engine, a stratum whose leave-one-out
    posterior leaves the grid gets a grid of its own) and the count is compared with the exact mixture
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
    global_table = pd.DataFrame(rows, columns=["statistic", "observed", "pred_lower", "pred_upper", "p_value", "flag"])
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
