"""Tests of the campaign store: crash safety, concurrency, validation, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.campaign.store import CampaignStore

ROOT = Path(__file__).resolve().parents[1]


def make_pool(n=3000, k=6, seed=0, str_ids=False):
    rng = np.random.default_rng(seed)
    sizes = rng.dirichlet(np.ones(k) * 0.7)
    g = rng.choice([f"g{i}" for i in range(k)], size=n, p=sizes)
    pred = rng.integers(0, 2, n)
    index = pd.Index([f"r{i}" for i in range(n)], name="rid") if str_ids else pd.Index(np.arange(n) * 3 + 1, name="rid")
    return pd.DataFrame({"g": g, "pred": pred, "other": rng.normal(size=n)}, index=index)


def truth_of(rid) -> int:
    # deterministic oracle: a hash of the id
    return int(sum(map(ord, str(rid))) % 4 == 0)


def oracle(batch: pd.DataFrame) -> pd.Series:
    return pd.Series([truth_of(r) for r in batch.index], index=batch.index)


def consistency(path):
    """Counts table equals what the labels and proposals tables imply."""
    store = CampaignStore(path)
    try:
        conn = store.conn
        labels = conn.execute(
            "SELECT pool.stratum, COUNT(*), SUM(l.trial), SUM(l.success) FROM labels l "
            "JOIN pool ON pool.rid = l.rid GROUP BY pool.stratum"
        ).fetchall()
        pend = dict(
            conn.execute(
                "SELECT pool.stratum, COUNT(*) FROM proposals p JOIN pool ON pool.rid = p.rid "
                "WHERE p.status = 'pending' GROUP BY pool.stratum"
            ).fetchall()
        )
        counts = store.counts()
        for code, n, t, s in labels:
            assert counts.loc[code, "labelled"] == n
            assert counts.loc[code, "trials"] == t
            assert counts.loc[code, "successes"] == s
        assert counts["labelled"].sum() == sum(r[1] for r in labels)
        for code in counts.index:
            assert counts.loc[code, "pending"] == pend.get(code, 0)
        # every labelled proposal has exactly one label and vice versa
        lab = {r[0] for r in conn.execute("SELECT rid FROM labels")}
        prop_l = {r[0] for r in conn.execute("SELECT rid FROM proposals WHERE status = 'labelled'")}
        assert lab == prop_l
        return lab
    finally:
        store.close()


# -- basic behaviour -----------------------------------------------------------------------
# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_propose_ingest_roundtrip_int_ids(tmp_path):
    pool = make_pool()
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=3)
    b = c.propose(25, show_prediction=True)
    assert len(b) == 25 and b.index.dtype == np.int64 and b.index.name == "rid"
    # rows come from the pool with their stratum and (when asked) prediction
    assert (pool.loc[b.index, "g"].to_numpy() == b["g"].to_numpy()).all()
    assert (pool.loc[b.index, "pred"].to_numpy() == b["pred"].to_numpy()).all()
    assert "other" not in b.columns  # only the columns the campaign needs
    b2 = c.propose(25)
    assert not set(b.index) & set(b2.index)  # never re-proposes pending rows
    assert c.ingest(oracle(b)) == 25
    st = c.status()
    truth = oracle(b)
    errors = (truth != pool.loc[b.index, "pred"]).groupby(pool.loc[b.index, "g"]).sum()
    assert st["labelled"].sum() == 25
    assert st["pending"].sum() == 25
    assert (st["successes"].reindex(errors.index) == errors).all()
    assert c.labels_used == 25
    c.close()


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_string_ids_roundtrip_and_dataframe_ingest(tmp_path):
    pool = make_pool(str_ids=True)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=1)
    b = c.propose(10)
    assert b.index.dtype == object and all(isinstance(x, str) for x in b.index)
    frame = pd.DataFrame({"id": b.index, "label": oracle(b).to_numpy()})
    assert c.ingest(frame, id_column="id", label_column="label") == 10
    assert set(c.labels().index) == set(b.index)
    c.close()


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_status_intervals_match_exact_engine(tmp_path):
    """The campaign's fast grid agrees with bayeseval.models' exact engine (ExactFit)."""
    from bayeseval.models.exact import ExactFit

    pool = make_pool(n=4000, k=6, seed=2)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=2, model="beta_binomial")
    for _ in range(6):
        c.ingest(oracle(c.propose(40)))
    st = c.status()
    fit = ExactFit(c.counts(), grid_size=64)
    mean, _ = fit.posterior_moments()
    q = fit.quantiles([0.025, 0.975])
    np.testing.assert_allclose(st["pooled_mean"], mean, atol=2e-3)  # the pooled posterior, beside the
    np.testing.assert_allclose(st["pooled_lower"], q[0], atol=3e-3)  # guaranteed interval
    np.testing.assert_allclose(st["pooled_upper"], q[1], atol=3e-3)
    c.close()


# -- bad ingests leave the store unchanged ------------------------------------------------------
@pytest.fixture
def labelled_campaign(tmp_path):
    pool = make_pool()
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=5)
    b = c.propose(20)
    c.ingest(oracle(b.iloc[:10]))
    yield c, pool, b
    c.close()


def _bad_cases(pool, b):
    pending = list(b.index[10:])
    labelled = list(b.index[:10])
    never = [r for r in pool.index if r not in set(b.index)][:2]
    return {
        "unknown": (pd.Series([1, 0], index=[pending[0], 999_999_999]), "not in the pool"),
        "never proposed": (pd.Series([1, 0], index=[pending[0], never[0]]), "never proposed"),
        "dup in batch": (pd.Series([1, 0], index=[pending[0], pending[0]]), "duplicate"),
        # a different label for a labelled row (the same label would be a no-op retry)
        "already labelled": (
            pd.Series([1, 1 - truth_of(labelled[0])], index=[pending[0], labelled[0]]), "already labelled"
        ),
        "nan label": (pd.Series([1.0, np.nan], index=pending[:2]), "missing labels"),
        "invalid label": (pd.Series([1, 7], index=pending[:2]), "invalid labels"),
        "string label": (pd.Series([1, "cat"], index=pending[:2], dtype=object), "invalid labels"),
    }


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "case", ["unknown", "never proposed", "dup in batch", "already labelled", "nan label", "invalid label", "string label"]
)
def test_bad_ingest_changes_nothing(labelled_campaign, case):
    c, pool, b = labelled_campaign
    labels, message = _bad_cases(pool, b)[case]
    before = c._store.dump()
    with pytest.raises(ValueError, match=message) as err:
        c.ingest(labels)
    bad_id = {"unknown": 999_999_999, "already labelled": b.index[0]}.get(case)
    if bad_id is not None:
        assert repr(int(bad_id)) in str(err.value)
    assert c._store.dump() == before
    # and a good ingest still works afterwards
    assert c.ingest(oracle(b.iloc[10:12])) == 2


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_ingest_float_labels_from_csv_are_accepted(labelled_campaign):
    c, pool, b = labelled_campaign
    assert c.ingest(pd.Series([1.0, 0.0], index=b.index[10:12])) == 2
    assert set(c.labels()["label"]) <= {0, 1}


# -- resume equality --------------------------------------------------------------------------
# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("rule", ["thompson", "proportional", "expected_width"])
def test_resume_proposes_same_batch(tmp_path, rule):
    pool = make_pool(seed=4)

    def steps(c, n_rounds):
        for _ in range(n_rounds):
            c.ingest(oracle(c.propose(15)))

    a = Campaign.create(tmp_path / "a.db", pool, strata="g", y_pred="pred", rule=rule, random_seed=11)
    steps(a, 3)
    a.close()
    a = Campaign.open(tmp_path / "a.db")
    next_a = a.propose(15)
    b = Campaign.create(tmp_path / "b.db", pool, strata="g", y_pred="pred", rule=rule, random_seed=11)
    steps(b, 3)
    next_b = b.propose(15)
    assert list(next_a.index) == list(next_b.index)
    assert a.history()["allocation"].tolist() == b.history()["allocation"].tolist()
    a.close()
    b.close()


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_budget_and_history(tmp_path):
    pool = make_pool()
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", budget=30, random_seed=0)
    b1 = c.propose(20)
    b2 = c.propose(20)
    assert len(b1) == 20 and len(b2) == 10  # pending proposals count against the budget
    assert len(c.propose(5)) == 0
    c.ingest(oracle(b1))
    c.ingest(oracle(b2))
    assert c.done and c.labels_used == 30
    h = c.history()
    assert list(h.index) == [1, 2]
    assert sum(h.loc[1, "allocation"].values()) == 20 and h.loc[1, "rule"] == "expected_width"
    assert h.loc[1, "version"]
    c.close()


# -- kill -9 crash test -------------------------------------------------------------------------
CHILD = textwrap.dedent(
    """
    import json, os, sys
    import pandas as pd
    sys.path.insert(0, {root!r})
    from bayeseval.campaign import Campaign

    def truth_of(rid):
        return int(sum(map(ord, str(rid))) % 4 == 0)

    path, log = sys.argv[1], sys.argv[2]
    c = Campaign.open(path)
    out = open(log, "a")

    def ingest(ids):
        out.write(json.dumps({{"intent": [int(i) for i in ids]}}) + "\\n"); out.flush(); os.fsync(out.fileno())
        c.ingest(pd.Series([truth_of(i) for i in ids], index=ids))
        out.write(json.dumps({{"ack": [int(i) for i in ids]}}) + "\\n"); out.flush(); os.fsync(out.fileno())

    pending = list(c.pending.index)
    if pending:
        ingest(pending)
    print("ready", flush=True)
    while True:
        b = c.propose(9)
        if len(b) == 0:
            break
        ingest(list(b.index))
    print("finished", flush=True)
    """
)


def _read_log(log):
    """Acknowledged ids, and the intents (id sets) whose ingest never acknowledged."""
    acked, open_intents, all_ids = set(), [], set()
    if not log.exists():
        return acked, open_intents, all_ids
    for line in log.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a torn last line
            continue
        if "ack" in rec:
            ids = set(rec["ack"])
            acked |= ids
            open_intents = [i for i in open_intents if i != ids]
        else:
            ids = set(rec["intent"])
            open_intents.append(ids)
            all_ids |= ids
    return acked, open_intents, all_ids


# PrecisionLimitedWarning expected: the target is out of reach on purpose (see below): create warns
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_kill9_loses_nothing_and_never_double_counts(tmp_path):
    """A child loops propose/ingest and is SIGKILLed at random moments, four times."""
    pool = make_pool(n=1500, k=5, seed=9)
    path = tmp_path / "c.db"
    # a target no sample of this pool reaches and a large budget: the child is still
    # labelling when each kill comes, however fast the machine
    Campaign.create(
        path, pool, strata="g", y_pred="pred", random_seed=1, budget=1200, target_halfwidth=0.005
    ).close()
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT)))
    log = tmp_path / "log.jsonl"
    rng = np.random.default_rng(2024)
    kills = 0
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(path), str(log)], stdout=subprocess.PIPE, text=True
        )
        line = proc.stdout.readline()
        if line.strip() != "ready":
            proc.wait()
            break
        time.sleep(rng.uniform(0.02, 0.5))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        proc.stdout.close()
        acked, open_intents, all_ids = _read_log(log)
        stored = consistency(path)
        # none lost: every acknowledged label is stored
        assert acked <= stored
        # nothing invented, and an interrupted ingest is all or nothing
        assert stored <= all_ids
        for ids in open_intents:
            assert ids <= stored or not (ids & stored)
    assert kills >= 3
    # reopen in this process: ingest what the last child left pending, then check the counts
    # against the oracle for exactly the stored rows
    c = Campaign.open(path)
    pend = list(c.pending.index)
    if pend:
        c.ingest(pd.Series([truth_of(r) for r in pend], index=pend))
    c.close()
    stored = consistency(path)
    acked, open_intents, _ = _read_log(log)
    assert acked <= stored and stored - acked <= set().union(set(pend), *open_intents)
    c = Campaign.open(path)
    assert c.labels_used == len(stored) and c.status()["pending"].sum() == 0
    st = c.status()
    rows = pool.loc[sorted(stored)]
    truth = np.array([truth_of(r) for r in rows.index])
    expected = pd.Series(truth != rows["pred"].to_numpy(), index=rows.index).groupby(rows["g"]).sum()
    assert (st["successes"].reindex(expected.index) == expected).all()
    assert (st["labelled"].reindex(expected.index) == rows.groupby("g").size()).all()
    c.close()


# -- concurrent ingest ------------------------------------------------------------------------
CONCURRENT = textwrap.dedent(
    """
    import sys, time, json
    import pandas as pd
    sys.path.insert(0, {root!r})
    from bayeseval.campaign import Campaign

    path, ids_file, go = sys.argv[1], sys.argv[2], float(sys.argv[3])
    ids = json.load(open(ids_file))
    c = Campaign.open(path)
    while time.time() < go:
        time.sleep(0.001)
    for i in range(0, len(ids), 10):
        chunk = ids[i:i + 10]
        c.ingest(pd.Series([int(x % 3 == 0) for x in chunk], index=chunk))
    print("ok", flush=True)
    """
)


# PrecisionLimitedWarning expected: the 2,000-row pool cannot reach the default target in every stratum
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_two_processes_ingest_concurrently(tmp_path):
    pool = make_pool(n=2000, k=4, seed=3)
    path = tmp_path / "c.db"
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=3)
    b1, b2 = c.propose(100), c.propose(100)
    c.close()
    (tmp_path / "a.json").write_text(json.dumps([int(x) for x in b1.index]))
    (tmp_path / "b.json").write_text(json.dumps([int(x) for x in b2.index]))
    script = tmp_path / "conc.py"
    script.write_text(CONCURRENT.format(root=str(ROOT)))
    go = time.time() + 2.5
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(tmp_path / f), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in ("a.json", "b.json")
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "ok" in out, err
    stored = consistency(path)
    assert stored == set(b1.index) | set(b2.index)
    c = Campaign.open(path)
    assert c.labels_used == 200 and c.status()["pending"].sum() == 0
    c.close()


# PrecisionLimitedWarning expected: a 60-row pool cannot reach target_halfwidth=0.01 (kept so the campaign goes on)
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_release_makes_rows_proposable_again(tmp_path):
    pool = make_pool(n=60, k=1, seed=12)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=0,
                        target_halfwidth=0.01)
    b1 = c.propose(40)
    assert c.release(b1.index[:10]) == 10
    with pytest.raises(ValueError, match="never proposed"):
        c.ingest(oracle(b1.iloc[:1]))
    b2 = c.propose(30)  # 20 never-proposed rows + the 10 released ones
    assert len(b2) == 30 and set(b1.index[:10]) <= set(b2.index)
    assert not set(b2.index) & set(b1.index[10:])
    c.ingest(oracle(b1.iloc[10:]))
    assert c.release() == 30 and c.status()["pending"].sum() == 0
    assert consistency(tmp_path / "c.db") == set(b1.index[10:])
    c.close()


# -- metrics, scores, goals ---------------------------------------------------------------------
# PrecisionLimitedWarning expected: the 2,000-row pool cannot reach the default target in every stratum
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_recall_counts_only_true_positives_as_trials(tmp_path):
    pool = make_pool(n=2000, k=3, seed=6)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", metric="recall", random_seed=0)
    st = c.state()
    assert not st.trial_known
    b = c.propose(60)
    truth = oracle(b)
    c.ingest(truth)
    st = c.status()
    g = pool.loc[b.index, "g"]
    pred = pool.loc[b.index, "pred"]
    # recall: trials = true positives, successes = true positives predicted positive
    assert (st["trials"].reindex(sorted(set(g))) == truth.eq(1).groupby(g).sum()).all()
    assert (st["successes"].reindex(sorted(set(g))) == (truth.eq(1) & pred.eq(1)).groupby(g).sum()).all()
    assert (st["labelled"].reindex(sorted(set(g))) == g.value_counts().sort_index()).all()
    c.close()


# PrecisionLimitedWarning expected: the 2,000-row pool cannot reach the default target in every stratum
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_precision_proposes_only_predicted_positives(tmp_path):
    pool = make_pool(n=2000, k=3, seed=7)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", metric="precision", random_seed=0)
    b = c.propose(80)
    assert (pool.loc[b.index, "pred"] == 1).all()
    c.ingest(oracle(b))
    st = c.status()
    assert (st["trials"] == st["labelled"]).all()
    assert st["pool_rows"].sum() == 2000
    c.close()


# PrecisionLimitedWarning expected: nine strata of a 3,000-row pool cannot all reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_score_seeds_prior_and_bins(tmp_path):
    rng = np.random.default_rng(8)
    pool = make_pool(n=3000, k=3, seed=8)
    pool["score"] = rng.uniform(0.5, 1.0, len(pool))
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", score="score",
                        score_bins=3, random_seed=0)
    assert c.strata.names == ["g", "score_bin"] and len(c.strata) == 9
    # prior mean per stratum = 1 - mean score in the stratum
    bins = pd.qcut(pool["score"], 3, duplicates="drop").astype(str)
    expected = 1 - pool["score"].groupby([pool["g"], bins]).mean()
    got = pd.Series(c.config["prior_mean"], index=c.strata)
    np.testing.assert_allclose(got.to_numpy(), expected.reindex(c.strata).to_numpy(), rtol=1e-12)
    b = c.propose(9, show_prediction=True)
    assert "score" in b.columns and "score_bin" in b.columns
    np.testing.assert_allclose(b["score"].to_numpy(), pool.loc[b.index, "score"].to_numpy())
    c.close()


def test_overall_goal_status(tmp_path):
    pool = make_pool(n=3000, k=4, seed=10)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", goal="overall",
                        target_halfwidth=0.08, random_seed=0)
    while not c.done:
        c.ingest(oracle(c.propose(40)))
    o = c.status().attrs["overall"]
    assert o["done"] and o["halfwidth"] <= 0.08
    # a 0.08 half-width on a rate near 0.4 needs about 1.96^2 * 0.24 / 0.08^2 ~ 144 labels
    assert 80 <= c.labels_used <= 240
    assert c.forecast().sum() == 0
    c.close()


# PrecisionLimitedWarning expected: a 100-row pool in six strata cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_bad_create_arguments(tmp_path):
    pool = make_pool(n=100)
    with pytest.raises(ValueError, match="strata column 'zz'"):
        Campaign.create(tmp_path / "a.db", pool, strata="zz", y_pred="pred")
    with pytest.raises(ValueError, match="unknown rule"):
        Campaign.create(tmp_path / "a.db", pool, strata="g", y_pred="pred", rule="best")
    with pytest.raises(ValueError, match="goal"):
        Campaign.create(tmp_path / "a.db", pool, strata="g", y_pred="pred", goal="all")
    dup = pool.copy()
    dup.index = [1] * len(dup)
    with pytest.raises(ValueError, match="unique"):
        Campaign.create(tmp_path / "a.db", dup, strata="g", y_pred="pred")
    assert not (tmp_path / "a.db").exists()
    Campaign.create(tmp_path / "a.db", pool, strata="g", y_pred="pred").close()
    with pytest.raises(ValueError, match="already exists"):
        Campaign.create(tmp_path / "a.db", pool, strata="g", y_pred="pred")


@pytest.mark.slow
def test_million_row_pool(tmp_path):
    rng = np.random.default_rng(0)
    n = 1_000_000
    pool = pd.DataFrame(
        {"g": rng.integers(0, 40, n), "pred": rng.integers(0, 2, n), "extra": rng.normal(size=n)}
    )
    c = Campaign.create(tmp_path / "big.db", pool, strata="g", y_pred="pred", random_seed=0)
    assert c.status()["pool_rows"].sum() == n
    b = c.propose(200)
    assert len(b) == 200 and b.index.is_unique
    c.ingest(pd.Series(rng.integers(0, 2, 200), index=b.index))
    assert c.labels_used == 200
    c.close()
