"""The pool as a campaign sees it: strata, eligible rows, weights, prior means, and the seeded order of its rows.

:func:`design_pool` turns a pool and a :class:`~bayeseval.campaign.CampaignSpec` into a
:class:`PoolDesign`; :func:`seed_sequences`, :func:`proposal_order` and :func:`rule_generator`
give a real campaign and repeat 0 of its simulation the same random streams.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import (
    check_class_labels,
    check_weights,
)
from bayeseval.campaign.goals.goal import unit_value
from bayeseval.campaign.labels.label_set import MISSING, LabelSet, default_label_set, label_key, py_scalar
from bayeseval.campaign.loop.state import StrataDesign
from bayeseval.counts.counts import stratum_labels
from bayeseval.counts.metrics import get_metric

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.campaign.spec import CampaignSpec

__all__ = [
    "PoolDesign",
    "design_pool",
    "seed_sequences",
    "proposal_order",
    "rule_generator",
    "metric_flags",
    "population_weights",
    "stratum_costs",
    "stratum_thresholds",
    "check_columns",
    "check_no_missing",
    "spec_columns",
]


def stratum_costs(costs: Any, strata: pd.Index) -> np.ndarray | None:
    """Label cost per stratum aligned to ``strata`` (None without costs), or raise naming ``costs``.

    A mapping may leave strata out (they cost 1); a sequence gives one cost per stratum. Every
    cost must be a finite number > 0.
    """
    if costs is None:
        return None
    if isinstance(costs, (dict, pd.Series)):
        values = [1.0] * len(strata)
        position = {s: i for i, s in enumerate(strata)}
        text = {t: i for i, t in enumerate(stratum_labels(strata))}
        unknown = []
        for key, cost in costs.items() if isinstance(costs, dict) else costs.items():
            key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
            where = position.get(key, text.get(str(key)))
            if where is None:
                unknown.append(key)
            else:
                values[where] = cost
        if unknown:
            raise ValueError(f"costs name strata that are not in the pool: {unknown[:5]}; strata are {list(text)[:10]}")
    else:
        values = list(costs)
        if len(values) != len(strata):
            raise ValueError(f"costs must give one cost per stratum ({len(strata)}), got {len(values)}: {values[:10]}")
    arr = np.empty(len(values), dtype=float)
    for i, v in enumerate(values):
        if (
            isinstance(v, bool)
            or not isinstance(v, (Real, np.number))
            or not (math.isfinite(float(v)) and float(v) > 0)
        ):
            raise ValueError(f"costs must be finite numbers > 0, got {v!r} for stratum {list(strata)[i]!r}")
        arr[i] = float(v)
    return arr


def stratum_thresholds(threshold: Any, strata: pd.Index) -> np.ndarray | None:
    """The decision threshold per stratum aligned to ``strata`` (None without one), or raise.

    A number applies to every stratum; a mapping must name every stratum (by its key or its
    label text); a sequence gives one threshold per stratum.
    """
    if threshold is None:
        return None
    if isinstance(threshold, float):
        return np.full(len(strata), threshold)
    if isinstance(threshold, (dict, pd.Series)):
        position = {s: i for i, s in enumerate(strata)}
        text = {t: i for i, t in enumerate(stratum_labels(strata))}
        values = np.full(len(strata), np.nan)
        unknown = []
        for key, value in threshold.items():
            key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
            where = position.get(key, text.get(str(key)))
            if where is None:
                unknown.append(key)
            else:
                values[where] = unit_value(value, "threshold")
        if unknown:
            raise ValueError(
                f"threshold names strata that are not in the pool: {unknown[:5]}; strata are {list(text)[:10]}"
            )
        missing = [t for t, i in text.items() if np.isnan(values[i])]
        if missing:
            raise ValueError(f"threshold must give every stratum a threshold; missing {missing[:10]}")
        return values
    values = np.asarray(threshold, dtype=float)
    if len(values) != len(strata):
        raise ValueError(
            f"threshold must give one value per stratum ({len(strata)}), got {len(values)}: {list(values)[:10]}"
        )
    return values


# -- the pool as the campaign sees it --------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PoolDesign:
    """A pool turned into what a campaign (real or simulated) works on.

    Attributes
    ----------
    columns : list of str
        The stratum columns (``score_bin`` last when the spec bins the score).
    keys : list of tuple
        Each stratum's key as a tuple of Python scalars.
    codes : numpy.ndarray
        Each pool row's stratum code (position in ``strata``).
    eligible : numpy.ndarray
        Whether each row may be proposed (for precision-type metrics, only rows whose
        prediction makes them trials).
    labels : LabelSet
        The known labels.
    positive : object
        ``pos_label`` as a known label (or as given for metrics without a positive class).
    y_pred : numpy.ndarray
        The predictions as given, as Python scalars (object array).
    score : numpy.ndarray or None
        The score column as floats.
    strata : StrataDesign
        The strata, their sizes, weights and prior means.
    """

    columns: list[str]
    keys: list[tuple[Any, ...]]
    codes: np.ndarray
    eligible: np.ndarray
    labels: LabelSet
    positive: Any
    y_pred: np.ndarray
    score: np.ndarray | None
    strata: StrataDesign


def check_no_missing(frame: pd.DataFrame, named: Sequence[tuple[str, str]], where: str) -> None:
    """Raise naming the argument, the column and the row ids when a column has missing values.

    ``named`` pairs an argument name with a column; None, NaN, ``pd.NA`` and ``NaT`` count as
    missing.
    """
    for name, col in named:
        missing = frame[col].isna().to_numpy()
        if missing.any():
            ids = frame.index[missing][:10].tolist()
            raise ValueError(
                f"{name} column {col!r} has {int(missing.sum())} missing values (None/NaN/NA) at row ids "
                f"{ids}; fill or drop them before {where}"
            )


def check_columns(frame: Any, named: Sequence[tuple[str, str]], arg: str) -> None:
    """Check ``frame`` is a non-empty DataFrame holding every named column, or raise naming it."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{arg} must be a pandas DataFrame, got {type(frame).__name__}")
    if len(frame) == 0:
        raise ValueError(f"{arg} has no rows")
    for name, col in named:
        if col not in frame.columns:
            raise ValueError(f"{name} column {col!r} is not in {arg}; columns are {list(frame.columns)[:20]}")


