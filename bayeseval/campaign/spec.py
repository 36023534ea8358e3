"""One specification of a labelling campaign, shared by real campaigns and simulations.

A :class:`CampaignSpec` holds every setting of a campaign (metric, strata, goal, rule,
population model, prior, batch size, budget, guarantee, random seed), validated once
when it is built. :meth:`bayeseval.campaign.Campaign.create` stores it in the campaign file and
:meth:`~bayeseval.campaign.Campaign.open` reads it back; :func:`bayeseval.campaign.simulation` replays
the same spec with an oracle. Both turn a pool into strata, eligible rows, population weights
and prior means through :func:`design_pool`, and build the rule's view of the counts through
:func:`~bayeseval.campaign.loop.rounds.spec_state`, so a simulated campaign and a real one cannot
drift apart. The spec is settings and their validation only: what builds a state from it, sizes
a round or allocates one is in :mod:`bayeseval.campaign.loop.rounds`.

The module also holds the one lossless normalisation of labels (:class:`LabelSet`) that both
use to compare true labels with predictions.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import (
    check_level,
    check_method,
    check_positive_int,
    check_random_seed,
    iter_columns,
)
from bayeseval._kernels.guarantee import Guarantee, as_guarantee
from bayeseval.campaign.fields import BATCH_BOUNDS, DEFAULTS, auto_batch_size
from bayeseval.campaign.goals.goal import Goal
from bayeseval.campaign.goals.registry import as_goal, goal_from_config, goal_settings
from bayeseval.campaign.labels.label_set import LabelSet
from bayeseval.campaign.loop.rules import RULES, get_rule
from bayeseval.campaign.settings import check_costs_shape, check_resolve, check_score_bins, fold_settings
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.metrics import get_metric
from bayeseval.models.priors import resolve_prior

__all__ = ["CampaignSpec", "MODELS"]

#: population models of the rules and the stopping check
MODELS = ("robust", "auto", "beta_binomial")
#: rules whose allocation can weigh each stratum's expected gain by its label cost
COST_RULES = ("expected_width", "independent_beta")


# -- scalar settings ------------------------------------------------------------------------
def _check_column_name(value: Any, name: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a column name (str), got {value!r}")
    return value


def _check_rule(rule: Any) -> Any:
    if callable(rule):
        return rule
    if not isinstance(rule, str):
        raise TypeError(f"rule must be a rule name (one of {sorted(RULES)}), got {rule!r}")
    return get_rule(rule)[0]


def _check_prior(prior: Any) -> str:
    if not isinstance(prior, str):
        raise TypeError(f"prior must be a prior name ('default' or 'bda'), got {type(prior).__name__}")
    return resolve_prior(prior).name


def _check_label_set(label_set: Any) -> tuple[Any, ...] | None:
    if label_set is None:
        return None
    if isinstance(label_set, (str, bytes)) or not np.iterable(label_set):
        raise TypeError(f"label_set must be a sequence of labels, got {label_set!r}")
    return tuple(LabelSet(list(label_set), "label_set").values)


def _check_weights_shape(weights: Any) -> Any:
    if weights is None or isinstance(weights, (dict, pd.Series)):
        return weights
    if isinstance(weights, (str, bytes)) or not np.iterable(weights):
        raise TypeError(f"weights must be a dict, a pandas Series or an array of population shares, got {weights!r}")
    return tuple(np.asarray(weights, dtype=float).tolist())


def check_metrics(metric: Any) -> str | tuple[str, ...]:
    """``metric`` as a canonical metric name, or a tuple of two or more distinct names, or raise."""
    if isinstance(metric, str):
        return get_metric(metric).name
    if isinstance(metric, bytes) or not np.iterable(metric):
        raise TypeError(f"metric must be a metric name or a list of metric names, got {metric!r}")
    names = [get_metric(m).name for m in metric]
    if not names:
        raise ValueError(f"metric must name at least one metric, got {metric!r}")
    if len(set(names)) < len(names):
        raise ValueError(f"metric names the same metric twice: {list(metric)!r} (as {names})")
    return names[0] if len(names) == 1 else tuple(names)


def _check_goal(goal: Any, metric: Any) -> Goal:
    """The goal object, checked against the metric; a decision goal's direction resolved from it."""
    obj = as_goal(goal)
    if not isinstance(metric, str) and obj.decides:
        raise ValueError(
            f"goal={obj.name!r} works on one metric, got metric={list(metric)!r}; use goal Each or "
            "Overall for several metrics, or one campaign per metric"
        )
    return obj.for_metric(metric) if isinstance(metric, str) else obj


