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

from tests.meta.helpers import (
    PACKAGE,
    _shared,
    import_cycles,
    import_graph,
    package_imports,
    sideways_private_imports,
    upstream_imports,
)


def core_upward_imports(root: Path = PACKAGE) -> list[str]:
    return [
        f"{importer} imports {target}"
        for importer, target, _names, _local in package_imports(root)
        if _shared(importer) and not _shared(target)
    ]


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
    required = ("bayeseval", "pymc", "arviz", "numpy", "pandas", "xarray", "scipy", "duckdb", "sklearn", "matplotlib")
    offenders = []
    for path in sorted((PACKAGE.parent / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).split(".")[0] in required
            ):
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
            p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()
        }
        clashes += [f"{init.parent.name}.{name}" for name in sorted(exported & submodules)]
    assert clashes == []
