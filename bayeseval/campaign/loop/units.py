"""Campaigns that sample whole units (``design=Design(cluster=...)``): the units, their order and state.

A clustered campaign stores each pool row's unit in the campaign file (meta key ``units``:
``[row id, unit]`` pairs) and samples units, never rows: a unit lies in one stratum, and
each stratum's units are proposed in a fixed random order, the order of one row of each unit
(its row with the smallest id) in the stratum's stored random order. That row is fixed before
the order is drawn, so the units' order is a uniformly random permutation of the stratum's
units and every prefix is a simple random sample of them, whatever their sizes. A proposed
unit is every row of it not yet labelled; a unit counts once all its rows are labelled
(:func:`unit_status`).

Each stratum reads the finite-sample valid interval of its labelled units
(:func:`~bayeseval._kernels.bounded_mean.units_ci` at the stop level of the ``"stratum"``
guarantee, :func:`~bayeseval._kernels.guarantee.guarantee_stop_level`) for its row-level
rate, successes summed over units over trials summed over units. The rule sees a
:class:`~bayeseval.campaign.loop.rule_state.RuleState` whose rows are units
(:func:`units_state`): it allocates units and plans with the units interval's half-width,
which shrinks like ``1 / sqrt(units)`` (:meth:`RuleState.use_units
<bayeseval.campaign.loop.rule_state.RuleState.use_units>`). A real campaign and
:func:`~bayeseval.campaign.simulation.simulate` build the state with the same function.

Every goal reads these intervals: ``Each`` stops a stratum on its half-width, ``Decide``
decides it on the side of the threshold the interval lies on, ``Gap`` projects the strata's
intervals at the Bonferroni level to the max-min gap, ``Overall`` combines them by MOVER. A
unit's label cost is the sum of its rows' (:func:`unit_costs`). For a recall-type metric a
unit's trials are its rows that are trials (known once it is labelled); a unit without one
drops out of the interval, and the rule plans with the share of labelled units that have one.

Under ``guarantee="anytime"`` (goals ``Each`` and ``Decide``) each stratum reads instead the
confidence sequence of its complete units at the campaign's level
(:func:`units_sequences`, :func:`~bayeseval._kernels.bounded_mean.unit_cs`): the units in the
order they arrived (the round of their last label, then their proposal rank), a look at the end
of each round, the bound the stratum's largest unit in the pool; valid at every look, so there
is no compensated stop level.

With ``design.population="pool"`` the estimand is the rate of the stratum's units in the pool
itself: each stratum reads :func:`~bayeseval._kernels.finite_pool.pool_units_ci` of its
labelled units (the betting interval for sampling without replacement; the exact
hypergeometric limits when every unit is one row), which is the rate itself once every unit
is labelled, and the rule plans with the finite-population correction.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayeseval._kernels.bounded_mean import unit_cs, units_ci
from bayeseval._kernels.disparity import bonferroni_level
from bayeseval._kernels.finite_pool import pool_units_ci
from bayeseval._kernels.guarantee import guarantee_stop_level
from bayeseval.campaign.loop.forecast import feasibility_table
from bayeseval.campaign.loop.rounds import spec_state
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.state import StrataDesign
from bayeseval.estimate.proxy import weighted_interval

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.campaign.spec import CampaignSpec

__all__ = [
    "UNITS_META",
    "units_meta",
    "units_state",
    "units_sequences",
    "unit_status",
    "units_feasibility",
    "unit_costs",
]

UNITS_META = "units"


def _unit_codes(values: pd.Series, column: str) -> tuple[np.ndarray, list[Any]]:
    """Integer unit codes of the rows and the units as Python values, or raise naming ``design.cluster``."""
    missing = values.isna().to_numpy()
    if missing.any():
        ids = values.index[missing][:5].tolist()
        raise ValueError(
            f"design.cluster={column!r} is missing on {int(missing.sum())} rows (row ids {ids}); every row needs its unit"
        )
    codes, uniques = pd.factorize(values, sort=False)
    units = [u.item() if isinstance(u, np.generic) else u for u in uniques.tolist()]
    bad = next((u for u in units if not isinstance(u, (str, int, float, bool))), None)
    if bad is not None:
        raise ValueError(
            f"design.cluster={column!r} holds values that cannot be stored ({type(bad).__name__} {bad!r}); "
            "convert them to text"
        )
    return codes.astype(np.int64), units


def units_meta(pool: pd.DataFrame, column: str, rids: list[Any], strata_codes: np.ndarray) -> str:
    """The pool's unit column as the JSON stored in the campaign file, or raise.

    Parameters
    ----------
    pool : pandas.DataFrame
        The pool.
    column : str
        ``design.cluster``: the column whose rows sharing a value are one unit.
    rids : list
        The pool's row ids, in pool order.
    strata_codes : numpy.ndarray
        Each row's stratum code.

    Returns
    -------
    str
        ``[row id, unit]`` pairs as JSON.

    Raises
    ------
    ValueError
        Naming ``design.cluster``: a column not in the pool, missing units, values that cannot
        be stored, or units spanning several strata (their number and an example).

    Examples
    --------
    >>> pool = pd.DataFrame({"item": ["q1", "q1", "q2"]}, index=[10, 11, 12])
    >>> units_meta(pool, "item", [10, 11, 12], np.array([0, 0, 1]))
    '[[10, "q1"], [11, "q1"], [12, "q2"]]'
    >>> units_meta(pool, "item", [10, 11, 12], np.array([0, 1, 1]))
    Traceback (most recent call last):
    ...
    ValueError: design.cluster='item': 1 of 2 units span several strata (e.g. unit 'q1'); a unit must lie in one stratum
    """
    if column not in pool.columns:
        raise ValueError(f"design.cluster={column!r} is not a pool column; columns are {list(pool.columns)[:20]}")
    codes, units = _unit_codes(pool[column], column)
    spans = pd.Series(np.asarray(strata_codes)).groupby(codes).nunique()
    wide = spans.index[spans.to_numpy() > 1]
    if len(wide):
        raise ValueError(
            f"design.cluster={column!r}: {len(wide)} of {len(units)} units span several strata "
            f"(e.g. unit {units[int(wide[0])]!r}); a unit must lie in one stratum"
        )
    return json.dumps([[r, units[c]] for r, c in zip(rids, codes.tolist(), strict=True)])


@dataclass(frozen=True)
class UnitDesign:
    """The units of a clustered campaign's pool: which unit each eligible row is in, and their order.

    Attributes
    ----------
    rids : pandas.Index
        The eligible rows' ids.
    row_unit : numpy.ndarray
        Each eligible row's unit (an index into the unit arrays).
    row_order : numpy.ndarray
        Each eligible row's place in its stratum's stored random order.
    unit_stratum : numpy.ndarray
        Each unit's stratum (position in the campaign's strata).
    unit_rank : numpy.ndarray
        Each unit's place in its stratum's proposal order.
    unit_rows : numpy.ndarray
        Eligible rows per unit (its trials for a metric whose trials the prediction fixes; for
        a recall-type metric its trials are known once it is labelled, :func:`unit_status`).
    n_strata : int
        Strata of the campaign.
    """

    rids: pd.Index
    row_unit: np.ndarray
    row_order: np.ndarray
    unit_stratum: np.ndarray
    unit_rank: np.ndarray
    unit_rows: np.ndarray
    n_strata: int

    @classmethod
    def build(cls, rids: Any, units: Any, strata: Any, order: Any, n_strata: int) -> UnitDesign:
        """The design of eligible rows given by id, unit, stratum position and stored order.

        Parameters
        ----------
        rids, units, strata, order : array-like
            Per eligible row: its id, its unit, its stratum (position) and its place in the
            stratum's stored random order.
        n_strata : int
            Strata of the campaign.

        Returns
        -------
        UnitDesign
            Units ranked within each stratum by the order of their row with the smallest id.

        Examples
        --------
        >>> d = UnitDesign.build([1, 2, 3, 4], ["a", "a", "b", "c"], [0, 0, 0, 0], [3, 0, 2, 1], 1)
        >>> d.unit_rows.tolist(), d.unit_rank.tolist()  # units a, b, c ranked by rows 1, 3, 4
        ([2, 1, 1], [2, 1, 0])
        """
        rids = pd.Index(list(rids))
        row_unit, _ = pd.factorize(pd.Series(list(units), dtype=object), sort=False)
        strata, order = np.asarray(strata, dtype=np.int64), np.asarray(order, dtype=np.int64)
        n_units = int(row_unit.max()) + 1 if row_unit.size else 0
        by_id = np.asarray(rids.argsort(), dtype=np.int64)  # each unit's row with the smallest id heads it
        _, first = np.unique(row_unit[by_id], return_index=True)
        head = by_id[first]
        unit_stratum = strata[head]
        ranked = np.lexsort((order[head], unit_stratum))  # by stratum, then the head's stored order
        rank = np.zeros(n_units, np.int64)
        rank[ranked] = np.arange(n_units) - np.searchsorted(unit_stratum[ranked], unit_stratum[ranked], side="left")
        return cls(
            rids=rids,
            row_unit=row_unit.astype(np.int64),
            row_order=order,
            unit_stratum=unit_stratum,
            unit_rank=rank,
            unit_rows=np.bincount(row_unit, minlength=n_units).astype(np.int64),
            n_strata=int(n_strata),
        )

    @property
    def n_units(self) -> np.ndarray:
        """Units per stratum."""
        return np.bincount(self.unit_stratum, minlength=self.n_strata).astype(np.int64)

    def pool_table(self) -> pd.DataFrame:
        """The finite pool per stratum position: ``pool_units``, ``pool_trials``, ``pool_largest``.

        What population ``"pool"`` reads (:func:`units_table`): the stratum's units, their trials
        (eligible rows) in all and its largest unit.

        Returns
        -------
        pandas.DataFrame
            One row per stratum position ``0..n_strata-1``.

        Examples
        --------
        >>> d = UnitDesign.build([1, 2, 3, 4], ["a", "a", "b", "c"], [0, 0, 0, 1], [0, 1, 2, 0], 2)
        >>> d.pool_table().to_numpy().tolist()
        [[2, 3, 2], [1, 1, 1]]
        """
        largest = np.zeros(self.n_strata, np.int64)
        np.maximum.at(largest, self.unit_stratum, self.unit_rows)
        return pd.DataFrame(
            {
                "pool_units": self.n_units,
                "pool_trials": np.bincount(self.unit_stratum, weights=self.unit_rows, minlength=self.n_strata).astype(
                    np.int64
                ),
                "pool_largest": largest,
            }
        )

    def proposal_queue(self, j: int) -> np.ndarray:
        """Stratum ``j``'s units in proposal order."""
        mine = np.flatnonzero(self.unit_stratum == j)
        return mine[np.argsort(self.unit_rank[mine], kind="stable")]

    def rows_of(self, units: np.ndarray, exclude: np.ndarray) -> list[Any]:
        """Ids of the rows of ``units`` (in that order, each unit's rows in stored order) not in ``exclude``."""
        place = {int(u): i for i, u in enumerate(units)}
        keep = np.flatnonzero(np.isin(self.row_unit, units) & ~exclude)
        rank = np.array([place[int(u)] for u in self.row_unit[keep]], dtype=np.int64)
        keep = keep[np.lexsort((self.row_order[keep], rank))]
        return self.rids[keep].tolist()


