"""Tests of ``bayeseval.campaign.loop.proxy_cells``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design, proxy_ci
from bayeseval.campaign import Budget, Campaign, Each
from bayeseval.campaign.goals.guarantee import guarantee_stop_level
from bayeseval.campaign.loop.proxy_cells import neyman_cells
from tests.campaign.helpers import _run
from tests.helpers import _pool_campaign_proxy


def test_neyman_cells_closed_form():
    # equal spreads: labels in proportion to the cells' sizes; a cell with spread 0.5 vs 0.3
    # (rates 0.5, 0.1): shares 1000*0.5 : 1000*0.3
    assert neyman_cells(
        np.array([600, 400]), np.zeros(2), np.zeros(2), np.zeros(2), np.array([600, 400]), 100
    ).tolist() == [60, 40]
    take = neyman_cells(
        np.array([1000, 1000]), np.zeros(2), np.array([49, 9]), np.array([98, 98]), np.array([1000, 1000]), 80
    )
    r = np.array([50, 10]) / 100
    share = np.sqrt(r * (1 - r)) / np.sqrt(r * (1 - r)).sum()
    assert np.all(np.abs(take - 80 * share) <= 1)


def _cp_halfwidth(s, n, level):
    """Clopper-Pearson half-width from SciPy's Beta quantiles (the reference)."""
    from scipy.stats import beta

    a = 1 - level
    lo = beta.ppf(a / 2, s, n - s + 1) if s > 0 else 0.0
    hi = beta.ppf(1 - a / 2, s + 1, n - s) if s < n else 1.0
    return (hi - lo) / 2


def _mover_halfwidth(rate, sizes, level):
    """MOVER half-width of equal-rate cells of ``sizes`` rows, cells' Clopper-Pearson limits (SciPy)."""
    from scipy.stats import beta

    a, n = 1 - level, np.asarray(sizes, float)
    w, s = n / n.sum(), rate * n
    lo, hi = beta.ppf(a / 2, s, n - s + 1), beta.ppf(1 - a / 2, s + 1, n - s)
    return (np.sqrt((w**2 * (hi - rate) ** 2).sum()) + np.sqrt((w**2 * (rate - lo) ** 2).sum())) / 2


def test_proxy_feasibility_is_the_cells_interval_of_a_useless_proxy_at_full_labelling():
    # every row labelled, every cell at the stratum's rate (a proxy that tells nothing): the
    # cells' MOVER interval at the level the stratum guarantee stops on, 1 - 0.7 (1 - level)
    import pandas as pd

    from bayeseval.campaign.loop.proxy_cells import ProxyDesign
    from bayeseval.campaign.loop.rule_state import RuleState

    sizes = {0: [60, 140], 1: [100, 200], 2: [2000]}
    pool = pd.DataFrame(
        {
            "stratum": np.repeat([0, 0, 1, 1, 2], [60, 140, 100, 200, 2000]),
            "prediction": 0,
            "eligible": 1,
            "proxy": np.repeat([1, 0, 1, 0, 0], [60, 140, 100, 200, 2000]),
        }
    )
    pool["ord"] = np.arange(len(pool))
    design = ProxyDesign(pool, "error_rate", 1, [0, 1])
    s, n = [12, 90, 150], [200, 300, 2000]
    st = RuleState.from_counts(
        s, n, available=[0, 0, 0], strata=["a", "b", "c"], target_halfwidth=0.04, level=0.9, guarantee="stratum"
    )
    t = design.feasibility(st, [0, 1, 2])
    ref = np.array([_mover_halfwidth(s[k] / n[k], sizes[k], 1 - 0.7 * 0.1) for k in range(3)])
    np.testing.assert_allclose(t["achievable_halfwidth"].to_numpy(), ref, rtol=1e-6)
    assert t["feasible"].tolist() == (ref <= 0.04).tolist() == [True, False, True]
    assert t["max_trials"].tolist() == n


