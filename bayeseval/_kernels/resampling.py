"""The bootstrap kernel behind :func:`bayeseval.bootstrap_ci` and :func:`bayeseval.paired_bootstrap`.

One implementation of each piece:

* stratified resampling: index matrices in which every stratum keeps its
  size (:func:`resample_indices`), or, for statistics of the counts of
  distinct rows, multinomial counts per stratum (:func:`resample_counts`;
  the same bootstrap distribution at a cost independent of the rows);
  replicates are drawn a batch at a time so memory stays bounded;
* the delete-one jackknife (:func:`jackknife_values`, :func:`jackknife_counts`),
  and a delete-a-group jackknife for statistics without a closed form on many
  rows (:func:`jackknife_groups`);
* percentile and BCa intervals (:func:`confidence_interval`): the bias
  correction :math:`z_0 = \\Phi^{-1}(p)` with :math:`p` the share of
  replicates below the estimate, ties counted half, and the acceleration from
  the jackknife with the multi-sample formula of Efron & Tibshirani (1993,
  eq. 15.36) where the samples are the strata. With one stratum both equal
  :func:`scipy.stats.bootstrap` (which uses the same formulas) for the same
  replicates.

It also holds the policy shared by the two public functions for the default
positive class and for missing or misaligned rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from bayeseval._api.validation import check_class_labels
from bayeseval._api.warnings import BayesevalWarning, ZeroVarianceWarning

__all__ = [
    "MAX_CELLS",
    "MIN_REPLICATES",
    "MAX_DELETIONS",
    "StratumLayout",
    "stratum_layout",
    "check_enough_rows",
    "batch_size",
    "resample_indices",
    "bootstrap_replicates",
    "resample_counts",
    "Jackknife",
    "jackknife_groups",
    "jackknife_values",
    "jackknife_counts",
    "acceleration",
    "bias_correction",
    "drop_undefined",
    "confidence_interval",
    "resolve_pos_label",
    "check_label_kinds",
]

#: Index entries (or counts) materialised per batch of replicates: about 16 MB of int64.
MAX_CELLS = 2_000_000
#: Rows above which the jackknife deletes groups of rows rather than single rows.
MAX_DELETIONS = 2000
#: Fewest usable replicates an interval is computed from.
MIN_REPLICATES = 10


# -- stratified resampling ---------------------------------------------------------------------


@dataclass(frozen=True)
class StratumLayout:
    """Rows grouped by stratum.

    ``groups[k]`` holds the row positions of stratum ``k``. A resampled index
    matrix has the columns of stratum 0 first, then those of stratum 1, and so
    on (``starts`` are the first column of each stratum), so per-stratum sums
    of a replicate are one ``np.add.reduceat``.
    """

    codes: np.ndarray
    groups: tuple[np.ndarray, ...]

    @property
    def n_rows(self) -> int:
        return int(self.codes.size)

    @property
    def n_strata(self) -> int:
        return len(self.groups)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([g.size for g in self.groups], dtype=np.int64)

    @property
    def starts(self) -> np.ndarray:
        return np.r_[0, np.cumsum(self.sizes)[:-1]].astype(np.int64)

    @property
    def order(self) -> np.ndarray:
        """The original rows in resampled column order (the data as one 'replicate')."""
        return np.concatenate(self.groups)


def stratum_layout(codes: np.ndarray | None, n_rows: int) -> StratumLayout:
    """Layout of ``n_rows`` rows with stratum codes ``0..S-1`` (None: one stratum).

    Examples
    --------
    >>> lay = stratum_layout(np.array([1, 0, 1, 1]), 4)
    >>> [g.tolist() for g in lay.groups], lay.starts.tolist()
    ([[1], [0, 2, 3]], [0, 1])
    """
    if codes is None:
        codes = np.zeros(n_rows, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    n_strata = int(codes.max()) + 1 if codes.size else 0
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=n_strata))[:-1]
    return StratumLayout(codes=codes, groups=tuple(np.split(order, bounds)))


def check_enough_rows(n_rows: int, name: str) -> None:
    """Raise ValueError unless there are at least two rows to resample (naming the argument).

    Examples
    --------
    >>> check_enough_rows(1, "data")
    Traceback (most recent call last):
    ...
    ValueError: data has 1 row(s); the bootstrap needs at least two
    """
    if n_rows < 2:
        raise ValueError(f"{name} has {n_rows} row(s); the bootstrap needs at least two")


def batch_size(n_resamples: int, width: int, max_cells: int = MAX_CELLS) -> int:
    """Replicates per batch so that a batch holds at most ``max_cells`` entries."""
    return max(1, min(n_resamples, max_cells // max(width, 1)))


def resample_indices(
    layout: StratumLayout, n_resamples: int, rng: np.random.Generator, *, max_cells: int = MAX_CELLS
) -> Iterator[np.ndarray]:
    """Yield index matrices (replicates x rows), every stratum resampled within itself.

    Each row of a matrix is one bootstrap replicate: for every stratum ``k``,
    ``sizes[k]`` draws with replacement from that stratum's rows, in the
    columns ``starts[k]:starts[k] + sizes[k]``. The draws are
    ``rng.integers(0, n_k, (b, n_k))`` per batch and stratum, so with one
    stratum the replicates are those of :func:`scipy.stats.bootstrap` for the
    same generator (``paired=True``), and with several those of its
    multi-sample bootstrap (one sample per stratum) with the same ``batch``.

    Examples
    --------
    >>> lay = stratum_layout(np.array([0, 0, 1]), 3)
    >>> idx = next(resample_indices(lay, 4, np.random.default_rng(0)))
    >>> idx.shape, bool(np.all(idx[:, 2] == 2))
    ((4, 3), True)
    """
    b = batch_size(n_resamples, layout.n_rows, max_cells)
    for start in range(0, n_resamples, b):
        m = min(b, n_resamples - start)
        yield np.concatenate([g[rng.integers(0, g.size, size=(m, g.size))] for g in layout.groups], axis=1)


def _as_columns(values: Any, rows: int) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(rows, -1)


def bootstrap_replicates(
    statistic: Callable[[np.ndarray], Any],
    layout: StratumLayout,
    n_resamples: int,
    rng: np.random.Generator,
    *,
    max_cells: int = MAX_CELLS,
) -> np.ndarray:
    """Replicates (n_resamples x k) of ``statistic(index_matrix) -> (b,) or (b, k)``.

    Examples
    --------
    >>> x = np.arange(5.0)
    >>> reps = bootstrap_replicates(lambda idx: x[idx].mean(axis=1), stratum_layout(None, 5), 100,
    ...                             np.random.default_rng(0))
    >>> reps.shape, bool(reps.min() >= 0 and reps.max() <= 4)
    ((100, 1), True)
    """
    parts = [
        _as_columns(statistic(idx), len(idx)) for idx in resample_indices(layout, n_resamples, rng, max_cells=max_cells)
    ]
    return np.concatenate(parts, axis=0)


def resample_counts(
    statistic: Callable[[np.ndarray], Any],
    counts: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator,
    *,
    max_cells: int = MAX_CELLS,
) -> np.ndarray:
    """Replicates of a statistic of cell counts: the row bootstrap for count statistics.

    ``counts[s, c]`` is the number of rows of stratum ``s`` in cell ``c``
    (rows that are identical for the statistic). Resampling the rows of each
    stratum with replacement gives multinomial cell counts with the stratum's
    size and the observed shares, so each replicate's counts are drawn
    directly. Counts may be fractional (expected counts, for a parametric
    bootstrap at given shares) when each stratum's total is a whole number. ``statistic`` maps an array (..., S, C) of counts to (...,) or
    (..., k).

    Examples
    --------
    >>> counts = np.array([[3.0, 1.0], [0.0, 2.0]])
    >>> reps = resample_counts(lambda c: c[..., 1].sum(-1), counts, 50, np.random.default_rng(0))
    >>> reps.shape, bool(reps.min() >= 2)
    ((50, 1), True)
    """
    counts = np.asarray(counts, dtype=float)
    sizes = counts.sum(axis=1)
    shares = counts / sizes[:, None]
    b = batch_size(n_resamples, counts.size, max_cells)
    parts = []
    for start in range(0, n_resamples, b):
        m = min(b, n_resamples - start)
        draws = rng.multinomial(np.rint(sizes).astype(np.int64), shares, size=(m, counts.shape[0]))
        parts.append(_as_columns(statistic(draws.astype(float)), m))
    return np.concatenate(parts, axis=0)


# -- jackknife ---------------------------------------------------------------------------------


class Jackknife(NamedTuple):
    """Delete-one jackknife values with the stratum of the deleted row.

    ``values`` (m x k): the statistic without one row; ``codes`` (m,): that
    row's stratum; ``freq`` (m,): how many rows each value stands for (rows
    that are identical for the statistic share one value).
    """

    values: np.ndarray
    codes: np.ndarray
    freq: np.ndarray


def jackknife_groups(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Group of each row for a delete-a-group jackknife: about ``n_groups`` groups nested in strata.

    Groups have about ``ceil(n / n_groups)`` rows; within a stratum the rows are
    dealt out in turn (row ``i`` of the stratum to group ``i mod G_j``), so every
    group spreads over the whole stratum. A stratum has at least two groups
    when it has two rows.

    Examples
    --------
    >>> jackknife_groups(np.array([0, 0, 0, 0, 1, 1, 1]), 3).tolist()
    [0, 1, 0, 1, 2, 3, 2]
    """
    codes = np.asarray(codes, dtype=np.int64)
    size = -(-codes.size // max(n_groups, 1))
    out = np.empty(codes.size, dtype=np.int64)
    offset = 0
    for rows in stratum_layout(codes, codes.size).groups:
        g = max(-(-rows.size // size), min(rows.size, 2))
        out[rows] = offset + np.arange(rows.size) % g
        offset += g
    return out


def jackknife_values(
    statistic: Callable[[np.ndarray], Any],
    codes: np.ndarray,
    *,
    max_cells: int = MAX_CELLS,
    max_deletions: int = MAX_DELETIONS,
) -> Jackknife:
    """Jackknife of ``statistic(index_matrix)``: delete-one, or delete-a-group on many rows.

    Up to ``max_deletions`` rows, row ``i`` of the result is the statistic on
    every row but ``i`` (which also deletes it from its stratum), computed a
    batch at a time; this is the jackknife of :func:`scipy.stats.bootstrap`.
    On more rows, a delete-a-group jackknife with about ``max_deletions``
    groups nested in the strata (:func:`jackknife_groups`) keeps the cost at
    ``max_deletions`` evaluations: each value is the statistic without one
    group, standing for that group in :func:`acceleration` (which estimates the
    same skewness from group totals). ``codes`` are the rows' strata.

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 6.0])
    >>> jackknife_values(lambda idx: x[idx].mean(axis=1), np.zeros(3, int)).values.ravel().tolist()
    [4.0, 3.5, 1.5]
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = int(codes.size)
    if n > max_deletions:
        return _group_jackknife(statistic, codes, max_deletions)
    base = np.arange(n - 1)
    step = batch_size(n, n - 1, max_cells)
    parts = []
    for start in range(0, n, step):
        rows = np.arange(start, min(n, start + step))
        idx = base[None, :] + (base[None, :] >= rows[:, None])  # rows 0..n-1 without `rows[j]`
        parts.append(_as_columns(statistic(idx), rows.size))
    return Jackknife(np.concatenate(parts, axis=0), codes, np.ones(n))


def _group_jackknife(statistic: Callable[[np.ndarray], Any], codes: np.ndarray, n_groups: int) -> Jackknife:
    gid = jackknife_groups(codes, n_groups)
    n_gid = int(gid.max()) + 1
    values = [_as_columns(statistic(np.flatnonzero(gid != g)[None, :]), 1) for g in range(n_gid)]
    group_codes = np.zeros(n_gid, dtype=np.int64)
    group_codes[gid] = codes
    return Jackknife(np.concatenate(values, axis=0), group_codes, np.ones(n_gid))


def jackknife_counts(statistic: Callable[[np.ndarray], Any], counts: np.ndarray) -> Jackknife:
    """Delete-one jackknife of a statistic of cell counts (see :func:`resample_counts`).

    Deleting any row of a cell gives the same value, so there is one value per
    non-empty cell, weighted by the cell's count.

    Examples
    --------
    >>> jk = jackknife_counts(lambda c: c[..., 1].sum(-1) / c.sum((-1, -2)), np.array([[3.0, 1.0]]))
    >>> jk.values.ravel().tolist(), jk.freq.tolist()
    ([0.3333333333333333, 0.0], [3.0, 1.0])
    """
    counts = np.asarray(counts, dtype=float)
    cells = np.argwhere(counts > 0)
    loo = np.repeat(counts[None], len(cells), axis=0)
    loo[np.arange(len(cells)), cells[:, 0], cells[:, 1]] -= 1.0
    values = _as_columns(statistic(loo), len(cells))
    return Jackknife(values, cells[:, 0].astype(np.int64), counts[cells[:, 0], cells[:, 1]])


def acceleration(jack: Jackknife) -> np.ndarray:
    r"""BCa acceleration of each column of the jackknife values (strata as samples).

    With :math:`\theta_{(i)}` the value without row :math:`i` of stratum
    :math:`j` (of :math:`n_j` rows), :math:`U_i = (n_j - 1)(\bar\theta_{(j)} - \theta_{(i)})`
    and

    .. math:: a = \frac{\sum_j \sum_{i \in j} U_i^3 / n_j^3}
                       {6\,(\sum_j \sum_{i \in j} U_i^2 / n_j^2)^{3/2}},

    the multi-sample formula that :func:`scipy.stats.bootstrap` uses (one
    stratum: the usual :math:`\sum d^3 / (6 (\sum d^2)^{3/2})`). Undefined
    jackknife values (deleting the row leaves the statistic undefined) are
    left out; strata with fewer than two values contribute nothing; a zero
    denominator gives 0.

    Examples
    --------
    >>> x = np.array([0.0, 0.0, 1.0])
    >>> jk = Jackknife(((x.sum() - x) / 2)[:, None], np.zeros(3, int), np.ones(3))
    >>> round(float(acceleration(jk)[0]), 6)
    0.068041
    """
    values = np.atleast_2d(np.asarray(jack.values, dtype=float))
    n_strata = int(jack.codes.max()) + 1 if jack.codes.size else 0
    out = np.zeros(values.shape[1])
    for col in range(values.shape[1]):
        theta = values[:, col]
        ok = np.isfinite(theta)
        w = np.where(ok, jack.freq, 0.0)
        t = np.where(ok, theta, 0.0)
        n_j = np.bincount(jack.codes, weights=w, minlength=n_strata)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_j = np.bincount(jack.codes, weights=w * t, minlength=n_strata) / n_j
        used = ok & (n_j[jack.codes] >= 2)
        nj = n_j[jack.codes[used]]
        u = (nj - 1.0) * (mean_j[jack.codes[used]] - t[used])
        num = np.sum(w[used] * u**3 / nj**3)
        den = np.sum(w[used] * u**2 / nj**2)
        out[col] = num / (6.0 * den**1.5) if den > 0 else 0.0
    return out


# -- intervals ---------------------------------------------------------------------------------


def bias_correction(replicates: np.ndarray, estimate: float) -> float:
    r"""BCa bias correction :math:`z_0 = \Phi^{-1}((\#\{\theta^* < \hat\theta\} + \#\{\theta^* \le \hat\theta\}) / 2B)`.

    The share of replicates below the estimate with ties counted half, as
    :func:`scipy.stats.bootstrap` computes it. Infinite when the estimate lies
    outside the replicates' range.

    Examples
    --------
    >>> round(bias_correction(np.array([1.0, 2.0, 3.0, 4.0]), 2.0), 6)  # 1.5 of 4 below
    -0.318639
    """
    reps = np.asarray(replicates, dtype=float)
    below = np.count_nonzero(reps < estimate) + np.count_nonzero(reps <= estimate)
    return float(ndtri(below / (2 * reps.size)))


def drop_undefined(replicates: np.ndarray, what: str, *, stacklevel: int = 3) -> np.ndarray:
    """Drop replicates (rows) with an undefined value, warning with the count.

    Raises ValueError when fewer than :data:`MIN_REPLICATES` remain.

    Examples
    --------
    >>> drop_undefined(np.arange(12.0)[:, None], "the mean").shape
    (12, 1)
    """
    reps = np.asarray(replicates, dtype=float)
    ok = np.all(np.isfinite(reps), axis=1)
    if ok.all():
        return reps
    dropped = int(np.count_nonzero(~ok))
    if reps.shape[0] - dropped < MIN_REPLICATES:
        raise ValueError(
            f"{what} is undefined in {dropped} of {reps.shape[0]} bootstrap replicates (e.g. no trials "
            f"in a replicate); fewer than {MIN_REPLICATES} usable replicates remain"
        )
    warnings.warn(
        f"{dropped} of {reps.shape[0]} bootstrap replicates gave an undefined {what} (e.g. no trials "
        "in the replicate) and were dropped; the interval may be too narrow (give strata to "
        "resample within them)",
        BayesevalWarning,
        stacklevel=stacklevel,
    )
    return reps[ok]


def _quantile_levels(
    reps: np.ndarray, estimate: float, alpha: float, accel: float | None, what: str, stacklevel: int
) -> np.ndarray:
    if accel is None:
        return np.array([alpha, 1.0 - alpha])
    z0 = bias_correction(reps, estimate)
    if not np.isfinite(z0):
        warnings.warn(
            f"the BCa interval of {what} is undefined: the estimate {estimate:g} lies outside every "
            "bootstrap replicate; the percentile interval is given instead",
            BayesevalWarning,
            stacklevel=stacklevel,
        )
        return np.array([alpha, 1.0 - alpha])
    z = np.array([ndtri(alpha), -ndtri(alpha)])
    return ndtr(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))


def confidence_interval(
    replicates: np.ndarray,
    estimate: Sequence[float] | np.ndarray,
    *,
    level: float,
    method: str,
    jackknife: Callable[[], Jackknife] | None = None,
    what: str = "the statistic",
    stacklevel: int = 3,
    names: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile or BCa interval of each column of the replicates.

    The interval is the pair of quantiles (linear interpolation, as NumPy and
    SciPy) of the replicates at :math:`\\alpha/2` and :math:`1 - \\alpha/2`
    (percentile) or at the BCa levels
    :math:`\\Phi(z_0 + (z_0 + z_q) / (1 - a (z_0 + z_q)))`, with :math:`z_0`
    from :func:`bias_correction` and :math:`a` from :func:`acceleration` of
    ``jackknife()`` (called only for BCa). A column whose replicates are all
    equal gives that value twice, with a ``ZeroVarianceWarning`` (a zero-width interval is
    not certainty: a model right on every resampled row has an accuracy interval [1, 1]);
    ``names`` label the columns in it. An infinite :math:`z_0` gives the
    percentile interval with a warning.

    Examples
    --------
    >>> reps = np.linspace(0, 1, 101)[:, None]
    >>> lo, hi = confidence_interval(reps, [0.5], level=0.9, method="percentile")
    >>> round(float(lo[0]), 9), round(float(hi[0]), 9)
    (0.05, 0.95)
    """
    reps = np.asarray(replicates, dtype=float)
    est = np.atleast_1d(np.asarray(estimate, dtype=float))
    alpha = (1.0 - level) / 2.0
    accel = None
    if method == "bca":  # without a jackknife: no acceleration (the bias-corrected percentile interval)
        accel = acceleration(jackknife()) if jackknife is not None else np.zeros(reps.shape[1])
    lower = np.empty(reps.shape[1])
    upper = np.empty(reps.shape[1])
    for col in range(reps.shape[1]):
        r = reps[:, col]
        if r.max() == r.min():
            lower[col] = upper[col] = r[0]
            _warn_constant(what if names is None else f"{what} ({names[col]})", float(r[0]), stacklevel + 1)
            continue
        a = None if accel is None else float(accel[col])
        probs = _quantile_levels(r, float(est[col]), alpha, a, what, stacklevel + 1)
        lower[col], upper[col] = np.quantile(r, probs)
    return lower, upper


def _warn_constant(what: str, value: float, stacklevel: int) -> None:
    warnings.warn(
        f"every bootstrap replicate of {what} is {value:g}: its interval [{value:g}, {value:g}] "
        "has width 0, which is not certainty (the resamples cannot vary a rate of 0 or 1); for "
        "a proportion use an exact interval (proportion_ci with method='clopper_pearson')",
        ZeroVarianceWarning,
        stacklevel=stacklevel,
    )


# -- shared row policy ---------------------------------------------------------------------------


def _label_set(arrays: Sequence[np.ndarray]) -> list[Any]:
    return list(pd.unique(np.concatenate([pd.unique(np.asarray(a).ravel()).astype(object) for a in arrays])))


def resolve_pos_label(pos_label: Any, arrays: Sequence[np.ndarray], *, what: str) -> Any:
    """The positive class for a metric of labels: one policy for both bootstrap functions.

    An explicit ``pos_label`` must be one of the labels seen. ``None`` means
    ``1`` when the labels are 0/1 or booleans; otherwise ``pos_label`` is
    required (ValueError).

    Examples
    --------
    >>> resolve_pos_label(None, [np.array([0, 1, 1])], what="f1")
    1
    >>> resolve_pos_label("yes", [np.array(["yes", "no"])], what="f1")
    'yes'
    """
    labels = _label_set(arrays)
    shown = "[" + ", ".join(sorted(map(repr, labels))[:6]) + "]"
    if pos_label is not None:
        if not any(_same_label(pos_label, lab) for lab in labels):
            raise ValueError(f"pos_label {pos_label!r} is not among the labels {shown}")
        return pos_label
    if set(labels) <= {0, 1}:
        return 1
    raise ValueError(
        f"{what} needs pos_label (the positive class) for labels {shown}; pos_label=None means 1 "
        "only for 0/1 or boolean labels"
    )


def _label_kind(arr: np.ndarray) -> str:
    if arr.dtype.kind in "biuf":
        return "numbers"
    if arr.dtype.kind in "US":
        return "strings"
    kinds = {
        "strings"
        if isinstance(v, (str, bytes))
        else "numbers"
        if isinstance(v, (int, float, np.number, np.bool_))
        else type(v).__name__
        for v in pd.unique(arr)
    }
    return kinds.pop() if len(kinds) == 1 else "mixed types " + "/".join(sorted(kinds))


def check_label_kinds(*named: tuple[str, np.ndarray]) -> None:
    """Raise ValueError when label arrays mix numbers and strings (``1`` never equals ``"1"``)
    or hold a fractional number (a score is not a class).

    Examples
    --------
    >>> check_label_kinds(("y_true", np.array([0, 1])), ("pred_a", np.array(["0", "1"])))
    Traceback (most recent call last):
    ...
    ValueError: labels must be of one kind to be compared: y_true holds numbers, pred_a holds strings
    """
    for name, arr in named:
        check_class_labels(arr, name)
    kinds = {name: _label_kind(np.asarray(arr)) for name, arr in named}
    if len(set(kinds.values())) > 1 or any(k.startswith("mixed") for k in kinds.values()):
        shown = ", ".join(f"{name} holds {kind}" for name, kind in kinds.items())
        raise ValueError(f"labels must be of one kind to be compared: {shown}")


def _same_label(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
