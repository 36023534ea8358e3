"""The DuckDB back end: Parquet/CSV paths (or globs) and DuckDB relations, counted in SQL.

The rows never reach pandas: one ``GROUP BY`` gives the confusion table (or the
key counts), and the split is one ``ROW_NUMBER()`` window per key. Every name the
SQL introduces is generated to be absent from the input's columns, and DuckDB's
own exceptions (``IOException``, ``ConversionException``, ``CatalogException``...)
become ValueErrors naming the argument. ``duckdb`` is imported inside the
functions only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import fractional_label_error
from bayeseval._backends.hashing import duckdb_rank_sql
from bayeseval._backends.interface import (
    ACCEPTED,
    NAMED_COLUMNS,
    Backend,
    BinaryQuery,
    CellQuery,
    ConfusionTable,
    SplitSelection,
    UnitQuery,
    UnitTable,
    confusion_from_frame,
    is_duckdb_relation,
    is_duckdb_source,
    string_columns_as_str,
)
from bayeseval._kernels.naming import fresh_names


def quote_ident(name: str) -> str:
    """Quote a column name for DuckDB SQL.

    Parameters
    ----------
    name : str
        The column name, taken literally.

    Returns
    -------
    str
        The name in double quotes, inner double quotes doubled.

    Examples
    --------
    >>> print(quote_ident('x"y'))
    "x""y"
    """
    return '"' + str(name).replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """Render a label value (bool, int, float or str) as a SQL literal.

    Parameters
    ----------
    value : bool, int, float or str
        The label value (NumPy scalars included); floats must be finite.

    Returns
    -------
    str
        The SQL literal.

    Raises
    ------
    ValueError
        A non-finite float.
    TypeError
        A value of another type.

    Examples
    --------
    >>> sql_literal("o'hara"), sql_literal(True), sql_literal(3)
    ("'o''hara'", 'TRUE', '3')
    """
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


def fractional_type(type_name: str) -> bool:
    """Whether a DuckDB column type can hold fractional numbers (floats, decimals with a scale)."""
    name = type_name.upper()
    if name in ("FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"):
        return True
    return name.startswith("DECIMAL") and not name.endswith(",0)")


@contextmanager
def duckdb_errors(what: str) -> Iterator[None]:
    """Turn DuckDB's exceptions into a ValueError that starts with ``what`` (the argument)."""
    import duckdb

    try:
        yield
    except duckdb.Error as exc:
        raise ValueError(f"{what}: {type(exc).__name__}: {exc}") from exc


def describe(data: Any) -> str:
    """How an error message names ``data``."""
    if isinstance(data, (str, os.PathLike)):
        return f"data {os.fspath(data)!r}"
    return "data (a DuckDB relation)"


_LOCAL = threading.local()


def _thread_connection() -> Any:
    """This thread's in-memory DuckDB connection for reading paths (connections are not shared
    between threads; default settings, so strings order by binary collation as pandas orders them)."""
    import duckdb

    con = getattr(_LOCAL, "con", None)
    if con is None:
        con = _LOCAL.con = duckdb.connect()
    return con


def as_relation(data: Any, con: Any = None) -> Any:
    """Return a DuckDB relation over ``data`` (a relation, or a Parquet/CSV path or glob).

    Paths are opened on ``con`` (None: this thread's in-memory connection, opened once: a new
    database costs about 18 ms of CPU, 10% of counting 1,000,000 rows in 100,000 strata); a
    relation is returned unchanged and keeps its own connection. A file DuckDB cannot open or
    read raises a ValueError naming the path.

    Parameters
    ----------
    data : str, path or DuckDB relation
        A Parquet/CSV path or glob, or a relation.
    con : duckdb.DuckDBPyConnection, optional
        The connection to open a path on.

    Returns
    -------
    duckdb.DuckDBPyRelation
        The rows, not yet read.
    """

    if is_duckdb_relation(data):
        return data
    if not is_duckdb_source(data):
        raise TypeError(f"data must be {ACCEPTED}, got {type(data).__name__}")
    path = os.fspath(data)
    with duckdb_errors(f"data {path!r} cannot be read"):
        con = _thread_connection() if con is None else con
        if path.lower().endswith((".parquet", ".pq")):
            return con.read_parquet(path)
        return con.read_csv(path)


#: decimals a unit's summed outcome is rounded to, so that engines summing graded outcomes in
#: another order put a unit in the same histogram cell
UNIT_DECIMALS = 9


