"""Confidence intervals: one proportion (five methods) and the bootstrap.

:func:`proportion_ci` gives an interval for ``successes`` out of ``trials``
with five methods (Brown, Cai and DasGupta 2001), vectorised over arrays and pandas objects.
:func:`bootstrap_ci` gives percentile or BCa bootstrap intervals for metrics
that are not one proportion (F1, a population-weighted risk), optionally
resampling within strata so that no stratum ever vanishes from a replicate.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._api.results import Result
from bayeseval._api.validation import (
    align_by_label,
    as_float_array,
    check_class_labels,
    check_counts,
    check_level,
    check_method,
    check_no_missing,
    check_positive_int,
    check_weights,
    make_rng,
    short_repr,
)
from bayeseval._api.warnings import EmptyStratumWarning, ZeroVarianceWarning
from bayeseval._kernels import resampling as rs
from bayeseval._kernels.adaptive import adaptive_interval
from bayeseval._kernels.anytime import (
    UNTUNED_CONCENTRATION,
    confidence_sequence_bounds,
    tuned_concentration,
)
from bayeseval._kernels.binomial import (
    ADAPTIVE,
    PROPORTION_METHODS,
    binomial_bounds,
    normalise_method,
)
from bayeseval.counts.counts import Counts

__all__ = [
    "PROPORTION_METHODS",
    "proportion_ci",
    "confidence_sequence",
    "proportion_se",
    "bootstrap_ci",
    "BootstrapInterval",
    "f1_score",
]


def _wrap(values: np.ndarray, like: Any, scalar: bool, name: str | None = None) -> Any:
    if scalar:
        return float(values.reshape(()))
    if isinstance(like, pd.Series):
        return pd.Series(values, index=like.index, name=name)
    return values


def _checked_counts(successes: Any, trials: Any) -> tuple[np.ndarray, np.ndarray, Any, bool]:
    """Validated integer counts from a Counts object or the two arguments (paired by label),
    the object whose container the result takes, and whether the input is scalar."""
    if isinstance(successes, Counts):
        if trials is not None:
            raise TypeError("pass either a Counts object or successes and trials, not both")
        successes, trials = successes.successes, successes.trials
    elif trials is None:
        raise TypeError("trials is required when successes is not a Counts object")
    successes, trials = align_by_label(("successes", successes), ("trials", trials))
    scalar = np.ndim(successes) == 0 and np.ndim(trials) == 0
    like = successes if isinstance(successes, pd.Series) else trials
    s_int, n_int = check_counts(successes, trials)
    return s_int, n_int, like, scalar


def _warn_empty(empty: np.ndarray) -> None:
    if np.any(empty):
        warnings.warn(
            f"{int(empty.sum())} of {empty.size} proportions have trials=0; "
            "their rate is undefined and the interval is NaN",
            EmptyStratumWarning,
            stacklevel=3,
        )


def proportion_ci(
    successes: Any,
    trials: Any = None,
    *,
    level: float = 0.95,
    method: str = "wilson",
) -> tuple[Any, Any]:
    r"""Confidence interval for a binomial proportion ``successes / trials``.

    Parameters
    ----------
    successes, trials : int, array-like or pandas.Series
        Counts (non-negative whole numbers up to 2**53, ``successes <= trials``),
        broadcast against each other. Two Series are paired by index label
        (the order of ``successes`` is kept) and must hold the same labels. ``successes`` may also be a
        :class:`~bayeseval.Counts` (then omit ``trials``): the bounds come back
        as Series indexed by stratum.
    level : float
        Confidence level in (0, 1); 0.95 gives a 95% interval.
    method : {"wilson", "jeffreys", "clopper_pearson", "agresti_coull", "wald", "adaptive"}
        ``wilson`` (default): the Wilson score interval; mean coverage is close
        to ``level`` at every n, but its minimum dips below it for p near 0 or 1
        (95% intervals: minimum 0.84 at n = 5, 0.91 at n = 50; see
        ``docs/validation.md``).
        ``jeffreys``: equal-tailed Beta(s + 1/2, n - s + 1/2) quantiles, with the
        lower bound set to 0 at ``s = 0`` and the upper bound to 1 at ``s = n``
        (Brown, Cai and DasGupta 2001); mean coverage close to ``level``, minimum
        below it (95%: 0.87 at n = 10, 0.88 at n = 50). ``clopper_pearson``: the exact interval
        from Beta quantiles, conservative (coverage >= level for every p); at
        ``s = 0`` the lower bound is exactly 0 and the upper is
        :math:`1 - (\alpha/2)^{1/n}`, symmetrically at ``s = n``.
        ``agresti_coull``: add :math:`z^2/2` successes and :math:`z^2/2` failures,
        then Wald; slightly conservative on average (95%: mean 0.96, minimum
        0.90 at n = 5). ``wald`` (alias ``normal``): :math:`\hat p \pm z
        \sqrt{\hat p(1-\hat p)/n}`. **Wald undercovers**: below a few dozen
        trials or near 0 or 1 its coverage falls far below ``level`` (at
        ``s = 0`` or ``s = n`` it collapses to a single point); never use it
        as a default. ``normal``, ``beta``, ``exact`` and ``score`` are accepted
        as aliases (statsmodels' names).
        ``adaptive`` (alias ``fab``): for a vector of strata, each stratum's
        adaptive ("frequentist, assisted by Bayes") interval: it inverts exact
        binomial tests (coverage >= ``level`` at every true rate, like
        Clopper-Pearson) whose split of ``1 - level`` between the tails is
        chosen from a prior built from the *other* strata only (leave-one-out
        Beta-binomial predictive, BDA3 hyperprior); see Notes.

    Returns
    -------
    lower, upper
        Floats for scalar input, NumPy arrays for array input, pandas Series
        (index kept) for Series input. Bounds are clipped to [0, 1]. Where
        ``trials`` is 0 the rate is undefined and both bounds are NaN (an
        :class:`~bayeseval.EmptyStratumWarning` says so): a (0, 1) interval would
        look like a measurement.

    Raises
    ------
    ValueError
        Negative, fractional, NaN, missing or mismatched counts, counts above
        2**53 (not exact as floats), Series whose index labels differ,
        ``successes > trials``,
        ``level`` outside (0, 1), or an unknown ``method``; with
        ``method="adaptive"``, fewer than two strata with trials or counts that
        are not one-dimensional (one entry per stratum).

    Notes
    -----
    Quantiles come from :mod:`scipy.stats` (``norm.isf``, ``beta.ppf``,
    ``beta.isf``); the bounds agree with statsmodels'
    ``proportion_confint`` to 1e-10 (except Jeffreys at 0 and n, see above).

    ``method="adaptive"`` (Yu and Hoff 2018, *Biometrika* 105(2), for normal
    means; the same test inversion for binomial counts): because the prior of
    a stratum depends only on the other strata, its coverage can be computed by
    enumerating the stratum's own count, and it is at least ``level`` at every
    true rate (exact coverage and width: docs/validation.md, section 6f). When
    the strata are alike it is shorter than Clopper-Pearson and about as wide
    as Wilson; for an outlier it is wider but keeps its coverage. A single stratum
    (or fewer than two strata with trials) raises ``ValueError``: there is
    nothing to borrow from, and a silent switch to another method would hand
    back a different interval than asked for; use ``"clopper_pearson"``.
    There is no matching standard error (the interval is not symmetric about
    the rate), so :func:`proportion_se` has no adaptive variant.

    Examples
    --------
    >>> lo, hi = proportion_ci(7, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.3968, 0.8922)
    >>> proportion_ci([0, 5], [10, 10], method="clopper_pearson")[0].round(4)
    array([0.    , 0.1871])

    Adaptive intervals of seven strata: the six alike strata get intervals shorter
    than Clopper-Pearson's; the last (9 of 20, far from the others) keeps a wide one:

    >>> s, n = [4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]
    >>> lo, hi = proportion_ci(s, n, method="adaptive")
    >>> (hi - lo).round(3)
    array([0.154, 0.131, 0.142, 0.167, 0.126, 0.154, 0.496])
    >>> cp_lo, cp_hi = proportion_ci(s, n, method="clopper_pearson")
    >>> (cp_hi - cp_lo).round(3)
    array([0.17 , 0.145, 0.156, 0.188, 0.136, 0.17 , 0.454])
    """
    level = check_level(level)
    method = normalise_method(method, adaptive=True)
    s_int, n_int, like, scalar = _checked_counts(successes, trials)
    s = s_int.astype(float)
    n = n_int.astype(float)
    alpha = 1.0 - level
    adaptive = _adaptive_bounds(s_int, n_int, level) if method == ADAPTIVE else None
    empty = n == 0
    _warn_empty(empty)
    if method == ADAPTIVE:
        lo, hi = adaptive
    else:
        lo, hi = binomial_bounds(s, np.where(empty, 1.0, n), alpha, method)
    lo = np.where(empty, np.nan, lo)
    hi = np.where(empty, np.nan, hi)
    return _wrap(lo, like, scalar, "lower"), _wrap(hi, like, scalar, "upper")


def _adaptive_bounds(s: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive intervals of one-dimensional strata (at least two with trials)."""
    if s.ndim != 1 or s.size < 2:
        raise ValueError(
            "method='adaptive' needs the counts of at least two strata, one entry per stratum "
            f"(each stratum's prior comes from the others), got successes of shape {s.shape}; "
            "for a single proportion use method='clopper_pearson'"
        )
    if np.count_nonzero(n) < 2:
        raise ValueError(
            "method='adaptive' needs at least two strata with trials (each stratum's prior "
            f"comes from the others), got trials {short_repr(n.tolist())}; "
            "use method='clopper_pearson'"
        )
    iv = adaptive_interval(s, n, level=level)
    return np.asarray(iv.lower, dtype=float), np.asarray(iv.upper, dtype=float)


def confidence_sequence(
    successes: Any,
    trials: Any = None,
    *,
    level: float = 0.95,
    planned_trials: int | None = None,
) -> tuple[Any, Any]:
    r"""Anytime-valid confidence interval (a confidence sequence) for a binomial proportion.

    Read it as often as you like, stop whenever you like (for example as soon as it is
    narrow enough, or as soon as it excludes a threshold): the probability that it
    *ever* fails to cover the true rate, over all numbers of trials at once, is at most
    ``1 - level``. A fixed-``n`` interval such as Wilson's does not keep its level under
    such optional stopping.

    Parameters
    ----------
    successes, trials : int, array-like or pandas.Series
        Counts, as in :func:`proportion_ci` (a :class:`~bayeseval.Counts` may be passed
        as ``successes``).
    level : float
        Time-uniform confidence level in (0, 1).
    planned_trials : int, optional
        The number of trials at which the sequence should be narrowest (e.g. a
        campaign's planned labels per stratum). It is a design choice and must be fixed
        before the data are seen; the guarantee holds for any value. Default: an
        untuned prior (concentration 2).

    Returns
    -------
    lower, upper
        Same container rules as :func:`proportion_ci` (floats for scalars, arrays for
        arrays, Series for Series); NaN where ``trials`` is 0.

    Raises
    ------
    ValueError
        Bad counts or ``level`` (as :func:`proportion_ci`), or ``planned_trials`` below 1.

    Notes
    -----
    The sequence inverts, for every null rate ``p``, Robbins' (1970) mixture martingale
    :math:`M_n(p) = \int (q/p)^s ((1-q)/(1-p))^{n-s} \,d\pi_p(q)` with the conjugate
    prior :math:`\pi_p = \mathrm{Beta}(c p, c(1-p))` centred at the null rate, in closed
    form :math:`B(cp + s, c(1-p) + n - s) / (B(cp, c(1-p))\, p^s (1-p)^{n-s})`
    (Howard, Ramdas, McAuliffe and Sekhon 2021, *Ann. Statist.* 49(2), "conjugate
    mixture"). :math:`M_n(p)` is a nonnegative martingale with mean 1 under the rate
    ``p``, so by Ville's inequality it ever reaches :math:`1/(1 - \text{level})` with
    probability at most ``1 - level``; the interval is :math:`\{p : M_n(p) <
    1/(1 - \text{level})\}`, ends found by bisection. It depends on the counts only,
    not on the order of the labels (the betting sequences of Waudby-Smith and Ramdas 2023
    do). ``planned_trials`` sets the concentration ``c`` that minimises the width at that
    ``n`` (about ``planned_trials / 8`` at level 0.95). With a single success the lower
    end is 0 at any ``n``: as ``p`` goes to 0 the prior centred at ``p`` goes with it and
    :math:`M_n(p)` stays below the bound (from two successes on, the lower end is
    positive).

    The price of the guarantee is width: wider than Wilson's interval at any fixed ``n``,
    least so at the ``planned_trials`` it is tuned for; a plan far too large costs more
    than no plan. Exact coverage over every look and the widths are in docs/validation.md,
    section 10b.

    Examples
    --------
    >>> lo, hi = confidence_sequence(10, 100)
    >>> round(lo, 4), round(hi, 4)
    (0.0258, 0.2193)
    >>> w_lo, w_hi = proportion_ci(10, 100)  # Wilson: narrower, valid at a fixed n only
    >>> bool(lo < w_lo and w_hi < hi)
    True
    >>> lo, hi = confidence_sequence([0, 40], [100, 400], planned_trials=400)
    >>> lo.round(4).tolist()[0], bool(hi[1] - lo[1] < 0.1)
    (0.0, True)
    """
    level = check_level(level)
    concentration = UNTUNED_CONCENTRATION
    if planned_trials is not None:
        concentration = tuned_concentration(check_positive_int(planned_trials, "planned_trials"), level)
    s_int, n_int, like, scalar = _checked_counts(successes, trials)
    empty = n_int == 0
    _warn_empty(empty)
    lo, hi = confidence_sequence_bounds(s_int.astype(float), np.where(empty, 1.0, n_int), level, concentration)
    lo, hi = np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)
    return _wrap(lo, like, scalar, "lower"), _wrap(hi, like, scalar, "upper")


