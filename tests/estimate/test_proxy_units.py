"""Proxy intervals with clusters: cells of whole units, betting limits per cell, MOVER over cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import bayeseval as be
from bayeseval import proxy_ci, tabulate
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval._kernels.proxy import mover_sum
from tests.helpers import _pool

KW = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "strata": "g", "metric": "accuracy"}

# the coverage study (test_coverage_of_epochs_with_a_judge): 4 categories x 60 items x 5 epochs
A, B, AGREE, EPOCHS, ITEMS, LABELLED, CATS = 1.2, 0.3, 0.85, 5, 60, 20, 4


def _epochs(n_items=40, labelled=15, epochs=5, seed=0, cats="ab"):
    """Items answered ``epochs`` times, each answer judged (85% agreement), ``labelled`` items per category."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in cats:
        p = rng.beta(A, B, n_items)
        for i in range(n_items):
            y = rng.random(epochs) < p[i]
            judge = np.where(rng.random(epochs) < AGREE, y, ~y)
            for e in range(epochs):
                rows.append((g, f"{g}{i}", e, int(y[e]), int(judge[e]), i < labelled))
    df = pd.DataFrame(rows, columns=["g", "item", "epoch", "y", "judge", "lab"])
    df["y_pred"] = 1
    df["y_true"] = np.where(df["lab"], df["y"], np.nan)
    return df


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"proxy": "score", "n_cells": 4},
        {"metric": "precision", "pos_label": 1, "y_pred": "y_pred"},
        {"metric": "error_rate", "strata": None},
    ],
)
def test_units_of_one_row_give_the_rows_interval_bit_for_bit(kw):
    df = _pool(size=3000, seed=4).rename(columns={"g": "g"})
    df["row"] = np.arange(len(df))
    args = {**KW, **kw}
    plain = proxy_ci(df, **args).table
    units = proxy_ci(df, design=be.Design(cluster="row"), **args).table
    pd.testing.assert_frame_equal(plain, units, check_exact=True)


def test_a_hand_built_histogram_per_cell_gives_the_cell_intervals():
    df = _epochs(n_items=40, labelled=20, seed=3)
    res = proxy_ci(df, design=be.Design(cluster="item"), **KW).table
    unit = df.groupby(["g", "item"]).agg(a=("y", "sum"), j=("judge", "sum"), lab=("lab", "first")).reset_index()
    unit["cell"] = (2 * unit["j"] >= EPOCHS).astype(int)
    for g in "ab":
        u = unit[unit["g"] == g]
        lab = u[u["lab"]]
        shares = u.groupby("cell").size() / len(u)  # equal unit sizes: row shares are unit shares
        hist = lab.groupby(["cell", "a"]).size().rename("units").reset_index()
        hist = hist.rename(columns={"a": "unit_successes"}).assign(unit_trials=EPOCHS)
        assert lab.groupby("cell").size().min() >= 3  # no merging in this data
        ci = units_ci(hist, "cell", 0.95)
        est, lo, hi = mover_sum(shares.to_numpy(), *(ci[c].to_numpy() for c in ("estimate", "lower", "upper")))
        row = res.loc[g]
        assert row["n_units"] == 20 and row["pool_units"] == 40 and row["trials"] == 100
        assert row["rate"] == pytest.approx(float(lab["a"].sum()) / 100 if not row["proxy_used"] else float(est))
        if row["proxy_used"]:
            assert (row["lower"], row["upper"]) == pytest.approx((max(float(lo), 0.0), min(float(hi), 1.0)), abs=1e-12)
        else:
            plain = units_ci(hist.assign(k=0), "k", 0.95).iloc[0]
            assert (row["lower"], row["upper"]) == pytest.approx((plain["lower"], plain["upper"]), abs=1e-12)
        # the agreement is each answer's own verdict against its truth
        rows = df[(df["g"] == g) & df["lab"]]
        assert row["agreement"] == pytest.approx(float((rows["judge"] == rows["y"]).mean()))


def test_both_branches_of_the_switch_are_the_hand_intervals():
    # stratum a: a judge that splits the items cleanly; stratum b: a judge that says nothing
    rows = []
    for g in "ab":
        for i in range(30):
            right = i % 3 != 0
            judge = int(right) if g == "a" else i % 2
            for e in range(4):
                rows.append((g, f"{g}{i}", int(right if e else (right and i % 5 != 0)), judge, i < 18))
    df = pd.DataFrame(rows, columns=["g", "item", "y", "judge", "lab"]).assign(y_pred=1)
    df["y_true"] = np.where(df["lab"], df["y"], np.nan)
    res = proxy_ci(df, design={"cluster": "item"}, **KW).table
    assert res["proxy_used"].tolist() == [True, False]
    lab = df[df["lab"] & (df["g"] == "b")].groupby("item")["y"].sum()
    hist = lab.value_counts().rename("units").rename_axis("unit_successes").reset_index().assign(unit_trials=4, k=0)
    plain = units_ci(hist, "k", 0.95).iloc[0]
    assert (res.loc["b", "lower"], res.loc["b", "upper"]) == (plain["lower"], plain["upper"])
    assert res.loc["b", "rate"] == pytest.approx(lab.sum() / (4 * 18))


