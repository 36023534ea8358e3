"""The evaluation pipeline: :func:`evaluate` checks its arguments, counts the rows, runs every
section (intervals, pooled model, overall rates, findings, the fairness audit) and gathers their
data in a :class:`~bayeseval.report.Report`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from os import PathLike
from typing import Any

import pandas as pd

from bayeseval._api.moved import moved_keywords
from bayeseval._api.options import Groups, Proxy, groups_parts, proxy_parts
from bayeseval._kernels.guarantee import Guarantee
from bayeseval._render import audit_html
from bayeseval._render.formats import n_strata
from bayeseval.counts.counts import Counts
from bayeseval.counts.design import Design
from bayeseval.counts.metrics import Metric
from bayeseval.models.pooled import PooledModel, model_parts
from bayeseval.report.arguments import Settings, check_arguments, check_groups
from bayeseval.report.findings import (
    Finding,
    Pooled,
    composition_findings,
    guarantee_findings,
    model_findings,
    proxy_target,
    stratum_findings,
    table_flags,
    target_section,
)
from bayeseval.report.report import Report
from bayeseval.report.sections import (
    ProxyPart,
    count,
    count_proxy,
    counts_table,
    interval_section,
    overall_section,
    pooled_section,
    proxy_columns,
    proxy_overall,
    start_adaptive,
)
from bayeseval.report.units import (
    PartialPool,
    by_unit,
    partial_pool,
    partial_pool_overall,
    partial_pool_target,
    unit_bounds,
    unit_findings,
    unit_overall,
    unit_pooled,
    unit_target,
    whole_pool_bounds,
    whole_pool_overall,
)

__all__ = ["evaluate"]

_TABLE_COLUMNS = [
    "successes",
    "trials",
    "rate",
    "lower",
    "upper",
    "halfwidth",
    "pooled_mean",
    "pooled_lower",
    "pooled_upper",
    "shrinkage",
    "read",
    "read_reason",
    "sample_share",
    "weight",
    "ppc_p",
    "extra_needed",
    "flags",
]


# columns of the "average" guarantee only: which interval lower/upper are, and why
_AVERAGE_ONLY = ("read", "read_reason")


# columns of a report with a proxy, after "rate"
_PROXY_COLUMNS = ("pool_trials", "proxy_used", "agreement", "effective_labels")


@moved_keywords(
    "evaluate",
    {
        "engine": "pass model=PooledModel('beta_binomial', engine=...)",
        "prior": "pass model=PooledModel('beta_binomial', prior=...)",
        "source": "set report.source = ... on the report it returns",
        "tolerance": "pass groups=Groups(columns, tolerance=...)",
        "min_trials": "pass groups=Groups(columns, min_trials=...)",
        "label_set": "pass proxy=Proxy(column, label_set=...)",
    },
)
def evaluate(
    data: pd.DataFrame | Counts | Any,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    outcome: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    weights: Mapping[Hashable, float] | pd.Series | Sequence[float] | None = None,
    level: float = 0.95,
    target_halfwidth: float | None = None,
    pos_label: Any = None,
    random_seed: int | None = None,
    model: str | PooledModel = "beta_binomial",
    groups: str | Sequence[str] | Groups | None = None,
    guarantee: str | Guarantee = "stratum",
    proxy: str | Proxy | None = None,
    design: Design | Mapping[str, Any] | None = None,
) -> Report:
    r"""Evaluate a classifier per stratum with intervals, pooling, checks and warnings.

    Every argument is checked before any work is done; a bad one raises
    ``TypeError`` or ``ValueError`` naming it.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or Counts
        One row per labelled example (see :func:`~bayeseval.tabulate`), or
        ready-made :class:`~bayeseval.Counts` (then ``y_true``, ``y_pred``,
        ``strata`` and ``pos_label`` must not be given).
    y_true, y_pred : str
        Columns with the true and the predicted labels.
    outcome : str, optional
        Instead of ``y_true`` and ``y_pred``: a column of per-row outcomes in [0, 1] (0/1
        correctness, or partial credit such as 0.5), see :func:`~bayeseval.tabulate`; the
        metric is then ``accuracy`` (the mean outcome) or ``error_rate`` (one minus it).
    strata : str or list of str, optional
        Column(s) defining the strata; None gives one stratum.
    metric : str or Metric, default "error_rate"
        Any metric of :func:`~bayeseval.get_metric` (a name or an alias), shown in the
        report as written (``"tpr"`` stays ``"tpr"``; it counts recall). Balanced
        accuracy, the mean of two rates, is not one rate per stratum: it is refused
        here, and :func:`~bayeseval.fairness` reports it.
    weights : dict, Series or sequence, optional
        Population shares of the strata (summing to 1). With them the report
        gives the reweighted overall rate (the population estimate) beside the
        unweighted one and checks the test set's composition.
    level : float, default 0.95
        Level of every interval.
    target_halfwidth : float, optional
        Wanted half-width per stratum; strata whose interval (``lower``, ``upper``) is
        wider get a warning with the number of extra labels they need
        (:func:`~bayeseval.sample_size` at the observed rate, with
        ``method="clopper_pearson"`` under ``guarantee="stratum"`` and ``"wilson"``
        under ``"average"``).
    pos_label : optional
        Positive class for class-dependent metrics (recall, precision, ...).
    random_seed : int, optional
        Seed for the posterior draws and the predictive checks.
    model : {"beta_binomial", "robust", "logit_normal"} or PooledModel, default "beta_binomial"
        Pooled model (see :func:`~bayeseval.fit_hierarchical`): its name, or a
        :class:`~bayeseval.PooledModel` that also sets its ``prior`` (``"default"``, ``"bda"``,
        a dict or a Prior, see :func:`bayeseval.models.priors.resolve_prior`) and its ``engine``
        (``"exact"``, the default, or ``"pymc"``). ``"robust"`` lets outlying strata stand
        apart; ``"logit_normal"`` needs ``PooledModel("logit_normal", engine="pymc")``.
    groups : str, list of str or Groups, optional
        Group column(s) of a fairness audit, or a :class:`~bayeseval.Groups` carrying them with
        the audit's ``tolerance`` (largest acceptable max-min gap, in (0, 1)) and ``min_trials``
        (groups with fewer trials are reported but left out of the max-min gap and the
        verdicts) (:func:`bayeseval.fairness` on the same rows,
        with the criteria's metrics ``selection_rate``, ``tpr``, ``fpr`` and ``ppv``, the
        report's ``level``, ``pos_label`` and ``random_seed``, and the audit's default
        pooled model): the report gains the "Fairness audit" section (verdicts,
        disparities, groups table, forest plot), ``Report.audit``, and findings for
        criteria decided outside the tolerance (warnings) or undecided (notes). The audit
        takes the report's ``guarantee``, ``proxy`` and ``inclusion``; with a proxy its
        metrics are ``selection_rate`` and ``ppv`` (TPR and FPR count trials by the true
        label, unknown on unlabelled rows).
    guarantee : {"stratum", "average"} or Guarantee, default "stratum"
        What the table's ``lower`` and ``upper`` promise (see Notes): a
        :class:`~bayeseval.Guarantee` or its name (the report's ``guarantee`` is the name). ``"stratum"``:
        coverage at least ``level`` for each stratum at every value of its own rate,
        by construction (the adaptive interval). ``"average"``: the pooled interval,
        or the adaptive one where the stratum's count looks atypical (the ``read``
        rule), for users who accept coverage on average over strata in exchange for
        narrower intervals.
    proxy : str or Proxy, optional
        A column known on every row, or a :class:`~bayeseval.Proxy` carrying it with its
        ``label_set`` (every class ``y_true`` may hold, for a class that neither the
        predictions nor a label proxy take; any other such true label, e.g. ``-1`` marking
        unlabelled rows, is refused; see :func:`~bayeseval.proxy_ci`): a cheap label of the same kind as ``y_true`` (a
        judge's label, a stronger model's prediction) or a probability/score (binned into
        five equal-count cells per stratum). Rows whose ``y_true`` is missing are then the
        unlabelled rows (without ``proxy`` a missing label is an error). Each stratum's
        interval is its proxy interval (:func:`~bayeseval.proxy_ci`, Clopper-Pearson cell
        limits): under ``"stratum"`` it is ``lower``/``upper``; under ``"average"`` the
        pooled model is fitted to each stratum's effective counts and a stratum whose count
        looks atypical reads its proxy interval (``read`` is ``"proxy"``). The table gains
        ``pool_trials``, ``proxy_used``, ``agreement`` and ``effective_labels``;
        ``successes``/``trials`` are the labelled ones and ``rate`` the proxy estimate; the
        overall rates are share x stratum estimate with the strata's intervals combined by
        MOVER (``unweighted``: at the pool's composition). Metrics: ``error_rate``,
        ``accuracy``, ``precision``, ``npv``; other metrics raise ValueError.
    design : Design or dict, optional
        The sampling design (:class:`~bayeseval.Design`): ``cluster``, a column whose rows
        sharing a value are one sampling unit (an item answered several times, questions on
        one passage); ``inclusion``, with ``proxy``, the column of each labelled row's
        inclusion probability, for labels not drawn at random within the strata (see
        :func:`~bayeseval.proxy_ci`; the interval is then asymptotic). With units (a cluster
        of more than one row, or graded outcomes) each stratum's ``lower``/``upper`` is the
        finite-sample valid unit interval (see Notes) and no pooled model is fitted; with
        ``proxy`` it is the proxy interval over units (cells of whole units, see
        :func:`~bayeseval.proxy_ci`; ``guarantee="average"`` is refused then). Without a
        design, rows that repeat an identifier-like column (``item``, ``id``, ``doc_id``, ...)
        give a :class:`~bayeseval.ClusteredRowsWarning`; ``design=Design()`` says the rows are
        independent. ``population="pool"``: the estimand is the rate of the rows of ``data``
        themselves (a finite pool). With every row labelled each rate is known exactly (zero
        width); with ``y_true`` (or ``outcome``) missing on some rows of a pandas frame, those
        rows are the pool's unlabelled rows and the labelled ones are taken as a simple random
        sample without replacement within each stratum: each stratum's interval is the exact
        hypergeometric interval of its labelled rows (:func:`~bayeseval._kernels.finite_pool.pool_ci`,
        pool size: the stratum's rows counting for the metric, known from ``y_pred`` alone; the
        betting interval without replacement for units), the table gains ``pool_trials``, the
        overall rates add up the strata's intervals at the Bonferroni level, and the design
        reads "labelled n of N". Metrics whose trials need the truth (recall, fpr, ...) are then
        refused (ValueError naming ``metric`` and ``design.population``), and so is a cluster
        with labelled and unlabelled rows.

    Returns
    -------
    Report
        With the findings as data (:class:`Finding`) and their messages in
        ``warnings`` and ``notes``. Its ``source`` (how the header names the data) is the
        file path when ``data`` is one, otherwise the kind of object and its size, e.g.
        ``"pandas DataFrame (1,000 rows)"``; set ``report.source = "..."`` to name the data
        otherwise.

    Notes
    -----
    With ``guarantee="stratum"`` (the default), ``lower`` and ``upper`` are the
    stratum's adaptive interval (``proportion_ci(..., method="adaptive")``: exact
    binomial tests inverted, their tails split by a prior built from the *other* strata
    only, Yu and Hoff 2018), so its coverage is at least ``level`` at every true rate of
    the stratum, whatever the other strata say, with no data-dependent switch between
    intervals. With fewer than two strata that have trials there is no other stratum to
    build the prior from (and nothing to pool): ``lower`` and ``upper`` are then
    Clopper-Pearson, also exact, and a note says why. The Wilson interval is not
    offered: its coverage dips below ``level`` at small counts (95%: 0.84 at n = 5),
    and where the strata are alike the adaptive interval is about as narrow. The
    pooled posterior (``pooled_mean``, ``pooled_lower``, ``pooled_upper``) stays beside
    it: it covers on average over strata like these, not for a stratum that differs.

    With ``guarantee="average"``, ``lower`` and ``upper`` are the interval the
    ``read`` column names: the pooled posterior, or the adaptive interval when the
    stratum's count is not clearly typical of what the other strata predict (its
    leave-one-out conflict mid-p value is at most 0.20, or the conflict rule or the
    model check flags it). Its coverage for a stratum that differs equals the share of
    datasets in which the check fires (measured in the docs' guide "Which guarantee?").
    ``read_reason`` gives the reason and the p-value (the HTML table shows it
    when the pointer rests on the ``read`` cell), and a note names the strata that read
    the adaptive interval.

    With a design whose units hold several rows (or with graded outcomes), the rows of a unit
    are not independent draws and the binomial intervals above do not hold: with five answers
    per item the default interval covered 0.67-0.88 (docs/validation.md, "Clustered and graded
    outcomes"). Each stratum's interval is then the betting interval of its units (a test of
    "the stratum's rate is r" from the units' bounded outcomes, inverted; Waudby-Smith and
    Ramdas 2024), valid at every number of units; the unweighted overall rate uses every unit
    of the test set; the report states the design in words. Binary rows in units of one row
    give exactly the intervals of the default design. Under ``guarantee="average"`` the pooled
    model over units gives the intervals, and the ``read`` rule above checks each stratum's total
    successes against the model fitted to the other strata: an atypical stratum reads its units'
    interval (``read`` is ``"units"``).

    ``shrinkage`` is the weight of the population mean in a stratum's pooled
    estimate, from 0 (its own data only) to 1 (the population mean only). In the
    Beta-binomial model, given the population mean :math:`\mu` and concentration
    :math:`\kappa`, the posterior mean of a stratum with :math:`s_k` successes in
    :math:`n_k` trials is :math:`(1 - B_k)\, s_k / n_k + B_k \mu` with
    :math:`B_k = \kappa / (\kappa + n_k)` (Gelman et al., *Bayesian Data
    Analysis*, 3rd ed., section 5.3); the column is the posterior mean of
    :math:`B_k`. For the robust model it is the same weight for a stratum that
    belongs to the main population. For the logit-normal model it is the
    normal-approximation weight :math:`1 / (1 + \sigma^2 n_k p_k (1 - p_k))`
    (Gelman and Hill, 2007, section 12.5), with :math:`p_k` the posterior mean.
    A stratum without trials has shrinkage 1.

    The ``flags`` column holds, per stratum, each flag whose definition holds:

    * ``empty``: no trials;
    * ``rate 0`` / ``rate 1``: every trial a failure / a success;
    * ``too wide``: ``halfwidth`` exceeds ``target_halfwidth``;
    * ``model check``: the stratum's predictive p-value is below
      ``(1 - level) / K`` (``K`` strata with trials);
    * ``strong shrinkage``: shrinkage of at least 0.5 *and* a credible interval
      less than half as wide as the stratum's exact interval (``lower``/``upper``
      under ``"stratum"``, Clopper-Pearson under ``"average"``): certainty borrowed
      from the other strata;
    * ``estimates disagree``: that exact interval and the credible interval do
      not overlap.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 1, 0, 1] * 20, "p": [1, 0, 0, 1, 0, 1] * 20,
    ...                    "g": ["a", "a", "a", "b", "b", "b"] * 20})
    >>> rep = evaluate(df, y_true="y", y_pred="p", strata="g", metric="error_rate",
    ...                target_halfwidth=0.05, random_seed=0)
    >>> rep.table[["successes", "trials"]].to_dict("list")
    {'successes': [20, 0], 'trials': [60, 60]}
    >>> any("rate of 0" in w for w in rep.warnings)
    True
    """
    model, prior, engine = model_parts(model)
    proxy, label_set = proxy_parts(proxy)
    groups, audit_options = groups_parts(groups)
    cfg = check_arguments(
        data,
        y_true,
        y_pred,
        strata,
        pos_label,
        metric=metric,
        weights=weights,
        engine=engine,
        model=model,
        prior=prior,
        level=level,
        target_halfwidth=target_halfwidth,
        random_seed=random_seed,
        guarantee=guarantee,
        proxy=proxy,
        design=design,
        label_set=label_set,
        outcome=outcome,
    )
    audit_groups = check_groups(data, groups)
    if audit_groups is not None and cfg.design is not None:
        from bayeseval.fairness.inputs import audited_design, check_cluster_options  # deferred: loaded on use

        # before any work: the audit refuses what it does not take
        check_cluster_options(audited_design(cfg.design, pool=True), proxy, cfg.guarantee)
    part = None
    if (
        proxy is not None
        and cfg.design is not None
        and cfg.design.cluster is not None
        and not cfg.guarantee.per_stratum
    ):
        raise ValueError(
            f"guarantee={guarantee!r} with proxy and design cluster {cfg.design.cluster!r}: the pooled model "
            "is not fitted to units with a proxy; use guarantee='stratum' (each stratum's proxy interval over units)"
        )
    counts, metric_name, part, pool_part = _count_rows(data, cfg, y_true, y_pred, strata, pos_label)
    if isinstance(metric, str) and not isinstance(data, Counts):
        metric_name = metric.strip()  # echoed as written: "tpr" stays "tpr" (it counts recall)
    design = cfg.design if cfg.design is not None else counts.design  # a Counts keeps its design
    report = _choose_report(counts, metric_name, cfg, part, pool_part, design)
    if audit_groups is not None:
        report.audit, found = _audit_section(
            data,
            audit_groups,
            audit_options,
            y_true,
            y_pred,
            pos_label,
            cfg,
            pool_part is not None,
        )
        report.findings += found
        report.warnings += [f.message for f in found if f.severity == "warning"]
        report.notes += [f.message for f in found if f.severity == "note"]
    report.source = _describe_source(data)
    if part is not None and part.counts.unit_sizes is not None and cfg.design is not None:
        report.design = cfg.design.describe(_pool_units(part.counts))
    elif cfg.design is not None or cfg.outcome is not None or counts.units is not None:
        design = counts.design if counts.design is not None else Design()
        report.design = design.describe(counts)
    if pool_part is not None:
        report.design = pool_part.describe()
    report.created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return report


def _choose_report(
    counts: Counts, metric_name: str, cfg: Settings, part: Any, pool_part: PartialPool | None, design: Any
) -> Report:
    """The report for the counts: a partly labelled pool, a pool known exactly, units, or rows."""
    if pool_part is not None:
        return _unit_report(counts, metric_name, cfg, pool=pool_part)
    if design is not None and design.population == "pool":
        return _unit_report(counts, metric_name, cfg, whole_pool=True)
    if by_unit(counts):
        return _unit_report(counts, metric_name, cfg)
    return _build_report(counts, metric_name, cfg, part)


def _count_rows(
    data: Any, cfg: Settings, y_true: Any, y_pred: Any, strata: Any, pos_label: Any
) -> tuple[Counts, str, Any, PartialPool | None]:
    """The counts, the metric's name, the proxy part (with a proxy) and the partly labelled pool
    (``population="pool"`` with unlabelled rows)."""
    if cfg.proxy is not None:
        return (*count_proxy(data, cfg, y_true, y_pred, strata, pos_label), None)
    pool_part = None
    if cfg.design is not None and cfg.design.population == "pool":
        pool_part = partial_pool(data, cfg, y_true, y_pred, strata, pos_label)
    if pool_part is not None:
        return pool_part.counts, str(pool_part.counts.metric), None, pool_part
    return (*count(data, cfg, y_true, y_pred, strata, pos_label), None, None)


def _pool_units(pc: Any) -> Counts:
    """Counts of a proxy pool's units (every unit, labelled or not; successes left at 0): the
    sizes the design's description reads."""
    sizes = pc.unit_sizes
    names = list(sizes.columns[:-2])
    trials = (sizes["unit_trials"] * sizes["units"]).groupby([sizes[c] for c in names], sort=False).sum()
    trials = trials.reindex(pc.strata, fill_value=0)
    return Counts(
        pd.Series(0, index=trials.index),
        trials,
        units=sizes.assign(unit_successes=0.0),
    )


