"""The fairness audit's pipeline: :func:`audit` checks its options, counts each metric per group
once, fits the groups, and gathers the disparities, verdicts and labels needed in an
:class:`~bayeseval.fairness.result.Audit`.

:func:`audit` counts each metric per group once, then reports three intervals per
group and metric, the disparities between groups, and a verdict per fairness
criterion:

* **adaptive** (the default reading): the FAB interval ("frequentist, assisted by
  Bayes") whose tail split comes from a leave-one-out prior built from the *other*
  groups; coverage at least ``level`` for every group whatever its true rate, and
  shorter than Clopper-Pearson when the groups are alike
  (:func:`bayeseval._kernels.adaptive.adaptive_interval`);
* **Wilson**: the plain score interval of the group's own counts;
* **pooled**: the posterior of a hierarchical model across groups, which borrows
  strength but pulls an outlying group toward the others; for a group with no data it
  is a *prediction*, flagged as such. With one group column the groups are
  exchangeable (robust Beta-binomial); with several, the crossed-factor model
  (:func:`bayeseval.fit_crossed`: main effects plus a shrunk interaction), so a cell
  borrows from the cells that share its levels (``model=`` chooses).

Disparities per metric: the difference and the ratio of each group to the reference
group (default: per metric, the measured group with the most trials) with Newcombe's
hybrid score interval and Katz's log interval, and the max-min gap across groups with a
simultaneous interval (default: max-t intervals over every pair of groups, calibrated by
parametric bootstrap; ``method="bonferroni"``: the exact projection of Bonferroni-adjusted
Clopper-Pearson intervals); each beside its posterior interval and
``P(|gap| > tolerance)``.

Verdicts per criterion (demographic parity: selection rate; equal opportunity: TPR;
equalized odds: TPR and FPR; predictive parity: PPV): "outside" when the gap
interval lies above the tolerance, "within tolerance" when it lies below,
"undecided" otherwise, with the trials each group would need to decide at the
current rates, and "not measured" when fewer than two groups have ``min_trials``
trials (default 30): a gap, probability or verdict that is not measured is ``NaN`` or
"not measured", never 0. Groups with fewer trials stay in the groups table, flagged.

Every table has one column per group column, as in the data, and a display label.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.options import proxy_parts
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_random_seed,
    iter_columns,
)
from bayeseval._api.warnings import ClusteredRowsWarning
from bayeseval._kernels.binomial import GUARANTEES
from bayeseval._kernels.guarantee import Guarantee, as_guarantee
from bayeseval.counts.design import Design
from bayeseval.fairness.disparities import disparity_table, gap_notes, reference_notes
from bayeseval.fairness.groups import PoolCounts, default_reference, fit_all, fit_pool, group_frame, tabulate_pool
from bayeseval.fairness.inputs import (
    AuditCounts,
    audited_design,
    check_cluster_options,
    check_factor_names,
    check_graded_guarantee,
    check_metrics,
    check_min_trials,
    check_model,
    check_outcome_options,
    check_proxy_metrics,
    check_tolerance,
    make_layout,
    resolve_reference,
    tabulate_all,
)
from bayeseval.fairness.options import GAP_METHODS, MIN_TRIALS
from bayeseval.fairness.result import Audit
from bayeseval.fairness.verdicts import verdict_tables

__all__ = ["audit"]

#: how a message names an option, per interface (Python keyword or command-line flag)
_SPELLING = {
    "python": {"min_trials": "min_trials={}", "reference": "reference="},
    "cli": {"min_trials": "--min-trials {}", "reference": "--reference"},
}


def audit(
    data: Any,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    outcome: str | None = None,
    groups: str | list[str],
    metrics: str | list[str] | None = None,
    reference: Any = None,
    tolerance: float | None = None,
    level: float = 0.95,
    pos_label: Any = None,
    random_seed: Any = None,
    model: str | None = None,
    min_trials: int = MIN_TRIALS,
    method: str = "max_t",
    guarantee: str | Guarantee = "stratum",
    proxy: str | None = None,
    design: Design | Mapping[str, Any] | None = None,
    label_set: Any = None,
) -> Audit:
    """Audit a classifier's rates across groups: intervals, disparities and verdicts.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation, Spark DataFrame or any frame narwhals reads
        One row per example (anything :func:`bayeseval.tabulate` accepts).
    y_true, y_pred : str
        Columns holding the true and predicted labels (binary). Give both, or ``outcome``
        instead.
    outcome : str, optional
        Instead of ``y_true`` and ``y_pred``: a column of per-row outcomes in [0, 1] (0/1
        correctness, or partial credit such as 0.5), as in :func:`bayeseval.tabulate` and
        :func:`bayeseval.evaluate`. The metrics are then ``accuracy`` (the mean outcome, the
        default) and ``error_rate`` (one minus it); others are refused, and so are ``pos_label``,
        ``proxy``, a missing outcome or one outside [0, 1]. With 0/1 outcomes the audit is the one
        of ``y_true``/``y_pred`` whose accuracy they are (bit for bit without a cluster). Graded
        outcomes (some not 0 or 1) are read from units even without a cluster, each row its own
        unit with a fractional success: each group's interval is its units' finite-sample valid
        interval (``read`` ``"units"``) and the disparities come from those intervals as with
        ``design=Design(cluster=...)`` (see ``design`` and Notes); ``guarantee="average"`` is
        refused with graded outcomes (ValueError naming ``outcome`` and ``guarantee``: the pooled
        models take 0/1 outcomes only).
    groups : str or list of str
        Group column(s). With several columns the groups are their crossed cells; cells
        never observed are listed as empty, with a pooled prediction. Every table has one
        column per group column (named after it) and a display label ``group`` (see
        :class:`Audit`); a group column may not share a name with a column of the tables.
    metrics : str or list of str, optional
        Any of ``selection_rate``, ``tpr`` (``recall``), ``fnr``, ``fpr``, ``tnr``
        (``specificity``), ``ppv`` (``precision``), ``npv``, ``error_rate``,
        ``accuracy``, ``balanced_accuracy`` or any alias of
        :data:`bayeseval._api.metric_names.NAMES`; default all. Every table and note
        names a metric as it is written here (``recall`` stays ``recall``; the default
        names are the short ones above). Balanced accuracy is the mean
        of TPR and TNR; its interval is the MOVER combination (Zou and Donner 2008) of
        the two rates' intervals, which treats them as independent proportions (they
        come from disjoint rows).
    reference : tuple, mapping or str, optional
        Reference group of differences and ratios, given per group column: a tuple of
        values in the order of ``groups``, or a mapping ``column -> value``; with one
        group column, its value. A string names a group by its label (the values joined
        by ``" | "``) and is refused when it could name several groups (values that
        contain ``" | "``). Default: per metric, the measured group with the most trials
        for that metric (ties: most rows), shown in ``is_reference``, the ``reference``
        columns and :attr:`Audit.reference`.
    tolerance : float, optional
        Largest acceptable max-min gap, in (0, 1). Without it, no verdicts are given
        (``"no tolerance"``) and ``p_exceeds`` is ``NaN``. The criteria judged are the
        named ones whose metrics (or their complements: FNR for TPR, TNR for FPR) are
        audited; with ``metrics`` given, every other named metric is judged on its own
        gap (criterion ``"<metric>_parity"``).
    level : float
        Confidence level of every interval.
    pos_label : optional
        The positive class; defaults to 1 for 0/1 or boolean labels.
    random_seed : int or numpy.random.Generator, optional
        Seed of the posterior draws (keyword-only).
    model : {None, "crossed", "robust", "beta_binomial"} or PooledModel
        The pooled model (its name, or a :class:`~bayeseval.PooledModel` with the default prior
        and the exact engine) (the ``pooled_*`` columns and every posterior interval). None
        (default): ``"crossed"`` with several group columns, ``"robust"`` with one.
        ``"crossed"`` is the crossed-factor logit-normal model of
        :func:`bayeseval.fit_crossed` (additive main effects on the logit scale plus a
        shrunk per-cell interaction), so a cell borrows from the cells that share its
        levels; it needs at least two group columns. ``"robust"`` and
        ``"beta_binomial"`` treat the groups as exchangeable
        (:func:`bayeseval.fit_hierarchical`): every group is pulled toward the overall rate.
    min_trials : int
        Groups with fewer trials (for a metric) are reported in :attr:`Audit.groups`
        (``in_gap`` False) but left out of the max-min gap, its posterior and the
        verdicts, and a note names them: the gap is the gap among the groups with at
        least ``min_trials`` trials, and "not measured" when fewer than two have them.
        Default :data:`MIN_TRIALS` (30): a group of 30 trials moves the headline gap by
        noise alone by at most about two standard errors, ``2 sqrt(0.25 / 30) = 0.18``,
        and its 95% Wilson interval is at most 0.33 wide, where one- and two-person cells
        put rates of 0 and 1 in the headline (a COMPAS TPR gap of 1.00) and intervals of
        width 0.79 and more. ``min_trials=1`` keeps every measured group; a verdict set
        by a group under 30 trials then says so in its ``note``.
    method : {"max_t", "bonferroni"}
        The max-min gap interval. ``"max_t"`` (default): simultaneous intervals over
        every pair of groups, Agresti-Caffo differences with a max-t critical value
        calibrated by parametric bootstrap (:func:`bayeseval._kernels.disparity.max_t_gap`),
        projected to the gap. ``"bonferroni"``: Clopper-Pearson intervals at level
        ``1 - (1 - level) / G`` projected to the gap, coverage at least ``level`` for
        every configuration of true rates (for balanced accuracy the per-group intervals
        are MOVER combinations of Wilson intervals, not exact). Metrics read from units (a
        cluster, graded outcomes) take the second construction whatever ``method`` (from the
        units' intervals). See Notes.
    guarantee : {"stratum", "average"} or Guarantee
        What the groups table's ``lower`` and ``upper`` promise, as in
        :func:`bayeseval.evaluate` (a :class:`~bayeseval.Guarantee` or its name). ``"stratum"`` (default): each group's own interval,
        covering its rate at least ``level`` of the time at every rate (the adaptive
        interval from a leave-one-out prior; with a proxy, the proxy interval).
        ``"average"``: the pooled interval, except for groups whose count is not clearly
        typical of what the other groups predict (the same read rule as ``evaluate``),
        which read their own interval; covers on average over groups like these.
    proxy : str or Proxy, optional
        A column known on every row (a judge's label, a stronger model's prediction, or a
        probability/score; see :func:`bayeseval.tabulate`), or a :class:`~bayeseval.Proxy`
        carrying it and its ``label_set``: rows whose ``y_true`` is
        missing are the unlabelled rows. Metrics that read the true label then use each
        group's proxy estimate and interval (:func:`bayeseval.proxy_ci`,
        Clopper-Pearson cells): differences and ratios are MOVER combinations of those
        intervals (``method`` ``"mover"``, ``"mover_r"``), the max-min gap the projection
        of Bonferroni-adjusted proxy intervals (whatever ``method``), the pooled model is
        fitted to the groups' effective counts, ``min_trials`` counts labelled trials and
        ``labels_needed`` gives labels (the need in effective labels over the group's
        effective labels per label). The selection rate reads only ``y_pred`` and is
        counted on every row. Metrics: ``selection_rate``, ``error_rate``, ``accuracy``,
        ``ppv``, ``npv`` (the default with a proxy); others raise ValueError.
    design : Design or dict, optional
        The sampling design (:class:`~bayeseval.Design`). Its ``inclusion``, with ``proxy``:
        each labelled row's inclusion probability (see :func:`bayeseval.proxy_ci`). Its
        ``cluster``: a column whose rows sharing a value are one sampling unit (an item answered
        several times, the questions on one passage). When some unit holds more than one row,
        every metric is read from units (of ``y_true``/``y_pred``, or of ``outcome``, whose unit
        sums may be fractional): each group's ``lower``/``upper`` is the finite-sample valid interval
        of its row-level rate from its units' histogram (:func:`bayeseval.evaluate`'s unit
        interval, valid under any dependence within a unit; ``read`` is ``"units"``, the
        ``units`` column counts them); differences, ratios and the max-min gap come from those
        intervals at Bonferroni-adjusted levels (see Notes; ``method`` ``"units_bonferroni"`` and
        ``"bonferroni"`` whatever ``method``); no pooled model is fitted (it treats every row as
        an independent draw), so the adaptive, Wilson, pooled and posterior columns and
        ``p_exceeds`` are NaN, and ``labels_needed`` scales each group's units. When every unit
        holds one row the rows are independent and the audit is the one without the cluster.
        With ``proxy`` and a cluster (and, optionally, ``inclusion``: labelled units drawn per
        proxy cell) each group's interval is its units proxy interval (:func:`bayeseval.proxy_ci`
        with the cluster, ``read`` ``"proxy"``, ``units`` its labelled units), and the
        differences, ratios and gap come from those intervals at Bonferroni-adjusted levels, as
        above. Refused with a cluster (ValueError naming ``design.cluster``):
        ``guarantee="average"`` (the audit's pooled model treats rows as independent draws), and a cluster
        whose rows fall in more than one group (the message gives how many and one of them).
        ``population="pool"``: the rates of the rows of ``data`` themselves; rows whose
        ``y_true`` (or ``outcome``) is missing are the pool's unlabelled rows, the labelled ones
        a simple random sample within each group. Each group's interval is the exact
        hypergeometric interval of its labelled rows (the betting interval without replacement
        for units; exact for a group whose every row is labelled, and for ``selection_rate``),
        read ``"units"``, and the differences, ratios and gap come from those intervals at the
        Bonferroni level over the measured groups, as for units; with unlabelled rows the
        metrics whose trials need the truth (``tpr``, ``fpr``, ``tnr``, ``fnr``,
        ``balanced_accuracy``) are refused (ValueError naming ``metrics`` and
        ``design.population``), as are ``proxy`` and ``guarantee="average"``. The notes state
        the design in words (:meth:`Design.describe <bayeseval.Design.describe>`), with
        "labelled n of N".
    label_set : sequence, optional
        With ``proxy``: every class ``y_true`` may hold, for a class that neither the
        predictions nor a label proxy take (see :func:`bayeseval.proxy_ci`); any other such
        true label, e.g. ``-1`` marking unlabelled rows, is refused.

    Returns
    -------
    Audit
        ``groups``, ``disparities``, ``verdicts`` and ``labels_needed`` tables.

    Raises
    ------
    ValueError, TypeError
        Bad arguments (unknown metric, missing column, non-binary labels without
        ``pos_label``, unknown reference, out-of-range tolerance or level).

    Notes
    -----
    The max-t gap interval covered the true gap at least 0.95 of the time in every
    seeded scenario of six groups of 20 to 2,000 rows (docs/validation.md, section 8,
    with its width and power beside the Bonferroni projection's). Its coverage is
    approximate (calibrated by simulation at the observed and the pooled rates); the
    Bonferroni projection's is guaranteed, at the cost of width: ``method="bonferroni"``
    when a guarantee is needed. Below about 20 trials per group the max-t interval is an
    approximation whose width says little, one reason for the default ``min_trials``.

    Rows in units (``design=Design(cluster=...)``): each measured group's unit interval
    ``[l_g, u_g]`` is taken at the level ``1 - (1 - level) / G`` (``G`` the measured groups), so
    that every group's rate lies in its interval with probability at least ``level`` (Bonferroni's
    inequality, whatever the dependence between groups). On that event the difference to the
    reference lies in ``[l_g - u_ref, u_g - l_ref]`` and the ratio in ``[l_g / u_ref, u_g /
    l_ref]``, so the differences and ratios cover jointly at least ``level`` (today's Newcombe and
    Katz intervals cover each comparison on its own, and only for independent rows; the max-t gap
    resamples independent rows). The gap is the projection of :func:`gap_interval
    <bayeseval._kernels.disparity.gap_interval>` over the gap's groups at their own Bonferroni
    level, the construction of ``method="bonferroni"``, which holds for any valid per-group
    intervals. Balanced accuracy's interval is the mean of the TPR and TNR unit intervals, each at
    the Bonferroni level over the two. Measured (docs/validation.md, section 15): 3 groups of 30
    items answered 5 times, item accuracy Beta(1.2, 0.3), 2,000 datasets, the differences covered
    jointly 1.000 of the time at level 0.95 (mean width 0.67), where the row audit's Newcombe
    intervals covered 0.64 (width 0.18).

    Why ``G`` and not the pairs: the differences and the gap are read off one simultaneous set,
    the ``G`` groups' intervals at ``1 - (1 - level) / G``. Every pairwise difference
    ``theta_i - theta_j`` lies in ``[l_i - u_j, u_i - l_j]`` and the gap ``max theta - min theta``
    in ``[max(0, max_g l_g - min_g u_g), max_g u_g - min_g l_g]`` whenever all ``G`` intervals
    cover, so all of them hold together with probability at least ``level``. Bonferroni over the
    ``G (G - 1) / 2`` pairs (each pair's difference at ``1 - (1 - level) / P`` from its two groups'
    intervals at half that error) needs each group's interval at ``1 - (1 - level) / (G (G - 1))``,
    wider for every ``G >= 3``; the max-t gap resamples independent rows, which units are not, so
    over units ``method="max_t"`` gives this construction too. (The gap uses the groups with at
    least ``min_trials`` trials, the differences every measured group: each is simultaneous on its
    own.) Measured (docs/validation.md, section 15a; 2,000 seeded datasets per row, 3 to 6 groups
    of 30 items x 5 answers, item accuracy Beta(1.2, 0.3), one group's lowered by 0 or 0.2: true
    gap 0 or 0.196): the gap and every pairwise difference covered jointly 1.000 of the time under
    both constructions; mean gap width 0.42-0.48 (true gap 0) and 0.54-0.58 (0.196) against
    0.44-0.53 and 0.56-0.62 over the pairs, differences 0.68-0.73 wide against 0.73-0.85. Graded
    outcomes (``outcome=``) follow the same construction; 3 groups of 30 items answered 5 times
    and scored 0, 0.5 or 1: the two differences to the reference covered jointly 1.000 of the
    time at level 0.95 (1,000 datasets, mean width 0.65).

    The max-t calibration costs two bootstraps of 2,000 replicates over the ``G (G - 1) / 2``
    pairs: milliseconds for tens of groups, a few seconds for 200.

    Why max-t rather than an exact-test step-down: a step-down procedure (Holm over
    pairwise exact tests) decides which pairs differ, but gives no simultaneous interval
    of the size of the gap, which the verdict compares with the tolerance; the max-t
    intervals are simultaneous over every pair, so their projection bounds the gap, and
    studentising each pair by its own standard error keeps a small group from setting
    the width of the comparisons between large groups.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 50, "p": [1, 0, 1, 1] * 50,
    ...                    "g": ["a"] * 100 + ["b"] * 100})
    >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["selection_rate"],
    ...             tolerance=0.3, random_seed=0)
    >>> res.verdicts[["criterion", "verdict"]].values.tolist()
    [['demographic_parity', 'within tolerance']]

    Items answered five times each, audited with the item as the unit:

    >>> from bayeseval import Design
    >>> items = pd.DataFrame({"item": [i // 5 for i in range(300)], "y": 1,
    ...                       "p": [1, 1, 1, 1, 0] * 60, "g": ["a"] * 150 + ["b"] * 150})
    >>> res = audit(items, y_true="y", y_pred="p", groups="g", metrics="selection_rate",
    ...             design=Design(cluster="item"))
    >>> res.groups[["group", "units", "read"]].values.tolist()
    [['a', 30, 'units'], ['b', 30, 'units']]
    >>> res.notes[0]
    'Sampling design: 60 items in 2 groups, 5 rows each; intervals treat the item as the unit.'

    Graded answers (partial credit 0.5), each answer its own unit:

    >>> graded = pd.DataFrame({"score": [1, 0.5, 1, 0] * 50, "g": ["a"] * 100 + ["b"] * 100})
    >>> res = audit(graded, outcome="score", groups="g")
    >>> res.groups[["group", "metric", "rate", "units", "read"]].values.tolist()
    [['a', 'accuracy', 0.625, 100, 'units'], ['b', 'accuracy', 0.625, 100, 'units']]
    """
    model = _audit_model(model)
    proxy, label_set = proxy_parts(proxy, label_set)
    return audit_with_spelling(
        data,
        y_true=y_true,
        y_pred=y_pred,
        outcome=outcome,
        groups=groups,
        metrics=metrics,
        reference=reference,
        tolerance=tolerance,
        level=level,
        pos_label=pos_label,
        random_seed=random_seed,
        model=model,
        min_trials=min_trials,
        method=method,
        spelling="python",
        guarantee=guarantee,
        proxy=proxy,
        design=design,
        label_set=label_set,
    )


def _audit_model(model: Any) -> Any:
    """The model's name of ``model=`` (a name or a PooledModel with the default prior and engine)."""
    from bayeseval.models.pooled import PooledModel  # deferred: the models load on use

    if not isinstance(model, PooledModel):
        return model
    if model.engine != "exact":
        raise ValueError(f"model.engine={model.engine!r}: the audit fits its pooled models with the exact engine")
    if not (isinstance(model.prior, str) and model.prior == "default"):
        raise ValueError(f"model.prior={model.prior!r}: the audit fits its pooled models with their default prior")
    return model.name


def audit_with_spelling(
    data: Any,
    *,
    y_true: str | None,
    y_pred: str | None,
    groups: Any,
    metrics: Any,
    reference: Any,
    tolerance: Any,
    level: Any,
    pos_label: Any,
    random_seed: Any,
    model: Any,
    min_trials: Any,
    method: Any,
    spelling: str,
    guarantee: str | Guarantee = "stratum",
    proxy: str | None = None,
    design: Design | Mapping[str, Any] | None = None,
    label_set: Any = None,
    outcome: str | None = None,
) -> Audit:
    """:func:`audit`, with messages naming options as the interface ``spelling`` spells them."""
    check_outcome_options(outcome, proxy)
    written = check_metrics(metrics, proxy, outcome)
    names = list(written)
    d = audited_design(design, pool=True)
    inclusion = d.inclusion
    check_proxy_metrics(names, proxy, inclusion, label_set)
    guarantee = as_guarantee(guarantee, allowed=GUARANTEES)
    check_cluster_options(d, proxy, guarantee)
    tol = check_tolerance(tolerance)
    level = check_level(level)
    random_seed = check_random_seed(random_seed)
    cols = iter_columns(groups, "groups")
    if not cols:
        raise ValueError(f"groups must name at least one column, got {groups!r}")
    check_factor_names(cols)
    model = check_model(model, len(cols))
    min_trials = check_min_trials(min_trials)
    method = check_method(method, GAP_METHODS, "method")
    pool = None
    if d.population == "pool":
        check_pool_options(d, proxy, guarantee)
        pool = tabulate_pool(data, cols, y_true, y_pred, names, pos_label, cluster=d.cluster, outcome=outcome)
        counted = pool.labelled
    else:
        with warnings.catch_warnings():
            if design is not None:  # a stated design says whether rows are clustered: no guess
                warnings.simplefilter("ignore", ClusteredRowsWarning)
            counted = tabulate_all(
                data,
                cols,
                y_true,
                y_pred,
                names,
                pos_label,
                None if proxy is None else (proxy, inclusion, label_set),
                cluster=d.cluster,
                outcome=outcome,
            )
    check_graded_guarantee(outcome, guarantee, counted)
    cells, rows, counts = counted.cells, counted.rows, counted.counts
    layout = make_layout(cells, cols)
    given = resolve_reference(reference, layout, spelling)
    if pool is not None:
        fits = fit_pool(names, pool, level, random_seed, min_trials)
    else:
        fits = fit_all(names, counts, cells, level, random_seed, model, min_trials)
    refs = {m: default_reference(fits[m], rows) if given is None else given for m in names}
    spell = _SPELLING[spelling]
    verdicts, labels_needed = verdict_tables(
        names,
        fits,
        layout,
        rows,
        level,
        tol,
        method,
        explicit=metrics is not None or outcome is not None,
        min_trials=min_trials,
    )
    notes = (pool_notes(d, pool, names) if pool is not None else design_notes(d, counted, outcome)) + [
        note
        for m in names
        for note in (
            reference_notes(m, fits[m], layout.labels, refs[m], given is not None, spell)
            + gap_notes(m, fits[m], layout.labels, min_trials, spell)
        )
    ]
    return _as_written(
        written,
        Audit(
            groups=pd.concat([group_frame(m, layout, fits[m], refs[m], guarantee) for m in names], ignore_index=True),
            disparities=disparity_table(names, fits, layout, refs, level, tol, method, min_trials),
            verdicts=verdicts,
            labels_needed=labels_needed,
            reference={m: layout.labels[refs[m]] for m in names},
            level=level,
            tolerance=tol,
            model=model,
            min_trials=min_trials,
            notes=notes,
            method=method,
            columns=list(cols),
            guarantee=guarantee.name,
            proxy=proxy,
            design=pool_design(d, pool, names)
            if pool is not None
            else (None if d.cluster is None else d.describe(counted.clustered, groups=True)),
            units=counted.by_unit or pool is not None,
            outcome=outcome,
        ),
    )


def check_pool_options(design: Design, proxy: Any, guarantee: Any) -> None:
    """Refuse with ``population="pool"`` what does not take it: a proxy, the pooled guarantee."""
    if proxy is not None:
        raise ValueError(
            f"design.population='pool' is not taken with proxy={proxy!r}: the pool's unlabelled rows are read "
            "through the finite-pool interval of the labelled ones; audit without the proxy"
        )
    if not guarantee.per_stratum:
        raise ValueError(
            f"design.population='pool' is not taken with guarantee={guarantee.name!r}: the pooled model is for "
            "the rates of a process, not of the pool's rows; use guarantee='stratum' (each group's finite-pool "
            "interval)"
        )


def _pool_sizes_text(pool: PoolCounts, names: list[str]) -> str:
    """Labelled n of N trials, for the first metric that needs labels (else every row)."""
    needs = [m for m in names if m in pool.labelled.counts and pool.labelled.counts[m] is not pool.pool.counts[m]]
    m = needs[0] if needs else names[0]
    n = int(np.sum(pool.labelled.counts[m][1])) if m in pool.labelled.counts else int(pool.pool.rows.sum())
    big_n = int(np.sum(pool.pool.counts[m][1])) if m in pool.pool.counts else int(pool.pool.rows.sum())
    return f"{n:,} of the pool's {big_n:,} {m} trials labelled"


def pool_design(design: Design, pool: PoolCounts, names: list[str]) -> str:
    """The design of a pool's audit in words: the design, and labelled n of N."""
    if pool.pool.clustered is not None:
        sizes = design.describe(pool.pool.clustered, groups=True)
    else:
        sizes = f"{int(pool.pool.rows.sum()):,} rows in {len(pool.pool.cells)} groups; {design.describe()}"
    return (
        f"{sizes}; {_pool_sizes_text(pool, names)}, taken as a simple random sample without replacement within "
        "each group"
    )


def pool_notes(design: Design, pool: PoolCounts, names: list[str]) -> list[str]:
    """How the audit of a pool reads it."""
    return [
        f"Sampling design: {pool_design(design, pool, names)}.",
        "population='pool': each group's interval is for the rate of its rows in the pool, from its labelled rows "
        "drawn at random without replacement (exact hypergeometric limits for binary rows, the betting interval "
        "without replacement for units; a group whose every row is labelled, and the selection rate, are known "
        "exactly); no pooled model (the posterior columns are NaN); differences and ratios to the reference come "
        "from those intervals at the Bonferroni level over the measured groups (simultaneous, interval "
        "arithmetic), and the max-min gap is their Bonferroni projection.",
    ]


def design_notes(design: Design, counted: AuditCounts, outcome: str | None = None) -> list[str]:
    """The design in words (as :func:`bayeseval.evaluate` states it) and how the audit read it."""
    if design.cluster is None:
        if not counted.by_unit:
            return []
        return [
            f"Outcomes {outcome!r} are graded: each row is its own unit with a fractional success, and each "
            "group's interval is its units' finite-sample valid interval (read 'units'; no pooled model, which "
            "counts 0/1 outcomes: the posterior columns are NaN); differences and ratios to the reference come "
            "from those intervals at the Bonferroni level over the measured groups (simultaneous), and the "
            "max-min gap is their Bonferroni projection."
        ]
    text = f"Sampling design: {design.describe(counted.clustered, groups=True)}."
    if not counted.by_unit:
        return [
            text + " Every unit holds one row: the rows are independent draws and the audit is the one without "
            "the cluster."
        ]
    return [
        text,
        "Rows come in units: each group's interval is its units' finite-sample valid interval (read 'units'; "
        "no pooled model, which treats rows as independent draws: the posterior columns are NaN); differences "
        "and ratios to the reference come from those intervals at the Bonferroni level over the measured groups "
        "(simultaneous), and the max-min gap is their Bonferroni projection.",
    ]


def _as_written(written: dict[str, str], result: Audit) -> Audit:
    """Every table and note names each metric as the user wrote it (``recall`` stays ``recall``)."""
    if all(key == name for key, name in written.items()):
        return result
    for frame in (result.groups, result.disparities, result.verdicts, result.labels_needed):
        frame["metric"] = frame["metric"].map(lambda m: written.get(m, m))
    result.reference = {written.get(m, m): label for m, label in result.reference.items()}
    for i, note in enumerate(result.notes):
        key, sep, rest = note.partition(": ")
        result.notes[i] = written.get(key, key) + sep + rest
    return result