# -- the specification -----------------------------------------------------------------------
#: numpydoc entries of the spec's fields, shared by CampaignSpec, Campaign.create and simulate
FIELD_DOCS: dict[str, str] = {
    "y_pred": """y_pred : str
    Column with the classifier's predicted label.""",
    "strata": """strata : str or sequence of str, optional
    Column(s) defining the strata (none with ``score_bins`` uses the bins only).""",
    "metric": """metric : str or list of str
    ``error_rate`` (default), ``accuracy``, ``recall``, ``precision``, ... (see
    :func:`bayeseval.get_metric`). For precision-type metrics only rows whose prediction
    makes them trials are proposed; for recall-type metrics the rule weighs each stratum by
    its posterior probability that a labelled row is a trial. Several metrics (e.g.
    ``["tpr", "fpr"]`` for equalized odds, ``["recall", "precision"]``) make one campaign
    whose labelled rows count for every metric they are a trial of; each label goes where
    the sum over the metrics of ``P(trial)`` times the expected gain is largest, and the
    goal (``"each"`` or ``"overall"``) must be met for every metric.""",
    "pos_label": """pos_label : object, optional
    Positive class for class-dependent metrics (recall, precision, ...); it must be one of
    the known labels (see ``label_set``). Ignored by ``error_rate`` and ``accuracy``.""",
    "level": """level : float
    Credible level of the reported intervals (0.95 = 95%).""",
    "goal": """goal : Goal or {"each", "overall"}
    What the campaign is for, as a goal object that carries its parameters:
    ``Each(halfwidth)`` (default ``"each"``, i.e. ``Each(0.05)``): every stratum's interval
    within the half-width, a finite number in (0, 0.5); ``Overall(halfwidth)``: the
    population-weighted rate's (``"overall"`` is ``Overall(0.05)``);
    ``Decide(threshold, direction=None, margin=0.0)``: every stratum decided against its
    threshold (``P(rate meets it)`` at least ``level``, or at most ``1 - level``), one number
    in (0, 1) or a mapping stratum -> number (every stratum named), met below it (default for
    error-type metrics such as ``error_rate``, ``fpr``, ``fnr``) or above it (default for
    ``accuracy``, ``recall``, ``precision``, ``specificity``, ``npv``); a stratum whose
    credible interval lies within ``threshold +/- margin`` is decided ``"at the threshold"``
    and gets no more labels (without a margin, a rate near its threshold needs about
    ``1.645^2 rate (1 - rate) / (rate - threshold)^2`` trials at level 0.95: 32,000 for 0.123
    against 0.12; no margin follows from the data, it is the user's statement of which rates
    are practically at the threshold); ``Gap(tolerance)``: the verdict on the max-min gap
    between the strata against the tolerance, in (0, 1), decided (the audit's
    Bonferroni-projected gap interval wholly above or below it). See
    :mod:`bayeseval.campaign.goals.goal`.""",
    "guarantee": """guarantee : {"stratum", "average", "anytime"} or Guarantee
    What each stratum's interval and decision promise (a :class:`~bayeseval.Guarantee` or its
    name). ``"stratum"`` (default): the interval
    of every stratum (``status()``'s ``lower``/``upper``) covers that stratum's rate with
    probability at least ``level`` whatever the rate, also at the moment the campaign stops:
    the adaptive interval from the leave-one-out prior of the other strata (Clopper-Pearson
    while fewer than two other strata have labels), computed at ``1 - 0.7 (1 - level)``
    (0.965 at 0.95) to pay for stopping when it is narrow; the width goal stops a stratum on
    it and the allocation plans for it. Goal ``"decide"`` uses an anytime-valid test per
    stratum (wrong with probability at most ``1 - level`` for any batch size, at least 5
    labels of the stratum's own), goal ``"gap"`` confidence sequences. The pooled posterior
    is shown beside it (``pooled_mean``, ``pooled_lower``, ``pooled_upper``). ``"average"``:
    a stratum stops when its pooled interval at ``level`` reaches the target and is decided
    when its pooled ``P(meets)`` reaches ``level``: these intervals cover on average over
    strata like these, but can miss a stratum whose data happen to look typical
    (docs/validation.md section 11 has the measured coverage). Goal ``"overall"`` is the
    same under both. ``"anytime"`` (``Guarantee.anytime()``): each stratum's interval
    (``read`` is ``"anytime"``) is its confidence sequence at ``level``
    (:func:`~bayeseval.confidence_sequence`), which covers the stratum's rate at every
    number of labels at once, so it stays valid whenever you look and whenever you stop,
    also outside the campaign's own stopping rule; goal ``"each"`` stops a stratum when its
    sequence's half-width reaches the target. The sequence's prior concentration is tuned,
    per stratum, to the campaign's planned size (fixed at creation, stored in the file). It
    costs labels: about 2.4 times Wilson's fixed-size count at a target of 0.05
    (docs/validation.md, section 11f). It needs a goal other than ``"overall"`` and no
    ``proxy``; a campaign file stores it as ``guarantee="stratum"`` with ``anytime=True``.
    Campaign files written before this setting open as ``"average"``. The spec reads it back
    as the :class:`~bayeseval.Guarantee` (``spec.guarantee.name`` is its name).""",
    "weights": """weights : dict, Series or array, optional
    Population shares of the strata (for ``goal="overall"``); default: the strata's shares
    of the eligible pool rows.""",
    "rule": """rule : str
    Proposal rule: ``expected_width`` (default), ``thompson``, ``neyman``,
    ``proportional``, ``uniform`` or ``independent_beta`` (a callable for simulations).""",
    "model": """model : {"robust", "auto", "beta_binomial"}
    Population model of the rule and the stopping check. ``"robust"`` (default): the
    two-component population of :mod:`bayeseval.models.robust`, so a stratum far from the
    others is pooled less and its interval keeps close to nominal coverage at stop
    (simulated coverage 0.94 at level 0.95 against 0.92 for the plain model, for about 3%
    more labels; ``benchmarks/bench_active.py``). ``"auto"`` switches to the robust model
    only when a stratum fails the predictive check.""",
    "prior": """prior : {"default", "bda"}
    Hyperprior of the hierarchical model (see :func:`bayeseval.models.priors.resolve_prior`).""",
    "score": """score : str, optional
    Column with the classifier's top-class probability; its per-stratum mean seeds an
    informative prior (``1 - mean score`` as the expected error for ``error_rate``,
    ``mean score`` for ``accuracy``).""",
    "score_bins": """score_bins : int or sequence of float, optional
    Add a ``score_bin`` stratum column: an ``int`` (>= 1) gives that many equal-count bins,
    a sequence gives at least two strictly increasing bin edges.""",
    "label_set": """label_set : sequence, optional
    The known labels: a true label is accepted only when it equals one of them after the
    lossless normalisation of :class:`~bayeseval.campaign.spec.LabelSet` (``1.0`` is ``1``;
    ``"1"`` is ``1`` only when the labels are numbers; ``0.5``, ``inf``, missing values and
    unknown strings are rejected). Default: ``[0, 1]`` (``[False, True]`` for a boolean
    column) when every prediction is 0 or 1, otherwise the distinct predicted values (in a
    simulation, the predicted and true values). Pass it to declare a true class the model
    never predicts.""",
    "batch_size": """batch_size : int, optional
    Labels per round (a campaign's :meth:`~bayeseval.campaign.Campaign.propose` asks for this
    many unless told otherwise); default scaled to the pool,
    :func:`~bayeseval.campaign.fields.auto_batch_size`: one per 400 rows, at least 10 and at
    most 200 (50 for 20,000 rows). With ``design.cluster``: units per round, scaled to the
    pool's units.""",
    "budget": """budget : int, optional
    Maximum number of labels (of complete units with ``design.cluster``).""",
    "annotators": """annotators : int
    Annotations a row needs before it is resolved into a label (default 1). Rows with fewer
    annotations, or whose annotations the ``resolve`` rule cannot settle, stay pending.""",
    "resolve": """resolve : str
    How several annotations of a row become its label: ``"majority"`` (default; the label
    given by strictly more annotators than any other, a tie leaves the row unresolved) or
    ``"annotator:NAME"`` (the label of annotator ``NAME``; rows that annotator has not
    labelled stay unresolved).""",
    "costs": """costs : dict, Series or sequence of float, optional
    Cost of one label per stratum (e.g. strata that need expert annotators cost more): a
    mapping from stratum to cost (strata not listed cost 1) or one positive number per
    stratum. With costs the ``expected_width`` and ``independent_beta`` rules give each
    label to the stratum with the largest expected gain per unit cost; :meth:`status` and
    :meth:`forecast` report the cost. Default: every label costs 1.""",
    "anytime": """anytime : bool
    The older spelling of ``guarantee="anytime"``: ``True`` with ``guarantee="stratum"``
    (``guarantee="average"`` is refused). Default ``False``. The spec reads back
    ``guarantee=Guarantee.anytime()``, ``anytime=True``.""",
    "proxy": """proxy : str, optional
    Column with a proxy of the true label on every pool row: a cheap label of the same kind
    as the labels (an LLM judge's) or a numeric score, binned into 5 equal-count cells per
    stratum as :func:`~bayeseval.proxy_ci` bins it. Checked at creation by the rule
    :func:`~bayeseval.proxy_ci` applies: text that is not a label (``"0.9"``, ``"yes"``),
    missing or infinite values are refused, naming the column. Stored with the pool. Within each
    stratum the labels go to the proxy's cells by Neyman allocation and rows are drawn at
    random within a cell; each stratum stops on, and reports, its proxy-assisted interval
    (:func:`~bayeseval.proxy_ci` with the cell design's inclusion probabilities). Metrics
    ``error_rate``, ``accuracy``, ``precision``, ``npv``; goal ``"each"``; guarantee
    ``"stratum"``.""",
    "design": """design : Design or dict, optional
    The sampling design (:class:`~bayeseval.Design`; default ``Design()``), stored in the
    campaign file. ``population="process"`` (default): each stratum's interval is for the rate
    of the process that produced its rows. ``population="pool"``: for the rate of the
    stratum's rows in the pool itself (a finite population): each stratum reads and stops on
    the exact hypergeometric interval of :func:`~bayeseval._kernels.finite_pool.pool_ci` at
    the stop level ``1 - 0.7 (1 - level)`` (0.965 at 0.95), a stratum whose every row is
    labelled is known exactly, and the allocation and the forecast plan with the
    finite-population interval; it needs goal ``Each``, guarantee ``"stratum"``, one metric
    whose trials the prediction fixes (``error_rate``, ``accuracy``, ``precision``, ``npv``,
    ...) and no ``proxy`` (a ``ValueError`` names ``design.population`` and the other
    setting). ``inclusion``: with :meth:`Campaign.create <bayeseval.campaign.Campaign.create>`'s
    ``labels``, the column of each labelled row's inclusion probability (see ``labels``);
    ``simulate`` draws its own labels and refuses it. ``cluster``: a pool column whose rows
    sharing a value are one sampling unit (the answers of one item): the campaign samples whole
    units (:meth:`Campaign.propose <bayeseval.campaign.Campaign.propose>` returns every row of
    each unit it proposes, its ``batch_size`` and ``budget`` count units), a unit counts once
    all its rows are labelled, and each stratum reads and stops on the finite-sample valid
    interval of its labelled units for its row-level rate
    (:func:`~bayeseval._kernels.bounded_mean.units_ci` at the stop level; ``read`` is
    ``"units"``); the allocation plans with the units interval, whose half-width shrinks like
    ``1 / sqrt(units)``. A pool whose every unit has one row (one trial) is a row campaign,
    exactly as without ``cluster`` (as :func:`~bayeseval.evaluate` reads such units). A unit
    must lie in one stratum (a ``ValueError`` names
    ``design.cluster``, how many units span strata and one of them). It needs goal ``Each``,
    guarantee ``"stratum"``, one metric whose trials the prediction fixes, no ``proxy``, no
    ``costs`` and no ``labels`` at create (a ``ValueError`` names
    ``design.cluster`` and the other setting). With ``population="pool"`` as well, each stratum
    reads and stops on the interval for its pool's own rate from the units labelled, drawn
    without replacement (:func:`~bayeseval._kernels.finite_pool.pool_units_ci`: the exact
    hypergeometric limits when every unit is one row), the rate itself once every unit is labelled.""",
    "random_seed": """random_seed : int, sequence of int, SeedSequence or Generator, optional
    Seed of the campaign's random streams (row order and the rule's draws). A campaign
    created with seed ``s`` proposes the rows of repeat 0 of a simulation with seed ``s``
    (see :func:`seed_sequences`).""",
}


