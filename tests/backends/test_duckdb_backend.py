"""DuckDB counting path of bayeseval.tabulate: identical to the pandas path."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

from bayeseval import tabulate
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval._backends.duckdb_backend import sql_literal
from bayeseval._backends.interface import is_duckdb_source


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 3000
    df = pd.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "p": rng.integers(0, 2, n),
            "g": rng.choice(["north", "south", "o'hara"], n),
            "h": rng.integers(0, 3, n),
            "yc": rng.choice(["cat", "dog", "eel"], n),
            "pc": rng.choice(["cat", "dog", "eel"], n),
            "y3": rng.integers(0, 3, n),  # numeric multi-class labels
            "p3": rng.integers(0, 3, n),
            "yf": rng.integers(0, 2, n).astype(float),  # binary labels stored as floats
            "yb": rng.integers(0, 2, n).astype(bool),
            "pb": rng.integers(0, 2, n).astype(bool),
        }
    )
    # a stratum with no true positives: zero trials for recall
    df.loc[df["g"] == "o'hara", "y"] = 0
    return df


@pytest.fixture(scope="module")
def parquet(frame, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("duck") / "pred.parquet"
    frame.to_parquet(path)
    return str(path)


@pytest.fixture(scope="module")
def csv(frame, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("duck") / "pred.csv"
    frame[["y", "p", "h"]].to_csv(path, index=False)
    return str(path)


CASES = [
    {"metric": "error_rate"},
    {"metric": "accuracy", "strata": "g"},
    {"metric": "recall", "strata": "g"},
    {"metric": "recall", "strata": ["g", "h"]},
    {"metric": "precision", "strata": ["h", "g"], "pos_label": 0},
    {"metric": "npv", "strata": "h", "pos_label": 1},
    {"metric": "specificity", "y_true": "yb", "y_pred": "pb", "strata": "g"},
    # multi-class one-vs-rest: a `class` level is appended
    {"metric": "recall", "y_true": "yc", "y_pred": "pc", "strata": "g"},
    {"metric": "fpr", "y_true": "yc", "y_pred": "pc"},
    {"metric": "recall", "y_true": "y3", "y_pred": "p3", "strata": "g"},
    {"metric": "precision", "y_true": "yf", "y_pred": "p", "strata": "h"},
    {"metric": "recall", "y_true": "yb", "y_pred": "p"},
    {"metric": "recall", "y_true": "yc", "y_pred": "pc", "pos_label": "dog", "strata": ["h", "g"]},
]


def _both(frame, source, **kw):
    kw = {"y_true": "y", "y_pred": "p", **kw}
    with warnings.catch_warnings(record=True) as w_pd:
        warnings.simplefilter("always")
        expected = tabulate(frame, **kw)
    with warnings.catch_warnings(record=True) as w_db:
        warnings.simplefilter("always")
        got = tabulate(source, **kw)
    return expected, got, w_pd, w_db


def _noisy(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    p = rng.integers(0, 2, n)
    score = np.clip(np.where(p == 1, 0.8, 0.2) + rng.normal(0, 0.1, n), 0.01, 0.99)
    return pd.DataFrame(
        {"p": p, "yn": np.where(p == 1, 0.999999, 0.0), "score": score, "yf": p.astype(float), "yd": p.astype(float)}
    )


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_parquet_matches_pandas(frame, parquet, kw):
    expected, got, w_pd, w_db = _both(frame, parquet, **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())
    assert got.metric == expected.metric
    assert [str(w.message) for w in w_db] == [str(w.message) for w in w_pd]


@pytest.mark.parametrize("kw", CASES[:6], ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_relation_matches_pandas(frame, kw):
    rel = duckdb.from_df(frame)
    expected, got, _, _ = _both(frame, rel, **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())


def test_csv_matches_pandas(frame, csv):
    expected, got, _, _ = _both(frame[["y", "p", "h"]], csv, metric="recall", strata="h")
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())


def test_zero_trial_stratum_kept_and_warned(parquet, frame):
    with pytest.warns(EmptyStratumWarning, match="o'hara"):
        counts = tabulate(parquet, y_true="y", y_pred="p", strata="g", metric="recall")
    assert counts.trials["o'hara"] == 0
    assert list(counts.empty) == ["o'hara"]
    # the other strata add up to all true positives outside it
    assert counts.total_trials == int((frame["y"] == 1).sum())


def test_multiclass_counts_by_hand(frame, parquet):
    counts = tabulate(parquet, y_true="yc", y_pred="pc", metric="recall")
    for cls in ["cat", "dog", "eel"]:
        truth = frame["yc"] == cls
        assert counts.trials[("all", cls)] == truth.sum()
        assert counts.successes[("all", cls)] == (truth & (frame["pc"] == cls)).sum()


def test_glob_of_several_files(frame, tmp_path):
    frame.iloc[:1000].to_parquet(tmp_path / "part-0.parquet")
    frame.iloc[1000:].to_parquet(tmp_path / "part-1.parquet")
    expected = tabulate(frame, y_true="y", y_pred="p", strata="h", metric="error_rate")
    got = tabulate(str(tmp_path / "*.parquet"), y_true="y", y_pred="p", strata="h")
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())


def test_weights_passed_through(parquet):
    got = tabulate(parquet, y_true="y", y_pred="p", strata="h", weights=[0.2, 0.3, 0.5])
    assert got.weights.tolist() == [0.2, 0.3, 0.5]


def test_errors_name_the_problem(parquet, tmp_path):
    with pytest.raises(ValueError, match="strata column 'nope'"):
        tabulate(parquet, y_true="y", y_pred="p", strata="nope")
    df = pd.DataFrame({"y": [1.0, np.nan], "p": [1.0, 0.0]})
    path = tmp_path / "na.parquet"
    df.to_parquet(path)
    with pytest.raises(ValueError, match="'y' has missing labels"):
        tabulate(str(path), y_true="y", y_pred="p")
    with pytest.raises(TypeError, match="DuckDB relation"):
        tabulate(tmp_path / "x.json", y_true="y", y_pred="p")


def test_source_detection_and_literals():
    assert is_duckdb_source("a/b/*.parquet")
    assert is_duckdb_source("x.CSV")
    assert not is_duckdb_source("x.json")
    assert not is_duckdb_source(np.zeros(3))
    assert sql_literal("o'hara") == "'o''hara'"
    assert sql_literal(np.int64(3)) == "3"
    assert sql_literal(True) == "TRUE"


@pytest.mark.parametrize("source", ["relation", "parquet", "csv"])
def test_duckdb_refuses_scores_as_y_pred_naming_column_and_a_value(source, tmp_path):
    df = _noisy()
    data = duckdb.from_df(df) if source == "relation" else tmp_path / f"x.{source}"
    if source == "parquet":
        df.to_parquet(data)
    elif source == "csv":
        df.to_csv(data, index=False)
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value ([0-9.e-]+)") as err:
        tabulate(data, y_true="yf", y_pred="score")
    value = float(str(err.value).split("fractional value ")[1].split(",")[0])
    assert np.isclose(df["score"].to_numpy(), value, rtol=1e-12, atol=0).any()  # one of the scores
    assert "score=" in str(err.value)
    with pytest.raises(ValueError, match=r"y_true column 'yn' holds the fractional value 0\.999999"):
        tabulate(data, y_true="yn", y_pred="p")


def test_duckdb_integer_valued_float_and_decimal_labels_count_as_classes():
    df = _noisy()
    truth = df["p"].where(np.arange(len(df)) % 10 != 0, 1 - df["p"])  # 10% of rows wrong
    rel = duckdb.from_df(df.assign(yf=truth.astype(float))).project("yf, CAST(yf AS DECIMAL(4, 1)) AS yd, p")
    hand = int((truth != df["p"]).sum())
    for col in ("yf", "yd"):
        counts = tabulate(rel, y_true=col, y_pred="p")
        assert counts.total_successes == hand and counts.total_trials == len(df)


def test_duckdb_a_missing_float_label_is_missing_not_fractional():
    rel = duckdb.from_df(pd.DataFrame({"y": [0.0, 1.0, np.nan, 1.0], "p": [0, 1, 1, 1]}))
    with pytest.raises(ValueError, match=r"y_true column 'y' has missing labels in 1 row"):
        tabulate(rel, y_true="y", y_pred="p")
