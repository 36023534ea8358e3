"""What a campaign is for: its goal, as an object that carries its parameters.

A goal says when a stratum, and the whole campaign, are done, and what the allocation rules
need to know about it. :class:`~bayeseval.campaign.goals.each.Each` (every stratum's interval within a half-width),
:class:`~bayeseval.campaign.goals.overall.Overall` (the population-weighted rate's),
:class:`~bayeseval.campaign.goals.decide.Decide` (every stratum decided against a threshold)
and :class:`~bayeseval.campaign.goals.gap.Gap` (the verdict on the max-min gap against a
tolerance) each live in a file of their own and derive from :class:`Goal`.
``Campaign.create(goal=...)`` and ``simulate(goal=...)`` take a goal object; ``"each"`` and
``"overall"`` are shorthands for ``Each()`` and ``Overall()`` (half-width 0.05). A goal
compares equal to its name.

The parameters' defaults and the keys a campaign file stores them under are listed once, in
:data:`bayeseval.campaign.fields.GOAL_FIELDS`
(:func:`~bayeseval.campaign.goals.registry.goal_settings` writes them,
:func:`~bayeseval.campaign.goals.registry.goal_from_config` reads them back).

A goal reads the campaign's state (:class:`~bayeseval.campaign.loop.rule_state.RuleState`), whose
settings are resolved per stratum (a threshold mapping becomes one value per stratum), so
:meth:`Goal.met` and :meth:`Goal.is_done` take the state. Whatever differs between the goals is
a method of the goal, so the loop, the status table, the forecast, the simulation and the
report call the goal instead of asking which goal it is: :meth:`Goal.labels_needed` (the
forecast), :meth:`Goal.status_columns` and :meth:`Goal.status_summary` (the status table),
:meth:`Goal.outcomes`, :meth:`Goal.shortfall`, :meth:`Goal.simulation_fields` and the texts
:meth:`Goal.describe`, :meth:`Goal.status_line` and :meth:`Goal.report_line`.
"""

from __future__ import annotations

import inspect
import math
import re
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayeseval._api.docs import BLOCKS, filled
from bayeseval.campaign.goals.gains import Gains
from bayeseval.campaign.goals.state import GoalState, fill_goal_doc

__all__ = ["Goal", "GOALS", "DIRECTIONS", "GOAL_SECTIONS", "strata_named", "with_goal_sections"]

#: goal names, in the order the documentation lists them
GOALS = ("each", "overall", "decide", "gap")
DIRECTIONS = ("below", "above")


