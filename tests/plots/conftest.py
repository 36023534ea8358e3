"""Fixtures shared by the test modules of this folder."""

from __future__ import annotations

import matplotlib
import pytest

from bayeseval import Counts, fit_hierarchical
from tests.plots.helpers import STRATA

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def post():
    counts = Counts.from_arrays(
        [2, 5, 9, 30, 0], [40, 50, 60, 70, 25], strata=STRATA, weights=[0.3, 0.2, 0.2, 0.2, 0.1]
    )
    return fit_hierarchical(counts, random_seed=0)
