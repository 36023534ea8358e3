"""What every reader of an evaluation harness's files returns, and the pieces they share.

A reader returns :class:`EvalRecords`: one tidy frame, a row per answer (a model's answer to one
item of one task in one epoch), and the sampling design that frame implies
(a :class:`~bayeseval.Design`). The frame's columns are

* ``model``, ``task``, ``item``, ``epoch``: which answer the row is (``epoch`` counts from 1);
* ``outcome``: the chosen score of the answer, a number in [0, 1] (NaN when the answer was not
  scored);
* one column per scorer (or metric) of the file, named as the file names it, holding its value
  as a number (``C``/``P``/``I``/``N`` read as 1, 0.5, 0, 0, as Inspect reads them);
* the item's metadata flattened into columns: ``metadata.category``, nested objects as
  ``metadata.source.name``.

The design is that of the answers as a sample: several epochs of one item share the item, so the
unit of resampling is the item (``cluster="item"``); otherwise each row is its own unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import short_repr
from bayeseval.counts.design import Design

__all__ = ["ID_COLUMNS", "EvalRecords", "score_to_float"]

#: the columns that say which answer a row is, in the frame's order
ID_COLUMNS = ("model", "task", "item", "epoch")
#: the columns every reader's frame starts with
FIXED_COLUMNS = (*ID_COLUMNS, "outcome")

#: Inspect's score constants (``inspect_ai.scorer.CORRECT`` ...) and their values
_SENTINELS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


@dataclass(repr=False)
class EvalRecords(Result):
    """A harness's answers as one tidy frame, and the design the file implies.

    Unpacks as a pair: ``frame, design = read_inspect(path)``.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per answer: ``model``, ``task``, ``item``, ``epoch``, ``outcome``, one column
        per scorer, ``metadata.*`` columns.
    design : Design
        ``cluster="item"`` when some item was answered more than once by one model in one
        task (epochs, repeats); else each row is its own unit.
    outcome : str
        The scorer (metric) whose value is the ``outcome`` column.
    scorers : tuple of str
        The scorer (metric) columns, in the file's order.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"model": ["m"], "task": ["t"], "item": [1], "epoch": [1],
    ...                      "outcome": [1.0], "match": [1.0]})
    >>> frame, design = EvalRecords(rows, Design(), "match", ("match",))
    >>> design.cluster is None, list(frame.columns[:5])
    (True, ['model', 'task', 'item', 'epoch', 'outcome'])
    """

    frame: pd.DataFrame
    design: Design
    outcome: str
    scorers: tuple[str, ...]

    @property
    def table(self) -> pd.DataFrame:
        """The frame (one row per answer)."""
        return self.frame

    def __iter__(self) -> Iterator[Any]:
        return iter((self.frame, self.design))

    def metadata_columns(self) -> list[str]:
        """The flattened metadata columns (``metadata.*``), candidates for ``strata``.

        Returns
        -------
        list of str
            Column names, in the frame's order.

        Examples
        --------
        >>> rows = pd.DataFrame({"model": ["m"], "task": ["t"], "item": [1], "epoch": [1],
        ...                      "outcome": [1.0], "metadata.category": ["a"]})
        >>> EvalRecords(rows, Design(), "x", ()).metadata_columns()
        ['metadata.category']
        """
        return [c for c in self.frame.columns if str(c).startswith("metadata.")]


def score_to_float(value: Any, where: str) -> float:
    """A score value as Inspect's ``value_to_float`` reads it, or a ValueError naming ``where``.

    ``C``, ``P``, ``I``, ``N`` are 1, 0.5, 0, 0; numbers (and booleans) are kept; the texts
    yes/true and no/false (any case) are 1 and 0, and a text holding a finite number is that
    number. ``None`` (no score) is NaN. Anything else (another text, a list) is an error, where
    Inspect would warn and count it as 0.

    Examples
    --------
    >>> [score_to_float(v, "score") for v in ("C", "P", "I", "N", 0.25, True, "Yes", "0.5")]
    [1.0, 0.5, 0.0, 0.0, 0.25, 1.0, 1.0, 0.5]
    """
    if value is None:
        return math.nan
    if isinstance(value, str):
        if value in _SENTINELS:
            return _SENTINELS[value]
        word = _WORDS.get(value.lower())
        if word is not None:
            return word
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    elif isinstance(value, bool | int | float) and not (isinstance(value, float) and math.isnan(value)):
        return float(value)
    raise ValueError(
        f"{where}: cannot read the score value {short_repr(value)} as a number "
        "(expected C/P/I/N, yes/no, true/false or a number)"
    )


def _no_check(path: Path) -> None:
    return None


class FileKind(NamedTuple):
    """The files a reader takes, as :func:`input_files` checks and names them.

    ``one`` names one file (``"log"``), ``expected`` what the paths should be (``".eval or .json
    logs"``) and ``holds`` what a folder should hold; ``in_folder`` lists a folder's files and
    ``check`` refuses a file by its name (before its existence is checked).
    """

    one: str
    expected: str
    holds: str
    in_folder: Callable[[Path], list[Path]]
    check: Callable[[Path], None] = _no_check


def input_files(value: Any, argument: str, kind: FileKind) -> list[Path]:
    """The files a reader's ``argument`` names: one path or several, a folder for the files in it.

    Errors name the argument and say what ``kind`` of file was expected.

    Examples
    --------
    >>> input_files("a.jsonl", "files", FileKind("file", "files", "file", in_folder=list))
    Traceback (most recent call last):
    ...
    ValueError: files: no file 'a.jsonl'
    """
    items = [value] if isinstance(value, str | Path) else list(value)
    if not items:
        raise ValueError(f"{argument}: no {kind.one} given")
    paths: list[Path] = []
    for item in items:
        if not isinstance(item, str | Path):
            raise TypeError(f"{argument}: expected paths of {kind.expected}, got {short_repr(item)}")
        path = Path(item)
        if path.is_dir():
            found = kind.in_folder(path)
            if not found:
                raise ValueError(f"{argument}: the folder {str(path)!r} holds no {kind.holds}")
            paths += found
            continue
        kind.check(path)
        if not path.exists():
            raise ValueError(f"{argument}: no file {str(path)!r}")
        paths.append(path)
    return paths


def flatten(mapping: Mapping[str, Any] | None, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    """``mapping``'s entries into ``out`` as ``prefix.key`` (nested objects as ``prefix.a.b``)."""
    for key, value in (mapping or {}).items():
        name = f"{prefix}.{key}"
        if type(value) is dict and value:  # JSON objects (an exact type check: this runs per cell)
            flatten(value, name, out)
        else:
            out[name] = value
    return out


def check_outcome(frame: pd.DataFrame, column: str, argument: str) -> None:
    """Every outcome (``frame[column]``'s values) is in [0, 1] or NaN, else a ValueError."""
    values = frame["outcome"]
    bad = values[(values < 0) | (values > 1)]
    if len(bad):
        item = frame.loc[bad.index[0], "item"]
        raise ValueError(
            f"{argument}={column!r}: the outcome must be in [0, 1], got "
            f"{float(bad.iloc[0])!r} (item {getattr(item, 'item', lambda: item)()!r}); "
            f"choose another {argument} or rescale the scores"
        )


def implied_design(frame: pd.DataFrame) -> Design:
    """``cluster="item"`` when some model answered some item of some task more than once."""
    repeated = frame.duplicated(["model", "task", "item"]).any()
    return Design(cluster="item" if repeated else None)


def check_unique(frame: pd.DataFrame, argument: str) -> None:
    """One row per (model, task, item, epoch), else a ValueError naming the argument."""
    dup = frame.duplicated(list(ID_COLUMNS))
    if dup.any():
        first = frame.loc[dup, list(ID_COLUMNS)].iloc[0].to_dict()
        raise ValueError(f"{argument}: the same answer appears twice, {first}; pass each run of a model on a task once")


def assemble(rows: list[dict[str, Any]], scorers: list[str], outcome: str) -> pd.DataFrame:
    """The tidy frame from row dictionaries: fixed columns, scorers, then metadata columns."""
    frame = pd.DataFrame.from_records(rows)
    for name in (*FIXED_COLUMNS, *scorers):
        if name not in frame.columns:
            frame[name] = math.nan
    rest = [c for c in frame.columns if c not in FIXED_COLUMNS and c not in scorers]
    frame = frame[[*FIXED_COLUMNS, *scorers, *rest]]
    frame["outcome"] = frame[outcome].astype(float) if len(frame) else frame["outcome"]
    return frame.reset_index(drop=True)


def records(
    rows: list[dict[str, Any]],
    columns: list[str],
    *,
    outcome_column: str,
    outcome: str,
    argument: str,
    outcome_argument: str | None = None,
) -> EvalRecords:
    """A reader's result from its rows: the frame (:func:`assemble`), checked, and its design.

    ``outcome_column`` is the column copied to ``outcome`` and ``outcome`` the name the records
    give it; with ``outcome_argument`` (the reader's argument that chose it) the outcomes must be
    in [0, 1] (:func:`check_outcome`). Every answer must appear once (:func:`check_unique`,
    naming ``argument``).

    Examples
    --------
    >>> rows = [{"model": "m", "task": "t", "item": i, "epoch": 1, "match": float(i)} for i in (0, 1)]
    >>> rec = records(rows, ["match"], outcome_column="match", outcome="match", argument="logs")
    >>> rec.frame["outcome"].tolist(), rec.design.cluster
    ([0.0, 1.0], None)
    """
    frame = assemble(rows, columns, outcome_column)
    if outcome_argument is not None:
        check_outcome(frame, outcome, outcome_argument)
    check_unique(frame, argument)
    return EvalRecords(frame, implied_design(frame), outcome, tuple(columns))
