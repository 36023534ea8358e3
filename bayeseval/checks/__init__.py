"""Checks of a hierarchical model against the data and the frequentist estimators.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

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
    from bayeseval.checks.calibration import (
        SBCResult,
        calibration_study,
        simulation_based_calibration,
    )
    from bayeseval.checks.compare import PoolingComparison, compare_frequentist, compare_pooling
    from bayeseval.checks.predictive import (
        ConflictResult,
        PPCResult,
        conflict_check,
        posterior_predictive_check,
    )

__getattr__, __dir__ = lazy_exports(__name__)
