"""One version: ``pyproject.toml``, ``bayeseval._api.version.VERSION`` and ``bayeseval.__version__`` agree."""

from __future__ import annotations

import ast
import tomllib

import bayeseval
from bayeseval._api.version import VERSION
from tests.meta.helpers import PACKAGE

#: folders whose modules still take ``__version__`` from the root package (switched in their own change)
NOT_YET_SWITCHED: tuple[str, ...] = ()


def test_pyproject_and_the_constant_agree():
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == VERSION
    assert bayeseval.__version__ == VERSION


def test_no_module_takes_the_version_from_the_root_package():
    """The package's modules import ``VERSION`` from ``_api``; only the root re-exports it."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in NOT_YET_SWITCHED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "bayeseval":
                if any(alias.name == "__version__" for alias in node.names):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []
