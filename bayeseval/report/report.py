"""One report object for an evaluation: per-stratum table, overall rates, checks, warnings.

:func:`evaluate` goes from a predictions frame to a :class:`Report`:
tabulate (rows -> successes/trials per stratum), each stratum's interval under the
chosen guarantee (by default one that covers the stratum's own rate at every true rate),
the pooled hierarchical posterior, the overall rate unweighted and reweighted
by population shares, model checks, and plain-English warnings. A Report
renders as HTML in Jupyter, as text in a terminal, and converts to a tidy
DataFrame, an xarray Dataset, a JSON-ready dict, HTML or Markdown files.
"""

from __future__ import annotations

import base64
import html
import json
import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from numbers import Real
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from bayeseval import __version__, plots
from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_level,
    check_method,
    check_random_seed,
    check_weights,
    iter_columns,
)
from bayeseval._api.warnings import BayesevalWarning, ConvergenceWarning
from bayeseval._kernels.binomial import GUARANTEES
from bayeseval._kernels.conflict import READ_ADAPTIVE_P, adaptive_bounds, read_bounds, read_choice
from bayeseval._render import audit_html
from bayeseval._render.formats import json_key, json_value, md_escape, md_row, printable, tex_escape
from bayeseval._render.html_page import REPORT_CSS, page
from bayeseval._render.spreadsheet import csv_safe_frame, write_xlsx
from bayeseval.checks import posterior_predictive_check
from bayeseval.counts.counts import Counts, stratum_labels, tabulate
from bayeseval.counts.metrics import Metric, get_metric
from bayeseval.counts.proxy import ProxyCounts
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.estimate.proxy import effective_counts, proxy_ci, weighted_interval
from bayeseval.estimate.stratified import stratified_risk
from bayeseval.models import fit_hierarchical
from bayeseval.models.priors import resolve_prior
from bayeseval.plan.sizes import sample_size

__all__ = ["Finding", "Report", "evaluate"]

# composition check: a stratum's sample share differs from its population share by more
# than this (absolute) or by a factor beyond 1.5 either way
_SHARE_TOL = 0.05
_SHARE_RATIO = 1.5

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

# display order of the table's columns, in groups: the counts and the interval of each stratum,
# the pooled model, and the checks
_COLUMN_GROUPS = (
    ("estimate", ("successes", "trials", "rate", "lower", "upper", "halfwidth", "pool_trials",
                  "proxy_used", "agreement", "effective_labels", "sample_share", "weight")),
    ("pooled", ("pooled_mean", "pooled_lower", "pooled_upper", "shrinkage", "read")),
    ("checks", ("ppc_p", "extra_needed", "flags")),
)
# columns left out of the renderings when they hold nothing (no weights, no target, no model)
_OPTIONAL_COLUMNS = ("weight", "pooled_mean", "pooled_lower", "pooled_upper", "shrinkage", "read",
                     "read_reason", "ppc_p", "extra_needed")
# columns of the data (to_frame, JSON, CSV) that the rendered tables leave out: the HTML
# shows the reason as the ``read`` cell's tooltip, and the findings name the strata and why
_HIDDEN_COLUMNS = ("read_reason",)

# the HTML rendering embeds a forest plot only up to this many strata
_MAX_PLOT_STRATA = 60

_POOLED_DOC = "covers on average over strata like these, not for a stratum that differs"
_COLUMN_DOC = {
    "successes": "successes (e.g. errors) in the stratum",
    "trials": "trials (rows counted by the metric)",
    "rate": "raw rate successes / trials",
    "halfwidth": "half the width of the interval (lower, upper)",
    "pooled_mean": "pooled (hierarchical) posterior mean",
    "pooled_lower": f"pooled posterior credible interval, lower bound: {_POOLED_DOC}",
    "pooled_upper": f"pooled posterior credible interval, upper bound: {_POOLED_DOC}",
    "shrinkage": "weight of the population mean in the pooled estimate, 0 (own data only) to 1",
    "read": "which interval lower and upper are: pooled (pooled_lower, pooled_upper), or "
    "adaptive (exact coverage for the stratum) when its count is not clearly typical of what "
    "the other strata predict (leave-one-out conflict p-value at most 0.20, or flagged)",
    "read_reason": "why the stratum reads that interval, with the leave-one-out conflict p-value",
    "sample_share": "the stratum's share of the test set's trials",
    "weight": "population share (given weights)",
    "ppc_p": "posterior predictive p-value of the stratum's count",
    "extra_needed": "more labels needed for the target half-width (at the observed rate)",
    "flags": "short flags: empty, rate 0, rate 1, too wide, model check, strong shrinkage, "
    "estimates disagree",
    "pool_trials": "trials in the pool, labelled or not (with a proxy)",
    "proxy_used": "whether the stratum's interval reads the proxy's cells (else labels only)",
    "agreement": "share of labelled trials where the label proxy's verdict is the truth",
    "effective_labels": "labels the proxy's cells are worth (labels-only variance over the "
    "cells' variance, times the labels)",
}
# what lower and upper are, per guarantee
_INTERVAL_DOC = {
    "stratum": "the stratum's interval, covering its own rate at least at the level whatever "
    "that rate is: adaptive (exact tests, tails split by a prior from the other strata only), "
    "Clopper-Pearson when fewer than two strata have trials",
    "average": "the interval read for the stratum (see read): pooled posterior, or adaptive "
    "where the count is atypical; pooled rows cover on average over strata, not for a stratum "
    "that differs",
}


# the header's words for what lower/upper promise
_GUARANTEE_TEXT = {
    "stratum": "cover each stratum's own rate at every true rate",
    "average": "are the interval read (pooled, or adaptive where atypical), covering on "
    "average over strata",
}


def _column_doc(column: str, guarantee: str) -> str:
    """What a column of the table holds, under ``guarantee``."""
    if column in ("lower", "upper"):
        return f"{column} bound of {_INTERVAL_DOC[guarantee]}"
    return _COLUMN_DOC.get(column, column)


@dataclass(repr=False)
class Report(Result):
    """The result of :func:`evaluate`: tables, checks and warnings for one evaluation.

    Parameters
    ----------
    table : pandas.DataFrame
        Indexed by stratum. Columns ``successes``, ``trials``, ``rate``, ``lower``,
        ``upper`` (*the* interval of the stratum, see ``guarantee``), ``halfwidth``
        (half its width), ``pooled_mean``, ``pooled_lower``, ``pooled_upper`` (the pooled
        posterior, equal-tailed credible interval: it covers on average over strata like
        these, not for a stratum that differs), ``shrinkage`` (the weight of the
        population mean in the pooled estimate, 0 to 1: see :func:`evaluate`), with
        ``guarantee="average"`` only ``read`` (``"pooled"`` or ``"adaptive"``: which
        interval ``lower`` and ``upper`` are) and ``read_reason`` (why, with the
        leave-one-out conflict p-value; see :meth:`Posterior.summary
        <bayeseval.models.Posterior.summary>`), then ``sample_share``, ``weight``
        (population share, NaN without weights), ``ppc_p`` (posterior predictive
        p-value), ``extra_needed`` (labels still needed for ``target_halfwidth``; 0 when
        met, NaN without a target) and ``flags`` (comma-separated short flags, each
        defined in :func:`evaluate`).
    overall : pandas.DataFrame
        Indexed by ``estimand``: ``unweighted`` (the pooled rate of the test set,
        Wilson interval: the rate at the *test set's composition*) and, with
        weights, ``reweighted`` (sum of population share x stratum rate with its
        normal interval, :func:`~bayeseval.stratified_risk`) and
        ``posterior_weighted`` (the same quantity under the pooled posterior).
        Columns ``estimate``, ``lower``, ``upper``, ``se``.
    checks : pandas.DataFrame
        Model-check verdicts, one row per check: ``statistic``, ``p_value``, ``verdict``.
    warnings : list of str
        Plain-English warnings (also in every rendering).
    notes : list of str
        Plain-English notes that are not warnings (e.g. which number is the
        population estimate).
    metric : str
        Name of the metric.
    level : float
        Level of every interval.
    engine : str
        Engine of the pooled model.
    guarantee : {"stratum", "average"}
        What ``lower`` and ``upper`` promise (see :func:`evaluate`): ``"stratum"``,
        coverage at least ``level`` for each stratum at every true rate; ``"average"``,
        the pooled interval read rule, covering on average over strata.
    counts : Counts
        The tabulated counts.
    target_halfwidth : float or None
        The wanted half-width per stratum, if any.
    posterior : Posterior or None
        The pooled model (None when no stratum has any trials; a finding says so).
    stratified : StratifiedRisk or None
        The reweighted estimate, when weights were given and it is defined.
    title : str
        Title of the renderings (default: ``"bayeseval report: <metric>"``).
    findings : list of Finding
        Everything the report found, as data (flag, strata, message, severity);
        ``warnings`` and ``notes`` are their messages, and the table's ``flags``
        come from the findings about strata.
    source : str
        The data the report was made from (a file path, or the kind of object given).
    created : str
        When the report was made (UTC, ISO 8601 to the second).
    version : str
        The bayeseval version that made it.
    audit : Audit or None
        The fairness audit across ``groups`` (:func:`bayeseval.fairness`), when
        :func:`evaluate` was given ``groups``: rendered as the report's "Fairness audit"
        section (verdicts, disparities, groups table and forest plot).
    proxy : ProxyCounts or None
        With :func:`evaluate`'s ``proxy``: the counts per stratum and proxy cell. ``counts``
        then holds each stratum's effective counts (what its proxy interval is worth, the
        counts the pooled model is fitted to) and the table's ``successes`` and ``trials``
        the labelled ones.

    Examples
    --------
    >>> from bayeseval.datasets import make_pool
    >>> pool = make_pool(3_000, 4, rates=[0.05, 0.1, 0.2, 0.3], random_seed=0)
    >>> rep = evaluate(pool, y_true="y_true", y_pred="y_pred", strata="stratum", random_seed=0)
    >>> rep.table.index.tolist()
    ['s1', 's2', 's3', 's4']
    >>> "unweighted" in rep.overall.index
    True
    """

    table: pd.DataFrame
    overall: pd.DataFrame
    checks: pd.DataFrame
    warnings: list[str]
    notes: list[str]
    metric: str
    level: float
    engine: str
    counts: Counts
    guarantee: str = "stratum"
    target_halfwidth: float | None = None
    posterior: Any = None
    stratified: Any = None
    title: str = field(default="")
    findings: list[Finding] = field(default_factory=list)
    source: str = ""
    created: str = ""
    version: str = __version__
    audit: Any = None
    proxy: Any = None

    # -- conversions ---------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """The per-stratum table as a tidy DataFrame: one row per stratum, stratum as column(s).

        Returns
        -------
        pandas.DataFrame
            :attr:`table` with the stratum index as column(s).

        Examples
        --------
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(3, random_seed=0)
        >>> evaluate(counts, random_seed=0).to_frame().columns[:3].tolist()
        ['stratum', 'successes', 'trials']
        """
        return self.table.reset_index()

    def to_xarray(self) -> Any:
        """An ``xarray.Dataset`` of the table over dimension ``stratum``; overall rates as attrs.

        Returns
        -------
        xarray.Dataset
            One variable per table column; settings, warnings and overall rates as attributes.

        Examples
        --------
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(3, random_seed=0)
        >>> ds = evaluate(counts, random_seed=0).to_xarray()
        >>> ds["rate"].dims
        ('stratum',)
        """
        import xarray as xr

        labels = stratum_labels(self.table.index)
        data = {}
        for col in self.table.columns:
            values = self.table[col]
            if values.dtype == object:  # flags, read, read_reason: text
                values = values.fillna("").astype(str)
            data[col] = ("stratum", values.to_numpy())
        ds = xr.Dataset(data, coords={"stratum": labels})
        if isinstance(self.table.index, pd.MultiIndex):
            for i, name in enumerate(self.table.index.names):
                ds = ds.assign_coords(
                    {str(name or f"level_{i}"): ("stratum", self.table.index.get_level_values(i))}
                )
        ds.attrs.update(
            metric=self.metric,
            level=self.level,
            engine=self.engine,
            guarantee=self.guarantee,
            warnings=json.dumps(self.warnings),
        )
        for est, row in self.overall.iterrows():
            for col, val in row.items():
                ds.attrs[f"{est}_{col}"] = float(val)
        return ds

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN becomes None): settings, strata, overall, checks, findings.

        Returns
        -------
        dict
            Keys ``metric``, ``level``, ``engine``, ``guarantee``, ``target_halfwidth``,
            ``population_estimate``, ``strata``, ``overall``, ``checks``,
            ``warnings``, ``notes``, ``findings``, the provenance ``version``,
            ``created`` and ``source``, and ``audit`` (:meth:`Audit.to_dict
            <bayeseval.fairness.audits.Audit.to_dict>`, or None without ``groups``).

        Examples
        --------
        >>> import json
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(2, random_seed=0)
        >>> d = evaluate(counts, random_seed=0).to_dict()
        >>> sorted(d)[:4], json.loads(json.dumps(d))["metric"]
        (['audit', 'checks', 'created', 'engine'], 'error_rate')
        """
        strata = []
        for key, row in self.table.iterrows():
            rec: dict[str, Any] = {"stratum": json_key(key)}
            rec.update({col: json_value(val) for col, val in row.items()})
            strata.append(rec)
        overall = {
            str(est): {col: json_value(val) for col, val in row.items()}
            for est, row in self.overall.iterrows()
        }
        checks = [
            {"check": str(name), **{c: json_value(v) for c, v in row.items()}}
            for name, row in self.checks.iterrows()
        ]
        return {
            "metric": self.metric,
            "level": self.level,
            "engine": self.engine,
            "guarantee": self.guarantee,
            "target_halfwidth": self.target_halfwidth,
            "population_estimate": "reweighted" if "reweighted" in self.overall.index else None,
            "strata": strata,
            "overall": overall,
            "checks": checks,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "findings": [
                {"flag": f.flag, "strata": [json_key(k) for k in f.strata], "message": f.message,
                 "severity": f.severity}
                for f in self.findings
            ],
            "version": self.version,
            "created": self.created,
            "source": self.source,
            "audit": None if self.audit is None else self.audit.to_dict(),
        }

    # -- rendering -------------------------------------------------------------------------------
    def _display_table(self) -> pd.DataFrame:
        """The table in display order (raw | pooled | checks), without columns that are all NaN."""
        t = self.table.drop(columns=[c for c in _HIDDEN_COLUMNS if c in self.table.columns])
        t.index = pd.Index(stratum_labels(t.index), name="stratum")
        order = [c for _, cols in _COLUMN_GROUPS for c in cols if c in t.columns]
        t = t[order + [c for c in t.columns if c not in order]]
        empty = [c for c in _OPTIONAL_COLUMNS if c in t.columns and t[c].isna().all()]
        return t.drop(columns=empty)

    @staticmethod
    def _fmt(col: str, val: Any) -> str:
        if val is None or (isinstance(val, float) and math.isnan(val)):
            return ""
        if col in ("successes", "trials", "extra_needed", "pool_trials"):
            return f"{int(val):d}"
        if col in ("flags", "read", "read_reason"):
            return str(val)
        if col == "proxy_used":
            return "yes" if val else "no"
        if col == "effective_labels":
            return f"{float(val):.1f}"
        return f"{float(val):.4f}"

    def _provenance(self) -> list[tuple[str, str]]:
        """What the report was made from and with: version, date, data, metric, level, engine,
        guarantee."""
        engine = self.engine if self.posterior is not None else f"{self.engine} (no pooled model)"
        return [
            ("bayeseval", self.version),
            ("created", self.created or "not recorded"),
            ("data", self.source or "not recorded"),
            ("metric", self.metric),
            ("level", f"{100 * self.level:g}%"),
            ("engine", engine),
            ("guarantee", self.guarantee),
        ]

    def _header(self) -> list[str]:
        """Title, provenance line, what the table holds, and the target if any."""
        pct = f"{100 * self.level:g}%"
        pooled = (f"pooled_* the pooled posterior from the {self.engine} engine, covering on "
                  "average over strata like these" if self.posterior is not None
                  else "no pooled model")
        lines = [
            self.title or f"bayeseval report: {self.metric}",
            "; ".join(f"{k}: {v}" for k, v in self._provenance()),
            f"{_strata(len(self.table))}, {int(self.table['trials'].sum())} trials, "
            f"{pct} intervals (guarantee {self.guarantee!r}: lower/upper {_GUARANTEE_TEXT[self.guarantee]}; "
            f"{pooled})",
        ]
        if self.target_halfwidth is not None:
            lines.append(f"target half-width: {self.target_halfwidth:g}")
        return lines

    def _overall_lines(self) -> list[str]:
        names = {
            "unweighted": "unweighted (test-set composition)",
            "reweighted": "reweighted by population shares  <- population estimate",
            "posterior_weighted": "pooled posterior, population-weighted",
        }
        out = []
        for est, row in self.overall.iterrows():
            out.append(
                f"  {row['estimate']:.4f}  [{row['lower']:.4f}, {row['upper']:.4f}]  "
                f"{names.get(str(est), str(est))}"
            )
        return out

    def __str__(self) -> str:
        t = self._display_table()
        body = t.apply(lambda col: col.map(lambda v, c=col.name: self._fmt(c, v)))
        body.index = pd.Index([printable(k) for k in body.index], name=body.index.name)
        lines = [printable(h) for h in self._header()] + ["", body.to_string(), "", "Overall rate:"]
        lines += self._overall_lines()
        if len(self.checks):
            lines += ["", "Model checks:"]
            for name, row in self.checks.iterrows():
                p = "" if pd.isna(row["p_value"]) else f" (smallest p = {row['p_value']:.3f})" \
                    if name == "ppc_counts" else f" (p = {row['p_value']:.3f})"
                lines.append(f"  {name}: {row['verdict']}{p}")
        if self.audit is not None:
            lines += ["", "Fairness audit:"] + [f"  {printable(x)}" for x in audit_html.audit_lines(self.audit)]
        if self.notes:
            lines += ["", "Notes:"] + [f"  - {n}" for n in self.notes]
        if self.warnings:
            lines += ["", "Warnings:"] + [f"  ! {w}" for w in self.warnings]
        else:
            lines += ["", "No warnings."]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<Report metric={self.metric!r} strata={len(self.table)} "
            f"trials={int(self.table['trials'].sum())} warnings={len(self.warnings)}>"
        )

    def to_markdown(self) -> str:
        """The report as Markdown: header, per-stratum table, overall rates, checks, warnings.

        Every piece of text that can come from the user (stratum names, metric
        label, title, warnings and notes quoting them) is escaped: HTML
        characters become entities, as in :meth:`to_html`, and so do table
        pipes and line breaks, so a cell renders as its exact text and never as
        HTML, a second row or a broken table.

        Returns
        -------
        str
            The Markdown document.

        Examples
        --------
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["<b>a|b</b>", "c"]),
        ...                random_seed=0)
        >>> [ln.split(" | ")[0] for ln in rep.to_markdown().splitlines() if ln.startswith("| &")]
        ['| &lt;b&gt;a&#124;b&lt;/b&gt;']
        """
        t = self._display_table()
        cols = ["stratum"] + list(t.columns)
        head = self._header()
        out = [f"# {md_escape(head[0])}", ""] + [f"{md_escape(h)}  " for h in head[1:]] + [""]
        out.append("| " + " | ".join(cols) + " |")  # the report's own column names
        out.append("|" + "|".join("---" if c in ("stratum", "flags") else "---:" for c in cols) + "|")
        for key, row in t.iterrows():
            out.append(md_row([str(key)] + [self._fmt(c, row[c]) for c in t.columns]))
        out += ["", "## Overall rate", "", "| estimand | estimate | lower | upper |", "|---|---:|---:|---:|"]
        for est, row in self.overall.iterrows():
            out.append(md_row([str(est)] + [f"{row[c]:.4f}" for c in ("estimate", "lower", "upper")]))
        if len(self.checks):
            out += ["", "## Model checks", "", "| check | p-value | verdict |", "|---|---:|---|"]
            for name, row in self.checks.iterrows():
                p = "" if pd.isna(row["p_value"]) else f"{row['p_value']:.3f}"
                out.append(md_row([str(name), p, str(row["verdict"])]))
        if self.audit is not None:
            out += ["", "## Fairness audit", ""] + [f"- {md_escape(x)}" for x in audit_html.audit_lines(self.audit)]
        if self.notes:
            out += ["", "## Notes", ""] + [f"- {md_escape(n)}" for n in self.notes]
        out += ["", "## Warnings", ""]
        out += [f"- {md_escape(w)}" for w in self.warnings] if self.warnings else ["No warnings."]
        return "\n".join(out) + "\n"

    def forest_png(self, *, dpi: int = 100) -> bytes:
        """A PNG of the forest plot (each stratum's interval beside the pooled posterior).

        Parameters
        ----------
        dpi : int, default 100
            Resolution of the image.

        Returns
        -------
        bytes
            The PNG file's bytes.
        """
        from bayeseval.plots.base import figure_png  # deferred: matplotlib only when drawing

        height = max(2.5, 0.45 * len(self.table) + 1.2)
        return figure_png(lambda ax: plots.forest(self, ax=ax), figsize=(7, height), dpi=dpi)

    def to_html(self, *, plot: bool = True) -> str:
        """Self-contained HTML: style, header, table, overall rates, checks, warnings, plot.

        The header names the bayeseval version, the date, the data, the metric, the
        level and the engine. The strata table is grouped raw | pooled | checks and
        scrolls sideways inside the page when the page is narrower than the table
        (the stratum column stays in view); each column's header shows, when the pointer
        rests on it, what the column holds (what ``lower`` and ``upper`` promise under the
        report's ``guarantee``). The forest plot (a base64 PNG) is
        embedded when ``plot`` is true and there are at most 60 strata. User text
        (stratum names, metric label, warnings) is HTML-escaped.

        Parameters
        ----------
        plot : bool, default True
            Embed the forest plot.

        Returns
        -------
        str
            An HTML fragment (one ``div``) with its styles inline.

        Examples
        --------
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"]), random_seed=0)
        >>> text = rep.to_html(plot=False)
        >>> "overflow-x:auto" in text, "colspan='7'>estimate</th>" in text
        (True, True)
        """
        esc = html.escape
        head = self._header()
        parts = [
            "<div class='bayeseval-report'>",
            f"<style>{REPORT_CSS}</style>",
            f"<h3>{esc(head[0])}</h3>",
            "<ul class='bv-meta'>"
            + "".join(f"<li><b>{esc(k)}</b> {esc(v)}</li>" for k, v in self._provenance())
            + "</ul>",
            "<p>" + "<br>".join(esc(h) for h in head[2:]) + "</p>",
            self._html_strata(),
            self._html_overall(),
            self._html_findings(),
        ]
        if plot and len(self.table) > _MAX_PLOT_STRATA:
            parts.append(
                f"<p>(forest plot omitted: {len(self.table)} strata are more than "
                f"{_MAX_PLOT_STRATA} rows can show; plot a subset with bayeseval.plots.forest)</p>"
            )
        elif plot:
            png = base64.b64encode(self.forest_png()).decode("ascii")
            parts.append(f"<img alt='forest plot of the strata' src='data:image/png;base64,{png}'/>")
        if self.audit is not None:
            parts.append(_html_audit(self.audit, plot))
        parts.append("</div>")
        return "\n".join(parts)

    def _html_strata(self) -> str:
        """The strata table, its columns grouped raw | pooled | checks, in a scrolling box."""
        esc = html.escape
        t = self._display_table()
        starts = {cols_present[0] for cols_present in
                  ([c for c in cols if c in t.columns] for _, cols in _COLUMN_GROUPS) if cols_present}
        groups = ["<th rowspan='2'>stratum</th>"]
        for name, cols in _COLUMN_GROUPS:
            k = sum(c in t.columns for c in cols)
            if k:
                groups.append(f"<th class='g gs' colspan='{k}'>{name}</th>")
        names = "".join(
            f"<th{' class=gs' if c in starts else ' class=f' if c == 'flags' else ''} "
            f"title='{esc(_column_doc(c, self.guarantee))}'>"
            f"{esc(c).replace('_', '_<wbr>')}</th>" for c in t.columns
        )
        reasons = (self.table["read_reason"].tolist() if "read_reason" in self.table.columns
                   else [None] * len(t))
        rows = []
        for (key, row), why in zip(t.iterrows(), reasons, strict=True):
            cls = " class='flag'" if row.get("flags") else ""
            cells = "".join(
                f"<td class='{'f' if c == 'flags' else ''}{' gs' if c in starts else ''}'"
                f"{_read_cell_title(c, why)}>{_read_cell_text(c, row, self._fmt(c, row[c]))}</td>"
                for c in t.columns
            )
            rows.append(f"<tr{cls}><td class='s'>{esc(str(key))}</td>{cells}</tr>")
        return (
            "<div class='bv-scroll'><table class='bv-strata'><thead><tr>" + "".join(groups)
            + f"</tr><tr>{names}</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
        )

    def _html_overall(self) -> str:
        esc = html.escape
        rows = []
        for est, row in self.overall.iterrows():
            mark = " (population estimate)" if est == "reweighted" else ""
            rows.append(
                f"<tr><td class='s'>{esc(str(est))}{mark}</td><td>{row['estimate']:.4f}</td>"
                f"<td>{row['lower']:.4f}</td><td>{row['upper']:.4f}</td></tr>"
            )
        return (
            "<b>Overall rate</b><div class='bv-scroll'><table><thead><tr><th>estimand</th>"
            "<th>estimate</th><th>lower</th><th>upper</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>"
        )

    def _html_findings(self) -> str:
        esc = html.escape
        parts = []
        if len(self.checks):
            parts.append("<b>Model checks</b><ul>")
            for name, row in self.checks.iterrows():
                p = "" if pd.isna(row["p_value"]) else f" (p = {row['p_value']:.3f})"
                parts.append(f"<li>{esc(str(name))}: {esc(str(row['verdict']))}{p}</li>")
            parts.append("</ul>")
        if self.notes:
            parts.append("<b>Notes</b><ul>" + "".join(f"<li>{esc(n)}</li>" for n in self.notes) + "</ul>")
        if self.warnings:
            parts.append(
                "<b class='warn'>Warnings</b><ul class='warn'>"
                + "".join(f"<li>{esc(w)}</li>" for w in self.warnings)
                + "</ul>"
            )
        else:
            parts.append("<p>No warnings.</p>")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        return self.to_html(plot=True)

    def save(self, path: str | PathLike[str], *, plot: bool = True) -> Path:
        """Write the report to ``path``; the suffix chooses the format.

        ``.html``/``.htm``: a styled, self-contained page (:meth:`to_html`).
        ``.md``/``.markdown``: :meth:`to_markdown`. ``.json``: :meth:`to_dict`.
        ``.csv``: the strata table (:meth:`to_frame`); a text cell starting with ``=``,
        ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` so that no
        spreadsheet runs it as a formula (numbers stay numbers). ``.xlsx``: sheets
        ``strata``, ``overall``, ``checks`` and ``findings`` (needs the openpyxl or
        XlsxWriter package), every text cell stored as text (a stratum named
        ``=HYPERLINK(...)`` reads exactly so, never as a formula). ``.tex``: LaTeX ``tabular`` environments of the strata table and
        the overall rates (plain LaTeX, no extra packages), text escaped.

        Parameters
        ----------
        path : str or PathLike
            The file to write; its suffix chooses the format.
        plot : bool, default True
            Embed the forest plot (HTML only).

        Returns
        -------
        pathlib.Path
            The path written.

        Raises
        ------
        ValueError
            For another suffix, or ``.xlsx`` when no Excel engine is installed (the
            message names the engines it looked for).

        Examples
        --------
        >>> import tempfile, pandas as pd
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"]), random_seed=0)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     pd.read_csv(rep.save(f"{d}/r.csv"))["successes"].tolist()
        [3, 5]
        """
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix not in _WRITERS:
            raise ValueError(
                f"path must end in {', '.join(sorted(_WRITERS))}, got {str(path)!r}"
            )
        if suffix == ".xlsx":
            _write_xlsx(self, p)
            return p
        p.write_text(_WRITERS[suffix](self, plot), encoding="utf-8")
        return p

    def to_latex(self) -> str:
        r"""The strata table and the overall rates as LaTeX ``tabular`` environments.

        Plain LaTeX (``\hline`` rules, no packages needed); every cell is escaped
        (``& % $ # _ { } ~ ^ \`` and line breaks), so stratum names print as text.

        Returns
        -------
        str
            A LaTeX fragment to ``\input`` into a document.

        Examples
        --------
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a_1", "b"]), random_seed=0)
        >>> [ln for ln in rep.to_latex().splitlines() if ln.startswith("a")][0][:15]
        'a\\_1 & 3 & 40 &'
        """
        t = self._display_table()
        cols = ["stratum"] + list(t.columns)
        lines = [f"% {tex_escape(self._header()[0])}",
                 f"% {tex_escape(self._header()[1])}",
                 "\\begin{tabular}{l" + "r" * (len(cols) - 2) + "l}", "\\hline",
                 " & ".join(tex_escape(c) for c in cols) + " \\\\", "\\hline"]
        for key, row in t.iterrows():
            cells = [str(key)] + [self._fmt(c, row[c]) for c in t.columns]
            lines.append(" & ".join(tex_escape(c) for c in cells) + " \\\\")
        lines += ["\\hline", "\\end{tabular}", "",
                  "\\begin{tabular}{lrrr}", "\\hline", "estimand & estimate & lower & upper \\\\",
                  "\\hline"]
        for est, row in self.overall.iterrows():
            vals = [f"{row[c]:.4f}" if np.isfinite(row[c]) else "" for c in ("estimate", "lower", "upper")]
            lines.append(" & ".join([tex_escape(str(est))] + vals) + " \\\\")
        lines += ["\\hline", "\\end{tabular}"]
        return "\n".join(lines) + "\n"

    def plot(self, kind: str = "forest", ax: Any = None, **kwargs: Any) -> Any:
        """Plot the report (``kind="forest"`` or ``"ppc"``).

        Parameters
        ----------
        kind : {"forest", "ppc"}, default "forest"
            Forest plot of the strata, or the pooled model's predictive check.
        ax : matplotlib.axes.Axes, optional
            Axes to draw on (default: a new figure).
        **kwargs
            Passed to :func:`bayeseval.plots.forest` or :func:`bayeseval.plots.ppc`.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on (see :func:`bayeseval.plots.plot`).
        """
        return plots.plot(self, ax=ax, kind=kind, **kwargs)


