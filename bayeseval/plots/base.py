"""What every plot module shares: colours, new axes, stratum tick labels, interval markers and
the registry that dispatches on result types defined in modules this package does not import.

Inputs are dispatched on their type (:func:`functools.singledispatch`). The result types live
in modules that import more than the plots need, so a handler is registered when its type's
module is first loaded (an object of a type exists only once its module is), and importing
``bayeseval.plots`` imports none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval.counts.counts import stratum_labels

__all__ = [
    "RAW",
    "POST",
    "FLAG",
    "MILD",
    "READ",
    "COLORS",
    "axes",
    "tick_labels",
    "when_loaded",
    "dispatch",
    "overall_band",
    "pick_column",
    "interval_markers",
    "figure_png",
]


RAW = "#555555"
POST = "#1f77b4"
FLAG = "#d62728"
MILD = "#ff7f0e"
READ = "#e6730f"  # the adaptive interval a stratum's row says to read
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def axes(ax: Any, figsize: tuple[float, float] = (7, 4)) -> Any:
    """``ax``, or the axes of a new figure of ``figsize`` when ``ax`` is None."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def tick_labels(index: pd.Index) -> list[str]:
    """Stratum labels of ``index`` as tick label strings."""
    return stratum_labels(index)


# -- dispatch on result types, registered once the type's module is loaded ---------------------
#: (dispatcher, module, class name, handler) not yet registered
_PENDING: list[tuple[Any, str, str, Callable[..., Any]]] = []


def when_loaded(dispatcher: Any, module: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated handler for ``module.name`` once ``module`` is imported."""

    def decorate(handler: Callable[..., Any]) -> Callable[..., Any]:
        _PENDING.append((dispatcher, module, name, handler))
        return handler

    return decorate


def dispatch(dispatcher: Any, obj: Any) -> Callable[..., Any]:
    """The implementation of ``dispatcher`` for ``obj``'s type (pending types registered first)."""
    for item in list(_PENDING):
        dispatcher_, module, name, handler = item
        loaded = sys.modules.get(module)
        if loaded is not None:
            dispatcher_.register(getattr(loaded, name), handler)
            _PENDING.remove(item)
    return dispatcher.dispatch(type(obj))


def overall_band(estimate: float, lower: float, upper: float, label: str) -> dict[str, Any]:
    """The overall estimate and interval drawn as a band behind a forest."""
    return {"estimate": float(estimate), "lower": float(lower), "upper": float(upper), "label": label}


def pick_column(frame: pd.DataFrame, names: Sequence[str], what: str) -> pd.Series:
    """The first of the columns ``names`` that ``frame`` has, as floats (``what`` names it in errors)."""
    for name in names:
        if name in frame.columns:
            return frame[name].astype(float)
    raise ValueError(f"the table needs a column for {what} (one of {list(names)}); it has {list(frame.columns)}")


def interval_markers(
    ax: Any, cols: pd.DataFrame, y: np.ndarray, sizes: np.ndarray, color: str, marker: str, label: str
) -> None:
    """One row of the forest: point (column 0) with its interval (columns 1 and 2)."""
    mid, lo, hi = (cols.iloc[:, j].to_numpy(dtype=float) for j in range(3))
    ax.errorbar(
        mid,
        y,
        xerr=np.vstack([mid - lo, hi - mid]).clip(min=0),
        fmt="none",
        ecolor=color,
        elinewidth=1.5,
        capsize=2,
        label="_interval",
    )
    ax.scatter(mid, y, s=sizes, color=color, marker=marker, zorder=3, label=label)


def figure_png(draw: Callable[[Any], Any], *, figsize: tuple[float, float] = (7, 4), dpi: int = 100) -> bytes:
    """PNG bytes of a new figure drawn by ``draw(ax)``, for self-contained pages.

    The figure is a :class:`matplotlib.figure.Figure` made without pyplot: no backend is
    chosen, no window opens and nothing global changes.

    Examples
    --------
    >>> figure_png(lambda ax: ax.plot([0, 1], [0, 1]))[:4]
    b'\\x89PNG'
    """
    import io

    from matplotlib.figure import Figure  # deferred: matplotlib only when drawing

    fig = Figure(figsize=figsize)
    draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()
