"""Input validation shared by every public function.

Each checker raises ``TypeError`` for a value of the wrong kind and
``ValueError`` for a value of the right kind but out of range, and names the
argument and the offending value in the message.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "check_level",
    "check_method",
    "check_counts",
    "check_count_limit",
    "check_weights",
    "check_positive_int",
    "check_not_bool",
    "check_probability",
    "as_float_array",
    "check_random_seed",
    "make_rng",
    "align_by_label",
    "check_no_missing",
    "missing_mask",
    "as_row_array",
    "fractional_label_error",
    "first_fractional",
    "check_class_labels",
    "check_positive_real",
    "as_labelled_series",
    "weights_series",
    "MAX_EXACT_COUNT",
]

#: Largest count accepted: every whole number up to 2**53 is exactly a float64.
MAX_EXACT_COUNT = 2**53
_INT64_MAX = 2**63 - 1


def is_pandas(value: Any, *kinds: str) -> bool:
    """True when ``value`` is an instance of one of the pandas classes named in ``kinds``.

    pandas is imported on first use (it takes about half a second), so the checks here do not
    import it: a value can only be a pandas object once pandas has been imported.
    """
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, tuple(getattr(pandas, k) for k in kinds))


def _plain(value: Any) -> Any:
    """NumPy scalars as Python values (``1.5``, not ``np.float64(1.5)``), also inside lists and tuples.

    Only plain lists and tuples are rebuilt: a subclass (a named tuple) may not be constructible
    from one iterable, and is shown as it is.
    """
    if isinstance(value, np.generic):
        return value.item()
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    return value


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr`` of a value for a message: NumPy scalars as Python values, cut at ``limit`` characters.

    A text longer than ``limit`` keeps its first ``limit - 3`` characters and ends in ``...``, so
    the result is never longer than ``limit``. Messages about a file's records (annotation exports)
    use ``limit=60``.

    Examples
    --------
    >>> short_repr(np.float64(-1.0)), short_repr([np.int64(2), "a"]), short_repr("x" * 100)[-5:]
    ('-1.0', "[2, 'a']", 'xx...')
    >>> len(short_repr({"id": 1, "text": "y" * 100}, limit=60))
    60
    """
    text = repr(_plain(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_proxy_design(proxy: Any, inclusion: Any, label_set: Any = None) -> None:
    """Check the proxy design's arguments of ``evaluate`` and ``audit`` (types and pairing).

    ``proxy`` and ``inclusion`` are column names or None; ``inclusion`` and ``label_set``
    describe the labelled rows of a proxy design, so they need ``proxy``. Raises a
    ``TypeError`` naming the argument.

    Examples
    --------
    >>> check_proxy_design("judge", None)
    >>> check_proxy_design(None, "pi")
    Traceback (most recent call last):
    ...
    TypeError: design.inclusion applies to the labelled rows of a proxy design: give proxy too, got design.inclusion='pi' and proxy=None
    """
    for name, value in (("proxy", proxy), ("design.inclusion", inclusion)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str) or None, got {value!r}")
    if inclusion is not None and proxy is None:
        raise TypeError(
            f"design.inclusion applies to the labelled rows of a proxy design: give proxy too, "
            f"got design.inclusion={inclusion!r} and proxy=None"
        )
    if label_set is not None and proxy is None:
        raise TypeError(
            f"label_set declares the classes of the labelled rows of a proxy design: give "
            f"proxy too, got label_set={label_set!r} and proxy=None"
        )


def output_suffix(path: Any, suffixes: Sequence[str]) -> str:
    """The lower-cased suffix of the output file ``path``, which must be one of ``suffixes``.

    Examples
    --------
    >>> output_suffix("Audit.CSV", (".csv", ".md"))
    '.csv'
    >>> output_suffix("audit.txt", (".csv", ".md"))
    Traceback (most recent call last):
    ...
    ValueError: path must end in .csv, .md, got 'audit.txt'
    """
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        raise ValueError(f"path must end in {', '.join(suffixes)}, got {str(path)!r}")
    return suffix


def _finite_real(value: Any, name: str, what: str) -> float:
    """``value`` as a finite float: a TypeError unless a real number (not a bool), naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be {what}, got {short_repr(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def check_level(level: Any, name: str = "level") -> float:
    """Return ``level`` as a float in the open interval (0, 1) or raise."""
    if isinstance(level, bool) or not isinstance(level, Real):
        raise TypeError(f"{name} must be a number in (0, 1), got {short_repr(level)}")
    level = float(level)
    if not (0.0 < level < 1.0) or not np.isfinite(level):
        raise ValueError(f"{name} must be in the open interval (0, 1) (0.95 means a 95% interval), got {level!r}")
    return level


def check_probability(value: Any, name: str, *, open_interval: bool = False) -> float:
    """Return ``value`` as a float in [0, 1] (or (0, 1) when ``open_interval``) or raise."""
    value = _finite_real(value, name, "a number between 0 and 1")
    if open_interval and not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")
    if not (0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be between 0 and 1, got {value!r}")
    return value


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum`` or raise.

    A bool is a TypeError (``True`` is not the count 1); an integer-valued float is accepted.

    Examples
    --------
    >>> check_positive_int(3.0, "draws")
    3
    >>> check_positive_int(True, "draws")
    Traceback (most recent call last):
    ...
    TypeError: draws must be an integer >= 1, got True (a bool, not a count)
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} (a bool, not a count)")
    if not isinstance(value, Integral):
        if isinstance(value, Real) and float(value).is_integer():
            value = math.trunc(value)
        else:
            raise TypeError(f"{name} must be an integer >= {minimum}, got {short_repr(value)}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


# -- class labels ---------------------------------------------------------------------------
#: where scores go instead of a label column (the end of every fractional-label message)
_SCORES_GO = (
    "threshold scores into class predictions first (e.g. (score >= 0.5).astype(int)); a score "
    "column belongs in score= of bayeseval.campaign.Campaign.create, and class probabilities in "
    "proba= of bayeseval.estimate.classic.risk_averaging"
)


def fractional_label_error(name: str, column: Any, value: Any) -> ValueError:
    """The one error for a label that is a number but not a whole number (a score, rounding noise).

    ``column`` is the column's name, or None for an array argument. Every back end and every
    entry point that reads labels raises this error, so the rule and the wording are one.

    Examples
    --------
    >>> print(fractional_label_error("y_pred", "p", 0.73))  # doctest: +ELLIPSIS
    y_pred column 'p' holds the fractional value 0.73, but labels are classes ...
    """
    what = f"{name} column {column!r}" if column is not None else name
    return ValueError(
        f"{what} holds the fractional value {value!r}, but labels are classes (strings, bools or "
        "whole numbers such as 0, 1, 0.0, 1.0): every distinct number would be counted as a class "
        f"of its own; {_SCORES_GO}"
    )


def first_fractional(values: Any) -> Any:
    """The first number in ``values`` that is not a whole number (NaN is missing, not fractional).

    Vectorised for float arrays; object arrays are checked element by element. Returns None when
    every value is a string, a bool, an integer or an integer-valued float (the rule
    :class:`bayeseval.campaign.labels.label_set.LabelSet` applies to one label at a time).

    Examples
    --------
    >>> first_fractional(np.array([0.0, 1.0, np.nan])) is None, first_fractional([1, 0.999999])
    (True, 0.999999)
    """
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind in "biuUSmM":
        return None
    if kind == "f":
        flat = arr.ravel()
        step = 1 << 16  # a few hundred KB of temporaries at any size
        for start in range(0, flat.size, step):
            part = flat[start : start + step]
            bad = (part != np.floor(part)) & ~np.isnan(part)  # NaN is missing; +-inf equal their floor
            if bad.any():
                return part[np.argmax(bad)].item()
        return None
    for v in arr.ravel():
        if isinstance(v, (bool, np.bool_, Integral, str, bytes)) or not isinstance(v, Real):
            continue
        f = float(v)
        if not np.isnan(f) and not f.is_integer():
            return v.item() if isinstance(v, np.generic) else v
    return None


def check_class_labels(values: Any, name: str, column: Any = None) -> None:
    """Raise :func:`fractional_label_error` when ``values`` hold a fractional number.

    Examples
    --------
    >>> check_class_labels([0.0, 1.0, 1], "y_true")
    >>> check_class_labels([0, 0.5], "y_true")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: y_true holds the fractional value 0.5, but labels are classes ...
    """
    bad = first_fractional(values.to_numpy() if is_pandas(values, "Series", "Index") else values)
    if bad is not None:
        raise fractional_label_error(name, column, bad)


def check_method(method: Any, valid: Sequence[str], name: str = "method") -> str:
    """Return ``method`` lower-cased if it is one of ``valid`` or raise listing the choices."""
    if not isinstance(method, str):
        raise TypeError(f"{name} must be a string, one of {list(valid)}, got {short_repr(method)}")
    key = method.lower().replace("-", "_")
    if key not in valid:
        raise ValueError(f"unknown {name} {method!r}; valid choices are {list(valid)}")
    return key


def check_not_bool(value: Any, name: str, what: str = "counts") -> None:
    """Raise TypeError when ``value`` is a bool or holds bools where numbers are wanted.

    ``True`` is not the count 1 nor the share 1.0: a bool where a number is wanted is a slip
    (a mask passed for a count). Arrays are checked by dtype; lists and tuples element by element.

    Examples
    --------
    >>> check_not_bool([3, 4], "trials")
    >>> check_not_bool([3, True], "trials")
    Traceback (most recent call last):
    ...
    TypeError: trials must be counts, not bools, got [3, True]
    """
    if is_pandas(value, "Series", "Index"):
        value = value.to_numpy()
    if isinstance(value, (bool, np.bool_)):
        bad = True
    elif isinstance(value, np.ndarray):
        bad = value.dtype.kind == "b" or (
            value.dtype.kind == "O" and any(isinstance(v, (bool, np.bool_)) for v in value.ravel())
        )
    elif isinstance(value, (list, tuple)):
        bad = any(
            isinstance(v, (bool, np.bool_))
            or (isinstance(v, (list, tuple)) and any(isinstance(u, (bool, np.bool_)) for u in v))
            for v in value
        )
    else:
        bad = False
    if bad:
        raise TypeError(f"{name} must be {what}, not bools, got {short_repr(value)}")


def as_float_array(value: Any, name: str) -> np.ndarray:
    """Convert ``value`` to a float array, raising TypeError for non-numeric input."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be numeric, got {short_repr(value)}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        if isinstance(value, (list, tuple, np.ndarray)) or is_pandas(value, "Series", "Index"):
            check_no_missing(value, name)  # pd.NA cannot become a float: say it is missing
        raise TypeError(f"{name} must be numeric, got {short_repr(value)}") from exc
    return arr


def _check_exact_integers(raw: np.ndarray, name: str) -> None:
    """Refuse integers above 2**53, compared exactly (a float64 would round them)."""
    kind = raw.dtype.kind
    if kind in "iu" and raw.size and raw.max() > MAX_EXACT_COUNT:
        bad = raw[raw > MAX_EXACT_COUNT].ravel()[0]
    elif kind == "O":
        big = [x for x in raw.ravel() if isinstance(x, Integral) and abs(int(x)) > MAX_EXACT_COUNT]
        if not big:
            return
        bad = big[0]
    else:
        return
    raise ValueError(_too_large(name, int(bad)))


def _too_large(name: str, bad: Any) -> str:
    return (
        f"{name} must be counts no larger than 2**53 = {MAX_EXACT_COUNT} (larger whole numbers "
        f"are not exactly representable as floating-point numbers), got {bad!r}"
    )


def _check_total(arr: np.ndarray, name: str) -> None:
    """Refuse counts whose total does not fit a 64-bit integer (summed exactly)."""
    if arr.size == 0 or float(np.sum(arr)) < 2.0**62:
        return  # every count is <= 2**53, so a float sum below 2**62 is far from 2**63
    ints = arr.astype(np.int64).ravel()
    # exact: split each count (<= 2**53) into 27 high and 26 low bits, sum each in int64
    total = int(np.sum(ints >> 26)) * 2**26 + int(np.sum(ints & (2**26 - 1)))
    if total > _INT64_MAX:
        raise ValueError(
            f"{name} sum to {total}, more than 2**63 - 1 (the largest 64-bit integer): "
            "their total cannot be represented; use smaller counts"
        )


def _as_count_array(value: Any, name: str) -> np.ndarray:
    """Float array of counts: numeric, no missing values, exact (<= 2**53), finite, whole, >= 0."""
    if is_pandas(value, "Series", "Index"):
        value = value.to_numpy()
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be numeric, got {short_repr(value)}")
    check_not_bool(value, name)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {short_repr(value)}") from exc
    if raw.dtype.kind == "O":
        check_no_missing(raw, name)
    _check_exact_integers(raw, name)
    arr = as_float_array(raw, name)
    if arr.size == 0:
        raise ValueError(f"{name} is empty; give at least one count")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite counts, got {short_repr(value)}")
    if np.any(arr < 0):
        bad = arr[arr < 0].ravel()[0]
        raise ValueError(f"{name} must be non-negative counts, got {short_repr(bad)}")
    if np.any(arr > MAX_EXACT_COUNT):
        raise ValueError(_too_large(name, int(arr[arr > MAX_EXACT_COUNT].ravel()[0])))
    if np.any(arr != np.round(arr)):
        bad = arr[arr != np.round(arr)].ravel()[0]
        raise ValueError(f"{name} must be whole numbers, got {short_repr(bad)}")
    return arr


def check_count_limit(value: Any, name: str) -> None:
    """Raise ValueError when a count (int or array) exceeds 2**53, the exact-float limit.

    Examples
    --------
    >>> check_count_limit(2**53, "total")
    >>> check_count_limit(2**53 + 1, "total")
    Traceback (most recent call last):
    ...
    ValueError: total must be counts no larger than 2**53 = 9007199254740992 (larger whole numbers are not exactly representable as floating-point numbers), got 9007199254740993
    """
    if isinstance(value, Integral):
        if abs(int(value)) > MAX_EXACT_COUNT:
            raise ValueError(_too_large(name, int(value)))
        return
    raw = np.asarray(value)
    _check_exact_integers(raw, name)
    if raw.dtype.kind == "f":
        big = np.isfinite(raw) & (np.abs(raw) > MAX_EXACT_COUNT)
        if big.any():
            raise ValueError(_too_large(name, float(raw[big].ravel()[0])))


def check_counts(
    successes: Any,
    trials: Any,
    *,
    allow_zero_trials: bool = True,
    successes_name: str = "successes",
    trials_name: str = "trials",
) -> tuple[np.ndarray, np.ndarray]:
    """Validate success and trial counts and return them as int64 arrays of one shape.

    Counts must be finite, non-negative whole numbers, of broadcastable shapes,
    not empty, with ``successes <= trials`` element-wise. They must also be
    exact: every count at most 2**53 (checked on the integers, before any
    float conversion) and the totals within a 64-bit integer. Two pandas Series
    are paired by index label (see :func:`align_by_label`).
    """
    successes, trials = align_by_label((successes_name, successes), (trials_name, trials))
    s = _as_count_array(successes, successes_name)
    n = _as_count_array(trials, trials_name)
    try:
        s, n = np.broadcast_arrays(s, n)
    except ValueError as exc:
        raise ValueError(
            f"{successes_name} and {trials_name} have mismatched shapes {np.shape(s)} and {np.shape(n)}"
        ) from exc
    if np.any(s > n):
        i = int(np.flatnonzero((s > n).ravel())[0])
        raise ValueError(
            f"{successes_name} must not exceed {trials_name}: got {successes_name}={s.ravel()[i]:g} "
            f"> {trials_name}={n.ravel()[i]:g} at position {i}"
        )
    if not allow_zero_trials and np.any(n == 0):
        i = int(np.flatnonzero((n == 0).ravel())[0])
        raise ValueError(f"{trials_name} must be positive, got 0 at position {i}")
    _check_total(s, successes_name)
    _check_total(n, trials_name)
    return s.astype(np.int64), n.astype(np.int64)


# -- pandas alignment and missing values ------------------------------------------------------


def _labels(index: pd.Index, limit: int = 5) -> list[Any]:
    return list(index[:limit])


def align_by_label(*named: tuple[str, Any]) -> list[Any]:
    """Pair pandas inputs by index label, never by position.

    Parameters
    ----------
    *named : (name, value) pairs
        The arguments of one call, in order. Values that are pandas Series or
        DataFrames carry an index; other values are left alone (paired by
        position).

    Returns
    -------
    list
        The values in the same order; every pandas value after the first is
        reordered to the first pandas value's index (label order of the first
        argument is kept).

    Raises
    ------
    ValueError
        When two pandas inputs' indexes hold different labels (naming both
        arguments and some labels found in only one), or when their indexes
        differ and one has duplicate labels (pairing would be ambiguous).

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.Series([1, 2], index=["a", "b"])
    >>> b = pd.Series([10, 3], index=["b", "a"])
    >>> align_by_label(("successes", a), ("trials", b))[1].tolist()
    [3, 10]
    """
    out = [value for _, value in named]
    frames = [(i, name, value) for i, (name, value) in enumerate(named) if is_pandas(value, "Series", "DataFrame")]
    if len(frames) < 2:
        return out
    _, first_name, first = frames[0]
    ref = first.index
    for i, name, value in frames[1:]:
        if value.index.equals(ref):
            continue
        for nm, idx in ((first_name, ref), (name, value.index)):
            if idx.has_duplicates:
                raise ValueError(
                    f"{nm} has duplicate index labels {_labels(idx[idx.duplicated()].unique())}, so "
                    f"{first_name} and {name} cannot be paired by label; make the index unique "
                    "or pass arrays (paired by position)"
                )
        indexer = value.index.get_indexer(ref)
        if len(value.index) != len(ref) or np.any(indexer < 0):
            only_first = _labels(ref.difference(value.index, sort=False))
            only_other = _labels(value.index.difference(ref, sort=False))
            raise ValueError(
                f"{first_name} and {name} have different index labels (pandas inputs are paired "
                f"by label): {only_first} only in {first_name}, {only_other} only in {name}; "
                "reindex them to the same labels, or pass arrays (.to_numpy()) to pair by position"
            )
        aligned = value.iloc[indexer]
        out[i] = aligned.set_axis(ref, axis=0)
    return out


def as_row_array(value: Any) -> np.ndarray:
    """A NumPy array of row values that keeps missing entries visible.

    ``np.asarray(["a", float("nan")])`` turns the NaN into the string
    ``"nan"``; a list of strings holding a missing value is kept as an object
    array instead, so that :func:`missing_mask` sees it.

    Examples
    --------
    >>> as_row_array(["a", float("nan")]).dtype
    dtype('O')
    """
    if is_pandas(value, "Series", "Index", "DataFrame"):
        return value.to_numpy()
    arr = np.asarray(value)
    if arr.dtype.kind in "US" and not isinstance(value, np.ndarray):
        import pandas as pd  # deferred: fast start-up

        obj = np.asarray(value, dtype=object)
        if np.asarray(pd.isna(obj), dtype=bool).any():
            return obj
    return arr


def missing_mask(value: Any) -> np.ndarray:
    """Boolean mask of missing entries (NaN, None, pd.NA, NaT), one per row.

    For a 2-D input a row is missing when any of its entries is.

    Examples
    --------
    >>> missing_mask([1.0, None, float("nan"), 0.0]).tolist()
    [False, True, True, False]
    """
    if is_pandas(value, "Series", "DataFrame"):
        mask = value.isna().to_numpy()  # fast for pandas' own (e.g. Arrow string) dtypes
        return mask if mask.ndim == 1 else mask.any(axis=1)
    arr = as_row_array(value)
    kind = arr.dtype.kind
    if kind in "iub":
        mask = np.zeros(arr.shape, dtype=bool)
    elif kind in "fc":
        mask = np.isnan(arr)
    elif kind in "mM":
        mask = np.isnat(arr)
    else:
        import pandas as pd  # deferred: fast start-up

        mask = np.asarray(pd.isna(arr), dtype=bool)
    if mask.ndim == 0:
        return mask.reshape(1)
    if mask.ndim > 1:
        mask = mask.reshape(mask.shape[0], -1).any(axis=1)
    return mask


def check_no_missing(value: Any, name: str, *, hint: str = "drop or fill them first") -> None:
    """Raise ValueError when ``value`` holds a missing entry (NaN, None, pd.NA, NaT).

    The message names the argument, the number of missing rows and the first
    positions (and index labels for pandas input).

    Examples
    --------
    >>> check_no_missing([1, 0, 1], "y_true")
    >>> check_no_missing([1, None, 1], "y_true")
    Traceback (most recent call last):
    ...
    ValueError: y_true has 1 missing value(s) (NaN/None/NA) at position(s) [1]; drop or fill them first
    """
    mask = missing_mask(value)
    if not mask.any():
        return
    pos = np.flatnonzero(mask)
    where = f"position(s) {pos[:5].tolist()}"
    if is_pandas(value, "Series", "DataFrame") and not is_pandas(value.index, "RangeIndex"):
        where += f" (index labels {list(value.index[pos[:5]])})"
    raise ValueError(f"{name} has {pos.size} missing value(s) (NaN/None/NA) at {where}; {hint}")


def check_weights(
    weights: Any,
    index: pd.Index | int,
    *,
    name: str = "weights",
    tol: float = 1e-9,
) -> np.ndarray:
    """Validate population shares and return them aligned to ``index`` as a float array.

    ``weights`` may be a sequence (aligned by position), a dict or Series keyed
    by stratum (aligned by label). They must be finite, non-negative, sum to 1
    within ``tol`` and match the strata exactly.
    """
    n = index if isinstance(index, int) else len(index)
    check_not_bool(list(weights.values()) if isinstance(weights, dict) else weights, name, "population shares")
    if isinstance(weights, dict):
        import pandas as pd  # deferred: fast start-up

        weights = pd.Series(weights, dtype=float)
    if is_pandas(weights, "Series") and not isinstance(index, int):
        arr = _weights_by_label(weights, index, name)
    else:
        if is_pandas(weights, "Series"):
            weights = weights.to_numpy()
        arr = as_float_array(weights, name)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(f"{name} must have one share per stratum ({n}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {short_repr(arr.tolist())}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {short_repr(arr.tolist())}")
    total = float(arr.sum())
    if abs(total - 1.0) > tol:
        raise ValueError(f"{name} are population shares and must sum to 1 (tolerance {tol:g}), got sum {total!r}")
    return arr


def _weights_by_label(weights: Any, index: Any, name: str) -> np.ndarray:
    """Shares keyed by stratum, aligned to ``index``; every stratum exactly once."""
    if weights.index.has_duplicates:
        dup = _labels(weights.index[weights.index.duplicated()].unique())
        raise ValueError(f"{name} has duplicate stratum labels {dup}; give one share per stratum")
    wanted = list(index)
    missing = [k for k in wanted if k not in weights.index]
    extra = [k for k in weights.index if k not in set(wanted)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no weight for strata {missing[:5]}")
        if extra:
            parts.append(f"weights for unknown strata {extra[:5]}")
        raise ValueError(f"{name} do not match the strata: " + "; ".join(parts))
    return as_float_array(weights.reindex(index).to_numpy(), name)


def iter_columns(columns: str | Iterable[str] | None, name: str) -> list[str]:
    """Normalise a column name or a list of column names to a list."""
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    cols = list(columns)
    if not all(isinstance(c, str) for c in cols):
        raise TypeError(f"{name} must be a column name or a list of column names, got {cols!r}")
    return cols


def check_random_seed(random_seed: Any, name: str = "random_seed") -> Any:
    """Return ``random_seed`` if numpy can seed a generator with it, else raise naming it.

    Accepted: None, a non-negative integer, a sequence of non-negative integers,
    a ``numpy.random.SeedSequence`` or a ``numpy.random.Generator``.
    """
    if random_seed is None or isinstance(random_seed, (np.random.Generator, np.random.SeedSequence)):
        return random_seed
    if isinstance(random_seed, bool):
        raise TypeError(f"{name} must be None, an integer or a numpy Generator, got {random_seed!r}")
    if isinstance(random_seed, Integral):
        if random_seed < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {random_seed}")
        return int(random_seed)
    if isinstance(random_seed, (list, tuple, np.ndarray)) and len(random_seed) > 0:
        arr = np.asarray(random_seed)
        if arr.dtype.kind in "iu" and np.all(arr >= 0):
            return random_seed
    raise TypeError(
        f"{name} must be None, a non-negative integer, a sequence of them or a numpy Generator, "
        f"got {short_repr(random_seed)}"
    )


def make_rng(random_seed: Any, name: str = "random_seed") -> np.random.Generator:
    """A numpy Generator from a validated ``random_seed`` (a Generator is passed through)."""
    seed = check_random_seed(random_seed, name)
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def check_positive_real(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite positive (or, with ``allow_zero``, non-negative) real number as a float."""
    value = _finite_real(value, name, "a positive number")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return value


def as_labelled_series(values: Any, name: str, index: pd.Index | None = None) -> pd.Series:
    """Series of floats; dicts/Series keep labels, sequences get ``index`` or 0..K-1."""
    import pandas as pd  # deferred: fast start-up

    check_not_bool(list(values.values()) if isinstance(values, Mapping) else values, name, "numbers")
    if isinstance(values, Mapping) and not isinstance(values, pd.Series):
        values = pd.Series(dict(values))
    if isinstance(values, pd.Series):
        if values.index.has_duplicates:
            dup = list(values.index[values.index.duplicated()].unique()[:5])
            raise ValueError(f"{name} has duplicate stratum labels {dup}; give one value per stratum")
        if index is not None and not values.index.equals(index):
            indexer = values.index.get_indexer(index)
            if len(values) != len(index) or np.any(indexer < 0):
                missing = list(index.difference(values.index, sort=False)[:5])
                extra = list(values.index.difference(index, sort=False)[:5])
                raise ValueError(
                    f"{name} do not match the strata of weights (paired by label): missing {missing}, extra {extra}"
                )
            values = pd.Series(values.to_numpy()[indexer], index=index)
        arr = as_float_array(values.to_numpy(), name)
        out_index = values.index
    else:
        arr = np.atleast_1d(as_float_array(values, name))
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        out_index = index if index is not None else pd.RangeIndex(arr.size)
        if arr.size != len(out_index):
            raise ValueError(f"{name} must have one value per stratum ({len(out_index)}), got {arr.size}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; give one value per stratum")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {short_repr(arr.tolist())}")
    return pd.Series(arr, index=out_index, name=name)


def weights_series(weights: Any) -> pd.Series:
    """Population shares as a float Series (labels kept), checked to sum to 1."""
    w = as_labelled_series(weights, "weights")
    check_weights(w.to_numpy(), len(w))
    return w
