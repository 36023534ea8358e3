"""Recording labels in a campaign: validation of a whole batch, then one transaction.

:func:`ingest_labels` is :meth:`Campaign.ingest <bayeseval.campaign.Campaign.ingest>`, as a
function of the campaign's :class:`~bayeseval.campaign.labels.context.LabelContext` (its store,
label set and settings): it checks every label of a batch (known ids, proposed rows, valid label values, annotations) before
writing any, so a batch is recorded whole or not at all. A blank label (:func:`~bayeseval.campaign.labels.label_set.is_blank`:
missing, empty or spaces only) is no label: its row is left as it was (a pending row stays pending)
and counted, with a :class:`~bayeseval.BlankLabelWarning`; ``strict=True`` refuses such a batch.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.warnings import BlankLabelWarning
from bayeseval.campaign.labels.annotations import annotator_identity, resolve_labels
from bayeseval.campaign.labels.label_set import label_key, py_scalar
from bayeseval.campaign.loop.pool import metric_flags

if TYPE_CHECKING:
    from bayeseval.campaign.labels.context import LabelContext

__all__ = ["IngestResult", "ingest_labels"]


class IngestResult(int, Result):
    """The number of labels newly recorded by :meth:`Campaign.ingest` (an ``int``).

    Parameters
    ----------
    new : int
        Labels recorded for rows that had none.
    unchanged : int
        Rows sent again with the label they already had.
    relabelled : int
        Rows whose stored label was replaced.
    annotations : int
        Annotations newly stored (ingest with ``annotator_column``).
    unresolved : int
        Annotated rows still pending because their annotations do not settle a label.
    blank : int
        Rows of the batch without a label (blank), left as they were.

    Attributes
    ----------
    new : int
        Labels recorded for rows that had none (the integer value).
    unchanged : int
        Rows sent again with the label they already had (a retry): nothing written.
    relabelled : int
        Rows whose stored label was replaced (``relabel=True`` only).
    annotations : int
        Annotations newly stored or replaced (ingest with ``annotator_column``).
    unresolved : int
        Annotated rows that stay pending: too few annotations, or a tie (see ``resolve``).
    blank : int
        Rows of the batch whose every label is blank (missing, empty or spaces only): not
        recorded, left as they were (a pending row stays pending).

    Examples
    --------
    >>> r = IngestResult(3, unchanged=2)
    >>> r == 3, r.new, r.unchanged, r.relabelled
    (True, 3, 2, 0)
    """

    new: int
    unchanged: int
    relabelled: int
    annotations: int
    unresolved: int
    blank: int
    title = "IngestResult"

    def __new__(
        cls,
        new: int,
        *,
        unchanged: int = 0,
        relabelled: int = 0,
        annotations: int = 0,
        unresolved: int = 0,
        blank: int = 0,
    ) -> IngestResult:
        obj = super().__new__(cls, int(new))
        obj.new, obj.unchanged, obj.relabelled = int(new), int(unchanged), int(relabelled)
        obj.annotations, obj.unresolved, obj.blank = int(annotations), int(unresolved), int(blank)
        return obj

    @property
    def table(self) -> pd.DataFrame:
        """One row: ``new``, ``unchanged`` and ``relabelled`` labels."""
        return pd.DataFrame({"new": [self.new], "unchanged": [self.unchanged], "relabelled": [self.relabelled]})


# -- create: validation helpers (everything is checked before anything is written) ----------


class LabelProblems:
    """Reasons labels are rejected, grouped by kind, each naming the row ids.

    ``outcome`` ends the message's first words (``"labels rejected, <outcome>: ..."``): what
    was not done because of them.
    """

    def __init__(self, outcome: str = "nothing recorded") -> None:
        self.items: dict[str, list[str]] = {}
        self.outcome = outcome

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
        raise ValueError(f"labels rejected, {self.outcome}: " + "; ".join(parts))


def ingest_labels(
    ctx: LabelContext,
    labels: pd.Series | pd.DataFrame,
    *,
    id_column: str | None = None,
    label_column: str | None = None,
    annotator_column: str | None = None,
    relabel: bool = False,
    strict: bool = False,
) -> IngestResult:
    """Record true labels for proposed rows of a campaign (all or nothing); see :meth:`Campaign.ingest`.

    Parameters
    ----------
    ctx : LabelContext
        The campaign's store, label set and settings.
    labels : pandas.Series or pandas.DataFrame
        True labels, as :meth:`Campaign.ingest` takes them.
    id_column, label_column, annotator_column : str, optional
        Columns of a frame of labels.
    relabel : bool
        Replace labels already recorded.
    strict : bool
        Refuse a batch holding a blank label (default False: its rows are left as they were,
        counted in ``blank``, with a :class:`~bayeseval.BlankLabelWarning`).

    Returns
    -------
    IngestResult
        The number of new labels, with ``unchanged`` and ``relabelled``.
    """
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, got {strict!r}")
    if annotator_column is not None:
        return _warn_blank(ingest_annotations(ctx, labels, id_column, label_column, annotator_column, relabel, strict))
    if ctx.spec.annotators > 1:
        raise ValueError(
            f"this campaign resolves labels from annotators={ctx.spec.annotators} annotations per row: "
            "pass annotator_column (--annotator-column on the command line) naming who gave each label"
        )
    raw_ids, raw_labels = parse_labels(ctx, labels, id_column, label_column)
    if len(raw_ids) == 0:
        return IngestResult(0)
    problems = LabelProblems()
    ids, values, blank = check_batch(ctx, raw_ids, raw_labels, problems, strict)
    with ctx.store.transaction("record labels") as conn:
        new, changed, unchanged = sort_against_store(ctx, conn, ids, values, problems, relabel)
        problems.raise_if_any()
        write_labels(ctx, conn, new, changed)
    return _warn_blank(IngestResult(len(new), unchanged=unchanged, relabelled=len(changed), blank=blank))


def _warn_blank(result: IngestResult) -> IngestResult:
    """Say how many rows of the batch had no label (a BlankLabelWarning), and return ``result``."""
    if result.blank:
        warnings.warn(
            f"{result.blank} row(s) of the batch have no label (blank: empty, spaces only or missing): not "
            "recorded, left as they were (pending rows stay pending); strict=True (--strict) refuses such a batch",
            BlankLabelWarning,
            stacklevel=4,
        )
    return result


def _blank_rows(
    raw_ids: np.ndarray, nids: list[Any], blank: list[int], labelled: set[Any], problems: LabelProblems
) -> int:
    """Distinct rows of the batch with only blank labels (an id not in the pool is still an error)."""
    rows = set()
    for i in blank:
        if nids[i] is None:
            problems.add("unknown ids (not in the pool)", raw_ids[i])
        elif nids[i] not in labelled:
            rows.add(nids[i])
    return len(rows)


def parse_labels(
    ctx: LabelContext, labels: Any, id_column: str | None, label_column: str | None, exclude: tuple[Any, ...] = ()
) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(labels, pd.DataFrame):
        frame = labels
        if id_column is not None:
            if id_column not in frame.columns:
                raise ValueError(f"id_column {id_column!r} is not in labels; columns are {list(frame.columns)}")
            ids = frame[id_column]
        else:
            ids = frame.index.to_series()
        if label_column is None:
            rest = [c for c in frame.columns if c != id_column and c != "round" and c not in exclude]
            candidates = [c for c in rest if c in ("label", "y_true", "truth", "y")]
            if candidates:
                label_column = candidates[0]
            elif len(rest) == 1:
                label_column = rest[0]
            else:
                raise ValueError(f"labels DataFrame: give label_column, one of {rest}")
        if label_column not in frame.columns:
            raise ValueError(f"label_column {label_column!r} is not in labels; columns are {list(frame.columns)}")
        return ids.to_numpy(dtype=object), frame[label_column].to_numpy(dtype=object)
    if isinstance(labels, pd.Series):
        return labels.index.to_numpy(dtype=object), labels.to_numpy(dtype=object)
    if isinstance(labels, dict):
        return np.array(list(labels.keys()), dtype=object), np.array(list(labels.values()), dtype=object)
    raise TypeError(f"labels must be a pandas Series indexed by row id or a DataFrame, got {type(labels).__name__}")


def check_batch(
    ctx: LabelContext, raw_ids: np.ndarray, raw_labels: np.ndarray, problems: LabelProblems, strict: bool = True
) -> tuple[list[Any], list[Any], int]:
    """Row ids and known labels of the batch, and the number of rows left blank; unknown ids,
    duplicates and bad labels (blank ones too when ``strict``) noted."""
    nids = [ctx.norm_rid(r) for r in raw_ids]
    canon, missing, invalid = ctx.label_set.normalise_many(raw_labels)
    seen: set[Any] = set()
    ids: list[Any] = []
    values: list[Any] = []
    blank = [i for i in range(len(nids)) if missing[i] and not strict]
    for i, nid in enumerate(nids):
        if missing[i] and not strict:
            continue
        if nid is None:
            problems.add("unknown ids (not in the pool)", raw_ids[i])
        elif nid in seen:
            problems.add("duplicate ids in this batch", raw_ids[i])
        elif missing[i]:
            seen.add(nid)
            problems.add("missing labels for ids", raw_ids[i])
        elif invalid[i]:
            seen.add(nid)
            problems.add(
                f"invalid labels (known labels: {ctx.label_set.values}) for ids",
                raw_ids[i],
                repr(py_scalar(raw_labels[i])),
            )
        else:
            seen.add(nid)
            ids.append(nid)
            values.append(canon[i])
    return ids, values, _blank_rows(raw_ids, nids, blank, seen, problems)


def sort_against_store(
    ctx: LabelContext, conn: Any, ids: list[Any], values: list[Any], problems: LabelProblems, relabel: bool
) -> tuple[list[list[Any]], list[list[Any]], int]:
    """Split the batch into new labels, changed labels and unchanged re-sends."""
    store = ctx.store
    info = store.pool_info(conn, ids)
    proposals = store.proposals(conn, ids)
    stored = store.stored_labels(conn, [r for r in ids if proposals.get(r, ("",))[0] == "labelled"])
    new: list[list[Any]] = []
    changed: list[list[Any]] = []
    unchanged = 0
    for rid, lab in zip(ids, values, strict=True):
        if rid not in info:
            problems.add("unknown ids (not in the pool)", rid)
        elif rid not in proposals:
            problems.add("ids never proposed", rid)
        elif proposals[rid][0] == "pending":
            new.append([rid, lab, 0, 0, proposals[rid][1], info[rid][0], info[rid][1]])
        elif label_key(stored[rid][0]) == label_key(lab):
            unchanged += 1
        elif relabel:
            old = stored[rid]
            changed.append([rid, lab, 0, 0, 2 * old[1] + old[2], info[rid][0], info[rid][1]])
        else:
            problems.add(
                "already labelled with a different label (pass relabel=True to replace it) for ids",
                rid,
                f"{py_scalar(stored[rid][0])!r} -> {py_scalar(lab)!r}",
            )
    return new, changed, unchanged


def write_labels(ctx: LabelContext, conn: Any, new: list[list[Any]], changed: list[list[Any]]) -> None:
    """Compute trial/success flags and write new and changed labels."""
    for rows in (new, changed):
        if not rows:
            continue
        trial, success = metric_flags(
            ctx.metric, [r[1] for r in rows], [r[6] for r in rows], ctx.config.get("pos_label")
        )
        for r, t, s in zip(rows, trial, success, strict=True):
            r[2], r[3] = int(t), int(s)
    if new:
        ctx.store.record_labels(conn, [tuple(r[:6]) for r in new])
    if changed:
        ctx.store.replace_labels(conn, [tuple(r[:6]) for r in changed])


# -- several annotators ----------------------------------------------------------------
def ingest_annotations(
    ctx: LabelContext,
    labels: Any,
    id_column: str | None,
    label_column: str | None,
    annotator_column: str,
    relabel: bool,
    strict: bool = True,
) -> IngestResult:
    """Store annotations, then resolve the label of every row they touch (all or nothing)."""
    if not isinstance(labels, pd.DataFrame):
        raise TypeError(f"labels must be a DataFrame when annotator_column is given, got {type(labels).__name__}")
    if annotator_column not in labels.columns:
        raise ValueError(f"annotator_column {annotator_column!r} is not in labels; columns are {list(labels.columns)}")
    raw_ids, raw_labels = parse_labels(ctx, labels, id_column, label_column, (annotator_column,))
    if len(raw_ids) == 0:
        return IngestResult(0)
    problems = LabelProblems()
    items, blank = check_annotations(
        ctx, raw_ids, raw_labels, labels[annotator_column].to_numpy(dtype=object), problems, strict
    )
    with ctx.store.transaction("record annotations") as conn:
        writes, votes, unchanged = merge_annotations(ctx, conn, items, problems, relabel)
        new, changed, unresolved = resolved_rows(ctx, conn, votes, problems, relabel)
        problems.raise_if_any()
        ctx.store.record_annotations(conn, writes)
        write_labels(ctx, conn, new, changed)
    return IngestResult(
        len(new),
        unchanged=unchanged,
        relabelled=len(changed),
        annotations=len(writes),
        unresolved=unresolved,
        blank=blank,
    )


def check_annotations(
    ctx: LabelContext,
    raw_ids: np.ndarray,
    raw_labels: np.ndarray,
    raw_who: np.ndarray,
    problems: LabelProblems,
    strict: bool = True,
) -> tuple[list[tuple[Any, str, Any]], int]:
    """``(row id, annotator, known label)`` per valid annotation, and the number of rows left
    blank; the others noted."""
    canon, missing, invalid = ctx.label_set.normalise_many(raw_labels)
    nids = [ctx.norm_rid(r) for r in raw_ids]
    blank = [i for i in range(len(nids)) if missing[i] and not strict]
    seen: set[tuple[Any, str]] = set()
    items = []
    for i, rid in enumerate(nids):
        who = annotator_identity(raw_who[i])
        if missing[i] and not strict:
            continue
        if rid is None:
            problems.add("unknown ids (not in the pool)", raw_ids[i])
        elif missing[i]:
            problems.add("missing labels for ids", raw_ids[i], who)
        elif who is None:
            problems.add("missing annotator for ids", raw_ids[i])
        elif (rid, who) in seen:
            problems.add("the same annotator twice in this batch for ids", raw_ids[i], who)
        elif invalid[i]:
            problems.add(
                f"invalid labels (known labels: {ctx.label_set.values}) for ids",
                raw_ids[i],
                repr(py_scalar(raw_labels[i])),
            )
        else:
            seen.add((rid, who))
            items.append((rid, who, canon[i]))
    labelled = {nids[i] for i in range(len(nids)) if not missing[i]}
    return items, _blank_rows(raw_ids, nids, blank, labelled, problems)


def merge_annotations(
    ctx: LabelContext, conn: Any, items: list[tuple[Any, str, Any]], problems: LabelProblems, relabel: bool
) -> tuple[list[tuple[Any, str, Any, int]], dict[Any, dict[str, Any]], int]:
    """The annotations to write and every touched row's votes after writing them."""
    rids = list(dict.fromkeys(r for r, _, _ in items))
    info = ctx.store.pool_info(conn, rids)
    proposals = ctx.store.proposals(conn, rids)
    stored = ctx.store.row_annotations(conn, rids)
    votes: dict[Any, dict[str, Any]] = {}
    writes: list[tuple[Any, str, Any, int]] = []
    unchanged = 0
    for rid, who, lab in items:
        if rid not in info:
            problems.add("unknown ids (not in the pool)", rid)
            continue
        if rid not in proposals:
            problems.add("ids never proposed", rid)
            continue
        row = votes.setdefault(rid, dict(stored.get(rid, {})))
        if who in row and label_key(row[who]) == label_key(lab):
            unchanged += 1
        elif who in row and not relabel:
            problems.add(
                "annotator already gave a different label (pass relabel=True to replace it) for ids",
                rid,
                f"{who}: {py_scalar(row[who])!r} -> {py_scalar(lab)!r}",
            )
        else:
            row[who] = lab
            writes.append((rid, who, lab, proposals[rid][1]))
    touched = {w[0] for w in writes}
    return writes, {r: v for r, v in votes.items() if r in touched}, unchanged


