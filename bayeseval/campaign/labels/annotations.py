"""Annotation files for labelling campaigns: Label Studio and JSON Lines, several annotators.

A campaign's proposed rows go to an annotation tool and come back as annotations:

* **Label Studio** (https://labelstud.io). :func:`to_labelstudio` turns a batch into tasks in
  Label Studio's JSON import format, a list of ``{"data": {...}, "meta": {...}}`` objects whose
  ``data`` holds the row's fields; the campaign's row id travels in ``data`` and ``meta`` under
  :data:`ROW_ID_KEY`. :func:`labelstudio_config` writes a matching labelling configuration (the
  content fields as ``<Text>`` or ``<Image>`` objects, :func:`content_kinds`, and a
  ``<Choices name="label">`` control over the campaign's known labels). A Label Studio export comes
  back through :func:`read_labelstudio`: the JSON export (tasks with ``"annotations": [{"result":
  [{"from_name", "to_name", "type": "choices", "value": {"choices": [...]}}], "completed_by":
  ...}]``), the JSON-MIN export and the CSV export (one row per annotation, the control's
  column holding the choice and ``annotator`` the annotator).
* **JSON Lines**: :func:`to_jsonl` writes one object per row (the id, the fields, an empty
  label); :func:`read_jsonl` reads objects with the id, a label and optionally an annotator.

Every reader returns an annotation table with the columns ``row`` (the campaign's row id),
``annotator`` and ``label``. Several annotations of a row are resolved into one label by
:func:`resolve_labels` (majority, or a chosen annotator); their agreement per stratum is
measured in :mod:`bayeseval.campaign.labels.agreement`. Annotators are named by one
normalisation, :func:`annotator_identity`, in every reader and at ingest.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np
import pandas as pd

from bayeseval._api.validation import short_repr
from bayeseval.campaign.labels.label_set import is_blank

__all__ = [
    "ROW_ID_KEY",
    "annotator_identity",
    "content_kinds",
    "labelstudio_config",
    "read_annotations",
    "read_jsonl",
    "read_labelstudio",
    "resolve_labels",
    "to_jsonl",
    "to_labelstudio",
]

#: key of the campaign's row id in a Label Studio task's ``data`` and ``meta``
ROW_ID_KEY = "bayeseval_row_id"
#: columns of an annotation table
ANNOTATION_COLUMNS = ["row", "annotator", "label"]


def _plain(value: Any) -> Any:
    """A JSON-ready Python scalar (numpy scalars unwrapped, missing values as None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Interval | pd.Timestamp):
        return str(value)
    return value


# -- export ----------------------------------------------------------------------------------
def to_labelstudio(batch: pd.DataFrame) -> list[dict[str, Any]]:
    """A batch as Label Studio tasks (its JSON import format).

    Parameters
    ----------
    batch : pandas.DataFrame
        Indexed by row id (as :meth:`bayeseval.campaign.Campaign.propose` returns it); every
        column becomes a field of the task's ``data``.

    Returns
    -------
    list of dict
        One task per row: ``{"data": {field: value, ..., ROW_ID_KEY: id}, "meta": {ROW_ID_KEY: id}}``.

    Examples
    --------
    >>> batch = pd.DataFrame({"text": ["a", "b"], "round": [1, 1]}, index=pd.Index([7, 9], name="id"))
    >>> to_labelstudio(batch)[0]
    {'data': {'text': 'a', 'round': 1, 'bayeseval_row_id': 7}, 'meta': {'bayeseval_row_id': 7}}
    """
    if not isinstance(batch, pd.DataFrame):
        raise TypeError(f"batch must be a pandas DataFrame indexed by row id, got {type(batch).__name__}")
    if ROW_ID_KEY in batch.columns:
        raise ValueError(f"batch has a column named {ROW_ID_KEY!r}, the key reserved for the row id")
    tasks = []
    for rid, values in zip(batch.index, batch.itertuples(index=False, name=None), strict=True):
        data = {str(c): _plain(v) for c, v in zip(batch.columns, values, strict=True)}
        data[ROW_ID_KEY] = _plain(rid)
        tasks.append({"data": data, "meta": {ROW_ID_KEY: _plain(rid)}})
    return tasks


#: file name endings of images (a URL's path, before any query string)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff", ".svg")
#: words of a column name that say it holds images
IMAGE_WORDS = frozenset({"image", "img", "photo", "picture", "pic", "thumbnail"})
_URL_PREFIXES = ("http://", "https://", "s3://", "gs://", "azure-blob://", "/data/", "data:image/")
#: Label Studio object tag per content kind
_OBJECT_TAGS = {"text": "Text", "image": "Image"}


