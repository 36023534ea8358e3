"""The one lossless normalisation of labels, shared by campaigns and simulations.

:class:`LabelSet` turns true labels and predictions into comparable keys (``1.0`` is ``1``;
``"1"`` is ``1`` only when the labels are numbers), so a campaign and its simulation compare
them alike.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import (
    check_class_labels,
)

__all__ = ["LabelSet", "py_scalar", "label_key", "is_missing", "is_blank", "default_label_set", "norm_rid"]

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


def norm_rid(rid: Any, integer: bool) -> Any:
    """A row id as the campaign stores it (``int`` or ``str``), or None when it cannot be one.

    Parameters
    ----------
    rid : object
        An incoming row id.
    integer : bool
        Whether the campaign's row ids are integers (else text).

    Returns
    -------
    int, str or None
        The stored form; None for a missing id, or a non-integral one where ids are integers.

    Examples
    --------
    >>> norm_rid("12", True), norm_rid(12.0, True), norm_rid(1.5, True), norm_rid(7, False)
    (12, 12, None, '7')
    """
    rid = py_scalar(rid)
    if integer:
        if isinstance(rid, bool):
            return None
        if isinstance(rid, int):
            return rid
        if isinstance(rid, float) and rid.is_integer():
            return int(rid)
        if isinstance(rid, str) and INT_TEXT.fullmatch(rid.strip()):
            return int(rid.strip())
        return None
    if rid is None or is_missing(rid):
        return None
    return str(rid)


def is_missing(value: Any) -> bool:
    """Whether ``value`` is None, NaN, ``pd.NA`` or ``NaT`` (False for containers)."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def is_blank(value: Any) -> bool:
    """Whether ``value`` is no label: missing (:func:`is_missing`) or text of spaces only.

    The one rule for a blank label in every batch format: an empty CSV cell, ``null`` in
    JSON Lines, a text of spaces, NaN and ``pd.NA`` are blank; ``0`` and ``"0"`` are not.

    Parameters
    ----------
    value : object
        A label as a file gives it.

    Returns
    -------
    bool
        True for a blank label.

    Examples
    --------
    >>> [is_blank(v) for v in (None, float("nan"), "", "  ", 0, "0")]
    [True, True, True, True, False, False]
    """
    if isinstance(value, str):
        return not value.strip()
    return is_missing(value)


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
    * ``None``, NaN, ``pd.NA``, ``NaT`` and text of spaces only (:func:`is_blank`, unless
      that text is a known label) are missing labels; any other type is invalid.

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
        if isinstance(value, str) and is_blank(value) and not (self.kind == "str" and value in self.canon):
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


def default_label_set(values: Sequence[Any], is_bool: bool) -> list[Any]:
    """``[0, 1]`` (``[False, True]`` for booleans) when every value is 0 or 1, else the sorted values."""
    if {label_key(v) for v in values} <= {0, 1}:
        return [False, True] if is_bool else [0, 1]
    return sorted(set(values), key=lambda v: (str(type(v)), v))
