"""Allocating a budget of trials across strata, and the variance of the weighted risk a
design achieves.

* :func:`allocate` -- split a fixed budget across strata (proportional, equal, optimal for the
  weighted risk, equal precision, compromise) with hard minimums and capacities; the rules
  are computed by :func:`bayeseval._kernels.allocation.allocation_counts`, and this module
  reads labelled inputs and labels the result;
* :func:`risk_variance` -- the variance of the target-weighted risk for given counts.
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from bayeseval._api.validation import (
    as_labelled_series,
    check_count_limit,
    check_method,
    check_positive_int,
    short_repr,
    weights_series,
)
from bayeseval._kernels.allocation import allocation_counts, plain_inputs
from bayeseval._kernels.weighted_variance import stratum_variance_terms

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["allocate", "risk_variance"]


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
    w = weights_series(weights)
    r = as_labelled_series(rates, "rates", w.index)
    n = as_labelled_series(counts, "counts", w.index)
    if np.any((r < 0) | (r > 1)):
        raise ValueError(f"rates must be between 0 and 1, got {short_repr(r.tolist())}")
    if np.any(n <= 0):
        raise ValueError(f"counts must be positive, got {short_repr(n.tolist())}")
    return float(np.sum(stratum_variance_terms(w.to_numpy(), r.to_numpy(), n.to_numpy())))


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
        arr = as_labelled_series(value, name, index).to_numpy()
    check_count_limit(arr, name)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must be non-negative whole numbers, got {short_repr(arr.tolist())}")
    return arr


def _planning_variances(rates: Any, index: pd.Index) -> np.ndarray:
    """:math:`r_k (1 - r_k)` per stratum; 1/4 (the largest) without planning rates."""
    if rates is None:
        return np.full(len(index), 0.25)
    r = as_labelled_series(rates, "rates", index).to_numpy()
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
        w = weights_series(weights)
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