#: the entries of the settings that :meth:`Campaign.create` and :func:`simulate` take as objects
ENTRY_DOCS = {
    **FIELD_DOCS,
    "model": """model : {"robust", "auto", "beta_binomial"} or PooledModel
    Population model of the rule and the stopping check: its name, or a
    :class:`~bayeseval.PooledModel` that also sets its hyperprior (``prior``: ``"default"`` or
    ``"bda"``, see :func:`bayeseval.models.priors.resolve_prior`; its ``engine`` must be
    ``"exact"``). ``"robust"`` (default): the two-component population of
    :mod:`bayeseval.models.robust`, so a stratum far from the others is pooled less and its
    interval keeps close to nominal coverage at stop (simulated coverage 0.94 at level 0.95
    against 0.92 for the plain model, for about 3% more labels; ``benchmarks/bench_active.py``).
    ``"auto"`` switches to the robust model only when a stratum fails the predictive check.""",
    "score": """score : str or Score, optional
    Column with the classifier's top-class probability; its per-stratum mean seeds an
    informative prior (``1 - mean score`` as the expected error for ``error_rate``, ``mean
    score`` for ``accuracy``). A :class:`~bayeseval.campaign.Score` also sets ``bins``, which
    add a ``score_bin`` stratum column: an ``int`` (>= 1) gives that many equal-count bins, a
    sequence at least two strictly increasing bin edges.""",
    "budget": """budget : int or Budget, optional
    Maximum number of labels (of complete units with ``design.cluster``), or a
    :class:`~bayeseval.campaign.Budget` that also sets ``batch_size`` (labels per round,
    default scaled to the pool, :func:`~bayeseval.campaign.fields.auto_batch_size`: one per 400
    rows, at least 10 and at most 200; with ``design.cluster`` units per round) and ``costs``
    (the cost of one label per stratum, a mapping or one number per stratum, for the
    ``expected_width`` and ``independent_beta`` rules, which then give each label to the
    stratum with the largest expected gain per unit cost).""",
}


