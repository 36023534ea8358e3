"""Planning from a pilot: the labels in hand counted, the forecast checked by labelling what it asks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import plan_from_pilot

TARGET = 0.06


def _pilot(seed=0, n=2400, share=0.08, judge=False):
    rng = np.random.default_rng(seed)
    cat = rng.choice(["math", "geo", "bio"], n)
    rate = pd.Series(cat).map({"math": 0.7, "geo": 0.85, "bio": 0.95}).to_numpy()
    right = (rng.random(n) < rate).astype(float)
    frame = pd.DataFrame({"category": cat, "claim": 1.0, "truth": right})
    if judge:
        frame["judge"] = np.where(rng.random(n) < 0.9, right, 1 - right).astype(int)
    frame["human"] = np.where(rng.random(n) < share, right, np.nan)
    frame.index.name = "item"
    return frame


def _plan(frame, **kw):
    return plan_from_pilot(
        frame.drop(columns="truth"), y_true="human", y_pred="claim", strata="category", target_halfwidth=TARGET, **kw
    )


def test_the_labels_in_hand_are_counted_per_stratum():
    frame = _pilot()
    plan = _plan(frame)
    by_hand = frame.groupby("category")["human"].agg(["size", "count"])
    assert plan.table["pool_rows"].to_dict() == by_hand["size"].to_dict()
    assert plan.table["labelled"].to_dict() == by_hand["count"].to_dict()
    rate = frame.groupby("category")["human"].mean()
    # metric error_rate: the share of labelled answers that are wrong (the claim is "right")
    np.testing.assert_allclose(plan.table.loc[rate.index, "mean"], 1 - rate, atol=0.03)
    assert plan.total == int(plan.table["labels_needed"].sum()) > 0


def _label_more(frame, need, rng):
    """The pilot with ``need[h]`` more rows of stratum h labelled (their true value), at random."""
    out = frame.copy()
    for h, k in need.items():
        free = out.index[(out["category"] == h) & out["human"].isna()]
        pick = rng.choice(free, size=min(int(k), len(free)), replace=False)
        out.loc[pick, "human"] = out.loc[pick, "truth"]
    return out


@pytest.mark.slow  # 24 plans, about 30 s
def test_labelling_what_the_forecast_asks_meets_the_target_and_less_does_not():
    """The forecast is the smallest number of labels whose expected half-width meets the target.

    Labelling that many more random rows per stratum gives a half-width at the target on average
    (measured 0.058-0.060 for a target of 0.06, the mean over 12 seeds; tolerance 0.004 above),
    and labelling 60% of them leaves it above (measured 0.063-0.074).
    """
    full, part = [], []
    for seed in range(12):
        frame = _pilot(seed)
        need = _plan(frame).table["labels_needed"]
        rng = np.random.default_rng(100 + seed)
        full.append(_plan(_label_more(frame, need, rng)).table["halfwidth"])
        part.append(_plan(_label_more(frame, (need * 0.6).round(), rng)).table["halfwidth"])
    full_mean, part_mean = pd.concat(full, axis=1).mean(axis=1), pd.concat(part, axis=1).mean(axis=1)
    assert (full_mean <= TARGET + 0.004).all(), full_mean
    assert (full_mean >= TARGET - 0.01).all(), full_mean  # not wildly more labels than needed
    assert (part_mean > TARGET).all(), part_mean


def test_a_judge_makes_each_label_go_further():
    """With a judge agreeing 90% of the time the proxy campaign needs fewer labels than without."""
    frame = _pilot(judge=True)
    without = _plan(frame.drop(columns="judge"))
    with_judge = _plan(frame, proxy="judge")
    assert with_judge.total < without.total
    assert (with_judge.table["labelled"] == without.table["labelled"]).all()


def test_start_creates_the_campaign_with_the_pilot_labels(tmp_path):
    frame = _pilot()
    plan = _plan(frame)
    campaign = plan.start(tmp_path / "c.db")
    try:
        assert campaign.labels_used == int(frame["human"].notna().sum())
        status = campaign.status()
        pd.testing.assert_series_equal(status["upper"], plan.table["upper"])
        proposed = campaign.propose(30)
        assert frame.loc[proposed.index, "human"].isna().all()  # only rows the pilot left unlabelled
    finally:
        campaign.close()


def test_refusals_name_the_argument():
    frame = _pilot().drop(columns="truth")
    with pytest.raises(ValueError, match="y_true='label'"):
        plan_from_pilot(frame, y_true="label", y_pred="claim", strata="category", target_halfwidth=0.05)
    with pytest.raises(ValueError, match="no row of frame is labelled"):
        plan_from_pilot(
            frame.assign(human=np.nan), y_true="human", y_pred="claim", strata="category", target_halfwidth=0.05
        )
    with pytest.raises(ValueError, match="index must identify the rows"):
        plan_from_pilot(
            frame.reset_index(drop=True).iloc[[0, 0, 1]].assign(human=1.0),
            y_true="human",
            y_pred="claim",
            strata="category",
            target_halfwidth=0.05,
        )
    with pytest.raises(TypeError, match="frame must be"):
        plan_from_pilot([1, 2], y_true="human", target_halfwidth=0.05)
