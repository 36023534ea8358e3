"""One vocabulary across the public API, checked by walking every public signature.

As scikit-learn's ``test_public_functions.py`` does: every function, class and public method
exported in an ``__all__`` of the package or of its public submodules is inspected, and a
parameter name from the banned list fails the test with the name to use instead.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import bayeseval
from bayeseval._api.results import Result

#: banned parameter name -> the project's name for it
BANNED = {
    "population_shares": "weights",
    "shares": "weights",
    "truth": "y_true",
    "prediction": "y_pred",
    "predictions": "y_pred",
    "alpha": "level",
    "confidence": "level",
    "seed": "random_seed",
    "rng": "random_seed",
    "n_boot": "n_resamples",
    "n_bootstrap": "n_resamples",
    "n_reps": "n_repeats",
    "repeats": "n_repeats",
    "n_draws": "draws",
}


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


def _signature(func):
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):  # builtins without a signature
        return None


def test_the_walk_finds_the_main_entry_points():
    names = {q.rsplit(".", 1)[-1] for q, _ in public_callables()}
    assert {"tabulate", "proportion_ci", "fit_hierarchical", "evaluate", "simulate"} <= names


def test_no_banned_parameter_names():
    offenders = []
    for qual, func in public_callables():
        sig = _signature(func)
        if sig is None:
            continue
        for name in sig.parameters:
            if name in BANNED:
                offenders.append(f"{qual}({name}=...): use {BANNED[name]!r}")
    assert offenders == []


def test_random_seed_is_keyword_only():
    offenders = []
    for qual, func in public_callables():
        sig = _signature(func)
        if sig is None or "random_seed" not in sig.parameters:
            continue
        if sig.parameters["random_seed"].kind is not inspect.Parameter.KEYWORD_ONLY:
            offenders.append(qual)
    assert offenders == []


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


def test_every_exported_docstring_passes_numpydoc():
    failures = numpydoc_failures(dict(public_callables()))
    assert failures == {}


# -- the API page documents every exported name --------------------------------------------------

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"
ENTRY = re.compile(r"^::: ([\w.]+)\s*$")
MEMBERS = re.compile(r"^\s+members: \[(.*)\]\s*$")


def _resolve(dotted: str):
    """The object a mkdocstrings identifier names (a module, or an attribute of one)."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, attr = dotted.rpartition(".")
        return getattr(importlib.import_module(module), attr)


def documented_objects() -> set[int]:
    """``id`` of every object the API page renders: ``::: entries`` and their ``members`` lists."""
    found: set[int] = set()
    current = None
    for line in API_PAGE.read_text().splitlines():
        if m := ENTRY.match(line):
            current = _resolve(m.group(1))
            found.add(id(current))
        elif (m := MEMBERS.match(line)) and inspect.ismodule(current):
            for name in (n.strip() for n in m.group(1).split(",") if n.strip()):
                found.add(id(getattr(current, name)))
    return found


def test_the_api_page_documents_every_exported_name():
    documented = documented_objects()
    missing = []
    # the command line's API is its commands (docs/guide/cli.md)
    modules = ["bayeseval"] + [f"bayeseval.{m}" for m in sorted(bayeseval._SUBMODULES - {"cli"})]
    for modname in modules:
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            if id(obj) not in documented:
                missing.append(f"{modname}.{name}")
    assert missing == []
