r"""The dual-constraint split: class proportion versus a minimum count.

A class-stratified split keeps the class share but may leave the minority with
a few dozen test rows. :func:`dual_constraint_split` asks
:func:`bayeseval.plan.decision.split_decision` what to do for every minority key
(a class, or a class-by-group cell) and builds the split:

* ``proportional`` -- every key keeps its population share;
* ``grow_test`` -- a larger test set, still proportional per class;
* ``raise_share`` -- same test size, the minority oversampled; overall metrics
  need the row weights in ``test_weights`` (:math:`w_+ = \pi/\pi_t`,
  :math:`w_- = (1-\pi)/(1-\pi_t)`), and thresholds tuned on the test set must
  be re-calibrated to the population share (a
  :class:`~bayeseval.ReweightingWarning` says so);
* ``degraded`` -- the request cannot be met: an error, or (with
  ``on_infeasible="degrade"``) the proportional split flagged with a
  :class:`~bayeseval.PrecisionLimitedWarning`.

Which rows go to the test set depends only on the seed, the row id and the
row's key, never on row order or partitioning. Every row gets the keyed hash

.. code-block:: text

    mix64(z)   = splitmix64 finalizer:  z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
                                        z ^= z >> 27; z *= 0x94D049BB133111EB;
                                        z ^= z >> 31            (all mod 2**64)
    fnv1a64(b) = 64-bit FNV-1a of the bytes b
    id64       = the id as a 64-bit two's-complement integer (integer ids), or
                 fnv1a64(utf-8 bytes of the id) (string ids, pandas only)
    key_text   = the key's values as text joined by "\x1f" (e.g. "1\x1fnorth")
    salt(key)  = mix64(fnv1a64(key_text) ^ mix64(seed + 0x9E3779B97F4A7C15))
    rank       = mix64(mix64(id64) ^ salt(key)) >> 1        (63 bits, >= 0)

and within each key the ``n`` rows with the smallest ``(rank, id)`` form the
test set. The same integer arithmetic runs in numpy (pandas input), in DuckDB
SQL (Parquet/CSV paths and relations: a ``ROW_NUMBER()`` window per key) and
in Spark SQL (PySpark DataFrames), so all three give the same test ids. Each
engine is a back end with two operations (rows per key, and the test-row
selection); the plan between them (how many test rows per key) is computed once,
here, from the small table of key counts. pandas' own ``hash_pandas_object`` is not used because its
output is not promised to stay the same across pandas versions.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import BaseCrossValidator as _Base

from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_method,
    check_positive_int,
    check_probability,
    iter_columns,
)
from bayeseval._api.warnings import PrecisionLimitedWarning, ReweightingWarning
from bayeseval._backends.dispatch import backend_for
from bayeseval._backends.hashing import C1 as _C1  # noqa: F401 - re-exported
from bayeseval._backends.hashing import C2 as _C2  # noqa: F401 - re-exported
from bayeseval._backends.hashing import (
    duckdb_rank_sql,  # noqa: F401 - re-exported
    key_salt,
)
from bayeseval._backends.hashing import fnv1a64_bytes as _fnv1a64_bytes  # noqa: F401 - re-exported
from bayeseval._backends.hashing import fnv1a64_strings as _fnv1a64_strings  # noqa: F401 - re-exported
from bayeseval._backends.hashing import id64 as _id64
from bayeseval._backends.hashing import mix64 as _mix64  # noqa: F401 - re-exported
from bayeseval._backends.hashing import mix64_int as _mix64_int  # noqa: F401 - re-exported
from bayeseval._backends.hashing import rank_of as _rank_of
from bayeseval._backends.interface import SplitSelection
from bayeseval.plan.decision import split_decision
from bayeseval.plan.sizes import sample_size

__all__ = [
    "SplitResult",
    "dual_constraint_split",
    "DualConstraintSplit",
    "RepeatedDualConstraintSplit",
    "row_rank",
    "key_salt",
]

OTHER = "other"
_BRANCH_ORDER = ("proportional", "grow_test", "raise_share", "degraded")


# ---------------------------------------------------------------------------
# The keyed hash
# ---------------------------------------------------------------------------
def row_rank(ids: Any, salts: Any) -> np.ndarray:
    """The 63-bit keyed rank ``mix64(mix64(id64) ^ salt) >> 1`` of each row.

    Parameters
    ----------
    ids : array-like of int or str
        Row ids.
    salts : int or array of uint64
        The salt of each row's key (:func:`key_salt`).

    Returns
    -------
    numpy.ndarray
        int64 ranks in ``[0, 2**63)``, one per id.

    Examples
    --------
    >>> r = row_rank([1, 2, 3], key_salt((1,), random_seed=0))
    >>> r.dtype, bool((r >= 0).all())
    (dtype('int64'), True)
    """
    u, _ = _id64(pd.Index(ids))
    salts = np.asarray(salts, dtype=np.uint64) if np.ndim(salts) else np.uint64(int(salts))
    return _rank_of(u, salts)


# ---------------------------------------------------------------------------
# The plan: which key gets how many test rows (engine independent)
# ---------------------------------------------------------------------------


@dataclass
class _Plan:
    cells: pd.DataFrame  # one row per original cell: cell columns, rows, key (int)
    keys: list[tuple]  # key tuples, position = key int
    table: pd.DataFrame  # per key: rows, share, n_min, proportional, test, weight, branch
    decisions: dict
    branch: str
    n_total: int
    n_test: int
    n_test_requested: int
    merged: list
    salts: np.ndarray  # uint64 per key
    reweight: bool
    warning: str | None
    notes: list = field(default_factory=list)  # (warning class, message)


def _check_seed(random_seed: Any) -> int:
    if isinstance(random_seed, bool) or not isinstance(random_seed, Integral):
        raise TypeError(f"random_seed must be an integer, got {random_seed!r}")
    return int(random_seed)


def _largest_remainder(total: int, sizes: np.ndarray, grand: int) -> np.ndarray:
    """Integer shares ``total * sizes / grand`` summing to ``total`` (largest remainders)."""
    sizes = np.asarray(sizes, dtype=object)
    exact = [total * int(s) for s in sizes]
    base = np.array([e // grand for e in exact], dtype=np.int64)
    rem = np.array([e % grand for e in exact], dtype=object)
    short = int(total - base.sum())
    if short > 0:
        order = sorted(range(len(rem)), key=lambda i: (-rem[i], i))
        for i in order[:short]:
            base[i] += 1
    return base


def _normalise_n_min(n_min: Any, keys: list[tuple], classes_of: list, minority: set, grouped: bool) -> np.ndarray:
    out = np.zeros(len(keys), dtype=np.int64)
    if n_min is None:
        return out
    if isinstance(n_min, Mapping):
        by_key = {k: i for i, k in enumerate(keys)}
        class_values = {c for c in classes_of}
        for k, v in n_min.items():
            v = check_positive_int(v, f"n_min[{k!r}]", minimum=0)
            kt = k if isinstance(k, tuple) else (k,)
            if kt in by_key:
                out[by_key[kt]] = v
            elif not isinstance(k, tuple) and k in class_values:
                for i, c in enumerate(classes_of):
                    if c == k:
                        out[i] = max(out[i], v) if grouped else v
            else:
                raise ValueError(
                    f"n_min has an entry for {k!r}, which is neither a class nor a key of the data; "
                    f"keys are {keys[:10]}"
                )
        return out
    value = check_positive_int(n_min, "n_min")
    for i, c in enumerate(classes_of):
        if c in minority:
            out[i] = value
    return out


def _requested_test_size(test_size: Any, n_total: int) -> int:
    if isinstance(test_size, bool) or not isinstance(test_size, Real):
        raise TypeError(f"test_size must be a fraction in (0, 1) or a row count, got {test_size!r}")
    if isinstance(test_size, Integral) or (isinstance(test_size, float) and test_size >= 1):
        n_req = check_positive_int(test_size, "test_size")
    else:
        frac = check_probability(test_size, "test_size", open_interval=True)
        n_req = max(1, int(math.ceil(frac * n_total - 1e-9)))
    if n_req >= n_total:
        raise ValueError(f"test_size must leave rows for training: {n_req} of {n_total} rows")
    return n_req


def _merge_cells(
    cells: pd.DataFrame, pos: list[int], n_groups: int, merge_below: int | None
) -> tuple[list[tuple], dict, list]:
    """Give every cell its key (rare cells merge into ``"other"``); adds column ``key`` to ``cells``."""
    cell_keys = [
        tuple(v.item() if isinstance(v, np.generic) else v for v in r)
        for r in cells[pos].itertuples(index=False, name=None)
    ]
    merged: list = []
    keys_of_cell: list[tuple] = []
    for k, rows in zip(cell_keys, cells["rows"], strict=True):
        if merge_below is not None and rows < merge_below:
            merged.append(k if len(k) > 1 else k[0])
            keys_of_cell.append((k[0],) + (OTHER,) * n_groups if n_groups else (OTHER,))
        else:
            keys_of_cell.append(k)
    key_list: list[tuple] = []
    seen: dict[tuple, int] = {}
    for k in keys_of_cell:
        if k not in seen:
            seen[k] = len(key_list)
            key_list.append(k)
    cells["key"] = [seen[k] for k in keys_of_cell]
    return key_list, seen, merged


def _resolve_n_min(n_min: Any, halfwidth: float | None, rate: float | None) -> Any:
    if n_min is None and halfwidth is not None:
        if rate is None:
            raise ValueError("rate is required with halfwidth (the planning rate of the metric)")
        return sample_size(halfwidth=halfwidth, rate=rate)
    if n_min is not None and halfwidth is not None:
        raise ValueError("give either n_min or halfwidth (with rate), not both")
    return n_min


def _short_key(k: tuple) -> Any:
    return k if len(k) > 1 else k[0]


def _decide(
    key_list: list[tuple],
    need: np.ndarray,
    rows_k: np.ndarray,
    n_total: int,
    n_req: int,
    max_test_share: float,
    max_inflate: float,
    on_infeasible: str,
) -> dict:
    """Per-key decisions against the requested test size; raise for degraded keys unless allowed."""
    decisions: dict = {}
    for i, k in enumerate(key_list):
        if need[i] <= 0 or rows_k[i] >= n_total:
            continue
        decisions[_short_key(k)] = split_decision(
            n_total=n_total,
            n_test=n_req,
            share=rows_k[i] / n_total,
            n_min=int(need[i]),
            max_test_share=max_test_share,
            max_inflate=max_inflate,
        )
    degraded = [k for k, d in decisions.items() if d.branch == "degraded"]
    if degraded and on_infeasible == "raise":
        index = {_short_key(k): i for i, k in enumerate(key_list)}
        lines = [
            f"{k!r}: n_min={need[index[k]]}, but the key has {rows_k[index[k]]} rows and a "
            f"proportional test set gives about {decisions[k].n_minority_proportional}"
            for k in degraded
        ]
        raise ValueError(
            "n_min cannot be met for "
            + "; ".join(lines)
            + f". {decisions[degraded[0]].reason}. Pass on_infeasible='degrade' to accept a "
            "precision-limited proportional split, merge groups (merge_below), or lower n_min."
        )
    return decisions


def _targets(
    key_list: list[tuple],
    decisions: dict,
    need: np.ndarray,
    rows_k: np.ndarray,
    n_total: int,
    n_req: int,
    major: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray]:
    """The final test size, the proportional test rows per key and the test rows per key."""
    grown = [d.n_test for d in decisions.values() if d.branch == "grow_test"]
    n_test = max([n_req] + grown)
    prop = _largest_remainder(n_test, rows_k, n_total)
    target = prop.copy()
    for i, k in enumerate(key_list):
        d = decisions.get(_short_key(k))
        if d is not None and d.branch != "degraded":
            target[i] = max(target[i], min(int(need[i]), int(rows_k[i])))
    excess = int(target.sum() - n_test)
    if excess > 0:
        room = np.where(major, target, 0)
        if room.sum() < excess:
            raise ValueError(f"the minimum counts need {int(target.sum())} test rows, more than the test size {n_test}")
        target = target - _largest_remainder(excess, room, int(room.sum()))
    return n_test, prop, target


def _notes(degraded: list, table: pd.DataFrame, key_list: list[tuple], reweight: bool) -> list:
    notes: list = []
    if degraded:
        index = {_short_key(k): i for i, k in enumerate(key_list)}
        short = [
            f"{k!r}: {table['test'].iloc[index[k]]} test rows instead of {table['n_min'].iloc[index[k]]}"
            for k in degraded
        ]
        notes.append(
            (
                PrecisionLimitedWarning,
                "precision limited: " + "; ".join(short[:8]) + ("; ..." if len(short) > 8 else ""),
            )
        )
    if reweight:
        notes.append(
            (
                ReweightingWarning,
                "the test set over-represents the minority: report overall metrics with test_weights "
                "(population share / test share), and re-calibrate any threshold tuned on this set "
                "to the population share",
            )
        )
    return notes


def _plan(
    cells: pd.DataFrame,
    *,
    label: str,
    groups: list[str],
    test_size: Any,
    n_min: Any,
    max_test_share: float,
    max_inflate: float,
    merge_below: int | None,
    halfwidth: float | None,
    rate: float | None,
    on_infeasible: str,
    random_seed: int,
) -> _Plan:
    """Plan a split from the cell counts.

    ``cells`` has one row per cell: positional columns ``0..k-1`` (the values of
    ``label`` and ``groups``), ``rows``, and whatever else the back end needs;
    positional labels cannot collide with the user's column names.
    """
    cols = [label] + groups
    pos = list(range(len(cols)))
    cells = _sorted_cells(cells, pos)
    n_total = int(cells["rows"].sum())
    if n_total < 2:
        raise ValueError(f"data must have at least 2 rows to split, got {n_total}")
    n_req = _requested_test_size(test_size, n_total)
    key_list, _, merged = _merge_cells(cells, pos, len(groups), merge_below)
    rows_k = cells.groupby("key", sort=True)["rows"].sum().to_numpy(np.int64)

    classes_of = [k[0] for k in key_list]
    majority = _majority_class(classes_of, rows_k)
    minority = {c for c in classes_of if c != majority}
    n_min = _resolve_n_min(n_min, halfwidth, rate)
    need = _normalise_n_min(n_min, key_list, classes_of, minority, bool(groups))

    decisions = _decide(key_list, need, rows_k, n_total, n_req, max_test_share, max_inflate, on_infeasible)
    major = np.array([c == majority for c in classes_of])
    n_test, prop, target = _targets(key_list, decisions, need, rows_k, n_total, n_req, major)
    table, reweight = _plan_table(cols, key_list, decisions, rows_k, need, prop, target, n_test)
    overall = max((d.branch for d in decisions.values()), key=_BRANCH_ORDER.index, default="proportional")
    degraded = [k for k, d in decisions.items() if d.branch == "degraded"]
    notes = _notes(degraded, table, key_list, reweight)
    return _Plan(
        cells=cells,
        keys=key_list,
        table=table,
        decisions=decisions,
        branch=overall,
        n_total=n_total,
        n_test=n_test,
        n_test_requested=n_req,
        merged=merged,
        salts=np.array([key_salt(k, random_seed=random_seed) for k in key_list], dtype=np.uint64),
        reweight=reweight,
        warning=". ".join(text for _, text in notes) if notes else None,
        notes=notes,
    )


def _sorted_cells(cells: pd.DataFrame, pos: list[int]) -> pd.DataFrame:
    """Cells sorted by each column's factorize order, which also orders mixed object columns."""
    return cells.sort_values(
        pos, kind="stable", key=lambda col: pd.Series(pd.factorize(col, sort=True)[0], index=col.index)
    ).reset_index(drop=True)


