"""Tests of ``bayeseval.report.report``."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from bayeseval import Counts, PooledModel, evaluate
from bayeseval.report import Report

matplotlib.use("Agg")


def test_bad_arguments():
    counts = Counts.from_arrays([1], [10])
    with pytest.raises(ValueError, match="target_halfwidth"):
        evaluate(counts, target_halfwidth=0.7)
    with pytest.raises(ValueError, match="engine"):
        evaluate(counts, model=PooledModel("beta_binomial", engine="stan"))
    with pytest.raises(TypeError, match="y_true"):
        evaluate(pd.DataFrame({"a": [1]}))
    assert isinstance(evaluate(counts, random_seed=0), Report)
