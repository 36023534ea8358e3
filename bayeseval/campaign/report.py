"""An HTML report of a labelling campaign (``bayeseval campaign report``).

One self-contained page: the campaign's settings and totals (labels, cost, done), the
per-stratum status with the forecast of the labels still needed, the labels per stratum after
each proposal round (progress over rounds), the annotators' agreement when rows have several
annotations, and plots, inline as base64 PNG: the largest half-width against the labels with
the forecast (:func:`bayeseval.plots.halfwidth_curve`; each stratum's probability of meeting
its threshold for a decision goal) and the cumulative labels per stratum round by round
(:func:`bayeseval.plots.labels_by_round`).
The page is the evaluation report's (:func:`bayeseval._render.html_page.page`, its styles and
cell formats): counts and costs print as whole numbers, rates with four decimals, a column
or a table with nothing in it is left out. Every value from the campaign is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._api.table_names import WHOLE
from bayeseval._render.html_page import html_table, page
from bayeseval.campaign.labels.annotations import AGREEMENT_RULE
from bayeseval.campaign.loop.forecast import forecast_text, forecast_total
from bayeseval.counts.counts import stratum_labels

__all__ = ["campaign_report_html", "progress_by_round"]


@fill_doc()
def progress_by_round(campaign: Any) -> pd.DataFrame:
    """Labels per stratum after each proposal round (labels counted in the round they were proposed).

    Parameters
    ----------
    campaign : Campaign
        An open campaign.

    Returns
    -------
    pandas.DataFrame
        Indexed by stratum, one column per round (``round 1``, ...): cumulative labels.

    Examples
    --------
    {campaign_example}
    >>> b = c.propose(4)
    >>> _ = c.ingest(pd.Series(1, index=b.index))
    >>> int(progress_by_round(c)["round 1"].sum())
    4
    """
    labels = campaign.labels()
    rounds = sorted(set(campaign.history().index) | set(labels["round"].astype(int)))
    names = stratum_labels(campaign.strata)
    out = pd.DataFrame(0, index=pd.Index(names, name="stratum"), columns=[f"round {r}" for r in rounds], dtype=np.int64)
    if len(labels):
        key = pd.Series(
            stratum_labels(pd.Index(labels["stratum"]))
            if not isinstance(campaign.strata, pd.MultiIndex)
            else stratum_labels(pd.MultiIndex.from_tuples(list(labels["stratum"]))),
            index=labels.index,
        )
        per = pd.crosstab(key.to_numpy(), labels["round"].astype(int).to_numpy())
        for r in rounds:
            got = per[r] if r in per.columns else pd.Series(dtype=np.int64)
            out[f"round {r}"] = got.reindex(names, fill_value=0).to_numpy()
        out = out.cumsum(axis=1)
    return out


def _png(ax: Any) -> str:
    """The figure of ``ax`` as an inline ``<img>`` (base64 PNG)."""
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}"/>'


def _axes(width: float) -> Any:
    """Axes on a figure outside pyplot (no backend change, nothing left open)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, 4)).subplots()


def _plots(campaign: Any, progress: pd.DataFrame) -> list[str]:
    from bayeseval import plots

    if campaign.spec.goal.has_threshold:  # the half-width has no target here: show the decisions
        figures = [_png(_decision_plot(campaign, _axes(7)))]
    else:
        figures = [_png(plots.halfwidth_curve(campaign, ax=_axes(7)))]
    if progress.shape[1]:
        figures.append(_png(plots.labels_by_round(progress, ax=_axes(7))))
    return figures


def _still_needed(forecast: pd.DataFrame) -> str:
    """The labels still needed and their cost, or why they cannot be forecast yet."""
    text = forecast_text(forecast)
    if forecast_total(forecast["labels"]) is None:
        return text
    return f"{text} (cost {float(forecast['cost'].sum()):g})"


