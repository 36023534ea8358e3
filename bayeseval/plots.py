"""Plots: every matplotlib call of bayeseval lives here.

Every function takes ``ax=None`` (a new figure is made when omitted) and returns
the matplotlib Axes it drew on. No function changes rcParams or global style,
and none calls ``plt.show()``.

- :func:`forest`: raw rate with the stratum's own interval beside the pooled
  posterior interval, per stratum, sized by trials, with the overall rate.
- :func:`halfwidth_curve`: interval half-width against labels (campaign
  traces, observed and forecast, several rules side by side).
- :func:`labels_by_round`: a campaign's cumulative labels per stratum, round by round.
- :func:`allocation`: per-stratum counts under several allocation rules.
- :func:`sample_size_curve`: trials needed against target half-width.
- :func:`ppc`: observed rate against the posterior predictive interval.
- :func:`coverage`: coverage of interval methods in a calibration study.
- :func:`plot`: the default plot of a result object, chosen by its type (``Report``,
  ``Posterior``, ``PPCResult``, ``SimulationResult``, ``Campaign``, ``StratifiedRisk``);
  the results' ``.plot()`` methods hand off to it.

Inputs are dispatched on their type (:func:`functools.singledispatch`). The result types live
in modules that import more than this one needs, so they are registered when their module is
first loaded (an object of a type exists only once its module is), and importing
``bayeseval.plots`` imports none of them.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval.counts.counts import stratum_labels
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.plan.allocation import allocate
from bayeseval.plan.sizes import sample_size

__all__ = [
    "plot",
    "forest",
    "halfwidth_curve",
    "labels_by_round",
    "allocation",
    "sample_size_curve",
    "ppc",
    "coverage",
]

_RAW = "#555555"
_POST = "#1f77b4"
_FLAG = "#d62728"
_MILD = "#ff7f0e"
_READ = "#e6730f"  # the adaptive interval a stratum's row says to read
_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _axes(ax: Any, figsize: tuple[float, float] = (7, 4)) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def _labels(index: pd.Index) -> list[str]:
    return stratum_labels(index)


# -- dispatch on result types, registered once the type's module is loaded ---------------------
#: (dispatcher, module, class name, handler) not yet registered
_PENDING: list[tuple[Any, str, str, Callable[..., Any]]] = []


def _when_loaded(dispatcher: Any, module: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated handler for ``module.name`` once ``module`` is imported."""

    def decorate(handler: Callable[..., Any]) -> Callable[..., Any]:
        _PENDING.append((dispatcher, module, name, handler))
        return handler

    return decorate


def _dispatch(dispatcher: Any, obj: Any) -> Callable[..., Any]:
    """The implementation of ``dispatcher`` for ``obj``'s type (pending types registered first)."""
    for item in list(_PENDING):
        dispatcher_, module, name, handler = item
        loaded = sys.modules.get(module)
        if loaded is not None:
            dispatcher_.register(getattr(loaded, name), handler)
            _PENDING.remove(item)
    return dispatcher.dispatch(type(obj))


def _overall_band(estimate: float, lower: float, upper: float, label: str) -> dict[str, Any]:
    return {"estimate": float(estimate), "lower": float(lower), "upper": float(upper), "label": label}


def _pick(frame: pd.DataFrame, names: Sequence[str], what: str) -> pd.Series:
    for name in names:
        if name in frame.columns:
            return frame[name].astype(float)
    raise ValueError(f"the table needs a column for {what} (one of {list(names)}); "
                     f"it has {list(frame.columns)}")


