"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import bayeseval
from bayeseval._api.results import Result

PACKAGE = Path(__file__).resolve().parents[2] / "bayeseval"


#: private packages that every feature package may import from
SHARED_PRIVATE = ("bayeseval._api", "bayeseval._kernels", "bayeseval._backends", "bayeseval._render")


#: the stages of the data flow, in order: a package imports only from the stages before it
STAGES = (
    "_api",
    "_kernels",
    ("_backends", "_render"),
    ("counts", "io"),
    "estimate",
    "models",
    "checks",
    "plan",
    "fairness",
    "report",
    "campaign",
    ("cli", "demo"),
    "experimental",
)


#: top-level modules outside the stages: who may import them, and what they may import
EDGE_MODULES = {"datasets": "counts", "plots": "plan", "spark": "plan"}


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(importer: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def package_imports(root: Path = PACKAGE):
    """Yield ``(importer, target_module, names, function_local)`` for every import of the package."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    for importer, path in sorted(modules.items()):
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"

        def visit(node, local, importer=importer, is_package=is_package):
            if isinstance(node, ast.If) and _is_type_checking(node):
                for child in node.orelse:
                    yield from visit(child, local)
                return
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("bayeseval"):
                        yield importer, alias.name, [], local
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(importer, node, is_package)
                if target.startswith("bayeseval"):
                    names = [a.name for a in node.names]
                    submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
                    if submodules:
                        for sub in submodules:
                            yield importer, sub, [], local
                        names = [n for n in names if f"{target}.{n}" not in modules]
                    if names:
                        yield importer, target, names, local
            inner = local or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for child in ast.iter_child_nodes(node):
                yield from visit(child, inner)

        yield from visit(tree, False)


def import_graph(root: Path = PACKAGE) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """Module graph (parents excluded: importing a submodule loads its package) and local imports."""
    graph: dict[str, set[str]] = {}
    local = []
    for importer, target, _names, is_local in package_imports(root):
        if importer == target or importer.startswith(target + "."):
            continue
        graph.setdefault(importer, set()).add(target)
        if is_local:
            local.append((importer, target))
    return graph, local


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return cycles


def _shared(target: str) -> bool:
    return any(target == s or target.startswith(s + ".") for s in SHARED_PRIVATE)


def _private_module(target: str) -> bool:
    return any(part.startswith("_") and part != "__init__" for part in target.split(".")[1:])


def sideways_private_imports(root: Path = PACKAGE) -> list[str]:
    """Imports of private names or private modules from outside the shared private layer."""
    out = []
    for importer, target, names, _local in package_imports(root):
        if _shared(target):
            continue
        if _private_module(target) and not importer.startswith(target.rsplit(".", 1)[0] + "._"):
            out.append(f"{importer} imports module {target}")
            continue
        for name in names:
            if name.startswith("_") and not name.startswith("__"):
                out.append(f"{importer} imports {target}.{name}")
    return out


def _stage(module: str) -> int | None:
    """Position of a module's package in :data:`STAGES` (None for the top level and edges)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    edge = EDGE_MODULES.get(parts[1])
    if edge is not None:
        return _stage(f"bayeseval.{edge}")
    for i, stage in enumerate(STAGES):
        if parts[1] in (stage if isinstance(stage, tuple) else (stage,)):
            return i
    return None


def upstream_imports(root: Path = PACKAGE) -> list[str]:
    """Imports from a later stage of the data flow (a lazy import of ``plots`` is allowed)."""
    out = []
    for importer, target, _names, local in package_imports(root):
        if local and target.split(".")[1:2] == ["plots"]:
            continue
        a, b = _stage(importer), _stage(target)
        if a is not None and b is not None and b > a:
            out.append(f"{importer} imports {target}")
    return out


#: numpydoc checks that make a docstring structurally complete
NUMPYDOC_CHECKS = (
    "GL08",  # no docstring
    "SS01",  # no summary
    "PR01",  # parameters not documented
    "PR02",  # unknown parameters documented
    "PR07",  # parameter without a description
    "RT01",  # no Returns section
    "RT03",  # Returns without a description
)


def public_callables():
    """Yield ``(qualified name, callable)`` for every exported function, class and method."""
    seen = set()
    modules = ["bayeseval"] + [f"bayeseval.{m}" for m in sorted(bayeseval._SUBMODULES)]
    for modname in modules:
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, Warning):
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            qual = f"{obj.__module__}.{obj.__qualname__}"
            if inspect.isfunction(obj):
                yield qual, obj
                continue
            if not issubclass(obj, Result):  # result constructors are internal
                yield qual, obj
            for mname, member in vars(obj).items():
                if mname.startswith("_") and mname != "__init__":
                    continue
                func = member.__func__ if isinstance(member, staticmethod | classmethod) else member
                if inspect.isfunction(func) and mname != "__init__":
                    yield f"{qual}.{mname}", func


def numpydoc_failures(objects) -> dict[str, list[str]]:
    """numpydoc's structural errors (:data:`NUMPYDOC_CHECKS`) per exported object."""
    from numpydoc.docscrape import get_doc_object
    from numpydoc.validate import validate

    failures = {}
    for qual, obj in objects.items():
        errors = validate(get_doc_object(obj))["errors"]
        codes = sorted({code for code, _ in errors if code in NUMPYDOC_CHECKS})
        if codes:
            failures[qual] = codes
    return failures
