"""Human labels joined onto a harness's frame by id: a CSV, JSON Lines or Label Studio export.

The rows a human labelled get the label as a number in [0, 1] (the same reading as the scores:
``C``/``P``/``I``/``N``, yes/no, true/false, pass/fail, correct/incorrect, numbers); the others get
NaN: they are the unlabelled rows of the proxy path, where a scorer (a judge) stands in for the
human.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bayeseval._api.validation import short_repr
from bayeseval.counts.design import Design
from bayeseval.io.records import EvalRecords, score_to_float

__all__ = ["join_labels"]

#: an integer written as a float ("7.0", as pandas writes an id column with gaps)
_FLOAT_INTEGER = re.compile(r"-?\d+\.0+")
_VERDICTS = {"pass": 1.0, "passed": 1.0, "correct": 1.0, "fail": 0.0, "failed": 0.0, "incorrect": 0.0}


def _label_value(value: Any, where: str) -> float:
    if isinstance(value, str) and value.strip().lower() in _VERDICTS:
        return _VERDICTS[value.strip().lower()]
    number = score_to_float(value.strip() if isinstance(value, str) else value, where)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{where}: a label must be in [0, 1], got {short_repr(value)}")
    return number


def _key_text(value: Any) -> str:
    """An id as text, so that 7, 7.0, "7" and "7.0" (readings of one id by CSV and JSON readers) match."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return _key_text(value.item())
    text = str(value)
    return text[: text.index(".")] if _FLOAT_INTEGER.fullmatch(text) else text


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value == ""


# -- Label Studio exports ----------------------------------------------------------------------


def _choice(result: Any, control: str | None, where: str) -> Any:
    regions = [
        r
        for r in result or []
        if isinstance(r, Mapping) and r.get("type") == "choices" and (control is None or r.get("from_name") == control)
    ]
    if not regions:
        return None
    if len({r.get("from_name") for r in regions}) > 1:
        raise ValueError(f"labels: {where} has several choice controls; pass column= the one holding the label")
    choices = (regions[0].get("value") or {}).get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        raise ValueError(f"labels: {where} must hold exactly one choice, got {short_repr(choices)}")
    return choices[0]


def _task_label(task: Mapping[str, Any], control: str | None, where: str) -> Any:
    """The task's one label: its annotations' choices, which must agree; None when unannotated."""
    found = {
        _key_text(c): c
        for ann in task.get("annotations") or []
        if isinstance(ann, Mapping) and not ann.get("was_cancelled")
        for c in [_choice(ann.get("result"), control, where)]
        if c is not None
    }
    if len(found) > 1:
        raise ValueError(
            f"labels: {where} has annotations that disagree ({sorted(found)}); resolve them "
            "into one label per task first"
        )
    return next(iter(found.values()), None)


def _from_labelstudio(tasks: Sequence[Any], on: list[str], column: str | None, extra: str | None) -> pd.DataFrame:
    rows = []
    for i, task in enumerate(tasks):
        where = f"task #{i + 1}"
        if not isinstance(task, Mapping):
            raise ValueError(f"labels: {where} must be an object, got {short_repr(task)}")
        if "annotations" in task or "data" in task:  # the JSON export: annotations under the task
            data = task.get("data") or {}
            label = _task_label(task, column, f"{where} (id {task.get('id')!r})")
        else:  # JSON-MIN: one flat record per task, the choice under the control's name
            data, label = task, task.get(column or "label")
            if isinstance(label, Mapping):
                label = _choice([{"type": "choices", "value": label}], None, where)
        missing = [k for k in on if k not in data]
        if missing:
            raise ValueError(
                f"labels: {where} has no {missing[0]!r} in its data (on={on!r}); its fields are {list(data)[:20]}"
            )
        row = {**{k: data[k] for k in on}, "label": label}
        if extra is not None:
            row["inclusion"] = data.get(extra)
        rows.append(row)
    return pd.DataFrame(rows, columns=[*on, "label", *(["inclusion"] if extra is not None else [])])


