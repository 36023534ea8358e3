"""Back ends under attack: column-name collisions, missing labels, mixed label types, DuckDB errors.

Every engine (pandas, DuckDB over a frame, a Parquet path and a relation) must give
the Counts and test ids of an independent pandas reference written here by hand:
boolean masks summed per group for the counts, and for the split the rows with the
smallest keyed (rank, id) per key computed with ``row_rank``/``key_salt``.
Spark runs the same checks in tests/test_spark.py (one session there).
"""

from __future__ import annotations

import ast
import pathlib
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayeseval import tabulate
from bayeseval.counts.counts import confusion_counts
from bayeseval.plan.split import dual_constraint_split, key_salt, row_rank

INTERNAL = ["z", "__key", "__salt", "__n", "__w", "__rank", "__rn", "__test", "__cut_rank", "__cut_id",
            "successes", "trials", "__s", "__t", "__p", "__s0", "__c0", "__rows", "__null", "rows", "key",
            "code", "class", "stratum", "weight", "a.b", "with space", 'dq"uote', "sq'uote", "Z", "__KEY"]


def _engines(frame: pd.DataFrame, tmp_path: pathlib.Path) -> dict:
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)
    return {
        "pandas": frame,
        "duckdb-frame": duckdb.from_df(frame),
        "parquet": str(path),
        "relation": duckdb.connect().read_parquet(str(path)),
    }


def _reference_counts(frame, y_true, y_pred, strata, trial, success) -> pd.DataFrame:
    """Successes and trials per stratum from boolean row masks (pandas groupby)."""
    work = pd.DataFrame({"s": success.astype(np.int64), "t": trial.astype(np.int64)})
    keys = [frame[c].to_numpy() for c in strata]
    out = work.groupby(keys, sort=True).sum()
    out.index = out.index.set_names(strata)
    return out.rename(columns={"s": "successes", "t": "trials"})


def _check_counts(got, ref: pd.DataFrame) -> None:
    frame = got.to_frame()
    assert list(frame.index.names) == list(ref.index.names)
    assert [tuple(np.atleast_1d(k)) for k in frame.index] == [tuple(np.atleast_1d(k)) for k in ref.index]
    np.testing.assert_array_equal(frame["successes"].to_numpy(), ref["successes"].to_numpy())
    np.testing.assert_array_equal(frame["trials"].to_numpy(), ref["trials"].to_numpy())


# -- internal names never collide with user columns --------------------------------------------------


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 600
    return pd.DataFrame({
        "id": rng.permutation(n).astype(np.int64) * 7919 - 2_000_000,
        "y": (rng.random(n) < 0.08).astype(np.int64),
        "p": rng.integers(0, 2, n).astype(np.int64),
        "g": rng.choice(["east", "west", "o'hara"], n),
    })


