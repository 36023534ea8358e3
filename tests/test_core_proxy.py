"""Tests of bayeseval._kernels.proxy: merging, the MOVER interval, exact coverage, ppi_py."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeseval._kernels.proxy import (
    cells_interval,
    effective_labels,
    merge_sparse_cells,
    proxy_interval,
    score_cells,
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


def _mover_reference(s, n, w, level):
    """MOVER (Zou and Donner 2008) from statsmodels' Wilson limits, cell by cell."""
    rate = np.array(s) / np.array(n)
    lo, hi = proportion_confint(s, n, alpha=1 - level, method="wilson")
    est = float(np.dot(w, rate))
    return (est, est - np.sqrt(np.sum((np.array(w) * (rate - lo)) ** 2)),
            est + np.sqrt(np.sum((np.array(w) * (hi - rate)) ** 2)))


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


def test_post_stratified_estimate_is_ppi_with_cell_rate_proxy():
    """PPI (lambda = 1) with the cell's labelled rate as the proxy is post-stratification."""
    from ppi_py import ppi_mean_pointestimate

    rng = np.random.default_rng(5)
    cell_lab = rng.integers(0, 3, 60)
    y = (rng.random(60) < np.array([0.2, 0.5, 0.9])[cell_lab]).astype(float)
    cell_unl = rng.integers(0, 3, 5000)
    n = np.bincount(cell_lab, minlength=3)
    s = np.bincount(cell_lab, weights=y, minlength=3)
    rate = s / n
    ppi = ppi_mean_pointestimate(y, rate[cell_lab], rate[cell_unl], lam=1)
    shares = np.bincount(cell_unl, minlength=3) / 5000
    est, _, _ = cells_interval(s, n, shares, 0.95)
    assert float(np.ravel(ppi)[0]) == pytest.approx(float(est), abs=1e-12)


def test_agrees_with_ppi_mean_ci_at_large_counts():
    """Binary proxy, lambda tuned by ppi_py: at 4,000 labels the intervals coincide."""
    from ppi_py import ppi_mean_ci

    rng = np.random.default_rng(11)
    big = 400_000
    right = rng.random(big) < 0.7
    judge = np.where(rng.random(big) < 0.85, right, ~right).astype(float)
    lab = np.zeros(big, dtype=bool)
    lab[rng.choice(big, 4000, replace=False)] = True
    y, z = right[lab].astype(float), judge[lab]
    lo_p, hi_p = (float(np.ravel(v)[0]) for v in ppi_mean_ci(y, z, judge[~lab], alpha=0.05))
    n = np.array([(z == 0).sum(), (z == 1).sum()])
    s = np.array([y[z == 0].sum(), y[z == 1].sum()])
    shares = np.array([(judge == 0).mean(), (judge == 1).mean()])
    b = proxy_interval(s, n, shares, 0.95)
    assert bool(b.uses_proxy)
    assert float(b.estimate) == pytest.approx((lo_p + hi_p) / 2, abs=1.5e-3)
    assert float(b.upper - b.lower) == pytest.approx(hi_p - lo_p, rel=0.03)


# --- exact enumeration: every labelled table of truth by proxy cell ------------------------


def _scenario(theta, agreement):
    pi1 = theta * agreement + (1 - theta) * (1 - agreement)
    return np.array([1 - pi1, pi1]), np.array([theta * (1 - agreement) / (1 - pi1), theta * agreement / pi1])


def _tables(n):
    """All tables (n_00, n_01, n_10, n_11) = (cell 0 failures, successes, cell 1 ...)."""
    out = [c for c in itertools.product(range(n + 1), repeat=3) if sum(c) <= n]
    return np.array([(a, b, c, n - a - b - c) for a, b, c in out])


def _exact_coverage(n, theta, agreement, method):
    shares, rates = _scenario(theta, agreement)
    cells = _tables(n)
    probs = stats.multinomial.pmf(cells, n, [shares[0] * (1 - rates[0]), shares[0] * rates[0],
                                             shares[1] * (1 - rates[1]), shares[1] * rates[1]])
    succ = cells[:, [1, 3]]
    trials = cells[:, [0, 1]].sum(1), cells[:, [2, 3]].sum(1)
    b = proxy_interval(succ, np.stack(trials, -1), shares, 0.95, method)
    covered = (b.lower <= theta) & (theta <= b.upper)
    lo, hi = proportion_confint(succ.sum(1), n, alpha=0.05, method="wilson")
    wilson = (lo <= theta) & (theta <= hi)
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    return float(probs @ covered), float(probs @ wilson)


@pytest.mark.parametrize("theta", [0.02, 0.3, 0.5])
@pytest.mark.parametrize("agreement", [0.5, 0.85, 0.99])
def test_exact_coverage_small_case(theta, agreement):
    cp, _ = _exact_coverage(10, theta, agreement, "clopper_pearson")
    wil, wilson_only = _exact_coverage(10, theta, agreement, "wilson")
    assert cp >= 0.95
    # with Wilson limits: never more than 0.01 below level - 0.01 or labels-only Wilson
    assert wil >= min(0.94, wilson_only - 0.01)


@pytest.mark.slow
@pytest.mark.parametrize("n", [20, 50])
def test_exact_coverage_grid(n):
    for theta in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.98):
        for agreement in (0.5, 0.7, 0.85, 0.95, 0.99):
            cp, _ = _exact_coverage(n, theta, agreement, "clopper_pearson")
            wil, wilson_only = _exact_coverage(n, theta, agreement, "wilson")
            assert cp >= 0.95, (n, theta, agreement, cp)
            assert wil >= min(0.94, wilson_only - 0.01), (n, theta, agreement, wil, wilson_only)
