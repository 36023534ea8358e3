"""Apache Spark back end: counting and the dual-constraint split on a PySpark DataFrame.

Needs the optional extra ``spark`` (``pip install "bayeseval[spark]"``);
``pyspark`` is imported inside the functions only.

* :func:`tabulate` -- one ``groupBy`` with sums of conditional expressions
  (built from the :class:`~bayeseval.metrics.Metric` definition); only the
  small table of counts reaches the driver. The result is identical to
  :func:`bayeseval.tabulate` on the same rows in pandas.
* :func:`dual_constraint_split` -- the split of
  :func:`bayeseval.split.dual_constraint_split` with Spark DataFrames for
  ``train`` and ``test``. The keyed rank of every row is computed with Spark
  SQL integer arithmetic (64-bit products on 16-bit limbs, so nothing
  overflows in ANSI mode), so the
  test set is exactly the one pandas and DuckDB select: within each key the
  ``n`` rows with the smallest ``(rank, id)``. Spark finds it without
  collecting any class to the driver: a per-key rank threshold keeps a few
  more candidates than needed (a cheap filter), a window ``row_number`` over
  the candidates of each key finds the exact cut-off row, and the cut-offs
  (one row per key) are broadcast back to filter the data.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import iter_columns
from bayeseval._warnings import EmptyStratumWarning
from bayeseval.counts import Counts
from bayeseval.metrics import Metric, get_metric

__all__ = ["tabulate", "dual_constraint_split", "keyed_rank"]

_TWO64 = 1 << 64
_TWO63 = 1 << 63


def _pyspark() -> Any:
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
    except ImportError as exc:  # pragma: no cover - exercised only without pyspark
        raise ImportError(
            "bayeseval.spark needs pyspark; install the optional extra: pip install 'bayeseval[spark]'"
        ) from exc
    return F


def _check_dataframe(df: Any, columns: list[tuple[str, str]]) -> None:
    if type(df).__name__ != "DataFrame" or not type(df).__module__.startswith("pyspark"):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")
    available = list(df.columns)
    for name, col in columns:
        if col not in available:
            raise ValueError(f"{name} column {col!r} is not in df; columns are {available[:20]}")


def _mask(kind: str, truth: Any, pred: Any, positive: Any) -> Any:
    F = _pyspark()
    if kind == "all":
        return F.lit(True)
    if kind == "right":
        return truth == pred
    if kind == "wrong":
        return truth != pred
    lit = F.lit(positive.item() if isinstance(positive, np.generic) else positive)
    return {
        "true_pos": truth == lit,
        "true_neg": truth != lit,
        "pred_pos": pred == lit,
        "pred_neg": pred != lit,
    }[kind]


def _to_pandas(sdf: Any) -> pd.DataFrame:
    """Collect a small Spark result; string columns get pandas' default string dtype."""
    rows = sdf.collect()
    frame = pd.DataFrame([r.asDict() for r in rows], columns=sdf.columns)
    for c in frame.columns:
        if frame[c].dtype == object and len(frame) and pd.api.types.infer_dtype(frame[c]) == "string":
            frame[c] = frame[c].astype("str")
    return frame


