r"""Stratified (population-weighted) estimates, row reweighting and clustered rows.

With population shares :math:`\pi_k` and per-stratum rates :math:`\hat r_k = s_k / n_k`, the
population risk is estimated by :math:`\hat R = \sum_k \pi_k \hat r_k`, whose variance is
:math:`\sum_k \pi_k^2 r_k (1 - r_k) / n_k` (the stratified estimator of a mean; Cochran 1977,
*Sampling Techniques*, 3rd ed., section 5.3). The pooled rate of the sample is a different
estimand (the risk at the test set's composition); results show it beside the weighted
estimate. Rows that come in clusters (documents, customers, videos) go to
:func:`clustered_risk`, which gives a cluster-robust SE and the design effect. Row weights
that make a sample look like the population, and metrics under them, are in
:mod:`bayeseval.estimate.reweighting`.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    align_by_label,
    as_row_array,
    check_level,
    check_no_missing,
    check_weights,
    short_repr,
)
from bayeseval._api.warnings import (
    EmptyStratumWarning,
    ZeroVarianceWarning,
)
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.binomial import ADAPTIVE, binomial_bounds, normalise_method
from bayeseval._kernels.weighted_variance import stratum_variance_terms
from bayeseval._render.formats import fixed
from bayeseval.counts.counts import Counts, as_counts
from bayeseval.estimate.intervals import proportion_ci

__all__ = [
    "StratifiedRisk",
    "stratified_risk",
    "clustered_risk",
]


@dataclass(frozen=True, eq=False, repr=False)
class StratifiedRisk(Result):
    r"""A population-weighted risk with its uncertainty and the per-stratum table.

    Attributes
    ----------
    estimate : float
        :math:`\hat R = \sum_k \pi_k \hat r_k`, the population estimate.
    se : float
        Its standard error: the plug-in :math:`\sqrt{\sum_k \pi_k^2 \hat r_k(1-\hat r_k)/n_k}`,
        or the cluster-robust SE for :func:`clustered_risk`.
        Strata whose rate is 0 or 1 contribute 0 here (see ``se_interval``).
    se_interval : float
        The SE the interval uses: ``se`` with every stratum whose rate is 0 or 1
        given the Agresti-Coull (Wilson-adjusted) variance
        :math:`\tilde r(1-\tilde r)/(n+z^2)`, :math:`\tilde r = (s + z^2/2)/(n+z^2)`,
        instead of 0. Equal to ``se`` when no rate is 0 or 1.
    ci : tuple of float
        ``(lower, upper)``: ``estimate -/+ z * se_interval`` clipped to [0, 1]
        (normal approximation with the estimated SE). When some rates are 0 or
        1, the centre also uses those strata's Agresti-Coull-adjusted rate
        (the interval is widened to contain ``estimate`` if needed). With a
        single stratum of positive weight (and no clusters) it is that
        stratum's ``method`` interval instead.
    unweighted : float
        The pooled rate of the sample, :math:`\sum_k s_k / \sum_k n_k`: the risk
        at the *test set's* composition, not the population estimate.
    table : pandas.DataFrame
        Per stratum: successes, trials, rate, se, lower, upper (the ``method``
        interval), weight, sample_share, contribution (weight x rate) and, with
        clusters, n_clusters and design_effect.
    level : float
        Interval level.
    method : str
        The per-stratum interval method.
    se_independent : float
        The plug-in SE assuming independent rows (equals ``se`` without clusters).
    design_effect : float or None
        Cluster-robust variance / independent-rows variance, when clusters were given.
    n_clusters : int or None
        Number of clusters, when given.
    zero_variance : list
        Strata (with positive weight) whose observed rate is 0 or 1.
    metric : str or None
        Name of the metric the counts measure, when known.
    """

    estimate: float
    se: float
    se_interval: float
    ci: tuple[float, float]
    unweighted: float
    table: pd.DataFrame = field()  # explicit: the inherited ``Result.table`` is no default
    level: float
    method: str
    se_independent: float
    design_effect: float | None = None
    n_clusters: int | None = None
    zero_variance: list[Hashable] = field(default_factory=list)
    metric: str | None = None

    @property
    def lower(self) -> float:
        """Lower bound of :attr:`ci`."""
        return self.ci[0]

    @property
    def upper(self) -> float:
        """Upper bound of :attr:`ci`."""
        return self.ci[1]

    def summary(self) -> pd.DataFrame:
        """Two rows, reweighted (the population estimate) and unweighted, with SE and interval.

        The unweighted row's SE and interval treat the pooled rows as one
        binomial sample (Wilson interval), for comparison only.

        Returns
        -------
        pandas.DataFrame
            Indexed by ``estimand`` (``reweighted``, ``unweighted``), with columns
            ``estimate, se, lower, upper``.
        """
        s = int(self.table["successes"].sum())
        n = int(self.table["trials"].sum())
        if n > 0:
            ulo, uhi = proportion_ci(s, n, level=self.level, method="wilson")
            use = float(np.sqrt(self.unweighted * (1 - self.unweighted) / n))
        else:
            ulo = uhi = use = float("nan")
        frame = pd.DataFrame(
            {
                "estimate": [self.estimate, self.unweighted],
                "se": [self.se, use],
                "lower": [self.ci[0], ulo],
                "upper": [self.ci[1], uhi],
            },
            index=pd.Index(["reweighted", "unweighted"], name="estimand"),
        )
        frame.attrs["population_estimate"] = "reweighted"
        frame.attrs["note"] = (
            "reweighted = sum of population share x stratum rate, the population estimate; "
            "unweighted = pooled rate at the test set's composition"
        )
        if self.design_effect is not None:
            frame.attrs["design_effect"] = self.design_effect
        return frame

    def __repr__(self) -> str:
        pct = f"{100 * self.level:g}%"
        lines = [
            f"StratifiedRisk{f' ({self.metric})' if self.metric else ''}: "
            f"{fixed(self.estimate)} (SE {fixed(self.se)}, {pct} CI {fixed(self.ci[0])} to {fixed(self.ci[1])})"
            "  <- population estimate",
            f"  unweighted pooled rate {fixed(self.unweighted)} (test-set composition, a different estimand)",
        ]
        if self.design_effect is not None:
            lines.append(
                f"  clustered rows: {self.n_clusters} clusters, design effect {self.design_effect:.2f} "
                f"(independent-rows SE {fixed(self.se_independent)})"
            )
        if self.zero_variance:
            lines.append(
                f"  rate 0 or 1 in {list(self.zero_variance)[:5]}: plug-in SE 0 is not certainty; "
                f"interval uses SE {fixed(self.se_interval)}"
            )
        lines.append(self.table.to_string(float_format=fixed))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = (
            f"<p><b>Population-weighted {html.escape(str(self.metric or 'risk'))}</b>: "
            f"{fixed(self.estimate)} (SE {fixed(self.se)}; {100 * self.level:g}% CI "
            f"{fixed(self.ci[0])} to {fixed(self.ci[1])}). Unweighted pooled rate "
            f"{fixed(self.unweighted)} describes the test set's composition.</p>"
        )
        return head + self.table.to_html(float_format=fixed, escape=True)


# -- clustered rows: validation ----------------------------------------------------------------


@dataclass(frozen=True)
class _ClusterRows:
    """Per-row outcomes, trial indicators, stratum codes and cluster codes of clustered rows."""

    y: np.ndarray
    t: np.ndarray
    codes: np.ndarray
    ccodes: np.ndarray
    n_clusters: int


def _binary_rows(arr: Any, name: str, n_rows: int) -> np.ndarray:
    a = np.asarray(arr.to_numpy() if isinstance(arr, pd.Series) else arr)
    if a.shape != (n_rows,):
        raise ValueError(f"{name} must have one value per row ({n_rows}), got shape {a.shape}")
    try:
        f = a.astype(float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be 0/1 per row, got {short_repr(a)}") from exc
    bad = np.flatnonzero(~np.isin(f, (0.0, 1.0)))
    if bad.size:
        raise ValueError(
            f"{name} must be 0/1 (or boolean) per row when rows are clustered; rows "
            f"{bad[:5].tolist()} hold {short_repr(a[bad[:5]].tolist())}"
        )
    return f


def _row_labels(values: Any, name: str, n_rows: int, what: str) -> np.ndarray:
    arr = as_row_array(values)
    if arr.shape != (n_rows,):
        raise ValueError(f"{name} must give one {what} per row ({n_rows}), got shape {arr.shape}")
    return arr


def _row_strata(strata: Any, n_rows: int) -> tuple[np.ndarray, pd.Index]:
    if strata is None:
        return np.zeros(n_rows, dtype=np.int64), pd.Index(["all"], name="stratum")
    codes, uniq = pd.factorize(_row_labels(strata, "strata", n_rows, "label"), sort=True)
    if np.any(codes < 0):
        raise ValueError("strata has missing labels; every row needs a stratum")
    return codes, pd.Index(uniq, name=getattr(strata, "name", None) or "stratum")


def _row_counts(outcomes: Any, trials: Any, strata: Any, cluster: Any, name: str) -> tuple[Counts, _ClusterRows]:
    """Validate clustered row-level data; return the per-stratum Counts and the rows."""
    outcomes, trials, strata, cluster = align_by_label(
        (name, outcomes), ("trials", trials), ("strata", strata), ("cluster", cluster)
    )
    for label, value in ((name, outcomes), ("trials", trials), ("strata", strata), ("cluster", cluster)):
        if value is not None and np.ndim(value) == 1:
            check_no_missing(value, label, hint="every row needs a value; drop or fill them first")
    y = np.asarray(outcomes.to_numpy() if isinstance(outcomes, pd.Series) else outcomes)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of per-row 0/1 outcomes, got shape {y.shape}")
    n_rows = y.size
    yf = _binary_rows(y, name, n_rows)
    tf = np.ones(n_rows) if trials is None else _binary_rows(trials, "trials", n_rows)
    if np.any(yf > tf):
        i = int(np.flatnonzero(yf > tf)[0])
        raise ValueError(f"{name} must imply trials: row {i} is a success but not a trial")
    ccodes, cuniq = pd.factorize(_row_labels(cluster, "cluster", n_rows, "id"))
    if np.any(ccodes < 0):
        raise ValueError("cluster has missing ids; every row needs a cluster")
    codes, labels = _row_strata(strata, n_rows)
    s = np.bincount(codes, weights=yf, minlength=len(labels)).astype(np.int64)
    n = np.bincount(codes, weights=tf, minlength=len(labels)).astype(np.int64)
    counts = Counts(pd.Series(s, index=labels), pd.Series(n, index=labels))
    return counts, _ClusterRows(yf, tf, codes, ccodes, len(cuniq))


# -- the estimate in sections ------------------------------------------------------------------


def _resolve_weights(weights: Any, counts: Counts) -> np.ndarray:
    labels = counts.strata
    if weights is None:
        if counts.weights is not None:
            return counts.weights.to_numpy()
        if len(labels) == 1:
            return np.ones(1)
        raise ValueError(
            "weights are required: give the population share of each of the "
            f"{len(labels)} strata {list(labels[:5])} (they must sum to 1)"
        )
    if isinstance(weights, Mapping):
        weights = pd.Series(dict(weights), dtype=float)
    return check_weights(weights, labels)


@dataclass(frozen=True)
class _Strata:
    """Per-stratum quantities of the estimate."""

    labels: pd.Index
    w: np.ndarray
    s: np.ndarray
    n: np.ndarray
    r: np.ndarray  # rate, NaN without trials
    v: np.ndarray  # plug-in variance of the rate, NaN without trials

    @property
    def has(self) -> np.ndarray:
        return self.n > 0

    @property
    def used(self) -> np.ndarray:
        return self.w > 0


def _strata(counts: Counts, w: np.ndarray) -> _Strata:
    s = counts.successes.to_numpy().astype(float)
    n = counts.trials.to_numpy().astype(float)
    has = n > 0
    n_safe = np.where(has, n, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(has, s / n_safe, np.nan)
        v = np.where(has, r * (1 - r) / n_safe, np.nan)
    return _Strata(counts.strata, w, s, n, r, v)


def _warn_empty(st: _Strata, stacklevel: int) -> None:
    empty_used = st.used & ~st.has
    if np.any(empty_used):
        warnings.warn(
            f"strata {list(st.labels[empty_used][:5])} have positive population share but no trials: "
            "the weighted risk is undefined (NaN); label rows there or merge strata",
            EmptyStratumWarning,
            stacklevel=stacklevel,
        )
    elif np.any(~st.has):
        warnings.warn(
            f"strata {list(st.labels[~st.has][:5])} have no trials (their weight is 0, so the estimate is defined)",
            EmptyStratumWarning,
            stacklevel=stacklevel,
        )


def _cluster_var_or_floor(var: float, var_ind: float, rows: _ClusterRows, stacklevel: int) -> float:
    """The cluster-robust variance, or the independent-rows one where it is degenerate (0).

    Every cluster's residual total is 0 when each cluster has exactly its stratum's rate: the
    sandwich then says 0, which is a failure to estimate the variance from so few clusters,
    not certainty.
    """
    if not (np.isfinite(var) and np.isfinite(var_ind)) or var > 1e-12 * var_ind or var_ind <= 0:
        return var
    warnings.warn(
        f"the cluster-robust variance is 0 (every one of the {rows.n_clusters} clusters has "
        "exactly its stratum's rate), which is not certainty; the interval uses the "
        "independent-rows SE instead",
        ZeroVarianceWarning,
        stacklevel=stacklevel,
    )
    return var_ind


def _zero_variance_floor(st: _Strata, z: float, stacklevel: int) -> tuple[list, float, float]:
    """Strata with rate 0 or 1: their labels, the Agresti-Coull variance added and centre shift."""
    degenerate = st.used & st.has & ((st.s == 0) | (st.s == st.n))
    zero_var = list(st.labels[degenerate])
    if zero_var:
        warnings.warn(
            f"strata {zero_var[:5]} have an observed rate of exactly 0 or 1: their plug-in SE is 0, "
            "which is not certainty. The reported interval gives them the Agresti-Coull "
            "(Wilson-adjusted) variance instead of 0",
            ZeroVarianceWarning,
            stacklevel=stacklevel,
        )
    n_adj = st.n + z * z
    r_adj = (st.s + z * z / 2) / n_adj
    v_floor = float(np.sum(np.where(degenerate, stratum_variance_terms(st.w, r_adj, n_adj), 0.0)))
    # interval centre: the Agresti-Coull-adjusted rate for the degenerate strata
    centre_shift = float(np.sum(np.where(degenerate, st.w * (r_adj - np.nan_to_num(st.r)), 0.0)))
    return zero_var, v_floor, centre_shift


@dataclass(frozen=True)
class _ClusterVariance:
    var: float
    design_effect: float
    clusters_k: np.ndarray
    deff_k: np.ndarray


def _cluster_variance(st: _Strata, rows: _ClusterRows, var_ind: float) -> _ClusterVariance:
    """Linearisation (ratio-estimator) sandwich variance, overall and per stratum."""
    g, codes, ccodes = rows.n_clusters, rows.codes, rows.ccodes
    ri = np.nan_to_num(st.r)[codes]
    ni = np.where(st.has, st.n, 1.0)[codes]
    resid = rows.y - ri * rows.t  # per-row residual of the stratum ratio estimator
    e_c = np.bincount(ccodes, weights=st.w[codes] * resid / ni, minlength=g)
    var = float(g / (g - 1) * np.sum(e_c**2)) if g > 1 else float("nan")
    design_effect = var / var_ind if var_ind > 0 else float("nan")
    k_strata = len(st.labels)
    clusters_k = np.zeros(k_strata, dtype=np.int64)
    deff_k = np.full(k_strata, np.nan)
    for k in range(k_strata):
        in_k = codes == k
        cc, cidx = np.unique(ccodes[in_k], return_inverse=True)
        gk = clusters_k[k] = len(cc)
        if gk > 1 and st.has[k] and st.v[k] > 0:
            tot = np.bincount(cidx, weights=resid[in_k], minlength=gk)
            deff_k[k] = gk / (gk - 1) * np.sum(tot**2) / st.n[k] ** 2 / st.v[k]
    return _ClusterVariance(var, design_effect, clusters_k, deff_k)


def _interval(
    st: _Strata,
    estimate: float,
    se_interval: float,
    centre_shift: float,
    z: float,
    lo_k: np.ndarray,
    hi_k: np.ndarray,
    clustered: bool,
) -> tuple[float, float]:
    if np.isnan(estimate):
        return float("nan"), float("nan")
    if np.sum(st.used) == 1 and not clustered:
        k = int(np.flatnonzero(st.used)[0])
        return float(lo_k[k]), float(hi_k[k])
    centre = estimate + centre_shift
    return (
        float(np.clip(min(centre - z * se_interval, estimate), 0.0, 1.0)),
        float(np.clip(max(centre + z * se_interval, estimate), 0.0, 1.0)),
    )


def _stratum_table(
    counts: Counts,
    st: _Strata,
    contribution: np.ndarray,
    lo_k: np.ndarray,
    hi_k: np.ndarray,
    cv: _ClusterVariance | None,
) -> pd.DataFrame:
    total = st.n.sum()
    table = pd.DataFrame(
        {
            "successes": counts.successes.to_numpy(),
            "trials": counts.trials.to_numpy(),
            "rate": st.r,
            "se": np.sqrt(st.v),
            "lower": lo_k,
            "upper": hi_k,
            "weight": st.w,
            "sample_share": st.n / total if total > 0 else np.full(len(st.n), np.nan),
            "contribution": contribution,
        },
        index=st.labels,
    )
    if cv is not None:
        table["se"] = np.sqrt(st.v * np.nan_to_num(cv.deff_k, nan=1.0))
        table["n_clusters"] = cv.clusters_k
        table["design_effect"] = cv.deff_k
    return table


def _sqrt(var: float) -> float:
    return float(np.sqrt(var)) if np.isfinite(var) else float("nan")


def _stratum_bounds(st: _Strata, n_eff: np.ndarray, level: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-stratum interval bounds (NaN without trials); effective counts for clusters."""
    lo_k = np.full(len(st.labels), np.nan)
    hi_k = np.full(len(st.labels), np.nan)
    has = st.has
    if method == ADAPTIVE:
        if np.count_nonzero(has) < 2:
            raise ValueError(
                "method='adaptive' needs at least two strata with trials (each stratum's "
                f"interval borrows its prior from the others), got {int(np.count_nonzero(has))}; "
                "use method='clopper_pearson'"
            )
        iv = adaptive_interval(st.s.astype(np.int64), st.n.astype(np.int64), level=level)
        lo_k[has], hi_k[has] = iv.lower[has], iv.upper[has]
    elif np.any(has):
        lo_k[has], hi_k[has] = binomial_bounds(st.s[has] * (n_eff[has] / st.n[has]), n_eff[has], 1 - level, method)
    return lo_k, hi_k


