"""The data sections of an evaluation: counts, each stratum's interval, the pooled model and its
checks, and the overall rates (unweighted, reweighted, posterior-weighted; with a proxy, at the
pool's composition). Each returns data and findings; rendering is elsewhere.
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from bayeseval._api.warnings import BayesevalWarning, ClusteredRowsWarning, ConvergenceWarning
from bayeseval._kernels.conflict import adaptive_bounds, read_bounds, read_choice
from bayeseval._render.formats import labels_text, n_strata
from bayeseval.checks import posterior_predictive_check
from bayeseval.counts.counts import Counts, tabulate
from bayeseval.counts.metrics import Metric, get_metric
from bayeseval.counts.proxy import ProxyCounts
from bayeseval.counts.units import external_caller
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.estimate.proxy import effective_counts, proxy_ci, weighted_interval
from bayeseval.estimate.stratified import stratified_risk
from bayeseval.models import fit_hierarchical
from bayeseval.report.arguments import Settings
from bayeseval.report.findings import Finding, Pooled

__all__: list[str] = []


@dataclass(frozen=True)
class ProxyPart:
    """A report's proxy part: the counts per stratum and cell, and each stratum's interval."""

    counts: ProxyCounts
    table: pd.DataFrame  # ProxyCI.table: estimate, lower, upper, labelled, trials, ...

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.table["lower"].to_numpy(float), self.table["upper"].to_numpy(float)


def _tabulated(
    data: Any, cfg: Settings, y_true: Any, y_pred: Any, strata: Any, pos_label: Any, **design: Any
) -> tuple[Metric, Any]:
    """The metric (``error_rate`` by default) and the rows counted by it; ``design`` goes to tabulate."""
    metric = cfg.metric if cfg.metric is not None else get_metric("error_rate")
    rows = {"outcome": cfg.outcome} if cfg.outcome is not None else {"y_true": y_true, "y_pred": y_pred}
    return metric, tabulate(data, strata=strata, metric=metric, pos_label=pos_label, **rows, **design)


def count_proxy(
    data: Any, cfg: Settings, y_true: Any, y_pred: Any, strata: Any, pos_label: Any
) -> tuple[Counts, str, ProxyPart]:
    """Rows with a proxy -> effective Counts (the pooled model's input) and the proxy part."""
    metric, pc = _tabulated(
        data,
        cfg,
        y_true,
        y_pred,
        strata,
        pos_label,
        proxy=cfg.proxy,
        design=cfg.design,
        label_set=cfg.label_set,
    )
    table = proxy_ci(pc, level=cfg.level, method="clopper_pearson").table
    s, n = effective_counts(table)
    counts = Counts(
        pd.Series(s, index=table.index), pd.Series(n, index=table.index), metric=metric.name, weights=cfg.weights
    )
    return counts, metric.name, ProxyPart(pc, table)


def count(data: Any, cfg: Settings, y_true: Any, y_pred: Any, strata: Any, pos_label: Any) -> tuple[Counts, str]:
    """Rows (or ready Counts) -> Counts and the metric's name."""
    if isinstance(data, Counts):
        counts = data if cfg.weights is None else data.with_weights(cfg.weights)
        name = counts.metric or (cfg.metric.name if cfg.metric is not None else "rate")
        return counts, name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayesevalWarning)
        metric, counts = _tabulated(
            data, cfg, y_true, y_pred, strata, pos_label, weights=cfg.weights, design=cfg.design
        )
    for w in caught:  # the one warning about the rows themselves reaches the user; the report says the rest
        if issubclass(w.category, ClusteredRowsWarning):
            warnings.warn(str(w.message), ClusteredRowsWarning, stacklevel=external_caller()[0])
    return counts, metric.name


def counts_table(counts: Counts) -> pd.DataFrame:
    """Counts and raw rates per stratum; the other columns start as NaN."""
    table = pd.DataFrame(index=counts.strata)
    table["successes"] = counts.successes
    table["trials"] = counts.trials
    table["rate"] = counts.rates
    for col in (
        "lower",
        "upper",
        "halfwidth",
        "pooled_mean",
        "pooled_lower",
        "pooled_upper",
        "shrinkage",
        "ppc_p",
        "extra_needed",
    ):
        table[col] = np.nan
    table["read"] = table["read_reason"] = pd.Series(np.nan, index=table.index, dtype=object)
    table["sample_share"] = counts.sample_shares.to_numpy()
    table["weight"] = np.nan if counts.weights is None else counts.weights.to_numpy()
    return table


