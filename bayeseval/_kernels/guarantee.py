"""What each stratum's interval promises: the :class:`Guarantee` objects and their bounds.

Three guarantees, one object each (:class:`Guarantee`):

- ``Guarantee.stratum()``: each stratum's interval covers that stratum's rate with
  probability at least ``level`` at every true rate (:func:`guaranteed_bounds`), also at the
  moment a campaign stops it, for which the interval is computed at the higher
  :func:`guarantee_stop_level`;
- ``Guarantee.anytime()``: the same per stratum, at every number of labels at once: each
  stratum's confidence sequence (:func:`anytime_bounds`, tuned by
  :func:`anytime_concentrations`), which needs no compensation for stopping;
- ``Guarantee.average()``: the pooled posterior's interval, which covers on average over
  strata like these (it has no per-stratum bounds of its own).

:func:`as_guarantee` turns what a user passes (``"stratum"``, ``"average"``, ``"anytime"``, a
:class:`Guarantee`, and the older ``anytime=True``) into the object, once, at the entry points
of :func:`bayeseval.evaluate`, :func:`bayeseval.audit`, :func:`bayeseval.gate` and the
campaigns; past them the code asks the object (:attr:`Guarantee.per_stratum`,
:meth:`Guarantee.stop_level`, :meth:`Guarantee.bounds`, :meth:`Guarantee.choose`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from bayeseval._api.docs import fill_doc
from bayeseval._api.validation import short_repr
from bayeseval._kernels.anytime import (
    confidence_sequence_bounds,
    planned_trials,
    tuned_concentration,
)
from bayeseval._kernels.binomial import GUARANTEES, binomial_bounds
from bayeseval._kernels.conflict import adaptive_bounds

__all__ = [
    "ANYTIME_MAX_PLAN",
    "ANYTIME_MIN_PLAN",
    "DECISION_MIN_TRIALS",
    "GUARANTEE_NAMES",
    "GUARANTEES",
    "STOP_ALPHA_SHARE",
    "Guarantee",
    "anytime_bounds",
    "anytime_concentrations",
    "as_guarantee",
    "guarantee_stop_level",
    "guaranteed_bounds",
    "implied_size",
]


# the guarantee objects
# ---------------------------------------------------------------------------------------
class _Kind(NamedTuple):
    """What a guarantee's name stands for (one row of :data:`_KINDS`)."""

    per_stratum: bool  # each stratum's own interval covers its rate (else the pooled one, on average)
    sequential: bool  # ... at every number of labels at once (a confidence sequence)
    scope: str  # the ``guarantee`` setting a campaign file stores and results show
    read: str  # what a campaign's ``read`` column calls the interval


#: every guarantee by name
_KINDS = {
    "stratum": _Kind(per_stratum=True, sequential=False, scope="stratum", read="guaranteed"),
    "average": _Kind(per_stratum=False, sequential=False, scope="average", read="pooled"),
    "anytime": _Kind(per_stratum=True, sequential=True, scope="stratum", read="anytime"),
}

#: the names :func:`as_guarantee` accepts where confidence sequences apply (campaigns);
#: :func:`bayeseval.evaluate`, :func:`bayeseval.audit` and :func:`bayeseval.gate` take
#: :data:`GUARANTEES` (``"stratum"`` and ``"average"``)
GUARANTEE_NAMES = tuple(_KINDS)


def _checked_name(value: Any, allowed: Sequence[str]) -> str:
    """``value`` lower-cased when it names one of ``allowed``, else a TypeError or ValueError."""
    if not isinstance(value, str):
        raise TypeError(f"guarantee must be a Guarantee or one of {list(allowed)}, got {short_repr(value)}")
    key = value.lower()
    if key not in allowed:
        raise ValueError(f"unknown guarantee {value!r}; valid choices are {list(allowed)}")
    return key


