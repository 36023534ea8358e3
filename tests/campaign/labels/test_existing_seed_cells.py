"""Campaigns started from labels chosen with unequal probabilities: the seed cell beside random draws."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval import Design
from bayeseval.campaign import Campaign, Decide, Each, Gap, Overall
from bayeseval.campaign.goals.guarantee import guarantee_stop_level
from bayeseval.campaign.labels.existing import seed_cell_bounds
from bayeseval.campaign.report import campaign_report_html

#: error rate of the rows the model calls positive / negative: the seed design below over-samples the first
RATE_POS, RATE_NEG = 0.4, 0.05


def _pool(n=1200, seed=0):
    """Two strata, 20% predicted positive; errors far more common among predicted positives."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b"], n)
    pred = (rng.random(n) < 0.2).astype(int)
    wrong = rng.random(n) < np.where(pred == 1, RATE_POS, RATE_NEG)
    return pd.DataFrame({"g": g, "pred": pred}), pd.Series(np.where(wrong, 1 - pred, pred), name="label")


def _half_by_prediction(pool, truth, per_cell=20, seed=1):
    """``per_cell`` labelled rows of each (stratum, prediction): half the seed among predicted positives."""
    rng = np.random.default_rng(seed)
    ids, probs = [], []
    for (_, _), rows in pool.groupby(["g", "pred"]):
        ids.extend(rng.choice(rows.index.to_numpy(), per_cell, replace=False).tolist())
        probs.extend([per_cell / len(rows)] * per_cell)
    return pd.DataFrame({"label": truth.loc[ids].to_numpy(), "p": probs}, index=ids)


def _create(path, pool, **kw):
    kw.setdefault("random_seed", 3)
    kw.setdefault("goal", Each(0.07))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Campaign.create(path, pool, strata="g", y_pred="pred", **kw)


def _mover_cp(s, n, w, level):
    """MOVER of Clopper-Pearson limits, by hand with SciPy's beta quantiles (an independent reference)."""
    a = 1 - level
    s, n, w = (np.asarray(x, dtype=float) for x in (s, n, w))
    rate = s / n
    lo = np.where(s == 0, 0.0, stats.beta.ppf(a / 2, s, n - s + 1))
    hi = np.where(s == n, 1.0, stats.beta.ppf(1 - a / 2, s + 1, n - s))
    est = float((w * rate).sum())
    low = est - np.sqrt(((w * (rate - lo)) ** 2).sum())
    up = est + np.sqrt(((w * (hi - rate)) ** 2).sum())
    return est, max(low, 0.0), min(up, 1.0)


@pytest.mark.parametrize(
    "seed, labelled, total", [((20, 50), (22, 90), 1000), ((0, 10), (7, 60), 300), ((3, 3), (3, 5), 40)]
)
def test_seed_cell_bounds_are_the_two_cells_mover_interval(seed, labelled, total):
    s0, n0 = seed
    s, n = labelled
    ref = _mover_cp([s0, s - s0], [n0, n - n0], [n0 / total, (total - n0) / total], 0.9)
    got = seed_cell_bounds(([s0], [n0]), ([s], [n]), [total], 0.9)
    np.testing.assert_allclose([float(x[0]) for x in got], ref, rtol=1e-9, atol=1e-12)


def test_a_stratum_without_random_draws_has_no_estimate_and_the_rest_in_0_1():
    est, lo, hi = seed_cell_bounds(([5, 4], [10, 4]), ([5, 4], [10, 4]), [100, 4], 0.95)
    assert np.isnan(est[0]) and est[1] == 1.0  # the second stratum is all seed: its rate is known
    l0, u0 = stats.beta.ppf([0.025, 0.975], [5, 6], [6, 5])  # the seed cell's Clopper-Pearson limits
    # MOVER with the rest's rate at 0 and limits [0, 1]: lower 0.1 * l0, upper 0.1 * 0.5 + sqrt(...)
    assert lo[0] == pytest.approx(0.1 * l0)
    assert hi[0] == pytest.approx(0.05 + np.sqrt((0.1 * (u0 - 0.5)) ** 2 + 0.9**2))


