"""Groups and Proxy: validation naming the argument and the field, their repr, and their parts.

References: the messages' argument names written out, and the fields as given.
"""

from __future__ import annotations

import pytest

from bayeseval import Groups, Proxy
from bayeseval._api.options import groups_parts, proxy_parts


@pytest.mark.parametrize(
    "kwargs, exc, text",
    [
        ({"columns": 3}, TypeError, "groups.columns"),
        ({"columns": []}, ValueError, "groups.columns must name at least one column"),
        ({"columns": ""}, ValueError, "groups.columns must be a non-empty column name"),
        ({"columns": ["a", 2]}, TypeError, "groups.columns"),
        ({"columns": "a", "tolerance": 1.5}, ValueError, "groups.tolerance must be in (0, 1), got 1.5"),
        ({"columns": "a", "tolerance": 0}, ValueError, "groups.tolerance must be in (0, 1), got 0"),
        ({"columns": "a", "tolerance": True}, TypeError, "groups.tolerance"),
        ({"columns": "a", "tolerance": "0.1"}, TypeError, "groups.tolerance"),
        ({"columns": "a", "min_trials": 0}, ValueError, "groups.min_trials must be an integer >= 1, got 0"),
        ({"columns": "a", "min_trials": 2.5}, TypeError, "groups.min_trials"),
    ],
)
def test_groups_validation_names_the_field(kwargs, exc, text):
    with pytest.raises(exc) as err:
        Groups(**kwargs)
    assert text in str(err.value)


@pytest.mark.parametrize(
    "kwargs, exc, text",
    [
        ({"column": 3}, TypeError, "proxy.column must be a column name (str), got 3"),
        ({"column": ""}, ValueError, "proxy.column must be a non-empty column name"),
        ({"column": "j", "label_set": "abc"}, TypeError, "proxy.label_set must be a sequence of labels"),
        ({"column": "j", "label_set": 3}, TypeError, "proxy.label_set"),
        ({"column": "j", "label_set": []}, ValueError, "proxy.label_set must hold at least one label"),
    ],
)
def test_proxy_validation_names_the_field(kwargs, exc, text):
    with pytest.raises(exc) as err:
        Proxy(**kwargs)
    assert text in str(err.value)


def test_repr_shows_the_column_and_only_the_fields_set():
    assert repr(Groups("sex")) == "Groups('sex')"
    assert repr(Groups(["sex", "age"], min_trials=5)) == "Groups(('sex', 'age'), min_trials=5)"
    assert repr(Proxy("judge")) == "Proxy('judge')"
    assert repr(Proxy("judge", label_set=[0, 1, 2])) == "Proxy('judge', label_set=(0, 1, 2))"


def test_objects_are_frozen_values():
    assert Groups(["a", "b"], tolerance=0.1) == Groups(("a", "b"), tolerance=0.1)
    assert Proxy("j", label_set=[0, 1]) == Proxy("j", label_set=(0, 1)) != Proxy("j")
    with pytest.raises(AttributeError):
        Groups("a").tolerance = 0.2  # type: ignore[misc]


def test_parts_of_a_column_or_an_object():
    assert groups_parts("g") == ("g", {"tolerance": None, "min_trials": None})
    assert groups_parts(Groups(["g", "h"], tolerance=0.2, min_trials=3)) == (
        ("g", "h"),
        {"tolerance": 0.2, "min_trials": 3},
    )
    assert proxy_parts("judge") == ("judge", None)
    assert proxy_parts(Proxy("judge", label_set=[0, 1])) == ("judge", (0, 1))
    assert proxy_parts(Proxy("judge"), [0, 1]) == ("judge", [0, 1])  # audit's own label_set beside a bare Proxy
    with pytest.raises(TypeError, match="label_set given twice"):
        proxy_parts(Proxy("judge", label_set=[0, 1]), [0, 1])
