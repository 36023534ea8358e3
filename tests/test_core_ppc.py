"""Predictive mid-p values of one count: exact tails against SciPy's Beta-binomial pmf."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from bayeseval._kernels.ppc import mixture_mid_p


def _reference(s, n, w, a, b):
    """Lower and upper mid-p of the mixture from SciPy's log pmf, summed in logs."""
    k = np.arange(n + 1)
    logpmf = special.logsumexp(
        np.log(w)[:, None] + stats.betabinom.logpmf(k[None, :], n, a[:, None], b[:, None]), axis=0
    )
    half = logpmf[s] - np.log(2.0)
    lower = np.logaddexp(special.logsumexp(logpmf[:s]) if s else -np.inf, half)
    upper = np.logaddexp(special.logsumexp(logpmf[s + 1 :]) if s < n else -np.inf, half)
    return lower, upper


@pytest.mark.parametrize(
    ("s", "n", "w", "a", "b"),
    [
        # far in the upper tail: 1 - P- would round to 0 (p about 1e-60)
        (32_000, 100_000, [1.0], [2e3], [8e3]),
        # a two-component mixture with 100,000 trials, tabulated: p about 2e-220
        (9_000, 100_000, [0.7, 0.3], [4e3, 2e3], [1.6e4, 8e3]),
        # 41 components x 100,001 counts: the interval is simulated, the p-value is not
        pytest.param(29_000, 100_000, np.full(41, 1 / 41), np.linspace(1e3, 2e3, 41),
                     np.linspace(4e3, 8e3, 41), marks=pytest.mark.slow),  # SciPy's reference: 3 s
    ],
)
def test_mid_p_values_match_scipy_far_in_the_tails(s, n, w, a, b):
    w, a, b = (np.asarray(v, float) for v in (w, a, b))
    lower, p, lo, hi = mixture_mid_p(s, n, w, a, b, rng=np.random.default_rng(0))
    ref_lower, ref_upper = _reference(s, n, w, a, b)
    assert lower == pytest.approx(min(np.exp(ref_lower), 1.0), rel=1e-7)
    ref_p = np.exp(np.log(2.0) + min(ref_lower, ref_upper))
    assert 0.0 < p < 1e-40
    assert p == pytest.approx(ref_p, rel=1e-7)
    assert lo <= hi <= n