def test_tabulate_with_a_cluster_counts_whole_units_per_cell():
    df = pd.DataFrame(
        {
            "g": "a",
            "item": [1, 1, 1, 2, 2, 3, 3, 4],
            "y_pred": 1,
            "judge": [1, 1, 0, 0, 0, 1, 0, 1],  # majorities: pass, fail, tie (a pass), pass
            "y_true": [1, 0, 1, 0, 0, np.nan, np.nan, 1],
        }
    )
    pc = tabulate(
        df, y_true="y_true", y_pred="y_pred", proxy="judge", strata="g", metric="accuracy", design={"cluster": "item"}
    )
    got = pc.table[["successes", "trials", "pool_trials", "units", "pool_units", "agreements"]]
    assert got.to_dict("list") == {
        "successes": [0, 3],
        "trials": [2, 4],
        "pool_trials": [2, 6],
        "units": [1, 2],
        "pool_units": [1, 3],
        "agreements": [2, 2],  # item 2: both rows; items 1 and 4: the first and the last row
    }
    assert pc.units[["cell", "unit_successes", "unit_trials", "units"]].to_dict("list") == {
        "cell": [0, 1, 1],
        "unit_successes": [0.0, 1.0, 2.0],
        "unit_trials": [2, 1, 3],
        "units": [1, 1, 1],
    }
    assert pc.cluster == "item"


def test_a_unit_labelled_on_some_rows_only_and_other_designs_are_refused():
    df = _epochs(n_items=10, labelled=4)
    df.loc[0, "y_true"] = np.nan
    with pytest.raises(ValueError, match=r"y_true column 'y_true' is missing on some trial rows of 1 units.*'item'"):
        proxy_ci(df, design={"cluster": "item"}, **KW)
    df = _epochs(n_items=10, labelled=4).assign(pi=0.5)
    with pytest.raises(ValueError, match=r"design=Design\(.*population='pool' is not taken"):
        proxy_ci(df, design={"cluster": "item", "population": "pool"}, **KW)
    with pytest.raises(ValueError, match="design cluster column 'nope'"):
        proxy_ci(df, design={"cluster": "nope"}, **KW)
    df["item"] = df["item"].where(df.index > 0)
    with pytest.raises(ValueError, match="design cluster column 'item' has missing values in 1 row"):
        proxy_ci(df, design={"cluster": "item"}, **KW)


def test_evaluate_reads_the_units_interval_and_refuses_the_average_guarantee():
    df = _epochs(n_items=40, labelled=20, seed=5)
    design = be.Design(cluster="item")
    want = proxy_ci(df, design=design, **KW).table
    rep = be.evaluate(df, design=design, **KW)
    assert np.array_equal(rep.table["lower"].to_numpy(), want["lower"].to_numpy())
    assert np.array_equal(rep.table["upper"].to_numpy(), want["upper"].to_numpy())
    assert np.array_equal(rep.table["rate"].to_numpy(), want["rate"].to_numpy())
    assert any("units of 'item'" in n for n in rep.notes)
    assert rep.design == "80 items in 2 strata, 5 rows each; intervals treat the item as the unit"
    df["h"] = np.where(df["item"].str[1:].astype(int) < 30, "x", "y")
    two = be.evaluate(df, design=design, **{**KW, "strata": ["g", "h"]})
    assert two.design == "80 items in 4 strata, 5 rows each; intervals treat the item as the unit"
    assert two.table["trials"].tolist() == [100, 0, 100, 0]  # the 20 labelled items are items 0-19
    one = be.evaluate(df, design=design, **{**KW, "strata": None})
    assert one.design.startswith("80 items in 1 stratum, 5 rows each")
    with pytest.raises(ValueError, match="guarantee='average' with proxy and design cluster 'item'"):
        be.evaluate(df, design=design, guarantee="average", **KW)


