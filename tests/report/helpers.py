"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import pandas as pd

from bayeseval import Counts


def _rows() -> pd.DataFrame:
    return pd.DataFrame({"y": [1, 0, 1, 1] * 10, "p": [1, 0, 0, 1] * 10, "g": ["a", "b"] * 20})


COUNTS = Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"])
