"""Tests of ``bayeseval.cli.plan``."""

from __future__ import annotations

import sqlite3

import pytest

from bayeseval.cli import plan as cli_plan
from tests.helpers import _one_line_error


@pytest.mark.parametrize(
    "exc",
    [
        OverflowError("int too large to convert"),
        sqlite3.OperationalError("database is locked"),
        OSError(28, "No space left on device"),
    ],
)
def test_main_maps_input_errors_to_one_line(monkeypatch, capsys, exc):
    def raising(args):
        raise exc

    monkeypatch.setattr(cli_plan, "_cmd_plan", raising)
    line, _ = _one_line_error(capsys, ["plan", "--halfwidth", "0.05"])
    assert str(exc.args[-1]) in line


def test_multi_line_messages_become_one_line(monkeypatch, capsys):
    def raising(args):
        raise ValueError("first line\n  second line\n")

    monkeypatch.setattr(cli_plan, "_cmd_plan", raising)
    line, _ = _one_line_error(capsys, ["plan", "--halfwidth", "0.05"])
    assert line == "bayeseval: error: first line second line"
