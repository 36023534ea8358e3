"""Tests of bayeseval.estimate.proxy.proxy_ci: hand counts, ppi_py at large counts, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval import proxy_ci, tabulate
from bayeseval.estimate.proxy import ProxyCI
from tests.helpers import NA, _judged_pool, _pool, _small


def _frame():
    """Stratum a: 12 rows, 8 labelled; stratum b: 6 rows, 4 labelled (accuracy, binary)."""
    return pd.DataFrame(
        {
            "g": ["a"] * 12 + ["b"] * 6,
            "y_pred": [1] * 18,
            #        a: labelled 8 (judge 1,1,1,1,1,0,0,0), unlabelled 4 (judge 1,1,0,1)
            "judge": [1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1] + [1, 1, 0, 0, 1, 0],
            "y_true": [1, 1, 1, 1, 0, 0, 0, 1, NA, NA, NA, NA] + [1, 0, 1, 0, NA, NA],
        }
    )


def _hand_effective(s, n, w):
    def v(s_, n_):
        r = (s_ + 0.5) / (n_ + 1)
        return r * (1 - r) / n_

    return sum(n) * v(sum(s), sum(n)) / sum(wc**2 * v(sc, nc) for sc, nc, wc in zip(s, n, w, strict=True))


def _ipw_pool(size=10_000, seed=11):
    """A pool where a hidden feature drives both the error and the chance of being labelled."""
    rng = np.random.default_rng(seed)
    hidden = rng.random(size) < 0.4
    right = rng.random(size) < np.where(hidden, 0.6, 0.9)
    judge = np.where(rng.random(size) < 0.85, right, ~right)
    pi = np.where(hidden, 0.15, 0.03)  # labels sent where the hidden feature is on
    return right, judge.astype(int), pi


def _ipw_runs(repeats, seed=0):
    right, judge, pi = _ipw_pool()
    truth = right.mean()
    rng = np.random.default_rng(seed)
    shares = np.bincount(judge) / len(judge)
    est, plain, covered = [], [], []
    base = pd.DataFrame({"p": 1, "j": judge, "pi": pi})
    for _ in range(repeats):
        keep = rng.random(len(pi)) < pi  # Poisson sampling with the known probabilities
        df = base.assign(y=np.where(keep, right.astype(float), np.nan))
        row = proxy_ci(df, y_true="y", y_pred="p", proxy="j", metric="accuracy", design={"inclusion": "pi"}).table.loc[
            "all"
        ]
        est.append(row["rate"])
        covered.append(row["lower"] <= truth <= row["upper"])
        # the post-stratified estimate that ignores the design
        plain.append(sum(shares[c] * right[keep & (judge == c)].mean() for c in (0, 1)))
    return truth, np.array(est), np.array(plain), np.array(covered)


def test_hand_count_two_strata():
    res = proxy_ci(_frame(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", metric="accuracy")
    a = res.table.loc["a"]
    # stratum a, by hand: judge says right on 8 of 12 pool rows; labelled: 5 in the judge-1
    # cell with 4 right, 3 in the judge-0 cell with 1 right
    assert (a["trials"], a["pool_trials"], a["cells"]) == (8, 12, 2)
    assert a["agreement"] == pytest.approx(6 / 8)  # 4 of 5 and 2 of 3 agree
    ps = 8 / 12 * 4 / 5 + 4 / 12 * 1 / 3
    eff = _hand_effective([1, 4], [3, 5], [4 / 12, 8 / 12])
    assert a["effective_labels"] == pytest.approx(eff)
    if a["proxy_used"]:
        assert a["rate"] == pytest.approx(ps)
    else:  # labels-only: 5 right of 8 (Clopper-Pearson, the default)
        lo, hi = proportion_confint(5, 8, alpha=0.05, method="beta")
        assert (a["rate"], a["lower"], a["upper"]) == pytest.approx((5 / 8, lo, hi))
    assert bool(a["proxy_used"]) == (eff * 0.8 > 8)
    b = res.table.loc["b"]
    # stratum b: 4 labels in cells of 2 and 2 -> merged (fewer than 3): labels-only 2 of 4
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="beta")
    assert (b["trials"], b["cells"], bool(b["proxy_used"])) == (4, 1, False)
    assert (b["rate"], b["lower"], b["upper"]) == pytest.approx((0.5, lo, hi))


def test_error_rate_is_one_minus_accuracy():
    df, _ = _judged_pool(size=5000, labelled=200)
    acc = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge_label", metric="accuracy")
    err = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge_label")
    a, e = acc.table.loc["all"], err.table.loc["all"]
    assert e["rate"] == pytest.approx(1 - a["rate"])
    assert (e["lower"], e["upper"]) == pytest.approx((1 - a["upper"], 1 - a["lower"]))


def test_precision_counts_only_predicted_positives():
    df = pd.DataFrame(
        {
            "y_pred": [1, 1, 1, 1, 1, 1, 0, 0],
            "judge": [1, 1, 1, 0, 0, 1, 1, 1],
            "y_true": [1, 1, 0, 0, NA, NA, 1, NA],
        }
    )
    row = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge", metric="precision").table.loc["all"]
    # trials: the 6 predicted positives; 4 labelled, 2 true positives
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="beta")
    assert (row["pool_trials"], row["trials"]) == (6, 4)
    assert row["agreement"] == pytest.approx(3 / 4)
    assert (row["rate"], row["lower"], row["upper"]) == pytest.approx((0.5, lo, hi))


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
    assert row["rate"] == pytest.approx(float(np.dot(shares, rates)), abs=1e-12)


def test_result_protocol():
    res = proxy_ci(_frame(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g")
    assert isinstance(res, ProxyCI)
    frame = res.to_frame()
    frame.loc["a", "rate"] = -1.0
    assert res.table.loc["a", "rate"] != -1.0
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


@pytest.mark.slow
def test_inclusion_weighting_is_unbiased_and_covers():
    truth, est, plain, covered = _ipw_runs(2000)
    se = est.std(ddof=1) / math.sqrt(len(est))
    assert abs(est.mean() - truth) < 4 * se  # unbiased within 4 standard errors of the mean
    assert abs(plain.mean() - truth) > 10 * se  # the unweighted estimate is not: the test has power
    # asymptotic interval: measured 0.96 here (Monte Carlo SE about 0.005)
    assert covered.mean() >= 0.94


def test_inclusion_weighting_is_unbiased_quick():
    truth, est, plain, _ = _ipw_runs(150, seed=1)
    se = est.std(ddof=1) / math.sqrt(len(est))
    assert abs(est.mean() - truth) < 4 * se
    assert plain.mean() < truth - 4 * se


def test_equal_inclusion_probabilities_give_the_unweighted_cells_interval():
    df = _pool(size=3000, seed=2).assign(pi=lambda d: d["g"].map({"a": 0.1, "b": 0.2, "c": 0.05}))
    a = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge", strata="g").table
    b = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", design={"inclusion": "pi"}).table
    assert b["proxy_used"].all()  # with inclusion probabilities the cells are always read
    used = a["proxy_used"]
    assert used.any()
    pd.testing.assert_frame_equal(a[used], b[used])


def test_hajek_cell_rates_by_hand():
    # one stratum, one cell of labels (a useless constant proxy): the Hajek rate
    df = pd.DataFrame({"y": [1, 0, 1, 1, NA, NA], "p": 1, "j": 1, "pi": [0.5, 0.25, 0.5, 1.0, 0.5, 0.5]})
    row = proxy_ci(df, y_true="y", y_pred="p", proxy="j", metric="accuracy", design={"inclusion": "pi"}).table.loc[
        "all"
    ]
    w = 1 / np.array([0.5, 0.25, 0.5, 1.0])
    y = np.array([1, 0, 1, 1])
    assert row["rate"] == pytest.approx((w * y).sum() / w.sum())


def test_proxy_ci_takes_proxy_counts():
    pc = tabulate(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", metric="accuracy")
    a = proxy_ci(pc).table
    b = proxy_ci(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", metric="accuracy").table
    pd.testing.assert_frame_equal(a, b)
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="beta")  # stratum b: labels only
    assert (a.loc["b", "lower"], a.loc["b", "upper"]) == pytest.approx((lo, hi))
    with pytest.raises(TypeError, match="ProxyCounts"):
        proxy_ci(pc, proxy="judge")


def _cp(s, n, level=0.95):
    """Clopper-Pearson limits from SciPy's beta quantiles."""
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = beta.ppf(a, s, n - s + 1) if s > 0 else 0.0
    hi = beta.ppf(1 - a, s + 1, n - s) if s < n else 1.0
    return lo, hi


