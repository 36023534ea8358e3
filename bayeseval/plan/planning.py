"""Planning: sample sizes, budget allocation, the split decision, detectable gaps.

Everything here works before a single label is bought:

* :func:`sample_size` -- trials needed for a target standard error or
  half-width on one rate (normal formula, or a search over Wilson or
  Clopper-Pearson intervals);
* :func:`sample_size_multi` -- several metrics at once (the maximum of the
  rows each one needs);
* :func:`subgroup_rows` -- K subgroups each needing ``n_min`` minority rows;
* :func:`allocate` -- split a fixed budget across strata (proportional, equal,
  optimal for the weighted risk, equal precision, compromise) with hard
  minimums and capacities;
* :func:`risk_variance`, :func:`se_for`, :func:`halfwidth_table` -- the
  variance and half-width a design achieves;
* :func:`split_decision` -- keep the class proportion, grow the test set,
  raise the minority share, or degrade;
* :func:`detectable_gap` -- rows per group to detect a difference between two
  groups' rates, and the smallest gap detectable with given rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    align_by_label,
    as_float_array,
    check_count_limit,
    check_level,
    check_method,
    check_not_bool,
    check_positive_int,
    check_probability,
    check_weights,
    is_pandas,
    short_repr,
)
from bayeseval._kernels.allocation import allocation_counts, plain_inputs
from bayeseval._kernels.weighted_variance import stratum_variance_terms
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
    "allocate",
    "risk_variance",
    "se_for",
    "halfwidth_table",
    "SplitDecision",
    "split_decision",
    "detectable_gap",
    "GapPlan",
]

# Relative slack used when rounding a real-valued requirement up to an integer:
# 1.96**2 * 0.25 / 0.02**2 evaluates to 2400.9999999999995 in floating point and
# must give 2401, while 100.00000000001 (a rounding artefact of an exact 100)
# must give 100, not 101.
_CEIL_RTOL = 1e-9


def _ceil(x: float) -> int:
    """Round a positive requirement up, ignoring floating-point noise."""
    return int(math.ceil(x * (1.0 - _CEIL_RTOL)))


# SciPy is imported only where it is needed (Clopper-Pearson sizes, ``detectable_gap`` solved
# for the gap): the command line's ``plan`` commands run on NumPy and the standard library.
# ``statistics.NormalDist.inv_cdf`` (Wichura's algorithm AS 241) agrees with
# ``scipy.stats.norm.ppf`` to within 6 units in the last place for levels in [0.5, 1).
_STANDARD_NORMAL = NormalDist()


def _z(level: float) -> float:
    """Two-sided normal quantile for a confidence ``level``."""
    return _STANDARD_NORMAL.inv_cdf(0.5 + level / 2.0)


def _check_positive_real(value: Any, name: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a positive number, got {short_repr(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return value


# ---------------------------------------------------------------------------
# Sample sizes for one rate
# ---------------------------------------------------------------------------

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
        upper = np.where(
            x < n, special.betaincinv(x + 1.0, np.maximum(n - x, 1e-300), 1.0 - alpha / 2.0), 1.0
        )
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
    out = _halfwidth_continuous(n, rate, _z(level), method)
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
    rate is given. Using the exact quantile instead of the rounded 1.96
    changes the classic table values by less than one trial (the largest
    shift, 2401.00 -> 2400.91, stays below the same integer). Floating-point noise is ignored when
    rounding up (``1.96**2 / 4 / 0.02**2`` evaluates to 2400.9999999999995).

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
    z = _z(level)
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
        return max(1, _ceil(need))
    return _smallest_trials(r, z, e, method)


def _check_one_target(se: Any, halfwidth: Any) -> None:
    if (se is None) == (halfwidth is None):
        raise ValueError(
            f"give exactly one of se and halfwidth, got se={se!r} and halfwidth={halfwidth!r}"
        )


def _target_halfwidth(se: Any, halfwidth: Any, z: float) -> tuple[float, float]:
    """The validated target (``se`` or ``halfwidth``) and the half-width it means."""
    if se is not None:
        target = _check_positive_real(se, "se")
        if target > 0.5:
            raise ValueError(f"se must be at most 0.5 (the largest SE of one Bernoulli trial), got {target!r}")
        return target, z * target
    target = _check_positive_real(halfwidth, "halfwidth")
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
        _metric_plan(key, rate, _pick_target(se, key, "se"), _pick_target(halfwidth, key, "halfwidth"),
                     prevalence, predicted_positive_rate, level, method)
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
    key: str, rate: Any, t_se: Any, t_hw: Any, prevalence: float | None,
    predicted_positive_rate: float | None, level: float, method: str,
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
        "rows": _ceil(n / q),
    }


class _OneRowPlan(Result):
    """A plan whose tidy table is one row holding its fields."""

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as a plain dictionary.

        Returns
        -------
        dict
            Field name to value.
        """
        return {f: getattr(self, f) for f in self.__dataclass_fields__}  # type: ignore[attr-defined]

    @property
    def table(self) -> pd.DataFrame:
        """The plan as a one-row DataFrame, one column per field."""
        import pandas as pd  # deferred: fast start-up

        return pd.DataFrame([self.to_dict()])


