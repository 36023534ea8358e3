r"""Exact intervals for the rate of a finite pool: rows drawn without replacement.

A stratum of the pool holds ``N`` rows (``pool_trials``), ``K`` of them successes (unknown).
``n`` rows (``trials``) are drawn from it at random without replacement and ``s`` of them
(``successes``) are successes, so ``s`` is hypergeometric given ``K``. The estimand is the
pool's own rate ``K / N``, not the rate of the process that produced the rows: once every row
is labelled (``n == N``) it is known exactly.

:func:`pool_ci` inverts the two hypergeometric tail tests, the finite-population analogue of
Clopper and Pearson's interval (Buonaccorsi 1987, "A note on confidence intervals for
proportions in finite populations", The American Statistician 41(3); Wright 1991, "Exact
confidence bounds when sampling from small finite universes", Lecture Notes in Statistics 66;
Wang 2015, "Exact confidence intervals for the hypergeometric parameter", Canadian Journal of
Statistics 43(4), who also shows that the normal interval with the finite-population
correction can cover as little as ``n / N``). With ``a = (1 - level) / 2``:

.. math::

    K_L = \min\{K : P(S \ge s \mid K) \ge a\}, \qquad
    K_U = \max\{K : P(S \le s \mid K) \ge a\},

and the interval for the rate is ``[K_L / N, K_U / N]``. Each tail is increasing (decreasing)
in ``K``, so each end is found by integer bisection over the ``K`` the sample allows
(``s <= K <= N - n + s``), and ``K_U(s) = N - K_L(n - s)`` by exchanging successes and
failures. A value ``K`` is left out only when one of its tails is below ``a``, which happens
with probability at most ``a`` under ``K``, so the interval covers ``K / N`` with probability
at least ``level`` for every ``K``, exactly (no approximation; the tests enumerate it). The
tails are closed (``>= a``, the convention of Clopper-Pearson's closed interval): a ``K``
whose tail equals ``a`` exactly is kept. As ``N`` grows with ``n`` fixed the limits tend to
Clopper-Pearson's. One-sided bounds (``side="lower"`` or ``"upper"``) put all of ``1 - level``
in one tail.

The tails are summed here rather than taken from :data:`scipy.stats.hypergeom`, whose cost
grows with ``N`` (about 0.15 ms per value at ``N = 10^5``, which makes 20,000 strata take
seconds per bisection step): the probability at the first term from ``betaln``, then the
ratio recurrence of consecutive terms, summed away from the mode until the terms are
negligible, vectorised over strata. :func:`pool_sample_size` plans the labels for a target
half-width, the finite-population analogue of :func:`bayeseval.sample_size`.

Units (a pool of sampling units of several rows, or graded outcomes): :func:`pool_units_ci`
gives each stratum the betting interval for sampling without replacement of
:mod:`bayeseval._kernels.bounded_mean` (module docstring there, "A finite pool"), and keeps
the exact limits above for a stratum whose units are all single binary rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import betaln

from bayeseval._api.validation import check_counts, check_level, check_positive_int, check_probability, short_repr

__all__ = [
    "POOL_SIDES",
    "expected_pool_halfwidth",
    "pool_ci",
    "pool_halfwidth",
    "pool_sample_size",
    "pool_units_ci",
]

#: the intervals :func:`pool_ci` gives: two-sided, or a lower or an upper confidence bound
POOL_SIDES = ("two", "lower", "upper")

#: a tail within this relative distance of its threshold counts as reaching it (the closed
#: convention; summation error is about 1e-13 relative, far below)
_TIE_RTOL = 1e-9

#: terms of a tail smaller than this share of the sum so far end the summation
_TERM_RTOL = 1e-17


# hypergeometric tails
# ---------------------------------------------------------------------------------------
def _log_choose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log C(a, b)`` for ``0 <= b <= a`` (floats), through ``betaln`` (accurate at large ``a``)."""
    return -np.log1p(a) - betaln(a - b + 1.0, b + 1.0)


