"""Metric definitions: which rows are trials and which are successes.

Every metric in bayeseval reduces to successes out of trials per stratum.
A :class:`Metric` turns arrays of true and predicted labels into two boolean
masks, ``trial`` and ``success``; ``success`` implies ``trial``. The arrays may
be rows, or the cells of a confusion table (one entry per observed pair of true
and predicted label): :meth:`Metric.masks` is the only interpreter of the row
sets below, and :func:`bayeseval.counts.counts.confusion_counts` applies it to the
confusion table every engine (pandas, DuckDB, Spark) computes.

==================  ===========================  =========================
metric              trials                       successes
==================  ===========================  =========================
error_rate          every row                    y_pred != y_true
accuracy            every row                    y_pred == y_true
recall (tpr)        y_true == positive           y_pred == positive
precision (ppv)     y_pred == positive           y_true == positive
fpr                 y_true != positive           y_pred == positive
specificity (tnr)   y_true != positive           y_pred != positive
npv                 y_pred != positive           y_true != positive
==================  ===========================  =========================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bayeseval._api.metric_names import canonical, unknown_metric

__all__ = ["Metric", "get_metric", "METRICS", "CLASS_METRICS"]


@dataclass(frozen=True)
class Metric:
    """A rate defined as successes over trials.

    Parameters
    ----------
    name : str
        Canonical name, e.g. ``"recall"``.
    trials : str
        Which rows are trials: ``"all"``, ``"true_pos"``, ``"true_neg"``,
        ``"pred_pos"`` or ``"pred_neg"``.
    successes : str
        Which trials are successes: ``"wrong"``, ``"right"``, ``"true_pos"``,
        ``"true_neg"``, ``"pred_pos"`` or ``"pred_neg"``.
    description : str
        One line for reports.

    Examples
    --------
    >>> import numpy as np
    >>> m = get_metric("recall")
    >>> trial, success = m.masks(np.array([1, 1, 0]), np.array([1, 0, 1]), positive=1)
    >>> int(trial.sum()), int(success.sum())
    (2, 1)
    """

    name: str
    trials: str
    successes: str
    description: str

    @property
    def needs_positive(self) -> bool:
        """Whether the metric depends on which label is the positive class."""
        return self.trials != "all" or self.successes not in ("wrong", "right")

    @property
    def higher_is_better(self) -> bool | None:
        """Whether a higher rate is better: True, False, or None when neither.

        Read from the definition: True when every success is a right prediction (``accuracy``,
        ``recall``, ``precision``, ``specificity``, ``npv``), False when every success is a
        wrong one (``error_rate``, ``fpr``, ``fnr``), None when successes are right and wrong
        predictions alike (``selection_rate``: the share predicted positive, which has no
        good side of its own). It sets which side of a report's intervals is the bad one
        and the side a campaign's decision goal is met from.

        Examples
        --------
        >>> [get_metric(m).higher_is_better for m in ("recall", "fpr", "selection_rate")]
        [True, False, None]
        """
        y_true, y_pred = np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0])  # the four cells of a binary table
        _, success = self.masks(y_true, y_pred, positive=1)
        right = y_true[success] == y_pred[success]
        if right.size and right.all():
            return True
        if right.size and not right.any():
            return False
        return None

    @property
    def trials_need_truth(self) -> bool:
        """Whether a row's trial status is only known once it is labelled."""
        return self.trials in ("true_pos", "true_neg")

    def masks(self, y_true: Any, y_pred: Any, positive: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Return boolean ``(trial, success)`` masks for the given labels.

        Parameters
        ----------
        y_true, y_pred : array-like
            True and predicted labels of the same shape: rows, or the cells of a
            confusion table.
        positive : optional
            The positive class (used by metrics that need one).

        Returns
        -------
        trial, success : numpy.ndarray of bool
            Which entries are trials and which trials are successes (``success``
            implies ``trial``).
        """
        y_true = np.asarray(y_true)
        y_pred = np.asarray(y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"y_true and y_pred must have the same length, got {y_true.shape} and {y_pred.shape}")
        sets = {
            "all": np.ones(y_true.shape, dtype=bool),
            "right": y_true == y_pred,
            "wrong": y_true != y_pred,
        }
        if self.needs_positive or self.successes not in sets:
            sets.update(
                true_pos=y_true == positive,
                true_neg=y_true != positive,
                pred_pos=y_pred == positive,
                pred_neg=y_pred != positive,
            )
        trial = sets[self.trials]
        success = trial & sets[self.successes]
        return trial, success


METRICS: dict[str, Metric] = {
    "error_rate": Metric("error_rate", "all", "wrong", "share of rows the classifier gets wrong"),
    "accuracy": Metric("accuracy", "all", "right", "share of rows the classifier gets right"),
    "recall": Metric("recall", "true_pos", "pred_pos", "share of actual positives predicted positive"),
    "precision": Metric("precision", "pred_pos", "true_pos", "share of predicted positives that are positive"),
    "fpr": Metric("fpr", "true_neg", "pred_pos", "share of true negatives predicted positive"),
    "specificity": Metric("specificity", "true_neg", "pred_neg", "share of true negatives predicted negative"),
    "npv": Metric("npv", "pred_neg", "true_neg", "share of predicted negatives that are negative"),
    "fnr": Metric("fnr", "true_pos", "pred_neg", "share of actual positives predicted negative"),
    "selection_rate": Metric("selection_rate", "all", "pred_pos", "share of rows predicted positive"),
}


#: Metrics that depend on a positive class (computed one-vs-rest per class).
CLASS_METRICS = tuple(k for k, m in METRICS.items() if m.needs_positive)


def get_metric(metric: str | Metric) -> Metric:
    """Look up a metric by name (or alias) and return its :class:`Metric`.

    Parameters
    ----------
    metric : str or Metric
        A name from :data:`METRICS` or an alias (``tpr``, ``sensitivity``, ``ppv``, ``tnr``,
        ...: the one table is :data:`bayeseval._api.metric_names.NAMES`), case and
        ``-``/space insensitive; a :class:`Metric` is returned as is.

    Returns
    -------
    Metric
        The metric's definition.

    Raises
    ------
    ValueError
        An unknown name (the message lists the valid ones), or ``balanced_accuracy``, which
        is the mean of two rates and no single successes-out-of-trials rate (the message
        says so and names :func:`bayeseval.fairness`, which reports it).
    TypeError
        ``metric`` is neither a string nor a Metric.

    Examples
    --------
    >>> get_metric("tpr").name
    'recall'
    """
    if isinstance(metric, Metric):
        return metric
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a metric name, one of {list(METRICS)}, got {metric!r}")
    key = canonical(metric)
    if key not in METRICS:
        raise ValueError(unknown_metric(metric, composite=False))
    return METRICS[key]