def proxy_columns(table: pd.DataFrame, proxy: ProxyPart) -> tuple[Counts, pd.Series]:
    """With a proxy: the labelled counts, the estimate as rate, the pool's shares and the
    proxy's columns in ``table``; return the labelled Counts and the pool shares."""
    pc = proxy.counts.table
    levels = [n for n in pc.index.names if n != "cell"]
    by = pc.groupby(level=levels if len(levels) > 1 else levels[0], sort=False)[["successes", "trials"]].sum()
    by = by.reindex(table.index).fillna(0).astype(np.int64)
    t = proxy.table
    table["successes"], table["trials"] = by["successes"].to_numpy(), by["trials"].to_numpy()
    table["rate"] = t["rate"].to_numpy(float)
    pool = t["pool_trials"].to_numpy(float)
    shares = pd.Series(pool / max(pool.sum(), 1.0), index=table.index, name="sample_share")
    table["sample_share"] = shares.to_numpy()
    table["pool_trials"] = t["pool_trials"].to_numpy(np.int64)
    table["proxy_used"] = t["proxy_used"].to_numpy(bool)
    table["agreement"] = t["agreement"].to_numpy(float)
    table["effective_labels"] = t["effective_labels"].to_numpy(float)
    labelled = Counts(by["successes"], by["trials"], metric=proxy.counts.metric)
    return labelled, shares


