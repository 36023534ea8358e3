"""Settings of a campaign that travel together, as small value objects.

:meth:`Campaign.create <bayeseval.campaign.Campaign.create>` and :func:`~bayeseval.simulate` take
a budget with its batch size and label costs (:class:`Budget`), a score column with its bins
(:class:`Score`) and, for a real campaign, how annotations become labels (:class:`Annotation`);
``model=`` takes a :class:`~bayeseval.PooledModel` with its prior. :func:`fold_settings` turns the
flat fields of a :class:`~bayeseval.campaign.CampaignSpec` (as a campaign file stores them) into
these keywords and :func:`flat_settings` back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import check_positive_int, short_repr
from bayeseval.models.pooled import PooledModel, model_parts

__all__ = ["Budget", "Score", "Annotation", "fold_settings", "flat_settings"]


# -- checks shared with the spec ----------------------------------------------------------------
def check_score_bins(score_bins: Any, name: str = "score_bins") -> int | tuple[float, ...] | None:
    """``score_bins`` as a number of bins (>= 1) or a tuple of increasing edges, or raise naming ``name``."""
    if score_bins is None:
        return None
    if isinstance(score_bins, Integral) and not isinstance(score_bins, bool):
        if score_bins < 1:
            raise ValueError(f"{name} must be a number of bins >= 1 or a list of edges, got {score_bins!r}")
        return int(score_bins)
    if isinstance(score_bins, (str, bytes, bool)) or not np.iterable(score_bins):
        raise TypeError(f"{name} must be an int >= 1 or a sequence of bin edges, got {score_bins!r}")
    given = list(score_bins)
    try:
        edges = np.asarray(given, dtype=float)
    except (TypeError, ValueError):
        edges = np.array([np.nan])
    if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f"{name} edges must be at least two finite, strictly increasing numbers, got {given!r}")
    return tuple(float(e) for e in edges)


def check_resolve(resolve: Any, name: str = "resolve") -> str:
    """``resolve`` as ``"majority"`` or ``"annotator:NAME"``, or raise naming ``name``."""
    if not isinstance(resolve, str):
        raise TypeError(f"{name} must be 'majority' or 'annotator:NAME', got {resolve!r}")
    if resolve == "majority" or (resolve.startswith("annotator:") and resolve[len("annotator:") :].strip()):
        return resolve
    raise ValueError(f"{name} must be 'majority' or 'annotator:NAME', got {resolve!r}")


def check_costs_shape(costs: Any, name: str = "costs") -> Any:
    """``costs`` as None, a mapping, a Series or a tuple of floats, or raise naming ``name``."""
    if costs is None or isinstance(costs, (dict, pd.Series)):
        return costs
    if isinstance(costs, (str, bytes)) or not np.iterable(costs):
        raise TypeError(f"{name} must be a dict, a pandas Series or a sequence of label costs, got {costs!r}")
    return tuple(np.asarray(costs, dtype=float).tolist())


def _key(value: Any) -> Any:
    """A comparable form of a setting (a mapping or a Series as its sorted items)."""
    if isinstance(value, (dict, pd.Series)):
        return ("mapping", tuple(sorted((str(k), float(v)) for k, v in value.items())))
    return value


class _Setting:
    """Equality on the fields' comparable forms and a ``repr`` with the fields that differ from the default."""

    _first: str | None = None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_key(getattr(self, f.name)) == _key(getattr(other, f.name)) for f in fields(self))  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [] if self._first is None else [repr(getattr(self, self._first))]
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name != self._first and not (value is f.default or (isinstance(value, str) and value == f.default)):
                parts.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True, repr=False, eq=False)
class Budget(_Setting):
    """How many labels a campaign may spend, how many per round, and what each costs.

    ``budget=`` of :meth:`Campaign.create <bayeseval.campaign.Campaign.create>` and
    :func:`~bayeseval.simulate` takes the number of labels alone or this object.

    Parameters
    ----------
    labels : int, optional
        Maximum number of labels (of complete units with ``design.cluster``); None: no limit.
    batch_size : int, optional
        Labels per round (:meth:`~bayeseval.campaign.Campaign.propose` asks for this many unless
        told otherwise); default scaled to the pool,
        :func:`~bayeseval.campaign.fields.auto_batch_size`: one per 400 rows, at least 10 and at
        most 200 (50 for 20,000 rows). With ``design.cluster``: units per round, scaled to the
        pool's units.
    costs : dict, Series or sequence of float, optional
        Cost of one label per stratum (e.g. strata that need expert annotators cost more): a
        mapping from stratum to cost (strata not listed cost 1) or one positive number per
        stratum. With costs the ``expected_width`` and ``independent_beta`` rules give each label
        to the stratum with the largest expected gain per unit cost;
        :meth:`~bayeseval.campaign.Campaign.status` and
        :meth:`~bayeseval.campaign.Campaign.forecast` report the cost. Default: every label
        costs 1.

    Raises
    ------
    TypeError
        A field of the wrong type (the message names ``budget`` and the field).
    ValueError
        A number of labels or a batch size below 1.

    Examples
    --------
    >>> Budget(500, batch_size=25)
    Budget(500, batch_size=25)
    >>> Budget(costs={"north": 1, "south": 4}).labels is None
    True
    >>> Budget(0)
    Traceback (most recent call last):
    ...
    ValueError: budget.labels must be an integer >= 1, got 0
    """

    labels: int | None = None
    batch_size: int | None = field(default=None, kw_only=True)
    costs: Any = field(default=None, kw_only=True)

    _first = "labels"

    def __post_init__(self) -> None:
        for name in ("labels", "batch_size"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_positive_int(value, f"budget.{name}"))
        object.__setattr__(self, "costs", check_costs_shape(self.costs, "budget.costs"))