def _unit_report(
    counts: Counts, metric_name: str, cfg: Settings, whole_pool: bool = False, pool: PartialPool | None = None
) -> Report:
    """The report of counts by unit: each stratum's unit interval (``guarantee="average"``: the pooled
    model over units), the overall rates by unit.

    ``whole_pool``: ``population="pool"`` with every row labelled: each rate is known exactly.
    ``pool``: ``population="pool"`` with unlabelled rows: each stratum's finite-pool interval.
    """
    table = counts_table(counts)
    lo, hi = _unit_table_bounds(table, counts, cfg, whole_pool, pool)
    table["lower"], table["upper"] = lo, hi
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    if counts.n_units is not None:
        table["n_units"] = counts.n_units
    pooled = Pooled() if pool is not None else unit_pooled(counts, whole_pool, cfg)
    if pooled.post is not None:  # guarantee="average": the pooled model over units gives the intervals
        for col in ("mean", "lower", "upper"):
            table[f"pooled_{col}"] = pooled.summary[col].to_numpy()
        read = pooled.summary[["read", "read_reason"]] if pooled.summary is not None else None
        assert read is not None
        table["read"], table["read_reason"] = read["read"].to_numpy(), read["read_reason"].to_numpy()
        own = (table["read"] == "units").to_numpy()  # the read rule: an atypical stratum reads its units' interval
        table["lower"], table["upper"] = table["pooled_lower"].mask(own, lo), table["pooled_upper"].mask(own, hi)
        table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    if pool is not None:
        overall, overall_findings = partial_pool_overall(pool, cfg.level)
    elif whole_pool:
        overall, overall_findings = whole_pool_overall(counts)
    else:  # the reweighted rate combines the unit intervals, also when the table reads the pooled ones
        unit_table = table.assign(lower=lo, upper=hi)
        overall, overall_findings = unit_overall(counts, unit_table, cfg.level, pooled.post)
    design_note = [Finding("design", (), f"Sampling design: {pool.describe()}.", "note")] if pool else None
    findings = (
        (design_note or unit_findings(counts)) + pooled.findings + stratum_findings(counts, (lo, hi), metric_name)
    )
    if cfg.target_halfwidth is not None and pool is not None:
        table["extra_needed"], wide = partial_pool_target(pool, cfg.target_halfwidth, cfg.level)
        findings += wide
    elif cfg.target_halfwidth is not None:
        table["extra_needed"], wide = unit_target(table, counts, cfg.target_halfwidth)
        findings += wide
    findings += composition_findings(counts, overall)
    findings += overall_findings
    table["flags"] = table_flags(counts.strata, findings)
    columns = [c for c in _TABLE_COLUMNS if pooled.post is not None or c not in _AVERAGE_ONLY]
    if counts.n_units is not None:
        at = columns.index("trials") + 1
        columns[at:at] = ["n_units"]
    if pool is not None:
        columns.insert(columns.index("rate") + 1, "pool_trials")
    return _report(table[columns], overall, pooled, findings, counts, metric_name, cfg)


