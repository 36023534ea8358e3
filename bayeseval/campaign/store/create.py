"""Building a campaign file from a pool: the rows, their strata and order, the stored settings.

:func:`initialise` checks the pool against the spec (row ids, stratum keys, content columns)
before anything is written, then builds the campaign's SQLite file
(:class:`~bayeseval.campaign.store.store.CampaignStore`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.version import VERSION
from bayeseval.campaign.labels.annotations import (
    ROW_ID_KEY,
)
from bayeseval.campaign.labels.existing import EXISTING_META, check_seed_settings, existing_labels
from bayeseval.campaign.loop.pool import (
    PoolDesign,
    check_columns,
    design_pool,
    proposal_order,
    rule_generator,
    seed_sequences,
    spec_columns,
)
from bayeseval.campaign.loop.proxy_cells import PROXY_META, proxy_meta
from bayeseval.campaign.loop.units import UNITS_META, units_meta
from bayeseval.campaign.spec import CampaignSpec
from bayeseval.campaign.store.schema import RowColumns
from bayeseval.campaign.store.store import CampaignStore

__all__ = ["initialise", "stored_pool"]

_INT64_MAX = 2**63 - 1


def _row_ids(index: pd.Index) -> tuple[str, list[Any]]:
    """The row-id type (INTEGER/TEXT) and the ids as Python values, or raise."""
    if index.has_duplicates:
        dup = index[index.duplicated()][:5].tolist()
        raise ValueError(f"pool index (the row id) must be unique, got duplicates {dup}")
    if index.hasnans:
        raise ValueError("pool index (the row id) has missing values")
    if pd.api.types.is_integer_dtype(index.dtype) or index.inferred_type == "integer":
        ids = index.tolist()
        lo, hi = (min(ids), max(ids)) if ids else (0, 0)
        if hi > _INT64_MAX or lo < -_INT64_MAX - 1:
            bad = hi if hi > _INT64_MAX else lo
            raise ValueError(
                f"pool index (the row id) must fit in a signed 64-bit integer, got {bad}; "
                "use string ids for larger numbers"
            )
        return "INTEGER", [int(x) for x in ids]
    if pd.api.types.is_string_dtype(index.dtype) and index.inferred_type == "string":
        return "TEXT", [str(x) for x in index]
    raise TypeError(
        f"pool index (the row id) must hold integers or strings, got dtype {index.dtype} ({index.inferred_type})"
    )


def _check_keys(keys: list[tuple[Any, ...]], cols: list[str]) -> None:
    """Raise when stratum keys cannot be stored as JSON."""
    try:
        json.dumps(keys)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"strata columns {cols} hold values that cannot be stored ({exc}); convert them to text"
        ) from exc


def _config(spec: CampaignSpec, design: PoolDesign, index_name: Any, content: list[str]) -> str:
    """The configuration stored in a campaign file: the spec plus what it resolved to on the pool."""
    config = spec.to_config()
    config.update(
        strata=design.columns,
        weights=None if spec.weights is None else design.strata.weights.tolist(),
        prior_mean=None if design.strata.prior_mean is None else design.strata.prior_mean.tolist(),
        costs=None if design.strata.costs is None else design.strata.costs.tolist(),
        threshold=None if design.strata.threshold is None else design.strata.threshold.tolist(),
        anytime_concentration=None if design.strata.concentration is None else design.strata.concentration.tolist(),
        pos_label=design.positive,
        label_set=design.labels.values,
        index_name=index_name if isinstance(index_name, (str, type(None))) else str(index_name),
        content=content,
    )
    try:
        return json.dumps(config, default=_json_scalar)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"campaign settings cannot be stored: {exc}") from exc


def _pool_rows(rids: list[Any], design: PoolDesign, queues: list[np.ndarray]) -> RowColumns:
    """Rows of the store's pool table: id, stratum code, prediction, score, eligible, order.

    ``queues`` lists each stratum's eligible rows in proposal order; a row's order is its
    place in its stratum's queue (0 for rows never proposed).
    """
    order = np.zeros(len(rids), dtype=np.int64)
    if queues:
        sizes = np.array([len(q) for q in queues], dtype=np.int64)
        starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
        order[np.concatenate(queues)] = np.arange(int(sizes.sum())) - starts
    scores = design.score.tolist() if design.score is not None else None
    return RowColumns(
        (
            rids,
            design.codes.tolist(),
            design.y_pred.tolist(),
            scores,
            design.eligible.astype(int).tolist(),
            order.tolist(),
        )
    )


def _check_content(content: Any, pool: pd.DataFrame, spec: CampaignSpec, design: PoolDesign) -> list[str]:
    """The content columns as a list, or raise naming the offending column."""
    if content is None:
        return []
    cols = [content] if isinstance(content, str) else content
    if not np.iterable(cols) or not all(isinstance(c, str) for c in cols):
        raise TypeError(f"content must be a column name or a list of column names, got {content!r}")
    cols = list(cols)
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise ValueError(f"content names columns more than once: {dup}")
    own = {c: "stratum column" for c in design.columns}
    own.update(
        {
            "round": "proposal round",
            ROW_ID_KEY: "row id key",
            "label": "label column of batch files",
            "true_label": "label column of batch files",
            str(pool.index.name or "row"): "row id column",
            spec.y_pred: "prediction (y_pred; batches show it with show_prediction)",
        }
    )
    if spec.score:
        own[spec.score] = "score column (batches show it with show_prediction)"
    for c in cols:
        if c not in pool.columns:
            raise ValueError(f"content column {c!r} is not in pool; columns are {list(pool.columns)[:20]}")
        if c in own:
            raise ValueError(f"content column {c!r} collides with the campaign's {own[c]}; rename it in the pool")
    return cols


def _content_rows(pool: pd.DataFrame, cols: list[str], rids: list[Any]) -> Iterator[tuple[Any, str]] | None:
    """``(rid, JSON list of the content values)`` per pool row (None without content), or raise."""
    if not cols:
        return None
    columns = []
    for c in cols:
        values = pool[c]
        if pd.api.types.is_datetime64_any_dtype(values.dtype):
            values = values.map(lambda x: None if pd.isna(x) else x.isoformat())
        vals = values.astype(object).where(values.notna(), None).tolist()
        vals = [None if isinstance(v, float) and not np.isfinite(v) else v for v in vals]
        bad = next((v for v in vals if v is not None and not isinstance(v, (str, int, float, bool))), None)
        if bad is not None:
            raise ValueError(
                f"content column {c!r} holds values that cannot be stored ({type(bad).__name__} "
                f"{bad!r}); convert them to text"
            )
        columns.append(vals)
    return ((rid, json.dumps(list(vals))) for rid, *vals in zip(rids, *columns, strict=True))


def _check_rule(spec: CampaignSpec) -> None:
    if not isinstance(spec.rule, str):
        raise TypeError(f"rule must be a rule name for a stored campaign, got {spec.rule!r}")


def _checked_pool(pool: pd.DataFrame, spec: CampaignSpec) -> tuple[str, list[Any], PoolDesign]:
    """The row-id type, the row ids and the design of a pool, checked for a stored campaign, or raise."""
    _check_rule(spec)
    check_columns(pool, spec_columns(spec), "pool")
    rid_type, rids = _row_ids(pool.index)
    design = design_pool(spec, pool)
    _check_keys(design.keys, design.columns)
    return rid_type, rids, design


@dataclass(frozen=True, eq=False)
class StoredPool:
    """What :func:`initialise` would store of a pool without content or labels; nothing is written.

    Attributes
    ----------
    rids : list
        The row ids, as Python values.
    design : PoolDesign
        The pool as the campaign sees it.
    config : str
        The configuration's JSON (the ``meta`` table's ``config``).
    proxy : str or None
        The proxy column's JSON (the ``meta`` table's ``proxy``), None without a proxy.
    """

    rids: list[Any]
    design: PoolDesign
    config: str
    proxy: str | None


def stored_pool(pool: pd.DataFrame, spec: CampaignSpec) -> StoredPool:
    """Check a pool as :func:`initialise` does and give what it would store, without writing a file.

    A campaign replayed in memory (:func:`~bayeseval.campaign.proxy_replay.replay_proxy`) reads
    the same design, configuration and proxy values as the campaign created on the pool, and
    raises the same errors.

    Parameters
    ----------
    pool : pandas.DataFrame
        The pool, indexed by row id.
    spec : CampaignSpec
        The campaign's settings (resolved for the pool: :meth:`CampaignSpec.for_pool`).

    Returns
    -------
    StoredPool
        The row ids, the design, the configuration and the proxy values as stored.

    Examples
    --------
    >>> pool = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
    >>> spec = CampaignSpec(strata="g", y_pred="pred").for_pool(len(pool))
    >>> stored = stored_pool(pool, spec)
    >>> stored.design.keys, json.loads(stored.config)["strata"]
    ([('a',), ('b',)], ['g'])
    """
    _, rids, design = _checked_pool(pool, spec)
    config = _config(spec, design, pool.index.name, [])
    proxy = None if spec.proxy is None else proxy_meta(pool, spec.proxy, rids, design.labels.values)
    return StoredPool(rids, design, config, proxy)


def initialise(
    path: str | PathLike[str],
    pool: pd.DataFrame,
    spec: CampaignSpec,
    busy_timeout: Any,
    content: Any = None,
    labels: Any = None,
    inclusion: Any = None,
) -> CampaignStore:
    """Check the pool against the spec and write the campaign file (nothing is written on error).

    ``labels`` (and ``inclusion``) are rows labelled before the campaign
    (:func:`~bayeseval.campaign.labels.existing.existing_labels`), recorded in the new file.
    """
    _check_rule(spec)
    busy_timeout = CampaignStore.check_timeout(busy_timeout)
    rid_type, rids, design = _checked_pool(pool, spec)
    cols = _check_content(content, pool, spec, design)
    content_rows = _content_rows(pool, cols, rids)
    config = _config(spec, design, pool.index.name, cols)
    units = None if spec.design.cluster is None else units_meta(pool, spec.design.cluster, rids, design.codes)
    existing = existing_labels(labels, inclusion, pool, rids, rid_type == "INTEGER", design, spec.metrics[0])
    if existing is not None and existing.unequal is not None:  # seeded
        check_seed_settings(spec, existing.unequal)
    seed = seed_sequences(spec.random_seed, 1)[0]
    rng = rule_generator(seed)
    meta = {"config": config, "version": VERSION, "rng_state": json.dumps(rng.bit_generator.state)}
    if spec.proxy is not None:
        meta[PROXY_META] = proxy_meta(pool, spec.proxy, rids, design.labels.values)
    if existing is not None:
        meta[EXISTING_META] = existing.meta
    if units is not None:
        meta[UNITS_META] = units
    store = CampaignStore.initialise(
        path,
        meta=meta,
        rid_type=rid_type,
        strata_keys=design.keys,
        pool_rows=_pool_rows(rids, design, proposal_order(design, seed)),
        n_rows=design.strata.n_rows.tolist(),
        n_eligible=design.strata.n_eligible.tolist(),
        busy_timeout=busy_timeout,
        content_rows=content_rows,
        existing_rows=() if existing is None else existing.rows,
    )
    return store


def _json_scalar(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{obj!r} ({type(obj).__name__}) is not a storable value")
