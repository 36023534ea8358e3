"""Tests of ``bayeseval.counts.counts``."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import confusion_matrix, precision_score, recall_score

import bayeseval
from bayeseval import Counts, tabulate
from bayeseval._api.warnings import BayesevalWarning, EmptyStratumWarning
from bayeseval.counts import ProxyCounts
from bayeseval.counts.counts import as_counts, confusion_counts, stratum_labels
from tests.helpers import (
    FAST,
    _engines,
    _names,
    _pool,
    _raises,
    _small,
    assert_raises_naming,
    bad_counts,
    count_arrays,
)


@pytest.fixture
def binary_frame() -> pd.DataFrame:
    rng = np.random.default_rng(42)
    n = 3000
    g = rng.choice(["north", "south", "east"], n, p=[0.5, 0.3, 0.2])
    region = rng.choice(["r1", "r2"], n)
    y = (rng.random(n) < np.select([g == "north", g == "south"], [0.2, 0.4], 0.1)).astype(int)
    acc = np.select([g == "north", g == "south"], [0.9, 0.8], 0.7)
    p = np.where(rng.random(n) < acc, y, 1 - y)
    return pd.DataFrame({"y": y, "p": p, "g": g, "region": region}, index=np.arange(n) + 10_000)


def _confusion(frame: pd.DataFrame) -> tuple[int, int, int, int]:
    tn, fp, fn, tp = confusion_matrix(frame["y"], frame["p"], labels=[0, 1]).ravel()
    return int(tn), int(fp), int(fn), int(tp)


def _scored_frame(n: int = 2000) -> pd.DataFrame:
    """A good classifier: y_pred = y_true on 95% of rows, and its score for class 1."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.95, y, 1 - y)
    score = np.clip(np.where(p == 1, 0.75, 0.25) + rng.normal(0, 0.1, n), 0.01, 0.99)
    return pd.DataFrame({"y": y, "p": p, "score": score, "g": rng.choice(["a", "b"], n)})


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


def _nan_relation(kind: str):
    con = duckdb.connect()
    value = {"nan": "'NaN'::DOUBLE", "null": "NULL::DOUBLE"}[kind]
    return con.sql(
        f"SELECT * FROM (VALUES (1.0, 1, 'a'), ({value}, 0, 'a'), ({value}, 1, 'b'), (0.0, 0, 'b')) t(y, p, g)"
    )


@st.composite
def frames(draw):
    k = draw(st.integers(1, 200))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=k, max_size=k)))
    p = np.array(draw(st.lists(st.integers(0, 1), min_size=k, max_size=k)))
    g = np.array(draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=k, max_size=k)))
    return pd.DataFrame({"y": y, "p": p, "g": g})


def test_binary_metrics_per_group_match_sklearn(binary_frame: pd.DataFrame) -> None:
    for name in ("recall", "precision", "accuracy", "error_rate", "fpr", "specificity", "npv"):
        c = tabulate(binary_frame, y_true="y", y_pred="p", strata="g", metric=name)
        assert c.metric == name
        assert list(c.strata) == ["east", "north", "south"]
        for grp, part in binary_frame.groupby("g"):
            tn, fp, fn, tp = _confusion(part)
            # reference: scikit-learn confusion_matrix / recall_score / precision_score
            expected = {
                "recall": (tp, tp + fn),
                "precision": (tp, tp + fp),
                "accuracy": (tp + tn, len(part)),
                "error_rate": (fp + fn, len(part)),
                "fpr": (fp, fp + tn),
                "specificity": (tn, fp + tn),
                "npv": (tn, tn + fn),
            }[name]
            assert (c.successes[grp], c.trials[grp]) == expected, (name, grp)
            if name == "recall":
                assert c.rates[grp] == pytest.approx(recall_score(part["y"], part["p"]))
            if name == "precision":
                assert c.rates[grp] == pytest.approx(precision_score(part["y"], part["p"]))
            if name == "accuracy":
                assert c.rates[grp] == pytest.approx((part["y"] == part["p"]).mean())


