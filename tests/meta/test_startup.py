"""Start-up: the command line and ``import bayeseval`` load only what they need."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib
import pytest

from tests.helpers import (
    ALLOCATE,
    ROOT,
    SPLIT,
    ROOT_hardening_report_cli,
    _close_figures,  # noqa: F401
    run_cli,
)

matplotlib.use("Agg")


HEAVY = ("pymc", "pytensor", "arviz", "matplotlib", "duckdb", "sklearn", "xarray", "scipy", "pyspark", "pandas")


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT_hardening_report_cli)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT_hardening_report_cli
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["plan", "--help"],
        ["plan", "--halfwidth", "0.05", "--rate", "0.7", "--json"],
        ["plan", "--se", "0.02", "--method", "wilson", "--json"],
        ["plan", "--halfwidth", "0.05", "--rate", "0.97"],
        ALLOCATE,
        ["plan", "allocate", "--budget", "400", "--weights", "[0.7, 0.3]", "--method", "compromise", "--minimum", "60"],
        SPLIT,
        SPLIT[:-1],
    ],
    ids=[
        "help",
        "plan-help",
        "plan",
        "plan-wilson",
        "plan-edge-warning",
        "allocate",
        "allocate-list",
        "split",
        "split-text",
    ],
)
def test_help_and_plan_commands_load_no_heavy_package(args):
    result = run_cli(*args)
    assert result["code"] == 0
    loaded = sorted(set(HEAVY) & set(result["modules"]))
    assert loaded == [], f"bayeseval {' '.join(args)} imported {loaded}"


@pytest.mark.parametrize("command", ["campaign", "audit", "impact-ratio"])
def test_campaign_and_audit_help_load_no_heavy_package(command):
    result = run_cli(command, "--help")
    assert result["code"] == 0 and f"usage: bayeseval {command}" in result["out"]
    loaded = sorted(set(HEAVY) & set(result["modules"]))
    assert loaded == [], f"bayeseval {command} --help imported {loaded}"


def test_active_package_names_bind_on_first_use():
    # bayeseval.campaign imports its names lazily; ``simulate`` must stay the function even
    # after the submodule of the same name was imported (the import system binds it)
    code = (
        "import bayeseval.campaign.simulation, inspect\n"
        "from bayeseval.campaign import simulate, Campaign, RULES\n"
        "import bayeseval.campaign as a\n"
        "print(inspect.isfunction(simulate), inspect.isfunction(a.simulate),"
        " inspect.isclass(Campaign), 'expected_width' in RULES)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    assert proc.stdout.split() == ["True", "True", "True", "True"]


def test_help_loads_neither_numpy_nor_pandas():
    result = run_cli("--help")
    assert "usage: bayeseval" in result["out"]
    assert {"numpy", "pandas"}.isdisjoint(result["modules"])


def test_importing_the_engine_module_does_not_import_pymc():
    code = (
        "import sys, bayeseval, bayeseval.models, bayeseval.models.pymc; "
        "assert 'pymc' not in sys.modules and 'pytensor' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_importing_plots_loads_no_result_module():
    out = _run(
        "import sys, bayeseval.plots; "
        "print(sorted(m for m in ('bayeseval.report.report', 'bayeseval.checks', 'bayeseval.campaign', "
        "'bayeseval.estimate.stratified', 'bayeseval.models', 'matplotlib.pyplot') if m in sys.modules))"
    )
    assert out == "[]"


def test_help_and_import_load_neither_pandas_nor_scipy():
    out = _run(
        "import sys, contextlib, io\n"
        "import bayeseval\n"
        "before = sorted(m for m in ('pandas', 'scipy', 'numpy') if m in sys.modules)\n"
        "from bayeseval.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as buf:\n"
        "    code = main(['--help'])\n"
        "after = sorted(m for m in ('pandas', 'scipy', 'bayeseval.campaign') if m in sys.modules)\n"
        "print(before, code, 'campaign' in buf.getvalue(), after)"
    )
    assert out == "[] 0 True []"
