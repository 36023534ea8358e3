"""Rows with a proxy to counts per stratum and proxy cell: :class:`ProxyCounts`.

A *proxy* is a column known on every row: a cheap label of the same kind as ``y_true`` (a
judge's label, a stronger model's prediction) or a number (a probability, a score). Rows
whose ``y_true`` is missing are the unlabelled rows. Within a stratum the proxy puts every
trial row in a *cell*: for a label proxy, whether the proxy read as the truth makes the row a
success (cell 1) or not (cell 0); for a numeric proxy, one of ``n_cells`` equal-count bins of
the value over the stratum's rows (edges at its quantiles, ties collapsing bins). Per cell
the result holds the labelled successes and trials and the pool's trials, which is all the
proxy estimators need (:func:`bayeseval.proxy_ci`); with inclusion probabilities, also the
sums of their inverses over the labelled rows.

Only metrics whose trials are known without the true label take a proxy (every row a trial,
or trials set by ``y_pred``): the pool's trials per cell must be countable on unlabelled rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import check_positive_int, iter_columns, short_repr
from bayeseval._backends.interface import Backend, CellQuery, ConfusionTable
from bayeseval._backends.pandas_backend import PandasBackend
from bayeseval._kernels.bins import edge_ranks
from bayeseval.counts.design import as_design
from bayeseval.counts.labels import MISSING_TEXT, check_label_types, resolve_positive
from bayeseval.counts.metrics import Metric, get_metric

__all__ = ["ProxyCounts", "PROXY_METRICS"]

#: metrics whose trials are known without the true label (the ones a proxy serves)
PROXY_METRICS = ("error_rate", "accuracy", "precision", "npv")

#: bins of a numeric proxy per stratum (Cochran 1968: five classes of a continuous variable
#: capture about 90% of what stratifying on it can)
N_CELLS = 5


@dataclass(frozen=True, eq=False, repr=False)
class ProxyCounts(Result):
    """Labelled successes and trials and pool trials per stratum and proxy cell.

    Built by :func:`~bayeseval.tabulate` with ``proxy=``; the proxy estimators
    (:func:`~bayeseval.proxy_ci`, :func:`~bayeseval.evaluate`, :func:`~bayeseval.fairness.audit`)
    work on it.

    Attributes
    ----------
    table : pandas.DataFrame
        Indexed by the strata and ``cell`` (0, 1, ... in proxy order). Columns ``successes``
        and ``trials`` (the labelled rows' successes and trials), ``pool_trials`` (trials
        among all rows, labelled or not); with inclusion probabilities also
        ``ipw_successes``, ``ipw_trials`` (sums of ``1/pi``) and ``ipw2_successes``,
        ``ipw2_trials`` (sums of ``1/pi**2``) over the labelled successes and trials.
    metric : str
        The metric's name.
    proxy_kind : {"label", "score"}
        A label proxy (cell 1: the proxy, read as the truth, makes the row a success) or a
        numeric one (cells: bins of the value).
    inclusion : str or None
        The column of inclusion probabilities, when given.
    cluster : str or None
        The design's cluster column, when given: a cell then holds whole units (see
        :func:`tabulate_proxy`) and the table gains ``units`` and ``pool_units`` (labelled
        units and all units per cell) and ``agreements`` (labelled trials whose own proxy
        verdict is their truth, for a label proxy).
    units : pandas.DataFrame or None
        With a cluster: the labelled units' histogram per stratum and cell (columns the
        strata, ``cell``, ``unit_successes``, ``unit_trials``, ``units``; the
        ``Counts.units`` layout with the cell as a level).
    unit_sizes : pandas.DataFrame or None
        With a cluster: every unit's trials per stratum, labelled or not (columns the strata,
        ``unit_trials``, ``units``), for the description of the design.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from bayeseval import tabulate
    >>> df = pd.DataFrame({"y": [1, 0, 1, np.nan, np.nan], "p": [1, 1, 1, 1, 0],
    ...                    "judge": [1, 0, 1, 1, 0]})
    >>> pc = tabulate(df, y_true="y", y_pred="p", proxy="judge", metric="accuracy")
    >>> # cell 1: the judge agrees with the prediction (4 rows), cell 0: it does not (1 row)
    >>> pc.table[["successes", "trials", "pool_trials"]].to_dict("list")
    {'successes': [0, 2], 'trials': [1, 2], 'pool_trials': [1, 4]}
    """

    table: pd.DataFrame
    metric: str
    proxy_kind: str
    inclusion: str | None = None
    cluster: str | None = None
    units: pd.DataFrame | None = None
    unit_sizes: pd.DataFrame | None = None
    title: ClassVar[str] = "Counts per stratum and proxy cell"

    @property
    def strata(self) -> pd.Index:
        """The stratum labels (the index without its ``cell`` level)."""
        return _strata_of(self.table.index)

    def stratum_cells(self) -> list[tuple[Any, pd.DataFrame]]:
        """Every stratum's cells.

        Returns
        -------
        list of tuple
            ``(stratum, its rows of the table indexed by cell)``, in index order.
        """
        levels = [n for n in self.table.index.names if n != "cell"]
        groups = self.table.groupby(level=levels if len(levels) > 1 else levels[0], sort=False)
        return [(key, rows.droplevel(levels)) for key, rows in groups]

    def __len__(self) -> int:
        return len(self.strata)


def _strata_of(index: pd.MultiIndex) -> pd.Index:
    levels = [n for n in index.names if n != "cell"]
    if len(levels) == 1:
        return pd.Index(index.get_level_values(levels[0]).unique(), name=levels[0])
    return index.droplevel("cell").unique()


def supported_metric(metric: str | Metric) -> Metric:
    """The metric, or ValueError when its trials depend on the true label."""
    m = get_metric(metric)
    if m.trials_need_truth or m.name not in PROXY_METRICS:
        raise ValueError(
            f"metric {m.name!r} does not take a proxy: its trials depend on the true label, "
            f"unknown on unlabelled rows; metrics that take a proxy are {list(PROXY_METRICS)}"
        )
    return m


def tabulate_proxy(
    backend: Backend,
    *,
    y_true: str,
    y_pred: str,
    proxy: str,
    strata: str | Sequence[str] | None,
    metric: str | Metric,
    pos_label: Any,
    n_cells: int = N_CELLS,
    label_set: Sequence[Any] | None = None,
    design: Any = None,
) -> ProxyCounts:
    """Counts per stratum and proxy cell from a back end (see :func:`bayeseval.tabulate`).

    ``design`` (a :class:`~bayeseval.Design` or dict) gives the labelled rows' inclusion column
    as ``design.inclusion``, and the sampling unit as ``design.cluster``: rows sharing a value
    within a stratum are one unit, and a unit is labelled on every trial row or on none (else
    ValueError naming ``y_true`` and the cluster). The cell of a unit is its proxy aggregated
    over its rows: for a label proxy, the unit's majority verdict (cell 1 when the proxy,
    read as the truth, makes at least half of the unit's trials successes: a tie counts as
    a pass; for units of one row, the row's own cell); for a score, ``n_cells`` equal-count
    bins of the unit's mean score over the stratum's units (for units of one row, the rows'
    bins). With a cluster and ``design.inclusion`` the labelled units must have been drawn at
    random within each proxy cell: the inclusion probability is one per unit and one per
    (stratum, cell) among its labelled units (else ValueError naming ``design.inclusion``), and
    the table gains the inverse-probability sums of the rows' path. ``population="pool"`` is refused.
    """
    d = as_design(design)
    if d.population != "process":
        raise ValueError(
            f"design={d!r}: the proxy interval takes the process population; population='pool' is not taken "
            "with a proxy yet"
        )
    inclusion = d.inclusion
    cluster = d.cluster
    m = supported_metric(metric)
    cols = iter_columns(strata, "strata")
    n_cells = check_positive_int(n_cells, "n_cells", minimum=2)
    declared = check_label_set(label_set)
    pairs = [("y_true", y_true), ("y_pred", y_pred), ("proxy", proxy)] + [("strata", c) for c in cols]
    if inclusion is not None:
        pairs.append(("inclusion", inclusion))
    if cluster is not None:
        if not isinstance(cluster, str):
            raise TypeError(f"design cluster must be a column name (str), got {short_repr(cluster)}")
        pairs.append(("design cluster", cluster))
    backend.check_columns(pairs)
    backend.check_labels([("y_true", y_true), ("y_pred", y_pred)])
    fractional = check_proxy_column(backend, proxy)
    if cluster is not None:
        return _tabulate_units(
            backend, m, cols, (cluster, inclusion), (y_true, y_pred, proxy), pos_label, n_cells, declared, fractional
        )
    raw = _fetch(backend, cols, y_true, y_pred, proxy, None if not fractional else n_cells, inclusion)
    labelled = ~pd.isna(raw["t"]).to_numpy(bool)
    _check_table(raw, cols, y_true, y_pred, proxy, inclusion, labelled)
    seen = set(pd.unique(raw["p"])) | set(pd.unique(raw.loc[labelled, "t"])) | set(declared)
    kind = "score" if fractional else proxy_kind(raw["c"], seen, proxy)
    _check_true_labels(raw, labelled, kind, declared, pos_label, (y_true, y_pred, proxy))
    positive = _positive(m, raw, labelled, cols, y_true, y_pred, pos_label)
    if kind == "score" and not fractional:
        raw = _fetch(backend, cols, y_true, y_pred, proxy, n_cells, inclusion)
        labelled = ~pd.isna(raw["t"]).to_numpy(bool)
    table = _cell_table(raw, labelled, m, positive, kind, cols, inclusion is not None)
    return ProxyCounts(table=table, metric=m.name, proxy_kind=kind, inclusion=inclusion)


def _tabulate_units(
    backend: Backend,
    m: Metric,
    cols: list[str],
    design: tuple[str, str | None],
    names: tuple[str, str, str],
    pos_label: Any,
    n_cells: int,
    declared: list[Any],
    fractional: bool,
) -> ProxyCounts:
    """:func:`tabulate_proxy` with a cluster: cells of whole units (see there)."""
    y_true, y_pred, proxy = names
    cluster, inclusion = design
    raw = _fetch(backend, [*cols, cluster], y_true, y_pred, proxy, None, inclusion)
    labelled = ~pd.isna(raw["t"]).to_numpy(bool)
    _check_table(raw, cols, y_true, y_pred, proxy, inclusion, labelled)
    _missing("design cluster", cluster, raw[len(cols)], raw["n"].to_numpy(np.int64))
    seen = set(pd.unique(raw["p"])) | set(pd.unique(raw.loc[labelled, "t"])) | set(declared)
    kind = "score" if fractional else proxy_kind(raw["c"], seen, proxy)
    _check_true_labels(raw, labelled, kind, declared, pos_label, names)
    positive = _positive(m, raw, labelled, cols, y_true, y_pred, pos_label)
    table, units, sizes = _unit_cell_table(
        raw, labelled, m, positive, kind, cols, n_cells, (y_true, cluster, inclusion)
    )
    return ProxyCounts(
        table=table,
        metric=m.name,
        proxy_kind=kind,
        inclusion=inclusion,
        cluster=cluster,
        units=units,
        unit_sizes=sizes,
    )


def _unit_cell_table(
    raw: pd.DataFrame,
    labelled: np.ndarray,
    m: Metric,
    positive: Any,
    kind: str,
    cols: list[str],
    n_cells: int,
    names: tuple[str, str, str | None],
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Units -> (stratum, cell) rows of labelled and pool counts, the labelled units' histogram and
    every unit's size per stratum (with inclusion probabilities, checked to be one per unit and
    one per labelled (stratum, cell), the inverse-probability sums of :func:`_cell_table`)."""
    y_true, cluster, inclusion = names
    pred = raw["p"].to_numpy()
    n = raw["n"].to_numpy(np.int64)
    trial = m.masks(pred, pred, positive)[0]
    success = np.zeros(len(raw), dtype=bool)
    success[labelled] = m.masks(raw.loc[labelled, "t"].to_numpy(), pred[labelled], positive)[1]
    k = len(cols)
    unit_keys = list(range(k + 1))
    work = pd.DataFrame({i: raw[i].to_numpy() for i in unit_keys}, index=range(len(raw)))
    lab_trial = labelled & trial
    work["a"] = np.where(lab_trial & success, n, 0)
    work["b"] = np.where(trial, n, 0)
    work["lab_b"] = np.where(lab_trial, n, 0)
    work["rows"] = n
    if inclusion is not None:
        work["w"] = raw["w"].to_numpy(float)
        work["w2"] = raw["w2"].to_numpy(float)
        work["lab_rows"] = np.where(labelled, n, 0)
    if kind == "label":
        verdict = m.masks(raw["c"].to_numpy(), pred, positive)[1]
        work["j"] = np.where(trial & verdict, n, 0)
        work["agree"] = np.where(lab_trial & (verdict == success), n, 0)
    else:
        work["j"] = pd.to_numeric(raw["c"]).to_numpy(dtype=float) * n
        work["agree"] = 0
    unit = work.groupby(unit_keys, sort=True, dropna=False).sum()
    partial = (unit["lab_b"] > 0) & (unit["lab_b"] < unit["b"])
    if partial.any():
        raise ValueError(
            f"y_true column {y_true!r} is missing on some trial rows of {int(partial.sum())} units of the "
            f"design cluster {cluster!r} that are labelled on others; a unit is labelled on every row "
            "or on none (the labelled units are a random sample of the units)"
        )
    strata_keys = unit_keys[:k]
    if kind == "label":
        cell = (2 * unit["j"] >= unit["b"]).astype(np.int64)
    else:
        cell = _unit_bins(unit["j"] / unit["rows"], strata_keys, n_cells)
    unit = unit.assign(cell=cell.to_numpy()).reset_index()
    unit = unit[unit["b"] > 0]
    is_lab = unit["lab_b"] > 0
    ipw: list[str] = []
    if inclusion is not None:
        inv = _unit_inverse_probability(unit, is_lab, strata_keys, (cluster, inclusion))
        unit = unit.assign(
            ipw_successes=unit["a"] * inv,
            ipw_trials=unit["lab_b"] * inv,
            ipw2_successes=unit["a"] * inv**2,
            ipw2_trials=unit["lab_b"] * inv**2,
        )
        ipw = ["ipw_successes", "ipw_trials", "ipw2_successes", "ipw2_trials"]
    unit = unit.assign(
        successes=unit["a"],
        trials=np.where(is_lab, unit["b"], 0),
        pool_trials=unit["b"],
        units=is_lab.astype(np.int64),
        pool_units=1,
        agreements=unit["agree"],
    )
    if not cols:
        unit["stratum"] = "all"
        keys: list[Any] = ["stratum", "cell"]
        out_names = ["stratum", "cell"]
    else:
        keys = [*strata_keys, "cell"]
        out_names = [*cols, "cell"]
    sums = ["successes", "trials", "pool_trials", "units", "pool_units", "agreements"]
    table = unit.groupby(keys, sort=True)[sums].sum().astype(np.int64)
    if ipw:
        table = table.join(unit.groupby(keys, sort=True)[ipw].sum())
    table.index = table.index.set_names(out_names)
    lab = unit[is_lab]
    hist = (
        lab.groupby([*keys, "a", "b"], sort=True)
        .size()
        .rename("units")
        .reset_index()
        .rename(columns={"a": "unit_successes", "b": "unit_trials"})
    )
    hist.columns = [*out_names, "unit_successes", "unit_trials", "units"]
    hist["unit_successes"] = hist["unit_successes"].astype(float)
    hist["unit_trials"] = hist["unit_trials"].astype(np.int64)
    strata = keys[:-1]
    sizes = unit.groupby([*strata, "b"], sort=True).size().rename("units").reset_index()
    sizes.columns = [*out_names[:-1], "unit_trials", "units"]
    sizes["unit_trials"] = sizes["unit_trials"].astype(np.int64)
    return table, hist, sizes


