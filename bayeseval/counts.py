"""Counts: successes and trials per stratum, the structure every estimator works on.

Only :func:`tabulate` touches row-level data; everything downstream works on
the sufficient statistics held by :class:`Counts`, so it costs the same for a
thousand rows or a billion.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import align_by_label, check_counts, check_weights, iter_columns
from bayeseval._warnings import EmptyStratumWarning
from bayeseval.metrics import Metric, get_metric

__all__ = ["Counts", "tabulate"]


@dataclass(frozen=True, eq=False)
class Counts:
    """Successes and trials per stratum, with the stratum labels as a pandas index.

    Build one with :func:`tabulate` from a predictions frame, or with
    :meth:`Counts.from_arrays` from numbers you already have.

    Parameters
    ----------
    successes, trials : pandas.Series
        Counts indexed by stratum; ``trials`` is paired with ``successes`` by
        label.
    metric : str, optional
        Name of the metric the counts measure.
    weights : array-like, dict or Series, optional
        Population shares of the strata, summing to 1.

    Attributes
    ----------
    successes, trials : pandas.Series
        Integer counts indexed by stratum (a plain or a multi-level index),
        paired by stratum label (``trials`` is put in the order of
        ``successes``); each count is a whole number from 0 to 2**53 and the
        totals fit a 64-bit integer.
    metric : str or None
        Name of the metric the counts measure, when known.
    weights : pandas.Series or None
        Population shares of the strata (summing to 1), when known.

    Examples
    --------
    >>> c = Counts.from_arrays([3, 10], [40, 120], strata=["a", "b"])
    >>> c.rates.round(3).tolist()
    [0.075, 0.083]
    """

    successes: pd.Series
    trials: pd.Series
    metric: str | None = None
    weights: pd.Series | None = field(default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.successes, pd.Series) or not isinstance(self.trials, pd.Series):
            raise TypeError("Counts.successes and Counts.trials must be pandas Series")
        if not self.successes.index.equals(self.trials.index):
            # paired by stratum label (raises naming both when the label sets differ)
            _, trials = align_by_label(("successes", self.successes), ("trials", self.trials))
            object.__setattr__(self, "trials", trials)
        if self.successes.index.has_duplicates:
            dup = self.successes.index[self.successes.index.duplicated()][0]
            raise ValueError(f"strata must be unique, got {dup!r} twice")
        s, n = check_counts(self.successes.to_numpy(), self.trials.to_numpy())
        index = self.successes.index
        object.__setattr__(self, "successes", pd.Series(s, index=index, name="successes"))
        object.__setattr__(self, "trials", pd.Series(n, index=index, name="trials"))
        if self.weights is not None:
            w = check_weights(self.weights, index)
            object.__setattr__(self, "weights", pd.Series(w, index=index, name="weights"))

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        successes: Any,
        trials: Any,
        *,
        strata: Sequence[Hashable] | pd.Index | None = None,
        weights: Any = None,
        metric: str | None = None,
    ) -> Counts:
        """Build Counts from arrays (or Series) of successes and trials.

        Parameters
        ----------
        successes, trials : array-like or pandas.Series
            Counts per stratum: whole numbers from 0 to 2**53 (larger ones are
            not exact as floats), with totals that fit a 64-bit integer. If
            ``successes`` is a Series its index names the strata. Two Series
            are paired by index label, not position (the order of
            ``successes`` is kept); their indexes must hold the same labels.
        strata : sequence, optional
            Stratum labels; defaults to the Series index or ``0..K-1``.
        weights : array-like, dict or Series, optional
            Population shares, summing to 1.
        metric : str, optional
            Name of the metric.

        Returns
        -------
        Counts
            The validated counts (``successes`` itself when it is a Counts).

        Examples
        --------
        >>> Counts.from_arrays([1, 2], [10, 20]).to_frame().shape
        (2, 2)
        >>> s = pd.Series([1, 2], index=["a", "b"])
        >>> n = pd.Series([10, 3], index=["b", "a"])
        >>> Counts.from_arrays(s, n).trials.to_dict()
        {'a': 3, 'b': 10}
        """
        if isinstance(successes, Counts):
            return successes
        successes, trials = align_by_label(("successes", successes), ("trials", trials))
        if strata is None:
            if isinstance(successes, pd.Series):
                strata = successes.index
            elif isinstance(trials, pd.Series):
                strata = trials.index
        s, n = check_counts(successes, trials)
        s, n = np.atleast_1d(s), np.atleast_1d(n)
        if s.ndim != 1:
            raise ValueError(f"successes and trials must be one-dimensional, got shape {s.shape}")
        if strata is None:
            index = pd.RangeIndex(len(s), name="stratum")
        else:
            index = strata if isinstance(strata, pd.Index) else pd.Index(list(strata), name="stratum")
            if len(index) != len(s):
                raise ValueError(
                    f"strata has {len(index)} labels but there are {len(s)} counts"
                )
        return cls(
            pd.Series(s, index=index), pd.Series(n, index=index), metric=metric, weights=weights
        )

    # -- views ----------------------------------------------------------------------------
    @property
    def strata(self) -> pd.Index:
        """The stratum labels."""
        return self.successes.index

    @property
    def rates(self) -> pd.Series:
        """Raw rates ``successes / trials`` (NaN where a stratum has no trials)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            r = self.successes.to_numpy() / self.trials.to_numpy()
        r = np.where(self.trials.to_numpy() > 0, r, np.nan)
        return pd.Series(r, index=self.strata, name="rate")

    @property
    def empty(self) -> pd.Index:
        """Strata with zero trials (kept, flagged, never silently dropped)."""
        return self.strata[self.trials.to_numpy() == 0]

    @property
    def total_successes(self) -> int:
        """Successes summed over strata."""
        return int(self.successes.sum())

    @property
    def total_trials(self) -> int:
        """Trials summed over strata."""
        return int(self.trials.sum())

    @property
    def sample_shares(self) -> pd.Series:
        """Each stratum's share of the trials in the sample."""
        total = self.total_trials
        return (self.trials / total if total else self.trials * np.nan).rename("sample_share")

    def __len__(self) -> int:
        return len(self.successes)

    def __repr__(self) -> str:
        metric = f" metric={self.metric!r}" if self.metric else ""
        return (
            f"<Counts{metric} strata={len(self)} successes={self.total_successes} "
            f"trials={self.total_trials}>"
        )

    def to_frame(self) -> pd.DataFrame:
        """A DataFrame indexed by stratum with columns ``successes`` and ``trials``.

        Returns
        -------
        pandas.DataFrame
            One row per stratum.

        Examples
        --------
        >>> Counts.from_arrays([1], [4], strata=["x"]).to_frame().loc["x", "trials"]
        np.int64(4)
        """
        frame = pd.DataFrame({"successes": self.successes, "trials": self.trials})
        return frame

    def to_xarray(self) -> Any:
        """An xarray Dataset with ``successes``, ``trials`` (and ``weights``) over ``stratum``.

        A multi-level stratum index becomes one ``stratum`` dimension whose labels
        are the joined level values, with each level kept as a coordinate.

        Returns
        -------
        xarray.Dataset
            One ``stratum`` dimension; the metric name (if any) in ``attrs``.
        """
        import xarray as xr

        frame = self.to_frame()
        if self.weights is not None:
            frame["weights"] = self.weights
        index = self.strata
        labels = stratum_labels(index)
        ds = xr.Dataset(
            {col: ("stratum", frame[col].to_numpy()) for col in frame.columns},
            coords={"stratum": labels},
        )
        if isinstance(index, pd.MultiIndex):
            for i, name in enumerate(index.names):
                # a level called "stratum" must not overwrite the joined dimension labels
                coord = str(name) if name is not None and str(name) != "stratum" else f"level_{i}"
                ds = ds.assign_coords({coord: ("stratum", index.get_level_values(i).to_numpy())})
        if self.metric:
            ds.attrs["metric"] = self.metric
        return ds

    def with_weights(self, weights: Any) -> Counts:
        """Return a copy carrying population shares ``weights`` (summing to 1).

        Parameters
        ----------
        weights : array-like, dict or Series
            Population share of each stratum, summing to 1.

        Returns
        -------
        Counts
            The same counts with ``weights`` set.
        """
        return Counts(self.successes, self.trials, metric=self.metric, weights=weights)

    def subset(self, strata: Iterable[Hashable]) -> Counts:
        """Counts restricted to the given strata (weights dropped, since they no longer sum to 1).

        Parameters
        ----------
        strata : iterable
            Labels of the strata to keep, in the order wanted.

        Returns
        -------
        Counts
            The selected strata, without weights.
        """
        keep = list(strata)
        return Counts(self.successes.loc[keep], self.trials.loc[keep], metric=self.metric)

    def __add__(self, other: Counts) -> Counts:
        if not isinstance(other, Counts):
            return NotImplemented
        index = self.strata.union(other.strata, sort=False)
        s = self.successes.reindex(index, fill_value=0) + other.successes.reindex(index, fill_value=0)
        n = self.trials.reindex(index, fill_value=0) + other.trials.reindex(index, fill_value=0)
        return Counts(s, n, metric=self.metric or other.metric)


