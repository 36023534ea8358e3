"""The inputs of a fairness audit: metric and criterion names, checked options, the group
layout (one column per group column, a display label per group), the counts per group and
metric, and the reference group given by the user.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayeseval._api import metric_names
from bayeseval._api.validation import (
    check_method,
    check_positive_int,
    check_proxy_design,
)
from bayeseval._api.warnings import ClusteredRowsWarning, EmptyStratumWarning
from bayeseval.counts.counts import tabulate
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.proxy import PROXY_METRICS
from bayeseval.fairness.options import MODELS

__all__ = ["METRICS", "CRITERIA"]

#: audit metric names and the :data:`bayeseval.counts.metrics.METRICS` definition each one uses
_BASE = {
    "selection_rate": "selection_rate",
    "tpr": "recall",
    "fnr": "fnr",
    "fpr": "fpr",
    "tnr": "specificity",
    "ppv": "precision",
    "npv": "npv",
    "error_rate": "error_rate",
    "accuracy": "accuracy",
}
_AUDIT_NAME = {base: name for name, base in _BASE.items()} | {"balanced_accuracy": "balanced_accuracy"}


#: every metric :func:`audit` reports, in display order
METRICS = tuple(_BASE) + ("balanced_accuracy",)


#: the metrics of an audit of per-row outcomes (``outcome=``): the mean outcome and one minus it,
#: as :func:`bayeseval.tabulate` counts them
OUTCOME_METRICS = ("accuracy", "error_rate")


#: fairness criteria and the metrics whose max-min gap each one bounds
CRITERIA = {
    "demographic_parity": ("selection_rate",),
    "equal_opportunity": ("tpr",),
    "equalized_odds": ("tpr", "fpr"),
    "predictive_parity": ("ppv",),
}


class Layout(NamedTuple):
    """The groups: their factor values (one column per group column) and display labels."""

    factors: pd.DataFrame  # one column per group column, one row per group
    labels: list[str]
    columns: list[str]  # the group columns, in order


#: audit metrics that take a proxy: the selection rate (no true label needed) and the metrics
#: whose trials are known without the true label
PROXY_AUDIT_METRICS = ("selection_rate",) + tuple(_AUDIT_NAME[m] for m in PROXY_METRICS)


def audited_design(design: Any, pool: bool = False) -> Design:
    """The design of an audit: any inclusion column, a cluster; a finite pool where ``pool``.

    A cluster is taken (each group's interval from its units); ``population="pool"`` is taken by
    :func:`~bayeseval.audit` (``pool=True``: each group's finite-pool interval) and refused
    elsewhere (the impact ratios estimate the rates of the process). The callers refuse what
    does not go with them (a proxy, the pooled guarantee).
    """
    d = as_design(design)
    if d.population != "process" and not pool:
        raise ValueError(
            f"design.population={d.population!r}: these rates are those of the process; "
            "population='pool' is taken by audit() and evaluate() only"
        )
    return d


def check_cluster_options(design: Design, proxy: Any, guarantee: Any) -> None:
    """Refuse a cluster with what does not take one: the pooled ``"average"`` guarantee (a proxy
    takes one: each group's units proxy interval)."""
    if design.cluster is None:
        return
    if not guarantee.per_stratum:
        raise ValueError(
            f"design.cluster={design.cluster!r} is not taken with guarantee={guarantee.name!r}: the audit's "
            "pooled model (groups crossed, or exchangeable) treats every row as an independent yes/no draw; "
            "use guarantee='stratum' (each group's own units interval)"
        )


def check_proxy_metrics(names: list[str], proxy: Any, inclusion: Any, label_set: Any = None) -> None:
    check_proxy_design(proxy, inclusion, label_set)
    bad = [m for m in names if m not in PROXY_AUDIT_METRICS]
    if proxy is not None and bad:
        raise ValueError(
            f"metrics {bad} do not take a proxy: their trials depend on the true label, unknown on "
            f"unlabelled rows; metrics that take a proxy are {list(PROXY_AUDIT_METRICS)}"
        )


def check_metrics(metrics: Any, proxy: Any = None, outcome: str | None = None) -> dict[str, str]:
    """Audit metric key -> the name as the user wrote it (shown in every table), in order.

    With ``outcome`` the default is ``accuracy`` (the mean outcome) and only
    :data:`OUTCOME_METRICS` are taken."""
    if metrics is None:
        if outcome is not None:
            return {"accuracy": "accuracy"}
        return {m: m for m in (METRICS if proxy is None else PROXY_AUDIT_METRICS)}
    items = [metrics] if isinstance(metrics, str) else metrics
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"metrics must be a metric name or a list of names, got {metrics!r}") from None
    if not items:
        raise ValueError(f"metrics must name at least one metric, got {metrics!r}")
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"metrics must hold metric names (str), got {item!r}")
        name = metric_names.canonical(item) or ""  # "": not a metric name, refused below
        key = _AUDIT_NAME.get(name, name)
        if key not in METRICS:
            raise ValueError(metric_names.unknown_metric(item, "metrics"))
        out.setdefault(key, item.strip())
    bad = [written for key, written in out.items() if key not in OUTCOME_METRICS]
    if outcome is not None and bad:
        raise ValueError(
            f"metrics {bad} do not apply to outcome={outcome!r}: with per-row outcomes the metric is the mean "
            f"outcome, one of {list(OUTCOME_METRICS)} (error_rate is one minus it)"
        )
    return out


def check_outcome_options(outcome: Any, proxy: Any) -> None:
    """Refuse with ``outcome`` what does not take per-row outcomes yet: a proxy.

    The rest (``outcome`` with ``y_true``/``y_pred``, ``pos_label``, outcomes outside [0, 1]) is
    refused by :func:`bayeseval.tabulate` when the rows are counted."""
    if outcome is not None and proxy is not None:
        raise ValueError(
            f"outcome={outcome!r} is not taken with proxy={proxy!r} yet: the proxy intervals read labels "
            "(y_true, y_pred); audit the outcome without the proxy"
        )


def check_graded_guarantee(outcome: str | None, guarantee: Any, counted: AuditCounts) -> None:
    """Refuse graded outcomes under the pooled ``"average"`` guarantee: its models take 0/1 rows only."""
    if outcome is None or guarantee.per_stratum or not counted.by_unit:
        return
    raise ValueError(
        f"outcome={outcome!r} holds graded outcomes (not only 0 and 1), which guarantee={guarantee.name!r} "
        "does not take: the pooled models (the row-level one and the model over units) count 0/1 outcomes "
        "only; use guarantee='stratum' (each group's own finite-sample valid interval)"
    )


def check_tolerance(tolerance: Any) -> float | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, (int, float, np.number)):
        raise TypeError(f"tolerance must be a number in (0, 1), got {tolerance!r}")
    value = float(tolerance)
    if not (0.0 < value < 1.0):
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
    return value


