"""Fairness audits: fairlearn parity, interval references, coverage, verdicts and bad input."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    false_negative_rate,
    false_positive_rate,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)
from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_score, zero_one_loss
from statsmodels.stats.proportion import confint_proportions_2indep

from bayeseval import proportion_ci
from bayeseval._kernels.disparity import bonferroni_level, gap_interval, mover_difference
from bayeseval.cli.audit import add_audit_parser
from bayeseval.fairness import METRICS, Audit, audit


def _npv(y_true, y_pred):
    neg = np.asarray(y_pred) == 0
    return float(np.mean(np.asarray(y_true)[neg] == 0))


FAIRLEARN = {
    "selection_rate": selection_rate,
    "tpr": true_positive_rate,
    "fnr": false_negative_rate,
    "fpr": false_positive_rate,
    "tnr": true_negative_rate,
    "ppv": precision_score,
    "npv": _npv,
    "error_rate": zero_one_loss,
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
}


def _frame(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["w", "b", "a"], n, p=[0.5, 0.35, 0.15])
    sex = rng.choice(["f", "m"], n)
    y = rng.binomial(1, np.where(race == "b", 0.45, 0.3))
    flip = rng.random(n) < np.where(race == "a", 0.3, 0.15)
    return pd.DataFrame({"y": y, "p": np.where(flip, 1 - y, y), "race": race, "sex": sex})


@pytest.fixture(scope="module")
def data():
    return _frame()


@pytest.fixture(scope="module")
def crossed(data):
    return audit(data, y_true="y", y_pred="p", groups=["race", "sex"], tolerance=0.1, random_seed=1)


def test_point_estimates_equal_fairlearn_metricframe(data, crossed):
    mf = MetricFrame(metrics=FAIRLEARN, y_true=data["y"], y_pred=data["p"],
                     sensitive_features=data[["race", "sex"]])
    table = crossed.groups.set_index(["group", "metric"])["rate"]
    for (race, sex), row in mf.by_group.iterrows():
        for metric, value in row.items():
            assert table[(f"{race} | {sex}", metric)] == pytest.approx(value, abs=1e-12), (race, sex, metric)


def test_single_column_parity_and_counts(data):
    res = audit(data, y_true="y", y_pred="p", groups="race", metrics=["tpr", "selection_rate"],
                random_seed=0)
    mf = MetricFrame(metrics={"tpr": true_positive_rate, "selection_rate": selection_rate},
                     y_true=data["y"], y_pred=data["p"], sensitive_features=data["race"])
    table = res.groups.set_index(["group", "metric"])
    for group, row in mf.by_group.iterrows():
        for metric, value in row.items():
            assert table.loc[(group, metric), "rate"] == pytest.approx(value, abs=1e-12)
    sub = data[data["race"] == "b"]
    assert table.loc[("b", "tpr"), "trials"] == int((sub["y"] == 1).sum())
    assert table.loc[("b", "tpr"), "successes"] == int(((sub["y"] == 1) & (sub["p"] == 1)).sum())
    # default reference per metric: the measured group with the most trials (hand count)
    positives = data.loc[data["y"] == 1, "race"].value_counts()
    assert res.reference == {"tpr": positives.idxmax(), "selection_rate": data["race"].value_counts().idxmax()}


def test_group_intervals_are_wilson_and_pooled_brackets(crossed, data):
    g = crossed.groups[crossed.groups["metric"] == "fpr"].set_index("group")
    lo, hi = proportion_ci(g["successes"].to_numpy(int), g["trials"].to_numpy(int), method="wilson")
    assert np.allclose(g["wilson_lower"], lo) and np.allclose(g["wilson_upper"], hi)
    assert (g["adaptive_lower"] <= g["rate"]).all() and (g["rate"] <= g["adaptive_upper"]).all()
    assert (g["pooled_lower"] <= g["pooled_mean"]).all() and (g["pooled_mean"] <= g["pooled_upper"]).all()


def test_differences_are_newcombe_and_ratios_katz(crossed):
    g = crossed.groups[crossed.groups["metric"] == "tpr"].set_index("group")
    d = crossed.disparities[crossed.disparities["metric"] == "tpr"].set_index(["measure", "group"])
    ref = crossed.reference["tpr"]
    for group in g.index.drop(ref):
        args = (int(g.loc[group, "successes"]), int(g.loc[group, "trials"]),
                int(g.loc[ref, "successes"]), int(g.loc[ref, "trials"]))
        expect = confint_proportions_2indep(*args, method="newcomb")
        assert (d.loc[("difference", group), "lower"], d.loc[("difference", group), "upper"]) == \
            pytest.approx(expect, abs=1e-10)
        expect = confint_proportions_2indep(*args, compare="ratio", method="log")
        assert (d.loc[("ratio", group), "lower"], d.loc[("ratio", group), "upper"]) == \
            pytest.approx(expect, rel=1e-10)


def test_empty_crossed_cell_is_shown_empty_with_a_labelled_prediction():
    df = _frame(400, seed=3)
    df = df[~((df["race"] == "a") & (df["sex"] == "f"))]
    res = audit(df, y_true="y", y_pred="p", groups=["race", "sex"], metrics=["tpr"], random_seed=0,
                min_trials=1)
    row = res.groups.set_index("group").loc["a | f"]
    assert row["trials"] == 0 and np.isnan(row["rate"]) and np.isnan(row["wilson_lower"])
    assert row["empty"] and row["predicted"] and 0 < row["pooled_mean"] < 1
    diff = res.disparities.set_index(["measure", "group"]).loc[("difference", "a | f")]
    assert diff["predicted"] and np.isnan(diff["estimate"]) and np.isfinite(diff["posterior_mean"])
    # the max-min gap is over measured groups only: the same as without the cell
    gap = res.disparities.set_index("measure").loc["max-min gap"]
    rates = res.groups["rate"].dropna()
    assert gap["estimate"] == pytest.approx(rates.max() - rates.min())


def test_zero_of_n_is_flagged():
    df = pd.DataFrame({"y": [1] * 40 + [1] * 7, "p": [1, 0] * 20 + [0] * 7, "g": ["a"] * 40 + ["b"] * 7})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", random_seed=0)
    row = res.groups.set_index("group").loc["b"]
    assert row["zero_successes"] and row["rate"] == 0 and row["adaptive_upper"] > 0.2


def _sim_groups(rng, n, rates):
    s = rng.binomial(n, rates)
    lo, hi = proportion_ci(s, n, method="wilson")
    return s, lo, hi


@pytest.mark.parametrize("rates", [(0.3,) * 6, (0.3, 0.3, 0.3, 0.3, 0.3, 0.15)])
def test_difference_and_gap_coverage_by_simulation(rates):
    # 6 groups of 20 to 2,000 trials; 300 seeded datasets, binomial SE of coverage ~0.013
    rng = np.random.default_rng(7)
    n = np.array([2000, 20, 50, 100, 400, 1000])
    rates = np.array(rates)
    per_group = bonferroni_level(0.95, 6)
    diff_hits, gap_hits = [], []
    for _ in range(300):
        s, lo, hi = _sim_groups(rng, n, rates)
        r = s / n
        dlo, dhi = mover_difference(r[1:], lo[1:], hi[1:], r[0], lo[0], hi[0])
        truth = rates[1:] - rates[0]
        diff_hits.append((dlo <= truth) & (truth <= dhi))
        clo, chi = proportion_ci(s, n, level=per_group, method="clopper_pearson")
        _, glo, ghi = gap_interval(r, clo, chi)
        gap_hits.append(glo <= np.ptp(rates) <= ghi)
    assert np.mean(diff_hits, axis=0).min() >= 0.92
    assert np.mean(gap_hits) >= 0.95 - 0.02


@pytest.mark.slow
def test_gap_coverage_long_run():
    rng = np.random.default_rng(11)
    n = np.array([2000, 20, 50, 100, 400, 1000])
    rates = np.array([0.3, 0.3, 0.3, 0.3, 0.3, 0.2])
    per_group = bonferroni_level(0.95, 6)
    hits = []
    for _ in range(4000):
        s = rng.binomial(n, rates)
        clo, chi = proportion_ci(s, n, level=per_group, method="clopper_pearson")
        hits.append(gap_interval(s / n, clo, chi)[1] <= 0.1 <= gap_interval(s / n, clo, chi)[2])
    assert np.mean(hits) >= 0.95  # guaranteed >= level; SE 0.003


def _two_groups(n, r1, r2, seed=0):
    """Exact rates: round(r * n) positives predicted positive among n positives per group."""
    k1, k2 = round(r1 * n), round(r2 * n)
    y = np.ones(2 * n, int)
    p = np.r_[np.ones(k1), np.zeros(n - k1), np.ones(k2), np.zeros(n - k2)].astype(int)
    return pd.DataFrame({"y": y, "p": p, "g": ["a"] * n + ["b"] * n})


def test_verdict_clearly_within():
    res = audit(_two_groups(5000, 0.70, 0.71), y_true="y", y_pred="p", groups="g",
                metrics=["tpr"], tolerance=0.1, random_seed=0)
    v = res.verdicts.set_index("criterion").loc["equal_opportunity"]
    assert v["verdict"] == "within tolerance" and v["upper"] <= 0.1
    assert v["p_exceeds"] < 0.01 and not res.outside and res.labels_needed.empty


def test_verdict_clearly_outside():
    res = audit(_two_groups(2000, 0.4, 0.8), y_true="y", y_pred="p", groups="g",
                metrics=["tpr"], tolerance=0.1, random_seed=0)
    v = res.verdicts.set_index("criterion").loc["equal_opportunity"]
    assert v["verdict"] == "outside" and v["lower"] > 0.1 and v["p_exceeds"] > 0.99 and res.outside


def test_verdict_undecided_at_small_n_and_the_plan_decides():
    res = audit(_two_groups(10, 0.6, 0.7), y_true="y", y_pred="p", groups="g", metrics=["tpr"],
                tolerance=0.2, random_seed=0, min_trials=1, method="bonferroni")
    v = res.verdicts.set_index("criterion").loc["equal_opportunity"]
    assert v["verdict"] == "undecided" and v["lower"] <= 0.2 < v["upper"]
    plan = res.labels_needed.set_index("group")
    assert (plan["extra_trials"] > 0).all()
    # with the planned trials, at the same rates, the gap interval decides "within"
    n = (plan["trials"] + plan["extra_trials"]).to_numpy()
    s = np.round(np.array([0.6, 0.7]) * n)
    lo, hi = proportion_ci(s, n, level=bonferroni_level(0.95, 2), method="clopper_pearson")
    assert gap_interval(s / n, lo, hi)[2] <= 0.2 + 0.01


def test_equalized_odds_is_outside_when_one_rate_is():
    rows = []
    for g, tpr, fpr in (("a", 0.8, 0.1), ("b", 0.8, 0.5)):
        rows += [(g, 1, int(i < tpr * 1000)) for i in range(1000)]
        rows += [(g, 0, int(i < fpr * 1000)) for i in range(1000)]
    df = pd.DataFrame(rows, columns=["g", "y", "p"])
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.1,
                random_seed=0)
    v = res.verdicts.set_index(["criterion", "metric"])
    assert v.loc[("equalized_odds", "fpr"), "metric_verdict"] == "outside"
    assert v.loc[("equalized_odds", "tpr"), "metric_verdict"] == "within tolerance"
    assert v.loc[("equalized_odds", "tpr"), "verdict"] == "outside"
    assert v.loc[("equalized_odds", "tpr"), "level"] == pytest.approx(0.975)


def test_without_tolerance_no_verdict(data):
    res = audit(data, y_true="y", y_pred="p", groups="race", metrics="ppv", random_seed=0)
    assert (res.verdicts["verdict"] == "no tolerance").all() and res.verdicts["p_exceeds"].isna().all()


def test_result_protocol_and_escaped_html():
    df = _two_groups(30, 0.5, 0.6).replace({"g": {"a": "<b>x</b>"}})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", random_seed=0)
    assert isinstance(res, Audit)
    frame = res.to_frame()
    frame.loc[0, "rate"] = -1.0
    assert res.groups.loc[0, "rate"] != -1.0
    html = res._repr_html_()
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html and "Verdicts" in html
    json.dumps(res.to_dict())


def test_posterior_is_reproducible_with_seed(data):
    a = audit(data, y_true="y", y_pred="p", groups="race", metrics="tpr", random_seed=5)
    b = audit(data, y_true="y", y_pred="p", groups="race", metrics="tpr", random_seed=5)
    pd.testing.assert_frame_equal(a.disparities, b.disparities)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"metrics": ["tpr", "auc"]}, ValueError, ["metrics", "'auc'"]),
        ({"metrics": []}, ValueError, ["metrics", "[]"]),
        ({"metrics": [3]}, TypeError, ["metrics", "3"]),
        ({"tolerance": 1.5}, ValueError, ["tolerance", "1.5"]),
        ({"tolerance": "0.1"}, TypeError, ["tolerance", "'0.1'"]),
        ({"reference": "zz"}, ValueError, ["reference", "'zz'"]),
        ({"level": 1.5}, ValueError, ["level", "1.5"]),
        ({"groups": "nope"}, ValueError, ["strata", "'nope'"]),
        ({"groups": []}, ValueError, ["groups", "[]"]),
        ({"method": "holm"}, ValueError, ["method", "'holm'", "max_t", "bonferroni"]),
        ({"min_trials": None}, TypeError, ["min_trials", "None"]),
    ],
)
def test_bad_input_names_argument_and_value(data, kwargs, error, words):
    args = {"y_true": "y", "y_pred": "p", "groups": "race", "random_seed": 0} | kwargs
    with pytest.raises(error) as info:
        audit(data, **args)
    for word in words:
        assert word in str(info.value)


def test_non_binary_labels_need_pos_label():
    df = pd.DataFrame({"y": ["u", "v", "w"] * 10, "p": ["u", "w", "v"] * 10, "g": ["a", "b"] * 15})
    with pytest.raises(ValueError, match="pos_label"):
        audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr")
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", pos_label="u", random_seed=0)
    assert res.groups["rate"].tolist() == [1.0, 1.0]


def _cli(args):
    parser = argparse.ArgumentParser()
    add_audit_parser(parser.add_subparsers(dest="command"))
    ns = parser.parse_args(["audit", *args])
    return ns.func(ns)


def test_command_line_exit_codes_and_json(tmp_path, capsys):
    path = tmp_path / "preds.csv"
    _two_groups(2000, 0.4, 0.8).to_csv(path, index=False)
    base = [str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--metrics", "tpr"]
    assert _cli(base + ["--tolerance", "0.1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verdicts"][0]["verdict"] == "outside" and out["reference"] == {"tpr": "a"}
    # the groups' counts and Wilson limits as SciPy-free closed forms give them
    groups = {g["group"]: g for g in out["groups"]}
    assert (groups["a"]["successes"], groups["a"]["trials"]) == (800, 2000)
    z, n, r = 1.959963984540054, 2000, 0.4
    centre, half = (r + z * z / (2 * n)) / (1 + z * z / n), z * np.sqrt(r * (1 - r) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert abs(groups["a"]["wilson_lower"] - (centre - half)) < 1e-8
    assert _cli(base + ["--tolerance", "0.5"]) == 0
    with pytest.raises(ValueError, match="--groups column 'zz'"):
        _cli([str(path), "--y-true", "y", "--y-pred", "p", "--groups", "zz"])
    (tmp_path / "x.txt.bz2").write_bytes(b"BZh9")
    with pytest.raises(ValueError, match="unsupported"):
        _cli([str(tmp_path / "x.txt.bz2"), "--y-true", "y", "--y-pred", "p", "--groups", "g"])


def test_forest_plot_draws_a_prediction_distinctly():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    df = _frame(300, seed=4)
    df = df[~((df["race"] == "a") & (df["sex"] == "f"))]
    res = audit(df, y_true="y", y_pred="p", groups=["race", "sex"], metrics="fpr", tolerance=0.1,
                random_seed=0)
    ax = disparities(res)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert f"fpr: a | f - {res.reference['fpr']} (predicted, no data)" in labels
    assert len(labels) == len(res.disparities.query("measure != 'ratio'"))
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    hollow = [ln for ln in ax.lines if ln.get_markerfacecolor() == "none"]
    assert len(dashed) == 1 and len(hollow) == 1
    row = res.disparities.set_index(["measure", "group"]).loc[("difference", "a | f")]
    assert tuple(dashed[0].get_xdata()) == (row["posterior_lower"], row["posterior_upper"])
    with pytest.raises(ValueError, match="measure must be 'difference' or 'ratio', got 'gap'"):
        disparities(res, measure="gap")
    with pytest.raises(TypeError, match="result must be an Audit"):
        disparities(res.groups)


def test_html_section_escapes_labels_and_embeds_the_plot():
    import matplotlib

    matplotlib.use("Agg")
    df = _two_groups(30, 0.5, 0.6).replace({"g": {"a": "<i>x</i>"}})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", tolerance=0.2, random_seed=0)
    page = res.to_html()
    assert "&lt;i&gt;x&lt;/i&gt;" in page and "<i>x</i>" not in page
    assert page.count("data:image/png;base64,") == 1 and "Verdicts" in page


def test_audit_refuses_fractional_y_true_naming_the_column_and_the_value():
    rng = np.random.default_rng(11)
    p = rng.integers(0, 2, 400)
    df = pd.DataFrame({"y": np.where(p == 1, 0.999999, 0.0), "p": p, "g": rng.choice(["a", "b"], 400)})
    with pytest.raises(ValueError, match=r"y_true column 'y' holds the fractional value 0\.999999"):
        audit(df, y_true="y", y_pred="p", groups="g")
    truth = np.where(np.arange(400) % 8 == 0, 1 - p, p).astype(float)  # 0.0/1.0: 50 rows wrong
    fixed = audit(df.assign(y=truth), y_true="y", y_pred="p", groups="g", metrics="error_rate")
    assert int(fixed.groups["successes"].sum()) == int((truth != p).sum()) == 50


def test_a_bool_for_min_trials_is_a_type_error_like_a_bool_tolerance():
    df = pd.DataFrame({"y": [0, 1] * 50, "p": [0, 1, 1, 0] * 25, "g": ["a"] * 50 + ["b"] * 50})
    for kwargs, name in (({"min_trials": True}, "min_trials"), ({"tolerance": True}, "tolerance")):
        with pytest.raises(TypeError, match=rf"^{name} must be .*got True"):
            audit(df, y_true="y", y_pred="p", groups="g", **kwargs)
    assert audit(df, y_true="y", y_pred="p", groups="g", min_trials=1).groups["trials"].sum() > 0


def test_metrics_are_named_as_written_in_every_table():
    rng = np.random.default_rng(12)
    n = 1200
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "g": rng.choice(["a", "b", "c"], n)})
    df["p"] = np.where(rng.random(n) < 0.8, df["y"], 1 - df["y"])
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["recall", "FPR"], tolerance=0.2)
    assert list(res.groups["metric"].unique()) == ["recall", "FPR"]
    assert set(res.disparities["metric"]) == {"recall", "FPR"}
    assert set(res.verdicts["metric"]) == {"recall", "FPR"}  # equal opportunity, equalized odds
    got = res.groups[res.groups["metric"] == "recall"].set_index("group")["rate"]
    for g, rows in df.groupby("g"):
        assert got[g] == pytest.approx(true_positive_rate(rows["y"], rows["p"]), rel=1e-12)
    assert set(audit(df, y_true="y", y_pred="p", groups="g").groups["metric"]) == set(METRICS)


# --------------------------------------------------------------------------- not measured


def _rows(spec):
    """Rows from {group: (true positives, false negatives, false positives, true negatives)}."""
    rows = []
    for g, (tp, fn, fp, tn) in spec.items():
        rows += [(g, 1, 1)] * tp + [(g, 1, 0)] * fn + [(g, 0, 1)] * fp + [(g, 0, 0)] * tn
    return pd.DataFrame(rows, columns=["g", "y", "p"])


def _assert_not_measured(res, metric):
    gap = res.disparities.set_index(["metric", "measure"]).loc[(metric, "max-min gap")]
    for _, v in res.verdicts[res.verdicts["metric"] == metric].iterrows():
        assert np.isnan([v["gap"], v["lower"], v["upper"], v["p_exceeds"]]).all()
        assert v["metric_verdict"] == "not measured" and v["verdict"] == "not measured"
    assert np.isnan([gap["estimate"], gap["lower"], gap["upper"], gap["p_exceeds"]]).all()
    assert res.not_measured and not res.outside and res.labels_needed.empty


def test_gap_with_one_group_with_trials_is_not_measured():
    # b has no actual positives: TPR is measured in a only
    df = _rows({"a": (40, 20, 10, 30), "b": (0, 0, 30, 70)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", tolerance=0.1, random_seed=0)
    _assert_not_measured(res, "tpr")
    assert any("not measured" in n for n in res.notes)
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    labels = [t.get_text() for t in disparities(res).get_yticklabels()]
    assert labels[-1] == "tpr: max-min gap (not measured)"


def test_gap_with_min_trials_above_every_group_is_not_measured():
    df = _rows({"a": (40, 20, 10, 30), "b": (35, 25, 12, 28)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.3,
                min_trials=500, random_seed=0)
    _assert_not_measured(res, "tpr")
    # the groups are still reported, flagged out of the gap
    assert (~res.groups["in_gap"]).all() and res.groups["rate"].notna().all()


def test_equalized_odds_with_one_rate_not_measured_is_not_within():
    # TPR: 60 positives per group, alike (within 0.3); FPR: no negatives in b, so one group only
    df = _rows({"a": (30, 30, 20, 80), "b": (31, 29, 0, 0)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.3,
                random_seed=0)
    v = res.verdicts.set_index(["criterion", "metric"])
    assert v.loc[("equalized_odds", "tpr"), "metric_verdict"] == "within tolerance"
    assert v.loc[("equalized_odds", "fpr"), "metric_verdict"] == "not measured"
    assert v.loc[("equalized_odds", "tpr"), "verdict"] == "not measured"
    assert np.isnan(v.loc[("equalized_odds", "tpr"), "p_exceeds"])
    assert v.loc[("equal_opportunity", "tpr"), "verdict"] == "within tolerance"


def test_reference_without_trials_gives_no_measured_comparison():
    df = _rows({"a": (40, 20, 10, 30), "b": (0, 0, 30, 70), "c": (35, 25, 12, 28)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", reference="b",
                tolerance=0.1, random_seed=0)
    d = res.disparities[res.disparities["measure"] != "max-min gap"]
    assert (d["reference"] == "b").all() and d["predicted"].all()
    assert d[["estimate", "lower", "upper", "p_exceeds"]].isna().all().all()
    assert any("reference group 'b' has no trials" in n and "reference=" in n for n in res.notes)


def test_command_line_exit_code_when_not_measured(tmp_path, capsys):
    path = tmp_path / "p.csv"
    _rows({"a": (40, 20, 10, 30), "b": (3, 2, 30, 70)}).to_csv(path, index=False)
    base = [str(path), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--metrics", "tpr",
            "--tolerance", "0.3"]
    assert _cli(base) == 3  # b has 5 positives, under the default 30: not measured
    out = capsys.readouterr().out
    assert "--min-trials 30" in out and "min_trials=" not in out
    assert _cli(base + ["--min-trials", "5"]) == 0  # measured, undecided or within


# --------------------------------------------------------------------------- tidy tables


def _collide():
    rows = [("a | b", "c", 1, 1)] * 40 + [("a | b", "c", 1, 0)] * 20
    rows += [("a", "b | c", 1, 1)] * 20 + [("a", "b | c", 1, 0)] * 40
    rows += [("x", "c", 1, 1)] * 30 + [("x", "c", 1, 0)] * 30
    return pd.DataFrame(rows, columns=["f1", "f2", "y", "p"])


def test_colliding_cells_keep_one_column_per_factor_and_distinct_labels():
    df = _collide()
    res = audit(df, y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", min_trials=1,
                random_seed=0)
    g = res.groups[res.groups["trials"] > 0]
    assert g["group"].is_unique and len(g) == 3
    # the factor columns hold the values as in the data, as MetricFrame's MultiIndex does
    mf = MetricFrame(metrics=true_positive_rate, y_true=df["y"], y_pred=df["p"],
                     sensitive_features=df[["f1", "f2"]])
    ours = g.set_index(["f1", "f2"])["rate"]
    for key, value in mf.by_group.dropna().items():
        assert ours.loc[key] == pytest.approx(value)
    assert ours.loc[("a | b", "c")] == pytest.approx(40 / 60)
    assert ours.loc[("a", "b | c")] == pytest.approx(20 / 60)
    # the joined string names both cells: refused; per factor, each one is found
    with pytest.raises(ValueError, match="reference 'a | b | c' is ambiguous"):
        audit(df, y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", reference="a | b | c")
    for ref, rate in ((("a | b", "c"), 40 / 60), ({"f2": "b | c", "f1": "a"}, 20 / 60)):
        r = audit(df, y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", reference=ref,
                  min_trials=1, random_seed=0)
        d = r.disparities.query("measure == 'difference' and not predicted").set_index(["f1", "f2"])
        ref_key = tuple(ref.values())[::-1] if isinstance(ref, dict) else ref
        assert ref_key not in d.index and len(d) == 2
        assert (d["reference_f1"] == ref_key[0]).all() and (d["reference_f2"] == ref_key[1]).all()
        assert d.loc[("x", "c"), "estimate"] == pytest.approx(0.5 - rate)
        # the displayed reference label is the label of that cell in the groups table
        shown = r.groups.set_index(["f1", "f2"]).loc[ref_key, "group"]
        assert (d["reference"] == shown).all() and r.reference == {"tpr": shown}


@pytest.mark.parametrize(
    ("reference", "pattern"),
    [
        (("a | b",), r"has 1 value\(s\); give one per group column \['f1', 'f2'\]"),
        ({"f1": "a"}, r"a mapping needs one value for each group column \['f1', 'f2'\]"),
        (("zz", "c"), r"reference \('zz', 'c'\) is not one of the groups"),
    ],
)
def test_reference_per_factor_is_checked(reference, pattern):
    with pytest.raises(ValueError, match=pattern):
        audit(_collide(), y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr",
              reference=reference)


def test_single_factor_values_containing_the_separator():
    df = _collide().assign(g=lambda d: d["f1"] + " | " + d["f2"])  # 'a | b | c' twice, 'x | c'
    df.loc[df["f1"] == "a", "g"] = "a | b"
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", reference="a | b",
                min_trials=1, random_seed=0)
    assert res.reference == {"tpr": "a | b"}
    d = res.disparities[res.disparities["measure"] == "difference"].set_index("g")
    assert d.loc["a | b | c", "estimate"] == pytest.approx(40 / 60 - 20 / 60)
    assert set(res.groups["g"]) == {"a | b | c", "a | b", "x | c"}


def test_group_column_named_like_a_table_column_is_refused():
    df = _collide().rename(columns={"f1": "rate"})
    with pytest.raises(ValueError, match="group column 'rate' has the name of a column"):
        audit(df, y_true="y", y_pred="p", groups=["rate", "f2"], metrics="tpr")
    # one group column named "group" is the label column
    res = audit(_collide().rename(columns={"f1": "group"}), y_true="y", y_pred="p", groups="group",
                metrics="tpr", random_seed=0)
    assert list(res.groups.columns[:2]) == ["group", "metric"]


# --------------------------------------------------------------------------- default reference


def test_default_reference_is_the_measured_group_with_most_trials_per_metric():
    # big: most rows, no actual positives and no predicted positives
    df = _rows({"big": (0, 0, 0, 500), "mid": (60, 40, 30, 70), "small": (70, 10, 5, 15)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["selection_rate", "tpr", "ppv"],
                random_seed=0)
    # hand count: selection rate trials = rows (big 500); TPR trials = positives (mid 100,
    # small 80); PPV trials = predicted positives (mid 90, small 75)
    assert res.reference == {"selection_rate": "big", "tpr": "mid", "ppv": "mid"}
    refs = res.groups[res.groups["is_reference"]].set_index("metric")["group"]
    assert refs.to_dict() == res.reference
    d = res.disparities[res.disparities["measure"] == "difference"].set_index(["metric", "group"])
    assert d.loc[("tpr", "small"), "reference"] == "mid"
    assert d.loc[("tpr", "small"), "estimate"] == pytest.approx(70 / 80 - 60 / 100)
    assert d.loc[("ppv", "small"), "estimate"] == pytest.approx(70 / 75 - 60 / 90)
    assert np.isnan(d.loc[("tpr", "big"), "estimate"]) and d.loc[("tpr", "big"), "predicted"]


def test_command_line_reference_is_a_label_and_its_messages_name_the_flag(tmp_path):
    path = tmp_path / "c.csv"
    _collide().to_csv(path, index=False)
    base = [str(path), "--y-true", "y", "--y-pred", "p", "--groups", "f1,f2", "--metrics", "tpr",
            "--min-trials", "1", "--json"]
    with pytest.raises(ValueError, match=r"ambiguous.*give --reference as the tables label the group: "
                                         r"\['a \| \"b \| c\"', '\"a \| b\" \| c'\]"):
        _cli(base + ["--reference", "a | b | c"])
    assert _cli(base + ["--reference", '"a | b" | c']) == 0


def test_the_audit_command_prints_a_summary_that_fits_100_columns(tmp_path, capsys):
    from bayeseval.cli.main import main
    from bayeseval.datasets import load_compas

    path = tmp_path / "compas.csv"
    load_compas().to_csv(path, index=False)
    code = main(["audit", str(path), "--y-true", "two_year_recid", "--y-pred", "predicted_recid",
                 "--groups", "race,sex", "--metrics", "fpr,tpr", "--tolerance", "0.1"])
    out = capsys.readouterr().out
    assert code == 1  # decided outside the tolerance (the published COMPAS disparities)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert len(out.splitlines()) < 40
    assert "equal_opportunity / tpr: outside" in out and "--out" in out
    # the notes speak the command line's spelling
    assert "--min-trials 30" in out and "min_trials=" not in out


@pytest.mark.filterwarnings("ignore::bayeseval._api.warnings.PrecisionLimitedWarning")
def test_conflict_column_flags_a_group_of_many_trials():
    # ten groups of 50,000 positives: TPR 0.80 in nine and 0.90 in the last, a gap of about
    # 50 binomial standard errors; the conflict column flags that group and no other
    rows = 50_000
    parts = []
    for g in range(10):
        hits = int(rows * (0.9 if g == 9 else 0.8))
        parts.append(pd.DataFrame({"y": 1, "p": [1] * hits + [0] * (rows - hits), "g": f"g{g}"}))
    res = audit(pd.concat(parts, ignore_index=True), y_true="y", y_pred="p", groups="g",
                metrics="tpr")
    table = res.groups.set_index("group")
    assert table["trials"].tolist() == [rows] * 10
    assert table["conflict"].tolist() == [False] * 9 + [True]
