"""Benchmark: ``import bayeseval`` and command-line start-up in fresh interpreters.

Targets: ``import bayeseval`` well under a second without PyMC / PyTensor (the PyMC engine loads
them on first use); ``bayeseval --help`` and every ``bayeseval plan`` command under 0.5 s of
wall time. Each command's wall time and CPU time (user + system, which a loaded machine
inflates less) is also printed as a ratio to ``python -c pass`` measured in the same run, which
travels between machines better than seconds; ``python -c 'import pandas'`` is shown beside
them for scale: the plan commands need NumPy and the standard library only (no pandas, no
SciPy; ``tests/meta/test_startup.py`` checks the modules each one loads), while importing pandas
alone takes about half a second. Exits with status 1 if pymc or pytensor got imported.

Usage::

    .venv/bin/python benchmarks/bench_import.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import resource
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


#: command lines timed from start to exit (the first is the anchor of the ratios)
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import pandas'": ["-c", "import pandas"],
    "bayeseval --help": ["-m", "bayeseval", "--help"],
    "bayeseval plan --help": ["-m", "bayeseval", "plan", "--help"],
    "bayeseval plan --halfwidth 0.05 --rate 0.7": ["-m", "bayeseval", "plan", "--halfwidth", "0.05", "--rate", "0.7"],
    "bayeseval plan ... --method wilson": [
        "-m",
        "bayeseval",
        "plan",
        "--halfwidth",
        "0.05",
        "--rate",
        "0.97",
        "--method",
        "wilson",
    ],
    "bayeseval plan allocate ...": [
        "-m",
        "bayeseval",
        "plan",
        "allocate",
        "--budget",
        "400",
        "--weights",
        '{"a": 0.7, "b": 0.3}',
        "--rates",
        '{"a": 0.1, "b": 0.4}',
    ],
    "bayeseval plan split ...": [
        "-m",
        "bayeseval",
        "plan",
        "split",
        "--n-total",
        "300000",
        "--n-test",
        "60000",
        "--share",
        "0.0042",
        "--n-min",
        "323",
    ],
    "bayeseval campaign --help": ["-m", "bayeseval", "campaign", "--help"],
    "bayeseval audit --help": ["-m", "bayeseval", "audit", "--help"],
}

#: the commands with the 0.5 s target
TARGETED = ("bayeseval --help", "bayeseval plan")


def process_time(args: list[str], repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of ``python <args>`` in fresh processes."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, cwd=ROOT, check=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def print_cli(repeat: int) -> None:
    """Print the command lines' wall and CPU times and their ratios to ``python -c pass``."""
    times = {name: process_time(args, repeat) for name, args in COMMANDS.items()}
    base_wall, base_cpu = times["python -c pass"]
    print(
        f"\ncommand-line start-up (fresh processes, median of {repeat}; target < 0.5 s for "
        "--help and every plan command; on a loaded machine read the CPU column)"
    )
    print(f"{'command':<46}{'wall s':>9}{'/ pass':>8}{'cpu s':>9}{'/ pass':>8}  target")
    for name, (wall, cpu) in times.items():
        target = (
            ("met" if wall < 0.5 else ("met (cpu)" if cpu < 0.5 else "MISSED")) if name.startswith(TARGETED) else ""
        )
        print(f"{name:<46}{wall:>9.3f}{wall / base_wall:>8.1f}{cpu:>9.3f}{cpu / max(base_cpu, 1e-3):>8.1f}  {target}")


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
