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

import matplotlib
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

import bayeseval
from bayeseval.campaign import Campaign, Decide
from bayeseval.campaign.store import store as store_module
from bayeseval.cli import main as cli
from bayeseval.cli.campaign import main
from bayeseval.cli.main import main as main_audit_report
from tests.helpers import (
    ROOT,
    _campaign,
    _campaign_pool,
    _close_figures,  # noqa: F401
    _pool_campaign_proxy,
    assert_counts_match_labels,
    content_pool,
    exact_pool,
    make_pool_hardening_campaign,
    truth_of_hardening_campaign,
)

matplotlib.use("Agg")


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


SUBCOMMANDS = ["create", "propose", "ingest", "status", "pending", "release", "export", "forecast", "history", "report"]


@pytest.fixture
def labelled_db(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
                "--costs",
                "north=3",
            ]
        )
        == 0
    )
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "24", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = pool.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    assert main(["campaign", "propose", "--db", db, "--batch-size", "6", "--out", str(tmp_path / "b2.csv")]) == 0
    capsys.readouterr()
    return db, pool


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _db(tmp_path, pool_csv, name="c.db"):
    path, pool = pool_csv
    db = str(tmp_path / name)
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
                "--target-halfwidth",
                "0.2",
            ]
        )
        == 0
    )
    return db, pool


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


READ_COMMANDS = [
    ["status"],
    ["pending"],
    ["history"],
    ["forecast"],
    ["export", "--out", "{dir}/e.csv"],
    ["report", "--out", "{dir}/r.html"],
]


