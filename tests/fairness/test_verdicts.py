"""Tests of ``bayeseval.fairness.verdicts``: which criteria get a verdict, and their gaps."""

from __future__ import annotations

import pandas as pd
import pytest

import bayeseval as be
from bayeseval.datasets import load_compas

COMPAS = load_compas()
KW = dict(y_true="two_year_recid", y_pred="predicted_recid", groups=["race", "sex"], random_seed=0)


def _by_hand_gap(df: pd.DataFrame, trial: pd.Series, success: pd.Series, min_trials: int = 30) -> float:
    """Max-min of the observed rates over the groups with at least ``min_trials`` trials (pandas)."""
    g = pd.DataFrame({"race": df["race"], "sex": df["sex"], "t": trial, "s": success & trial})
    agg = g.groupby(["race", "sex"])[["t", "s"]].sum()
    agg = agg[agg["t"] >= min_trials]
    rate = agg["s"] / agg["t"]
    return float(rate.max() - rate.min())


def test_a_tolerance_on_metrics_outside_the_named_criteria_still_gets_verdicts():
    y, p = COMPAS["two_year_recid"] == 1, COMPAS["predicted_recid"] == 1
    res = be.audit(COMPAS, metrics=["fpr", "fnr"], tolerance=0.1, **KW)
    got = res.verdicts.set_index(["criterion", "metric"])["gap"]
    # FNR stands for TPR (the same gap): equal opportunity and equalized odds are both decided
    assert set(got.index) == {("equal_opportunity", "fnr"), ("equalized_odds", "fnr"), ("equalized_odds", "fpr")}
    assert got[("equalized_odds", "fpr")] == pytest.approx(_by_hand_gap(COMPAS, ~y, p), abs=1e-12)
    assert got[("equal_opportunity", "fnr")] == pytest.approx(_by_hand_gap(COMPAS, y, ~p), abs=1e-12)
    tpr = be.audit(COMPAS, metrics=["tpr"], tolerance=0.1, **KW).verdicts.iloc[0]
    assert got[("equal_opportunity", "fnr")] == pytest.approx(tpr["gap"], abs=1e-12)
    assert (res.verdicts["verdict"] != "no tolerance").all()


def test_a_named_metric_in_no_criterion_gets_its_own_parity_verdict():
    y, p = COMPAS["two_year_recid"] == 1, COMPAS["predicted_recid"] == 1
    res = be.audit(COMPAS, metrics=["tpr", "error_rate"], tolerance=0.05, **KW)
    assert res.verdicts["criterion"].tolist() == ["equal_opportunity", "error_rate_parity"]
    row = res.verdicts.iloc[1]
    every = pd.Series(True, index=COMPAS.index)
    assert row["gap"] == pytest.approx(_by_hand_gap(COMPAS, every, y != p), abs=1e-12)
    # the verdict follows the interval: outside when its lower end is above the tolerance
    want = "outside" if row["lower"] > 0.05 else ("within tolerance" if row["upper"] <= 0.05 else "undecided")
    assert row["metric_verdict"] == want


def test_the_default_metrics_give_the_four_named_criteria():
    res = be.audit(COMPAS, tolerance=0.1, **KW)
    assert list(dict.fromkeys(res.verdicts["criterion"])) == [
        "demographic_parity",
        "equal_opportunity",
        "equalized_odds",
        "predictive_parity",
    ]


def test_the_command_line_exits_1_when_a_named_metric_is_outside(tmp_path):
    from bayeseval.cli.main import main

    path = tmp_path / "compas.csv"
    COMPAS.to_csv(path, index=False)
    code = main(
        [
            "audit",
            str(path),
            "--y-true",
            "two_year_recid",
            "--y-pred",
            "predicted_recid",
            "--groups",
            "race,sex",
            "--metrics",
            "fpr,fnr",
            "--tolerance",
            "0.1",
            "--json",
        ]
    )
    fpr_gap = _by_hand_gap(COMPAS, COMPAS["two_year_recid"] == 0, COMPAS["predicted_recid"] == 1)
    assert fpr_gap > 0.3 and code == 1  # a gap far above 0.1 (pandas) is not a pass
