"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import strategies as st
from scipy import stats

from bayeseval._api.warnings import BayesevalWarning


def _scipy_ci(data, statistic, *, method, level=0.95, n_resamples, seed, paired=True, batch=None):
    res = stats.bootstrap(
        data,
        statistic,
        n_resamples=n_resamples,
        vectorized=True,
        paired=paired,
        batch=batch,
        confidence_level=level,
        method=method,
        rng=np.random.default_rng(seed),
    )
    return res.confidence_interval.low, res.confidence_interval.high, res.bootstrap_distribution


def _raises_naming(fn, *names):
    with pytest.raises(ValueError) as info:
        fn()
    for name in names:
        assert re.search(re.escape(name), str(info.value)), (name, str(info.value))


@contextmanager
def _silenced():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        yield


def _quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        return fn(*args, **kwargs)


@st.composite
def rows_hardening_inputs(draw, max_n: int = 60):
    n = draw(st.integers(4, max_n))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    g = np.array(draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n)))
    g[:2] = ["a", "b"]
    perm = np.array(draw(st.permutations(range(n))))
    return y, p, g, perm


METHODS = ("wald", "wilson", "agresti_coull", "clopper_pearson", "jeffreys")


bad_levels = st.sampled_from([0.0, 1.0, -0.5, 1.5, 95, float("nan"), float("inf"), "0.95", None, True])
