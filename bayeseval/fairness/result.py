"""The result of a fairness audit: :class:`Audit` (its tables, renderings and files) and the
exit code of ``bayeseval audit``.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._api.results import Result
from bayeseval._api.validation import (
    check_positive_int,
    output_suffix,
)
from bayeseval._api.version import VERSION
from bayeseval._kernels.guarantee import as_guarantee
from bayeseval._render import audit_html, audit_text
from bayeseval._render.formats import md_escape, md_table
from bayeseval._render.html_page import page
from bayeseval._render.spreadsheet import csv_safe_frame, write_xlsx
from bayeseval.fairness.options import MIN_TRIALS
from bayeseval.fairness.verdicts import NOT_MEASURED

__all__ = ["Audit", "exit_code", "AUDIT_SUFFIXES"]


@dataclass(repr=False)
class Audit(Result):
    """Result of :func:`audit`: per-group rates, disparities and verdicts.

    The tables are tidy: each group column of the audit (``columns``) is a column of
    :attr:`groups`, :attr:`disparities` (``reference_<column>`` for the reference group),
    :attr:`verdicts` (``high_<column>`` and ``low_<column>``, the groups with the highest
    and lowest rate in the gap) and :attr:`labels_needed`, holding the group's value as
    in the data (fairlearn's ``MetricFrame`` keeps the same values in a MultiIndex). The
    ``group`` column (``reference``, ``high``, ``low``) is a display label: the values
    joined by ``" | "``, a value that contains ``|`` or ``"``, is empty or has outer
    spaces shown JSON-quoted, so that two groups never share a label. With one group
    column named ``group``, that column is the label column.

    Parameters
    ----------
    groups : pandas.DataFrame
        One row per group x metric: the group columns, ``group``, ``metric``,
        ``successes``, ``trials``, ``rate``, ``lower``/``upper`` (the group's interval
        under ``guarantee``) and ``read`` (which interval that is: ``"adaptive"``,
        ``"proxy"`` or ``"pooled"``), the adaptive interval
        (``adaptive_lower``/``adaptive_upper``), the Wilson
        interval, the pooled estimate and interval, and flags ``empty`` (no trials),
        ``zero_successes`` (0 of n), ``predicted`` (the pooled value is a prediction
        from the other groups, not a measurement), ``conflict`` (the group's count
        conflicts with what the other groups predict: read its own interval, not the
        pooled one), ``in_gap`` (counted in the max-min gap) and ``is_reference`` (the
        metric's reference group). With a proxy, a metric read from labels has
        ``successes``/``trials`` equal to the group's effective counts (what its proxy
        interval is worth), ``rate`` and the adaptive and Wilson columns equal to the proxy
        estimate and interval, and also ``labelled``, ``pool_trials``,
        ``effective_labels``, ``agreement`` and ``proxy_used``.
    disparities : pandas.DataFrame
        One row per metric x group x measure (``difference`` and ``ratio`` to the
        reference group, and one ``max-min gap`` row per metric, whose group columns
        are missing): ``estimate``, ``lower``, ``upper`` (frequentist, ``method`` names
        it), the posterior mean and interval, ``p_exceeds`` (``P(|difference| >
        tolerance)``) and ``predicted`` (a comparison with a group without data: only
        the posterior's prediction exists, and the estimate, interval and ``p_exceeds``
        are ``NaN``).
    verdicts : pandas.DataFrame
        One row per criterion x metric: the gap, its simultaneous interval (level
        Bonferroni-adjusted over the criterion's metrics; ``method``), the metric's own
        verdict, the posterior ``P(max gap > tolerance)``, the criterion's ``verdict``
        (``"outside"``, ``"within tolerance"``, ``"undecided"``, ``"not measured"``
        when fewer than two groups have ``min_trials`` trials, or ``"no tolerance"``),
        the groups at the two ends of the gap, and a ``note`` naming every group outside
        the gap (``"not measured (no trials)"`` for a group with no trials for the metric,
        ``"left out (fewer than N trials)"`` for one under ``min_trials``) and saying so when
        a group with fewer than :data:`MIN_TRIALS` trials sets the gap.
    labels_needed : pandas.DataFrame
        For undecided criteria, per group: the extra trials (and rows) that would let
        the gap interval decide if the rates stay as estimated (planned with
        Clopper-Pearson half-widths at the Bonferroni level, an approximation for
        ``method="max_t"``).
    reference : dict
        The reference group's label per metric.
    level : float
        Confidence level.
    tolerance : float or None
        Largest acceptable gap.
    model : str
        The pooled model behind the ``pooled_*`` columns and the posterior intervals:
        ``"crossed"`` (crossed-factor logit-normal, :func:`bayeseval.fit_crossed`),
        ``"robust"`` or ``"beta_binomial"`` (exchangeable, :func:`bayeseval.fit_hierarchical`).
    min_trials : int
        Groups with fewer trials are reported but left out of the max-min gap and the
        verdicts (``in_gap`` in :attr:`groups`).
    notes : list of str
        Plain-English notes, per metric: every group with no trials (not measured) and
        every group with fewer than ``min_trials`` trials (left out of the gap), by name;
        gaps or references not measured.
    method : str
        The max-min gap interval: ``"max_t"`` or ``"bonferroni"`` (see :func:`audit`).
    columns : list of str
        The group columns.
    guarantee : {"stratum", "average"}
        What the groups table's ``lower`` and ``upper`` promise (see :func:`audit`).
    proxy : str or None
        The proxy column, when the audit read a few labels and a proxy.
    design : str or None
        The sampling design in words when one with a cluster was given
        (:meth:`Design.describe <bayeseval.Design.describe>`), else None.
    units : bool
        Whether the metrics were read from units (some unit holds more than one row, or the
        outcomes are graded): each group's interval is its units' interval, every disparity comes
        from those intervals at the Bonferroni level, and no pooled model is fitted.
    outcome : str or None
        The column of per-row outcomes when :func:`audit` was given ``outcome=``, else None.

    Examples
    --------
    >>> from bayeseval import audit
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 25, "p": [1, 0, 0, 0] * 25,
    ...                    "g": ["a"] * 60 + ["b"] * 40})
    >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr"], random_seed=0)
    >>> res.groups[["g", "rate", "is_reference"]].values.tolist()
    [['a', 0.5, True], ['b', 0.5, False]]
    """

    groups: pd.DataFrame
    disparities: pd.DataFrame
    verdicts: pd.DataFrame
    labels_needed: pd.DataFrame
    reference: dict
    level: float
    tolerance: float | None
    model: str = "robust"
    min_trials: int = MIN_TRIALS
    notes: list[str] = field(default_factory=list)
    method: str = "max_t"
    columns: list[str] = field(default_factory=list)
    guarantee: str = "stratum"
    proxy: str | None = None
    design: str | None = None
    units: bool = False
    outcome: str | None = None

    title = "Fairness audit"

    @property
    def table(self) -> pd.DataFrame:
        """The per-group table (:attr:`groups`)."""
        return self.groups

    @property
    def outside(self) -> bool:
        """Whether any criterion is decided outside the tolerance."""
        return bool((self.verdicts["verdict"] == "outside").any()) if len(self.verdicts) else False

    @property
    def not_measured(self) -> bool:
        """Whether a criterion's gap is not measured (fewer than two groups in the gap)."""
        return bool((self.verdicts["verdict"] == NOT_MEASURED).any()) if len(self.verdicts) else False

    def _repr_html_(self) -> str:
        parts = [f"<p>{html.escape(self.settings)}</p>"]
        parts += [f"<p>Note: {html.escape(n)}</p>" for n in self.notes]
        parts.append(Result._repr_html_(self))
        for title, frame in (("Disparities", self.disparities), ("Verdicts", self.verdicts)):
            parts.append(_Titled(title, frame)._repr_html_())
        return "".join(parts)

    def __repr__(self) -> str:
        return audit_text.summary(self)

    __str__ = __repr__

    def to_text(self, *, width: int = 100) -> str:
        """A summary for a terminal: verdicts, the groups that drive them, notes.

        The summary ``bayeseval audit`` prints; ``print(audit)`` and ``repr(audit)`` give it too.

        Parameters
        ----------
        width : int
            The widest line (at least 40); long group labels wrap onto indented lines.

        Returns
        -------
        str
            The headline, the settings, one entry per criterion and metric (verdict, gap
            and its interval, the highest and lowest group with their rates and trials)
            and the notes. The full tables are :attr:`groups`, :attr:`disparities` and
            :attr:`verdicts`.

        Examples
        --------
        >>> from bayeseval import audit
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 50, "p": [1, 0, 1, 1] * 50,
        ...                    "g": ["a"] * 100 + ["b"] * 100})
        >>> text = audit(df, y_true="y", y_pred="p", groups="g", metrics=["selection_rate"],
        ...              tolerance=0.3, random_seed=0).to_text()
        >>> text.splitlines()[0]
        'Fairness audit of selection_rate over g (2 groups): 1 within tolerance.'
        >>> max(len(line) for line in text.splitlines()) <= 100
        True
        """
        return audit_text.summary(self, width=check_positive_int(width, "width"))

    def to_markdown(self) -> str:
        """The audit as a Markdown document: summary, verdicts, disparities, groups, notes.

        Returns
        -------
        str
            Headings and pipe tables; every text cell escaped (a group value holding ``|``
            or a line break stays in its cell).

        Examples
        --------
        >>> from bayeseval import audit
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 40, "p": [1, 0] * 40, "g": ["a"] * 40 + ["b"] * 40})
        >>> md = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr",
        ...            random_seed=0).to_markdown()
        >>> md.splitlines()[0], "## Groups" in md
        ('# Fairness audit', True)
        """
        out = ["# Fairness audit", "", md_escape(audit_text.headline(self)), "", md_escape(self.settings), ""]
        for title, frame in (
            ("Verdicts", self.verdicts),
            ("Disparities", self.disparities),
            ("Groups", self.groups),
            ("Labels needed", self.labels_needed),
        ):
            if len(frame):
                out += [f"## {title}", ""] + md_table(frame) + [""]
        if self.notes:
            out += ["## Notes", ""] + [f"- {md_escape(n)}" for n in self.notes] + [""]
        return "\n".join(out)

    @fill_doc()
    def save(self, path: str | os.PathLike, *, plot: bool = True) -> Path:
        """Write the audit to ``path``; the suffix chooses the format.

        ``.html``/``.htm``: a self-contained page (:meth:`to_html`, with the forest plot
        inline). ``.md``: :meth:`to_markdown`. ``.json``: :meth:`to_dict`. ``.csv``: the
        per-group table (:meth:`to_frame`), a text cell starting with ``=``, ``+``, ``-``,
        ``@``, a tab or a carriage return prefixed with ``'`` so that no spreadsheet runs
        it. ``.xlsx``: sheets ``verdicts``, ``disparities``, ``groups``, ``labels_needed``
        and ``notes``, every text cell stored as text.

        Parameters
        ----------
        path : str or PathLike
            The file to write.
        plot : bool, default True
            Embed the disparity forest plot (HTML only).

        {path_returned}

        {suffix_refused}

        Examples
        --------
        >>> from bayeseval import audit
        >>> import tempfile, pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 40, "p": [1, 0] * 40, "g": ["a"] * 40 + ["b"] * 40})
        >>> res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", random_seed=0)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     pd.read_csv(res.save(f"{d}/audit.csv"))["trials"].tolist()  # 20 positives each
        [20, 20]
        """
        p = Path(path)
        suffix = output_suffix(path, AUDIT_SUFFIXES)
        if suffix == ".xlsx":
            notes = pd.DataFrame(
                {"note": self.notes, "settings": self.settings} if self.notes else {"note": [], "settings": []}
            )
            write_xlsx(
                p,
                {
                    "verdicts": self.verdicts,
                    "disparities": self.disparities,
                    "groups": self.groups,
                    "labels_needed": self.labels_needed,
                    "notes": notes,
                },
            )
            return p
        if suffix in (".html", ".htm"):
            text = page("Fairness audit", _audit_page_body(self, plot))
        elif suffix == ".md":
            text = self.to_markdown()
        elif suffix == ".json":
            text = json.dumps(self.to_dict(), indent=2) + "\n"
        else:
            text = csv_safe_frame(self.to_frame()).to_csv(index=False)
        p.write_text(text, encoding="utf-8")
        return p

    def to_html(self, *, plot: bool = True) -> str:
        """An HTML section for reports: the verdicts, disparities, groups and the forest plot.

        Parameters
        ----------
        plot : bool
            Embed the disparity forest plot as a PNG (base64).

        Returns
        -------
        str
            A ``<section>`` element; every label is escaped.

        Examples
        --------
        >>> from bayeseval import audit
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["<a>", "b"] * 20})
        >>> html = audit(df, y_true="y", y_pred="p", groups="g", metrics="fpr",
        ...              random_seed=0).to_html(plot=False)
        >>> "&lt;a&gt;" in html and "<a>" not in html
        True
        """
        from bayeseval.plots import disparities_png  # deferred: matplotlib only when drawing

        png = disparities_png(self, max_rows=audit_html.MAX_PLOT_ROWS) if plot else None
        return audit_html.section(self, png, heading="h2")

    @property
    def settings(self) -> str:
        """One sentence: reference groups, level, tolerance, gap method, pooled model, ``min_trials``."""
        tol = "none" if self.tolerance is None else f"{self.tolerance:g}"
        model = _MODEL_TEXT.get(self.model, self.model)
        refs = list(dict.fromkeys(self.reference.values()))
        ref = (
            f"Reference group: {refs[0]}"
            if len(refs) == 1
            else "Reference group per metric: " + ", ".join(f"{m} {r}" for m, r in self.reference.items())
        )
        method = "bonferroni" if self.units else self.method
        if self.units:
            model = "none (rows in units)"
        text = (
            f"{ref}; level {self.level:g}; tolerance {tol}; max-min gap interval: "
            f"{_METHOD_TEXT.get(method, method)}; pooled model: {model}; gap over "
            f"groups with at least {self.min_trials} trials."
        )
        if self.outcome is not None:
            text += f" Outcome column {self.outcome!r}: each row's outcome in [0, 1]; accuracy is its mean."
        if self.design is not None:
            text += f" Sampling design: {self.design}."
        if self.units:
            text += (
                " Each group's interval comes from its units; differences, ratios and the gap from those "
                "intervals at the Bonferroni level."
            )
        if not as_guarantee(self.guarantee).per_stratum:
            text += (
                f" Guarantee {self.guarantee!r}: lower/upper are the pooled interval (the "
                "group's own where its count is atypical)."
            )
        if self.proxy is not None:
            text += (
                f" Proxy {self.proxy!r}: metrics read from labels use each group's proxy "
                "interval, and their gap interval is the projection of Bonferroni-adjusted "
                "proxy intervals."
            )
        return text

    def to_dict(self) -> dict:
        """The audit as plain JSON-ready data.

        Returns
        -------
        dict
            The settings (``reference`` per metric, ``level``, ``tolerance``, ``method``,
            ``model``, ``min_trials``, ``columns``), the notes and the four tables as lists
            of records.

        Examples
        --------
        >>> from bayeseval import audit
        >>> import pandas as pd
        >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 1] * 20, "g": ["a", "b"] * 20})
        >>> sorted(audit(df, y_true="y", y_pred="p", groups="g", metrics="fpr",
        ...              random_seed=0).to_dict())
        ['columns', 'disparities', 'groups', 'labels_needed', 'level', 'method', 'min_trials', 'model', 'notes', 'reference', 'tolerance', 'verdicts']
        """

        def records(frame: pd.DataFrame) -> list:
            return json.loads(frame.to_json(orient="records"))

        return {
            "reference": dict(self.reference),
            "level": self.level,
            "tolerance": self.tolerance,
            "method": self.method,
            "model": self.model,
            "min_trials": self.min_trials,
            "columns": list(self.columns),
            **({"design": self.design, "units": self.units} if self.design is not None else {}),
            **({"outcome": self.outcome, "units": self.units} if self.outcome is not None else {}),
            "notes": list(self.notes),
            "groups": records(self.groups),
            "disparities": records(self.disparities),
            "verdicts": records(self.verdicts),
            "labels_needed": records(self.labels_needed),
        }