def _unit_inverse_probability(
    unit: pd.DataFrame, is_lab: pd.Series, strata_keys: list[int], names: tuple[str, str]
) -> np.ndarray:
    """Each unit's ``1/pi`` (0 when unlabelled), refusing a probability that varies within a unit or
    within a (stratum, cell) among its labelled units (then the labelled units are not a random
    sample of the cell's units), naming ``design.inclusion``."""
    cluster, inclusion = names
    rows = unit["lab_rows"].to_numpy(float)
    w, w2 = unit["w"].to_numpy(float), unit["w2"].to_numpy(float)
    lab = is_lab.to_numpy(bool) & (rows > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        inv = np.where(lab, w / np.where(lab, rows, 1.0), 0.0)
    # Cauchy-Schwarz: (sum 1/pi)^2 = rows * sum 1/pi^2 exactly when 1/pi is one value over the unit's rows
    uneven = lab & ~np.isclose(w**2, rows * w2, rtol=1e-9, atol=0.0)
    if uneven.any():
        raise ValueError(
            f"design.inclusion column {inclusion!r} varies within {int(uneven.sum())} labelled unit(s) of the "
            f"design cluster {cluster!r}; a unit is chosen for labelling as a whole, with one probability"
        )
    keys = [*strata_keys, "cell"]
    spread = pd.Series(inv[lab], index=unit.index[lab]).groupby([unit.loc[lab, k] for k in keys], sort=True)
    low, high = spread.min(), spread.max()
    differ = ~np.isclose(low.to_numpy(), high.to_numpy(), rtol=1e-9, atol=0.0)
    if differ.any():
        where = low.index[differ][0]
        raise ValueError(
            f"design.inclusion column {inclusion!r} takes several values among the labelled units of one "
            f"proxy cell (stratum and cell {where!r}: probabilities {1 / high.iloc[np.flatnonzero(differ)[0]]:.4g} "
            f"to {1 / low.iloc[np.flatnonzero(differ)[0]]:.4g}); with a cluster the labelled units must be drawn "
            "at random within each proxy cell (one probability per cell), as a calibration set chosen by the "
            "judge's verdict is"
        )
    return inv


def _unit_bins(score: pd.Series, keys: list[int], n_cells: int) -> pd.Series:
    """Bins of the units' mean scores within each stratum, numbered 0, 1, ... (the rows' rule)."""
    x = score.to_numpy(dtype=float)
    out = np.zeros(len(x), dtype=np.int64)
    groups = [np.arange(len(x))] if not keys else score.groupby(level=keys, sort=False).indices.values()
    for rows in groups:
        v = x[rows]
        edges = np.unique(np.sort(v)[edge_ranks(len(v), n_cells)])
        out[rows] = np.unique(np.searchsorted(edges, v, side="left"), return_inverse=True)[1]
    return pd.Series(out, index=score.index)


def check_label_set(label_set: Any) -> list[Any]:
    """``label_set`` as a list (empty when None), or TypeError naming it."""
    if label_set is None:
        return []
    if isinstance(label_set, (str, bytes)) or not np.iterable(label_set):
        raise TypeError(f"label_set must be a sequence of labels, got {short_repr(label_set)}")
    values = list(label_set)
    if any(np.ndim(v) != 0 or pd.isna(v) for v in values):
        raise ValueError(
            f"label_set must hold labels (strings, numbers or bools, none missing), got {short_repr(values[:10])}"
        )
    return values


def check_proxy_column(backend: Backend, proxy: str) -> bool:
    """The column checks every proxy path runs first; whether the proxy holds fractional numbers.

    A proxy holding ``inf`` or ``-inf`` is refused, naming ``proxy``, the column, the value and
    its rows: no engine could bin it as the others do, and a label cannot be infinite.
    A fractional number makes the proxy a score (True).
    """
    rows, value = backend.infinite(proxy)
    if rows:
        raise ValueError(
            f"proxy column {proxy!r} holds {value} in {rows} row{'s' if rows != 1 else ''}; a score "
            "proxy must be a finite number on every row: replace the infinite values (e.g. by "
            "the column's finite minimum or maximum) or drop those rows"
        )
    try:
        backend.check_labels([("proxy", proxy)])
    except ValueError:
        return True
    return False


def _numeric(values: pd.Series, distinct: np.ndarray) -> bool:
    """Whether a proxy's values are numbers (a score): a numeric column, or numbers in an object one."""
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return False
    if pd.api.types.is_numeric_dtype(dtype):
        return True
    return pd.api.types.is_object_dtype(dtype) and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in distinct
    )


