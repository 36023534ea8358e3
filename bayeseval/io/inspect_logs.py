"""Inspect (``inspect_ai``) evaluation logs: ``.eval`` archives and ``.json`` logs, one frame.

An ``.eval`` log is a zip archive of JSON members: ``header.json`` (the task, the model, the
scorers), ``summaries.json`` (per answer: id, epoch, scores, metadata) and one
``samples/<id>_epoch_<n>.json`` per answer with the whole transcript. Recent versions of Inspect
compress the members with Zstandard (zip method 93), which Python's ``zipfile`` reads only
from Python 3.14: those members are read with the ``zstandard`` package. A log still being
written keeps its spec in ``_journal/start.json`` and its summaries in
``_journal/summaries/<n>.json``; a log of an old version without summaries is read from its
sample members. A ``.json`` log is the whole log as one JSON object, samples included.

The answers are read from the summaries, where Inspect keeps every metadata field under 1,000
characters (a longer text is cut, a larger object replaced by a note, and runs of white space
in texts are collapsed to one space). An answer whose summary shows a cut or removed field is
read again from its own sample member, so every metadata column holds the sample's value except
for runs of white space.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bayeseval._api.docs import fill_doc
from bayeseval.io.records import (
    FIXED_COLUMNS,
    EvalRecords,
    FileKind,
    flatten,
    input_files,
    records,
    score_to_float,
)

__all__ = ["read_inspect"]

#: zip compression method of Zstandard (APPNOTE 4.4.5)
_ZSTD = 93
#: what Inspect writes in a summary in place of a metadata field over 1,000 characters
_REMOVED = "Key removed from summary (> 1k)"


#: end of central directory record: signature, disks, entries, size and offset of the directory
_EOCD = struct.Struct("<4s4H2LH")
#: central directory entry (46 bytes before its name, extra field and comment)
_ENTRY = struct.Struct("<4s6H3L5H2L")


class _Archive:
    """The JSON members of an ``.eval`` zip archive: stored, deflated and Zstandard members.

    The central directory is read with :mod:`struct` (a log holds one member per answer, and
    ``zipfile`` builds an object for each); a Zip64 archive is listed by ``zipfile``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fh = open(path, "rb")  # noqa: SIM115 -- closed by close()
            self.members = self._directory()
        except (OSError, ValueError, struct.error, zipfile.BadZipFile) as exc:
            raise ValueError(f"logs: {str(path)!r} is not a readable .eval archive: {exc}") from exc
        self.names = set(self.members)

    def _directory(self) -> dict[str, tuple[int, int, int, int]]:
        """name -> (method, compressed size, size, local header offset) of every member."""
        size = self.fh.seek(0, 2)
        self.fh.seek(max(0, size - 65_557))
        tail = self.fh.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0:
            raise ValueError("no zip end of central directory")
        _sig, _d, _cd, _n, count, cd_size, cd_offset, _c = _EOCD.unpack_from(tail, at)
        if count == 0xFFFF or cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF:
            return self._zip64_directory()
        self.fh.seek(cd_offset)
        directory = self.fh.read(cd_size)
        members, pos = {}, 0
        for _ in range(count):
            fields = _ENTRY.unpack_from(directory, pos)
            flags, method, comp, full = fields[3], fields[4], fields[8], fields[9]
            name_len, extra_len, comment_len, offset = fields[10], fields[11], fields[12], fields[16]
            if fields[0] != b"PK\x01\x02" or 0xFFFFFFFF in (comp, full, offset):
                return self._zip64_directory()
            raw = directory[pos + 46 : pos + 46 + name_len]
            members[raw.decode("utf-8" if flags & 0x800 else "cp437")] = (method, comp, full, offset)
            pos += 46 + name_len + extra_len + comment_len
        return members

    def _zip64_directory(self) -> dict[str, tuple[int, int, int, int]]:
        with zipfile.ZipFile(self.path) as z:
            return {i.filename: (i.compress_type, i.compress_size, i.file_size, i.header_offset) for i in z.infolist()}

    def json(self, name: str) -> Any:
        try:
            return json.loads(self._data(name))
        except ValueError as exc:
            raise ValueError(f"logs: member {name!r} of {str(self.path)!r} is not JSON: {exc}") from exc

    def _data(self, name: str) -> bytes:
        method, comp, full, offset = self.members[name]
        self.fh.seek(offset)
        header = self.fh.read(30)
        name_len, extra_len = struct.unpack_from("<HH", header, 26)
        self.fh.seek(offset + 30 + name_len + extra_len)
        raw = self.fh.read(comp)
        if method == 0:
            return raw
        if method == zipfile.ZIP_DEFLATED:
            return zlib.decompress(raw, -15)
        if method == _ZSTD:
            import zstandard  # deferred: only .eval archives need it

            return zstandard.ZstdDecompressor().decompress(raw, max_output_size=full)
        raise ValueError(
            f"logs: member {name!r} of {str(self.path)!r} uses zip compression method "
            f"{method}, which bayeseval does not read (stored, deflate and zstd only)"
        )

    def close(self) -> None:
        self.fh.close()


