"""Pieces shared by the command lines (``bayeseval`` and ``bayeseval campaign``).

* :class:`HelpFormatter`: keeps the layout of descriptions and epilogs and appends each
  option's default to its help, except where that would mislead: no ``(default: None)`` on
  options without a default (required options included), no ``(default: False)`` on flags and
  no second default where the help text already states one.
* :func:`read_table`: reads a ``.csv`` (``.csv.gz``, ``.txt``) or ``.parquet`` (``.pq``) file,
  turning every reader failure into a one-line ``ValueError`` naming the option and the path.
* :func:`one_line`: an exception's message on one line (the command line prints one line).

This module imports only the standard library at import time (pandas loads when a file is
read), so that ``bayeseval --help`` starts quickly.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["HelpFormatter", "one_line", "read_table"]


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


def read_table(
    path: str, *, name: str = "file", text_columns: Sequence[str] = (), require_rows: bool = False
) -> Any:
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