def _read_cell_title(col: str, reason: Any) -> str:
    """The ``read`` cell's tooltip: why the stratum reads that interval."""
    if col != "read" or not isinstance(reason, str):
        return ""
    return f" title='{html.escape(reason)}'"


def _read_cell_text(col: str, row: Any, text: str) -> str:
    """A cell's escaped text; the interval read is bold where it is the adaptive one."""
    if col in ("read", "lower", "upper") and row.get("read") == "adaptive":
        return f"<b>{html.escape(text)}</b>"
    return html.escape(text)


def _strata(n: int) -> str:
    return f"{n} stratum" if n == 1 else f"{n} strata"


def _label(key: Any) -> str:
    return " | ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _html_document(report: Report, plot: bool) -> str:
    title = report.title or f"bayeseval report: {report.metric}"
    return page(title, report.to_html(plot=plot))


_WRITERS = {
    ".html": _html_document,
    ".htm": _html_document,
    ".md": lambda report, plot: report.to_markdown(),
    ".markdown": lambda report, plot: report.to_markdown(),
    ".json": lambda report, plot: json.dumps(report.to_dict(), indent=2) + "\n",
    ".csv": lambda report, plot: csv_safe_frame(report.to_frame()).to_csv(index=False),
    ".tex": lambda report, plot: report.to_latex(),
    ".xlsx": None,  # binary: written by _write_xlsx
}

