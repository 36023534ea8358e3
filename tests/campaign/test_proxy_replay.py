"""Tests of ``bayeseval.campaign.proxy_replay``: ``simulate(proxy=)`` replays the real campaign."""

from __future__ import annotations

import numpy as np

from bayeseval.campaign import Campaign, Each
from tests.helpers import _pool_campaign_proxy


def test_simulate_proxy_replays_the_campaign(tmp_path):
    from bayeseval.campaign import simulate

    pool, truth = _pool_campaign_proxy(n=2000, seed=4)
    data = pool.assign(truth=truth)
    res = simulate(
        data,
        strata="g",
        y_pred="pred",
        y_true="truth",
        proxy="judge",
        rules=["expected_width"],
        n_repeats=2,
        goal=Each(0.08),
        batch_size=20,
        random_seed=5,
        progress=False,
    )
    c = Campaign.create(
        tmp_path / "s.db", pool, strata="g", y_pred="pred", proxy="judge", goal=Each(0.08), batch_size=20, random_seed=5
    )
    while len(batch := c.propose()):
        c.ingest(truth.loc[batch.index])
    assert res.table.loc[0, "labels_used"] == c.labels_used
    final = res.intervals[res.intervals["repeat"] == 0].set_index("g")
    np.testing.assert_allclose(final["upper"].to_numpy(), c.status()["upper"].to_numpy())
    # the true rates are the pool's own error rates
    ref = (pool["pred"] != truth).groupby(pool["g"]).mean()
    np.testing.assert_allclose(res.true_rates.to_numpy(), ref.to_numpy())
    assert res.table["reached_goal"].all() and len(res.table) == 2
    c.close()
