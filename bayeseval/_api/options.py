"""Column settings of :func:`~bayeseval.evaluate` as small value objects: a fairness audit's groups
(:class:`Groups`) and a proxy column with its label set (:class:`Proxy`).

``groups=`` and ``proxy=`` take a column as before, or one of these objects carrying the settings
that only make sense with that column (the audit's tolerance and minimum trials; the proxy's label
set), so they are not separate keywords of the entry point.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from numbers import Real
from typing import Any

import numpy as np

from bayeseval._api.validation import check_positive_int, short_repr

__all__ = ["Groups", "Proxy"]


def _columns(value: Any, name: str) -> str | tuple[str, ...]:
    """A column name, or a non-empty tuple of distinct column names, or raise naming ``name``."""
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{name} must be a non-empty column name, got {value!r}")
        return value
    if isinstance(value, bytes) or not np.iterable(value):
        raise TypeError(f"{name} must be a column name or a list of column names, got {short_repr(value)}")
    cols = tuple(value)
    if not cols:
        raise ValueError(f"{name} must name at least one column, got {short_repr(value)}")
    if not all(isinstance(c, str) and c for c in cols):
        raise TypeError(f"{name} must be a column name or a list of column names, got {short_repr(value)}")
    return cols


def _repr(obj: Any, first: str) -> str:
    """``Name(first, field=value, ...)`` with only the keyword fields that differ from the default."""
    parts = [repr(getattr(obj, first))]
    parts += [
        f"{f.name}={getattr(obj, f.name)!r}"
        for f in fields(obj)
        if f.name != first and getattr(obj, f.name) is not f.default
    ]
    return f"{type(obj).__name__}({', '.join(parts)})"


@dataclass(frozen=True, repr=False)
class Groups:
    """The group column(s) of a fairness audit, with the audit's tolerance and minimum trials.

    ``evaluate(groups=...)`` takes the column(s) alone or this object.

    Parameters
    ----------
    columns : str or sequence of str
        Group column(s); several columns audit their crossed cells.
    tolerance : float, optional
        Largest acceptable max-min gap of the audit, in (0, 1).
    min_trials : int, optional
        Groups with fewer trials are reported but left out of the max-min gap and the verdicts
        (default: the audit's, see :func:`~bayeseval.audit`).

    Raises
    ------
    TypeError
        A field of the wrong type (the message names ``groups`` and the field).
    ValueError
        No column, a tolerance outside (0, 1) or ``min_trials`` below 1.

    Examples
    --------
    >>> Groups("sex", tolerance=0.05)
    Groups('sex', tolerance=0.05)
    >>> Groups(["sex", "age"]).columns
    ('sex', 'age')
    >>> Groups("sex", tolerance=2)
    Traceback (most recent call last):
    ...
    ValueError: groups.tolerance must be in (0, 1), got 2
    """

    columns: str | tuple[str, ...]
    tolerance: float | None = field(default=None, kw_only=True)
    min_trials: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", _columns(self.columns, "groups.columns"))
        tol = self.tolerance
        if tol is not None:
            if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, Real):
                raise TypeError(f"groups.tolerance must be a number in (0, 1), got {short_repr(tol)}")
            if not 0.0 < float(tol) < 1.0:
                raise ValueError(f"groups.tolerance must be in (0, 1), got {tol!r}")
        if self.min_trials is not None:
            check_positive_int(self.min_trials, "groups.min_trials")

    def __repr__(self) -> str:
        return _repr(self, "columns")


@dataclass(frozen=True, repr=False)
class Proxy:
    """A proxy column (a judge's label, a stronger model's prediction, a score) and its label set.

    ``evaluate(proxy=...)`` and ``audit(proxy=...)`` take the column alone or this object.

    Parameters
    ----------
    column : str
        The column known on every row (see :func:`~bayeseval.proxy_ci`).
    label_set : sequence, optional
        Every class ``y_true`` may hold, for a class that neither the predictions nor a label
        proxy take; any other such true label (e.g. ``-1`` marking unlabelled rows) is refused.

    Raises
    ------
    TypeError
        ``column`` is not a column name, or ``label_set`` not a sequence (the message names
        ``proxy`` and the field).
    ValueError
        An empty column name or an empty label set.

    Examples
    --------
    >>> Proxy("judge", label_set=[0, 1, 2])
    Proxy('judge', label_set=(0, 1, 2))
    >>> Proxy(3)
    Traceback (most recent call last):
    ...
    TypeError: proxy.column must be a column name (str), got 3
    """

    column: str
    label_set: tuple[Any, ...] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.column, str):
            raise TypeError(f"proxy.column must be a column name (str), got {short_repr(self.column)}")
        if not self.column:
            raise ValueError(f"proxy.column must be a non-empty column name, got {self.column!r}")
        labels = self.label_set
        if labels is not None:
            if isinstance(labels, (str, bytes)) or not np.iterable(labels):
                raise TypeError(f"proxy.label_set must be a sequence of labels, got {short_repr(labels)}")
            labels = tuple(labels)
            if not labels:
                raise ValueError("proxy.label_set must hold at least one label, got an empty sequence")
            object.__setattr__(self, "label_set", labels)

    def __repr__(self) -> str:
        return _repr(self, "column")


def proxy_parts(proxy: Any, label_set: Any = None) -> tuple[Any, Any]:
    """``(column, label_set)`` of a ``proxy=`` argument (a :class:`Proxy` or a column).

    ``label_set`` is the entry point's own argument (:func:`~bayeseval.audit` keeps one); it may
    not be given beside a Proxy that carries one.

    Examples
    --------
    >>> proxy_parts(Proxy("judge", label_set=[0, 1]))
    ('judge', (0, 1))
    >>> proxy_parts("judge", [0, 1])
    ('judge', [0, 1])
    """
    if not isinstance(proxy, Proxy):
        return proxy, label_set
    if label_set is not None and proxy.label_set is not None:
        raise TypeError(
            f"label_set given twice: label_set={short_repr(label_set)} and proxy.label_set="
            f"{short_repr(proxy.label_set)}; give one"
        )
    return proxy.column, proxy.label_set if proxy.label_set is not None else label_set


def groups_parts(groups: Any) -> tuple[Any, dict[str, Any]]:
    """``(columns, {"tolerance": ..., "min_trials": ...})`` of a ``groups=`` argument.

    Examples
    --------
    >>> groups_parts(Groups("sex", min_trials=5))
    ('sex', {'tolerance': None, 'min_trials': 5})
    >>> groups_parts(None)
    (None, {'tolerance': None, 'min_trials': None})
    """
    if isinstance(groups, Groups):
        return groups.columns, {"tolerance": groups.tolerance, "min_trials": groups.min_trials}
    return groups, {"tolerance": None, "min_trials": None}
