"""The default plot of a result object, chosen by the result's type (``Report``, ``Posterior``,
``PPCResult``, ``SimulationResult``, ``Campaign``, ``StratifiedRisk``, ``ModelComparison``); the results' ``.plot()``
methods hand off to :func:`plot`."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from bayeseval._api.docs import fill_doc
from bayeseval.plots.base import (
    COLORS,
    POST,
    RAW,
    axes,
    dispatch,
    interval_markers,
    tick_labels,
    when_loaded,
)
from bayeseval.plots.campaigns import halfwidth_curve
from bayeseval.plots.checks import ppc
from bayeseval.plots.strata import forest

__all__ = ["plot"]


# -- one entry point for result objects ------------------------------------------------------
@functools.singledispatch
def _plot(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    raise TypeError(
        "plot() draws a Report, Posterior, PPCResult, SimulationResult, Campaign or "
        f"StratifiedRisk (or a type registered with plot.register), got {type(result).__name__}"
    )


@fill_doc()
def plot(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    """Draw the default plot of a result object, chosen by the result's type.

    ==================  ===============================================================
    type                plot
    ==================  ===============================================================
    Report              :func:`forest` (``kind="ppc"``: :func:`ppc` of its posterior)
    Posterior           :func:`forest`
    PPCResult           :func:`ppc`
    SimulationResult    :func:`halfwidth_curve`
    Campaign            :func:`halfwidth_curve`
    StratifiedRisk      each stratum's rate and interval with the population estimate
    ==================  ===============================================================

    The results' ``.plot()`` methods call this function. Other types can be added with
    ``plot.register(SomeType)`` (:func:`functools.singledispatch`).

    Parameters
    ----------
    result : object
        A result of one of the types above.
    {ax}
    **kwargs
        Passed to the plotting function of the type (e.g. ``level`` for a Posterior).

    {axes_returned}

    Raises
    ------
    TypeError
        When no plot is registered for ``type(result)``.

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 9], [40, 50, 60], random_seed=0, draws=500)
    >>> ax = plot(post)
    >>> len(ax.get_yticklabels())
    3
    """
    return dispatch(_plot, result)(result, ax=ax, **kwargs)


plot.register = _plot.register  # type: ignore[attr-defined]


@when_loaded(_plot, "bayeseval.report.report", "Report")
def _plot_report(report: Any, ax: Any = None, kind: str = "forest", **kwargs: Any) -> Any:
    if kind == "forest":
        return forest(report, ax=ax, **kwargs)
    if kind == "ppc":
        if report.posterior is None:
            raise ValueError("kind='ppc' needs the pooled posterior, which was not fitted")
        return ppc(report.posterior, ax=ax, **kwargs)
    raise ValueError(f"kind must be 'forest' or 'ppc', got {kind!r}")


@when_loaded(_plot, "bayeseval.models.posterior", "Posterior")
def _plot_posterior(post: Any, ax: Any = None, **kwargs: Any) -> Any:
    return forest(post, ax=ax, **kwargs)


@when_loaded(_plot, "bayeseval.checks.predictive", "PPCResult")
def _plot_ppc_result(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    return ppc(result, ax=ax, **kwargs)


@when_loaded(_plot, "bayeseval.campaign.simulation", "SimulationResult")
def _plot_simulation(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    return halfwidth_curve(result, ax=ax, **kwargs)


@when_loaded(_plot, "bayeseval.campaign.campaign", "Campaign")
def _plot_campaign(campaign: Any, ax: Any = None, **kwargs: Any) -> Any:
    return halfwidth_curve(campaign, ax=ax, **kwargs)


@when_loaded(_plot, "bayeseval.estimate.stratified", "StratifiedRisk")
def _plot_stratified(risk: Any, ax: Any = None) -> Any:
    """Each stratum's rate and interval (area ~ population share) with the population estimate."""
    table = risk.table
    ax = axes(ax, (7, max(2.5, 0.4 * len(table) + 1.2)))
    y = np.arange(len(table))[::-1].astype(float)
    w = table["weight"].to_numpy(dtype=float)
    sizes = 15 + 135 * np.sqrt(np.nan_to_num(w) / max(float(np.nanmax(w)) if len(w) else 1.0, 1e-12))
    ax.axvspan(risk.ci[0], risk.ci[1], color=POST, alpha=0.10, lw=0)
    ax.axvline(risk.estimate, color=POST, ls="--", lw=1, label=f"population estimate: {risk.estimate:.3f}")
    interval_markers(
        ax,
        table[["rate", "lower", "upper"]],
        y,
        sizes,
        RAW,
        "o",
        f"stratum rate, {risk.method} interval (area ~ population share)",
    )
    ax.set_yticks(y)
    ax.set_yticklabels(tick_labels(table.index), parse_math=False)
    ax.set_xlabel("rate")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1, fontsize=8, frameon=False)
    return ax


@when_loaded(_plot, "bayeseval.estimate.model_comparison", "ModelComparison")
def _plot_model_comparison(result: Any, ax: Any = None, pair: Any = None) -> Any:
    """Forest of paired differences: one row per stratum, one colour per pair, filled when separable."""
    table = result.differences
    pairs = list(dict.fromkeys(table["pair"]))
    if pair is not None:
        wanted = [pair] if isinstance(pair, str) else list(pair)
        unknown = [p for p in wanted if p not in pairs]
        if unknown:
            raise ValueError(f"pair {unknown[0]!r} is not a pair of the comparison; pairs are {pairs}")
        pairs = wanted
    strata = list(dict.fromkeys(table["stratum"]))
    ax = axes(ax, (7, max(2.5, 0.45 * len(strata) * max(1, len(pairs)) ** 0.5 + 1.2)))
    y0 = np.arange(len(strata))[::-1].astype(float)
    spread = 0.6 / max(len(pairs), 1)
    ax.axvline(0.0, color=RAW, lw=1, ls="--")
    for k, name in enumerate(pairs):
        rows = table[table["pair"] == name].set_index("stratum").reindex(strata)
        y = y0 + (k - (len(pairs) - 1) / 2) * spread
        color = COLORS[k % len(COLORS)]
        ok = rows["n_items"].fillna(0).to_numpy() > 0
        sep = rows["separable"].fillna(False).to_numpy(dtype=bool)
        mid, lo, hi = (rows[c].to_numpy(dtype=float) for c in ("estimate", "lower", "upper"))
        ax.errorbar(
            mid[ok],
            y[ok],
            xerr=np.vstack([mid - lo, hi - mid])[:, ok].clip(min=0),
            fmt="none",
            ecolor=color,
            elinewidth=1.5,
            capsize=2,
            label=name,
        )
        ax.scatter(mid[ok & sep], y[ok & sep], color=color, zorder=3)
        ax.scatter(mid[ok & ~sep], y[ok & ~sep], facecolors="white", edgecolors=color, zorder=3)
    ax.set_yticks(y0)
    ax.set_yticklabels([str(s) for s in strata], parse_math=False)
    what = pairs[0] if len(pairs) == 1 else "model_a - model_b"
    ax.set_xlabel(f"difference in mean score ({what})")
    ax.set_xlim(-1.05, 1.05)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"intervals at level {result.interval_level:.4g} ({result.adjust}); filled: separable", fontsize=9)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.05), ncol=1, fontsize=8, frameon=False)
    return ax
