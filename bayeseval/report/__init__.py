"""Reports of an evaluation: the per-stratum table, overall rates, checks and findings, and release gates.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = [
    "gate",
    "GateResult",
    "Finding",
    "Report",
    "evaluate",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.report.findings import Finding
    from bayeseval.report.gates import GateResult, gate
    from bayeseval.report.pipeline import evaluate
    from bayeseval.report.report import Report

__getattr__, __dir__ = lazy_exports(__name__)
