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
:func:`resolve_labels` (majority, or a chosen annotator) and their agreement per stratum is
measured by :func:`agreement` (Cohen's kappa for two annotators, Fleiss' kappa for more).
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

__all__ = [
    "ROW_ID_KEY",
    "agreement",
    "cohen_kappa",
    "content_kinds",
    "fleiss_kappa",
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
        Indexed by row id (as :meth:`bayeseval.active.Campaign.propose` returns it); every
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
        raise ValueError(f"content_types names columns that are not content columns: {unknown}; content is {list(values)}")
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
            raise ValueError(f"content field {field!r} cannot be shown by Label Studio, which refers to task "
                             "fields as $name: use letters, digits and _ only (and not 'label')")
        if kind not in _OBJECT_TAGS:
            raise ValueError(f"content kind of {field!r} must be 'text' or 'image', got {kind!r}")
        lines += [f"  <Header value={quoteattr(str(field))}/>",
                  f"  <{_OBJECT_TAGS[kind]} name={quoteattr(str(field))} value={quoteattr('$' + str(field))}/>"]
    if prediction is not None:
        lines += [f"  <Header value={quoteattr('model prediction (' + str(prediction) + ')')}/>",
                  f"  <Text name=\"bayeseval_prediction\" value={quoteattr('$' + str(prediction))}/>"]
    choices = "\n".join(f"    <Choice value={quoteattr(str(v))}/>" for v in labels)
    return (
        "<View>\n" + "\n".join(lines) + "\n"
        f"  <Choices name=\"label\" toName={quoteattr(str(shown[0][0]))} choice=\"single\" showInline=\"true\">\n"
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
def _annotator_name(who: Any) -> str | None:
    """Label Studio's ``completed_by``: a user id, or a dict with an email or id."""
    if isinstance(who, Mapping):
        who = who.get("email", who.get("id"))
    return None if who is None else str(who)


def _choice(result: Sequence[Any], from_name: str | None, where: str) -> Any:
    """The one choice of an annotation's result list (None when it holds no choice)."""
    regions = [
        r for r in result
        if isinstance(r, Mapping) and r.get("type") == "choices" and (from_name is None or r.get("from_name") == from_name)
    ]
    if not regions:
        return None
    names = {r.get("from_name") for r in regions}
    if len(names) > 1:
        raise ValueError(f"{where}: several choice controls {sorted(map(str, names))}; pass from_name to pick one")
    choices = regions[0].get("value", {}).get("choices", [])
    if len(choices) != 1:
        raise ValueError(f"{where}: expected exactly one choice, got {choices!r}")
    return choices[0]


def _task_row_id(task: Mapping[str, Any], i: int) -> Any:
    data = task.get("data") or {}
    meta = task.get("meta") or {}
    if ROW_ID_KEY in data:
        return data[ROW_ID_KEY]
    if ROW_ID_KEY in meta:
        return meta[ROW_ID_KEY]
    raise ValueError(f"Label Studio task {i} (id {task.get('id')!r}) carries no {ROW_ID_KEY!r} in data or meta")


def _from_json_tasks(tasks: Sequence[Any], from_name: str | None) -> pd.DataFrame:
    rows = []
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            raise ValueError(f"Label Studio export: item {i} is not a task object, got {task!r}")
        if "annotations" not in task and "data" not in task:
            rows.extend(_from_flat([task], from_name, "JSON-MIN export"))
            continue
        rid = _task_row_id(task, i)
        for j, ann in enumerate(task.get("annotations") or []):
            if ann.get("was_cancelled"):
                continue
            label = _choice(ann.get("result") or [], from_name, f"task {i} annotation {j}")
            if label is None:
                continue
            who = _annotator_name(ann.get("completed_by")) or f"annotation-{ann.get('id', j)}"
            rows.append((rid, who, label))
    return pd.DataFrame(rows, columns=ANNOTATION_COLUMNS)


def _flat_label(value: Any) -> Any:
    """A CSV / JSON-MIN choice cell: the choice, or ``{"choices": [...]}`` with one choice."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, Mapping):
        choices = value.get("choices", [])
        if len(choices) != 1:
            raise ValueError(f"expected exactly one choice, got {choices!r}")
        return choices[0]
    return value


def _from_flat(records: Sequence[Mapping[str, Any]], from_name: str | None, what: str) -> list[tuple[Any, str, Any]]:
    name = from_name or "label"
    rows = []
    for i, rec in enumerate(records):
        if ROW_ID_KEY not in rec:
            raise ValueError(f"Label Studio {what}: record {i} has no {ROW_ID_KEY!r} column; columns are {list(rec)[:20]}")
        if name not in rec:
            raise ValueError(f"Label Studio {what}: record {i} has no choice column from_name={name!r}; columns are {list(rec)[:20]}")
        label = _flat_label(rec[name])
        if label is None or (isinstance(label, float) and np.isnan(label)) or label == "":
            continue
        who = rec.get("annotator")
        if who is None or (isinstance(who, float) and np.isnan(who)):
            who = f"annotation-{rec.get('annotation_id', i)}"
        rows.append((rec[ROW_ID_KEY], _annotator_name(who) or "", label))
    return rows


def read_labelstudio(source: Any, *, from_name: str | None = None) -> pd.DataFrame:
    """The annotations of a Label Studio export (JSON, JSON-MIN or CSV).

    Cancelled (skipped) annotations and annotations without a choice are left out. The
    annotator is ``completed_by`` (its email when Label Studio gives a user object) in the JSON
    export and the ``annotator`` column in the CSV and JSON-MIN exports.

    Parameters
    ----------
    source : str, path-like, list or pandas.DataFrame
        A ``.json`` or ``.csv`` export file, the parsed JSON (a list of tasks) or the CSV as a
        DataFrame.
    from_name : str, optional
        Name of the ``Choices`` control holding the label; default the only one (JSON export)
        or ``label`` (CSV and JSON-MIN exports).

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
    """
    if isinstance(source, pd.DataFrame):
        return pd.DataFrame(_from_flat(source.to_dict("records"), from_name, "CSV export"), columns=ANNOTATION_COLUMNS)
    if isinstance(source, list):
        return _from_json_tasks(source, from_name)
    path = Path(source)
    if path.suffix.lower() == ".json":
        try:
            tasks = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"Label Studio export {str(path)!r} could not be read as JSON: {exc}") from exc
        if not isinstance(tasks, list):
            raise ValueError(f"Label Studio export {str(path)!r} must hold a list of tasks, got {type(tasks).__name__}")
        return _from_json_tasks(tasks, from_name)
    frame = pd.read_csv(path, dtype=object, keep_default_na=False, na_values=[""])
    return read_labelstudio(frame, from_name=from_name)


def read_jsonl(source: Any, *, id_name: str = "row", label_name: str = "label") -> pd.DataFrame:
    """Annotations from JSON Lines: objects with the row id, a label and optionally an annotator.

    Lines whose label is null (not yet labelled) and blank lines are skipped.

    Parameters
    ----------
    source : str or path-like
        The ``.jsonl`` file.
    id_name, label_name : str
        Keys of the row id and the label.

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``annotator`` (``""`` when absent), ``label``.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "b.jsonl")
    >>> _ = open(path, "w").write('{"row": 3, "label": 1}\\n{"row": 4, "label": null}\\n')
    >>> read_jsonl(path).to_dict("records")
    [{'row': 3, 'annotator': '', 'label': 1}]
    """
    rows = []
    with open(source, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"JSON Lines file {str(source)!r} line {n} is not JSON: {exc}") from exc
            if not isinstance(obj, Mapping) or id_name not in obj:
                raise ValueError(f"JSON Lines file {str(source)!r} line {n} has no {id_name!r} key")
            if obj.get(label_name) is None:
                continue
            who = obj.get("annotator")
            rows.append((obj[id_name], "" if who is None else str(who), obj[label_name]))
    return pd.DataFrame(rows, columns=ANNOTATION_COLUMNS)


def read_annotations(path: Any, *, from_name: str | None = None, id_name: str = "row") -> pd.DataFrame | None:
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
        return read_labelstudio(path, from_name=from_name)
    if name.endswith(".jsonl"):
        return read_jsonl(path, id_name=id_name)
    if name.endswith((".csv", ".csv.gz")):
        header = pd.read_csv(path, nrows=0).columns
        if ROW_ID_KEY in header:
            return read_labelstudio(path, from_name=from_name)
    return None


# -- resolution and agreement ------------------------------------------------------------------
def _resolve_one(votes: Mapping[str, Any], rule: str, needed: int) -> Any:
    """The label of one row's ``{annotator: label}`` votes, or None when unresolved."""
    if len(votes) < needed:
        return None
    if rule.startswith("annotator:"):
        return votes.get(rule[len("annotator:"):])
    ranked = Counter(votes.values()).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def resolve_labels(votes: Mapping[Any, Mapping[str, Any]], rule: str = "majority", *, needed: int = 1) -> dict[Any, Any]:
    """One label per row from its annotations, by a documented rule.

    A row is resolved only when it has at least ``needed`` annotations and then

    * ``rule="majority"``: the label given by strictly more annotators than any other label;
      a tie between the most frequent labels leaves the row unresolved;
    * ``rule="annotator:NAME"``: the label of annotator ``NAME``; unresolved when ``NAME``
      has not labelled the row.

    Labels are compared as given (normalise them first, e.g. with
    :class:`~bayeseval.active.LabelSet`).

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


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa of two annotators' labels of the same rows (Cohen 1960).

    ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e`` the agreement
    expected from each annotator's label frequencies; NaN when ``p_e`` is 1 (both always give
    the same single label) or there are no rows.

    Parameters
    ----------
    a, b : sequence
        The two annotators' labels, row by row.

    Returns
    -------
    float
        Kappa.

    Examples
    --------
    >>> cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0])
    0.5
    """
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"a and b must label the same rows, got {len(a)} and {len(b)} labels")
    n = len(a)
    if n == 0:
        return float("nan")
    ca, cb = Counter(a), Counter(b)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    p_e = sum(ca[k] * cb.get(k, 0) for k in ca) / n**2
    return float("nan") if p_e == 1 else float((p_o - p_e) / (1 - p_e))


def fleiss_kappa(table: Any) -> float:
    """Fleiss' kappa of a rows x categories table of rating counts (Fleiss 1971).

    Every row must have the same number ``m >= 2`` of ratings. ``(P - P_e) / (1 - P_e)`` with
    ``P`` the mean per-row agreement ``(sum_j n_ij^2 - m) / (m (m - 1))`` and ``P_e`` the sum of
    squared overall category shares; NaN when ``P_e`` is 1.

    Parameters
    ----------
    table : array-like
        Counts, one row per rated item, one column per category.

    Returns
    -------
    float
        Kappa.

    Examples
    --------
    >>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 4)
    0.3333
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] == 0:
        raise ValueError(f"table must be a non-empty rows x categories array, got shape {t.shape}")
    m = t.sum(axis=1)
    if np.any(m != m[0]) or m[0] < 2:
        raise ValueError(f"table rows must all hold the same number (>= 2) of ratings, got {sorted(set(m.tolist()))}")
    m0 = m[0]
    p_row = ((t**2).sum(axis=1) - m0) / (m0 * (m0 - 1))
    share = t.sum(axis=0) / t.sum()
    p_e = float(np.sum(share**2))
    return float("nan") if p_e == 1 else float((p_row.mean() - p_e) / (1 - p_e))


def _stratum_agreement(votes: Mapping[Any, Mapping[str, Any]]) -> tuple[int, int, str | None, float]:
    """``(rows, annotators, method, kappa)`` of one stratum's rows with two or more annotations."""
    multi = {r: v for r, v in votes.items() if len(v) >= 2}
    who = sorted({a for v in multi.values() for a in v})
    if not multi:
        return 0, len({a for v in votes.values() for a in v}), None, float("nan")
    if len(who) == 2:
        rows = list(multi.values())
        return len(rows), 2, "cohen", cohen_kappa([v[who[0]] for v in rows], [v[who[1]] for v in rows])
    sizes = Counter(len(v) for v in multi.values())
    m = max(sizes, key=lambda s: (sizes[s], s))
    rows = [v for v in multi.values() if len(v) == m]
    cats = sorted({lab for v in rows for lab in v.values()}, key=repr)
    table = [[sum(lab == c for lab in v.values()) for c in cats] for v in rows]
    return len(rows), len(who), "fleiss", fleiss_kappa(table)


def agreement(annotations: pd.DataFrame, strata: pd.Series) -> pd.DataFrame:
    """Agreement between annotators per stratum.

    In each stratum, over the rows with at least two annotations: Cohen's kappa
    (:func:`cohen_kappa`) when exactly two annotators labelled them, otherwise Fleiss' kappa
    (:func:`fleiss_kappa`) over the rows that have the stratum's most common number of
    annotations (Fleiss' kappa needs the same number of ratings per row; the annotators may
    differ from row to row).

    Parameters
    ----------
    annotations : pandas.DataFrame
        Columns ``row``, ``annotator``, ``label``.
    strata : pandas.Series
        Stratum of each row id (indexed by row id).

    Returns
    -------
    pandas.DataFrame
        Indexed by stratum: ``rows`` (rows the kappa uses), ``annotators``, ``method``
        (``"cohen"``, ``"fleiss"`` or None) and ``kappa`` (NaN without rows annotated twice).

    Examples
    --------
    >>> ann = pd.DataFrame({"row": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"],
    ...                     "label": [1, 1, 0, 1]})
    >>> agreement(ann, pd.Series(["g", "g"], index=[1, 2]))[["rows", "method"]].to_dict("records")
    [{'rows': 2, 'method': 'cohen'}]
    """
    by_stratum: dict[Any, dict[Any, dict[str, Any]]] = {}
    for rid, who, label in annotations[ANNOTATION_COLUMNS].itertuples(index=False, name=None):
        by_stratum.setdefault(strata.loc[rid], {}).setdefault(rid, {})[who] = label
    index = [s for s in pd.unique(strata) if s in by_stratum]
    rows = [_stratum_agreement(by_stratum[s]) for s in index]
    return pd.DataFrame(rows, columns=["rows", "annotators", "method", "kappa"], index=pd.Index(index, name=strata.name))
