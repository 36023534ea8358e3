"""Tests of ``bayeseval.campaign.store.schema``: older campaign files are upgraded on open, newer ones refused."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from bayeseval.campaign import Campaign


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
