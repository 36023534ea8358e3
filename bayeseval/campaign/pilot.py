"""Planning from a pilot: how many more labels each stratum needs, from the labels already in hand.

A team evaluating a model often holds a pilot before any campaign: every answer scored by a judge,
a few hundred of them labelled by people. :func:`plan_from_pilot` answers "how many more human
labels for a half-width of ``w`` in every category, with this judge?" from that frame alone. It
builds the campaign the pilot would start (the same settings, the pilot's labels counted as
labelled in round 0, exactly as :meth:`Campaign.create(labels=...) <bayeseval.campaign.Campaign.create>`
counts them) in a temporary file, reads its status, forecast and feasibility, and deletes the file.
:meth:`PilotPlan.start` then creates that campaign for real, the labels in hand counting.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import short_repr
from bayeseval.campaign.campaign import Campaign
from bayeseval.campaign.goals.each import Each
from bayeseval.campaign.spec import CampaignSpec

__all__ = ["PilotPlan", "plan_from_pilot"]

#: the status columns a plan shows, in this order, then the forecast and the feasibility
_STATUS = ["pool_rows", "labelled", "mean", "lower", "upper", "halfwidth"]


@dataclass(frozen=True, repr=False)
class PilotPlan(Result):
    """Labels still needed per stratum from a pilot, and the campaign that spends them.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per stratum: ``pool_rows``, ``labelled`` (the pilot's labels), the estimate
        ``mean`` with the interval the campaign stops on (``lower``, ``upper``, ``halfwidth``),
        ``labels_needed`` (more labels whose expected half-width meets the target; ``<NA>`` where
        no forecast can be made, with the reason in ``note``), ``achievable_halfwidth`` and
        ``feasible`` (whether the stratum's rows left can reach the target at all).
    spec : CampaignSpec
        The campaign's settings; :meth:`start` creates a campaign with them.
    labels : pandas.Series
        The pilot's labels by row id (the labelled rows only).
    """

    table: pd.DataFrame
    spec: CampaignSpec
    labels: pd.Series
    _pool: pd.DataFrame

    title = "Labels needed from the pilot"

    @property
    def total(self) -> int | None:
        """Labels needed over every stratum, or None when a stratum's forecast cannot be made."""
        needed = self.table["labels_needed"]
        return None if needed.isna().any() else int(needed.sum())

    def start(self, path: str | PathLike[str]) -> Campaign:
        """Create the campaign this plan forecasts, the pilot's labels counting as labelled.

        Parameters
        ----------
        path : str or path-like
            The campaign file to create (refused if it exists, as by :meth:`Campaign.create`).

        Returns
        -------
        Campaign
            Its first proposals are rows the pilot did not label.

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(0)
        >>> frame = pd.DataFrame({"g": ["a", "b"] * 300, "claim": 1,
        ...                       "human": np.where(rng.random(600) < 0.2, rng.random(600) < 0.8, np.nan)})
        >>> plan = plan_from_pilot(frame, y_true="human", y_pred="claim", strata="g", target_halfwidth=0.1)
        >>> c = plan.start(os.path.join(tempfile.mkdtemp(), "c.db"))
        >>> c.labels_used == int(frame["human"].notna().sum())
        True
        """
        return Campaign._from_spec(path, self._pool, self.spec, labels=self.labels)


def _labels(frame: pd.DataFrame, y_true: str) -> tuple[pd.DataFrame, pd.Series]:
    if not isinstance(y_true, str) or y_true not in frame.columns:
        raise ValueError(f"y_true={short_repr(y_true)} is not a column of frame; columns are {list(frame.columns)}")
    labels = frame[y_true].dropna()
    if labels.empty:
        raise ValueError(f"y_true={y_true!r}: no row of frame is labelled (the column is missing everywhere)")
    if not frame.index.is_unique:
        raise ValueError("frame: its index must identify the rows (it repeats a value); reset_index() first")
    return frame.drop(columns=[y_true]), labels


def plan_from_pilot(
    frame: Any,
    *,
    y_true: str,
    target_halfwidth: float,
    strata: str | Sequence[str] | None = None,
    y_pred: str | None = None,
    proxy: str | None = None,
    metric: str = "error_rate",
    level: float = 0.95,
    guarantee: Any = "stratum",
    label_set: Sequence[Any] | None = None,
    random_seed: Any = None,
) -> PilotPlan:
    """How many more labels each stratum needs for a half-width target, from a pilot's labels.

    The campaign that the pilot would start (goal :class:`~bayeseval.campaign.Each` at
    ``target_halfwidth``, the pilot's labels counted as a random sample within each stratum, as
    :meth:`Campaign.create(labels=...) <bayeseval.campaign.Campaign.create>` counts them) is built in a
    temporary file and asked for its status, forecast and feasibility; the file is then deleted.
    With a ``proxy`` (a judge's verdict on every row), the estimates and the forecast are the proxy
    campaign's: the judge's agreement with the labels in hand decides how far each new label goes.

    Parameters
    ----------
    frame : pandas.DataFrame or EvalRecords
        Every row of the pool (one answer per item), indexed by a unique row id, with ``y_true``
        missing where a row is not labelled yet (an ``EvalRecords`` from a reader gives its frame).
    y_true : str
        The column of the pilot's labels (missing where unlabelled).
    target_halfwidth : float
        The half-width every stratum's interval should reach.
    strata, y_pred, proxy, metric, level, guarantee, label_set, random_seed
        As for :meth:`Campaign.create <bayeseval.campaign.Campaign.create>`.

    Returns
    -------
    PilotPlan
        The per-stratum table (``labels_needed`` among its columns), ``total`` and
        :meth:`~PilotPlan.start`, which creates the campaign.

    Raises
    ------
    ValueError
        ``y_true`` is no column of ``frame`` or labels no row; the index repeats a row id; and
        every refusal of :meth:`Campaign.create <bayeseval.campaign.Campaign.create>`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> right = rng.random(2000) < 0.8
    >>> frame = pd.DataFrame({"category": rng.choice(["math", "geo"], 2000), "claim": 1,
    ...                       "judge": np.where(rng.random(2000) < 0.9, right, ~right).astype(int),
    ...                       "human": np.where(rng.random(2000) < 0.1, right, np.nan)})
    >>> plan = plan_from_pilot(frame, y_true="human", y_pred="claim", strata="category",
    ...                        proxy="judge", target_halfwidth=0.05)
    >>> int(plan.table["labelled"].sum()) == int(frame["human"].notna().sum())
    True
    >>> plan.total > 0
    True
    """
    table = getattr(frame, "frame", frame)
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame or EvalRecords, got {type(frame).__name__}")
    pool, labels = _labels(table, y_true)
    settings = {
        "strata": strata,
        "y_pred": y_pred,
        "proxy": proxy,
        "metric": metric,
        "level": level,
        "guarantee": guarantee,
        "label_set": label_set,
        "random_seed": random_seed,
        "goal": Each(target_halfwidth),
    }
    with tempfile.TemporaryDirectory() as tmp:
        campaign = Campaign.create(os.path.join(tmp, "pilot.db"), pool, labels=labels, **settings)
        try:
            status = campaign.status()
            forecast = campaign.forecast(cost=True)
            feasible = campaign.feasibility()
            spec = campaign.spec
        finally:
            campaign.close()
    out = status[[c for c in _STATUS if c in status.columns]].copy()
    out["labels_needed"] = forecast["labels"].to_numpy()
    out["note"] = forecast["note"].to_numpy()
    out["achievable_halfwidth"] = feasible["achievable_halfwidth"].to_numpy()
    out["feasible"] = feasible["feasible"].to_numpy()
    return PilotPlan(table=out, spec=spec, labels=labels, _pool=pool)
