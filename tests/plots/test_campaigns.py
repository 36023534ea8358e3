"""Tests of ``bayeseval.plots.campaigns``."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from bayeseval import plots
from bayeseval.campaign import Campaign, Each
from bayeseval.campaign.report import progress_by_round
from bayeseval.plots import labels_by_round
from bayeseval.plots.campaigns import LABELS_NAMED
from tests.plots.helpers import _close_and_check_rcparams  # noqa: F401

matplotlib.use("Agg")


def _campaign(tmp_path, k: int, rounds: int) -> Campaign:
    pool = pd.DataFrame({"g": np.repeat([f"g{i:02d}" for i in range(k)], 30), "pred": np.tile([0, 1], 15 * k)})
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", goal=Each(0.01), random_seed=3)
    for _ in range(rounds):
        b = c.propose(2 * k)
        c.ingest(pd.Series(b.index % 2, index=b.index))
    return c


def test_halfwidth_curve_rules_repeats_and_forecast():
    rows = [
        (rule, r, lab, 0.3 / np.sqrt(1 + lab / 50) + 0.01 * r)
        for rule in ("expected_width", "uniform")
        for r in range(5)
        for lab in (0, 100, 200, 300)
    ]
    tr = pd.DataFrame(rows, columns=["rule", "repeat", "labels", "halfwidth"])
    fc = pd.DataFrame({"rule": "expected_width", "labels": [300, 400], "halfwidth": [0.1, 0.08], "kind": "forecast"})
    ax = plots.halfwidth_curve(pd.concat([tr.assign(kind="observed"), fc]), target=0.05)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["expected_width", "expected_width (forecast)", "uniform", "target 0.05"]
    # each rule's line is the median over repeats at each label count
    med = tr[tr["rule"] == "uniform"].groupby("labels")["halfwidth"].median()
    line = [ln for ln in ax.lines if ln.get_label() == "uniform"][0]
    np.testing.assert_allclose(line.get_ydata(), med.to_numpy())
    assert [ln for ln in ax.lines if ln.get_label() == "expected_width (forecast)"][0].get_linestyle() == "--"
    assert len(ax.collections) == 2  # one band per rule with repeats
    target = [ln for ln in ax.lines if ln.get_label() == "target 0.05"][0]
    assert target.get_ydata()[0] == 0.05
    with pytest.raises(ValueError, match="halfwidth"):
        plots.halfwidth_curve(pd.DataFrame({"labels": [1]}))


def test_halfwidth_curve_accepts_simulation_results():
    from bayeseval.campaign.simulation import SimulationResult

    # runs stop at different label counts: each is held at its last value afterwards
    trace = pd.DataFrame(
        {
            "rule": "uniform",
            "repeat": [0, 0, 0, 1, 1],
            "labels": [0, 10, 20, 0, 10],
            "max_halfwidth": [0.5, 0.2, 0.1, 0.5, 0.3],
        }
    )
    res = SimulationResult(
        table=pd.DataFrame(),
        trace=trace,
        true_rates=pd.Series(dtype=float),
        intervals=pd.DataFrame(),
        settings={"target_halfwidth": 0.1},
    )
    ax = plots.halfwidth_curve(res, logx=True)
    line = [ln for ln in ax.lines if ln.get_label() == "uniform"][0]
    # medians across the two runs: (0.5, 0.5), (0.2, 0.3), (0.1, 0.3 held)
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.25, 0.2])
    assert [ln for ln in ax.lines if ln.get_label() == "target 0.1"]
    assert ax.get_xscale() == "symlog"


def test_halfwidth_curve_from_a_campaign(tmp_path):
    from bayeseval.campaign.campaign import Campaign
    from bayeseval.datasets import make_pool

    pool = make_pool(4000, 3, rates=[0.05, 0.1, 0.2], random_seed=0)
    camp = Campaign.create(
        tmp_path / "c.db",
        pool.drop(columns=["y_true", "error"]),
        strata="stratum",
        y_pred="y_pred",
        goal=Each(0.05),
        random_seed=0,
    )
    for _ in range(2):
        prop = camp.propose(60)
        camp.ingest(pd.Series(pool.loc[prop.index, "y_true"].to_numpy(), index=prop.index))
    ax = plots.halfwidth_curve(camp)
    observed = [ln for ln in ax.lines if ln.get_label() == "expected_width"][0]
    forecast = [ln for ln in ax.lines if ln.get_label().endswith("(forecast)")][0]
    assert observed.get_xdata().tolist() == [0, 60, 120]
    assert observed.get_ydata()[-1] == pytest.approx(camp.status()["halfwidth"].max())
    assert forecast.get_xdata()[-1] == 120 + int(camp.forecast().sum())
    assert forecast.get_ydata()[-1] == 0.05
    camp.close()


# PrecisionLimitedWarning expected: 30 rows a stratum cannot reach target_halfwidth=0.01
# (kept so that every round proposes)
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_lines_end_at_each_strata_label_count(tmp_path) -> None:
    c = _campaign(tmp_path, 4, 3)
    ax = labels_by_round(progress_by_round(c), ax=Figure().subplots())
    labels = c.labels()
    per = labels.groupby("stratum").size()  # counted from the stored labels, not the progress table
    ends = {line.get_label().split(" ")[0]: line.get_ydata()[-1] for line in ax.get_lines()}
    assert ends == {name: int(n) for name, n in per.items()}
    assert all(line.get_ydata()[0] == 0 for line in ax.get_lines())
    assert len(ax.get_lines()[0].get_xdata()) == 3 + 1
    c.close()


def test_many_strata_name_only_the_most_labelled(tmp_path) -> None:
    progress = pd.DataFrame(
        {"round 1": np.arange(25), "round 2": 2 * np.arange(25)}, index=[f"s{i}" for i in range(25)]
    )
    ax = labels_by_round(progress, ax=Figure().subplots())
    named = [t.get_text().split(" ")[0] for t in ax.get_legend().get_texts()]
    assert sorted(named) == sorted(f"s{i}" for i in range(24, 24 - LABELS_NAMED, -1))
    grey = [line for line in ax.get_lines() if line.get_color() == "0.75"]
    assert len(grey) == 25 - LABELS_NAMED
