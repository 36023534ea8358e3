r"""Stratified (population-weighted) estimates, row reweighting and clustered rows.

With population shares :math:`\pi_k` and per-stratum rates :math:`\hat r_k = s_k / n_k`, the
population risk is estimated by :math:`\hat R = \sum_k \pi_k \hat r_k`, whose variance is
:math:`\sum_k \pi_k^2 r_k (1 - r_k) / n_k` (the stratified estimator of a mean; Cochran 1977,
*Sampling Techniques*, 3rd ed., section 5.3). The pooled rate of the sample is a different
estimand (the risk at the test set's composition); results show it beside the weighted
estimate. Rows that come in clusters (documents, customers, videos) go to
:func:`clustered_risk`, which gives a cluster-robust SE and the design effect.
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
    missing_mask,
    short_repr,
)
from bayeseval._api.warnings import (
    EmptyStratumWarning,
    ReweightingWarning,
    ZeroVarianceWarning,
)
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.binomial import ADAPTIVE, binomial_bounds, normalise_method
from bayeseval._kernels.weighted_variance import stratum_variance_terms
from bayeseval._render.formats import fixed
from bayeseval.counts.counts import Counts, as_counts
from bayeseval.counts.metrics import Metric, get_metric
from bayeseval.estimate.intervals import proportion_ci

__all__ = [
    "StratifiedRisk",
    "stratified_risk",
    "clustered_risk",
    "reweight",
    "weighted_metric",
    "ReweightedMetrics",
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


# -- row reweighting ---------------------------------------------------------------------------


def _shares_series(weights: Any) -> pd.Series:
    if isinstance(weights, Mapping):
        ps = pd.Series(dict(weights), dtype=float)
    elif isinstance(weights, pd.Series):
        ps = weights.astype(float)
    else:
        raise TypeError(
            "weights must be a dict or Series keyed by stratum "
            f"(or a number, the positive share, when strata is None), got {short_repr(weights)}"
        )
    check_weights(ps, ps.index, name="weights")
    return ps


def reweight(strata: Any, weights: Mapping[Hashable, float] | pd.Series) -> np.ndarray:
    r"""Row weights that undo over- or under-sampling: population share / sample share.

    Row :math:`i` in stratum :math:`k` gets :math:`w_i = \pi_k / (n_k / N)`,
    so the weighted rows have the population composition (for a binary label
    with population positive share :math:`\pi` and test share :math:`\pi_t`:
    :math:`w_+ = \pi/\pi_t`, :math:`w_- = (1-\pi)/(1-\pi_t)`). The weights
    average 1 over the rows.

    Parameters
    ----------
    strata : array-like
        Stratum label of each row.
    weights : dict or Series
        Population share of each stratum, summing to 1 (tolerance 1e-9).
        Every stratum present in the rows needs a share; a stratum with a
        positive share must have rows.

    Returns
    -------
    numpy.ndarray
        One weight per row.

    Examples
    --------
    >>> reweight(["pos", "pos", "neg", "neg"], {"pos": 0.1, "neg": 0.9}).tolist()
    [0.2, 0.2, 1.8, 1.8]
    """
    ps = _shares_series(weights)
    st = as_row_array(strata)
    if st.ndim != 1 or st.size == 0:
        raise ValueError(f"strata must be a non-empty 1-D array of row labels, got shape {st.shape}")
    check_no_missing(st, "strata", hint="every row needs a stratum; drop or fill them first")
    codes, uniq = pd.factorize(st, sort=True)
    missing = [u for u in uniq if u not in ps.index]
    if missing:
        raise ValueError(f"weights has no share for strata {short_repr(missing[:5])} found in the rows")
    present = set(uniq)
    absent = [k for k, v in ps.items() if v > 0 and k not in present]
    if absent:
        raise ValueError(
            f"weights gives positive shares to strata {absent[:5]} that have no rows; reweighting cannot represent them"
        )
    sample_share = np.bincount(codes) / st.size
    pi = ps.reindex(pd.Index(uniq)).to_numpy()
    return (pi / sample_share)[codes]


def _rows_without_missing(
    columns: dict[str, Any], arrays: list[np.ndarray | None], dropna: bool
) -> list[np.ndarray | None]:
    """Refuse (or, with ``dropna``, drop) rows with a missing value in any of ``columns``.

    ``columns`` holds the inputs as given (named), ``arrays`` the same rows as
    NumPy arrays; the arrays are returned, without the dropped rows.
    """
    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {short_repr(dropna)}")
    if not dropna:
        for name, value in columns.items():
            if value is not None:
                check_no_missing(value, name, hint="drop or fill them first, or pass dropna=True")
        return arrays
    keep = None
    for value in columns.values():
        if value is not None:
            ok = ~missing_mask(value)
            keep = ok if keep is None else keep & ok
    if keep is None or keep.all():
        return arrays
    if not keep.any():
        raise ValueError(f"every row has a missing value in {', '.join(columns)}; nothing is left after dropna")
    return [None if a is None else a[keep] for a in arrays]


@dataclass(frozen=True, eq=False, repr=False)
class ReweightedMetrics(Result):
    """Metrics computed on the rows as sampled (unweighted) and reweighted to the population.

    Attributes
    ----------
    report : pandas.DataFrame
        Indexed by metric, two columns ``unweighted`` and ``reweighted``;
        ``reweighted`` is the population estimate.
    table : pandas.DataFrame
        ``report`` plus ``trials`` (real trial count), ``se_unweighted`` and
        ``se_reweighted`` (linearised SE of the weighted ratio, which is set by
        the real counts; weights do not add information), and ``lower``,
        ``upper``: a normal interval for the reweighted value.
    row_weights : numpy.ndarray
        The row weights (population share / sample share of each row's stratum).
    composition : pandas.DataFrame
        Per stratum: population_share, sample_share, weight.
    """

    title = "Metrics unweighted (test-set composition) | reweighted (population estimate)"

    report: pd.DataFrame
    table: pd.DataFrame = field()  # explicit: the inherited ``Result.table`` is no default
    row_weights: np.ndarray = field()
    composition: pd.DataFrame = field()

    def summary(self) -> pd.DataFrame:
        """The two-column report (unweighted | reweighted).

        Returns
        -------
        pandas.DataFrame
            :attr:`report`.
        """
        return self.report

    def __repr__(self) -> str:
        return f"{self._heading()}:\n" + self.table.to_string(float_format=fixed)


def weighted_metric(
    data: Any = None,
    y_pred: Any = None,
    *,
    y_true: Any = None,
    strata: Any = None,
    weights: Mapping[Hashable, float] | pd.Series | float,
    metric: str | Metric | Sequence[str | Metric] = ("recall", "precision"),
    pos_label: Any = 1,
    level: float = 0.95,
    dropna: bool = False,
) -> ReweightedMetrics:
    r"""Any metric on the rows as sampled and reweighted to the population composition.

    Two forms, as the neighbouring functions: a frame and column names,
    ``weighted_metric(df, y_true="label", y_pred="pred", strata="group", weights=...)``
    (as :func:`bayeseval.tabulate` and :func:`bayeseval.evaluate`), or the rows' values,
    ``weighted_metric(y_true_values, y_pred_values, weights=...)``.

    Parameters
    ----------
    data : pandas.DataFrame or array-like, optional
        The rows, with ``y_true``, ``y_pred`` and ``strata`` naming its columns. Anything
        else is the true labels themselves (the array form; then ``y_true`` is not given).
    y_pred : str or array-like
        The column of predicted labels (with ``data`` a frame), or the predicted labels,
        one per row.
    y_true : str or array-like, optional
        The column of true labels (with ``data`` a frame), or the true labels when
        ``data`` is not given. pandas Series (and ``strata`` as a Series) are paired by
        index label, in the order of ``y_true``; their indexes must hold the same labels.
    strata : str, list of str or array-like, optional
        Stratum of each row (e.g. a group, or the true label): with ``data`` a frame, a
        column name or a list of them (strata are then tuples of their values, the keys
        of ``weights``); else one label per row. When None, ``weights`` must be a number:
        the population share of the positive class, and the strata are the true label
        (positive / not).
    weights : dict, Series or float
        Population share per stratum (summing to 1), or the positive share.
    metric : str, Metric or list of them
        Metrics from :mod:`bayeseval.counts.metrics` (``recall``, ``precision``,
        ``error_rate``, ``accuracy``, ``fpr``, ``specificity``, ``npv``).
    pos_label : optional
        The positive class.
    level : float
        Level of the normal interval of the reweighted value in ``table``
        (``lower``, ``upper``: reweighted -/+ z se_reweighted, clipped to [0, 1]).
    dropna : bool, default False
        A missing ``y_true``, ``y_pred`` or ``strata`` (NaN, None, pd.NA, NaT)
        is an error naming the argument and the rows. With ``dropna=True``
        such rows are dropped first (``row_weights`` then has one entry per kept row).

    Returns
    -------
    ReweightedMetrics
        ``report`` has columns ``unweighted`` and ``reweighted``; the
        reweighted column is the population estimate.

    Warns
    -----
    ReweightingWarning
        When the sample composition differs from the population by more than one
        percentage point in some stratum: pooled (unweighted) numbers then do not
        describe the population.

    Notes
    -----
    A weighted rate is :math:`\sum_i w_i t_i y_i / \sum_i w_i t_i` with trial
    indicator :math:`t_i`, success indicator :math:`y_i` and row weights from
    :func:`reweight`. Its SE (``table['se_reweighted']``) is the stratified
    linearisation: with :math:`z_i = w_i (y_i - \hat r t_i) / \sum_j w_j t_j`,
    :math:`\widehat{Var} = \sum_k \sum_{i \in k} (z_i - \bar z_k)^2`; for an error
    rate with group strata it equals the plug-in SE of :func:`stratified_risk`. Reweighting
    by the true label leaves recall and FPR unchanged (their trials are within
    one label) and changes precision and NPV.

    Examples
    --------
    Half the rows are positive, against 10% of the population: the function says that the
    unweighted column does not describe the population.

    >>> import warnings
    >>> y = [1, 1, 1, 1, 0, 0, 0, 0]
    >>> p = [1, 1, 1, 0, 1, 0, 0, 0]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     r = weighted_metric(y, p, weights=0.1, metric="precision")
    >>> [w.category.__name__ for w in caught]
    ['ReweightingWarning']
    >>> r.report.round(3).loc["precision"].tolist()
    [0.75, 0.25]

    The same rows as a frame, named by column:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"label": y, "pred": p})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     r = weighted_metric(df, y_true="label", y_pred="pred", weights=0.1, metric="precision")
    >>> r.report.round(3).loc["precision"].tolist()
    [0.75, 0.25]
    """
    level = check_level(level)
    y_true, y_pred, strata = _metric_inputs(data, y_true, y_pred, strata)
    yt, yp, strata = _metric_rows(y_true, y_pred, strata, dropna)
    strata_arr, shares = _row_strata_and_shares(yt, strata, weights, pos_label)
    w = reweight(strata_arr, shares)  # type: ignore[arg-type]
    composition, codes = _composition(strata_arr, shares)
    metrics = [metric] if isinstance(metric, (str, Metric)) else list(metric)
    if not metrics:
        raise ValueError("metric is empty; give at least one metric name")
    rows = {}
    for m in metrics:
        mm = get_metric(m)
        rows[mm.name] = _reweighted_row(mm, yt, yp, pos_label, w, codes)
    table = _metrics_table(rows, level)
    report = table[["unweighted", "reweighted"]].copy()
    report.attrs["population_estimate"] = "reweighted"
    report.attrs["note"] = (
        "unweighted: the rows as sampled (test-set composition); "
        "reweighted: population share / sample share row weights, the population estimate"
    )
    return ReweightedMetrics(report=report, table=table, row_weights=w, composition=composition)


def _metrics_table(rows: dict[str, dict[str, float]], level: float) -> pd.DataFrame:
    """Per metric: unweighted, reweighted, trials, both SEs and the reweighted normal interval."""
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "metric"
    table = table[["unweighted", "reweighted", "trials", "se_unweighted", "se_reweighted"]]
    z = float(stats.norm.isf((1 - level) / 2))
    table["lower"] = (table["reweighted"] - z * table["se_reweighted"]).clip(0.0, 1.0)
    table["upper"] = (table["reweighted"] + z * table["se_reweighted"]).clip(0.0, 1.0)
    return table


def _frame_column(data: pd.DataFrame, column: Any, name: str) -> pd.Series:
    """The column ``column`` of ``data``, refused with a message naming the argument."""
    try:
        known = column in data.columns
    except TypeError:  # an unhashable value: an array where a column name belongs
        known = False
    if not known:
        raise ValueError(
            f"{name} must name a column of data, got {short_repr(column)} (columns: "
            f"{list(map(str, data.columns))[:10]})"
        )
    return data[column]


def _frame_strata(data: pd.DataFrame, strata: Any) -> pd.Series | None:
    """The strata of a frame's rows: one column's values, or tuples of several columns' values."""
    if strata is None:
        return None
    if not isinstance(strata, (list, tuple)):
        return _frame_column(data, strata, "strata")
    cols = [_frame_column(data, c, "strata") for c in strata]
    if not cols:
        raise ValueError("strata must name at least one column of data, got []")
    if len(cols) == 1:
        return cols[0]
    keys = pd.Series(list(zip(*cols, strict=True)), index=data.index, dtype=object)
    keys[pd.concat(cols, axis=1).isna().any(axis=1).to_numpy()] = None  # missing in any column
    return keys


