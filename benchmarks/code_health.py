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
* the layout figures: modules over 1,000 lines, the class with the most methods, deprecation
  sites (decorators or warnings about old names), and test files named after no module or package
  of the package (outside ``tests/validity`` and ``tests/meta``);
* the campaign room figures (below);
* with ``--timings``: the wall time of the README's test command and of ``bayeseval demo``
  (minutes: run it on an idle machine).

The section "campaign room figures" measures how easy the campaign package is to find one's way
in. Everything under ``bayeseval/campaign/`` (subpackages included) is the campaign room:

* campaign files: the ``.py`` files of the room (``__init__.py`` included), and its lines;
* campaign import edges: distinct importer -> target pairs of room modules, from every
  ``import`` and ``from ... import`` in a room module (module-level, under ``TYPE_CHECKING`` and
  function-local alike); ``from bayeseval.campaign import x`` with ``x`` a submodule is an edge
  to that submodule, any other name an edge to the package; a module importing itself is no
  edge;
* files opened to follow "propose the next batch": a real campaign (a seeded pool of 600 rows
  in 3 strata with predictions, ``Campaign.create``, ``propose(20)``, the true labels of that
  batch ingested) proposes a second batch of 20 under :func:`sys.setprofile`; the figures are
  the files under ``bayeseval/campaign/`` and, separately, the other files of ``bayeseval/``
  whose functions (comprehensions and lambdas included, module bodies excluded) ran during
  that call; an ``__init__.py`` counts only when a function it defines ran (``--verbose``
  lists the files);
* ``isinstance`` checks on goal types: calls ``isinstance(x, C)`` in ``bayeseval/`` whose ``C``
  (or a member of a tuple or ``|`` union ``C``) names ``Each``, ``Overall``, ``Gap``, ``Decide``
  or ``Goal``, bare or as an attribute (``goals.Decide``); one per call;
* guarantee string comparisons: comparisons in ``bayeseval/`` with one side whose source text
  (as :func:`ast.unparse` writes it) contains ``guarantee`` (any case) and another side a string
  constant, or a tuple, list or set of string constants (``spec.guarantee == "stratum"``,
  ``guarantee in ("stratum", "average")``); one per comparison;
* duplicate pairs, measured here with no tool outside the repository: the lines of
  ``bayeseval/**/*.py`` are normalised (whitespace stripped; blank lines and lines without a
  letter, digit or underscore, such as ``)``, ``]``, closing quotes or a numpydoc underline,
  dropped); two places sharing a run of 6 or more consecutive identical normalised lines are a pair
  (windows of 6 lines are hashed; windows matching at consecutive offsets merge into one run),
  each unordered pair of places counted once; overlapping places in one file are no pair;
* mypy errors: the ``error:`` lines of ``python -m mypy`` with the ``[tool.mypy]`` settings of
  ``pyproject.toml`` (on their ``files``, ``packages`` or ``modules``, else on
  ``bayeseval/_kernels``, ``bayeseval/_api``, ``bayeseval/counts`` and ``bayeseval/campaign``)
  or, without such settings, of ``mypy bayeseval/_kernels bayeseval/_api bayeseval/counts
  bayeseval/campaign --ignore-missing-imports``, with a fresh cache each run; "not installed"
  when mypy cannot be imported;
* parameters of the entry points ``CampaignSpec``, ``Campaign.create``, ``simulate``,
  ``evaluate``, ``audit``, ``tabulate`` and ``gate``, taken from the package's public names
  (:func:`inspect.signature`, ``self`` and ``cls`` excluded);
* the default test time is the ``--timings`` figure above.

The layer rules themselves are asserted by ``tests/meta/test_layers.py``; this script only reports.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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


#: the entry points whose parameters are counted (dotted public names of the package)
ENTRY_POINTS = ("CampaignSpec", "Campaign.create", "simulate", "evaluate", "audit", "tabulate", "gate")


def entry_point_parameters() -> dict[str, int]:
    """Parameters of each entry point, ``self`` and ``cls`` excluded."""
    import inspect

    import bayeseval
    import bayeseval.campaign

    out = {}
    for name in ENTRY_POINTS:
        head, *rest = name.split(".")
        obj = getattr(bayeseval, head, None) or getattr(bayeseval.campaign, head)
        for attr in rest:
            obj = getattr(obj, attr)
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
        out[name] = len(params)
    return out


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


# -- campaign room figures --------------------------------------------------------------------

