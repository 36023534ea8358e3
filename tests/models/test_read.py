"""Tests of ``bayeseval.models.read``: which interval a stratum reads under the average guarantee."""

from __future__ import annotations

import pytest

from bayeseval import Counts
from bayeseval.checks import conflict_check
from bayeseval.models.read import which_interval


def test_threshold_decides_not_clearly_typical_and_is_validated():
    # a count somewhat high for its stratum: p-value between 0.05 and 0.20 under the others
    s, n = [4, 6, 5, 3, 7, 4, 6], [50, 70, 60, 40, 80, 50, 30]
    check = conflict_check(s, n, control="per_stratum")
    p = check.table.loc[6, "p_value"]
    assert 0.05 < p <= 0.20
    read, why = which_interval(Counts.from_arrays(s, n))
    assert read[6] == "adaptive" and why[6].startswith("count not clearly typical")
    assert not check.table.loc[6, "flag"] and check.table.loc[6, "read"] == "adaptive"
    read0, _ = which_interval(Counts.from_arrays(s, n), threshold=0.0)
    assert read0[6] == "pooled"
    with pytest.raises(ValueError, match=r"threshold.*1\.5"):
        which_interval(Counts.from_arrays(s, n), threshold=1.5)
