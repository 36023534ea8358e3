"""Apache Spark entry points: counting and the dual-constraint split on a PySpark DataFrame.

Needs the optional extra ``spark`` (``pip install "bayeseval[spark]"``);
``pyspark`` is imported inside the functions only. :func:`bayeseval.tabulate`
and :func:`bayeseval.plan.split.dual_constraint_split` accept a Spark DataFrame
directly; the functions here are the same with a ``df`` argument that must be
one.

* :func:`tabulate` -- one ``groupBy`` over the strata and the two label
  columns (the confusion table by strata); only that small table reaches the
  driver, and the same rules as for pandas turn it into Counts, so the result
  is identical to :func:`bayeseval.tabulate` on the same rows in pandas.
* :func:`dual_constraint_split` -- the split with Spark DataFrames for
  ``train`` and ``test``. The keyed rank of every row is computed with Spark
  SQL integer arithmetic (64-bit products from 32-bit halves and 16-bit limbs,
  so nothing overflows in ANSI mode), one projection per step so that
  whole-stage code generation compiles it (no UDF, no Python per row); the
  test set is exactly the one pandas and DuckDB select, without collecting
  any class to the driver (cost per row against :func:`keyed_rank_sql`:
  docs/validation.md, section 12f).
* :func:`keyed_rank_sql` -- the same rank as one SQL expression (nested
  ``transform`` lambdas, for SQL text); Spark evaluates those lambdas without
  code generation, so prefer :func:`keyed_rank` on a DataFrame.

Column names are taken literally (dots, spaces and quotes work), and the
columns the engine adds internally are named so that they cannot collide with
the input's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from bayeseval._backends.hashing import spark_rank_sql as keyed_rank_sql
from bayeseval._backends.interface import is_spark_dataframe
from bayeseval._backends.spark_backend import keyed_rank as _keyed_rank
from bayeseval.counts.counts import Counts
from bayeseval.counts.counts import tabulate as _tabulate
from bayeseval.counts.metrics import Metric
from bayeseval.plan.split import SplitResult
from bayeseval.plan.split import dual_constraint_split as _split

__all__ = ["tabulate", "dual_constraint_split", "keyed_rank", "keyed_rank_sql"]


def _check_dataframe(df: Any) -> None:
    if not is_spark_dataframe(df):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")


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
    _check_dataframe(df)
    return _tabulate(
        df, y_true=y_true, y_pred=y_pred, strata=strata, metric=metric, pos_label=pos_label, weights=weights
    )


def keyed_rank(df: Any, *, id_column: str, salt_column: str, out: str = "__rank") -> Any:
    """Add column ``out``: the keyed rank ``mix64(mix64(id) ^ salt) >> 1`` of each row.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows.
    id_column : str
        Column of integer row ids.
    salt_column : str
        Column holding the key salt as a signed 64-bit integer (same bits as
        :func:`bayeseval.plan.split.key_salt`).
    out : str, default "__rank"
        Name of the added column.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df`` with the column ``out`` added (BIGINT, non-negative).

    Examples
    --------
    >>> ranked = keyed_rank(sdf, id_column="id", salt_column="salt")  # doctest: +SKIP
    """
    _check_dataframe(df)
    return _keyed_rank(df, id_column=id_column, salt_column=salt_column, out=out)


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
) -> SplitResult:
    """The dual-constraint split of a Spark DataFrame.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        One row per example.
    label, test_size, n_min, groups, max_test_share, max_inflate, merge_below, halfwidth, rate, on_infeasible, random_seed
        As in :func:`bayeseval.plan.split.dual_constraint_split`.
    id_column : str
        Column of unique integer row ids (a Spark DataFrame has no index).
    check_ids : bool, default True
        Check that ids are unique (one distinct count over the data).

    Returns
    -------
    bayeseval.plan.split.SplitResult
        ``train`` and ``test`` are Spark DataFrames with the columns of ``df``;
        ``test_weights`` is a Spark DataFrame with ``id_column`` and ``weight``.
        The test ids equal those of the pandas split of the same rows.

    Examples
    --------
    >>> res = dual_constraint_split(sdf, label="y", id_column="id", n_min=323)  # doctest: +SKIP
    >>> res.test.count()  # doctest: +SKIP
    """
    _check_dataframe(df)
    return _split(
        df,
        label=label,
        id_column=id_column,
        test_size=test_size,
        n_min=n_min,
        groups=groups,
        max_test_share=max_test_share,
        max_inflate=max_inflate,
        merge_below=merge_below,
        halfwidth=halfwidth,
        rate=rate,
        on_infeasible=on_infeasible,
        random_seed=random_seed,
        check_ids=check_ids,
    )
