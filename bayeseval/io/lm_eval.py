"""lm-evaluation-harness per-sample logs: the ``samples_<task>_<date>.jsonl`` files of ``--log_samples``.

``lm_eval --output_path OUT --log_samples`` writes, per run, a folder named after the model
holding ``results_<date>.json`` (``model_name`` among its keys) and one
``samples_<task>_<date>.jsonl`` per task: one JSON object per document and filter, with
``doc_id``, ``doc`` (the document's fields), ``target``, ``filter``, ``metrics`` (the names of
the metrics computed) and each metric's value for that document. A document answered several
times (``repeats``) has one value per metric, aggregated by the task.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bayeseval._api.docs import fill_doc
from bayeseval._api.validation import short_repr
from bayeseval.io.records import FIXED_COLUMNS, EvalRecords, FileKind, flatten, input_files, records

__all__ = ["read_lm_eval"]

#: ``samples_<task>_<date>.jsonl``; the date as lm-eval writes it, ``2024-05-14T10-22-33.123456``
_NAME = re.compile(r"samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl")


def _lines(path: Path) -> list[dict[str, Any]]:
    records = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"files: {str(path)!r} line {n} is not JSON: {exc}") from exc
                if not isinstance(obj, dict) or "doc_id" not in obj:
                    raise ValueError(f"files: {str(path)!r} line {n} has no 'doc_id': not an lm-eval samples file")
                records.append(obj)
    except OSError as exc:
        raise ValueError(f"files: {str(path)!r} could not be read: {exc}") from exc
    return records


def _model_name(path: Path, date: str | None) -> str:
    """``model_name`` of the run's ``results_<date>.json`` beside the file, else the folder's name."""
    candidates = [path.parent / f"results_{date}.json"] if date else []
    candidates += sorted(path.parent.glob("results_*.json"))
    for results in candidates:
        try:
            name = json.loads(results.read_text(encoding="utf-8")).get("model_name")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str) and name:
            return name
    return path.parent.name


def _number(value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    return None


def _choose(name: str, wanted: str | None, found: list[str], path: Path) -> str:
    if wanted is None:
        if len(found) != 1:
            raise ValueError(f"{name}: {str(path)!r} has the {name}s {found}; pass {name}= one of them")
        return found[0]
    if wanted not in found:
        raise ValueError(f"{name}={wanted!r} is not in {str(path)!r}; it has {found}")
    return wanted


def _for_task(value: Any, task: str, name: str) -> str | None:
    """The chosen name for ``task``: ``value`` itself, or its entry for the task when a mapping."""
    if isinstance(value, Mapping):
        value = value.get(task)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name}: expected a name or a mapping task -> name, got {short_repr(value)}")
    return value


def _rows(path: Path, metric: Any, filter: Any, model: str | None) -> tuple[list[dict], list[str], str]:
    match = _NAME.fullmatch(path.name)
    task = match["task"] if match else path.stem.removeprefix("samples_")
    metric, filter = _for_task(metric, task, "metric"), _for_task(filter, task, "filter")
    records = _lines(path)
    filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in records))
    chosen_filter = _choose("filter", filter, filters, path) if records else filter
    metrics = list(dict.fromkeys(m for r in records for m in r.get("metrics", [])))
    chosen = _choose("metric", metric, metrics, path) if records else metric
    name = model if model is not None else _model_name(path, match["date"] if match else None)
    rows = []
    for r in records:
        if str(r.get("filter", "none")) != chosen_filter:
            continue
        row = {"model": name, "task": task, "item": r["doc_id"], "epoch": 1}
        for m in r.get("metrics", []):
            value = _number(r.get(m))
            if value is not None:
                row[m] = value
            elif m == chosen:
                raise ValueError(
                    f"metric={m!r}: document {r['doc_id']!r} of {str(path)!r} has no per-document "
                    f"value but {short_repr(r.get(m))}; choose another metric"
                )
        doc = r.get("doc")
        flatten(doc if isinstance(doc, Mapping) else {"doc": doc}, "metadata", row)
        rows.append(row)
    return rows, metrics, chosen


def _samples_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("samples_*.jsonl"))


#: lm-eval's samples files, a folder's at any depth
SAMPLES_FILES = FileKind("file", "samples_<task>_<date>.jsonl files", "samples_*.jsonl file", _samples_files)


@fill_doc()
def read_lm_eval(
    files: Any, *, metric: str | None = None, filter: str | None = None, model: str | None = None
) -> EvalRecords:
    """Read lm-evaluation-harness ``--log_samples`` files into one tidy frame of answers.

    One row per document of each task under the chosen filter: ``model`` (the run's
    ``model_name`` from the ``results_<date>.json`` beside the file, else the folder's name),
    ``task`` (from the file's name), ``item`` the ``doc_id``, ``epoch`` 1, ``outcome`` the chosen
    metric's value, one column per metric with a number per document, and the document's fields
    flattened (``metadata.category``). Each row is its own unit (lm-eval aggregates repeats per
    document before logging).

    Parameters
    ----------
    files : str, path-like or sequence of them
        ``samples_<task>_<date>.jsonl`` files, or folders searched for them (recursively, so
        the ``--output_path`` folder of several runs reads every model).
    metric : str or mapping, optional
        The metric whose per-document value is the ``outcome`` (``acc``, ``exact_match``...),
        or a mapping task -> metric; default each file's only metric. Its values must lie in
        [0, 1].
    filter : str or mapping, optional
        The filter whose rows are read (``none``, ``strict-match``...), or a mapping task ->
        filter; default each file's only filter.
    model : str, optional
        The model's name, in place of the one the run recorded.

    {records_returned}

    Raises
    ------
    ValueError
        A line that is not a samples record, a file with several metrics or filters and none
        chosen, a metric or filter the file lacks, an outcome outside [0, 1], or one document
        read twice for a model and task.

    Examples
    --------
    >>> import json, os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "samples_arc_2024-05-14T10-22-33.123456.jsonl")
    >>> lines = [{"doc_id": i, "doc": {"subject": "ab"[i]}, "filter": "none",
    ...           "metrics": ["acc", "acc_norm"], "acc": float(i), "acc_norm": 1.0} for i in (0, 1)]
    >>> _ = open(path, "w").write("\\n".join(json.dumps(x) for x in lines))
    >>> frame, design = read_lm_eval(path, metric="acc", model="pythia")
    >>> frame[["model", "task", "item", "outcome", "metadata.subject"]].to_dict("list")
    {'model': ['pythia', 'pythia'], 'task': ['arc', 'arc'], 'item': [0, 1], 'outcome': [0.0, 1.0], 'metadata.subject': ['a', 'b']}
    """
    if model is not None and not isinstance(model, str):
        raise TypeError(f"model: expected a model name, got {short_repr(model)}")
    rows: list[dict[str, Any]] = []
    columns: list[str] = []
    chosen: list[str] = []
    for path in input_files(files, "files", SAMPLES_FILES):
        got, metrics, chosen_here = _rows(path, metric, filter, model)
        if isinstance(metric, Mapping):  # one outcome column from each task's own metric
            for row in got:
                row["outcome"] = row.get(chosen_here, math.nan)
        rows += got
        columns += [m for m in metrics if m not in columns]
        chosen += [chosen_here] if chosen_here not in chosen else []
    if not chosen or not rows:
        raise ValueError("files: the files hold no document")
    if len(chosen) > 1 and not isinstance(metric, Mapping):
        raise ValueError(
            f"metric: the files have different metrics ({chosen}); pass metric= one they all "
            "have, or a mapping task -> metric"
        )
    columns = [c for c in columns if any(c in r for r in rows)]
    clash = [c for c in columns if c in FIXED_COLUMNS]
    if clash:
        raise ValueError(f"files: a metric is named {clash[0]!r}, a column of the frame")
    return records(
        rows,
        columns,
        outcome_column="outcome" if isinstance(metric, Mapping) else chosen[0],
        outcome=" / ".join(chosen),
        argument="files",
        outcome_argument="metric",
    )
