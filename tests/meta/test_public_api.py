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

import matplotlib
import pandas as pd
import pytest

import bayeseval
from bayeseval import datasets
from bayeseval.campaign import Campaign
from bayeseval.campaign.simulation import simulate, synthetic_pool
from tests.helpers import _close_figures  # noqa: F401
from tests.meta.helpers import numpydoc_failures, public_callables

matplotlib.use("Agg")


MODULES = ("estimate.stratified", "plan.sizes", "plan.allocation", "plan.decision", "plan.gaps", "estimate.classic", "counts.counts")


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


def _signature(func):
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):  # builtins without a signature
        return None


API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


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


def test_random_seed_is_keyword_only_campaign_spec():
    for func in (simulate, Campaign.create, synthetic_pool):
        param = inspect.signature(func).parameters["random_seed"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, func


def test_no_banned_names_and_keyword_only_seeds_in_these_modules():
    offenders = []
    for qual, func in public_callables():
        if not any(f"bayeseval.{m}." in qual for m in MODULES):
            continue
        sig = _signature(func)
        for name, par in (sig.parameters.items() if sig else ()):
            if name in BANNED:
                offenders.append(f"{qual}({name})")
            if name == "random_seed" and par.kind is not inspect.Parameter.KEYWORD_ONLY:
                offenders.append(f"{qual}(random_seed positional)")
    assert offenders == []


def test_docstrings_of_these_modules_pass_numpydoc():
    objects = {q: f for q, f in public_callables() if any(f"bayeseval.{m}." in q for m in MODULES)}
    assert len(objects) > 20
    assert numpydoc_failures(objects) == {}


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


def test_every_exported_docstring_passes_numpydoc():
    failures = numpydoc_failures(dict(public_callables()))
    assert failures == {}


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


def test_random_seed_is_keyword_only_in_the_generators():
    with pytest.raises(TypeError):
        datasets.make_fraud_scenario(1000, 0.01, 2, 7)
    a = datasets.make_fraud_scenario(1000, 0.01, 2, random_seed=7)
    pd.testing.assert_frame_equal(a, datasets.make_fraud_scenario(1000, share=0.01, n_groups=2, random_seed=7))
