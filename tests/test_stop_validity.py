"""Per-stratum validity at a campaign stop: what stops a stratum under each guarantee."""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayeseval.campaign.state import RuleState


def _state(s, n, **kw):
    return RuleState.from_counts(s, n, available=np.full(len(s), 1000), target_halfwidth=0.05, **kw)


def test_an_all_zero_start_stops_only_the_average_guarantee():
    # the first 6 labels of every stratum are all correct: pooling alone narrows every pooled
    # interval within the target, while no interval valid for the stratum's own rate can be:
    # even the Clopper-Pearson upper bound of 0 of 6 at 0.965 is far above 0.05 (scipy)
    s, n = np.zeros(10, int), np.full(10, 6)
    assert stats.beta.ppf(0.965, 1, 6) > 2 * 0.05
    average, stratum = _state(s, n, guarantee="average"), _state(s, n, guarantee="stratum")
    assert average.is_done() and np.all(average.stop_halfwidths() <= 0.05)
    assert not stratum.is_done() and np.all(stratum.stop_halfwidths() > 0.05)