def cells_condition(t: str, p: str, cells: tuple[tuple[Any, Any], ...]) -> str:
    """SQL that is true on rows whose ``(t, p)`` label pair is one of ``cells`` (quoted columns)."""
    if not cells:
        return "FALSE"
    return " OR ".join(f"({t} = {sql_literal(a)} AND {p} = {sql_literal(b)})" for a, b in cells)


def unit_rows_sql(query: UnitQuery, integral: bool) -> tuple[str, str, str | None, str | None, bool]:
    """A row's outcome and trial as SQL over the quoted input columns: ``(value, trial, on, ok, integral)``.

    ``on`` is the condition that makes a row a trial (None: every row is one), ``ok`` the one
    that makes it a success for label rows (``value`` is then 1 where it holds, else 0; None
    for an outcome column); ``integral`` whether the values are whole (label rows always are).
    """
    q = quote_ident
    if query.outcome is not None:
        value = f"CAST({q(query.outcome)} AS {'BIGINT' if integral else 'DOUBLE'})"
        return (f"1 - {value}" if query.flip else value), "1", None, None, integral
    t, p = q(str(query.y_true)), q(str(query.y_pred))
    ok = cells_condition(t, p, query.success_cells)
    on: str | None = cells_condition(t, p, query.trial_cells)
    trial = f"CASE WHEN {on} THEN 1 ELSE 0 END"
    m = query.metric
    if m is not None and m.trials == "all":
        # every row is a trial (missing labels are refused before), and a success is a row whose
        # labels are equal (or differ): the cells' lists as the two comparisons they amount to
        trial, on = "1", None
        if m.successes in ("right", "wrong"):
            ok = f"{t} {'=' if m.successes == 'right' else '<>'} {p}"
    return f"CASE WHEN {ok} THEN 1 ELSE 0 END", trial, on, ok, True


def unit_sql(source: str, columns: list[str], query: UnitQuery, integral: bool = False) -> tuple[str, int]:
    """SQL for :meth:`DuckDBBackend.unit_counts` over ``source`` (whose columns are ``columns``).

    Returns the SQL and the number of stratum columns ``k``; the result has columns ``0..k-1``
    (the strata), then the unit sum, the unit trials, the units, and (with a cluster and
    strata) the (stratum, cluster) pairs less the distinct clusters among units with trials
    (positive when some cluster spans strata), repeated on every row. ``integral``: the outcome
    column holds integers (summed as integers, no rounding).
    """
    q = quote_ident
    k = len(query.strata)
    names = fresh_names(columns, [f"__s{i}" for i in range(k)] + ["__cl", "__x", "__tr", "__us", "__ut", "__n", "__sp"])
    s_out, (cl, x, tr, us, ut, n, sp) = [q(a) for a in names[:k]], [q(a) for a in names[k:]]
    value, trial, _, _, integral = unit_rows_sql(query, integral)
    strata = [f"{q(c)} AS {a}" for c, a in zip(query.strata, s_out, strict=True)]
    keys = ", ".join(s_out)
    lead = keys + ", " if k else ""
    if query.cluster is None:
        rows = f"SELECT {', '.join(strata + [f'{value} AS {x}', f'{trial} AS {tr}'])} FROM {source}"
        sql = (
            f"SELECT {lead}{x} AS {us}, {tr}::BIGINT AS {ut}, COUNT(*)::BIGINT AS {n} "
            f"FROM ({rows}) WHERE {tr} > 0 GROUP BY ALL"
        )
        return sql, k
    per_unit = (
        f"SELECT {', '.join(strata + [f'{q(query.cluster)} AS {cl}'])}, "
        f"{f'SUM({value})::DOUBLE' if integral else f'round(SUM({value}), {UNIT_DECIMALS})'} AS {us}, "
        f"SUM({trial})::BIGINT AS {ut} "
        f"FROM {source} GROUP BY ALL"
    )
    hist = f"SELECT {lead}{us}, {ut}, COUNT(*)::BIGINT AS {n} FROM u WHERE {ut} > 0 GROUP BY ALL"
    if not k:
        return f"WITH u AS ({per_unit}) {hist}", k
    spanning = f"(SELECT COUNT(*) - COUNT(DISTINCT {cl}) FROM u WHERE {ut} > 0)"
    sql = f"WITH u AS MATERIALIZED ({per_unit}), h AS ({hist}) SELECT h.*, {spanning}::BIGINT AS {sp} FROM h"
    return sql, k


