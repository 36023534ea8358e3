"""``bayeseval gate --method adaptive``: the command line offers every per-stratum method."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval._kernels.binomial import STRATA_METHODS
from bayeseval.cli import main as cli
from bayeseval.estimate.intervals import proportion_ci


def test_gate_methods_of_the_parser_are_the_strata_methods() -> None:
    assert cli.STRATA_METHODS == STRATA_METHODS


@pytest.fixture()
def csv_path(tmp_path):
    rng = np.random.default_rng(4)
    sizes = {"a": 40, "b": 60, "c": 50, "d": 30, "e": 80, "f": 25}
    groups = np.repeat(list(sizes), list(sizes.values()))
    pred = (rng.random(groups.size) > 0.1).astype(int)
    pred[groups == "f"] = (rng.random(25) > 0.5).astype(int)  # an outlying stratum
    path = tmp_path / "preds.csv"
    pd.DataFrame({"g": groups, "y": 1, "p": pred}).to_csv(path, index=False)
    return path, groups, pred


def test_gate_adaptive_on_the_command_line_matches_proportion_ci(csv_path, capsys) -> None:
    path, groups, pred = csv_path
    code = cli.main(["gate", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g",
                     "--metric", "recall", "--max-halfwidth", "0.12", "--method", "adaptive", "--json"])
    out = json.loads(capsys.readouterr().out)
    keys = sorted(set(groups))
    s = np.array([pred[groups == k].sum() for k in keys])
    n = np.array([(groups == k).sum() for k in keys])
    lo, hi = proportion_ci(s, n, method="adaptive")
    rows = {r["g"]: r for r in out["strata"]}
    np.testing.assert_allclose([rows[k]["lower"] for k in keys], lo, rtol=0, atol=1e-9)  # JSON carries 10 digits
    np.testing.assert_allclose([rows[k]["upper"] for k in keys], hi, rtol=0, atol=1e-9)  # JSON carries 10 digits
    failing = (hi - lo) / 2 > 0.12
    assert code == (1 if failing.any() else 0)
    assert [not rows[k]["passed"] for k in keys] == failing.tolist()


def test_gate_rejects_an_unknown_method_naming_it(csv_path, capsys) -> None:
    path, _, _ = csv_path
    code = cli.main(["gate", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g",
                     "--max-halfwidth", "0.1", "--method", "fab"])
    assert code == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--method" in err and "'fab'" in err
