"""Planning a test set: sample sizes (``sizes``), budget allocation (``allocation``), the split
decision (``decision``), detectable gaps (``gaps``) and the dual-constraint split (``split``).

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

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
    "SplitResult",
    "dual_constraint_split",
    "DualConstraintSplit",
    "RepeatedDualConstraintSplit",
    "row_rank",
    "key_salt",
]

if TYPE_CHECKING:  # pragma: no cover
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
    from bayeseval.plan.split import (
        DualConstraintSplit,
        RepeatedDualConstraintSplit,
        SplitResult,
        dual_constraint_split,
        key_salt,
        row_rank,
    )

__getattr__, __dir__ = lazy_exports(__name__)