def entry_docs(obj: Any) -> Any:
    """:func:`spec_docs` with the entries of :data:`ENTRY_DOCS` (the settings given as objects).

    Parameters
    ----------
    obj : function
        Documented entry point with a ``{spec_parameters}`` line.

    Returns
    -------
    function
        ``obj``, its docstring completed.
    """
    return spec_docs(obj, ENTRY_DOCS)


def spec_docs(obj: Any, docs: dict[str, str] | None = None) -> Any:
    """Replace the ``{spec_parameters}`` line of ``obj``'s docstring by its spec fields' entries.

    The entries of :data:`FIELD_DOCS` whose names are parameters of ``obj``, in signature
    order, indented like the placeholder line.

    Parameters
    ----------
    obj : function or class
        Documented object with a ``{spec_parameters}`` line.
    docs : dict, optional
        Entries by parameter name; default :data:`FIELD_DOCS`.

    Returns
    -------
    function or class
        ``obj``, its docstring completed.
    """
    doc = obj.__doc__ or ""
    line = next(x for x in doc.splitlines() if x.strip() == "{spec_parameters}")
    indent = line[: len(line) - len(line.lstrip())]
    docs = FIELD_DOCS if docs is None else docs
    names = [n for n in inspect.signature(obj).parameters if n in docs]
    obj.__doc__ = doc.replace(line, "\n".join(textwrap.indent(docs[n], indent) for n in names))
    return obj