# -- tables ------------------------------------------------------------------------------------


def _read(labels: Any, on: list[str], column: str | None, extra: str | None = None) -> pd.DataFrame:
    """The labels as a frame with the ``on`` columns and ``label`` (and ``inclusion``, the ``extra`` column)."""
    if isinstance(labels, pd.DataFrame):
        table = labels
    elif isinstance(labels, Mapping):
        if len(on) != 1:
            raise ValueError(f"labels: a mapping id -> label joins on one column, not on={on!r}")
        if extra is not None:
            raise ValueError(f"inclusion={extra!r}: a mapping id -> label has no inclusion column; pass a table")
        table = pd.DataFrame({on[0]: list(labels.keys()), "label": list(labels.values())})
        column = "label"
    elif isinstance(labels, list):
        return _from_labelstudio(labels, on, column, extra)
    elif isinstance(labels, str | Path):
        table, from_labelstudio = _read_file(Path(labels), on, column, extra)
        if from_labelstudio:
            return table
    else:
        raise TypeError(
            f"labels: expected a DataFrame, a mapping, a list of Label Studio tasks or a "
            f"file path, got {type(labels).__name__}"
        )
    return _table_columns(table, on, column or "label", extra)


def _table_columns(table: pd.DataFrame, on: list[str], column: str, extra: str | None) -> pd.DataFrame:
    """The ``on`` columns, ``label`` (``column``) and ``inclusion`` (``extra``) of a table of labels."""
    missing = [c for c in on if c not in table.columns]
    if missing:
        raise ValueError(f"labels: has no id column {missing[0]!r} (on={on!r}); columns are {list(table.columns)[:20]}")
    if column not in table.columns:
        raise ValueError(f"column={column!r} is not a column of labels; columns are {list(table.columns)[:20]}")
    if extra is None:
        return table[[*on, column]].rename(columns={column: "label"})
    if extra not in table.columns:
        raise ValueError(f"inclusion={extra!r} is not a column of labels; columns are {list(table.columns)[:20]}")
    return pd.DataFrame({**{c: table[c] for c in on}, "label": table[column], "inclusion": table[extra]})


def _read_file(path: Path, on: list[str], column: str | None, extra: str | None) -> tuple[pd.DataFrame, bool]:
    """The file's rows, and whether they are a Label Studio export already read into labels."""
    if not path.exists():
        raise ValueError(f"labels: no file {str(path)!r}")
    name = path.name.lower()
    try:
        if name.endswith((".csv", ".csv.gz", ".txt")):
            return pd.read_csv(path, dtype=object, keep_default_na=False, na_values=[""]), False
        if name.endswith(".jsonl"):
            with open(path, encoding="utf-8") as fh:
                return pd.DataFrame([json.loads(line) for line in fh if line.strip()]), False
        if name.endswith(".json"):
            tasks = json.loads(path.read_text(encoding="utf-8"))
        else:
            raise ValueError("not a .csv, .jsonl or .json file")
    except (OSError, ValueError) as exc:
        raise ValueError(f"labels: {str(path)!r} could not be read: {exc}") from exc
    if not isinstance(tasks, list):
        raise ValueError(f"labels: {str(path)!r} must hold a list of Label Studio tasks, got {type(tasks).__name__}")
    return _from_labelstudio(tasks, on, column, extra), True


def _keys(table: pd.DataFrame, on: list[str]) -> list[tuple[str, ...]]:
    return [tuple(_key_text(v) for v in row) for row in table[on].itertuples(index=False, name=None)]


def _check_labels(table: pd.DataFrame, on: list[str]) -> pd.DataFrame:
    """Labelled rows only; every id present and once."""
    table = table[[not _is_missing(v) for v in table["label"]]].reset_index(drop=True)
    for c in on:
        bad = [v for v in table[c] if _is_missing(v)]
        if bad:
            raise ValueError(f"labels: a labelled row has no {c!r} (on={on!r})")
    keys = pd.Series(_keys(table, on), dtype=object)
    dup = keys[keys.duplicated()]
    if len(dup):
        raise ValueError(
            f"labels: the id {dup.iloc[0] if len(on) > 1 else dup.iloc[0][0]!r} is labelled more "
            "than once; keep one label per id"
        )
    return table