def cluster_unit_sql(source: str, columns: list[str], query: UnitQuery, integral: bool = False) -> str | None:
    """SQL of the units' histogram grouped by the cluster alone, or None where it does not apply.

    One statement, one hash aggregation by the cluster: a unit's stratum is the least value of
    each stratum column over its trial rows, and the unit is flagged when its trial rows hold
    two values (or values and NULLs) of some stratum column. The result has the columns of
    :func:`unit_sql` (strata ``0..k-1``, unit sum, unit trials, units), then the flagged units:
    when that is positive some cluster spans strata, and the caller counts by
    (stratum, cluster) pairs with :func:`unit_sql` instead. Without a flagged unit the
    histogram is the one :func:`unit_sql` gives, with no second aggregation over the units
    and no distinct count. None without a cluster or strata, or when some success is not a
    trial (a unit's sum would then take rows outside its trials).
    """
    k = len(query.strata)
    if query.cluster is None or not k:
        return None
    if query.outcome is None and not set(query.success_cells) <= set(query.trial_cells):
        return None
    q = quote_ident
    names = fresh_names(columns, [f"__s{i}" for i in range(k)] + ["__us", "__ut", "__n", "__sp"])
    s_out, (us, ut, n, sp) = [q(a) for a in names[:k]], [q(a) for a in names[k:]]
    value, _, on, ok, integral = unit_rows_sql(query, integral)
    only = f" FILTER (WHERE {on})" if on is not None else ""
    rows = f"COUNT(*){only}"  # a unit's trials
    picked, flags = [], []
    for c, a in zip(query.strata, s_out, strict=True):
        picked.append(f"min({q(c)}){only} AS {a}")
        flags.append(f"min({q(c)}){only} IS DISTINCT FROM max({q(c)}){only}")
        flags.append(f"COUNT({q(c)}){only} NOT IN (0, {rows})")
    total = f"SUM({value})::DOUBLE" if integral else f"round(SUM({value}), {UNIT_DECIMALS})"
    if ok is not None:
        total = f"count_if({ok})::DOUBLE"  # the sum of CASE WHEN ok THEN 1 ELSE 0 END, without the CASE
    per_unit = (
        f"SELECT {', '.join(picked)}, {total} AS {us}, {rows}::BIGINT AS {ut}, "
        f"({' OR '.join(flags)}) AS {sp} FROM {source} GROUP BY {q(query.cluster)}"
    )
    return (
        f"SELECT {', '.join(s_out)}, {us}, {ut}, COUNT(*)::BIGINT AS {n}, "
        f"COUNT(*) FILTER (WHERE {sp})::BIGINT AS {sp} FROM ({per_unit}) WHERE {ut} > 0 GROUP BY ALL"
    )


def count_units(fetch: Any, source: str, columns: list[str], query: UnitQuery, integral: bool) -> UnitTable:
    """:meth:`Backend.unit_counts` in SQL: ``fetch(sql)`` runs a statement over ``source``.

    By the cluster alone (:func:`cluster_unit_sql`) where it applies, then, only when some
    cluster spans strata, by (stratum, cluster) pairs (:func:`unit_sql`).
    """
    fast = cluster_unit_sql(source, columns, query, integral)
    k = len(query.strata)
    if fast is not None:
        table = string_columns_as_str(fetch(fast))
        if not len(table) or int(table.iloc[:, k + 3].sum()) == 0:
            return unit_table(table.iloc[:, : k + 3], k)
    sql, k = unit_sql(source, columns, query, integral)
    return unit_table(string_columns_as_str(fetch(sql)), k)


#: label column types the one-pass count of 0/1 labels reads (``|`` and ``=`` with integer literals)
BINARY_LABEL_TYPES = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
)

_CELLS = ((0, 0), (0, 1), (1, 0), (1, 1))

#: integer label types compared with an integer ``positive`` in the one-pass count
INTEGER_LABEL_TYPES = BINARY_LABEL_TYPES - {"BOOLEAN"} | {"UBIGINT", "HUGEINT"}


def named_label_types(positive: Any) -> frozenset[str]:
    """The DuckDB label types :func:`named_sql` compares with ``positive``: text for a string, integers
    for an integer (booleans and floats are left to the confusion table's path)."""
    if isinstance(positive, str):
        return frozenset({"VARCHAR"})
    if isinstance(positive, (int, np.integer)) and not isinstance(positive, (bool, np.bool_)):
        return INTEGER_LABEL_TYPES
    return frozenset()


