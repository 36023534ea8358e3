"""Tests of ``bayeseval.campaign.goals.guarantee``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval.campaign import Campaign


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
        tmp_path / "c.db", pool_campaign_spec, strata="stratum", y_pred="pred", batch_size=60, random_seed=2
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