def unit_status(
    design: UnitDesign,
    labelled: np.ndarray,
    pending: np.ndarray,
    success: np.ndarray,
    trial: np.ndarray | None = None,
    label_round: np.ndarray | None = None,
) -> pd.DataFrame:
    """Each unit's state from its rows' (labelled, pending, success, trial, round) flags.

    Parameters
    ----------
    design : UnitDesign
        The units.
    labelled, pending : numpy.ndarray of bool
        Per eligible row (aligned to ``design.rids``): labelled, proposed and waiting.
    success : numpy.ndarray
        Per eligible row: its success (0 where not labelled).
    trial : numpy.ndarray, optional
        Per eligible row: whether it is a trial of the metric (0 where not labelled); default
        every labelled row (a metric whose trials the prediction fixes).
    label_round : numpy.ndarray, optional
        Per eligible row: the round its label was recorded in (0 where not labelled; default 0).

    Returns
    -------
    pandas.DataFrame
        One row per unit: ``stratum``, ``rows``, ``labelled`` (rows), ``successes`` and
        ``trials`` (of its labelled rows), ``complete`` (every row labelled), ``pending`` (a
        row proposed and waiting: a partly labelled unit waits until its last row is labelled),
        ``available`` (neither: its unlabelled rows may be proposed), ``round`` (the round of
        its last label: when a complete unit arrived) and ``rank`` (its place in its stratum's
        proposal order). A stratum's complete units arrived in the order of (``round``,
        ``rank``), the order the anytime guarantee bets them in (:func:`units_state`).

    Examples
    --------
    >>> d = UnitDesign.build([1, 2, 3], ["a", "a", "b"], [0, 0, 0], [0, 1, 2], 1)
    >>> s = unit_status(d, np.array([True, False, False]), np.array([False, True, False]), np.array([1, 0, 0]))
    >>> s[["labelled", "complete", "pending", "available"]].to_numpy().tolist()
    [[1, False, True, False], [0, False, False, True]]
    """
    n = design.unit_rows.size
    lab = np.bincount(design.row_unit, weights=labelled, minlength=n).astype(np.int64)
    pend = np.bincount(design.row_unit, weights=pending, minlength=n) > 0
    succ = np.bincount(design.row_unit, weights=np.where(labelled, success, 0), minlength=n)
    counted = labelled if trial is None else np.where(labelled, trial, 0)
    trials = np.bincount(design.row_unit, weights=counted, minlength=n).astype(np.int64)
    complete = lab == design.unit_rows
    last = np.zeros(n, np.int64)
    if label_round is not None:
        np.maximum.at(last, design.row_unit, np.where(labelled, np.asarray(label_round, dtype=np.int64), 0))
    return pd.DataFrame(
        {
            "stratum": design.unit_stratum,
            "rows": design.unit_rows,
            "labelled": lab,
            "successes": succ,
            "trials": trials,
            "complete": complete,
            "pending": pend & ~complete,
            "available": ~complete & ~pend,
            "round": last,
            "rank": design.unit_rank,
        }
    )


