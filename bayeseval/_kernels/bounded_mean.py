r"""A finite-sample valid interval for a stratum's rate from clustered or graded outcomes.

The data of one stratum are sampling units (an item answered several times, a passage with
several questions, a document with several positives): unit ``i`` has ``b_i`` trials (an
integer in ``1..M``) and ``a_i`` successes, a real number in ``[0, b_i]`` (graded outcomes such
as partial credit 0.5 allowed). Units are independent draws from the process; the rows of a
unit need not be. The estimand is the stratum's row-level rate

.. math:: R = E[a] / E[b],

the rate of the rows the process produces (with equal unit sizes it is the mean of the unit
means), estimated by :math:`\hat R = \sum_i a_i / \sum_i b_i`.

Construction (a test inversion, not the delta method). For a candidate rate ``r``,

.. math:: y_i(r) = (a_i - r b_i)/M + r

lies in ``[0, 1]`` (because :math:`-r b_i \le a_i - r b_i \le (1 - r) b_i` and
:math:`b_i \le M`) and has mean :math:`r + (E a - r E b)/M`, which equals ``r`` exactly when
:math:`R = r`. So ":math:`R = r`" is the hypothesis "the mean of the bounded i.i.d. variables
:math:`y_i(r)` is ``r``", tested with the hedged betting capital of Waudby-Smith and Ramdas
(2024, "Estimating means of bounded random variables by betting", JRSS-B 86(1), sections 4-5):

.. math::

    K^\pm(r) = \prod_{t=1}^n \bigl(1 \pm \lambda_t^\pm(r)\, (y_t(r) - r)\bigr),\qquad
    K(r) = \tfrac12 K^+(r) + \tfrac12 K^-(r),

with :math:`y_t(r) - r = (a_t - r b_t)/M`, predictable plug-in bets tuned for the known
sample size ``n`` (their fixed-``n`` choice)

.. math:: \lambda_t = \sqrt{2 \log(2/\alpha) / (n \hat\sigma^2_{t-1})},\qquad
          \lambda_t^+ = \min(\lambda_t, c / r),\quad \lambda_t^- = \min(\lambda_t, c/(1 - r)),

the truncation ``c`` (default 3/4, WSR's second choice; see below) keeping every factor at
least ``1 - c > 0``, and the
regularised running variance :math:`\hat\sigma^2_t = (1/4 + \sum_{j \le t} (z_j -
\hat\mu_j)^2)/(t + 1)`, :math:`\hat\mu_j = (1/2 + \sum_{k \le j} z_k)/(j + 1)`, of
:math:`z_j = y_j(\hat\rho_t)` with the running ratio :math:`\hat\rho_t = (1/2 + \sum_{j \le t}
a_j)/(1 + \sum_{j \le t} b_j)` (so the bets do not depend on the candidate ``r``; with equal
unit sizes ``y`` does not depend on ``r`` at all and this is exactly the WSR interval for the
mean of :math:`a_i / M`). Under :math:`R = r` each factor has conditional mean 1, so
:math:`K(r)` is a nonnegative martingale and :math:`E K_n(r) \le 1`. Because every bet is
independent of ``r``, :math:`K^+` is non-increasing and :math:`K^-` non-decreasing in ``r``.

The units are exchangeable, so the order in which they are bet on is arbitrary; to make the
result deterministic and independent of the order of the histogram rows, the rows are sorted,
expanded to one value per unit and the capital is averaged over a fixed set of seeded
permutations (all permutations when ``n <= 3``; at most :data:`MAX_ORDERS`, fewer for large
``n`` so the cost stays bounded). Each permuted capital is an e-value (the permutation is
drawn independently of the data), and an average of e-values is an e-value (Vovk and Wang
2021, "E-values: calibration, combination and applications", Ann. Statist. 49(3)), so by
Markov's inequality the set

.. math:: \{ r : \bar K(r) < 1/\alpha \}

covers ``R`` with probability at least :math:`1 - \alpha`. The reported interval is the
smallest interval holding that set and :math:`\hat R` (a superset, so still valid); its ends
are found from a coarse grid and then false position (Illinois) on :math:`\log \bar K`,
rounded outward. All :math:`a_i = 0` gives a lower end of exactly 0, all :math:`a_i = b_i` an
upper end of exactly 1; a stratum without units gives ``(nan, 0, 1)``.

``M`` is meant to be the design's bound on the unit size (the number of epochs, the most
questions a passage can carry). With every unit of that size the construction is the plain
bounded-mean test of :math:`a_i/M`. When ``bound`` is not given, ``M`` is the largest unit
size observed: exact when the sizes are equal, and otherwise a data-dependent choice that
the measured coverage below supports but the proof above does not cover.

A finite pool (population ``"pool"``, ``pool_units`` / ``pool_trials`` / ``pool``). The
stratum is a finite pool of ``N`` units holding ``B`` trials, its largest unit of ``M`` trials
(all known from the pool: only the successes need labels), and the ``n`` units labelled are a
simple random sample of them, drawn without replacement. The estimand is the pool's own rate
:math:`R = A / B`, ``A`` the successes summed over all ``N`` units. The mean of
:math:`y_i(r)` over the ``N`` units is :math:`r + (A - r B)/(N M)`, which is ``r`` exactly when
:math:`R = r`, so ":math:`R = r`" is the hypothesis that this finite population has mean ``r``.
Drawn without replacement, unit ``t``'s conditional mean given the units before it is the mean
of the unseen remainder,

.. math:: \mu_t(r) = \frac{N r - \sum_{j<t} y_j(r)}{N - t + 1}
          = r + \frac{r B_{<t} - A_{<t}}{M (N - t + 1)},

(Waudby-Smith and Ramdas 2024, section 6, sampling without replacement), so the capital bets
on :math:`y_t(r) - \mu_t(r) = ((a_t + A_{<t}/(N-t+1)) - r (b_t + B_{<t}/(N-t+1)))/M` (the
capital above with shifted units) with the same plug-in bets, truncated at :math:`c/\mu_t` and
:math:`c/(1 - \mu_t)`. Under :math:`R = r` each factor has conditional mean 1, and the rest
of the argument is the one above (a simple random sample put in an order drawn independently
of it is a sequence of draws without replacement). ``M`` is the pool's largest unit, known, so
the argument covers unequal unit sizes with no data-dependent bound. Since ``B`` is known,
``R`` also lies for sure in :math:`[A_n / B, (A_n + B - B_n) / B]` (every unseen trial a
failure, or a success); the interval is cut to that range, so it is the rate itself once every
unit is drawn. As ``N`` grows with ``n`` fixed it tends to the interval above (the process's).
A stratum whose units are all one binary row gets the exact hypergeometric limits instead
(:func:`bayeseval._kernels.finite_pool.pool_units_ci`). Measured
(``tests/kernels/test_pool_units.py``, ``benchmarks/pool_units.py``; ``docs/validation.md``,
section 14, "A pool of units"): by exact enumeration over every sample of ``n = 1..8`` of a
pool of 8 units of 1-3 rows (63 pools of successes on the grid ``{0, b/2, b}``), the lowest
coverage of the pool rate is 0.625, 0.750, 0.964 and 1.0 at levels 0.3, 0.5, 0.8 and 0.95;
on seeded pools of 50 and 200 units of 1-5 rows (item rates Beta with mean 0.05, 0.2, 0.5 and
within-unit correlation 1/3; 500 pools per configuration, MC SE 0.0097 at 0.95), at sampling
fractions 0.1-1.0, the lowest coverage at level 0.95 is 0.990, and the width over the process
interval's on the same units is 0.94-0.99 at a fraction of 0.1, 0.68-0.72 at 0.5, 0.29-0.35 at
0.9 and 0 at 1.0 (close to the finite-population correction :math:`\sqrt{1 - n/N}`).

Measured (``benchmarks/design_coverage.py``, level 0.95; the full table is in
``docs/validation.md``, "Clustered and graded outcomes"):

Worst coverage over the 90 configurations at each number of units (unit sizes 1, 5, 20 and
1-20, within-unit correlation 0-0.9, accuracy 0.5-0.98, binary and graded rows, a recall-type
ratio; 2,000 seeded datasets each, MC SE 0.0049 at 0.95) of (a) Wilson on rows, (b) the
cluster-robust CLT interval (CR1), (c) the t interval on unit means, (d) Hoeffding on
``y(r)``, (e) this interval; and the width of (e) over (b), min / median / max:

=====  =====  ======  ======  ======  ======  ======  ==================
units  cfgs   (a)     (b)     (c)     (d)     (e)     (e)/(b) width
=====  =====  ======  ======  ======  ======  ======  ==================
10     90     0.049   0.403   0.184   0.996   0.993   1.20 / 1.78 / 15.57
20     90     0.073   0.384   0.321   0.994   0.991   1.27 / 1.62 / 13.68
50     90     0.312   0.590   0.360   0.992   0.990   1.33 / 1.57 / 10.81
200    90     0.336   0.852   0.006   0.992   0.990   1.36 / 1.42 / 6.88
=====  =====  ======  ======  ======  ======  ======  ==================

Speed (one core, shared): 20,000 strata of 3-7 units in 1.5 s; one stratum of 10,000 units
in 0.03 s.

Width. The width target of 1.25x the cluster-robust CLT interval at 50 units is not met, and
no interval valid in finite samples for every distribution of the units can meet it
everywhere. Two costs add up. (1) Markov's inequality: a test that rejects when an e-value
reaches :math:`1/\alpha` has, near the CLT regime, half-width about
:math:`\sqrt{2 \log(2/\alpha)}\,\sigma/\sqrt n` against :math:`z_{1-\alpha/2}\,\sigma/\sqrt n`,
a ratio of 1.39 at level 0.95; measured: 1.33-1.57 with 50 binary units of size one, a median
of 1.42 at 200 units. (2) The
range: a unit's ``y`` may be 0 or 1, so every bet is capped at :math:`1/r` (and
:math:`1/(1-r)`); when the unit means are concentrated (large units with little within-unit
correlation, or a rate near 0 or 1) the capital cannot grow fast enough. With 50 units all
near 0.98, a share ``q`` of units at 0 goes unseen with probability :math:`(1-q)^{50} \ge 0.05`
up to :math:`q = 0.058`, so no valid lower end can exceed about 0.92, while the CLT interval
is 0.017 wide there. Tried, at 50 units on the binary and recall configurations of the grid
(300 seeded datasets each; width over CR1's, min / median / max over 45 configurations;
worst coverage):

=====================================  ========================  ============
variant                                width / CR1               min coverage
=====================================  ========================  ============
truncation c = 1/2                     1.32 / 1.83 / 10.3        0.990
truncation c = 3/4 (default)           1.33 / 1.55 / 7.7         0.987
truncation c = 0.9                     1.33 / 1.51 / 6.8         0.983
Hoeffding on ``y(r)``, for scale (*)   1.39 / 3.36 / 16.4        0.992
STaR-Bets, ``bets="star"`` (**)        1.09 / 1.51 / 6.1         0.977
=====================================  ========================  ============

(*) from the full run (2,000 datasets). With 1, 4 and 16 orders (size 5, correlation 0.3, c = 1/2) the width over CR1 was 1.49, 1.50
and 1.49.

(**) A private variant, not the default (see "STaR-Bets" below); in the same run the default
measured 1.33 / 1.57 / 7.7 and 0.983. At 10 units: 1.00 / 1.70 / 10.3 and 0.970 (default 1.20 /
1.68 / 11.3 and 0.993).

STaR-Bets. The target-recalculating bets of Voracek and Orabona (2025, "Sequential
Target-Recalculating Bets for Tighter Confidence Intervals", arXiv:2505.22422), used in the
same test of ":math:`R = r`" on :math:`y_i(r)`: each side bets

.. math:: \lambda_t(r) = \sqrt{2 \max(\log(2/\alpha) - \log K_{t-1}(r), 0) / ((n - t + 1) S_t(r))},

aiming to reach :math:`2/\alpha` (so the hedged average reaches :math:`1/\alpha`) at the last
unit, with their variance plug-in :math:`S_t = \min(\sum_{j<t} (y_j - r)^2/(t-1) + q\, n/(t-1)^2,\
r(1-r))` (``q = r`` for :math:`K^+`, ``1 - r`` for :math:`K^-`; :math:`S_1 = r(1-r)`), truncated
at ``0.99/r`` (``0.99/(1-r)``), and without their final randomisation (the interval stays a
function of the data). It is still an e-value: for a fixed ``r`` and a fixed order,
:math:`\lambda_t(r)` depends on :math:`y_1(r), \dots, y_{t-1}(r)` only, so under :math:`R = r`
each factor has conditional mean 1 and each side is a nonnegative martingale with mean 1, and
so is the average over sides and orders (checked exactly in the tests: :math:`E K(R) = 1` by
enumerating every outcome sequence). Unlike the default bets, these depend on ``r``, and the
capital is not monotone in ``r`` near the ends (on 200 random datasets, 19 acceptance sets were
not one interval, with slivers up to 0.007 beyond the first crossing), so the variant inverts on
a 65-point grid, takes the hull, scans 32 points over one grid step beyond each end and moves
the end to the outermost crossing (against a 4,000-point grid on the same 200 datasets, one
accepted sliver 0.0003 wide, 0.002 beyond the reported end, was missed). Exact coverage for
binary units of size one (sum over the binomial outcomes, ``p`` on a grid of 999): at least
0.962, 0.962, 0.966 at ``n`` = 10, 20, 50 (default 0.983, 0.987, 0.987), mean width 0.52,
0.39, 0.26 (default 0.61, 0.46, 0.30). The order average matters here: with one order the
exact coverage at ``n = 20`` is 0.899, since a fixed order of the sorted units is not an i.i.d.
sequence and STaR bets to land on the threshold (the orders come from a fixed seed; the
guarantee is over the seed, for the default as for this variant, and the enumeration checks
the seed in use). It is narrower than the default in 313 of the 360 configurations below but
wider (up to 1.14x) at a rate of 0.5 with concentrated unit means (large units, little
within-unit correlation), where the prior term :math:`q n/t^2` fades slowly (a weight of 0.25
on it helps there and costs at rates near 0.98; not adopted), and it costs 5-7x the time (one
sequential pass per candidate rate).
On the whole grid (``benchmarks/design_coverage.py``, column (f); 90 configurations per number
of units, binary and graded; 1,000 seeded datasets at 10, 20 and 50 units, MC SE 0.0069 at 0.95;
300 at 200 units, MC SE 0.0126): worst coverage 0.974, 0.968, 0.967, 0.963 at 10, 20, 50, 200
units (default 0.993, 0.990, 0.990, 0.983), none below level - 0.01; width over CR1, min /
median / max, 1.00 / 1.75 / 14.3, 1.04 / 1.62 / 11.6, 1.09 / 1.53 / 8.6, 1.14 / 1.40 / 5.0
(default 1.19 / 1.78 / 15.6, 1.27 / 1.62 / 13.6, 1.33 / 1.58 / 10.8, 1.36 / 1.42 / 6.8); width
over the default's 0.71-1.14, median 0.87-0.89. It stays private: the 1.25x target at 50 units
is still missed (the Markov cost above remains), and 200 units were run with 300 datasets only.

The default bets are WSR's fixed-``n`` tuning throughout (their time-uniform tuning,
:math:`t \log(1 + t)` in place of ``n``, serves looks at every ``n``: see "A confidence
sequence" below), with the empirical-Bernstein-style variance plug-in. Averaging
over more orders changes the width by under 1% (it buys determinism, not width). ``c = 3/4``
is the default: much narrower where the unit means are concentrated, 5% wider for single
binary rows near 0.8. Where the interval is wide against CR1, CR1 undercovers (0.65-0.80 at
a rate of 0.98 with within-unit correlation).

A confidence sequence (:func:`unit_cs`). Units that arrive in batches (a campaign labelling
whole items) are read at every look, so the interval must hold at a data-dependent stopping
time. The same test of ":math:`R = r`" on :math:`y_t(r)` is run on one order, the order the
units arrived, with WSR's time-uniform predictable plug-in bets (their section 4)

.. math:: \lambda_t = \sqrt{2 \log(2/\alpha) / (\hat\sigma^2_{t-1}\, t \log(1 + t))},

truncated at ``c/r`` and ``c/(1 - r)`` and with the variance plug-in above. The bet on unit
``t`` depends on the units before it only (not on how many follow), so under :math:`R = r` the
hedged capital :math:`K_t(r)` is a nonnegative martingale in ``t`` with :math:`K_0 = 1`, and by
Ville's inequality :math:`P(\exists t: K_t(R) \ge 1/\alpha) \le \alpha`: the running
intersection over the looks of the intervals holding :math:`\{r : K_t(r) < 1/\alpha\}` covers
``R`` at every look at once with probability at least ``level``. The units are not re-ordered:
an average over permutations of the units seen so far is an e-value at each fixed ``t`` but
not a martingale in ``t``. ``M`` must be fixed before the first unit (a campaign uses the
pool's largest unit). Measured (``tests/kernels/test_unit_cs.py``): by exact enumeration of
every binary sequence of units of size one, the lowest probability (``p`` on a grid of 999)
that the running interval holds ``p`` after every unit at once is 0.9869, 0.9830 and 0.9723 at
``n`` = 4, 8 and 12 (level 0.95); on 500 seeded sequences of 200 units of 1-5 rows (bound 5;
item rates Beta with mean 0.5, 0.9, 0.2 and within-unit correlation 0.3, 0.5, 0.1; binary and
graded rows; MC SE 0.0097), the capital at the true rate stays below :math:`1/\alpha` at every
unit in 0.972-0.994 of the sequences, and after 200 units the sequence is 1.06-1.15x as wide as
the fixed-``n`` interval of the same units.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from bayeseval._api.validation import check_level, short_repr

__all__ = [
    "MAX_ORDERS",
    "TRUNCATION",
    "log_capital",
    "unit_ci",
    "unit_cs",
    "units_ci",
]

#: most seeded unit orders the capital is averaged over
MAX_ORDERS = 16
#: the orders are capped so that orders x units stays below this (cost bounded at large n)
ORDER_BUDGET = 1 << 16
#: WSR truncation ``c`` of the bets: every factor of the capital stays at least ``1 - c``
TRUNCATION = 0.75
#: private variant of the bets: "star" (target-recalculating bets of Voracek and Orabona 2025)
BETS = ("wsr", "star")
#: truncation ``c`` of the STaR bets (their reference bets nearly all-in, ``1/(r + 0.001)``)
STAR_TRUNCATION = 0.99
#: weight of the STaR variance prior ``q n / t^2`` (their ``c``)
STAR_PRIOR = 1.0
#: seed of the unit orders (a constant: the interval is a deterministic function of the data)
ORDER_SEED = 20240145

_COARSE = 17  # coarse grid points on [0, 1]
_STAR_GRID = 65  # grid of the STaR variant, whose capital need not be monotone in r (the hull is taken)
_TOL = 1e-9
_MAX_ITER = 60
_CHUNK = 1 << 21  # elements per block of the (strata, orders, candidates, units) evaluation


def _orders(n: int, max_orders: int) -> np.ndarray:
    """The fixed unit orders for ``n`` units: (orders, n) permutations, a function of ``n`` only."""
    if n <= 3 and max_orders >= 6:  # every permutation: the average is exactly order-free
        return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
    k = int(max(1, min(max_orders, ORDER_BUDGET // max(n, 1))))
    rng = np.random.default_rng([ORDER_SEED, n])
    return np.argsort(rng.random((k, n)), axis=1)


def _bets(a: np.ndarray, b: np.ndarray, m: np.ndarray, level: float, anytime: bool = False) -> np.ndarray:
    """Fixed-n predictable plug-in bets :math:`\\lambda_t` (before truncation), shape of ``a``.

    ``a``, ``b``: (..., n) units in betting order; ``m``: the bound, broadcast to (..., 1).
    ``anytime``: WSR's time-uniform tuning, :math:`t \\log(1 + t)` in place of ``n`` (the bet on
    unit ``t`` then does not depend on how many units follow).
    """
    n = a.shape[-1]
    alpha = 1.0 - level
    t1 = np.arange(1, n + 1, dtype=float) + 1.0  # j + 1 for j = 1..n
    x = a / m  # y_j(rho) = x_j + rho * w_j
    w = 1.0 - b / m
    u = x - (0.5 + np.cumsum(x, axis=-1)) / t1
    v = w - np.cumsum(w, axis=-1) / t1
    rho = np.clip((0.5 + np.cumsum(a, axis=-1)) / (1.0 + np.cumsum(b, axis=-1)), 0.0, 1.0)
    ss = np.cumsum(u * u, axis=-1) + 2.0 * rho * np.cumsum(u * v, axis=-1) + rho * rho * np.cumsum(v * v, axis=-1)
    sigma2 = (0.25 + np.maximum(ss, 0.0)) / t1  # after t units
    prev = np.concatenate([np.full(a.shape[:-1] + (1,), 0.25), sigma2[..., :-1]], axis=-1)
    horizon = (t1 - 1.0) * np.log(t1) if anytime else float(n)
    return np.sqrt(2.0 * np.log(2.0 / alpha) / (horizon * prev))


def _log_mean_capital(
    a: np.ndarray,
    b: np.ndarray,
    m: np.ndarray,
    lam: np.ndarray,
    r: np.ndarray,
    c: float,
    wor: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Log of the order-averaged hedged capital at candidates ``r``.

    ``a``, ``b``, ``lam``: (S, K, n); ``m``: (S,); ``r``: (S, R). Returns (S, R). ``wor``: the
    finite pool's shifts ``(A_{<t}/(N-t+1), B_{<t}/(N-t+1))``, each (S, K, n) (:func:`_wor_shifts`):
    each unit is then bet against the running mean of the unseen remainder under ``R = r``.
    """
    s_, k_, n_ = a.shape
    out = np.empty(r.shape)
    per = max(1, _CHUNK // max(1, k_ * n_ * r.shape[1]))
    for lo in range(0, s_, per):
        sl = slice(lo, lo + per)
        rr = r[sl][:, None, :, None]  # (s, 1, R, 1)
        mm = m[sl][:, None, None, None]
        lm = lam[sl][:, :, None, :]
        if wor is None:
            d = (a[sl][:, :, None, :] - rr * b[sl][:, :, None, :]) / mm
            mu = rr
        else:  # y_t(r) - mu_t(r) = ((a_t + A') - r (b_t + B')) / M,  mu_t(r) = r + (r B' - A') / M
            sa, sb = wor[0][sl][:, :, None, :], wor[1][sl][:, :, None, :]
            d = ((a[sl][:, :, None, :] + sa) - rr * (b[sl][:, :, None, :] + sb)) / mm
            mu = np.clip(rr + (rr * sb - sa) / mm, 1e-12, 1.0 - 1e-12)  # outside: r rejected for sure
        with np.errstate(divide="ignore"):
            lp = np.minimum(lm, c / mu)
            ln = np.minimum(lm, c / (1.0 - mu))
        log_p = np.log1p(lp * d).sum(axis=-1)  # (s, K, R)
        log_n = np.log1p(-ln * d).sum(axis=-1)
        both = np.concatenate([log_p, log_n], axis=1)  # (s, 2K, R)
        top = both.max(axis=1)
        out[sl] = top + np.log(np.exp(both - top[:, None, :]).mean(axis=1))
    return out


def _log_mean_capital_star(
    a: np.ndarray, b: np.ndarray, m: np.ndarray, r: np.ndarray, level: float, c: float, prior: float = STAR_PRIOR
) -> np.ndarray:
    """Log of the order-averaged hedged STaR-Bets capital at candidates ``r`` (private variant).

    ``a``, ``b``: (S, K, n) units in betting order; ``m``: (S,); ``r``: (S, R). Returns (S, R).
    Each side bets :math:`\\lambda_t = \\sqrt{2 \\max(L - \\log K_{t-1}, 0) / ((n - t + 1) S_t)}`, the
    target-recalculating bet of Voracek and Orabona (2025, arXiv:2505.22422) with target
    ``L = log(2/alpha)`` (each side of the hedged capital must reach ``2/alpha``), truncated at
    ``c/r`` (``c/(1 - r)``) and with their variance plug-in :math:`S_t = \\min(\\sum_{j<t} (y_j -
    r)^2/(t-1) + \\text{prior}\\, q\\, n/(t-1)^2,\\ r (1 - r))` (``q = r`` for the lower side, ``1 - r``
    for the upper). The bets depend on ``r`` and on the capital so far, but only through the past:
    each side's capital is still a nonnegative martingale under :math:`R = r`.
    """
    s_, k_, n_ = a.shape
    target = np.log(2.0 / (1.0 - level))
    out = np.empty(r.shape)
    per = max(1, (_CHUNK // 8) // max(1, k_ * r.shape[1]))
    for lo in range(0, s_, per):
        sl = slice(lo, lo + per)
        rr = np.broadcast_to(r[sl][:, None, :], (r[sl].shape[0], k_, r.shape[1]))  # (s, K, R)
        inv_m = 1.0 / m[sl][:, None, None]
        cap_var = np.maximum(rr * (1.0 - rr), 1e-12)
        with np.errstate(divide="ignore"):
            cap_p = np.where(rr > 0, c / rr, np.inf)
            cap_n = np.where(rr < 1, c / (1.0 - rr), np.inf)
        lw_p = np.zeros(rr.shape)
        lw_n = np.zeros(rr.shape)
        sq = np.zeros(rr.shape)
        for t in range(n_):
            d = (a[sl][:, :, t, None] - rr * b[sl][:, :, t, None]) * inv_m  # y_t(r) - r
            if t == 0:
                var_p = var_n = cap_var
            else:
                base = sq / t
                var_p = np.minimum(base + prior * rr * n_ / (t * t), cap_var)
                var_n = np.minimum(base + prior * (1.0 - rr) * n_ / (t * t), cap_var)
            rest = float(n_ - t)
            lp = np.minimum(np.sqrt(2.0 * np.maximum(target - lw_p, 0.0) / (rest * np.maximum(var_p, 1e-12))), cap_p)
            ln = np.minimum(np.sqrt(2.0 * np.maximum(target - lw_n, 0.0) / (rest * np.maximum(var_n, 1e-12))), cap_n)
            lw_p += np.log1p(lp * d)
            lw_n += np.log1p(-ln * d)
            sq += d * d
        both = np.concatenate([lw_p, lw_n], axis=1)  # (s, 2K, R)
        top = both.max(axis=1)
        out[sl] = top + np.log(np.exp(both - top[:, None, :]).mean(axis=1))
    return out


def _prepare(a_sorted: np.ndarray, b_sorted: np.ndarray, m: np.ndarray, level: float, max_orders: int) -> tuple:
    """Units of strata with equal ``n`` (S, n), sorted, into (S, K, n) betting orders and bets."""
    perms = _orders(a_sorted.shape[1], max_orders)
    a = a_sorted[:, perms]
    b = b_sorted[:, perms]
    lam = _bets(a, b, m[:, None, None], level)
    return a, b, lam


def _wor_shifts(a: np.ndarray, b: np.ndarray, pool_units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""``A_{<t} / (N - t + 1)`` and ``B_{<t} / (N - t + 1)`` of units (S, K, n) in betting order.

    ``pool_units``: ``N`` per stratum (S,). Under ``R = r`` the unseen remainder of ``y(r)`` (its
    ``N - t + 1`` units before unit ``t``) has mean :math:`\mu_t(r) = r + (r B_{<t} - A_{<t})/(M (N - t + 1))`.
    """
    n = a.shape[-1]
    left = np.asarray(pool_units, dtype=float)[:, None, None] - np.arange(n, dtype=float)  # N - t + 1
    before_a = np.cumsum(a, axis=-1) - a
    before_b = np.cumsum(b, axis=-1) - b
    return before_a / left, before_b / left


def _ends(
    a_sorted: np.ndarray,
    b_sorted: np.ndarray,
    m: np.ndarray,
    level: float,
    c: float,
    max_orders: int,
    bets: str = "wsr",
    pool: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple:
    """Estimate, lower, upper for S strata with the same number of units ``n`` (arrays (S, n)).

    ``pool``: ``(N, B)`` per stratum, the finite pool's units and trials (population ``"pool"``):
    the capital bets against the unseen remainder (:func:`_wor_shifts`) and the interval is cut
    to the rates the unseen units can still make, ``[A / B, (A + B - B_n) / B]``.
    """
    a, b, lam = _prepare(a_sorted, b_sorted, m, level, max_orders)
    crit = -np.log1p(-level)
    est = a_sorted.sum(axis=1) / b_sorted.sum(axis=1)
    wor = None
    if pool is not None:
        if bets != "wsr":
            raise ValueError(f"a finite pool takes bets='wsr', got bets={bets!r}")
        wor = _wor_shifts(a, b, pool[0])
        seen_a, seen_b = a_sorted.sum(axis=1), b_sorted.sum(axis=1)
        sure_lo = seen_a / pool[1]
        sure_hi = (seen_a + pool[1] - seen_b) / pool[1]

    def f(r: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:  # >= 0: rejected
        sel = slice(None) if idx is None else idx
        if bets == "star":
            return _log_mean_capital_star(a[sel], b[sel], m[sel], r, level, c) - crit
        if wor is None:
            return _log_mean_capital(a[sel], b[sel], m[sel], lam[sel], r, c) - crit
        with np.errstate(invalid="ignore"):  # a factor below 0 only where no pool makes the rate
            val = _log_mean_capital(a[sel], b[sel], m[sel], lam[sel], r, c, (wor[0][sel], wor[1][sel])) - crit
        out = (r < sure_lo[sel][:, None] - _TOL) | (r > sure_hi[sel][:, None] + _TOL) | np.isnan(val)
        return np.where(out, np.maximum(np.nan_to_num(val, nan=1.0), 1.0), val)

    n_grid = _COARSE if bets == "wsr" else _STAR_GRID
    lower, upper = _invert(f, est, n_grid)
    if bets == "star":  # the capital is not monotone in r near the ends: take the hull of a local scan
        lower = _extend(f, lower, -1.0, 1.0 / (n_grid - 1))
        upper = _extend(f, upper, 1.0, 1.0 / (n_grid - 1))
    if pool is not None:  # the sure bounds cut the interval; every unit seen: the rate itself
        lower = np.minimum(np.maximum(lower, sure_lo), est)
        upper = np.maximum(np.minimum(upper, sure_hi), est)
        whole = a_sorted.shape[1] >= np.asarray(pool[0])
        lower, upper = np.where(whole, est, lower), np.where(whole, est, upper)
    return est, lower, upper


def _invert(f: Any, est: np.ndarray, n_grid: int = _COARSE) -> tuple[np.ndarray, np.ndarray]:
    """Ends of the smallest interval holding ``{r : f(r) < 0}`` and ``est``, per problem.

    ``f(r, idx)``: (P, R) candidates to values (>= 0: rejected) for the problems ``idx`` (all
    when None); found from a grid of ``n_grid`` points and false position at each end.
    """
    s_ = len(est)
    grid = np.broadcast_to(np.linspace(0.0, 1.0, n_grid), (s_, n_grid))
    cand = np.concatenate([grid, est[:, None]], axis=1)
    val = f(cand)
    ok = val < 0
    ok[:, -1] = True  # the interval always holds the estimate (a superset stays valid)
    rows = np.arange(s_)
    # lower end: the smallest accepted candidate, and the largest grid point below it
    lo_in = np.where(ok, cand, np.inf).min(axis=1)
    hi_in = np.where(ok, cand, -np.inf).max(axis=1)
    f_lo_in = val[rows, np.argmin(np.where(ok, cand, np.inf), axis=1)]
    f_hi_in = val[rows, np.argmax(np.where(ok, cand, -np.inf), axis=1)]
    below = np.where(grid < lo_in[:, None], grid, -np.inf)
    lo_out = below.max(axis=1)
    f_lo_out = val[rows, np.clip(np.argmax(below, axis=1), 0, n_grid - 1)]
    above = np.where(grid > hi_in[:, None], grid, np.inf)
    hi_out = above.min(axis=1)
    f_hi_out = val[rows, np.clip(np.argmin(above, axis=1), 0, n_grid - 1)]
    lower = _refine(f, lo_in, f_lo_in, lo_out, f_lo_out)
    upper = _refine(f, hi_in, f_hi_in, hi_out, f_hi_out)
    lower = np.where(np.isfinite(lo_out), lower, 0.0)  # 0 itself accepted
    upper = np.where(np.isfinite(hi_out), upper, 1.0)
    return lower, upper


def _extend(f: Any, end: np.ndarray, sign: float, window: float, points: int = 32, rounds: int = 4) -> np.ndarray:
    """Move an interval end outward to the outermost accepted point of a scan of ``window`` beyond it.

    ``sign`` -1 for the lower end, +1 for the upper. Each round scans ``points`` candidates over
    ``window`` beyond the end; when one is accepted, the end moves to the crossing (false position)
    between the outermost accepted candidate and the next one out, and the next round scans beyond
    the new end.
    """
    end = np.array(end, dtype=float)
    steps = np.arange(1, points + 1) * (window / points)
    todo = np.ones(len(end), dtype=bool)
    for _ in range(rounds):
        live = np.flatnonzero(todo & ((end > 0.0) if sign < 0 else (end < 1.0)))
        if live.size == 0:
            break
        cand = np.clip(end[live][:, None] + sign * steps, 0.0, 1.0)
        val = f(cand, live if live.size < len(end) else None)
        acc = val < 0
        hit = acc.any(axis=1)
        if not hit.any():
            break
        j = points - 1 - np.argmax(acc[:, ::-1], axis=1)  # outermost accepted scan point
        rows = np.arange(live.size)
        x_in, f_in = cand[rows, j], val[rows, j]
        jo = np.minimum(j + 1, points - 1)
        x_out = np.where(j + 1 < points, cand[rows, jo], np.nan)
        f_out = val[rows, jo]
        sub = np.flatnonzero(hit)
        done = sub[np.isnan(x_out[sub]) & (x_in[sub] == (0.0 if sign < 0 else 1.0))]
        end[live[done]] = x_in[done]  # the bound itself accepted
        inner = sub[~np.isnan(x_out[sub])]
        if inner.size:

            def g(r: np.ndarray, idx: np.ndarray | None = None, _ix: np.ndarray = live[inner]) -> np.ndarray:
                return f(r, _ix if idx is None else _ix[idx])

            end[live[inner]] = _refine(g, x_in[inner], f_in[inner], x_out[inner], f_out[inner])
        far = sub[np.isnan(x_out[sub]) & (x_in[sub] != (0.0 if sign < 0 else 1.0))]
        end[live[far]] = x_in[far]  # the last scan point accepted: scan again from there
        todo[:] = False
        todo[live[sub]] = True  # scan again beyond the new end where this round moved it
    return end


def _refine(f: Any, x_in: np.ndarray, f_in: np.ndarray, x_out: np.ndarray, f_out: np.ndarray) -> np.ndarray:
    """Illinois false position between an accepted point and a rejected one; returns the rejected end.

    Vectorised over strata; strata with no rejected point (``x_out`` infinite) are left alone.
    """
    x_in, f_in, x_out, f_out = (np.array(v, dtype=float) for v in (x_in, f_in, x_out, f_out))
    live = np.isfinite(x_out) & (np.abs(x_out - x_in) > _TOL)
    side = np.zeros(len(x_in), dtype=np.int8)  # which end moved last: 1 inside, -1 outside
    for it in range(_MAX_ITER):
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        xi, fi, xo, fo = x_in[idx], f_in[idx], x_out[idx], f_out[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = xi - fi * (xo - xi) / (fo - fi)
        bad = ~np.isfinite(x) | ((x - xi) * (x - xo) >= 0) | (it % 6 == 5)  # a bisection step now and then
        x = np.where(bad, 0.5 * (xi + xo), x)
        fx = f(x[:, None], None if idx.size == len(x_in) else idx)[:, 0]
        acc = fx < 0
        # Illinois: halve the value of the end kept twice in a row
        keep_out = acc & (side[idx] == 1)
        keep_in = ~acc & (side[idx] == -1)
        f_out[idx] = np.where(keep_out, fo * 0.5, fo)
        f_in[idx] = np.where(keep_in, fi * 0.5, fi)
        x_in[idx] = np.where(acc, x, xi)
        f_in[idx] = np.where(acc, fx, f_in[idx])
        x_out[idx] = np.where(acc, xo, x)
        f_out[idx] = np.where(acc, f_out[idx], fx)
        side[idx] = np.where(acc, 1, -1)
        live[idx] = np.abs(x_out[idx] - x_in[idx]) > _TOL
    return x_out


# -- inputs ----------------------------------------------------------------------------------


def _histogram(unit_successes: Any, unit_trials: Any, units: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated 1-D histogram arrays (rows with no unit or no trial dropped)."""
    names = ("unit_successes", "unit_trials", "units")
    arrs = []
    for name, v in zip(names, (unit_successes, unit_trials, units), strict=True):
        arr = np.asarray(v, dtype=float)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
        arrs.append(arr)
    a, b, k = arrs
    if not len(a) == len(b) == len(k):
        raise ValueError(
            f"unit_successes, unit_trials and units must have the same length, got {len(a)}, {len(b)}, {len(k)}"
        )
    for name, arr in (("unit_trials", b), ("units", k)):
        if np.any(arr < 0) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers >= 0, got {arr[(arr < 0) | (arr != np.round(arr))][0]}")
    keep = (k > 0) & (b > 0)
    a, b, k = a[keep], b[keep], k[keep]
    if np.any(a < 0) or np.any(a > b):
        raise ValueError("unit_successes must lie in [0, unit_trials] for every unit")
    return a, b, k.astype(np.int64)


def _truncation(truncation: Any, bets: Any) -> float:
    """The bets' truncation ``c`` (validated), with the default of the chosen bets."""
    if bets not in BETS:
        raise ValueError(f"bets must be one of {BETS}, got {bets!r}")
    if truncation is None:
        return STAR_TRUNCATION if bets == "star" else TRUNCATION
    c = float(truncation)
    if not 0.0 < c < 1.0:
        raise ValueError(f"truncation must lie in (0, 1), got {truncation!r}")
    return c


def _bound(bound: Any, largest: float) -> float:
    if bound is None:
        return largest
    m = float(bound)
    if not np.isfinite(m) or m < largest or m <= 0:
        raise ValueError(f"bound must be at least the largest unit size ({largest:g}), got {bound!r}")
    return m


def _expanded(a: np.ndarray, b: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One value per unit, in a canonical order (sorted by successes, then trials)."""
    order = np.lexsort((b, a))
    return np.repeat(a[order], k[order]), np.repeat(b[order], k[order])


# -- public ----------------------------------------------------------------------------------


def log_capital(
    unit_successes: Any,
    unit_trials: Any,
    units: Any,
    rates: Any,
    level: float = 0.95,
    *,
    bound: float | None = None,
    truncation: float | None = None,
    max_orders: int = MAX_ORDERS,
    bets: str = "wsr",
) -> np.ndarray:
    r"""Log of the order-averaged hedged betting capital :math:`\bar K(r)` of one stratum.

    Parameters
    ----------
    unit_successes, unit_trials, units : array_like
        The stratum's histogram: one row per distinct (successes, trials) pair of a unit and
        the number of units with that pair.
    rates : array_like
        Candidate rates ``r`` in [0, 1].
    level : float
        Sets the bets' tuning (:math:`\log(2/\alpha)`, :math:`\alpha = 1 -` level).
    bound : float, optional
        The largest possible unit size ``M`` (default: the largest observed).
    truncation : float, optional
        The bets' truncation ``c`` in (0, 1) (default 3/4; 0.99 for ``bets="star"``).
    max_orders : int
        Most unit orders averaged over.
    bets : {"wsr", "star"}
        The bets: WSR's fixed-``n`` plug-in (default) or the private STaR-Bets variant (see
        the module docstring, "Tried").

    Returns
    -------
    numpy.ndarray
        :math:`\log \bar K(r)` for each rate; the interval of :func:`unit_ci` is where it is
        below :math:`\log(1/\alpha)`.

    Examples
    --------
    At the observed rate the capital stays near 1; far from it, it grows:

    >>> lk = log_capital([0, 5, 3], [5, 5, 5], [4, 4, 2], [0.45, 0.95])
    >>> bool(lk[0] < 0.5 < np.log(20) < lk[1])
    True
    """
    level = check_level(level)
    a, b, k = _histogram(unit_successes, unit_trials, units)
    r = np.asarray(rates, dtype=float).reshape(1, -1)
    if a.size == 0:
        return np.zeros(r.shape[1])
    m = np.array([_bound(bound, float(b.max()))])
    ae, be = _expanded(a, b, k)
    c = _truncation(truncation, bets)
    ao, bo, lam = _prepare(ae[None, :], be[None, :], m, level, int(max_orders))
    if bets == "star":
        return _log_mean_capital_star(ao, bo, m, r, level, c)[0]
    return _log_mean_capital(ao, bo, m, lam, r, c)[0]


def unit_ci(
    unit_successes: Any,
    unit_trials: Any,
    units: Any,
    level: float = 0.95,
    *,
    bound: float | None = None,
    truncation: float | None = None,
    max_orders: int = MAX_ORDERS,
    bets: str = "wsr",
    pool_units: int | None = None,
    pool_trials: float | None = None,
) -> tuple[float, float, float]:
    r"""Estimate and finite-sample valid interval of one stratum's rate from its unit histogram.

    Parameters
    ----------
    unit_successes : array_like of float
        Successes of a unit (sum of its rows' outcomes in [0, 1]), one per histogram row.
    unit_trials : array_like of int
        Trials of a unit (its rows that count), 1 to ``bound``; rows with 0 are dropped.
    units : array_like of int
        How many units have that (successes, trials) pair.
    level : float
        Confidence level in (0, 1).
    bound : float, optional
        ``M``, the design's bound on the unit size (e.g. the number of epochs). Default: the
        largest unit size observed (exact when every unit has that size).
    truncation : float, optional
        The bets' truncation ``c`` in (0, 1) (default 3/4; WSR also use 1/2; 0.99 for
        ``bets="star"``).
    max_orders : int
        Most seeded unit orders the capital is averaged over.
    bets : {"wsr", "star"}
        The bets: WSR's fixed-``n`` plug-in (default) or the private STaR-Bets variant (see
        the module docstring, "Tried").
    pool_units, pool_trials : int, optional
        Population ``"pool"`` (both or neither): the units drawn are a simple random sample of
        a finite pool of ``pool_units`` units holding ``pool_trials`` trials, and the interval
        is for the pool's own rate (module docstring, "A finite pool"); ``bound`` should then be
        the pool's largest unit. Every unit drawn gives the rate itself.

    Returns
    -------
    estimate, lower, upper : float
        :math:`\sum a / \sum b` and the interval ends; ``(nan, 0.0, 1.0)`` without units.

    Raises
    ------
    ValueError
        When the arrays differ in length, a count is negative or fractional, successes fall
        outside ``[0, trials]``, or ``bound`` is below the largest unit size.

    Examples
    --------
    Ten items answered five times each (five always right, two always wrong, three 3 of 5):

    >>> est, lo, hi = unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3])
    >>> round(est, 2), bool(0.2 < lo < est < hi < 1.0)
    (0.68, True)
    >>> unit_ci([0], [5], [8])[:2]
    (0.0, 0.0)

    The same ten items drawn from a pool of 20 items of 5 answers, and from one of 10:

    >>> _, plo, phi = unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3], pool_units=20, pool_trials=100)
    >>> bool(lo < plo < phi < hi), unit_ci([5, 0, 3], [5, 5, 5], [5, 2, 3], pool_units=10, pool_trials=50)
    (True, (0.68, 0.68, 0.68))
    """
    level = check_level(level)
    a, b, k = _histogram(unit_successes, unit_trials, units)
    if (pool_units is None) != (pool_trials is None):
        raise ValueError(
            f"pool_units and pool_trials go together, got pool_units={pool_units!r}, pool_trials={pool_trials!r}"
        )
    if a.size == 0:
        return float("nan"), 0.0, 1.0
    m = np.array([_bound(bound, float(b.max()))])
    ae, be = _expanded(a, b, k)
    pool = None
    if pool_units is not None:
        pool = _pool_sizes(
            np.array([pool_units]), np.array([pool_trials]), np.array([ae.size]), np.array([be.sum()]), m
        )
    c = _truncation(truncation, bets)
    est, lo, hi = _ends(ae[None, :], be[None, :], m, level, c, int(max_orders), bets, pool)
    return float(est[0]), float(lo[0]), float(hi[0])


def unit_cs(
    unit_successes: Any,
    unit_trials: Any,
    level: float = 0.95,
    *,
    bound: float | None = None,
    truncation: float | None = None,
    looks: Any = None,
) -> Any:
    r"""Confidence sequence of one stratum's rate from its units in the order they arrived.

    The test of ":math:`R = r`" on :math:`y_t(r)` of :func:`unit_ci`, with WSR's time-uniform
    plug-in bets (module docstring, "A confidence sequence") on one fixed order, the order the
    units were labelled: the capital :math:`K_t(r)` is a nonnegative martingale in ``t`` under
    :math:`R = r`, so by Ville's inequality the running intersection of
    :math:`\{r : K_t(r) < 1/lpha\}` holds ``R`` at every look at once with probability at
    least ``level``, and the interval read at any stopping time keeps the level.

    Parameters
    ----------
    unit_successes : array_like of float
        Successes of each unit (sum of its rows' outcomes in [0, 1]), in arrival order.
    unit_trials : array_like of int
        Trials of each unit, 1 to ``bound``, in the same order (units with 0 trials are dropped).
    level : float
        Confidence level in (0, 1).
    bound : float, optional
        ``M``, the largest possible unit size, fixed before the first unit (the number of epochs,
        the pool's largest unit). Default: the largest unit size in the sequence (exact when every
        unit has that size; otherwise a data-dependent choice the proof does not cover).
    truncation : float, optional
        The bets' truncation ``c`` in (0, 1) (default 3/4).
    looks : array_like of int, optional
        Numbers of units after which the interval is read (increasing, 1 to the number of
        units); the running intersection is over these looks. Default: after every unit.

    Returns
    -------
    pandas.DataFrame
        One row per look: ``n_units``, ``estimate`` (:math:`\sum a / \sum b` so far), ``lower``,
        ``upper`` (the running intersection). Should the intersection be empty (at most
        ``1 - level`` of the time when the units are independent draws), both ends are the
        midpoint of the crossed ends.

    Raises
    ------
    ValueError
        When the arrays differ in length, successes fall outside ``[0, trials]``, ``bound`` is
        below the largest unit size, or ``looks`` is not increasing within the units.

    Examples
    --------
    Twenty items answered five times each, read after every five items:

    >>> a = [5, 4, 0, 5, 3, 5, 5, 2, 4, 5, 1, 5, 4, 5, 3, 5, 0, 4, 5, 5]
    >>> cs = unit_cs(a, [5] * 20, looks=[5, 10, 15, 20])
    >>> cs["n_units"].tolist(), round(float(cs["estimate"].iloc[-1]), 2)
    ([5, 10, 15, 20], 0.75)
    >>> bool((cs["lower"].diff().dropna() >= 0).all() and (cs["upper"].diff().dropna() <= 0).all())
    True

    It is wider than the fixed-``n`` interval of the same units, the price of every look:

    >>> _, lo, hi = unit_ci(a, [5] * 20, [1] * 20)
    >>> bool(cs["lower"].iloc[-1] < lo and hi < cs["upper"].iloc[-1])
    True
    """
    import pandas as pd

    level = check_level(level)
    c = _truncation(truncation, "wsr")
    a = np.asarray(unit_successes, dtype=float)
    b = np.asarray(unit_trials, dtype=float)
    _histogram(a, b, np.ones(a.shape))  # validation
    keep = b > 0
    a, b = a[keep], b[keep]
    n = a.size
    if looks is None:
        at = np.arange(1, n + 1)
    else:
        at = np.asarray(looks)
        if at.ndim != 1 or at.size == 0 or np.any(at != np.round(at)) or np.any(np.diff(at) <= 0):
            raise ValueError(f"looks must be increasing whole numbers, got {short_repr(looks)}")
        if at[0] < 1 or at[-1] > n:
            raise ValueError(f"looks must lie between 1 and the number of units ({n}), got {short_repr(looks)}")
        at = at.astype(np.int64)
    if n == 0:
        return pd.DataFrame({"n_units": [], "estimate": [], "lower": [], "upper": []})
    m = np.array([_bound(bound, float(b.max()))])
    est, lower, upper = _sequence_ends(a[None, :], b[None, :], m, level, c, at)
    return pd.DataFrame({"n_units": at, "estimate": est[0], "lower": lower[0], "upper": upper[0]})


def _sequence_log_capital(
    a: np.ndarray, b: np.ndarray, m: np.ndarray, level: float, c: float, r: np.ndarray
) -> np.ndarray:
    r"""Log hedged capital :math:`\log K_t(r)` along sequences, with the time-uniform bets.

    ``a``, ``b``: (S, n) units in arrival order; ``m``: (S,); ``r``: (S, R). Returns (S, n, R),
    the capital after each unit.
    """
    lam = _bets(a, b, m[:, None], level, anytime=True)
    rr = r[:, None, :]  # (S, 1, R)
    d = (a[:, :, None] - rr * b[:, :, None]) / m[:, None, None]
    with np.errstate(divide="ignore"):
        lp = np.minimum(lam[:, :, None], c / rr)
        ln = np.minimum(lam[:, :, None], c / (1.0 - rr))
    log_p = np.cumsum(np.log1p(lp * d), axis=1)
    log_n = np.cumsum(np.log1p(-ln * d), axis=1)
    return np.logaddexp(log_p, log_n) - np.log(2.0)


def _sequence_ends(
    a: np.ndarray, b: np.ndarray, m: np.ndarray, level: float, c: float, looks: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate and confidence-sequence ends of sequences (S, n) after each look, each (S, L).

    At each look the interval of :func:`_invert` (the hull of the accepted rates and the
    estimate) for the capital with the time-uniform bets; then the running intersection.
    """
    s_, n_ = a.shape
    lam = _bets(a, b, m[:, None], level, anytime=True)
    crit = -np.log1p(-level)
    n_looks = len(looks)
    seq = np.repeat(np.arange(s_), n_looks)  # problem p: sequence seq[p] after length[p] units
    length = np.tile(looks, s_)
    est = (np.cumsum(a, axis=1) / np.cumsum(b, axis=1))[:, looks - 1].ravel()

    def f(r: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        sq, ln_ = (seq, length) if idx is None else (seq[idx], length[idx])
        out = np.empty(r.shape)
        per = max(1, _CHUNK // max(1, n_ * r.shape[1]))
        for lo in range(0, len(sq), per):
            sl = slice(lo, lo + per)
            s = sq[sl]
            rr = r[sl][:, :, None]
            mask = np.arange(n_) < ln_[sl][:, None]
            d = (a[s][:, None, :] - rr * b[s][:, None, :]) / m[s][:, None, None] * mask[:, None, :]
            lm = lam[s][:, None, :]
            with np.errstate(divide="ignore"):
                log_p = np.log1p(np.minimum(lm, c / rr) * d).sum(axis=-1)
                log_n = np.log1p(-np.minimum(lm, c / (1.0 - rr)) * d).sum(axis=-1)
            out[sl] = np.logaddexp(log_p, log_n) - np.log(2.0) - crit
        return out

    lower, upper = _invert(f, est)
    lower = np.maximum.accumulate(lower.reshape(s_, n_looks), axis=1)
    upper = np.minimum.accumulate(upper.reshape(s_, n_looks), axis=1)
    crossed = lower > upper
    mid = 0.5 * (lower + upper)
    lower, upper = np.where(crossed, mid, lower), np.where(crossed, mid, upper)
    return est.reshape(s_, n_looks), lower, upper


def _pool_sizes(
    pool_units: Any, pool_trials: Any, seen_units: np.ndarray, seen_trials: np.ndarray, m: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(N, B)`` of finite pools as float arrays, or raise naming ``pool_units`` / ``pool_trials``.

    ``N`` at least the units seen; ``B`` between the trials seen plus one per unseen unit and
    the trials seen plus ``M`` per unseen unit.
    """
    n_pool = np.asarray(pool_units, dtype=float)
    b_pool = np.asarray(pool_trials, dtype=float)
    if not np.all(np.isfinite(n_pool)) or np.any(n_pool != np.round(n_pool)) or np.any(n_pool < seen_units):
        raise ValueError(
            f"pool_units must be whole numbers at least the units drawn, got {n_pool.tolist()[:5]} "
            f"for {np.asarray(seen_units).tolist()[:5]} units drawn"
        )
    unseen = n_pool - seen_units
    low, high = seen_trials + unseen, seen_trials + unseen * m
    if not np.all(np.isfinite(b_pool)) or np.any(b_pool < low - 1e-9) or np.any(b_pool > high + 1e-9):
        raise ValueError(
            f"pool_trials must lie between the trials drawn plus one per unseen unit and plus the bound per unseen "
            f"unit, got {b_pool.tolist()[:5]} (allowed from {low.tolist()[:5]} to {high.tolist()[:5]})"
        )
    return n_pool, b_pool


def units_ci(
    table: Any,
    index_columns: Any,
    level: float = 0.95,
    *,
    bound: float | None = None,
    truncation: float | None = None,
    max_orders: int = MAX_ORDERS,
    bets: str = "wsr",
    pool: Any = None,
) -> Any:
    """:func:`unit_ci` for every stratum of a units histogram, vectorised over strata.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``index_columns`` (the stratum), ``unit_successes``, ``unit_trials`` and
        ``units`` (the ``Counts.units`` layout).
    index_columns : str or list of str
        The stratum columns; the result is indexed by them (sorted).
    level : float
        Confidence level in (0, 1).
    bound : float, optional
        The design's bound on the unit size, for every stratum (default: each stratum's
        largest observed unit size).
    truncation, max_orders, bets
        As in :func:`unit_ci`.
    pool : pandas.DataFrame, optional
        Population ``"pool"``: per stratum of ``table`` (indexed like the result), the finite
        pool's ``pool_units``, ``pool_trials`` and ``pool_largest`` (its largest unit, the
        bound ``M``); see :func:`unit_ci`.

    Returns
    -------
    pandas.DataFrame
        ``estimate``, ``lower``, ``upper``, ``n_units``, ``n_trials`` per stratum; a stratum
        whose rows hold no unit with trials gets ``(nan, 0, 1)``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"g": ["x", "x", "y"], "unit_successes": [5.0, 3.0, 0.0],
    ...                   "unit_trials": [5, 5, 5], "units": [5, 5, 8]})
    >>> out = units_ci(t, "g")
    >>> out["n_units"].tolist(), float(out.loc["y", "lower"])
    ([10, 8], 0.0)
    >>> bool(out.loc["x", "lower"] == unit_ci([5, 3], [5, 5], [5, 5])[1])
    True
    """
    import pandas as pd

    level = check_level(level)
    c = _truncation(truncation, bets)
    cols = [index_columns] if isinstance(index_columns, str) else list(index_columns)
    missing = [c for c in [*cols, "unit_successes", "unit_trials", "units"] if c not in table.columns]
    if missing:
        raise ValueError(f"table is missing the columns {missing}")
    codes, uniques = _strata(table, cols, pd)
    a, b, k = (table[c].to_numpy(dtype=float) for c in ("unit_successes", "unit_trials", "units"))
    _histogram(a, b, k)  # validation
    keep = (k > 0) & (b > 0)
    codes, a, b, k = codes[keep], a[keep], b[keep], k[keep].astype(np.int64)
    n_strata = len(uniques)
    n_units = np.bincount(codes, weights=k, minlength=n_strata).astype(np.int64)
    n_trials = np.bincount(codes, weights=k * b, minlength=n_strata)
    est = np.full(n_strata, np.nan)
    lower, upper = np.zeros(n_strata), np.ones(n_strata)
    order = np.lexsort((b, a, codes))
    code_e = np.repeat(codes[order], k[order])
    a_e, b_e = np.repeat(a[order], k[order]), np.repeat(b[order], k[order])
    starts = np.concatenate([[0], np.cumsum(n_units)[:-1]])
    largest = np.zeros(n_strata)
    np.maximum.at(largest, code_e, b_e)
    m_all = np.full(n_strata, _bound(bound, float(largest.max()))) if bound is not None else largest
    sizes = None
    if pool is not None:
        need = ["pool_units", "pool_trials", "pool_largest"]
        if not all(col in getattr(pool, "columns", ()) for col in need):
            raise ValueError(f"pool must be a DataFrame with the columns {need}, got {short_repr(pool)}")
        aligned = pool.reindex(uniques)
        if aligned[need].isna().any().any():
            raise ValueError("pool must give pool_units, pool_trials and pool_largest for every stratum of the table")
        pl = aligned["pool_largest"].to_numpy(dtype=float)
        if np.any(pl < largest):
            raise ValueError("pool_largest must be at least the largest unit drawn in each stratum")
        m_all = pl
        sizes = _pool_sizes(aligned["pool_units"], aligned["pool_trials"], n_units, n_trials, m_all)
    for n in np.unique(n_units[n_units > 0]):
        sel = np.flatnonzero(n_units == n)
        pos = starts[sel][:, None] + np.arange(n)
        sub = None if sizes is None else (sizes[0][sel], sizes[1][sel])
        e, lo, hi = _ends(a_e[pos], b_e[pos], m_all[sel], level, c, int(max_orders), bets, sub)
        est[sel], lower[sel], upper[sel] = e, lo, hi
    return pd.DataFrame(
        {"estimate": est, "lower": lower, "upper": upper, "n_units": n_units, "n_trials": n_trials}, index=uniques
    )


def _strata(table: Any, cols: list, pd: Any) -> tuple[np.ndarray, Any]:
    """Integer stratum codes of the rows and the sorted stratum index."""
    if len(cols) == 1:
        codes, uniques = pd.factorize(table[cols[0]], sort=True)
        return codes.astype(np.int64), pd.Index(uniques, name=cols[0])
    idx = pd.MultiIndex.from_frame(table[cols])
    codes, uniques = pd.factorize(idx, sort=True)
    return codes.astype(np.int64), pd.MultiIndex.from_tuples(list(uniques), names=cols)
