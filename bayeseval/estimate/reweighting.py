r"""Row reweighting: weights that make a sample look like the population, and metrics under them.

:func:`reweight` gives each row the weight :math:`\pi_k / (n_k / N)` of its stratum (population share
over sample share), so weighted sums over rows describe the population;
:func:`weighted_metric` reports metrics unweighted and reweighted side by side
(:class:`ReweightedMetrics`), with the stratified linearisation SE of a weighted rate. The
population-weighted estimate from per-stratum counts is :func:`~bayeseval.estimate.stratified.stratified_risk`.
"""

from __future__ import annotations

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
from bayeseval._api.warnings import EmptyStratumWarning, ReweightingWarning
from bayeseval._render.formats import fixed
from bayeseval.counts.metrics import Metric, get_metric

__all__ = ["reweight", "weighted_metric", "ReweightedMetrics"]


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
    rate with group strata it equals the plug-in SE of
    :func:`~bayeseval.estimate.stratified.stratified_risk`. Reweighting
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
