"""Set-up of the PyMC engine: PyTensor's BLAS and the sampling progress switch.

The BLAS tests run in fresh interpreters (PyTensor reads its flags once per process): with no
user flags the engine links PyTensor to the OpenBLAS SciPy loaded; a user's ``PYTENSOR_FLAGS``
win; with no BLAS at all one :class:`~bayeseval.PerformanceWarning` names the fix. The
progress tests check the switch reaches :func:`pymc.sample` (a stub sampler) and, in the slow
run, that a real fit with ``progress=False`` prints nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bayeseval import Counts
from bayeseval.models import fit_hierarchical
from bayeseval.models import pymc as bp

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str, **env: str) -> tuple[dict, str]:
    """Run ``code`` in a fresh interpreter; the JSON it prints last, and its stderr."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTENSOR_FLAGS", "PYTENSORRC")}
    full_env.update(PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=full_env, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


# -- BLAS ---------------------------------------------------------------------------------------
def test_the_bundled_blas_is_the_library_scipy_loaded():
    import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)
    from threadpoolctl import threadpool_info

    found = bp._bundled_blas()
    if found is None:
        pytest.skip("SciPy does not ship its own OpenBLAS here (e.g. a conda build)")
    path, prefix = found
    assert path.is_file()
    loaded = {Path(info["filepath"]).resolve() for info in threadpool_info() if info["user_api"] == "blas"}
    assert path.resolve() in loaded
    flags = bp._blas_flags(path, prefix)
    assert str(path) in flags
    if prefix:  # every routine PyTensor's GEMM/GEMV/GER/dot code calls is renamed
        for name in ("dgemm_", "sgemm_", "dgemv_", "dger_", "ddot_", "sdot_"):
            assert f"-D{name}={prefix}{name}" in flags


CONFIGURE = r"""
import json, warnings
from bayeseval.models import pymc as bp
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    first = bp.configure_pytensor()
    second = bp.configure_pytensor()
import pytensor
print(json.dumps({"first": first, "second": second, "config": pytensor.config.blas__ldflags,
                  "warnings": [[w.category.__name__, str(w.message)] for w in caught]}))
"""


def test_without_user_flags_pytensor_links_the_bundled_blas():
    if bp._bundled_blas() is None:
        pytest.skip("SciPy does not ship its own OpenBLAS here (e.g. a conda build)")
    out, err = run_python(CONFIGURE)
    assert out["first"]["source"] == "bundled" and out["second"] == out["first"]
    assert out["config"] == out["first"]["ldflags"]
    assert str(bp._bundled_blas()[0]) in out["config"]
    assert out["warnings"] == [] and "could not link" not in err


def test_user_flags_win():
    out, _ = run_python(CONFIGURE, PYTENSOR_FLAGS="blas__ldflags=-lm")
    assert out["first"] == {"ldflags": "-lm", "source": "user"}
    assert out["config"] == "-lm"
    assert out["warnings"] == []


def test_no_blas_warns_once_with_the_fix():
    # no compiler (cxx empty): PyTensor's own search finds nothing; the bundled library is hidden
    code = "from bayeseval.models import pymc as bp\nbp._bundled_blas = lambda: None\n" + CONFIGURE
    out, err = run_python(code, PYTENSOR_FLAGS="cxx=")
    assert out["first"] == {"ldflags": "", "source": "pytensor"}
    ours = [m for cat, m in out["warnings"] if cat == "PerformanceWarning"]
    assert len(ours) == 1 and "PYTENSOR_FLAGS='blas__ldflags=" in ours[0]
    assert not any("could not link" in m for _, m in out["warnings"])  # PyTensor's own is replaced


@pytest.mark.slow
def test_blas_ops_compiled_against_the_bundled_library_match_numpy():
    if bp._bundled_blas() is None:
        pytest.skip("SciPy does not ship its own OpenBLAS here (e.g. a conda build)")
    code = r"""
import json
import numpy as np
from bayeseval.models import pymc as bp
state = bp.configure_pytensor()
import pytensor, pytensor.tensor as pt
A, B, v, w = pt.dmatrix("A"), pt.dmatrix("B"), pt.dvector("v"), pt.dvector("w")
f = pytensor.function([A, B, v, w], [pt.dot(A, B), pt.dot(A, v), A + pt.outer(v, w)])
ops = sorted({type(node.op).__name__ for node in f.maker.fgraph.apply_nodes})
rng = np.random.default_rng(0)
a, b, x, y = rng.normal(size=(30, 30)), rng.normal(size=(30, 30)), rng.normal(size=30), rng.normal(size=30)
got = f(a, b, x, y)
err = max(float(np.max(np.abs(g - r))) for g, r in zip(got, [a @ b, a @ x, a + np.outer(x, y)]))
print(json.dumps({"source": state["source"], "ops": ops, "err": err}))
"""
    out, stderr = run_python(code)
    assert out["source"] == "bundled"
    assert {"Dot22", "CGemv", "CGer"} <= set(out["ops"])  # the C BLAS ops, not Python fallbacks
    assert out["err"] < 1e-12
    assert "could not link" not in stderr


# -- progress -----------------------------------------------------------------------------------
class _Stop(Exception):
    """Raised by the stub sampler once it has seen the keyword arguments."""


@pytest.fixture
def sample_kwargs(monkeypatch):
    """Capture what ``fit_pymc`` passes to ``pymc.sample`` (no model is built or sampled)."""
    seen: dict = {}

    def fake_sample(model, kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(bp, "_beta_binomial_model", lambda *a, **k: (None, ["mu", "kappa"]))
    monkeypatch.setattr(bp, "_sample", fake_sample)
    return seen


COUNTS = Counts.from_arrays([2, 5, 9], [40, 50, 60], strata=["a", "b", "c"])


@pytest.mark.parametrize(("kwargs", "expected"), [({}, True), ({"progress": False}, False), ({"progress": True}, True)])
def test_progress_reaches_pymc_sample(sample_kwargs, kwargs, expected):
    with pytest.raises(_Stop):
        fit_hierarchical(COUNTS, engine="pymc", random_seed=0, **kwargs)
    assert sample_kwargs["progressbar"] is expected


def test_progress_must_be_a_bool(sample_kwargs):
    with pytest.raises(TypeError, match=r"progress must be True or False, got 'no'"):
        bp.fit_pymc(COUNTS, random_seed=0, progress="no")


FIT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from bayeseval import Counts
from bayeseval.models.pymc import fit_pymc
counts = Counts.from_arrays([2, 5, 9], [40, 50, 60], strata=["a", "b", "c"])
post = fit_pymc(counts, draws=200, tune=200, random_seed=1, progress=sys.argv[1] == "on")
sys.stdout.flush()
sys.stderr.flush()
print(json.dumps({"means": post.summary()["mean"].tolist()}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("progress", ["off", "on"])
def test_a_fit_without_progress_prints_nothing(progress):
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", FIT, progress], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    *before, last = proc.stdout.strip().splitlines()
    means = json.loads(last)["means"]
    assert len(means) == 3 and all(0 < m < 1 for m in means)
    if progress == "on":
        assert "Sampling 2 chains" in proc.stderr  # PyMC's own report follows its bar
    else:
        assert (before, proc.stderr) == ([], "")
