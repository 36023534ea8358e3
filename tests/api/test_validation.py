"""Tests of ``bayeseval._api.validation``."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from bayeseval._api.validation import check_level, check_proxy_design, short_repr

#: values of the kinds an annotation export holds (JSON: objects, lists, strings, numbers, null)
JSON_VALUES = [
    None,
    True,
    7,
    7.5,
    float("nan"),
    "",
    "a label",
    "z" * 59,
    "z" * 60,
    "z" * 61,
    [1, "2", None],
    list(range(40)),
    {"id": 5, "data": {"bayeseval_row_id": 8}, "annotations": ["x"]},
    {"choices": ["a", "b"]},
    [{"result": [{"type": "choices", "value": {"choices": ["yes"]}}]}] * 3,
]


@pytest.mark.parametrize("value", JSON_VALUES, ids=range(len(JSON_VALUES)))
def test_short_repr_at_60_is_repr_cut_at_57_plus_dots(value):
    """The messages about annotation records: ``repr``, or its first 57 characters and ``...``."""
    text = repr(value)
    expected = text if len(text) <= 60 else text[:57] + "..."
    assert short_repr(value, limit=60) == expected


@pytest.mark.parametrize("limit", [10, 60, 80])
def test_short_repr_never_exceeds_the_limit_and_keeps_short_texts(limit):
    long = "q" * (limit + 5)
    assert short_repr(long, limit=limit) == repr(long)[: limit - 3] + "..."
    assert len(short_repr(long, limit=limit)) == limit
    exact = "q" * (limit - 2)  # its repr is exactly limit characters long
    assert short_repr(exact, limit=limit) == repr(exact)


def test_short_repr_shows_numpy_scalars_as_python_values():
    assert short_repr(np.int64(3)) == "3"
    assert short_repr((np.float64(0.5), [np.bool_(True)])) == "(0.5, [True])"
    assert short_repr(np.array([1, 2])) == repr(np.array([1, 2]))


def test_short_repr_shows_a_named_tuple_as_it_is():
    """A tuple subclass is not rebuilt (a named tuple cannot be made from one iterable)."""
    point = namedtuple("point", "x y")(1, 2)
    assert short_repr(point) == "point(x=1, y=2)"
    with pytest.raises(TypeError, match=r"level must be a number in \(0, 1\), got point\(x=1, y=2\)"):
        check_level(point)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"proxy": 3, "inclusion": None}, r"^proxy must be a column name \(str\) or None, got 3$"),
        (
            {"proxy": "judge", "inclusion": ["pi"]},
            r"^design\.inclusion must be a column name \(str\) or None, got \['pi'\]$",
        ),
        (
            {"proxy": None, "inclusion": "pi"},
            r"^design\.inclusion applies to .* got design\.inclusion='pi' and proxy=None$",
        ),
        ({"proxy": None, "inclusion": None, "label_set": [0, 1]}, r"^label_set declares .* proxy=None$"),
    ],
)
def test_check_proxy_design_refuses_naming_the_argument(kwargs, message):
    with pytest.raises(TypeError, match=message):
        check_proxy_design(**kwargs)


def test_check_proxy_design_accepts_a_design_or_none():
    assert check_proxy_design(None, None) is None
    assert check_proxy_design("judge", "pi", ["a", "b"]) is None
