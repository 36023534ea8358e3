"""evaluate under a sampling design: units (clusters) and graded outcomes."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import bayeseval as be
from bayeseval._kernels.bounded_mean import unit_ci
from bayeseval.cli.main import main

TRUE_RATE = 1.2 / 1.5  # mean of the items' Beta(1.2, 0.3) accuracy


def _answers(seed: int, strata: int = 4, items: int = 20, epochs: int = 5) -> pd.DataFrame:
    """Items in categories answered ``epochs`` times; item accuracy Beta(1.2, 0.3) (strongly clustered)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(1.2, 0.3, size=(strata, items))
    ok = (rng.random((strata, items, epochs)) < p[..., None]).astype(int)
    return pd.DataFrame(
        {
            "cat": np.repeat([f"c{k}" for k in range(strata)], items * epochs),
            "item": np.repeat(np.arange(strata * items), epochs),
            "ok": ok.ravel(),
        }
    )


def _quiet_evaluate(df: pd.DataFrame, **kw) -> be.Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayesevalWarning)
        return be.evaluate(df, random_seed=0, **kw)


def test_clusters_of_one_row_give_the_default_report_bit_for_bit():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"y": rng.integers(0, 2, 400), "p": rng.integers(0, 2, 400), "g": rng.choice(list("abcd"), 400)})
    df["row"] = np.arange(len(df))
    plain = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g")
    by_row = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=be.Design(cluster="row"))
    pd.testing.assert_frame_equal(plain.table, by_row.table)
    pd.testing.assert_frame_equal(plain.overall, by_row.overall)
    assert by_row.posterior is not None  # binary rows in units of one: the pooled model is fitted as before


def test_stratum_bounds_are_the_unit_interval_of_each_stratum_s_items():
    df = _answers(1)
    rep = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
    # reference: each item's successes and trials by a plain groupby, then the unit interval per stratum
    per_item = df.groupby(["cat", "item"])["ok"].agg(["sum", "count"]).reset_index()
    for cat, rows in per_item.groupby("cat"):
        est, lo, hi = unit_ci(rows["sum"].to_numpy(float), rows["count"].to_numpy(), np.ones(len(rows), int), 0.95)
        assert rep.table.loc[cat, "rate"] == pytest.approx(est)
        assert rep.table.loc[cat, "lower"] == pytest.approx(lo, abs=1e-9)
        assert rep.table.loc[cat, "upper"] == pytest.approx(hi, abs=1e-9)
        assert rep.table.loc[cat, "n_units"] == len(rows)
    assert rep.posterior is None
    assert np.isnan(rep.table["pooled_mean"]).all()


def test_clustered_intervals_keep_their_level_where_the_row_intervals_do_not():
    # 60 datasets x 4 strata = 240 intervals; the unit interval's coverage is >= 0.95 by
    # construction (measured 0.997 at this configuration): 0.93 leaves 2.2 MC SE at 0.95. The
    # row-level default treats 100 dependent rows as independent: measured 0.86 (MC SE 0.02).
    unit, rows = [], []
    for seed in range(60):
        df = _answers(seed)
        rep = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
        unit += list((rep.table["lower"] <= TRUE_RATE) & (TRUE_RATE <= rep.table["upper"]))
        if seed < 15:
            naive = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design())
            rows += list((naive.table["lower"] <= TRUE_RATE) & (TRUE_RATE <= naive.table["upper"]))
    assert np.mean(unit) >= 0.93
    assert np.mean(rows) <= 0.92


def test_graded_outcomes_without_a_cluster_use_each_row_as_a_unit():
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        {"score": rng.choice([0.0, 0.5, 1.0], 90, p=[0.2, 0.3, 0.5]), "g": np.repeat(["a", "b", "c"], 30)}
    )
    rep = _quiet_evaluate(df, outcome="score", strata="g", metric="accuracy")
    for g, rows in df.groupby("g"):
        values, counts = np.unique(rows["score"].to_numpy(), return_counts=True)
        est, lo, hi = unit_ci(values, np.ones(len(values), int), counts, 0.95)
        assert rep.table.loc[g, "successes"] == pytest.approx(rows["score"].sum())
        assert (rep.table.loc[g, "lower"], rep.table.loc[g, "upper"]) == pytest.approx((lo, hi), abs=1e-9)


