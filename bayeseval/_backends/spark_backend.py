"""The Spark back end: a PySpark DataFrame counted with ``groupBy``; the split without collecting rows.

Column references are backtick-quoted (dotted names, spaces and quotes work),
and every column the back end adds is named so that it is absent from the
input (Spark compares names case-insensitively by default). The keyed rank is
Spark SQL integer arithmetic, one projection per step
(:func:`bayeseval._backends.hashing.spark_rank_steps`), which whole-stage code
generation compiles into the scan's loop; no Python runs per row. The test set
is exactly the one pandas and DuckDB select: within each key the ``n`` rows
with the smallest ``(rank, id)``. One ``groupBy`` over a narrow rank band per
key (:meth:`SparkBackend._cut_offs`) finds each key's cut-off row, and the
cut-offs (one row per key) are broadcast back. What reaches the driver: the
rows per key, the distinct-id count, and the band's ``(rank, id)`` pairs (about
ten binomial standard deviations per key, a few thousand rows at a billion).
What the driver sends (the cells with their key, salt and band, the cut-offs)
goes into the plan as one JSON literal (:func:`local_table`; up to 4,096 rows
of plain values), so the executors run no Python at all.
A proxy's cells are one ``groupBy``; a score proxy's bins are at per-stratum order statistics
(:func:`score_cells`: a window sort, a few order statistics per stratum to the driver, the
edges broadcast back).
``pyspark`` is imported inside the functions only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import fractional_label_error
from bayeseval._backends.hashing import signed64, spark_rank_steps
from bayeseval._backends.interface import (
    Backend,
    CellQuery,
    ConfusionTable,
    SplitSelection,
    UnitQuery,
    UnitTable,
    confusion_from_frame,
    string_columns_as_str,
)
from bayeseval._kernels.bins import edge_ranks
from bayeseval._kernels.naming import fresh_names

_TWO63 = 1 << 63


def quote(name: str) -> str:
    """Backtick-quote a column name for Spark.

    Examples
    --------
    >>> quote("a.b`c")
    '`a.b``c`'
    """
    return "`" + str(name).replace("`", "``") + "`"


def col(name: str) -> Any:
    """A Spark column reference to ``name``, taken literally (dots are not struct access)."""
    from pyspark.sql import functions as F

    return F.col(quote(name))


def keyed_rank(df: Any, *, id_column: str, salt_column: str, out: str) -> Any:
    """Add column ``out``: the keyed rank ``mix64(mix64(id) ^ salt) >> 1`` of each row.

    One projection per step of :func:`bayeseval._backends.hashing.spark_rank_steps`
    on a scratch column: plain integer expressions that whole-stage code
    generation compiles into the scan's loop (no lambdas, no arrays, no UDF).
    """
    from pyspark.sql import functions as F

    z = fresh_names(list(df.columns) + [out], ["__z"])[0]
    zq = quote(z)
    # non-nullable from the start (a missing id or salt counts as 0; the split refuses
    # missing ids before ranking): the optimizer then infers no ``IS NOT NULL`` on the steps, and
    # pushing such a filter down the projections would copy each step's expression
    # into the next one, growing the plan exponentially
    df = df.withColumn(z, F.coalesce(col(id_column).cast("long"), F.lit(0).cast("long")))
    for step in spark_rank_steps(zq, f"coalesce({quote(salt_column)}, CAST(0 AS BIGINT))"):
        df = df.withColumn(z, F.expr(step))
    return df.withColumn(out, col(z)).drop(z)


def _python(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _collect(sdf: Any, names: list) -> pd.DataFrame:
    rows = sdf.collect()
    return pd.DataFrame([tuple(r) for r in rows], columns=names) if rows else pd.DataFrame(columns=names)


class SparkBackend(Backend):
    """Rows in a PySpark DataFrame."""

    engine = "spark"

    @property
    def columns(self) -> list[str]:
        return list(self.data.columns)

    def _type(self, column: str) -> Any:
        return self.data.schema[column].dataType

    def check_labels(self, pairs: list[tuple[str, str]]) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        kinds = (T.FloatType, T.DoubleType, T.DecimalType)
        checked = [
            (arg, c) for arg, c in pairs if isinstance(self._type(c), kinds) and getattr(self._type(c), "scale", 1) != 0
        ]
        if not checked:
            return
        out = fresh_names(self.columns, [f"__f{i}" for i in range(len(checked))])
        found = []
        for (_, c), alias in zip(checked, out, strict=True):
            q = f"CAST({quote(c)} AS DOUBLE)"
            found.append(F.expr(f"first({q}, true) FILTER (WHERE {q} <> floor({q}) AND NOT isnan({q}))").alias(alias))
        row = self.data.agg(*found).collect()[0]
        for (arg, c), value in zip(checked, row, strict=True):
            if value is not None:
                raise fractional_label_error(arg, c, float(value))

    def infinite(self, column: str) -> tuple[int, float | None]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        if not isinstance(self._type(column), (T.FloatType, T.DoubleType)):
            return 0, None
        q = f"CAST({quote(column)} AS DOUBLE)"
        inf = f"({q} = double('inf') OR {q} = double('-inf'))"
        row = self.data.agg(
            F.expr(f"count(CASE WHEN {inf} THEN 1 END)"), F.expr(f"min(CASE WHEN {inf} THEN {q} END)")
        ).collect()[0]
        n = int(row[0])
        return n, (float(row[1]) if n else None)

    def confusion(self, strata: list[str], y_true: str, y_pred: str) -> ConfusionTable:
        from pyspark.sql import functions as F

        k = len(strata)
        out = fresh_names(self.columns, [f"__s{i}" for i in range(k)] + ["__t", "__p", "__n"])
        keys = [col(c).alias(a) for c, a in zip(strata + [y_true, y_pred], out, strict=False)]
        grouped = self.data.groupBy(*keys).agg(F.count(F.lit(1)).cast("long").alias(out[-1]))
        table = string_columns_as_str(_collect(grouped, list(range(k)) + ["t", "p", "n"]))
        if table.empty:
            table["n"] = table["n"].astype(np.int64)
        dtypes = (self._type(y_true).simpleString(), self._type(y_pred).simpleString())
        return confusion_from_frame(table, strata, y_true, y_pred, dtypes)

    def _narwhals(self) -> Backend:
        """The narwhals back end on the same Spark DataFrame (narwhals runs it as Spark SQL)."""
        from bayeseval._backends.narwhals_backend import NarwhalsBackend

        return NarwhalsBackend(self.data)

    def unit_counts(self, query: UnitQuery) -> UnitTable:
        # two Spark aggregations (by stratum and unit, then by stratum and unit sums) written once, in narwhals
        return self._narwhals().unit_counts(query)

    def outcome_checks(self, outcome: str | None, cluster: str | None) -> dict[str, Any]:
        return self._narwhals().outcome_checks(outcome, cluster)

    def repeated_columns(self, columns: list[str]) -> dict[str, int]:
        return self._narwhals().repeated_columns(columns)

    def proxy_cells(self, query: CellQuery) -> pd.DataFrame:
        strata, y_true, y_pred, proxy, n_cells, inclusion = query
        from pyspark.sql import functions as F

        k = len(strata)
        names = fresh_names(
            self.columns, [f"__s{i}" for i in range(k)] + ["__c", "__t", "__p", "__pi", "__n", "__w", "__w2", "__bad"]
        )
        keys, (c, t, p, pi, n, w, w2, bad) = names[:k], names[k:]
        picked = [*zip(strata, keys, strict=True), (proxy, c), (y_true, t), (y_pred, p)]
        picked += [(inclusion, pi)] if inclusion is not None else []
        df = self.data.select(*[col(a).alias(b) for a, b in picked])
        if n_cells is not None:
            df = score_cells(df, keys, c, n_cells)
        aggs = [F.count(F.lit(1)).cast("long").alias(n)]
        if inclusion is not None:
            aggs += _inclusion_sums(quote(t), quote(pi), w, w2, bad)
        grouped = df.groupBy(*[col(x) for x in [*keys, c, t, p]]).agg(*aggs)
        out = list(range(k)) + ["c", "t", "p", "n"] + (["w", "w2", "bad"] if inclusion is not None else [])
        table = string_columns_as_str(_collect(grouped, out))
        return table.astype({"n": np.int64, **({"bad": np.int64} if inclusion is not None else {})})

    # -- the split -----------------------------------------------------------------------
    def key_counts(self, cols: list[str], *, id_column: str | None, check_ids: bool) -> pd.DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        if id_column is None:
            raise ValueError("id_column is required for a Spark DataFrame (it has no index)")
        id_type = self._type(id_column)
        if not isinstance(id_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            raise TypeError(
                f"id_column {id_column!r} must hold integers for the Spark engine, got {id_type.simpleString()}"
            )
        out = fresh_names(self.columns, [f"__c{i}" for i in range(len(cols))] + ["__rows", "__null"])
        grouped = self.data.groupBy(*[col(c).alias(a) for c, a in zip(cols, out, strict=False)]).agg(
            F.count(F.lit(1)).cast("long").alias(out[-2]),
            F.sum(F.when(col(id_column).isNull(), 1).otherwise(0)).cast("long").alias(out[-1]),
        )
        stats = string_columns_as_str(_collect(grouped, list(range(len(cols))) + ["rows", "null"]))
        missing = int(stats["null"].sum())
        if missing:
            raise ValueError(f"id_column {id_column!r} has {missing} missing row ids")
        n_rows = int(stats["rows"].sum())
        if check_ids and n_rows:
            n_ids = self._distinct_ids(id_column, n_rows)
            if n_ids != n_rows:
                raise ValueError(
                    f"id_column {id_column!r} must hold unique row ids ({n_ids} distinct in {n_rows} rows)"
                )
        return stats.drop(columns="null").astype({"rows": np.int64})

    def _distinct_ids(self, id_column: str, n_rows: int) -> int:
        """Distinct ids: one shuffle by id, then an aggregate that needs no second shuffle.

        Faster than ``countDistinct``, which first builds a partial hash table of every
        id in every task (docs/validation.md, section 12f). The
        shuffle has one partition per :data:`_IDS_PER_TASK` rows (at least the
        default parallelism): each task's hash table of ids stays small. Left to
        ``spark.sql.shuffle.partitions`` and adaptive coalescing, 10 million ids went
        to two tasks of 5 million and took about twice as long.
        """
        one = fresh_names(self.columns, ["__id"])[0]
        ids = self.data.select(col(id_column).alias(one))
        parts = _default_parallelism(self.data)
        if parts is None:
            ids = ids.repartition(col(one))
        else:
            ids = ids.repartition(max(parts, -(-n_rows // _IDS_PER_TASK)), col(one))
        return int(ids.groupBy(col(one)).count().count())

    def select_test(self, selection: SplitSelection) -> tuple[Any, Any, Any]:
        cells, cols, id_column, salts, take, weight = selection
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        df = self.data
        self._rows_per_key = (
            cells.groupby("key")["rows"].sum().reindex(range(len(take)), fill_value=0).to_numpy(np.int64)
        )
        names = fresh_names(
            list(df.columns) + ["z"],
            [f"__c{i}" for i in range(len(cols))]
            + [
                "__key",
                "__salt",
                "__rank",
                "__lo",
                "__hi",
                "__band_rank",
                "__band_id",
                "__n",
                "__cut_rank",
                "__cut_id",
                "__w",
                "__test",
            ],
        )
        cnames = names[: len(cols)]
        key, salt, rank, lo_c, hi_c, band_rank, band_id, n_c, cut_rank_c, cut_id_c, w_c, test_c = names[len(cols) :]
        long = T.LongType()
        cell_fields = [T.StructField(c, self._type(orig)) for c, orig in zip(cnames, cols, strict=True)]
        cell_rows = [
            (tuple(_python(v) for v in row[:-1]), int(row[-1]))
            for row in cells[list(range(len(cols))) + ["key"]].itertuples(index=False, name=None)
        ]
        with_keys = df.withColumns({c: col(orig) for c, orig in zip(cnames, cols, strict=True)})

        def ranked(keys: dict, extra: list) -> Any:
            """The rows of the cells of ``keys`` (key -> extra values), with key, salt, extra and rank."""
            table = local_table(
                df.sparkSession,
                [values + (k, signed64(salts[k])) + tuple(keys[k]) for values, k in cell_rows if k in keys],
                cell_fields + [T.StructField(key, long), T.StructField(salt, long)] + extra,
            )
            joined = with_keys.join(F.broadcast(table), on=cnames, how="inner")
            return keyed_rank(joined, id_column=id_column, salt_column=salt, out=rank)

        cut_rank, cut_id = self._cut_offs(
            ranked, take, id_column=id_column, names=(key, rank, lo_c, hi_c, band_rank, band_id, n_c)
        )
        n_keys = len(take)
        cut_sdf = local_table(
            df.sparkSession,
            [(k, cut_rank[k], cut_id[k], float(weight[k]) if np.isfinite(weight[k]) else None) for k in range(n_keys)],
            [
                T.StructField(key, long),
                T.StructField(cut_rank_c, long),
                T.StructField(cut_id_c, long),
                T.StructField(w_c, T.DoubleType()),
            ],
        )
        idl = col(id_column).cast("long")
        # the cut-offs join after the rank: a filter on the rank's own projection would be pushed
        # down the steps, copying each step's expression into the next one
        marked = (
            ranked({k: () for k in range(n_keys)}, [])
            .join(F.broadcast(cut_sdf), on=key)
            .withColumn(
                test_c,
                (col(rank) < col(cut_rank_c)) | ((col(rank) == col(cut_rank_c)) & (idl <= col(cut_id_c))),
            )
        )
        out_cols = [col(c) for c in df.columns]
        test = marked.filter(col(test_c)).select(*out_cols)
        train = marked.filter(~col(test_c)).select(*out_cols)
        weight_name = fresh_names([id_column], ["weight"])[0]
        test_weights = marked.filter(col(test_c)).select(col(id_column), col(w_c).alias(weight_name))
        return train, test, test_weights

    def _cut_offs(self, ranked: Any, take: np.ndarray, *, id_column: str, names: tuple) -> tuple[dict, dict]:
        """Per key, the (rank, id) of its ``take``-th row, from one aggregation over the rows.

        Ranks are uniform on ``[0, 2**63)``, so the ``take``-th smallest rank of a
        key with ``rows`` rows lies near ``take / rows * 2**63``. One ``groupBy``
        counts, per key, the rows below a band around that point and returns the
        band's rows themselves (``(rank, id)``, about ``2 * 5`` binomial standard
        deviations of them); the driver sorts the band and reads the cut-off.
        ``ranked(bands, fields)`` gives the rows of the keys in ``bands`` with
        their band bounds (one broadcast table per cell: no second join), so the
        rows of keys that take none or all of their rows are neither ranked nor
        aggregated. A key whose cut-off falls outside its band (probability about
        1e-6) is redone with a band 40 standard deviations wide, then with all its rows.
        """
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        key, rank, lo_c, hi_c, band_rank, band_id, n_c = names
        rows_k = self._rows_per_key
        cut_rank = {k: -1 for k in range(len(take))}
        cut_id = {k: -(1 << 63) for k in range(len(take))}
        todo = []
        for k in range(len(take)):
            if take[k] > 0 and take[k] >= rows_k[k]:
                cut_rank[k], cut_id[k] = _TWO63 - 1, _TWO63 - 1
            elif take[k] > 0:
                todo.append(k)
        idl = col(id_column).cast("long")
        bounds = [T.StructField(lo_c, T.LongType()), T.StructField(hi_c, T.LongType())]
        for slack in _SLACKS:
            if not todo:
                break
            rows = ranked({k: _band(int(take[k]), int(rows_k[k]), slack) for k in todo}, bounds)
            in_band = (col(rank) >= col(lo_c)) & (col(rank) <= col(hi_c))
            found = (
                rows.groupBy(
                    col(key),
                    F.when(in_band, col(rank))
                    .when(col(rank) < col(lo_c), F.lit(-1))
                    .otherwise(F.lit(-2))
                    .alias(band_rank),
                    F.when(in_band, idl).alias(band_id),
                )
                .agg(F.count(F.lit(1)).alias(n_c))
                .collect()
            )
            cuts, todo = _read_bands(found, todo, take)
            for k, (r, i) in cuts.items():
                cut_rank[k], cut_id[k] = r, i
        return cut_rank, cut_id


def _read_bands(found: list, todo: list[int], take: np.ndarray) -> tuple[dict, list[int]]:
    """Cut-offs ``(rank, id)`` read from the band rows, and the keys whose cut-off missed the band.

    ``found`` holds ``(key, band rank or -1 below / -2 above, id, count)`` rows.
    """
    below: dict = {}
    band: dict = {k: [] for k in todo}
    for k, r, i, n in found:
        if r == -1:
            below[k] = n
        elif r >= 0:
            band[k].extend([(r, i)] * n)
    cuts, missed = {}, []
    for k in todo:
        j = int(take[k]) - below.get(k, 0) - 1
        if 0 <= j < len(band[k]):
            cuts[k] = sorted(band[k])[j]
        else:  # pragma: no cover - about one key in a million
            missed.append(k)
    return cuts, missed


#: ids per task of the uniqueness check's shuffle
_IDS_PER_TASK = 250_000


def _default_parallelism(df: Any) -> int | None:
    """The cluster's default parallelism (None on Spark Connect, which has no SparkContext).

    Not the input's partition count: asking a DataFrame for its RDD runs, under
    adaptive execution, every shuffle upstream of it (a join that produced the input).
    """
    try:
        return max(1, int(df.sparkSession.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext
        return None


#: up to this many rows, a small table is a literal in the plan (no Python worker runs for it)
_LITERAL_ROWS = 4096


def _inclusion_sums(t: str, pi: str, w: str, w2: str, bad: str) -> list[Any]:
    """Sums of ``1/pi`` and ``1/pi**2`` over labelled rows with ``pi`` in (0, 1], and the count of
    labelled rows without (a missing, NaN or out-of-range ``pi``); NaN is missing in ``t`` too."""
    from pyspark.sql import functions as F

    x = f"TRY_CAST({pi} AS DOUBLE)"
    lab = f"({t} IS NOT NULL AND NOT COALESCE(isnan(TRY_CAST({t} AS DOUBLE)), FALSE))"
    ok = f"({lab} AND {x} > 0 AND {x} <= 1 AND NOT isnan({x}))"
    return [
        F.expr(f"COALESCE(SUM(CASE WHEN {ok} THEN CAST(1 AS DOUBLE) / {x} END), CAST(0 AS DOUBLE))").alias(w),
        F.expr(f"COALESCE(SUM(CASE WHEN {ok} THEN CAST(1 AS DOUBLE) / ({x} * {x}) END), CAST(0 AS DOUBLE))").alias(w2),
        F.expr(f"SUM(CASE WHEN {lab} AND NOT COALESCE({ok}, FALSE) THEN 1 ELSE 0 END)").cast("long").alias(bad),
    ]


def linear_quantiles(m: int, values: dict[int, float], probs: np.ndarray) -> np.ndarray:
    """NumPy's default (``"linear"``) quantiles of ``m`` sorted values, from the few order statistics used.

    ``values`` maps 0-based ranks to the sorted values; those at ``floor((m - 1) q)`` and the
    next rank are needed. The arithmetic is NumPy's own (virtual index ``(m - 1) q``, its
    two-sided ``lerp``), so the result is bit-for-bit ``numpy.quantile`` of the full column.

    Examples
    --------
    >>> x = np.array([0.3, 0.1, 0.7, 0.2, 0.9])
    >>> ranks = dict(enumerate(np.sort(x)))
    >>> bool((linear_quantiles(5, ranks, np.array([0.2, 0.5])) == np.quantile(x, [0.2, 0.5])).all())
    True
    """
    vi = (m - 1) * probs
    prev = np.floor(vi)
    above = vi >= m - 1
    lo = np.where(above, m - 1, prev).astype(np.int64)
    hi = np.where(above, m - 1, prev + 1).astype(np.int64)
    a = np.array([values[int(i)] for i in lo], dtype=float)
    b = np.array([values[int(i)] for i in hi], dtype=float)
    gamma = vi - prev
    diff = b - a
    out = a + diff * gamma
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), out)


def score_cells(df: Any, keys: list[str], c: str, n_cells: int) -> Any:
    """Replace the score column ``c`` with its bin, computed exactly within each stratum of ``keys``.

    The bin is how many of the stratum's distinct edges (the order statistics of
    :func:`~bayeseval._kernels.bins.edge_ranks` among its non-missing scores) lie below the
    score; missing where the score is (NULL, NaN or not a number). One window sort per stratum
    ranks the scores; only the edges' order statistics (a few rows per stratum) reach the driver, and the
    edges (one row per stratum) go back as a broadcast table joined null-safely on the keys.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    x, r, m = fresh_names(list(df.columns), ["__x", "__r", "__m"])
    value = F.expr(f"TRY_CAST({quote(c)} AS DOUBLE)")
    scored = df.select(*[col(k) for k in keys], value.alias(x)).where(
        f"{quote(x)} IS NOT NULL AND NOT isnan({quote(x)})"
    )
    part = Window.partitionBy(*[col(k) for k in keys])
    ranked = scored.select(
        *[col(k) for k in keys],
        col(x),
        (F.row_number().over(part.orderBy(col(x))) - 1).alias(r),
        F.count(F.lit(1)).over(part).alias(m),
    )
    near = " OR ".join(f"{quote(r)} = (({quote(m)} - 1) * {j}) div {n_cells}" for j in range(1, n_cells))
    stats = ranked.where(near).collect()
    per: dict[tuple, tuple[int, dict[int, float]]] = {}
    for row in stats:
        key = tuple(row[: len(keys)])
        per.setdefault(key, (int(row[m]), {}))[1][int(row[r])] = float(row[x])
    width = n_cells - 1
    rows = []
    for key, (count, values) in per.items():
        edges = np.unique([values[int(i)] for i in edge_ranks(count, n_cells)]).tolist()
        rows.append((*key, *edges, *([None] * (width - len(edges)))))
    ek = fresh_names(
        list(df.columns) + [x, r, m], [f"__k{i}" for i in range(len(keys))] + [f"__e{j}" for j in range(width)]
    )
    fields = [T.StructField(a, df.schema[k].dataType, True) for k, a in zip(keys, ek, strict=False)]
    fields += [T.StructField(e, T.DoubleType(), True) for e in ek[len(keys) :]]
    edges_df = local_table(df.sparkSession, rows, fields) if rows else None
    qx = f"TRY_CAST({quote(c)} AS DOUBLE)"
    if edges_df is None:
        return df.withColumn(c, F.lit(None).cast("long"))
    cond = [col(k).eqNullSafe(edges_df[a]) for k, a in zip(keys, ek, strict=False)]
    joined = df.join(F.broadcast(edges_df), on=cond, how="left") if keys else df.crossJoin(edges_df)
    below = " + ".join(f"CASE WHEN {quote(e)} < {qx} THEN 1 ELSE 0 END" for e in ek[len(keys) :])
    cell = F.expr(f"CASE WHEN {qx} IS NULL OR isnan({qx}) THEN NULL ELSE CAST({below} AS BIGINT) END")
    return joined.withColumn(c, cell).select(*df.columns)


