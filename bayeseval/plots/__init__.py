"""Plots: every matplotlib call of bayeseval lives in this package, one module per kind of result.

Every function takes ``ax=None`` (a new figure is made when omitted) and returns the matplotlib
Axes it drew on. No function changes rcParams or global style, and none calls ``plt.show()``.

- :func:`plot`: the default plot of a result object, chosen by its type (``Report``,
  ``Posterior``, ``PPCResult``, ``SimulationResult``, ``Campaign``, ``StratifiedRisk``);
  the results' ``.plot()`` methods hand off to it (``results.py``).
- :func:`forest`: raw rate with the stratum's own interval beside the pooled posterior
  interval, per stratum, sized by trials, with the overall rate (``strata.py``).
- :func:`halfwidth_curve`: interval half-width against labels (campaign traces, observed and
  forecast, several rules side by side); :func:`labels_by_round`: a campaign's cumulative
  labels per stratum, round by round (``campaigns.py``).
- :func:`allocation`: per-stratum counts under several allocation rules;
  :func:`sample_size_curve`: trials needed against target half-width (``planning.py``).
- :func:`ppc`: observed rate against the posterior predictive interval; :func:`coverage`:
  coverage of interval methods in a calibration study (``checks.py``).
- :func:`disparities`, :func:`disparities_png`: an audit's disparities (``audits.py``).
- :func:`error_reject`: error of accepted rows against the reject rate (``estimates.py``).

Inputs are dispatched on their type; the result types are registered when their module is
first loaded (``base.py``), so importing ``bayeseval.plots`` imports none of them. Each public
name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = [
    "plot",
    "forest",
    "halfwidth_curve",
    "labels_by_round",
    "allocation",
    "sample_size_curve",
    "ppc",
    "coverage",
    "disparities",
    "disparities_png",
    "error_reject",
]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.plots.audits import disparities, disparities_png
    from bayeseval.plots.campaigns import halfwidth_curve, labels_by_round
    from bayeseval.plots.checks import coverage, ppc
    from bayeseval.plots.estimates import error_reject
    from bayeseval.plots.planning import allocation, sample_size_curve
    from bayeseval.plots.results import plot
    from bayeseval.plots.strata import forest

__getattr__, __dir__ = lazy_exports(__name__)
