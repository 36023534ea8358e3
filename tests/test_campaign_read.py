"""Campaigns stop and report a non-typical stratum on the interval evaluate tells users to read.

References are computed here independently of the campaign code: the leave-one-out mid-p
value from scipy's Beta-binomial pmf over the leave-one-out mixture, the adaptive interval
from :func:`bayeseval._kernels.adaptive.fab_interval` called directly, coverage against the
true rates of a seeded pool.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval._kernels.conflict import read_choice
from bayeseval._kernels.fab import DIFFUSE_WEIGHT, fab_interval
from bayeseval._kernels.loo_prior import loo_beta_mixture
from bayeseval.campaign import Campaign, CampaignSpec, simulate
from bayeseval.campaign.rules import STOPPING_DEFAULTS, RuleState, stopping_options
from bayeseval.cli.campaign import _STOPPING, main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

# one stratum at 20/150 among nine near 0.06 with 100 trials each
S = np.r_[20, [5, 6, 7, 5, 6, 7, 5, 6, 7]]
N = np.r_[150, [100] * 9]


def _state(s=S, n=N, **kw) -> RuleState:
    kw.setdefault("target_halfwidth", 0.05)
    return RuleState.from_counts(s, n, available=np.full(len(s), 1000), **kw)


def _loo_mid_p(s, n, i):
    """Two-sided mid-p of stratum i's count under its leave-one-out Beta-mixture predictive (scipy)."""
    w, a, b = loo_beta_mixture(s, n)
    y = np.arange(n[i] + 1)
    pmf = (w[i][:, None] * stats.betabinom.pmf(y[None, :], n[i], a[i][:, None], b[i][:, None])).sum(axis=0)
    below, at, above = pmf[: s[i]].sum(), pmf[s[i]], pmf[s[i] + 1:].sum()
    return min(1.0, 2 * min(below, above) + at)


def _adaptive(s, n, i, level=0.95):
    w, a, b = loo_beta_mixture(s, n)
    iv = fab_interval(s[i], n[i], a[i], b[i], w[i], level=level, diffuse_weight=DIFFUSE_WEIGHT)
    return float(iv.lower), float(iv.upper)


def test_defaults_agree_everywhere():
    assert STOPPING_DEFAULTS["read_threshold"] == 0.2 and STOPPING_DEFAULTS["adaptive_floor"] is None
    assert all(_STOPPING[k] == STOPPING_DEFAULTS[k] for k in _STOPPING)
    spec = CampaignSpec(y_pred="p", strata="g")
    assert spec.stopping()["read_threshold"] == 0.2 and spec.stopping()["adaptive_floor"] is None
    assert spec.stopping()["own_floor"] == 2.0 and spec.stopping()["min_pooling_gain"] is None


@pytest.mark.parametrize(("name", "bad", "text"), [
    ("read_threshold", 1.0, "None or a number in [0, 1)"), ("read_threshold", "0.2", "None or a number in [0, 1)"),
    ("read_threshold", True, "None or a number in [0, 1)"), ("adaptive_floor", 0.9, "None or a number of at least 1"),
    ("adaptive_floor", float("inf"), "None or a number of at least 1"),
])
def test_bad_options_are_value_errors_naming_them(name, bad, text):
    with pytest.raises(ValueError, match=re.escape(f"{name} must be {text}, got {bad!r}")):
        stopping_options(0.95, **{name: bad})
    with pytest.raises(ValueError, match=name):
        CampaignSpec(y_pred="p", strata="g", **{name: bad})


def test_the_stop_uses_the_adaptive_halfwidth():
    st = _state()
    # the stratum is not clearly typical: mid-p (scipy) at most 0.2, so it reads adaptive
    p = _loo_mid_p(S, N, 0)
    assert p <= 0.2
    assert st.reading().read[0] == "adaptive"
    lo, hi = _adaptive(S, N, 0)
    # its pooled interval meets the target, its adaptive interval does not
    assert st.halfwidths()[0] <= 0.05 < (hi - lo) / 2
    np.testing.assert_allclose(st.stop_halfwidths()[0], (hi - lo) / 2, rtol=1e-9)
    assert not st.goal_met()[0] and not st.stratum_done()[0]
    # the pooled-reading strata stop on their pooled half-width
    np.testing.assert_array_equal(st.stop_halfwidths()[1:], st.halfwidths()[1:])
    # with the read rule off the stratum stops on its pooled interval (the rule before)
    old = _state(read_threshold=None)
    assert old.reading() is None
    np.testing.assert_array_equal(old.stop_halfwidths(), old.halfwidths())
    assert old.stratum_done()[0]
    # a target the adaptive interval meets lets it stop
    assert _state(target_halfwidth=(hi - lo) / 2 + 1e-6).goal_met()[0]


