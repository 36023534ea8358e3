"""Tests of ``bayeseval.campaign.labels.label_set``."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayeseval.campaign.labels.label_set import LabelSet

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans()))
def test_property_numbers_match_a_known_label_only_when_equal(x):
    labels = LabelSet([0, 1])
    got = labels.normalise(x)
    if isinstance(x, float) and math.isnan(x):
        assert got is not None and got not in (0, 1)  # the missing marker
    elif x in (0, 1):  # Python equality: 1.0 == 1, True == 1
        assert got == x and type(got) is int
    else:
        assert got is None
    # the text of a number normalises like the number when the labels are numbers
    if isinstance(x, int) and not isinstance(x, bool):
        assert labels.normalise(str(x)) == labels.normalise(x)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=4), st.none()))
def test_property_string_labels_never_match_numbers(x):
    labels = LabelSet(["cat", "dog", "1"])
    got = labels.normalise(x)
    if isinstance(x, str) and x in ("cat", "dog", "1"):
        assert got == x
    elif x is None or (isinstance(x, float) and math.isnan(x)) or (isinstance(x, str) and x.strip() == ""):
        assert got is not None and got not in ("cat", "dog", "1")  # missing (blank text too)
    else:
        assert got is None  # 1 never matches "1"; "Cat" never matches "cat"
