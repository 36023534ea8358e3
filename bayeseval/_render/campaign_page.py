"""The HTML page of a labelling campaign's report (``bayeseval campaign report``).

:func:`campaign_page` formats the findings :func:`bayeseval.campaign.report.campaign_findings`
computes (the campaign's facts, its status table with the forecast, the labels per stratum
round by round, the annotators' agreement and the plots as PNG) into one self-contained page:
the evaluation report's page (:func:`bayeseval._render.html_page.page`, its styles and cell
formats), counts and costs as whole numbers, rates with four decimals, a column or a table with
nothing in it left out. Every value from the campaign is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pandas as pd

from bayeseval._api.table_names import WHOLE
from bayeseval._render.html_page import html_table, page
from bayeseval._render.report_page import MAX_TABLE_STRATA

__all__ = ["FLAGS", "STATUS_GROUPS", "CampaignPageData", "campaign_page", "display_status", "read_first"]

#: the status table's columns in groups: what each stratum reads, where it stands, its labels
#: and their cost, and last (what a narrow page scrolls to) the pooled model beside the
#: interval read; the other columns follow
STATUS_GROUPS = (
    (
        "estimate",
        ("successes", "trials", "mean", "lower", "upper", "halfwidth", "read", "agreement", "effective_labels"),
    ),
    ("state", ("threshold", "p_meets", "decision", "state")),
    ("labels", ("pool_rows", "labelled", "pending", "cost", "forecast", "forecast_cost")),
    ("pooled", ("pooled_mean", "pooled_lower", "pooled_upper")),
)


#: the status table's flags, shown together in one ``state`` column as the words that hold
FLAGS = ("done", "exhausted", "outlier")


class CampaignPageData(Protocol):
    """What :func:`campaign_page` reads (:class:`bayeseval.campaign.report.CampaignFindings`)."""

    @property
    def name(self) -> str: ...
    @property
    def facts(self) -> Sequence[tuple[str, str]]: ...
    @property
    def status(self) -> pd.DataFrame: ...
    @property
    def progress(self) -> pd.DataFrame: ...
    @property
    def agreement(self) -> pd.DataFrame | None: ...
    @property
    def agreement_note(self) -> str: ...
    @property
    def figures(self) -> Sequence[bytes]: ...


def display_status(status: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The status table as the report shows it, and a note on the interval read.

    The flags ``done``, ``exhausted`` and ``outlier`` become one ``state`` column listing
    those that hold; a ``read`` that is the same for every stratum leaves the table for the
    note (one fewer column of repeated words).

    Parameters
    ----------
    status : pandas.DataFrame
        ``Campaign.status()``, with the forecast columns.

    Returns
    -------
    (pandas.DataFrame, str)
        The table to show and the note (``""`` when ``read`` differs between strata).

    Examples
    --------
    >>> st = pd.DataFrame({"lower": [0.1], "read": ["guaranteed"], "done": [True],
    ...                    "exhausted": [False], "outlier": [False]}, index=["a"])
    >>> table, note = display_status(st)
    >>> table.columns.tolist(), table["state"].tolist(), note
    (['lower', 'state'], ['done'], 'lower and upper: the guaranteed interval of every stratum')
    """
    table = status.copy()
    flags = [f for f in FLAGS if f in table.columns]
    if flags:
        held = table[flags].fillna(False).astype(bool)
        table["state"] = [
            ", ".join(f for f, on in zip(flags, row, strict=True) if on) or None for row in held.to_numpy()
        ]
        table = table.drop(columns=flags)
    note = ""
    if "read" in table.columns and table["read"].nunique(dropna=False) == 1:
        note = f"lower and upper: the {table['read'].iloc[0]} interval of every stratum"
        table = table.drop(columns=["read"])
    return table, note


def read_first(status: pd.DataFrame) -> np.ndarray:
    """The positions of ``status``'s rows, those a reader of a campaign looks at first in front.

    Where the campaign still falls short: the strata not done first, then the widest interval
    (``halfwidth``, widest first: where labels still buy the most); a row without an interval
    comes first among its kind; ties keep the table's order.

    Examples
    --------
    >>> st = pd.DataFrame({"halfwidth": [0.1, 0.3, 0.2], "done": [False, True, False]})
    >>> read_first(st).tolist()
    [2, 0, 1]
    """
    n = len(status)
    done = status["done"].fillna(False).to_numpy(dtype=bool) if "done" in status.columns else np.zeros(n, bool)
    width = status["halfwidth"].to_numpy(dtype=float, na_value=np.nan) if "halfwidth" in status.columns else np.zeros(n)
    return np.lexsort((-np.where(np.isnan(width), np.inf, width), done))