def _write_xlsx(report: Report, path: Path) -> None:
    """Sheets strata, overall, checks and findings (the findings' strata as text labels);
    every text cell is text (:func:`bayeseval._render.spreadsheet.write_xlsx`)."""
    findings = pd.DataFrame(
        [{"flag": f.flag, "strata": ", ".join(_label(k) for k in f.strata), "message": f.message,
          "severity": f.severity} for f in report.findings],
        columns=["flag", "strata", "message", "severity"],
    )
    write_xlsx(path, {
        "strata": report.to_frame(),
        "overall": report.overall.reset_index(),
        "checks": report.checks.reset_index(),
        "findings": findings,
    })


def _fmt_labels(keys: Sequence[Any], limit: int = 6) -> str:
    names = [_label(k) for k in keys]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# -- evaluate: arguments -------------------------------------------------------------------------
_ENGINES = ("exact", "pymc")
_MODELS = ("beta_binomial", "robust", "logit_normal")


@dataclass(frozen=True)
class _Settings:
    """The validated arguments of :func:`evaluate`."""

    metric: Metric | None
    weights: Any
    engine: str
    model: str
    prior: Any
    level: float
    target_halfwidth: float | None
    random_seed: Any
    guarantee: str = "stratum"
    proxy: str | None = None
    inclusion: str | None = None


# the planner (sample_size with method="wilson") searches up to this many trials per stratum
_MAX_PLANNED = 2**40


def _check_target(target_halfwidth: Any, level: float) -> float | None:
    if target_halfwidth is None:
        return None
    if isinstance(target_halfwidth, bool) or not isinstance(target_halfwidth, Real):
        raise TypeError(f"target_halfwidth must be a number, got {target_halfwidth!r}")
    value = float(target_halfwidth)
    if not 0 < value < 0.5:
        raise ValueError(f"target_halfwidth must be in (0, 0.5), got {target_halfwidth!r}")
    # the most trials any stratum can need is at rate 0.5, at most z^2 / (4 e^2) (Wilson needs
    # z^2 fewer); refuse a target whose extra labels the planner cannot count
    root_n = float(norm.ppf((1 + level) / 2)) / (2 * value)  # sqrt of the trials needed
    if root_n > math.sqrt(_MAX_PLANNED):
        raise ValueError(
            f"target_halfwidth {target_halfwidth!r} is too small: a stratum near rate 0.5 would "
            f"need about {root_n:.3g}**2 labels, more than 2**40"
        )
    return value


def _check_weights_values(weights: Any) -> Any:
    """Check population shares before the strata are known (matching comes later)."""
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)) or not isinstance(
        weights, (Mapping, pd.Series, Sequence, np.ndarray)
    ):
        raise TypeError(
            "weights must be a mapping stratum -> population share, a Series or a sequence, "
            f"got {weights!r}"
        )
    check_weights(dict(weights) if isinstance(weights, Mapping) else weights, len(weights))
    return weights


def _check_proxy_arguments(data: Any, proxy: Any, inclusion: Any) -> None:
    for name, value in (("proxy", proxy), ("inclusion", inclusion)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str) or None, got {value!r}")
    if inclusion is not None and proxy is None:
        raise TypeError(f"inclusion applies to the labelled rows of a proxy design: give proxy too, "
                        f"got inclusion={inclusion!r} and proxy=None")
    if proxy is not None and isinstance(data, Counts):
        raise TypeError(f"proxy={proxy!r} needs one row per example; data is a Counts")


def _check_row_arguments(data: Any, y_true: Any, y_pred: Any, strata: Any, pos_label: Any) -> None:
    if isinstance(data, Counts):
        given = {"y_true": y_true, "y_pred": y_pred, "strata": strata, "pos_label": pos_label}
        extra = {k: v for k, v in given.items() if v is not None}
        if extra:
            raise TypeError(
                "data is a Counts (already tabulated): y_true, y_pred, strata and pos_label "
                f"apply to rows only, got {extra!r}"
            )
        return
    if y_true is None or y_pred is None:
        raise TypeError(
            "y_true and y_pred (column names) are required unless data is a Counts, "
            f"got y_true={y_true!r}, y_pred={y_pred!r}"
        )
    if strata is not None and not isinstance(strata, (str, Sequence)):
        raise TypeError(f"strata must be a column name or a list of column names, got {strata!r}")


def _check_arguments(
    data: Any, y_true: Any, y_pred: Any, strata: Any, pos_label: Any, **kw: Any
) -> _Settings:
    """Validate every argument of :func:`evaluate` before any work is done."""
    _check_row_arguments(data, y_true, y_pred, strata, pos_label)
    _check_proxy_arguments(data, kw["proxy"], kw["inclusion"])
    engine = check_method(kw["engine"], _ENGINES, "engine")
    model = check_method(kw["model"], _MODELS, "model")
    if model == "logit_normal" and engine != "pymc":
        raise ValueError(
            f"model {kw['model']!r} needs engine='pymc'; engine {kw['engine']!r} fits "
            "'beta_binomial' and 'robust'"
        )
    resolve_prior(kw["prior"])
    level = check_level(kw["level"])
    metric = kw["metric"]
    return _Settings(
        metric=None if metric is None else get_metric(metric),
        weights=_check_weights_values(kw["weights"]),
        engine=engine,
        model=model,
        prior=kw["prior"],
        level=level,
        target_halfwidth=_check_target(kw["target_halfwidth"], level),
        random_seed=check_random_seed(kw["random_seed"]),
        guarantee=check_method(kw["guarantee"], GUARANTEES, "guarantee"),
        proxy=kw["proxy"],
        inclusion=kw["inclusion"],
    )


