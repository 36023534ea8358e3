"""Active evaluation: labelling campaigns that stop when every credible interval is narrow enough.

A :class:`CampaignSpec` holds a campaign's settings; :class:`Campaign` runs a campaign stored in
SQLite; :func:`simulate` replays the same spec with known labels to compare proposal rules;
:mod:`bayeseval.active.rules` holds the rules and the fast grid posterior they use.

The names below are imported on first use, so ``bayeseval campaign --help`` (which only needs
:mod:`bayeseval.active.cli`) does not load pandas and SciPy.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

#: public name -> submodule of bayeseval.active that defines it
_EXPORTS = {
    "Campaign": "campaign",
    "CampaignSpec": "spec",
    "RULES": "rules",
    "RuleState": "rules",
    "forecast_labels": "rules",
    "get_rule": "rules",
    "simulate": "simulate",
    "SimulationResult": "simulate",
    "plot_halfwidth": "simulate",
    "synthetic_pool": "simulate",
}

__all__ = [
    "Campaign",
    "CampaignSpec",
    "RULES",
    "RuleState",
    "forecast_labels",
    "get_rule",
    "simulate",
    "SimulationResult",
    "plot_halfwidth",
    "synthetic_pool",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.active.campaign import Campaign
    from bayeseval.active.rules import RULES, RuleState, forecast_labels, get_rule
    from bayeseval.active.simulate import SimulationResult, plot_halfwidth, simulate, synthetic_pool
    from bayeseval.active.spec import CampaignSpec


class _Package(types.ModuleType):
    """The package's module type: ``simulate`` stays the function when the submodule of the
    same name is imported (the import system binds a loaded submodule on its package)."""

    @property
    def simulate(self):  # noqa: D401
        from bayeseval.active.simulate import simulate

        return simulate

    @simulate.setter
    def simulate(self, value) -> None:
        if not isinstance(value, types.ModuleType):
            raise AttributeError("bayeseval.active.simulate is the simulate function")


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"bayeseval.active.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayeseval.active' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
