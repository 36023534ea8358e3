"""Numbers every planning function needs: the two-sided normal quantile of a level, and a
real-valued requirement rounded up to a count without floating-point noise.

Standard library only (no SciPy), so that the command line's ``plan`` commands start fast.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["CEIL_RTOL", "STANDARD_NORMAL", "ceil_count", "normal_quantile"]

#: Relative slack used when rounding a real-valued requirement up to an integer:
#: ``1.96**2 * 0.25 / 0.02**2`` evaluates to 2400.9999999999995 in floating point and must
#: give 2401, while 100.00000000001 (a rounding artefact of an exact 100) must give 100.
CEIL_RTOL = 1e-9

#: ``statistics.NormalDist.inv_cdf`` (Wichura's algorithm AS 241) agrees with
#: ``scipy.stats.norm.ppf`` to within 6 units in the last place for levels in [0.5, 1).
STANDARD_NORMAL = NormalDist()


def ceil_count(x: float) -> int:
    """Round a positive requirement up to a whole number, ignoring floating-point noise.

    Parameters
    ----------
    x : float
        A real-valued requirement (trials, rows).

    Returns
    -------
    int
        The smallest whole number at least ``x * (1 - CEIL_RTOL)``.

    Examples
    --------
    >>> ceil_count(1.96**2 * 0.25 / 0.02**2), ceil_count(100.00000000001), ceil_count(100.5)
    (2401, 100, 101)
    """
    return int(math.ceil(x * (1.0 - CEIL_RTOL)))


def normal_quantile(level: float) -> float:
    """Two-sided standard normal quantile :math:`\\Phi^{-1}((1 + \\text{level}) / 2)`.

    Parameters
    ----------
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    float
        The quantile (1.959964 at 0.95).

    Examples
    --------
    >>> round(normal_quantile(0.95), 6)
    1.959964
    """
    return STANDARD_NORMAL.inv_cdf(0.5 + level / 2.0)