def binary_condition(t: str, p: str, cells: tuple[tuple[int, int], ...]) -> str | None:
    """SQL true on the rows of 0/1 labels ``t``, ``p`` whose pair is one of ``cells``; None: every row.

    The forms an expert writes (``t = 1``, ``t = p``, ``t = 1 AND p = 1``) where one fits.
    """
    wanted = set(cells)
    if wanted == set(_CELLS):
        return None
    if not wanted:
        return "FALSE"
    for i, col in enumerate((t, p)):
        for v in (0, 1):
            if wanted == {c for c in _CELLS if c[i] == v}:
                return f"{col} = {v}"
    if wanted == {(0, 0), (1, 1)}:
        return f"{t} = {p}"
    if wanted == {(0, 1), (1, 0)}:
        return f"{t} <> {p}"
    return " OR ".join(f"({t} = {a} AND {p} = {b})" for a, b in _CELLS if (a, b) in wanted)


def binary_sql(source: str, columns: list[str], query: BinaryQuery, types: tuple[str, str]) -> str:
    """SQL for :meth:`DuckDBBackend.binary_counts` over ``source`` (whose columns are ``columns``).

    One aggregation by the stratum columns: the metric's trials and successes as conditional
    counts, and ``bit_or(coalesce(y_true | y_pred, 2))``, the check that every label is 0 or 1.
    ``types`` are the label columns' DuckDB types (booleans are read as TINYINT).
    """
    q = quote_ident
    k = len(query.strata)
    names = [q(a) for a in fresh_names(columns, [f"__s{i}" for i in range(k)] + ["__t", "__x", "__b"])]
    t, p = (
        f"{q(c)}::TINYINT" if kind == "BOOLEAN" else q(c)
        for c, kind in zip((query.y_true, query.y_pred), types, strict=True)
    )
    parts = [f"{q(c)} AS {a}" for c, a in zip(query.strata, names, strict=False)]
    for cells, out in ((query.trial_cells, names[k]), (query.success_cells, names[k + 1])):
        cond = binary_condition(t, p, cells)
        parts.append(f"{'count(*)' if cond is None else f'count_if({cond})'}::BIGINT AS {out}")
    parts.append(f"bit_or(coalesce({t} | {p}, 2))::BIGINT AS {names[k + 2]}")
    return _grouped(parts, source, names[:k])


def named_sql(source: str, columns: list[str], query: BinaryQuery, other: Any = None) -> str:
    """SQL for :meth:`DuckDBBackend.binary_counts` of a query with ``positive``, over ``source``.

    The labels compared with ``positive`` as 0/1 codes, the metric's trials and successes on the codes,
    then the rows with a missing label and the sums ``rt``, ``rp``, ``ot``, ``op``, ``n`` of
    :data:`~bayeseval._backends.interface.NAMED_COLUMNS` (``other``: the label other than ``positive``
    that :func:`other_label_sql` found, None when there is none), in one aggregation by the stratum columns.
    """
    q = quote_ident
    k = len(query.strata)
    out = [f"__s{i}" for i in range(k)] + ["__t", "__x", "__b"] + [f"__{c}" for c in NAMED_COLUMNS[:5]]
    names = [q(a) for a in fresh_names(columns, out)]
    positive = sql_literal(query.positive)
    raw = [q(query.y_true), q(query.y_pred)]
    t, p = (f"({c} = {positive})::TINYINT" for c in raw)
    parts = [f"{q(c)} AS {a}" for c, a in zip(query.strata, names, strict=False)]
    for cells, name in ((query.trial_cells, names[k]), (query.success_cells, names[k + 1])):
        cond = binary_condition(t, p, cells)
        parts.append(f"{'count(*)' if cond is None else f'count_if({cond})'}::BIGINT AS {name}")
    parts.append(f"count_if({raw[0]} IS NULL OR {raw[1]} IS NULL)::BIGINT AS {names[k + 2]}")
    parts += [f"count_if({c} = {positive})::BIGINT AS {a}" for c, a in zip(raw, names[k + 3 : k + 5], strict=True)]
    for c, a in zip(raw, names[k + 5 : k + 7], strict=True):
        parts.append(f"{'0' if other is None else f'count_if({c} = {sql_literal(other)})'}::BIGINT AS {a}")
    parts.append(f"count(*)::BIGINT AS {names[k + 7]}")
    return _grouped(parts, source, names[:k])


def other_label_sql(source: str, query: BinaryQuery) -> str:
    """SQL for the first row of ``source`` with a label other than ``query.positive`` (its two labels): a
    query DuckDB stops at that row."""
    positive = sql_literal(query.positive)
    t, p = quote_ident(query.y_true), quote_ident(query.y_pred)
    return f"SELECT {t}, {p} FROM {source} WHERE {t} <> {positive} OR {p} <> {positive} LIMIT 1"


