"""Which interval to read for a stratum under ``guarantee="average"``: the pooled one, or its adaptive one.

The rule :meth:`Posterior.summary(read=True) <bayeseval.models.posterior.Posterior.summary>` and
``evaluate(guarantee="average")`` apply, on its own: the leave-one-out conflict check of each
stratum against the other strata (:mod:`bayeseval._kernels.conflict`). With sampling units
(clusters of several rows) the same rule reads the pooled model over units: the statistic is
each stratum's total successes given its units' sizes, and the stratum's own interval is its
units' interval (:func:`units_read_choice`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval._api.validation import check_level, check_method, check_probability
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, ReadChoice, conflict_from_p_values, read_choice

__all__ = ["which_interval", "units_read_choice", "UNITS_READ"]

#: the ``read`` value of a stratum of units that reads its own units' interval
UNITS_READ = "units"


def _several_rows(counts: Any) -> bool:
    """Whether ``counts`` carry units of more than one row (binary outcomes assumed)."""
    units = getattr(counts, "units", None)
    return units is not None and len(units) > 0 and bool((units["unit_trials"].to_numpy() > 1).any())


def units_read_choice(
    counts: Any,
    level: float = 0.95,
    control: str = "per_stratum",
    *,
    threshold: float = READ_ADAPTIVE_P,
    prior: Any = "default",
    fit: Any = None,
) -> ReadChoice:
    """The read rule of :func:`which_interval` for the pooled model over units.

    Each stratum's total successes is checked against its leave-one-out predictive under the
    pooled model over units fitted to the other strata
    (:func:`bayeseval.models.exact_units.loo_units_p_values`), and the rule of
    :func:`bayeseval._kernels.conflict.read_choice` reads ``"units"`` (the stratum's own units'
    interval, :func:`bayeseval._kernels.bounded_mean.units_ci`) where the stratum is flagged or its
    mid-p value is at most ``threshold``, else ``"pooled"``. Counts without units of more than one
    row are read as rows: the choice is :func:`read_choice` of the counts (today's reading, with
    ``"adaptive"``).

    Measured (docs/validation.md, section 15c; 500 seeded datasets of 12 strata x 30 items x 5
    answers, one stratum at 0.5 among strata at 0.85-0.95): the outlying stratum's pooled interval
    covered it 0.834 (MC SE 0.017), the interval this rule points to 0.978 (0.007); the coverage
    averaged over the strata is 0.966 (pooled: 0.950), at 1.03x the pooled width for the typical
    strata (1.22x when all strata are alike, where one in five reads its units' interval).

    Parameters
    ----------
    counts : Counts
        Counts, with ``units`` of binary outcomes.
    level, control, threshold
        As in :func:`which_interval`.
    prior : {"default"}, dict or Prior
        Prior on ``(mu, phi)`` of the pooled model over units.
    fit : UnitsFit, optional
        The exact engine's fit of the pooled model over units to every stratum, when already made
        (the leave-one-out predictives reweight it: ``loo="reweight"`` of
        :func:`~bayeseval.models.exact_units.loo_units_p_values`).

    Returns
    -------
    ReadChoice
        ``read`` (``"pooled"`` or ``"units"``), ``reason``, the mask of strata reading their own
        interval (``adaptive``) and the conflict ``check``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval.counts.counts import Counts
    >>> units = pd.DataFrame({"stratum": ["a", "a", "b", "b", "c", "c"],
    ...                       "unit_successes": [3.0, 2.0, 3.0, 2.0, 0.0, 1.0],
    ...                       "unit_trials": [3, 3, 3, 3, 3, 3], "units": [8, 2, 7, 3, 8, 2]})
    >>> idx = pd.Index(["a", "b", "c"], name="stratum")
    >>> c = Counts(pd.Series([28.0, 27.0, 2.0], index=idx), pd.Series([30, 30, 30], index=idx), units=units)
    >>> units_read_choice(c).read.tolist()
    ['pooled', 'pooled', 'units']
    """
    level = check_level(level)
    control = check_method(control, ("per_stratum", "holm"), "control")
    threshold = check_probability(threshold, "threshold")
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    s = np.round(s).astype(np.int64)
    if not _several_rows(counts) or np.count_nonzero(n) < 2:
        return read_choice(s, n, alpha=1.0 - level, control=control, threshold=threshold)
    from bayeseval.models.exact_units import loo_units_p_values  # deferred: the units engine loads on use

    p_values = loo_units_p_values(counts, prior=prior, fit=fit)
    check = conflict_from_p_values(*p_values, n, alpha=1.0 - level, control=control)
    return read_choice(s, n, alpha=1.0 - level, control=control, threshold=threshold, check=check, own=UNITS_READ)


def which_interval(
    counts: Any,
    level: float = 0.95,
    control: str = "per_stratum",
    *,
    threshold: float = READ_ADAPTIVE_P,
) -> tuple[np.ndarray, np.ndarray]:
    """Which interval to read per stratum: the pooled one, or the adaptive one.

    The reference of each stratum is the exact leave-one-out predictive of its count
    under the Beta-binomial model fitted to the *other* strata
    (:func:`bayeseval.checks.predictive.conflict_check`). With units of several rows
    (``counts.units``) it is the leave-one-out predictive of the stratum's total successes under
    the pooled model over units, and the stratum's own interval is its units' interval
    (``"units"``, :func:`units_read_choice`). A stratum whose two-sided mid-p value is
    at most ``threshold`` (default 0.20), or that the conflict rule flags at
    ``1 - level``, is not clearly typical of the population the pooled interval borrows
    from: read its adaptive interval (``proportion_ci(..., method="adaptive")``), which
    keeps coverage >= level at every true rate whatever the other strata say. The
    others read the pooled interval. A false "adaptive" costs little width (the
    adaptive interval of a typical stratum is about as wide as Wilson's); a missed
    outlier costs coverage, which is why the threshold is above the usual 0.05.

    Measured coverage of the interval this points to, for a small outlying stratum: 0.950
    (docs/validation.md, section 6d).

    Parameters
    ----------
    counts : Counts
        Successes and trials per stratum.
    level : float
        ``1 - level`` is the error rate of the conflict flag (the reason then says the
        count is above or below what the other strata predict).
    control : {"per_stratum", "holm"}
        Error rate of the flag bounded per stratum (default) or per dataset (Holm).
    threshold : float
        Mid-p value at or below which a stratum reads its adaptive interval even when
        the flag rule does not flag it (0 turns this off: only flagged strata).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``"pooled"`` or ``"adaptive"`` (with units of several rows ``"units"``) per stratum, and the
        reason (with the p-value).

    Examples
    --------
    >>> from bayeseval.counts.counts import Counts
    >>> read, why = which_interval(Counts.from_arrays([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]))
    >>> read.tolist()[-2:]
    ['pooled', 'adaptive']
    >>> why[-1]
    'count above what the other strata predict (p = 0.0015)'
    """
    if _several_rows(counts):
        choice = units_read_choice(counts, level, control, threshold=threshold)
        return choice.read, choice.reason
    level = check_level(level)
    control = check_method(control, ("per_stratum", "holm"), "control")
    threshold = check_probability(threshold, "threshold")
    choice = read_choice(
        counts.successes.to_numpy(),
        counts.trials.to_numpy(),
        alpha=1.0 - level,
        control=control,
        threshold=threshold,
    )
    return choice.read, choice.reason
