"""A campaign's round: the state its spec sees, the labels to ask for and where they go.

A :class:`~bayeseval.campaign.spec.CampaignSpec` is the campaign's settings; these functions put
them to work on the counts, the same way for a real campaign
(:class:`~bayeseval.campaign.Campaign`) and a simulated one
(:func:`~bayeseval.campaign.simulation.simulate`), so the two cannot drift apart:
:func:`spec_state` (or :func:`spec_states` for several metrics) builds the rule's view of the
counts, :func:`round_size` says how many labels to ask for next, and :func:`allocate` spreads
them over the strata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from bayeseval.campaign.fields import BATCH_BOUNDS
from bayeseval.campaign.goals.registry import goal_settings
from bayeseval.campaign.loop.metric_states import MetricStates
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.rules import cost_allocation, decision_allocation, get_rule, metrics_allocation
from bayeseval.campaign.loop.state import CampaignState, StrataDesign
from bayeseval.counts.metrics import get_metric

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.campaign.spec import CampaignSpec

__all__ = ["spec_state", "spec_states", "round_size", "allocate"]


def spec_state(
    spec: CampaignSpec,
    design: StrataDesign,
    *,
    successes: Any,
    trials: Any,
    labelled: Any,
    pending: Any,
    metric: str | None = None,
) -> RuleState:
    """The rule's view of a campaign: counts per stratum plus the spec's goal and model.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    design : StrataDesign
        The strata, their eligible rows, weights and prior means
        (:func:`~bayeseval.campaign.loop.pool.design_pool`).
    successes, trials, labelled, pending : array-like
        Per stratum: counted successes and trials, labelled rows and pending proposals.
    metric : str, optional
        One metric of a campaign on several metrics: its trial status is then known
        before labelling only when every row is a trial (the eligible rows are those of
        any of the metrics).

    Returns
    -------
    RuleState
        With the rows still available, the population weights, the target, level, goal,
        model (``"independent"`` for a rule that asks for it), prior and guarantee.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.campaign import CampaignSpec, Each
    >>> design = StrataDesign(pd.Index(["a", "b"]), n_rows=np.array([500, 500]), n_eligible=np.array([500, 500]),
    ...                       weights=np.array([0.5, 0.5]), prior_mean=None)
    >>> spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.05), batch_size=20)
    >>> st = spec_state(spec, design, successes=[1, 5], trials=[40, 40], labelled=[40, 40], pending=[0, 10])
    >>> st.available.tolist(), st.goal, st.guarantee
    ([460, 450], Each(halfwidth=0.05), Guarantee.stratum())
    """
    labelled = np.asarray(labelled, dtype=np.int64)
    pending = np.asarray(pending, dtype=np.int64)
    rule_model = get_rule(spec.rule)[2]
    trial_known = not get_metric(spec.metrics[0]).trials_need_truth
    if metric is not None:
        trial_known = get_metric(metric).trials == "all"
    goal = goal_settings(spec.goal)
    counts = CampaignState(
        strata=design.strata,
        successes=np.asarray(successes, dtype=np.int64),
        trials=np.asarray(trials, dtype=np.int64),
        labelled=labelled,
        pending=pending,
        available=np.maximum(design.n_eligible - labelled - pending, 0),
        weights=design.weights,
        trial_known=trial_known,
        model="independent" if rule_model == "independent" else spec.model,
        prior=spec.prior,
        prior_mean=design.prior_mean,
    )
    return RuleState(
        counts,
        target_halfwidth=goal["target_halfwidth"],
        level=spec.level,
        goal=spec.goal,
        threshold=design.threshold,
        direction=goal["direction"] or "below",
        tolerance=goal["tolerance"],
        margin=goal["margin"],
        guarantee=spec.guarantee,
        anytime_concentration=design.concentration,
        population=spec.design.population,
    )


def spec_states(
    spec: CampaignSpec, design: StrataDesign, *, counts: dict[str, tuple[Any, Any]], labelled: Any, pending: Any
) -> MetricStates:
    """The rule's view of a campaign on several metrics: one :class:`RuleState` per metric.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    design : StrataDesign
        The strata (:func:`~bayeseval.campaign.loop.pool.design_pool`).
    counts : dict
        Metric name -> ``(successes, trials)`` per stratum.
    labelled, pending : array-like
        Labelled rows and pending proposals per stratum (shared by the metrics).

    Returns
    -------
    MetricStates
        The states, in the order of the spec's ``metrics``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.campaign import CampaignSpec
    >>> design = StrataDesign(pd.Index(["a", "b"]), n_rows=np.array([500, 500]), n_eligible=np.array([500, 500]),
    ...                       weights=np.array([0.5, 0.5]), prior_mean=None)
    >>> spec = CampaignSpec(y_pred="pred", strata="g", metric=("fpr", "fnr"))
    >>> counts = {"fpr": ([2, 3], [30, 40]), "fnr": ([1, 1], [10, 12])}
    >>> states = spec_states(spec, design, counts=counts, labelled=[50, 60], pending=[0, 0])
    >>> states.metrics, states.states["fnr"].trials.tolist(), states.available.tolist()
    (['fpr', 'fnr'], [10, 12], [450, 440])
    """
    states = {
        m: spec_state(
            spec, design, successes=counts[m][0], trials=counts[m][1], labelled=labelled, pending=pending, metric=m
        )
        for m in spec.metrics
    }
    return MetricStates(states)


def round_size(spec: CampaignSpec, state: RuleState | MetricStates, batch_size: int | None = None) -> int:
    """Labels to ask for next: 0 when the goal is met or the budget is spent.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    state : RuleState or MetricStates
        The campaign's current state (:func:`spec_state`, or :func:`spec_states` for several metrics).
    batch_size : int, optional
        Rows wanted; default the spec's ``batch_size``.

    Returns
    -------
    int
        ``batch_size``, capped by the budget left after labelled and pending rows; 0 when
        the campaign should stop.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.campaign import CampaignSpec
    >>> design = StrataDesign(pd.Index(["a", "b"]), n_rows=np.array([500, 500]), n_eligible=np.array([500, 500]),
    ...                       weights=np.array([0.5, 0.5]), prior_mean=None)
    >>> spec = CampaignSpec(y_pred="pred", strata="g", batch_size=20, budget=100)
    >>> st = spec_state(spec, design, successes=[1, 5], trials=[40, 40], labelled=[40, 40], pending=[0, 10])
    >>> round_size(spec, st), round_size(spec, st, batch_size=50)  # 10 labels left in the budget
    (10, 10)
    """
    n = (spec.batch_size or BATCH_BOUNDS[0]) if batch_size is None else int(batch_size)
    if spec.budget is not None:
        n = min(n, spec.budget - int(state.labelled.sum()) - int(state.pending.sum()))
    if n <= 0 or state.is_done():
        return 0
    return n


def allocate(
    spec: CampaignSpec,
    state: RuleState | MetricStates,
    n: int,
    *,
    random_seed: np.random.Generator,
    design: StrataDesign | None = None,
) -> np.ndarray:
    """Labels per stratum for a round of ``n``: the rule's allocation, capped by the rows left.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    state : RuleState or MetricStates
        The campaign's current state (one per metric for several metrics).
    n : int
        Labels in the round (:func:`round_size`).
    random_seed : numpy.random.Generator
        The campaign's rule generator (:func:`~bayeseval.campaign.loop.pool.rule_generator`),
        drawn from by randomised rules.
    design : StrataDesign, optional
        The strata's design; when it carries unequal label costs the allocation gives each
        label to the stratum with the largest expected gain per unit cost
        (:func:`~bayeseval.campaign.loop.rules.cost_allocation`).

    Returns
    -------
    numpy.ndarray
        Integer labels per stratum, aligned to ``state.strata``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.campaign import CampaignSpec
    >>> design = StrataDesign(pd.Index(["a", "b"]), n_rows=np.array([500, 500]), n_eligible=np.array([500, 8]),
    ...                       weights=np.array([0.5, 0.5]), prior_mean=None)
    >>> spec = CampaignSpec(y_pred="pred", strata="g", batch_size=20)
    >>> st = spec_state(spec, design, successes=[0, 0], trials=[0, 0], labelled=[0, 0], pending=[0, 0])
    >>> alloc = allocate(spec, st, 20, random_seed=np.random.default_rng(0))
    >>> int(alloc.sum()), bool(alloc[1] <= 8)  # stratum b has 8 rows
    (20, True)
    """
    costs = None if design is None else design.costs
    if isinstance(state, MetricStates):
        return metrics_allocation(state, n, costs)
    if state.goal.decides and costs is not None:
        return decision_allocation(state, n, costs).to_numpy()
    if costs is not None and np.ptp(costs) > 0:
        return cost_allocation(state, n, costs)
    rule = get_rule(spec.rule)[1]
    return np.minimum(rule(state, n, random_seed).to_numpy(), state.available).astype(np.int64)
