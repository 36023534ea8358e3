"""``evaluate`` with ``population="pool"`` where some rows of the pool are unlabelled."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import hypergeom

import bayeseval as be
from bayeseval._kernels.bounded_mean import units_ci
from bayeseval._kernels.finite_pool import pool_ci
from bayeseval.estimate.intervals import proportion_ci

POOL = be.Design(population="pool")


def _quiet_evaluate(df: pd.DataFrame, **kw) -> be.Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayesevalWarning)
        return be.evaluate(df, random_seed=0, **kw)


def _pool(seed: int, rows: int = 300, share: float = 0.4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "y": rng.integers(0, 2, rows).astype(float),
            "p": rng.integers(0, 2, rows),
            "g": rng.choice(list("abcd"), rows),
        }
    )
    df.loc[rng.random(rows) > share, "y"] = np.nan
    return df


def _hand_bounds(df: pd.DataFrame, trial, success, level: float = 0.95):
    """Per stratum: pool size N (trials the prediction fixes), labelled trials n and successes s by a
    plain groupby, then pool_ci."""
    lab = df["y"].notna()
    big_n = trial(df, df["p"]).groupby(df["g"]).sum()
    n = (trial(df, df["p"]) & lab).groupby(df["g"]).sum()
    s = (trial(df, df["p"]) & lab & success(df)).groupby(df["g"]).sum()
    lo, hi = pool_ci(s.to_numpy(), n.to_numpy(), big_n.to_numpy(), level)
    return big_n, n, s, lo, hi


def test_each_stratum_reads_pool_ci_on_its_labelled_counts():
    df = _pool(0)
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", metric="error_rate", design=POOL)
    big_n, n, s, lo, hi = _hand_bounds(df, lambda d, _: pd.Series(True, index=d.index), lambda d: d["y"] != d["p"])
    np.testing.assert_array_equal(rep.table["pool_trials"], big_n.to_numpy())
    np.testing.assert_array_equal(rep.table["trials"], n.to_numpy())
    np.testing.assert_array_equal(rep.table["successes"], s.to_numpy())
    np.testing.assert_allclose(rep.table["lower"], lo)
    np.testing.assert_allclose(rep.table["upper"], hi)
    assert f"{int(n.sum())} of the pool's {int(big_n.sum())} trials labelled" in rep.design
    assert "simple random sample" in rep.design


def test_precision_counts_the_pool_by_the_prediction():
    df = _pool(1)
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", metric="precision", design=POOL)
    big_n, n, s, lo, hi = _hand_bounds(df, lambda d, pred: pred == 1, lambda d: d["y"] == 1)
    np.testing.assert_array_equal(rep.table["pool_trials"], big_n.to_numpy())
    np.testing.assert_array_equal(rep.table["trials"], n.to_numpy())
    np.testing.assert_allclose(rep.table["lower"], lo)
    np.testing.assert_allclose(rep.table["upper"], hi)


@pytest.mark.parametrize("labelled", [2, 10, 18])
def test_coverage_is_at_least_the_level_for_every_pool_composition_by_enumeration(labelled):
    """A pool stratum of 20 rows, ``labelled`` of them drawn: one stratum per possible count of errors
    among the drawn rows, evaluated once; then for every composition K of the pool (0..20 errors) the
    coverage of K/20 is summed over the hypergeometric draw (scipy.stats.hypergeom)."""
    rows, level = 20, 0.9
    parts = []
    for s in range(labelled + 1):
        y = np.zeros(rows)
        y[:s] = 1  # errors: y != p (p is 0)
        y[labelled:] = np.nan
        parts.append(pd.DataFrame({"y": y, "p": 0, "g": f"s{s:02d}"}))
    df = pd.concat(parts, ignore_index=True)
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", metric="error_rate", design=POOL, level=level)
    lo = rep.table["lower"].to_numpy()
    hi = rep.table["upper"].to_numpy()
    assert (rep.table["successes"].to_numpy() == np.arange(labelled + 1)).all()
    s = np.arange(labelled + 1)
    worst = 1.0
    for k in range(rows + 1):
        p = hypergeom.pmf(s, rows, k, labelled)
        covered = (lo <= k / rows + 1e-12) & (k / rows - 1e-12 <= hi)
        worst = min(worst, float(np.sum(p[covered])))
    assert worst >= level - 1e-12


def test_every_row_labelled_is_today_s_exact_pool():
    df = _pool(2).dropna()
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=POOL)
    errors = (df["y"] != df["p"]).groupby(df["g"]).mean()
    np.testing.assert_allclose(rep.table["lower"], errors.to_numpy())
    np.testing.assert_allclose(rep.table["upper"], errors.to_numpy())
    assert "pool_trials" not in rep.table.columns


def test_a_fully_labelled_stratum_is_exact_and_an_unlabelled_one_is_the_unit_interval():
    df = _pool(3)
    df.loc[df["g"] == "a", "y"] = df.loc[df["g"] == "a", "p"].astype(float)  # stratum a: every row labelled
    df.loc[df["g"] == "b", "y"] = np.nan  # stratum b: no label
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=POOL)
    assert rep.table.loc["a", "lower"] == rep.table.loc["a", "upper"] == 0.0
    assert (rep.table.loc["b", "lower"], rep.table.loc["b", "upper"]) == (0.0, 1.0)


def test_overall_is_the_bonferroni_sum_of_the_strata_pool_intervals():
    df = _pool(4)
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=POOL)
    t = rep.table
    share = t["pool_trials"] / t["pool_trials"].sum()
    lo, hi = pool_ci(t["successes"].to_numpy(), t["trials"].to_numpy(), t["pool_trials"].to_numpy(), 1 - 0.05 / 4)
    row = rep.overall.loc["unweighted"]
    assert row["estimate"] == pytest.approx(float((share * t["rate"]).sum()))
    assert row["lower"] == pytest.approx(float((share * lo).sum()))
    assert row["upper"] == pytest.approx(float((share * hi).sum()))


def test_metrics_whose_trials_need_the_truth_are_refused_naming_metric_and_population():
    df = _pool(5)
    with pytest.raises(ValueError, match=r"metric='recall'.*design\.population='pool'"):
        _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", metric="recall", design=POOL)
    # every row labelled: recall of the pool is known exactly, as before
    rep = _quiet_evaluate(df.dropna(), y_true="y", y_pred="p", strata="g", metric="recall", design=POOL)
    np.testing.assert_array_equal(rep.table["lower"], rep.table["upper"])


def _clustered_pool(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = 120
    item = np.repeat(np.arange(items), 3)
    acc = rng.beta(3, 1, items)[item]
    df = pd.DataFrame({"item": item, "ok": (rng.random(len(item)) < acc).astype(float), "g": (item % 3).astype(str)})
    drop = rng.random(items) > 0.5  # whole items unlabelled
    df.loc[drop[item], "ok"] = np.nan
    return df


def test_units_read_the_betting_interval_without_replacement_of_the_labelled_units():
    df = _clustered_pool(6)
    rep = _quiet_evaluate(
        df, outcome="ok", strata="g", metric="accuracy", design=be.Design(cluster="item", population="pool")
    )
    per_item = df.dropna().groupby(["g", "item"])["ok"].agg(["sum", "count"]).reset_index()
    table = (
        per_item.groupby(["g", "sum", "count"])
        .size()
        .rename("units")
        .reset_index()
        .rename(columns={"sum": "unit_successes", "count": "unit_trials"})
    )
    sizes = df.groupby("g").agg(pool_units=("item", "nunique"), pool_trials=("item", "size"))
    sizes["pool_largest"] = 3
    ref = units_ci(table, "g", 0.95, pool=sizes)
    np.testing.assert_allclose(rep.table["lower"], ref["lower"].reindex(rep.table.index), atol=1e-9)
    np.testing.assert_allclose(rep.table["upper"], ref["upper"].reindex(rep.table.index), atol=1e-9)
    assert (rep.table["pool_trials"] == 120).all()


def test_a_cluster_half_labelled_is_refused():
    df = _clustered_pool(7)
    df.loc[df.index[df["ok"].notna()][0], "ok"] = np.nan
    with pytest.raises(ValueError, match="design.cluster='item'"):
        _quiet_evaluate(df, outcome="ok", strata="g", design=be.Design(cluster="item", population="pool"))


@pytest.mark.parametrize(("fraction", "ratio"), [(0.1, 0.944), (0.5, 0.699), (0.9, 0.311)])
def test_width_against_the_process_interval_by_sampling_fraction(fraction, ratio):
    """Expected width over the hypergeometric draw (exact enumeration), a stratum of 1,000 rows at rate
    0.1: the pool interval is 0.944, 0.699 and 0.311 times the process's Clopper-Pearson interval at
    sampling fractions 0.1, 0.5 and 0.9 (about sqrt(1 - fraction), the finite-population correction)."""
    rows, hits = 1000, 100
    n = round(fraction * rows)
    s = np.arange(n + 1)
    p = hypergeom.pmf(s, rows, hits, n)
    lo, hi = pool_ci(s, np.full_like(s, n), np.full_like(s, rows), 0.95)
    cl, ch = proportion_ci(s, np.full_like(s, n), level=0.95, method="clopper_pearson")
    assert np.sum(p * (hi - lo)) / np.sum(p * (ch - cl)) == pytest.approx(ratio, abs=0.001)


def test_the_audit_section_of_a_partly_labelled_pool_takes_the_metrics_the_prediction_fixes():
    df = _pool(8)
    df["h"] = np.where(np.arange(len(df)) % 2 == 0, "u", "v")
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", groups="h", design=POOL)
    assert list(dict.fromkeys(rep.audit.groups["metric"])) == ["selection_rate", "ppv"]
    ref = be.audit(df, y_true="y", y_pred="p", groups="h", metrics=["selection_rate", "ppv"], design=POOL)
    np.testing.assert_allclose(rep.audit.groups["lower"], ref.groups["lower"])
    np.testing.assert_allclose(rep.audit.groups["upper"], ref.groups["upper"])


def test_graded_outcomes_read_the_betting_interval_without_replacement_row_by_row():
    rng = np.random.default_rng(9)
    df = pd.DataFrame({"ok": rng.choice([0.0, 0.5, 1.0], 300), "g": rng.choice(list("ab"), 300)})
    df.loc[rng.random(300) > 0.4, "ok"] = np.nan
    rep = _quiet_evaluate(df, outcome="ok", strata="g", metric="accuracy", design=POOL)
    lab = df.dropna()
    table = lab.groupby(["g", "ok"]).size().rename("units").reset_index()
    table = table.rename(columns={"ok": "unit_successes"}).assign(unit_trials=1)
    sizes = df.groupby("g").size().to_frame("pool_units").assign(pool_trials=lambda d: d["pool_units"], pool_largest=1)
    ref = units_ci(table, "g", 0.95, pool=sizes).reindex(rep.table.index)
    np.testing.assert_allclose(rep.table["lower"], ref["lower"], atol=1e-9)
    np.testing.assert_allclose(rep.table["upper"], ref["upper"], atol=1e-9)
    np.testing.assert_array_equal(rep.table["pool_trials"], df.groupby("g").size().to_numpy())
    assert (
        rep.design.startswith("300 rows in 2 strata") and f"{len(lab)} of the pool's 300 trials labelled" in rep.design
    )


def test_labels_still_needed_are_the_finite_pool_plan_less_the_labels_and_average_is_refused():
    from bayeseval._kernels.finite_pool import pool_sample_size

    df = _pool(10, rows=800, share=0.2)
    rep = _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=POOL, target_halfwidth=0.05)
    t = rep.table
    for _, row in t.iterrows():
        plan = pool_sample_size(0.05, int(row["pool_trials"]), float(row["rate"]), 0.95)
        assert row["extra_needed"] == min(max(1, plan - row["trials"]), row["pool_trials"] - row["trials"])
    assert any("more labels from the pool" in w for w in rep.warnings)
    with pytest.raises(ValueError, match=r"guarantee='average' with design\.population='pool'"):
        _quiet_evaluate(df, y_true="y", y_pred="p", strata="g", design=POOL, guarantee="average")
