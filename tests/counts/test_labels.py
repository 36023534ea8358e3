"""Tests of ``bayeseval.counts.labels``: label rules shared by the counting paths."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import bayeseval as be

RNG = np.random.default_rng(3)
N = 400
TRUTH = RNG.choice(["cat", "dog"], N)
PRED = np.where(RNG.random(N) < 0.8, TRUTH, np.where(TRUTH == "cat", "dog", "cat"))
FRAME = pd.DataFrame({"g": RNG.choice(["a", "b"], N), "y_true": TRUTH, "y_pred": PRED})


@pytest.mark.parametrize("placeholder", ["", "None", "NA", "n/a", "?", " null "])
def test_a_true_label_spelled_like_missing_is_refused_on_every_counting_path(placeholder):
    df = FRAME.copy()
    df.loc[:49, "y_true"] = placeholder
    with pytest.raises(ValueError, match=r"y_true column 'y_true' holds .* in 50 rows, a placeholder"):
        be.tabulate(df, y_true="y_true", y_pred="y_pred", strata="g")
    with pytest.raises(ValueError, match="in 50 rows, a placeholder"):
        be.tabulate(duckdb.from_df(df), y_true="y_true", y_pred="y_pred", strata="g")
    proxy = df.assign(px=df["y_pred"], y_true=df["y_true"].where(RNG.random(N) < 0.5))
    proxy.loc[:49, "y_true"] = placeholder
    with pytest.raises(ValueError, match="a placeholder for a missing label"):
        be.proxy_ci(proxy, y_true="y_true", y_pred="y_pred", proxy="px", strata="g")


def test_the_errors_without_placeholders_are_the_mismatches_counted_by_hand():
    df = FRAME.copy()
    df.loc[:49, "y_true"] = ""
    kept = df.iloc[50:]
    c = be.tabulate(kept, y_true="y_true", y_pred="y_pred", strata="g")
    by_hand = (kept["y_true"] != kept["y_pred"]).groupby(kept["g"]).agg(["sum", "size"])
    assert c.successes.tolist() == by_hand["sum"].tolist() and c.trials.tolist() == by_hand["size"].tolist()


def test_a_placeholder_the_model_also_predicts_is_a_class():
    # "None" predicted by the model too (e.g. "no object") is a label like any other
    df = FRAME.copy()
    df.loc[:49, "y_true"] = "None"
    df.loc[:29, "y_pred"] = "None"
    c = be.tabulate(df, y_true="y_true", y_pred="y_pred", strata="g")
    assert int(c.successes.sum()) == int((df["y_true"] != df["y_pred"]).sum())


@pytest.mark.parametrize("metric", ["recall", "precision", "fpr"])
def test_a_positive_class_no_row_holds_is_refused(metric):
    df = FRAME.copy()
    with pytest.raises(ValueError, match=r"pos_label 'Cat' is neither .* did you mean pos_label='cat'"):
        be.tabulate(df, y_true="y_true", y_pred="y_pred", strata="g", metric=metric, pos_label="Cat")
    with pytest.raises(ValueError, match=r"pos_label 'cow' is neither"):
        be.audit(df, groups="g", y_true="y_true", y_pred="y_pred", metrics=metric, pos_label="cow")
    # a class held by the rows counts as by hand, also when the model never predicts it
    c = be.tabulate(df, y_true="y_true", y_pred="y_pred", strata="g", metric="recall", pos_label="cat")
    cats = df[df["y_true"] == "cat"]
    assert c.trials.tolist() == cats.groupby("g").size().tolist()
    assert c.successes.tolist() == (cats["y_pred"] == "cat").groupby(cats["g"]).sum().tolist()
    never = df.assign(y_pred="dog")
    c = be.tabulate(never, y_true="y_true", y_pred="y_pred", strata="g", metric="recall", pos_label="cat")
    assert c.successes.tolist() == [0, 0] and c.trials.tolist() == cats.groupby("g").size().tolist()


@pytest.mark.parametrize("spelling", ["cat ", "Cat", " CAT"])
def test_labels_equal_but_for_spaces_or_case_are_refused(spelling):
    df = FRAME.copy()
    df["y_true"] = df["y_true"].replace({"cat": spelling})
    with pytest.raises(ValueError, match=rf"differ only in spaces or case \({spelling!r} vs 'cat'\)"):
        be.tabulate(df, y_true="y_true", y_pred="y_pred", strata="g")
    with pytest.raises(ValueError, match="differ only in spaces or case"):
        be.tabulate(duckdb.from_df(df), y_true="y_true", y_pred="y_pred", strata="g")
    # cleaned, the errors are the mismatches counted by hand
    df["y_true"] = df["y_true"].str.strip().str.lower()
    c = be.tabulate(df, y_true="y_true", y_pred="y_pred")
    assert int(c.successes.iloc[0]) == int((FRAME["y_true"] != FRAME["y_pred"]).sum())


def test_pos_label_1_of_0_1_labels_counts_a_slice_without_positives():
    # 0/1 labels and no positive row: pos_label=1 is no typo, the recall has 0 trials (by hand)
    df = pd.DataFrame({"g": ["a", "b"] * 10, "y": [0] * 20, "p": [0] * 20})
    with pytest.warns(be.EmptyStratumWarning):
        c = be.tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall", pos_label=1)
    assert c.trials.tolist() == [0, 0]
    with pytest.raises(ValueError, match="pos_label 2 is neither"):
        be.tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall", pos_label=2)