def test_effective_labels_count_the_units_not_their_rows():
    # every answer of an item has the item's outcome and a coin for a judge: 20 labelled items
    # x 5 answers are worth about 20 independent rows, not 100
    df = _epochs(n_items=60, labelled=20, seed=8)
    df["y"] = df.groupby("item")["y"].transform("first")
    items = df["item"].unique()
    df["judge"] = df["item"].map(dict(zip(items, np.random.default_rng(1).integers(0, 2, len(items)), strict=True)))
    df["y_true"] = np.where(df["lab"], df["y"], np.nan)
    units = proxy_ci(df, design={"cluster": "item"}, **KW).table
    rows = proxy_ci(df, **KW).table
    assert not units["proxy_used"].any()
    assert units["effective_labels"].between(12, 30).all() and (units["trials"] == 100).all()
    assert ((units["upper"] - units["lower"]) > 1.5 * (rows["upper"] - rows["lower"])).all()


def _cell_rates(a: float = A, b: float = B) -> np.ndarray:
    """Process row rate of the items whose majority verdict is a fail (0) and a pass (1), by quadrature
    (item accuracy Beta(a, b), each answer right with the item's accuracy, judged right with AGREE)."""
    half = EPOCHS // 2

    def parts(p):
        q = AGREE * p + (1 - AGREE) * (1 - p)  # a pass per answer
        tail = lambda k: stats.binom.sf(k - 1, EPOCHS - 1, q)  # noqa: E731  the other answers pass k or more
        # E[successes ; majority pass | p]: an answer right and passed needs half others, right and failed half + 1
        return (
            stats.binom.sf(half, EPOCHS, q),
            EPOCHS * p * (AGREE * tail(half) + (1 - AGREE) * tail(half + 1)),
            EPOCHS * p,
        )

    dens = stats.beta(a, b).pdf
    p1, y1, y = (integrate.quad(lambda p, i=i: parts(p)[i] * dens(p), 0, 1, limit=200)[0] for i in range(3))
    return np.array([(y - y1) / (EPOCHS * (1 - p1)), y1 / (EPOCHS * p1)])


def _study(n: int, seed: int) -> dict[str, np.ndarray]:
    """Per category: coverage of units / rows proxy intervals and the labels-only units interval; widths."""
    rng = np.random.default_rng(seed)
    p = rng.beta(A, B, size=(n, CATS, ITEMS))
    y = rng.random((n, CATS, ITEMS, EPOCHS)) < p[..., None]
    judge = np.where(rng.random(y.shape) < AGREE, y, ~y)
    grid = np.meshgrid(np.arange(n), np.arange(CATS), np.arange(ITEMS), np.arange(EPOCHS), indexing="ij")
    df = pd.DataFrame({k: v.ravel() for k, v in zip(("rep", "cat", "item", "epoch"), grid, strict=True)})
    df["y"], df["judge"], df["y_pred"] = y.ravel().astype(int), judge.ravel().astype(int), 1
    df["y_true"] = np.where(df["item"] < LABELLED, df["y"], np.nan)  # items are i.i.d.: the first 20 are a random 20
    kw = {**KW, "strata": ["rep", "cat"]}
    units = proxy_ci(df, design=be.Design(cluster="item"), **kw).table
    rows = proxy_ci(df, **kw).table
    # the estimand: the process rate of each proxy cell at the pool's row shares of the cells
    unit = df.groupby(["rep", "cat", "item"]).agg(a=("y", "sum"), j=("judge", "sum"))
    pass_share = (2 * unit["j"] >= EPOCHS).groupby(["rep", "cat"]).mean().to_numpy()
    rates = _cell_rates()
    target = pass_share * rates[1] + (1 - pass_share) * rates[0]
    lab = unit.reset_index()
    lab = lab[lab["item"] < LABELLED]
    hist = lab.groupby(["rep", "cat", "a"]).size().rename("units").reset_index()
    hist = hist.rename(columns={"a": "unit_successes"}).assign(unit_trials=EPOCHS)
    only = units_ci(hist, ["rep", "cat"], 0.95)

    def covers(t):
        lo, hi = t["lower"].to_numpy(), t["upper"].to_numpy()
        return ((lo <= target) & (target <= hi)).reshape(n, CATS).mean(axis=0)

    width = {k: (t["upper"] - t["lower"]).to_numpy() for k, t in (("units", units), ("rows", rows), ("only", only))}
    return {
        "units": covers(units),
        "rows": covers(rows),
        "only": covers(only),
        "width_units": width["units"],
        "width_rows": width["rows"],
        "width_only": width["only"],
        "proxy_used": units["proxy_used"].to_numpy(),
    }


