"""Labels of two classes that are not 0/1 (class names such as "cat"/"dog", integers 1/2) with ``pos_label``,
counted in the engine's one aggregation (the labels compared with ``pos_label`` inside it): on every back end
(pandas counted by DuckDB in place, a Parquet path, a DuckDB relation, polars eager and lazy, pyarrow, Dask)
the Counts equal a hand count and those of the 0/1 recoding; labels the rules refuse (a ``pos_label`` no row
holds, a placeholder, spellings that differ in case, mixed types, missing labels) and a third class give the
confusion table's result or message, word for word."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

from bayeseval import tabulate
from bayeseval._backends import pandas_backend
from bayeseval._backends.duckdb_backend import DuckDBBackend
from bayeseval._backends.interface import Backend
from bayeseval._backends.narwhals_backend import NarwhalsBackend
from bayeseval._backends.pandas_backend import PandasBackend
from tests.backends.frames import ENGINES
from tests.helpers import BY_HAND

#: Dask warns that its narwhals support moves to a separate package: not ours to change
pytestmark = pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning")

METRICS = ["error_rate", "accuracy", "recall", "precision", "fpr", "specificity", "npv", "fnr", "selection_rate"]
BACKENDS = (PandasBackend, DuckDBBackend, NarwhalsBackend)
SOURCES = ["pandas", "parquet", "relation", *ENGINES]


def make_rows(seed: int, classes: tuple, n: int = 2000) -> pd.DataFrame:
    """Rows whose labels are the two ``classes`` (the first the positive), strata text and integers."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    p = np.where(rng.random(n) < 0.8, y, ~y)
    text = np.array(["é", "e", "Z", "a", "10", "9", "o'hara"], dtype=object)
    values = np.array(classes, dtype=object)
    dtype = "str" if isinstance(classes[0], str) else np.int64
    return pd.DataFrame(
        {
            "g": pd.array(text[rng.integers(0, len(text), n)], dtype="str"),
            "h": rng.integers(-3, 40, n),
            "y": pd.array(np.where(y, values[0], values[1]), dtype=dtype),
            "p": pd.array(np.where(p, values[0], values[1]), dtype=dtype),
        }
    )


def source(name: str, df: pd.DataFrame, tmp_path) -> object:
    if name == "pandas":
        return df
    if name in ("parquet", "relation"):
        path = str(tmp_path / f"rows_{id(df)}.parquet")
        df.to_parquet(path)
        return path if name == "parquet" else duckdb.connect().read_parquet(path)
    return ENGINES[name](df)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # strata without trials
        return fn()


def _message(fn) -> str:
    with pytest.raises(ValueError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()
    return str(info.value)


@pytest.fixture
def named_calls(monkeypatch):
    """The one-pass counts with ``positive`` that gave a table (their engines) and the confusion tables counted
    (``"confusion"``), in order; pandas frames of any size counted by DuckDB."""
    monkeypatch.setattr(pandas_backend, "DUCKDB_MIN_ROWS", 0)
    calls: list[str] = []
    for cls in BACKENDS:

        def counted(self, query, _original=cls.binary_counts):
            out = _original(self, query)
            if query.positive is not None and out is not None:
                calls.append(self.engine)
            return out

        def table(self, *args, _original=cls.confusion):
            calls.append("confusion")
            return _original(self, *args)

        monkeypatch.setattr(cls, "binary_counts", counted)
        monkeypatch.setattr(cls, "confusion", table)
    return calls


def one_pass(name: str, positive) -> bool:
    """Whether the labels are counted in one pass: not text in a DuckDB relation, whose own connection may
    compare text under another collation (the confusion table's path then counts them)."""
    return not (name == "relation" and isinstance(positive, str))


def recoded(df: pd.DataFrame, positive) -> pd.DataFrame:
    """The same rows with 0/1 labels: 1 where the label is ``positive``."""
    return df.assign(y=(df["y"] == positive).astype(np.int64), p=(df["p"] == positive).astype(np.int64))


def by_hand(df: pd.DataFrame, metric: str, positive, strata: list[str]) -> pd.DataFrame:
    y, p = df["y"].to_numpy(object), df["p"].to_numpy(object)
    trial, success = BY_HAND[metric](y, p, positive)
    work = df[strata].assign(successes=success.astype(np.int64), trials=trial.astype(np.int64))
    return work.groupby(strata, sort=True)[["successes", "trials"]].sum()


@pytest.mark.parametrize("name", SOURCES)
@pytest.mark.parametrize("classes", [("cat", "dog"), ("dog", "cat"), (2, 1), (1, 2)])
def test_two_classes_are_counted_in_one_pass_as_their_zero_one_recoding(name, classes, named_calls, tmp_path):
    df = make_rows(SOURCES.index(name), classes)
    data = source(name, df, tmp_path)
    positive = classes[0]
    shift = SOURCES.index(name) + [("cat", "dog"), ("dog", "cat"), (2, 1), (1, 2)].index(classes)
    for metric in METRICS[shift % 3 :: 3]:  # every metric on every source and label kind, a third each
        for strata in (["g"], ["h", "g"]):
            named_calls.clear()
            got = _quiet(
                lambda strata=strata, metric=metric: tabulate(
                    data, y_true="y", y_pred="p", strata=strata, metric=metric, pos_label=positive
                )
            )
            if one_pass(name, positive):
                assert named_calls and "confusion" not in named_calls, (name, metric, "the one pass was not taken")
            else:
                assert named_calls == ["confusion"], (name, metric)
            frame = got.to_frame()
            want = by_hand(df, metric, positive, strata)
            assert frame.index.tolist() == want.index.tolist(), (name, metric)
            assert frame["successes"].tolist() == want["successes"].tolist(), (name, metric)
            assert frame["trials"].tolist() == want["trials"].tolist(), (name, metric)
            zero_one = _quiet(
                lambda strata=strata, metric=metric: tabulate(
                    recoded(df, positive), y_true="y", y_pred="p", strata=strata, metric=metric
                )
            )
            pd.testing.assert_frame_equal(frame, zero_one.to_frame(), check_index_type=False)


@pytest.mark.parametrize("name", SOURCES)
def test_without_strata_and_one_class_only(name, named_calls, tmp_path):
    df = make_rows(11, ("cat", "dog"))
    data = source(name, df, tmp_path)
    got = _quiet(lambda: tabulate(data, y_true="y", y_pred="p", metric="recall", pos_label="cat"))
    assert (named_calls and "confusion" not in named_calls) if one_pass(name, "cat") else named_calls == ["confusion"]
    y, p = df["y"].to_numpy(object), df["p"].to_numpy(object)
    assert got.successes.tolist() == [int(((y == "cat") & (p == "cat")).sum())]
    assert got.trials.tolist() == [int((y == "cat").sum())]
    # every row "dog" and pos_label "dog": no row of the other class, still counted in one pass
    dogs = df.assign(y="dog", p="dog").astype({"y": "str", "p": "str"})
    named_calls.clear()
    got = _quiet(
        lambda: tabulate(
            source(name, dogs, tmp_path), y_true="y", y_pred="p", strata="g", pos_label="dog", metric="fnr"
        )
    )
    assert (named_calls and "confusion" not in named_calls) if one_pass(name, "dog") else named_calls == ["confusion"]
    assert got.successes.sum() == 0 and got.trials.sum() == len(df)


def _cases(df: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, object]]:
    """Frames and pos_labels the one pass declines: the confusion table's path then decides."""
    third = df.assign(p=np.where(np.arange(len(df)) % 9 == 0, "bird", df["p"])).astype({"p": "str"})
    missing = df.assign(y=df["y"].where(df.index != 5))
    placeholder = df.assign(y=np.where(np.arange(len(df)) % 50 == 0, "?", df["y"])).astype({"y": "str"})
    spelled = df.assign(y=np.where(df["y"] == "cat", "Cat", df["y"])).astype({"y": "str"})
    numbers = df.assign(p=(df["p"] == "cat").astype(np.int64))
    return {
        "absent": (df, "bird"),
        "near": (df, "Cat"),
        "number": (df, 1),
        "third": (third, "cat"),
        "missing": (missing, "cat"),
        "placeholder": (placeholder, "cat"),
        "spelled": (spelled, "cat"),
        "numbers": (numbers, "cat"),
    }


