"""Checks of a hierarchical model against the data and the frequentist estimators.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

#: public name -> module of this package that defines it
_EXPORTS = {
    "ConflictResult": "checks",
    "conflict_check": "checks",
    "PPCResult": "checks",
    "PoolingComparison": "checks",
    "SBCResult": "checks",
    "posterior_predictive_check": "checks",
    "compare_frequentist": "checks",
    "compare_pooling": "checks",
    "calibration_study": "checks",
    "simulation_based_calibration": "checks",
}

__all__ = [
    "ConflictResult",
    "conflict_check",
    "PPCResult",
    "PoolingComparison",
    "SBCResult",
    "posterior_predictive_check",
    "compare_frequentist",
    "compare_pooling",
    "calibration_study",
    "simulation_based_calibration",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.checks.checks import (
        ConflictResult,
        PoolingComparison,
        PPCResult,
        SBCResult,
        calibration_study,
        compare_frequentist,
        compare_pooling,
        conflict_check,
        posterior_predictive_check,
        simulation_based_calibration,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
