"""Labelling campaigns that stop when every credible interval is narrow enough.

A :class:`Campaign` keeps its whole state in one SQLite file (see
:mod:`bayeseval.campaign.store.store`): the settings (a :class:`~bayeseval.campaign.CampaignSpec`), the
pool reference (row id, stratum, prediction, optional score), every proposal, every label and
every decision. Each round it

1. fits the hierarchical Beta-binomial posterior of the metric per stratum on a small exact
   grid (switching to the robust approximation when a leave-one-out predictive check flags
   an outlying stratum),
2. asks the proposal rule how many labels each stratum should get,
3. draws that many never-proposed rows at random within each chosen stratum,

and records the proposal, the decision and the random generator state in one transaction.
``ingest`` validates labels completely before writing them in one transaction, so a crash at
any moment loses no acknowledged label and never counts one twice. The stopping rule is the
one that :func:`bayeseval.campaign.simulation` replays.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Callable, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._api.moved import moved_keywords
from bayeseval._api.validation import check_positive_int
from bayeseval._api.version import VERSION
from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval._backends.narwhals_backend import pandas_frame
from bayeseval._kernels.guarantee import Guarantee, guarantee_stop_level
from bayeseval.campaign.fields import DEFAULTS
from bayeseval.campaign.labels.annotating import agreement_table, annotation_table, labelstudio_view
from bayeseval.campaign.labels.context import LabelContext, stored_strata
from bayeseval.campaign.labels.existing import (
    EXISTING_META,
    EXISTING_ROUND,
    SEED_DESIGN,
    seed_cell_bounds,
)
from bayeseval.campaign.labels.ingest import IngestResult, ingest_labels
from bayeseval.campaign.labels.label_set import LabelSet
from bayeseval.campaign.labels.labelstudio import LabelStudioClient, SyncLoop, SyncReport, sync
from bayeseval.campaign.loop.forecast import forecast_table, stratum_feasibility
from bayeseval.campaign.loop.metric_states import MetricStates
from bayeseval.campaign.loop.pool import (
    StrataDesign,
    metric_flags,
    population_weights,
    stratum_thresholds,
)
from bayeseval.campaign.loop.proxy_cells import PROXY_META, ProxyDesign
from bayeseval.campaign.loop.rounds import allocate, round_size, spec_state, spec_states
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.rules import get_rule
from bayeseval.campaign.loop.status import outcome_text, status_frame
from bayeseval.campaign.loop.units import (
    UNITS_META,
    UnitDesign,
    unit_costs,
    unit_status,
    units_feasibility,
    units_state,
)
from bayeseval.campaign.settings import Annotation, Budget, Score, flat_settings
from bayeseval.campaign.spec import CampaignSpec, entry_docs
from bayeseval.campaign.store.create import initialise
from bayeseval.campaign.store.store import DEFAULT_BUSY_TIMEOUT, CampaignStore
from bayeseval.counts.counts import Counts, stratum_labels
from bayeseval.counts.design import Design
from bayeseval.counts.metrics import get_metric
from bayeseval.counts.units import level_names
from bayeseval.models import fit_hierarchical
from bayeseval.models.pooled import PooledModel

__all__ = ["Campaign"]

#: keywords Campaign.create no longer takes, and where they moved
CREATE_MOVES = {
    "prior": "pass model=PooledModel(name, prior=...)",
    "batch_size": "pass budget=Budget(labels, batch_size=...)",
    "costs": "pass budget=Budget(labels, costs=...)",
    "score_bins": "pass score=Score(column, bins=...)",
    "annotators": "pass annotation=Annotation(annotators=...)",
    "resolve": "pass annotation=Annotation(resolve=...)",
    "content": "pass annotation=Annotation(content=...)",
    "busy_timeout": "it is Campaign.open(path, busy_timeout=...)'s, for the campaign reopened after create",
    "spec": "pass the spec's settings, Campaign.create(path, pool, **spec.keywords())",
}


class Campaign:
    """A labelling campaign stored in SQLite.

    Create one with :meth:`Campaign.create`, resume it with :meth:`Campaign.open`.

    Parameters
    ----------
    store : CampaignStore
        The open campaign database (:class:`~bayeseval.campaign.store.store.CampaignStore`).

    Attributes
    ----------
    spec : CampaignSpec
        The campaign's settings, as stored in its file.
    config : dict
        The stored configuration: the spec's fields plus what they resolved to on the pool
        (stratum columns, known labels, weights, prior means, the row-id column name).
    metric : Metric
        The campaign's metric (the first, for a campaign on several metrics).
    metrics : list of Metric
        Every metric of the campaign (one unless ``metric`` named several).
    strata : pandas.Index
        The strata (a MultiIndex for several stratum columns).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> pool = pd.DataFrame({"g": rng.choice(["a", "b"], 2000), "pred": rng.integers(0, 2, 2000)})
    >>> path = os.path.join(tempfile.mkdtemp(), "c.db")
    >>> c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=1)
    >>> batch = c.propose(20)
    >>> len(batch)
    20
    >>> c.ingest(pd.Series(1, index=batch.index))
    20
    >>> c.labels_used
    20
    >>> c.close()
    """

    def __init__(self, store: CampaignStore) -> None:
        self._store = store
        try:
            self.config: dict[str, Any] = json.loads(store.get_meta("config") or "{}")
        except json.JSONDecodeError as exc:
            store.close()
            raise ValueError(f"campaign database {str(store.path)!r} has an unreadable configuration: {exc}") from exc
        self.spec = CampaignSpec.from_config(self.config)
        self.metric = get_metric(self.spec.metrics[0])
        self.metrics = [get_metric(m) for m in self.spec.metrics]
        self._rule_name, self._rule, self._model = get_rule(self.spec.rule)
        strata = store.strata()
        self._codes = strata.index.to_numpy()
        self.strata = stored_strata(store, self.config["strata"], strata)
        n_eligible = strata["n_eligible"].to_numpy()
        pm = self.config.get("prior_mean")
        self._design = StrataDesign(
            strata=self.strata,
            n_rows=strata["n_rows"].to_numpy(),
            n_eligible=n_eligible,
            weights=population_weights(self.config.get("weights"), self.strata, n_eligible),
            prior_mean=None if pm is None else np.asarray(pm, dtype=float),
            costs=None if self.config.get("costs") is None else np.asarray(self.config["costs"], dtype=float),
            threshold=stratum_thresholds(getattr(self.spec.goal, "threshold", None), self.strata),
            concentration=_stored_array(self.config.get("anytime_concentration")),
        )
        self._labels = LabelSet(self.config["label_set"])
        # what the label functions (labels/) read: the store, the label set and the settings
        self._ctx = LabelContext(store, self._labels, self.spec, self.strata, self.config)
        self._proxy = self._proxy_design(self.spec.proxy) if self.spec.proxy is not None else None
        self._seeded = json.loads(store.get_meta(EXISTING_META) or "{}").get("design") == SEED_DESIGN
        units = self._unit_design() if self.spec.design.cluster is not None else None
        # units of one row each are rows: the campaign is the row campaign, bit for bit (as evaluate reads them)
        self._units = units if units is not None and bool((units.unit_rows > 1).any()) else None
        self._last_state: RuleState | None = None  # the last state built, whose fits a state of equal counts reuses

    def _unit_design(self) -> UnitDesign:
        """The stored units of the pool's eligible rows and their proposal order (``design.cluster``)."""
        pairs = json.loads(self._store.get_meta(UNITS_META) or "[]")
        pool = self._store.pool_table()
        pool = pool[pool["eligible"].to_numpy() == 1]
        unit = pd.Series([u for _, u in pairs], index=[r for r, _ in pairs], dtype=object).reindex(pool.index)
        position = pd.Series(np.arange(len(self._codes)), index=self._codes)
        strata = position.reindex(pool["stratum"].to_numpy()).to_numpy()
        return UnitDesign.build(pool.index, unit.to_numpy(), strata, pool["ord"].to_numpy(), len(self._codes))

    def _unit_flags(self, conn: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per eligible row of the units (``design.cluster``): labelled, pending, success, trial, label round."""
        assert self._units is not None
        rids = self._units.rids
        labels = self._store.label_rows(conn)
        labelled = rids.isin(labels.index)
        pending = rids.isin(self._store.pending_ids(conn))
        success = labels["success"].astype(float).reindex(rids).fillna(0.0).to_numpy()
        trial = labels["trial"].astype(float).reindex(rids).fillna(0.0).to_numpy()
        label_round = labels["round"].reindex(rids).fillna(0).to_numpy(dtype=np.int64)
        return labelled, pending, success, trial, label_round

    def _units_state(self, conn: Any = None) -> tuple[RuleState, pd.DataFrame]:
        """The units state and per-stratum units table (:func:`~bayeseval.campaign.loop.units.units_state`)."""
        assert self._units is not None
        status = unit_status(self._units, *self._unit_flags(conn))
        return units_state(self.spec, self._design, status, self._units.n_units, self._units.pool_table())

    def _proxy_design(self, column: str) -> ProxyDesign:
        """The stored proxy column and the pool's strata, predictions and order as a :class:`ProxyDesign`."""
        pairs = json.loads(self._store.get_meta(PROXY_META) or "[]")
        pool = self._store.pool_table()
        proxy = pd.Series([v for _, v in pairs], index=[r for r, _ in pairs])
        pool["proxy"] = proxy.reindex(pool.index).to_numpy()
        return ProxyDesign(
            pool, self.metric.name, self.config.get("pos_label"), self.config["label_set"], column=column
        )

    def _proxy_labels(self, conn: Any = None) -> tuple[pd.Series, pd.Series]:
        """The stored labels and successes, indexed by row id."""
        frame = self._store.label_rows(conn)
        return frame["label"], frame["success"].astype(float)

    def _proxy_table(self, conn: Any = None) -> pd.DataFrame:
        """Per-stratum proxy estimates at the level the stratum guarantee stops on (kept per set of labels)."""
        labels, _ = self._proxy_labels(conn)
        key = pd.util.hash_pandas_object(labels.map(repr), index=True).to_numpy().tobytes()
        if self._proxy is not None and getattr(self, "_proxy_memo", (None,))[0] != key:  # propose, status, stop: once
            self._proxy_memo = (key, self._proxy.table(labels, self._codes, guarantee_stop_level(self.spec.level)))
        return self._proxy_memo[1].copy()

    def _seed_table(self, conn: Any = None) -> pd.DataFrame:
        """Per-stratum estimate and interval from the seed cell and the random rest (stop level)."""
        seed = self._store.round_counts(EXISTING_ROUND, conn).reindex(self._codes, fill_value=0)
        counts = self._store.counts(conn).reindex(self._codes, fill_value=0)
        est, lo, hi = seed_cell_bounds(
            (seed["successes"].to_numpy(), seed["trials"].to_numpy()),
            (counts["successes"].to_numpy(), counts["trials"].to_numpy()),
            self._design.n_eligible,
            guarantee_stop_level(self.spec.level),
        )
        return pd.DataFrame({"estimate": est, "lower": lo, "upper": hi}, index=self._codes)

    # -- construction --------------------------------------------------------------------
    @classmethod
    @moved_keywords("Campaign.create", CREATE_MOVES)
    @fill_doc()
    @entry_docs
    def create(
        cls,
        path: str | PathLike[str],
        pool: pd.DataFrame,
        *,
        strata: str | Sequence[str] | None = None,
        y_pred: str | None = None,
        metric: str = DEFAULTS["metric"],
        level: float = DEFAULTS["level"],
        goal: Any = DEFAULTS["goal"],
        weights: Any = DEFAULTS["weights"],
        rule: str = DEFAULTS["rule"],
        score: str | Score | None = DEFAULTS["score"],
        budget: int | Budget | None = DEFAULTS["budget"],
        pos_label: Any = DEFAULTS["pos_label"],
        label_set: Sequence[Any] | None = DEFAULTS["label_set"],
        model: str | PooledModel = DEFAULTS["model"],
        guarantee: str | Guarantee = DEFAULTS["guarantee"],
        proxy: str | None = DEFAULTS["proxy"],
        design: Design | dict[str, Any] | None = DEFAULTS["design"],
        random_seed: Any = DEFAULTS["random_seed"],
        annotation: Annotation | None = None,
        labels: Any = None,
    ) -> Campaign:
        """Create a campaign file from a pool of unlabelled predictions.

        The settings form a :class:`~bayeseval.campaign.CampaignSpec`; it is stored in the file
        and read back by :meth:`open`. ``Campaign.create(path, pool, **spec.keywords())``
        creates the campaign of a spec (:meth:`CampaignSpec.keywords
        <bayeseval.campaign.CampaignSpec.keywords>`).
        Every setting is checked before anything is written: a failed create leaves no file.
        The database is built in a temporary file next to ``path`` and published atomically,
        so a process killed during ``create`` leaves no file at ``path``. Writes wait up to 10
        seconds for another process's lock (:meth:`open` takes another ``busy_timeout``).

        Parameters
        ----------
        path : str or path-like
            The SQLite file to create (must not exist).
        pool : pandas.DataFrame or another frame narwhals reads
            One row per unlabelled item; the index is the row id (integers or strings,
            unique). A polars, pyarrow, Dask... frame is collected into pandas (the pool is
            stored in the file), its row ids being the rows' positions. Only the stratum, prediction and score columns are stored, and the
            ``annotation.content`` columns.
        {spec_parameters}
        annotation : Annotation, optional
            How annotators see the rows and how their annotations become labels
            (:class:`~bayeseval.campaign.Annotation`: ``annotators``, the annotations a row
            needs, default 1; ``resolve``, ``"majority"`` or ``"annotator:NAME"``; ``content``,
            the pool columns stored in the file and written into every batch). Default
            ``Annotation()``.
        labels : pandas.Series, pandas.DataFrame, dict or str, optional
            Labels you already have for some pool rows: the campaign starts from them. A Series
            (or dict) of labels by row id; a DataFrame (or another frame narwhals reads) indexed by row id, or holding the row id
            in a column named like the pool's index (``row`` when it has no name), with one
            label column (``label``, ``true_label``, ``y_true``, ``truth`` or ``y``, or the only
            other column); or the name of a pool column holding the labels (missing where a row
            is unlabelled). They are recorded as labelled in round 0, exactly as if the campaign
            had proposed those rows and ingested their labels, and are counted as a random
            sample within each stratum; the campaign then proposes only rows never labelled.
            Every row is checked before anything is written: ids not in the pool, ids given
            twice, blank labels and labels outside the known labels are a ``ValueError``
            naming the row ids. The budget counts these labels. With ``design.inclusion``
            (``design=Design(inclusion=column)``): the column (of ``labels``, or of the pool when
            ``labels`` names a pool column) of the probability with which each row was chosen
            for labelling. Probabilities equal within each stratum are a random sample within
            strata. Labels whose probabilities differ within a stratum are read as a seed cell:
            each stratum's estimate and interval combine the seed rows, all labelled, with the
            campaign's random draws from the rest (``read="seeded"`` in :meth:`status`;
            :func:`~bayeseval.campaign.labels.existing.seed_cell_bounds`), unbiased whatever
            rule chose them. Only goal ``"each"`` under ``guarantee="stratum"`` with one
            metric whose trials the prediction fixes, no ``proxy``, no anytime guarantee and
            ``design.population="process"`` reads a seed cell; other campaigns refuse such
            labels (a ``ValueError`` naming the stratum and the setting).

        Returns
        -------
        Campaign
            The new campaign, open on ``path``.

        Examples
        --------
        {campaign_example}
        >>> c.status()["labelled"].tolist()
        [0, 0]
        >>> c.close()
        """
        flat = flat_settings(model=model, budget=budget, score=score, annotation=annotation or Annotation())
        content = flat.pop("content")
        spec = CampaignSpec(
            strata=strata,  # type: ignore[arg-type]  # the spec reads a column or a list of columns
            y_pred=y_pred,  # type: ignore[arg-type]  # the spec refuses None, naming it
            metric=metric,
            level=level,
            goal=goal,
            weights=weights,
            rule=rule,
            pos_label=pos_label,
            label_set=label_set,  # type: ignore[arg-type]
            guarantee=guarantee,  # type: ignore[arg-type]  # a name at the API edge, an object once built
            proxy=proxy,
            design=design,  # type: ignore[arg-type]
            random_seed=random_seed,
            **flat,
        )
        return cls._from_spec(path, pool, spec, content=content, labels=labels)

    @classmethod
    def _from_spec(
        cls,
        path: str | PathLike[str],
        pool: Any,
        spec: CampaignSpec,
        *,
        content: Any = None,
        labels: Any = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> Campaign:
        """Create the campaign of ``spec`` (:meth:`create` once its keywords form the spec)."""
        pool, labels = pandas_frame(pool), pandas_frame(labels)
        if hasattr(pool, "__len__"):
            spec = spec.for_pool(_pool_size(pool, spec.design.cluster))
        inclusion = spec.design.inclusion
        if inclusion is not None and labels is None:
            raise TypeError(f"design.inclusion={inclusion!r} is the column of the labels' inclusion: give labels too")
        if spec.design.cluster is not None and labels is not None:
            raise ValueError(
                f"design.cluster={spec.design.cluster!r} samples whole units from the start; got labels= (rows "
                "labelled before the campaign): create the campaign without them"
            )
        if inclusion is not None and spec.design.population == "pool":
            raise ValueError(
                f"design.population='pool' reads the labels as a random sample within each stratum; "
                f"got design.inclusion={inclusion!r} (labels chosen with their own probabilities)"
            )
        campaign = cls(initialise(path, pool, spec, busy_timeout, content, labels, inclusion))
        if spec.goal.checks_feasibility:
            campaign.feasibility(warn=True)
        return campaign

    @classmethod
    def open(
        cls, path: str | PathLike[str], *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, read_only: bool = False
    ) -> Campaign:
        """Open an existing campaign file and resume exactly where it was.

        The file is checked to be a bayeseval campaign database before anything is changed;
        anything else (a text file, a truncated or corrupt database, another application's
        SQLite file) is a ``ValueError`` naming the path.

        Parameters
        ----------
        path : str or path-like
            The campaign file.
        busy_timeout : float
            Seconds a write waits for another process's lock before raising ``ValueError``
            (default 10).
        read_only : bool, default False
            Open for reading only: the file is never written (a campaign on a read-only
            mount can be read; :meth:`propose`, :meth:`ingest` and :meth:`release` raise).

        Returns
        -------
        Campaign
            The campaign, with its stored spec (:attr:`spec`); files written before a setting
            existed open with that setting's default.

        Examples
        --------
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "c.db")
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
        >>> Campaign.create(path, pool, strata="g", y_pred="pred").close()
        >>> Campaign.open(path).config["metric"]
        'error_rate'
        """
        return cls(CampaignStore(Path(path), busy_timeout=busy_timeout, read_only=read_only))

    def close(self) -> None:
        """Close the database connection."""
        self._store.close()

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<Campaign {self._store.path.name!r} metric={','.join(m.name for m in self.metrics)} "
            f"strata={len(self.strata)} "
            f"labels_used={self.labels_used} rule={self._rule_name}>"
        )

    # -- state -----------------------------------------------------------------------------
    def _state(self, conn: Any = None) -> RuleState | MetricStates:
        st = self._counts_state(conn)
        if (self._proxy is not None or self._seeded) and isinstance(st, RuleState):  # one metric: create checks it
            table = self._proxy_table(conn) if self._proxy is not None else self._seed_table(conn)
            st.use_intervals(table["lower"].to_numpy(float), table["upper"].to_numpy(float))
        return st

    def _counts_state(self, conn: Any = None) -> RuleState | MetricStates:
        if self._units is not None:
            return self._units_state(conn)[0]
        counts = self._store.counts(conn).reindex(self._codes, fill_value=0)
        if len(self.metrics) > 1:
            return spec_states(
                self.spec,
                self._design,
                counts=self._metric_counts(),
                labelled=counts["labelled"].to_numpy(),
                pending=counts["pending"].to_numpy(),
            )
        st = spec_state(
            self.spec,
            self._design,
            successes=counts["successes"].to_numpy(),
            trials=counts["trials"].to_numpy(),
            labelled=counts["labelled"].to_numpy(),
            pending=counts["pending"].to_numpy(),
        )
        if self._proxy is None and not self._seeded:  # their states carry intervals of their own (use_intervals)
            # a round proposes and reports on the same counts: the posterior and intervals are fitted once
            st.reuse_fits(self._last_state)
            self._last_state = st
        return st

    def state(self) -> RuleState | MetricStates:
        """The campaign's current state as its rule sees it.

        Returns
        -------
        RuleState or MetricStates
            Counts per stratum, the goal and the posterior (see
            :class:`~bayeseval.campaign.loop.rule_state.RuleState`); for a campaign on several metrics
            one state per metric (:class:`~bayeseval.campaign.loop.rule_state.MetricStates`).
        """
        return self._state()

    def _metric_counts(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Successes and trials per stratum of every metric, from the stored labels and predictions.

        A labelled row counts for every metric it is a trial of.
        """
        labels = self._store.labels()
        out = {}
        if len(labels) == 0:
            zero = np.zeros(len(self._codes), np.int64)
            return {m.name: (zero, zero) for m in self.metrics}
        preds = self._store.pool_rows(list(labels.index))["prediction"].to_numpy(dtype=object)
        codes = labels["stratum"].to_numpy()
        for m in self.metrics:
            trial, success = metric_flags(
                m, labels["label"].to_numpy(dtype=object), preds, self.config.get("pos_label")
            )
            n = pd.Series(trial.astype(np.int64)).groupby(codes).sum().reindex(self._codes, fill_value=0)
            k = pd.Series(success.astype(np.int64)).groupby(codes).sum().reindex(self._codes, fill_value=0)
            out[m.name] = (k.to_numpy(), n.to_numpy())
        return out

    @property
    def labels_used(self) -> int:
        """Number of labels ingested so far."""
        return int(self._store.counts()["labelled"].sum())

    @property
    def pending(self) -> pd.DataFrame:
        """Rows proposed and not yet labelled (row id, round, time, stratum code)."""
        return self._store.pending()

    @property
    def budget_left(self) -> int | None:
        """Labels the budget still allows, counting pending proposals (None without a budget).

        With ``design.cluster`` the budget counts units: the units it still allows, counting
        the units proposed and not yet complete.
        """
        budget = self.spec.budget
        if budget is None:
            return None
        if self._units is not None:
            st = self._state()
            return max(int(budget) - int(st.labelled.sum()) - int(st.pending.sum()), 0)
        c = self._store.counts()
        return max(int(budget) - int(c["labelled"].sum()) - int(c["pending"].sum()), 0)

    def _budget_used(self, st: RuleState | MetricStates | None = None) -> int:
        """What the budget counts so far: labels, or complete units with ``design.cluster``."""
        if self._units is None:
            return self.labels_used
        return int((self._state() if st is None else st).labelled.sum())

    @property
    def done(self) -> bool:
        """True when the goal is met, the budget is spent or nothing is left to label."""
        budget = self.spec.budget
        st = self._state()
        if budget is not None and self._budget_used(st) >= int(budget):
            return True
        return st.is_done()

    @property
    def goal_met(self) -> bool:
        """True only when the goal is met (every stratum decided, or within the target); :attr:`done` also
        holds when the campaign stopped without it, and :attr:`outcome` says which."""
        return all(s.goal.reached(s) for s in self._states())

    @property
    def outcome(self) -> str:
        """The campaign's state in one line: ``"goal met: ..."``, ``"stopped: ..."`` (done without it,
        naming the open strata and why) or ``"running: ..."`` (:func:`~bayeseval.campaign.loop.status.outcome_text`).

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
        >>> Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g", y_pred="pred").outcome
        'running: 2 of 2 strata not met (a, b)'
        """
        return outcome_text(self._states(), self._budget_spent)

    @property
    def _budget_spent(self) -> bool:
        return self.spec.budget is not None and self._budget_used() >= int(self.spec.budget)

    def _states(self) -> list[RuleState]:
        st = self._state()
        return list(st.states.values()) if isinstance(st, MetricStates) else [st]

    def counts(self, metric: str | None = None) -> Counts:
        """Successes and trials of the metric per stratum.

        Parameters
        ----------
        metric : str, optional
            One of the campaign's metrics (default the first).

        Returns
        -------
        Counts
            The labelled rows' counts (:class:`~bayeseval.Counts`), one entry per stratum. With
            ``design=Design(cluster=...)``: the complete units' counts, carrying their units
            histogram (``units``) and the design, so that :func:`~bayeseval.evaluate` reads
            the units intervals; a partly labelled unit is left out until its last row is labelled.
        """
        if self._units is not None:
            return self._units_counts()
        if metric is not None and get_metric(metric).name != self.metric.name:
            name = get_metric(metric).name
            if name not in self.spec.metrics:
                raise ValueError(f"metric {metric!r} is not one of the campaign's metrics {list(self.spec.metrics)}")
            s, n = self._metric_counts()[name]
            return Counts.from_arrays(s, n, strata=self.strata, metric=name)
        c = self._store.counts().reindex(self._codes, fill_value=0)
        return Counts.from_arrays(
            c["successes"].to_numpy(), c["trials"].to_numpy(), strata=self.strata, metric=self.metric.name
        )

    def _units_counts(self) -> Counts:
        """:meth:`counts` of a clustered campaign: the complete units and their histogram."""
        assert self._units is not None
        status = unit_status(self._units, *self._unit_flags())
        done = status[status["complete"].to_numpy()]
        done = done[done["trials"].to_numpy() > 0]  # a unit without trials (no positive row for recall) drops out
        hist = done.groupby(["stratum", "successes", "trials"], sort=True).size().rename("units").reset_index()
        names = level_names(self.strata)
        keys = self.strata[hist["stratum"].to_numpy()].to_frame(index=False)
        keys.columns = names
        units = pd.concat(
            [
                keys,
                pd.DataFrame(
                    {
                        "unit_successes": hist["successes"].to_numpy(float),
                        "unit_trials": hist["trials"].to_numpy(np.int64),
                        "units": hist["units"].to_numpy(np.int64),
                    }
                ),
            ],
            axis=1,
        )
        k = len(self.strata)
        at = hist["stratum"].to_numpy(np.int64)
        s = np.bincount(at, weights=units["unit_successes"] * units["units"], minlength=k)
        n = np.bincount(at, weights=units["unit_trials"] * units["units"], minlength=k).astype(np.int64)
        return Counts(
            pd.Series(s, index=self.strata),
            pd.Series(n, index=self.strata),
            metric=self.metric.name,
            units=units,
            design=self.spec.design,
        )

    def status(self) -> pd.DataFrame:
        """Per-stratum progress.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum: ``pool_rows`` (rows of the pool), ``labelled`` (labelled
            rows), ``pending`` (proposed rows waiting for a label), ``trials`` and
            ``successes`` (the labelled rows' trials and successes of the metric), ``lower``,
            ``upper`` (the interval the stratum reads at ``level``: with
            ``guarantee="stratum"``, the default, the stratum's guaranteed interval, and the
            pooled posterior is beside it as ``pooled_mean``, ``pooled_lower`` and
            ``pooled_upper``, which cover on average over strata like these; under
            ``guarantee="average"`` the credible interval of the campaign's model), ``mean``
            (the point estimate of that interval: ``successes / trials`` for the guaranteed
            and anytime intervals, the posterior mean for the pooled one, the proxy-assisted
            estimate with a proxy, the seed-cell estimate for a campaign started from labels
            of unequal inclusion), ``read`` (which interval ``lower``/``upper`` is: ``"guaranteed"``,
            ``"anytime"`` with ``guarantee="anytime"`` (the stratum's confidence sequence at
            ``level``), ``"pooled"`` under ``guarantee="average"``, ``"own"`` for the
            independent model, ``"pool"`` with ``design=Design(population="pool")`` (the exact interval of
            the stratum's rate among its rows in the pool at the stop level; the pooled columns beside it
            are the process model's), ``"proxy"`` with a proxy, which adds ``agreement`` and
            ``effective_labels``, ``"seeded"`` for a campaign started from labels of unequal
            inclusion), ``halfwidth`` (of that interval),
            ``done`` (the stopping rule's verdict on the stratum: read half-width at most the
            target, see :meth:`~bayeseval.campaign.loop.rule_state.RuleState.stratum_done`),
            ``exhausted`` (no row left to propose), ``outlier`` (modelled
            without pooling), ``outcome`` (what happened to the stratum: ``"met"``,
            ``"decided: meets"``, ``"decided: fails"``, ``"at the threshold (within the
            margin)"``, or ``"undecided"``/``"not met"`` followed by ``": pool exhausted"`` or
            ``": budget spent"`` when that is why it is open, see
            :func:`~bayeseval.campaign.loop.status.stratum_outcomes`), ``cost`` (labels times the stratum's label cost: the label count
            when the campaign has no ``costs``). With ``goal="overall"``
            ``frame.attrs["overall"]`` holds the weighted rate's mean, lower, upper,
            halfwidth and done. With a ``Decide`` goal also ``threshold``, ``p_meets``
            (posterior probability that the rate meets the threshold) and ``decision``
            (``"meets"``, ``"fails"``, ``"at the threshold"`` with a ``margin``, see
            :meth:`~bayeseval.campaign.loop.rule_state.RuleState.at_threshold`, or ``"undecided"``);
            ``done`` is then whether the stratum is decided. With a ``Gap`` goal ``frame.attrs["gap"]`` holds the gap, its
            interval, the tolerance and the verdict. A campaign on several metrics gives the
            table of each metric, indexed by ``(metric, stratum)`` (the labelled and pending
            rows are shared; ``trials`` and ``successes`` are each metric's own). With
            ``design=Design(cluster=...)``: ``read`` is ``"units"``, ``lower``/``upper`` the
            finite-sample valid interval of the stratum's complete units
            (:func:`~bayeseval._kernels.bounded_mean.units_ci` at the stop level), ``mean`` their
            ratio estimate, ``trials``/``successes`` summed over those units; ``labelled`` and
            ``pending`` still count rows; ``pool_units``, ``n_units`` (complete units: every row
            labelled; for a recall-type metric, those with a trial) and ``units_pending`` (units
            proposed and not complete: a partly labelled unit waits for its last row and does not
            count yet) are added, and there are no pooled columns (nor ``p_meets`` with a
            ``Decide`` goal: ``decision`` is the side of the threshold the units interval lies on;
            ``frame.attrs["gap"]`` and ``frame.attrs["overall"]`` are read from the units
            intervals, see :func:`~bayeseval.campaign.loop.units.units_state`).

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred")
        >>> list(c.status().columns)[:4]
        ['pool_rows', 'labelled', 'pending', 'trials']
        """
        st = self._state()
        if isinstance(st, MetricStates):
            spent = self._budget_spent
            frames = {m: status_frame(s, self._design.n_rows, spent) for m, s in st.states.items()}
            frame = pd.concat(frames, names=["metric"])
            frame["cost"] = frame["labelled"].to_numpy() * np.tile(self.label_costs.to_numpy(), len(frames))
            overall = {m: f.attrs["overall"] for m, f in frames.items() if "overall" in f.attrs}
            frame.attrs = {"overall": overall} if overall else {}
            return frame
        if self._units is not None:
            return self._units_status()
        frame = status_frame(st, self._design.n_rows, self._budget_spent)
        frame["cost"] = frame["labelled"].to_numpy() * self.label_costs.to_numpy()
        if self._proxy is not None:
            table = self._proxy_table()
            frame = frame.drop(columns=["pooled_mean", "pooled_lower", "pooled_upper"])  # raw counts: cell-biased
            frame["read"] = "proxy"
            frame["mean"] = table["rate"].to_numpy(float)  # the proxy interval's point estimate
            frame["agreement"] = table["agreement"].to_numpy(float)
            frame["effective_labels"] = table["effective_labels"].to_numpy(float)
        elif self._seeded:
            frame = frame.drop(columns=["pooled_mean", "pooled_lower", "pooled_upper"])  # raw counts: seed-biased
            frame["read"] = "seeded"
            frame["mean"] = self._seed_table()["estimate"].to_numpy(float)  # the seed-cell estimate
        return frame

    def _units_status(self) -> pd.DataFrame:
        """:meth:`status` of a clustered campaign: rows counted as rows, the interval of the complete units."""
        st, table = self._units_state()
        budget = self.spec.budget
        frame = status_frame(st, self._design.n_rows, budget is not None and int(st.labelled.sum()) >= int(budget))
        # a row model: not the units'
        frame = frame.drop(
            columns=[c for c in ("pooled_mean", "pooled_lower", "pooled_upper", "p_meets") if c in frame]
        )
        rows = self._store.counts().reindex(self._codes, fill_value=0)
        frame["labelled"] = rows["labelled"].to_numpy()
        frame["pending"] = rows["pending"].to_numpy()
        frame["trials"] = table["n_trials"].to_numpy(np.int64)
        frame["successes"] = table["successes"].to_numpy(float)
        at = list(frame.columns).index("trials")
        frame.insert(at, "units_pending", table["units_pending"].to_numpy(np.int64))
        frame.insert(at, "n_units", table["n_units"].to_numpy(np.int64))
        frame.insert(1, "pool_units", self._units.n_units if self._units is not None else 0)
        frame["cost"] = frame["labelled"].to_numpy() * self.label_costs.to_numpy()
        return frame

    @property
    def label_costs(self) -> pd.Series:
        """The cost of one label per stratum (1 everywhere without ``costs``)."""
        costs = self._design.costs
        values = np.ones(len(self.strata)) if costs is None else np.asarray(costs, dtype=float)
        return pd.Series(values, index=self.strata, name="cost_per_label")

    def forecast(self, *, cost: bool = False) -> pd.Series | pd.DataFrame:
        """Labels still needed per stratum to meet the target, from the current posterior.

        The smallest extra number of labels whose expected (preposterior) half-width meets
        the target, counting pending proposals as already requested (with ``design.cluster``:
        units, planned with the units interval's ``1 / sqrt(units)`` law). Goals ``"decide"`` and
        ``"gap"``: see :func:`~bayeseval.campaign.loop.forecast.forecast_decision` (for ``"decide"``,
        the labels after which a stratum is more likely decided than not).

        Parameters
        ----------
        cost : bool
            Also give what those labels cost (labels times the stratum's label cost; with
            ``design.cluster`` units times a unit's cost, its rows' label costs summed, at the
            mean size of the stratum's units still available).

        Returns
        -------
        pandas.Series or pandas.DataFrame
            Labels per stratum (``Int64``), indexed by stratum: ``<NA>`` where the forecast
            cannot be made yet (a stratum without a labelled trial; see
            :func:`~bayeseval.campaign.loop.forecast.forecast_notes`); with ``cost=True`` a frame
            with the columns ``labels``, ``cost``, ``note`` (why a forecast is ``<NA>``, else
            None), and for goal ``"decide"`` ``beyond``:
            ``"rows"`` where the stratum's rows left are unlikely to decide it (the labels
            shown are then all its rows), ``"budget"`` where the budget left is, else None
            (see :func:`~bayeseval.campaign.loop.forecast.decision_reach`).

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
        >>> from bayeseval.campaign import Budget
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", budget=Budget(costs={"b": 4.0}))
        >>> f = c.forecast(cost=True)
        >>> bool((f["cost"] == f["labels"] * [1.0, 4.0]).all())
        True
        """
        st = self._state()
        if st.goal.checks_feasibility:
            self.feasibility(warn=True)
        table = forecast_table(st)
        labels = table["labels"].rename("forecast")
        if not cost:
            return labels
        costs = labels.astype("Float64") * self._forecast_costs()
        frame = pd.DataFrame({"labels": labels, "cost": costs, "note": table["note"]})
        reach = None if isinstance(st, MetricStates) else st.goal.out_of_reach(st, self.budget_left)
        if reach is not None:  # goal Decide: the strata its rows or budget are unlikely to decide
            frame["beyond"] = reach
        return frame

    def _forecast_costs(self) -> np.ndarray:
        """What one more forecast label costs per stratum: a label, or a unit (its rows' labels) with ``design.cluster``."""
        per_label = self.label_costs.to_numpy()
        if self._units is None:
            return per_label
        u = self._units
        available = unit_status(u, *self._unit_flags())["available"].to_numpy()
        costs = unit_costs(per_label, u.unit_rows, u.unit_stratum, available, len(self.strata))
        return per_label if costs is None else costs

    @fill_doc()
    def feasibility(self, *, warn: bool = False) -> pd.DataFrame:
        """Whether each stratum's half-width target can be met from the rows left in the pool.

        A stratum can reach at most its trials so far plus the expected trials among its
        rows not yet labelled (for recall, the rows that are actually positive); the
        achievable half-width is the half-width of the interval the campaign stops on
        once every row is labelled at the stratum's current posterior mean rate
        (:func:`~bayeseval.campaign.loop.forecast.stratum_feasibility`). ``create`` and ``forecast`` call this with
        ``warn=True`` for the ``"each"`` goal, so an infeasible target is said before
        labels are spent on it. A proxy campaign checks the interval it stops on, with every
        row labelled and a proxy that tells nothing
        (:meth:`~bayeseval.campaign.loop.proxy_cells.ProxyDesign.feasibility`).

        Parameters
        ----------
        {feasibility_warn}

        {feasibility_returned}

        Examples
        --------
        >>> import os, tempfile, warnings
        >>> from bayeseval.campaign import Each
        >>> pool = pd.DataFrame({"g": ["a"] * 40 + ["b"] * 2000, "pred": 0})
        >>> with warnings.catch_warnings(record=True) as caught:  # create warns: 'a' is short
        ...     warnings.simplefilter("always")
        ...     c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                         y_pred="pred", goal=Each(0.05))
        >>> [w.category.__name__ for w in caught]
        ['PrecisionLimitedWarning']
        >>> c.feasibility()["feasible"].tolist()
        [False, True]
        """
        if self._units is not None:
            return units_feasibility(self._units_state()[0], warn=warn)
        if self._proxy is not None and isinstance(counted := self._counts_state(), RuleState):  # one metric
            return self._proxy.feasibility(counted, self._codes, warn=warn)
        st = self._state()
        if isinstance(st, MetricStates):
            return pd.concat({m: stratum_feasibility(s, warn=warn) for m, s in st.states.items()}, names=["metric"])
        return stratum_feasibility(st, warn=warn)

    def history(self) -> pd.DataFrame:
        """The decisions log, one row per proposal round.

        Returns
        -------
        pandas.DataFrame
            Indexed by round: ``rule``, ``allocation`` (dict stratum -> labels; units with
            ``design.cluster``), ``time``, ``version`` and ``details`` (model, outliers, labels
            used, largest half-width; ``units_used`` with ``design.cluster``).
        """
        frame = self._store.decisions()
        frame["allocation"] = frame["allocation"].map(json.loads)
        frame["details"] = frame["details"].map(lambda x: json.loads(x) if x else {})
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
        return frame.set_index("round")

    def labels(self) -> pd.DataFrame:
        """Every ingested label.

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: the label, its trial and success flags, round, time and stratum.
        """
        frame = self._store.labels()
        frame["stratum"] = self.strata[frame["stratum"].to_numpy()] if len(frame) else []
        frame.index = self._rid_index(frame.index)
        return frame

    def posterior(self, **kwargs: Any) -> Any:
        """Fit :func:`bayeseval.models.fit_hierarchical` to the current counts (full Posterior).

        Parameters
        ----------
        **kwargs
            Passed to ``fit_hierarchical`` (e.g. ``engine="pymc"``); by default the exact
            engine with the campaign's prior, model and prior means.

        Returns
        -------
        Posterior
            The fitted posterior of the rate per stratum.

        Raises
        ------
        ValueError
            For a campaign started from labels of unequal inclusion (a seed cell): its
            labelled rows are no random sample of their strata, so a model of their counts
            would be biased; :meth:`status` gives each stratum's estimate (``mean``) and interval.
            For a clustered campaign (``design.cluster`` with units of several rows): the model
            treats rows as independent draws, which the rows of a unit are not; :meth:`status`
            gives each stratum's units interval.
        """
        if self._units is not None:
            raise ValueError(
                f"posterior(): design.cluster={self.spec.design.cluster!r}: the hierarchical model treats rows as "
                "independent draws, which the rows of a unit are not; read status()['mean'], ['lower'] and "
                "['upper'] (each stratum's units interval), or evaluate(campaign.counts())"
            )
        if self._seeded:
            raise ValueError(
                "posterior(): this campaign started from labels chosen with unequal probabilities (a seed "
                "cell), so its labelled counts are no random sample; read status()['mean'], "
                "['lower'] and ['upper'] instead"
            )
        model = self.spec.model
        if model == "auto":
            model = "robust" if self._states()[0].posterior.outliers else "beta_binomial"
        kwargs.setdefault("model", model)
        kwargs.setdefault("prior", self.spec.prior)
        if self._design.prior_mean is not None:
            kwargs.setdefault("prior_mean", self._design.prior_mean)
        return fit_hierarchical(self.counts(), **kwargs)

    # -- propose -------------------------------------------------------------------------
    def _rid_index(self, values: Any) -> pd.Index:
        return self._ctx.rid_index(values)

    @fill_doc()
    def propose(
        self,
        batch_size: int | None = None,
        *,
        writer: Callable[[pd.DataFrame], Any] | None = None,
        show_prediction: bool = False,
    ) -> pd.DataFrame:
        """Propose the next rows to label and record the proposal.

        Parameters
        ----------
        batch_size : int, optional
            Number of rows wanted; default the spec's ``batch_size``. Fewer come back when the budget, the pool or the goal
            leaves fewer to ask for; none when the campaign is done (an empty frame, with the
            batch's columns, and nothing recorded; ``bayeseval campaign propose`` then writes
            no file and exits 3). With ``design=Design(cluster=...)`` it counts units: the
            batch holds every row not yet labelled of each proposed unit (a unit is never
            split), chosen at random within its stratum; the allocation gives the next units
            to the strata whose units interval is furthest from the target.
        writer : callable, optional
            Called with the batch before the proposal is committed (e.g. to write the batch
            file). If it raises, nothing is recorded (the rows stay unproposed and the random
            generator state is unchanged, so the same call proposes the same batch again)
            and the exception propagates. Not called when the batch is empty.
        show_prediction : bool
            Include the model's prediction (and score) columns. Default False: annotators
            should not see what the model predicted, which would bias their labels.

        Returns
        -------
        pandas.DataFrame
            The proposed pool rows, indexed by row id: the stratum columns, ``round`` and,
            with ``show_prediction``, the prediction (and score) columns.

        Examples
        --------
        {campaign_example}
        >>> batch = c.propose(10)
        >>> batch.index.is_unique, len(batch)
        (True, 10)
        """
        batch_size = check_positive_int(self.spec.batch_size if batch_size is None else batch_size, "batch_size")
        if writer is not None and not callable(writer):
            raise TypeError(f"writer must be a callable taking the batch DataFrame, got {writer!r}")
        store = self._store
        with store.transaction("record a proposal") as conn:
            rids, round_ = self._draw(conn, batch_size)
            batch = self._ctx.rows_frame(rids, round_ if rids else None, show_prediction)
            if writer is not None and rids:
                writer(batch)
        return batch

    def _draw(self, conn: Any, batch_size: int) -> tuple[list[Any], int | None]:
        """Allocate and draw a batch, and record it (inside the caller's transaction)."""
        store = self._store
        st = self._state(conn)
        n = round_size(self.spec, st, batch_size)
        if n == 0:
            return [], None
        self._warn_out_of_reach(conn, st)
        rng = np.random.default_rng()
        rng_state = store.get_meta("rng_state")
        if rng_state is None:
            raise ValueError(f"campaign database {str(store.path)!r} has no random generator state")
        rng.bit_generator.state = json.loads(rng_state)
        flags = self._unit_flags(conn) if self._units is not None else None
        available = unit_status(self._units, *flags)["available"].to_numpy() if self._units and flags else None
        design = self._design
        if self._units is not None and design.costs is not None:  # a unit costs its rows' labels
            u = self._units
            costs = unit_costs(design.costs, u.unit_rows, u.unit_stratum, available, len(self.strata))
            design = dataclasses.replace(design, costs=costs)
        alloc = allocate(self.spec, st, n, random_seed=rng, design=design)
        rids_by_code: dict[int, list[Any]] = {}
        proposed: set[Any] = set()
        success = pd.Series(dtype=float)
        if self._proxy is not None:
            proposed = self._store.proposed_ids(conn)
            success = self._proxy_labels(conn)[1]
        chosen = np.flatnonzero(alloc > 0)
        plain = flags is None and self._proxy is None  # rows in the stored order: every stratum in one query
        drawn = store.sample_rows_of(conn, [(int(self._codes[i]), int(alloc[i])) for i in chosen]) if plain else {}
        for i in chosen:
            code = int(self._codes[i])
            if flags is not None and available is not None:
                rids_by_code[code] = self._unit_rows(flags, available, int(i), int(alloc[i]))
            elif self._proxy is not None:
                rids_by_code[code] = self._proxy.sample(code, int(alloc[i]), proposed, success)
            else:
                rids_by_code[code] = drawn[code]
        round_ = store.next_round(conn)
        labels = stratum_labels(self.strata[chosen])  # the labels of the strata allocated only
        allocation = {label: int(alloc[i]) for label, i in zip(labels, chosen, strict=True)}
        post = next(iter(st.states.values())).posterior if isinstance(st, MetricStates) else st.posterior
        details = {
            "model": post.model,
            "outliers": [str(x) for x in post.outliers],
            "labels_used": int(st.labelled.sum()),
            "pending_before": int(st.pending.sum()),
            "max_halfwidth": float(np.max(st.read_halfwidths())),
            "requested": int(batch_size),
        }
        if flags is not None:  # the state counts units; the log says both
            details["units_used"] = details["labels_used"]
            details["labels_used"] = int(flags[0].sum())
        store.record_proposal(
            conn,
            round_=round_,
            rids_by_code=rids_by_code,
            rule=self._rule_name,
            allocation=allocation,
            version=VERSION,
            details=details,
            rng_state=json.dumps(rng.bit_generator.state),
        )
        return [r for code in sorted(rids_by_code) for r in rids_by_code[code]], round_

    def _unit_rows(self, flags: tuple[np.ndarray, ...], available: np.ndarray, i: int, m: int) -> list[Any]:
        """The rows of stratum ``i``'s next ``m`` available units (their rows not labelled), in proposal order."""
        assert self._units is not None
        queue = self._units.proposal_queue(i)
        chosen = queue[available[queue]][:m]
        return self._units.rows_of(chosen, flags[0] | flags[1])

    def _warn_out_of_reach(self, conn: Any, st: RuleState | MetricStates) -> None:
        """Warn, once per stratum in the campaign's life, that its rows or the budget left cannot decide it.

        Goal ``"decide"``: :func:`~bayeseval.campaign.loop.forecast.decision_reach`; the strata already
        warned about are remembered in the campaign file (inside the proposal's transaction).
        """
        if isinstance(st, MetricStates):
            return
        budget = self.spec.budget
        left = None if budget is None else max(int(budget) - int(st.labelled.sum()) - int(st.pending.sum()), 0)
        reach = st.goal.out_of_reach(st, left)
        if reach is None:  # only goal Decide forecasts it
            return
        warned = set(json.loads(self._store.get_meta("warned_out_of_reach") or "[]"))
        new = [j for j in range(len(reach)) if reach[j] is not None and int(self._codes[j]) not in warned]
        if not new:
            return
        names = stratum_labels(self.strata)
        rates = st.read_means() if self._units is not None else st.posterior.mean().to_numpy()
        left_of, spent = ("units left of it", "units") if self._units is not None else ("rows left of it", "labels")
        parts = [
            f"{names[j]!r} (rate about {float(rates[j]):.4g} against threshold "
            f"{float(st.threshold[j]):g}; {int(st.available[j]) if reach[j] == 'rows' else left} "
            f"{left_of if reach[j] == 'rows' else f'{spent} left in the budget'})"
            for j in new
        ]
        hint = "a wider margin=" if self.spec.goal.margin else "margin= (an indifference margin)"
        warnings.warn(
            f"unlikely to be decided with what is left: stratum {'; '.join(parts)}; "
            f"{hint} decides a stratum whose rate is at its threshold",
            PrecisionLimitedWarning,
            stacklevel=4,
        )
        self._store.set_meta(
            conn, "warned_out_of_reach", json.dumps(sorted(warned | {int(self._codes[j]) for j in new}))
        )

    @fill_doc()
    def pending_batch(self, round: int | None = None, *, show_prediction: bool = False) -> pd.DataFrame:  # noqa: A002
        """The pending proposals as a batch, in the layout :meth:`propose` returns.

        Use it to write the rows to label again (e.g. after the batch file was lost).

        Parameters
        ----------
        round : int, optional
            Only the pending rows of this proposal round; default every pending row.
        show_prediction : bool
            Include the model's prediction (and score) columns (default False).

        Returns
        -------
        pandas.DataFrame
            Indexed by row id: the stratum columns (the prediction and score columns with
            ``show_prediction``) and ``round``, in proposal order.

        Examples
        --------
        {campaign_example}
        >>> b = c.propose(6)
        >>> c.pending_batch().index.equals(b.index)
        True
        """
        if round is not None:
            round = check_positive_int(round, "round")
        return self._ctx.pending_batch(round, show_prediction)

    # -- ingest --------------------------------------------------------------------------
    def _norm_rid(self, rid: Any) -> Any:
        return self._ctx.norm_rid(rid)

    @fill_doc()
    def ingest(
        self,
        labels: pd.Series | pd.DataFrame,
        *,
        id_column: str | None = None,
        label_column: str | None = None,
        annotator_column: str | None = None,
        relabel: bool = False,
        strict: bool = False,
    ) -> IngestResult:
        """Record true labels for proposed rows (all or nothing; blank labels are left pending).

        Parameters
        ----------
        labels : pandas.Series or pandas.DataFrame
            True labels indexed by row id, or a frame with an id column (``id_column``, or
            the index) and a label column (``label_column``; default ``label`` or the only
            other column). Each label must equal one of the campaign's known labels after
            the lossless normalisation described in :class:`LabelSet` (``1.0`` is ``1``;
            ``"1"`` is ``1`` only when the labels are numbers); it is stored as that label.
        id_column, label_column : str, optional
            Column names for a DataFrame.
        annotator_column : str, optional
            Column naming who gave each label: each row of ``labels`` is one annotation, all
            are stored (:meth:`annotations`) and a row's label is resolved by the spec's
            ``resolve`` rule once it has ``annotators`` of them; unresolved rows stay pending.
        relabel : bool
            Replace the stored label of rows already labelled differently (and correct the
            counts); with ``annotator_column``, replace an annotator's earlier label of a row
            and accept a change of the resolved label. Default False: such rows are an error.
        strict : bool
            Refuse the whole batch when a label is blank (missing, NaN, empty or spaces only;
            :func:`~bayeseval.campaign.labels.label_set.is_blank`). Default False: the rows without a
            label are not recorded and stay as they were (pending rows stay pending), the
            others are recorded, and a :class:`~bayeseval.BlankLabelWarning` says how many
            (``.blank`` of the result).

        Returns
        -------
        IngestResult
            An ``int``: the number of labels newly recorded; ``.unchanged`` counts rows sent
            again with the label they already have (a retry is a no-op for them) and
            ``.relabelled`` the rows whose label was replaced; ``.blank`` the rows left
            without a label.

        Raises
        ------
        ValueError
            Naming the offending row ids (and values), for ids not in the pool, ids never
            proposed, ids given twice, blank labels (with ``strict=True``), labels that are not known labels
            (fractional, infinite, unknown strings, classes outside ``label_set``) and,
            unless ``relabel``, a label different from the one already stored. Nothing is
            written when any check fails.

        Examples
        --------
        {campaign_example}
        >>> b = c.propose(4)
        >>> c.ingest(pd.Series([0, 1, 1, 0], index=b.index))
        4
        >>> r = c.ingest(pd.Series([0.0, 1.0], index=b.index[:2]))  # a retry: no-op
        >>> int(r), r.unchanged
        (0, 2)
        >>> c.ingest(pd.Series([0.5], index=b.index[:1]))
        Traceback (most recent call last):
        ...
        ValueError: labels rejected, nothing recorded: invalid labels ...
        """
        return ingest_labels(
            self._ctx,
            labels,
            id_column=id_column,
            label_column=label_column,
            annotator_column=annotator_column,
            relabel=relabel,
            strict=strict,
        )

    @fill_doc()
    def release(self, ids: Any = None, *, round: int | None = None) -> int:  # noqa: A002
        """Withdraw pending proposals (e.g. a batch the labellers will not return).

        Released rows become eligible again and may be proposed in a later round. With
        ``design=Design(cluster=...)`` a unit is released whole: naming one of its rows releases
        all its pending rows.

        Parameters
        ----------
        ids : iterable of row ids, optional
            The pending rows to release; default all pending rows (of ``round`` if given).
        round : int, optional
            Release only the pending rows of this proposal round.

        Returns
        -------
        int
            Number of proposals released. Ids that are not pending are ignored.

        Examples
        --------
        {campaign_example}
        >>> b = c.propose(6)
        >>> c.release(b.index[:2])
        2
        >>> int(c.status()["pending"].sum())
        4
        """
        if round is not None:
            round = check_positive_int(round, "round")
        if ids is not None and (isinstance(ids, (str, bytes)) or not np.iterable(ids)):
            ids = [ids]
        with self._store.transaction("release proposals") as conn:
            pending = self._store.pending_ids(conn, round)
            if ids is None:
                rids = pending
            else:
                keep = set(pending)
                rids = [r for r in (self._norm_rid(x) for x in ids) if r is not None and r in keep]
            if self._units is not None and rids:  # a unit is released whole: all its pending rows
                unit = pd.Series(self._units.row_unit, index=self._units.rids)
                gone = set(unit.reindex(rids).dropna().tolist())
                rids = [r for r in pending if unit.get(r) in gone]
            return self._store.release(conn, rids)

    # -- annotations and Label Studio ----------------------------------------------------
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
        >>> from bayeseval.campaign import Annotation, Campaign
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500,
        ...                      "text": [f"item {i}" for i in range(1000)]})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", annotation=Annotation(content="text"), random_seed=0)
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
        return labelstudio_view(self._ctx, content_types=content_types, show_prediction=show_prediction)

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
    ) -> SyncReport:
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
            Rows proposed when the open tasks run low (default the campaign's batch size); units
            in a campaign over units (``design.cluster``).
        min_open : int, optional
            Propose when at most this many tasks are open (default half of ``batch_size``); in a
            campaign over units, proposed units not yet complete.
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
        if client is None:
            client = LabelStudioClient(url, token if token is not None else os.environ.get("LABEL_STUDIO_API_KEY", ""))
        loop = SyncLoop(state=self.state, done=lambda: self.done, propose=self.propose, design=self._design)
        return sync(
            self._ctx,
            loop,
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
        >>> from bayeseval.campaign import Annotation, Campaign
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", annotation=Annotation(annotators=2), random_seed=0)
        >>> b = c.propose(2)
        >>> ann = pd.DataFrame({"row": list(b.index) * 2, "annotator": ["ann", "ann", "bo", "bo"],
        ...                     "label": [1, 0, 1, 1]})
        >>> r = c.ingest(ann, id_column="row", annotator_column="annotator")
        >>> int(r), r.annotations, r.unresolved, len(c.annotations())
        (1, 4, 1, 4)
        """
        return annotation_table(self._ctx)

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
        >>> from bayeseval.campaign import Annotation, Campaign
        >>> pool = pd.DataFrame({"g": ["a"] * 1000, "pred": [0, 1] * 500})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     y_pred="pred", annotation=Annotation(annotators=2), random_seed=0)
        >>> b = c.propose(4)
        >>> ann = pd.DataFrame({"row": list(b.index) * 2, "annotator": ["x"] * 4 + ["y"] * 4,
        ...                     "label": [1, 1, 0, 0, 1, 0, 0, 0]})
        >>> _ = c.ingest(ann, id_column="row", annotator_column="annotator")
        >>> c.agreement()[["rows", "method", "kappa"]].to_dict("records")
        [{'rows': 4, 'method': 'cohen', 'kappa': 0.5}]
        """
        return agreement_table(self._ctx)


def _stored_array(values: Any) -> np.ndarray | None:
    """A stored list of numbers as a float array (None stays None)."""
    return None if values is None else np.asarray(values, dtype=float)


def _pool_size(pool: Any, cluster: str | None) -> int:
    """What the default batch size scales with: the pool's rows, or its units with ``design.cluster``."""
    if cluster is not None and isinstance(pool, pd.DataFrame) and cluster in pool.columns:
        return int(pool[cluster].nunique())
    return len(pool)
