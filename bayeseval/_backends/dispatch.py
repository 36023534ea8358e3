"""Dispatch on the data's type: the row back end (pandas, DuckDB, Spark or narwhals) for ``data``.

pandas frames, DuckDB sources and Spark DataFrames keep their own tuned back ends (measured in
docs/architecture.md); every other frame narwhals reads (polars eager and lazy, pyarrow, Dask,
Ibis, Modin...) goes to the narwhals back end, counted by its own engine. The back ends import
:mod:`bayeseval._backends.interface` for the interface; this module imports them, so the
dependency runs one way. DuckDB, PySpark and narwhals are imported inside the back ends'
functions only.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayeseval._backends.duckdb_backend import DuckDBBackend
from bayeseval._backends.interface import ACCEPTED, Backend, is_duckdb_source, is_spark_dataframe
from bayeseval._backends.narwhals_backend import NarwhalsBackend, as_narwhals
from bayeseval._backends.pandas_backend import PandasBackend
from bayeseval._backends.spark_backend import SparkBackend

__all__ = ["backend_for"]


def backend_for(data: Any) -> Backend:
    """Return the back end for ``data``.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation, Spark DataFrame or any frame narwhals reads
        The rows: a frame in memory, a Parquet/CSV path or glob, a DuckDB relation, a
        PySpark DataFrame, or a polars (eager or lazy), pyarrow, Dask, Ibis, Modin... frame.

    Returns
    -------
    Backend
        The pandas, DuckDB, Spark or narwhals back end wrapping ``data``.

    Raises
    ------
    TypeError
        ``data`` is none of the accepted types (the message names its type).

    Examples
    --------
    >>> import pandas as pd
    >>> backend_for(pd.DataFrame({"y": [1]})).engine
    'pandas'
    >>> import pyarrow as pa
    >>> backend_for(pa.table({"y": [1]})).engine
    'narwhals'
    """
    if isinstance(data, pd.DataFrame):
        return PandasBackend(data)
    if is_duckdb_source(data):
        return DuckDBBackend(data)
    if is_spark_dataframe(data):
        return SparkBackend(data)
    if as_narwhals(data) is not None:
        return NarwhalsBackend(data)
    raise TypeError(f"data must be {ACCEPTED}, got {type(data).__name__}")