def stratum_labels(index: pd.Index) -> list[str]:
    """String labels for a stratum index (levels of a MultiIndex joined by ``" | "``)."""
    if isinstance(index, pd.MultiIndex):
        return [" | ".join(str(v) for v in key) for key in index]
    return [str(v) for v in index]


def as_counts(
    successes: Any,
    trials: Any = None,
    *,
    strata: Any = None,
    weights: Any = None,
) -> Counts:
    """Accept either a :class:`Counts` or arrays of successes and trials."""
    if isinstance(successes, Counts):
        if trials is not None:
            raise TypeError("pass either a Counts object or successes and trials, not both")
        return successes if weights is None else successes.with_weights(weights)
    if trials is None:
        raise TypeError("trials is required when successes is not a Counts object")
    return Counts.from_arrays(successes, trials, strata=strata, weights=weights)


def _positive_label(metric: Metric, y_true: pd.Series, y_pred: pd.Series, pos_label: Any) -> Any:
    if pos_label is not None:
        return pos_label
    labels = set(pd.unique(y_true.dropna())) | set(pd.unique(y_pred.dropna()))
    if labels <= {0, 1} or labels <= {False, True}:
        return 1
    return None  # multi-class or unknown: one-vs-rest per class


def tabulate(
    data: pd.DataFrame | str | PathLike | Any,
    *,
    y_true: str,
    y_pred: str,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    pos_label: Any = None,
    weights: Mapping[Hashable, float] | pd.Series | None = None,
) -> Counts:
    """Turn a frame of predictions into :class:`Counts` per stratum.

    Parameters
    ----------
    data : pandas.DataFrame, path or DuckDB relation
        One row per example. A path to a Parquet or CSV file, or a DuckDB
        relation, is counted inside DuckDB without loading it into pandas.
    y_true, y_pred : str
        Columns holding the true and predicted labels.
    strata : str or list of str, optional
        Column(s) defining the strata. ``None`` gives one stratum ``"all"``.
    metric : str or Metric
        ``error_rate`` (default), ``accuracy``, ``recall``, ``precision``,
        ``fpr``, ``specificity`` or ``npv``.
    pos_label : optional
        The positive class for class-dependent metrics. For binary 0/1 or
        boolean labels it defaults to 1. When labels have more than two values
        and ``pos_label`` is None, the metric is computed one-vs-rest for every
        class and a ``class`` level is appended to the strata.
    weights : dict or Series, optional
        Population shares of the strata, summing to 1.

    Returns
    -------
    Counts
        Strata that have rows but no trials (e.g. no positives for recall) are
        kept with zero trials and an :class:`~bayeseval.EmptyStratumWarning`.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 1, 0, 1], "p": [1, 0, 0, 1], "g": ["a", "a", "b", "b"]})
    >>> tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall").to_frame()  # doctest: +NORMALIZE_WHITESPACE
       successes  trials
    g
    a          1       2
    b          1       1
    """
    m = get_metric(metric)
    if not isinstance(data, pd.DataFrame):
        from bayeseval import _duckdb

        if _duckdb.is_duckdb_source(data):
            counts = _duckdb.tabulate_duckdb(
                data, y_true=y_true, y_pred=y_pred, strata=strata, metric=m, pos_label=pos_label
            )
            return counts if weights is None else counts.with_weights(weights)
        raise TypeError(
            f"data must be a pandas DataFrame, a Parquet/CSV path or a DuckDB relation, got {type(data).__name__}"
        )
    cols = iter_columns(strata, "strata")
    for name, col in [("y_true", y_true), ("y_pred", y_pred)] + [("strata", c) for c in cols]:
        if col not in data.columns:
            raise ValueError(f"{name} column {col!r} is not in data; columns are {list(data.columns)[:20]}")
    if len(data) == 0:
        raise ValueError("data has no rows")
    truth, pred = data[y_true], data[y_pred]
    if truth.isna().any() or pred.isna().any():
        col = y_true if truth.isna().any() else y_pred
        raise ValueError(f"column {col!r} has missing labels; drop or fill them before tabulating")

    positive = _positive_label(m, truth, pred, pos_label) if m.needs_positive else None
    if m.needs_positive and positive is None:
        classes = sorted(set(pd.unique(truth)) | set(pd.unique(pred)), key=str)
        parts = []
        for cls in classes:
            part = _count(data, truth, pred, cols, m, cls)
            part["class"] = cls
            parts.append(part)
        frame = pd.concat(parts).reset_index()
        keys = (cols or ["stratum"]) + ["class"]
        frame = frame.set_index(keys).sort_index()
    else:
        frame = _count(data, truth, pred, cols, m, positive)
    counts = Counts(frame["successes"], frame["trials"], metric=m.name, weights=weights)
    if len(counts.empty):
        warnings.warn(
            f"{len(counts.empty)} strata have no trials for {m.name} and no rate: "
            f"{list(counts.empty[:5])}",
            EmptyStratumWarning,
            stacklevel=2,
        )
    return counts


