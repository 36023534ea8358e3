"""Counting by sampling unit: the units' histogram, graded outcomes, and the detection of clustered rows.

:func:`~bayeseval.tabulate` with ``outcome=`` or ``design=Design(cluster=...)`` counts twice inside
the engine: a first aggregation by (stratum, cluster) gives each unit's summed outcome and trials,
a second by (stratum, unit sum, unit trials) how many units share them. The result is a
histogram whose size does not grow with the rows for binary outcomes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import check_counts, short_repr
from bayeseval._api.warnings import ClusteredRowsWarning
from bayeseval._backends.dispatch import backend_for
from bayeseval._backends.interface import Backend, UnitTable, is_spark_dataframe

__all__ = [
    "UNIT_COLUMNS",
    "ID_LIKE",
    "level_names",
    "check_units",
    "units_frame",
    "looks_clustered",
    "warn_if_clustered",
]

#: the columns of a Counts' units histogram after the stratum level(s)
UNIT_COLUMNS = ("unit_successes", "unit_trials", "units")

#: column names that identify an item (compared without case): rows repeating one look clustered
ID_LIKE = (
    "id",
    "item",
    "item_id",
    "sample_id",
    "doc_id",
    "question_id",
    "example_id",
    "prompt_id",
    "passage_id",
    "conversation_id",
    "patient_id",
)

#: relative tolerance of the check that the units' sums give the stratum's successes
_SUM_RTOL = 1e-9


def level_names(index: pd.Index) -> list[str]:
    """The units' stratum columns: the index's level names (``stratum`` or ``level_i`` when unnamed)."""
    if index.nlevels == 1:
        return [str(index.name) if index.name is not None else "stratum"]
    return [str(n) if n is not None else f"level_{i}" for i, n in enumerate(index.names)]


def _keys(units: pd.DataFrame, names: list[str]) -> pd.Index:
    return pd.MultiIndex.from_frame(units[names]) if len(names) > 1 else pd.Index(units[names[0]])


def check_units(
    successes: np.ndarray, trials: np.ndarray, index: pd.Index, units: Any
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Validate a Counts' ``units`` against its successes and trials; return ``(s, n, units)``.

    ``trials`` are checked as today (whole numbers); ``successes`` may be fractional (graded
    outcomes) but lie in ``[0, trials]``; they stay int64 when all are whole. The histogram must
    have the stratum columns (:func:`level_names`) and :data:`UNIT_COLUMNS`, hold units with
    ``0 <= unit_successes <= unit_trials``, ``unit_trials >= 1`` and ``units >= 1``, name only
    strata of ``index``, and sum to ``successes`` and ``trials`` in every stratum.
    """
    if not isinstance(units, pd.DataFrame):
        raise TypeError(f"Counts.units must be a pandas DataFrame or None, got {type(units).__name__}")
    names = level_names(index)
    missing = [c for c in [*names, *UNIT_COLUMNS] if c not in units.columns]
    if missing:
        raise ValueError(f"Counts.units lacks column(s) {missing}; it has {list(units.columns)}")
    s_raw = np.asarray(successes, dtype=float)
    whole = np.all(np.isfinite(s_raw)) and np.array_equal(s_raw, np.round(s_raw))
    if whole:
        s, n = check_counts(np.round(s_raw).astype(np.int64), trials)
    else:
        _, n = check_counts(np.zeros(np.shape(trials), dtype=np.int64), trials)
        s = s_raw
        bad = ~np.isfinite(s) | (s < 0) | (s > n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"successes must be finite and within [0, trials], got successes={s[i]!r} and "
                f"trials={int(n[i])} at position {i}"
            )
    us = pd.to_numeric(units["unit_successes"]).to_numpy(dtype=float)
    ut = pd.to_numeric(units["unit_trials"]).to_numpy()
    nu = pd.to_numeric(units["units"]).to_numpy()
    if len(units) and (
        not np.all(np.isfinite(us))
        or np.any(ut < 1)
        or np.any(nu < 1)
        or np.any(us < 0)
        or np.any(us > ut)
        or not np.array_equal(ut, np.round(ut))
        or not np.array_equal(nu, np.round(nu))
    ):
        raise ValueError(
            "Counts.units must hold whole unit_trials >= 1, whole units >= 1 and unit_successes in [0, unit_trials]"
        )
    out = units[names].reset_index(drop=True).copy()
    out["unit_successes"] = us
    out["unit_trials"] = ut.astype(np.int64)
    out["units"] = nu.astype(np.int64)
    keys = _keys(out, names)
    unknown = ~keys.isin(index)
    if unknown.any():
        raise ValueError(f"Counts.units names a stratum absent from the counts: {short_repr(keys[unknown][0])}")
    pos = index.get_indexer(keys)
    sums = np.bincount(pos, weights=out["units"] * out["unit_successes"], minlength=len(index))
    size = np.bincount(pos, weights=out["units"] * out["unit_trials"], minlength=len(index))
    if not np.array_equal(size, n) or not np.allclose(sums, s, rtol=_SUM_RTOL, atol=_SUM_RTOL):
        i = int(np.flatnonzero((size != n) | ~np.isclose(sums, s, rtol=_SUM_RTOL, atol=_SUM_RTOL))[0])
        raise ValueError(
            f"Counts.units do not add up to the counts of stratum {short_repr(index[i])}: units give "
            f"{sums[i]:g} successes in {int(size[i])} trials, the counts {s[i]:g} in {int(n[i])}"
        )
    return s, n, out


