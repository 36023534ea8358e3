"""Shared private kernels of bayeseval.

Feature modules (intervals, stratified, models, checks, active, split, report...) take
private helpers only from here, from ``bayeseval._validation``, ``bayeseval._warnings``
and the results base module; modules inside ``_core`` import nothing from the feature
modules.
"""
