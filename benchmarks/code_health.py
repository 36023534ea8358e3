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
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _test_module(name: str):
    """Load ``tests/<name>.py``: the test and this report share one implementation."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_{name}", ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

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


def numpydoc_report() -> tuple[int, int, dict[str, list[str]]]:
    api = _test_module("test_public_api")
    objects = dict(api.public_callables())
    failures = api.numpydoc_failures(objects)
    return len(objects), len(objects) - len(failures), failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every finding")
    args = parser.parse_args(argv)

    layers = _test_module("test_layers")
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
