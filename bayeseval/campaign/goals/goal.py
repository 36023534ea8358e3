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
:meth:`Goal.met` and :meth:`Goal.is_done` take the state.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayeseval.campaign.goals.gains import Gains

__all__ = ["Goal", "GOALS", "DIRECTIONS"]

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
        """What one more label is worth toward the goal, per stratum (:class:`~bayeseval.campaign.goals.gains.Gains`).

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
        >>> from bayeseval.campaign.goals.decide import Decide
        >>> from bayeseval.campaign.loop.rule_state import RuleState
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
