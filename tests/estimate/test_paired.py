"""Tests of ``bayeseval.estimate.paired.compare_models``: several models on the same items.

References: exact trinomial enumeration of the coverage (binary single answers), the
Bonett-Price adjusted Wald interval pinned to the published example of R's ``statpsych``
(``ci.prop.ps(.05, 12, 4, 26, 6)``: 0.2548067, 0.6251933), Holm and Bonferroni against
statsmodels' ``multipletests``, tie groups on hand-built data, and the command line on a file
built from Inspect logs.
"""

from __future__ import annotations

import json
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import bayeseval as be
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval.cli.main import main
from bayeseval.estimate.paired import _tie_groups, compare_models, holm
from bayeseval.io import read_inspect
from tests.helpers import _close_figures  # noqa: F401

matplotlib.use("Agg")

DATA = "tests/io/data"
LEVEL = 0.95
#: the (p10, p01) grid of the exact enumeration: steps of 0.05, p10 + p01 <= 1 (231 points)
GRID = [(a / 20, b / 20) for a in range(21) for b in range(21 - a)]


# -- exact enumeration, binary single answers ---------------------------------------------------
def _compositions(n: int) -> np.ndarray:
    """Every (n10, n01, n_tie) with sum n: the sufficient statistic of n binary paired answers."""
    return np.array([(i, j, n - i - j) for i in range(n + 1) for j in range(n + 1 - i)])