def proxy_kind(values: pd.Series, labels: Any, proxy: str) -> str:
    """The kind of a proxy from its values: ``"label"`` or ``"score"``, or ValueError.

    The one rule every proxy path applies (:func:`~bayeseval.proxy_ci`, :func:`~bayeseval.tabulate`,
    :func:`~bayeseval.evaluate`, the audit, :meth:`~bayeseval.campaign.Campaign.create` and
    ``simulate``): a proxy whose every value is one of ``labels`` (those of ``y_true``/``y_pred``
    and ``label_set``) is a label proxy; one holding numbers is a score; anything else (text
    that is not a label, such as ``"0.9"`` or ``"yes"`` next to 0/1 labels) is refused, naming
    ``proxy``, the column and the offending values.

    Parameters
    ----------
    values : pandas.Series
        The proxy's values (any subset holding every distinct value; missing values ignored).
    labels : iterable
        The known labels.
    proxy : str
        The proxy's column name, for the message.

    Returns
    -------
    str
        ``"label"`` or ``"score"``.

    Examples
    --------
    >>> proxy_kind(pd.Series([0, 1, 1]), {0, 1}, "judge"), proxy_kind(pd.Series([0.2, 0.9]), {0, 1}, "p")
    ('label', 'score')
    """
    distinct = pd.unique(values.dropna())
    known = set(labels)
    if set(distinct) <= known:
        return "label"
    if _numeric(values, distinct):
        return "score"
    extra = sorted((v for v in distinct if v not in known), key=str)
    shown = short_repr(extra[:5])
    if all(isinstance(v, str) for v in extra) and pd.to_numeric(pd.Series(extra), errors="coerce").notna().all():
        hint = (
            "they are numbers stored as text: convert the column with pandas.to_numeric (a score), "
            "or to the labels' type"
        )
    else:
        hint = "map them to the labels (e.g. with Series.map) or give a numeric score"
    raise ValueError(
        f"proxy column {proxy!r} holds values that are neither labels of y_true/y_pred "
        f"({short_repr(sorted(known, key=str)[:6])}) nor numbers (scores): {shown}; {hint}"
    )