def _decision_plot(campaign: Any, ax: Any) -> Any:
    """Each stratum's posterior probability of meeting its threshold, against the decision lines."""
    status = campaign.status()
    level = campaign.spec.level
    names = stratum_labels(status.index)
    colours = {"meets": "tab:green", "fails": "tab:red", "at the threshold": "tab:blue", "undecided": "tab:grey"}
    y = np.arange(len(names))
    ax.barh(y, status["p_meets"], color=[colours[d] for d in status["decision"]])
    for x in (level, 1 - level):
        ax.axvline(x, color="black", ls=":", lw=1)
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel(
        f"P(rate {campaign.spec.goal.direction} threshold); green meets, red fails, "
        f"{'blue at the threshold, ' if campaign.spec.goal.margin else ''}grey undecided"
    )
    return ax


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


def _display_status(status: pd.DataFrame) -> tuple[pd.DataFrame, str]:
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
    >>> table, note = _display_status(st)
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


def _agreement_section(campaign: Any) -> list[str]:
    """The annotators' agreement, when some row has two annotations to compare."""
    if not len(campaign.annotations()):
        return []
    agree = campaign.agreement()
    if not agree["kappa"].notna().any():  # one annotation per row so far: nothing measured
        return [
            "<h2>Agreement between annotators</h2>",
            "<p>No row has two annotations yet: agreement is measured once one has.</p>",
        ]
    agree.index = pd.Index(stratum_labels(agree.index), name="stratum")
    return _section("Agreement between annotators", html_table(agree, counts=WHOLE), f"{AGREEMENT_RULE}.")


@fill_doc()
def campaign_report_html(campaign: Any, *, plots: bool = True) -> str:
    """The campaign's HTML report.

    Parameters
    ----------
    campaign : Campaign
        An open campaign.
    plots : bool
        Draw the plots (inline PNG); False leaves them out.

    Returns
    -------
    str
        A complete HTML document.

    Examples
    --------
    {campaign_example}
    >>> "labels still needed" in campaign_report_html(c, plots=False)
    True
    """
    status = campaign.status()
    forecast = campaign.forecast(cost=True)
    reps = len(status) // len(forecast)  # several metrics: one block of strata per metric
    status["forecast"] = pd.array(np.tile(forecast["labels"].to_numpy(), reps), dtype="Int64")  # <NA>: cannot yet
    status["forecast_cost"] = pd.array(np.tile(forecast["cost"].to_numpy(), reps), dtype="Float64")
    once = (
        status.xs(status.index.get_level_values("metric")[0], level="metric")
        if "metric" in status.index.names
        else status
    )
    if "metric" in status.index.names:
        status.index = pd.MultiIndex.from_arrays(
            [status.index.get_level_values("metric"), stratum_labels(status.index.droplevel("metric"))],
            names=["metric", "stratum"],
        )
    else:
        status.index = pd.Index(stratum_labels(status.index), name="stratum")
    progress = progress_by_round(campaign)
    esc = html.escape
    facts = [
        ("metric", ", ".join(m.name for m in campaign.metrics)),
        ("goal", campaign.spec.goal.report_line(campaign.spec.level, status)),
        ("labels used", f"{campaign.labels_used} (cost {float(once['cost'].sum()):g})"),
        ("labels still needed", _still_needed(forecast)),
        ("pending", str(int(once["pending"].sum()))),
        ("state", campaign.outcome),
    ]
    name = str(campaign._store.path.name)
    shown, note = _display_status(status)
    parts = [
        "<div class='bayeseval-report'>",
        f"<h1>Campaign report: {esc(name)}</h1>",
        "<ul class='bv-meta'>" + "".join(f"<li><b>{esc(k)}</b> {esc(v)}</li>" for k, v in facts) + "</ul>",
        *_section(
            "Strata: status and labels still needed",
            html_table(shown, index_name="stratum", groups=STATUS_GROUPS, counts=WHOLE),
            note,
        ),
        *_section("Progress over rounds (labels per stratum)", html_table(progress, counts=WHOLE)),
        *_agreement_section(campaign),
    ]
    if plots:
        parts += ["<h2>Plots</h2>", *_plots(campaign, progress)]
    parts.append("</div>")
    return page(f"Campaign report: {name}", "\n".join(parts))