@dataclass(frozen=True, repr=False)
class SubgroupPlan(_OneRowPlan):
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
        total_rows=_ceil(minority / share),
        n_min=n_min,
        n_groups=n_groups,
        share=share,
    )


# ---------------------------------------------------------------------------
# Variance of the weighted risk and half-widths
# ---------------------------------------------------------------------------


def _as_series(values: Any, name: str, index: pd.Index | None = None) -> pd.Series:
    """Series of floats; dicts/Series keep labels, sequences get ``index`` or 0..K-1."""
    import pandas as pd  # deferred: fast start-up

    check_not_bool(list(values.values()) if isinstance(values, Mapping) else values, name, "numbers")
    if isinstance(values, Mapping) and not isinstance(values, pd.Series):
        values = pd.Series(dict(values))
    if isinstance(values, pd.Series):
        if values.index.has_duplicates:
            dup = list(values.index[values.index.duplicated()].unique()[:5])
            raise ValueError(f"{name} has duplicate stratum labels {dup}; give one value per stratum")
        if index is not None and not values.index.equals(index):
            indexer = values.index.get_indexer(index)
            if len(values) != len(index) or np.any(indexer < 0):
                missing = list(index.difference(values.index, sort=False)[:5])
                extra = list(values.index.difference(index, sort=False)[:5])
                raise ValueError(
                    f"{name} do not match the strata of weights (paired by label): "
                    f"missing {missing}, extra {extra}"
                )
            values = pd.Series(values.to_numpy()[indexer], index=index)
        arr = as_float_array(values.to_numpy(), name)
        out_index = values.index
    else:
        arr = np.atleast_1d(as_float_array(values, name))
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        out_index = index if index is not None else pd.RangeIndex(arr.size)
        if arr.size != len(out_index):
            raise ValueError(f"{name} must have one value per stratum ({len(out_index)}), got {arr.size}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; give one value per stratum")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {short_repr(arr.tolist())}")
    return pd.Series(arr, index=out_index, name=name)


def _weights_series(weights: Any) -> pd.Series:
    w = _as_series(weights, "weights")
    check_weights(w.to_numpy(), len(w))
    return w


def risk_variance(weights: Any, rates: Any, counts: Any) -> float:
    r"""Variance of the target-weighted risk for given rates and per-stratum counts.

    .. math::

        \operatorname{Var}(\hat R) = \sum_k \pi_k^2\, \frac{r_k(1-r_k)}{n_k}

    (the stratified estimator's variance; Cochran 1977, *Sampling Techniques*,
    section 5.3). The SE is its square root.

    Parameters
    ----------
    weights : array-like, dict or Series
        Population shares :math:`\pi_k`, summing to 1.
    rates : array-like, dict or Series
        Planning (or estimated) rates :math:`r_k` in [0, 1].
    counts : array-like, dict or Series
        Trials per stratum :math:`n_k` (positive).

    Returns
    -------
    float
        :math:`\operatorname{Var}(\hat R)`.

    Examples
    --------
    >>> v = risk_variance([0.8, 0.2], [0.09, 0.2275], [286, 114])
    >>> round(v, 6), round(v ** 0.5, 4)
    (0.000245, 0.0157)
    """
    w = _weights_series(weights)
    r = _as_series(rates, "rates", w.index)
    n = _as_series(counts, "counts", w.index)
    if np.any((r < 0) | (r > 1)):
        raise ValueError(f"rates must be between 0 and 1, got {short_repr(r.tolist())}")
    if np.any(n <= 0):
        raise ValueError(f"counts must be positive, got {short_repr(n.tolist())}")
    return float(np.sum(stratum_variance_terms(w.to_numpy(), r.to_numpy(), n.to_numpy())))


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