def test_the_seed_cell_estimate_is_unbiased_where_counting_the_seeds_is_not():
    """2,000 seeded draws of one stratum: 60 seed rows half among predicted positives, then 100 at random.

    The seed-cell estimate's mean is within 4 Monte Carlo standard errors of the pool's rate;
    the labelled rows' plain rate is off by more than 20 of its own (measured at this seed: the
    seed cell's bias +0.0006, MC SE 0.0006; the plain rate's +0.034, MC SE 0.0005, against a
    pool rate of 0.114).
    """
    rng = np.random.default_rng(7)
    n_pool, reps = 1000, 2000
    pred = rng.random(n_pool) < 0.2
    wrong = rng.random(n_pool) < np.where(pred, RATE_POS, RATE_NEG)
    rate = wrong.mean()
    # per draw: 30 random rows among the predicted positives and 30 among the others ...
    keys = rng.random((reps, n_pool))
    rank = np.empty_like(keys)
    for cell in (pred, ~pred):
        rank[:, cell] = np.argsort(np.argsort(keys[:, cell], axis=1), axis=1)
    seed = rank < 30
    # ... then 100 at random from the rows left
    keys = np.where(seed, np.inf, rng.random((reps, n_pool)))
    drawn = np.zeros_like(seed)
    np.put_along_axis(drawn, np.argpartition(keys, 100, axis=1)[:, :100], True, axis=1)
    s0 = (seed & wrong).sum(axis=1)
    s = s0 + (drawn & wrong).sum(axis=1)
    ests = seed_cell_bounds((s0, np.full(reps, 60)), (s, np.full(reps, 160)), np.full(reps, n_pool), 0.95)[0]
    naive = s / 160
    se = ests.std(ddof=1) / np.sqrt(len(ests))
    assert abs(ests.mean() - rate) < 4 * se
    naive_se = naive.std(ddof=1) / np.sqrt(len(naive))
    assert naive.mean() - rate > 20 * naive_se


def test_the_campaign_reads_the_seed_cell_and_draws_only_from_the_rest(tmp_path):
    pool, truth = _pool()
    seed = _half_by_prediction(pool, truth)
    c = _create(tmp_path / "c.db", pool, labels=seed, design=Design(inclusion="p"))
    for _ in range(2):
        batch = c.propose(80)
        assert not set(batch.index) & set(seed.index)
        c.ingest(truth.loc[batch.index])
    status = c.status()
    assert (status["read"] == "seeded").all() and "pooled_mean" not in status
    labels = c.labels()
    wrong = (labels["label"] != pool.loc[labels.index, "pred"]).astype(int)
    level = guarantee_stop_level(0.95)
    for g, size in pool.groupby("g").size().items():
        in_g = pool.loc[labels.index, "g"] == g
        is_seed = labels.index.isin(seed.index)
        s0, n0 = int(wrong[in_g & is_seed].sum()), int((in_g & is_seed).sum())
        sr, nr = int(wrong[in_g & ~is_seed].sum()), int((in_g & ~is_seed).sum())
        est, lo, hi = _mover_cp([s0, sr], [n0, nr], [n0 / size, (size - n0) / size], level)
        assert status.loc[g, "mean"] == pytest.approx(est)
        assert (status.loc[g, "lower"], status.loc[g, "upper"]) == pytest.approx((lo, hi))
        assert status.loc[g, "halfwidth"] == pytest.approx((hi - lo) / 2)
    with pytest.raises(ValueError, match="posterior\\(\\): .* no random sample"):
        c.posterior()
    assert "seeded" in campaign_report_html(c, plots=False)
    c.close()
    c = Campaign.open(tmp_path / "c.db")
    pd.testing.assert_frame_equal(c.status(), status)
    c.close()


def test_labels_of_one_probability_per_stratum_still_count_as_a_random_sample(tmp_path):
    pool, truth = _pool(n=600)
    seed = _half_by_prediction(pool, truth, per_cell=10)
    seed["p"] = pool.loc[seed.index, "g"].map({"a": 0.1, "b": 0.2}).to_numpy()
    c = _create(tmp_path / "c.db", pool, labels=seed, design=Design(inclusion="p"))
    assert "seeded" not in set(c.status()["read"])
    c.close()


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"goal": Overall(0.05)}, "only goal='each' reads; got goal='overall'"),
        ({"goal": Decide(0.1)}, "got goal='decide'"),
        ({"goal": Gap(0.05)}, "got goal='gap'"),
        ({"guarantee": "average"}, "got guarantee='average'"),
        ({"guarantee": "anytime"}, "not anytime=True"),
        ({"metric": "recall"}, "got metric='recall'"),
        ({"metric": ["error_rate", "accuracy"]}, "one metric"),
    ],
)
def test_campaigns_that_cannot_read_a_seed_cell_refuse_unequal_labels_naming_the_setting(tmp_path, kw, words):
    pool, truth = _pool(n=400)
    seed = _half_by_prediction(pool, truth, per_cell=5)
    kw = {"goal": Each(0.07), **kw}
    with pytest.raises(
        ValueError, match=r"design.inclusion='p': probabilities differ within stratum '[ab]' .*" + words
    ):
        _create(tmp_path / "c.db", pool, labels=seed, design=Design(inclusion="p"), **kw)
    assert not (tmp_path / "c.db").exists()


def test_a_proxy_campaign_refuses_unequal_labels(tmp_path):
    pool, truth = _pool(n=400)
    pool["proxy"] = truth.to_numpy()
    seed = _half_by_prediction(pool, truth, per_cell=5)
    with pytest.raises(ValueError, match="got proxy='proxy'"):
        _create(tmp_path / "c.db", pool, labels=seed, design=Design(inclusion="p"), proxy="proxy")
    assert not (tmp_path / "c.db").exists()


