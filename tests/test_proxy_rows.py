"""proxy= where rows are read: tabulate, evaluate, audit and the command line; inclusion=.

References: exact enumeration of every labelled table (coverage), hand-computed
post-stratified estimates, pandas' qcut (score cells), and seeded simulations with stated
tolerances (inverse-probability weighting, audit verdicts on data whose truth is known).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from bayeseval import evaluate, proxy_ci, tabulate
from bayeseval._backends.pandas_backend import PandasBackend
from bayeseval.cli.main import main
from bayeseval.counts import ProxyCounts
from bayeseval.counts.proxy import tabulate_proxy
from bayeseval.fairness import audit

NA = np.nan


def _small():
    """Stratum a: 12 rows, 8 labelled; stratum b: 6 rows, 4 labelled (accuracy, binary)."""
    return pd.DataFrame({
        "g": ["a"] * 12 + ["b"] * 6,
        "y_pred": [1] * 18,
        "judge": [1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1] + [1, 1, 0, 0, 1, 0],
        "y_true": [1, 1, 1, 1, 0, 0, 0, 1, NA, NA, NA, NA] + [1, 0, 1, 0, NA, NA],
    })


# -- tabulate --------------------------------------------------------------------------------
def test_tabulate_label_proxy_counts_by_hand():
    pc = tabulate(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g",
                  metric="accuracy")
    assert isinstance(pc, ProxyCounts) and pc.proxy_kind == "label"
    t = pc.table
    # stratum a: judge 1 on 8 rows (5 labelled, 4 right), judge 0 on 4 rows (3 labelled, 1 right)
    assert t.loc[("a", 1)].tolist() == [4, 5, 8]
    assert t.loc[("a", 0)].tolist() == [1, 3, 4]
    # stratum b: judge 1 on 3 rows (2 labelled, 1 right), judge 0 on 3 rows (2 labelled, 1 right)
    assert t.loc[("b", 1)].tolist() == [1, 2, 3]
    assert t.loc[("b", 0)].tolist() == [1, 2, 3]
    assert "Counts per stratum and proxy cell" in pc._repr_html_()


def _pool(size=4000, seed=0, labelled=0.1):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size)
    score = rng.random(size)
    y_pred = rng.integers(0, 2, size)
    right = rng.random(size) < 0.5 + 0.45 * score
    df = pd.DataFrame({"g": g, "score": score, "y_pred": y_pred,
                       "judge": np.where(rng.random(size) < 0.85, np.where(right, y_pred, 1 - y_pred),
                                         1 - y_pred),
                       "pi": np.where(score > 0.5, 0.05, 0.2)})
    df["y_true"] = np.where(right, y_pred, 1 - y_pred).astype(float)
    df.loc[rng.random(size) > labelled, "y_true"] = np.nan
    return df


def test_tabulate_score_cells_are_quantile_bins_per_stratum():
    df = _pool()
    pc = tabulate(df, y_true="y_true", y_pred="y_pred", proxy="score", strata="g")
    assert pc.proxy_kind == "score"
    for g, part in df.groupby("g"):
        cells = pd.qcut(part["score"], 5, labels=False)  # equal-count bins over the stratum
        pool = np.bincount(cells, minlength=5)
        lab = part["y_true"].notna().to_numpy()
        err = (part["y_true"] != part["y_pred"]).to_numpy() & lab
        assert pc.table.loc[g, "pool"].tolist() == pool.tolist()
        assert pc.table.loc[g, "labelled"].tolist() == np.bincount(cells[lab], minlength=5).tolist()
        assert pc.table.loc[g, "successes"].tolist() == np.bincount(cells[err], minlength=5).tolist()


@pytest.mark.parametrize("proxy", ["judge", "score"])
def test_tabulate_duckdb_equals_pandas(proxy):
    import duckdb
    df = _pool(size=3000, seed=1)
    a = tabulate(df, y_true="y_true", y_pred="y_pred", proxy=proxy, strata="g", inclusion="pi")
    b = tabulate(duckdb.from_df(df), y_true="y_true", y_pred="y_pred", proxy=proxy, strata="g",
                 inclusion="pi")
    pd.testing.assert_frame_equal(a.table, b.table)
    lab = df[df["y_true"].notna()]
    assert a.table["ipw_labelled"].sum() == pytest.approx((1 / lab["pi"]).sum())
    assert a.table["ipw2_labelled"].sum() == pytest.approx((1 / lab["pi"] ** 2).sum())


def test_missing_labels_without_proxy_stay_an_error():
    with pytest.raises(ValueError, match=r"y_true column 'y_true' has missing labels in 6 rows.*proxy="):
        tabulate(_small(), y_true="y_true", y_pred="y_pred", strata="g")
    with pytest.raises(ValueError, match="missing labels"):
        evaluate(_small(), y_true="y_true", y_pred="y_pred", strata="g", random_seed=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"metric": "recall"}, ValueError, r"metric 'recall' does not take a proxy.*'error_rate'"),
        ({"proxy": "nope"}, ValueError, "proxy column 'nope'"),
        ({"proxy": 3}, TypeError, "proxy must be a column name"),
        ({"proxy": None, "inclusion": "judge"}, ValueError, "inclusion applies"),
        ({"weights": {"a": 0.5, "b": 0.5}}, ValueError, "weights"),
    ],
)
def test_tabulate_bad_proxy_input(kwargs, error, match):
    args = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "strata": "g", **kwargs}
    with pytest.raises(error, match=match):
        tabulate(_small(), **args)


def test_inclusion_outside_zero_one_is_refused():
    df = _small().assign(pi=0.5)
    df.loc[0, "pi"] = 0.0
    with pytest.raises(ValueError, match=r"inclusion column 'pi'.*1 labelled rows"):
        tabulate(df, y_true="y_true", y_pred="y_pred", proxy="judge", inclusion="pi")


def test_missing_proxy_value_is_refused():
    df = _small().astype({"judge": float})
    df.loc[3, "judge"] = np.nan
    with pytest.raises(ValueError, match=r"proxy column 'judge' has missing values in 1 row"):
        tabulate(df, y_true="y_true", y_pred="y_pred", proxy="judge")


def test_a_back_end_without_proxy_cells_raises_type_error():
    class NoProxy(PandasBackend):
        engine = "spark"

        def proxy_cells(self, *args, **kwargs):
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"proxy='judge' is not supported for spark data"):
        tabulate_proxy(NoProxy(_small()), y_true="y_true", y_pred="y_pred", proxy="judge",
                       strata=None, metric="accuracy", pos_label=None, inclusion=None)


# -- evaluate --------------------------------------------------------------------------------
def test_evaluate_point_estimate_is_the_hand_post_stratified_estimate():
    rng = np.random.default_rng(5)
    size = 3000
    right = rng.random(size) < 0.8
    judge = np.where(rng.random(size) < 0.9, right, ~right)
    df = pd.DataFrame({"y_pred": 1, "judge": judge.astype(int), "y_true": right.astype(float)})
    keep = rng.random(size) < 0.05
    df.loc[~keep, "y_true"] = np.nan
    rep = evaluate(df, y_true="y_true", y_pred="y_pred", proxy="judge", metric="accuracy",
                   random_seed=0)
    row = rep.table.loc["all"]
    # by hand: cell c = the judge's verdict; share N_c / N times the labelled rate in the cell
    hand = sum(np.mean(judge == c) * right[keep & (judge == c)].mean() for c in (0, 1))
    assert bool(row["proxy_used"])
    assert row["rate"] == pytest.approx(hand, abs=1e-12)
    assert (row["successes"], row["trials"], row["pool_trials"]) == (right[keep].sum(), keep.sum(), size)
    assert row["agreement"] == pytest.approx(np.mean(judge[keep] == right[keep]))
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx(hand, abs=1e-12)
    assert row["lower"] < hand < row["upper"]


def test_evaluate_overall_and_reweighted_by_hand():
    df = _pool(size=3000, seed=3)
    rep = evaluate(df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge",
                   weights={"a": 0.5, "b": 0.3, "c": 0.2}, random_seed=0)
    t = rep.table
    shares = df["g"].value_counts(normalize=True).sort_index()
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx((shares * t["rate"]).sum())
    w = pd.Series({"a": 0.5, "b": 0.3, "c": 0.2})
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx((w * t["rate"]).sum())
    # MOVER: lower end from the strata's lower distances (Zou and Donner 2008)
    lo = (w * t["rate"]).sum() - math.sqrt(((w * (t["rate"] - t["lower"])) ** 2).sum())
    assert rep.overall.loc["reweighted", "lower"] == pytest.approx(lo)
    assert rep.proxy is not None and "effective_labels" in rep.to_frame().columns


def test_evaluate_refuses_proxy_with_metrics_whose_trials_need_the_truth():
    with pytest.raises(ValueError, match=r"metric 'recall' does not take a proxy"):
        evaluate(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", metric="recall",
                 random_seed=0)


def _tables(n):
    """Every labelled table (n0, s0, n1, s1) of n labels over a binary proxy's two cells."""
    return np.array([(n0, s0, n - n0, s1) for n0 in range(n + 1) for s0 in range(n0 + 1)
                     for s1 in range(n - n0 + 1)])


