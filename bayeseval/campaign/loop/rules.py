"""Proposal rules of the active loop: how many labels each stratum gets next.

Every rule has the signature ``propose_allocation(state, batch_size, rng) -> pandas.Series``
(labels to request per stratum, aligned with ``state.strata``), reading a
:class:`~bayeseval.campaign.loop.rule_state.RuleState`.

Preposterior variance
---------------------
For ``theta ~ Beta(a, b)`` and ``m`` more Bernoulli trials, the expected posterior variance is
``Var(theta) * (a + b) / (a + b + m)`` (law of total variance; ``Var(E[theta | y]) =
Var(theta) * m / (a + b + m)``). For the hierarchical mixture the rule uses the effective
sample size ``n_eff = mean (1 - mean) / var - 1`` of each stratum's posterior, which includes
the strength borrowed from the other strata, so a small stratum that pooling already pins down
is asked for fewer labels. The expected half-width after ``t`` more trials is
``halfwidth * sqrt(n_eff / (n_eff + t))``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from bayeseval.campaign.loop.metric_states import MetricStates
from bayeseval.campaign.loop.rule_state import RuleState

__all__ = [
    "RULES",
    "get_rule",
    "expected_width",
    "independent_beta",
    "thompson",
    "neyman",
    "proportional",
    "uniform",
    "decision_allocation",
]


# rules
# ---------------------------------------------------------------------------------------
def _as_series(state: RuleState, counts: np.ndarray, rule: str) -> pd.Series:
    return pd.Series(counts.astype(np.int64), index=state.strata, name=rule)


def _greedy_width(state: RuleState, batch_size: int) -> np.ndarray:
    """Greedy batch with diminishing returns on the goal's gains (:meth:`Goal.gains
    <bayeseval.campaign.goals.goal.Goal.gains>`: the expected excess half-width, or variance)."""
    counts = np.zeros(len(state.strata), np.int64)
    gains = state.goal.gains(state)
    if gains.every is None:  # the width goals ("each", "overall") give it; deciding goals take _greedy_decision
        raise TypeError(f"the expected-width rules need a goal with every stratum's gain, got {state.goal!r}")
    if not gains.eligible.any():
        return counts
    cap = state.available.astype(np.int64).copy()
    t = (gains.p_trial * state.pending).astype(float)
    g = np.where(gains.eligible, gains.every(t), -np.inf)
    return _greedy_take(g, t, gains.p_trial, cap, batch_size, lambda j: gains.one(j, t[j]), counts)


def _greedy_take(
    g: np.ndarray,
    t: np.ndarray,
    p: np.ndarray,
    cap: np.ndarray,
    batch_size: int,
    gain_one: Callable[[int], float],
    counts: np.ndarray,
) -> np.ndarray:
    """Give ``batch_size`` labels one at a time to the largest gain (lowest index on ties).

    A heap of ``(-gain, stratum)``: only the chosen stratum's gain changes after a label, so
    each label costs ``O(log K)`` instead of a scan of every stratum.
    """
    live = np.flatnonzero(np.isfinite(g))
    if live.size > batch_size > 0:
        # a stratum is first chosen in the order of (-gain, index): the first batch_size in that order
        # are the only ones the batch can reach (a stratum's gain changes only once it is chosen)
        live = _first_in_order(-g[live], live, int(batch_size))
    heap = list(zip((-g[live]).tolist(), live.tolist(), strict=True))
    heapq.heapify(heap)
    for _ in range(batch_size):
        if not heap:
            break
        j = heapq.heappop(heap)[1]
        counts[j] += 1
        t[j] += p[j]
        if counts[j] < cap[j]:
            heapq.heappush(heap, (-float(gain_one(j)), j))
    return counts


def _first_in_order(key: np.ndarray, index: np.ndarray, m: int) -> np.ndarray:
    """The ``m`` entries of ``index`` (increasing) first in the order of ``(key, index)``, in increasing index."""
    cut = np.partition(key, m - 1)[m - 1]
    below = index[key < cut]
    at = index[key == cut][: m - below.size]  # ties at the cut: the lowest indices
    return np.sort(np.concatenate([below, at]))


# decision goals: the greedy batch on the goal's gains
# ---------------------------------------------------------------------------------------
def _greedy_decision(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> np.ndarray:
    """Greedy batch for goals ``"decide"`` and ``"gap"``: largest gain per unit cost first
    (the gains are the goal's, :meth:`~bayeseval.campaign.goals.goal.Goal.gains`)."""
    k = len(state.strata)
    cost = np.ones(k) if costs is None else np.asarray(costs, dtype=float)
    cap = state.available.astype(np.int64)
    counts = np.zeros(k, np.int64)
    gains = state.goal.gains(state, max(int(batch_size), 5))
    gain, p, eligible = gains.one, gains.p_trial, gains.eligible
    t = np.clip(state.p_trial(), 1e-6, 1.0) * state.pending
    g = np.array([gain(j, t[j]) / cost[j] if eligible[j] else -np.inf for j in range(k)])
    for _ in range(int(batch_size)):
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += p[j]
        g[j] = -np.inf if counts[j] >= cap[j] else gain(j, t[j]) / cost[j]
    return counts


def decision_allocation(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> pd.Series:
    """Labels per stratum for goals ``"decide"`` and ``"gap"`` (the rules' decision mode).

    Goal ``"decide"``: each label goes to the undecided stratum whose next label most reduces
    the expected excess of ``min(P(meets), 1 - P(meets))`` over ``1 - level`` (see
    :func:`bayeseval.campaign.goals.decide.decision_gains`), per unit of label cost; after each label that stratum's expected
    trials grow by ``P(trial)``, so a batch spreads over strata near a decision and leaves
    strata whose rate sits on the threshold for last. Goal ``"gap"``: the strata keeping the
    verdict undecided (:func:`bayeseval.campaign.goals.gap.gap_targets`) by expected half-width reduction.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``"decide"`` or ``"gap"``).
    batch_size : int
        Labels in the batch.
    costs : numpy.ndarray, optional
        Label cost per stratum (default 1 each).

    Returns
    -------
    pandas.Series
        Labels per stratum, at most the rows available.

    Examples
    --------
    Stratum 0 (no error in 100 against a 0.10 threshold) is decided and gets nothing:

    >>> st = RuleState.from_counts([0, 3, 9], [100, 30, 60], available=[500, 500, 500],
    ...                            model="independent", goal="decide", threshold=np.array([0.1] * 3))
    >>> st.decisions().tolist()
    ['meets', 'undecided', 'undecided']
    >>> a = decision_allocation(st, 20)
    >>> int(a.iloc[0]), int(a.sum())
    (0, 20)
    """
    return pd.Series(_greedy_decision(state, batch_size, costs), index=state.strata, name="decision")


def expected_width(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Greedy expected-width rule under the hierarchical posterior (the default).

    Each label goes to the stratum whose next label most reduces the expected excess of its
    credible-interval half-width over the target (goal ``"each"``; the sum over unfinished
    strata), or the weighted rate's expected posterior variance (goal ``"overall"``). After a
    label is assigned, that stratum's expected half-width is updated (diminishing returns),
    so one batch spreads over strata. For metrics whose trial status is only known after
    labelling the gain per label is ``P(trial) *`` the gain per trial.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
    >>> expected_width(st, 20, np.random.default_rng(0)).tolist()
    [20, 0]
    """
    if state.goal.decides:
        return _as_series(state, _greedy_decision(state, batch_size), "expected_width")
    return _as_series(state, _greedy_width(state, batch_size), "expected_width")


def independent_beta(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """The same greedy expected-width rule with independent ``Beta(1, 1)`` posteriors.

    The design of earlier active-assessment work (no pooling between strata); campaigns and
    simulations using it also judge the goal with the independent posteriors.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], model="independent")
    >>> int(independent_beta(st, 8, np.random.default_rng(0)).iloc[0])
    8
    """
    if state.model != "independent":
        state = _with_model(state, "independent")
    if state.goal.decides:
        return _as_series(state, _greedy_decision(state, batch_size), "independent_beta")
    return _as_series(state, _greedy_width(state, batch_size), "independent_beta")


def _with_model(state: RuleState, model: str) -> RuleState:
    return state.with_counts(model=model)


def thompson(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Thompson-style rule: each label goes to the stratum with the largest sampled need.

    For every label a grid point and rates are drawn from the posterior; the stratum whose
    sampled variance ``theta (1 - theta) / (n_eff + t + 1)`` (goal ``"overall"``: times the
    squared weight) is largest among strata not yet done gets it.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 1], [10, 10], available=[5, 50])
    >>> int(thompson(st, 30, np.random.default_rng(1)).iloc[0]) <= 5
    True
    """
    post = state.posterior
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64)
    eligible = cap > 0
    if state.goal.stops_strata:
        notdone = ~state.stratum_done()
        if (eligible & notdone).any():
            eligible &= notdone
    if not eligible.any() or batch_size == 0:
        return _as_series(state, counts, "thompson")
    neff = post.n_eff().to_numpy()
    p = np.clip(state.p_trial(), 1e-6, 1)
    t = p * state.pending
    theta = post.sample(batch_size, random_seed=rng)
    scale = state.weights**2 if state.goal.weighted else np.ones(k)
    for i in range(batch_size):
        score = np.where(eligible & (counts < cap), scale * theta[i] * (1 - theta[i]) / (neff + t + 1), -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
        t[j] += p[j]
    return _as_series(state, counts, "thompson")


def _greedy_priority(state: RuleState, batch_size: int, priority: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Fill the batch by largest ``priority / (n + 1)`` (gives allocations proportional to priority)."""
    k = len(state.strata)
    counts = np.zeros(k, np.int64)
    cap = state.available.astype(np.int64)
    eligible = eligible & (cap > 0) & (priority > 0)
    if not eligible.any():
        return counts
    n = (state.labelled + state.pending).astype(float)
    for _ in range(batch_size):
        score = np.where(eligible & (counts < cap), priority / (n + counts + 1.0), -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
    return counts


def neyman(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Neyman allocation on current posterior rates: labels proportional to ``w_k sd_k / sqrt(P(trial))``.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 30], [100, 100], available=[500, 500], weights=[0.5, 0.5])
    >>> a = neyman(st, 100, np.random.default_rng(0))
    >>> bool(a.iloc[1] > a.iloc[0])
    True
    """
    mean = state.posterior.mean().to_numpy()
    w = state.weights if state.goal.weighted else np.ones(len(state.strata))
    priority = w * np.sqrt(mean * (1 - mean)) / np.sqrt(np.clip(state.p_trial(), 1e-6, 1))
    eligible = np.ones(len(state.strata), bool)
    if state.goal.stops_strata:
        notdone = ~state.stratum_done()
        eligible = notdone if notdone.any() else eligible
    return _as_series(state, _greedy_priority(state, batch_size, priority, eligible), "neyman")


def proportional(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Proportional random labelling: rows drawn uniformly from the whole remaining pool.

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0], [0, 0], available=[900, 100])
    >>> int(proportional(st, 1000, np.random.default_rng(0)).sum())
    1000
    """
    cap = state.available.astype(np.int64)
    total = int(cap.sum())
    m = min(batch_size, total)
    if m == 0:
        return _as_series(state, np.zeros(len(cap), np.int64), "proportional")
    counts = rng.multivariate_hypergeometric(cap, m)
    return _as_series(state, counts, "proportional")


def uniform(state: RuleState, batch_size: int, rng: np.random.Generator) -> pd.Series:
    """Equal labels per stratum among strata not yet done (balancing labelled counts).

    Examples
    --------
    >>> st = RuleState.from_counts([0, 0, 0], [0, 0, 0], available=[900, 100, 2])
    >>> uniform(st, 12, np.random.default_rng(0)).tolist()
    [5, 5, 2]
    """
    eligible = np.ones(len(state.strata), bool)
    if state.goal.stops_strata and state.labelled.sum() > 0:
        notdone = ~state.stratum_done()
        eligible = notdone if notdone.any() else eligible
    priority = np.ones(len(state.strata))
    return _as_series(state, _greedy_priority(state, batch_size, priority, eligible), "uniform")


Rule = Callable[[RuleState, int, np.random.Generator], pd.Series]

#: rule name -> (function, posterior model used for the goal)
RULES: dict[str, tuple[Rule, str]] = {
    "expected_width": (expected_width, "auto"),
    "thompson": (thompson, "auto"),
    "neyman": (neyman, "auto"),
    "proportional": (proportional, "auto"),
    "uniform": (uniform, "auto"),
    "independent_beta": (independent_beta, "independent"),
}


def get_rule(rule: str | Rule) -> tuple[str, Rule, str]:
    """Resolve a rule name (or callable) to ``(name, function, model)``.

    Parameters
    ----------
    rule : str or callable
        A name among the built-in rules, or a function
        ``propose_allocation(state, batch_size, rng) -> pandas.Series``.

    Returns
    -------
    name : str
        The rule's name (a callable's ``__name__``).
    function : callable
        The allocation function.
    model : str
        The posterior model the rule uses (``"auto"`` for a callable).

    Raises
    ------
    ValueError
        When ``rule`` is not a known name.

    Examples
    --------
    >>> get_rule("expected_width")[0]
    'expected_width'
    """
    if callable(rule):
        return getattr(rule, "__name__", "custom"), rule, "auto"
    if not isinstance(rule, str) or rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid choices are {sorted(RULES)}")
    fn, model = RULES[rule]
    return rule, fn, model


# -- label costs and several metrics ---------------------------------------------------------
def _cost_gains(state: RuleState) -> tuple[Any, np.ndarray, np.ndarray]:
    """The width goals' gain of one more label per stratum (:meth:`Goal.gains
    <bayeseval.campaign.goals.goal.Goal.gains>` of ``Each`` or ``Overall``, the same as the
    ``expected_width`` rule's), as ``(gain(t), p_trial, eligible)``."""
    gains = state.goal.gains(state)
    return gains.every, gains.p_trial, gains.eligible


def cost_allocation(state: RuleState, n: int, costs: np.ndarray) -> np.ndarray:
    """Labels per stratum for a round of ``n`` when labels cost differently per stratum.

    Greedy with diminishing returns: each label in turn goes to the stratum with the largest
    expected gain (the ``expected_width`` rule's expected reduction of the excess half-width,
    or of the weighted rate's variance for goal ``"overall"``) divided by its label cost, and
    that stratum's expected trials grow by ``P(trial)``. With equal costs this is the
    ``expected_width`` allocation; a stratum ``r`` times as expensive gets a label only when
    its gain is ``r`` times as large.

    Parameters
    ----------
    state : RuleState
        The campaign's current state.
    n : int
        Labels in the round.
    costs : numpy.ndarray
        Label cost per stratum (> 0).

    Returns
    -------
    numpy.ndarray
        Integer labels per stratum, at most the rows available.

    Examples
    --------
    >>> st = RuleState.from_counts([5, 5], [50, 50], available=[500, 500], target_halfwidth=0.02)
    >>> a = cost_allocation(st, 10, np.array([1.0, 4.0]))
    >>> int(a.sum()), bool(a[0] > a[1])
    (10, True)
    """
    gain, p, eligible = _cost_gains(state)
    cap = state.available.astype(np.int64)
    counts = np.zeros(len(cap), np.int64)
    t = np.clip(state.p_trial(), 1e-6, 1.0) * state.pending
    for _ in range(int(n)):
        score = np.where(eligible & (counts < cap), gain(t) / costs, -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
        t = t.copy()
        t[j] += p[j]
    return counts


def _metric_gains(state: RuleState) -> tuple[Any, np.ndarray, np.ndarray]:
    """One metric's gain per further trial, its ``P(trial)`` and the strata it still needs."""
    gain, p, _ = _cost_gains(state)
    cap = state.available > 0
    if state.goal.weighted:
        _, lo, hi = state.overall()
        need = np.full(len(cap), (hi - lo) / 2 > state.target_halfwidth)
    else:
        need = ~state.stratum_done()
    return gain, p, need & cap


def metrics_allocation(states: MetricStates, n: int, costs: np.ndarray | None = None) -> np.ndarray:
    """Labels per stratum for a campaign on several metrics.

    Greedy with diminishing returns: each label goes to the stratum with the largest sum,
    over the metrics that still need it, of ``P(trial)`` times the expected gain of one more
    trial (the ``expected_width`` rule's expected reduction of the excess half-width, or of
    the weighted rate's variance for goal ``"overall"``; see :func:`cost_allocation`),
    divided by the stratum's label cost. After each label every metric's expected trials in
    that stratum grow by its ``P(trial)``, so a row that is a trial of both TPR and FPR with
    probabilities ``p`` and ``1 - p`` serves each in proportion.

    Parameters
    ----------
    states : MetricStates
        The campaign's state per metric.
    n : int
        Labels in the round.
    costs : numpy.ndarray, optional
        Label cost per stratum.

    Returns
    -------
    numpy.ndarray
        Integer labels per stratum, at most the rows available.

    Examples
    --------
    >>> tpr = RuleState.from_counts([20, 20], [25, 25], labelled=[100, 100], available=[500, 500],
    ...                             trial_known=False, target_halfwidth=0.05)
    >>> fpr = RuleState.from_counts([5, 30], [75, 75], labelled=[100, 100], available=[500, 500],
    ...                             trial_known=False, target_halfwidth=0.05)
    >>> int(metrics_allocation(MetricStates({"tpr": tpr, "fpr": fpr}), 20).sum())
    20
    """
    k = len(states.strata)
    cost = np.ones(k) if costs is None else np.asarray(costs, dtype=float)
    parts = [_metric_gains(st) for st in states.states.values()]
    cap = states.available.astype(np.int64)
    counts = np.zeros(k, np.int64)
    t = [np.clip(p, 1e-6, 1.0) * states.pending for _, p, _ in parts]
    wanted = np.any([need for _, _, need in parts], axis=0)
    if not wanted.any():
        wanted = cap > 0
    for _ in range(int(n)):
        score = np.zeros(k)
        for (gain, _, need), t_m in zip(parts, t, strict=True):
            score += np.where(need, gain(t_m), 0.0)
        score = np.where(wanted & (counts < cap), score / cost + 1e-12, -np.inf)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        counts[j] += 1
        for (_, p, _), t_m in zip(parts, t, strict=True):
            t_m[j] += p[j]
    return counts
