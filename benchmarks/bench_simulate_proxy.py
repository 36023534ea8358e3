"""Benchmark: ``simulate`` with a proxy against the same simulation without one.

The pool is :func:`~bayeseval.campaign.simulation.synthetic_pool` (``--rows`` rows, ``--strata``
strata of very unequal sizes and error rates, seed 0) with a label proxy, a judge whose label
agrees with the truth on 90% of rows. Both simulations use the defaults of ``simulate`` (goal
``"each"``, ``guarantee="stratum"``, the rule ``expected_width``, the batch size resolved for the
pool) with ``--repeats`` campaigns and ``random_seed=0``; the proxy one stops on each stratum's
proxy interval and spends fewer labels. Three timings, interleaved ``--times`` times in one
process (median and minimum, CPU and wall seconds):

``labels``      ``simulate(pool, ...)``, the labels-only campaigns replayed in memory;
``proxy``       ``simulate(pool, proxy="judge", ...)``, each campaign replayed in memory;
``proxy_files`` the same, each campaign run as a real campaign in a temporary file
                (``replay_proxy(..., files=True)``, how ``simulate`` replayed proxy campaigns before
                the in-memory replay; the same results, checked here).

Target: ``proxy`` at most 1.5x ``labels`` (CPU).

Usage::

    python benchmarks/bench_simulate_proxy.py                       # 20,000 rows, 12 strata
    python benchmarks/bench_simulate_proxy.py --strata 12 50 --times 5
    python benchmarks/bench_simulate_proxy.py --no-files            # skip the file-backed replay
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typing import Any

import numpy as np
import pandas as pd
from targets import record  # noqa: E402


def make_pool(rows: int, strata: int) -> pd.DataFrame:
    from bayeseval.campaign.simulation import synthetic_pool

    pool = synthetic_pool(n_rows=rows, n_strata=strata, random_seed=0)
    rng = np.random.default_rng(1)
    pool["judge"] = np.where(rng.random(len(pool)) < 0.9, pool["truth"], 1 - pool["truth"])
    return pool


def timed(call: Any) -> tuple[float, float, Any]:
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - t0, time.process_time() - c0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--strata", type=int, nargs="+", default=[12])
    parser.add_argument("--repeats", type=int, default=10, help="campaigns per simulation (default 10)")
    parser.add_argument("--times", type=int, default=3, help="timings of each simulation (default 3)")
    parser.add_argument("--no-files", action="store_true", help="skip the file-backed replay")
    args = parser.parse_args()

    import bayeseval
    from bayeseval.campaign import proxy_replay
    from bayeseval.campaign.simulation import simulate

    print(f"bayeseval from {Path(bayeseval.__file__).parent}")
    warnings.simplefilter("ignore")
    in_memory = proxy_replay.replay_proxy
    simulate(make_pool(3_000, 4), strata="stratum", y_pred="pred", y_true="truth", n_repeats=1, progress=False)
    modes = ["labels", "proxy"] + ([] if args.no_files else ["proxy_files"])
    print(
        f"{'strata':>7}{'mode':>13}{'labels':>8}{'cpu med':>9}{'cpu min':>9}{'wall med':>9}{'wall min':>9}"
        f"{'/labels cpu med':>16}{'min':>6}"
    )
    for k in args.strata:
        pool = make_pool(args.rows, k)
        kw = dict(strata="stratum", y_pred="pred", y_true="truth", n_repeats=args.repeats, random_seed=0)
        times: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
        tables: dict[str, pd.DataFrame] = {}
        for _ in range(args.times):
            for mode in modes:
                proxy_replay.replay_proxy = (
                    functools.partial(in_memory, files=True) if mode == "proxy_files" else in_memory
                )
                extra = {} if mode == "labels" else {"proxy": "judge"}
                wall, cpu, res = timed(lambda p=pool, a=kw, e=extra: simulate(p, progress=False, **a, **e))
                proxy_replay.replay_proxy = in_memory
                times[mode].append((wall, cpu))
                tables[mode] = res.table.drop(columns="wall_time")
        if "proxy_files" in tables:  # the two replays of the proxy campaigns agree to the last bit
            pd.testing.assert_frame_equal(tables["proxy"], tables["proxy_files"], check_exact=True)
        base_med = statistics.median(c for _, c in times["labels"])
        base_min = min(c for _, c in times["labels"])
        for mode in modes:
            walls, cpus = [w for w, _ in times[mode]], [c for _, c in times[mode]]
            print(
                f"{k:>7,}{mode:>13}{tables[mode]['labels_used'].mean():>8.0f}"
                f"{statistics.median(cpus):>9.2f}{min(cpus):>9.2f}{statistics.median(walls):>9.2f}{min(walls):>9.2f}"
                f"{statistics.median(cpus) / base_med:>16.2f}{min(cpus) / base_min:>6.2f}",
                flush=True,
            )
            if mode == "proxy":
                record(
                    f"simulate with a proxy / without, {k:,} strata",
                    statistics.median(cpus) / base_med,
                    1.5,
                    note="CPU",
                )


if __name__ == "__main__":
    main()
