"""Tests of ``bayeseval.plots.strata``."""

from __future__ import annotations

import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection

from bayeseval import Counts, evaluate, plots, proportion_ci
from tests.helpers import N, S
from tests.plots.helpers import (
    STRATA,
    _close_and_check_rcparams,  # noqa: F401
    _errorbars,
    _n_bars,
)

matplotlib.use("Agg")


@pytest.mark.parametrize("names", [["$$", "x"], ["$\\frac{$", "$5-$10"]])
def test_html_plot_shows_dollar_names_as_text(names):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from bayeseval import plots

    rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=names), random_seed=0)
    assert "data:image/png;base64," in rep.to_html(plot=True)
    ax = Figure().subplots()
    plots.forest(rep, ax=ax)
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(names)


def test_forest_from_posterior(post):
    ax = plots.forest(post)
    assert [t.get_text() for t in ax.get_yticklabels()] == STRATA
    bars = _errorbars(ax)
    # raw and pooled intervals for every stratum, then the adaptive interval of the strata
    # whose summary says to read it
    reads = post.summary(read=True)["read"].to_numpy() == "adaptive"
    assert len(bars) == 2 + bool(reads.any()) and all(_n_bars(c) == len(STRATA) for c in bars[:2])
    if reads.any():
        assert _n_bars(bars[2]) == int(reads.sum())
    # raw points at the observed rates; marker area grows with trials
    raw_pts, post_pts = [c for c in ax.collections if isinstance(c, PathCollection)][:2]
    np.testing.assert_allclose(raw_pts.get_offsets()[:, 0], post.counts.rates.to_numpy())
    means = post.summary()["mean"].to_numpy()
    np.testing.assert_allclose(post_pts.get_offsets()[:, 0], means)
    sizes = raw_pts.get_sizes()
    assert np.argmax(sizes) == int(np.argmax(post.counts.trials))
    assert np.argmin(sizes) == int(np.argmin(post.counts.trials))
    # the overall line is the population-weighted posterior mean
    w = post.counts.weights
    expected = float(np.asarray(post.weighted(w)).mean())
    vlines = [ln for ln in ax.lines if len(set(ln.get_xdata())) == 1]
    assert any(np.isclose(ln.get_xdata()[0], expected) for ln in vlines)
    assert "population-weighted" in " ".join(t.get_text() for t in ax.get_legend().get_texts())


def test_forest_from_report_and_frame_with_given_ax():
    counts = Counts.from_arrays([3, 8, 1], [60, 80, 20], strata=["a", "b", "c"])
    rep = evaluate(counts, random_seed=0)
    fig, ax0 = plt.subplots()
    ax = plots.forest(rep, ax=ax0)
    assert ax is ax0
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    # the overall line is the unweighted rate when no weights are known: 12 / 160
    assert any(np.isclose(ln.get_xdata()[0], 12 / 160) for ln in ax.lines)
    ax2 = plots.forest(rep.table)
    assert all(_n_bars(c) == 3 for c in _errorbars(ax2))
    with pytest.raises(ValueError, match="posterior upper bound"):
        plots.forest(rep.table.drop(columns="pooled_upper"))
    # side-by-side layout: wilson_* are frequentist, mean/lower/upper the posterior
    side = pd.DataFrame(
        {
            "trials": [10, 20],
            "raw_rate": [0.1, 0.2],
            "wilson_lower": [0.02, 0.08],
            "wilson_upper": [0.4, 0.42],
            "mean": [0.15, 0.19],
            "lower": [0.05, 0.09],
            "upper": [0.3, 0.33],
        },
        index=["x", "y"],
    )
    ax3 = plots.forest(side)
    raw_pts, post_pts = [c for c in ax3.collections if isinstance(c, PathCollection)]
    np.testing.assert_allclose(post_pts.get_offsets()[:, 0], [0.15, 0.19])
    seg = _errorbars(ax3)[1].lines[2][0].get_segments()[0]  # posterior bar of stratum x
    np.testing.assert_allclose(sorted(seg[:, 0]), [0.05, 0.3])
    with pytest.raises(TypeError):
        plots.forest([1, 2, 3])


def test_forest_from_compare_frequentist(post):
    import warnings

    from bayeseval import checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        side = checks.compare_frequentist(post, weights=post.counts.weights, random_seed=0)
    ax = plots.forest(side)
    # the "weighted overall" row becomes the vertical line, not a stratum
    assert [t.get_text() for t in ax.get_yticklabels()] == STRATA
    assert any(np.isclose(ln.get_xdata()[0], side.loc["weighted overall", "pooled_mean"]) for ln in ax.lines)
    raw_pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    np.testing.assert_allclose(raw_pts.get_offsets()[:, 0], side["raw_rate"].iloc[:-1])


def test_forest_draws_the_interval_to_read_for_an_atypical_stratum(rep_report_read):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection

    from bayeseval import plots
    from bayeseval.models import fit_hierarchical

    lo, hi = proportion_ci(S, N, method="adaptive")
    # a Report: its lower/upper (the grey interval) already are the adaptive interval of 'g'
    ax = plots.forest(rep_report_read)
    grey = [
        c.get_segments()
        for c in ax.collections
        if isinstance(c, LineCollection) and np.allclose(c.get_color()[0][:3], matplotlib.colors.to_rgb("#555555"))
    ]
    (x0, _), (x1, _) = grey[0][-1]
    np.testing.assert_allclose([x0, x1], [lo[6], hi[6]], rtol=1e-9)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "raw rate, interval read (pooled or adaptive: average coverage)" in labels
    matplotlib.pyplot.close(ax.figure)
    for data in (fit_hierarchical(S, N, random_seed=0),):
        ax = plots.forest(data)
        # each errorbar is a LineCollection of horizontal segments; the adaptive one is the
        # third family (orange) and holds only the stratum that reads it ('g', the bottom row)
        segs = [c.get_segments() for c in ax.collections if isinstance(c, LineCollection)]
        orange = [
            s
            for c, s in zip([c for c in ax.collections if isinstance(c, LineCollection)], segs, strict=True)
            if np.allclose(c.get_color()[0][:3], matplotlib.colors.to_rgb("#e6730f"))
        ]
        assert len(orange) == 1 and len(orange[0]) == 1
        (x0, y0), (x1, y1) = orange[0][0]
        np.testing.assert_allclose([x0, x1], [lo[6], hi[6]], rtol=1e-9)
        assert y0 == y1 == pytest.approx(-0.36)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("interval to read: adaptive") for t in labels)
        matplotlib.pyplot.close(ax.figure)


def test_forest_without_atypical_strata_draws_no_read_interval():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval import plots

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep_report_read = evaluate(
            Counts.from_arrays([4, 6, 5, 3], [50, 70, 60, 40]), random_seed=0, guarantee="average"
        )
    assert (rep_report_read.table["read"] == "pooled").all()
    ax = plots.forest(rep_report_read)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any(t.startswith("interval to read") for t in labels)
    matplotlib.pyplot.close(ax.figure)
