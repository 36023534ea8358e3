"""Tests of ``bayeseval.report.sections``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import Counts, evaluate, proportion_ci
from bayeseval.report import sections
from bayeseval.report.sections import read_flagged
from tests.report.helpers import COUNTS


def test_a_failing_model_or_check_surfaces_instead_of_a_silent_fallback(monkeypatch):
    assert not hasattr(sections, "_ppc_fallback")

    def broken(*a, **k):
        raise RuntimeError("broken check")

    monkeypatch.setattr(sections, "posterior_predictive_check", broken)
    with pytest.raises(RuntimeError, match="broken check"):
        evaluate(COUNTS, random_seed=0)
    monkeypatch.undo()
    monkeypatch.setattr(sections, "fit_hierarchical", broken)
    with pytest.raises(RuntimeError, match="broken check"):
        evaluate(COUNTS, random_seed=0)


def test_a_stratum_the_model_check_flags_never_reads_the_pooled_interval():
    # the predictive check and the read rule use different references: a flagged stratum
    # that the rule would leave on the pooled interval is pointed to its adaptive interval
    s, n = np.array([4, 6, 5, 3, 7, 4, 9]), np.array([50, 70, 60, 40, 80, 50, 20])
    table = pd.DataFrame(
        {"read": ["pooled"] * 7, "read_reason": "consistent with the other strata", "ppc_p": np.linspace(0.001, 0.9, 7)}
    )
    flagged = np.zeros(7, bool)
    flagged[1] = True
    read_lo, read_hi = read_flagged(Counts.from_arrays(s, n), table, flagged, (np.zeros(7), np.ones(7)), 0.95)
    lo, hi = proportion_ci(s, n, method="adaptive")
    assert table["read"].tolist() == ["pooled", "adaptive"] + ["pooled"] * 5
    np.testing.assert_allclose([read_lo[1], read_hi[1]], [lo[1], hi[1]], rtol=1e-12)
    assert read_lo[0] == 0.0 and read_hi[2] == 1.0
    assert table.loc[1, "read_reason"] == "flagged by the model check (p = 0.15)"
