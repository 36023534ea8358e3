"""Benchmark: ``import bayeseval`` time in a fresh interpreter, and what it imports.

Target: well under a second, and PyMC / PyTensor must NOT be imported (the PyMC
engine loads them on first use). Prints a small table; exits with status 1 if
pymc or pytensor got imported.

Usage::

    .venv/bin/python benchmarks/bench_import.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import bayeseval
t1 = time.perf_counter()
heavy = sorted(m for m in ("pymc", "pytensor", "arviz", "matplotlib", "duckdb", "pyspark", "sklearn",
                           "statsmodels", "xarray", "pandas", "scipy") if m in sys.modules)
print(json.dumps({"seconds": t1 - t0, "loaded": heavy, "n_modules": len(sys.modules)}))
"""

BASELINE = r"""
import json, time
t0 = time.perf_counter()
import numpy, scipy.stats, pandas
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    runs = [run(PROBE) for _ in range(args.repeat)]
    base = [run(BASELINE)["seconds"] for _ in range(args.repeat)]
    med = statistics.median(r["seconds"] for r in runs)
    med_base = statistics.median(base)
    loaded = runs[-1]["loaded"]
    bad = [m for m in ("pymc", "pytensor") if m in loaded]
    print(f"import bayeseval (fresh subprocess, median of {args.repeat})")
    print(f"{'measure':<44}{'value':>14}")
    print(f"{'import bayeseval [s]':<44}{med:>14.3f}")
    print(f"{'import numpy+scipy.stats+pandas [s]':<44}{med_base:>14.3f}")
    print(f"{'ratio bayeseval / its core dependencies':<44}{med / med_base:>14.2f}")
    print(f"{'modules in sys.modules after import':<44}{runs[-1]['n_modules']:>14d}")
    print(f"{'heavy packages loaded':<44}{', '.join(loaded) or '-':>14}")
    print(f"{'pymc/pytensor imported (must be no)':<44}{('YES: ' + ', '.join(bad)) if bad else 'no':>14}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
