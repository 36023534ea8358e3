"""Tests for bayeseval.planning (SPEC sections 3 to 5)."""

from __future__ import annotations

import math

import pytest

from bayeseval.planning import SplitDecision, split_decision

# ---------------------------------------------------------------------------
# split_decision (SPEC section 5; figures from issue 5)
# ---------------------------------------------------------------------------

BASE = dict(n_total=300_000, n_test=60_000, share=0.0042)


def test_split_grow_test_figure():
    d = split_decision(**BASE, n_min=323)
    assert isinstance(d, SplitDecision)
    # 0.0042 * 60_000 = 252 minority rows proportionally
    assert d.n_minority_proportional == 252
    assert d.branch == "grow_test"
    # 323 / 0.0042 = 76_904.76 -> 76_905 rows, <= 0.3 * 300_000 = 90_000
    assert d.n_test == math.ceil(323 / 0.0042) == 76_905
    assert d.n_test <= 0.3 * 300_000
    assert d.n_minority_test >= 323
    assert d.test_share == pytest.approx(0.0042)
    assert not d.reweight and d.warning is None
    assert d.n_min_total == 323


def test_split_degraded_with_eight_groups():
    d = split_decision(**BASE, n_min=323, n_groups=8)
    assert d.branch == "degraded"
    assert d.n_min_total == 8 * 323 == 2584
    assert d.n_test == 60_000 and d.n_minority_test == 252
    assert "precision limited" in d.warning
    # at most 1260 minority rows exist (0.0042 * 300_000): 1260 // 323 = 3 groups
    assert d.max_groups == 3
    assert "merge groups" in d.reason


def test_split_raise_share():
    # 3 groups: 969 rows; growing needs 969/0.0042 = 230_715 > 90_000 rows;
    # raising the share to 969/60_000 = 0.01615 <= 5 * 0.0042 = 0.021
    d = split_decision(**BASE, n_min=323, n_groups=3)
    assert d.branch == "raise_share"
    assert d.n_test == 60_000
    assert d.n_minority_test == 969
    assert d.test_share == pytest.approx(969 / 60_000)
    assert d.reweight is True
    assert "reweight" in d.warning and "calibrat" in d.warning
    # with a tighter inflate cap (3 x 0.0042 = 0.0126 < 0.01615) the request degrades
    assert split_decision(**BASE, n_min=323, n_groups=3, max_inflate=3).branch == "degraded"


def test_split_keep_proportion():
    d = split_decision(**BASE, n_min=200)
    assert d.branch == "proportional"
    assert d.n_test == 60_000 and d.n_minority_test == 252
    assert d.test_share == 0.0042 and not d.reweight and d.warning is None
    # exactly at the boundary (252 needed, 252 available) still keeps the proportion
    assert split_decision(**BASE, n_min=252).branch == "proportional"
    assert split_decision(**BASE, n_min=253).branch == "grow_test"


def test_split_test_share_cap_switches_branch():
    # with a 25% cap, 76_905 rows (25.6%) is too many -> raise the share instead
    d = split_decision(**BASE, n_min=323, max_test_share=0.25)
    assert d.branch == "raise_share"
    assert d.test_share == pytest.approx(323 / 60_000)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n_total=100, n_test=200, share=0.1, n_min=5), "n_test"),
        (dict(n_total=1000, n_test=200, share=0.0, n_min=5), "share"),
        (dict(n_total=1000, n_test=200, share=float("nan"), n_min=5), "share"),
        (dict(n_total=1000, n_test=200, share=0.1, n_min=-1), "n_min"),
        (dict(n_total=1000, n_test=200, share=0.1, n_min=5, n_groups=0), "n_groups"),
        (dict(n_total=1000, n_test=200, share=0.1, n_min=5, max_inflate=0.5), "max_inflate"),
        (dict(n_total=1000, n_test=200, share=0.1, n_min=5, max_test_share=1.5), "max_test_share"),
    ],
)
def test_split_bad_input(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        split_decision(**kwargs)