def _majority_class(classes_of: list, rows_k: np.ndarray) -> Any:
    """The class with the most rows (the first largest in sorted order)."""
    class_rows: dict = {}
    for c, r in zip(classes_of, rows_k, strict=True):
        class_rows[c] = class_rows.get(c, 0) + int(r)
    return max(class_rows, key=lambda c: class_rows[c])


def _plan_table(
    cols: list[str],
    key_list: list[tuple],
    decisions: dict,
    rows_k: np.ndarray,
    need: np.ndarray,
    prop: np.ndarray,
    target: np.ndarray,
    n_test: int,
) -> tuple[pd.DataFrame, bool]:
    """The per-key table of the plan, and whether the test set must be reweighted.

    A key is reweighted when its test rows are raised above the exact proportional count by
    at least one row (not mere rounding); the weight is population share / test share.
    """
    n_total = int(rows_k.sum())
    raised = np.array([int(t) * n_total - n_test * int(r) >= n_total for t, r in zip(target, rows_k, strict=True)])
    reweight = bool(raised.any())
    share_pop = rows_k / n_total
    share_test = target / n_test
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(target > 0, share_pop / share_test, np.nan) if reweight else np.ones(len(rows_k))
    if len(cols) > 1:
        index = pd.MultiIndex.from_tuples(key_list, names=cols)
    else:
        index = pd.Index([k[0] for k in key_list], name=cols[0])
    branch_of = [decisions[_short_key(k)].branch if _short_key(k) in decisions else "-" for k in key_list]
    table = pd.DataFrame(
        {
            "rows": rows_k,
            "share": share_pop,
            "n_min": need,
            "proportional": prop,
            "test": target,
            "test_share": share_test,
            "weight": weight,
            "branch": branch_of,
        },
        index=index,
    )
    return table, reweight


