"""The one-pass count of 0/1 labels (conditional counts by stratum inside the engine) against a
hand-written count of the rows and against the confusion table's path, on random data with 1,000
strata: pandas frames large enough to be counted by DuckDB in place, Parquet paths and DuckDB
relations; missing values and labels outside 0/1 fall back to the confusion table and its messages."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

from bayeseval import tabulate
from bayeseval._backends.duckdb_backend import DuckDBBackend
from bayeseval._backends.interface import Backend
from bayeseval._backends.pandas_backend import DUCKDB_MIN_ROWS, PandasBackend
from tests.helpers import BY_HAND

ROWS = DUCKDB_MIN_ROWS + 20_000
STRATA = 1_000


def make_rows(seed: int, labels: str = "int8", rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.random(rows) < rng.uniform(0.05, 0.6)
    p = np.where(rng.random(rows) < 0.8, y, ~y)
    cast = {"int8": np.int8, "int64": np.int64, "bool": bool, "uint16": np.uint16}[labels]
    names = np.array([f"s{j:04d}" for j in rng.permutation(STRATA)], dtype=object)
    g = names[rng.integers(0, STRATA, rows)]
    return pd.DataFrame(
        {"g": pd.array(g, dtype="str"), "h": rng.integers(0, 3, rows), "y": y.astype(cast), "p": p.astype(cast)}
    )


def by_hand(df: pd.DataFrame, metric: str, pos: int, strata: list[str]) -> tuple[pd.Series, pd.Series]:
    y, p = df["y"].to_numpy().astype(np.int64), df["p"].to_numpy().astype(np.int64)
    trial, success = BY_HAND[metric](y, p, pos)
    work = df[strata].assign(_t=trial.astype(np.int64), _s=success.astype(np.int64))
    per = work.groupby(strata, sort=True)[["_s", "_t"]].sum()
    return per["_s"], per["_t"]


def confusion_path(monkeypatch, fn):
    """``fn()`` with the one-pass path switched off: the confusion table's count."""
    with monkeypatch.context() as m:
        m.setattr(PandasBackend, "binary_counts", Backend.binary_counts)
        m.setattr(DuckDBBackend, "binary_counts", Backend.binary_counts)
        return fn()


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """The same rows as a pandas frame, a Parquet file and a DuckDB relation, for three label dtypes."""
    out = {}
    tmp = tmp_path_factory.mktemp("binary")
    for seed, labels in enumerate(["int8", "bool", "int64"]):
        df = make_rows(seed, labels)
        path = str(tmp / f"rows_{labels}.parquet")
        df.to_parquet(path)
        out[labels] = (df, path)
    return out


def engines(df: pd.DataFrame, path: str) -> dict:
    con = duckdb.connect()
    return {"pandas": df, "parquet": path, "relation": con.read_parquet(path)}


@pytest.mark.parametrize("labels", ["int8", "bool", "int64"])
@pytest.mark.parametrize("engine", ["pandas", "parquet", "relation"])
def test_one_pass_counts_match_a_hand_count_and_the_confusion_table(sources, labels, engine, monkeypatch):
    df, path = sources[labels]
    data = engines(df, path)[engine]
    calls = []
    original = {PandasBackend: PandasBackend.binary_counts, DuckDBBackend: DuckDBBackend.binary_counts}

    def spy(cls):
        def counted(self, query):
            out = original[cls](self, query)
            calls.append(out is not None)
            return out

        return counted

    cases = [
        ("error_rate", None),
        ("accuracy", None),
        ("recall", None),
        ("precision", 1),
        ("fpr", None),
        ("specificity", 0),
        ("npv", 1.0),
        ("fnr", True),
        ("selection_rate", 0),
    ]
    # every metric on every engine, a third of them per label dtype (the hand count is the slow part)
    shift = ["int8", "bool", "int64"].index(labels) + ["pandas", "parquet", "relation"].index(engine)
    for metric, pos_label in cases[shift % 3 :: 3]:
        pos = 1 if pos_label is None else int(pos_label)
        with monkeypatch.context() as m:
            m.setattr(PandasBackend, "binary_counts", spy(PandasBackend))
            m.setattr(DuckDBBackend, "binary_counts", spy(DuckDBBackend))
            got = tabulate(data, y_true="y", y_pred="p", strata="g", metric=metric, pos_label=pos_label)
        assert calls.pop() is True, "the one-pass path was not taken"
        s, t = by_hand(df, metric, pos, ["g"])
        assert got.successes.to_numpy().tolist() == s.to_numpy().tolist(), metric
        assert got.trials.to_numpy().tolist() == t.to_numpy().tolist(), metric
        assert got.strata.tolist() == s.index.tolist()
        old = confusion_path(
            monkeypatch,
            lambda metric=metric, pos_label=pos_label: tabulate(
                data, y_true="y", y_pred="p", strata="g", metric=metric, pos_label=pos_label
            ),
        )
        pd.testing.assert_series_equal(got.successes, old.successes)
        pd.testing.assert_series_equal(got.trials, old.trials)
        assert got.metric == old.metric