def _enumeration_frame(tabs, pool=(30, 70)):
    """One stratum per table: a pool of 30 rows in cell 0 and 70 in cell 1, labels as given."""
    rows = sum(pool)
    k = len(tabs)
    judge = np.tile(np.r_[np.zeros(pool[0], int), np.ones(pool[1], int)], k)
    pos = np.tile(np.r_[np.arange(pool[0]), np.arange(pool[1])], k)
    n0, s0, n1, s1 = (np.repeat(tabs[:, i], rows) for i in range(4))
    labelled = np.where(judge == 0, pos < n0, pos < n1)
    right = np.where(judge == 0, pos < s0, pos < s1)
    return pd.DataFrame({"s": np.repeat(np.arange(k), rows), "p": 1, "j": judge,
                         "y": np.where(labelled, right.astype(float), np.nan)})


def _coverage(n, rates, level=0.95):
    """Exact coverage of evaluate's per-stratum proxy interval: labels fall in the cells with
    the pool shares (0.3, 0.7), successes within a cell are binomial."""
    tabs = _tables(n)
    rep = evaluate(_enumeration_frame(tabs), y_true="y", y_pred="p", strata="s", proxy="j",
                   metric="accuracy", level=level, random_seed=0)
    lo, hi = rep.table["lower"].to_numpy(), rep.table["upper"].to_numpy()
    n0, s0, n1, s1 = tabs.T
    out = {}
    for rate in rates:
        d = 0.9 * min(rate / 0.7, (1 - rate) / 0.3)  # an informative proxy: cell rates apart
        p0, p1 = rate - 0.7 * d, rate + 0.3 * d
        prob = (binom.pmf(n0, n, 0.3) * binom.pmf(s0, n0, p0) * binom.pmf(s1, n1, p1))
        assert prob.sum() == pytest.approx(1.0)
        out[rate] = float(prob[(lo <= rate + 1e-12) & (rate - 1e-12 <= hi)].sum())
    return out, rep


