"""Clustered campaigns under guarantee "anytime": each stratum reads its units' confidence sequence.

References: :func:`~bayeseval._kernels.bounded_mean.unit_cs` run by hand on the labels the store
holds, ordered from the proposals and label rounds seen here; the row campaign for units of one
row; the process rate of seeded pools for coverage.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design
from bayeseval._kernels.bounded_mean import _sequence_ends, unit_cs
from bayeseval.campaign import Budget, CampaignSpec, Decide, Each, Gap, Overall, simulate

sys.path.insert(0, str(Path(__file__).parent))
from test_units import ITEM, _create, _items, _truth  # noqa: E402

LEVEL = 0.95


def _by_hand(frame, labels, first_seen):
    """Each stratum's sequence at its last look: complete units by (round of last label, first proposal)."""
    rows = frame.loc[labels.index].assign(err=(frame.loc[labels.index, "pred"] != labels["truth"]).astype(float))
    rows["round"] = labels["round"]
    size = frame.groupby("item").size()
    per = rows.groupby(["g", "item"]).agg(a=("err", "sum"), b=("err", "size"), round=("round", "max")).reset_index()
    per = per[per["b"].to_numpy() == size.reindex(per["item"]).to_numpy()]
    per["first"] = per["item"].map(first_seen)
    out = {}
    for g, sub in per.groupby("g"):
        sub = sub.sort_values(["round", "first"])
        r = sub["round"].to_numpy()
        looks = np.flatnonzero(np.append(r[1:] != r[:-1], True)) + 1
        largest = size[frame.loc[frame["g"] == g, "item"].unique()].max()
        cs = unit_cs(sub["a"].to_numpy(), sub["b"].to_numpy(), LEVEL, bound=largest, looks=looks)
        out[g] = cs.iloc[-1]
    return pd.DataFrame(out).T


def test_the_status_is_the_sequence_of_the_stored_units_in_arrival_order(tmp_path):
    frame = _items(n_items=(40, 80, 25), seed=4)
    c = _create(tmp_path / "c.db", frame, guarantee="anytime", budget=Budget(batch_size=9))
    rng = np.random.default_rng(2)
    first_seen: dict[str, int] = {}
    held = pd.Index([])
    for _ in range(6):
        batch = c.propose()
        for item in frame.loc[batch.index, "item"]:
            first_seen.setdefault(item, len(first_seen))
        keep = batch.index[rng.random(len(batch)) < 0.85]
        c.ingest(_truth(frame, keep.append(held)))  # held-back rows come in a later round: units arrive late
        held = batch.index.difference(keep)
    status = c.status()
    labels = c.labels().assign(truth=lambda f: frame.loc[f.index, "truth"])
    ref = _by_hand(frame, labels, first_seen).reindex(status.index)
    assert (status["read"] == "anytime").all()
    np.testing.assert_array_equal(status["lower"], ref["lower"].astype(float))
    np.testing.assert_array_equal(status["upper"], ref["upper"].astype(float))
    np.testing.assert_allclose(status["mean"], ref["estimate"].astype(float), rtol=1e-12)
    assert status["done"].tolist() == ((ref["upper"] - ref["lower"]) / 2 <= 0.15).tolist()
    c.close()


def test_simulate_replays_the_sequence_a_campaign_with_the_same_seed_reads(tmp_path):
    frame = _items(seed=7)
    kw = dict(goal=Each(0.15), random_seed=4, budget=Budget(batch_size=10), guarantee="anytime")
    with _create(tmp_path / "c.db", frame, **kw) as c:
        while len(batch := c.propose()):
            c.ingest(_truth(frame, batch.index))
        status = c.status()
    res = simulate(frame, strata="g", y_pred="pred", y_true="truth", design=ITEM, n_repeats=2, progress=False, **kw)
    first = res.intervals[res.intervals["repeat"] == 0].set_index("stratum")
    assert (first["read"] == "anytime").all()
    np.testing.assert_array_equal(first["lower"], status["lower"])
    np.testing.assert_array_equal(first["upper"], status["upper"])
    assert res.table.loc[0, "units_used"] == status["n_units"].sum()


