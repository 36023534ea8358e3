"""The keyed row hash of the dual-constraint split, in numpy, DuckDB SQL and Spark SQL.

.. code-block:: text

    mix64(z)   = splitmix64 finalizer:  z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
                                        z ^= z >> 27; z *= 0x94D049BB133111EB;
                                        z ^= z >> 31            (all mod 2**64)
    fnv1a64(b) = 64-bit FNV-1a of the bytes b
    salt(key)  = mix64(fnv1a64(key_text) ^ mix64(seed + 0x9E3779B97F4A7C15))
    rank       = mix64(mix64(id64) ^ salt(key)) >> 1        (63 bits, >= 0)

The SQL builders take every column name they use as an argument, so callers can
pass names that do not occur among the user's columns.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

M64 = (1 << 64) - 1
C1 = 0xBF58476D1CE4E5B9
C2 = 0x94D049BB133111EB
GOLDEN = 0x9E3779B97F4A7C15
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_TWO64 = 1 << 64
_TWO63 = 1 << 63


def mix64_int(z: int) -> int:
    """splitmix64 finalizer on a Python int (mod 2**64)."""
    z &= M64
    z = ((z ^ (z >> 30)) * C1) & M64
    z = ((z ^ (z >> 27)) * C2) & M64
    return z ^ (z >> 31)


def mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer on a uint64 array (wrapping arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(C1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(C2)
    return z ^ (z >> np.uint64(31))


def fnv1a64_bytes(data: bytes) -> int:
    """64-bit FNV-1a of ``data``."""
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & M64
    return h


def fnv1a64_strings(values: Sequence[str]) -> np.ndarray:
    """FNV-1a 64 of the UTF-8 bytes of each string, vectorised over rows."""
    encoded = [str(v).encode("utf-8") for v in values]
    n = len(encoded)
    h = np.full(n, FNV_OFFSET, dtype=np.uint64)
    if n == 0:
        return h
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=n)
    width = int(lengths.max())
    if width == 0:
        return h
    mat = np.array(encoded, dtype=f"S{width}").view(np.uint8).reshape(n, width)
    prime = np.uint64(FNV_PRIME)
    with np.errstate(over="ignore"):
        for j in range(width):
            active = lengths > j
            step = (h ^ mat[:, j].astype(np.uint64)) * prime
            h = np.where(active, step, h)
    return h


def key_text(key: tuple) -> str:
    """The key's values as text joined by ``"\\x1f"``."""
    return "\x1f".join(str(v.item() if isinstance(v, np.generic) else v) for v in key)


def key_salt(key: Hashable | tuple, *, random_seed: int) -> int:
    """The 64-bit salt of a key (a class, or a class-by-group tuple) for a seed.

    Parameters
    ----------
    key : hashable or tuple
        The key's values (a single value counts as a one-value tuple).
    random_seed : int
        The split's seed.

    Returns
    -------
    int
        ``mix64(fnv1a64(key_text) ^ mix64(random_seed + golden ratio constant))``, in
        ``[0, 2**64)``.

    Examples
    --------
    >>> key_salt((1,), random_seed=0) == key_salt(1, random_seed=0) != key_salt((1,), random_seed=1)
    True
    """
    key = key if isinstance(key, tuple) else (key,)
    seed = mix64_int((int(random_seed) + GOLDEN) & M64)
    return mix64_int(fnv1a64_bytes(key_text(key).encode("utf-8")) ^ seed)


def id64(ids: Any) -> tuple[np.ndarray, np.ndarray]:
    """64-bit id values and an integer tie-break order for row ids (integers or strings)."""
    ids = pd.Index(ids) if not isinstance(ids, pd.Index) else ids
    if pd.api.types.is_bool_dtype(ids.dtype):
        raise TypeError("row ids must be integers or strings, got booleans")
    if pd.api.types.is_integer_dtype(ids.dtype):
        if pd.api.types.is_unsigned_integer_dtype(ids.dtype):
            values = ids.to_numpy(np.uint64)
            return values, values.view(np.int64) ^ np.int64(-(1 << 63))
        values = ids.to_numpy(np.int64)
        return values.view(np.uint64), values
    inferred = pd.api.types.infer_dtype(ids, skipna=False)
    if inferred == "integer":
        values = np.asarray([int(v) for v in ids], dtype=np.int64)
        return values.view(np.uint64), values
    if inferred == "string":
        codes, _ = pd.factorize(ids, sort=True)
        return fnv1a64_strings(ids), codes.astype(np.int64)
    raise TypeError(
        f"row ids must be integers or strings (the index, or id_column), got dtype {ids.dtype} ({inferred})"
    )


def rank_of(u: np.ndarray, salts: Any) -> np.ndarray:
    """The 63-bit keyed rank of 64-bit ids ``u`` under ``salts`` (uint64)."""
    return (mix64(mix64(u) ^ salts) >> np.uint64(1)).astype(np.int64)


def signed64(u: int) -> int:
    """An unsigned 64-bit integer as the signed integer with the same bits."""
    u = int(u)
    return u - _TWO64 if u >= _TWO63 else u


# -- DuckDB SQL ------------------------------------------------------------------------------


def _duckdb_mul(c: int, z: str) -> str:
    """SQL for ``z * c mod 2**64`` on UBIGINT ``z`` using 32-bit halves (no overflow, no HUGEINT)."""
    lo, hi = c & 0xFFFFFFFF, c >> 32
    zl, zh = f"({z} & 4294967295)", f"({z} >> 32)"
    p = f"({zl} * {lo}::UBIGINT)"
    mid = f"((({zh} * {lo}::UBIGINT) & 4294967295) + (({zl} * {hi}::UBIGINT) & 4294967295) + ({p} >> 32)) & 4294967295"
    return f"((({mid}) << 32) | ({p} & 4294967295))"


