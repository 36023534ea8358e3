"""What the label functions read of a campaign: its store, its label set and its settings.

The functions of :mod:`bayeseval.campaign.labels` (ingest, annotations and agreement, Label
Studio configuration and sync) never take a :class:`~bayeseval.campaign.Campaign`: they take a
:class:`LabelContext`, which bundles the open store, the known labels, the spec and what the
store resolved at creation (the strata, the row-id type and name, the content columns).
:class:`~bayeseval.campaign.Campaign` builds one when it opens its file and delegates to them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.campaign.labels.label_set import LabelSet, norm_rid
from bayeseval.campaign.spec import CampaignSpec
from bayeseval.campaign.store.store import CampaignStore
from bayeseval.counts.metrics import Metric, get_metric

__all__ = ["LabelContext", "stored_strata"]

#: the opening of the examples of the label functions: a campaign file at ``path``
STORE_EXAMPLE = """\
>>> import os, tempfile
>>> from contextlib import closing
>>> from pathlib import Path
>>> from bayeseval.campaign import Campaign
>>> from bayeseval.campaign.store.store import CampaignStore
>>> path = os.path.join(tempfile.mkdtemp(), "c.db")
>>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
>>> Campaign.create(path, pool, strata="g", y_pred="pred").close()"""


@fill_doc(store_example=STORE_EXAMPLE)
def stored_strata(store: CampaignStore, columns: Sequence[str], table: pd.DataFrame | None = None) -> pd.Index:
    """The strata of a campaign file, in code order, named by its stratum columns.

    Parameters
    ----------
    store : CampaignStore
        The open campaign file.
    columns : sequence of str
        The stratum columns (the configuration's ``strata``).
    table : pandas.DataFrame, optional
        The file's stratum table (:meth:`CampaignStore.strata`) when already read: it is
        not read again.

    Returns
    -------
    pandas.Index
        One entry per stratum code; a MultiIndex for several stratum columns.

    Examples
    --------
    {store_example}
    >>> with closing(CampaignStore(Path(path))) as store:
    ...     list(stored_strata(store, ["g"]))
    ['a', 'b']
    """
    keys = list((store.strata() if table is None else table)["key"])
    if len(columns) == 1:
        return pd.Index([k[0] for k in keys], name=columns[0])
    keys = [tuple(k) for k in keys]
    return pd.MultiIndex.from_tuples(keys, names=list(columns))


@fill_doc(store_example=STORE_EXAMPLE)
@dataclass(frozen=True)
class LabelContext:
    """A campaign's store, label set and settings: everything the label functions read.

    Parameters
    ----------
    store : CampaignStore
        The open campaign file.
    label_set : LabelSet
        The campaign's known labels.
    spec : CampaignSpec
        The campaign's settings.
    strata : pandas.Index
        The strata, in code order.
    config : dict
        The stored configuration (the spec's fields and what they resolved to on the pool:
        stratum and content columns, ``pos_label``, ``index_name``).

    Examples
    --------
    {store_example}
    >>> ctx = LabelContext.from_store(CampaignStore(Path(path)))
    >>> ctx.label_set.values, ctx.norm_rid("7"), list(ctx.rid_index([3, 1]))
    ([0, 1], 7, [3, 1])
    >>> ctx.store.close()
    """

    store: CampaignStore
    label_set: LabelSet
    spec: CampaignSpec
    strata: pd.Index
    config: dict[str, Any]

    @classmethod
    def from_store(cls, store: CampaignStore) -> LabelContext:
        """The context of an open campaign file, read from its stored configuration.

        Parameters
        ----------
        store : CampaignStore
            The open campaign file.

        Returns
        -------
        LabelContext
            Its label set, spec, strata and configuration.
        """
        config = json.loads(store.get_meta("config") or "{}")
        return cls(
            store=store,
            label_set=LabelSet(config["label_set"]),
            spec=CampaignSpec.from_config(config),
            strata=stored_strata(store, config["strata"]),
            config=config,
        )

    @property
    def metric(self) -> Metric:
        """The campaign's (first) metric: the one its stored trial and success flags count."""
        return get_metric(self.spec.metrics[0])

    @property
    def content(self) -> list[str]:
        """The content columns annotators see (``content=`` at create)."""
        return list(self.config.get("content") or [])

    @property
    def rid_int(self) -> bool:
        """Whether the campaign's row ids are integers (else text)."""
        return self.store.rid_type == "INTEGER"

    def norm_rid(self, rid: Any) -> Any:
        """A row id as the campaign stores it, or None (:func:`~bayeseval.campaign.labels.label_set.norm_rid`)."""
        return norm_rid(rid, self.rid_int)

    def rid_index(self, values: Any) -> pd.Index:
        """Stored row ids as the pool's index (its type and name)."""
        name = self.config.get("index_name")
        if self.rid_int:
            return pd.Index(np.asarray(list(values), dtype=np.int64), name=name)
        return pd.Index([str(v) for v in values], dtype=object, name=name)

    def pending_batch(self, round_: int | None = None, show_prediction: bool = False) -> pd.DataFrame:
        """The pending proposals as a batch (:meth:`Campaign.pending_batch <bayeseval.campaign.Campaign.pending_batch>`).

        Parameters
        ----------
        round_ : int, optional
            Only the pending rows of this proposal round; default every pending row.
        show_prediction : bool
            Include the prediction (and score) columns.

        Returns
        -------
        pandas.DataFrame
            :meth:`rows_frame` of the pending rows, in proposal order, with their ``round``.
        """
        pend = self.store.pending()
        if round_ is not None:
            pend = pend[pend["round"] == round_]
        frame = self.rows_frame(list(pend.index), None, show_prediction)
        frame["round"] = pend["round"].to_numpy(dtype=np.int64)
        return frame

    def rows_frame(self, rids: list[Any], round_: int | None, show_prediction: bool = False) -> pd.DataFrame:
        """Pool rows as a batch: the stratum and content columns (prediction and score with
        ``show_prediction``) and ``round``, indexed by row id.

        Parameters
        ----------
        rids : list
            Stored row ids.
        round_ : int or None
            The ``round`` column's value (0 when None).
        show_prediction : bool
            Include the prediction (and score) columns.

        Returns
        -------
        pandas.DataFrame
            The batch, in the order of ``rids``.
        """
        store = self.store
        rows = store.pool_rows(rids)
        out = pd.DataFrame(index=self.rid_index(rows.index))
        codes = rows["stratum"].to_numpy(dtype=np.int64) if len(rows) else np.array([], np.int64)
        for j, c in enumerate(self.config["strata"]):
            if isinstance(self.strata, pd.MultiIndex):
                out[c] = self.strata.get_level_values(j)[codes].to_numpy() if len(rows) else []
            else:
                out[c] = self.strata[codes].to_numpy() if len(rows) else []
        content = self.content
        if content:
            stored = store.content(list(rows.index))
            missing = [None] * len(content)
            for i, c in enumerate(content):
                out[c] = pd.array([stored.get(r, missing)[i] for r in rows.index], dtype=object)
        if show_prediction:
            out[self.spec.y_pred] = rows["prediction"].to_numpy() if len(rows) else []
        if show_prediction and self.spec.score:
            out[self.spec.score] = rows["score"].to_numpy(dtype=float) if len(rows) else []
        out["round"] = np.full(len(out), round_ if round_ is not None else 0, dtype=np.int64)
        return out