@pytest.mark.slow
def test_coverage_of_epochs_with_a_judge():
    """600 datasets: per-category coverage of the units interval at least 0.94 (MC SE 0.009 at 0.95).

    Measured (seed 2026): units proxy interval 0.995-1.000 per category, the same proxy interval
    treating rows as independent 0.81-0.86; mean width 0.333 against 0.364 for the labels-only
    units interval (median ratio 0.94, the cells read in 60% of the categories), 0.135 for the
    rows' interval.
    """
    res = _study(600, 2026)
    assert (res["units"] >= 0.94).all()
    assert (res["rows"] < 0.9).all()  # the contrast: rows of an item treated as independent
    assert (res["only"] >= 0.94).all()
    assert res["width_units"].mean() < res["width_only"].mean()
    assert np.median(res["width_units"] / res["width_only"]) < 0.97


@pytest.mark.slow
def test_coverage_of_a_paired_difference_with_epochs_and_human_labels():
    """300 datasets, two models: per-category coverage of the difference at least 0.94 (MC SE 0.013 at 0.95).

    Models a (item accuracy Beta(1.2, 0.3)) and b (Beta(1, 0.5)) on 4 categories x 60 items x 5
    epochs, a judge agreeing 85% per answer, both models' answers of 20 items per category
    human-labelled. The estimand: the four judge cells' process differences at the pool's
    item shares. Measured (500 datasets, seed 11): 0.998-1.000 per category, mean width 0.58
    (on [-1, 1]), the cells read in 21% of the categories.
    """
    n, seed = 300, 11
    rng = np.random.default_rng(seed)
    betas = {"a": (1.2, 0.3), "b": (1.0, 0.5)}
    parts = []
    grid = np.meshgrid(np.arange(n), np.arange(CATS), np.arange(ITEMS), np.arange(EPOCHS), indexing="ij")
    base = pd.DataFrame({k: v.ravel() for k, v in zip(("rep", "cat", "item", "epoch"), grid, strict=True)})
    for m, (a, b) in betas.items():
        p = rng.beta(a, b, size=(n, CATS, ITEMS))
        y = rng.random((n, CATS, ITEMS, EPOCHS)) < p[..., None]
        judge = np.where(rng.random(y.shape) < AGREE, y, ~y)
        human = np.where(base["item"] < LABELLED, y.ravel().astype(float), np.nan)
        parts.append(base.assign(model=m, outcome=judge.ravel().astype(float), human=human))
    df = pd.concat(parts, ignore_index=True)
    res = be.compare_models(df, strata=["rep", "cat"], human="human", design=be.Design(cluster="item"), adjust="none")
    tab = res.table[res.table["stratum"] != "(all)"]
    rates = {m: _cell_rates(*ab) for m, ab in betas.items()}
    item = df.groupby(["rep", "cat", "item", "model"])["outcome"].mean().unstack("model")
    va, vb = (item["a"] >= 0.5).to_numpy(int), (item["b"] >= 0.5).to_numpy(int)
    target = pd.Series(rates["a"][va] - rates["b"][vb], index=item.index).groupby(["rep", "cat"]).mean()
    key = pd.MultiIndex.from_tuples([tuple(int(v) for v in s.split(" | ")) for s in tab["stratum"]])
    t = target.reindex(key).to_numpy()
    covered = (tab["lower"].to_numpy() <= t) & (t <= tab["upper"].to_numpy())
    cat = key.get_level_values(1).to_numpy()
    coverage = np.array([covered[cat == c].mean() for c in range(CATS)])
    assert (coverage >= 0.94).all(), coverage


def test_two_stratum_columns_a_score_and_a_parquet_path_give_the_pandas_units(tmp_path):
    df = _epochs(n_items=40, labelled=20, seed=5, cats="abc")
    df["h"] = np.where(df["item"].str[1:].astype(int) % 2 == 0, "x", "y")
    df["score"] = np.random.default_rng(0).random(len(df)) * 0.3 + df["judge"] * 0.6
    path = tmp_path / "answers.parquet"
    df.drop(columns=["lab"]).to_parquet(path)
    design = be.Design(cluster="item")
    for kw in ({**KW, "strata": ["g", "h"]}, {**KW, "proxy": "score"}):
        want = proxy_ci(df, design=design, **kw).table
        got = proxy_ci(str(path), design=design, **kw).table
        pd.testing.assert_frame_equal(got, want, check_index_type=False)
        assert (want["n_units"] > 0).all() and want["lower"].le(want["rate"]).all()
    # each (g, h) stratum holds 20 items, 10 of them labelled; its estimate is a share-weighted cell rate
    two = proxy_ci(df, design=design, **{**KW, "strata": ["g", "h"]}).table
    assert two["pool_units"].tolist() == [20] * 6 and two["n_units"].tolist() == [10] * 6
    plain = ~two["proxy_used"]
    rates = df[df["lab"]].groupby(["g", "h"])["y"].mean()
    np.testing.assert_allclose(two.loc[plain, "rate"], rates[plain.to_numpy()])