def pool_proxy_kind(pool: pd.DataFrame, proxy: str, labels: Any, column: str | None = None) -> str:
    """The checks :func:`tabulate_proxy` runs on a proxy, on a pandas pool without labels.

    Missing values, infinite values and values that are neither ``labels`` nor numbers are
    refused (:func:`check_proxy_column`, :func:`proxy_kind`), naming ``proxy`` and the column
    (``column``, when the pool's column is stored under another name).

    Examples
    --------
    >>> pool_proxy_kind(pd.DataFrame({"judge": [0, 1]}), "judge", [0, 1])
    'label'
    """
    name = column if column is not None else proxy
    values = pool[proxy]
    missing = int(values.isna().sum())
    if missing:
        raise ValueError(
            f"proxy column {name!r} has missing values in {missing} row{'s' if missing != 1 else ''} "
            "(NaN, None or NA); the proxy is needed on every pool row"
        )
    frame = pd.DataFrame({name: values.to_numpy()})
    return "score" if check_proxy_column(PandasBackend(frame), name) else proxy_kind(frame[name], labels, name)


def _fetch(
    backend: Backend, cols: list[str], y_true: str, y_pred: str, proxy: str, n_cells: int | None, inclusion: str | None
) -> pd.DataFrame:
    try:
        return backend.proxy_cells(CellQuery(cols, y_true, y_pred, proxy, n_cells, inclusion))
    except NotImplementedError:
        raise TypeError(
            f"proxy={proxy!r} is not supported for {backend.engine} data; tabulate a pandas "
            "DataFrame, a Parquet/CSV path, a DuckDB relation or a Spark DataFrame"
        ) from None