def proportion_se(successes: Any, trials: Any) -> Any:
    r"""Plug-in standard error :math:`\sqrt{\hat p(1-\hat p)/n}` of a proportion.

    The plug-in SE is 0 at 0 or ``trials`` successes, which is *not*
    certainty: a :class:`~bayeseval.ZeroVarianceWarning` says so; use
    :func:`proportion_ci` with ``method="wilson"`` or ``"jeffreys"`` for an
    interval that does not collapse. Zero trials give NaN.

    Parameters
    ----------
    successes, trials : int, array-like or pandas.Series
        Counts (paired by index label when both are Series); a rate can be planned with e.g. ``proportion_se(0.9 * n, n)``
        only when ``0.9 * n`` is whole, otherwise use
        :func:`bayeseval.plan.sizes.sample_size`.

    Returns
    -------
    float, numpy.ndarray or pandas.Series
        Same container rules as :func:`proportion_ci`.

    Examples
    --------
    >>> round(proportion_se(90, 100), 4)  # accuracy 0.9 on n = 100: sqrt(0.9 * 0.1 / 100)
    0.03
    """
    successes, trials = align_by_label(("successes", successes), ("trials", trials))
    scalar = np.ndim(successes) == 0 and np.ndim(trials) == 0
    like = successes if isinstance(successes, pd.Series) else trials
    s_int, n_int = check_counts(successes, trials)
    s, n = s_int.astype(float), n_int.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        se = np.sqrt(p * (1 - p) / n)
    se = np.where(n == 0, np.nan, se)
    degenerate = (n > 0) & ((s == 0) | (s == n))
    if np.any(degenerate):
        warnings.warn(
            f"{int(degenerate.sum())} rates are exactly 0 or 1: their plug-in SE is 0, "
            "which is not certainty; use proportion_ci(method='wilson' or 'jeffreys')",
            ZeroVarianceWarning,
            stacklevel=2,
        )
    return _wrap(se, like, scalar, "se")


