"""The package's own API plumbing: input validation, warning classes, the results protocol, the metric vocabulary and lazy public names.

Every module of bayeseval may import from here; modules here import nothing from the feature packages.
"""