def _is_image_value(value: str) -> bool:
    path = value.split("?")[0].split("#")[0].lower()
    return value.lower().startswith("data:image/") or path.endswith(IMAGE_SUFFIXES)


def content_kinds(values: Mapping[str, Sequence[Any]], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """How Label Studio should show each content column: ``"image"`` or ``"text"``.

    The rule: a column is an image when every non-missing value is text naming an image (a
    URL or path whose file name, before any ``?`` query, ends in one of
    :data:`IMAGE_SUFFIXES`, or a ``data:image/`` URI), or when its name has a word of
    :data:`IMAGE_WORDS` (``image_url``, ``img``, ``photo-path``; words split at ``_``,
    ``-``, ``.`` and spaces) and every non-missing value is a URL (``http(s)://``,
    ``s3://``, ``gs://``, ``azure-blob://``, ``/data/...`` or ``data:image/``); every other
    column, and a column without values, is text.

    Parameters
    ----------
    values : mapping
        Column name -> some of its values.
    overrides : mapping, optional
        Column name -> ``"text"`` or ``"image"``, taking precedence over the rule.

    Returns
    -------
    dict
        Column name -> kind, in the order of ``values``.

    Examples
    --------
    >>> content_kinds({"text": ["a cat"], "image_url": ["https://x.org/1?s=2"], "f": ["a/b.PNG"]})
    {'text': 'text', 'image_url': 'image', 'f': 'image'}
    >>> content_kinds({"f": ["a/b.png"]}, {"f": "text"})
    {'f': 'text'}
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(values))
    if unknown:
        raise ValueError(
            f"content_types names columns that are not content columns: {unknown}; content is {list(values)}"
        )
    bad = {k: v for k, v in overrides.items() if v not in _OBJECT_TAGS}
    if bad:
        raise ValueError(f"content_types must map columns to 'text' or 'image', got {bad}")
    out = {}
    for name, vals in values.items():
        texts = [v for v in vals if v is not None]
        strings = bool(texts) and all(isinstance(v, str) for v in texts)
        words = set(str(name).lower().replace("-", "_").replace(".", "_").replace(" ", "_").split("_"))
        image = strings and (
            all(_is_image_value(v) for v in texts)
            or (bool(words & IMAGE_WORDS) and all(v.lower().startswith(_URL_PREFIXES) for v in texts))
        )
        out[name] = overrides.get(name, "image" if image else "text")
    return out


def labelstudio_config(
    labels: Sequence[Any], *, content: Mapping[str, str] | Sequence[str] | None = None, prediction: str | None = None
) -> str:
    """A Label Studio labelling configuration: the content objects and one ``Choices`` control named ``label``.

    Each content field is shown under a ``<Header>`` with its name, as an ``<Image>`` or
    ``<Text>`` object named after the field whose ``value`` is ``$field`` (the task's
    ``data`` key); the ``<Choices>`` control's ``toName`` is the first object (Label
    Studio's control tags name one object), with one ``<Choice value>`` per label.

    Parameters
    ----------
    labels : sequence
        The campaign's known labels (the choices).
    content : mapping or sequence of str, optional
        Task fields to show: field -> ``"text"`` or ``"image"`` (see :func:`content_kinds`),
        or field names shown as text. Default: the row id (:data:`ROW_ID_KEY`).
    prediction : str, optional
        A task field holding the model's prediction, shown as text after the content.

    Returns
    -------
    str
        The XML configuration.

    Examples
    --------
    >>> print(labelstudio_config([0, 1], content={"text": "text", "image_url": "image"}))
    <View>
      <Header value="text"/>
      <Text name="text" value="$text"/>
      <Header value="image_url"/>
      <Image name="image_url" value="$image_url"/>
      <Choices name="label" toName="text" choice="single" showInline="true">
        <Choice value="0"/>
        <Choice value="1"/>
      </Choices>
    </View>
    """
    kinds = dict(content) if isinstance(content, Mapping) else {f: "text" for f in (content or ())}
    shown = list(kinds.items()) or [(ROW_ID_KEY, "text")]
    lines = []
    for field, kind in shown:
        if not re.fullmatch(r"[A-Za-z0-9_]+", str(field)) or field == "label":
            raise ValueError(
                f"content field {field!r} cannot be shown by Label Studio, which refers to task "
                "fields as $name: use letters, digits and _ only (and not 'label')"
            )
        if kind not in _OBJECT_TAGS:
            raise ValueError(f"content kind of {field!r} must be 'text' or 'image', got {kind!r}")
        lines += [
            f"  <Header value={quoteattr(str(field))}/>",
            f"  <{_OBJECT_TAGS[kind]} name={quoteattr(str(field))} value={quoteattr('$' + str(field))}/>",
        ]
    if prediction is not None:
        lines += [
            f"  <Header value={quoteattr('model prediction (' + str(prediction) + ')')}/>",
            f'  <Text name="bayeseval_prediction" value={quoteattr("$" + str(prediction))}/>',
        ]
    choices = "\n".join(f"    <Choice value={quoteattr(str(v))}/>" for v in labels)
    return (
        "<View>\n" + "\n".join(lines) + "\n"
        f'  <Choices name="label" toName={quoteattr(str(shown[0][0]))} choice="single" showInline="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        "</View>"
    )


def to_jsonl(batch: pd.DataFrame, *, id_name: str = "row", label_name: str = "label") -> str:
    """A batch as JSON Lines: one object per row with its id, fields and an empty label.

    Parameters
    ----------
    batch : pandas.DataFrame
        Indexed by row id.
    id_name : str
        Key of the row id.
    label_name : str
        Key of the (empty) label to fill in.

    Returns
    -------
    str
        The lines, each ending with a newline.

    Examples
    --------
    >>> batch = pd.DataFrame({"g": ["a"]}, index=[3])
    >>> to_jsonl(batch)
    '{"row": 3, "g": "a", "label": null}\\n'
    """
    lines = []
    for rid, values in zip(batch.index, batch.itertuples(index=False, name=None), strict=True):
        obj = {id_name: _plain(rid)}
        obj.update({str(c): _plain(v) for c, v in zip(batch.columns, values, strict=True)})
        obj[label_name] = None
        lines.append(json.dumps(obj) + "\n")
    return "".join(lines)


# -- import ----------------------------------------------------------------------------------
#: a number written with a zero fractional part (``"1.0"``): the integral id it stands for
_INTEGRAL_TEXT = re.compile(r"[+-]?\d+\.0*")


def annotator_identity(who: Any, aliases: Mapping[str, str] | None = None) -> str | None:
    """The one identity of an annotator, however a file names the person.

    Every reader and :meth:`bayeseval.campaign.Campaign.ingest` apply this normalisation:

    * a Label Studio user object (``{"id": 3, "email": "Ann@Example.org", ...}``, as the JSON
      export gives ``completed_by``) is its e-mail, else its id;
    * an e-mail (text with ``@``) is lower-cased; text is stripped;
    * an integral number is that integer, however it was read (``1``, ``1.0``, ``"1.0"``, a
      numpy integer are all ``"1"``);
    * the result is looked up in ``aliases`` (user id or name -> identity); the readers fill
      it with the id -> e-mail pairs the export itself carries and with the caller's
      ``annotator_map``.

    Label Studio's JSON-MIN and CSV exports carry the e-mail when the export holds user
    objects, otherwise the bare user id; a bare id that no user object of the same file and
    no ``annotator_map`` ties to an e-mail stays the id, and is a different annotator from
    the same person's e-mail in another file.

    Parameters
    ----------
    who : object
        The annotator as a file gives it.
    aliases : mapping, optional
        Identity (as this function returns it) -> identity to use instead.

    Returns
    -------
    str or None
        The identity; None when ``who`` is missing or blank.

    Examples
    --------
    >>> annotator_identity({"id": 3, "email": " Ann@Example.org"}), annotator_identity(1.0)
    ('ann@example.org', '1')
    >>> annotator_identity(3, {"3": "ann@example.org"})
    'ann@example.org'
    """
    if isinstance(who, Mapping):
        email = who.get("email")
        who = email if email is not None and str(email).strip() else who.get("id")
    who = _plain(who)
    if who is None:
        return None
    if isinstance(who, float) and who.is_integer():
        who = int(who)
    text = str(who).strip()
    if _INTEGRAL_TEXT.fullmatch(text):
        text = str(int(text.split(".")[0]))
    elif "@" in text:
        text = text.lower()
    if not text:
        return None
    return aliases.get(text, text) if aliases else text


def _aliases(annotator_map: Mapping[Any, Any] | None, users: Sequence[Mapping[str, Any]] = ()) -> dict[str, str]:
    """Identity -> identity: the export's user ids to their e-mails, then the caller's map."""
    out: dict[str, str] = {}
    for user in users:
        uid, email = annotator_identity(user.get("id")), annotator_identity({"email": user.get("email")})
        if uid is not None and email is not None:
            out[uid] = email
    if annotator_map is not None:
        if not isinstance(annotator_map, Mapping):
            raise TypeError(
                f"annotator_map must be a mapping of annotator -> identity, got {type(annotator_map).__name__}"
            )
        for key, value in annotator_map.items():
            source, target = annotator_identity(key), annotator_identity(value)
            if source is None or target is None:
                raise ValueError(f"annotator_map: {key!r} -> {value!r} maps a missing or blank annotator")
            out[source] = target
        out = {k: out.get(v, v) for k, v in out.items()}  # an id -> e-mail -> mapped identity
    return out


def _where_task(task: Any, i: int) -> str:
    """How an error names a task: its position in the file (from 1) and its id."""
    tid = task.get("id") if isinstance(task, Mapping) else None
    return f"task #{i + 1}" + ("" if tid is None else f" (id {tid!r})")


def _listed(value: Any, key: str, where: str) -> list[Any]:
    """A list field of an export object (missing or null is empty); anything else is malformed."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where}: {key!r} must be a list, got {type(value).__name__} {short_repr(value, limit=60)}")
    return value


