"""Tests of ``compare_models(..., human=)``: a judge on every item, human labels on a few.

References: a hand computation of the cells' shares, means and estimate, and of the MOVER
combination of the per-group betting limits (``unit_ci``); the labels-only paired comparison
when every item is labelled; a seeded simulation against the truth of each dataset.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval._kernels.bounded_mean import unit_ci, units_ci
from bayeseval._kernels.proxy import mean_variance
from bayeseval.cli.main import main
from bayeseval.estimate import paired_proxy
from bayeseval.estimate.paired import compare_models
from bayeseval.io import read_inspect

DATA = "tests/io/data"


def _frame(ja, jb, ha, hb, strata=None) -> pd.DataFrame:
    n = len(ja)
    base = pd.DataFrame({"item": np.arange(n)})
    if strata is not None:
        base["category"] = strata
    return pd.concat(
        [base.assign(model="a", outcome=ja, human=ha), base.assign(model="b", outcome=jb, human=hb)],
        ignore_index=True,
    )


# judge cells (j_a, j_b): (0, 1) 2 items unlabelled; (0, 0) 4 items, 3 labelled d = 0, 0, 0;
# (1, 1) 8 items, 3 labelled d = 0, 0, -1; (1, 0) 6 items, 3 labelled d = 1, 1, 0
NAN = np.nan
TINY = pd.DataFrame(
    [(0, 1, NAN, NAN)] * 2
    + [(0, 0, 1, 1), (0, 0, 0, 0), (0, 0, 1, 1)]
    + [(0, 0, NAN, NAN)]
    + [(1, 1, 1, 1), (1, 1, 0, 0), (1, 1, 0, 1)]
    + [(1, 1, NAN, NAN)] * 5
    + [(1, 0, 1, 0), (1, 0, 1, 0), (1, 0, 1, 1)]
    + [(1, 0, NAN, NAN)] * 3,
    columns=["ja", "jb", "ha", "hb"],
)


def test_tiny_frame_matches_a_hand_computation():
    t = TINY
    assert len(t) == 20
    cell = paired_proxy.cell_of(t["ja"], t["jb"])
    z = ((t["ha"] - t["hb"] + 1) / 2).to_numpy()
    obs = pd.DataFrame({"key": 0, "block": 0, "cell": cell, "z": z})
    # labels per ordered cell [0, 3, 3, 3]: (0, 1) joins (0, 0); shares 6/20, 8/20, 6/20
    plan = paired_proxy.plan(obs, 1, [True])
    assert plan.group_share.tolist() == [0.3, 0.4, 0.3]
    assert plan.group_labels.tolist() == [3, 3, 3]
    est, lo, hi = paired_proxy.intervals(plan, 0.95)
    means = [0.0, -1 / 3, 2 / 3]  # the groups' mean d
    assert est[0] == pytest.approx(0.3 * 0 + 0.4 * (-1 / 3) + 0.3 * (2 / 3))
    # MOVER of the groups' betting limits on z = (d + 1)/2
    limits = [unit_ci([0.5], [1], [3]), unit_ci([0.5, 0.0], [1, 1], [2, 1]), unit_ci([1.0, 0.5], [1, 1], [2, 1])]
    w = np.array([0.3, 0.4, 0.3])
    r = np.array([(m + 1) / 2 for m in means])
    low = np.array([x[1] for x in limits])
    up = np.array([x[2] for x in limits])
    assert [x[0] for x in limits] == pytest.approx(r.tolist())
    z_est = (w * r).sum()
    assert lo[0] == pytest.approx(2 * (z_est - np.sqrt((w**2 * (r - low) ** 2).sum())) - 1)
    assert hi[0] == pytest.approx(2 * (z_est + np.sqrt((w**2 * (up - r) ** 2).sum())) - 1)
    # through compare_models: the variance rule decides between the cells and the labels only
    res = compare_models(_frame(t["ja"], t["jb"], t["ha"], t["hb"]), human="human", adjust="none", reference="b").table
    zl = z[~np.isnan(z)]
    v_labels = mean_variance(zl.sum(), (zl**2).sum(), zl.size)
    zg = [zl[:3], zl[3:6], zl[6:]]  # the labelled rows in group order
    v_cells = sum(wi**2 * mean_variance(g.sum(), (g**2).sum(), g.size) for wi, g in zip(w, zg, strict=True))
    uses = bool(v_cells < 0.8 * v_labels)
    assert bool(res["uses_proxy"].iloc[0]) is uses
    expected = est[0] if uses else 2 * zl.mean() - 1
    assert res["estimate"].iloc[0] == pytest.approx(expected)
    assert res["labelled"].iloc[0] == 9 and res["n_items"].iloc[0] == 20


def test_every_item_labelled_gives_the_labels_only_estimate():
    rng = np.random.default_rng(3)
    n = 300
    ha = (rng.random(n) < 0.8).astype(float)
    hb = (rng.random(n) < 0.6).astype(float)
    ja = np.where(rng.random(n) < 0.9, ha, 1 - ha)
    jb = np.where(rng.random(n) < 0.9, hb, 1 - hb)
    cat = rng.choice(["x", "y", "z"], n)
    frame = _frame(ja, jb, ha, hb, cat)
    ours = compare_models(frame, human="human", strata="category", reference="b").table.set_index("stratum")
    plain = compare_models(frame, outcome="human", strata="category", reference="b").table.set_index("stratum")
    assert np.allclose(ours["estimate"], plain.loc[ours.index, "estimate"], atol=1e-12)
    assert (ours["labelled"] == ours["n_items"]).all()


def test_a_one_row_family_is_separable_exactly_when_its_interval_excludes_zero():
    rng = np.random.default_rng(5)
    for shift in (0.0, 0.15, 0.3):
        n = 400
        ha = (rng.random(n) < 0.6 + shift).astype(float)
        hb = (rng.random(n) < 0.6).astype(float)
        ja = np.where(rng.random(n) < 0.92, ha, 1 - ha)
        jb = np.where(rng.random(n) < 0.92, hb, 1 - hb)
        lab = rng.random(n) < 0.4
        frame = _frame(ja, jb, np.where(lab, ha, np.nan), np.where(lab, hb, np.nan))
        row = compare_models(frame, human="human").table.iloc[0]
        excludes = row["lower"] > 0 or row["upper"] < 0
        assert bool(row["separable"]) is bool(excludes), (shift, row.to_dict())
        assert bool(row["p_value"] <= 0.05) is bool(excludes)


def test_leaderboard_reads_the_human_judged_accuracy():
    t = TINY
    res = compare_models(_frame(t["ja"], t["jb"], t["ha"], t["hb"]), human="human")
    board = res.leaderboard.set_index("model")["mean"]
    # model a: judge 0 on 6 items (3 labelled: 1, 0, 1), judge 1 on 14 (6 labelled: 1, 0, 0, 1, 1, 1);
    # shares 0.3 / 0.7; whether the cells pay is the single-model proxy path's rule
    from bayeseval._kernels.proxy import proxy_interval

    expected = float(proxy_interval([2, 4], [3, 6], [0.3, 0.7]).estimate)
    assert board["a"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"human": "nope"}, ValueError, "human column 'nope'"),
        ({"human": "text"}, TypeError, "human column 'text'"),
        ({"human": "wide"}, ValueError, "human column 'wide' must lie in"),
        ({"human": "human", "outcome": "graded"}, ValueError, "outcome column is the judge"),
        ({"human": "human", "design": {"cluster": "passage"}}, ValueError, "design cluster"),
    ],
)
def test_refusals_name_the_argument(kwargs, error, match):
    t = TINY
    frame = _frame(t["ja"], t["jb"], t["ha"], t["hb"])
    frame["text"] = "x"
    frame["wide"] = 2.0
    frame["graded"] = 0.5
    frame["passage"] = frame["item"] // 2
    with pytest.raises(error, match=match):
        compare_models(frame, **kwargs)


def test_epochs_with_human_labels_average_each_item_and_take_its_majority_verdict():
    t = TINY
    frame = _frame(t["ja"], t["jb"], t["ha"], t["hb"])
    one = compare_models(frame, human="human").table
    # every answer given twice: the same items, the same table
    twice = pd.concat([frame.assign(epoch=1), frame.assign(epoch=2)])
    got = compare_models(twice, human="human", design={"cluster": "item"}).table
    pd.testing.assert_frame_equal(got, one)
    # three epochs that differ: the hand-built observations (majority cells, mean human difference)
    rng = np.random.default_rng(4)
    n, e = 40, 3
    ja, jb = rng.integers(0, 2, (n, e)), rng.integers(0, 2, (n, e))
    ha = np.where(rng.random((n, e)) < 0.8, ja, 1 - ja).astype(float)
    hb = np.where(rng.random((n, e)) < 0.8, jb, 1 - jb).astype(float)
    ha[20:], hb[20:] = np.nan, np.nan
    rows = [
        (m, i, k, j[i, k], h[i, k]) for m, j, h in (("a", ja, ha), ("b", jb, hb)) for i in range(n) for k in range(e)
    ]
    epochs = pd.DataFrame(rows, columns=["model", "item", "epoch", "outcome", "human"])
    got = compare_models(epochs, human="human", design={"cluster": "item"}, adjust="none").table.iloc[0]
    cell = paired_proxy.cell_of(ja.mean(axis=1) >= 0.5, jb.mean(axis=1) >= 0.5)
    z = (ha.mean(axis=1) - hb.mean(axis=1) + 1) / 2
    obs = pd.DataFrame({"key": 0, "block": 0, "cell": cell, "z": z})
    est, lo, hi = paired_proxy.intervals(paired_proxy.plan(obs, 1, [False]), 0.95)
    assert (got["estimate"], got["lower"], got["upper"]) == pytest.approx((est[0], lo[0], hi[0]), abs=1e-12)
    assert got["labelled"] == 20 and got["n_items"] == 40
    # an item labelled on one of its answers only is refused; a cluster other than the item too
    epochs.loc[0, "human"] = np.nan
    with pytest.raises(ValueError, match="human column 'human' labels some answers of 1"):
        compare_models(epochs, human="human")
    assert compare_models(twice).family_size == 1  # without human, epochs are averaged as before


@pytest.mark.slow
def test_seeded_coverage_holds_where_the_judge_only_difference_fails():
    """One category of 200 items, model a's accuracy 0.65, b's 0.63; a judge agreeing 90% on
    a's answers and lenient on b's (passes 40% of its wrong answers); 120 labels at random.
    400 datasets: MC SE 0.011 at 0.95; ours must cover at >= 0.94 (level - 0.01), the
    judge-only difference covers far below (its bias is about -0.12)."""
    rng = np.random.default_rng(20261207)
    sets, n, labels = 400, 200, 120
    k = 1 / 0.3 - 1
    p = rng.beta(0.65 * k, 0.35 * k, size=(sets, n))
    q = 0.97 * np.where(rng.random((sets, n)) < 0.7, p, rng.beta(0.65 * k, 0.35 * k, size=(sets, n)))
    ha = (rng.random((sets, n)) < p).astype(float)
    hb = (rng.random((sets, n)) < q).astype(float)
    ja = np.where(rng.random((sets, n)) < 0.1, 1 - ha, ha)
    jb = np.where(rng.random((sets, n)) < np.where(hb == 1, 0.05, 0.4), 1 - hb, hb)
    lab = np.argsort(rng.random((sets, n)), axis=1) < labels
    key = np.repeat(np.arange(sets), n)
    z = np.where(lab, (ha - hb + 1) / 2, np.nan).ravel()
    obs = pd.DataFrame({"key": key, "block": key, "cell": paired_proxy.cell_of(ja.ravel(), jb.ravel()), "z": z})
    _, lo, hi = paired_proxy.intervals(paired_proxy.plan(obs, sets, np.zeros(sets, bool)), 0.95)
    truth = (ha - hb).mean(axis=1)
    coverage = np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12))
    assert coverage >= 0.94
    # the judge-only difference: compare_models without human (betting interval on the verdicts)
    zj = pd.DataFrame({"key": key, "unit_successes": ((ja - jb + 1) / 2).ravel(), "unit_trials": 1})
    hist = zj.groupby(["key", "unit_successes", "unit_trials"]).size().rename("units").reset_index()
    ci = units_ci(hist, "key", 0.95).sort_index()
    judge_lo, judge_hi = 2 * ci["lower"].to_numpy() - 1, 2 * ci["upper"].to_numpy() - 1
    assert np.mean((judge_lo <= truth) & (truth <= judge_hi)) < 0.5
    # dataset 0 through the public function gives the same interval
    frame = _frame(ja[0], jb[0], np.where(lab[0], ha[0], np.nan), np.where(lab[0], hb[0], np.nan))
    row = compare_models(frame, human="human", adjust="none", reference="b").table.iloc[0]
    assert row["lower"] == pytest.approx(lo[0]) and row["upper"] == pytest.approx(hi[0])


def test_command_line_labels_and_human_column(tmp_path, capsys):
    """Two Inspect logs, epoch 1, human labels on 4 of the 6 items joined by model and item."""
    records = read_inspect([f"{DATA}/inspect_model-a.eval", f"{DATA}/inspect_model-b.json"])
    frame = records.frame[records.frame["epoch"] == 1].drop(columns=["metadata.note"])
    items = sorted(frame["item"].astype(str).unique())[:4]
    labels = pd.DataFrame(
        [(m, i, (k + j) % 2) for j, m in enumerate(sorted(frame["model"].unique())) for k, i in enumerate(items)],
        columns=["model", "item", "label"],
    )
    labels_path = tmp_path / "labels.csv"
    labels.to_csv(labels_path, index=False)
    logs = [f"{DATA}/inspect_model-a.eval", f"{DATA}/inspect_model-b.json"]
    code = main(["compare", "--inspect", *logs, "--epoch", "1", "--labels", str(labels_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    got = pd.DataFrame(out["differences"])
    # the same through the function on a frame holding the human labels
    data = frame.astype({"item": str}).merge(labels.astype({"item": str}), on=["model", "item"], how="left")
    expected = compare_models(data.rename(columns={"label": "human"}), item=["task", "item"], human="human").table
    assert got["labelled"].tolist() == expected["labelled"].tolist() == [4]
    np.testing.assert_allclose(got[["estimate", "lower", "upper"]], expected[["estimate", "lower", "upper"]])
    # a data file with a --human column gives the same
    path = tmp_path / "answers.csv"
    data.rename(columns={"label": "human"}).to_csv(path, index=False)
    assert main(["compare", str(path), "--item", "task,item", "--human", "human", "--json"]) == 0
    again = pd.DataFrame(json.loads(capsys.readouterr().out)["differences"])
    np.testing.assert_allclose(again[["estimate", "lower", "upper"]], expected[["estimate", "lower", "upper"]])
    # refusals name the option
    assert main(["compare", "--inspect", *logs, "--labels", str(labels_path), "--labels-on", "item"]) == 2
    assert "--labels-on 'item' must name the model column" in capsys.readouterr().err
    assert main(["compare", "--inspect", *logs, "--labels", str(labels_path), "--selected-by", "outcome"]) == 2
    assert "--selected-by 'outcome' is not a model of" in capsys.readouterr().err
    # all epochs: the labels join every answer of an item, each item averaged (the function on the same frame)
    assert main(["compare", "--inspect", *logs, "--labels", str(labels_path), "--json"]) == 0
    epochs = pd.DataFrame(json.loads(capsys.readouterr().out)["differences"])
    every = records.frame.drop(columns=["metadata.note"]).astype({"item": str})
    every = every.merge(labels.astype({"item": str}), on=["model", "item"], how="left")
    want = compare_models(every.rename(columns={"label": "human"}), item=["task", "item"], human="human").table
    assert epochs["labelled"].tolist() == [4]
    np.testing.assert_allclose(epochs[["estimate", "lower", "upper"]], want[["estimate", "lower", "upper"]])


def test_a_stratum_without_labels_has_no_estimate_and_the_pooled_row_only_bounds():
    rng = np.random.default_rng(2)
    n = 120
    cat = np.repeat(["x", "y", "z"], 40)
    ha = (rng.random(n) < 0.8).astype(float)
    hb = (rng.random(n) < 0.6).astype(float)
    lab = (rng.random(n) < 0.5) & (cat != "z")
    frame = _frame(ha, hb, np.where(lab, ha, np.nan), np.where(lab, hb, np.nan), cat)
    res = compare_models(frame, strata="category", human="human", reference="b")
    table = res.table.set_index("stratum")
    assert np.isnan(table.loc["z", "estimate"]) and table.loc["z", ["lower", "upper"]].tolist() == [-1.0, 1.0]
    assert np.isnan(table.loc["(all)", "estimate"])
    # the pooled bounds: the labelled strata's cells with the unlabelled third at [-1, 1] (MOVER adds 1/3 each side)
    assert -1 < table.loc["(all)", "lower"] and table.loc["(all)", "upper"] < 1
    assert any("no human label in stratum(s) z" in note for note in res.notes)
    assert any("there is no estimate" in note for note in res.notes)


@pytest.mark.parametrize("adjust", ["bonferroni", "holm"])
def test_separable_rows_that_read_the_cells_agree_with_their_intervals(adjust):
    """Bonferroni: a row reading the cells is separable exactly when its interval excludes 0;
    Holm: at least those rows (its first step is Bonferroni's)."""
    rng = np.random.default_rng(11)
    n = 900
    cat = rng.choice(["x", "y", "z"], n)
    ha = (rng.random(n) < np.where(cat == "x", 0.9, 0.7)).astype(float)
    hb = (rng.random(n) < 0.6).astype(float)
    ja = np.where(rng.random(n) < 0.93, ha, 1 - ha)
    jb = np.where(rng.random(n) < 0.93, hb, 1 - hb)
    lab = rng.random(n) < 0.35
    frame = _frame(ja, jb, np.where(lab, ha, np.nan), np.where(lab, hb, np.nan), cat)
    table = compare_models(frame, strata="category", human="human", adjust=adjust).table
    cells = table[table["uses_proxy"]]
    assert len(cells) >= 2
    excludes = (cells["lower"] > 0) | (cells["upper"] < 0)
    assert excludes.any()
    if adjust == "bonferroni":
        assert (cells["separable"] == excludes).all()
    else:
        assert (cells["separable"] | ~excludes).all()


def test_kernel_mover_sum_reproduces_cells_interval_with_its_wilson_limits():
    from bayeseval._kernels.binomial import binomial_bounds
    from bayeseval._kernels.proxy import cells_interval, mover_sum

    s, n, w = np.array([2.0, 7.0, 15.0]), np.array([5.0, 10.0, 20.0]), np.array([0.2, 0.3, 0.5])
    lo, hi = binomial_bounds(s, n, 0.05, "wilson")
    est, lower, upper = mover_sum(w, s / n, lo, hi)
    ref = cells_interval(s, n, w, 0.95)
    assert (est, lower, upper) == pytest.approx(ref)
    # the smoothed variance of 0/1 values is the kernel's smoothed binomial variance
    rate = (s + 0.5) / (n + 1)
    assert mean_variance(s, s, n) == pytest.approx(rate * (1 - rate) / n)


# -- labels chosen with known probabilities (a judge calibration set) -----------------------------


def _calibration_set(seed: int, strata: int = 4, items: int = 150, per_side: int = 20):
    """Two models judged on every item; human labels on ``per_side`` items the judge passed for model a
    and ``per_side`` it failed (50/50 by verdict), with each item's inclusion probability; the truth."""
    rng = np.random.default_rng(seed)
    parts, truth = [], {}
    for s in range(strata):
        pa, pb = 0.75 + 0.03 * s, 0.7
        ha = (rng.random(items) < pa).astype(float)
        hb = (rng.random(items) < pb).astype(float)
        ja = np.where(rng.random(items) < 0.85, ha, 1 - ha)
        jb = np.where(hb == 1, rng.random(items) < 0.9, rng.random(items) < 0.4).astype(float)  # lenient with b
        passed, failed = np.flatnonzero(ja == 1), np.flatnonzero(ja == 0)
        k1, k0 = min(per_side, passed.size), min(per_side, failed.size)
        lab = np.zeros(items, dtype=bool)
        lab[np.concatenate([rng.choice(passed, k1, replace=False), rng.choice(failed, k0, replace=False)])] = True
        p = np.where(ja == 1, k1 / passed.size, k0 / failed.size)
        truth[f"c{s}"] = pa - pb
        frame = _frame(ja, jb, np.where(lab, ha, np.nan), np.where(lab, hb, np.nan), f"c{s}")
        parts.append(frame.assign(item=frame["item"] + 1000 * s, p=np.tile(p, 2)))
    return pd.concat(parts, ignore_index=True), truth


def test_equal_probabilities_give_the_random_sample_result_where_the_cells_are_read():
    frame, _ = _calibration_set(1)
    frame["p"] = 0.25  # one probability everywhere: a random sample
    kw = {"human": "human", "strata": "category", "adjust": "none", "reference": "b"}
    plain = compare_models(frame, **kw).table.set_index("stratum")
    ours = compare_models(frame, design={"inclusion": "p"}, **kw).table.set_index("stratum")
    # with known probabilities sparse cells are not merged: compare where no cell of the stratum is sparse
    wide = frame.pivot_table(index=["category", "item"], columns="model", values=["outcome", "human"])
    cell = wide["outcome"]["a"].astype(int).astype(str) + wide["outcome"]["b"].astype(int).astype(str)
    labels = wide["human"]["a"].notna().groupby([wide.index.get_level_values(0), cell]).sum()
    unmerged = (labels >= 3).groupby(level=0).all().reindex(plain.index, fill_value=False).to_numpy()
    read = plain["uses_proxy"].to_numpy() & unmerged
    assert read.any()
    for col in ("estimate", "lower", "upper"):
        np.testing.assert_allclose(ours.loc[read, col], plain.loc[read, col], rtol=0, atol=1e-12)
    assert ours["uses_proxy"].all()  # no switch to labels only with known probabilities


def test_unequal_probabilities_in_a_merged_group_give_its_hajek_mean():
    # one stratum, all items in cell (1, 1) (one group), labelled with probabilities 0.5 and 0.25
    z = np.array([1.0, 0.5, 0.5, 0.0, 0.5])
    p = np.array([0.5, 0.5, 0.25, 0.25, 0.25])
    obs = pd.DataFrame({"key": 0, "block": 0, "cell": 2, "z": np.r_[z, [np.nan] * 5], "w": np.r_[1 / p, [np.nan] * 5]})
    plan = paired_proxy.plan(obs, 1, [False])
    assert bool(plan.uses_proxy[0])
    est, lo, hi = paired_proxy.intervals(plan, 0.9)
    w = 1 / p
    r = (w * z).sum() / w.sum()  # Hajek mean, written out
    assert est[0] == pytest.approx(2 * r - 1)
    # Clopper-Pearson on the effective counts n* = r (1 - r) / V (Korn and Graubard), by scipy
    from scipy.stats import beta

    v = (w**2 * (z - r) ** 2).sum() / w.sum() ** 2
    n = r * (1 - r) / v
    s = r * n
    assert lo[0] == pytest.approx(2 * beta.ppf(0.05, s, n - s + 1) - 1)
    assert hi[0] == pytest.approx(2 * beta.ppf(0.95, s + 1, n - s) - 1)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"p": "x"}, "design inclusion column 'p' must hold probabilities"),
        ({"p": 0.0}, r"must lie in \(0, 1\]"),
        ({"p": 1.5}, r"must lie in \(0, 1\]"),
    ],
)
def test_inclusion_probabilities_are_checked(change, match):
    frame, _ = _calibration_set(2, strata=1)
    frame = frame.assign(**change)
    with pytest.raises((TypeError, ValueError), match=match):
        compare_models(frame, human="human", design={"inclusion": "p"})


