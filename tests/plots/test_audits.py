"""Tests of ``bayeseval.plots.audits``."""

from __future__ import annotations

from tests.helpers import _audit, _logit_cells


def test_plot_draws_the_crossed_prediction_distinctly():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    res = _audit(_logit_cells((0, 0)))
    ax = disparities(res)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert f"selection_rate: a4 | b1 - {res.reference['selection_rate']} (predicted, no data)" in labels
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    row = res.disparities.set_index(["measure", "group"]).loc[("difference", "a4 | b1")]
    assert len(dashed) == 1
    assert tuple(dashed[0].get_xdata()) == (row["posterior_lower"], row["posterior_upper"])
