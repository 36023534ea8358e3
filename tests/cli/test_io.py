"""Tests of ``bayeseval.cli.io``."""

from __future__ import annotations

import matplotlib
import pytest

from bayeseval.cli import io as cli_io
from tests.helpers import _close_figures  # noqa: F401

matplotlib.use("Agg")


def test_read_table_names_the_option_and_the_file(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"--pool file .*e\.csv.* is empty"):
        cli_io.read_table(str(empty), name="--pool")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match=r"data file .*x\.json.* unsupported file type '\.json'"):
        cli_io.read_table(str(tmp_path / "x.json"), name="data")
