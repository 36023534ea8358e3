"""The sampling design object and counting under it (clusters, graded outcomes)."""

from __future__ import annotations

import pytest

import bayeseval as be
from bayeseval.counts.design import Design, as_design
from bayeseval.io.records import implied_design


def test_design_defaults_repr_and_equality() -> None:
    assert Design() == Design(cluster=None, inclusion=None, population="process")
    assert repr(Design()) == "Design()"
    assert repr(Design(cluster="item", population="pool")) == "Design(cluster='item', population='pool')"
    assert be.Design is Design
    assert hash(Design(cluster="item")) == hash(Design(cluster="item"))
    with pytest.raises(AttributeError):
        Design().cluster = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"cluster": 3}, TypeError, ["design.cluster", "3"]),
        ({"cluster": ""}, ValueError, ["design.cluster", "''"]),
        ({"inclusion": ["pi"]}, TypeError, ["design.inclusion", "['pi']"]),
        ({"population": "finite"}, ValueError, ["design.population", "'finite'", "'pool'"]),
    ],
)
def test_design_refuses_bad_fields_naming_them(kwargs, error, words) -> None:
    with pytest.raises(error) as info:
        Design(**kwargs)
    for w in words:
        assert w in str(info.value)


def test_as_design_accepts_none_design_and_dict_only() -> None:
    assert as_design(None) == Design()
    d = Design(cluster="item")
    assert as_design(d) is d
    assert as_design({"cluster": "item", "population": "pool"}) == Design(cluster="item", population="pool")
    with pytest.raises(TypeError, match=r"design must be a Design.*'item'"):
        as_design("item")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"design has unknown field 'clusters'"):
        as_design({"clusters": "item"})


def test_readers_imply_a_design() -> None:
    import pandas as pd

    once = pd.DataFrame({"model": ["m", "m"], "task": ["t", "t"], "item": [1, 2]})
    twice = pd.DataFrame({"model": ["m", "m"], "task": ["t", "t"], "item": [1, 1]})
    assert implied_design(once) == Design()
    assert implied_design(twice) == Design(cluster="item")
