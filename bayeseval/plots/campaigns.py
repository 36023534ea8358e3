"""Campaigns: interval half-width against labels (observed and forecast, several rules side by
side), and the labels each stratum received round by round."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.plots.base import (
    COLORS,
    axes,
    dispatch,
    when_loaded,
)

__all__ = ["halfwidth_curve", "labels_by_round", "LABELS_NAMED"]


@functools.singledispatch
def _trace_frame(trace: Any) -> tuple[pd.DataFrame, float | None]:
    """The input of :func:`halfwidth_curve` as a DataFrame, plus the target it carries."""
    raise TypeError(f"trace must be a DataFrame, a simulation result or a Campaign, got {type(trace).__name__}")


@_trace_frame.register
def _table_trace(trace: pd.DataFrame) -> tuple[pd.DataFrame, float | None]:
    return trace, None


@when_loaded(_trace_frame, "bayeseval.campaign.simulation", "SimulationResult")
def _simulation_trace(result: Any) -> tuple[pd.DataFrame, float | None]:
    return result.trace, result.settings.get("target_halfwidth")


@fill_doc()
def halfwidth_curve(
    trace: pd.DataFrame,
    *,
    target: float | None = None,
    band: tuple[float, float] = (0.1, 0.9),
    logx: bool = False,
    ax: Any = None,
) -> Any:
    """Interval half-width against the number of labels, per rule (and observed vs forecast).

    Parameters
    ----------
    trace : pandas.DataFrame, SimulationResult or Campaign
        A DataFrame with columns ``labels`` and ``halfwidth`` (or
        ``max_halfwidth``); optional ``rule`` (one line per rule), ``repeat``
        (several simulated runs per rule: the median line and a ``band`` of
        quantiles are drawn), and ``kind`` with values ``"observed"`` /
        ``"forecast"`` (forecast drawn dashed). Also accepted: the result of
        :func:`bayeseval.campaign.simulation.simulate` (its ``trace``), or a
        :class:`~bayeseval.campaign.campaign.Campaign`: the largest stratum
        half-width at each proposal round (observed) and a dashed line to the
        labels its ``forecast()`` says are still needed to reach the target.
    target : float, optional
        The target half-width, drawn as a horizontal line (taken from the
        simulation or campaign settings when omitted).
    band : (float, float), default (0.1, 0.9)
        Quantiles of the band across repeats. Each run is held at its last
        half-width after it stops, so late points summarise all runs.
    logx : bool, default False
        Symmetric-log x axis, for rules whose label counts differ by orders of magnitude.
    {ax}

    {axes_returned}

    Examples
    --------
    >>> import pandas as pd
    >>> tr = pd.DataFrame({"rule": ["a"] * 3 + ["b"] * 3, "labels": [0, 50, 100] * 2,
    ...                    "halfwidth": [0.2, 0.1, 0.07, 0.2, 0.12, 0.09]})
    >>> ax = halfwidth_curve(tr, target=0.08)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['a', 'b', 'target 0.08']
    """
    trace, carried = dispatch(_trace_frame, trace)(trace)
    target = carried if target is None else target
    tr = _check_trace(trace)
    ax = axes(ax)
    for i, rule in enumerate(pd.unique(tr["rule"])):
        sub = tr[tr["rule"] == rule]
        for kind in ("observed", "forecast"):
            part = sub[sub["kind"] == kind]
            if not part.empty:
                label = str(rule) if kind == "observed" else f"{rule} (forecast)"
                style = "-" if kind == "observed" else "--"
                _halfwidth_line(ax, part, band, style, COLORS[i % len(COLORS)], label)
    if target is not None:
        ax.axhline(target, color="black", ls=":", lw=1, label=f"target {target:g}")
    if logx:
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
    ax.set_xlabel("labels")
    ax.set_ylabel("interval half-width")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax


def _check_trace(trace: pd.DataFrame) -> pd.DataFrame:
    """A copy of the trace with columns labels, halfwidth, rule and kind."""
    if "halfwidth" not in trace.columns and "max_halfwidth" in trace.columns:
        trace = trace.rename(columns={"max_halfwidth": "halfwidth"})
    for col in ("labels", "halfwidth"):
        if col not in trace.columns:
            raise ValueError(f"trace needs a column {col!r}; it has {list(trace.columns)}")
    tr = trace.copy()
    if "rule" not in tr.columns:
        tr["rule"] = "campaign"
    if "kind" not in tr.columns:
        tr["kind"] = "observed"
    return tr


def _halfwidth_line(ax: Any, part: pd.DataFrame, band: tuple[float, float], style: str, color: str, label: str) -> None:
    """One rule's line: the median over repeats with a quantile band, or the single run."""
    if "repeat" in part.columns and part["repeat"].nunique() > 1:
        # each run is a step function of labels, held at its last value after it
        # stops; the median and the band are taken across runs on the common grid
        wide = (
            part.pivot_table(index="labels", columns="repeat", values="halfwidth", aggfunc="last").sort_index().ffill()
        )
        grid = wide.index.to_numpy(dtype=float)
        vals = wide.to_numpy(dtype=float)
        ax.plot(grid, np.nanmedian(vals, axis=1), style, color=color, lw=1.8, label=label)
        lo = np.nanquantile(vals, band[0], axis=1)
        hi = np.nanquantile(vals, band[1], axis=1)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.15, lw=0)
    else:
        med = part.groupby("labels")["halfwidth"].median()
        ax.plot(med.index, med.to_numpy(), style, color=color, lw=1.8, label=label)


