"""The command line: exit codes, JSON output, and agreement with the library."""

import json
from pathlib import Path

import pandas as pd
import pytest

from bayeseval import plan
from bayeseval.cli.main import main


def test_plan_json_matches_the_library_and_spec(capsys):
    assert main(["plan", "--halfwidth", "0.05", "--rate", "0.7", "--groups", "8", "--share", "0.004", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_per_stratum"] == plan.sample_size(halfwidth=0.05, rate=0.7) == 323
    assert out["minority_rows"] == 2584  # 8 regions x 323
    assert abs(out["total_rows"] - 646_000) <= 1_000  # about 646,000 rows


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


def _digest(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_report_out_never_onto_its_data_and_never_over_a_file_without_force(labelled_csv, tmp_path, capsys):
    args = ["report", str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--strata", "g"]
    data = _digest(labelled_csv)
    for extra in ([], ["--force"]):
        assert main([*args, "--out", str(labelled_csv), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "is the data file itself" in err
    assert _digest(labelled_csv) == data
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("keep me\n")
    assert main([*args, "--out", str(earlier)]) == 2
    assert "--force" in capsys.readouterr().err and earlier.read_text() == "keep me\n"
    assert main([*args, "--out", str(earlier), "--force"]) == 0
    table = pd.read_csv(earlier).set_index("g")
    # hand count: small has 10 errors in 80 rows (10 missed positives); big 20 in 800
    assert table.loc["small", ["successes", "trials"]].tolist() == [10, 80]
    assert table.loc["big", ["successes", "trials"]].tolist() == [20, 800]
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".writing-")]


def test_report_out_failing_mid_write_leaves_the_file_as_it_was(labelled_csv, tmp_path, capsys, monkeypatch):
    import errno

    from bayeseval.report.report import Report

    def full_disk(self, path, **kwargs):
        Path(path).write_text("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Report, "save", full_disk)
    target = tmp_path / "r.md"
    target.write_text("earlier report\n")
    args = ["report", str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--out", str(target), "--force"]
    assert main(args) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert target.read_text() == "earlier report\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["preds.csv", "r.md"]


def test_demo_does_not_overwrite_a_folder_that_holds_files_without_force(tmp_path, capsys):
    (tmp_path / "report.html").write_text("mine")
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--force" in err
    assert (tmp_path / "report.html").read_text() == "mine"


# the subject: the command prints the EmptyStratumWarning as one stderr line
@pytest.mark.filterwarnings("always::bayeseval.EmptyStratumWarning")
def test_both_command_lines_print_a_package_warning_as_one_line(tmp_path, capsys):
    import warnings

    # a stratum without positives has no recall: EmptyStratumWarning, shown as one line
    df = pd.DataFrame({"y": [0] * 40 + [1] * 50 + [0] * 50, "p": [1] * 20 + [0] * 120, "g": ["a"] * 40 + ["b"] * 100})
    df.to_csv(tmp_path / "p.csv", index=False)
    hook = warnings.showwarning
    args = ["gate", str(tmp_path / "p.csv"), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--metric", "recall",
            "--min-trials", "5"]
    main(args)
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert err == ["warning: 1 strata have no trials for recall and no rate: ['a']"]
    assert warnings.showwarning is hook


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


def test_guarantee_flag_of_report_and_gate(labelled_csv, capsys):
    from bayeseval._kernels.binomial import GUARANTEES
    from bayeseval.cli import main as cli

    assert cli.GUARANTEES == GUARANTEES
    data = [str(labelled_csv), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--json"]
    assert main(["report", *data]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "stratum" and "read" not in out["strata"][0]
    assert main(["report", *data, "--guarantee", "average"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "average" and out["strata"][0]["read"] in ("pooled", "adaptive")
    assert main(["gate", *data, "--max-halfwidth", "0.5"]) == 0
    assert {r["method"] for r in json.loads(capsys.readouterr().out)["strata"]} == {"adaptive"}
    assert main(["gate", *data, "--max-halfwidth", "0.5", "--method", "wilson"]) == 2
    err = capsys.readouterr().err
    assert "method 'wilson' does not cover every stratum" in err and "guarantee" in err
    assert main(["gate", *data, "--max-halfwidth", "0.5", "--method", "wilson",
                 "--guarantee", "average"]) == 0
    assert {r["method"] for r in json.loads(capsys.readouterr().out)["strata"]} == {"wilson"}
    assert main(["report", *data, "--guarantee", "each"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--guarantee" in err and "'each'" in err and len(err.splitlines()) == 1