def _estimate(
    counts: Counts,
    weights: Any,
    level: float,
    method: str,
    rows: _ClusterRows | None,
    stacklevel: int,
) -> StratifiedRisk:
    """The weighted risk, its SE and interval, with or without clustered rows."""
    st = _strata(counts, _resolve_weights(weights, counts))
    _warn_empty(st, stacklevel + 1)
    empty_used = bool(np.any(st.used & ~st.has))
    contribution = np.where(st.used, st.w * np.nan_to_num(st.r), 0.0)
    contribution = np.where(st.used & ~st.has, np.nan, contribution)
    estimate = (
        float("nan") if empty_used else float(np.clip(np.sum(contribution), 0.0, 1.0))
    )  # a convex combination of rates; rounding of the weights can pass 1
    terms = stratum_variance_terms(st.w, st.r, np.where(st.has, st.n, 1.0))
    var_ind = float("nan") if empty_used else float(np.sum(np.where(st.used & st.has, terms, 0.0)))
    z = float(stats.norm.isf((1 - level) / 2))
    zero_var, v_floor, centre_shift = _zero_variance_floor(st, z, stacklevel + 1)

    cv = None if rows is None else _cluster_variance(st, rows, var_ind)
    var = var_ind if cv is None else _cluster_var_or_floor(cv.var, var_ind, rows, stacklevel + 1)
    n_eff = st.n
    if cv is not None:
        deff = cv.deff_k
        n_eff = np.where(np.isfinite(deff) & (deff > 0), st.n / np.where(deff > 0, deff, 1), st.n)
    se_interval = _sqrt(var + v_floor)
    lo_k, hi_k = _stratum_bounds(st, n_eff, level, method)
    total = st.n.sum()
    return StratifiedRisk(
        estimate=estimate,
        se=_sqrt(var),
        se_interval=se_interval,
        ci=_interval(st, estimate, se_interval, centre_shift, z, lo_k, hi_k, cv is not None),
        unweighted=float(st.s.sum() / total) if total > 0 else float("nan"),
        table=_stratum_table(counts, st, contribution, lo_k, hi_k, cv),
        level=level,
        method=method,
        se_independent=_sqrt(var_ind),
        design_effect=None if cv is None else cv.design_effect,
        n_clusters=None if rows is None else rows.n_clusters,
        zero_variance=zero_var,
        metric=counts.metric,
    )


