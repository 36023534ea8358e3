"""Tests of ``bayeseval.campaign.store.create``: the pool checked against the spec before the file is written."""

from __future__ import annotations

import json
import os
import sqlite3
import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval._api.warnings import PrecisionLimitedWarning
from bayeseval.campaign import Annotation, Budget, Campaign, Each
from tests.helpers import content_pool, make_pool_hardening_campaign


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
        Campaign.create(
            tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", annotation=Annotation(content=content)
        )
    assert not (tmp_path / "c.db").exists()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_rule_callable_is_refused_because_it_cannot_be_reopened(tmp_path):
    with pytest.raises(TypeError, match="rule must be a rule name"):
        Campaign.create(
            tmp_path / "c.db", make_pool_hardening_campaign(), strata="g", y_pred="pred", rule=lambda s, n, r: None
        )
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


def test_store_stratum_keys_round_trip(tmp_path):
    from bayeseval.campaign.campaign import Campaign

    pool = pd.DataFrame(
        {"g": ["a b", "é", "x", "x", "a b", 'q"uote'], "h": [1, 2, 3, 3, 1, 2], "pred": [0, 1, 0, 1, 1, 0]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)  # a tiny pool
        camp = Campaign.create(
            tmp_path / "c.db",
            pool,
            strata=["g", "h"],
            y_pred="pred",
            goal=Each(0.3),
            random_seed=0,
            budget=Budget(batch_size=2),
        )
    camp.close()
    with sqlite3.connect(tmp_path / "c.db") as conn:
        stored = [json.loads(k) for (k,) in conn.execute("SELECT key FROM strata ORDER BY code")]
    assert sorted(map(tuple, stored)) == sorted({(g, h) for g, h in zip(pool["g"], pool["h"], strict=True)})
    camp = Campaign.open(tmp_path / "c.db")
    assert camp._store.strata()["key"].tolist() == stored
    camp.close()


@pytest.mark.parametrize(
    "key",
    [["a"], ["a", "b"], [1, "x"], ['\u00e9\u4e2d"\\\n\t\x00'], ["\U0001f642"], [True], [1.5], [None], [2**70], [-3, 0]],
)
def test_stratum_keys_are_written_as_the_json_encoder_writes_them(key):
    from bayeseval.campaign.store.schema import key_json

    assert key_json(key) == json.dumps(key)
    assert json.loads(key_json(key)) == key


@pytest.mark.parametrize(
    "keys",
    [
        [("a",), ('é"\\',), ("\U0001f642",)],
        [(3,), (-1,), (2**70,)],
        [("a", 1), (True,), (1.5,), (None,), ("x",), (7,)],
    ],
)
def test_stratum_keys_in_bulk_are_written_as_the_json_encoder_writes_them(keys):
    from bayeseval.campaign.store.schema import keys_json

    assert keys_json(keys) == [json.dumps(list(k)) for k in keys]


@pytest.mark.parametrize("n", [0, 1, 165, 166, 167, 499, 1000])
@pytest.mark.parametrize("given", ["columns", "tuples"])
def test_rows_inserted_many_per_statement_are_the_rows_inserted_one_by_one(n, given):
    """Whatever the number of rows (statements of 166 rows of 6 values, and a last shorter one)."""
    from bayeseval.campaign.store.schema import RowColumns, insert_rows

    rng = np.random.default_rng(n)
    columns = (
        [f"r{i}" for i in range(n)],
        rng.integers(0, 5, n).tolist(),
        [[0, "x", 1.5, True][i % 4] for i in range(n)],
        None,
        rng.integers(0, 2, n).tolist(),
        rng.permutation(n).tolist(),
    )
    table = "CREATE TABLE pool (rid TEXT PRIMARY KEY, stratum INTEGER NOT NULL, prediction, score REAL, eligible, ord)"
    reference, conn = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for c in (reference, conn):
        c.execute(table)
    rows = list(zip(*[[None] * n if c is None else c for c in columns], strict=True))
    reference.executemany("INSERT INTO pool VALUES (?, ?, ?, ?, ?, ?)", rows)
    insert_rows(conn, "pool", RowColumns(columns) if given == "columns" else iter(rows))
    read = "SELECT rowid, *, typeof(prediction), typeof(score) FROM pool ORDER BY rowid"
    assert conn.execute(read).fetchall() == reference.execute(read).fetchall()
    assert len(reference.execute(read).fetchall()) == n


def test_rows_of_the_wrong_width_are_refused():
    from bayeseval.campaign.store.schema import insert_rows

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a, b)")
    with pytest.raises(sqlite3.ProgrammingError, match="a row of 3 values among rows of 2"):
        insert_rows(conn, "t", [(1, 2), (3, 4, 5)])


def test_the_pool_table_holds_each_row_its_stratum_and_place_in_the_proposal_order(tmp_path):
    """Against a reference computed apart: codes of the sorted keys, the scores, and each stratum's
    ``ord`` the place of its row in that stratum's random permutation (``proposal_order``)."""
    from bayeseval.campaign.loop.pool import seed_sequences

    rng = np.random.default_rng(5)
    n = 3000
    pool = pd.DataFrame(
        {"g": rng.choice(["b", "a", "c"], n), "pred": rng.integers(0, 2, n), "sc": rng.random(n)},
        index=pd.Index(rng.permutation(10 * n)[:n], name="item"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionLimitedWarning)
        c = Campaign.create(
            tmp_path / "c.db", pool, strata="g", y_pred="pred", score="sc", metric="precision", random_seed=9
        )
    c.close()
    with sqlite3.connect(tmp_path / "c.db") as conn:
        stored = pd.read_sql("SELECT rid, stratum, prediction, score, eligible, ord FROM pool ORDER BY rowid", conn)
        keys = [json.loads(k)[0] for (k,) in conn.execute("SELECT key FROM strata ORDER BY code")]
    assert keys == ["a", "b", "c"]
    assert sorted(stored["rid"]) == sorted(pool.index)
    stored = stored.set_index("rid").loc[pool.index]  # an integer id is the table's rowid: read in id order
    assert (stored["stratum"].to_numpy() == pd.Index(keys).get_indexer(pool["g"])).all()
    np.testing.assert_array_equal(stored["score"].to_numpy(), pool["sc"].to_numpy())
    assert (stored["eligible"].to_numpy() == pool["pred"].to_numpy()).all()  # precision: the predicted positives
    seed = seed_sequences(9, 1)[0]
    rng = np.random.default_rng(seed)
    for code, key in enumerate(keys):
        rows = np.flatnonzero((pool["g"].to_numpy() == key) & (pool["pred"].to_numpy() == 1))
        expected = np.zeros(len(rows), np.int64)
        expected[rng.permutation(len(rows))] = np.arange(len(rows))
        assert (stored["ord"].to_numpy()[rows] == expected).all(), code
    assert (stored["ord"].to_numpy()[pool["pred"].to_numpy() == 0] == 0).all()
