"""The pandas back end: counting without building a frame of the rows.

* Columns that are their own small codes (booleans, small-range integers, categoricals) are
  counted by a chunked ``bincount`` in their narrow dtypes: a few MB of temporaries at any size.
* Otherwise a large frame (strings, floats, wide integers) is counted by DuckDB scanning it in
  place; a small one by integer codes (factorize) and bincount.

DuckDB reads the frame's columns without copying them and hashes them in native, parallel code
(faster than factorizing a string column in NumPy: docs/validation.md, section 12f), and it
needs no per-row integer code arrays (a factorized column costs 8 bytes a row).
Only columns whose values DuckDB reads exactly are handed over (NumPy booleans, integers and
floats, pandas strings and categoricals); the small confusion table it returns is cast back to
the frame's dtypes, so both paths give the same table and the same Counts.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import first_fractional, fractional_label_error
from bayeseval._backends.duckdb_backend import (
    UNIT_DECIMALS,
    binary_sql,
    binary_table,
    count_units,
    named_sql,
    other_label,
    other_label_sql,
    repeated_sql,
)
from bayeseval._backends.hashing import id64, rank_of
from bayeseval._backends.interface import (
    Backend,
    BinaryQuery,
    CellQuery,
    ConfusionTable,
    SplitSelection,
    UnitQuery,
    UnitTable,
    confusion_from_frame,
)
from bayeseval._kernels.bins import edge_ranks

#: frames with at least this many rows are counted by DuckDB when their dtypes allow it
DUCKDB_MIN_ROWS = 100_000

_LOCAL = threading.local()


def _scanned_exactly(dtype: Any) -> bool:
    """Whether DuckDB reads a column of this dtype value for value (no cast that changes groups)."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biu" or dtype in (np.float32, np.float64)
    return isinstance(dtype, (pd.StringDtype, pd.CategoricalDtype))


def _connection() -> Any:
    """This thread's in-memory DuckDB connection (connections are not shared between threads)."""
    import duckdb

    con = getattr(_LOCAL, "con", None)
    if con is None:
        con = _LOCAL.con = duckdb.connect()
    return con


def duckdb_fetch(columns: dict[str, pd.Series], sql: Any) -> pd.DataFrame:
    """Run ``sql(name)`` over the ``columns`` in place, registered as a view called ``name``."""
    frame = pd.DataFrame({c: s.reset_index(drop=True) for c, s in columns.items()}, copy=False)
    con = _connection()
    con.register("bayeseval_rows", frame)
    try:
        return con.sql(sql("bayeseval_rows")).df()
    finally:
        con.unregister("bayeseval_rows")


def duckdb_group_counts(series: list[pd.Series]) -> pd.DataFrame:
    """Rows per combination of the values of ``series``, counted by DuckDB over the columns in place.

    Returns positional columns ``0..k-1`` in the series' own dtypes and ``n`` (int64). Missing
    values (NaN, None, NA) form their own groups. Categorical columns are counted by their integer
    codes (DuckDB would otherwise convert every row to its category) and decoded afterwards.
    """
    scanned = [s.cat.codes if isinstance(s.dtype, pd.CategoricalDtype) else s for s in series]
    frame = pd.DataFrame({f"c{i}": s.reset_index(drop=True) for i, s in enumerate(scanned)}, copy=False)
    names = ", ".join(frame.columns)
    con = _connection()
    con.register("bayeseval_rows", frame)
    try:
        table = con.sql(f"SELECT {names}, COUNT(*)::BIGINT AS n FROM bayeseval_rows GROUP BY ALL").df()
    finally:
        con.unregister("bayeseval_rows")
    out: dict[Any, Any] = {}
    for i, s in enumerate(series):
        values = table[f"c{i}"]
        if isinstance(s.dtype, pd.CategoricalDtype):
            out[i] = pd.Categorical.from_codes(values.to_numpy(np.int64), dtype=s.dtype)
        else:
            out[i] = values.astype(s.dtype)
    out["n"] = table["n"].to_numpy(np.int64)
    return pd.DataFrame(out)


#: rows counted per step by the small-code path (a 512 KB buffer that stays in cache)
CHUNK_ROWS = 1 << 16
#: the small-code path is used while the table of all code combinations has at most this many cells
MAX_CELLS = 1 << 22