# -- bootstrap -----------------------------------------------------------------------------


class BootstrapInterval(tuple, Result):
    """A ``(lower, upper)`` pair with the bootstrap details as attributes.

    Unpacks like a tuple (``lo, hi = bootstrap_ci(...)``), has the results
    protocol's one-row :attr:`table` and ``to_frame()``, and carries
    ``estimate`` (the statistic on the data), ``se`` (standard deviation of the
    replicates), ``distribution`` (the replicates), ``method``, ``level`` and
    ``stratified``.

    Parameters
    ----------
    lower, upper : float
        The interval.
    estimate : float
        The statistic on the data.
    se : float
        Standard deviation of the replicates.
    distribution : numpy.ndarray
        The bootstrap replicates (undefined ones dropped).
    method : str
        ``"bca"`` or ``"percentile"``.
    level : float
        Confidence level.
    stratified : bool
        Whether rows were resampled within strata.
    """

    lower: float
    upper: float

    def __new__(
        cls,
        lower: float,
        upper: float,
        *,
        estimate: float,
        se: float,
        distribution: np.ndarray,
        method: str,
        level: float,
        stratified: bool,
    ) -> BootstrapInterval:
        obj = super().__new__(cls, (float(lower), float(upper)))
        obj.lower = float(lower)
        obj.upper = float(upper)
        obj.estimate = float(estimate)
        obj.se = float(se)
        obj.distribution = distribution
        obj.method = method
        obj.level = level
        obj.stratified = stratified
        return obj

    def __init__(
        self,
        lower: float,
        upper: float,
        *,
        estimate: float,
        se: float,
        distribution: np.ndarray,
        method: str,
        level: float,
        stratified: bool,
    ) -> None:
        # the attributes are set by __new__ (a tuple is built there); this signature documents them
        super().__init__()

    @property
    def table(self) -> pd.DataFrame:
        """One row (index ``statistic``): estimate, lower, upper, se, method, level, n_resamples."""
        row = {
            "estimate": self.estimate,
            "lower": self.lower,
            "upper": self.upper,
            "se": self.se,
            "method": self.method,
            "level": self.level,
            "stratified": self.stratified,
            "n_resamples": int(self.distribution.size),
        }
        return pd.DataFrame(row, index=pd.Index(["statistic"], name="quantity"))

    def __repr__(self) -> str:
        kind = "stratified " if self.stratified else ""
        return (
            f"BootstrapInterval({self.lower:.4g}, {self.upper:.4g}; estimate={self.estimate:.4g}, "
            f"se={self.se:.3g}, {kind}{self.method}, level={self.level:g}, "
            f"n_resamples={self.distribution.size})"
        )