def _proxy_pool(sizes, agreement, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    frames = []
    for k, n in enumerate(sizes):
        pred = rng.integers(0, 2, n)
        truth = pred ^ (rng.random(n) < 0.1)
        judge = truth ^ (rng.random(n) >= agreement) if agreement is not None else pred
        frames.append(
            pd.DataFrame({"g": f"s{k}", "pred": pred, "truth": truth.astype(int), "judge": np.asarray(judge, int)})
        )
    return pd.concat(frames, ignore_index=True)


def _create(tmp_path, pool, name, target=0.05, **kw):
    from bayeseval.campaign import Campaign, Each

    return Campaign.create(
        tmp_path / name,
        pool.drop(columns="truth"),
        strata="g",
        y_pred="pred",
        goal=Each(target),
        guarantee="stratum",
        proxy="judge",
        label_set=[0, 1],
        random_seed=0,
        **kw,
    )


def test_proxy_campaign_warns_at_create_for_the_strata_a_useless_proxy_leaves_short(tmp_path):
    import pytest

    from bayeseval import PrecisionLimitedWarning

    pool = _proxy_pool([250, 3000], 0.97)
    with pytest.warns(PrecisionLimitedWarning, match=r"1 of 2 strata .*s0: "):
        c = _create(tmp_path, pool, "good.db")
    t = c.feasibility()
    planning = c.state().posterior.mean().to_numpy()
    cells = c._proxy.cell_pool
    c.close()
    ref = [_mover_halfwidth(planning[k], cells.loc[k].to_numpy(), 1 - 0.7 * 0.05) for k in range(2)]
    np.testing.assert_allclose(t["achievable_halfwidth"].to_numpy(), ref, rtol=1e-3)
    assert t["feasible"].tolist() == [False, True]
    assert t["max_trials"].tolist() == [250, 3000]


def test_proxy_feasibility_matches_the_campaign_labelled_to_the_end(tmp_path):
    import warnings

    from bayeseval import PrecisionLimitedWarning

    # a proxy equal to the prediction (one cell: it calls every prediction right): label every
    # row and the half-width the campaign reports is the achievable one, the Clopper-Pearson
    # half-width of the stratum's errors at the stop level
    pool = _proxy_pool([150, 180], None, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        c = _create(tmp_path, pool, "end.db", target=0.03, budget=Budget(batch_size=100))
        while len(batch := c.propose()):
            c.ingest(pool.loc[batch.index, "truth"])
        feas = c.feasibility()
    st = c.status()
    c.close()
    assert st["labelled"].tolist() == [150, 180]
    np.testing.assert_allclose(feas["achievable_halfwidth"].to_numpy(), st["halfwidth"].to_numpy(), rtol=1e-9)
    errors = (pool["pred"] != pool["truth"]).groupby(pool["g"]).sum().to_numpy()
    ref = [_cp_halfwidth(e, n, 1 - 0.7 * 0.05) for e, n in zip(errors, [150, 180], strict=True)]
    np.testing.assert_allclose(st["halfwidth"].to_numpy(), ref, rtol=1e-6)


# -- the proxy column is checked at create, as the estimator checks it ---------------------------
def _judged(n=600, seed=3):
    import pandas as pd

    rng = np.random.default_rng(seed)
    pred = rng.integers(0, 2, n)
    truth = np.where(rng.random(n) < 0.85, pred, 1 - pred)
    judge = np.where(rng.random(n) < 0.9, truth, 1 - truth)
    pool = pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "pred": pred,
            "judge": judge,
            "score": np.clip(0.1 + 0.8 * judge + rng.normal(0, 0.05, n), 0, 1),
        }
    )
    return pool, truth


_BAD_PROXIES = {
    "text numbers": (lambda p: p["score"].round(2).astype(str), "numbers stored as text"),
    "text 0/1": (lambda p: p["judge"].astype(str), "numbers stored as text"),
    "yes/no": (lambda p: p["judge"].map({1: "yes", 0: "no"}), "'no', 'yes'"),
    "-inf": (lambda p: p["score"].where(p["judge"] == 1, -np.inf), "holds -inf in"),
    "+inf": (lambda p: p["score"].mask(p.index == 7, np.inf), "holds inf in 1 row;"),
}