def _reference_test_ids(frame, label, groups, id_column, take_per_key, seed=0) -> list:
    """Per key, the ``take`` rows with the smallest (rank, id): the documented selection rule."""
    cols = [label] + groups
    chosen = []
    for key, part in frame.groupby(cols, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rank = row_rank(part[id_column].to_numpy(), key_salt(key, random_seed=seed))
        order = np.lexsort((part[id_column].to_numpy(), rank))
        chosen.extend(part[id_column].to_numpy()[order[: take_per_key[key]]].tolist())
    return sorted(chosen)


def _check_split_everywhere(frame, tmp_path, *, label, group, id_column):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(frame, label=label, groups=group, id_column=id_column, n_min=12,
                                         on_infeasible="degrade")
        take = {k if isinstance(k, tuple) else (k,): int(t) for k, t in expected.table["test"].items()}
        ref = _reference_test_ids(frame, label, [group], id_column, take)
        assert sorted(expected.test[id_column]) == ref
        for engine, source in _engines(frame, tmp_path).items():
            if engine == "pandas":
                continue
            got = dual_constraint_split(source, label=label, groups=group, id_column=id_column, n_min=12,
                                        on_infeasible="degrade")
            test, train = got.test.df(), got.train.df()
            assert list(test.columns) == list(frame.columns), engine  # no z_1, nothing overwritten
            assert sorted(test[id_column]) == ref, engine
            assert len(test) == got.n_test and len(test) + len(train) == len(frame)
            pd.testing.assert_frame_equal(
                test.sort_values(id_column).reset_index(drop=True),
                frame[frame[id_column].isin(ref)].sort_values(id_column).reset_index(drop=True),
                check_dtype=False,
            )
            pd.testing.assert_frame_equal(got.table, expected.table)


def test_split_ignores_user_columns_named_like_internals(rows, tmp_path):
    frame = rows.copy()
    for i, name in enumerate(INTERNAL):  # every internal-looking name at once, as extra user columns
        if name.lower() not in {c.lower() for c in frame.columns}:
            frame[name] = (np.arange(len(frame)) + i) % 3
    _check_split_everywhere(frame, tmp_path, label="y", group="g", id_column="id")


@pytest.mark.parametrize("name", ["z", "__key", "__rank", "__test", "a.b"])
def test_split_ignores_one_internal_name(rows, name, tmp_path):
    frame = rows.assign(**{name: np.arange(len(rows)) % 5})
    _check_split_everywhere(frame, tmp_path, label="y", group="g", id_column="id")


@pytest.mark.parametrize("label,group,id_column", [("__key", "z", "__rank"), ("a.b", "with space", "__n"),
                                                   ("successes", "__test", "weight")])
def test_split_with_internal_names_as_label_group_and_id(rows, label, group, id_column, tmp_path):
    frame = rows.rename(columns={"y": label, "g": group, "id": id_column})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(frame, label=label, groups=group, id_column=id_column, n_min=12,
                                         on_infeasible="degrade")
        take = {k if isinstance(k, tuple) else (k,): int(t) for k, t in expected.table["test"].items()}
        ref = _reference_test_ids(frame, label, [group], id_column, take)
        assert sorted(expected.test[id_column]) == ref
        for engine, source in _engines(frame, tmp_path).items():
            if engine == "pandas":
                continue
            got = dual_constraint_split(source, label=label, groups=group, id_column=id_column, n_min=12,
                                        on_infeasible="degrade")
            assert sorted(got.test.df()[id_column]) == ref, engine
            weights = got.test_weights.df()
            assert weights.columns[0] == id_column and weights.columns[1] != id_column
            pd.testing.assert_frame_equal(got.table, expected.table)


@pytest.mark.parametrize("names", [
    {"g": "successes", "h": "__s"},
    {"g": "__t", "h": "__n"},
    {"g": "trials", "h": "class"},
    {"g": "a.b", "h": 'dq"uote'},
    {"y": "__t", "p": "__s", "g": "__p"},
])
def test_tabulate_with_internal_names(names, tmp_path):
    rng = np.random.default_rng(3)
    n = 500
    frame = pd.DataFrame({
        "y": rng.integers(0, 2, n), "p": rng.integers(0, 2, n),
        "g": rng.choice(["a", "b"], n), "h": rng.integers(0, 3, n),
    }).rename(columns=names)
    yt, yp = names.get("y", "y"), names.get("p", "p")
    strata = [names.get("g", "g"), names.get("h", "h")]
    truth, pred = frame[yt].to_numpy(), frame[yp].to_numpy()
    ref = _reference_counts(frame, yt, yp, strata, trial=truth == 1, success=(truth == 1) & (pred == 1))
    for engine, source in _engines(frame, tmp_path).items():
        got = tabulate(source, y_true=yt, y_pred=yp, strata=strata, metric="recall")
        _check_counts(got, ref)
        assert engine and got.metric == "recall"


def test_categorical_strata_named_successes_keeps_empty_categories():
    frame = pd.DataFrame({
        "successes": pd.Categorical(["a", "a", "b"], categories=["a", "b", "c"]),
        "y": [1, 0, 1], "p": [1, 1, 0],
    })
    with pytest.warns(UserWarning, match="no trials"):
        got = tabulate(frame, y_true="y", y_pred="p", strata="successes", metric="error_rate")
    # by hand: a -> 1 wrong of 2, b -> 1 wrong of 1, c -> no rows
    assert got.successes.tolist() == [1, 1, 0] and got.trials.tolist() == [2, 1, 0]
    assert list(got.strata) == ["a", "b", "c"] and got.strata.name == "successes"


def test_multiclass_level_named_apart_from_a_class_stratum():
    frame = pd.DataFrame({"class": ["u", "u", "v"], "y": ["a", "b", "c"], "p": ["a", "c", "c"]})
    with pytest.warns(UserWarning, match="no trials"):
        got = tabulate(frame, y_true="y", y_pred="p", strata="class", metric="recall")
    assert list(got.strata.names) == ["class", "class_1"]
    # recall of class "c" in stratum "v": 1 of 1; of class "b" in "u": 0 of 1
    assert got.successes[("v", "c")] == 1 and got.trials[("u", "b")] == 1 and got.successes[("u", "b")] == 0


# -- missing labels and strata ------------------------------------------------------------------------


def _nan_relation(kind: str):
    con = duckdb.connect()
    value = {"nan": "'NaN'::DOUBLE", "null": "NULL::DOUBLE"}[kind]
    return con.sql(f"SELECT * FROM (VALUES (1.0, 1, 'a'), ({value}, 0, 'a'), ({value}, 1, 'b'), "
                   f"(0.0, 0, 'b')) t(y, p, g)")


@pytest.mark.parametrize("kind", ["nan", "null"])
def test_duckdb_refuses_nan_and_null_labels(kind):
    with pytest.raises(ValueError, match=r"y_true column 'y' has missing labels in 2 rows"):
        tabulate(_nan_relation(kind), y_true="y", y_pred="p", strata="g")


@pytest.mark.parametrize("missing", [np.nan, None, pd.NA])
def test_every_engine_refuses_missing_labels_and_strata(missing, tmp_path):
    frame = pd.DataFrame({"y": pd.array([1, 0, 1, 1], dtype="object"), "p": [1, 0, 0, 1], "g": ["a", "b", "a", "b"]})
    frame["y"] = pd.array([1, missing, 1, missing], dtype="Int64") if missing is pd.NA else [1.0, missing, 1.0, missing]
    for source in _engines(frame, tmp_path).values():
        with pytest.raises(ValueError, match=r"y_true column 'y' has missing labels in 2 rows"):
            tabulate(source, y_true="y", y_pred="p", strata="g")
    frame = pd.DataFrame({"y": [1, 0, 1], "p": ["x", missing, "y"], "g": ["a", "b", missing]})
    frame["y"] = frame["y"].astype(str)
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"y_pred column 'p' has missing labels in 1 row\b"):
            tabulate(source, y_true="y", y_pred="p", strata="g")
        assert engine
    frame = pd.DataFrame({"y": [1, 0, 1], "p": [1, 1, 1], "g": ["a", missing, missing]})
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"strata column 'g' has missing values in 2 rows"):
            tabulate(source, y_true="y", y_pred="p", strata="g")
        assert engine