def _frame_index(frame: pd.DataFrame, on: list[str]) -> dict[tuple[str, ...], list[int]]:
    index: dict[tuple[str, ...], list[int]] = {}
    originals: dict[tuple[str, ...], tuple] = {}
    for pos, (key, raw) in enumerate(zip(_keys(frame, on), frame[on].itertuples(index=False, name=None), strict=True)):
        if originals.setdefault(key, raw) != raw:
            raise ValueError(
                f"frame: the ids {originals[key]!r} and {raw!r} read as the same text; make the {on!r} values distinct"
            )
        index.setdefault(key, []).append(pos)
    return index


def _check_arguments(frame: Any, on: Any, name: Any) -> tuple[pd.DataFrame, list[str]]:
    table = frame.frame if isinstance(frame, EvalRecords) else frame
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"frame: expected a reader's result or a DataFrame, got {type(frame).__name__}")
    keys = [on] if isinstance(on, str) else list(on) if isinstance(on, Sequence) else None
    if not keys or not all(isinstance(k, str) for k in keys):
        raise TypeError(f"on: expected a column name or a list of them, got {short_repr(on)}")
    missing = [k for k in keys if k not in table.columns]
    if missing:
        raise ValueError(f"on={on!r}: {missing[0]!r} is not a column of frame; columns are {list(table.columns)[:20]}")
    if not isinstance(name, str) or name in table.columns:
        raise ValueError(
            f"name={name!r}: must be a new column name (frame already has it)"
            if isinstance(name, str)
            else f"name: expected a column name, got {short_repr(name)}"
        )
    return table, keys


