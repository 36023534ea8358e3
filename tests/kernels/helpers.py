"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import numpy as np
from scipy import stats


def clopper_pearson(x, n, level):
    alpha = 1 - level
    lo = np.where(x > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1), n - x + 1), 0.0)
    hi = np.where(x < n, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(n - x, 1)), 1.0)
    return lo, hi


def _expected_width(lower, upper, n, truth):
    return float(stats.binom.pmf(np.arange(n + 1), n, truth) @ (upper - lower))


def _counts(k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 150, k)
    s = rng.binomial(n, rng.beta(2, 25, k))
    s[-1] = int(0.45 * n[-1])  # one outlier
    return s, n