def _part(findings: CampaignPageData, shown: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, str]]:
    """The status rows and progress rows a page of many strata shows, and the note saying so
    (its lead, then the rest)."""
    n = len(shown)
    rows = read_first(findings.status)[:MAX_TABLE_STRATA]
    part = shown.iloc[rows]
    names = part.index.get_level_values("stratum") if "stratum" in (part.index.names or ()) else part.index
    progress = findings.progress
    if len(progress):
        progress = progress.loc[[k for k in pd.unique(np.asarray(names, dtype=object)) if k in progress.index]]
    note = (
        f"This page shows {len(part):,} of the {n:,} rows of the status",
        ": the strata not done first, then the widest intervals (where labels still buy the most); the "
        f"progress table holds the same strata. Every stratum: bayeseval campaign status --db {findings.name} "
        "(--json for all columns), or Campaign.status() in Python.",
    )
    return part, progress, note


def _section(title: str, table: str, note: str = "") -> list[str]:
    """A heading and its table, or nothing when the table is empty."""
    if not table:
        return []
    return [f"<h2>{html.escape(title)}</h2>", *([f"<p>{html.escape(note)}</p>"] if note else []), table]


def _agreement_section(agree: pd.DataFrame | None, note: str) -> list[str]:
    """The annotators' agreement (None: no annotation yet, no section)."""
    if agree is None:
        return []
    if not agree["kappa"].notna().any():  # one annotation per row so far: nothing measured
        return [
            "<h2>Agreement between annotators</h2>",
            "<p>No row has two annotations yet: agreement is measured once one has.</p>",
        ]
    return _section("Agreement between annotators", html_table(agree, counts=WHOLE), note)


def _img(png: bytes) -> str:
    """A PNG as an inline ``<img>`` (base64)."""
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}"/>'


def campaign_page(findings: CampaignPageData) -> str:
    """The campaign's report as one self-contained HTML page.

    Parameters
    ----------
    findings : CampaignPageData
        The report's data (:class:`bayeseval.campaign.report.CampaignFindings`): ``name`` (of
        the campaign file), ``facts`` (label, text), ``status`` (indexed by stratum labels, with
        the forecast columns), ``progress`` (cumulative labels per stratum and round),
        ``agreement`` (None without annotations) with its ``agreement_note``, ``figures`` (PNG;
        none: no plots section).

    Above 200 rows of status the page shows 200 of them, in :func:`read_first` order (the
    strata not done first, then the widest intervals), the progress of the same strata, and
    a note with the total and the command that shows every stratum.

    Returns
    -------
    str
        A complete HTML document.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> data = SimpleNamespace(name="c.db", facts=[("metric", "error_rate")],
    ...                        status=pd.DataFrame({"labelled": [3]}, index=["a"]),
    ...                        progress=pd.DataFrame(), agreement=None, agreement_note="", figures=[])
    >>> text = campaign_page(data)
    >>> "<h1>Campaign report: c.db</h1>" in text, "<b>metric</b> error_rate" in text
    (True, True)
    """
    esc = html.escape
    shown, note = display_status(findings.status)
    progress, part_note = findings.progress, None
    if len(shown) > MAX_TABLE_STRATA:  # a page of every stratum would be megabytes nobody scrolls through
        shown, progress, part_note = _part(findings, shown)
    parts = [
        "<div class='bayeseval-report'>",
        f"<h1>Campaign report: {esc(findings.name)}</h1>",
        "<ul class='bv-meta'>" + "".join(f"<li><b>{esc(k)}</b> {esc(v)}</li>" for k, v in findings.facts) + "</ul>",
        *([f"<p class='bv-part'><b>{esc(part_note[0])}</b>{esc(part_note[1])}</p>"] if part_note else []),
        *_section(
            "Strata: status and labels still needed",
            html_table(shown, index_name="stratum", groups=STATUS_GROUPS, counts=WHOLE),
            note,
        ),
        *_section("Progress over rounds (labels per stratum)", html_table(progress, counts=WHOLE)),
        *_agreement_section(findings.agreement, findings.agreement_note),
    ]
    if findings.figures:
        parts += ["<h2>Plots</h2>", *(_img(png) for png in findings.figures)]
    parts.append("</div>")
    return page(f"Campaign report: {findings.name}", "\n".join(parts))