@dataclass(frozen=True, repr=False)
class Guarantee:
    """What each stratum's interval promises: ``stratum``, ``average`` or ``anytime``.

    Make one with :meth:`stratum`, :meth:`average` or :meth:`anytime` (or by name,
    ``Guarantee("stratum")``); :func:`bayeseval.evaluate`, :func:`bayeseval.audit`,
    :func:`bayeseval.gate`, :meth:`Campaign.create <bayeseval.campaign.Campaign.create>` and
    :func:`~bayeseval.campaign.simulation.simulate` take one as ``guarantee=`` as well as its
    name. Two guarantees are equal when their names are.

    Parameters
    ----------
    name : {"stratum", "average", "anytime"}
        The guarantee's name (any case).

    Attributes
    ----------
    name : str
        ``"stratum"``, ``"average"`` or ``"anytime"``.
    per_stratum : bool
        Whether each stratum's own interval covers its rate at every true rate
        (``stratum`` and ``anytime``), rather than the pooled interval on average over
        strata like these (``average``).
    sequential : bool
        Whether that holds at every number of labels at once (``anytime``: a confidence
        sequence per stratum).
    scope : str
        ``"stratum"`` for the per-stratum guarantees, ``"average"`` otherwise: the value of
        the ``guarantee`` setting a campaign file stores (``anytime`` adds ``anytime=True``)
        and results show.
    read : str
        What a campaign's ``read`` column calls the interval: ``"guaranteed"``,
        ``"anytime"`` or ``"pooled"``.

    Raises
    ------
    TypeError, ValueError
        For a name that is not a string, or not one of the three; the message names
        ``guarantee`` and the value.

    See Also
    --------
    bayeseval.evaluate : the ``guarantee`` argument of a report.
    bayeseval.confidence_sequence : the interval of ``anytime``.

    Examples
    --------
    >>> from bayeseval import Guarantee
    >>> g = Guarantee.stratum()
    >>> g, g.per_stratum, g.sequential, round(g.stop_level(0.95), 4)
    (Guarantee.stratum(), True, False, 0.965)
    >>> Guarantee.anytime().stop_level(0.95), Guarantee.anytime().scope
    (0.95, 'stratum')
    >>> Guarantee("Average") == Guarantee.average(), Guarantee.average().per_stratum
    (True, False)

    Each stratum's interval: Clopper-Pearson while fewer than three strata have trials
    (``scipy.stats.binomtest(3, 40).proportion_ci()`` for the first).

    >>> lo, hi = g.bounds([3, 5], [40, 50], 0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.0157, 0.2039)
    """

    name: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _checked_name(self.name, GUARANTEE_NAMES))

    # -- the three guarantees ---------------------------------------------------------------
    @classmethod
    def stratum(cls) -> Guarantee:
        """Each stratum's interval covers its own rate at every true rate, also at stop.

        Returns
        -------
        Guarantee
            ``Guarantee("stratum")``.

        Examples
        --------
        >>> Guarantee.stratum().per_stratum, Guarantee.stratum().read
        (True, 'guaranteed')
        """
        return _STRATUM

    @classmethod
    def average(cls) -> Guarantee:
        """The pooled posterior's interval: coverage on average over strata like these.

        Returns
        -------
        Guarantee
            ``Guarantee("average")``.

        Examples
        --------
        >>> Guarantee.average().per_stratum, Guarantee.average().scope
        (False, 'average')
        """
        return _AVERAGE

    @classmethod
    def anytime(cls) -> Guarantee:
        """Each stratum's confidence sequence: valid at every number of labels at once.

        Returns
        -------
        Guarantee
            ``Guarantee("anytime")``.

        Examples
        --------
        >>> Guarantee.anytime().sequential, Guarantee.anytime().read
        (True, 'anytime')
        """
        return _ANYTIME

    # -- what it is ------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Guarantee.{self.name}()"

    @property
    def _kind(self) -> _Kind:
        return _KINDS[self.name]

    @property
    def per_stratum(self) -> bool:
        """Whether each stratum's own interval covers its rate at every true rate."""
        return self._kind.per_stratum

    @property
    def sequential(self) -> bool:
        """Whether the per-stratum coverage holds at every number of labels at once."""
        return self._kind.sequential

    @property
    def scope(self) -> str:
        """``"stratum"`` (``stratum`` and ``anytime``) or ``"average"``: the stored setting."""
        return self._kind.scope

    @property
    def read(self) -> str:
        """What a campaign's ``read`` column calls the interval."""
        return self._kind.read

    # -- what it does ----------------------------------------------------------------------
    def stop_level(self, level: float) -> float:
        """Level of the interval a stratum stops on (and reports) under this guarantee.

        ``stratum``: :func:`guarantee_stop_level`, ``1 - 0.7 (1 - level)`` (0.965 at 0.95),
        which pays for stopping when the interval happens to be narrow. ``anytime``:
        ``level`` itself (a confidence sequence is valid at any stop). ``average``:
        ``level`` itself (the pooled interval).

        Parameters
        ----------
        level : float
            The level asked for.

        Returns
        -------
        float
            The level of the interval a stratum stops on.

        Examples
        --------
        >>> [round(g.stop_level(0.9), 4) for g in (Guarantee.stratum(), Guarantee.anytime(), Guarantee.average())]
        [0.93, 0.9, 0.9]
        """
        if self.per_stratum and not self.sequential:
            return guarantee_stop_level(level)
        return float(level)

    def bounds(
        self, successes: Any, trials: Any, level: float, concentration: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each stratum's own interval at ``level`` under this guarantee.

        ``stratum``: :func:`guaranteed_bounds` (the adaptive interval from the leave-one-out
        prior of the other strata, Clopper-Pearson while fewer than two other strata have
        trials); ``anytime``: :func:`anytime_bounds`, the confidence sequence with
        ``concentration``. ``[0, 1]`` without trials. Pass :meth:`stop_level` of the level
        for the interval a campaign stops on.

        Parameters
        ----------
        successes, trials : array_like of int
            Counts per stratum.
        level : float
            Level of the intervals.
        concentration : array_like, optional
            ``anytime`` only (and needed there): each stratum's prior concentration
            (:func:`anytime_concentrations`).

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.

        Raises
        ------
        ValueError
            Under ``average``, which reads the pooled posterior and has no per-stratum
            bounds of its own; under ``anytime`` without ``concentration``.

        Examples
        --------
        >>> lo, hi = Guarantee.anytime().bounds([10, 0], [100, 0], 0.95, concentration=[2.0, 2.0])
        >>> [round(float(v), 4) for v in (lo[0], hi[0], lo[1], hi[1])]
        [0.0258, 0.2193, 0.0, 1.0]
        """
        if not self.per_stratum:
            raise ValueError(
                f"guarantee {self.name!r} reads the pooled posterior: it has no per-stratum bounds of its own"
            )
        if not self.sequential:
            return guaranteed_bounds(successes, trials, level)
        if concentration is None:
            raise ValueError("the anytime guarantee's bounds need each stratum's concentration, got concentration=None")
        return anytime_bounds(successes, trials, level, concentration)

    def sequence_concentrations(self, rows: Any, level: float, halfwidth: float | None = None) -> np.ndarray | None:
        """The confidence sequences' concentrations :meth:`bounds` needs, or None.

        ``anytime``: :func:`anytime_concentrations` (tuned per stratum to its planned size);
        the other guarantees read no sequence: None.

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
        numpy.ndarray or None
            One concentration per stratum under ``anytime``, else None.

        Examples
        --------
        >>> Guarantee.stratum().sequence_concentrations([50, 500], 0.95) is None
        True
        >>> Guarantee.anytime().sequence_concentrations([50, 500], 0.95).shape
        (2,)
        """
        if not self.sequential:
            return None
        return anytime_concentrations(rows, level, halfwidth)

    def choose(
        self,
        own: tuple[Any, Any],
        pooled: tuple[Any, Any],
        atypical: Any = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The interval each stratum reads under this guarantee: its own one, or the pooled one.

        A per-stratum guarantee reads every stratum's ``own`` interval. ``average`` reads the
        ``pooled`` interval, except for the strata ``atypical`` marks (a count not clearly
        typical of what the other strata predict: :func:`bayeseval.evaluate`'s read rule),
        which read their own.

        Parameters
        ----------
        own, pooled : tuple of array_like
            ``(lower, upper)`` per stratum of each stratum's own interval and of the pooled one.
        atypical : array_like of bool or callable, optional
            ``average`` only: the strata that read their own interval, or a function of no
            arguments returning them (called only under ``average``); default none.

        Returns
        -------
        lower, upper : numpy.ndarray
            The interval each stratum reads.
        own : numpy.ndarray of bool
            Where that is its own interval.

        Examples
        --------
        >>> own, pooled = ([0.1, 0.2], [0.3, 0.4]), ([0.15, 0.22], [0.25, 0.33])
        >>> lo, hi, mine = Guarantee.average().choose(own, pooled, atypical=[False, True])
        >>> lo.tolist(), mine.tolist()
        ([0.15, 0.2], [False, True])
        >>> Guarantee.stratum().choose(own, pooled)[2].tolist()
        [True, True]
        """
        own_lo, own_hi = own
        k = len(own_lo)
        if self.per_stratum:
            return own_lo, own_hi, np.ones(k, bool)
        mask = atypical() if callable(atypical) else atypical
        mask = np.zeros(k, bool) if mask is None else np.asarray(mask, bool)
        return np.where(mask, own_lo, pooled[0]), np.where(mask, own_hi, pooled[1]), mask


_STRATUM, _AVERAGE, _ANYTIME = Guarantee("stratum"), Guarantee("average"), Guarantee("anytime")
_BY_NAME = {g.name: g for g in (_STRATUM, _AVERAGE, _ANYTIME)}


def as_guarantee(value: Any, anytime: bool = False, *, allowed: Sequence[str] = GUARANTEE_NAMES) -> Guarantee:
    """The :class:`Guarantee` a ``guarantee`` argument names: the one conversion, at the entry points.

    Parameters
    ----------
    value : str or Guarantee
        ``"stratum"``, ``"average"``, ``"anytime"`` (any case) or a :class:`Guarantee`.
    anytime : bool
        The older keyword of the campaigns: True makes a per-stratum guarantee
        ``Guarantee.anytime()``.
    allowed : sequence of str
        The guarantees the caller serves: all three (campaigns) or :data:`GUARANTEES`
        (``"stratum"`` and ``"average"``: reports, audits and the gate).

    Returns
    -------
    Guarantee
        The guarantee ``value`` names (``Guarantee.anytime()`` with ``anytime=True``).

    Raises
    ------
    TypeError
        For a value that is neither a string nor a :class:`Guarantee`.
    ValueError
        For a name or a guarantee not in ``allowed``, and for ``anytime=True`` with
        ``"average"``; the message names ``guarantee`` and the value.

    Examples
    --------
    >>> as_guarantee("stratum"), as_guarantee("stratum", anytime=True), as_guarantee(Guarantee.average())
    (Guarantee.stratum(), Guarantee.anytime(), Guarantee.average())
    >>> as_guarantee("anytime", allowed=GUARANTEES)
    Traceback (most recent call last):
    ...
    ValueError: unknown guarantee 'anytime'; valid choices are ['stratum', 'average']
    """
    guarantee = value if isinstance(value, Guarantee) else _BY_NAME[_checked_name(value, allowed)]
    if guarantee.name not in allowed:
        raise ValueError(f"guarantee must be one of {list(allowed)} here, got {guarantee!r}")
    if not anytime:
        return guarantee
    if not guarantee.per_stratum:
        raise ValueError(
            f"anytime=True reads each stratum's own confidence sequence, which is guarantee='stratum'; "
            f"got guarantee={guarantee.scope!r}"
        )
    return _ANYTIME


# the per-stratum guarantee
# ---------------------------------------------------------------------------------------
#: share of ``1 - level`` left to the stopping interval of the width goal under
#: ``guarantee="stratum"`` (0.95 -> 0.965; see :func:`guarantee_stop_level`)
STOP_ALPHA_SHARE = 0.7

#: fewest trials of its own a stratum needs before an anytime decision
DECISION_MIN_TRIALS = 5

#: planned trials of an ``anytime=True`` stratum: at least this many ...
ANYTIME_MIN_PLAN = 20
#: ... and, for the decision goals (no target half-width), at most this many
ANYTIME_MAX_PLAN = 4000


@fill_doc()
def guarantee_stop_level(level: float) -> float:
    """Level of the interval the width goal stops on (and reports) under ``guarantee="stratum"``.

    ``1 - 0.7 (1 - level)``: 0.965 at level 0.95. Stopping when an interval is narrow
    enough selects the runs whose interval happens to be narrow, which costs coverage at
    stop; the higher level pays for it.

    Parameters
    ----------
    {campaign_level}

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


@fill_doc()
def guaranteed_bounds(successes: Any, trials: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's interval with coverage at least ``level`` at every value of its own rate.

    The adaptive (FAB) interval from the leave-one-out prior of the other strata
    (:func:`bayeseval._kernels.conflict.adaptive_bounds`), for every stratum with trials while
    at least two other strata have trials; Clopper-Pearson for a stratum with trials otherwise;
    ``[0, 1]`` without trials. Which interval a stratum gets depends only on which strata
    have trials, never on the counts' values.

    Parameters
    ----------
    {counts_level}

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
