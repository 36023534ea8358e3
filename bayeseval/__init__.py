"""bayeseval: how good a fixed classifier really is, per subgroup, with honest uncertainty.

The package imports no PyMC or PyTensor at import time; the PyMC engine loads
them on first use.
"""

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports
from bayeseval._api.version import VERSION
from bayeseval._api.warnings import (
    BayesevalWarning,
    BlankLabelWarning,
    CalibrationWarning,
    ClusteredRowsWarning,
    ConvergenceWarning,
    EmptyStratumWarning,
    ModelCheckWarning,
    PerformanceWarning,
    PrecisionLimitedWarning,
    ReweightingWarning,
    ZeroVarianceWarning,
)

_SUBMODULES = frozenset(
    {
        "counts",
        "io",
        "estimate",
        "models",
        "checks",
        "plan",
        "fairness",
        "report",
        "campaign",
        "cli",
        "spark",
        "plots",
        "datasets",
        "demo",
        "experimental",
    }
)

# Everything except the warning classes loads on first use (PEP 562), so ``import bayeseval``
# (and the command line's help) stays light: pandas and SciPy's stats module take most of a
# second to import. Type checkers read the imports below; lazy_exports reads the same lines
# to find each name's module when the name is first used.
if TYPE_CHECKING:  # pragma: no cover
    from bayeseval._api.options import Groups, Proxy
    from bayeseval._kernels.guarantee import Guarantee
    from bayeseval.campaign import Annotation, Budget, Campaign, Score, plan_from_pilot, simulate
    from bayeseval.checks import (
        calibration_study,
        compare_frequentist,
        compare_pooling,
        posterior_predictive_check,
    )
    from bayeseval.counts.counts import Counts, tabulate
    from bayeseval.counts.design import Design
    from bayeseval.counts.metrics import Metric, get_metric
    from bayeseval.estimate.classic import error_reject_curve, estimate_error, risk_averaging
    from bayeseval.estimate.compare import mcnemar, paired_bootstrap
    from bayeseval.estimate.intervals import (
        bootstrap_ci,
        confidence_sequence,
        proportion_ci,
        proportion_se,
    )
    from bayeseval.estimate.judge import judge_calibration
    from bayeseval.estimate.paired import ModelComparison, compare_models
    from bayeseval.estimate.proxy import ProxyCI, proxy_ci
    from bayeseval.estimate.reweighting import reweight, weighted_metric
    from bayeseval.estimate.stratified import StratifiedRisk, clustered_risk, stratified_risk
    from bayeseval.fairness.audits import audit
    from bayeseval.fairness.impact import ImpactRatioReport, impact_ratio_report
    from bayeseval.fairness.result import Audit
    from bayeseval.models import Posterior, fit_crossed, fit_hierarchical
    from bayeseval.models.pooled import PooledModel
    from bayeseval.plan.allocation import allocate
    from bayeseval.plan.sizes import sample_size
    from bayeseval.report.gates import GateResult, gate
    from bayeseval.report.pipeline import evaluate
    from bayeseval.report.report import Report


__getattr__, __dir__ = lazy_exports(__name__, submodules=_SUBMODULES)


__version__ = VERSION

__all__ = [
    "__version__",
    "BayesevalWarning",
    "BlankLabelWarning",
    "CalibrationWarning",
    "ClusteredRowsWarning",
    "ConvergenceWarning",
    "EmptyStratumWarning",
    "ModelCheckWarning",
    "PerformanceWarning",
    "PrecisionLimitedWarning",
    "ReweightingWarning",
    "ZeroVarianceWarning",
    "Counts",
    "Design",
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
    "judge_calibration",
    "plan_from_pilot",
    "sample_size",
    "allocate",
    "mcnemar",
    "paired_bootstrap",
    "compare_models",
    "ModelComparison",
    "estimate_error",
    "risk_averaging",
    "error_reject_curve",
    # -- Bayesian models --
    "fit_hierarchical",
    "fit_crossed",
    "PooledModel",
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
    "Budget",
    "Score",
    "Annotation",
    # -- reports --
    "evaluate",
    "Groups",
    "Proxy",
    "Report",
    "gate",
    "GateResult",
    # -- what each stratum's interval promises --
    "Guarantee",
]