# ---------------------------------------------------------------------------
# Allocating a fixed budget across strata
# ---------------------------------------------------------------------------

_ALLOC_METHODS = ("proportional", "equal", "optimal", "equal_precision", "compromise")


def _bound(value: Any, name: str, index: pd.Index, default: float) -> np.ndarray:
    if value is None:
        return np.full(len(index), default)
    if isinstance(value, Real) and not isinstance(value, bool):
        check_count_limit(value, name)
        arr = np.full(len(index), float(value))
    elif isinstance(value, bool):
        raise TypeError(f"{name} must be a count or one count per stratum, got {value!r}")
    else:
        arr = _as_series(value, name, index).to_numpy()
    check_count_limit(arr, name)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must be non-negative whole numbers, got {short_repr(arr.tolist())}")
    return arr


def _planning_variances(rates: Any, index: pd.Index) -> np.ndarray:
    """:math:`r_k (1 - r_k)` per stratum; 1/4 (the largest) without planning rates."""
    if rates is None:
        return np.full(len(index), 0.25)
    r = _as_series(rates, "rates", index).to_numpy()
    if np.any((r < 0) | (r > 1)):
        raise ValueError(f"rates must be between 0 and 1, got {short_repr(r.tolist())}")
    return r * (1 - r)


def allocate(
    total: int,
    weights: Any,
    rates: Any = None,
    *,
    method: str = "optimal",
    minimum: Any = None,
    capacity: Any = None,
) -> pd.Series:
    r"""Split a budget of ``total`` trials across strata.

    Rules, each an allocation :math:`n_k \propto s_k` (Neyman allocation: Cochran 1977,
    section 5.5):

    * ``"proportional"``: :math:`s_k = \pi_k`;
    * ``"equal"``: :math:`s_k = 1`;
    * ``"optimal"``: minimises :math:`\operatorname{Var}(\hat R) = \sum_k
      \pi_k^2 v_k / n_k` with :math:`v_k = r_k(1-r_k)` (Neyman allocation):
      :math:`s_k = \pi_k \sqrt{v_k}`, minimum variance
      :math:`(\sum_k \pi_k\sqrt{v_k})^2 / n`;
    * ``"equal_precision"``: every stratum reaches the same half-width:
      :math:`s_k = v_k`;
    * ``"compromise"``: every stratum first gets its ``minimum``, then the rest
      of the budget is shared optimally on top,
      :math:`n_k = m_k + (n - \sum_j m_j)\, \pi_k\sqrt{v_k} / \sum_j \pi_j \sqrt{v_j}`.

    ``minimum`` and ``capacity`` are hard bounds :math:`m_k \le n_k \le c_k`.
    For the first four rules the constrained allocation is
    :math:`n_k = \operatorname{clip}(\lambda s_k, m_k, c_k)` with
    :math:`\lambda` chosen so that the counts sum to the total: strata below
    their minimum are fixed at it, strata above capacity at it, and the rest
    is re-shared in proportion to :math:`s_k` (for ``"optimal"`` this is the
    exact constrained minimum of the variance). Strata with a score of 0
    (e.g. a planning rate of 0 or 1 under ``"optimal"``) get only their
    minimum; if every score is 0 the budget is split equally. Real allocations are rounded
    to integers by largest remainder, so the counts sum exactly to ``total``
    and stay within the bounds.

    Parameters
    ----------
    total : int
        Trials to allocate.
    weights : array-like, dict or Series
        Population shares :math:`\pi_k` (sum to 1). Dict or Series labels
        become the index of the result.
    rates : array-like, dict or Series, optional
        Planning rates :math:`r_k`; None means 0.5 everywhere (then
        ``"optimal"`` equals ``"proportional"`` and ``"equal_precision"``
        equals ``"equal"``).
    method : {"optimal", "proportional", "equal", "equal_precision", "compromise"}
        The allocation rule (above).
    minimum : int or per-stratum counts, optional
        Hard lower bounds (required for ``"compromise"``).
    capacity : int or per-stratum counts, optional
        Hard upper bounds (rows available).

    Returns
    -------
    pandas.Series of int
        Trials per stratum, summing to ``total``.

    Raises
    ------
    ValueError
        If the minimums exceed the total, the capacities cannot hold it, or a
        stratum's minimum exceeds its capacity.

    Examples
    --------
    >>> allocate(500, [0.8, 0.2], [0.05, 0.30]).tolist()   # Neyman: pi_k sqrt(r_k (1 - r_k))
    [328, 172]
    >>> allocate(500, {"a": 0.8, "b": 0.2}, method="proportional").to_dict()
    {'a': 400, 'b': 100}
    """
    total = check_positive_int(total, "total", minimum=0)
    check_count_limit(total, "total")
    method = check_method(method, _ALLOC_METHODS)
    import pandas as pd  # deferred: fast start-up (the command line allocates without it)

    plain = plain_inputs(weights, rates, minimum, capacity)
    if plain is None:  # labelled or unusual inputs: read (and check) them with pandas
        w = _weights_series(weights)
        index = w.index
        v = _planning_variances(rates, index)
        lo = _bound(minimum, "minimum", index, 0.0)
        hi = _bound(capacity, "capacity", index, np.inf)
        pi = w.to_numpy()
    else:
        labels, pi, v, lo, hi = plain
        index = pd.RangeIndex(len(labels)) if isinstance(labels, range) else pd.Index(labels)
    counts = allocation_counts(total, pi, v, lo, hi, index, method, has_minimum=minimum is not None)
    return pd.Series(counts, index=index, name="trials", dtype="int64")


