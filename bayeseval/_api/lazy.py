"""Public names of a package, imported from its modules on first use (PEP 562).

A package's ``__init__`` imports its public names under ``if TYPE_CHECKING:``, which type
checkers read and the interpreter skips, and lists them in ``__all__``; :func:`lazy_exports`
reads the same imports from the ``__init__``'s source the first time a name is missing, and
imports a name's module only when the name is used. So ``import bayeseval`` and the command
line's help stay light, packages can refer to each other without import cycles, and each
public name is written twice (its import and ``__all__``), not three times.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any


def declared_imports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """Name -> (absolute module, name there) of the ``from ... import`` lines under ``if TYPE_CHECKING:``.

    Parameters
    ----------
    source : str
        Source of a package's ``__init__``.
    package : str
        The package's name (relative imports are resolved against it).

    Returns
    -------
    dict of str to (str, str)
        Each imported name (its ``as`` name when given), the module it comes from and its
        name in that module.

    Examples
    --------
    >>> declared_imports("if TYPE_CHECKING:\\n    from .a import f, g as h\\n", "pkg")
    {'f': ('pkg.a', 'f'), 'h': ('pkg.a', 'g')}
    """
    import ast  # deferred: read on the first missing name only, not at import

    table: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    module = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package)
                    table.update({alias.asname or alias.name: (module, alias.name) for alias in stmt.names})
    return table


def lazy_exports(
    package: str, exports: Mapping[str, str] | None = None, submodules: frozenset[str] = frozenset()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose public names are imported on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str, optional
        Each public name and the module that defines it, relative to ``package``. By default
        the names the package's ``__init__`` imports under ``if TYPE_CHECKING:``
        (:func:`declared_imports`), read from its source when a name is first missing.
    submodules : frozenset of str, optional
        Subpackages or modules reachable as attributes.

    Returns
    -------
    tuple of callable
        The package's ``__getattr__`` and ``__dir__``.

    Examples
    --------
    >>> import bayeseval.report
    >>> bayeseval.report.gate.__module__
    'bayeseval.report.gates'
    """
    namespace = importlib.import_module(package).__dict__
    table = None if exports is None else {name: (f"{package}.{module}", name) for name, module in exports.items()}

    def modules() -> dict[str, tuple[str, str]]:
        nonlocal table
        if table is None:
            source = namespace["__loader__"].get_source(package)
            if source is None:
                raise ImportError(f"{package}: no source to read its public names from")
            table = declared_imports(source, package)
        return table

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # dunder probes (copy, pickle, doctest) never name an export
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if name in modules():
            module, attribute = modules()[name]
            value = getattr(importlib.import_module(module), attribute)
            namespace[name] = value
            return value
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(modules()) | submodules)

    return __getattr__, __dir__