def _log_pmf(x: np.ndarray, rows: np.ndarray, hits: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """``log P(S = x)`` for ``S ~ Hypergeometric(rows, hits, draws)``, ``x`` in the support."""
    return _log_choose(hits, x) + _log_choose(rows - hits, draws - x) - _log_choose(rows, draws)


def _tail_sum(
    start: np.ndarray, upward: np.ndarray, rows: np.ndarray, hits: np.ndarray, draws: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """Sum of the probabilities from ``start`` to ``end`` (upward or downward), terms decreasing.

    Every series starts beyond the mode on its side, so its terms decrease; it stops at the
    support's end or once a term is below :data:`_TERM_RTOL` of the sum (the rest is smaller
    still: the ratio of consecutive terms keeps falling away from the mode).
    """
    x = start.astype(float)
    term = np.exp(_log_pmf(x, rows, hits, draws))
    total = term.copy()
    other = rows - hits - draws  # N - K - n
    live = np.flatnonzero((x != end) & (term > 0))
    while live.size:
        xi, up = x[live], upward[live]
        k, n, o = hits[live], draws[live], other[live]
        ratio = np.where(
            up,
            (k - xi) * (n - xi) / ((xi + 1.0) * (o + xi + 1.0)),
            xi * (o + xi) / ((k - xi + 1.0) * (n - xi + 1.0)),
        )
        xi = xi + np.where(up, 1.0, -1.0)
        t = term[live] * ratio
        x[live], term[live] = xi, t
        total[live] += t
        live = live[(xi != end[live]) & (t > _TERM_RTOL * total[live])]
    return total


def _upper_tail(s: np.ndarray, rows: np.ndarray, hits: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """``P(S >= s)`` for ``S ~ Hypergeometric(rows, hits, draws)`` (float arrays of one shape).

    The smaller side is summed: upward from ``s`` when ``s`` lies above the mode, else
    ``1 - P(S <= s - 1)`` summed downward from ``s - 1``.
    """
    low = np.maximum(0.0, draws - (rows - hits))
    high = np.minimum(draws, hits)
    out = np.where(s <= low, 1.0, 0.0)
    inside = np.flatnonzero((s > low) & (s <= high))
    if inside.size == 0:
        return out
    si, n_rows, k, n = s[inside], rows[inside], hits[inside], draws[inside]
    mode = np.floor((n + 1.0) * (k + 1.0) / (n_rows + 2.0))
    up = si > mode
    start = np.where(up, si, si - 1.0)  # s - 1 >= low because s > low
    total = _tail_sum(start, up, n_rows, k, n, np.where(up, high[inside], low[inside]))
    out[inside] = np.where(up, total, 1.0 - total)
    return np.clip(out, 0.0, 1.0)


def _lowest_hits(s: np.ndarray, draws: np.ndarray, rows: np.ndarray, a: float) -> np.ndarray:
    """Smallest ``K`` in ``[s, rows - draws + s]`` with ``P(S >= s | K) >= a``, by integer bisection.

    The tail increases with ``K`` and is 1 at the top of the range (every failure of the pool
    is then needed among the draws), so the smallest such ``K`` exists.
    """
    threshold = a * (1.0 - _TIE_RTOL)
    lo = s.copy()
    hi = rows - draws + s
    found = _upper_tail(lo, rows, lo, draws) >= threshold
    hi = np.where(found, lo, hi)  # invariant: the tail reaches a at hi, not at lo (where not found)
    live = np.flatnonzero(hi - lo > 1)
    while live.size:
        mid = np.floor((lo[live] + hi[live]) / 2.0)
        ok = _upper_tail(s[live], rows[live], mid, draws[live]) >= threshold
        hi[live] = np.where(ok, mid, hi[live])
        lo[live] = np.where(ok, lo[live], mid)
        live = live[hi[live] - lo[live] > 1]
    return hi


def _check_pool(successes: Any, trials: Any, pool_trials: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts as float arrays of one shape: ``0 <= successes <= trials <= pool_trials``, pools non-empty."""
    s, n = check_counts(successes, trials)
    rows, _ = check_counts(pool_trials, pool_trials, successes_name="pool_trials", trials_name="pool_trials")
    try:
        s, n, rows = np.broadcast_arrays(s, n, rows)
    except ValueError as exc:
        raise ValueError(
            f"pool_trials has shape {np.shape(rows)}, which does not match the counts' shape {np.shape(s)}"
        ) from exc
    if np.any(rows == 0):
        i = int(np.flatnonzero((rows == 0).ravel())[0])
        raise ValueError(f"pool_trials must be positive (a stratum of the pool has rows), got 0 at position {i}")
    if np.any(n > rows):
        i = int(np.flatnonzero((n > rows).ravel())[0])
        raise ValueError(
            f"trials must not exceed pool_trials (rows are drawn without replacement): got "
            f"trials={n.ravel()[i]} > pool_trials={rows.ravel()[i]} at position {i}"
        )
    return s.astype(float), n.astype(float), rows.astype(float)


def _check_side(side: Any) -> str:
    if not isinstance(side, str) or side not in POOL_SIDES:
        raise ValueError(f"side must be one of {list(POOL_SIDES)}, got {short_repr(side)}")
    return side


def pool_ci(successes: Any, trials: Any, pool_trials: Any, level: float, *, side: str = "two") -> tuple[Any, Any]:
    r"""Exact interval for the rate of a finite pool, from rows drawn without replacement.

    For each stratum, ``trials`` rows drawn at random without replacement from its
    ``pool_trials`` rows showed ``successes`` successes; the interval is for the share of
    successes among all ``pool_trials`` rows (the pool's own rate), by inverting the
    hypergeometric tails (see the module's notes). Its coverage is at least ``level`` for
    every number of successes the pool may hold. A stratum whose every row was drawn
    (``trials == pool_trials``) gets its rate exactly (zero width); one with no draws gets
    ``[0, 1]``. The half-width a width-based stopping rule reads is :func:`pool_halfwidth`.

    Parameters
    ----------
    successes, trials : array_like of int
        Successes among the drawn rows, and the rows drawn, per stratum.
    pool_trials : array_like of int
        Rows of each stratum in the pool (at least ``trials``, at least 1).
    level : float
        Confidence level in (0, 1).
    side : {"two", "lower", "upper"}, default "two"
        ``"two"``: the two-sided interval, ``(1 - level) / 2`` in each tail. ``"lower"``: a
        lower confidence bound at ``level`` (upper end 1); ``"upper"``: an upper bound
        (lower end 0).

    Returns
    -------
    lower, upper : numpy.ndarray or float
        The interval ends as rates ``K / pool_trials`` (floats for scalar input).

    Raises
    ------
    TypeError, ValueError
        For counts that are not whole non-negative numbers, ``successes > trials``,
        ``trials > pool_trials``, an empty stratum, a level outside (0, 1) or an unknown
        ``side``; the message names the argument.

    Notes
    -----
    Cost: about 17 bisection steps per end at ``pool_trials = 10^5``, each a vectorised
    hypergeometric tail over the strata (20,000 strata of 10^5 rows with 2,000 draws each:
    about a second).

    Examples
    --------
    3 successes in 10 rows drawn from a pool of 50: the pool holds between 5 and 31 successes
    (``scipy.stats.hypergeom``: ``P(S >= 3)`` is 0.048 with 5 successes in the pool, 0.022
    with 4; ``P(S <= 3)`` is 0.026 with 31, 0.018 with 32).

    >>> lo, hi = pool_ci(3, 10, 50, 0.95)
    >>> round(lo * 50), round(hi * 50)
    (5, 31)

    Every row drawn: the rate itself; a large pool: close to Clopper-Pearson's (0.0667, 0.6525).

    >>> pool_ci(3, 10, 10, 0.95)
    (0.3, 0.3)
    >>> [round(float(v), 4) for v in pool_ci(3, 10, 10**7, 0.95)]
    [0.0667, 0.6525]
    """
    level = check_level(level)
    side = _check_side(side)
    scalar = all(np.ndim(v) == 0 for v in (successes, trials, pool_trials))
    s, n, rows = _check_pool(successes, trials, pool_trials)
    shape = s.shape
    s, n, rows = s.ravel(), n.ravel(), rows.ravel()
    alpha = 1.0 - level
    a = alpha / 2.0 if side == "two" else alpha
    k_lo = _lowest_hits(s, n, rows, a) if side != "upper" else np.zeros_like(s)
    k_hi = rows - _lowest_hits(n - s, n, rows, a) if side != "lower" else rows.copy()
    lo, hi = (k_lo / rows).reshape(shape), (k_hi / rows).reshape(shape)
    if scalar:
        return float(lo), float(hi)
    return lo, hi


def pool_halfwidth(successes: Any, trials: Any, pool_trials: Any, level: float) -> Any:
    """Half-width of :func:`pool_ci`'s two-sided interval: what a width goal stops on.

    Parameters
    ----------
    successes, trials, pool_trials : array_like of int
        As for :func:`pool_ci`.
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    numpy.ndarray or float
        ``(upper - lower) / 2`` per stratum; 0 for a stratum whose every row was drawn.

    Examples
    --------
    >>> round(pool_halfwidth(30, 100, 400, 0.95), 4), pool_halfwidth(30, 400, 400, 0.95)
    (0.08, 0.0)
    """
    lo, hi = pool_ci(successes, trials, pool_trials, level)
    return (hi - lo) / 2.0


def expected_pool_halfwidth(trials: Any, pool_trials: int, rate: float, level: float) -> np.ndarray:
    """Expected half-width of :func:`pool_ci` after ``trials`` draws from a pool at ``rate``.

    The pool holds ``round(rate * pool_trials)`` successes; the expectation is over the
    hypergeometric count of the draws (counts with probability below 1e-12 left out). No
    validation: :func:`pool_sample_size` checks its arguments and calls this.

    Parameters
    ----------
    trials : array_like of int
        Draw counts, each between 0 and ``pool_trials`` (0 gives 0.5, the unit interval's).
    pool_trials : int
        Rows of the stratum.
    rate : float
        Planning rate in [0, 1].
    level : float
        Confidence level.

    Returns
    -------
    numpy.ndarray
        One expected half-width per draw count.

    Examples
    --------
    >>> [round(float(v), 4) for v in expected_pool_halfwidth([0, 100, 400], 400, 0.5, 0.95)]
    [0.5, 0.0871, 0.0]
    """
    rows = float(pool_trials)
    hits = float(round(rate * pool_trials))
    out = []
    for n in np.atleast_1d(np.asarray(trials, dtype=float)).tolist():
        if n == 0:
            out.append(0.5)
            continue
        x = np.arange(max(0.0, n - (rows - hits)), min(n, hits) + 1.0)
        p = np.exp(_log_pmf(x, np.full_like(x, rows), np.full_like(x, hits), np.full_like(x, n)))
        keep = p > 1e-12
        x, p = x[keep], p[keep]
        lo, hi = pool_ci(x, np.full_like(x, n), np.full_like(x, rows), level)
        out.append(float(np.sum(p * (hi - lo) / 2.0) / np.sum(p)))
    return np.array(out)


def pool_sample_size(halfwidth: float, pool_trials: int, rate: float | None = None, level: float = 0.95) -> int:
    """Rows to draw from a stratum of ``pool_trials`` rows for a target half-width of :func:`pool_ci`.

    The finite-pool analogue of :func:`bayeseval.sample_size`: a number of draws whose
    expected half-width (over the hypergeometric count, the pool holding
    ``round(rate * pool_trials)`` successes) is at most ``halfwidth`` while one draw fewer
    gives more, found by doubling and integer bisection. The expected half-width falls with
    the draws, to 0 at ``pool_trials`` (so the answer is at most ``pool_trials``), but not
    strictly: the discreteness of the counts makes it zig-zag by up to about 0.001, so a
    smaller count may also reach the target by a hair; the answer is the first crossing the
    bisection finds.

    Parameters
    ----------
    halfwidth : float
        Target half-width, in (0, 1).
    pool_trials : int
        Rows of the stratum.
    rate : float, optional
        Planning rate in [0, 1]; None means the conservative 0.5.
    level : float, default 0.95
        Confidence level.

    Returns
    -------
    int
        Rows to draw, between 1 and ``pool_trials``.

    Raises
    ------
    TypeError, ValueError
        For a half-width outside (0, 1), a pool without rows, a rate outside [0, 1] or a level
        outside (0, 1); the message names the argument.

    Examples
    --------
    A pool of 400 rows at rate 0.5 needs about half the draws of the process rate's
    Clopper-Pearson interval (``bayeseval.sample_size(halfwidth=0.05, rate=0.5,
    method="clopper_pearson")`` is 402); a pool of 10^7 rows needs as many.

    >>> pool_sample_size(0.05, 400, 0.5), pool_sample_size(0.05, 10**7, 0.5)
    (196, 401)
    """
    e = check_probability(halfwidth, "halfwidth", open_interval=True)
    rows = check_positive_int(pool_trials, "pool_trials")
    r = 0.5 if rate is None else check_probability(rate, "rate")
    level = check_level(level)

    def ok(n: int) -> bool:
        return bool(expected_pool_halfwidth([n], rows, r, level)[0] <= e * (1.0 + 1e-12))

    hi = 1  # doubling, then integer bisection; ok(rows): the half-width is 0 once every row is drawn
    while hi < rows and not ok(hi):
        hi *= 2
    hi = min(hi, rows)
    lo = hi // 2  # ok(lo) is False (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return max(hi, 1)


def pool_units_ci(table: Any, index_columns: Any, pool: Any, level: float) -> Any:
    """Per stratum, the interval for the row-level rate of a finite pool of units, from the units drawn.

    Each stratum of the pool holds ``pool_units`` units with ``pool_trials`` trials in all (its
    largest unit ``pool_largest``), drawn as a simple random sample without replacement; the
    estimand is the pool's own rate, successes over trials summed over all its units. A stratum
    whose every unit is one binary row gets :func:`pool_ci` (exact hypergeometric limits);
    any other the betting interval for sampling without replacement
    (:func:`~bayeseval._kernels.bounded_mean.units_ci` with ``pool``). Both give the rate itself
    once every unit is drawn.

    Parameters
    ----------
    table : pandas.DataFrame
        The units drawn as a histogram: ``index_columns``, ``unit_successes``, ``unit_trials``,
        ``units`` (the ``Counts.units`` layout).
    index_columns : str or list of str
        The stratum columns.
    pool : pandas.DataFrame
        Per stratum (indexed like the result): ``pool_units``, ``pool_trials``, ``pool_largest``.
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    pandas.DataFrame
        ``estimate``, ``lower``, ``upper``, ``n_units``, ``n_trials`` per stratum of ``table``.

    Examples
    --------
    Single binary rows: the hypergeometric limits of :func:`pool_ci` (3 of 10 rows drawn from 50):

    >>> import pandas as pd
    >>> t = pd.DataFrame({"g": ["x", "x"], "unit_successes": [1.0, 0.0], "unit_trials": [1, 1], "units": [3, 7]})
    >>> p = pd.DataFrame({"pool_units": [50], "pool_trials": [50], "pool_largest": [1]}, index=pd.Index(["x"], name="g"))
    >>> out = pool_units_ci(t, "g", p, 0.95)
    >>> round(float(out.loc["x", "lower"]) * 50), round(float(out.loc["x", "upper"]) * 50)
    (5, 31)
    """
    from bayeseval._kernels.bounded_mean import units_ci

    level = check_level(level)
    out = units_ci(table, index_columns, level, pool=pool)
    cols = [index_columns] if isinstance(index_columns, str) else list(index_columns)
    aligned = pool.reindex(out.index)
    kept = table[(table["units"] > 0) & (table["unit_trials"] > 0)]
    binary = kept["unit_successes"].isin([0.0, 1.0]) & (kept["unit_trials"] == 1)
    mixed = kept.loc[~binary, cols].drop_duplicates()
    not_binary = set(map(tuple, mixed.to_numpy().tolist()))
    keys = [k if isinstance(k, tuple) else (k,) for k in out.index]
    rows = np.array([k not in not_binary for k in keys]) & (aligned["pool_largest"].to_numpy(float) == 1)
    rows &= out["n_units"].to_numpy() > 0
    if rows.any():
        s = out["estimate"].to_numpy(float)[rows] * out["n_trials"].to_numpy(float)[rows]
        lo, hi = pool_ci(
            np.rint(s), out["n_trials"].to_numpy(float)[rows], aligned["pool_trials"].to_numpy(float)[rows], level
        )
        out.loc[rows, "lower"], out.loc[rows, "upper"] = lo, hi
    return out
