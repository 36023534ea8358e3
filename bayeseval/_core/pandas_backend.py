"""The pandas back end: a large frame is counted by DuckDB scanning it in place; a small one by
integer codes (factorize) and bincount. Neither builds a frame of the rows.

DuckDB reads the frame's columns without copying them and hashes them in native, parallel code:
at 12,000,000 rows that is an order of magnitude faster than factorizing a string column in
NumPy, and it needs no per-row integer code arrays (a factorized column costs 8 bytes a row).
Only columns whose values DuckDB reads exactly are handed over (NumPy booleans, integers and
floats, pandas strings and categoricals); the small confusion table it returns is cast back to
the frame's dtypes, so both paths give the same table and the same Counts.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._core.backends import Backend, ConfusionTable, confusion_from_frame
from bayeseval._core.hashing import id64, rank_of

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


def _codes(series: pd.Series, sort: bool) -> tuple[np.ndarray, Any]:
    """Integer codes and the values they stand for (sorted when ``sort``; NaN kept as a value)."""
    values = series.to_numpy() if isinstance(series.dtype, np.dtype) else None
    if values is not None and values.dtype.kind in "biu" and len(values):
        # small-range integers and booleans: the value itself is the code (no hashing); values
        # absent from the data get no row in the table, so unused codes are harmless
        lo, hi = (int(values.min()), int(values.max())) if values.dtype.kind != "b" else (0, 1)
        if hi - lo < 256:
            code = values.astype(np.int64) - lo
            return code, np.arange(lo, hi + 1).astype(values.dtype)
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

    def confusion(self, strata: list[str], y_true: str, y_pred: str) -> ConfusionTable:
        if len(self.data) == 0:
            raise ValueError("data has no rows")
        series = [self._column(c) for c in strata] + [self._column(y_true), self._column(y_pred)]
        dtypes = (str(series[-2].dtype), str(series[-1].dtype))
        if len(self.data) >= DUCKDB_MIN_ROWS and all(_scanned_exactly(s.dtype) for s in series):
            table = duckdb_group_counts(series)
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

    def select_test(
        self, cells: pd.DataFrame, *, cols: list[str], id_column: str | None, salts: np.ndarray,
        take: np.ndarray, weight: np.ndarray,
    ) -> tuple[Any, Any, Any]:
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
