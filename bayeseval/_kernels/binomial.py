"""Binomial interval bounds: the one kernel behind every proportion interval in the package.

:func:`binomial_bounds` works on float arrays without validation, so callers can pass
fractional (effective) counts such as ``n / design_effect``. The formulas follow Brown, Cai and
DasGupta (2001), "Interval estimation for a binomial proportion", Statistical Science 16(2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from bayeseval._api.validation import check_method

#: one-proportion interval methods (each interval from its own counts only)
PROPORTION_METHODS = ("wilson", "jeffreys", "clopper_pearson", "agresti_coull", "wald")

#: the method that needs several strata: each stratum's interval borrows its tail split
#: from the other strata (``bayeseval._kernels.adaptive.adaptive_interval``)
ADAPTIVE = "adaptive"

#: every method ``proportion_ci`` accepts for a vector of strata
STRATA_METHODS = (*PROPORTION_METHODS, ADAPTIVE)

#: the methods whose coverage is at least the level for every stratum at every true rate
EXACT_METHODS = (ADAPTIVE, "clopper_pearson")

#: what a per-stratum interval promises: coverage for each stratum at every true rate
#: (``"stratum"``), or on average over strata like these (``"average"``: pooled intervals)
GUARANTEES = ("stratum", "average")

#: other spellings of the methods
METHOD_ALIASES = {
    "normal": "wald",
    "score": "wilson",
    "beta": "clopper_pearson",
    "exact": "clopper_pearson",
    "cp": "clopper_pearson",
    "ac": "agresti_coull",
    "fab": "adaptive",
}


def normalise_method(method: Any, *, adaptive: bool = False) -> str:
    """Return the canonical name of an interval method (aliases, case and dashes allowed).

    ``adaptive=True`` also accepts ``"adaptive"`` (alias ``"fab"``), the method that needs
    the counts of several strata; the error for an unknown method lists the methods
    accepted where it is called.

    Examples
    --------
    >>> normalise_method("Clopper-Pearson"), normalise_method("score")
    ('clopper_pearson', 'wilson')
    >>> normalise_method("FAB", adaptive=True)
    'adaptive'
    """
    if isinstance(method, str):
        key = method.lower().replace("-", "_")
        method = METHOD_ALIASES.get(key, key)
        if method == ADAPTIVE and not adaptive:
            raise ValueError(
                f"method {key!r} (the adaptive interval) needs the counts of several strata "
                f"and is not offered here; valid choices are {list(PROPORTION_METHODS)}"
            )
    return check_method(method, STRATA_METHODS if adaptive else PROPORTION_METHODS)


def _normal_bounds(s: np.ndarray, n: np.ndarray, z: float, method: str) -> tuple[Any, Any]:
    p = s / n
    if method == "wald":
        half = z * np.sqrt(p * (1 - p) / n)
        return p - half, p + half
    if method == "wilson":
        z2 = z * z
        denom = 1 + z2 / n
        centre = (p + z2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n**2)) / denom
        return np.where(s == 0, 0.0, centre - half), np.where(s == n, 1.0, centre + half)
    n_c = n + z * z  # agresti_coull
    p_c = (s + z * z / 2) / n_c
    half = z * np.sqrt(p_c * (1 - p_c) / n_c)
    return p_c - half, p_c + half


def _beta_bounds(s: np.ndarray, n: np.ndarray, alpha: float, method: str) -> tuple[Any, Any]:
    if method == "clopper_pearson":
        lo = stats.beta.ppf(alpha / 2, s, n - s + 1)
        hi = stats.beta.isf(alpha / 2, s + 1, n - s)
        # closed forms at the edges (beta.ppf is undefined for a zero shape)
        lo = np.where(s == 0, 0.0, lo)
        hi = np.where(s == n, 1.0, hi)
        lo = np.where((s == n) & (n > 0), (alpha / 2) ** (1 / n), lo)
        hi = np.where((s == 0) & (n > 0), 1 - (alpha / 2) ** (1 / n), hi)
        return lo, hi
    lo = stats.beta.ppf(alpha / 2, s + 0.5, n - s + 0.5)  # jeffreys
    hi = stats.beta.isf(alpha / 2, s + 0.5, n - s + 0.5)
    return np.where(s == 0, 0.0, lo), np.where(s == n, 1.0, hi)


def binomial_bounds(s: Any, n: Any, alpha: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Interval bounds for float arrays ``s <= n``, ``n > 0`` (no validation), clipped to [0, 1].

    Parameters
    ----------
    s, n : array-like of float
        Successes and trials; fractional (effective) counts are allowed.
    alpha : float
        One minus the confidence level.
    method : str
        A canonical method name (see :func:`normalise_method`).

    Returns
    -------
    tuple of numpy.ndarray
        Lower and upper bounds.

    Examples
    --------
    >>> lo, hi = binomial_bounds(7.0, 10.0, 0.05, "wilson")
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.3968, 0.8922)
    """
    n = np.asarray(n, dtype=float)
    # effective counts (s * n_eff / n) can round a hair above n at large n
    s = np.minimum(np.asarray(s, dtype=float), n)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method in ("wald", "wilson", "agresti_coull"):
            lo, hi = _normal_bounds(s, n, float(stats.norm.isf(alpha / 2)), method)
        else:
            lo, hi = _beta_bounds(s, n, alpha, method)
    lo = np.clip(np.asarray(lo, dtype=float), 0.0, 1.0)
    hi = np.clip(np.asarray(hi, dtype=float), 0.0, 1.0)
    return lo, hi