def _tabulated(
    data: Any,
    cols: list[str],
    y_true: str | None,
    y_pred: str | None,
    name: str,
    pos_label: Any,
    proxy: tuple[Any, ...] = (None,),
    cluster: str | None = None,
    outcome: str | None = None,
) -> Any:
    """The rows counted per group for metric ``name`` (with ``proxy``: per group and proxy cell;
    with ``cluster``: with the units' histogram per group; with ``outcome``: the per-row outcomes,
    each row its own unit without a cluster)."""
    design = None
    inclusion = proxy[1] if len(proxy) > 1 else None
    if inclusion is not None or cluster is not None:
        design = Design(cluster=cluster, inclusion=inclusion)
    rows = {"y_true": y_true, "y_pred": y_pred} if outcome is None else {"outcome": outcome}
    if outcome is not None and (y_true is not None or y_pred is not None):
        rows |= {"y_true": y_true, "y_pred": y_pred}  # refused by tabulate, naming the three
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyStratumWarning)
        return tabulate(
            data,
            **rows,
            strata=cols,
            metric=_BASE[name],
            pos_label=pos_label,
            proxy=proxy[0],
            design=design,
            label_set=proxy[2] if len(proxy) > 2 else None,
        )


def _count(
    data: Any,
    cols: list[str],
    y_true: str | None,
    y_pred: str | None,
    name: str,
    pos_label: Any,
    cluster: str | None = None,
    outcome: str | None = None,
) -> Any:
    counts = _tabulated(data, cols, y_true, y_pred, name, pos_label, cluster=cluster, outcome=outcome)
    if counts.successes.index.nlevels > len(cols):
        raise ValueError(
            f"pos_label is required: the labels of y_true {y_true!r} and y_pred {y_pred!r} "
            "are not binary 0/1, so the positive class is unknown; got pos_label=None"
        )
    return counts