def test_read_intervals_and_cache_follow_the_counts():
    st = _state()
    read, rlo, rhi = st.read_intervals()
    lo, hi = st.intervals()
    alo, ahi = _adaptive(S, N, 0)
    assert read.tolist() == read_choice(S, N).read.tolist()
    np.testing.assert_allclose([rlo[0], rhi[0]], [alo, ahi], rtol=1e-9)
    np.testing.assert_array_equal(rlo[1:], lo[1:])
    # new counts: the cached choice is dropped
    st.successes = np.r_[9, S[1:]]
    st.invalidate()
    assert st.reading().read.tolist() == read_choice(st.successes, N).read.tolist()
    assert st.reading().read[0] == "pooled"


def test_independent_model_reads_its_own_interval():
    st = _state(model="independent")
    read, rlo, rhi = st.read_intervals()
    assert set(read) == {"own"} and st.reading() is None
    np.testing.assert_array_equal(rlo, st.intervals()[0])


def test_adaptive_floor_holds_back_pooled_strata():
    s, n = np.r_[6, 5, 6, 7, 5, 6, 7, 5, 6, 7], np.full(10, 100)
    d = 0.046
    base = _state(s, n, target_halfwidth=d)
    assert base.reading().read.tolist() == read_choice(s, n).read.tolist()
    widths = np.array([np.diff(_adaptive(s, n, i))[0] / 2 for i in range(10)])
    for floor in (1.0, 1.2, 2.0):
        st = _state(s, n, target_halfwidth=d, adaptive_floor=floor)
        np.testing.assert_array_equal(st.adaptive_supported(), widths <= floor * d)
    # at floor 1 some strata are held back and some are not, at floor 2 none (so the check can
    # fail both ways)
    assert 0 < (widths <= d).sum() < 10 and (widths <= 2 * d).all()


def _campaign_pool(seed=0):
    rng = np.random.default_rng(seed)
    sizes, rates = [400, 1500, 1500, 1500, 1500], [0.2, 0.05, 0.06, 0.06, 0.07]
    g = np.repeat(list("abcde"), sizes)
    err = rng.random(g.size) < np.repeat(rates, sizes)
    truth = rng.integers(0, 2, g.size)
    return pd.DataFrame({"g": g, "truth": truth, "pred": np.where(err, 1 - truth, truth)})


def test_status_read_columns_match_read_choice(tmp_path):
    pool = _campaign_pool()
    with Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", target_halfwidth=0.05,
                         batch_size=100, random_seed=1, guarantee="average") as camp:
        for _ in range(3):
            batch = camp.propose()
            camp.ingest(pool.loc[batch.index, "truth"])
        status = camp.status()
    s, n = status["successes"].to_numpy(), status["trials"].to_numpy()
    choice = read_choice(s, n)
    assert status["read"].tolist() == choice.read.tolist()
    assert "adaptive" in status["read"].tolist()  # the counts exercise both kinds
    for i in range(len(s)):
        if choice.read[i] == "adaptive":
            np.testing.assert_allclose(status[["read_lower", "read_upper"]].iloc[i], _adaptive(s, n, i), rtol=1e-9)
        else:
            assert status["read_lower"].iloc[i] == status["lower"].iloc[i]
    np.testing.assert_allclose(status["halfwidth"], (status["read_upper"] - status["read_lower"]) / 2)


def test_simulate_judges_coverage_on_the_read_interval():
    pool = _campaign_pool()
    res = simulate(pool, strata="g", y_pred="pred", y_true="truth", rules=["expected_width"], n_repeats=2,
                   batch_size=50, target_halfwidth=0.06, random_seed=2, progress=False)
    iv = res.intervals
    truth = (pool["truth"] != pool["pred"]).groupby(pool["g"]).mean()
    tr = iv["stratum"].map(truth)
    np.testing.assert_array_equal(iv["covered"], (iv["read_lower"] <= tr) & (tr <= iv["read_upper"]))
    pooled = iv["read"] == "pooled"
    np.testing.assert_array_equal(iv.loc[pooled, "read_lower"], iv.loc[pooled, "lower"])


