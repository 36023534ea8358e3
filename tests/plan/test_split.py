"""Dual-constraint split: decisions, keyed-hash selection, engines, scikit-learn."""

from __future__ import annotations

import dataclasses
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayeseval import ReweightingWarning, tabulate
from bayeseval._api.results import Result
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.plan.split import (
    DualConstraintSplit,
    RepeatedDualConstraintSplit,
    SplitResult,
    _mix64_int,
    dual_constraint_split,
    key_salt,
    row_rank,
)
from tests.helpers import INTERNAL, _engines, _names


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
        expected = dual_constraint_split(
            frame, label=label, groups=group, id_column=id_column, n_min=12, on_infeasible="degrade"
        )
        take = {k if isinstance(k, tuple) else (k,): int(t) for k, t in expected.table["test"].items()}
        ref = _reference_test_ids(frame, label, [group], id_column, take)
        assert sorted(expected.test[id_column]) == ref
        for engine, source in _engines(frame, tmp_path).items():
            if engine == "pandas":
                continue
            got = dual_constraint_split(
                source, label=label, groups=group, id_column=id_column, n_min=12, on_infeasible="degrade"
            )
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


def _split():
    df = pd.DataFrame({"y": np.r_[np.ones(40, int), np.zeros(360, int)]}, index=np.arange(400) * 3)
    return dual_constraint_split(df, label="y", test_size=0.25, random_seed=5)


# The fraud-scale case: 300,000 rows at a 0.42% positive share, a 60,000-row test set.
N, N_POS, N_TEST = 300_000, 1_260, 60_000


@pytest.fixture(scope="module")
def fraud() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    y = np.zeros(N, dtype=np.int64)
    y[rng.choice(N, N_POS, replace=False)] = 1
    region = rng.permutation(np.arange(N) % 8)
    return pd.DataFrame({"y": y, "region": region, "x": rng.normal(size=N)})


def _quiet(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dual_constraint_split(**kw)


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 40_000
    return pd.DataFrame(
        {
            "id": rng.permutation(n).astype(np.int64) * 7919 - 10**8,
            "y": (rng.random(n) < 0.02).astype(np.int64),
            "g": rng.choice(["a", "b", "c", "tiny"], n, p=[0.5, 0.3, 0.199, 0.001]),
        }
    )


@pytest.fixture(scope="module")
def clf_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] + rng.normal(size=3000) > 2.3).astype(int)  # about 5% positives
    return X, y


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


@pytest.mark.parametrize(
    "label,group,id_column", [("__key", "z", "__rank"), ("a.b", "with space", "__n"), ("successes", "__test", "weight")]
)
def test_split_with_internal_names_as_label_group_and_id(rows, label, group, id_column, tmp_path):
    frame = rows.rename(columns={"y": label, "g": group, "id": id_column})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(
            frame, label=label, groups=group, id_column=id_column, n_min=12, on_infeasible="degrade"
        )
        take = {k if isinstance(k, tuple) else (k,): int(t) for k, t in expected.table["test"].items()}
        ref = _reference_test_ids(frame, label, [group], id_column, take)
        assert sorted(expected.test[id_column]) == ref
        for engine, source in _engines(frame, tmp_path).items():
            if engine == "pandas":
                continue
            got = dual_constraint_split(
                source, label=label, groups=group, id_column=id_column, n_min=12, on_infeasible="degrade"
            )
            assert sorted(got.test.df()[id_column]) == ref, engine
            weights = got.test_weights.df()
            assert weights.columns[0] == id_column and weights.columns[1] != id_column
            pd.testing.assert_frame_equal(got.table, expected.table)


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
    rel = duckdb.sql(
        "SELECT range AS id, CASE WHEN range < 4 THEN 'NaN'::DOUBLE ELSE (range % 2)::DOUBLE END AS y FROM range(40)"
    )
    with pytest.raises(ValueError, match=r"label column 'y' has missing values in 4 rows"):
        dual_constraint_split(rel, label="y", id_column="id")


def test_unreadable_paths_raise_value_error_naming_the_path(tmp_path):
    missing = tmp_path / "none.parquet"
    garbage = tmp_path / "garbage.parquet"
    garbage.write_text("not parquet")
    for path in (missing, garbage, tmp_path / "none.csv"):
        with pytest.raises(ValueError, match=str(path.name)):
            tabulate(str(path), y_true="y", y_pred="p")
        with pytest.raises(ValueError, match=str(path.name)):
            dual_constraint_split(str(path), label="y", id_column="id")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(_names, min_size=4, max_size=4, unique_by=str.lower), seed=st.integers(0, 2**16))