RATES = (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98)


def test_evaluate_proxy_interval_exact_coverage_10_labels():
    cover, rep = _coverage(10, RATES)
    assert min(cover.values()) >= 0.95, cover
    assert bool(rep.table["proxy_used"].any())  # the proxy's interval is among those enumerated


@pytest.mark.slow
@pytest.mark.parametrize("n", [20, 30])
def test_evaluate_proxy_interval_exact_coverage_20_30_labels(n):
    cover, _ = _coverage(n, RATES)
    assert min(cover.values()) >= 0.95, cover


def test_evaluate_average_guarantee_reads_pooled_or_the_proxy_interval():
    df = _pool(size=3000, seed=4)
    stratum = evaluate(df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge", random_seed=0)
    average = evaluate(df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge",
                       guarantee="average", random_seed=0)
    own = average.table["read"] == "proxy"
    for col in ("lower", "upper"):
        assert np.allclose(average.table.loc[own, col], stratum.table.loc[own, col])
        assert np.allclose(average.table.loc[~own, col], average.table.loc[~own, f"pooled_{col}"])


def test_evaluate_target_counts_labels_at_the_effective_rate():
    df = _pool(size=3000, seed=6)
    rep = evaluate(df, y_true="y_true", y_pred="y_pred", strata="g", proxy="judge",
                   target_halfwidth=0.05, random_seed=0)
    from bayeseval import sample_size

    for k, row in rep.table.iterrows():
        eff = rep.counts.trials.loc[k]
        need = sample_size(halfwidth=0.05, rate=float(row["rate"]), level=0.95, method="clopper_pearson")
        per_label = max(eff / row["trials"], 1.0)
        assert row["extra_needed"] == math.ceil(max(need - eff, 0) / per_label)


# -- inclusion probabilities -----------------------------------------------------------------
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
        row = proxy_ci(df, y_true="y", y_pred="p", proxy="j", metric="accuracy",
                       inclusion="pi").table.loc["all"]
        est.append(row["estimate"])
        covered.append(row["lower"] <= truth <= row["upper"])
        # the post-stratified estimate that ignores the design
        plain.append(sum(shares[c] * right[keep & (judge == c)].mean() for c in (0, 1)))
    return truth, np.array(est), np.array(plain), np.array(covered)


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
    b = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", inclusion="pi").table
    assert b["proxy_used"].all()  # with inclusion probabilities the cells are always read
    used = a["proxy_used"]
    assert used.any()
    pd.testing.assert_frame_equal(a[used], b[used])


def test_hajek_cell_rates_by_hand():
    # one stratum, one cell of labels (a useless constant proxy): the Hajek rate
    df = pd.DataFrame({"y": [1, 0, 1, 1, NA, NA], "p": 1, "j": 1, "pi": [0.5, 0.25, 0.5, 1.0, 0.5, 0.5]})
    row = proxy_ci(df, y_true="y", y_pred="p", proxy="j", metric="accuracy", inclusion="pi").table.loc["all"]
    w = 1 / np.array([0.5, 0.25, 0.5, 1.0])
    y = np.array([1, 0, 1, 1])
    assert row["estimate"] == pytest.approx((w * y).sum() / w.sum())


# -- audit -----------------------------------------------------------------------------------
def _audit_pool(ppv_b, size=30_000, seed=7):
    """Two groups whose predictive parity gap is known (PPV 0.9 in a, ``ppv_b`` in b)."""
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(size) < 0.5, "a", "b")
    y_pred = (rng.random(size) < 0.5).astype(int)
    ppv = np.where(g == "a", 0.9, ppv_b)
    y = np.where(y_pred == 1, rng.random(size) < ppv, rng.random(size) < 0.2).astype(int)
    judge = np.where(rng.random(size) < 0.9, y, 1 - y)
    df = pd.DataFrame({"g": g, "p": y_pred, "j": judge, "y": y.astype(float)})
    df.loc[rng.random(size) > 0.04, "y"] = np.nan  # about 300 labelled predicted positives a group
    return df