@pytest.mark.slow
def test_campaigns_from_a_half_by_prediction_seed_are_unbiased_and_cover_at_stop(tmp_path):
    """200 seeded campaigns on one pool, each from a new 50/50-by-prediction seed of 80 rows.

    After the first 100 random labels the seed-cell estimate's mean is within 4 Monte Carlo
    standard errors of each stratum's pool rate while the labelled rows' plain rate is off by
    more than 8 (measured: seed cell -0.002 and -0.001, MC SE 0.003; plain rate +0.033 and
    +0.050, MC SE 0.002; pool rates 0.120 and 0.135). Run to the stop (target half-width
    0.07), the interval covers the pool rate in at least 93% of the 400 stratum runs (nominal
    95%, binomial SE about 1.1 points at 0.95; measured 0.9975).
    """
    pool, truth = _pool()
    rate = (truth != pool["pred"]).groupby(pool["g"]).mean()
    first, naive, covered = [], [], []
    for s in range(200):
        seed = _half_by_prediction(pool, truth, seed=1000 + s)
        c = _create(tmp_path / f"c{s}.db", pool, labels=seed, design=Design(inclusion="p"), random_seed=s)
        batch = c.propose(100)
        c.ingest(truth.loc[batch.index])
        st = c.status()
        first.append(st["mean"])
        naive.append(st["successes"] / st["trials"])
        while not c.done:
            batch = c.propose(60)
            if len(batch) == 0:
                break
            c.ingest(truth.loc[batch.index])
        st = c.status()
        covered.extend(((st["lower"] <= rate) & (rate <= st["upper"])).tolist())
        c.close()
    first, naive = pd.DataFrame(first), pd.DataFrame(naive)
    se = first.std(ddof=1) / np.sqrt(len(first))
    assert (abs(first.mean() - rate) < 4 * se).all()
    naive_se = naive.std(ddof=1) / np.sqrt(len(naive))
    assert ((naive.mean() - rate) > 8 * naive_se).all()
    assert np.mean(covered) >= 0.93


def test_seeds_drawn_in_proportion_to_a_score_are_unbiased_too():
    """2,000 draws: seed rows taken one by one with probability 0.2 * the model's uncertainty, then 100 at random.

    Uncertain rows are wrong more often, so the labelled rows' plain rate overstates the rate
    (measured at this seed: +0.017, MC SE 0.0004, against a pool rate of 0.088); the seed-cell
    estimate's mean is within 4 Monte Carlo standard errors of the pool's rate (measured
    -0.0003, MC SE 0.0005).
    """
    rng = np.random.default_rng(11)
    n_pool, reps = 1000, 2000
    uncertainty = rng.random(n_pool)
    wrong = rng.random(n_pool) < 0.3 * uncertainty**2
    rate = wrong.mean()
    seed = rng.random((reps, n_pool)) < 0.2 * uncertainty  # Poisson sampling: a seed of random size
    keys = np.where(seed, np.inf, rng.random((reps, n_pool)))
    drawn = np.zeros_like(seed)
    np.put_along_axis(drawn, np.argpartition(keys, 100, axis=1)[:, :100], True, axis=1)
    n0, s0 = seed.sum(axis=1), (seed & wrong).sum(axis=1)
    s = s0 + (drawn & wrong).sum(axis=1)
    ests = seed_cell_bounds((s0, n0), (s, n0 + 100), np.full(reps, n_pool), 0.95)[0]
    naive = s / (n0 + 100)
    assert abs(ests.mean() - rate) < 4 * ests.std(ddof=1) / np.sqrt(reps)
    assert naive.mean() - rate > 20 * naive.std(ddof=1) / np.sqrt(reps)


def test_a_precision_campaign_reads_its_seed_cell_on_the_rows_predicted_positive(tmp_path):
    pool, truth = _pool(n=1500, seed=2)
    positives = pool.index[pool["pred"] == 1]
    rng = np.random.default_rng(4)
    score = pd.Series(rng.random(len(pool)), index=pool.index)
    chosen = positives[rng.random(len(positives)) < 0.5 * score.loc[positives].to_numpy()]
    seed = pd.DataFrame({"label": truth.loc[chosen].to_numpy(), "p": 0.5 * score.loc[chosen].to_numpy()}, index=chosen)
    c = _create(tmp_path / "c.db", pool, labels=seed, design=Design(inclusion="p"), metric="precision")
    batch = c.propose(60)
    assert set(pool.loc[batch.index, "pred"]) == {1} and not set(batch.index) & set(chosen)
    c.ingest(truth.loc[batch.index])
    status = c.status()
    labels = c.labels()
    hit = (labels["label"] == 1).astype(int)  # precision: a predicted positive that is one
    for g, size in (pool["pred"] == 1).groupby(pool["g"]).sum().items():
        in_g = pool.loc[labels.index, "g"] == g
        is_seed = labels.index.isin(chosen)
        s0, n0 = int(hit[in_g & is_seed].sum()), int((in_g & is_seed).sum())
        sr, nr = int(hit[in_g & ~is_seed].sum()), int((in_g & ~is_seed).sum())
        assert status.loc[g, "mean"] == pytest.approx(n0 / size * s0 / n0 + (size - n0) / size * sr / nr)
    c.close()
