"""The campaign file: its schema, and building, publishing and upgrading it.

:func:`build` writes a new campaign database into a temporary file and :func:`publish` moves it
to its path atomically (a hard link that never replaces a file, a rename where the file system
has no hard links); :func:`upgrade_schema` adds the tables an older file lacks.

One file per campaign, in WAL mode (:class:`~bayeseval.campaign.store.store.CampaignStore` reads and
writes it). Tables:

``meta``       key/value: the campaign configuration (JSON), package version, creation time,
               the row-id type and the random generator state after the last proposal.
``strata``     one row per stratum: integer code, key (JSON list of the stratum column values),
               number of pool rows, number of rows eligible for labelling.
``pool``       one row per pool row, only what the campaign needs: row id, stratum code,
               prediction, optional score, eligibility flag and a random sampling order.
``proposals``  row id (PRIMARY KEY), round, time, status ``pending`` / ``labelled``.
``labels``     row id (PRIMARY KEY), label, trial and success flags, round, time; the labels a
               campaign started from (``Campaign.create(labels=)``) have round 0 and a
               ``labelled`` proposal of round 0.
``counts``     per-stratum labelled / trials / successes / pending, kept in step with
               ``labels`` and ``proposals`` inside the same transactions.
``decisions``  round (PRIMARY KEY), rule, allocation JSON, time, package version, details JSON.
``annotations`` row id and annotator (PRIMARY KEY together), label, round, time: every
               annotation of a row when several annotators label it (schema version 2).
``content``    row id (PRIMARY KEY), the JSON list of the row's content columns (the values
               annotators see, named by the configuration's ``content``), schema version 3.
``tasks``      row id and annotation project (PRIMARY KEY together), the project's task id
               (UNIQUE per project), time: where a row was sent as a task (schema version 3;
               empty until a tool's sync records tasks).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA_VERSION = 3
#: older schema versions that :class:`CampaignStore` upgrades when it opens them
UPGRADABLE = ("1", "2")
#: Seconds a campaign waits for another process's write lock before giving up.
DEFAULT_BUSY_TIMEOUT = 10.0
TABLES = frozenset({"meta", "strata", "pool", "proposals", "labels", "counts", "decisions"})
SQLITE_MAGIC = b"SQLite format 3\x00"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE strata (
    code INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    n_rows INTEGER NOT NULL,
    n_eligible INTEGER NOT NULL
);
CREATE TABLE pool (
    rid {rid_type} PRIMARY KEY,
    stratum INTEGER NOT NULL,
    prediction,
    score REAL,
    eligible INTEGER NOT NULL,
    ord INTEGER NOT NULL
);
CREATE TABLE proposals (
    rid {rid_type} PRIMARY KEY,
    round INTEGER NOT NULL,
    time REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'labelled'))
);
CREATE TABLE labels (
    rid {rid_type} PRIMARY KEY,
    label,
    trial INTEGER NOT NULL,
    success INTEGER NOT NULL,
    round INTEGER NOT NULL,
    time REAL NOT NULL
);
CREATE TABLE counts (
    stratum INTEGER PRIMARY KEY,
    labelled INTEGER NOT NULL,
    trials INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    pending INTEGER NOT NULL
);
CREATE TABLE annotations (
    rid {rid_type} NOT NULL,
    annotator TEXT NOT NULL,
    label,
    round INTEGER NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (rid, annotator)
);
CREATE TABLE content (
    rid {rid_type} PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE tasks (
    rid {rid_type} NOT NULL,
    project TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (rid, project),
    UNIQUE (project, task_id)
);
CREATE TABLE decisions (
    round INTEGER PRIMARY KEY,
    rule TEXT NOT NULL,
    allocation TEXT NOT NULL,
    time REAL NOT NULL,
    version TEXT NOT NULL,
    details TEXT
);
"""
INDEXES = "CREATE INDEX pool_sample ON pool (stratum, eligible, ord);"


#: json.dumps with its default settings, built once (one encoder for many stratum keys)


KEY_JSON = json.JSONEncoder()


def key_json(values: list[Any]) -> str:
    """``KEY_JSON.encode(values)``, written directly when every value is a string or an integer.

    A campaign of many strata stores one key per stratum; the encoder's per-call cost is most
    of the time for these. Strings are encoded by the encoder's own function, integers by
    ``int.__repr__``, joined by the encoder's separator, so the text is the encoder's.

    Examples
    --------
    >>> key_json(["north", 3]), key_json(["north", 3]) == KEY_JSON.encode(["north", 3])
    ('["north", 3]', True)
    """
    parts = []
    for v in values:
        if type(v) is str:
            parts.append(encode_basestring_ascii(v))
        elif type(v) is int:
            parts.append(int.__repr__(v))
        else:
            return KEY_JSON.encode(values)
    return "[" + ", ".join(parts) + "]"