@pytest.mark.parametrize("engine", ["pandas", "parquet"])
def test_two_strata_columns_and_none(sources, engine, monkeypatch):
    df, path = sources["int8"]
    data = engines(df, path)[engine]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a stratum without positives
        got = tabulate(data, y_true="y", y_pred="p", strata=["g", "h"], metric="recall")
    s, t = by_hand(df, "recall", 1, ["g", "h"])
    assert got.strata.names == ["g", "h"]
    assert got.strata.tolist() == s.index.tolist()
    assert got.successes.tolist() == s.tolist() and got.trials.tolist() == t.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = confusion_path(
            monkeypatch, lambda: tabulate(data, y_true="y", y_pred="p", strata=["g", "h"], metric="recall")
        )
    pd.testing.assert_series_equal(got.successes, old.successes)
    pd.testing.assert_series_equal(got.trials, old.trials)
    whole = tabulate(data, y_true="y", y_pred="p", metric="error_rate")
    assert whole.strata.tolist() == ["all"] and whole.strata.name == "stratum"
    assert whole.successes.tolist() == [int((df["y"] != df["p"]).sum())] and whole.trials.tolist() == [len(df)]
    old = confusion_path(monkeypatch, lambda: tabulate(data, y_true="y", y_pred="p", metric="error_rate"))
    pd.testing.assert_series_equal(whole.successes, old.successes)
    pd.testing.assert_series_equal(whole.trials, old.trials)


