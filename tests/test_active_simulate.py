"""Seeded simulations: label savings of the hierarchical expected-width rule."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from bayeseval.campaign.simulation import plot_halfwidth, simulate, synthetic_pool

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def pool():
    # 12 strata, largest 100x the smallest (68,577 ... 724 rows), error rates 0.07 ... 0.18
    return synthetic_pool(n_rows=200_000, n_strata=12, random_seed=1)


@pytest.fixture(scope="module")
def ew_vs_ib(pool):
    return simulate(
        pool,
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        rules=["expected_width", "independent_beta"],
        n_repeats=8,
        batch_size=20,
        random_seed=0,
        progress=False,
        guarantee="average",  # the pooled rule's saving; the per-stratum guarantee is tested below
    )


def test_pool_is_very_unequal(pool):
    sizes = pool.groupby("stratum").size()
    rates = (pool["pred"] != pool["truth"]).groupby(pool["stratum"]).mean()
    assert len(sizes) >= 10 and sizes.max() / sizes.min() > 50
    assert rates.max() / rates.min() > 2


@pytest.mark.slow
def test_expected_width_saves_labels_over_independent_beta(ew_vs_ib):
    s = ew_vs_ib.summary()
    assert s["reached_goal"].eq(1.0).all()
    ew, ib = s.loc["expected_width", "labels_mean"], s.loc["independent_beta", "labels_mean"]
    # target: at least 20% fewer labels (seed 0, 8 repeats: 1288 vs 1733, 26%)
    assert ew <= 0.8 * ib
    # coverage of the true rates at stop (mean over 8 repeats x 12 strata), nominal 0.95.
    # Stated slack 0.05: binomial sd of a mean of 96 intervals is about 0.022, and pooled
    # intervals for fixed (not redrawn) rates sit about 0.01-0.015 below nominal even without
    # sequential stopping (see benchmarks/bench_active.py). Measured: 0.927 and 0.969.
    assert s.loc["expected_width", "coverage"] >= 0.90
    assert s.loc["independent_beta", "coverage"] >= 0.90
    # every run stops with every half-width at the target
    assert (ew_vs_ib.table["max_halfwidth"] <= 0.05).all()


@pytest.mark.slow
def test_expected_width_coverage_close_to_nominal_over_40_repeats(pool):
    # the default (robust) model, each stratum stopped on its pooled interval
    # (guarantee="average"): mean coverage at stop over 40 x 12 intervals within 0.025 of the
    # nominal 0.95
    res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth",
                   rules=["expected_width", "independent_beta"], n_repeats=40, batch_size=20,
                   random_seed=0, progress=False, guarantee="average")
    s = res.summary()
    assert res.table["reached_goal"].all()
    assert s.loc["expected_width", "coverage"] >= 0.925
    # and still at least 20% fewer labels than independent_beta (measured 1360 vs about 1750)
    assert s.loc["expected_width", "labels_mean"] <= 0.8 * s.loc["independent_beta", "labels_mean"]


@pytest.mark.slow
def test_expected_width_saves_80_percent_over_proportional(pool, ew_vs_ib):
    ew = ew_vs_ib.table.query("rule == 'expected_width'")["labels_used"].max()
    budget = int(5 * ew)
    # proportional random labelling (larger batches only to keep the test fast; random
    # sampling does not depend on the batch size): it does not reach the goal within 5x
    # the labels expected_width needed, so expected_width needs < 20% of its labels
    prop = simulate(
        pool,
        strata="stratum",
        y_pred="pred",
        y_true="truth",
        rules=["proportional"],
        n_repeats=2,
        batch_size=200,
        budget=budget,
        random_seed=0,
        progress=False,
    )
    assert (~prop.table["reached_goal"]).all()
    assert (prop.table["labels_used"] == budget).all()


@pytest.mark.slow
def test_trace_and_plot(ew_vs_ib):
    trace = ew_vs_ib.trace
    run = trace[(trace["rule"] == "expected_width") & (trace["repeat"] == 0)]
    # labels increase by the batch size each round, the final half-width meets the target
    assert np.all(np.diff(run["labels"]) == 20)
    assert run["max_halfwidth"].iloc[-1] <= 0.05 < run["max_halfwidth"].iloc[-2]
    final = ew_vs_ib.table.query("rule == 'expected_width' and repeat == 0")["labels_used"].iloc[0]
    assert run["labels"].iloc[-1] == final
    ax = plot_halfwidth(ew_vs_ib)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["expected_width", "independent_beta", "target 0.05"]


def test_simulation_is_reproducible(pool):
    kw = dict(strata="stratum", y_pred="pred", y_true="truth", rules=["thompson"], n_repeats=1,
              batch_size=50, target_halfwidth=0.08, random_seed=5, progress=False)
    a, b = simulate(pool, **kw), simulate(pool, **kw)
    assert a.table["labels_used"].tolist() == b.table["labels_used"].tolist()
    assert a.trace["max_halfwidth"].tolist() == b.trace["max_halfwidth"].tolist()


def test_true_rates_match_data(pool):
    res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth", rules=["uniform"],
                   n_repeats=1, batch_size=100, target_halfwidth=0.1, random_seed=0, progress=False)
    expected = (pool["pred"] != pool["truth"]).groupby(pool["stratum"]).mean()
    np.testing.assert_allclose(res.true_rates.to_numpy(), expected.to_numpy())


def test_overall_goal_uses_far_fewer_labels(pool):
    res = simulate(pool, strata="stratum", y_pred="pred", y_true="truth",
                   rules=["expected_width"], goal="overall", target_halfwidth=0.02,
                   n_repeats=2, batch_size=20, random_seed=0, progress=False)
    # simple random sampling needs n = z^2 p (1 - p) / h^2 labels for the weighted error rate
    # (pool-share weights: p is the pooled error rate); Neyman-like allocation plus pooling
    # should need no more, up to the noise of a sequential stop (slack 15%)
    p = float((pool["pred"] != pool["truth"]).mean())
    n_srs = 1.959964**2 * p * (1 - p) / 0.02**2
    assert res.table["reached_goal"].all()
    assert res.table["labels_used"].mean() <= 1.15 * n_srs
    assert (res.table["max_halfwidth"] > 0.05).all()  # strata themselves stay wide


def test_simulate_refuses_fractional_true_labels_naming_the_column():
    pool = synthetic_pool(2_000, 3, random_seed=0)
    noisy = pool.assign(truth=np.where(pool["truth"] == 1, 0.999999, 0.0))
    with pytest.raises(ValueError, match=r"y_true column 'truth' holds the fractional value 0\.999999"):
        simulate(noisy, strata="stratum", y_pred="pred", y_true="truth", n_repeats=1)


def test_bool_counts_are_type_errors_naming_the_argument():
    pool = synthetic_pool(2_000, 3, random_seed=0)
    for name in ("n_repeats", "batch_size"):
        with pytest.raises(TypeError, match=rf"^{name} must be an integer >= 1, got True"):
            simulate(pool, strata="stratum", y_pred="pred", y_true="truth", **{"n_repeats": 1, name: True})
    with pytest.raises(TypeError, match=r"^n_rows must be an integer >= 1, got True"):
        synthetic_pool(True, 3)


# -- guarantee="stratum" against the pooled rule ----------------------------------------------
def _atypical_pool():
    # four strata at 0.06-0.08 (2,000 rows each) and one at 0.14 (800 rows), exact error counts
    import pandas as pd

    frames = []
    for k, (rate, rows) in enumerate(zip([0.06, 0.06, 0.07, 0.08, 0.14], [2000] * 4 + [800], strict=True)):
        errors = np.zeros(rows, int)
        errors[: round(rate * rows)] = 1
        frames.append(pd.DataFrame({"g": f"s{k}", "pred": 0, "truth": errors}))
    return pd.concat(frames, ignore_index=True)


def _guarantee_runs(guarantee, repeats):
    return simulate(_atypical_pool(), strata="g", y_pred="pred", y_true="truth", rules=["expected_width"],
                    n_repeats=repeats, target_halfwidth=0.06, batch_size=40, random_seed=3, progress=False,
                    guarantee=guarantee).intervals


def test_stratum_guarantee_covers_the_atypical_stratum_the_pooled_rule_misses():
    # 20 seeded campaigns each: the pooled rule misses the stratum at 0.14 in 4 of them, the
    # default in 1; the default's coverage at stop, over all 100 stratum intervals, is at least
    # 0.94 minus two Monte Carlo standard errors (sqrt(0.94 * 0.06 / 100) = 0.024)
    stratum, average = _guarantee_runs("stratum", 20), _guarantee_runs("average", 20)
    odd = {name: runs.loc[runs["stratum"] == "s4", "covered"].astype(bool) for name, runs in
           (("stratum", stratum), ("average", average))}
    assert (~odd["average"]).sum() > (~odd["stratum"]).sum()
    assert stratum["covered"].astype(bool).mean() >= 0.94 - 2 * 0.024
    assert set(stratum["read"]) == {"guaranteed"}


@pytest.mark.slow
def test_stratum_guarantee_covers_the_atypical_stratum_over_100_repeats():
    # 100 seeded campaigns: the stratum at 0.14 is covered at stop at least 0.94 minus two Monte
    # Carlo standard errors (sqrt(0.94 * 0.06 / 100) = 0.024); the pooled rule covers it less often
    stratum, average = _guarantee_runs("stratum", 100), _guarantee_runs("average", 100)
    cov = {name: runs.loc[runs["stratum"] == "s4", "covered"].astype(bool).mean() for name, runs in
           (("stratum", stratum), ("average", average))}
    assert cov["stratum"] >= 0.94 - 2 * 0.024
    assert cov["average"] < cov["stratum"]
