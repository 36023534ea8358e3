"""The frames narwhals reads, built from a pandas frame: the engines the back-end tests run on."""

from __future__ import annotations

import pandas as pd
import pytest

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def _dask(df: pd.DataFrame):
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(df, npartitions=3)


ENGINES = {
    "polars": pl.from_pandas,
    "polars_lazy": lambda df: pl.from_pandas(df).lazy(),
    "pyarrow": lambda df: pa.Table.from_pandas(df, preserve_index=False),
    "dask": _dask,
}
