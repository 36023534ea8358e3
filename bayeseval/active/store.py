"""The SQLite store that holds a labelling campaign's state.

One file per campaign, opened in WAL mode with a busy timeout. Tables:

``meta``       key/value: the campaign configuration (JSON), package version, creation time,
               the row-id type and the random generator state after the last proposal.
``strata``     one row per stratum: integer code, key (JSON list of the stratum column values),
               number of pool rows, number of rows eligible for labelling.
``pool``       one row per pool row, only what the campaign needs: row id, stratum code,
               prediction, optional score, eligibility flag and a random sampling order.
``proposals``  row id (PRIMARY KEY), round, time, status ``pending`` / ``labelled``.
``labels``     row id (PRIMARY KEY), label, trial and success flags, round, time.
``counts``     per-stratum labelled / trials / successes / pending, kept in step with
               ``labels`` and ``proposals`` inside the same transactions.
``decisions``  round (PRIMARY KEY), rule, allocation JSON, time, package version, details JSON.

Every write (create, propose, ingest) is one ``BEGIN IMMEDIATE`` transaction: a process
killed at any moment leaves either all of a write or none of it, and two processes writing
at once are serialized by SQLite's lock (the busy timeout makes the second one wait).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CampaignStore", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 60_000

_SCHEMA = """
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
CREATE TABLE decisions (
    round INTEGER PRIMARY KEY,
    rule TEXT NOT NULL,
    allocation TEXT NOT NULL,
    time REAL NOT NULL,
    version TEXT NOT NULL,
    details TEXT
);
"""
_INDEXES = "CREATE INDEX pool_sample ON pool (stratum, eligible, ord);"


def _py(value: Any) -> Any:
    """Convert numpy scalars to plain Python values for sqlite3."""
    if isinstance(value, np.generic):
        return value.item()
    return value


class CampaignStore:
    """Thin wrapper around the campaign's SQLite file.

    Parameters
    ----------
    path : str or path-like
        The database file.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> store = CampaignStore.initialise(os.path.join(d, "c.db"), meta={"config": "{}"},
    ...     rid_type="INTEGER", strata_keys=[["a"]], pool_rows=[(1, 0, 0, None, 1, 0)])
    >>> store.counts()["labelled"].tolist()
    [0]
    >>> store.close()
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise ValueError(f"path {str(path)!r}: no campaign database there")
        self.conn = self._connect(self.path)
        try:
            version = self.get_meta("schema_version")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise ValueError(f"path {str(path)!r} is not a bayeseval campaign database: {exc}") from exc
        if version is None:
            self.conn.close()
            raise ValueError(f"path {str(path)!r} is not a bayeseval campaign database (no schema_version)")
        self.rid_type = self.get_meta("rid_type")

    # -- connection --------------------------------------------------------------------
    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(str(path), timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    @classmethod
    def initialise(
        cls,
        path: str | PathLike[str],
        *,
        meta: dict[str, str],
        rid_type: str,
        strata_keys: Sequence[Sequence[Any]],
        pool_rows: Any,
        n_rows: Sequence[int] | None = None,
        n_eligible: Sequence[int] | None = None,
    ) -> CampaignStore:
        """Create a new campaign database in one transaction.

        ``pool_rows`` is an iterable of ``(rid, stratum_code, prediction, score, eligible, ord)``.
        """
        path = Path(path)
        if path.exists():
            raise ValueError(f"path {str(path)!r} already exists; use Campaign.open to resume it")
        if rid_type not in ("INTEGER", "TEXT"):
            raise ValueError(f"rid_type must be 'INTEGER' or 'TEXT', got {rid_type!r}")
        conn = cls._connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            for stmt in _SCHEMA.format(rid_type=rid_type).split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.executemany("INSERT INTO pool VALUES (?, ?, ?, ?, ?, ?)", pool_rows)
            conn.execute(_INDEXES)
            k = len(strata_keys)
            if n_rows is None or n_eligible is None:
                got = dict(conn.execute("SELECT stratum, COUNT(*) FROM pool GROUP BY stratum"))
                eli = dict(
                    conn.execute("SELECT stratum, COUNT(*) FROM pool WHERE eligible=1 GROUP BY stratum")
                )
                n_rows = [int(got.get(i, 0)) for i in range(k)]
                n_eligible = [int(eli.get(i, 0)) for i in range(k)]
            conn.executemany(
                "INSERT INTO strata VALUES (?, ?, ?, ?)",
                [
                    (i, json.dumps([_py(v) for v in key]), int(n_rows[i]), int(n_eligible[i]))
                    for i, key in enumerate(strata_keys)
                ],
            )
            conn.executemany(
                "INSERT INTO counts VALUES (?, 0, 0, 0, 0)", [(i,) for i in range(k)]
            )
            full = dict(meta)
            full.update(
                schema_version=str(SCHEMA_VERSION), rid_type=rid_type, created=str(time.time())
            )
            conn.executemany("INSERT INTO meta VALUES (?, ?)", list(full.items()))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            path.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            raise
        conn.close()
        return cls(path)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- reads -------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """One value of the meta table (None when missing)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        """Write one meta value (call inside a transaction)."""
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def strata(self) -> pd.DataFrame:
        """Stratum table: code, key (list), n_rows, n_eligible."""
        rows = self.conn.execute("SELECT code, key, n_rows, n_eligible FROM strata ORDER BY code").fetchall()
        return pd.DataFrame(
            {
                "key": [json.loads(r[1]) for r in rows],
                "n_rows": [r[2] for r in rows],
                "n_eligible": [r[3] for r in rows],
            },
            index=pd.Index([r[0] for r in rows], name="code"),
        )

    def counts(self, conn: sqlite3.Connection | None = None) -> pd.DataFrame:
        """Per-stratum labelled, trials, successes, pending (indexed by stratum code)."""
        conn = conn or self.conn
        rows = conn.execute(
            "SELECT stratum, labelled, trials, successes, pending FROM counts ORDER BY stratum"
        ).fetchall()
        frame = pd.DataFrame(rows, columns=["code", "labelled", "trials", "successes", "pending"])
        return frame.set_index("code").astype(np.int64)

    def next_round(self, conn: sqlite3.Connection | None = None) -> int:
        """The number of the next proposal round (1 for the first)."""
        conn = conn or self.conn
        row = conn.execute("SELECT MAX(round) FROM decisions").fetchone()
        return 1 if row[0] is None else int(row[0]) + 1

    def sample_rows(self, conn: sqlite3.Connection, code: int, m: int) -> list[Any]:
        """The next ``m`` eligible, never-proposed rows of a stratum in random order."""
        rows = conn.execute(
            "SELECT rid FROM pool WHERE stratum = ? AND eligible = 1 "
            "AND NOT EXISTS (SELECT 1 FROM proposals p WHERE p.rid = pool.rid) "
            "ORDER BY ord LIMIT ?",
            (int(code), int(m)),
        ).fetchall()
        return [r[0] for r in rows]

    def pool_rows(self, rids: Sequence[Any]) -> pd.DataFrame:
        """Pool rows (rid, stratum, prediction, score) for the given ids, in that order."""
        out = []
        for chunk in _chunks(list(rids), 900):
            marks = ",".join("?" * len(chunk))
            out.extend(
                self.conn.execute(
                    f"SELECT rid, stratum, prediction, score FROM pool WHERE rid IN ({marks})",
                    [_py(r) for r in chunk],
                ).fetchall()
            )
        frame = pd.DataFrame(out, columns=["rid", "stratum", "prediction", "score"])
        frame = frame.set_index("rid")
        return frame.reindex([_py(r) for r in rids])

    def proposal_status(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, str]:
        """``{rid: status}`` for the given ids that were ever proposed."""
        out: dict[Any, str] = {}
        for chunk in _chunks(list(rids), 900):
            marks = ",".join("?" * len(chunk))
            out.update(
                conn.execute(
                    f"SELECT rid, status FROM proposals WHERE rid IN ({marks})", chunk
                ).fetchall()
            )
        return out

    def pool_info(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, tuple[int, Any]]:
        """``{rid: (stratum_code, prediction)}`` for the given ids found in the pool."""
        out: dict[Any, tuple[int, Any]] = {}
        for chunk in _chunks(list(rids), 900):
            marks = ",".join("?" * len(chunk))
            for rid, code, pred in conn.execute(
                f"SELECT rid, stratum, prediction FROM pool WHERE rid IN ({marks})", chunk
            ):
                out[rid] = (code, pred)
        return out

    def pending(self) -> pd.DataFrame:
        """Pending proposals: rid, round, time, stratum."""
        rows = self.conn.execute(
            "SELECT p.rid, p.round, p.time, pool.stratum FROM proposals p JOIN pool ON pool.rid = p.rid "
            "WHERE p.status = 'pending' ORDER BY p.round, p.rowid"
        ).fetchall()
        return pd.DataFrame(rows, columns=["rid", "round", "time", "stratum"]).set_index("rid")

    def labels(self) -> pd.DataFrame:
        """All labels: rid, label, trial, success, round, time, stratum."""
        rows = self.conn.execute(
            "SELECT l.rid, l.label, l.trial, l.success, l.round, l.time, pool.stratum "
            "FROM labels l JOIN pool ON pool.rid = l.rid ORDER BY l.time, l.rowid"
        ).fetchall()
        return pd.DataFrame(
            rows, columns=["rid", "label", "trial", "success", "round", "time", "stratum"]
        ).set_index("rid")

    def decisions(self) -> pd.DataFrame:
        """The decisions log."""
        rows = self.conn.execute(
            "SELECT round, rule, allocation, time, version, details FROM decisions ORDER BY round"
        ).fetchall()
        return pd.DataFrame(rows, columns=["round", "rule", "allocation", "time", "version", "details"])

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's content, sorted (for tests that compare states)."""
        out = {}
        for (table,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            rows = self.conn.execute(f"SELECT * FROM {table}").fetchall()
            out[table] = sorted(rows, key=repr)
        return out

    # -- writes ------------------------------------------------------------------------
    def record_proposal(
        self,
        conn: sqlite3.Connection,
        *,
        round_: int,
        rids_by_code: dict[int, list[Any]],
        rule: str,
        allocation: dict[str, int],
        version: str,
        details: dict[str, Any],
        rng_state: str,
    ) -> None:
        """Insert proposals, the decision and the RNG state (call inside a transaction)."""
        now = time.time()
        conn.executemany(
            "INSERT INTO proposals VALUES (?, ?, ?, 'pending')",
            [(_py(r), round_, now) for rids in rids_by_code.values() for r in rids],
        )
        conn.executemany(
            "UPDATE counts SET pending = pending + ? WHERE stratum = ?",
            [(len(rids), int(code)) for code, rids in rids_by_code.items() if rids],
        )
        conn.execute(
            "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
            (round_, rule, json.dumps(allocation), now, version, json.dumps(details, default=_json_default)),
        )
        self.set_meta(conn, "rng_state", rng_state)

    def release(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> int:
        """Delete pending proposals of the given ids and update counts (call inside a transaction)."""
        info = self.pool_info(conn, rids)
        status = self.proposal_status(conn, rids)
        gone = [r for r in rids if status.get(r) == "pending"]
        agg: dict[int, int] = {}
        for r in gone:
            code = int(info[r][0])
            agg[code] = agg.get(code, 0) + 1
        conn.executemany("DELETE FROM proposals WHERE rid = ? AND status = 'pending'", [(r,) for r in gone])
        conn.executemany(
            "UPDATE counts SET pending = pending - ? WHERE stratum = ?", [(n, c) for c, n in agg.items()]
        )
        return len(gone)

    def record_labels(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[tuple[Any, Any, int, int, int, int]],
    ) -> None:
        """Insert labels ``(rid, label, trial, success, round, code)`` and update counts.

        Call inside a transaction, after validation.
        """
        now = time.time()
        conn.executemany(
            "INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?)",
            [(r[0], r[1], r[2], r[3], r[4], now) for r in rows],
        )
        conn.executemany(
            "UPDATE proposals SET status = 'labelled' WHERE rid = ? AND status = 'pending'",
            [(r[0],) for r in rows],
        )
        agg: dict[int, list[int]] = {}
        for _, _, trial, success, _, code in rows:
            a = agg.setdefault(int(code), [0, 0, 0])
            a[0] += 1
            a[1] += int(trial)
            a[2] += int(success)
        conn.executemany(
            "UPDATE counts SET labelled = labelled + ?, trials = trials + ?, "
            "successes = successes + ?, pending = pending - ? WHERE stratum = ?",
            [(a[0], a[1], a[2], a[0], code) for code, a in agg.items()],
        )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
