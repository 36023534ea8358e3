"""A ``table`` dataclass field on a result class: a settable ``table`` over the results base.

:class:`bayeseval._results.Result` defines ``table`` as a read-only property; a dataclass
result that stores its table as a field (``table: pd.DataFrame``) would fail in ``__init__``
(the property has no setter). :func:`table_field` gives such a class a plain stored
``table`` attribute again, keeping the field in ``dataclasses.fields`` and the constructor.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def table_field(cls: T) -> T:
    """Class decorator: store ``table`` in the instance (apply above ``@dataclass``).

    Parameters
    ----------
    cls : type
        A dataclass deriving from ``Result`` with a ``table`` field.

    Returns
    -------
    type
        ``cls`` with ``table`` an ordinary stored attribute.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from bayeseval._results import Result
    >>> @table_field
    ... @dataclass(repr=False)
    ... class Rows(Result):
    ...     table: list
    >>> Rows([1, 2]).table
    [1, 2]
    """

    def get(self: Any) -> Any:
        return self.__dict__["table"]

    def set_(self: Any, value: Any) -> None:
        self.__dict__["table"] = value

    cls.table = property(get, set_, doc="The result as a tidy table (a field of this result).")
    return cls