def test_inclusion_must_be_one_probability_per_item_and_needs_human_labels():
    frame, _ = _calibration_set(3, strata=1)
    first = frame.index[(frame["model"] == "b") & frame["human"].notna()][0]
    frame.loc[first, "p"] = 0.9
    with pytest.raises(ValueError, match="one probability per item"):
        compare_models(frame, human="human", design={"inclusion": "p"})
    with pytest.raises(ValueError, match="design inclusion needs human="):
        compare_models(frame, design={"inclusion": "p"})


@pytest.mark.slow
def test_a_calibration_set_50_50_by_verdict_is_unbiased_where_random_sample_reading_is_not():
    # 300 seeded datasets, 4 strata of 150 items, 20 + 20 labels per stratum chosen by model a's verdict;
    # truth: the process difference pa - pb. Tolerance: |bias| within 2.5 MC SE (4 strata), and the
    # two readings that assume a random sample biased beyond 4 MC SE in every stratum
    reps = 300
    err, cover, plain_err, naive_err = [], [], [], []
    for seed in range(reps):
        frame, truth = _calibration_set(seed)
        kw = {"human": "human", "strata": "category", "adjust": "none", "reference": "b"}
        ours = compare_models(frame, design={"inclusion": "p"}, **kw).table.set_index("stratum").drop("(all)")
        plain = compare_models(frame, **kw).table.set_index("stratum").drop("(all)")
        sign = 1.0  # a - b
        d = np.array([truth[k] for k in ours.index])
        err.append(sign * ours["estimate"].to_numpy() - d)
        lo, hi = ours["lower"].to_numpy(), ours["upper"].to_numpy()
        cover.append((lo <= d) & (d <= hi))
        plain_err.append(sign * plain.loc[ours.index, "estimate"].to_numpy() - d)
        lab = frame[frame["human"].notna()].pivot_table(index=["category", "item"], columns="model", values="human")
        naive_err.append((lab["a"] - lab["b"]).groupby(level=0).mean().reindex(ours.index).to_numpy() - d)
    err, cover, plain_err, naive_err = map(np.asarray, (err, cover, plain_err, naive_err))
    # a judge cell nobody labelled leaves its stratum without an estimate (its interval still holds)
    assert np.isnan(err).mean() < 0.01
    se = np.nanstd(err, axis=0, ddof=1) / np.sqrt(reps)
    assert (np.abs(np.nanmean(err, axis=0)) <= 2.5 * se).all(), (np.nanmean(err, axis=0), se)
    assert (cover.mean(axis=0) >= 0.94).all(), cover.mean(axis=0)
    for other in (plain_err, naive_err):
        se_o = other.std(axis=0, ddof=1) / np.sqrt(reps)
        assert (np.abs(other.mean(axis=0)) > 4 * se_o).all(), (other.mean(axis=0), se_o)


def test_command_line_inclusion_column_gives_the_function_s_result(tmp_path, capsys):
    frame, _ = _calibration_set(4, strata=2)
    path = tmp_path / "answers.csv"
    frame.to_csv(path, index=False)
    args = ["compare", str(path), "--strata", "category", "--human", "human", "--reference", "b", "--json"]
    assert main([*args, "--inclusion", "p"]) == 0
    got = pd.DataFrame(json.loads(capsys.readouterr().out)["differences"])
    frame["model"] = frame["model"].astype(str)
    expected = compare_models(
        frame.astype({"item": str}), strata="category", human="human", reference="b", design={"inclusion": "p"}
    ).table
    np.testing.assert_allclose(got[["estimate", "lower", "upper"]], expected[["estimate", "lower", "upper"]])
    assert main([*args, "--inclusion", "nope"]) == 2
    assert "--inclusion column 'nope' is not in" in capsys.readouterr().err
