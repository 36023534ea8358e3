"""Planning a test set: sample sizes, budget allocation, the split decision, detectable gaps and the dual-constraint split.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

#: public name -> module of this package that defines it
_EXPORTS = {
    "sample_size": "planning",
    "achieved_halfwidth": "planning",
    "sample_size_multi": "planning",
    "MultiPlan": "planning",
    "subgroup_rows": "planning",
    "SubgroupPlan": "planning",
    "allocate": "planning",
    "risk_variance": "planning",
    "se_for": "planning",
    "halfwidth_table": "planning",
    "SplitDecision": "planning",
    "split_decision": "planning",
    "detectable_gap": "planning",
    "GapPlan": "planning",
    "SplitResult": "split",
    "dual_constraint_split": "split",
    "DualConstraintSplit": "split",
    "RepeatedDualConstraintSplit": "split",
    "row_rank": "split",
    "key_salt": "split",
}

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
    from bayeseval.plan.planning import (
        GapPlan,
        MultiPlan,
        SplitDecision,
        SubgroupPlan,
        achieved_halfwidth,
        allocate,
        detectable_gap,
        halfwidth_table,
        risk_variance,
        sample_size,
        sample_size_multi,
        se_for,
        split_decision,
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
