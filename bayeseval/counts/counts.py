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

from bayeseval._api.results import Result
from bayeseval._api.validation import align_by_label, check_counts, check_weights, iter_columns
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval._backends.dispatch import backend_for
from bayeseval._backends.interface import BinaryQuery, ConfusionTable, UnitQuery
from bayeseval._kernels.naming import fresh_names
from bayeseval._render.formats import index_labels
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.labels import check_label_types, resolve_positive
from bayeseval.counts.metrics import Metric, get_metric
from bayeseval.counts.proxy import tabulate_proxy
from bayeseval.counts.units import (
    check_units,
    level_names,
    outcome_errors,
    units_frame,
    warn_if_clustered,
)

__all__ = ["Counts", "tabulate", "confusion_counts"]


@dataclass(frozen=True, eq=False, repr=False)
class Counts(Result):
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
    units : pandas.DataFrame, optional
        The histogram of the sampling units (:func:`tabulate` with ``outcome=`` or a
        ``design`` with a cluster): one row per distinct (stratum, ``unit_successes``,
        ``unit_trials``) with the stratum level(s) as columns, named as the index, and
        ``units``, how many units have that pair. Units with no trials are left out. With
        units, ``successes`` may be fractional (graded outcomes) and must equal the units'
        sums per stratum, as ``trials`` must.
    design : Design, optional
        The sampling design the rows were counted under.
    clusters_span_strata : bool
        Whether some cluster has rows (with trials) in more than one stratum; each part is
        then its stratum's unit.

    Attributes
    ----------
    successes, trials : pandas.Series
        Counts indexed by stratum (a plain or a multi-level index),
        paired by stratum label (``trials`` is put in the order of
        ``successes``); each count is a whole number from 0 to 2**53 and the
        totals fit a 64-bit integer. With ``units``, ``successes`` may be
        fractional (sums of graded outcomes in [0, 1]).
    metric : str or None
        Name of the metric the counts measure, when known.
    weights : pandas.Series or None
        Population shares of the strata (summing to 1), when known.
    units : pandas.DataFrame or None
        The units' histogram, when the rows were counted by unit.
    design : Design or None
        The sampling design, when stated.

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
    units: pd.DataFrame | None = None
    design: Design | None = None
    clusters_span_strata: bool = False

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
        index = self.successes.index
        if self.design is not None:
            object.__setattr__(self, "design", as_design(self.design))
        if self.units is None:
            s, n = check_counts(self.successes.to_numpy(), self.trials.to_numpy())
        else:
            s, n, units = check_units(self.successes.to_numpy(), self.trials.to_numpy(), index, self.units)
            object.__setattr__(self, "units", units)
        object.__setattr__(self, "clusters_span_strata", bool(self.clusters_span_strata))
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
                raise ValueError(f"strata has {len(index)} labels but there are {len(s)} counts")
        return cls(pd.Series(s, index=index), pd.Series(n, index=index), metric=metric, weights=weights)

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
    def total_successes(self) -> int | float:
        """Successes summed over strata (a float when graded outcomes make them fractional)."""
        total = self.successes.sum()
        return int(total) if self.successes.dtype.kind in "iu" else float(total)

    @property
    def n_units(self) -> pd.Series | None:
        """Sampling units (with at least one trial) per stratum; None without ``units``."""
        if self.units is None:
            return None
        names = level_names(self.strata)
        per = self.units.groupby(names, observed=True, sort=False)["units"].sum()
        if len(names) == 1:
            per.index = per.index.rename(self.strata.name)
        return per.reindex(self.strata, fill_value=0).astype(np.int64).rename("n_units")

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

    def _heading(self) -> str:
        metric = f" metric={self.metric!r}" if self.metric else ""
        units = f" units={int(self.units['units'].sum())}" if self.units is not None else ""
        s = self.total_successes
        s_text = f"{s:g}" if isinstance(s, float) else str(s)
        return f"<Counts{metric} strata={len(self)} successes={s_text} trials={self.total_trials}{units}>"

    @property
    def table(self) -> pd.DataFrame:
        """Successes and trials per stratum (``n_units`` with units, ``weights`` when given), indexed by stratum."""
        frame = self.to_frame()
        if self.units is not None:
            frame["n_units"] = self.n_units
        if self.weights is not None:
            frame["weights"] = self.weights
        return frame

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
        return Counts(
            self.successes,
            self.trials,
            metric=self.metric,
            weights=weights,
            units=self.units,
            design=self.design,
            clusters_span_strata=self.clusters_span_strata,
        )

    def subset(self, strata: Iterable[Hashable]) -> Counts:
        """Counts restricted to the given strata (weights dropped, since they no longer sum to 1).

        Parameters
        ----------
        strata : iterable
            Labels of the strata to keep, in the order wanted.

        Returns
        -------
        Counts
            The selected strata, without weights (with their units, when the counts have units).
        """
        keep = list(strata)
        units = None
        if self.units is not None:
            names = level_names(self.strata)
            rows = pd.MultiIndex.from_frame(self.units[names]) if len(names) > 1 else pd.Index(self.units[names[0]])
            units = self.units[rows.isin(self.strata[self.strata.get_indexer(keep)])].reset_index(drop=True)
        return Counts(
            self.successes.loc[keep],
            self.trials.loc[keep],
            metric=self.metric,
            units=units,
            design=self.design,
            clusters_span_strata=self.clusters_span_strata,
        )

    def __add__(self, other: Counts) -> Counts:
        """Counts of two sets of rows together; the units of the two are taken as distinct units."""
        if not isinstance(other, Counts):
            return NotImplemented
        index = self.strata.union(other.strata, sort=False)
        s = self.successes.reindex(index, fill_value=0) + other.successes.reindex(index, fill_value=0)
        n = self.trials.reindex(index, fill_value=0) + other.trials.reindex(index, fill_value=0)
        units = None
        if (self.units is None) != (other.units is None) or self.design != other.design:
            if self.units is not None or other.units is not None:
                raise ValueError(
                    "cannot add Counts counted under different designs (units or design differ): "
                    f"got design {self.design!r} and {other.design!r}"
                )
        if self.units is not None and other.units is not None:
            names = level_names(self.strata)
            both = pd.concat([self.units, other.units], ignore_index=True)
            units = both.groupby(names + ["unit_successes", "unit_trials"], observed=True, sort=True)["units"].sum()
            units = units.reset_index()
        return Counts(
            s,
            n,
            metric=self.metric or other.metric,
            units=units,
            design=self.design,
            clusters_span_strata=self.clusters_span_strata or other.clusters_span_strata,
        )


