"""Spark plan checks: the split runs as native, code-generated Spark SQL with pandas' test ids.

The references are independent of the Spark code under test: the numpy keyed
hash (``bayeseval.plan.split.row_rank``), the pandas engine's split, and the names of
Spark's Python-evaluation plan nodes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design, tabulate
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


#: plan nodes that evaluate Python code row by row
PYTHON_NODES = (
    "PythonUDF",
    "BatchEvalPython",
    "ArrowEvalPython",
    "PythonMapInArrow",
    "MapInPandas",
    "FlatMapGroupsInPandas",
)


@pytest.fixture(scope="module")
def frame_spark_speed_plan() -> pd.DataFrame:
    rng = np.random.default_rng(16)
    n = 4000
    return pd.DataFrame(
        {
            "id": rng.permutation(n).astype(np.int64) * 7_000_000_001 - 10**13,
            "y": (rng.random(n) < 0.05).astype(np.int64),
            "g": rng.choice(["a", "b", "c", "d"], n),
        }
    )


@pytest.fixture(scope="module")
def sdf_spark_speed_plan(spark, frame_spark_speed_plan):
    rows = [tuple(r) for r in frame_spark_speed_plan.itertuples(index=False, name=None)]
    return spark.createDataFrame(rows, schema="id long, y long, g string").cache()


def split_both(sdf_spark_speed_plan, frame_spark_speed_plan, **kw):
    """The split of the Spark frame and of the same rows in pandas (warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dual_constraint_split(sdf_spark_speed_plan, **kw), dual_constraint_split(frame_spark_speed_plan, **kw)


def formatted_plan(sdf_spark_speed_plan) -> str:
    return (
        sdf_spark_speed_plan._jdf.queryExecution().executedPlan().toString()
        + sdf_spark_speed_plan._jdf.queryExecution().optimizedPlan().toString()
    )


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
    expected = tabulate(frame, y_true="y", y_pred="p", **kw)
    got = tabulate(sdf, y_true="y", y_pred="p", **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())


def test_split_test_ids_equal_pandas(sdf, frame):
    kw = dict(label="y", id_column="id", groups="g", n_min=8, test_size=0.2, merge_below=40, on_infeasible="degrade")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(frame, **kw)
        got = dual_constraint_split(sdf, **kw)
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
    with pytest.raises(TypeError, match="must hold integers"):
        dual_constraint_split(sdf, label="y", id_column="g")


def test_internal_and_dotted_names_give_pandas_results(spark):
    # user columns named like the engine's internals, with dots, spaces and quotes
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame(
        {
            "__key": rng.permutation(n).astype(np.int64) * 13 - 900,  # the id column
            "a.b": (rng.random(n) < 0.1).astype(np.int64),  # the label
            "z": rng.choice(["u", "v"], n),  # the group
            "__rank": rng.integers(0, 2, n).astype(np.int64),  # the prediction
            "__test": rng.integers(0, 3, n).astype(np.int64),
            "w s'": rng.integers(0, 3, n).astype(np.int64),
            "__cut_rank": rng.integers(0, 3, n).astype(np.int64),
        }
    )
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
    ref = (
        pd.DataFrame({"s": ((truth == 1) & (pred == 1)).astype(int), "t": (truth == 1).astype(int)})
        .groupby([frame["z"], frame["__test"]])
        .sum()
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = tabulate(sdf, y_true="a.b", y_pred="__rank", strata=["z", "__test"], metric="recall")
    assert counts.successes.tolist() == ref["s"].tolist() and counts.trials.tolist() == ref["t"].tolist()
    assert list(counts.strata.names) == ["z", "__test"]


def test_missing_and_mixed_labels_refused_like_pandas(spark):
    nan_rows = spark.createDataFrame(
        [(1.0, 1, "a"), (float("nan"), 0, "a"), (None, 1, "b"), (0.0, 0, "b")], "y double, p long, g string"
    )
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


def test_split_plan_has_no_python_and_ranks_in_generated_code(sdf_spark_speed_plan, frame_spark_speed_plan):
    kw = dict(label="y", id_column="id", groups="g", n_min=20, test_size=0.2, on_infeasible="degrade")
    got, expected = split_both(sdf_spark_speed_plan, frame_spark_speed_plan, **kw)
    for part in (got.test, got.train, got.test_weights):
        plan = formatted_plan(part)
        assert not [node for node in PYTHON_NODES if node in plan], plan[:2000]
        # the rank is plain integer arithmetic: no lambda (higher-order function) left in the plan
        assert "lambdafunction" not in plan.lower()
        # the optimized plan stays small (an inferred filter copied down the rank's projections
        # once grew it to megabytes)
        assert len(plan) < 60_000
    test_ids = sorted(r[0] for r in got.test.select("id").collect())
    assert test_ids == sorted(expected.test["id"])
    train_ids = sorted(r[0] for r in got.train.select("id").collect())
    assert train_ids == sorted(expected.train["id"])


def test_keyed_rank_is_whole_stage_codegen(spark):
    """Every projection that computes the rank runs inside generated code (``*`` in the plan)."""
    from pyspark.sql import functions as F

    from bayeseval.spark import keyed_rank

    ranked = keyed_rank(spark.range(10).withColumn("s", F.lit(3).cast("long")), id_column="id", salt_column="s")
    plan = ranked._jdf.queryExecution().executedPlan().toString()
    lines = [ln.strip(" +-:") for ln in plan.splitlines() if "Project" in ln]
    assert len(lines) >= 8  # cheap steps may merge, the multiplications stay apart
    assert all(ln.startswith("*") for ln in lines), plan[:2000]


@pytest.mark.parametrize("seed", [0, 12345])
def test_rank_at_the_64_bit_edges_matches_numpy(spark, seed):
    """Extreme ids (both ends of the signed range, 0, -1) through both Spark forms of the hash."""
    from pyspark.sql import functions as F

    from bayeseval._backends.hashing import signed64 as _signed
    from bayeseval.spark import keyed_rank, keyed_rank_sql

    ids = np.array(
        [-(2**63), 2**63 - 1, 0, -1, 1, 2**32 - 1, 2**32, -(2**32), 65535, 65536, 2**48 + 17, -(2**48) - 3],
        dtype=np.int64,
    )
    salt = key_salt((0, "edge"), random_seed=seed)
    sdf_spark_speed_plan = spark.createDataFrame([(int(i),) for i in ids], "id long").withColumn(
        "salt", F.lit(_signed(salt))
    )
    ranked = keyed_rank(sdf_spark_speed_plan, id_column="id", salt_column="salt").select("id", "__rank").collect()
    got = dict((r[0], r[1]) for r in ranked)
    expected = row_rank(ids, salt)
    assert [got[int(i)] for i in ids] == expected.tolist()
    via_sql = sdf_spark_speed_plan.select("id", F.expr(keyed_rank_sql("id", "salt")).alias("r")).collect()
    assert [dict((r[0], r[1]) for r in via_sql)[int(i)] for i in ids] == expected.tolist()


def test_random_ids_match_numpy_under_ansi_and_legacy_arithmetic(spark):
    """ANSI mode raises on BIGINT overflow: the limb arithmetic must never overflow either way."""
    from pyspark.sql import functions as F

    from bayeseval._backends.hashing import signed64 as _signed
    from bayeseval.spark import keyed_rank

    rng = np.random.default_rng(3)
    ids = rng.integers(-(2**63), 2**63 - 1, size=500, dtype=np.int64, endpoint=True)
    salt = key_salt(("x",), random_seed=7)
    before = spark.conf.get("spark.sql.ansi.enabled")
    try:
        for ansi in ("true", "false"):
            spark.conf.set("spark.sql.ansi.enabled", ansi)
            sdf_spark_speed_plan = spark.createDataFrame([(int(i),) for i in ids], "id long").withColumn(
                "salt", F.lit(_signed(salt))
            )
            rows = keyed_rank(sdf_spark_speed_plan, id_column="id", salt_column="salt").select("id", "__rank").collect()
            got = dict((r[0], r[1]) for r in rows)
            assert [got[int(i)] for i in ids] == row_rank(ids, salt).tolist()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


def test_keys_taking_all_or_none_of_their_rows(spark):
    """A key whose every row goes to test (tiny minority, large n_min) and the plain split agree with pandas."""
    rng = np.random.default_rng(5)
    n = 600
    frame_spark_speed_plan = pd.DataFrame(
        {
            "id": np.arange(n, dtype=np.int64) * 97 - 5000,
            "y": np.r_[np.ones(12, np.int64), np.zeros(n - 12, np.int64)][rng.permutation(n)],
        }
    )
    sdf_spark_speed_plan = spark.createDataFrame(
        [tuple(r) for r in frame_spark_speed_plan.itertuples(index=False, name=None)], "id long, y long"
    )
    kw = dict(label="y", id_column="id", n_min=12, test_size=0.2, max_inflate=100)
    got, expected = split_both(sdf_spark_speed_plan, frame_spark_speed_plan, **kw)
    pd.testing.assert_frame_equal(got.table, expected.table)
    assert sorted(r[0] for r in got.test.select("id").collect()) == sorted(expected.test["id"])
    # by hand: n_min equals the 12 positives, so every one of them is a test row
    assert int(expected.test["y"].sum()) == 12


def test_repeated_and_missing_ids_refused(spark):
    dup = spark.createDataFrame([(1, 0), (2, 1), (2, 0), (3, 0)], "id long, y long")
    with pytest.raises(ValueError, match=r"id_column 'id' must hold unique row ids \(3 distinct in 4 rows\)"):
        dual_constraint_split(dup, label="y", id_column="id")
    missing = spark.createDataFrame([(1, 0), (None, 1), (3, 0)], "id long, y long")
    with pytest.raises(ValueError, match=r"id_column 'id' has 1 missing row ids"):
        dual_constraint_split(missing, label="y", id_column="id")


def test_local_table_literal_and_fallback(spark):
    """Plain values become one JSON literal; dates (and large tables) go through createDataFrame."""
    import datetime

    from pyspark.sql import types as T

    from bayeseval._backends.spark_backend import local_table

    fields = [
        T.StructField("k", T.LongType()),
        T.StructField("s", T.StringType()),
        T.StructField("w", T.DoubleType()),
        T.StructField("b", T.BooleanType()),
    ]
    rows = [(-(2**63), 'a"\u00e9\x1f', None, True), (2**63 - 1, "", 0.1, False)]
    literal = local_table(spark, rows, fields)
    assert [tuple(r) for r in literal.collect()] == rows
    assert "ExistingRDD" not in formatted_plan(literal)
    dated = local_table(
        spark, [(datetime.date(2024, 2, 29), 1)], [T.StructField("d", T.DateType()), T.StructField("k", T.LongType())]
    )
    assert [tuple(r) for r in dated.collect()] == [(datetime.date(2024, 2, 29), 1)]
    assert local_table(spark, [], fields).count() == 0


def test_split_of_native_rows_has_no_python_rdd(spark):
    """Rows made in Spark: the split's plans hold no RDD of pickled Python rows (the small tables are literals)."""
    from pyspark.sql import functions as F

    sdf_spark_speed_plan = spark.range(2000).select(
        (F.col("id") * 7919 - 10**9).alias("id"),
        (F.col("id") % 17 == 0).cast("long").alias("y"),
        F.concat(F.lit("g"), (F.col("id") % 3).cast("string")).alias("g"),
    )
    frame_spark_speed_plan = pd.DataFrame([tuple(r) for r in sdf_spark_speed_plan.collect()], columns=["id", "y", "g"])
    kw = dict(label="y", id_column="id", groups="g", n_min=15, test_size=0.2, on_infeasible="degrade")
    got, expected = split_both(sdf_spark_speed_plan, frame_spark_speed_plan, **kw)
    for part in (got.test, got.train, got.test_weights):
        assert "ExistingRDD" not in formatted_plan(part)
    assert sorted(r[0] for r in got.test.select("id").collect()) == sorted(expected.test["id"])


# -- proxies --------------------------------------------------------------------------------
def _to_spark(spark, df):
    """The rows of ``df`` as a Spark DataFrame, NaN as NULL (a missing label is NULL in Spark)."""
    return spark.createDataFrame(df.astype(object).where(df.notna(), None))


def _proxy_pool(size=2400, seed=3):
    from tests.helpers import _pool

    df = _pool(size=size, seed=seed)
    df["tied"] = np.round(df["score"] * 7) / 7  # many ties: edges land on repeated values
    return df


@pytest.mark.parametrize("proxy", ["judge", "score", "tied"])
@pytest.mark.parametrize("strata", ["g", None])
@pytest.mark.parametrize("inclusion", ["pi", None])
def test_tabulate_proxy_equals_pandas(spark, proxy, strata, inclusion):
    df = _proxy_pool()
    design = None if inclusion is None else Design(inclusion=inclusion)
    kw = dict(y_true="y_true", y_pred="y_pred", proxy=proxy, strata=strata, design=design)
    a, b = tabulate(df, **kw), tabulate(_to_spark(spark, df), **kw)
    assert a.proxy_kind == b.proxy_kind == ("label" if proxy == "judge" else "score")
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=inclusion is None)


def test_score_bins_are_numpy_quantiles_in_small_strata(spark):
    # strata of 1 to 9 rows: the interpolated edges and their ties against numpy's quantiles
    rng = np.random.default_rng(5)
    sizes = np.arange(1, 10)
    df = pd.DataFrame({"g": np.repeat(sizes, sizes), "y_pred": 1, "score": rng.integers(0, 4, sizes.sum()) / 3.0})
    df["y_true"] = (rng.random(len(df)) < 0.7).astype(float)
    kw = dict(y_true="y_true", y_pred="y_pred", proxy="score", strata="g")
    pc = tabulate(_to_spark(spark, df), **kw)
    pd.testing.assert_frame_equal(pc.table, tabulate(df, **kw).table)
    for g, part in df.groupby("g"):
        edges = np.unique(np.quantile(part["score"], np.linspace(0, 1, 6)[1:-1]))
        cells = np.searchsorted(edges, part["score"], side="left")
        # the occupied cells in order, with their rows
        assert pc.table.loc[g, "pool_trials"].tolist() == pd.Series(cells).value_counts().sort_index().tolist()


def test_linear_quantiles_are_numpy_quantile_bit_for_bit():
    from bayeseval._backends.spark_backend import linear_quantiles

    rng = np.random.default_rng(0)
    probs = np.linspace(0, 1, 6)[1:-1]
    for m in [1, 2, 3, 4, 5, 6, 7, 11, 97, 1000]:
        x = np.sort(rng.normal(size=m) * 10.0 ** rng.integers(-3, 4))
        assert np.array_equal(linear_quantiles(m, dict(enumerate(x)), probs), np.quantile(x, probs))


def test_missing_scores_are_refused_like_pandas(spark):
    df = _proxy_pool(size=300)
    df.loc[[3, 7], "score"] = np.nan
    kw = dict(y_true="y_true", y_pred="y_pred", proxy="score", strata="g")
    with pytest.raises(ValueError, match=r"proxy column 'score' has missing values in 2 rows"):
        tabulate(df, **kw)
    with pytest.raises(ValueError, match=r"proxy column 'score' has missing values in 2 rows"):
        tabulate(_to_spark(spark, df), **kw)


def test_evaluate_and_audit_with_a_proxy_equal_pandas(spark):
    from bayeseval import evaluate
    from bayeseval.fairness import audit
    from tests.helpers import _audit_pool

    df = _proxy_pool()
    kw = dict(y_true="y_true", y_pred="y_pred", strata="g", proxy="score", random_seed=0)
    a, b = evaluate(df, **kw), evaluate(_to_spark(spark, df), **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    pool = _audit_pool(0.7, size=6000)
    kw = dict(y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], reference="a", random_seed=0)
    a, b = audit(pool, **kw), audit(_to_spark(spark, pool), **kw)
    pd.testing.assert_frame_equal(a.verdicts, b.verdicts)
    pd.testing.assert_frame_equal(a.disparities, b.disparities)


# -- counting by unit --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def answers() -> pd.DataFrame:
    """Items answered 1-5 times in three categories, with 0/1 labels and a graded outcome."""
    rng = np.random.default_rng(45)
    item = np.repeat(np.arange(120), rng.integers(1, 6, 120))
    frame = pd.DataFrame(
        {
            "item": item.astype(np.int64),
            "g": np.array(["math", "geo", "bio"])[item % 3],
            "y": rng.integers(0, 2, len(item)).astype(np.int64),
            "p": rng.integers(0, 2, len(item)).astype(np.int64),
            "ok": rng.choice([0.0, 0.5, 1.0], len(item)),
        }
    )
    return frame


def _units_by_hand(frame, strata, value, trial) -> pd.DataFrame:
    """The units' histogram by a plain pandas groupby (the independent reference)."""
    work = frame[strata + ["item"]].assign(_v=np.asarray(value, float), _t=np.asarray(trial, np.int64))
    per = work.groupby(strata + ["item"])[["_v", "_t"]].sum()
    per = per[per["_t"] > 0]
    hist = per.groupby(strata + ["_v", "_t"]).size().rename("units").reset_index()
    hist = hist.rename(columns={"_v": "unit_successes", "_t": "unit_trials"})
    return hist.sort_values(strata + ["unit_trials", "unit_successes"]).reset_index(drop=True)


@pytest.mark.parametrize(("metric", "strata"), [("recall", ["g"]), ("recall", []), ("accuracy", ["g"])])
def test_spark_counts_label_units_as_a_groupby_by_hand(spark, answers, metric, strata) -> None:
    import bayeseval as be

    sdf = spark.createDataFrame(answers)
    got = tabulate(sdf, y_true="y", y_pred="p", strata=strata or None, metric=metric, design=Design(cluster="item"))
    trial, success = be.get_metric(metric).masks(answers["y"].to_numpy(), answers["p"].to_numpy(), 1)
    ref = _units_by_hand(answers.assign(_all=0), strata or ["_all"], success, trial)
    cols = ["unit_successes", "unit_trials", "units"]
    units = got.units.sort_values([*strata, "unit_trials", "unit_successes"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(units[cols], ref[cols], check_dtype=False)
    assert got.n_units.sum() == ref["units"].sum()


def test_spark_counts_graded_outcomes_by_unit_as_pandas_does(spark, answers) -> None:
    sdf = spark.createDataFrame(answers)
    design = Design(cluster="item")
    got = tabulate(sdf, outcome="ok", strata="g", design=design)
    ref = _units_by_hand(answers, ["g"], answers["ok"], np.ones(len(answers)))
    pd.testing.assert_frame_equal(got.units, ref, check_dtype=False)
    pandas = tabulate(answers, outcome="ok", strata="g", design=design)
    pd.testing.assert_frame_equal(got.table, pandas.table, check_dtype=False)
    bad = spark.createDataFrame(answers.assign(ok=answers["ok"] * 2))
    with pytest.raises(ValueError, match="outcome"):
        tabulate(bad, outcome="ok", strata="g", design=design)
