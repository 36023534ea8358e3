r"""Variance of a population-weighted sum of stratum rates.

For shares :math:`\pi_k`, rates :math:`r_k` and trials :math:`n_k`, the stratified estimator
:math:`\hat R = \sum_k \pi_k \hat r_k` has variance :math:`\sum_k \pi_k^2 r_k (1 - r_k) / n_k`
(Cochran 1977, *Sampling Techniques*, 3rd ed., section 5.3). Planning evaluates it at planned
rates and counts; the estimate at the observed ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def stratum_variance_terms(weights: Any, rates: Any, trials: Any) -> np.ndarray:
    r"""Each stratum's term :math:`\pi_k^2 r_k (1 - r_k) / n_k` (no validation).

    Parameters
    ----------
    weights, rates, trials : array-like of float
        Population shares, rates in [0, 1] and trials per stratum (positive).

    Returns
    -------
    numpy.ndarray
        One term per stratum; their sum is the variance of the weighted rate.

    Examples
    --------
    >>> stratum_variance_terms([0.8, 0.2], [0.1, 0.5], [100, 50]).round(6).tolist()
    [0.000576, 0.0002]
    """
    w = np.asarray(weights, dtype=float)
    r = np.asarray(rates, dtype=float)
    n = np.asarray(trials, dtype=float)
    return w**2 * r * (1 - r) / n