def stratum_labels(index: pd.Index) -> list[str]:
    """String labels for a stratum index (levels of a MultiIndex joined by ``" | "``)."""
    return index_labels(index)


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


def tabulate(
    data: pd.DataFrame | str | PathLike | Any,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    outcome: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric | None = None,
    pos_label: Any = None,
    weights: Mapping[Hashable, float] | pd.Series | None = None,
    proxy: str | None = None,
    label_set: Sequence[Any] | None = None,
    design: Design | Mapping[str, Any] | None = None,
) -> Counts | Any:
    """Turn a frame of predictions (or of per-row outcomes) into :class:`Counts` per stratum.

    Every engine computes the same small confusion table (rows per stratum x
    true label x predicted label) and :func:`confusion_counts` applies the
    metric to it, so pandas, DuckDB and Spark give identical Counts.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation, Spark DataFrame or any frame narwhals reads
        One row per example. A path to a Parquet or CSV file (or a glob), or a
        DuckDB relation, is counted inside DuckDB without loading it into
        pandas; a PySpark DataFrame is counted by Spark; any other frame narwhals reads
        (polars eager or lazy, pyarrow, Dask, Ibis, Modin...) by its own engine.
    y_true, y_pred : str
        Columns holding the true and predicted labels: classes (strings, bools or whole
        numbers; ``0.0``/``1.0``, as pandas reads an integer column with NaN, are the classes
        0 and 1). A fractional number, such as a score, is refused: every distinct value would
        count as its own class. Give both, or ``outcome`` instead.
    outcome : str, optional
        Instead of ``y_true`` and ``y_pred``: a column of per-row outcomes in [0, 1], such as
        0/1 correctness or partial credit (Inspect's C/P/I read as 1/0.5/0). Every row is a
        trial and the metric is the mean outcome: ``accuracy`` (the default with ``outcome``)
        sums the outcomes, ``error_rate`` sums ``1 - outcome``; other metrics are refused. The
        result carries the units' histogram (``Counts.units``; each row its own unit without
        a cluster), and its successes are fractional when outcomes are. A missing outcome or
        one outside [0, 1] is refused (the message names the column, a value and the rows).
    strata : str or list of str, optional
        Column(s) defining the strata. ``None`` gives one stratum ``"all"``.
    metric : str or Metric, optional
        A name or alias of :func:`~bayeseval.get_metric`: ``error_rate``
        (the default with labels), ``accuracy``, ``recall`` (``tpr``), ``precision`` (``ppv``),
        ``fpr``, ``specificity`` (``tnr``), ``npv``, ``fnr`` or ``selection_rate``. With
        ``outcome``: ``accuracy`` (the default) or ``error_rate``.
    pos_label : optional
        The positive class for class-dependent metrics. For binary 0/1 or
        boolean labels it defaults to 1. Two other label values (e.g.
        ``"yes"``/``"no"``) need ``pos_label``. With more than two label values
        and ``pos_label`` None, the metric is computed one-vs-rest for every
        class and a ``class`` level is appended to the strata.
    weights : dict or Series, optional
        Population shares of the strata, summing to 1 (not with ``proxy``).
    proxy : str, optional
        A column known on every row: a cheap label of the same kind as ``y_true`` (a
        judge's label, a stronger model's prediction) or a number (a probability, a
        score, binned into five equal-count cells per stratum). With it, rows whose
        ``y_true`` is missing are the unlabelled rows, and the result is a
        :class:`~bayeseval.counts.ProxyCounts`: labelled successes and trials and the
        pool's trials per stratum and proxy cell. Metrics: ``error_rate``, ``accuracy``,
        ``precision``, ``npv`` (trials known without the true label). pandas and DuckDB
        data only.
    label_set : sequence, optional
        With ``proxy``: every class ``y_true`` may hold. A true label that neither the
        predictions nor a label proxy take (such as ``-1`` marking unlabelled rows) is
        refused unless declared here; unlabelled rows hold a missing value.
    design : Design or dict, optional
        The sampling design (:class:`~bayeseval.Design`). ``cluster``: a column whose rows,
        within a stratum, form one sampling unit; the result then carries ``units``, the
        histogram of the units' (summed outcome, trials) per stratum, while ``successes`` and
        ``trials`` stay the sums over rows. For per-stratum counts the unit is the pair
        (stratum, cluster value): a cluster whose rows fall in two strata is one unit in each,
        and ``Counts.clusters_span_strata`` records that this happened (an estimator of the
        overall rate must handle or refuse it). ``inclusion``: with ``proxy``, a column
        holding each labelled row's inclusion probability (the chance it was chosen for
        labelling); the result then carries the sums of their inverses (without it the
        labelled rows are taken as drawn at random within each stratum). ``population`` is
        carried to the estimators. None: each row its own unit, as before, and a
        :class:`~bayeseval.ClusteredRowsWarning` when an identifier-like column (``id``,
        ``item``, ``sample_id``, ``doc_id``, ...) repeats values; ``Design()`` states that
        the rows are independent and silences it.

    Returns
    -------
    Counts or ProxyCounts
        Strata that have rows but no trials (e.g. no positives for recall) are
        kept with zero trials and an :class:`~bayeseval.EmptyStratumWarning`.
        A ``ProxyCounts`` with ``proxy``. With ``outcome`` or a cluster the Counts
        carry ``units`` and ``design``.

    Raises
    ------
    ValueError
        A column is missing; a label column holds a fractional number (the
        message names the column and one such value); labels or strata hold
        missing values (NaN, None, ``pd.NA`` or SQL NULL: the message names the
        column and the number of rows; with ``proxy``, a missing ``y_true`` marks an
        unlabelled row); ``y_true`` holds a string that stands for a missing label
        (``""``, ``"None"``, ``"NA"``, ``"?"``, ...) and that no prediction takes; a true
        label and a prediction equal but for spaces or case (``"cat "``, ``"cat"``); the two
        label columns hold different types (numbers and strings); a ``pos_label`` that no
        row holds as truth or prediction; two non-0/1 labels without ``pos_label`` for a class metric;
        or DuckDB cannot read the data (the message names the path).
    TypeError
        ``data`` is of an unsupported type; both or neither of ``outcome`` and the label
        columns are given.

    Notes
    -----
    Counting by unit runs in the engine: a first aggregation by (stratum, cluster) gives each
    unit's sums, a second by (stratum, unit sum, unit trials) counts the units; a unit's sum of
    graded outcomes is rounded to 9 decimals so that every engine gives the same histogram.
    Spark DataFrames are counted by unit in Spark (the two aggregations written in narwhals).

    A pandas frame is counted without a copy of its rows: boolean, small integer
    and categorical columns by a chunked ``bincount``; other large frames by
    DuckDB scanning the frame in place; small ones by factorizing. All paths
    give the same confusion table, hence the same Counts and errors.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 1, 0, 1], "p": [1, 0, 0, 1], "g": ["a", "a", "b", "b"]})
    >>> tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall").to_frame()  # doctest: +NORMALIZE_WHITESPACE
       successes  trials
    g
    a          1       2
    b          1       1

    Answers to items in several epochs, graded, counted with the item as the unit:

    >>> ans = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "score": [1, 0.5, 1, 1, 0, 0], "g": list("aabbbb")})
    >>> c = tabulate(ans, outcome="score", strata="g", design=Design(cluster="item"))
    >>> c.units  # doctest: +NORMALIZE_WHITESPACE
       g  unit_successes  unit_trials  units
    0  a             1.5            2      1
    1  b             0.0            2      1
    2  b             2.0            2      1
    >>> c.design.describe(c)
    '3 items in 2 strata, 2 rows each; intervals treat the item as the unit'
    """
    d = as_design(design) if design is not None else None
    if outcome is not None and (y_true is not None or y_pred is not None):
        raise TypeError(
            "give either outcome (per-row outcomes) or y_true and y_pred (labels), not both: got "
            f"outcome={outcome!r}, y_true={y_true!r}, y_pred={y_pred!r}"
        )
    if outcome is None and (y_true is None or y_pred is None):
        raise TypeError(
            f"y_true and y_pred are required (or outcome instead), got y_true={y_true!r}, y_pred={y_pred!r}"
        )
    inclusion = d.inclusion if d is not None else None
    if proxy is not None or inclusion is not None:
        if outcome is not None:
            raise ValueError(
                f"outcome is not taken with a proxy design yet: give y_true and y_pred, got outcome={outcome!r}"
            )
        return _tabulate_proxy(
            data,
            y_true=y_true,
            y_pred=y_pred,
            strata=strata,
            metric="error_rate" if metric is None else metric,
            pos_label=pos_label,
            weights=weights,
            proxy=proxy,
            design=d,
            label_set=label_set,
        )
    if label_set is not None:
        raise TypeError(
            f"label_set declares the classes of the labelled rows of a proxy design: "
            f"give proxy too, got label_set={label_set!r} and proxy=None"
        )
    cols = iter_columns(strata, "strata")
    if outcome is not None:
        counts = _tabulate_outcome(data, outcome, cols, metric, pos_label, weights, d)
    else:
        assert y_true is not None and y_pred is not None
        counts = _tabulate_labels(data, y_true, y_pred, cols, metric, pos_label, weights, d)
    _warn_empty(counts, get_metric(counts.metric or "error_rate"), stacklevel=3)
    return counts


