"""Fairness audits: fairlearn parity, interval references, coverage, verdicts and bad input."""

from __future__ import annotations

import html
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from fairlearn.metrics import MetricFrame, selection_rate, true_positive_rate
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from bayeseval import fit_crossed, fit_hierarchical, proportion_ci, proxy_ci, tabulate
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval._kernels.disparity import bonferroni_level, gap_interval
from bayeseval.datasets import load_compas
from bayeseval.fairness import METRICS, Audit, audit
from tests.helpers import (
    APART,
    SMALL,
    _audit,
    _audit_pool,
    _collide,
    _frame,
    _logit_cells,
    _rows,
    _rows_audit_report,
    _saved_audit,
    _three_groups,
    _two_groups,
)


def _assert_not_measured(res, metric):
    gap = res.disparities.set_index(["metric", "measure"]).loc[(metric, "max-min gap")]
    for _, v in res.verdicts[res.verdicts["metric"] == metric].iterrows():
        assert np.isnan([v["gap"], v["lower"], v["upper"], v["p_exceeds"]]).all()
        assert v["metric_verdict"] == "not measured" and v["verdict"] == "not measured"
    assert np.isnan([gap["estimate"], gap["lower"], gap["upper"], gap["p_exceeds"]]).all()
    assert res.not_measured and not res.outside and res.labels_needed.empty


def _additive_prediction(df: pd.DataFrame) -> float:
    """Main-effects logistic regression on the other cells, predicted at (a4, b1)."""
    rest = df[~((df["A"] == SMALL[0]) & (df["B"] == SMALL[1]))]
    glm = smf.glm("p ~ A + B", data=rest, family=sm.families.Binomial()).fit()
    return float(glm.predict(pd.DataFrame({"A": [SMALL[0]], "B": [SMALL[1]]})).iloc[0])


@pytest.fixture(scope="module")
def compas():
    return load_compas()


def _cp_gap(groups, level=0.95):
    """Gap interval projected from Bonferroni Clopper-Pearson intervals (statsmodels)."""
    alpha = (1 - level) / len(groups)
    bounds = [proportion_confint(s, n, alpha=alpha, method="beta") for s, n in groups]
    lo, hi = np.array(bounds).T
    return max(0.0, lo.max() - hi.min()), hi.max() - lo.min()


def test_single_column_parity_and_counts(data):
    res = audit(data, y_true="y", y_pred="p", groups="race", metrics=["tpr", "selection_rate"], random_seed=0)
    mf = MetricFrame(
        metrics={"tpr": true_positive_rate, "selection_rate": selection_rate},
        y_true=data["y"],
        y_pred=data["p"],
        sensitive_features=data["race"],
    )
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


def test_differences_are_newcombe_and_ratios_katz(crossed):
    g = crossed.groups[crossed.groups["metric"] == "tpr"].set_index("group")
    d = crossed.disparities[crossed.disparities["metric"] == "tpr"].set_index(["measure", "group"])
    ref = crossed.reference["tpr"]
    for group in g.index.drop(ref):
        args = (
            int(g.loc[group, "successes"]),
            int(g.loc[group, "trials"]),
            int(g.loc[ref, "successes"]),
            int(g.loc[ref, "trials"]),
        )
        expect = confint_proportions_2indep(*args, method="newcomb")
        assert (d.loc[("difference", group), "lower"], d.loc[("difference", group), "upper"]) == pytest.approx(
            expect, abs=1e-10
        )
        expect = confint_proportions_2indep(*args, compare="ratio", method="log")
        assert (d.loc[("ratio", group), "lower"], d.loc[("ratio", group), "upper"]) == pytest.approx(expect, rel=1e-10)


def test_empty_crossed_cell_is_shown_empty_with_a_labelled_prediction():
    df = _frame(400, seed=3)
    df = df[~((df["race"] == "a") & (df["sex"] == "f"))]
    res = audit(df, y_true="y", y_pred="p", groups=["race", "sex"], metrics=["tpr"], random_seed=0, min_trials=1)
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


def test_verdict_clearly_within():
    res = audit(
        _two_groups(5000, 0.70, 0.71), y_true="y", y_pred="p", groups="g", metrics=["tpr"], tolerance=0.1, random_seed=0
    )
    v = res.verdicts.set_index("criterion").loc["equal_opportunity"]
    assert v["verdict"] == "within tolerance" and v["upper"] <= 0.1
    assert v["p_exceeds"] < 0.01 and not res.outside and res.labels_needed.empty


