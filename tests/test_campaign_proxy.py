"""Campaigns with a proxy: resume, unbiased cell design, status against proxy_ci, the CLI flag."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import proxy_ci
from bayeseval.campaign import Campaign
from bayeseval.campaign.guarantee import guarantee_stop_level
from bayeseval.campaign.proxycells import neyman_cells


def _pool(n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < np.where(g == 0, 0.85, 0.7), y, 1 - y)
    judge = np.where(rng.random(n) < 0.9, y, 1 - y)
    pool = pd.DataFrame({"g": g, "pred": pred, "judge": judge})
    return pool, pd.Series(y, index=pool.index)


def _run(c: Campaign, truth: pd.Series, rounds: int, size: int = 40) -> list[list[int]]:
    out = []
    for _ in range(rounds):
        batch = c.propose(size)
        out.append(batch.index.tolist())
        if len(batch):
            c.ingest(truth.loc[batch.index])
    return out


def test_resumed_campaign_matches_uninterrupted(tmp_path):
    pool, truth = _pool()
    kw = dict(strata="g", y_pred="pred", proxy="judge", random_seed=3, target_halfwidth=0.05)
    a = Campaign.create(tmp_path / "a.db", pool, **kw)
    whole = _run(a, truth, 4)
    b = Campaign.create(tmp_path / "b.db", pool, **kw)
    first = _run(b, truth, 2)
    b.close()
    b = Campaign.open(tmp_path / "b.db")
    second = _run(b, truth, 2)
    assert first + second == whole
    pd.testing.assert_frame_equal(a.status(), b.status())
    a.close()
    b.close()


def test_status_matches_proxy_ci_by_hand(tmp_path):
    pool, truth = _pool(seed=1)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", proxy="judge", random_seed=0)
    _run(c, truth, 3)
    st = c.status()
    lab = c.labels()
    frame = pool.copy()
    frame["y_true"] = np.nan
    frame.loc[lab.index, "y_true"] = truth.loc[lab.index].astype(float)
    # the cell design: a labelled row's inclusion is its cell's labelled share of the stratum's rows
    cell = (frame["judge"] != frame["pred"]).astype(int)
    labelled = frame["y_true"].notna()
    n_cell = labelled.groupby([frame["g"], cell]).transform("sum")
    N_cell = frame.groupby(["g", cell])["pred"].transform("size")
    frame["pi"] = np.where(labelled, n_cell / N_cell, np.nan)
    ref = proxy_ci(frame, y_true="y_true", y_pred="pred", proxy="judge", strata="g", metric="error_rate",
                   level=guarantee_stop_level(0.95), inclusion="pi").table
    np.testing.assert_allclose(st["lower"].to_numpy(), ref["lower"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["upper"].to_numpy(), ref["upper"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["estimate"].to_numpy(), ref["estimate"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["agreement"].to_numpy(), ref["agreement"].to_numpy())
    assert (st["read"] == "proxy").all()


def test_cell_design_estimate_is_unbiased(tmp_path):
    # 40 seeded campaigns of 120 labels on one pool: the mean proxy estimate matches the pool's
    # true error rate within 3 Monte Carlo standard errors, while the raw labelled error rate is
    # pulled towards the oversampled disagreement cell
    pool, truth = _pool(n=2000, seed=2)
    true_rate = (pool["pred"] != truth).groupby(pool["g"]).mean().to_numpy()
    est, raw = [], []
    for seed in range(40):
        c = Campaign.create(tmp_path / f"u{seed}.db", pool, strata="g", y_pred="pred", proxy="judge",
                            random_seed=seed, target_halfwidth=0.04, budget=120)
        _run(c, truth, 3)
        st = c.status()
        est.append(st["estimate"].to_numpy())
        raw.append((st["successes"] / st["trials"]).to_numpy())
        c.close()
    est, raw = np.array(est), np.array(raw)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(est.mean(axis=0) - true_rate) < 3 * se + 1e-3)
    assert np.any(np.abs(raw.mean(axis=0) - true_rate) > 5 * se)


def test_neyman_cells_closed_form():
    # equal spreads: labels in proportion to the cells' sizes; a cell with spread 0.5 vs 0.3
    # (rates 0.5, 0.1): shares 1000*0.5 : 1000*0.3
    assert neyman_cells(np.array([600, 400]), np.zeros(2), np.zeros(2), np.zeros(2),
                        np.array([600, 400]), 100).tolist() == [60, 40]
    take = neyman_cells(np.array([1000, 1000]), np.zeros(2), np.array([49, 9]), np.array([98, 98]),
                        np.array([1000, 1000]), 80)
    r = np.array([50, 10]) / 100
    share = np.sqrt(r * (1 - r)) / np.sqrt(r * (1 - r)).sum()
    assert np.all(np.abs(take - 80 * share) <= 1)


def test_proxy_settings_checked(tmp_path):
    pool, _ = _pool(n=200)
    with pytest.raises(ValueError, match="proxy campaigns"):
        Campaign.create(tmp_path / "x.db", pool, strata="g", y_pred="pred", proxy="judge", metric="recall")
    with pytest.raises(ValueError, match="proxy column 'nope'"):
        Campaign.create(tmp_path / "y.db", pool, strata="g", y_pred="pred", proxy="nope")
    assert not (tmp_path / "x.db").exists()


def test_cli_proxy_flag(tmp_path):
    from bayeseval.cli.main import main

    pool, _ = _pool(n=500)
    path = tmp_path / "pool.csv"
    pool.rename_axis("id").reset_index().to_csv(path, index=False)
    db = tmp_path / "camp.db"
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "g",
                 "--y-pred", "pred", "--proxy", "judge", "--target-halfwidth", "0.1", "--db", str(db), "--seed", "1"]) == 0
    c = Campaign.open(db)
    assert c.spec.proxy == "judge"
    batch = c.propose(30)
    # Neyman across cells from the uniform prior: the disagreement cell gets its share N_c/N
    cell = (pool.loc[batch.index, "judge"] != pool.loc[batch.index, "pred"])
    assert 0 < cell.sum() < len(batch)
    assert (c.status()["read"] == "proxy").all()
    c.close()


def test_simulate_proxy_replays_the_campaign(tmp_path):
    from bayeseval.campaign import simulate

    pool, truth = _pool(n=2000, seed=4)
    data = pool.assign(truth=truth)
    res = simulate(data, strata="g", y_pred="pred", y_true="truth", proxy="judge", rules=["expected_width"],
                   n_repeats=2, target_halfwidth=0.08, batch_size=20, random_seed=5, progress=False)
    c = Campaign.create(tmp_path / "s.db", pool, strata="g", y_pred="pred", proxy="judge",
                        target_halfwidth=0.08, batch_size=20, random_seed=5)
    while len(batch := c.propose()):
        c.ingest(truth.loc[batch.index])
    assert res.table.loc[0, "labels_used"] == c.labels_used
    final = res.intervals[res.intervals["repeat"] == 0].set_index("g")
    np.testing.assert_allclose(final["read_upper"].to_numpy(), c.status()["read_upper"].to_numpy())
    # the true rates are the pool's own error rates
    ref = (pool["pred"] != truth).groupby(pool["g"]).mean()
    np.testing.assert_allclose(res.true_rates.to_numpy(), ref.to_numpy())
    assert res.table["reached_goal"].all() and len(res.table) == 2
    c.close()
