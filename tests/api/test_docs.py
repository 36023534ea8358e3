"""Tests of ``bayeseval._api.docs``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import bayeseval
from bayeseval._api.docs import BLOCKS, fill_doc, filled

#: what a placeholder left in a docstring looks like: a line holding only ``{name}``
LEFT_OVER = re.compile(r"^[ \t]*\{[A-Za-z_]\w*\}[ \t]*$", flags=re.MULTILINE)


def test_a_placeholder_line_takes_the_block_and_its_indentation():
    doc = "Summary.\n\n        Parameters\n        ----------\n        {random_seed}\n        x : int\n"
    assert filled(doc, BLOCKS) == (
        "Summary.\n\n        Parameters\n        ----------\n"
        "        random_seed : int or numpy.random.Generator, optional\n"
        "            Seed for ``numpy.random.default_rng``.\n"
        "        x : int\n"
    )


def test_braces_that_are_not_a_whole_line_are_text():
    doc = 'method : {"exact", "midp"}\n    One of {a} or {b}; ``{x}``.\n    >>> f"{x}"\n'
    assert filled(doc, {}) == doc


def test_an_unknown_block_fails_naming_it():
    with pytest.raises(KeyError, match=r"\{nope\}"):

        @fill_doc()
        def f():
            """Summary.

            {nope}
            """


def test_a_module_block_is_used_beside_the_shared_ones_and_wins():
    @fill_doc(ax="ax : Axes\n    Mine.")
    def f():
        """Summary.

        {ax}
        {random_seed}
        """

    assert "ax : Axes\n            Mine." in f.__doc__
    assert "Seed for ``numpy.random.default_rng``" in f.__doc__


def _documented():
    """``(name, object)`` of every function, class and method defined in the package's modules."""
    for info in pkgutil.walk_packages(bayeseval.__path__, "bayeseval."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) == info.name and (inspect.isfunction(obj) or inspect.isclass(obj)):
                yield f"{info.name}.{name}", obj
                for attr, member in vars(obj).items() if inspect.isclass(obj) else ():
                    member = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                    if inspect.isfunction(member):
                        yield f"{info.name}.{name}.{attr}", member


def test_no_docstring_keeps_a_placeholder():
    """Every placeholder line of the package's docstrings is filled at import."""
    documented = dict(_documented())
    assert len(documented) > 1000  # the walk reached the package
    assert "bayeseval.plots.campaigns.halfwidth_curve" in documented
    left = {name: LEFT_OVER.findall(obj.__doc__ or "") for name, obj in documented.items()}
    assert {name: found for name, found in left.items() if found} == {}
