r"""Labels a campaign starts from: rows labelled before it began, checked and turned into stored labels.

:func:`existing_labels` reads the ``labels`` (and ``inclusion``) of
:meth:`Campaign.create <bayeseval.campaign.Campaign.create>`, checks every row against the pool
before anything is written and returns the rows the new campaign file records as labelled in
round 0 (:data:`EXISTING_ROUND`): a ``proposals`` row with status ``labelled``, a ``labels`` row and
its counts, exactly what a proposal and an ingest of the same rows would have written. The
campaign then proposes only rows never labelled, at random within each stratum.

The labels are taken as a random sample within each stratum (every row of a stratum equally
likely to have been labelled, as a row the campaign proposes is): the union of such a sample
and the campaign's own random draws from the rows left is again a random sample within the
stratum, so the stored counts give the campaign's estimates as if it had proposed those rows
itself.

Labels chosen with unequal probabilities (``inclusion`` not constant within a stratum, say half
of them among the rows the model calls positive) are no random sample, and counted as one they
would bias every estimate. They are read instead as a **seed cell**: within stratum ``h`` the
``n0`` seed rows ``S0`` are a cell whose labels are all known, and the campaign draws at random
only from the rest ``R`` (``N - n0`` rows), so

.. math::

    \hat\theta_h = \frac{n_0}{N} \frac{s_0}{n_0} + \frac{N - n_0}{N} \frac{s_R}{n_R}

(:func:`seed_cell_bounds`) is unbiased for the stratum's rate whatever rule chose the seeds:
conditional on ``S0`` the first term is known and the second is the random sample's rate of
``R``. No inclusion probability enters, only that they differ. The interval is the MOVER
interval of the two cells (:func:`~bayeseval._kernels.proxy.cells_interval`, as a proxy
campaign combines its cells), each cell's limits exact binomial ones (the seed cell's rate as
a process rate, the rest's from its random draws); a stratum without random draws yet has
the rest's rate in ``[0, 1]``. Only campaigns that read one interval per stratum take such
labels (:func:`check_seed_settings`): ``goal="each"``, ``guarantee="stratum"``, one metric
whose trials the prediction fixes, no proxy, no ``anytime``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._kernels.proxy import cells_interval
from bayeseval.campaign.labels.ingest import LabelProblems
from bayeseval.campaign.labels.label_set import norm_rid, py_scalar
from bayeseval.campaign.loop.pool import PoolDesign, metric_flags
from bayeseval.counts.metrics import get_metric

__all__ = [
    "EXISTING_META",
    "EXISTING_ROUND",
    "RANDOM_DESIGN",
    "SEED_DESIGN",
    "ExistingLabels",
    "check_seed_settings",
    "existing_labels",
    "seed_cell_bounds",
]

#: meta key of the summary of the labels a campaign started from
EXISTING_META = "existing_labels"
#: the round of the labels a campaign started from (proposal rounds start at 1)
EXISTING_ROUND = 0
#: label columns looked for in a DataFrame of labels, in this order
LABEL_COLUMNS = ("label", "true_label", "y_true", "truth", "y")
#: relative spread under which a stratum's inclusion probabilities count as equal
EQUAL_TOLERANCE = 1e-9
#: the stored design of labels taken as a random sample within strata
RANDOM_DESIGN = "random within strata"
#: the stored design of labels chosen with unequal probabilities: a seed cell beside random draws
SEED_DESIGN = "seed cell"
#: one-proportion method of each cell's limits (as a proxy campaign's cells)
SEED_METHOD = "clopper_pearson"


@dataclass(frozen=True)
class ExistingLabels:
    """The checked labels a campaign starts from.

    Attributes
    ----------
    rows : list of tuple
        ``(row id, label, trial, success, stratum code)`` per labelled row.
    meta : str
        The JSON summary stored under :data:`EXISTING_META`.
    unequal : str or None
        With inclusion probabilities that differ within a stratum, where they do (the
        labels are then a seed cell, :data:`SEED_DESIGN`); None otherwise.
    """

    rows: list[tuple[Any, Any, int, int, int]]
    meta: str
    unequal: str | None = None

    @property
    def seeded(self) -> bool:
        """Whether the labels were chosen with unequal probabilities (read as a seed cell)."""
        return self.unequal is not None


def _label_column(frame: pd.DataFrame, skip: set[Any]) -> Any:
    """The label column of a DataFrame of labels, or raise naming ``labels``."""
    rest = [c for c in frame.columns if c not in skip]
    found = next((c for c in LABEL_COLUMNS if c in rest), None)
    if found is not None:
        return found
    if len(rest) == 1:
        return rest[0]
    raise ValueError(
        f"labels DataFrame: cannot tell its label column among {rest[:20]}; name it one of "
        f"{list(LABEL_COLUMNS)} or keep only the id and label columns (and inclusion's)"
    )


def _from_frame(frame: pd.DataFrame, inclusion: Any, id_name: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """Ids, labels and the inclusion values of a DataFrame of labels."""
    if inclusion is not None and inclusion not in frame.columns:
        raise ValueError(
            f"design.inclusion={inclusion!r} is not a column of labels; columns are {list(frame.columns)[:20]}"
        )
    by_column = id_name in frame.columns
    ids = frame[id_name].to_numpy(dtype=object) if by_column else frame.index.to_numpy(dtype=object)
    col = _label_column(frame, {id_name, inclusion, "round"} if by_column else {inclusion, "round"})
    extra = [c for c in frame.columns if c not in (col, inclusion, "round")]
    if not by_column and isinstance(frame.index, pd.RangeIndex) and frame.index.name is None and extra:
        raise ValueError(
            f"labels DataFrame: its row ids would be its default index 0, 1, 2, ... while it has columns {extra[:5]}; "
            f"set the index to the row-id column (labels.set_index(...)) or name that column {id_name!r}"
        )
    incl = None if inclusion is None else frame[inclusion].to_numpy(dtype=object)
    return ids, frame[col].to_numpy(dtype=object), incl


def _from_pool(pool: pd.DataFrame, column: str, inclusion: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """Ids, labels and inclusion values of the pool rows whose label column is filled."""
    for name, col in (("labels", column), ("inclusion", inclusion)):
        if col is not None and col not in pool.columns:
            raise ValueError(f"{name} {col!r} is not a column of the pool; columns are {list(pool.columns)[:20]}")
    have = pool[column].notna().to_numpy()
    incl = None if inclusion is None else pool[inclusion].to_numpy(dtype=object)[have]
    return pool.index.to_numpy(dtype=object)[have], pool[column].to_numpy(dtype=object)[have], incl


def _raw(labels: Any, inclusion: Any, pool: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, Any]:
    """``labels`` (and ``inclusion``) as arrays of ids, labels and inclusion values."""
    if inclusion is not None and not isinstance(inclusion, str):
        raise TypeError(f"design.inclusion must be the name of a column of labels (or of the pool), got {inclusion!r}")
    if isinstance(labels, str):
        return _from_pool(pool, labels, inclusion)
    if isinstance(labels, pd.DataFrame):
        return _from_frame(labels, inclusion, str(pool.index.name or "row"))
    if inclusion is not None:
        raise TypeError(
            f"design.inclusion={inclusion!r} names a column: give labels as a DataFrame holding it, "
            f"got labels of type {type(labels).__name__}"
        )
    if isinstance(labels, pd.Series):
        return labels.index.to_numpy(dtype=object), labels.to_numpy(dtype=object), None
    if isinstance(labels, dict):
        return np.array(list(labels), dtype=object), np.array(list(labels.values()), dtype=object), None
    raise TypeError(
        "labels must be a pandas Series indexed by row id, a DataFrame of row ids and labels, a dict or the "
        f"name of a pool column holding the labels, got {type(labels).__name__}"
    )


def _check_rows(
    raw_ids: np.ndarray,
    raw_labels: np.ndarray,
    rids: list[Any],
    integer: bool,
    design: PoolDesign,
    problems: LabelProblems,
) -> tuple[list[int], list[Any], list[int]]:
    """Pool positions, known labels and places in the input of the valid rows; the others noted."""
    nids = [norm_rid(r, integer) for r in raw_ids]
    valid = [i for i, r in enumerate(nids) if r is not None]
    found = np.full(len(nids), -1, dtype=np.int64)
    found[valid] = pd.Index(rids).get_indexer(pd.Index([nids[i] for i in valid], dtype=object))
    canon, missing, invalid = design.labels.normalise_many(raw_labels)
    seen: set[Any] = set()
    pos: list[int] = []
    values: list[Any] = []
    kept: list[int] = []
    for i, raw in enumerate(raw_ids):
        rid, j = nids[i], found[i]
        if rid is None:
            problems.add(f"ids that cannot be row ids of this pool ({'integers' if integer else 'text'})", raw)
        elif j < 0:
            problems.add("ids not in the pool", raw)
        elif rid in seen:
            problems.add("ids given twice", raw)
        elif not design.eligible[j]:
            problems.add(
                "rows the campaign never labels (their prediction makes them no trial of its metric; "
                "leave them out) for ids",
                raw,
            )
        elif missing[i]:
            problems.add("blank labels for ids", raw)
        elif invalid[i]:
            problems.add(
                f"invalid labels (known labels: {design.labels.values}) for ids", raw, repr(py_scalar(raw_labels[i]))
            )
        else:
            pos.append(int(j))
            values.append(canon[i])
            kept.append(i)
        if rid is not None:
            seen.add(rid)
    return pos, values, kept


def _probabilities(values: np.ndarray, name: str) -> np.ndarray:
    """Inclusion probabilities as floats in (0, 1], or raise naming ``inclusion``."""
    out = np.empty(len(values))
    for i, v in enumerate(values):
        v = py_scalar(v)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v <= 1
        if not ok:
            raise ValueError(
                f"design.inclusion={name!r} must hold probabilities in (0, 1] on every labelled row, got {v!r}"
            )
        out[i] = float(v)
    return out


def _unequal_inclusion(values: np.ndarray, codes: np.ndarray, name: str, design: PoolDesign) -> str | None:
    """Where inclusion probabilities differ within a stratum (the first such stratum), or None."""
    probs = _probabilities(values, name)
    for code in np.unique(codes):
        p = probs[codes == code]
        lo, hi = float(p.min()), float(p.max())
        if hi - lo > EQUAL_TOLERANCE * hi:
            key = design.keys[int(code)]
            stratum = key[0] if len(key) == 1 else key
            return f"design.inclusion={name!r}: probabilities differ within stratum {stratum!r} ({lo:g} to {hi:g})"
    return None


def check_seed_settings(spec: Any, unequal: str) -> None:
    """Raise unless the campaign can read labels of unequal inclusion as a seed cell.

    The seed cell changes each stratum's interval (:func:`seed_cell_bounds`); the campaign
    reads it for goal ``"each"`` under ``guarantee="stratum"``, one metric whose trials the
    prediction fixes (``error_rate``, ``accuracy``, ``precision``, ``npv``: the seed cell's
    share of the stratum's trials is then known), without a proxy or ``anytime``. Goals
    ``"overall"``, ``"gap"`` and ``"decide"`` and the pooled posterior read the labelled
    counts as a random sample, which these labels are not.

    Parameters
    ----------
    spec : CampaignSpec
        The campaign's settings.
    unequal : str
        Where the inclusion probabilities differ (starts the message).

    Examples
    --------
    >>> from bayeseval.campaign.spec import CampaignSpec
    >>> check_seed_settings(CampaignSpec(strata="g", y_pred="pred"), "design.inclusion='p': ...")
    >>> check_seed_settings(CampaignSpec(strata="g", y_pred="pred", goal="overall"), "design.inclusion='p': ...")
    Traceback (most recent call last):
    ...
    ValueError: design.inclusion='p': ...; labels chosen with unequal probabilities are read as a seed cell beside the campaign's random draws, which only goal='each' reads; got goal='overall'
    """
    from bayeseval.counts.proxy import PROXY_METRICS

    metric = spec.metrics[0]
    checks = (
        (spec.goal.name != "each", f"goal='each' reads; got goal={spec.goal.name!r}"),
        (not spec.guarantee.per_stratum, f"guarantee='stratum' reads; got guarantee={spec.guarantee.name!r}"),
        (spec.guarantee.sequential, "a fixed-level interval reads, not anytime=True"),
        (spec.proxy is not None, f"a campaign without a proxy reads; got proxy={spec.proxy!r}"),
        (len(spec.metrics) > 1, f"a campaign on one metric reads; got metrics={list(spec.metrics)}"),
        (
            metric not in PROXY_METRICS,
            f"a metric whose trials the prediction fixes {list(PROXY_METRICS)} reads; got metric={metric!r}",
        ),
    )
    for bad, what in checks:
        if bad:
            raise ValueError(
                f"{unequal}; labels chosen with unequal probabilities are read as a seed cell beside "
                f"the campaign's random draws, which only {what}"
            )


def seed_cell_bounds(
    seed: tuple[Any, Any], labelled: tuple[Any, Any], pool_trials: Any, level: float, method: str = SEED_METHOD
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Each stratum's rate from a fully labelled seed cell and random draws from the rest.

    With ``n0`` seed trials (``s0`` successes), ``n`` labelled trials in all (``s``
    successes) and ``N`` trials in the stratum's pool, the estimate is
    ``n0/N * s0/n0 + (N - n0)/N * (s - s0)/(n - n0)`` and the interval the MOVER interval of
    the two cells (:func:`~bayeseval._kernels.proxy.cells_interval`) with ``method``'s limits
    at ``level``. The seed rows may have been chosen by any rule; the rest must be labelled at
    random. A stratum whose rest has rows but no label has a NaN estimate and the rest's rate
    in ``[0, 1]``.

    Parameters
    ----------
    seed : tuple of array_like
        Successes and trials of the seed rows, per stratum.
    labelled : tuple of array_like
        Successes and trials of every labelled row (seed rows included), per stratum.
    pool_trials : array_like
        Trials in each stratum's pool (its eligible rows).
    level : float
        Confidence level.
    method : str
        One-proportion method of the cells' limits.

    Returns
    -------
    estimate, lower, upper : numpy.ndarray

    Examples
    --------
    >>> # 50 seed rows, 20 errors; 40 random draws from the 950 others, 2 errors
    >>> est, lo, hi = seed_cell_bounds(([20], [50]), ([22], [90]), [1000], 0.95)
    >>> round(float(est[0]), 4)  # 0.05 * 0.4 + 0.95 * 0.05
    0.0675
    """
    s0, n0 = (np.asarray(x, dtype=float) for x in seed)
    s, n = (np.asarray(x, dtype=float) for x in labelled)
    total = np.asarray(pool_trials, dtype=float)
    size = np.maximum(total, 1.0)
    shares = np.stack([n0 / size, np.maximum(total - n0, 0.0) / size], axis=-1)
    est, lo, hi = cells_interval(
        np.stack([s0, s - s0], axis=-1), np.stack([n0, n - n0], axis=-1), shares, level, method
    )
    known = (total > 0) & ((n > n0) | (total <= n0))
    return np.where(known, est, np.nan), np.where(total > 0, lo, 0.0), np.where(total > 0, hi, 1.0)


def existing_labels(
    labels: Any, inclusion: Any, pool: pd.DataFrame, rids: list[Any], integer: bool, design: PoolDesign, metric: str
) -> ExistingLabels | None:
    """Check the labels a campaign starts from and turn them into stored labels (or raise).

    Parameters
    ----------
    labels : pandas.Series, pandas.DataFrame, dict, str or None
        As :meth:`Campaign.create <bayeseval.campaign.Campaign.create>` takes them.
    inclusion : str or None
        The column of each labelled row's inclusion probability.
    pool : pandas.DataFrame
        The pool, indexed by row id.
    rids : list
        The pool's row ids as stored.
    integer : bool
        Whether the row ids are integers.
    design : PoolDesign
        The pool as the campaign sees it (strata, known labels, predictions).
    metric : str
        The metric whose trial and success flags the labels table stores.

    Returns
    -------
    ExistingLabels or None
        None when ``labels`` is None or holds no row.

    Examples
    --------
    >>> from bayeseval.campaign.loop.pool import design_pool
    >>> from bayeseval.campaign.spec import CampaignSpec
    >>> pool = pd.DataFrame({"g": ["a", "b"] * 3, "pred": [0, 1, 1, 0, 1, 1]})
    >>> design = design_pool(CampaignSpec(strata="g", y_pred="pred"), pool)
    >>> got = existing_labels(pd.Series([1, 1], index=[0, 1]), None, pool, list(range(6)), True, design, "error_rate")
    >>> got.rows
    [(0, 1, 1, 1, 0), (1, 1, 1, 0, 1)]
    """
    if labels is None:
        if inclusion is not None:
            raise TypeError(f"design.inclusion={inclusion!r} applies to labels: give labels too")
        return None
    raw_ids, raw_labels, raw_incl = _raw(labels, inclusion, pool)
    if len(raw_ids) == 0:
        return None
    problems = LabelProblems("no campaign created")
    pos, values, kept = _check_rows(raw_ids, raw_labels, rids, integer, design, problems)
    problems.raise_if_any()
    codes = design.codes[pos]
    unequal = None if raw_incl is None else _unequal_inclusion(raw_incl[kept], codes, inclusion, design)
    trial, success = metric_flags(get_metric(metric), values, design.y_pred[pos], design.positive)
    rows = [
        (rids[j], py_scalar(v), int(t), int(s), int(c))
        for j, v, t, s, c in zip(pos, values, trial, success, codes, strict=True)
    ]
    per = np.bincount(codes, minlength=len(design.keys)).tolist()
    meta = {
        "rows": len(rows),
        "design": RANDOM_DESIGN if unequal is None else SEED_DESIGN,
        "inclusion": inclusion,
        "per_stratum": per,
    }
    return ExistingLabels(rows=rows, meta=json.dumps(meta), unequal=unequal)
