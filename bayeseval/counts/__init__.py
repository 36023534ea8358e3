"""Rows to counts: :class:`Counts` (successes and trials per stratum), metric definitions; :func:`tabulate` counts pandas, DuckDB (Parquet/CSV paths, relations) and Spark rows.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = [
    "Counts",
    "Design",
    "as_design",
    "tabulate",
    "confusion_counts",
    "ProxyCounts",
    "Metric",
    "get_metric",
    "METRICS",
    "CLASS_METRICS",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.counts.counts import Counts, confusion_counts, tabulate
    from bayeseval.counts.design import Design, as_design
    from bayeseval.counts.metrics import CLASS_METRICS, METRICS, Metric, get_metric
    from bayeseval.counts.proxy import ProxyCounts

__getattr__, __dir__ = lazy_exports(__name__)