PACKAGE = ROOT / "bayeseval"
ROOM = PACKAGE / "campaign"
#: the goal classes whose ``isinstance`` checks are counted
GOAL_CLASSES = frozenset({"Each", "Overall", "Gap", "Decide", "Goal"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _room_files() -> list[Path]:
    return sorted(ROOM.rglob("*.py"))


def _known_module(name: str, modules: set[str]) -> str | None:
    """The longest prefix of a dotted name that is a module of ``modules``."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:k])) in modules:
            return prefix
    return None


def _import_targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: set[str]):
    """The modules of ``modules`` an import statement loads from (a submodule named in a
    ``from`` import is the target, not its package)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield _known_module(alias.name, modules)
        return
    if node.level:
        base = importer.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    for alias in node.names:
        full = f"{source}.{alias.name}"
        yield full if full in modules else _known_module(source, modules)


def campaign_import_edges() -> set[tuple[str, str]]:
    """Distinct ``(importer, target)`` pairs of campaign modules, from every import statement."""
    files = _room_files()
    modules = {_module_name(p) for p in files}
    edges = set()
    for path in files:
        importer = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _import_targets(node, importer, path.name == "__init__.py", modules):
                    if target is not None and target != importer:
                        edges.add((importer, target))
    return edges


def _synthetic_pool(n_rows: int = 600, random_seed: int = 20240) -> tuple[Any, Any]:
    """A pool of ``n_rows`` predictions in 3 strata and the true labels (seeded)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(random_seed)
    stratum = rng.choice(["a", "b", "c"], size=n_rows)
    y_pred = rng.integers(0, 2, size=n_rows)
    error = rng.random(n_rows) < pd.Series(stratum).map({"a": 0.05, "b": 0.15, "c": 0.30}).to_numpy()
    pool = pd.DataFrame({"stratum": stratum, "y_pred": y_pred})
    return pool, pd.Series(np.where(error, 1 - y_pred, y_pred), index=pool.index)


def propose_files() -> tuple[list[str], list[str]]:
    """Files of the campaign room and of the rest of the package whose functions run while a
    campaign with one ingested batch proposes the next batch of 20."""
    import tempfile
    import warnings

    import bayeseval
    from bayeseval.campaign import Campaign, Each

    package = Path(bayeseval.__file__).resolve().parent
    pool, truth = _synthetic_pool()
    ran: dict[str, set[str]] = {}

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name != "<module>":
            ran.setdefault(frame.f_code.co_filename, set()).add(frame.f_code.co_name)

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "health.sqlite"
        with Campaign.create(path, pool, strata="stratum", y_pred="y_pred", goal=Each(0.1), random_seed=7) as campaign:
            batch = campaign.propose(20)
            campaign.ingest(truth.loc[batch.index])
            sys.setprofile(profile)
            try:
                campaign.propose(20)
            finally:
                sys.setprofile(None)

    room, rest = [], []
    for filename in ran:
        try:
            rel = Path(filename).resolve().relative_to(package)
        except ValueError:
            continue
        (room if rel.parts[0] == "campaign" else rest).append(f"bayeseval/{rel.as_posix()}")
    return sorted(room), sorted(rest)


def _names(node: ast.expr) -> list[str]:
    """Class names in an ``isinstance`` second argument (names, attributes, tuples, unions)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple | ast.List):
        return [n for elt in node.elts for n in _names(elt)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _names(node.left) + _names(node.right)
    return []


def goal_isinstance_checks() -> list[str]:
    out = []
    for path in _package_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
                and GOAL_CLASSES.intersection(_names(node.args[1]))
            ):
                out.append((str(path.relative_to(ROOT)), node.lineno, ast.unparse(node)))
    return [f"{file}:{line} {text}" for file, line, text in sorted(out)]


def _is_string_constant(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return False


def guarantee_string_comparisons() -> list[str]:
    out = []
    for path in _package_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            texts = [ast.unparse(side).lower() for side in sides]
            if any("guarantee" in t for t in texts) and any(
                _is_string_constant(side) for side, t in zip(sides, texts, strict=True) if "guarantee" not in t
            ):
                out.append((str(path.relative_to(ROOT)), node.lineno, ast.unparse(node)))
    return [f"{file}:{line} {text}" for file, line, text in sorted(out)]


#: a run of this many identical normalised lines makes a duplicate pair
DUPLICATE_LINES = 6


def _normalised_lines(path: Path) -> list[tuple[str, int]]:
    """``(stripped line, line number)`` of the lines holding a letter, digit or underscore."""
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if any(c.isalnum() or c == "_" for c in stripped):
            out.append((stripped, number))
    return out


def duplicate_pairs(window: int = DUPLICATE_LINES) -> list[str]:
    """Pairs of places sharing a run of ``window`` or more identical normalised lines."""
    files = [str(p.relative_to(ROOT)) for p in _package_files()]
    lines = [_normalised_lines(ROOT / f) for f in files]
    places: dict[int, list[tuple[int, int]]] = {}
    for f, rows in enumerate(lines):
        texts = [text for text, _ in rows]
        for i in range(len(texts) - window + 1):
            places.setdefault(hash(tuple(texts[i : i + window])), []).append((f, i))
    # matching windows, grouped by diagonal: (file a, file b, offset) -> starts in file a
    diagonals: dict[tuple[int, int, int], list[int]] = {}
    for group in places.values():
        for k, (fa, ia) in enumerate(group):
            for fb, ib in group[k + 1 :]:
                if fa == fb and ib - ia < window:
                    continue  # overlapping places in one file
                if [t for t, _ in lines[fa][ia : ia + window]] != [t for t, _ in lines[fb][ib : ib + window]]:
                    continue  # hash collision
                diagonals.setdefault((fa, fb, ib - ia), []).append(ia)
    out = []
    for (fa, fb, offset), starts in sorted(diagonals.items()):
        starts.sort()
        run_start = previous = starts[0]
        for i in [*starts[1:], None]:
            if i is not None and i == previous + 1:
                previous = i
                continue
            end = previous + window - 1
            out.append(
                f"{files[fa]}:{lines[fa][run_start][1]}-{lines[fa][end][1]} = "
                f"{files[fb]}:{lines[fb][run_start + offset][1]}-{lines[fb][end + offset][1]}"
            )
            if i is not None:
                run_start = previous = i
    return out


def mypy_errors() -> list[str] | None:
    """The ``error:`` lines of mypy (None when mypy is not installed)."""
    import importlib.util
    import tempfile
    import tomllib

    if importlib.util.find_spec("mypy") is None:
        return None
    config = tomllib.loads((ROOT / "pyproject.toml").read_text()).get("tool", {}).get("mypy")
    args = [f"bayeseval/{p}" for p in ("_kernels", "_api", "counts", "campaign")]
    if config is None:
        args.append("--ignore-missing-imports")
    elif any(key in config for key in ("files", "packages", "modules")):
        args = []  # the settings name what to check
    with tempfile.TemporaryDirectory() as cache:
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", *args, "--cache-dir", cache, "--no-color-output", "--no-error-summary"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


def campaign_room_figures() -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The figures of the section "campaign room figures", and the findings behind them."""
    files = _room_files()
    edges = campaign_import_edges()
    room, rest = propose_files()
    isinstance_checks = goal_isinstance_checks()
    comparisons = guarantee_string_comparisons()
    duplicates = duplicate_pairs()
    errors = mypy_errors()
    figures: dict[str, Any] = {
        "campaign files": len(files),
        "campaign lines": sum(len(p.read_text().splitlines()) for p in files),
        "campaign import edges": len(edges),
        "propose: campaign files": len(room),
        "propose: other package files": len(rest),
        "isinstance checks on goal types": len(isinstance_checks),
        "guarantee string comparisons": len(comparisons),
        f"duplicate pairs ({DUPLICATE_LINES}+ lines)": len(duplicates),
        "mypy errors": "not installed" if errors is None else len(errors),
    }
    figures.update({f"parameters of {name}": k for name, k in entry_point_parameters().items()})
    details = {
        "campaign edge": [f"{a} -> {b}" for a, b in sorted(edges)],
        "propose, campaign": room,
        "propose, package": rest,
        "goal isinstance": isinstance_checks,
        "guarantee string": comparisons,
        "duplicate": duplicates,
        "mypy": errors or [],
    }
    return figures, details


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
    shims = deprecation_sites()
    unmirrored = unmirrored_test_files()
    print(f"modules over 1,000 lines        {len(big):>6}")
    print(f"largest class (methods)         {n_methods:>6}  {cls}")
    print(f"deprecation sites               {len(shims):>6}")
    print(f"test files named after no module{len(unmirrored):>6}")
    figures, details = campaign_room_figures()
    print("campaign room figures")
    for name, value in figures.items():
        print(f"  {name:<38}{value:>6}")
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
            *details.items(),
        ):
            for item in items:
                print(f"  [{title}] {item}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
