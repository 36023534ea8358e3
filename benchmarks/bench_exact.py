"""Benchmark: the exact grid engine at 71, 1,000 and 10,000 strata.

Prints, per size, the median wall time (time.perf_counter, median of repeats, one core) of

- ``fit``: ``fit_hierarchical(..., engine="exact")`` -- the adaptive grid over
  (logit mu, log kappa) and 4,000 hyperparameter draws (theta is drawn lazily);
- ``+theta``: the same plus the 4,000 x K exact Beta draws of theta;
- ``+summary``: the fit plus ``summary()`` (exact posterior means and exact mixture
  quantiles from the grid; no theta draws);
- ``moments``: the fit plus ``exact.posterior_moments()`` (what active campaigns use);

the median process CPU time of the fit (``fit cpu``, insensitive to other processes on a
busy machine), the number of distinct (successes, trials) pairs and of log-posterior
evaluations, and the
peak traced memory (tracemalloc) of a 1,000-stratum fit with and without theta draws.

Targets: 71 strata < 20 ms, 1,000 strata < 200 ms (fit).
The 71-stratum data set is the rat tumour data of BDA3 Table 5.1; the larger ones are
simulated: trials log-uniform in [10, 2000], rates Beta(2, 30).

Usage::

    .venv/bin/python benchmarks/bench_exact.py
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bayeseval import PrecisionLimitedWarning  # noqa: E402
from bayeseval.counts.counts import Counts  # noqa: E402
from bayeseval.models import fit_hierarchical  # noqa: E402

RATS_Y = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
          2, 2, 2, 1, 5, 2, 5, 3, 2, 7, 7, 3, 3, 2, 9, 10, 4, 4, 4, 4, 4, 4, 4, 10, 4, 4, 4, 5,
          11, 12, 5, 5, 6, 5, 6, 6, 6, 6, 16, 15, 15, 9, 4]  # fmt: skip
RATS_N = [20, 20, 20, 20, 20, 20, 20, 19, 19, 19, 19, 18, 18, 17, 20, 20, 20, 20, 19, 19, 18,
          18, 25, 24, 23, 20, 20, 20, 20, 20, 20, 10, 49, 19, 46, 27, 17, 49, 47, 20, 20, 13,
          48, 50, 20, 20, 20, 20, 20, 20, 20, 48, 19, 19, 19, 22, 46, 49, 20, 20, 23, 19, 22,
          20, 20, 20, 52, 46, 47, 24, 14]  # fmt: skip


def simulated(k: int, seed: int = 0) -> Counts:
    rng = np.random.default_rng(seed)
    n = np.round(np.exp(rng.uniform(np.log(10), np.log(2000), k))).astype(int)
    s = rng.binomial(n, rng.beta(2, 30, k))
    return Counts.from_arrays(s, n)


def median_time(fn, repeats: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def main() -> None:
    warnings.simplefilter("ignore", PrecisionLimitedWarning)
    cases = [
        ("71 (rats)", Counts.from_arrays(RATS_Y, RATS_N), 21),
        ("1,000", simulated(1_000), 11),
        ("10,000", simulated(10_000), 5),
    ]
    fit_hierarchical(cases[0][1], random_seed=0)  # warm-up (imports)
    print(
        f"{'strata':<11}{'distinct':>9}{'evals':>7}{'fit ms':>9}{'fit cpu':>9}{'+theta ms':>11}"
        f"{'+summary ms':>13}{'moments ms':>12}"
    )
    for name, counts, reps in cases:
        post = fit_hierarchical(counts, random_seed=0)
        few = max(3, reps // 3)
        fit_t = median_time(lambda c=counts: fit_hierarchical(c, random_seed=1), reps)
        cpu_t = median_time(lambda c=counts: fit_hierarchical(c, random_seed=1), reps, clock=time.process_time)
        theta_t = median_time(lambda c=counts: fit_hierarchical(c, random_seed=2).theta, few)
        summ_t = median_time(lambda c=counts: fit_hierarchical(c, random_seed=3).summary(), few)
        mom_t = median_time(lambda c=counts: fit_hierarchical(c, random_seed=4).exact.posterior_moments(), few)
        d = post.diagnostics
        print(
            f"{name:<11}{d['distinct']:>9}{d['n_evaluations']:>7}{fit_t * 1e3:>9.1f}"
            f"{cpu_t * 1e3:>9.1f}"
            f"{theta_t * 1e3:>11.1f}{summ_t * 1e3:>13.1f}{mom_t * 1e3:>12.1f}"
        )

    counts = cases[1][1]
    tracemalloc.start()
    post = fit_hierarchical(counts, random_seed=1)
    _, peak_fit = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    theta = post.theta
    _, peak_theta = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\npeak traced memory, 1,000-stratum fit: {peak_fit / 2**20:.1f} MiB "
        f"(+ theta draws {theta.shape[0]:,} x {theta.shape[1]:,}: {peak_theta / 2**20:.1f} MiB)"
    )


if __name__ == "__main__":
    main()
