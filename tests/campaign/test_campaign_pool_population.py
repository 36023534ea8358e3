"""Campaigns with design=Design(population="pool"): each stratum's rate is its rows' rate in the pool."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayeseval import Design
from bayeseval._kernels.finite_pool import pool_sample_size
from bayeseval._kernels.guarantee import guarantee_stop_level
from bayeseval.campaign import Campaign, CampaignSpec, Each, Overall, simulate
from bayeseval.campaign.goals.each import pool_projection
from bayeseval.campaign.loop.forecast import stratum_feasibility
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.cli.campaign import main

POOL = Design(population="pool")


def _hypergeom_interval(s, n, rows, level):
    """Successes the pool may hold, by inverting scipy's hypergeometric tails (an independent reference)."""
    a = (1 - level) / 2
    ks = np.arange(s, rows - n + s + 1)
    upper_tail = stats.hypergeom.sf(s - 1, rows, ks, n)  # P(S >= s | K)
    lower_tail = stats.hypergeom.cdf(s, rows, ks, n)  # P(S <= s | K)
    keep = (upper_tail >= a * (1 - 1e-9)) & (lower_tail >= a * (1 - 1e-9))
    return ks[keep].min(), ks[keep].max()


def _pool_frame(sizes=(60, 150, 400), rates=(0.1, 0.3, 0.5), seed=0):
    """Rows of strata ``a``, ``b``, ... with exactly ``round(rate * size)`` errors each, shuffled."""
    rng = np.random.default_rng(seed)
    frames = []
    for j, (n, r) in enumerate(zip(sizes, rates, strict=True)):
        err = np.zeros(n, int)
        err[: round(r * n)] = 1
        frames.append(pd.DataFrame({"g": chr(97 + j), "truth": 1, "pred": 1 - rng.permutation(err)}))
    frame = pd.concat(frames, ignore_index=True)
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _create(path, frame, **kw):
    kw.setdefault("random_seed", 3)
    kw.setdefault("goal", Each(0.1))
    kw.setdefault("design", POOL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Campaign.create(path, frame[["g", "pred"]], strata="g", y_pred="pred", **kw)


# -- the stopping rule against scipy's hypergeometric tails -----------------------------------------
@pytest.mark.parametrize(("s", "n", "rows"), [(3, 10, 50), (0, 40, 120), (17, 60, 61), (30, 100, 400), (50, 90, 90)])
def test_the_pool_stops_on_the_hypergeometric_interval_at_the_stop_level(s, n, rows):
    level = 0.95
    stop = guarantee_stop_level(level)
    st = RuleState.from_counts(
        [s], [n], available=[rows - n], guarantee="stratum", population="pool", target_halfwidth=0.05
    )
    k_lo, k_hi = _hypergeom_interval(s, n, rows, stop)
    read, lo, hi = st.read_intervals()
    assert read.tolist() == ["pool"]
    assert (round(lo[0] * rows), round(hi[0] * rows)) == (k_lo, k_hi)
    assert st.stop_halfwidths()[0] == pytest.approx((k_hi - k_lo) / rows / 2, abs=1e-12)
    assert st.stratum_done()[0] == ((k_hi - k_lo) / rows / 2 <= 0.05)
    assert st.read_means()[0] == pytest.approx(s / n)


def test_a_stratum_labelled_to_its_last_row_is_known_exactly_and_done():
    st = RuleState.from_counts(
        [7, 7], [40, 40], available=[0, 1], guarantee="stratum", population="pool", target_halfwidth=0.01
    )
    _, lo, hi = st.read_intervals()
    assert (lo[0], hi[0]) == (7 / 40, 7 / 40)
    assert hi[1] - lo[1] > 0.02  # one row left: the 41st may be either
    assert st.stratum_done().tolist() == [True, False]


def test_the_pool_interval_is_narrower_than_the_process_one_on_the_same_counts():
    kw = dict(available=[300], guarantee="stratum", target_halfwidth=0.05)
    pool = RuleState.from_counts([30], [100], population="pool", **kw)
    process = RuleState.from_counts([30], [100], **kw)
    assert pool.stop_halfwidths()[0] < 0.9 * process.stop_halfwidths()[0]
    assert process.pool_trials().tolist() == [np.inf] and pool.pool_trials().tolist() == [400.0]


def test_the_projection_reaches_zero_at_the_last_row_and_is_the_process_law_without_a_pool():
    hw, neff = np.array([0.08]), np.array([120.0])
    rows = np.array([500.0])
    n = neff * rows / (neff + rows)
    assert pool_projection(hw, neff, rows - n, rows)[0] == pytest.approx(0.0, abs=1e-9)
    assert pool_projection(hw, neff, np.array([0.0]), rows)[0] == pytest.approx(0.08)
    t = np.array([0.0, 50.0, 360.0])
    np.testing.assert_allclose(pool_projection(hw, neff, t, np.array([np.inf])), hw * np.sqrt(neff / (neff + t)))


def test_the_forecast_plans_with_the_pool_sample_size_and_every_target_is_feasible():
    st = RuleState.from_counts(
        [4, 0], [20, 0], available=[180, 40], guarantee="stratum", population="pool", target_halfwidth=0.05
    )
    need = st.goal.labels_needed(st)
    planned = pool_sample_size(0.05, 200, 4.5 / 21, guarantee_stop_level(0.95))
    assert need[0] == planned - 20
    feas = stratum_feasibility(st)
    assert feas["feasible"].all() and feas["achievable_halfwidth"].max() == 0.0  # every row labelled: exact
    process = RuleState.from_counts([4, 0], [20, 0], available=[180, 40], guarantee="stratum", target_halfwidth=0.05)
    assert not stratum_feasibility(process)["feasible"].all()  # 40 rows cannot give +/-0.05 for a process


def test_allocation_counts_the_labels_that_close_a_pool():
    # the same counts in two strata; the first has 10 rows left, so each of its labels narrows it far more
    kw = dict(available=[10, 2000], guarantee="stratum", target_halfwidth=0.03)
    pool = RuleState.from_counts([10, 10], [50, 50], population="pool", **kw)
    process = RuleState.from_counts([10, 10], [50, 50], **kw)
    gains, same = pool.goal.gains(pool), process.goal.gains(process)
    assert same.one(0, 0.0) == same.one(1, 0.0)
    assert gains.one(0, 0.0) > 2 * gains.one(1, 0.0)
    alloc = pool.goal.gains(pool).every(np.array([0.0, 0.0]))
    assert alloc[0] > alloc[1]


# -- a campaign: status, store, reopening ----------------------------------------------------------------
def test_a_pool_campaign_reads_the_pool_interval_and_labels_a_small_stratum_to_its_end(tmp_path):
    frame = _pool_frame(sizes=(12, 150, 300))
    truth = frame.groupby("g")["pred"].apply(lambda p: float((p == 0).mean()))
    c = _create(tmp_path / "c.db", frame, goal=Each(0.03))
    while not c.done:
        batch = c.propose(20)
        c.ingest(pd.Series(frame.loc[batch.index, "truth"].to_numpy(), index=batch.index))
    status = c.status()
    assert set(status["read"]) == {"pool"} and status["done"].all()
    small = status.loc["a"]  # 11 of 12 rows leave +/-1/24 > 0.03: only the last row ends it, exactly
    assert small["labelled"] == 12 and small["lower"] == small["upper"] == pytest.approx(truth["a"])
    assert (status["labelled"] < status["pool_rows"]).loc[["b", "c"]].all()
    stop = guarantee_stop_level(0.95)
    for g, row in status.iterrows():
        k_lo, k_hi = _hypergeom_interval(int(row["successes"]), int(row["trials"]), int(row["pool_rows"]), stop)
        assert (round(row["lower"] * row["pool_rows"]), round(row["upper"] * row["pool_rows"])) == (k_lo, k_hi), g
    assert c.spec.design == POOL and c.config["design"]["population"] == "pool"
    c.close()


def test_the_design_survives_a_kill_and_reopening_gives_the_same_estimates(tmp_path):
    path = tmp_path / "c.db"
    frame = _pool_frame()
    frame.to_csv(tmp_path / "pool.csv", index=True)
    child = f"""
import os, signal, json, warnings
import pandas as pd
from bayeseval import Design
from bayeseval.campaign import Campaign, Each
warnings.simplefilter("ignore")
frame = pd.read_csv({str(tmp_path / "pool.csv")!r}, index_col=0)
c = Campaign.create({str(path)!r}, frame[["g", "pred"]], strata="g", y_pred="pred", goal=Each(0.1),
                    design=Design(population="pool"), random_seed=5)
for _ in range(3):
    b = c.propose(25)
    c.ingest(pd.Series(frame.loc[b.index, "truth"].to_numpy(), index=b.index))
print(c.status()[["lower", "upper", "mean", "read"]].to_json(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert r.returncode == -9, r.stderr
    before = pd.read_json(__import__("io").StringIO(r.stdout.strip()))
    with Campaign.open(path) as c:
        after = c.status()[["lower", "upper", "mean", "read"]]
        assert c.spec.design == POOL
    pd.testing.assert_frame_equal(after, before, check_index_type=False, check_dtype=False, check_names=False)


def test_a_file_written_before_the_design_was_stored_opens_as_a_process_campaign(tmp_path):
    frame = _pool_frame()
    path = tmp_path / "old.db"
    _create(path, frame, design=None).close()
    with sqlite3.connect(path) as conn:  # a file of the earlier format: no "design" in the configuration
        config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
        del config["design"]
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    with Campaign.open(path) as c:
        assert c.spec.design == Design() and set(c.status()["read"]) == {"guaranteed"}


# -- refusals --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"goal": Overall(0.05)}, "got goal='overall'"),
        ({"guarantee": "average"}, "got guarantee='average'"),
        ({"guarantee": "anytime"}, "got guarantee='anytime'"),
        ({"metric": "recall"}, "got metric='recall'"),
        ({"metric": ["error_rate", "accuracy"]}, "got metric=['error_rate', 'accuracy']"),
        ({"proxy": "judge"}, "got proxy='judge'"),
    ],
)
def test_population_pool_refuses_what_it_does_not_serve_naming_both_settings(kw, words):
    with pytest.raises(
        ValueError, match=r"design\.population='pool'.*" + words.replace("[", r"\[").replace("]", r"\]")
    ):
        CampaignSpec(y_pred="pred", strata="g", design=POOL, **kw)


def test_a_cluster_and_a_pool_with_inclusion_probabilities_are_refused_by_name(tmp_path):
    frame = _pool_frame()
    with pytest.raises(ValueError, match=r"design\.cluster='item'"):
        _create(tmp_path / "a.db", frame, design=Design(cluster="item"))
    labels = pd.DataFrame({"label": [1, 1], "p": [0.1, 0.2]}, index=frame.index[:2])
    with pytest.raises(ValueError, match=r"design\.population='pool'.*design\.inclusion='p'"):
        _create(tmp_path / "b.db", frame, labels=labels, design=Design(inclusion="p", population="pool"))
    with pytest.raises(TypeError, match=r"design\.inclusion='p'.*give labels too"):
        _create(tmp_path / "c.db", frame, design=Design(inclusion="p"))
    with pytest.raises(ValueError, match=r"simulate draws its own labels.*design\.inclusion='p'"):
        simulate(frame, strata="g", y_pred="pred", y_true="truth", design={"inclusion": "p"}, progress=False)
    with pytest.raises(TypeError, match="design"):
        _create(tmp_path / "d.db", frame, design="pool")
    assert not any((tmp_path / f"{x}.db").exists() for x in "abcd")


# -- simulation and the command line ---------------------------------------------------------------------
def test_a_simulated_pool_campaign_needs_fewer_labels_and_reads_the_pool_interval():
    frame = _pool_frame(sizes=(120, 200), rates=(0.2, 0.4))
    kw = dict(strata="g", y_pred="pred", y_true="truth", goal=Each(0.1), n_repeats=2, random_seed=0, progress=False)
    pool = simulate(frame, design=POOL, **kw)
    process = simulate(frame, **kw)
    assert pool.table["labels_used"].mean() < 0.8 * process.table["labels_used"].mean()
    assert set(pool.intervals["read"]) == {"pool"} and pool.table["reached_goal"].all()
    assert pool.settings["design"]["population"] == "pool"


def test_cli_create_with_population_pool_round_trips(tmp_path, capsys):
    frame = _pool_frame()
    frame[["g", "pred"]].to_csv(tmp_path / "pool.csv", index_label="id")
    db = tmp_path / "c.db"
    args = ["campaign", "create", "--pool", str(tmp_path / "pool.csv"), "--id-column", "id", "--strata", "g"]
    args += ["--y-pred", "pred", "--population", "pool", "--target-halfwidth", "0.1", "--db", str(db), "--seed", "1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
    capsys.readouterr()
    assert main(["campaign", "status", "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["strata"]
    assert {r["read"] for r in rows} == {"pool"}
    with Campaign.open(db) as c:
        assert c.spec.design == POOL
    bad = args[:-4] + ["--goal", "overall", "--db", str(tmp_path / "x.db"), "--seed", "1"]
    assert main(bad) == 2
    assert "design.population='pool'" in capsys.readouterr().err and not (tmp_path / "x.db").exists()
