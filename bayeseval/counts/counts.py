"""Counts: successes and trials per stratum, the structure every estimator works on.

Only :func:`tabulate` touches row-level data; everything downstream works on
the sufficient statistics held by :class:`Counts`, so it costs the same for a
thousand rows or a billion.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import align_by_label, check_counts, check_weights, iter_columns
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval._backends.dispatch import backend_for
from bayeseval._backends.interface import ConfusionTable
from bayeseval._kernels.naming import fresh_names
from bayeseval._render.formats import index_labels
from bayeseval.counts.labels import check_label_types, resolve_positive
from bayeseval.counts.metrics import Metric, get_metric
from bayeseval.counts.proxy import tabulate_proxy

__all__ = ["Counts", "tabulate", "confusion_counts"]


@dataclass(frozen=True, eq=False, repr=False)
class Counts(Result):
    """Successes and trials per stratum, with the stratum labels as a pandas index.

    Build one with :func:`tabulate` from a predictions frame, or with
    :meth:`Counts.from_arrays` from numbers you already have.

    Parameters
    ----------
    successes, trials : pandas.Series
        Counts indexed by stratum; ``trials`` is paired with ``successes`` by
        label.
    metric : str, optional
        Name of the metric the counts measure.
    weights : array-like, dict or Series, optional
        Population shares of the strata, summing to 1.

    Attributes
    ----------
    successes, trials : pandas.Series
        Integer counts indexed by stratum (a plain or a multi-level index),
        paired by stratum label (``trials`` is put in the order of
        ``successes``); each count is a whole number from 0 to 2**53 and the
        totals fit a 64-bit integer.
    metric : str or None
        Name of the metric the counts measure, when known.
    weights : pandas.Series or None
        Population shares of the strata (summing to 1), when known.

    Examples
    --------
    >>> c = Counts.from_arrays([3, 10], [40, 120], strata=["a", "b"])
    >>> c.rates.round(3).tolist()
    [0.075, 0.083]
    """

    successes: pd.Series
    trials: pd.Series
    metric: str | None = None
    weights: pd.Series | None = field(default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.successes, pd.Series) or not isinstance(self.trials, pd.Series):
            raise TypeError("Counts.successes and Counts.trials must be pandas Series")
        if not self.successes.index.equals(self.trials.index):
            # paired by stratum label (raises naming both when the label sets differ)
            _, trials = align_by_label(("successes", self.successes), ("trials", self.trials))
            object.__setattr__(self, "trials", trials)
        if self.successes.index.has_duplicates:
            dup = self.successes.index[self.successes.index.duplicated()][0]
            raise ValueError(f"strata must be unique, got {dup!r} twice")
        s, n = check_counts(self.successes.to_numpy(), self.trials.to_numpy())
        index = self.successes.index
        object.__setattr__(self, "successes", pd.Series(s, index=index, name="successes"))
        object.__setattr__(self, "trials", pd.Series(n, index=index, name="trials"))
        if self.weights is not None:
            w = check_weights(self.weights, index)
            object.__setattr__(self, "weights", pd.Series(w, index=index, name="weights"))

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        successes: Any,
        trials: Any,
        *,
        strata: Sequence[Hashable] | pd.Index | None = None,
        weights: Any = None,
        metric: str | None = None,
    ) -> Counts:
        """Build Counts from arrays (or Series) of successes and trials.

        Parameters
        ----------
        successes, trials : array-like or pandas.Series
            Counts per stratum: whole numbers from 0 to 2**53 (larger ones are
            not exact as floats), with totals that fit a 64-bit integer. If
            ``successes`` is a Series its index names the strata. Two Series
            are paired by index label, not position (the order of
            ``successes`` is kept); their indexes must hold the same labels.
        strata : sequence, optional
            Stratum labels; defaults to the Series index or ``0..K-1``.
        weights : array-like, dict or Series, optional
            Population shares, summing to 1.
        metric : str, optional
            Name of the metric.

        Returns
        -------
        Counts
            The validated counts (``successes`` itself when it is a Counts).

        Examples
        --------
        >>> Counts.from_arrays([1, 2], [10, 20]).to_frame().shape
        (2, 2)
        >>> s = pd.Series([1, 2], index=["a", "b"])
        >>> n = pd.Series([10, 3], index=["b", "a"])
        >>> Counts.from_arrays(s, n).trials.to_dict()
        {'a': 3, 'b': 10}
        """
        if isinstance(successes, Counts):
            return successes
        successes, trials = align_by_label(("successes", successes), ("trials", trials))
        if strata is None:
            if isinstance(successes, pd.Series):
                strata = successes.index
            elif isinstance(trials, pd.Series):
                strata = trials.index
        s, n = check_counts(successes, trials)
        s, n = np.atleast_1d(s), np.atleast_1d(n)
        if s.ndim != 1:
            raise ValueError(f"successes and trials must be one-dimensional, got shape {s.shape}")
        if strata is None:
            index = pd.RangeIndex(len(s), name="stratum")
        else:
            index = strata if isinstance(strata, pd.Index) else pd.Index(list(strata), name="stratum")
            if len(index) != len(s):
                raise ValueError(f"strata has {len(index)} labels but there are {len(s)} counts")
        return cls(pd.Series(s, index=index), pd.Series(n, index=index), metric=metric, weights=weights)

    # -- views ----------------------------------------------------------------------------
    @property
    def strata(self) -> pd.Index:
        """The stratum labels."""
        return self.successes.index

    @property
    def rates(self) -> pd.Series:
        """Raw rates ``successes / trials`` (NaN where a stratum has no trials)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            r = self.successes.to_numpy() / self.trials.to_numpy()
        r = np.where(self.trials.to_numpy() > 0, r, np.nan)
        return pd.Series(r, index=self.strata, name="rate")

    @property
    def empty(self) -> pd.Index:
        """Strata with zero trials (kept, flagged, never silently dropped)."""
        return self.strata[self.trials.to_numpy() == 0]

    @property
    def total_successes(self) -> int:
        """Successes summed over strata."""
        return int(self.successes.sum())

    @property
    def total_trials(self) -> int:
        """Trials summed over strata."""
        return int(self.trials.sum())

    @property
    def sample_shares(self) -> pd.Series:
        """Each stratum's share of the trials in the sample."""
        total = self.total_trials
        return (self.trials / total if total else self.trials * np.nan).rename("sample_share")

    def __len__(self) -> int:
        return len(self.successes)

    def _heading(self) -> str:
        metric = f" metric={self.metric!r}" if self.metric else ""
        return f"<Counts{metric} strata={len(self)} successes={self.total_successes} trials={self.total_trials}>"

    @property
    def table(self) -> pd.DataFrame:
        """Successes and trials per stratum (and ``weights`` when given), indexed by stratum."""
        frame = self.to_frame()
        if self.weights is not None:
            frame["weights"] = self.weights
        return frame

    def to_frame(self) -> pd.DataFrame:
        """A DataFrame indexed by stratum with columns ``successes`` and ``trials``.

        Returns
        -------
        pandas.DataFrame
            One row per stratum.

        Examples
        --------
        >>> Counts.from_arrays([1], [4], strata=["x"]).to_frame().loc["x", "trials"]
        np.int64(4)
        """
        frame = pd.DataFrame({"successes": self.successes, "trials": self.trials})
        return frame

    def to_xarray(self) -> Any:
        """An xarray Dataset with ``successes``, ``trials`` (and ``weights``) over ``stratum``.

        A multi-level stratum index becomes one ``stratum`` dimension whose labels
        are the joined level values, with each level kept as a coordinate.

        Returns
        -------
        xarray.Dataset
            One ``stratum`` dimension; the metric name (if any) in ``attrs``.
        """
        import xarray as xr

        frame = self.to_frame()
        if self.weights is not None:
            frame["weights"] = self.weights
        index = self.strata
        labels = stratum_labels(index)
        ds = xr.Dataset(
            {col: ("stratum", frame[col].to_numpy()) for col in frame.columns},
            coords={"stratum": labels},
        )
        if isinstance(index, pd.MultiIndex):
            for i, name in enumerate(index.names):
                # a level called "stratum" must not overwrite the joined dimension labels
                coord = str(name) if name is not None and str(name) != "stratum" else f"level_{i}"
                ds = ds.assign_coords({coord: ("stratum", index.get_level_values(i).to_numpy())})
        if self.metric:
            ds.attrs["metric"] = self.metric
        return ds

    def with_weights(self, weights: Any) -> Counts:
        """Return a copy carrying population shares ``weights`` (summing to 1).

        Parameters
        ----------
        weights : array-like, dict or Series
            Population share of each stratum, summing to 1.

        Returns
        -------
        Counts
            The same counts with ``weights`` set.
        """
        return Counts(self.successes, self.trials, metric=self.metric, weights=weights)

    def subset(self, strata: Iterable[Hashable]) -> Counts:
        """Counts restricted to the given strata (weights dropped, since they no longer sum to 1).

        Parameters
        ----------
        strata : iterable
            Labels of the strata to keep, in the order wanted.

        Returns
        -------
        Counts
            The selected strata, without weights.
        """
        keep = list(strata)
        return Counts(self.successes.loc[keep], self.trials.loc[keep], metric=self.metric)

    def __add__(self, other: Counts) -> Counts:
        if not isinstance(other, Counts):
            return NotImplemented
        index = self.strata.union(other.strata, sort=False)
        s = self.successes.reindex(index, fill_value=0) + other.successes.reindex(index, fill_value=0)
        n = self.trials.reindex(index, fill_value=0) + other.trials.reindex(index, fill_value=0)
        return Counts(s, n, metric=self.metric or other.metric)