def f1_score(y_true: Any, y_pred: Any, *, pos_label: Any = 1, axis: int = -1) -> Any:
    """F1 = 2 TP / (2 TP + FP + FN) along ``axis`` (vectorised for the bootstrap).

    Returns NaN where there are no positives and no predicted positives. A
    missing label (NaN, None, ``pd.NA``) is a ValueError naming the argument; two Series
    are paired by index label.

    Parameters
    ----------
    y_true, y_pred : array-like
        True and predicted labels (the last axis holds the rows).
    pos_label : optional
        The positive class.
    axis : int, default -1
        Axis of the rows.

    Returns
    -------
    float or numpy.ndarray
        F1 along ``axis``.

    Examples
    --------
    >>> f1_score([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    """
    y_true, y_pred = align_by_label(("y_true", y_true), ("y_pred", y_pred))
    check_no_missing(np.ravel(np.asarray(y_true, dtype=object)), "y_true")
    check_no_missing(np.ravel(np.asarray(y_pred, dtype=object)), "y_pred")
    check_class_labels(y_true, "y_true")
    check_class_labels(y_pred, "y_pred")
    return _f1(y_true, y_pred, pos_label, axis)


def _f1(y_true: Any, y_pred: Any, pos_label: Any, axis: int = -1) -> Any:
    yt = np.asarray(y_true) == pos_label
    yp = np.asarray(y_pred) == pos_label
    tp = np.sum(yt & yp, axis=axis)
    denom = np.sum(yt, axis=axis) + np.sum(yp, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), np.nan)
    return float(out) if out.ndim == 0 else out


