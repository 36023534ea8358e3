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


def test_the_axis_names_the_pooled_posterior_only_when_the_audit_has_one():
    import matplotlib
    import numpy as np
    import pandas as pd

    matplotlib.use("Agg")
    from bayeseval import Design, audit
    from bayeseval.plots import disparities

    rng = np.random.default_rng(0)
    item = np.repeat(np.arange(90), 3)
    frame = pd.DataFrame({"g": np.array(list("abc"))[item // 30], "item": item, "ok": rng.integers(0, 2, len(item))})
    units = audit(frame, outcome="ok", groups="g", design=Design(cluster="item"))
    assert units.disparities["posterior_lower"].isna().all()  # no pooled model over units
    assert "pooled posterior" not in disparities(units).get_xlabel()
    rows = audit(frame.drop(columns="item"), outcome="ok", groups="g", guarantee="average")
    assert rows.disparities["posterior_lower"].notna().any()
    assert "grey: pooled posterior" in disparities(rows).get_xlabel()