def test_error_rate_of_graded_outcomes_is_one_minus_the_accuracy():
    df = _answers(2)
    acc = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
    err = _quiet_evaluate(df, outcome="ok", strata="cat", metric="error_rate", design=be.Design(cluster="item"))
    np.testing.assert_allclose(err.table["rate"], 1 - acc.table["rate"])
    # the betting orders are fixed per unit count, not mirrored: the two agree to the third decimal
    np.testing.assert_allclose(err.table["lower"], 1 - acc.table["upper"], atol=0.005)
    np.testing.assert_allclose(err.table["upper"], 1 - acc.table["lower"], atol=0.005)


def test_the_report_states_the_design_in_words():
    df = _answers(0, strata=3, items=20, epochs=5)
    rep = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
    assert rep.design == "60 items in 3 strata, 5 rows each; intervals treat the item as the unit"
    assert rep.design in str(rep)
    assert rep.design in rep._repr_html_()
    assert rep.to_dict()["design"] == rep.design


def test_units_needed_for_a_target_scale_with_the_square_of_the_width_ratio():
    df = _answers(4)
    rep = _quiet_evaluate(
        df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"), target_halfwidth=0.1
    )
    t = rep.table
    wide = t["halfwidth"] > 0.1
    assert wide.any()
    expected = np.ceil(t["n_units"] * (t["halfwidth"] / 0.1) ** 2 - t["n_units"])
    np.testing.assert_array_equal(t.loc[wide, "extra_needed"], expected[wide])
    assert (t.loc[~wide, "extra_needed"] == 0).all()
    assert any("more units" in w for w in rep.warnings)