def test_audit_with_a_proxy_finds_a_known_gap_and_a_known_parity():
    outside = audit(_audit_pool(0.6), y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"],
                    tolerance=0.1, random_seed=0)
    assert outside.verdicts["verdict"].tolist() == ["outside"]
    assert outside.verdicts["method"].tolist() == ["bonferroni"]
    row = outside.verdicts.iloc[0]
    assert row["lower"] < 0.3 < row["upper"]  # the true gap
    within = audit(_audit_pool(0.9), y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"],
                   tolerance=0.15, random_seed=0)
    assert within.verdicts["verdict"].tolist() == ["within tolerance"]
    groups = within.groups.set_index("group")
    ref = proxy_ci(_audit_pool(0.9), y_true="y", y_pred="p", proxy="j", strata="g",
                   metric="precision").table
    assert np.allclose(groups["rate"], ref["estimate"]) and np.allclose(groups["lower"], ref["lower"])
    assert (groups["labelled"] == ref["labelled"]).all()


def test_audit_with_a_proxy_differences_are_mover_of_proxy_intervals():
    df = _audit_pool(0.7)
    res = audit(df, y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], reference="a",
                random_seed=0)
    ref = proxy_ci(df, y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table
    a, b = ref.loc["a"], ref.loc["b"]
    diff = res.disparities.query("measure == 'difference'").iloc[0]
    d = b["estimate"] - a["estimate"]
    lo = d - math.hypot(b["estimate"] - b["lower"], a["upper"] - a["estimate"])
    assert diff["estimate"] == pytest.approx(d) and diff["lower"] == pytest.approx(lo)
    assert diff["method"] == "mover"


def test_audit_labels_needed_counts_labels_with_the_proxy():
    df = _audit_pool(0.8, size=20_000)
    res = audit(df, y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], tolerance=0.12,
                random_seed=0)
    if res.verdicts["verdict"].iloc[0] != "undecided":
        pytest.skip("this seed decided the criterion")
    from bayeseval import sample_size
    from bayeseval._kernels.disparity import bonferroni_level

    groups = res.groups.set_index("group")
    row = res.verdicts.iloc[0]
    half = abs(row["tolerance"] - row["gap"]) / 2
    for _, need in res.labels_needed.iterrows():
        g = groups.loc[need["group"]]
        full = sample_size(halfwidth=half, rate=float(g["rate"]), level=bonferroni_level(row["level"], 2),
                           method="clopper_pearson")
        per_label = max(g["trials"] / g["labelled"], 1.0)
        assert need["extra_trials"] == math.ceil(max(full - g["trials"], 0) / per_label)
        assert need["trials"] == g["labelled"]


