"""Release gates: does a labelled test set hold enough evidence in every stratum?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_int,
    check_probability,
)
from bayeseval._kernels.binomial import ADAPTIVE, EXACT_METHODS, GUARANTEES, STRATA_METHODS
from bayeseval._kernels.guarantee import Guarantee, as_guarantee
from bayeseval._render.formats import fixed
from bayeseval.counts.counts import Counts, tabulate
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.metrics import get_metric
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.report.units import by_unit, unit_bounds, whole_pool_bounds

__all__ = ["gate", "GateResult"]


@dataclass(frozen=True, repr=False)
class GateResult(Result):
    """Outcome of :func:`gate`.

    Parameters
    ----------
    passed : bool
        True when every stratum meets every criterion.
    table : pandas.DataFrame
        Per stratum: successes, trials, rate, lower, upper, halfwidth, ``method`` (the
        interval's method), the criteria and ``passed`` with a ``reason`` for the
        strata that fail.
    guarantee : {"stratum", "average"}
        What the intervals promise (see :func:`gate`).

    Examples
    --------
    >>> from bayeseval import Counts
    >>> res = gate(Counts.from_arrays([5, 40], [50, 400], strata=["a", "b"]), min_trials=100)
    >>> res.table["passed"].tolist()
    [False, True]
    >>> print(res.to_text().splitlines()[0])
    FAILED: 1 of 2 strata miss the gate.
    """

    title = "Release gate"

    passed: bool
    table: pd.DataFrame
    guarantee: str = "stratum"

    @property
    def failing(self) -> pd.DataFrame:
        """The rows of :attr:`table` that fail.

        Returns
        -------
        pandas.DataFrame
            The failing strata, with the ``reason`` of each failure.
        """
        return self.table[~self.table["passed"]]

    def _heading(self) -> str:
        verdict = "passed" if self.passed else f"failed ({len(self.failing)} of {len(self.table)} strata)"
        return f"Release gate: {verdict}"

    def to_text(self) -> str:
        """Plain-text verdict with the failing strata.

        Returns
        -------
        str
            ``PASSED: ...`` or ``FAILED: ...`` followed by the failing strata.

        Examples
        --------
        >>> from bayeseval import Counts
        >>> gate(Counts.from_arrays([40], [400], strata=["a"]), min_trials=100).to_text()
        'PASSED: all 1 strata meet the gate.'
        """
        n = len(self.table)
        if self.passed:
            return f"PASSED: all {n} strata meet the gate."
        failing = self.failing
        cols = ["trials", "rate", "halfwidth", "reason"]
        return f"FAILED: {len(failing)} of {n} strata miss the gate.\n" + failing[cols].to_string(float_format=fixed)

    def __str__(self) -> str:
        return self.to_text()


def gate(
    data: pd.DataFrame | Counts,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    outcome: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str = "error_rate",
    min_trials: int | None = None,
    max_halfwidth: float | None = None,
    level: float = 0.95,
    method: str | None = None,
    pos_label: Any = None,
    guarantee: str | Guarantee = "stratum",
    design: Design | Mapping[str, Any] | None = None,
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
    outcome : str, optional
        Instead of ``y_true`` and ``y_pred``: a column of per-row outcomes in [0, 1] (0/1
        correctness or partial credit; rows only, see :func:`bayeseval.tabulate`).
    strata : str or list of str, optional
        Stratum column(s) (rows only).
    metric : str, default "error_rate"
        Metric whose trials are counted (see :func:`bayeseval.get_metric`).
    min_trials : int, optional
        Every stratum needs at least this many trials.
    max_halfwidth : float, optional
        Every stratum's interval half-width, ``(upper - lower) / 2``, must be at
        most this.
    level : float, default 0.95
        Interval level.
    method : str, optional
        Interval method (see :func:`bayeseval.proportion_ci`). Under
        ``guarantee="stratum"`` only the exact methods are accepted, ``"adaptive"``
        (the default) and ``"clopper_pearson"``; under ``"average"`` any method, default
        ``"wilson"``.
    pos_label : optional
        Positive class for class metrics (rows only; see :func:`bayeseval.tabulate`).
    guarantee : {"stratum", "average"} or Guarantee, default "stratum"
        A :class:`~bayeseval.Guarantee` or its name. ``"stratum"``: every stratum's interval covers its own rate at least ``level``
        of the time at every true rate (exact), so the half-width criterion is judged
        on an interval that holds for that stratum: the adaptive interval (exact tests
        whose tails are split by a prior from the other strata only; Clopper-Pearson
        when fewer than two strata have trials, the ``method`` column says so) or
        Clopper-Pearson. ``"average"``: any method, e.g. Wilson, whose coverage dips
        below ``level`` at small counts (95%: 0.84 at n = 5, 0.91 at n = 50).
    design : Design or dict, optional
        The sampling design of the rows (:class:`~bayeseval.Design`; rows only). With a
        ``cluster`` whose units hold several rows, or with graded outcomes, the rows of a unit
        are not independent draws: each stratum's half-width is that of its units'
        finite-sample valid interval (the interval :func:`~bayeseval.evaluate` reports for such rows,
        no borrowing across strata, under either guarantee; ``method`` ``"units"``, and an
        ``n_units`` column), while ``min_trials`` still counts trials. Binary rows in units of
        one row give exactly the gate of the default design. ``population="pool"``: every row
        of the pool is labelled, so each rate is known and its half-width is 0 (``method``
        ``"whole pool"``). ``inclusion`` is refused: it weights the labelled rows of a proxy
        design, and the gate takes no proxy. A :class:`~bayeseval.Counts` tabulated with a
        design carries it (pass the design to :func:`~bayeseval.tabulate`, not here). Under a
        design whose intervals are not binomial, ``method`` must be left out.

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

    Five answers per item: the half-width is the items' interval, not the rows'.

    >>> import pandas as pd
    >>> from bayeseval import Design
    >>> df = pd.DataFrame({"item": [i // 5 for i in range(200)],
    ...                    "ok": [1, 1, 1, 1, 0] * 20 + [1, 0, 0, 0, 0] * 20})
    >>> res = gate(df, outcome="ok", design=Design(cluster="item"), min_trials=100)
    >>> res.table[["trials", "n_units", "method"]].values.tolist()
    [[200, 40, 'units']]
    >>> gate(df, outcome="ok", design=Design(population="pool"), max_halfwidth=0.01).table["halfwidth"].tolist()
    [0.0]
    """
    min_trials, max_halfwidth = _check_criteria(min_trials, max_halfwidth)
    level = check_level(level)
    guarantee = as_guarantee(guarantee, allowed=GUARANTEES)
    explicit_method = method is not None
    method = _check_gate_method(method, guarantee)
    metric = get_metric(metric).name
    design = _gate_design(data, design)
    rows = {"y_true": y_true, "y_pred": y_pred, "outcome": outcome, "strata": strata, "pos_label": pos_label}
    counts = _counts(data, metric, rows, design)
    stated = design if design is not None else counts.design  # Counts tabulated with a design carry it
    if stated is not None and stated.population == "pool":
        table = _unit_table(counts, whole_pool_bounds(counts), "whole pool", explicit_method and method)
    elif by_unit(counts):
        table = _unit_table(counts, unit_bounds(counts, level), "units", explicit_method and method)
    else:
        table = _interval_table(counts, level, method)
        if counts.n_units is not None:
            table.insert(table.columns.get_loc("trials") + 1, "n_units", counts.n_units)
    table["reason"] = [_reason(row, min_trials, max_halfwidth) for _, row in table.iterrows()]
    table["passed"] = table["reason"] == ""
    return GateResult(passed=bool(table["passed"].all()), table=table, guarantee=guarantee.name)


def _check_gate_method(method: Any, guarantee: Guarantee) -> str:
    """The interval method: under "stratum" an exact one (default adaptive), else any."""
    if method is None:
        return ADAPTIVE if guarantee.per_stratum else "wilson"
    method = check_method(method, STRATA_METHODS)  # per-stratum intervals: adaptive too
    if guarantee.per_stratum and method not in EXACT_METHODS:
        raise ValueError(
            f"method {method!r} does not cover every stratum at every rate; with "
            f"guarantee='stratum' method must be one of {list(EXACT_METHODS)} (or pass "
            "guarantee='average')"
        )
    return method


def _check_criteria(min_trials: Any, max_halfwidth: Any) -> tuple[int | None, float | None]:
    """At least one criterion, each checked (a positive integer, a half-width in (0, 1))."""
    if min_trials is None and max_halfwidth is None:
        raise ValueError("gate needs min_trials and/or max_halfwidth, got neither")
    if min_trials is not None:
        min_trials = check_positive_int(min_trials, "min_trials")
    if max_halfwidth is not None:
        max_halfwidth = check_probability(max_halfwidth, "max_halfwidth", open_interval=True)
    return min_trials, max_halfwidth


def _gate_design(data: Any, design: Any) -> Design | None:
    """The design of the gate's rows: any cluster and population; no inclusion (the gate has no proxy)."""
    if design is None:
        return None
    d = as_design(design)
    if isinstance(data, Counts):
        raise TypeError(f"design applies to rows; data is a Counts (tabulate it with design=), got design={d!r}")
    if d.inclusion is not None:
        raise ValueError(
            f"design.inclusion={d.inclusion!r}: inclusion probabilities weight the labelled rows of a proxy "
            "design, and gate takes no proxy; gate the labelled rows drawn at random within the strata, or "
            "use evaluate with proxy and the design"
        )
    return d


def _counts(data: Any, metric: str, rows: dict[str, Any], design: Design | None) -> Counts:
    """``data`` as Counts: given, or tabulated from rows (the row arguments only for rows)."""
    if isinstance(data, Counts):
        extra = {k: v for k, v in rows.items() if v is not None}
        if extra:
            raise TypeError(f"data is a Counts: {sorted(extra)} apply to rows only, got {extra!r}")
        return data
    if rows["outcome"] is None and (rows["y_true"] is None or rows["y_pred"] is None):
        raise TypeError(
            "y_true and y_pred (or outcome instead) are required when data is a DataFrame, "
            f"got y_true={rows['y_true']!r}, y_pred={rows['y_pred']!r}"
        )
    given = {k: v for k, v in rows.items() if k != "outcome" or v is not None}
    return tabulate(data, metric=metric, design=design, **given)


def _unit_table(counts: Counts, bounds: tuple[np.ndarray, np.ndarray], method: str, explicit: Any) -> pd.DataFrame:
    """Counts, rate, the given interval, half-width and method per stratum, for counts by unit
    (``method="units"``) or a pool whose every row is labelled (``"whole pool"``).

    ``explicit``: the method the caller named, refused here (no binomial interval is computed).
    """
    if explicit:
        raise ValueError(
            f"method={explicit!r} chooses a binomial interval, and these counts take none: "
            + (
                "with design.population='pool' every row of the pool is labelled, so each rate is known exactly"
                if method == "whole pool"
                else "their rows come in units (or carry graded outcomes), so each stratum's interval is its "
                "units' finite-sample valid interval"
            )
            + "; leave method out"
        )
    table = counts.to_frame()
    if counts.n_units is not None:
        table.insert(table.columns.get_loc("trials") + 1, "n_units", counts.n_units)
    table["rate"] = counts.rates
    table["lower"], table["upper"] = bounds
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    table["method"] = method
    return table


def _interval_table(counts: Counts, level: float, method: str) -> pd.DataFrame:
    """Counts, rate, interval, half-width and method per stratum (NaN interval without trials).

    The adaptive interval needs two strata with trials (each stratum's prior comes from
    the others): with fewer, Clopper-Pearson, the exact interval it falls back to.
    """
    table = counts.to_frame()
    table["rate"] = counts.rates
    has = (table["trials"] > 0).to_numpy()
    if method == ADAPTIVE and np.count_nonzero(has) < 2:
        method = "clopper_pearson"
    lower = np.full(len(table), np.nan)
    upper = np.full(len(table), np.nan)
    if has.any():
        lower[has], upper[has] = proportion_ci(
            table["successes"].to_numpy()[has], table["trials"].to_numpy()[has], level=level, method=method
        )
    table["lower"], table["upper"] = lower, upper
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    table["method"] = method
    return table


def _reason(row: pd.Series, min_trials: int | None, max_halfwidth: float | None) -> str:
    """Why a stratum fails the gate ("" when it passes)."""
    if row["trials"] == 0:
        return "no trials"
    why = []
    if min_trials is not None and row["trials"] < min_trials:
        why.append(f"{int(row['trials'])} trials < {min_trials}")
    if max_halfwidth is not None and row["halfwidth"] > max_halfwidth:
        why.append(f"half-width {fixed(row['halfwidth'])} > {max_halfwidth:g}")
    return "; ".join(why)