def unit_costs(costs: Any, unit_rows: Any, unit_stratum: Any, available: Any, k: int) -> np.ndarray | None:
    """The cost of a unit per stratum: its rows' label costs summed, planned at the mean unit size.

    A unit's cost is the sum of its rows' costs: its rows times the stratum's label cost. The
    allocation plans a stratum's next units at the mean size of its units still available
    (of all its units once none is), so it compares strata by cost per unit.

    Parameters
    ----------
    costs : numpy.ndarray or None
        Label cost per stratum (None: no costs).
    unit_rows, unit_stratum : array-like
        Each unit's rows and stratum (position).
    available : array-like of bool
        Each unit: neither complete nor pending.
    k : int
        Strata.

    Returns
    -------
    numpy.ndarray or None
        Cost per unit of each stratum (None without costs).

    Examples
    --------
    >>> unit_costs(np.array([1.0, 2.0]), [1, 3, 2, 2], [0, 0, 1, 1], [True, False, True, True], 2).tolist()
    [1.0, 4.0]
    """
    if costs is None:
        return None
    rows, where = np.asarray(unit_rows, dtype=float), np.asarray(unit_stratum, dtype=np.int64)
    free = np.asarray(available, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        every = np.bincount(where, weights=rows, minlength=k) / np.bincount(where, minlength=k)
        left = np.bincount(where[free], weights=rows[free], minlength=k) / np.bincount(where[free], minlength=k)
    size = np.where(np.isfinite(left), left, np.where(np.isfinite(every), every, 1.0))
    return np.asarray(costs, dtype=float) * size


def units_state(
    spec: CampaignSpec, design: StrataDesign, units: pd.DataFrame, n_units: np.ndarray, pool: pd.DataFrame | None = None
) -> tuple[RuleState, pd.DataFrame]:
    """The rule's view of a clustered campaign: units as its rows, each stratum on its units interval.

    Goal ``"gap"`` also reads each stratum's units interval at the Bonferroni level of the stop
    level (:meth:`RuleState.use_units_gap
    <bayeseval.campaign.loop.rule_state.RuleState.use_units_gap>`), goal ``"overall"`` the units
    intervals combined by MOVER with the population weights (:meth:`RuleState.use_units_overall
    <bayeseval.campaign.loop.rule_state.RuleState.use_units_overall>`,
    :func:`~bayeseval.estimate.proxy.weighted_interval`, as :func:`~bayeseval.evaluate`
    reweights over units).

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings (guarantee ``"stratum"``).
    design : StrataDesign
        The strata (rows and weights as for a row campaign).
    units : pandas.DataFrame
        :func:`unit_status` (``stratum``, ``rows``, ``successes``, ``complete``, ``pending``;
        ``trials``, default ``rows``: a unit's trials, 0 for a recall unit without a positive row).
    n_units : numpy.ndarray
        Units per stratum (:attr:`UnitDesign.n_units`).
    pool : pandas.DataFrame, optional
        :meth:`UnitDesign.pool_table`: needed with ``design.population="pool"``, where each
        stratum reads the interval for its pool's own rate
        (:func:`~bayeseval._kernels.finite_pool.pool_units_ci`) and plans with the
        finite-population correction.

    Returns
    -------
    state : RuleState
        ``labelled``, ``pending`` and ``available`` count units; ``trials`` the labelled
        units with trials (all of them when the prediction fixes the trials; for a recall-type
        metric those with a positive row, so ``P(trial)`` is the share of units that count) and
        ``successes`` the sum of their unit rates, rounded (what the pooled model and the rules
        that read it see); every stratum reads and stops on its units interval
        (:meth:`RuleState.use_units`), planned with the units that count.
    table : pandas.DataFrame
        Per stratum (by position): ``estimate``, ``lower``, ``upper``, ``n_units``,
        ``n_trials`` (:func:`~bayeseval._kernels.bounded_mean.units_ci` of the complete units
        at the stop level), ``successes`` (summed over the complete units) and
        ``units_pending``.

    Examples
    --------
    >>> from bayeseval.campaign import CampaignSpec, Each
    >>> from bayeseval import Design
    >>> spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.1), design=Design(cluster="item"))
    >>> design = StrataDesign(pd.Index(["a"]), n_rows=np.array([30]), n_eligible=np.array([30]),
    ...                       weights=np.array([1.0]), prior_mean=None)
    >>> units = pd.DataFrame({"stratum": [0, 0, 0], "rows": [3, 3, 3], "successes": [3.0, 1.0, 0.0],
    ...                       "complete": [True, True, False], "pending": [False, False, True]})
    >>> st, table = units_state(spec, design, units, np.array([10]))
    >>> st.labelled.tolist(), st.pending.tolist(), st.available.tolist(), table["n_units"].tolist()
    ([2], [1], [7], [2])
    """
    k = len(design.strata)
    if "trials" not in units:
        units = units.assign(trials=units["rows"])
    done = units[units["complete"].to_numpy(dtype=bool)]
    where = done["stratum"].to_numpy(dtype=np.int64)
    labelled = np.bincount(where, minlength=k).astype(np.int64)
    pending = np.bincount(units["stratum"].to_numpy(np.int64), weights=units["pending"], minlength=k).astype(np.int64)
    has = done["trials"].to_numpy() > 0
    counted = np.bincount(where[has], minlength=k).astype(np.int64)
    rates = done["successes"].to_numpy(float)[has] / done["trials"].to_numpy(float)[has]
    rate_sum = np.bincount(where[has], weights=rates, minlength=k)
    st = spec_state(
        spec,
        dataclasses.replace(design, n_eligible=np.asarray(n_units, dtype=np.int64)),
        successes=np.rint(rate_sum).astype(np.int64),
        trials=counted,
        labelled=labelled,
        pending=pending,
    )
    finite = spec.design.population == "pool"
    if finite and pool is None:
        raise ValueError("design.population='pool' needs the pool's units per stratum (pool=UnitDesign.pool_table())")
    stop_level = guarantee_stop_level(spec.level)
    table = units_table(done, k, stop_level, pool if finite else None)
    if spec.guarantee.sequential:  # each stratum's confidence sequence at the level, over its units in arrival order
        if pool is None:
            raise ValueError(
                "guarantee='anytime' needs the pool's largest unit per stratum (pool=UnitDesign.pool_table())"
            )
        table[["estimate", "lower", "upper"]] = units_sequences(done, k, spec.level, pool["pool_largest"].to_numpy())
    table["units_pending"] = pending
    st.use_units(
        table["lower"].to_numpy(),
        table["upper"].to_numpy(),
        table["estimate"].to_numpy(),
        counted,
        pool_units=np.asarray(n_units, dtype=float) if finite else None,
    )
    if spec.goal.name == "gap":  # each stratum's units interval at the gap's Bonferroni level
        gap = units_table(done, k, bonferroni_level(stop_level, k))
        st.use_units_gap(gap["lower"].to_numpy(), gap["upper"].to_numpy())
    if spec.goal.weighted:  # the weighted rate: the units intervals combined by MOVER
        rates = table[["lower", "upper"]].assign(rate=table["estimate"])
        st.use_units_overall(*weighted_interval(rates, st.weights))
    return st, table


def units_table(done: pd.DataFrame, k: int, level: float, pool: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`~bayeseval._kernels.bounded_mean.units_ci` of complete units per stratum position ``0..k-1``.

    Each stratum's interval depends on its units histogram alone (and, for a finite pool, on
    the pool's sizes), so it is kept (a bounded cache keyed by them and the level) and a round
    recomputes only the strata whose units changed.

    Parameters
    ----------
    done : pandas.DataFrame
        Complete units: ``stratum`` (position), ``successes``, ``rows`` and optionally
        ``trials`` (default ``rows``); units without trials are left out.
    k : int
        Strata.
    level : float
        Interval level.
    pool : pandas.DataFrame, optional
        Population ``"pool"``: :meth:`UnitDesign.pool_table`; each stratum then gets
        :func:`~bayeseval._kernels.finite_pool.pool_units_ci`, for its pool's own rate.

    Returns
    -------
    pandas.DataFrame
        ``estimate``, ``lower``, ``upper``, ``n_units``, ``n_trials``, ``successes``; a stratum
        without units gets ``(nan, 0, 1)`` and zeros.

    Examples
    --------
    >>> done = pd.DataFrame({"stratum": [1, 1], "successes": [2.0, 0.0], "rows": [2, 2]})
    >>> units_table(done, 2, 0.95)[["estimate", "n_units"]].to_numpy().tolist()
    [[nan, 0.0], [0.5, 2.0]]
    """
    est, lower, upper = np.full(k, np.nan), np.zeros(k), np.ones(k)
    n_units: np.ndarray = np.zeros(k, np.int64)
    n_trials: np.ndarray = np.zeros(k, np.int64)
    successes: np.ndarray = np.zeros(k)
    trials = done["trials"] if "trials" in done else done["rows"]
    done, trials = done[trials.to_numpy() > 0], trials[trials.to_numpy() > 0]
    if len(done):
        triples = np.column_stack(
            [done["stratum"].to_numpy(float), done["successes"].to_numpy(float), trials.to_numpy(float)]
        )
        hist, count = np.unique(triples, axis=0, return_counts=True)  # sorted by stratum, successes, trials
        where = hist[:, 0].astype(np.int64)
        n_units = np.bincount(where, weights=count, minlength=k).astype(np.int64)
        n_trials = np.bincount(where, weights=count * hist[:, 2], minlength=k).astype(np.int64)
        successes = np.bincount(where, weights=count * hist[:, 1], minlength=k)
        bounds = np.searchsorted(where, np.arange(k + 1))
        keys: dict[int, tuple[float, bytes, bytes]] = {}
        todo: list[int] = []
        for j in map(int, np.flatnonzero(n_units)):
            a, b = bounds[j], bounds[j + 1]
            sizes = b"" if pool is None else pool.iloc[j].to_numpy(np.int64).tobytes()
            keys[j] = (float(level), hist[a:b, 1:].tobytes(), count[a:b].tobytes() + sizes)
            if keys[j] in _UNITS_CACHE:
                est[j], lower[j], upper[j] = _UNITS_CACHE[keys[j]]
            else:
                todo.append(j)
        if todo:
            sel = np.isin(where, todo)
            table = pd.DataFrame(
                {
                    "stratum": where[sel],
                    "unit_successes": hist[sel, 1],
                    "unit_trials": hist[sel, 2],
                    "units": count[sel],
                }
            )
            if pool is None:
                ci = units_ci(table, "stratum", level)
            else:
                ci = pool_units_ci(table, "stratum", pool.rename_axis("stratum"), level)
            if len(_UNITS_CACHE) > _UNITS_CACHE_SIZE:
                _UNITS_CACHE.clear()
            for j, e, lo, hi in zip(ci.index, ci["estimate"], ci["lower"], ci["upper"], strict=True):
                est[j], lower[j], upper[j] = e, lo, hi
                _UNITS_CACHE[keys[int(j)]] = (float(e), float(lo), float(hi))
    return pd.DataFrame(
        {
            "estimate": est,
            "lower": lower,
            "upper": upper,
            "n_units": n_units,
            "n_trials": n_trials,
            "successes": successes,
        }
    )


def units_sequences(done: pd.DataFrame, k: int, level: float, largest: Any) -> np.ndarray:
    """Each stratum's confidence sequence at its last look (guarantee ``"anytime"``), per position ``0..k-1``.

    A stratum's complete units with trials, in the order they arrived (by ``round``, the round
    of their last label, then ``rank``, their place in the proposal order: fixed before any
    label), are bet on in that order by :func:`~bayeseval._kernels.bounded_mean.unit_cs` at
    ``level``, with the bound ``M`` the stratum's largest unit in the pool (its rows: known
    before the first label) and a look at the end of each round. The interval read after any
    round, and so at the round a campaign stops, covers the stratum's rate with probability at
    least ``level`` (Ville's inequality), with no compensated stop level.

    Parameters
    ----------
    done : pandas.DataFrame
        Complete units: ``stratum``, ``successes``, ``rows``, optionally ``trials`` (default
        ``rows``), ``round`` and ``rank`` (default 0 and the frame's order).
    k : int
        Strata.
    level : float
        The campaign's level.
    largest : array-like
        Each stratum's largest unit (:meth:`UnitDesign.pool_table`, ``pool_largest``).

    Returns
    -------
    numpy.ndarray
        (k, 3): ``estimate``, ``lower``, ``upper``; ``(nan, 0, 1)`` without units.

    Examples
    --------
    >>> done = pd.DataFrame({"stratum": 0, "successes": [2.0, 0.0, 2.0, 1.0], "rows": 2,
    ...                      "round": [1, 1, 2, 2], "rank": [0, 1, 3, 2]})
    >>> out = units_sequences(done, 2, 0.95, [2, 2])
    >>> cs = unit_cs([2.0, 0.0, 1.0, 2.0], [2, 2, 2, 2], 0.95, bound=2, looks=[2, 4])
    >>> bool(out[0, 1] == cs["lower"].iloc[-1] and out[0, 2] == cs["upper"].iloc[-1]), out[1].tolist()
    (True, [nan, 0.0, 1.0])
    """
    out = np.tile(np.array([np.nan, 0.0, 1.0]), (k, 1))
    trials = (done["trials"] if "trials" in done else done["rows"]).to_numpy(float)
    rounds = done["round"].to_numpy(np.int64) if "round" in done else np.zeros(len(done), np.int64)
    rank = done["rank"].to_numpy(np.int64) if "rank" in done else np.arange(len(done))
    where = done["stratum"].to_numpy(np.int64)
    succ = done["successes"].to_numpy(float)
    has = trials > 0
    order = np.lexsort((rank[has], rounds[has], where[has]))
    where, succ, trials, rounds = where[has][order], succ[has][order], trials[has][order], rounds[has][order]
    bounds = np.searchsorted(where, np.arange(k + 1))
    top = np.asarray(largest, dtype=float)
    for j in map(int, np.flatnonzero(np.diff(bounds))):
        lo, hi = bounds[j], bounds[j + 1]
        r = rounds[lo:hi]
        looks = np.flatnonzero(np.append(r[1:] != r[:-1], True)) + 1  # the last unit of each round
        key = (float(level), float(top[j]), succ[lo:hi].tobytes(), trials[lo:hi].tobytes(), looks.tobytes())
        if key not in _SEQUENCE_CACHE:
            cs = unit_cs(succ[lo:hi], trials[lo:hi], level, bound=top[j], looks=looks)
            if len(_SEQUENCE_CACHE) > _UNITS_CACHE_SIZE:
                _SEQUENCE_CACHE.clear()
            _SEQUENCE_CACHE[key] = (cs["estimate"].iloc[-1], cs["lower"].iloc[-1], cs["upper"].iloc[-1])
        out[j] = _SEQUENCE_CACHE[key]
    return out


#: the confidence sequences computed so far, by (level, bound, units in arrival order, looks)
_SEQUENCE_CACHE: dict[tuple[float, float, bytes, bytes, bytes], tuple[float, float, float]] = {}


#: the units intervals computed so far, by (level, histogram): a stratum's interval depends on nothing else
_UNITS_CACHE: dict[tuple[float, bytes, bytes], tuple[float, float, float]] = {}
_UNITS_CACHE_SIZE = 20_000


def units_feasibility(state: RuleState, warn: bool = False) -> pd.DataFrame:
    """Whether each stratum's units interval is expected to reach the target with all its units labelled.

    The half-width it stops on projected to every unit of the stratum labelled,
    ``h sqrt(n_eff / (n_eff + t))`` with ``t`` its units left and pending (0 for population
    ``"pool"``: with every unit labelled the pool's rate is known)
    (:meth:`RuleState.use_units <bayeseval.campaign.loop.rule_state.RuleState.use_units>`:
    before any unit is labelled, the worst case of a mean in ``[0, 1]``).

    Parameters
    ----------
    state : RuleState
        The clustered campaign's state (:func:`units_state`).
    warn : bool
        Emit a :class:`~bayeseval._api.warnings.PrecisionLimitedWarning` naming the strata
        that cannot reach the target.

    Returns
    -------
    pandas.DataFrame
        Per stratum: ``max_trials`` (its units), ``achievable_halfwidth`` and ``feasible``.

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[10, 4000], target_halfwidth=0.05,
    ...                            guarantee="stratum", strata=["small", "large"])
    >>> st.use_units(np.zeros(2), np.ones(2), np.full(2, np.nan), np.zeros(2))
    >>> units_feasibility(st)["feasible"].tolist()
    [False, True]
    """
    hw, neff = state.stop_halfwidths(), state.stop_neff()
    t = (state.available + state.pending).astype(float)
    full = hw * np.sqrt(neff / (neff + t))
    if state.population == "pool":  # every unit labelled: the pool's rate itself
        full = np.zeros_like(full)
    feasible = full <= state.target_halfwidth
    units = (state.labelled + t).astype(float)
    return feasibility_table(units, full, feasible, state.strata, state.target_halfwidth, warn)
