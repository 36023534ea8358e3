"""Benchmark: ``import bayeseval`` and command-line start-up in fresh interpreters.

Targets: ``import bayeseval`` well under a second without PyMC / PyTensor (the PyMC engine loads
them on first use); ``bayeseval --help`` and ``bayeseval plan ...`` under 0.5 s of wall time.
Each figure is also printed as a ratio to ``python -c pass`` measured in the same run, which
travels between machines better than seconds. Exits with status 1 if pymc or pytensor got
imported.

Usage::

    .venv/bin/python benchmarks/bench_import.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
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


#: command lines timed from start to exit (wall time of the whole process)
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "bayeseval --help": ["-m", "bayeseval", "--help"],
    "bayeseval plan --halfwidth 0.05 --rate 0.7": ["-m", "bayeseval", "plan", "--halfwidth", "0.05", "--rate", "0.7"],
    "bayeseval campaign --help": ["-m", "bayeseval", "campaign", "--help"],
}


def wall_time(args: list[str], repeat: int) -> float:
    """Median wall time of ``python <args>`` over ``repeat`` fresh processes."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, cwd=ROOT, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def print_cli(repeat: int) -> None:
    """Print the command lines' wall times and their ratio to ``python -c pass``."""
    walls = {name: wall_time(args, repeat) for name, args in COMMANDS.items()}
    base = walls["python -c pass"]
    print(f"\ncommand-line start-up (wall time, median of {repeat}; target < 0.5 s)")
    print(f"{'command':<48}{'seconds':>10}{'/ pass':>10}")
    for name, seconds in walls.items():
        print(f"{name:<48}{seconds:>10.3f}{seconds / base:>10.1f}")


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
    print_cli(args.repeat)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