def _tabulate_labels(
    data: Any, y_true: str, y_pred: str, cols: list[str], metric: Any, pos_label: Any, weights: Any, d: Design | None
) -> Counts:
    """Counts of a metric of label columns (with the units' histogram when ``d`` has a cluster)."""
    m = get_metric("error_rate" if metric is None else metric)
    cluster = d.cluster if d is not None else None
    backend = backend_for(data)
    backend.check_columns(
        [("y_true", y_true), ("y_pred", y_pred)]
        + [("strata", c) for c in cols]
        + ([("design.cluster", cluster)] if cluster is not None else [])
    )
    backend.check_labels([("y_true", y_true), ("y_pred", y_pred)])
    if cluster is not None and d is not None and not m.needs_positive:
        counts = _label_counts_from_units(backend, cols, y_true, y_pred, m, cluster, weights, d)
        if counts is not None:
            return counts
    # with a cluster, the one-pass count of 0/1 labels only where the engine evaluates the label
    # cells as numbers on boolean columns too (pandas, DuckDB); elsewhere the confusion table
    binary = cluster is None or backend.engine in _BINARY_UNIT_ENGINES
    frame = _binary_counts(backend, cols, y_true, y_pred, m, pos_label) if binary else None
    if frame is None and cluster is None and pos_label is not None:
        frame = _named_counts(backend, cols, y_true, y_pred, m, pos_label)
    table = None
    if frame is not None:
        counts = Counts(frame["successes"], frame["trials"], metric=m.name, weights=weights)
    else:
        table = backend.confusion(cols, y_true, y_pred)
        counts = _counts_from_table(table, m, pos_label, weights)
    if d is None:
        warn_if_clustered(backend, cols, exclude=(y_true, y_pred))
        return counts
    if cluster is None:
        return Counts(counts.successes, counts.trials, metric=counts.metric, weights=counts.weights, design=d)
    outcome_errors(backend, None, cluster)
    return _with_label_units(backend, table, counts, m, pos_label, cols, (y_true, y_pred, cluster), d)