@pytest.mark.parametrize("name", [pytest.param(s, marks=pytest.mark.slow) if s == "dask" else s for s in SOURCES])
def test_labels_the_rules_refuse_give_the_confusion_tables_message(name, named_calls, tmp_path, monkeypatch):
    """Each case on the same source with the one pass switched off (today's confusion table) and on."""
    df = make_rows(5, ("cat", "dog"), n=600)
    confusion = {cls: cls.binary_counts for cls in BACKENDS}
    for case, (frame, pos_label) in _cases(df).items():
        data = source(name, frame, tmp_path)
        for metric in ("recall", "error_rate"):

            def run(data=data, metric=metric, pos_label=pos_label):
                return tabulate(data, y_true="y", y_pred="p", strata="g", metric=metric, pos_label=pos_label)

            with monkeypatch.context() as m:
                for cls in BACKENDS:
                    m.setattr(cls, "binary_counts", Backend.binary_counts)
                try:
                    expected, message = _quiet(run), None
                except ValueError as error:
                    expected, message = None, str(error)
            assert all(cls.binary_counts is confusion[cls] for cls in BACKENDS)
            named_calls.clear()
            if message is not None:
                assert _message(run) == message, (case, metric)
            else:
                pd.testing.assert_frame_equal(_quiet(run).to_frame(), expected.to_frame())
            assert named_calls[-1:] == ["confusion"], (case, metric, "the confusion table's rules did not decide")


def test_the_refused_cases_name_what_the_rules_name(tmp_path):
    """The messages compared above are the rules' own: each names its case."""
    df = make_rows(5, ("cat", "dog"), n=600)
    cases = _cases(df)
    expected = {
        "absent": "pos_label 'bird' is neither a label of y_true 'y' nor a prediction",
        "near": "did you mean pos_label='cat'?",
        "number": "pos_label 1 is a number but the labels in 'y' and 'p' are strings",
        "missing": "y_true column 'y' has missing labels in 1 row ",
        "placeholder": "holds ['?'] in 12 rows, a placeholder for a missing label",
        "spelled": "differ only in spaces or case ('Cat' vs 'cat')",
        "numbers": "holds string labels but y_pred column 'p'",
    }
    for case, text in expected.items():
        frame, pos_label = cases[case]
        data = pl_lazy(frame)
        message = _message(
            lambda data=data, pos_label=pos_label: tabulate(
                data, y_true="y", y_pred="p", strata="g", metric="recall", pos_label=pos_label
            )
        )
        assert text in message, (case, message)


def pl_lazy(df: pd.DataFrame):
    return ENGINES["polars_lazy"](df)
