"""Inspect logs: real ``.eval`` and ``.json`` logs written by Inspect (tests/io/data, and fresh
ones when Inspect is installed), checked against the task's known scores and Inspect's own reader."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from bayeseval.io import read_inspect
from tests.io.helpers import CATEGORIES, DATA, GRADES, LONG_NOTE, quality

LOGS = [DATA / "inspect_model-a.eval", DATA / "inspect_model-b.json"]
GRADE_VALUE = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}


def test_both_formats_give_ids_epochs_scores_and_metadata_of_the_task():
    records = read_inspect(LOGS)
    frame = records.frame
    assert list(frame.columns[:5]) == ["model", "task", "item", "epoch", "outcome"]
    assert sorted(frame["model"].unique()) == ["mockllm/model-a", "mockllm/model-b"]
    assert len(frame) == 2 * 6 * 3
    for _, row in frame.iterrows():
        i, e = row["item"], row["epoch"]
        assert row["grade"] == GRADE_VALUE[GRADES[(i + e) % 4]]
        assert row["quality_scorer"] == quality(i, e)
        assert row["parts.style"] == GRADE_VALUE[GRADES[i % 4]] and row["parts.length"] == 0.25
        assert row["metadata.category"] == CATEGORIES[i % 3]
        assert row["metadata.source.year"] == 2020 + i % 2
    # the outcome is the first scorer (match: C/I)
    assert records.outcome == "match" and frame["outcome"].equals(frame["match"])
    assert set(frame["outcome"]) <= {0.0, 1.0}
    assert records.scorers == ("match", "grade", "quality_scorer", "parts.style", "parts.length")


def test_epochs_imply_the_item_as_unit():
    frame, design = read_inspect(LOGS[0])
    assert design.cluster == "item" and design.inclusion is None and design.population == "process"
    assert frame.groupby("item")["epoch"].apply(sorted).tolist() == [[1, 2, 3]] * 6


def test_a_metadata_field_cut_in_the_summary_is_read_from_the_sample():
    frame = read_inspect(LOGS).frame
    notes = frame.loc[frame["item"] == 0, "metadata.note"]
    assert len(notes) == 6 and (notes == LONG_NOTE).all()


def test_scorer_chooses_the_outcome_and_must_lie_in_unit_interval(tmp_path):
    frame = read_inspect(LOGS, scorer="grade").frame
    assert frame["outcome"].equals(frame["grade"])
    assert read_inspect(LOGS, scorer="parts.style").outcome == "parts.style"
    with pytest.raises(ValueError, match="scorer='nope' is not a scorer of the logs"):
        read_inspect(LOGS, scorer="nope")
    log = {
        "eval": {"task": "t", "model": "m", "scorers": [{"name": "stars"}]},
        "samples": [{"id": 1, "epoch": 1, "scores": {"stars": {"value": 4}}}],
    }
    path = tmp_path / "stars.json"
    path.write_text(json.dumps(log))
    with pytest.raises(ValueError, match=r"scorer='stars'.*must be in \[0, 1\], got 4"):
        read_inspect(path)


def _json_log(tmp_path, name, samples, model="m"):
    path = tmp_path / name
    path.write_text(json.dumps({"eval": {"task": "t", "model": model, "scorers": [{"name": "s"}]}, "samples": samples}))
    return path


def test_score_values_are_mapped_as_inspect_maps_them(tmp_path):
    values = ["C", "P", "I", "N", 0.75, True, "yes", "False", "0.25", None]
    samples = [{"id": k, "epoch": 1, "scores": {"s": {"value": v}}} for k, v in enumerate(values)]
    frame = read_inspect(_json_log(tmp_path, "v.json", samples)).frame
    np.testing.assert_array_equal(frame["outcome"], [1, 0.5, 0, 0, 0.75, 1, 1, 0, 0.25, np.nan])
    bad = _json_log(tmp_path, "bad.json", [{"id": "q7", "epoch": 1, "scores": {"s": {"value": "maybe"}}}])
    with pytest.raises(ValueError, match="sample 'q7' epoch 1 scorer 's': cannot read the score value 'maybe'"):
        read_inspect(bad)
    listed = _json_log(tmp_path, "list.json", [{"id": 1, "epoch": 1, "scores": {"s": {"value": [1, 0]}}}])
    with pytest.raises(ValueError, match=r"cannot read the score value \[1, 0\]"):
        read_inspect(listed)


def test_one_answer_in_two_logs_and_files_that_are_not_logs(tmp_path):
    samples = [{"id": 1, "epoch": 1, "scores": {"s": {"value": "C"}}}]
    one, two = _json_log(tmp_path, "a.json", samples), _json_log(tmp_path, "b.json", samples)
    with pytest.raises(ValueError, match="logs: the same answer appears twice"):
        read_inspect([one, two])
    other = _json_log(tmp_path, "c.json", samples, model="other")
    assert read_inspect([one, other]).design.cluster is None
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ValueError, match="logs: .*x.txt' is neither an .eval nor a .json"):
        read_inspect(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="logs: no file"):
        read_inspect(tmp_path / "missing.eval")
    (tmp_path / "broken.eval").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is not a readable .eval archive"):
        read_inspect(tmp_path / "broken.eval")
    (tmp_path / "spec.json").write_text(json.dumps({"samples": []}))
    with pytest.raises(ValueError, match="is not an Inspect log"):
        read_inspect(tmp_path / "spec.json")
    with pytest.raises(TypeError, match="logs: expected paths"):
        read_inspect([3])


def test_a_cut_summary_reads_only_its_own_sample_member(monkeypatch):
    """Large logs: restoring a cut field opens the cut samples' members, not every member."""
    from bayeseval.io import inspect_logs

    opened = []
    original = inspect_logs._Archive.json

    def spy(self, name):
        opened.append(name)
        return original(self, name)

    monkeypatch.setattr(inspect_logs._Archive, "json", spy)
    read_inspect(LOGS[0])
    samples = sorted(n for n in opened if n.startswith("samples/"))
    assert samples == [f"samples/0_epoch_{e}.json" for e in (1, 2, 3)]


