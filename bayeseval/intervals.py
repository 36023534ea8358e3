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
from scipy import stats

from bayeseval._core.binomial import PROPORTION_METHODS, binomial_bounds, normalise_method
from bayeseval._validation import (
    _short,
    align_by_label,
    check_counts,
    check_level,
    check_method,
    check_no_missing,
    check_positive_int,
    check_weights,
    make_rng,
)
from bayeseval._warnings import EmptyStratumWarning, ZeroVarianceWarning
from bayeseval.counts import Counts

__all__ = [
    "PROPORTION_METHODS",
    "proportion_ci",
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
    method : {"wilson", "jeffreys", "clopper_pearson", "agresti_coull", "wald"}
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
        ``level`` outside (0, 1), or an unknown ``method``.

    Notes
    -----
    Quantiles come from :mod:`scipy.stats` (``norm.isf``, ``beta.ppf``,
    ``beta.isf``); the bounds agree with statsmodels'
    ``proportion_confint`` to 1e-10 (except Jeffreys at 0 and n, see above).

    Examples
    --------
    >>> lo, hi = proportion_ci(7, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.3968, 0.8922)
    >>> proportion_ci([0, 5], [10, 10], method="clopper_pearson")[0].round(4)
    array([0.    , 0.1871])
    """
    level = check_level(level)
    method = normalise_method(method)
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
    s = s_int.astype(float)
    n = n_int.astype(float)
    alpha = 1.0 - level
    empty = n == 0
    if np.any(empty):
        warnings.warn(
            f"{int(empty.sum())} of {empty.size} proportions have trials=0; "
            "their rate is undefined and the interval is NaN",
            EmptyStratumWarning,
            stacklevel=2,
        )
    n_safe = np.where(empty, 1.0, n)
    lo, hi = binomial_bounds(s, n_safe, alpha, method)
    lo = np.where(empty, np.nan, lo)
    hi = np.where(empty, np.nan, hi)
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
        :func:`bayeseval.planning.sample_size`.

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


class BootstrapInterval(tuple):
    """A ``(lower, upper)`` pair with the bootstrap details as attributes.

    Unpacks like a tuple (``lo, hi = bootstrap_ci(...)``) and carries
    ``estimate`` (the statistic on the data), ``se`` (standard deviation of the
    replicates), ``distribution`` (the replicates), ``method``, ``level`` and
    ``stratified``.
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
    missing label (NaN, None, pd.NA) is an error; two Series are paired by
    index label.

    Examples
    --------
    >>> f1_score([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    """
    y_true, y_pred = align_by_label(("y_true", y_true), ("y_pred", y_pred))
    if np.ndim(y_true) == 1:  # rows; 2-D replicate batches of the bootstrap are not re-checked
        check_no_missing(y_true, "y_true")
        check_no_missing(y_pred, "y_pred")
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


def _as_data(data: Any) -> list[np.ndarray]:
    if isinstance(data, pd.DataFrame):
        arrays = [data[c].to_numpy() for c in data.columns]
    elif isinstance(data, (pd.Series, np.ndarray)):
        arrays = [np.asarray(data)]
    elif isinstance(data, (list, tuple)) and len(data) and all(
        isinstance(a, (list, tuple, np.ndarray, pd.Series)) for a in data
    ):
        arrays = [np.asarray(a) for a in data]
    else:
        arrays = [np.asarray(data)]
    if not arrays or any(a.ndim != 1 for a in arrays):
        raise ValueError(
            "data must be one 1-D array or a sequence of 1-D arrays of equal length (rows), "
            f"got {_short(data)}"
        )
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"data arrays have mismatched lengths {sorted(lengths)}; rows are resampled jointly")
    if lengths == {0}:
        raise ValueError("data is empty; give at least one row")
    return arrays


def _evaluate(
    statistic: Callable[..., Any],
    arrays: list[np.ndarray],
    index: np.ndarray,
    vectorized: bool,
) -> np.ndarray:
    """Statistic on each row of the index matrix ``index`` (replicates x rows)."""
    if vectorized:
        return np.asarray(statistic(*[a[index] for a in arrays], axis=-1), dtype=float).reshape(len(index))
    return np.array([statistic(*[a[idx] for a in arrays]) for idx in index], dtype=float)


def _stratified_distribution(
    statistic: Callable[..., Any],
    arrays: list[np.ndarray],
    codes: np.ndarray,
    n_strata: int,
    n_resamples: int,
    rng: np.random.Generator,
    vectorized: bool,
    stratum_means: np.ndarray | None = None,
) -> np.ndarray:
    """Replicates of the statistic with every stratum's rows resampled within the stratum.

    Index matrices are built a batch of replicates at a time (memory stays
    bounded). With ``stratum_means`` (the weights of a weighted mean of
    per-stratum means of ``arrays[0]``) the statistic is computed directly.
    """
    n_rows = len(codes)
    rows = [np.flatnonzero(codes == k) for k in range(n_strata)]
    batch = max(1, min(n_resamples, 2_000_000 // max(n_rows, 1)))
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        draws = [rng.integers(0, len(r), size=(b, len(r))) for r in rows]
        if stratum_means is not None:
            x = arrays[0]
            val = np.zeros(b)
            for k, r in enumerate(rows):
                if stratum_means[k] > 0:
                    val += stratum_means[k] * x[r][draws[k]].mean(axis=1)
            out[start : start + b] = val
            continue
        index = np.empty((b, n_rows), dtype=np.int64)
        for r, d in zip(rows, draws, strict=True):
            index[:, r] = r[d]
        out[start : start + b] = _evaluate(statistic, arrays, index, vectorized)
    return out


def _jackknife(statistic: Callable[..., Any], arrays: list[np.ndarray], vectorized: bool) -> np.ndarray:
    """Delete-one jackknife values by brute force (one statistic evaluation per row)."""
    n = len(arrays[0])
    base = np.arange(n - 1)
    jack = np.empty(n)
    step = max(1, 2_000_000 // max(n, 1))
    for start in range(0, n, step):
        rows = np.arange(start, min(n, start + step))
        # delete-one index: rows 0..n-2 with the deleted row skipped
        idx = base[None, :] + (base[None, :] >= rows[:, None])
        jack[rows] = _evaluate(statistic, arrays, idx, vectorized)
    return jack


def _bca_probs(dist: np.ndarray, estimate: float, jack: np.ndarray, level: float) -> np.ndarray:
    """BCa quantile levels (Efron 1987), as in scipy.stats.bootstrap."""
    alpha = 1 - level
    # mid-rank of the estimate among the replicates (ties count half), as SciPy does
    z0 = stats.norm.ppf((np.sum(dist < estimate) + np.sum(dist <= estimate)) / (2 * dist.size))
    d = np.nanmean(jack) - jack
    denom = 6.0 * np.nansum(d**2) ** 1.5
    accel = np.nansum(d**3) / denom if denom > 0 else 0.0
    zq = stats.norm.ppf(np.array([alpha / 2, 1 - alpha / 2]))
    return stats.norm.cdf(z0 + (z0 + zq) / (1 - accel * (z0 + zq)))


def bootstrap_ci(
    data: Any,
    statistic: Callable[..., Any] | str = "mean",
    *,
    level: float = 0.95,
    method: str = "bca",
    n_resamples: int = 9999,
    strata: Any = None,
    weights: Mapping[Hashable, float] | Sequence[float] | pd.Series | None = None,
    pos_label: Any = 1,
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
        arguments.
    statistic : callable or {"mean", "f1", "weighted_risk"}
        ``statistic(*arrays) -> float``; if it accepts ``axis=`` and
        ``vectorized=True`` is given, it is called on batches of replicates.
        ``"mean"``: mean of one array (a rate of 0/1 outcomes). ``"f1"``:
        ``data = (y_true, y_pred)`` and F1 for ``pos_label``.
        ``"weighted_risk"``: ``data`` = one array of 0/1 outcomes (e.g. errors),
        ``strata`` the rows' strata and ``weights`` the population shares;
        the statistic is :math:`\sum_k \pi_k \hat r_k`.
    level : float
        Confidence level in (0, 1).
    method : {"bca", "percentile"}
        Bias-corrected and accelerated (default) or plain percentile. For a
        single proportion the bootstrap undercovers at small n and collapses to
        a point at 0 or n successes (95% percentile: mean coverage 0.85 over
        n = 5..500, minimum 0.05; see ``docs/validation.md``): use
        :func:`proportion_ci` for one rate and the bootstrap for statistics that
        are not one proportion.
    n_resamples : int
        Number of bootstrap replicates.
    strata : array-like, optional
        Stratum label of each row: resample within strata. A callable
        ``statistic`` that needs the rows' strata should receive them as one
        of the ``data`` arrays (every replicate keeps each row's stratum).
    weights : dict, Series or sequence, optional
        Population shares for ``statistic="weighted_risk"`` (keyed by stratum,
        or in the order of the sorted stratum labels).
    pos_label : optional
        Positive class for ``"f1"``.
    vectorized : bool, optional
        Whether a callable ``statistic`` accepts ``axis=``; the built-in
        statistics are vectorised.
    random_seed : int or numpy.random.Generator, optional
        Seed for ``numpy.random.default_rng``.

    Returns
    -------
    BootstrapInterval
        A ``(lower, upper)`` tuple with ``estimate``, ``se`` and
        ``distribution`` attributes.

    Notes
    -----
    Without ``strata`` this calls :func:`scipy.stats.bootstrap` (``paired=True``).
    SciPy does not stratify, so with ``strata`` the resampling is done here
    with NumPy (a batch of replicates at a time) and the interval computed the
    same way as SciPy: percentile quantiles, or BCa with the bias correction
    :math:`z_0 = \Phi^{-1}(\#\{\theta^*_b < \hat\theta\}/B)` (ties counted half)
    and the acceleration from the delete-one jackknife over all rows (the
    usual approximation for stratified data). For the built-in statistics the
    jackknife is in closed form; for a callable it costs one evaluation per
    row. With one stratum the result equals SciPy's for the same seed; the
    built-in statistics on more than 5000 rows use this engine for BCa even
    without strata, to avoid SciPy's brute-force jackknife. A degenerate
    bootstrap distribution (every
    replicate equal, e.g. no errors at all) gives a collapsed interval and a
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
    arrays = _as_data(data)
    n_rows = len(arrays[0])

    codes = None
    labels: pd.Index | None = None
    if strata is not None:
        strata_arr = np.asarray(strata.to_numpy() if isinstance(strata, pd.Series) else strata)
        if strata_arr.ndim != 1 or len(strata_arr) != n_rows:
            raise ValueError(
                f"strata must give one label per row ({n_rows} rows), got shape {strata_arr.shape}"
            )
        codes, uniques = pd.factorize(strata_arr, sort=True)
        if np.any(codes < 0):
            raise ValueError("strata has missing labels; every row needs a stratum")
        labels = pd.Index(uniques)

    jack_fn: Callable[..., np.ndarray] | None = None
    stratum_means: np.ndarray | None = None
    if isinstance(statistic, str):
        key = check_method(statistic, ("mean", "f1", "weighted_risk"), name="statistic")
        vectorized = True
        if key == "mean":
            if len(arrays) != 1:
                raise ValueError(f"statistic='mean' takes one data array, got {len(arrays)}")
            arrays = [arrays[0].astype(float)]
            stat_fn: Callable[..., Any] = _mean_statistic
            jack_fn = _mean_jackknife
        elif key == "f1":
            if len(arrays) != 2:
                raise ValueError(f"statistic='f1' takes data=(y_true, y_pred), got {len(arrays)} arrays")

            def stat_fn(yt: np.ndarray, yp: np.ndarray, axis: int = -1) -> Any:
                return f1_score(yt, yp, pos_label=pos_label, axis=axis)

            jack_fn = _f1_jackknife(pos_label)
        else:
            if codes is None or labels is None:
                raise ValueError("statistic='weighted_risk' needs strata (the stratum of each row)")
            if weights is None:
                raise ValueError("statistic='weighted_risk' needs weights (population shares per stratum)")
            if len(arrays) != 1:
                raise ValueError(f"statistic='weighted_risk' takes one data array of 0/1 outcomes, got {len(arrays)}")
            w = check_weights(
                pd.Series(dict(weights), dtype=float) if isinstance(weights, Mapping) else weights, labels
            )
            arrays = [arrays[0].astype(float), codes]
            stat_fn = _weighted_risk_statistic(w)
            jack_fn = _weighted_risk_jackknife(w)
            stratum_means = w
    elif callable(statistic):
        stat_fn = statistic
        vectorized = bool(vectorized)
    else:
        raise TypeError(f"statistic must be a callable or a name, got {_short(statistic)}")

    rng = make_rng(random_seed)
    estimate = float(_evaluate(stat_fn, arrays, np.arange(n_rows)[None, :], vectorized)[0])

    # SciPy's BCa computes a brute-force jackknife (n_rows evaluations on n_rows - 1
    # rows); for the built-in statistics on many rows the closed-form jackknife of the
    # engine below is far cheaper and gives the same interval.
    use_scipy = codes is None and not (method == "bca" and jack_fn is not None and n_rows > 5000)
    if use_scipy:
        res = stats.bootstrap(
            tuple(arrays),
            stat_fn,
            n_resamples=n_resamples,
            batch=max(1, 2_000_000 // max(n_rows, 1)) if vectorized else None,
            vectorized=vectorized,
            paired=True,
            confidence_level=level,
            method="BCa" if method == "bca" else "percentile",
            rng=rng,
        )
        dist = np.asarray(res.bootstrap_distribution, dtype=float)
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.nanmax(dist) == np.nanmin(dist):
            lo = hi = float(dist[0])
    else:
        if codes is None:
            codes_used, n_strata = np.zeros(n_rows, dtype=np.int64), 1
        else:
            codes_used, n_strata = codes, len(labels)  # type: ignore[arg-type]
        dist = _stratified_distribution(
            stat_fn, arrays, codes_used, n_strata, n_resamples, rng, vectorized, stratum_means
        )
        alpha = 1 - level
        probs = np.array([alpha / 2, 1 - alpha / 2])
        if np.nanmax(dist) > np.nanmin(dist) and method == "bca":
            jack = jack_fn(*arrays) if jack_fn is not None else _jackknife(stat_fn, arrays, vectorized)
            probs = _bca_probs(dist, estimate, jack, level)
        if np.any(~np.isfinite(probs)):
            probs = np.array([alpha / 2, 1 - alpha / 2])
        lo, hi = (float(v) for v in np.nanquantile(dist, probs))
    if np.nanmax(dist) == np.nanmin(dist):
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
        se=float(np.nanstd(dist, ddof=1)),
        distribution=dist,
        method=method,
        level=level,
        stratified=codes is not None,
    )