#: engines whose unit counts read 0/1 label cells given as the integers 0 and 1 on boolean columns
_BINARY_UNIT_ENGINES = ("pandas", "duckdb")


def _tabulate_outcome(
    data: Any, outcome: str, cols: list[str], metric: Any, pos_label: Any, weights: Any, d: Design | None
) -> Counts:
    """Counts of per-row outcomes in [0, 1], with the units' histogram (each row a unit without a cluster)."""
    m = get_metric("accuracy" if metric is None else metric)
    if m.name not in ("accuracy", "error_rate"):
        raise ValueError(
            f"with outcome the metric is the mean outcome: metric must be 'accuracy' (the default) or "
            f"'error_rate' (1 - outcome), got metric={m.name!r}"
        )
    if pos_label is not None:
        raise ValueError(f"pos_label applies to label columns, not to outcome; got pos_label={pos_label!r}")
    cluster = d.cluster if d is not None else None
    backend = backend_for(data)
    backend.check_columns(
        [("outcome", outcome)] + [("strata", c) for c in cols] + ([("design.cluster", cluster)] if cluster else [])
    )
    if not isinstance(data, pd.DataFrame) or len(data):
        outcome_errors(backend, outcome, cluster)
    unit = backend.unit_counts(UnitQuery(cols, cluster, outcome=outcome, flip=m.name == "error_rate"))
    table = unit.table
    if not len(table):
        raise ValueError("data has no rows")
    k = len(cols)
    if k:
        work = table[list(range(k))].copy()
        for i, name in enumerate(cols):
            missing = pd.isna(work[i]).to_numpy(bool)
            if missing.any():
                rows = int((table["n"] * table["t"]).to_numpy()[missing].sum())
                raise ValueError(
                    f"strata column {name!r} has missing values in {rows} row{'s' if rows != 1 else ''} "
                    "(NaN, None, NA or NULL); drop or fill them before tabulating"
                )
        work["successes"] = table["n"] * table["s"]
        work["trials"] = table["n"] * table["t"]
        per = work.groupby(list(range(k)), observed=False, sort=True, dropna=False)[["successes", "trials"]].sum()
        per.index = per.index.set_names(cols)
    else:
        per = pd.DataFrame(
            {"successes": [float((table["n"] * table["s"]).sum())], "trials": [int((table["n"] * table["t"]).sum())]},
            index=pd.Index(["all"], name="stratum"),
        )
    names = level_names(per.index)
    if d is None:
        warn_if_clustered(backend, cols, exclude=(outcome,))
    return Counts(
        per["successes"].astype(float),
        per["trials"].astype(np.int64),
        metric=m.name,
        weights=weights,
        units=units_frame(unit, names, cols),
        design=d if d is not None else Design(),
        clusters_span_strata=unit.spanning > 0,
    )


