"""Frequentist estimates: proportion intervals, the bootstrap, stratified and reweighted rates, classifier comparisons, classic error estimators and proxy-assisted intervals.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = [
    "METHODS",
    "estimate_error",
    "risk_averaging",
    "error_reject_curve",
    "plot_error_reject",
    "McNemarResult",
    "mcnemar",
    "mcnemar_from_predictions",
    "PairedBootstrap",
    "paired_bootstrap",
    "ModelComparison",
    "compare_models",
    "PROPORTION_METHODS",
    "proportion_ci",
    "confidence_sequence",
    "proportion_se",
    "bootstrap_ci",
    "BootstrapInterval",
    "f1_score",
    "ProxyCI",
    "proxy_ci",
    "StratifiedRisk",
    "stratified_risk",
    "clustered_risk",
    "reweight",
    "weighted_metric",
    "ReweightedMetrics",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.estimate.classic import (
        METHODS,
        error_reject_curve,
        estimate_error,
        plot_error_reject,
        risk_averaging,
    )
    from bayeseval.estimate.compare import (
        McNemarResult,
        PairedBootstrap,
        mcnemar,
        mcnemar_from_predictions,
        paired_bootstrap,
    )
    from bayeseval.estimate.intervals import (
        PROPORTION_METHODS,
        BootstrapInterval,
        bootstrap_ci,
        confidence_sequence,
        f1_score,
        proportion_ci,
        proportion_se,
    )
    from bayeseval.estimate.paired import ModelComparison, compare_models
    from bayeseval.estimate.proxy import ProxyCI, proxy_ci
    from bayeseval.estimate.reweighting import ReweightedMetrics, reweight, weighted_metric
    from bayeseval.estimate.stratified import StratifiedRisk, clustered_risk, stratified_risk

__getattr__, __dir__ = lazy_exports(__name__)
