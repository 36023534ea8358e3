r"""Per-stratum intervals from a proxy on every row and a few true labels.

A *proxy* is a column known for every row of the pool: a cheap label of the same kind as
``y_true`` (an LLM judge's label, a stronger model's prediction) or a score (a probability).
Rows whose ``y_true`` is missing are the unlabelled rows; the labelled rows must have been
chosen at random within each stratum, or with known inclusion probabilities
(``design=Design(inclusion=...)``).

Within a stratum the proxy puts every trial row in a cell: for a label proxy, whether the
proxy, read as the truth, makes the row a success (e.g. "the judge says the prediction is
right"); for a score, one of ``n_cells`` equal-count bins of the score over the stratum's
rows (5 by default: Cochran 1968, *Biometrics* 24, found five classes of a continuous
variable capture about 90% of what stratifying on it can). The cells' shares are known from
the pool, their rates are estimated from the labels that fall in them, and the stratum's rate
is the post-stratified estimate :math:`\sum_c (N_c/N)\, s_c/n_c` -- the prediction-powered
estimate with the cells as proxy and the rectifier tuned optimally. A wrong proxy therefore
never biases the estimate; it only fails to narrow the interval, and where its cells do not
pay (their estimated variance is not below 0.8 of the labels-only variance) the stratum gets
the labels-only interval. The interval for the weighted sum of cell rates, its small-count
rules and their exact-enumeration coverage are in :mod:`bayeseval._kernels.proxy`.

With inclusion probabilities :math:`\pi_i` the cell rates are Hajek estimates
:math:`\hat r_c = \sum_i y_i/\pi_i \big/ \sum_i 1/\pi_i` over the cell's labelled rows, with
the with-replacement variance :math:`\hat V_c = \sum_i (y_i - \hat r_c)^2/\pi_i^2 \big/
(\sum_i 1/\pi_i)^2`; each cell enters the same MOVER combination with its effective counts
:math:`n^*_c = \hat r_c(1-\hat r_c)/\hat V_c` (Kish's :math:`(\sum 1/\pi)^2/\sum 1/\pi^2` at a
rate of 0 or 1), :math:`s^*_c = \hat r_c n^*_c` (Korn and Graubard 1998, *Survey
Methodology* 24). With equal probabilities within a stratum this is the unweighted cells'
interval: the interval without ``inclusion`` where that one reads the proxy, but not where it
switches to labels only (with ``inclusion`` the cells are always read when there are several
cell groups); with unequal ones it is an asymptotic interval (its coverage is
measured by simulation in ``tests/report/test_pipeline.py`` and reported on the validation page).

Supported metrics are those whose trials are known on unlabelled rows: ``error_rate``,
``accuracy`` (every row is a trial), ``precision`` and ``npv`` (trials set by ``y_pred``).
For ``recall``, ``fpr`` and ``specificity`` a row is a trial only when its true label is
positive (negative), unknown on unlabelled rows, so the proxy would have to predict the
trials too (a ratio of two proxy-assisted estimates); that is not offered here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import check_level
from bayeseval._backends.dispatch import backend_for
from bayeseval._kernels.binomial import binomial_bounds, normalise_method
from bayeseval._kernels.proxy import (
    MIN_CELL_TRIALS,
    cells_interval,
    hajek_counts,
    merge_sparse_cells,
    proxy_interval,
    units_proxy_interval,
)
from bayeseval.counts.design import Design
from bayeseval.counts.metrics import Metric
from bayeseval.counts.proxy import ProxyCounts, tabulate_proxy

__all__ = ["ProxyCI", "proxy_ci"]


@dataclass(frozen=True, eq=False, repr=False)
class ProxyCI(Result):
    """Per-stratum estimates and intervals that use a proxy and a few labels.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per stratum: ``rate`` (the proxy-assisted estimate), ``lower``, ``upper``,
        ``trials`` (labelled trials), ``pool_trials`` (trials among all rows, labelled or
        not), ``cells`` (proxy cells after merging sparse ones), ``proxy_used`` (whether the interval reads the proxy's cells),
        ``agreement`` (share of labelled trials where a label proxy's verdict equals the
        truth; NaN for a score) and ``effective_labels`` (the labels the proxy's cells are
        worth: labelled trials times the labels-only variance over the cells' variance).
    metric, level, method, proxy_kind : str, float, str, str
        The metric, confidence level, one-proportion method of the limits, and
        ``"label"`` or ``"score"``.
    """

    table: pd.DataFrame
    metric: str
    level: float
    method: str
    proxy_kind: str
    title: ClassVar[str] = "Proxy-assisted intervals per stratum"


def _agreement(cells: pd.DataFrame, kind: str) -> float:
    """Share of labelled trials where a label proxy's verdict (cell 1: success) is the truth
    (with units: each row's own verdict, counted in ``agreements``)."""
    n = int(cells["trials"].sum())
    if kind != "label" or n == 0:
        return np.nan
    if "agreements" in cells.columns:
        return float(cells["agreements"].sum() / n)
    s = cells["successes"].reindex([0, 1], fill_value=0)
    lab = cells["trials"].reindex([0, 1], fill_value=0)
    return float((s.loc[1] + lab.loc[0] - s.loc[0]) / n)


def _stratum_row(cells: pd.DataFrame, level: float, method: str) -> dict[str, Any]:
    s, n = cells["successes"].to_numpy(float), cells["trials"].to_numpy(float)
    pool = cells["pool_trials"].to_numpy(float)
    shares = pool / max(pool.sum(), 1.0)
    b = proxy_interval(s, n, shares, level, method)
    return {
        "rate": float(b.estimate),
        "lower": float(b.lower),
        "upper": float(b.upper),
        "trials": int(n.sum()),
        "pool_trials": int(pool.sum()),
        "cells": int(b.groups.max()) + 1 if n.sum() else 0,
        "proxy_used": bool(b.uses_proxy),
        "effective_labels": float(b.effective_labels),
    }


def _smoothed_var(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    rate = (s + 0.5) / (n + 1.0)
    return rate * (1.0 - rate) / np.maximum(n, 1e-12)


def _effective_counts(w1: np.ndarray, w: np.ndarray, b1: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hajek rate and effective (successes, trials) per group from the inverse-probability sums
    of 0/1 outcomes (:func:`~bayeseval._kernels.proxy.hajek_counts`, where ``sum w^2 y^2`` is ``b1``)."""
    return hajek_counts(w, w1, b, b1, b1)


def _ipw_row(cells: pd.DataFrame, level: float, method: str) -> dict[str, Any]:
    """A stratum's Hajek post-stratified estimate and interval (module docstring)."""
    n = cells["trials"].to_numpy(float)
    pool = cells["pool_trials"].to_numpy(float)
    sums = [cells[c].to_numpy(float) for c in ("ipw_successes", "ipw_trials", "ipw2_successes", "ipw2_trials")]
    total = int(n.sum())
    row = {
        "trials": total,
        "pool_trials": int(pool.sum()),
        "cells": 0,
        "proxy_used": False,
        "effective_labels": 0.0,
        "rate": np.nan,
        "lower": 0.0,
        "upper": 1.0,
    }
    if total == 0:
        return row
    groups = merge_sparse_cells(n, MIN_CELL_TRIALS)
    k = int(groups.max()) + 1
    g = [np.bincount(groups, weights=v, minlength=k) for v in [*sums, pool / pool.sum()]]
    gs, gn = _effective_counts(*g[:4])
    ps, pn = _effective_counts(*(np.array([v.sum()]) for v in sums))
    v_cells = float((g[4] ** 2 * _smoothed_var(gs, gn)).sum())
    v_plain = float(_smoothed_var(ps, pn)[0])
    uses = k > 1  # no switch to labels only: a data-dependent choice would bias the estimate
    if uses:
        est, lo, hi = cells_interval(gs, gn, g[4], level, method)
    else:
        est = ps[0] / pn[0]
        lo, hi = binomial_bounds(ps, pn, 1.0 - level, method)
    row.update(
        rate=float(est),
        lower=float(np.ravel(lo)[0]),
        upper=float(np.ravel(hi)[0]),
        cells=k,
        proxy_used=bool(uses),
        effective_labels=total * v_plain / v_cells,
    )
    return row


def in_units(counts: ProxyCounts) -> bool:
    """Whether the counts need the units' interval: a cluster with a unit of more than one trial."""
    units = counts.units
    return units is not None and bool((units["unit_trials"].to_numpy() > 1).any() or _pool_units_larger(counts))


def _pool_units_larger(counts: ProxyCounts) -> bool:
    t = counts.table
    return "pool_units" in t.columns and bool((t["pool_trials"] > t["pool_units"]).any())


def _units_table(counts: ProxyCounts, level: float) -> pd.DataFrame:
    """Per-stratum estimates and intervals from units (:func:`~bayeseval._kernels.proxy.units_proxy_interval`)."""
    assert counts.units is not None
    t = counts.table
    strata = counts.strata
    names = [n for n in t.index.names if n != "cell"]
    key = t.index.droplevel("cell") if len(names) > 1 else t.index.get_level_values(names[0])
    code = strata.get_indexer(key)
    cell = t.groupby(code, sort=False).cumcount().to_numpy()  # the cells' order within the stratum
    position = pd.Series(cell, index=t.index)
    cells = pd.DataFrame({"stratum": code, "cell": cell, "pool_trials": t["pool_trials"].to_numpy(float)})
    h = counts.units
    h_key = pd.MultiIndex.from_frame(h[names]) if len(names) > 1 else pd.Index(h[names[0]])
    h_index = pd.MultiIndex.from_frame(h[[*names, "cell"]])
    hist = pd.DataFrame(
        {
            "stratum": strata.get_indexer(h_key),
            "cell": position.reindex(h_index).to_numpy(dtype=np.int64),
            "unit_successes": h["unit_successes"].to_numpy(float),
            "unit_trials": h["unit_trials"].to_numpy(float),
            "units": h["units"].to_numpy(float),
        }
    )
    b = units_proxy_interval(cells, hist, len(strata), level, by_cell=counts.inclusion is not None)
    per = t.groupby(code, sort=True)[["trials", "pool_trials", "units", "pool_units"]].sum()
    labelled = per["trials"].to_numpy()
    return pd.DataFrame(
        {
            "rate": b.estimate,
            "lower": b.lower,
            "upper": b.upper,
            "trials": labelled.astype(np.int64),
            "pool_trials": per["pool_trials"].to_numpy(np.int64),
            "cells": np.where(labelled > 0, b.groups.max(axis=1) + 1, 0),
            "proxy_used": b.uses_proxy,
            "agreement": [_agreement(cells_of, counts.proxy_kind) for _, cells_of in counts.stratum_cells()],
            "effective_labels": b.effective_labels,
            "n_units": per["units"].to_numpy(np.int64),
            "pool_units": per["pool_units"].to_numpy(np.int64),
        },
        index=strata,
    )


def proxy_table(counts: ProxyCounts, level: float, method: str) -> pd.DataFrame:
    """Per-stratum proxy estimates and intervals from :class:`ProxyCounts` (see :func:`proxy_ci`)."""
    if in_units(counts):
        return _units_table(counts, level)
    row_of = _ipw_row if counts.inclusion is not None else _stratum_row
    rows = []
    for _key, cells in counts.stratum_cells():
        row = row_of(cells, level, method)
        row["agreement"] = _agreement(cells, counts.proxy_kind)
        rows.append(row)
    columns = [
        "rate",
        "lower",
        "upper",
        "trials",
        "pool_trials",
        "cells",
        "proxy_used",
        "agreement",
        "effective_labels",
    ]
    return pd.DataFrame(rows, index=counts.strata, columns=columns)


def proxy_ci(
    data: pd.DataFrame | ProxyCounts | Any,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    proxy: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    pos_label: Any = None,
    level: float = 0.95,
    method: str = "clopper_pearson",
    n_cells: int = 5,
    design: Design | Mapping[str, Any] | None = None,
    label_set: Sequence[Any] | None = None,
) -> ProxyCI:
    r"""Per-stratum intervals of a metric from a proxy on every row and the labelled rows.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or ProxyCounts
        One row per pool row; ``y_true`` is missing (NaN/None) on the unlabelled rows. Or
        the counts :func:`~bayeseval.tabulate` gives with ``proxy=`` (then the column
        arguments, ``metric``, ``pos_label``, ``n_cells`` and ``inclusion`` are not given).
    y_true, y_pred, proxy : str
        Columns: true labels (missing where not labelled), predictions, and the proxy
        (a label of the same kind as ``y_true``, or a numeric score), known on every row.
    strata : str or list of str, optional
        Column(s) defining the strata; ``None`` gives one stratum ``"all"``. Labelled rows
        must be a random sample within each stratum (or give ``inclusion``).
    metric : str or Metric
        ``error_rate`` (default), ``accuracy``, ``precision`` or ``npv``.
    pos_label : optional
        The positive class for ``precision``/``npv`` (1 by default for 0/1 labels).
    level : float
        Confidence level.
    method : str
        One-proportion method of the cell and labels-only limits: ``"clopper_pearson"``
        (default: never below the level in the exact validation, so each stratum's interval
        keeps its coverage whatever its rate), or ``"wilson"`` (narrower, with Wilson's own
        dips below the level at small counts), ``"jeffreys"``, ``"agresti_coull"``, ``"wald"``.
    n_cells : int
        Bins of a score proxy (equal-count bins over the stratum's rows; ignored for
        a label proxy).
    design : Design or dict, optional
        The sampling design (:class:`~bayeseval.Design`). Its ``inclusion``: the column of
        each labelled row's inclusion probability (known by the design that chose the rows
        for labelling): the cell rates become inverse-probability weighted (Hajek)
        estimates, approximately unbiased (bias of order 1/labels) whatever the design, and
        the interval is asymptotic (see Notes). Its ``cluster``: rows sharing a value within a
        stratum are one sampling unit (an item answered several times, each answer judged,
        the labelled items labelled on every answer); the estimand is the stratum's row-level
        rate and the interval is the proxy interval over units (see "Units" in Notes).
        With both (a calibration set chosen by the judge's verdict, with epochs) the
        labelled units must be drawn at random within each proxy cell: one probability per
        unit and per cell (see "Units" in Notes). ``population="pool"`` is refused (ValueError).
    label_set : sequence, optional
        Every class ``y_true`` may hold. By default a true label must be a value that the
        predictions or a label proxy take (either of 0/1 makes both known): any other value,
        such as ``-1`` or ``"unlabelled"`` marking the rows nobody labelled, is refused
        (unlabelled rows hold a missing value). Declare a class the model and the proxy
        never give here.

    Returns
    -------
    ProxyCI
        Per-stratum ``estimate``, ``lower``, ``upper``, ``labelled``, ``trials``, ``cells``,
        ``proxy_used``, ``agreement`` and ``effective_labels`` in ``table``.

    Raises
    ------
    TypeError
        ``data`` is of an unsupported type (Spark data included).
    ValueError
        A column is missing; ``y_pred``, ``proxy`` or strata hold missing values; the
        metric's trials need the true label (``recall``, ``fpr``, ``specificity``); the
        proxy is neither labels nor numbers (text such as ``"0.9"`` or ``"yes"`` next to 0/1
        labels), or holds ``inf``; a true label that neither the predictions nor a label
        proxy take and that ``label_set`` does not declare; an inclusion probability outside
        (0, 1] on a labelled row; bad ``level``, ``method`` or ``n_cells``.

    Notes
    -----
    With Clopper-Pearson limits (the default) the exact coverage at level 0.95 with a
    binary proxy is never below 0.955 (every labelled table enumerated; Wilson limits and
    widths against labels-only Wilson in docs/validation.md, section 7). A useless proxy
    (agreement 0.5) gives the labels-only width; the better the proxy agrees with the
    labels, the narrower the interval.

    With ``inclusion`` and unequal probabilities the interval uses effective counts from
    the estimated variance: an asymptotic interval, not an exact one; its measured
    coverage is on the validation page (section 7).

    **Units** (``design=Design(cluster=...)``). The cell of a unit is its proxy aggregated
    over the unit's rows: a label proxy's majority verdict (a tie counts as a pass), a
    score's bin of the unit's mean score. The labelled units of a cell are a random sample of
    that cell's units, so the cell's row-level rate (its labelled units' successes over their
    trials) gets the finite-sample betting interval of a ratio of unit totals
    (:func:`bayeseval._kernels.bounded_mean.units_ci`); the cells enter with their known row
    shares, combined by MOVER as for rows, each at the full level; sparse cells merge at 3
    labelled units, and the stratum reads labels only (the betting interval of all its
    labelled units) where the cells' variance is not below 0.8 of that one, the rules of the
    rows' path. ``method`` is not used then. The table gains ``n_units`` and ``pool_units``,
    ``agreement`` is per row (each answer's own verdict) and ``effective_labels`` is what the
    interval in use is worth in independent labelled rows. Units that all hold one row give
    exactly the interval without a cluster. Measured (``tests/estimate/test_proxy_units.py``,
    slow, 600 seeded datasets of 4 categories x 60 items x 5 epochs, item accuracy
    Beta(1.2, 0.3), a judge agreeing 85% per answer, 20 items labelled per category, level
    0.95, MC SE 0.009): each category's rate (its proxy cells' process rates at the pool's row
    shares) covered 0.995-1.000 of the time, against 0.81-0.86 for the same data read as
    independent rows; mean width 0.333 against 0.364 for the labels-only units interval
    (median ratio 0.94; the cells were read in 60% of the categories).

    **Units chosen by proxy cell** (``design=Design(cluster=..., inclusion=...)``: "label 10
    items the judge passed and 10 it failed", each item answered several times). The labelled
    units of a cell are a random sample of that cell, not of the stratum, so the inclusion
    probability must be one value per unit and per (stratum, cell) among the labelled units
    (else ValueError naming ``design.inclusion``); each cell keeps its own betting interval
    (cells are not merged: that would pool units drawn at different rates), the cells are
    always read (no switch to labels only), and the cells' known row shares weight them, as
    above. A cell with units but none labelled enters with limits [0, 1] and leaves the
    estimate NaN. Units of one row give the interval with ``inclusion`` and no cluster bit for
    bit. Measured (``tests/estimate/test_proxy_units_selected.py``, slow, 300 seeded datasets
    of 4 categories x 60 items x 5 epochs, 10 judge-pass and 10 judge-fail items labelled per
    category, level 0.95, MC SE 0.013): coverage 1.000 per category, bias +0.0015 (MC SE
    0.0013), mean width 0.381; the labels read as a random sample of the category are biased
    by -0.150 (the labelled items' interval, covering 0.80-0.85) or -0.022 (this interval
    without the inclusion, covering 0.93-0.96).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> right = rng.random(2000) < 0.8                      # the prediction is right
    >>> judge = np.where(rng.random(2000) < 0.9, right, ~right)  # a judge right 90% of the time
    >>> df = pd.DataFrame({"y_pred": 1, "judge": judge.astype(int)})
    >>> df["y_true"] = np.where(right, 1, 0).astype(float)
    >>> df.loc[100:, "y_true"] = np.nan                     # 100 labelled rows
    >>> res = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge", metric="accuracy")
    >>> row = res.table.loc["all"]
    >>> int(row["trials"]), bool(row["proxy_used"]), round(float(row["agreement"]), 2)
    (100, True, 0.92)
    >>> bool(row["lower"] < 0.8 < row["upper"])
    True
    """
    level = check_level(level)
    method = normalise_method(method)
    if isinstance(data, ProxyCounts):
        given = {
            "y_true": y_true,
            "y_pred": y_pred,
            "proxy": proxy,
            "strata": strata,
            "pos_label": pos_label,
            "design": design,
            "label_set": label_set,
        }
        extra = {k: v for k, v in given.items() if v is not None}
        if extra:
            raise TypeError(
                f"data is a ProxyCounts (already tabulated): the column arguments apply to rows only, got {extra!r}"
            )
        counts = data
    else:
        for name, value in (("y_true", y_true), ("y_pred", y_pred), ("proxy", proxy)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a column name (str), got {value!r}")
        counts = tabulate_proxy(
            backend_for(data),
            y_true=y_true,
            y_pred=y_pred,
            proxy=proxy,
            strata=strata,
            metric=metric,
            pos_label=pos_label,
            design=design,
            n_cells=n_cells,
            label_set=label_set,
        )
    return ProxyCI(
        table=proxy_table(counts, level, method),
        metric=counts.metric,
        level=level,
        method=method,
        proxy_kind=counts.proxy_kind,
    )


def effective_counts(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Whole-number (successes, trials) a stratum's proxy interval is worth, per row of a
    :class:`ProxyCI` table: the effective labels where the proxy is used (the labelled
    trials otherwise), and the estimate times them, both rounded. For models that take
    counts (the pooled model, planners). With units (a ``n_units`` column) the effective
    labels of the interval in use, in either case (rows of a unit are not independent)."""
    used = table["proxy_used"].to_numpy(bool) | ("n_units" in table.columns)
    n_eff = np.where(used, table["effective_labels"].to_numpy(float), table["trials"].to_numpy(float))
    n = np.round(n_eff).astype(np.int64)
    rate = np.nan_to_num(table["rate"].to_numpy(float), nan=0.0)
    s = np.clip(np.round(rate * n), 0, n).astype(np.int64)
    return s, n


def weighted_interval(table: pd.DataFrame, weights: Any) -> tuple[float, float, float]:
    """Estimate and MOVER interval of ``sum_h weights_h * rate_h`` from per-stratum estimates
    and intervals (``rate``, ``lower``, ``upper``; independent strata). NaN when a stratum
    with a positive weight has no estimate."""
    w = np.asarray(weights, dtype=float)
    est, lo, hi = (table[c].to_numpy(float) for c in ("rate", "lower", "upper"))
    used = w > 0
    if not np.isfinite(est[used]).all():
        return np.nan, np.nan, np.nan
    e = float(np.sum(w[used] * est[used]))
    lower = e - float(np.sqrt(np.sum(w[used] ** 2 * (est[used] - lo[used]) ** 2)))
    upper = e + float(np.sqrt(np.sum(w[used] ** 2 * (hi[used] - est[used]) ** 2)))
    return e, max(lower, 0.0), min(upper, 1.0)
