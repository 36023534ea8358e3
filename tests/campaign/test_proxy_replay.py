"""Tests of ``bayeseval.campaign.proxy_replay``: ``simulate(proxy=)`` replays the real campaign."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeseval.campaign import Budget, Campaign, Each
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
        random_seed=5,
        progress=False,
        budget=Budget(batch_size=20),
    )
    c = Campaign.create(
        tmp_path / "s.db",
        pool,
        strata="g",
        y_pred="pred",
        proxy="judge",
        goal=Each(0.08),
        random_seed=5,
        budget=Budget(batch_size=20),
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


def test_a_proxy_simulation_says_once_that_a_target_may_be_out_of_reach():
    """Every repeat starts from the same pool: the pool's feasibility is one warning, worded for a proxy.

    The worst case assumes a proxy that tells nothing; a judge right on 95% of rows narrows the
    intervals, so the warning says the target *may* not be met.
    """
    import warnings

    from bayeseval import PrecisionLimitedWarning
    from bayeseval.campaign import simulate

    rng = np.random.default_rng(3)
    n_small, n_large = 150, 1500
    g = np.array(["small"] * n_small + ["large"] * n_large)
    pred = rng.integers(0, 2, g.size)
    truth = np.where(rng.random(g.size) < 0.85, pred, 1 - pred)
    judge = np.where(rng.random(g.size) < 0.95, truth, 1 - truth)
    data = pd.DataFrame({"g": g, "pred": pred, "truth": truth, "judge": judge})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = simulate(
            data,
            strata="g",
            y_pred="pred",
            y_true="truth",
            proxy="judge",
            rules=["expected_width"],
            n_repeats=3,
            goal=Each(0.05),
            random_seed=1,
            progress=False,
            budget=Budget(batch_size=50),
        )
    limited = [w for w in caught if issubclass(w.category, PrecisionLimitedWarning)]
    assert len(limited) == 1 and len(res.table) == 3
    text = str(limited[0].message)
    assert "may not be met" in text and "unless the proxy" in text and "small" in text
    # the labels-only reference: with all 150 rows labelled at a rate near 0.15, Clopper-Pearson
    # is wider than the target, so only the proxy can meet it
    from scipy.stats import binomtest

    ci = binomtest(int(0.15 * n_small), n_small).proportion_ci(confidence_level=0.95)
    assert (ci.high - ci.low) / 2 > 0.05