def _duckdb_mix(z: str) -> list[str]:
    return [
        f"xor({z}, {z} >> 30)",
        _duckdb_mul(C1, z),
        f"xor({z}, {z} >> 27)",
        _duckdb_mul(C2, z),
        f"xor({z}, {z} >> 31)",
    ]


def duckdb_rank_sql(id_expr: str, salt_expr: str, source: str, *, z: str = "z", out: str = "__rank") -> str:
    """DuckDB SQL selecting ``*`` and ``out`` (the keyed rank) from ``source``.

    ``id_expr`` is an integer column, ``salt_expr`` a UBIGINT column of ``source``;
    ``z`` (a quoted identifier absent from ``source``) holds the intermediate value.
    """
    u = (
        f"(CASE WHEN {id_expr} < 0 THEN 18446744073709551615::UBIGINT - (-({id_expr}::BIGINT + 1))::UBIGINT "
        f"ELSE {id_expr}::UBIGINT END)"
    )
    steps = _duckdb_mix(z) + [f"xor({z}, {salt_expr})"] + _duckdb_mix(z)
    sql = f"SELECT *, {u} AS {z} FROM {source}"
    for s in steps:
        sql = f"SELECT * REPLACE ({s} AS {z}) FROM ({sql})"
    return f"SELECT * EXCLUDE ({z}), ({z} >> 1)::BIGINT AS {out} FROM ({sql})"


# -- Spark SQL -------------------------------------------------------------------------------


def _spark_mul(c: int, z: str = "z") -> str:
    """Spark SQL for ``z * c mod 2**64`` on a BIGINT ``z`` (two's complement).

    Spark's ANSI mode raises on BIGINT overflow, so the product is built from
    32-bit halves of ``z`` times 16-bit limbs of ``c``: every product and sum
    stays below 2**51, and the parts beyond 2**64 are dropped by masks and
    shifts (which wrap). Six multiplications and five additions (each an
    overflow-checked call under ANSI), against ten and twelve for 16-bit limbs
    on both sides.
    """
    c0, c1, c2, c3 = ((c >> (16 * j)) & 0xFFFF for j in range(4))
    lo, hi = f"({z} & 4294967295)", f"shiftrightunsigned({z}, 32)"
    a = f"({lo} * {c0})"  # < 2**48, bits 0..47 of the product
    w = (  # bits 16..63 of the product, mod 2**48
        f"(shiftright({a}, 16) + {lo} * {c1} + shiftleft(({hi} * {c0} + {lo} * {c2}) & 4294967295, 16)"
        f" + shiftleft(({hi} * {c1} + {lo} * {c3}) & 65535, 32))"
    )
    return f"(({a} & 65535) | shiftleft({w}, 16))"


def _spark_mix(z: str = "z") -> list[str]:
    return [
        f"{z} ^ shiftrightunsigned({z}, 30)",
        _spark_mul(C1, z),
        f"{z} ^ shiftrightunsigned({z}, 27)",
        _spark_mul(C2, z),
        f"{z} ^ shiftrightunsigned({z}, 31)",
    ]


def spark_rank_steps(z: str, salt_expr: str) -> list[str]:
    """The keyed rank as Spark SQL steps, each an expression of the previous value ``z``.

    Start from ``z = CAST(id AS BIGINT)`` and apply the steps in order (one
    projection each); the last value is the 63-bit rank. Every step refers to
    ``z`` several times, so the steps must be separate projections (Spark does
    not merge projections that would repeat a non-trivial expression), never
    one nested expression.

    Parameters
    ----------
    z : str
        SQL reference to the running value (a quoted column name).
    salt_expr : str
        SQL expression of the key's salt as a signed 64-bit integer.

    Returns
    -------
    list of str
        Twelve BIGINT expressions.

    Examples
    --------
    >>> steps = spark_rank_steps("`z`", "`salt`")
    >>> len(steps), steps[5], steps[-1]
    (12, '`z` ^ `salt`', 'shiftrightunsigned(`z`, 1)')
    """
    return _spark_mix(z) + [f"{z} ^ {salt_expr}"] + _spark_mix(z) + [f"shiftrightunsigned({z}, 1)"]


def spark_rank_sql(id_expr: str, salt_expr: str) -> str:
    """Spark SQL for the keyed rank ``mix64(mix64(id) ^ salt) >> 1``.

    Every step is a lambda over the previous value (``transform(array(prev),
    z -> step)[0]``); the lambda variable ``z`` shadows any column of that name.
    Spark evaluates such lambdas without code generation: on a DataFrame, the
    projections of :func:`spark_rank_steps` compute the same value faster
    (docs/validation.md, section 12f).

    Parameters
    ----------
    id_expr : str
        SQL expression of the integer row id.
    salt_expr : str
        SQL expression of the key's salt as a signed 64-bit integer.

    Returns
    -------
    str
        A Spark SQL expression of type BIGINT, the 63-bit rank (non-negative).

    Examples
    --------
    >>> spark_rank_sql("id", "salt").startswith("transform(array(")
    True
    """
    expr = f"CAST({id_expr} AS BIGINT)"
    for step in spark_rank_steps("z", salt_expr):
        expr = f"transform(array({expr}), z -> {step})[0]"
    return expr
