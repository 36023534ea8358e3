"""The status table of a campaign: per stratum, counts, the interval read and whether it is done."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeseval._api.docs import fill_doc
from bayeseval.campaign.goals.decide import AT_MARGIN
from bayeseval.campaign.loop.rule_state import RuleState

__all__ = ["status_frame", "stratum_outcomes", "outcome_text"]


def status_frame(st: RuleState, n_rows: np.ndarray | None = None, budget_spent: bool = False) -> pd.DataFrame:
    """Per-stratum status table of a campaign's state (:meth:`Campaign.status
    <bayeseval.campaign.campaign.Campaign.status>` describes the columns).

    Parameters
    ----------
    st : RuleState
        The campaign's state (one metric).
    n_rows : numpy.ndarray, optional
        Pool rows per stratum (default: available + labelled + pending).
    budget_spent : bool
        Whether the campaign's budget is spent (:func:`stratum_outcomes`).

    Returns
    -------
    pandas.DataFrame
        One row per stratum.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 100], target_halfwidth=0.1)
    >>> status_frame(st)[["labelled", "trials"]].to_numpy().tolist()
    [[20, 20], [30, 30]]
    """
    post = st.posterior
    lo, hi = st.intervals()
    read, rlo, rhi = st.read_intervals()
    hw = (rhi - rlo) / 2
    frame = pd.DataFrame(
        {
            "pool_rows": n_rows if n_rows is not None else st.available + st.labelled + st.pending,
            "labelled": st.labelled,
            "pending": st.pending,
            "trials": st.trials,
            "successes": st.successes,
            "mean": st.read_means(),
            "lower": rlo,
            "upper": rhi,
            "read": read,
            "halfwidth": hw,
            "done": hw <= st.target_halfwidth if st.goal.weighted else st.stratum_done(),
            "exhausted": st.available <= 0,
            "outlier": np.asarray(st.strata.isin(list(post.outliers)), dtype=bool),
            "outcome": stratum_outcomes(st, budget_spent),
        },
        index=st.strata,
    )
    if st.per_stratum():  # the guaranteed interval is the stratum's; the pooled posterior beside it
        frame["pooled_mean"] = post.mean().to_numpy()
        frame["pooled_lower"], frame["pooled_upper"] = lo, hi
    for column, values in st.goal.status_columns(st).items():  # goal Decide: its decisions
        frame[column] = values
    frame.attrs.update(st.goal.status_summary(st))  # the campaign-wide verdict of goals Overall and Gap
    return frame


def stratum_outcomes(st: RuleState, budget_spent: bool = False) -> np.ndarray:
    """What happened to each stratum so far: decided, met, or why it is still open.

    Goal ``"decide"``: ``"decided: meets"``, ``"decided: fails"``, ``"at the threshold
    (within the margin)"``; any other goal: ``"met"`` (for ``"overall"`` and ``"gap"`` the
    campaign-wide verdict, every stratum alike). A stratum that has not met the goal is
    ``"undecided"`` (``"not met"`` for the half-width goals), followed by ``": pool
    exhausted"`` when it has no row left to propose and none pending, or ``": budget spent"``
    when the budget is spent.

    Parameters
    ----------
    st : RuleState
        The campaign's state (one metric).
    budget_spent : bool
        Whether the campaign's budget is spent.

    Returns
    -------
    numpy.ndarray of str
        One value per stratum.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 130], [200, 1539], available=[0, 0], goal="decide",
    ...                            threshold=np.array([0.1, 0.1]), guarantee="stratum")
    >>> stratum_outcomes(st).tolist()
    ['decided: meets', 'undecided: pool exhausted']
    """
    out, met = st.goal.outcomes(st)
    exhausted = (st.available <= 0) & (st.pending <= 0)
    out[~met & exhausted] = out[~met & exhausted] + ": pool exhausted"
    if budget_spent:
        out[~met & ~exhausted] = out[~met & ~exhausted] + ": budget spent"
    return out


@fill_doc()
def outcome_text(states: list[RuleState], budget_spent: bool = False) -> str:
    """The campaign's end state in one line: ``"goal met"``, ``"stopped"`` or ``"running"``, and why.

    ``"goal met"`` only when every metric's goal is met (:meth:`Goal.reached
    <bayeseval.campaign.goals.goal.Goal.reached>`: every stratum decided, or within the target);
    ``"stopped"`` when the campaign is done without it (the pools of the open strata are
    exhausted, or the budget is spent), naming the strata left open; ``"running"`` otherwise.

    Parameters
    ----------
    states : list of RuleState
        The campaign's state per metric.
    budget_spent : bool
        Whether the campaign's budget is spent.

    {line_returned}

    Examples
    --------
    >>> st = RuleState.from_counts([1, 130], [200, 1539], available=[0, 0], goal="decide",
    ...                            threshold=np.array([0.1, 0.1]), guarantee="stratum", strata=["north", "south"])
    >>> outcome_text([st])
    'stopped: 1 of 2 strata undecided, pool exhausted (south); 1 decided, meets'
    """
    if all(st.goal.reached(st) for st in states):
        counts = _tally(np.concatenate([stratum_outcomes(st) for st in states]))
        return f"goal met: {counts}"
    done = budget_spent or all(st.is_done() for st in states)
    parts = []
    for st in states:
        out = stratum_outcomes(st, budget_spent)
        shortfall = st.goal.shortfall(st)  # what the campaign-wide verdict of Overall and Gap lacks
        if shortfall is not None:
            parts.append(shortfall)
        is_open = np.array([not (o == "met" or o.startswith("decided") or o == AT_MARGIN) for o in out])
        for kind in dict.fromkeys(out[is_open]):
            names = [str(s) for s in st.strata[out == kind]]
            listing = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            parts.append(f"{len(names)} of {len(out)} strata {kind.replace(': ', ', ')} ({listing})")
        if (~is_open).any():
            parts.append(_tally(out[~is_open]))
    return f"{'stopped' if done else 'running'}: " + "; ".join(parts)


def _tally(outcomes: np.ndarray) -> str:
    """``"3 decided: meets, 1 decided: fails"``: how many strata of each outcome, in order of first appearance."""
    kinds = dict.fromkeys(outcomes)
    return ", ".join(f"{int(np.sum(outcomes == k))} {k.replace(': ', ', ')}" for k in kinds)