def test_spec_round_trip_and_old_files(tmp_path):
    spec = CampaignSpec(y_pred="pred", strata="g", read_threshold=None, adaptive_floor=1.2, own_floor=1.5,
                        min_pooling_gain=1.3)
    back = CampaignSpec.from_config(json.loads(json.dumps(spec.to_config())))
    assert back == spec
    assert back.stopping() == {**spec.stopping(), "read_threshold": None, "adaptive_floor": 1.2}
    pool = _campaign_pool()
    Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", adaptive_floor=1.2).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    assert config["adaptive_floor"] == 1.2
    for key in ("own_floor", "min_pooling_gain", "read_threshold", "adaptive_floor"):
        config.pop(key)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as camp:
        assert {k: camp.spec.stopping()[k] for k in _STOPPING} == _STOPPING
        assert camp.state().read_threshold == 0.2


def test_cli_sets_the_stopping_options(tmp_path):
    pool = _campaign_pool()
    pool.to_csv(tmp_path / "pool.csv", index_label="row")
    args = ["campaign", "create", "--db", str(tmp_path / "c.db"), "--pool", str(tmp_path / "pool.csv"), "--strata", "g",
            "--y-pred", "pred", "--id-column", "row", "--read-threshold", "none", "--adaptive-floor", "1.5",
            "--own-floor", "off", "--min-pooling-gain", "1.2"]
    assert main(args) == 0
    with Campaign.open(tmp_path / "c.db") as camp:
        st = camp.state()
        assert (st.read_threshold, st.adaptive_floor, st.own_floor, st.min_pooling_gain) == (None, 1.5, None, 1.2)
    bad = ["campaign", "create", "--db", str(tmp_path / "d.db"), "--pool", str(tmp_path / "pool.csv"),
           "--strata", "g", "--y-pred", "pred", "--adaptive-floor", "0.5"]
    assert main(bad) == 2 and not (tmp_path / "d.db").exists()


@pytest.mark.slow
def test_the_read_rule_raises_the_atypical_strata_coverage_seeded():
    """Seeded campaigns of the benchmark's 15% scenario (docs/validation.md 6a), first 12 repeats.

    One stratum at 0.16 holding 15% of a 40,000-row pool among nine at 0.05-0.07; coverage of
    0.16 by the interval that stratum reads at stop, against the true rate. Measured on these
    seeds: 9 of 12 repeats covered with the read rule off, 11 of 12 with it on (40 repeats:
    0.750 against 0.875, for 1.04x the labels). Tolerance: at least 2 more repeats covered and
    at most 1.2x the labels; the assertion fails if the rule has no effect. (In the 2% and 6.4%
    scenarios the default rule measured no gain: 0.700 / 0.675 and 0.700 / 0.725.)
    """
    import validate_outlier as vo

    pool = vo.atypical_pool(0.15, random_seed=1)
    kw = dict(guarantee="average", strata="stratum", y_pred="pred", y_true="truth", rules=["expected_width"], n_repeats=12,
              batch_size=20, random_seed=0, progress=False)
    out = {}
    for name, options in (("off", {"read_threshold": None}), ("on", {})):
        res = simulate(pool, **kw, **options)
        iv = res.intervals[res.intervals["stratum"] == "s00"]
        truth = float((pool.loc[pool["stratum"] == "s00", "truth"] != pool.loc[pool["stratum"] == "s00", "pred"]).mean())
        covered = (iv["read_lower"] <= truth) & (truth <= iv["read_upper"])
        out[name] = (int(covered.sum()), res.table["labels_used"].mean())
    assert out["on"][0] >= out["off"][0] + 2
    assert out["on"][1] <= 1.2 * out["off"][1]


def test_status_done_is_the_stopping_rule_not_the_halfwidth_alone():
    """A stratum with 0 of 3 among nine with 10 of 200: pooling makes its half-width tiny,
    but its own Jeffreys 95% interval (scipy: Beta(0.5, 3.5)) is about 0.27 wide on each
    side, over twice the 0.1 target, so the own-evidence floor keeps it open and the
    status must not call it done."""
    from bayeseval.campaign.campaign import _status_frame

    st = RuleState.from_counts([0] + [10] * 9, [3] + [200] * 9, available=np.full(10, 100), target_halfwidth=0.1)
    own = np.diff(stats.beta.ppf([0.025, 0.975], 0.5, 3.5))[0] / 2
    assert own > 2 * 0.1
    frame = _status_frame(st)
    assert frame["halfwidth"].iloc[0] <= 0.1 and not frame["done"].iloc[0]
    assert frame["done"].iloc[1:].all()
