"""join_labels: human labels from CSV, JSON Lines, a mapping and Label Studio exports, joined by
id onto a real Inspect frame; checked against pandas' own left merge."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval.io import EvalRecords, join_labels, read_inspect
from tests.io.helpers import DATA

RECORDS = read_inspect([DATA / "inspect_model-a.eval", DATA / "inspect_model-b.json"])
FRAME = RECORDS.frame


def _merged(labels: pd.DataFrame, on, value):
    """The expected column, by pandas: a left merge, then the label read as a number."""
    merged = FRAME[on if isinstance(on, list) else [on]].merge(labels, on=on, how="left")
    return merged["label"].map(value).astype(float).to_numpy()


def test_csv_labels_per_item_go_onto_every_model_and_epoch(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("item,label\n0,1\n2,0\n5,1\n")
    out = join_labels(RECORDS, path)
    assert isinstance(out, EvalRecords) and out.design == RECORDS.design
    expected = _merged(pd.DataFrame({"item": [0, 2, 5], "label": [1, 0, 1]}), "item", float)
    np.testing.assert_array_equal(out.frame["human"].to_numpy(), expected)
    assert out.frame["human"].notna().sum() == 3 * 2 * 3  # 3 items x 2 models x 3 epochs
    assert "human" not in FRAME.columns  # the input is left as it was


def test_jsonl_labels_per_answer_and_the_label_vocabulary(tmp_path):
    rows = [
        {"model": "mockllm/model-a", "item": 1, "epoch": 2, "verdict": "PASS"},
        {"model": "mockllm/model-b", "item": 1, "epoch": 2, "verdict": "incorrect"},
        {"model": "mockllm/model-b", "item": 3, "epoch": 1, "verdict": "P"},
        {"model": "mockllm/model-a", "item": 4, "epoch": 3, "verdict": None},
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    on = ["model", "item", "epoch"]
    got = join_labels(FRAME, path, on=on, column="verdict", name="expert")
    assert isinstance(got, pd.DataFrame)
    table = pd.DataFrame(rows).rename(columns={"verdict": "label"})
    expected = _merged(table, on, {"PASS": 1.0, "incorrect": 0.0, "P": 0.5}.get)
    np.testing.assert_array_equal(got["expert"].to_numpy(), expected)
    assert got["expert"].notna().sum() == 3


def test_mapping_and_dataframe_labels_match_ids_by_text():
    got = join_labels(FRAME, {"0": "yes", 1.0: False, "3": 0.25})
    expected = _merged(pd.DataFrame({"item": [0, 1, 3], "label": [1.0, 0.0, 0.25]}), "item", float)
    np.testing.assert_array_equal(got["human"].to_numpy(), expected)
    frame = pd.DataFrame({"item": ["s-1", "s-2", "s-3"], "outcome": [1.0, 0.0, 1.0]})
    got = join_labels(frame, pd.DataFrame({"item": ["s-3"], "label": ["Correct"]}))
    np.testing.assert_array_equal(got["human"], [np.nan, np.nan, 1.0])


def _task(item, *choices, cancelled=False):
    anns = [
        {
            "completed_by": k,
            "was_cancelled": cancelled,
            "result": [{"from_name": "verdict", "to_name": "text", "type": "choices", "value": {"choices": [c]}}],
        }
        for k, c in enumerate(choices)
    ]
    return {"id": 100 + item, "data": {"item": item, "text": f"answer {item}"}, "annotations": anns}


def test_label_studio_json_export(tmp_path):
    tasks = [_task(0, "C"), _task(1, "I", "I"), _task(2), _task(3, "C", cancelled=True), _task(4, "fail")]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    got = join_labels(FRAME, path)
    expected = _merged(pd.DataFrame({"item": [0, 1, 4], "label": [1.0, 0.0, 0.0]}), "item", float)
    np.testing.assert_array_equal(got["human"].to_numpy(), expected)
    with pytest.raises(ValueError, match=r"labels: task #1 \(id 100\) has annotations that disagree"):
        join_labels(FRAME, [_task(0, "C", "I")])
    with pytest.raises(ValueError, match="labels: task #1 has no 'item' in its data"):
        join_labels(FRAME, [{"data": {"id": 0}, "annotations": []}])
    # JSON-MIN: flat records, the choice under the control's name
    got = join_labels(
        FRAME, [{"item": 2, "verdict": "C"}, {"item": 5, "verdict": {"choices": ["I"]}}], column="verdict"
    )
    expected = _merged(pd.DataFrame({"item": [2, 5], "label": [1.0, 0.0]}), "item", float)
    np.testing.assert_array_equal(got["human"].to_numpy(), expected)


def test_errors_name_the_argument(tmp_path):
    with pytest.raises(ValueError, match=r"labels: 2 labelled ids are not in frame's 'item' column, e.g. \['9', 'x'\]"):
        join_labels(FRAME, {9: 1, "x": 0, 0: 1})
    path = tmp_path / "dup.csv"
    path.write_text("item,label\n1,1\n1.0,0\n")
    with pytest.raises(ValueError, match="labels: the id '1' is labelled more than once"):
        join_labels(FRAME, path)
    with pytest.raises(ValueError, match=r"labels: id '1': a label must be in \[0, 1\], got 2"):
        join_labels(FRAME, {1: 2})
    with pytest.raises(ValueError, match="cannot read the score value 'maybe'"):
        join_labels(FRAME, {1: "maybe"})
    with pytest.raises(ValueError, match="on='row': 'row' is not a column of frame"):
        join_labels(FRAME, {1: 1}, on="row")
    with pytest.raises(ValueError, match="labels: has no id column 'item'"):
        join_labels(FRAME, pd.DataFrame({"id": [1], "label": [1]}))
    with pytest.raises(ValueError, match="column='grade' is not a column of labels"):
        join_labels(FRAME, pd.DataFrame({"item": [1], "label": [1]}), column="grade")
    with pytest.raises(ValueError, match="name='outcome': must be a new column name"):
        join_labels(FRAME, {1: 1}, name="outcome")
    with pytest.raises(TypeError, match="frame: expected a reader's result or a DataFrame"):
        join_labels([1, 2], {1: 1})
    with pytest.raises(TypeError, match="labels: expected a DataFrame"):
        join_labels(FRAME, 3)
    with pytest.raises(ValueError, match="labels: no file"):
        join_labels(FRAME, tmp_path / "none.csv")
    ambiguous = pd.DataFrame({"item": [1, "1"], "outcome": [1.0, 0.0]})
    with pytest.raises(ValueError, match="frame: the ids .* read as the same text"):
        join_labels(ambiguous, {1: 1})


def test_selected_by_gives_each_row_its_cells_share_of_labels_and_the_design():
    """A calibration set drawn by the verdict: the inclusion of a row is labelled / rows of its cell."""
    rows = FRAME[(FRAME["model"] == FRAME["model"].iloc[0]) & (FRAME["epoch"] == 1)].reset_index(drop=True)
    records = EvalRecords(rows, RECORDS.design, "match", ("match",))
    passed = rows.loc[rows["match"] == 1, "item"].tolist()
    failed = rows.loc[rows["match"] == 0, "item"].tolist()
    labels = {passed[0]: 1, failed[0]: 0, failed[1]: 1}
    out = join_labels(records, labels, selected_by="match")
    expected = rows["match"].map({1.0: 1 / len(passed), 0.0: 2 / len(failed)})
    np.testing.assert_allclose(out.frame["inclusion"], expected)
    assert out.design.inclusion == "inclusion" and out.design.cluster == RECORDS.design.cluster
    by_cells = join_labels(rows, labels, selected_by=["match", "metadata.category"])["inclusion"]
    cell = rows.groupby(["match", "metadata.category"])["item"].transform(lambda s: s.isin(labels).mean())
    np.testing.assert_allclose(by_cells, cell.where(cell > 0))


def test_explicit_inclusion_probabilities_come_from_the_labels_table(tmp_path):
    path = tmp_path / "labels.csv"
    pd.DataFrame({"item": [0, 3], "label": ["C", "I"], "p": [0.25, 0.5]}).to_csv(path, index=False)
    out = join_labels(RECORDS, path, inclusion="p")
    expected = FRAME["item"].map({0: 0.25, 3: 0.5}).astype(float)
    np.testing.assert_allclose(out.frame["inclusion"], expected)
    assert out.design.inclusion == "inclusion"
    with pytest.raises(ValueError, match=r"inclusion probability \(column 'label'\) must be in \(0, 1\]"):
        join_labels(RECORDS, path, inclusion="label")
    with pytest.raises(ValueError, match="selected_by and inclusion"):
        join_labels(RECORDS, path, inclusion="p", selected_by="match")
    with pytest.raises(ValueError, match="selected_by=.*'nope' is not a column of frame"):
        join_labels(RECORDS, path, selected_by="nope")


def test_selected_by_on_records_in_units_reads_each_item_by_its_majority_verdict():
    """With epochs the items were drawn: an item's cell is its answers' majority verdict (a tie a pass)
    and its probability the share of labelled items in that cell, on every answer of the item."""
    from bayeseval import Design

    verdicts = {1: [1, 1, 0], 2: [0, 0, 1], 3: [1, 0, 0], 4: [1, 0, 1], 5: [0, 0, 0], 6: [1, 1, 1]}
    rows = pd.DataFrame(
        [
            {"model": "m", "task": "t", "item": i, "epoch": e + 1, "outcome": float(v)}
            for i, vs in verdicts.items()
            for e, v in enumerate(vs)
        ]
    )
    records = EvalRecords(rows, Design(cluster="item"), "outcome", ("outcome",))
    labels = {1: 1, 2: 0, 5: 0}  # items 1, 4, 6 pass by majority (1 labelled of 3); 2, 3, 5 fail (2 of 3)
    out = join_labels(records, labels, selected_by="outcome")
    majority = {i: float(np.mean(vs) >= 0.5) for i, vs in verdicts.items()}
    share = {1.0: 1 / 3, 0.0: 2 / 3}
    np.testing.assert_allclose(out.frame["inclusion"], rows["item"].map(lambda i: share[majority[i]]))
    assert out.design == Design(cluster="item", inclusion="inclusion")
    # read as rows (no cluster), the answers' own verdicts would give other shares
    as_rows = join_labels(rows, labels, selected_by="outcome")["inclusion"]
    assert not np.allclose(as_rows, out.frame["inclusion"])
    mixed = rows.assign(source=["a", "b", "a"] * 6)
    with pytest.raises(ValueError, match="takes several values within a unit"):
        join_labels(EvalRecords(mixed, Design(cluster="item"), "outcome", ("outcome",)), labels, selected_by="source")
