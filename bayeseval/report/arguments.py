"""The arguments of :func:`bayeseval.evaluate`, checked before any work is done."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from bayeseval._api.validation import (
    check_level,
    check_method,
    check_proxy_design,
    check_random_seed,
    check_weights,
    iter_columns,
)
from bayeseval._kernels.binomial import GUARANTEES
from bayeseval._kernels.guarantee import Guarantee, as_guarantee
from bayeseval.counts.counts import Counts
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.metrics import Metric, get_metric
from bayeseval.models.priors import resolve_prior

__all__: list[str] = []

# -- evaluate: arguments -------------------------------------------------------------------------
_ENGINES = ("exact", "pymc")
_MODELS = ("beta_binomial", "robust", "logit_normal")


@dataclass(frozen=True)
class Settings:
    """The validated arguments of :func:`evaluate`."""

    metric: Metric | None
    weights: Any
    engine: str
    model: str
    prior: Any
    level: float
    target_halfwidth: float | None
    random_seed: Any
    guarantee: Guarantee = Guarantee.stratum()
    proxy: str | None = None
    design: Design | None = None
    label_set: Any = None
    outcome: str | None = None

    @property
    def inclusion(self) -> str | None:
        """The design's inclusion column, if any."""
        return None if self.design is None else self.design.inclusion


# the planner (sample_size with method="wilson") searches up to this many trials per stratum
_MAX_PLANNED = 2**40


def _check_target(target_halfwidth: Any, level: float) -> float | None:
    if target_halfwidth is None:
        return None
    if isinstance(target_halfwidth, bool) or not isinstance(target_halfwidth, Real):
        raise TypeError(f"target_halfwidth must be a number, got {target_halfwidth!r}")
    value = float(target_halfwidth)
    if not 0 < value < 0.5:
        raise ValueError(f"target_halfwidth must be in (0, 0.5), got {target_halfwidth!r}")
    # the most trials any stratum can need is at rate 0.5, at most z^2 / (4 e^2) (Wilson needs
    # z^2 fewer); refuse a target whose extra labels the planner cannot count
    root_n = float(norm.ppf((1 + level) / 2)) / (2 * value)  # sqrt of the trials needed
    if root_n > math.sqrt(_MAX_PLANNED):
        raise ValueError(
            f"target_halfwidth {target_halfwidth!r} is too small: a stratum near rate 0.5 would "
            f"need about {root_n:.3g}**2 labels, more than 2**40"
        )
    return value


def _check_weights_values(weights: Any) -> Any:
    """Check population shares before the strata are known (matching comes later)."""
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)) or not isinstance(weights, (Mapping, pd.Series, Sequence, np.ndarray)):
        raise TypeError(
            f"weights must be a mapping stratum -> population share, a Series or a sequence, got {weights!r}"
        )
    check_weights(dict(weights) if isinstance(weights, Mapping) else weights, len(weights))
    return weights


def _check_proxy_arguments(data: Any, proxy: Any, inclusion: Any, label_set: Any = None) -> None:
    check_proxy_design(proxy, inclusion, label_set)
    if proxy is not None and isinstance(data, Counts):
        raise TypeError(f"proxy={proxy!r} needs one row per example; data is a Counts")


def _check_row_arguments(data: Any, y_true: Any, y_pred: Any, strata: Any, pos_label: Any, outcome: Any = None) -> None:
    if isinstance(data, Counts):
        given = {"y_true": y_true, "y_pred": y_pred, "strata": strata, "pos_label": pos_label, "outcome": outcome}
        extra = {k: v for k, v in given.items() if v is not None}
        if extra:
            raise TypeError(
                "data is a Counts (already tabulated): y_true, y_pred, outcome, strata and pos_label "
                f"apply to rows only, got {extra!r}"
            )
        return
    if outcome is not None:
        if y_true is not None or y_pred is not None:
            raise TypeError(
                "give either outcome (per-row outcomes in [0, 1]) or y_true and y_pred, not both, "
                f"got outcome={outcome!r}, y_true={y_true!r}, y_pred={y_pred!r}"
            )
        if not isinstance(outcome, str):
            raise TypeError(f"outcome must be a column name (str), got {outcome!r}")
    elif y_true is None or y_pred is None:
        raise TypeError(
            "y_true and y_pred (column names) are required unless data is a Counts or outcome is given, "
            f"got y_true={y_true!r}, y_pred={y_pred!r}"
        )
    if strata is not None and not isinstance(strata, (str, Sequence)):
        raise TypeError(f"strata must be a column name or a list of column names, got {strata!r}")


def check_arguments(data: Any, y_true: Any, y_pred: Any, strata: Any, pos_label: Any, **kw: Any) -> Settings:
    """Validate every argument of :func:`evaluate` before any work is done."""
    _check_row_arguments(data, y_true, y_pred, strata, pos_label, kw.get("outcome"))
    design = None if kw.get("design") is None else as_design(kw["design"])
    if design is not None and isinstance(data, Counts):
        raise TypeError(f"design applies to rows; data is a Counts (tabulate it with design=), got design={design!r}")
    _check_proxy_arguments(data, kw["proxy"], None if design is None else design.inclusion, kw.get("label_set"))
    engine = check_method(kw["engine"], _ENGINES, "engine")
    model = check_method(kw["model"], _MODELS, "model")
    if model == "logit_normal" and engine != "pymc":
        raise ValueError(
            f"model {kw['model']!r} needs engine='pymc' (model=PooledModel({kw['model']!r}, engine='pymc')); "
            f"engine {kw['engine']!r} fits 'beta_binomial' and 'robust'"
        )
    resolve_prior(kw["prior"])
    level = check_level(kw["level"])
    metric = kw["metric"]
    return Settings(
        metric=None if metric is None else get_metric(metric),
        weights=_check_weights_values(kw["weights"]),
        engine=engine,
        model=model,
        prior=kw["prior"],
        level=level,
        target_halfwidth=_check_target(kw["target_halfwidth"], level),
        random_seed=check_random_seed(kw["random_seed"]),
        guarantee=as_guarantee(kw["guarantee"], allowed=GUARANTEES),
        proxy=kw["proxy"],
        design=design,
        label_set=kw.get("label_set"),
        outcome=kw.get("outcome"),
    )


def check_groups(data: Any, groups: Any) -> list[str] | None:
    """The group columns of :func:`evaluate`'s audit (its options come with them in a ``Groups``)."""
    if groups is None:
        return None
    if isinstance(data, Counts):
        raise TypeError(f"groups (a fairness audit) needs one row per example; data is a Counts, got groups={groups!r}")
    cols = iter_columns(groups, "groups")
    if not cols:
        raise ValueError(f"groups must name at least one column, got {groups!r}")
    return cols
