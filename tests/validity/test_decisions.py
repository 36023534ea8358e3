"""Decisions read after every label keep their error rate (anytime-valid tests, goal "decide", gap verdicts)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import betainc

from bayeseval._kernels.anytime import decision_boundaries, decision_evidence, tuned_concentration
from bayeseval._kernels.sequential import sequential_outcome as sequential_outcome_core_anytime
from bayeseval.campaign import Budget, Campaign, Decide, Gap
from bayeseval.campaign.simulation import simulate
from tests.helpers import _decision_state, exact_pool


def _wrong_decision_probability(rate, guarantee, max_trials=800):
    from bayeseval._kernels.sequential import sequential_outcome

    cache = {}

    def decided(s, n):
        if n not in cache:
            st = _decision_state(s, n)
            st.guarantee, st.counts.model = guarantee, "independent"
            cache[n] = st.decisions()
        return cache[n]

    wrong_call = "fails" if rate < 0.10 else "meets"  # at the threshold itself "meets" (rate < 0.10) is wrong
    return sequential_outcome(
        rate,
        lambda s, n: decided(s, n) != "undecided",
        lambda s, n: decided(s, n) == wrong_call,
        every=1,
        max_trials=max_trials,
    )


def sequential_outcome(rows: int, errors: int, batch: int, threshold: float, level: float) -> dict[str, float]:
    """Exact probabilities of "meets", "fails" and "undecided" at stop for one stratum.

    Independent Beta(1, 1) prior, a look after every batch of ``batch`` rows drawn without
    replacement from ``rows`` rows holding ``errors`` errors; stop at the first look where
    P(rate < threshold) >= level ("meets") or <= 1 - level ("fails"); undecided when the
    stratum runs out of rows.
    """
    out = {"meets": 0.0, "fails": 0.0, "undecided": 0.0}
    dist = np.zeros(errors + 1)
    dist[0] = 1.0  # P(s errors seen | still running), n = 0
    n = 0
    while True:
        s = np.arange(errors + 1)
        p = betainc(1.0 + s, 1.0 + n - s, threshold)
        alive = dist > 0
        meets = alive & (p >= level)
        fails = alive & (p <= 1 - level)
        out["meets"] += dist[meets].sum()
        out["fails"] += dist[fails].sum()
        dist = np.where(meets | fails, 0.0, dist)
        if n >= rows or dist.sum() < 1e-15:
            out["undecided"] += dist.sum()
            return out
        m = min(batch, rows - n)
        new = np.zeros(errors + 1)
        for s0 in np.flatnonzero(dist > 0):
            k = np.arange(0, min(m, errors - s0) + 1)
            new[s0 + k] += dist[s0] * stats.hypergeom.pmf(k, rows - n, errors - s0, m)
        dist, n = new, n + m


def _wrong_decision(p, every, cap, c, level=0.95, min_trials=5, threshold=0.1, rows=None):
    n_all = np.arange(cap + 1)
    below, above = decision_boundaries(n_all, threshold, level, c)

    def stop(s, n):
        return (n >= min_trials) & ((s <= below[n]) | (s >= above[n]))

    def wrong(s, n):
        meets = (n >= min_trials) & (s <= below[n])
        return meets if p >= threshold else (n >= min_trials) & (s >= above[n]) & ~meets

    return sequential_outcome_core_anytime(p, stop, wrong, every=every, max_trials=cap, rows=rows)


@pytest.mark.parametrize("rate", [0.08, 0.10])
def test_stratum_decisions_keep_their_error_looking_after_every_label(rate):
    # the campaign's own decision rule, looked at after every label (batch size 1), through the
    # exact dynamic programme; Ville's inequality bounds the wrong-decision probability by 0.05.
    # The posterior rule of guarantee="average" is wrong with probability 0.277 at 0.08.
    out = _wrong_decision_probability(rate, "stratum")
    assert out.event_probability <= 0.05
    if rate == 0.08:
        assert _wrong_decision_probability(rate, "average").event_probability > 0.15


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.09, 0.11, 0.12])
def test_stratum_decisions_error_at_more_rates(rate):
    assert _wrong_decision_probability(rate, "stratum", max_trials=1500).event_probability <= 0.05


@pytest.mark.parametrize("guarantee, most", [("average", 400), ("stratum", 600)])
def test_a_campaign_decides_every_stratum_the_right_way(tmp_path, guarantee, most):
    # rates far from the threshold 0.10 either side: every decision is known; the anytime tests
    # of guarantee="stratum" need more labels than the posterior rule
    pool = exact_pool([0.01, 0.03, 0.25, 0.35], [1500] * 4, random_seed=2)
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="stratum",
        y_pred="pred",
        goal=Decide(0.1),
        random_seed=1,
        guarantee=guarantee,
        budget=Budget(batch_size=20),
    )
    while not c.done:
        batch = c.propose()
        if batch.empty:
            break
        c.ingest(pool.loc[batch.index, "truth"])
    status = c.status()
    assert status["decision"].tolist() == ["meets", "meets", "fails", "fails"]
    assert status["done"].all() and (c.forecast() == 0).all()
    np.testing.assert_array_equal(status["p_meets"] >= 0.95, [True, True, False, False])
    assert c.labels_used < most  # a width goal of 0.05 would need about 4 x 100-350 labels
    c.close()


@pytest.mark.parametrize(
    "errors, repeats",
    [
        (130, 60),  # true rate 0.13, 0.03 above the threshold
        pytest.param(120, 400, marks=pytest.mark.slow),  # 0.12: 0.02 above, the error is largest nearer
    ],
)
def test_simulated_decisions_agree_with_the_exact_sequential_test(errors, repeats):
    """One stratum, independent Beta test after every batch of 20: the share of repeats ending in
    each decision matches the exact dynamic programme (binomial tolerance 4 sd)."""
    rows, batch, thr = 1000, 20, 0.10
    exact = sequential_outcome(rows, errors, batch, thr, 0.95)
    pool = exact_pool([errors / rows], [rows], random_seed=5)
    res = simulate(
        pool,
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        goal=Decide(thr),
        rules=["independent_beta"],
        n_repeats=repeats,
        random_seed=3,
        progress=False,
        guarantee="average",
        budget=Budget(batch_size=batch),
    )  # the posterior test of the average guarantee
    made = res.intervals["decision"].value_counts().reindex(["meets", "fails", "undecided"], fill_value=0)
    for decision, p in exact.items():
        sd = np.sqrt(repeats * p * (1 - p))
        assert abs(made[decision] - repeats * p) <= 4 * sd + 1, (decision, made[decision], repeats * p)
    # the exact wrong-decision probability at this distance is within 1 - level
    assert exact["meets"] <= 0.05
    assert res.table["wrong_decisions"].sum() == made["meets"]


def test_a_gap_campaign_stops_on_a_right_verdict(tmp_path):
    pool = exact_pool([0.05, 0.06, 0.30], [3000] * 3, random_seed=4)  # true gap 0.25
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="stratum",
        y_pred="pred",
        goal=Gap(0.1),
        random_seed=0,
        budget=Budget(batch_size=30),
    )
    while not c.done:
        batch = c.propose()
        if batch.empty:
            break
        c.ingest(pool.loc[batch.index, "truth"])
    gap = c.status().attrs["gap"]
    assert gap["verdict"] == "outside" and gap["lower"] > 0.1 and gap["done"]
    c.close()


@pytest.mark.parametrize("p", [0.1, 0.13, 0.3])
def test_evidence_against_the_null_is_a_supermartingale_under_every_null_rate(p):
    # "below" tests H0: rate >= 0.1; one step ahead its conditional mean is at most its value
    t, c = 0.1, 25.0
    s, n = np.meshgrid(np.arange(61), np.arange(1, 61))
    s, n = s[s <= n], n[s <= n]
    now = np.exp(decision_evidence(s, n, t, c)[0])
    nxt = p * np.exp(decision_evidence(s + 1, n + 1, t, c)[0]) + (1 - p) * np.exp(decision_evidence(s, n + 1, t, c)[0])
    assert np.all(nxt <= now * (1 + 1e-10))
    if p == t:  # a martingale at the boundary of the null
        np.testing.assert_allclose(nxt, now, rtol=1e-9)


@pytest.mark.parametrize("p", [0.08, 0.10, 0.12])
def test_wrong_decision_at_most_alpha_with_a_look_after_every_label(p):
    out = _wrong_decision(p, 1, 600, 60.0)
    assert out.event_probability <= 0.05
    # and the test does stop: far from the threshold most runs decide by 600 labels at 0.2
    assert _wrong_decision(0.2, 1, 600, 60.0).cap_probability < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("c", [2.0, float(tuned_concentration(1500))])
def test_wrong_decision_grid_every_schedule(c):
    for p in (0.08, 0.09, 0.10, 0.11, 0.12):
        for every in (1, 5, 10, 20, 50):
            assert _wrong_decision(p, every, 4000, c).event_probability <= 0.05
    # without replacement from a finite stratum (the null edge, the worst case)
    for every in (1, 10):
        assert _wrong_decision(0.10, every, 4000, c, rows=5000).event_probability <= 0.05
