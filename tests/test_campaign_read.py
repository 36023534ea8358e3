"""Campaigns stop and report each stratum on one interval: the guaranteed one, or the pooled one.

References are computed here independently of the campaign code: the pooled posterior's
quantiles from its Beta mixture, the independent model's interval from scipy's Beta quantiles,
coverage against the true rates of a seeded pool.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval.campaign import Campaign, CampaignSpec, simulate
from bayeseval.campaign.state import RuleState
from bayeseval.cli.campaign import main

# one stratum at 20/150 among nine near 0.06 with 100 trials each
S = np.r_[20, [5, 6, 7, 5, 6, 7, 5, 6, 7]]
N = np.r_[150, [100] * 9]


def _state(s=S, n=N, **kw) -> RuleState:
    kw.setdefault("target_halfwidth", 0.05)
    return RuleState.from_counts(s, n, available=np.full(len(s), 1000), **kw)


def test_average_stops_every_stratum_on_its_pooled_interval():
    st = _state(guarantee="average")
    lo, hi = st.posterior.mixture.interval(0.95)
    np.testing.assert_allclose(st.stop_halfwidths(), (hi - lo) / 2, rtol=1e-12)
    read, rlo, rhi = st.read_intervals()
    assert set(read) == {"pooled"}
    np.testing.assert_array_equal(rlo, lo)
    # a stratum is done exactly when its pooled half-width reaches the target, for targets
    # on either side of the half-widths
    hw = (hi - lo) / 2
    for target in (hw.min() - 1e-6, float(np.median(hw)), hw.max() + 1e-6):
        np.testing.assert_array_equal(_state(guarantee="average", target_halfwidth=target).stratum_done(),
                                      hw <= target)


def test_independent_model_reads_its_own_interval():
    st = _state(model="independent", guarantee="average")
    read, rlo, rhi = st.read_intervals()
    assert set(read) == {"own"}
    np.testing.assert_allclose(rlo, stats.beta.ppf(0.025, 1 + S, 1 + N - S), rtol=1e-9)
    np.testing.assert_allclose(rhi, stats.beta.ppf(0.975, 1 + S, 1 + N - S), rtol=1e-9)


def _campaign_pool(seed=0):
    rng = np.random.default_rng(seed)
    sizes, rates = [400, 1500, 1500, 1500, 1500], [0.2, 0.05, 0.06, 0.06, 0.07]
    g = np.repeat(list("abcde"), sizes)
    err = rng.random(g.size) < np.repeat(rates, sizes)
    truth = rng.integers(0, 2, g.size)
    return pd.DataFrame({"g": g, "truth": truth, "pred": np.where(err, 1 - truth, truth)})


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


def test_old_files_with_stopping_fields_open_without_them(tmp_path):
    pool = _campaign_pool()
    spec = CampaignSpec(y_pred="pred", strata="g", target_halfwidth=0.08, random_seed=3)
    Campaign.create(tmp_path / "c.db", pool, spec=spec).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    assert "own_floor" not in config
    config.update(stop_level=None, own_check=None, min_data_share=0.0, own_level="default", own_floor=2.0,
                  min_pooling_gain=None, read_threshold=0.2, adaptive_floor=None)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as camp:
        # the campaign stores the label set it found in the pool; every other setting is the spec's
        assert camp.spec.replace(label_set=None) == spec
        assert camp.status()["labelled"].sum() == 0


@pytest.mark.parametrize("flag", ["--own-floor", "--read-threshold", "--stop-level", "--adaptive-floor"])
def test_cli_has_no_stopping_flags(tmp_path, flag):
    pool = _campaign_pool()
    pool.to_csv(tmp_path / "pool.csv", index_label="row")
    args = ["campaign", "create", "--db", str(tmp_path / "c.db"), "--pool", str(tmp_path / "pool.csv"), "--strata", "g",
            "--y-pred", "pred", "--id-column", "row", flag, "2"]
    assert main(args) == 2 and not (tmp_path / "c.db").exists()
