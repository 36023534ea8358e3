"""The command line: exit codes, JSON output, and agreement with the library."""

import json

import pandas as pd
import pytest

from bayeseval import planning
from bayeseval.cli import main


def test_plan_json_matches_the_library_and_spec(capsys):
    assert main(["plan", "--halfwidth", "0.05", "--rate", "0.7", "--groups", "8", "--share", "0.004", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_per_stratum"] == planning.sample_size(halfwidth=0.05, rate=0.7) == 323  # SPEC section 3
    assert out["minority_rows"] == 2584  # SPEC: 8 regions x 323
    assert abs(out["total_rows"] - 646_000) <= 1_000  # SPEC: about 646,000 rows


def test_bad_input_exits_2_with_one_line_reason(capsys):
    assert main(["plan", "--halfwidth", "1.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bayeseval: error:") and "--halfwidth" in err and "1.5" in err
    assert len(err.splitlines()) == 1


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().out


@pytest.fixture
def labelled_csv(tmp_path):
    df = pd.DataFrame(
        {
            "y": [1] * 40 + [0] * 40 + [1] * 400 + [0] * 400,
            "p": [1] * 30 + [0] * 10 + [0] * 40 + [1] * 380 + [0] * 20 + [0] * 400,
            "g": ["small"] * 80 + ["big"] * 800,
        }
    )
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    return path


def test_gate_exit_code_and_failing_table(labelled_csv, capsys):
    args = ["gate", str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--metric", "recall"]
    assert main(args + ["--min-trials", "100", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    failing = {row["g"] for row in out["strata"] if not row["passed"]}
    assert failing == {"small"}  # 40 true positives < 100
    assert main(args + ["--min-trials", "30"]) == 0
    assert "PASSED" in capsys.readouterr().out


def test_missing_file_is_a_one_line_error(tmp_path, capsys):
    code = main(["gate", str(tmp_path / "nope.csv"), "--y-true", "y", "--y-pred", "p", "--min-trials", "5"])
    assert code == 2
    assert "file not found" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["report", "gate", "audit"])
def test_a_score_column_read_from_a_file_is_a_one_line_error(command, tmp_path, capsys):
    df = pd.DataFrame({"y": [0, 1] * 20, "score": [0.25, 0.75] * 20, "g": ["a"] * 20 + ["b"] * 20})
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    extra = {"report": [], "gate": ["--min-trials", "5"], "audit": ["--groups", "g"]}[command]
    code = main([command, str(path), "--y-true", "y", "--y-pred", "score", "--strata", "g", *extra]
                if command != "audit" else [command, str(path), "--y-true", "y", "--y-pred", "score", *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "y_pred column 'score' holds the fractional value 0.25" in err
