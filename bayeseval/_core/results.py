"""Dataclass results that store their tidy table in a field named ``table``."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T", bound=type)


def stores_table(cls: T) -> T:
    """Let a dataclass result keep its tidy table in a field named ``table``.

    ``Result.table`` is a read-only property; a plain class attribute of the same name in the
    subclass shadows it, so the dataclass ``__init__`` can store the field on the instance.
    Apply this decorator above ``@dataclass`` and declare the field as ``table: DataFrame =
    field()``: without ``field()`` the dataclass would take the inherited property as the
    field's default value.

    Examples
    --------
    >>> from dataclasses import dataclass, field
    >>> from bayeseval._results import Result
    >>> @stores_table
    ... @dataclass(frozen=True, repr=False)
    ... class Plan(Result):
    ...     table: object = field()
    ...     level: float = 0.95
    >>> Plan(table="rows").table
    'rows'
    """
    cls.table = None  # type: ignore[attr-defined]
    return cls
