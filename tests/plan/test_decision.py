"""Tests for bayeseval.plan.decision: the split decision."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayeseval import plan
from bayeseval.plan import SplitDecision, split_decision
from tests.helpers import SPLIT, assert_raises_naming, run_cli

BASE = dict(n_total=300_000, n_test=60_000, share=0.0042)


def test_split_json_is_the_decision_table_row():
    # the command line builds the row without pandas; it must equal the table's row
    res = plan.split_decision(n_total=300000, n_test=60000, share=0.0042, n_min=323)
    assert json.loads(run_cli(*SPLIT)["out"]) == res.table.iloc[0].to_dict()


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


@settings(max_examples=150, deadline=None)
@given(
    st.integers(10, 2_000_000),
    st.floats(0.05, 0.5),
    st.floats(1e-4, 0.5),
    st.integers(1, 500),
    st.integers(1, 10),
    st.floats(0.05, 0.9),
    st.floats(1.0, 10.0),
)
def test_split_decision_invariants(n_total, test_frac, share, n_min, k, cap, inflate):
    n_test = max(1, int(test_frac * n_total))
    d = split_decision(
        n_total=n_total, n_test=n_test, share=share, n_min=n_min, n_groups=k, max_test_share=cap, max_inflate=inflate
    )
    assert d.n_min_total == k * n_min
    assert d.n_minority_proportional == round(share * n_test)
    if d.branch == "proportional":
        assert share * n_test >= k * n_min * (1 - 1e-9) and d.n_test == n_test
    elif d.branch == "grow_test":
        assert d.n_test > n_test or share * n_test < k * n_min
        assert d.n_test <= cap * n_total * (1 + 1e-9)
        assert d.n_minority_test >= k * n_min and not d.reweight
    elif d.branch == "raise_share":
        assert d.n_test == n_test and d.reweight and d.n_minority_test == k * n_min
        assert d.test_share <= share * inflate * (1 + 1e-9)
        assert d.warning is not None
    else:
        assert d.branch == "degraded" and "precision limited" in d.warning
        assert d.n_minority_test <= k * n_min  # round(share * n_test) may reach it


def test_split_decision_bad_input_names_argument():
    assert_raises_naming(split_decision, "share", n_total=1000, n_test=100, share=1.5, n_min=10)
    assert_raises_naming(split_decision, "n_test", n_total=1000, n_test=-1, share=0.1, n_min=10)
    assert_raises_naming(split_decision, "n_min", n_total=1000, n_test=100, share=0.1, n_min=2.5)