def _journal_summaries(archive: _Archive) -> list[dict[str, Any]] | None:
    parts = sorted(
        (n for n in archive.names if n.startswith("_journal/summaries/")),
        key=lambda n: int(Path(n).stem) if Path(n).stem.isdigit() else 0,
    )
    if not parts:
        return None
    return [s for part in parts for s in archive.json(part)]


def _sample_members(archive: _Archive) -> list[dict[str, Any]]:
    return [archive.json(n) for n in sorted(archive.names) if n.startswith("samples/") and n.endswith(".json")]


def _is_cut(metadata: Mapping[str, Any] | None) -> bool:
    return any(v == _REMOVED or (isinstance(v, str) and v.endswith("...")) for v in (metadata or {}).values())


def _restore_cut(archive: _Archive, summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Summaries whose metadata Inspect cut, replaced by the sample members' full metadata."""
    cut = [i for i, s in enumerate(summaries) if _is_cut(s.get("metadata"))]
    if not cut:
        return summaries
    out = list(summaries)
    full: dict[tuple[Any, Any], dict[str, Any]] | None = None
    for i in cut:
        key = (out[i].get("id"), out[i].get("epoch"))
        name = f"samples/{key[0]}_epoch_{key[1]}.json"  # Inspect's member name for a sample
        sample = archive.json(name) if name in archive.names else None
        if sample is None or (sample.get("id"), sample.get("epoch")) != key:
            if full is None:  # an unexpected layout: index every sample member once
                full = {(s.get("id"), s.get("epoch")): s for s in _sample_members(archive)}
            sample = full.get(key)
        if sample is not None:
            out[i] = {**out[i], "metadata": sample.get("metadata")}
    return out


def _read_eval(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    archive = _Archive(path)
    try:
        if "header.json" in archive.names:
            spec = archive.json("header.json").get("eval")
        elif "_journal/start.json" in archive.names:
            spec = archive.json("_journal/start.json").get("eval")
        else:
            raise ValueError(
                f"logs: {str(path)!r} has neither header.json nor _journal/start.json: not an Inspect .eval log"
            )
        if "summaries.json" in archive.names:
            samples = archive.json("summaries.json")
        else:
            samples = _journal_summaries(archive)
            if samples is None:
                samples = _sample_members(archive)
        samples = _restore_cut(archive, samples)
    finally:
        archive.close()
    return spec, samples


def _read_json(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        with open(path, encoding="utf-8") as fh:
            log = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValueError(f"logs: {str(path)!r} could not be read as JSON: {exc}") from exc
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise ValueError(f"logs: {str(path)!r} is not an Inspect log (no 'eval' object)")
    return log["eval"], log.get("samples") or []


def _score(value: Any, where: str, cache: dict[Any, float]) -> float:
    """``score_to_float`` of a value, remembered per distinct hashable value (a log has few)."""
    try:
        return cache[value]
    except KeyError:
        number = cache[value] = score_to_float(value, where)
        return number
    except TypeError:  # a list: not hashable, and not a score
        return score_to_float(value, where)


def _scores(scores: Mapping[str, Any] | None, where: str, cache: dict[Any, float]) -> dict[str, float]:
    """A sample's scores as numbers; a scorer with several values gives ``scorer.key`` columns."""
    out: dict[str, float] = {}
    for name, score in (scores or {}).items():
        value = score.get("value") if type(score) is dict else score
        if type(value) is dict:
            for key, part in value.items():
                out[f"{name}.{key}"] = _score(part, f"{where} scorer {name!r} key {key!r}", cache)
        else:
            out[name] = _score(value, f"{where} scorer {name!r}", cache)
    return out


def _rows(path: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The log's rows, its declared scorers and the score columns its samples have."""
    spec, samples = _read_eval(path) if path.suffix.lower() == ".eval" else _read_json(path)
    if not isinstance(spec, Mapping) or "model" not in spec or "task" not in spec:
        raise ValueError(f"logs: {str(path)!r} has no task and model in its spec: not an Inspect log")
    scorers = [s["name"] for s in spec.get("scorers") or [] if isinstance(s, Mapping) and "name" in s]
    model, task = spec["model"], spec["task"]
    rows, seen, cache = [], {}, {}
    for sample in samples:
        where = f"logs: {str(path)!r} sample {sample.get('id')!r} epoch {sample.get('epoch')!r}"
        scores = _scores(sample.get("scores"), where, cache)
        seen.update(dict.fromkeys(scores))
        row = {"model": model, "task": task, "item": sample.get("id"), "epoch": sample.get("epoch", 1), **scores}
        metadata = sample.get("metadata")
        if metadata:
            flatten(metadata, "metadata", row)
        rows.append(row)
    return rows, scorers, list(seen)


def _log_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in (".eval", ".json"))


def _check_log_name(path: Path) -> None:
    if path.suffix.lower() not in (".eval", ".json"):
        raise ValueError(f"logs: {str(path)!r} is neither an .eval nor a .json Inspect log")


#: Inspect's logs: ``.eval`` and ``.json`` files, a folder's at its top level
LOG_FILES = FileKind("log", ".eval or .json logs", ".eval or .json log", _log_files, _check_log_name)


def _score_columns(seen: Sequence[str], declared: Sequence[str]) -> list[str]:
    """Scorer columns in the logs' order: the declared scorers, then any other score key."""
    ordered = [c for d in declared for c in seen if c == d or c.startswith(f"{d}.")]
    return list(dict.fromkeys(ordered + list(seen)))


def _outcome_column(scorer: str | None, declared: Sequence[str], columns: Sequence[str]) -> str:
    if scorer is None:
        if not columns:
            raise ValueError("logs: no sample of the logs has a score; nothing to read as the outcome")
        first = declared[0] if declared else columns[0]
        if first not in columns:
            raise ValueError(
                f"scorer: the first scorer {first!r} gives several values "
                f"({[c for c in columns if c.startswith(first + '.')]}); pass scorer= one of them"
            )
        return first
    if scorer not in columns:
        raise ValueError(f"scorer={scorer!r} is not a scorer of the logs; they have {list(columns)}")
    return scorer


@fill_doc()
def read_inspect(logs: Any, *, scorer: str | None = None) -> EvalRecords:
    """Read Inspect evaluation logs (``.eval`` or ``.json``) into one tidy frame of answers.

    One row per answer: ``model`` and ``task`` from the log's spec, ``item`` the sample's id,
    ``epoch`` (from 1), ``outcome``, one column per scorer and the sample's metadata flattened
    (``metadata.category``). Score values are read as Inspect's ``value_to_float`` reads them:
    ``C``/``P``/``I``/``N`` as 1, 0.5, 0, 0, numbers kept, yes/no and true/false as 1/0; a
    scorer whose value is a dictionary gives one column per key (``scorer.key``). Several logs
    (models, tasks) are read into one frame; the design is ``cluster="item"`` when an item was
    answered in several epochs.

    Inspect need not be installed; ``.eval`` archives of recent versions need ``zstandard``
    (a dependency of bayeseval). Metadata come from the log's sample summaries (see the
    module's notes on fields over 1,000 characters).

    Parameters
    ----------
    logs : str, path-like or sequence of them
        ``.eval`` or ``.json`` log files, or folders holding them.
    scorer : str, optional
        The scorer whose value is the ``outcome`` (a ``scorer.key`` column for a scorer with
        several values). Default: the log's first scorer (Inspect's headline). Its values must
        lie in [0, 1].

    {records_returned}

    Raises
    ------
    ValueError
        A file that is not an Inspect log, a score value that is not a number, an outcome
        outside [0, 1], an unknown ``scorer``, or one answer (model, task, item, epoch) in
        two logs.

    Examples
    --------
    >>> import json, os, tempfile
    >>> log = {"eval": {"task": "qa", "model": "openai/gpt-4o", "scorers": [{"name": "match"}]},
    ...        "samples": [{"id": i, "epoch": e, "scores": {"match": {"value": "CI"[(i + e) % 2]}},
    ...                     "metadata": {"category": "ab"[i]}} for i in (0, 1) for e in (1, 2)]}
    >>> path = os.path.join(tempfile.mkdtemp(), "log.json")
    >>> _ = open(path, "w").write(json.dumps(log))
    >>> frame, design = read_inspect(path)
    >>> frame[["item", "epoch", "outcome", "metadata.category"]].to_dict("list")
    {'item': [0, 0, 1, 1], 'epoch': [1, 2, 1, 2], 'outcome': [0.0, 1.0, 1.0, 0.0], 'metadata.category': ['a', 'a', 'b', 'b']}
    >>> design.cluster
    'item'
    """
    rows: list[dict[str, Any]] = []
    declared: list[str] = []
    seen: list[str] = []
    for path in input_files(logs, "logs", LOG_FILES):
        got, names, scored = _rows(path)
        rows += got
        declared += [n for n in names if n not in declared]
        seen += [n for n in scored if n not in seen]
    columns = _score_columns(seen, declared)
    clash = [c for c in columns if c in FIXED_COLUMNS]
    if clash:
        raise ValueError(f"logs: a scorer is named {clash[0]!r}, a column of the frame; rename the scorer")
    outcome = _outcome_column(scorer, declared, columns)
    return records(rows, columns, outcome_column=outcome, outcome=outcome, argument="logs", outcome_argument="scorer")
