"""Tests of bayeseval._kernels.proxy: merging, the MOVER interval, exact coverage, ppi_py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval._kernels.proxy import (
    cells_interval,
    effective_labels,
    merge_sparse_cells,
    proxy_interval,
    score_cells,
)


def _mover_reference(s, n, w, level):
    """MOVER (Zou and Donner 2008) from statsmodels' Wilson limits, cell by cell."""
    rate = np.array(s) / np.array(n)
    lo, hi = proportion_confint(s, n, alpha=1 - level, method="wilson")
    est = float(np.dot(w, rate))
    return (
        est,
        est - np.sqrt(np.sum((np.array(w) * (rate - lo)) ** 2)),
        est + np.sqrt(np.sum((np.array(w) * (hi - rate)) ** 2)),
    )


@pytest.mark.parametrize(
    ("trials", "groups"),
    [
        ([4, 0, 1, 2, 5, 1], [0, 1, 1, 1, 2, 2]),  # hand walk: 4 | 0+1+2 | 5 (+1 tail)
        ([1, 1], [0, 0]),  # fewer than 3 labels in all: one group
        ([0, 3], [0, 0]),
        ([3, 0], [0, 0]),  # a tail without labels joins the group before it
        ([3, 3, 3], [0, 1, 2]),
    ],
)
def test_merge_sparse_cells_hand_walk(trials, groups):
    assert merge_sparse_cells(trials).tolist() == groups
    # vectorised over leading axes: the same result row by row
    both = merge_sparse_cells(np.array([trials, trials]))
    assert both.tolist() == [groups, groups]


def test_cells_interval_matches_mover_from_statsmodels_wilson():
    s, n, w = [2, 9, 15], [10, 12, 20], [0.2, 0.3, 0.5]
    got = cells_interval(s, n, w, 0.9)
    np.testing.assert_allclose(got, _mover_reference(s, n, w, 0.9), rtol=1e-10)


def test_effective_labels_hand_count():
    # smoothed rates (s + 1/2)/(n + 1): pooled 20.5/41 = 1/2 -> 0.25/40; cells 1.5/21 each
    r = 1.5 / 21
    v_cells = 2 * 0.25 * r * (1 - r) / 20
    expected = 40 * (0.25 / 40) / v_cells
    assert effective_labels([1, 19], [20, 20], [0.5, 0.5]) == pytest.approx(expected, rel=1e-12)


def test_useless_split_gives_labels_only_wilson():
    b = proxy_interval([5, 5], [10, 10], [0.5, 0.5])
    lo, hi = proportion_confint(10, 20, alpha=0.05, method="wilson")
    assert not b.uses_proxy
    assert (float(b.lower), float(b.upper)) == pytest.approx((lo, hi), rel=1e-12)


def test_no_labels_gives_unit_interval():
    b = proxy_interval([0, 0], [0, 0], [0.3, 0.7])
    assert np.isnan(b.estimate) and (float(b.lower), float(b.upper)) == (0.0, 1.0)


def test_score_cells_match_pandas_qcut():
    x = np.random.default_rng(3).random(997)
    assert score_cells(x, 5).tolist() == pd.qcut(x, 5, labels=False).tolist()


def test_score_cells_ties_collapse_bins():
    cells = score_cells([0.0] * 8 + [1.0, 1.0], 5)
    assert sorted(set(cells.tolist())) == [0, 1]
