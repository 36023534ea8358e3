"""Tests of ``bayeseval.campaign.proxycells``."""

from __future__ import annotations

import numpy as np

from bayeseval.campaign.proxycells import neyman_cells


def test_neyman_cells_closed_form():
    # equal spreads: labels in proportion to the cells' sizes; a cell with spread 0.5 vs 0.3
    # (rates 0.5, 0.1): shares 1000*0.5 : 1000*0.3
    assert neyman_cells(np.array([600, 400]), np.zeros(2), np.zeros(2), np.zeros(2),
                        np.array([600, 400]), 100).tolist() == [60, 40]
    take = neyman_cells(np.array([1000, 1000]), np.zeros(2), np.array([49, 9]), np.array([98, 98]),
                        np.array([1000, 1000]), 80)
    r = np.array([50, 10]) / 100
    share = np.sqrt(r * (1 - r)) / np.sqrt(r * (1 - r)).sum()
    assert np.all(np.abs(take - 80 * share) <= 1)
