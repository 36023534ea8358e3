"""Tests of ``bayeseval.plots.planning``."""

from __future__ import annotations

import matplotlib
import pandas as pd

from bayeseval import plots
from bayeseval.plan import allocate, sample_size
from tests.plots.helpers import _close_and_check_rcparams  # noqa: F401

matplotlib.use("Agg")


def test_allocation_bars_equal_allocate():
    # pi = (0.8, 0.2), r = (0.05, 0.30), n = 500 -> optimal (328, 172)
    w, r = {"a": 0.8, "b": 0.2}, {"a": 0.05, "b": 0.30}
    ax = plots.allocation(total=500, weights=w, rates=r, minimum=200)
    heights = [p.get_height() for p in ax.patches]
    expected = (
        list(allocate(500, w, r, method="proportional"))
        + list(allocate(500, w, r, method="optimal"))
        + list(allocate(500, w, r, method="optimal", minimum=200))
    )
    assert heights == expected
    assert heights[2:4] == [328, 172]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["proportional", "optimal", "optimal + minimum"]
    frame = pd.DataFrame({"x": [1, 2, 3], "y": [3, 2, 1]}, index=["p", "q", "r"])
    assert len(plots.allocation(frame).patches) == 6


def test_sample_size_curve_values():
    rates = [0.5, 0.9]
    ax = plots.sample_size_curve(rates, halfwidths=[0.1, 0.05, 0.03, 0.02])
    assert len(ax.lines) == 2 and ax.get_yscale() == "log"
    # normal-formula table: 0.50 -> 97, 385, 1068, 2401; 0.90 -> 35, 139, 385, 865
    assert ax.lines[0].get_ydata().tolist() == [97, 385, 1068, 2401]
    assert ax.lines[1].get_ydata().tolist() == [35, 139, 385, 865]
    assert ax.lines[1].get_ydata()[0] == sample_size(halfwidth=0.1, rate=0.9)
