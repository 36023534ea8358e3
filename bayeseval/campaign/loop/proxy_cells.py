"""Campaigns with a proxy: its cells per stratum, Neyman allocation across them, the proxy intervals.

A proxy campaign stores the pool's proxy column in the campaign file (meta key ``proxy``:
``[row id, value]`` pairs). Within a stratum every eligible row falls in one proxy cell, the
cell :func:`~bayeseval.proxy_ci` gives it: for a label proxy whether the proxy, read as the
truth, makes the row a success; for a score one of 5 equal-count bins of the stratum's rows.
The design samples at random within cells (each cell's rows in the stored random order of
its stratum), so a labelled row's inclusion probability is its cell's labelled share
``n_c / N_c``: it follows from the stored design and the stored labels alone, so estimates
are the same after a crash and a resume. With equal probabilities within a cell the Hajek
cell rates of ``proxy_ci(..., design=Design(inclusion=...))`` are the cells' plain rates and their
effective counts are the cells' own counts, so each stratum gets the post-stratified
estimate with the cells' small-count intervals.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._backends.pandas_backend import score_bins
from bayeseval._kernels.guarantee import guarantee_stop_level
from bayeseval._kernels.proxy import cells_interval, merge_sparse_cells
from bayeseval.campaign.loop.forecast import feasibility_table, full_size_state
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.counts.design import Design
from bayeseval.counts.metrics import get_metric
from bayeseval.counts.proxy import N_CELLS, pool_proxy_kind
from bayeseval.estimate.proxy import proxy_ci

__all__ = ["ProxyDesign", "proxy_meta", "neyman_cells"]

PROXY_META = "proxy"
#: the one-proportion method of the proxy intervals (:func:`~bayeseval.proxy_ci`'s default)
PROXY_METHOD = "clopper_pearson"


def proxy_meta(pool: pd.DataFrame, column: str, rids: list[Any], labels: list[Any]) -> str:
    """The proxy column as the JSON stored in the campaign file.

    The column passes the checks :func:`~bayeseval.proxy_ci` runs
    (:func:`~bayeseval.counts.proxy.pool_proxy_kind` with the campaign's ``labels``), so a
    proxy the estimator would refuse is refused here, before anything is written.
    """
    pool_proxy_kind(pool, column, labels)
    values = pool[column]
    vals = values.to_numpy().tolist()
    try:
        return json.dumps([[r, v] for r, v in zip(rids, vals, strict=True)])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"proxy column {column!r} holds values that cannot be stored ({exc})") from exc


def neyman_cells(
    pool: np.ndarray, have: np.ndarray, successes: np.ndarray, labelled: np.ndarray, available: np.ndarray, m: int
) -> np.ndarray:
    """Labels per cell: Neyman allocation on the cells' rate spread, one label at a time.

    ``n_c`` is steered towards ``N_c sd_c / sum(N sd)`` of the stratum's labels, with
    ``sd_c = sqrt(r_c (1 - r_c))`` at ``r_c = (s_c + 1) / (n_c + 2)`` (a uniform prior, so a
    cell with no labels yet gets some). Each label goes to the cell furthest below its share,
    among cells with rows left; ties go to the first cell.

    Parameters
    ----------
    pool, have, successes, labelled, available : numpy.ndarray
        Per cell: eligible rows, rows labelled or pending, labelled successes, labelled
        rows, and rows never proposed.
    m : int
        Labels to place.

    Returns
    -------
    numpy.ndarray
        Labels per cell (sums to ``min(m, available.sum())``).

    Examples
    --------
    >>> neyman_cells(np.array([900, 100]), np.zeros(2), np.zeros(2), np.zeros(2),
    ...              np.array([900, 100]), 10).tolist()
    [9, 1]
    """
    rate = (successes + 1.0) / (labelled + 2.0)
    share = pool * np.sqrt(rate * (1.0 - rate))
    share = share / share.sum() if share.sum() > 0 else np.full(len(pool), 1.0 / len(pool))
    have = np.asarray(have, dtype=float).copy()
    left = np.asarray(available, dtype=np.int64).copy()
    take = np.zeros(len(pool), dtype=np.int64)
    total = have.sum() + m
    for _ in range(int(min(m, left.sum()))):
        gap = np.where(left > 0, share * total - have, -np.inf)
        c = int(np.argmax(gap))
        take[c] += 1
        have[c] += 1
        left[c] -= 1
    return take


class ProxyDesign:
    """The proxy cells of a campaign's pool and the campaign's proxy estimates.

    Parameters
    ----------
    pool : pandas.DataFrame
        Indexed by row id: ``stratum`` (code), ``prediction``, ``eligible``, ``ord``, ``proxy``.
    metric : str
        The campaign's metric.
    positive : Any
        Its positive class.
    label_set : list
        The campaign's known labels (a proxy whose values are all among them is a label proxy).
    column : str
        The proxy's column in the pool the campaign was created from (for messages).
    """

    def __init__(
        self, pool: pd.DataFrame, metric: str, positive: Any, label_set: list[Any], column: str = "proxy"
    ) -> None:
        self.metric = get_metric(metric)
        self.positive = positive
        self.label_set = list(label_set)
        known = set(label_set) | set(pd.unique(pool["prediction"]))
        self.kind = pool_proxy_kind(pool, "proxy", known, column=column)
        if self.kind == "label":
            cell = self.metric.masks(pool["proxy"].to_numpy(), pool["prediction"].to_numpy(), positive)[1]
        else:
            score = pd.to_numeric(pool["proxy"], errors="raise").astype(float)
            cell = score_bins(score, pool, ["stratum"], N_CELLS).to_numpy()
        self.pool = pool.assign(cell=np.asarray(cell, dtype=np.int64)).sort_values(["stratum", "ord"])
        elig = self.pool[self.pool["eligible"] == 1]
        self.cell_pool = elig.groupby(["stratum", "cell"]).size()

    def inclusion(self, labelled: pd.Index) -> pd.Series:
        """Each labelled row's inclusion probability: its cell's labelled rows over its eligible rows."""
        rows = self.pool.loc[labelled, ["stratum", "cell"]]
        n = rows.groupby(["stratum", "cell"]).size()
        key = pd.MultiIndex.from_frame(rows)
        return pd.Series((n.reindex(key).to_numpy() / self.cell_pool.reindex(key).to_numpy()), index=labelled)

    def sample(self, code: int, m: int, proposed: set[Any], success: pd.Series) -> list[Any]:
        """The next ``m`` rows of stratum ``code``: cells by :func:`neyman_cells`, rows in stored order."""
        rows = self.pool[(self.pool["stratum"] == code) & (self.pool["eligible"] == 1)]
        cells = self.cell_pool.loc[code]
        free = rows[~rows.index.isin(list(proposed))]
        lab = success.reindex(rows.index).dropna()
        lab_cell = rows.loc[lab.index, "cell"]
        take = neyman_cells(
            cells.to_numpy(float),
            rows[rows.index.isin(list(proposed))].groupby("cell").size().reindex(cells.index, fill_value=0).to_numpy(),
            lab.groupby(lab_cell).sum().reindex(cells.index, fill_value=0).to_numpy(float),
            lab.groupby(lab_cell).size().reindex(cells.index, fill_value=0).to_numpy(float),
            free.groupby("cell").size().reindex(cells.index, fill_value=0).to_numpy(),
            m,
        )
        out: list[Any] = []
        for c, k in zip(cells.index, take, strict=True):
            if k:
                out.extend(free.index[free["cell"].to_numpy() == c][:k].tolist())
        return out

    def table(self, labels: pd.Series, codes: np.ndarray, level: float) -> pd.DataFrame:
        """Per-stratum proxy estimates (:func:`~bayeseval.proxy_ci` table), one row per code."""
        columns = ["rate", "lower", "upper", "trials", "agreement", "effective_labels"]
        labels = labels.dropna()
        if labels.empty:
            out = pd.DataFrame(np.nan, index=codes, columns=columns)
            out["lower"], out["upper"], out["trials"], out["effective_labels"] = 0.0, 1.0, 0, 0.0
            return out
        frame = pd.DataFrame(
            {"stratum": self.pool["stratum"], "y_pred": self.pool["prediction"], "proxy": self.pool["proxy"]}
        )
        frame["y_true"] = labels.reindex(frame.index).astype(object)
        frame["inclusion"] = self.inclusion(labels.index).reindex(frame.index)
        res = proxy_ci(
            frame,
            y_true="y_true",
            y_pred="y_pred",
            proxy="proxy",
            strata="stratum",
            metric=self.metric.name,
            pos_label=self.positive,
            level=level,
            design=Design(inclusion="inclusion"),
            method=PROXY_METHOD,
            n_cells=N_CELLS,
            label_set=self.label_set,
        )
        return res.table.reindex(codes)[columns]

    @fill_doc()
    def feasibility(self, state: RuleState, codes: Any, *, warn: bool = False) -> pd.DataFrame:
        """Whether each stratum can meet its target with every row labelled, whatever the proxy.

        The worst case is a proxy that tells nothing about the truth: every cell of the
        stratum has the stratum's rate. With every eligible row labelled at the planning rate
        (:func:`~bayeseval.campaign.loop.forecast.full_size_state`), the interval the campaign
        stops on is then the cells' MOVER interval (the cells' sizes are the pool's, merged
        as the proxy intervals merge sparse cells) at the level the stratum guarantee stops
        on (:func:`guarantee_stop_level`); a stratum is infeasible only when even that
        interval is wider than the target. A proxy that separates errors narrows it.

        Parameters
        ----------
        state : RuleState
            The campaign's state on its labels alone (not the proxy intervals).
        codes : array_like of int
            The stratum code of each of ``state``'s strata.
        {feasibility_warn}

        {feasibility_returned}

        Examples
        --------
        >>> pool = pd.DataFrame({"stratum": [0] * 200 + [1] * 4000, "prediction": 0, "eligible": 1,
        ...                      "ord": range(4200), "proxy": [0, 1] * 2100})
        >>> design = ProxyDesign(pool, "error_rate", 1, [0, 1])
        >>> st = RuleState.from_counts([0, 0], [0, 0], available=[200, 4000], strata=["small", "large"],
        ...                            target_halfwidth=0.05, guarantee="stratum")
        >>> design.feasibility(st, [0, 1])["feasible"].tolist()
        [False, True]
        """
        full = full_size_state(state)
        level = guarantee_stop_level(state.level)
        hw = np.empty(len(full.trials))
        for i, code in enumerate(codes):
            sizes = self.cell_pool.loc[code].to_numpy(float) if code in self.cell_pool.index.levels[0] else np.ones(1)
            groups = merge_sparse_cells(sizes)
            sizes = np.bincount(groups, weights=sizes)
            n = full.trials[i] * sizes / sizes.sum()
            _, lo, hi = cells_interval(
                full.successes[i] / max(full.trials[i], 1) * n, n, sizes / sizes.sum(), level, PROXY_METHOD
            )
            hw[i] = (float(np.ravel(hi)[0]) - float(np.ravel(lo)[0])) / 2.0
        target = state.target_halfwidth
        return feasibility_table(full.trials.astype(float), hw, hw <= target, state.strata, target, warn, proxy=True)