def tabulate(
    df: Any,
    *,
    y_true: str,
    y_pred: str,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    pos_label: Any = None,
    weights: Mapping[Any, float] | pd.Series | None = None,
) -> Counts:
    """Count successes and trials per stratum of a Spark DataFrame.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        One row per example.
    y_true, y_pred, strata, metric, pos_label, weights
        As in :func:`bayeseval.tabulate`.

    Returns
    -------
    Counts
        Identical to :func:`bayeseval.tabulate` on the same rows in pandas.

    Examples
    --------
    >>> counts = tabulate(sdf, y_true="y", y_pred="p", strata="g", metric="recall")  # doctest: +SKIP
    """
    F = _pyspark()
    from bayeseval._duckdb import _from_confusion, _shape

    m = get_metric(metric)
    cols = iter_columns(strata, "strata")
    _check_dataframe(df, [("y_true", y_true), ("y_pred", y_pred)] + [("strata", c) for c in cols])
    t, p = F.col(y_true), F.col(y_pred)
    checks = [
        F.count(F.lit(1)).alias("__rows"),
        F.sum(F.when(t.isNull(), 1).otherwise(0)).cast("long").alias("__null_true"),
        F.sum(F.when(p.isNull(), 1).otherwise(0)).cast("long").alias("__null_pred"),
    ]
    confusion = m.needs_positive and pos_label is None
    if confusion:
        keys = cols + [y_true, y_pred]
        aggs = [F.count(F.lit(1)).cast("long").alias("__n")] + checks
    else:
        trial = _mask(m.trials, t, p, pos_label)
        success = trial & _mask(m.successes, t, p, pos_label)
        keys = list(cols)
        aggs = [
            F.sum(F.when(success, 1).otherwise(0)).cast("long").alias("successes"),
            F.sum(F.when(trial, 1).otherwise(0)).cast("long").alias("trials"),
        ] + checks
    grouped = df.groupBy(*keys).agg(*aggs) if keys else df.agg(*aggs)
    table = _to_pandas(grouped)
    if table.empty or int(table["__rows"].sum()) == 0:
        raise ValueError("df has no rows")
    if int(table["__null_true"].sum()) or int(table["__null_pred"].sum()):
        col = y_true if int(table["__null_true"].sum()) else y_pred
        raise ValueError(f"column {col!r} has missing labels; drop or fill them before tabulating")
    if confusion:
        frame = _from_confusion(table, cols, y_true, y_pred, m)
    else:
        frame = _shape(table, cols)
    counts = Counts(frame["successes"], frame["trials"], metric=m.name, weights=weights)
    if len(counts.empty):
        warnings.warn(
            f"{len(counts.empty)} strata have no trials for {m.name} and no rate: "
            f"{list(counts.empty[:5])}",
            EmptyStratumWarning,
            stacklevel=2,
        )
    return counts


# ---------------------------------------------------------------------------
# The keyed rank in Spark SQL
# ---------------------------------------------------------------------------


def _mul_sql(c: int) -> str:
    """Spark SQL for ``z * c mod 2**64`` on a BIGINT ``z`` holding 64 bits (two's complement).

    Schoolbook multiplication on 16-bit limbs: every partial product and sum stays
    below 2**36, so nothing overflows (Spark's ANSI mode raises on BIGINT overflow),
    and the two 32-bit halves of the result are joined with a shift and a bitwise OR.
    """
    cl = [(c >> (16 * j)) & 0xFFFF for j in range(4)]
    a = ["(z & 65535)"] + [f"(shiftrightunsigned(z, {16 * i}) & 65535)" for i in (1, 2, 3)]

    def col(k: int) -> str:
        return " + ".join(f"{a[i]} * {cl[k - i]}" for i in range(k + 1))

    s0, s1, s2, s3 = (f"({col(k)})" for k in range(4))
    low = f"({s0} + shiftleft({s1} & 65535, 16))"
    high = f"((shiftright({s1}, 16) + {s2} + shiftleft({s3} & 65535, 16) + shiftright({low}, 32)) & 4294967295)"
    return f"(shiftleft({high}, 32) | ({low} & 4294967295))"


def _mix_sql_steps() -> list[str]:
    from bayeseval.split import _C1, _C2

    return [
        "z ^ shiftrightunsigned(z, 30)",
        _mul_sql(_C1),
        "z ^ shiftrightunsigned(z, 27)",
        _mul_sql(_C2),
        "z ^ shiftrightunsigned(z, 31)",
    ]


def keyed_rank_sql(id_expr: str, salt_expr: str) -> str:
    """Spark SQL for the keyed rank ``mix64(mix64(id) ^ salt) >> 1``.

    Every step is a lambda over the previous value (``transform(array(prev),
    z -> step)[0]``), so the expression grows linearly with the number of steps
    even though each step uses its input several times.
    """
    steps = _mix_sql_steps() + [f"z ^ {salt_expr}"] + _mix_sql_steps() + ["shiftrightunsigned(z, 1)"]
    expr = f"CAST({id_expr} AS BIGINT)"
    for step in steps:
        expr = f"transform(array({expr}), z -> {step})[0]"
    return expr


