"""Benchmark: the exact engine against the PyMC engine on the same data, end to end.

Fits the hierarchical Beta-binomial model to the same 71 strata (the rat tumour data of
Gelman et al., *Bayesian Data Analysis*, 3rd ed., Table 5.1, by default) with both engines,
end to end (``fit_hierarchical(...)`` plus ``.summary()``), and prints

- the exact engine's time (median of repeats, and its first call);
- PyMC's first call in this process (``import pymc`` + graph compilation + sampling; the
  compiled C modules may already be in PyTensor's on-disk cache) and a warm second call;
- with ``--cold``, PyMC's first call in a fresh interpreter with an empty PyTensor
  compile directory (the true first-use cost);
- the ratio PyMC / exact (target: at least 100) and the agreement of the two posteriors
  (largest absolute difference of the posterior means and the 95% interval endpoints).

Wall and CPU times are both shown: on a loaded machine the CPU time of the (single-core)
PyMC run is the fairer figure.

Usage::

    .venv/bin/python benchmarks/bench_engines.py [--prior default|bda] [--draws 4000]
        [--chains 2] [--tune 1000] [--repeat 20] [--generated] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bayeseval import Counts  # noqa: E402
from bayeseval.models import fit_hierarchical  # noqa: E402

# BDA3 Table 5.1 (Tarone 1982): tumours y out of n rats in 71 groups.
RAT_Y = [0] * 14 + [1] * 8 + [2] * 9 + [1, 5, 2, 5, 3, 2, 7, 7, 3, 3, 2, 9, 10]
RAT_Y += [4] * 7 + [10, 4, 4, 4, 5, 11, 12, 5, 5, 6, 5, 6, 6, 6, 6, 16, 15, 15, 9, 4]
RAT_N = [20] * 7 + [19] * 4 + [18, 18, 17] + [20] * 4 + [19, 19, 18, 18, 25, 24, 23]
RAT_N += [20] * 6 + [10, 49, 19, 46, 27, 17, 49, 47, 20, 20, 13, 48, 50] + [20] * 7
RAT_N += [48, 19, 19, 19, 22, 46, 49, 20, 20, 23, 19, 22, 20, 20, 20, 52, 46, 47, 24, 14]

COLD_PROBE = r"""
import json, sys, time, warnings
sys.path.insert(0, {root!r})
warnings.simplefilter("ignore")
t0, c0 = time.perf_counter(), time.process_time()
from bayeseval import Counts
from bayeseval.models import fit_hierarchical
counts = Counts.from_arrays({y!r}, {n!r})
post = fit_hierarchical(counts, engine="pymc", prior={prior!r}, draws={draws}, chains={chains},
                        tune={tune}, random_seed=1)