def test_split_refuses_missing_labels_and_groups_on_every_engine(rows, tmp_path):
    frame = rows.copy()
    frame["y"] = frame["y"].astype(float)
    frame.loc[frame.index[:3], "y"] = np.nan
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"label column 'y' has missing values in 3 rows"):
            dual_constraint_split(source, label="y", id_column="id")
        assert engine
    frame = rows.copy()
    frame.loc[frame.index[:2], "g"] = None
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"groups column 'g' has missing values in 2 rows"):
            dual_constraint_split(source, label="y", id_column="id", groups="g")
        assert engine


def test_duckdb_split_refuses_nan_labels():
    rel = duckdb.sql("SELECT range AS id, CASE WHEN range < 4 THEN 'NaN'::DOUBLE ELSE (range % 2)::DOUBLE END "
                     "AS y FROM range(40)")
    with pytest.raises(ValueError, match=r"label column 'y' has missing values in 4 rows"):
        dual_constraint_split(rel, label="y", id_column="id")


# -- mixed label types ------------------------------------------------------------------------------


def test_int_truth_with_string_predictions_raises_on_every_engine(tmp_path):
    frame = pd.DataFrame({"y": [1, 0, 1, 0], "p": ["1", "0", "0", "0"]})
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"y_true column 'y' \(dtype \w+\).*y_pred column 'p' \(dtype \w+\)"):
            tabulate(source, y_true="y", y_pred="p")
        assert engine


def test_column_mixing_numbers_and_strings_raises():
    frame = pd.DataFrame({"y": pd.Series([1, "1", 0], dtype=object), "p": pd.Series([1, "1", 0], dtype=object)})
    with pytest.raises(ValueError, match=r"y_true column 'y' \(dtype object\) mixes label types"):
        tabulate(frame, y_true="y", y_pred="p")