def _choice(result: Any, from_name: str | None, where: str) -> Any:
    """The one choice of an annotation's result list (None when it holds no choice)."""
    regions = _listed(result, "result", where)
    for k, region in enumerate(regions):
        if not isinstance(region, Mapping):
            raise ValueError(f"{where}: result {k} must be an object, got {short_repr(region, limit=60)}")
    regions = [
        r for r in regions if r.get("type") == "choices" and (from_name is None or r.get("from_name") == from_name)
    ]
    if not regions:
        return None
    names = {r.get("from_name") for r in regions}
    if len(names) > 1:
        raise ValueError(f"{where}: several choice controls {sorted(map(str, names))}; pass from_name to pick one")
    return _one_choice(regions[0].get("value"), where)


def _one_choice(value: Any, where: str) -> Any:
    """The choice of a ``{"choices": [...]}`` value holding exactly one scalar choice."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"{where}: the choice's 'value' must be an object with 'choices', got {short_repr(value, limit=60)}"
        )
    choices = value.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not _is_scalar(choices[0]):
        raise ValueError(f"{where}: expected exactly one choice, got {short_repr(choices, limit=60)}")
    return choices[0]


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | np.generic)


def _task_row_id(task: Mapping[str, Any], where: str) -> Any:
    data, meta = task.get("data"), task.get("meta")
    for key, part in (("data", data), ("meta", meta)):
        if part is not None and not isinstance(part, Mapping):
            raise ValueError(
                f"{where}: {key!r} must be an object, got {type(part).__name__} {short_repr(part, limit=60)}"
            )
    named = [_checked_id(part[ROW_ID_KEY], ROW_ID_KEY, where) for part in (data, meta) if part and ROW_ID_KEY in part]
    if len(named) == 2 and not _same_id(*named):
        raise ValueError(
            f"{where}: its data names row {short_repr(named[0], limit=60)} but its meta row {short_repr(named[1], limit=60)}; "
            "a task must name one row (fix or delete the task)"
        )
    if named:
        return named[0]
    if data is None:
        raise ValueError(f"{where}: the task has no 'data' object (with {ROW_ID_KEY!r})")
    raise ValueError(f"{where}: carries no {ROW_ID_KEY!r} in data or meta")


def _id_text(rid: Any) -> str:
    """A row id as comparable text: an integral number, however written, as the integer."""
    rid = _plain(rid)
    if isinstance(rid, float) and rid.is_integer():
        rid = int(rid)
    text = str(rid).strip()
    return str(int(text.split(".")[0])) if _INTEGRAL_TEXT.fullmatch(text) else text


def _same_id(a: Any, b: Any) -> bool:
    """Whether two row ids of one task name the same row (``7``, ``7.0`` and ``"7"`` do)."""
    return bool(a == b) or _id_text(a) == _id_text(b)


def _checked_id(rid: Any, key: str, where: str) -> Any:
    if not _is_scalar(rid) or rid is None or (isinstance(rid, float) and not np.isfinite(rid)):
        raise ValueError(f"{where}: {key!r} must be a row id, got {short_repr(rid, limit=60)}")
    return rid


def _unnamed(annotation_id: Any, position: int) -> str:
    """Identity of an annotation that names no annotator: its id, else its position in the file."""
    annotation_id = annotator_identity(annotation_id)
    return f"annotation-{annotation_id}" if annotation_id is not None else f"annotation#{position}"


def _task_annotations(
    task: Mapping[str, Any],
    where: str,
    from_name: str | None,
    aliases: Mapping[str, str],
    first: int,
    keep_blank: bool = False,
) -> tuple[list[tuple[Any, str, Any, Any]], int]:
    """A JSON export task's ``(row, annotator, label, created_at)`` and the count of its annotations
    (with ``keep_blank``, a task without a label is one row with the label None)."""
    rid = _task_row_id(task, where)
    anns = _listed(task.get("annotations", task.get("completions")), "annotations", where)
    rows = []
    for j, ann in enumerate(anns):
        here = f"{where} annotation {j}"
        if not isinstance(ann, Mapping):
            raise ValueError(f"{here}: must be an object, got {short_repr(ann, limit=60)}")
        who = ann.get("completed_by")
        if not (isinstance(who, Mapping) or _is_scalar(who)):
            raise ValueError(
                f"{here}: 'completed_by' must be a user id or a user object, got {short_repr(who, limit=60)}"
            )
        label = _choice(ann.get("result"), from_name, here)
        if ann.get("was_cancelled") or label is None:
            continue
        name = annotator_identity(who, aliases) or _unnamed(ann.get("id"), first + j)
        rows.append((rid, name, label, ann.get("created_at")))
    if keep_blank and not rows:
        rows.append((rid, "", None, None))
    return rows, len(anns)


#: Label Studio's ``created_username`` of an annotation: ``"<e-mail>, <user id>"``
_CREATED_USERNAME = re.compile(r"\s*(\S+@\S+)\s*,\s*(\d+)\s*")


def _export_users(tasks: Sequence[Any]) -> list[Mapping[str, Any]]:
    """Users of a JSON export: ``completed_by`` objects and ``created_username`` e-mail/id pairs."""
    users = []
    for task in tasks:
        anns = task.get("annotations") if isinstance(task, Mapping) else None
        for ann in anns if isinstance(anns, list) else []:
            if not isinstance(ann, Mapping):
                continue
            if isinstance(ann.get("completed_by"), Mapping):
                users.append(ann["completed_by"])
            pair = _CREATED_USERNAME.fullmatch(str(ann.get("created_username", "")))
            if pair:
                users.append({"email": pair.group(1), "id": pair.group(2)})
    return users


def _is_task(obj: Mapping[str, Any]) -> bool:
    """A JSON export task (annotations under the task), not a flat JSON-MIN record."""
    return "annotations" in obj or "completions" in obj or ("data" in obj and ROW_ID_KEY not in obj)


def _in_time_order(rows: Sequence[tuple[Any, str, Any, Any]]) -> pd.DataFrame:
    """The annotation table, oldest first by Label Studio's ``created_at`` when every one has it.

    Label Studio's JSON-MIN and CSV exports list a task's annotations newest first; the order
    matters to :func:`agreement`, which measures the first annotations of each row. Rows
    without a label (``keep_blank``) come last, in file order.
    """
    blank = [r for r in rows if r[2] is None]
    rows = [r for r in rows if r[2] is not None]
    frame = _time_ordered(rows)
    if not blank:
        return frame
    rest = pd.DataFrame([r[:3] for r in blank], columns=ANNOTATION_COLUMNS)
    return pd.concat([frame, rest], ignore_index=True) if len(frame) else rest


def _time_ordered(rows: Sequence[tuple[Any, str, Any, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame([r[:3] for r in rows], columns=ANNOTATION_COLUMNS)
    stamps = [r[3] for r in rows]
    if rows and all(isinstance(t, str) and t for t in stamps):
        times = pd.to_datetime(pd.Series(stamps), utc=True, format="ISO8601", errors="coerce")
        if not times.isna().any():
            frame = frame.iloc[np.argsort(times.to_numpy(), kind="stable")].reset_index(drop=True)
    return frame


def _check_export(tasks: Sequence[Any]) -> None:
    """A list of tasks holding none with an ``annotations`` field is a file to import, not an export."""
    objs = [t for t in tasks if isinstance(t, Mapping) and _is_task(t)]
    without = [
        i
        for i, t in enumerate(tasks)
        if isinstance(t, Mapping) and _is_task(t) and "annotations" not in t and "completions" not in t
    ]
    if objs and len(without) == len(objs):
        raise ValueError(
            f"the {len(objs)} task(s) have no 'annotations' field: this looks like a Label Studio "
            "import file (tasks to label), not an export; label the tasks, then export the project "
            "from Label Studio (JSON) and ingest that"
        )
    if without:
        i = without[0]
        raise ValueError(
            f"{_where_task(tasks[i], i)}: has no 'annotations' field, unlike the other tasks "
            f"({len(without)} task(s) without one): is it a task of an import file?"
        )


def _from_json(
    tasks: Sequence[Any], from_name: str | None, annotator_map: Mapping[Any, Any] | None, keep_blank: bool = False
) -> pd.DataFrame:
    """A JSON or JSON-MIN export (a list of tasks or of flat records), validated record by record."""
    _check_export(tasks)
    aliases = _aliases(annotator_map, _export_users(tasks))
    _check_label_field(
        [t for t in tasks if isinstance(t, Mapping) and not _is_task(t)], from_name or "label", "JSON-MIN export"
    )
    rows: list[tuple[Any, str, Any, Any]] = []
    seen = 0  # annotations before this task: an unnamed annotation's position in the file
    for i, task in enumerate(tasks):
        where = _where_task(task, i)
        if not isinstance(task, Mapping):
            raise ValueError(f"{where}: must be a task object, got {short_repr(task, limit=60)}")
        if _is_task(task):
            got, count = _task_annotations(task, where, from_name, aliases, seen + 1, keep_blank)
            rows += got
            seen += count
        else:
            seen += 1
            rows += _flat_record(task, where, _flat_keys(from_name, keep_blank), aliases, seen)
    return _in_time_order(rows)


def _flat_keys(from_name: str | None, keep_blank: bool = False) -> dict[str, Any]:
    """How a Label Studio flat record (JSON-MIN, CSV) names its fields."""
    return {"id": ROW_ID_KEY, "label": from_name or "label", "unnamed": _unnamed, "cells": True, "blank": keep_blank}


def _flat_label(value: Any, where: str) -> Any:
    """A CSV / JSON-MIN choice cell: the choice, or ``{"choices": [...]}`` with one choice."""
    if isinstance(value, str) and value.strip().startswith(("{", "[")):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, Mapping):
        return _one_choice(value, where)
    if not _is_scalar(value):
        raise ValueError(f"{where}: expected one choice, got {short_repr(value, limit=60)}")
    return value


def _flat_record(
    rec: Any, where: str, keys: Mapping[str, Any], aliases: Mapping[str, str], position: int
) -> list[tuple[Any, str, Any, Any]]:
    """The annotation of one flat record (JSON-MIN, CSV row, JSON Lines line), validated.

    ``keys`` names the id and label fields, whether label cells are Label Studio choice cells
    (``cells``) and how an annotation without annotator is named (``unnamed``).
    """
    if not isinstance(rec, Mapping):
        raise ValueError(f"{where}: must be an object, got {short_repr(rec, limit=60)}")
    blank = [(rec.get(keys["id"]), "", None, None)] if keys.get("blank") else []
    if keys["cells"] and keys["label"] not in rec and keys["id"] in rec:
        _checked_id(rec[keys["id"]], keys["id"], where)
        return blank  # a Label Studio record of a task nobody annotated (see _check_label_field)
    for key in (keys["id"], keys["label"]):
        if key not in rec:
            raise ValueError(f"{where}: has no {key!r} field; fields are {list(rec)[:20]}")
    rid = _checked_id(rec[keys["id"]], keys["id"], where)
    label = _flat_label(rec[keys["label"]], where) if keys["cells"] else rec[keys["label"]]
    if not _is_scalar(label):
        raise ValueError(f"{where}: {keys['label']!r} must be one label, got {short_repr(label, limit=60)}")
    if is_blank(_plain(label)):
        return blank
    who = annotator_identity(rec.get("annotator"), aliases) or keys["unnamed"](rec.get("annotation_id"), position)
    return [(rid, who, label, rec.get("created_at"))]


def _check_label_field(records: Sequence[Any], name: str, what: str) -> None:
    """Some flat record must carry the choice field (records of unannotated tasks lack it)."""
    flat = [r for r in records if isinstance(r, Mapping)]
    if flat and not any(name in r for r in flat):
        raise ValueError(
            f"Label Studio {what}: no record has the choice field from_name={name!r}; "
            f"fields are {list(flat[0])[:20]} (a file of tasks to import rather than an export?)"
        )


def _from_flat(records: Sequence[Any], keys: Mapping[str, Any], aliases: Mapping[str, str], what: str) -> pd.DataFrame:
    _check_label_field(records, keys["label"], what)
    rows = []
    for i, rec in enumerate(records):
        rows += _flat_record(rec, f"{what} #{i + 1}", keys, aliases, i + 1)
    return _in_time_order(rows)


def read_labelstudio(
    source: Any,
    *,
    from_name: str | None = None,
    annotator_map: Mapping[Any, Any] | None = None,
    keep_blank: bool = False,
) -> pd.DataFrame:
    """The annotations of a Label Studio export (JSON, JSON-MIN or CSV).

    Cancelled (skipped) annotations, annotations without a choice and the records of tasks
    nobody annotated are left out (with ``keep_blank``, a task without any label is one row
    whose ``label`` is None and ``annotator`` ``""``, so that an ingest can count it). A list
    of tasks none of which has an ``annotations`` field is a Label Studio *import* file (the
    tasks to label), not an export: ValueError saying so (an export's unlabelled task has
    ``"annotations": []``). The annotator is ``completed_by`` in the JSON export (a user
    id, or a user object whose e-mail is used) and the ``annotator`` field in the JSON-MIN and
    CSV exports (the e-mail, or the user id when the export held no user objects), normalised
    by :func:`annotator_identity`; a user id is replaced by the e-mail the same file pairs it
    with (a ``completed_by`` object, or an annotation's ``created_username``, ``"<e-mail>,
    <id>"``). A bare user id that the file pairs with no e-mail cannot be matched to that
    person's e-mail in another export: pass ``annotator_map``. An annotation that names no
    annotator gets its own identity, ``annotation-<annotation id>``, else ``annotation#<its
    position in the file, from 1>``. The annotations come oldest first by their
    ``created_at`` when every one has it (the JSON-MIN and CSV exports list a task's
    annotations newest first), otherwise in file order.

    Every record is validated: a malformed one (a task or annotation that is not an object,
    ``annotations`` or ``result`` not a list, a choice ``value`` that is not an object with
    one choice, a task without ``data``/row id) is a ValueError naming the task (its position
    in the file, from 1, and its id) and what is wrong.

    Parameters
    ----------
    source : str, path-like, list or pandas.DataFrame
        A ``.json`` or ``.csv`` export file, the parsed JSON (a list of tasks) or the CSV as a
        DataFrame.
    from_name : str, optional
        Name of the ``Choices`` control holding the label; default the only one (JSON export)
        or ``label`` (CSV and JSON-MIN exports).
    annotator_map : mapping, optional
        Annotator as the file names it (e.g. a bare user id) -> the identity to use (e.g. the
        e-mail), to tie a JSON export of bare ids to a CSV export of e-mails.
    keep_blank : bool
        Keep the tasks without a label, as rows whose label is None.

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``annotator``, ``label`` (labels as Label Studio stores them: text).

    Examples
    --------
    >>> export = [{"id": 1, "data": {"bayeseval_row_id": 7}, "annotations": [
    ...     {"completed_by": 3, "result": [{"from_name": "label", "to_name": "item",
    ...      "type": "choices", "value": {"choices": ["1"]}}]}]}]
    >>> read_labelstudio(export).to_dict("records")
    [{'row': 7, 'annotator': '3', 'label': '1'}]
    >>> read_labelstudio([{"id": 5, "data": {"bayeseval_row_id": 8}, "annotations": ["x"]}])
    Traceback (most recent call last):
    ...
    ValueError: task #1 (id 5) annotation 0: must be an object, got 'x'
    """
    if isinstance(source, pd.DataFrame):
        aliases = _aliases(annotator_map)
        return _from_flat(source.to_dict("records"), _flat_keys(from_name, keep_blank), aliases, "CSV export record")
    if isinstance(source, list):
        return _from_json(source, from_name, annotator_map, keep_blank)
    path = Path(source)
    if path.suffix.lower() == ".json":
        try:
            tasks = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"Label Studio export {str(path)!r} could not be read as JSON: {exc}") from exc
        if not isinstance(tasks, list):
            raise ValueError(f"Label Studio export {str(path)!r} must hold a list of tasks, got {type(tasks).__name__}")
        return _from_json(tasks, from_name, annotator_map, keep_blank)
    frame = pd.read_csv(path, dtype=object, keep_default_na=False, na_values=[""])
    return read_labelstudio(frame, from_name=from_name, annotator_map=annotator_map, keep_blank=keep_blank)


def read_jsonl(
    source: Any,
    *,
    id_name: str = "row",
    label_name: str = "label",
    annotator_map: Mapping[Any, Any] | None = None,
    keep_blank: bool = False,
) -> pd.DataFrame:
    """Annotations from JSON Lines: objects with the row id, a label and optionally an annotator.

    Lines whose label is blank (null, empty or spaces only: not yet labelled) are skipped
    (with ``keep_blank``, kept with the label None), and so are empty lines. The annotator
    is normalised by :func:`annotator_identity`. Every line is validated: a line that is not
    a JSON object, lacks the id or the label key, or holds a list or object as id or label is
    a ValueError naming the line.

    Parameters
    ----------
    source : str or path-like
        The ``.jsonl`` file.
    id_name, label_name : str
        Keys of the row id and the label.
    annotator_map : mapping, optional
        Annotator as the file names it -> the identity to use.
    keep_blank : bool
        Keep the lines without a label, as rows whose label is None.

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``annotator`` (``""`` when absent: a single annotator's batch), ``label``.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "b.jsonl")
    >>> _ = open(path, "w").write('{"row": 3, "label": 1}\\n{"row": 4, "label": null}\\n')
    >>> read_jsonl(path).to_dict("records")
    [{'row': 3, 'annotator': '', 'label': 1}]
    """
    keys = {"id": id_name, "label": label_name, "unnamed": lambda _id, _pos: "", "cells": False, "blank": keep_blank}
    aliases = _aliases(annotator_map)
    rows = []
    with open(source, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"JSON Lines file {str(source)!r} line {n}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where} is not JSON: {exc}") from exc
            rows += _flat_record(obj, where, keys, aliases, n)
    return _in_time_order(rows)


def read_annotations(
    path: Any,
    *,
    from_name: str | None = None,
    id_name: str = "row",
    annotator_map: Mapping[Any, Any] | None = None,
    keep_blank: bool = False,
) -> pd.DataFrame | None:
    """Annotations of an annotation-tool file, detected from its content; None for a plain batch file.

    ``.json`` is a Label Studio JSON (or JSON-MIN) export, ``.jsonl`` JSON Lines, and a
    ``.csv`` whose header has the :data:`ROW_ID_KEY` column a Label Studio CSV export.

    Parameters
    ----------
    path : str or path-like
        The file.
    from_name : str, optional
        Label Studio's choice control (see :func:`read_labelstudio`).
    id_name : str
        Row id key of JSON Lines files.
    annotator_map : mapping, optional
        Annotator as the file names it -> the identity to use (see :func:`read_labelstudio`).
    keep_blank : bool
        Keep the rows without a label, with the label None (see :func:`read_labelstudio`).

    Returns
    -------
    pandas.DataFrame or None
        The annotation table, or None when the file is a plain CSV/Parquet batch file.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "b.csv")
    >>> _ = open(path, "w").write("row,label\\n3,1\\n")
    >>> read_annotations(path) is None
    True
    """
    name = str(path).lower()
    if name.endswith(".json"):
        return read_labelstudio(path, from_name=from_name, annotator_map=annotator_map, keep_blank=keep_blank)
    if name.endswith(".jsonl"):
        return read_jsonl(path, id_name=id_name, annotator_map=annotator_map, keep_blank=keep_blank)
    if name.endswith((".csv", ".csv.gz")):
        header = pd.read_csv(path, nrows=0).columns
        if ROW_ID_KEY in header:
            return read_labelstudio(path, from_name=from_name, annotator_map=annotator_map, keep_blank=keep_blank)
    return None


# -- resolution ------------------------------------------------------------------------------
def _resolve_one(votes: Mapping[str, Any], rule: str, needed: int) -> Any:
    """The label of one row's ``{annotator: label}`` votes, or None when unresolved."""
    if len(votes) < needed:
        return None
    if rule.startswith("annotator:"):
        who = annotator_identity(rule[len("annotator:") :])
        return None if who is None else votes.get(who)
    ranked = Counter(votes.values()).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def resolve_labels(
    votes: Mapping[Any, Mapping[str, Any]], rule: str = "majority", *, needed: int = 1
) -> dict[Any, Any]:
    """One label per row from its annotations, by a documented rule.

    A row is resolved only when it has at least ``needed`` annotations and then

    * ``rule="majority"``: the label given by strictly more annotators than any other label;
      a tie between the most frequent labels leaves the row unresolved;
    * ``rule="annotator:NAME"``: the label of annotator ``NAME`` (compared as
      :func:`annotator_identity` names it, so an e-mail in any case); unresolved when
      ``NAME`` has not labelled the row.

    Labels are compared as given (normalise them first, e.g. with
    :class:`~bayeseval.campaign.LabelSet`).

    Parameters
    ----------
    votes : mapping
        Row id -> ``{annotator: label}``.
    rule : str
        ``"majority"`` or ``"annotator:NAME"``.
    needed : int
        Annotations a row needs before it is resolved.

    Returns
    -------
    dict
        Row id -> label, or None for an unresolved row.

    Examples
    --------
    >>> resolve_labels({1: {"a": 1, "b": 1, "c": 0}, 2: {"a": 1, "b": 0}})
    {1: 1, 2: None}
    >>> resolve_labels({2: {"a": 1, "b": 0}}, "annotator:b")
    {2: 0}
    """
    return {rid: _resolve_one(v, rule, needed) for rid, v in votes.items()}
