"""Release gates: does a labelled test set hold enough evidence in every stratum?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import check_level, check_method, check_positive_int, check_probability
from bayeseval.counts import Counts, tabulate
from bayeseval.intervals import PROPORTION_METHODS, proportion_ci
from bayeseval.metrics import get_metric

__all__ = ["gate", "GateResult"]


@dataclass(frozen=True)
class GateResult:
    """Outcome of :func:`gate`.

    Parameters
    ----------
    passed : bool
        True when every stratum meets every criterion.
    table : pandas.DataFrame
        Per stratum: successes, trials, rate, lower, upper, halfwidth, the
        criteria and ``passed`` with a ``reason`` for the strata that fail.
    """

    passed: bool
    table: pd.DataFrame

    @property
    def failing(self) -> pd.DataFrame:
        """The rows of :attr:`table` that fail."""
        return self.table[~self.table["passed"]]

    def summary(self) -> str:
        """Plain-text verdict with the failing strata.

        Returns
        -------
        str
            ``PASSED: ...`` or ``FAILED: ...`` followed by the failing strata.
        """
        n = len(self.table)
        if self.passed:
            return f"PASSED: all {n} strata meet the gate."
        failing = self.failing
        cols = ["trials", "rate", "halfwidth", "reason"]
        return (
            f"FAILED: {len(failing)} of {n} strata miss the gate.\n"
            + failing[cols].to_string(float_format=lambda v: f"{v:.4f}")
        )


def gate(
    data: pd.DataFrame | Counts,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str = "error_rate",
    min_trials: int | None = None,
    max_halfwidth: float | None = None,
    level: float = 0.95,
    method: str = "wilson",
    pos_label: Any = None,
) -> GateResult:
    """Check per-stratum minimum trial counts and maximum interval half-widths.

    Every argument is checked before the data are counted; a bad one raises
    ``TypeError`` or ``ValueError`` naming it.

    Parameters
    ----------
    data : pandas.DataFrame or Counts
        Labelled predictions (with ``y_true``, ``y_pred``, ``strata``) or counts.
    y_true, y_pred : str, optional
        Columns with the true and predicted labels (rows only).
    strata : str or list of str, optional
        Stratum column(s) (rows only).
    metric : str, default "error_rate"
        Metric whose trials are counted (see :func:`bayeseval.get_metric`).
    min_trials : int, optional
        Every stratum needs at least this many trials.
    max_halfwidth : float, optional
        Every stratum's interval half-width, ``(upper - lower) / 2``, must be at
        most this.
    level, method : float, str
        Interval level and method (see :func:`bayeseval.proportion_ci`).
    pos_label : optional
        Positive class for class metrics (rows only; see :func:`bayeseval.tabulate`).

    Returns
    -------
    GateResult
        ``passed`` and the per-stratum table with the reason of every failure.

    Examples
    --------
    >>> from bayeseval import Counts
    >>> res = gate(Counts.from_arrays([5, 40], [50, 400], strata=["a", "b"]), min_trials=100)
    >>> res.passed, list(res.failing.index)
    (False, ['a'])
    """
    if min_trials is None and max_halfwidth is None:
        raise ValueError("gate needs min_trials and/or max_halfwidth")
    if min_trials is not None:
        min_trials = check_positive_int(min_trials, "min_trials")
    if max_halfwidth is not None:
        max_halfwidth = check_probability(max_halfwidth, "max_halfwidth", open_interval=True)
    level = check_level(level)
    method = check_method(method, PROPORTION_METHODS)
    metric = get_metric(metric).name
    if isinstance(data, Counts):
        given = {"y_true": y_true, "y_pred": y_pred, "strata": strata, "pos_label": pos_label}
        extra = {k: v for k, v in given.items() if v is not None}
        if extra:
            raise TypeError(f"data is a Counts: {sorted(extra)} apply to rows only, got {extra!r}")
        counts = data
    else:
        if y_true is None or y_pred is None:
            raise TypeError(
                "y_true and y_pred are required when data is a DataFrame, "
                f"got y_true={y_true!r}, y_pred={y_pred!r}"
            )
        counts = tabulate(data, y_true=y_true, y_pred=y_pred, strata=strata, metric=metric, pos_label=pos_label)
    table = counts.to_frame()
    table["rate"] = counts.rates
    has = table["trials"] > 0
    lower = np.full(len(table), np.nan)
    upper = np.full(len(table), np.nan)
    if has.any():
        lo, hi = proportion_ci(
            table.loc[has, "successes"].to_numpy(),
            table.loc[has, "trials"].to_numpy(),
            level=level,
            method=method,
        )
        lower[has.to_numpy()] = lo
        upper[has.to_numpy()] = hi
    table["lower"], table["upper"] = lower, upper
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    reasons: list[str] = []
    for _, row in table.iterrows():
        why = []
        if row["trials"] == 0:
            why.append("no trials")
        elif min_trials is not None and row["trials"] < min_trials:
            why.append(f"{int(row['trials'])} trials < {min_trials}")
        if max_halfwidth is not None and row["trials"] > 0 and row["halfwidth"] > max_halfwidth:
            why.append(f"half-width {row['halfwidth']:.4f} > {max_halfwidth:g}")
        if max_halfwidth is not None and row["trials"] == 0 and "no trials" not in why:
            why.append("no trials")
        reasons.append("; ".join(why))
    table["reason"] = reasons
    table["passed"] = table["reason"] == ""
    return GateResult(passed=bool(table["passed"].all()), table=table)
