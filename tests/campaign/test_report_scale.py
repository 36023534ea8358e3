"""The decision plot of a campaign report of many strata: the strata to read first."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bayeseval.campaign import Decide
from bayeseval.campaign.campaign import Campaign
from bayeseval.campaign.report import DECISION_PLOT_SHOWN, DECISION_PLOT_STRATA, _decision_plot
from bayeseval.counts.counts import stratum_labels


def test_the_decision_plot_of_many_strata_shows_the_undecided_and_widest_first(tmp_path):
    k, per = DECISION_PLOT_STRATA + 10, 20
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({"g": np.repeat([f"g{i:02d}" for i in range(k)], per), "pred": rng.integers(0, 2, k * per)})
    truth = pd.Series(np.where(rng.random(k * per) < 0.1, 1 - pool["pred"], pool["pred"]), index=pool.index)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", goal=Decide(0.3), random_seed=0)
    batch = c.propose(8 * k)
    c.ingest(truth.loc[batch.index])
    status = c.status()
    ax = _decision_plot(c, Figure().subplots())
    c.close()
    ref = status.sort_values(["done", "halfwidth"], ascending=[True, False], kind="stable")
    want = stratum_labels(ref.index[:DECISION_PLOT_SHOWN])
    assert [t.get_text() for t in ax.get_yticklabels()] == want
    assert len(ax.patches) == DECISION_PLOT_SHOWN
    assert ax.get_title() == f"{DECISION_PLOT_SHOWN} of the {k} strata: those not done first, then the widest intervals"