@functools.singledispatch
def _forest_frame(data: Any, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The input of :func:`forest` as columns trials, rate, lower, upper, pooled_mean,
    pooled_lower, pooled_upper (indexed by stratum), plus the overall rate if known; the
    legend label of lower/upper in ``frame.attrs["interval"]``."""
    raise TypeError(f"data must be a Report, a Posterior or a DataFrame, got {type(data).__name__}")


@_when_loaded(_forest_frame, "bayeseval.report.report", "Report")
def _report_forest_frame(report: Any, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    ov = report.overall
    labels = {
        "posterior_weighted": "population-weighted (pooled)",
        "reweighted": "population-weighted",
        "unweighted": "overall (test-set composition)",
    }
    overall = next(
        (
            _overall_band(*ov.loc[est, ["estimate", "lower", "upper"]], label)
            for est, label in labels.items()
            if est in ov.index
        ),
        None,
    )
    frame, _ = _table_forest_frame(report.table, level)
    frame.attrs["interval"] = _REPORT_INTERVAL.get(report.guarantee, "raw rate, interval")
    return frame, overall


# the legend of a report's own interval, per guarantee
_REPORT_INTERVAL = {
    "stratum": "raw rate, interval covering each stratum (adaptive)",
    "average": "raw rate, interval read (pooled or adaptive: average coverage)",
}


@_when_loaded(_forest_frame, "bayeseval.models.posterior", "Posterior")
def _posterior_forest_frame(post: Any, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    summ = post.summary(level=level)
    counts = post.counts
    with warnings.catch_warnings():  # empty strata: the interval is (0, 1), drawn as such
        warnings.simplefilter("ignore")
        lo, hi = proportion_ci(counts.successes, counts.trials, level=level, method="wilson")
    frame = pd.DataFrame(
        {
            "trials": counts.trials,
            "rate": counts.rates,
            "lower": np.asarray(lo, dtype=float),
            "upper": np.asarray(hi, dtype=float),
            "pooled_mean": summ["mean"].to_numpy(),
            "pooled_lower": summ["lower"].to_numpy(),
            "pooled_upper": summ["upper"].to_numpy(),
        },
        index=counts.strata,
    )
    _add_read_columns(frame, summ)
    overall = None
    if counts.weights is not None:
        draws = np.asarray(post.weighted(counts.weights))
        a = (1 - level) / 2
        overall = _overall_band(
            draws.mean(), np.quantile(draws, a), np.quantile(draws, 1 - a), "population-weighted (pooled)"
        )
    return frame, overall


@_forest_frame.register
def _table_forest_frame(data: pd.DataFrame, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    overall = None
    if "weighted overall" in data.index and "pooled_mean" in data.columns:
        # compare_frequentist's last row: the population-weighted rate
        row = data.loc["weighted overall"]
        overall = _overall_band(
            row["pooled_mean"], row["pooled_lower"], row["pooled_upper"],
            "population-weighted (pooled)",
        )
        data = data.drop(index="weighted overall")
    if "pooled_mean" in data.columns or "posterior_mean" in data.columns:
        # Report.table layout: lower/upper are the stratum's own interval
        freq = (["lower", "wilson_lower", "freq_lower"], ["upper", "wilson_upper", "freq_upper"])
        post = (["pooled_mean", "posterior_mean"], ["pooled_lower", "posterior_lower"],
                ["pooled_upper", "posterior_upper"])
    else:
        # side-by-side layout (checks.compare_frequentist): wilson_* frequentist, mean/lower/upper
        # the posterior
        freq = (["wilson_lower", "freq_lower"], ["wilson_upper", "freq_upper"])
        post = (["mean"], ["lower"], ["upper"])
    frame = pd.DataFrame(
        {
            "trials": _pick(data, ["trials", "n"], "trials"),
            "rate": _pick(data, ["rate", "raw_rate"], "the raw rate"),
            "lower": _pick(data, freq[0], "the frequentist lower bound"),
            "upper": _pick(data, freq[1], "the frequentist upper bound"),
            "pooled_mean": _pick(data, post[0], "the posterior mean"),
            "pooled_lower": _pick(data, post[1], "the posterior lower bound"),
            "pooled_upper": _pick(data, post[2], "the posterior upper bound"),
        },
        index=data.index,
    )
    _add_read_columns(frame, data)
    return frame, overall


def _add_read_columns(frame: pd.DataFrame, source: pd.DataFrame) -> None:
    """Copy ``read``, ``read_lower``, ``read_upper`` (which interval to read) when ``source`` has them."""
    if {"read", "read_lower", "read_upper"} <= set(source.columns):
        for col in ("read", "read_lower", "read_upper"):
            frame[col] = source[col].to_numpy()


def forest(
    data: Any,
    *,
    level: float = 0.95,
    overall: Mapping[str, float] | None = None,
    ax: Any = None,
) -> Any:
    """Forest plot: each stratum's raw rate and own interval beside its pooled posterior.

    For every stratum (one row, labelled on the y axis) the raw rate with the
    stratum's interval (grey circle: for a Report, its ``lower``/``upper``, labelled
    by the report's guarantee, by default the interval that covers each stratum at
    every rate; Wilson for a Posterior or a side-by-side table) sits just above the
    pooled posterior mean with its credible interval (blue diamond, labelled "pooled
    posterior": it covers on average over strata); marker areas grow with the stratum's
    trials. A stratum whose row says to read its adaptive interval instead of the
    pooled one (``read == "adaptive"`` in a report or a posterior summary: its count
    is not clearly typical of the other strata) gets that interval too, in orange
    below the pooled one. A vertical line and band show the overall rate: the
    population-weighted posterior when population shares are known, else the
    unweighted rate of the test set.

    Parameters
    ----------
    data : Report, Posterior or pandas.DataFrame
        A :class:`~bayeseval.report.report.Report`, a fitted
        :class:`~bayeseval.models.posterior.Posterior` (Wilson intervals are
        computed from its counts), or a DataFrame indexed by stratum with columns
        ``trials``, ``rate``, ``lower``, ``upper``, ``pooled_mean``, ``pooled_lower``,
        ``pooled_upper`` (as in ``Report.table``), or the side-by-side layout
        ``trials``, ``raw_rate``, ``wilson_lower``, ``wilson_upper``, ``mean``,
        ``lower``, ``upper`` (posterior).
    level : float, default 0.95
        Interval level, used when ``data`` is a Posterior.
    overall : mapping, optional
        ``{"estimate": .., "lower": .., "upper": .., "label": ..}`` overriding the overall line.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 9], [40, 50, 60], random_seed=0, draws=500)
    >>> ax = forest(post)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['0', '1', '2']
    """
    frame, ov = _dispatch(_forest_frame, data)(data, level)
    if overall is not None:
        ov = dict(overall)
    ax = _axes(ax, (7, max(2.5, 0.45 * len(frame) + 1.2)))
    K = len(frame)
    y = np.arange(K)[::-1].astype(float)  # first stratum on top
    n = frame["trials"].to_numpy(dtype=float)
    nmax = max(float(np.nanmax(n)) if K else 1.0, 1.0)
    sizes = 15 + 135 * np.sqrt(np.nan_to_num(n) / nmax)
    if ov is not None:
        ax.axvspan(ov["lower"], ov["upper"], color=_POST, alpha=0.10, lw=0)
        ax.axvline(ov["estimate"], color=_POST, ls="--", lw=1,
                   label=f"{ov.get('label', 'overall')}: {ov['estimate']:.3f}")
    _interval_markers(ax, frame[["rate", "lower", "upper"]], y + 0.17, sizes, _RAW, "o",
                      frame.attrs.get("interval", "raw rate, Wilson interval"))
    _interval_markers(ax, frame[["pooled_mean", "pooled_lower", "pooled_upper"]], y - 0.17, sizes,
                      _POST, "D", "pooled posterior (covers on average over strata)")
    _read_markers(ax, frame, y - 0.36)
    _forest_axes(ax, frame.index, y, n)
    return ax


def _read_markers(ax: Any, frame: pd.DataFrame, y: np.ndarray) -> None:
    """The adaptive interval of the strata whose row says to read it (raw rate as the point)."""
    if "read" not in frame.columns:
        return
    rows = (frame["read"] == "adaptive").to_numpy()
    if not rows.any():
        return
    cols = frame.loc[rows, ["rate", "read_lower", "read_upper"]]
    _interval_markers(ax, cols, y[rows], np.full(int(rows.sum()), 18.0), _READ, "s",
                      "interval to read: adaptive (count atypical of the others)")


def _interval_markers(
    ax: Any, cols: pd.DataFrame, y: np.ndarray, sizes: np.ndarray, color: str, marker: str, label: str
) -> None:
    """One row of the forest: point (column 0) with its interval (columns 1 and 2)."""
    mid, lo, hi = (cols.iloc[:, j].to_numpy(dtype=float) for j in range(3))
    ax.errorbar(mid, y, xerr=np.vstack([mid - lo, hi - mid]).clip(min=0), fmt="none", ecolor=color,
                elinewidth=1.5, capsize=2, label="_interval")
    ax.scatter(mid, y, s=sizes, color=color, marker=marker, zorder=3, label=label)


def _forest_axes(ax: Any, index: pd.Index, y: np.ndarray, n: np.ndarray) -> None:
    """Stratum names, trial counts, x range, grid and legend of the forest plot."""
    ax.set_yticks(y)
    # stratum names are user text: shown as written, never parsed as mathtext ("$$" would raise)
    ax.set_yticklabels([f"{lab}" for lab in _labels(index)], parse_math=False)
    ax.set_ylim(-0.7, len(index) - 0.3)
    for yi, ni in zip(y, n, strict=True):
        ax.annotate(f"n={int(ni)}" if np.isfinite(ni) else "", (1.0, yi), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8, color=_RAW)
    ax.set_xlabel("rate")
    lo, hi = ax.get_xlim()
    ax.set_xlim(max(lo, -0.015 * (hi - max(lo, 0.0))), min(hi, 1.0 + 0.015 * hi))
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)


@functools.singledispatch
def _trace_frame(trace: Any) -> tuple[pd.DataFrame, float | None]:
    """The input of :func:`halfwidth_curve` as a DataFrame, plus the target it carries."""
    raise TypeError(
        f"trace must be a DataFrame, a simulation result or a Campaign, got {type(trace).__name__}"
    )


@_trace_frame.register
def _table_trace(trace: pd.DataFrame) -> tuple[pd.DataFrame, float | None]:
    return trace, None


@_when_loaded(_trace_frame, "bayeseval.campaign.simulation", "SimulationResult")
def _simulation_trace(result: Any) -> tuple[pd.DataFrame, float | None]:
    return result.trace, result.settings.get("target_halfwidth")


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
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import pandas as pd
    >>> tr = pd.DataFrame({"rule": ["a"] * 3 + ["b"] * 3, "labels": [0, 50, 100] * 2,
    ...                    "halfwidth": [0.2, 0.1, 0.07, 0.2, 0.12, 0.09]})
    >>> ax = halfwidth_curve(tr, target=0.08)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['a', 'b', 'target 0.08']
    """
    trace, carried = _dispatch(_trace_frame, trace)(trace)
    target = carried if target is None else target
    tr = _check_trace(trace)
    ax = _axes(ax)
    for i, rule in enumerate(pd.unique(tr["rule"])):
        sub = tr[tr["rule"] == rule]
        for kind in ("observed", "forecast"):
            part = sub[sub["kind"] == kind]
            if not part.empty:
                label = str(rule) if kind == "observed" else f"{rule} (forecast)"
                style = "-" if kind == "observed" else "--"
                _halfwidth_line(ax, part, band, style, _COLORS[i % len(_COLORS)], label)
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