def _missing(arg: str, col: str, values: pd.Series, n: np.ndarray, what: str = "missing values") -> None:
    bad = pd.isna(values).to_numpy(bool)
    if bad.any():
        rows = int(n[bad].sum())
        raise ValueError(
            f"{arg} column {col!r} has {what} in {rows} row{'s' if rows != 1 else ''} "
            "(NaN, None, NA or NULL); the proxy needs them on every row"
        )


def _check_table(
    raw: pd.DataFrame,
    cols: list[str],
    y_true: str,
    y_pred: str,
    proxy: str,
    inclusion: str | None,
    labelled: np.ndarray,
) -> None:
    if int(raw["n"].sum()) == 0:
        raise ValueError("data has no rows")
    n = raw["n"].to_numpy(np.int64)
    _missing("y_pred", y_pred, raw["p"], n)
    _missing("proxy", proxy, raw["c"], n)
    for i, c in enumerate(cols):
        _missing("strata", c, raw[i], n)
    if inclusion is not None and int(raw["bad"].sum()):
        raise ValueError(
            f"inclusion column {inclusion!r} must hold probabilities in (0, 1] on every labelled "
            f"row; {int(raw['bad'].sum())} labelled rows have a missing or out-of-range value"
        )
    if not labelled.any():
        raise ValueError(f"y_true column {y_true!r} has no labelled rows: every value is missing")