def _mean_statistic(x: np.ndarray, axis: int = -1) -> Any:
    return np.mean(x, axis=axis)


def _mean_jackknife(x: np.ndarray) -> np.ndarray:
    n = x.size
    if n < 2:
        return np.full(n, np.nan)
    return (x.sum() - x) / (n - 1)


def _f1_jackknife(pos_label: Any) -> Callable[..., np.ndarray]:
    def jack(yt: np.ndarray, yp: np.ndarray) -> np.ndarray:
        t = np.asarray(yt) == pos_label
        p = np.asarray(yp) == pos_label
        tp_i = (t & p).astype(float)
        pos_i = t.astype(float) + p.astype(float)  # 2 tp + fp + fn contribution
        tp = tp_i.sum() - tp_i
        denom = pos_i.sum() - pos_i
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), np.nan)

    return jack


def _weighted_risk_statistic(weights: np.ndarray) -> Callable[..., Any]:
    """sum_k w_k * mean of ``x`` over the rows of stratum k, for any set of rows."""

    def statistic(x: np.ndarray, codes: np.ndarray, axis: int = -1) -> Any:
        total = 0.0
        for k, w in enumerate(weights):
            if w == 0:
                continue
            mask = codes == k
            cnt = np.sum(mask, axis=axis)
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = np.sum(np.where(mask, x, 0.0), axis=axis) / cnt
            total = total + w * rate
        return total

    return statistic


def _weighted_risk_jackknife(weights: np.ndarray) -> Callable[..., np.ndarray]:
    def jack(x: np.ndarray, codes: np.ndarray) -> np.ndarray:
        sums = np.bincount(codes, weights=x, minlength=len(weights))
        counts = np.bincount(codes, minlength=len(weights)).astype(float)
        rates = sums / counts
        full = float(np.sum(weights * rates))
        with np.errstate(invalid="ignore", divide="ignore"):
            dropped = (sums[codes] - x) / (counts[codes] - 1)
        return full + weights[codes] * (dropped - rates[codes])

    return jack