@spec_docs
@dataclass(frozen=True, kw_only=True, eq=False)
class CampaignSpec:
    """Every setting of a labelling campaign, validated once.

    Built by :meth:`bayeseval.campaign.Campaign.create` and :func:`bayeseval.campaign.simulation`
    from their keyword arguments, or passed to either as ``spec=``; a real campaign stores it
    in its file and reads it back on :meth:`~bayeseval.campaign.Campaign.open`. Every field is
    checked when the spec is built (a ``TypeError`` or ``ValueError`` naming the field and
    the value); what needs the pool (column presence, weights per stratum, labels) is checked
    by :func:`design_pool`.

    Parameters
    ----------
    {spec_parameters}

    Examples
    --------
    >>> from bayeseval.campaign import Decide, Each
    >>> spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.1))
    >>> spec.strata, spec.goal, spec.guarantee, spec.guarantee.name
    (('g',), Each(halfwidth=0.1), Guarantee.stratum(), 'stratum')
    >>> CampaignSpec(y_pred="pred", goal=Decide(0.1)).goal  # direction from the metric
    Decide(threshold=0.1, direction='below', margin=0.0)
    >>> spec.replace(level=0.9).level
    0.9
    >>> spec.replace(level=0.9) == spec, spec.replace() == spec
    (False, True)
    >>> CampaignSpec(y_pred="pred", strata="g", level=1.5)
    Traceback (most recent call last):
    ...
    ValueError: level must be in the open interval (0, 1) (0.95 means a 95% interval), got 1.5
    """

    y_pred: str
    strata: tuple[str, ...] = DEFAULTS["strata"]
    metric: str = DEFAULTS["metric"]
    pos_label: Any = DEFAULTS["pos_label"]
    level: float = DEFAULTS["level"]
    goal: Any = DEFAULTS["goal"]
    weights: Any = DEFAULTS["weights"]
    rule: Any = DEFAULTS["rule"]
    model: str = DEFAULTS["model"]
    prior: str = DEFAULTS["prior"]
    score: str | None = DEFAULTS["score"]
    score_bins: int | tuple[float, ...] | None = DEFAULTS["score_bins"]
    label_set: tuple[Any, ...] | None = DEFAULTS["label_set"]
    batch_size: int | None = DEFAULTS["batch_size"]
    budget: int | None = DEFAULTS["budget"]
    annotators: int = DEFAULTS["annotators"]
    resolve: str = DEFAULTS["resolve"]
    costs: Any = DEFAULTS["costs"]
    guarantee: Guarantee = DEFAULTS["guarantee"]  # a name at the API edge: the Guarantee once built
    anytime: bool = DEFAULTS["anytime"]  # read back as ``guarantee.sequential``
    proxy: str | None = DEFAULTS["proxy"]
    design: Design = DEFAULTS["design"]  # None or a dict of its fields: a Design once built
    random_seed: Any = DEFAULTS["random_seed"]

    def __post_init__(self) -> None:
        level = check_level(self.level)
        checked = {
            "y_pred": _check_column_name(self.y_pred, "y_pred"),
            "strata": tuple(iter_columns(self.strata, "strata")),
            "metric": check_metrics(self.metric),
            "level": level,
            "weights": _check_weights_shape(self.weights),
            "rule": _check_rule(self.rule),
            "model": check_method(self.model, MODELS, "model"),
            "prior": _check_prior(self.prior),
            "score": _check_column_name(self.score, "score", optional=True),
            "score_bins": check_score_bins(self.score_bins),
            "label_set": _check_label_set(self.label_set),
            "batch_size": None if self.batch_size is None else check_positive_int(self.batch_size, "batch_size"),
            "budget": None if self.budget is None else check_positive_int(self.budget, "budget"),
            "random_seed": check_random_seed(self.random_seed),
            "annotators": check_positive_int(self.annotators, "annotators"),
            "resolve": check_resolve(self.resolve),
            "costs": check_costs_shape(self.costs),
            "guarantee": as_guarantee(self.guarantee),
            "anytime": _check_bool(self.anytime, "anytime"),
            "proxy": _check_column_name(self.proxy, "proxy", optional=True),
            "design": as_design(self.design),
        }
        checked["goal"] = _check_goal(self.goal, checked["metric"])
        if checked["costs"] is not None and checked["rule"] not in COST_RULES and isinstance(self.rule, str):
            raise ValueError(
                f"costs need a rule that weighs gains by cost ({', '.join(COST_RULES)}), got rule={self.rule!r}"
            )
        if not isinstance(checked["metric"], str) and isinstance(self.rule, str) and checked["rule"] not in COST_RULES:
            raise ValueError(
                f"several metrics need a rule that adds the metrics' gains ({', '.join(COST_RULES)}), got "
                f"rule={self.rule!r} with metric={list(checked['metric'])!r}"
            )
        if checked["proxy"] is not None:
            _check_proxy_settings(checked)
        guarantee = as_guarantee(checked["guarantee"], anytime=checked["anytime"])
        if guarantee.sequential:
            _check_anytime_settings(checked)
        if checked["score_bins"] is not None and checked["score"] is None:
            raise ValueError(f"score_bins={self.score_bins!r} needs a score column (score=...)")
        _check_design_settings(checked, guarantee)
        checked.update(guarantee=guarantee, anytime=guarantee.sequential)
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def _key(self) -> dict[str, Any]:
        def mapping(value: Any) -> Any:
            if isinstance(value, pd.Series | dict):
                return tuple(sorted((str(k), float(v)) for k, v in value.items()))
            return value

        return {
            **self.to_config(),
            "weights": mapping(self.weights),
            "threshold": mapping(getattr(self.goal, "threshold", None)),
            "rule": self.rule,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CampaignSpec):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def replace(self, **changes: Any) -> CampaignSpec:
        """A copy with some fields changed (validated again).

        Parameters
        ----------
        **changes
            New values of fields, by name.

        Returns
        -------
        CampaignSpec
            The changed copy; this spec is unchanged. ``anytime`` alone changes whether the
            per-stratum guarantee is the anytime one.

        Examples
        --------
        >>> spec = CampaignSpec(y_pred="pred", guarantee="anytime")
        >>> spec.replace(anytime=False).guarantee, spec.replace(level=0.9).guarantee
        (Guarantee.stratum(), Guarantee.anytime())
        """
        if "anytime" in changes and "guarantee" not in changes:
            changes["guarantee"] = self.guarantee.scope  # the setting beside ``anytime``, as before
        return dataclasses.replace(self, **changes)

    def keywords(self, entry: str = "create") -> dict[str, Any]:
        """The settings as the keyword arguments of :meth:`Campaign.create` or :func:`simulate`.

        ``Campaign.create(path, pool, **spec.keywords())`` creates a campaign whose spec equals
        this one, and ``simulate(data, y_true=..., **spec.keywords("simulate"))`` replays it:
        the model and its prior become a :class:`~bayeseval.PooledModel`, the budget, batch
        size and costs a :class:`~bayeseval.campaign.Budget`, the score and its bins a
        :class:`~bayeseval.campaign.Score`, the annotators and the ``resolve`` rule an
        :class:`~bayeseval.campaign.Annotation`, the guarantee a :class:`~bayeseval.Guarantee`.

        Parameters
        ----------
        entry : {"create", "simulate"}, default "create"
            Which entry point's keywords: a simulation has no annotators (its oracle answers
            every row) and takes the rule as ``rules=[rule]``.

        Returns
        -------
        dict
            Keyword -> value.

        Examples
        --------
        >>> spec = CampaignSpec(y_pred="pred", strata="g", budget=300, batch_size=20, prior="bda")
        >>> kw = spec.keywords()
        >>> kw["budget"], kw["model"]
        (Budget(300, batch_size=20), PooledModel('robust', prior='bda'))
        >>> kw["score"], kw["guarantee"]
        (None, Guarantee.stratum())
        >>> sorted(set(kw) - set(spec.keywords("simulate")))
        ['annotation', 'rule']
        """
        if entry not in ("create", "simulate"):
            raise ValueError(f"entry must be 'create' or 'simulate', got {entry!r}")
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "anytime"}
        flat["guarantee"] = self.guarantee
        flat["strata"] = list(self.strata)
        if isinstance(self.metric, tuple):
            flat["metric"] = list(self.metric)
        out = fold_settings(flat)
        if entry == "simulate":
            del out["annotation"]
            out["rules"] = [out.pop("rule")]
        return out

    def for_pool(self, n_rows: int) -> CampaignSpec:
        """This spec with its default batch size resolved for a pool of ``n_rows`` rows.

        Parameters
        ----------
        n_rows : int
            Rows in the pool.

        Returns
        -------
        CampaignSpec
            Unchanged when ``batch_size`` is set; else with
            :func:`~bayeseval.campaign.fields.auto_batch_size` of ``n_rows``.

        Examples
        --------
        >>> CampaignSpec(y_pred="pred").for_pool(20_000).batch_size
        50
        """
        return self if self.batch_size is not None else self.replace(batch_size=auto_batch_size(n_rows))

    @property
    def metrics(self) -> tuple[str, ...]:
        """The campaign's metrics (one name, or several for a campaign on several metrics)."""
        return (self.metric,) if isinstance(self.metric, str) else tuple(self.metric)

    @property
    def rule_name(self) -> str:
        """The rule's name (a callable's ``__name__``)."""
        return get_rule(self.rule)[0]

    # -- storage ---------------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """The spec as a JSON-ready dict (the settings part of a campaign file's configuration).

        Returns
        -------
        dict
            Field name -> value, with ``y_pred`` stored under its historical key
            ``prediction``, the goal's name under ``goal`` and its parameters under the keys
            of :func:`~bayeseval.campaign.goals.registry.goal_settings`; a seed that is not an integer
            is stored as its text.
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["prediction"] = out.pop("y_pred")
        out["strata"] = list(self.strata)
        out["rule"] = self.rule_name
        out["goal"] = self.goal.name
        out["guarantee"] = self.guarantee.scope  # with ``anytime``: the settings a campaign file stores
        out.update(goal_settings(self.goal))
        out["design"] = {f.name: getattr(self.design, f.name) for f in dataclasses.fields(Design)}
        for name in ("score_bins", "label_set", "weights", "costs", "threshold", "metric"):
            if isinstance(out[name], tuple):
                out[name] = list(out[name])
        for name in ("weights", "costs", "threshold"):
            if isinstance(out[name], pd.Series | dict):
                out[name] = None  # stored aligned to the strata by the campaign
        seed = self.random_seed
        out["random_seed"] = seed if isinstance(seed, (int, type(None))) else str(seed)
        return out

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> CampaignSpec:
        """The spec of a stored configuration; settings missing from older files take defaults.

        Parameters
        ----------
        config : dict
            A campaign file's configuration (see :meth:`to_config`). Its ``strata`` lists the
            campaign's stratum columns, which end with ``score_bin`` when ``score_bins`` is set.

        Returns
        -------
        CampaignSpec
            The stored settings. A seed stored as text (not an integer) becomes None: the
            random generator's state is stored separately.
        """
        names = {f.name for f in dataclasses.fields(cls)} - {"y_pred", "strata", "random_seed", "goal"}
        kwargs = {name: config[name] for name in names if name in config}
        strata = list(config.get("strata") or [])
        if config.get("score_bins") is not None and strata and strata[-1] == "score_bin":
            strata = strata[:-1]
        seed = config.get("random_seed")
        y_pred: Any = config.get("y_pred", config.get("prediction"))  # as stored: the spec checks it
        kwargs.setdefault("model", "auto")  # files written before the model was a setting
        kwargs.setdefault("batch_size", BATCH_BOUNDS[0])  # files written before the batch size was stored: 10
        kwargs.setdefault("guarantee", "average")  # files written before the guarantee was a setting
        kwargs.setdefault("design", None)  # files written before the design was a setting: Design()
        return cls(
            y_pred=y_pred,
            strata=tuple(strata),
            random_seed=seed if isinstance(seed, int) else None,
            goal=goal_from_config(config),
            **kwargs,
        )


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_anytime_settings(checked: dict[str, Any]) -> None:
    """Raise when an anytime campaign asks for a goal or proxy its sequences do not serve."""
    if not checked["goal"].per_stratum:
        raise ValueError(
            f"anytime=True reads a confidence sequence per stratum (goal 'each', 'decide' or 'gap'); "
            f"got goal={checked['goal'].name!r}"
        )
    if checked["proxy"] is not None:
        raise ValueError(
            f"anytime=True reads each stratum's confidence sequence from its own labels, not a "
            f"proxy-assisted interval; got proxy={checked['proxy']!r}"
        )