def test_verdict_clearly_outside():
    res = audit(
        _two_groups(2000, 0.4, 0.8), y_true="y", y_pred="p", groups="g", metrics=["tpr"], tolerance=0.1, random_seed=0
    )
    v = res.verdicts.set_index("criterion").loc["equal_opportunity"]
    assert v["verdict"] == "outside" and v["lower"] > 0.1 and v["p_exceeds"] > 0.99 and res.outside


def test_verdict_undecided_at_small_n_and_the_plan_decides():
    res = audit(
        _two_groups(10, 0.6, 0.7),
        y_true="y",
        y_pred="p",
        groups="g",
        metrics=["tpr"],
        tolerance=0.2,
        random_seed=0,
        min_trials=1,
        method="bonferroni",
    )
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
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.1, random_seed=0)
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
        ({"groups": "nope"}, ValueError, ["groups column", "'nope'"]),
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


def test_forest_plot_draws_a_prediction_distinctly():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    df = _frame(300, seed=4)
    df = df[~((df["race"] == "a") & (df["sex"] == "f"))]
    res = audit(df, y_true="y", y_pred="p", groups=["race", "sex"], metrics="fpr", tolerance=0.1, random_seed=0)
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
    res = audit(
        df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.3, min_trials=500, random_seed=0
    )
    _assert_not_measured(res, "tpr")
    # the groups are still reported, flagged out of the gap
    assert (~res.groups["in_gap"]).all() and res.groups["rate"].notna().all()


