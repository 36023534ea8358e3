"""Display labels joined from several parts (group values, column names) that never collide.

A part is written bare unless it could be misread next to the separator: a part that holds a
double quote, the separator, starts or ends with the separator's mark or with a space, or is
empty is JSON-quoted. The joined text then reads back one way only, so two different tuples
of parts never share a label.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["join_parts", "unique_labels"]


def _part(value: Any, sep: str) -> str:
    text = str(value)
    mark = sep.strip()
    ambiguous = (
        '"' in text
        or sep in text
        or text != text.strip()
        or not text
        or text.startswith(mark + " ")
        or text.endswith(" " + mark)
    )
    return json.dumps(text, ensure_ascii=False) if ambiguous else text


def join_parts(parts: Iterable[Any], sep: str) -> str:
    """The parts joined by ``sep``, each part that could be misread JSON-quoted.

    Examples
    --------
    >>> join_parts(["sex", "race"], " x "), join_parts(["sex x race"], " x ")
    ('sex x race', '"sex x race"')
    """
    return sep.join(_part(p, sep) for p in parts)


def unique_labels(keys: Sequence[tuple], sep: str) -> list[str]:
    """One label per key (a tuple of parts), distinct for distinct keys.

    Parts whose texts coincide (the number 1 and the text ``"1"``) are written as their
    ``repr`` when the plain labels would collide.

    Examples
    --------
    >>> unique_labels([("a | b", "c"), ("a", "b | c")], " | ")
    ['"a | b" | c', 'a | "b | c"']
    >>> unique_labels([(1,), ("1",)], " | ")
    ['1', "'1'"]
    """
    labels = [join_parts(k, sep) for k in keys]
    if len(set(labels)) < len(set(keys)):
        labels = [sep.join(repr(p) for p in k) for k in keys]
    return labels