def test_multiclass_one_vs_rest_recall_and_precision() -> None:
    rng = np.random.default_rng(7)
    n = 1200
    y = rng.choice(["cat", "dog", "eel"], n, p=[0.5, 0.3, 0.2])
    p = np.where(rng.random(n) < 0.75, y, rng.choice(["cat", "dog", "eel"], n))
    g = rng.choice(["a", "b"], n)
    df = pd.DataFrame({"y": y, "p": p, "g": g})
    rec = tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall")
    prec = tabulate(df, y_true="y", y_pred="p", strata="g", metric="precision")
    assert rec.strata.names == ["g", "class"]
    classes = ["cat", "dog", "eel"]
    for grp, part in df.groupby("g"):
        # reference: sklearn per-class (average=None) recall and precision
        r_ref = recall_score(part["y"], part["p"], labels=classes, average=None)
        p_ref = precision_score(part["y"], part["p"], labels=classes, average=None)
        for cls, r, pr in zip(classes, r_ref, p_ref, strict=True):
            assert rec.rates[(grp, cls)] == pytest.approx(r)
            assert prec.rates[(grp, cls)] == pytest.approx(pr)
    # without strata: one "all" stratum per class
    whole = tabulate(df, y_true="y", y_pred="p", metric="recall")
    r_ref = recall_score(df["y"], df["p"], labels=classes, average=None)
    np.testing.assert_allclose(whole.rates.to_numpy(), r_ref)


def test_pos_label_choice(binary_frame: pd.DataFrame) -> None:
    c = tabulate(binary_frame, y_true="y", y_pred="p", metric="recall", pos_label=0)
    assert c.rates.iloc[0] == pytest.approx(recall_score(binary_frame["y"], binary_frame["p"], pos_label=0))


def test_several_stratum_columns(binary_frame: pd.DataFrame) -> None:
    c = tabulate(binary_frame, y_true="y", y_pred="p", strata=["g", "region"], metric="error_rate")
    assert c.strata.names == ["g", "region"] and len(c) == 6
    assert c.total_trials == len(binary_frame)
    part = binary_frame[(binary_frame.g == "south") & (binary_frame.region == "r2")]
    assert c.successes[("south", "r2")] == int((part.y != part.p).sum())
    assert stratum_labels(c.strata)[0] == "east | r1"


def test_zero_trial_strata_are_kept_and_flagged() -> None:
    df = pd.DataFrame(
        {
            "y": [1, 1, 0, 0, 0],
            "p": [1, 0, 0, 1, 0],
            "g": pd.Categorical(["a", "a", "b", "b", "b"], categories=["a", "b", "c"]),
        }
    )
    with pytest.warns(EmptyStratumWarning, match="no trials for recall") as rec:
        c = tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall")
    assert "'b'" in str(rec[0].message)
    # "b" has rows but no positives; "c" is a declared category with no rows at all
    assert list(c.strata) == ["a", "b", "c"]
    assert c.trials.tolist() == [2, 0, 0]
    assert list(c.empty) == ["b", "c"]
    assert np.isnan(c.rates["b"]) and c.rates["a"] == 0.5