def _metric_inputs(data: Any, y_true: Any, y_pred: Any, strata: Any) -> tuple[Any, Any, Any]:
    """``(y_true, y_pred, strata)`` as rows, from a frame and column names or from arrays."""
    if isinstance(data, pd.DataFrame):
        if y_true is None or y_pred is None:
            missing = "y_true" if y_true is None else "y_pred"
            raise TypeError(
                f"{missing} is required: with data a DataFrame, name its column of "
                f"{'true' if missing == 'y_true' else 'predicted'} labels"
            )
        return (
            _frame_column(data, y_true, "y_true"),
            _frame_column(data, y_pred, "y_pred"),
            _frame_strata(data, strata),
        )
    if data is not None and y_true is not None:
        raise TypeError(
            f"data must be a pandas DataFrame when y_true is given, got "
            f"{type(data).__name__}; pass the true labels as y_true or as the first argument"
        )
    y_true = data if data is not None else y_true
    for name, value in (("y_true", y_true), ("y_pred", y_pred)):
        if value is None:
            raise TypeError(f"{name} is required (an array of labels, or a column of data)")
        if isinstance(value, str):
            raise TypeError(f"{name}={value!r} names a column, so data must be the DataFrame holding it")
    return y_true, y_pred, strata


def _metric_rows(y_true: Any, y_pred: Any, strata: Any, dropna: bool) -> list[np.ndarray | None]:
    """Validated row arrays of ``y_true``, ``y_pred`` and ``strata`` (paired by label)."""
    y_true, y_pred, strata = align_by_label(("y_true", y_true), ("y_pred", y_pred), ("strata", strata))
    yt = as_row_array(y_true)
    yp = as_row_array(y_pred)
    if yt.ndim != 1 or yt.size == 0:
        raise ValueError(f"y_true must be a non-empty 1-D array, got shape {yt.shape}")
    if yp.shape != yt.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {yt.shape} and {yp.shape}")
    st = None
    if strata is not None:
        st = as_row_array(strata)
        if st.shape != yt.shape:
            raise ValueError(f"strata must give one label per row ({yt.size}), got shape {st.shape}")
    return _rows_without_missing({"y_true": y_true, "y_pred": y_pred, "strata": strata}, [yt, yp, st], dropna)


