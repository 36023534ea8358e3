"""Active evaluation: labelling campaigns that stop when every credible interval is narrow enough.

A :class:`CampaignSpec` holds a campaign's settings; :class:`Campaign` runs a campaign stored in
SQLite; :func:`simulate` replays the same spec with known labels to compare proposal rules;
:mod:`bayeseval.active.rules` holds the rules and the fast grid posterior they use.
"""

from bayeseval.active.campaign import Campaign
from bayeseval.active.rules import RULES, GridPosterior, RuleState, forecast_labels, get_rule
from bayeseval.active.simulate import SimulationResult, plot_halfwidth, simulate, synthetic_pool
from bayeseval.active.spec import CampaignSpec

__all__ = [
    "Campaign",
    "CampaignSpec",
    "RULES",
    "GridPosterior",
    "RuleState",
    "forecast_labels",
    "get_rule",
    "simulate",
    "SimulationResult",
    "plot_halfwidth",
    "synthetic_pool",
]
