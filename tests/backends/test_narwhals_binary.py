"""The narwhals back end's one-pass count of 0/1 labels (conditional sums by stratum in one aggregation of
the frame's own engine) against a hand count of the rows, the pandas frame's Counts and the confusion
table's path, for polars (eager and lazy), pyarrow and Dask frames; labels that are not 0/1 (another
class, a missing or a fractional value) give the pandas path's counts or its message."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import tabulate
from bayeseval._backends.interface import Backend
from bayeseval._backends.narwhals_backend import NarwhalsBackend
from tests.backends.frames import ENGINES, pl
from tests.helpers import BY_HAND

#: Dask warns that its narwhals support moves to a separate package: not ours to change
pytestmark = pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning")

CASES = [
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


def make_rows(seed: int, labels: str = "int8", n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    p = np.where(rng.random(n) < 0.8, y, ~y)
    cast = {"int8": np.int8, "int64": np.int64, "bool": bool, "uint16": np.uint16, "float64": np.float64}[labels]
    text = np.array(["é", "e", "Z", "a", "ä", "10", "9", "o'hara", "Ω"], dtype=object)
    return pd.DataFrame(
        {
            "g": pd.array(text[rng.integers(0, len(text), n)], dtype="str"),
            "h": rng.integers(-3, 40, n),
            "b": rng.random(n) < 0.5,
            "d": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 30, n), unit="D"),
            "f": rng.integers(0, 5, n) / 4,
            "y": y.astype(cast),
            "p": p.astype(cast),
        }
    )


def by_hand(df: pd.DataFrame, metric: str, pos: int, strata: list[str]) -> tuple[list, list, list]:
    """Strata, successes and trials of ``metric``, the rows filtered and grouped by hand."""
    y, p = df["y"].to_numpy().astype(np.int64), df["p"].to_numpy().astype(np.int64)
    trial, success = BY_HAND[metric](y, p, pos)
    if not strata:
        return ["all"], [int(success.sum())], [int(trial.sum())]
    per = df[strata].assign(_t=trial.astype(np.int64), _s=success.astype(np.int64)).groupby(strata, sort=True)
    sums = per[["_s", "_t"]].sum()
    return sums.index.tolist(), sums["_s"].tolist(), sums["_t"].tolist()


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # strata without trials
        return fn()


def one_pass(monkeypatch, fn) -> tuple[object, list[str]]:
    """``fn()`` and the counts it asked the back end for, in order: ``binary`` (a one-pass table, None
    not listed) and ``confusion`` (the confusion table, whose rules then decide)."""
    calls: list[str] = []
    binary, confusion = NarwhalsBackend.binary_counts, NarwhalsBackend.confusion

    def counted(self, query):
        out = binary(self, query)
        calls.extend(["binary"] if out is not None else [])
        return out

    def table(self, *args):
        calls.append("confusion")
        return confusion(self, *args)

    with monkeypatch.context() as m:
        m.setattr(NarwhalsBackend, "binary_counts", counted)
        m.setattr(NarwhalsBackend, "confusion", table)
        return _quiet(fn), calls


def confusion_path(monkeypatch, fn):
    """``fn()`` with the one-pass path switched off: the confusion table's count."""
    with monkeypatch.context() as m:
        m.setattr(NarwhalsBackend, "binary_counts", Backend.binary_counts)
        return _quiet(fn)


