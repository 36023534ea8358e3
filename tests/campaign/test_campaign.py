"""Tests of ``bayeseval.campaign.campaign``."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from bayeseval import proxy_ci
from bayeseval._api.warnings import BlankLabelWarning, PrecisionLimitedWarning
from bayeseval.campaign import Campaign, CampaignSpec, Decide, Each, Gap, Overall
from bayeseval.campaign.goals.guarantee import guarantee_stop_level
from bayeseval.campaign.store.store import CampaignStore
from bayeseval.cli.campaign import main
from tests.campaign.helpers import (
    Team,
    _check_against_truth,
    _truth_campaign,
    _twin_pool,
    new_campaign,
)
from tests.helpers import (
    ROOT,
    _campaign_pool,
    _ingest,
    _pool_campaign_proxy,
    assert_counts_match_labels,
    content_pool,
    exact_pool,
    make_pool_hardening_campaign,
    truth_of_hardening_campaign,
)


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
            pd.Series([1, 1 - truth_of(labelled[0])], index=[pending[0], labelled[0]]),
            "already labelled",
        ),
        "nan label": (pd.Series([1.0, np.nan], index=pending[:2]), "missing labels"),
        "invalid label": (pd.Series([1, 7], index=pending[:2]), "invalid labels"),
        "string label": (pd.Series([1, "cat"], index=pending[:2], dtype=object), "invalid labels"),
    }


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


def _run_rounds(c, pool, rounds, batch):
    """Propose and ingest the true labels ``rounds`` times; the campaign's warnings."""
    seen = []
    for _ in range(rounds):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            b = c.propose(batch)
        seen += [str(w.message) for w in rec if issubclass(w.category, PrecisionLimitedWarning)]
        if len(b) == 0:
            break
        c.ingest(pool.loc[b.index, "truth"])
    return seen


def _pool():
    sizes = {"small": 46, "mid": 200, "large": 727}
    return pd.DataFrame({"g": np.repeat(list(sizes), list(sizes.values())), "pred": 0})


def _label_everything(c, truth):
    while len(batch := c.propose(500)):
        c.ingest(
            pd.DataFrame({"row": batch.index, "label": truth.loc[batch.index].to_numpy()}),
            id_column="row",
            label_column="label",
        )


def run_campaign(path, pool_campaign_metrics, **kw) -> Campaign:
    c = Campaign.create(
        path, pool_campaign_metrics[["stratum", "y_pred"]], strata="stratum", y_pred="y_pred", random_seed=0, **kw
    )
    while not c.done:
        batch = c.propose(40)
        if batch.empty:
            break
        c.ingest(pool_campaign_metrics.loc[batch.index, "y_true"])
    return c


def _run(c: Campaign, truth: pd.Series, rounds: int, size: int = 40) -> list[list[int]]:
    out = []
    for _ in range(rounds):
        batch = c.propose(size)
        out.append(batch.index.tolist())
        if len(batch):
            c.ingest(truth.loc[batch.index])
    return out