def units_frame(unit: UnitTable, names: list[str], strata_names: list[str]) -> pd.DataFrame:
    """A Counts' units histogram from an engine's :class:`UnitTable` (stratum columns renamed)."""
    table = unit.table
    k = len(strata_names)
    out = pd.DataFrame(
        {name: table[i].reset_index(drop=True) for i, name in zip(range(k), names, strict=False)},
        index=pd.RangeIndex(len(table)),
    )
    if not k:
        out[names[0]] = "all"
    out["unit_successes"] = table["s"].to_numpy(float)
    out["unit_trials"] = table["t"].to_numpy(np.int64)
    out["units"] = table["n"].to_numpy(np.int64)
    return out.sort_values([*names, "unit_trials", "unit_successes"], kind="stable").reset_index(drop=True)


def outcome_errors(backend: Backend, outcome: str | None, cluster: str | None) -> None:
    """Refuse missing or out-of-range outcomes and missing cluster identifiers, naming the column."""
    found = backend.outcome_checks(outcome, cluster)
    if found["missing"]:
        rows = int(found["missing"])
        raise ValueError(
            f"outcome column {outcome!r} has missing values in {rows} row{'s' if rows != 1 else ''} "
            "(NaN, None, NA or NULL); drop or score them before tabulating"
        )
    if found["outside"]:
        rows = int(found["outside"])
        raise ValueError(
            f"outcome column {outcome!r} must hold outcomes in [0, 1], got {float(found['value'])!r} "
            f"({rows} row{'s' if rows != 1 else ''} outside [0, 1]); rescale the scores"
        )
    if found["no_cluster"]:
        rows = int(found["no_cluster"])
        raise ValueError(
            f"design.cluster column {cluster!r} has missing values in {rows} row{'s' if rows != 1 else ''}: "
            "every row needs its unit; fill them (e.g. with a unique id per row)"
        )


# -- detection ---------------------------------------------------------------------------------
def looks_clustered(
    data: Any, strata: list[str] | str | None = None, columns: list[str] | None = None, exclude: tuple = ()
) -> tuple[str, int] | None:
    """An identifier-like column whose values repeat, as ``(column, repeated rows)``; None if none.

    Parameters
    ----------
    data : Backend, pandas.DataFrame, path or DuckDB relation
        The rows, or the back end wrapping them.
    strata : str or list of str, optional
        Stratum columns: never taken as identifiers.
    columns : list of str, optional
        Candidate columns; by default those named like an identifier (:data:`ID_LIKE`, any
        case).
    exclude : tuple of str
        Further columns never taken (the label or outcome columns).

    Returns
    -------
    tuple of (str, int) or None
        The first candidate holding a value on more than one row, and how many rows repeat an
        earlier value (rows minus distinct values); None when no candidate repeats. One
        aggregate in the engine, over the candidate columns only.
    """
    backend = data if isinstance(data, Backend) else backend_for(data)
    taken = set([strata] if isinstance(strata, str) else (strata or [])) | set(c for c in exclude if c)
    if columns is None:
        columns = [c for c in backend.columns if isinstance(c, str) and c.lower() in ID_LIKE]
    columns = [c for c in columns if c not in taken]
    if not columns:
        return None
    repeats = backend.repeated_columns(columns)
    for c in columns:
        if repeats.get(c, 0) > 0:
            return c, int(repeats[c])
    return None


#: the (frame, code, instruction, data) of the caller the detection last ran for: one check and one warning
#: per call of a public function, however many times it counts the rows (an audit counts per
#: metric)
_LAST_CALLER: list[tuple[int, ...]] = [()]


def warn_if_clustered(backend: Backend, strata: list[str], exclude: tuple) -> None:
    """Warn (:class:`~bayeseval.ClusteredRowsWarning`) when rows repeat an identifier-like column.

    The warning points at the user's line (the first frame outside the package and the standard
    library), and is given (and the rows checked) once per call made on that line.
    """
    if is_spark_dataframe(backend.data):
        return  # not on Spark: the check would be one more Spark job over the rows on every call
    level, caller = external_caller()
    key = (id(caller), id(caller.f_code), caller.f_lasti, id(backend.data)) if caller is not None else ()
    if key and key == _LAST_CALLER[0]:
        return
    _LAST_CALLER[0] = key
    found = looks_clustered(backend, strata, exclude=exclude)
    if found is None:
        return
    column, rows = found
    warnings.warn(
        f"rows look clustered: column {column!r} repeats values ({rows} rows share their {column!r} "
        "with an earlier row), and intervals treat every row as an independent draw. If the rows sharing "
        f"one {column!r} value (epochs, questions on one passage) are one sampling unit, pass "
        f"design=Design(cluster={column!r}); pass design=Design() to say the rows are independent",
        ClusteredRowsWarning,
        stacklevel=level,
    )


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB = os.path.dirname(os.path.abspath(contextlib.__file__))


def external_caller() -> tuple[int, Any]:
    """Stack level (for the caller of this function's caller's ``warnings.warn``) and frame of the
    first caller outside the bayeseval package and the standard library (context managers)."""
    frame: Any = sys._getframe(2)
    level = 2
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (
            path.startswith(_PACKAGE + os.sep) or (path.startswith(_STDLIB + os.sep) and "site-packages" not in path)
        ):
            break
        frame = frame.f_back
        level += 1
    return level, frame