def join_labels(
    frame: Any,
    labels: Any,
    on: str | Sequence[str] = "item",
    *,
    column: str | None = None,
    name: str = "human",
    selected_by: str | Sequence[str] | None = None,
    inclusion: str | None = None,
) -> Any:
    """Join human labels onto a reader's frame by id; rows without a label get NaN.

    Each label is read as a number in [0, 1]: ``C``/``P``/``I``/``N`` (1, 0.5, 0, 0), yes/no,
    true/false, pass/fail, correct/incorrect (any case) or a number. A label given per item
    (``on="item"``) goes onto every row of that item (every model, epoch); label answers one
    by one with ``on=["model", "item", "epoch"]``. Ids match by their text, so the ``7`` of a CSV
    file joins the item ``7`` of a log. Rows of ``labels`` with an empty label are unlabelled.

    Parameters
    ----------
    frame : EvalRecords or pandas.DataFrame
        A reader's result (or its frame).
    labels : pandas.DataFrame, mapping, list or path
        The labels: a table with the ``on`` columns and the label column; a mapping id ->
        label; a ``.csv`` or ``.jsonl`` file of such rows; or a Label Studio export (``.json``
        file or its parsed list of tasks: the JSON export, whose tasks carry the ``on`` keys
        in ``data`` and the label as the one choice of their annotations, or JSON-MIN).
    on : str or list of str
        The frame's id column(s), also the labels' id column(s) (Label Studio: keys of the
        task's ``data``).
    column : str, optional
        The labels' label column (default ``label``); in a Label Studio export, the choice
        control's name (default the only one).
    name : str
        Name of the new column.
    selected_by : str or list of str, optional
        How the labelled rows were chosen, when not at random: the frame's column(s) within
        whose cells they were drawn at random, e.g. the judge's verdict for a calibration set
        "50 the judge passed, 50 it failed" (``selected_by="judge"``, or the reader's
        ``"outcome"`` when the judge is the scorer read as the outcome). Every row gets, in the
        column ``inclusion``, its cell's share of labelled rows (the chance a row of that cell
        was labelled, exact for a draw of a fixed number per cell), and the design
        ``Design(inclusion="inclusion")``, so that ``evaluate(..., proxy=..., design=...)`` and
        :func:`~bayeseval.proxy_ci` weight the labels by it and stay unbiased. With several
        models, pass the rows of the model whose answers the cells were drawn from. When
        ``frame`` is a reader's result in units (epochs: its design has a cluster), the units
        were drawn: a unit's cell is its answers' majority for a 0/1 column (a tie a pass, as
        the proxy reads a unit) or its one value, and its probability its cell's share of
        labelled units, copied to its answers.
    inclusion : str, optional
        Instead of ``selected_by``: a column of ``labels`` holding each label's inclusion
        probability in (0, 1] (Label Studio: a key of the task's ``data``), copied to the
        column ``inclusion`` of the labelled rows (NaN on the others).

    Returns
    -------
    EvalRecords or pandas.DataFrame
        Like ``frame``, with the column ``name``: the label, NaN where none was given; with
        ``selected_by`` or ``inclusion`` also the column ``inclusion`` (an ``EvalRecords``'s
        design then names it).

    Raises
    ------
    ValueError
        An id of ``labels`` that is not in ``frame``, an id labelled twice, Label Studio
        annotations of one task that disagree, a label that is not in [0, 1], a missing column.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"item": [1, 1, 2, 3], "epoch": [1, 2, 1, 1], "outcome": [1.0, 0.0, 1.0, 0.0]})
    >>> join_labels(frame, {1: "C", 3: "no"})["human"].tolist()
    [1.0, 1.0, nan, 0.0]
    >>> join_labels(frame, {4: "C"})
    Traceback (most recent call last):
    ...
    ValueError: labels: 1 labelled id is not in frame's 'item' column, e.g. ['4']

    A calibration set drawn by the judge's verdict: one of the two rows it passed, both it failed:

    >>> rows = pd.DataFrame({"item": [1, 2, 3, 4], "judge": [1.0, 1.0, 0.0, 0.0]})
    >>> join_labels(rows, {1: 1, 3: 0, 4: 1}, selected_by="judge")["inclusion"].tolist()
    [0.5, 0.5, 1.0, 1.0]
    """
    table, keys = _check_arguments(frame, on, name)
    cells = _selection_columns(table, selected_by, inclusion)
    read = _read(labels, keys, column, inclusion)
    labelled = _check_labels(read, keys)
    index = _frame_index(table, keys)
    values = [math.nan] * len(table)
    probabilities = [math.nan] * len(table)
    given = labelled["inclusion"] if inclusion is not None else [None] * len(labelled)
    unknown = []
    for key, label, chance in zip(_keys(labelled, keys), labelled["label"], given, strict=True):
        if key not in index:
            unknown.append(key[0] if len(keys) == 1 else key)
            continue
        where = f"labels: id {key[0] if len(keys) == 1 else key!r}"
        number = _label_value(label, where)
        probability = _probability(chance, where, inclusion) if inclusion is not None else math.nan
        for pos in index[key]:
            values[pos] = number
            probabilities[pos] = probability
    if unknown:
        where = f"{keys[0]!r} column" if len(keys) == 1 else f"{keys!r} columns"
        raise ValueError(
            f"labels: {len(unknown)} labelled id{'s are' if len(unknown) > 1 else ' is'} not in "
            f"frame's {where}, e.g. {unknown[:5]!r}"
        )
    out = table.copy()
    out[name] = pd.Series(values, index=table.index, dtype=float)
    cluster = frame.design.cluster if isinstance(frame, EvalRecords) else None
    if cells and cluster is not None:
        out["inclusion"] = _unit_shares(out, cells, name, cluster)
    elif cells:
        out["inclusion"] = _cell_shares(out, cells, name)
    elif inclusion is not None:
        out["inclusion"] = pd.Series(probabilities, index=table.index, dtype=float)
    if isinstance(frame, EvalRecords):
        design = frame.design
        if cells or inclusion is not None:
            design = Design(cluster=design.cluster, inclusion="inclusion", population=design.population)
        return EvalRecords(out, design, frame.outcome, frame.scorers)
    return out


