"""What the HTML report of a labelling campaign says (``bayeseval campaign report``).

:func:`campaign_findings` computes the report's content as data (:class:`CampaignFindings`):
the campaign's settings and totals (labels, cost, done), the per-stratum status with the
forecast of the labels still needed, the labels per stratum after each proposal round
(progress over rounds), the annotators' agreement when rows have several annotations, and
plots as PNG: the largest half-width against the labels with the forecast
(:func:`bayeseval.plots.halfwidth_curve`; each stratum's probability of meeting its threshold
for a decision goal) and the cumulative labels per stratum round by round
(:func:`bayeseval.plots.labels_by_round`). :func:`campaign_report_html` formats them into one
self-contained page with :func:`bayeseval._render.campaign_page.campaign_page`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval._render.campaign_page import campaign_page, read_first
from bayeseval.campaign.labels.agreement import AGREEMENT_RULE
from bayeseval.campaign.loop.forecast import forecast_text, forecast_total
from bayeseval.counts.counts import stratum_labels

__all__ = ["CampaignFindings", "campaign_findings", "campaign_report_html", "progress_by_round"]

#: the parameters of the report's functions
REPORT_PARAMETERS = """\
campaign : Campaign
    An open campaign.
plots : bool
    Draw the plots (inline PNG); False leaves them out."""


@dataclass(frozen=True)
class CampaignFindings:
    """What a campaign's report says, as data (:func:`campaign_findings`).

    Parameters
    ----------
    name : str
        The campaign file's name.
    facts : list of (str, str)
        The settings and totals: ``metric``, ``goal``, ``labels used``, ``labels still
        needed``, ``pending``, ``state``.
    status : pandas.DataFrame
        ``Campaign.status()`` indexed by stratum labels (and ``metric`` for several metrics),
        with the forecast columns ``forecast`` and ``forecast_cost``.
    progress : pandas.DataFrame
        :func:`progress_by_round`.
    agreement : pandas.DataFrame, optional
        ``Campaign.agreement()`` indexed by stratum labels; None when no row is annotated.
    agreement_note : str
        How the agreement is measured.
    figures : list of bytes
        The plots as PNG (none when the report is made without plots).

    Examples
    --------
    >>> f = CampaignFindings("c.db", [("pending", "0")], pd.DataFrame(), pd.DataFrame())
    >>> f.agreement is None, f.figures
    (True, [])
    """

    name: str
    facts: list[tuple[str, str]]
    status: pd.DataFrame
    progress: pd.DataFrame
    agreement: pd.DataFrame | None = None
    agreement_note: str = ""
    figures: list[bytes] = field(default_factory=list)


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


def _png(ax: Any) -> bytes:
    """The figure of ``ax`` as PNG."""
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


def _axes(width: float) -> Any:
    """Axes on a figure outside pyplot (no backend change, nothing left open)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, 4)).subplots()


def _plots(campaign: Any, progress: pd.DataFrame) -> list[bytes]:
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


#: the decision plot draws a bar per stratum up to this many strata; above, the first
#: DECISION_PLOT_SHOWN in :func:`~bayeseval._render.campaign_page.read_first` order
DECISION_PLOT_STRATA = 60
DECISION_PLOT_SHOWN = 30


def _decision_plot(campaign: Any, ax: Any) -> Any:
    """Each stratum's posterior probability of meeting its threshold, against the decision lines
    (of many strata, those still undecided first, then the widest intervals, as the title says)."""
    status = campaign.status()
    if len(status) > DECISION_PLOT_STRATA:
        n = len(status)
        status = status.iloc[read_first(status)[:DECISION_PLOT_SHOWN]]
        ax.set_title(
            f"{DECISION_PLOT_SHOWN} of the {n:,} strata: those not done first, then the widest intervals",
            fontsize=9,
        )
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


def _agreement(campaign: Any) -> pd.DataFrame | None:
    """The annotators' agreement by stratum label; None when no row is annotated."""
    if not len(campaign.annotations()):
        return None
    agree = campaign.agreement()
    agree.index = pd.Index(stratum_labels(agree.index), name="stratum")
    return agree


@fill_doc(report_parameters=REPORT_PARAMETERS)
def campaign_findings(campaign: Any, *, plots: bool = True) -> CampaignFindings:
    """What the campaign's report says, as data.

    Parameters
    ----------
    {report_parameters}

    Returns
    -------
    CampaignFindings
        The facts, tables and figures of the report.

    Examples
    --------
    {campaign_example}
    >>> f = campaign_findings(c, plots=False)
    >>> [k for k, _ in f.facts][:4], f.figures
    (['metric', 'goal', 'labels used', 'labels still needed'], [])
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
    facts = [
        ("metric", ", ".join(m.name for m in campaign.metrics)),
        ("goal", campaign.spec.goal.report_line(campaign.spec.level, status)),
        ("labels used", f"{campaign.labels_used} (cost {float(once['cost'].sum()):g})"),
        ("labels still needed", _still_needed(forecast)),
        ("pending", str(int(once["pending"].sum()))),
        ("state", campaign.outcome),
    ]
    return CampaignFindings(
        name=str(campaign._store.path.name),
        facts=facts,
        status=status,
        progress=progress,
        agreement=_agreement(campaign),
        agreement_note=f"{AGREEMENT_RULE}.",
        figures=_plots(campaign, progress) if plots else [],
    )


@fill_doc(report_parameters=REPORT_PARAMETERS)
def campaign_report_html(campaign: Any, *, plots: bool = True) -> str:
    """The campaign's HTML report.

    Parameters
    ----------
    {report_parameters}

    Returns
    -------
    str
        A complete HTML document: :func:`campaign_findings` formatted by
        :func:`bayeseval._render.campaign_page.campaign_page`.

    Examples
    --------
    {campaign_example}
    >>> "labels still needed" in campaign_report_html(c, plots=False)
    True
    """
    return campaign_page(campaign_findings(campaign, plots=plots))
