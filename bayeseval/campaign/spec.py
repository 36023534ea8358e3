"""One specification of a labelling campaign, shared by real campaigns and simulations.

A :class:`CampaignSpec` holds every setting of a campaign (metric, strata, goal, rule,
population model, prior, batch size, budget, guarantee, random seed), validated once
when it is built. :meth:`bayeseval.campaign.Campaign.create` stores it in the campaign file and
:meth:`~bayeseval.campaign.Campaign.open` reads it back; :func:`bayeseval.campaign.simulation` replays
the same spec with an oracle. Both turn a pool into strata, eligible rows, population weights
and prior means through :func:`design_pool`, and build the rule's view of the counts through
:meth:`CampaignSpec.rule_state`, so a simulated campaign and a real one cannot drift apart.

The module also holds the one lossless normalisation of labels (:class:`LabelSet`) that both
use to compare true labels with predictions.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import (
    check_class_labels,
    check_level,
    check_method,
    check_positive_int,
    check_random_seed,
    check_weights,
    iter_columns,
)
from bayeseval.campaign.rules import (
    GUARANTEES,
    RULES,
    RuleState,
    decision_allocation,
    get_rule,
)
from bayeseval.counts.counts import stratum_labels
from bayeseval.counts.metrics import get_metric
from bayeseval.models.priors import resolve_prior

__all__ = ["CampaignSpec", "LabelSet", "GOALS", "MODELS"]

#: goals of a campaign: every stratum's interval, the population-weighted rate's, a decision
#: per stratum against a threshold, or a verdict on the max-min gap against a tolerance
GOALS = ("each", "overall", "decide", "gap")
#: metrics where larger is better: by default a stratum meets its threshold from above
ABOVE_METRICS = ("accuracy", "recall", "precision", "specificity", "npv")
DIRECTIONS = ("below", "above")
#: population models of the rules and the stopping check
MODELS = ("robust", "auto", "beta_binomial")
#: rules whose allocation can weigh each stratum's expected gain by its label cost
COST_RULES = ("expected_width", "independent_beta")

INT_TEXT = re.compile(r"[+-]?\d+")
#: marker returned by :meth:`LabelSet.normalise` for a missing label
MISSING = object()


# -- scalars and labels ---------------------------------------------------------------------
def py_scalar(value: Any) -> Any:
    """A numpy scalar as the Python scalar; an Interval as its text; anything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.Interval):
        return str(value)
    return value


