"""Impact-ratio reports: the bias audit of New York City's Local Law 144, with intervals.

:func:`impact_ratio_report` computes, for each group column and for every intersection of
them, the tables of the bias audit that New York City's Department of Consumer and Worker
Protection (DCWP) requires of automated employment decision tools (Rules of the City of New
York, title 6, sections 5-300 to 5-304, in force since 5 July 2023): per category the number of
applicants, the selection rate (or the scoring rate: the share scoring above the full
sample's median score) and the impact ratio, the category's rate over the highest category's
rate; the number of rows with an unknown category; and, at the auditor's choice, categories
under a share of the data left out of the impact ratios, with a justification.

Beyond the law, every impact ratio has an interval for the ratio to the *true* highest rate,
and a four-fifths verdict (the EEOC's Uniform Guidelines, 29 CFR 1607.4(D)) that reads the
interval. Rendering (text, Markdown, HTML, spreadsheets) lives in
:mod:`bayeseval._render.impact`.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._api.labels import join_parts, unique_labels
from bayeseval._api.results import Result
from bayeseval._api.validation import as_float_array, check_level, check_probability, iter_columns
from bayeseval._api.version import VERSION
from bayeseval._backends.narwhals_backend import pandas_frame
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.disparity import bonferroni_level, mover_ratio
from bayeseval._kernels.naming import fresh_names
from bayeseval._render import impact as impact_render
from bayeseval.counts.design import Design
from bayeseval.fairness.inputs import audited_design

__all__ = ["impact_ratio_report", "ImpactRatioReport", "impact_ratio_interval", "FOUR_FIFTHS", "table_name"]

#: the four-fifths rule: an impact ratio below this reads as adverse impact
FOUR_FIFTHS = 0.8

#: the growth factors of the data searched for the rows that would decide a verdict
_GROWTH = np.geomspace(1.0, 1e4, 481)[1:]


# -- the interval ------------------------------------------------------------------------------
def _pair_bounds(s: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """MOVER-R interval of ``p_j / p_k`` for every pair (last two axes ``j, k``).

    The parts are Clopper-Pearson intervals, which keep the ratio's coverage for small
    categories at rates near 0 (Wilson or Jeffreys parts do not: docs/validation.md, section 9).
    """
    p = s / n
    lo, hi = binomial_bounds(s, n, 1.0 - level, "clopper_pearson")
    return mover_ratio(
        p[..., :, None], lo[..., :, None], hi[..., :, None], p[..., None, :], lo[..., None, :], hi[..., None, :]
    )


def impact_ratio_interval(
    successes: Any, trials: Any, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Impact ratios ``p_j / max_k p_k`` and intervals for the ratio to the true highest rate.

    The impact ratio of category ``j`` is ``theta_j = p_j / max_k p_k = min_k p_j / p_k``. Its
    interval is built from the MOVER-R intervals (Donner and Zou 2012) of every ratio
    ``p_j / p_k``, with Clopper-Pearson intervals of each rate:

    * lower end ``min_k L_jk`` at ``level``: it is at most ``L_jm`` for the true highest
      category ``m``, which covers ``p_j / p_m = theta_j`` (one pair, no multiplicity);
    * upper end ``min(1, min_k U_jk)`` with each ``U_jk`` at the Bonferroni level over the
      ``G - 1`` other categories: the end fails only if some ``U_jk`` falls below
      ``theta_j <= p_j / p_k``, and those ``G - 1`` events share ``(1 - level) / 2``.

    The interval is therefore about the ratio to the highest true rate, whichever category
    has it, not about the ratio to the category that happened to be highest in the data
    (whose rate is biased upward by being chosen). In seeded simulations at
    ``level=0.95`` every category of at least 20 rows was covered at least 0.955 of the
    time (docs/validation.md, section 9). The price of that floor is width: the interval is
    conservative, more so when many categories are compared.

    Parameters
    ----------
    successes, trials : array_like, shape (..., G)
        Selected (or above-median) rows and rows per category; the last axis holds the
        categories compared. Counts may be fractional.
    level : float, default 0.95
        Confidence level of each category's interval.

    Returns
    -------
    ratio, lower, upper : numpy.ndarray
        Impact ratios and interval ends (``NaN`` when no category has a positive rate).

    Examples
    --------
    >>> r, lo, hi = impact_ratio_interval([50, 34], [92, 76])
    >>> [round(float(x), 2) for x in r], round(float(lo[1]), 2), round(float(hi[1]), 2)
    ([1.0, 0.82], 0.58, 1.0)
    """
    s, n = _check_counts(successes, trials)
    level = check_level(level)
    g = s.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = s / n
        top = p.max(axis=-1, keepdims=True)
        ratio = np.where(top > 0, p / top, np.nan)
    if g < 2:
        return ratio, ratio.copy(), ratio.copy()
    lo, _ = _pair_bounds(s, n, level)
    _, hi = _pair_bounds(s, n, bonferroni_level(level, g - 1))
    off = ~np.eye(g, dtype=bool)
    lo = np.where(off & np.isfinite(lo), lo, np.inf).min(axis=-1)
    hi = np.where(off & ~np.isnan(hi), hi, np.inf).min(axis=-1)
    defined = np.isfinite(ratio)
    return ratio, np.where(defined, np.minimum(lo, 1.0), np.nan), np.where(defined, np.minimum(hi, 1.0), np.nan)