def _emit_warnings(plan: _Plan, stacklevel: int = 3) -> None:
    for category, message in plan.notes:
        warnings.warn(message, category, stacklevel=stacklevel)


# ---------------------------------------------------------------------------
# The result
# ---------------------------------------------------------------------------


@dataclass(repr=False)
class SplitResult(Result):
    """A dual-constraint split.

    Its :attr:`table` (one row per key) is the tidy view of the result;
    ``str(result)`` is the plain-text :meth:`report`.

    Parameters
    ----------
    train, test : pandas.DataFrame, DuckDB relation, Spark DataFrame or the input's frame type
        The two parts, in the engine of the input.
    decision : SplitDecision, dict or None
        The :class:`~bayeseval.plan.decision.SplitDecision` of the one minority key
        that has a minimum count, or a dict ``{key: SplitDecision}`` when
        several keys have one; None when no minimum was requested.
    decisions : dict
        Always the dict ``{key: SplitDecision}``.
    branch : str
        The overall branch: the most demanding of the per-key branches
        (``proportional`` < ``grow_test`` < ``raise_share`` < ``degraded``).
    test_weights : pandas.Series or relation/DataFrame
        Per test row, population share / test share of the row's key (all 1
        when the proportion is kept), indexed by row id (a pandas Series for pandas and
        narwhals inputs). For DuckDB and Spark a relation/DataFrame with the id column and ``weight``.
    merged : list
        Cells merged into ``"other"`` before splitting.
    table : pandas.DataFrame
        Per key: rows, population share, n_min, proportional test rows, test
        rows, test share, weight and the key's branch.
    n_test, n_test_requested, n_total : int
        Final and requested test sizes, rows in all.
    random_seed : int
        The seed of the keyed hash that chose the test rows.
    engine : str
        ``"pandas"``, ``"duckdb"``, ``"spark"`` or ``"narwhals"``: where the rows were split.
    warning : str or None
        The warning issued with the split (a degraded or reweighted split), if any.
    extra : dict
        Engine-specific details.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.plan.split import dual_constraint_split
    >>> df = pd.DataFrame({"y": [0, 1] * 50})
    >>> res = dual_constraint_split(df, label="y", test_size=0.2, random_seed=0)
    >>> res.n_test, list(res.table["test"])
    (20, [10, 10])
    """

    title = "Dual-constraint split"

    train: Any
    test: Any
    decision: Any
    decisions: dict
    branch: str
    test_weights: Any
    merged: list
    table: pd.DataFrame = field()
    n_test: int
    n_test_requested: int
    n_total: int
    random_seed: int
    engine: str = "pandas"
    warning: str | None = None
    extra: dict = field(default_factory=dict, repr=False)

    def report(self) -> str:
        """A short plain-text account of the split.

        Returns
        -------
        str
            Sizes, the branch, the first decisions, merged cells and the per-key table.
        """
        lines = [
            f"Dual-constraint split ({self.engine}, random_seed={self.random_seed}): "
            f"{self.n_total:,} rows -> test {self.n_test:,} ({self.n_test / self.n_total:.1%}; "
            f"requested {self.n_test_requested:,}), train {self.n_total - self.n_test:,}",
            f"Branch: {self.branch}",
        ]
        for k, d in list(self.decisions.items())[:3]:
            lines.append(f"  {k!r}: {d.branch} -- {d.reason}")
        if len(self.decisions) > 3:
            lines.append(f"  ... and {len(self.decisions) - 3} more keys (see .decisions and the table)")
        if self.merged:
            lines.append(f"Merged into {OTHER!r}: {self.merged}")
        if self.warning:
            lines.append(f"Warning: {self.warning}")
        cols = ["rows", "n_min", "proportional", "test", "weight", "branch"]
        lines.append(self.table[cols].to_string(float_format=lambda x: f"{x:.4g}"))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def _result_decision(decisions: dict) -> Any:
    if not decisions:
        return None
    if len(decisions) == 1:
        return next(iter(decisions.values()))
    return dict(decisions)


