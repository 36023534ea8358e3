"""The result of an evaluation: :class:`Report`, its conversions and the files it saves.

:func:`bayeseval.evaluate` makes a Report (its pipeline is :mod:`bayeseval.report.pipeline`).
A Report renders as HTML in Jupyter, as text in a terminal (the renderings are
:mod:`bayeseval._render.report_page`), and converts to a tidy DataFrame, an xarray Dataset, a
JSON-ready dict, HTML, Markdown, LaTeX, CSV or Excel files.
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.parse
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import pandas as pd

from bayeseval import plots
from bayeseval._api.docs import fill_doc
from bayeseval._api.results import Result
from bayeseval._api.validation import output_suffix
from bayeseval._api.version import VERSION
from bayeseval._render import audit_html, report_page
from bayeseval._render.formats import json_key, json_value, key_label
from bayeseval._render.html_page import page
from bayeseval._render.spreadsheet import csv_safe_frame, write_xlsx
from bayeseval.counts.counts import Counts, stratum_labels
from bayeseval.counts.metrics import METRICS
from bayeseval.report.findings import Finding

__all__ = ["Report"]


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
        ``guarantee="average"`` only ``read`` (``"pooled"`` or ``"adaptive"``, over sampling units
        ``"units"``: which interval ``lower`` and ``upper`` are) and ``read_reason`` (why, with the
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
    design : str
        The sampling design in words (:meth:`Design.describe <bayeseval.Design.describe>`),
        when :func:`evaluate` was given a ``design`` or ``outcome``; empty otherwise.
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
    >>> from bayeseval import evaluate
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
    design: str = ""
    created: str = ""
    version: str = VERSION
    audit: Any = None
    proxy: Any = None

    @property
    def higher_is_better(self) -> bool | None:
        """Whether a higher rate of :attr:`metric` is better (:attr:`Metric.higher_is_better`).

        Returns
        -------
        bool or None
            True for ``accuracy``-type metrics, False for ``error_rate``-type ones, None for
            ``selection_rate`` and for a metric the registry does not know (a mean outcome, a
            user's metric). The pages list the strata worst first by it.

        Examples
        --------
        >>> from bayeseval import evaluate
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(3, random_seed=0)
        >>> rep = evaluate(counts, random_seed=0)
        >>> rep.metric, rep.higher_is_better
        ('error_rate', False)
        """
        metric = METRICS.get(self.metric)
        return None if metric is None else metric.higher_is_better

    # -- conversions ---------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """The per-stratum table as a tidy DataFrame: one row per stratum, stratum as column(s).

        Returns
        -------
        pandas.DataFrame
            :attr:`table` with the stratum index as column(s).

        Examples
        --------
        >>> from bayeseval import evaluate
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
        >>> from bayeseval import evaluate
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
                ds = ds.assign_coords({str(name or f"level_{i}"): ("stratum", self.table.index.get_level_values(i))})
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
            <bayeseval.fairness.result.Audit.to_dict>`, or None without ``groups``).

        Examples
        --------
        >>> from bayeseval import evaluate
        >>> import json
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(2, random_seed=0)
        >>> d = evaluate(counts, random_seed=0).to_dict()
        >>> sorted(d)[:4], json.loads(json.dumps(d))["metric"]
        (['audit', 'checks', 'created', 'design'], 'error_rate')
        """
        strata = []
        for key, row in self.table.iterrows():
            rec: dict[str, Any] = {"stratum": json_key(key)}
            rec.update({col: json_value(val) for col, val in row.items()})
            strata.append(rec)
        overall = {str(est): {col: json_value(val) for col, val in row.items()} for est, row in self.overall.iterrows()}
        checks = [
            {"check": str(name), **{c: json_value(v) for c, v in row.items()}} for name, row in self.checks.iterrows()
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
                {
                    "flag": f.flag,
                    "strata": [json_key(k) for k in f.strata],
                    "message": f.message,
                    "severity": f.severity,
                }
                for f in self.findings
            ],
            "version": self.version,
            "created": self.created,
            "source": self.source,
            "design": self.design,
            "audit": None if self.audit is None else self.audit.to_dict(),
        }

    # -- rendering (bayeseval._render.report_page) ---------------------------------------------
    def __str__(self) -> str:
        return report_page.text(self)

    def __repr__(self) -> str:
        return (
            f"<Report metric={self.metric!r} strata={len(self.table)} "
            f"trials={int(self.table['trials'].sum())} warnings={len(self.warnings)}>"
        )

    def to_markdown(self) -> str:
        """The report as Markdown: header, per-stratum table, overall rates, checks, warnings.

        Above 200 strata the table holds the 200 to read first (the worst bound first, as on the
        HTML page), after a note with the total and the flags over every stratum; ``str(report)``
        does the same. The full table is :attr:`table` (or ``save("x.csv")``).

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
        >>> from bayeseval import evaluate
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["<b>a|b</b>", "c"]),
        ...                random_seed=0)
        >>> [ln.split(" | ")[0] for ln in rep.to_markdown().splitlines() if ln.startswith("| &")]
        ['| &lt;b&gt;a&#124;b&lt;/b&gt;']
        """
        return report_page.markdown(self)

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
        report's ``guarantee``). The forest plot (a base64 PNG) is embedded when ``plot``
        is true: of every stratum up to 60 strata, else of the 30 that come first in the
        order below, as its caption says. User text (stratum names, metric label,
        warnings) is HTML-escaped.

        Above 200 strata the table shows 200 of them, the ones to read first: for an
        error-type metric (error rate, FPR, FNR) those with the highest upper bound (a
        high rate, or too few trials to rule one out), for an accuracy-type one (accuracy,
        recall, precision, specificity, NPV) those with the lowest lower bound, for
        another metric the widest intervals. A note above it gives the total, the flags
        counted over every stratum and where the full table is; per-stratum warnings are
        listed three of each kind, then how many more. :meth:`save` writes the full table
        beside such a page.

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
        >>> from bayeseval import evaluate
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"]), random_seed=0)
        >>> text = rep.to_html(plot=False)
        >>> "overflow-x:auto" in text, "colspan='7'>estimate</th>" in text
        (True, True)
        """
        return self._html(plot, None)

    def _html(self, plot: bool, full_table: str | None) -> str:
        """:meth:`to_html`, the note of a page of part of the strata linking to ``full_table``."""
        png = self._page_forest_png() if plot else None
        audit = None if self.audit is None else _html_audit(self.audit, plot)
        return report_page.html_fragment(self, plot=plot, png=png, audit=audit, full_table=full_table)

    def _page_forest_png(self) -> bytes:
        """The page's forest plot: every stratum, or the first strata to read when there are too many."""
        if len(self.table) <= report_page.MAX_PLOT_STRATA:
            return self.forest_png()
        rows = report_page.worst_first(self)[0][: report_page.WORST_PLOT_STRATA]
        return dataclasses.replace(self, table=self.table.iloc[rows]).forest_png()

    def _repr_html_(self) -> str:
        return self.to_html(plot=True)

    @fill_doc()
    def save(
        self, path: str | PathLike[str], *, plot: bool = True, table_path: str | PathLike[str] | None = None
    ) -> Path:
        """Write the report to ``path``; the suffix chooses the format.

        ``.html``/``.htm``: a styled, self-contained page (:meth:`to_html`); above 200
        strata the page shows the 200 to read first and the full table is written beside
        it (``table_path``), the page linking to it.
        ``.md``/``.markdown``: :meth:`to_markdown`, likewise showing the 200 strata to read first
        above 200 strata, the full table beside it. ``.json``: :meth:`to_dict`.
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
        table_path : str or PathLike, optional
            HTML and Markdown only, with more than 200 strata: where the full table goes, a ``.csv``
            (as ``save("x.csv")`` writes) or an ``.xlsx`` (as ``save("x.xlsx")``); by
            default ``<name>.strata.csv`` beside ``path`` (``x.strata.csv`` for
            ``x.html``), replaced if it exists. Nothing is written there for a document
            that shows every stratum.

        {path_returned}

        Raises
        ------
        ValueError
            For another suffix, ``.xlsx`` when no Excel engine is installed (the
            message names the engines it looked for), or a ``table_path`` that is not a
            ``.csv`` or ``.xlsx`` file.
        TypeError
            When ``table_path`` is not a path.

        Examples
        --------
        >>> from bayeseval import evaluate
        >>> import tempfile, pandas as pd
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"]), random_seed=0)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     pd.read_csv(rep.save(f"{d}/r.csv"))["successes"].tolist()
        [3, 5]
        """
        p = Path(path)
        suffix = output_suffix(path, sorted(_WRITERS))
        if suffix == ".xlsx":
            _write_xlsx(self, p)
            return p
        if suffix in (".html", ".htm"):
            link = _write_full_table(self, p, table_path)
            title = self.title or f"bayeseval report: {self.metric}"
            p.write_text(page(title, self._html(plot, link)), encoding="utf-8")
            return p
        if suffix in (".md", ".markdown"):
            p.write_text(report_page.markdown(self, _write_full_table(self, p, table_path)), encoding="utf-8")
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
        >>> from bayeseval import evaluate
        >>> from bayeseval import Counts
        >>> rep = evaluate(Counts.from_arrays([3, 5], [40, 50], strata=["a_1", "b"]), random_seed=0)
        >>> [ln for ln in rep.to_latex().splitlines() if ln.startswith("a")][0][:15]
        'a\\_1 & 3 & 40 &'
        """
        return report_page.latex(self)

    @fill_doc()
    def plot(self, kind: str = "forest", ax: Any = None, **kwargs: Any) -> Any:
        """Plot the report (``kind="forest"`` or ``"ppc"``).

        Parameters
        ----------
        kind : {"forest", "ppc"}, default "forest"
            Forest plot of the strata, or the pooled model's predictive check.
        {ax}
        **kwargs
            Passed to :func:`bayeseval.plots.forest` or :func:`bayeseval.plots.ppc`.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on (see :func:`bayeseval.plots.plot`).
        """
        return plots.plot(self, ax=ax, kind=kind, **kwargs)


def _csv_text(report: Report) -> str:
    """The strata table as CSV, text cells made safe for spreadsheets."""
    return csv_safe_frame(report.to_frame()).to_csv(index=False)


def _write_full_table(report: Report, page_path: Path, table_path: str | PathLike[str] | None) -> str | None:
    """Beside a page of part of the strata, the full table (``table_path``, by default
    ``<name>.strata.csv``); the link to it from the page, or None when the page shows every stratum."""
    if table_path is not None and not isinstance(table_path, (str, PathLike)):
        raise TypeError(f"table_path must be a path (str or os.PathLike), got {type(table_path).__name__}")
    target = page_path.with_name(f"{page_path.stem}.strata.csv") if table_path is None else Path(table_path)
    suffix = target.suffix.lower()
    if suffix not in (".csv", ".xlsx"):
        raise ValueError(f"table_path must end in .csv or .xlsx, got {str(table_path)!r}")
    if len(report.table) <= report_page.MAX_TABLE_STRATA:
        return None
    if suffix == ".xlsx":
        _write_xlsx(report, target)
    else:
        target.write_text(_csv_text(report), encoding="utf-8")
    try:
        rel = Path(os.path.relpath(target.resolve(), page_path.resolve().parent)).as_posix()
    except ValueError:  # another drive (Windows): no relative path
        return target.resolve().as_uri()
    return urllib.parse.quote(rel)


_WRITERS = {
    ".html": None,  # a page, and the full table beside it when the page shows part of the strata: save
    ".htm": None,
    ".md": lambda report, plot: report.to_markdown(),
    ".markdown": lambda report, plot: report.to_markdown(),
    ".json": lambda report, plot: json.dumps(report.to_dict(), indent=2) + "\n",
    ".csv": lambda report, plot: _csv_text(report),
    ".tex": lambda report, plot: report.to_latex(),
    ".xlsx": None,  # binary: written by _write_xlsx
}


def _write_xlsx(report: Report, path: Path) -> None:
    """Sheets strata, overall, checks and findings (the findings' strata as text labels);
    every text cell is text (:func:`bayeseval._render.spreadsheet.write_xlsx`)."""
    findings = pd.DataFrame(
        [
            {
                "flag": f.flag,
                "strata": ", ".join(key_label(k) for k in f.strata),
                "message": f.message,
                "severity": f.severity,
            }
            for f in report.findings
        ],
        columns=["flag", "strata", "message", "severity"],
    )
    write_xlsx(
        path,
        {
            "strata": report.to_frame(),
            "overall": report.overall.reset_index(),
            "checks": report.checks.reset_index(),
            "findings": findings,
        },
    )


def _html_audit(res: Any, plot: bool) -> str:
    """The report's "Fairness audit" section (the same rendering as :meth:`Audit.to_html`)."""
    png = plots.disparities_png(res, max_rows=audit_html.MAX_PLOT_ROWS) if plot else None
    return audit_html.section(res, png)
