"""Tests of ``bayeseval.fairness.inputs``: the audit's checked inputs and its counting."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import bayeseval as be

RNG = np.random.default_rng(5)
N = 300
FRAME = pd.DataFrame({"sex": RNG.choice(["f", "m"], N), "y_true": RNG.integers(0, 2, N)})
FRAME["y_pred"] = np.where(RNG.random(N) < 0.8, FRAME["y_true"], 1 - FRAME["y_true"])


@pytest.mark.parametrize("source", ["frame", "duckdb"])
def test_errors_about_the_group_columns_name_the_groups_argument(source):
    missing = FRAME.astype({"sex": object})
    missing.loc[:3, "sex"] = None
    cases = [
        (FRAME, ["sex", "race"], r"^groups column 'race' is not in data"),
        (missing, "sex", r"^groups column 'sex' has missing values in 4 rows"),
    ]
    for data, groups, message in cases:
        given = duckdb.from_df(data) if source == "duckdb" else data
        with pytest.raises(ValueError, match=message):
            be.audit(given, groups=groups, y_true="y_true", y_pred="y_pred")
        with pytest.raises(ValueError, match=message):
            be.evaluate(given, groups=groups, y_true="y_true", y_pred="y_pred")
    # the label columns keep their own names
    with pytest.raises(ValueError, match=r"^y_true column 'truth' is not in data"):
        be.audit(FRAME, groups="sex", y_true="truth", y_pred="y_pred")