def test_equal_inclusion_probabilities_keep_the_cells_where_the_proxy_does_not_pay():
    rng = np.random.default_rng(8)
    size = 4000
    g = np.where(np.arange(size) < size // 2, "good", "useless")
    y_pred = np.ones(size, dtype=int)
    right = rng.random(size) < 0.8
    judge_right = rng.random(size) < np.where(g == "good", 0.95, 0.5)
    df = pd.DataFrame(
        {
            "g": g,
            "y_pred": y_pred,
            "judge": np.where(judge_right, right, ~right).astype(int),
            "y_true": np.where(rng.random(size) < 0.04, right, np.nan),
            "pi": np.where(g == "good", 0.04, 0.02),
        }
    )
    args = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "strata": "g", "metric": "accuracy"}
    plain = proxy_ci(df, **args).table
    weighted = proxy_ci(df, **args, design={"inclusion": "pi"}).table
    assert plain.loc["good", "proxy_used"] and not plain.loc["useless", "proxy_used"]
    # where the proxy pays, equal probabilities give exactly the interval without inclusion
    pd.testing.assert_series_equal(plain.loc["good"], weighted.loc["good"])
    # where it does not, the interval without inclusion is the labels-only Clopper-Pearson one ...
    part = df[(df["g"] == "useless") & df["y_true"].notna()]
    s, n = int((part["y_true"] == 1).sum()), len(part)
    assert plain.loc["useless", ["rate", "lower", "upper"]].tolist() == pytest.approx([s / n, *_cp(s, n)])
    # ... and the one with inclusion is still the post-stratified cells' MOVER interval
    full = df[df["g"] == "useless"]
    est, lo2, hi2 = 0.0, 0.0, 0.0
    for c in (0, 1):  # both cells hold well over three labels: no merging
        sc = int(((part["judge"] == c) & (part["y_true"] == 1)).sum())
        nc = int((part["judge"] == c).sum())
        w = float((full["judge"] == c).mean())
        lo, hi = _cp(sc, nc)
        est += w * sc / nc
        lo2 += w**2 * (sc / nc - lo) ** 2
        hi2 += w**2 * (hi - sc / nc) ** 2
    row = weighted.loc["useless"]
    assert bool(row["proxy_used"])
    assert [row["rate"], row["lower"], row["upper"]] == pytest.approx(
        [est, est - math.sqrt(lo2), est + math.sqrt(hi2)], rel=1e-9
    )
    assert row["upper"] - row["lower"] != pytest.approx(plain.loc["useless", "upper"] - plain.loc["useless", "lower"])


