"""Counting inside DuckDB: Parquet/CSV files and DuckDB relations become Counts.

:func:`bayeseval.tabulate` and :func:`bayeseval.plan.split.dual_constraint_split`
dispatch a Parquet/CSV path (or glob) or a DuckDB relation to the DuckDB back
end (``bayeseval._backends.duckdb_backend``): the rows never reach pandas, one
``GROUP BY`` gives the small confusion table per stratum, and the same rules as
for pandas turn it into Counts. This module keeps the helpers other code and
users call by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bayeseval._backends.interface import is_duckdb_source
from bayeseval.counts.counts import Counts, tabulate
from bayeseval.counts.metrics import Metric

__all__ = ["tabulate_duckdb"]


def tabulate_duckdb(
    data: Any,
    *,
    y_true: str,
    y_pred: str,
    strata: str | Sequence[str] | None,
    metric: str | Metric,
    pos_label: Any = None,
) -> Counts:
    """Count successes and trials per stratum inside DuckDB (same as :func:`bayeseval.tabulate`).

    Parameters
    ----------
    data : str, os.PathLike or duckdb.DuckDBPyRelation
        A Parquet or CSV file (or glob), or a relation.
    y_true, y_pred : str
        Label columns.
    strata : str or list of str or None
        Stratum columns.
    metric : str or Metric
        The metric.
    pos_label : optional
        Positive class, as in :func:`bayeseval.tabulate`.

    Returns
    -------
    Counts
        Identical to :func:`bayeseval.tabulate` on the same rows in pandas.

    Examples
    --------
    >>> import duckdb
    >>> rel = duckdb.sql("SELECT * FROM (VALUES (1, 1, 'a'), (1, 0, 'a'), (1, 1, 'b')) t(y, p, g)")
    >>> tabulate_duckdb(rel, y_true="y", y_pred="p", strata="g", metric="recall").to_frame().loc["a"].tolist()
    [1, 2]
    """
    if not is_duckdb_source(data):
        raise TypeError(f"data must be a Parquet/CSV path or a DuckDB relation, got {type(data).__name__}")
    return tabulate(data, y_true=y_true, y_pred=y_pred, strata=strata, metric=metric, pos_label=pos_label)