def test_audit_refuses_proxy_for_metrics_read_on_true_positives():
    with pytest.raises(ValueError, match=r"metrics \['tpr'\] do not take a proxy"):
        audit(_audit_pool(0.7, size=2000), y_true="y", y_pred="p", groups="g", proxy="j",
              metrics=["tpr", "ppv"])


def test_audit_guarantee_stratum_is_the_adaptive_interval_and_average_the_read_rule():
    from bayeseval import proportion_ci
    from bayeseval.models import fit_hierarchical

    rng = np.random.default_rng(2)
    g = rng.choice(list("abcdef"), 3000)
    y = rng.integers(0, 2, 3000)
    flip = rng.random(3000) < np.where(g == "f", 0.45, 0.15)
    df = pd.DataFrame({"g": g, "y": y, "p": np.where(flip, 1 - y, y)})
    stratum = audit(df, y_true="y", y_pred="p", groups="g", metrics=["error_rate"], random_seed=0,
                    model="beta_binomial")
    t = stratum.groups.set_index("group")
    lo, hi = proportion_ci(t["successes"].to_numpy(), t["trials"].to_numpy(), method="adaptive")
    assert np.allclose(t["lower"], lo) and np.allclose(t["upper"], hi)
    average = audit(df, y_true="y", y_pred="p", groups="g", metrics=["error_rate"], random_seed=0,
                    model="beta_binomial", guarantee="average").groups.set_index("group")
    post = fit_hierarchical(t["successes"].to_numpy(), t["trials"].to_numpy(), strata=list(t.index),
                            random_seed=0)
    read = post.summary(read=True)["read"]
    assert (average["read"] == read.reindex(average.index)).all()
    assert average.loc["f", "read"] == "adaptive"  # the outlying group reads its own interval
    pooled = average["read"] == "pooled"
    assert np.allclose(average.loc[pooled, "lower"], average.loc[pooled, "pooled_lower"])
    assert np.allclose(average.loc["f", ["lower", "upper"]], t.loc["f", ["lower", "upper"]])


def test_evaluate_with_groups_and_proxy_audits_selection_rate_and_ppv():
    df = _audit_pool(0.6, size=8000)
    rep = evaluate(df, y_true="y", y_pred="p", strata="g", groups="g", proxy="j", metric="precision",
                   tolerance=0.1, random_seed=0)
    assert rep.audit.proxy == "j" and set(rep.audit.groups["metric"]) == {"selection_rate", "ppv"}


# -- command line ----------------------------------------------------------------------------
def test_cli_report_and_audit_with_proxy(tmp_path, capsys):
    df = _audit_pool(0.6, size=20_000)
    path = tmp_path / "pool.csv"
    df.to_csv(path, index=False)
    code = main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g", "--proxy", "j",
                 "--metric", "precision", "--json"])
    out = json.loads(capsys.readouterr().out)
    ref = proxy_ci(df, y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table
    assert code == 0
    rates = {r["stratum"]: r["rate"] for r in out["strata"]}
    assert rates == pytest.approx(ref["estimate"].to_dict())
    code = main(["audit", str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--proxy", "j",
                 "--metrics", "ppv", "--tolerance", "0.1", "--guarantee", "average", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # decided outside the tolerance
    assert {r["read"] for r in out["groups"]} <= {"pooled", "proxy"}
    code = main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "g"])
    assert code == 2 and "missing labels" in capsys.readouterr().err
    code = main(["audit", str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--proxy", "nope"])
    assert code == 2 and "--proxy column 'nope'" in capsys.readouterr().err


def test_proxy_ci_takes_proxy_counts():
    pc = tabulate(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g",
                  metric="accuracy")
    a = proxy_ci(pc).table
    b = proxy_ci(_small(), y_true="y_true", y_pred="y_pred", proxy="judge", strata="g",
                 metric="accuracy").table
    pd.testing.assert_frame_equal(a, b)
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="beta")  # stratum b: labels only
    assert (a.loc["b", "lower"], a.loc["b", "upper"]) == pytest.approx((lo, hi))
    with pytest.raises(TypeError, match="ProxyCounts"):
        proxy_ci(pc, proxy="judge")
