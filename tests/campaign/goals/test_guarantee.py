"""Tests of ``bayeseval.campaign.goals.guarantee``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval.campaign import Budget, Campaign, Each
from tests.campaign.helpers import _run


def test_guaranteed_bounds_are_clopper_pearson_then_adaptive():
    from bayeseval._kernels.adaptive import adaptive_interval
    from bayeseval.campaign.goals.guarantee import guaranteed_bounds

    s, n = np.array([3, 5, 0]), np.array([40, 50, 0])
    lo, hi = guaranteed_bounds(s, n, 0.95)
    ref = stats.binomtest(3, 40).proportion_ci(0.95, method="exact")
    assert (lo[0], hi[0]) == pytest.approx((ref.low, ref.high), abs=1e-9)
    assert (lo[2], hi[2]) == (0.0, 1.0)  # no trials
    # with at least two other strata labelled: the leave-one-out adaptive interval
    s, n = np.array([4, 3, 5, 4, 9]), np.array([50, 40, 60, 50, 20])
    alo, ahi = adaptive_interval(s, n, level=0.95)
    lo, hi = guaranteed_bounds(s, n, 0.95)
    assert lo == pytest.approx(alo, abs=1e-12) and hi == pytest.approx(ahi, abs=1e-12)


def test_status_reports_the_guaranteed_interval_with_the_pooled_one_beside_it(tmp_path, pool_campaign_spec):
    from bayeseval.campaign.goals.guarantee import guarantee_stop_level, guaranteed_bounds

    with Campaign.create(
        tmp_path / "c.db",
        pool_campaign_spec,
        strata="stratum",
        y_pred="pred",
        random_seed=2,
        budget=Budget(batch_size=60),
    ) as c:
        for _ in range(2):
            batch = c.propose()
            c.ingest(pool_campaign_spec.loc[batch.index, "truth"])
        status = c.status()
        post_lo, post_hi = c.state().intervals()
    lo, hi = guaranteed_bounds(status["successes"], status["trials"], guarantee_stop_level(0.95))
    np.testing.assert_allclose(status["lower"], lo)
    np.testing.assert_allclose(status["upper"], hi)
    np.testing.assert_allclose(status["halfwidth"], (hi - lo) / 2)
    np.testing.assert_allclose(status["pooled_lower"], post_lo)
    np.testing.assert_allclose(status["pooled_upper"], post_hi)
    assert "pooled_mean" in status  # the point estimate of lower/upper is the stratum's own rate
    np.testing.assert_allclose(status["mean"], status["successes"] / status["trials"])
    assert status["done"].tolist() == ((hi - lo) / 2 <= 0.05).tolist()


# -- the campaign asks its Guarantee object; files keep the guarantee and anytime settings ------
def _spec(**kwargs):
    from bayeseval.campaign import CampaignSpec, Each

    return CampaignSpec(y_pred="pred", strata="stratum", goal=Each(0.1), **kwargs)


def test_the_spec_takes_a_guarantee_or_its_name_and_keeps_the_stored_settings():
    from bayeseval import Guarantee
    from bayeseval.campaign import CampaignSpec

    old = _spec(anytime=True)
    for value in ("anytime", "Anytime", Guarantee.anytime()):
        spec = _spec(guarantee=value)
        assert spec == old and spec.guarantee is Guarantee.anytime() and spec.guarantee.name == "anytime"
        assert spec.anytime is True
        config = spec.to_config()
        assert (config["guarantee"], config["anytime"]) == ("stratum", True)  # the file format
        assert CampaignSpec.from_config(config).guarantee is Guarantee.anytime()
    spec = _spec(guarantee=Guarantee.average())
    assert (spec.guarantee.name, spec.anytime, spec.guarantee) == ("average", False, Guarantee.average())
    assert spec.to_config()["guarantee"] == "average" and _spec().guarantee is Guarantee.stratum()
    assert spec.replace(guarantee="stratum").guarantee is Guarantee.stratum()
    anytime = _spec(guarantee="anytime")  # replace(anytime=...) switches the per-stratum guarantee, as the flag did
    assert anytime.replace(anytime=False).guarantee is Guarantee.stratum()
    assert anytime.replace(level=0.9).guarantee is Guarantee.anytime()
    assert anytime.replace(guarantee="stratum").guarantee is Guarantee.anytime()  # the flag stays
    assert _spec().replace(anytime=True).guarantee is Guarantee.anytime()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"guarantee": "each"}, ["guarantee", "'each'", "'anytime'"]),
        ({"guarantee": 3}, ["guarantee", "3"]),
        ({"guarantee": "average", "anytime": True}, ["anytime", "guarantee='average'"]),
        ({"guarantee": "anytime", "goal": "overall"}, ["anytime", "goal='overall'"]),
        ({"guarantee": "anytime", "proxy": "judge"}, ["anytime", "proxy='judge'"]),
    ],
)
def test_the_spec_refuses_a_guarantee_it_cannot_serve_naming_it(kwargs, words):
    from bayeseval.campaign import CampaignSpec

    with pytest.raises((TypeError, ValueError)) as err:
        CampaignSpec(y_pred="pred", strata="stratum", **kwargs)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_a_rule_state_follows_its_guarantee_settings():
    from bayeseval import Guarantee
    from bayeseval.campaign import RuleState

    s, n, c = [4, 9], [40, 60], np.array([3.0, 5.0])
    new = RuleState.from_counts(s, n, available=[60, 40], guarantee=Guarantee.anytime(), anytime_concentration=c)
    old = RuleState.from_counts(s, n, available=[60, 40], guarantee="stratum", anytime=True, anytime_concentration=c)
    assert (new.guarantee.name, new.anytime, new.guarantee) == ("anytime", True, Guarantee.anytime())
    assert old.guarantee is Guarantee.anytime()
    read, lo, hi = new.read_intervals()
    np.testing.assert_array_equal(lo, old.read_intervals()[1])
    assert read.tolist() == ["anytime", "anytime"] and new.with_counts().guarantee is Guarantee.anytime()
    new.anytime = False  # the stratum guarantee: Clopper-Pearson at its stop level with two strata
    new.invalidate()
    read, lo, hi = new.read_intervals()
    assert new.guarantee is Guarantee.stratum() and not new.anytime and read.tolist() == ["guaranteed"] * 2
    assert (lo[0], hi[0]) == pytest.approx(
        tuple(stats.binomtest(4, 40).proportion_ci(confidence_level=0.965, method="exact")), abs=1e-9
    )
    new.guarantee = "average"
    assert new.guarantee is Guarantee.average() and not new.per_stratum()
    with pytest.raises(ValueError, match="guarantee='average'"):
        new.anytime = True


def test_a_campaign_created_with_a_guarantee_object_stores_guarantee_and_anytime(tmp_path, pool_campaign_spec):
    import json
    import sqlite3

    from bayeseval import Guarantee
    from bayeseval.campaign import Each

    kw = dict(strata="stratum", y_pred="pred", goal=Each(0.1), random_seed=1)
    with Campaign.create(tmp_path / "a.db", pool_campaign_spec, guarantee=Guarantee.anytime(), **kw) as c:
        assert c.spec.guarantee is Guarantee.anytime() and (c.status()["read"] == "anytime").all()
    with Campaign.create(tmp_path / "b.db", pool_campaign_spec, guarantee="anytime", **kw) as c:
        pass
    configs = []
    for name in ("a.db", "b.db"):
        conn = sqlite3.connect(tmp_path / name)
        configs.append(json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0]))
        conn.close()
    assert (configs[0]["guarantee"], configs[0]["anytime"]) == ("stratum", True)
    assert configs[0]["anytime_concentration"] == configs[1]["anytime_concentration"]
    with Campaign.open(tmp_path / "a.db") as c:
        assert c.spec.guarantee is Guarantee.anytime()


def _pool_anytime(seed=0):
    rng = np.random.default_rng(seed)
    sizes, rates = [120, 600, 3000], [0.1, 0.3, 0.05]
    pool = pd.DataFrame({"g": np.repeat(["a", "b", "c"], sizes), "pred": 0})
    truth = pd.Series((rng.random(len(pool)) < np.repeat(rates, sizes)).astype(int), index=pool.index)
    return pool, truth, sizes


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_anytime_campaign_reads_the_tuned_confidence_sequence(tmp_path):
    from bayeseval import confidence_sequence
    from bayeseval._kernels.anytime import planned_trials

    pool, truth, sizes = _pool_anytime()
    c = Campaign.create(
        tmp_path / "c.db", pool, strata="g", y_pred="pred", guarantee="anytime", random_seed=2, goal=Each(0.1)
    )
    _run(c, truth, 6)
    st = c.status()
    plans = [max(min(planned_trials(0.1), n), 20) for n in sizes]
    for j, plan in enumerate(plans):
        lo, hi = confidence_sequence(int(st["successes"].iloc[j]), int(st["trials"].iloc[j]), planned_trials=plan)
        assert st["lower"].iloc[j] == pytest.approx(lo, abs=1e-12)
        assert st["upper"].iloc[j] == pytest.approx(hi, abs=1e-12)
    assert (st["read"] == "anytime").all()
    np.testing.assert_array_equal(st["done"].to_numpy(), ((st["upper"] - st["lower"]) / 2 <= 0.1).to_numpy())
    assert c.spec.anytime is True and len(c.config["anytime_concentration"]) == 3
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_resumed_anytime_campaign_matches_uninterrupted(tmp_path):
    pool, truth, _ = _pool_anytime(1)
    kw = dict(strata="g", y_pred="pred", guarantee="anytime", random_seed=3, goal=Each(0.08))
    a = Campaign.create(tmp_path / "a.db", pool, **kw)
    whole = _run(a, truth, 6, size=25)
    b = Campaign.create(tmp_path / "b.db", pool, **kw)
    first = _run(b, truth, 3, size=25)
    b.close()
    b = Campaign.open(tmp_path / "b.db")
    assert b.config["anytime_concentration"] == a.config["anytime_concentration"]
    second = _run(b, truth, 3, size=25)
    assert first + second == whole
    pd.testing.assert_frame_equal(a.status(), b.status())
    a.close()
    b.close()