def keys_json(keys: Iterable[Sequence[Any]]) -> list[str]:
    """:func:`key_json` of every stratum key (its values made plain by :func:`py_value`).

    A key of one string or one integer, the usual stratum, is written without a call per value.

    Examples
    --------
    >>> keys_json([("north",), (3,), ("north", 3)])
    ['["north"]', '[3]', '["north", 3]']
    """
    out = []
    for key in keys:
        if len(key) == 1:
            kind = type(key[0])
            if kind is str:
                out.append("[" + encode_basestring_ascii(key[0]) + "]")
                continue
            if kind is int:
                out.append("[" + int.__repr__(key[0]) + "]")
                continue
        out.append(key_json([py_value(v) for v in key]))
    return out


@dataclass(frozen=True)
class RowColumns:
    """Rows of a table given column by column: equal-length lists of Python values.

    A column given as None is NULL on every row (written in the statement, not bound).

    Examples
    --------
    >>> RowColumns(([1, 2], ["a", "b"], None)).rows()
    [(1, 'a', None), (2, 'b', None)]
    """

    columns: tuple[list[Any] | None, ...]

    def __len__(self) -> int:
        return next((len(c) for c in self.columns if c is not None), 0)

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows as tuples."""
        n = len(self)
        return list(zip(*[[None] * n if c is None else c for c in self.columns], strict=True))


#: values bound per INSERT statement: SQLite's oldest limit on a statement's parameters
MAX_PARAMETERS = 999


def insert_rows(conn: sqlite3.Connection, table: str, rows: Iterable[Sequence[Any]] | RowColumns) -> None:
    """Insert rows into ``table``, many per statement (the same rows, in the same order, as one per statement).

    ``rows`` are tuples, one per row, each with a value per column of the table, or a
    :class:`RowColumns`. A statement of many rows binds the same values as one statement per
    row, and SQLite steps it once instead of once per row.

    Examples
    --------
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE t (a, b, c)")
    >>> insert_rows(conn, "t", RowColumns(([1, 2, 3], ["x", "y", "z"], None)))
    >>> insert_rows(conn, "t", [(4, "w", 0.5)])
    >>> conn.execute("SELECT * FROM t").fetchall()
    [(1, 'x', None), (2, 'y', None), (3, 'z', None), (4, 'w', 0.5)]
    """
    if isinstance(rows, RowColumns):
        bound = [c for c in rows.columns if c is not None]
        row = "(" + ",".join("NULL" if c is None else "?" for c in rows.columns) + ")"
        n, width = len(rows), len(bound)
        if any(len(c) != n for c in bound):
            raise ValueError(f"RowColumns of {table}: columns of unequal lengths {[len(c) for c in bound]}")
        if width == 0:
            conn.executemany(f"INSERT INTO {table} VALUES {row}", [()] * n)
            return
        flat: list[Any] = [None] * (n * width)
        for j, column in enumerate(bound):
            flat[j::width] = column
        per = MAX_PARAMETERS // width
        full = f"INSERT INTO {table} VALUES " + ",".join([row] * per)
        step = per * width
        for start in range(0, len(flat), step):
            chunk = flat[start : start + step]
            sql = (
                full if len(chunk) == step else f"INSERT INTO {table} VALUES " + ",".join([row] * (len(chunk) // width))
            )
            conn.execute(sql, chunk)
        return
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return
    width = len(first)
    row = "(" + ",".join("?" * width) + ")"
    per = max(MAX_PARAMETERS // max(width, 1), 1)
    full = f"INSERT INTO {table} VALUES " + ",".join([row] * per)
    chunk = [first, *islice(it, per - 1)]
    while chunk:
        if any(len(r) != width for r in chunk):
            bad = next(r for r in chunk if len(r) != width)
            raise sqlite3.ProgrammingError(f"rows of {table}: a row of {len(bad)} values among rows of {width}")
        flat = [v for r in chunk for v in r]
        conn.execute(full if len(chunk) == per else f"INSERT INTO {table} VALUES " + ",".join([row] * len(chunk)), flat)
        chunk = list(islice(it, per))


def py_value(value: Any) -> Any:
    """Convert numpy scalars to plain Python values for sqlite3."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def upgrade_schema(conn: sqlite3.Connection, rid_type: str | None) -> None:
    """Create the tables of the current schema an older file lacks (empty) and set its version.

    Every schema change is additive (a new table), so an older file upgrades by creating the
    tables it does not have; runs inside the caller's transaction.
    """
    if conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] not in UPGRADABLE:
        return  # another process upgraded it meanwhile
    for stmt in missing_tables(conn, rid_type):
        conn.execute(stmt)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def missing_tables(conn: sqlite3.Connection, rid_type: str | None) -> list[str]:
    """The ``CREATE TABLE`` statements of the current schema's tables the file does not have.

    ``rid_type`` is the file's stored row id type (``None`` is written as it formats, as ``rid_type``
    is read from the meta table without a check).
    """
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    out = []
    for stmt in SCHEMA.format(rid_type=rid_type).split(";"):
        name = stmt.split("(")[0].split()[-1] if stmt.strip() else None
        if name is not None and name not in have:
            out.append(stmt)
    return out


