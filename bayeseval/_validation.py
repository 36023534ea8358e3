"""Input validation shared by every public function.

Each checker raises ``TypeError`` for a value of the wrong kind and
``ValueError`` for a value of the right kind but out of range, and names the
argument and the offending value in the message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "check_level",
    "check_method",
    "check_counts",
    "check_weights",
    "check_positive_int",
    "check_probability",
    "as_float_array",
    "check_random_seed",
    "make_rng",
]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_level(level: Any, name: str = "level") -> float:
    """Return ``level`` as a float in the open interval (0, 1) or raise."""
    if isinstance(level, bool) or not isinstance(level, Real):
        raise TypeError(f"{name} must be a number in (0, 1), got {_short(level)}")
    level = float(level)
    if not (0.0 < level < 1.0) or not np.isfinite(level):
        raise ValueError(
            f"{name} must be in the open interval (0, 1) (0.95 means a 95% interval), got {level!r}"
        )
    return level


def check_probability(value: Any, name: str, *, open_interval: bool = False) -> float:
    """Return ``value`` as a float in [0, 1] (or (0, 1) when ``open_interval``) or raise."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number between 0 and 1, got {_short(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if open_interval and not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")
    if not (0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be between 0 and 1, got {value!r}")
    return value


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum`` or raise."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, Real) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer >= {minimum}, got {_short(value)}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def check_method(method: Any, valid: Sequence[str], name: str = "method") -> str:
    """Return ``method`` lower-cased if it is one of ``valid`` or raise listing the choices."""
    if not isinstance(method, str):
        raise TypeError(f"{name} must be a string, one of {list(valid)}, got {_short(method)}")
    key = method.lower().replace("-", "_")
    if key not in valid:
        raise ValueError(f"unknown {name} {method!r}; valid choices are {list(valid)}")
    return key


def as_float_array(value: Any, name: str) -> np.ndarray:
    """Convert ``value`` to a float array, raising TypeError for non-numeric input."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be numeric, got {_short(value)}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {_short(value)}") from exc
    return arr


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
    not empty, with ``successes <= trials`` element-wise.
    """
    s = as_float_array(successes, successes_name)
    n = as_float_array(trials, trials_name)
    for arr, name, raw in ((s, successes_name, successes), (n, trials_name, trials)):
        if arr.size == 0:
            raise ValueError(f"{name} is empty; give at least one count")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite counts, got {_short(raw)}")
        if np.any(arr < 0):
            bad = arr[arr < 0].ravel()[0]
            raise ValueError(f"{name} must be non-negative counts, got {bad!r}")
        if np.any(arr != np.round(arr)):
            bad = arr[arr != np.round(arr)].ravel()[0]
            raise ValueError(f"{name} must be whole numbers, got {bad!r}")
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
    return s.astype(np.int64), n.astype(np.int64)


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
    if isinstance(weights, dict):
        weights = pd.Series(weights, dtype=float)
    if isinstance(weights, pd.Series) and not isinstance(index, int):
        keys = list(weights.index)
        wanted = list(index)
        missing = [k for k in wanted if k not in weights.index]
        extra = [k for k in keys if k not in set(wanted)]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"no weight for strata {missing[:5]}")
            if extra:
                parts.append(f"weights for unknown strata {extra[:5]}")
            raise ValueError(f"{name} do not match the strata: " + "; ".join(parts))
        arr = as_float_array(weights.reindex(index).to_numpy(), name)
    else:
        if isinstance(weights, pd.Series):
            weights = weights.to_numpy()
        arr = as_float_array(weights, name)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(f"{name} must have one share per stratum ({n}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {_short(arr.tolist())}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {_short(arr.tolist())}")
    total = float(arr.sum())
    if abs(total - 1.0) > tol:
        raise ValueError(
            f"{name} are population shares and must sum to 1 (tolerance {tol:g}), got sum {total!r}"
        )
    return arr


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
        f"got {_short(random_seed)}"
    )


def make_rng(random_seed: Any, name: str = "random_seed") -> np.random.Generator:
    """A numpy Generator from a validated ``random_seed`` (a Generator is passed through)."""
    seed = check_random_seed(random_seed, name)
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
