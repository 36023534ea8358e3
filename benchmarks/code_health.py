"""Code-health figures of the package: size, long and complex functions, import layers, docstrings.

Run ``python benchmarks/code_health.py`` from the repository root. It prints

* package lines (all lines of ``bayeseval/**/*.py``);
* functions longer than 80 lines and functions with a cyclomatic complexity over 20
  (McCabe, as ruff's C901 counts it);
* import cycles between the package's modules, sideways private imports (a private name or a
  private module taken from anywhere but ``_core``, ``_validation``, ``_warnings`` or
  ``_results``) and function-local imports of the package's own modules;
* the numpydoc pass rate of the exported objects (every name in ``__all__`` of the package and
  of its public submodules, and the public methods of exported classes).

The layer rules themselves are asserted by ``tests/test_layers.py``; this script only reports.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _layers():
    """The import analysis of ``tests/test_layers.py`` (one implementation for test and report)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_layers", ROOT / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

#: numpydoc checks that make a docstring structurally complete.
NUMPYDOC_CHECKS = (
    "GL08",  # no docstring
    "SS01",  # no summary
    "PR01",  # parameters not documented
    "PR02",  # unknown parameters documented
    "PR07",  # parameter without a description
    "RT01",  # no Returns section
    "RT03",  # Returns without a description
)


def package_lines() -> int:
    return sum(len(p.read_text().splitlines()) for p in (ROOT / "bayeseval").rglob("*.py"))


def long_functions(limit: int = 80) -> list[tuple[str, int]]:
    out = []
    for path in sorted((ROOT / "bayeseval").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    out.append((f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", length))
    return out


def complex_functions(limit: int = 20) -> list[str]:
    proc = subprocess.run(
        ["ruff", "check", "bayeseval", "--select", "C901", "--output-format", "json",
         "--config", f"lint.mccabe.max-complexity={limit}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    return [f"{Path(d['filename']).relative_to(ROOT)}:{d['location']['row']} {d['message']}"
            for d in json.loads(proc.stdout or "[]")]


def exported_objects() -> dict[str, object]:
    import bayeseval

    objects: dict[str, object] = {}
    modules = ["bayeseval"] + [f"bayeseval.{m}" for m in sorted(bayeseval._SUBMODULES)]
    for modname in modules:
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("bayeseval"):
                continue
            if inspect.isclass(obj) and issubclass(obj, Warning):
                continue
            qual = f"{obj.__module__}.{obj.__qualname__}"
            objects[qual] = obj
            if inspect.isclass(obj):
                for mname, member in vars(obj).items():
                    if mname.startswith("_"):
                        continue
                    func = member.fget if isinstance(member, property) else member
                    if isinstance(func, staticmethod | classmethod):
                        func = func.__func__
                    if inspect.isfunction(func):
                        objects[f"{qual}.{mname}"] = func
    return objects


def numpydoc_report() -> tuple[int, int, dict[str, list[str]]]:
    from numpydoc.validate import validate

    failures: dict[str, list[str]] = {}
    objects = exported_objects()
    for qual in objects:
        try:
            result = validate(qual)
        except (AttributeError, ImportError, TypeError, ValueError) as exc:  # not importable by name
            failures[qual] = [f"unresolvable: {exc}"]
            continue
        codes = [code for code, _ in result["errors"] if code in NUMPYDOC_CHECKS]
        if codes:
            failures[qual] = codes
    return len(objects), len(objects) - len(failures), failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every finding")
    args = parser.parse_args(argv)

    layers = _layers()
    graph, local = layers.import_graph(ROOT / "bayeseval")
    cycles = layers.import_cycles(graph)
    sideways = layers.sideways_private_imports(ROOT / "bayeseval")
    longf = long_functions()
    complexf = complex_functions()
    total, passing, failures = numpydoc_report()

    print(f"package lines                   {package_lines():>6}")
    print(f"functions over 80 lines         {len(longf):>6}")
    print(f"functions over complexity 20    {len(complexf):>6}")
    print(f"import cycles                   {len(cycles):>6}")
    print(f"sideways private imports        {len(sideways):>6}")
    print(f"function-local package imports  {len(local):>6}")
    print(f"numpydoc: exported objects      {total:>6}")
    print(f"numpydoc: passing               {passing:>6} ({passing / max(total, 1):.0%})")
    if args.verbose:
        for title, items in (("long", [f"{n} ({k} lines)" for n, k in longf]),
                             ("complex", complexf), ("cycles", [" -> ".join(c) for c in cycles]),
                             ("sideways", sideways),
                             ("numpydoc", [f"{k}: {', '.join(v)}" for k, v in failures.items()])):
            for item in items:
                print(f"  [{title}] {item}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