# ---------------------------------------------------------------------------
# Split decision
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class SplitDecision(_OneRowPlan):
    """Outcome of :func:`split_decision`.

    Attributes
    ----------
    branch : str
        ``"proportional"`` (keep the class share), ``"grow_test"`` (a larger
        test set at the population share), ``"raise_share"`` (same test size,
        minority oversampled; report with reweighting) or ``"degraded"``
        (no option meets the request; the report is precision limited).
    n_total : int
        Rows available in all.
    n_test : int
        Final test-set size.
    share : float
        Population minority share.
    test_share : float
        Minority share of the final test set.
    n_minority_test : int
        Minority rows in the final test set.
    n_min_total : int
        Minority rows requested, ``n_groups * n_min``.
    n_minority_proportional : int
        Minority rows a proportional split of the *requested* test size gives,
        ``share * n_test`` (rounded).
    reweight : bool
        True when the test set over-represents the minority, so that overall
        metrics must be reweighted (population share / sample share row weights).
    reason : str
        Plain-English account of the decision.
    warning : str or None
        What the user must do or know (re-calibrate thresholds, precision
        limited), or None.
    n_minority_available : int
        Minority rows in all the data, ``share * n_total`` (rounded).
    max_groups : int
        Largest number of groups of ``n_min`` minority rows the final test set
        supports (useful for the "merge groups" remedy).
    n_min_achievable : int
        Minority rows per group the final test set gives (``n_minority_test //
        n_groups``).
    """

    branch: str
    n_total: int
    n_test: int
    share: float
    test_share: float
    n_minority_test: int
    n_min_total: int
    n_minority_proportional: int
    reweight: bool
    reason: str
    warning: str | None
    n_minority_available: int = 0
    max_groups: int = 0
    n_min_achievable: int = 0



