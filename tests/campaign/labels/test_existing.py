"""Campaigns started from labels already paid for (``Campaign.create(labels=)``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design
from bayeseval.campaign import Campaign, Each, Overall

RATES = {"north": 0.08, "south": 0.2, "east": 0.35}


def _pool(n=3000, seed=0):
    """A pool with three strata of different error rates and its true labels."""
    rng = np.random.default_rng(seed)
    g = rng.choice(list(RATES), n, p=[0.5, 0.3, 0.2])
    pred = rng.integers(0, 2, n)
    wrong = rng.random(n) < np.array([RATES[x] for x in g])
    truth = np.where(wrong, 1 - pred, pred)
    return pd.DataFrame({"g": g, "pred": pred}), pd.Series(truth, name="label")


def _create(path, pool, **kw):
    kw.setdefault("random_seed", 3)
    kw.setdefault("goal", Each(0.05))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Campaign.create(path, pool, strata="g", y_pred="pred", **kw)


def _seed(truth, n=400, seed=1):
    ids = np.random.default_rng(seed).choice(len(truth), n, replace=False)
    return truth.iloc[ids]


def test_counts_are_the_hand_counted_errors_of_the_labels(tmp_path):
    pool, truth = _pool()
    seed = _seed(truth)
    c = _create(tmp_path / "c.db", pool, labels=seed)
    rows = pool.loc[seed.index]
    by_hand = (seed != rows["pred"]).groupby(rows["g"]).agg(["sum", "size"])
    counts = c.counts().to_frame()
    assert counts["successes"].to_dict() == by_hand["sum"].to_dict()
    assert counts["trials"].to_dict() == by_hand["size"].to_dict()
    assert c.labels_used == 400
    assert set(c.labels()["round"]) == {0}
    c.close()


def test_a_campaign_started_from_labels_reads_as_one_that_proposed_and_ingested_them(tmp_path):
    pool, truth = _pool()
    seed = _seed(truth)
    a = _create(tmp_path / "a.db", pool, labels=seed)
    # b gets labels with the same counts per stratum through propose / ingest / release
    b = _create(tmp_path / "b.db", pool)
    batch = b.propose(2900)
    rows = pool.loc[seed.index]
    wrong = (seed != rows["pred"]).groupby(rows["g"]).sum()
    size = rows.groupby("g").size()
    given = []
    for g, part in batch.groupby("g"):
        ids = part.index[: size[g]]
        pred = pool.loc[ids, "pred"].to_numpy()
        flip = np.arange(len(ids)) < wrong[g]
        given.append(pd.Series(np.where(flip, 1 - pred, pred), index=ids))
    b.ingest(pd.concat(given))
    b.release()
    sa, sb = a.status(), b.status()
    pd.testing.assert_frame_equal(sa, sb)
    pd.testing.assert_series_equal(a.forecast(), b.forecast())
    a.close()
    b.close()


def test_propose_goes_on_from_the_rows_never_labelled(tmp_path):
    pool, truth = _pool(n=1200)
    seed = _seed(truth, n=300)
    c = _create(tmp_path / "c.db", pool, labels=seed)
    proposed = []
    for _ in range(6):
        batch = c.propose(150)
        if len(batch) == 0:
            break
        proposed.extend(batch.index)
        c.ingest(truth.loc[batch.index])
    assert proposed and not set(proposed) & set(seed.index)
    assert len(set(proposed)) == len(proposed)
    assert c.labels_used == 300 + len(proposed)
    c.close()


def test_the_labels_may_be_a_pool_column_a_frame_or_a_dict(tmp_path):
    pool, truth = _pool(n=600)
    seed = _seed(truth, n=80)
    ref = _create(tmp_path / "ref.db", pool, labels=seed)
    column = pool.assign(label=truth.where(truth.index.isin(seed.index)))
    frame = pd.DataFrame({"row": seed.index, "y_true": seed.to_numpy(), "note": "x"})[["row", "y_true"]]
    frame_idx = seed.to_frame("answer")
    for i, (p, labels) in enumerate([(column, "label"), (pool, frame), (pool, frame_idx), (pool, dict(seed.items()))]):
        c = _create(tmp_path / f"c{i}.db", p, labels=labels)
        pd.testing.assert_frame_equal(c.counts().to_frame(), ref.counts().to_frame())
        c.close()
    ref.close()


def test_text_row_ids_and_text_labels(tmp_path):
    pool = pd.DataFrame(
        {"g": ["a", "b"] * 50, "pred": ["cat", "dog"] * 50}, index=pd.Index([f"r{i}" for i in range(100)], name="id")
    )
    labels = pd.DataFrame({"id": ["r0", "r1", "r2", "r3"], "label": ["cat", "cat", "dog", "dog"]})
    c = _create(tmp_path / "c.db", pool, labels=labels)
    # r0 a: cat/cat right; r1 b: dog/cat wrong; r2 a: cat/dog wrong; r3 b: dog/dog right
    assert c.counts().to_frame()["successes"].tolist() == [1, 1]
    assert c.counts().to_frame()["trials"].tolist() == [2, 2]
    c.close()


@pytest.mark.parametrize(
    ("labels", "words"),
    [
        (pd.Series([1, 0], index=[5, 99999]), "ids not in the pool: 99999"),
        (pd.Series([1, 0], index=[5, "r7"]), "cannot be row ids of this pool (integers): 'r7'"),
        (pd.Series([1, 0, 1], index=[5, 6, 5]), "ids given twice: 5"),
        (pd.Series([1, None, np.nan], index=[5, 6, 7]), "blank labels for ids: 6, 7"),
        (pd.Series([1, 2], index=[5, 6]), "invalid labels (known labels: [0, 1]) for ids: 6 (2)"),
        (pd.Series([0.5], index=[5]), "invalid labels"),
    ],
)
def test_bad_labels_are_refused_naming_the_rows_and_nothing_is_written(tmp_path, labels, words):
    pool, _ = _pool(n=200)
    path = tmp_path / "c.db"
    with pytest.raises(ValueError, match="^labels rejected") as info:
        _create(path, pool, labels=labels)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert not path.exists()


@pytest.mark.parametrize(
    ("kw", "error", "words"),
    [
        ({"labels": 3}, TypeError, "labels must be"),
        ({"labels": "truth"}, ValueError, "labels 'truth' is not a column of the pool"),
        ({"labels": pd.DataFrame({"a": [1], "b": [0]}, index=[5])}, ValueError, "labels DataFrame: cannot tell"),
        (
            {"labels": pd.DataFrame({"row_id": [7, 9], "label": [0, 1]})},
            ValueError,
            "its row ids would be its default index 0, 1, 2",
        ),
        ({"design": Design(inclusion="p")}, TypeError, "design.inclusion='p' is the column of the labels'"),
        (
            {"labels": pd.Series([1], index=[5]), "design": Design(inclusion="p")},
            TypeError,
            "give labels as a DataFrame",
        ),
        (
            {"labels": pd.DataFrame({"label": [1]}, index=[5]), "design": Design(inclusion="p")},
            ValueError,
            "design.inclusion='p' is not a column of labels",
        ),
        (
            {"labels": pd.DataFrame({"label": [1], "p": [1.5]}, index=[5]), "design": Design(inclusion="p")},
            ValueError,
            "design.inclusion='p' must hold probabilities in \\(0, 1\\]",
        ),
    ],
)
def test_bad_arguments_name_labels_or_inclusion(tmp_path, kw, error, words):
    pool, _ = _pool(n=200)
    with pytest.raises(error, match=words):
        _create(tmp_path / "c.db", pool, **kw)
    assert not (tmp_path / "c.db").exists()


def test_equal_inclusion_within_strata_is_a_random_sample_and_unequal_is_a_seed_cell(tmp_path):
    pool, truth = _pool(n=800)
    seed = _seed(truth, n=120)
    per = {"north": 0.1, "south": 0.25, "east": 0.5}  # stratified design: one probability per stratum
    frame = seed.to_frame("label").assign(p=pool.loc[seed.index, "g"].map(per).to_numpy())
    ref = _create(tmp_path / "ref.db", pool, labels=seed)
    c = _create(tmp_path / "c.db", pool, labels=frame, design=Design(inclusion="p"))
    pd.testing.assert_frame_equal(c.status(), ref.status())
    frame.iloc[0, 1] = frame.iloc[0, 1] / 2
    stratum = pool.loc[seed.index[0], "g"]
    e = _create(
        tmp_path / "e.db", pool, labels=frame, design=Design(inclusion="p")
    )  # read as a seed cell (test_existing_seed_cells.py)
    assert set(e.status()["read"]) == {"seeded"}
    e.close()
    with pytest.raises(
        ValueError, match=f"design.inclusion='p': probabilities differ within stratum '{stratum}'.*got goal='overall'"
    ):
        _create(tmp_path / "d.db", pool, labels=frame, design=Design(inclusion="p"), goal=Overall(0.05))
    assert not (tmp_path / "d.db").exists()
    c.close()
    ref.close()


def test_seed_labels_survive_reopening_and_a_proxy_campaign_samples_around_them(tmp_path):
    pool, truth = _pool(n=900)
    pool["proxy"] = np.where(np.random.default_rng(5).random(900) < 0.8, truth, 1 - truth)
    seed = _seed(truth, n=150)
    c = _create(tmp_path / "c.db", pool, labels=seed, proxy="proxy")
    before = c.status()
    c.close()
    c = Campaign.open(tmp_path / "c.db")
    pd.testing.assert_frame_equal(c.status(), before)
    assert int(before["labelled"].sum()) == 150
    batch = c.propose(100)
    assert len(batch) and not set(batch.index) & set(seed.index)
    c.close()


@pytest.mark.slow
def test_the_estimates_from_random_labels_and_later_rounds_are_unbiased(tmp_path):
    """Mean over 25 seeded campaigns of each stratum's labelled error rate against the pool's rate.

    Each campaign starts from 150 labels drawn at random from the pool and labels 150 more
    through propose/ingest; the mean of k/n per stratum must be within 4 Monte Carlo standard
    errors of the stratum's error rate in the pool.
    """
    pool, truth = _pool(n=900, seed=11)
    wrong = truth != pool["pred"]
    true_rate = wrong.groupby(pool["g"]).mean()
    est = []
    for s in range(25):
        seed = _seed(truth, n=150, seed=100 + s)
        c = _create(tmp_path / f"c{s}.db", pool, labels=seed, random_seed=s)
        batch = c.propose(150)
        c.ingest(truth.loc[batch.index])
        t = c.counts().to_frame()
        est.append(t["successes"] / t["trials"])
        c.close()
    est = pd.DataFrame(est)
    se = est.std(ddof=1) / np.sqrt(len(est))
    assert (abs(est.mean() - true_rate.reindex(est.columns)) < 4 * se + 1e-9).all()


def test_labels_of_rows_a_precision_campaign_never_labels_are_refused(tmp_path):
    pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [1, 1, 0, 0] * 25})
    ok = pd.Series([1, 0], index=[0, 1])  # predicted 1: trials of precision
    c = _create(tmp_path / "c.db", pool, labels=ok, metric="precision")
    assert c.counts().to_frame()["trials"].tolist() == [1, 1]
    assert c.status()["pool_rows"].tolist() == [50, 50]
    c.close()
    with pytest.raises(ValueError, match="never labels .* for ids: 2, 3"):
        _create(tmp_path / "d.db", pool, labels=pd.Series([1, 0, 1], index=[0, 2, 3]), metric="precision")


def test_a_campaign_on_two_metrics_counts_the_labels_for_each(tmp_path):
    pool, truth = _pool(n=600)
    seed = _seed(truth, n=90)
    c = _create(tmp_path / "c.db", pool, labels=seed, metric=["tpr", "fpr"], goal=Each(0.1))
    rows = pool.loc[seed.index]
    pos = seed == 1
    for metric, mask, hit in (("tpr", pos, rows["pred"] == 1), ("fpr", ~pos, rows["pred"] == 1)):
        by_hand = (hit[mask]).groupby(rows["g"][mask]).agg(["sum", "size"])
        got = c.counts(metric).to_frame()
        assert got["successes"].to_dict() == by_hand["sum"].to_dict()
        assert got["trials"].to_dict() == by_hand["size"].to_dict()
    c.close()