def spec_columns(spec: CampaignSpec) -> list[tuple[str, str]]:
    """(argument, column) pairs of the pool columns a spec reads."""
    named = [("y_pred", spec.y_pred)] + [("strata", c) for c in spec.strata]
    named += [("proxy", spec.proxy)] if spec.proxy is not None else []
    return named + ([("score", spec.score)] if spec.score is not None else [])


def _score_bin_column(sc: pd.Series, score_bins: Any) -> pd.Series:
    """The ``score_bin`` stratum column (text labels of the bins)."""
    if isinstance(score_bins, int):
        bins = pd.qcut(sc, score_bins, duplicates="drop")
    else:
        bins = pd.cut(sc, list(score_bins), include_lowest=True)
    if bins.isna().any():
        raise ValueError(
            f"score_bins {list(score_bins) if isinstance(score_bins, tuple) else score_bins!r} "
            "leave some scores outside every bin"
        )
    return bins.astype(str)


def _score_values(pool: pd.DataFrame, score: str | None) -> pd.Series | None:
    if score is None:
        return None
    sc = pd.to_numeric(pool[score], errors="coerce")
    bad = sc.isna() | (sc < 0) | (sc > 1)
    if bad.any():
        ids = pool.index[bad.to_numpy()][:10].tolist()
        raise ValueError(
            f"score column {score!r} must hold probabilities in [0, 1] without missing values (row ids {ids})"
        )
    return sc


def _strata_frame(pool: pd.DataFrame, spec: CampaignSpec, sc: pd.Series | None) -> tuple[pd.DataFrame, list[str]]:
    """The stratum columns (with ``score_bin`` when asked) and their names."""
    cols = list(spec.strata)
    frame = pool[cols].copy() if cols else pd.DataFrame(index=pool.index)
    if spec.score_bins is not None:
        frame["score_bin"] = _score_bin_column(sc, spec.score_bins)
        cols = [*cols, "score_bin"]
    if not cols:
        raise ValueError("give strata (one or more columns) or score_bins")
    check_no_missing(frame, [("strata", c) for c in cols], "creating a campaign")
    return frame, cols