# ---------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------


def _split_result(plan: Any, *, train: Any, test: Any, test_weights: Any, random_seed: int, engine: str) -> SplitResult:
    """Package one engine's train/test selection with the plan behind it."""
    return SplitResult(
        train=train,
        test=test,
        decision=_result_decision(plan.decisions),
        decisions=plan.decisions,
        branch=plan.branch,
        test_weights=test_weights,
        merged=plan.merged,
        table=plan.table,
        n_test=plan.n_test,
        n_test_requested=plan.n_test_requested,
        n_total=plan.n_total,
        random_seed=random_seed,
        engine=engine,
        warning=plan.warning,
    )


def _check_options(max_test_share: Any, max_inflate: Any, merge_below: Any, on_infeasible: Any) -> tuple:
    max_test_share = check_probability(max_test_share, "max_test_share", open_interval=True)
    if isinstance(max_inflate, bool) or not isinstance(max_inflate, Real):
        raise TypeError(f"max_inflate must be a number >= 1, got {max_inflate!r}")
    if not float(max_inflate) >= 1:
        raise ValueError(f"max_inflate must be >= 1 (1 means no oversampling), got {max_inflate!r}")
    if merge_below is not None:
        merge_below = check_positive_int(merge_below, "merge_below")
    on_infeasible = check_method(on_infeasible, ("raise", "degrade"), "on_infeasible")
    return max_test_share, float(max_inflate), merge_below, on_infeasible


