"""Command-line start-up: each command imports only what it needs.

Every command runs in a fresh interpreter, which then reports the packages it loaded; the
heavy ones (PyMC, PyTensor, ArviZ, Matplotlib, DuckDB, scikit-learn, xarray, SciPy, pandas)
must not be among them for ``--help`` and the ``plan`` commands. No timing is asserted here
(``benchmarks/bench_import.py`` measures the seconds). The NumPy-only formulas the plan
commands use instead of SciPy are checked against SciPy itself, and the allocation of plain
JSON inputs (without pandas) against ``plan.allocate``'s pandas reading of the same inputs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from scipy import optimize, stats

from bayeseval import plan
from bayeseval._kernels.allocation import _water_fill, plain_inputs
from bayeseval._kernels.sizing import normal_quantile
from bayeseval.plan import allocation

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("pymc", "pytensor", "arviz", "matplotlib", "duckdb", "sklearn", "xarray", "scipy", "pyspark",
         "pandas")

PROBE = r"""
import contextlib, io, json, sys
from bayeseval.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:  # argparse's --help of a subcommand
        code = exc.code
top = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({"code": code, "out": out.getvalue(), "modules": top}))
"""


def run_cli(*args: str) -> dict:
    """Run ``bayeseval <args>`` in a fresh interpreter; its exit code, output and top-level modules."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


ALLOCATE = ["plan", "allocate", "--budget", "400", "--weights", '{"a": 0.7, "b": 0.3}',
            "--rates", '{"a": 0.1, "b": 0.4}', "--json"]
SPLIT = ["plan", "split", "--n-total", "300000", "--n-test", "60000", "--share", "0.0042",
         "--n-min", "323", "--json"]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["plan", "--help"],
        ["plan", "--halfwidth", "0.05", "--rate", "0.7", "--json"],
        ["plan", "--se", "0.02", "--method", "wilson", "--json"],
        ["plan", "--halfwidth", "0.05", "--rate", "0.97"],
        ALLOCATE,
        ["plan", "allocate", "--budget", "400", "--weights", "[0.7, 0.3]", "--method", "compromise",
         "--minimum", "60"],
        SPLIT,
        SPLIT[:-1],
    ],
    ids=["help", "plan-help", "plan", "plan-wilson", "plan-edge-warning", "allocate",
         "allocate-list", "split", "split-text"],
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
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=True)
    assert proc.stdout.split() == ["True", "True", "True", "True"]


def test_help_loads_neither_numpy_nor_pandas():
    result = run_cli("--help")
    assert "usage: bayeseval" in result["out"]
    assert {"numpy", "pandas"}.isdisjoint(result["modules"])


def test_plan_outputs_match_closed_forms_computed_here():
    # normal formula n = ceil(z^2 r (1 - r) / e^2) with z from the standard library
    z = NormalDist().inv_cdf(0.975)
    sized = json.loads(run_cli("plan", "--halfwidth", "0.05", "--rate", "0.7", "--json")["out"])
    assert sized["n_per_stratum"] == math.ceil(z * z * 0.7 * 0.3 / 0.05**2) == 323
    # Neyman allocation without bounds: n_k proportional to w_k sqrt(r_k (1 - r_k))
    alloc = json.loads(run_cli(*ALLOCATE)["out"])["allocation"]
    share = 0.7 * math.sqrt(0.1 * 0.9) / (0.7 * math.sqrt(0.09) + 0.3 * math.sqrt(0.4 * 0.6))
    assert alloc["a"] == round(400 * share) and alloc["a"] + alloc["b"] == 400


def test_normal_quantile_agrees_with_scipy():
    levels = np.concatenate([np.linspace(0.5, 0.999999, 2001), [0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-12]])
    ours = np.array([normal_quantile(float(lv)) for lv in levels])
    ref = stats.norm.ppf(0.5 + levels / 2)
    np.testing.assert_allclose(ours, ref, rtol=2e-15, atol=0)


def test_clopper_pearson_halfwidth_agrees_with_scipy_beta_quantiles():
    n = np.arange(1, 2001, dtype=float)
    for rate in (0.0, 0.02, 0.3, 0.5, 0.9, 1.0):
        x = rate * n
        with np.errstate(all="ignore"):
            lower = np.where(x > 0, stats.beta.ppf(0.025, np.maximum(x, 1e-300), n - x + 1), 0.0)
            upper = np.where(x < n, stats.beta.ppf(0.975, x + 1, np.maximum(n - x, 1e-300)), 1.0)
        ours = plan.achieved_halfwidth(n, rate=rate, method="clopper_pearson")
        np.testing.assert_allclose(ours, (upper - lower) / 2, rtol=1e-12, atol=0)


