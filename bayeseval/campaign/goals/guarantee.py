"""What a campaign's per-stratum intervals promise: the guaranteed interval and its level.

Under ``guarantee="stratum"`` each stratum's interval is :func:`guaranteed_bounds` at
:func:`guarantee_stop_level`: coverage at least ``level`` at every true rate of that stratum,
also at the moment the campaign stops it. ``guarantee="average"`` uses the pooled posterior.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval._kernels.anytime import (
    confidence_sequence_bounds,
    planned_trials,
    tuned_concentration,
)
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.conflict import adaptive_bounds

__all__ = ["GUARANTEES", "anytime_bounds", "anytime_concentrations", "guarantee_stop_level", "guaranteed_bounds"]


# the per-stratum guarantee
# ---------------------------------------------------------------------------------------
#: what a campaign's per-stratum intervals and decisions promise (see :class:`RuleState`)
GUARANTEES = ("stratum", "average")

#: share of ``1 - level`` left to the stopping interval of the width goal under
#: ``guarantee="stratum"`` (0.95 -> 0.965; see :func:`guarantee_stop_level`)
STOP_ALPHA_SHARE = 0.7

#: fewest trials of its own a stratum needs before an anytime decision
DECISION_MIN_TRIALS = 5

#: planned trials of an ``anytime=True`` stratum: at least this many ...
ANYTIME_MIN_PLAN = 20
#: ... and, for the decision goals (no target half-width), at most this many
ANYTIME_MAX_PLAN = 4000


def guarantee_stop_level(level: float) -> float:
    """Level of the interval the width goal stops on (and reports) under ``guarantee="stratum"``.

    ``1 - 0.7 (1 - level)``: 0.965 at level 0.95. Stopping when an interval is narrow
    enough selects the runs whose interval happens to be narrow, which costs coverage at
    stop; the higher level pays for it.

    Parameters
    ----------
    level : float
        The campaign's level.

    Returns
    -------
    float

    Notes
    -----
    Measured exactly for one stratum (:func:`bayeseval._kernels.sequential.sequential_outcome`,
    adaptive interval with a fixed ``Beta(2, 18)`` prior, target half-width 0.05, at most
    1,000 labels, looks every 1, 5, 20 and 50 labels, true rates 0.02-0.50): computed at
    0.95 the interval covers the true rate at stop 0.945 on average and 0.924 at worst
    (rate 0.11, a look after every label); computed at 0.965 its worst coverage at stop is
    0.94 or more for every rate and schedule (``tests/campaign/loop/test_rules.py`` checks rates
    0.05, 0.11 and 0.30).

    Examples
    --------
    >>> round(guarantee_stop_level(0.95), 4)
    0.965
    """
    return 1.0 - STOP_ALPHA_SHARE * (1.0 - float(level))


def guaranteed_bounds(successes: Any, trials: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's interval with coverage at least ``level`` at every value of its own rate.

    The adaptive (FAB) interval from the leave-one-out prior of the other strata
    (:func:`bayeseval._kernels.conflict.adaptive_bounds`), for every stratum with trials while
    at least two other strata have trials; Clopper-Pearson for a stratum with trials otherwise;
    ``[0, 1]`` without trials. Which interval a stratum gets depends only on which strata
    have trials, never on the counts' values.

    Parameters
    ----------
    successes, trials : array_like of int
        Counts per stratum.
    level : float
        Confidence level.

    Returns
    -------
    lower, upper : numpy.ndarray

    Examples
    --------
    Two strata only: Clopper-Pearson (``scipy.stats.binomtest(3, 40).proportion_ci()``).

    >>> lo, hi = guaranteed_bounds([3, 5], [40, 50], 0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.0157, 0.2039)
    """
    s = np.asarray(successes, dtype=np.int64)
    n = np.asarray(trials, dtype=np.int64)
    lo, hi = np.zeros(s.size), np.ones(s.size)
    has = n > 0
    if np.count_nonzero(has) >= 3:  # every stratum with trials has two others with trials
        alo, ahi = adaptive_bounds(s, n, level)
        lo[has], hi[has] = alo[has], ahi[has]
    elif has.any():
        lo[has], hi[has] = binomial_bounds(s[has].astype(float), n[has].astype(float), 1.0 - level, "clopper_pearson")
    return lo, hi