def test_no_warning_without_empty_strata(binary_frame: pd.DataFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tabulate(binary_frame, y_true="y", y_pred="p", strata="g", metric="recall")


def test_to_frame_and_to_xarray_round_trip(binary_frame: pd.DataFrame) -> None:
    c = tabulate(binary_frame, y_true="y", y_pred="p", strata=["g", "region"], metric="recall")
    c = c.with_weights(np.full(6, 1 / 6))
    frame = c.to_frame()
    assert list(frame.columns) == ["successes", "trials"]
    pd.testing.assert_series_equal(frame["successes"], c.successes, check_names=False)
    ds = c.to_xarray()
    assert ds.attrs["metric"] == "recall"
    assert list(ds["stratum"].values) == stratum_labels(c.strata)
    # rebuild Counts from the Dataset: the level coordinates give back the MultiIndex
    index = pd.MultiIndex.from_arrays([ds["g"].values, ds["region"].values], names=["g", "region"])
    back = Counts.from_arrays(
        ds["successes"].values,
        ds["trials"].values,
        strata=index,
        weights=ds["weights"].values,
        metric=ds.attrs["metric"],
    )
    pd.testing.assert_frame_equal(back.to_frame(), c.to_frame())
    pd.testing.assert_series_equal(back.weights, c.weights)


def test_to_xarray_multiclass_keeps_joined_labels() -> None:
    # multi-class without strata gives levels ("stratum", "class"); the "stratum" level must
    # not overwrite the dimension's joined labels
    df = pd.DataFrame({"y": [0, 1, 2, 2], "p": [0, 1, 1, 2]})
    c = tabulate(df, y_true="y", y_pred="p", metric="recall")
    ds = c.to_xarray()
    assert list(ds["stratum"].values) == ["all | 0", "all | 1", "all | 2"]
    assert ds["class"].values.tolist() == [0, 1, 2]
    assert ds["successes"].values.tolist() == [1, 1, 1]
    assert ds["trials"].values.tolist() == [1, 1, 2]


def test_single_index_round_trip() -> None:
    c = Counts.from_arrays([3, 10], [40, 120], strata=["a", "b"], weights={"b": 0.25, "a": 0.75})
    ds = c.to_xarray()
    back = Counts.from_arrays(
        ds["successes"].values, ds["trials"].values, strata=list(ds["stratum"].values), weights=ds["weights"].values
    )
    assert back.to_frame().equals(c.to_frame())
    assert back.weights.tolist() == [0.75, 0.25]


def test_tabulate_errors(binary_frame: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="y_true column 'truth'"):
        tabulate(binary_frame, y_true="truth", y_pred="p")
    with pytest.raises(ValueError, match="strata column 'zone'"):
        tabulate(binary_frame, y_true="y", y_pred="p", strata="zone")
    with pytest.raises(ValueError, match="no rows"):
        tabulate(binary_frame.iloc[:0], y_true="y", y_pred="p")
    bad = binary_frame.astype({"y": float})
    bad.iloc[3, 0] = np.nan
    with pytest.raises(ValueError, match="missing labels"):
        tabulate(bad, y_true="y", y_pred="p")
    with pytest.raises(TypeError, match="data"):
        tabulate([1, 2, 3], y_true="y", y_pred="p")
    with pytest.raises(ValueError, match="sum to 1"):
        tabulate(binary_frame, y_true="y", y_pred="p", strata="g", weights={"east": 0.5, "north": 0.5, "south": 0.5})


def test_counts_validation_and_helpers() -> None:
    c = Counts.from_arrays([1, 2], [10, 20], strata=["a", "b"])
    assert c.total_successes == 3 and c.total_trials == 30
    assert c.sample_shares.tolist() == pytest.approx([1 / 3, 2 / 3])
    assert (c + c).successes.tolist() == [2, 4]
    assert c.subset(["b"]).trials.tolist() == [20]
    assert as_counts(c) is c
    with pytest.raises(TypeError, match="not both"):
        as_counts(c, [1, 2])
    with pytest.raises(TypeError, match="trials is required"):
        as_counts([1, 2])
    with pytest.raises(ValueError, match="strata has 3 labels"):
        Counts.from_arrays([1, 2], [10, 20], strata=["a", "b", "c"])
    with pytest.raises(ValueError, match="unique"):
        Counts.from_arrays([1, 2], [10, 20], strata=["a", "a"])
    with pytest.raises(ValueError, match="weights do not match"):
        Counts.from_arrays([1, 2], [10, 20], strata=["a", "b"], weights={"a": 0.5, "c": 0.5})


@settings(max_examples=60, deadline=None)
@given(
    s=st.lists(st.integers(min_value=-5, max_value=50), min_size=1, max_size=6),
    extra=st.lists(st.integers(min_value=-5, max_value=50), min_size=6, max_size=6),
)
def test_counts_reject_bad_and_accept_good(s: list[int], extra: list[int]) -> None:
    n = [a + b for a, b in zip(s, extra[: len(s)], strict=True)]
    if min(s) < 0:
        with pytest.raises(ValueError, match="successes must be non-negative"):
            Counts.from_arrays(s, n)
    elif min(n) < 0:
        with pytest.raises(ValueError, match="trials must be non-negative"):
            Counts.from_arrays(s, n)
    elif any(a > b for a, b in zip(s, n, strict=True)):
        with pytest.raises(ValueError, match="successes must not exceed trials"):
            Counts.from_arrays(s, n)
    else:
        c = Counts.from_arrays(s, n)
        assert c.successes.tolist() == s and c.trials.tolist() == n
        rates = c.rates.to_numpy()
        ok = np.array(n) > 0
        assert np.all((rates[ok] >= 0) & (rates[ok] <= 1)) and np.all(np.isnan(rates[~ok]))


def test_scores_passed_as_y_pred_are_refused_naming_the_column_and_a_value():
    df = _scored_frame()
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        tabulate(df, y_true="y", y_pred="score", strata="g")
    message = str(err.value)
    assert repr(float(df["score"].iloc[0])) in message  # the first fractional row, found by hand
    assert "score=" in message


def test_rounding_noise_in_y_true_is_refused_where_the_truth_is_zero_error():
    df = _scored_frame()
    noisy = df.assign(yn=np.where(df["p"] == 1, 0.999999, 0.0))  # y_pred is right on every row
    assert int((noisy["yn"].round() != noisy["p"]).sum()) == 0  # hand count: 0% error
    with pytest.raises(ValueError, match=r"y_true column 'yn' holds the fractional value 0\.999999"):
        tabulate(noisy, y_true="yn", y_pred="p")


@pytest.mark.parametrize("dtype", ["float64", "Float64", "object"])
def test_integer_valued_float_labels_count_as_classes(dtype):
    df = _scored_frame()
    y = df["y"].astype(float).where(df.index % 7 != 0)  # as pandas reads an int column with NaN
    frame = pd.DataFrame({"y": y, "p": df["p"], "g": df["g"]}).dropna()
    frame["y"] = frame["y"].astype(dtype)
    counts = tabulate(frame, y_true="y", y_pred="p", strata="g")
    for g in ("a", "b"):
        rows = frame[frame["g"] == g]
        wrong = sum(float(t) != float(q) for t, q in zip(rows["y"], rows["p"], strict=True))
        assert counts.successes[g] == wrong and counts.trials[g] == len(rows)


def test_fractional_values_in_categorical_and_object_columns_are_refused():
    df = _scored_frame(50)
    with pytest.raises(ValueError, match=r"y_pred column 'c' holds the fractional value 0\.5"):
        tabulate(df.assign(c=pd.Categorical([0.0, 0.5] * 25)), y_true="y", y_pred="c")
    with pytest.raises(ValueError, match=r"y_true column 'o' holds the fractional value 2\.5"):
        tabulate(df.assign(o=pd.Series([1, 2.5] * 25, dtype=object)), y_true="o", y_pred="p")


def test_confusion_counts_refuses_a_fractional_label_cell():
    t = pd.DataFrame({"y": [1.0, 0.3], "p": [1, 0], "n": [5, 5]})
    with pytest.raises(ValueError, match=r"y_true column 'y' holds the fractional value 0\.3"):
        confusion_counts(t, y_true="y", y_pred="p", count="n")


def test_bool_counts_are_type_errors_naming_the_argument():
    with pytest.raises(TypeError, match=r"^successes must be counts, not bools, got \[True, 0\]"):
        Counts.from_arrays([True, 0], [5, 5])
    with pytest.raises(TypeError, match=r"^trials must be counts, not bools"):
        Counts.from_arrays([1, 0], np.array([True, True]))
    with pytest.raises(TypeError, match=r"^weights must be population shares, not bools"):
        Counts.from_arrays([1, 0], [5, 5], weights=[True, False])


@pytest.mark.parametrize(
    "names",
    [
        {"g": "successes", "h": "__s"},
        {"g": "__t", "h": "__n"},
        {"g": "trials", "h": "class"},
        {"g": "a.b", "h": 'dq"uote'},
        {"y": "__t", "p": "__s", "g": "__p"},
    ],
)
def test_tabulate_with_internal_names(names, tmp_path):
    rng = np.random.default_rng(3)
    n = 500
    frame = pd.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "p": rng.integers(0, 2, n),
            "g": rng.choice(["a", "b"], n),
            "h": rng.integers(0, 3, n),
        }
    ).rename(columns=names)
    yt, yp = names.get("y", "y"), names.get("p", "p")
    strata = [names.get("g", "g"), names.get("h", "h")]
    truth, pred = frame[yt].to_numpy(), frame[yp].to_numpy()
    ref = _reference_counts(frame, yt, yp, strata, trial=truth == 1, success=(truth == 1) & (pred == 1))
    for engine, source in _engines(frame, tmp_path).items():
        got = tabulate(source, y_true=yt, y_pred=yp, strata=strata, metric="recall")
        _check_counts(got, ref)
        assert engine and got.metric == "recall"