def _count(
    data: pd.DataFrame,
    truth: pd.Series,
    pred: pd.Series,
    cols: list[str],
    metric: Metric,
    positive: Any,
) -> pd.DataFrame:
    trial, success = metric.masks(truth.to_numpy(), pred.to_numpy(), positive)
    if not cols:
        out = pd.DataFrame(
            {"successes": [int(success.sum())], "trials": [int(trial.sum())]},
            index=pd.Index(["all"], name="stratum"),
        )
        return out.astype(np.int64)
    if any(isinstance(data[c].dtype, pd.CategoricalDtype) for c in cols):
        # groupby keeps unobserved categories as empty strata
        work = pd.DataFrame({"successes": success.astype(np.int64), "trials": trial.astype(np.int64)})
        for c in cols:
            work[c] = data[c].array
        out = work.groupby(cols if len(cols) > 1 else cols[0], observed=False, sort=True, dropna=False)[
            ["successes", "trials"]
        ].sum()
        return out.astype(np.int64)
    return _count_codes(data, trial, success, cols)


def _count_codes(
    data: pd.DataFrame, trial: np.ndarray, success: np.ndarray, cols: list[str]
) -> pd.DataFrame:
    """Count by integer codes (factorize + bincount): the strata present in the rows, sorted.

    Gives the same table as ``groupby(cols, sort=True, dropna=False).sum()``
    without building a frame of the rows.
    """
    codes, levels = [], []
    for c in cols:
        code, uniques = pd.factorize(data[c], sort=True, use_na_sentinel=False)
        codes.append(code.astype(np.int64))
        levels.append(uniques)
    shape = tuple(len(u) for u in levels)
    combos = None
    if len(cols) == 1:
        flat, size = codes[0], shape[0]
    elif float(np.prod(shape, dtype=float)) <= max(4 * len(data), 1_000_000):
        flat, size = np.ravel_multi_index(codes, shape), int(np.prod(shape))
    else:  # many sparse combinations: number the observed ones only
        combos, flat = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        flat, size = flat.ravel(), len(combos)
    rows = np.bincount(flat, minlength=size)
    n_trials = np.bincount(flat, weights=trial, minlength=size)
    n_success = np.bincount(flat, weights=success, minlength=size)
    present = np.flatnonzero(rows)
    if len(cols) == 1:
        index = pd.Index(levels[0][present], name=cols[0])
    else:
        if combos is None:
            parts = np.unravel_index(present, shape)
        else:
            parts = tuple(combos[present, i] for i in range(len(cols)))
        index = pd.MultiIndex.from_arrays(
            [levels[i][parts[i]] for i in range(len(cols))], names=cols
        )
    return pd.DataFrame(
        {
            "successes": n_success[present].astype(np.int64),
            "trials": n_trials[present].astype(np.int64),
        },
        index=index,
    )
