"""Tests of ``bayeseval campaign create|propose|ingest|status``."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.campaign import store as store_module
from bayeseval.cli.campaign import main


@pytest.fixture
def pool_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    pool = pd.DataFrame(
        {
            "id": [f"x{i}" for i in range(n)],
            "region": rng.choice(["north", "south", "east"], n),
            "pred": rng.integers(0, 2, n),
            "truth": rng.integers(0, 2, n),
        }
    )
    path = tmp_path / "pool.csv"
    pool.to_csv(path, index=False)
    return path, pool.set_index("id")


def test_full_cli_cycle(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = tmp_path / "c.db"
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", str(db), "--seed", "1", "--target-halfwidth", "0.2"]) == 0
    out = tmp_path / "batch.csv"
    assert main(["campaign", "propose", "--db", str(db), "--batch-size", "30", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    assert len(batch) == 30 and {"id", "region", "label"} <= set(batch.columns)
    assert "pred" not in batch.columns  # annotators do not see the model's prediction by default
    assert batch["label"].isna().all()
    # the labelling team fills the label column
    batch["label"] = pool.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", str(db), "--labels", str(out)]) == 0
    capsys.readouterr()
    assert main(["campaign", "status", "--db", str(db), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["labels_used"] == 30
    strata = {r["stratum"]: r for r in payload["strata"]}
    sub = pool.loc[batch["id"]]
    errors = (sub["truth"] != sub["pred"]).groupby(sub["region"]).sum()
    for region, e in errors.items():
        assert strata[region]["successes"] == e
    # the same through the Python API
    c = Campaign.open(db)
    assert c.labels_used == 30 and set(c.labels().index) == set(batch["id"])
    c.close()


# PrecisionLimitedWarning expected: 600 rows in three strata cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_bad_input_exits_2_with_one_line(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = tmp_path / "c.db"
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "nope",
                 "--y-pred", "pred", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope" in err
    assert not db.exists()
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", str(db), "--seed", "2"]) == 0
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", str(db), "--batch-size", "5", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = [0, 1, 1, 3, 0]  # 3 is not a valid label
    batch.to_csv(out, index=False)
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", str(db), "--labels", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "invalid labels" in err and "3" in err and err.count("\n") == 0
    c = Campaign.open(db)
    assert c.labels_used == 0
    c.close()
    assert main(["campaign", "status", "--db", str(tmp_path / "missing.db")]) == 2


def test_module_entry_point_parquet(tmp_path, pool_csv):
    path, pool = pool_csv
    pq = tmp_path / "pool.parquet"
    pool.reset_index().to_parquet(pq)
    db = tmp_path / "c.db"
    run = [sys.executable, "-m", "bayeseval.cli.campaign", "campaign"]
    r = subprocess.run(run + ["create", "--pool", str(pq), "--id-column", "id", "--strata", "region",
                              "--y-pred", "pred", "--db", str(db)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(run + ["propose", "--db", str(db), "--batch-size", "12", "--out", str(tmp_path / "b.parquet")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert len(pd.read_parquet(tmp_path / "b.parquet")) == 12


# -- the complete command line -----------------------------------------------------------------
SUBCOMMANDS = ["create", "propose", "ingest", "status", "pending", "release", "export", "forecast", "history", "report"]


@pytest.fixture
def labelled_db(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = str(tmp_path / "c.db")
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", db, "--seed", "1", "--costs", "north=3"]) == 0
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "24", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = pool.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    assert main(["campaign", "propose", "--db", db, "--batch-size", "6", "--out", str(tmp_path / "b2.csv")]) == 0
    capsys.readouterr()
    return db, pool


def test_every_subcommand_has_json_and_no_none_default_in_help(capsys):
    for cmd in SUBCOMMANDS:
        assert main(["campaign", cmd, "--help"]) == 0
        text = capsys.readouterr().out
        assert "--json" in text and "(default: None)" not in text, cmd


# PrecisionLimitedWarning expected: labelled_db's 600 rows cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_status_json_shows_what_status_shows(labelled_db, capsys):
    db, _ = labelled_db
    assert main(["campaign", "status", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    with Campaign.open(db) as c:
        st = c.status()
        forecast = c.forecast(cost=True)
    rows = {r["stratum"]: r for r in payload["strata"]}
    for col in st.columns:
        for stratum in st.index:
            got, want = rows[stratum][col], st.loc[stratum, col]
            assert got == pytest.approx(want) if isinstance(got, float) else got == want, (col, stratum)
    costs = pd.Series(1.0, index=st.index)
    costs["north"] = 3.0
    assert payload["cost"] == pytest.approx(float((st["labelled"] * costs).sum()))
    assert payload["forecast"] == int(forecast["labels"].sum())
    assert payload["forecast_cost"] == pytest.approx(float(forecast["cost"].sum()))
    assert main(["campaign", "status", "--db", db]) == 0
    text = capsys.readouterr().out
    assert all(col in text for col in ["pool_rows", "exhausted", "outlier", "cost", "forecast"])


# PrecisionLimitedWarning expected: labelled_db's 600 rows cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_forecast_history_pending_release_json(labelled_db, capsys):
    db, _ = labelled_db
    assert main(["campaign", "forecast", "--db", db, "--json"]) == 0
    f = json.loads(capsys.readouterr().out)
    assert f["cost"] == pytest.approx(sum(r["labels"] * r["cost_per_label"] for r in f["strata"]))
    assert main(["campaign", "history", "--db", db, "--json"]) == 0
    h = json.loads(capsys.readouterr().out)
    assert [r["round"] for r in h["rounds"]] == [1, 2]
    assert sum(h["rounds"][0]["allocation"].values()) == 24 and sum(h["rounds"][1]["allocation"].values()) == 6
    assert main(["campaign", "pending", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == 6
    assert main(["campaign", "release", "--db", db, "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"db": db, "released": 6, "pending": 0}


# PrecisionLimitedWarning expected: labelled_db's 600 rows cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_report_writes_html_with_inline_plots(labelled_db, tmp_path, capsys):
    db, _ = labelled_db
    out = tmp_path / "r.html"
    assert main(["campaign", "report", "--db", db, "--out", str(out)]) == 0
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 2
    assert "Progress over rounds" in html and "labels still needed" in html
    with Campaign.open(db) as c:
        need = int(c.forecast().sum())
    assert f"<b>labels still needed</b>: {need}" in html
    assert main(["campaign", "report", "--db", db, "--out", str(tmp_path / "r.txt")]) == 2
    assert "--out" in capsys.readouterr().err


# PrecisionLimitedWarning expected: labelled_db's 600 rows cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_on_an_existing_file_speaks_to_the_command_line(labelled_db, pool_csv, capsys):
    db, _ = labelled_db
    path, _ = pool_csv
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and db in err and "Campaign.open" not in err


# PrecisionLimitedWarning expected: labelled_db's 600 rows cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_format_must_match_the_file_name(labelled_db, tmp_path, capsys):
    db, _ = labelled_db
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "t.csv"), "--format", "labelstudio"]) == 2
    assert "--format labelstudio writes a .json file" in capsys.readouterr().err
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "t.json")]) == 0
    tasks = json.loads((tmp_path / "t.json").read_text())
    assert len(tasks) == 6 and all("pred" not in t["data"] for t in tasks)
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "p.json"), "--show-prediction"]) == 0
    assert all("pred" in t["data"] for t in json.loads((tmp_path / "p.json").read_text()))


# -- output files: never onto the database, never over a file without --force, atomic ---------------
def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _db(tmp_path, pool_csv, name="c.db"):
    path, pool = pool_csv
    db = str(tmp_path / name)
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", db, "--seed", "1", "--target-halfwidth", "0.2"]) == 0
    return db, pool


@pytest.mark.parametrize(("command", "name"), [("propose", "camp.csv"), ("export", "camp.json")])
def test_out_onto_the_database_is_refused_even_with_force_or_through_a_link(tmp_path, pool_csv, capsys, command, name):
    db, _ = _db(tmp_path, pool_csv, name)
    before = _digest(db)
    os.symlink(db, tmp_path / f"link-{name}")
    os.link(db, tmp_path / f"hard-{name}")
    for target in (db, str(tmp_path / f"link-{name}"), str(tmp_path / f"hard-{name}")):
        for extra in ([], ["--force"]):
            capsys.readouterr()
            assert main(["campaign", command, "--db", db, "--out", target, *extra]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and "is the --db file itself" in err[0]
    assert _digest(db) == before  # the database bytes are unchanged
    with Campaign.open(db) as c:  # and it is still the campaign, with nothing proposed
        assert len(c.pending) == 0


def test_out_does_not_replace_the_pool_or_a_pending_batch_without_force(tmp_path, pool_csv, capsys):
    db, pool = _db(tmp_path, pool_csv)
    pool_file = str(pool_csv[0])
    batch = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "10", "--out", str(batch)]) == 0
    labelled = pd.read_csv(batch)
    labelled["label"] = pool.loc[labelled["id"], "truth"].to_numpy()  # labelled, not yet ingested
    labelled.to_csv(batch, index=False)
    kept = {p: _digest(p) for p in (pool_file, str(batch), db)}
    for command, target in (("propose", pool_file), ("propose", str(batch)), ("export", str(batch))):
        capsys.readouterr()
        assert main(["campaign", command, "--db", db, "--out", target]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "already exists" in err[0] and "--force" in err[0]
    assert {p: _digest(p) for p in kept} == kept
    with Campaign.open(db) as c:
        assert len(c.pending) == 10  # the refused propose recorded nothing
    # --force replaces a file that is not the database: export writes the same 10 pending rows
    assert main(["campaign", "export", "--db", db, "--out", str(batch), "--force"]) == 0
    assert sorted(pd.read_csv(batch)["id"]) == sorted(labelled["id"])


class _FailingCommit:
    """A connection whose COMMIT fails as on a full disk (everything else is the real connection)."""

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql, *args):
        if sql.strip().upper() == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def _hidden_files(folder):
    return [f for f in os.listdir(folder) if f.startswith(".writing-")]


def test_a_failed_commit_leaves_out_as_it_was_and_no_temporary_file(tmp_path, pool_csv, capsys, monkeypatch):
    db, _ = _db(tmp_path, pool_csv)
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("id,label\nx1,0\n")
    before = _digest(earlier)
    real = store_module.CampaignStore._connect
    monkeypatch.setattr(store_module.CampaignStore, "_connect", lambda self: _FailingCommit(real(self)))
    capsys.readouterr()
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(earlier), "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the disk is full" in err and "not a" not in err and err.count("\n") == 0
    assert _digest(earlier) == before  # the user's file is as it was
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(tmp_path / "new.csv")]) == 2
    assert not (tmp_path / "new.csv").exists()
    assert _hidden_files(tmp_path) == []
    monkeypatch.undo()
    with Campaign.open(db) as c:  # nothing was recorded
        assert len(c.pending) == 0 and len(c.history()) == 0


def test_an_export_or_report_failing_mid_write_leaves_the_target_as_it_was(tmp_path, pool_csv, capsys, monkeypatch):
    from bayeseval.cli import campaign as campaign_cli

    db, _ = _db(tmp_path, pool_csv)
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(tmp_path / "b.csv")]) == 0
    target = tmp_path / "again.csv"
    target.write_text("earlier content\n")
    before = _digest(target)

    def half_then_full_disk(campaign, batch, path, kind):
        path.write_text("id,label\nx1,\n")  # part of the file is written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(campaign_cli, "_write_batch", half_then_full_disk)
    capsys.readouterr()
    assert main(["campaign", "export", "--db", db, "--out", str(target), "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert "No space left on device" in err and err.count("\n") == 0
    assert _digest(target) == before and _hidden_files(tmp_path) == []
    monkeypatch.setattr(Path, "write_text", lambda self, *a, **k: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, "No space left on device")))
    assert main(["campaign", "report", "--db", db, "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists() and _hidden_files(tmp_path) == []


# -- read-only campaigns -----------------------------------------------------------------------------
READ_COMMANDS = [["status"], ["pending"], ["history"], ["forecast"], ["export", "--out", "{dir}/e.csv"],
                 ["report", "--out", "{dir}/r.html"]]


def test_read_commands_open_the_database_read_only(tmp_path, pool_csv, capsys, monkeypatch):
    db, _ = _db(tmp_path, pool_csv)
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(tmp_path / "b.csv")]) == 0
    opened = []
    real = sqlite3.connect

    def recording(database, *args, **kwargs):
        opened.append((str(database), kwargs.get("uri", False)))
        return real(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", recording)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for command in READ_COMMANDS:
        opened.clear()
        args = [a.format(dir=out_dir) for a in command[1:]]
        assert main(["campaign", command[0], "--db", db, *args]) == 0, capsys.readouterr().err
        assert opened and all(uri and "mode=ro" in name for name, uri in opened), (command, opened)
    opened.clear()
    assert main(["campaign", "propose", "--db", db, "--batch-size", "2", "--out", str(out_dir / "p.csv")]) == 0
    assert any(not uri for _, uri in opened)  # a write command still opens for writing


def test_read_commands_work_on_a_read_only_mount(tmp_path, pool_csv):
    """A real read-only file system: a read-only bind mount in a user namespace (``unshare -rm``)."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("no user namespaces here to mount a folder read-only")
    ro = tmp_path / "ro"
    ro.mkdir()
    db, _ = _db(ro, pool_csv)
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(ro / "b.csv")]) == 0
    before = _digest(db)
    out = tmp_path / "out"
    out.mkdir()
    calls = [["campaign", c[0], "--db", db, *[a.format(dir=out) for a in c[1:]]] for c in READ_COMMANDS]
    calls.append(["campaign", "propose", "--db", db, "--out", str(out / "p.csv")])
    script = (
        "import sys, json; from bayeseval.cli.campaign import main\n"
        f"codes = [main(a) for a in {calls!r}]\n"
        "print(json.dumps(codes))\n"
    )
    shell = (f"mount --bind {ro} {ro} && mount -o remount,ro,bind {ro} && "
             f"touch {ro}/probe 2>/dev/null; test ! -e {ro}/probe && {sys.executable} -c \"$0\"")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(["unshare", "-rm", "sh", "-c", shell, script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    codes = json.loads(r.stdout.strip().splitlines()[-1])
    assert codes[:-1] == [0] * len(READ_COMMANDS), r.stderr
    assert codes[-1] == 2 and "read-only" in r.stderr.strip().splitlines()[-1]  # a write says why
    assert "not a readable" not in r.stderr
    assert _digest(db) == before and (out / "e.csv").exists() and (out / "r.html").exists()


@pytest.mark.parametrize(
    ("message", "expected"),
    [("database or disk is full", "the disk is full"),
     ("attempt to write a readonly database", "read-only"),
     ("disk I/O error", "disk I/O error")],
)
def test_sqlite_failures_are_named_as_what_they_are(tmp_path, pool_csv, capsys, monkeypatch, message, expected):
    db, _ = _db(tmp_path, pool_csv)

    def failing(*args, **kwargs):
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(sqlite3, "connect", failing)
    capsys.readouterr()
    assert main(["campaign", "status", "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and "not a" not in err and err.count("\n") == 0


def test_a_file_that_cannot_be_opened_is_named_read_only_where_the_folder_is(tmp_path, pool_csv, capsys, monkeypatch):
    db, _ = _db(tmp_path, pool_csv)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode == os.W_OK else real_access(p, mode))
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: (_ for _ in ()).throw(
        sqlite3.OperationalError("unable to open database file")))
    capsys.readouterr()
    assert main(["campaign", "status", "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert "read-only" in err and "not a" not in err


# -- warnings on the command line ---------------------------------------------------------------------
# the subject: the command prints the PrecisionLimitedWarning as one stderr line
@pytest.mark.filterwarnings("always::bayeseval.PrecisionLimitedWarning")
def test_a_warning_is_one_line_without_source_path_once_per_command(tmp_path, pool_csv, capsys):
    import warnings

    path, _ = pool_csv
    db = str(tmp_path / "c.db")
    hook = warnings.showwarning
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", db, "--target-halfwidth", "0.03"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: target_halfwidth=0.03 cannot be met")
    assert ".py" not in err[0] and "return " not in err[0]
    # the report reads the feasibility more than once: the warning is still printed once
    for command in (["report", "--out", str(tmp_path / "r.html")], ["status"], ["forecast"]):
        assert main(["campaign", command[0], "--db", db, *command[1:]]) == 0
        lines = [line for line in capsys.readouterr().err.splitlines() if line]
        assert lines == err, command
    assert warnings.showwarning is hook  # the hook lives only while a command runs


def test_a_waiting_write_ahead_log_in_a_read_only_folder_is_refused_not_read_stale(tmp_path, pool_csv, capsys,
                                                                                    monkeypatch):
    db, _ = _db(tmp_path, pool_csv)
    copy = tmp_path / "copy"
    copy.mkdir()
    with Campaign.open(db) as c:  # a proposal still in the write-ahead log when the files are copied
        c.propose(7)
        assert os.path.getsize(db + "-wal") > 0
        shutil.copy(db, copy / "c.db")
        shutil.copy(db + "-wal", copy / "c.db-wal")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode == os.W_OK else real_access(p, mode))
    capsys.readouterr()
    assert main(["campaign", "pending", "--db", str(copy / "c.db"), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "write-ahead log" in err and "read-only" in err and err.count("\n") == 0
    monkeypatch.undo()  # where the folder can be written, the log is applied: 7 pending, not 0
    assert main(["campaign", "pending", "--db", str(copy / "c.db"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == 7


def test_labelstudio_config_out_follows_the_same_rule(tmp_path, pool_csv, capsys):
    db, _ = _db(tmp_path, pool_csv)
    before = _digest(db)
    config = tmp_path / "config.xml"
    config.write_text("<View/>")
    for target, extra, expected in ((db, ["--force"], "is the --db file itself"), (str(config), [], "--force")):
        capsys.readouterr()
        assert main(["campaign", "labelstudio-config", "--db", db, "--out", target, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert expected in err and err.count("\n") == 0
    assert _digest(db) == before and config.read_text() == "<View/>"
    assert main(["campaign", "labelstudio-config", "--db", db, "--out", str(config), "--force"]) == 0
    assert "<Choices" in config.read_text()


def test_an_older_file_is_read_read_only_without_being_upgraded(tmp_path, pool_csv, capsys):
    db, _ = _db(tmp_path, pool_csv)
    assert main(["campaign", "propose", "--db", db, "--batch-size", "5", "--out", str(tmp_path / "b.csv")]) == 0
    conn = sqlite3.connect(db)  # the file as schema version 2 wrote it: no content and tasks tables
    conn.executescript("DROP TABLE content; DROP TABLE tasks; UPDATE meta SET value = '2' WHERE key = 'schema_version';")
    conn.close()
    before = _digest(db)
    capsys.readouterr()
    assert main(["campaign", "pending", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == 5
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "again.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "again.csv")) == 5
    assert _digest(db) == before  # read, not upgraded


def test_batch_csv_neutralises_formulas_and_ingests_unchanged(tmp_path, capsys):
    # stratum names a spreadsheet would run as formulas; ids that look like formulas too
    rng = np.random.default_rng(3)
    n = 120
    regions = np.array(['=HYPERLINK("http://x","y")', "+1+2", "@SUM(A1)", "plain"])
    pool = pd.DataFrame({"id": [f"-{i}" for i in range(n)], "region": rng.choice(regions, n),
                         "pred": rng.integers(0, 2, n), "truth": rng.integers(0, 2, n)})
    path, db, out = tmp_path / "pool.csv", tmp_path / "c.db", tmp_path / "b.csv"
    pool.to_csv(path, index=False)
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", str(db), "--seed", "1", "--target-halfwidth", "0.2"]) == 0
    assert main(["campaign", "propose", "--db", str(db), "--batch-size", "40", "--out", str(out)]) == 0
    batch = pd.read_csv(out, dtype=str, keep_default_na=False)
    truth = pool.set_index("id")
    # every formula-like text cell starts with a quote; the rest and the ids are as written
    expected = [("'" + r) if r[0] in "=+-@" else r for r in truth.loc[batch["id"], "region"]]
    assert batch["region"].tolist() == expected
    assert batch["id"].str.startswith("-").all()
    batch["label"] = truth.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", str(db), "--labels", str(out)]) == 0
    capsys.readouterr()
    c = Campaign.open(db)
    got = c.labels()
    assert {str(i) for i in got.index} == set(batch["id"])  # the ids round-trip unchanged
    assert (got.iloc[:, 0].astype(int).to_numpy() == truth.loc[[str(i) for i in got.index], "truth"].to_numpy()).all()
    c.close()
