"""Removed keywords name their new place; the wrapped function keeps its signature and docstring.

References: Python's own signature of the undecorated function, and the entry points' keyword lists
as they stood before the settings were folded into objects.
"""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

from bayeseval import Counts, evaluate
from bayeseval._api.moved import moved_keywords
from bayeseval.campaign import Campaign, simulate


def _plain(x, *, model="beta_binomial", groups=None):
    """Return ``x``."""
    return x, model, groups


def test_the_decorated_function_keeps_signature_name_and_docstring():
    wrapped = moved_keywords("plain", {"prior": "pass model=..."})(_plain)
    assert inspect.signature(wrapped) == inspect.signature(_plain)
    assert wrapped.__name__ == "_plain" and wrapped.__doc__ == _plain.__doc__
    assert wrapped(1, model="robust") == (1, "robust", None)  # other keywords pass through unchanged


def test_a_moved_keyword_is_a_type_error_naming_it_and_its_place():
    wrapped = moved_keywords("plain", {"prior": "pass model=PooledModel(name, prior=...)"})(_plain)
    with pytest.raises(
        TypeError, match=r"^plain\(\) no longer takes prior=; pass model=PooledModel\(name, prior=...\)$"
    ):
        wrapped(1, prior="bda")
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):  # not a moved keyword: Python's error
        wrapped(1, nope=2)


#: the keywords each entry point took before, and the word the message must name as their new place
MOVED = {
    "evaluate": {
        "engine": "PooledModel",
        "prior": "PooledModel",
        "source": "report.source",
        "tolerance": "Groups",
        "min_trials": "Groups",
        "label_set": "Proxy",
    },
    "Campaign.create": {
        "prior": "PooledModel",
        "batch_size": "Budget",
        "costs": "Budget",
        "score_bins": "Score",
        "annotators": "Annotation",
        "resolve": "Annotation",
        "content": "Annotation",
        "busy_timeout": "Campaign.open",
        "spec": "spec.keywords()",
    },
    "simulate": {
        "prior": "PooledModel",
        "batch_size": "Budget",
        "costs": "Budget",
        "score_bins": "Score",
        "spec": "spec.keywords('simulate')",
    },
}

POOL = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50, "truth": [0, 1, 1, 0] * 25})


def _call(entry, keyword, tmp_path):
    value = object()  # any value: the keyword itself is refused
    if entry == "evaluate":
        return evaluate(Counts.from_arrays([1, 2], [9, 9]), **{keyword: value})
    if entry == "Campaign.create":
        return Campaign.create(tmp_path / "c.db", POOL, strata="g", y_pred="pred", **{keyword: value})
    return simulate(POOL, strata="g", y_pred="pred", y_true="truth", progress=False, **{keyword: value})


@pytest.mark.parametrize("entry, keyword, place", [(e, k, p) for e, moves in MOVED.items() for k, p in moves.items()])
def test_every_removed_keyword_names_where_it_moved(entry, keyword, place, tmp_path):
    with pytest.raises(TypeError) as err:
        _call(entry, keyword, tmp_path)
    text = str(err.value)
    assert text.startswith(f"{entry}() no longer takes {keyword}=;") and place in text, text
    assert not (tmp_path / "c.db").exists()


@pytest.mark.parametrize(
    "func, entry", [(evaluate, "evaluate"), (Campaign.create, "Campaign.create"), (simulate, "simulate")]
)
def test_the_signatures_no_longer_list_the_moved_keywords(func, entry):
    params = inspect.signature(func).parameters
    assert not set(MOVED[entry]) & set(params)