def _report_kappas(html_text):
    """Stratum -> kappa of the report's agreement table."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_text, "html.parser")
    table = next(h for h in soup.find_all("h2") if h.text == "Agreement between annotators").find_next("table")
    head = [th.text for th in table.find("thead").find_all("th")]
    rows = [[td.text for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")]
    return {row[0]: float(row[head.index("kappa")]) for row in rows}


@pytest.fixture
def cli_campaign(tmp_path):
    pool = make_pool_hardening_campaign(n=300)
    pool.reset_index().to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(tmp_path / "pool.csv"),
                "--id-column",
                "rid",
                "--strata",
                "g",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
                "--target-halfwidth",
                "0.01",
            ]
        )
        == 0
    )
    return db, pool


def test_full_cli_cycle(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = tmp_path / "c.db"
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                str(db),
                "--seed",
                "1",
                "--target-halfwidth",
                "0.2",
            ]
        )
        == 0
    )
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
                "nope",
                "--y-pred",
                "pred",
                "--db",
                str(db),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope" in err
    assert not db.exists()
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                str(db),
                "--seed",
                "2",
            ]
        )
        == 0
    )
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
    r = subprocess.run(
        run
        + ["create", "--pool", str(pq), "--id-column", "id", "--strata", "region", "--y-pred", "pred", "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    r = subprocess.run(
        run + ["propose", "--db", str(db), "--batch-size", "12", "--out", str(tmp_path / "b.parquet")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert len(pd.read_parquet(tmp_path / "b.parquet")) == 12


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
    assert f"<b>labels still needed</b> {need}" in html
    assert main(["campaign", "report", "--db", db, "--out", str(tmp_path / "r.txt")]) == 2
    assert "--out" in capsys.readouterr().err


# PrecisionLimitedWarning expected: labelled_db's 600 rows cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_on_an_existing_file_speaks_to_the_command_line(labelled_db, pool_csv, capsys):
    db, _ = labelled_db
    path, _ = pool_csv
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
            ]
        )
        == 2
    )
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
    monkeypatch.setattr(
        Path,
        "write_text",
        lambda self, *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")),
    )
    assert main(["campaign", "report", "--db", db, "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists() and _hidden_files(tmp_path) == []


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
    shell = (
        f"mount --bind {ro} {ro} && mount -o remount,ro,bind {ro} && "
        f'touch {ro}/probe 2>/dev/null; test ! -e {ro}/probe && {sys.executable} -c "$0"'
    )
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
    [
        ("database or disk is full", "the disk is full"),
        ("attempt to write a readonly database", "read-only"),
        ("disk I/O error", "disk I/O error"),
    ],
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
    monkeypatch.setattr(
        sqlite3,
        "connect",
        lambda *a, **k: (_ for _ in ()).throw(sqlite3.OperationalError("unable to open database file")),
    )
    capsys.readouterr()
    assert main(["campaign", "status", "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert "read-only" in err and "not a" not in err


# the subject: the command prints the PrecisionLimitedWarning as one stderr line
@pytest.mark.filterwarnings("always::bayeseval.PrecisionLimitedWarning")
def test_a_warning_is_one_line_without_source_path_once_per_command(tmp_path, pool_csv, capsys):
    import warnings

    path, _ = pool_csv
    db = str(tmp_path / "c.db")
    hook = warnings.showwarning
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--target-halfwidth",
                "0.03",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: target_halfwidth=0.03 cannot be met")
    assert ".py" not in err[0] and "return " not in err[0]
    # the report reads the feasibility more than once: the warning is still printed once
    for command in (["report", "--out", str(tmp_path / "r.html")], ["status"], ["forecast"]):
        assert main(["campaign", command[0], "--db", db, *command[1:]]) == 0
        lines = [line for line in capsys.readouterr().err.splitlines() if line]
        assert lines == err, command
    assert warnings.showwarning is hook  # the hook lives only while a command runs


def test_a_waiting_write_ahead_log_in_a_read_only_folder_is_refused_not_read_stale(
    tmp_path, pool_csv, capsys, monkeypatch
):
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
    conn.executescript(
        "DROP TABLE content; DROP TABLE tasks; UPDATE meta SET value = '2' WHERE key = 'schema_version';"
    )
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
    pool = pd.DataFrame(
        {
            "id": [f"-{i}" for i in range(n)],
            "region": rng.choice(regions, n),
            "pred": rng.integers(0, 2, n),
            "truth": rng.integers(0, 2, n),
        }
    )
    path, db, out = tmp_path / "pool.csv", tmp_path / "c.db", tmp_path / "b.csv"
    pool.to_csv(path, index=False)
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                str(db),
                "--seed",
                "1",
                "--target-halfwidth",
                "0.2",
            ]
        )
        == 0
    )
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


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_tie_breaker_does_not_make_agreement_perfect(tie_broken, tmp_path, capsys):
    from bayeseval.campaign.report import campaign_report_html

    c, rows, first, second, region = tie_broken
    assert c.labels_used == len(rows)  # every tie resolved by the third annotator
    reference = {g: cohen_kappa_score(first[region == g], second[region == g]) for g in ("north", "south")}
    assert all(0.4 < k < 0.95 for k in reference.values())
    agree = c.agreement()
    for g, k in reference.items():
        assert agree.loc[g, "method"] == "cohen" and agree.loc[g, "per_row"] == 2
        assert agree.loc[g, "rows"] == (region == g).sum()  # every row annotated twice, not only the agreed ones
        assert agree.loc[g, "kappa"] == pytest.approx(k, abs=1e-12)
    capsys.readouterr()
    assert main(["campaign", "status", "--db", str(tmp_path / "c.db"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    got = {r["stratum"]: r for r in payload["agreement"]}
    assert "first" in payload["agreement_rule"]
    for g, k in reference.items():
        assert got[g]["method"] == "cohen" and got[g]["rows"] == (region == g).sum()
        assert got[g]["kappa"] == pytest.approx(k, abs=1e-9)  # JSON carries 10 decimals
    report = _report_kappas(campaign_report_html(c, plots=False))
    assert report == pytest.approx(reference, abs=5e-5)


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_csv_batches_keep_the_content_and_the_cli_writes_the_config(tmp_path, capsys):
    import xml.etree.ElementTree as ET

    pool_annotations = content_pool().reset_index()
    pool_annotations.to_csv(tmp_path / "pool.csv", index=False)
    db, out = str(tmp_path / "c.db"), str(tmp_path / "b.csv")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(tmp_path / "pool.csv"),
                "--id-column",
                "id",
                "--strata",
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--content",
                "text,image_url",
                "--seed",
                "2",
            ]
        )
        == 0
    )
    assert main(["campaign", "propose", "--db", db, "--out", out, "--batch-size", "5"]) == 0
    batch = pd.read_csv(out)
    want = pool_annotations.set_index("id").loc[batch["id"]]
    assert batch["text"].tolist() == want["text"].tolist()
    assert batch["image_url"].tolist() == want["image_url"].tolist()
    cfg = tmp_path / "config.xml"
    assert (
        main(["campaign", "labelstudio-config", "--db", db, "--out", str(cfg), "--content-type", "image_url=text"]) == 0
    )
    root = ET.parse(cfg).getroot()
    assert [el.tag for el in root if el.tag in ("Text", "Image")] == ["Text", "Text"]
    capsys.readouterr()
    assert main(["campaign", "labelstudio-config", "--db", db, "--content-type", "nope=image"]) == 2
    assert "nope" in capsys.readouterr().err


def test_cli_creates_a_decision_campaign_and_status_shows_decisions(tmp_path, capsys):
    pool = exact_pool([0.02, 0.3], [600, 600], random_seed=1)
    path = tmp_path / "pool.csv"
    pool.to_csv(path, index_label="id")
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
                "pred",
                "--metric",
                "accuracy",
                "--goal",
                "decide",
                "--threshold",
                "s0=0.9,s1=0.8",
                "--db",
                db,
                "--seed",
                "1",
            ]
        )
        == 0
    )
    with Campaign.open(db) as c:
        assert c.spec.goal == Decide((0.9, 0.8), "above")
        while not c.done:
            batch = c.propose(25)
            if batch.empty:
                break
            c.ingest(pool.loc[batch.index, "truth"])
    capsys.readouterr()
    assert main(["campaign", "status", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["goal"] == "decide" and payload["direction"] == "above" and payload["done"]
    # accuracy 0.98 meets 0.9; accuracy 0.70 fails 0.8
    assert [r["decision"] for r in payload["strata"]] == ["meets", "fails"]
    assert main(["campaign", "status", "--db", db]) == 0
    assert "goal: decide whether each rate is above its threshold" in capsys.readouterr().out


def test_cli_bad_threshold_exits_2_naming_it(tmp_path, capsys):
    pool = exact_pool([0.02, 0.3], [100, 100])
    path = tmp_path / "pool.csv"
    pool.to_csv(path, index_label="id")
    args = [
        "campaign",
        "create",
        "--pool",
        str(path),
        "--id-column",
        "id",
        "--strata",
        "stratum",
        "--y-pred",
        "pred",
        "--goal",
        "decide",
        "--db",
        str(tmp_path / "c.db"),
    ]
    assert main([*args, "--threshold", "s0=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--threshold" in err and "s0=2" in err and err.count("\n") == 0
    assert main([*args, "--threshold", "0.5", "--direction", "sideways"]) == 2
    assert "--direction" in capsys.readouterr().err


def test_cli_margin_is_stored_and_a_bad_margin_exits_2_naming_it(tmp_path, capsys):
    pool = exact_pool([0.1, 0.3], [400, 400])
    pool.to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    base = [
        "campaign",
        "create",
        "--pool",
        str(tmp_path / "pool.csv"),
        "--strata",
        "stratum",
        "--y-pred",
        "pred",
        "--goal",
        "decide",
        "--threshold",
        "0.12",
    ]
    assert main([*base, "--db", db, "--margin", "0.02"]) == 0
    with Campaign.open(db) as c:
        assert c.spec.goal.margin == 0.02 and c.state().margin == 0.02
    capsys.readouterr()
    assert main([*base, "--db", str(tmp_path / "d.db"), "--margin", "0.7"]) == 2
    err = capsys.readouterr().err
    assert "--margin" in err and len(err.strip().splitlines()) == 1


def test_cli_proxy_flag(tmp_path):
    from bayeseval.cli.main import main

    pool, _ = _pool_campaign_proxy(n=500)
    path = tmp_path / "pool.csv"
    pool.rename_axis("id").reset_index().to_csv(path, index=False)
    db = tmp_path / "camp.db"
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
                "g",
                "--y-pred",
                "pred",
                "--proxy",
                "judge",
                "--target-halfwidth",
                "0.1",
                "--db",
                str(db),
                "--seed",
                "1",
            ]
        )
        == 0
    )
    c = Campaign.open(db)
    assert c.spec.proxy == "judge"
    batch = c.propose(30)
    # Neyman across cells from the uniform prior: the disagreement cell gets its share N_c/N
    cell = pool.loc[batch.index, "judge"] != pool.loc[batch.index, "pred"]
    assert 0 < cell.sum() < len(batch)
    assert (c.status()["read"] == "proxy").all()
    c.close()


@pytest.mark.parametrize("flag", ["--own-floor", "--read-threshold", "--stop-level", "--adaptive-floor"])
def test_cli_has_no_stopping_flags(tmp_path, flag):
    pool = _campaign_pool()
    pool.to_csv(tmp_path / "pool.csv", index_label="row")
    args = [
        "campaign",
        "create",
        "--db",
        str(tmp_path / "c.db"),
        "--pool",
        str(tmp_path / "pool.csv"),
        "--strata",
        "g",
        "--y-pred",
        "pred",
        "--id-column",
        "row",
        flag,
        "2",
    ]
    assert main(args) == 2 and not (tmp_path / "c.db").exists()


def test_cli_ingest_reads_the_y_true_column_in_two_batches(tmp_path, pool_campaign_spec):
    path = tmp_path / "pool.csv"
    pool_campaign_spec.reset_index().to_csv(path, index=False)
    db, out = str(tmp_path / "c.db"), tmp_path / "b.csv"
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(path),
                "--id-column",
                "row_id",
                "--strata",
                "stratum",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
            ]
        )
        == 0
    )
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["answer"] = pool_campaign_spec.loc[batch["row_id"], "truth"].to_numpy()
    batch.iloc[:4].to_csv(tmp_path / "first.csv", index=False)
    batch.iloc[4:].to_csv(tmp_path / "second.csv", index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(tmp_path / "first.csv"), "--y-true", "answer"]) == 0
    assert main(["campaign", "ingest", "--db", db, "--labels", str(tmp_path / "second.csv"), "--y-true", "answer"]) == 0
    with Campaign.open(db) as camp:
        labels = camp.labels()["label"]
        assert labels.sort_index().tolist() == pool_campaign_spec.loc[sorted(batch["row_id"]), "truth"].tolist()


def test_cli_without_y_pred_exits_2_naming_it(tmp_path, pool_campaign_spec, capsys):
    path = tmp_path / "pool.csv"
    pool_campaign_spec.reset_index().to_csv(path, index=False)
    assert main(["campaign", "create", "--pool", str(path), "--strata", "stratum", "--db", str(tmp_path / "c.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--y-pred" in err and err.count("\n") == 0


def test_cli_create_stores_the_guarantee(tmp_path, pool_campaign_spec):
    path = tmp_path / "pool.csv"
    pool_campaign_spec.to_csv(path, index_label="id")
    args = ["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "stratum", "--y-pred", "pred"]
    assert main([*args, "--db", str(tmp_path / "a.db"), "--guarantee", "average"]) == 0
    assert main([*args, "--db", str(tmp_path / "s.db")]) == 0
    with Campaign.open(tmp_path / "a.db") as a, Campaign.open(tmp_path / "s.db") as s:
        assert (a.spec.guarantee.name, s.spec.guarantee.name) == ("average", "stratum")


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_cli_ingest_of_fractional_and_infinite_labels(tmp_path, capsys):
    pool = make_pool_hardening_campaign()
    pool.reset_index().to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(tmp_path / "pool.csv"),
                "--id-column",
                "rid",
                "--strata",
                "g",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
            ]
        )
        == 0
    )
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "4", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    for bad in ([0.5, 1, 0, 1], [1, 0, np.inf, 0]):
        batch["label"] = bad
        batch.to_csv(out, index=False)
        capsys.readouterr()
        assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "invalid labels" in err and "--labels" in err
        bad_id = int(batch["rid"][int(np.flatnonzero(np.isin(bad, [0.5, np.inf]))[0])])
        assert repr(bad_id) in err
    c = Campaign.open(db)
    assert c.labels_used == 0
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("out", ["b.xlsx", "missing_dir/b.csv", "b"])
def test_propose_to_an_unwritable_out_strands_nothing(tmp_path, cli_campaign, capsys, out):
    db, _ = cli_campaign
    capsys.readouterr()
    assert main(["campaign", "propose", "--db", db, "--batch-size", "5", "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err
    c = Campaign.open(db)
    assert len(c.pending) == 0 and len(c.history()) == 0
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_propose_whose_file_write_fails_strands_nothing(tmp_path, cli_campaign, capsys, monkeypatch):
    db, _ = cli_campaign

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    assert main(["campaign", "propose", "--db", db, "--batch-size", "5", "--out", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "No space left" in err
    assert not (tmp_path / "b.csv").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".b.csv")] == []  # no temp file left
    c = Campaign.open(db)
    assert len(c.pending) == 0 and len(c.history()) == 0
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_batch_file_round_trip(tmp_path, cli_campaign, suffix):
    db, pool = cli_campaign
    out = tmp_path / f"b{suffix}"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "12", "--out", str(out), "--show-prediction"]) == 0
    batch = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
    assert list(batch.columns[:1]) == ["rid"] and len(batch) == 12  # the id is a column
    assert (pool.loc[batch["rid"], "pred"].to_numpy() == batch["pred"].to_numpy()).all()
    batch["label"] = [truth_of_hardening_campaign(r) for r in batch["rid"]]
    if suffix == ".parquet":
        batch.to_parquet(out, index=False)
    else:
        batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    c = Campaign.open(db)
    assert c.labels_used == 12 and sorted(c.labels().index) == sorted(batch["rid"])
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_export_pending_release(tmp_path, cli_campaign, capsys):
    db, pool = cli_campaign
    b1, b2 = tmp_path / "b1.csv", tmp_path / "b2.parquet"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "6", "--out", str(b1)]) == 0
    assert main(["campaign", "propose", "--db", db, "--batch-size", "4", "--out", str(b2)]) == 0
    ids1, ids2 = list(pd.read_csv(b1)["rid"]), list(pd.read_parquet(b2)["rid"])
    b1.unlink()  # the batch file is lost: export writes it again
    assert main(["campaign", "export", "--db", db, "--round", "1", "--out", str(b1)]) == 0
    again = pd.read_csv(b1)
    assert list(again["rid"]) == ids1 and again["label"].isna().all() and (again["round"] == 1).all()
    capsys.readouterr()
    assert main(["campaign", "pending", "--db", db, "--json"]) == 0
    import json

    payload = json.loads(capsys.readouterr().out)
    assert payload["pending"] == 10 and payload["rounds"] == {"1": 6, "2": 4}
    assert sorted(payload["ids"]) == sorted(ids1 + ids2)
    assert main(["campaign", "release", "--db", db, "--ids", f"{ids2[0]},{ids2[1]}"]) == 0
    assert main(["campaign", "release", "--db", db, "--file", str(b1)]) == 0
    c = Campaign.open(db)
    assert sorted(c.pending.index) == sorted(ids2[2:])
    c.close()
    assert main(["campaign", "release", "--db", db, "--all"]) == 0
    c = Campaign.open(db)
    assert len(c.pending) == 0 and c.status()["pending"].sum() == 0
    c.close()
    capsys.readouterr()
    assert main(["campaign", "release", "--db", db]) == 2  # says what to release
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_cli_ingest_twice_and_relabel(tmp_path, cli_campaign, capsys):
    db, pool = cli_campaign
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "8", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = [truth_of_hardening_campaign(r) for r in batch["rid"]]
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    assert "ingested 0 new labels (8 already present" in capsys.readouterr().out
    batch.loc[0, "label"] = 1 - batch.loc[0, "label"]
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(int(batch.loc[0, "rid"])) in err and "relabel" in err
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out), "--relabel"]) == 0
    c = Campaign.open(db)
    assert c.labels()["label"][int(batch.loc[0, "rid"])] == batch.loc[0, "label"]
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_cli_on_a_foreign_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "x.db"
    path.write_text("not a database\n")
    for cmd in (["status"], ["pending"], ["release", "--all"], ["export", "--out", str(tmp_path / "b.csv")]):
        assert main(["campaign", *cmd, "--db", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--db" in err and str(path) in err


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "argv, names",
    [
        (["propose", "--batch-size", "abc", "--out", "b.csv"], "--batch-size"),
        (["propose", "--batch-size", "0", "--out", "b.csv"], "--batch-size"),
        (["propose", "--out", "b.csv", "--bogus"], "--bogus"),
        (["propose"], "--out"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--target-halfwidth", "nan"], "--target-halfwidth"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--target-halfwidth", "0.5"], "--target-halfwidth"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--level", "1.5"], "--level"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--seed", "-1"], "--seed"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--budget", "x"], "--budget"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--score-bins", "a,b"], "--score-bins"),
        (["create", "--pool", "POOL", "--y-pred", "pred", "--strata", ","], "--strata"),
        (["create", "--pool", "EMPTY", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "HEADER", "--y-pred", "pred", "--strata", "g"], "--pool"),
        (["create", "--pool", "GARBLED_PQ", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "GARBLED_CSV", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "pool.xlsx", "--y-pred", "pred"], "--pool"),
        (["create", "--pool", "nope.csv", "--y-pred", "pred"], "--pool"),
        (["ingest", "--labels", "EMPTY"], "--labels"),
        (["ingest", "--labels", "GARBLED_PQ"], "--labels"),
        (["bogus"], "bogus"),
        ([], "sub-command"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path, cli_campaign, capsys, argv, names):
    db, _ = cli_campaign
    files = {
        "POOL": tmp_path / "pool.csv",
        "EMPTY": tmp_path / "empty.csv",
        "HEADER": tmp_path / "header.csv",
        "GARBLED_PQ": tmp_path / "garbled.parquet",
        "GARBLED_CSV": tmp_path / "garbled.csv",
    }
    files["EMPTY"].write_text("")
    files["HEADER"].write_text("rid,g,pred\n")
    files["GARBLED_PQ"].write_bytes(np.random.default_rng(0).bytes(500))
    files["GARBLED_CSV"].write_bytes(b"\xff\xfe\x00\x81" * 100 + b"\n" + b'"a,"b\n1,2,3,4\n')
    argv = [str(files.get(a, a)) for a in argv]
    if argv and argv[0] == "create":
        argv += ["--db", str(tmp_path / "new.db")]
    elif argv and argv[0] in ("propose", "ingest"):
        argv += ["--db", db]
    capsys.readouterr()
    assert main(["campaign", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert names in err
    assert "Traceback" not in err
    assert not (tmp_path / "new.db").exists()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_cli_subprocess_error_is_one_line(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bayeseval",
            "campaign",
            "propose",
            "--db",
            str(tmp_path / "c.db"),
            "--batch-size",
            "-3",
            "--out",
            str(tmp_path / "b.csv"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--batch-size" in r.stderr and "-3" in r.stderr


def test_sqlite_file_that_is_not_a_database_is_one_line(files, capsys):
    _, tmp = files
    code = main_audit_report(["campaign", "status", "--db", str(tmp / "notadb.db")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "error:" in err and "Traceback" not in err


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_the_sync_command_names_a_missing_token_and_a_bad_url(tmp_path, monkeypatch, capsys):
    from bayeseval.cli.campaign import main

    c, _ = _campaign(tmp_path)
    db = str(c._store.path)
    c.close()
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    assert main(["campaign", "sync", "--db", db, "--url", "http://127.0.0.1:9", "--project", "1"]) == 2
    assert "--token: no Label Studio API token" in capsys.readouterr().err
    assert main(["campaign", "sync", "--db", db, "--url", "localhost:9", "--project", "1", "--token", "t"]) == 2
    assert "--url: url must start with http://" in capsys.readouterr().err
    assert main(["campaign", "serve", "--db", db, "--url", "http://x", "--project", "0"]) == 2
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


def test_the_campaign_command_is_registered_when_it_is_called(capsys):
    assert cli.main(["campaign", "--help"]) == 0
    assert "propose" in capsys.readouterr().out
    assert cli.main(["campaign", "no-such-step"]) == 2
    assert "no-such-step" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_cli_create_anytime(tmp_path, pool_campaign_spec):
    path = tmp_path / "pool.csv"
    pool_campaign_spec.to_csv(path, index_label="id")
    args = ["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "stratum", "--y-pred", "pred"]
    assert main([*args, "--db", str(tmp_path / "a.db"), "--anytime"]) == 0
    assert main([*args, "--db", str(tmp_path / "s.db")]) == 0
    with Campaign.open(tmp_path / "a.db") as a, Campaign.open(tmp_path / "s.db") as s:
        assert (a.spec.anytime, s.spec.anytime) == (True, False)
        assert (a.status()["read"] == "anytime").all() and (s.status()["read"] == "guaranteed").all()


def _seed_file(pool, n=120, seed=4):
    ids = np.random.default_rng(seed).choice(pool.index.to_numpy(), n, replace=False)
    return pd.DataFrame({"id": ids, "label": pool.loc[ids, "truth"].to_numpy()})


def _errors_by_region(pool, ids):
    sub = pool.loc[ids]
    return (sub["truth"] != sub["pred"]).groupby(sub["region"]).agg(["sum", "size"])


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("kind", ["csv", "parquet", "labelstudio", "jsonl"])
def test_create_with_labels_starts_from_them_in_every_format_ingest_reads(tmp_path, pool_csv, capsys, kind):
    path, pool = pool_csv
    seed = _seed_file(pool)
    if kind == "csv":
        labels = tmp_path / "labels.csv"
        seed.rename(columns={"label": "answer"}).to_csv(labels, index=False)
        extra = ["--y-true", "answer"]
    elif kind == "parquet":
        labels = tmp_path / "labels.parquet"
        seed.to_parquet(labels, index=False)
        extra = []
    elif kind == "labelstudio":
        labels = tmp_path / "export.json"
        tasks = [
            {
                "id": i + 1,
                "data": {"bayeseval_row_id": r},
                "meta": {"bayeseval_row_id": r},
                "annotations": [
                    {
                        "completed_by": 1,
                        "result": [
                            {"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": [str(v)]}}
                        ],
                    }
                ],
            }
            for i, (r, v) in enumerate(zip(seed["id"], seed["label"], strict=True))
        ]
        labels.write_text(json.dumps(tasks))
        extra = []
    else:
        labels = tmp_path / "labels.jsonl"
        labels.write_text(
            "".join(
                json.dumps({"id": r, "label": int(v)}) + "\n" for r, v in zip(seed["id"], seed["label"], strict=True)
            )
        )
        extra = []
    db = tmp_path / "c.db"
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                str(db),
                "--seed",
                "1",
                "--labels",
                str(labels),
                *extra,
            ]
        )
        == 0
    )
    assert "120 labels you already had" in capsys.readouterr().out
    assert main(["campaign", "status", "--db", str(db), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    by_hand = _errors_by_region(pool, seed["id"])
    got = {r["stratum"]: (r["successes"], r["trials"]) for r in payload["strata"]}
    assert got == {g: (int(row["sum"]), int(row["size"])) for g, row in by_hand.iterrows()}
    out = tmp_path / "batch.csv"
    assert main(["campaign", "propose", "--db", str(db), "--batch-size", "40", "--out", str(out)]) == 0
    assert not set(pd.read_csv(out)["id"]) & set(seed["id"])


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_with_bad_labels_exits_2_with_one_line_naming_labels(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    seed = _seed_file(pool, n=10)
    base = [
        "campaign",
        "create",
        "--pool",
        str(path),
        "--id-column",
        "id",
        "--strata",
        "region",
        "--y-pred",
        "pred",
        "--seed",
        "1",
    ]
    cases = {
        "unknown": (pd.concat([seed, pd.DataFrame({"id": ["nope"], "label": [1]})]), [], "ids not in the pool: 'nope'"),
        "twice": (pd.concat([seed, seed.iloc[:1]]), [], "ids given twice"),
        "blank": (seed.assign(label=[None] + [1] * 9), [], "blank labels for ids"),
        "column": (seed, ["--y-true", "answer"], "--y-true 'answer' is not in"),
        "unequal": (
            seed.assign(p=np.linspace(0.1, 0.5, 10)),
            ["--inclusion", "p", "--guarantee", "average"],
            "probabilities differ within",
        ),
    }
    for name, (frame, extra, words) in cases.items():
        labels = tmp_path / f"{name}.csv"
        frame.to_csv(labels, index=False)
        db = tmp_path / f"{name}.db"
        assert main(base + ["--db", str(db), "--labels", str(labels), *extra]) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and words in err and ("--labels" in err or "--y-true" in err), (name, err)
        assert not db.exists()
    assert main(base + ["--db", str(tmp_path / "x.db"), "--inclusion", "p"]) == 2
    assert "give --labels too" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_create_with_unequal_inclusion_reads_the_labels_as_a_seed_cell(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    seed = _seed_file(pool, n=40)
    labels = tmp_path / "paid.csv"
    seed.assign(p=np.linspace(0.1, 0.5, 40)).to_csv(labels, index=False)
    db = tmp_path / "c.db"
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
                "region",
                "--y-pred",
                "pred",
                "--seed",
                "1",
                "--db",
                str(db),
                "--labels",
                str(labels),
                "--inclusion",
                "p",
            ]
        )
        == 0
    )
    with Campaign.open(db) as c:
        status = c.status()
    assert set(status["read"]) == {"seeded"} and int(status["labelled"].sum()) == 40
    capsys.readouterr()
    assert main(["campaign", "status", "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["strata"]
    assert {r["read"] for r in rows} == {"seeded"}
    # no random draw yet: the rest of each stratum is unknown, so there is no estimate (null), only an interval
    assert status["mean"].isna().all() and all(r["mean"] is None and r["upper"] > 0.5 for r in rows)


@pytest.mark.parametrize(
    ("values", "shown"), [({1: "yes", 0: "no"}, "'no', 'yes'"), ({1: "right", 0: "wrong"}, "'right', 'wrong'")]
)
def test_cli_create_refuses_a_text_proxy_in_one_line(tmp_path, capsys, values, shown):
    pool, _ = _pool_campaign_proxy(n=300)
    pool["judge"] = pool["judge"].map(values)
    path = tmp_path / "pool.csv"
    pool.rename_axis("id").reset_index().to_csv(path, index=False)
    code = main(
        [
            "campaign",
            "create",
            "--pool",
            str(path),
            "--id-column",
            "id",
            "--strata",
            "g",
            "--y-pred",
            "pred",
            "--proxy",
            "judge",
            "--db",
            str(tmp_path / "c.db"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "c.db").exists()
    assert "error: proxy column 'judge' holds values" in err and shown in err
    assert len(err.splitlines()) == 1


# -- nothing to propose, blank labels, import files --------------------------------------------
def _small_campaign(tmp_path, n=12, **flags):
    """A 12-row pool (two strata) and its campaign database."""
    pool = pd.DataFrame(
        {
            "id": range(n),
            "g": ["a", "b"] * (n // 2),
            "pred": [0, 1, 1, 0] * (n // 4),
            "truth": [0, 1, 0, 0, 1, 1] * (n // 6),
        }
    )
    pool.to_csv(tmp_path / "pool.csv", index=False)
    db = str(tmp_path / "c.db")
    flags.setdefault("target_halfwidth", 0.45)  # reachable with 6 rows a stratum: no precision warning
    extra = [x for k, v in flags.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    assert (
        main(
            [
                "campaign",
                "create",
                "--pool",
                str(tmp_path / "pool.csv"),
                "--id-column",
                "id",
                "--strata",
                "g",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
                *extra,
            ]
        )
        == 0
    )
    return db, pool.set_index("id")


def _label_all(db, pool, path):
    batch = pd.read_csv(path)
    batch["label"] = pool.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(path, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(path)]) == 0


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")  # a target the pool cannot reach
@pytest.mark.parametrize(
    "flags, first, reason",
    [
        # 6 rows a stratum cannot give a half-width of 0.05: every row gets labelled
        ({"target_halfwidth": 0.05}, 12, "stopped: 2 of 2 strata not met, pool exhausted (a, b)"),
        ({"budget": 5, "target_halfwidth": 0.05}, 5, "the budget of 5 labels is spent"),
        ({"target_halfwidth": 0.45}, 4, "goal met: 2 met"),
    ],
)
def test_propose_with_nothing_to_propose_writes_no_file_and_exits_3(tmp_path, capsys, flags, first, reason):
    db, pool = _small_campaign(tmp_path, **flags)
    out = tmp_path / "b1.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", str(first), "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) <= first
    _label_all(db, pool, out)
    while True:  # propose until nothing comes, as a script would
        out = tmp_path / "next.csv"
        code = main(["campaign", "propose", "--db", db, "--batch-size", "12", "--out", str(out), "--force"])
        if code != 0:
            break
        _label_all(db, pool, out)
    text = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 3 and not out.exists() and not _hidden_files(tmp_path)
    with Campaign.open(db) as c:
        st = c.status()
        assert c.done and c.pending.empty
        if "budget" in flags:
            assert c.labels_used == 5
        elif "pool" in reason:
            assert c.labels_used == 12 and not st["done"].all()
        else:
            assert st["done"].all()
    want = reason
    assert text == f"nothing to propose: {want}; no file written (exit code 3)"
    # an existing file is left exactly as it was, and --json says so too
    out.write_text("keep me")
    assert main(["campaign", "propose", "--db", db, "--out", str(out), "--force", "--json"]) == 3
    got = json.loads(capsys.readouterr().out)
    assert got["proposed"] == 0 and got["out"] is None and got["nothing_to_propose"] == want
    assert out.read_text() == "keep me"
    # the Python API is unchanged: an empty frame
    with Campaign.open(db) as c:
        assert c.propose(5).empty


def test_exit_code_3_is_documented_in_help(capsys):
    main_audit_report(["--help"])
    top = " ".join(capsys.readouterr().out.split())
    assert "3 nothing to propose" in top
    assert main(["campaign", "propose", "--help"]) == 0
    assert "exit code is 3" in " ".join(capsys.readouterr().out.split())


def _blank_cases(tmp_path, rows, labels):
    """The same labels as a CSV batch, JSON Lines, a Label Studio JSON export and a CSV export."""
    from bayeseval.campaign.labels.annotations import ROW_ID_KEY

    files = {}
    pd.DataFrame({"id": rows, "label": labels}).to_csv(tmp_path / "b.csv", index=False)
    files["csv"] = tmp_path / "b.csv"
    (tmp_path / "b.jsonl").write_text(
        "".join(json.dumps({"id": r, "label": v}) + "\n" for r, v in zip(rows, labels, strict=True))
    )
    files["jsonl"] = tmp_path / "b.jsonl"

    def result(v):
        return (
            []
            if v is None or not str(v).strip()
            else [{"from_name": "label", "to_name": "t", "type": "choices", "value": {"choices": [str(v)]}}]
        )

    tasks = [
        {
            "id": 100 + i,
            "data": {ROW_ID_KEY: r},
            "meta": {ROW_ID_KEY: r},
            "annotations": [] if v is None else [{"id": 500 + i, "completed_by": 1, "result": result(v)}],
        }
        for i, (r, v) in enumerate(zip(rows, labels, strict=True))
    ]
    (tmp_path / "export.json").write_text(json.dumps(tasks))
    files["labelstudio"] = tmp_path / "export.json"
    pd.DataFrame({ROW_ID_KEY: rows, "label": labels, "annotator": [1] * len(rows)}).to_csv(
        tmp_path / "export.csv", index=False
    )
    files["labelstudio-csv"] = tmp_path / "export.csv"
    return files


@pytest.mark.filterwarnings("always::bayeseval.BlankLabelWarning")  # printed as one line by the command
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "labelstudio", "labelstudio-csv"])
def test_a_batch_with_blank_labels_records_the_others_in_every_format(tmp_path, capsys, fmt):
    db, pool = _small_campaign(tmp_path, n=48, target_halfwidth=0.05)
    # 19 of 20 labelled (the example), then in the next batch 3 blanks of three kinds: missing, empty, spaces
    for k, blanks in enumerate(({7: None}, {2: None, 9: "", 15: "   "})):
        batch = tmp_path / f"p{k}.csv"
        assert main(["campaign", "propose", "--db", db, "--batch-size", "20", "--out", str(batch)]) == 0
        rows = pd.read_csv(batch)["id"].tolist()
        truth = pool.loc[rows, "truth"].tolist()
        capsys.readouterr()
        labels = [blanks.get(i, int(t)) for i, t in enumerate(truth)]
        files = _blank_cases(tmp_path, rows, labels)
        code = main(["campaign", "ingest", "--db", db, "--labels", str(files[fmt]), "--json"])
        cap = capsys.readouterr()
        assert code == 0 and f"warning: {len(blanks)} row(s) of the batch have no label" in cap.err
        got = json.loads(cap.out)
        with Campaign.open(db) as c:
            recorded = c.labels()["label"].astype(int).to_dict()
            pending = set(c.pending.index)
        blank_rows = {rows[i] for i in blanks}
        assert got["blank"] == len(blanks) and blank_rows <= pending
        assert {rows[i]: int(truth[i]) for i in range(20) if rows[i] not in blank_rows}.items() <= recorded.items()
        assert not blank_rows & set(recorded)
    # --strict refuses the whole batch, naming the blank rows
    before = Campaign.open(db)
    used = before.labels_used
    before.close()
    code = main(["campaign", "ingest", "--db", db, "--labels", str(files[fmt]), "--strict"])
    err = capsys.readouterr().err
    assert code == 2 and "missing labels" in err and all(repr(rows[i]) in err for i in blanks)
    with Campaign.open(db) as c:
        assert c.labels_used == used


@pytest.mark.filterwarnings("always::bayeseval.BlankLabelWarning")
def test_the_text_summary_says_how_many_rows_were_left(tmp_path, capsys):
    db, pool = _small_campaign(tmp_path)
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "6", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = [int(pool.loc[r, "truth"]) for r in batch["id"]]
    batch.loc[[1, 4], "label"] = None
    batch.to_csv(out, index=False)
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    cap = capsys.readouterr()
    assert "ingested 4 new labels" in cap.out and "2 rows without a label left as they were (pending)" in cap.out
    assert cap.err.count("\n") == 1 and cap.err.startswith("warning: 2 row(s) of the batch have no label")
    # sent again: the 4 are already there, the 2 blank rows are still left pending
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    assert "ingested 0 new labels (4 already present" in capsys.readouterr().out
    # from Python, the same batch gives a BlankLabelWarning
    with Campaign.open(db) as c, pytest.warns(bayeseval.BlankLabelWarning, match="^2 row"):
        r = c.ingest(pd.read_csv(out), id_column="id", label_column="label")
    assert (int(r), r.unchanged, r.blank) == (0, 4, 2)


@pytest.mark.parametrize("kind", ["import", "import-csv", "jsonl-no-label", "csv-no-label"])
def test_a_file_without_labels_at_all_is_refused_as_such(tmp_path, capsys, kind):
    db, _ = _small_campaign(tmp_path)
    fmt = {"import": "labelstudio", "import-csv": "csv", "jsonl-no-label": "jsonl", "csv-no-label": "csv"}[kind]
    out = tmp_path / ("tasks.json" if fmt == "labelstudio" else "tasks.jsonl" if fmt == "jsonl" else "tasks.csv")
    assert main(["campaign", "propose", "--db", db, "--batch-size", "4", "--out", str(out), "--format", fmt]) == 0
    if kind == "import-csv":  # the import tasks as a CSV (Label Studio imports CSV too): no choice column
        from bayeseval.campaign.labels.annotations import ROW_ID_KEY

        tasks = pd.read_csv(out).rename(columns={"id": ROW_ID_KEY}).drop(columns="label")
        tasks.to_csv(out, index=False)
    elif kind == "jsonl-no-label":
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        out.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "label"}) + "\n" for x in lines))
    elif kind == "csv-no-label":
        pd.read_csv(out).drop(columns="label").to_csv(out, index=False)
    capsys.readouterr()
    code = main(["campaign", "ingest", "--db", db, "--labels", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    want = {
        "import": "looks like a Label Studio import file",
        "import-csv": "import rather than an export",
        "jsonl-no-label": "has no 'label' field",
        "csv-no-label": "--y-true 'label' is not in",
    }[kind]
    assert want in err
    with Campaign.open(db) as c:
        assert c.labels_used == 0 and len(c.pending) == 4


def test_a_gap_campaign_forecast_before_labels_says_it_cannot_be_made(tmp_path, pool_csv, capsys):
    path, _ = pool_csv
    db = str(tmp_path / "gap.db")
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
                "region",
                "--y-pred",
                "pred",
                "--db",
                db,
                "--seed",
                "1",
                "--goal",
                "gap",
                "--tolerance",
                "0.05",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["campaign", "forecast", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "-9223372036854775808" not in out
    assert "labels still needed: cannot forecast yet: the gap needs labelled trials in at least two strata" in out
    assert main(["campaign", "forecast", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["labels"] is None and payload["cost"] is None and payload["note"].startswith("cannot forecast yet")
    assert [s["labels"] for s in payload["strata"]] == [None, None, None]
    assert main(["campaign", "status", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "-9223372036854775808" not in out and "still needed: cannot forecast yet: " in out
    assert "max-min gap: not estimable yet" in out
    assert main(["campaign", "status", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)  # valid JSON: no NaN
    assert payload["forecast"] is None and payload["forecast_cost"] is None
    assert payload["forecast_note"].startswith("cannot forecast yet: ") and payload["gap"]["gap"] is None


def test_cli_ingest_of_the_last_rows_says_stopped_when_a_stratum_stays_undecided(tmp_path, capsys):
    pool = exact_pool([0.0, 0.095], [300, 600], random_seed=3)  # s1 sits just below the 0.10 threshold
    pool["id"] = [f"r{i}" for i in range(len(pool))]
    path = tmp_path / "pool.csv"
    pool.to_csv(path, index=False)
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
                "pred",
                "--db",
                db,
                "--seed",
                "1",
                "--goal",
                "decide",
                "--threshold",
                "0.1",
            ]
        )
        == 0
    )
    truth = pool.set_index("id")["truth"]
    out = tmp_path / "b.csv"  # one batch of every row
    assert main(["campaign", "propose", "--db", db, "--batch-size", "900", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    assert len(batch) == 900
    batch["label"] = truth.loc[batch["id"]].to_numpy()
    batch.to_csv(out, index=False)
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    text = capsys.readouterr().out
    assert "goal met" not in text and "stopped: 1 of 2 strata undecided, pool exhausted (s1)" in text
