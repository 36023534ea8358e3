"""The crossed-factor Laplace engine agrees with PyMC's NUTS on the same model (slow).

COMPAS error rates by race x sex x age (36 cells, two empty). The NUTS run (4 chains x 1,000
draws, 1,000 tuning steps, fixed seed, one core) is the reference; its Monte Carlo error on a
95% interval end is about 0.005 for the smallest cells. The comparison is the one of
``benchmarks/bench_crossed.py``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_crossed.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_crossed", _BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def comparison():
    return _bench().compare(seed=20240601, repeats=3)


def test_cell_means_and_interval_ends_agree_with_nuts(comparison):
    diag = comparison["nuts_diagnostics"]
    assert diag["rhat_max"] < 1.01 and diag["ess_tail_min"] > 400  # a trustworthy reference
    d = comparison["max_abs_diff"]
    assert d["mean"] < 0.01, comparison["table"]
    assert d["lower"] < 0.02, comparison["table"]
    assert d["upper"] < 0.02, comparison["table"]
    table = comparison["table"]
    empty = table[table["trials"] == 0]
    assert len(empty) == 2  # the predictions for the empty cells agree too
    assert (abs(empty["nuts_mean"] - empty["laplace_mean"]) < 0.01).all()


def test_agrees_with_an_importance_sampling_reference(comparison):
    # 40,000 weighted draws of the exact posterior (ESS about 20,000): no sampler noise to
    # speak of on the interval ends, so the tolerance is tighter
    assert comparison["importance_ess"] > 5000
    d = comparison["importance_max_abs_diff"]
    assert d["mean"] < 0.005 and d["lower"] < 0.01 and d["upper"] < 0.01, d


def test_at_least_100_times_faster_than_pymc_in_the_same_run(comparison):
    assert comparison["ratio"] >= 100, (comparison["laplace_seconds"], comparison["pymc_seconds"])
