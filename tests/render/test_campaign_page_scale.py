"""Tests of the campaign page of many strata: the strata to read first, the same strata's progress."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from bayeseval._render.campaign_page import campaign_page
from bayeseval._render.report_page import MAX_TABLE_STRATA


def _findings(k: int, seed: int = 0) -> SimpleNamespace:
    """A campaign's report data of ``k`` strata, three rounds (ties in the half-widths)."""
    rng = np.random.default_rng(seed)
    names = pd.Index([f"s{i:04d}" for i in range(k)], name="stratum")
    labelled = rng.integers(5, 40, k)
    status = pd.DataFrame(
        {
            "successes": rng.binomial(labelled, 0.1),
            "trials": labelled,
            "lower": 0.0,
            "upper": 0.5,
            "halfwidth": np.round(rng.uniform(0.02, 0.3, k), 2),
            "read": "guaranteed",
            "done": rng.random(k) < 0.3,
            "exhausted": False,
            "outlier": rng.random(k) < 0.05,
            "pool_rows": 100,
            "labelled": labelled,
            "pending": 0,
        },
        index=names,
    )
    progress = pd.DataFrame(
        {"round 1": labelled // 3, "round 2": 2 * (labelled // 3), "round 3": labelled}, index=names
    )
    return SimpleNamespace(
        name="c.db",
        facts=[("metric", "error_rate")],
        status=status,
        progress=progress,
        agreement=None,
        agreement_note="",
        figures=[],
    )


def _rows(page: str, heading: str) -> list[str]:
    """The first cells of the table under ``heading``."""
    part = page[page.index(f"<h2>{heading}</h2>") :]
    part = part[: part.index("</table>")]
    return [html.unescape(m) for m in re.findall(r"<td class='s'>(.*?)</td>", part)]


def test_a_page_of_many_strata_shows_those_not_done_and_widest_first():
    f = _findings(450)
    page = campaign_page(f)
    ref = f.status.sort_values(["done", "halfwidth"], ascending=[True, False], kind="stable").index
    want = [str(k) for k in ref[:MAX_TABLE_STRATA]]
    assert _rows(page, "Strata: status and labels still needed") == want
    assert _rows(page, "Progress over rounds (labels per stratum)") == want
    assert "<b>This page shows 200 of the 450 rows of the status</b>" in page
    assert "bayeseval campaign status --db c.db" in page


def test_a_page_of_up_to_200_strata_shows_every_stratum():
    f = _findings(MAX_TABLE_STRATA)
    page = campaign_page(f)
    every = [str(k) for k in f.status.index]
    assert _rows(page, "Strata: status and labels still needed") == every
    assert _rows(page, "Progress over rounds (labels per stratum)") == every
    assert "This page shows" not in page