def label_key(value: Any) -> Any:
    """Comparison key of a known label: bools and integral floats become ints, numpy -> Python."""
    value = py_scalar(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def is_missing(value: Any) -> bool:
    """Whether ``value`` is None, NaN, ``pd.NA`` or ``NaT`` (False for containers)."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


class LabelSet:
    """The labels a campaign knows, and the one lossless normalisation applied to incoming labels.

    A campaign's known labels are fixed at creation (``label_set`` of :meth:`Campaign.create`):
    by default ``[0, 1]`` (``[False, True]`` for a boolean prediction column) when every
    prediction is 0 or 1, otherwise the distinct predicted values. A true class the model never
    predicts is legitimate but must be declared by passing ``label_set`` explicitly; every
    value of ``label_set`` must be a string, or every value a number or a bool, never a mix.

    An incoming label ``v`` is accepted only when it equals a known label after this
    normalisation, and is stored as that known label:

    * numbers (Python or numpy) compare by value, so ``1.0`` is ``1`` and ``True``/``False``
      are ``1``/``0`` (as in Python); ``0.5``, ``1.9``, ``inf`` equal no integer label (a
      fractional number is never a label: known labels refuse one, see
      :func:`bayeseval._api.validation.first_fractional`);
    * with numeric (or boolean) known labels, a string is read as a number when it is a
      decimal number (``"1"``, ``" 1 "``, ``"1.0"``; with boolean labels also ``"true"`` /
      ``"false"`` in any case) and then compared as above;
    * with string known labels, a string must match exactly (case and spaces count) and a
      number never matches;
    * ``None``, NaN, ``pd.NA`` and ``NaT`` are missing labels; any other type is invalid.

    Parameters
    ----------
    values : sequence
        The known labels.
    name : str
        Argument name used in error messages.

    Examples
    --------
    >>> labels = LabelSet([0, 1])
    >>> labels.normalise(1.0), labels.normalise("0"), labels.normalise(True)
    (1, 0, 1)
    >>> labels.normalise(0.5) is None
    True
    """

    def __init__(self, values: Sequence[Any], name: str = "label_set") -> None:
        vals = [py_scalar(v) for v in values]
        if not vals:
            raise ValueError(f"{name} must hold at least one label, got {list(values)!r}")
        for v in vals:
            if is_missing(v) or not isinstance(v, (str, int, float)):
                raise ValueError(f"{name} values must be strings, integers, floats or bools, got {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"{name} values must be finite, got {v!r}")
        check_class_labels(np.array(vals, dtype=object), name)
        is_str = [isinstance(v, str) for v in vals]
        if any(is_str) and not all(is_str):
            raise ValueError(f"{name} mixes strings and numbers, so labels could never match: {vals!r}")
        if all(is_str):
            self.kind = "str"
        elif all(isinstance(v, bool) for v in vals):
            self.kind = "bool"
        else:
            self.kind = "number"
        self.canon: dict[Any, Any] = {}
        for v in vals:
            key = label_key(v)
            if key in self.canon and self.canon[key] != v:
                raise ValueError(f"{name} holds {self.canon[key]!r} and {v!r}, which are the same label")
            self.canon[key] = v
        self.values = list(self.canon.values())

    def _number_key(self, value: Any) -> Any:
        """Key of a number (or of the text of one) for numeric/boolean known labels."""
        if isinstance(value, str):
            text = value.strip()
            if self.kind == "bool" and text.lower() in ("true", "false"):
                return int(text.lower() == "true")
            if INT_TEXT.fullmatch(text):
                return int(text)
            try:
                value = float(text)
            except ValueError:
                return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return label_key(value)

    def normalise(self, value: Any) -> Any:
        """The known label equal to ``value`` (see the class docstring).

        Parameters
        ----------
        value : object
            An incoming label.

        Returns
        -------
        object
            The known label, ``None`` when there is none, or the module's ``MISSING`` marker
            for a missing value.
        """
        value = py_scalar(value)
        if value is None or is_missing(value):
            return MISSING
        if self.kind == "str":
            return value if isinstance(value, str) and value in self.canon else None
        if not isinstance(value, (str, int, float)):
            return None
        return self.canon.get(self._number_key(value))

    def normalise_many(self, values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Normalise an array of labels, once per distinct value.

        Parameters
        ----------
        values : array-like
            Incoming labels.

        Returns
        -------
        tuple of numpy.ndarray
            ``(canonical, missing, invalid)``: an object array of known labels and two
            boolean masks.
        """
        arr = np.asarray(values, dtype=object)
        codes, uniques = pd.factorize(pd.Series(arr, dtype=object), use_na_sentinel=True)
        mapped = [self.normalise(u) for u in uniques]
        missing_u = np.array([m is MISSING for m in mapped] + [True], dtype=bool)
        invalid_u = np.array([m is None for m in mapped] + [False], dtype=bool)
        canon_u = np.empty(len(mapped) + 1, dtype=object)
        canon_u[:-1] = [None if (m is None or m is MISSING) else m for m in mapped]
        return canon_u[codes], missing_u[codes], invalid_u[codes]

    def __contains__(self, value: Any) -> bool:
        return self.normalise(value) not in (None, MISSING)


# -- scalar settings ------------------------------------------------------------------------
def check_target_halfwidth(value: Any) -> float:
    """``target_halfwidth`` as a float in (0, 0.5), or raise naming it."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"target_halfwidth must be a number in (0, 0.5), got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and 0 < value < 0.5):
        raise ValueError(f"target_halfwidth must be a finite number in (0, 0.5), got {value!r}")
    return value


def check_score_bins(score_bins: Any) -> int | tuple[float, ...] | None:
    """``score_bins`` as a number of bins (>= 1) or a tuple of increasing edges, or raise."""
    if score_bins is None:
        return None
    if isinstance(score_bins, Integral) and not isinstance(score_bins, bool):
        if score_bins < 1:
            raise ValueError(f"score_bins must be a number of bins >= 1 or a list of edges, got {score_bins!r}")
        return int(score_bins)
    if isinstance(score_bins, (str, bytes, bool)) or not np.iterable(score_bins):
        raise TypeError(f"score_bins must be an int >= 1 or a sequence of bin edges, got {score_bins!r}")
    given = list(score_bins)
    try:
        edges = np.asarray(given, dtype=float)
    except (TypeError, ValueError):
        edges = np.array([np.nan])
    if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(
            f"score_bins edges must be at least two finite, strictly increasing numbers, got {given!r}"
        )
    return tuple(float(e) for e in edges)


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


def check_resolve(resolve: Any) -> str:
    """``resolve`` as ``"majority"`` or ``"annotator:NAME"``, or raise naming it."""
    if not isinstance(resolve, str):
        raise TypeError(f"resolve must be 'majority' or 'annotator:NAME', got {resolve!r}")
    if resolve == "majority" or (resolve.startswith("annotator:") and resolve[len("annotator:"):].strip()):
        return resolve
    raise ValueError(f"resolve must be 'majority' or 'annotator:NAME', got {resolve!r}")


def _check_costs_shape(costs: Any) -> Any:
    if costs is None or isinstance(costs, (dict, pd.Series)):
        return costs
    if isinstance(costs, (str, bytes)) or not np.iterable(costs):
        raise TypeError(f"costs must be a dict, a pandas Series or a sequence of label costs, got {costs!r}")
    return tuple(np.asarray(costs, dtype=float).tolist())


def stratum_costs(costs: Any, strata: pd.Index) -> np.ndarray | None:
    """Label cost per stratum aligned to ``strata`` (None without costs), or raise naming ``costs``.

    A mapping may leave strata out (they cost 1); a sequence gives one cost per stratum. Every
    cost must be a finite number > 0.
    """
    if costs is None:
        return None
    if isinstance(costs, (dict, pd.Series)):
        values = [1.0] * len(strata)
        position = {s: i for i, s in enumerate(strata)}
        text = {t: i for i, t in enumerate(stratum_labels(strata))}
        unknown = []
        for key, cost in (costs.items() if isinstance(costs, dict) else costs.items()):
            key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
            where = position.get(key, text.get(str(key)))
            if where is None:
                unknown.append(key)
            else:
                values[where] = cost
        if unknown:
            raise ValueError(f"costs name strata that are not in the pool: {unknown[:5]}; strata are {list(text)[:10]}")
    else:
        values = list(costs)
        if len(values) != len(strata):
            raise ValueError(f"costs must give one cost per stratum ({len(strata)}), got {len(values)}: {values[:10]}")
    arr = np.empty(len(values), dtype=float)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (Real, np.number)) or not (math.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"costs must be finite numbers > 0, got {v!r} for stratum {list(strata)[i]!r}")
        arr[i] = float(v)
    return arr


def _check_threshold_shape(threshold: Any) -> Any:
    """``threshold`` as a float in (0, 1), a mapping, or a tuple of floats (one per stratum)."""
    if threshold is None or isinstance(threshold, (dict, pd.Series)):
        return threshold
    if isinstance(threshold, (str, bytes, bool)):
        raise TypeError(f"threshold must be a number in (0, 1) or a mapping stratum -> number, got {threshold!r}")
    if isinstance(threshold, (Real, np.number)):
        return _unit_value(threshold, "threshold")
    if not np.iterable(threshold):
        raise TypeError(f"threshold must be a number in (0, 1) or a mapping stratum -> number, got {threshold!r}")
    return tuple(_unit_value(v, "threshold") for v in threshold)


def _check_margin(margin: Any, goal: str) -> float:
    """``margin`` as a float in [0, 0.5), only non-zero with goal "decide", or raise naming it."""
    if isinstance(margin, bool) or not isinstance(margin, (Real, np.number)):
        raise TypeError(f"margin must be a number in [0, 0.5), got {margin!r}")
    value = float(margin)
    if not (0.0 <= value < 0.5):
        raise ValueError(f"margin must be a number in [0, 0.5), got {margin!r}")
    if value > 0 and goal != "decide":
        raise ValueError(f"margin={margin!r} is only used with goal='decide', got goal={goal!r}")
    return value


def _unit_value(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)):
        raise TypeError(f"{name} must be a number in (0, 1), got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return value


def stratum_thresholds(threshold: Any, strata: pd.Index) -> np.ndarray | None:
    """The decision threshold per stratum aligned to ``strata`` (None without one), or raise.

    A number applies to every stratum; a mapping must name every stratum (by its key or its
    label text); a sequence gives one threshold per stratum.
    """
    if threshold is None:
        return None
    if isinstance(threshold, float):
        return np.full(len(strata), threshold)
    if isinstance(threshold, (dict, pd.Series)):
        position = {s: i for i, s in enumerate(strata)}
        text = {t: i for i, t in enumerate(stratum_labels(strata))}
        values = np.full(len(strata), np.nan)
        unknown = []
        for key, value in threshold.items():
            key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
            where = position.get(key, text.get(str(key)))
            if where is None:
                unknown.append(key)
            else:
                values[where] = _unit_value(value, "threshold")
        if unknown:
            raise ValueError(f"threshold names strata that are not in the pool: {unknown[:5]}; strata are {list(text)[:10]}")
        missing = [t for t, i in text.items() if np.isnan(values[i])]
        if missing:
            raise ValueError(f"threshold must give every stratum a threshold; missing {missing[:10]}")
        return values
    values = np.asarray(threshold, dtype=float)
    if len(values) != len(strata):
        raise ValueError(f"threshold must give one value per stratum ({len(strata)}), got {len(values)}: {list(values)[:10]}")
    return values


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


def _check_goal_settings(goal: str, metric: Any, threshold: Any, direction: Any, tolerance: Any) -> dict[str, Any]:
    """Check ``threshold``, ``direction`` and ``tolerance`` against the goal; resolve the direction."""
    if not isinstance(metric, str) and goal in ("decide", "gap"):
        raise ValueError(f"goal={goal!r} works on one metric, got metric={list(metric)!r}; use goal 'each' or "
                         "'overall' for several metrics, or one campaign per metric")
    if goal == "decide" and threshold is None:
        raise ValueError("goal='decide' needs threshold= (a number in (0, 1) or a mapping stratum -> number)")
    if goal != "decide" and threshold is not None:
        raise ValueError(f"threshold={threshold!r} is only used with goal='decide', got goal={goal!r}")
    if goal == "gap" and tolerance is None:
        raise ValueError("goal='gap' needs tolerance= (the largest acceptable max-min gap, in (0, 1))")
    if goal != "gap" and tolerance is not None:
        raise ValueError(f"tolerance={tolerance!r} is only used with goal='gap', got goal={goal!r}")
    if direction is not None and direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {list(DIRECTIONS)}, got {direction!r}")
    if goal != "decide" and direction is not None:
        raise ValueError(f"direction={direction!r} is only used with goal='decide', got goal={goal!r}")
    if goal == "decide" and direction is None:
        direction = "above" if metric in ABOVE_METRICS else "below"
    return {
        "threshold": _check_threshold_shape(threshold),
        "direction": direction,
        "tolerance": None if tolerance is None else _unit_value(tolerance, "tolerance"),
    }


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
    "target_halfwidth": """target_halfwidth : float
    Target credible-interval half-width, a finite number in (0, 0.5); default 0.05.""",
    "level": """level : float
    Credible level of the reported intervals (0.95 = 95%).""",
    "goal": """goal : {"each", "overall", "decide", "gap"}
    ``"each"``: every stratum's interval within the target half-width; ``"overall"``: the
    population-weighted rate's; ``"decide"``: every stratum decided against its
    ``threshold`` (``P(rate meets it)`` at least ``level``, or at most ``1 - level``);
    ``"gap"``: the verdict on the max-min gap between the strata against ``tolerance``
    decided (the audit's Bonferroni-projected gap interval wholly above or below it).""",
    "threshold": """threshold : float, dict or sequence, optional
    Goal ``"decide"``: the threshold of the rate, one number for every stratum or a
    mapping stratum -> number (every stratum named), each in (0, 1).""",
    "direction": """direction : {"below", "above"}, optional
    Goal ``"decide"``: a stratum meets the threshold when its rate is below it (default for
    error-type metrics such as ``error_rate``, ``fpr``, ``fnr``) or above it (default for
    ``accuracy``, ``recall``, ``precision``, ``specificity``, ``npv``).""",
    "margin": """margin : float
    Goal ``"decide"``: an indifference margin around the threshold. A stratum whose
    credible interval at the decision level lies within ``threshold +/- margin`` is decided
    ``"at the threshold"`` and gets no more labels; without one, a stratum whose rate sits
    near its threshold needs about ``1.645^2 rate (1 - rate) / (rate - threshold)^2``
    trials at level 0.95 (32,000 for 0.123 against 0.12). Default 0: no margin (the
    margin is the user's statement of which rates are practically at the threshold; no
    value follows from the data).""",
    "guarantee": """guarantee : {"stratum", "average"}
    What each stratum's interval and decision promise. ``"stratum"`` (default): the interval
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
    same under both. Campaign files written before this setting open as ``"average"``.""",
    "tolerance": """tolerance : float, optional
    Goal ``"gap"``: the largest acceptable max-min gap between the strata's rates, in (0, 1).""",
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
    "batch_size": """batch_size : int
    Labels per round; default 10 (a campaign's :meth:`~bayeseval.campaign.Campaign.propose`
    asks for this many unless told otherwise).""",
    "budget": """budget : int, optional
    Maximum number of labels.""",
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
    "random_seed": """random_seed : int, sequence of int, SeedSequence or Generator, optional
    Seed of the campaign's random streams (row order and the rule's draws). A campaign
    created with seed ``s`` proposes the rows of repeat 0 of a simulation with seed ``s``
    (see :func:`seed_sequences`).""",
}


def spec_docs(obj: Any) -> Any:
    """Replace the ``{spec_parameters}`` line of ``obj``'s docstring by its spec fields' entries.

    The entries of :data:`FIELD_DOCS` whose names are parameters of ``obj``, in signature
    order, indented like the placeholder line.

    Parameters
    ----------
    obj : function or class
        Documented object with a ``{spec_parameters}`` line.

    Returns
    -------
    function or class
        ``obj``, its docstring completed.
    """
    doc = obj.__doc__ or ""
    line = next(x for x in doc.splitlines() if x.strip() == "{spec_parameters}")
    indent = line[: len(line) - len(line.lstrip())]
    names = [n for n in inspect.signature(obj).parameters if n in FIELD_DOCS]
    obj.__doc__ = doc.replace(line, "\n".join(textwrap.indent(FIELD_DOCS[n], indent) for n in names))
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
    >>> spec = CampaignSpec(y_pred="pred", strata="g", target_halfwidth=0.1)
    >>> spec.strata, spec.target_halfwidth, spec.guarantee
    (('g',), 0.1, 'stratum')
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
    strata: tuple[str, ...] = ()
    metric: str = "error_rate"
    pos_label: Any = 1
    target_halfwidth: float = 0.05
    level: float = 0.95
    goal: str = "each"
    weights: Any = None
    rule: Any = "expected_width"
    model: str = "robust"
    prior: str = "default"
    score: str | None = None
    score_bins: int | tuple[float, ...] | None = None
    label_set: tuple[Any, ...] | None = None
    batch_size: int = 10
    budget: int | None = None
    annotators: int = 1
    resolve: str = "majority"
    costs: Any = None
    threshold: Any = None
    direction: str | None = None
    tolerance: float | None = None
    margin: float = 0.0
    guarantee: str = "stratum"
    random_seed: Any = None

    def __post_init__(self) -> None:
        level = check_level(self.level)
        checked = {
            "y_pred": _check_column_name(self.y_pred, "y_pred"),
            "strata": tuple(iter_columns(self.strata, "strata")),
            "metric": check_metrics(self.metric),
            "target_halfwidth": check_target_halfwidth(self.target_halfwidth),
            "level": level,
            "goal": check_method(self.goal, GOALS, "goal"),
            "weights": _check_weights_shape(self.weights),
            "rule": _check_rule(self.rule),
            "model": check_method(self.model, MODELS, "model"),
            "prior": _check_prior(self.prior),
            "score": _check_column_name(self.score, "score", optional=True),
            "score_bins": check_score_bins(self.score_bins),
            "label_set": _check_label_set(self.label_set),
            "batch_size": check_positive_int(self.batch_size, "batch_size"),
            "budget": None if self.budget is None else check_positive_int(self.budget, "budget"),
            "random_seed": check_random_seed(self.random_seed),
            "annotators": check_positive_int(self.annotators, "annotators"),
            "resolve": check_resolve(self.resolve),
            "costs": _check_costs_shape(self.costs),
            "guarantee": check_method(self.guarantee, GUARANTEES, "guarantee"),
        }
        checked.update(_check_goal_settings(checked["goal"], checked["metric"], self.threshold, self.direction,
                                            self.tolerance))
        checked["margin"] = _check_margin(self.margin, checked["goal"])
        if checked["costs"] is not None and checked["rule"] not in COST_RULES and isinstance(self.rule, str):
            raise ValueError(
                f"costs need a rule that weighs gains by cost ({', '.join(COST_RULES)}), got rule={self.rule!r}"
            )
        if not isinstance(checked["metric"], str) and isinstance(self.rule, str) and checked["rule"] not in COST_RULES:
            raise ValueError(
                f"several metrics need a rule that adds the metrics' gains ({', '.join(COST_RULES)}), got "
                f"rule={self.rule!r} with metric={list(checked['metric'])!r}"
            )
        if checked["score_bins"] is not None and checked["score"] is None:
            raise ValueError(f"score_bins={self.score_bins!r} needs a score column (score=...)")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def _key(self) -> dict[str, Any]:
        def mapping(value: Any) -> Any:
            if isinstance(value, pd.Series | dict):
                return tuple(sorted((str(k), float(v)) for k, v in value.items()))
            return value

        return {**self.to_config(), "weights": mapping(self.weights), "threshold": mapping(self.threshold),
                "rule": self.rule}

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
            The changed copy; this spec is unchanged.
        """
        return dataclasses.replace(self, **changes)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The campaign's metrics (one name, or several for a campaign on several metrics)."""
        return (self.metric,) if isinstance(self.metric, str) else tuple(self.metric)

    @property
    def rule_name(self) -> str:
        """The rule's name (a callable's ``__name__``)."""
        return get_rule(self.rule)[0]

    def rule_state(
        self, design: StrataDesign, *, successes: Any, trials: Any, labelled: Any, pending: Any, metric: str | None = None
    ) -> RuleState:
        """The rule's view of a campaign: counts per stratum plus this spec's goal and model.

        Parameters
        ----------
        design : StrataDesign
            The strata, their eligible rows, weights and prior means (:func:`design_pool`).
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
        """
        labelled = np.asarray(labelled, dtype=np.int64)
        pending = np.asarray(pending, dtype=np.int64)
        rule_model = get_rule(self.rule)[2]
        trial_known = not get_metric(self.metrics[0]).trials_need_truth
        if metric is not None:
            trial_known = get_metric(metric).trials == "all"
        return RuleState(
            strata=design.strata,
            successes=np.asarray(successes, dtype=np.int64),
            trials=np.asarray(trials, dtype=np.int64),
            labelled=labelled,
            pending=pending,
            available=np.maximum(design.n_eligible - labelled - pending, 0),
            weights=design.weights,
            target_halfwidth=self.target_halfwidth,
            level=self.level,
            goal=self.goal,
            trial_known=trial_known,
            model="independent" if rule_model == "independent" else self.model,
            prior=self.prior,
            prior_mean=design.prior_mean,
            threshold=design.threshold,
            direction=self.direction or "below",
            tolerance=self.tolerance,
            margin=self.margin,
            guarantee=self.guarantee,
        )

    def rule_states(
        self, design: StrataDesign, *, counts: dict[str, tuple[Any, Any]], labelled: Any, pending: Any
    ) -> MetricStates:
        """The rule's view of a campaign on several metrics: one :class:`RuleState` per metric.

        Parameters
        ----------
        design : StrataDesign
            The strata (:func:`design_pool`).
        counts : dict
            Metric name -> ``(successes, trials)`` per stratum.
        labelled, pending : array-like
            Labelled rows and pending proposals per stratum (shared by the metrics).

        Returns
        -------
        MetricStates
            The states, in the order of :attr:`metrics`.
        """
        states = {
            m: self.rule_state(design, successes=counts[m][0], trials=counts[m][1], labelled=labelled,
                               pending=pending, metric=m)
            for m in self.metrics
        }
        return MetricStates(states)

    def round_size(self, state: RuleState, batch_size: int | None = None) -> int:
        """Labels to ask for next: 0 when the goal is met or the budget is spent.

        Parameters
        ----------
        state : RuleState
            The campaign's current state (:meth:`rule_state`).
        batch_size : int, optional
            Rows wanted; default this spec's ``batch_size``.

        Returns
        -------
        int
            ``batch_size``, capped by the budget left after labelled and pending rows; 0 when
            the campaign should stop.
        """
        n = self.batch_size if batch_size is None else int(batch_size)
        if self.budget is not None:
            n = min(n, self.budget - int(state.labelled.sum()) - int(state.pending.sum()))
        if n <= 0 or state.is_done():
            return 0
        return n

    def allocate(
        self, state: RuleState, n: int, *, random_seed: np.random.Generator, design: StrataDesign | None = None
    ) -> np.ndarray:
        """Labels per stratum for a round of ``n``: the rule's allocation, capped by the rows left.

        Parameters
        ----------
        state : RuleState
            The campaign's current state.
        n : int
            Labels in the round (:meth:`round_size`).
        random_seed : numpy.random.Generator
            The campaign's rule generator (:func:`rule_generator`), drawn from by randomised
            rules.
        design : StrataDesign, optional
            The strata's design; when it carries unequal label costs the allocation gives each
            label to the stratum with the largest expected gain per unit cost
            (:func:`cost_allocation`).

        Returns
        -------
        numpy.ndarray
            Integer labels per stratum, aligned to ``state.strata``.
        """
        costs = None if design is None else design.costs
        if isinstance(state, MetricStates):
            return metrics_allocation(state, n, costs)
        if state.goal in ("decide", "gap") and costs is not None:
            return decision_allocation(state, n, costs).to_numpy()
        if costs is not None and np.ptp(costs) > 0:
            return cost_allocation(state, n, costs)
        rule = get_rule(self.rule)[1]
        return np.minimum(rule(state, n, random_seed).to_numpy(), state.available).astype(np.int64)

    # -- storage ---------------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """The spec as a JSON-ready dict (the settings part of a campaign file's configuration).

        Returns
        -------
        dict
            Field name -> value, with ``y_pred`` stored under its historical key
            ``prediction``; a seed that is not an integer is stored as its text.
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["prediction"] = out.pop("y_pred")
        out["strata"] = list(self.strata)
        out["rule"] = self.rule_name
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
        names = {f.name for f in dataclasses.fields(cls)} - {"y_pred", "strata", "random_seed"}
        kwargs = {name: config[name] for name in names if name in config}
        strata = list(config.get("strata") or [])
        if config.get("score_bins") is not None and strata and strata[-1] == "score_bin":
            strata = strata[:-1]
        seed = config.get("random_seed")
        kwargs.setdefault("model", "auto")  # files written before the model was a setting
        kwargs.setdefault("guarantee", "average")  # files written before the guarantee was a setting
        return cls(
            y_pred=config.get("y_pred", config.get("prediction")),
            strata=tuple(strata),
            random_seed=seed if isinstance(seed, int) else None,
            **kwargs,
        )


def spec_from_arguments(spec: Any, caller: str, settings: dict[str, Any]) -> CampaignSpec:
    """The spec a function was given: ``spec=`` itself, or one built from its keyword arguments.

    With ``spec`` every setting must be left at its default; a setting that differs is a
    TypeError naming it (pass it in the spec instead).

    Parameters
    ----------
    spec : CampaignSpec or None
        The ``spec=`` argument.
    caller : str
        The function's name, for messages.
    settings : dict
        The caller's spec keyword arguments by field name.

    Returns
    -------
    CampaignSpec
        The validated specification.
    """
    if spec is None:
        return CampaignSpec(**settings)
    if not isinstance(spec, CampaignSpec):
        raise TypeError(f"spec must be a CampaignSpec, got {type(spec).__name__}")
    defaults = {f.name: f.default for f in dataclasses.fields(CampaignSpec)}
    clash = sorted(name for name, value in settings.items() if not _is_default(name, value, defaults[name]))
    if clash:
        raise TypeError(f"{caller}() got spec= and also {clash}; set them in the spec (spec.replace(...))")
    return spec


def _is_default(name: str, value: Any, default: Any) -> bool:
    if value is None:
        return default is None or default is dataclasses.MISSING or name == "strata"
    if value is default:
        return True
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and type(value) is type(default):
        return value == default
    return name == "strata" and value in ((), [])


# -- the pool as the campaign sees it --------------------------------------------------------
@dataclass(frozen=True, eq=False)
class StrataDesign:
    """The strata of a campaign as its rule sees them.

    Attributes
    ----------
    strata : pandas.Index
        The strata, sorted (a MultiIndex for several columns).
    n_rows, n_eligible : numpy.ndarray
        Pool rows and rows that may be proposed, per stratum.
    weights : numpy.ndarray
        Population shares of the strata.
    prior_mean : numpy.ndarray or None
        Per-stratum prior guesses from the mean score.
    costs : numpy.ndarray or None
        Label cost per stratum (None: every label costs 1).
    threshold : numpy.ndarray or None
        Decision threshold per stratum (goal ``"decide"``).
    """

    strata: pd.Index
    n_rows: np.ndarray
    n_eligible: np.ndarray
    weights: np.ndarray
    prior_mean: np.ndarray | None
    costs: np.ndarray | None = None
    threshold: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class PoolDesign:
    """A pool turned into what a campaign (real or simulated) works on.

    Attributes
    ----------
    columns : list of str
        The stratum columns (``score_bin`` last when the spec bins the score).
    keys : list of tuple
        Each stratum's key as a tuple of Python scalars.
    codes : numpy.ndarray
        Each pool row's stratum code (position in ``strata``).
    eligible : numpy.ndarray
        Whether each row may be proposed (for precision-type metrics, only rows whose
        prediction makes them trials).
    labels : LabelSet
        The known labels.
    positive : object
        ``pos_label`` as a known label (or as given for metrics without a positive class).
    y_pred : numpy.ndarray
        The predictions as given, as Python scalars (object array).
    score : numpy.ndarray or None
        The score column as floats.
    strata : StrataDesign
        The strata, their sizes, weights and prior means.
    """

    columns: list[str]
    keys: list[tuple[Any, ...]]
    codes: np.ndarray
    eligible: np.ndarray
    labels: LabelSet
    positive: Any
    y_pred: np.ndarray
    score: np.ndarray | None
    strata: StrataDesign


def check_no_missing(frame: pd.DataFrame, named: Sequence[tuple[str, str]], where: str) -> None:
    """Raise naming the argument, the column and the row ids when a column has missing values.

    ``named`` pairs an argument name with a column; None, NaN, ``pd.NA`` and ``NaT`` count as
    missing.
    """
    for name, col in named:
        missing = frame[col].isna().to_numpy()
        if missing.any():
            ids = frame.index[missing][:10].tolist()
            raise ValueError(
                f"{name} column {col!r} has {int(missing.sum())} missing values (None/NaN/NA) at row ids "
                f"{ids}; fill or drop them before {where}"
            )


def check_columns(frame: Any, named: Sequence[tuple[str, str]], arg: str) -> None:
    """Check ``frame`` is a non-empty DataFrame holding every named column, or raise naming it."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{arg} must be a pandas DataFrame, got {type(frame).__name__}")
    if len(frame) == 0:
        raise ValueError(f"{arg} has no rows")
    for name, col in named:
        if col not in frame.columns:
            raise ValueError(f"{name} column {col!r} is not in {arg}; columns are {list(frame.columns)[:20]}")


def spec_columns(spec: CampaignSpec) -> list[tuple[str, str]]:
    """(argument, column) pairs of the pool columns a spec reads."""
    named = [("y_pred", spec.y_pred)] + [("strata", c) for c in spec.strata]
    return named + ([("score", spec.score)] if spec.score is not None else [])


def _score_bin_column(sc: pd.Series, score_bins: Any) -> pd.Series:
    """The ``score_bin`` stratum column (text labels of the bins)."""
    if isinstance(score_bins, int):
        bins = pd.qcut(sc, score_bins, duplicates="drop")
    else:
        bins = pd.cut(sc, list(score_bins), include_lowest=True)
    if bins.isna().any():
        raise ValueError(f"score_bins {list(score_bins) if isinstance(score_bins, tuple) else score_bins!r} "
                         "leave some scores outside every bin")
    return bins.astype(str)


def _score_values(pool: pd.DataFrame, score: str | None) -> pd.Series | None:
    if score is None:
        return None
    sc = pd.to_numeric(pool[score], errors="coerce")
    bad = sc.isna() | (sc < 0) | (sc > 1)
    if bad.any():
        ids = pool.index[bad.to_numpy()][:10].tolist()
        raise ValueError(f"score column {score!r} must hold probabilities in [0, 1] without missing values (row ids {ids})")
    return sc


def _strata_frame(pool: pd.DataFrame, spec: CampaignSpec, sc: pd.Series | None) -> tuple[pd.DataFrame, list[str]]:
    """The stratum columns (with ``score_bin`` when asked) and their names."""
    cols = list(spec.strata)
    frame = pool[cols].copy() if cols else pd.DataFrame(index=pool.index)
    if spec.score_bins is not None:
        frame["score_bin"] = _score_bin_column(sc, spec.score_bins)
        cols = [*cols, "score_bin"]
    if not cols:
        raise ValueError("give strata (one or more columns) or score_bins")
    check_no_missing(frame, [("strata", c) for c in cols], "creating a campaign")
    return frame, cols


def _prediction_values(pred: pd.Series, y_pred: str) -> tuple[np.ndarray, list[Any]]:
    """Factorize the prediction column: (codes, distinct values as Python scalars), or raise."""
    check_no_missing(pred.to_frame(), [("y_pred", y_pred)], "creating a campaign")
    codes, uniques = pd.factorize(pred.to_numpy(dtype=object) if pred.dtype == object else pred.to_numpy())
    values = [py_scalar(v) for v in uniques]
    for v in values:
        if not isinstance(v, (str, int, float)) or (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(
                f"y_pred column {y_pred!r} must hold strings, integers, finite floats or bools, "
                f"got {v!r} ({type(v).__name__})"
            )
    if any(isinstance(v, str) for v in values) and not all(isinstance(v, str) for v in values):
        raise ValueError(
            f"y_pred column {y_pred!r} mixes strings and numbers ({values[:6]!r}); "
            "labels of one type are needed so predictions and true labels compare"
        )
    return codes, values


def default_label_set(values: Sequence[Any], is_bool: bool) -> list[Any]:
    """``[0, 1]`` (``[False, True]`` for booleans) when every value is 0 or 1, else the sorted values."""
    if {label_key(v) for v in values} <= {0, 1}:
        return [False, True] if is_bool else [0, 1]
    return sorted(set(values), key=lambda v: (str(type(v)), v))


def _known_labels(pred: pd.Series, pred_values: list[Any], spec: CampaignSpec, extra: Sequence[Any]) -> LabelSet:
    """The campaign's :class:`LabelSet` (see its docstring for the default)."""
    check_class_labels(np.array(pred_values, dtype=object), "y_pred", spec.y_pred)
    if spec.label_set is None:
        return LabelSet(default_label_set([*pred_values, *extra], pred.dtype == bool), "label_set")
    labels = LabelSet(list(spec.label_set), "label_set")
    bad = [v for v in pred_values if labels.normalise(v) is None]
    if bad:
        raise ValueError(f"y_pred column {spec.y_pred!r} has values {bad[:5]} that are not in label_set {labels.values}")
    return labels


def _positive_label(labels: LabelSet, spec: CampaignSpec) -> Any:
    """``pos_label`` as a known label (class metrics), or raise naming it."""
    metric = next((get_metric(m) for m in spec.metrics if get_metric(m).needs_positive), get_metric(spec.metrics[0]))
    pos = py_scalar(spec.pos_label)
    if not metric.needs_positive:
        return pos if isinstance(pos, (str, int, float, type(None))) else str(spec.pos_label)
    known = labels.normalise(spec.pos_label)
    if known is None or known is MISSING:
        raise ValueError(
            f"pos_label {spec.pos_label!r} is not one of the campaign's labels {labels.values} (from y_pred "
            f"column {spec.y_pred!r}); metric {metric.name!r} would never count a trial for it. Pass "
            "label_set=[...] to declare a class the model never predicts"
        )
    return known


def _eligible(spec: CampaignSpec, pred_codes: np.ndarray, pred_values: list[Any], positive: Any) -> np.ndarray:
    """Rows that may be proposed: for metrics whose trials depend on the prediction only, the trials."""
    kinds = {get_metric(m).trials for m in spec.metrics}
    if not kinds <= {"pred_pos", "pred_neg"}:
        return np.ones(len(pred_codes), bool)
    is_pos = np.array([label_key(v) == label_key(positive) for v in pred_values], dtype=bool)[pred_codes]
    out = np.zeros(len(pred_codes), bool)
    if "pred_pos" in kinds:
        out |= is_pos
    if "pred_neg" in kinds:
        out |= ~is_pos
    return out


def _prior_mean(spec: CampaignSpec, sc: pd.Series | None, codes: np.ndarray, k: int) -> np.ndarray | None:
    """Per-stratum prior guesses from the mean score (``error_rate`` and ``accuracy`` only)."""
    if sc is None or not isinstance(spec.metric, str) or spec.metric not in ("error_rate", "accuracy"):
        return None
    per = pd.Series(sc.to_numpy(dtype=float)).groupby(codes).mean().reindex(range(k))
    pm = (1 - per) if spec.metric == "error_rate" else per
    return np.clip(pm.to_numpy(dtype=float), 1e-3, 1 - 1e-3)


def _strata_index(keys: list[tuple[Any, ...]], cols: list[str]) -> pd.Index:
    if len(cols) == 1:
        return pd.Index([k[0] for k in keys], name=cols[0])
    return pd.MultiIndex.from_tuples(keys, names=cols)


def population_weights(weights: Any, strata: pd.Index, n_eligible: np.ndarray) -> np.ndarray:
    """The checked population shares, or the strata's shares of the eligible rows."""
    if weights is not None:
        return check_weights(list(weights) if isinstance(weights, tuple) else weights, strata)
    total = n_eligible.sum()
    return n_eligible / total if total else np.full(len(n_eligible), 1.0 / len(n_eligible))


def design_pool(spec: CampaignSpec, pool: pd.DataFrame, *, extra_labels: Sequence[Any] = ()) -> PoolDesign:
    """Turn a pool into strata, eligible rows, known labels, weights and prior means.

    The one place where :meth:`Campaign.create` and :func:`simulate` read a pool, so both
    see the same strata (sorted keys), the same eligible rows and the same weights.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    pool : pandas.DataFrame
        Holds the spec's columns (already checked with :func:`check_columns`).
    extra_labels : sequence, optional
        Further values for the default label set (the true labels of a simulation).

    Returns
    -------
    PoolDesign
        The pool as the campaign sees it.
    """
    sc = _score_values(pool, spec.score)
    frame, cols = _strata_frame(pool, spec, sc)
    pred = pool[spec.y_pred]
    pred_codes, pred_values = _prediction_values(pred, spec.y_pred)
    labels = _known_labels(pred, pred_values, spec, extra_labels)
    positive = _positive_label(labels, spec)
    eligible = _eligible(spec, pred_codes, pred_values, positive)
    grouped = frame.groupby(cols, sort=True, observed=True)
    codes = grouped.ngroup().to_numpy()
    keys = [tuple(py_scalar(x) for x in k) if isinstance(k, tuple) else (py_scalar(k),) for k in grouped.size().index]
    strata = _strata_index(keys, cols)
    n_eligible = np.bincount(codes, weights=eligible, minlength=len(keys)).astype(np.int64)
    design = StrataDesign(
        strata=strata,
        n_rows=np.bincount(codes, minlength=len(keys)),
        n_eligible=n_eligible,
        weights=population_weights(spec.weights, strata, n_eligible),
        prior_mean=_prior_mean(spec, sc, codes, len(keys)),
        costs=stratum_costs(spec.costs, strata),
        threshold=stratum_thresholds(spec.threshold, strata),
    )
    values = np.empty(len(pred_values), dtype=object)
    values[:] = pred_values
    return PoolDesign(
        columns=cols,
        keys=keys,
        codes=codes,
        eligible=eligible,
        labels=labels,
        positive=positive,
        y_pred=values[pred_codes],
        score=None if sc is None else sc.to_numpy(dtype=float),
        strata=design,
    )


def seed_sequences(random_seed: Any, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent seed sequences from a campaign's ``random_seed``.

    A campaign uses the first; a simulation's repeat ``r`` uses the ``r``-th, so repeat 0
    replays the campaign created with the same seed.

    Parameters
    ----------
    random_seed : int, sequence of int, SeedSequence, Generator or None
        A checked seed (a Generator gives the entropy of a new sequence).
    n : int
        Number of sequences.

    Returns
    -------
    list of numpy.random.SeedSequence
        The children of the seed's sequence.
    """
    if isinstance(random_seed, np.random.Generator):
        root = np.random.SeedSequence(random_seed.integers(0, 2**63, size=4).tolist())
    elif isinstance(random_seed, np.random.SeedSequence):
        root = random_seed
    else:
        root = np.random.SeedSequence(random_seed)
    return root.spawn(n)


def proposal_order(design: PoolDesign, seed: np.random.SeedSequence) -> list[np.ndarray]:
    """Per stratum, the positions of its eligible pool rows in the order they are proposed.

    Each stratum's eligible rows (in pool order) are shuffled by one random permutation,
    drawn stratum after stratum from a generator seeded with ``seed``.

    Parameters
    ----------
    design : PoolDesign
        The pool's strata codes and eligible rows.
    seed : numpy.random.SeedSequence
        The campaign's (or the simulated repeat's) seed sequence.

    Returns
    -------
    list of numpy.ndarray
        Row positions, one array per stratum.
    """
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(design.eligible)
    rows = rows[np.argsort(design.codes[rows], kind="stable")]
    bounds = np.searchsorted(design.codes[rows], np.arange(len(design.keys) + 1))
    return [rows[a:b][rng.permutation(b - a)] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def rule_generator(seed: np.random.SeedSequence) -> np.random.Generator:
    """The random generator a campaign's rule draws from (randomised rules such as Thompson).

    Parameters
    ----------
    seed : numpy.random.SeedSequence
        The campaign's (or the simulated repeat's) seed sequence.

    Returns
    -------
    numpy.random.Generator
        A generator independent of the row order's.
    """
    return np.random.default_rng(seed.generate_state(4))


def metric_flags(metric: Any, y_true: Any, y_pred: Any, positive: Any) -> tuple[np.ndarray, np.ndarray]:
    """Trial and success flags of known labels, compared through :func:`label_key`.

    Parameters
    ----------
    metric : Metric
        The campaign's metric.
    y_true, y_pred : sequence
        Known true and predicted labels.
    positive : object
        The positive label.

    Returns
    -------
    tuple of numpy.ndarray
        ``(trial, success)`` boolean flags.
    """
    truth = np.array([label_key(v) for v in y_true], dtype=object)
    pred = np.array([label_key(v) for v in y_pred], dtype=object)
    trial, success = metric.masks(truth, pred, label_key(positive))
    return np.asarray(trial, bool), np.asarray(success, bool)


def _cost_gains(state: RuleState) -> tuple[Any, np.ndarray, np.ndarray]:
    """The expected-width rule's gain of one more label per stratum, and who may get labels.

    The same expected reduction as the ``expected_width`` rule: of the excess of a stratum's
    stopping half-width over the target, ``h sqrt(n_eff / (n_eff + t))`` after ``t`` more
    expected trials (goal ``"each"``), or of the weighted rate's variance ``sum_k c_k /
    (n_eff_k + t_k)`` (goal ``"overall"``). Returns ``(gain(t), p_trial, eligible)``.
    """
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    neff = state.posterior.n_eff().to_numpy()
    cap = state.available.astype(np.int64)
    if state.goal == "overall":
        c = state.weights**2 * state.posterior.var().to_numpy() * neff

        def gain(t: np.ndarray) -> np.ndarray:
            return c / (neff + t) - c / (neff + t + p)

        return gain, p, cap > 0
    hw = state.stop_halfwidths()
    neff = state.stop_neff()
    done = state.stratum_done()
    target = np.where(done | (hw > state.target_halfwidth), state.target_halfwidth, 0.0)

    def gain_each(t: np.ndarray) -> np.ndarray:
        h0 = hw * np.sqrt(neff / (neff + t))
        h1 = hw * np.sqrt(neff / (neff + t + p))
        return np.maximum(h0 - target, 0) - np.maximum(h1 - target, 0) + 1e-3 * (h0 - h1)

    eligible = (cap > 0) & ~done
    return gain_each, p, eligible if eligible.any() else cap > 0


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


# -- several metrics in one campaign ---------------------------------------------------------
class MetricStates:
    """The states of a campaign on several metrics, one :class:`RuleState` per metric.

    A labelled row counts for every metric it is a trial of, so the metrics share the
    labelled, pending and available rows per stratum; each has its own successes, trials,
    posterior and goal. The campaign is done when every metric's goal is met.

    Parameters
    ----------
    states : dict
        Metric name -> :class:`RuleState` (same strata and row counts).

    Examples
    --------
    >>> a = RuleState.from_counts([1, 2], [400, 400], available=[100, 100], target_halfwidth=0.05)
    >>> b = RuleState.from_counts([5, 9], [20, 20], available=[100, 100], target_halfwidth=0.05)
    >>> a.is_done(), b.is_done(), MetricStates({"fpr": a, "tpr": b}).is_done()
    (True, False, False)
    """

    def __init__(self, states: dict[str, RuleState]) -> None:
        self.states = dict(states)
        first = next(iter(self.states.values()))
        self.strata = first.strata
        self.labelled, self.pending, self.available = first.labelled, first.pending, first.available
        self.goal = first.goal

    @property
    def metrics(self) -> list[str]:
        """The metric names."""
        return list(self.states)

    def is_done(self) -> bool:
        """Whether every metric's goal is met (or nothing is left to label).

        Returns
        -------
        bool
        """
        return all(st.is_done() for st in self.states.values())

    def halfwidths(self) -> np.ndarray:
        """Per stratum, the largest half-width over the metrics.

        Returns
        -------
        numpy.ndarray
        """
        return np.max([st.halfwidths() for st in self.states.values()], axis=0)

    def read_halfwidths(self) -> np.ndarray:
        """Per stratum, the largest half-width of the read interval over the metrics.

        Returns
        -------
        numpy.ndarray
            One half-width per stratum (:meth:`RuleState.read_halfwidths` of each metric).
        """
        return np.max([st.read_halfwidths() for st in self.states.values()], axis=0)


def _metric_gains(state: RuleState) -> tuple[Any, np.ndarray, np.ndarray]:
    """One metric's gain per further trial, its ``P(trial)`` and the strata it still needs."""
    gain, p, _ = _cost_gains(state)
    cap = state.available > 0
    if state.goal == "overall":
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