def _graded(counts: Any) -> bool:
    """Whether some unit of ``counts`` holds a graded outcome (its successes not a whole number)."""
    units = counts.units
    if units is None or not len(units):
        return False
    s = units["unit_successes"].to_numpy(float)
    return bool((s != np.round(s)).any())


def _has_units(counts: Any) -> bool:
    """Whether ``counts`` are read from units: some unit holds more than one trial (its rows then are
    not independent draws) or a graded outcome."""
    units = counts.units
    if units is None or not len(units):
        return False
    return bool((units["unit_trials"].to_numpy() > 1).any()) or _graded(counts)


def _spanning_clusters(
    data: Any,
    cols: list[str],
    y_true: str | None,
    y_pred: str | None,
    cluster: str,
    pos_label: Any,
    outcome: str | None = None,
) -> None:
    """Refuse clusters whose rows fall in more than one group, naming how many and one of them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteredRowsWarning)  # the cluster is a stratum here, on purpose
        counts = _count(data, [cluster, *cols], y_true, y_pred, "accuracy", pos_label, outcome=outcome)
    trials = counts.trials[counts.trials > 0]
    per = trials.groupby(level=0, sort=True).size()
    spanning = per[per > 1]
    if not len(spanning):
        return
    example = spanning.index[0]
    example = example.item() if isinstance(example, np.generic) else example
    where = trials.xs(example, level=0).index
    groups = [str(v) if not isinstance(v, tuple) else _SEP.join(map(str, v)) for v in where[:3]]
    raise ValueError(
        f"design.cluster={cluster!r}: {len(spanning)} {cluster!r} unit(s) have rows in more than one group "
        f"(e.g. {example!r} in groups {groups}); a unit in two groups makes the groups' rates dependent, "
        "which the audit's differences and verdicts do not allow for: give each unit one group, or a cluster "
        "column nested in the groups"
    )


def _full_index(index: pd.Index, n_columns: int) -> pd.Index:
    """Every combination of the observed levels (crossed groups never observed included)."""
    if n_columns < 2:
        return index
    return pd.MultiIndex.from_product([index.levels[i] for i in range(n_columns)], names=index.names)


#: separator of the factor values in a joined group label
_SEP = " | "


def _label_part(value: Any) -> str:
    """One factor value in a joined label: bare, or JSON-quoted when it could be misread."""
    text = str(value)
    if "|" in text or '"' in text or text != text.strip() or not text:
        return json.dumps(text, ensure_ascii=False)
    return text


def make_layout(cells: pd.Index, cols: list[str]) -> Layout:
    """Factor values and labels of the groups; labels are unique (ambiguous values quoted)."""
    if isinstance(cells, pd.MultiIndex):
        factors = pd.DataFrame({c: cells.get_level_values(i) for i, c in enumerate(cols)})
        labels = [_SEP.join(_label_part(v) for v in key) for key in cells]
    else:
        factors = pd.DataFrame({cols[0]: cells})
        labels = [str(v) for v in cells]
    if len(set(labels)) < len(labels):  # values whose text coincides (1 and "1"): their repr
        labels = [_SEP.join(repr(v) for v in (key if isinstance(key, tuple) else (key,))) for key in cells]
    return Layout(factors.reset_index(drop=True), labels, list(cols))


def check_factor_names(cols: list[str]) -> None:
    """Group columns become table columns: refuse names the audit's tables already use."""
    for col in cols:
        if col == "group" and len(cols) == 1:
            continue  # one group column named "group": the label column is its column
        if col in _RESERVED or any(col == p + c for p in _PREFIXES for c in cols):
            raise ValueError(
                f"groups: the group column {col!r} has the name of a column of the audit's "
                f"tables ({sorted(_RESERVED)}); rename it, e.g. data.rename(columns={{{col!r}: "
                f"'{col}_value'}})"
            )


