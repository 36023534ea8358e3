"""The SQLite store that holds a labelling campaign's state.

One file per campaign, in WAL mode, with the tables :mod:`bayeseval.campaign.store.schema` describes.

An older file (schema version 1 or 2) gains the tables it lacks, empty, in one transaction
when opened (:func:`upgrade_schema`); reads of ``content`` treat a file without the table
as holding none.

Creation builds the whole database in a hidden temporary file next to the target
(``.<name>.creating-<pid>-<random>``) and publishes it with an atomic, no-clobber hard link
(a rename where the file system has no hard links): a process killed during creation leaves
no file at the target path, only the temporary file, which nothing else reads.

Opening checks, before changing anything, that the file is an SQLite database of the right
size holding a bayeseval campaign of a known schema version (a foreign or corrupt file is a
``ValueError`` naming the path; no pragma that alters the file is run on it).

Every write (propose, ingest, release) is one ``BEGIN IMMEDIATE`` transaction: a process
killed at any moment leaves either all of a write or none of it, and two processes writing
at once are serialized by SQLite's lock. A process that finds the lock held waits at most
``busy_timeout`` seconds (default :data:`DEFAULT_BUSY_TIMEOUT`, 10 s) and then raises a
``ValueError`` saying the campaign is locked by another process.

A store opened with ``read_only=True`` (the command line's status, pending, history,
forecast, export and report) connects with SQLite's ``mode=ro``, and also ``immutable=1`` when
the file's folder cannot be written and no write-ahead log is waiting there, so that a
campaign on a read-only mount or in a folder without write permission can be read (a WAL
database otherwise needs to create its ``-shm`` file). Nothing is ever written through it.

SQLite errors are caught here, at the store boundary, and re-raised as ``ValueError`` naming
the database path and the operation; a full disk, a read-only file or folder and a file that
cannot be opened are named as such, never as "not a campaign database".
The header check, the read-only URI and the words for SQLite's errors are in
:mod:`bayeseval.campaign.store.sqlite_file`.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.campaign.store.schema import (
    DEFAULT_BUSY_TIMEOUT,
    SCHEMA_VERSION,
    TABLES,
    UPGRADABLE,
    build,
    check_new_path,
    check_timeout_value,
    missing_tables,
    publish,
    py_value,
    upgrade_schema,
)
from bayeseval.campaign.store.sqlite_file import (
    chunks,
    environment_problem,
    guarded,
    header_problem,
    is_lock_error,
    json_default,
    read_only_uri,
)

__all__ = ["CampaignStore", "SCHEMA_VERSION", "DEFAULT_BUSY_TIMEOUT"]


#: the docstring blocks of the store's readers: a connection to read with (and the row ids)
_store_doc = fill_doc(
    conn_rids="""\
conn : sqlite3.Connection
    The connection to read with.
rids : sequence
    Row ids.""",
    conn_optional="""\
conn : sqlite3.Connection, optional
    Read inside this transaction; default the store's connection.""",
)


#: strata sampled per statement by :meth:`CampaignStore.sample_rows_of` (two parameters each, well
#: under SQLite's oldest limit of 999)
_SAMPLE_CHUNK = 100