def test_units_of_one_row_read_the_row_campaign_sequence_not_the_units_one(tmp_path):
    # units of one row each are rows: the campaign is the row campaign (its Beta-binomial mixture
    # sequence); the units sequence of the same labels in the same order is another valid sequence
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], n), "truth": 1, "pred": (rng.random(n) < 0.2).astype(int)})
    frame["item"] = [f"i{k}" for k in range(n)]
    out = {}
    for name, design in (("rows", None), ("units", ITEM)):
        with _create(tmp_path / f"{name}.db", frame, design=design, guarantee="anytime", budget=Budget(25)) as c:
            order = []
            for _ in range(6):
                b = c.propose()
                order += list(b.index)
                c.ingest(_truth(frame, b.index))
            out[name] = (c.status(), c.labels())
    pd.testing.assert_frame_equal(out["units"][0], out["rows"][0])
    status, labels = out["rows"]
    assert (status["read"] == "anytime").all()
    for g in ("a", "b"):
        ids = [r for r in order if frame.loc[r, "g"] == g]
        err = (frame.loc[ids, "pred"] != frame.loc[ids, "truth"]).to_numpy(float)
        rounds = labels.loc[ids, "round"].to_numpy()
        looks = np.flatnonzero(np.append(rounds[1:] != rounds[:-1], True)) + 1
        cs = unit_cs(err, np.ones(len(ids)), LEVEL, bound=1, looks=looks).iloc[-1]
        assert cs["lower"] != status.loc[g, "lower"] and cs["upper"] != status.loc[g, "upper"]
        assert cs["lower"] <= status.loc[g, "mean"] <= cs["upper"]


def test_decide_reads_the_side_of_the_threshold_the_sequence_lies_on(tmp_path):
    frame = _items(n_items=(120, 120), seed=9)
    with _create(tmp_path / "c.db", frame, goal=Decide(0.6), guarantee="anytime", budget=Budget(batch_size=10)) as c:
        while len(batch := c.propose()):
            c.ingest(_truth(frame, batch.index))
        status = c.status()
    assert (status["read"] == "anytime").all()
    # error rates near 0.3 against 0.6: each stratum decided, on the side its sequence lies on
    assert (status["upper"] < 0.6).all()
    assert status["decision"].tolist() == ["meets", "meets"]


def test_anytime_refuses_the_goals_whose_reading_is_not_per_stratum():
    with pytest.raises(ValueError, match=r"design\.cluster='item'.*got guarantee='anytime' with goal='gap'"):
        CampaignSpec(y_pred="pred", strata="g", goal=Gap(0.1), design=ITEM, guarantee="anytime")
    with pytest.raises(ValueError, match=r"got goal='overall'"):
        CampaignSpec(y_pred="pred", strata="g", goal=Overall(0.05), design=ITEM, guarantee="anytime")
    with pytest.raises(ValueError, match=r"design\.population='pool'"):
        CampaignSpec(y_pred="pred", strata="g", design=Design(cluster="item", population="pool"), guarantee="anytime")


@pytest.mark.slow
def test_simulated_anytime_campaigns_cover_each_stratum_rate_at_stop_and_at_every_look():
    """Seeded coverage of the process rate, 200 pools of 2 strata (40 and 60 items of 1-5 answers).

    Item error rates Beta(0.6, 1.4): each stratum's process rate is 0.3. At stop: the campaign
    (goal Each(0.15), batches of 10 units) replayed by ``simulate``. At every look: the stratum's
    units in a seeded random order (a campaign's proposal order), the sequence read after every
    10 units up to the whole stratum (a campaign that never stops). Tolerance: at least 0.95 - 0.03
    (about 2 MC standard errors at 200 pools). Measured: at stop 0.985 and 0.985; at every look to
    the last unit 1.000 and 0.990 (strata of 40 and 60 items; 54 s on one core).
    """
    at_stop, every = [], []
    for rep in range(200):
        frame = _items(n_items=(40, 60), seed=1000 + rep)
        res = simulate(
            frame,
            strata="g",
            y_pred="pred",
            y_true="truth",
            design=ITEM,
            goal=Each(0.15),
            guarantee="anytime",
            n_repeats=1,
            random_seed=rep,
            progress=False,
            budget=Budget(batch_size=10),
        )
        iv = res.intervals
        at_stop.append(((iv["lower"] <= 0.3) & (0.3 <= iv["upper"])).to_numpy())
        rng = np.random.default_rng(rep)
        units = frame.assign(err=(frame["pred"] != frame["truth"]).astype(float))
        per = units.groupby(["g", "item"])["err"].agg(["sum", "size"]).reset_index()
        row = []
        for _, sub in per.groupby("g"):
            sub = sub.iloc[rng.permutation(len(sub))]
            n = len(sub)
            looks = np.unique(np.append(np.arange(10, n + 1, 10), n))
            a, b = sub["sum"].to_numpy(float)[None], sub["size"].to_numpy(float)[None]
            _, lo, hi = _sequence_ends(a, b, np.array([b.max()]), LEVEL, 0.75, looks)
            row.append(bool(((lo <= 0.3) & (0.3 <= hi)).all()))
        every.append(row)
    stop_rate, every_rate = np.mean(at_stop, axis=0), np.mean(every, axis=0)
    assert (stop_rate >= LEVEL - 0.03).all(), stop_rate
    assert (every_rate >= LEVEL - 0.03).all(), every_rate
