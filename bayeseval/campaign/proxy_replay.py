"""Replaying a proxy campaign on labelled data: :func:`~bayeseval.campaign.simulate` with ``proxy=``.

Each repeat replays the :class:`~bayeseval.campaign.Campaign` created on the pool with the
repeat's seed, its proposals answered from the true labels; repeat 0 is the campaign created
with ``random_seed``. The replay runs in memory: it reads the pool as creation stores it
(:func:`~bayeseval.campaign.store.create.stored_pool`: the same design, configuration and proxy
values, and the same errors), keeps the counts and each proxy cell's labels in arrays instead
of a campaign file, and takes every decision with the campaign's own functions: the state
(:func:`~bayeseval.campaign.loop.rounds.spec_state`), the proxy intervals it stops on
(:meth:`ProxyDesign.table <bayeseval.campaign.loop.proxy_cells.ProxyDesign.table>`), the
allocation across strata, the Neyman allocation across each stratum's proxy cells
(:func:`~bayeseval.campaign.loop.proxy_cells.neyman_cells`) with the rows of a cell in the
stored random order, and the final status table. So its results are the campaign's, to the
last bit: ``replay_proxy(..., files=True)`` runs each repeat as a real campaign in a temporary
file, the reference the tests compare it with. What a campaign computes only for its file and
its user is left out: the decisions log, and the pooled posterior of every round (a proxy
campaign reads its proxy intervals), fitted in the first campaign only, whose warnings are said.
"""

from __future__ import annotations

import contextlib
import functools
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._kernels.guarantee import guarantee_stop_level
from bayeseval.campaign.campaign import Campaign
from bayeseval.campaign.loop.pool import metric_flags, proposal_order, rule_generator, seed_sequences
from bayeseval.campaign.loop.proxy_cells import ProxyDesign, neyman_cells
from bayeseval.campaign.loop.rounds import allocate, round_size, spec_state
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.status import status_frame
from bayeseval.campaign.spec import CampaignSpec
from bayeseval.campaign.store.create import stored_pool
from bayeseval.counts.metrics import get_metric

__all__ = ["replay_proxy"]

Run = tuple[dict[str, Any], list[dict[str, Any]], pd.DataFrame]


def _row(
    st: pd.DataFrame, true_rates: pd.Series, used: int, done: bool, rounds: int, start: float
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The run's line of the table and its final intervals, from the campaign's final status."""
    rates = true_rates.reindex(st.index).to_numpy(float)
    st = st.assign(true_rate=rates, covered=(st["lower"] <= rates) & (rates <= st["upper"]))
    row = {
        "labels_used": used,
        "coverage": float(st["covered"].mean()),
        "reached_goal": bool(done),
        "rounds": rounds,
        "max_halfwidth": float(st["halfwidth"].max()),
        "overall_covered": np.nan,
        "wall_time": time.perf_counter() - start,
    }
    return row, st


# -- the reference: a real campaign in a temporary file ------------------------------------------
def _one_file(
    path: Path, pool: pd.DataFrame, truth: pd.Series, spec: CampaignSpec, seed: Any, true_rates: pd.Series
) -> Run:
    start = time.perf_counter()
    c = Campaign._from_spec(path, pool, spec.replace(random_seed=seed))
    trace, rounds = [], 0
    try:
        while True:
            batch = c.propose()
            if len(batch) == 0:
                break
            c.ingest(truth.loc[batch.index])
            rounds += 1
            trace.append({"labels": c.labels_used, "max_halfwidth": float(c.status()["halfwidth"].max())})
        st = c.status()
        done = c.goal_met  # the goal itself, not a stop for want of rows
        used = c.labels_used
    finally:
        c.close()
    row, st = _row(st, true_rates, used, done, rounds, start)
    return row, trace, st


# -- the replay in memory --------------------------------------------------------------------
def _as_stored(values: Any) -> list[Any]:
    """Python values as SQLite gives them back from a column without a type: a bool as an integer."""
    return [int(v) if isinstance(v, bool) else v for v in values]


class _Pool:
    """A proxy campaign's pool as its file holds it, for one rule: read once, replayed per repeat.

    ``labels`` and the ``trial`` and ``success`` flags of every row are those :meth:`Campaign.ingest`
    records for the row's true label; ``ok`` is False when a true label is not one of the
    campaign's labels (the campaign's ingest refuses it: the replay then runs the campaign).
    """

    def __init__(self, pool: pd.DataFrame, truth: pd.Series, spec: CampaignSpec) -> None:
        stored = stored_pool(pool, spec)
        config = json.loads(stored.config)
        self.spec = CampaignSpec.from_config(config)  # the spec the campaign reads back from its file
        self.column = spec.proxy
        self.design = stored.design
        self.metric = get_metric(self.spec.metrics[0])
        self.positive = config.get("pos_label")
        self.label_set = config["label_set"]
        self.rids = stored.rids
        self.k = len(self.design.keys)
        self.codes = np.arange(self.k)
        pairs = json.loads(stored.proxy or "[]")
        proxy = pd.Series([v for _, v in pairs], index=[r for r, _ in pairs])
        self.proxy = proxy.reindex(pd.Index(self.rids)).to_numpy()
        self.prediction = _as_stored(self.design.y_pred.tolist())
        known, missing, invalid = self.design.labels.normalise_many(np.asarray(truth, dtype=object))
        self.ok = not (missing.any() or invalid.any())
        if self.ok:
            trial, success = metric_flags(self.metric, known, self.prediction, self.positive)
            self.trial, self.success = trial.astype(np.int64), success.astype(np.int64)
            self.labels = _as_stored(known.tolist())
        self.level = guarantee_stop_level(self.spec.level)

    def proxy_design(self, order: list[np.ndarray]) -> ProxyDesign:
        """The campaign's :class:`ProxyDesign`, on the pool table its file holds for this row order."""
        place = np.zeros(len(self.rids), dtype=np.int64)
        for queue in order:
            place[queue] = np.arange(len(queue))
        rows = zip(
            self.rids,
            self.design.codes.tolist(),
            self.prediction,
            self.design.eligible.astype(int).tolist(),
            place.tolist(),
            strict=True,
        )
        table = pd.DataFrame(list(rows), columns=["rid", "stratum", "prediction", "eligible", "ord"]).set_index("rid")
        table["proxy"] = self.proxy
        return ProxyDesign(table, self.metric.name, self.positive, self.label_set, column=self.column or "proxy")

    def state(self, successes: np.ndarray, trials: np.ndarray, labelled: np.ndarray) -> RuleState:
        """The state the campaign's rule reads: its counts, nothing pending."""
        st = spec_state(
            self.spec,
            self.design.strata,
            successes=successes.copy(),
            trials=trials.copy(),
            labelled=labelled.copy(),
            pending=np.zeros(self.k, np.int64),
        )
        assert isinstance(st, RuleState)  # a proxy campaign has one metric
        return st

    def label_table(self, done: np.ndarray) -> pd.Series:
        """The stored labels of the rows labelled so far, as the campaign reads them (in row id order)."""
        where = np.flatnonzero(done).tolist()
        rows = [(self.rids[i], self.labels[i], int(self.success[i])) for i in where]
        return pd.DataFrame(rows, columns=["rid", "label", "success"]).set_index("rid")["label"]


