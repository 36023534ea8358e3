"""Sample sizes: trials for a target precision on one rate, rows for several metrics at once,
rows for K subgroups, and the standard errors and half-widths a number of trials gives.

* :func:`sample_size` -- trials needed for a target standard error or half-width on one rate
  (normal formula, or a search over Wilson or Clopper-Pearson intervals);
* :func:`achieved_halfwidth` -- the half-width that :func:`sample_size` inverts;
* :func:`sample_size_multi` -- several metrics at once (the maximum of the rows each needs);
* :func:`subgroup_rows` -- K subgroups each needing ``n_min`` minority rows;
* :func:`se_for`, :func:`halfwidth_table` -- the SE and half-widths of given trial counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bayeseval._api.results import OneRowResult, Result
from bayeseval._api.validation import (
    align_by_label,
    as_float_array,
    check_count_limit,
    check_level,
    check_method,
    check_not_bool,
    check_positive_int,
    check_positive_real,
    check_probability,
    is_pandas,
    short_repr,
)
from bayeseval._kernels.sizing import ceil_count, normal_quantile
from bayeseval.counts.metrics import get_metric

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "sample_size",
    "achieved_halfwidth",
    "sample_size_multi",
    "MultiPlan",
    "subgroup_rows",
    "SubgroupPlan",
    "se_for",
    "halfwidth_table",
]

_SIZE_METHODS = ("normal", "wilson", "clopper_pearson")


def _check_rate(rate: Any, name: str = "rate") -> float:
    return check_probability(rate, name)


def _halfwidth_continuous(n: np.ndarray, rate: float, z: float, method: str) -> np.ndarray:
    """Planning half-width of the interval at ``x = rate * n`` (x treated as real)."""
    n = np.asarray(n, dtype=float)
    if method == "normal":
        return z * np.sqrt(rate * (1.0 - rate) / n)
    if method == "wilson":
        # (upper - lower) / 2 of the Wilson score interval at p_hat = rate
        return z * np.sqrt(n * rate * (1.0 - rate) + z * z / 4.0) / (n + z * z)
    # Clopper-Pearson with x = rate * n: Beta quantiles, which for integer x
    # are exactly the exact interval; closed forms at x = 0 and x = n.
    from scipy import special  # deferred: the other methods need no SciPy

    # the Beta quantile B(q; a, b) is betaincinv(a, b, q), as in scipy.stats.beta.ppf
    alpha = 2.0 * float(special.ndtr(-z))
    x = rate * n
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(x > 0, special.betaincinv(np.maximum(x, 1e-300), n - x + 1.0, alpha / 2.0), 0.0)
        upper = np.where(x < n, special.betaincinv(x + 1.0, np.maximum(n - x, 1e-300), 1.0 - alpha / 2.0), 1.0)
    return (upper - lower) / 2.0


def achieved_halfwidth(
    trials: Any, *, rate: float | None = None, level: float = 0.95, method: str = "normal"
) -> float | np.ndarray:
    r"""Planning half-width of a ``level`` interval for a rate from ``trials`` trials.

    This is the quantity :func:`sample_size` inverts. The interval is taken at
    the planning rate with :math:`x = r n` successes treated as a real number:

    * ``"normal"``: :math:`z\sqrt{r(1-r)/n}`;
    * ``"wilson"``: :math:`z\sqrt{n r(1-r) + z^2/4}\,/\,(n + z^2)`, half the
      width of the Wilson score interval at :math:`\hat p = r`;
    * ``"clopper_pearson"``: half the distance between the Beta quantiles
      :math:`B(\alpha/2;\, x, n-x+1)` and :math:`B(1-\alpha/2;\, x+1, n-x)`,
      which is the exact interval whenever :math:`r n` is a whole number
      (lower bound 0 at :math:`x = 0`, upper bound 1 at :math:`x = n`).

    Treating :math:`x` as real makes the half-width a smooth, decreasing
    function of :math:`n`; with integer successes it zig-zags as :math:`r n`
    crosses whole numbers.

    Parameters
    ----------
    trials : int or array-like
        Number of trials (positive).
    rate : float, optional
        Planning rate in [0, 1]; None means the conservative 0.5.
    level : float, default 0.95
        Confidence level.
    method : {"normal", "wilson", "clopper_pearson"}
        Interval the half-width belongs to.

    Returns
    -------
    float or numpy.ndarray
        The half-width, one per value of ``trials``.

    Examples
    --------
    >>> round(achieved_halfwidth(100, rate=0.9), 4)
    0.0588
    """
    level = check_level(level)
    method = check_method(method, _SIZE_METHODS)
    rate = 0.5 if rate is None else _check_rate(rate)
    n = as_float_array(trials, "trials")
    if n.size == 0 or not np.all(np.isfinite(n)) or np.any(n <= 0):
        raise ValueError(f"trials must be positive finite numbers, got {short_repr(trials)}")
    out = _halfwidth_continuous(n, rate, normal_quantile(level), method)
    return float(out) if out.ndim == 0 else out


def sample_size(
    *,
    se: float | None = None,
    halfwidth: float | None = None,
    rate: float | None = None,
    level: float = 0.95,
    method: str = "normal",
) -> int:
    r"""Trials needed for a target standard error or half-width on one rate.

    Normal formula, rounded up:

    .. math::

        n \ge \frac{r(1-r)}{s^2} \quad\text{(target SE } s\text{)}, \qquad
        n \ge \frac{z^2\, r(1-r)}{e^2} \quad\text{(target half-width } e\text{)},

    with :math:`z = \Phi^{-1}((1+\text{level})/2)` (1.959964 at 95%) and
    :math:`r = 1/2` (the conservative :math:`r(1-r) = 1/4`) when no planning
    rate is given. Floating-point noise is ignored when rounding up
    (:func:`bayeseval._kernels.sizing.ceil_count`).

    ``method="wilson"`` or ``"clopper_pearson"`` returns instead the smallest
    :math:`n` whose interval at the planning rate has half-width
    :math:`\le e` (see :func:`achieved_halfwidth` for the definition, which
    treats :math:`x = r n` as real so that the half-width decreases with
    :math:`n`), found by doubling and integer bisection. Near 0 or 1 the
    normal formula underestimates; these methods do not. A target ``se`` with
    these methods means a half-width of :math:`z s`.

    Parameters
    ----------
    se : float, optional
        Target standard error, in (0, 0.5]. Give exactly one of ``se`` and ``halfwidth``.
    halfwidth : float, optional
        Target half-width of the ``level`` interval, in (0, 1).
    rate : float, optional
        Planning rate. None means the conservative 0.5. The normal method needs
        a rate strictly between 0 and 1.
    level : float, default 0.95
        Confidence level.
    method : {"normal", "wilson", "clopper_pearson"}, default "normal"
        The normal formula, or a search over Wilson or Clopper-Pearson intervals.

    Returns
    -------
    int
        Number of trials (for recall: actual positives; for precision:
        predicted positives; see :func:`sample_size_multi` for rows).

    Examples
    --------
    >>> sample_size(se=0.03)
    278
    >>> sample_size(halfwidth=0.05, rate=0.7)
    323
    >>> sample_size(halfwidth=0.05, rate=0.97, method="wilson") > sample_size(halfwidth=0.05, rate=0.97)
    True
    """
    _check_one_target(se, halfwidth)
    level = check_level(level)
    method = check_method(method, _SIZE_METHODS)
    z = normal_quantile(level)
    target, e = _target_halfwidth(se, halfwidth, z)
    r = 0.5 if rate is None else _check_rate(rate)
    if method == "normal":
        if r in (0.0, 1.0):
            raise ValueError(
                f"rate must be strictly between 0 and 1 for the normal method (its SE is 0 at "
                f"rate={r!r}); use method='wilson' or 'clopper_pearson'"
            )
        v = r * (1.0 - r)
        need = v / target**2 if se is not None else z * z * v / e**2
        return max(1, ceil_count(need))
    return _smallest_trials(r, z, e, method)


def _check_one_target(se: Any, halfwidth: Any) -> None:
    if (se is None) == (halfwidth is None):
        raise ValueError(f"give exactly one of se and halfwidth, got se={se!r} and halfwidth={halfwidth!r}")


def _target_halfwidth(se: Any, halfwidth: Any, z: float) -> tuple[float, float]:
    """The validated target (``se`` or ``halfwidth``) and the half-width it means."""
    if se is not None:
        target = check_positive_real(se, "se")
        if target > 0.5:
            raise ValueError(f"se must be at most 0.5 (the largest SE of one Bernoulli trial), got {target!r}")
        return target, z * target
    target = check_positive_real(halfwidth, "halfwidth")
    if target >= 1:
        raise ValueError(f"halfwidth must be below 1, got {target!r}")
    return target, target


def _smallest_trials(r: float, z: float, e: float, method: str) -> int:
    """Smallest n whose planning half-width is at most ``e``: doubling, then integer bisection."""

    def ok(n: int) -> bool:
        return bool(_halfwidth_continuous(np.array(float(n)), r, z, method) <= e * (1.0 + 1e-12))

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > 2**40:  # pragma: no cover - only for absurd targets
            raise ValueError(f"halfwidth {e!r} is not reachable with {method} intervals")
    if hi == 1:
        return 1
    lo = hi // 2  # ok(lo) is False
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------
# Several metrics, subgroups
# ---------------------------------------------------------------------------

_TRIAL_SHARE = {
    "all": ("every row", lambda prev, ppr: 1.0),
    "true_pos": ("actual positives", lambda prev, ppr: prev),
    "true_neg": ("true negatives", lambda prev, ppr: None if prev is None else 1.0 - prev),
    "pred_pos": ("predicted positives", lambda prev, ppr: ppr),
    "pred_neg": ("predicted negatives", lambda prev, ppr: None if ppr is None else 1.0 - ppr),
}


@dataclass(frozen=True, repr=False)
class MultiPlan(Result):
    """Outcome of :func:`sample_size_multi`.

    Attributes
    ----------
    rows : int
        Rows needed so that every metric meets its target (the maximum).
    binding : str
        The metric that sets ``rows``.
    table : pandas.DataFrame
        Per metric: planning rate, target half-width, trials needed, what the
        trials are, the share of rows that are trials, and rows needed.
    """

    rows: int
    binding: str
    table: pd.DataFrame = field(repr=False)


def sample_size_multi(
    metrics: Mapping[str, float | None],
    *,
    halfwidth: float | Mapping[str, float] | None = None,
    se: float | Mapping[str, float] | None = None,
    prevalence: float | None = None,
    predicted_positive_rate: float | None = None,
    level: float = 0.95,
    method: str = "normal",
) -> MultiPlan:
    r"""Rows needed to estimate several metrics at once: plan each, take the maximum.

    Each metric's trials are a share :math:`q` of the rows:
    every row for accuracy and error rate, the actual positives for recall
    (:math:`q` = prevalence), the true negatives for specificity and FPR, the
    predicted positives for precision (:math:`q` = predicted-positive rate,
    which depends on the threshold), the predicted negatives for NPV. A metric
    needing :math:`n` trials needs :math:`\lceil n / q \rceil` rows, and the
    plan is the maximum over metrics.

    Parameters
    ----------
    metrics : mapping of metric name to planning rate
        E.g. ``{"recall": 0.7, "precision": 0.8}``; a rate of None means the
        conservative 0.5. Names as in :func:`bayeseval.get_metric`.
    halfwidth, se : float or mapping, optional
        Target, common to all metrics or per metric name. Give exactly one.
    prevalence : float, optional
        Share of rows that are actual positives; needed for recall, specificity, FPR.
    predicted_positive_rate : float, optional
        Share of rows predicted positive; needed for precision and NPV.
    level : float, default 0.95
        Confidence level of the half-widths.
    method : {"normal", "wilson", "clopper_pearson"}, default "normal"
        How trials are planned (see :func:`sample_size`).

    Returns
    -------
    MultiPlan
        ``rows`` (the maximum over metrics), the ``binding`` metric and the
        per-metric ``table``.

    Examples
    --------
    >>> plan = sample_size_multi({"recall": 0.7, "precision": 0.8}, halfwidth=0.05,
    ...                          prevalence=0.1, predicted_positive_rate=0.08)
    >>> plan.rows, plan.binding
    (3230, 'recall')
    """
    if not isinstance(metrics, Mapping) or len(metrics) == 0:
        raise TypeError(
            f"metrics must be a non-empty mapping of metric name to planning rate, got {short_repr(metrics)}"
        )
    _check_one_target(se, halfwidth)
    if prevalence is not None:
        prevalence = check_probability(prevalence, "prevalence", open_interval=True)
    if predicted_positive_rate is not None:
        predicted_positive_rate = check_probability(
            predicted_positive_rate, "predicted_positive_rate", open_interval=True
        )
    rows = [
        _metric_plan(
            key,
            rate,
            _pick_target(se, key, "se"),
            _pick_target(halfwidth, key, "halfwidth"),
            prevalence,
            predicted_positive_rate,
            level,
            method,
        )
        for key, rate in metrics.items()
    ]
    import pandas as pd  # deferred: fast start-up

    table = pd.DataFrame(rows).set_index("metric")
    table = table.drop(columns=["se"] if se is None else ["halfwidth"])
    binding = str(table["rows"].idxmax())
    return MultiPlan(rows=int(table["rows"].max()), binding=binding, table=table)


def _pick_target(target: Any, key: str, name: str) -> float | None:
    """The target of metric ``key``: common to all metrics or per metric name."""
    if target is None:
        return None
    if isinstance(target, Mapping):
        if key not in target:
            raise ValueError(f"{name} has no target for metric {key!r}; got keys {list(target)}")
        return target[key]
    return target


def _metric_plan(
    key: str,
    rate: Any,
    t_se: Any,
    t_hw: Any,
    prevalence: float | None,
    predicted_positive_rate: float | None,
    level: float,
    method: str,
) -> dict[str, Any]:
    """One row of :func:`sample_size_multi`'s table."""
    m = get_metric(key)
    what, share_fn = _TRIAL_SHARE[m.trials]
    q = share_fn(prevalence, predicted_positive_rate)
    if q is None:
        needed = "prevalence" if m.trials in ("true_pos", "true_neg") else "predicted_positive_rate"
        raise ValueError(f"metric {key!r} counts {what} as trials: give {needed}")
    n = sample_size(se=t_se, halfwidth=t_hw, rate=rate, level=level, method=method)
    return {
        "metric": m.name,
        "rate": 0.5 if rate is None else float(rate),
        "se": t_se,
        "halfwidth": t_hw,
        "trials": n,
        "trials_are": what,
        "trial_share": float(q),
        "rows": ceil_count(n / q),
    }


