"""The Spark back end: a PySpark DataFrame counted with ``groupBy``; the split without collecting rows.

Column references are backtick-quoted (dotted names, spaces and quotes work),
and every column the back end adds is named so that it is absent from the
input (Spark compares names case-insensitively by default). The keyed rank is
Spark SQL integer arithmetic (:func:`bayeseval._core.hashing.spark_rank_sql`), so
the test set is exactly the one pandas and DuckDB select: within each key the
``n`` rows with the smallest ``(rank, id)``. A per-key rank threshold keeps a few
more candidates than needed, a window ``row_number`` over the candidates finds
the exact cut-off row, and the cut-offs (one row per key) are broadcast back.
``pyspark`` is imported inside the functions only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._core.backends import (
    Backend,
    ConfusionTable,
    confusion_from_frame,
    string_columns_as_str,
)
from bayeseval._core.hashing import signed64, spark_rank_sql
from bayeseval._core.naming import fresh_names

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
    """Add column ``out``: the keyed rank ``mix64(mix64(id) ^ salt) >> 1`` of each row."""
    from pyspark.sql import functions as F

    return df.withColumn(out, F.expr(spark_rank_sql(quote(id_column), quote(salt_column))))


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
            n_ids = self.data.agg(F.countDistinct(col(id_column)).alias("n")).collect()[0][0]
            if n_ids != n_rows:
                raise ValueError(
                    f"id_column {id_column!r} must hold unique row ids ({n_ids} distinct in {n_rows} rows)"
                )
        return stats.drop(columns="null").astype({"rows": np.int64})

    def select_test(
        self, cells: pd.DataFrame, *, cols: list[str], id_column: str | None, salts: np.ndarray,
        take: np.ndarray, weight: np.ndarray,
    ) -> tuple[Any, Any, Any]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        df = self.data
        spark = df.sparkSession
        self._rows_per_key = (
            cells.groupby("key")["rows"].sum().reindex(range(len(take)), fill_value=0).to_numpy(np.int64)
        )
        names = fresh_names(
            list(df.columns) + ["z"],
            [f"__c{i}" for i in range(len(cols))]
            + ["__key", "__salt", "__rank", "__thr", "__n", "__rn", "__cut_rank", "__cut_id", "__w", "__test"],
        )
        cnames = names[: len(cols)]
        key, salt, rank, thr_c, n_c, rn, cut_rank_c, cut_id_c, w_c, test_c = names[len(cols):]
        long = T.LongType()
        schema = T.StructType(
            [T.StructField(c, self._type(orig)) for c, orig in zip(cnames, cols, strict=True)]
            + [T.StructField(key, long), T.StructField(salt, long)]
        )
        cell_rows = [
            tuple(_python(v) for v in row[:-1]) + (int(row[-1]), signed64(salts[int(row[-1])]))
            for row in cells[list(range(len(cols))) + ["key"]].itertuples(index=False, name=None)
        ]
        cells_sdf = spark.createDataFrame(cell_rows, schema=schema)
        with_keys = df.withColumns({c: col(orig) for c, orig in zip(cnames, cols, strict=True)})
        base = keyed_rank(with_keys.join(F.broadcast(cells_sdf), on=cnames, how="inner"),
                          id_column=id_column, salt_column=salt, out=rank)
        cut_rank, cut_id = self._cut_offs(base, take, id_column=id_column, names=(key, rank, thr_c, n_c, rn, cut_id_c))
        n_keys = len(take)
        cut_sdf = spark.createDataFrame(
            [(k, cut_rank[k], cut_id[k], float(weight[k]) if np.isfinite(weight[k]) else None) for k in range(n_keys)],
            schema=T.StructType([T.StructField(key, long), T.StructField(cut_rank_c, long),
                                 T.StructField(cut_id_c, long), T.StructField(w_c, T.DoubleType())]),
        )
        idl = col(id_column).cast("long")
        marked = base.join(F.broadcast(cut_sdf), on=key).withColumn(
            test_c,
            (col(rank) < col(cut_rank_c)) | ((col(rank) == col(cut_rank_c)) & (idl <= col(cut_id_c))),
        )
        out_cols = [col(c) for c in df.columns]
        test = marked.filter(col(test_c)).select(*out_cols)
        train = marked.filter(~col(test_c)).select(*out_cols)
        weight_name = fresh_names([id_column], ["weight"])[0]
        test_weights = marked.filter(col(test_c)).select(col(id_column), col(w_c).alias(weight_name))
        return train, test, test_weights

    def _cut_offs(self, base: Any, take: np.ndarray, *, id_column: str, names: tuple) -> tuple[dict, dict]:
        """Per key, the (rank, id) of its ``take``-th row: candidates under a rank threshold first."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        key, rank, thr_c, n_c, rn, cut_id_c = names
        spark = base.sparkSession
        rows_k = self._rows_per_key
        max_rank = _TWO63 - 1

        def threshold(k: int, slack: float = 6.0) -> int:
            n, total = int(take[k]), int(rows_k[k])
            frac = (n + slack * math.sqrt(n) + 20.0) / total
            return max_rank if frac >= 1 else int(frac * _TWO63)

        window = Window.partitionBy(key).orderBy(col(rank), col(id_column).cast("long"))
        todo = [k for k in range(len(take)) if take[k] > 0]
        thr = {k: threshold(k) for k in todo}
        found_rows: list = []
        long = T.LongType()
        for _ in range(2):
            if not todo:
                break
            params = spark.createDataFrame(
                [(int(k), int(thr[k]), int(take[k])) for k in todo],
                schema=T.StructType([T.StructField(key, long), T.StructField(thr_c, long), T.StructField(n_c, long)]),
            )
            found = (
                base.join(F.broadcast(params), on=key)
                .filter(col(rank) <= col(thr_c))
                .withColumn(rn, F.row_number().over(window))
                .filter(col(rn) == col(n_c))
                .select(col(key), col(rank), col(id_column).cast("long").alias(cut_id_c))
                .collect()
            )
            found_rows.extend(found)
            done = {int(r[0]) for r in found}
            todo = [k for k in todo if k not in done]
            thr = {k: max_rank for k in todo}
        if todo:  # pragma: no cover - the second pass takes every row of the short keys
            raise RuntimeError(f"could not find the cut-off rows of keys {todo}; this is a bug")
        cut_rank = {k: -1 for k in range(len(take))}
        cut_id = {k: -(1 << 63) for k in range(len(take))}
        for r in found_rows:
            cut_rank[int(r[0])] = int(r[1])
            cut_id[int(r[0])] = int(r[2])
        return cut_rank, cut_id
