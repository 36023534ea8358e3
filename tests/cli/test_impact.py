"""Tests of ``bayeseval.cli.impact``."""

from __future__ import annotations

import json

from bayeseval.cli.main import main as main_audit_report


def test_command_line_writes_the_report_and_fits_100_columns(compas_impact, tmp_path, capsys):
    path = tmp_path / "applicants.csv"
    compas_impact.to_csv(path, index=False)
    out = tmp_path / "audit.html"
    code = main_audit_report(
        [
            "impact-ratio",
            str(path),
            "--groups",
            "race,sex",
            "--selected",
            "low_risk",
            "--exclude-below",
            "0.02",
            "--justification",
            "small",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and out.exists()
    # every line fits, except the one naming the written file (a path is not broken)
    assert max(len(line) for line in text.splitlines() if str(out) not in line) <= 100
    assert "Categories: race" in text and "Intersectional categories: race x sex" in text
    code = main_audit_report(["impact-ratio", str(path), "--groups", "race", "--selected", "low_risk", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and sum(r["applicants"] for r in data["tables"]["race"]) == len(compas_impact)
    assert (
        main_audit_report(
            ["impact-ratio", str(path), "--groups", "race", "--selected", "low_risk", "--out", str(tmp_path / "x.pdf")]
        )
        == 2
    )
    # an existing report is replaced only with --force; the data file never
    before = out.read_text()
    again = ["impact-ratio", str(path), "--groups", "race", "--selected", "low_risk", "--out", str(out)]
    assert main_audit_report(again) == 2 and out.read_text() == before
    assert main_audit_report([*again, "--force"]) == 0 and out.read_text() != before
    assert (
        main_audit_report(
            ["impact-ratio", str(path), "--groups", "race", "--selected", "low_risk", "--out", str(path), "--force"]
        )
        == 2
    )
