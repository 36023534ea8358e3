"""Replay labelling campaigns on data with known labels to compare proposal rules.

:func:`simulate` runs a :class:`~bayeseval.campaign.CampaignSpec` ``n_repeats`` times per rule in
memory (no SQLite), with an oracle that knows the true labels. It shares with
:class:`~bayeseval.campaign.Campaign` everything but the storage: the pool is read by the same
:func:`~bayeseval.campaign.loop.pool.design_pool`, each round's state, size and allocation come from
the same spec methods (so the stopping rule is the same), and rows are drawn in the same random order: repeat 0
with ``random_seed=s`` proposes exactly the rows of a campaign created with ``random_seed=s``
whose labeller answers with the true labels (:func:`~bayeseval.campaign.loop.pool.seed_sequences`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.moved import moved_keywords
from bayeseval._api.results import Result
from bayeseval._api.validation import check_class_labels, check_positive_int
from bayeseval._backends.narwhals_backend import pandas_frame
from bayeseval._kernels.guarantee import Guarantee
from bayeseval.campaign.fields import DEFAULTS
from bayeseval.campaign.goals.registry import goal_settings
from bayeseval.campaign.labels.label_set import py_scalar
from bayeseval.campaign.loop.metric_states import MetricStates
from bayeseval.campaign.loop.pool import (
    PoolDesign,
    check_columns,
    check_no_missing,
    design_pool,
    metric_flags,
    proposal_order,
    rule_generator,
    seed_sequences,
    spec_columns,
)
from bayeseval.campaign.loop.rounds import allocate, round_size, spec_state, spec_states
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.units import UnitDesign, unit_costs, units_meta, units_state
from bayeseval.campaign.settings import Budget, Score, flat_settings
from bayeseval.campaign.spec import CampaignSpec, entry_docs
from bayeseval.counts.design import Design
from bayeseval.counts.metrics import get_metric
from bayeseval.models.pooled import PooledModel

__all__ = ["simulate", "SimulationResult", "synthetic_pool", "plot_halfwidth"]

#: keywords simulate no longer takes, and where they moved
SIMULATE_MOVES = {
    "prior": "pass model=PooledModel(name, prior=...)",
    "batch_size": "pass budget=Budget(labels, batch_size=...)",
    "costs": "pass budget=Budget(labels, costs=...)",
    "score_bins": "pass score=Score(column, bins=...)",
    "spec": "pass the spec's settings, simulate(data, y_true=..., **spec.keywords('simulate'))",
}

#: rules compared when neither ``rules`` nor ``spec`` is given
#: rules worth comparing on a pool (``simulate(..., rules=COMPARED_RULES)``); by default only the spec's rule runs
COMPARED_RULES = ("expected_width", "independent_beta", "proportional")


class SimulationResult(Result):
    """Result of :func:`simulate`.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per (rule, repeat), see Attributes.
    trace : pandas.DataFrame
        One row per round.
    true_rates : pandas.Series
        The metric per stratum on the full data.
    settings : dict, optional
        The settings of the run.
    intervals : pandas.DataFrame, optional
        Final per-stratum results of every run.
    spec : CampaignSpec, optional
        The campaign specification replayed.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (rule, repeat): ``labels_used``, ``coverage`` (share of strata whose final
        read interval, the one the stratum stops on and ``evaluate`` tells users to read,
        contains the true rate computed from the full data),
        ``reached_goal``, ``rounds``, ``max_halfwidth`` at stop, ``overall_covered`` (goal
        ``"overall"``: whether the weighted rate's interval covers the true weighted rate)
        and ``wall_time`` in seconds. Goal ``"decide"`` adds ``decided`` (strata decided at
        stop) and ``wrong_decisions`` (decided strata whose decision the true rate
        contradicts: ``"at the threshold"`` is wrong when the true rate is more than the
        ``margin`` from the threshold); goal ``"gap"`` adds ``verdict``, ``true_gap`` and ``wrong_verdict``.
    trace : pandas.DataFrame
        One row per round: ``rule``, ``repeat``, ``labels``, ``max_halfwidth`` (of the strata,
        or of the weighted rate for goal ``"overall"``).
    true_rates : pandas.Series
        The metric per stratum on the full data.
    intervals : pandas.DataFrame
        Final per-stratum results of every run: ``rule``, ``repeat``, ``stratum``,
        ``labelled``, ``trials``, ``lower``, ``upper`` (the interval the stratum reads),
        ``mean`` (that interval's point estimate, as in ``Campaign.status()``), ``read`` (which one: ``"pooled"`` or ``"own"`` under ``guarantee="average"``),
        ``true_rate``, ``covered`` (by ``lower``/``upper``); with ``guarantee="stratum"`` the
        columns of ``Campaign.status()``: ``lower`` and ``upper`` are the guaranteed interval
        (``read`` is ``"guaranteed"``; ``"anytime"``, the confidence sequence, with
        ``guarantee="anytime"``; ``"pool"``, the pool rate's exact interval, with
        ``design=Design(population="pool")``), ``pooled_mean``, ``pooled_lower``, ``pooled_upper`` the pooled
        posterior; and for goal ``"decide"`` ``p_meets`` and ``decision`` at stop, and ``metric`` (a
        campaign on several metrics has one line per stratum and metric).
    settings : dict
        The settings of the run (the spec's fields, ``rules`` and ``n_repeats``).
    spec : CampaignSpec or None
        The campaign specification replayed.

    Examples
    --------
    >>> from bayeseval.campaign import Each
    >>> pool = synthetic_pool(n_rows=20_000, n_strata=4, random_seed=0)
    >>> res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth",
    ...                rules=["uniform"], n_repeats=1, goal=Each(0.1), random_seed=0,
    ...                progress=False)
    >>> bool(res.table["reached_goal"].all())
    True
    """

    def __init__(
        self,
        table: pd.DataFrame,
        trace: pd.DataFrame,
        true_rates: pd.Series,
        settings: dict[str, Any] | None = None,
        intervals: pd.DataFrame | None = None,
        spec: CampaignSpec | None = None,
    ) -> None:
        self._runs = table
        self.trace = trace
        self.true_rates = true_rates
        self.settings = {} if settings is None else settings
        self.intervals = intervals
        self.spec = spec

    @property
    def table(self) -> pd.DataFrame:
        """One row per (rule, repeat) run (see the class docstring)."""
        return self._runs

    def summary(self) -> pd.DataFrame:
        """Per rule: mean and sd of labels used, mean coverage, share reaching the goal, mean wall time.

        Returns
        -------
        pandas.DataFrame
            Indexed by rule: ``labels_mean``, ``labels_sd``, ``coverage``, ``reached_goal``,
            ``wall_time``.
        """
        g = self.table.groupby("rule", sort=False)
        return pd.DataFrame(
            {
                "labels_mean": g["labels_used"].mean(),
                "labels_sd": g["labels_used"].std(),
                "coverage": g["coverage"].mean(),
                "reached_goal": g["reached_goal"].mean(),
                "wall_time": g["wall_time"].mean(),
            }
        )

    def plot(self, ax: Any = None) -> Any:
        """Half-width against labels per rule (see :func:`plot_halfwidth`).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Axes to draw on; default a new figure.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        return plot_halfwidth(self, ax=ax)


def synthetic_pool(
    n_rows: int = 200_000,
    n_strata: int = 12,
    *,
    mean_rate: float = 0.12,
    concentration: float = 40.0,
    size_ratio: float = 100.0,
    random_seed: Any = None,
) -> pd.DataFrame:
    """A pool with known labels: strata of very unequal sizes and error rates.

    Stratum shares fall geometrically so the largest is ``size_ratio`` times the smallest;
    error rates are drawn from ``Beta(mean_rate * concentration, (1 - mean_rate) *
    concentration)`` (the hierarchical model's population). Binary truth and predictions.

    Parameters
    ----------
    n_rows : int
        Number of rows.
    n_strata : int
        Number of strata.
    mean_rate : float
        Mean error rate of the strata.
    concentration : float
        Concentration of the Beta population of error rates (larger: more similar strata).
    size_ratio : float
        Size of the largest stratum over the smallest.
    random_seed : int, optional
        Seed of the random generator.

    Returns
    -------
    pandas.DataFrame
        Columns ``stratum``, ``truth``, ``pred``, ``score`` (a noisy top-class probability),
        indexed by row id.

    Examples
    --------
    >>> pool = synthetic_pool(n_rows=1000, n_strata=3, random_seed=1)
    >>> sorted(pool.columns)
    ['pred', 'score', 'stratum', 'truth']
    """
    n_rows = check_positive_int(n_rows, "n_rows")
    n_strata = check_positive_int(n_strata, "n_strata")
    rng = np.random.default_rng(random_seed)
    shares = size_ratio ** (-np.arange(n_strata) / max(n_strata - 1, 1))
    shares /= shares.sum()
    rates = rng.beta(mean_rate * concentration, (1 - mean_rate) * concentration, n_strata)
    sizes = rng.multinomial(n_rows, shares)
    strata = np.repeat([f"s{i:02d}" for i in range(n_strata)], sizes)
    err = rng.random(n_rows) < np.repeat(rates, sizes)
    truth = rng.integers(0, 2, n_rows)
    pred = np.where(err, 1 - truth, truth)
    score = np.clip(1 - np.repeat(rates, sizes) + rng.normal(0, 0.05, n_rows), 0.5, 1.0)
    return pd.DataFrame(
        {"stratum": strata, "truth": truth, "pred": pred, "score": score},
        index=pd.RangeIndex(n_rows, name="row_id"),
    )


@moved_keywords("simulate", SIMULATE_MOVES)
@entry_docs
def simulate(
    data: pd.DataFrame,
    *,
    strata: str | Sequence[str] | None = None,
    y_pred: str | None = None,
    y_true: str | None = None,
    metric: str = DEFAULTS["metric"],
    level: float = DEFAULTS["level"],
    rules: Sequence[Any] | None = None,
    n_repeats: int = 10,
    budget: int | Budget | None = DEFAULTS["budget"],
    goal: Any = DEFAULTS["goal"],
    weights: Any = DEFAULTS["weights"],
    score: str | Score | None = DEFAULTS["score"],
    pos_label: Any = DEFAULTS["pos_label"],
    label_set: Sequence[Any] | None = DEFAULTS["label_set"],
    model: str | PooledModel = DEFAULTS["model"],
    guarantee: str | Guarantee = DEFAULTS["guarantee"],
    proxy: str | None = DEFAULTS["proxy"],
    design: Design | dict[str, Any] | None = DEFAULTS["design"],
    random_seed: Any = DEFAULTS["random_seed"],
    progress: bool = True,
) -> SimulationResult:
    """Replay labelling campaigns with an oracle and compare proposal rules.

    Parameters
    ----------
    data : pandas.DataFrame or another frame narwhals reads
        Rows with stratum columns, the prediction and the true label (a polars, pyarrow, Dask...
        frame is collected into pandas; its rows' ids are their positions). A missing value
        (None, NaN, ``pd.NA``) in any of them is a ``ValueError`` naming the argument and
        the row ids.
    y_true : str
        Column with the true label, the oracle's answer.
    rules : sequence of str or callable, optional
        Rules to compare (see :data:`bayeseval.campaign.RULES`); default ``expected_width``
        alone (a spec's rule with ``**spec.keywords("simulate")``). Comparing costs one
        set of campaigns per rule: ``rules=COMPARED_RULES`` (``expected_width``,
        ``independent_beta``, ``proportional``) is the usual comparison.
    n_repeats : int
        Campaigns per rule. Repeat 0 uses ``random_seed`` as a
        campaign would, the others independent child seeds; every rule sees the same row
        order in a repeat (common random numbers).
    {spec_parameters}
    progress : bool
        Show a tqdm progress bar, one step per campaign replayed (with ``proxy`` each repeat
        replays the campaign in memory, repeat 0 the one created with ``random_seed``).
        A 20,000-row pool takes about 10-60 s with the defaults (one rule, 10 repeats, batch
        size scaled to the pool) on two loaded cores; each further rule in ``rules`` as long again.

    Returns
    -------
    SimulationResult
        ``.table`` (one row per rule and repeat), ``.trace`` (half-width per round),
        ``.intervals`` (final per-stratum intervals), ``.summary()`` and ``.plot()``.

    Examples
    --------
    >>> from bayeseval.campaign import Each
    >>> pool = synthetic_pool(n_rows=20_000, n_strata=4, random_seed=0)
    >>> res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth",
    ...                rules=["expected_width"], n_repeats=1, goal=Each(0.1),
    ...                random_seed=0, progress=False)
    >>> list(res.table.columns)[:4]
    ['rule', 'repeat', 'labels_used', 'coverage']
    """
    spec = CampaignSpec(
        strata=strata,  # type: ignore[arg-type]  # the spec reads a column or a list of columns
        y_pred=y_pred,  # type: ignore[arg-type]  # the spec refuses None, naming it
        metric=metric,
        level=level,
        goal=goal,
        weights=weights,
        pos_label=pos_label,
        label_set=label_set,  # type: ignore[arg-type]
        guarantee=guarantee,  # type: ignore[arg-type]  # a name at the API edge, an object once built
        proxy=proxy,
        design=design,  # type: ignore[arg-type]
        random_seed=random_seed,
        **flat_settings(model=model, budget=budget, score=score),
    )
    return simulate_spec(data, spec, y_true=y_true, rules=rules, n_repeats=n_repeats, progress=progress)


def simulate_spec(
    data: Any, spec: CampaignSpec, *, y_true: Any, rules: Any = None, n_repeats: int = 10, progress: bool = True
) -> SimulationResult:
    """:func:`simulate` of a :class:`~bayeseval.campaign.CampaignSpec` (its keywords formed into one).

    Parameters
    ----------
    data : pandas.DataFrame or another frame narwhals reads
        As for :func:`simulate`.
    spec : CampaignSpec
        The campaign's settings.
    y_true, rules, n_repeats, progress
        As for :func:`simulate`.

    Returns
    -------
    SimulationResult
        As :func:`simulate` returns it.
    """
    data = pandas_frame(data)
    if spec.design.inclusion is not None:
        raise ValueError(
            f"simulate draws its own labels at random within the strata; design.inclusion="
            f"{spec.design.inclusion!r} describes labels given to Campaign.create(labels=...)"
        )
    if hasattr(data, "__len__"):
        cluster = spec.design.cluster
        spec = spec.for_pool(len(data) if cluster is None or cluster not in data.columns else data[cluster].nunique())
    n_repeats = check_positive_int(n_repeats, "n_repeats")
    specs = _rule_specs(spec, rules)
    oracle = _oracle(data, spec, y_true)
    if spec.proxy is not None:
        from bayeseval.campaign.proxy_replay import replay_proxy

        with _progress(progress, n_repeats * len(specs)) as bar:
            table, trace, finals = replay_proxy(data, data[y_true], spec, specs, n_repeats, oracle.true_rates, bar)
        settings_out = {**spec.to_config(), "rules": [s.rule_name for s in specs], "n_repeats": n_repeats}
        return SimulationResult(table, trace, oracle.true_rates, settings_out, finals, spec)
    if spec.design.cluster is not None and _by_unit(data, spec.design.cluster, oracle):
        runs = _replay_all(specs, oracle, n_repeats, progress, units=data[spec.design.cluster])
    else:
        runs = _replay_all(specs, oracle, n_repeats, progress)
    return _result(runs, oracle, spec, specs, n_repeats)


def _by_unit(data: pd.DataFrame, cluster: str, oracle: _Oracle) -> bool:
    """Check the units as a campaign does; whether one has several eligible rows (else rows are units)."""
    units_meta(data, cluster, list(data.index), oracle.design.codes)  # the campaign's checks, naming design.cluster
    eligible = data[cluster][oracle.design.eligible]
    return bool(eligible.duplicated().any())


# -- the oracle: the pool with its true labels ---------------------------------------------
@dataclass
class _Oracle:
    design: PoolDesign
    trial: np.ndarray
    success: np.ndarray
    true_rates: pd.Series
    true_overall: float
    #: a campaign on several metrics: every metric's oracle (the first is this one's flags)
    by_metric: dict[str, _Oracle] | None = None

    def queues(self, order: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per stratum, the trial and success flags of its eligible rows in proposal order."""
        return [(self.trial[rows].astype(np.int64), self.success[rows].astype(np.int64)) for rows in order]


def _oracle(data: Any, spec: CampaignSpec, y_true: Any) -> _Oracle:
    """Validate the data and compute the true flags and rates (missing values name row ids)."""
    if not isinstance(y_true, str):
        raise TypeError(f"y_true must be a column name (str), got {y_true!r}")
    named = [("y_true", y_true), *spec_columns(spec)]
    check_columns(data, named, "data")
    check_no_missing(data, [n for n in named if n[0] != "score"], "simulating")
    truth = data[y_true]
    check_class_labels(pd.unique(truth), "y_true", y_true)
    design = design_pool(spec, data, extra_labels=[py_scalar(v) for v in pd.unique(truth)])
    known, _, invalid = design.labels.normalise_many(truth)
    if invalid.any():
        ids = data.index[invalid][:10].tolist()
        raise ValueError(
            f"y_true column {y_true!r} has labels outside label_set {design.labels.values} at row ids {ids}"
        )
    oracles = {m: _metric_oracle(design, m, known) for m in spec.metrics}
    first = oracles[spec.metrics[0]]
    if len(oracles) > 1:
        first.by_metric = oracles
    return first


def _metric_oracle(design: PoolDesign, metric: str, known: np.ndarray) -> _Oracle:
    """The true flags and rates of one metric."""
    trial, success = metric_flags(get_metric(metric), known, design.y_pred, design.positive)
    k = len(design.keys)
    true_s = np.bincount(design.codes, weights=success, minlength=k)
    true_n = np.bincount(design.codes, weights=trial, minlength=k)
    rates = np.where(true_n > 0, true_s / np.maximum(true_n, 1), np.nan)
    true_rates = pd.Series(rates, index=design.strata.strata, name="rate")
    true_overall = float(np.nansum(design.strata.weights * rates))
    return _Oracle(design, trial, success, true_rates, true_overall)


def _rule_specs(spec: CampaignSpec, rules: Any) -> list[CampaignSpec]:
    """One spec per rule compared: ``rules``, else the spec's rule alone."""
    if rules is None:
        rules = (spec.rule,)
    if isinstance(rules, str) or callable(rules):
        rules = [rules]
    return [spec.replace(rule=rule) for rule in rules]


# -- one campaign --------------------------------------------------------------------------
@dataclass
class _Run:
    rule: str
    repeat: int
    state: RuleState | MetricStates
    labelled: np.ndarray
    trials: np.ndarray
    rounds: int
    wall_time: float
    trace: list[tuple[str, int, int, float]]
    #: a clustered campaign (``design.cluster``): units labelled per stratum
    units: np.ndarray | None = None


def _max_halfwidth(state: RuleState) -> float:
    """The half-width the goal is about: the widest read interval's, or the weighted rate's."""
    if state.goal.weighted:
        _, lo, hi = state.overall()
        return (hi - lo) / 2
    return float(np.max(state.read_halfwidths()))


def _replay(spec: CampaignSpec, oracle: _Oracle, queues: Any, rng: np.random.Generator, repeat: int) -> _Run:
    """Run one campaign: state, stop check, allocation and draws, round after round."""
    if isinstance(queues, dict):
        return _replay_metrics(spec, oracle, queues, rng, repeat)
    design = oracle.design.strata
    k = len(queues)
    s_k, n_k, lab = (np.zeros(k, np.int64) for _ in range(3))
    trace: list[tuple[str, int, int, float]] = []
    rounds, t0 = 0, time.perf_counter()
    while True:
        st = spec_state(spec, design, successes=s_k.copy(), trials=n_k.copy(), labelled=lab.copy(), pending=np.zeros(k))
        trace.append((spec.rule_name, repeat, int(lab.sum()), _max_halfwidth(st)))
        n = round_size(spec, st)
        alloc = allocate(spec, st, n, random_seed=rng, design=design) if n else np.zeros(k, np.int64)
        if alloc.sum() == 0:
            break
        for j in np.flatnonzero(alloc):
            trial, success = queues[j]
            n_k[j] += int(trial[lab[j] : lab[j] + alloc[j]].sum())
            s_k[j] += int(success[lab[j] : lab[j] + alloc[j]].sum())
            lab[j] += int(alloc[j])
        rounds += 1
    return _Run(spec.rule_name, repeat, st, lab, n_k, rounds, time.perf_counter() - t0, trace)


def _replay_metrics(
    spec: CampaignSpec, oracle: _Oracle, queues: dict[str, list[Any]], rng: np.random.Generator, repeat: int
) -> _Run:
    """One campaign on several metrics: each labelled row counts for every metric it is a trial of."""
    design = oracle.design.strata
    k = len(design.strata)
    counts = {m: (np.zeros(k, np.int64), np.zeros(k, np.int64)) for m in queues}
    lab = np.zeros(k, np.int64)
    trace: list[tuple[str, int, int, float]] = []
    rounds, t0 = 0, time.perf_counter()
    while True:
        st = spec_states(
            spec,
            design,
            counts={m: (s.copy(), n.copy()) for m, (s, n) in counts.items()},
            labelled=lab.copy(),
            pending=np.zeros(k),
        )
        trace.append((spec.rule_name, repeat, int(lab.sum()), float(np.max(st.read_halfwidths()))))
        n = round_size(spec, st)
        alloc = allocate(spec, st, n, random_seed=rng, design=design) if n else np.zeros(k, np.int64)
        if alloc.sum() == 0:
            break
        for j in np.flatnonzero(alloc):
            for m, (s_k, n_k) in counts.items():
                trial, success = queues[m][j]
                n_k[j] += int(trial[lab[j] : lab[j] + alloc[j]].sum())
                s_k[j] += int(success[lab[j] : lab[j] + alloc[j]].sum())
            lab[j] += int(alloc[j])
        rounds += 1
    return _Run(spec.rule_name, repeat, st, lab, lab.copy(), rounds, time.perf_counter() - t0, trace)


def _unit_design(oracle: _Oracle, order: list[np.ndarray], units: np.ndarray, ids: pd.Index) -> UnitDesign:
    """The units of the eligible rows, ranked as a campaign with the same row order ranks them.

    Its ``rids`` are the data's row ids (a unit is ranked by its row of smallest id, as in a
    campaign); ``row_unit`` is aligned to the eligible rows in data order.
    """
    design = oracle.design
    place = np.zeros(len(design.codes), dtype=np.int64)
    for queue in order:
        place[queue] = np.arange(len(queue))
    rows = np.flatnonzero(design.eligible)
    return UnitDesign.build(ids[rows], units[rows], design.codes[rows], place[rows], len(design.keys))


def _replay_units(
    spec: CampaignSpec, oracle: _Oracle, units: UnitDesign, rng: np.random.Generator, repeat: int
) -> _Run:
    """One clustered campaign: whole units drawn in their stratum's order, each stratum on its units interval."""
    design = oracle.design.strata
    k = len(design.strata)
    rows = np.flatnonzero(oracle.design.eligible)  # the eligible rows, as the units' rows are aligned
    unit_successes = np.bincount(units.row_unit, weights=oracle.success[rows], minlength=units.unit_rows.size)
    unit_trials = np.bincount(units.row_unit, weights=oracle.trial[rows], minlength=units.unit_rows.size)
    queues = [units.proposal_queue(j) for j in range(k)]
    lab = np.zeros(k, np.int64)
    unit_round = np.zeros(units.unit_rows.size, np.int64)  # the round a unit was labelled in (its arrival)
    trace: list[tuple[str, int, int, float]] = []
    rounds, t0 = 0, time.perf_counter()
    while True:
        taken = np.concatenate([queues[j][: lab[j]] for j in range(k)]) if k else np.zeros(0, np.int64)
        done = pd.DataFrame(
            {
                "stratum": units.unit_stratum[taken],
                "rows": units.unit_rows[taken],
                "successes": unit_successes[taken],
                "trials": unit_trials[taken].astype(np.int64),
                "complete": True,
                "pending": False,
                "round": unit_round[taken],
                "rank": units.unit_rank[taken],
            }
        )
        st, _ = units_state(spec, design, done, units.n_units, units.pool_table())
        at = done["stratum"].to_numpy(np.int64)
        n_rows = np.bincount(at, weights=done["rows"], minlength=k).astype(np.int64)
        n_trials = np.bincount(at, weights=done["trials"], minlength=k).astype(np.int64)
        trace.append((spec.rule_name, repeat, int(n_rows.sum()), _max_halfwidth(st)))
        n = round_size(spec, st)
        priced = design
        if design.costs is not None:  # a unit costs its rows' labels
            free = np.ones(units.unit_rows.size, bool)
            free[taken] = False
            costs = unit_costs(design.costs, units.unit_rows, units.unit_stratum, free, k)
            priced = dataclasses.replace(design, costs=costs)
        alloc = allocate(spec, st, n, random_seed=rng, design=priced) if n else np.zeros(k, np.int64)
        if alloc.sum() == 0:
            break
        rounds += 1
        for j in np.flatnonzero(alloc):
            unit_round[queues[j][lab[j] : lab[j] + alloc[j]]] = rounds
        lab += alloc
    return _Run(spec.rule_name, repeat, st, n_rows, n_trials, rounds, time.perf_counter() - t0, trace, lab)


def _queues(oracle: _Oracle, order: list[np.ndarray]) -> Any:
    """The flags in proposal order: a list per stratum, or a dict of them per metric."""
    if oracle.by_metric:
        return {m: o.queues(order) for m, o in oracle.by_metric.items()}
    return oracle.queues(order)


def _replay_all(
    specs: list[CampaignSpec], oracle: _Oracle, n_repeats: int, progress: bool, units: pd.Series | None = None
) -> list[_Run]:
    """Every (repeat, rule) campaign; the rules of a repeat share its row order and rule stream.

    With ``units`` (each data row's unit, ``design.cluster``) every campaign samples whole units.
    """
    runs = []
    with _progress(progress, n_repeats * len(specs)) as bar:
        for r, seed in enumerate(seed_sequences(specs[0].random_seed, n_repeats)):
            order = proposal_order(oracle.design, seed)
            if units is not None:
                unit_design = _unit_design(oracle, order, units.to_numpy(dtype=object), units.index)
                for rule_spec in specs:
                    runs.append(_replay_units(rule_spec, oracle, unit_design, rule_generator(seed), r))
                    bar.update(1)
                continue
            queues = _queues(oracle, order)
            for rule_spec in specs:
                runs.append(_replay(rule_spec, oracle, queues, rule_generator(seed), r))
                bar.update(1)
    return runs


# -- collecting the runs -------------------------------------------------------------------
def _run_row(run: _Run, oracle: _Oracle, target: float) -> dict[str, Any]:
    """The run's line of ``SimulationResult.table``."""
    if isinstance(run.state, MetricStates):
        by_metric = oracle.by_metric or {}  # set for a campaign on several metrics
        rows = [
            _run_row(
                _Run(run.rule, run.repeat, st, run.labelled, run.trials, run.rounds, run.wall_time, []),
                by_metric[m],
                target,
            )
            for m, st in run.state.states.items()
        ]
        return {
            **rows[0],
            "coverage": float(np.mean([r["coverage"] for r in rows])),
            "reached_goal": all(r["reached_goal"] for r in rows),
            "max_halfwidth": max(r["max_halfwidth"] for r in rows),
            "overall_covered": all(r["overall_covered"] for r in rows) if run.state.goal.weighted else np.nan,
        }
    st = run.state
    _, lo, hi = st.read_intervals()  # the interval each stratum reads
    tr = oracle.true_rates.to_numpy()
    ok = ~np.isnan(tr)
    covered = (lo[ok] <= tr[ok]) & (tr[ok] <= hi[ok])
    hw = (hi - lo) / 2
    overall_cov: bool | float  # NaN unless the goal has an overall interval
    if st.goal.weighted:
        _, olo, ohi = st.overall()
        reached, overall_cov = (ohi - olo) / 2 <= target, bool(olo <= oracle.true_overall <= ohi)
    elif st.goal.decides:  # every stratum decided (the gap verdict), not stopped for want of rows
        reached, overall_cov = st.goal.reached(st), np.nan
    else:
        reached, overall_cov = bool(np.all(hw <= target)), np.nan
    extra = st.goal.simulation_fields(st, tr)
    return {
        "rule": run.rule,
        "repeat": run.repeat,
        "labels_used": int(run.labelled.sum()),
        "coverage": float(covered.mean()) if covered.size else np.nan,
        "reached_goal": bool(reached),
        "rounds": run.rounds,
        "max_halfwidth": float(hw.max()),
        "overall_covered": overall_cov,
        "wall_time": run.wall_time,
        **({} if run.units is None else {"units_used": int(run.units.sum())}),
        **extra,
    }


def _final_rows(run: _Run, oracle: _Oracle, metric: str | None = None) -> list[tuple[Any, ...]]:
    """The run's lines of ``SimulationResult.intervals`` (one per stratum, and metric)."""
    if isinstance(run.state, MetricStates):
        by_metric = oracle.by_metric or {}  # set for a campaign on several metrics
        out = []
        for m, st in run.state.states.items():
            sub = _Run(run.rule, run.repeat, st, run.labelled, st.trials, run.rounds, run.wall_time, [])
            out += _final_rows(sub, by_metric[m], m)
        return out
    plo, phi = run.state.intervals()
    st = run.state
    read, lo, hi = st.read_intervals()  # coverage is judged on the interval the stratum reads
    mean, pooled_mean = st.read_means(), st.posterior.mean().to_numpy()
    tr = oracle.true_rates.to_numpy()
    k = len(tr)
    decision = st.goal.status_columns(st)  # goal Decide: each stratum's P(meets) and decision
    made, p = decision.get("decision", np.full(k, None)), decision.get("p_meets", np.full(k, np.nan))
    if run.units is not None:  # P(meets) is the row model's: a clustered campaign decides on its units intervals
        p = np.full(k, np.nan)
    return [
        (
            run.rule,
            run.repeat,
            label,
            int(run.labelled[j]),
            int(run.trials[j]),
            mean[j],
            lo[j],
            hi[j],
            read[j],
            tr[j],
            bool(lo[j] <= tr[j] <= hi[j]) if not np.isnan(tr[j]) else np.nan,
            p[j],
            made[j],
            metric,
            pooled_mean[j],
            plo[j],
            phi[j],
        )
        for j, label in enumerate(oracle.true_rates.index)
    ]


def _result(
    runs: list[_Run], oracle: _Oracle, spec: CampaignSpec, specs: list[CampaignSpec], n_repeats: int
) -> SimulationResult:
    table = pd.DataFrame([_run_row(run, oracle, goal_settings(spec.goal)["target_halfwidth"]) for run in runs])
    table = table.sort_values(["rule", "repeat"], kind="stable").reset_index(drop=True)
    trace = pd.DataFrame([t for run in runs for t in run.trace], columns=["rule", "repeat", "labels", "max_halfwidth"])
    intervals = pd.DataFrame(
        [row for run in runs for row in _final_rows(run, oracle, spec.metrics[0])],
        columns=[
            "rule",
            "repeat",
            "stratum",
            "labelled",
            "trials",
            "mean",
            "lower",
            "upper",
            "read",
            "true_rate",
            "covered",
            "p_meets",
            "decision",
            "metric",
            "pooled_mean",
            "pooled_lower",
            "pooled_upper",
        ],
    )
    if spec.design.cluster is not None:  # the columns of status(): a row model is not the units'
        intervals = intervals.drop(columns=["pooled_mean", "pooled_lower", "pooled_upper"])
    elif not (spec.guarantee.per_stratum and spec.goal.per_stratum):  # the columns of status()
        intervals = intervals.drop(columns=["pooled_mean", "pooled_lower", "pooled_upper"])
    settings = {**spec.to_config(), "rules": [s.rule_name for s in specs], "n_repeats": n_repeats}
    settings["random_seed"] = spec.random_seed
    true_rates = oracle.true_rates
    if oracle.by_metric:
        true_rates = pd.concat({m: o.true_rates for m, o in oracle.by_metric.items()}, names=["metric"])
    return SimulationResult(table, trace, true_rates, settings=settings, intervals=intervals, spec=spec)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def _progress(show: bool, total: int) -> Any:
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="simulating campaigns", leave=False)


def plot_halfwidth(result: SimulationResult, ax: Any = None) -> Any:
    """Plot the largest credible-interval half-width against labels used, per rule.

    Hands off to :func:`bayeseval.plots.halfwidth_curve` (median over repeats with a
    10-90% band, the target as a dotted line, symmetric-log label axis).

    Parameters
    ----------
    result : SimulationResult
        The simulation to plot.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; default a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from bayeseval.campaign import Each
    >>> pool = synthetic_pool(n_rows=5_000, n_strata=3, random_seed=0)
    >>> res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth",
    ...                rules=["uniform"], n_repeats=1, goal=Each(0.15), progress=False)
    >>> ax = plot_halfwidth(res)
    >>> ax.get_xlabel()
    'labels'
    """
    from bayeseval.plots import halfwidth_curve

    return halfwidth_curve(result, logx=True, ax=ax)
