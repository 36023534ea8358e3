"""Pieces shared by the command lines (``bayeseval`` and ``bayeseval campaign``).

* :class:`HelpFormatter`: keeps the layout of descriptions and epilogs and appends each
  option's default to its help, except where that would mislead: no ``(default: None)`` on
  options without a default (required options included), no ``(default: False)`` on flags and
  no second default where the help text already states one.
* :func:`read_table`: reads a ``.csv`` (``.csv.gz``, ``.txt``) or ``.parquet`` (``.pq``) file,
  turning every reader failure into a one-line ``ValueError`` naming the option and the path.
* :func:`one_line`: an exception's message on one line (the command line prints one line).
* :func:`check_output` and :func:`atomic_output`: every file a command writes is checked first
  (never onto one of the command's own inputs, such as the campaign database; never over an
  existing file without ``--force``) and written under a temporary name in the same folder,
  renamed onto the target only when everything that goes with it (the proposal's commit
  included) has succeeded; on any failure the target is left as it was and the temporary
  file is removed.
* :func:`cli_warnings`: during one command, every warning of the package is one
  ``warning: <message>`` line on stderr, once per distinct message.

This module imports only the standard library at import time (pandas loads when a file is
read), so that ``bayeseval --help`` starts quickly.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["HelpFormatter", "atomic_output", "check_output", "cli_warnings", "one_line", "read_table"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Raw descriptions and epilogs; ``(default: X)`` only where X is an informative default.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter)
    >>> _ = p.add_argument("--level", type=float, default=0.95, help="interval level")
    >>> _ = p.add_argument("--rate", type=float, help="planning rate")
    >>> text = p.format_help()
    >>> "(default: 0.95)" in text, "(default: None)" in text
    (True, False)
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default" in text.lower()
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or action.required
            or not action.option_strings
        ):
            return text
        if "default" in str(default).lower():  # e.g. --prior default: say it once
            return f"{text} (when omitted: %(default)s)"
        return f"{text} (default: %(default)s)"


def one_line(exc: BaseException) -> str:
    """Return ``exc``'s message on one line (its type name when the message is empty).

    Parameters
    ----------
    exc : BaseException
        The exception to describe.

    Returns
    -------
    str
        The message's non-blank lines joined by spaces.

    Examples
    --------
    >>> one_line(ValueError("bad\\n  value"))
    'bad value'
    """
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


def read_table(path: str, *, name: str = "file", text_columns: Sequence[str] = (), require_rows: bool = False) -> Any:
    """Read a .csv (.csv.gz, .txt) or .parquet (.pq) file as a pandas DataFrame.

    Parameters
    ----------
    path : str
        The file to read.
    name : str, default "file"
        What the file is called in messages, e.g. the option ``"--pool"``.
    text_columns : sequence of str, optional
        Columns of a CSV file read as text, so that labels and ids arrive as written
        (``"007"`` stays ``"007"``).
    require_rows : bool, default False
        Refuse a file with no rows or no columns.

    Returns
    -------
    pandas.DataFrame
        The file's rows.

    Raises
    ------
    ValueError
        For every failure (missing, empty, garbled or unreadable file, unsupported type), with a
        one-line message naming ``name`` and the path.

    Examples
    --------
    >>> read_table("no-such-file.csv", name="--pool")
    Traceback (most recent call last):
    ...
    ValueError: --pool file not found: 'no-such-file.csv'
    """
    import pandas as pd  # deferred: the command line's help must not wait for pandas

    p = Path(path)
    if not p.exists():
        raise ValueError(f"{name} file not found: {path!r}")
    if p.is_dir():
        raise ValueError(f"{name} file {path!r} is a folder, not a .csv or .parquet file")
    lower = p.name.lower()
    if lower.endswith((".parquet", ".pq")):
        kind, reader = "Parquet", pd.read_parquet
    elif lower.endswith((".csv", ".txt", ".csv.gz")):
        kind, reader = "CSV", pd.read_csv
    else:
        raise ValueError(f"{name} file {path!r} has unsupported file type {p.suffix!r}; use .csv or .parquet")
    options = {"dtype": {c: str for c in text_columns}} if kind == "CSV" and text_columns else {}
    try:
        frame = reader(p, **options)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{name} file {path!r} is empty: no header and no rows") from None
    except (ValueError, TypeError, OSError) as exc:  # pandas/pyarrow parser errors are ValueErrors
        raise ValueError(f"{name} file {path!r} could not be read as {kind}: {one_line(exc)}") from None
    if require_rows and (len(frame.columns) == 0 or len(frame) == 0):
        raise ValueError(f"{name} file {path!r} has no rows")
    return frame


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (through symbolic or hard links included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist: compare where they would resolve to
        return a.resolve() == b.resolve()


def check_output(
    path: str | os.PathLike[str],
    *,
    option: str = "--out",
    force: bool = False,
    inputs: Sequence[tuple[str, str | os.PathLike[str]]] = (),
) -> Path:
    """Check that a command may write its output file at ``path``; return it as a Path.

    Refused, always: a file that is one of the command's ``inputs`` (by
    :func:`os.path.samefile`, so also through a symbolic or hard link), a folder, a missing
    folder. Refused unless ``force``: any existing file (a batch not yet ingested, a pool,
    an earlier report), so that nothing is replaced by accident.

    Parameters
    ----------
    path : str or path-like
        The output file.
    option : str, default "--out"
        The option that names it, for messages.
    force : bool, default False
        Allow replacing an existing file that is not an input.
    inputs : sequence of (str, path) pairs
        The command's inputs as ``(option, path)``, e.g. ``[("--db", "camp.db")]``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        One line naming ``option``, the path and the reason.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> db = os.path.join(d, "camp.db")
    >>> open(db, "w").close()
    >>> check_output(db, inputs=[("--db", db)], force=True)
    Traceback (most recent call last):
    ...
    ValueError: --out ... is the --db file itself; choose another file name
    >>> check_output(os.path.join(d, "batch.csv")).name
    'batch.csv'
    """
    p = Path(path)
    for name, other in inputs:
        if other is not None and _same_file(p, Path(other)):
            raise ValueError(f"{option} {str(path)!r} is the {name} file itself; choose another file name")
    if not p.parent.is_dir():
        raise ValueError(f"{option} {str(path)!r}: folder {str(p.parent)!r} does not exist")
    if p.is_dir():
        raise ValueError(f"{option} {str(path)!r} is a folder, not a file")
    if p.exists() and not force:
        raise ValueError(
            f"{option} {str(path)!r} already exists; give --force to replace it, or choose a new file name"
        )
    return p


@contextmanager
def atomic_output(path: str | os.PathLike[str], *, option: str = "--out") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` when the block succeeds.

    The temporary file is in the same folder (so the rename is atomic) and ends with the
    target's name (so writers that choose the format from the suffix see the right one).
    If the block raises, for example because the database commit that goes with the file
    failed, the temporary file is removed and ``path`` is left exactly as it was.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    option : str, default "--out"
        The option that names it, for messages.

    Yields
    ------
    pathlib.Path
        Where to write.

    Raises
    ------
    ValueError
        When writing or renaming fails with an ``OSError`` (a full disk, a read-only folder).

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_output(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> open(target).read(), os.listdir(os.path.dirname(target))
    ('done', ['out.txt'])
    """
    p = Path(path)
    tmp = p.with_name(f".writing-{os.getpid()}-{secrets.token_hex(4)}-{p.name}")
    try:
        yield tmp
        os.replace(tmp, p)
    except OSError as exc:
        raise ValueError(f"{option} {str(path)!r}: cannot write it: {exc.strerror or exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def save_and_print(
    result: Any,
    out: str | None,
    as_json: bool,
    text: Callable[[], str],
    *,
    default: Callable[[Any], Any] | None = None,
    say_written: bool = True,
    save_options: dict[str, Any] | None = None,
) -> None:
    """Write ``result`` to ``out`` (when given, atomically), then print its JSON or its text.

    ``result`` has ``save(path)`` and ``to_dict()``; ``text`` makes the printed text (only
    without ``--json``), followed by where the file went when ``say_written``.
    ``save_options`` are passed to ``save`` as keywords.

    Examples
    --------
    >>> class Result:
    ...     def to_dict(self):
    ...         return {"rate": 0.5}
    >>> save_and_print(Result(), None, True, str)
    {
      "rate": 0.5
    }
    """
    if out:
        with atomic_output(out) as tmp:
            result.save(tmp, **(save_options or {}))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, default=default))
        return
    print(text())
    if out and say_written:
        print(f"\nreport written to {out}")


@contextmanager
def cli_warnings() -> Iterator[None]:
    """During the block, print each warning as one ``warning: <message>`` line on stderr, once.

    Replaces Python's default display (source path, line number and code line) for the
    duration of one command only; a message already printed in the block is not printed
    again. The warning filters in force are kept (a warning that a filter ignores stays
    silent, one that a filter turns into an error still raises).

    Yields
    ------
    None

    Examples
    --------
    >>> import sys, warnings
    >>> sys.stderr = sys.stdout  # show the lines here
    >>> with cli_warnings():
    ...     for _ in range(2):
    ...         warnings.warn("target cannot be met in 2 strata", UserWarning)
    warning: target cannot be met in 2 strata
    >>> sys.stderr = sys.__stderr__
    """
    seen: set[str] = set()

    def show(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
        text = one_line(message) if isinstance(message, BaseException) else " ".join(str(message).split())
        if text not in seen:
            seen.add(text)
            print(f"warning: {text}", file=sys.stderr if file is None else file)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield
