"""Annotation-tool round trips, several annotators, agreement and schema upgrade of campaigns.

Cohen's and Fleiss' kappa and the agreement function are tested in ``test_agreement.py``.

References: Label Studio's documented task import format (a list of ``{"data": {...}}``
objects with optional ``meta``) and export formats (JSON: tasks with ``"annotations":
[{"result": [{"from_name", "to_name", "type": "choices", "value": {"choices": [...]}}],
"completed_by": ...}]``; CSV: one row per annotation with the choice column and
``annotator``); a campaign's agreement table against ``sklearn.metrics.cohen_kappa_score``.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from bayeseval.campaign import Annotation, Campaign
from bayeseval.campaign.labels.annotations import (
    ROW_ID_KEY,
    annotator_identity,
    read_jsonl,
    read_labelstudio,
    resolve_labels,
    to_labelstudio,
)
from bayeseval.cli.campaign import main
from tests.helpers import content_pool, make_pool

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def _ls_export(tasks, labels_by_row, annotators=(("7", None),)):
    """A Label Studio JSON export of ``tasks``: every annotator gives the row's label (or an override)."""
    out = []
    for t, task in enumerate(tasks, start=1):
        rid = task["data"][ROW_ID_KEY]
        anns = []
        for a, (who, override) in enumerate(annotators):
            label = labels_by_row[rid] if override is None else override(rid)
            anns.append(
                {
                    "id": 100 * t + a,
                    "completed_by": int(who),
                    "was_cancelled": False,
                    "lead_time": 3.2,
                    "result": [
                        {
                            "id": f"r{t}{a}",
                            "from_name": "label",
                            "to_name": "item",
                            "type": "choices",
                            "origin": "manual",
                            "value": {"choices": [str(label)]},
                        }
                    ],
                }
            )
        out.append({"id": t, "data": task["data"], "meta": task["meta"], "annotations": anns, "predictions": []})
    return out


# Fleiss (1971): 10 subjects, 14 raters, 5 categories (tests/results/fleiss_1971.csv)
def _proposed(tmp_path, pool_annotations, n, seed):
    """A two-annotator campaign at ``tmp_path / "c.db"`` with ``n`` rows proposed (closed)."""
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=seed,
        annotation=Annotation(annotators=2),
    )
    rows = list(c.propose(n).index)
    c.close()
    return rows


def _choice_result(label):
    return [{"from_name": "label", "to_name": "item", "type": "choices", "value": {"choices": [str(label)]}}]


MALFORMED = [
    ({"id": 41, "data": {ROW_ID_KEY: 1}, "annotations": ["x"]}, r"task #2 \(id 41\) annotation 0: must be an object"),
    (
        {
            "id": 41,
            "data": {ROW_ID_KEY: 1},
            "annotations": [
                {
                    "completed_by": 1,
                    "result": [{"from_name": "label", "to_name": "item", "type": "choices", "value": None}],
                }
            ],
        },
        r"task #2 \(id 41\) annotation 0: the choice's 'value' must be an object",
    ),
    (
        {"id": 41, "data": {ROW_ID_KEY: 1}, "annotations": {"completed_by": 1}},
        r"task #2 \(id 41\): 'annotations' must be a list",
    ),
    (
        {"id": 41, "data": {ROW_ID_KEY: 1}, "annotations": [{"completed_by": 1, "result": 5}]},
        r"task #2 \(id 41\) annotation 0: 'result' must be a list, got int 5",
    ),
    (
        {"id": 41, "annotations": [{"completed_by": 1, "result": []}]},
        r"task #2 \(id 41\): the task has no 'data' object",
    ),
    ({"id": 41, "data": [1], "annotations": []}, r"task #2 \(id 41\): 'data' must be an object"),
    (
        {"id": 41, "data": {ROW_ID_KEY: 1}, "annotations": [{"completed_by": [1], "result": []}]},
        r"'completed_by' must be",
    ),
    (
        {
            "id": 41,
            "data": {ROW_ID_KEY: 1},
            "annotations": [
                {
                    "completed_by": 1,
                    "result": [
                        {"from_name": "label", "to_name": "item", "type": "choices", "value": {"choices": ["0", "1"]}}
                    ],
                }
            ],
        },
        r"task #2 \(id 41\) annotation 0: expected exactly one choice",
    ),
    ({"id": 41, ROW_ID_KEY: {"x": 1}, "label": "1"}, rf"task #2 \(id 41\): '{ROW_ID_KEY}' must be a row id"),
    (
        {"id": 41, ROW_ID_KEY: 1, "label": [{"choices": ["0"]}, {"choices": ["1"]}]},
        r"task #2 \(id 41\): expected one choice",
    ),
    ("just text", r"task #2: must be a task object"),
]


def test_labelstudio_json_round_trip_through_the_cli(tmp_path, pool_annotations):
    pool_annotations.reset_index().to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(tmp_path / "pool.csv"),
                "--id-column",
                "id",
                "--strata",
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
            ]
        )
        == 0
    )
    tasks_path = tmp_path / "tasks.json"
    assert (
        main(
            [
                "campaign",
                "propose",
                "--db",
                db,
                "--batch-size",
                "20",
                "--out",
                str(tasks_path),
                "--format",
                "labelstudio",
            ]
        )
        == 0
    )
    tasks = json.loads(tasks_path.read_text())
    # the documented import format: a list of {"data": {...}, "meta": {...}}; the row id is carried
    assert isinstance(tasks, list) and len(tasks) == 20
    assert all(set(t) == {"data", "meta"} and t["data"][ROW_ID_KEY] == t["meta"][ROW_ID_KEY] for t in tasks)
    assert all("pred" not in t["data"] for t in tasks)  # the prediction is not shown to annotators
    rows = [t["data"][ROW_ID_KEY] for t in tasks]
    assert all(t["data"]["region"] == pool_annotations.loc[t["data"][ROW_ID_KEY], "region"] for t in tasks)
    truth = pool_annotations["truth"].to_dict()
    export = tmp_path / "export.json"
    export.write_text(json.dumps(_ls_export(tasks, truth)))
    assert main(["campaign", "ingest", "--db", db, "--labels", str(export)]) == 0
    with Campaign.open(db) as c:
        labels = c.labels()
        assert sorted(labels.index) == sorted(rows)
        assert (labels["label"].astype(int) == pool_annotations.loc[labels.index, "truth"]).all()
        sub = pool_annotations.loc[rows]
        errors = (sub["truth"] != sub["pred"]).groupby(sub["region"]).sum()
        st = c.status()
        for region, e in errors.items():
            assert st.loc[region, "successes"] == e
        assert len(c.annotations()) == 20 and set(c.annotations()["annotator"]) == {"7"}
    # ingesting the same export again changes nothing
    assert main(["campaign", "ingest", "--db", db, "--labels", str(export)]) == 0
    with Campaign.open(db) as c:
        assert c.labels_used == 20


def test_show_prediction_puts_the_prediction_in_the_tasks(tmp_path, pool_annotations):
    c = Campaign.create(tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", random_seed=2)
    hidden = c.propose(5)
    shown = c.pending_batch(show_prediction=True)
    assert "pred" not in hidden.columns and "pred" not in c.pending_batch().columns
    tasks = to_labelstudio(shown)
    assert [t["data"]["pred"] for t in tasks] == pool_annotations.loc[hidden.index, "pred"].tolist()
    c.close()


def test_labelstudio_csv_export_is_detected_and_ingested(tmp_path, pool_annotations):
    c = Campaign.create(tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", random_seed=3)
    batch = c.propose(12)
    c.close()
    # Label Studio's CSV export: the task's data fields, the choice column named after the
    # control, and one row per annotation with its annotator
    frame = pd.DataFrame(
        {
            "id": range(1, 13),
            ROW_ID_KEY: batch.index,
            "region": batch["region"].to_numpy(),
            "label": pool_annotations.loc[batch.index, "truth"].astype(str).to_numpy(),
            "annotator": "ann@example.com",
            "annotation_id": range(50, 62),
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "lead_time": 2.5,
        }
    )
    path = tmp_path / "export.csv"
    frame.to_csv(path, index=False)
    assert main(["campaign", "ingest", "--db", str(tmp_path / "c.db"), "--labels", str(path)]) == 0
    with Campaign.open(tmp_path / "c.db") as c:
        got = c.labels()["label"].astype(int)
        assert got.sort_index().tolist() == pool_annotations.loc[sorted(batch.index), "truth"].tolist()


def test_jsonl_round_trip(tmp_path, pool_annotations):
    pool_annotations.reset_index().to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(tmp_path / "pool.csv"),
                "--id-column",
                "id",
                "--strata",
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "4",
            ]
        )
        == 0
    )
    out = tmp_path / "batch.jsonl"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "9", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 9 and all(x["label"] is None and "pred" not in x for x in lines)
    for x in lines:
        x["label"] = int(pool_annotations.loc[x["id"], "truth"])
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert read_jsonl(out, id_name="id")["label"].tolist() == [x["label"] for x in lines]
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    with Campaign.open(db) as c:
        assert c.labels_used == 9
        assert (c.labels()["label"].astype(int) == pool_annotations.loc[c.labels().index, "truth"]).all()


def test_labelstudio_reader_skips_cancelled_and_reads_user_objects():
    export = [
        {
            "id": 1,
            "data": {ROW_ID_KEY: "a"},
            "annotations": [
                {
                    "completed_by": {"id": 3, "email": "x@y.z"},
                    "result": [
                        {"from_name": "label", "to_name": "t", "type": "choices", "value": {"choices": ["yes"]}}
                    ],
                },
                {"completed_by": 4, "was_cancelled": True, "result": []},
            ],
        },
        {"id": 2, "meta": {ROW_ID_KEY: "b"}, "data": {}, "annotations": [{"completed_by": 5, "result": []}]},
    ]
    got = read_labelstudio(export)
    assert got.to_dict("records") == [{"row": "a", "annotator": "x@y.z", "label": "yes"}]
    with pytest.raises(ValueError, match=ROW_ID_KEY):
        read_labelstudio([{"id": 9, "data": {"text": "no id"}, "annotations": []}])


def test_resolve_setting_is_validated():
    from bayeseval.campaign import CampaignSpec

    with pytest.raises(ValueError, match="resolve must be 'majority' or 'annotator:NAME', got 'vote'"):
        CampaignSpec(y_pred="p", resolve="vote")
    with pytest.raises(ValueError, match="annotators must be .*0"):
        CampaignSpec(y_pred="p", annotators=0)
    assert resolve_labels({1: {"a": "x", "b": "y", "c": "y"}}) == {1: "y"}


@pytest.mark.parametrize(
    "who, expected",
    [
        ({"id": 3, "email": " Ann@Example.ORG ", "first_name": ""}, "ann@example.org"),
        ({"id": 3, "email": ""}, "3"),
        (3, "3"),
        (3.0, "3"),
        ("3.0", "3"),
        (np.int64(3), "3"),
        (" 3 ", "3"),
        ("Bo", "Bo"),
        ("BO@X.io", "bo@x.io"),
        (None, None),
        (float("nan"), None),
        ("  ", None),
        (2.5, "2.5"),
    ],
)
def test_annotator_identity(who, expected):
    assert annotator_identity(who) == expected


def test_json_and_csv_exports_of_one_person_are_one_annotator(tmp_path, pool_annotations):
    rows = _proposed(tmp_path, pool_annotations, 6, 15)
    truth = pool_annotations["truth"].to_dict()
    user = {"id": 7, "email": "Ann@Example.org", "first_name": "", "last_name": ""}
    # the JSON export: a user object on some annotations, the bare user id on others
    tasks = [
        {
            "id": t,
            "data": {ROW_ID_KEY: r},
            "annotations": [{"id": 50 + t, "completed_by": user if t % 2 else 7, "result": _choice_result(truth[r])}],
        }
        for t, r in enumerate(rows)
    ]
    (tmp_path / "export.json").write_text(json.dumps(tasks))
    assert set(read_labelstudio(tmp_path / "export.json")["annotator"]) == {"ann@example.org"}
    assert main(["campaign", "ingest", "--db", str(tmp_path / "c.db"), "--labels", str(tmp_path / "export.json")]) == 0
    # the CSV export of the same project names the person by e-mail; a second person by id
    csv = pd.DataFrame(
        {
            "id": list(range(6)) * 2,
            ROW_ID_KEY: rows * 2,
            "label": [str(truth[r]) for r in rows] * 2,
            "annotator": ["ann@example.org"] * 6 + ["9"] * 6,
            "annotation_id": range(50, 62),
        }
    )
    csv.to_csv(tmp_path / "export.csv", index=False)
    assert main(["campaign", "ingest", "--db", str(tmp_path / "c.db"), "--labels", str(tmp_path / "export.csv")]) == 0
    with Campaign.open(tmp_path / "c.db") as c:
        ann = c.annotations()
        assert len(ann) == 12 and ann["annotator"].value_counts().to_dict() == {"ann@example.org": 6, "9": 6}
        assert c.labels_used == 6


def test_created_username_ties_a_bare_user_id_to_its_email():
    # a JSON export whose completed_by is the bare user id, with Label Studio's "e-mail, id" username
    tasks = [
        {
            "id": 1,
            "data": {ROW_ID_KEY: 5},
            "annotations": [
                {"completed_by": 192, "created_username": " Ann@Example.org, 192", "result": _choice_result(1)}
            ],
        },
        {
            "id": 2,
            "data": {ROW_ID_KEY: 6},
            "annotations": [
                {"completed_by": 192, "result": _choice_result(0)},
                {"completed_by": 193, "result": _choice_result(0)},
            ],
        },
    ]
    assert read_labelstudio(tasks)["annotator"].tolist() == ["ann@example.org", "ann@example.org", "193"]


def test_annotator_map_ties_a_bare_id_to_an_email(tmp_path):
    tasks = [{"id": 1, "data": {ROW_ID_KEY: 5}, "annotations": [{"completed_by": 7, "result": _choice_result(1)}]}]
    assert read_labelstudio(tasks)["annotator"].tolist() == ["7"]
    assert read_labelstudio(tasks, annotator_map={7.0: "Ann@Example.org"})["annotator"].tolist() == ["ann@example.org"]
    with pytest.raises(TypeError, match="annotator_map must be a mapping"):
        read_labelstudio(tasks, annotator_map=[7])


@pytest.mark.parametrize("bad, match", MALFORMED)
def test_malformed_labelstudio_json_is_one_line_naming_the_task(tmp_path, capsys, bad, match):
    good = {"id": 40, "data": {ROW_ID_KEY: 2}, "annotations": [{"completed_by": 1, "result": _choice_result(1)}]}
    with pytest.raises(ValueError, match=match):
        read_labelstudio([good, bad])
    pool_annotations = make_pool(20)
    c = Campaign.create(tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", random_seed=0)
    c.close()
    (tmp_path / "export.json").write_text(json.dumps([good, bad]))
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", str(tmp_path / "c.db"), "--labels", str(tmp_path / "export.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(match, err) and "Traceback" not in err


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"row": 1, "label": 1}\n[1, 2]\n', "line 2: must be an object"),
        ('{"row": 1, "label": [1]}\n', "line 1: 'label' must be one label"),
        ('{"row": null, "label": 1}\n', "line 1: 'row' must be a row id"),
        ('{"id": 1, "label": 1}\n', "line 1: has no 'row' field"),
    ],
)
def test_malformed_json_lines_name_the_line(tmp_path, text, match):
    (tmp_path / "b.jsonl").write_text(text)
    with pytest.raises(ValueError, match=match):
        read_jsonl(tmp_path / "b.jsonl")


def test_malformed_csv_export_names_the_record():
    frame = pd.DataFrame({ROW_ID_KEY: [1, 2], "label": ["1", '{"choices": ["0", "1"]}'], "annotator": ["a", "a"]})
    with pytest.raises(ValueError, match=r"CSV export record #2: expected exactly one choice"):
        read_labelstudio(frame)
    with pytest.raises(ValueError, match=r"no record has the choice field from_name='label'"):
        read_labelstudio(frame.rename(columns={"label": "choice"}))
    assert read_labelstudio(frame.iloc[:1].rename(columns={"label": "choice"}), from_name="choice").shape == (1, 3)


def test_json_min_records_of_unannotated_tasks_are_skipped():
    # JSON-MIN writes a task nobody annotated as a record without the choice field
    records = [
        {"id": 1, ROW_ID_KEY: 5, "label": "1", "annotator": 3, "annotation_id": 9},
        {"id": 2, ROW_ID_KEY: 6, "annotator": None, "annotation_id": None},
    ]
    assert read_labelstudio(records).to_dict("records") == [{"row": 5, "annotator": "3", "label": "1"}]
    with pytest.raises(ValueError, match="JSON-MIN export: no record has the choice field from_name='choice'"):
        read_labelstudio(records, from_name="choice")


def test_json_min_export_without_annotator_gives_each_annotation_its_identity(tmp_path, pool_annotations):
    rows = _proposed(tmp_path, pool_annotations, 10, 17)
    rng = np.random.default_rng(17)
    first = rng.integers(0, 2, 10)
    second = np.where(np.arange(10) < 3, 1 - first, first)  # the two annotators disagree on 3 rows
    # JSON-MIN: one flat record per annotation (task id, data fields, the choice), no annotator
    records = [
        {
            "id": t,
            ROW_ID_KEY: r,
            "region": pool_annotations.loc[r, "region"],
            "label": str(v),
            "annotation_id": 100 + k * 10 + t,
        }
        for k, labels in enumerate((first, second))
        for t, (r, v) in enumerate(zip(rows, labels, strict=True))
    ]
    got = read_labelstudio(records)
    assert got.groupby("row")["annotator"].nunique().eq(2).all() and got["annotator"].nunique() == 20
    (tmp_path / "min.json").write_text(json.dumps(records))
    assert main(["campaign", "ingest", "--db", str(tmp_path / "c.db"), "--labels", str(tmp_path / "min.json")]) == 0
    with Campaign.open(tmp_path / "c.db") as c:
        assert len(c.annotations()) == 20
        assert c.labels_used == 7  # hand count: the 7 rows the two annotations agree on
        assert c.labels()["label"].astype(int).to_dict() == {r: int(first[i]) for i, r in enumerate(rows) if i >= 3}
    # without annotation ids either, the position in the file names each annotation
    for rec in records:
        del rec["annotation_id"]
    named = read_labelstudio(records)["annotator"]
    assert named.tolist() == [f"annotation#{k}" for k in range(1, 21)]


def test_csv_export_listing_newest_first_is_read_oldest_first(tmp_path, pool_annotations):
    # Label Studio's CSV export lists a task's annotations newest first: a tie-breaker annotated
    # last comes first in the file, and must not count among the first two of its row
    rows = _proposed(tmp_path, pool_annotations, 40, 19)
    rng = np.random.default_rng(19)
    a = rng.integers(0, 2, 40)
    b = np.where(rng.random(40) < 0.25, 1 - a, a)
    records = []
    for i, r in enumerate(rows):
        if a[i] != b[i]:
            records.append(
                {ROW_ID_KEY: r, "label": str(a[i]), "annotator": "cy@x.org", "created_at": f"2024-01-03T00:00:{i:02d}Z"}
            )
        records.append(
            {ROW_ID_KEY: r, "label": str(b[i]), "annotator": "bo@x.org", "created_at": f"2024-01-02T00:00:{i:02d}Z"}
        )
        records.append(
            {ROW_ID_KEY: r, "label": str(a[i]), "annotator": "ana@x.org", "created_at": f"2024-01-01T00:00:{i:02d}Z"}
        )
    pd.DataFrame(records).to_csv(tmp_path / "export.csv", index=False)
    assert main(["campaign", "ingest", "--db", str(tmp_path / "c.db"), "--labels", str(tmp_path / "export.csv")]) == 0
    region = pool_annotations.loc[rows, "region"].to_numpy()
    with Campaign.open(tmp_path / "c.db") as c:
        agree = c.agreement()
        assert c.labels_used == 40
        for g in ("north", "south"):
            m = region == g
            assert agree.loc[g, "method"] == "cohen" and agree.loc[g, "rows"] == m.sum()
            assert agree.loc[g, "kappa"] == pytest.approx(cohen_kappa_score(a[m], b[m]), abs=1e-12)


def test_labelstudio_tasks_carry_the_content_columns(tmp_path):
    pool_annotations = content_pool()
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=1,
        annotation=Annotation(content=["text", "image_url"]),
    )
    batch = c.propose(6)
    tasks = json.loads(json.dumps(to_labelstudio(batch)))  # as written to the file
    assert len(tasks) == 6
    for task in tasks:
        rid = task["data"][ROW_ID_KEY]
        assert task["meta"][ROW_ID_KEY] == rid
        assert task["data"]["text"] == pool_annotations.loc[rid, "text"]
        assert task["data"]["image_url"] == pool_annotations.loc[rid, "image_url"]
        assert "pred" not in task["data"] and "stars" not in task["data"]
    c.close()
    with Campaign.open(tmp_path / "c.db") as c:  # stored in the file, not read from the pool again
        again = c.pending_batch()
        assert again["text"].tolist() == pool_annotations.loc[again.index, "text"].tolist()


def test_labelstudio_config_shows_the_content_with_the_label_choices(tmp_path):
    import xml.etree.ElementTree as ET

    pool_annotations = content_pool()
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        label_set=[0, 1, 2],
        random_seed=1,
        annotation=Annotation(content=["text", "image_url"]),
    )
    root = ET.fromstring(c.labelstudio_config())
    assert root.tag == "View"
    choices = root.findall(".//Choices")
    assert len(choices) == 1 and choices[0].get("name") == "label" and choices[0].get("choice") == "single"
    assert [ch.get("value") for ch in choices[0].findall("Choice")] == ["0", "1", "2"]
    objects = {el.get("name"): el for el in root if el.tag in ("Text", "Image")}
    assert {n: el.tag for n, el in objects.items()} == {"text": "Text", "image_url": "Image"}
    assert choices[0].get("toName") in objects  # a control names an object tag by its name
    task = to_labelstudio(c.propose(2))[0]
    for el in objects.values():  # every object reads a key of the tasks' data
        assert el.get("value").startswith("$") and el.get("value")[1:] in task["data"]
    assert "pred" not in c.labelstudio_config()
    shown = ET.fromstring(c.labelstudio_config(show_prediction=True, content_types={"image_url": "text"}))
    assert [el.get("value") for el in shown if el.tag == "Text"] == ["$text", "$image_url", "$pred"]
    c.close()


def test_an_image_column_is_told_by_its_values_or_its_name_with_urls():
    from bayeseval.campaign.labels.annotations import content_kinds

    got = content_kinds(
        {
            "photo": ["https://x.org/a", None],  # an image word and URLs
            "path": ["s/a.JPEG", "data:image/png;base64,AAA"],  # image files whatever the name
            "img_caption": ["a dog on grass"],  # an image word but not URLs: text
            "link": ["https://x.org/page"],  # URLs without an image word or suffix: text
            "empty": [None, None],
            "score": [0.5, 0.7],
        }
    )
    assert got == {
        "photo": "image",
        "path": "image",
        "img_caption": "text",
        "link": "text",
        "empty": "text",
        "score": "text",
    }
    with pytest.raises(ValueError, match="'text' or 'image'"):
        content_kinds({"photo": []}, {"photo": "video"})


def _task(tid, data_id, meta_id, label="1"):
    data = {} if data_id is None else {ROW_ID_KEY: data_id}
    meta = {} if meta_id is None else {ROW_ID_KEY: meta_id}
    return {
        "id": tid,
        "data": data,
        "meta": meta,
        "annotations": [
            {
                "id": 9,
                "completed_by": 1,
                "result": [{"from_name": "label", "to_name": "t", "type": "choices", "value": {"choices": [label]}}],
            }
        ],
    }


@pytest.mark.parametrize(
    "data_id, meta_id, row",
    [(7, 7, 7), (7, "7", 7), ("7", 7.0, "7"), (7, None, 7), (None, 7, 7), ("a", "a", "a")],
)
def test_a_task_naming_its_row_once_or_twice_alike_is_read(data_id, meta_id, row):
    assert read_labelstudio([_task(4, data_id, meta_id)])["row"].tolist() == [row]


@pytest.mark.parametrize("data_id, meta_id", [(7, 8), ("a", "b"), (7, 7.5), ("7", "07x")])
def test_a_task_whose_data_and_meta_name_different_rows_is_refused(data_id, meta_id):
    good = _task(3, 1, 1)
    with pytest.raises(
        ValueError,
        match=rf"task #2 \(id 4\): its data names row {data_id!r} but its meta row "
        rf"{re.escape(repr(meta_id))}",
    ) as err:
        read_labelstudio([good, _task(4, data_id, meta_id)])
    assert "\n" not in str(err.value)


def test_an_import_file_is_refused_as_such_and_an_empty_export_is_not():
    tasks = [{"data": {ROW_ID_KEY: r, "text": "x"}, "meta": {ROW_ID_KEY: r}} for r in (1, 2, 3)]
    with pytest.raises(
        ValueError,
        match=r"the 3 task\(s\) have no 'annotations' field: this looks like a Label "
        "Studio import file",
    ):
        read_labelstudio(tasks)
    # one task without the field among an export's tasks: named
    export = [dict(t, id=10 + i, annotations=[]) for i, t in enumerate(tasks)]
    with pytest.raises(ValueError, match=r"task #2: has no 'annotations' field, unlike the other tasks"):
        read_labelstudio([export[0], tasks[1], export[2]])
    # an export of a project nobody has labelled yet: nothing to read, each task a blank row on request
    assert read_labelstudio(export).empty
    kept = read_labelstudio(export, keep_blank=True)
    assert kept["row"].tolist() == [1, 2, 3] and kept["label"].isna().all()


def test_blank_labels_are_the_same_in_every_reader(tmp_path):
    # blank: null, empty, spaces; "0" is a label
    values = [None, "", "  ", "0", "1"]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"row": i, "label": v}) + "\n" for i, v in enumerate(values)))
    csv = pd.DataFrame({ROW_ID_KEY: range(5), "label": values, "annotator": ["a"] * 5})
    csv.to_csv(tmp_path / "e.csv", index=False)
    for read in (
        lambda **k: read_jsonl(tmp_path / "b.jsonl", **k),
        lambda **k: read_labelstudio(tmp_path / "e.csv", **k),
    ):
        assert read()["row"].astype(int).tolist() == [3, 4]
        kept = read(keep_blank=True)
        assert kept["row"].astype(int).tolist() == [3, 4, 0, 1, 2]
        assert kept["label"].isna().tolist() == [False] * 2 + [True] * 3


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_numeric_annotators_read_as_int_or_float_are_one_annotator(tmp_path, pool_annotations):
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=16,
        annotation=Annotation(annotators=2),
    )
    rows = list(c.propose(4).index)
    labels = pool_annotations.loc[rows, "truth"].to_numpy()
    r = c.ingest(
        pd.DataFrame({"row": rows, "who": [1, 1, 1, 1], "label": labels}), id_column="row", annotator_column="who"
    )
    assert r.annotations == 4
    # the same annotations from a file where the column was read as floats: a retry, not a second annotator
    again = pd.DataFrame({"row": rows, "who": [1.0, 1.0, 1.0, np.nan], "label": labels})
    with pytest.raises(ValueError, match="missing annotator"):
        c.ingest(again, id_column="row", annotator_column="who")
    r = c.ingest(again.iloc[:3], id_column="row", annotator_column="who")
    assert (r.annotations, r.unchanged) == (0, 3)
    assert c.annotations()["annotator"].tolist() == ["1"] * 4
    c.close()
