"""Model checks: observed rates against the posterior predictive interval, and the coverage of
interval methods in a calibration study."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.plots.base import (
    COLORS,
    FLAG,
    MILD,
    POST,
    axes,
    dispatch,
    pick_column,
    tick_labels,
    when_loaded,
)

__all__ = ["ppc", "coverage"]


@functools.singledispatch
def _ppc_frame(data: Any, level: float, random_seed: Any) -> tuple[pd.DataFrame, np.ndarray | None, float]:
    """The input of :func:`ppc` as columns observed, lower, upper (rates), the strata a check
    flagged (or None) and the level."""
    raise TypeError(f"data must be a Posterior, a PPCResult or a DataFrame, got {type(data).__name__}")


@_ppc_frame.register
def _table_ppc_frame(
    data: pd.DataFrame, level: float, random_seed: Any
) -> tuple[pd.DataFrame, np.ndarray | None, float]:
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
            "observed": pick_column(data, ["observed", "rate", "raw_rate"], "the observed rate"),
            "lower": pick_column(data, ["lower", "rep_lower"], "the predictive lower bound"),
            "upper": pick_column(data, ["upper", "rep_upper"], "the predictive upper bound"),
        }
    flag = data["flag"].fillna(False).to_numpy(dtype=bool) if "flag" in data.columns else None
    return pd.DataFrame(columns, index=data.index), flag, level


@when_loaded(_ppc_frame, "bayeseval.checks.predictive", "PPCResult")
def _check_ppc_frame(result: Any, level: float, random_seed: Any) -> tuple[pd.DataFrame, np.ndarray | None, float]:
    return _table_ppc_frame(result.table, float(result.level), random_seed)


@when_loaded(_ppc_frame, "bayeseval.models.posterior", "Posterior")
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


@fill_doc()
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
    {ax}

    {axes_returned}

    Examples
    --------
    >>> from bayeseval.models import fit_hierarchical
    >>> post = fit_hierarchical([2, 5, 30], [40, 50, 60], random_seed=0, draws=1000)
    >>> ax = ppc(post, random_seed=1)
    >>> len(ax.get_xticklabels())
    3
    """
    frame, flag, level = dispatch(_ppc_frame, data)(data, level, random_seed)
    ax = axes(ax, (max(5, 0.7 * len(frame) + 2), 4))
    x = np.arange(len(frame))
    mid = (frame["lower"] + frame["upper"]) / 2
    ax.errorbar(
        x,
        mid,
        yerr=np.vstack([mid - frame["lower"], frame["upper"] - mid]),
        fmt="none",
        ecolor=POST,
        elinewidth=6,
        alpha=0.35,
        label=f"{100 * level:g}% predictive interval",
    )
    _ppc_points(ax, x, frame, flag)
    ax.set_xticks(x)
    labels = tick_labels(frame.index)
    # tilt the names when there are many strata or the names are long enough to collide
    tilt = len(frame) > 6 or max((len(str(t)) for t in labels), default=0) * len(frame) > 60
    ax.set_xticklabels(labels, rotation=30 if tilt else 0, ha="right" if tilt else "center", parse_math=False)
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
    colors = np.where(flag, FLAG, np.where(mild, MILD, "black"))
    ax.scatter(x, obs, c=list(colors), zorder=3, s=30, label="_observed")
    ax.scatter([], [], c="black", s=30, label="observed rate")  # legend proxy: plain colour
    if flag.any():
        ax.scatter([], [], c=FLAG, s=30, label=flag_label)
    if mild.any():
        ax.scatter([], [], c=MILD, s=30, label="outside the interval, not flagged")


@fill_doc()
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
    {ax}

    {axes_returned}

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
    ax = axes(ax)
    methods = list(pd.unique(results["method"]))
    x_of = {m: i for i, m in enumerate(methods)}
    groups = [(None, results)] if by is None else list(results.groupby(by, sort=False))
    G = len(groups)
    width = 0.6 / max(G, 1)
    for j, (key, part) in enumerate(groups):
        x = np.array([x_of[m] for m in part["method"]], dtype=float) + (j - (G - 1) / 2) * width
        cov = part["coverage"].to_numpy(dtype=float)
        err = _coverage_errors(part, cov)
        color = COLORS[j % len(COLORS)]
        ax.errorbar(
            x, cov, yerr=err, fmt="o", color=color, capsize=3, label=str(key) if key is not None else "coverage"
        )
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