def split_decision(
    *,
    n_total: int,
    n_test: int,
    share: float,
    n_min: int,
    n_groups: int = 1,
    max_test_share: float = 0.3,
    max_inflate: float = 5.0,
) -> SplitDecision:
    r"""Decide between keeping the class proportion and meeting a minimum count.

    A class-stratified split keeps the minority share but may leave the
    minority with a few dozen test rows. This function decides in this order:

    1. :math:`n_{\min,\text{total}} = K\, n_{\min}`.
    2. :math:`n^+_{\text{prop}} = \pi\, n_{\text{test}}`. If
       :math:`n^+_{\text{prop}} \ge n_{\min,\text{total}}`: keep the proportion.
    3. Grow the test set: :math:`n'_{\text{test}} = \lceil n_{\min,\text{total}}/\pi \rceil`;
       accepted when :math:`n'_{\text{test}} \le c\, N` (``max_test_share``).
    4. Raise the minority share: :math:`\pi'_{\text{test}} = n_{\min,\text{total}}/n_{\text{test}}`;
       accepted when :math:`\pi'_{\text{test}} \le \pi \cdot` ``max_inflate``.
       Overall metrics then need reweighting, and thresholds tuned on this set
       must be re-calibrated to the population share.
    5. Otherwise degrade: relax the target half-width, merge groups, or use
       cross-validation; the report is flagged "precision limited".

    Options 3 and 4 also require that the data hold enough minority rows,
    :math:`n_{\min,\text{total}} \le \pi N`.

    Parameters
    ----------
    n_total : int
        Rows available (N).
    n_test : int
        Requested test-set size.
    share : float
        Population share of the minority class, in (0, 1).
    n_min : int
        Minority test rows each group needs (from :func:`sample_size`).
    n_groups : int, default 1
        Number of groups (K) each needing ``n_min``.
    max_test_share : float, default 0.3
        Cap on the test set as a share of all rows.
    max_inflate : float, default 5.0
        Cap on the test minority share as a multiple of the population share.

    Returns
    -------
    SplitDecision
        The branch taken, the final test-set size and minority rows, whether
        metrics need reweighting, and a plain-English reason.

    Examples
    --------
    >>> d = split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    >>> d.branch, d.n_test, d.n_minority_proportional
    ('grow_test', 76905, 252)
    >>> split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323,
    ...                n_groups=8).branch
    'degraded'
    """
    req = _split_request(n_total, n_test, share, n_min, n_groups, max_test_share, max_inflate)
    return _keep_proportion(req) or _grow_test(req) or _raise_share(req) or _degrade(req)


def _split_request(
    n_total: Any, n_test: Any, share: Any, n_min: Any, n_groups: Any, max_test_share: Any,
    max_inflate: Any,
) -> _SplitRequest:
    """Validate the inputs of :func:`split_decision`."""
    n_total = check_positive_int(n_total, "n_total")
    n_test = check_positive_int(n_test, "n_test")
    if n_test > n_total:
        raise ValueError(f"n_test must not exceed n_total ({n_total}), got {n_test}")
    share = check_probability(share, "share", open_interval=True)
    n_min = check_positive_int(n_min, "n_min")
    n_groups = check_positive_int(n_groups, "n_groups")
    max_test_share = check_probability(max_test_share, "max_test_share")
    if max_test_share == 0:
        raise ValueError(f"max_test_share must be positive, got {max_test_share!r}")
    max_inflate = _check_positive_real(max_inflate, "max_inflate")
    if max_inflate < 1:
        raise ValueError(f"max_inflate must be >= 1 (1 means no oversampling), got {max_inflate!r}")
    return _SplitRequest(n_total, n_test, share, n_min, n_groups, max_test_share, max_inflate)