def dual_constraint_split(
    data: pd.DataFrame | Any,
    *,
    label: str,
    test_size: float | int = 0.2,
    n_min: int | Mapping[Any, int] | None = None,
    groups: str | Sequence[str] | None = None,
    max_test_share: float = 0.3,
    max_inflate: float = 5.0,
    merge_below: int | None = None,
    halfwidth: float | None = None,
    rate: float | None = None,
    on_infeasible: str = "raise",
    id_column: str | None = None,
    random_seed: int = 0,
    check_ids: bool = True,
) -> SplitResult:
    """Split into train and test meeting both the class proportion and a minimum count.

    Parameters
    ----------
    data : pandas.DataFrame, Parquet/CSV path, DuckDB relation, Spark DataFrame or any frame narwhals reads
        One row per example. For a path or relation the split runs in DuckDB
        SQL (a ``ROW_NUMBER()`` window per key) and ``train``/``test`` are
        DuckDB relations (lazy; ``.df()``, ``.to_parquet()`` materialise them);
        for a PySpark DataFrame it runs in Spark and ``train``/``test`` are
        Spark DataFrames. ``id_column`` is then required and must hold
        integers. For another frame narwhals reads (polars, pyarrow, Dask...)
        ``id_column`` is required, the id and key columns are collected to
        choose the test ids, and ``train``/``test`` are the input filtered on
        them, in its own type. The test ids are the same on every engine, and ``train`` and
        ``test`` keep the input's columns unchanged whatever their names.
    label : str
        The class column.
    test_size : float or int, default 0.2
        Requested test size, a fraction of the rows (rounded up) or a count.
    n_min : int, dict or None
        Minority test rows each key needs. An int applies to every minority
        class (every class but the most frequent), or with ``groups`` to
        every minority class-by-group cell. A dict maps a class (applies to
        each of its cells) or a full key tuple ``(class, group, ...)`` to a
        count. None: derived from ``halfwidth`` and ``rate`` with
        :func:`bayeseval.plan.sizes.sample_size`, or no minimum (a plain
        class-stratified split).
    groups : str or list of str, optional
        Group column(s); the key becomes class x group.
    max_test_share : float, default 0.3
        Cap on the test set as a share of all rows (``grow_test``).
    max_inflate : float, default 5.0
        Cap on a key's test share as a multiple of its population share
        (``raise_share``).
    merge_below : int, optional
        Cells with fewer rows merge into an ``"other"`` cell of their class
        (without ``groups``: rare classes merge into class ``"other"``).
    halfwidth, rate : float, optional
        Target half-width and planning rate from which ``n_min`` is derived.
    on_infeasible : {"raise", "degrade"}
        When a key's minimum cannot be met (not enough rows, or the caps
        forbid it): raise a ValueError naming the key and its counts, or
        return the proportional split of the degraded branch with a
        :class:`~bayeseval.PrecisionLimitedWarning`. Nothing is under-filled
        silently.
    id_column : str, optional
        Column of unique row ids (integers or strings). Default: the index,
        which must then be unique.
    random_seed : int, default 0
        Seed of the keyed hash.
    check_ids : bool, default True
        DuckDB and Spark: check that the ids are unique (one distinct count
        over the data). pandas always checks.

    Returns
    -------
    SplitResult
        For DuckDB and Spark, ``test_weights`` holds ``id_column`` and
        ``weight`` (``weight_1`` when ``id_column`` is itself called ``weight``).

    Raises
    ------
    ValueError
        A column is missing; ``label`` holds a fractional number (a score, not a
        class); ``label`` or ``groups`` hold missing values (the
        message names the column and the number of rows); ids are missing or
        repeated; the minimum counts cannot be met; or DuckDB cannot read the
        data (the message names the path).
    TypeError
        ``data`` is of an unsupported type, or the ids are not integers
        (DuckDB, Spark).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> y = np.r_[np.ones(1_260, int), np.zeros(298_740, int)]      # 0.42% positive
    >>> res = dual_constraint_split(pd.DataFrame({"y": y}), label="y", test_size=60_000, n_min=323)
    >>> res.branch, res.n_test, int(res.test["y"].sum())
    ('grow_test', 76905, 323)
    """
    max_test_share, max_inflate, merge_below, on_infeasible = _check_options(
        max_test_share, max_inflate, merge_below, on_infeasible
    )
    seed = _check_seed(random_seed)
    gcols = iter_columns(groups, "groups")
    backend = backend_for(data)
    cols = [label] + gcols
    backend.check_columns(
        [("label", label)]
        + [("groups", g) for g in gcols]
        + ([("id_column", id_column)] if id_column is not None else [])
    )
    backend.check_labels([("label", label)])
    cells = backend.key_counts(cols, id_column=id_column, check_ids=check_ids)
    _check_missing_cells(cells, [("label", label)] + [("groups", g) for g in gcols])
    plan = _plan(
        cells,
        label=label,
        groups=gcols,
        test_size=test_size,
        n_min=n_min,
        max_test_share=max_test_share,
        max_inflate=max_inflate,
        merge_below=merge_below,
        halfwidth=halfwidth,
        rate=rate,
        on_infeasible=on_infeasible,
        random_seed=seed,
    )
    _emit_warnings(plan, stacklevel=3)
    train, test, test_weights = backend.select_test(
        SplitSelection(
            plan.cells,
            cols=cols,
            id_column=id_column,
            salts=plan.salts,
            take=plan.table["test"].to_numpy(np.int64),
            weight=plan.table["weight"].to_numpy(float),
        )
    )
    return _split_result(
        plan, train=train, test=test, test_weights=test_weights, random_seed=seed, engine=backend.engine
    )


