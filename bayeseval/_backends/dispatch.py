"""Dispatch on the data's type: the row back end (pandas, DuckDB or Spark) for ``data``.

The three back ends import :mod:`bayeseval._backends.interface` for the interface; this module
imports them, so the dependency runs one way. DuckDB and PySpark themselves are imported
inside the back ends' functions only.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayeseval._backends.duckdb_backend import DuckDBBackend
from bayeseval._backends.interface import ACCEPTED, Backend, is_duckdb_source, is_spark_dataframe
from bayeseval._backends.pandas_backend import PandasBackend
from bayeseval._backends.spark_backend import SparkBackend

__all__ = ["backend_for"]


def backend_for(data: Any) -> Backend:
    """Return the back end for ``data``.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or Spark DataFrame
        The rows: a frame in memory, a Parquet/CSV path or glob, a DuckDB relation or a
        PySpark DataFrame.

    Returns
    -------
    Backend
        The pandas, DuckDB or Spark back end wrapping ``data``.

    Raises
    ------
    TypeError
        ``data`` is none of the accepted types (the message names its type).

    Examples
    --------
    >>> import pandas as pd
    >>> backend_for(pd.DataFrame({"y": [1]})).engine
    'pandas'
    """
    if isinstance(data, pd.DataFrame):
        return PandasBackend(data)
    if is_duckdb_source(data):
        return DuckDBBackend(data)
    if is_spark_dataframe(data):
        return SparkBackend(data)
    raise TypeError(f"data must be {ACCEPTED}, got {type(data).__name__}")
