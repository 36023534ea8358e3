"""Fairness audits: per-group rates, disparities with honest intervals, verdicts, and impact-ratio reports.

The audit's pipeline is ``audits``; its inputs, per-group intervals, disparities, verdicts and
result are ``inputs``, ``groups``, ``disparities``, ``verdicts`` and ``result``.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = [
    "Audit",
    "audit",
    "METRICS",
    "CRITERIA",
    "MODELS",
    "GAP_METHODS",
    "MIN_TRIALS",
    "exit_code",
    "impact_ratio_report",
    "ImpactRatioReport",
    "impact_ratio_interval",
    "FOUR_FIFTHS",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.fairness.audits import audit
    from bayeseval.fairness.impact import (
        FOUR_FIFTHS,
        ImpactRatioReport,
        impact_ratio_interval,
        impact_ratio_report,
    )
    from bayeseval.fairness.inputs import CRITERIA, METRICS
    from bayeseval.fairness.options import GAP_METHODS, MIN_TRIALS, MODELS
    from bayeseval.fairness.result import Audit, exit_code

__getattr__, __dir__ = lazy_exports(__name__)