def _check_missing_cells(cells: pd.DataFrame, columns: list[tuple[str, str]]) -> None:
    """Refuse missing labels or groups (NaN, None, NA, NULL), naming the column and the rows."""
    rows = cells["rows"].to_numpy(np.int64)
    for i, (arg, col) in enumerate(columns):
        missing = pd.isna(cells[i]).to_numpy(bool)
        if missing.any():
            n = int(rows[missing].sum())
            raise ValueError(
                f"{arg} column {col!r} has missing values in {n} row{'s' if n != 1 else ''} "
                "(NaN, None, NA or NULL); drop or fill them before splitting"
            )


# ---------------------------------------------------------------------------
# scikit-learn splitters
# ---------------------------------------------------------------------------


def _check_no_missing(values: np.ndarray, name: str) -> None:
    missing = int(pd.isna(values).sum())
    if missing:
        raise ValueError(f"{name} has {missing} missing values (NaN, None or NA); drop or fill them before splitting")


class DualConstraintSplit(_Base):
    """A scikit-learn splitter yielding one dual-constraint train/test split.

    Usable as ``cv=`` in :func:`sklearn.model_selection.cross_validate` and
    :class:`~sklearn.model_selection.GridSearchCV`. ``split(X, y, groups)``
    takes the class labels from ``y`` and, when given, the subgroups from
    ``groups`` (one column, or a 2-D array of several): the key is then
    class x group (``groups`` does *not* keep groups together as in
    ``GroupKFold``). Row ids are ``X.index`` when ``X`` is a pandas object with
    a unique index, else the positions, so with a DataFrame the split does not
    depend on row order. The yielded arrays are positions.

    Parameters
    ----------
    test_size, n_min, max_test_share, max_inflate, merge_below, halfwidth, rate, on_infeasible, random_seed
        As in :func:`dual_constraint_split`.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.r_[np.ones(50, int), np.zeros(950, int)]
    >>> cv = DualConstraintSplit(test_size=0.2, n_min=10)
    >>> train, test = next(cv.split(np.zeros((1000, 1)), y))
    >>> len(test), int(y[test].sum())
    (200, 10)
    """

    def __init__(
        self,
        test_size: float | int = 0.2,
        n_min: int | Mapping[Any, int] | None = None,
        max_test_share: float = 0.3,
        max_inflate: float = 5.0,
        merge_below: int | None = None,
        halfwidth: float | None = None,
        rate: float | None = None,
        on_infeasible: str = "raise",
        *,
        random_seed: int = 0,
    ) -> None:
        _check_options(max_test_share, max_inflate, merge_below, on_infeasible)
        _check_seed(random_seed)
        self.test_size = test_size
        self.n_min = n_min
        self.max_test_share = max_test_share
        self.max_inflate = max_inflate
        self.merge_below = merge_below
        self.halfwidth = halfwidth
        self.rate = rate
        self.on_infeasible = on_infeasible
        self.random_seed = random_seed

    def _seeds(self) -> list[int]:
        return [int(self.random_seed)]

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """Number of splits (1; ``n_repeats`` for the repeated splitter).

        Parameters
        ----------
        X, y, groups : object
            Ignored; present for scikit-learn compatibility.

        Returns
        -------
        int
            The number of train/test splits :meth:`split` yields.
        """
        return len(self._seeds())

    def split(self, X: Any, y: Any = None, groups: Any = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train, test)`` position arrays.

        Parameters
        ----------
        X : array-like of shape (n_samples, ...)
            Features (only its length and, for pandas, its index are used).
        y : array-like of shape (n_samples,)
            Class labels (required).
        groups : array-like of shape (n_samples,) or (n_samples, n_group_columns), optional
            Subgroups making the key class x group.
        """
        if y is None:
            raise ValueError("y is required: DualConstraintSplit stratifies on the class labels")
        n = len(X)
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != n:
            raise ValueError(f"y must be one-dimensional with {n} labels, got shape {y.shape}")
        _check_no_missing(y, "y")
        index = getattr(X, "index", None)
        if (
            isinstance(index, pd.Index)
            and len(index) == n
            and not index.has_duplicates
            and (pd.api.types.is_integer_dtype(index.dtype) or pd.api.types.infer_dtype(index) in ("string", "integer"))
        ):
            ids = index
        else:
            ids = pd.RangeIndex(n)
        frame = pd.DataFrame({"__y": y}, index=ids)
        gcols: list[str] = []
        if groups is not None:
            g = np.asarray(groups)
            if g.ndim == 1:
                g = g[:, None]
            if g.shape[0] != n:
                raise ValueError(f"groups must have {n} rows, got {g.shape[0]}")
            _check_no_missing(g, "groups")
            for j in range(g.shape[1]):
                frame[f"__g{j}"] = g[:, j]
                gcols.append(f"__g{j}")
        frame["__pos"] = np.arange(n)
        for seed in self._seeds():
            res = dual_constraint_split(
                frame,
                label="__y",
                test_size=self.test_size,
                n_min=self.n_min,
                groups=gcols or None,
                max_test_share=self.max_test_share,
                max_inflate=self.max_inflate,
                merge_below=self.merge_below,
                halfwidth=self.halfwidth,
                rate=self.rate,
                on_infeasible=self.on_infeasible,
                random_seed=seed,
            )
            test = np.sort(res.test["__pos"].to_numpy())
            train = np.sort(res.train["__pos"].to_numpy())
            yield train, test

    def _iter_test_indices(self, X: Any = None, y: Any = None, groups: Any = None) -> Iterator[np.ndarray]:
        for _, test in self.split(X, y, groups):
            yield test


class RepeatedDualConstraintSplit(DualConstraintSplit):
    """:class:`DualConstraintSplit` repeated ``n_repeats`` times with different seeds.

    The seed of repeat ``r`` is drawn from ``np.random.default_rng(random_seed)``,
    so the sequence of splits is reproducible.

    Parameters
    ----------
    n_repeats : int, default 10
        Number of splits, each with its own seed.
    test_size, n_min, max_test_share, max_inflate, merge_below, halfwidth, rate, on_infeasible, random_seed
        As in :func:`dual_constraint_split`.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.r_[np.ones(50, int), np.zeros(950, int)]
    >>> cv = RepeatedDualConstraintSplit(n_repeats=3, n_min=10)
    >>> cv.get_n_splits(), len({tuple(t) for _, t in cv.split(np.zeros((1000, 1)), y)})
    (3, 3)
    """

    def __init__(
        self,
        n_repeats: int = 10,
        test_size: float | int = 0.2,
        n_min: int | Mapping[Any, int] | None = None,
        max_test_share: float = 0.3,
        max_inflate: float = 5.0,
        merge_below: int | None = None,
        halfwidth: float | None = None,
        rate: float | None = None,
        on_infeasible: str = "raise",
        *,
        random_seed: int = 0,
    ) -> None:
        check_positive_int(n_repeats, "n_repeats")
        super().__init__(
            test_size=test_size,
            n_min=n_min,
            max_test_share=max_test_share,
            max_inflate=max_inflate,
            merge_below=merge_below,
            halfwidth=halfwidth,
            rate=rate,
            on_infeasible=on_infeasible,
            random_seed=random_seed,
        )
        self.n_repeats = n_repeats

    def _seeds(self) -> list[int]:
        rng = np.random.default_rng(self.random_seed)
        return [int(s) for s in rng.integers(0, 2**62, size=int(self.n_repeats))]