# -- evaluate: sections that return data ---------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Finding(Result):
    """One thing :func:`evaluate` found, as data: a short flag, the strata and a message.

    Rendering (text, HTML, Markdown) only formats findings; the report's
    ``warnings`` and ``notes`` are the messages of its findings.

    Parameters
    ----------
    flag : str
        Short tag, e.g. ``"empty"``, ``"rate 0"``, ``"too wide"``, ``"model check"``,
        ``"composition"``. A finding about strata adds its flag to their ``flags`` cell.
    strata : tuple
        The strata it concerns; empty for a finding about the whole evaluation.
    message : str
        The plain-English sentence shown to the reader.
    severity : {"warning", "note"}
        Warnings call for attention; notes explain how to read the numbers.

    Examples
    --------
    >>> from bayeseval import Counts
    >>> rep = evaluate(Counts.from_arrays([0, 5], [40, 50], strata=["a", "b"]), random_seed=0)
    >>> ("rate 0", ("a",)) in [(f.flag, f.strata) for f in rep.findings]
    True
    """

    flag: str
    strata: tuple[Any, ...]
    message: str
    severity: str = "warning"

    @property
    def table(self) -> pd.DataFrame:
        """The finding as a tidy table: one row per stratum it concerns (one row if none).

        Returns
        -------
        pandas.DataFrame
            Columns ``flag``, ``stratum`` (None for a finding about the whole evaluation),
            ``message`` and ``severity``.
        """
        strata = list(self.strata) or [None]
        return pd.DataFrame(
            {"flag": self.flag, "stratum": strata, "message": self.message, "severity": self.severity}
        )


@dataclass
class _Pooled:
    """The pooled model's section: posterior, its summary and the model-check results."""

    post: Any = None
    summary: pd.DataFrame | None = None
    ppc_p: np.ndarray | None = None
    flagged: np.ndarray | None = None
    checks: pd.DataFrame = field(default_factory=lambda: _empty_checks())
    findings: list[Finding] = field(default_factory=list)


def _empty_checks() -> pd.DataFrame:
    checks = pd.DataFrame(
        {"statistic": pd.Series(dtype=str), "p_value": pd.Series(dtype=float),
         "verdict": pd.Series(dtype=str)}
    )
    checks.index.name = "check"
    return checks


@dataclass(frozen=True)
class _Proxy:
    """A report's proxy part: the counts per stratum and cell, and each stratum's interval."""

    counts: ProxyCounts
    table: pd.DataFrame  # ProxyCI.table: estimate, lower, upper, labelled, trials, ...

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.table["lower"].to_numpy(float), self.table["upper"].to_numpy(float)


def _count_proxy(data: Any, cfg: _Settings, y_true: Any, y_pred: Any, strata: Any, pos_label: Any
                 ) -> tuple[Counts, str, _Proxy]:
    """Rows with a proxy -> effective Counts (the pooled model's input) and the proxy part."""
    metric = cfg.metric if cfg.metric is not None else get_metric("error_rate")
    pc = tabulate(data, y_true=y_true, y_pred=y_pred, strata=strata, metric=metric,
                  pos_label=pos_label, proxy=cfg.proxy, inclusion=cfg.inclusion)
    table = proxy_ci(pc, level=cfg.level, method="clopper_pearson").table
    s, n = effective_counts(table)
    counts = Counts(pd.Series(s, index=table.index), pd.Series(n, index=table.index),
                    metric=metric.name, weights=cfg.weights)
    return counts, metric.name, _Proxy(pc, table)


def _count(data: Any, cfg: _Settings, y_true: Any, y_pred: Any, strata: Any, pos_label: Any
           ) -> tuple[Counts, str]:
    """Rows (or ready Counts) -> Counts and the metric's name."""
    if isinstance(data, Counts):
        counts = data if cfg.weights is None else data.with_weights(cfg.weights)
        name = counts.metric or (cfg.metric.name if cfg.metric is not None else "rate")
        return counts, name
    metric = cfg.metric if cfg.metric is not None else get_metric("error_rate")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        counts = tabulate(
            data, y_true=y_true, y_pred=y_pred, strata=strata, metric=metric,
            pos_label=pos_label, weights=cfg.weights,
        )
    return counts, metric.name


def _counts_table(counts: Counts) -> pd.DataFrame:
    """Counts and raw rates per stratum; the other columns start as NaN."""
    table = pd.DataFrame(index=counts.strata)
    table["successes"] = counts.successes
    table["trials"] = counts.trials
    table["rate"] = counts.rates
    for col in ("lower", "upper", "halfwidth", "pooled_mean", "pooled_lower", "pooled_upper",
                "shrinkage", "ppc_p", "extra_needed"):
        table[col] = np.nan
    table["read"] = table["read_reason"] = pd.Series(np.nan, index=table.index, dtype=object)
    table["sample_share"] = counts.sample_shares.to_numpy()
    table["weight"] = np.nan if counts.weights is None else counts.weights.to_numpy()
    return table