def _positive(
    m: Metric, raw: pd.DataFrame, labelled: np.ndarray, cols: list[str], y_true: str, y_pred: str, pos_label: Any
) -> Any:
    """The positive class, by the rules of :func:`tabulate` on the labelled rows."""
    lab = raw[labelled]
    table = ConfusionTable(
        strata=pd.DataFrame({i: lab[i].reset_index(drop=True) for i in range(len(cols))}, index=range(len(lab))),
        truth=lab["t"].reset_index(drop=True),
        pred=lab["p"].reset_index(drop=True),
        n=lab["n"].to_numpy(np.int64),
        names=cols,
        y_true=y_true,
        y_pred=y_pred,
        dtypes=(str(raw["t"].dtype), str(raw["p"].dtype)),
    )
    check_label_types(table, pos_label if m.needs_positive else None)
    positive, classes = resolve_positive(m, table, pos_label)
    if classes is not None:
        raise ValueError(
            f"metric {m.name!r} with a proxy needs pos_label: the labels are {classes}, and the "
            "proxy estimators count one positive class"
        )
    return positive


def _known_labels(raw: pd.DataFrame, kind: str, declared: list[Any], pos_label: Any) -> set[Any]:
    """Labels a true label may take: predictions, a label proxy's values, label_set, pos_label.

    0/1 labels are a complete set: one of them is known when the other is.
    """
    known = set(pd.unique(raw["p"])) | set(declared)
    if kind == "label":
        known |= set(pd.unique(raw["c"]))
    if pos_label is not None:
        known.add(pos_label)
    if known and all(not isinstance(v, str) and v in (0, 1) for v in known):
        known |= {0, 1}
    return known


