"""Tests of ``bayeseval.campaign.labels.label_set``."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayeseval.campaign import Campaign
from bayeseval.campaign.labels.label_set import LabelSet
from tests.campaign.helpers import new_campaign
from tests.helpers import assert_counts_match_labels, make_pool_hardening_campaign

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans()))
def test_property_numbers_match_a_known_label_only_when_equal(x):
    labels = LabelSet([0, 1])
    got = labels.normalise(x)
    if isinstance(x, float) and math.isnan(x):
        assert got is not None and got not in (0, 1)  # the missing marker
    elif x in (0, 1):  # Python equality: 1.0 == 1, True == 1
        assert got == x and type(got) is int
    else:
        assert got is None
    # the text of a number normalises like the number when the labels are numbers
    if isinstance(x, int) and not isinstance(x, bool):
        assert labels.normalise(str(x)) == labels.normalise(x)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=4), st.none()))
def test_property_string_labels_never_match_numbers(x):
    labels = LabelSet(["cat", "dog", "1"])
    got = labels.normalise(x)
    if isinstance(x, str) and x in ("cat", "dog", "1"):
        assert got == x
    elif x is None or (isinstance(x, float) and math.isnan(x)) or (isinstance(x, str) and x.strip() == ""):
        assert got is not None and got not in ("cat", "dog", "1")  # missing (blank text too)
    else:
        assert got is None  # 1 never matches "1"; "Cat" never matches "cat"


# PrecisionLimitedWarning expected: 200 rows in two strata cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_refuses_a_score_column_as_y_pred_and_a_fractional_label_set(tmp_path):
    rng = np.random.default_rng(4)
    pool_campaign_spec = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "score": rng.uniform(0.01, 0.99, 200)})
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="g", y_pred="score", random_seed=0)
    assert "score=" in str(err.value) and not (tmp_path / "c.db").exists()
    ints = pool_campaign_spec.assign(
        pred=(pool_campaign_spec["score"] >= 0.5).astype(float)
    )  # 0.0/1.0 are the classes 0 and 1
    with pytest.raises(ValueError, match=r"label_set holds the fractional value 0\.5"):
        Campaign.create(tmp_path / "d.db", ints, strata="g", y_pred="pred", label_set=[0, 0.5, 1])
    c = Campaign.create(tmp_path / "e.db", ints, strata="g", y_pred="pred", random_seed=0)
    assert sorted(c.spec.label_set or [0, 1]) == [0, 1]


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_lossless_normalisation_stores_the_known_label(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(8)
    sent = ["1", 1.0, True, np.int64(0), " 0 ", "1.0", np.float32(0.0), False]
    expected = [1, 1, 1, 0, 0, 1, 0, 0]
    assert c.ingest(pd.Series(sent, index=b.index, dtype=object)) == 8
    stored = c.labels()["label"].reindex(b.index)
    assert stored.tolist() == expected
    assert all(type(x) is int for x in stored)  # stored as the known label, not the sent value
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_string_labels_match_exactly_and_numbers_never_match(tmp_path):
    pool = make_pool_hardening_campaign(pred=np.random.default_rng(0).choice(["cat", "dog"], 400))
    c, _ = new_campaign(tmp_path, pool=pool)
    b = c.propose(4)
    for bad in ["Cat", "cat ", 1, 0.0]:
        with pytest.raises(ValueError, match="invalid labels") as err:
            c.ingest(pd.Series([bad], index=b.index[:1], dtype=object))
        assert repr(int(b.index[0])) in str(err.value)
    assert c.ingest(pd.Series(["cat", "dog"], index=b.index[:2])) == 2
    assert c.labels()["label"].reindex(b.index[:2]).tolist() == ["cat", "dog"]
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_boolean_labels(tmp_path):
    pool = make_pool_hardening_campaign(pred=np.random.default_rng(0).integers(0, 2, 400).astype(bool))
    c, _ = new_campaign(tmp_path, pool=pool)
    assert c.config["label_set"] == [False, True]
    b = c.propose(5)
    assert c.ingest(pd.Series([True, 0, "true", "FALSE", 1.0], index=b.index, dtype=object)) == 5
    # SQLite stores booleans as 0/1
    assert c.labels()["label"].reindex(b.index).tolist() == [1, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="invalid labels"):
        c.ingest(pd.Series(["yes"], index=c.propose(1).index, dtype=object))
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_class_the_model_never_predicts_needs_label_set(tmp_path):
    preds = np.random.default_rng(0).choice(["a", "b"], 400)
    c, _ = new_campaign(tmp_path, "x.db", pool=make_pool_hardening_campaign(pred=preds))
    b = c.propose(2)
    with pytest.raises(ValueError, match="invalid labels"):
        c.ingest(pd.Series(["c"], index=b.index[:1]))
    c.close()
    c, pool = new_campaign(tmp_path, "y.db", pool=make_pool_hardening_campaign(pred=preds), label_set=["a", "b", "c"])
    b = c.propose(2)
    assert c.ingest(pd.Series(["c", "a"], index=b.index)) == 2
    lab = c.labels().reindex(b.index)
    # "c" is never the prediction, so it is an error (success) of the error rate
    assert lab["success"].tolist() == [1, int(pool.loc[b.index[1], "pred"] != "a")]
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_label_set_that_mixes_types_or_misses_predictions_is_refused(tmp_path):
    with pytest.raises(ValueError, match="label_set mixes strings and numbers"):
        new_campaign(tmp_path, label_set=[0, 1, "1"])
    with pytest.raises(ValueError, match=r"y_pred column 'pred' has values \[1\]"):
        new_campaign(tmp_path, label_set=[0, 2])
    assert os.listdir(tmp_path) == []
