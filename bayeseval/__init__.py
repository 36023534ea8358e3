"""bayeseval: how good a fixed classifier really is, per subgroup, with honest uncertainty.

The package imports no PyMC or PyTensor at import time; the PyMC engine loads
them on first use.
"""

import importlib
from typing import TYPE_CHECKING

from bayeseval._warnings import (
    BayesevalWarning,
    CalibrationWarning,
    ConvergenceWarning,
    EmptyStratumWarning,
    ModelCheckWarning,
    PerformanceWarning,
    PrecisionLimitedWarning,
    ReweightingWarning,
    ZeroVarianceWarning,
)

# Everything except the warning classes loads on first use (PEP 562), so ``import bayeseval``
# (and the command line's help) stays light: pandas and SciPy's stats module take most of a
# second to import. Static type checkers see the plain imports below.
_EXPORTS = {
    # counting
    "Counts": "counts",
    "tabulate": "counts",
    "Metric": "metrics",
    "get_metric": "metrics",
    # frequentist core
    "proportion_ci": "intervals",
    "confidence_sequence": "intervals",
    "proportion_se": "intervals",
    "bootstrap_ci": "intervals",
    "stratified_risk": "stratified",
    "clustered_risk": "stratified",
    "StratifiedRisk": "stratified",
    "reweight": "stratified",
    "weighted_metric": "stratified",
    "proxy_ci": "proxy",
    "ProxyCI": "proxy",
    "sample_size": "planning",
    "allocate": "planning",
    "mcnemar": "compare",
    "paired_bootstrap": "compare",
    "estimate_error": "classic",
    "risk_averaging": "classic",
    "error_reject_curve": "classic",
    # Bayesian models and their checks
    "fit_hierarchical": "models",
    "fit_crossed": "models",
    # fairness audits
    "audit": "fairness",
    "Audit": "fairness",
    "impact_ratio_report": "impact",
    "ImpactRatioReport": "impact",
    "Posterior": "models",
    "posterior_predictive_check": "checks",
    "compare_frequentist": "checks",
    "compare_pooling": "checks",
    "calibration_study": "checks",
    # active evaluation
    "Campaign": "active",
    "simulate": "active",
    # reports
    "evaluate": "report",
    "Report": "report",
}

_SUBMODULES = frozenset(
    {
        "intervals", "stratified", "planning", "compare", "classic", "models", "checks",
        "active", "report", "fairness", "impact", "split", "spark", "plots", "datasets", "demo", "gate",
        "cli", "proxy",
    }
)

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.active import Campaign, simulate
    from bayeseval.checks import (
        calibration_study,
        compare_frequentist,
        compare_pooling,
        posterior_predictive_check,
    )
    from bayeseval.classic import error_reject_curve, estimate_error, risk_averaging
    from bayeseval.compare import mcnemar, paired_bootstrap
    from bayeseval.counts import Counts, tabulate
    from bayeseval.fairness import Audit, audit
    from bayeseval.impact import ImpactRatioReport, impact_ratio_report
    from bayeseval.intervals import bootstrap_ci, confidence_sequence, proportion_ci, proportion_se
    from bayeseval.metrics import Metric, get_metric
    from bayeseval.models import Posterior, fit_crossed, fit_hierarchical
    from bayeseval.planning import allocate, sample_size
    from bayeseval.proxy import ProxyCI, proxy_ci
    from bayeseval.report import Report, evaluate
    from bayeseval.stratified import (
        StratifiedRisk,
        clustered_risk,
        reweight,
        stratified_risk,
        weighted_metric,
    )


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"bayeseval.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"bayeseval.{name}")
    raise AttributeError(f"module 'bayeseval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)


__version__ = "0.2.0"

__all__ = [
    "__version__",
    "BayesevalWarning",
    "CalibrationWarning",
    "ConvergenceWarning",
    "EmptyStratumWarning",
    "ModelCheckWarning",
    "PerformanceWarning",
    "PrecisionLimitedWarning",
    "ReweightingWarning",
    "ZeroVarianceWarning",
    "Counts",
    "tabulate",
    "Metric",
    "get_metric",
    # -- frequentist core --
    "proportion_ci",
    "confidence_sequence",
    "proportion_se",
    "bootstrap_ci",
    "stratified_risk",
    "clustered_risk",
    "StratifiedRisk",
    "reweight",
    "weighted_metric",
    "proxy_ci",
    "ProxyCI",
    "sample_size",
    "allocate",
    "mcnemar",
    "paired_bootstrap",
    "estimate_error",
    "risk_averaging",
    "error_reject_curve",
    # -- Bayesian models --
    "fit_hierarchical",
    "fit_crossed",
    "audit",
    "Audit",
    "impact_ratio_report",
    "ImpactRatioReport",
    "Posterior",
    "posterior_predictive_check",
    "compare_frequentist",
    "compare_pooling",
    "calibration_study",
    # -- active evaluation --
    "Campaign",
    "simulate",
    # -- reports --
    "evaluate",
    "Report",
]