def keyed_rank(df: Any, *, id_column: str, salt_column: str, out: str = "__rank") -> Any:
    """Add column ``out``: the keyed rank ``mix64(mix64(id) ^ salt) >> 1`` of each row.

    ``id_column`` holds integers, ``salt_column`` the key salt as a signed
    64-bit integer (same bits as :func:`bayeseval.split.key_salt`).
    """
    F = _pyspark()

    def q(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    return df.withColumn(out, F.expr(keyed_rank_sql(q(id_column), q(salt_column))))


def _signed(u: int) -> int:
    u = int(u)
    return u - _TWO64 if u >= _TWO63 else u


def dual_constraint_split(
    df: Any,
    *,
    label: str,
    id_column: str,
    test_size: float | int = 0.2,
    n_min: int | Mapping[Any, int] | None = None,
    groups: str | Sequence[str] | None = None,
    max_test_share: float = 0.3,
    max_inflate: float = 5.0,
    merge_below: int | None = None,
    halfwidth: float | None = None,
    rate: float | None = None,
    on_infeasible: str = "raise",
    random_seed: int = 0,
    check_ids: bool = True,
) -> Any:
    """The dual-constraint split of a Spark DataFrame.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        One row per example.
    label, test_size, n_min, groups, max_test_share, max_inflate, merge_below, halfwidth, rate, on_infeasible, random_seed
        As in :func:`bayeseval.split.dual_constraint_split`.
    id_column : str
        Column of unique integer row ids (a Spark DataFrame has no index).
    check_ids : bool, default True
        Check that ids are unique and not null (one distinct count over the data).

    Returns
    -------
    bayeseval.split.SplitResult
        ``train`` and ``test`` are Spark DataFrames with the columns of ``df``;
        ``test_weights`` is a Spark DataFrame with ``id_column`` and ``weight``.
        The test ids equal those of the pandas split of the same rows.

    Examples
    --------
    >>> res = dual_constraint_split(sdf, label="y", id_column="id", n_min=323)  # doctest: +SKIP
    >>> res.test.count()  # doctest: +SKIP
    """
    F = _pyspark()
    from pyspark.sql import Window
    from pyspark.sql import types as T

    from bayeseval.split import (
        _check_options,
        _check_seed,
        _emit_warnings,
        _plan,
        _split_result,
    )

    max_test_share, max_inflate, merge_below, on_infeasible = _check_options(
        max_test_share, max_inflate, merge_below, on_infeasible
    )
    seed = _check_seed(random_seed)
    gcols = iter_columns(groups, "groups")
    cols = [label] + gcols
    _check_dataframe(df, [("label", label), ("id_column", id_column)] + [("groups", g) for g in gcols])
    id_type = df.schema[id_column].dataType
    if not isinstance(id_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        raise TypeError(f"id_column {id_column!r} must hold integers for the Spark engine, got {id_type.simpleString()}")

    stats = _to_pandas(
        df.groupBy(*cols).agg(
            F.count(F.lit(1)).cast("long").alias("rows"),
            F.sum(F.when(F.col(id_column).isNull(), 1).otherwise(0)).cast("long").alias("null_ids"),
        )
    )
    for c in cols:
        if stats[c].isna().any():
            raise ValueError(f"column {c!r} has missing values; drop or fill them before splitting")
    if int(stats["null_ids"].sum()):
        raise ValueError(f"id_column {id_column!r} has missing ids")
    n_rows = int(stats["rows"].sum())
    if check_ids:
        n_ids = df.agg(F.countDistinct(F.col(id_column)).alias("n")).collect()[0]["n"]
        if n_ids != n_rows:
            raise ValueError(f"id_column {id_column!r} must hold unique row ids ({n_ids} distinct in {n_rows} rows)")
    plan = _plan(
        stats[cols + ["rows"]].copy(), label=label, groups=gcols, test_size=test_size, n_min=n_min,
        max_test_share=max_test_share, max_inflate=max_inflate, merge_below=merge_below,
        halfwidth=halfwidth, rate=rate, on_infeasible=on_infeasible, random_seed=seed,
    )
    _emit_warnings(plan, stacklevel=2)

    take = plan.table["test"].to_numpy(np.int64)
    rows_k = plan.table["rows"].to_numpy(np.int64)
    weight = plan.table["weight"].to_numpy(float)
    max_rank = _TWO63 - 1

    def threshold(k: int, slack: float) -> int:
        n, total = int(take[k]), int(rows_k[k])
        if n == 0:
            return -1
        frac = (n + slack * math.sqrt(n) + 20.0) / total
        return max_rank if frac >= 1 else int(frac * _TWO63)

    thr = {k: threshold(k, 6.0) for k in range(len(plan.keys))}
    spark = df.sparkSession
    schema = T.StructType(
        [df.schema[c] for c in cols]
        + [T.StructField("__key", T.LongType()), T.StructField("__salt", T.LongType())]
    )
    cell_rows = [
        tuple(v.item() if isinstance(v, np.generic) else v for v in row[:-1])
        + (int(row[-1]), _signed(plan.salts[int(row[-1])]))
        for row in plan.cells[cols + ["key"]].itertuples(index=False, name=None)
    ]
    cells_sdf = spark.createDataFrame(cell_rows, schema=schema)
    base = keyed_rank(df.join(F.broadcast(cells_sdf), on=cols, how="inner"), id_column=id_column,
                      salt_column="__salt")

    # candidates under a per-key rank threshold (a few more rows than needed); the exact
    # cut-off of each key is the n-th candidate in (rank, id) order. A key whose threshold
    # kept fewer than n candidates (improbable) is redone with every row as a candidate.
    window = Window.partitionBy("__key").orderBy(F.col("__rank"), F.col(id_column).cast("long"))
    need = {k: int(take[k]) for k in thr}
    cuts: list = []
    todo = [k for k in thr if need[k] > 0]
    for _ in range(2):
        if not todo:
            break
        params = spark.createDataFrame(
            [(int(k), int(thr[k]), need[k]) for k in todo],
            schema=T.StructType(
                [
                    T.StructField("__key", T.LongType()),
                    T.StructField("__thr", T.LongType()),
                    T.StructField("__n", T.LongType()),
                ]
            ),
        )
        found = (
            base.join(F.broadcast(params), on="__key")
            .filter(F.col("__rank") <= F.col("__thr"))
            .withColumn("__rn", F.row_number().over(window))
            .filter(F.col("__rn") == F.col("__n"))
            .select("__key", "__rank", F.col(id_column).cast("long").alias("__cut_id"))
            .collect()
        )
        cuts.extend(found)
        done = {int(r["__key"]) for r in found}
        todo = [k for k in todo if k not in done]
        for k in todo:
            thr[k] = max_rank
    if todo:  # pragma: no cover - the second pass takes every row of the short keys
        raise RuntimeError(f"could not find the cut-off rows of keys {todo}; this is a bug")
    cut_rank = {k: -1 for k in thr}
    cut_id = {k: -(1 << 63) for k in thr}
    for r in cuts:
        cut_rank[int(r["__key"])] = int(r["__rank"])
        cut_id[int(r["__key"])] = int(r["__cut_id"])
    cut_sdf = spark.createDataFrame(
        [(k, cut_rank[k], cut_id[k], float(weight[k]) if np.isfinite(weight[k]) else None) for k in thr],
        schema=T.StructType(
            [
                T.StructField("__key", T.LongType()),
                T.StructField("__cut_rank", T.LongType()),
                T.StructField("__cut_id", T.LongType()),
                T.StructField("__w", T.DoubleType()),
            ]
        ),
    )
    marked = base.join(F.broadcast(cut_sdf), on="__key").withColumn(
        "__test",
        (F.col("__rank") < F.col("__cut_rank"))
        | ((F.col("__rank") == F.col("__cut_rank")) & (F.col(id_column).cast("long") <= F.col("__cut_id"))),
    )
    out_cols = list(df.columns)
    test = marked.filter(F.col("__test")).select(*out_cols)
    train = marked.filter(~F.col("__test")).select(*out_cols)
    test_weights = marked.filter(F.col("__test")).select(id_column, F.col("__w").alias("weight"))
    return _split_result(
        plan,
        train=train,
        test=test,
        test_weights=test_weights,
        random_seed=seed,
        engine="spark",
    )
