"""What a campaign is for: its goal, as an object that carries its parameters.

A goal says when a stratum, and the whole campaign, are done, and what the allocation rules
need to know about it. :class:`Each` (every stratum's interval within a half-width),
:class:`Overall` (the population-weighted rate's), :class:`Decide` (every stratum decided
against a threshold) and :class:`Gap` (the verdict on the max-min gap against a tolerance).
``Campaign.create(goal=...)`` and ``simulate(goal=...)`` take a goal object; ``"each"`` and
``"overall"`` are shorthands for ``Each()`` and ``Overall()`` (half-width 0.05). A goal
compares equal to its name.

The parameters' defaults and the keys a campaign file stores them under are listed once, in
:data:`bayeseval.campaign.fields.GOAL_FIELDS` (:func:`goal_settings` writes them,
:func:`goal_from_config` reads them back).

A goal reads the campaign's state (:class:`~bayeseval.campaign.verdicts.RuleState`), whose
settings are resolved per stratum (a threshold mapping becomes one value per stratum), so
:meth:`Goal.met` and :meth:`Goal.is_done` take the state.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayeseval.campaign.fields import GOAL_DEFAULTS, GOAL_FIELDS
from bayeseval.campaign.gains import Gains, decision_gains, gap_gains, weighted_gains, width_gains

__all__ = ["Goal", "Each", "Overall", "Decide", "Gap", "GOALS", "as_goal", "goal_settings", "goal_from_config"]

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


class Goal:
    """What a campaign is for; the base of :class:`Each`, :class:`Overall`, :class:`Decide` and :class:`Gap`.

    Class attributes tell the allocation rules how to treat the goal: ``weighted`` (the goal
    is on the population-weighted rate), ``decides`` (labels go where a decision is nearest,
    not where a width shrinks most), ``stops_strata`` (each stratum stops on its own and a
    stratum that is done gets no more labels) and ``per_stratum`` (the per-stratum guarantee
    applies).
    """

    name: ClassVar[str] = ""
    weighted: ClassVar[bool] = False
    decides: ClassVar[bool] = False
    stops_strata: ClassVar[bool] = True
    per_stratum: ClassVar[bool] = True
    #: campaign file key -> attribute (and argument) of the goal
    _fields: ClassVar[dict[str, str]] = {}

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

    def met(self, state: Any) -> np.ndarray:  # pragma: no cover - every goal defines it
        """Strata that meet the goal (one bool per stratum)."""
        raise NotImplementedError

    def gains(self, state: Any, horizon: int = 10) -> Gains:  # pragma: no cover - every goal defines it
        """What one more label is worth toward the goal, per stratum (:class:`~bayeseval.campaign.gains.Gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Labels looked ahead, where the goal's gain depends on it (decisions).

        Returns
        -------
        Gains
            The gain function, the trial probabilities and the strata that may get labels.
        """
        raise NotImplementedError

    def is_done(self, state: Any) -> bool:
        """Whether the campaign is done: every stratum meets the goal or has nothing left to label.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when done.
        """
        return bool(np.all(self.met(state) | (state.exhausted() & (state.pending == 0))))

    def reached(self, state: Any) -> bool:
        """Whether the goal itself is met, as opposed to the campaign stopping for want of rows.

        :meth:`is_done` also holds when every stratum that misses the goal has no row left;
        ``reached`` only when every stratum meets it (for ``"overall"`` and ``"gap"``, the
        campaign-wide verdict). A campaign that is done without reaching its goal has stopped.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when the goal is met.

        Examples
        --------
        >>> from bayeseval.campaign.verdicts import RuleState
        >>> st = RuleState.from_counts([1, 130], [200, 1539], available=[0, 0], goal="decide",
        ...                            threshold=np.array([0.1, 0.1]), guarantee="stratum")
        >>> st.is_done(), Decide(0.1).reached(st)
        (True, False)
        """
        return bool(np.all(self.met(state)))

    def describe(self, level: float) -> str:
        """The goal in words.

        Parameters
        ----------
        level : float
            The campaign's level.

        Returns
        -------
        str
            One line.
        """
        hw = self.settings().get("target_halfwidth")
        return f"{self.name}, half-width {hw} at level {level}"

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


class Each(Goal):
    """Every stratum's interval within ``halfwidth``.

    Parameters
    ----------
    halfwidth : float
        Target half-width, in (0, 0.5).

    Examples
    --------
    >>> Each(0.05) == "each", Each(0.05).settings()
    (True, {'target_halfwidth': 0.05})
    >>> Each()
    Each(halfwidth=0.05)
    """

    name = "each"
    _fields = {"target_halfwidth": "halfwidth"}

    def __init__(self, halfwidth: float = GOAL_DEFAULTS["halfwidth"]) -> None:
        self.halfwidth = check_halfwidth(halfwidth, "halfwidth")

    def met(self, state: Any) -> np.ndarray:
        """Strata whose stopping interval (:meth:`RuleState.stop_halfwidths`) is within the target.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return state.stop_halfwidths() <= state.target_halfwidth

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The expected reduction of each stratum's excess half-width (:func:`~bayeseval.campaign.gains.width_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Not used (one label's gain is known in closed form).

        Returns
        -------
        Gains
            Strata not done with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.verdicts import RuleState
        >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
        >>> g = Each(0.05).gains(st)
        >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
        True
        """
        return width_gains(state)


class Overall(Goal):
    """The population-weighted rate's interval within ``halfwidth``.

    Parameters
    ----------
    halfwidth : float
        Target half-width, in (0, 0.5).

    Examples
    --------
    >>> Overall(0.02).weighted, Overall(0.02) == "overall"
    (True, True)
    """

    name = "overall"
    _fields = {"target_halfwidth": "halfwidth"}
    weighted = True
    stops_strata = False
    per_stratum = False

    def __init__(self, halfwidth: float = GOAL_DEFAULTS["halfwidth"]) -> None:
        self.halfwidth = check_halfwidth(halfwidth, "halfwidth")

    def _reached(self, state: Any) -> bool:
        _, lo, hi = state.overall()
        return bool((hi - lo) / 2 <= state.target_halfwidth)

    def met(self, state: Any) -> np.ndarray:
        """Every stratum alike: whether the weighted rate's half-width is within the target.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return np.full(len(state.strata), self._reached(state))

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The expected reduction of the weighted rate's variance (:func:`~bayeseval.campaign.gains.weighted_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Not used.

        Returns
        -------
        Gains
            Every stratum with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.verdicts import RuleState
        >>> st = RuleState.from_counts([5, 5], [20, 200], available=[50, 50], goal="overall", weights=[0.5, 0.5])
        >>> g = Overall(0.02).gains(st)
        >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
        True
        """
        return weighted_gains(state)

    def is_done(self, state: Any) -> bool:
        """The weighted rate's half-width within the target, or no row left anywhere.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when done.
        """
        return self._reached(state) or bool(state.exhausted().all())

    def reached(self, state: Any) -> bool:
        """Whether the weighted rate's half-width is within the target (:meth:`Goal.reached`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when the goal is met.
        """
        return self._reached(state)


class Decide(Goal):
    """Every stratum decided against ``threshold``: meets it, fails it, or (with a margin) at it.

    Parameters
    ----------
    threshold : float, dict or sequence
        The rate's threshold: one number in (0, 1) for every stratum, or a mapping stratum ->
        number (every stratum named), or one number per stratum.
    direction : {"below", "above"}, optional
        A stratum meets the threshold when its rate is below it or above it; default: above
        for accuracy-type metrics, below for error-type ones (resolved by the campaign).
    margin : float
        Indifference margin in [0, 0.5): a stratum whose interval lies within
        ``threshold +/- margin`` is decided ``"at the threshold"``.

    Examples
    --------
    >>> Decide(0.1, "below").settings()
    {'threshold': 0.1, 'direction': 'below', 'margin': 0.0}
    """

    name = "decide"
    _fields = {"threshold": "threshold", "direction": "direction", "margin": "margin"}
    decides = True

    def __init__(
        self,
        threshold: Any,
        direction: str | None = GOAL_DEFAULTS["direction"],
        margin: float = GOAL_DEFAULTS["margin"],
    ) -> None:
        self.threshold = check_threshold(threshold)
        if direction is not None and direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {list(DIRECTIONS)}, got {direction!r}")
        self.direction = direction
        self.margin = check_margin(margin)

    def met(self, state: Any) -> np.ndarray:
        """Strata decided on one side of the threshold or at it.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return state.side_decided() | state.at_threshold()

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The expected progress toward each stratum's decision (:func:`~bayeseval.campaign.gains.decision_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Labels looked ahead (the allocation passes its batch size, at least 5).

        Returns
        -------
        Gains
            Undecided strata with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.verdicts import RuleState
        >>> st = RuleState.from_counts([0, 3], [100, 30], available=[500, 500], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> Decide(0.1).gains(st).eligible.tolist()  # stratum 0 is decided
        [False, True]
        """
        return decision_gains(state, horizon)

    def describe(self, level: float) -> str:
        """The goal in words.

        Parameters
        ----------
        level : float
            The campaign's level.

        Returns
        -------
        str
            One line.
        """
        return f"decide each stratum against threshold {self.threshold} ({self.direction}) at level {level}"


class Gap(Goal):
    """The verdict on the max-min gap between the strata's rates decided against ``tolerance``.

    Parameters
    ----------
    tolerance : float
        The largest acceptable max-min gap, in (0, 1).

    Examples
    --------
    >>> Gap(0.05).settings()
    {'tolerance': 0.05}
    """

    name = "gap"
    _fields = {"tolerance": "tolerance"}
    decides = True
    stops_strata = False

    def __init__(self, tolerance: float) -> None:
        self.tolerance = unit_value(tolerance, "tolerance")

    def met(self, state: Any) -> np.ndarray:
        """Every stratum alike: whether the gap verdict is decided.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return np.full(len(state.strata), state.gap()["verdict"] != "undecided")

    def gains(self, state: Any, horizon: int = 10) -> Gains:
        """The half-width reduction of the strata that keep the verdict open (:func:`~bayeseval.campaign.gains.gap_gains`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.
        horizon : int
            Not used.

        Returns
        -------
        Gains
            The strata of :func:`~bayeseval.campaign.gains.gap_targets` with rows left.

        Examples
        --------
        >>> from bayeseval.campaign.verdicts import RuleState
        >>> st = RuleState.from_counts([2, 9], [40, 40], available=[100, 100], goal="gap", tolerance=0.05)
        >>> bool(Gap(0.05).gains(st).one(0, 0.0) > 0)
        True
        """
        return gap_gains(state)

    def is_done(self, state: Any) -> bool:
        """The verdict decided with trials in every stratum, or nothing left to label.

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when done.
        """
        return state.gap_decided() or bool(np.all(state.exhausted() & (state.pending == 0)))

    def reached(self, state: Any) -> bool:
        """Whether the gap verdict is decided with every stratum's data behind it (:meth:`Goal.reached`).

        Parameters
        ----------
        state : RuleState
            The campaign's state.

        Returns
        -------
        bool
            True when the goal is met.
        """
        return state.gap_decided()

    def describe(self, level: float) -> str:
        """The goal in words.

        Parameters
        ----------
        level : float
            The campaign's level.

        Returns
        -------
        str
            One line.
        """
        return f"decide whether the max-min gap is within {self.tolerance} at level {level}"


_CLASSES: dict[str, type[Goal]] = {"each": Each, "overall": Overall, "decide": Decide, "gap": Gap}
#: what a goal that needs a parameter must be given instead of its name
_NEEDS = {
    "decide": "Decide(threshold) (e.g. Decide(0.1, 'below', margin=0.02))",
    "gap": "Gap(tolerance) (e.g. Gap(0.05))",
}


def as_goal(goal: Any) -> Goal:
    """A goal object from a goal object or the shorthand ``"each"`` / ``"overall"``.

    Parameters
    ----------
    goal : Goal or str
        A goal, or ``"each"`` (``Each()``) or ``"overall"`` (``Overall()``), with the default
        half-width. ``"decide"`` and ``"gap"`` need a threshold or a tolerance: a ``ValueError``
        says to pass ``Decide(threshold)`` or ``Gap(tolerance)``.

    Returns
    -------
    Goal
        The goal object.

    Examples
    --------
    >>> as_goal("overall")
    Overall(halfwidth=0.05)
    >>> as_goal(Gap(0.05)) == "gap"
    True
    """
    if isinstance(goal, Goal):
        return goal
    if isinstance(goal, str) and goal in _NEEDS:
        raise ValueError(f"goal={goal!r} needs its parameters: pass goal={_NEEDS[goal]}")
    if not isinstance(goal, str) or goal not in _CLASSES:
        raise ValueError(
            f"goal must be a goal object (Each, Overall, Decide, Gap) or one of 'each', 'overall', got {goal!r}"
        )
    return _CLASSES[goal]()


def goal_settings(goal: Goal) -> dict[str, Any]:
    """Every goal parameter under its campaign file key: the goal's own, the defaults for the others.

    A campaign file stores all of them, whatever the goal, so files keep one set of keys.

    Parameters
    ----------
    goal : Goal
        The goal.

    Returns
    -------
    dict
        Key -> value, in the order of :data:`~bayeseval.campaign.fields.GOAL_FIELDS`.

    Examples
    --------
    >>> goal_settings(Gap(0.05))
    {'target_halfwidth': 0.05, 'threshold': None, 'direction': None, 'margin': 0.0, 'tolerance': 0.05}
    """
    return {**{f.key: f.default for f in GOAL_FIELDS}, **goal.settings()}


def goal_from_config(config: dict[str, Any]) -> Goal:
    """The goal a campaign file stores: its name under ``goal``, its parameters under their keys.

    Parameters
    ----------
    config : dict
        A campaign file's configuration (:func:`goal_settings` keys; a missing goal is ``"each"``,
        a missing parameter takes its default).

    Returns
    -------
    Goal
        The goal object, checked.

    Examples
    --------
    >>> goal_from_config({"goal": "decide", "threshold": [0.1, 0.2], "direction": "below", "margin": 0.0})
    Decide(threshold=(0.1, 0.2), direction='below', margin=0.0)
    """
    name = config.get("goal", "each")
    if name not in _CLASSES:
        raise ValueError(f"goal must be one of {list(GOALS)}, got {name!r}")
    cls = _CLASSES[name]
    given = {attr: config[key] for key, attr in cls._fields.items() if config.get(key) is not None}
    missing = [f.key for f in GOAL_FIELDS if f.required and name in f.goals and f.name not in given]
    if missing:
        raise ValueError(f"goal {name!r} needs {missing[0]}, got none")
    return cls(**given)


def state_goal(goal: Any, settings: dict[str, Any]) -> Goal:
    """The goal of a campaign's state: ``goal`` itself, or the named goal with the state's settings.

    Parameters
    ----------
    goal : Goal or str
        The state's ``goal``.
    settings : dict
        The state's resolved goal settings under their campaign file keys (``target_halfwidth``,
        ``threshold``, ...).

    Returns
    -------
    Goal
        The goal object.
    """
    if isinstance(goal, Goal):
        return goal
    if goal not in _CLASSES:
        raise ValueError(f"goal must be one of {list(GOALS)} or a goal object, got {goal!r}")
    return _CLASSES[goal].from_settings(settings)
