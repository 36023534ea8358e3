"""Warning classes raised by bayeseval.

Every warning the package emits derives from :class:`BayesevalWarning`, so a
user can silence or escalate all of them at once::

    import warnings
    import bayeseval
    warnings.simplefilter("error", bayeseval.BayesevalWarning)
"""

from __future__ import annotations

__all__ = [
    "BayesevalWarning",
    "ZeroVarianceWarning",
    "EmptyStratumWarning",
    "ReweightingWarning",
    "ConvergenceWarning",
    "ModelCheckWarning",
    "CalibrationWarning",
    "PrecisionLimitedWarning",
    "PerformanceWarning",
    "BlankLabelWarning",
    "ClusteredRowsWarning",
]


class BayesevalWarning(UserWarning):
    """Base class of every warning emitted by bayeseval."""


class ZeroVarianceWarning(BayesevalWarning):
    """A rate of 0 or 1 gives a plug-in standard error of 0, which is not certainty."""


class EmptyStratumWarning(BayesevalWarning):
    """A stratum has no trials: its rate is undefined."""


class ReweightingWarning(BayesevalWarning):
    """The sample composition differs from the population: pooled numbers need reweighting."""


class ConvergenceWarning(BayesevalWarning):
    """An MCMC run failed a diagnostic (R-hat, effective sample size, divergences)."""


class ModelCheckWarning(BayesevalWarning):
    """A posterior predictive check or a comparison flags a misfit."""


class CalibrationWarning(BayesevalWarning):
    """A classifier's probabilities disagree with counted outcomes beyond their uncertainty."""


class PrecisionLimitedWarning(BayesevalWarning):
    """A design cannot reach the requested precision; the result is precision limited."""


class PerformanceWarning(BayesevalWarning):
    """A computation runs on a slow fallback (e.g. PyTensor without a BLAS library)."""


class BlankLabelWarning(BayesevalWarning):
    """Rows of a batch of labels have no label: they were not recorded and stay pending."""


class ClusteredRowsWarning(BayesevalWarning):
    """Rows repeat an identifier (an item answered in several epochs): they may not be independent draws.

    Silence it by stating the design: ``design=Design(cluster=...)`` to count by unit, or
    ``design=Design()`` to say each row is its own unit.
    """