class _CellQueues:
    """Every stratum's proxy cells: their eligible rows in the stored order and the labels taken from them.

    Every row proposed is labelled before the next proposal, so a cell's rows proposed so far
    are the first ``taken`` of its queue, and they are all labelled.
    """

    def __init__(self, design: ProxyDesign, order: list[np.ndarray], rids: list[Any], success: np.ndarray) -> None:
        cell = design.pool["cell"].reindex(pd.Index(rids)).to_numpy()
        self.success = success
        self.queues: list[list[np.ndarray]] = []  # per stratum, each cell's rows (cells in increasing order)
        for queue in order:
            c = cell[queue]
            self.queues.append([queue[c == name] for name in np.unique(c)])
        self.size = [np.array([len(q) for q in qs], dtype=np.int64) for qs in self.queues]
        self.taken = [np.zeros(len(qs), np.int64) for qs in self.queues]
        self.successes = [np.zeros(len(qs), np.float64) for qs in self.queues]

    def draw(self, j: int, m: int) -> np.ndarray:
        """:meth:`ProxyDesign.sample` of stratum ``j``: its next ``m`` rows, cell after cell.

        The cells' labels come from :func:`neyman_cells` on the same counts the campaign reads
        from its file; the rows drawn are counted as labelled, with their successes.
        """
        taken, size = self.taken[j], self.size[j]
        take = neyman_cells(
            size.astype(float), taken.copy(), self.successes[j].copy(), taken.astype(float), size - taken, m
        )
        out = []
        for c in np.flatnonzero(take):
            rows = self.queues[j][c][taken[c] : taken[c] + take[c]]
            self.successes[j][c] += self.success[rows].sum()
            out.append(rows)
        taken += take
        return np.concatenate(out) if out else np.zeros(0, np.int64)


def _status(data: _Pool, st: RuleState, table: pd.DataFrame) -> pd.DataFrame:
    """:meth:`Campaign.status` of a proxy campaign in this state (``table``: its proxy intervals)."""
    budget = data.spec.budget
    spent = budget is not None and int(st.labelled.sum()) >= int(budget)
    strata = data.design.strata
    frame = status_frame(st, strata.n_rows, spent)
    costs = np.ones(data.k) if strata.costs is None else np.asarray(strata.costs, dtype=float)
    frame["cost"] = frame["labelled"].to_numpy() * costs
    frame = frame.drop(columns=["pooled_mean", "pooled_lower", "pooled_upper"])  # raw counts: cell-biased
    frame["read"] = "proxy"
    frame["mean"] = table["rate"].to_numpy(float)
    frame["agreement"] = table["agreement"].to_numpy(float)
    frame["effective_labels"] = table["effective_labels"].to_numpy(float)
    return frame