# -- public entry points -----------------------------------------------------------------------


def stratified_risk(
    successes: Any,
    trials: Any = None,
    weights: Mapping[Hashable, float] | Sequence[float] | pd.Series | None = None,
    *,
    level: float = 0.95,
    method: str = "wilson",
    strata: Any = None,
) -> StratifiedRisk:
    r"""Population-weighted risk :math:`\sum_k \pi_k \hat r_k` with SE, interval and table.

    Parameters
    ----------
    successes : array-like, Series or Counts
        Successes per stratum (e.g. errors), or a :class:`~bayeseval.Counts`.
    trials : array-like or Series, optional
        Trials per stratum (omit when passing Counts).
    weights : dict, Series or sequence, optional
        Population shares :math:`\pi_k`, keyed by stratum or in stratum order;
        they must sum to 1 (tolerance 1e-9) and match the strata. Defaults to
        ``Counts.weights``; with a single stratum, to 1.
    level : float
        Confidence level in (0, 1).
    method : str
        Interval method for the per-stratum bounds in ``table``
        (see :func:`~bayeseval.proportion_ci`); ``"adaptive"`` gives each
        stratum's adaptive interval, whose tail split comes from the other
        strata (at least two strata with trials; coverage >= ``level`` for every
        stratum, shorter than Clopper-Pearson when the strata are alike).
    strata : sequence, optional
        Stratum labels, one per stratum.

    Returns
    -------
    StratifiedRisk
        The population estimate, its SE and interval, the pooled (unweighted)
        rate and the per-stratum table.

    Warns
    -----
    ZeroVarianceWarning
        A stratum with positive weight has rate 0 or 1: its plug-in variance is
        0, which is not certainty. ``se`` keeps the plug-in value, but the
        interval uses ``se_interval``, which gives such strata the
        Agresti-Coull (Wilson-adjusted) variance and rate
        :math:`\tilde r = (s + z^2/2)/(n + z^2)`, so it does not collapse.
    EmptyStratumWarning
        A stratum with positive weight has no trials: the estimate is NaN.

    Notes
    -----
    The interval is normal, :math:`\hat R \pm z\,\widehat{SE}`, with the
    estimated SE; it is adequate when every stratum has a few dozen trials
    and rates away from 0 and 1. For small strata prefer the Bayesian
    posterior of :math:`\sum_k \pi_k \theta_k`.

    Examples
    --------
    >>> res = stratified_risk([26, 26], [286, 114], {"a": 0.8, "b": 0.2}, strata=["a", "b"])
    >>> round(res.estimate, 4), round(res.se, 4), round(res.unweighted, 4)
    (0.1183, 0.0157, 0.13)
    """
    level = check_level(level)
    method = normalise_method(method, adaptive=True)
    counts = as_counts(successes, trials, strata=strata)
    return _estimate(counts, weights, level, method, None, stacklevel=3)


