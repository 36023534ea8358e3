"""Internal column names that cannot collide with the user's columns.

DuckDB and Spark compare column names without regard to case, so a name is
free only when no user column equals it case-insensitively.
"""

from __future__ import annotations

from collections.abc import Iterable


def fresh_names(taken: Iterable[object], bases: Iterable[str]) -> list[str]:
    """Return one name per base, each absent from ``taken`` and from each other.

    A base already taken gets the first free suffix ``_1``, ``_2``, ...

    Parameters
    ----------
    taken : iterable
        Names in use (compared without regard to case).
    bases : iterable of str
        The wanted names.

    Returns
    -------
    list of str
        One free name per base, in order.

    Examples
    --------
    >>> fresh_names(["z", "__KEY", "__key_1"], ["z", "__key", "__rank"])
    ['z_1', '__key_2', '__rank']
    """
    used = {str(c).lower() for c in taken}
    out = []
    for base in bases:
        name, i = base, 0
        while name.lower() in used:
            i += 1
            name = f"{base}_{i}"
        used.add(name.lower())
        out.append(name)
    return out
