"""Numeric kernels shared by the feature packages: binomial bounds, adaptive (FAB) intervals,
mixtures and grids, conflict and predictive checks, resampling, allocation, disparities,
sequential and anytime-valid tests, proxy cells.

Feature packages take private helpers only from here and from :mod:`bayeseval._api`,
:mod:`bayeseval._backends` and :mod:`bayeseval._render`; modules here import nothing from the
feature packages.
"""