@pytest.mark.parametrize("case", list(_BAD_PROXIES))
def test_a_proxy_the_estimator_refuses_is_refused_at_create_and_in_simulate(tmp_path, case):
    from bayeseval.campaign import Campaign
    from bayeseval.campaign.simulation import simulate

    values, shown = _BAD_PROXIES[case]
    pool, truth = _judged()
    pool["px"] = values(pool)
    with pytest.raises(ValueError, match=r"^proxy column 'px' holds") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", proxy="px", metric="accuracy")
    assert shown in str(err.value)
    assert not (tmp_path / "c.db").exists()
    with pytest.raises(ValueError, match=r"^proxy column 'px' holds"):
        simulate(
            pool.assign(y=truth), y_true="y", strata="g", y_pred="pred", proxy="px", metric="accuracy", n_repeats=1
        )
    # the estimator gives the same refusal on the same column
    from bayeseval import proxy_ci

    frame = pool.assign(y=np.where(np.arange(len(pool)) < 60, truth, np.nan))
    with pytest.raises(ValueError, match=r"^proxy column 'px' holds"):
        proxy_ci(frame, y_true="y", y_pred="pred", proxy="px", strata="g", metric="accuracy")


def test_a_declared_class_the_judge_gives_keeps_status_working(tmp_path):
    from bayeseval.campaign import Campaign, Each

    pool, truth = _judged()
    names = np.array(["dog", "cat"])
    # the judge says "bird" on some rows; the model never does; label_set declares it
    judge = np.where(pool["judge"].to_numpy() == 1, "cat", "dog").astype(object)
    judge[::17] = "bird"
    pool = pool.assign(pred=names[pool["pred"]], judge=judge)
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="g",
        y_pred="pred",
        proxy="judge",
        metric="accuracy",
        label_set=["bird", "cat", "dog"],
        goal=Each(0.1),
        random_seed=0,
    )
    try:
        batch = c.propose(80)
        c.ingest(pool.loc[batch.index, "pred"].where(truth[batch.index] == 1, "dog").rename("label"))
        st = c.status()
        assert (st["read"] == "proxy").all() and st["labelled"].sum() == 80
        assert np.isfinite(st["mean"]).all() and ((st["lower"] <= st["mean"]) & (st["mean"] <= st["upper"])).all()
    finally:
        c.close()


def test_resumed_campaign_matches_uninterrupted(tmp_path):
    pool, truth = _pool_campaign_proxy()
    kw = dict(strata="g", y_pred="pred", proxy="judge", random_seed=3, goal=Each(0.05))
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
    pool, truth = _pool_campaign_proxy(seed=1)
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
    ref = proxy_ci(
        frame,
        y_true="y_true",
        y_pred="pred",
        proxy="judge",
        strata="g",
        metric="error_rate",
        level=guarantee_stop_level(0.95),
        design=Design(inclusion="pi"),
    ).table
    np.testing.assert_allclose(st["lower"].to_numpy(), ref["lower"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["upper"].to_numpy(), ref["upper"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["mean"].to_numpy(), ref["rate"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["agreement"].to_numpy(), ref["agreement"].to_numpy())
    assert (st["read"] == "proxy").all()


@pytest.mark.slow  # a seeded simulation, about 5 s
def test_cell_design_estimate_is_unbiased(tmp_path):
    # 40 seeded campaigns of 120 labels on one pool: the mean proxy estimate matches the pool's
    # true error rate within 3 Monte Carlo standard errors, while the raw labelled error rate is
    # pulled towards the oversampled disagreement cell
    pool, truth = _pool_campaign_proxy(n=2000, seed=2)
    true_rate = (pool["pred"] != truth).groupby(pool["g"]).mean().to_numpy()
    est, raw = [], []
    for seed in range(40):
        c = Campaign.create(
            tmp_path / f"u{seed}.db",
            pool,
            strata="g",
            y_pred="pred",
            proxy="judge",
            random_seed=seed,
            goal=Each(0.04),
            budget=120,
        )
        _run(c, truth, 3)
        st = c.status()
        est.append(st["mean"].to_numpy())
        raw.append((st["successes"] / st["trials"]).to_numpy())
        c.close()
    est, raw = np.array(est), np.array(raw)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(est.mean(axis=0) - true_rate) < 3 * se + 1e-3)
    assert np.any(np.abs(raw.mean(axis=0) - true_rate) > 5 * se)


def test_proxy_settings_checked(tmp_path):
    pool, _ = _pool_campaign_proxy(n=200)
    with pytest.raises(ValueError, match="proxy campaigns"):
        Campaign.create(tmp_path / "x.db", pool, strata="g", y_pred="pred", proxy="judge", metric="recall")
    with pytest.raises(ValueError, match="proxy column 'nope'"):
        Campaign.create(tmp_path / "y.db", pool, strata="g", y_pred="pred", proxy="nope")
    assert not (tmp_path / "x.db").exists()
