"""Markdown text that shows as text: escaping for one line or one table cell.

HTML characters become entities as in the HTML output, and so do the characters that would
change the document's structure (table pipe, line breaks, code-span backtick, the backslash
escape). Entities, not backslashes, so that even a naive split on "|" or on lines sees the
right cells and rows.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["md_escape", "md_row", "printable"]

_MD_ENTITIES = {"|": "&#124;", "`": "&#96;", "\\": "&#92;", "\n": "&#10;", "\r": "&#13;",
                "\t": "&#9;"}


def md_escape(text: str) -> str:
    """Escape ``text`` so that Markdown shows it as text inside one line or one table cell.

    Examples
    --------
    >>> md_escape("a|b <c>")
    'a&#124;b &lt;c&gt;'
    """
    escaped = "".join(_MD_ENTITIES.get(ch, ch) for ch in html.escape(str(text), quote=False))
    # a table cell loses its leading and trailing spaces: keep them as entities
    body = escaped.strip(" ")
    lead = len(escaped) - len(escaped.lstrip(" "))
    trail = len(escaped) - len(escaped.rstrip(" ")) if body else 0
    return "&#32;" * lead + body + "&#32;" * trail


def printable(text: str) -> str:
    """``text`` with control characters (newline, tab...) shown as escapes, for one text line.

    Examples
    --------
    >>> printable("a\\nb")
    'a\\\\nb'
    """
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def md_row(cells: Sequence[str]) -> str:
    """One Markdown table row of escaped cells.

    Examples
    --------
    >>> md_row(["a", "b|c"])
    '| a | b&#124;c |'
    """
    return "| " + " | ".join(md_escape(c) for c in cells) + " |"
