"""Coverage at stop of ``anytime=True``: each stratum stops when its confidence sequence is narrow.

The exact programme enumerates every path of one stratum over (trials, successes) with a look
after every label and stops a path the first time the tuned sequence's half-width reaches the
target; the coverage at stop is the probability mass of stopped paths whose sequence covers the
true rate. The seeded simulation runs whole campaigns (three strata, batch size 1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval._kernels.anytime import (
    confidence_sequence_bounds,
    planned_trials,
    tuned_concentration,
)
from bayeseval.campaign import Budget, Each, simulate
from bayeseval.campaign.goals.guarantee import anytime_concentrations


def _coverage_at_stop(
    halfwidth: float, rates: tuple[float, ...], level: float = 0.95
) -> dict[float, tuple[float, float]]:
    """Exact coverage at stop and total stopped mass per rate, one look after every label.

    The stratum has more rows than it plans for, so it plans for :func:`planned_trials` and the
    sequence at rate 1/2 reaches the target there: every path stops by then (the horizon
    adds a few labels and counts a path still running at the horizon as stopped).
    """
    plan = planned_trials(halfwidth, level)
    c = tuned_concentration(plan, level)
    horizon = plan + 5
    n = np.concatenate([np.full(k + 1, k) for k in range(1, horizon + 1)]).astype(float)
    s = np.concatenate([np.arange(k + 1) for k in range(1, horizon + 1)]).astype(float)
    lo, hi = confidence_sequence_bounds(s, n, level, c)
    stop = (hi - lo) / 2.0 <= halfwidth
    start = np.concatenate([[0], np.cumsum(np.arange(2, horizon + 2))])
    out = {}
    for p in rates:
        alive, covered, stopped = np.array([1.0]), 0.0, 0.0
        for k in range(1, horizon + 1):
            new = np.zeros(k + 1)
            new[:-1] += alive * (1.0 - p)
            new[1:] += alive * p
            at = slice(start[k - 1], start[k])
            ends = stop[at] | (k == horizon)
            inside = (lo[at] <= p) & (p <= hi[at])
            covered += new[ends & inside].sum()
            stopped += new[ends].sum()
            alive = np.where(ends, 0.0, new)
        out[p] = (covered / stopped, stopped)
    return out


def test_planned_trials_is_the_fewest_reaching_the_target():
    # independent check of the search: the tuned sequence at rate 1/2 is within the target at
    # the planned size and not one trial earlier
    for h in (0.1, 0.05):
        n = planned_trials(h)
        for m, within in ((n, True), (n - 1, False)):
            lo, hi = confidence_sequence_bounds(m / 2, m, 0.95, tuned_concentration(m))
            assert bool((hi - lo) / 2 <= h) is within


def test_concentrations_plan_for_the_target_capped_at_the_rows():
    c = anytime_concentrations([10, 150, 5000], 0.95, halfwidth=0.1)
    expected = [tuned_concentration(n) for n in (20, 150, planned_trials(0.1))]
    np.testing.assert_allclose(c, expected)
    # decision goals: the rows, capped at 4,000
    np.testing.assert_allclose(
        anytime_concentrations([300, 10**6], 0.95), [tuned_concentration(300), tuned_concentration(4000)]
    )


def test_coverage_at_stop_exact_look_after_every_label():
    res = _coverage_at_stop(0.1, (0.02, 0.1, 0.5))
    for p, (cov, mass) in res.items():
        assert mass == pytest.approx(1.0, abs=1e-9), p
        assert cov >= 0.95, (p, cov)


@pytest.mark.slow
def test_coverage_at_stop_exact_target_005():
    res = _coverage_at_stop(0.05, (0.02, 0.1, 0.11, 0.3, 0.5))
    for p, (cov, mass) in res.items():
        assert mass == pytest.approx(1.0, abs=1e-9), p
        assert cov >= 0.95, (p, cov)


@pytest.mark.slow
def test_campaigns_batch_one_cover_every_stratum_at_stop():
    # 200 seeded campaigns on three small strata, a look after every label; coverage of the
    # stratum's realised rate by the interval status() reads. At a true coverage of 0.95 the
    # standard error of the observed share over 200 campaigns is 0.015.
    rng = np.random.default_rng(11)
    sizes, rates = [60, 150, 400], [0.1, 0.3, 0.05]
    pool = pd.DataFrame({"g": np.repeat(["a", "b", "c"], sizes), "pred": 0})
    pool["truth"] = (rng.random(len(pool)) < np.repeat(rates, sizes)).astype(int)
    res = simulate(
        pool,
        strata="g",
        y_pred="pred",
        y_true="truth",
        rules=["independent_beta"],
        n_repeats=200,
        goal=Each(0.15),
        guarantee="anytime",
        random_seed=5,
        progress=False,
        budget=Budget(batch_size=1),
    )
    iv = res.intervals
    assert set(iv["read"]) == {"anytime"}
    coverage = iv.groupby("stratum")["covered"].mean()
    assert (coverage >= 0.94).all(), coverage
    # every campaign stops its strata on the target (or labels a stratum to its last row)
    done = (iv["upper"] - iv["lower"]) / 2 <= 0.15
    full = iv["labelled"] == iv["stratum"].map(dict(zip("abc", sizes, strict=True)))
    assert (done | full).all()
