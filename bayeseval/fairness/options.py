"""Choices and defaults of an audit, light enough for the command line's help to import."""

#: pooled models of the audit (``--model``)
MODELS = ("crossed", "robust", "beta_binomial")

#: max-min gap intervals of the audit (``--method``)
GAP_METHODS = ("max_t", "bonferroni")

#: default ``--min-trials``
MIN_TRIALS = 30