def test_categorical_strata_named_successes_keeps_empty_categories():
    frame = pd.DataFrame(
        {
            "successes": pd.Categorical(["a", "a", "b"], categories=["a", "b", "c"]),
            "y": [1, 0, 1],
            "p": [1, 1, 0],
        }
    )
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
    frame = pd.DataFrame(
        {"y": [pos, pos, neg, neg, pos], "p": [pos, neg, neg, pos, pos], "g": ["a", "a", "a", "b", "b"]}
    )
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


def test_csv_conversion_error_is_a_value_error_naming_the_path(tmp_path):
    path = tmp_path / "late.csv"
    path.write_text("y,p\n" + "1,1\n" * 40_000 + "oops,1\n")
    with pytest.raises(ValueError, match=r"late\.csv.*ConversionException|late\.csv.*Conversion"):
        tabulate(str(path), y_true="y", y_pred="p")


def test_confusion_counts_against_a_hand_computed_table():
    table = pd.DataFrame(
        {
            "g": ["a", "a", "a", "b", "b", "a"],
            "y": [1, 1, 0, 0, 1, 1],
            "p": [1, 0, 1, 0, 1, 1],
            "n": [30, 10, 5, 50, 7, 2],
        }
    )
    got = confusion_counts(table, y_true="y", y_pred="p", count="n", strata="g", metric="precision")
    # precision: trials are predicted positives; a -> 30+5+2 trials, 32 right; b -> 7 of 7
    assert got.successes.tolist() == [32, 7] and got.trials.tolist() == [37, 7]
    with pytest.raises(ValueError, match=r"count column 'n' must hold non-negative integers"):
        confusion_counts(table.assign(n=-table["n"]), y_true="y", y_pred="p", count="n")


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
    success = trial & (
        (truth != pred) if metric == "error_rate" else (pred == pos if metric == "recall" else truth == pos)
    )
    ref = _reference_counts(frame, yt, yp, [g], trial, success)
    seen = pos in set(truth.tolist()) | set(pred.tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in (frame, duckdb.from_df(frame)):
            if not seen:  # a positive class that no row holds: refused, naming pos_label (bool/int 0/1 always pass)
                if label_kind == "str3":
                    with pytest.raises(ValueError, match=r"pos_label 'dog' is neither a label"):
                        tabulate(source, y_true=yt, y_pred=yp, strata=g, metric=metric, pos_label=pos)
                    continue
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


def test_counts_from_arrays_pairs_series_by_label_issue_example():
    c = Counts.from_arrays(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "a"]))
    assert list(c.strata) == ["a", "b"]
    assert c.successes.to_dict() == {"a": 1, "b": 2}
    assert c.trials.to_dict() == {"a": 3, "b": 10}
    c2 = as_counts(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "a"]))
    assert c2.trials.to_dict() == {"a": 3, "b": 10}


