"""bayeseval: how good a fixed classifier really is, per subgroup, with honest uncertainty.

The package imports no PyMC or PyTensor at import time; the PyMC engine loads
them on first use.
"""

from bayeseval._warnings import (
    BayesevalWarning,
    CalibrationWarning,
    ConvergenceWarning,
    EmptyStratumWarning,
    ModelCheckWarning,
    PrecisionLimitedWarning,
    ReweightingWarning,
    ZeroVarianceWarning,
)
from bayeseval.counts import Counts, tabulate
from bayeseval.metrics import Metric, get_metric

# -- frequentist core (intervals, stratified) --
# ruff: noqa: I001  (imports are grouped by the section comments, not sorted)
from bayeseval.intervals import bootstrap_ci, proportion_ci, proportion_se
from bayeseval.stratified import StratifiedRisk, reweight, stratified_risk, weighted_metric
from bayeseval.planning import allocate, sample_size
from bayeseval.compare import mcnemar, paired_bootstrap
from bayeseval.classic import error_reject_curve, estimate_error, risk_averaging

# -- Bayesian models --
from bayeseval.models import Posterior, fit_hierarchical
from bayeseval.checks import (
    calibration_study,
    compare_frequentist,
    compare_pooling,
    posterior_predictive_check,
)

# -- active evaluation --
from bayeseval.active import Campaign, simulate

# -- reports --
from bayeseval.report import Report, evaluate

# Submodules that pull in heavier libraries (scikit-learn, DuckDB, PySpark,
# matplotlib) load on first attribute access: ``bayeseval.split`` etc.
_LAZY_SUBMODULES = frozenset({"split", "spark", "plots", "datasets", "demo", "gate", "cli"})


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"bayeseval.{name}")
    raise AttributeError(f"module 'bayeseval' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "__version__",
    "BayesevalWarning",
    "CalibrationWarning",
    "ConvergenceWarning",
    "EmptyStratumWarning",
    "ModelCheckWarning",
    "PrecisionLimitedWarning",
    "ReweightingWarning",
    "ZeroVarianceWarning",
    "Counts",
    "tabulate",
    "Metric",
    "get_metric",
    # -- frequentist core --
    "proportion_ci",
    "proportion_se",
    "bootstrap_ci",
    "stratified_risk",
    "StratifiedRisk",
    "reweight",
    "weighted_metric",
    "sample_size",
    "allocate",
    "mcnemar",
    "paired_bootstrap",
    "estimate_error",
    "risk_averaging",
    "error_reject_curve",
    # -- Bayesian models --
    "fit_hierarchical",
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