def factor_columns(layout: Layout, index: Any, prefix: str = "") -> dict:
    """One column per group factor for the groups at ``index`` (-1: no group, missing)."""
    index = np.asarray(index, dtype=int)
    out = {}
    for col in layout.columns:
        if not prefix and col == "group" and len(layout.columns) == 1:
            continue
        out[prefix + col] = layout.factors[col].reindex(index).to_numpy()
    return out


def _count_proxy(
    data: Any,
    cols: list[str],
    y_true: str | None,
    y_pred: str | None,
    name: str,
    pos_label: Any,
    proxy: tuple[Any, ...],
    cluster: str | None = None,
) -> Any:
    """Counts per group and proxy cell (ProxyCounts) for a metric that reads labels (of whole
    units per cell with a ``cluster``)."""
    return _tabulated(data, cols, y_true, y_pred, name, pos_label, proxy, cluster)


@contextmanager
def _named_groups() -> Iterator[None]:
    """Errors about the group columns (a missing column, missing values) name ``groups``, the audit's argument."""
    try:
        yield
    except ValueError as err:
        text = str(err)
        if text.startswith("strata column "):
            raise ValueError("groups column " + text[len("strata column ") :]) from None
        raise


class AuditCounts(NamedTuple):
    """What :func:`tabulate_all` counted: the groups, their rows, each metric's counts, and with a
    cluster the Counts of every row by unit (the design's sizes) and whether some unit holds
    several rows (``by_unit``: the metrics are then read from units)."""

    cells: pd.Index
    rows: np.ndarray
    counts: dict
    clustered: Any = None  # with a cluster: the Counts of every row, by unit
    by_unit: bool = False


@_named_groups()
def tabulate_all(
    data: Any,
    cols: list[str],
    y_true: str | None,
    y_pred: str | None,
    names: list[str],
    pos_label: Any,
    proxy: tuple[Any, ...] | None = None,
    cluster: str | None = None,
    outcome: str | None = None,
) -> AuditCounts:
    """Successes and trials per group for each base metric, and rows per group.

    With a proxy, a metric that reads the true label gets its ProxyCounts; the row counts and
    the selection rate (which reads only ``y_pred``) count every row. With a ``cluster`` whose
    units hold more than one row, or with graded ``outcome`` values (each row then a unit with a
    fractional success), each metric's entry is ``(successes, trials, units)``, the units'
    histogram per group; clusters whose rows fall in two groups are refused. With binary units of
    one row each, the rows are independent draws and the counts are those without the cluster
    (successes int64; fractional successes are float).
    """
    needed = [m for m in _BASE if m in names]
    if "balanced_accuracy" in names:
        needed += [m for m in ("tpr", "tnr") if m not in needed]
    every = y_pred if proxy is not None else y_true  # a proxy's unlabelled rows count as rows
    all_rows = _count(data, cols, every, y_pred, "accuracy", pos_label, cluster, outcome)
    if cluster is not None and all_rows.clusters_span_strata:
        _spanning_clusters(data, cols, every, y_pred, cluster, pos_label, outcome)
    by_unit, graded = _has_units(all_rows), _graded(all_rows)
    units = cluster if cluster is not None and by_unit else None
    rows = all_rows.trials
    index = _full_index(rows.index, len(cols))
    rows = rows.reindex(index, fill_value=0)
    counts = {}
    for name in needed:
        if proxy is not None and name != "selection_rate":
            counts[name] = _count_proxy(data, cols, y_true, y_pred, name, pos_label, proxy, cluster)
            continue
        c = _count(data, cols, every if name == "selection_rate" else y_true, y_pred, name, pos_label, units, outcome)
        counts[name] = (
            # labels and 0/1 outcomes: whole successes (int64); graded outcomes: their sums (float)
            c.successes.reindex(index, fill_value=0).to_numpy(float if graded else np.int64),
            c.trials.reindex(index, fill_value=0).to_numpy(np.int64),
        ) + ((c.units,) if by_unit else ())
    return AuditCounts(index, rows.to_numpy(np.int64), counts, all_rows if cluster is not None else None, by_unit)


