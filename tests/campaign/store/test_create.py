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