@dataclass(frozen=True, repr=False)
class SubgroupPlan(OneRowResult):
    r"""Outcome of :func:`subgroup_rows`: minority rows and total rows needed.

    Attributes
    ----------
    minority_rows : int
        Minority rows needed, :math:`K n_{\min}`.
    total_rows : int
        Rows needed at the minority share, :math:`\lceil K n_{\min} / \pi \rceil`.
    n_min : int
        Minority rows each subgroup needs.
    n_groups : int
        Number of subgroups K.
    share : float
        Minority share of all rows (a scalar, not population shares of strata).
    """

    minority_rows: int
    total_rows: int
    n_min: int
    n_groups: int
    share: float


def subgroup_rows(n_min: int, n_groups: int, share: float) -> SubgroupPlan:
    r"""Rows needed when each of K subgroups needs ``n_min`` minority rows.

    .. math::

        n^+ = K\, n_{\min}, \qquad N = \lceil K\, n_{\min} / \pi \rceil,

    where :math:`\pi` is the minority (e.g. positive) share of the rows.

    Parameters
    ----------
    n_min : int
        Minority rows each subgroup needs (e.g. from :func:`sample_size`).
    n_groups : int
        Number of subgroups K.
    share : float
        Minority share of all rows, in (0, 1] (one number: the share of the
        minority class, not population shares of strata).

    Returns
    -------
    SubgroupPlan
        ``minority_rows`` and ``total_rows``.

    Examples
    --------
    >>> plan = subgroup_rows(323, 8, 0.004)   # 8 groups x 323 positives at share 0.4%
    >>> plan.minority_rows, plan.total_rows
    (2584, 646000)
    """
    n_min = check_positive_int(n_min, "n_min")
    n_groups = check_positive_int(n_groups, "n_groups")
    share = check_probability(share, "share")
    if share == 0:
        raise ValueError(f"share must be positive, got {share!r}")
    minority = n_groups * n_min
    return SubgroupPlan(
        minority_rows=minority,
        total_rows=ceil_count(minority / share),
        n_min=n_min,
        n_groups=n_groups,
        share=share,
    )