def _unit_query(
    cols: list[str], cluster: str, y_true: str, y_pred: str, m: Metric, t_vals: Any, p_vals: Any, positive: Any
) -> UnitQuery:
    """The units query of metric ``m``: its trial and success cells among the label pairs (t, p)."""
    trial, success = m.masks(t_vals, p_vals, positive)
    return UnitQuery(
        cols,
        cluster,
        y_true=y_true,
        y_pred=y_pred,
        trial_cells=tuple(zip(t_vals[trial], p_vals[trial], strict=True)),
        success_cells=tuple(zip(t_vals[success], p_vals[success], strict=True)),
        metric=m,
        positive=positive,
    )


def _label_counts_from_units(
    backend: Any, cols: list[str], y_true: str, y_pred: str, m: Metric, cluster: str, weights: Any, d: Design
) -> Counts | None:
    """Counts with clusters of a metric whose every row is a trial, from the units' histogram alone.

    For a pandas frame whose label, stratum and cluster columns are NumPy booleans or integers,
    the labels all 0 or 1 (no missing value can hide there): every row is in one unit, so a
    stratum's successes and trials are its units' sums, and the rows are grouped once (by
    cluster) instead of twice. None otherwise (the caller counts by stratum, then by unit).
    """
    if backend.engine != "pandas" or not backend.zero_one_labels(cols, y_true, y_pred, cluster):
        return None
    query = _unit_query(cols, cluster, y_true, y_pred, m, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), None)
    unit = backend.unit_counts(query)
    table = unit.table
    if not len(table):
        return None
    k = len(cols)
    work = pd.DataFrame(
        {"successes": table["n"] * np.round(table["s"]).astype(np.int64), "trials": table["n"] * table["t"]}
    )
    if k:
        for i in range(k):
            work[i] = table[i]
        per = work.groupby(list(range(k)), sort=True)[["successes", "trials"]].sum()
        per.index = per.index.set_names(cols)
    else:
        per = work[["successes", "trials"]].sum().to_frame().T.set_axis(pd.Index(["all"], name="stratum"))
    names = level_names(per.index)
    return Counts(
        per["successes"].astype(np.int64),
        per["trials"].astype(np.int64),
        metric=m.name,
        weights=weights,
        units=units_frame(unit, names, cols),
        design=d,
        clusters_span_strata=unit.spanning > 0,
    )