def _weighted_risk_replicates(x: np.ndarray, layout: rs.StratumLayout, weights: np.ndarray) -> Callable[..., Any]:
    """The weighted risk of index matrices laid out stratum by stratum (one reduceat per batch)."""
    starts, sizes = layout.starts, layout.sizes.astype(float)
    used = weights > 0

    def statistic(idx: np.ndarray) -> np.ndarray:
        rates = np.add.reduceat(x[idx], starts, axis=1) / sizes
        # the same sum for the estimate and every replicate (a matrix product may round a
        # one-row product differently, which would break the ties counted in the BCa bias term)
        return np.sum(rates[:, used] * weights[used], axis=1)

    return statistic


def _index_statistic(
    statistic: Callable[..., Any], arrays: list[np.ndarray], vectorized: bool
) -> Callable[[np.ndarray], Any]:
    """``statistic(*arrays)`` as a function of an index matrix (replicates x rows)."""
    if vectorized:
        return lambda idx: statistic(*[a[idx] for a in arrays], axis=-1)
    return lambda idx: [statistic(*[a[i] for a in arrays]) for i in idx]


def _jackknife(statistic: Callable[..., Any], arrays: list[np.ndarray], vectorized: bool) -> np.ndarray:
    """Delete-one jackknife values by brute force (one statistic evaluation per row)."""
    jack = rs.jackknife_values(_index_statistic(statistic, arrays, vectorized), np.zeros(len(arrays[0]), int))
    return jack.values[:, 0]


def _data_items(data: Any) -> list[tuple[str, Any]]:
    if isinstance(data, (pd.DataFrame, pd.Series, np.ndarray)):
        return [("data", data)]
    if (
        isinstance(data, (list, tuple))
        and len(data)
        and all(isinstance(a, (list, tuple, np.ndarray, pd.Series)) for a in data)
    ):
        return [(f"data[{i}]", a) for i, a in enumerate(data)]
    return [("data", data)]


def _as_rows(data: Any, strata: Any) -> tuple[list[np.ndarray], Any]:
    """The data arrays and the strata, pandas inputs paired by index label, no missing values."""
    items = _data_items(data)
    values = align_by_label(*items, ("strata", strata))
    strata = values.pop()
    named: list[tuple[str, Any]] = []
    for (name, _), value in zip(items, values, strict=True):
        if isinstance(value, pd.DataFrame):
            named.extend((f"data[{c!r}]", value[c].to_numpy()) for c in value.columns)
        else:
            named.append((name, value.to_numpy() if isinstance(value, pd.Series) else value))
    arrays = [np.asarray(v) for _, v in named]
    if not arrays or any(a.ndim != 1 for a in arrays):
        raise ValueError(
            f"data must be one 1-D array or a sequence of 1-D arrays of equal length (rows), got {short_repr(data)}"
        )
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"data arrays have mismatched lengths {sorted(lengths)}; rows are resampled jointly")
    rs.check_enough_rows(len(arrays[0]), "data")
    for (name, _), arr in zip(named, arrays, strict=True):
        check_no_missing(arr, name)
    return arrays, strata


def _strata_codes(strata: Any, n_rows: int) -> tuple[np.ndarray | None, pd.Index | None]:
    if strata is None:
        return None, None
    strata_arr = np.asarray(strata.to_numpy() if isinstance(strata, pd.Series) else strata)
    if strata_arr.ndim != 1 or len(strata_arr) != n_rows:
        raise ValueError(f"strata must give one label per row ({n_rows} rows), got shape {strata_arr.shape}")
    check_no_missing(strata_arr, "strata", hint="every row needs a stratum")
    codes, uniques = pd.factorize(strata_arr, sort=True)
    return codes.astype(np.int64), pd.Index(uniques)


_Built = tuple[Callable[[np.ndarray], Any], np.ndarray, Callable[[], rs.Jackknife]]