def test_proxy_ci_refuses_a_sentinel_and_estimates_once_it_is_missing():
    rng = np.random.default_rng(12)
    size = 5000
    y_pred = rng.integers(0, 2, size)
    truth = np.where(rng.random(size) < 0.89, y_pred, 1 - y_pred)
    judge = np.where(rng.random(size) < 0.9, truth, 1 - truth)
    labelled = rng.random(size) < 0.06
    df = pd.DataFrame({"y_pred": y_pred, "judge": judge, "y_true": np.where(labelled, truth, -1)})
    args = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "metric": "accuracy"}
    with pytest.raises(ValueError, match=rf"holds -1 in {int((~labelled).sum())} rows.*missing value \(NaN"):
        proxy_ci(df, **args)
    row = proxy_ci(df.replace({"y_true": {-1: np.nan}}), **args).table.loc["all"]
    # the post-stratified estimate by hand, and the pool's true accuracy inside the interval
    cell = judge == y_pred
    right = truth == y_pred
    hand = sum(
        cell_share * right[labelled & (cell == c)].mean()
        for c, cell_share in ((True, cell.mean()), (False, 1 - cell.mean()))
    )
    assert row["rate"] == pytest.approx(hand, rel=1e-12)
    assert row["lower"] <= right.mean() <= row["upper"]
    # declared, -1 is a class: every row labelled, the estimate the plain share of right rows
    declared = proxy_ci(df, **args, label_set=[-1, 0, 1]).table.loc["all"]
    assert declared["trials"] == size and declared["rate"] == pytest.approx((df["y_true"] == y_pred).mean())


@pytest.mark.parametrize("entry", ["evaluate", "audit"])
def test_every_row_entry_point_runs_the_proxy_checks(entry):
    import bayeseval as be

    def run(d, label_set=None):
        if entry == "evaluate":  # the label set travels with the proxy column
            proxy = "judge" if label_set is None else be.Proxy("judge", label_set=label_set)
            return be.evaluate(d, y_true="y_true", y_pred="y_pred", proxy=proxy, strata="g", metric="accuracy")
        kw = {} if label_set is None else {"label_set": label_set}
        return be.fairness.audit(
            d, y_true="y_true", y_pred="y_pred", groups="g", proxy="judge", metrics=["ppv"], pos_label=1, **kw
        )

    df = _frame().assign(judge=lambda d: d["judge"].map({1: "yes", 0: "no"}))
    with pytest.raises(ValueError, match=r"proxy column 'judge' holds values .*'no', 'yes'"):
        run(df)
    df = _frame().assign(y_true=lambda d: d["y_true"].fillna(-1))
    with pytest.raises(ValueError, match=r"y_true column 'y_true' holds -1\.0 in 6 rows"):
        run(df)
    # declared, -1 is a class: every row is labelled (18 rows; the audit's ppv trials are the
    # predicted positives, every row here)
    table = run(df, label_set=[-1, 0, 1]).table
    assert int(table["trials"].sum()) == 18
    plain = be.evaluate if entry == "evaluate" else be.fairness.audit
    where = {"strata": "g"} if entry == "evaluate" else {"groups": "g"}
    refused = (
        "no longer takes label_set=; pass proxy=Proxy"
        if entry == "evaluate"
        else "label_set declares .* give proxy too"
    )
    with pytest.raises(TypeError, match=refused):
        plain(_frame().fillna(0), y_true="y_true", y_pred="y_pred", label_set=[0, 1], **where)