class _SmallCodes:
    """A column whose values are their own small integer codes: booleans, small-range integers,
    categoricals. ``codes`` keeps the column's narrow dtype (no per-row int64 copy);
    ``codes + offset`` lies in ``0..size-1``; :meth:`decode` maps used codes back to values."""

    def __init__(self, series: pd.Series) -> None:
        self.series = series
        dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            self.codes = series.cat.codes.to_numpy()
            self.offset, self.size = 1, len(dtype.categories) + 1  # code -1 (missing) becomes 0
        else:
            self.codes = series.to_numpy()
            if dtype.kind == "b":
                self.offset, self.size = 0, 2
            else:
                lo, hi = int(self.codes.min()), int(self.codes.max())
                self.offset, self.size = -lo, hi - lo + 1

    @staticmethod
    def accepts(series: pd.Series) -> bool:
        """Whether ``series`` is boolean, categorical, or integer with fewer than 256 distinct values
        in its range."""
        dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            return True
        if not isinstance(dtype, np.dtype) or dtype.kind not in "biu":
            return False
        if dtype.kind == "b" or dtype.itemsize == 1:
            return True
        values = series.to_numpy()
        return int(values.max()) - int(values.min()) < 256

    def decode(self, used: np.ndarray) -> pd.Series:
        """The values of the used codes, in the column's dtype."""
        dtype = self.series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            return pd.Series(pd.Categorical.from_codes(used - 1, dtype=dtype))
        if dtype.kind == "b":
            return pd.Series(used.astype(bool))
        if dtype.kind == "u":
            return pd.Series(used.astype(dtype) + dtype.type(-self.offset))
        return pd.Series((used - self.offset).astype(dtype))


def small_code_counts(series: list[pd.Series]) -> pd.DataFrame | None:
    """Rows per combination of values by chunked ``bincount`` when every column is a small code.

    Returns positional columns ``0..k-1`` in the series' dtypes and ``n``, or None when a column
    is not a small code or the combinations are too many. Memory: a few MB per chunk, whatever
    the number of rows.
    """
    if not all(_SmallCodes.accepts(s) for s in series):
        return None
    cols = [_SmallCodes(s) for s in series]
    shape = tuple(c.size for c in cols)
    cells = int(np.prod(shape, dtype=np.int64))
    if cells > MAX_CELLS:
        return None
    n_rows = len(series[0])
    counts = np.zeros(cells, dtype=np.int64)
    # the cell of a row is Horner's sum over columns of (code + offset) * stride; the offsets'
    # share is one constant, added once. int64 arithmetic wraps modulo 2**64, so a uint64 column
    # cast to int64 (wrapping) still lands on the right cell in 0..cells-1.
    constant = 0
    for col in cols:
        constant = (constant * col.size + col.offset) % (1 << 64)
    constant = constant - (1 << 64) if constant >= 1 << 63 else constant
    buffer = np.empty(min(CHUNK_ROWS, n_rows), dtype=np.int64)
    with np.errstate(over="ignore"):
        for start in range(0, n_rows, CHUNK_ROWS):
            flat = buffer[: min(CHUNK_ROWS, n_rows - start)]
            np.copyto(flat, cols[0].codes[start : start + CHUNK_ROWS], casting="unsafe")
            for col in cols[1:]:
                flat *= col.size
                np.add(flat, col.codes[start : start + CHUNK_ROWS], out=flat, casting="unsafe")
            flat += constant
            counts += np.bincount(flat, minlength=cells)
    present = np.flatnonzero(counts)
    used = np.unravel_index(present, shape)
    out: dict[Any, Any] = {i: col.decode(u) for i, (col, u) in enumerate(zip(cols, used, strict=True))}
    out["n"] = counts[present]
    return pd.DataFrame(out)


def _codes(series: pd.Series, sort: bool) -> tuple[np.ndarray, Any]:
    """Integer codes and the values they stand for (sorted when ``sort``; NaN kept as a value)."""
    values = series.to_numpy() if isinstance(series.dtype, np.dtype) else None
    if values is not None and values.dtype.kind in "biu" and len(values):
        # small-range integers and booleans: the value itself is the code (no hashing); values
        # absent from the data get no row in the table, so unused codes are harmless
        lo, hi = (int(values.min()), int(values.max())) if values.dtype.kind != "b" else (0, 1)
        if values.dtype.kind == "b":
            return values.astype(np.int64), np.array([False, True])
        if hi - lo < 256:
            base = values.dtype.type(lo)  # subtract in the column's dtype: uint64 above 2**63 fits
            code = (values - base).astype(np.int64)
            return code, np.arange(hi - lo + 1).astype(values.dtype) + base
    try:
        code, uniques = pd.factorize(series, sort=sort, use_na_sentinel=False)
    except TypeError as exc:  # sorting values that cannot be ordered (numbers and strings)
        raise ValueError(
            f"column {series.name!r} mixes value types that cannot be ordered (e.g. numbers and strings); "
            "convert it to one type"
        ) from exc
    return code.astype(np.int64, copy=False), uniques


def _combine(codes: list[np.ndarray], shape: tuple[int, ...], n_rows: int) -> tuple[np.ndarray, Any]:
    """One integer per row for the combination of codes, and how to decode it."""
    if len(codes) == 1:
        return codes[0], None
    if float(np.prod(shape, dtype=float)) <= max(4 * n_rows, 1_000_000):
        return np.ravel_multi_index(codes, shape), None
    combos, flat = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    return flat.ravel(), combos