def _clustered(
    outcomes: Any,
    trials: Any,
    weights: Any,
    strata: Any,
    cluster: Any,
    level: float,
    method: str,
    name: str,
) -> StratifiedRisk:
    """The estimate of :func:`clustered_risk` from per-row outcomes and cluster ids."""
    level = check_level(level)
    method = normalise_method(method, adaptive=True)
    if method == ADAPTIVE:
        raise ValueError(
            "method='adaptive' inverts exact binomial tests of whole counts; clustered rows "
            "give effective counts n / design effect, so it is not offered with clusters; "
            "use method='wilson' or 'clopper_pearson'"
        )
    if isinstance(outcomes, Counts):
        raise TypeError(f"clustered rows need row-level data: pass per-row 0/1 {name}, not a Counts object")
    if cluster is None:
        raise TypeError("cluster is required: give the cluster id of every row")
    counts, rows = _row_counts(outcomes, trials, strata, cluster, name)
    return _estimate(counts, weights, level, method, rows, stacklevel=4)


def clustered_risk(
    outcomes: Any,
    *,
    cluster: Any,
    strata: Any = None,
    weights: Mapping[Hashable, float] | Sequence[float] | pd.Series | None = None,
    trials: Any = None,
    level: float = 0.95,
    method: str = "wilson",
) -> StratifiedRisk:
    r"""Population-weighted risk of clustered rows, with a cluster-robust SE and design effect.

    Rows of one cluster (a document, a customer, a video) are dependent; treating them
    as independent understates the SE. The estimate is the same as
    :func:`stratified_risk` on the per-stratum counts of these rows; ``se`` is the
    cluster-robust SE and the result reports the design effect.

    Parameters
    ----------
    outcomes : array-like or Series
        One 0/1 (or boolean) outcome per row, e.g. 1 for an error.
    cluster : array-like or Series
        Cluster id of each row. Clusters may span strata.
    strata : array-like or Series, optional
        Stratum label of each row; all rows form one stratum when omitted.
    weights : dict, Series or sequence, optional
        Population shares :math:`\pi_k` of the strata (sorted labels when a
        sequence), summing to 1; may be omitted with a single stratum.
    trials : array-like or Series, optional
        A 0/1 trial indicator per row (default: every row is a trial); rows with
        0 do not count (e.g. negatives for recall). An outcome of 1 needs a trial.
    level : float
        Confidence level in (0, 1).
    method : str
        Interval method of the per-stratum bounds in ``table``, computed with the
        effective counts :math:`n_k / \mathrm{deff}_k` (so not ``"adaptive"``, which
        needs whole counts: ``ValueError``).

    Returns
    -------
    StratifiedRisk
        With ``design_effect``, ``n_clusters``, ``se_independent`` and per-stratum
        ``n_clusters`` and ``design_effect`` columns in ``table``. Series inputs are
        paired by index label.

    Notes
    -----
    The SE is the linearisation (ratio-estimator) sandwich: each row contributes
    :math:`e_i = \pi_k (y_i - \hat r_k t_i)/n_k`; with cluster totals
    :math:`E_c = \sum_{i \in c} e_i` over :math:`G` clusters,
    :math:`\widehat{Var} = G/(G-1) \sum_c E_c^2` (the CR1 cluster-robust variance of
    the stratum means; Cameron and Miller 2015, "A practitioner's guide to
    cluster-robust inference", J. Human Resources 50(2)). When every cluster has exactly its
    stratum's rate the sandwich is 0, which few clusters cannot tell from a real zero: the
    interval then uses the independent-rows SE (with a ``ZeroVarianceWarning``). Without clustering,
    :math:`\sum_i e_i^2` is exactly the plug-in variance, so ``design_effect`` =
    :math:`\widehat{Var}_{cluster} / \widehat{Var}_{indep}` (about
    :math:`1 + (m-1)\rho` for clusters of size m with intra-cluster correlation
    :math:`\rho`; Kish 1965, *Survey Sampling*).

    Examples
    --------
    >>> y = [1, 1, 0, 0, 0, 0, 1, 0]
    >>> res = clustered_risk(y, cluster=[0, 0, 1, 1, 2, 2, 3, 3])
    >>> res.estimate, res.n_clusters, round(res.design_effect, 3)
    (0.375, 4, 1.956)
    """
    return _clustered(outcomes, trials, weights, strata, cluster, level, method, "outcomes")