def _exact_bounds(counts: Counts, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval per stratum (NaN without trials)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        lo, hi = proportion_ci(counts.successes, counts.trials, level=level,
                               method="clopper_pearson")
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def _interval_section(counts: Counts, table: pd.DataFrame, pooled: _Pooled, cfg: _Settings,
                      proxy: _Proxy | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fill ``lower``, ``upper`` and ``halfwidth`` under the guarantee; return the stratum's
    exact interval that the checks compare the pooled one with.

    ``"stratum"``: the adaptive interval, or Clopper-Pearson without two strata with trials
    (both exact for the stratum). ``"average"``: the interval the read rule points to
    (strata the model check flags read the adaptive one), or Clopper-Pearson without a
    pooled model; the checks then use Clopper-Pearson. With a proxy the stratum's own
    interval is its proxy interval: ``"stratum"`` gives it, and under ``"average"`` it
    replaces the adaptive interval where the read rule points away from the pooled one.
    """
    if proxy is not None:
        own = proxy.bounds
        if pooled.post is None or cfg.guarantee == "stratum":
            table["lower"], table["upper"] = own
        else:
            lo, hi = pooled.summary["read_lower"].to_numpy(float), pooled.summary["read_upper"].to_numpy(float)
            _read_flagged(counts, table, pooled.flagged, (lo, hi), cfg.level)
            own_rows = (table["read"] == "adaptive").to_numpy()
            table.loc[own_rows, "read"] = "proxy"
            table["lower"] = np.where(own_rows, own[0], lo)
            table["upper"] = np.where(own_rows, own[1], hi)
        table["halfwidth"] = (table["upper"] - table["lower"]) / 2
        return own
    if pooled.post is None:
        own = _exact_bounds(counts, cfg.level)
        table["lower"], table["upper"] = own
    elif cfg.guarantee == "stratum":
        own = adaptive_bounds(counts.successes.to_numpy(), counts.trials.to_numpy(), cfg.level)
        table["lower"], table["upper"] = own
    else:
        lo, hi = pooled.summary["read_lower"].to_numpy(float), pooled.summary["read_upper"].to_numpy(float)
        table["lower"], table["upper"] = _read_flagged(counts, table, pooled.flagged, (lo, hi),
                                                       cfg.level)
        own = _exact_bounds(counts, cfg.level)
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    return own


def _pooled_section(counts: Counts, cfg: _Settings) -> _Pooled:
    """Fit the pooled model and run its checks, or say why there is nothing to pool."""
    with_trials = int((counts.trials > 0).sum())
    if with_trials == 0:
        return _Pooled(findings=[Finding(
            "no trials", (), "No stratum has any trials: there is nothing to estimate.")])
    if with_trials == 1:
        return _Pooled(findings=[Finding("no pooling", (), (
            "Only one stratum has trials, so there are no other strata to pool it with: the "
            "report gives its raw rate and Clopper-Pearson interval and fits no pooled model (the spread "
            "between strata cannot be estimated from one stratum)."), "note")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayesevalWarning)
        post = fit_hierarchical(
            counts, engine=cfg.engine, model=cfg.model, prior=cfg.prior,
            random_seed=cfg.random_seed,
        )
        summary = post.summary(level=cfg.level, read=cfg.guarantee == "average")
    findings = [
        Finding("sampler", (), f"The pooled model's sampler reported a problem: {w.message}")
        for w in caught if issubclass(w.category, ConvergenceWarning)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        res = posterior_predictive_check(post, random_seed=cfg.random_seed, level=cfg.level)
    table = res.table.reindex(post.strata)
    p = table["p_value"].to_numpy(dtype=float)
    flagged = table["flag"].fillna(False).to_numpy(dtype=bool)
    return _Pooled(post, summary, p, flagged, _checks_table(res, p, flagged, cfg.level),
                   findings)


def _checks_table(res: Any, p: np.ndarray, flagged: np.ndarray, level: float) -> pd.DataFrame:
    """One row per model check: statistic, p-value and verdict."""
    n_flag = int(flagged.sum())
    k_has = int(np.isfinite(p).sum())
    threshold = (1 - level) / max(k_has, 1)
    rows = {
        "ppc_counts": (
            "per-stratum counts (cross-validated mixed predictive check)",
            float(np.nanmin(p)) if np.isfinite(p).any() else np.nan,
            f"ok: no stratum below p = {threshold:.2g} ({1 - level:g} / {_strata(k_has)})"
            if n_flag == 0
            else f"{_strata(n_flag)} extreme under the model (p below {threshold:.2g})",
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


def _overall_section(
    counts: Counts, post: Any, level: float
) -> tuple[pd.DataFrame, Any, list[Finding]]:
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
        findings.append(Finding("unweighted", (), (
            "No population shares were given: the overall rate is unweighted, so it estimates "
            "the rate at the test set's own composition, not necessarily the population's. "
            "Pass weights= to get the population estimate."), "note"))
    else:
        sr, reweighted, more = _reweighted(counts, level)
        rows["reweighted"] = reweighted
        findings += more
        if post is not None:
            draws = np.asarray(post.weighted(counts.weights))
            a = (1 - level) / 2
            rows["posterior_weighted"] = [
                float(draws.mean()), float(np.quantile(draws, a)),
                float(np.quantile(draws, 1 - a)), float(draws.std(ddof=1)),
            ]
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    return overall, sr, findings


def _proxy_overall(counts: Counts, proxy: _Proxy, post: Any, level: float
                   ) -> tuple[pd.DataFrame, Any, list[Finding]]:
    """Overall rate with a proxy: at the pool's composition, and reweighted by ``weights``.

    Both are sums of share x stratum estimate with the MOVER combination of the strata's
    proxy intervals (independent strata); ``se`` is the interval's half-width over z.
    """
    z = float(norm.ppf((1 + level) / 2))
    pool = proxy.table["trials"].to_numpy(float)
    shares = {"unweighted": pool / max(pool.sum(), 1.0)}
    if counts.weights is not None:
        shares["reweighted"] = counts.weights.reindex(proxy.table.index).to_numpy(float)
    rows = {}
    for name, w in shares.items():
        est, lo, hi = weighted_interval(proxy.table, w)
        rows[name] = [est, lo, hi, (hi - lo) / (2 * z)]
    findings = [Finding("proxy overall", (), (
        "With a proxy the unweighted rate is the rate at the pool's composition (every row, "
        "labelled or not): pool share x stratum estimate, summed, with the strata's proxy "
        "intervals combined by MOVER."), "note")]
    if counts.weights is not None and post is not None:
        draws = np.asarray(post.weighted(counts.weights))
        a = (1 - level) / 2
        rows["posterior_weighted"] = [float(draws.mean()), float(np.quantile(draws, a)),
                                      float(np.quantile(draws, 1 - a)), float(draws.std(ddof=1))]
    if counts.weights is not None and not np.isfinite(rows["reweighted"][0]):
        w = counts.weights.reindex(proxy.table.index)
        missing = list(proxy.table.index[((w > 0) & (proxy.table["labelled"] == 0)).to_numpy()])
        findings.append(Finding("no reweighted rate", tuple(missing), (
            f"The reweighted rate is undefined: {_fmt_labels(missing)} "
            f"{'has' if len(missing) == 1 else 'have'} a population share but no labels.")))
    overall = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "lower", "upper", "se"])
    overall.index.name = "estimand"
    return overall, None, findings


def _reweighted(counts: Counts, level: float) -> tuple[Any, list[float], list[Finding]]:
    """The reweighted rate, or why it is undefined (a stratum with a share but no trials)."""
    w = counts.weights
    missing = list(counts.strata[((w > 0) & (counts.trials == 0)).to_numpy()])
    if missing:
        return None, [np.nan] * 4, [Finding("no reweighted rate", tuple(missing), (
            f"The reweighted rate is undefined: {_fmt_labels(missing)} "
            f"{'has' if len(missing) == 1 else 'have'} a population share but no trials."))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        sr = stratified_risk(counts, level=level)
    note = Finding("reweighted", (), (
        "The reweighted rate (population share x stratum rate, summed) is the population "
        "estimate; the unweighted rate is the rate at the test set's own composition."), "note")
    return sr, [sr.estimate, sr.ci[0], sr.ci[1], sr.se], [note]


def _stratum_findings(counts: Counts, own: tuple[np.ndarray, np.ndarray], metric_name: str
                      ) -> list[Finding]:
    """Empty strata and strata at a rate of 0 or 1."""
    has = (counts.trials > 0).to_numpy()
    empty = list(counts.strata[~has])
    out = []
    if empty:
        out.append(Finding("empty", tuple(empty), (
            f"{_strata(len(empty))} {'has' if len(empty) == 1 else 'have'} no trials for "
            f"{metric_name} and no estimate: {_fmt_labels(empty)}.")))
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    edge = has & ((s == 0) | (s == n))
    labels = counts.strata[edge]
    for k, sk, nk, lo, hi in zip(labels, s[edge], n[edge], own[0][edge], own[1][edge], strict=True):
        sk, nk = int(sk), int(nk)
        which = "0" if sk == 0 else "1"
        out.append(Finding(f"rate {which}", (k,), (
            f"Stratum {_label(k)!r} has a rate of {which} ({sk} of {nk}): the plug-in "
            f"standard error is 0, which is not certainty; its exact interval "
            f"[{lo:.3f}, {hi:.3f}] is the honest range.")))
    return out


def _target_section(table: pd.DataFrame, cfg: _Settings) -> tuple[np.ndarray, list[Finding]]:
    """Labels still needed per stratum for the target and a finding per stratum that is too wide.

    The planner is Clopper-Pearson's under ``"stratum"`` (the exact interval the adaptive one
    is measured against), Wilson's under ``"average"``.
    """
    target, level = cfg.target_halfwidth, cfg.level
    plan = "clopper_pearson" if cfg.guarantee == "stratum" else "wilson"
    extra = np.zeros(len(table))
    findings = []
    for i, (k, row) in enumerate(table.iterrows()):
        n = int(row["trials"])
        if n == 0:
            extra[i] = _extra_needed(0.5, 0, target, level, plan)
            continue
        if row["halfwidth"] <= target:
            continue
        extra[i] = _extra_needed(float(row["rate"]), n, target, level, plan)
        more = (
            f"about {int(extra[i])} more labels (at its observed rate {row['rate']:.3f})"
            if extra[i] > 0
            else "more labels (the planning formula at its observed rate says it should "
            "already be close)"
        )
        findings.append(Finding("too wide", (k,), (
            f"Stratum {_label(k)!r} is too small for a half-width of {target:g}: "
            f"{n} trials give {row['halfwidth']:.3f}; it needs {more}.")))
    return extra, findings


def _model_findings(table: pd.DataFrame, own: tuple[np.ndarray, np.ndarray], pooled: _Pooled
                    ) -> list[Finding]:
    """Strata the model checks single out, strong shrinkage, disagreement, failed global checks.

    The pooled interval is compared with ``own``, the stratum's exact interval.
    """
    index = table.index
    lower, upper = own
    out = []
    bad = list(index[pooled.flagged])
    if bad:
        out.append(Finding("model check", tuple(bad), (
            f"The pooled model finds {_strata(len(bad))} extreme under its own predictions: "
            f"{_fmt_labels(bad)}. Their pooled estimates may be pulled too far toward the "
            "others: their lower and upper are the adaptive interval, which keeps its "
            "coverage; or refit with model='robust'.")))
    width_ratio = (table["pooled_upper"] - table["pooled_lower"]).to_numpy() / (upper - lower)
    shrunk = list(index[(table["shrinkage"].to_numpy() >= 0.5) & (width_ratio < 0.5)])
    if shrunk:
        out.append(Finding("strong shrinkage", tuple(shrunk), (
            f"Strata whose pooled estimate leans heavily on the other strata (at least half its "
            f"weight on the population mean, and a credible interval under half the width of "
            f"the stratum's exact interval): {_fmt_labels(shrunk)}. Their credible intervals "
            "borrow certainty from the pooling assumption; the exact interval is what keeps "
            "its coverage for the stratum.")))
    pooled_lo, pooled_hi = table["pooled_lower"].to_numpy(), table["pooled_upper"].to_numpy()
    disagree = list(index[(pooled_hi < lower) | (pooled_lo > upper)])
    if disagree:
        out.append(Finding("estimates disagree", tuple(disagree), (
            f"For {_fmt_labels(disagree)} the pooled estimate and the raw rate disagree: the "
            "credible interval and the stratum's exact interval do not overlap.")))
    checks = pooled.checks
    glob = [c for c in checks.index if c != "ppc_counts"
            and not str(checks.loc[c, "verdict"]).startswith("ok")]
    if glob:
        out.append(Finding("model spread", (), (
            "The pooled model does not reproduce the spread of the stratum rates "
            f"({', '.join(c.removeprefix('ppc_') for c in glob)} check failed); treat the "
            "pooled intervals with care.")))
    return out


def _read_flagged(counts: Counts, table: pd.DataFrame, flagged: np.ndarray,
                  bounds: tuple[np.ndarray, np.ndarray], level: float
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


def _guarantee_findings(table: pd.DataFrame, cfg: _Settings) -> list[Finding]:
    """A note saying what lower and upper promise; under "average", the strata read adaptive."""
    pct = f"{100 * cfg.level:g}%"
    if cfg.proxy is not None:
        return _proxy_guarantee_findings(table, cfg, pct)
    if cfg.guarantee == "stratum":
        return [Finding("guarantee", (), (
            f"Guarantee 'stratum': each stratum's lower and upper cover its own rate at least "
            f"{pct} of the time whatever that rate is (the adaptive interval, built from exact "
            "tests whose tails are split by a prior from the other strata only; "
            "Clopper-Pearson when fewer than two strata have trials). pooled_lower and "
            "pooled_upper, the pooled posterior, cover on average over strata like these, not "
            "for a stratum that differs."), "note")]
    notes = [Finding("guarantee", (), (
        "Guarantee 'average': lower and upper are the interval read for each stratum, the "
        "pooled posterior unless the stratum's count looks atypical of the others (then its "
        "adaptive interval). That covers on average over strata like these, not for a "
        "stratum that differs and happens to look typical: an outlier the conflict check "
        "misses is covered only as often as the check fires. Use guarantee='stratum' for "
        "coverage of every stratum at every rate."), "note")]
    adaptive = list(table.index[(table["read"] == "adaptive").to_numpy()])
    if not adaptive:
        return notes
    # about the evaluation, not the strata: the read column marks them (a flag would mark
    # about one alike stratum in five, by design of the threshold)
    return notes + [Finding("read adaptive", (), (
        f"{_strata(len(adaptive))} {'reads' if len(adaptive) == 1 else 'read'} the adaptive "
        f"interval instead of the pooled one: {_fmt_labels(adaptive)}. "
        f"{'Its count is' if len(adaptive) == 1 else 'Their counts are'} not clearly typical "
        "of what the other strata predict (leave-one-out conflict p-value at most "
        f"{READ_ADAPTIVE_P:g}, or flagged), so pooling may pull "
        f"{'it' if len(adaptive) == 1 else 'them'} too far; the adaptive interval comes from "
        "the stratum's own data and keeps its coverage whatever the other strata say. "
        "lower and upper give it; read_reason in the exported table (to_frame, CSV, JSON) "
        "says why."), "note")]


def _proxy_guarantee_findings(table: pd.DataFrame, cfg: _Settings, pct: str) -> list[Finding]:
    """What lower and upper promise with a proxy, and what the proxy was worth."""
    own = (f"the stratum's proxy interval (post-stratified over the proxy's cells, "
           f"Clopper-Pearson cell limits combined by MOVER; labels only where the proxy does "
           f"not pay), which covers the stratum's own rate at least {pct} of the time whatever "
           "that rate is when the labels are drawn at random within the stratum")
    if cfg.inclusion is not None:
        own = (f"the stratum's proxy interval with inverse-probability weighted cell rates "
               f"(inclusion {cfg.inclusion!r}): an asymptotic interval, exact only when the "
               "probabilities are equal within the stratum")
    if cfg.guarantee == "stratum":
        text = f"Guarantee 'stratum' with proxy {cfg.proxy!r}: lower and upper are {own}."
    else:
        text = (f"Guarantee 'average' with proxy {cfg.proxy!r}: lower and upper are the pooled "
                "posterior, fitted to each stratum's effective counts, unless the stratum's count "
                f"looks atypical of the others (read 'proxy': then {own}). The pooled interval "
                "covers on average over strata like these, not for a stratum that differs.")
    used = int(table["proxy_used"].sum())
    return [Finding("guarantee", (), text, "note"), Finding("proxy", (), (
        f"The proxy narrows the interval of {used} of {_strata(len(table))} (proxy_used); "
        "effective_labels is what a stratum's labels are worth with it, agreement how often a "
        "label proxy's verdict matches the truth on the labelled rows."), "note")]


def _composition_findings(counts: Counts, overall: pd.DataFrame, shares: pd.Series | None = None
                          ) -> list[Finding]:
    """The test set's composition (``shares``; default the counts' sample shares) against the
    population shares."""
    if counts.weights is None or int(counts.trials.sum()) == 0:
        return []
    share, w = (counts.sample_shares if shares is None else shares), counts.weights
    ratio = np.where(w > 0, share / w.where(w > 0, np.nan), np.inf)
    off = (np.abs(share - w) > _SHARE_TOL) | (ratio > _SHARE_RATIO) | (ratio < 1 / _SHARE_RATIO)
    if not bool(np.asarray(off).any()):
        return []
    worst = (share - w).abs().idxmax()
    un = overall.loc["unweighted", "estimate"]
    re = overall.loc["reweighted", "estimate"] if "reweighted" in overall.index else np.nan
    use = (f"use the reweighted rate ({re:.4f})." if np.isfinite(re)
           else "the reweighted rate is undefined here (see above).")
    return [Finding("composition", (), (
        "The test set's composition differs from the population "
        f"(e.g. {_label(worst)!r}: {share.loc[worst]:.1%} of the test set, "
        f"{w.loc[worst]:.1%} of the population), so the unweighted rate "
        f"({un:.4f}) is not a population estimate; {use}"))]


_TABLE_FLAGS = ("empty", "rate 0", "rate 1", "too wide", "model check", "strong shrinkage",
                "estimates disagree")


def _flags(index: pd.Index, findings: Sequence[Finding]) -> list[str]:
    """The ``flags`` cell of every stratum, from the findings about strata."""
    flags: dict[Any, list[str]] = {k: [] for k in index}
    for f in sorted(findings, key=lambda f: _TABLE_FLAGS.index(f.flag) if f.flag in _TABLE_FLAGS
                    else len(_TABLE_FLAGS)):
        if f.flag in _TABLE_FLAGS:
            for k in f.strata:
                flags[k].append(f.flag)
    return [", ".join(flags[k]) for k in index]


def _extra_needed(rate: float, trials: int, target: float, level: float, method: str) -> float:
    r = min(max(rate, 0.0), 1.0)
    need = sample_size(halfwidth=target, rate=r, level=level, method=method)
    return float(max(0, int(need) - int(trials)))


def evaluate(
    data: pd.DataFrame | Counts | Any,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    weights: Mapping[Hashable, float] | pd.Series | Sequence[float] | None = None,
    engine: str = "exact",
    level: float = 0.95,
    target_halfwidth: float | None = None,
    pos_label: Any = None,
    random_seed: int | None = None,
    model: str = "beta_binomial",
    prior: Any = "default",
    source: str | None = None,
    groups: str | Sequence[str] | None = None,
    tolerance: float | None = None,
    min_trials: int | None = None,
    guarantee: str = "stratum",
    proxy: str | None = None,
    inclusion: str | None = None,
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
    engine : {"exact", "pymc"}, default "exact"
        Engine of the pooled hierarchical model (:func:`~bayeseval.fit_hierarchical`).
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
    model : {"beta_binomial", "robust", "logit_normal"}, default "beta_binomial"
        Pooled model (see :func:`~bayeseval.fit_hierarchical`); ``"robust"`` lets
        outlying strata stand apart; ``"logit_normal"`` needs ``engine="pymc"``.
    prior : {"default", "bda"}, dict or Prior, default "default"
        Prior of the pooled model (see :func:`bayeseval.models.priors.resolve_prior`).
    source : str, optional
        How the report's header names the data (default: the file path when ``data``
        is one, otherwise the kind of object and its size, e.g. ``"pandas DataFrame
        (1,000 rows)"``).
    groups : str or list of str, optional
        Group column(s) of a fairness audit (:func:`bayeseval.fairness` on the same rows,
        with the criteria's metrics ``selection_rate``, ``tpr``, ``fpr`` and ``ppv``, the
        report's ``level``, ``pos_label`` and ``random_seed``, and the audit's default
        pooled model): the report gains the "Fairness audit" section (verdicts,
        disparities, groups table, forest plot), ``Report.audit``, and findings for
        criteria decided outside the tolerance (warnings) or undecided (notes). The audit
        takes the report's ``guarantee``, ``proxy`` and ``inclusion``; with a proxy its
        metrics are ``selection_rate`` and ``ppv`` (TPR and FPR count trials by the true
        label, unknown on unlabelled rows).
    tolerance : float, optional
        Largest acceptable max-min gap of the audit, in (0, 1); needs ``groups``.
    min_trials : int, optional
        The audit's ``min_trials``: groups with fewer trials are reported but left out of
        the max-min gap and the verdicts; needs ``groups``.
    guarantee : {"stratum", "average"}, default "stratum"
        What the table's ``lower`` and ``upper`` promise (see Notes). ``"stratum"``:
        coverage at least ``level`` for each stratum at every value of its own rate,
        by construction (the adaptive interval). ``"average"``: the pooled interval,
        or the adaptive one where the stratum's count looks atypical (the ``read``
        rule), for users who accept coverage on average over strata in exchange for
        narrower intervals.
    proxy : str, optional
        A column known on every row: a cheap label of the same kind as ``y_true`` (a
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
    inclusion : str, optional
        With ``proxy``: the column of each labelled row's inclusion probability, for labels
        not drawn at random within the strata (see :func:`~bayeseval.proxy_ci`; the
        interval is then asymptotic).

    Returns
    -------
    Report
        With the findings as data (:class:`Finding`) and their messages in
        ``warnings`` and ``notes``.

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
    cfg = _check_arguments(
        data, y_true, y_pred, strata, pos_label, metric=metric, weights=weights, engine=engine,
        model=model, prior=prior, level=level, target_halfwidth=target_halfwidth,
        random_seed=random_seed, guarantee=guarantee, proxy=proxy, inclusion=inclusion,
    )
    if source is not None and not isinstance(source, str):
        raise TypeError(f"source must be a string or None, got {source!r}")
    audit_groups = _check_groups(data, groups, {"tolerance": tolerance, "min_trials": min_trials})
    part = None
    if proxy is None:
        counts, metric_name = _count(data, cfg, y_true, y_pred, strata, pos_label)
    else:
        counts, metric_name, part = _count_proxy(data, cfg, y_true, y_pred, strata, pos_label)
    if isinstance(metric, str) and not isinstance(data, Counts):
        metric_name = metric.strip()  # echoed as written: "tpr" stays "tpr" (it counts recall)
    report = _build_report(counts, metric_name, cfg, part)
    if audit_groups is not None:
        report.audit, found = _audit_section(
            data, audit_groups, {"tolerance": tolerance, "min_trials": min_trials},
            y_true, y_pred, pos_label, cfg,
        )
        report.findings += found
        report.warnings += [f.message for f in found if f.severity == "warning"]
        report.notes += [f.message for f in found if f.severity == "note"]
    report.source = _describe_source(data) if source is None else source
    report.created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return report


def _describe_source(data: Any) -> str:
    """How the header names the data: a path, or the kind of object and its size."""
    if isinstance(data, (str, PathLike)):
        return str(data)
    if isinstance(data, Counts):
        return f"Counts ({_strata(len(data))})"
    if isinstance(data, pd.DataFrame):
        return f"pandas DataFrame ({len(data):,} rows)"
    kind = type(data)
    return f"{kind.__module__.split('.')[0]} {kind.__name__}"


def _proxy_columns(table: pd.DataFrame, proxy: _Proxy) -> tuple[Counts, pd.Series]:
    """With a proxy: the labelled counts, the estimate as rate, the pool's shares and the
    proxy's columns in ``table``; return the labelled Counts and the pool shares."""
    pc = proxy.counts.table
    levels = [n for n in pc.index.names if n != "cell"]
    by = pc.groupby(level=levels if len(levels) > 1 else levels[0], sort=False)[["successes", "labelled"]].sum()
    by = by.reindex(table.index).fillna(0).astype(np.int64)
    t = proxy.table
    table["successes"], table["trials"] = by["successes"].to_numpy(), by["labelled"].to_numpy()
    table["rate"] = t["estimate"].to_numpy(float)
    pool = t["trials"].to_numpy(float)
    shares = pd.Series(pool / max(pool.sum(), 1.0), index=table.index, name="sample_share")
    table["sample_share"] = shares.to_numpy()
    table["pool_trials"] = t["trials"].to_numpy(np.int64)
    table["proxy_used"] = t["proxy_used"].to_numpy(bool)
    table["agreement"] = t["agreement"].to_numpy(float)
    table["effective_labels"] = t["effective_labels"].to_numpy(float)
    labelled = Counts(by["successes"], by["labelled"], metric=proxy.counts.metric)
    return labelled, shares