def unit_impact_interval(rate: Any, lower: Any, upper: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Impact ratios and intervals from per-category intervals that hold jointly.

    If every category's rate ``p_k`` lies in ``[l_k, u_k]`` (with probability at least ``level``
    when each is valid at the Bonferroni level ``1 - (1 - level) / G``, whatever the dependence
    between them), then ``theta_j = p_j / max_k p_k`` lies in ``[l_j / max_k u_k,
    min(1, u_j / max_k l_k)]``: the highest rate is at most ``max_k u_k`` and at least
    ``max_k l_k``. So every category's interval covers its ratio to the true highest rate, jointly,
    for any valid per-category intervals (here each category's units interval, valid under any
    dependence within a unit).

    Parameters
    ----------
    rate, lower, upper : array_like, shape (G,)
        Each category's rate and its interval ends (already at the Bonferroni level).

    Returns
    -------
    ratio, lower, upper : numpy.ndarray
        Impact ratios and interval ends (``NaN`` when no category has a positive rate).

    Examples
    --------
    >>> r, lo, hi = unit_impact_interval([0.3, 0.6], [0.2, 0.5], [0.4, 0.7])
    >>> [round(float(x), 3) for x in r], round(float(lo[0]), 3), round(float(hi[0]), 3)
    ([0.5, 1.0], 0.286, 0.8)
    """
    p, lo, hi = (np.asarray(v, dtype=float) for v in (rate, lower, upper))
    with np.errstate(divide="ignore", invalid="ignore"):
        top = p.max()
        ratio = np.where(top > 0, p / top, np.nan)
        low = lo / hi.max()
        high = np.where(lo.max() > 0, hi / lo.max(), 1.0)
    defined = np.isfinite(ratio)
    return ratio, np.where(defined, np.minimum(low, 1.0), np.nan), np.where(defined, np.minimum(high, 1.0), np.nan)


def _check_counts(successes: Any, trials: Any) -> tuple[np.ndarray, np.ndarray]:
    """Successes and trials as float arrays of one shape, ``0 <= s <= n``, ``n > 0``."""
    s = as_float_array(successes, "successes")
    n = as_float_array(trials, "trials")
    if s.shape != n.shape or s.ndim == 0:
        raise ValueError(
            f"successes and trials must be arrays of one shape (categories on the last "
            f"axis), got shapes {s.shape} and {n.shape}"
        )
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(n))):
        raise ValueError("successes and trials must be finite numbers")
    if np.any(n <= 0) or np.any(s < 0) or np.any(s > n):
        raise ValueError(
            "every category needs trials > 0 and 0 <= successes <= trials, got "
            f"successes {s.ravel()[:6].tolist()} and trials {n.ravel()[:6].tolist()}"
        )
    return s, n


def _decided(lower: np.ndarray, upper: np.ndarray, threshold: float) -> np.ndarray:
    return (upper < threshold) | (lower >= threshold)


def _more_rows(s: np.ndarray, n: np.ndarray, level: float, threshold: float) -> np.ndarray:
    """Rows to add (same category mix and rates) before each category's interval decides.

    The counts of every category are scaled by a growth factor (fractional counts), the
    interval is recomputed, and the smallest factor on a fine grid up to 10,000 at which the
    interval lies on one side of ``threshold`` gives ``(factor - 1) * sum(n)`` rows; ``NaN``
    when no factor decides (an observed ratio at the threshold). The grid is walked in
    chunks, so that memory stays ``chunk x G x G`` for many categories.
    """
    factor = np.full(n.size, np.nan)
    chunk = max(1, min(_GROWTH.size, 2_000_000 // max(n.size * n.size, 1)))
    for start in range(0, _GROWTH.size, chunk):
        grow = _GROWTH[start : start + chunk, None]
        _, lo, hi = impact_ratio_interval(s * grow, n * grow, level)
        done = _decided(lo, hi, threshold)
        new = np.isnan(factor) & done.any(axis=0)
        factor[new] = grow[done.argmax(axis=0)[new], 0]
        if not np.isnan(factor).any():
            break
    return np.ceil((factor - 1.0) * n.sum())


def _round_rows(rows: float) -> int:
    """Two significant figures, rounded up: the precision an 'about' deserves."""
    digits = max(int(np.floor(np.log10(max(rows, 1.0)))) - 1, 0)
    return int(np.ceil(rows / 10**digits) * 10**digits)


def _verdict(lower: float, upper: float, more: float, threshold: float, units: bool = False) -> str:
    if not np.isfinite(lower):
        return "undefined: no category has a positive rate"
    if upper < threshold:
        return f"below {threshold:g}"
    if lower >= threshold:
        return f"not below {threshold:g}"
    if units:
        return "undecided, more units (whole clusters of rows) would decide it"
    if not np.isfinite(more):
        return "undecided, at the observed rates no number of rows would decide it"
    return f"undecided, about {_round_rows(more):,} more rows would decide it"


# -- the tables ----------------------------------------------------------------------------------
def _check_data(data: Any, groups: Any, selected: Any, score: Any) -> list[str]:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(
            f"data must be a pandas DataFrame or another frame narwhals reads (polars, pyarrow...), "
            f"got {type(data).__name__}"
        )
    cols = iter_columns(groups, "groups")
    if not cols:
        raise ValueError("groups must name at least one column (e.g. groups=['sex', 'race'])")
    if (selected is None) == (score is None):
        raise ValueError(
            "give exactly one of selected= (a 0/1 column: selection rates) and score= (a "
            f"numeric column: scoring rates), got selected={selected!r}, score={score!r}"
        )
    for name, col in [("groups", c) for c in cols] + [("selected", selected), ("score", score)]:
        if col is not None and col not in data.columns:
            raise ValueError(f"{name} column {col!r} is not in data; columns are {list(map(str, data.columns))}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"groups names a column twice: {cols}")
    if len(data) == 0:
        raise ValueError("data has no rows")
    return cols


def _outcome(data: pd.DataFrame, selected: str | None, score: str | None) -> tuple[np.ndarray, float | None]:
    """Per row 1 if selected (or scoring above the full sample's median), and the median."""
    col = selected if selected is not None else score
    values = data[col]
    if values.isna().any():
        where = np.flatnonzero(values.isna().to_numpy())[:5].tolist()
        raise ValueError(
            f"{'selected' if selected else 'score'} column {col!r} has "
            f"{int(values.isna().sum())} missing value(s) at position(s) {where}"
        )
    if selected is not None:
        bad = sorted({v for v in pd.unique(values) if v not in (0, 1)}, key=repr)
        if bad:
            raise ValueError(f"selected column {col!r} must hold 0/1 or booleans, got values {bad[:5]}")
        return values.to_numpy(dtype=float), None
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        raise TypeError(f"score column {col!r} must be numeric, got dtype {values.dtype}")
    median = float(values.median())
    return (values.to_numpy(dtype=float) > median).astype(float), median


def _table_names(cols: list[str]) -> list[tuple[str, ...]]:
    """Each group column alone, then every intersection (pairs, triples, ...)."""
    return [c for r in range(1, len(cols) + 1) for c in itertools.combinations(cols, r)]


#: separator of the group columns in a table's name, and of the values in a category's label
TABLE_SEP, CATEGORY_SEP = " x ", " | "


def table_name(factors: tuple[str, ...]) -> str:
    """A table's name: its group columns joined by ``" x "``, a column name that could be
    misread (holding ``" x "`` or ``"``, with outer spaces) JSON-quoted, so that two tables
    never share a name (a column ``"sex x race"`` alone is ``'"sex x race"'``).

    Examples
    --------
    >>> table_name(("sex", "race")), table_name(("sex x race",))
    ('sex x race', '"sex x race"')
    """
    return join_parts(factors, TABLE_SEP)


class Tables(dict):
    """An impact-ratio report's tables keyed by their group columns (a tuple, the identity);
    a table's name (:func:`table_name`) finds it too.

    Examples
    --------
    >>> df = pd.DataFrame({"sex": ["F", "M"] * 20, "race": ["a"] * 20 + ["b"] * 20,
    ...                    "hired": [0, 1, 1, 1] * 10})
    >>> tables = impact_ratio_report(df, groups=["sex", "race"], selected="hired").tables
    >>> list(tables)
    [('sex',), ('race',), ('sex', 'race')]
    >>> tables["sex x race"] is tables[("sex", "race")]
    True
    """

    def __missing__(self, key: Any) -> pd.DataFrame:
        for factors in self:
            if isinstance(key, str) and key == table_name(factors):
                return self[factors]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or any(isinstance(key, str) and key == table_name(f) for f in self)


def _count(data: pd.DataFrame, factors: tuple[str, ...], hit: np.ndarray) -> tuple[pd.DataFrame, int]:
    """Applicants and hits per observed category of ``factors``, and rows with a missing factor."""
    known = ~data[list(factors)].isna().any(axis=1).to_numpy()
    frame = data.loc[known, list(factors)].copy()
    frame["_hit"] = hit[known]
    grouped = frame.groupby(list(factors), observed=True, sort=True)["_hit"]
    counts = pd.DataFrame({"applicants": grouped.size(), "successes": grouped.sum().astype(int)}).reset_index()
    return counts, int((~known).sum())


def _unit_table(data: pd.DataFrame, factors: tuple[str, ...], hit: np.ndarray, cluster: str) -> pd.DataFrame:
    """Each category's units interval of its rate at the Bonferroni level over the categories
    (``lower``/``upper`` of the units), with ``units`` per category, in the order of :func:`_count`.

    Clusters whose rows fall in two categories are refused, naming how many and one of them."""
    known = ~data[list(factors)].isna().any(axis=1).to_numpy()
    hit_col, unit_col = fresh_names(data.columns, ["__hit", "__unit"])
    frame = data.loc[known, list(factors)].copy()
    frame[hit_col] = hit[known]
    frame[unit_col] = data.loc[known, cluster].to_numpy()
    keys = list(factors)
    per_unit = frame.groupby([*keys, unit_col], observed=True, sort=True)[hit_col].agg(["sum", "size"]).reset_index()
    spans = per_unit.groupby(unit_col, sort=True).size()
    spans = spans[spans > 1]
    if len(spans):
        example = spans.index[0]
        example = example.item() if isinstance(example, np.generic) else example
        where = per_unit.loc[per_unit[unit_col] == example, keys].head(3).to_numpy().tolist()
        raise ValueError(
            f"design.cluster={cluster!r}: {len(spans)} {cluster!r} unit(s) have rows in more than one "
            f"category of {table_name(factors)!r} (e.g. {example!r} in {where}); a unit must belong to one "
            "category: give a cluster column nested in the group columns"
        )
    hist = per_unit.groupby([*keys, "sum", "size"], observed=True, sort=True).size().rename("units").reset_index()
    hist = hist.rename(columns={"sum": "unit_successes", "size": "unit_trials"})
    hist["unit_trials"] = hist["unit_trials"].astype(np.int64)
    return hist


def _unit_bounds(hist: pd.DataFrame, factors: tuple[str, ...], counts: pd.DataFrame, level: float):
    """Rate interval ends of each category of ``counts`` from ``hist`` at ``level``, and units per category."""
    from bayeseval._kernels.bounded_mean import units_ci  # deferred: only for rows in units

    keys = list(factors)
    res = units_ci(hist, keys if len(keys) > 1 else keys[0], level)
    index = pd.MultiIndex.from_frame(counts[keys]) if len(keys) > 1 else pd.Index(counts[keys[0]])
    res = res.reindex(index)
    return res["lower"].to_numpy(float), res["upper"].to_numpy(float), res["n_units"].to_numpy(np.int64)


def _one_table(counts: pd.DataFrame, factors: tuple[str, ...], n_rows: int, opts: dict) -> pd.DataFrame:
    n = counts["applicants"].to_numpy(dtype=float)
    s = counts["successes"].to_numpy(dtype=float)
    out = counts.copy()
    out.insert(0, "table", table_name(factors))
    labels = unique_labels([tuple(row) for row in counts[list(factors)].itertuples(index=False)], CATEGORY_SEP)
    out.insert(len(factors) + 1, "category", labels)
    out["rate"] = s / n
    out["share"] = n / n_rows
    cut = opts["exclude_below"]
    out["excluded"] = excluded = out["share"].to_numpy() < cut if cut is not None else np.zeros(n.size, bool)
    hists = opts.get("units")
    if hists is not None:
        ratio, lo, hi, more, units = _unit_ratios(hists[factors], factors, counts, s, n, ~excluded, opts)
        out.insert(out.columns.get_loc("applicants") + 1, "units", units)
    else:
        ratio, lo, hi, more = _ratios(s, n, ~excluded, opts)
    out["impact_ratio"], out["lower"], out["upper"] = ratio, lo, hi
    out["verdict"] = [
        f"excluded (under {100 * cut:g}% of the data)"
        if ex
        else _verdict(a, b, m, opts["threshold"], hists is not None)
        for ex, a, b, m in zip(excluded, lo, hi, more, strict=True)
    ]
    out["more_rows"] = pd.array([_round_rows(m) if np.isfinite(m) else pd.NA for m in more], dtype="Int64")
    return out


def _ratios(s: np.ndarray, n: np.ndarray, keep: np.ndarray, opts: dict) -> tuple[np.ndarray, ...]:
    """Impact ratios, interval ends and rows to decide, for the categories kept (else NaN)."""
    ratio, lo, hi, more = (np.full(n.size, np.nan) for _ in range(4))
    if not keep.any():
        return ratio, lo, hi, more
    ratio[keep], lo[keep], hi[keep] = impact_ratio_interval(s[keep], n[keep], opts["level"])
    undecided = keep & np.isfinite(lo) & ~_decided(lo, hi, opts["threshold"])
    if undecided.any():
        more[keep] = _more_rows(s[keep], n[keep], opts["level"], opts["threshold"])
        more[~undecided] = np.nan
    return ratio, lo, hi, more


def _unit_ratios(hist, factors, counts, s, n, keep, opts) -> tuple[np.ndarray, ...]:
    """Impact ratios and intervals of the categories kept from their units (``more`` rows: NaN, the
    row count that would decide a verdict is not estimated for rows in units)."""
    ratio, lo, hi, more = (np.full(n.size, np.nan) for _ in range(4))
    g = int(np.count_nonzero(keep))
    level = bonferroni_level(opts["level"], g) if g > 1 else opts["level"]
    low, high, units = _unit_bounds(hist, factors, counts, level)
    if keep.any():
        ratio[keep], lo[keep], hi[keep] = unit_impact_interval(s[keep] / n[keep], low[keep], high[keep])
    return ratio, lo, hi, more, units


def _check_options(level: Any, threshold: Any, exclude_below: Any, justification: Any) -> dict:
    level = check_level(level)
    threshold = check_probability(threshold, "threshold", open_interval=True)
    if exclude_below is not None:
        exclude_below = check_probability(exclude_below, "exclude_below", open_interval=True)
        if not isinstance(justification, str) or not justification.strip():
            raise ValueError(
                f"exclude_below={exclude_below!r} needs justification= (the auditor's reason for "
                "leaving small categories out of the impact ratios, shown in the report)"
            )
    return {"level": level, "threshold": threshold, "exclude_below": exclude_below}


def _check_date(date: Any) -> str:
    if date is None:
        return _dt.date.today().isoformat()
    if isinstance(date, _dt.datetime):
        return date.date().isoformat()
    if isinstance(date, _dt.date):
        return date.isoformat()
    if isinstance(date, str):
        try:
            return _dt.date.fromisoformat(date).isoformat()
        except ValueError:
            raise ValueError(f"date must be a date or an ISO date such as '2024-03-01', got {date!r}") from None
    raise TypeError(f"date must be a datetime.date or an ISO date string, got {type(date).__name__}")


def _check_text(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be text (a str) or None, got {type(value).__name__}")
    return value


# -- the result ----------------------------------------------------------------------------------
@dataclass(repr=False)
class ImpactRatioReport(Result):
    """Impact ratios per category of each group column and intersection, with intervals.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per category of every table: ``table`` (the table's name, unique: the group
        columns it crosses joined by ``" x "``, a column name holding ``" x "`` or ``"``
        JSON-quoted; see :func:`table_name`), one column per group column (missing where the
        table does not use it), ``category`` (the values joined by ``" | "``, quoted in the
        same way, unique within its table; for display), ``applicants``, ``successes``
        (selected, or scoring above the median), ``rate``, ``share`` (of all rows),
        ``excluded``, ``impact_ratio``, ``lower``, ``upper``, ``verdict`` and ``more_rows``
        (rows that would decide an undecided verdict).
    unknown : pandas.DataFrame
        Per table the number of rows with an unknown (missing) category, left out of it.
    fields : dict
        The report's fields: data source and explanation, test data, auditor, date,
        package version, rate kind, level, threshold, exclusion and its justification, and
        the group columns of each table (``fields["tables"]``: table name -> columns).

    The tables themselves are :attr:`tables`, keyed by their group columns (a tuple).
    """

    table: pd.DataFrame
    unknown: pd.DataFrame
    fields: dict = field(default_factory=dict)

    title = "Impact-ratio report (bias audit)"

    @property
    def tables(self) -> Tables:
        """The report's tables keyed by their group columns (a tuple such as ``("sex", "race")``),
        each with the columns of its own group columns; a table's name finds it too."""
        out = Tables()
        for name, factors in self.fields["tables"].items():
            frame = self.table[self.table["table"] == name]
            drop = [c for c in self.fields["groups"] if c not in factors]
            out[tuple(factors)] = frame.drop(columns=["table", *drop]).reset_index(drop=True)
        return out

    def to_dict(self) -> dict:
        """The fields, tables and unknown counts as plain JSON types.

        Returns
        -------
        dict
            ``{"fields": ..., "tables": {name: [row, ...]}, "unknown": {name: count}}``.
        """
        tables = {
            table_name(factors): json.loads(frame.to_json(orient="records")) for factors, frame in self.tables.items()
        }
        unknown = dict(zip(self.unknown["table"], map(int, self.unknown["unknown"]), strict=True))
        return {"fields": dict(self.fields), "tables": tables, "unknown": unknown}

    def to_text(self, width: int = 100) -> str:
        """The report for a terminal: its fields and tables, no line wider than ``width``.

        Parameters
        ----------
        width : int, default 100
            Widest line, in characters (table rows are cut to it, text wrapped).

        Returns
        -------
        str
            The text.
        """
        return impact_render.text(self, width)

    def to_markdown(self) -> str:
        """The report as a Markdown document (every cell escaped).

        Returns
        -------
        str
            The document: the fields, one table per group column and intersection, notes.
        """
        return impact_render.markdown(self)

    def to_html(self) -> str:
        """The report as an HTML fragment (styled by the package's report style sheet).

        Returns
        -------
        str
            Escaped HTML; :meth:`save` to ``.html`` wraps it in a self-contained page.
        """
        return impact_render.html_fragment(self)

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return self.to_text()

    __str__ = __repr__

    @fill_doc()
    def save(self, path: str | PathLike[str]) -> Path:
        """Write the report to ``path``; the suffix chooses the format.

        ``.html``: a self-contained page. ``.md``: Markdown. ``.json``: :meth:`to_dict`.
        ``.csv``: the tidy :attr:`table` (text cells that a spreadsheet would run as formulas
        quoted). ``.xlsx``: one sheet per table plus ``fields`` and ``unknown``, every text
        cell stored as text (needs openpyxl or XlsxWriter).

        Parameters
        ----------
        path : str or PathLike
            The file to write.

        {path_returned}

        {suffix_refused}

        Examples
        --------
        >>> import tempfile
        >>> df = pd.DataFrame({"sex": ["F", "M"] * 20, "hired": [0, 1, 1, 1] * 10})
        >>> rep = impact_ratio_report(df, groups="sex", selected="hired", date="2024-03-01")
        >>> with tempfile.TemporaryDirectory() as d:
        ...     pd.read_csv(rep.save(f"{d}/r.csv"))["applicants"].tolist()
        [20, 20]
        """
        return impact_render.save(self, Path(path))


def impact_ratio_report(
    data: Any,
    *,
    groups: str | list[str],
    selected: str | None = None,
    score: str | None = None,
    level: float = 0.95,
    threshold: float = FOUR_FIFTHS,
    exclude_below: float | None = None,
    justification: str | None = None,
    source: str | None = None,
    explanation: str | None = None,
    test_data: str | None = None,
    auditor: str | None = None,
    date: Any = None,
    design: Design | Mapping[str, Any] | None = None,
) -> ImpactRatioReport:
    """Bias-audit tables of New York City's Local Law 144, with intervals and verdicts.

    For each column in ``groups`` and for every intersection of them (all pairs, triples,
    ...), per category: the number of applicants, the selection rate (``selected=``, the
    share selected) or the scoring rate (``score=``, the share scoring above the median score
    of the full sample, every row included), and the impact ratio, the category's rate over
    the highest category's rate (DCWP rules, 6 RCNY 5-301). Rows whose value in a table's
    group columns is missing are counted as unknown for that table and left out of it.

    Beyond the law, each impact ratio has an interval for the ratio to the true highest
    rate (:func:`impact_ratio_interval`; measured coverage at least 0.955 at ``level=0.95``
    for every category of at least 20 rows, see its notes), and a four-fifths verdict that
    reads the interval: ``"below 0.8"`` when the interval lies below ``threshold``,
    ``"not below 0.8"`` when it lies at or above it, else ``"undecided, about N more rows
    would decide it"``, N from the interval's width as a function of the number of rows at
    the observed rates and category mix (two significant figures, rounded up).

    Parameters
    ----------
    data : pandas.DataFrame or another frame narwhals reads
        One row per applicant. A polars, pyarrow, Dask... frame has its group and outcome
        columns collected into pandas.
    groups : str or list of str
        Group columns (e.g. ``["sex", "race"]``).
    selected : str, optional
        A 0/1 (or boolean) column: 1 when the tool selected the applicant.
    score : str, optional
        A numeric score column (give this or ``selected``).
    level : float, default 0.95
        Confidence level of the intervals.
    threshold : float, default 0.8
        The impact ratio the verdicts compare against (the four-fifths rule).
    exclude_below : float, optional
        Leave categories under this share of all rows out of the impact ratios (the rules
        allow 0.02); their counts and rates are still shown. Off by default.
    justification : str, optional
        The auditor's reason for the exclusion (required with ``exclude_below``).
    source, explanation : str, optional
        Where the data come from and what they are.
    test_data : str, optional
        Why test data were used, when they were (``None``: historical data).
    auditor : str, optional
        Who performed the audit.
    date : datetime.date or str, optional
        The audit's date (ISO ``"YYYY-MM-DD"``); today by default.
    design : Design or dict, optional
        The sampling design (:class:`~bayeseval.Design`). ``cluster``: a column whose rows
        sharing a value are one sampling unit (the decisions of one applicant's several
        applications, the ratings of one test case). When some unit holds more than one row,
        each category's rate is read from its units: its finite-sample valid units interval
        (valid under any dependence within a unit) at the Bonferroni level over the categories
        compared, and each impact ratio's interval from those (see
        :func:`unit_impact_interval`); the table gains ``units`` per category, an undecided
        verdict says that more units would decide it (``more_rows`` is missing), and the fields
        state the design in words (``fields["design"]``). A unit whose rows fall in two
        categories of a table is refused (the message gives how many and one of them); units of
        one row each give the report without the cluster. ``population="pool"`` is refused (as
        :func:`~bayeseval.audit` refuses it), and so is ``inclusion`` (the impact ratios weight
        every row alike).

    Returns
    -------
    ImpactRatioReport
        The tables, the unknown counts and the report's fields.

    Raises
    ------
    ValueError, TypeError
        For a column not in ``data``, both or neither of ``selected`` and ``score``, a
        missing or non-0/1 selection value, a missing score, ``exclude_below`` without a
        justification, a design it does not take (the message names ``design`` and the field),
        or a bad option value (each message names the argument).

    Examples
    --------
    >>> df = pd.DataFrame({"sex": ["F"] * 40 + ["M"] * 60,
    ...                    "hired": [1] * 12 + [0] * 28 + [1] * 30 + [0] * 30})
    >>> rep = impact_ratio_report(df, groups="sex", selected="hired", date="2024-03-01")
    >>> rep.table[["category", "applicants", "rate", "impact_ratio"]].round(2).values.tolist()
    [['F', 40, 0.3, 0.6], ['M', 60, 0.5, 1.0]]
    >>> rep.table["verdict"].tolist()[0]
    'undecided, about 260 more rows would decide it'

    Applicants who applied five times each, one unit per applicant:

    >>> from bayeseval import Design
    >>> df["applicant"] = [i // 5 for i in range(100)]
    >>> rep = impact_ratio_report(df, groups="sex", selected="hired", date="2024-03-01",
    ...                           design=Design(cluster="applicant"))
    >>> rep.table[["category", "applicants", "units"]].values.tolist()
    [['F', 40, 8], ['M', 60, 12]]
    >>> rep.fields["design"]
    '20 applicants in 2 groups, 5 rows each; intervals treat the applicant as the unit'
    """
    d = _impact_design(design)
    data = pandas_frame(data, [*iter_columns(groups, "groups"), selected, score, d.cluster])
    cols = _check_data(data, groups, selected, score)
    opts = _check_options(level, threshold, exclude_below, justification)
    hit, median = _outcome(data, selected, score)
    described = None
    if d.cluster is not None:
        described, hists = _clustered(data, cols, hit, d)
        if hists is not None:
            opts["units"] = hists
    parts, unknown = [], []
    for factors in _table_names(cols):
        counts, missing = _count(data, factors, hit)
        parts.append(_one_table(counts, factors, len(data), opts))
        unknown.append({"table": table_name(factors), "unknown": missing})
    table = pd.concat(parts, ignore_index=True)
    order = [
        "table",
        *cols,
        "category",
        "applicants",
        "successes",
        "rate",
        "share",
        "excluded",
        "impact_ratio",
        "lower",
        "upper",
        "verdict",
        "more_rows",
    ]
    if "units" in opts:
        order.insert(order.index("applicants") + 1, "units")
    opts.pop("units", None)
    fields = _fields(
        cols, selected, score, median, len(data), opts, justification, source, explanation, test_data, auditor, date
    )
    if described is not None:
        fields["design"] = described
    return ImpactRatioReport(table=table[order], unknown=pd.DataFrame(unknown), fields=fields)


def _clustered(data: pd.DataFrame, cols: list[str], hit: np.ndarray, design: Design) -> tuple[str, Any]:
    """The design in words and, when some unit holds more than one row, each table's units histogram.

    Units of one row each are independent rows: the report is then the one without the cluster."""
    from bayeseval.counts.counts import tabulate  # deferred: the counting layer loads on use

    cluster = design.cluster
    assert cluster is not None
    if cluster not in data.columns:
        raise ValueError(
            f"design.cluster column {cluster!r} is not in data; columns are {list(map(str, data.columns))}"
        )
    if data[cluster].isna().any():
        raise ValueError(
            f"design.cluster column {cluster!r} has {int(data[cluster].isna().sum())} missing value(s): every row "
            "needs its unit"
        )
    hists = {factors: _unit_table(data, factors, hit, cluster) for factors in _table_names(cols)}
    known = ~data[cols[0]].isna().to_numpy()
    (hit_col,) = fresh_names(data.columns, ["__hit"])
    frame = pd.DataFrame({cols[0]: data.loc[known, cols[0]].to_numpy(), hit_col: hit[known]})
    frame[cluster] = data.loc[known, cluster].to_numpy()
    described = design.describe(
        tabulate(frame, outcome=hit_col, strata=cols[0], design=Design(cluster=cluster)), groups=True
    )
    by_unit = any(bool((h["unit_trials"] > 1).any()) for h in hists.values())
    return described, hists if by_unit else None


def _impact_design(design: Any) -> Design:
    """The design, before any work: a cluster is taken; a finite pool is refused as the audit refuses
    it, an inclusion column because no row here is weighted."""
    d = audited_design(design)
    if d.inclusion is not None:
        raise ValueError(
            f"design.inclusion={d.inclusion!r}: impact_ratio_report counts every row alike and takes no "
            "inclusion probabilities; give the rows of the audited population (or leave design out)"
        )
    return d


def _fields(
    cols, selected, score, median, n_rows, opts, justification, source, explanation, test_data, auditor, date
) -> dict:
    texts = {
        k: _check_text(v, k)
        for k, v in [
            ("justification", justification),
            ("source", source),
            ("explanation", explanation),
            ("test_data", test_data),
            ("auditor", auditor),
        ]
    }
    return {
        "groups": cols,
        "tables": {table_name(f): list(f) for f in _table_names(cols)},
        "rate_kind": "selection" if selected is not None else "scoring",
        "outcome_column": selected if selected is not None else score,
        "median_score": median,
        "rows": n_rows,
        **opts,
        **texts,
        "date": _check_date(date),
        "version": VERSION,
    }