def _halfwidth_line(ax: Any, part: pd.DataFrame, band: tuple[float, float], style: str, color: str,
                    label: str) -> None:
    """One rule's line: the median over repeats with a quantile band, or the single run."""
    if "repeat" in part.columns and part["repeat"].nunique() > 1:
        # each run is a step function of labels, held at its last value after it
        # stops; the median and the band are taken across runs on the common grid
        wide = part.pivot_table(index="labels", columns="repeat", values="halfwidth",
                                aggfunc="last").sort_index().ffill()
        grid = wide.index.to_numpy(dtype=float)
        vals = wide.to_numpy(dtype=float)
        ax.plot(grid, np.nanmedian(vals, axis=1), style, color=color, lw=1.8, label=label)
        lo = np.nanquantile(vals, band[0], axis=1)
        hi = np.nanquantile(vals, band[1], axis=1)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.15, lw=0)
    else:
        med = part.groupby("labels")["halfwidth"].median()
        ax.plot(med.index, med.to_numpy(), style, color=color, lw=1.8, label=label)


@_when_loaded(_trace_frame, "bayeseval.campaign.campaign", "Campaign")
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
    need = int(np.nansum(np.asarray(campaign.forecast(), dtype=float)))
    if target is not None and need > 0 and np.isfinite(hw_now):
        rows += [("forecast", used, hw_now), ("forecast", used + need, target)]
    frame = pd.DataFrame(rows, columns=["kind", "labels", "halfwidth"])
    frame = frame.drop_duplicates(subset=["kind", "labels"], keep="last")
    frame["rule"] = getattr(campaign, "_rule_name", None) or "campaign"
    return frame, target


