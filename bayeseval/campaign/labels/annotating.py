"""A campaign's methods for several annotators and Label Studio.

:class:`Annotating` holds what :class:`~bayeseval.campaign.Campaign` does with annotations
beyond ingesting them: the Label Studio labelling configuration, the sync with a Label Studio
project, the table of every annotation and the agreement between annotators per stratum.
``Campaign`` inherits these methods; they read the campaign's store and settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.campaign.labels.annotations import agreement, content_kinds, labelstudio_config

if TYPE_CHECKING:
    from bayeseval.campaign.labels.label_set import LabelSet
    from bayeseval.campaign.spec import CampaignSpec
    from bayeseval.campaign.store.store import CampaignStore

__all__ = ["Annotating"]


class Annotating:
    """The annotation and Label Studio methods of :class:`~bayeseval.campaign.Campaign`.

    Examples
    --------
    >>> from bayeseval.campaign import Campaign
    >>> issubclass(Campaign, Annotating)
    True
    """

    # what the methods read of the campaign (set by Campaign.__init__)
    config: dict[str, Any]
    spec: CampaignSpec
    strata: pd.Index
    _store: CampaignStore
    _labels: LabelSet
    _rid_index: Callable[[Any], pd.Index]  # a method of Campaign: the row ids of stored values

    def labelstudio_config(self, *, content_types: dict[str, str] | None = None, show_prediction: bool = False) -> str:
        """A Label Studio labelling configuration showing the campaign's content columns.

        Each content column (``content=`` at create) is shown under a header with its name,
        as an ``<Image>`` or a ``<Text>`` object (the rule of
        :func:`~bayeseval.campaign.labels.annotations.content_kinds`, on the first 200 stored rows;
        ``content_types`` overrides it), followed by one ``<Choices name="label">`` control
        whose choices are the campaign's known labels. Without content columns the row id
        is shown.

        Parameters
        ----------
        content_types : dict, optional
            Content column -> ``"text"`` or ``"image"``, overriding the rule.
        show_prediction : bool
            Also show the model's prediction (write the tasks with ``show_prediction=True``
            too). Default False: annotators should not see it.

        Returns
        -------
        str
            The XML configuration.

        Examples
        --------
        >>> import os, tempfile
        >>> from bayeseval.campaign import Campaign
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500,
        ...                      "text": [f"item {i}" for i in range(1000)]})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", content="text", random_seed=0)
        >>> print(c.labelstudio_config())
        <View>
          <Header value="text"/>
          <Text name="text" value="$text"/>
          <Choices name="label" toName="text" choice="single" showInline="true">
            <Choice value="0"/>
            <Choice value="1"/>
          </Choices>
        </View>
        """
        cols = list(self.config.get("content") or [])
        sample = list(self._store.content().values())
        kinds = content_kinds({c: [row[i] for row in sample] for i, c in enumerate(cols)}, content_types)
        return labelstudio_config(
            self._labels.values, content=kinds, prediction=self.spec.y_pred if show_prediction else None
        )

    @fill_doc()
    def sync_labelstudio(
        self,
        *,
        url: str,
        project: int,
        token: str | None = None,
        create_config: bool = False,
        batch_size: int | None = None,
        min_open: int | None = None,
        relabel: bool = True,
        client: Any = None,
    ) -> Any:
        """Bring the campaign and a Label Studio project into step (needs ``label-studio-sdk``).

        Lists the project's tasks, adopts the campaign's tasks the file does not know yet,
        releases rows whose task was deleted, ingests new and changed annotations (annotators
        by e-mail, the campaign's resolution), proposes rows when at most ``min_open`` tasks
        are open, creates one task per pending row and keeps each open task's
        ``predictions[].score`` equal to the row's priority (sort the Data Manager by
        prediction score to label in the campaign's order). Safe to repeat and to interrupt:
        see :mod:`bayeseval.campaign.labels.labelstudio`.

        Parameters
        ----------
        url : str
            The Label Studio server, e.g. ``http://localhost:8080``.
        project : int
            The project id.
        token : str, optional
            An API token; default the ``LABEL_STUDIO_API_KEY`` environment variable.
        create_config : bool
            Set the project's labelling configuration from :meth:`labelstudio_config` first.
        batch_size : int, optional
            Rows proposed when the open tasks run low (default the campaign's batch size).
        min_open : int, optional
            Propose when at most this many tasks are open (default half of ``batch_size``).
        relabel : bool
            An annotator's updated annotation replaces the stored one (default True).
        client : object, optional
            A :class:`~bayeseval.campaign.labels.labelstudio.LabelStudioClient` (or an object with its
            methods) to use instead of one built from ``url`` and ``token``.

        Returns
        -------
        SyncReport
            What was done (:class:`~bayeseval.campaign.labels.labelstudio.SyncReport`).

        Examples
        --------
        {campaign_example}
        >>> c.sync_labelstudio(url="localhost:8080", project=1, token="t")
        Traceback (most recent call last):
        ...
        ValueError: url must start with http:// or https://, got 'localhost:8080'
        """
        from bayeseval.campaign.labels.labelstudio import LabelStudioClient, sync

        if client is None:
            client = LabelStudioClient(url, token if token is not None else os.environ.get("LABEL_STUDIO_API_KEY", ""))
        return sync(
            self,
            client,
            project,
            create_config=create_config,
            batch_size=batch_size,
            min_open=min_open,
            relabel=relabel,
        )

    def annotations(self) -> pd.DataFrame:
        """Every stored annotation (ingest with ``annotator_column``).

        Returns
        -------
        pandas.DataFrame
            Columns ``row``, ``annotator`` (as :func:`~bayeseval.campaign.labels.annotations.annotator_identity`
            names them), ``label``, ``round``, ``time`` (of the annotator's first label of the
            row) and ``stratum``.

        Examples
        --------
        >>> import os, tempfile
        >>> from bayeseval.campaign import Campaign
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", annotators=2, random_seed=0)
        >>> b = c.propose(2)
        >>> ann = pd.DataFrame({"row": list(b.index) * 2, "annotator": ["ann", "ann", "bo", "bo"],
        ...                     "label": [1, 0, 1, 1]})
        >>> r = c.ingest(ann, id_column="row", annotator_column="annotator")
        >>> int(r), r.annotations, r.unresolved, len(c.annotations())
        (1, 4, 1, 4)
        """
        frame = self._store.annotations().rename(columns={"rid": "row"})
        frame["stratum"] = self.strata[frame["stratum"].to_numpy()] if len(frame) else []
        frame["row"] = self._rid_index(frame["row"]).to_numpy()
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
        return frame

    def agreement(self) -> pd.DataFrame:
        """Agreement between annotators per stratum, on the first annotations of every row.

        Over every row annotated at least twice, the first ``per_row`` annotations of each row
        by time (the fewest any such row has; an annotator's corrected label keeps the place of
        the first one): Cohen's kappa when they are the same two annotators on every row,
        otherwise Fleiss' kappa. Tie-breaking annotations asked for where the first annotators
        disagree never choose the rows; see :func:`bayeseval.campaign.labels.annotations.agreement`.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum: ``rows`` (rows used), ``annotators``, ``per_row``, ``method``
            (``"cohen"``, ``"fleiss"`` or None) and ``kappa`` (NaN where no row has two
            annotations).

        Examples
        --------
        >>> import os, tempfile
        >>> from bayeseval.campaign import Campaign
        >>> pool = pd.DataFrame({"g": ["a"] * 1000, "pred": [0, 1] * 500})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", annotators=2, random_seed=0)
        >>> b = c.propose(4)
        >>> ann = pd.DataFrame({"row": list(b.index) * 2, "annotator": ["x"] * 4 + ["y"] * 4,
        ...                     "label": [1, 1, 0, 0, 1, 0, 0, 0]})
        >>> _ = c.ingest(ann, id_column="row", annotator_column="annotator")
        >>> c.agreement()[["rows", "method", "kappa"]].to_dict("records")
        [{'rows': 4, 'method': 'cohen', 'kappa': 0.5}]
        """
        ann = self._store.annotations()
        codes = ann.groupby("rid")["stratum"].first()
        table = agreement(ann.rename(columns={"rid": "row"}), codes.rename("code"))
        table = table.reindex(range(len(self.strata)))
        table["rows"] = table["rows"].fillna(0).astype(np.int64)
        for col in ("annotators", "per_row"):
            table[col] = table[col].fillna(0).astype(np.int64)
        table["method"] = table["method"].astype(object).where(table["method"].notna(), None)
        table.index = self.strata
        return table