def test_equalized_odds_with_one_rate_not_measured_is_not_within():
    # TPR: 60 positives per group, alike (within 0.3); FPR: no negatives in b, so one group only
    df = _rows({"a": (30, 30, 20, 80), "b": (31, 29, 0, 0)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.3, random_seed=0)
    v = res.verdicts.set_index(["criterion", "metric"])
    assert v.loc[("equalized_odds", "tpr"), "metric_verdict"] == "within tolerance"
    assert v.loc[("equalized_odds", "fpr"), "metric_verdict"] == "not measured"
    assert v.loc[("equalized_odds", "tpr"), "verdict"] == "not measured"
    assert np.isnan(v.loc[("equalized_odds", "tpr"), "p_exceeds"])
    assert v.loc[("equal_opportunity", "tpr"), "verdict"] == "within tolerance"


def test_reference_without_trials_gives_no_measured_comparison():
    df = _rows({"a": (40, 20, 10, 30), "b": (0, 0, 30, 70), "c": (35, 25, 12, 28)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", reference="b", tolerance=0.1, random_seed=0)
    d = res.disparities[res.disparities["measure"] != "max-min gap"]
    assert (d["reference"] == "b").all() and d["predicted"].all()
    assert d[["estimate", "lower", "upper", "p_exceeds"]].isna().all().all()
    assert any("reference group 'b' has no trials" in n and "reference=" in n for n in res.notes)


def test_colliding_cells_keep_one_column_per_factor_and_distinct_labels():
    df = _collide()
    res = audit(df, y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", min_trials=1, random_seed=0)
    g = res.groups[res.groups["trials"] > 0]
    assert g["group"].is_unique and len(g) == 3
    # the factor columns hold the values as in the data, as MetricFrame's MultiIndex does
    mf = MetricFrame(metrics=true_positive_rate, y_true=df["y"], y_pred=df["p"], sensitive_features=df[["f1", "f2"]])
    ours = g.set_index(["f1", "f2"])["rate"]
    for key, value in mf.by_group.dropna().items():
        assert ours.loc[key] == pytest.approx(value)
    assert ours.loc[("a | b", "c")] == pytest.approx(40 / 60)
    assert ours.loc[("a", "b | c")] == pytest.approx(20 / 60)
    # the joined string names both cells: refused; per factor, each one is found
    with pytest.raises(ValueError, match="reference 'a | b | c' is ambiguous"):
        audit(df, y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", reference="a | b | c")
    for ref, rate in ((("a | b", "c"), 40 / 60), ({"f2": "b | c", "f1": "a"}, 20 / 60)):
        r = audit(
            df, y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", reference=ref, min_trials=1, random_seed=0
        )
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
        audit(_collide(), y_true="y", y_pred="p", groups=["f1", "f2"], metrics="tpr", reference=reference)


def test_single_factor_values_containing_the_separator():
    df = _collide().assign(g=lambda d: d["f1"] + " | " + d["f2"])  # 'a | b | c' twice, 'x | c'
    df.loc[df["f1"] == "a", "g"] = "a | b"
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="tpr", reference="a | b", min_trials=1, random_seed=0)
    assert res.reference == {"tpr": "a | b"}
    d = res.disparities[res.disparities["measure"] == "difference"].set_index("g")
    assert d.loc["a | b | c", "estimate"] == pytest.approx(40 / 60 - 20 / 60)
    assert set(res.groups["g"]) == {"a | b | c", "a | b", "x | c"}


def test_group_column_named_like_a_table_column_is_refused():
    df = _collide().rename(columns={"f1": "rate"})
    with pytest.raises(ValueError, match="group column 'rate' has the name of a column"):
        audit(df, y_true="y", y_pred="p", groups=["rate", "f2"], metrics="tpr")
    # one group column named "group" is the label column
    res = audit(
        _collide().rename(columns={"f1": "group"}), y_true="y", y_pred="p", groups="group", metrics="tpr", random_seed=0
    )
    assert list(res.groups.columns[:2]) == ["group", "metric"]


def test_default_reference_is_the_measured_group_with_most_trials_per_metric():
    # big: most rows, no actual positives and no predicted positives
    df = _rows({"big": (0, 0, 0, 500), "mid": (60, 40, 30, 70), "small": (70, 10, 5, 15)})
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["selection_rate", "tpr", "ppv"], random_seed=0)
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


@pytest.mark.filterwarnings("ignore::bayeseval._api.warnings.PrecisionLimitedWarning")
def test_conflict_column_flags_a_group_of_many_trials():
    # ten groups of 50,000 positives: TPR 0.80 in nine and 0.90 in the last, a gap of about
    # 50 binomial standard errors; the conflict column flags that group and no other
    rows = 50_000
    parts = []
    for g in range(10):
        hits = int(rows * (0.9 if g == 9 else 0.8))
        parts.append(pd.DataFrame({"y": 1, "p": [1] * hits + [0] * (rows - hits), "g": f"g{g}"}))
    res = audit(pd.concat(parts, ignore_index=True), y_true="y", y_pred="p", groups="g", metrics="tpr")
    table = res.groups.set_index("group")
    assert table["trials"].tolist() == [rows] * 10
    assert table["conflict"].tolist() == [False] * 9 + [True]


def test_compas_pooled_column_is_fit_crossed(compas):
    cols = ["race", "sex", "age_cat"]
    res = audit(compas, y_true="two_year_recid", y_pred="predicted_recid", groups=cols, metrics="tpr", random_seed=0)
    assert res.model == "crossed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyStratumWarning)
        counts = tabulate(compas, y_true="two_year_recid", y_pred="predicted_recid", strata=cols, metric="recall")
    direct = fit_crossed(counts, factors=cols, random_seed=1).table
    direct.index = [" | ".join(k) for k in direct.index]
    got = res.groups.set_index("group")
    assert len(got) == len(direct) == 36  # 6 races x 2 sexes x 3 ages, empty cells included
    for ours, theirs in (("pooled_mean", "mean"), ("pooled_lower", "lower"), ("pooled_upper", "upper")):
        assert np.allclose(got.loc[direct.index, ours], direct[theirs], atol=1e-12, rtol=0), ours
    assert (got.loc[direct.index, "predicted"].to_numpy() == direct["predicted"].to_numpy()).all()
    # the young Asian men (3 of 3 positives flagged): the crossed fit is not pulled to the
    # overall TPR (0.63 over all defendants) but follows the young cells of every race
    young = got.loc["Asian | Male | Less than 25"]
    overall = float(compas.loc[compas["two_year_recid"] == 1, "predicted_recid"].mean())
    assert young["pooled_mean"] > overall + 0.05


def test_small_cell_borrows_from_its_levels_not_the_grand_mean():
    df = _logit_cells((2, 4))  # raw 0.5 in a high row and a high column
    crossed, exchangeable = _audit(df), _audit(df, model="robust")
    assert (crossed.model, exchangeable.model) == ("crossed", "robust")
    additive = _additive_prediction(df)  # 0.82
    overall = float(df["p"].mean())  # 0.33
    c = crossed.groups.set_index("group").loc["a4 | b1"]
    e = exchangeable.groups.set_index("group").loc["a4 | b1"]
    assert c["rate"] == 0.5 and overall < 0.4 and additive > 0.75
    # pulled up, toward the additive prediction of its row and column ...
    assert c["rate"] + 0.1 < c["pooled_mean"] < additive
    # ... where the exchangeable model pulls it down, toward the overall rate
    assert overall < e["pooled_mean"] < c["rate"]


def test_empty_cell_prediction_follows_its_levels_and_is_labelled():
    df = _logit_cells((0, 0))
    crossed, exchangeable = _audit(df), _audit(df, model="robust")
    c = crossed.groups.set_index("group").loc["a4 | b1"]
    e = exchangeable.groups.set_index("group").loc["a4 | b1"]
    assert c["empty"] and c["predicted"] and not c["in_gap"] and np.isnan(c["rate"])
    assert c["pooled_mean"] > 0.6 and e["pooled_mean"] < 0.45
    diff = crossed.disparities.set_index(["measure", "group"]).loc[("difference", "a4 | b1")]
    assert diff["predicted"] and np.isnan(diff["estimate"]) and diff["posterior_mean"] > 0.15


def test_one_group_column_keeps_the_robust_exchangeable_model():
    df = _logit_cells((2, 4))
    res = audit(df, y_true="y", y_pred="p", groups="A", metrics="selection_rate", random_seed=0)
    assert res.model == "robust"
    counts = tabulate(df, y_true="y", y_pred="p", strata="A", metric="selection_rate")
    direct = fit_hierarchical(counts, model="robust", random_seed=5).summary(0.95)
    got = res.groups.set_index("group")
    # exact-engine summaries: the same up to the quadrature (no draws involved)
    assert np.allclose(got.loc[direct.index.astype(str), "pooled_mean"], direct["mean"], atol=2e-3)
    assert "robust Beta-binomial" in res.settings and "crossed" in _audit(df).settings


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"model": "bogus"}, ValueError, "unknown model 'bogus'"),
        ({"model": 3}, TypeError, "model must be a string.*got 3"),
        ({"min_trials": 0}, ValueError, "min_trials must be an integer >= 1, got 0"),
        ({"min_trials": 2.5}, TypeError, "min_trials must be an integer >= 1, got 2.5"),
    ],
)
def test_bad_model_and_min_trials(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        _audit(_logit_cells((2, 4)), **kwargs)


def test_crossed_model_needs_two_group_columns():
    with pytest.raises(ValueError, match="model='crossed'.*needs at least two; got 1 group column"):
        audit(_logit_cells((2, 4)), y_true="y", y_pred="p", groups="A", model="crossed")


def test_min_trials_leaves_tiny_groups_out_of_the_gap_and_the_verdict():
    df = _three_groups()
    kw = dict(
        y_true="y", y_pred="p", groups="g", metrics="selection_rate", tolerance=0.2, random_seed=0, method="bonferroni"
    )
    every, kept = audit(df, min_trials=1, **kw), audit(df, min_trials=10, **kw)
    gap_all = every.disparities.set_index("measure").loc["max-min gap"]
    gap_kept = kept.disparities.set_index("measure").loc["max-min gap"]
    # every group: c (3 of 3) sets the gap, and its interval reaches far up
    assert gap_all["estimate"] == pytest.approx(0.7)
    assert (gap_all["lower"], gap_all["upper"]) == pytest.approx(_cp_gap([(150, 500), (175, 500), (3, 3)]), abs=1e-9)
    assert every.verdicts["verdict"].tolist() == ["undecided"]
    # the headline gap is set by a group under 30 trials: the verdict says so
    assert every.verdicts["high"].tolist() == ["c"] and every.verdicts["low"].tolist() == ["a"]
    assert "fewer than 30 trials: 'c' (3 trials)" in every.verdicts["note"].iloc[0]
    # min_trials=10: the gap between a and b, decided within 0.2
    assert gap_kept["estimate"] == pytest.approx(0.05)
    assert (gap_kept["lower"], gap_kept["upper"]) == pytest.approx(_cp_gap([(150, 500), (175, 500)]), abs=1e-9)
    assert gap_kept["group"] == "2 of 3 measured (>= 10 trials)"
    assert kept.verdicts["verdict"].tolist() == ["within tolerance"]
    # c stays in the groups table, flagged, and a note names it
    table = kept.groups.set_index("group")
    assert table.loc["c", "trials"] == 3 and not table.loc["c", "in_gap"]
    assert table.loc[["a", "b"], "in_gap"].all()
    assert kept.notes == [
        "selection_rate: 1 group(s) with fewer than 10 trials are reported but "
        "left out of the max-min gap and the verdicts (min_trials=10): 'c' (3 trials)."
    ]
    # the posterior gap is over the same two groups: |theta_a - theta_b|, about 0.05
    assert gap_kept["posterior_mean"] == pytest.approx(0.05, abs=0.03)
    assert gap_kept["posterior_upper"] < 0.2 < gap_all["posterior_upper"]


def test_plot_labels_the_gap_over_the_groups_kept():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    res = audit(
        _three_groups(), y_true="y", y_pred="p", groups="g", metrics="selection_rate", min_trials=10, random_seed=0
    )
    labels = [t.get_text() for t in disparities(res).get_yticklabels()]
    assert labels[-1] == "selection_rate: max-min gap, 2 of 3 measured (>= 10 trials)"
    assert "selection_rate: c - a" in labels  # c stays among the differences


def test_report_audit_is_the_audit_of_the_same_rows(apart):
    rep = apart
    direct = audit(
        _rows_audit_report(APART),
        y_true="y",
        y_pred="p",
        groups=["race", "sex"],
        metrics=["selection_rate", "tpr", "fpr", "ppv"],
        tolerance=0.1,
        random_seed=0,
    )
    assert rep.audit.model == "crossed"
    pd.testing.assert_frame_equal(rep.audit.verdicts, direct.verdicts)
    cols = ["group", "metric", "successes", "trials", "rate", "adaptive_lower", "pooled_mean"]
    pd.testing.assert_frame_equal(rep.audit.groups[cols], direct.groups[cols])
    # selection rates 0.2 and 0.6 on 500 rows each: demographic parity is decided outside 0.1
    verdicts = rep.audit.verdicts.set_index("criterion")["verdict"]
    assert verdicts["demographic_parity"] == "outside"
    found = [f for f in rep.findings if f.flag == "fairness" and f.severity == "warning"]
    assert any("demographic_parity is outside the tolerance 0.1" in f.message for f in found)
    assert [f.message for f in found] == [w for w in rep.warnings if w.startswith("Fairness:")]


def test_audit_xlsx_keeps_every_text_cell_as_text(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    _, res = _saved_audit()
    book = openpyxl.load_workbook(res.save(tmp_path / "a.xlsx"))
    assert book.sheetnames == ["verdicts", "disparities", "groups", "labels_needed", "notes"]
    sheet = book["groups"]
    header = [c.value for c in sheet[1]]
    col = header.index("g") + 1
    cells = [sheet.cell(row=r, column=col) for r in range(2, sheet.max_row + 1)]
    assert {c.value for c in cells} == {'=HYPERLINK("http://x","y")', "b | c"}
    assert all(c.data_type == "s" for c in cells)
    trials = [sheet.cell(row=r, column=header.index("trials") + 1).value for r in range(2, sheet.max_row + 1)]
    # hand count: 75 positives and 75 negatives per group, for tpr then fpr
    assert sorted(trials) == [75, 75, 75, 75]


def test_audit_csv_neutralises_formulas_and_json_round_trips(tmp_path):
    _, res = _saved_audit()
    text = res.save(tmp_path / "a.csv").read_text()
    assert "'=HYPERLINK" in text and "\n=HYPERLINK" not in text
    data = json.loads(res.save(tmp_path / "a.json").read_text())
    assert data["verdicts"][0]["verdict"] == res.verdicts["verdict"].iloc[0]
    assert len(data["groups"]) == len(res.groups)
    with pytest.raises(ValueError, match=r"path must end in .*\.xlsx.*a\.pdf'"):
        res.save(tmp_path / "a.pdf")


def test_audit_html_and_markdown_carry_the_tables(tmp_path):
    from bs4 import BeautifulSoup

    _, res = _saved_audit()
    soup = BeautifulSoup(res.save(tmp_path / "a.html").read_text(), "html.parser")
    assert soup.title.string == "Fairness audit"
    text = soup.get_text(" ")
    assert "equal_opportunity" in text and "b | c" in text
    assert soup.find("img") is not None  # the forest plot inline
    assert not soup.find_all("script", src=True) and not soup.find_all("link", href=True)
    md = res.save(tmp_path / "a.md").read_text()
    assert md.startswith("# Fairness audit") and "## Verdicts" in md and "b &#124; c" in md


def test_audit_with_a_proxy_finds_a_known_gap_and_a_known_parity():
    outside = audit(
        _audit_pool(0.6), y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], tolerance=0.1, random_seed=0
    )
    assert outside.verdicts["verdict"].tolist() == ["outside"]
    assert outside.verdicts["method"].tolist() == ["bonferroni"]
    row = outside.verdicts.iloc[0]
    assert row["lower"] < 0.3 < row["upper"]  # the true gap
    within = audit(
        _audit_pool(0.9), y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], tolerance=0.15, random_seed=0
    )
    assert within.verdicts["verdict"].tolist() == ["within tolerance"]
    groups = within.groups.set_index("group")
    ref = proxy_ci(_audit_pool(0.9), y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table
    assert np.allclose(groups["rate"], ref["rate"]) and np.allclose(groups["lower"], ref["lower"])
    assert (groups["trials"] == ref["trials"]).all() and (groups["pool_trials"] == ref["pool_trials"]).all()


def test_audit_with_a_proxy_differences_are_mover_of_proxy_intervals():
    df = _audit_pool(0.7)
    res = audit(df, y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], reference="a", random_seed=0)
    ref = proxy_ci(df, y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table
    a, b = ref.loc["a"], ref.loc["b"]
    diff = res.disparities.query("measure == 'difference'").iloc[0]
    d = b["rate"] - a["rate"]
    lo = d - math.hypot(b["rate"] - b["lower"], a["upper"] - a["rate"])
    assert diff["estimate"] == pytest.approx(d) and diff["lower"] == pytest.approx(lo)
    assert diff["method"] == "mover"


def test_audit_labels_needed_counts_labels_with_the_proxy():
    df = _audit_pool(0.8, size=20_000)
    res = audit(df, y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], tolerance=0.12, random_seed=0)
    if res.verdicts["verdict"].iloc[0] != "undecided":
        pytest.skip("this seed decided the criterion")
    from bayeseval import sample_size
    from bayeseval._kernels.disparity import bonferroni_level

    groups = res.groups.set_index("group")
    row = res.verdicts.iloc[0]
    half = abs(row["tolerance"] - row["gap"]) / 2
    for _, need in res.labels_needed.iterrows():
        g = groups.loc[need["group"]]
        full = sample_size(
            halfwidth=half, rate=float(g["rate"]), level=bonferroni_level(row["level"], 2), method="clopper_pearson"
        )
        worth = round(g["effective_labels"]) if g["proxy_used"] else g["trials"]  # what the labels are worth
        per_label = max(worth / g["trials"], 1.0)
        assert need["extra_trials"] == math.ceil(max(full - worth, 0) / per_label)
        assert need["trials"] == g["trials"]


