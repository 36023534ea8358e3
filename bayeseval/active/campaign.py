"""Labelling campaigns that stop when every credible interval is narrow enough (SPEC section 10).

A :class:`Campaign` keeps its whole state in one SQLite file (see
:mod:`bayeseval.active.store`): the pool reference (row id, stratum, prediction, optional
score), every proposal, every label and every decision. Each round it

1. fits the hierarchical Beta-binomial posterior of the metric per stratum on a small exact
   grid (switching to the robust approximation when a leave-one-out predictive check flags
   an outlying stratum),
2. asks the proposal rule how many labels each stratum should get,
3. draws that many never-proposed rows at random within each chosen stratum,

and records the proposal, the decision and the random generator state in one transaction.
``ingest`` validates labels completely before writing them in one transaction, so a crash at
any moment loses no acknowledged label and never counts one twice.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import (
    check_level,
    check_method,
    check_positive_int,
    check_weights,
    iter_columns,
)
from bayeseval.active.rules import RuleState, forecast_labels, get_rule
from bayeseval.active.store import CampaignStore
from bayeseval.counts import Counts, stratum_labels
from bayeseval.metrics import get_metric

__all__ = ["Campaign", "GOALS"]

GOALS = ("each", "overall")


def _version() -> str:
    try:
        from bayeseval import __version__

        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


def _py(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.Interval):
        return str(value)
    return value


def _label_key(value: Any) -> Any:
    """Normalise a label for set membership: integral floats become ints, numpy -> Python."""
    value = _py(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


class Campaign:
    """A labelling campaign stored in SQLite.

    Create one with :meth:`Campaign.create`, resume it with :meth:`Campaign.open`.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> pool = pd.DataFrame({"g": rng.choice(["a", "b"], 500), "pred": rng.integers(0, 2, 500)})
    >>> path = os.path.join(tempfile.mkdtemp(), "c.db")
    >>> c = Campaign.create(path, pool, strata="g", prediction="pred", random_seed=1)
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
        self.config: dict[str, Any] = json.loads(store.get_meta("config") or "{}")
        self.metric = get_metric(self.config["metric"])
        self._rule_name, self._rule, self._model = get_rule(self.config["rule"])
        strata = store.strata()
        self._codes = strata.index.to_numpy()
        cols = self.config["strata"]
        keys = [tuple(k) for k in strata["key"]]
        if len(cols) == 1:
            self.strata = pd.Index([k[0] for k in keys], name=cols[0])
        else:
            self.strata = pd.MultiIndex.from_tuples(keys, names=cols)
        self._n_rows = strata["n_rows"].to_numpy()
        self._n_eligible = strata["n_eligible"].to_numpy()
        self._labels_canon = {_label_key(v): v for v in self.config["label_set"]}
        self._rid_int = store.rid_type == "INTEGER"

    # -- construction --------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | PathLike[str],
        pool: pd.DataFrame,
        *,
        strata: str | Sequence[str] | None,
        prediction: str,
        metric: str = "error_rate",
        target_halfwidth: float = 0.05,
        level: float = 0.95,
        goal: str = "each",
        weights: Any = None,
        rule: str = "expected_width",
        score: str | None = None,
        score_bins: int | Sequence[float] | None = None,
        prior: str = "default",
        budget: int | None = None,
        pos_label: Any = 1,
        label_set: Sequence[Any] | None = None,
        model: str = "robust",
        random_seed: Any = None,
    ) -> Campaign:
        """Create a campaign file from a pool of unlabelled predictions.

        Parameters
        ----------
        path : str or path-like
            The SQLite file to create (must not exist).
        pool : pandas.DataFrame
            One row per unlabelled item; the index is the row id (integers or strings,
            unique). Only the stratum, prediction and score columns are stored.
        strata : str or list of str
            Column(s) defining the strata (``None`` with ``score_bins`` uses the bins only).
        prediction : str
            Column with the classifier's predicted label.
        metric : str
            ``error_rate`` (default), ``accuracy``, ``recall``, ``precision``, ... (see
            :func:`bayeseval.get_metric`). For precision-type metrics only rows whose
            prediction makes them trials are proposed; for recall-type metrics the rule
            weighs each stratum by its posterior probability that a labelled row is a trial.
        target_halfwidth : float
            Target credible-interval half-width.
        level : float
            Credible level (0.95 = 95%).
        goal : {"each", "overall"}
            Every stratum's interval, or the population-weighted rate's, within the target.
        weights : dict, Series or array, optional
            Population shares of the strata (for ``goal="overall"``); default: the strata's
            shares of the eligible pool rows.
        rule : str
            ``expected_width`` (default), ``thompson``, ``neyman``, ``proportional``,
            ``uniform`` or ``independent_beta``.
        score : str, optional
            Column with the classifier's top-class probability; its per-stratum mean seeds an
            informative prior (``1 - mean score`` as the expected error for ``error_rate``,
            ``mean score`` for ``accuracy``).
        score_bins : int or sequence of float, optional
            Add a ``score_bin`` stratum column: ``int`` gives that many equal-count bins,
            a sequence gives bin edges.
        prior : {"default", "bda"}
            Hyperprior of the hierarchical model.
        budget : int, optional
            Maximum number of labels.
        pos_label : optional
            Positive class for class-dependent metrics.
        label_set : sequence, optional
            Valid label values; default ``{0, 1}`` (or booleans) for binary predictions,
            otherwise the predicted values plus ``pos_label``.
        model : {"robust", "auto", "beta_binomial"}
            Population model of the rule and the stopping check. ``"robust"`` (default): the
            two-component population of :mod:`bayeseval.models.robust`, so a stratum far from
            the others is pooled less and its interval keeps close to nominal coverage at
            stop (simulated coverage 0.94 at level 0.95 against 0.92 for the plain model, for
            about 3% more labels; ``benchmarks/bench_active.py``). ``"auto"`` switches to the
            robust model only when a stratum fails the predictive check.
        random_seed : int, optional
            Seed of the campaign's random generator (persisted, so resumes are exact).

        Returns
        -------
        Campaign

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     prediction="pred", random_seed=0)
        >>> c.status()["labelled"].tolist()
        [0, 0]
        >>> c.close()
        """
        if not isinstance(pool, pd.DataFrame):
            raise TypeError(f"pool must be a pandas DataFrame, got {type(pool).__name__}")
        if len(pool) == 0:
            raise ValueError("pool has no rows")
        m = get_metric(metric)
        cols = iter_columns(strata, "strata")
        for name, col in [("prediction", prediction)] + [("strata", c) for c in cols] + (
            [("score", score)] if score is not None else []
        ):
            if col not in pool.columns:
                raise ValueError(f"{name} column {col!r} is not in pool; columns are {list(pool.columns)[:20]}")
        target_halfwidth = float(target_halfwidth)
        if not (0 < target_halfwidth < 0.5):
            raise ValueError(f"target_halfwidth must be in (0, 0.5), got {target_halfwidth!r}")
        level = check_level(level)
        goal = check_method(goal, GOALS, "goal")
        rule_name, _, _ = get_rule(rule)
        model = check_method(model, ("auto", "beta_binomial", "robust"), "model")
        if not isinstance(prior, str):
            raise TypeError(f"prior must be a prior name ('default' or 'bda') for a stored campaign, got {type(prior).__name__}")
        if budget is not None:
            budget = check_positive_int(budget, "budget")
        index = pool.index
        if index.has_duplicates:
            dup = index[index.duplicated()][:5].tolist()
            raise ValueError(f"pool index (the row id) must be unique, got duplicates {dup}")
        if index.hasnans:
            raise ValueError("pool index (the row id) has missing values")
        if pd.api.types.is_integer_dtype(index.dtype):
            rid_type, rids = "INTEGER", [int(x) for x in index]
        elif pd.api.types.is_string_dtype(index.dtype) or index.inferred_type == "string":
            rid_type, rids = "TEXT", [str(x) for x in index]
        else:
            raise TypeError(f"pool index (the row id) must hold integers or strings, got dtype {index.dtype}")
        frame = pool[cols].copy() if cols else pd.DataFrame(index=pool.index)
        if score is not None:
            sc = pd.to_numeric(pool[score], errors="coerce")
            if sc.isna().any() or ((sc < 0) | (sc > 1)).any():
                raise ValueError(f"score column {score!r} must hold probabilities in [0, 1] without missing values")
        if score_bins is not None:
            if score is None:
                raise ValueError("score_bins needs a score column")
            if isinstance(score_bins, int):
                bins = pd.qcut(sc, score_bins, duplicates="drop")
            else:
                bins = pd.cut(sc, list(score_bins), include_lowest=True)
            if bins.isna().any():
                raise ValueError(f"score_bins {score_bins!r} leave some scores outside every bin")
            frame["score_bin"] = bins.astype(str)
            cols = [*cols, "score_bin"]
        if not cols:
            raise ValueError("give strata (one or more columns) or score_bins")
        for c in cols:
            if frame[c].isna().any():
                raise ValueError(f"strata column {c!r} has missing values; fill them before creating a campaign")
        pred = pool[prediction]
        if pred.isna().any():
            raise ValueError(f"prediction column {prediction!r} has missing values")
        # strata codes
        grouped = frame.groupby(cols, sort=True, observed=True)
        codes = grouped.ngroup().to_numpy()
        gindex = grouped.size().index
        keys = [tuple(_py(x) for x in k) if isinstance(k, tuple) else (_py(k),) for k in gindex]
        # label set
        pred_values = [_py(v) for v in pd.unique(pred)]
        if label_set is None:
            vals = set(_label_key(v) for v in pred_values)
            if vals <= {0, 1}:
                label_set = [False, True] if pred.dtype == bool else [0, 1]
            else:
                label_set = sorted(set(pred_values) | ({_py(pos_label)} if m.needs_positive else set()), key=str)
        label_set = [_py(v) for v in label_set]
        canon = {_label_key(v) for v in label_set}
        bad_pred = [v for v in pred_values if _label_key(v) not in canon]
        if bad_pred:
            raise ValueError(f"prediction column {prediction!r} has values {bad_pred[:5]} that are not in label_set {label_set}")
        # eligibility: for metrics whose trials depend on the prediction only
        pred_arr = pred.to_numpy()
        positive = _py(pos_label)
        if m.trials in ("pred_pos", "pred_neg"):
            is_pos = np.array([_label_key(v) == _label_key(positive) for v in pred_arr])
            eligible = is_pos if m.trials == "pred_pos" else ~is_pos
        else:
            eligible = np.ones(len(pool), bool)
        # prior means from the score
        prior_mean = None
        if score is not None and m.name in ("error_rate", "accuracy"):
            per = pd.Series(sc.to_numpy()).groupby(codes).mean().reindex(range(len(keys)))
            pm = (1 - per) if m.name == "error_rate" else per
            prior_mean = np.clip(pm.to_numpy(dtype=float), 1e-3, 1 - 1e-3).tolist()
        strata_index = (
            pd.Index([k[0] for k in keys], name=cols[0])
            if len(cols) == 1
            else pd.MultiIndex.from_tuples(keys, names=cols)
        )
        n_rows = np.bincount(codes, minlength=len(keys))
        n_eligible = np.bincount(codes, weights=eligible, minlength=len(keys)).astype(np.int64)
        if weights is not None:
            w = check_weights(weights, strata_index).tolist()
        else:
            w = None
        rng = np.random.default_rng(random_seed)
        order = rng.permutation(len(pool))
        scores = sc.to_numpy(dtype=float).tolist() if score is not None else [None] * len(pool)
        preds = [_py(v) for v in pred_arr.tolist()]
        config = {
            "strata": cols,
            "prediction": prediction,
            "metric": m.name,
            "target_halfwidth": target_halfwidth,
            "level": level,
            "goal": goal,
            "weights": w,
            "rule": rule_name,
            "score": score,
            "score_bins": score_bins if not isinstance(score_bins, np.ndarray) else score_bins.tolist(),
            "prior": prior,
            "prior_mean": prior_mean,
            "budget": budget,
            "pos_label": positive,
            "label_set": label_set,
            "model": model,
            "random_seed": random_seed if isinstance(random_seed, (int, type(None))) else str(random_seed),
            "index_name": index.name if isinstance(index.name, (str, type(None))) else str(index.name),
        }
        pool_rows = zip(
            rids,
            codes.tolist(),
            preds,
            scores,
            eligible.astype(int).tolist(),
            order.tolist(),
            strict=True,
        )
        store = CampaignStore.initialise(
            path,
            meta={
                "config": json.dumps(config),
                "version": _version(),
                "rng_state": json.dumps(rng.bit_generator.state),
            },
            rid_type=rid_type,
            strata_keys=keys,
            pool_rows=pool_rows,
            n_rows=n_rows.tolist(),
            n_eligible=n_eligible.tolist(),
        )
        return cls(store)

    @classmethod
    def open(cls, path: str | PathLike[str]) -> Campaign:
        """Open an existing campaign file and resume exactly where it was.

        Examples
        --------
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "c.db")
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
        >>> Campaign.create(path, pool, strata="g", prediction="pred").close()
        >>> Campaign.open(path).config["metric"]
        'error_rate'
        """
        return cls(CampaignStore(Path(path)))

    def close(self) -> None:
        """Close the database connection."""
        self._store.close()

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<Campaign {self._store.path.name!r} metric={self.metric.name} strata={len(self.strata)} "
            f"labels_used={self.labels_used} rule={self._rule_name}>"
        )

    # -- state -----------------------------------------------------------------------------
    def _weights(self) -> np.ndarray:
        if self.config.get("weights") is not None:
            return np.asarray(self.config["weights"], dtype=float)
        tot = self._n_eligible.sum()
        return self._n_eligible / tot if tot else np.full(len(self._codes), 1.0 / len(self._codes))

    def _state(self, conn: Any = None) -> RuleState:
        counts = self._store.counts(conn).reindex(self._codes, fill_value=0)
        labelled = counts["labelled"].to_numpy()
        pending = counts["pending"].to_numpy()
        pm = self.config.get("prior_mean")
        return RuleState(
            strata=self.strata,
            successes=counts["successes"].to_numpy(),
            trials=counts["trials"].to_numpy(),
            labelled=labelled,
            pending=pending,
            available=np.maximum(self._n_eligible - labelled - pending, 0),
            weights=self._weights(),
            target_halfwidth=float(self.config["target_halfwidth"]),
            level=float(self.config["level"]),
            goal=self.config["goal"],
            trial_known=not self.metric.trials_need_truth,
            model=self._model if self._model == "independent" else self.config.get("model", "auto"),
            prior=self.config.get("prior", "default"),
            prior_mean=None if pm is None else np.asarray(pm, dtype=float),
        )

    def state(self) -> RuleState:
        """The current :class:`~bayeseval.active.rules.RuleState` (counts and posterior)."""
        return self._state()

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
        """Labels the budget still allows, counting pending proposals (None without a budget)."""
        budget = self.config.get("budget")
        if budget is None:
            return None
        c = self._store.counts()
        return max(int(budget) - int(c["labelled"].sum()) - int(c["pending"].sum()), 0)

    @property
    def done(self) -> bool:
        """True when the goal is met, the budget is spent or nothing is left to label."""
        budget = self.config.get("budget")
        if budget is not None and self.labels_used >= int(budget):
            return True
        return self._state().is_done()

    def counts(self) -> Counts:
        """Successes and trials of the metric per stratum, as :class:`~bayeseval.Counts`."""
        c = self._store.counts().reindex(self._codes, fill_value=0)
        return Counts.from_arrays(
            c["successes"].to_numpy(), c["trials"].to_numpy(), strata=self.strata, metric=self.metric.name
        )

    def status(self) -> pd.DataFrame:
        """Per-stratum progress.

        Returns
        -------
        pandas.DataFrame
            Indexed by stratum: ``pool_rows``, ``labelled``, ``pending``, ``trials``,
            ``successes``, ``mean``, ``lower``, ``upper``, ``halfwidth`` (of the credible
            interval at ``level`` under the campaign's model), ``done`` (half-width at most
            the target), ``exhausted`` (no row left to propose) and ``outlier`` (modelled
            without pooling). With ``goal="overall"`` ``frame.attrs["overall"]`` holds the
            weighted rate's mean, lower, upper, halfwidth and done.

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     prediction="pred")
        >>> list(c.status().columns)[:4]
        ['pool_rows', 'labelled', 'pending', 'trials']
        """
        st = self._state()
        return _status_frame(st, self._n_rows)

    def forecast(self) -> pd.Series:
        """Labels still needed per stratum to meet the target, from the current posterior.

        The smallest extra number of labels whose expected (preposterior) half-width meets
        the target, counting pending proposals as already requested.
        """
        return forecast_labels(self._state())

    def history(self) -> pd.DataFrame:
        """The decisions log: round, rule, allocation (dict stratum -> labels), time, version, details."""
        frame = self._store.decisions()
        frame["allocation"] = frame["allocation"].map(json.loads)
        frame["details"] = frame["details"].map(lambda x: json.loads(x) if x else {})
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
        return frame.set_index("round")

    def labels(self) -> pd.DataFrame:
        """Every ingested label with its trial and success flags, round, time and stratum."""
        frame = self._store.labels()
        frame["stratum"] = self.strata[frame["stratum"].to_numpy()] if len(frame) else []
        frame.index = self._rid_index(frame.index)
        return frame

    def posterior(self, **kwargs: Any) -> Any:
        """Fit :func:`bayeseval.models.fit_hierarchical` to the current counts (full Posterior).

        Keyword arguments go to ``fit_hierarchical`` (e.g. ``engine="pymc"``); by default the
        exact engine with the campaign's prior, model and prior means.
        """
        from bayeseval.models import fit_hierarchical

        model = self.config.get("model", "auto")
        if model == "auto":
            model = "robust" if self._state().posterior.outliers else "beta_binomial"
        kwargs.setdefault("model", model)
        kwargs.setdefault("prior", self.config.get("prior", "default"))
        if self.config.get("prior_mean") is not None:
            kwargs.setdefault("prior_mean", np.asarray(self.config["prior_mean"]))
        return fit_hierarchical(self.counts(), **kwargs)

    # -- propose -------------------------------------------------------------------------
    def _rid_index(self, values: Any) -> pd.Index:
        name = self.config.get("index_name")
        if self._rid_int:
            return pd.Index(np.asarray(list(values), dtype=np.int64), name=name)
        return pd.Index([str(v) for v in values], dtype=object, name=name)

    def propose(self, batch_size: int) -> pd.DataFrame:
        """Propose the next rows to label and record the proposal.

        Parameters
        ----------
        batch_size : int
            Number of rows wanted. Fewer come back when the budget, the pool or the goal
            leaves fewer to ask for; none when the campaign is done.

        Returns
        -------
        pandas.DataFrame
            The proposed pool rows, indexed by row id: the stratum columns, the prediction
            (and score) column and ``round``.

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     prediction="pred", random_seed=0)
        >>> batch = c.propose(10)
        >>> batch.index.is_unique, len(batch)
        (True, 10)
        """
        batch_size = check_positive_int(batch_size, "batch_size")
        store = self._store
        with store.transaction() as conn:
            st = self._state(conn)
            budget = self.config.get("budget")
            n = batch_size
            if budget is not None:
                n = min(n, int(budget) - int(st.labelled.sum()) - int(st.pending.sum()))
            if n <= 0 or st.is_done():
                rids_by_code: dict[int, list[Any]] = {}
            else:
                rng = np.random.default_rng()
                rng.bit_generator.state = json.loads(store.get_meta("rng_state"))
                alloc = self._rule(st, n, rng).to_numpy()
                alloc = np.minimum(alloc, st.available)
                rids_by_code = {}
                for i in np.flatnonzero(alloc > 0):
                    code = int(self._codes[i])
                    rids_by_code[code] = store.sample_rows(conn, code, int(alloc[i]))
                round_ = store.next_round(conn)
                labels = stratum_labels(self.strata)
                allocation = {labels[i]: int(alloc[i]) for i in np.flatnonzero(alloc > 0)}
                hw = st.halfwidths()
                details = {
                    "model": st.posterior.model,
                    "outliers": [str(x) for x in st.posterior.outliers],
                    "labels_used": int(st.labelled.sum()),
                    "pending_before": int(st.pending.sum()),
                    "max_halfwidth": float(np.max(hw)),
                    "requested": int(batch_size),
                }
                store.record_proposal(
                    conn,
                    round_=round_,
                    rids_by_code=rids_by_code,
                    rule=self._rule_name,
                    allocation=allocation,
                    version=_version(),
                    details=details,
                    rng_state=json.dumps(rng.bit_generator.state),
                )
        rids = [r for code in sorted(rids_by_code) for r in rids_by_code[code]]
        return self._rows_frame(rids, round_ if rids else None)

    def _rows_frame(self, rids: list[Any], round_: int | None) -> pd.DataFrame:
        rows = self._store.pool_rows(rids)
        cols = self.config["strata"]
        out = pd.DataFrame(index=self._rid_index(rows.index))
        codes = rows["stratum"].to_numpy(dtype=np.int64) if len(rows) else np.array([], np.int64)
        for j, c in enumerate(cols):
            if isinstance(self.strata, pd.MultiIndex):
                out[c] = self.strata.get_level_values(j)[codes].to_numpy() if len(rows) else []
            else:
                out[c] = self.strata[codes].to_numpy() if len(rows) else []
        out[self.config["prediction"]] = rows["prediction"].to_numpy() if len(rows) else []
        if self.config.get("score"):
            out[self.config["score"]] = rows["score"].to_numpy(dtype=float) if len(rows) else []
        out["round"] = round_ if round_ is not None else []
        return out

    # -- ingest --------------------------------------------------------------------------
    def _parse_labels(
        self, labels: Any, id_column: str | None, label_column: str | None
    ) -> tuple[list[Any], list[Any]]:
        if isinstance(labels, pd.DataFrame):
            frame = labels
            if id_column is not None:
                if id_column not in frame.columns:
                    raise ValueError(f"id_column {id_column!r} is not in labels; columns are {list(frame.columns)}")
                ids = frame[id_column]
            else:
                ids = frame.index.to_series()
            if label_column is None:
                rest = [c for c in frame.columns if c != id_column and c != "round"]
                candidates = [c for c in rest if c in ("label", "y_true", "truth", "y")]
                if candidates:
                    label_column = candidates[0]
                elif len(rest) == 1:
                    label_column = rest[0]
                else:
                    raise ValueError(f"labels DataFrame: give label_column, one of {rest}")
            if label_column not in frame.columns:
                raise ValueError(f"label_column {label_column!r} is not in labels; columns are {list(frame.columns)}")
            return list(ids.to_numpy()), list(frame[label_column].to_numpy())
        if isinstance(labels, pd.Series):
            return list(labels.index), list(labels.to_numpy())
        if isinstance(labels, dict):
            return list(labels.keys()), list(labels.values())
        raise TypeError(f"labels must be a pandas Series indexed by row id or a DataFrame, got {type(labels).__name__}")

    def _norm_rid(self, rid: Any) -> Any:
        rid = _py(rid)
        if self._rid_int:
            if isinstance(rid, bool):
                return None
            if isinstance(rid, int):
                return rid
            if isinstance(rid, float) and rid.is_integer():
                return int(rid)
            if isinstance(rid, str) and rid.strip().lstrip("-").isdigit():
                return int(rid.strip())
            return None
        if rid is None or _is_missing(rid):
            return None
        return str(rid)

    def ingest(
        self,
        labels: pd.Series | pd.DataFrame,
        *,
        id_column: str | None = None,
        label_column: str | None = None,
    ) -> int:
        """Record true labels for proposed rows (all or nothing).

        Parameters
        ----------
        labels : pandas.Series or pandas.DataFrame
            True labels indexed by row id, or a frame with an id column (``id_column``, or
            the index) and a label column (``label_column``; default ``label`` or the only
            other column).
        id_column, label_column : str, optional
            Column names for a DataFrame.

        Returns
        -------
        int
            Number of labels recorded.

        Raises
        ------
        ValueError
            Naming the offending ids and values, for ids not in the pool, ids never proposed,
            ids given twice or already labelled, and missing or invalid labels. Nothing is
            written when any check fails.

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     prediction="pred", random_seed=0)
        >>> b = c.propose(4)
        >>> c.ingest(pd.Series([0, 1, 1, 0], index=b.index))
        4
        >>> c.ingest(pd.Series([0], index=b.index[:1]))
        Traceback (most recent call last):
        ...
        ValueError: labels rejected, nothing recorded: already labelled: ...
        """
        raw_ids, raw_labels = self._parse_labels(labels, id_column, label_column)
        if not raw_ids:
            return 0
        problems: dict[str, list[str]] = {}

        def add(kind: str, item: Any) -> None:
            problems.setdefault(kind, []).append(repr(_py(item)))

        ids: list[Any] = []
        seen: set[Any] = set()
        values: list[Any] = []
        for rid, lab in zip(raw_ids, raw_labels, strict=True):
            nid = self._norm_rid(rid)
            if nid is None:
                add("unknown ids (not in the pool)", rid)
                continue
            if nid in seen:
                add("duplicate ids in this batch", rid)
                continue
            seen.add(nid)
            if _is_missing(lab):
                add("missing labels for ids", rid)
                continue
            key = _label_key(lab)
            if key not in self._labels_canon:
                try:
                    key = _label_key(type(next(iter(self._labels_canon)))(lab))
                except (TypeError, ValueError, StopIteration):
                    pass
            if key not in self._labels_canon:
                add(f"invalid labels (valid: {self.config['label_set']})", lab)
                continue
            ids.append(nid)
            values.append(self._labels_canon[key])
        store = self._store
        with store.transaction() as conn:
            info = store.pool_info(conn, ids)
            status = store.proposal_status(conn, ids)
            rounds = self._rounds(conn, ids)
            rows = []
            preds = []
            for rid, lab in zip(ids, values, strict=True):
                if rid not in info:
                    add("unknown ids (not in the pool)", rid)
                elif rid not in status:
                    add("ids never proposed", rid)
                elif status[rid] != "pending":
                    add("already labelled", rid)
                else:
                    rows.append([rid, lab, 0, 0, rounds[rid], info[rid][0]])
                    preds.append(info[rid][1])
            if problems:
                parts = []
                for kind, items in problems.items():
                    shown = ", ".join(items[:10]) + (f" ... ({len(items)} in all)" if len(items) > 10 else "")
                    parts.append(f"{kind}: {shown}")
                raise ValueError("labels rejected, nothing recorded: " + "; ".join(parts))
            truth = np.array([r[1] for r in rows], dtype=object)
            pred = np.array(preds, dtype=object)
            trial, success = self.metric.masks(
                np.array([_label_key(x) for x in truth], dtype=object),
                np.array([_label_key(x) for x in pred], dtype=object),
                _label_key(self.config.get("pos_label")),
            )
            for r, t, s in zip(rows, trial, success, strict=True):
                r[2], r[3] = int(t), int(s)
            store.record_labels(conn, [tuple(r) for r in rows])
        return len(rows)

    def release(self, ids: Any = None) -> int:
        """Withdraw pending proposals (e.g. a batch the labellers will not return).

        Released rows become eligible again and may be proposed in a later round.

        Parameters
        ----------
        ids : iterable of row ids, optional
            The pending rows to release; default all pending rows.

        Returns
        -------
        int
            Number of proposals released. Ids that are not pending are ignored.

        Examples
        --------
        >>> import os, tempfile
        >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
        >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
        ...                     prediction="pred", random_seed=0)
        >>> b = c.propose(6)
        >>> c.release(b.index[:2])
        2
        >>> int(c.status()["pending"].sum())
        4
        """
        with self._store.transaction() as conn:
            if ids is None:
                rids = [r[0] for r in conn.execute("SELECT rid FROM proposals WHERE status = 'pending'")]
            else:
                rids = [r for r in (self._norm_rid(x) for x in ids) if r is not None]
            return self._store.release(conn, rids)

    def _rounds(self, conn: Any, ids: list[Any]) -> dict[Any, int]:
        out: dict[Any, int] = {}
        for i in range(0, len(ids), 900):
            chunk = ids[i : i + 900]
            out.update(
                conn.execute(
                    "SELECT rid, round FROM proposals WHERE rid IN ({})".format(",".join("?" * len(chunk))),
                    chunk,
                ).fetchall()
            )
        return out


def _status_frame(st: RuleState, n_rows: np.ndarray | None = None) -> pd.DataFrame:
    """Per-stratum status table of a rule state."""
    post = st.posterior
    lo, hi = st.intervals()
    hw = (hi - lo) / 2
    frame = pd.DataFrame(
        {
            "pool_rows": n_rows if n_rows is not None else st.available + st.labelled + st.pending,
            "labelled": st.labelled,
            "pending": st.pending,
            "trials": st.trials,
            "successes": st.successes,
            "mean": post.mean().to_numpy(),
            "lower": lo,
            "upper": hi,
            "halfwidth": hw,
            "done": hw <= st.target_halfwidth,
            "exhausted": st.available <= 0,
            "outlier": [x in set(post.outliers) for x in st.strata],
        },
        index=st.strata,
    )
    if st.goal == "overall":
        mean, olo, ohi = st.overall()
        frame.attrs["overall"] = {
            "mean": mean,
            "lower": olo,
            "upper": ohi,
            "halfwidth": (ohi - olo) / 2,
            "done": (ohi - olo) / 2 <= st.target_halfwidth,
        }
    return frame
