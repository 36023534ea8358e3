"""``bayeseval compare --selected-by MODEL``: a calibration set chosen by one model's judge verdict.

Reference: the ``--inclusion`` route, with each item's probability of having been labelled
written as a column by the test from the draw itself (``k / passed`` or ``k / failed`` in its
stratum); both routes must print the same text and the same JSON.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval.cli.main import main

MODELS = ("a", "b", "c")


def _answers(chooser: str, seed: int = 0, items: int = 60, per_side: int = 8) -> pd.DataFrame:
    """Three models judged on every item of 3 categories; in each category ``per_side`` items the judge
    passed for ``chooser`` and ``per_side`` it failed get a human label on every model's answer; the
    column ``p`` holds each item's inclusion probability of that draw."""
    rng = np.random.default_rng(seed)
    parts = []
    for s, category in enumerate(("x", "y", "z")):
        truth = {m: (rng.random(items) < 0.6 + 0.1 * k).astype(float) for k, m in enumerate(MODELS)}
        judge = {m: np.where(rng.random(items) < 0.85 - 0.05 * s, h, 1 - h) for m, h in truth.items()}
        passed, failed = np.flatnonzero(judge[chooser] == 1), np.flatnonzero(judge[chooser] == 0)
        chosen = np.concatenate(
            [rng.choice(passed, per_side, replace=False), rng.choice(failed, per_side, replace=False)]
        )
        labelled = np.isin(np.arange(items), chosen)
        p = np.where(judge[chooser] == 1, per_side / passed.size, per_side / failed.size)
        for m in MODELS:
            parts.append(
                pd.DataFrame(
                    {
                        "model": m,
                        "item": [f"{category}{i}" for i in range(items)],
                        "category": category,
                        "outcome": judge[m],
                        "human": np.where(labelled, truth[m], np.nan),
                        "inclusion": p,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def _run(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


@pytest.mark.parametrize("chooser", ["a", "b"])
def test_selected_by_prints_what_the_inclusion_column_prints(tmp_path, capsys, chooser):
    data = _answers(chooser)
    with_p, without_p = tmp_path / "with_p.csv", tmp_path / "answers.csv"
    data.to_csv(with_p, index=False)
    data.drop(columns="inclusion").to_csv(without_p, index=False)
    base = ["--strata", "category", "--human", "human"]
    for extra in ([], ["--json", "--reference", "c", "--adjust", "none"]):
        code_p, by_column = _run(capsys, ["compare", str(with_p), *base, *extra, "--inclusion", "inclusion"])
        code_s, by_model = _run(capsys, ["compare", str(without_p), *base, *extra, "--selected-by", chooser])
        assert code_p == code_s == 0
        assert by_model == by_column
    # the other model's verdicts give other probabilities, hence other estimates (the draw matters)
    other = "b" if chooser == "a" else "a"
    _, wrong = _run(capsys, ["compare", str(without_p), *base, "--json", "--selected-by", other])
    _, right = _run(capsys, ["compare", str(without_p), *base, "--json", "--selected-by", chooser])
    got = pd.DataFrame(json.loads(wrong)["differences"])["estimate"]
    expected = pd.DataFrame(json.loads(right)["differences"])["estimate"]
    assert not np.allclose(got, expected)


@pytest.mark.parametrize(
    ("extra", "drop", "message"),
    [
        (["--human", "human", "--selected-by", "judge"], True, "--selected-by 'judge' is not a model of"),
        (["--selected-by", "a"], True, "give --human or --labels too"),
        (["--human", "human", "--selected-by", "a", "--inclusion", "inclusion"], False, "not both"),
        (["--human", "human", "--selected-by", "a"], False, "writes the column 'inclusion'"),
    ],
)
def test_selected_by_refusals_name_the_option(tmp_path, capsys, extra, drop, message):
    data = _answers("a", seed=2)
    path = tmp_path / "answers.csv"
    (data.drop(columns="inclusion") if drop else data).to_csv(path, index=False)
    assert main(["compare", str(path), "--strata", "category", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err
    if "is not a model" in message:
        assert "models are ['a', 'b', 'c']" in err


def test_selected_by_refuses_labels_outside_the_named_model_s_labelled_cells(tmp_path, capsys):
    # model b's answer to an item labelled where model a has no label in the item's verdict cell
    data = _answers("a", seed=3).drop(columns="inclusion")
    a_rows = data["model"] == "a"
    cell = a_rows & (data["category"] == "x") & (data["outcome"] == 1)
    data.loc[cell, "human"] = np.nan
    item = data.loc[cell, "item"].iloc[0]
    data.loc[(data["model"] == "b") & (data["item"] == item), "human"] = 1.0
    path = tmp_path / "answers.csv"
    data.to_csv(path, index=False)
    assert main(["compare", str(path), "--strata", "category", "--human", "human", "--selected-by", "a"]) == 2
    assert "none of its answers is labelled" in capsys.readouterr().err


def test_selected_by_on_inspect_logs_with_a_labels_file(tmp_path, capsys):
    """Two Inspect logs (epoch 1) and a labels file: --selected-by gives the intervals of a data file
    whose inclusion column holds, by hand, each verdict's share of model a's labelled items."""
    from bayeseval.io import read_inspect

    logs = ["tests/io/data/inspect_model-a.eval", "tests/io/data/inspect_model-b.json"]
    frame = read_inspect(logs).frame
    frame = frame[frame["epoch"] == 1].drop(columns=["metadata.note"]).astype({"item": str})
    items = sorted(frame["item"].unique())[:4]
    labels = pd.DataFrame(
        [(m, i, (k + j) % 2) for j, m in enumerate(sorted(frame["model"].unique())) for k, i in enumerate(items)],
        columns=["model", "item", "label"],
    )
    labels_path = tmp_path / "labels.csv"
    labels.to_csv(labels_path, index=False)
    argv = ["compare", "--inspect", *logs, "--epoch", "1", "--labels", str(labels_path), "--json"]
    code, printed = _run(capsys, [*argv, "--selected-by", "mockllm/model-a"])
    assert code == 0
    got = pd.DataFrame(json.loads(printed)["differences"])
    a = frame[frame["model"] == "mockllm/model-a"]
    share = {v: a.loc[a["outcome"] == v, "item"].isin(items).mean() for v in (0.0, 1.0)}
    data = frame.merge(labels.rename(columns={"label": "human"}), on=["model", "item"], how="left")
    data["inclusion"] = data["item"].map(a.set_index("item")["outcome"].map(share))
    path = tmp_path / "answers.csv"
    data.to_csv(path, index=False)
    code, printed = _run(
        capsys, ["compare", str(path), "--item", "task,item", "--human", "human", "--json", "--inclusion", "inclusion"]
    )
    assert code == 0
    expected = pd.DataFrame(json.loads(printed)["differences"])
    assert got["labelled"].tolist() == expected["labelled"].tolist() == [4]
    np.testing.assert_allclose(got[["estimate", "lower", "upper"]], expected[["estimate", "lower", "upper"]])
    assert main([*argv, "--selected-by", "nope"]) == 2
    assert "models are ['mockllm/model-a', 'mockllm/model-b']" in capsys.readouterr().err


def test_selected_by_on_inspect_logs_with_epochs_reads_each_items_majority_verdict(tmp_path, capsys):
    """Two Inspect logs of 3 epochs: --selected-by's probabilities are the shares of model a's items labelled
    per majority verdict (items 0 and 3 pass, both labelled: 1; 1, 2, 4, 5 fail, two labelled: 1/2), and the
    comparison equals that of a data file holding them, the item the unit."""
    from bayeseval.io import read_inspect

    logs = ["tests/io/data/inspect_model-a.eval", "tests/io/data/inspect_model-b.json"]
    frame = read_inspect(logs).frame.drop(columns=["metadata.note"]).astype({"item": str})
    assert frame["epoch"].nunique() == 3
    items = ["0", "1", "2", "3"]
    labels = pd.DataFrame(
        [(m, i, (k + j) % 2) for j, m in enumerate(sorted(frame["model"].unique())) for k, i in enumerate(items)],
        columns=["model", "item", "label"],
    )
    labels_path = tmp_path / "labels.csv"
    labels.to_csv(labels_path, index=False)
    argv = ["compare", "--inspect", *logs, "--labels", str(labels_path), "--json"]
    code, printed = _run(capsys, [*argv, "--selected-by", "mockllm/model-a"])
    assert code == 0
    got = pd.DataFrame(json.loads(printed)["differences"])
    data = frame.merge(labels.rename(columns={"label": "human"}), on=["model", "item"], how="left")
    data["inclusion"] = np.where(data["item"].isin(["0", "3"]), 1.0, 0.5)
    path = tmp_path / "answers.csv"
    data.to_csv(path, index=False)
    code, printed = _run(
        capsys, ["compare", str(path), "--item", "task,item", "--human", "human", "--json", "--inclusion", "inclusion"]
    )
    assert code == 0
    expected = pd.DataFrame(json.loads(printed)["differences"])
    assert got["labelled"].tolist() == expected["labelled"].tolist() == [4]
    np.testing.assert_allclose(got[["estimate", "lower", "upper"]], expected[["estimate", "lower", "upper"]])