def _unit_table_bounds(
    table: pd.DataFrame, counts: Counts, cfg: Settings, whole_pool: bool, pool: PartialPool | None
) -> tuple[Any, Any]:
    """Each stratum's interval in a unit report; a partly labelled pool also sets its shares and sizes."""
    if pool is None:
        return whole_pool_bounds(counts) if whole_pool else unit_bounds(counts, cfg.level)
    big_n = pool.pool_trials.to_numpy(float)
    table["sample_share"] = big_n / max(big_n.sum(), 1.0)
    table["pool_trials"] = pool.pool_trials.to_numpy()
    return pool.lower, pool.upper


def _describe_source(data: Any) -> str:
    """How the header names the data: a path, or the kind of object and its size."""
    if isinstance(data, (str, PathLike)):
        return str(data)
    if isinstance(data, Counts):
        return f"Counts ({n_strata(len(data))})"
    if isinstance(data, pd.DataFrame):
        return f"pandas DataFrame ({len(data):,} rows)"
    kind = type(data)
    return f"{kind.__module__.split('.')[0]} {kind.__name__}"


def _build_report(counts: Counts, metric_name: str, cfg: Settings, proxy: ProxyPart | None = None) -> Report:
    """Run every section of :func:`evaluate` on ``counts`` and gather their data in a Report."""
    table = counts_table(counts)
    labelled, shares = (counts, None) if proxy is None else proxy_columns(table, proxy)
    with ThreadPoolExecutor(max_workers=1) as executor:  # the adaptive intervals beside the fit
        adaptive = start_adaptive(counts, cfg, proxy, executor)
        pooled = pooled_section(counts, cfg)
        if pooled.post is not None:
            for col, src in (
                ("pooled_mean", "mean"),
                ("pooled_lower", "lower"),
                ("pooled_upper", "upper"),
                ("shrinkage", "shrinkage"),
                ("read", "read"),
                ("read_reason", "read_reason"),
            ):
                if src in pooled.summary.columns:  # read, read_reason: "average" only
                    table[col] = pooled.summary[src].to_numpy()
            table["ppc_p"] = pooled.ppc_p
        own = interval_section(counts, table, pooled, cfg, proxy, adaptive)
    overall, sr, overall_findings = (
        overall_section(counts, pooled.post, cfg.level)
        if proxy is None
        else proxy_overall(counts, proxy, pooled.post, cfg.level)
    )
    findings = pooled.findings + stratum_findings(labelled, own, metric_name)
    if cfg.target_halfwidth is not None:
        table["extra_needed"], wide = target_section(table, cfg) if proxy is None else proxy_target(table, counts, cfg)
        findings += wide
    if pooled.post is not None:
        findings += model_findings(table, own, pooled)
    findings += guarantee_findings(table, cfg)
    findings += [f for f in overall_findings if f.severity == "warning"]
    findings += composition_findings(counts, overall, shares)
    findings += [f for f in overall_findings if f.severity == "note"]
    table["flags"] = table_flags(counts.strata, findings)
    columns = [c for c in _TABLE_COLUMNS if not cfg.guarantee.per_stratum or c not in _AVERAGE_ONLY]
    if proxy is not None:
        at = columns.index("rate") + 1
        columns[at:at] = list(_PROXY_COLUMNS)
    return _report(
        table[columns],
        overall,
        pooled,
        findings,
        counts,
        metric_name,
        cfg,
        stratified=sr,
        proxy=None if proxy is None else proxy.counts,
    )


