"""Run every ``benchmarks/bench_*.py`` script, one after the other, in fresh subprocesses.

Each script prints its own small table; this runner prints a header per script, its
output, its wall time and exit status, and a final summary. ``validate.py`` (the
validation report, ~15 minutes) is not a benchmark and is not run here.

Usage::

    .venv/bin/python benchmarks/run_all.py                 # every bench_*.py
    .venv/bin/python benchmarks/run_all.py import memory   # only bench_import.py and bench_memory.py
    .venv/bin/python benchmarks/run_all.py --list
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def scripts(selected: list[str]) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if not selected:
        return found
    wanted = {s.removeprefix("bench_").removesuffix(".py") for s in selected}
    chosen = [p for p in found if p.stem.removeprefix("bench_") in wanted]
    missing = wanted - {p.stem.removeprefix("bench_") for p in chosen}
    if missing:
        raise SystemExit(f"no benchmark named {sorted(missing)}; present: {[p.stem for p in found]}")
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmark names (e.g. import memory); default: all")
    ap.add_argument("--list", action="store_true", help="list the benchmark scripts and exit")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per script")
    args = ap.parse_args()
    todo = scripts(args.names)
    if args.list:
        print("\n".join(p.name for p in todo))
        return 0
    results = []
    for path in todo:
        print(f"\n=== {path.name} " + "=" * max(0, 60 - len(path.name)), flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(path)], cwd=HERE.parent, timeout=args.timeout)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
        results.append((path.name, status, time.perf_counter() - t0))
    print("\n=== summary " + "=" * 50)
    print(f"{'script':<28}{'status':>10}{'wall s':>10}")
    for name, status, secs in results:
        print(f"{name:<28}{str(status):>10}{secs:>10.1f}")
    return int(any(status != 0 for _, status, _ in results))


if __name__ == "__main__":
    sys.exit(main())
