"""Labels a campaign starts from: rows labelled before it began, checked and turned into stored labels.

:func:`existing_labels` reads the ``labels`` (and ``inclusion``) of
:meth:`Campaign.create <bayeseval.campaign.Campaign.create>`, checks every row against the pool
before anything is written and returns the rows the new campaign file records as labelled in
round 0 (:data:`EXISTING_ROUND`): a ``proposals`` row with status ``labelled``, a ``labels`` row and
its counts, exactly what a proposal and an ingest of the same rows would have written. The
campaign then proposes only rows never labelled, at random within each stratum.

The labels are taken as a random sample within each stratum (every row of a stratum equally
likely to have been labelled, as a row the campaign proposes is): the union of such a sample
and the campaign's own random draws from the rows left is again a random sample within the
stratum, so the stored counts give the campaign's estimates as if it had proposed those rows
itself. Labels chosen with unequal probabilities (``inclusion`` not constant within a stratum)
are refused: counted as a random sample they would bias the estimates.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval.campaign.design import PoolDesign, metric_flags
from bayeseval.campaign.labels import norm_rid, py_scalar
from bayeseval.counts.metrics import get_metric

__all__ = ["EXISTING_META", "EXISTING_ROUND", "ExistingLabels", "existing_labels"]

#: meta key of the summary of the labels a campaign started from
EXISTING_META = "existing_labels"
#: the round of the labels a campaign started from (proposal rounds start at 1)
EXISTING_ROUND = 0
#: label columns looked for in a DataFrame of labels, in this order
LABEL_COLUMNS = ("label", "true_label", "y_true", "truth", "y")
#: relative spread under which a stratum's inclusion probabilities count as equal
EQUAL_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ExistingLabels:
    """The checked labels a campaign starts from.

    Attributes
    ----------
    rows : list of tuple
        ``(row id, label, trial, success, stratum code)`` per labelled row.
    meta : str
        The JSON summary stored under :data:`EXISTING_META`.
    """

    rows: list[tuple[Any, Any, int, int, int]]
    meta: str


class _Problems:
    """Reasons the labels are refused, grouped by kind, each naming the row ids."""

    def __init__(self) -> None:
        self.items: dict[str, list[str]] = {}

    def add(self, kind: str, rid: Any, detail: str | None = None) -> None:
        text = repr(py_scalar(rid)) if detail is None else f"{py_scalar(rid)!r} ({detail})"
        self.items.setdefault(kind, []).append(text)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        parts = []
        for kind, items in self.items.items():
            shown = ", ".join(items[:10]) + (f" ... ({len(items)} in all)" if len(items) > 10 else "")
            parts.append(f"{kind}: {shown}")
        raise ValueError("labels rejected, no campaign created: " + "; ".join(parts))


def _label_column(frame: pd.DataFrame, skip: set[Any]) -> Any:
    """The label column of a DataFrame of labels, or raise naming ``labels``."""
    rest = [c for c in frame.columns if c not in skip]
    found = next((c for c in LABEL_COLUMNS if c in rest), None)
    if found is not None:
        return found
    if len(rest) == 1:
        return rest[0]
    raise ValueError(
        f"labels DataFrame: cannot tell its label column among {rest[:20]}; name it one of "
        f"{list(LABEL_COLUMNS)} or keep only the id and label columns (and inclusion's)"
    )


def _from_frame(frame: pd.DataFrame, inclusion: Any, id_name: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """Ids, labels and the inclusion values of a DataFrame of labels."""
    if inclusion is not None and inclusion not in frame.columns:
        raise ValueError(f"inclusion {inclusion!r} is not a column of labels; columns are {list(frame.columns)[:20]}")
    by_column = id_name in frame.columns
    ids = frame[id_name].to_numpy(dtype=object) if by_column else frame.index.to_numpy(dtype=object)
    col = _label_column(frame, {id_name, inclusion, "round"} if by_column else {inclusion, "round"})
    extra = [c for c in frame.columns if c not in (col, inclusion, "round")]
    if not by_column and isinstance(frame.index, pd.RangeIndex) and frame.index.name is None and extra:
        raise ValueError(
            f"labels DataFrame: its row ids would be its default index 0, 1, 2, ... while it has columns {extra[:5]}; "
            f"set the index to the row-id column (labels.set_index(...)) or name that column {id_name!r}"
        )
    incl = None if inclusion is None else frame[inclusion].to_numpy(dtype=object)
    return ids, frame[col].to_numpy(dtype=object), incl


def _from_pool(pool: pd.DataFrame, column: str, inclusion: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """Ids, labels and inclusion values of the pool rows whose label column is filled."""
    for name, col in (("labels", column), ("inclusion", inclusion)):
        if col is not None and col not in pool.columns:
            raise ValueError(f"{name} {col!r} is not a column of the pool; columns are {list(pool.columns)[:20]}")
    have = pool[column].notna().to_numpy()
    incl = None if inclusion is None else pool[inclusion].to_numpy(dtype=object)[have]
    return pool.index.to_numpy(dtype=object)[have], pool[column].to_numpy(dtype=object)[have], incl


def _raw(labels: Any, inclusion: Any, pool: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, Any]:
    """``labels`` (and ``inclusion``) as arrays of ids, labels and inclusion values."""
    if inclusion is not None and not isinstance(inclusion, str):
        raise TypeError(f"inclusion must be the name of a column of labels (or of the pool), got {inclusion!r}")
    if isinstance(labels, str):
        return _from_pool(pool, labels, inclusion)
    if isinstance(labels, pd.DataFrame):
        return _from_frame(labels, inclusion, str(pool.index.name or "row"))
    if inclusion is not None:
        raise TypeError(f"inclusion={inclusion!r} names a column: give labels as a DataFrame holding it, "
                        f"got labels of type {type(labels).__name__}")
    if isinstance(labels, pd.Series):
        return labels.index.to_numpy(dtype=object), labels.to_numpy(dtype=object), None
    if isinstance(labels, dict):
        return np.array(list(labels), dtype=object), np.array(list(labels.values()), dtype=object), None
    raise TypeError(
        "labels must be a pandas Series indexed by row id, a DataFrame of row ids and labels, a dict or the "
        f"name of a pool column holding the labels, got {type(labels).__name__}"
    )


def _check_rows(raw_ids: np.ndarray, raw_labels: np.ndarray, rids: list[Any], integer: bool, design: PoolDesign,
                problems: _Problems) -> tuple[list[int], list[Any], list[int]]:
    """Pool positions, known labels and places in the input of the valid rows; the others noted."""
    nids = [norm_rid(r, integer) for r in raw_ids]
    valid = [i for i, r in enumerate(nids) if r is not None]
    found = np.full(len(nids), -1, dtype=np.int64)
    found[valid] = pd.Index(rids).get_indexer(pd.Index([nids[i] for i in valid], dtype=object))
    canon, missing, invalid = design.labels.normalise_many(raw_labels)
    seen: set[Any] = set()
    pos: list[int] = []
    values: list[Any] = []
    kept: list[int] = []
    for i, raw in enumerate(raw_ids):
        rid, j = nids[i], found[i]
        if rid is None:
            problems.add(f"ids that cannot be row ids of this pool ({'integers' if integer else 'text'})", raw)
        elif j < 0:
            problems.add("ids not in the pool", raw)
        elif rid in seen:
            problems.add("ids given twice", raw)
        elif not design.eligible[j]:
            problems.add("rows the campaign never labels (their prediction makes them no trial of its metric; "
                         "leave them out) for ids", raw)
        elif missing[i]:
            problems.add("blank labels for ids", raw)
        elif invalid[i]:
            problems.add(f"invalid labels (known labels: {design.labels.values}) for ids", raw,
                         repr(py_scalar(raw_labels[i])))
        else:
            pos.append(int(j))
            values.append(canon[i])
            kept.append(i)
        if rid is not None:
            seen.add(rid)
    return pos, values, kept


def _probabilities(values: np.ndarray, name: str) -> np.ndarray:
    """Inclusion probabilities as floats in (0, 1], or raise naming ``inclusion``."""
    out = np.empty(len(values))
    for i, v in enumerate(values):
        v = py_scalar(v)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v <= 1
        if not ok:
            raise ValueError(f"inclusion {name!r} must hold probabilities in (0, 1] on every labelled row, got {v!r}")
        out[i] = float(v)
    return out


def _check_inclusion(values: np.ndarray, codes: np.ndarray, name: str, design: PoolDesign) -> None:
    """Refuse inclusion probabilities that differ within a stratum."""
    probs = _probabilities(values, name)
    for code in np.unique(codes):
        p = probs[codes == code]
        lo, hi = float(p.min()), float(p.max())
        if hi - lo > EQUAL_TOLERANCE * hi:
            key = design.keys[int(code)]
            stratum = key[0] if len(key) == 1 else key
            raise ValueError(
                f"inclusion {name!r}: probabilities differ within stratum {stratum!r} ({lo:g} to {hi:g}); a campaign "
                "counts the labels it starts from as a random sample within each stratum, so labels chosen with "
                "unequal probabilities would bias its estimates: start it from the rows drawn with one probability "
                "per stratum only"
            )


def existing_labels(labels: Any, inclusion: Any, pool: pd.DataFrame, rids: list[Any], integer: bool,
                design: PoolDesign, metric: str) -> ExistingLabels | None:
    """Check the labels a campaign starts from and turn them into stored labels (or raise).

    Parameters
    ----------
    labels : pandas.Series, pandas.DataFrame, dict, str or None
        As :meth:`Campaign.create <bayeseval.campaign.Campaign.create>` takes them.
    inclusion : str or None
        The column of each labelled row's inclusion probability.
    pool : pandas.DataFrame
        The pool, indexed by row id.
    rids : list
        The pool's row ids as stored.
    integer : bool
        Whether the row ids are integers.
    design : PoolDesign
        The pool as the campaign sees it (strata, known labels, predictions).
    metric : str
        The metric whose trial and success flags the labels table stores.

    Returns
    -------
    ExistingLabels or None
        None when ``labels`` is None or holds no row.

    Examples
    --------
    >>> from bayeseval.campaign.design import design_pool
    >>> from bayeseval.campaign.spec import CampaignSpec
    >>> pool = pd.DataFrame({"g": ["a", "b"] * 3, "pred": [0, 1, 1, 0, 1, 1]})
    >>> design = design_pool(CampaignSpec(strata="g", y_pred="pred"), pool)
    >>> got = existing_labels(pd.Series([1, 1], index=[0, 1]), None, pool, list(range(6)), True, design, "error_rate")
    >>> got.rows
    [(0, 1, 1, 1, 0), (1, 1, 1, 0, 1)]
    """
    if labels is None:
        if inclusion is not None:
            raise TypeError(f"inclusion={inclusion!r} applies to labels: give labels too")
        return None
    raw_ids, raw_labels, raw_incl = _raw(labels, inclusion, pool)
    if len(raw_ids) == 0:
        return None
    problems = _Problems()
    pos, values, kept = _check_rows(raw_ids, raw_labels, rids, integer, design, problems)
    problems.raise_if_any()
    codes = design.codes[pos]
    if raw_incl is not None:
        _check_inclusion(raw_incl[kept], codes, inclusion, design)
    trial, success = metric_flags(get_metric(metric), values, design.y_pred[pos], design.positive)
    rows = [(rids[j], py_scalar(v), int(t), int(s), int(c))
            for j, v, t, s, c in zip(pos, values, trial, success, codes, strict=True)]
    per = np.bincount(codes, minlength=len(design.keys)).tolist()
    meta = {"rows": len(rows), "design": "random within strata", "inclusion": inclusion, "per_stratum": per}
    return ExistingLabels(rows=rows, meta=json.dumps(meta))
