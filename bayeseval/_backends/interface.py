"""Row back ends: pandas, DuckDB, Spark and narwhals (any other frame) behind one small interface.

Only this step touches rows; everything downstream works on small tables. Every
back end implements four operations:

* :meth:`Backend.check_labels` -- refuse a label column holding a fractional
  number (one rule and one message, :func:`bayeseval._api.validation.fractional_label_error`).
* :meth:`Backend.confusion` -- the confusion table by strata: one row per
  (stratum, true label, predicted label) cell present in the data, with its row
  count. Missing values come back as cells (NaN/None), so the caller can refuse
  them and say how many rows they hold.
* :meth:`Backend.binary_counts` -- optional fast path for 0/1 labels: the metric's trials and
  successes summed per stratum in the engine's own aggregation (one pass, no confusion table),
  with a check of the labels in the same scan (:class:`BinaryQuery`); None where the engine or
  the column types do not offer it.
* :meth:`Backend.proxy_cells` -- the confusion table by strata and a proxy's cell (the
  proxy's value, or the bin of a score), with sums of inverse inclusion probabilities over
  the labelled rows when those are given.
* :meth:`Backend.unit_counts` -- the histogram of per-unit sums: a first aggregation by
  (stratum, cluster) gives each unit's summed outcome and trials, a second by (stratum, unit
  sum, unit trials) how many units share them (:class:`UnitQuery`).
* :meth:`Backend.outcome_checks` -- missing and out-of-range values of an outcome column and
  missing cluster identifiers, in one aggregate.
* :meth:`Backend.repeated_columns` -- which of some columns repeat a value (one aggregate), for
  the detection of clustered rows.
* :meth:`Backend.key_counts` -- rows per (label, group...) cell, for the split.
* :meth:`Backend.select_test` -- within each key the ``n`` rows with the smallest
  keyed ``(rank, id)``: ``(train, test, test_weights)`` in the engine of the input.

The small tables use positional column labels (integers ``0..k-1``) next to the
string labels of the counts, so no user column name can collide with them; the
SQL the DuckDB and Spark back ends run uses names generated to be absent from
the input (:func:`bayeseval._kernels.naming.fresh_names`). The metric, missing-value
and label-type rules live in one place (:func:`bayeseval.counts.counts.confusion_counts`
and the split planner), never in a back end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "ConfusionTable",
    "CellQuery",
    "UnitQuery",
    "UnitTable",
    "BinaryQuery",
    "SplitSelection",
    "Backend",
    "is_duckdb_source",
    "is_spark_dataframe",
]

_FILE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".csv.gz", ".tsv.gz", ".csv.zst")
ACCEPTED = (
    "a pandas DataFrame, a Parquet/CSV path, a DuckDB relation, a Spark DataFrame or another frame "
    "narwhals reads (polars, pyarrow, Dask, Ibis, Modin...)"
)


@dataclass(frozen=True)
class ConfusionTable:
    """Row counts per (stratum, true label, predicted label) cell.

    ``strata`` has positional columns ``0..k-1`` (the stratum values, named by
    ``names``); ``truth``, ``pred`` and ``n`` are aligned with its rows.
    ``dtypes`` are the engine's names of the two label columns' types.
    """

    strata: pd.DataFrame
    truth: pd.Series
    pred: pd.Series
    n: np.ndarray
    names: list[str]
    y_true: str
    y_pred: str
    dtypes: tuple[str, str]


class CellQuery(NamedTuple):
    """What :meth:`Backend.proxy_cells` counts: the columns of a proxy design's cells.

    ``strata`` are the stratum columns, ``y_true`` and ``y_pred`` the label columns (a missing
    true label marks an unlabelled row), ``proxy`` the proxy column; ``n_cells`` bins a numeric
    proxy into that many cells per stratum, and ``inclusion`` names a column of the labelled
    rows' inclusion probabilities.
    """

    strata: list[str]
    y_true: str
    y_pred: str
    proxy: str
    n_cells: int | None = None
    inclusion: str | None = None


class UnitQuery(NamedTuple):
    """What :meth:`Backend.unit_counts` counts: each unit's summed outcome and trials, then units per pair.

    ``strata`` are the stratum columns and ``cluster`` the column whose value, within a stratum,
    makes a unit (None: each row is its own unit). A row's outcome is either the number in
    column ``outcome`` (``1 - outcome`` when ``flip``), each row a trial; or, from labels, a
    success when its ``(y_true, y_pred)`` pair is one of ``success_cells`` and a trial when one
    of ``trial_cells`` (the metric's cells, as label values; ``metric`` and ``positive`` give
    the same per-row masks to an engine that evaluates them on the rows).
    """

    strata: list[str]
    cluster: str | None
    outcome: str | None = None
    flip: bool = False
    y_true: str | None = None
    y_pred: str | None = None
    trial_cells: tuple[tuple[Any, Any], ...] = ()
    success_cells: tuple[tuple[Any, Any], ...] = ()
    metric: Any = None
    positive: Any = None


class BinaryQuery(NamedTuple):
    """What :meth:`Backend.binary_counts` counts: a metric of 0/1 labels per stratum, in one aggregation.

    ``trial_cells`` and ``success_cells`` are the ``(y_true, y_pred)`` pairs, among ``(0, 0)``,
    ``(0, 1)``, ``(1, 0)`` and ``(1, 1)``, whose rows are the metric's trials and successes.

    ``positive`` (a string or an integer; None: the labels themselves are 0/1): labels of any two
    classes, read as 1 where they equal ``positive`` and 0 elsewhere, in the engine's aggregation.
    The result then tells the caller which labels it met (see :data:`NAMED_COLUMNS`), so that the
    label rules decide as on the confusion table.
    """

    strata: list[str]
    y_true: str
    y_pred: str
    trial_cells: tuple[tuple[int, int], ...]
    success_cells: tuple[tuple[int, int], ...]
    positive: Any = None


#: what :meth:`Backend.binary_counts` adds per stratum with ``BinaryQuery.positive``: rows whose
#: ``y_true`` (``rt``) and ``y_pred`` (``rp``) equal ``positive``, rows whose ``y_true`` (``ot``) and
#: ``y_pred`` (``op``) equal ``o``, the stratum's rows (``n``), and ``o`` itself (the same on every
#: row): a label other than ``positive`` found by a query that stops at the first such row (missing
#: when there is none). Every label is ``positive`` or ``o`` exactly when ``rt + ot`` and ``rp + op``
#: equal ``n`` (no label missing). ``b`` is then the rows with a missing label.
NAMED_COLUMNS = ("rt", "rp", "ot", "op", "n", "o")


class UnitTable(NamedTuple):
    """The histogram :meth:`Backend.unit_counts` returns.

    ``table`` has positional stratum columns ``0..k-1``, ``s`` (a unit's summed outcome, float),
    ``t`` (its trials, int64) and ``n`` (how many units have that pair, int64), for the units with
    at least one trial. ``spanning`` is the (stratum, cluster) pairs less the distinct cluster
    values, among units with trials: positive when some cluster has trials in more than one
    stratum (0 without a cluster or without strata).
    """

    table: pd.DataFrame
    spanning: int


class SplitSelection(NamedTuple):
    """What :meth:`Backend.select_test` selects: the split's plan, per key.

    ``cells`` is the planner's cell table (positional columns ``0..k-1`` of the key columns
    ``cols``, ``key``, and whatever :meth:`Backend.key_counts` added); ``id_column`` holds the
    row ids (None: the engine's row positions); ``salts``, ``take`` and ``weight`` give each key's
    rank salt, its number of test rows and its test rows' weight.
    """

    cells: pd.DataFrame
    cols: list[str]
    id_column: str | None
    salts: np.ndarray
    take: np.ndarray
    weight: np.ndarray


class Backend:
    """One engine's row operations (see the module docstring)."""

    engine = "base"

    def __init__(self, data: Any) -> None:
        self.data = data

    @property
    def columns(self) -> list[str]:
        """Column names of the data."""
        raise NotImplementedError

    def check_columns(self, pairs: list[tuple[str, str]]) -> None:
        """Raise ValueError naming the argument for a column absent from the data."""
        available = list(self.columns)
        for name, col in pairs:
            if not isinstance(col, str):
                raise TypeError(f"{name} must be a column name (str), got {col!r}")
            if col not in available:
                raise ValueError(f"{name} column {col!r} is not in data; columns are {available[:20]}")

    def check_labels(self, pairs: list[tuple[str, str]]) -> None:
        """Refuse a label column holding a fractional number (a score, rounding noise).

        ``pairs`` are ``(argument, column)``; the error is
        :func:`bayeseval._api.validation.fractional_label_error`, naming both and one such value.
        Each engine finds the value in its own data path, without fetching the rows.
        """
        raise NotImplementedError

    def infinite(self, column: str) -> tuple[int, float | None]:
        """Rows of ``column`` holding ``inf`` or ``-inf``, and one such value (None when none).

        Only float columns can hold one; text and other columns give ``(0, None)``.
        """
        raise NotImplementedError

    def confusion(self, strata: list[str], y_true: str, y_pred: str) -> ConfusionTable:
        """The confusion table by strata."""
        raise NotImplementedError

    def binary_counts(self, query: BinaryQuery) -> pd.DataFrame | None:
        """Trials and successes per stratum of labels that should all be 0 or 1, in one scan.

        Positional stratum columns ``0..k-1`` (one row per stratum present, sorted as pandas sorts them),
        then ``t`` (trials), ``s`` (successes) and ``b``: the bitwise OR over the stratum's rows of
        ``y_true | y_pred``, a missing label counting as 2, so ``b`` is 0 or 1 exactly when every row's
        labels are 0/1. None when the engine or the label columns' types do not allow this (the
        caller then counts the confusion table), which is the base class's answer.

        With ``query.positive`` the labels are read as 1 where they equal it and 0 elsewhere; ``b``
        counts the rows with a missing label and the columns of :data:`NAMED_COLUMNS` follow. None
        unless both label columns hold text (``positive`` a string) or both integers (``positive``
        an integer).
        """
        return None

    def proxy_cells(self, query: CellQuery) -> pd.DataFrame:
        """Rows per (stratum, proxy cell, true label, predicted label) of ``query``.

        Positional stratum columns ``0..k-1``, then ``c`` (the proxy's value; with
        ``n_cells``, the bin of a numeric proxy: how many of the stratum's distinct bin edges,
        the order statistics of :func:`~bayeseval._kernels.bins.edge_ranks` among its rows'
        scores, lie strictly below the value; missing where the proxy is), ``t``, ``p`` and ``n`` (rows). Missing true labels
        (the unlabelled rows) come back as cells. With ``inclusion`` (a column of inclusion
        probabilities) also ``w`` and ``w2``: sums of ``1/pi`` and ``1/pi**2`` over the
        cell's rows that have a true label, and ``bad``: those rows whose ``pi`` is missing
        or outside (0, 1].
        """
        raise NotImplementedError

    def unit_counts(self, query: UnitQuery) -> UnitTable:
        """The histogram of per-unit (summed outcome, trials) per stratum (see :class:`UnitTable`)."""
        raise NotImplementedError

    def outcome_checks(self, outcome: str | None, cluster: str | None) -> dict[str, Any]:
        """Rows whose outcome is missing (``missing``), or outside [0, 1] (``outside``, with one such
        value ``value``), and rows whose cluster is missing (``no_cluster``); zeros for a None column."""
        raise NotImplementedError

    def repeated_columns(self, columns: list[str]) -> dict[str, int]:
        """For each column of ``columns``: rows minus distinct non-missing values (0: no value repeats)."""
        raise NotImplementedError

    def key_counts(self, cols: list[str], *, id_column: str | None, check_ids: bool) -> pd.DataFrame:
        """Rows per cell of ``cols``: positional columns ``0..k-1`` and ``rows``."""
        raise NotImplementedError

    def select_test(self, selection: SplitSelection) -> tuple[Any, Any, Any]:
        """``(train, test, test_weights)``: per key the ``take`` rows of ``selection`` with the smallest (rank, id)."""
        raise NotImplementedError


def is_duckdb_relation(data: Any) -> bool:
    """Whether ``data`` is a DuckDB relation."""
    return type(data).__name__ == "DuckDBPyRelation" and type(data).__module__.startswith(("duckdb", "_duckdb"))


def is_duckdb_source(data: Any) -> bool:
    """Whether ``data`` is something DuckDB can count: a Parquet/CSV path (or glob) or a relation.

    Parameters
    ----------
    data : object
        Anything.

    Returns
    -------
    bool
        True for a DuckDB relation or a path ending in a Parquet/CSV suffix.

    Examples
    --------
    >>> is_duckdb_source("predictions/*.parquet"), is_duckdb_source([1, 2])
    (True, False)
    """
    if is_duckdb_relation(data):
        return True
    if isinstance(data, (str, os.PathLike)):
        return os.fspath(data).lower().endswith(_FILE_SUFFIXES)
    return False


def is_spark_dataframe(data: Any) -> bool:
    """Whether ``data`` is a PySpark DataFrame (classic or Spark Connect).

    Parameters
    ----------
    data : object
        Anything; pyspark is not imported.

    Returns
    -------
    bool
        True for a ``pyspark.sql.DataFrame``.
    """
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pyspark")


def string_columns_as_str(frame: pd.DataFrame) -> pd.DataFrame:
    """Give object columns holding only strings pandas' default string dtype (engine results)."""
    for c in frame.columns:
        if frame[c].dtype == object and len(frame) and pd.api.types.infer_dtype(frame[c]) == "string":
            frame[c] = frame[c].astype("str")
    return frame


def confusion_from_frame(
    table: pd.DataFrame, names: list[str], y_true: str, y_pred: str, dtypes: tuple[str, str]
) -> ConfusionTable:
    """A ConfusionTable from a fetched table with positional columns ``0..k-1``, ``t``, ``p``, ``n``."""
    k = len(names)
    strata = table[list(range(k))].reset_index(drop=True) if k else pd.DataFrame(index=range(len(table)))
    return ConfusionTable(
        strata=strata,
        truth=table["t"].reset_index(drop=True),
        pred=table["p"].reset_index(drop=True),
        n=table["n"].to_numpy(np.int64),
        names=list(names),
        y_true=y_true,
        y_pred=y_pred,
        dtypes=dtypes,
    )