def test_property_duckdb_split_matches_pandas_whatever_the_names(names, seed):
    label, group, id_column, extra = names
    rng = np.random.default_rng(seed)
    n = 200
    frame = pd.DataFrame(
        {
            id_column: rng.permutation(n).astype(np.int64) - 50,
            label: (rng.random(n) < 0.15).astype(np.int64),
            group: rng.choice(["u", "v"], n),
            extra: rng.integers(0, 3, n),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = dual_constraint_split(
            frame, label=label, groups=group, id_column=id_column, n_min=5, on_infeasible="degrade", random_seed=seed
        )
        got = dual_constraint_split(
            duckdb.from_df(frame),
            label=label,
            groups=group,
            id_column=id_column,
            n_min=5,
            on_infeasible="degrade",
            random_seed=seed,
        )
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


def test_split_result_is_a_result_with_its_per_key_table():
    res = _split()
    assert isinstance(res, SplitResult) and isinstance(res, Result)
    # 25% of 40 and of 360 rows, proportional
    assert res.table["test"].to_dict() == {0: 90, 1: 10}
    frame = res.to_frame()
    frame.loc[0, "test"] = -1
    assert res.table.loc[0, "test"] == 90
    assert repr(res).splitlines()[0] == "Dual-constraint split"
    assert "<strong>Dual-constraint split</strong>" in res._repr_html_()
    assert str(res).startswith("Dual-constraint split (pandas, random_seed=5): 400 rows -> test 100")
    assert "table" in {f.name for f in dataclasses.fields(res)}
    train, test = res.train, res.test  # attributes kept
    assert len(train) + len(test) == 400


def test_splitters_take_random_seed_by_keyword():
    y = np.r_[np.ones(50, int), np.zeros(450, int)]
    X = np.zeros((500, 1))
    new = DualConstraintSplit(0.2, 10, random_seed=7)
    with pytest.raises(TypeError):
        DualConstraintSplit(0.2, 10, 0.3, 5.0, None, None, None, "raise", 7)
    again = DualConstraintSplit(0.2, 10, random_seed=7)
    np.testing.assert_array_equal(next(again.split(X, y))[1], next(new.split(X, y))[1])
    rep = RepeatedDualConstraintSplit(2, 0.2, 10, random_seed=7)
    assert rep.random_seed == 7 and rep.get_n_splits() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = repr(new)  # scikit-learn's repr reads the parameters through the signature
    assert "random_seed=7" in text and "n_min=10" in text


def test_row_rank_matches_the_documented_formula():
    salt = key_salt((1, "north"), random_seed=42)
    ids = np.array([-5, 0, 7, 2**40], dtype=np.int64)
    expected = [(_mix64_int(_mix64_int(int(i) % 2**64) ^ salt)) >> 1 for i in ids]
    assert row_rank(ids, salt).tolist() == expected
    assert (
        key_salt((1, "north"), random_seed=42)
        != key_salt((1, "south"), random_seed=42)
        != key_salt((1, "north"), random_seed=43)
    )


def test_proportional_branch(fraud):
    res = _quiet(data=fraud, label="y", test_size=N_TEST, n_min=200)
    assert res.branch == "proportional"
    assert res.n_test == N_TEST == len(res.test)
    # 0.0042 * 60,000 = 252 positives
    assert int(res.test["y"].sum()) == 252
    assert res.decision.n_minority_proportional == 252
    assert (res.test_weights == 1).all()
    assert len(res.train) == N - N_TEST


def test_grow_test_branch(fraud):
    res = _quiet(data=fraud, label="y", test_size=N_TEST, n_min=323)
    # n_test' = ceil(323 / 0.0042) = 76,905 (about 76,900), 25.6% <= 30% cap
    assert res.branch == "grow_test" and res.decision.branch == "grow_test"
    assert res.n_test == 76_905 == len(res.test)
    assert int(res.test["y"].sum()) == 323
    assert res.test["y"].mean() == pytest.approx(N_POS / N, rel=1e-3)
    assert (res.test_weights == 1).all()


def test_raise_share_branch_reweights(fraud):
    with pytest.warns(ReweightingWarning, match="re-calibrate"):
        res = dual_constraint_split(fraud, label="y", test_size=N_TEST, n_min=323, max_test_share=0.22)
    # growing to 76,905 rows (25.6%) exceeds the 22% cap; 323/60,000 = 0.00538 <= 5 x 0.0042
    assert res.branch == "raise_share"
    assert res.n_test == N_TEST == len(res.test)
    pos = int(res.test["y"].sum())
    assert pos == 323
    pi, pi_t = N_POS / N, pos / N_TEST
    w = res.test_weights.loc[res.test.index]
    # importance weights of a share-raised test set: w+ = pi / pi_t, w- = (1 - pi) / (1 - pi_t)
    np.testing.assert_allclose(w[res.test["y"] == 1], pi / pi_t)
    np.testing.assert_allclose(w[res.test["y"] == 0], (1 - pi) / (1 - pi_t))
    assert pi / pi_t == pytest.approx(0.7802, abs=1e-4)
    # reweighted test composition equals the population share
    assert float((w * res.test["y"]).sum() / w.sum()) == pytest.approx(pi)


def test_degraded_branch_raises_by_default(fraud):
    # 8 regions x 323 = 2,584 positives needed, only ~157 per region exist
    with pytest.raises(ValueError, match=r"n_min cannot be met for \(1, 0\): n_min=323, but the key has 1\d\d rows"):
        dual_constraint_split(fraud, label="y", groups="region", test_size=N_TEST, n_min=323)


def test_degraded_branch_on_request(fraud):
    with pytest.warns(PrecisionLimitedWarning, match="precision limited"):
        res = dual_constraint_split(
            fraud, label="y", groups="region", test_size=N_TEST, n_min=323, on_infeasible="degrade"
        )
    assert res.branch == "degraded"
    assert all(d.branch == "degraded" for d in res.decisions.values())
    assert len(res.decisions) == 8
    # the degraded branch keeps the proportional split: about 252 positives in all (per-cell
    # rounding of 16 class-by-region cells moves it by a few), about 31 per region
    assert res.n_test == N_TEST
    assert abs(int(res.test["y"].sum()) - 252) <= 4
    per_region = res.test[res.test["y"] == 1].groupby("region").size()
    for r in range(8):
        rows = res.table.loc[(1, r), "rows"]
        assert per_region[r] == res.table.loc[(1, r), "test"]
        assert abs(per_region[r] - 0.2 * rows) < 1  # proportional, within rounding
    assert "precision limited" in res.report()


def test_no_under_fill_multiclass_dict(fraud):
    df = fraud.copy()
    df.loc[df.index[:6000], "y"] = 2  # a third class, 2% of rows
    res = _quiet(data=df, label="y", test_size=0.1, n_min={1: 100, 2: 700}, max_inflate=10)
    table = res.table
    got = res.test.groupby("y").size()
    for cls, need in [(1, 100), (2, 700)]:
        assert table.loc[cls, "test"] == got[cls]
        assert got[cls] >= need
    assert len(res.test) == res.n_test
    assert set(res.decisions) == {1, 2}


def test_halfwidth_and_rate_give_n_min(fraud):
    # 1.96^2 * 0.7 * 0.3 / 0.05^2 = 322.7 -> 323 for rate 0.70, half-width 0.05 -> the grow_test figure above
    res = _quiet(data=fraud, label="y", test_size=N_TEST, halfwidth=0.05, rate=0.7)
    assert res.table.loc[1, "n_min"] == 323
    assert res.n_test == 76_905


def test_order_independence_and_reproducibility(fraud):
    a = _quiet(data=fraud, label="y", groups="region", test_size=0.2, n_min=20)
    shuffled = fraud.sample(frac=1.0, random_state=5)
    b = _quiet(data=shuffled, label="y", groups="region", test_size=0.2, n_min=20)
    assert a.test.index.sort_values().equals(b.test.index.sort_values())
    again = _quiet(data=fraud, label="y", groups="region", test_size=0.2, n_min=20)
    assert a.test.index.equals(again.test.index)
    pd.testing.assert_series_equal(a.test_weights.sort_index(), b.test_weights.sort_index())


def test_seed_sensitivity_and_randomness(fraud):
    a = _quiet(data=fraud, label="y", test_size=0.2, random_seed=1)
    b = _quiet(data=fraud, label="y", test_size=0.2, random_seed=2)
    overlap = len(a.test.index.intersection(b.test.index)) / len(a.test)
    # independent 20% samples overlap by about 20%
    assert overlap == pytest.approx(0.2, abs=0.01)
    # the test rows are a uniform sample of ids: their mean id is N/2 within 4 standard errors
    ids = a.test.index.to_numpy()
    se = np.sqrt((N**2 / 12) / len(ids) * (1 - len(ids) / N))
    assert abs(ids.mean() - (N - 1) / 2) < 4 * se
    # and independent of x (a feature): its test mean is close to 0
    assert abs(a.test["x"].mean()) < 4 / np.sqrt(len(ids))


def test_string_ids_and_id_column():
    rng = np.random.default_rng(3)
    n = 5000
    df = pd.DataFrame({"rid": [f"row-{i:05d}" for i in rng.permutation(n)], "y": rng.random(n) < 0.1})
    a = _quiet(data=df, label="y", id_column="rid", n_min=150)
    b = _quiet(data=df.iloc[::-1].set_index("rid"), label="y", n_min=150)
    assert sorted(a.test["rid"]) == sorted(b.test.index)
    assert int(a.test["y"].sum()) == 150


def test_merge_rare_cells(fraud):
    df = fraud.copy()
    df["region"] = df["region"].astype(str)
    rare = df.index[(df["y"] == 1) & (df["region"].isin(["6", "7"]))]
    df.loc[rare[::2], "region"] = "islands"  # a tiny region: ~150 rows of each class? only positives
    res = _quiet(data=df, label="y", groups="region", test_size=0.2, merge_below=200, n_min=20, on_infeasible="degrade")
    assert (1, "islands") in res.merged
    assert (1, "other") in res.table.index
    # merged cells are counted together: their rows sum to the other cell's rows
    cells = df.groupby(["y", "region"]).size()
    assert res.table.loc[(1, "other"), "rows"] == sum(cells[c] for c in res.merged if c[0] == 1)
    assert "Merged into 'other'" in res.report()


def test_errors_name_the_problem(fraud):
    dup = fraud.iloc[:100].copy()
    dup.index = [0] * 100
    with pytest.raises(ValueError, match="unique row ids"):
        dual_constraint_split(dup, label="y")
    with pytest.raises(ValueError, match="label column 'nope'"):
        dual_constraint_split(fraud, label="nope")
    with pytest.raises(ValueError, match="on_infeasible"):
        dual_constraint_split(fraud, label="y", on_infeasible="hope")
    with pytest.raises(ValueError, match="max_inflate"):
        dual_constraint_split(fraud, label="y", max_inflate=0.5)
    with pytest.raises(TypeError, match="row ids must be integers or strings"):
        dual_constraint_split(fraud.set_index("x"), label="y")
    with pytest.raises(ValueError, match="neither a class nor a key"):
        dual_constraint_split(fraud, label="y", n_min={7: 10})


def test_report_names_branch_and_sizes(fraud):
    res = _quiet(data=fraud, label="y", test_size=N_TEST, n_min=323)
    text = str(res)
    assert "grow_test" in text and "76,905" in text and "requested 60,000" in text


@pytest.mark.parametrize(
    "kw",
    [
        {"n_min": 100},
        {"n_min": 300, "max_test_share": 0.21},
        {"n_min": 40, "groups": "g", "merge_below": 100, "on_infeasible": "degrade"},
    ],
)
def test_duckdb_equals_pandas(small, kw, tmp_path):
    import duckdb

    expected = _quiet(data=small, label="y", id_column="id", test_size=0.2, **kw)
    path = tmp_path / "rows.parquet"
    small.to_parquet(path)
    for source in (duckdb.from_df(small), str(path)):
        got = _quiet(data=source, label="y", id_column="id", test_size=0.2, **kw)
        test = got.test.df()
        train = got.train.df()
        assert sorted(test["id"]) == sorted(expected.test["id"])
        assert len(test) + len(train) == len(small)
        assert got.branch == expected.branch
        pd.testing.assert_frame_equal(got.table, expected.table)
        w = got.test_weights.df().set_index("id")["weight"].sort_index()
        w_pd = pd.Series(expected.test_weights.to_numpy(), index=expected.test["id"].to_numpy())
        np.testing.assert_allclose(w.to_numpy(), w_pd.sort_index().to_numpy())


def test_duckdb_needs_integer_id_column(small):
    import duckdb

    with pytest.raises(ValueError, match="id_column is required"):
        dual_constraint_split(duckdb.from_df(small), label="y")
    with pytest.raises(TypeError, match="must hold integers"):
        dual_constraint_split(duckdb.from_df(small), label="y", id_column="g")


def test_splitter_meets_n_min_and_matches_function(clf_data):
    X, y = clf_data
    cv = DualConstraintSplit(test_size=0.2, n_min=40, max_inflate=5)
    assert cv.get_n_splits() == 1
    ((train, test),) = list(cv.split(X, y))
    assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == len(y)
    assert y[test].sum() >= 40
    res = _quiet(data=pd.DataFrame({"y": y}), label="y", test_size=0.2, n_min=40)
    assert np.array_equal(np.sort(res.test.index.to_numpy()), test)


def test_cross_validate_and_grid_search(clf_data):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import recall_score
    from sklearn.model_selection import GridSearchCV, cross_validate

    X, y = clf_data
    cv = DualConstraintSplit(test_size=0.2, n_min=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReweightingWarning)
        out = cross_validate(LogisticRegression(), X, y, cv=cv, scoring="recall", return_indices=True)
        ((train, test),) = list(cv.split(X, y))
        model = LogisticRegression().fit(X[train], y[train])
        assert out["test_score"][0] == pytest.approx(recall_score(y[test], model.predict(X[test])))
        assert np.array_equal(out["indices"]["test"][0], test)

        rep = RepeatedDualConstraintSplit(n_repeats=3, test_size=0.2, n_min=40, random_seed=1)
        grid = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, cv=rep, scoring="recall").fit(X, y)
    assert rep.get_n_splits() == 3
    assert len([k for k in grid.cv_results_ if k.startswith("split") and k.endswith("_test_score")]) == 3
    tests = [tuple(t) for _, t in rep.split(X, y)]
    assert len(set(tests)) == 3  # different seeds per repeat
    assert tests == [tuple(t) for _, t in rep.split(X, y)]  # reproducible


@pytest.mark.filterwarnings("ignore::bayeseval.ReweightingWarning")
def test_splitter_groups_and_pandas_index(clf_data):
    X, y = clf_data
    g = np.arange(len(y)) % 3
    cv = DualConstraintSplit(test_size=0.2, n_min=15)
    ((_, test),) = list(cv.split(X, y, groups=g))
    for k in range(3):
        assert y[test][g[test] == k].sum() >= 15
    # with a DataFrame the index is the row id: shuffling rows gives the same rows
    frame = pd.DataFrame(X, index=np.arange(len(y)) * 3 + 1)
    perm = np.random.default_rng(1).permutation(len(y))
    ((_, t1),) = list(cv.split(frame, y))
    ((_, t2),) = list(cv.split(frame.iloc[perm], y[perm]))
    assert set(frame.index[t1]) == set(frame.iloc[perm].index[t2])


def test_splitter_validates_in_init():
    with pytest.raises(ValueError, match="on_infeasible"):
        DualConstraintSplit(on_infeasible="maybe")
    with pytest.raises(ValueError, match="n_repeats"):
        RepeatedDualConstraintSplit(n_repeats=0)
    cv = DualConstraintSplit(n_min=5, random_seed=3)
    assert cv.n_min == 5 and cv.random_seed == 3 and "n_min=5" in repr(cv)


def test_mixed_raise_and_degraded_warn_both(fraud):
    df = fraud.copy()
    df.loc[df.index[df["y"] == 0][:50], "y"] = 2  # a third class with only 50 rows
    with (
        pytest.warns(ReweightingWarning, match="re-calibrate"),
        pytest.warns(PrecisionLimitedWarning, match=r"2: \d+ test rows instead of 100"),
    ):
        res = dual_constraint_split(
            df, label="y", test_size=N_TEST, n_min={1: 323, 2: 100}, max_test_share=0.22, on_infeasible="degrade"
        )
    assert res.branch == "degraded"
    assert res.decisions[1].branch == "raise_share" and res.decisions[2].branch == "degraded"
    assert int((res.test["y"] == 1).sum()) == 323  # the feasible key is still met
    assert res.table.loc[2, "test"] == res.table.loc[2, "proportional"]


def test_split_refuses_a_fractional_class_column_naming_it():
    df = pd.DataFrame({"y": np.r_[np.zeros(90), np.full(10, 0.999999)]})
    with pytest.raises(ValueError, match=r"label column 'y' holds the fractional value 0\.999999"):
        dual_constraint_split(df, label="y", test_size=0.2, n_min=2)
    # integer-valued floats are the classes 0 and 1: 20 test rows, 10% of them positive (hand count)
    res = dual_constraint_split(df.round(), label="y", test_size=0.2, n_min=2)
    assert res.test["y"].value_counts().to_dict() == {0.0: 18, 1.0: 2}