def check_model(model: Any, n_columns: int) -> str:
    """The pooled model: ``None`` is "crossed" for several group columns, else "robust"."""
    if model is None:
        return "crossed" if n_columns > 1 else "robust"
    key = check_method(model, MODELS, "model")
    if key == "crossed" and n_columns < 2:
        raise ValueError(
            f"model='crossed' pools along crossed group columns and needs at least two; got "
            f"{n_columns} group column: use model='robust' or 'beta_binomial' (or None)"
        )
    return key


def check_min_trials(min_trials: Any) -> int:
    if min_trials is None:
        raise TypeError(f"min_trials must be an integer >= 1 (1 keeps every measured group), got {min_trials!r}")
    return check_positive_int(min_trials, "min_trials")


#: the audit's tables' own columns (the group columns come in addition)
GROUP_COLUMNS = [
    "group",
    "metric",
    "successes",
    "trials",
    "pool_trials",
    "effective_labels",
    "agreement",
    "proxy_used",
    "units",
    "rate",
    "lower",
    "upper",
    "read",
    "adaptive_lower",
    "adaptive_upper",
    "wilson_lower",
    "wilson_upper",
    "pooled_mean",
    "pooled_lower",
    "pooled_upper",
    "empty",
    "zero_successes",
    "predicted",
    "conflict",
    "in_gap",
    "is_reference",
]


DISPARITY_COLUMNS = [
    "metric",
    "measure",
    "group",
    "reference",
    "estimate",
    "lower",
    "upper",
    "method",
    "posterior_mean",
    "posterior_lower",
    "posterior_upper",
    "p_exceeds",
    "predicted",
]


VERDICT_COLUMNS = [
    "criterion",
    "metric",
    "gap",
    "lower",
    "upper",
    "level",
    "method",
    "tolerance",
    "metric_verdict",
    "p_exceeds",
    "verdict",
    "high",
    "low",
    "note",
]


LABEL_COLUMNS = ["criterion", "metric", "group", "trials", "extra_trials", "extra_rows"]


_PREFIXES = ("reference_", "high_", "low_")


_RESERVED = frozenset(GROUP_COLUMNS + DISPARITY_COLUMNS + VERDICT_COLUMNS + LABEL_COLUMNS)


def _matches(values: list, wanted: Any) -> list[int]:
    """Positions equal to ``wanted``; failing that, those whose text equals its text."""
    exact = [i for i, v in enumerate(values) if _equal(v, wanted)]
    return exact or [i for i, v in enumerate(values) if str(v) == str(wanted)]


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _reference_key(reference: Any, cols: list[str]) -> Any:
    """A mapping ``column -> value`` as the tuple of values in column order."""
    if not isinstance(reference, Mapping):
        return reference
    if set(reference) != set(cols):
        raise ValueError(
            f"reference: a mapping needs one value for each group column {cols} and "
            f"no other key; got {dict(reference)!r}"
        )
    return tuple(reference[c] for c in cols)


def resolve_reference(reference: Any, layout: Layout, spelling: str = "python") -> int | None:
    """The position of the reference group given by the user (None: the default, per metric)."""
    if reference is None:
        return None
    cols, labels = layout.columns, layout.labels
    key = _reference_key(reference, cols)
    rows = list(layout.factors.itertuples(index=False, name=None))
    if isinstance(key, (tuple, list)):
        if len(key) != len(cols):
            raise ValueError(
                f"reference {reference!r} has {len(key)} value(s); give one per group "
                f"column {cols} (a tuple in that order, or a mapping column -> value)"
            )
        found = [g for g, row in enumerate(rows) if all(_matches([v], k) for v, k in zip(row, key, strict=True))]
    elif len(cols) == 1:
        found = _matches([r[0] for r in rows], key)
    else:
        found = [g for g, lab in enumerate(labels) if lab == str(key)]
        found = found or [g for g, row in enumerate(rows) if _SEP.join(map(str, row)) == str(key)]
    if len(found) > 1:
        how = (
            (f"give the reference per group column, as a tuple {tuple(cols)} or a mapping {{column: value}}")
            if spelling == "python"
            else (f"give --reference as the tables label the group: {[labels[g] for g in found[:5]]}")
        )
        raise ValueError(
            f"reference {reference!r} is ambiguous: it names the groups {[rows[g] for g in found[:5]]}; {how}"
        )
    if not found:
        raise ValueError(f"reference {reference!r} is not one of the groups {labels[:10]}")
    return found[0]