def _check_design_settings(checked: dict[str, Any], guarantee: Guarantee) -> None:
    """Raise when the design asks for what a campaign does not do (the message names ``design``)."""
    design = checked["design"]
    metric = checked["metric"]
    if design.cluster is not None:
        _check_cluster_settings(checked, guarantee)
    if design.population != "pool":
        return
    clashes = (
        (not isinstance(metric, str), f"metric={list(metric) if not isinstance(metric, str) else metric!r}"),
        (isinstance(metric, str) and get_metric(metric).trials_need_truth, f"metric={metric!r}"),
        (checked["goal"].name != "each", f"goal={checked['goal'].name!r}"),
        (not guarantee.per_stratum or guarantee.sequential, f"guarantee={guarantee.name!r}"),
        (checked["proxy"] is not None, f"proxy={checked['proxy']!r}"),
    )
    for bad, what in clashes:
        if bad:
            raise ValueError(
                f"design.population='pool' reads each stratum's exact finite-pool interval, for goal 'each' "
                f"under guarantee 'stratum' on one metric whose trials the prediction fixes, without a "
                f"proxy; got {what}"
            )


#: the goals a clustered campaign reads from its units intervals
CLUSTER_GOALS = ("each", "decide", "gap", "overall")
#: the goals a clustered campaign serves under guarantee "anytime" (each stratum's confidence sequence)
CLUSTER_ANYTIME_GOALS = ("each", "decide")