#: strata drawn in colour and named in the legend of :func:`labels_by_round` (the rest in grey)
LABELS_NAMED = 10


def labels_by_round(progress: pd.DataFrame, *, ax: Any = None) -> Any:
    """Cumulative labels per stratum against the round: one step line per stratum.

    With more than ``LABELS_NAMED`` strata, the ones with the most labels are drawn in
    colour and named in the legend, the others in grey.

    Parameters
    ----------
    progress : pandas.DataFrame
        :func:`bayeseval.campaign.report.progress_by_round` of a campaign:
        strata as rows, cumulative labels per round as columns.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"round 1": [4, 4], "round 2": [12, 4]}, index=["a", "b"])
    >>> ax = labels_by_round(frame)
    >>> [line.get_ydata().tolist() for line in ax.get_lines()]  # from 0 labels before round 1
    [[0, 4, 12], [0, 4, 4]]
    """
    from matplotlib.ticker import MaxNLocator

    ax = _axes(ax)
    rounds = np.arange(0, progress.shape[1] + 1)  # round r spans (r - 1, r]
    final = progress.iloc[:, -1]
    named = set(final.sort_values(ascending=False, kind="stable").index[:LABELS_NAMED])
    for name, row in progress.iterrows():
        if name in named:
            ax.step(rounds, np.r_[0, row.to_numpy()], where="pre", lw=1.6, label=f"{name} ({int(row.iloc[-1])})")
        else:
            ax.step(rounds, np.r_[0, row.to_numpy()], where="pre", lw=0.8, color="0.75", zorder=1)
    ax.set_xlabel("round")
    ax.set_ylabel("labels per stratum (cumulative)")
    ax.set_xlim(0, rounds[-1])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    title = "stratum (labels)" if len(progress) <= LABELS_NAMED else f"top {LABELS_NAMED} of {len(progress)} strata"
    ax.legend(title=title, fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def allocation(
    data: pd.DataFrame | Mapping[str, Any] | None = None,
    *,
    total: int | None = None,
    weights: Any = None,
    rates: Any = None,
    minimum: Any = None,
    ax: Any = None,
) -> Any:
    """Grouped bars of per-stratum counts under several allocation rules.

    Parameters
    ----------
    data : DataFrame or mapping of rule name to Series, optional
        Counts per stratum (index) for each rule (columns). When omitted, the
        rules ``proportional``, ``optimal`` and (with ``minimum``)
        ``optimal + minimum`` are computed with :func:`bayeseval.plan.allocation.allocate`
        from ``total``, ``weights``, ``rates`` and ``minimum``.
    total : int, optional
        Labels to allocate (see :func:`~bayeseval.plan.allocation.allocate`), used when ``data`` is None.
    weights : mapping or sequence of float, optional
        Population shares of the strata, used when ``data`` is None.
    rates : mapping or sequence of float, optional
        Planning rates of the strata (optimal allocation), used when ``data`` is None.
    minimum : int or mapping, optional
        Minimum labels per stratum of the third rule, used when ``data`` is None.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> ax = allocation(total=500, weights={"a": 0.8, "b": 0.2}, rates={"a": 0.05, "b": 0.3})
    >>> [round(p.get_height()) for p in ax.patches]
    [400, 100, 328, 172]
    """
    if data is None:
        if total is None or weights is None:
            raise ValueError(
                f"give data, or total and weights (and rates) to compute allocations, got "
                f"total={total!r}, weights={weights!r}"
            )
        frame = pd.DataFrame(
            {
                "proportional": allocate(total, weights, rates, method="proportional"),
                "optimal": allocate(total, weights, rates, method="optimal"),
            }
        )
        if minimum is not None:
            frame["optimal + minimum"] = allocate(total, weights, rates, method="optimal",
                                                  minimum=minimum)
    else:
        frame = pd.DataFrame(dict(data)) if not isinstance(data, pd.DataFrame) else data
    ax = _axes(ax, (max(5, 0.9 * len(frame) + 3), 4))
    K, R = frame.shape
    x = np.arange(K)
    width = 0.8 / max(R, 1)
    for j, rule in enumerate(frame.columns):
        bars = ax.bar(x + (j - (R - 1) / 2) * width, frame[rule].to_numpy(dtype=float), width,
                      label=str(rule), color=_COLORS[j % len(_COLORS)])
        if K <= 12:
            ax.bar_label(bars, fmt="%d", fontsize=7, padding=1)
    ax.set_xticks(x)
    names = _labels(frame.index)
    crowded = K * max((len(s) for s in names), default=0) > 60
    ax.set_xticklabels(names, rotation=25 if crowded else 0, ha="right" if crowded else "center")
    ax.set_ylabel("labels per stratum")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax


def sample_size_curve(
    rates: Sequence[float] = (0.5, 0.7, 0.8, 0.9, 0.95),
    *,
    halfwidths: Sequence[float] | None = None,
    level: float = 0.95,
    method: str = "normal",
    ax: Any = None,
) -> Any:
    """Trials needed against the target half-width, one curve per planning rate (log y axis).

    Parameters
    ----------
    rates : sequence of float
        Planning rates (one line each).
    halfwidths : sequence of float, optional
        Half-widths on the x axis; default 0.01 to 0.15.
    level : float, default 0.95
        Level of the planned interval.
    method : {"normal", "wilson", "clopper_pearson"}
        Passed to :func:`bayeseval.plan.sizes.sample_size`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> ax = sample_size_curve([0.7], halfwidths=[0.05, 0.1])
    >>> ax.lines[0].get_ydata().tolist()  # ceil(1.96**2 * 0.7 * 0.3 / e**2) at e = 0.05, 0.1
    [323.0, 81.0]
    """
    hw = np.asarray(halfwidths if halfwidths is not None else np.linspace(0.01, 0.15, 57), dtype=float)
    ax = _axes(ax)
    for i, r in enumerate(rates):
        n = [float(sample_size(halfwidth=float(e), rate=float(r), level=level, method=method)) for e in hw]
        ax.plot(hw, n, color=_COLORS[i % len(_COLORS)], lw=1.8, label=f"rate {r:g}")
    ax.set_yscale("log")
    ax.set_xlabel(f"target half-width ({100 * level:g}% interval)")
    ax.set_ylabel("trials needed")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax


@functools.singledispatch
def _ppc_frame(data: Any, level: float, random_seed: Any) -> tuple[pd.DataFrame, np.ndarray | None, float]:
    """The input of :func:`ppc` as columns observed, lower, upper (rates), the strata a check
    flagged (or None) and the level."""
    raise TypeError(f"data must be a Posterior, a PPCResult or a DataFrame, got {type(data).__name__}")


@_ppc_frame.register
def _table_ppc_frame(data: pd.DataFrame, level: float, random_seed: Any) -> tuple[pd.DataFrame, np.ndarray | None, float]:
    if {"successes", "trials", "pred_lower", "pred_upper"} <= set(data.columns):
        # predictive interval of the count: divide by trials to compare rates
        n = data["trials"].to_numpy(dtype=float)
        n = np.where(n > 0, n, np.nan)
        columns = {
            "observed": data["successes"].to_numpy(dtype=float) / n,
            "lower": data["pred_lower"].to_numpy(dtype=float) / n,
            "upper": data["pred_upper"].to_numpy(dtype=float) / n,
        }
    else:
        columns = {
            "observed": _pick(data, ["observed", "rate", "raw_rate"], "the observed rate"),
            "lower": _pick(data, ["lower", "rep_lower"], "the predictive lower bound"),
            "upper": _pick(data, ["upper", "rep_upper"], "the predictive upper bound"),
        }
    flag = data["flag"].fillna(False).to_numpy(dtype=bool) if "flag" in data.columns else None
    return pd.DataFrame(columns, index=data.index), flag, level


@_when_loaded(_ppc_frame, "bayeseval.checks.predictive", "PPCResult")
def _check_ppc_frame(result: Any, level: float, random_seed: Any) -> tuple[pd.DataFrame, np.ndarray | None, float]:
    return _table_ppc_frame(result.table, float(result.level), random_seed)


@_when_loaded(_ppc_frame, "bayeseval.models.posterior", "Posterior")
def _posterior_ppc_frame(post: Any, level: float, random_seed: Any) -> tuple[pd.DataFrame, np.ndarray | None, float]:
    rep = np.asarray(post.sample_predictive(random_seed=random_seed), dtype=float)
    n = post.counts.trials.to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rr = rep / np.where(n > 0, n, np.nan)[None, :]
    a = (1 - level) / 2
    frame = pd.DataFrame(
        {
            "observed": post.counts.rates.to_numpy(),
            "lower": np.nanquantile(rr, a, axis=0) if rr.size else [],
            "upper": np.nanquantile(rr, 1 - a, axis=0) if rr.size else [],
        },
        index=post.counts.strata,
    )
    return frame, None, level


def ppc(
    data: Any,
    *,
    level: float = 0.95,
    random_seed: int | None = None,
    ax: Any = None,
) -> Any:
    """Posterior predictive check: each stratum's observed rate against its predictive interval.

    Parameters
    ----------
    data : PPCResult, Posterior or pandas.DataFrame
        The result of :func:`bayeseval.checks.predictive.posterior_predictive_check`
        (its per-stratum predictive intervals of the counts, divided by the
        trials; strata it flags are drawn in red), a fitted Posterior (plain
        replicated counts are drawn with ``sample_predictive``; strata outside
        their interval are drawn in red), or a DataFrame indexed by stratum with
        either ``successes``, ``trials``, ``pred_lower``, ``pred_upper`` (counts)
        or ``observed``, ``lower``, ``upper`` (rates), and optionally ``flag``.
    level : float, default 0.95
        Level of the predictive interval when it is computed here.
    random_seed : int, optional
        Seed for the replicated counts.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 30], [40, 50, 60], random_seed=0, draws=1000)
    >>> ax = ppc(post, random_seed=1)
    >>> len(ax.get_xticklabels())
    3
    """
    frame, flag, level = _dispatch(_ppc_frame, data)(data, level, random_seed)
    ax = _axes(ax, (max(5, 0.7 * len(frame) + 2), 4))
    x = np.arange(len(frame))
    mid = (frame["lower"] + frame["upper"]) / 2
    ax.errorbar(x, mid, yerr=np.vstack([mid - frame["lower"], frame["upper"] - mid]), fmt="none",
                ecolor=_POST, elinewidth=6, alpha=0.35, label=f"{100 * level:g}% predictive interval")
    _ppc_points(ax, x, frame, flag)
    ax.set_xticks(x)
    labels = _labels(frame.index)
    # tilt the names when there are many strata or the names are long enough to collide
    tilt = len(frame) > 6 or max((len(str(t)) for t in labels), default=0) * len(frame) > 60
    ax.set_xticklabels(labels, rotation=30 if tilt else 0, ha="right" if tilt else "center",
                       parse_math=False)
    ax.set_ylabel("rate")
    ax.set_title("posterior predictive check", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax


def _ppc_points(ax: Any, x: np.ndarray, frame: pd.DataFrame, flag: np.ndarray | None) -> None:
    """Observed rates: red where flagged (or outside without a check), orange outside only."""
    obs = frame["observed"].to_numpy(dtype=float)
    outside = (obs < frame["lower"].to_numpy()) | (obs > frame["upper"].to_numpy())
    if flag is None:
        flag = outside
        flag_label = "outside the interval"
    else:
        flag_label = "flagged by the check"
    # outside the interval but not flagged (the check corrects for testing every stratum)
    mild = outside & ~flag
    colors = np.where(flag, _FLAG, np.where(mild, _MILD, "black"))
    ax.scatter(x, obs, c=list(colors), zorder=3, s=30, label="_observed")
    ax.scatter([], [], c="black", s=30, label="observed rate")  # legend proxy: plain colour
    if flag.any():
        ax.scatter([], [], c=_FLAG, s=30, label=flag_label)
    if mild.any():
        ax.scatter([], [], c=_MILD, s=30, label="outside the interval, not flagged")


def coverage(
    results: pd.DataFrame,
    *,
    nominal: float = 0.95,
    by: str | None = None,
    ax: Any = None,
) -> Any:
    """Coverage of interval methods in a calibration study, with the nominal level.

    Parameters
    ----------
    results : pandas.DataFrame
        Columns ``method`` and ``coverage``; optional ``lower``/``upper``
        (Monte Carlo interval of the coverage, drawn as error bars), ``mc_se``
        (Monte Carlo SE: bars of +/- 1.96 SE) or ``n_sims`` (a binomial 95% band
        is computed), and a grouping column ``by``. The output of
        :func:`bayeseval.checks.calibration.calibration_study` plots as it is (grouped by
        ``configuration``).
    nominal : float, default 0.95
        The nominal level, drawn as a dashed horizontal line.
    by : str, optional
        Column that groups the points (one colour per value); defaults to
        ``"configuration"`` when that column exists with several values.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import pandas as pd
    >>> res = pd.DataFrame({"method": ["wald", "wilson"], "coverage": [0.91, 0.95]})
    >>> ax = coverage(res)
    >>> float(ax.lines[-1].get_ydata()[0])
    0.95
    """
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a DataFrame, got {type(results).__name__}")
    for col in ("method", "coverage"):
        if col not in results.columns:
            raise ValueError(f"results needs a column {col!r}; it has {list(results.columns)}")
    if by is None and "configuration" in results.columns and results["configuration"].nunique() > 1:
        by = "configuration"
    ax = _axes(ax)
    methods = list(pd.unique(results["method"]))
    x_of = {m: i for i, m in enumerate(methods)}
    groups = [(None, results)] if by is None else list(results.groupby(by, sort=False))
    G = len(groups)
    width = 0.6 / max(G, 1)
    for j, (key, part) in enumerate(groups):
        x = np.array([x_of[m] for m in part["method"]], dtype=float) + (j - (G - 1) / 2) * width
        cov = part["coverage"].to_numpy(dtype=float)
        err = _coverage_errors(part, cov)
        color = _COLORS[j % len(_COLORS)]
        ax.errorbar(x, cov, yerr=err, fmt="o", color=color, capsize=3,
                    label=str(key) if key is not None else "coverage")
    ax.set_xticks(np.arange(len(methods)))
    ax.set_xticklabels([str(m) for m in methods])
    ax.set_ylabel("coverage")
    ax.grid(axis="y", alpha=0.3)
    ax.axhline(nominal, color="black", ls="--", lw=1, label=f"nominal {nominal:g}")
    ax.legend(fontsize=8, frameon=False)
    return ax


def _coverage_errors(part: pd.DataFrame, cov: np.ndarray) -> np.ndarray | None:
    """Error bars of the coverage: given bounds, +/- 1.96 Monte Carlo SE, or none; kept in [0, 1]."""
    if {"lower", "upper"} <= set(part.columns):
        err = np.vstack([cov - part["lower"].to_numpy(float), part["upper"].to_numpy(float) - cov])
    elif "mc_se" in part.columns:
        se = part["mc_se"].to_numpy(float)
        err = np.vstack([1.96 * se, 1.96 * se])
    elif "n_sims" in part.columns:
        se = np.sqrt(cov * (1 - cov) / part["n_sims"].to_numpy(float))
        err = np.vstack([1.96 * se, 1.96 * se])
    else:
        return None
    return np.vstack([np.minimum(err[0], cov), np.minimum(err[1], 1 - cov)])


# -- one entry point for result objects ------------------------------------------------------
@functools.singledispatch
def _plot(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    raise TypeError(
        "plot() draws a Report, Posterior, PPCResult, SimulationResult, Campaign or "
        f"StratifiedRisk (or a type registered with plot.register), got {type(result).__name__}"
    )


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
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when omitted.
    **kwargs
        Passed to the plotting function of the type (e.g. ``level`` for a Posterior).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

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
    return _dispatch(_plot, result)(result, ax=ax, **kwargs)


plot.register = _plot.register  # type: ignore[attr-defined]


@_when_loaded(_plot, "bayeseval.report.report", "Report")
def _plot_report(report: Any, ax: Any = None, kind: str = "forest", **kwargs: Any) -> Any:
    if kind == "forest":
        return forest(report, ax=ax, **kwargs)
    if kind == "ppc":
        if report.posterior is None:
            raise ValueError("kind='ppc' needs the pooled posterior, which was not fitted")
        return ppc(report.posterior, ax=ax, **kwargs)
    raise ValueError(f"kind must be 'forest' or 'ppc', got {kind!r}")


@_when_loaded(_plot, "bayeseval.models.posterior", "Posterior")
def _plot_posterior(post: Any, ax: Any = None, **kwargs: Any) -> Any:
    return forest(post, ax=ax, **kwargs)


@_when_loaded(_plot, "bayeseval.checks.predictive", "PPCResult")
def _plot_ppc_result(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    return ppc(result, ax=ax, **kwargs)


@_when_loaded(_plot, "bayeseval.campaign.simulation", "SimulationResult")
def _plot_simulation(result: Any, ax: Any = None, **kwargs: Any) -> Any:
    return halfwidth_curve(result, ax=ax, **kwargs)


@_when_loaded(_plot, "bayeseval.campaign.campaign", "Campaign")
def _plot_campaign(campaign: Any, ax: Any = None, **kwargs: Any) -> Any:
    return halfwidth_curve(campaign, ax=ax, **kwargs)


@_when_loaded(_plot, "bayeseval.estimate.stratified", "StratifiedRisk")
def _plot_stratified(risk: Any, ax: Any = None) -> Any:
    """Each stratum's rate and interval (area ~ population share) with the population estimate."""
    table = risk.table
    ax = _axes(ax, (7, max(2.5, 0.4 * len(table) + 1.2)))
    y = np.arange(len(table))[::-1].astype(float)
    w = table["weight"].to_numpy(dtype=float)
    sizes = 15 + 135 * np.sqrt(np.nan_to_num(w) / max(float(np.nanmax(w)) if len(w) else 1.0, 1e-12))
    ax.axvspan(risk.ci[0], risk.ci[1], color=_POST, alpha=0.10, lw=0)
    ax.axvline(risk.estimate, color=_POST, ls="--", lw=1, label=f"population estimate: {risk.estimate:.3f}")
    _interval_markers(ax, table[["rate", "lower", "upper"]], y, sizes, _RAW, "o",
                      f"stratum rate, {risk.method} interval (area ~ population share)")
    ax.set_yticks(y)
    ax.set_yticklabels(_labels(table.index), parse_math=False)
    ax.set_xlabel("rate")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1, fontsize=8, frameon=False)
    return ax


# -- fairness audits ---------------------------------------------------------------------------
def _disparity_rows(result: Any, measure: str, metrics: Any) -> pd.DataFrame:
    from bayeseval._api.results import Result

    # an Audit (bayeseval.fairness.audits), recognised without importing the audit machinery
    if not (isinstance(result, Result) and isinstance(getattr(result, "disparities", None), pd.DataFrame)):
        raise TypeError(f"result must be an Audit from bayeseval.fairness.audits.audit, got {type(result).__name__}")
    if measure not in ("difference", "ratio"):
        raise ValueError(f"measure must be 'difference' or 'ratio', got {measure!r}")
    table = result.disparities
    wanted = list(pd.unique(table["metric"])) if metrics is None else (
        [metrics] if isinstance(metrics, str) else list(metrics))
    unknown = [m for m in wanted if m not in set(table["metric"])]
    if unknown:
        raise ValueError(f"metrics {unknown!r} are not in the audit; it has {list(pd.unique(table['metric']))}")
    keep = table["metric"].isin(wanted) & table["measure"].isin(
        [measure, "max-min gap"] if measure == "difference" else [measure])
    return table[keep].reset_index(drop=True)


def disparities(
    result: Any, *, measure: str = "difference", metrics: Any = None, ax: Any = None
) -> Any:
    """Forest plot of an audit's disparities: each group against the reference.

    For each metric and group, the frequentist interval (Newcombe's for differences,
    Katz's for ratios; filled marker) and, just below it, the posterior interval of
    the pooled model (grey). A group without data has no measurement: only its pooled
    *prediction* is drawn, dashed with a hollow marker and labelled "predicted, no
    data". With ``measure="difference"`` each metric's max-min gap is drawn too (labelled
    with the groups it is taken over when the audit's ``min_trials`` left some out, and
    "not measured", with nothing drawn, when fewer than two groups are left), and
    the tolerance (when the audit has one) as dotted lines at +- tolerance.

    Parameters
    ----------
    result : Audit
        The output of :func:`bayeseval.fairness.audits.audit`.
    measure : {"difference", "ratio"}
        Which disparity to draw.
    metrics : str or list of str, optional
        Metrics to draw (default: all in the audit).
    ax : matplotlib Axes, optional
        Axes to draw on (a new figure when omitted).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.fairness.audits import audit
    >>> df = pd.DataFrame({"y": [1, 0] * 120, "p": [1, 0, 0, 0] * 60,
    ...                    "g": ["a"] * 160 + ["b"] * 80})
    >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", random_seed=0)
    >>> ax = disparities(res)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['tpr: b - a', 'tpr: max-min gap']
    """
    rows = _disparity_rows(result, measure, metrics)
    ax = _axes(ax, figsize=(7, max(2.5, 0.45 * len(rows) + 1)))
    y = np.arange(len(rows))[::-1].astype(float)
    sep = " / " if measure == "ratio" else " - "
    labels = []
    for yi, (_, row) in zip(y, rows.iterrows(), strict=True):
        gap = row["measure"] == "max-min gap"
        gap_of = "" if row["group"] == "all measured" else f", {row['group']}"  # min_trials
        name = f"{row['metric']}: " + (f"max-min gap{gap_of}" if gap else f"{row['group']}{sep}{row['reference']}")
        if row["predicted"]:
            ax.plot([row["posterior_lower"], row["posterior_upper"]], [yi, yi], color=_POST, ls="--", lw=1.5)
            ax.plot(row["posterior_mean"], yi, "o", mfc="none", color=_POST)
            name += " (predicted, no data)"
        elif gap and not np.isfinite(row["estimate"]):
            name += " (not measured)"
        else:
            ax.plot([row["lower"], row["upper"]], [yi, yi], color=_FLAG if gap else _RAW, lw=2)
            ax.plot(row["estimate"], yi, "o", color=_FLAG if gap else _RAW)
            ax.plot([row["posterior_lower"], row["posterior_upper"]], [yi - 0.25] * 2, color="#999999", lw=1)
        labels.append(name)
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    centre = 1.0 if measure == "ratio" else 0.0
    ax.axvline(centre, color="black", lw=0.8)
    if measure == "difference" and result.tolerance is not None:
        for t in (-result.tolerance, result.tolerance):
            ax.axvline(t, color="black", ls=":", lw=1)
    if measure == "ratio":
        ax.set_xscale("log")
    ax.set_xlabel(f"{measure} ({result.level:.0%} intervals; grey: pooled posterior)")
    return ax


__all__.append("disparities")


def disparities_png(result: Any, *, max_rows: int = 80, dpi: int = 90) -> bytes | None:
    """The audit's forest plot (:func:`disparities`) as PNG bytes, for self-contained reports.

    Parameters
    ----------
    result : bayeseval.fairness.audits.Audit
        The audit.
    max_rows : int
        Above this many plotted rows (differences and gaps) there is no picture: None.
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    bytes or None
        The PNG file's bytes, or None when the plot would have more than ``max_rows`` rows.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.fairness.audits import audit
    >>> df = pd.DataFrame({"y": [1, 0] * 40, "p": [1, 0] * 40, "g": ["a"] * 40 + ["b"] * 40})
    >>> disparities_png(audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr",
    ...                       random_seed=0))[:4]
    b'\\x89PNG'
    """
    import io

    from matplotlib.figure import Figure  # deferred: matplotlib only when drawing

    rows = int((result.disparities["measure"] != "ratio").sum())
    if rows > max_rows:
        return None
    fig = Figure(figsize=(7, max(2.5, 0.45 * rows + 1)))
    disparities(result, ax=fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


__all__.append("disparities_png")