def _json_value(v: Any) -> bool:
    """Whether ``v`` round-trips exactly through JSON text into a Spark column."""
    if v is None or isinstance(v, (bool, int, str)):
        return True
    return isinstance(v, float) and math.isfinite(v)


def local_table(spark: Any, rows: list[tuple], fields: list) -> Any:
    """A small DataFrame of ``rows`` (plain Python values) built in the JVM.

    Up to :data:`_LITERAL_ROWS` rows of integers, strings, booleans and finite
    floats: one JSON text literal that ``from_json`` parses and ``inline``
    unpacks, a single call from Python, and broadcasting it runs no Python
    worker (``createDataFrame`` of a list is an RDD of pickled rows that a
    Python worker unpickles in every job that broadcasts it). Other tables (many
    cells, dates, decimals) use ``createDataFrame``.
    """
    import json

    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType(fields)
    simple = (
        T.BooleanType,
        T.ByteType,
        T.ShortType,
        T.IntegerType,
        T.LongType,
        T.FloatType,
        T.DoubleType,
        T.StringType,
    )
    if (
        not rows
        or len(rows) > _LITERAL_ROWS
        or not all(isinstance(f.dataType, simple) for f in fields)
        or not all(_json_value(v) for row in rows for v in row)
    ):
        return spark.createDataFrame(rows, schema=schema)
    text = json.dumps([dict(zip(schema.names, row, strict=True)) for row in rows])
    return spark.range(0, 1, 1, 1).select(F.inline(F.from_json(F.lit(text), T.ArrayType(schema))))


#: band half-widths in binomial standard deviations, one pass each; inf: every row of the key
_SLACKS = (5.0, 40.0, math.inf)


def _band(take: int, rows: int, slack: float) -> tuple[int, int]:
    """Rank bounds ``[lo, hi]`` that hold the ``take``-th smallest of ``rows`` uniform ranks w.h.p."""
    share = take / rows
    d = slack * math.sqrt(take * (1.0 - share)) + 20.0
    lo, hi = (take - d) / rows, (take + d) / rows
    return (0 if lo <= 0 else int(lo * _TWO63)), (_TWO63 - 1 if hi >= 1 else int(hi * _TWO63))