def test_audit_refuses_proxy_for_metrics_read_on_true_positives():
    with pytest.raises(ValueError, match=r"metrics \['tpr'\] do not take a proxy"):
        audit(_audit_pool(0.7, size=2000), y_true="y", y_pred="p", groups="g", proxy="j", metrics=["tpr", "ppv"])


def test_audit_guarantee_stratum_is_the_adaptive_interval_and_average_the_read_rule():
    from bayeseval import proportion_ci
    from bayeseval.models import fit_hierarchical

    rng = np.random.default_rng(2)
    g = rng.choice(list("abcdef"), 3000)
    y = rng.integers(0, 2, 3000)
    flip = rng.random(3000) < np.where(g == "f", 0.45, 0.15)
    df = pd.DataFrame({"g": g, "y": y, "p": np.where(flip, 1 - y, y)})
    stratum = audit(
        df, y_true="y", y_pred="p", groups="g", metrics=["error_rate"], random_seed=0, model="beta_binomial"
    )
    t = stratum.groups.set_index("group")
    lo, hi = proportion_ci(t["successes"].to_numpy(), t["trials"].to_numpy(), method="adaptive")
    assert np.allclose(t["lower"], lo) and np.allclose(t["upper"], hi)
    average = audit(
        df,
        y_true="y",
        y_pred="p",
        groups="g",
        metrics=["error_rate"],
        random_seed=0,
        model="beta_binomial",
        guarantee="average",
    ).groups.set_index("group")
    post = fit_hierarchical(t["successes"].to_numpy(), t["trials"].to_numpy(), strata=list(t.index), random_seed=0)
    read = post.summary(read=True)["read"]
    assert (average["read"] == read.reindex(average.index)).all()
    assert average.loc["f", "read"] == "adaptive"  # the outlying group reads its own interval
    pooled = average["read"] == "pooled"
    assert np.allclose(average.loc[pooled, "lower"], average.loc[pooled, "pooled_lower"])
    assert np.allclose(average.loc["f", ["lower", "upper"]], t.loc["f", ["lower", "upper"]])