def _check_true_labels(
    raw: pd.DataFrame, labelled: np.ndarray, kind: str, declared: list[Any], pos_label: Any, names: tuple[str, str, str]
) -> None:
    """Refuse a true label that no prediction, label proxy or ``label_set`` value takes.

    Such a value is most often a sentinel for "not labelled" (-1, 9, "unlabelled"): counted,
    it would add a wrong label per unlabelled row.
    """
    known = _known_labels(raw, kind, declared, pos_label)
    truth = raw.loc[labelled, "t"]
    # a missing-value spelling ("", "NA", ...) gets the label rules' own message (check_label_types)
    odd = [
        v for v in pd.unique(truth) if v not in known and not (isinstance(v, str) and v.strip().lower() in MISSING_TEXT)
    ]
    if not odd:
        return
    y_true, y_pred, proxy = names
    odd = sorted(odd, key=str)
    rows = int(raw.loc[labelled, "n"].to_numpy(np.int64)[np.isin(truth.to_numpy(object), odd)].sum())
    by = (
        f"neither y_pred {y_pred!r} nor the proxy {proxy!r} ever takes"
        if kind == "label"
        else f"y_pred {y_pred!r} never takes"
    )
    raise ValueError(
        f"y_true column {y_true!r} holds {', '.join(short_repr(v) for v in odd[:5])} in {rows} row{'s' if rows != 1 else ''}, "
        f"a label that {by}; if it marks unlabelled rows, set them to a missing value (NaN or None), "
        "which is how the proxy estimators find the unlabelled rows; if it is a class, declare "
        "every class with label_set=[...]"
    )