def _decode(present: np.ndarray, shape: tuple[int, ...], combos: Any) -> tuple[np.ndarray, ...]:
    if len(shape) == 1:
        return (present,)
    if combos is None:
        return np.unravel_index(present, shape)
    return tuple(combos[present, i] for i in range(len(shape)))


def cluster_sums(ccode: np.ndarray, x: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and summed outcome per cluster code ``0..size-1`` (int64 and, for integer outcomes, int64).

    Outcomes that are all 0 or 1 are counted by one ``bincount`` of ``2 * code + outcome`` (the
    rows and the ones of a cluster side by side); others by a count and a weighted ``bincount``.
    """
    if x.dtype.kind in "iu" and len(x) and int(x.min()) >= 0 and int(x.max()) <= 1:
        key = np.multiply(ccode, 2, dtype=np.int64)
        np.add(key, x, out=key, casting="unsafe")
        both = np.bincount(key, minlength=2 * size)
        ones = both[1::2]
        return both[0::2] + ones, ones
    n_c = np.bincount(ccode, minlength=size)
    s_c = np.bincount(ccode, weights=x, minlength=size)
    return n_c, (np.round(s_c).astype(np.int64) if x.dtype.kind in "iu" else s_c)


def stratum_of_clusters(ccode: np.ndarray, scode: np.ndarray, size: int, used: np.ndarray) -> np.ndarray | None:
    """The stratum code of each used cluster, or None when some cluster's rows lie in two strata.

    Every row writes its stratum code into its cluster's slot; the rows then read their slots
    back, a chunk at a time into one buffer (no per-row temporary), and a row reading another
    code than its own belongs to a cluster that spans strata.
    """
    dtype = scode.dtype if scode.dtype.kind == "i" else np.dtype(np.int64)
    of_cluster = np.full(size, -1, dtype=dtype)
    of_cluster[ccode] = scode
    buffer = np.empty(min(CHUNK_ROWS, len(ccode)), dtype=dtype)
    for start in range(0, len(ccode), CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, len(ccode))
        back = np.take(of_cluster, ccode[start:stop], out=buffer[: stop - start])
        if not np.array_equal(back, scode[start:stop]):
            return None
    return of_cluster[used]


def unit_histogram(
    stratum: np.ndarray, t: np.ndarray, s: np.ndarray, integral: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Units per distinct (stratum code, trials, sum): ``(stratum, trials, sum, units)`` arrays.

    One ``bincount`` over the cells' flat index when the cells are few, else a sort of the
    units' keys. Sums of graded outcomes are rounded to ``UNIT_DECIMALS`` and factorized.
    """
    if integral:
        s_code, s_values = (s if s.dtype.kind in "iu" else np.round(s).astype(np.int64)), None
        width = int(t.max()) + 1
    else:
        s_code, s_values = pd.factorize(np.round(s, UNIT_DECIMALS))
        width = len(s_values)
    span = (int(t.max()) + 1) * width
    key = stratum * span + t * width + s_code
    if (int(stratum.max()) + 1) * span <= MAX_CELLS:
        n = np.bincount(key, minlength=(int(stratum.max()) + 1) * span)
        present = np.flatnonzero(n)
        count = n[present]
    else:
        present, count = np.unique(key, return_counts=True)
    g, rest = np.divmod(present, span)
    t_out, s_out = np.divmod(rest, width)
    s_float = s_out.astype(float) if s_values is None else np.asarray(s_values, dtype=float)[s_out]
    return g, t_out.astype(np.int64), s_float, count.astype(np.int64)


def _dense_codable(series: pd.Series) -> bool:
    """Whether a column has cheap integer codes: booleans, integers, categoricals."""
    dtype = series.dtype
    return isinstance(dtype, pd.CategoricalDtype) or (isinstance(dtype, np.dtype) and dtype.kind in "biu")


def _dense_codes(series: pd.Series) -> tuple[np.ndarray, Any]:
    """Codes ``0..m-1`` of a boolean, integer or categorical column and the values they stand for.

    Integers whose range is at most four times the rows are their own codes (``value - min``,
    no hashing); wider ones are factorized (sorted). Missing categoricals are refused upstream.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy().astype(np.int64), dtype.categories.to_numpy()
    values = series.to_numpy()
    if dtype.kind == "b":
        return values.view(np.uint8), np.array([False, True])
    if not len(values):
        return values.astype(np.int64), values
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < max(4 * len(values), 1 << 16):
        base = values.dtype.type(lo)
        uniques = np.arange(hi - lo + 1).astype(values.dtype) + base
        if lo == 0 and (dtype.kind == "i" or dtype.itemsize < 8):
            return values, uniques  # the values are their codes: no per-row copy
        return (values - base).astype(np.int64), uniques
    code, uniques = pd.factorize(series, sort=True)
    return code.astype(np.int64), np.asarray(uniques)


def _binary_counts_numpy(strata: list[pd.Series], labels: list[pd.Series], query: BinaryQuery) -> pd.DataFrame | None:
    """:meth:`PandasBackend.binary_counts` for boolean and integer strata: their values as codes, ``bincount``.

    None when a code range is too wide (more than four per row) or the labels are not all 0/1 (NumPy
    columns hold no missing value), so the caller counts the confusion table.
    """
    y, p = (v.to_numpy() for v in labels)
    both = np.bitwise_or(y.view(np.int8) if y.dtype == bool else y, p.view(np.int8) if p.dtype == bool else p)
    if len(both) and (int(both.min()) < 0 or int(both.max()) > 1):
        return None
    n_rows = len(y)
    parts = []
    for v in strata:
        values = v.to_numpy()
        if values.dtype.kind == "b":
            parts.append((values.astype(np.int64), np.array([False, True])))
            continue
        lo, hi = int(values.min()), int(values.max())
        if hi - lo >= max(4 * n_rows, 1 << 16):
            return None
        base = values.dtype.type(lo)
        parts.append(((values - base).astype(np.int64), np.arange(hi - lo + 1).astype(values.dtype) + base))
    shape = tuple(len(u) for _, u in parts)
    size = int(np.prod(shape, dtype=np.int64))
    if size > max(4 * n_rows, 1 << 16):
        return None
    code = parts[0][0] if len(parts) == 1 else np.ravel_multi_index([c for c, _ in parts], shape)
    cell = 2 * y.astype(np.int8) + p.astype(np.int8)  # (y, p) = (0, 0), (0, 1), (1, 0), (1, 1): 0..3
    out: dict[Any, Any] = {}
    for key, cells in (("t", query.trial_cells), ("s", query.success_cells)):
        lut = np.zeros(4, dtype=bool)
        lut[[2 * a + b for a, b in cells]] = True
        out[key] = np.bincount(code, weights=lut[cell], minlength=size)
    rows = np.bincount(code, minlength=size)
    present = np.flatnonzero(rows)
    pos = np.unravel_index(present, shape)
    table = pd.DataFrame(
        {i: pd.Series(u[j]).astype(v.dtype) for i, ((_, u), j, v) in enumerate(zip(parts, pos, strata, strict=True))}
    )
    table["t"] = out["t"][present].astype(np.int64)
    table["s"] = out["s"][present].astype(np.int64)
    table["b"] = np.zeros(len(present), dtype=np.int64)
    return table


def _one_pass_label(dtype: Any, positive: Any) -> bool:
    """Whether :meth:`PandasBackend.binary_counts` counts a label column of this dtype in DuckDB's one pass.

    Without ``positive`` (0/1 labels): NumPy booleans and integers (below 64 unsigned bits). With it: a
    pandas string column for a string ``positive``, a NumPy integer column for an integer one.
    """
    narrow = isinstance(dtype, np.dtype) and (dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8))
    if positive is None:
        return narrow or (isinstance(dtype, np.dtype) and dtype.kind == "b")
    if isinstance(positive, str):
        return isinstance(dtype, pd.StringDtype)
    return isinstance(positive, (int, np.integer)) and not isinstance(positive, (bool, np.bool_)) and narrow


def fractional_in(series: pd.Series) -> Any:
    """A fractional number in ``series`` (None when there is none); vectorised.

    Float columns (NumPy or nullable) are compared with their floor in one pass; a categorical
    column is checked on its categories, an object column on its distinct values.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return first_fractional(dtype.categories.to_numpy())
    if isinstance(dtype, np.dtype):
        if dtype.kind == "O":
            return first_fractional(pd.unique(series.to_numpy()))
        return first_fractional(series.to_numpy())
    if pd.api.types.is_float_dtype(dtype):  # nullable Float32/Float64, Arrow floats
        return first_fractional(series.to_numpy(dtype=float, na_value=np.nan))
    if pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        return None  # nullable integers and booleans; string dtypes
    return first_fractional(pd.unique(series.to_numpy(dtype=object)))


class PandasBackend(Backend):
    """Rows in a pandas DataFrame."""

    engine = "pandas"

    @property
    def columns(self) -> list[str]:
        return list(self.data.columns)

    def _column(self, name: str) -> pd.Series:
        col = self.data[name]
        if isinstance(col, pd.DataFrame):
            raise ValueError(f"column {name!r} appears {col.shape[1]} times in data; column names must be unique")
        return col

    def check_labels(self, pairs: list[tuple[str, str]]) -> None:
        for arg, name in pairs:
            bad = fractional_in(self._column(name))
            if bad is not None:
                raise fractional_label_error(arg, name, bad)

    def infinite(self, column: str) -> tuple[int, float | None]:
        values = self._column(column)
        if pd.api.types.is_float_dtype(values.dtype):
            x = np.asarray(values.to_numpy(dtype=float, na_value=np.nan), dtype=float)
        elif pd.api.types.is_object_dtype(values.dtype):  # only float objects, never text
            x = np.array([v if isinstance(v, (float, np.floating)) else np.nan for v in values.to_numpy()], dtype=float)
        else:
            return 0, None
        bad = np.isinf(x)
        return int(bad.sum()), (float(x[bad][0]) if bad.any() else None)

    def confusion(self, strata: list[str], y_true: str, y_pred: str) -> ConfusionTable:
        if len(self.data) == 0:
            raise ValueError("data has no rows")
        series = [self._column(c) for c in strata] + [self._column(y_true), self._column(y_pred)]
        dtypes = (str(series[-2].dtype), str(series[-1].dtype))
        table = small_code_counts(series)
        if table is None and len(self.data) >= DUCKDB_MIN_ROWS and all(_scanned_exactly(s.dtype) for s in series):
            table = duckdb_group_counts(series)
        if table is not None:
            table = table.rename(columns={len(strata): "t", len(strata) + 1: "p"})
            return confusion_from_frame(table, list(strata), y_true, y_pred, dtypes)
        parts = [_codes(s, sort=i < len(strata)) for i, s in enumerate(series)]
        shape = tuple(len(u) for _, u in parts)
        flat, combos = _combine([c for c, _ in parts], shape, len(self.data))
        size = len(combos) if combos is not None else int(np.prod(shape, dtype=np.int64)) if shape else 0
        n = np.bincount(flat, minlength=size)
        present = np.flatnonzero(n)
        pos = _decode(present, shape, combos)
        values = [u[p] for (_, u), p in zip(parts, pos, strict=True)]
        k = len(strata)
        frame = pd.DataFrame({i: pd.Series(values[i]) for i in range(k)}, index=range(len(present)))
        return ConfusionTable(
            strata=frame,
            truth=pd.Series(values[k]),
            pred=pd.Series(values[k + 1]),
            n=n[present].astype(np.int64),
            names=list(strata),
            y_true=y_true,
            y_pred=y_pred,
            dtypes=(str(series[k].dtype), str(series[k + 1].dtype)),
        )

    def binary_counts(self, query: BinaryQuery) -> pd.DataFrame | None:
        # the frames :meth:`confusion` hands to DuckDB (large, not all small codes), with NumPy
        # boolean or integer labels (or, with query.positive, labels of two classes: text or integers,
        # compared with it inside the aggregation): one aggregation by stratum over the columns in place
        if len(self.data) < DUCKDB_MIN_ROWS:
            return None
        labels = [self._column(query.y_true), self._column(query.y_pred)]
        if not all(_one_pass_label(v.dtype, query.positive) for v in labels):
            return None
        strata = [self._column(c) for c in query.strata]
        if not all(_scanned_exactly(v.dtype) and not isinstance(v.dtype, pd.CategoricalDtype) for v in strata):
            return None
        if all(_SmallCodes.accepts(v) for v in strata + labels):
            return None  # counted by bincount in the confusion table's path
        if query.positive is None and strata and all(v.dtype.kind in "biu" for v in strata):
            return _binary_counts_numpy(strata, labels, query)
        used = list(dict.fromkeys([*query.strata, query.y_true, query.y_pred]))
        alias = {c: f"c{i}" for i, c in enumerate(used)}
        renamed = query._replace(
            strata=[alias[c] for c in query.strata], y_true=alias[query.y_true], y_pred=alias[query.y_pred]
        )
        columns = {alias[c]: self._column(c) for c in used}
        if query.positive is not None:
            other = other_label(duckdb_fetch(columns, lambda name: other_label_sql(name, renamed)), query.positive)
            sql = named_sql("bayeseval_rows", list(alias.values()), renamed, other)
        else:
            types = tuple("BOOLEAN" if v.dtype.kind == "b" else "INTEGER" for v in labels)
            sql = binary_sql("bayeseval_rows", list(alias.values()), renamed, types)  # type: ignore[arg-type]
        table = duckdb_fetch(columns, lambda _name: sql)
        # DuckDB orders strings (binary collation on this module's connection) and numbers as pandas does
        table = binary_table(table, len(strata), ordered=True)
        for i, v in enumerate(strata):  # the frame's dtypes, as the confusion table's path gives them
            table[i] = table[i].astype(v.dtype)
        if query.positive is not None:
            table["o"] = other
        return table

    def proxy_cells(self, query: CellQuery) -> pd.DataFrame:
        strata, y_true, y_pred, proxy, n_cells, inclusion = query
        if len(self.data) == 0:
            raise ValueError("data has no rows")
        k = len(strata)
        work = pd.DataFrame({i: self._column(c).to_numpy() for i, c in enumerate(strata)}, index=range(len(self.data)))
        cell = self._column(proxy).reset_index(drop=True)
        keys = list(range(k))
        if n_cells is not None:
            cell = score_bins(pd.to_numeric(cell, errors="coerce").astype(float), work, keys, n_cells)
        work["c"] = cell.to_numpy()
        work["t"] = self._column(y_true).to_numpy()
        work["p"] = self._column(y_pred).to_numpy()
        sums = ["n"]
        work["n"] = 1
        if inclusion is not None:
            pi = pd.to_numeric(self._column(inclusion), errors="coerce").to_numpy(float)
            labelled = ~pd.isna(work["t"]).to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = np.where(labelled, 1.0 / pi, 0.0)
            bad = labelled & ~((pi > 0) & (pi <= 1))
            work["w"], work["w2"], work["bad"] = np.where(bad, 0.0, inv), np.where(bad, 0.0, inv**2), bad.astype(int)
            sums += ["w", "w2", "bad"]
        out = work.groupby(keys + ["c", "t", "p"], dropna=False, sort=False)[sums].sum().reset_index()
        out["n"] = out["n"].astype(np.int64)
        return out

    # -- units -------------------------------------------------------------------------
    def unit_counts(self, query: UnitQuery) -> UnitTable:
        if len(self.data) == 0:
            raise ValueError("data has no rows")
        used = list(
            dict.fromkeys(c for c in (*query.strata, query.cluster, query.outcome, query.y_true, query.y_pred) if c)
        )
        series = {c: self._column(c) for c in used}
        if query.cluster is not None and all(_dense_codable(series[c]) for c in (*query.strata, query.cluster)):
            found = self._unit_counts_numpy(query)
            if found is not None:
                return found
        in_place = all(
            _scanned_exactly(v.dtype) and not isinstance(v.dtype, pd.CategoricalDtype) for v in series.values()
        )
        if len(self.data) >= DUCKDB_MIN_ROWS and in_place:
            # DuckDB groups the columns in place (parallel, no per-row code arrays); same SQL as for a path
            alias = {c: f"c{i}" for i, c in enumerate(used)}
            renamed = query._replace(
                strata=[alias[c] for c in query.strata],
                **{
                    f: alias[getattr(query, f)] for f in ("cluster", "outcome", "y_true", "y_pred") if getattr(query, f)
                },
            )
            out = series.get(query.outcome) if query.outcome is not None else None
            integral = out is not None and isinstance(out.dtype, np.dtype) and out.dtype.kind in "biu"
            columns = {alias[c]: v for c, v in series.items()}
            found = count_units(
                lambda sql: duckdb_fetch(columns, lambda _name: sql),
                "bayeseval_rows",
                list(alias.values()),
                renamed,  # type: ignore[arg-type]
                integral,
            )
            table = found.table
            for i, c in enumerate(query.strata):  # the frame's dtypes, as the confusion table's path gives them
                table[i] = table[i].astype(series[c].dtype)
            return found
        return self._unit_counts_pandas(query)

    def zero_one_labels(self, strata: list[str], y_true: str, y_pred: str, cluster: str) -> bool:
        """Whether the label, stratum and cluster columns are NumPy booleans or integers (no missing
        value) and every label is 0 or 1: the rows' counts are then their units' sums."""
        used = [self._column(c) for c in (*strata, cluster, y_true, y_pred)]
        if not all(isinstance(v.dtype, np.dtype) and v.dtype.kind in "biu" for v in used):
            return False
        labels = [v.to_numpy() for v in used[-2:]]
        if not len(labels[0]):
            return False
        return all(x.dtype == bool or (int(x.min()) >= 0 and int(x.max()) <= 1) for x in labels)

    def _row_values(self, query: UnitQuery) -> tuple[np.ndarray, np.ndarray | None]:
        """Each row's outcome and whether it is a trial (None: all).

        Integer outcomes keep their column's dtype (booleans and label successes as uint8: no
        per-row int64 copy); others are floats.
        """
        if query.outcome is not None:
            values = self._column(query.outcome)
            if isinstance(values.dtype, np.dtype) and values.dtype.kind in "biu":
                x = values.to_numpy()
                x = x.view(np.uint8) if x.dtype.kind == "b" else x
                if query.flip:
                    x = 1 - x if x.dtype.kind == "i" else (1 - x.astype(np.int64))
            else:
                x = pd.to_numeric(values).to_numpy(dtype=float, na_value=np.nan)
                x = 1 - x if query.flip else x
            return x, None
        truth, pred = self._column(str(query.y_true)).to_numpy(), self._column(str(query.y_pred)).to_numpy()
        trial, success = query.metric.masks(truth, pred, query.positive)
        return np.asarray(success, dtype=bool).view(np.uint8), (None if trial.all() else trial)

    def _unit_counts_numpy(self, query: UnitQuery) -> UnitTable | None:
        """Units by integer codes and ``bincount``: no hashing of (stratum, cluster) pairs.

        Each unit's trials and sum are ``bincount`` over the cluster's codes, its stratum the code
        its rows write into a per-cluster array (a cluster spans strata when a row reads back
        another code), and the histogram a ``bincount`` of the units' (stratum, trials, sum)
        cell. None when some cluster spans strata or a code is missing (the caller then groups
        by (stratum, cluster) pairs).
        """
        x, trial = self._row_values(query)
        k = len(query.strata)
        parts = [_dense_codes(self._column(c)) for c in query.strata]
        if any(
            isinstance(self._column(c).dtype, pd.CategoricalDtype) and len(code) and int(code.min()) < 0
            for c, (code, _) in zip(query.strata, parts, strict=True)
        ):
            return None  # missing categoricals: left to the general path, which reports them
        shape = tuple(len(u) for _, u in parts)
        combos, scode = None, None
        if k:
            scode, combos = _combine([c for c, _ in parts], shape, len(x))
            if combos is not None:
                return None
        cluster = self._column(str(query.cluster))
        ccode, _ = _dense_codes(cluster)
        if isinstance(cluster.dtype, pd.CategoricalDtype) and len(ccode) and int(ccode.min()) < 0:
            return None
        if trial is not None:
            ccode, x = ccode[trial], x[trial]
            scode = scode[trial] if scode is not None else None
        if not len(ccode):
            return UnitTable(pd.DataFrame({**{i: [] for i in range(k)}, "s": [], "t": [], "n": []}), 0)
        size = int(ccode.max()) + 1
        n_c, s_c = cluster_sums(ccode, x, size)
        used = np.flatnonzero(n_c)
        stratum = stratum_of_clusters(ccode, scode, size, used) if k else np.zeros(len(used), dtype=np.int64)
        if stratum is None:
            return None  # a cluster spans strata: each (stratum, cluster) pair is a unit
        g, t_out, s_out, count = unit_histogram(
            stratum.astype(np.int64, copy=False), n_c[used], s_c[used], x.dtype.kind in "biu"
        )
        table = pd.DataFrame(index=range(len(count)))
        if k:
            pos = _decode(g, shape, combos)
            for i, ((_, u), p, c) in enumerate(zip(parts, pos, query.strata, strict=True)):
                table[i] = pd.Series(u[p]).astype(self._column(c).dtype)
        table["s"] = s_out
        table["t"] = t_out
        table["n"] = count.astype(np.int64)
        return UnitTable(table, 0)

    def _unit_counts_pandas(self, query: UnitQuery) -> UnitTable:
        k = len(query.strata)
        work = pd.DataFrame({i: self._column(c).reset_index(drop=True) for i, c in enumerate(query.strata)})
        if query.outcome is not None:
            x = pd.to_numeric(self._column(query.outcome)).to_numpy(dtype=float, na_value=np.nan)
            work["x"] = 1.0 - x if query.flip else x
            work["tr"] = np.ones(len(x), dtype=np.int64)
        else:
            truth, pred = self._column(str(query.y_true)).to_numpy(), self._column(str(query.y_pred)).to_numpy()
            trial, success = query.metric.masks(truth, pred, query.positive)
            work["x"] = success.astype(float)
            work["tr"] = trial.astype(np.int64)
        keys = list(range(k))
        spanning = 0
        if query.cluster is None:
            rows = work[work["tr"] > 0]
            hist = rows.groupby(keys + ["x", "tr"], sort=False, dropna=False, observed=True).size()
        else:
            work["cl"] = self._column(query.cluster).to_numpy()
            units = work.groupby(keys + ["cl"], sort=False, dropna=False, observed=True)[["x", "tr"]].sum()
            units = units[units["tr"] > 0]
            units["x"] = units["x"].round(UNIT_DECIMALS)
            if k:
                cl = units.index.get_level_values("cl")
                spanning = len(cl) - cl.nunique()
            units = units.reset_index()
            hist = units.groupby(keys + ["x", "tr"], sort=False, dropna=False, observed=True).size()
        table = hist.rename("n").reset_index()
        table.columns = keys + ["s", "t", "n"]
        table["s"] = table["s"].astype(float)
        table["t"] = table["t"].astype(np.int64)
        table["n"] = table["n"].astype(np.int64)
        return UnitTable(table, spanning)

    def outcome_checks(self, outcome: str | None, cluster: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"missing": 0, "outside": 0, "value": None, "no_cluster": 0}
        if (
            outcome is not None
            and _dense_codable(self._column(outcome))
            and not isinstance(self._column(outcome).dtype, pd.CategoricalDtype)
        ):
            x = self._column(outcome).to_numpy()
            lo, hi = (int(x.min()), int(x.max())) if len(x) else (0, 0)
            if lo < 0 or hi > 1:
                bad = (x < 0) | (x > 1)
                out["outside"], out["value"] = int(bad.sum()), float(x[bad].min())
            outcome = None
        if outcome is not None:
            values = self._column(outcome)
            try:
                x = pd.to_numeric(values).to_numpy(dtype=float, na_value=np.nan)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"outcome column {outcome!r} must hold numbers in [0, 1], got dtype {values.dtype}"
                ) from exc
            out["missing"] = int(np.isnan(x).sum())
            bad = (x < 0) | (x > 1)
            out["outside"] = int(bad.sum())
            out["value"] = float(x[bad].min()) if out["outside"] else None
        if cluster is not None:
            out["no_cluster"] = int(self._column(cluster).isna().sum())
        return out

    def repeated_columns(self, columns: list[str]) -> dict[str, int]:
        out = {}
        for c in columns:
            values = self._column(c)
            if len(values) >= DUCKDB_MIN_ROWS and _scanned_exactly(values.dtype):
                row = duckdb_fetch({"c": values}, lambda name: repeated_sql(name, ["c"]))
                out[c] = int(row.iloc[0, 0])
            else:
                out[c] = int(values.count()) - int(values.nunique(dropna=True))
        return out

    # -- the split -----------------------------------------------------------------------
    def _ids(self, id_column: str | None) -> pd.Index:
        ids = pd.Index(self._column(id_column)) if id_column is not None else self.data.index
        what = f"id_column {id_column!r}" if id_column is not None else "data.index"
        missing = int(pd.isna(ids).sum()) if not pd.api.types.is_integer_dtype(ids.dtype) else 0
        if missing:
            raise ValueError(f"{what} has {missing} missing row ids")
        if ids.has_duplicates:
            dup = ids[ids.duplicated()][0]
            raise ValueError(f"{what} must hold unique row ids, got {dup!r} twice")
        return ids

    def key_counts(self, cols: list[str], *, id_column: str | None, check_ids: bool) -> pd.DataFrame:
        self._row_ids = self._ids(id_column)
        parts = [_codes(self._column(c), sort=True) for c in cols]
        shape = tuple(len(u) for _, u in parts)
        flat, combos = _combine([c for c, _ in parts], shape, len(self.data))
        size = len(combos) if combos is not None else int(np.prod(shape, dtype=np.int64))
        rows = np.bincount(flat, minlength=size)
        present = np.flatnonzero(rows)
        pos = _decode(present, shape, combos)
        cells = pd.DataFrame({i: pd.Series(u[p]) for i, ((_, u), p) in enumerate(zip(parts, pos, strict=True))})
        cells["rows"] = rows[present].astype(np.int64)
        cells["code"] = np.arange(len(present))
        code_of_flat = np.full(size, -1, dtype=np.int64)
        code_of_flat[present] = np.arange(len(present))
        self._cell_of_row = code_of_flat[flat]
        return cells

    def select_test(self, selection: SplitSelection) -> tuple[Any, Any, Any]:
        cells, cols, id_column, salts, take, weight = selection
        key_of_code = np.empty(len(cells), dtype=np.int64)
        key_of_code[cells["code"].to_numpy()] = cells["key"].to_numpy()
        key = key_of_code[self._cell_of_row]
        ids = self._row_ids
        u, tie = id64(ids)
        rank = rank_of(u, salts[key])
        order = np.lexsort((tie, rank, key))
        sorted_key = key[order]
        starts = np.searchsorted(sorted_key, np.arange(len(take)), side="left")
        pos = np.arange(len(order)) - starts[sorted_key]
        mask = np.zeros(len(order), dtype=bool)
        mask[order[pos < take[sorted_key]]] = True
        weights = pd.Series(weight[key[mask]], index=ids[mask], name="weight")
        return self.data[~mask], self.data[mask], weights


def score_bins(score: pd.Series, work: pd.DataFrame, keys: list, n_cells: int) -> pd.Series:
    """Bin of each score: its stratum's distinct edges (:func:`edge_ranks`) below it (NaN stays NaN)."""
    out = pd.Series(np.nan, index=score.index)
    groups = [np.arange(len(score))] if not keys else work.groupby(keys, dropna=False, sort=False).indices.values()
    for rows in groups:
        x = score.to_numpy()[rows]
        ok = ~np.isnan(x)
        if not ok.any():
            continue
        edges = np.unique(np.sort(x[ok])[edge_ranks(int(ok.sum()), n_cells)])
        out.iloc[rows[ok]] = np.searchsorted(edges, x[ok], side="left")
    return out
