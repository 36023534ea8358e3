"""Replaying a proxy campaign on labelled data: :func:`~bayeseval.campaign.simulate` with ``proxy=``.

Each repeat runs a real :class:`~bayeseval.campaign.Campaign` on a temporary file and answers
its proposals from the true labels, so the replay is the campaign itself (the same cells,
allocation and proxy intervals); repeat 0 is the campaign created with ``random_seed``.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.campaign.campaign import Campaign
from bayeseval.campaign.loop.pool import seed_sequences
from bayeseval.campaign.spec import CampaignSpec

__all__ = ["replay_proxy"]


def _one(
    path: Path, pool: pd.DataFrame, truth: pd.Series, spec: CampaignSpec, seed: Any, true_rates: pd.Series
) -> tuple[dict[str, Any], list[dict[str, Any]], pd.DataFrame]:
    start = time.perf_counter()
    c = Campaign._from_spec(path, pool, spec.replace(random_seed=seed))
    trace, rounds = [], 0
    try:
        while True:
            batch = c.propose()
            if len(batch) == 0:
                break
            c.ingest(truth.loc[batch.index])
            rounds += 1
            trace.append({"labels": c.labels_used, "max_halfwidth": float(c.status()["halfwidth"].max())})
        st = c.status()
        done = c.goal_met  # the goal itself, not a stop for want of rows
        used = c.labels_used
    finally:
        c.close()
    rates = true_rates.reindex(st.index).to_numpy(float)
    st = st.assign(true_rate=rates, covered=(st["lower"] <= rates) & (rates <= st["upper"]))
    row = {
        "labels_used": used,
        "coverage": float(st["covered"].mean()),
        "reached_goal": bool(done),
        "rounds": rounds,
        "max_halfwidth": float(st["halfwidth"].max()),
        "overall_covered": np.nan,
        "wall_time": time.perf_counter() - start,
    }
    return row, trace, st


def replay_proxy(
    data: pd.DataFrame,
    truth: pd.Series,
    spec: CampaignSpec,
    specs: list[CampaignSpec],
    n_repeats: int,
    true_rates: pd.Series,
    bar: Any = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Run ``n_repeats`` proxy campaigns per rule; the run table, the trace and the final intervals.

    ``bar`` (a progress bar, optional) is advanced by one after each campaign.
    """
    pool = data.reset_index(drop=True)
    truth = pd.Series(np.asarray(truth), index=pool.index)
    seeds = [spec.random_seed, *seed_sequences(spec.random_seed, n_repeats)[1:]]
    rows: list[dict[str, Any]] = []
    trace: list[dict[str, Any]] = []
    finals = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in specs:
            for r, seed in enumerate(seeds):
                with warnings.catch_warnings():
                    if rows:  # every repeat starts from the same pool: its feasibility is said once
                        warnings.simplefilter("ignore", PrecisionLimitedWarning)
                    row, tr, st = _one(Path(tmp) / f"{s.rule_name}-{r}.db", pool, truth, s, seed, true_rates)
                rows.append({"rule": s.rule_name, "repeat": r, **row})
                trace.extend({"rule": s.rule_name, "repeat": r, **t} for t in tr)
                finals.append(st.reset_index().assign(rule=s.rule_name, repeat=r))
                if bar is not None:
                    bar.update(1)
    return pd.DataFrame(rows), pd.DataFrame(trace), pd.concat(finals, ignore_index=True)