def se_for(rate: Any, trials: Any) -> float | np.ndarray:
    r"""Standard error :math:`\sqrt{r(1-r)/n}` of a rate from ``trials`` trials.

    Parameters
    ----------
    rate : float, array-like or pandas.Series
        Rate(s) in [0, 1].
    trials : int, array-like or pandas.Series
        Trial count(s), positive; broadcast against ``rate``. Two Series are
        paired by index label (in the order of ``rate``).

    Returns
    -------
    float, numpy.ndarray or pandas.Series
        A Series (index kept) when an input is a Series.

    Examples
    --------
    >>> round(se_for(0.7, 2000), 4)   # recall 0.70 on 2000 positives
    0.0102
    """
    rate, trials = align_by_label(("rate", rate), ("trials", trials))
    like = rate if is_pandas(rate, "Series") else trials if is_pandas(trials, "Series") else None
    check_not_bool(rate, "rate", "rates")
    check_not_bool(trials, "trials")
    r = as_float_array(rate, "rate")
    n = as_float_array(trials, "trials")
    if r.size == 0 or not np.all(np.isfinite(r)) or np.any((r < 0) | (r > 1)):
        raise ValueError(f"rate must be between 0 and 1, got {short_repr(rate)}")
    if n.size == 0 or not np.all(np.isfinite(n)) or np.any(n <= 0):
        raise ValueError(f"trials must be positive, got {short_repr(trials)}")
    out = np.sqrt(r * (1 - r) / n)
    if like is not None and out.shape == (len(like),):
        import pandas as pd  # deferred: fast start-up (already loaded: an input is a Series)

        return pd.Series(out, index=like.index, name="se")
    return float(out) if out.ndim == 0 else out


