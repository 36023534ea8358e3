"""The result of :func:`~bayeseval.estimate.paired.compare_models`: the differences table, the
leaderboard with tie groups, and their renderings (text, HTML, JSON, plot)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bayeseval._api.results import Result, frame_html

__all__ = ["DIFF_COLUMNS", "ModelComparison"]

#: the columns of the differences table
DIFF_COLUMNS = (
    "pair",
    "model_a",
    "model_b",
    "stratum",
    "n_items",
    "n_units",
    "estimate",
    "lower",
    "upper",
    "p_value",
    "p_adjusted",
    "separable",
)


@dataclass(frozen=True, repr=False)
class ModelComparison(Result):
    """Outcome of :func:`compare_models`: paired differences, their family and a leaderboard.

    Its :attr:`table` is the differences table (one row per pair and stratum, the pooled row
    ``stratum == "(all)"`` included when there are several strata).

    Parameters
    ----------
    differences : pandas.DataFrame
        ``pair`` (``"a - b"``), ``model_a``, ``model_b``, ``stratum``, ``n_items`` (items both
        models answered), ``n_units`` (sampling units: items, or clusters), ``estimate`` (mean
        over items of ``a``'s item score minus ``b``'s), ``lower``, ``upper`` (the interval at
        :attr:`interval_level`), ``p_value`` (of "difference = 0", from the betting e-value),
        ``p_adjusted`` (after :attr:`adjust`), ``separable`` (``p_adjusted <= 1 - level``).
    leaderboard : pandas.DataFrame
        Per stratum: ``stratum``, ``model``, ``mean`` (item-averaged score over the model's
        items), ``n_items``, ``rank`` (by mean, 1 the best), ``tie_group`` (1 the top group;
        missing with a reference) and, with a reference, ``vs_reference``.
    level : float
        The family's level: the family-wise error of the ``separable`` claims is at most
        ``1 - level`` (see :func:`compare_models`).
    interval_level : float
        Level of each displayed interval: ``1 - (1 - level) / family_size`` under ``"holm"``
        and ``"bonferroni"`` (simultaneous by Bonferroni), ``level`` under ``"none"``.
    adjust : str
        ``"holm"``, ``"bonferroni"`` or ``"none"``.
    family_size : int
        Comparisons in the family (rows with at least one paired item).
    unit : str
        What one sampling unit is, in words.
    reference : str or None
        The reference model, when each model was compared with it.
    notes : tuple of str
        What was dropped and why (items answered by one model only, unscored answers).

    Examples
    --------
    >>> from bayeseval.estimate.paired import compare_models
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "item": [1, 2, 3, 4] * 2,
    ...                      "outcome": [1, 1, 1, 0, 0, 1, 0, 0]})
    >>> res = compare_models(rows)
    >>> res.table[["pair", "estimate"]].to_dict("records")
    [{'pair': 'a - b', 'estimate': 0.5}]
    """

    differences: pd.DataFrame
    leaderboard: pd.DataFrame
    level: float
    interval_level: float
    adjust: str
    family_size: int
    unit: str
    reference: Any = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    title = "Model comparison"

    @property
    def table(self) -> pd.DataFrame:
        """The differences table (one row per pair and stratum)."""
        return self.differences

    def _repr_html_(self) -> str:
        parts = [frame_html("Paired differences", self.differences), frame_html("Leaderboard", self.leaderboard)]
        notes = "".join(f"<p>{_escape(n)}</p>" for n in (self._summary(), *self.notes))
        return f"<div>{notes}{''.join(parts)}</div>"

    def __repr__(self) -> str:
        return self.to_text()

    def _summary(self) -> str:
        what = {
            "holm": "Holm across the family",
            "bonferroni": "Bonferroni across the family",
            "none": "no multiplicity adjustment",
        }[self.adjust]
        return (
            f"{self.family_size} comparison(s); unit: {self.unit}; separable at level {self.level:g} "
            f"({what}); intervals at level {self.interval_level:.4g}"
        )

    def to_text(self, width: int = 120) -> str:
        """The comparison as plain text: a summary line, notes, both tables.

        Parameters
        ----------
        width : int, default 120
            Most characters per line of the tables.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> from bayeseval.estimate.paired import compare_models
        >>> rows = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 3, "item": [1, 2, 3] * 2,
        ...                      "outcome": [1, 1, 0, 0, 1, 0]})
        >>> "Leaderboard" in compare_models(rows).to_text()
        True
        """
        with pd.option_context("display.width", width, "display.max_columns", 20):
            diffs = self.differences.to_string(index=False, float_format=lambda x: f"{x:.4g}")
            board = self.leaderboard.to_string(index=False, float_format=lambda x: f"{x:.4g}")
        lines = [f"{self.title}: {self._summary()}", *(f"note: {n}" for n in self.notes)]
        return "\n".join([*lines, "", "Paired differences", diffs, "", "Leaderboard", board])

    def to_dict(self) -> dict[str, Any]:
        """The comparison as plain Python values (for JSON).

        Returns
        -------
        dict
            ``level``, ``interval_level``, ``adjust``, ``family_size``, ``unit``,
            ``reference``, ``notes``, and ``differences`` and ``leaderboard`` as lists of
            records (missing values as ``None``).

        Examples
        --------
        >>> from bayeseval.estimate.paired import compare_models
        >>> import json
        >>> rows = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 3, "item": [1, 2, 3] * 2,
        ...                      "outcome": [1, 1, 0, 0, 1, 0]})
        >>> d = compare_models(rows).to_dict()
        >>> d["differences"][0]["pair"], json.loads(json.dumps(d))["family_size"]
        ('a - b', 1)
        """
        return {
            "level": self.level,
            "interval_level": self.interval_level,
            "adjust": self.adjust,
            "family_size": self.family_size,
            "unit": self.unit,
            "reference": _plain(self.reference),
            "notes": list(self.notes),
            "differences": _records(self.differences),
            "leaderboard": _records(self.leaderboard),
        }

    def plot(self, ax: Any = None, pair: Any = None) -> Any:
        """Forest plot of the differences: one row per stratum, one colour per pair.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Axes to draw on (a new figure when omitted).
        pair : str or list of str, optional
            The pairs to draw (``"a - b"`` as in the ``pair`` column); default all.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Examples
        --------
        >>> from bayeseval.estimate.paired import compare_models
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> rows = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 3, "item": [1, 2, 3] * 2,
        ...                      "outcome": [1, 1, 0, 0, 1, 0]})
        >>> ax = compare_models(rows).plot()
        >>> ax.get_xlabel()
        'difference in mean score (a - b)'
        """
        from bayeseval import plots  # deferred: matplotlib only when drawing

        return plots.plot(self, ax=ax, pair=pair)


def _escape(text: str) -> str:
    import html

    return html.escape(text)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = frame.astype(object).where(frame.notna(), None)
    return [{str(k): _plain(v) for k, v in row.items()} for row in out.to_dict("records")]
