"""Plots of frequentist estimates: the error-reject curve of a classifier's accepted rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.plots.base import axes

__all__ = ["error_reject"]


@fill_doc()
def error_reject(curve: pd.DataFrame, ax: Any = None) -> Any:
    """Plot the error of accepted rows against the reject rate.

    Parameters
    ----------
    curve : pandas.DataFrame
        Output of :func:`bayeseval.estimate.classic.error_reject_curve`.
    {ax}

    {error_reject_returned}

    Raises
    ------
    TypeError
        ``curve`` is not a DataFrame with the columns of an error-reject curve.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from bayeseval.estimate.classic import error_reject_curve
    >>> ax = error_reject(error_reject_curve([[0.9, 0.1], [0.6, 0.4]], [0, 1]), ax=Figure().subplots())
    >>> ax.get_xlabel()
    'reject rate'
    """
    need = {"reject_rate", "error_of_accepted", "estimated_error_of_accepted"}
    if not isinstance(curve, pd.DataFrame) or not need <= set(curve.columns):
        raise TypeError(f"curve must be the DataFrame returned by error_reject_curve, got {type(curve).__name__}")
    ax = axes(ax, figsize=(6.4, 4.8))
    c = curve.sort_values("reject_rate")
    ax.plot(c["reject_rate"], c["estimated_error_of_accepted"], "-", label="from reject curve (no labels)")
    if c["error_of_accepted"].notna().any():
        ax.plot(c["reject_rate"], c["error_of_accepted"], "o-", ms=3, label="counted")
    ax.set_xlabel("reject rate")
    ax.set_ylabel("error rate of accepted rows")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend()
    return ax