@when_loaded(_trace_frame, "bayeseval.campaign.campaign", "Campaign")
def _campaign_trace(campaign: Any) -> tuple[pd.DataFrame, float | None]:
    """Observed (labels, max half-width) per proposal round of a Campaign, plus its forecast."""
    rows = []
    hist = campaign.history()
    for _, rec in hist.iterrows():
        det = rec.get("details") or {}
        if "labels_used" in det and "max_halfwidth" in det:
            rows.append(("observed", int(det["labels_used"]), float(det["max_halfwidth"])))
    status = campaign.status()
    hw_now = float(status["halfwidth"].max()) if "halfwidth" in status.columns else np.nan
    used = int(campaign.labels_used)
    rows.append(("observed", used, hw_now))
    target = None
    config = getattr(campaign, "config", None)
    if isinstance(config, Mapping) and "target_halfwidth" in config:
        target = float(config["target_halfwidth"])
    forecast = pd.Series(campaign.forecast()).astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    need = int(forecast.sum()) if np.isfinite(forecast).all() else 0  # no line while it cannot be forecast
    if target is not None and need > 0 and np.isfinite(hw_now):
        rows += [("forecast", used, hw_now), ("forecast", used + need, target)]
    frame = pd.DataFrame(rows, columns=["kind", "labels", "halfwidth"])
    frame = frame.drop_duplicates(subset=["kind", "labels"], keep="last")
    frame["rule"] = getattr(campaign, "_rule_name", None) or "campaign"
    return frame, target


#: strata drawn in colour and named in the legend of :func:`labels_by_round` (the rest in grey)
LABELS_NAMED = 10

#: above this many strata :func:`labels_by_round` draws the grey lines as one collection: the
#: same picture, drawn in a fraction of the time (a line object per stratum takes seconds for
#: thousands of strata)
GREY_AS_ONE = 200


@fill_doc()
def labels_by_round(progress: pd.DataFrame, *, ax: Any = None) -> Any:
    """Cumulative labels per stratum against the round: one step line per stratum.

    With more than ``LABELS_NAMED`` strata, the ones with the most labels are drawn in
    colour and named in the legend, the others in grey (above ``GREY_AS_ONE`` strata as
    one :class:`~matplotlib.collections.LineCollection`, not a line each).

    Parameters
    ----------
    progress : pandas.DataFrame
        :func:`bayeseval.campaign.report.progress_by_round` of a campaign:
        strata as rows, cumulative labels per round as columns.
    {ax}

    {axes_returned}

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"round 1": [4, 4], "round 2": [12, 4]}, index=["a", "b"])
    >>> ax = labels_by_round(frame)
    >>> [line.get_ydata().tolist() for line in ax.get_lines()]  # from 0 labels before round 1
    [[0, 4, 12], [0, 4, 4]]
    """
    from matplotlib.collections import LineCollection
    from matplotlib.ticker import MaxNLocator

    ax = axes(ax)
    rounds = np.arange(0, progress.shape[1] + 1)  # round r spans (r - 1, r]
    final = progress.iloc[:, -1]
    named = set(final.sort_values(ascending=False, kind="stable").index[:LABELS_NAMED])
    many = len(progress) > GREY_AS_ONE
    for name, row in progress.iterrows():
        if name in named:
            ax.step(rounds, np.r_[0, row.to_numpy()], where="pre", lw=1.6, label=f"{name} ({int(row.iloc[-1])})")
        elif not many:
            ax.step(rounds, np.r_[0, row.to_numpy()], where="pre", lw=0.8, color="0.75", zorder=1)
    if many:
        ax.add_collection(
            LineCollection(
                _pre_steps(progress.loc[~progress.index.isin(named)], rounds), colors="0.75", linewidths=0.8, zorder=1
            )
        )
        ax.autoscale_view()
    ax.set_xlabel("round")
    ax.set_ylabel("labels per stratum (cumulative)")
    ax.set_xlim(0, rounds[-1])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    title = "stratum (labels)" if len(progress) <= LABELS_NAMED else f"top {LABELS_NAMED} of {len(progress)} strata"
    ax.legend(title=title, fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def _pre_steps(progress: pd.DataFrame, rounds: np.ndarray) -> np.ndarray:
    """The vertices of each row's step line from 0 labels, as ``ax.step(where="pre")`` draws it:
    an array (rows, points, 2)."""
    y = np.column_stack([np.zeros(len(progress)), progress.to_numpy(dtype=float)])
    xs = np.repeat(rounds, 2)[:-1]  # x0, x0, x1, x1, ...: up at each round's start, then along it
    ys = np.repeat(y, 2, axis=1)[:, 1:]  # y0, y1, y1, y2, y2, ...
    return np.stack([np.broadcast_to(xs, ys.shape), ys], axis=-1)