def test_a_cut_summary_is_restored_when_sample_members_have_other_names(tmp_path):
    """An archive whose sample members are not named ``<id>_epoch_<epoch>`` is indexed by content."""
    from bayeseval.io.inspect_logs import _Archive

    target = tmp_path / "renamed.eval"
    archive = _Archive(LOGS[0])
    with zipfile.ZipFile(LOGS[0]) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for k, name in enumerate(src.namelist()):
            out = f"samples/s{k}.json" if name.startswith("samples/") else name
            dst.writestr(out, json.dumps(archive.json(name)))
    archive.close()
    frame = read_inspect(target).frame
    notes = frame.loc[frame["item"] == 0, "metadata.note"]
    assert len(notes) == 3 and (notes == LONG_NOTE).all()


def test_members_are_zstd_compressed_in_the_fixture():
    """The fixture exercises the Zstandard path, which zipfile cannot read before Python 3.14."""
    with zipfile.ZipFile(LOGS[0]) as z:
        assert {i.compress_type for i in z.infolist()} == {93}


def test_a_log_without_summaries_is_read_from_its_samples(tmp_path):
    """Old logs (and logs of interrupted runs) have no summaries.json: the sample members count."""
    target = tmp_path / "old.eval"
    with zipfile.ZipFile(LOGS[0]) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        reference = read_inspect(LOGS[0]).frame
        from bayeseval.io.inspect_logs import _Archive

        archive = _Archive(LOGS[0])
        for name in src.namelist():
            if name != "summaries.json" and not name.startswith("_journal/summaries"):
                dst.writestr(name, json.dumps(archive.json(name)))
        archive.close()
    got = read_inspect(target).frame
    key = ["item", "epoch"]
    pd.testing.assert_frame_equal(
        got.sort_values(key).reset_index(drop=True), reference.sort_values(key).reset_index(drop=True)
    )


# -- against Inspect's own reader ------------------------------------------------------------


def _inspect_frame(paths):
    """The frame built independently from ``inspect_ai.log.read_eval_log``."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    rows = []
    for path in paths:
        log = read_eval_log(str(path))
        for s in log.samples:
            row = {"model": log.eval.model, "task": log.eval.task, "item": s.id, "epoch": s.epoch}
            for name, score in s.scores.items():
                if isinstance(score.value, dict):
                    row.update({f"{name}.{k}": to_float(v) for k, v in score.value.items()})
                else:
                    row[name] = to_float(score.value)
            row.update(pd.json_normalize({"metadata": s.metadata}, sep=".").iloc[0].to_dict())
            rows.append(row)
    return pd.DataFrame(rows)


def _same(ours, theirs):
    key = ["model", "task", "item", "epoch"]
    theirs = theirs[[c for c in ours.columns if c != "outcome"]]
    ours = ours.drop(columns="outcome").sort_values(key).reset_index(drop=True)
    theirs = theirs.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, theirs, check_dtype=False)


@pytest.mark.slow  # importing Inspect takes several seconds
def test_frame_equals_the_one_from_inspects_reader():
    pytest.importorskip("inspect_ai")
    records = read_inspect(LOGS)
    _same(records.frame, _inspect_frame(LOGS))


@pytest.mark.slow  # runs Inspect three times
def test_fresh_logs_of_the_installed_inspect_equal_its_reader(tmp_path):
    """Logs written now by the installed Inspect (its current format), several models at once."""
    pytest.importorskip("inspect_ai")
    from tests.io.helpers import write_inspect_logs

    paths = write_inspect_logs(tmp_path, models=("x", "y", "z"), formats=("eval", "json", "eval"), n=4, epochs=2)
    records = read_inspect(paths)
    assert len(records.frame) == 3 * 4 * 2
    _same(records.frame, _inspect_frame(paths))


def test_the_io_package_imports_only_the_api_layer():
    from tests.meta.helpers import package_imports

    targets = {
        target.split(".")[1] if target != "bayeseval.counts.design" else target
        for importer, target, _n, _l in package_imports()
        if importer.startswith("bayeseval.io") and target.startswith("bayeseval.")
    }
    # the readers return the design object, a value with no dependency on counting
    assert targets <= {"_api", "io", "bayeseval.counts.design"}
