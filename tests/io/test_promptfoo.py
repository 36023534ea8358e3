"""promptfoo results: a real results.json written by promptfoo 0.118.0 (tests/io/data/promptfoo,
see its README), checked against the file parsed by hand and the suite's known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayeseval.io import read_promptfoo
from tests.io.helpers import DATA

PATH = DATA / "promptfoo" / "results.json"
RAW = json.loads(PATH.read_text())["results"]["results"]
TESTS = ["france", "math", "bio"]


def test_pass_fail_per_test_prompt_and_provider_as_in_the_file():
    records = read_promptfoo(PATH)
    frame = records.frame
    assert len(frame) == len(RAW) == 3 * 2 * 2 * 2  # tests x prompts x providers x repeats
    assert sorted(frame["model"].unique()) == ["echo", "upper"]
    assert sorted(frame["task"].unique()) == ["polite", "short"]
    by_hand = {}
    for r in RAW:
        key = (r["provider"]["label"], r["prompt"]["label"], TESTS.index(r["testCase"]["description"]))
        by_hand.setdefault(key, []).append(
            (r["testIdx"], float(r["success"]), r["score"], r["testCase"]["metadata"]["category"])
        )
    for (model, task, item), runs in by_hand.items():
        got = frame[(frame["model"] == model) & (frame["task"] == task) & (frame["item"] == item)].sort_values("epoch")
        runs.sort()
        assert got["epoch"].tolist() == [1, 2]
        assert got["outcome"].tolist() == [o for _, o, _, _ in runs]
        assert got["score"].tolist() == [s for _, _, s, _ in runs]
        assert set(got["metadata.category"]) == {runs[0][3]}
    assert records.design.cluster == "item" and records.scorers == ("score", "recall")


def test_the_suites_known_answers():
    """echo repeats the prompt, so it passes the tests whose answer is in the question; upper
    capitalises everything but 'paris', so it fails the case-sensitive contains assertions."""
    frame = read_promptfoo(PATH, item="description").frame
    passed = frame.groupby(["model", "item"])["outcome"].mean()
    assert passed[("echo", "france")] == 1 and passed[("echo", "math")] == 1 and passed[("echo", "bio")] == 0
    assert (passed["upper"] == 0).all()
    assert set(frame.loc[(frame["model"] == "upper") & (frame["item"] == "math"), "score"]) == {0.5}
    assert frame["recall"].notna().sum() == 8 and set(frame["vars.answer"]) == {"Paris", "four", "mitosis"}


def test_item_from_a_variable_errors_and_jsonl(tmp_path):
    frame = read_promptfoo(PATH, item="answer").frame
    assert sorted(frame["item"].unique()) == ["Paris", "four", "mitosis"]
    with pytest.raises(ValueError, match="item='nope': .* has no such test variable"):
        read_promptfoo(PATH, item="nope")
    lines = tmp_path / "results.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in RAW))
    assert read_promptfoo(lines).frame.equals(read_promptfoo(PATH).frame)
    # an error (failureReason 2) is not a failed answer: no outcome
    broken = [dict(RAW[0], success=False, failureReason=2, error="timeout", score=0)]
    (tmp_path / "err.json").write_text(json.dumps({"results": {"results": broken}}))
    assert np.isnan(read_promptfoo(tmp_path / "err.json").frame["outcome"].iloc[0])
    (tmp_path / "other.json").write_text(json.dumps({"samples": []}))
    with pytest.raises(ValueError, match="is not a promptfoo results file"):
        read_promptfoo(tmp_path / "other.json")
    (tmp_path / "nosuccess.json").write_text(json.dumps({"results": {"results": [dict(RAW[0], success=None)]}}))
    with pytest.raises(ValueError, match="has no pass/fail 'success' value"):
        read_promptfoo(tmp_path / "nosuccess.json")
    two = [dict(RAW[0]), dict(RAW[0], testCase=dict(RAW[0]["testCase"], description="other"))]
    (tmp_path / "clash.json").write_text(json.dumps({"results": {"results": two}}))
    with pytest.raises(ValueError, match="item='answer': two different tests have the item 'Paris'"):
        read_promptfoo(tmp_path / "clash.json", item="answer")
    with pytest.raises(ValueError, match="path: no file"):
        read_promptfoo(tmp_path / "none.json")
    with pytest.raises(TypeError, match="path: expected the path"):
        read_promptfoo(3)