#: the file types of :meth:`Audit.save`
AUDIT_SUFFIXES = (".html", ".htm", ".md", ".csv", ".xlsx", ".json")


_METHOD_TEXT = {
    "max_t": "simultaneous pairwise differences (max-t)",
    "bonferroni": "Bonferroni projection (exact)",
}


_MODEL_TEXT = {
    "crossed": "crossed factors (main effects + shrunk interaction)",
    "robust": "robust Beta-binomial (exchangeable groups)",
    "beta_binomial": "Beta-binomial (exchangeable groups)",
}


class _Titled(Result):
    def __init__(self, title: str, frame: pd.DataFrame) -> None:
        self._title, self._frame = title, frame

    def _heading(self) -> str:
        return self._title

    @property
    def table(self) -> pd.DataFrame:
        return self._frame


def _audit_page_body(result: Audit, plot: bool) -> str:
    """The saved page: the headline, when and by which version it was made, then the audit."""
    import datetime

    made = datetime.date.today().isoformat()
    meta = f"<ul class='bv-meta'><li><b>made</b> {made}</li><li><b>bayeseval</b> {html.escape(VERSION)}</li></ul>"
    return (
        "<div class='bayeseval-report'><h1>Fairness audit</h1>"
        f"<p>{html.escape(audit_text.headline(result))}</p>{meta}"
        + result.to_html(plot=plot).replace("<h2>Fairness audit</h2>", "", 1)
        + "</div>"
    )


#: exit codes of ``bayeseval audit``
EXIT_OUTSIDE, EXIT_NOT_MEASURED = 1, 3


def exit_code(result: Audit) -> int:
    """Exit code of ``bayeseval audit`` for an audit.

    Parameters
    ----------
    result : Audit
        The audit.

    Returns
    -------
    int
        1 when a criterion is decided outside the tolerance; else 3 when a tolerance is
        given and a criterion is not measured (fewer than two groups with
        ``--min-trials`` trials: it is neither within the tolerance nor undecided); else 0
        (every criterion within the tolerance or undecided, or no tolerance). Bad input
        is 2.

    Examples
    --------
    >>> from bayeseval import audit
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0] * 20, "p": [1, 0] * 20, "g": ["a"] * 38 + ["b"] * 2})
    >>> exit_code(audit(df, y_true="y", y_pred="p", groups="g", metrics="selection_rate",
    ...                 tolerance=0.1, random_seed=0))
    3
    """
    if result.outside:
        return EXIT_OUTSIDE
    return EXIT_NOT_MEASURED if result.tolerance is not None and result.not_measured else 0
