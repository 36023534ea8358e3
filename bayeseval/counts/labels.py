"""Label rules shared by the counting paths: one label type per column, the positive class."""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import short_repr
from bayeseval._backends.interface import ConfusionTable
from bayeseval.counts.metrics import Metric

__all__: list[str] = []


def _label_kind(value: Any) -> str:
    if isinstance(value, (bool, np.bool_, Number)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


#: strings that stand for a missing value (compared stripped and lower-cased)
MISSING_TEXT = frozenset({"", "nan", "none", "null", "na", "n/a", "<na>", "nat", "missing", "?"})


def check_label_types(table: ConfusionTable, pos_label: Any) -> None:
    """Labels of one type in both columns (numbers or strings), no placeholder for a missing label.

    A true label spelled like a missing value (``""``, ``"None"``, ``"NA"``, ``"?"``, ...)
    that no prediction takes is a row without a label, not a class the model always gets
    wrong: counting it would add a silent error per row.
    """
    kinds = {}
    for arg, col, values, dtype in [
        ("y_true", table.y_true, table.truth, table.dtypes[0]),
        ("y_pred", table.y_pred, table.pred, table.dtypes[1]),
    ]:
        found = {_label_kind(v) for v in pd.unique(values)}
        if len(found) > 1:
            raise ValueError(
                f"{arg} column {col!r} (dtype {dtype}) mixes label types {sorted(found)}; convert it to one type"
            )
        kinds[arg] = found
    if kinds["y_true"] != kinds["y_pred"]:
        raise ValueError(
            f"y_true column {table.y_true!r} (dtype {table.dtypes[0]}) holds {'/'.join(kinds['y_true'])} "
            f"labels but y_pred column {table.y_pred!r} (dtype {table.dtypes[1]}) holds "
            f"{'/'.join(kinds['y_pred'])} labels, so no prediction could equal a true label; "
            "convert one column to the other's type"
        )
    _check_placeholders(table)
    _check_near_labels(table)
    if pos_label is not None and _label_kind(pos_label) not in kinds["y_true"]:
        raise ValueError(
            f"pos_label {pos_label!r} is a {_label_kind(pos_label)} but the labels in "
            f"{table.y_true!r} and {table.y_pred!r} are {'/'.join(kinds['y_true'])}s; "
            "give pos_label the labels' type"
        )


def _check_placeholders(table: ConfusionTable) -> None:
    predicted = set(pd.unique(table.pred))
    odd = [
        v
        for v in pd.unique(table.truth)
        if isinstance(v, str) and v.strip().lower() in MISSING_TEXT and v not in predicted
    ]
    if odd:
        rows = int(np.asarray(table.n)[np.isin(table.truth.to_numpy(object), odd)].sum())
        raise ValueError(
            f"y_true column {table.y_true!r} holds {sorted(odd)!r} in {rows} row{'s' if rows != 1 else ''}, "
            f"a placeholder for a missing label that y_pred {table.y_pred!r} never predicts; set those "
            "rows to a missing value (NaN or None) and drop them (or, for unlabelled rows of a pool, "
            "keep them missing and give proxy=)"
        )


def _check_near_labels(table: ConfusionTable) -> None:
    """A true label and a prediction equal but for spaces or case (``"cat "``, ``"Cat"``) never
    match, so every such row would count as an error: refused, naming both spellings."""
    truth = {v for v in pd.unique(table.truth) if isinstance(v, str)}
    pred = {v for v in pd.unique(table.pred) if isinstance(v, str)}
    folded: dict[str, str] = {}
    for v in pred:
        folded.setdefault(v.strip().casefold(), v)
    pairs = [
        (t, folded[t.strip().casefold()])
        for t in sorted(truth - pred)
        if t.strip().casefold() in folded and folded[t.strip().casefold()] not in truth
    ]
    if pairs:
        shown = ", ".join(f"{t!r} vs {p!r}" for t, p in pairs[:5])
        raise ValueError(
            f"labels of y_true {table.y_true!r} and y_pred {table.y_pred!r} differ only in spaces or "
            f"case ({shown}), so they never match and every such row would count as an error; "
            "clean them to one spelling (e.g. str.strip())"
        )


def _check_positive_seen(pos_label: Any, labels: set, table: ConfusionTable) -> None:
    """A positive class that no row holds, as truth or prediction, is a typo: every trial would be lost."""
    if pos_label in labels or (labels <= {0, 1} and _label_kind(pos_label) == "number" and pos_label in (0, 1)):
        return  # present, or the other class of 0/1 labels (a slice without positives)
    shown = sorted(labels, key=str)
    near = [v for v in shown if str(v).strip().lower() == str(pos_label).strip().lower()]
    hint = f"; did you mean pos_label={short_repr(near[0])}?" if near else ""
    raise ValueError(
        f"pos_label {pos_label!r} is neither a label of y_true {table.y_true!r} nor a prediction "
        f"of y_pred {table.y_pred!r} (labels: {short_repr(shown[:10])}), so the metric would have no "
        f"trials{hint}"
    )


def resolve_positive(m: Metric, table: ConfusionTable, pos_label: Any) -> tuple[Any, list | None]:
    """``(positive, None)``, or ``(None, classes)`` for one-vs-rest over more than two classes."""
    if not m.needs_positive:
        return None, None
    labels = set(pd.unique(table.truth)) | set(pd.unique(table.pred))
    if pos_label is not None:
        _check_positive_seen(pos_label, labels, table)
        return pos_label, None
    if labels <= {0, 1}:
        return 1, None
    shown = sorted(labels, key=str)
    if len(labels) <= 2:
        raise ValueError(
            f"metric {m.name!r} needs pos_label (the positive class): the labels of y_true "
            f"{table.y_true!r} and y_pred {table.y_pred!r} are {shown}, not 0/1, so neither is "
            f"positive by default; pass pos_label, e.g. pos_label={shown[-1]!r}"
        )
    return None, shown
