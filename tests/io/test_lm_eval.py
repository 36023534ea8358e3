"""lm-eval ``--log_samples`` files: real files written by lm-eval 0.4.13's dummy model
(tests/io/data/lm_eval, see its README), checked against the files parsed by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval.io import read_lm_eval
from tests.io.helpers import DATA

RUNS = DATA / "lm_eval"
MODELS = sorted(p.name for p in RUNS.iterdir() if p.is_dir() and p.name != "tasks")


def _file(model, task):
    return next((RUNS / model).glob(f"samples_{task}_*.jsonl"))


def _by_hand(model, task, metric, filter):
    raw = pd.read_json(_file(model, task), lines=True)
    raw = raw[raw["filter"] == filter].sort_values("doc_id")
    return raw["doc_id"].tolist(), raw[metric].astype(float).tolist(), raw["doc"].str["category"].tolist()


def test_multiple_choice_file_gives_doc_ids_the_chosen_metric_and_the_documents_fields():
    records = read_lm_eval(_file(MODELS[0], "toy_mc"), metric="acc")
    frame = records.frame
    ids, acc, categories = _by_hand(MODELS[0], "toy_mc", "acc", "none")
    assert frame["item"].tolist() == ids and frame["outcome"].tolist() == acc
    assert frame["metadata.category"].tolist() == categories
    assert frame["acc_norm"].tolist() == _by_hand(MODELS[0], "toy_mc", "acc_norm", "none")[1]
    results = json.loads(next((RUNS / MODELS[0]).glob("results_*.json")).read_text())
    assert set(frame["model"]) == {results["model_name"]} and set(frame["task"]) == {"toy_mc"}
    assert set(frame["epoch"]) == {1} and records.design.cluster is None
    assert records.scorers == ("acc", "acc_norm") and records.outcome == "acc"


def test_the_filter_chooses_the_rows_of_a_generation_task():
    for filter in ("strict", "upper"):
        frame = read_lm_eval(_file(MODELS[1], "toy_gen"), filter=filter).frame
        ids, em, _ = _by_hand(MODELS[1], "toy_gen", "exact_match", filter)
        assert frame["item"].tolist() == ids and frame["outcome"].tolist() == em
    # the dummy model answers "lol": exact match on the strict filter where the target is "lol"
    frame = read_lm_eval(_file(MODELS[1], "toy_gen"), filter="strict").frame
    np.testing.assert_array_equal(frame["outcome"], (frame["metadata.gold"] == "lol").astype(float))
    with pytest.raises(ValueError, match=r"filter: .* has the filters \['strict', 'upper'\]; pass filter="):
        read_lm_eval(_file(MODELS[1], "toy_gen"))
    with pytest.raises(ValueError, match="filter='none' is not in"):
        read_lm_eval(_file(MODELS[1], "toy_gen"), filter="none")


def test_several_runs_and_tasks_at_once_with_a_metric_and_filter_per_task():
    records = read_lm_eval(RUNS, metric={"toy_mc": "acc", "toy_gen": "exact_match"}, filter={"toy_gen": "strict"})
    frame = records.frame
    assert sorted(frame["model"].unique()) == MODELS and len(frame) == 2 * 2 * 8
    for model in MODELS:
        mc = frame[(frame["model"] == model) & (frame["task"] == "toy_mc")].sort_values("item")
        assert mc["outcome"].tolist() == _by_hand(model, "toy_mc", "acc", "none")[1]
        gen = frame[(frame["model"] == model) & (frame["task"] == "toy_gen")].sort_values("item")
        assert gen["outcome"].tolist() == _by_hand(model, "toy_gen", "exact_match", "strict")[1]
    assert records.outcome in ("acc / exact_match", "exact_match / acc")
    with pytest.raises(ValueError, match=r"metric: .* has the metrics \['acc', 'acc_norm'\]"):
        read_lm_eval(RUNS, filter={"toy_gen": "strict"})


def test_bad_files_and_choices_name_the_argument(tmp_path):
    path = tmp_path / "samples_t_2024-01-01T00-00-00.000001.jsonl"
    path.write_text(json.dumps({"doc_id": 0, "filter": "none", "metrics": ["perplexity"], "perplexity": 3.5}) + "\n")
    with pytest.raises(ValueError, match=r"metric='perplexity': the outcome must be in \[0, 1\], got 3.5"):
        read_lm_eval(path)
    with pytest.raises(ValueError, match="metric='acc' is not in"):
        read_lm_eval(path, metric="acc")
    path.write_text(json.dumps({"doc_id": 0, "filter": "none", "metrics": ["bleu"], "bleu": ["ref", "pred"]}) + "\n")
    with pytest.raises(ValueError, match="metric='bleu': document 0 .* has no per-document value"):
        read_lm_eval(path)
    path.write_text('{"doc_id": 0}\nnot json\n')
    with pytest.raises(ValueError, match="files: .* line 2 is not JSON"):
        read_lm_eval(path)
    path.write_text('{"id": 0}\n')
    with pytest.raises(ValueError, match="line 1 has no 'doc_id'"):
        read_lm_eval(path)
    with pytest.raises(ValueError, match="files: no file"):
        read_lm_eval(tmp_path / "nope.jsonl")
    with pytest.raises(TypeError, match="model: expected a model name"):
        read_lm_eval(_file(MODELS[0], "toy_mc"), metric="acc", model=3)
    twice = [_file(MODELS[0], "toy_mc"), _file(MODELS[0], "toy_mc")]
    with pytest.raises(ValueError, match="files: the same answer appears twice"):
        read_lm_eval(twice, metric="acc")
    assert set(read_lm_eval(twice[0], metric="acc", model="mine").frame["model"]) == {"mine"}
