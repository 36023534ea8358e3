"""Code-health figures of the package: size, long and complex functions, import layers, docstrings.

Run ``python benchmarks/code_health.py`` from the repository root. It prints

* package lines (all lines of ``bayeseval/**/*.py``);
* functions longer than 80 lines and functions with a cyclomatic complexity over 20
  (McCabe, as ruff's C901 counts it);
* import cycles between the package's modules, sideways private imports (a private name or a
  private module taken from anywhere but the shared packages ``_api``, ``_kernels``,
  ``_backends`` and ``_render``), imports from a later stage of the data flow, and
  function-local imports of the package's own modules;
* the numpydoc pass rate of the exported objects (every name in ``__all__`` of the package and
  of its public submodules, and the public methods of exported classes);
* the layout figures: modules over 1,000 lines, the class with the most methods, the parameters
  of ``CampaignSpec``, ``Campaign.create`` and ``simulate``, deprecation sites (decorators or warnings about old
  names), and test files named after no module or package of the package (outside ``tests/validity``
  and ``tests/meta``);
* with ``--timings``: the wall time of the README's test command and of ``bayeseval demo``
  (minutes: run it on an idle machine).

The layer rules themselves are asserted by ``tests/meta/test_layers.py``; this script only reports.
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
    """Import ``tests.<name>``: the tests and this report share one implementation."""
    import importlib

    return importlib.import_module(f"tests.{name}")


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
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "bayeseval",
            "--select",
            "C901",
            "--output-format",
            "json",
            "--config",
            f"lint.mccabe.max-complexity={limit}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return [
        f"{Path(d['filename']).relative_to(ROOT)}:{d['location']['row']} {d['message']}"
        for d in json.loads(proc.stdout or "[]")
    ]


def long_modules(limit: int = 1000) -> list[tuple[str, int]]:
    return sorted(
        (
            (str(p.relative_to(ROOT)), n)
            for p in (ROOT / "bayeseval").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > limit
        ),
        key=lambda x: -x[1],
    )


def largest_class() -> tuple[str, int]:
    best = ("", 0)
    for path in sorted((ROOT / "bayeseval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                k = sum(isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef) for b in node.body)
                if k > best[1]:
                    best = (f"{path.relative_to(ROOT)}:{node.name}", k)
    return best


def entry_point_parameters() -> dict[str, int]:
    import inspect

    from bayeseval.campaign import Campaign, CampaignSpec, simulate

    return {
        "CampaignSpec": len(inspect.signature(CampaignSpec).parameters),
        "Campaign.create": len(inspect.signature(Campaign.create).parameters) - 1,
        "simulate": len(inspect.signature(simulate).parameters),
    }


#: what marks compatibility code for an old name
_DEPRECATION_MARKS = (
    "renamed_kwargs",
    "positional_deprecated",
    "deprecated_alias",
    "DeprecationWarning",
    "is renamed",
    "former name",
)


def deprecation_sites() -> list[str]:
    out = []
    for path in sorted((ROOT / "bayeseval").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(mark in line for mark in _DEPRECATION_MARKS):
                out.append(f"{path.relative_to(ROOT)}:{number}")
    return out


def unmirrored_test_files() -> list[str]:
    """Test files whose name matches no module or package of the package (``test_<module>.py``,
    ``test_<package>_<module>.py``, ``test_<package>.py``)."""
    modules = (
        {p.stem for p in (ROOT / "bayeseval").rglob("*.py")}
        | {f"{p.parent.name}_{p.stem}".lstrip("_") for p in (ROOT / "bayeseval").rglob("*.py")}
        | {p.parent.name.lstrip("_") for p in (ROOT / "bayeseval").rglob("__init__.py")}
    )
    out = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        rel = path.relative_to(ROOT / "tests")
        if rel.parts[0] in ("validity", "meta"):
            continue
        if path.stem.removeprefix("test_") not in modules:
            out.append(str(rel))
    return out


def timings() -> dict[str, float]:
    import os
    import tempfile
    import time

    env = dict(os.environ, MPLBACKEND="Agg")
    out = {}
    for name, cmd in (
        ("default tests (pytest -n 2 -q)", [sys.executable, "-m", "pytest", "-n", "2", "-q"]),
        ("bayeseval demo", [sys.executable, "-m", "bayeseval", "demo", "--out", tempfile.mkdtemp(), "--force"]),
    ):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=False)
        out[name] = time.perf_counter() - start
    return out


def numpydoc_report() -> tuple[int, int, dict[str, list[str]]]:
    api = _test_module("meta.helpers")
    objects = dict(api.public_callables())
    failures = api.numpydoc_failures(objects)
    return len(objects), len(objects) - len(failures), failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every finding")
    parser.add_argument("--timings", action="store_true", help="also time the default tests and the demo (minutes)")
    args = parser.parse_args(argv)

    layers = _test_module("meta.helpers")
    graph, local = layers.import_graph(ROOT / "bayeseval")
    cycles = layers.import_cycles(graph)
    sideways = layers.sideways_private_imports(ROOT / "bayeseval")
    upstream = layers.upstream_imports(ROOT / "bayeseval")
    longf = long_functions()
    complexf = complex_functions()
    total, passing, failures = numpydoc_report()

    print(f"package lines                   {package_lines():>6}")
    print(f"functions over 80 lines         {len(longf):>6}")
    print(f"functions over complexity 20    {len(complexf):>6}")
    print(f"import cycles                   {len(cycles):>6}")
    print(f"sideways private imports        {len(sideways):>6}")
    print(f"imports from a later stage      {len(upstream):>6}")
    print(f"function-local package imports  {len(local):>6}")
    print(f"numpydoc: exported objects      {total:>6}")
    print(f"numpydoc: passing               {passing:>6} ({passing / max(total, 1):.0%})")
    big = long_modules()
    cls, n_methods = largest_class()
    params = entry_point_parameters()
    shims = deprecation_sites()
    unmirrored = unmirrored_test_files()
    print(f"modules over 1,000 lines        {len(big):>6}")
    print(f"largest class (methods)         {n_methods:>6}  {cls}")
    for name, k in params.items():
        print(f"parameters of {name:<18}{k:>6}")
    print(f"deprecation sites               {len(shims):>6}")
    print(f"test files named after no module{len(unmirrored):>6}")
    if args.timings:
        for name, seconds in timings().items():
            print(f"{name:<32}{seconds:>6.0f} s")
    if args.verbose:
        for title, items in (
            ("long", [f"{n} ({k} lines)" for n, k in longf]),
            ("complex", complexf),
            ("cycles", [" -> ".join(c) for c in cycles]),
            ("sideways", sideways),
            ("later stage", upstream),
            ("numpydoc", [f"{k}: {', '.join(v)}" for k, v in failures.items()]),
            ("over 1,000 lines", [f"{m} ({k})" for m, k in big]),
            ("deprecation", shims),
            ("test file", unmirrored),
        ):
            for item in items:
                print(f"  [{title}] {item}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
