"""Tests of ``bayeseval.spark`` that need no Spark (the Spark ones are in tests/backends)."""

from __future__ import annotations

import pandas as pd
import pytest

from bayeseval.spark import keyed_rank


def test_keyed_rank_refuses_a_frame_that_is_not_spark_naming_df():
    frame = pd.DataFrame({"id": [1, 2], "salt": [3, 3]})
    with pytest.raises(TypeError, match=r"^df must be a pyspark.sql.DataFrame, got DataFrame$"):
        keyed_rank(frame, id_column="id", salt_column="salt")
