"""A campaign round fits the posterior and the guaranteed intervals once per set of counts, reads its
counts in one pass, and reports exactly what a campaign computing everything afresh reports."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from bayeseval._kernels.guarantee import guaranteed_bounds
from bayeseval.campaign import Budget, Campaign, Each
from bayeseval.campaign.loop import rule_state as rule_state_module
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.loop.state import fit_state_posterior


def _pool(k: int = 6, per: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pred = rng.integers(0, 2, k * per)
    truth = np.where(rng.random(pred.size) < 0.15, 1 - pred, pred)
    return pd.DataFrame({"g": np.repeat([f"s{i}" for i in range(k)], per), "pred": pred, "y": truth})


def test_store_counts_equal_a_full_read_of_the_counts_table(tmp_path):
    pool = _pool()
    path = tmp_path / "c.db"
    c = Campaign.create(
        path,
        pool[["g", "pred"]],
        strata="g",
        y_pred="pred",
        goal=Each(0.15),
        random_seed=1,
        budget=Budget(batch_size=10),
    )
    for _ in range(2):
        batch = c.propose()
        c.ingest(pool.loc[batch.index[:6], "y"])  # some rows stay pending
    got = c._store.counts()
    with sqlite3.connect(path) as con:
        full = pd.read_sql("SELECT * FROM counts ORDER BY stratum", con).set_index("stratum")
    assert got.index.tolist() == full.index.tolist() == list(range(6))
    for column in ["labelled", "trials", "successes", "pending"]:
        assert got[column].tolist() == full[column].tolist()
    assert int(got["labelled"].sum()) == 12 and int(got["pending"].sum()) == 8
    assert (got["labelled"] == 0).any()  # strata without a count are filled in, not left out
    c.close()


def test_reused_fits_equal_fits_of_a_fresh_state():
    kw = dict(guarantee="stratum", target_halfwidth=0.1)
    s, n = [1, 4, 0, 7, 2], [20, 30, 0, 40, 25]
    a = RuleState.from_counts(s, n, available=[80, 70, 100, 60, 75], **kw)
    a.read_intervals()
    b = RuleState.from_counts(s, n, available=[70, 70, 90, 60, 75], pending=[10, 0, 10, 0, 0], **kw)
    assert b.reuse_fits(a)
    lo, hi = guaranteed_bounds(s, n, a.guarantee.stop_level(a.level))
    glo, ghi = b.guaranteed_intervals()
    np.testing.assert_array_equal(glo, lo)
    np.testing.assert_array_equal(ghi, hi)
    fresh = fit_state_posterior(b.counts)
    np.testing.assert_array_equal(b.posterior.mean().to_numpy(), fresh.mean().to_numpy())
    # other counts, or an anytime guarantee (its sequences depend on the rows left): nothing is taken
    assert not RuleState.from_counts([1, 4, 0, 7, 3], n, available=[80, 70, 100, 60, 75], **kw).reuse_fits(a)
    c = RuleState.from_counts(s, n, available=[80, 70, 100, 60, 75], guarantee="stratum", anytime=True)
    assert not c.reuse_fits(
        RuleState.from_counts(s, n, available=[80, 70, 100, 60, 75], guarantee="stratum", anytime=True)
    )


def test_a_round_computes_the_guaranteed_interval_once_and_reports_as_a_fresh_campaign(tmp_path, monkeypatch):
    pool = _pool(k=8, per=60, seed=2)
    calls = []
    original = rule_state_module.Guarantee.bounds

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(rule_state_module.Guarantee, "bounds", counting)
    c = Campaign.create(
        tmp_path / "c.db",
        pool[["g", "pred"]],
        strata="g",
        y_pred="pred",
        goal=Each(0.15),
        random_seed=3,
        budget=Budget(batch_size=20),
    )
    batch = c.propose()
    c.ingest(pool.loc[batch.index, "y"])
    c.status()
    calls.clear()
    batch = c.propose()  # the counts the last status read: fitted already
    assert calls == []
    c.ingest(pool.loc[batch.index, "y"])
    status = c.status()
    assert len(calls) == 1  # new counts: one computation for the status (and the next proposal)
    c.close()
    fresh = Campaign.open(tmp_path / "c.db")  # a new object fits everything again
    pd.testing.assert_frame_equal(fresh.status(), status)
    fresh.close()


@pytest.mark.parametrize("guarantee", ["stratum", "average"])
def test_a_campaign_run_is_the_same_with_and_without_reuse(tmp_path, monkeypatch, guarantee):
    pool = _pool(k=5, per=60, seed=4)

    def run(path):
        c = Campaign.create(
            path,
            pool[["g", "pred"]],
            strata="g",
            y_pred="pred",
            goal=Each(0.15),
            random_seed=5,
            guarantee=guarantee,
            budget=Budget(batch_size=25),
        )
        out = []
        for _ in range(4):
            batch = c.propose()
            out.append(list(batch.index))
            c.ingest(pool.loc[batch.index, "y"])
            out.append(c.status())
        c.close()
        return out

    reused = run(tmp_path / "a.db")
    monkeypatch.setattr(RuleState, "reuse_fits", lambda self, earlier: False)
    fresh = run(tmp_path / "b.db")
    for x, y in zip(reused, fresh, strict=True):
        if isinstance(x, pd.DataFrame):
            pd.testing.assert_frame_equal(x, y, check_exact=True)
        else:
            assert x == y


def test_greedy_batch_over_the_first_strata_equals_the_batch_over_all():
    from bayeseval.campaign.loop.rules import _greedy_take

    rng = np.random.default_rng(11)
    k = 500
    g = np.round(rng.random(k), 2)  # many ties: the lowest index wins them
    g[rng.random(k) < 0.1] = -np.inf
    p, cap = np.full(k, 0.8), rng.integers(1, 4, k)

    def gain_one(t):
        return lambda j: float(g[j]) / (1.0 + t[j])

    def reference(batch):  # a scan of every stratum per label
        counts, t, cur = np.zeros(k, np.int64), np.zeros(k), g.copy()
        for _ in range(batch):
            j = int(np.argmax(cur))
            if not np.isfinite(cur[j]):
                break
            counts[j] += 1
            t[j] += p[j]
            cur[j] = -np.inf if counts[j] >= cap[j] else g[j] / (1.0 + t[j])
        return counts

    for batch in (1, 7, 40, 450, 2000):
        t = np.zeros(k)
        got = _greedy_take(g, t, p, cap, batch, gain_one(t), np.zeros(k, np.int64))
        np.testing.assert_array_equal(got, reference(batch))


def test_rows_of_several_strata_in_one_statement_equal_one_query_per_stratum(tmp_path):
    pool = _pool(k=6, per=30, seed=6)  # half-width 0.3: within reach of 30 rows
    c = Campaign.create(
        tmp_path / "c.db", pool[["g", "pred"]], strata="g", y_pred="pred", goal=Each(0.3), random_seed=8
    )
    c.propose(25)  # some rows proposed already: never drawn again
    store = c._store
    wanted = [(0, 3), (2, 40), (5, 1), (3, 7)]
    with store.transaction("sample") as conn:
        one = {code: store.sample_rows(conn, code, m) for code, m in wanted}
        many = store.sample_rows_of(conn, wanted)
    assert list(many) == [0, 2, 5, 3] and many == one
    assert len(many[2]) < 40  # the stratum ran out
    c.close()


def test_proposal_order_equals_one_permutation_per_stratum_from_the_seed():
    from types import SimpleNamespace

    from bayeseval.campaign.loop.pool import proposal_order

    for trial in range(12):
        r = np.random.default_rng(trial)
        k, n = int(r.integers(1, 40)), int(r.integers(0, 400))
        design = SimpleNamespace(codes=r.integers(0, k, n), eligible=r.random(n) < 0.8, keys=list(range(k)))
        seed = np.random.SeedSequence(trial)
        rng = np.random.default_rng(seed)
        rows = np.flatnonzero(design.eligible)
        rows = rows[np.argsort(design.codes[rows], kind="stable")]
        b = np.searchsorted(design.codes[rows], np.arange(k + 1))
        reference = [rows[a:c][rng.permutation(c - a)] for a, c in zip(b[:-1], b[1:], strict=True)]
        got = proposal_order(design, seed)
        assert len(got) == k
        for x, y in zip(got, reference, strict=True):
            np.testing.assert_array_equal(x, y)
