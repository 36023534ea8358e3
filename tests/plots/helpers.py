"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.container import ErrorbarContainer

matplotlib.use("Agg")


STRATA = ["north", "south", "east", "west", "centre"]


@pytest.fixture(autouse=True)
def _close_and_check_rcparams():
    before = dict(matplotlib.rcParams)
    yield
    assert dict(matplotlib.rcParams) == before, "a plot function changed rcParams"
    plt.close("all")


def _errorbars(ax):
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def _n_bars(container):
    # barlinecols[0] is the LineCollection of the error bars: one segment per point
    return len(container.lines[2][0].get_segments())
