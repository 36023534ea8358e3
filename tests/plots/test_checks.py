"""Tests for bayeseval.plots: each function returns an Axes whose artists match its input."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection

from bayeseval import fit_hierarchical, plots
from tests.plots.helpers import (
    STRATA,
    _close_and_check_rcparams,  # noqa: F401
    _errorbars,
    _n_bars,
)

matplotlib.use("Agg")


def test_ppc_from_posterior_and_frame(post):
    ax = plots.ppc(post, random_seed=1)
    assert [t.get_text() for t in ax.get_xticklabels()] == STRATA
    bars = _errorbars(ax)
    assert len(bars) == 1 and _n_bars(bars[0]) == len(STRATA)
    frame = pd.DataFrame({"observed": [0.1, 0.5], "lower": [0.05, 0.1], "upper": [0.2, 0.3]}, index=["in", "out"])
    ax2 = plots.ppc(frame)
    pts = [c for c in ax2.collections if isinstance(c, PathCollection)][0]
    colors = [tuple(np.round(c, 3)) for c in pts.get_facecolors()]
    assert colors[0] != colors[1]  # the stratum outside its interval is drawn in another colour
    assert "outside the interval" in [t.get_text() for t in ax2.get_legend().get_texts()]


def test_coverage_nominal_line_and_groups():
    res = pd.DataFrame(
        {
            "method": ["wald", "wilson", "jeffreys"] * 2,
            "coverage": [0.90, 0.95, 0.94, 0.86, 0.94, 0.95],
            "n_sims": 1000,
            "scenario": ["n=50"] * 3 + ["n=10"] * 3,
        }
    )
    ax = plots.coverage(res, by="scenario", nominal=0.95)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["wald", "wilson", "jeffreys"]
    nominal = [ln for ln in ax.lines if ln.get_label() == "nominal 0.95"]
    assert len(nominal) == 1 and nominal[0].get_ydata()[0] == 0.95
    bars = _errorbars(ax)
    assert len(bars) == 2 and all(_n_bars(c) == 3 for c in bars)
    # error bars are +/- 1.96 binomial SE: wald n=50 is 0.90 +/- 1.96 sqrt(0.09/1000)
    seg = bars[0].lines[2][0].get_segments()[0]
    assert seg[:, 1].min() == pytest.approx(0.90 - 1.96 * np.sqrt(0.09 / 1000))
    with pytest.raises(ValueError, match="coverage"):
        plots.coverage(pd.DataFrame({"method": ["a"]}))


def test_ppc_from_checks_result():
    import warnings

    from bayeseval import checks

    post = fit_hierarchical([4, 6, 5, 40], [50, 50, 50, 50], random_seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = checks.posterior_predictive_check(post, random_seed=1)
    ax = plots.ppc(res)
    bars = _errorbars(ax)
    assert _n_bars(bars[0]) == 4
    # the bars span the predictive interval of the count divided by the trials
    segs = bars[0].lines[2][0].get_segments()
    np.testing.assert_allclose([s[:, 1].min() for s in segs], res.table["pred_lower"] / 50)
    np.testing.assert_allclose([s[:, 1].max() for s in segs], res.table["pred_upper"] / 50)
    pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    colors = [tuple(c) for c in pts.get_facecolors()]
    assert colors[3] != colors[0]  # the flagged stratum (40 of 50) is drawn in red
    assert "flagged by the check" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_coverage_reads_calibration_study_layout():
    # layout of checks.calibration_study: configuration, method, coverage, mean_width, mc_se
    res = pd.DataFrame(
        {
            "configuration": ["exch"] * 2 + ["outlier"] * 2,
            "method": ["wilson", "wald"] * 2,
            "coverage": [0.95, 0.88, 0.99, 0.86],
            "mean_width": 0.2,
            "mc_se": [0.01, 0.015, 0.02, 0.015],
        }
    )
    ax = plots.coverage(res)
    bars = _errorbars(ax)
    assert len(bars) == 2  # grouped by configuration without being told
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"exch", "outlier", "nominal 0.95"} <= set(labels)
    seg = bars[0].lines[2][0].get_segments()[1]  # wald, exch: 0.88 +/- 1.96 * 0.015
    assert seg[:, 1].min() == pytest.approx(0.88 - 1.96 * 0.015)
    top = bars[1].lines[2][0].get_segments()[0]  # wilson, outlier: 0.99 + 0.039 clipped at 1
    assert top[:, 1].max() == pytest.approx(1.0)


def test_ppc_separates_flagged_from_merely_outside():
    # "b" is outside its interval but not flagged (the check corrects for K strata); "c" is flagged
    frame = pd.DataFrame(
        {
            "successes": [5, 40, 45],
            "trials": [50, 50, 50],
            "pred_lower": [2, 10, 10],
            "pred_upper": [10, 35, 35],
            "flag": [False, False, True],
        },
        index=["a", "b", "c"],
    )
    ax = plots.ppc(frame)
    pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    np.testing.assert_allclose(pts.get_offsets()[:, 1], [0.1, 0.8, 0.9])
    colors = [tuple(np.round(c, 3)) for c in pts.get_facecolors()]
    assert len(set(colors)) == 3
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"observed rate", "flagged by the check", "outside the interval, not flagged"} <= set(labels)