def _message(fn) -> str:
    with pytest.raises(ValueError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()
    return str(info.value)


@pytest.mark.parametrize("engine", ["pandas", "parquet"])
def test_missing_values_and_other_labels_give_the_confusion_tables_counts_and_messages(engine, tmp_path, monkeypatch):
    df = make_rows(7, "int8")
    cases = {}
    # a missing stratum value
    missing_stratum = df.copy()
    missing_stratum.loc[[5, 17, 900], "g"] = None
    cases["stratum"] = missing_stratum
    # labels 0, 1 and 2: one-vs-rest over three classes
    three = df.copy()
    three.loc[three.index[::7], "p"] = 2
    cases["three"] = three
    # a negative label
    negative = df.copy()
    negative.loc[[3], "y"] = -1
    cases["negative"] = negative
    if engine == "parquet":
        # a missing label (NULL in an integer column: possible in Parquet, not in a NumPy int8 column)
        missing_label = df.astype({"y": "Int8"})
        missing_label.loc[[2, 4], "y"] = pd.NA
        cases["label"] = missing_label
    for name, frame in cases.items():
        if engine == "parquet":
            data = str(tmp_path / f"{name}.parquet")
            frame.to_parquet(data)
        else:
            data = frame
        for metric, pos_label in [("error_rate", None), ("recall", 2)]:

            def run(metric=metric, pos_label=pos_label, data=data):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return tabulate(data, y_true="y", y_pred="p", strata="g", metric=metric, pos_label=pos_label)

            try:
                got = run()
            except ValueError:
                assert _message(run) == _message(lambda run=run: confusion_path(monkeypatch, run))
                continue
            old = confusion_path(monkeypatch, run)
            pd.testing.assert_series_equal(got.successes, old.successes)
            pd.testing.assert_series_equal(got.trials, old.trials)
    message = _message(
        lambda: tabulate(cases["stratum"] if engine == "pandas" else data, y_true="y", y_pred="p", strata="g")
    )
    if engine == "pandas":
        assert "strata column 'g' has missing values in 3 rows" in message
    else:
        assert "y_true column 'y' has missing labels in 2 rows" in message
    message = _message(
        lambda: tabulate(
            cases["negative"] if engine == "pandas" else str(tmp_path / "negative.parquet"),
            y_true="y",
            y_pred="p",
            strata="g",
            metric="recall",
            pos_label=2,
        )
    )
    assert "pos_label 2 is neither a label of y_true 'y'" in message


@pytest.mark.parametrize("metric", ["error_rate", "accuracy"])
def test_clustered_label_units_in_sql_match_the_rows_for_text_labels(tmp_path, metric):
    # the units' SQL writes "every row a trial, success when the labels are (un)equal" as two comparisons
    from bayeseval import Design

    rng = np.random.default_rng(3)
    n = 3_000
    item = rng.integers(0, 400, n)
    classes = np.array(["cat", "dog", "bird"], dtype=object)
    df = pd.DataFrame(
        {"g": pd.array(np.array(["a", "b", "c"], dtype=object)[item % 3], dtype="str"), "item": item}
    ).assign(y=classes[rng.integers(0, 3, n)], p=classes[rng.integers(0, 3, n)])
    path = str(tmp_path / "text.parquet")
    df.to_parquet(path)
    got = tabulate(path, y_true="y", y_pred="p", strata="g", metric=metric, design=Design(cluster="item"))
    right = (df["y"] == df["p"]).to_numpy()
    ok = right if metric == "accuracy" else ~right
    per = df.assign(ok=ok.astype(int)).groupby(["g", "item"])["ok"].agg(["sum", "size"])
    hist = per.groupby(["g", "sum", "size"]).size()
    want = {(g, float(s), int(t)): int(u) for (g, s, t), u in hist.items()}
    units = got.units
    have = {
        (g, float(s), int(t)): int(u)
        for g, s, t, u in zip(units["g"], units["unit_successes"], units["unit_trials"], units["units"], strict=True)
    }
    assert have == want
    assert got.successes.tolist() == df.assign(ok=ok.astype(int)).groupby("g")["ok"].sum().tolist()


def test_strata_of_other_types_keep_the_confusion_tables_index_and_order(tmp_path, monkeypatch):
    # integers, booleans, timestamps, non-ASCII text and two columns: same labels, dtypes and order
    rng = np.random.default_rng(5)
    n = ROWS
    text = np.array(["é", "e", "Z", "a", "ä", "10", "9"], dtype=object)
    df = pd.DataFrame(
        {
            "i32": rng.integers(-500, 500, n).astype(np.int32),
            "b": rng.random(n) < 0.5,
            "d": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D"),
            "s": pd.array(text[rng.integers(0, len(text), n)], dtype="str"),
            "y": (rng.random(n) < 0.4).astype(np.int16),
            "p": (rng.random(n) < 0.4).astype(np.uint8),
        }
    )
    path = str(tmp_path / "types.parquet")
    df.to_parquet(path)
    for strata in ["i32", "b", "d", "s", ["s", "i32"], ["b", "d"], ["i32", "b"]]:
        for data in (df, path):
            kw = {"y_true": "y", "y_pred": "p", "strata": strata, "metric": "precision"}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a few strata without predicted positives
                got = tabulate(data, **kw)
                old = confusion_path(monkeypatch, lambda data=data, kw=kw: tabulate(data, **kw))
            pd.testing.assert_series_equal(got.successes, old.successes)
            pd.testing.assert_series_equal(got.trials, old.trials)
            s, t = by_hand(df, "precision", 1, [strata] if isinstance(strata, str) else strata)
            assert got.strata.tolist() == s.index.tolist()
            assert got.successes.tolist() == s.tolist() and got.trials.tolist() == t.tolist()


@pytest.mark.parametrize("odd", [-1, 2])
def test_integer_strata_with_a_label_outside_zero_one_count_as_the_confusion_table(odd, monkeypatch):
    df = make_rows(11, "int64").assign(h=lambda d: d["h"] * 1_000 + np.arange(len(d)) % 700)
    df.loc[[10, 20], "p"] = odd
    for metric, pos_label in [("error_rate", None), ("recall", 1), ("accuracy", None)]:
        kw = {"y_true": "y", "y_pred": "p", "strata": "h", "metric": metric, "pos_label": pos_label}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = tabulate(df, **kw)
            old = confusion_path(monkeypatch, lambda kw=kw: tabulate(df, **kw))
        pd.testing.assert_series_equal(got.successes, old.successes)
        pd.testing.assert_series_equal(got.trials, old.trials)
        wrong = df["y"] != df["p"]
        if metric == "error_rate":
            assert got.successes.tolist() == wrong.groupby(df["h"]).sum().tolist()