def test_audit_takes_a_guarantee_object_and_shows_its_name():
    from bayeseval import Guarantee

    rng = np.random.default_rng(3)
    g = rng.choice(list("abcd"), 1500)
    y = rng.integers(0, 2, 1500)
    df = pd.DataFrame({"g": g, "y": y, "p": np.where(rng.random(1500) < 0.2, 1 - y, y)})
    kw = dict(y_true="y", y_pred="p", groups="g", metrics=["error_rate"], random_seed=0, model="beta_binomial")
    for name in ("stratum", "average"):
        by_object = audit(df, guarantee=Guarantee(name), **kw)
        pd.testing.assert_frame_equal(by_object.groups, audit(df, guarantee=name, **kw).groups, check_exact=True)
        assert by_object.guarantee == name
        assert ("Guarantee 'average'" in by_object.settings) == (name == "average")
    t = by_object.groups.set_index("group")  # "average": the pooled interval where the group reads it
    pooled = t["read"] == "pooled"
    assert pooled.any() and np.allclose(t.loc[pooled, "lower"], t.loc[pooled, "pooled_lower"])
    with pytest.raises(ValueError, match=r"guarantee.*\['stratum', 'average'\]"):
        audit(df, guarantee=Guarantee.anytime(), **kw)


# -- every group outside the gap is named: not measured (no trials) or left out (few trials) ---
def _hand_trials(df: pd.DataFrame, cols: list[str], metric: str) -> pd.Series:
    """Trials per crossed group by hand with pandas (every crossed cell, 0 where unobserved)."""
    rows = {
        "tpr": df["y"] == 1,
        "recall": df["y"] == 1,
        "fpr": df["y"] == 0,
        "ppv": df["p"] == 1,
        "selection_rate": df["y"].notna(),
    }[metric]
    full = (
        pd.MultiIndex.from_product([sorted(df[c].unique()) for c in cols])
        if len(cols) > 1
        else pd.Index(sorted(df[cols[0]].unique()))
    )
    keys = [df[c] for c in cols]
    return rows.groupby(keys).sum().reindex(full, fill_value=0).astype(int)


