"""The table vocabulary: one name per quantity in every result table, written down once.

The argument vocabulary (``successes``, ``trials``, ``weights``, ``level`` ...) names what goes
in; this module names what comes out. Every result table (:func:`~bayeseval.evaluate`,
:func:`~bayeseval.stratified_risk`, :func:`~bayeseval.proxy_ci` and its
:class:`~bayeseval.counts.proxy.ProxyCounts`, :func:`~bayeseval.fairness.audit`,
``Campaign.status()``, :func:`~bayeseval.campaign.simulate`) names a count or an estimate with
the word of :data:`COLUMNS`, and never with one of :data:`SYNONYMS`
(``tests/meta/test_vocabulary.py`` walks the tables).

Counts come in two units. *Rows* are rows of the data (``labelled``, ``pending``,
``pool_rows``); *trials* are the rows a metric counts (every row for the error rate, the
actual positives for recall), so ``trials <= labelled`` and ``pool_trials <= pool_rows``.

Pure Python (no NumPy, no pandas), like :mod:`bayeseval._api.metric_names`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["COLUMNS", "SYNONYMS", "WHOLE", "synonyms_in"]

#: canonical column name -> what it holds, in every table that has it
COLUMNS: dict[str, str] = {
    # counts
    "successes": "labelled trials that are successes of the metric (its numerator)",
    "trials": "labelled rows that are trials of the metric (its denominator from the labels)",
    "labelled": "labelled rows, trials of the metric or not (a campaign's rows count once for every metric)",
    "pending": "rows proposed for labelling and not labelled yet",
    "pool_rows": "rows of the pool, labelled or not",
    "pool_trials": "trials of the metric among all rows, labelled or not (proxy estimates)",
    "effective_labels": "the labels a proxy interval is worth (labelled trials times the variance ratio)",
    "labels": "labels of a campaign as a whole: spent so far (a simulation's trace) or still needed (a forecast)",
    # estimates
    "rate": "an estimator's point estimate of the stratum's rate: the observed successes / trials, "
    "or with a proxy the proxy-assisted estimate (successes and trials are then the labelled ones)",
    "mean": "a campaign's point estimate of the interval in lower/upper: successes / trials for "
    "the stratum's guaranteed or anytime interval, the posterior mean for a pooled one, "
    "the proxy-assisted estimate with a proxy",
    "lower": "lower end of the interval the row reports (at the result's level)",
    "upper": "upper end of the interval the row reports",
    "halfwidth": "(upper - lower) / 2",
    "pooled_mean": "posterior mean of the pooled (hierarchical) model, beside pooled_lower/pooled_upper",
    "pooled_lower": "lower end of the pooled model's credible interval",
    "pooled_upper": "upper end of the pooled model's credible interval",
    "estimate": "point estimate of a quantity other than one stratum's rate (a weighted overall rate, "
    "a gap or a ratio between strata, a bootstrap statistic) beside its lower/upper",
    "weight": "the stratum's population share",
    "sample_share": "the stratum's share of the trials (of the pool's trials with a proxy)",
}

#: columns that hold whole numbers (counts) or amounts shown as whole numbers when they are
#: (costs): the renderings print them without decimals
WHOLE = frozenset(
    {
        "successes",
        "trials",
        "labelled",
        "pending",
        "pool_rows",
        "pool_trials",
        "labels",
        "labels_used",
        "extra_needed",
        "extra_trials",
        "max_trials",
        "forecast",
        "cost",
        "forecast_cost",
        "rows",
        "annotators",
        "per_row",
        "round",
        "rounds",
    }
)

#: names refused in a result table -> the canonical name of what they would hold
SYNONYMS: dict[str, str] = {
    "n": "trials",
    "n_trials": "trials",
    "labelled_trials": "trials",
    "n_labelled": "labelled",
    "labeled": "labelled",
    "k": "successes",
    "errors": "successes",
    "n_successes": "successes",
    "pool": "pool_trials",
    "n_pool": "pool_trials",
    "pool_n": "pool_trials",
    "pool_size": "pool_rows",
    "n_rows": "pool_rows",
    "point_estimate": "mean",
    "est": "mean",
    "posterior_mean_pooled": "pooled_mean",
    "lo": "lower",
    "hi": "upper",
    "low": "lower",
    "high": "upper",
    "ci_lower": "lower",
    "ci_upper": "upper",
    "lower_bound": "lower",
    "upper_bound": "upper",
    "half_width": "halfwidth",
    "ipw_labelled": "ipw_trials",
    "ipw2_labelled": "ipw2_trials",
}


def synonyms_in(columns: Iterable[Any]) -> dict[str, str]:
    """The refused names among ``columns``, each with the canonical name to use instead.

    Parameters
    ----------
    columns : iterable of str
        Column names of a result table.

    Returns
    -------
    dict
        Refused name -> canonical name (empty when the table keeps to the vocabulary).

    Examples
    --------
    >>> synonyms_in(["successes", "labelled", "pool"])
    {'pool': 'pool_trials'}
    """
    return {str(c): SYNONYMS[c] for c in columns if isinstance(c, str) and c in SYNONYMS}
