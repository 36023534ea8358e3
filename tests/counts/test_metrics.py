"""Tests of ``bayeseval.counts.metrics``."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval import get_metric
from bayeseval.counts.metrics import METRICS


def test_metric_masks_definitions() -> None:
    y = np.array([1, 1, 0, 0, 1])
    p = np.array([1, 0, 1, 0, 1])
    expected = {  # (trials, successes) by each metric's definition
        "error_rate": (5, 2),
        "accuracy": (5, 3),
        "recall": (3, 2),
        "precision": (3, 2),
        "fpr": (2, 1),
        "specificity": (2, 1),
        "npv": (2, 1),
        "fnr": (3, 1),
        "selection_rate": (5, 3),
    }
    for name, (nt, ns) in expected.items():
        trial, success = METRICS[name].masks(y, p, 1)
        assert (int(trial.sum()), int(success.sum())) == (nt, ns), name
        assert not np.any(success & ~trial)
    assert get_metric("TPR").name == "recall" and get_metric("ppv").name == "precision"
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("auc")
    with pytest.raises(TypeError, match="metric"):
        get_metric(3)
    with pytest.raises(ValueError, match="same length"):
        METRICS["recall"].masks([1, 0], [1], 1)