def test_sum_of_counts_can_overflow_a_stratum_in_counts_add():
    a = Counts.from_arrays([2**52 + 1], [2**52 + 1], strata=["x"])
    _raises(lambda: a + a, "successes", "2**53")


def test_counts_constructor_pairs_series_by_label():
    c = Counts(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "a"]))
    assert c.trials.to_dict() == {"a": 3, "b": 10} and list(c.strata) == ["a", "b"]
    _raises(
        lambda: Counts(pd.Series([1, 2], index=["a", "b"]), pd.Series([10, 3], index=["b", "c"])),
        "successes",
        "trials",
        "'c'",
    )


def test_tabulate_label_proxy_counts_by_hand():
    pc = tabulate(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", metric="accuracy")
    assert isinstance(pc, ProxyCounts) and pc.proxy_kind == "label"
    t = pc.table
    # stratum a: judge 1 on 8 rows (5 labelled, 4 right), judge 0 on 4 rows (3 labelled, 1 right)
    assert t.loc[("a", 1)].tolist() == [4, 5, 8]
    assert t.loc[("a", 0)].tolist() == [1, 3, 4]
    # stratum b: judge 1 on 3 rows (2 labelled, 1 right), judge 0 on 3 rows (2 labelled, 1 right)
    assert t.loc[("b", 1)].tolist() == [1, 2, 3]
    assert t.loc[("b", 0)].tolist() == [1, 2, 3]
    assert "Counts per stratum and proxy cell" in pc._repr_html_()


def test_tabulate_score_cells_are_quantile_bins_per_stratum():
    df = _pool()
    pc = tabulate(df, y_true="y_true", y_pred="y_pred", proxy="score", strata="g")
    assert pc.proxy_kind == "score"
    for g, part in df.groupby("g"):
        cells = pd.qcut(part["score"], 5, labels=False)  # equal-count bins over the stratum
        pool = np.bincount(cells, minlength=5)
        lab = part["y_true"].notna().to_numpy()
        err = (part["y_true"] != part["y_pred"]).to_numpy() & lab
        assert pc.table.loc[g, "pool_trials"].tolist() == pool.tolist()
        assert pc.table.loc[g, "trials"].tolist() == np.bincount(cells[lab], minlength=5).tolist()
        assert pc.table.loc[g, "successes"].tolist() == np.bincount(cells[err], minlength=5).tolist()


@pytest.mark.parametrize("proxy", ["judge", "score"])
def test_tabulate_duckdb_equals_pandas(proxy):
    import duckdb

    df = _pool(size=3000, seed=1)
    design = bayeseval.Design(inclusion="pi")
    a = tabulate(df, y_true="y_true", y_pred="y_pred", proxy=proxy, strata="g", design=design)
    b = tabulate(duckdb.from_df(df), y_true="y_true", y_pred="y_pred", proxy=proxy, strata="g", design=design)
    pd.testing.assert_frame_equal(a.table, b.table)
    lab = df[df["y_true"].notna()]
    assert a.table["ipw_trials"].sum() == pytest.approx((1 / lab["pi"]).sum())
    assert a.table["ipw2_trials"].sum() == pytest.approx((1 / lab["pi"] ** 2).sum())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"metric": "recall"}, ValueError, r"metric 'recall' does not take a proxy.*'error_rate'"),
        ({"proxy": "nope"}, ValueError, "proxy column 'nope'"),
        ({"proxy": 3}, TypeError, "proxy must be a column name"),
        ({"proxy": None, "design": bayeseval.Design(inclusion="judge")}, ValueError, "design.inclusion applies"),
        ({"weights": {"a": 0.5, "b": 0.5}}, ValueError, "weights"),
    ],
)
def test_tabulate_bad_proxy_input(kwargs, error, match):
    args = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "strata": "g", **kwargs}
    with pytest.raises(error, match=match):
        tabulate(_small(), **args)


