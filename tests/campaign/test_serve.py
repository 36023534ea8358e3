"""The webhook server: answers, secrets, malformed payloads, status (no Label Studio needed)."""

from __future__ import annotations

import json
import urllib.error

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.campaign.serve import SECRET_HEADER, CampaignServer

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


class CountingSync:
    """A sync that proposes two rows per call, so each sync is visible in the store."""

    def __init__(self):
        self.calls = 0

    def __call__(self, campaign):
        self.calls += 1
        campaign.propose(2)

        class Report:
            def to_dict(self_inner):
                return {"call": self.calls}

        return Report()


@pytest.fixture
def served(tmp_path):
    pool = pd.DataFrame({"g": np.repeat(["a", "b"], 50), "pred": [0, 1] * 50})
    db = tmp_path / "c.db"
    Campaign.create(db, pool, strata="g", y_pred="pred", random_seed=0).close()
    sync = CountingSync()
    server = CampaignServer(db, sync, port=0, secret="s3cret", initial_sync=False)
    server.start()
    try:
        yield server, sync, db, f"http://127.0.0.1:{server.port}"
    finally:
        server.shutdown()


def _post(url, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json",
                                                                         **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, json.loads(resp.read())


def _dump(db):
    with Campaign.open(db) as c:
        return c._store.dump()


def test_a_webhook_queues_one_sync(served):
    server, sync, db, url = served
    code, body = _post(url + "/", {"action": "ANNOTATION_CREATED", "annotation": {"id": 1}},
                       {SECRET_HEADER: "s3cret"})
    assert (code, body) == (202, {"queued": "ANNOTATION_CREATED"})
    assert server.wait_idle(30)
    assert sync.calls == 1
    with Campaign.open(db) as c:
        assert len(c.pending) == 2


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"no": "action"}', b'{"action": 3}'])
def test_malformed_webhooks_are_400_and_change_nothing(served, body):
    server, sync, db, url = served
    before = _dump(db)
    code, answer = _post(url, body, {SECRET_HEADER: "s3cret"})
    assert code == 400 and "error" in answer
    assert server.wait_idle(10) and sync.calls == 0 and _dump(db) == before


def test_a_missing_or_wrong_secret_is_401(served):
    server, sync, db, url = served
    for headers in ({}, {SECRET_HEADER: "guess"}):
        code, _ = _post(url, {"action": "ANNOTATION_CREATED"}, headers)
        assert code == 401
    assert server.wait_idle(10) and sync.calls == 0


def test_other_actions_are_acknowledged_and_ignored(served):
    server, sync, db, url = served
    code, body = _post(url, {"action": "PROJECT_UPDATED"}, {SECRET_HEADER: "s3cret"})
    assert (code, body) == (200, {"ignored": "PROJECT_UPDATED"}) and sync.calls == 0


def test_status_and_health(served):
    server, sync, db, url = served
    assert _get(url + "/health") == (200, {"status": "ok"})
    _post(url, {"action": "ANNOTATION_UPDATED"}, {SECRET_HEADER: "s3cret"})
    assert server.wait_idle(30)
    code, st = _get(url + "/status")
    with Campaign.open(db) as c:
        want = c.status()
        forecast = c.forecast()
    assert code == 200 and st["done"] is False and st["labels_used"] == 0 and st["syncs"] == 1
    assert st["pending"] == 2 == int(want["pending"].sum())
    assert [s["stratum"] for s in st["strata"]] == ["a", "b"]
    # no label yet: no stratum's forecast can be made, and the payload says so (never a NaN cast to int)
    assert forecast.isna().all()
    assert [s["forecast"] for s in st["strata"]] == [None, None]
    assert st["forecast"] is None and st["forecast_note"] == "cannot forecast yet: no labelled trials yet in a, b"
    assert st["goal_met"] is False and st["outcome"].startswith("running: ")
    assert st["last_sync"] == {"call": 1}


def test_the_server_binds_to_this_machine_by_default(tmp_path):
    pool = pd.DataFrame({"g": ["a", "b"] * 5, "pred": [0, 1] * 5})
    db = tmp_path / "c.db"
    Campaign.create(db, pool, strata="g", y_pred="pred", random_seed=0).close()
    server = CampaignServer(db, CountingSync(), initial_sync=False)
    try:
        assert server.httpd.server_address[0] == "127.0.0.1"
    finally:
        server.httpd.server_close()
