"""Tests of ``bayeseval._api.metric_names``."""

from __future__ import annotations

from bayeseval._api import metric_names
from bayeseval.counts.metrics import METRICS
from bayeseval.fairness import METRICS as AUDIT_METRICS
from tests.helpers import AUDIT_LIST


def test_the_table_names_every_single_rate_metric_and_the_audit_ones():
    assert set(metric_names.NAMES) - set(metric_names.COMPOSITE) == set(METRICS)
    assert {metric_names.canonical(m) for m in AUDIT_METRICS} == set(metric_names.NAMES)
    every = [n for name, aliases in metric_names.NAMES.items() for n in (name, *aliases)]
    assert len(every) == len(set(every))  # no word names two metrics
    for word in every:  # each word is listed in the one list
        assert word in AUDIT_LIST.replace("(", " ").replace(")", " ").replace(",", " ").split()