def _label(key) -> str:
    return " | ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _assert_every_group_named(res, df, cols, metrics, min_trials=30):
    """Each group outside a metric's gap is named in the audit's notes and in the note of every
    verdict row of that metric, as 'not measured' when it has no trials (pandas counts)."""
    text, page, data = res.to_text(), res.to_html(plot=False), json.dumps(res.to_dict())
    for m in metrics:
        trials = _hand_trials(df, cols, m)
        empty = [_label(k) for k, n in trials.items() if n == 0]
        small = [_label(k) for k, n in trials.items() if 0 < n < min_trials]
        mine = [n for n in res.notes if n.startswith(f"{m}: ")]
        rows = res.verdicts[res.verdicts["metric"] == m]
        for g in empty:
            assert any("not measured" in n and repr(g) in n for n in mine), (m, g, mine)
            for note in rows["note"]:
                assert note.startswith("not measured (no trials)") and repr(g) in note
        for g in small:
            assert any(
                f"fewer than {min_trials} trials" in n and f"{g!r} ({trials[_key(g, cols)]} trial" in n for n in mine
            ), (m, g, mine)
            assert all(repr(g) in note for note in rows["note"])
        for g in empty + small:  # and in every rendering
            assert repr(g) in text and repr(g) in data
            assert html.escape(repr(g)) in page


