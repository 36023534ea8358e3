"""``audit`` with ``population="pool"``: the groups of a fixed decision set, fully or partly labelled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import hypergeom

from bayeseval import Design, audit
from bayeseval._kernels.finite_pool import pool_ci
from tests.helpers import assert_raises_naming

POOL = Design(population="pool")


def _decisions(seed: int, rows: int = 600, share: float = 0.5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {"y": rng.integers(0, 2, rows).astype(float), "p": rng.integers(0, 2, rows), "g": rng.choice(list("abc"), rows)}
    )
    df.loc[rng.random(rows) > share, "y"] = np.nan
    return df


def _rows(res, metric: str) -> pd.DataFrame:
    return res.groups[res.groups["metric"] == metric].set_index("group")


def test_each_group_reads_pool_ci_on_its_labelled_counts():
    df = _decisions(0)
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["ppv", "error_rate", "selection_rate"], design=POOL)
    lab = df["y"].notna()
    for metric, trial, success in (
        ("ppv", df["p"] == 1, df["y"] == 1),
        ("error_rate", pd.Series(True, index=df.index), df["y"] != df["p"]),
    ):
        big_n = trial.groupby(df["g"]).sum()
        n = (trial & lab).groupby(df["g"]).sum()
        s = (trial & lab & success).groupby(df["g"]).sum()
        lo, hi = pool_ci(s.to_numpy(), n.to_numpy(), big_n.to_numpy(), 0.95)
        got = _rows(res, metric).loc[list(big_n.index)]
        np.testing.assert_array_equal(got["trials"], n.to_numpy())
        np.testing.assert_array_equal(got["successes"], s.to_numpy())
        np.testing.assert_allclose(got["lower"], lo)
        np.testing.assert_allclose(got["upper"], hi)
    # the selection rate reads the prediction only: known for every row of the pool
    sel = _rows(res, "selection_rate").loc[["a", "b", "c"]]
    exact = (df["p"] == 1).groupby(df["g"]).mean().to_numpy()
    np.testing.assert_allclose(sel["lower"], exact)
    np.testing.assert_allclose(sel["upper"], exact)
    assert res.design.startswith("600 rows in 3 groups; each row is its own unit")
    n_ppv = int(((df["p"] == 1) & lab).sum())
    assert f"{n_ppv} of the pool's {int((df['p'] == 1).sum())} ppv trials labelled" in res.design
    assert "simple random sample" in res.design


def test_differences_are_interval_arithmetic_on_the_groups_pool_intervals_at_the_bonferroni_level():
    df = _decisions(1)
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics="error_rate", design=POOL, reference="a")
    g = _rows(res, "error_rate").loc[["a", "b", "c"]]
    lo, hi = pool_ci(g["successes"].to_numpy(), g["trials"].to_numpy(), df.groupby("g").size().to_numpy(), 1 - 0.05 / 3)
    d = res.disparities[(res.disparities["measure"] == "difference")].set_index("group")
    for i, name in ((1, "b"), (2, "c")):
        assert d.loc[name, "lower"] == pytest.approx(lo[i] - hi[0])
        assert d.loc[name, "upper"] == pytest.approx(hi[i] - lo[0])
    gap = res.disparities[res.disparities["measure"] == "max-min gap"].iloc[0]
    assert gap["upper"] == pytest.approx(hi.max() - lo.min())


def test_group_coverage_is_at_least_the_level_for_every_pool_composition_by_enumeration():
    """A group of 16 rows, 8 drawn: one group per possible count of errors among the drawn rows;
    for every composition K (0..16 errors) the coverage of K/16 summed over the hypergeometric draw."""
    rows, drawn, level = 16, 8, 0.9
    parts = []
    for s in range(drawn + 1):
        y = np.zeros(rows)
        y[:s] = 1
        y[drawn:] = np.nan
        parts.append(pd.DataFrame({"y": y, "p": 0, "g": f"s{s}"}))
    res = audit(
        pd.concat(parts, ignore_index=True),
        y_true="y",
        y_pred="p",
        groups="g",
        metrics="error_rate",
        design=POOL,
        level=level,
    )
    g = _rows(res, "error_rate").loc[[f"s{s}" for s in range(drawn + 1)]]
    lo, hi = g["lower"].to_numpy(), g["upper"].to_numpy()
    s = np.arange(drawn + 1)
    for k in range(rows + 1):
        p = hypergeom.pmf(s, rows, k, drawn)
        assert np.sum(p[(lo <= k / rows + 1e-12) & (k / rows - 1e-12 <= hi)]) >= level - 1e-12


def test_every_row_labelled_knows_each_group_and_gives_exact_verdicts():
    df = _decisions(2).dropna()
    res = audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "error_rate"], design=POOL, tolerance=0.05)
    for metric, trial, success in (
        ("tpr", df["y"] == 1, df["p"] == 1),
        ("error_rate", pd.Series(True, index=df.index), df["y"] != df["p"]),
    ):
        exact = success[trial].groupby(df["g"][trial]).mean()
        got = _rows(res, metric).loc[list(exact.index)]
        np.testing.assert_allclose(got["lower"], exact.to_numpy())
        np.testing.assert_allclose(got["upper"], exact.to_numpy())
        v = res.verdicts.set_index("metric").loc[metric]
        gap = exact.max() - exact.min()
        assert v["lower"] == pytest.approx(gap) and v["upper"] == pytest.approx(gap)
        assert v["verdict"] == ("within tolerance" if gap <= 0.05 else "outside")


def test_refusals_name_the_arguments():
    df = _decisions(3)
    kw = dict(y_true="y", y_pred="p", groups="g", design=POOL)
    with pytest.raises(ValueError, match=r"metrics \['tpr'\] with design\.population='pool'"):
        audit(df, metrics=["tpr", "ppv"], **kw)
    assert_raises_naming(audit, "guarantee", df.dropna(), metrics="ppv", guarantee="average", **kw)


def test_groups_of_units_read_the_betting_interval_without_replacement_of_their_labelled_units():
    from bayeseval._kernels.bounded_mean import units_ci

    rng = np.random.default_rng(6)
    items = 120
    item = np.repeat(np.arange(items), 3)
    acc = rng.beta(3, 1, items)[item]
    df = pd.DataFrame(
        {"item": item, "y": (rng.random(len(item)) < acc).astype(float), "p": 1, "g": (item % 3).astype(str)}
    )
    df.loc[(rng.random(items) > 0.5)[item], "y"] = np.nan  # whole items unlabelled
    res = audit(
        df, y_true="y", y_pred="p", groups="g", metrics="error_rate", design=Design(cluster="item", population="pool")
    )
    lab = df.dropna().assign(e=lambda d: (d["y"] != d["p"]).astype(float))
    per = lab.groupby(["g", "item"])["e"].agg(["sum", "count"]).reset_index()
    table = per.groupby(["g", "sum", "count"]).size().rename("units").reset_index()
    table = table.rename(columns={"sum": "unit_successes", "count": "unit_trials"})
    sizes = df.groupby("g").agg(pool_units=("item", "nunique"), pool_trials=("item", "size")).assign(pool_largest=3)
    ref = units_ci(table, "g", 0.95, pool=sizes)
    got = _rows(res, "error_rate").loc[list(ref.index)]
    np.testing.assert_allclose(got["lower"], ref["lower"], atol=1e-9)
    np.testing.assert_allclose(got["upper"], ref["upper"], atol=1e-9)
    assert res.design.startswith("120 items in 3 groups") and "of the pool's 360 error_rate trials" in res.design