def _betting(n: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """compare_models' interval for every composition (its kernel call, vectorised over compositions)."""
    c = _compositions(n)
    rows = [(k, s, 1, cnt) for k, comp in enumerate(c) for s, cnt in zip((1.0, 0.0, 0.5), comp, strict=True) if cnt]
    hist = pd.DataFrame(rows, columns=["key", "unit_successes", "unit_trials", "units"])
    ci = units_ci(hist, "key", level).sort_index()
    return c, 2 * ci["lower"].to_numpy() - 1, 2 * ci["upper"].to_numpy() - 1


def _wald(n: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c = _compositions(n)
    d = (c[:, 0] - c[:, 1]) / n
    sd = np.sqrt(((c[:, 0] + c[:, 1]) / n - d**2) / (n - 1))
    z = stats.norm.ppf(0.5 + level / 2)
    return c, d - z * sd, d + z * sd


def _bonett_price(n10: Any, n01: Any, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Adjusted Wald interval for paired proportions (Bonett and Price 2012, Stat. Med. 31)."""
    p10, p01 = (np.asarray(n10) + 1) / (n + 2), (np.asarray(n01) + 1) / (n + 2)
    d = p10 - p01
    se = np.sqrt((p10 + p01 - d**2) / (n + 2))
    z = stats.norm.ppf(0.5 + level / 2)
    return np.clip(d - z * se, -1, 1), np.clip(d + z * se, -1, 1)


def _coverage(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    n = int(c[0].sum())
    out = []
    for p10, p01 in GRID:
        pmf = stats.multinomial.pmf(c, n, [p10, p01, max(0.0, 1.0 - p10 - p01)])
        d = p10 - p01
        out.append(pmf[(lo <= d + 1e-12) & (d - 1e-12 <= hi)].sum())
    return np.array(out)


def _pairs_frame(n10: int, n01: int, n_tie: int) -> pd.DataFrame:
    """Two models' binary single answers with the given discordant and concordant counts."""
    a = [1] * n10 + [0] * n01 + [1] * n_tie
    b = [0] * n10 + [1] * n01 + [1] * n_tie
    items = list(range(len(a)))
    return pd.DataFrame({"model": ["a"] * len(a) + ["b"] * len(b), "item": items * 2, "outcome": a + b})


@pytest.mark.parametrize(("n", "expected_min"), [(10, 0.9887), (20, 0.9872), (30, 0.9894)])
def test_exact_coverage_of_binary_single_answers_holds_the_level(n, expected_min):
    """Exact coverage over the whole grid is at least the level; the paired Wald interval falls far
    below it and the Bonett-Price adjusted Wald interval below it (the figures of the docstring)."""
    c, lo, hi = _betting(n, LEVEL)
    cov = _coverage(c, lo, hi)
    assert cov.min() >= LEVEL and cov.min() == pytest.approx(expected_min, abs=5e-4)
    wald = _coverage(*_wald(n, LEVEL))
    assert wald.min() < 0.8
    bp = _coverage(c, *_bonett_price(c[:, 0], c[:, 1], n, LEVEL))
    assert 0.85 < bp.min() < LEVEL
    # compare_models gives these intervals (adjust="none": the interval at the level itself)
    for k in (1, len(c) // 3, len(c) - 2):
        res = compare_models(_pairs_frame(*c[k]), reference="b", adjust="none").table.iloc[0]
        assert res["n_items"] == n and res["estimate"] == pytest.approx((c[k][0] - c[k][1]) / n)
        assert (res["lower"], res["upper"]) == pytest.approx((lo[k], hi[k]), abs=1e-9)


def test_bonett_price_reference_matches_the_published_example():
    """statpsych's ci.prop.ps(.05, f00=12, f01=4, f10=26, f11=6): LL 0.2548067, UL 0.6251933."""
    lo, hi = _bonett_price(26, 4, 48, 0.95)
    assert (float(lo), float(hi)) == pytest.approx((0.2548067, 0.6251933), abs=1e-6)


# -- seeded coverage: epochs, partial credit, clusters ---------------------------------------------
def _graded_runs(n_sets: int, n_items: int, epochs: int, seed: int, passage: int = 1) -> tuple[pd.DataFrame, float]:
    """``n_sets`` datasets (stratum ``set``): item difficulty q ~ Beta(2, 1), shared by the items of a
    passage when ``passage > 1``; model a scores (Bern(q) + Bern(q)) / 2 per epoch (partial credit
    0.5), model b the same with 0.85 q. True difference E[q] - E[0.85 q] = 0.15 * 2/3 = 0.1."""
    rng = np.random.default_rng(seed)
    n_pass = n_items // passage
    q = np.repeat(rng.beta(2.0, 1.0, size=(n_sets, n_pass)), passage, axis=1)
    q = np.clip(q + rng.normal(0, 0.05, size=q.shape) * (passage > 1), 0, 1)
    frames = []
    for name, scale in (("a", 1.0), ("b", 0.85)):
        p = np.broadcast_to((q * scale)[:, :, None], (n_sets, n_items, epochs))
        score = (rng.random(p.shape) < p).astype(float) / 2 + (rng.random(p.shape) < p).astype(float) / 2
        s, i, e = np.meshgrid(np.arange(n_sets), np.arange(n_items), np.arange(epochs), indexing="ij")
        frames.append(
            pd.DataFrame(
                {
                    "model": name,
                    "set": s.ravel(),
                    "item": i.ravel(),
                    "passage": i.ravel() // passage,
                    "epoch": e.ravel(),
                    "outcome": score.ravel(),
                }
            )
        )
    # with passages the item's own shift changes E[q] only by clipping, negligible at sd 0.05
    return pd.concat(frames, ignore_index=True), 0.15 * 2.0 / 3.0


@pytest.mark.parametrize(
    ("n_items", "epochs", "passage", "design"),
    [(25, 3, 1, None), (40, 2, 4, {"cluster": "passage"})],
)
def test_seeded_coverage_of_graded_clustered_answers(n_items, epochs, passage, design):
    """300 seeded datasets per configuration; tolerance: level - 2 MC SE (0.025 at 300 sets)."""
    frame, truth = _graded_runs(300, n_items, epochs, seed=45 + passage, passage=passage)
    res = compare_models(frame, strata="set", design=design, adjust="none").table
    per_set = res[res["stratum"] != "(all)"]
    assert len(per_set) == 300 and (per_set["n_units"] == n_items // passage).all()
    covered = ((per_set["lower"] <= truth) & (truth <= per_set["upper"])).mean()
    assert covered >= LEVEL - 2 * np.sqrt(LEVEL * (1 - LEVEL) / 300)
    # the estimate is the mean over items of the epoch-averaged difference
    one = frame[frame["set"] == 7]
    item_means = one.groupby(["model", "item"])["outcome"].mean().unstack("model")
    assert per_set.set_index("stratum").loc["7", "estimate"] == pytest.approx(
        (item_means["a"] - item_means["b"]).mean()
    )


def test_clusters_make_the_unit_the_passage():
    frame, _ = _graded_runs(1, 40, 2, seed=3, passage=4)
    by_item = compare_models(frame).table.iloc[0]
    by_passage = compare_models(frame, design={"cluster": "passage"}).table.iloc[0]
    assert (by_item["n_units"], by_passage["n_units"]) == (40, 10)
    assert by_item["estimate"] == pytest.approx(by_passage["estimate"])
    assert by_passage["upper"] - by_passage["lower"] > by_item["upper"] - by_item["lower"]


# -- multiplicity ---------------------------------------------------------------------------------
def test_holm_and_bonferroni_match_statsmodels():
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = rng.uniform(0, 0.2, size=rng.integers(1, 12)) ** 2
        np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=1e-12)
    p = np.array([0.01, np.nan, 0.04, 0.03])
    np.testing.assert_allclose(holm(p)[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="holm")[1])
    assert np.isnan(holm(p)[1])


def _three_models(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = pd.DataFrame({"item": range(90), "task": np.repeat(["x", "y", "z"], 30)})
    parts = [
        items.assign(model=m, outcome=(rng.random(90) < p).astype(float))
        for m, p in [("a", 0.95), ("b", 0.65), ("c", 0.2)]
    ]
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("adjust", ["holm", "bonferroni"])
def test_adjusted_p_values_and_interval_level_follow_the_family(adjust):
    res = compare_models(_three_models(), strata="task", adjust=adjust)
    table = res.table
    assert res.family_size == len(table) == 3 * 4  # 3 pairs x (3 tasks + overall)
    assert res.interval_level == pytest.approx(1 - 0.05 / 12)
    np.testing.assert_allclose(table["p_adjusted"], multipletests(table["p_value"], method=adjust)[1], rtol=1e-12)
    assert (table["separable"] == (table["p_adjusted"] <= 0.05)).all()
    # an interval at the Bonferroni level that excludes 0 is always separable (under Holm too)
    excludes = (table["lower"] > 0) | (table["upper"] < 0)
    assert table.loc[excludes, "separable"].all()
    if adjust == "bonferroni":  # and under Bonferroni the two are the same claim
        assert (excludes == table["separable"]).all()


# -- tie groups -----------------------------------------------------------------------------------
def test_tie_groups_on_a_hand_built_case():
    """60 items: a all right, b misses 2, c right on every other item, d always wrong, e like c
    except 3 more right. Separable: a/c, a/d, a/e, b/c, b/d, b/e, c/d, e/d; not: a/b, c/e."""
    n = 60
    scores = {
        "a": np.ones(n),
        "b": np.r_[np.zeros(2), np.ones(n - 2)],
        "c": np.tile([1.0, 0.0], n // 2),
        "d": np.zeros(n),
        "e": np.tile([1.0, 0.0], n // 2),
    }
    scores["e"][[1, 3, 5]] = 1.0
    frame = pd.concat([pd.DataFrame({"model": m, "item": range(n), "outcome": s}) for m, s in scores.items()])
    res = compare_models(frame)
    sep = {frozenset(k.split(" - ")): v for k, v in zip(res.table["pair"], res.table["separable"], strict=True)}
    assert not sep[frozenset("ab")] and not sep[frozenset("ce")]
    assert all(sep[frozenset(p)] for p in ("ac", "ad", "ae", "bc", "bd", "be", "cd", "de"))
    board = res.leaderboard
    assert board["model"].tolist() == ["a", "b", "e", "c", "d"]
    assert board["tie_group"].tolist() == [1, 1, 2, 2, 3]
    assert board.set_index("model")["rank"].to_dict() == {"a": 1, "b": 2, "e": 3, "c": 4, "d": 5}


def test_tie_groups_follow_the_groups_best_model_not_the_neighbour():
    """b is separable from a but c (fewer items, say) is not: c joins a's group; b starts group 2."""
    sep = {frozenset("ab"): True, frozenset("ac"): False, frozenset("ad"): True, frozenset("bc"): True}
    assert _tie_groups(["a", "b", "c", "d"], sep) == {"a": 1, "c": 1, "b": 2, "d": 2}


def test_reference_compares_each_model_with_it():
    res = compare_models(_three_models(), strata="task", reference="b")
    assert set(res.table["pair"]) == {"a - b", "c - b"} and res.family_size == 8
    overall = res.leaderboard[res.leaderboard["stratum"] == "(all)"].set_index("model")
    assert overall["vs_reference"].to_dict() == {"a": "above", "b": "reference", "c": "below"}
    assert overall["tie_group"].isna().all()


# -- inputs ---------------------------------------------------------------------------------------
def test_epochs_are_averaged_and_unpaired_items_dropped_with_a_note():
    frame = pd.DataFrame(
        {
            "model": ["a"] * 6 + ["b"] * 5,
            "item": [1, 1, 2, 2, 3, 4] + [1, 1, 2, 2, 3],
            "outcome": [1, 0, 1, 1, 1, 1] + [0, 0, 0.5, 0.5, 1],
        }
    )
    res = compare_models(frame)
    row = res.table.iloc[0]
    # item 1: 0.5 - 0; item 2: 1 - 0.5; item 3: 0; item 4 answered by a only
    assert row["n_items"] == 3 and row["estimate"] == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert res.notes == ("a - b: 1 item(s) answered by only one of the two models dropped",)


def test_y_true_y_pred_give_the_same_comparison_as_their_outcome():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"model": np.repeat(["a", "b"], 30), "item": np.tile(range(30), 2)})
    frame["y"] = np.tile(rng.integers(0, 2, 30), 2)
    frame["pred"] = np.where(rng.random(60) < 0.8, frame["y"], 1 - frame["y"])
    frame["hit"] = (frame["y"] == frame["pred"]).astype(float)
    a = compare_models(frame, y_true="y", y_pred="pred").table
    b = compare_models(frame, outcome="hit").table
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": "who"}, ValueError, "model column 'who'"),
        ({"item": "id"}, ValueError, "item column 'id'"),
        ({"strata": "nope"}, ValueError, "strata column 'nope'"),
        ({"outcome": "score"}, ValueError, "outcome column 'score' must lie in"),
        ({"outcome": "outcome", "y_true": "y"}, ValueError, "either outcome"),
        ({"y_true": "outcome"}, ValueError, "y_true and y_pred"),
        ({"reference": "zz"}, ValueError, "reference 'zz'"),
        ({"adjust": "fdr"}, ValueError, "adjust"),
        ({"level": 1.5}, ValueError, "level"),
        ({"design": {"cluster": "item", "inclusion": "w"}}, ValueError, "inclusion"),
        ({"design": {"cluster": "item", "population": "pool"}}, ValueError, "population"),
        ({"design": {"cluster": "nope"}}, ValueError, "design cluster column 'nope'"),
        ({"design": "item"}, TypeError, "design"),
    ],
)
def test_refusals_name_the_argument(kwargs, error, match):
    frame = pd.DataFrame({"model": list("aabb"), "item": [1, 2, 1, 2], "outcome": [1, 0, 0, 0], "score": [2, 0, 1, 1]})
    with pytest.raises(error, match=match):
        compare_models(frame, **kwargs)


def test_refuses_one_model_and_a_non_frame():
    with pytest.raises(ValueError, match="at least two models"):
        compare_models(pd.DataFrame({"model": ["a", "a"], "item": [1, 2], "outcome": [1, 0]}))
    with pytest.raises(TypeError, match="frame must be a pandas DataFrame"):
        compare_models({"model": ["a"]})


def test_a_design_object_with_a_cluster_attribute_is_read():
    class Design:  # the shape of bayeseval.Design: only .cluster is read here
        cluster, inclusion, population = "passage", None, "process"

    frame, _ = _graded_runs(1, 40, 2, seed=3, passage=4)
    a = compare_models(frame, design=Design()).table
    pd.testing.assert_frame_equal(a, compare_models(frame, design={"cluster": "passage"}).table)


# -- result object, plot, JSON, command line --------------------------------------------------------
def test_result_protocol_plot_and_json():
    res = compare_models(_three_models(), strata="task")
    assert res.to_frame().equals(res.table) and res.to_frame() is not res.table
    page = res._repr_html_()
    assert "Paired differences" in page and "Leaderboard" in page and "(all)" in repr(res)
    data = json.loads(json.dumps(res.to_dict()))
    assert len(data["differences"]) == 12 and data["differences"][0]["pair"] == "a - b"
    assert {r["tie_group"] for r in data["leaderboard"]} <= {1, 2, 3}
    ax = res.plot()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z", "(all)"]
    assert len(ax.containers) == 3  # one errorbar set per pair
    with pytest.raises(ValueError, match="pair 'a - z'"):
        res.plot(pair="a - z")
    assert be.compare_models is compare_models and be.estimate.compare_models is compare_models


def test_command_line_round_trip_on_inspect_logs(tmp_path, capsys):
    """Two Inspect logs (two models, 6 items, 3 epochs) -> CSV -> ``bayeseval compare --json``."""
    records = read_inspect([f"{DATA}/inspect_model-a.eval", f"{DATA}/inspect_model-b.json"])
    frame = records.frame.drop(columns=["metadata.note"])
    path = tmp_path / "answers.csv"
    frame.to_csv(path, index=False)
    code = main(["compare", str(path), "--strata", "metadata.category", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    expected = compare_models(frame.astype({"item": str}), strata="metadata.category")
    got = pd.DataFrame(out["differences"])
    assert got["stratum"].tolist() == expected.table["stratum"].tolist() == ["bio", "geo", "math", "(all)"]
    np.testing.assert_allclose(
        got[["estimate", "lower", "upper", "p_value"]], expected.table[["estimate", "lower", "upper", "p_value"]]
    )
    # the item means by hand: model b minus model a over the 6 items
    means = frame.groupby(["model", "item"])["outcome"].mean().unstack("model")
    assert got["estimate"].iloc[-1] == pytest.approx((means["mockllm/model-b"] - means["mockllm/model-a"]).mean())
    # parquet, a reference, and the text output
    pq = tmp_path / "answers.parquet"
    frame.astype({"item": str}).to_parquet(pq)
    assert main(["compare", str(pq), "--reference", "mockllm/model-a", "--adjust", "none"]) == 0
    text = capsys.readouterr().out
    assert "mockllm/model-b - mockllm/model-a" in text and "Leaderboard" in text
    assert main(["compare", str(path), "--reference", "nobody"]) == 2
    assert "--reference 'nobody'" in capsys.readouterr().err
    assert main(["compare", str(path), "--strata", "nope"]) == 2
    assert "--strata column 'nope'" in capsys.readouterr().err


def test_a_model_absent_from_a_stratum_has_no_tie_group_there():
    frame = _three_models()
    frame = frame[~((frame["model"] == "c") & (frame["task"] == "z"))]
    res = compare_models(frame, strata="task")
    z = res.leaderboard[res.leaderboard["stratum"] == "z"].set_index("model")
    assert z.loc["c", "n_items"] == 0 and pd.isna(z.loc["c", "tie_group"]) and z.loc["a", "tie_group"] == 1
    assert res.table.query("stratum == 'z' and model_b == 'c'")["n_items"].tolist() == [0, 0]
    assert res.family_size == 10  # the two comparisons without a paired item are not tested
    assert res.notes == (
        "a - c: 30 item(s) answered by only one of the two models dropped",
        "b - c: 30 item(s) answered by only one of the two models dropped",
    )