def test_inclusion_outside_zero_one_is_refused():
    df = _small().assign(pi=0.5)
    df.loc[0, "pi"] = 0.0
    with pytest.raises(ValueError, match=r"inclusion column 'pi'.*1 labelled rows"):
        tabulate(df, y_true="y_true", y_pred="y_pred", proxy="judge", design=bayeseval.Design(inclusion="pi"))


def test_missing_proxy_value_is_refused():
    df = _small().astype({"judge": float})
    df.loc[3, "judge"] = np.nan
    with pytest.raises(ValueError, match=r"proxy column 'judge' has missing values in 1 row"):
        tabulate(df, y_true="y_true", y_pred="y_pred", proxy="judge")


@FAST
@given(count_arrays(max_k=40))
def test_counts_from_arrays_round_trip(arrays):
    s, n = arrays
    c = Counts.from_arrays(s, n, strata=[f"s{i}" for i in range(len(s))])
    assert c.successes.to_numpy().tolist() == s.tolist()
    assert c.trials.to_numpy().tolist() == n.tolist()
    r = c.rates.to_numpy()
    assert np.all((0 <= r) & (r <= 1))


@FAST
@given(bad_counts, st.sampled_from(["successes", "trials"]))
def test_counts_from_arrays_bad_counts_name_the_argument(bad, which):
    args = {"successes": [1, 2], "trials": [5, 5]}
    args[which] = [bad, 2] if which == "successes" else [5, bad]
    assert_raises_naming(Counts.from_arrays, which, args["successes"], args["trials"])


