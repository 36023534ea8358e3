"""Per-stratum validity at a campaign stop: the own-evidence rule of ``RuleState.supported``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bayeseval.campaign.rules import STOPPING_DEFAULTS, RuleState, stopping_options
from bayeseval.campaign.simulation import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _jeffreys_halfwidth(s, n, level=0.95):
    """Half-width of the equal-tailed Jeffreys interval, from scipy's Beta quantiles."""
    s, n = np.asarray(s, float), np.asarray(n, float)
    a = (1 - level) / 2
    return (stats.beta.ppf(1 - a, 0.5 + s, 0.5 + n - s) - stats.beta.ppf(a, 0.5 + s, 0.5 + n - s)) / 2


def _state(s, n, **kw):
    return RuleState.from_counts(s, n, available=np.full(len(s), 1000), target_halfwidth=0.05, **kw)


def test_own_evidence_matches_hand_computation():
    # one stratum with 6 labels among strata with 60, one with 200 labels at 0.15
    s = np.array([0, 4, 3, 4, 5, 3, 30])
    n = np.array([6, 60, 60, 60, 60, 60, 200])
    st = _state(s, n)
    own = _jeffreys_halfwidth(s, n)
    np.testing.assert_array_equal(st.own_evidence(), own <= 2.0 * 0.05)
    # with the opt-in gain condition
    st_gain = _state(s, n, min_pooling_gain=1.5)
    expected = (own <= 2.0 * 0.05) & ((own <= 0.05) | (own >= 1.5 * st_gain.halfwidths()))
    np.testing.assert_array_equal(st_gain.own_evidence(), expected)
    # the hand computation: 0 of 6 has a Jeffreys upper end of 0.34 (half-width 0.17 > 0.10),
    # 30 of 200 a half-width of 0.049 (within the target whatever pooling does)
    assert own[0] == pytest.approx(stats.beta.ppf(0.975, 0.5, 6.5) / 2 - stats.beta.ppf(0.025, 0.5, 6.5) / 2)
    assert own[0] > 0.1 and not st.own_evidence()[0] and not st.stratum_done()[0]
    assert own[6] < 0.05 and st.own_evidence()[6]


def test_floor_and_gain_are_separate_options():
    s, n = np.array([0, 4, 3, 4, 5, 3]), np.array([6, 60, 60, 60, 60, 60])
    own = _jeffreys_halfwidth(s, n)
    st = _state(s, n, min_pooling_gain=1.2)
    np.testing.assert_array_equal(st.own_evidence(), (own <= 0.1) & ((own <= 0.05) | (own >= 1.2 * st.halfwidths())))
    st = _state(s, n, own_floor=3.0, min_pooling_gain=None)
    np.testing.assert_array_equal(st.own_evidence(), own <= 0.15)
    st = _state(s, n, own_floor=None)
    assert st.own_evidence().all()
    # the independent model reads each stratum's own data: always supported
    assert _state(s, n, model="independent").own_evidence().all()


def test_stratum_done_is_goal_and_supported():
    s, n = np.array([0, 4, 3, 4, 5, 3, 30]), np.array([6, 60, 60, 60, 60, 60, 200])
    st = _state(s, n)
    np.testing.assert_array_equal(st.stratum_done(), (st.stop_halfwidths() <= 0.05) & st.supported())
    np.testing.assert_array_equal(st.supported(), st.own_evidence())  # other safeguards off by default


def test_stopping_options_defaults_and_errors():
    assert STOPPING_DEFAULTS["own_floor"] == 2.0 and STOPPING_DEFAULTS["min_pooling_gain"] is None
    out = stopping_options(0.95, own_floor=None, min_pooling_gain=1.2)
    assert out["own_floor"] is None and out["min_pooling_gain"] == 1.2
    for name, bad in (("own_floor", 0.5), ("own_floor", "2"), ("min_pooling_gain", True),
                      ("min_pooling_gain", float("nan"))):
        with pytest.raises(ValueError, match=f"{name} must be None or a number of at least 1, got {bad!r}"):
            stopping_options(0.95, **{name: bad})


#: the stopping rule before the own-evidence floor (and before the read rule)
BEFORE = {"own_floor": None, "read_threshold": None}


def test_all_zero_start_no_longer_stops_the_campaign():
    # the first labels of every stratum are all correct: pooling alone declared every
    # stratum done after a handful of labels (before), the own-evidence floor does not
    s = np.zeros(10, int)
    n = np.full(10, 6)
    assert _state(s, n, **BEFORE).is_done()
    assert not _state(s, n).is_done()


@pytest.mark.slow
def test_no_stratum_stops_on_pooling_alone_seeded():
    """Seeded campaigns, one stratum at 0.16 among nine near 0.06 (6.4% of a 40,000-row pool).

    Before the floor, repeat 7 of these 8 stopped the whole campaign after 6 labels per
    stratum, all correct (own Jeffreys half-width 0.165, more than three times the target),
    and the atypical stratum's interval missed 0.16. With the floor every stratum's own
    half-width at stop is within twice the target (checked with scipy's Beta quantiles).
    """
    import validate_outlier as vo

    pool = vo.atypical_pool(0.064, random_seed=1)
    kw = dict(guarantee="average", strata="stratum", y_pred="pred", y_true="truth", rules=["expected_width"], n_repeats=8,
              batch_size=20, random_seed=0, progress=False)
    old = simulate(pool, **kw, **BEFORE).intervals
    new = simulate(pool, **kw).intervals
    # the fewest trials with which any count has a Jeffreys half-width within 0.10 (scipy):
    # the half-width is smallest at 0 successes
    n_min = next(m for m in range(1, 200) if _jeffreys_halfwidth(0, m) <= 0.10)
    assert old["trials"].min() < n_min
    first = old.loc[old["trials"].idxmin()]
    assert first["trials"] <= 10
    assert not old.loc[(old["repeat"] == first["repeat"]) & (old["stratum"] == "s00"), "covered"].item()
    assert new["trials"].min() >= n_min
