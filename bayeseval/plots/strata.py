"""Per-stratum intervals: the forest plot of a report, a posterior or a table of rates."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.plots.base import (
    POST,
    RAW,
    READ,
    axes,
    dispatch,
    interval_markers,
    overall_band,
    pick_column,
    tick_labels,
    when_loaded,
)

__all__ = ["forest"]


@functools.singledispatch
def _forest_frame(data: Any, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The input of :func:`forest` as columns trials, rate, lower, upper, pooled_mean,
    pooled_lower, pooled_upper (indexed by stratum), plus the overall rate if known; the
    legend label of lower/upper in ``frame.attrs["interval"]``."""
    raise TypeError(f"data must be a Report, a Posterior or a DataFrame, got {type(data).__name__}")


@when_loaded(_forest_frame, "bayeseval.report.report", "Report")
def _report_forest_frame(report: Any, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    ov = report.overall
    labels = {
        "posterior_weighted": "population-weighted (pooled)",
        "reweighted": "population-weighted",
        "unweighted": "overall (test-set composition)",
    }
    overall = next(
        (
            overall_band(*ov.loc[est, ["estimate", "lower", "upper"]], label)
            for est, label in labels.items()
            if est in ov.index
        ),
        None,
    )
    frame, _ = _table_forest_frame(report.table, level)
    frame.attrs["interval"] = _REPORT_INTERVAL.get(report.guarantee, "raw rate, interval")
    if "n_units" in report.table.columns:  # counted by unit: the units' interval, sizes in units
        frame.attrs["interval"] = (
            "raw rate, interval covering each stratum (its units)"
            if report.posterior is None
            else "raw rate, pooled interval over units (average coverage)"  # guarantee="average"
        )
        frame.attrs["sizes"] = report.table["n_units"].to_numpy(dtype=float)
        frame.attrs["size_unit"] = "units"
    return frame, overall


# the legend of a report's own interval, per guarantee
_REPORT_INTERVAL = {
    "stratum": "raw rate, interval covering each stratum (adaptive)",
    "average": "raw rate, interval read (pooled or adaptive: average coverage)",
}


@when_loaded(_forest_frame, "bayeseval.models.posterior", "Posterior")
def _posterior_forest_frame(post: Any, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    summ = post.summary(level=level, read=True)
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
        overall = overall_band(
            draws.mean(), np.quantile(draws, a), np.quantile(draws, 1 - a), "population-weighted (pooled)"
        )
    return frame, overall


@_forest_frame.register
def _table_forest_frame(data: pd.DataFrame, level: float) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    overall = None
    if "weighted overall" in data.index and "pooled_mean" in data.columns:
        # compare_frequentist's last row: the population-weighted rate
        row = data.loc["weighted overall"]
        overall = overall_band(
            row["pooled_mean"],
            row["pooled_lower"],
            row["pooled_upper"],
            "population-weighted (pooled)",
        )
        data = data.drop(index="weighted overall")
    if "pooled_mean" in data.columns or "posterior_mean" in data.columns:
        # Report.table layout: lower/upper are the stratum's own interval
        freq = (["lower", "wilson_lower", "freq_lower"], ["upper", "wilson_upper", "freq_upper"])
        post = (
            ["pooled_mean", "posterior_mean"],
            ["pooled_lower", "posterior_lower"],
            ["pooled_upper", "posterior_upper"],
        )
    else:
        # side-by-side layout (checks.compare_frequentist): wilson_* frequentist, mean/lower/upper
        # the posterior
        freq = (["wilson_lower", "freq_lower"], ["wilson_upper", "freq_upper"])
        post = (["mean"], ["lower"], ["upper"])
    frame = pd.DataFrame(
        {
            "trials": pick_column(data, ["trials", "n"], "trials"),
            "rate": pick_column(data, ["rate", "raw_rate"], "the raw rate"),
            "lower": pick_column(data, freq[0], "the frequentist lower bound"),
            "upper": pick_column(data, freq[1], "the frequentist upper bound"),
            "pooled_mean": pick_column(data, post[0], "the posterior mean"),
            "pooled_lower": pick_column(data, post[1], "the posterior lower bound"),
            "pooled_upper": pick_column(data, post[2], "the posterior upper bound"),
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


@fill_doc()
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
    {ax}

    {axes_returned}

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 9], [40, 50, 60], random_seed=0, draws=500)
    >>> ax = forest(post)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['0', '1', '2']
    """
    frame, ov = dispatch(_forest_frame, data)(data, level)
    if overall is not None:
        ov = dict(overall)
    ax = axes(ax, (7, max(2.5, 0.45 * len(frame) + 1.2)))
    K = len(frame)
    y = np.arange(K)[::-1].astype(float)  # first stratum on top
    n = frame["trials"].to_numpy(dtype=float)
    nmax = max(float(np.nanmax(n)) if K else 1.0, 1.0)
    sizes = 15 + 135 * np.sqrt(np.nan_to_num(n) / nmax)
    if ov is not None:
        ax.axvspan(ov["lower"], ov["upper"], color=POST, alpha=0.10, lw=0)
        ax.axvline(
            ov["estimate"], color=POST, ls="--", lw=1, label=f"{ov.get('label', 'overall')}: {ov['estimate']:.3f}"
        )
    interval_markers(
        ax,
        frame[["rate", "lower", "upper"]],
        y + 0.17,
        sizes,
        RAW,
        "o",
        frame.attrs.get("interval", "raw rate, Wilson interval"),
    )
    if np.isfinite(frame["pooled_mean"].to_numpy(dtype=float)).any():
        interval_markers(
            ax,
            frame[["pooled_mean", "pooled_lower", "pooled_upper"]],
            y - 0.17,
            sizes,
            POST,
            "D",
            "pooled posterior (covers on average over strata)",
        )
    _read_markers(ax, frame, y - 0.36)
    _forest_axes(ax, frame.index, y, frame.attrs.get("sizes", n), frame.attrs.get("size_unit", ""))
    return ax


def _read_markers(ax: Any, frame: pd.DataFrame, y: np.ndarray) -> None:
    """The adaptive interval of the strata whose row says to read it (raw rate as the point)."""
    if "read" not in frame.columns:
        return
    rows = (frame["read"] == "adaptive").to_numpy()
    if not rows.any():
        return
    cols = frame.loc[rows, ["rate", "read_lower", "read_upper"]]
    interval_markers(
        ax,
        cols,
        y[rows],
        np.full(int(rows.sum()), 18.0),
        READ,
        "s",
        "interval to read: adaptive (count atypical of the others)",
    )


def _forest_axes(ax: Any, index: pd.Index, y: np.ndarray, n: np.ndarray, unit: str = "") -> None:
    """Stratum names, trial (or unit) counts, x range, grid and legend of the forest plot."""
    ax.set_yticks(y)
    # stratum names are user text: shown as written, never parsed as mathtext ("$$" would raise)
    ax.set_yticklabels([f"{lab}" for lab in tick_labels(index)], parse_math=False)
    ax.set_ylim(-0.7, len(index) - 0.3)
    for yi, ni in zip(y, n, strict=True):
        ax.annotate(
            (f"{int(ni)} {unit}" if unit else f"n={int(ni)}") if np.isfinite(ni) else "",
            (1.0, yi),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
            color=RAW,
        )
    ax.set_xlabel("rate")
    lo, hi = ax.get_xlim()
    ax.set_xlim(max(lo, -0.015 * (hi - max(lo, 0.0))), min(hi, 1.0 + 0.015 * hi))
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