def stratum_labels(index: pd.Index) -> list[str]:
    """String labels for a stratum index (levels of a MultiIndex joined by ``" | "``)."""
    return index_labels(index)


def as_counts(
    successes: Any,
    trials: Any = None,
    *,
    strata: Any = None,
    weights: Any = None,
) -> Counts:
    """Accept either a :class:`Counts` or arrays of successes and trials."""
    if isinstance(successes, Counts):
        if trials is not None:
            raise TypeError("pass either a Counts object or successes and trials, not both")
        return successes if weights is None else successes.with_weights(weights)
    if trials is None:
        raise TypeError("trials is required when successes is not a Counts object")
    return Counts.from_arrays(successes, trials, strata=strata, weights=weights)


def tabulate(
    data: pd.DataFrame | str | PathLike | Any,
    *,
    y_true: str,
    y_pred: str,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    pos_label: Any = None,
    weights: Mapping[Hashable, float] | pd.Series | None = None,
    proxy: str | None = None,
    inclusion: str | None = None,
    label_set: Sequence[Any] | None = None,
) -> Counts | Any:
    """Turn a frame of predictions into :class:`Counts` per stratum.

    Every engine computes the same small confusion table (rows per stratum x
    true label x predicted label) and :func:`confusion_counts` applies the
    metric to it, so pandas, DuckDB and Spark give identical Counts.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or Spark DataFrame
        One row per example. A path to a Parquet or CSV file (or a glob), or a
        DuckDB relation, is counted inside DuckDB without loading it into
        pandas; a PySpark DataFrame is counted by Spark.
    y_true, y_pred : str
        Columns holding the true and predicted labels: classes (strings, bools or whole
        numbers; ``0.0``/``1.0``, as pandas reads an integer column with NaN, are the classes
        0 and 1). A fractional number, such as a score, is refused: every distinct value would
        count as its own class.
    strata : str or list of str, optional
        Column(s) defining the strata. ``None`` gives one stratum ``"all"``.
    metric : str or Metric
        A name or alias of :func:`~bayeseval.get_metric`: ``error_rate``
        (default), ``accuracy``, ``recall`` (``tpr``), ``precision`` (``ppv``),
        ``fpr``, ``specificity`` (``tnr``), ``npv``, ``fnr`` or ``selection_rate``.
    pos_label : optional
        The positive class for class-dependent metrics. For binary 0/1 or
        boolean labels it defaults to 1. Two other label values (e.g.
        ``"yes"``/``"no"``) need ``pos_label``. With more than two label values
        and ``pos_label`` None, the metric is computed one-vs-rest for every
        class and a ``class`` level is appended to the strata.
    weights : dict or Series, optional
        Population shares of the strata, summing to 1 (not with ``proxy``).
    proxy : str, optional
        A column known on every row: a cheap label of the same kind as ``y_true`` (a
        judge's label, a stronger model's prediction) or a number (a probability, a
        score, binned into five equal-count cells per stratum). With it, rows whose
        ``y_true`` is missing are the unlabelled rows, and the result is a
        :class:`~bayeseval.counts.ProxyCounts`: labelled successes and trials and the
        pool's trials per stratum and proxy cell. Metrics: ``error_rate``, ``accuracy``,
        ``precision``, ``npv`` (trials known without the true label). pandas and DuckDB
        data only.
    inclusion : str, optional
        With ``proxy``: a column holding each labelled row's inclusion probability (the
        chance it was chosen for labelling); the result then carries the sums of their
        inverses. Without it the labelled rows are taken as drawn at random within
        each stratum.
    label_set : sequence, optional
        With ``proxy``: every class ``y_true`` may hold. A true label that neither the
        predictions nor a label proxy take (such as ``-1`` marking unlabelled rows) is
        refused unless declared here; unlabelled rows hold a missing value.

    Returns
    -------
    Counts or ProxyCounts
        Strata that have rows but no trials (e.g. no positives for recall) are
        kept with zero trials and an :class:`~bayeseval.EmptyStratumWarning`.
        A ``ProxyCounts`` with ``proxy``.

    Raises
    ------
    ValueError
        A column is missing; a label column holds a fractional number (the
        message names the column and one such value); labels or strata hold
        missing values (NaN, None, ``pd.NA`` or SQL NULL: the message names the
        column and the number of rows; with ``proxy``, a missing ``y_true`` marks an
        unlabelled row); ``y_true`` holds a string that stands for a missing label
        (``""``, ``"None"``, ``"NA"``, ``"?"``, ...) and that no prediction takes; a true
        label and a prediction equal but for spaces or case (``"cat "``, ``"cat"``); the two
        label columns hold different types (numbers and strings); a ``pos_label`` that no
        row holds as truth or prediction; two non-0/1 labels without ``pos_label`` for a class metric;
        or DuckDB cannot read the data (the message names the path).
    TypeError
        ``data`` is of an unsupported type.

    Notes
    -----
    A pandas frame is counted without a copy of its rows: boolean, small integer
    and categorical columns by a chunked ``bincount``; other large frames by
    DuckDB scanning the frame in place; small ones by factorizing. All paths
    give the same confusion table, hence the same Counts and errors.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 1, 0, 1], "p": [1, 0, 0, 1], "g": ["a", "a", "b", "b"]})
    >>> tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall").to_frame()  # doctest: +NORMALIZE_WHITESPACE
       successes  trials
    g
    a          1       2
    b          1       1
    """
    if proxy is not None or inclusion is not None:
        return _tabulate_proxy(
            data,
            y_true=y_true,
            y_pred=y_pred,
            strata=strata,
            metric=metric,
            pos_label=pos_label,
            weights=weights,
            proxy=proxy,
            inclusion=inclusion,
            label_set=label_set,
        )
    if label_set is not None:
        raise TypeError(
            f"label_set declares the classes of the labelled rows of a proxy design: "
            f"give proxy too, got label_set={label_set!r} and proxy=None"
        )
    m = get_metric(metric)
    cols = iter_columns(strata, "strata")
    backend = backend_for(data)
    backend.check_columns([("y_true", y_true), ("y_pred", y_pred)] + [("strata", c) for c in cols])
    backend.check_labels([("y_true", y_true), ("y_pred", y_pred)])
    counts = _counts_from_table(backend.confusion(cols, y_true, y_pred), m, pos_label, weights)
    _warn_empty(counts, m, stacklevel=3)
    return counts