def _selection_columns(table: pd.DataFrame, selected_by: Any, inclusion: Any) -> list[str]:
    """The checked ``selected_by`` columns (empty when not given); ``inclusion`` checked beside them."""
    if inclusion is not None and not isinstance(inclusion, str):
        raise TypeError(f"inclusion: expected a column name of labels, got {short_repr(inclusion)}")
    if selected_by is None:
        cells: list[str] = []
    elif isinstance(selected_by, str):
        cells = [selected_by]
    elif isinstance(selected_by, Sequence) and selected_by and all(isinstance(c, str) for c in selected_by):
        cells = list(selected_by)
    else:
        raise TypeError(f"selected_by: expected a column name or a list of them, got {short_repr(selected_by)}")
    if cells and inclusion is not None:
        raise ValueError("selected_by and inclusion both say how the labels were chosen: give one of the two")
    missing = [c for c in cells if c not in table.columns]
    if missing:
        raise ValueError(
            f"selected_by={selected_by!r}: {missing[0]!r} is not a column of frame; columns are {list(table.columns)[:20]}"
        )
    if (cells or inclusion is not None) and "inclusion" in table.columns:
        raise ValueError(
            "frame already has a column 'inclusion': drop or rename it before joining labels with a selection"
        )
    return cells


def _probability(value: Any, where: str, column: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0.0 < number <= 1.0:
        raise ValueError(
            f"{where}: the inclusion probability (column {column!r}) must be in (0, 1], got {short_repr(value)}"
        )
    return number


def _unit_shares(out: pd.DataFrame, cells: list[str], name: str, cluster: str) -> pd.Series:
    """Each row's unit's cell's share of labelled units: the chance a unit of the cell was labelled.

    A unit is the cluster within its model and task; a 0/1 cell column is read per unit as its
    majority (a tie a pass), any other must hold one value per unit.
    """
    unit = [c for c in ("model", "task") if c in out.columns] + [cluster]
    key = pd.MultiIndex.from_frame(out[unit])
    per_unit: dict[str, Any] = {}
    for col in cells:
        values = out[col]
        if values.isna().any():
            raise ValueError(
                f"selected_by: the column {col!r} has no value on some rows; the cells the labels were drawn in "
                "must be known on every row"
            )
        grouped = values.groupby(key, sort=False)
        if pd.api.types.is_numeric_dtype(values) and values.isin([0, 1]).all():
            per_unit[col] = (grouped.mean() >= 0.5).astype(float)  # the unit's majority verdict, a tie a pass
        elif (grouped.nunique() > 1).any():
            raise ValueError(
                f"selected_by: the column {col!r} takes several values within a unit ({cluster!r}); "
                "with units the labels are drawn by a value of the unit (a 0/1 verdict is read as its majority)"
            )
        else:
            per_unit[col] = grouped.first()
    units = pd.DataFrame(per_unit)
    units["_labelled"] = out[name].notna().groupby(key, sort=False).any().astype(float)
    if not units["_labelled"].any():
        raise ValueError("labels: no row of frame is labelled, so there is no selection to describe")
    share = units.groupby(cells, sort=False)["_labelled"].transform("mean")
    return pd.Series(share.where(share > 0).reindex(key).to_numpy(dtype=float), index=out.index)


def _cell_shares(out: pd.DataFrame, cells: list[str], name: str) -> pd.Series:
    """Each row's cell's share of labelled rows: the chance a row of the cell was labelled."""
    keys = out[cells]
    if keys.isna().any(axis=None):
        col = next(c for c in cells if out[c].isna().any())
        raise ValueError(
            f"selected_by: the column {col!r} has no value on some rows; the cells the labels were drawn in "
            "must be known on every row"
        )
    labelled = out[name].notna().astype(float)
    share = labelled.groupby([out[c] for c in cells], sort=False).transform("mean")
    if not labelled.any():
        raise ValueError("labels: no row of frame is labelled, so there is no selection to describe")
    return share.where(share > 0).astype(float)