def _proxy_target(table: pd.DataFrame, counts: Counts, cfg: _Settings) -> tuple[np.ndarray, list[Finding]]:
    """Labels still needed with a proxy: the planner's need (Clopper-Pearson) in effective
    labels, converted to labels at the stratum's current effective labels per label."""
    target, level = cfg.target_halfwidth, cfg.level
    labelled, n_eff = table["trials"].to_numpy(float), counts.trials.to_numpy(float)
    extra = np.zeros(len(table))
    findings = []
    for i, (k, row) in enumerate(table.iterrows()):
        if labelled[i] == 0:
            extra[i] = _extra_needed(0.5, 0, target, level, "clopper_pearson")
            continue
        if row["halfwidth"] <= target:
            continue
        per_label = max(n_eff[i] / labelled[i], 1.0)
        rate = float(row["rate"])
        extra[i] = math.ceil(_extra_needed(rate, int(n_eff[i]), target, level, "clopper_pearson") / per_label)
        findings.append(Finding("too wide", (k,), (
            f"Stratum {_label(k)!r} is too small for a half-width of {target:g}: {int(labelled[i])} "
            f"labels with the proxy (worth {n_eff[i]:.0f}) give {row['halfwidth']:.3f}; it needs "
            f"about {int(extra[i])} more labels (at its estimated rate {rate:.3f} and "
            f"{per_label:.2f} effective labels per label).")))
    return extra, findings