def _key(label, cols):
    return tuple(label.split(" | ")) if len(cols) > 1 else label


def _with_empty_group() -> pd.DataFrame:
    rng = np.random.default_rng(20)
    df = pd.DataFrame(
        {
            "g": ["a"] * 300 + ["b"] * 300 + ["c"] * 10 + ["d"] * 10,
            "y": rng.integers(0, 2, 620),
            "p": rng.integers(0, 2, 620),
        }
    )
    df.loc[df["g"] == "d", "y"] = 0  # d: ten rows, no positives (0 TPR trials, 10 FPR trials)
    return df


def test_a_group_with_no_trials_is_named_not_measured_like_a_small_one():
    df = _with_empty_group()
    res = audit(
        df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr", "selection_rate"], tolerance=0.2, random_seed=0
    )
    assert _hand_trials(df, ["g"], "tpr")["d"] == 0 and _hand_trials(df, ["g"], "fpr")["d"] == 10
    _assert_every_group_named(res, df, ["g"], ["tpr", "fpr", "selection_rate"])
    # d is not measured for TPR only: both criteria reading TPR say so, the FPR row does not
    notes = res.verdicts.set_index(["criterion", "metric"])["note"]
    assert "'d'" in notes[("equal_opportunity", "tpr")] and "'d'" in notes[("equalized_odds", "tpr")]
    assert "not measured" not in notes[("equalized_odds", "fpr")]
    assert "'d' (10 trials)" in notes[("equalized_odds", "fpr")]