def _builtin(
    key: str,
    arrays: list[np.ndarray],
    layout: rs.StratumLayout,
    labels: pd.Index | None,
    weights: Any,
    pos_label: Any,
) -> _Built:
    """Index statistic, the rows of the estimate and the closed-form jackknife of a named statistic."""
    n_rows = layout.n_rows
    if key == "mean":
        if len(arrays) != 1:
            raise ValueError(f"statistic='mean' takes one data array, got {len(arrays)}")
        x = as_float_array(arrays[0], "data")
        return (
            (lambda idx: x[idx].mean(axis=1)),
            np.arange(n_rows),
            (lambda: rs.Jackknife(_mean_jackknife(x)[:, None], layout.codes, np.ones(n_rows))),
        )
    if key == "f1":
        if len(arrays) != 2:
            raise ValueError(f"statistic='f1' takes data=(y_true, y_pred), got {len(arrays)} arrays")
        yt, yp = arrays
        rs.check_label_kinds(("data[0] (y_true)", yt), ("data[1] (y_pred)", yp))
        pos = rs.resolve_pos_label(pos_label, arrays, what="statistic='f1'")
        return (
            (lambda idx: _f1(yt[idx], yp[idx], pos, axis=-1)),
            np.arange(n_rows),
            (lambda: rs.Jackknife(_f1_jackknife(pos)(yt, yp)[:, None], layout.codes, np.ones(n_rows))),
        )
    if labels is None:
        raise ValueError("statistic='weighted_risk' needs strata (the stratum of each row)")
    if weights is None:
        raise ValueError("statistic='weighted_risk' needs weights (population shares per stratum)")
    if len(arrays) != 1:
        raise ValueError(f"statistic='weighted_risk' takes one data array of 0/1 outcomes, got {len(arrays)}")
    w = check_weights(pd.Series(dict(weights), dtype=float) if isinstance(weights, Mapping) else weights, labels)
    x = as_float_array(arrays[0], "data")
    return (
        _weighted_risk_replicates(x, layout, w),
        layout.order,
        (lambda: rs.Jackknife(_weighted_risk_jackknife(w)(x, layout.codes)[:, None], layout.codes, np.ones(n_rows))),
    )