@pytest.mark.parametrize("labels", [("yes", "no"), (2, 1)])
def test_two_valued_non_binary_labels_need_pos_label_on_every_engine(labels, tmp_path):
    pos, neg = labels
    frame = pd.DataFrame({"y": [pos, pos, neg, neg, pos], "p": [pos, neg, neg, pos, pos],
                          "g": ["a", "a", "a", "b", "b"]})
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"metric 'recall' needs pos_label"):
            tabulate(source, y_true="y", y_pred="p", strata="g", metric="recall")
        got = tabulate(source, y_true="y", y_pred="p", strata="g", metric="recall", pos_label=pos)
        # by hand: a -> 1 of 2 positives found, b -> 1 of 1; no doubled strata, no class level
        assert got.successes.tolist() == [1, 1] and got.trials.tolist() == [2, 1], engine
        assert list(got.strata) == ["a", "b"]
        # the error rate needs no positive class
        assert tabulate(source, y_true="y", y_pred="p", metric="error_rate").total_successes == 2


def test_pos_label_of_the_wrong_type_raises(tmp_path):
    frame = pd.DataFrame({"y": [1, 0, 1], "p": [1, 1, 0]})
    for engine, source in _engines(frame, tmp_path).items():
        with pytest.raises(ValueError, match=r"pos_label '1' is a string"):
            tabulate(source, y_true="y", y_pred="p", metric="recall", pos_label="1")
        assert engine


def test_binary_and_multiclass_defaults_still_hold(tmp_path):
    frame = pd.DataFrame({"y": [True, False, True], "p": [1, 1, 0], "c": ["a", "b", "c"], "d": ["a", "c", "c"]})
    for engine, source in _engines(frame, tmp_path).items():
        got = tabulate(source, y_true="y", y_pred="p", metric="recall")
        assert (got.total_successes, got.total_trials) == (1, 2), engine
        with pytest.warns(UserWarning, match="no trials"):
            multi = tabulate(source, y_true="c", y_pred="d", metric="precision")
        # one-vs-rest: class c predicted twice, right once
        assert multi.successes[("all", "c")] == 1 and multi.trials[("all", "c")] == 2


# -- DuckDB's exceptions become ValueErrors naming the argument ------------------------------------


def test_unreadable_paths_raise_value_error_naming_the_path(tmp_path):
    missing = tmp_path / "none.parquet"
    garbage = tmp_path / "garbage.parquet"
    garbage.write_text("not parquet")
    for path in (missing, garbage, tmp_path / "none.csv"):
        with pytest.raises(ValueError, match=str(path.name)):
            tabulate(str(path), y_true="y", y_pred="p")
        with pytest.raises(ValueError, match=str(path.name)):
            dual_constraint_split(str(path), label="y", id_column="id")


def test_csv_conversion_error_is_a_value_error_naming_the_path(tmp_path):
    path = tmp_path / "late.csv"
    path.write_text("y,p\n" + "1,1\n" * 40_000 + "oops,1\n")
    with pytest.raises(ValueError, match=r"late\.csv.*ConversionException|late\.csv.*Conversion"):
        tabulate(str(path), y_true="y", y_pred="p")


# -- the confusion table is the one place the metric is applied ------------------------------------


def test_confusion_counts_against_a_hand_computed_table():
    table = pd.DataFrame({
        "g": ["a", "a", "a", "b", "b", "a"],
        "y": [1, 1, 0, 0, 1, 1],
        "p": [1, 0, 1, 0, 1, 1],
        "n": [30, 10, 5, 50, 7, 2],
    })
    got = confusion_counts(table, y_true="y", y_pred="p", count="n", strata="g", metric="precision")
    # precision: trials are predicted positives; a -> 30+5+2 trials, 32 right; b -> 7 of 7
    assert got.successes.tolist() == [32, 7] and got.trials.tolist() == [37, 7]
    with pytest.raises(ValueError, match=r"count column 'n' must hold non-negative integers"):
        confusion_counts(table.assign(n=-table["n"]), y_true="y", y_pred="p", count="n")