def _cell_table(
    raw: pd.DataFrame, labelled: np.ndarray, m: Metric, positive: Any, kind: str, cols: list[str], ipw: bool
) -> pd.DataFrame:
    """Sum the raw cells into (stratum, cell) rows of labelled and pool counts."""
    pred = raw["p"].to_numpy()
    trial = m.masks(pred, pred, positive)[0]
    success = np.zeros(len(raw), dtype=bool)
    success[labelled] = m.masks(raw.loc[labelled, "t"].to_numpy(), pred[labelled], positive)[1]
    if kind == "label":
        cell = m.masks(raw["c"].to_numpy(), pred, positive)[1].astype(np.int64)
    else:
        cell = raw["c"].to_numpy(np.int64)
    n = raw["n"].to_numpy(np.int64)
    lab_trial = labelled & trial
    work = pd.DataFrame({i: raw[i].to_numpy() for i in range(len(cols))}, index=range(len(raw)))
    work["cell"] = cell
    work["successes"] = np.where(lab_trial & success, n, 0)
    work["trials"] = np.where(lab_trial, n, 0)
    work["pool_trials"] = np.where(trial, n, 0)
    if ipw:
        for col, src in (("ipw", "w"), ("ipw2", "w2")):
            v = raw[src].to_numpy(float)
            work[f"{col}_successes"] = np.where(lab_trial & success, v, 0.0)
            work[f"{col}_trials"] = np.where(lab_trial, v, 0.0)
    if not cols:
        work["stratum"] = "all"
        keys: list[Any] = ["stratum", "cell"]
        names = ["stratum", "cell"]
    else:
        keys = list(range(len(cols))) + ["cell"]
        names = cols + ["cell"]
    out = work.groupby(keys, sort=True)[[c for c in work.columns if c not in keys]].sum()
    out.index = out.index.set_names(names)
    if kind == "score":
        out = _renumber(out)
    ints = ["successes", "trials", "pool_trials"]
    out[ints] = out[ints].astype(np.int64)
    return out


def _renumber(out: pd.DataFrame) -> pd.DataFrame:
    """Number a score's bins 0, 1, ... within each stratum."""
    strata = out.index.droplevel("cell")
    new = pd.Series(1, index=out.index).groupby(level=list(range(strata.nlevels)), sort=False).cumsum() - 1
    return out.set_axis(
        pd.MultiIndex.from_arrays(
            [out.index.get_level_values(i) for i in range(strata.nlevels)] + [new.to_numpy()], names=out.index.names
        )
    )