def _report(
    table: pd.DataFrame,
    overall: pd.DataFrame,
    pooled: Any,
    findings: list[Finding],
    counts: Counts,
    metric_name: str,
    cfg: Settings,
    **extra: Any,
) -> Report:
    """The Report of the sections' data: findings split into warnings and notes, settings echoed."""
    return Report(
        table=table,
        overall=overall,
        checks=pooled.checks,
        warnings=[f.message for f in findings if f.severity == "warning"],
        notes=[f.message for f in findings if f.severity == "note"],
        metric=metric_name,
        level=cfg.level,
        engine=cfg.engine,
        counts=counts,
        guarantee=cfg.guarantee.name,
        target_halfwidth=cfg.target_halfwidth,
        posterior=pooled.post,
        findings=findings,
        **extra,
    )


#: the metrics of the fairness criteria: the audit section's metrics
# -- the fairness audit section: the audit and its findings ---------------------------------
#: the metrics of the fairness criteria: the audit section's metrics
_AUDIT_METRICS = ("selection_rate", "tpr", "fpr", "ppv")


def _audit_section(
    data: Any,
    groups: list[str],
    options: dict,
    y_true: str,
    y_pred: str,
    pos_label: Any,
    cfg: Settings,
    unlabelled: bool = False,
) -> tuple[Any, list[Finding]]:
    """The audit across ``groups`` and its findings (criteria decided outside, undecided).
    ``unlabelled``: a proxy's or a partly labelled pool's rows without labels (then only the
    metrics whose trials the prediction fixes)."""
    from bayeseval.fairness.audits import audit  # deferred: the audit loads the crossed engine

    given = {k: v for k, v in options.items() if v is not None}  # None: the audit's default
    metrics = [m for m in _AUDIT_METRICS if not (unlabelled or cfg.proxy) or m in ("selection_rate", "ppv")]
    if cfg.outcome is not None:  # an outcome column: the audit compares the groups' mean outcome
        metrics = ["accuracy"]
    res = audit(
        data,
        y_true=y_true,
        y_pred=y_pred,
        outcome=cfg.outcome,
        groups=groups,
        metrics=metrics,
        level=cfg.level,
        pos_label=pos_label,
        random_seed=cfg.random_seed,
        guarantee=cfg.guarantee,
        proxy=cfg.proxy,
        design=cfg.design,
        label_set=cfg.label_set,
        **given,
    )
    findings = []
    for criterion, rows in res.verdicts.groupby("criterion", sort=False):
        verdict = rows["verdict"].iloc[0]
        gaps = "; ".join(audit_html.gap_text(r) for r in rows.itertuples())
        if verdict == "outside":
            findings.append(
                Finding(
                    "fairness",
                    (),
                    f"Fairness: {criterion} is outside the tolerance {res.tolerance:g} ({gaps}).",
                    "warning",
                )
            )
        elif verdict == "undecided":
            findings.append(
                Finding(
                    "fairness",
                    (),
                    f"Fairness: {criterion} is undecided at "
                    f"tolerance {res.tolerance:g} ({gaps}); the audit section "
                    "lists the labels each group needs to decide.",
                    "note",
                )
            )
        elif verdict == "not measured":
            findings.append(
                Finding(
                    "fairness",
                    (),
                    f"Fairness: {criterion} is not measured: fewer "
                    f"than two groups have {res.min_trials} trials for "
                    f"{', '.join(rows['metric'])}; it is not within the tolerance "
                    "either.",
                    "warning",
                )
            )
    findings += [Finding("fairness", (), f"Fairness audit: {note}", "note") for note in res.notes]
    return res, findings