def _brentq_allocation(total, scores, lo, hi):
    """Reference: the multiplier of n_k = clip(lam s_k, lo_k, hi_k) found by SciPy's brentq."""
    scores = scores / scores.max()

    def g(lam):
        return np.clip(lam * scores, lo, hi).sum() - total

    upper = 1.0
    while g(upper) < 0:
        upper *= 2
    lam = optimize.brentq(g, 0.0, upper, xtol=1e-14, rtol=1e-15, maxiter=500)
    return np.clip(lam * scores, lo, hi)


def test_bounded_allocation_matches_a_brentq_solution():
    rng = np.random.default_rng(3)
    for _ in range(200):
        k = int(rng.integers(2, 40))
        scores = rng.gamma(0.5, 1.0, k) + 1e-9
        lo = rng.integers(0, 30, k).astype(float)
        hi = lo + rng.integers(0, 400, k)
        hi[rng.random(k) < 0.3] = np.inf
        total = float(rng.uniform(lo.sum() + 1, min(hi.sum(), lo.sum() + 5000)))
        ours = _water_fill(total, scores, lo, hi)
        ref = _brentq_allocation(total, scores, lo, hi)
        assert abs(ours.sum() - total) <= 1e-9 * total
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-7)


def test_split_json_is_the_decision_table_row():
    # the command line builds the row without pandas; it must equal the table's row
    res = plan.split_decision(n_total=300000, n_test=60000, share=0.0042, n_min=323)
    assert json.loads(run_cli(*SPLIT)["out"]) == res.table.iloc[0].to_dict()


def _general_allocate(monkeypatch, *args, **kwargs):
    """``plan.allocate`` reading every input with pandas (its path for labelled inputs)."""
    with monkeypatch.context() as m:
        m.setattr(allocation, "plain_inputs", lambda *_: None)
        return allocation.allocate(*args, **kwargs)


def _outcome(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


def test_plain_inputs_allocate_as_the_pandas_reading_does(monkeypatch):
    """Plain dicts and lists (the command line's JSON) give the same Series, or the same error."""
    import pandas as pd

    rng = np.random.default_rng(11)
    plain = 0
    for _ in range(400):
        k = int(rng.integers(1, 7))
        shares = rng.dirichlet(np.ones(k)).tolist()
        if rng.random() < 0.1:
            shares[0] += 0.01  # no longer sums to 1
        rates = rng.uniform(-0.1, 1.1 if rng.random() < 0.3 else 1.0, k).tolist()
        if rng.random() < 0.05:
            rates[-1] = float("nan")
        keys = [f"s{i}" for i in rng.permutation(k)]
        as_dict = rng.random() < 0.6
        weights = dict(zip(keys, shares, strict=True)) if as_dict else shares
        if rng.random() < 0.2:
            rates = None
        elif as_dict and rng.random() < 0.7:
            rates = dict(zip(rng.permutation(keys).tolist(), rates, strict=True))
        minimum = [None, 0, 5, 60, 300, 2.0, 2.5, -1, True][int(rng.integers(0, 9))]
        capacity = [None, None, 100, 1000, 3.5][int(rng.integers(0, 5))]
        method = ["optimal", "proportional", "equal", "equal_precision", "compromise"][int(rng.integers(0, 5))]
        total = int(rng.integers(0, 2000))
        kwargs = {"method": method, "minimum": minimum, "capacity": capacity}
        plain += plain_inputs(weights, rates, minimum, capacity) is not None
        ours = _outcome(plan.allocate, total, weights, rates, **kwargs)
        ref = _outcome(_general_allocate, monkeypatch, total, weights, rates, **kwargs)
        if isinstance(ref, pd.Series):
            assert isinstance(ours, pd.Series), (ours, weights, rates, kwargs)
            pd.testing.assert_series_equal(ours, ref, check_exact=True)
            assert type(ours.index) is type(ref.index)
        else:
            assert ours == ref
    assert plain > 100  # the plain path was taken often enough to be tested