@dataclass(frozen=True, repr=False, eq=False)
class Score(_Setting):
    """The pool's score column, and how to bin it into a stratum column.

    ``score=`` of :meth:`Campaign.create <bayeseval.campaign.Campaign.create>` and
    :func:`~bayeseval.simulate` takes the column alone or this object.

    Parameters
    ----------
    column : str
        Column with the classifier's top-class probability; its per-stratum mean seeds an
        informative prior (``1 - mean score`` as the expected error for ``error_rate``,
        ``mean score`` for ``accuracy``).
    bins : int or sequence of float, optional
        Add a ``score_bin`` stratum column: an ``int`` (>= 1) gives that many equal-count bins,
        a sequence gives at least two strictly increasing bin edges.

    Raises
    ------
    TypeError
        ``column`` is not a column name or ``bins`` neither a number nor edges (the message
        names ``score`` and the field).
    ValueError
        Fewer than one bin, or edges that do not increase.

    Examples
    --------
    >>> Score("confidence", bins=4)
    Score('confidence', bins=4)
    >>> Score("confidence", bins=[0.5, 0.8, 1.0]).bins
    (0.5, 0.8, 1.0)
    >>> Score("confidence", bins=0)
    Traceback (most recent call last):
    ...
    ValueError: score.bins must be a number of bins >= 1 or a list of edges, got 0
    """

    column: str
    bins: int | tuple[float, ...] | None = field(default=None, kw_only=True)

    _first = "column"

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise TypeError(f"score.column must be a column name (str), got {short_repr(self.column)}")
        object.__setattr__(self, "bins", check_score_bins(self.bins, "score.bins"))


@dataclass(frozen=True, repr=False, eq=False)
class Annotation(_Setting):
    """How annotators see a campaign's rows and how their annotations become labels.

    ``annotation=`` of :meth:`Campaign.create <bayeseval.campaign.Campaign.create>`.

    Parameters
    ----------
    annotators : int, default 1
        Annotations a row needs before it is resolved into a label. Rows with fewer
        annotations, or whose annotations the ``resolve`` rule cannot settle, stay pending.
    resolve : str, default "majority"
        How several annotations of a row become its label: ``"majority"`` (the label given by
        strictly more annotators than any other, a tie leaves the row unresolved) or
        ``"annotator:NAME"`` (the label of annotator ``NAME``; rows that annotator has not
        labelled stay unresolved).
    content : str or sequence of str, optional
        Pool columns annotators need to see (text, image URLs): stored in the campaign file and
        written into every batch (:meth:`~bayeseval.campaign.Campaign.propose`,
        :meth:`~bayeseval.campaign.Campaign.pending_batch`: CSV, JSON Lines and each Label
        Studio task's ``data``); :meth:`~bayeseval.campaign.Campaign.labelstudio_config` shows
        them. Each must be a pool column other than the stratum, prediction, score and row-id
        columns and ``round``, ``label``, ``true_label``, ``bayeseval_row_id`` (checked at
        creation, a ``ValueError`` names it); values must be text, numbers, booleans, dates or
        missing.

    Raises
    ------
    TypeError
        A field of the wrong type (the message names ``annotation`` and the field).
    ValueError
        Fewer than one annotator or an unknown ``resolve`` rule.

    Examples
    --------
    >>> Annotation(annotators=3, content="text")
    Annotation(annotators=3, content='text')
    >>> Annotation(resolve="annotator:lead").annotators
    1
    >>> Annotation(resolve="vote")
    Traceback (most recent call last):
    ...
    ValueError: annotation.resolve must be 'majority' or 'annotator:NAME', got 'vote'
    """

    annotators: int = field(default=1, kw_only=True)
    resolve: str = field(default="majority", kw_only=True)
    content: str | tuple[str, ...] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "annotators", check_positive_int(self.annotators, "annotation.annotators"))
        check_resolve(self.resolve, "annotation.resolve")
        content = self.content
        if content is not None and not isinstance(content, str):
            if isinstance(content, bytes) or not np.iterable(content) or not all(isinstance(c, str) for c in content):
                raise TypeError(
                    f"annotation.content must be a column name or a list of column names, got {short_repr(content)}"
                )
            object.__setattr__(self, "content", tuple(content))


