"""The narwhals back end: any frame narwhals reads (polars eager and lazy, pyarrow, Dask, Ibis, Modin...).

Every count is a ``group_by().agg()`` (or a ``select`` of aggregates) run by the frame's own
engine through narwhals, lazily when the input is lazy; only the small aggregated tables are
collected and converted to pandas. 0/1 labels are counted in one aggregation by stratum (the
metric's cells as conditional sums, the check that every label is 0 or 1 in the same scan,
:meth:`NarwhalsBackend.binary_counts`); a polars frame runs that query in polars' own
expressions, which narwhals mirrors. No row-level data leaves the engine, with two exceptions
(docs/architecture.md, "Any data frame"):

* the split's keyed hash (:meth:`NarwhalsBackend.select_test`) is 64-bit integer arithmetic
  (multiplication modulo 2**64, shifts, exclusive or) that narwhals cannot express: the id and
  key columns are collected, the test ids chosen by the pandas back end's code, and ``train`` and
  ``test`` are the input filtered on those ids, in its own engine;
* a score proxy's bins need each stratum's order statistics, a window rank: engines for which
  narwhals has none (pyarrow, Dask) collect the query's columns and bin them in pandas.

Every column the back end adds is named so that it is absent from the input
(:func:`bayeseval._kernels.naming.fresh_names`). ``narwhals`` is imported inside the functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import first_fractional, fractional_label_error
from bayeseval._backends.interface import (
    NAMED_COLUMNS,
    Backend,
    BinaryQuery,
    CellQuery,
    ConfusionTable,
    SplitSelection,
    UnitQuery,
    UnitTable,
    confusion_from_frame,
    is_duckdb_source,
    is_spark_dataframe,
    string_columns_as_str,
)
from bayeseval._kernels.naming import fresh_names

#: decimals a unit's summed graded outcome is rounded to (as the pandas and DuckDB back ends do)
UNIT_DECIMALS = 9


def as_narwhals(data: Any) -> Any:
    """``data`` as a narwhals DataFrame or LazyFrame, or None when narwhals does not read it.

    Parameters
    ----------
    data : object
        Anything; a frame of an engine narwhals supports (polars, pyarrow, Dask, Ibis, Modin...).

    Returns
    -------
    narwhals.DataFrame, narwhals.LazyFrame or None
        The frame wrapped by narwhals (no data is copied), or None for anything else.

    Examples
    --------
    >>> import pyarrow as pa
    >>> type(as_narwhals(pa.table({"y": [1, 0]}))).__name__, as_narwhals([1, 2])
    ('DataFrame', None)
    """
    import narwhals as nw

    try:
        return nw.from_native(data, pass_through=False)
    except TypeError:
        return None


def pandas_frame(data: Any, columns: list[str] | None = None) -> Any:
    """``data`` as a pandas DataFrame when it is another frame narwhals reads; anything else unchanged.

    For the entry points that work on a pandas frame of rows (a campaign's pool, a simulation, the
    impact-ratio tables): a polars, pyarrow, Dask... frame is collected, only ``columns`` (those
    it holds; None: all), into pandas with a default ``RangeIndex`` (the rows' positions).
    pandas frames, DuckDB and Spark sources, and non-frames are returned as they are (the
    caller refuses what it does not take).

    Parameters
    ----------
    data : object
        The rows.
    columns : list of str, optional
        The columns needed; names absent from ``data`` are left to the caller's check.

    Returns
    -------
    pandas.DataFrame or object
        The collected frame, or ``data``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> pandas_frame(pa.table({"y": [1, 0], "g": ["a", "b"]}), ["g"])
       g
    0  a
    1  b
    """
    import narwhals as nw

    if isinstance(data, pd.DataFrame) or is_duckdb_source(data) or is_spark_dataframe(data):
        return data
    frame = as_narwhals(data)
    if frame is None:
        return data
    if columns is not None:
        present = list(frame.collect_schema())
        frame = frame.select(*[nw.col(c) for c in dict.fromkeys(columns) if isinstance(c, str) and c in present])
    return string_columns_as_str(_collect(frame))


def _collect(frame: Any) -> pd.DataFrame:
    """A small narwhals frame (an aggregate) as pandas: collected first when lazy.

    Text columns get pandas' default string dtype whatever the engine's (object, ``string``
    with ``pd.NA``, Arrow strings), as the pandas back end's results have.
    """
    import narwhals as nw

    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    out = frame.to_pandas()
    for c in out.columns:
        text = _as_str(out[c])
        if text is not None:
            out[c] = text
    return out


def _as_str(values: pd.Series) -> pd.Series | None:
    """``values`` with pandas' default string dtype when they are text of another dtype (None otherwise)."""
    dtype = values.dtype
    if dtype == _DEFAULT_STR:
        return None  # already pandas' default string dtype: a copy through objects costs 0.1 us a value
    if isinstance(dtype, pd.StringDtype) or (isinstance(dtype, pd.ArrowDtype) and pd.api.types.is_string_dtype(dtype)):
        return values.astype(object).where(values.notna(), None).astype("str")
    if (
        isinstance(dtype, np.dtype)
        and dtype.kind == "O"
        and len(values)
        and pd.api.types.infer_dtype(values) == "string"
    ):
        return values.astype("str")
    return None


_DEFAULT_STR = pd.api.types.pandas_dtype("str")


def _is_float(dtype: Any) -> bool:
    return bool(dtype.is_float())


def _is_fractional_type(dtype: Any) -> bool:
    """Whether a column of this narwhals dtype can hold a fractional number (floats, decimals)."""
    import narwhals as nw

    return _is_float(dtype) or isinstance(dtype, nw.Decimal) or dtype == nw.Decimal


def _integral(dtype: Any) -> bool:
    import narwhals as nw

    return bool(dtype.is_integer()) or dtype == nw.Boolean


def _binary_condition(ns: Any, t: Any, p: Any, cells: tuple[tuple[int, int], ...]) -> Any:
    """An expression (of ``ns``) true on rows of 0/1 labels ``t``, ``p`` whose pair is one of ``cells``;
    None: every row. The forms a user writes (``t == 1``, ``t == p``...) where one fits."""
    wanted = set(cells)
    every = {(0, 0), (0, 1), (1, 0), (1, 1)}
    if wanted == every:
        return None
    if not wanted:
        return ns.lit(False)
    for col, i in ((t, 0), (p, 1)):
        for v in (0, 1):
            if wanted == {c for c in every if c[i] == v}:
                return col == v
    if wanted == {(0, 0), (1, 1)}:
        return t == p
    if wanted == {(0, 1), (1, 0)}:
        return t != p
    out = None
    for a, b in sorted(wanted):
        pair = (t == a) & (p == b)
        out = pair if out is None else out | pair
    return out


def _binary_stratum(dtype: Any) -> bool:
    """Whether :meth:`NarwhalsBackend.binary_counts` groups by a stratum column of this narwhals dtype."""
    import narwhals as nw

    return (
        bool(dtype.is_numeric() and not isinstance(dtype, nw.Decimal))
        or dtype in (nw.String, nw.Boolean, nw.Date)
        or isinstance(dtype, nw.Datetime)
    )


def _sorted_as_pandas(dtype: Any) -> bool:
    """Whether polars sorts values of this dtype as pandas does (text by code point, numbers, dates)."""
    import narwhals as nw

    return bool(dtype.is_integer()) or dtype in (nw.String, nw.Boolean, nw.Date) or isinstance(dtype, nw.Datetime)


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _cells_condition(t: Any, p: Any, cells: tuple[tuple[Any, Any], ...]) -> Any:
    """An expression true on rows whose ``(t, p)`` label pair is one of ``cells`` (never null)."""
    import narwhals as nw

    out = nw.lit(False)
    for a, b in cells:
        out = out | ((t == _python(a)) & (p == _python(b))).fill_null(False)
    return out


def _binary_query(
    ns: Any,
    frame: Any,
    query: BinaryQuery,
    names: list[str],
    booleans: list[bool],
    fused: bool,
    ordered: bool,
    other: Any = None,
) -> Any:
    """The query of :meth:`NarwhalsBackend.binary_counts`, in the expressions of ``ns`` (narwhals, or polars).

    By the stratum columns (renamed ``names[:k]``): the rows of the metric's trial and success cells and
    those whose labels are not both 0 or 1 (a missing label among them), summed (``names[k:k + 3]``); without
    strata one row of these sums and the row count (``names[k + 3]``). ``booleans`` marks boolean label
    columns (read as 0/1). With ``query.positive`` the labels are read as 1 where they equal it and 0
    elsewhere, ``names[k + 2]`` sums the rows with a missing label, ``names[k + 3]`` counts every stratum's
    rows and ``names[k + 4:k + 8]`` sum the rows of each label column equal to ``positive``, then to
    ``other`` (the columns ``rt``, ``rp``, ``ot``, ``op`` of :data:`~bayeseval._backends.interface.NAMED_COLUMNS`).
    ``fused`` sums the expressions inside the aggregation (polars); otherwise they are computed first and
    the aggregation sums plain columns, the only form narwhals runs on every engine. ``ordered``: sorted by
    the strata in the engine.
    """
    k = len(query.strata)
    keys, sums, n = names[:k], names[k : k + 3], names[k + 3]
    raw = (ns.col(query.y_true), ns.col(query.y_pred))
    named = query.positive is not None
    if named:
        positive = _python(query.positive)
        # a missing label's code: 0 (fused: missing) where a pandas-like engine cannot cast a missing
        # comparison to an integer; the rows with a missing label are counted apart and decline the count
        t, p = (((c == positive) if fused else (c == positive).fill_null(False)).cast(ns.Int8) for c in raw)
    else:
        t, p = (c.cast(ns.Int8) if boolean else c for c, boolean in zip(raw, booleans, strict=True))
    conditions = [_binary_condition(ns, t, p, query.trial_cells), _binary_condition(ns, t, p, query.success_cells)]
    if named:
        conditions += [raw[0].is_null() | raw[1].is_null(), t == 1, p == 1]
        conditions += [ns.lit(False) if other is None else c == _python(other) for c in raw]
        sums = [*sums, *names[k + 4 : k + 8]]
        if not fused:  # a missing label's comparisons are missing: counted apart, not summed
            conditions = [c if c is None else c.fill_null(False) for c in conditions]
    else:
        binary = ((t == 0) | (t == 1)) & ((p == 0) | (p == 1))
        conditions.append(~binary.fill_null(False))  # a missing label is not 0/1
    if fused:  # a literal is one value per group there: every row's count is the group's length
        rows = frame
        aggs = [ns.len().alias(a) if c is None else c.sum().alias(a) for c, a in zip(conditions, sums, strict=True)]
        by = [ns.col(c).alias(a) for c, a in zip(query.strata, keys, strict=True)]
    else:
        values = [(ns.lit(True) if c is None else c).alias(a) for c, a in zip(conditions, sums, strict=True)]
        rows = frame.select(*[ns.col(c).alias(a) for c, a in zip(query.strata, keys, strict=True)], *values)
        aggs, by = [ns.col(a).sum() for a in sums], keys
    if not k:
        return rows.select(*aggs, ns.len().alias(n))
    aggs += [ns.len().alias(n)] if named else []
    grouped = rows.group_by(*by, **({} if fused else {"drop_null_keys": False})).agg(*aggs)
    return grouped.sort(*keys) if ordered else grouped


def _binary_table(
    grouped: Any, names: list[str], k: int, named: bool, ordered: bool, other: Any = None
) -> pd.DataFrame | None:
    """The collected result of :func:`_binary_query` as :meth:`NarwhalsBackend.binary_counts` returns it
    (None when there are no rows)."""
    keys, sums, n = names[:k], names[k : k + 3], names[k + 3]
    if not k and not int(grouped.get_column(n).to_numpy()[0]):
        return None  # no rows: the confusion table's path says so
    columns: dict[Any, Any] = {}
    for i, a in enumerate(keys):
        values = grouped.get_column(a).to_pandas()
        text = _as_str(values)
        columns[i] = values if text is None else text
    trials, successes, bad = (grouped.get_column(a).to_numpy() for a in sums)
    columns["t"], columns["s"] = np.asarray(trials, dtype=np.int64), np.asarray(successes, dtype=np.int64)
    if named:
        columns["b"] = np.asarray(bad, dtype=np.int64)
        for c, a in zip(NAMED_COLUMNS, [*names[k + 4 : k + 8], n], strict=False):
            columns[c] = np.asarray(grouped.get_column(a).to_numpy(), dtype=np.int64)
        columns["o"] = other
    else:
        columns["b"] = np.where(np.asarray(bad) > 0, 2, 0)
    table = pd.DataFrame(columns, index=None if k else range(1))
    if k and len(table) > 1 and not ordered:
        table = table.sort_values(list(range(k)), ignore_index=True)
    return table


def _named_labels(dtypes: tuple[Any, Any], positive: Any) -> bool:
    """Whether labels of these narwhals dtypes are compared with ``positive`` in the one-pass count:
    both text and ``positive`` a string, or both integers and ``positive`` an integer."""
    import narwhals as nw

    if isinstance(positive, str):
        return all(d == nw.String for d in dtypes)
    if isinstance(positive, (int, np.integer)) and not isinstance(positive, (bool, np.bool_)):
        return all(d.is_integer() for d in dtypes)
    return False


class NarwhalsBackend(Backend):
    """Rows in any frame narwhals reads, counted by that frame's engine."""

    engine = "narwhals"

    def __init__(self, data: Any) -> None:
        import narwhals as nw

        super().__init__(data)
        frame = as_narwhals(data)
        if frame is None:
            raise TypeError(f"data must be a frame narwhals reads, got {type(data).__name__}")
        self.lazy = isinstance(frame, nw.LazyFrame)
        self.implementation = str(frame.implementation).split(".")[-1].lower()
        if not self.lazy and frame.implementation.is_polars():
            # polars' lazy engine groups several times faster than its eager group_by (4x at 1,000
            # strata, benchmarks/bench_frames.py); a polars DataFrame is counted through a LazyFrame
            frame = frame.lazy()
        self.frame = frame
        self.schema = dict(frame.collect_schema())

    @property
    def columns(self) -> list[str]:
        return list(self.schema)

    def _fresh(self, wanted: list[str]) -> list[str]:
        return fresh_names(self.columns, wanted)

    def _first(self, condition: Any, column: str) -> Any:
        """The value of ``column`` on the first row (in the frame's order) where ``condition`` holds."""
        import narwhals as nw

        out = self._fresh(["__v"])[0]
        row = _collect(self.frame.filter(condition).select(nw.col(column).alias(out)).head(1))
        return row[out].iloc[0]

    # -- label checks --------------------------------------------------------------------
    def check_labels(self, pairs: list[tuple[str, str]]) -> None:
        import narwhals as nw

        checked = [c for _, c in pairs if _is_fractional_type(self.schema[c])]
        names = dict(zip(checked, self._fresh([f"__f{i}" for i in range(len(checked))]), strict=True))

        def bad(c: str) -> Any:
            x = nw.col(c).cast(nw.Float64)
            return ((x != x.floor()) & ~x.is_nan()).fill_null(False)

        found = _collect(self.frame.select(*[bad(c).sum().alias(a) for c, a in names.items()])) if names else None
        for arg, c in pairs:  # in the order of pairs, as the pandas back end
            if c in names and int(found[names[c]].iloc[0]):
                raise fractional_label_error(arg, c, float(self._first(bad(c), c)))
            if self.schema[c] == nw.Object:  # Python objects (a pandas-like engine): checked on the distinct values
                value = first_fractional(_collect(self.frame.select(nw.col(c).unique()))[c].to_numpy())
                if value is not None:
                    raise fractional_label_error(arg, c, value)

    def infinite(self, column: str) -> tuple[int, float | None]:
        import narwhals as nw

        if not _is_float(self.schema[column]):
            return 0, None
        inf = (nw.col(column).abs() == float("inf")).fill_null(False)
        out = self._fresh(["__n"])[0]
        n = int(_collect(self.frame.select(inf.sum().alias(out)))[out].iloc[0])
        return n, (float(self._first(inf, column)) if n else None)

    # -- counts --------------------------------------------------------------------------
    def confusion(self, strata: list[str], y_true: str, y_pred: str) -> ConfusionTable:
        import narwhals as nw

        k = len(strata)
        out = self._fresh([f"__s{i}" for i in range(k)] + ["__t", "__p", "__n"])
        picked = self.frame.select(*[nw.col(c).alias(a) for c, a in zip(strata + [y_true, y_pred], out, strict=False)])
        grouped = picked.group_by(*out[:-1], drop_null_keys=False).agg(nw.len().alias(out[-1]))
        table = string_columns_as_str(_collect(grouped))
        if not len(table):
            raise ValueError("data has no rows")
        table.columns = list(range(k)) + ["t", "p", "n"]
        dtypes = (str(self.schema[y_true]), str(self.schema[y_pred]))
        return confusion_from_frame(table, strata, y_true, y_pred, dtypes)

    def binary_counts(self, query: BinaryQuery) -> pd.DataFrame | None:
        # integer, boolean or float labels: one aggregation by stratum of the metric's trials and successes
        # and of the rows whose labels are not both 0 or 1 (missing, fractional, other classes), collected
        # once (see _binary_query); a float label 0.0 or 1.0 counts as the integer (check_labels has
        # already refused fractions, with their message)
        import narwhals as nw

        labels = (self.schema[query.y_true], self.schema[query.y_pred])
        named = query.positive is not None
        if named and not _named_labels(labels, query.positive):
            return None  # text against a number, floats...: the confusion table's path (and its messages)
        if not named and not all(_integral(d) or _is_float(d) for d in labels):
            return None  # text, decimals...: the confusion table's path
        if not all(_binary_stratum(self.schema[c]) for c in query.strata):
            return None  # categoricals keep their unused levels in the confusion table's path
        k = len(query.strata)
        names = self._fresh(
            [f"__s{i}" for i in range(k)] + ["__t", "__x", "__b", "__n"] + [f"__{c}" for c in NAMED_COLUMNS[:4]]
        )
        # polars sorts these types as pandas does; other engines' results are sorted in pandas
        ordered = self.implementation == "polars" and all(_sorted_as_pandas(self.schema[c]) for c in query.strata)
        if self.implementation == "polars":
            import polars as pl

            # narwhals' expression API is polars' own: the same query in polars' expressions spares
            # narwhals' translation of them (0.5 ms a call, 4% of counting 1,000,000 rows)
            frame, ns = self.frame.to_native(), pl
        else:
            frame, ns = self.frame, nw
        other = self._other_label(ns, frame, query) if named else None
        booleans = [d == nw.Boolean for d in labels]
        grouped = _binary_query(ns, frame, query, names, booleans, fused=ns is not nw, ordered=ordered, other=other)
        if isinstance(grouped, nw.LazyFrame) or (ns is not nw and isinstance(grouped, ns.LazyFrame)):
            grouped = grouped.collect()
        return _binary_table(grouped, names, k, named, ordered, other)

    def _other_label(self, ns: Any, frame: Any, query: BinaryQuery) -> Any:
        """A label other than ``query.positive`` in either label column (None when there is none): the
        first row holding one, found by a filtered query of one row that the engine stops early."""
        import narwhals as nw

        positive = _python(query.positive)
        t, p = ns.col(query.y_true), ns.col(query.y_pred)
        a, b = self._fresh(["__t", "__p"])
        row = frame.filter((t != positive) | (p != positive)).select(t.alias(a), p.alias(b)).head(1)
        if isinstance(row, nw.LazyFrame) or (ns is not nw and isinstance(row, ns.LazyFrame)):
            row = row.collect()
        values = [row.get_column(a).to_list(), row.get_column(b).to_list()]
        for found in values:
            if found and found[0] is not None and found[0] != positive:
                return found[0]
        return None

    def proxy_cells(self, query: CellQuery) -> pd.DataFrame:
        import narwhals as nw

        strata, y_true, y_pred, proxy, n_cells, inclusion = query
        k = len(strata)
        names = self._fresh([f"__s{i}" for i in range(k)] + ["__c", "__t", "__p", "__pi", "__n", "__w", "__w2", "__b"])
        keys, (c, t, p, pi, n, w, w2, bad) = names[:k], names[k:]
        picked = [*zip(strata, keys, strict=True), (proxy, c), (y_true, t), (y_pred, p)]
        picked += [(inclusion, pi)] if inclusion is not None else []
        frame = self.frame.select(*[nw.col(a).alias(b) for a, b in picked])
        if n_cells is not None:
            try:
                frame = self._score_bins(frame, keys, c, n_cells)
            except NotImplementedError:  # no window rank in this engine: bin the query's columns in pandas
                return self._pandas_proxy_cells(query)
        sums = [nw.len().alias(n)]
        if inclusion is not None:
            truth = nw.col(t)
            labelled = ~truth.is_null()
            if _is_float(self.schema[y_true]):
                labelled = labelled & ~truth.is_nan().fill_null(False)
            x = nw.col(pi).cast(nw.Float64)
            ok = (labelled & (x > 0) & (x <= 1) & ~x.is_nan()).fill_null(False)
            frame = frame.with_columns(
                nw.when(ok).then(1.0 / x).otherwise(0.0).alias(w),
                nw.when(ok).then(1.0 / (x * x)).otherwise(0.0).alias(w2),
                (labelled & ~ok).cast(nw.Int64).alias(bad),
            )
            sums += [nw.col(w).sum(), nw.col(w2).sum(), nw.col(bad).sum()]
        grouped = frame.group_by(*keys, c, t, p, drop_null_keys=False).agg(*sums)
        table = string_columns_as_str(_collect(grouped))
        table = table[[*keys, c, t, p, n] + ([w, w2, bad] if inclusion is not None else [])]
        table.columns = list(range(k)) + ["c", "t", "p", "n"] + (["w", "w2", "bad"] if inclusion is not None else [])
        return table.astype({"n": np.int64, **({"bad": np.int64} if inclusion is not None else {})})

    def _score_bins(self, frame: Any, keys: list[str], c: str, n_cells: int) -> Any:
        """Replace the score column ``c`` by its bin within each stratum of ``keys``, in the engine.

        A window rank within each stratum picks the edges' order statistics (one row per stratum
        and edge, :func:`~bayeseval._kernels.bins.edge_ranks`); each edge joins back on the keys,
        and a row's bin counts the distinct edges strictly below its score. NotImplementedError
        when narwhals has no window rank for the engine.
        """
        import narwhals as nw

        x, r, m = fresh_names(list(frame.collect_schema()), ["__x", "__r", "__m"])
        edges = fresh_names(list(frame.collect_schema()) + [x, r, m], [f"__e{j}" for j in range(1, n_cells)])
        score = nw.col(c).cast(nw.Float64)
        frame = frame.with_columns(score.alias(x))
        valid = (~nw.col(x).is_null() & ~nw.col(x).is_nan()).fill_null(False)
        rank = nw.col(x).rank(method="ordinal")
        size = nw.col(x).count()
        if keys:
            rank, size = rank.over(*keys), size.over(*keys)
        ranked = frame.filter(valid).select(
            *[nw.col(key) for key in keys],
            nw.col(x),
            (rank.cast(nw.Int64) - 1).alias(r),
            size.cast(nw.Int64).alias(m),
        )
        out = frame
        for j, e in enumerate(edges, start=1):
            edge = ranked.filter(nw.col(r) == (nw.col(m) - 1) * j // n_cells).select(
                *[nw.col(key) for key in keys], nw.col(x).alias(e)
            )
            out = out.join(edge, on=keys, how="left") if keys else out.join(edge, how="cross")
        below = nw.lit(0)
        for j, e in enumerate(edges):
            new = nw.col(e) < nw.col(x)
            if j:
                new = new & (nw.col(e) != nw.col(edges[j - 1]))
            below = below + new.fill_null(False).cast(nw.Int64)
        out = out.with_columns(nw.when(valid).then(below).alias(c))
        return out.drop(x, *edges)

    def _pandas_proxy_cells(self, query: CellQuery) -> pd.DataFrame:
        """:meth:`proxy_cells` by the pandas back end on the query's columns (collected)."""
        import narwhals as nw

        from bayeseval._backends.pandas_backend import PandasBackend

        used = list(
            dict.fromkeys(c for c in (*query.strata, query.proxy, query.y_true, query.y_pred, query.inclusion) if c)
        )
        return PandasBackend(_collect(self.frame.select(*[nw.col(c) for c in used]))).proxy_cells(query)

    def unit_counts(self, query: UnitQuery) -> UnitTable:
        import narwhals as nw

        k = len(query.strata)
        keys = self._fresh([f"__s{i}" for i in range(k)])
        cl, x, tr, n = self._fresh(["__cl", "__x", "__tr", "__n"])
        if query.outcome is not None:
            integral = _integral(self.schema[query.outcome])
            value = nw.col(query.outcome).cast(nw.Int64 if integral else nw.Float64)
            value = 1 - value if query.flip else value
            trial = nw.lit(1, dtype=nw.Int64)
        else:
            integral = True
            t, p = nw.col(str(query.y_true)), nw.col(str(query.y_pred))
            value = _cells_condition(t, p, query.success_cells).cast(nw.Int64)
            trial = _cells_condition(t, p, query.trial_cells).cast(nw.Int64)
        select = [nw.col(s).alias(a) for s, a in zip(query.strata, keys, strict=True)]
        select += [value.alias(x), trial.alias(tr)]
        if query.cluster is not None:
            select.append(nw.col(query.cluster).alias(cl))
        rows = self.frame.select(*select)
        spanning = 0
        if query.cluster is None:
            hist = rows.filter(nw.col(tr) > 0).group_by(*keys, x, tr, drop_null_keys=False).agg(nw.len().alias(n))
        else:
            units = rows.group_by(*keys, cl, drop_null_keys=False).agg(nw.col(x).sum(), nw.col(tr).sum())
            units = units.filter(nw.col(tr) > 0)
            if not integral:
                # NumPy's rounding (scale, round to an integer, unscale), not the engine's round(x, 9):
                # pyarrow's can land one bit away, which splits a histogram cell
                scale = 10.0**UNIT_DECIMALS
                units = units.with_columns(((nw.col(x) * scale).round(0) / scale).alias(x))
            if k:
                found = _collect(units.select(nw.len().alias(n), nw.col(cl).n_unique().alias(cl)))
                spanning = int(found[n].iloc[0]) - int(found[cl].iloc[0]) if len(found) else 0
            hist = units.group_by(*keys, x, tr, drop_null_keys=False).agg(nw.len().alias(n))
        table = string_columns_as_str(_collect(hist))[[*keys, x, tr, n]]
        table.columns = list(range(k)) + ["s", "t", "n"]
        table = table.astype({"s": float, "t": np.int64, "n": np.int64})
        return UnitTable(table.reset_index(drop=True), max(spanning, 0))

    def outcome_checks(self, outcome: str | None, cluster: str | None) -> dict[str, Any]:
        import narwhals as nw

        out: dict[str, Any] = {"missing": 0, "outside": 0, "value": None, "no_cluster": 0}
        names = self._fresh(["__missing", "__outside", "__value", "__no_cluster"])
        aggs = []
        if outcome is not None:
            dtype = self.schema[outcome]
            if not (dtype.is_numeric() or dtype == nw.Boolean):
                raise TypeError(f"outcome column {outcome!r} must hold numbers in [0, 1], got dtype {dtype}")
            x = nw.col(outcome).cast(nw.Float64)
            missing = (x.is_null() | x.is_nan().fill_null(False)).fill_null(True)
            outside = ((x < 0) | (x > 1)).fill_null(False) & ~missing
            aggs += [
                missing.cast(nw.Int64).sum().alias(names[0]),
                outside.cast(nw.Int64).sum().alias(names[1]),
                nw.when(outside).then(x).otherwise(None).min().alias(names[2]),
            ]
        if cluster is not None:
            aggs.append(nw.col(cluster).null_count().alias(names[3]))
        if not aggs:
            return out
        row = _collect(self.frame.select(*aggs)).iloc[0]
        if outcome is not None:
            out["missing"], out["outside"] = int(row[names[0]]), int(row[names[1]])
            out["value"] = float(row[names[2]]) if out["outside"] else None
        if cluster is not None:
            out["no_cluster"] = int(row[names[3]])
        return out

    def repeated_columns(self, columns: list[str]) -> dict[str, int]:
        import narwhals as nw

        if not columns:
            return {}
        aggs = []
        names = self._fresh([f"__r{i}" for i in range(3 * len(columns))])
        for i, c in enumerate(columns):
            aggs += [
                nw.col(c).count().alias(names[3 * i]),
                nw.col(c).n_unique().alias(names[3 * i + 1]),
                nw.col(c).null_count().alias(names[3 * i + 2]),
            ]
        row = _collect(self.frame.select(*aggs)).iloc[0]
        out = {}
        for i, c in enumerate(columns):
            rows, distinct, nulls = (int(row[names[3 * i + j]]) for j in range(3))
            out[c] = rows - (distinct - (1 if nulls else 0))  # n_unique counts a missing value as one
        return out

    # -- the split -----------------------------------------------------------------------
    def key_counts(self, cols: list[str], *, id_column: str | None, check_ids: bool) -> pd.DataFrame:
        import narwhals as nw

        if id_column is None:
            raise ValueError(f"id_column is required for a {self.implementation} frame (it has no index)")
        out = self._fresh([f"__c{i}" for i in range(len(cols))] + ["__rows", "__null"])
        picked = self.frame.select(
            *[nw.col(c).alias(a) for c, a in zip(cols, out, strict=False)],
            nw.col(id_column).is_null().cast(nw.Int64).alias(out[-1]),
        )
        stats = _collect(
            picked.group_by(*out[:-2], drop_null_keys=False).agg(nw.len().alias(out[-2]), nw.col(out[-1]).sum())
        )
        stats = stats[out]
        stats.columns = list(range(len(cols))) + ["rows", "null"]
        missing = int(stats["null"].sum())
        if missing:
            raise ValueError(f"id_column {id_column!r} has {missing} missing row ids")
        n_rows = int(stats["rows"].sum())
        if check_ids and n_rows:
            a = self._fresh(["__ids"])[0]
            n_ids = int(_collect(self.frame.select(nw.col(id_column).n_unique().alias(a)))[a].iloc[0])
            if n_ids != n_rows:
                raise ValueError(
                    f"id_column {id_column!r} must hold unique row ids ({n_ids} distinct in {n_rows} rows)"
                )
        stats = string_columns_as_str(stats.drop(columns="null")).astype({"rows": np.int64})
        return stats

    def select_test(self, selection: SplitSelection) -> tuple[Any, Any, Any]:
        import narwhals as nw

        from bayeseval._backends.pandas_backend import PandasBackend

        cells, cols, id_column, salts, take, weight = selection
        assert id_column is not None  # key_counts requires it
        used = list(dict.fromkeys([*cols, id_column]))
        rows = _collect(self.frame.select(*[nw.col(c) for c in used]))
        local = PandasBackend(rows)
        mine = local.key_counts(cols, id_column=id_column, check_ids=False)
        k = len(cols)
        keyed = mine.merge(cells[list(range(k)) + ["key"]], on=list(range(k)), how="left", validate="one_to_one")
        _, _, weights = local.select_test(selection._replace(cells=keyed))
        test_ids = pd.Index(weights.index)
        weights.index = weights.index.rename(id_column)
        is_test = nw.col(id_column).is_in(test_ids.tolist())
        train, test = self.frame.filter(~is_test), self.frame.filter(is_test)
        if not self.lazy and isinstance(train, nw.LazyFrame):  # an eager input gives eager parts
            train, test = train.collect(), test.collect()
        return train.to_native(), test.to_native(), weights
