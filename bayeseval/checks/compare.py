"""A hierarchical model side by side with the frequentist estimators, and pooling compared by LOO.

* :func:`compare_frequentist`: per stratum, the raw rate with Wilson and Clopper-Pearson
  intervals beside the posterior mean and credible interval, with the reason when they
  disagree; the same for the weighted overall rate.
* :func:`compare_pooling`: complete, no and partial pooling compared by PSIS-LOO (ArviZ).

References
----------
Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation using
leave-one-out cross-validation and WAIC. Statistics and Computing 27, 1413-1432.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_positive_int,
    make_rng,
)
from bayeseval._api.warnings import ModelCheckWarning, PrecisionLimitedWarning
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval.checks.predictive import PPCResult, posterior_predictive_check
from bayeseval.counts.counts import Counts, as_counts

__all__ = [
    "compare_frequentist",
    "PoolingComparison",
    "compare_pooling",
]

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
    summ = posterior.summary(level=level, read=True)
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


@dataclass(frozen=True, repr=False)
class PoolingComparison(Result):
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

    title = "Pooling comparison (LOO)"

    def _heading(self) -> str:
        return f"Pooling comparison (LOO): {self.verdict}"


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


#: an elpd difference below this is small whatever its standard error (Sivula et al. 2022)
SMALL_ELPD_DIFF = 4.0


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
    smaller than 4 or than twice its standard error is reported as not distinguishing the
    models: below 4 the difference is small and its standard error is unreliable (Sivula,
    Magnusson, Matamoros & Vehtari 2022, "Uncertainty in Bayesian leave-one-out
    cross-validation based model comparison"); strata that all look alike give a standard
    error of 0 for any difference.

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
        post = fit_hierarchical(c, engine="exact", prior=prior, draws=draws, random_seed=int(rng.integers(2**31 - 1)))
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
        m for m in table.index[1:] if table.loc[m, "elpd_diff"] < max(SMALL_ELPD_DIFF, 2 * float(table.loc[m, "dse"]))
    ]
    far = [m for m in table.index[1:] if m not in close]
    if close:
        parts.append(
            "but do not clearly distinguish it from "
            + " and ".join(close)
            + f" (difference under {SMALL_ELPD_DIFF:g} or under 2 standard errors)"
        )
    if far:
        parts.append(
            ("; " if close else ", ")
            + "they clearly favour it over "
            + " and ".join(
                f"{m} (elpd difference {table.loc[m, 'elpd_diff']:.1f} +/- {table.loc[m, 'dse']:.1f})" for m in far
            )
        )
    verdict = " ".join(parts[:2]) + "".join(parts[2:]) + "."
    verdict = verdict.replace(" ;", ";")
    high_k = {m: int(np.sum(np.asarray(loos[m].pareto_k) > 0.7)) for m in loos}
    if any(high_k.values()):
        verdict += (
            " Pareto k > 0.7 for "
            + ", ".join(f"{v} {'stratum' if v == 1 else 'strata'} under {m}" for m, v in high_k.items() if v)
            + (
                ": leaving out such a stratum changes the fit a lot (always so for no pooling, "
                "where each stratum alone determines its rate), so those LOO estimates are "
                "less reliable."
            )
        )
    return PoolingComparison(table=table, verdict=verdict, loo=loos)