def test_layers_spark_and_counts_import_no_backend_privates():
    root = pathlib.Path(__file__).resolve().parents[1] / "bayeseval"
    for module in ("spark.py", "counts/counts.py", "plan/split.py"):
        tree = ast.parse((root / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bayeseval"):
                if not node.module.startswith(("bayeseval._kernels", "bayeseval._backends", "bayeseval._api")):
                    assert all(not a.name.startswith("_") for a in node.names), (module, node.module)
    # shared packages importing no feature package is asserted by tests/test_layers.py


# -- properties ---------------------------------------------------------------------------------


_names = st.sampled_from(INTERNAL + ["y", "p", "g", "label", "1", "é"])  # DuckDB renames an empty name


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(_names, min_size=4, max_size=4, unique_by=str.lower),
    data=st.data(),
    label_kind=st.sampled_from(["int", "bool", "str3"]),
)
def test_property_engines_match_the_reference(names, data, label_kind):
    yt, yp, g, extra = names
    n = data.draw(st.integers(5, 40))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if label_kind == "int":
        truth, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    elif label_kind == "bool":
        truth, pred = rng.integers(0, 2, n).astype(bool), rng.integers(0, 2, n).astype(bool)
    else:
        classes = np.array(["cat", "dog", "eel"])
        truth, pred = classes[rng.integers(0, 3, n)], classes[rng.integers(0, 3, n)]
    frame = pd.DataFrame({yt: truth, yp: pred, g: rng.choice(["x", "y"], n), extra: rng.integers(0, 9, n)})
    metric = data.draw(st.sampled_from(["error_rate", "recall", "precision"]))
    pos = {"int": 1, "bool": True, "str3": "dog"}[label_kind]
    trial = np.ones(n, bool) if metric == "error_rate" else (truth == pos if metric == "recall" else pred == pos)
    success = trial & ((truth != pred) if metric == "error_rate" else (pred == pos if metric == "recall" else truth == pos))
    ref = _reference_counts(frame, yt, yp, [g], trial, success)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in (frame, duckdb.from_df(frame)):
            got = tabulate(source, y_true=yt, y_pred=yp, strata=g, metric=metric, pos_label=pos)
            _check_counts(got, ref)


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    missing=st.sampled_from([np.nan, None, pd.NA]),
    column=st.sampled_from(["truth", "pred", "strata"]),
)
def test_property_missing_values_refused_with_their_count(data, missing, column):
    n = data.draw(st.integers(3, 30))
    where = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n)))
    frame = pd.DataFrame({"__t": np.ones(n), "__s": np.zeros(n), "successes": ["a"] * n}, dtype=object)
    target = {"truth": "__t", "pred": "__s", "strata": "successes"}[column]
    frame.loc[where, target] = missing
    if column != "strata":
        frame[["__t", "__s"]] = frame[["__t", "__s"]].astype("Float64" if missing is pd.NA else float)
    arg = {"truth": "y_true", "pred": "y_pred", "strata": "strata"}[column]
    rows = len(where)
    pattern = rf"{arg} column '{target}' has missing \w+ in {rows} rows?\b"
    for source in (frame, duckdb.from_df(frame)):
        with pytest.raises(ValueError, match=pattern):
            tabulate(source, y_true="__t", y_pred="__s", strata="successes")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(_names, min_size=4, max_size=4, unique_by=str.lower), seed=st.integers(0, 2**16))
def test_property_duckdb_split_matches_pandas_whatever_the_names(names, seed):
    label, group, id_column, extra = names
    rng = np.random.default_rng(seed)
    n = 200
    frame = pd.DataFrame({
        id_column: rng.permutation(n).astype(np.int64) - 50,
        label: (rng.random(n) < 0.15).astype(np.int64),
        group: rng.choice(["u", "v"], n),
        extra: rng.integers(0, 3, n),
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(frame, label=label, groups=group, id_column=id_column, n_min=5,
                                         on_infeasible="degrade", random_seed=seed)
        got = dual_constraint_split(duckdb.from_df(frame), label=label, groups=group, id_column=id_column,
                                    n_min=5, on_infeasible="degrade", random_seed=seed)
    test = got.test.df()
    assert list(test.columns) == list(frame.columns)
    assert sorted(test[id_column]) == sorted(expected.test[id_column])


def test_sklearn_splitter_names_y_and_groups_for_missing_values():
    from bayeseval.plan.split import DualConstraintSplit

    cv = DualConstraintSplit(test_size=0.2)
    X = np.zeros((100, 1))
    with pytest.raises(ValueError, match=r"^y has 50 missing values"):
        next(cv.split(X, np.array([1.0, np.nan] * 50)))
    with pytest.raises(ValueError, match=r"^groups has 25 missing values"):
        next(cv.split(X, np.array([1, 0] * 50), groups=np.array(["a", "b", "c", None] * 25, dtype=object)))


def test_split_orders_a_mixed_type_group_column():
    frame = pd.DataFrame({"y": [0, 1] * 20, "g": pd.Series([1, "a", 1, "a"] * 10, dtype=object)})
    res = dual_constraint_split(frame, label="g", test_size=0.2)
    # by hand: two keys of 20 rows each, 8 test rows split 4/4 (largest remainders)
    assert res.table["rows"].tolist() == [20, 20] and res.table["test"].tolist() == [4, 4]
    assert sorted(res.test["g"].astype(str).value_counts().tolist()) == [4, 4]