def _check_cluster_settings(checked: dict[str, Any], guarantee: Guarantee) -> None:
    """Raise when a clustered campaign asks for what its units interval does not serve (naming both)."""
    design, metric = checked["design"], checked["metric"]
    several = not isinstance(metric, str)
    clashes = (
        (several, f"metric={list(metric) if several else metric!r}"),
        (checked["goal"].name not in CLUSTER_GOALS, f"goal={checked['goal'].name!r}"),
        (
            not guarantee.per_stratum or (guarantee.sequential and checked["goal"].name not in CLUSTER_ANYTIME_GOALS),
            f"guarantee={guarantee.name!r} with goal={checked['goal'].name!r}",
        ),
        (checked["proxy"] is not None, f"proxy={checked['proxy']!r}"),
    )
    for bad, what in clashes:
        if bad:
            raise ValueError(
                f"design.cluster={design.cluster!r} samples whole units and reads each stratum's units interval, "
                f"for goals {list(CLUSTER_GOALS)} under guarantee 'stratum' (goals {list(CLUSTER_ANYTIME_GOALS)} "
                f"under 'anytime') on one metric, without a proxy; got {what}"
            )


def _check_proxy_settings(checked: dict[str, Any]) -> None:
    """Raise when a proxy campaign asks for a metric, goal or guarantee it does not serve."""
    from bayeseval.counts.proxy import PROXY_METRICS

    metric = checked["metric"]
    if not isinstance(metric, str) or metric not in PROXY_METRICS:
        raise ValueError(f"proxy campaigns take one of the metrics {list(PROXY_METRICS)}, got metric={metric!r}")
    if checked["goal"].name != "each" or not checked["guarantee"].per_stratum:
        raise ValueError(
            f"proxy campaigns take goal='each' and guarantee='stratum', got goal="
            f"{checked['goal'].name!r}, guarantee={checked['guarantee'].scope!r}"
        )
