"""The planning functions under the module path they had when they shared one module.

``from bayeseval.plan.planning import sample_size`` keeps working for callers not yet moved
to ``from bayeseval.plan import sample_size``; the functions live in :mod:`~bayeseval.plan.sizes`,
:mod:`~bayeseval.plan.allocation`, :mod:`~bayeseval.plan.decision` and :mod:`~bayeseval.plan.gaps`.
This module defines nothing and can go once no caller imports it.
"""

from __future__ import annotations

from bayeseval.plan.allocation import allocate, risk_variance
from bayeseval.plan.decision import SplitDecision, split_decision
from bayeseval.plan.gaps import GapPlan, detectable_gap
from bayeseval.plan.sizes import (
    MultiPlan,
    SubgroupPlan,
    achieved_halfwidth,
    halfwidth_table,
    sample_size,
    sample_size_multi,
    se_for,
    subgroup_rows,
)

__all__ = [
    "sample_size",
    "achieved_halfwidth",
    "sample_size_multi",
    "MultiPlan",
    "subgroup_rows",
    "SubgroupPlan",
    "allocate",
    "risk_variance",
    "se_for",
    "halfwidth_table",
    "SplitDecision",
    "split_decision",
    "detectable_gap",
    "GapPlan",
]
