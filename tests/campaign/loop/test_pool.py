"""Tests of ``bayeseval.campaign.loop.pool``: the pool as a campaign sees it (eligible rows and trials per metric,
score bins and prior means, costs and thresholds per stratum, the positive label, missing values).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayeseval.campaign import Budget, Campaign, Decide, Score
from tests.campaign.helpers import make_pool, new_campaign, oracle
from tests.helpers import exact_pool, make_pool_hardening_campaign


# PrecisionLimitedWarning expected: the 2,000-row pool cannot reach the default target in every stratum
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_recall_counts_only_true_positives_as_trials(tmp_path):
    pool = make_pool(n=2000, k=3, seed=6)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", metric="recall", random_seed=0)
    st = c.state()
    assert not st.trial_known
    b = c.propose(60)
    truth = oracle(b)
    c.ingest(truth)
    st = c.status()
    g = pool.loc[b.index, "g"]
    pred = pool.loc[b.index, "pred"]
    # recall: trials = true positives, successes = true positives predicted positive
    assert (st["trials"].reindex(sorted(set(g))) == truth.eq(1).groupby(g).sum()).all()
    assert (st["successes"].reindex(sorted(set(g))) == (truth.eq(1) & pred.eq(1)).groupby(g).sum()).all()
    assert (st["labelled"].reindex(sorted(set(g))) == g.value_counts().sort_index()).all()
    c.close()


# PrecisionLimitedWarning expected: the 2,000-row pool cannot reach the default target in every stratum
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_precision_proposes_only_predicted_positives(tmp_path):
    pool = make_pool(n=2000, k=3, seed=7)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", metric="precision", random_seed=0)
    b = c.propose(80)
    assert (pool.loc[b.index, "pred"] == 1).all()
    c.ingest(oracle(b))
    st = c.status()
    assert (st["trials"] == st["labelled"]).all()
    assert st["pool_rows"].sum() == 2000
    c.close()


# PrecisionLimitedWarning expected: nine strata of a 3,000-row pool cannot all reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_score_seeds_prior_and_bins(tmp_path):
    rng = np.random.default_rng(8)
    pool = make_pool(n=3000, k=3, seed=8)
    pool["score"] = rng.uniform(0.5, 1.0, len(pool))
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", score=Score("score", bins=3), random_seed=0)
    assert c.strata.names == ["g", "score_bin"] and len(c.strata) == 9
    # prior mean per stratum = 1 - mean score in the stratum
    bins = pd.qcut(pool["score"], 3, duplicates="drop").astype(str)
    expected = 1 - pool["score"].groupby([pool["g"], bins]).mean()
    got = pd.Series(c.config["prior_mean"], index=c.strata)
    np.testing.assert_allclose(got.to_numpy(), expected.reindex(c.strata).to_numpy(), rtol=1e-12)
    b = c.propose(9, show_prediction=True)
    assert "score" in b.columns and "score_bin" in b.columns
    np.testing.assert_allclose(b["score"].to_numpy(), pool.loc[b.index, "score"].to_numpy())
    c.close()


def test_threshold_mapping_is_stored_per_stratum_and_read_back(tmp_path):
    pool = exact_pool([0.05, 0.2], [400, 400])
    c = Campaign.create(
        tmp_path / "c.db", pool, strata="stratum", y_pred="pred", goal=Decide({"s0": 0.1, "s1": 0.15}), random_seed=0
    )
    c.close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.goal == Decide((0.1, 0.15), "below")
        assert c.status()["threshold"].tolist() == [0.1, 0.15]
    with pytest.raises(ValueError, match=r"threshold must give every stratum a threshold; missing \['s1'\]"):
        Campaign.create(tmp_path / "d.db", pool, strata="stratum", y_pred="pred", goal=Decide({"s0": 0.1}))
    with pytest.raises(ValueError, match=r"threshold names strata that are not in the pool: \['zz'\]"):
        Campaign.create(
            tmp_path / "e.db", pool, strata="stratum", y_pred="pred", goal=Decide({"s0": 0.1, "s1": 0.1, "zz": 0.1})
        )


@pytest.mark.parametrize(
    "costs, error, match",
    [
        ({"north": 0.0}, ValueError, r"costs must be finite numbers > 0, got 0.0 for stratum 'north'"),
        ({"west": 2.0}, ValueError, r"costs name strata that are not in the pool: \['west'\]"),
        ([1.0], ValueError, r"costs must give one cost per stratum \(2\), got 1"),
        ("cheap", TypeError, "costs must be a dict"),
    ],
)
def test_bad_costs_name_the_argument_and_value(tmp_path, costs, error, match):
    pool_campaign_spec = pd.DataFrame({"g": ["north", "south"] * 20, "pred": [0, 1] * 20})
    with pytest.raises(error, match=match):
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="g", y_pred="pred", budget=Budget(costs=costs))
    assert not (tmp_path / "c.db").exists()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_pos_label_of_a_declared_class_is_accepted(tmp_path):
    c, _ = new_campaign(tmp_path, metric="recall", pos_label=2, label_set=[0, 1, 2])
    assert c.config["pos_label"] == 2
    c.close()
    # the positive label is normalised like a true label: "1" and 1.0 are the label 1
    c, _ = new_campaign(tmp_path, "d.db", metric="recall", pos_label="1")
    assert c.config["pos_label"] == 1 and type(c.config["pos_label"]) is int
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("column, value", [("g", None), ("g", np.nan), ("pred", None), ("pred", pd.NA)])
def test_missing_strata_or_prediction_name_the_rows(tmp_path, column, value):
    pool = make_pool_hardening_campaign().astype({column: object})
    pool.loc[pool.index[[3, 9]], column] = value
    with pytest.raises(ValueError, match="missing values") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")
    assert column in str(err.value) and repr(int(pool.index[3])) in str(err.value)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_mixed_type_predictions_are_refused(tmp_path):
    pool = make_pool_hardening_campaign().astype({"pred": object})
    pool.loc[pool.index[0], "pred"] = "1"
    with pytest.raises(ValueError, match="mixes strings and numbers"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    column=st.sampled_from([("strata", "g"), ("y_pred", "pred")]),
    missing=st.sampled_from([None, np.nan, pd.NA]),
    rows=st.lists(st.integers(0, 99), min_size=1, max_size=3, unique=True),
)
def test_property_create_refuses_missing_values_and_writes_nothing(tmp_path_factory, column, missing, rows):
    d = tmp_path_factory.mktemp("miss")
    name, col = column
    pool = make_pool_hardening_campaign(n=100).astype({col: object})
    pool.loc[pool.index[rows], col] = missing
    with pytest.raises(ValueError) as err:
        Campaign.create(d / "c.db", pool, strata="g", y_pred="pred")
    assert f"{name} column {col!r}" in str(err.value) and repr(int(pool.index[min(rows)])) in str(err.value)
    assert os.listdir(d) == []
