"""Tests of bayeseval.estimate.proxy.proxy_ci: hand counts, ppi_py at large counts, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval.estimate.proxy import ProxyCI, proxy_ci

NA = np.nan


def _frame():
    """Stratum a: 12 rows, 8 labelled; stratum b: 6 rows, 4 labelled (accuracy, binary)."""
    return pd.DataFrame({
        "g": ["a"] * 12 + ["b"] * 6,
        "y_pred": [1] * 18,
        #        a: labelled 8 (judge 1,1,1,1,1,0,0,0), unlabelled 4 (judge 1,1,0,1)
        "judge": [1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1] + [1, 1, 0, 0, 1, 0],
        "y_true": [1, 1, 1, 1, 0, 0, 0, 1, NA, NA, NA, NA] + [1, 0, 1, 0, NA, NA],
    })


def test_hand_count_two_strata():
    res = proxy_ci(_frame(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g",
                   metric="accuracy")
    a = res.table.loc["a"]
    # stratum a, by hand: judge says right on 8 of 12 pool rows; labelled: 5 in the judge-1
    # cell with 4 right, 3 in the judge-0 cell with 1 right
    assert (a["labelled"], a["trials"], a["cells"]) == (8, 12, 2)
    assert a["agreement"] == pytest.approx(6 / 8)  # 4 of 5 and 2 of 3 agree
    ps = 8 / 12 * 4 / 5 + 4 / 12 * 1 / 3
    eff = _hand_effective([1, 4], [3, 5], [4 / 12, 8 / 12])
    assert a["effective_labels"] == pytest.approx(eff)
    if a["proxy_used"]:
        assert a["estimate"] == pytest.approx(ps)
    else:  # labels-only: 5 right of 8 (Clopper-Pearson, the default)
        lo, hi = proportion_confint(5, 8, alpha=0.05, method="beta")
        assert (a["estimate"], a["lower"], a["upper"]) == pytest.approx((5 / 8, lo, hi))
    assert bool(a["proxy_used"]) == (eff * 0.8 > 8)
    b = res.table.loc["b"]
    # stratum b: 4 labels in cells of 2 and 2 -> merged (fewer than 3): labels-only 2 of 4
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="beta")
    assert (b["labelled"], b["cells"], bool(b["proxy_used"])) == (4, 1, False)
    assert (b["estimate"], b["lower"], b["upper"]) == pytest.approx((0.5, lo, hi))


def _hand_effective(s, n, w):
    def v(s_, n_):
        r = (s_ + 0.5) / (n_ + 1)
        return r * (1 - r) / n_
    return sum(n) * v(sum(s), sum(n)) / sum(wc**2 * v(sc, nc) for sc, nc, wc in zip(s, n, w, strict=True))


def _judged_pool(size=60_000, labelled=3000, acc=0.75, judge_acc=0.9, seed=2):
    rng = np.random.default_rng(seed)
    right = rng.random(size) < acc
    judge = np.where(rng.random(size) < judge_acc, right, ~right)
    y_pred = rng.integers(0, 2, size)
    df = pd.DataFrame({"y_pred": y_pred, "judge_label": np.where(judge, y_pred, 1 - y_pred)})
    df["y_true"] = np.where(right, y_pred, 1 - y_pred).astype(float)
    keep = np.zeros(size, dtype=bool)
    keep[rng.choice(size, labelled, replace=False)] = True
    df.loc[~keep, "y_true"] = np.nan
    return df, keep


def test_label_proxy_agrees_with_ppi_mean_ci_at_large_counts():
    from ppi_py import ppi_mean_ci

    df, keep = _judged_pool()
    res = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge_label", metric="accuracy")
    row = res.table.loc["all"]
    y = (df["y_true"][keep] == df["y_pred"][keep]).to_numpy(float)
    z = (df["judge_label"] == df["y_pred"]).to_numpy(float)
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_mean_ci(y, z[keep], z[~keep], alpha=0.05))
    assert row["proxy_used"]
    assert row["estimate"] == pytest.approx((lo + hi) / 2, abs=2e-3)
    assert row["upper"] - row["lower"] == pytest.approx(hi - lo, rel=0.04)
    assert row["agreement"] == pytest.approx(np.mean(y == z[keep]))


def test_error_rate_is_one_minus_accuracy():
    df, _ = _judged_pool(size=5000, labelled=200)
    acc = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge_label", metric="accuracy")
    err = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge_label")
    a, e = acc.table.loc["all"], err.table.loc["all"]
    assert e["estimate"] == pytest.approx(1 - a["estimate"])
    assert (e["lower"], e["upper"]) == pytest.approx((1 - a["upper"], 1 - a["lower"]))


def test_precision_counts_only_predicted_positives():
    df = pd.DataFrame({
        "y_pred": [1, 1, 1, 1, 1, 1, 0, 0],
        "judge": [1, 1, 1, 0, 0, 1, 1, 1],
        "y_true": [1, 1, 0, 0, NA, NA, 1, NA],
    })
    row = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge",
                   metric="precision").table.loc["all"]
    # trials: the 6 predicted positives; 4 labelled, 2 true positives
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="beta")
    assert (row["trials"], row["labelled"]) == (6, 4)
    assert row["agreement"] == pytest.approx(3 / 4)
    assert (row["estimate"], row["lower"], row["upper"]) == pytest.approx((0.5, lo, hi))


def test_score_proxy_uses_quantile_cells():
    rng = np.random.default_rng(8)
    size = 4000
    score = rng.random(size)
    right = rng.random(size) < score  # a calibrated P(the prediction is right)
    df = pd.DataFrame({"y_pred": 1, "conf": score, "y_true": np.where(right, 1.0, 0.0)})
    keep = rng.random(size) < 0.1
    df.loc[~keep, "y_true"] = np.nan
    res = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="conf", metric="accuracy")
    row = res.table.loc["all"]
    cells = pd.qcut(score, 5, labels=False)
    shares = np.bincount(cells, minlength=5) / size
    rates = [right[keep & (cells == c)].mean() for c in range(5)]
    assert res.proxy_kind == "score" and row["cells"] == 5 and np.isnan(row["agreement"])
    assert row["proxy_used"]
    assert row["estimate"] == pytest.approx(float(np.dot(shares, rates)), abs=1e-12)


def test_result_protocol():
    res = proxy_ci(_frame(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g")
    assert isinstance(res, ProxyCI)
    frame = res.to_frame()
    frame.loc["a", "estimate"] = -1.0
    assert res.table.loc["a", "estimate"] != -1.0
    assert "Proxy-assisted intervals" in res._repr_html_() and "effective_labels" in repr(res)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"metric": "recall"}, ValueError, "recall"),
        ({"proxy": "nope"}, ValueError, "proxy column 'nope'"),
        ({"level": 1.5}, ValueError, "level"),
        ({"n_cells": 1}, ValueError, "n_cells"),
        ({"method": "magic"}, ValueError, "method"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", **kwargs}
    with pytest.raises(error, match=match):
        proxy_ci(_frame(), **args)


def test_missing_proxy_and_wrong_types():
    df = _frame()
    df.loc[3, "judge"] = np.nan
    with pytest.raises(ValueError, match="proxy column 'judge'"):
        proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge")
    with pytest.raises(TypeError, match="DataFrame"):
        proxy_ci(_frame().to_dict(), y_true="y_true", y_pred="y_pred", proxy="judge")
    df = _frame().assign(judge=["yes"] * 18)
    with pytest.raises(ValueError, match="neither labels"):
        proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge")
