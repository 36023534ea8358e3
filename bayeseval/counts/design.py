"""The sampling design of a set of rows: which rows form one unit, how rows were chosen, which population.

One value object, :class:`Design`, stated once and passed as ``design=`` wherever rows are read,
as R's ``survey`` package states ``svydesign(ids=, strata=, weights=)`` once for every estimator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from bayeseval._api.validation import short_repr

__all__ = ["Design", "as_design", "POPULATIONS"]

#: the populations a design may stand for
POPULATIONS = ("process", "pool")


@dataclass(frozen=True, repr=False)
class Design:
    """How the rows were sampled: the unit of sampling, the inclusion probabilities, the population.

    Parameters
    ----------
    cluster : str or None
        A column; rows sharing its value within a stratum are one sampling unit (the answers of
        one item over several epochs, the questions on one passage, the turns of one
        conversation). None: each row is its own unit. For per-stratum counts the unit is the
        pair (stratum, cluster value): a cluster whose rows fall in two strata counts as one
        unit in each.
    inclusion : str or None
        A column of per-row inclusion probabilities in (0, 1] (the chance each row was chosen,
        for instance for labelling). None: rows drawn at random within each stratum.
    population : {"process", "pool"}
        ``"process"`` (default): the rate of the process that produced the rows.
        ``"pool"``: the rate of the rows of the pool itself, a finite population.

    Raises
    ------
    TypeError
        ``cluster`` or ``inclusion`` is not a column name (the message names ``design``, the
        field and the value).
    ValueError
        An empty column name, or ``population`` other than ``"process"`` or ``"pool"``.

    Examples
    --------
    >>> Design(cluster="item")
    Design(cluster='item')
    >>> Design(cluster="item").describe()
    "intervals treat the rows sharing an 'item' as one unit"
    >>> Design(population="pool").population
    'pool'
    """

    cluster: str | None = None
    inclusion: str | None = None
    population: str = "process"

    def __post_init__(self) -> None:
        for name in ("cluster", "inclusion"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise TypeError(f"design.{name} must be a column name (str) or None, got {short_repr(value)}")
            if not value:
                raise ValueError(f"design.{name} must be a non-empty column name, got {value!r}")
        if not isinstance(self.population, str) or self.population not in POPULATIONS:
            raise ValueError(
                f"design.population must be one of {', '.join(map(repr, POPULATIONS))}, "
                f"got {short_repr(self.population)}"
            )

    def __repr__(self) -> str:
        # only the fields that differ from the default, as they would be typed
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if getattr(self, f.name) != f.default]
        return f"Design({', '.join(parts)})"

    @property
    def clustered(self) -> bool:
        """Whether rows are grouped into units (``cluster`` is set)."""
        return self.cluster is not None

    @property
    def is_default(self) -> bool:
        """Whether this is the default design: each row its own unit, drawn at random, from a process."""
        return self == Design()

    def describe(self, counts: Any = None, *, groups: bool = False) -> str:
        """The design in words, with the sizes of ``counts`` when given.

        Parameters
        ----------
        counts : Counts, optional
            Counts tabulated under this design (:func:`~bayeseval.tabulate` with ``design=``);
            their ``units`` give the number of units and their sizes.
        groups : bool
            Call the levels of ``counts`` groups (an audit), not strata.

        Returns
        -------
        str
            For example ``"600 items in 12 strata, 5 rows each; intervals treat the item as the
            unit"``, ``"... 1-20 rows each (mean 4.2) ..."``, or ``"1000 rows in 4 strata; each
            row is its own unit"``.

        Examples
        --------
        >>> import pandas as pd
        >>> from bayeseval import tabulate
        >>> df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "ok": [1, 0, 1, 1, 0, 0], "g": list("aabbbb")})
        >>> d = Design(cluster="item")
        >>> d.describe(tabulate(df, outcome="ok", strata="g", design=d))
        '3 items in 2 strata, 2 rows each; intervals treat the item as the unit'
        >>> Design().describe(tabulate(df, outcome="ok", strata="g", design=Design()))
        '6 rows in 2 strata; each row is its own unit'
        >>> d.describe(tabulate(df, outcome="ok", strata="g", design=d), groups=True)
        '3 items in 2 groups, 2 rows each; intervals treat the item as the unit'
        """
        units = getattr(counts, "units", None) if counts is not None else None
        parts = [self._sizes(counts, units, groups)] if counts is not None else []
        if self.cluster is None:
            parts.append("each row is its own unit")
        elif units is not None:
            parts.append(f"intervals treat the {_noun(self.cluster)} as the unit")
        else:
            parts.append(f"intervals treat the rows sharing {_article(self.cluster)} {self.cluster!r} as one unit")
        if getattr(counts, "clusters_span_strata", False):
            parts.append(f"some {_noun(self.cluster or '', plural=True)} span strata: each part counts as a unit")
        if self.inclusion is not None:
            parts.append(f"rows weighted by the inverse of their inclusion probability ({self.inclusion!r})")
        if self.population == "pool":
            parts.append("the population is the pool of rows itself")
        return "; ".join(p for p in parts if p)

    def _sizes(self, counts: Any, units: Any, groups: bool = False) -> str:
        strata = len(counts)
        where = (
            f"in {strata} {'group' if strata == 1 else 'groups'}"
            if groups
            else f"in {strata} strat{'um' if strata == 1 else 'a'}"
        )
        if self.cluster is None or units is None:
            rows = int(np.sum(np.asarray(counts.trials)))
            return f"{rows} row{'' if rows == 1 else 's'} {where}"
        n = units["units"].to_numpy(np.int64)
        size = units["unit_trials"].to_numpy(np.int64)
        total = int(n.sum())
        noun = _noun(self.cluster, plural=total != 1)
        if total == 0:
            return f"0 {noun} {where}"
        lo, hi = int(size.min()), int(size.max())
        if lo == hi:
            each = f"{lo} row{'' if lo == 1 else 's'} each"
        else:
            each = f"{lo}-{hi} rows each (mean {float((n * size).sum()) / total:.1f})"
        return f"{total} {noun} {where}, {each}"


def _noun(column: str, plural: bool = False) -> str:
    """A word for the units of ``column``: the name itself when it is a word (``item`` -> ``items``)."""
    word = column.strip()
    if not word.replace("_", "").isalpha() or "_" in word:
        return f"{column!r} {'clusters' if plural else 'cluster'}"
    if not plural or word.endswith("s"):
        return word
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def as_design(design: Design | Mapping[str, Any] | None) -> Design:
    """Return ``design`` as a :class:`Design`.

    Parameters
    ----------
    design : Design, dict or None
        A Design (returned as is), a dict of its fields, or None (the default design: each row
        its own unit).

    Returns
    -------
    Design
        The design, validated.

    Raises
    ------
    TypeError
        Another type, or a dict with a key that is not a field (the message names ``design``
        and the value).

    Examples
    --------
    >>> as_design({"cluster": "item"})
    Design(cluster='item')
    >>> as_design(None)
    Design()
    """
    if design is None:
        return Design()
    if isinstance(design, Design):
        return design
    if isinstance(design, Mapping):
        known = {f.name for f in fields(Design)}
        extra = [k for k in design if k not in known]
        if extra:
            raise TypeError(
                f"design has unknown field {short_repr(extra[0])}; fields are {sorted(known)}, got {short_repr(design)}"
            )
        return Design(**design)
    raise TypeError(
        f"design must be a Design, a dict of its fields or None, got {type(design).__name__} {short_repr(design)}"
    )
