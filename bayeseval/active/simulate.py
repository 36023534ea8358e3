"""Replay labelling campaigns on data with known labels to compare proposal rules.

:func:`simulate` runs each rule ``repeats`` times in memory (no SQLite) with the same rule
code and the same stopping rule as a :class:`~bayeseval.active.Campaign`: every round the
posterior is refitted, the campaign stops when the goal is met (or the budget or the pool is
spent), otherwise the rule allocates the next batch and rows are drawn at random within each
stratum from an oracle that knows the true labels.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import (
    check_level,
    check_method,
    check_positive_int,
    check_random_seed,
    iter_columns,
)
from bayeseval.active.campaign import _check_no_missing, _check_target_halfwidth
from bayeseval.active.rules import RuleState, get_rule, stopping_options
from bayeseval.metrics import get_metric
from bayeseval.models.priors import resolve_prior

__all__ = ["simulate", "SimulationResult", "synthetic_pool", "plot_halfwidth"]


@dataclass
class SimulationResult:
    """Result of :func:`simulate`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (rule, repeat): ``labels_used``, ``coverage`` (share of strata whose final
        credible interval contains the true rate computed from the full data),
        ``reached_goal``, ``rounds``, ``max_halfwidth`` at stop, ``overall_covered`` (goal
        ``"overall"``: whether the weighted rate's interval covers the true weighted rate)
        and ``wall_time`` in seconds.
    trace : pandas.DataFrame
        One row per round: ``rule``, ``repeat``, ``labels``, ``max_halfwidth`` (of the strata,
        or of the weighted rate for goal ``"overall"``).
    true_rates : pandas.Series
        The metric per stratum on the full data.
    intervals : pandas.DataFrame
        Final per-stratum results of every run: ``rule``, ``repeat``, ``stratum``,
        ``labelled``, ``trials``, ``mean``, ``lower``, ``upper``, ``true_rate``, ``covered``.
    settings : dict
        The arguments of the run.

    Examples
    --------
    >>> pool = synthetic_pool(n_rows=20_000, n_strata=4, random_seed=0)
    >>> res = simulate(pool, strata="stratum", prediction="pred", truth="truth",
    ...                rules=["uniform"], repeats=1, target_halfwidth=0.1, random_seed=0,
    ...                progress=False)
    >>> bool(res.table["reached_goal"].all())
    True
    """

    table: pd.DataFrame
    trace: pd.DataFrame
    true_rates: pd.Series
    settings: dict[str, Any] = field(default_factory=dict)
    intervals: pd.DataFrame | None = None

    def summary(self) -> pd.DataFrame:
        """Per rule: mean and sd of labels used, mean coverage, share reaching the goal, mean wall time."""
        g = self.table.groupby("rule", sort=False)
        return pd.DataFrame(
            {
                "labels_mean": g["labels_used"].mean(),
                "labels_sd": g["labels_used"].std(),
                "coverage": g["coverage"].mean(),
                "reached_goal": g["reached_goal"].mean(),
                "wall_time": g["wall_time"].mean(),
            }
        )

    def plot(self, ax: Any = None) -> Any:
        """Half-width against labels per rule (see :func:`plot_halfwidth`)."""
        return plot_halfwidth(self, ax=ax)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        return self.summary()._repr_html_()

    def __repr__(self) -> str:
        return f"SimulationResult(\n{self.summary()!r}\n)"


def synthetic_pool(
    n_rows: int = 200_000,
    n_strata: int = 12,
    *,
    mean_rate: float = 0.12,
    concentration: float = 40.0,
    size_ratio: float = 100.0,
    random_seed: Any = None,
) -> pd.DataFrame:
    """A pool with known labels: strata of very unequal sizes and error rates.

    Stratum shares fall geometrically so the largest is ``size_ratio`` times the smallest;
    error rates are drawn from ``Beta(mean_rate * concentration, (1 - mean_rate) *
    concentration)`` (the hierarchical model's population). Binary truth and predictions.

    Returns
    -------
    pandas.DataFrame
        Columns ``stratum``, ``truth``, ``pred``, ``score`` (a noisy top-class probability),
        indexed by row id.

    Examples
    --------
    >>> pool = synthetic_pool(n_rows=1000, n_strata=3, random_seed=1)
    >>> sorted(pool.columns)
    ['pred', 'score', 'stratum', 'truth']
    """
    n_rows = check_positive_int(n_rows, "n_rows")
    n_strata = check_positive_int(n_strata, "n_strata")
    rng = np.random.default_rng(random_seed)
    shares = size_ratio ** (-np.arange(n_strata) / max(n_strata - 1, 1))
    shares /= shares.sum()
    rates = rng.beta(mean_rate * concentration, (1 - mean_rate) * concentration, n_strata)
    sizes = rng.multinomial(n_rows, shares)
    strata = np.repeat([f"s{i:02d}" for i in range(n_strata)], sizes)
    err = rng.random(n_rows) < np.repeat(rates, sizes)
    truth = rng.integers(0, 2, n_rows)
    pred = np.where(err, 1 - truth, truth)
    score = np.clip(1 - np.repeat(rates, sizes) + rng.normal(0, 0.05, n_rows), 0.5, 1.0)
    return pd.DataFrame(
        {"stratum": strata, "truth": truth, "pred": pred, "score": score},
        index=pd.RangeIndex(n_rows, name="row_id"),
    )


def simulate(
    data: pd.DataFrame,
    *,
    strata: str | Sequence[str],
    prediction: str,
    truth: str,
    metric: str = "error_rate",
    target_halfwidth: float = 0.05,
    level: float = 0.95,
    rules: Sequence[str] = ("expected_width", "independent_beta", "proportional"),
    repeats: int = 10,
    batch_size: int = 10,
    budget: int | None = None,
    goal: str = "each",
    weights: Any = None,
    score: str | None = None,
    prior: str = "default",
    pos_label: Any = 1,
    model: str = "robust",
    random_seed: Any = None,
    progress: bool = True,
    stop_level: Any = "default",
    own_check: Any = "default",
    min_data_share: Any = "default",
) -> SimulationResult:
    """Replay labelling campaigns with an oracle and compare proposal rules.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows with stratum columns, the prediction and the true label. A missing value
        (None, NaN, ``pd.NA``) in any of them is a ``ValueError`` naming the argument and
        the row ids.
    strata, prediction, truth : str
        Column names.
    metric, target_halfwidth, level, goal, weights, score, prior, pos_label, model
        As in :meth:`bayeseval.active.Campaign.create` (``target_halfwidth`` must be a
        finite number in (0, 0.5)).
    rules : sequence of str
        Rule names (see :data:`bayeseval.active.RULES`).
    repeats : int
        Campaigns per rule.
    batch_size : int
        Labels per round.
    budget : int, optional
        Stop after this many labels even if the goal is not met.
    random_seed : int, optional
        Seed; each (rule, repeat) gets its own stream, and repeat ``r`` uses the same row
        order for every rule (common random numbers).
    progress : bool
        Show a tqdm progress bar.
    stop_level, own_check, min_data_share
        Stopping safeguards, see :func:`bayeseval.active.rules.stopping_options`
        (``"default"``: :data:`~bayeseval.active.rules.STOPPING_DEFAULTS`, all off).

    Returns
    -------
    SimulationResult
        ``.table`` (one row per rule and repeat), ``.trace`` (half-width per round),
        ``.summary()`` and ``.plot()``.

    Examples
    --------
    >>> pool = synthetic_pool(n_rows=20_000, n_strata=4, random_seed=0)
    >>> res = simulate(pool, strata="stratum", prediction="pred", truth="truth",
    ...                rules=["expected_width"], repeats=1, target_halfwidth=0.1,
    ...                random_seed=0, progress=False)
    >>> list(res.table.columns)[:4]
    ['rule', 'repeat', 'labels_used', 'coverage']
    """
    cols = iter_columns(strata, "strata")
    target_halfwidth, random_seed = _check_inputs(data, cols, truth, prediction, target_halfwidth, random_seed, prior)
    m = get_metric(metric)
    level = check_level(level)
    goal = check_method(goal, ("each", "overall"), "goal")
    repeats = check_positive_int(repeats, "repeats")
    batch_size = check_positive_int(batch_size, "batch_size")
    if budget is not None:
        budget = check_positive_int(budget, "budget")
    if isinstance(rules, str):
        rules = [rules]
    resolved = [get_rule(r) for r in rules]
    stopping = stopping_options(level, stop_level=stop_level, own_check=own_check, min_data_share=min_data_share)
    grouped = data.groupby(cols if len(cols) > 1 else cols[0], sort=True, observed=True)
    codes = grouped.ngroup().to_numpy()
    index = grouped.size().index
    k = len(index)
    trial, success = m.masks(data[truth].to_numpy(), data[prediction].to_numpy(), pos_label)
    if m.trials in ("pred_pos", "pred_neg"):
        eligible = trial.copy()
    else:
        eligible = np.ones(len(data), bool)
    true_s = np.bincount(codes, weights=success, minlength=k)
    true_n = np.bincount(codes, weights=trial, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        true_rates = pd.Series(np.where(true_n > 0, true_s / np.maximum(true_n, 1), np.nan), index=index, name="rate")
    # per stratum: trial / success flags of the eligible rows
    flags = []
    for j in range(k):
        sel = (codes == j) & eligible
        flags.append((trial[sel].astype(np.int8), success[sel].astype(np.int8)))
    n_elig = np.array([len(f[0]) for f in flags])
    if weights is None:
        w = n_elig / n_elig.sum()
    else:
        from bayeseval._validation import check_weights

        w = check_weights(weights, index)
    true_overall = float(np.nansum(w * true_rates.to_numpy()))
    prior_mean = None
    if score is not None and m.name in ("error_rate", "accuracy"):
        per = pd.Series(data[score].to_numpy(dtype=float)).groupby(codes).mean().reindex(range(k)).to_numpy()
        prior_mean = np.clip(1 - per if m.name == "error_rate" else per, 1e-3, 1 - 1e-3)
    seed_seq = np.random.SeedSequence(random_seed)
    repeat_seeds = seed_seq.spawn(repeats)
    rows, trace_rows, final_rows = [], [], []
    labels_k = list(index)
    tasks = [(ri, r) for r in range(repeats) for ri in range(len(resolved))]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc="simulating campaigns", leave=False)
    for ri, r in tasks:
        name, fn, rule_model = resolved[ri]
        order_rng = np.random.default_rng(repeat_seeds[r])
        perms = [order_rng.permutation(n) for n in n_elig]
        rule_rng = np.random.default_rng([ri, *repeat_seeds[r].generate_state(2)])
        t0 = time.perf_counter()
        s_k = np.zeros(k, np.int64)
        n_k = np.zeros(k, np.int64)
        lab = np.zeros(k, np.int64)
        rounds = 0
        while True:
            st = RuleState(
                strata=index,
                successes=s_k.copy(),
                trials=n_k.copy(),
                labelled=lab.copy(),
                pending=np.zeros(k, np.int64),
                available=n_elig - lab,
                weights=w,
                target_halfwidth=float(target_halfwidth),
                level=level,
                goal=goal,
                trial_known=not m.trials_need_truth,
                model="independent" if rule_model == "independent" else model,
                prior=prior,
                prior_mean=prior_mean,
                **stopping,
            )
            if goal == "overall":
                _, olo, ohi = st.overall()
                hw_now = (ohi - olo) / 2
            else:
                hw_now = float(np.max(st.halfwidths()))
            trace_rows.append((name, r, int(lab.sum()), hw_now))
            if st.is_done() or (budget is not None and lab.sum() >= budget):
                break
            n_batch = batch_size if budget is None else min(batch_size, budget - int(lab.sum()))
            alloc = np.minimum(fn(st, n_batch, rule_rng).to_numpy(), st.available)
            if alloc.sum() == 0:
                break
            for j in np.flatnonzero(alloc):
                take = perms[j][lab[j] : lab[j] + alloc[j]]
                n_k[j] += int(flags[j][0][take].sum())
                s_k[j] += int(flags[j][1][take].sum())
                lab[j] += int(alloc[j])
            rounds += 1
        lo, hi = st.intervals()
        ok = ~np.isnan(true_rates.to_numpy())
        tr = true_rates.to_numpy()
        covered = (lo[ok] <= tr[ok]) & (tr[ok] <= hi[ok])
        hw = (hi - lo) / 2
        if goal == "overall":
            _, olo, ohi = st.overall()
            reached = (ohi - olo) / 2 <= target_halfwidth
            overall_cov = bool(olo <= true_overall <= ohi)
        else:
            reached = bool(np.all(hw <= target_halfwidth))
            overall_cov = np.nan
        rows.append(
            {
                "rule": name,
                "repeat": r,
                "labels_used": int(lab.sum()),
                "coverage": float(covered.mean()) if covered.size else np.nan,
                "reached_goal": bool(reached),
                "rounds": rounds,
                "max_halfwidth": float(hw.max()),
                "overall_covered": overall_cov,
                "wall_time": time.perf_counter() - t0,
            }
        )
        mean_k = st.posterior.mean().to_numpy()
        for j in range(k):
            final_rows.append((name, r, labels_k[j], int(lab[j]), int(n_k[j]), mean_k[j], lo[j], hi[j], tr[j],
                               bool(lo[j] <= tr[j] <= hi[j]) if ok[j] else np.nan))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    table = pd.DataFrame(rows).sort_values(["rule", "repeat"], kind="stable").reset_index(drop=True)
    trace = pd.DataFrame(trace_rows, columns=["rule", "repeat", "labels", "max_halfwidth"])
    settings = {
        "metric": m.name,
        "target_halfwidth": float(target_halfwidth),
        "level": level,
        "goal": goal,
        "batch_size": batch_size,
        "budget": budget,
        "repeats": repeats,
        "rules": [r[0] for r in resolved],
        "random_seed": random_seed,
    }
    intervals = pd.DataFrame(
        final_rows,
        columns=["rule", "repeat", "stratum", "labelled", "trials", "mean", "lower", "upper", "true_rate", "covered"],
    )
    return SimulationResult(table=table, trace=trace, true_rates=true_rates, settings=settings, intervals=intervals)


def _check_inputs(
    data: Any, cols: list[str], truth: Any, prediction: Any, target_halfwidth: Any, random_seed: Any, prior: Any
) -> tuple[float, Any]:
    """Validate simulate's data and settings; return the target half-width and the seed.

    Missing truth, prediction or stratum values (None, NaN, ``pd.NA``) are a ValueError naming
    the argument, the column and the row ids, as in :meth:`~bayeseval.active.Campaign.create`.
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if not cols:
        raise ValueError("strata must name one or more columns of data")
    named = [("truth", truth), ("prediction", prediction)] + [("strata", c) for c in cols]
    for name, col in named:
        if not isinstance(col, str):
            raise TypeError(f"{name} must be a column name (str), got {col!r}")
        if col not in data.columns:
            raise ValueError(f"{name} column {col!r} is not in data; columns are {list(data.columns)[:20]}")
    if len(data) == 0:
        raise ValueError("data has no rows")
    _check_no_missing(data, named, "simulating")
    target_halfwidth = _check_target_halfwidth(target_halfwidth)
    random_seed = check_random_seed(random_seed)
    if not isinstance(prior, str):
        raise TypeError(f"prior must be a prior name ('default' or 'bda'), got {type(prior).__name__}")
    resolve_prior(prior)
    return target_halfwidth, random_seed


def plot_halfwidth(result: SimulationResult, ax: Any = None) -> Any:
    """Plot the largest credible-interval half-width against labels used, per rule.

    Hands off to :func:`bayeseval.plots.halfwidth_curve` (median over repeats with a
    10-90% band, the target as a dotted line, symmetric-log label axis).

    Parameters
    ----------
    result : SimulationResult
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> pool = synthetic_pool(n_rows=5_000, n_strata=3, random_seed=0)
    >>> res = simulate(pool, strata="stratum", prediction="pred", truth="truth",
    ...                rules=["uniform"], repeats=1, target_halfwidth=0.15, progress=False)
    >>> ax = plot_halfwidth(res)
    >>> ax.get_xlabel()
    'labels'
    """
    from bayeseval.plots import halfwidth_curve

    return halfwidth_curve(result, logx=True, ax=ax)
