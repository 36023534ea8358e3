"""The results protocol shared by bayeseval's result objects.

Every result object (intervals, stratified estimates, posteriors, checks, plans, splits,
campaign summaries, reports, audits) derives from :class:`Result` and provides:

* ``table``: a tidy :class:`pandas.DataFrame`, one row per stratum (or per item the result is
  about), plain columns, labels in the index or in named columns;
* ``to_frame()``: a copy of ``table`` that the caller may modify;
* ``_repr_html_()``: the table as escaped HTML for Jupyter, under the result's title;
* ``__repr__()``: the class name and the table as text.

Dataclass results must be declared with ``@dataclass(repr=False)`` so that the dataclass does
not replace ``__repr__``. Rendering beyond this (reports, plots) lives in ``report`` and
``plots``; plots dispatch on result types.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, ClassVar

#: rows shown by ``__repr__`` and ``_repr_html_`` before the table is cut
MAX_ROWS = 30


class Result:
    """Base class of result objects: a tidy ``table``, ``to_frame()`` and notebook display.

    Subclasses provide ``table`` (a property or a dataclass field); everything else follows
    from it.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval._api.results import Result
    >>> class Rates(Result):
    ...     @property
    ...     def table(self):
    ...         return pd.DataFrame({"rate": [0.1, 0.2]}, index=pd.Index(["a", "b"], name="stratum"))
    >>> Rates().to_frame()["rate"].tolist()
    [0.1, 0.2]
    """

    #: heading of the HTML display; the class name when ``None``
    title: ClassVar[str | None] = None

    # ``table`` is provided by each result type, as a property or as a dataclass field (the
    # base defines no descriptor of that name, so a dataclass can store it).
    if TYPE_CHECKING:

        @property
        def table(self) -> Any: ...

    def _result_table(self) -> Any:
        if "table" not in getattr(self, "__dict__", {}) and not hasattr(type(self), "table"):
            raise NotImplementedError(f"{type(self).__name__} does not define its table")
        return self.table

    def to_frame(self) -> Any:
        """Return a copy of ``table``.

        Returns
        -------
        pandas.DataFrame
            A copy the caller may modify without changing the result.
        """
        return self._result_table().copy()

    def _heading(self) -> str:
        return self.title or type(self).__name__

    def _repr_html_(self) -> str:
        return frame_html(self._heading(), self._result_table())

    def __repr__(self) -> str:
        return f"{self._heading()}\n{self._result_table().to_string(max_rows=MAX_ROWS)}"


def frame_html(title: str, frame: Any) -> str:
    """A table as escaped HTML under a bold title (the notebook display of results)."""
    body = frame.to_html(max_rows=MAX_ROWS, escape=True, float_format=lambda x: f"{x:.4g}")
    return f"<div><strong>{html.escape(title)}</strong>{body}</div>"


class OneRowResult(Result):
    """A dataclass result whose tidy table is one row holding its fields (plans, decisions)."""

    if TYPE_CHECKING:  # set by ``@dataclass`` on each subclass
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dictionary.

        Returns
        -------
        dict
            Field name to value.
        """
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    @property
    def table(self) -> Any:
        """The result as a one-row DataFrame, one column per field."""
        import pandas as pd  # deferred: fast start-up

        return pd.DataFrame([self.to_dict()])