@fill_doc()
def bootstrap_ci(
    data: Any,
    statistic: Callable[..., Any] | str = "mean",
    *,
    level: float = 0.95,
    method: str = "bca",
    n_resamples: int = 9999,
    strata: Any = None,
    weights: Mapping[Hashable, float] | Sequence[float] | pd.Series | None = None,
    pos_label: Any = None,
    vectorized: bool | None = None,
    random_seed: int | np.random.Generator | None = None,
) -> BootstrapInterval:
    r"""Bootstrap confidence interval (percentile or BCa) for a statistic of rows.

    Rows are resampled with replacement, jointly across the arrays in ``data``
    (paired). With ``strata`` every stratum's rows are resampled within the
    stratum, so each replicate keeps every stratum with its original count
    (a stratified design's bootstrap; no stratum ever vanishes).

    Parameters
    ----------
    data : array-like, sequence of array-likes, or pandas.DataFrame
        Row data: one array, or several arrays of equal length (for a
        DataFrame, its columns in order) passed to ``statistic`` as positional
        arguments. pandas inputs (and ``strata``) are paired by index label.
        A missing value (NaN, None, ``pd.NA``) is a ValueError naming the
        array and the count: drop or fill such rows first.
    statistic : callable or {"mean", "f1", "weighted_risk"}
        ``statistic(*arrays) -> float``; if it accepts ``axis=`` and
        ``vectorized=True`` is given, it is called on batches of replicates.
        ``"mean"``: mean of one array (a rate of 0/1 outcomes). ``"f1"``:
        ``data = (y_true, y_pred)`` and F1 for ``pos_label``.
        ``"weighted_risk"``: ``data`` = one array of 0/1 outcomes (e.g. errors),
        ``strata`` the rows' strata and ``weights`` the population shares;
        the statistic is :math:`\sum_k \pi_k \hat r_k`.
    level : float, default 0.95
        Confidence level in (0, 1).
    method : {"bca", "percentile"}, default "bca"
        Bias-corrected and accelerated or plain percentile. For a
        single proportion the bootstrap undercovers at small n and collapses to
        a point at 0 or n successes (95% percentile: mean coverage 0.85 over
        n = 5..500, minimum 0.05; see ``docs/validation.md``): use
        :func:`proportion_ci` for one rate and the bootstrap for statistics that
        are not one proportion.
    n_resamples : int, default 9999
        Number of bootstrap replicates.
    strata : array-like, optional
        Stratum label of each row: resample within strata. A callable
        ``statistic`` that needs the rows' strata should receive them as one
        of the ``data`` arrays (every replicate keeps each row's stratum).
    weights : dict, Series or sequence, optional
        Population shares for ``statistic="weighted_risk"`` (keyed by stratum,
        or in the order of the sorted stratum labels).
    pos_label : optional
        Positive class for ``"f1"``; it must be one of the labels. None (the
        default) means 1 for 0/1 or boolean labels and is an error for other
        labels.
    vectorized : bool, optional
        Whether a callable ``statistic`` accepts ``axis=``; the built-in
        statistics are vectorised.
    {random_seed}

    Returns
    -------
    BootstrapInterval
        A ``(lower, upper)`` tuple with ``estimate``, ``se`` and
        ``distribution`` attributes.

    Raises
    ------
    ValueError
        For missing values, mismatched lengths or indexes, a bad argument, or
        a statistic that is undefined on the data.

    {bootstrap_policy}
    BCa is second-order accurate and follows skewed statistics (F1, small risks) better than
    the percentile interval; 9999 replicates keep the Monte-Carlo error of its tail quantiles
    small.

    Without ``strata`` the replicates, the percentile interval and the BCa
    interval are those of :func:`scipy.stats.bootstrap` (``paired=True``) for
    the same generator: bias correction
    :math:`z_0 = \Phi^{-1}(\#\{\theta^*_b < \hat\theta\}/B)` (ties counted
    half) and the acceleration from the delete-one jackknife. With ``strata``
    the strata are resampled as independent samples, and the acceleration is
    the multi-sample formula (Efron & Tibshirani 1993, eq. 15.36; SciPy's for
    several samples) with each stratum's own jackknife. Replicates are drawn
    a batch at a time (memory stays bounded). For the built-in statistics the
    jackknife is in closed form; for a callable it costs one evaluation per
    row, and on more than 2000 rows a delete-a-group jackknife (about 2000
    groups of rows, nested in the strata) gives the acceleration. Replicates where the statistic is undefined are dropped with a
    warning. A degenerate bootstrap distribution (every replicate equal, e.g.
    no errors at all) gives a collapsed interval and a
    :class:`~bayeseval.ZeroVarianceWarning`: it is not certainty.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 200); p = np.where(rng.random(200) < 0.8, y, 1 - y)
    >>> lo, hi = bootstrap_ci((y, p), "f1", n_resamples=999, random_seed=1)
    >>> bool(lo < f1_score(y, p) < hi)
    True
    """
    level = check_level(level)
    method = check_method(method, ("bca", "percentile"))
    n_resamples = check_positive_int(n_resamples, "n_resamples", minimum=10)
    rng = make_rng(random_seed)
    arrays, strata = _as_rows(data, strata)
    codes, labels = _strata_codes(strata, len(arrays[0]))
    layout = rs.stratum_layout(codes, len(arrays[0]))

    if isinstance(statistic, str):
        key = check_method(statistic, ("mean", "f1", "weighted_risk"), name="statistic")
        stat, rows, jack = _builtin(key, arrays, layout, labels, weights, pos_label)
    elif callable(statistic):
        stat = _index_statistic(statistic, arrays, bool(vectorized))
        rows = np.arange(layout.n_rows)
        jack = lambda: rs.jackknife_values(stat, layout.codes)  # noqa: E731
    else:
        raise TypeError(f"statistic must be a callable or a name, got {short_repr(statistic)}")

    estimate = float(np.asarray(stat(rows[None, :]), dtype=float).ravel()[0])
    if not np.isfinite(estimate):
        raise ValueError(f"statistic {short_repr(statistic)} is undefined on the data (got {estimate!r})")
    reps = rs.bootstrap_replicates(stat, layout, n_resamples, rng)
    reps = rs.drop_undefined(reps, f"statistic {short_repr(statistic)}")
    (lo,), (hi,) = rs.confidence_interval(
        reps, [estimate], level=level, method=method, jackknife=jack, what=f"statistic {short_repr(statistic)}"
    )
    dist = reps[:, 0]
    if dist.max() == dist.min():
        warnings.warn(
            "every bootstrap replicate gives the same value, so the bootstrap interval "
            f"collapses to {dist[0]:g}; that is not certainty (e.g. no errors were observed): "
            "use proportion_ci or a Bayesian interval",
            ZeroVarianceWarning,
            stacklevel=2,
        )
    return BootstrapInterval(
        lo,
        hi,
        estimate=estimate,
        se=float(np.std(dist, ddof=1)),
        distribution=dist,
        method=method,
        level=level,
        stratified=codes is not None,
    )