def test_counts_from_arrays_bad_strata_and_weights():
    assert_raises_naming(Counts.from_arrays, "strata", [1, 2], [5, 5], strata=["a"])
    assert_raises_naming(Counts.from_arrays, "strata", [1, 2], [5, 5], strata=["a", "a"])
    assert_raises_naming(Counts.from_arrays, "weights", [1, 2], [5, 5], weights=[0.5, 0.6])
    assert_raises_naming(Counts.from_arrays, "weights", [1, 2], [5, 5], weights=[1.5, -0.5])
    assert_raises_naming(Counts.from_arrays, "weights", [1, 2], [5, 5], weights=[1.0])


@FAST
@given(frames(), st.sampled_from(["error_rate", "accuracy", "recall", "precision", "fpr"]))
def test_tabulate_counts_are_consistent(df, metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        c = tabulate(df, y_true="y", y_pred="p", strata="g", metric=metric)
    assert np.all(c.successes <= c.trials)
    if metric in ("error_rate", "accuracy"):
        assert int(c.trials.sum()) == len(df)
        errors = int((df.y != df.p).sum())
        assert int(c.successes.sum()) == (errors if metric == "error_rate" else len(df) - errors)


def test_tabulate_bad_input_names_argument():
    df = pd.DataFrame({"y": [1, 0], "p": [1, 1], "g": ["a", "b"]})
    assert_raises_naming(tabulate, "y_true", df, y_true="nope", y_pred="p")
    assert_raises_naming(tabulate, "y_pred", df, y_true="y", y_pred="nope")
    assert_raises_naming(tabulate, "strata", df, y_true="y", y_pred="p", strata="nope")
    assert_raises_naming(tabulate, "metric", df, y_true="y", y_pred="p", metric="bogus")
    assert_raises_naming(tabulate, "data", [1, 2, 3], y_true="y", y_pred="p")
    assert_raises_naming(tabulate, "weights", df, y_true="y", y_pred="p", strata="g", weights={"a": 0.5, "b": 0.6})


def test_generated_names_do_not_collide_with_user_columns(path):
    df = pd.DataFrame({"c0": ["a", "b", "a"], "n": [1, 0, 1], "c1": [1, 1, 0]})
    counts = bayeseval.tabulate(df, y_true="n", y_pred="c1", strata="c0", metric="error_rate")
    assert counts.to_frame().to_dict("list") == {"successes": [1, 1], "trials": [2, 1]}