def other_label(row: pd.DataFrame, positive: Any) -> Any:
    """The label other than ``positive`` in the result of :func:`other_label_sql` (None when it has no row)."""
    for value in row.iloc[0].tolist() if len(row) else []:
        if value is not None and not pd.isna(value) and value != positive:
            return value.item() if isinstance(value, np.generic) else value
    return None


def _grouped(parts: list[str], source: str, keys: list[str]) -> str:
    """``SELECT parts FROM source``, grouped by and ordered on the stratum columns ``keys`` when there are some."""
    if not keys:
        return f"SELECT {', '.join(parts)} FROM {source}"
    return f"SELECT {', '.join(parts)} FROM {source} GROUP BY ALL ORDER BY {', '.join(keys)}"


#: stratum column types whose order in DuckDB (``ORDER BY``, binary collation) is pandas' order
ORDERED_AS_PANDAS = frozenset(
    {"VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
    | {"HUGEINT", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP"}
)


def binary_table(table: pd.DataFrame, k: int, ordered: bool) -> pd.DataFrame:
    """The result of :func:`binary_sql` with positional columns ``0..k-1``, ``t``, ``s``, ``b``, sorted
    by the strata as pandas sorts them (``ordered``: DuckDB's order is known to be pandas' order)."""
    table.columns = list(range(k)) + ["t", "s", "b"] + (list(NAMED_COLUMNS[:5]) if table.shape[1] > k + 3 else [])
    if k and len(table) > 1 and not ordered:
        if not pd.MultiIndex.from_frame(table[list(range(k))]).is_monotonic_increasing:
            table = table.sort_values(list(range(k)), ignore_index=True)
    return table


def unit_table(table: pd.DataFrame, k: int) -> UnitTable:
    """A :class:`UnitTable` from the result of :func:`unit_sql` (positional columns)."""
    spanning = int(table.iloc[0, k + 3]) if table.shape[1] > k + 3 and len(table) else 0
    table = table.iloc[:, : k + 3].copy()
    table.columns = list(range(k)) + ["s", "t", "n"]
    table["s"] = table["s"].astype(float)
    table["t"] = table["t"].astype(np.int64)
    table["n"] = table["n"].astype(np.int64)
    return UnitTable(table, spanning)


def outcome_checks_sql(source: str, columns: list[str], outcome: str | None, cluster: str | None) -> str:
    """SQL for :meth:`Backend.outcome_checks` (one row: missing, outside, value, no_cluster)."""
    q = quote_ident
    parts = []
    if outcome is not None:
        o = f"TRY_CAST({q(outcome)} AS DOUBLE)"
        bad = f"({o} < 0 OR {o} > 1)"
        parts += [
            f"COUNT(*) FILTER (WHERE {o} IS NULL OR isnan({o}))::BIGINT AS missing",
            f"COUNT(*) FILTER (WHERE {bad})::BIGINT AS outside",
            f"min({o}) FILTER (WHERE {bad}) AS value",
        ]
    else:
        parts += ["0::BIGINT AS missing", "0::BIGINT AS outside", "NULL::DOUBLE AS value"]
    no_cluster = f"COUNT(*) FILTER (WHERE {q(cluster)} IS NULL)" if cluster is not None else "0"
    parts.append(f"{no_cluster}::BIGINT AS no_cluster")
    return f"SELECT {', '.join(parts)} FROM {source}"


def repeated_sql(source: str, columns: list[str]) -> str:
    """SQL for :meth:`Backend.repeated_columns`: rows minus distinct values, per column, one scan."""
    parts = [f"(COUNT({quote_ident(c)}) - COUNT(DISTINCT {quote_ident(c)}))::BIGINT" for c in columns]
    return f"SELECT {', '.join(parts)} FROM {source}"


class DuckDBBackend(Backend):
    """Rows in a Parquet/CSV file or a DuckDB relation."""

    engine = "duckdb"

    def __init__(self, data: Any) -> None:
        super().__init__(data)
        self.what = describe(data)
        self.rel = as_relation(data)
        with duckdb_errors(self.what):
            self._columns = list(self.rel.columns)
            self._types = [str(t).upper() for t in self.rel.types]
        self.alias = fresh_names(self._columns, ["__bayeseval_data"])[0]

    @property
    def columns(self) -> list[str]:
        return self._columns

    def type_of(self, column: str) -> str:
        """DuckDB's type name of ``column``."""
        return self._types[self._columns.index(column)]

    def query(self, sql: str) -> Any:
        """A relation for ``sql`` over the data (referred to as ``self.alias``)."""
        with duckdb_errors(self.what):
            return self.rel.query(self.alias, sql)

    def fetch(self, sql: str) -> pd.DataFrame:
        """Run ``sql`` and fetch the (small) result into pandas."""
        with duckdb_errors(self.what):
            return self.rel.query(self.alias, sql).df()

    def check_labels(self, pairs: list[tuple[str, str]]) -> None:
        # one scan in SQL over the float and decimal label columns: rows unequal to their floor
        # (DuckDB's NaN equals itself, so a missing value is not counted); counting costs less
        # than fetching a value, which is looked up only when there is one
        checked = [(arg, c) for arg, c in pairs if fractional_type(self.type_of(c))]
        if not checked:
            return
        out = fresh_names(self._columns, [f"__f{i}" for i in range(len(checked))])
        counts = [
            f"count(*) FILTER (WHERE {quote_ident(c)} <> floor({quote_ident(c)})) AS {quote_ident(a)}"
            for (_, c), a in zip(checked, out, strict=True)
        ]
        found = self.fetch(f"SELECT {', '.join(counts)} FROM {self.alias}").iloc[0].to_numpy()
        for (arg, c), n in zip(checked, found, strict=True):
            if n:
                q = quote_ident(c)
                value = self.fetch(f"SELECT {q}::DOUBLE AS v FROM {self.alias} WHERE {q} <> floor({q}) LIMIT 1")
                raise fractional_label_error(arg, c, float(value["v"].iloc[0]))

    def infinite(self, column: str) -> tuple[int, float | None]:
        if self.type_of(column).upper() not in ("FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"):
            return 0, None
        q = quote_ident(column)
        out = quote_ident(fresh_names(self._columns, ["__n"])[0])
        val = quote_ident(fresh_names(self._columns, ["__v"])[0])
        row = self.fetch(
            f"SELECT count(*) FILTER (WHERE isinf({q}))::BIGINT AS {out}, "
            f"min({q}::DOUBLE) FILTER (WHERE isinf({q})) AS {val} FROM {self.alias}"
        ).iloc[0]
        n = int(row.iloc[0])
        return n, (float(row.iloc[1]) if n else None)

    def confusion(self, strata: list[str], y_true: str, y_pred: str) -> ConfusionTable:
        k = len(strata)
        out = fresh_names(self._columns, [f"__s{i}" for i in range(k)] + ["__t", "__p", "__n"])
        select = [f"{quote_ident(c)} AS {quote_ident(a)}" for c, a in zip(strata + [y_true, y_pred], out, strict=False)]
        sql = f"SELECT {', '.join(select)}, COUNT(*)::BIGINT AS {quote_ident(out[-1])} FROM {self.alias} GROUP BY ALL"
        table = string_columns_as_str(self.fetch(sql))
        table.columns = list(range(k)) + ["t", "p", "n"]
        return confusion_from_frame(table, strata, y_true, y_pred, (self.type_of(y_true), self.type_of(y_pred)))

    def binary_counts(self, query: BinaryQuery) -> pd.DataFrame | None:
        types = (self.type_of(query.y_true), self.type_of(query.y_pred))
        if query.positive is not None:
            if not all(kind in named_label_types(query.positive) for kind in types):
                return None  # text against a number, floats...: the confusion table's path (and its messages)
            if isinstance(query.positive, str) and is_duckdb_relation(self.data):
                return None  # a relation's own connection may compare text under another collation (NOCASE)
        elif not all(kind in BINARY_LABEL_TYPES for kind in types):
            return None
        if any(self.type_of(c).startswith("ENUM") for c in query.strata):
            return None  # enum strata keep their unused levels, as the confusion table's path does
        if query.positive is not None:
            other = other_label(self.fetch(other_label_sql(self.alias, query)), query.positive)
            sql = named_sql(self.alias, self._columns, query, other)
        else:
            sql = binary_sql(self.alias, self._columns, query, types)
        table = string_columns_as_str(self.fetch(sql))
        # a relation keeps its own connection, whose collation may order strings otherwise
        ordered = not is_duckdb_relation(self.data) and all(self.type_of(c) in ORDERED_AS_PANDAS for c in query.strata)
        table = binary_table(table, len(query.strata), ordered)
        if query.positive is not None:
            table["o"] = other
        return table

    def proxy_cells(self, query: CellQuery) -> pd.DataFrame:
        strata, y_true, y_pred, proxy, n_cells, inclusion = query
        k = len(strata)
        names = fresh_names(
            self._columns,
            [f"__s{i}" for i in range(k)]
            + ["__c", "__t", "__p", "__n", "__w", "__w2", "__bad", "__e", "__x", "__r", "__m"],
        )
        s_out, (c, t, p, n, w, w2, bad, e, x, r, m) = names[:k], names[k:]
        q = quote_ident
        s_in = [q(col) for col in strata]
        cell = q(proxy)
        source = self.alias
        with_edges = ""
        if n_cells is not None:
            score = f"TRY_CAST({q(proxy)} AS DOUBLE)"
            by = ", ".join(s_in)
            part = f"PARTITION BY {by} " if k else ""
            ranked = (
                f"SELECT {by + ', ' if k else ''}{score} AS {q(x)}, "
                f"row_number() OVER ({part}ORDER BY {score}) - 1 AS {q(r)}, "
                f"count(*) OVER ({part.strip()}) AS {q(m)} "
                f"FROM {self.alias} WHERE {score} IS NOT NULL AND NOT isnan({score})"
            )
            # the ranks of bayeseval._kernels.proxy.edge_ranks, in integer arithmetic
            picked = " OR ".join(f"{q(r)} = ({q(m)} - 1) * {j} // {n_cells}" for j in range(1, n_cells))
            with_edges = (
                f"WITH {q(e)} AS (SELECT DISTINCT {by + ', ' if k else ''}{q(x)} FROM ({ranked}) WHERE {picked}) "
            )
            on = "".join(f" AND g.{col} IS NOT DISTINCT FROM d.{col}" for col in s_in)
            value = f"TRY_CAST(d.{q(proxy)} AS DOUBLE)"
            cell = (
                f"CASE WHEN d.{q(proxy)} IS NULL OR isnan({value}) THEN NULL ELSE "
                f"(SELECT count(*) FROM {q(e)} AS g WHERE g.{q(x)} < {value}{on}) END"
            )
            source = f"{self.alias} AS d"
            s_in = [f"d.{col}" for col in s_in]
        pre = "d." if n_cells is not None else ""
        select = [f"{a} AS {q(b)}" for a, b in zip(s_in, s_out, strict=True)]
        select += [
            f"{cell} AS {q(c)}",
            f"{pre}{q(y_true)} AS {q(t)}",
            f"{pre}{q(y_pred)} AS {q(p)}",
            f"COUNT(*)::BIGINT AS {q(n)}",
        ]
        if inclusion is not None:
            pi, lab = f"TRY_CAST({pre}{q(inclusion)} AS DOUBLE)", f"{pre}{q(y_true)} IS NOT NULL"
            ok = f"{lab} AND {pi} > 0 AND {pi} <= 1 AND NOT isnan({pi})"
            select += [
                f"COALESCE(SUM(CASE WHEN {ok} THEN 1.0 / {pi} END), 0.0) AS {q(w)}",
                f"COALESCE(SUM(CASE WHEN {ok} THEN 1.0 / ({pi} * {pi}) END), 0.0) AS {q(w2)}",
                f"COUNT(*) FILTER (WHERE {lab} AND NOT COALESCE({ok}, FALSE))::BIGINT AS {q(bad)}",
            ]
        table = string_columns_as_str(self.fetch(f"{with_edges}SELECT {', '.join(select)} FROM {source} GROUP BY ALL"))
        table.columns = list(range(k)) + ["c", "t", "p", "n"] + (["w", "w2", "bad"] if inclusion is not None else [])
        return table

    def unit_counts(self, query: UnitQuery) -> UnitTable:
        kind = self.type_of(query.outcome) if query.outcome is not None else ""
        integral = kind == "BOOLEAN" or ("INT" in kind and "INTERVAL" not in kind)
        return count_units(self.fetch, self.alias, self._columns, query, integral)

    def outcome_checks(self, outcome: str | None, cluster: str | None) -> dict[str, Any]:
        if outcome is not None:
            kind = self.type_of(outcome)
            numeric = kind == "BOOLEAN" or "INT" in kind or kind.startswith("DECIMAL") or fractional_type(kind)
            if not numeric:
                raise TypeError(f"outcome column {outcome!r} must hold numbers in [0, 1], got type {kind}")
        row = self.fetch(outcome_checks_sql(self.alias, self._columns, outcome, cluster)).iloc[0]
        return {key: row[key] for key in ("missing", "outside", "value", "no_cluster")}

    def repeated_columns(self, columns: list[str]) -> dict[str, int]:
        if not columns:
            return {}
        row = self.fetch(repeated_sql(self.alias, columns)).iloc[0].to_numpy()
        return {c: int(v) for c, v in zip(columns, row, strict=True)}

    # -- the split -----------------------------------------------------------------------
    def key_counts(self, cols: list[str], *, id_column: str | None, check_ids: bool) -> pd.DataFrame:
        if id_column is None:
            raise ValueError("id_column is required for a Parquet/CSV path or DuckDB relation (no index)")
        id_type = self.type_of(id_column)
        if "INT" not in id_type or "HUGEINT" in id_type:
            raise TypeError(f"id_column {id_column!r} must hold integers for the DuckDB engine, got {id_type}")
        qid = quote_ident(id_column)
        out = fresh_names(self._columns, [f"__c{i}" for i in range(len(cols))] + ["__rows", "__null"])
        select = [f"{quote_ident(c)} AS {quote_ident(a)}" for c, a in zip(cols, out, strict=False)]
        stats = self.fetch(
            f"SELECT {', '.join(select)}, COUNT(*)::BIGINT AS {quote_ident(out[-2])}, "
            f"SUM(CASE WHEN {qid} IS NULL THEN 1 ELSE 0 END)::BIGINT AS {quote_ident(out[-1])} "
            f"FROM {self.alias} GROUP BY ALL"
        )
        stats.columns = list(range(len(cols))) + ["rows", "null"]
        missing = int(stats["null"].sum())
        if missing:
            raise ValueError(f"id_column {id_column!r} has {missing} missing row ids")
        n_rows = int(stats["rows"].sum())
        if check_ids and n_rows:
            n_ids = int(self.fetch(f"SELECT COUNT(DISTINCT {qid}) AS n FROM {self.alias}")["n"].iloc[0])
            if n_ids != n_rows:
                raise ValueError(
                    f"id_column {id_column!r} must hold unique row ids ({n_ids} distinct in {n_rows} rows)"
                )
        return string_columns_as_str(stats.drop(columns="null"))

    def select_test(self, selection: SplitSelection) -> tuple[Any, Any, Any]:
        cells, cols, id_column, salts, take, weight = selection
        key, salt, n, w, rank, rn, z = (
            quote_ident(x) for x in fresh_names(self._columns, ["__key", "__salt", "__n", "__w", "__rank", "__rn", "z"])
        )
        d, qid = self.alias, quote_ident(id_column)
        values = []
        for row in cells[list(range(len(cols))) + ["key"]].itertuples(index=False, name=None):
            k = int(row[-1])
            wk = "NULL" if not np.isfinite(weight[k]) else repr(float(weight[k]))
            lits = [sql_literal(v) for v in row[:-1]]
            values.append(f"({', '.join(lits)}, {k}, {int(salts[k])}::UBIGINT, {int(take[k])}, {wk}::DOUBLE)")
        kcols = [f"k{i}" for i in range(len(cols))]
        ktable = f"(VALUES {', '.join(values)}) AS kt({', '.join(kcols)}, kkey, ksalt, kn, kw)"
        on = " AND ".join(f"{d}.{quote_ident(c)} = kt.{kc}" for c, kc in zip(cols, kcols, strict=True))
        joined = (
            f"(SELECT {d}.*, kt.kkey AS {key}, kt.ksalt AS {salt}, kt.kn AS {n}, kt.kw AS {w} "
            f"FROM {d} JOIN {ktable} ON {on})"
        )
        ranked = duckdb_rank_sql(qid, salt, joined, z=z, out=rank)
        numbered = f"SELECT *, ROW_NUMBER() OVER (PARTITION BY {key} ORDER BY {rank}, {qid}) AS {rn} FROM ({ranked})"
        drop = f"EXCLUDE ({key}, {salt}, {n}, {w}, {rank}, {rn})"
        weight_name = quote_ident(fresh_names([id_column], ["weight"])[0])
        test = self.query(f"SELECT * {drop} FROM ({numbered}) WHERE {rn} <= {n}")
        train = self.query(f"SELECT * {drop} FROM ({numbered}) WHERE {rn} > {n}")
        test_weights = self.query(f"SELECT {qid}, {w} AS {weight_name} FROM ({numbered}) WHERE {rn} <= {n}")
        return train, test, test_weights
