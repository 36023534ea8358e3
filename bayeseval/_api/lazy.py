"""Public names of a package, imported from its modules on first use (PEP 562).

A package's ``__init__`` lists which module defines each public name; nothing is imported until
a name is used, so ``import bayeseval`` and the command line's help stay light and packages can
refer to each other without import cycles.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], submodules: frozenset[str] = frozenset()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose public names live in ``exports``.

    ``exports`` maps each public name to the module that defines it, relative to ``package``;
    ``submodules`` are names of subpackages or modules reachable as attributes.
    """
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
            namespace[name] = value
            return value
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports) | submodules)

    return __getattr__, __dir__