def _with_label_units(
    backend: Any,
    table: ConfusionTable | None,
    counts: Counts,
    m: Metric,
    pos_label: Any,
    cols: list[str],
    columns: tuple[str, str, str],
    d: Design,
) -> Counts:
    """``counts`` with the units' histogram: the metric's cells of ``table`` summed per (stratum, cluster).

    ``columns`` are ``(y_true, y_pred, cluster)``. ``table`` None: the labels are known to be 0
    and 1 (:func:`_binary_counts` counted them), whose four pairs are the cells, the positive
    class ``pos_label`` or 1, as :func:`~bayeseval.counts.labels.resolve_positive` gives it.
    """
    y_true, y_pred, cluster = columns
    if table is not None:
        positive, classes = resolve_positive(m, table, pos_label)
        pairs = pd.DataFrame({"t": table.truth, "p": table.pred}).drop_duplicates()
        t_vals, p_vals = pairs["t"].to_numpy(), pairs["p"].to_numpy()
    else:
        positive = None if not m.needs_positive else (1 if pos_label is None else pos_label)
        classes = None
        t_vals, p_vals = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    names = level_names(counts.strata)
    parts, spanning = [], 0
    for cls in [positive] if classes is None else list(classes):
        query = _unit_query(cols, cluster, y_true, y_pred, m, t_vals, p_vals, cls)
        unit = backend.unit_counts(query)
        spanning = max(spanning, unit.spanning)
        frame = units_frame(unit, names[: len(cols)] or names[:1], cols)
        if classes is not None:
            frame.insert(len(names) - 1, names[-1], cls)
        parts.append(frame)
    units = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    if classes is not None:
        units = units.sort_values([*names, "unit_trials", "unit_successes"], kind="stable").reset_index(drop=True)
    return Counts(
        counts.successes,
        counts.trials,
        metric=counts.metric,
        weights=counts.weights,
        units=units,
        design=d,
        clusters_span_strata=spanning > 0,
    )


def _tabulate_proxy(data: Any, *, proxy: Any, design: Design | None, weights: Any, **kw: Any) -> Any:
    if proxy is None:
        raise ValueError(
            f"design.inclusion applies to the labelled rows of a proxy design: give proxy too, "
            f"got design={design!r} and proxy=None"
        )
    if weights is not None:
        raise ValueError(
            "weights (population shares) are not taken with proxy; give them to "
            "evaluate or to the stratified estimators"
        )
    if not isinstance(proxy, str):
        raise TypeError(f"proxy must be a column name (str), got {proxy!r}")
    return tabulate_proxy(backend_for(data), proxy=proxy, design=design, **kw)


