"""Tests of ``bayeseval._api.lazy``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap

import pytest

import bayeseval
from bayeseval._api.lazy import declared_imports

#: the package and its subpackages with lazily imported public names
LAZY_PACKAGES = ["bayeseval"] + [
    f"bayeseval.{name}"
    for name in sorted(bayeseval._SUBMODULES)
    if "lazy_exports(__name__" in (importlib.util.find_spec(f"bayeseval.{name}").loader.get_source(f"bayeseval.{name}"))
]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``lazypkg`` whose ``__init__`` declares ``f`` and ``h`` (``g`` renamed) of ``mod``."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            from bayeseval._api.lazy import lazy_exports

            __all__ = ["f", "h"]

            if TYPE_CHECKING:
                from lazypkg.mod import f
                from .mod import g as h

            __getattr__, __dir__ = lazy_exports(__name__)
            """
        )
    )
    (root / "mod.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("lazypkg")
    for name in ("lazypkg", "lazypkg.mod"):
        sys.modules.pop(name, None)


def test_a_name_loads_its_module_on_first_use_only(package):
    assert "lazypkg.mod" not in sys.modules
    assert {"f", "h"} <= set(dir(package)) and "lazypkg.mod" not in sys.modules
    assert package.f() == 1 and package.h() == 2
    assert package.f is sys.modules["lazypkg.mod"].f
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'g'"):
        package.g  # noqa: B018


def test_declared_imports_reads_only_the_type_checking_block():
    source = (
        "from a import x\nif TYPE_CHECKING:\n    import b\n    from c.d import y, z as w\nelse:\n    from e import v\n"
    )
    assert declared_imports(source, "pkg") == {"y": ("c.d", "y"), "w": ("c.d", "z")}


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_each_package_declares_what_its_all_lists(name):
    """``__all__`` and the imports type checkers read name the same objects."""
    module = importlib.import_module(name)
    declared = declared_imports(module.__loader__.get_source(name), name)
    assert set(declared) <= set(module.__all__)
    # every other listed name is bound at import (a name neither bound nor declared is missing)
    assert all(n in vars(module) for n in set(module.__all__) - set(declared))
    for export, (where, attribute) in declared.items():
        assert getattr(module, export) is getattr(importlib.import_module(where), attribute)
