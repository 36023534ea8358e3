"""Distinct rows of a few numeric columns, by one lexicographic sort.

``np.unique(np.column_stack(cols), axis=0, ...)`` views each row as one structured value and
sorts those, which costs about ten times a :func:`numpy.lexsort` of the columns at 100,000
rows. :func:`unique_rows` gives the same distinct rows, in the same (lexicographic) order, with
the same inverse and counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["unique_rows"]


def unique_rows(*columns: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``columns`` in lexicographic order, each row's index among them, and their counts.

    Parameters
    ----------
    *columns : array_like
        One-dimensional columns of equal length (the first sorts first).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        ``rows`` of shape (k, len(columns)) and the columns' common dtype; ``inverse`` (one
        entry per input row, ``rows[inverse]`` rebuilds the input); ``counts`` per distinct row.
        As ``np.unique(np.column_stack(columns), axis=0, return_inverse=True, return_counts=True)``.

    Examples
    --------
    >>> rows, inverse, counts = unique_rows([2, 1, 2, 1], [5, 3, 5, 4])
    >>> rows.tolist(), inverse.tolist(), counts.tolist()
    ([[1, 3], [1, 4], [2, 5]], [2, 0, 2, 1], [1, 1, 2])
    """
    cols = [np.asarray(c).ravel() for c in columns]
    dtype = np.result_type(*cols)
    n = len(cols[0])
    order = np.lexsort(cols[::-1])  # lexsort sorts by its last key first
    ordered = [c[order] for c in cols]
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in ordered])
    starts = np.flatnonzero(new)
    rows = (
        np.column_stack([c[starts] for c in ordered]).astype(dtype, copy=False)
        if n
        else np.empty((0, len(cols)), dtype)
    )
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    counts = np.diff(np.append(starts, n))
    return rows, inverse, counts
