"""Apache Spark helpers: the keyed rank of the dual-constraint split on a PySpark DataFrame.

Needs the optional extra ``spark`` (``pip install "bayeseval[spark]"``); ``pyspark`` is
imported inside the functions only. Counting and splitting a Spark DataFrame need nothing
from here: :func:`bayeseval.tabulate` (one ``groupBy`` over the strata and the two label
columns; only that small table reaches the driver, and the result is identical to the pandas
one) and :func:`bayeseval.plan.split.dual_constraint_split` (with ``id_column``; the test set
is exactly the one pandas and DuckDB select, without collecting any class to the driver)
take a Spark DataFrame as they take a pandas one.

* :func:`keyed_rank` -- the keyed rank the split computes, as a column of a Spark
  DataFrame: Spark SQL integer arithmetic (64-bit products from 32-bit halves and 16-bit
  limbs, so nothing overflows in ANSI mode), one projection per step so that whole-stage
  code generation compiles it (no UDF, no Python per row; cost per row against
  :func:`keyed_rank_sql`: docs/validation.md, section 12f).
* :func:`keyed_rank_sql` -- the same rank as one SQL expression (nested ``transform``
  lambdas, for SQL text); Spark evaluates those lambdas without code generation, so prefer
  :func:`keyed_rank` on a DataFrame.

Column names are taken literally (dots, spaces and quotes work).
"""

from __future__ import annotations

from typing import Any

from bayeseval._backends.hashing import spark_rank_sql as keyed_rank_sql
from bayeseval._backends.interface import is_spark_dataframe
from bayeseval._backends.spark_backend import keyed_rank as _keyed_rank

__all__ = ["keyed_rank", "keyed_rank_sql"]


def _check_dataframe(df: Any) -> None:
    if not is_spark_dataframe(df):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")


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