def resolved_rows(
    ctx: LabelContext, conn: Any, votes: dict[Any, dict[str, Any]], problems: LabelProblems, relabel: bool
) -> tuple[list[list[Any]], list[list[Any]], int]:
    """New and changed labels of the touched rows, resolved by the campaign's rule."""
    keys = {r: {a: label_key(v) for a, v in row.items()} for r, row in votes.items()}
    resolved = resolve_labels(keys, ctx.spec.resolve, needed=ctx.spec.annotators)
    rids = list(votes)
    info = ctx.store.pool_info(conn, rids)
    proposals = ctx.store.proposals(conn, rids)
    stored = ctx.store.stored_labels(conn, [r for r in rids if proposals[r][0] == "labelled"])
    new: list[list[Any]] = []
    changed: list[list[Any]] = []
    unresolved = 0
    for rid, key in resolved.items():
        lab = None if key is None else ctx.label_set.canon[key]
        if rid not in stored:
            if lab is None:
                unresolved += 1
            else:
                new.append([rid, lab, 0, 0, proposals[rid][1], info[rid][0], info[rid][1]])
        elif lab is None:
            problems.add("annotations would leave labelled rows unresolved for ids", rid)
        elif label_key(stored[rid][0]) != key:
            if relabel:
                old = stored[rid]
                changed.append([rid, lab, 0, 0, 2 * old[1] + old[2], info[rid][0], info[rid][1]])
            else:
                problems.add(
                    "annotations change the resolved label (pass relabel=True to accept it) for ids",
                    rid,
                    f"{py_scalar(stored[rid][0])!r} -> {py_scalar(lab)!r}",
                )
    return new, changed, unresolved