def _row_strata_and_shares(yt: np.ndarray, strata: Any, weights: Any, pos_label: Any) -> tuple[np.ndarray, Any]:
    """Stratum of each row and the population shares; without strata, positive / negative."""
    if strata is not None:
        return strata, weights
    if isinstance(weights, bool) or not isinstance(weights, (int, float)):
        raise TypeError(
            "strata is None, so weights must be the population share of the positive "
            f"class (a number), got {short_repr(weights)}"
        )
    pi = float(weights)
    if not (0.0 < pi < 1.0):
        raise ValueError(f"weights (the positive share) must be in (0, 1), got {pi!r}")
    return np.where(yt == pos_label, "positive", "negative"), {"positive": pi, "negative": 1.0 - pi}


def _composition(strata: np.ndarray, shares: Any) -> tuple[pd.DataFrame, np.ndarray]:
    """Population and sample share per stratum (warning when they differ); stratum codes."""
    ps = _shares_series(shares)
    codes, uniq = pd.factorize(strata, sort=True)
    sample = pd.Series(np.bincount(codes) / strata.size, index=pd.Index(uniq, name="stratum"))
    pop = ps.reindex(sample.index)
    gaps = np.abs(pop.to_numpy() - sample.to_numpy())
    if float(np.max(gaps)) > 0.01:
        worst = sample.index[int(np.argmax(gaps))]
        warnings.warn(
            f"the sample composition differs from the population (stratum {worst!r}: sample share "
            f"{sample[worst]:.3g} vs population share {pop[worst]:.3g}); unweighted numbers describe "
            "the test set, the reweighted column is the population estimate",
            ReweightingWarning,
            stacklevel=4,
        )
    frame = pd.DataFrame({"population_share": pop, "sample_share": sample, "weight": pop / sample})
    return frame, codes


