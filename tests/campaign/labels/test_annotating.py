"""Tests of ``bayeseval.campaign.labels.annotating``: a campaign's agreement between annotators, per stratum."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from bayeseval.campaign import Annotation, Campaign
from tests.helpers import _ingest


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_campaign_agreement_per_stratum(tmp_path, pool_annotations):
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=8,
        annotation=Annotation(annotators=2),
    )
    b = c.propose(40)
    rng = np.random.default_rng(3)
    north = [r for r in b.index if pool_annotations.loc[r, "region"] == "north"]
    south = [r for r in b.index if pool_annotations.loc[r, "region"] == "south"]
    x = rng.integers(0, 2, len(north))
    y = np.where(rng.random(len(north)) < 0.7, x, 1 - x)
    rows = [(r, "x", int(u)) for r, u in zip(north, x, strict=True)] + [
        (r, "y", int(v)) for r, v in zip(north, y, strict=True)
    ]
    votes3 = rng.integers(0, 2, (len(south), 3))
    rows += [(r, w, int(v[j])) for r, v in zip(south, votes3, strict=True) for j, w in enumerate(["p", "q", "s"])]
    c.ingest(pd.DataFrame(rows, columns=["row", "annotator", "label"]), id_column="row", annotator_column="annotator")
    agree = c.agreement()
    assert agree.loc["north", "method"] == "cohen" and agree.loc["north", "rows"] == len(north)
    assert agree.loc["north", "kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)
    table = np.stack([(votes3 == 0).sum(1), (votes3 == 1).sum(1)], axis=1)
    p = table.sum(0) / table.sum()
    pbar = ((table**2).sum(1) - 3).mean() / 6
    expected = (pbar - (p**2).sum()) / (1 - (p**2).sum())
    assert agree.loc["south", "method"] == "fleiss" and agree.loc["south", "annotators"] == 3
    assert agree.loc["south", "kappa"] == pytest.approx(expected, abs=1e-12)
    # majority of three always resolves; two annotators tie where they disagree
    assert c.labels_used == len(south) + int((x == y).sum())
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_relabelled_annotations_keep_their_place(tie_broken):
    c, rows, first, second, region = tie_broken
    # after the tie-breaks the first annotator corrects 8 of the labels the second disputed:
    # kappa of the corrected labels, on every row
    rng = np.random.default_rng(12)
    fix = rng.choice(np.flatnonzero(first != second), 8, replace=False)
    first = first.copy()
    first[fix] = 1 - first[fix]
    _ingest(c, [rows[i] for i in fix], ["ana"] * 8, first[fix], relabel=True)
    agree = c.agreement()
    for g in ("north", "south"):
        m = region == g
        assert agree.loc[g, "method"] == "cohen" and agree.loc[g, "rows"] == m.sum()
        assert agree.loc[g, "kappa"] == pytest.approx(cohen_kappa_score(first[m], second[m]), abs=1e-12)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_three_annotators_and_an_adjudicator(tmp_path, pool_annotations):
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=13,
        annotation=Annotation(annotators=3),
    )
    rows = list(c.propose(120).index)
    rng = np.random.default_rng(13)
    truth = pool_annotations.loc[rows, "truth"].to_numpy()
    votes = np.stack([np.where(rng.random(len(rows)) < 0.2, 1 - truth, truth) for _ in range(3)], axis=1)
    for j, who in enumerate(["p", "q", "s"]):
        _ingest(c, rows, [who] * len(rows), votes[:, j])
    split = [r for r, v in zip(rows, votes, strict=True) if len(set(v)) > 1]
    # an adjudicator confirms the majority where the three split: a fourth annotation on those rows
    majority = {r: int(np.round(v.mean())) for r, v in zip(rows, votes, strict=True)}
    _ingest(c, split, ["expert"] * len(split), [majority[r] for r in split])
    region = pool_annotations.loc[rows, "region"].to_numpy()
    agree = c.agreement()
    for g in ("north", "south"):
        m = region == g
        expected = sm_fleiss(aggregate_raters(votes[m])[0], method="fleiss")
        assert agree.loc[g, "method"] == "fleiss" and agree.loc[g, "per_row"] == 3 and agree.loc[g, "rows"] == m.sum()
        assert agree.loc[g, "kappa"] == pytest.approx(expected, abs=1e-12)
        assert agree.loc[g, "kappa"] < 0.9
