"""What a campaign's per-stratum intervals promise: the guarantee, as the campaign sees it.

The :class:`~bayeseval.Guarantee` objects and their kernels (the guaranteed interval, its stop
level, the anytime confidence sequences) live in :mod:`bayeseval._kernels.guarantee`, below the
reports and audits that use them too; this module names them where the campaign's goals are
(:attr:`CampaignSpec.guarantee <bayeseval.campaign.spec.CampaignSpec.guarantee>`
and :attr:`RuleState.guarantee <bayeseval.campaign.loop.rule_state.RuleState.guarantee>`
hold the campaign's).
"""

from __future__ import annotations

from bayeseval._kernels.guarantee import (
    ANYTIME_MAX_PLAN,
    ANYTIME_MIN_PLAN,
    DECISION_MIN_TRIALS,
    STOP_ALPHA_SHARE,
    Guarantee,
    anytime_bounds,
    anytime_concentrations,
    guarantee_stop_level,
    guaranteed_bounds,
    implied_size,
)

__all__ = [
    "ANYTIME_MAX_PLAN",
    "ANYTIME_MIN_PLAN",
    "DECISION_MIN_TRIALS",
    "STOP_ALPHA_SHARE",
    "Guarantee",
    "anytime_bounds",
    "anytime_concentrations",
    "guarantee_stop_level",
    "guaranteed_bounds",
    "implied_size",
]