def test_rows_that_repeat_an_item_warn_once_at_the_caller():
    df = _answers(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        be.evaluate(df, outcome="ok", strata="cat", metric="accuracy", random_seed=0)
    clustered = [w for w in caught if issubclass(w.category, be.ClusteredRowsWarning)]
    assert len(clustered) == 1
    assert clustered[0].filename == __file__
    assert "design=Design(cluster='item')" in str(clustered[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        be.evaluate(df, outcome="ok", strata="cat", metric="accuracy", random_seed=0, design=be.Design())
        be.evaluate(df.drop(columns="item"), outcome="ok", strata="cat", metric="accuracy", random_seed=0)
    assert not [w for w in caught if issubclass(w.category, be.ClusteredRowsWarning)]


def test_outcome_and_labels_are_exclusive_and_counts_refuse_a_design():
    df = _answers(0)
    with pytest.raises(TypeError, match="outcome"):
        be.evaluate(df, outcome="ok", y_true="ok", y_pred="ok")
    with pytest.raises(TypeError, match="design"):
        be.evaluate(be.Counts.from_arrays([1, 2], [10, 10]), design=be.Design(cluster="item"))
    with pytest.raises(ValueError, match="population"):
        be.evaluate(df, outcome="ok", design={"population": "everyone"})


def test_cli_report_takes_outcome_and_cluster(tmp_path, capsys):
    df = _answers(6, strata=3)
    path = tmp_path / "answers.csv"
    df.to_csv(path, index=False)
    code = main(
        [
            "report",
            str(path),
            "--outcome",
            "ok",
            "--strata",
            "cat",
            "--metric",
            "accuracy",
            "--cluster",
            "item",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    rep = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
    assert out["design"] == rep.design
    got = pd.DataFrame(out["strata"])
    np.testing.assert_allclose(sorted(got["lower"]), sorted(rep.table["lower"]))


def test_population_pool_with_every_row_labelled_knows_each_rate_exactly():
    df = pd.DataFrame({"y": [1, 0, 1, 1, 0, 1] * 10, "p": [1, 0, 0, 1, 0, 1] * 10, "g": list("aaabbb") * 10})
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=be.Design(population="pool"))
    errors = (df["y"] != df["p"]).groupby(df["g"]).mean()
    np.testing.assert_allclose(rep.table["lower"], errors.to_numpy())
    np.testing.assert_allclose(rep.table["upper"], errors.to_numpy())
    assert (
        rep.overall.loc["unweighted", "lower"] == rep.overall.loc["unweighted", "upper"] == (df["y"] != df["p"]).mean()
    )
    assert "population is the pool" in rep.design


def test_the_forest_plot_of_a_unit_report_shows_units_and_no_pooled_posterior():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import forest

    df = _answers(0, strata=3)
    rep = _quiet_evaluate(df, outcome="ok", strata="cat", metric="accuracy", design=be.Design(cluster="item"))
    ax = forest(rep)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("pooled posterior" in lab for lab in labels)
    assert any("its units" in lab for lab in labels)
    notes = [t.get_text() for t in ax.texts]
    assert notes == [f"{n} units" for n in rep.table["n_units"]]


def test_counts_tabulated_for_the_pool_keep_their_design_in_evaluate():
    df = pd.DataFrame({"y": [1, 0, 1, 1, 0, 1] * 10, "p": [1, 0, 0, 1, 0, 1] * 10, "g": list("aaabbb") * 10})
    counts = be.tabulate(df, y_true="y", y_pred="p", strata="g", design=be.Design(population="pool"))
    rep = _quiet_evaluate(counts)
    np.testing.assert_array_equal(rep.table["lower"], rep.table["upper"])
    np.testing.assert_allclose(rep.table["lower"], (df["y"] != df["p"]).groupby(df["g"]).mean().to_numpy())


def _mover(rate: np.ndarray, lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """MOVER for a weighted sum of independent rates (Zou and Donner 2008), written out here."""
    est = float(w @ rate)
    return (
        est,
        max(0.0, est - float(np.sqrt(np.sum((w * (rate - lo)) ** 2)))),
        min(1.0, est + float(np.sqrt(np.sum((w * (hi - rate)) ** 2)))),
    )


@pytest.mark.parametrize("guarantee", ["stratum", "average"])
def test_reweighted_rate_combines_the_unit_intervals_under_either_guarantee(guarantee):
    df = _answers(6, strata=4, items=15, epochs=4)
    w = {"c0": 0.4, "c1": 0.3, "c2": 0.2, "c3": 0.1}
    rep = _quiet_evaluate(
        df,
        outcome="ok",
        strata="cat",
        metric="accuracy",
        weights=w,
        guarantee=guarantee,
        design=be.Design(cluster="item"),
    )
    # reference: each stratum's unit interval from a plain groupby of items, combined by MOVER
    per_item = df.groupby(["cat", "item"])["ok"].agg(["sum", "count"]).reset_index()
    rate, lo, hi = [], [], []
    for _, rows in per_item.groupby("cat"):
        _, a, b = unit_ci(rows["sum"].to_numpy(float), rows["count"].to_numpy(), np.ones(len(rows), int), 0.95)
        rate.append(rows["sum"].sum() / rows["count"].sum())
        lo.append(a)
        hi.append(b)
    est, a, b = _mover(np.array(rate), np.array(lo), np.array(hi), np.array(list(w.values())))
    row = rep.overall.loc["reweighted"]
    assert (row["estimate"], row["lower"], row["upper"]) == pytest.approx((est, a, b), abs=1e-9)
    if guarantee == "average":  # the pooled intervals are narrower: the reweighted row does not use them
        assert rep.table["pooled_upper"].sub(rep.table["pooled_lower"]).lt(np.array(hi) - np.array(lo)).all()
        assert "posterior_weighted" in rep.overall.index
    else:
        assert "posterior_weighted" not in rep.overall.index


def test_posterior_weighted_rate_under_units_is_the_weighted_grid_mean_of_the_pooled_model():
    # the draws of the weighted rate against the exact grid means of each stratum (another path):
    # sum_k w_k E[theta_k] within Monte Carlo error (4,000 draws of a rate with sd < 0.03)
    df = _answers(8, strata=4, items=15, epochs=4)
    w = np.array([0.4, 0.3, 0.2, 0.1])
    rep = _quiet_evaluate(
        df,
        outcome="ok",
        strata="cat",
        metric="accuracy",
        weights=dict(zip(["c0", "c1", "c2", "c3"], w, strict=True)),
        guarantee="average",
        design=be.Design(cluster="item"),
    )
    means, _ = rep.posterior.exact.posterior_moments()
    got = rep.overall.loc["posterior_weighted"]
    assert got["estimate"] == pytest.approx(float(w @ means), abs=0.003)
    assert got["lower"] < float(w @ means) < got["upper"]
    assert got["upper"] - got["lower"] < rep.overall.loc["reweighted", "upper"] - rep.overall.loc["reweighted", "lower"]


@pytest.mark.parametrize(
    ("guarantee", "words"),
    [
        ("stratum", "cover each stratum's own rate (unit intervals, valid in finite samples)"),
        ("average", "are the pooled model's intervals over units (or unit intervals where atypical), covering on"),
    ],
)
def test_the_header_names_the_unit_intervals_not_the_adaptive_ones(guarantee, words):
    from bayeseval._render.report_page import header

    rep = _quiet_evaluate(
        _answers(2, strata=3),
        outcome="ok",
        strata="cat",
        metric="accuracy",
        guarantee=guarantee,
        design=be.Design(cluster="item"),
    )
    line = header(rep)[2]
    assert words in line
    assert "adaptive" not in line
    assert "adaptive" not in rep._repr_html_().split("lower bound of", 1)[1].split("'", 1)[0]


@pytest.mark.slow
def test_average_over_units_reads_an_outlying_stratum_s_unit_interval():
    # one category far below the others: the read rule points it to its unit interval, the others keep the
    # pooled one; the reference for the unit interval is unit_ci on a plain groupby of its items
    rng = np.random.default_rng(11)
    rates = [0.5] + [0.9] * 7
    p = np.concatenate([rng.beta(4 * r, 4 * (1 - r), 25) for r in rates])
    ok = (rng.random((p.size, 5)) < p[:, None]).astype(int)
    df = pd.DataFrame(
        {
            "cat": np.repeat([f"c{k}" for k in range(8)], 25 * 5),
            "item": np.repeat(np.arange(p.size), 5),
            "ok": ok.ravel(),
        }
    )
    kw = {"outcome": "ok", "strata": "cat", "metric": "accuracy", "design": be.Design(cluster="item")}
    rep = _quiet_evaluate(df, guarantee="average", **kw)
    t = rep.table
    assert t.loc["c0", "read"] == "units" and "below what the other strata predict" in t.loc["c0", "read_reason"]
    items = df[df["cat"] == "c0"].groupby("item")["ok"].agg(["sum", "count"])
    _, lo, hi = unit_ci(items["sum"].to_numpy(float), items["count"].to_numpy(), np.ones(len(items), int), 0.95)
    assert (t.loc["c0", "lower"], t.loc["c0", "upper"]) == pytest.approx((lo, hi), abs=1e-12)
    assert t.loc["c0", "upper"] > t.loc["c0", "pooled_upper"]  # the pooled interval is pulled toward the others
    pooled = t["read"] == "pooled"
    assert pooled.sum() >= 5
    assert (t.loc[pooled, "lower"] == t.loc[pooled, "pooled_lower"]).all()
    assert any("reads its own units' interval instead of the pooled one: 'c0'" in n for n in rep.notes)
    assert "read" not in _quiet_evaluate(df, guarantee="stratum", **kw).table.columns
    page = rep.to_html(plot=False)  # the page marks the interval read instead of the pooled one, as for rows
    assert page.count("><b>units</b></td>") == 1 and f"<b>{t.loc['c0', 'lower']:.4f}</b>" in page