def _one_memory(data: _Pool, seed: Any, true_rates: pd.Series, first: bool) -> Run:
    """One repeat in memory: what :func:`_one_file` does with a campaign file, decision for decision."""
    start = time.perf_counter()
    seq = seed_sequences(seed, 1)[0]
    rng = rule_generator(seq)
    order = proposal_order(data.design, seq)
    design = data.proxy_design(order)
    k = data.k
    s_k, n_k, lab = (np.zeros(k, np.int64) for _ in range(3))
    done = np.zeros(len(data.rids), dtype=bool)
    cells = _CellQueues(design, order, data.rids, data.success)
    if first and data.spec.goal.checks_feasibility:  # Campaign.create's warning, on the pool's cells
        design.feasibility(data.state(s_k, n_k, lab), data.codes, warn=True)

    def state() -> tuple[RuleState, pd.DataFrame]:
        st = data.state(s_k, n_k, lab)
        table = design.table(data.label_table(done), data.codes, data.level)
        st.use_intervals(table["lower"].to_numpy(float), table["upper"].to_numpy(float))
        if first:  # the campaign's status and proposal fit the pooled posterior: its warnings (said once)
            st.posterior  # noqa: B018
        return st, table

    st, table = state()
    trace: list[dict[str, Any]] = []
    rounds = 0
    while True:
        n = round_size(data.spec, st, data.spec.batch_size)
        if n == 0:
            break
        alloc = allocate(data.spec, st, n, random_seed=rng, design=data.design.strata)
        drawn = 0
        for j in np.flatnonzero(alloc > 0).tolist():
            rows = cells.draw(j, int(alloc[j]))
            drawn += rows.size
            done[rows] = True
            lab[j] += rows.size
            n_k[j] += int(data.trial[rows].sum())
            s_k[j] += int(data.success[rows].sum())
        if drawn == 0:
            break
        rounds += 1
        st, table = state()
        _, lo, hi = st.read_intervals()
        trace.append({"labels": int(lab.sum()), "max_halfwidth": float(pd.Series((hi - lo) / 2).max())})
    frame = _status(data, st, table)
    row, frame = _row(frame, true_rates, int(lab.sum()), st.goal.reached(st), rounds, start)
    return row, trace, frame


def replay_proxy(
    data: pd.DataFrame,
    truth: pd.Series,
    spec: CampaignSpec,
    specs: list[CampaignSpec],
    n_repeats: int,
    true_rates: pd.Series,
    bar: Any = None,
    *,
    files: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Run ``n_repeats`` proxy campaigns per rule; the run table, the trace and the final intervals.

    ``bar`` (a progress bar, optional) is advanced by one after each campaign. ``files=True``
    runs each repeat as a real campaign in a temporary file (the reference of the in-memory
    replay, same results); a pool whose true labels a campaign would refuse is always run so,
    to raise the campaign's error. Only these make a temporary folder.
    """
    pool = data.reset_index(drop=True)
    truth = pd.Series(np.asarray(truth), index=pool.index)
    seeds = [spec.random_seed, *seed_sequences(spec.random_seed, n_repeats)[1:]]
    rows: list[dict[str, Any]] = []
    trace: list[dict[str, Any]] = []
    finals = []
    with contextlib.ExitStack() as stack:
        folder = functools.cache(lambda: Path(stack.enter_context(tempfile.TemporaryDirectory())))
        for s in specs:
            memory = None if files else _Pool(pool, truth, s.for_pool(len(pool)))
            for r, seed in enumerate(seeds):
                with warnings.catch_warnings():
                    if rows:  # every repeat starts from the same pool: its feasibility is said once
                        warnings.simplefilter("ignore", PrecisionLimitedWarning)
                    if memory is not None and memory.ok:
                        seed = s.replace(random_seed=seed).random_seed
                        row, tr, st = _one_memory(memory, seed, true_rates, not rows)
                    else:
                        row, tr, st = _one_file(folder() / f"{s.rule_name}-{r}.db", pool, truth, s, seed, true_rates)
                rows.append({"rule": s.rule_name, "repeat": r, **row})
                trace.extend({"rule": s.rule_name, "repeat": r, **t} for t in tr)
                finals.append(st.reset_index().assign(rule=s.rule_name, repeat=r))
                if bar is not None:
                    bar.update(1)
    return pd.DataFrame(rows), pd.DataFrame(trace), pd.concat(finals, ignore_index=True)