def _prediction_values(pred: pd.Series, y_pred: str) -> tuple[np.ndarray, list[Any]]:
    """Factorize the prediction column: (codes, distinct values as Python scalars), or raise."""
    check_no_missing(pred.to_frame(), [("y_pred", y_pred)], "creating a campaign")
    codes, uniques = pd.factorize(pred.to_numpy(dtype=object) if pred.dtype == object else pred.to_numpy())
    values = [py_scalar(v) for v in uniques]
    for v in values:
        if not isinstance(v, (str, int, float)) or (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(
                f"y_pred column {y_pred!r} must hold strings, integers, finite floats or bools, "
                f"got {v!r} ({type(v).__name__})"
            )
    if any(isinstance(v, str) for v in values) and not all(isinstance(v, str) for v in values):
        raise ValueError(
            f"y_pred column {y_pred!r} mixes strings and numbers ({values[:6]!r}); "
            "labels of one type are needed so predictions and true labels compare"
        )
    return codes, values


def _known_labels(pred: pd.Series, pred_values: list[Any], spec: CampaignSpec, extra: Sequence[Any]) -> LabelSet:
    """The campaign's :class:`LabelSet` (see its docstring for the default)."""
    check_class_labels(np.array(pred_values, dtype=object), "y_pred", spec.y_pred)
    if spec.label_set is None:
        return LabelSet(default_label_set([*pred_values, *extra], pred.dtype == bool), "label_set")
    labels = LabelSet(list(spec.label_set), "label_set")
    bad = [v for v in pred_values if labels.normalise(v) is None]
    if bad:
        raise ValueError(
            f"y_pred column {spec.y_pred!r} has values {bad[:5]} that are not in label_set {labels.values}"
        )
    return labels


def _positive_label(labels: LabelSet, spec: CampaignSpec) -> Any:
    """``pos_label`` as a known label (class metrics), or raise naming it."""
    metric = next((get_metric(m) for m in spec.metrics if get_metric(m).needs_positive), get_metric(spec.metrics[0]))
    pos = py_scalar(spec.pos_label)
    if not metric.needs_positive:
        return pos if isinstance(pos, (str, int, float, type(None))) else str(spec.pos_label)
    known = labels.normalise(spec.pos_label)
    if known is None or known is MISSING:
        raise ValueError(
            f"pos_label {spec.pos_label!r} is not one of the campaign's labels {labels.values} (from y_pred "
            f"column {spec.y_pred!r}); metric {metric.name!r} would never count a trial for it. Pass "
            "label_set=[...] to declare a class the model never predicts"
        )
    return known


def _eligible(spec: CampaignSpec, pred_codes: np.ndarray, pred_values: list[Any], positive: Any) -> np.ndarray:
    """Rows that may be proposed: for metrics whose trials depend on the prediction only, the trials."""
    kinds = {get_metric(m).trials for m in spec.metrics}
    if not kinds <= {"pred_pos", "pred_neg"}:
        return np.ones(len(pred_codes), bool)
    is_pos = np.array([label_key(v) == label_key(positive) for v in pred_values], dtype=bool)[pred_codes]
    out = np.zeros(len(pred_codes), bool)
    if "pred_pos" in kinds:
        out |= is_pos
    if "pred_neg" in kinds:
        out |= ~is_pos
    return out


def _prior_mean(spec: CampaignSpec, sc: pd.Series | None, codes: np.ndarray, k: int) -> np.ndarray | None:
    """Per-stratum prior guesses from the mean score (``error_rate`` and ``accuracy`` only)."""
    if sc is None or not isinstance(spec.metric, str) or spec.metric not in ("error_rate", "accuracy"):
        return None
    per = pd.Series(sc.to_numpy(dtype=float)).groupby(codes).mean().reindex(range(k))
    pm = (1 - per) if spec.metric == "error_rate" else per
    return np.clip(pm.to_numpy(dtype=float), 1e-3, 1 - 1e-3)


def _strata_index(keys: list[tuple[Any, ...]], cols: list[str]) -> pd.Index:
    if len(cols) == 1:
        return pd.Index([k[0] for k in keys], name=cols[0])
    return pd.MultiIndex.from_tuples(keys, names=cols)


def population_weights(weights: Any, strata: pd.Index, n_eligible: np.ndarray) -> np.ndarray:
    """The checked population shares, or the strata's shares of the eligible rows."""
    if weights is not None:
        return check_weights(list(weights) if isinstance(weights, tuple) else weights, strata)
    total = n_eligible.sum()
    return n_eligible / total if total else np.full(len(n_eligible), 1.0 / len(n_eligible))


def _anytime_concentration(spec: CampaignSpec, n_eligible: np.ndarray) -> np.ndarray | None:
    """Each stratum's confidence-sequence concentration of an anytime campaign (else None)."""
    return spec.guarantee.sequence_concentrations(n_eligible, spec.level, spec.goal.stratum_halfwidth)


def design_pool(spec: CampaignSpec, pool: pd.DataFrame, *, extra_labels: Sequence[Any] = ()) -> PoolDesign:
    """Turn a pool into strata, eligible rows, known labels, weights and prior means.

    The one place where :meth:`Campaign.create` and :func:`simulate` read a pool, so both
    see the same strata (sorted keys), the same eligible rows and the same weights.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    pool : pandas.DataFrame
        Holds the spec's columns (already checked with :func:`check_columns`).
    extra_labels : sequence, optional
        Further values for the default label set (the true labels of a simulation).

    Returns
    -------
    PoolDesign
        The pool as the campaign sees it.
    """
    sc = _score_values(pool, spec.score)
    frame, cols = _strata_frame(pool, spec, sc)
    pred = pool[spec.y_pred]
    pred_codes, pred_values = _prediction_values(pred, spec.y_pred)
    labels = _known_labels(pred, pred_values, spec, extra_labels)
    positive = _positive_label(labels, spec)
    eligible = _eligible(spec, pred_codes, pred_values, positive)
    grouped = frame.groupby(cols, sort=True, observed=True)
    codes = grouped.ngroup().to_numpy()
    keys = [tuple(py_scalar(x) for x in k) if isinstance(k, tuple) else (py_scalar(k),) for k in grouped.size().index]
    strata = _strata_index(keys, cols)
    n_eligible = np.bincount(codes, weights=eligible, minlength=len(keys)).astype(np.int64)
    design = StrataDesign(
        strata=strata,
        n_rows=np.bincount(codes, minlength=len(keys)),
        n_eligible=n_eligible,
        weights=population_weights(spec.weights, strata, n_eligible),
        prior_mean=_prior_mean(spec, sc, codes, len(keys)),
        costs=stratum_costs(spec.costs, strata),
        threshold=stratum_thresholds(getattr(spec.goal, "threshold", None), strata),
        concentration=_anytime_concentration(spec, n_eligible),
    )
    values = np.empty(len(pred_values), dtype=object)
    values[:] = pred_values
    return PoolDesign(
        columns=cols,
        keys=keys,
        codes=codes,
        eligible=eligible,
        labels=labels,
        positive=positive,
        y_pred=values[pred_codes],
        score=None if sc is None else sc.to_numpy(dtype=float),
        strata=design,
    )


def seed_sequences(random_seed: Any, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent seed sequences from a campaign's ``random_seed``.

    A campaign uses the first; a simulation's repeat ``r`` uses the ``r``-th, so repeat 0
    replays the campaign created with the same seed.

    Parameters
    ----------
    random_seed : int, sequence of int, SeedSequence, Generator or None
        A checked seed (a Generator gives the entropy of a new sequence).
    n : int
        Number of sequences.

    Returns
    -------
    list of numpy.random.SeedSequence
        The children of the seed's sequence.
    """
    if isinstance(random_seed, np.random.Generator):
        root = np.random.SeedSequence(random_seed.integers(0, 2**63, size=4).tolist())
    elif isinstance(random_seed, np.random.SeedSequence):
        root = random_seed
    else:
        root = np.random.SeedSequence(random_seed)
    return root.spawn(n)


def proposal_order(design: PoolDesign, seed: np.random.SeedSequence) -> list[np.ndarray]:
    """Per stratum, the positions of its eligible pool rows in the order they are proposed.

    Each stratum's eligible rows (in pool order) are shuffled by one random permutation,
    drawn stratum after stratum from a generator seeded with ``seed``.

    Parameters
    ----------
    design : PoolDesign
        The pool's strata codes and eligible rows.
    seed : numpy.random.SeedSequence
        The campaign's (or the simulated repeat's) seed sequence.

    Returns
    -------
    list of numpy.ndarray
        Row positions, one array per stratum.
    """
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(design.eligible)
    rows = rows[np.argsort(design.codes[rows], kind="stable")]
    bounds = np.searchsorted(design.codes[rows], np.arange(len(design.keys) + 1))
    # shuffling each stratum's rows in place draws what rng.permutation(b - a) draws and moves the rows
    # as it moves the positions: the same order, without an index array per stratum
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        rng.shuffle(rows[a:b])
    return np.split(rows, bounds[1:-1]) if len(design.keys) else []


def rule_generator(seed: np.random.SeedSequence) -> np.random.Generator:
    """The random generator a campaign's rule draws from (randomised rules such as Thompson).

    Parameters
    ----------
    seed : numpy.random.SeedSequence
        The campaign's (or the simulated repeat's) seed sequence.

    Returns
    -------
    numpy.random.Generator
        A generator independent of the row order's.
    """
    return np.random.default_rng(seed.generate_state(4))


def metric_flags(metric: Any, y_true: Any, y_pred: Any, positive: Any) -> tuple[np.ndarray, np.ndarray]:
    """Trial and success flags of known labels, compared through :func:`label_key`.

    Parameters
    ----------
    metric : Metric
        The campaign's metric.
    y_true, y_pred : sequence
        Known true and predicted labels.
    positive : object
        The positive label.

    Returns
    -------
    tuple of numpy.ndarray
        ``(trial, success)`` boolean flags.
    """
    truth = np.array([label_key(v) for v in y_true], dtype=object)
    pred = np.array([label_key(v) for v in y_pred], dtype=object)
    trial, success = metric.masks(truth, pred, label_key(positive))
    return np.asarray(trial, bool), np.asarray(success, bool)