def _message(fn) -> str:
    with pytest.raises(ValueError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()
    return str(info.value)


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("labels", ["int8", "bool", "int64", "uint16", "float64"])
def test_one_pass_counts_match_a_hand_count_pandas_and_the_confusion_table(engine, labels, monkeypatch):
    df = make_rows(["int8", "bool", "int64", "uint16", "float64"].index(labels), labels)
    data = ENGINES[engine](df)
    shift = list(ENGINES).index(engine) + ["int8", "bool", "int64", "uint16", "float64"].index(labels)
    for metric, pos_label in CASES[shift % 3 :: 3]:  # every metric on every engine and label dtype, a third each

        def run(data=data, metric=metric, pos_label=pos_label):
            return tabulate(data, y_true="y", y_pred="p", strata="g", metric=metric, pos_label=pos_label)

        got, calls = one_pass(monkeypatch, run)
        assert calls == ["binary"], "the one-pass path was not taken"
        strata, s, t = by_hand(df, metric, 1 if pos_label is None else int(pos_label), ["g"])
        assert got.strata.tolist() == strata
        assert got.successes.tolist() == s and got.trials.tolist() == t, metric
        pd.testing.assert_frame_equal(got.to_frame(), _quiet(lambda run=run: run(df)).to_frame())
        pd.testing.assert_frame_equal(got.to_frame(), confusion_path(monkeypatch, run).to_frame())


@pytest.mark.parametrize("engine", list(ENGINES))
def test_strata_of_every_type_keep_the_pandas_index_and_order(engine, monkeypatch):
    # non-ASCII text (sorted by code point), integers, booleans, dates, fractions, two columns and none
    df = make_rows(5)
    data = ENGINES[engine](df)
    for strata in ["g", "h", "b", "d", "f", ["g", "h"], ["h", "g"], ["b", "d"], []]:

        def run(data=data, strata=strata):
            return tabulate(data, y_true="y", y_pred="p", strata=strata or None, metric="precision")

        got, calls = one_pass(monkeypatch, run)
        assert calls == ["binary"], strata
        keys = [strata] if isinstance(strata, str) else strata
        index, s, t = by_hand(df, "precision", 1, keys)
        assert got.strata.tolist() == index, strata
        assert got.successes.tolist() == s and got.trials.tolist() == t, strata
        pd.testing.assert_frame_equal(got.to_frame(), _quiet(lambda run=run: run(df)).to_frame())
        pd.testing.assert_frame_equal(got.to_frame(), confusion_path(monkeypatch, run).to_frame())


@pytest.mark.parametrize("labels", ["int8", "float64"])
def test_a_lazy_polars_frame_is_collected_once(labels, monkeypatch):
    """The count and the label checks in one scan: one collect of the aggregate (and none of the rows)."""
    df = make_rows(3, labels)
    collected = []
    original = pl.LazyFrame.collect

    def collect(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        collected.append(out.height)
        return out

    monkeypatch.setattr(pl.LazyFrame, "collect", collect)
    got = _quiet(lambda: tabulate(pl.from_pandas(df).lazy(), y_true="y", y_pred="p", strata="g", metric="recall"))
    # float labels: check_labels' scan for fractions (one aggregate row), then the count's
    assert collected == ([] if labels == "int8" else [1]) + [df["g"].nunique()]
    assert got.successes.tolist() == by_hand(df, "recall", 1, ["g"])[1]


@pytest.mark.parametrize("engine", list(ENGINES))
def test_labels_not_zero_one_give_the_pandas_counts_or_message(engine, monkeypatch):
    """A 2 in a 0/1 column, a negative label, missing labels or strata, fractions: the one-pass count
    declines (or is never tried) and the confusion table's path gives the pandas result or message."""
    df = make_rows(7)
    cases = {}
    cases["two"] = df.assign(p=np.where(np.arange(len(df)) % 7 == 0, 2, df["p"]).astype(np.int8))
    cases["negative"] = df.assign(y=np.where(np.arange(len(df)) == 3, -1, df["y"]).astype(np.int8))
    missing = df.astype({"y": "Int8"})
    missing.loc[[2, 4], "y"] = pd.NA
    cases["missing"] = missing
    cases["missing_float"] = df.astype({"p": float}).assign(p=lambda d: d["p"].where(d.index != 11))
    cases["stratum"] = df.assign(g=df["g"].where(~df.index.isin([5, 17, 900])))
    cases["fractional"] = df.astype({"p": float}).assign(p=lambda d: d["p"].where(d.index != 8, 0.73))
    for name, frame in cases.items():
        for metric, pos_label in [("error_rate", None), ("recall", None), ("recall", 2), ("accuracy", 1)]:

            def run(data, metric=metric, pos_label=pos_label):
                return tabulate(data, y_true="y", y_pred="p", strata="g", metric=metric, pos_label=pos_label)

            try:
                expected = _quiet(lambda run=run, frame=frame: run(frame))
            except ValueError:
                message = _message(lambda run=run, frame=frame: run(frame))
                assert _message(lambda run=run, frame=frame: run(ENGINES[engine](frame))) == message, name
                continue
            got, calls = one_pass(monkeypatch, lambda run=run, frame=frame: run(ENGINES[engine](frame)))
            assert calls[-1:] == ["confusion"], name  # declined: the counts are the confusion table's
            pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())
    assert "y_true column 'y' has missing labels in 2 rows" in _message(
        lambda: tabulate(ENGINES[engine](cases["missing"]), y_true="y", y_pred="p", strata="g")
    )
    assert "y_pred column 'p' has missing labels in 1 row " in _message(
        lambda: tabulate(ENGINES[engine](cases["missing_float"]), y_true="y", y_pred="p", strata="g")
    )
    assert "strata column 'g' has missing values in 3 rows" in _message(
        lambda: tabulate(ENGINES[engine](cases["stratum"]), y_true="y", y_pred="p", strata="g")
    )
    assert "y_pred column 'p' holds the fractional value 0.73" in _message(
        lambda: tabulate(ENGINES[engine](cases["fractional"]), y_true="y", y_pred="p", strata="g")
    )


def test_no_rows_and_categorical_strata_are_left_to_the_confusion_table(monkeypatch):
    df = make_rows(9)
    empty = pl.from_pandas(df.head(0))
    for strata in (None, "g"):
        message = _message(lambda strata=strata: tabulate(df.head(0), y_true="y", y_pred="p", strata=strata))
        assert _message(lambda strata=strata: tabulate(empty, y_true="y", y_pred="p", strata=strata)) == message
    # a categorical stratum keeps its unused levels in the confusion table's path: the one pass declines
    cat = pl.from_pandas(df).with_columns(pl.col("g").cast(pl.Categorical))
    got, calls = one_pass(monkeypatch, lambda: tabulate(cat, y_true="y", y_pred="p", strata="g", metric="recall"))
    assert calls == ["confusion"]
    index, s, t = by_hand(df, "recall", 1, ["g"])
    have = got.to_frame()[["successes", "trials"]].astype(np.int64)
    have.index = have.index.astype("str")
    want = pd.DataFrame({"successes": s, "trials": t}, index=pd.Index(index, name="g"))
    pd.testing.assert_frame_equal(have.sort_index(), want, check_index_type=False)  # in the categories' order
