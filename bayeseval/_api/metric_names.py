"""The metric vocabulary: every name and alias a user may write, in one table.

Pure Python (no NumPy, no pandas), so the command line builds its help and its errors
from this table without loading anything heavy. :mod:`bayeseval.counts.metrics` holds what each
rate counts; this module holds only the words.

Every metric but balanced accuracy is one rate, successes out of trials. Balanced accuracy
is the mean of the true positive and the true negative rate: two rates with their own trials
(the actual positives and the actual negatives), so it has no single Beta-binomial count;
:func:`bayeseval.fairness` reports it (with the MOVER interval of the mean of two rates), the
per-stratum report and the gate do not.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NAMES", "ALIASES", "COMPOSITE", "normalise", "canonical", "choices", "unknown_metric"]

#: canonical name -> the aliases accepted for it, in display order
NAMES: dict[str, tuple[str, ...]] = {
    "error_rate": ("zero_one_loss",),
    "accuracy": (),
    "recall": ("tpr", "sensitivity", "true_positive_rate"),
    "precision": ("ppv",),
    "fpr": ("false_positive_rate",),
    "specificity": ("tnr", "true_negative_rate"),
    "npv": ("negative_predictive_value",),
    "fnr": ("false_negative_rate",),
    "selection_rate": (),
    "balanced_accuracy": (),
}

#: alias -> canonical name
ALIASES: dict[str, str] = {alias: name for name, aliases in NAMES.items() for alias in aliases}

#: metrics that are not one successes-out-of-trials rate -> the rates they average
COMPOSITE: dict[str, tuple[str, ...]] = {"balanced_accuracy": ("recall", "specificity")}


def normalise(text: str) -> str:
    """Lower case, ``-`` and spaces as ``_`` (how every name is compared).

    Examples
    --------
    >>> normalise("Error-Rate")
    'error_rate'
    """
    return text.strip().lower().replace("-", "_").replace(" ", "_")


def canonical(text: Any) -> str | None:
    """The canonical name of a metric name or alias, or None when it is neither.

    Examples
    --------
    >>> canonical("TPR"), canonical("balanced-accuracy"), canonical("f1")
    ('recall', 'balanced_accuracy', None)
    """
    if not isinstance(text, str):
        return None
    key = normalise(text)
    key = ALIASES.get(key, key)
    return key if key in NAMES else None


def choices(*, composite: bool = True) -> str:
    """The one list of metric names (each with its aliases) shown in every help and error.

    ``composite=False`` leaves out the metrics that are not one rate (for the report and
    the gate, which count one rate per stratum).

    Examples
    --------
    >>> choices(composite=False).split(", ")[:3]
    ['error_rate (zero_one_loss)', 'accuracy', 'recall (tpr']
    """
    shown = []
    for name, aliases in NAMES.items():
        if name in COMPOSITE and not composite:
            continue
        shown.append(f"{name} ({', '.join(aliases)})" if aliases else name)
    return ", ".join(shown)


def unknown_metric(text: Any, argument: str = "metric", *, composite: bool = True) -> str:
    """The message for a name that is not a metric (or a composite one where a single rate is needed).

    Examples
    --------
    >>> print(unknown_metric("f1"))  # doctest: +ELLIPSIS
    unknown metric 'f1'; valid choices are error_rate (zero_one_loss), accuracy, ...
    """
    key = canonical(text)
    if key in COMPOSITE and not composite:
        parts = " and ".join(f"{m} ({NAMES[m][0]})" if NAMES[m] else m for m in COMPOSITE[key])
        return (
            f"{argument} {text!r} is the mean of {parts}, two rates with their own trials, not one "
            "rate of successes out of trials, so it cannot be counted per stratum here; "
            f"bayeseval.fairness (bayeseval audit --metrics {key}) reports it per group. "
            f"Valid choices here are {choices(composite=False)}"
        )
    where = "" if argument == "metric" else f"{argument}: "
    return f"{where}unknown metric {text!r}; valid choices are {choices(composite=composite)}"