@dataclass(frozen=True)
class _SplitRequest:
    """The validated inputs of :func:`split_decision` and the quantities every branch uses."""

    n_total: int
    n_test: int
    share: float
    n_min: int
    n_groups: int
    max_test_share: float
    max_inflate: float

    @property
    def n_min_total(self) -> int:
        return self.n_groups * self.n_min

    @property
    def n_prop(self) -> int:
        return int(round(self.share * self.n_test))

    @property
    def available(self) -> int:
        return int(round(self.share * self.n_total))

    @property
    def grown(self) -> int:
        return _ceil(self.n_min_total / self.share)

    @property
    def raised(self) -> float:
        return self.n_min_total / self.n_test

    @property
    def enough_minority(self) -> bool:
        return self.n_min_total <= self.share * self.n_total * (1.0 + _CEIL_RTOL)

    @property
    def groups_txt(self) -> str:
        return f" ({self.n_groups} groups x {self.n_min})" if self.n_groups > 1 else ""

    def decide(
        self, branch: str, final_n: int, n_minority: int, reweight: bool, reason: str,
        warning: str | None, max_groups: int | None = None,
    ) -> SplitDecision:
        test_share = n_minority / final_n if branch == "raise_share" else self.share
        return SplitDecision(
            branch=branch,
            n_total=self.n_total,
            n_test=final_n,
            share=self.share,
            test_share=float(test_share),
            n_minority_test=int(n_minority),
            n_min_total=self.n_min_total,
            n_minority_proportional=self.n_prop,
            reweight=reweight,
            reason=reason,
            warning=warning,
            n_minority_available=self.available,
            max_groups=int(n_minority // self.n_min) if max_groups is None else max_groups,
            n_min_achievable=int(n_minority // self.n_groups),
        )


def _keep_proportion(req: _SplitRequest) -> SplitDecision | None:
    if req.share * req.n_test < req.n_min_total * (1.0 - _CEIL_RTOL):
        return None
    return req.decide(
        "proportional", req.n_test, req.n_prop, False,
        f"a proportional test set of {req.n_test:,} rows holds about {req.n_prop:,} minority rows "
        f"(share {req.share:.4g}), at least the {req.n_min_total:,} requested{req.groups_txt}; "
        "keep the class proportion",
        None,
    )


def _grow_test(req: _SplitRequest) -> SplitDecision | None:
    grown = req.grown
    if not (req.enough_minority and grown <= req.max_test_share * req.n_total * (1.0 + _CEIL_RTOL)):
        return None
    n_minority = max(req.n_min_total, int(math.floor(req.share * grown + 1e-9)))
    return req.decide(
        "grow_test", grown, n_minority, False,
        f"a proportional test set of {req.n_test:,} rows holds only about {req.n_prop:,} minority "
        f"rows, fewer than the {req.n_min_total:,} requested{req.groups_txt}; growing the test set "
        f"to {grown:,} rows ({grown / req.n_total:.1%} of the data, cap {req.max_test_share:.0%}) "
        "keeps the population share and meets the request",
        None,
    )


def _raise_share(req: _SplitRequest) -> SplitDecision | None:
    raised, share = req.raised, req.share
    if not (
        req.enough_minority
        and raised <= share * req.max_inflate * (1.0 + _CEIL_RTOL)
        and req.n_min_total <= req.n_test
    ):
        return None
    return req.decide(
        "raise_share", req.n_test, req.n_min_total, True,
        f"growing the test set to {req.grown:,} rows would exceed the cap of "
        f"{req.max_test_share:.0%} of {req.n_total:,} rows; instead the {req.n_test:,}-row test set "
        f"takes {req.n_min_total:,} minority rows (share {raised:.4g}, {raised / share:.2f} x the "
        f"population share {share:.4g}, within the inflate cap {req.max_inflate:g})",
        "the test set over-represents the minority: report overall metrics with reweighting "
        "(population share / sample share), and re-calibrate any threshold tuned on this set "
        "to the population share",
    )


def _degrade(req: _SplitRequest) -> SplitDecision:
    if not req.enough_minority:
        why = [f"the data hold only about {req.available:,} minority rows, fewer than the "
               f"{req.n_min_total:,} requested"]
    else:
        why = [
            f"growing the test set would need {req.grown:,} rows (> {req.max_test_share:.0%} of "
            f"{req.n_total:,})",
            f"raising the minority share would need {req.raised:.4g} (> {req.max_inflate:g} x "
            f"{req.share:.4g})",
        ]
    # the most minority rows any option could give, for the "merge groups" remedy
    best = max(
        req.n_prop,
        min(req.available, int(math.floor(req.max_test_share * req.n_total * req.share + 1e-9))),
        min(req.available, req.n_test, int(math.floor(req.n_test * req.share * req.max_inflate + 1e-9))),
    )
    max_groups = best // req.n_min
    merge = (f"merge groups (at most {max_groups} groups of {req.n_min} can be met)" if max_groups
             else f"merge groups (not even one group of {req.n_min} can be met; at most {best:,} "
                  "minority rows are reachable)")
    per_group = req.n_prop // req.n_groups
    return req.decide(
        "degraded", req.n_test, req.n_prop, False,
        "the request cannot be met: " + "; ".join(why) + f". The proportional test set keeps "
        f"about {req.n_prop:,} minority rows ({per_group:,} per group); relax the target "
        f"half-width, {merge}, or fall back to cross-validation",
        f"precision limited: about {per_group:,} minority rows per group instead of {req.n_min:,}",
        max_groups=int(max_groups),
    )


# ---------------------------------------------------------------------------
# Detectable gap between two groups
# ---------------------------------------------------------------------------

_GAP_METHODS = ("pooled", "arcsine")


@dataclass(frozen=True, repr=False)
class GapPlan(_OneRowPlan):
    """Outcome of :func:`detectable_gap`.

    Attributes
    ----------
    n_per_group : int or float
        Trials per group: the (rounded-up) requirement when a gap was given,
        the given count when the gap was solved for.
    rate_a, rate_b : float
        The two groups' rates.
    gap : float
        ``rate_b - rate_a``.
    level, power : float
        Confidence level (1 - alpha) of the two-sided test and its power.
    method : str
        ``"pooled"`` or ``"arcsine"``.
    solved_for : str
        ``"n_per_group"`` or ``"gap"``.
    """

    n_per_group: float
    rate_a: float
    rate_b: float
    gap: float
    level: float
    power: float
    method: str
    solved_for: str


def _gap_n(pa: float, pb: float, za: float, zb: float, method: str) -> float:
    """Real-valued trials per group for the two-sided two-proportion z-test."""
    if method == "arcsine":
        h = 2 * np.arcsin(np.sqrt(pb)) - 2 * np.arcsin(np.sqrt(pa))
        return float(2.0 * ((za + zb) / h) ** 2)
    pbar = (pa + pb) / 2.0
    num = za * np.sqrt(2 * pbar * (1 - pbar)) + zb * np.sqrt(pa * (1 - pa) + pb * (1 - pb))
    return float(num**2 / (pb - pa) ** 2)


def detectable_gap(
    *,
    rate_a: float,
    rate_b: float | None = None,
    n_per_group: float | None = None,
    gap: float | None = None,
    level: float = 0.95,
    power: float = 0.8,
    method: str = "pooled",
    direction: str = "up",
) -> GapPlan:
    r"""Trials per group to detect a difference between two rates, or the reverse.

    Two groups with ``n`` trials each; the two-sided two-proportion z-test at
    significance :math:`\alpha = 1 - \text{level}` should reject with
    probability ``power`` when the rates are :math:`p_a` and :math:`p_b`.
    With :math:`\bar p = (p_a + p_b)/2` (``method="pooled"``, variance pooled
    under the null, unpooled under the alternative; the far tail ignored):

    .. math::

        n = \frac{\left(z_{1-\alpha/2}\sqrt{2\bar p(1-\bar p)}
              + z_{\text{power}}\sqrt{p_a(1-p_a) + p_b(1-p_b)}\right)^2}{(p_b - p_a)^2}

    rounded up. ``method="arcsine"`` uses Cohen's effect size
    :math:`h = 2\arcsin\sqrt{p_b} - 2\arcsin\sqrt{p_a}` and
    :math:`n = 2\,((z_{1-\alpha/2} + z_{\text{power}})/h)^2` (each arcsine-transformed
    rate has variance :math:`1/(4n)`, so :math:`2\arcsin\sqrt{\hat p}` has :math:`1/n`).

    Give ``rate_b`` (or ``gap``, with ``rate_b = rate_a + gap``) to get the
    trials per group; give ``n_per_group`` instead to get the smallest gap
    :math:`|p_b - p_a|` detectable with that many trials, upward
    (:math:`p_b > p_a`, ``direction="up"``) or downward (``"down"``), as the
    root of :math:`n(p_b) = n_{\text{per group}}` (found with
    :func:`scipy.optimize.brentq`; :math:`n(p_b)` decreases as :math:`p_b`
    moves away from :math:`p_a`).

    Parameters
    ----------
    rate_a : float
        Rate of group A, in (0, 1).
    rate_b : float, optional
        Rate of group B, in (0, 1), different from ``rate_a``.
    n_per_group : float, optional
        Trials per group (to solve for the gap).
    gap : float, optional
        ``rate_b - rate_a`` (alternative to ``rate_b``).
    level : float, default 0.95
        1 - significance level of the two-sided test.
    power : float, default 0.8
        Probability of detecting the gap.
    method : {"pooled", "arcsine"}, default "pooled"
        Variance of the test statistic: pooled under the null, or the
        arcsine transform (Cohen's h).
    direction : {"up", "down"}, default "up"
        Side of ``rate_a`` on which the detectable ``rate_b`` is searched
        (only when solving for the gap).

    Returns
    -------
    GapPlan
        The trials per group, both rates, the gap and what was solved for.

    Examples
    --------
    >>> detectable_gap(rate_a=0.663, rate_b=0.709).n_per_group
    1597
    >>> round(detectable_gap(rate_a=0.663, n_per_group=1597).gap, 4)
    0.046
    """
    rate_a = check_probability(rate_a, "rate_a", open_interval=True)
    level = check_level(level)
    power = check_level(power, "power")
    method = check_method(method, _GAP_METHODS)
    direction = check_method(direction, ("up", "down"), "direction")
    given = [x is not None for x in (rate_b, n_per_group, gap)]
    if sum(given) != 1:
        raise ValueError(
            "give exactly one of rate_b, gap (to get n_per_group) and n_per_group (to get the gap); "
            f"got rate_b={rate_b!r}, gap={gap!r}, n_per_group={n_per_group!r}"
        )
    za = _z(level)
    zb = _STANDARD_NORMAL.inv_cdf(power)
    if n_per_group is None:
        rate_b = _rate_b(rate_a, rate_b, gap)
        n = _ceil(_gap_n(rate_a, rate_b, za, zb, method))
        return GapPlan(n, rate_a, rate_b, rate_b - rate_a, level, power, method, "n_per_group")
    n_target = _check_positive_real(n_per_group, "n_per_group")
    rate_b = _detectable_rate(rate_a, n_target, za, zb, method, direction, power)
    return GapPlan(n_target, rate_a, rate_b, rate_b - rate_a, level, power, method, "gap")


def _rate_b(rate_a: float, rate_b: Any, gap: Any) -> float:
    """The validated rate of group B, given directly or as ``rate_a + gap``."""
    if gap is not None:
        if isinstance(gap, bool) or not isinstance(gap, Real) or not np.isfinite(gap):
            raise TypeError(f"gap must be a finite number, got {short_repr(gap)}")
        if gap == 0:
            raise ValueError("gap must not be 0 (no sample size detects a zero difference)")
        rate_b = rate_a + float(gap)
        if not 0 < rate_b < 1:
            raise ValueError(
                f"gap={gap!r} puts rate_b = rate_a + gap = {rate_b!r} outside (0, 1)"
            )
    rate_b = check_probability(rate_b, "rate_b", open_interval=True)
    if rate_b == rate_a:
        raise ValueError(f"rate_b must differ from rate_a (both {rate_a!r})")
    return rate_b


def _detectable_rate(
    rate_a: float, n_target: float, za: float, zb: float, method: str, direction: str, power: float
) -> float:
    """The rate B at which ``n_target`` trials per group give the requested power."""

    def f(pb: float) -> float:
        return _gap_n(rate_a, pb, za, zb, method) - n_target

    edge = 1.0 - 1e-12 if direction == "up" else 1e-12
    if f(edge) > 0:
        raise ValueError(
            f"n_per_group={n_target:g} is too small to detect any "
            f"{'increase' if direction == 'up' else 'decrease'} "
            f"from rate_a={rate_a!r} at power {power:g}"
        )
    from scipy import optimize  # deferred: only this solve needs it

    near = rate_a + 1e-12 if direction == "up" else rate_a - 1e-12
    return float(optimize.brentq(f, min(near, edge), max(near, edge), xtol=1e-14, rtol=1e-14, maxiter=500))
