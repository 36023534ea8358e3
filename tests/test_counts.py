"""Tests for bayeseval.counts.counts (Counts, tabulate) and bayeseval.counts.metrics against scikit-learn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import confusion_matrix, precision_score, recall_score

from bayeseval import Counts, EmptyStratumWarning, get_metric, tabulate
from bayeseval.counts.counts import as_counts, confusion_counts, stratum_labels
from bayeseval.counts.metrics import METRICS


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
    back = Counts.from_arrays(ds["successes"].values, ds["trials"].values, strata=index,
                              weights=ds["weights"].values, metric=ds.attrs["metric"])
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
    back = Counts.from_arrays(ds["successes"].values, ds["trials"].values,
                              strata=list(ds["stratum"].values), weights=ds["weights"].values)
    assert back.to_frame().equals(c.to_frame())
    assert back.weights.tolist() == [0.75, 0.25]


def test_metric_masks_definitions() -> None:
    y = np.array([1, 1, 0, 0, 1])
    p = np.array([1, 0, 1, 0, 1])
    expected = {  # (trials, successes) by each metric's definition
        "error_rate": (5, 2), "accuracy": (5, 3), "recall": (3, 2), "precision": (3, 2),
        "fpr": (2, 1), "specificity": (2, 1), "npv": (2, 1), "fnr": (3, 1), "selection_rate": (5, 3),
    }
    for name, (nt, ns) in expected.items():
        trial, success = METRICS[name].masks(y, p, 1)
        assert (int(trial.sum()), int(success.sum())) == (nt, ns), name
        assert not np.any(success & ~trial)
    assert get_metric("TPR").name == "recall" and get_metric("ppv").name == "precision"
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("auc")
    with pytest.raises(TypeError, match="metric"):
        get_metric(3)
    with pytest.raises(ValueError, match="same length"):
        METRICS["recall"].masks([1, 0], [1], 1)


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
        tabulate(binary_frame, y_true="y", y_pred="p", strata="g",
                 weights={"east": 0.5, "north": 0.5, "south": 0.5})


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


# -- fractional labels: a score or rounding noise is not a class ---------------------------------


def _scored_frame(n: int = 2000) -> pd.DataFrame:
    """A good classifier: y_pred = y_true on 95% of rows, and its score for class 1."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.95, y, 1 - y)
    score = np.clip(np.where(p == 1, 0.75, 0.25) + rng.normal(0, 0.1, n), 0.01, 0.99)
    return pd.DataFrame({"y": y, "p": p, "score": score, "g": rng.choice(["a", "b"], n)})


def test_scores_passed_as_y_pred_are_refused_naming_the_column_and_a_value():
    df = _scored_frame()
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        tabulate(df, y_true="y", y_pred="score", strata="g")
    message = str(err.value)
    assert repr(float(df['score'].iloc[0])) in message  # the first fractional row, found by hand
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
