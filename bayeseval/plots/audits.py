"""Fairness audits: the forest plot of an audit's disparities, and the same as PNG bytes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.plots.base import (
    FLAG,
    POST,
    RAW,
    axes,
    figure_png,
)

__all__ = ["disparities", "disparities_png"]


# -- fairness audits ---------------------------------------------------------------------------
def _disparity_rows(result: Any, measure: str, metrics: Any) -> pd.DataFrame:
    from bayeseval._api.results import Result

    # an Audit (bayeseval.fairness.audits), recognised without importing the audit machinery
    if not (isinstance(result, Result) and isinstance(getattr(result, "disparities", None), pd.DataFrame)):
        raise TypeError(f"result must be an Audit from bayeseval.fairness.audits.audit, got {type(result).__name__}")
    if measure not in ("difference", "ratio"):
        raise ValueError(f"measure must be 'difference' or 'ratio', got {measure!r}")
    table = result.disparities
    wanted = (
        list(pd.unique(table["metric"]))
        if metrics is None
        else ([metrics] if isinstance(metrics, str) else list(metrics))
    )
    unknown = [m for m in wanted if m not in set(table["metric"])]
    if unknown:
        raise ValueError(f"metrics {unknown!r} are not in the audit; it has {list(pd.unique(table['metric']))}")
    keep = table["metric"].isin(wanted) & table["measure"].isin(
        [measure, "max-min gap"] if measure == "difference" else [measure]
    )
    return table[keep].reset_index(drop=True)


@fill_doc()
def disparities(result: Any, *, measure: str = "difference", metrics: Any = None, ax: Any = None) -> Any:
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
    {ax}

    {axes_returned}

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
    ax = axes(ax, figsize=(7, max(2.5, 0.45 * len(rows) + 1)))
    y = np.arange(len(rows))[::-1].astype(float)
    sep = " / " if measure == "ratio" else " - "
    labels = []
    for yi, (_, row) in zip(y, rows.iterrows(), strict=True):
        gap = row["measure"] == "max-min gap"
        gap_of = "" if row["group"] == "all measured" else f", {row['group']}"  # min_trials
        name = f"{row['metric']}: " + (f"max-min gap{gap_of}" if gap else f"{row['group']}{sep}{row['reference']}")
        if row["predicted"]:
            ax.plot([row["posterior_lower"], row["posterior_upper"]], [yi, yi], color=POST, ls="--", lw=1.5)
            ax.plot(row["posterior_mean"], yi, "o", mfc="none", color=POST)
            name += " (predicted, no data)"
        elif gap and not np.isfinite(row["estimate"]):
            name += " (not measured)"
        else:
            ax.plot([row["lower"], row["upper"]], [yi, yi], color=FLAG if gap else RAW, lw=2)
            ax.plot(row["estimate"], yi, "o", color=FLAG if gap else RAW)
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
    posterior = rows[["posterior_lower", "posterior_upper"]].notna().to_numpy().any()
    ax.set_xlabel(f"{measure} ({result.level:.0%} intervals{'; grey: pooled posterior' if posterior else ''})")
    return ax


def disparities_png(result: Any, *, max_rows: int = 80, dpi: int = 90) -> bytes | None:
    """The audit's forest plot (:func:`disparities`) as PNG bytes, for self-contained reports.

    Parameters
    ----------
    result : bayeseval.fairness.result.Audit
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
    rows = int((result.disparities["measure"] != "ratio").sum())
    if rows > max_rows:
        return None
    return figure_png(lambda ax: disparities(result, ax=ax), figsize=(7, max(2.5, 0.45 * rows + 1)), dpi=dpi)