def _tabulate_proxy(data: Any, *, proxy: Any, inclusion: Any, weights: Any, **kw: Any) -> Any:
    if proxy is None:
        raise ValueError(
            f"inclusion applies to the labelled rows of a proxy design: give proxy too, "
            f"got inclusion={inclusion!r} and proxy=None"
        )
    if weights is not None:
        raise ValueError(
            "weights (population shares) are not taken with proxy; give them to "
            "evaluate or to the stratified estimators"
        )
    for name, value in (("proxy", proxy), ("inclusion", inclusion)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str), got {value!r}")
    return tabulate_proxy(backend_for(data), proxy=proxy, inclusion=inclusion, **kw)


def confusion_counts(
    table: pd.DataFrame,
    *,
    y_true: str,
    y_pred: str,
    count: str,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    pos_label: Any = None,
    weights: Mapping[Hashable, float] | pd.Series | None = None,
) -> Counts:
    """Apply a metric to a confusion table: rows per (stratum, true label, predicted label).

    The one place where counted rows become :class:`Counts`: :func:`tabulate`
    hands every engine's confusion table to the same rules (missing values
    refused, label types checked, the positive class resolved, the metric's
    trial and success cells summed per stratum). Use it directly for a table
    counted elsewhere (e.g. a ``GROUP BY`` in a data warehouse).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per cell; several rows of the same cell are added up.
    y_true, y_pred : str
        Columns holding the true and predicted label of each cell.
    count : str
        Column holding the number of rows in each cell (non-negative integers).
    strata, metric, pos_label, weights
        As in :func:`tabulate`.

    Returns
    -------
    Counts
        Successes and trials per stratum, as :func:`tabulate` gives on the expanded rows.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"g": ["a", "a", "b"], "y": [1, 1, 1], "p": [1, 0, 0], "n": [30, 10, 50]})
    >>> confusion_counts(t, y_true="y", y_pred="p", count="n", strata="g",
    ...                  metric="recall").to_frame()  # doctest: +NORMALIZE_WHITESPACE
       successes  trials
    g
    a         30      40
    b          0      50
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    m = get_metric(metric)
    cols = iter_columns(strata, "strata")
    backend = backend_for(table)
    backend.check_columns([("y_true", y_true), ("y_pred", y_pred), ("count", count)] + [("strata", c) for c in cols])
    backend.check_labels([("y_true", y_true), ("y_pred", y_pred)])
    n = table[count]
    if not pd.api.types.is_integer_dtype(n.dtype) or bool((n < 0).any()):
        raise ValueError(f"count column {count!r} must hold non-negative integers, got dtype {n.dtype}")
    confusion = ConfusionTable(
        strata=pd.DataFrame({i: table[c].reset_index(drop=True) for i, c in enumerate(cols)}, index=range(len(table))),
        truth=table[y_true].reset_index(drop=True),
        pred=table[y_pred].reset_index(drop=True),
        n=n.to_numpy(np.int64),
        names=cols,
        y_true=y_true,
        y_pred=y_pred,
        dtypes=(str(table[y_true].dtype), str(table[y_pred].dtype)),
    )
    counts = _counts_from_table(confusion, m, pos_label, weights)
    _warn_empty(counts, m, stacklevel=3)
    return counts


def _warn_empty(counts: Counts, m: Metric, stacklevel: int) -> None:
    if len(counts.empty):
        warnings.warn(
            f"{len(counts.empty)} strata have no trials for {m.name} and no rate: {list(counts.empty[:5])}",
            EmptyStratumWarning,
            stacklevel=stacklevel,
        )


def _counts_from_table(table: ConfusionTable, m: Metric, pos_label: Any, weights: Any) -> Counts:
    """The shared rules: refuse missing values and mixed label types, resolve the positive class, count."""
    _check_missing(table)
    if int(table.n.sum()) == 0:
        raise ValueError("data has no rows")
    check_label_types(table, pos_label if m.needs_positive else None)
    positive, classes = resolve_positive(m, table, pos_label)
    if classes is None:
        frame = _count_cells(table, m, positive)
    else:
        level = fresh_names(table.names or ["stratum"], ["class"])[0]
        parts = [_count_cells(table, m, cls) for cls in classes]
        frame = pd.concat(parts, keys=classes, names=[level])
        frame = frame.reorder_levels(list(range(1, frame.index.nlevels)) + [0]).sort_index()
    return Counts(frame["successes"], frame["trials"], metric=m.name, weights=weights)


def _check_missing(table: ConfusionTable) -> None:
    columns = [
        ("y_true", table.y_true, table.truth, "missing labels"),
        ("y_pred", table.y_pred, table.pred, "missing labels"),
    ]
    columns += [("strata", name, table.strata[i], "missing values") for i, name in enumerate(table.names)]
    for arg, col, values, what in columns:
        missing = pd.isna(values).to_numpy(bool)
        if missing.any():
            rows = int(table.n[missing].sum())
            hint = " (or, for unlabelled rows of a pool, give proxy=)" if arg == "y_true" else ""
            raise ValueError(
                f"{arg} column {col!r} has {what} in {rows} row{'s' if rows != 1 else ''} "
                f"(NaN, None, NA or NULL); drop or fill them before tabulating{hint}"
            )


def _count_cells(table: ConfusionTable, m: Metric, positive: Any) -> pd.DataFrame:
    """Successes and trials per stratum: the metric's cells of the confusion table, summed."""
    trial, success = m.masks(table.truth.to_numpy(), table.pred.to_numpy(), positive)
    s = np.where(success, table.n, 0)
    t = np.where(trial, table.n, 0)
    k = len(table.names)
    if k == 0:
        index = pd.Index(["all"], name="stratum")
        return pd.DataFrame({"successes": [int(s.sum())], "trials": [int(t.sum())]}, index=index).astype(np.int64)
    work = table.strata.copy()
    work["successes"] = s
    work["trials"] = t
    out = work.groupby(list(range(k)), observed=False, sort=True, dropna=False)[["successes", "trials"]].sum()
    out.index = out.index.set_names(table.names)
    return out.astype(np.int64)
