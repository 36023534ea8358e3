"""Exact operating characteristics of a sequential rule on one stratum.

Labels of one stratum arrive one at a time: independent Bernoulli trials with a true rate
``p``, or draws without replacement from a finite stratum of ``rows`` rows holding
``errors`` successes (the count after ``n`` draws is hypergeometric). The rule looks at
the counts ``(s, n)`` at given look sizes and stops at the first look where
``stop(s, n)`` holds; ``event(s, n)`` (e.g. "the interval covers p", "the decision is
wrong") is evaluated where it stops. Because the count is a Markov chain in ``n``, the
probability of every outcome follows exactly from a dynamic programme over (look, count):
the mass of the runs still going is carried from look to look as a vector over the count
and the stopped mass is removed at each look. Nothing is simulated.

Tested against brute-force enumeration of every label sequence and against seeded simulation
(``tests/kernels/test_sequential.py``); its cost and what it shows about sequential rules:
docs/validation.md, sections 10 and 12c.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from bayeseval._api.validation import check_positive_int, check_probability, short_repr

__all__ = ["SequentialOutcome", "look_sizes", "sequential_outcome"]

Rule = Callable[[np.ndarray, int], Any]


class SequentialOutcome(NamedTuple):
    """Exact outcome probabilities of a sequential rule (see :func:`sequential_outcome`).

    Attributes
    ----------
    looks : numpy.ndarray
        The look sizes (number of labels at each look).
    stop_probability : numpy.ndarray
        Probability that the rule stops at each look (the rule's own stops only).
    event_probability : float
        Probability that the rule stops (at some look) and the event holds there.
    cap_probability : float
        Probability that the rule never stops up to the last look.
    cap_event_probability : float
        Probability that the rule never stops and the event holds at the last look.
    expected_trials : float
        Expected labels used: the look where the rule stops, the last look for a run
        that never stops.
    """

    looks: np.ndarray
    stop_probability: np.ndarray
    event_probability: float
    cap_probability: float
    cap_event_probability: float
    expected_trials: float

    @property
    def event_at_end(self) -> float:
        """Probability of the event where the run ends (its stop, or the last look)."""
        return self.event_probability + self.cap_event_probability


def look_sizes(*, every: int | None = None, looks: Any = None, max_trials: int | None = None) -> np.ndarray:
    """The look sizes of a schedule: every ``every`` labels up to ``max_trials``, or a list.

    Parameters
    ----------
    every : int, optional
        Look after every ``every`` labels; the last look is at ``max_trials`` (also when it
        is not a multiple of ``every``).
    looks : array_like of int, optional
        Explicit, strictly increasing positive look sizes (instead of ``every``); with
        ``max_trials``, those beyond it are dropped and ``max_trials`` is not added.
    max_trials : int, optional
        The cap; required with ``every``.

    Returns
    -------
    numpy.ndarray of int

    Examples
    --------
    >>> look_sizes(every=20, max_trials=50).tolist()
    [20, 40, 50]
    >>> look_sizes(looks=[5, 10, 30], max_trials=20).tolist()
    [5, 10]
    """
    if (every is None) == (looks is None):
        raise ValueError(f"give exactly one of every and looks, got every={every!r}, looks={short_repr(looks)}")
    if looks is None:
        every = check_positive_int(every, "every")
        if max_trials is None:
            raise ValueError("max_trials is required with every (the cap of the schedule)")
        cap = check_positive_int(max_trials, "max_trials")
        return np.unique(np.append(np.arange(every, cap + 1, every), cap)).astype(np.int64)
    sizes = np.asarray(looks)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"looks must be a non-empty 1-D sequence of integers, got {short_repr(looks)}")
    if sizes[0] < 1 or np.any(np.diff(sizes) <= 0):
        raise ValueError(f"looks must be positive and strictly increasing, got {short_repr(sizes.tolist())}")
    if max_trials is not None:
        sizes = sizes[sizes <= check_positive_int(max_trials, "max_trials")]
    return sizes.astype(np.int64)


def _bernoulli_step(dist: np.ndarray, m: int, rate: float) -> np.ndarray:
    """Counts after ``m`` more Bernoulli(rate) trials."""
    if m == 1:
        out = np.zeros(dist.size + 1)
        out[:-1] = dist * (1.0 - rate)
        out[1:] += dist * rate
        return out
    return np.convolve(dist, stats.binom.pmf(np.arange(m + 1), m, rate))


def _finite_step(dist: np.ndarray, n0: int, m: int, rows: int, errors: int) -> np.ndarray:
    """Counts after ``m`` more draws without replacement (``n0`` drawn so far), one draw at a
    time: the composition of single draws is the hypergeometric transition, exactly."""
    for i in range(m):
        q = np.maximum(errors - np.arange(dist.size), 0) / (rows - n0 - i)
        out = np.zeros(dist.size + 1)
        out[:-1] = dist * (1.0 - q)
        out[1:] += dist * q
        dist = out
    return dist


def _check_population(rate: Any, rows: Any, max_trials: int) -> tuple[float, tuple[int, int] | None]:
    """The rate and, for a finite stratum, its ``(rows, errors)``."""
    rate = check_probability(rate, "rate")
    if rows is None:
        return rate, None
    rows = check_positive_int(rows, "rows")
    errors = round(rate * rows)
    if abs(errors - rate * rows) > 1e-9 * rows:
        raise ValueError(f"rate * rows must be a whole number of errors, got rate={rate!r}, rows={rows}")
    if max_trials > rows:
        raise ValueError(f"the last look ({max_trials}) exceeds the rows of the stratum ({rows})")
    return rate, (rows, int(errors))


def _as_bool(value: Any, size: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=bool), (size,))


def sequential_outcome(
    rate: float,
    stop: Rule,
    event: Rule,
    *,
    every: int | None = None,
    looks: Any = None,
    max_trials: int | None = None,
    rows: int | None = None,
) -> SequentialOutcome:
    """Exact probabilities of a sequential rule's outcomes on one stratum.

    Parameters
    ----------
    rate : float
        True rate of the stratum (share of successes among its rows when ``rows`` is given).
    stop, event : callable
        ``f(s, n) -> bool array``: ``s`` is the array ``0..n`` of possible counts at a look
        of ``n`` labels (an int). ``stop`` says where the rule stops; ``event`` is
        evaluated where it stops and, for the runs that never stop, at the last look.
    every, looks, max_trials : optional
        The look schedule (see :func:`look_sizes`); without ``every`` and ``looks``, a
        look after every label. ``max_trials`` defaults to ``rows`` when ``rows`` is
        given.
    rows : int, optional
        Draw without replacement from a stratum of ``rows`` rows holding
        ``rate * rows`` (a whole number) successes; default independent Bernoulli trials.

    Returns
    -------
    SequentialOutcome

    Examples
    --------
    Stop at the first success, looking after every label, at most 10 labels: the stop
    size is geometric, so the rule stops by 10 labels with probability ``1 - 0.8**10``.

    >>> out = sequential_outcome(0.2, lambda s, n: s >= 1, lambda s, n: s >= 1, max_trials=10)
    >>> round(out.event_probability, 6), round(1 - 0.8**10, 6)
    (0.892626, 0.892626)
    >>> round(out.expected_trials, 4), round((1 - 0.8**10) / 0.2, 4)  # E[min(T, 10)]
    (4.4631, 4.4631)
    """
    if rows is not None and max_trials is None:
        max_trials = check_positive_int(rows, "rows")
    if every is None and looks is None:
        every = 1
    sizes = look_sizes(every=every, looks=looks, max_trials=max_trials)
    rate, population = _check_population(rate, rows, int(sizes[-1]))
    dist, n = np.ones(1), 0
    stopped = np.zeros(sizes.size)
    event_mass = expected = 0.0
    for j, look in enumerate(sizes.tolist()):
        m = look - n
        dist = _bernoulli_step(dist, m, rate) if population is None else _finite_step(dist, n, m, *population)
        n = look
        s = np.arange(n + 1)
        halt = _as_bool(stop(s, n), n + 1)
        hit = _as_bool(event(s, n), n + 1)
        stopped[j] = dist[halt].sum()
        event_mass += dist[halt & hit].sum()
        expected += n * stopped[j]
        dist = np.where(halt, 0.0, dist)
        if not dist.any():  # every run has stopped: the later looks see nothing
            break
    cap = float(dist.sum())
    cap_event = float(dist[hit].sum())
    return SequentialOutcome(sizes, stopped, float(event_mass), cap, cap_event, float(expected + n * cap))
