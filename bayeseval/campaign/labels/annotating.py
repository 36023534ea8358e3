"""A campaign's annotations: the Label Studio view, the table of annotations, the agreement.

Functions of a campaign's :class:`~bayeseval.campaign.labels.context.LabelContext` (its store,
label set and settings); :class:`~bayeseval.campaign.Campaign` delegates its
:meth:`~bayeseval.campaign.Campaign.labelstudio_config`,
:meth:`~bayeseval.campaign.Campaign.annotations` and :meth:`~bayeseval.campaign.Campaign.agreement`
to them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.campaign.labels.agreement import agreement
from bayeseval.campaign.labels.annotations import content_kinds, labelstudio_config
from bayeseval.campaign.labels.context import STORE_EXAMPLE, LabelContext

__all__ = ["agreement_table", "annotation_table", "labelstudio_view"]


@fill_doc(store_example=STORE_EXAMPLE)
def labelstudio_view(
    ctx: LabelContext, *, content_types: dict[str, str] | None = None, show_prediction: bool = False
) -> str:
    """The Label Studio labelling configuration of a campaign (:meth:`Campaign.labelstudio_config
    <bayeseval.campaign.Campaign.labelstudio_config>`).

    Parameters
    ----------
    ctx : LabelContext
        The campaign's store, label set and settings.
    content_types : dict, optional
        Content column -> ``"text"`` or ``"image"``, overriding the rule of
        :func:`~bayeseval.campaign.labels.annotations.content_kinds` on the first 200 stored rows.
    show_prediction : bool
        Also show the model's prediction.

    Returns
    -------
    str
        The XML configuration.

    Examples
    --------
    {store_example}
    >>> with closing(CampaignStore(Path(path))) as store:
    ...     print(labelstudio_view(LabelContext.from_store(store)).splitlines()[1])
      <Header value="bayeseval_row_id"/>
    """
    cols = ctx.content
    sample = list(ctx.store.content().values())
    kinds = content_kinds({c: [row[i] for row in sample] for i, c in enumerate(cols)}, content_types)
    return labelstudio_config(
        ctx.label_set.values, content=kinds, prediction=ctx.spec.y_pred if show_prediction else None
    )


@fill_doc(store_example=STORE_EXAMPLE)
def annotation_table(ctx: LabelContext) -> pd.DataFrame:
    """Every stored annotation of a campaign (:meth:`Campaign.annotations <bayeseval.campaign.Campaign.annotations>`).

    Parameters
    ----------
    ctx : LabelContext
        The campaign's store, label set and settings.

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``annotator``, ``label``, ``round``, ``time`` and ``stratum``.

    Examples
    --------
    {store_example}
    >>> with closing(CampaignStore(Path(path))) as store:
    ...     list(annotation_table(LabelContext.from_store(store)).columns)
    ['row', 'annotator', 'label', 'round', 'time', 'stratum']
    """
    frame = ctx.store.annotations().rename(columns={"rid": "row"})
    frame["stratum"] = ctx.strata[frame["stratum"].to_numpy()] if len(frame) else []
    frame["row"] = ctx.rid_index(frame["row"]).to_numpy()
    frame["time"] = pd.to_datetime(frame["time"], unit="s")
    return frame


@fill_doc(store_example=STORE_EXAMPLE)
def agreement_table(ctx: LabelContext) -> pd.DataFrame:
    """Agreement between annotators per stratum (:meth:`Campaign.agreement <bayeseval.campaign.Campaign.agreement>`).

    Parameters
    ----------
    ctx : LabelContext
        The campaign's store, label set and settings.

    Returns
    -------
    pandas.DataFrame
        Indexed by stratum: ``rows``, ``annotators``, ``per_row``, ``method`` and ``kappa``
        (:func:`~bayeseval.campaign.labels.agreement.agreement`).

    Examples
    --------
    {store_example}
    >>> with closing(CampaignStore(Path(path))) as store:
    ...     agreement_table(LabelContext.from_store(store))["rows"].tolist()
    [0, 0]
    """
    ann = ctx.store.annotations()
    codes = ann.groupby("rid")["stratum"].first()
    table = agreement(ann.rename(columns={"rid": "row"}), codes.rename("code"))
    table = table.reindex(range(len(ctx.strata)))
    table["rows"] = table["rows"].fillna(0).astype(np.int64)
    for col in ("annotators", "per_row"):
        table[col] = table[col].fillna(0).astype(np.int64)
    table["method"] = table["method"].astype(object).where(table["method"].notna(), None)
    table.index = ctx.strata
    return table
