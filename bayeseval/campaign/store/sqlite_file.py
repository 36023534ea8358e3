"""The campaign's SQLite file seen from outside the store: its header, read-only opening, errors in words.

:func:`header_problem` tells an intact SQLite file from a foreign, empty or truncated one by its
header, before anything opens it; :func:`read_only_uri` opens a file read-only, also in a
folder that cannot be written; :func:`environment_problem` and :func:`is_lock_error` say what
an SQLite error means (a full disk, a read-only file or folder, a lock held by another
process); :func:`guarded` turns the SQLite errors of a :class:`~bayeseval.campaign.store.store.CampaignStore`
method into a ``ValueError`` naming the file. :func:`chunks` and :func:`json_default` serve the
store's statements.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import struct
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from bayeseval.campaign.store.schema import SQLITE_MAGIC

__all__ = [
    "chunks",
    "environment_problem",
    "guarded",
    "header_problem",
    "is_lock_error",
    "json_default",
    "read_only_uri",
]

F = TypeVar("F", bound=Callable[..., Any])


def is_lock_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


#: SQLite messages that describe the file's surroundings (disk, permissions), not its content
ENVIRONMENT_PROBLEMS = (
    ("disk is full", "the disk is full"),
    ("readonly", "the database is read-only (the file or its folder cannot be written)"),
    ("read-only", "the database is read-only (the file or its folder cannot be written)"),
    ("disk i/o error", "a disk I/O error"),
    ("unable to open", "the file cannot be opened"),
)


def environment_problem(exc: sqlite3.Error, path: Path) -> str | None:
    """What a failure of the disk or of the permissions around ``path`` is, in words (None for others)."""
    text = str(exc).lower()
    found = next((words for key, words in ENVIRONMENT_PROBLEMS if key in text), None)
    if found != "the file cannot be opened":
        return None if found is None else f"{found} (SQLite: {exc})"
    if not os.access(path, os.R_OK):
        found = "the file cannot be read (permission denied)"
    elif not os.access(path.parent, os.W_OK) or not os.access(path, os.W_OK):
        found = "the database is read-only (the file or its folder cannot be written)"
    return f"{found} (SQLite: {exc})"


def read_only_uri(path: Path) -> str:
    """SQLite URI opening ``path`` read-only; immutable when its folder cannot hold a -shm file.

    A WAL database needs its ``-shm`` file, which SQLite creates next to it. In a folder
    that cannot be written and without that file, no process can write the database, so
    ``immutable=1`` (no locks, no -shm) reads it exactly, unless a write-ahead log holds
    pages not yet copied into the file: reading the file alone would then give an older
    state, so that case is refused.
    """
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    if os.access(path.parent, os.W_OK) or Path(str(path) + "-shm").exists():
        return uri
    wal = Path(str(path) + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise ValueError(
            f"path {str(path)!r}: its write-ahead log {wal.name!r} holds changes not yet in the file and "
            "its folder is read-only, so they cannot be applied; open it once where the folder can be written"
        )
    return uri + "&immutable=1"  # nobody can write there: nothing changes under the reader


def header_problem(path: Path) -> str | None:
    """Why ``path`` cannot be an intact SQLite database, judged from its header (None if it can)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        return "not an SQLite database file" if size else "an empty file"
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    change, n_pages = struct.unpack(">II", header[24:32])
    (valid_for,) = struct.unpack(">I", header[92:96])
    wal = Path(str(path) + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return None  # pages may still live in the write-ahead log (SQLite recovers them)
    if n_pages and valid_for == change and size < page_size * n_pages:
        return f"truncated ({size} bytes, the header says {page_size * n_pages})"
    return None


def guarded(action: str) -> Callable[[F], F]:
    """Re-raise sqlite3 errors of a store method as ValueError naming the path and ``action``."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(self: Any, *args: Any, **kwargs: Any) -> Any:  # a CampaignStore
            with self._errors(action):
                return fn(self, *args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
