"""promptfoo results: the JSON (``promptfoo eval -o results.json``) and JSON Lines outputs.

The JSON output holds ``{"evalId", "results": {"version", "prompts", "results": [...],
"stats"}, "config", ...}``; the JSON Lines output (``-o results.jsonl``) one result per line.
Each result is one test case run with one prompt on one provider: ``provider`` (``id``,
``label``), ``prompt`` (``raw``, ``label``), ``testCase`` (``description``, ``vars``,
``metadata``, ``assert``), ``testIdx`` (the row of the results table), ``success`` (every
assertion passed), ``score``, ``namedScores`` (the assertions' ``metric`` values),
``failureReason`` (0 none, 1 an assertion failed, 2 an error) and ``error``. With
``--repeat N`` each test case takes N rows of the table (N values of ``testIdx``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bayeseval._api.validation import short_repr
from bayeseval.io.records import (
    FIXED_COLUMNS,
    EvalRecords,
    flatten,
    records,
)

__all__ = ["read_promptfoo"]

#: ``failureReason`` of a result whose provider call failed (no answer to grade)
_ERROR = 2


def _results(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ValueError(f"path: {str(path)!r} could not be read as promptfoo results: {exc}") from exc
    inner = data.get("results") if isinstance(data, dict) else None
    if isinstance(inner, dict):
        inner = inner.get("results")
    if not isinstance(inner, list):
        raise ValueError(f"path: {str(path)!r} is not a promptfoo results file (no results list)")
    return inner


def _test_key(test: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """What makes two rows the same test: its description and variables (repeats share them)."""
    return json.dumps([test.get("description"), result.get("vars", test.get("vars"))], sort_keys=True, default=str)


def _item(item: str | None, test: Mapping[str, Any], result: Mapping[str, Any], index: int, where: str) -> Any:
    if item is None:
        return index
    if item == "description":
        value = test.get("description")
    else:
        value = (result.get("vars") or test.get("vars") or {}).get(item)
    if value is None:
        raise ValueError(
            f"item={item!r}: {where} has no such {'description' if item == 'description' else 'test variable'}"
        )
    return value


def _row(result: Any, item_id: Any, where: str) -> dict[str, Any]:
    provider, prompt = result.get("provider") or {}, result.get("prompt") or {}
    if isinstance(provider, str):
        provider = {"id": provider}
    test = result.get("testCase") or {}
    error = result.get("failureReason") == _ERROR
    success = result.get("success")
    if not error and not isinstance(success, bool):
        raise ValueError(f"path: {where} has no pass/fail 'success' value, got {short_repr(success)}")
    row = {
        "model": provider.get("label") or provider.get("id"),
        "task": prompt.get("label") or prompt.get("raw"),
        "item": item_id,
        "outcome": float("nan") if error else float(success),
    }
    score = result.get("score")
    row["score"] = float(score) if isinstance(score, int | float) and not error else float("nan")
    for name, value in (result.get("namedScores") or {}).items():
        row[name] = float(value) if isinstance(value, int | float) else float("nan")
    flatten(result.get("vars", test.get("vars")), "vars", row)
    flatten(test.get("metadata"), "metadata", row)
    return row


def read_promptfoo(path: Any, *, item: str | None = None) -> EvalRecords:
    """Read a promptfoo results file into one tidy frame: pass or fail per test, prompt and provider.

    One row per result: ``model`` the provider (its label, else its id), ``task`` the prompt
    (its label), ``item`` the test (see ``item``), ``epoch`` the repeat (``--repeat``, from 1),
    ``outcome`` 1 when the test passed and 0 when it failed (NaN when the provider call ended in
    an error: no answer was graded), ``score`` (promptfoo's score of the test) and one column per
    named score (an assertion's ``metric``), the test's variables (``vars.*``) and metadata
    (``metadata.*``). The design is ``cluster="item"`` when tests were repeated.

    Parameters
    ----------
    path : str or path-like
        The ``-o`` output of ``promptfoo eval``: ``.json`` or ``.jsonl``.
    item : str, optional
        What names a test: by default its position among the distinct tests of the file (from
        0; repeats of a test share it); ``"description"``, the test's description; any other
        name, the test variable of that name (e.g. an ``id`` variable, to join labels by).

    Returns
    -------
    EvalRecords
        ``frame`` and ``design`` (unpacks as ``frame, design``), ``outcome`` (``"success"``),
        ``scorers``.

    Raises
    ------
    ValueError
        A file that is not promptfoo's output, a result without a pass/fail value, an ``item``
        the tests lack, or two different tests with one ``item``.

    Examples
    --------
    >>> import json, os, tempfile
    >>> results = [{"provider": {"id": "openai:gpt-4o"}, "prompt": {"label": "p1"}, "testIdx": k,
    ...             "testCase": {"vars": {"q": q}, "metadata": {"category": c}}, "vars": {"q": q},
    ...             "success": ok, "score": float(ok), "namedScores": {}}
    ...            for k, (q, c, ok) in enumerate([("2+2", "math", True), ("capital", "geo", False)])]
    >>> path = os.path.join(tempfile.mkdtemp(), "results.json")
    >>> _ = open(path, "w").write(json.dumps({"results": {"version": 3, "results": results}}))
    >>> frame, design = read_promptfoo(path)
    >>> frame[["model", "task", "item", "epoch", "outcome", "metadata.category"]].values.tolist()
    [['openai:gpt-4o', 'p1', 0, 1, 1.0, 'math'], ['openai:gpt-4o', 'p1', 1, 1, 0.0, 'geo']]
    """
    if not isinstance(path, str | Path):
        raise TypeError(f"path: expected the path of promptfoo's results, got {short_repr(path)}")
    path = Path(path)
    if not path.exists():
        raise ValueError(f"path: no file {str(path)!r}")
    results = _results(path)
    tests: dict[str, int] = {}
    names: dict[Any, str] = {}
    rows = []
    for k, result in enumerate(sorted(results, key=lambda r: (r.get("testIdx", 0), r.get("promptIdx", 0)))):
        if not isinstance(result, dict):
            raise ValueError(f"path: result #{k + 1} of {str(path)!r} is not an object")
        where = f"{str(path)!r} test #{result.get('testIdx')}"
        test = result.get("testCase") or {}
        key = _test_key(test, result)
        index = tests.setdefault(key, len(tests))
        item_id = _item(item, test, result, index, where)
        if names.setdefault(item_id, key) != key:
            raise ValueError(f"item={item!r}: two different tests have the item {item_id!r}; choose another item")
        rows.append(_row(result, item_id, where))
    if not rows:
        raise ValueError(f"path: {str(path)!r} holds no result")
    _number_repeats(rows)
    scorers = list(
        dict.fromkeys(c for r in rows for c in r if c not in FIXED_COLUMNS and not c.startswith(("vars.", "metadata.")))
    )
    return records(rows, scorers, outcome_column="outcome", outcome="success", argument="path")


def _number_repeats(rows: list[dict[str, Any]]) -> None:
    """``epoch``: the repeat of each (model, task, item), from 1, in the file's row order."""
    seen: dict[tuple, int] = {}
    for row in rows:
        key = (row["model"], row["task"], row["item"])
        seen[key] = row["epoch"] = seen.get(key, 0) + 1