def _reweighted_row(
    mm: Metric, yt: np.ndarray, yp: np.ndarray, pos_label: Any, w: np.ndarray, codes: np.ndarray
) -> dict[str, float]:
    """One metric unweighted and reweighted, with the linearised SE of the weighted ratio."""
    trial, success = mm.masks(yt, yp, pos_label)
    t = trial.astype(float)
    y = success.astype(float)
    nt = t.sum()
    if nt == 0:
        warnings.warn(f"{mm.name} has no trials in these rows: its value is NaN", EmptyStratumWarning, stacklevel=4)
        return dict(trials=0, unweighted=np.nan, reweighted=np.nan, se_unweighted=np.nan, se_reweighted=np.nan)
    ru = y.sum() / nt
    wt = (w * t).sum()
    rw = se_w = np.nan
    if wt > 0:
        rw = (w * y).sum() / wt
        lin = w * (y - rw * t) / wt  # linearised ratio, centred within strata
        lin_mean = np.bincount(codes, weights=lin) / np.bincount(codes)
        se_w = float(np.sqrt(np.sum((lin - lin_mean[codes]) ** 2)))
    return dict(
        trials=int(nt),
        unweighted=ru,
        reweighted=rw,
        se_unweighted=np.sqrt(ru * (1 - ru) / nt),
        se_reweighted=se_w,
    )
