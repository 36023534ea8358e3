"""Plans: per-stratum counts under several allocation rules, and trials needed against the
target half-width."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.plan.allocation import allocate
from bayeseval.plan.sizes import sample_size
from bayeseval.plots.base import (
    COLORS,
    axes,
    tick_labels,
)

__all__ = ["allocation", "sample_size_curve"]


@fill_doc()
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
    {ax}

    {axes_returned}

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
            frame["optimal + minimum"] = allocate(total, weights, rates, method="optimal", minimum=minimum)
    else:
        frame = pd.DataFrame(dict(data)) if not isinstance(data, pd.DataFrame) else data
    ax = axes(ax, (max(5, 0.9 * len(frame) + 3), 4))
    K, R = frame.shape
    x = np.arange(K)
    width = 0.8 / max(R, 1)
    for j, rule in enumerate(frame.columns):
        bars = ax.bar(
            x + (j - (R - 1) / 2) * width,
            frame[rule].to_numpy(dtype=float),
            width,
            label=str(rule),
            color=COLORS[j % len(COLORS)],
        )
        if K <= 12:
            ax.bar_label(bars, fmt="%d", fontsize=7, padding=1)
    ax.set_xticks(x)
    names = tick_labels(frame.index)
    crowded = K * max((len(s) for s in names), default=0) > 60
    ax.set_xticklabels(names, rotation=25 if crowded else 0, ha="right" if crowded else "center")
    ax.set_ylabel("labels per stratum")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax


@fill_doc()
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
    {ax}

    {axes_returned}

    Examples
    --------
    >>> ax = sample_size_curve([0.7], halfwidths=[0.05, 0.1])
    >>> ax.lines[0].get_ydata().tolist()  # ceil(1.96**2 * 0.7 * 0.3 / e**2) at e = 0.05, 0.1
    [323.0, 81.0]
    """
    hw = np.asarray(halfwidths if halfwidths is not None else np.linspace(0.01, 0.15, 57), dtype=float)
    ax = axes(ax)
    for i, r in enumerate(rates):
        n = [float(sample_size(halfwidth=float(e), rate=float(r), level=level, method=method)) for e in hw]
        ax.plot(hw, n, color=COLORS[i % len(COLORS)], lw=1.8, label=f"rate {r:g}")
    ax.set_yscale("log")
    ax.set_xlabel(f"target half-width ({100 * level:g}% interval)")
    ax.set_ylabel("trials needed")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return ax