_LABEL_VALUES = st.one_of(
    st.sampled_from([0, 1, 1.0, 0.0, "1", "0", True, False, 2, -1, 0.5, 1.9, math.inf, "x", "", None, np.nan, pd.NA]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _acceptable(v):
    """Independent statement of the rule for the known labels [0, 1]."""
    if v is None or v is pd.NA:
        return False
    if isinstance(v, str):
        return v in ("0", "1")
    if isinstance(v, float) and math.isnan(v):
        return False
    return v in (0, 1)  # Python equality: 1.0 == 1, True == 1; 0.5, inf, 2 are not


CREATE_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np, pandas as pd
    sys.path.insert(0, {root!r})
    from bayeseval.campaign import Campaign

    n = 300_000
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({{"g": rng.integers(0, 10, n), "pred": rng.integers(0, 2, n)}})
    print("ready", flush=True)
    Campaign.create(sys.argv[1], pool, strata="g", y_pred="pred", random_seed=0).close()
    print("done", flush=True)
    """
)


def _foreign_sqlite(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE foo (x)")
    con.execute("INSERT INTO foo VALUES (1)")
    con.commit()
    con.close()


def _wrong_schema(path):
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE meta (key, value); INSERT INTO meta VALUES ('schema_version', '99');"
        + "".join(f"CREATE TABLE {t} (x);" for t in ("strata", "pool", "proposals", "labels", "counts", "decisions"))
    )
    con.commit()
    con.close()


def _start_serve(db, url, token, project, secret):
    env = dict(os.environ, LABEL_STUDIO_API_KEY=token, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bayeseval",
            "campaign",
            "serve",
            "--db",
            str(db),
            "--url",
            url,
            "--project",
            str(project),
            "--port",
            "0",
            "--secret",
            secret,
            "--create-config",
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        raise RuntimeError(f"serve did not start: {proc.stderr.read()}")
    return proc, json.loads(line)["url"]


def _status(url):
    import urllib.request

    with urllib.request.urlopen(url + "/status", timeout=30) as resp:
        return json.loads(resp.read())


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "case",
    ["unknown", "never proposed", "dup in batch", "already labelled", "nan label", "invalid label", "string label"],
)
def test_bad_ingest_changes_nothing(labelled_campaign, case):
    c, pool, b = labelled_campaign
    labels, message = _bad_cases(pool, b)[case]
    before = c._store.dump()
    with pytest.raises(ValueError, match=message) as err:
        c.ingest(labels, strict=case == "nan label")  # a blank label refuses the batch only when strict
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


# PrecisionLimitedWarning expected: the target is out of reach on purpose (see below): create warns
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_kill9_loses_nothing_and_never_double_counts(tmp_path):
    """A child loops propose/ingest and is SIGKILLed at random moments, four times."""
    pool = make_pool(n=1500, k=5, seed=9)
    path = tmp_path / "c.db"
    # a target no sample of this pool reaches and a large budget: the child is still
    # labelling when each kill comes, however fast the machine
    Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=1, budget=1200, goal=Each(0.005)).close()
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT)))
    log = tmp_path / "log.jsonl"
    rng = np.random.default_rng(2024)
    kills = 0
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, str(script), str(path), str(log)], stdout=subprocess.PIPE, text=True)
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
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
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
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", score="score", score_bins=3, random_seed=0)
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
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", goal=Overall(0.08), random_seed=0)
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
    pool = pd.DataFrame({"g": rng.integers(0, 40, n), "pred": rng.integers(0, 2, n), "extra": rng.normal(size=n)})
    c = Campaign.create(tmp_path / "big.db", pool, strata="g", y_pred="pred", random_seed=0)
    assert c.status()["pool_rows"].sum() == n
    b = c.propose(200)
    assert len(b) == 200 and b.index.is_unique
    c.ingest(pd.Series(rng.integers(0, 2, 200), index=b.index))
    assert c.labels_used == 200
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_majority_resolution_ties_stay_pending(tmp_path, pool_annotations):
    c = Campaign.create(
        tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", annotators=2, random_seed=5
    )
    b = c.propose(4)
    r0, r1, r2, r3 = b.index
    ann = pd.DataFrame(
        {
            "row": [r0, r0, r1, r1, r2, r3],
            "annotator": ["ana", "bo", "ana", "bo", "ana", "ana"],
            "label": [1, 1, 1, 0, 0, 1],
        }
    )
    res = c.ingest(ann, id_column="row", annotator_column="annotator")
    # r0 agreed (label 1); r1 tied 1-1: unresolved; r2, r3 have one annotation of the two needed
    assert (int(res), res.annotations, res.unresolved) == (1, 6, 3)
    assert c.labels()["label"].to_dict() == {r0: 1}
    assert set(c.pending.index) == {r1, r2, r3}
    # a third annotator breaks the tie 2-1
    res = c.ingest(
        pd.DataFrame({"row": [r1], "annotator": ["cy"], "label": [0]}), id_column="row", annotator_column="annotator"
    )
    assert int(res) == 1 and c.labels().loc[r1, "label"] == 0
    # a retry is a no-op; a changed annotation needs relabel
    assert c.ingest(ann, id_column="row", annotator_column="annotator").unchanged == 6
    with pytest.raises(ValueError, match=rf"annotator already gave a different label.*{r0}"):
        c.ingest(
            pd.DataFrame({"row": [r0], "annotator": ["ana"], "label": [0]}),
            id_column="row",
            annotator_column="annotator",
        )
    # plain ingest is refused: this campaign resolves from two annotations per row
    with pytest.raises(ValueError, match="annotator_column"):
        c.ingest(pd.Series([1], index=[r2]))
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "rule, expert", [("annotator:expert", "expert"), ("annotator:Expert@Lab.org", " expert@lab.ORG")]
)
def test_chosen_annotator_rule(tmp_path, pool_annotations, rule, expert):
    # the chosen annotator is compared by identity: an e-mail in any case and spacing
    c = Campaign.create(
        tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", resolve=rule, random_seed=6
    )
    b = c.propose(3)
    ann = pd.DataFrame(
        {"row": [b.index[0], b.index[0], b.index[1]], "who": ["crowd", expert, "crowd"], "label": [1, 0, 1]}
    )
    res = c.ingest(ann, id_column="row", annotator_column="who")
    assert int(res) == 1 and res.unresolved == 1 and c.labels()["label"].to_dict() == {b.index[0]: 0}
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "frame, match",
    [
        (lambda r: pd.DataFrame({"row": [r], "annotator": [None], "label": [1]}), "missing annotator for ids"),
        (lambda r: pd.DataFrame({"row": [r, r], "annotator": ["a", "a"], "label": [1, 0]}), "same annotator twice"),
        (lambda r: pd.DataFrame({"row": [r], "annotator": ["a"], "label": [7]}), "invalid labels"),
        (lambda r: pd.DataFrame({"row": [99999], "annotator": ["a"], "label": [1]}), "unknown ids.*99999"),
    ],
)
def test_bad_annotations_name_the_rows_and_write_nothing(tmp_path, pool_annotations, frame, match):
    c = Campaign.create(tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", random_seed=7)
    b = c.propose(2)
    before = c._store.dump()
    with pytest.raises(ValueError, match=match):
        c.ingest(frame(b.index[0]), id_column="row", annotator_column="annotator")
    assert c._store.dump() == before
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_campaign_agreement_per_stratum(tmp_path, pool_annotations):
    c = Campaign.create(
        tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", annotators=2, random_seed=8
    )
    b = c.propose(40)
    rng = np.random.default_rng(3)
    north = [r for r in b.index if pool_annotations.loc[r, "region"] == "north"]
    south = [r for r in b.index if pool_annotations.loc[r, "region"] == "south"]
    x = rng.integers(0, 2, len(north))
    y = np.where(rng.random(len(north)) < 0.7, x, 1 - x)
    rows = [(r, "x", int(u)) for r, u in zip(north, x, strict=True)] + [
        (r, "y", int(v)) for r, v in zip(north, y, strict=True)
    ]
    votes3 = rng.integers(0, 2, (len(south), 3))
    rows += [(r, w, int(v[j])) for r, v in zip(south, votes3, strict=True) for j, w in enumerate(["p", "q", "s"])]
    c.ingest(pd.DataFrame(rows, columns=["row", "annotator", "label"]), id_column="row", annotator_column="annotator")
    agree = c.agreement()
    assert agree.loc["north", "method"] == "cohen" and agree.loc["north", "rows"] == len(north)
    assert agree.loc["north", "kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)
    table = np.stack([(votes3 == 0).sum(1), (votes3 == 1).sum(1)], axis=1)
    p = table.sum(0) / table.sum()
    pbar = ((table**2).sum(1) - 3).mean() / 6
    expected = (pbar - (p**2).sum()) / (1 - (p**2).sum())
    assert agree.loc["south", "method"] == "fleiss" and agree.loc["south", "annotators"] == 3
    assert agree.loc["south", "kappa"] == pytest.approx(expected, abs=1e-12)
    # majority of three always resolves; two annotators tie where they disagree
    assert c.labels_used == len(south) + int((x == y).sum())
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_version_1_file_is_upgraded_on_open(tmp_path, pool_annotations):
    path = tmp_path / "c.db"
    c = Campaign.create(path, pool_annotations, strata="region", y_pred="pred", random_seed=9)
    b = c.propose(4)
    c.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE annotations")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with Campaign.open(path) as c:
        assert c._store.get_meta("schema_version") == "3"
        res = c.ingest(
            pd.DataFrame({"row": b.index, "annotator": "a", "label": 1}), id_column="row", annotator_column="annotator"
        )
        assert int(res) == 4 and len(c.annotations()) == 4


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_relabelled_annotations_keep_their_place(tie_broken):
    c, rows, first, second, region = tie_broken
    # after the tie-breaks the first annotator corrects 8 of the labels the second disputed:
    # kappa of the corrected labels, on every row
    rng = np.random.default_rng(12)
    fix = rng.choice(np.flatnonzero(first != second), 8, replace=False)
    first = first.copy()
    first[fix] = 1 - first[fix]
    _ingest(c, [rows[i] for i in fix], ["ana"] * 8, first[fix], relabel=True)
    agree = c.agreement()
    for g in ("north", "south"):
        m = region == g
        assert agree.loc[g, "method"] == "cohen" and agree.loc[g, "rows"] == m.sum()
        assert agree.loc[g, "kappa"] == pytest.approx(cohen_kappa_score(first[m], second[m]), abs=1e-12)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_three_annotators_and_an_adjudicator(tmp_path, pool_annotations):
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    c = Campaign.create(
        tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", annotators=3, random_seed=13
    )
    rows = list(c.propose(120).index)
    rng = np.random.default_rng(13)
    truth = pool_annotations.loc[rows, "truth"].to_numpy()
    votes = np.stack([np.where(rng.random(len(rows)) < 0.2, 1 - truth, truth) for _ in range(3)], axis=1)
    for j, who in enumerate(["p", "q", "s"]):
        _ingest(c, rows, [who] * len(rows), votes[:, j])
    split = [r for r, v in zip(rows, votes, strict=True) if len(set(v)) > 1]
    # an adjudicator confirms the majority where the three split: a fourth annotation on those rows
    majority = {r: int(np.round(v.mean())) for r, v in zip(rows, votes, strict=True)}
    _ingest(c, split, ["expert"] * len(split), [majority[r] for r in split])
    region = pool_annotations.loc[rows, "region"].to_numpy()
    agree = c.agreement()
    for g in ("north", "south"):
        m = region == g
        expected = sm_fleiss(aggregate_raters(votes[m])[0], method="fleiss")
        assert agree.loc[g, "method"] == "fleiss" and agree.loc[g, "per_row"] == 3 and agree.loc[g, "rows"] == m.sum()
        assert agree.loc[g, "kappa"] == pytest.approx(expected, abs=1e-12)
        assert agree.loc[g, "kappa"] < 0.9


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_numeric_annotators_read_as_int_or_float_are_one_annotator(tmp_path, pool_annotations):
    c = Campaign.create(
        tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", annotators=2, random_seed=16
    )
    rows = list(c.propose(4).index)
    labels = pool_annotations.loc[rows, "truth"].to_numpy()
    r = c.ingest(
        pd.DataFrame({"row": rows, "who": [1, 1, 1, 1], "label": labels}), id_column="row", annotator_column="who"
    )
    assert r.annotations == 4
    # the same annotations from a file where the column was read as floats: a retry, not a second annotator
    again = pd.DataFrame({"row": rows, "who": [1.0, 1.0, 1.0, np.nan], "label": labels})
    with pytest.raises(ValueError, match="missing annotator"):
        c.ingest(again, id_column="row", annotator_column="who")
    r = c.ingest(again.iloc[:3], id_column="row", annotator_column="who")
    assert (r.annotations, r.unchanged) == (0, 3)
    assert c.annotations()["annotator"].tolist() == ["1"] * 4
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_version_2_file_gains_the_content_and_task_tables_and_keeps_working(tmp_path, pool_annotations):
    path = tmp_path / "c.db"
    c = Campaign.create(path, pool_annotations, strata="region", y_pred="pred", random_seed=9)
    first = c.propose(4)
    c.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE content")
    conn.execute("DROP TABLE tasks")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with Campaign.open(path) as c:
        assert c._store.get_meta("schema_version") == "3"
        tables = {r[0] for r in c._store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"content", "tasks", "annotations"} <= tables
        assert c.pending_batch().index.tolist() == first.index.tolist()
        assert len(c.propose(3)) == 3


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_newer_schema_version_is_refused_naming_it(tmp_path, pool_annotations):
    path = tmp_path / "c.db"
    Campaign.create(path, pool_annotations, strata="region", y_pred="pred", random_seed=9).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match="schema_version '4'"):
        Campaign.open(path)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "content, message",
    [
        ("missing", "content column 'missing' is not in pool"),
        (["text", "pred"], "content column 'pred' collides with the campaign's prediction"),
        (["region"], "content column 'region' collides with the campaign's stratum column"),
        (["label"], "content column 'label' collides"),
        (["text", "text"], "more than once"),
    ],
)
def test_content_columns_are_validated_naming_the_column(tmp_path, content, message):
    pool_annotations = content_pool().assign(label=0)
    with pytest.raises(ValueError, match=message):
        Campaign.create(tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", content=content)
    assert not (tmp_path / "c.db").exists()


def test_threshold_mapping_is_stored_per_stratum_and_read_back(tmp_path):
    pool = exact_pool([0.05, 0.2], [400, 400])
    c = Campaign.create(
        tmp_path / "c.db", pool, strata="stratum", y_pred="pred", goal=Decide({"s0": 0.1, "s1": 0.15}), random_seed=0
    )
    c.close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.goal == Decide((0.1, 0.15), "below")
        assert c.status()["threshold"].tolist() == [0.1, 0.15]
    with pytest.raises(ValueError, match=r"threshold must give every stratum a threshold; missing \['s1'\]"):
        Campaign.create(tmp_path / "d.db", pool, strata="stratum", y_pred="pred", goal=Decide({"s0": 0.1}))
    with pytest.raises(ValueError, match=r"threshold names strata that are not in the pool: \['zz'\]"):
        Campaign.create(
            tmp_path / "e.db", pool, strata="stratum", y_pred="pred", goal=Decide({"s0": 0.1, "s1": 0.1, "zz": 0.1})
        )


# PrecisionLimitedWarning expected: two strata of 400 rows reach a guaranteed half-width of 0.054
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_file_without_the_goal_settings_still_opens(tmp_path):
    pool = exact_pool([0.05, 0.2], [400, 400])
    Campaign.create(tmp_path / "c.db", pool, strata="stratum", y_pred="pred", random_seed=0).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    for key in ("threshold", "direction", "tolerance", "margin"):
        config.pop(key)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.goal == Each(0.05) and c.spec.to_config()["threshold"] is None


def test_warning_once_when_a_stratum_cannot_be_decided_with_its_rows_left(tmp_path):
    pool = exact_pool([0.123, 0.02], [3000, 1000], random_seed=5)
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="stratum",
        y_pred="pred",
        goal=Decide(0.12),
        rule="independent_beta",
        random_seed=2,
    )
    seen = _run_rounds(c, pool, 8, 250)
    about_s0 = [m for m in seen if "'s0'" in m]
    assert len(about_s0) == 1 and "\n" not in about_s0[0] and "rows left of it" in about_s0[0]
    assert not any("'s1'" in m for m in seen)
    # independent check: at the current rate the one-sided test needs more trials than the
    # stratum has rows (normal approximation)
    st = c.status().loc["s0"]
    rate = st["successes"] / st["trials"]
    need = stats.norm.ppf(0.95) ** 2 * rate * (1 - rate) / (rate - 0.12) ** 2
    assert need > 3000
    f = c.forecast(cost=True)
    assert f.loc["s0", "beyond"] == "rows" and f.loc["s0", "labels"] == 3000 - st["labelled"] - st["pending"]
    c.close()
    c = Campaign.open(tmp_path / "c.db")  # remembered in the file: not said again
    assert not [m for m in _run_rounds(c, pool, 1, 100) if "'s0'" in m]
    c.close()


def test_warning_once_when_the_budget_runs_out_before_a_stratum_is_decided(tmp_path):
    pool = exact_pool([0.123, 0.02], [40_000, 1000], random_seed=6)
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="stratum",
        y_pred="pred",
        goal=Decide(0.12),
        rule="independent_beta",
        budget=3000,
        random_seed=2,
    )
    seen = _run_rounds(c, pool, 8, 250)
    about_s0 = [m for m in seen if "'s0'" in m]
    assert len(about_s0) == 1 and "labels left in the budget" in about_s0[0]
    f = c.forecast(cost=True)
    assert f.loc["s0", "beyond"] == "budget"
    assert pd.isna(f.loc["s1", "beyond"])
    c.close()


def test_the_achievable_halfwidth_is_what_the_campaign_reaches_labelled_to_the_end(tmp_path):
    # every stratum at an error rate of exactly 0.5, the planning rate at creation (the prior
    # mean), and a target no stratum can meet: the campaign labels every row of every stratum
    sizes = {"small": 40, "mid": 120, "large": 300}
    pool = pd.DataFrame(
        {
            "g": np.repeat(list(sizes), list(sizes.values())),
            "pred": 0,
            "truth": np.concatenate([[0, 1] * (n // 2) for n in sizes.values()]),
        }
    )
    expected = r"3 of 3 strata \(achievable half-width per stratum, every row labelled"
    with pytest.warns(PrecisionLimitedWarning, match=expected) as record:
        c = Campaign.create(
            tmp_path / "c.db", pool, strata="g", y_pred="pred", goal=Each(0.03), random_seed=0, guarantee="average"
        )
    assert np.allclose(c.state().posterior.mean(), 0.5)  # the planning rate
    table = c.feasibility()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        _label_everything(c, pool["truth"])
        status = c.status()
    assert status["labelled"].to_dict() == sizes and not status["done"].any()
    assert (table["max_trials"] == status["trials"]).all()
    # independent reference: the half-width the campaign ends with, every row labelled
    np.testing.assert_allclose(table["achievable_halfwidth"], status["halfwidth"], rtol=1e-9)
    message = str(record[0].message)
    for name, hw in status["halfwidth"].items():
        assert f"{name}: {hw:.3f}" in message
    # the own-data Wilson half-width, the figure before, overstates it (0.148 against 0.107)
    lo, hi = proportion_confint(20, 40, alpha=0.05, method="wilson")
    assert (hi - lo) / 2 > status.loc["small", "halfwidth"] + 0.03
    c.close()


def test_create_warns_naming_the_strata_that_cannot_reach_the_target(tmp_path):
    with pytest.warns(PrecisionLimitedWarning, match=r"2 of 3 strata.*mid: 0\.0\d\d.*small: 0\.\d\d\d"):
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred", goal=Each(0.05))
    table = c.feasibility()
    assert table["feasible"].to_dict() == {"large": True, "mid": False, "small": False}
    assert table["max_trials"].to_dict() == {"large": 727, "mid": 200, "small": 46}
    c.close()


def test_a_feasible_target_is_silent_and_the_forecast_repeats_the_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionLimitedWarning)
        Campaign.create(tmp_path / "ok.db", _pool(), strata="g", y_pred="pred", goal=Each(0.2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        c = Campaign.create(tmp_path / "c.db", _pool(), strata="g", y_pred="pred", goal=Each(0.05))
    with pytest.warns(PrecisionLimitedWarning, match="small"):
        c.forecast()


def test_each_metric_counts_every_labelled_row_it_is_a_trial_of(tmp_path, pool_campaign_metrics):
    c = run_campaign(tmp_path / "c.db", pool_campaign_metrics, metric=["tpr", "fpr"], goal=Each(0.1))
    labelled = pool_campaign_metrics.loc[c.labels().index]
    truth, pred = labelled["y_true"].to_numpy(), labelled["y_pred"].to_numpy()
    g = labelled["stratum"].to_numpy()
    for metric, trial, success in (
        ("recall", truth == 1, (truth == 1) & (pred == 1)),
        ("fpr", truth == 0, (truth == 0) & (pred == 1)),
    ):
        counts = c.counts(metric).to_frame()
        expected_n = pd.Series(trial.astype(int)).groupby(g).sum()
        expected_s = pd.Series(success.astype(int)).groupby(g).sum()
        assert counts["trials"].tolist() == expected_n.tolist()
        assert counts["successes"].tolist() == expected_s.tolist()
    status = c.status()
    assert list(status.index.names) == ["metric", "stratum"]
    assert status.index.get_level_values("metric").unique().tolist() == ["recall", "fpr"]
    # stopped because every metric of every stratum met the target (none ran out of rows)
    assert (status["halfwidth"] <= 0.1).all() and not status["exhausted"].any()
    # the rows are shared: labelled per stratum is the same in both metric blocks
    assert (status.loc["recall", "labelled"].to_numpy() == status.loc["fpr", "labelled"].to_numpy()).all()
    assert int(status.loc["recall", "labelled"].sum()) == c.labels_used
    c.close()


def test_the_metrics_are_stored_and_read_back(tmp_path, pool_campaign_metrics):
    spec = CampaignSpec(y_pred="y_pred", strata="stratum", metric=["recall", "precision"], random_seed=2)
    assert spec.metrics == ("recall", "precision")
    Campaign.create(tmp_path / "c.db", pool_campaign_metrics[["stratum", "y_pred"]], spec=spec).close()
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.metrics == ("recall", "precision")
        assert [m.name for m in c.metrics] == ["recall", "precision"]
        # recall needs every row, so every row is eligible, not only the predicted positives
        batch = c.propose(200)
        assert (pool_campaign_metrics.loc[batch.index, "y_pred"] == 0).any()


def test_cli_several_metrics(tmp_path, pool_campaign_metrics, capsys):
    path = tmp_path / "pool.csv"
    pool_campaign_metrics[["stratum", "y_pred"]].to_csv(path, index_label="id")
    db = str(tmp_path / "c.db")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(path),
                "--id-column",
                "id",
                "--strata",
                "stratum",
                "--y-pred",
                "y_pred",
                "--metric",
                "tpr,fpr",
                "--db",
                db,
                "--seed",
                "1",
            ]
        )
        == 0
    )
    assert "metric recall,fpr" in capsys.readouterr().out
    with Campaign.open(db) as c:
        batch = c.propose(30)
        c.ingest(pool_campaign_metrics.loc[batch.index, "y_true"])
    assert main(["campaign", "status", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [(r["metric"], r["stratum"]) for r in payload["strata"]] == [
        (m, s) for m in ("recall", "fpr") for s in ("s1", "s2", "s3")
    ]
    assert payload["labels_used"] == 30 and payload["cost"] == 30.0
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(path),
                "--strata",
                "stratum",
                "--y-pred",
                "y_pred",
                "--metric",
                "tpr,",
                "--db",
                str(tmp_path / "d.db"),
            ]
        )
        == 2
    )
    assert "--metric" in capsys.readouterr().err


def test_resumed_campaign_matches_uninterrupted(tmp_path):
    pool, truth = _pool_campaign_proxy()
    kw = dict(strata="g", y_pred="pred", proxy="judge", random_seed=3, goal=Each(0.05))
    a = Campaign.create(tmp_path / "a.db", pool, **kw)
    whole = _run(a, truth, 4)
    b = Campaign.create(tmp_path / "b.db", pool, **kw)
    first = _run(b, truth, 2)
    b.close()
    b = Campaign.open(tmp_path / "b.db")
    second = _run(b, truth, 2)
    assert first + second == whole
    pd.testing.assert_frame_equal(a.status(), b.status())
    a.close()
    b.close()


def test_status_matches_proxy_ci_by_hand(tmp_path):
    pool, truth = _pool_campaign_proxy(seed=1)
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", proxy="judge", random_seed=0)
    _run(c, truth, 3)
    st = c.status()
    lab = c.labels()
    frame = pool.copy()
    frame["y_true"] = np.nan
    frame.loc[lab.index, "y_true"] = truth.loc[lab.index].astype(float)
    # the cell design: a labelled row's inclusion is its cell's labelled share of the stratum's rows
    cell = (frame["judge"] != frame["pred"]).astype(int)
    labelled = frame["y_true"].notna()
    n_cell = labelled.groupby([frame["g"], cell]).transform("sum")
    N_cell = frame.groupby(["g", cell])["pred"].transform("size")
    frame["pi"] = np.where(labelled, n_cell / N_cell, np.nan)
    ref = proxy_ci(
        frame,
        y_true="y_true",
        y_pred="pred",
        proxy="judge",
        strata="g",
        metric="error_rate",
        level=guarantee_stop_level(0.95),
        inclusion="pi",
    ).table
    np.testing.assert_allclose(st["lower"].to_numpy(), ref["lower"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["upper"].to_numpy(), ref["upper"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["mean"].to_numpy(), ref["rate"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["agreement"].to_numpy(), ref["agreement"].to_numpy())
    assert (st["read"] == "proxy").all()


def test_cell_design_estimate_is_unbiased(tmp_path):
    # 40 seeded campaigns of 120 labels on one pool: the mean proxy estimate matches the pool's
    # true error rate within 3 Monte Carlo standard errors, while the raw labelled error rate is
    # pulled towards the oversampled disagreement cell
    pool, truth = _pool_campaign_proxy(n=2000, seed=2)
    true_rate = (pool["pred"] != truth).groupby(pool["g"]).mean().to_numpy()
    est, raw = [], []
    for seed in range(40):
        c = Campaign.create(
            tmp_path / f"u{seed}.db",
            pool,
            strata="g",
            y_pred="pred",
            proxy="judge",
            random_seed=seed,
            goal=Each(0.04),
            budget=120,
        )
        _run(c, truth, 3)
        st = c.status()
        est.append(st["mean"].to_numpy())
        raw.append((st["successes"] / st["trials"]).to_numpy())
        c.close()
    est, raw = np.array(est), np.array(raw)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(est.mean(axis=0) - true_rate) < 3 * se + 1e-3)
    assert np.any(np.abs(raw.mean(axis=0) - true_rate) > 5 * se)


def test_proxy_settings_checked(tmp_path):
    pool, _ = _pool_campaign_proxy(n=200)
    with pytest.raises(ValueError, match="proxy campaigns"):
        Campaign.create(tmp_path / "x.db", pool, strata="g", y_pred="pred", proxy="judge", metric="recall")
    with pytest.raises(ValueError, match="proxy column 'nope'"):
        Campaign.create(tmp_path / "y.db", pool, strata="g", y_pred="pred", proxy="nope")
    assert not (tmp_path / "x.db").exists()


def test_simulate_proxy_replays_the_campaign(tmp_path):
    from bayeseval.campaign import simulate

    pool, truth = _pool_campaign_proxy(n=2000, seed=4)
    data = pool.assign(truth=truth)
    res = simulate(
        data,
        strata="g",
        y_pred="pred",
        y_true="truth",
        proxy="judge",
        rules=["expected_width"],
        n_repeats=2,
        goal=Each(0.08),
        batch_size=20,
        random_seed=5,
        progress=False,
    )
    c = Campaign.create(
        tmp_path / "s.db", pool, strata="g", y_pred="pred", proxy="judge", goal=Each(0.08), batch_size=20, random_seed=5
    )
    while len(batch := c.propose()):
        c.ingest(truth.loc[batch.index])
    assert res.table.loc[0, "labels_used"] == c.labels_used
    final = res.intervals[res.intervals["repeat"] == 0].set_index("g")
    np.testing.assert_allclose(final["upper"].to_numpy(), c.status()["upper"].to_numpy())
    # the true rates are the pool's own error rates
    ref = (pool["pred"] != truth).groupby(pool["g"]).mean()
    np.testing.assert_allclose(res.true_rates.to_numpy(), ref.to_numpy())
    assert res.table["reached_goal"].all() and len(res.table) == 2
    c.close()


def test_old_files_with_stopping_fields_open_without_them(tmp_path):
    pool = _campaign_pool()
    spec = CampaignSpec(y_pred="pred", strata="g", goal=Each(0.08), random_seed=3)
    Campaign.create(tmp_path / "c.db", pool, spec=spec).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    assert "own_floor" not in config
    config.update(
        stop_level=None,
        own_check=None,
        min_data_share=0.0,
        own_level="default",
        own_floor=2.0,
        min_pooling_gain=None,
        read_threshold=0.2,
        adaptive_floor=None,
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as camp:
        # the campaign stores the label set it found in the pool and the batch size scaled to it
        # (one per 400 rows, at least 10); every other setting is the spec's
        assert camp.spec.batch_size == max(len(pool) // 400, 10)
        assert camp.spec.replace(label_set=None) == spec.replace(batch_size=camp.spec.batch_size)
        assert camp.status()["labelled"].sum() == 0


def test_an_older_file_without_the_new_settings_still_opens(tmp_path, pool_campaign_spec):
    Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="stratum", y_pred="pred", random_seed=0).close()
    conn = sqlite3.connect(tmp_path / "c.db")
    config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    for key in ("batch_size", "model"):
        config.pop(key)
    config.update(stop_level=None, own_check=None, min_data_share=0.0)  # settings files once had
    conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as camp:
        spec = camp.spec
        assert spec.batch_size == 10 and not hasattr(spec, "stop_level")
        assert spec.model == "auto"  # files from before the model setting used the automatic switch
        assert len(camp.propose()) == 10


# PrecisionLimitedWarning expected: the twin strata cannot reach target_halfwidth=0.03
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_costs_favour_the_cheap_twin_and_totals_are_hand_sums(tmp_path):
    pool_campaign_spec = _twin_pool()
    c = Campaign.create(
        tmp_path / "c.db",
        pool_campaign_spec,
        strata="g",
        y_pred="pred",
        costs={"dear": 4.0},
        goal=Each(0.03),
        random_seed=1,
    )
    plain = Campaign.create(
        tmp_path / "p.db", pool_campaign_spec, strata="g", y_pred="pred", goal=Each(0.03), random_seed=1
    )
    for _ in range(3):
        b = c.propose(40)
        n = b["g"].value_counts()
        assert n.get("cheap", 0) > n.get("dear", 0)  # the cheap stratum gets more labels every round
        c.ingest(pool_campaign_spec.loc[b.index, "truth"])
        bp = plain.propose(40)
        assert abs(bp["g"].value_counts().get("cheap", 0) - 20) <= 1  # equal costs: an even split
        plain.ingest(pool_campaign_spec.loc[bp.index, "truth"])
    st = c.status()
    labelled = st["labelled"]
    assert st["cost"].tolist() == [labelled["cheap"] * 1.0, labelled["dear"] * 4.0]
    f = c.forecast(cost=True)
    assert f["cost"].tolist() == [f.loc["cheap", "labels"] * 1.0, f.loc["dear", "labels"] * 4.0]
    assert c.forecast().tolist() == f["labels"].tolist()
    assert c.label_costs.tolist() == [1.0, 4.0]
    with Campaign.open(tmp_path / "c.db") as again:  # the costs are stored in the file
        assert again.label_costs.tolist() == [1.0, 4.0]
    c.close()
    plain.close()


@pytest.mark.parametrize(
    "costs, error, match",
    [
        ({"north": 0.0}, ValueError, r"costs must be finite numbers > 0, got 0.0 for stratum 'north'"),
        ({"west": 2.0}, ValueError, r"costs name strata that are not in the pool: \['west'\]"),
        ([1.0], ValueError, r"costs must give one cost per stratum \(2\), got 1"),
        ("cheap", TypeError, "costs must be a dict"),
    ],
)
def test_bad_costs_name_the_argument_and_value(tmp_path, costs, error, match):
    pool_campaign_spec = pd.DataFrame({"g": ["north", "south"] * 20, "pred": [0, 1] * 20})
    with pytest.raises(error, match=match):
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="g", y_pred="pred", costs=costs)
    assert not (tmp_path / "c.db").exists()


# PrecisionLimitedWarning expected: 200 rows in two strata cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_refuses_a_score_column_as_y_pred_and_a_fractional_label_set(tmp_path):
    rng = np.random.default_rng(4)
    pool_campaign_spec = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "score": rng.uniform(0.01, 0.99, 200)})
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="g", y_pred="score", random_seed=0)
    assert "score=" in str(err.value) and not (tmp_path / "c.db").exists()
    ints = pool_campaign_spec.assign(
        pred=(pool_campaign_spec["score"] >= 0.5).astype(float)
    )  # 0.0/1.0 are the classes 0 and 1
    with pytest.raises(ValueError, match=r"label_set holds the fractional value 0\.5"):
        Campaign.create(tmp_path / "d.db", ints, strata="g", y_pred="pred", label_set=[0, 0.5, 1])
    c = Campaign.create(tmp_path / "e.db", ints, strata="g", y_pred="pred", random_seed=0)
    assert sorted(c.spec.label_set or [0, 1]) == [0, 1]


@pytest.mark.parametrize("name", ["annotators", "budget", "batch_size"])
# PrecisionLimitedWarning expected: 50 rows a stratum cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_bool_where_a_count_is_wanted_is_a_type_error_naming_it(name, tmp_path):
    pool_campaign_spec = pd.DataFrame({"g": ["a", "b"] * 50, "pred": [0, 1] * 50})
    with pytest.raises(TypeError, match=rf"^{name} must be an integer >= 1, got True \(a bool, not a count\)"):
        Campaign.create(tmp_path / "c.db", pool_campaign_spec, strata="g", y_pred="pred", **{name: True})
    assert not (tmp_path / "c.db").exists()
    c = Campaign.create(tmp_path / "d.db", pool_campaign_spec, strata="g", y_pred="pred", random_seed=0, **{name: 1})
    assert getattr(c.spec, name) == 1


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_fractional_labels_are_refused_with_the_row_ids(tmp_path):
    c, _ = new_campaign(tmp_path)
    b = c.propose(6)
    before = c._store.dump()
    with pytest.raises(ValueError, match="invalid labels") as err:
        c.ingest(pd.Series([0.5, 1.9, -0.7], index=b.index[:3]))
    for rid in b.index[:3]:
        assert repr(int(rid)) in str(err.value)
    assert c._store.dump() == before  # nothing stored (atomic)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "bad, kind",
    [
        (math.inf, "invalid"),
        (-math.inf, "invalid"),
        (2, "invalid"),  # an integer outside the known labels
        ("cat", "invalid"),
        ("1.5", "invalid"),
        (b"1", "invalid"),
        (None, "missing"),
        (np.nan, "missing"),
        (pd.NA, "missing"),
    ],
)
def test_every_non_label_is_refused_and_nothing_is_stored(tmp_path, bad, kind):
    c, _ = new_campaign(tmp_path)
    b = c.propose(4)
    before = c._store.dump()
    labels = pd.Series([1, bad, 0], index=b.index[:3], dtype=object)
    with pytest.raises(ValueError, match=kind) as err:
        c.ingest(labels, strict=True)  # strict: a missing label refuses the batch too
    assert repr(int(b.index[1])) in str(err.value)
    assert c._store.dump() == before
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_lossless_normalisation_stores_the_known_label(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(8)
    sent = ["1", 1.0, True, np.int64(0), " 0 ", "1.0", np.float32(0.0), False]
    expected = [1, 1, 1, 0, 0, 1, 0, 0]
    assert c.ingest(pd.Series(sent, index=b.index, dtype=object)) == 8
    stored = c.labels()["label"].reindex(b.index)
    assert stored.tolist() == expected
    assert all(type(x) is int for x in stored)  # stored as the known label, not the sent value
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_string_labels_match_exactly_and_numbers_never_match(tmp_path):
    pool = make_pool_hardening_campaign(pred=np.random.default_rng(0).choice(["cat", "dog"], 400))
    c, _ = new_campaign(tmp_path, pool=pool)
    b = c.propose(4)
    for bad in ["Cat", "cat ", 1, 0.0]:
        with pytest.raises(ValueError, match="invalid labels") as err:
            c.ingest(pd.Series([bad], index=b.index[:1], dtype=object))
        assert repr(int(b.index[0])) in str(err.value)
    assert c.ingest(pd.Series(["cat", "dog"], index=b.index[:2])) == 2
    assert c.labels()["label"].reindex(b.index[:2]).tolist() == ["cat", "dog"]
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_boolean_labels(tmp_path):
    pool = make_pool_hardening_campaign(pred=np.random.default_rng(0).integers(0, 2, 400).astype(bool))
    c, _ = new_campaign(tmp_path, pool=pool)
    assert c.config["label_set"] == [False, True]
    b = c.propose(5)
    assert c.ingest(pd.Series([True, 0, "true", "FALSE", 1.0], index=b.index, dtype=object)) == 5
    # SQLite stores booleans as 0/1
    assert c.labels()["label"].reindex(b.index).tolist() == [1, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="invalid labels"):
        c.ingest(pd.Series(["yes"], index=c.propose(1).index, dtype=object))
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_class_the_model_never_predicts_needs_label_set(tmp_path):
    preds = np.random.default_rng(0).choice(["a", "b"], 400)
    c, _ = new_campaign(tmp_path, "x.db", pool=make_pool_hardening_campaign(pred=preds))
    b = c.propose(2)
    with pytest.raises(ValueError, match="invalid labels"):
        c.ingest(pd.Series(["c"], index=b.index[:1]))
    c.close()
    c, pool = new_campaign(tmp_path, "y.db", pool=make_pool_hardening_campaign(pred=preds), label_set=["a", "b", "c"])
    b = c.propose(2)
    assert c.ingest(pd.Series(["c", "a"], index=b.index)) == 2
    lab = c.labels().reindex(b.index)
    # "c" is never the prediction, so it is an error (success) of the error rate
    assert lab["success"].tolist() == [1, int(pool.loc[b.index[1], "pred"] != "a")]
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_label_set_that_mixes_types_or_misses_predictions_is_refused(tmp_path):
    with pytest.raises(ValueError, match="label_set mixes strings and numbers"):
        new_campaign(tmp_path, label_set=[0, 1, "1"])
    with pytest.raises(ValueError, match=r"y_pred column 'pred' has values \[1\]"):
        new_campaign(tmp_path, label_set=[0, 2])
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_LABEL_VALUES, min_size=1, max_size=4))
def test_property_ingest_is_exact_or_refuses_everything(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("prop") / "c.db"
    pool = make_pool_hardening_campaign(n=60, k=2)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(len(values))
    ids = b.index[: len(values)]
    ok = [_acceptable(v) for v in values]
    before = c._store.dump()
    if all(ok):
        assert c.ingest(pd.Series(values, index=ids, dtype=object), strict=True) == len(values)
        expected = [int(v) for v in values]
        assert c.labels()["label"].reindex(ids).tolist() == expected
        assert_counts_match_labels(c, pool)
    else:
        with pytest.raises(ValueError) as err:
            c.ingest(pd.Series(values, index=ids, dtype=object), strict=True)
        for rid, good in zip(ids, ok, strict=True):
            if not good:
                assert repr(int(rid)) in str(err.value)
        assert c._store.dump() == before
        _check_lenient_ingest(c, pool, ids, values, ok)
    c.close()


def _blank_value(v):
    """Independent statement of a blank label: None, NA, NaN, or text of spaces only."""
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _check_lenient_ingest(c, pool, ids, values, ok):
    """Without strict: blank labels stay pending and the rest is recorded, or the batch is refused whole."""
    blank = [_blank_value(v) for v in values]
    before = c._store.dump()
    if all(g or b for g, b in zip(ok, blank, strict=True)):
        with pytest.warns(BlankLabelWarning, match=f"^{sum(blank)} row"):
            r = c.ingest(pd.Series(values, index=ids, dtype=object))
        assert (int(r), r.blank) == (sum(ok), sum(blank))
        labelled = [rid for rid, g in zip(ids, ok, strict=True) if g]
        assert sorted(c.labels().index) == sorted(labelled)
        assert set(ids) - set(labelled) <= set(c.pending.index)
        assert_counts_match_labels(c, pool)
    else:
        with pytest.raises(ValueError):
            c.ingest(pd.Series(values, index=ids, dtype=object))
        assert c._store.dump() == before


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "kwargs, exc, names",
    [
        ({"prior": "flat"}, ValueError, ["prior", "flat"]),
        ({"prior": {"mu": None}}, TypeError, ["prior"]),
        ({"metric": "recall", "pos_label": 2}, ValueError, ["pos_label", "2"]),
        ({"metric": "precision", "pos_label": "yes"}, ValueError, ["pos_label", "yes"]),
        ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
        ({"random_seed": "abc"}, TypeError, ["random_seed", "abc"]),
        ({"random_seed": 1.5}, TypeError, ["random_seed", "1.5"]),
        ({"goal": "decide"}, ValueError, ["goal='decide'", "Decide(threshold)"]),
        ({"goal": Decide({"g0": 0.1})}, ValueError, ["threshold", "g1"]),
        ({"goal": Gap(0.1), "metric": ["tpr", "fpr"]}, ValueError, ["goal='gap'", "one metric"]),
        ({"budget": 0}, ValueError, ["budget", "0"]),
        ({"level": 1.0}, ValueError, ["level", "1.0"]),
        ({"rule": "best"}, ValueError, ["rule", "best"]),
        ({"model": "flat"}, ValueError, ["model", "flat"]),
        ({"busy_timeout": -1}, ValueError, ["busy_timeout", "-1"]),
        ({"weights": {"g0": 1.0}}, ValueError, ["weights", "g1"]),
    ],
)
def test_bad_settings_are_refused_before_any_file_exists(tmp_path, kwargs, exc, names):
    with pytest.raises(exc) as err:
        Campaign.create(tmp_path / "c.db", make_pool_hardening_campaign(), strata="g", y_pred="pred", **kwargs)
    for name in names:
        assert name in str(err.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_rule_callable_is_refused_because_it_cannot_be_reopened(tmp_path):
    with pytest.raises(TypeError, match="rule must be a rule name"):
        Campaign.create(
            tmp_path / "c.db", make_pool_hardening_campaign(), strata="g", y_pred="pred", rule=lambda s, n, r: None
        )
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_pos_label_of_a_declared_class_is_accepted(tmp_path):
    c, _ = new_campaign(tmp_path, metric="recall", pos_label=2, label_set=[0, 1, 2])
    assert c.config["pos_label"] == 2
    c.close()
    # the positive label is normalised like a true label: "1" and 1.0 are the label 1
    c, _ = new_campaign(tmp_path, "d.db", metric="recall", pos_label="1")
    assert c.config["pos_label"] == 1 and type(c.config["pos_label"]) is int
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("bins", [0, -2, [0.5], [0.9, 0.5], [0.1, math.nan, 0.9], "3", True])
def test_bad_score_bins(tmp_path, bins):
    pool = make_pool_hardening_campaign()
    pool["score"] = np.linspace(0.5, 1.0, len(pool))
    with pytest.raises((ValueError, TypeError), match="score_bins"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", score="score", score_bins=bins)
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "index",
    [
        pd.Index(np.arange(5, dtype=np.uint64) + np.uint64(2**63)),
        pd.Index([2**64 + i for i in range(5)], dtype=object),
        pd.Index([-(2**63) - 1 - i for i in range(5)], dtype=object),
    ],
)
def test_row_ids_beyond_int64_are_refused(tmp_path, index):
    pool = make_pool_hardening_campaign(n=5)
    pool.index = index
    with pytest.raises(ValueError, match="64-bit") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")
    assert str(int(index.max() if index.max() > 0 else index.min())) in str(err.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_largest_int64_id_round_trips(tmp_path):
    pool = make_pool_hardening_campaign(n=5)
    pool.index = pd.Index(np.arange(5, dtype=np.uint64) + np.uint64(2**63 - 5))
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(5)
    assert sorted(int(x) for x in b.index) == [2**63 - 5 + i for i in range(5)]
    assert c.ingest(pd.Series(1, index=b.index)) == 5
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("column, value", [("g", None), ("g", np.nan), ("pred", None), ("pred", pd.NA)])
def test_missing_strata_or_prediction_name_the_rows(tmp_path, column, value):
    pool = make_pool_hardening_campaign().astype({column: object})
    pool.loc[pool.index[[3, 9]], column] = value
    with pytest.raises(ValueError, match="missing values") as err:
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")
    assert column in str(err.value) and repr(int(pool.index[3])) in str(err.value)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_mixed_type_predictions_are_refused(tmp_path):
    pool = make_pool_hardening_campaign().astype({"pred": object})
    pool.loc[pool.index[0], "pred"] = "1"
    with pytest.raises(ValueError, match="mixes strings and numbers"):
        Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred")


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.slow
def test_kill9_during_create_never_leaves_an_unusable_file(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CREATE_CHILD.format(root=str(ROOT)))
    rng = np.random.default_rng(7)
    outcomes = []
    for i in range(3):
        d = tmp_path / f"run{i}"
        d.mkdir()
        path = d / "c.db"
        proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if path.exists():  # published: a complete campaign that opens
            c = Campaign.open(path)
            assert c.status()["pool_rows"].sum() == 300_000
            c.close()
            outcomes.append("complete")
        else:  # never published: create works again
            Campaign.create(path, make_pool_hardening_campaign(), strata="g", y_pred="pred").close()
            outcomes.append("absent")
    assert "absent" in outcomes  # at least one kill landed during create


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_failing_writer_records_nothing_and_the_same_batch_comes_again(tmp_path):
    c, _ = new_campaign(tmp_path)
    before = c._store.dump()

    def fail(batch):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        c.propose(7, writer=fail)
    assert c._store.dump() == before and len(c.pending) == 0
    seen = []
    b = c.propose(7, writer=seen.append)
    assert len(seen) == 1 and seen[0].index.equals(b.index)
    # a twin campaign that never failed proposes the same rows
    twin, _ = new_campaign(tmp_path, "twin.db")
    assert twin.propose(7).index.equals(b.index)
    c.close()
    twin.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_pending_batch_matches_propose(tmp_path):
    c, _ = new_campaign(tmp_path)
    b1, b2 = c.propose(5), c.propose(3)
    assert c.pending_batch().equals(pd.concat([b1, b2]))
    assert c.pending_batch(round=2).equals(b2)
    assert c.release(round=1) == 5 and c.pending_batch().equals(b2)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_resending_labels_is_a_no_op_and_reports_new_vs_present(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(10)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    assert c.ingest(truth.iloc[:6]) == 6
    dump = c._store.dump()
    r = c.ingest(truth.iloc[:6].astype(float))  # the same labels, written as 1.0/0.0
    assert (int(r), r.new, r.unchanged, r.relabelled) == (0, 0, 6, 0)
    assert c._store.dump() == dump
    r = c.ingest(truth)  # a retry of the whole file after a crash: only the last 4 are new
    assert (r.new, r.unchanged) == (4, 6)
    assert c.labels_used == 10
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_different_label_is_refused_unless_relabel(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(6)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    c.ingest(truth)
    flipped = 1 - truth.iloc[[1, 4]]
    dump = c._store.dump()
    with pytest.raises(ValueError, match="already labelled with a different label") as err:
        c.ingest(flipped)
    assert repr(int(b.index[1])) in str(err.value) and repr(int(b.index[4])) in str(err.value)
    assert c._store.dump() == dump
    r = c.ingest(flipped, relabel=True)
    assert (r.new, r.relabelled) == (0, 2)
    assert c.labels()["label"].reindex(b.index).tolist() == [
        *truth.iloc[:1],
        *flipped.iloc[:1],
        *truth.iloc[2:4],
        *flipped.iloc[1:],
        *truth.iloc[5:],
    ]
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_relabel_corrects_recall_trials(tmp_path):
    c, pool = new_campaign(tmp_path, metric="recall")
    b = c.propose(20)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    c.ingest(truth)
    new = 1 - truth
    c.ingest(new, relabel=True)
    pred = pool.loc[b.index, "pred"]
    g = pool.loc[b.index, "g"]
    st_ = c.status()
    assert (st_["trials"].reindex(sorted(set(g))) == new.eq(1).groupby(g).sum()).all()
    assert (st_["successes"].reindex(sorted(set(g))) == (new.eq(1) & pred.eq(1)).groupby(g).sum()).all()
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subsets=st.lists(st.lists(st.integers(0, 14), min_size=1, max_size=15, unique=True), min_size=1, max_size=5))
def test_property_repeated_ingests_count_each_row_once(tmp_path_factory, subsets):
    path = tmp_path_factory.mktemp("idem") / "c.db"
    pool = make_pool_hardening_campaign(n=80, k=3)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(15)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    seen: set[int] = set()
    for positions in subsets:
        ids = b.index[positions]
        r = c.ingest(truth.loc[ids])
        new = set(ids) - seen
        assert (r.new, r.unchanged) == (len(new), len(ids) - len(new))
        seen |= set(ids)
    assert c.labels_used == len(seen) and int(c.status()["pending"].sum()) == 15 - len(seen)
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda p: p.write_text("id,label\n1,0\n"), "not an SQLite database"),
        (lambda p: p.write_bytes(b""), "empty file"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + bytes(40)), "not an SQLite database"),
        (_foreign_sqlite, "no tables"),
        (_wrong_schema, "schema version"),
        (lambda p: p.mkdir(), "not a file"),
    ],
)
def test_open_refuses_foreign_files_and_changes_nothing(tmp_path, make, reason):
    path = tmp_path / "x.db"
    make(path)
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(ValueError, match=reason) as err:
        Campaign.open(path)
    assert str(path) in str(err.value)
    if before is not None:
        assert path.read_bytes() == before
        if len(before) >= 100 and before.startswith(b"SQLite format 3"):
            assert before[18:20] == b"\x01\x01"  # still a rollback-journal file, not WAL
    assert sorted(os.listdir(tmp_path)) == ["x.db"]  # no -wal / -shm created


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_open_refuses_a_truncated_campaign(tmp_path):
    c, _ = new_campaign(tmp_path, pool=make_pool_hardening_campaign(n=5000))
    c.close()
    data = (tmp_path / "c.db").read_bytes()
    assert data[18:20] == b"\x02\x02"  # campaign files are WAL files
    cut = tmp_path / "cut.db"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated") as err:
        Campaign.open(cut)
    assert str(cut) in str(err.value)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_held_write_lock_gives_a_clear_error_after_busy_timeout(tmp_path):
    c, _ = new_campaign(tmp_path)
    b = c.propose(3)
    c.close()
    c = Campaign.open(tmp_path / "c.db", busy_timeout=0.2)
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        for action in (lambda: c.propose(2), lambda: c.ingest(pd.Series(1, index=b.index)), lambda: c.release()):
            t0 = time.perf_counter()
            with pytest.raises(ValueError, match="locked by another process") as err:
                action()
            assert time.perf_counter() - t0 < 5
            assert str(tmp_path / "c.db") in str(err.value) and "busy_timeout=0.2" in str(err.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert c.ingest(pd.Series(1, index=b.index)) == 3  # and it works once the lock is gone
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    column=st.sampled_from([("strata", "g"), ("y_pred", "pred")]),
    missing=st.sampled_from([None, np.nan, pd.NA]),
    rows=st.lists(st.integers(0, 99), min_size=1, max_size=3, unique=True),
)
def test_property_create_refuses_missing_values_and_writes_nothing(tmp_path_factory, column, missing, rows):
    d = tmp_path_factory.mktemp("miss")
    name, col = column
    pool = make_pool_hardening_campaign(n=100).astype({col: object})
    pool.loc[pool.index[rows], col] = missing
    with pytest.raises(ValueError) as err:
        Campaign.create(d / "c.db", pool, strata="g", y_pred="pred")
    assert f"{name} column {col!r}" in str(err.value) and repr(int(pool.index[min(rows)])) in str(err.value)
    assert os.listdir(d) == []


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(list(range(8))), as_frame=st.booleans())
def test_property_labels_are_paired_by_row_id_not_position(tmp_path_factory, order, as_frame):
    path = tmp_path_factory.mktemp("align") / "c.db"
    pool = make_pool_hardening_campaign(n=60, k=2)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(8)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    shuffled = truth.iloc[list(order)]
    if as_frame:
        c.ingest(pd.DataFrame({"id": shuffled.index, "label": shuffled.to_numpy()}), id_column="id")
    else:
        c.ingest(shuffled)
    assert (c.labels()["label"].reindex(b.index) == truth).all()
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.labelstudio
def test_a_campaign_runs_to_done_through_serve_and_real_webhooks(label_studio, tmp_path):
    from bayeseval.campaign.labels.serve import SECRET_HEADER

    url, token = label_studio
    team = Team(url, token, "serve run", seed=6)
    c, truth = _truth_campaign(tmp_path, "serve.db")
    db = c._store.path
    c.close()
    proc, served = _start_serve(db, url, token, team.project, "webhook-secret")
    try:
        team.ls.webhooks.create(
            url=served + "/",
            project=team.project,
            send_payload=True,
            headers={SECRET_HEADER: "webhook-secret"},
            actions=["ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED", "TASKS_DELETED"],
        )
        _wait(lambda: len(team.tasks()) == 6, 120, "the first tasks")
        first = team.tasks()[0]
        team.ls.tasks.delete(id=str(first["id"]))  # a TASKS_DELETED webhook: the row is released
        _wait(lambda: _status(served)["syncs"] >= 2 and not _status(served)["queued"], 120, "the deletion's sync")
        for _ in range(40):
            st = _status(served)
            if st["done"]:
                break
            if not team.label_open_tasks(truth, limit=2):  # each annotation is a webhook
                time.sleep(1.0)
        st = _wait(lambda: (s := _status(served))["done"] and not s["queued"] and s, 180, "done")
        assert st["labels_used"] == 16 and st["last_error"] is None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    with Campaign.open(db) as c:
        _check_against_truth(c, team, truth, 16)
        assert int(json.loads(json.dumps(st))["forecast"]) == int(c.forecast().sum())


def test_store_stratum_keys_round_trip(tmp_path):
    from bayeseval.campaign.campaign import Campaign

    pool = pd.DataFrame(
        {"g": ["a b", "é", "x", "x", "a b", 'q"uote'], "h": [1, 2, 3, 3, 1, 2], "pred": [0, 1, 0, 1, 1, 0]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)  # a tiny pool
        camp = Campaign.create(
            tmp_path / "c.db", pool, strata=["g", "h"], y_pred="pred", goal=Each(0.3), batch_size=2, random_seed=0
        )
    camp.close()
    with sqlite3.connect(tmp_path / "c.db") as conn:
        stored = [json.loads(k) for (k,) in conn.execute("SELECT key FROM strata ORDER BY code")]
    assert sorted(map(tuple, stored)) == sorted({(g, h) for g, h in zip(pool["g"], pool["h"], strict=True)})
    camp = Campaign.open(tmp_path / "c.db")
    assert camp._store.strata()["key"].tolist() == stored
    camp.close()


def _pool_anytime(seed=0):
    rng = np.random.default_rng(seed)
    sizes, rates = [120, 600, 3000], [0.1, 0.3, 0.05]
    pool = pd.DataFrame({"g": np.repeat(["a", "b", "c"], sizes), "pred": 0})
    truth = pd.Series((rng.random(len(pool)) < np.repeat(rates, sizes)).astype(int), index=pool.index)
    return pool, truth, sizes


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_anytime_campaign_reads_the_tuned_confidence_sequence(tmp_path):
    from bayeseval import confidence_sequence
    from bayeseval._kernels.anytime import planned_trials

    pool, truth, sizes = _pool_anytime()
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", anytime=True, random_seed=2, goal=Each(0.1))
    _run(c, truth, 6)
    st = c.status()
    plans = [max(min(planned_trials(0.1), n), 20) for n in sizes]
    for j, plan in enumerate(plans):
        lo, hi = confidence_sequence(int(st["successes"].iloc[j]), int(st["trials"].iloc[j]), planned_trials=plan)
        assert st["lower"].iloc[j] == pytest.approx(lo, abs=1e-12)
        assert st["upper"].iloc[j] == pytest.approx(hi, abs=1e-12)
    assert (st["read"] == "anytime").all()
    np.testing.assert_array_equal(st["done"].to_numpy(), ((st["upper"] - st["lower"]) / 2 <= 0.1).to_numpy())
    assert c.spec.anytime is True and len(c.config["anytime_concentration"]) == 3
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_resumed_anytime_campaign_matches_uninterrupted(tmp_path):
    pool, truth, _ = _pool_anytime(1)
    kw = dict(strata="g", y_pred="pred", anytime=True, random_seed=3, goal=Each(0.08))
    a = Campaign.create(tmp_path / "a.db", pool, **kw)
    whole = _run(a, truth, 6, size=25)
    b = Campaign.create(tmp_path / "b.db", pool, **kw)
    first = _run(b, truth, 3, size=25)
    b.close()
    b = Campaign.open(tmp_path / "b.db")
    assert b.config["anytime_concentration"] == a.config["anytime_concentration"]
    second = _run(b, truth, 3, size=25)
    assert first + second == whole
    pd.testing.assert_frame_equal(a.status(), b.status())
    a.close()
    b.close()
