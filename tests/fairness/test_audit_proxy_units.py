"""Audits with a proxy over units: each group's units proxy interval, disparities at the Bonferroni level."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design, audit, proxy_ci
from bayeseval._kernels.disparity import bonferroni_level
from tests.estimate.test_proxy_units_selected import _by_verdict
from tests.helpers import assert_raises_naming

KW = {"y_true": "y_true", "y_pred": "y_pred", "groups": "g", "proxy": "judge", "metrics": "accuracy"}
ROWS = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "metric": "accuracy", "strata": "g"}
GROUPS = "abc"


def _own(frame: pd.DataFrame, design: Design, level: float) -> pd.DataFrame:
    """``proxy_ci`` with the design on each group's rows alone, at ``level``."""
    return pd.concat([proxy_ci(frame[frame["g"] == g], design=design, level=level, **ROWS).table for g in GROUPS])


@pytest.mark.parametrize("design", [Design(cluster="item"), Design(cluster="item", inclusion="pi")])
def test_each_group_and_every_disparity_come_from_the_groups_units_proxy_intervals(design):
    frame = _by_verdict(n_items=40, per_cell=8, seed=11, cats=GROUPS)
    res = audit(frame, design=design, **KW)
    groups = res.groups.set_index("group")
    own = _own(frame, design, 0.95)
    for col in ("rate", "lower", "upper"):
        np.testing.assert_allclose(groups.loc[list(GROUPS), col].to_numpy(float), own[col].to_numpy(float), rtol=1e-12)
    assert groups["units"].tolist() == own["n_units"].tolist() and max(own["n_units"]) <= 16
    assert (groups["read"] == "proxy").all() and groups["adaptive_lower"].isna().all()
    # simultaneous: every group's interval at 1 - 0.05 / 3, interval arithmetic against the reference
    adj = _own(frame, design, bonferroni_level(0.95, 3))
    ref = res.reference["accuracy"]
    dis = res.disparities.set_index(["measure", "group"])
    for g in GROUPS:
        if g == ref:
            continue
        lo, hi = adj.loc[g, "lower"] - adj.loc[ref, "upper"], adj.loc[g, "upper"] - adj.loc[ref, "lower"]
        assert dis.loc[("difference", g), "method"] == "units_bonferroni"
        np.testing.assert_allclose(dis.loc[("difference", g), ["lower", "upper"]].to_numpy(float), [lo, hi])
        ratio = [adj.loc[g, "lower"] / adj.loc[ref, "upper"], adj.loc[g, "upper"] / adj.loc[ref, "lower"]]
        np.testing.assert_allclose(dis.loc[("ratio", g), ["lower", "upper"]].to_numpy(float), ratio)
    gap = dis.loc[("max-min gap", "all measured")]
    rate = own["rate"].to_numpy(float)
    assert gap["estimate"] == pytest.approx(rate.max() - rate.min())
    assert gap["upper"] == pytest.approx(float(adj["upper"].max() - adj["lower"].min()))
    assert "pooled model: none (rows in units)" in res.settings


def test_units_of_one_row_give_the_proxy_audit_without_the_cluster():
    frame = _by_verdict(n_items=40, per_cell=8, epochs=1, seed=12, cats=GROUPS)
    with_cluster = audit(frame, design=Design(cluster="item", inclusion="pi"), **KW)
    without = audit(frame, design=Design(inclusion="pi"), **KW)
    cols = ["rate", "lower", "upper", "pooled_lower", "pooled_upper"]
    pd.testing.assert_frame_equal(with_cluster.groups[cols], without.groups[cols])
    # the posterior columns come from draws of the pooled model, not deterministic across runs
    keep = [c for c in without.disparities.columns if not c.startswith("posterior") and c != "p_exceeds"]
    pd.testing.assert_frame_equal(with_cluster.disparities[keep], without.disparities[keep])


def test_refusals_name_the_arguments():
    frame = _by_verdict(n_items=20, per_cell=4, seed=13, cats=GROUPS)
    clustered = Design(cluster="item", inclusion="pi")
    assert_raises_naming(audit, "guarantee", frame, design=clustered, guarantee="average", **KW)
    assert_raises_naming(audit, "design.population", frame, design=Design(cluster="item", population="pool"), **KW)
    bad = frame.copy()
    first = bad.index[bad["lab"]][0]
    bad.loc[bad["item"] == bad.loc[first, "item"], "pi"] = 0.99
    assert_raises_naming(audit, "design.inclusion", bad, design=clustered, **KW)
    spread = frame.copy()
    spread.loc[spread["item"] == "a0", "g"] = ["a", "b", "a", "b", "a"]
    assert_raises_naming(audit, "design.cluster", spread, design=Design(cluster="item"), **KW)