post.summary()
print(json.dumps({{"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}}))
"""


def data(generated: bool) -> Counts:
    if not generated:
        return Counts.from_arrays(RAT_Y, RAT_N, strata=[f"rat_{i:02d}" for i in range(71)])
    rng = np.random.default_rng(71)
    n = rng.integers(20, 300, size=71)
    theta = rng.beta(2.0, 14.0, size=71)
    return Counts.from_arrays(rng.binomial(n, theta), n)


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prior", default="default")
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--generated", action="store_true", help="generated data instead of rats")
    ap.add_argument("--cold", action="store_true", help="also time a cold PyMC first call")
    args = ap.parse_args()
    counts = data(args.generated)
    opts = {"prior": args.prior, "draws": args.draws, "random_seed": 1}

    def exact():
        post = fit_hierarchical(counts, engine="exact", **opts)
        _ = post.theta  # the exact engine draws theta lazily: force the draws
        return post

    def pymc():
        return fit_hierarchical(counts, engine="pymc", chains=args.chains, tune=args.tune, cores=1, **opts)

    _, ex_first, _ = timed(exact)
    runs = [timed(exact) for _ in range(args.repeat)]
    ex_wall = float(np.median([r[1] for r in runs]))
    ex_cpu = float(np.median([r[2] for r in runs]))
    sums = [
        timed(lambda: fit_hierarchical(counts, engine="exact", **opts).summary())
        for _ in range(max(3, args.repeat // 4))
    ]
    ex_sum = sums[-1][0]
    ex_sum_wall = float(np.median([r[1] for r in sums]))
    ex_sum_cpu = float(np.median([r[2] for r in sums]))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, pm_first_wall, pm_first_cpu = timed(pymc)
        pm_post, pm_wall, pm_cpu = timed(pymc)
    pm_sum, pm_sum_wall, pm_sum_cpu = timed(pm_post.summary)
    conv = [str(w.message) for w in caught if "ConvergenceWarning" in w.category.__name__]

    cold = None
    if args.cold:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTENSOR_FLAGS=f"compiledir={tmp}")
            code = COLD_PROBE.format(
                root=str(ROOT),
                y=counts.successes.tolist(),
                n=counts.trials.tolist(),
                prior=args.prior,
                draws=args.draws,
                chains=args.chains,
                tune=args.tune,
            )
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            cold = json.loads(out.stdout.strip().splitlines()[-1])

    diff = (pm_sum[["mean", "lower", "upper"]] - ex_sum[["mean", "lower", "upper"]]).abs().max()
    name = "generated" if args.generated else "rat tumours (BDA3 Table 5.1)"
    print(f"data: {name}, {len(counts)} strata; prior={args.prior!r}; draws={args.draws}")
    print(
        f"PyMC: {args.chains} chains x {pm_post.diagnostics['draws_per_chain']} draws, "
        f"tune={args.tune}, 1 core; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs"
    )
    print()
    w = 50
    print(f"{'run (fit = Posterior with theta draws)':<{w}}{'wall s':>10}{'cpu s':>10}")
    print(f"{'exact fit, first call':<{w}}{ex_first:>10.4f}{'':>10}")
    print(f"{f'exact fit, median of {args.repeat}':<{w}}{ex_wall:>10.4f}{ex_cpu:>10.4f}")
    print(f"{'exact fit + summary() (exact grid quantiles)':<{w}}{ex_sum_wall:>10.4f}{ex_sum_cpu:>10.4f}")
    print(f"{'pymc fit, first call in process (import+compile)':<{w}}{pm_first_wall:>10.2f}{pm_first_cpu:>10.2f}")
    print(f"{'pymc fit, warm second call':<{w}}{pm_wall:>10.2f}{pm_cpu:>10.2f}")
    print(f"{'pymc summary()':<{w}}{pm_sum_wall:>10.4f}{pm_sum_cpu:>10.4f}")
    if cold is not None:
        print(
            f"{'pymc fit+summary, fresh process, empty compiledir':<{w}}{cold['wall']:>10.2f}"
            f"{cold['cpu']:>10.2f}  (cpu excludes the g++ subprocesses)"
        )
    print()
    ratio_wall, ratio_cpu = pm_wall / ex_wall, pm_cpu / ex_cpu
    verdict = "PASS" if ratio_cpu >= 100 else "FAIL"
    print(
        f"ratio pymc fit (warm) / exact fit: wall {ratio_wall:,.0f}x, cpu {ratio_cpu:,.0f}x "
        f"(target >= 100x on cpu: {verdict})"
    )
    print(
        f"ratio pymc fit (first call) / exact fit: wall {pm_first_wall / ex_wall:,.0f}x, "
        f"cpu {pm_first_cpu / ex_cpu:,.0f}x"
    )
    print(
        f"ratio with summary(): pymc (warm fit + summary) / exact (fit + summary): cpu "
        f"{(pm_cpu + pm_sum_cpu) / ex_sum_cpu:,.0f}x"
    )
    print()
    print("agreement (max |pymc - exact| over strata):")
    print(f"  posterior mean {diff['mean']:.4f}, 95% lower {diff['lower']:.4f}, 95% upper {diff['upper']:.4f}")
    import arviz as az

    mcse = az.mcse(pm_post.idata, var_names=["theta"])["theta"].to_numpy()
    z = np.abs(pm_sum["mean"].to_numpy() - ex_sum["mean"].to_numpy()) / mcse
    print(f"  largest |mean difference| / MCSE of the PyMC mean: {z.max():.2f}")
    d = pm_post.diagnostics
    print(
        f"PyMC diagnostics: R-hat max {d['rhat_max']:.4f}, bulk ESS min "
        f"{d['ess_bulk_min']:.0f}, tail ESS min {d['ess_tail_min']:.0f}, "
        f"divergences {d['divergences']}"
    )
    for msg in conv:
        print("  warning:", msg)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