class CampaignStore:
    """Thin wrapper around the campaign's SQLite file.

    Parameters
    ----------
    path : str or path-like
        The database file.
    busy_timeout : float
        Seconds to wait for another process's write lock before raising ``ValueError``.
    read_only : bool, default False
        Open for reading only (SQLite ``mode=ro``; also ``immutable=1`` when the folder
        cannot be written): a campaign on a read-only mount can be read; writes raise.

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

    def __init__(
        self, path: str | PathLike[str], *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = check_timeout_value(busy_timeout)
        self.read_only = bool(read_only)
        self._check_is_campaign()
        with self._errors("open it"):
            self.conn = self._connect()
        self.rid_type = self.get_meta("rid_type")
        if self.get_meta("schema_version") in UPGRADABLE:
            self._upgrade()

    def _sqlite_connect(self) -> sqlite3.Connection:
        """A bare connection to the file: read-only (:func:`read_only_uri`) when ``read_only``."""
        if self.read_only:
            return sqlite3.connect(read_only_uri(self.path), uri=True, timeout=self.busy_timeout, isolation_level=None)
        return sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None)

    def _upgrade(self) -> None:
        """Bring an older file to the current schema (one transaction: all or nothing)."""
        if self.read_only:  # the file stays as it is: the tables it lacks, empty, for this connection only
            with self._errors("read it"):
                for stmt in missing_tables(self.conn, self.rid_type):
                    self.conn.execute(stmt.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
            return
        with self.transaction("upgrade its schema") as conn:
            upgrade_schema(conn, self.rid_type)

    # -- connection --------------------------------------------------------------------
    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            where = f"campaign database {str(self.path)!r}"
            problem = environment_problem(exc, self.path)
            if problem is not None:
                raise ValueError(f"{where}: could not {action}: {problem}") from exc
            if is_lock_error(exc):
                raise ValueError(
                    f"{where} is locked by another process writing to it; gave up after waiting "
                    f"busy_timeout={self.busy_timeout:g} s while trying to {action}; retry when it is done"
                ) from exc
            raise ValueError(f"{where}: could not {action}: {exc}") from exc

    def _check_is_campaign(self) -> None:
        """Refuse anything but a bayeseval campaign file, without changing the file."""
        where = f"path {str(self.path)!r}"
        if not self.path.exists():
            raise ValueError(f"{where}: no campaign database there")
        if not self.path.is_file():
            raise ValueError(f"{where} is not a file, so not a bayeseval campaign database")
        problem = header_problem(self.path)
        if problem is not None:
            raise ValueError(f"{where} is not a bayeseval campaign database: {problem}")
        try:
            conn = self._sqlite_connect()
        except sqlite3.Error as exc:
            raise ValueError(f"{where}: cannot open it: {environment_problem(exc, self.path) or exc}") from exc
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            missing = sorted(TABLES - tables)
            if missing:
                raise ValueError(f"{where} is not a bayeseval campaign database (no tables {missing})")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.Error as exc:
            problem = environment_problem(exc, self.path)
            if problem is not None:
                raise ValueError(f"{where}: cannot read it: {problem}") from exc
            raise ValueError(f"{where} is not a readable bayeseval campaign database: {exc}") from exc
        finally:
            conn.close()
        if row is None or row[0] not in (str(SCHEMA_VERSION), *UPGRADABLE):
            got = None if row is None else row[0]
            raise ValueError(
                f"{where} is not a bayeseval campaign database of schema version {SCHEMA_VERSION} "
                f"(schema_version {got!r})"
            )

    def _connect(self) -> sqlite3.Connection:
        """A connection with the campaign's per-connection settings (none changes the file)."""
        conn = self._sqlite_connect()
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
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
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        content_rows: Any = None,
        existing_rows: Sequence[tuple[Any, Any, int, int, int]] = (),
    ) -> CampaignStore:
        """Create a new campaign database, all or nothing.

        The database is built in a temporary file in the same directory and published at
        ``path`` only when complete (a hard link that fails if ``path`` exists meanwhile).

        Parameters
        ----------
        path : str or path-like
            The file to create (must not exist).
        meta : dict
            Key/value settings for the ``meta`` table (the configuration JSON, the version, the
            random generator state).
        rid_type : {"INTEGER", "TEXT"}
            SQLite type of the row ids.
        strata_keys : sequence of sequence
            Each stratum's key (the stratum column values), in code order.
        pool_rows : iterable of tuple or RowColumns
            ``(rid, stratum_code, prediction, score, eligible, ord)`` per pool row, or the same
            columns as lists (:class:`~bayeseval.campaign.store.schema.RowColumns`).
        n_rows, n_eligible : sequence of int, optional
            Pool rows and eligible rows per stratum; counted from ``pool_rows`` when omitted.
        busy_timeout : float
            Seconds to wait for another process's lock.
        content_rows : iterable of tuple, optional
            ``(rid, JSON list of the content values)`` per pool row (the ``content`` table).
        existing_rows : sequence of tuple, optional
            ``(rid, label, trial, success, stratum code)`` per row labelled before the
            campaign: stored as labelled proposals and labels of round 0, with their counts.

        Returns
        -------
        CampaignStore
            The store, open on ``path``.
        """
        path = Path(path)
        if rid_type not in ("INTEGER", "TEXT"):
            raise ValueError(f"rid_type must be 'INTEGER' or 'TEXT', got {rid_type!r}")
        busy_timeout = check_timeout_value(busy_timeout)
        check_new_path(path)
        tmp = path.with_name(f".{path.name}.creating-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            try:
                build(tmp, meta, rid_type, strata_keys, pool_rows, n_rows, n_eligible, content_rows, existing_rows)
            except sqlite3.Error as exc:
                raise ValueError(f"path {str(path)!r}: could not create the campaign database: {exc}") from exc
            publish(tmp, path)
        finally:
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(str(tmp) + suffix).unlink(missing_ok=True)
        return cls(path, busy_timeout=busy_timeout)

    @staticmethod
    def check_timeout(value: Any) -> float:
        """``busy_timeout`` as float seconds >= 0, or raise naming it.

        Parameters
        ----------
        value : float
            Seconds.

        Returns
        -------
        float
            The checked number of seconds.
        """
        return check_timeout_value(value)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    @contextmanager
    def transaction(self, action: str = "write to it") -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception).

        sqlite3 errors (a held lock included) come out as ``ValueError`` naming the path.

        Parameters
        ----------
        action : str
            What the transaction does, for error messages.

        Yields
        ------
        sqlite3.Connection
            The connection, inside the transaction.
        """
        with self._errors(action):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # a failed COMMIT leaves the transaction open
                    self.conn.execute("ROLLBACK")
                raise

    # -- reads -------------------------------------------------------------------------
    @guarded("read its settings")
    def get_meta(self, key: str) -> str | None:
        """One value of the meta table.

        Parameters
        ----------
        key : str
            The setting's key.

        Returns
        -------
        str or None
            The stored text, None when missing.
        """
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        """Write one meta value (call inside a transaction).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        key, value : str
            The setting's key and text.
        """
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    @guarded("read its strata")
    def strata(self) -> pd.DataFrame:
        """The stratum table.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum code: ``key`` (list of column values), ``n_rows``, ``n_eligible``.
        """
        rows = self.conn.execute("SELECT code, key, n_rows, n_eligible FROM strata ORDER BY code").fetchall()
        code, key, n_rows, n_eligible = zip(*rows, strict=True) if rows else ((), (), (), ())
        return pd.DataFrame(
            {
                # each key is a JSON array: one parse of all of them
                "key": json.loads("[" + ",".join(key) + "]"),
                "n_rows": list(n_rows),
                "n_eligible": list(n_eligible),
            },
            index=pd.Index(list(code), name="code"),
        )

    @guarded("read its counts")
    @_store_doc
    def counts(self, conn: sqlite3.Connection | None = None) -> pd.DataFrame:
        """Per-stratum counts.

        Parameters
        ----------
        {conn_optional}

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum code: ``labelled``, ``trials``, ``successes``, ``pending``.
        """
        conn = conn or self.conn
        k, first, last = conn.execute("SELECT COUNT(*), MIN(stratum), MAX(stratum) FROM counts").fetchone()
        names = ["labelled", "trials", "successes", "pending"]
        if k and first == 0 and last == k - 1:  # codes 0..k-1 (as created): fetch the strata with a count only
            rows = conn.execute(
                "SELECT stratum, labelled, trials, successes, pending FROM counts "
                "WHERE labelled != 0 OR trials != 0 OR successes != 0 OR pending != 0 ORDER BY stratum"
            ).fetchall()
            table = np.zeros((k, 5), np.int64)
            table[:, 0] = np.arange(k)
            if rows:
                found = np.array(rows, dtype=np.int64)
                table[found[:, 0]] = found
        else:
            rows = conn.execute(
                "SELECT stratum, labelled, trials, successes, pending FROM counts ORDER BY stratum"
            ).fetchall()
            table = np.array(rows, dtype=np.int64).reshape(len(rows), 5)  # one conversion, not a frame of tuples
        return pd.DataFrame(
            {name: table[:, j + 1] for j, name in enumerate(names)}, index=pd.Index(table[:, 0], name="code")
        )

    def pool_table(self) -> pd.DataFrame:
        """Every pool row's stratum code, prediction, eligibility and place in the stored order.

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: ``stratum``, ``prediction``, ``eligible``, ``ord``.
        """
        rows = self.conn.execute("SELECT rid, stratum, prediction, eligible, ord FROM pool").fetchall()
        return pd.DataFrame(rows, columns=["rid", "stratum", "prediction", "eligible", "ord"]).set_index("rid")

    @_store_doc
    def label_rows(self, conn: sqlite3.Connection | None = None) -> pd.DataFrame:
        """Every stored label and whether it counts as a success.

        Parameters
        ----------
        {conn_optional}

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: ``label``, ``success``, ``trial`` and ``round`` (the round it was
            recorded in).
        """
        rows = (conn or self.conn).execute("SELECT rid, label, success, trial, round FROM labels").fetchall()
        return pd.DataFrame(rows, columns=["rid", "label", "success", "trial", "round"]).set_index("rid")

    def round_counts(self, round_: int, conn: sqlite3.Connection | None = None) -> pd.DataFrame:
        """Trials and successes per stratum of the labels recorded in one round.

        Parameters
        ----------
        round_ : int
            The round (the labels a campaign starts from are recorded in a round of their own).
        conn : sqlite3.Connection, optional
            Read inside this transaction; default the store's connection.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum code (only strata with labels in that round): ``trials``,
            ``successes``.
        """
        rows = (
            (conn or self.conn)
            .execute(
                "SELECT p.stratum, SUM(l.trial), SUM(l.success) FROM labels l JOIN pool p ON p.rid = l.rid "
                "WHERE l.round = ? GROUP BY p.stratum",
                (int(round_),),
            )
            .fetchall()
        )
        return pd.DataFrame(rows, columns=["stratum", "trials", "successes"]).set_index("stratum")

    @_store_doc
    def proposed_ids(self, conn: sqlite3.Connection | None = None) -> set[Any]:
        """Ids of every row ever proposed (pending, labelled or released).

        Parameters
        ----------
        {conn_optional}

        Returns
        -------
        set
            Row ids.
        """
        return {r[0] for r in (conn or self.conn).execute("SELECT rid FROM proposals").fetchall()}

    @_store_doc
    def next_round(self, conn: sqlite3.Connection | None = None) -> int:
        """The number of the next proposal round.

        Parameters
        ----------
        {conn_optional}

        Returns
        -------
        int
            1 for the first round, else one more than the last recorded round.
        """
        conn = conn or self.conn
        row = conn.execute("SELECT MAX(round) FROM decisions").fetchone()
        return 1 if row[0] is None else int(row[0]) + 1

    def sample_rows(self, conn: sqlite3.Connection, code: int, m: int) -> list[Any]:
        """The next ``m`` eligible, never-proposed rows of a stratum, in the stored random order.

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        code : int
            The stratum code.
        m : int
            Rows wanted.

        Returns
        -------
        list
            Row ids (fewer than ``m`` when the stratum runs out).
        """
        rows = conn.execute(
            "SELECT rid FROM pool WHERE stratum = ? AND eligible = 1 "
            "AND NOT EXISTS (SELECT 1 FROM proposals p WHERE p.rid = pool.rid) "
            "ORDER BY ord LIMIT ?",
            (int(code), int(m)),
        ).fetchall()
        return [r[0] for r in rows]

    def sample_rows_of(self, conn: sqlite3.Connection, wanted: Sequence[tuple[int, int]]) -> dict[int, list[Any]]:
        """:meth:`sample_rows` of several strata in one statement per 100 strata.

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        wanted : sequence of (int, int)
            Stratum code and rows wanted, each code once.

        Returns
        -------
        dict
            Stratum code -> row ids in the stored random order (fewer than wanted when the
            stratum runs out), for every code of ``wanted``.
        """
        out: dict[int, list[Any]] = {int(code): [] for code, _ in wanted}
        arm = (
            "SELECT * FROM (SELECT stratum, rid FROM pool WHERE stratum = ? AND eligible = 1 "
            "AND NOT EXISTS (SELECT 1 FROM proposals p WHERE p.rid = pool.rid) ORDER BY ord LIMIT ?)"
        )
        pairs = [(int(code), int(m)) for code, m in wanted]
        for start in range(0, len(pairs), _SAMPLE_CHUNK):
            chunk = pairs[start : start + _SAMPLE_CHUNK]
            sql = " UNION ALL ".join([arm] * len(chunk))
            for code, rid in conn.execute(sql, [v for pair in chunk for v in pair]).fetchall():
                out[int(code)].append(rid)
        return out

    @guarded("read pool rows")
    def pool_rows(self, rids: Sequence[Any]) -> pd.DataFrame:
        """Pool rows for the given ids, in that order.

        Parameters
        ----------
        rids : sequence
            Row ids.

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: ``stratum``, ``prediction``, ``score``.
        """
        out = []
        for chunk in chunks([py_value(r) for r in rids], 900):
            marks = ",".join("?" * len(chunk))
            out.extend(
                self.conn.execute(
                    f"SELECT rid, stratum, prediction, score FROM pool WHERE rid IN ({marks})", chunk
                ).fetchall()
            )
        frame = pd.DataFrame(out, columns=["rid", "stratum", "prediction", "score"])
        frame = frame.set_index("rid")
        return frame.reindex([py_value(r) for r in rids])

    def _lookup(self, conn: sqlite3.Connection, sql: str, rids: Sequence[Any]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for chunk in chunks(list(rids), 900):
            out.extend(conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk).fetchall())
        return out

    @_store_doc
    def proposal_status(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, str]:
        """The proposal status of the given ids that were ever proposed.

        Parameters
        ----------
        {conn_rids}

        Returns
        -------
        dict
            ``{rid: status}`` with status ``"pending"`` or ``"labelled"``.
        """
        rows = self._lookup(conn, "SELECT rid, status FROM proposals WHERE rid IN ({marks})", rids)
        return {r[0]: r[1] for r in rows}

    @_store_doc
    def proposals(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, tuple[str, int]]:
        """Status and round of the given ids that were ever proposed.

        Parameters
        ----------
        {conn_rids}

        Returns
        -------
        dict
            ``{rid: (status, round)}``.
        """
        rows = self._lookup(conn, "SELECT rid, status, round FROM proposals WHERE rid IN ({marks})", rids)
        return {r[0]: (r[1], int(r[2])) for r in rows}

    @_store_doc
    def pool_info(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, tuple[int, Any]]:
        """Stratum and prediction of the given ids found in the pool.

        Parameters
        ----------
        {conn_rids}

        Returns
        -------
        dict
            ``{rid: (stratum_code, prediction)}``.
        """
        rows = self._lookup(conn, "SELECT rid, stratum, prediction FROM pool WHERE rid IN ({marks})", rids)
        return {r[0]: (r[1], r[2]) for r in rows}

    @_store_doc
    def stored_labels(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, tuple[Any, int, int]]:
        """Stored labels of the given ids that have one.

        Parameters
        ----------
        {conn_rids}

        Returns
        -------
        dict
            ``{rid: (label, trial, success)}``.
        """
        rows = self._lookup(conn, "SELECT rid, label, trial, success FROM labels WHERE rid IN ({marks})", rids)
        return {r[0]: (r[1], int(r[2]), int(r[3])) for r in rows}

    @_store_doc
    def pending_ids(self, conn: sqlite3.Connection | None = None, round_: int | None = None) -> list[Any]:
        """Ids of the pending proposals, in proposal order.

        Parameters
        ----------
        {conn_optional}
        round_ : int, optional
            Only the pending proposals of this round.

        Returns
        -------
        list
            Row ids.
        """
        conn = conn or self.conn
        sql = "SELECT p.rid FROM proposals p JOIN pool ON pool.rid = p.rid WHERE p.status = 'pending'"
        args: tuple[Any, ...] = ()
        if round_ is not None:
            sql, args = sql + " AND p.round = ?", (int(round_),)
        return [r[0] for r in conn.execute(sql + " ORDER BY p.round, pool.stratum, pool.ord", args)]

    @guarded("read its pending proposals")
    def pending(self) -> pd.DataFrame:
        """The pending proposals, in the order they were proposed.

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: ``round``, ``time``, ``stratum`` (code).
        """
        rows = self.conn.execute(
            "SELECT p.rid, p.round, p.time, pool.stratum FROM proposals p JOIN pool ON pool.rid = p.rid "
            "WHERE p.status = 'pending' ORDER BY p.round, pool.stratum, pool.ord"
        ).fetchall()
        return pd.DataFrame(rows, columns=["rid", "round", "time", "stratum"]).set_index("rid")

    @guarded("read its labels")
    def labels(self) -> pd.DataFrame:
        """Every stored label.

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: ``label``, ``trial``, ``success``, ``round``, ``time``, ``stratum``.
        """
        rows = self.conn.execute(
            "SELECT l.rid, l.label, l.trial, l.success, l.round, l.time, pool.stratum "
            "FROM labels l JOIN pool ON pool.rid = l.rid ORDER BY l.time, l.rowid"
        ).fetchall()
        return pd.DataFrame(rows, columns=["rid", "label", "trial", "success", "round", "time", "stratum"]).set_index(
            "rid"
        )

    @guarded("read its decisions")
    def decisions(self) -> pd.DataFrame:
        """The decisions log.

        Returns
        -------
        pandas.DataFrame
            One row per round: ``round``, ``rule``, ``allocation`` (JSON), ``time``, ``version``,
            ``details`` (JSON).
        """
        rows = self.conn.execute(
            "SELECT round, rule, allocation, time, version, details FROM decisions ORDER BY round"
        ).fetchall()
        return pd.DataFrame(rows, columns=["round", "rule", "allocation", "time", "version", "details"])

    @guarded("read its tables")
    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's content, sorted (for tests that compare states).

        Returns
        -------
        dict
            Table name -> sorted list of rows.
        """
        out = {}
        for (table,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            rows = self.conn.execute(f"SELECT * FROM {table}").fetchall()
            out[table] = sorted(rows, key=repr)
        return out

    @_store_doc
    def row_annotations(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> dict[Any, dict[str, Any]]:
        """Stored annotations of the given ids.

        Parameters
        ----------
        {conn_rids}

        Returns
        -------
        dict
            ``{rid: {annotator: label}}`` for the ids that have annotations.
        """
        out: dict[Any, dict[str, Any]] = {}
        for rid, who, label in self._lookup(
            conn, "SELECT rid, annotator, label FROM annotations WHERE rid IN ({marks})", rids
        ):
            out.setdefault(rid, {})[who] = label
        return out

    @guarded("read the rows' content")
    def content(self, rids: Sequence[Any] | None = None, *, limit: int = 200) -> dict[Any, list[Any]]:
        """The stored content values of the given ids (none for a file without content).

        Parameters
        ----------
        rids : sequence, optional
            Row ids; default the first ``limit`` rows of the pool.
        limit : int
            Rows read when ``rids`` is None.

        Returns
        -------
        dict
            ``{rid: [value, ...]}``, the values in the order of the configuration's ``content``.
        """
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'content'").fetchone():
            return {}
        if rids is None:
            rows = self.conn.execute("SELECT rid, data FROM content ORDER BY rowid LIMIT ?", (int(limit),)).fetchall()
        else:
            rows = self._lookup(self.conn, "SELECT rid, data FROM content WHERE rid IN ({marks})", rids)
        return {r[0]: json.loads(r[1]) for r in rows}

    @guarded("read its annotations")
    def annotations(self) -> pd.DataFrame:
        """Every stored annotation.

        Returns
        -------
        pandas.DataFrame
            Columns ``rid``, ``annotator``, ``label``, ``round``, ``time``, ``stratum`` (code).
        """
        rows = self.conn.execute(
            "SELECT a.rid, a.annotator, a.label, a.round, a.time, pool.stratum FROM annotations a "
            "JOIN pool ON pool.rid = a.rid ORDER BY a.time, a.rowid"
        ).fetchall()
        return pd.DataFrame(rows, columns=["rid", "annotator", "label", "round", "time", "stratum"])

    def record_annotations(self, conn: sqlite3.Connection, rows: Sequence[tuple[Any, str, Any, int]]) -> None:
        """Insert or replace annotations (inside a transaction, after validation).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        rows : sequence of tuple
            ``(rid, annotator, label, round)`` per annotation.
        """
        now = time.time()
        conn.executemany(  # a replaced label keeps the time (and place) of the annotator's first one
            "INSERT INTO annotations VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (rid, annotator) DO UPDATE SET label = excluded.label, round = excluded.round",
            [(py_value(r[0]), str(r[1]), py_value(r[2]), int(r[3]), now) for r in rows],
        )

    @guarded("read its tasks")
    def tasks(self, project: str) -> dict[Any, int]:
        """The annotation-tool task of every row sent to ``project``.

        Parameters
        ----------
        project : str
            The project's identity (e.g. the Label Studio URL and project id).

        Returns
        -------
        dict
            ``{rid: task_id}``.
        """
        rows = self.conn.execute("SELECT rid, task_id FROM tasks WHERE project = ?", (str(project),)).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def record_tasks(self, conn: sqlite3.Connection, project: str, pairs: Sequence[tuple[Any, int]]) -> None:
        """Record that rows were sent to ``project`` as tasks (inside a transaction).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        project : str
            The project's identity.
        pairs : sequence of tuple
            ``(rid, task_id)`` per row; a row already recorded for the project keeps its task.
        """
        now = time.time()
        conn.executemany(
            "INSERT INTO tasks VALUES (?, ?, ?, ?) ON CONFLICT (rid, project) DO NOTHING",
            [(py_value(r), str(project), int(t), now) for r, t in pairs],
        )

    def forget_tasks(self, conn: sqlite3.Connection, project: str, rids: Sequence[Any]) -> None:
        """Forget the tasks of the given rows in ``project`` (inside a transaction).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        project : str
            The project's identity.
        rids : sequence
            Row ids.
        """
        conn.executemany("DELETE FROM tasks WHERE rid = ? AND project = ?", [(py_value(r), str(project)) for r in rids])

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
        """Insert proposals, the decision and the random generator state (inside a transaction).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        round_ : int
            The round number.
        rids_by_code : dict
            Stratum code -> proposed row ids.
        rule : str
            The rule's name.
        allocation : dict
            Stratum label -> labels requested.
        version : str
            Package version.
        details : dict
            Decision details (model, outliers, labels used, half-width).
        rng_state : str
            The random generator state after the draw, as JSON.
        """
        now = time.time()
        conn.executemany(
            "INSERT INTO proposals VALUES (?, ?, ?, 'pending')",
            [(py_value(r), round_, now) for rids in rids_by_code.values() for r in rids],
        )
        conn.executemany(
            "UPDATE counts SET pending = pending + ? WHERE stratum = ?",
            [(len(rids), int(code)) for code, rids in rids_by_code.items() if rids],
        )
        conn.execute(
            "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
            (round_, rule, json.dumps(allocation), now, version, json.dumps(details, default=json_default)),
        )
        self.set_meta(conn, "rng_state", rng_state)

    def release(self, conn: sqlite3.Connection, rids: Sequence[Any]) -> int:
        """Delete pending proposals of the given ids and update the counts (inside a transaction).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        rids : sequence
            Row ids; those not pending are ignored.

        Returns
        -------
        int
            Number of proposals released.
        """
        info = self.pool_info(conn, rids)
        status = self.proposal_status(conn, rids)
        gone = list(dict.fromkeys(r for r in rids if status.get(r) == "pending"))
        agg: dict[int, int] = {}
        for r in gone:
            code = int(info[r][0])
            agg[code] = agg.get(code, 0) + 1
        conn.executemany("DELETE FROM proposals WHERE rid = ? AND status = 'pending'", [(r,) for r in gone])
        conn.executemany("UPDATE counts SET pending = pending - ? WHERE stratum = ?", [(n, c) for c, n in agg.items()])
        return len(gone)

    def record_labels(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[tuple[Any, Any, int, int, int, int]],
    ) -> None:
        """Insert labels and update the counts (inside a transaction, after validation).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        rows : sequence of tuple
            ``(rid, label, trial, success, round, code)`` per label.
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

    def replace_labels(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[tuple[Any, Any, int, int, int, int]],
    ) -> None:
        """Overwrite stored labels and move the counts by the difference (inside a transaction).

        Parameters
        ----------
        conn : sqlite3.Connection
            The connection of the open transaction.
        rows : sequence of tuple
            ``(rid, label, trial, success, old, code)`` per label, where ``old`` packs the stored
            flags as ``2 * trial + success``.
        """
        now = time.time()
        conn.executemany(
            "UPDATE labels SET label = ?, trial = ?, success = ?, time = ? WHERE rid = ?",
            [(r[1], r[2], r[3], now, r[0]) for r in rows],
        )
        agg: dict[int, list[int]] = {}
        for _, _, trial, success, old, code in rows:
            a = agg.setdefault(int(code), [0, 0])
            a[0] += int(trial) - old // 2
            a[1] += int(success) - old % 2
        conn.executemany(
            "UPDATE counts SET trials = trials + ?, successes = successes + ? WHERE stratum = ?",
            [(a[0], a[1], code) for code, a in agg.items()],
        )
