"""Tests of ``bayeseval._backends.dispatch``."""

from __future__ import annotations

import ast
import pathlib

import pytest

from bayeseval._backends.dispatch import backend_for


def test_layers_spark_and_counts_import_no_backend_privates():
    root = pathlib.Path(__file__).resolve().parents[2] / "bayeseval"
    for module in ("spark.py", "counts/counts.py", "plan/split.py"):
        tree = ast.parse((root / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bayeseval"):
                if not node.module.startswith(("bayeseval._kernels", "bayeseval._backends", "bayeseval._api")):
                    assert all(not a.name.startswith("_") for a in node.names), (module, node.module)


def test_backend_dispatch_refuses_other_types_naming_them():
    with pytest.raises(TypeError, match=r"data must be .* got list"):
        backend_for([1, 2])
