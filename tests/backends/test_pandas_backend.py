"""tabulate on in-memory pandas frames: the chunked small-code count (booleans, small integers,
categoricals), the DuckDB scan (large frames of other dtypes) and the factorize path (small frames)
each give Counts identical to a hand-written pandas filter-then-groupby, for every metric, and refuse
the same bad inputs with the same messages.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayeseval
from bayeseval._backends import pandas_backend

METRICS = ["error_rate", "accuracy", "recall", "precision", "fpr", "specificity", "npv"]


def reference(df, strata, metric, pos):
    """Successes and trials per stratum written out by hand (filter the trial rows, then group)."""
    y, p = df["y"], df["p"]
    trial = {
        "error_rate": y == y,
        "accuracy": y == y,
        "recall": y == pos,
        "precision": p == pos,
        "fpr": y != pos,
        "specificity": y != pos,
        "npv": p != pos,
    }[metric]
    success = {
        "error_rate": y != p,
        "accuracy": y == p,
        "recall": p == pos,
        "precision": y == pos,
        "fpr": p == pos,
        "specificity": p != pos,
        "npv": y != pos,
    }[metric] & trial
    keys = [df[c] for c in strata]
    out = pd.DataFrame(
        {
            "successes": success.astype(np.int64).groupby(keys, observed=False).sum(),
            "trials": trial.astype(np.int64).groupby(keys, observed=False).sum(),
        }
    )
    return out


def _frame(kind, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "int8_str":
        g = pd.Series(rng.choice(["b", "a", "c"], n), dtype="str")
        y = rng.integers(0, 2, n).astype(np.int8)
        return pd.DataFrame({"g": g, "y": y, "p": np.where(rng.random(n) < 0.2, 1 - y, y).astype(np.int8)}), 1
    if kind == "bool_float_strata":
        y = rng.random(n) < 0.3
        return pd.DataFrame({"g": rng.integers(0, 4, n) / 2, "y": y, "p": rng.random(n) < 0.3}), True
    if kind == "uint64_int16":
        y = rng.integers(-1, 1, n).astype(np.int16)
        return pd.DataFrame(
            {
                "g": rng.integers(0, 3, n).astype(np.uint64) + np.uint64(2**63 + 5),
                "y": y,
                "p": np.where(rng.random(n) < 0.3, -1 - y, y),
            }
        ), -1
    if kind == "strings":
        lab = np.array(["yes", "no"])
        return pd.DataFrame(
            {
                "g": rng.integers(0, 3, n).astype(np.uint8),
                "y": pd.Series(lab[rng.integers(0, 2, n)], dtype="string"),
                "p": pd.Series(lab[rng.integers(0, 2, n)], dtype="string"),
            }
        ), "yes"
    raise AssertionError(kind)


def _tab(df, strata, metric, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayeseval.EmptyStratumWarning)
        return bayeseval.tabulate(df, y_true="y", y_pred="p", strata=strata, metric=metric, **kw)


@pytest.mark.parametrize("kind", ["int8_str", "bool_float_strata", "uint64_int16", "strings"])
@pytest.mark.parametrize("metric", METRICS)
def test_counts_equal_hand_written_pandas(path, kind, metric):
    df, pos = _frame(kind)
    kw = {"pos_label": pos} if pos not in (1, True) and metric not in ("error_rate", "accuracy") else {}
    counts = _tab(df, "g", metric, **kw)
    ref = reference(df, ["g"], metric, pos)
    np.testing.assert_array_equal(counts.successes.to_numpy(), ref["successes"].to_numpy())
    np.testing.assert_array_equal(counts.trials.to_numpy(), ref["trials"].to_numpy())
    assert list(counts.successes.index) == list(ref.index)
    assert counts.successes.index.dtype == df["g"].dtype


@pytest.mark.parametrize("metric", METRICS)
def test_categorical_and_integer_strata_keep_unused_categories(path, metric):
    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame(
        {
            "g": pd.Categorical(rng.choice(["u", "v"], n), categories=["w", "v", "u"]),
            "h": rng.integers(0, 3, n),
            "y": rng.integers(0, 2, n),
            "p": rng.integers(0, 2, n),
        }
    )
    counts = _tab(df, ["g", "h"], metric)
    ref = reference(df, ["g", "h"], metric, 1)
    frame = counts.to_frame()
    assert list(frame.index) == list(ref.index)  # unused category "w" kept with zero trials
    np.testing.assert_array_equal(frame["successes"].to_numpy(), ref["successes"].to_numpy())
    np.testing.assert_array_equal(frame["trials"].to_numpy(), ref["trials"].to_numpy())


def test_one_vs_rest_classes_equal_reference(path):
    rng = np.random.default_rng(4)
    n = 3000
    df = pd.DataFrame(
        {"g": pd.Series(rng.choice(["a", "b"], n), dtype="str"), "y": rng.integers(0, 3, n), "p": rng.integers(0, 3, n)}
    )
    counts = _tab(df, "g", "recall")
    for cls in (0, 1, 2):
        ref = reference(df, ["g"], "recall", cls)
        got = counts.to_frame().xs(cls, level="class")
        np.testing.assert_array_equal(got["successes"].to_numpy(), ref["successes"].to_numpy())
        np.testing.assert_array_equal(got["trials"].to_numpy(), ref["trials"].to_numpy())


def test_paths_give_identical_counts_above_threshold():
    """A frame above the threshold is counted by DuckDB; the codes path gives the same Counts."""
    df, _ = _frame("int8_str", n=pandas_backend.DUCKDB_MIN_ROWS + 10, seed=5)
    for metric in METRICS:
        fast = _tab(df, "g", metric)
        ref = reference(df, ["g"], metric, 1)
        np.testing.assert_array_equal(fast.trials.to_numpy(), ref["trials"].to_numpy())
        np.testing.assert_array_equal(fast.successes.to_numpy(), ref["successes"].to_numpy())


def test_missing_stratum_refused_with_row_count(path):
    df, _ = _frame("int8_str")
    df.loc[[3, 9], "g"] = np.nan
    with pytest.raises(ValueError, match=r"strata column 'g' has missing values in 2 rows"):
        _tab(df, "g", "recall")


def test_missing_categorical_stratum_refused_with_row_count(path):
    rng = np.random.default_rng(6)
    df = pd.DataFrame(
        {
            "g": pd.Categorical(["a", None, "b", None, None] * 40),
            "y": rng.integers(0, 2, 200),
            "p": rng.integers(0, 2, 200),
        }
    )
    with pytest.raises(ValueError, match=r"strata column 'g' has missing values in 120 rows"):
        _tab(df, "g", "error_rate")


def test_missing_label_refused_with_row_count(path):
    df, _ = _frame("bool_float_strata")
    df["y"] = df["y"].astype(float)
    df.loc[7, "y"] = np.nan
    with pytest.raises(ValueError, match=r"y_true column 'y' has missing labels in 1 row "):
        _tab(df, "g", "error_rate")


def test_mixed_label_types_refused(path):
    df, _ = _frame("strings")
    df["p"] = np.arange(len(df)) % 2
    with pytest.raises(
        ValueError, match=r"y_true column 'y' \(dtype string\) holds string labels but y_pred column 'p'"
    ):
        _tab(df, "g", "error_rate")


def test_two_string_labels_need_pos_label(path):
    df, _ = _frame("strings")
    with pytest.raises(ValueError, match=r"metric 'recall' needs pos_label .*'no', 'yes'"):
        _tab(df, "g", "recall")
