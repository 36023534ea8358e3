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

import pandas as pd

from bayeseval._api.table_names import WHOLE
from bayeseval._render.html_page import html_table, page

__all__ = ["FLAGS", "STATUS_GROUPS", "CampaignPageData", "campaign_page", "display_status"]

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
        table["state"] = [", ".join(f for f in flags if row[f]) or None for _, row in held.iterrows()]
        table = table.drop(columns=flags)
    note = ""
    if "read" in table.columns and table["read"].nunique(dropna=False) == 1:
        note = f"lower and upper: the {table['read'].iloc[0]} interval of every stratum"
        table = table.drop(columns=["read"])
    return table, note


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
    parts = [
        "<div class='bayeseval-report'>",
        f"<h1>Campaign report: {esc(findings.name)}</h1>",
        "<ul class='bv-meta'>" + "".join(f"<li><b>{esc(k)}</b> {esc(v)}</li>" for k, v in findings.facts) + "</ul>",
        *_section(
            "Strata: status and labels still needed",
            html_table(shown, index_name="stratum", groups=STATUS_GROUPS, counts=WHOLE),
            note,
        ),
        *_section("Progress over rounds (labels per stratum)", html_table(findings.progress, counts=WHOLE)),
        *_agreement_section(findings.agreement, findings.agreement_note),
    ]
    if findings.figures:
        parts += ["<h2>Plots</h2>", *(_img(png) for png in findings.figures)]
    parts.append("</div>")
    return page(f"Campaign report: {findings.name}", "\n".join(parts))