def exact_bounds(counts: Counts, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval per stratum (NaN without trials)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        lo, hi = proportion_ci(counts.successes, counts.trials, level=level, method="clopper_pearson")
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def start_adaptive(counts: Counts, cfg: Settings, proxy: ProxyPart | None, executor: Executor) -> Future | None:
    """Start the adaptive intervals ``guarantee="stratum"`` reports, in ``executor``.

    They depend only on the counts and the level, not on the pooled fit, so they are
    computed in a worker thread while the pooled model is fitted and checked (numpy releases
    the GIL in the kernels of both; at 20,000 strata :func:`evaluate` took 7.7 s with the
    worker and 10.6 s without, benchmarks/bench_scale.py). ``None`` where
    :func:`interval_section` does not read them (a proxy, ``"average"``, fewer than two
    strata with trials); it then computes what it needs itself.
    """
    if proxy is not None or not cfg.guarantee.per_stratum or np.count_nonzero(counts.trials.to_numpy()) < 2:
        return None
    return executor.submit(adaptive_bounds, counts.successes.to_numpy(), counts.trials.to_numpy(), cfg.level)


def interval_section(
    counts: Counts,
    table: pd.DataFrame,
    pooled: Pooled,
    cfg: Settings,
    proxy: ProxyPart | None = None,
    adaptive: Future | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Fill ``lower``, ``upper`` and ``halfwidth`` under the guarantee; return the stratum's
    exact interval that the checks compare the pooled one with.

    ``"stratum"``: the adaptive interval, or Clopper-Pearson without two strata with trials
    (both exact for the stratum). ``"average"``: the interval the read rule points to
    (strata the model check flags read the adaptive one), or Clopper-Pearson without a
    pooled model; the checks then use Clopper-Pearson. With a proxy the stratum's own
    interval is its proxy interval: ``"stratum"`` gives it, and under ``"average"`` it
    replaces the adaptive interval where the read rule points away from the pooled one.
    ``adaptive``: the adaptive intervals started by :func:`start_adaptive`, if any.
    """
    if proxy is not None:
        own = proxy.bounds
        if pooled.post is None or cfg.guarantee.per_stratum:
            table["lower"], table["upper"] = own
        else:
            lo, hi = pooled.summary["read_lower"].to_numpy(float), pooled.summary["read_upper"].to_numpy(float)
            read_flagged(counts, table, pooled.flagged, (lo, hi), cfg.level)
            own_rows = (table["read"] == "adaptive").to_numpy()
            table.loc[own_rows, "read"] = "proxy"
            table["lower"] = np.where(own_rows, own[0], lo)
            table["upper"] = np.where(own_rows, own[1], hi)
        table["halfwidth"] = (table["upper"] - table["lower"]) / 2
        return own
    if pooled.post is None:
        own = exact_bounds(counts, cfg.level)
        table["lower"], table["upper"] = own
    elif cfg.guarantee.per_stratum:
        own = (
            adaptive.result()
            if adaptive is not None
            else adaptive_bounds(counts.successes.to_numpy(), counts.trials.to_numpy(), cfg.level)
        )
        table["lower"], table["upper"] = own
    else:
        lo, hi = pooled.summary["read_lower"].to_numpy(float), pooled.summary["read_upper"].to_numpy(float)
        table["lower"], table["upper"] = read_flagged(counts, table, pooled.flagged, (lo, hi), cfg.level)
        own = exact_bounds(counts, cfg.level)
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    return own


def read_flagged(
    counts: Counts, table: pd.DataFrame, flagged: np.ndarray, bounds: tuple[np.ndarray, np.ndarray], level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Strata the model check flags read their adaptive interval, whatever the conflict p-value.

    The summary's ``read`` rule and the predictive check use different references; a
    stratum the check flags (rare when the rule reads "pooled", e.g. one of three strata)
    must not be pointed to the pooled interval the warning says not to trust. Returns the
    ends of the interval read (``bounds`` with the flagged strata's adaptive interval).
    """
    rows = np.asarray(flagged, bool) & (table["read"] != "adaptive").to_numpy()
    if not rows.any():
        return bounds
    choice = read_choice(counts.successes.to_numpy(), counts.trials.to_numpy())
    if choice.mixture is None:
        return bounds
    lo, hi = read_bounds(choice, bounds[0], bounds[1], level, rows=rows)
    table.loc[rows, "read"] = "adaptive"
    p = table.loc[rows, "ppc_p"].to_numpy(float)
    table.loc[rows, "read_reason"] = [f"flagged by the model check (p = {v:.2g})" for v in p]
    return lo, hi


def pooled_section(counts: Counts, cfg: Settings) -> Pooled:
    """Fit the pooled model and run its checks, or say why there is nothing to pool."""
    with_trials = int((counts.trials > 0).sum())
    if with_trials == 0:
        return Pooled(findings=[Finding("no trials", (), "No stratum has any trials: there is nothing to estimate.")])
    if with_trials == 1:
        return Pooled(
            findings=[
                Finding(
                    "no pooling",
                    (),
                    (
                        "Only one stratum has trials, so there are no other strata to pool it with: the "
                        "report gives its raw rate and Clopper-Pearson interval and fits no pooled model (the spread "
                        "between strata cannot be estimated from one stratum)."
                    ),
                    "note",
                )
            ]
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayesevalWarning)
        post = fit_hierarchical(
            counts,
            engine=cfg.engine,
            model=cfg.model,
            prior=cfg.prior,
            random_seed=cfg.random_seed,
        )
        summary = post.summary(level=cfg.level, read=not cfg.guarantee.per_stratum)
    findings = [
        Finding("sampler", (), f"The pooled model's sampler reported a problem: {w.message}")
        for w in caught
        if issubclass(w.category, ConvergenceWarning)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = posterior_predictive_check(post, random_seed=cfg.random_seed, level=cfg.level)
    table = res.table.reindex(post.strata)
    p = table["p_value"].to_numpy(dtype=float)
    flagged = table["flag"].fillna(False).to_numpy(dtype=bool)
    return Pooled(post, summary, p, flagged, _checks_table(res, p, flagged, cfg.level), findings)


def _checks_table(res: Any, p: np.ndarray, flagged: np.ndarray, level: float) -> pd.DataFrame:
    """One row per model check: statistic, p-value and verdict."""
    n_flag = int(flagged.sum())
    k_has = int(np.isfinite(p).sum())
    threshold = (1 - level) / max(k_has, 1)
    rows = {
        "ppc_counts": (
            "per-stratum counts (cross-validated mixed predictive check)",
            float(np.nanmin(p)) if np.isfinite(p).any() else np.nan,
            f"ok: no stratum below p = {threshold:.2g} ({1 - level:g} / {n_strata(k_has)})"
            if n_flag == 0
            else f"{n_strata(n_flag)} extreme under the model (p below {threshold:.2g})",
        )
    }
    for _, g in res.global_table.iterrows():
        rows[f"ppc_{g['statistic']}"] = (
            f"{g['statistic']} of the stratum rates",
            float(g["p_value"]),
            "ok" if not bool(g["flag"]) else "outside the model's predictive range",
        )
    checks = pd.DataFrame.from_dict(rows, orient="index", columns=["statistic", "p_value", "verdict"])
    checks.index.name = "check"
    return checks


def overall_section(counts: Counts, post: Any, level: float) -> tuple[pd.DataFrame, Any, list[Finding]]:
    """Overall rate: unweighted, and with weights reweighted and posterior-weighted."""
    total_s, total_n = int(counts.successes.sum()), int(counts.trials.sum())
    rows: dict[str, list[float]] = {"unweighted": [np.nan] * 4}
    if total_n > 0:
        ulo, uhi = proportion_ci(total_s, total_n, level=level, method="wilson")
        rate = total_s / total_n
        rows["unweighted"] = [rate, ulo, uhi, math.sqrt(rate * (1 - rate) / total_n)]
    sr = None
    findings: list[Finding] = []
    if counts.weights is None:
        findings.append(
            Finding(
                "unweighted",
                (),
                (
                    "No population shares were given: the overall rate is unweighted, so it estimates "
                    "the rate at the test set's own composition, not necessarily the population's. "
                    "Pass weights= to get the population estimate."
                ),
                "note",
            )
        )
    else:
        sr, reweighted, more = _reweighted(counts, level)
        rows["reweighted"] = reweighted
        findings += more
        if post is not None:
            rows["posterior_weighted"] = posterior_weighted(post, counts.weights, level)
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    return overall, sr, findings


def posterior_weighted(post: Any, weights: Any, level: float) -> list[float]:
    """The population rate's posterior (strata weighted by ``weights``): mean, equal-tailed interval, sd."""
    draws = np.asarray(post.weighted(weights))
    a = (1 - level) / 2
    return [
        float(draws.mean()),
        float(np.quantile(draws, a)),
        float(np.quantile(draws, 1 - a)),
        float(draws.std(ddof=1)),
    ]


def proxy_overall(counts: Counts, proxy: ProxyPart, post: Any, level: float) -> tuple[pd.DataFrame, Any, list[Finding]]:
    """Overall rate with a proxy: at the pool's composition, and reweighted by ``weights``.

    Both are sums of share x stratum estimate with the MOVER combination of the strata's
    proxy intervals (independent strata); ``se`` is the interval's half-width over z.
    """
    z = float(norm.ppf((1 + level) / 2))
    pool = proxy.table["pool_trials"].to_numpy(float)
    shares = {"unweighted": pool / max(pool.sum(), 1.0)}
    if counts.weights is not None:
        shares["reweighted"] = counts.weights.reindex(proxy.table.index).to_numpy(float)
    rows = {}
    for name, w in shares.items():
        est, lo, hi = weighted_interval(proxy.table, w)
        rows[name] = [est, lo, hi, (hi - lo) / (2 * z)]
    findings = [
        Finding(
            "proxy overall",
            (),
            (
                "With a proxy the unweighted rate is the rate at the pool's composition (every row, "
                "labelled or not): pool share x stratum estimate, summed, with the strata's proxy "
                "intervals combined by MOVER."
            ),
            "note",
        )
    ]
    if counts.weights is not None and post is not None:
        rows["posterior_weighted"] = posterior_weighted(post, counts.weights, level)
    if counts.weights is not None and not np.isfinite(rows["reweighted"][0]):
        w = counts.weights.reindex(proxy.table.index)
        missing = list(proxy.table.index[((w > 0) & (proxy.table["trials"] == 0)).to_numpy()])
        findings.append(
            Finding(
                "no reweighted rate",
                tuple(missing),
                (
                    f"The reweighted rate is undefined: {labels_text(missing)} "
                    f"{'has' if len(missing) == 1 else 'have'} a population share but no labels."
                ),
            )
        )
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    return overall, None, findings


def _reweighted(counts: Counts, level: float) -> tuple[Any, list[float], list[Finding]]:
    """The reweighted rate, or why it is undefined (a stratum with a share but no trials)."""
    w = counts.weights
    missing = list(counts.strata[((w > 0) & (counts.trials == 0)).to_numpy()])
    if missing:
        return (
            None,
            [np.nan] * 4,
            [
                Finding(
                    "no reweighted rate",
                    tuple(missing),
                    (
                        f"The reweighted rate is undefined: {labels_text(missing)} "
                        f"{'has' if len(missing) == 1 else 'have'} a population share but no trials."
                    ),
                )
            ],
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        sr = stratified_risk(counts, level=level)
    note = Finding(
        "reweighted",
        (),
        (
            "The reweighted rate (population share x stratum rate, summed) is the population "
            "estimate; the unweighted rate is the rate at the test set's own composition."
        ),
        "note",
    )
    return sr, [sr.estimate, sr.ci[0], sr.ci[1], sr.se], [note]
