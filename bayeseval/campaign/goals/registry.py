"""Goals by name: the shorthands the API accepts and the goal a campaign file stores."""

from __future__ import annotations

from typing import Any

from bayeseval.campaign.fields import GOAL_FIELDS
from bayeseval.campaign.goals.decide import Decide
from bayeseval.campaign.goals.each import Each
from bayeseval.campaign.goals.gap import Gap
from bayeseval.campaign.goals.goal import GOALS, Goal
from bayeseval.campaign.goals.overall import Overall

__all__ = ["as_goal", "goal_settings", "goal_from_config", "state_goal"]

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


#: what a campaign's state reads for a goal setting its goal leaves open (the goal's own otherwise)
STATE_GOAL_DEFAULTS: dict[str, Any] = {
    "target_halfwidth": 0.05,
    "threshold": None,
    "direction": "below",
    "tolerance": None,
    "margin": 0.0,
}


def goal_setting_view(key: str) -> property:
    """A read-only view of a state's goal's setting ``key`` (its campaign file key), or the state's default."""

    def read(self: Any) -> Any:
        value = self.goal.settings().get(key)
        return STATE_GOAL_DEFAULTS[key] if value is None else value

    return property(read, doc=f"The goal's ``{key}`` (:attr:`goal`; {STATE_GOAL_DEFAULTS[key]!r} when it has none).")


def state_goal(goal: Any, settings: dict[str, Any], defaults: dict[str, Any] | None = None) -> Goal:
    """The goal of a campaign's state: the goal with the settings the state resolved for it.

    The state's goal is the one source of its parameters: a threshold resolved per stratum
    replaces the goal's own (a number or a mapping), and a setting left open (a decision's
    direction) takes the state's default. A setting the goal does not have is ignored.

    Parameters
    ----------
    goal : Goal or str
        The goal object, or its name (``"each"``, ``"overall"``, ``"decide"``, ``"gap"``).
    settings : dict
        Goal settings under their campaign file keys (``target_halfwidth``, ``threshold``,
        ``direction``, ``margin``, ``tolerance``) that replace the goal's own; None values are
        not given.
    defaults : dict, optional
        Values for the settings that are still None.

    Returns
    -------
    Goal
        ``goal`` itself when nothing changes, else a goal of its class with the merged settings
        (not checked again).

    Examples
    --------
    >>> import numpy as np
    >>> state_goal(Decide(0.1), {"threshold": np.array([0.1, 0.2])}, {"direction": "below"})
    Decide(threshold=array([0.1, 0.2]), direction='below', margin=0.0)
    >>> state_goal("gap", {"tolerance": 0.05, "margin": 0.0})
    Gap(tolerance=0.05)
    """
    obj = goal if isinstance(goal, Goal) else None
    if obj is None and goal not in _CLASSES:
        raise ValueError(f"goal must be one of {list(GOALS)} or a goal object, got {goal!r}")
    cls = _CLASSES[goal] if obj is None else type(obj)
    own = {} if obj is None else obj.settings()
    merged = {}
    for key in cls._fields:
        value = settings.get(key)
        value = own.get(key) if value is None else value
        merged[key] = (defaults or {}).get(key) if value is None else value
    if obj is not None and all(merged[key] is own[key] for key in cls._fields):
        return obj
    return cls.from_settings(merged)
