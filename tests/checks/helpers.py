"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import warnings

import numpy as np

from bayeseval import fit_hierarchical
from bayeseval._api.warnings import PrecisionLimitedWarning


def fit(s, n, seed=0, draws=4000, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        return fit_hierarchical(s, n, draws=draws, random_seed=seed, **kw)


def planted_outlier(seed: int, k: int = 15, n: int = 100):
    # k - 1 strata from Beta(20, 180) (mean 0.10, sd 0.021) and one at 0.35
    rng = np.random.default_rng([8, seed])
    theta = rng.beta(20, 180, size=k)
    theta[-1] = 0.35
    trials = np.full(k, n)
    return rng.binomial(trials, theta), trials