def halfwidth_table(
    rate: float, trials: Any, *, level: float = 0.95, methods: Any = ("normal", "wilson")
) -> pd.DataFrame:
    """SE and interval half-widths of one rate at several trial counts.

    Parameters
    ----------
    rate : float
        The rate (planning value).
    trials : array-like of int
        Trial counts to tabulate.
    level : float, default 0.95
        Confidence level of the half-widths.
    methods : sequence of str
        Half-width columns to add (see :func:`achieved_halfwidth`).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``trials``, columns ``se`` and ``halfwidth_<method>``.

    Examples
    --------
    >>> halfwidth_table(0.9, [100, 1000, 10000])["halfwidth_normal"].round(3).tolist()
    [0.059, 0.019, 0.006]
    """
    rate = _check_rate(rate)
    check_not_bool(trials, "trials")
    check_count_limit(trials, "trials")
    n = np.atleast_1d(as_float_array(trials, "trials"))
    import pandas as pd  # deferred: fast start-up

    table = pd.DataFrame({"se": np.atleast_1d(se_for(rate, n))}, index=pd.Index(n.astype(int), name="trials"))
    if isinstance(methods, str):
        methods = [methods]
    for m in methods:
        table[f"halfwidth_{m}"] = np.atleast_1d(achieved_halfwidth(n, rate=rate, level=level, method=m))
    table.insert(0, "rate", rate)
    return table