def _build_report(counts: Counts, metric_name: str, cfg: _Settings, proxy: _Proxy | None = None) -> Report:
    """Run every section of :func:`evaluate` on ``counts`` and gather their data in a Report."""
    table = _counts_table(counts)
    labelled, shares = (counts, None) if proxy is None else _proxy_columns(table, proxy)
    pooled = _pooled_section(counts, cfg)
    if pooled.post is not None:
        for col, src in (("pooled_mean", "mean"), ("pooled_lower", "lower"),
                         ("pooled_upper", "upper"), ("read", "read"), ("read_reason", "read_reason")):
            if src in pooled.summary.columns:  # read, read_reason: "average" only
                table[col] = pooled.summary[src].to_numpy()
        table["shrinkage"] = pooled.post.shrinkage().to_numpy()
        table["ppc_p"] = pooled.ppc_p
    own = _interval_section(counts, table, pooled, cfg, proxy)
    overall, sr, overall_findings = (_overall_section(counts, pooled.post, cfg.level) if proxy is None
                                     else _proxy_overall(counts, proxy, pooled.post, cfg.level))
    findings = pooled.findings + _stratum_findings(labelled, own, metric_name)
    if cfg.target_halfwidth is not None:
        table["extra_needed"], wide = (_target_section(table, cfg) if proxy is None
                                       else _proxy_target(table, counts, cfg))
        findings += wide
    if pooled.post is not None:
        findings += _model_findings(table, own, pooled)
    findings += _guarantee_findings(table, cfg)
    findings += [f for f in overall_findings if f.severity == "warning"]
    findings += _composition_findings(counts, overall, shares)
    findings += [f for f in overall_findings if f.severity == "note"]
    table["flags"] = _flags(counts.strata, findings)
    columns = [c for c in _TABLE_COLUMNS if cfg.guarantee == "average" or c not in _AVERAGE_ONLY]
    if proxy is not None:
        at = columns.index("rate") + 1
        columns[at:at] = list(_PROXY_COLUMNS)
    return Report(
        table=table[columns],
        overall=overall,
        checks=pooled.checks,
        warnings=[f.message for f in findings if f.severity == "warning"],
        notes=[f.message for f in findings if f.severity == "note"],
        metric=metric_name,
        level=cfg.level,
        engine=cfg.engine,
        counts=counts,
        guarantee=cfg.guarantee,
        target_halfwidth=cfg.target_halfwidth,
        posterior=pooled.post,
        stratified=sr,
        findings=findings,
        proxy=None if proxy is None else proxy.counts,
    )


# -- the fairness audit section: data (audit, findings), then rendering ------------------------
#: the metrics of the fairness criteria: the audit section's metrics
_AUDIT_METRICS = ("selection_rate", "tpr", "fpr", "ppv")
# the audit's forest plot is embedded up to this many rows (differences and gaps)
# the audit's groups table starts folded beyond this many rows


def _check_groups(data: Any, groups: Any, options: dict) -> list[str] | None:
    """``groups`` of :func:`evaluate` and the audit's options (the audit checks their values)."""
    if groups is None:
        for name, value in options.items():
            if value is not None:
                raise TypeError(f"{name} applies to the fairness audit: give groups too, got "
                                f"{name}={value!r} and groups=None")
        return None
    if isinstance(data, Counts):
        raise TypeError(f"groups (a fairness audit) needs one row per example; data is a Counts, "
                        f"got groups={groups!r}")
    cols = iter_columns(groups, "groups")
    if not cols:
        raise ValueError(f"groups must name at least one column, got {groups!r}")
    return cols


def _audit_section(data: Any, groups: list[str], options: dict, y_true: str, y_pred: str,
                   pos_label: Any, cfg: _Settings) -> tuple[Any, list[Finding]]:
    """The audit across ``groups`` and its findings (criteria decided outside, undecided)."""
    from bayeseval.fairness.audits import audit  # deferred: the audit loads the crossed engine

    given = {k: v for k, v in options.items() if v is not None}  # None: the audit's default
    metrics = [m for m in _AUDIT_METRICS if cfg.proxy is None or m in ("selection_rate", "ppv")]
    res = audit(data, y_true=y_true, y_pred=y_pred, groups=groups, metrics=metrics,
                level=cfg.level, pos_label=pos_label, random_seed=cfg.random_seed,
                guarantee=cfg.guarantee, proxy=cfg.proxy, inclusion=cfg.inclusion, **given)
    findings = []
    for criterion, rows in res.verdicts.groupby("criterion", sort=False):
        verdict = rows["verdict"].iloc[0]
        gaps = "; ".join(audit_html.gap_text(r) for r in rows.itertuples())
        if verdict == "outside":
            findings.append(Finding("fairness", (), f"Fairness: {criterion} is outside the "
                                    f"tolerance {res.tolerance:g} ({gaps}).", "warning"))
        elif verdict == "undecided":
            findings.append(Finding("fairness", (), f"Fairness: {criterion} is undecided at "
                                    f"tolerance {res.tolerance:g} ({gaps}); the audit section "
                                    "lists the labels each group needs to decide.", "note"))
        elif verdict == "not measured":
            findings.append(Finding("fairness", (), f"Fairness: {criterion} is not measured: fewer "
                                    f"than two groups have {res.min_trials} trials for "
                                    f"{', '.join(rows['metric'])}; it is not within the tolerance "
                                    "either.", "warning"))
    findings += [Finding("fairness", (), f"Fairness audit: {note}", "note") for note in res.notes]
    return res, findings


def _html_audit(res: Any, plot: bool) -> str:
    """The report's "Fairness audit" section (the same rendering as :meth:`Audit.to_html`)."""
    png = plots.disparities_png(res, max_rows=audit_html.MAX_PLOT_ROWS) if plot else None
    return audit_html.section(res, png)