# -- between the entry points' keywords and the spec's flat fields --------------------------------
def flat_settings(*, model: Any, budget: Any, score: Any, annotation: Any = None) -> dict[str, Any]:
    """The spec's flat fields of the folded keywords (``model``, ``budget``, ``score``, ``annotation``).

    A plain value (a model's name, a number of labels, a column) keeps the other fields at their
    defaults; what is neither a plain value nor the object is left for the spec to refuse, naming
    the keyword.

    Parameters
    ----------
    model : str or PooledModel
        Its ``engine`` must be ``"exact"`` (campaigns fit the exact grid model) and its prior a
        name.
    budget : int, Budget or None
    score : str, Score or None
    annotation : Annotation, optional
        None: the defaults.

    Returns
    -------
    dict
        ``model``, ``prior``, ``budget``, ``batch_size``, ``costs``, ``score``, ``score_bins``,
        and with an ``annotation`` ``annotators``, ``resolve`` and ``content``.

    Examples
    --------
    >>> flat = flat_settings(model=PooledModel("robust", prior="bda"), budget=Budget(200, batch_size=20),
    ...                      score="conf")
    >>> flat["prior"], flat["budget"], flat["batch_size"], flat["score_bins"]
    ('bda', 200, 20, None)
    """
    name, prior, engine = model_parts(model)
    if engine != "exact":
        raise ValueError(
            f"model.engine={engine!r}: campaigns fit their pooled model with the exact grid engine; "
            f"use PooledModel({name!r}) (engine 'exact')"
        )
    if not isinstance(prior, str):
        raise TypeError(
            f"model.prior must be a prior name ('default' or 'bda') for a campaign, got {type(prior).__name__}"
        )
    out: dict[str, Any] = {"model": name, "prior": prior}
    if isinstance(budget, Budget):
        out.update(budget=budget.labels, batch_size=budget.batch_size, costs=budget.costs)
    else:
        out.update(budget=budget, batch_size=None, costs=None)
    if isinstance(score, Score):
        out.update(score=score.column, score_bins=score.bins)
    else:
        out.update(score=score, score_bins=None)
    if annotation is not None:
        if not isinstance(annotation, Annotation):
            raise TypeError(f"annotation must be an Annotation, got {short_repr(annotation)}")
        out.update(annotators=annotation.annotators, resolve=annotation.resolve, content=annotation.content)
    return out


def fold_settings(settings: dict[str, Any], *, content: Any = None) -> dict[str, Any]:
    """The keywords of :meth:`Campaign.create <bayeseval.campaign.Campaign.create>` of flat settings.

    The inverse of :func:`flat_settings`: ``prior``, ``batch_size``, ``costs``, ``score_bins``,
    ``annotators`` and ``resolve`` (each optional, default when absent) go into the model,
    budget, score and annotation objects; every other setting passes as it is.

    Parameters
    ----------
    settings : dict
        Flat settings by the spec's field names.
    content : str or sequence of str, optional
        The annotation's content columns.

    Returns
    -------
    dict
        The keyword arguments.

    Examples
    --------
    >>> fold_settings({"y_pred": "p", "budget": 300, "batch_size": 30, "prior": "bda", "model": "auto"})
    {'y_pred': 'p', 'model': PooledModel('auto', prior='bda'), 'budget': Budget(300, batch_size=30), 'score': None, 'annotation': Annotation()}
    """
    out = dict(settings)
    prior = out.pop("prior", "default")
    model = out.pop("model", "robust")
    out["model"] = PooledModel(model, prior=prior) if isinstance(model, str) else model
    budget, batch_size, costs = out.pop("budget", None), out.pop("batch_size", None), out.pop("costs", None)
    out["budget"] = Budget(budget, batch_size=batch_size, costs=costs)
    score, bins = out.pop("score", None), out.pop("score_bins", None)
    out["score"] = None if score is None else Score(score, bins=bins)
    if bins is not None and score is None:
        raise ValueError(f"score_bins={bins!r} needs a score column (score=...)")
    out["annotation"] = Annotation(
        annotators=out.pop("annotators", 1), resolve=out.pop("resolve", "majority"), content=content
    )
    return out
