"""Tests of ``bayeseval.models.robust``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayeseval.models.robust import robust_logpmf


def test_robust_logpmf_is_the_stated_mixture():
    s, n, mu, kappa, eps = 7, 30, 0.12, 40.0, 0.1
    ref = np.log(
        (1 - eps) * stats.betabinom.pmf(s, n, mu * kappa, (1 - mu) * kappa) + eps * stats.betabinom.pmf(s, n, 1, 1)
    )
    assert robust_logpmf(s, n, mu, kappa, eps) == pytest.approx(ref, rel=1e-12)
    # and it sums to one over s
    total = np.exp(robust_logpmf(np.arange(n + 1), n, mu, kappa, eps)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)