def test_an_intersection_with_no_positives_and_a_cell_never_seen_are_named_for_recall():
    rng = np.random.default_rng(21)
    n = 900
    df = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["x", "y", "z"], n),
            "y": rng.integers(0, 2, n),
            "p": rng.integers(0, 2, n),
        }
    )
    df = df[~((df["sex"] == "F") & (df["race"] == "z"))]  # (F, z) never observed
    df.loc[(df["sex"] == "M") & (df["race"] == "x"), "y"] = 0  # (M, x): no positives
    res = audit(
        df, y_true="y", y_pred="p", groups=["sex", "race"], metrics=["recall", "ppv"], tolerance=0.3, random_seed=0
    )
    trials = _hand_trials(df, ["sex", "race"], "recall")
    assert trials[("F", "z")] == 0 and trials[("M", "x")] == 0
    _assert_every_group_named(res, df, ["sex", "race"], ["recall", "ppv"])
    # the metric is named as written, and the never-seen cell is not measured for ppv too
    assert any(n.startswith("recall: 2 group(s) with no trials") for n in res.notes)
    assert any(n.startswith("ppv: 1 group(s) with no trials") and "'F | z'" in n for n in res.notes)


def test_a_group_missing_from_one_metric_is_named_on_the_command_line(tmp_path, capsys):
    from bayeseval.cli.main import main

    df = _with_empty_group()
    df.loc[df["g"] == "c", "p"] = 0  # c: no predicted positives, so no PPV trials
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    args = [
        "audit",
        str(path),
        "--y-true",
        "y",
        "--y-pred",
        "p",
        "--groups",
        "g",
        "--metrics",
        "ppv,selection_rate",
        "--tolerance",
        "0.2",
        "--min-trials",
        "5",
        "--seed",
        "0",
    ]
    main(args)
    out = capsys.readouterr().out
    assert "ppv: 1 group(s) with no trials for ppv are not measured" in out and "'c'" in out
    main(args + ["--json"])
    data = json.loads(capsys.readouterr().out)
    ppv = [v for v in data["verdicts"] if v["metric"] == "ppv"]
    assert ppv and all(v["note"].startswith("not measured (no trials): 'c'") for v in ppv)
    rate = [v for v in data["verdicts"] if v["metric"] == "selection_rate"]
    assert rate and all("not measured" not in v["note"] for v in rate)  # ten rows: measured
