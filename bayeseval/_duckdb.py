"""Counting inside DuckDB: Parquet/CSV files and DuckDB relations become Counts.

:func:`bayeseval.tabulate` hands any input that is not a pandas DataFrame to
this module. The rows never reach pandas: one ``GROUP BY`` over the strata
columns computes the trial and success counts with conditional sums built from
the :class:`~bayeseval.metrics.Metric` definition (its ``trials`` and
``successes`` fields), and only the small table of counts is fetched.

When the metric depends on a positive class and ``pos_label`` is not given,
the positive class is not known before the data are read. An ungrouped
query (which DuckDB answers from Parquet statistics without reading the rows)
gets the row count, the missing labels and the range of integer or boolean
labels; labels all in {0, 1} make 1 the positive class, as in the pandas path.
Otherwise (multi-class or string labels) the ``GROUP BY`` also groups by the
two label columns (a confusion table per stratum, a few rows per stratum) and
the masks are applied to that small table with :meth:`Metric.masks`, exactly as
the pandas path applies them to the rows.

The result is identical to the pandas path of :func:`bayeseval.tabulate` on the
same data: same index (names, order, dtypes), same int64 counts, the same
``class`` level for one-vs-rest multi-class metrics, zero-trial strata kept
with an :class:`~bayeseval.EmptyStratumWarning`.

``duckdb`` is imported inside the functions only.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import iter_columns
from bayeseval._warnings import EmptyStratumWarning
from bayeseval.counts import Counts, _positive_label
from bayeseval.metrics import Metric

__all__ = ["is_duckdb_source", "tabulate_duckdb", "as_relation", "sql_literal", "quote_ident"]

_FILE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".csv.gz", ".tsv.gz", ".csv.zst")


def _is_relation(data: Any) -> bool:
    return type(data).__name__ == "DuckDBPyRelation" and type(data).__module__.startswith("duckdb")


def is_duckdb_source(data: Any) -> bool:
    """Whether ``data`` is something DuckDB can count: a Parquet/CSV path (or glob) or a relation.

    Examples
    --------
    >>> is_duckdb_source("predictions/*.parquet"), is_duckdb_source([1, 2])
    (True, False)
    """
    if _is_relation(data):
        return True
    if isinstance(data, (str, os.PathLike)):
        name = os.fspath(data).lower()
        return name.endswith(_FILE_SUFFIXES)
    return False


def as_relation(data: Any, con: Any = None) -> Any:
    """Return a DuckDB relation over ``data`` (a relation, or a Parquet/CSV path or glob).

    Paths are opened on ``con`` (a new in-memory connection when None); a
    relation is returned unchanged and keeps its own connection.
    """
    import duckdb

    if _is_relation(data):
        return data
    if not isinstance(data, (str, os.PathLike)) or not is_duckdb_source(data):
        raise TypeError(
            "data must be a pandas DataFrame, a Parquet/CSV path or a DuckDB relation, "
            f"got {type(data).__name__}"
        )
    path = os.fspath(data)
    con = duckdb.connect() if con is None else con
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return con.read_parquet(path)
    return con.read_csv(path)


def quote_ident(name: str) -> str:
    """Quote a column name for SQL (DuckDB and Spark accept double quotes in DuckDB only)."""
    return '"' + str(name).replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """Render a label value (bool, int, float or str) as a SQL literal."""
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            raise ValueError(f"label value {value!r} cannot be used as a class")
        return repr(float(value))
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"label value {value!r} of type {type(value).__name__} cannot be used in SQL")


def _mask_sql(kind: str, truth: str, pred: str, positive: Any) -> str:
    """SQL boolean for one of the Metric row sets."""
    if kind == "all":
        return "TRUE"
    if kind == "right":
        return f"({truth} = {pred})"
    if kind == "wrong":
        return f"({truth} <> {pred})"
    lit = sql_literal(positive)
    return {
        "true_pos": f"({truth} = {lit})",
        "true_neg": f"({truth} <> {lit})",
        "pred_pos": f"({pred} = {lit})",
        "pred_neg": f"({pred} <> {lit})",
    }[kind]


def tabulate_duckdb(
    data: Any,
    *,
    y_true: str,
    y_pred: str,
    strata: str | Sequence[str] | None,
    metric: Metric,
    pos_label: Any = None,
) -> Counts:
    """Count successes and trials per stratum inside DuckDB.

    Parameters
    ----------
    data : str, os.PathLike or duckdb.DuckDBPyRelation
        A Parquet or CSV file (or glob), or a relation.
    y_true, y_pred : str
        Label columns.
    strata : str or list of str or None
        Stratum columns.
    metric : Metric
        The metric definition.
    pos_label : optional
        Positive class, as in :func:`bayeseval.tabulate`.

    Returns
    -------
    Counts
        Identical to :func:`bayeseval.tabulate` on the same rows in pandas.

    Examples
    --------
    >>> import duckdb
    >>> from bayeseval.metrics import get_metric
    >>> rel = duckdb.sql("SELECT * FROM (VALUES (1, 1, 'a'), (1, 0, 'a'), (1, 1, 'b')) t(y, p, g)")
    >>> tabulate_duckdb(rel, y_true="y", y_pred="p", strata="g",
    ...                 metric=get_metric("recall")).to_frame().loc["a"].tolist()
    [1, 2]
    """
    rel = as_relation(data)
    cols = iter_columns(strata, "strata")
    available = list(rel.columns)
    for name, col in [("y_true", y_true), ("y_pred", y_pred)] + [("strata", c) for c in cols]:
        if col not in available:
            raise ValueError(f"{name} column {col!r} is not in data; columns are {available[:20]}")
    t, p = quote_ident(y_true), quote_ident(y_pred)
    group = [quote_ident(c) for c in cols]
    types = dict(zip(rel.columns, (str(x).upper() for x in rel.types), strict=True))
    confusion = metric.needs_positive and pos_label is None
    numeric = _is_numeric(types[y_true]) and _is_numeric(types[y_pred])
    integral = numeric and _is_integral(types[y_true]) and _is_integral(types[y_pred])

    # One ungrouped pass for the checks: rows, missing labels and, when the positive class
    # must be inferred from integer labels, their range. For Parquet, DuckDB answers it from
    # the file's statistics without reading the data.
    pre = ["COUNT(*) AS rows", f"COUNT({t}) AS nn_true", f"COUNT({p}) AS nn_pred"]
    if confusion and integral:
        for i, (c, name) in enumerate(((t, y_true), (p, y_pred))):
            cast = f"{c}::TINYINT" if types[name] == "BOOLEAN" else c
            pre += [f"MIN({cast}) AS min{i}", f"MAX({cast}) AS max{i}"]
    elif confusion and numeric:
        pre.append(
            f"SUM(CASE WHEN {t} NOT IN (0, 1) OR {p} NOT IN (0, 1) THEN 1 ELSE 0 END) AS other"
        )
    stats = rel.query("__bayeseval_data", f"SELECT {', '.join(pre)} FROM __bayeseval_data").df()
    stats = stats.iloc[0]
    rows = int(stats["rows"])
    if rows == 0:
        raise ValueError("data has no rows")
    if rows != int(stats["nn_true"]) or rows != int(stats["nn_pred"]):
        col = y_true if rows != int(stats["nn_true"]) else y_pred
        raise ValueError(f"column {col!r} has missing labels; drop or fill them before tabulating")
    positive = pos_label
    if confusion and integral:
        # integer (or boolean) labels all in {0, 1}: the positive class is 1, as in pandas
        if all(int(stats[f"min{i}"]) >= 0 and int(stats[f"max{i}"]) <= 1 for i in range(2)):
            confusion, positive = False, 1
    elif confusion and numeric and int(stats["other"]) == 0:
        confusion, positive = False, 1

    def run(select: list[str], keys: list[str]) -> pd.DataFrame:
        sql = f"SELECT {', '.join(select)} FROM __bayeseval_data"
        if keys:
            sql += " GROUP BY " + ", ".join(keys)
        return rel.query("__bayeseval_data", sql).df()

    if confusion:
        # multi-class (or string) labels: a confusion table per stratum, masks applied in pandas
        table = run(group + [t, p, "COUNT(*)::BIGINT AS __n"], group + [t, p])
    else:
        trial = _mask_sql(metric.trials, t, p, positive)
        success = f"({trial} AND {_mask_sql(metric.successes, t, p, positive)})"
        table = run(
            group
            + [
                f"SUM(CASE WHEN {success} THEN 1 ELSE 0 END)::BIGINT AS __s",
                f"SUM(CASE WHEN {trial} THEN 1 ELSE 0 END)::BIGINT AS __t",
            ],
            group,
        )

    if confusion:
        frame = _from_confusion(table, cols, y_true, y_pred, metric)
    else:
        frame = _shape(table.rename(columns={"__s": "successes", "__t": "trials"}), cols)
    counts = Counts(frame["successes"], frame["trials"], metric=metric.name)
    if len(counts.empty):
        warnings.warn(
            f"{len(counts.empty)} strata have no trials for {metric.name} and no rate: "
            f"{list(counts.empty[:5])}",
            EmptyStratumWarning,
            stacklevel=3,
        )
    return counts


_NUMERIC = {
    "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE",
}


def _is_integral(type_name: str) -> bool:
    return type_name in _NUMERIC and type_name not in ("FLOAT", "DOUBLE")


def _is_numeric(type_name: str) -> bool:
    return type_name in _NUMERIC or type_name.startswith("DECIMAL")


def _shape(table: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Index a fetched table of successes/trials exactly like the pandas groupby path."""
    work = table[cols + ["successes", "trials"]]
    if not cols:
        out = work[["successes", "trials"]].sum().to_frame().T
        out.index = pd.Index(["all"], name="stratum")
        return out.astype(np.int64)
    out = work.groupby(cols if len(cols) > 1 else cols[0], observed=False, sort=True, dropna=False)[
        ["successes", "trials"]
    ].sum()
    return out.astype(np.int64)


def _from_confusion(
    table: pd.DataFrame, cols: list[str], y_true: str, y_pred: str, metric: Metric
) -> pd.DataFrame:
    """Apply the metric masks to a confusion table (one row per stratum x true x predicted)."""
    truth, pred = table[y_true], table[y_pred]
    n = table["__n"].to_numpy(np.int64)
    positive = _positive_label(metric, truth, pred, None)

    def count(cls: Any) -> pd.DataFrame:
        trial, success = metric.masks(truth.to_numpy(), pred.to_numpy(), cls)
        work = table[cols].copy()
        work["successes"] = np.where(success, n, 0)
        work["trials"] = np.where(trial, n, 0)
        return _shape(work, cols)

    if positive is not None:
        return count(positive)
    classes = sorted(set(pd.unique(truth)) | set(pd.unique(pred)), key=str)
    parts = []
    for cls in classes:
        part = count(cls)
        part["class"] = cls
        parts.append(part)
    frame = pd.concat(parts).reset_index()
    keys = (cols or ["stratum"]) + ["class"]
    return frame.set_index(keys).sort_index()
