"""Spark back end: tabulate and the dual-constraint split equal the pandas results.

One local-mode SparkSession for the module (master local[1], no UI, one shuffle
partition); small data, few Spark actions, to keep the module well under a minute
on an idle machine.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import tabulate
from bayeseval.plan.split import dual_constraint_split, key_salt, row_rank

pyspark = pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    n = 3000
    return pd.DataFrame(
        {
            # large, negative and scattered ids exercise the 64-bit arithmetic
            "id": rng.permutation(n).astype(np.int64) * 3_000_000_019 - 4 * 10**12,
            "y": (rng.random(n) < 0.04).astype(np.int64),
            "p": rng.integers(0, 2, n).astype(np.int64),
            "g": rng.choice(["east", "west", "north"], n, p=[0.5, 0.45, 0.05]),
        }
    )


@pytest.fixture(scope="module")
def sdf(spark, frame):
    rows = [tuple(r) for r in frame.itertuples(index=False, name=None)]
    return spark.createDataFrame(rows, schema="id long, y long, p long, g string").cache()


def test_keyed_rank_matches_numpy(spark, sdf, frame):
    from pyspark.sql import functions as F

    from bayeseval._backends.hashing import signed64 as _signed
    from bayeseval.spark import keyed_rank

    salt = key_salt((1, "east"), random_seed=9)
    got = (
        keyed_rank(sdf.withColumn("__salt", F.lit(_signed(salt))), id_column="id", salt_column="__salt")
        .select("id", "__rank")
        .collect()
    )
    ids = np.array([r["id"] for r in got], dtype=np.int64)
    np.testing.assert_array_equal(np.array([r["__rank"] for r in got]), row_rank(ids, salt))


@pytest.mark.parametrize(
    "kw",
    [
        {"metric": "recall", "strata": "g"},
        {"metric": "error_rate", "strata": ["g", "y"]},
        {"metric": "precision", "pos_label": 0},
    ],
)
def test_tabulate_equals_pandas(sdf, frame, kw):
    from bayeseval.spark import tabulate as spark_tabulate

    expected = tabulate(frame, y_true="y", y_pred="p", **kw)
    got = spark_tabulate(sdf, y_true="y", y_pred="p", **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())


def test_split_test_ids_equal_pandas(sdf, frame):
    from bayeseval.spark import dual_constraint_split as spark_split

    kw = dict(label="y", id_column="id", groups="g", n_min=8, test_size=0.2, merge_below=40,
              on_infeasible="degrade")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(frame, **kw)
        got = spark_split(sdf, **kw)
    assert got.engine == "spark"
    pd.testing.assert_frame_equal(got.table, expected.table)
    test_ids = sorted(r["id"] for r in got.test.select("id").collect())
    assert test_ids == sorted(expected.test["id"])
    assert got.train.count() == len(frame) - len(test_ids)
    weights = {r["id"]: r["weight"] for r in got.test_weights.collect()}
    w_pd = dict(zip(expected.test["id"], expected.test_weights, strict=True))
    assert weights.keys() == w_pd.keys()
    np.testing.assert_allclose([weights[k] for k in w_pd], list(w_pd.values()))


def test_split_errors(sdf):
    from bayeseval.spark import dual_constraint_split as spark_split

    with pytest.raises(TypeError, match="must hold integers"):
        spark_split(sdf, label="y", id_column="g")
    with pytest.raises(TypeError, match="pyspark.sql.DataFrame"):
        spark_split(pd.DataFrame({"y": [0, 1]}), label="y", id_column="y")


def test_internal_and_dotted_names_give_pandas_results(spark):
    # user columns named like the engine's internals, with dots, spaces and quotes
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({
        "__key": rng.permutation(n).astype(np.int64) * 13 - 900,   # the id column
        "a.b": (rng.random(n) < 0.1).astype(np.int64),              # the label
        "z": rng.choice(["u", "v"], n),                              # the group
        "__rank": rng.integers(0, 2, n).astype(np.int64),            # the prediction
        "__test": rng.integers(0, 3, n).astype(np.int64),
        "w s'": rng.integers(0, 3, n).astype(np.int64),
        "__cut_rank": rng.integers(0, 3, n).astype(np.int64),
    })
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(c, T.StringType() if c == "z" else T.LongType()) for c in frame.columns])
    sdf = spark.createDataFrame([tuple(r) for r in frame.itertuples(index=False, name=None)], schema=schema)
    kw = dict(label="a.b", groups="z", id_column="__key", n_min=10, on_infeasible="degrade")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(frame, **kw)
        got = dual_constraint_split(sdf, **kw)
    test = pd.DataFrame([tuple(r) for r in got.test.collect()], columns=got.test.columns)
    test = test.astype({c: frame[c].dtype for c in frame.columns})
    assert list(test.columns) == list(frame.columns)  # nothing renamed or overwritten
    assert sorted(test["__key"]) == sorted(expected.test["__key"])
    pd.testing.assert_frame_equal(
        test.sort_values("__key").reset_index(drop=True),
        expected.test.sort_values("__key").reset_index(drop=True),
    )
    # counts: a hand-computed reference of recall per (z, __test)
    truth, pred = frame["a.b"].to_numpy(), frame["__rank"].to_numpy()
    ref = pd.DataFrame({"s": ((truth == 1) & (pred == 1)).astype(int), "t": (truth == 1).astype(int)}).groupby(
        [frame["z"], frame["__test"]]).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = tabulate(sdf, y_true="a.b", y_pred="__rank", strata=["z", "__test"], metric="recall")
    assert counts.successes.tolist() == ref["s"].tolist() and counts.trials.tolist() == ref["t"].tolist()
    assert list(counts.strata.names) == ["z", "__test"]


def test_missing_and_mixed_labels_refused_like_pandas(spark):
    nan_rows = spark.createDataFrame([(1.0, 1, "a"), (float("nan"), 0, "a"), (None, 1, "b"), (0.0, 0, "b")],
                                     "y double, p long, g string")
    with pytest.raises(ValueError, match=r"y_true column 'y' has missing labels in 2 rows"):
        tabulate(nan_rows, y_true="y", y_pred="p", strata="g")
    mixed = spark.createDataFrame([(1, "1", "a"), (0, "0", None)], "y long, p string, g string")
    with pytest.raises(ValueError, match=r"y_true column 'y' \(dtype bigint\).*y_pred column 'p' \(dtype string\)"):
        tabulate(mixed, y_true="y", y_pred="p")
    with pytest.raises(ValueError, match=r"strata column 'g' has missing values in 1 row\b"):
        tabulate(mixed, y_true="y", y_pred="y", strata="g")
    yes_no = spark.createDataFrame([("yes", "yes"), ("yes", "no"), ("no", "no")], "y string, p string")
    with pytest.raises(ValueError, match=r"metric 'recall' needs pos_label"):
        tabulate(yes_no, y_true="y", y_pred="p", metric="recall")
    got = tabulate(yes_no, y_true="y", y_pred="p", metric="recall", pos_label="yes")
    assert (got.total_successes, got.total_trials) == (1, 2)  # by hand: 1 of 2 true "yes" found