def check_timeout_value(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"busy_timeout must be a number of seconds, got {value!r}")
    value = float(value)
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"busy_timeout must be a finite number of seconds >= 0, got {value!r}")
    return value


def check_new_path(path: Path) -> None:
    if path.exists():
        raise ValueError(f"path {str(path)!r} already exists; use Campaign.open to resume it")
    if not path.parent.is_dir():
        raise ValueError(f"path {str(path)!r}: directory {str(path.parent)!r} does not exist")


def build(
    tmp: Path,
    meta: dict[str, str],
    rid_type: str,
    strata_keys: Sequence[Sequence[Any]],
    pool_rows: Any,
    n_rows: Sequence[int] | None,
    n_eligible: Sequence[int] | None,
    content_rows: Any = None,
    existing_rows: Sequence[tuple[Any, Any, int, int, int]] = (),
) -> None:
    """Write a complete campaign database to ``tmp`` (a private file: no journal needed).

    ``existing_rows`` (``(rid, label, trial, success, stratum code)``) are rows labelled before the
    campaign: recorded as labelled proposals and labels of round 0, with their counts.
    """
    conn = sqlite3.connect(str(tmp), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")  # up to 256 MiB of pages while building
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("BEGIN")
        for stmt in SCHEMA.format(rid_type=rid_type).split(";"):
            if stmt.strip():
                conn.execute(stmt)
        insert_rows(conn, "pool", pool_rows)
        if content_rows is not None:
            insert_rows(conn, "content", content_rows)
        conn.execute(INDEXES)
        k = len(strata_keys)
        if n_rows is None or n_eligible is None:
            got = dict(conn.execute("SELECT stratum, COUNT(*) FROM pool GROUP BY stratum"))
            eli = dict(conn.execute("SELECT stratum, COUNT(*) FROM pool WHERE eligible=1 GROUP BY stratum"))
            n_rows = [int(got.get(i, 0)) for i in range(k)]
            n_eligible = [int(eli.get(i, 0)) for i in range(k)]
        columns = (list(range(k)), keys_json(strata_keys), [int(n) for n in n_rows], [int(n) for n in n_eligible])
        insert_rows(conn, "strata", RowColumns(columns))
        conn.execute("INSERT INTO counts SELECT code, 0, 0, 0, 0 FROM strata ORDER BY code")
        if existing_rows:
            _record_existing(conn, existing_rows)
        full = dict(meta)
        full.update(schema_version=str(SCHEMA_VERSION), rid_type=rid_type, created=str(time.time()))
        conn.executemany("INSERT INTO meta VALUES (?, ?)", list(full.items()))
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _record_existing(conn: sqlite3.Connection, rows: Sequence[tuple[Any, Any, int, int, int]]) -> None:
    """Record labels a campaign starts from as labelled proposals and labels of round 0."""
    now = time.time()
    conn.executemany("INSERT INTO proposals VALUES (?, 0, ?, 'labelled')", [(py_value(r[0]), now) for r in rows])
    conn.executemany(
        "INSERT INTO labels VALUES (?, ?, ?, ?, 0, ?)",
        [(py_value(r[0]), py_value(r[1]), int(r[2]), int(r[3]), now) for r in rows],
    )
    agg: dict[int, list[int]] = {}
    for _, _, trial, success, code in rows:
        a = agg.setdefault(int(code), [0, 0, 0])
        a[0], a[1], a[2] = a[0] + 1, a[1] + int(trial), a[2] + int(success)
    conn.executemany(
        "UPDATE counts SET labelled = ?, trials = ?, successes = ? WHERE stratum = ?",
        [(a[0], a[1], a[2], code) for code, a in agg.items()],
    )


def publish(tmp: Path, path: Path) -> None:
    """Make the finished ``tmp`` appear at ``path`` atomically, never replacing a file there."""
    for suffix in ("-wal", "-shm"):  # left by a database once at ``path``: never replay them
        Path(str(path) + suffix).unlink(missing_ok=True)
    try:
        os.link(tmp, path)
    except FileExistsError as exc:
        raise ValueError(f"path {str(path)!r} already exists; use Campaign.open to resume it") from exc
    except OSError as exc:  # a file system without hard links: rename instead
        if path.exists():
            raise ValueError(f"path {str(path)!r} already exists; use Campaign.open to resume it") from exc
        os.replace(tmp, path)
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
