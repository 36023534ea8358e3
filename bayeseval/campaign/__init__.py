"""Labelling campaigns that stop when every credible interval is narrow enough.

A :class:`CampaignSpec` holds a campaign's settings and its goal (:class:`Each`,
:class:`Overall`, :class:`Decide` or :class:`Gap`); :class:`Campaign` runs a campaign stored
in SQLite; :func:`simulate` replays the same spec with known labels to compare proposal rules.
:mod:`bayeseval.campaign.loop.state` holds the campaign's counts and posterior,
:mod:`bayeseval.campaign.loop.rule_state` what the goal and the guarantee decide from them,
:mod:`bayeseval.campaign.loop.rules` the proposal rules and :mod:`bayeseval.campaign.loop.forecast`
what the campaign can still reach.

The names below are imported on first use, so ``bayeseval campaign --help`` (which only needs
:mod:`bayeseval.cli.campaign`) does not load pandas and SciPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = [
    "Campaign",
    "CampaignSpec",
    "Budget",
    "Score",
    "Annotation",
    "Each",
    "Overall",
    "Decide",
    "Gap",
    "RULES",
    "RuleState",
    "forecast_labels",
    "get_rule",
    "simulate",
    "SimulationResult",
    "plot_halfwidth",
    "synthetic_pool",
    "plan_from_pilot",
    "PilotPlan",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.campaign.campaign import Campaign
    from bayeseval.campaign.goals.decide import Decide
    from bayeseval.campaign.goals.each import Each
    from bayeseval.campaign.goals.gap import Gap
    from bayeseval.campaign.goals.overall import Overall
    from bayeseval.campaign.loop.forecast import forecast_labels
    from bayeseval.campaign.loop.rule_state import RuleState
    from bayeseval.campaign.loop.rules import RULES, get_rule
    from bayeseval.campaign.pilot import PilotPlan, plan_from_pilot
    from bayeseval.campaign.settings import Annotation, Budget, Score
    from bayeseval.campaign.simulation import (
        SimulationResult,
        plot_halfwidth,
        simulate,
        synthetic_pool,
    )
    from bayeseval.campaign.spec import CampaignSpec

__getattr__, __dir__ = lazy_exports(__name__)