def confusion_counts(
    table: pd.DataFrame,
    *,
    y_true: str,
    y_pred: str,
    count: str,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    pos_label: Any = None,
    weights: Mapping[Hashable, float] | pd.Series | None = None,
) -> Counts:
    """Apply a metric to a confusion table: rows per (stratum, true label, predicted label).

    The one place where counted rows become :class:`Counts`: :func:`tabulate`
    hands every engine's confusion table to the same rules (missing values
    refused, label types checked, the positive class resolved, the metric's
    trial and success cells summed per stratum). Use it directly for a table
    counted elsewhere (e.g. a ``GROUP BY`` in a data warehouse).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per cell; several rows of the same cell are added up.
    y_true, y_pred : str
        Columns holding the true and predicted label of each cell.
    count : str
        Column holding the number of rows in each cell (non-negative integers).
    strata, metric, pos_label, weights
        As in :func:`tabulate`.

    Returns
    -------
    Counts
        Successes and trials per stratum, as :func:`tabulate` gives on the expanded rows.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"g": ["a", "a", "b"], "y": [1, 1, 1], "p": [1, 0, 0], "n": [30, 10, 50]})
    >>> confusion_counts(t, y_true="y", y_pred="p", count="n", strata="g",
    ...                  metric="recall").to_frame()  # doctest: +NORMALIZE_WHITESPACE
       successes  trials
    g
    a         30      40
    b          0      50
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    m = get_metric(metric)
    cols = iter_columns(strata, "strata")
    backend = backend_for(table)
    backend.check_columns([("y_true", y_true), ("y_pred", y_pred), ("count", count)] + [("strata", c) for c in cols])
    backend.check_labels([("y_true", y_true), ("y_pred", y_pred)])
    n = table[count]
    if not pd.api.types.is_integer_dtype(n.dtype) or bool((n < 0).any()):
        raise ValueError(f"count column {count!r} must hold non-negative integers, got dtype {n.dtype}")
    confusion = ConfusionTable(
        strata=pd.DataFrame({i: table[c].reset_index(drop=True) for i, c in enumerate(cols)}, index=range(len(table))),
        truth=table[y_true].reset_index(drop=True),
        pred=table[y_pred].reset_index(drop=True),
        n=n.to_numpy(np.int64),
        names=cols,
        y_true=y_true,
        y_pred=y_pred,
        dtypes=(str(table[y_true].dtype), str(table[y_pred].dtype)),
    )
    counts = _counts_from_table(confusion, m, pos_label, weights)
    _warn_empty(counts, m, stacklevel=3)
    return counts


def _warn_empty(counts: Counts, m: Metric, stacklevel: int) -> None:
    if len(counts.empty):
        warnings.warn(
            f"{len(counts.empty)} strata have no trials for {m.name} and no rate: {list(counts.empty[:5])}",
            EmptyStratumWarning,
            stacklevel=stacklevel,
        )


def _counts_from_table(table: ConfusionTable, m: Metric, pos_label: Any, weights: Any) -> Counts:
    """The shared rules: refuse missing values and mixed label types, resolve the positive class, count."""
    _check_missing(table)
    if int(table.n.sum()) == 0:
        raise ValueError("data has no rows")
    check_label_types(table, pos_label if m.needs_positive else None)
    positive, classes = resolve_positive(m, table, pos_label)
    if classes is None:
        frame = _count_cells(table, m, positive)
    else:
        level = fresh_names(table.names or ["stratum"], ["class"])[0]
        parts = [_count_cells(table, m, cls) for cls in classes]
        frame = pd.concat(parts, keys=classes, names=[level])
        frame = frame.reorder_levels(list(range(1, frame.index.nlevels)) + [0]).sort_index()
    return Counts(frame["successes"], frame["trials"], metric=m.name, weights=weights)


def _binary_counts(
    backend: Any, cols: list[str], y_true: str, y_pred: str, m: Metric, pos_label: Any
) -> pd.DataFrame | None:
    """Successes and trials per stratum counted in the engine's one aggregation, for 0/1 labels.

    The engine sums the metric's cells by stratum and, in the same scan, checks that every label
    is 0 or 1 and present (:meth:`~bayeseval._backends.interface.Backend.binary_counts`). With such
    labels none of the confusion table's rules can refuse the data or change the positive class
    (1 by default; ``pos_label`` 0 or 1): the counts are those :func:`_counts_from_table` gives.
    None (the caller then counts the confusion table, which gives the messages) when the engine
    does not offer the path, when ``pos_label`` is something else, or when some label is not 0/1,
    is missing, or some stratum value is missing.
    """
    positive = 1
    if m.needs_positive and pos_label is not None:
        if isinstance(pos_label, str) or not isinstance(pos_label, (bool, np.bool_, int, float, np.number)):
            return None
        if pos_label not in (0, 1):
            return None
        positive = int(pos_label)
    query = _binary_query(m, cols, y_true, y_pred, positive)
    table = backend.binary_counts(query)
    if table is None or not len(table):
        return None
    b = table["b"]  # a negative label sets the sign bit: negative
    if bool(b.isna().any()) or int(b.max()) > 1 or int(b.min()) < 0:
        return None
    k = len(cols)
    if not k:
        index = pd.Index(["all"], name="stratum")
        return pd.DataFrame(
            {"successes": table["s"].to_numpy(np.int64), "trials": table["t"].to_numpy(np.int64)}, index=index
        )
    if any(bool(pd.isna(table[i]).any()) for i in range(k)):
        return None
    if k == 1:
        index = pd.Index(table[0], name=cols[0])
    else:
        index = pd.MultiIndex.from_arrays([table[i] for i in range(k)], names=cols)
    return pd.DataFrame(
        {"successes": table["s"].to_numpy(np.int64), "trials": table["t"].to_numpy(np.int64)}, index=index
    )


def _named_counts(
    backend: Any, cols: list[str], y_true: str, y_pred: str, m: Metric, pos_label: Any
) -> pd.DataFrame | None:
    """Successes and trials per stratum counted in the engine's one aggregation, for labels of two classes.

    The labels are read as 1 where they equal ``pos_label`` and 0 elsewhere inside the aggregation
    (:class:`~bayeseval._backends.interface.BinaryQuery` with ``positive``), which also counts, per
    stratum, the rows with a missing label and those of each label column equal to ``pos_label`` and to
    ``o``, a label other than ``pos_label`` that a one-row query found first. When no label is missing
    and every row's labels are ``pos_label`` or ``o``, the labels each column holds are known exactly,
    and the confusion table's rules (label types, placeholders, spellings, ``pos_label`` held by some
    row) are run on them: the counts are then those :func:`_counts_from_table` gives. None (the caller
    counts the confusion table, which gives the messages or the one-vs-rest counts) when the engine does
    not offer the path, when a label or a stratum value is missing, when more than two classes occur or
    when a rule refuses the labels.
    """
    positive = pos_label.item() if isinstance(pos_label, np.generic) else pos_label
    if not isinstance(positive, (str, int)) or isinstance(positive, bool):
        return None
    query = _binary_query(m, cols, y_true, y_pred, 1, positive=positive)
    table = backend.binary_counts(query)
    if table is None or not len(table) or int(table["b"].sum()):
        return None
    k = len(cols)
    if any(bool(pd.isna(table[i]).any()) for i in range(k)):
        return None
    rows = table["n"].to_numpy(np.int64)
    if (table["rt"] + table["ot"] != rows).any() or (table["rp"] + table["op"] != rows).any():
        return None  # a third class: one-vs-rest or the rules' messages, from the confusion table
    other = table["o"].iloc[0]
    truth_labels = [v for v, c in ((positive, "rt"), (other, "ot")) if int(table[c].sum())]
    pred_labels = [v for v, c in ((positive, "rp"), (other, "op")) if int(table[c].sum())]
    labels = ConfusionTable(  # the labels each column holds, one row of each (the rules read which occur)
        strata=pd.DataFrame(index=range(2)),
        truth=pd.Series([truth_labels[i % len(truth_labels)] for i in range(2)], dtype=object),
        pred=pd.Series([pred_labels[i % len(pred_labels)] for i in range(2)], dtype=object),
        n=np.ones(2, dtype=np.int64),
        names=[],
        y_true=y_true,
        y_pred=y_pred,
        dtypes=("", ""),
    )
    try:
        check_label_types(labels, pos_label if m.needs_positive else None)
        resolve_positive(m, labels, pos_label)
    except ValueError:
        return None  # the confusion table's path gives the message, with its row counts
    if not k:
        index = pd.Index(["all"], name="stratum")
    elif k == 1:
        index = pd.Index(table[0], name=cols[0])
    else:
        index = pd.MultiIndex.from_arrays([table[i] for i in range(k)], names=cols)
    return pd.DataFrame(
        {"successes": table["s"].to_numpy(np.int64), "trials": table["t"].to_numpy(np.int64)}, index=index
    )


def _check_missing(table: ConfusionTable) -> None:
    columns = [
        ("y_true", table.y_true, table.truth, "missing labels"),
        ("y_pred", table.y_pred, table.pred, "missing labels"),
    ]
    columns += [("strata", name, table.strata[i], "missing values") for i, name in enumerate(table.names)]
    for arg, col, values, what in columns:
        missing = pd.isna(values).to_numpy(bool)
        if missing.any():
            rows = int(table.n[missing].sum())
            hint = " (or, for unlabelled rows of a pool, give proxy=)" if arg == "y_true" else ""
            raise ValueError(
                f"{arg} column {col!r} has {what} in {rows} row{'s' if rows != 1 else ''} "
                f"(NaN, None, NA or NULL); drop or fill them before tabulating{hint}"
            )


def _count_cells(table: ConfusionTable, m: Metric, positive: Any) -> pd.DataFrame:
    """Successes and trials per stratum: the metric's cells of the confusion table, summed."""
    trial, success = m.masks(table.truth.to_numpy(), table.pred.to_numpy(), positive)
    s = np.where(success, table.n, 0)
    t = np.where(trial, table.n, 0)
    k = len(table.names)
    if k == 0:
        index = pd.Index(["all"], name="stratum")
        return pd.DataFrame({"successes": [int(s.sum())], "trials": [int(t.sum())]}, index=index).astype(np.int64)
    work = table.strata.copy()
    work["successes"] = s
    work["trials"] = t
    out = work.groupby(list(range(k)), observed=False, sort=True, dropna=False)[["successes", "trials"]].sum()
    out.index = out.index.set_names(table.names)
    return out.astype(np.int64)


def _binary_query(m: Any, cols: list[str], y_true: str, y_pred: str, code: int, positive: Any = None) -> BinaryQuery:
    """The one-pass query of metric ``m``: its trial and success cells over the 0/1 codes (``code`` the
    positive one), the labels compared with ``positive`` in the engine when it is given (class names)."""
    truth, pred = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    trial, success = m.masks(truth, pred, code)
    cells = list(zip(truth.tolist(), pred.tolist(), strict=True))
    return BinaryQuery(
        cols,
        y_true,
        y_pred,
        trial_cells=tuple(c for c, on in zip(cells, trial, strict=True) if on),
        success_cells=tuple(c for c, on in zip(cells, success, strict=True) if on),
        positive=positive,
    )
