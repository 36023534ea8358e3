"""`plots.labels_by_round` (the campaign report's progress plot): cumulative labels per stratum, round by round."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from bayeseval.campaign import Campaign
from bayeseval.campaign.report import progress_by_round
from bayeseval.plots import labels_by_round
from bayeseval.plots.campaigns import LABELS_NAMED


def _campaign(tmp_path, k: int, rounds: int) -> Campaign:
    pool = pd.DataFrame({"g": np.repeat([f"g{i:02d}" for i in range(k)], 30), "pred": np.tile([0, 1], 15 * k)})
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", target_halfwidth=0.01, random_seed=3)
    for _ in range(rounds):
        b = c.propose(2 * k)
        c.ingest(pd.Series(b.index % 2, index=b.index))
    return c


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
    progress = pd.DataFrame({"round 1": np.arange(25), "round 2": 2 * np.arange(25)},
                            index=[f"s{i}" for i in range(25)])
    ax = labels_by_round(progress, ax=Figure().subplots())
    named = [t.get_text().split(" ")[0] for t in ax.get_legend().get_texts()]
    assert sorted(named) == sorted(f"s{i}" for i in range(24, 24 - LABELS_NAMED, -1))
    grey = [line for line in ax.get_lines() if line.get_color() == "0.75"]
    assert len(grey) == 25 - LABELS_NAMED
