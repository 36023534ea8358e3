"""The package's import layers, read from the source with ``ast``.

Rules (data flows rows -> Counts -> estimators and models -> checks -> plans, audits, reports and
campaigns -> command line):

* no import cycles between the package's modules (module-level and function-local imports
  both count; imports under ``if TYPE_CHECKING:`` do not);
* feature packages take private helpers only from the shared private packages ``_api``,
  ``_kernels``, ``_backends`` and ``_render``: importing a private name (``_x``) or a private
  module from anywhere else is a sideways import;
* the shared private packages import nothing from the feature packages, and each only from the
  shared packages before it (``_api`` < ``_kernels`` < ``_backends``, ``_render``);
* each feature package imports only from the stages before it (:data:`STAGES`); ``plots`` may be
  imported by any stage inside a function (a plot method), as it draws every stage's results;
  ``experimental`` comes last: it may import any stage, and no stable package imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bayeseval"

#: private packages that every feature package may import from
SHARED_PRIVATE = ("bayeseval._api", "bayeseval._kernels", "bayeseval._backends", "bayeseval._render")

#: the stages of the data flow, in order: a package imports only from the stages before it
STAGES = ("_api", "_kernels", ("_backends", "_render"), "counts", "estimate", "models", "checks",
          "plan", "fairness", "report", "campaign", ("cli", "demo"), "experimental")

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
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


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


def core_upward_imports(root: Path = PACKAGE) -> list[str]:
    return [f"{importer} imports {target}"
            for importer, target, _names, _local in package_imports(root)
            if _shared(importer) and not _shared(target)]


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


# -- the contract -----------------------------------------------------------------------


def test_the_analysis_sees_a_cycle_and_a_sideways_import(tmp_path):
    """The checks below would fail on a package with a cycle and a sideways private import."""
    pkg = tmp_path / "bayeseval"
    (pkg / "_kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_kernels" / "__init__.py").write_text("from bayeseval.a import thing\n")
    (pkg / "a.py").write_text("from bayeseval.b import _helper\n")
    (pkg / "b.py").write_text("def f():\n    from bayeseval import a\n")
    graph, local = import_graph(pkg)
    assert import_cycles(graph) == [["bayeseval.a", "bayeseval.b"]]
    assert local == [("bayeseval.b", "bayeseval.a")]
    assert sideways_private_imports(pkg) == ["bayeseval.a imports bayeseval.b._helper"]
    assert core_upward_imports(pkg) == ["bayeseval._kernels imports bayeseval.a"]


def test_no_import_cycles():
    graph, _ = import_graph()
    assert import_cycles(graph) == []


def test_no_sideways_private_imports():
    assert sideways_private_imports() == []


def test_shared_packages_import_no_feature_package():
    assert core_upward_imports() == []


def test_the_analysis_sees_an_upstream_import(tmp_path):
    pkg = tmp_path / "bayeseval"
    for sub in ("counts", "report", "estimate"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "counts" / "counts.py").write_text("from bayeseval.report import thing\n")
    (pkg / "estimate" / "x.py").write_text("def f():\n    from bayeseval import plots\n")
    (pkg / "plots.py").write_text("")
    assert upstream_imports(pkg) == ["bayeseval.counts.counts imports bayeseval.report"]


def test_experimental_may_import_every_stage_and_no_stage_imports_it(tmp_path):
    pkg = tmp_path / "bayeseval"
    for sub in ("counts", "cli", "experimental"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "experimental" / "x.py").write_text("from bayeseval.cli import thing\n")
    (pkg / "counts" / "y.py").write_text("from bayeseval.experimental import x\n")
    assert upstream_imports(pkg) == ["bayeseval.counts.y imports bayeseval.experimental.x"]


def test_each_stage_imports_only_earlier_stages():
    assert upstream_imports() == []


def test_tests_do_not_skip_the_package_or_its_required_dependencies():
    """Required dependencies and the package's own modules are imported, never importorskip-ed."""
    required = ("bayeseval", "pymc", "arviz", "numpy", "pandas", "xarray", "scipy", "duckdb",
                "sklearn", "matplotlib")
    offenders = []
    for path in sorted((PACKAGE.parent / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).split(".")[0] in required):
                offenders.append(f"{path.name}:{node.lineno} {node.args[0].value}")
    assert offenders == []


def test_no_package_exports_a_name_that_is_also_its_submodule():
    """``pkg.name`` must mean one thing: importing a submodule binds it on its package, so an
    exported function of the same name would turn into the module once the module is loaded."""
    clashes = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text())
        exported = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                exported |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
        submodules = {p.stem for p in init.parent.glob("*.py")} | {
            p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()}
        clashes += [f"{init.parent.name}.{name}" for name in sorted(exported & submodules)]
    assert clashes == []
