"""Which interval to read for a stratum under ``guarantee="average"``: the pooled one, or its adaptive one.

The rule :meth:`Posterior.summary(read=True) <bayeseval.models.posterior.Posterior.summary>` and
``evaluate(guarantee="average")`` apply, on its own: the leave-one-out conflict check of each
stratum against the other strata (:mod:`bayeseval._kernels.conflict`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bayeseval._api.validation import check_level, check_method, check_probability
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, read_choice

__all__ = ["which_interval"]


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
    (:func:`bayeseval.checks.predictive.conflict_check`). A stratum whose two-sided mid-p value is
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
        ``"pooled"`` or ``"adaptive"`` per stratum, and the reason (with the p-value).

    Examples
    --------
    >>> from bayeseval.counts.counts import Counts
    >>> read, why = which_interval(Counts.from_arrays([4, 6, 5, 3, 7, 4, 9], [50, 70, 60, 40, 80, 50, 20]))
    >>> read.tolist()[-2:]
    ['pooled', 'adaptive']
    >>> why[-1]
    'count above what the other strata predict (p = 0.0015)'
    """
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
