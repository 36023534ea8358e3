"""Tests of ``bayeseval.campaign.store.store``."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.campaign.store import store as store_module
from tests.campaign.helpers import new_campaign
from tests.helpers import ROOT, make_pool_hardening_campaign

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def test_failure_between_build_and_publish_leaves_no_file(tmp_path, monkeypatch):
    def boom(tmp, path):
        assert tmp.exists() and not path.exists()  # the database is complete, not yet published
        raise OSError("injected failure")

    monkeypatch.setattr(store_module, "publish", boom)  # the store module publishes the built file
    with pytest.raises(OSError, match="injected"):
        new_campaign(tmp_path)
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    c, _ = new_campaign(tmp_path)  # and the same create then works
    assert c.labels_used == 0
    c.close()


def test_interrupt_during_pool_insert_leaves_no_file(tmp_path):
    pool = make_pool_hardening_campaign()

    class Interrupt(BaseException):
        pass

    def rows():
        yield (1, 0, 0, None, 1, 0)
        raise Interrupt

    with pytest.raises(Interrupt):
        store_module.CampaignStore.initialise(
            tmp_path / "c.db", meta={"config": "{}"}, rid_type="INTEGER", strata_keys=[["a"]], pool_rows=rows()
        )
    assert os.listdir(tmp_path) == []
    new_campaign(tmp_path, pool=pool)[0].close()


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


def test_the_store_is_the_only_campaign_module_that_runs_sql():
    """Outside ``campaign/store/`` no campaign module calls ``execute`` on a connection, imports
    ``sqlite3`` or holds an SQL statement in a string."""
    import ast
    from pathlib import Path

    import bayeseval.campaign

    root = Path(bayeseval.campaign.__file__).parent
    statement = re.compile(r"^\s*(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b")
    calls = []
    for path in sorted(root.rglob("*.py")):
        if path.parent.name == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "executemany", "executescript")
                )
                or (isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names))
                or (isinstance(node, ast.ImportFrom) and node.module == "sqlite3")
                or (isinstance(node, ast.Constant) and isinstance(node.value, str) and statement.match(node.value))
            ):
                calls.append(f"{path.relative_to(root)}:{node.lineno}")
    assert calls == []
    # the scan sees an SQL statement (upper-case keywords, as the store writes them), not prose
    assert statement.match("SELECT rid FROM labels") and not statement.match("Select the rows from the pool")
    # the scan sees a call where there is one
    assert any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "execute"
        for n in ast.walk(ast.parse((root / "store" / "store.py").read_text()))
    )
