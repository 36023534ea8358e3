"""Tests of ``bayeseval.campaign.proxy_replay``: ``simulate(proxy=)`` replays the real campaign."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

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


def _proxy_pool(n, seed, k=2, kind="int"):
    """Strata of unequal error rates, a judge right on 90% of rows, a score proxy and a score."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < np.where(g % 2 == 0, 0.85, 0.7), y, 1 - y)
    judge = np.where(rng.random(n) < 0.9, y, 1 - y)
    data = pd.DataFrame({"g": g, "h": rng.choice(["x", "y"], n), "pred": pred, "judge": judge, "truth": y})
    data["pscore"] = np.clip(0.6 * y + 0.5 * rng.random(n), 0, 1)
    data["sc"] = rng.random(n)
    if kind == "text":
        words = np.array(["cat", "dog"])
        for c in ("pred", "judge", "truth"):
            data[c] = words[data[c]]
        data.index = [f"r{i}" for i in range(n)]
    elif kind == "bool":
        data = data.astype({"pred": bool, "judge": bool, "truth": bool})
        data.index = pd.Index(np.arange(n) * 7 + 3, name="item")
    elif kind == "float":
        data = data.astype({"pred": float, "judge": float, "truth": float})
    return data


REPLAYS = {
    "three repeats": (_proxy_pool(2000, 4), dict(goal=Each(0.1), budget=Budget(batch_size=30), n_repeats=3)),
    "several rules": (
        _proxy_pool(2000, 1, k=3),
        dict(
            goal=Each(0.12),
            budget=Budget(batch_size=40),
            n_repeats=2,
            rules=["expected_width", "proportional", "thompson"],
        ),
    ),
    "a budget": (_proxy_pool(3000, 2, k=3), dict(goal=Each(0.03), budget=Budget(300, batch_size=50))),
    "text labels, accuracy": (
        _proxy_pool(2500, 3, k=3, kind="text"),
        dict(goal=Each(0.1), budget=Budget(batch_size=30), metric="accuracy", pos_label="dog"),
    ),
    "bool labels, npv": (
        _proxy_pool(3000, 8, k=3, kind="bool"),
        dict(goal=Each(0.12), budget=Budget(batch_size=25), metric="npv", pos_label=True),
    ),
    "float labels, precision, level 0.9": (
        _proxy_pool(3000, 5, kind="float"),
        dict(goal=Each(0.12), budget=Budget(batch_size=30), metric="precision", level=0.9),
    ),
    "two stratum columns, a score proxy, costs": (
        _proxy_pool(3000, 9, k=3),
        dict(
            strata=["g", "h"],
            proxy="pscore",
            goal=Each(0.15),
            budget=Budget(batch_size=30, costs={(0, "x"): 2.0}),
            score="sc",
        ),
    ),
    "a label set, a seed sequence": (
        _proxy_pool(2000, 10),
        dict(goal=Each(0.1), budget=Budget(batch_size=20), label_set=[0, 1, 2], random_seed=np.random.SeedSequence(42)),
    ),
}


@pytest.mark.parametrize("case", list(REPLAYS))
def test_the_replay_in_memory_is_the_campaign_in_a_file(monkeypatch, case):
    """Two independent paths, same seeds: the in-memory replay against real campaigns in temporary files.

    Equal tables (but the wall times), traces and final intervals, to the last bit, and the same
    warnings.
    """
    import warnings

    from bayeseval.campaign import proxy_replay, simulate

    data, settings = REPLAYS[case]
    kw = {"strata": "g", "proxy": "judge", "random_seed": 7, "n_repeats": 1, **settings}

    def run():
        seed = kw["random_seed"]  # a seed sequence spawns other children once used: a fresh one per run
        fresh = np.random.SeedSequence(seed.entropy) if isinstance(seed, np.random.SeedSequence) else seed
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = simulate(data, y_pred="pred", y_true="truth", progress=False, **{**kw, "random_seed": fresh})
        return res, [(w.category, str(w.message)) for w in caught]

    def no_file(*args):
        raise AssertionError("the in-memory replay ran a campaign file")

    monkeypatch.setattr(proxy_replay, "_one_file", no_file)
    memory, said = run()
    monkeypatch.undo()
    monkeypatch.setattr(proxy_replay, "replay_proxy", functools.partial(proxy_replay.replay_proxy, files=True))
    files, said_files = run()
    pd.testing.assert_frame_equal(memory.table.drop(columns="wall_time"), files.table.drop(columns="wall_time"))
    pd.testing.assert_frame_equal(memory.trace, files.trace, check_exact=True)
    pd.testing.assert_frame_equal(memory.intervals, files.intervals, check_exact=True)
    assert said == said_files
    assert len(memory.table) == kw["n_repeats"] * len(kw.get("rules", [None]))
    assert memory.table["labels_used"].gt(0).all()


def test_a_true_label_the_campaign_refuses_is_refused_by_the_replay():
    """A true label outside the campaign's labels (taken from the predictions): ingest's error, as in a campaign."""
    from bayeseval.campaign import simulate

    data = _proxy_pool(1000, 11)
    data.loc[data["g"] == 0, "truth"] = 2
    with pytest.raises(ValueError, match="invalid labels"):
        simulate(
            data, strata="g", y_pred="pred", y_true="truth", proxy="judge", goal=Each(0.1), n_repeats=1, progress=False
        )
