"""Fixtures shared by the test modules of this folder."""

from __future__ import annotations

import pandas as pd
import pytest

from bayeseval.datasets import make_pool as make_pool_campaign_metrics


@pytest.fixture(scope="module")
def pool_campaign_metrics() -> pd.DataFrame:
    return make_pool_campaign_metrics(8_000, 3, rates=[0.05, 0.1, 0.2], random_seed=0).set_index("row_id")[
        ["stratum", "y_true", "y_pred"]
    ]