def check_halfwidth(value: Any, name: str = "halfwidth") -> float:
    """A half-width as a float in (0, 0.5), or raise naming it.

    Parameters
    ----------
    value : Any
        The setting.
    name : str
        The argument's name, for messages.

    Returns
    -------
    float
        The value.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number in (0, 0.5), got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and 0 < value < 0.5):
        raise ValueError(f"{name} must be a finite number in (0, 0.5), got {value!r}")
    return value


def unit_value(value: Any, name: str) -> float:
    """A number in (0, 1) as a float, or raise naming it.

    Parameters
    ----------
    value : Any
        The setting.
    name : str
        The argument's name, for messages.

    Returns
    -------
    float
        The value.
    """
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)):
        raise TypeError(f"{name} must be a number in (0, 1), got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return value


def check_threshold(threshold: Any) -> Any:
    """``threshold`` as a float in (0, 1), a mapping, or a tuple of floats (one per stratum)."""
    if isinstance(threshold, (dict, pd.Series)):
        return threshold
    if threshold is None or isinstance(threshold, (str, bytes, bool)):
        raise TypeError(f"threshold must be a number in (0, 1) or a mapping stratum -> number, got {threshold!r}")
    if isinstance(threshold, (Real, np.number)):
        return unit_value(threshold, "threshold")
    if not np.iterable(threshold):
        raise TypeError(f"threshold must be a number in (0, 1) or a mapping stratum -> number, got {threshold!r}")
    return tuple(unit_value(v, "threshold") for v in threshold)


def check_margin(margin: Any) -> float:
    """``margin`` as a float in [0, 0.5), or raise naming it."""
    if isinstance(margin, bool) or not isinstance(margin, (Real, np.number)):
        raise TypeError(f"margin must be a number in [0, 0.5), got {margin!r}")
    value = float(margin)
    if not (0.0 <= value < 0.5):
        raise ValueError(f"margin must be a number in [0, 0.5), got {margin!r}")
    return value


#: the line of a goal method's docstring that stands for the sections of the :class:`Goal` method it overrides
GOAL_SECTIONS = "{goal_sections}"
#: a numpydoc section: its title, underline and text up to the next title
_SECTION = re.compile(
    r"^(?P<title>[A-Z][A-Za-z ]*)\n-+\n.*?(?=^[A-Z][A-Za-z ]*\n-+\n|\Z)", flags=re.MULTILINE | re.DOTALL
)


def with_goal_sections(doc: str, base: str) -> str:
    """``doc`` with its :data:`GOAL_SECTIONS` line replaced by the sections of ``base`` it lacks.

    A goal's method says what it does for that goal; its Parameters and Returns are those of
    the :class:`Goal` method it overrides, written once there. :class:`Goal` fills them in
    when a goal class is defined, so ``help()``, numpydoc and the documentation site see them.

    Parameters
    ----------
    doc : str
        The overriding method's docstring, with a line holding only ``{goal_sections}``.
    base : str
        The docstring of the :class:`Goal` method.

    Returns
    -------
    str
        ``doc`` with ``base``'s Parameters and Returns sections (those ``doc`` has not) in place
        of the line, indented like it.

    Examples
    --------
    >>> base = "Base.\\n\\n    Parameters\\n    ----------\\n    x : int\\n        An x.\\n"
    >>> print(with_goal_sections("Mine.\\n\\n    {goal_sections}\\n", base).rstrip())
    Mine.
    <BLANKLINE>
        Parameters
        ----------
        x : int
            An x.
    """
    key = GOAL_SECTIONS.strip("{}")
    own = {m.group("title") for m in _SECTION.finditer(inspect.cleandoc(filled(doc, {**BLOCKS, key: ""})))}
    taken = [
        m.group(0).rstrip()
        for m in _SECTION.finditer(inspect.cleandoc(base))
        if m.group("title") in ("Parameters", "Returns") and m.group("title") not in own
    ]
    return filled(doc, {**BLOCKS, key: "\n\n".join(taken)})


def strata_named(strata: Any, mask: np.ndarray) -> str:
    """The first five strata where ``mask`` holds, comma-separated (``", ..."`` when there are more).

    Parameters
    ----------
    strata : pandas.Index
        The strata.
    mask : numpy.ndarray of bool
        One value per stratum.

    Returns
    -------
    str
        The listing.

    Examples
    --------
    >>> strata_named(pd.Index(list("abcdefg")), np.array([True] * 6 + [False]))
    'a, b, c, d, e, ...'
    """
    return ", ".join(str(s) for s in strata[mask][:5]) + (", ..." if mask.sum() > 5 else "")


class Goal:
    """What a campaign is for; the base of :class:`Each`, :class:`Overall`, :class:`Decide` and :class:`Gap`.

    Class attributes tell the allocation rules how to treat the goal: ``weighted`` (the goal
    is on the population-weighted rate), ``decides`` (labels go where a decision is nearest,
    not where a width shrinks most), ``stops_strata`` (each stratum stops on its own and a
    stratum that is done gets no more labels), ``per_stratum`` (the per-stratum guarantee
    applies), ``has_threshold`` (each stratum is decided against a threshold, possibly within
    an indifference margin) and ``checks_feasibility`` (a per-stratum half-width target that
    the pool may not be able to reach: the campaign warns about it when it is created and
    forecast).
    """

    name: ClassVar[str] = ""
    weighted: ClassVar[bool] = False
    decides: ClassVar[bool] = False
    stops_strata: ClassVar[bool] = True
    per_stratum: ClassVar[bool] = True
    has_threshold: ClassVar[bool] = False
    checks_feasibility: ClassVar[bool] = False
    #: campaign file key -> attribute (and argument) of the goal
    _fields: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Fill the ``{goal_sections}`` line of each method's docstring (:func:`with_goal_sections`)."""
        super().__init_subclass__(**kwargs)
        for name, member in vars(cls).items():
            doc = getattr(member, "__doc__", None)
            if inspect.isfunction(member) and doc and GOAL_SECTIONS in doc:
                member.__doc__ = with_goal_sections(doc, getattr(Goal, name).__doc__)

    def settings(self) -> dict[str, Any]:
        """The goal's parameters under the keys a campaign file stores them with.

        Returns
        -------
        dict
            Key -> value (``target_halfwidth`` for the half-width).
        """
        return {key: getattr(self, attr) for key, attr in self._fields.items()}

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Goal:
        """The goal with the settings a campaign's state has resolved (not checked again).

        Parameters
        ----------
        settings : dict
            Field name -> value; the fields of :meth:`settings` are read, the others ignored.

        Returns
        -------
        Goal
            The goal object.
        """
        goal = cls.__new__(cls)
        for field, attr in cls._fields.items():
            setattr(goal, attr, settings.get(field))
        return goal

    @fill_goal_doc
    def met(self, state: GoalState) -> np.ndarray:  # pragma: no cover - every goal defines it
        """Strata that meet the goal.

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        raise NotImplementedError

    @fill_goal_doc
    def gains(self, state: GoalState, horizon: int = 10) -> Gains:  # pragma: no cover - every goal defines it
        """What one more label is worth toward the goal, per stratum (:class:`~bayeseval.campaign.goals.gains.Gains`).

        Parameters
        ----------
        {campaign_state}
        horizon : int
            Labels looked ahead, where the goal's gain depends on it (decisions).

        Returns
        -------
        Gains
            The gain function, the trial probabilities and the strata that may get labels.
        """
        raise NotImplementedError

    @fill_goal_doc
    def is_done(self, state: GoalState) -> bool:
        """Whether the campaign is done: every stratum meets the goal or has nothing left to label.

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        bool
            True when done.
        """
        return bool(np.all(self.met(state) | (state.exhausted() & (state.pending == 0))))

    @fill_goal_doc
    def reached(self, state: GoalState) -> bool:
        """Whether the goal itself is met, as opposed to the campaign stopping for want of rows.

        :meth:`is_done` also holds when every stratum that misses the goal has no row left;
        ``reached`` only when every stratum meets it (for ``"overall"`` and ``"gap"``, the
        campaign-wide verdict). A campaign that is done without reaching its goal has stopped.

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        bool
            True when the goal is met.

        Examples
        --------
        >>> from bayeseval.campaign.goals.decide import Decide
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([1, 130], [200, 1539], available=[0, 0], goal="decide",
        ...                            threshold=np.array([0.1, 0.1]), guarantee="stratum")
        >>> st.is_done(), Decide(0.1).reached(st)
        (True, False)
        """
        return bool(np.all(self.met(state)))

    @property
    def stratum_halfwidth(self) -> float | None:
        """The half-width every stratum must reach, or None when the goal sets none per stratum.

        The anytime confidence sequences are tuned for it
        (:func:`~bayeseval._kernels.guarantee.anytime_concentrations`).

        Returns
        -------
        float or None
            The target half-width of :class:`~bayeseval.campaign.goals.each.Each`, else None.

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.goals.overall import Overall
        >>> Each(0.03).stratum_halfwidth, Overall(0.03).stratum_halfwidth
        (0.03, None)
        """
        return None

    def for_metric(self, metric: str) -> Goal:
        """The goal with what depends on the campaign's metric resolved (a decision's direction).

        Parameters
        ----------
        metric : str
            The campaign's metric (canonical name).

        Returns
        -------
        Goal
            ``self``, or a resolved copy.

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> Each(0.03).for_metric("accuracy")
        Each(halfwidth=0.03)
        """
        return self

    @fill_goal_doc
    def labels_needed(self, state: GoalState) -> np.ndarray:  # pragma: no cover - every goal defines it
        """Labels each stratum still needs toward the goal (float, before capping at the rows left).

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        numpy.ndarray
            One value per stratum; NaN where it cannot be computed. The forecast
            (:func:`~bayeseval.campaign.loop.forecast.forecast_table`) caps it at the rows
            available and says why a value is missing.
        """
        raise NotImplementedError

    @fill_goal_doc
    def forecast_blocked(self, state: GoalState, empty: np.ndarray) -> str | None:
        """Why no open stratum's forecast can be made yet, or None when each stratum answers for itself.

        The goals that depend on every stratum (the weighted rate, the max-min gap) wait for
        every stratum to have labelled trials.

        Parameters
        ----------
        {campaign_state}
        empty : numpy.ndarray of bool
            Strata that still need labels and have no labelled trial yet.

        Returns
        -------
        str or None
            The reason, for every stratum that still needs labels.

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([3, 0], [40, 0], available=[500, 500])
        >>> Each().forecast_blocked(st, np.array([False, True])) is None
        True
        """
        return None

    @fill_goal_doc
    def out_of_reach(self, state: GoalState, budget_left: int | None = None) -> np.ndarray | None:
        """Which open strata the rows or the budget left are unlikely to finish, where the goal says.

        Parameters
        ----------
        {campaign_state}
        budget_left : int, optional
            Labels the budget still allows (None: no budget).

        Returns
        -------
        numpy.ndarray of object or None
            Per stratum ``"rows"``, ``"budget"`` or None; None for a goal that does not forecast
            it (only :class:`~bayeseval.campaign.goals.decide.Decide` does,
            :func:`~bayeseval.campaign.loop.forecast.decision_reach`).

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> Each().out_of_reach(RuleState.from_counts([3], [40], available=[500])) is None
        True
        """
        return None

    @fill_goal_doc
    def status_columns(self, state: GoalState) -> dict[str, Any]:
        """The goal's own columns of the status table, per stratum (none by default).

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        dict
            Column name -> one value per stratum (goal ``Decide``: ``threshold``, ``p_meets``
            and ``decision``).

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> Each().status_columns(RuleState.from_counts([3], [40], available=[500]))
        {}
        """
        return {}

    @fill_goal_doc
    def status_summary(self, state: GoalState) -> dict[str, dict[str, Any]]:
        """The campaign-wide verdict the status table carries in its ``attrs`` (none by default).

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        dict
            ``attrs`` key -> record (goal ``Overall``: ``overall``; goal ``Gap``: ``gap``).

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> Each().status_summary(RuleState.from_counts([3], [40], available=[500]))
        {}
        """
        return {}

    @fill_goal_doc
    def outcomes(self, state: GoalState) -> tuple[np.ndarray, np.ndarray]:
        """Each stratum's outcome so far, and whether it meets the goal.

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        outcome : numpy.ndarray of str
            ``"met"`` or ``"not met"`` (goal ``Decide``: its decisions).
        met : numpy.ndarray of bool
            One value per stratum.

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([1, 5], [400, 10], available=[0, 0], target_halfwidth=0.05)
        >>> Each(0.05).outcomes(st)[0].tolist()
        ['met', 'not met']
        """
        met = np.asarray(self.met(state), dtype=bool)
        return np.where(met, "met", "not met").astype(object), met

    @fill_goal_doc
    def shortfall(self, state: GoalState) -> str | None:
        """What the campaign-wide verdict still lacks, in words (None for a goal judged stratum by stratum).

        Parameters
        ----------
        {campaign_state}

        Returns
        -------
        str or None
            One phrase of :func:`~bayeseval.campaign.loop.status.outcome_text`.

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> Each().shortfall(RuleState.from_counts([3], [40], available=[500])) is None
        True
        """
        return None

    def simulation_fields(self, state: GoalState, true_rates: np.ndarray) -> dict[str, Any]:
        """The goal's own columns of a simulated run's line, judged against the true rates.

        Parameters
        ----------
        state : GoalState
            The run's final state.
        true_rates : numpy.ndarray
            The true rate per stratum.

        Returns
        -------
        dict
            Column -> value (goal ``Decide``: ``decided``, ``wrong_decisions``; goal ``Gap``:
            ``verdict``, ``true_gap``, ``wrong_verdict``); none by default.

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> Each().simulation_fields(RuleState.from_counts([3], [40], available=[500]), np.array([0.1]))
        {}
        """
        return {}

    @fill_goal_doc
    def describe(self, level: float) -> str:
        """The goal in words.

        Parameters
        ----------
        {campaign_level}

        {line_returned}

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> Each(0.03).describe(0.9)
        'each, half-width 0.03 at level 0.9'
        """
        hw = self.settings().get("target_halfwidth")
        return f"{self.name}, half-width {hw} at level {level}"

    @fill_goal_doc
    def status_line(self, level: float) -> str:
        """The goal in the status line of ``bayeseval campaign status``.

        Parameters
        ----------
        {campaign_level}

        {phrase_returned}

        Examples
        --------
        >>> from bayeseval.campaign.goals.overall import Overall
        >>> Overall(0.02).status_line(0.95)
        'target half-width 0.02 at level 0.95'
        """
        hw = self.settings().get("target_halfwidth")
        return f"target half-width {hw} at level {level}"

    @fill_goal_doc
    def report_line(self, level: float, status: pd.DataFrame) -> str:
        """The goal in the campaign's HTML report, with what the status says of it.

        Parameters
        ----------
        {campaign_level}
        status : pandas.DataFrame
            The campaign's status table (:meth:`Campaign.status <bayeseval.campaign.Campaign.status>`).

        Returns
        -------
        str
            One line (:meth:`describe` for the half-width goals; the decision goals add the
            decisions or the verdict so far).

        Examples
        --------
        >>> from bayeseval.campaign.goals.each import Each
        >>> Each(0.03).report_line(0.9, pd.DataFrame())
        'each, half-width 0.03 at level 0.9'
        """
        return self.describe(level)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self.name
        if not isinstance(other, Goal):
            return NotImplemented
        return type(self) is type(other) and repr(self.settings()) == repr(other.settings())

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        args = ", ".join(f"{attr}={getattr(self, attr)!r}" for attr in self._fields.values())
        return f"{type(self).__name__}({args})"
