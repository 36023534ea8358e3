"""The edges of a score proxy's equal-count bins, one rule for every engine (NumPy only)."""

from __future__ import annotations

import numpy as np

__all__ = ["edge_ranks"]


def edge_ranks(m: int, n_cells: int) -> np.ndarray:
    """0-based ranks, among a stratum's ``m`` sorted scores, of its score-bin edges.

    Edge ``k`` (``k = 1 .. n_cells - 1``) is the order statistic of rank
    ``floor((m - 1) k / n_cells)``, in integer arithmetic: the lower neighbour of the
    ``k / n_cells`` quantile. A score's bin counts the distinct edges strictly below it, which
    splits the scores exactly as the linearly interpolated quantiles do (no score lies
    strictly between two neighbouring order statistics), without the interpolation's
    rounding, so every engine finds the same bins.

    Examples
    --------
    >>> edge_ranks(10, 5).tolist()
    [1, 3, 5, 7]
    """
    return (int(m) - 1) * np.arange(1, n_cells, dtype=np.int64) // int(n_cells)