def implied_size(halfwidth: np.ndarray, mean: np.ndarray, level: float) -> np.ndarray:
    """Effective sample size a half-width stands for: ``z^2 m (1 - m) / h^2`` (at least 1)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2.0)
    m = np.clip(mean, 0.02, 0.98)
    return np.maximum(z**2 * m * (1.0 - m) / np.maximum(halfwidth, 1e-9) ** 2, 1.0)


# anytime=True: each stratum's confidence sequence
# ---------------------------------------------------------------------------------------
def anytime_concentrations(rows: Any, level: float, halfwidth: float | None = None) -> np.ndarray:
    """Prior concentration of each stratum's confidence sequence, tuned for its planned size.

    With a target ``halfwidth`` (goal ``"each"``) a stratum plans for the fewest trials at
    which the tuned sequence reaches the target at rate 1/2, the worst case
    (:func:`bayeseval._kernels.anytime.planned_trials`: 918 at 0.05 and level 0.95), capped
    at the stratum's rows; without one (goals ``"decide"`` and ``"gap"``) for its rows,
    capped at 4,000; at least 20 either way. The concentration is
    :func:`bayeseval._kernels.anytime.tuned_concentration` at that size. It depends on the
    settings and the pool's sizes only, never on labels, as the sequence's guarantee needs.

    Parameters
    ----------
    rows : array_like of int
        Rows per stratum that may be labelled.
    level : float
        Level of the sequences.
    halfwidth : float, optional
        The target half-width of the width goal.

    Returns
    -------
    numpy.ndarray
        One concentration per stratum.

    Examples
    --------
    >>> c = anytime_concentrations([50, 100_000], 0.95, halfwidth=0.05)
    >>> bool(c[0] < c[1]), round(float(c[1]), 1) == round(tuned_concentration(918, 0.95), 1)
    (True, True)
    """
    rows = np.asarray(rows, dtype=np.int64)
    cap = planned_trials(float(halfwidth), level) if halfwidth is not None else ANYTIME_MAX_PLAN
    plan = np.clip(np.minimum(rows, cap), ANYTIME_MIN_PLAN, None)
    return np.array([tuned_concentration(int(n), level) for n in plan], dtype=float)


def anytime_bounds(successes: Any, trials: Any, level: float, concentration: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's confidence sequence at ``level``: ``[0, 1]`` without trials.

    Parameters
    ----------
    successes, trials : array_like of int
        Counts per stratum.
    level : float
        Level of the sequences (valid at every number of trials at once).
    concentration : array_like
        Prior concentration per stratum (:func:`anytime_concentrations`).

    Returns
    -------
    lower, upper : numpy.ndarray

    Examples
    --------
    >>> lo, hi = anytime_bounds([10, 0], [100, 0], 0.95, [2.0, 2.0])
    >>> [round(float(v), 4) for v in (lo[0], hi[0], lo[1], hi[1])]
    [0.0258, 0.2193, 0.0, 1.0]
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    c = np.broadcast_to(np.asarray(concentration, dtype=float), n.shape)
    keys = [(float(level), float(c[j]), float(s[j]), float(n[j])) for j in range(n.size)]
    todo = [j for j, key in enumerate(keys) if n[j] > 0 and key not in _SEQUENCE_CACHE]
    if todo:  # a campaign changes few strata between looks: only those are computed again
        if len(_SEQUENCE_CACHE) > _SEQUENCE_CACHE_SIZE:
            _SEQUENCE_CACHE.clear()
        new_lo, new_hi = confidence_sequence_bounds(s[todo], n[todo], level, c[todo])
        _SEQUENCE_CACHE.update((keys[j], (lo_j, hi_j)) for j, lo_j, hi_j in zip(todo, new_lo, new_hi, strict=True))
    ends = [_SEQUENCE_CACHE[key] if n[j] > 0 else (0.0, 1.0) for j, key in enumerate(keys)]
    return np.array([e[0] for e in ends], dtype=float), np.array([e[1] for e in ends], dtype=float)


#: (level, concentration, successes, trials) -> the sequence's ends, for :func:`anytime_bounds`
_SEQUENCE_CACHE: dict[tuple[float, float, float, float], tuple[float, float]] = {}
_SEQUENCE_CACHE_SIZE = 200_000
