"""The status table of a campaign: per stratum, counts, the interval read and whether it is done."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeseval.campaign.goals import Decide, Gap
from bayeseval.campaign.verdicts import RuleState

__all__ = ["status_frame"]


def status_frame(st: RuleState, n_rows: np.ndarray | None = None) -> pd.DataFrame:
    """Per-stratum status table of a campaign's state (:meth:`Campaign.status
    <bayeseval.campaign.campaign.Campaign.status>` describes the columns).

    Parameters
    ----------
    st : RuleState
        The campaign's state (one metric).
    n_rows : numpy.ndarray, optional
        Pool rows per stratum (default: available + labelled + pending).

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
        },
        index=st.strata,
    )
    if st.per_stratum():  # the guaranteed interval is the stratum's; the pooled posterior beside it
        frame["pooled_mean"] = post.mean().to_numpy()
        frame["pooled_lower"], frame["pooled_upper"] = lo, hi
    if isinstance(st.goal, Decide):
        frame["threshold"] = st.threshold
        frame["p_meets"] = st.p_meets()
        frame["decision"] = st.decisions()
    if isinstance(st.goal, Gap):
        gap = {key: value for key, value in st.gap().items() if key != "bounds"}
        gap["done"] = st.is_done()
        frame.attrs["gap"] = gap
    if st.goal.weighted:
        mean, olo, ohi = st.overall()
        frame.attrs["overall"] = {
            "mean": mean,
            "lower": olo,
            "upper": ohi,
            "halfwidth": (ohi - olo) / 2,
            "done": (ohi - olo) / 2 <= st.target_halfwidth,
        }
    return frame
