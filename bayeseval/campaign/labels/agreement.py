"""Agreement between a campaign's annotators: Cohen's and Fleiss' kappa per stratum.

:func:`agreement` measures, per stratum, how far the annotators of the rows annotated at least
twice agree (:data:`AGREEMENT_RULE` says which annotations it uses): Cohen's kappa
(:func:`cohen_kappa`) when the same two annotators labelled every such row, Fleiss' kappa
(:func:`fleiss_kappa`) otherwise. It reads an annotation table as the readers of
:mod:`bayeseval.campaign.labels.annotations` return it (columns ``row``, ``annotator``,
``label`` and optionally ``time``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["AGREEMENT_RULE", "agreement", "cohen_kappa", "fleiss_kappa"]


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa of two annotators' labels of the same rows (Cohen 1960).

    ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e`` the agreement
    expected from each annotator's label frequencies; NaN when ``p_e`` is 1 (both always give
    the same single label) or there are no rows.

    Parameters
    ----------
    a, b : sequence
        The two annotators' labels, row by row.

    Returns
    -------
    float
        Kappa.

    Examples
    --------
    >>> cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0])
    0.5
    """
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"a and b must label the same rows, got {len(a)} and {len(b)} labels")
    n = len(a)
    if n == 0:
        return float("nan")
    ca, cb = Counter(a), Counter(b)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    p_e = sum(ca[k] * cb.get(k, 0) for k in ca) / n**2
    return float("nan") if p_e == 1 else float((p_o - p_e) / (1 - p_e))


def fleiss_kappa(table: Any) -> float:
    """Fleiss' kappa of a rows x categories table of rating counts (Fleiss 1971).

    Every row must have the same number ``m >= 2`` of ratings. ``(P - P_e) / (1 - P_e)`` with
    ``P`` the mean per-row agreement ``(sum_j n_ij^2 - m) / (m (m - 1))`` and ``P_e`` the sum of
    squared overall category shares; NaN when ``P_e`` is 1.

    Parameters
    ----------
    table : array-like
        Counts, one row per rated item, one column per category.

    Returns
    -------
    float
        Kappa.

    Examples
    --------
    >>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 4)
    0.3333
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] == 0:
        raise ValueError(f"table must be a non-empty rows x categories array, got shape {t.shape}")
    m = t.sum(axis=1)
    if np.any(m != m[0]) or m[0] < 2:
        raise ValueError(f"table rows must all hold the same number (>= 2) of ratings, got {sorted(set(m.tolist()))}")
    m0 = m[0]
    p_row = ((t**2).sum(axis=1) - m0) / (m0 * (m0 - 1))
    share = t.sum(axis=0) / t.sum()
    p_e = float(np.sum(share**2))
    return float("nan") if p_e == 1 else float((p_row.mean() - p_e) / (1 - p_e))


#: how :func:`agreement` chooses the annotations it measures (shown with every agreement table)
AGREEMENT_RULE = (
    "per stratum, over every row annotated at least twice: the first m annotations of each row by time "
    "(m = the fewest any such row has), so later tie-breaking annotations never choose the rows; "
    "Cohen's kappa when those are the same two annotators on every row, otherwise Fleiss' kappa"
)


def _stratum_agreement(votes: Mapping[Any, Mapping[str, Any]]) -> tuple[int, int, int, str | None, float]:
    """``(rows, annotators, per_row, method, kappa)`` of one stratum (votes oldest first per row)."""
    multi = [list(v.items()) for v in votes.values() if len(v) >= 2]
    if not multi:
        return 0, len({a for v in votes.values() for a in v}), 0, None, float("nan")
    m = min(len(v) for v in multi)
    first = [v[:m] for v in multi]
    who = {a for v in first for a, _ in v}
    pairs = {frozenset(a for a, _ in v) for v in first}
    if m == 2 and len(pairs) == 1:
        x, y = sorted(who)
        rows = [dict(v) for v in first]
        return len(rows), 2, 2, "cohen", cohen_kappa([r[x] for r in rows], [r[y] for r in rows])
    cats = sorted({lab for v in first for _, lab in v}, key=repr)
    table = [[sum(lab == c for _, lab in v) for c in cats] for v in first]
    return len(first), len(who), m, "fleiss", fleiss_kappa(table)


def agreement(annotations: pd.DataFrame, strata: pd.Series) -> pd.DataFrame:
    """Agreement between annotators per stratum, on the first annotations of every row.

    In each stratum, over **every** row with at least two annotations, the first ``m``
    annotations of each row are used, ``m`` being the fewest annotations any of those rows
    has (:data:`AGREEMENT_RULE`). "First" is by the ``time`` column when there is one, then by
    order in ``annotations``. A tie-breaking annotation asked for only where the first
    annotators disagree therefore never changes which rows are measured (measuring only the
    rows with the most common number of annotations would keep just the rows the first two
    annotators agreed on, and report perfect agreement).

    The kappa is Cohen's (:func:`cohen_kappa`) when ``m`` is 2 and the same two annotators
    gave the first two annotations of every row, otherwise Fleiss' (:func:`fleiss_kappa`),
    which allows the annotators to differ from row to row.

    Parameters
    ----------
    annotations : pandas.DataFrame
        Columns ``row``, ``annotator``, ``label`` and optionally ``time``; one annotation per
        row and annotator (a repeated pair keeps its first place and its last label).
    strata : pandas.Series
        Stratum of each row id (indexed by row id).

    Returns
    -------
    pandas.DataFrame
        Indexed by stratum: ``rows`` (rows the kappa uses), ``annotators`` (distinct annotators
        among the annotations used), ``per_row`` (``m``, annotations used per row), ``method``
        (``"cohen"``, ``"fleiss"`` or None) and ``kappa`` (NaN without rows annotated twice).

    Examples
    --------
    A third annotator breaks the tie on the one row where ``a`` and ``b`` disagree; the
    kappa is still that of ``a`` and ``b`` on both rows:

    >>> ann = pd.DataFrame({"row": [1, 1, 2, 2, 2], "annotator": ["a", "b", "a", "b", "c"],
    ...                     "label": [1, 1, 0, 1, 1]})
    >>> agreement(ann, pd.Series(["g", "g"], index=[1, 2])).to_dict("records")
    [{'rows': 2, 'annotators': 2, 'per_row': 2, 'method': 'cohen', 'kappa': 0.0}]
    """
    if "time" in annotations.columns:
        annotations = annotations.sort_values("time", kind="stable")
    by_stratum: dict[Any, dict[Any, dict[str, Any]]] = {}
    for rid, who, label in annotations[["row", "annotator", "label"]].itertuples(index=False, name=None):
        by_stratum.setdefault(strata.loc[rid], {}).setdefault(rid, {})[who] = label
    index = [s for s in pd.unique(strata) if s in by_stratum]
    rows = [_stratum_agreement(by_stratum[s]) for s in index]
    columns = ["rows", "annotators", "per_row", "method", "kappa"]
    return pd.DataFrame(rows, columns=columns, index=pd.Index(index, name=strata.name))
