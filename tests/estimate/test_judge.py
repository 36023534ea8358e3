"""The judge calibration set: labels chosen 50/50 by the judge's verdict.

``judge_calibration`` is checked against counts by hand and against the inverse-probability
weighted rates of ``join_labels(..., selected_by=...)``; the per-category accuracy with the judge
as proxy and the set's inclusion probabilities is checked for bias by a seeded simulation, beside
naive PPI (the judge's rectifier averaged over the labels as if they were a random sample).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import Design, judge_calibration, proxy_ci
from bayeseval.io import join_labels

CATS = ("a", "b", "c")
ACCURACY = {"a": 0.8, "b": 0.6, "c": 0.4}
SENSITIVITY = {"a": 0.95, "b": 0.9, "c": 0.85}
SPECIFICITY = {"a": 0.6, "b": 0.7, "c": 0.8}


def _pool(rng, n=1500):
    cat = pd.Series(rng.choice(CATS, n))
    truth = (rng.random(n) < cat.map(ACCURACY)).astype(float)
    passes = np.where(truth == 1, rng.random(n) < cat.map(SENSITIVITY), rng.random(n) >= cat.map(SPECIFICITY))
    return pd.DataFrame({"item": range(n), "cat": cat, "truth": truth, "judge": passes.astype(float)})


def _calibration_set(rng, pool, per_verdict=50):
    chosen = np.concatenate(
        [rng.choice(pool.index[pool["judge"] == v], per_verdict, replace=False) for v in (1.0, 0.0)]
    )
    labels = dict(zip(pool["item"].iloc[chosen], pool["truth"].iloc[chosen], strict=True))
    return join_labels(pool, labels, selected_by="judge")


def test_predictive_values_by_hand_and_sensitivity_as_the_weighted_rate():
    rng = np.random.default_rng(1)
    pool = _pool(rng)
    frame = _calibration_set(rng, pool)
    table = judge_calibration(frame, judge="judge", strata="cat")
    # the weights: each row's verdict's share of labels within its category
    cells = join_labels(pool, dict(zip(frame["item"], frame["human"], strict=True)), selected_by=["judge", "cat"])
    lab = frame.dropna(subset=["human"]).assign(inclusion=cells["inclusion"])
    for cat in CATS:
        rows, mine = lab[lab["cat"] == cat], frame[frame["cat"] == cat]
        passed, failed = rows[rows["judge"] == 1], rows[rows["judge"] == 0]
        assert table.loc[cat, "labelled_pass"] == len(passed) and table.loc[cat, "labelled_fail"] == len(failed)
        assert table.loc[cat, "ppv"] == pytest.approx(passed["human"].mean())
        assert table.loc[cat, "npv"] == pytest.approx(1 - failed["human"].mean())
        assert table.loc[cat, "pass_share"] == pytest.approx(mine["judge"].mean())
        w = 1 / rows["inclusion"]  # the Hajek rates of the rows weighted by their inclusion probabilities
        right = rows["human"] == 1
        sens = (w * right * rows["judge"]).sum() / (w * right).sum()
        spec = (w * ~right * (1 - rows["judge"])).sum() / (w * ~right).sum()
        assert table.loc[cat, "sensitivity"] == pytest.approx(sens)
        assert table.loc[cat, "specificity"] == pytest.approx(spec)
        for name in ("ppv", "npv", "sensitivity", "specificity", "agreement"):
            assert table.loc[cat, f"{name}_lower"] <= table.loc[cat, name] <= table.loc[cat, f"{name}_upper"]


def test_errors_name_the_argument():
    rows = pd.DataFrame({"human": [1.0, np.nan], "judge": [0.5, 1.0]})
    with pytest.raises(ValueError, match="judge='judge': the column must hold 0 or 1"):
        judge_calibration(rows, judge="judge")
    with pytest.raises(ValueError, match="human='nope' is not a column"):
        judge_calibration(rows, human="nope", judge="judge")


@pytest.mark.slow
def test_a_50_50_calibration_set_is_unbiased_with_its_inclusion_where_naive_ppi_is_not():
    """400 seeded pools of 1,500 answers in 3 categories, 100 labels chosen 50/50 by the verdict.

    Measured with 1,000 pools (the same seeds onward), bias per category (MC SE 0.002-0.003): the
    proxy estimate with the set's inclusion column -0.000, -0.003, -0.000; naive PPI +0.034,
    +0.054, +0.055; the proxy estimate without the inclusion column (labels read as a random sample
    within the category, so a category whose verdict cells do not pay falls back on the labels'
    mean) -0.007, -0.033, -0.053. Coverage of the judge's sensitivity interval 0.997-1.000, of
    its specificity 0.996-0.999, of its PPV 0.982-0.984.
    """
    reps = 400
    rng = np.random.default_rng(2026)
    est = {k: [] for k in ("weighted", "naive_ppi", "unweighted")}
    truth, sens_cover = [], []
    for _ in range(reps):
        pool = _pool(rng)
        frame = _calibration_set(rng, pool).assign(claim=1.0)
        truth.append(pool.groupby("cat")["truth"].mean())
        args = {"y_true": "human", "y_pred": "claim", "proxy": "judge", "strata": "cat", "metric": "accuracy"}
        est["weighted"].append(proxy_ci(frame, **args, design=Design(inclusion="inclusion")).table["rate"])
        est["unweighted"].append(proxy_ci(frame, **args).table["rate"])
        lab = frame.dropna(subset=["human"])
        rectifier = (lab["human"] - lab["judge"]).groupby(lab["cat"]).mean()
        est["naive_ppi"].append(frame.groupby("cat")["judge"].mean() + rectifier)
        table = judge_calibration(frame, judge="judge", strata="cat")
        real = pool[pool["truth"] == 1].groupby("cat")["judge"].mean()
        sens_cover.append((table["sensitivity_lower"] <= real) & (real <= table["sensitivity_upper"]))
    truth = pd.DataFrame(truth)
    for name, values in est.items():
        err = pd.DataFrame(values).reset_index(drop=True) - truth.reset_index(drop=True)
        bias, se = err.mean(), err.std() / np.sqrt(reps)
        if name == "weighted":
            assert (bias.abs() <= 2 * se).all(), (name, bias, se)
        elif name == "naive_ppi":
            assert (bias.abs() > 6 * se).all(), (name, bias, se)
        else:
            assert (bias.abs() > 4 * se).any(), (name, bias, se)
    assert (pd.DataFrame(sens_cover).mean() >= 0.95 - 0.02).all()
