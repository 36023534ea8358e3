"""Campaigns on several metrics at once (e.g. TPR and FPR for equalized odds).

References: counts recomputed with NumPy from the labelled rows' true labels and predictions;
the single-metric expected-width allocation (``cost_allocation``) for the case where one
metric is already done; the true rates of the pool computed directly.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign, CampaignSpec, simulate
from bayeseval.campaign.rules import cost_allocation, metrics_allocation
from bayeseval.campaign.state import MetricStates, RuleState
from bayeseval.cli.campaign import main
from bayeseval.datasets import make_pool


@pytest.fixture(scope="module")
def pool() -> pd.DataFrame:
    return make_pool(8_000, 3, rates=[0.05, 0.1, 0.2], random_seed=0).set_index("row_id")[
        ["stratum", "y_true", "y_pred"]
    ]


def run_campaign(path, pool, **kw) -> Campaign:
    c = Campaign.create(path, pool[["stratum", "y_pred"]], strata="stratum", y_pred="y_pred", random_seed=0, **kw)
    while not c.done:
        batch = c.propose(40)
        if batch.empty:
            break
        c.ingest(pool.loc[batch.index, "y_true"])
    return c


def test_each_metric_counts_every_labelled_row_it_is_a_trial_of(tmp_path, pool):
    c = run_campaign(tmp_path / "c.db", pool, metric=["tpr", "fpr"], target_halfwidth=0.1)
    labelled = pool.loc[c.labels().index]
    truth, pred = labelled["y_true"].to_numpy(), labelled["y_pred"].to_numpy()
    g = labelled["stratum"].to_numpy()
    for metric, trial, success in (("recall", truth == 1, (truth == 1) & (pred == 1)),
                                   ("fpr", truth == 0, (truth == 0) & (pred == 1))):
        counts = c.counts(metric).to_frame()
        expected_n = pd.Series(trial.astype(int)).groupby(g).sum()
        expected_s = pd.Series(success.astype(int)).groupby(g).sum()
        assert counts["trials"].tolist() == expected_n.tolist()
        assert counts["successes"].tolist() == expected_s.tolist()
    status = c.status()
    assert list(status.index.names) == ["metric", "stratum"]
    assert status.index.get_level_values("metric").unique().tolist() == ["recall", "fpr"]
    # stopped because every metric of every stratum met the target (none ran out of rows)
    assert (status["halfwidth"] <= 0.1).all() and not status["exhausted"].any()
    # the rows are shared: labelled per stratum is the same in both metric blocks
    assert (status.loc["recall", "labelled"].to_numpy() == status.loc["fpr", "labelled"].to_numpy()).all()
    assert int(status.loc["recall", "labelled"].sum()) == c.labels_used
    c.close()


def test_one_campaign_costs_fewer_labels_than_one_per_metric(pool):
    kw = dict(strata="stratum", y_pred="y_pred", y_true="y_true", target_halfwidth=0.08, n_repeats=2,
              batch_size=40, random_seed=1, progress=False, rules=["expected_width"])
    both = simulate(pool, metric=["tpr", "fpr"], **kw)
    tpr = simulate(pool, metric="tpr", **kw)
    fpr = simulate(pool, metric="fpr", **kw)
    together = both.table["labels_used"].to_numpy()
    apart = tpr.table["labels_used"].to_numpy() + fpr.table["labels_used"].to_numpy()
    assert (together < apart).all()
    assert both.table["reached_goal"].all()
    # the true rates per metric are the pool's
    t = pool["y_true"].to_numpy()
    p = pool["y_pred"].to_numpy()
    direct_fpr = pd.Series(((t == 0) & (p == 1)).astype(float)).groupby(pool["stratum"].to_numpy()).sum() / \
        pd.Series((t == 0).astype(float)).groupby(pool["stratum"].to_numpy()).sum()
    np.testing.assert_allclose(both.true_rates.loc["fpr"].to_numpy(), direct_fpr.to_numpy())
    assert set(both.intervals["metric"]) == {"recall", "fpr"}


def test_with_one_metric_done_the_allocation_is_the_other_metrics_own():
    tpr = RuleState.from_counts([20, 18, 10], [25, 25, 12], labelled=[100, 100, 40], available=[500] * 3,
                                trial_known=False, target_halfwidth=0.05)
    fpr = RuleState.from_counts([1, 2, 1], [75, 75, 28], labelled=[100, 100, 40], available=[500] * 3,
                                trial_known=False, target_halfwidth=0.2)
    assert fpr.stratum_done().all() and not tpr.stratum_done().any()
    both = metrics_allocation(MetricStates({"tpr": tpr, "fpr": fpr}), 30)
    alone = cost_allocation(tpr, 30, np.ones(3))
    assert both.tolist() == alone.tolist()


def test_the_allocation_weighs_the_probability_that_a_row_is_a_trial():
    # same TPR counts (so the same posterior), but positives are common in stratum 0 and rare in 1
    tpr = RuleState.from_counts([15, 15], [20, 20], labelled=[22, 200], available=[1000, 1000],
                                trial_known=False, target_halfwidth=0.05, model="independent")
    fpr = RuleState.from_counts([0, 10], [2, 180], labelled=[22, 200], available=[1000, 1000],
                                trial_known=False, target_halfwidth=0.5, model="independent")
    assert tpr.p_trial()[0] > 0.8 and tpr.p_trial()[1] < 0.11
    alloc = metrics_allocation(MetricStates({"tpr": tpr, "fpr": fpr}), 20)
    assert alloc[0] > alloc[1]


@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"metric": ["tpr", "recall"]}, ValueError, ["same metric twice", "recall"]),
        ({"metric": []}, ValueError, ["metric", "[]"]),
        ({"metric": ["tpr", "fpr"], "rule": "neyman"}, ValueError, ["rule='neyman'", "'recall', 'fpr'"]),
        ({"metric": ["tpr", "fpr"], "goal": "decide", "threshold": 0.1}, ValueError, ["goal='decide'", "one metric"]),
        ({"metric": 3}, TypeError, ["metric", "3"]),
    ],
)
def test_several_metrics_are_validated_naming_the_argument(kwargs, exc, names):
    with pytest.raises(exc) as info:
        CampaignSpec(y_pred="p", strata="g", **kwargs)
    for name in names:
        assert name in str(info.value)


def test_the_metrics_are_stored_and_read_back(tmp_path, pool):
    spec = CampaignSpec(y_pred="y_pred", strata="stratum", metric=["recall", "precision"], random_seed=2)
    assert spec.metrics == ("recall", "precision")
    Campaign.create(tmp_path / "c.db", pool[["stratum", "y_pred"]], spec=spec).close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.metrics == ("recall", "precision")
        assert [m.name for m in c.metrics] == ["recall", "precision"]
        # recall needs every row, so every row is eligible, not only the predicted positives
        batch = c.propose(200)
        assert (pool.loc[batch.index, "y_pred"] == 0).any()


def test_cli_several_metrics(tmp_path, pool, capsys):
    path = tmp_path / "pool.csv"
    pool[["stratum", "y_pred"]].to_csv(path, index_label="id")
    db = str(tmp_path / "c.db")
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "stratum",
                 "--y-pred", "y_pred", "--metric", "tpr,fpr", "--db", db, "--seed", "1"]) == 0
    assert "metric recall,fpr" in capsys.readouterr().out
    with Campaign.open(db) as c:
        batch = c.propose(30)
        c.ingest(pool.loc[batch.index, "y_true"])
    assert main(["campaign", "status", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [(r["metric"], r["stratum"]) for r in payload["strata"]] == [
        (m, s) for m in ("recall", "fpr") for s in ("s1", "s2", "s3")
    ]
    assert payload["labels_used"] == 30 and payload["cost"] == 30.0
    assert main(["campaign", "create", "--pool", str(path), "--strata", "stratum", "--y-pred", "y_pred",
                 "--metric", "tpr,", "--db", str(tmp_path / "d.db")]) == 2
    assert "--metric" in capsys.readouterr().err
