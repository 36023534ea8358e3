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


MODULES = (
    "estimate.stratified",
    "plan.sizes",
    "plan.allocation",
    "plan.decision",
    "plan.gaps",
    "estimate.classic",
    "counts.counts",
)


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
        for name, par in sig.parameters.items() if sig else ():
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


# -- the results protocol: every public result class has it ---------------------------------
#: public classes returned by public functions that are not results: inputs, settings,
#: handles and building blocks (each with the reason it is not a result)
NOT_RESULTS = {
    "Metric": "a metric definition (an input)",
    "Design": "a sampling design (an input)",
    "Prior": "a prior specification (an input)",
    "Goal": "a campaign goal (a setting)",
    "Guarantee": "what each stratum's interval promises (a setting)",
    "Gains": "the allocation rules' per-stratum worth of a label (a building block)",
    "PoolDesign": "a campaign's sampling design (a setting)",
    "RuleState": "an allocation rule's internal state",
    "ExistingLabels": "the checked input labels a campaign starts from (an input)",
    "CampaignStore": "a handle on a campaign's SQLite file",
    "Campaign": "a handle on a campaign (its status() is the table)",
    "CampaignSpec": "a campaign's settings",
    "CampaignState": "the allocation loop's state of a campaign",
    "MetricStates": "the allocation loop's per-metric states",
    "LabelContext": "what the label functions read of a campaign (an input)",
    "StatusSnapshot": "a campaign's status read at one moment, for the webhook server's JSON (an input)",
    "CampaignFindings": "what a campaign's HTML report says, for its renderer (an input)",
}


def _public_modules():
    import pkgutil

    yield bayeseval
    for info in pkgutil.walk_packages(bayeseval.__path__, "bayeseval."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or parts[1] in ("cli", "spark"):
            continue
        yield importlib.import_module(info.name)


def _returned_names(func) -> set[str]:
    """The names in a callable's return annotation (a string under postponed evaluation)."""
    ann = _signature(func).return_annotation if _signature(func) is not None else None
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
    return set(re.findall(r"[A-Za-z_]\w*", text or ""))


def result_classes() -> dict[str, type]:
    """Every public class that derives from ``Result`` or that a public function or method
    returns, less :data:`NOT_RESULTS`."""
    from bayeseval._api.results import Result

    classes, returned = {}, set()
    for module in _public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                classes[name] = obj
                members = [m for k, m in vars(obj).items() if not k.startswith("_")]
                for member in members:
                    func = member.__func__ if isinstance(member, staticmethod | classmethod) else member
                    if inspect.isfunction(func):
                        returned |= _returned_names(func)
            elif inspect.isfunction(obj):
                returned |= _returned_names(obj)
    return {n: c for n, c in classes.items() if (issubclass(c, Result) or n in returned) and n not in NOT_RESULTS}


def test_every_public_result_class_has_the_results_protocol():
    found = result_classes()
    # the walk finds the results the API page lists, those of the checks and models included
    assert {
        "PPCResult",
        "Posterior",
        "Audit",
        "Counts",
        "StratifiedRisk",
        "ImpactRatioReport",
        "GateResult",
        "PoolingComparison",
        "SBCResult",
        "Report",
    } <= set(found)
    missing = {}
    for name, cls in found.items():
        lacks = [
            attr
            for attr in ("table", "to_frame", "_repr_html_")
            if not hasattr(cls, attr) and attr not in getattr(cls, "__dataclass_fields__", {})
        ]
        if cls.__repr__ is object.__repr__:
            lacks.append("__repr__")
        if lacks:
            missing[name] = lacks
    assert missing == {}
    assert not set(NOT_RESULTS) & set(found)


def test_the_results_of_a_fit_and_its_check_display_their_tables():
    import numpy as np

    successes, trials = [30, 8, 45, 60], [100, 12, 140, 150]
    post = bayeseval.fit_hierarchical(successes, trials, random_seed=0, draws=400)
    check = bayeseval.posterior_predictive_check(post, random_seed=0)
    counts = bayeseval.Counts.from_arrays(successes, trials, strata=list("abcd"))
    for result in (post, check, counts):
        frame = result.to_frame()
        assert list(frame["trials"]) == trials and frame is not result.table
        page, text = result._repr_html_(), repr(result)
        assert "<table" in page and str(trials[0]) in text and "trials" in text
    # the table's numbers are the closed-form ones: raw rates successes / trials
    np.testing.assert_allclose(post.table["raw_rate"], np.divide(successes, trials))
    assert "Global statistics" in repr(check) and "Global statistics" in check._repr_html_()


def test_gate_is_exported_at_the_top_level():
    from bayeseval.report.gates import GateResult, gate

    assert bayeseval.gate is gate and bayeseval.GateResult is GateResult
    assert {"gate", "GateResult"} <= set(bayeseval.__all__) and "gate" in dir(bayeseval)


def test_the_api_page_package_table_lists_every_top_level_name():
    text = API_PAGE.read_text()
    lines = text[text.index("| stage |") :].splitlines()
    table = lines[2 : next(i for i, line in enumerate(lines) if not line.startswith("|"))]
    listed = {name for line in table for name in re.findall(r"`(\w+)`", line.split("|")[2])}
    assert set(bayeseval.__all__) - {"__version__"} == listed
