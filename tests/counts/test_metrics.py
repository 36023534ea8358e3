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


#: which direction is good, written from each metric's definition (the table in the module's
#: docstring), not from the code: errors (a wrong prediction is the success) are better low,
#: right predictions better high; the selection rate counts predicted positives, right and
#: wrong alike, so neither direction is better (a fairness criterion compares it across groups)
GOOD_SIDE = {
    "error_rate": False,  # y_pred != y_true
    "fpr": False,  # negatives predicted positive
    "fnr": False,  # positives predicted negative
    "accuracy": True,  # y_pred == y_true
    "recall": True,  # positives predicted positive
    "precision": True,  # predicted positives that are positive
    "specificity": True,  # negatives predicted negative
    "npv": True,  # predicted negatives that are negative
    "selection_rate": None,  # predicted positive, right or wrong
}


def test_every_metric_knows_whether_a_higher_rate_is_better() -> None:
    from bayeseval.counts.metrics import Metric

    assert set(GOOD_SIDE) == set(METRICS)
    assert {name: m.higher_is_better for name, m in METRICS.items()} == GOOD_SIDE
    assert get_metric("tnr").higher_is_better is True and get_metric("tpr").higher_is_better is True
    # a user's metric gets its side from its definition too
    assert Metric("misses", "true_pos", "pred_neg", "positives missed").higher_is_better is False
    assert Metric("hit_rate", "all", "right", "rows right").higher_is_better is True
