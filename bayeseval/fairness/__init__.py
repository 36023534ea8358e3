"""Fairness audits: per-group rates, disparities with honest intervals, verdicts, and impact-ratio reports.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

#: public name -> module of this package that defines it
_EXPORTS = {
    "Audit": "audits",
    "audit": "audits",
    "METRICS": "audits",
    "CRITERIA": "audits",
    "MODELS": "audits",
    "GAP_METHODS": "audits",
    "MIN_TRIALS": "audits",
    "exit_code": "audits",
    "impact_ratio_report": "impact",
    "ImpactRatioReport": "impact",
    "impact_ratio_interval": "impact",
    "FOUR_FIFTHS": "impact",
}

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
    from bayeseval.fairness.audits import (
        CRITERIA,
        GAP_METHODS,
        METRICS,
        MIN_TRIALS,
        MODELS,
        Audit,
        audit,
        exit_code,
    )
    from bayeseval.fairness.impact import (
        FOUR_FIFTHS,
        ImpactRatioReport,
        impact_ratio_interval,
        impact_ratio_report,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
