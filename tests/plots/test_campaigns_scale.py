"""``labels_by_round`` of many strata: the grey lines in one collection, the same steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.cbook import pts_to_prestep
from matplotlib.figure import Figure

from bayeseval.plots import labels_by_round
from bayeseval.plots.campaigns import GREY_AS_ONE, LABELS_NAMED


def test_many_strata_draw_the_grey_steps_as_one_collection():
    k = GREY_AS_ONE + 50
    rng = np.random.default_rng(0)
    first = rng.integers(0, 20, k)
    progress = pd.DataFrame(
        {"round 1": first, "round 2": first + rng.integers(0, 20, k), "round 3": first + 40},
        index=[f"s{i}" for i in range(k)],
    )
    ax = labels_by_round(progress, ax=Figure().subplots())
    named = [line.get_label().split(" ")[0] for line in ax.get_lines()]
    top = progress["round 3"].sort_values(ascending=False, kind="stable").index[:LABELS_NAMED]
    assert sorted(named) == sorted(top)
    (grey,) = ax.collections
    rest = progress.drop(index=top)
    rounds = np.arange(4)
    assert len(grey.get_segments()) == len(rest)
    for seg, (_, row) in zip(grey.get_segments(), rest.iterrows(), strict=True):
        np.testing.assert_array_equal(seg, np.column_stack(pts_to_prestep(rounds, np.r_[0, row.to_numpy()])))
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= progress.to_numpy().max()
