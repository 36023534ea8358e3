"""The webhook server: answers, secrets, malformed payloads, status (no Label Studio needed)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.campaign.labels.serve import (
    BACKLOG,
    MAX_BODY,
    SECRET_HEADER,
    CampaignServer,
    StatusSnapshot,
    status_payload,
)
from tests.campaign.helpers import Team, _check_against_truth, _truth_campaign
from tests.helpers import ROOT

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
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


SECRET = {SECRET_HEADER: "s3cret"}


def _dump(db):
    with Campaign.open(db) as c:
        return c._store.dump()


def test_a_webhook_queues_one_sync(served):
    server, sync, db, url = served
    code, body = _post(url + "/", {"action": "ANNOTATION_CREATED", "annotation": {"id": 1}}, {SECRET_HEADER: "s3cret"})
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
    code, st = _get(url + "/status", SECRET)
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


def _campaign(tmp_path, n=50):
    pool = pd.DataFrame({"g": np.repeat(["north", "south"], n), "pred": [0, 1] * n})
    db = tmp_path / "c.db"
    Campaign.create(db, pool, strata="g", y_pred="pred", random_seed=0).close()
    return db


def _raw(port, data, *, timeout=10.0):
    """Send ``data`` on a fresh connection, half-close, and read the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


# -- the secret guards every endpoint but /health ---------------------------------------------
@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/status"),
        ("GET", "/status/"),
        ("GET", "/status?x=1"),
        ("GET", "/"),
        ("GET", "/no-such-path"),
        ("POST", "/"),
        ("POST", "/status"),
    ],
)
def test_every_endpoint_but_health_needs_the_secret(served, method, path):
    server, sync, db, url = served
    body = b'{"action": "ANNOTATION_CREATED"}' if method == "POST" else None
    for headers in ({}, {SECRET_HEADER: "guess"}, {SECRET_HEADER: "s3cret "}, {SECRET_HEADER: ""}):
        req = urllib.request.Request(url + path, data=body, method=method, headers=headers)
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=10)
        answer = info.value.read()
        assert info.value.code == 401, (path, headers)
        # nothing about the campaign leaks: no stratum, count or error
        assert b"north" not in answer and b"strata" not in answer and b"labels_used" not in answer
    assert _get(url + "/health") == (200, {"status": "ok"})
    assert server.wait_idle(10) and sync.calls == 0


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_other_methods_need_the_secret_too(served, method):
    server, sync, db, url = served
    for headers, want in (({}, 401), ({SECRET_HEADER: "nope"}, 401), (SECRET, 405)):
        req = urllib.request.Request(
            url + "/status", data=b"{}" if method != "HEAD" else None, method=method, headers=headers
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=10)
        answer = info.value.read()
        assert info.value.code == want and b"north" not in answer and b"strata" not in answer
    assert sync.calls == 0


def test_with_the_secret_the_endpoints_answer(served):
    server, sync, db, url = served
    code, st = _get(url + "/status", SECRET)
    assert code == 200 and [s["stratum"] for s in st["strata"]] == ["a", "b"]
    assert _get(url + "/nope", SECRET)[0] == 404


def test_without_a_secret_status_is_open(tmp_path):
    server = CampaignServer(_campaign(tmp_path), CountingSync(), initial_sync=False)
    server.start()
    try:
        code, st = _get(f"http://127.0.0.1:{server.port}/status")
        assert code == 200 and [s["stratum"] for s in st["strata"]] == ["north", "south"]
    finally:
        server.shutdown()


def test_the_secret_is_compared_in_constant_time(served, monkeypatch):
    import hmac

    server, sync, db, url = served
    seen = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: seen.append((a, b)) or real(a, b))
    assert _get(url + "/status", {SECRET_HEADER: "nope"})[0] == 401
    assert _get(url + "/status", SECRET)[0] == 200
    assert seen == [(b"nope", b"s3cret"), (b"s3cret", b"s3cret")]


class GatedSync:
    """A sync that proposes two rows, then waits until the test lets it finish."""

    def __init__(self):
        self.started, self.release, self.calls = threading.Event(), threading.Event(), 0

    def __call__(self, campaign):
        self.calls += 1
        campaign.propose(2)
        self.started.set()
        assert self.release.wait(20)

        class Report:
            def to_dict(self_inner):
                return {"call": self.calls}

        return Report()


def test_status_reads_never_wait_for_a_sync(tmp_path):
    db = _campaign(tmp_path)
    sync = GatedSync()
    server = CampaignServer(db, sync, secret="k", initial_sync=False)
    server.start()
    url, key = f"http://127.0.0.1:{server.port}", {SECRET_HEADER: "k"}
    try:
        _post(url, {"action": "ANNOTATION_CREATED"}, key)
        assert sync.started.wait(20)
        # the sync holds its lock until released: a read that took the lock would time out here
        code, st = _get(url + "/status", key)
        assert code == 200 and st["syncs"] == 0 and st["pending"] == 0 and st["last_sync"] is None
        sync.release.set()
        assert server.wait_idle(20)
        code, st = _get(url + "/status", key)
        with Campaign.open(db) as c:  # the published snapshot is the campaign as the sync left it
            want = c.status()
        assert st["syncs"] == 1 and st["last_sync"] == {"call": 1} and st["last_error"] is None
        assert st["pending"] == int(want["pending"].sum()) == 2
        assert [s["pending"] for s in st["strata"]] == [int(v) for v in want["pending"]]
    finally:
        sync.release.set()
        server.shutdown()


def test_a_sync_finishes_while_clients_loop_on_status(tmp_path):
    db = _campaign(tmp_path)
    sync = CountingSync()
    server = CampaignServer(db, sync, secret="k", initial_sync=False)
    server.start()
    url, key = f"http://127.0.0.1:{server.port}", {SECRET_HEADER: "k"}
    stop, answers, failures = threading.Event(), [], []

    def reader():
        for _ in range(2000):  # bounded
            if stop.is_set():
                return
            try:
                answers.append(_get(url + "/status", key)[0])
            except OSError as exc:
                failures.append(exc)

    readers = [threading.Thread(target=reader, daemon=True) for _ in range(20)]
    try:
        for t in readers:
            t.start()
        for _ in range(3):
            assert _post(url, {"action": "ANNOTATION_UPDATED"}, key)[0] == 202
            assert server.wait_idle(30)  # a read that took the sync's lock would hold it here
        assert sync.calls >= 1 and server.syncs == sync.calls
    finally:
        stop.set()
        for t in readers:
            t.join(30)
        server.shutdown()
    assert not failures and answers and set(answers) == {200}
    with Campaign.open(db) as c:
        assert len(c.pending) == 2 * sync.calls


def test_status_snapshot_matches_a_fresh_read(tmp_path):
    db = _campaign(tmp_path)
    server = CampaignServer(db, CountingSync(), initial_sync=True)
    server.start()
    try:
        assert server.wait_idle(30)
        st = server.status()
        with Campaign.open(db) as c:
            fresh = status_payload(StatusSnapshot.read(c))
        assert {k: st[k] for k in fresh} == fresh
        assert st["syncs"] == 1 and st["queued"] == 0 and "as_of" in st
    finally:
        server.shutdown()


def test_status_payload_is_a_function_of_the_snapshot_alone():
    """No campaign behind it: a hand-made snapshot gives the payload, totals computed by hand."""
    status = pd.DataFrame({"labelled": [5, 2], "pending": [1, 3]}, index=pd.Index(["north", "south"], name="region"))
    forecast = pd.DataFrame(
        {"labels": pd.array([4, 6], dtype="Int64"), "cost": [4.0, 6.0], "note": [None, None]},
        index=status.index,
    )
    snap = StatusSnapshot(status, forecast, done=False, goal_met=False, outcome="running: x", labels_used=7)
    p = status_payload(snap)
    assert (p["done"], p["goal_met"], p["outcome"], p["labels_used"], p["pending"]) == (
        False,
        False,
        "running: x",
        7,
        4,
    )
    assert p["forecast"] == 10 and p["forecast_note"] is None
    assert p["strata"] == [
        {"stratum": "north", "labelled": 5, "pending": 1, "forecast": 4},
        {"stratum": "south", "labelled": 2, "pending": 3, "forecast": 6},
    ]
    unknown = forecast.assign(labels=pd.array([4, None], dtype="Int64"), note=[None, "no labelled trial yet"])
    p = status_payload(StatusSnapshot(status, unknown, False, False, "running: x", 7))
    assert p["forecast"] is None and p["strata"][1]["forecast"] is None and p["forecast_note"]


# -- a failed sync is on the console, not only in /status ----------------------------------------
def test_a_failed_sync_is_one_line_on_stderr(tmp_path, capfd):
    def broken(campaign):
        raise RuntimeError("Label Studio went\naway")

    server = CampaignServer(_campaign(tmp_path), broken, initial_sync=True)
    server.start()
    try:
        assert server.wait_idle(30)
        st = server.status()
    finally:
        server.shutdown()
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "sync 1 failed: RuntimeError: Label Studio went away" in err
    assert st["last_error"] == "RuntimeError: Label Studio went away" and st["syncs"] == 1


def test_a_failed_sync_goes_to_on_error(tmp_path):
    lines = []

    def broken(campaign):
        raise KeyError("task 7")

    server = CampaignServer(_campaign(tmp_path), broken, initial_sync=True, on_error=lines.append)
    server.start()
    try:
        assert server.wait_idle(30)
        server.request_sync()
        assert server.wait_idle(30)
    finally:
        server.shutdown()
    assert lines == ["sync 1 failed: KeyError: 'task 7'", "sync 2 failed: KeyError: 'task 7'"]


# -- any body that does not parse is 400 -------------------------------------------------------
DEEP = 200_000  # far past Python's recursion limit, far under MAX_BODY


@pytest.mark.parametrize(
    "body",
    [
        b"[" * DEEP + b"]" * DEEP,  # deep list
        b'{"action": "ANNOTATION_CREATED", "x": ' + b'{"a": ' * DEEP + b"1" + b"}" * DEEP + b"}",  # deep object
        b'{"action": "ANNOTATION_CREATED", "x": ' + b"[" * DEEP,  # deep and unfinished
        b'{"action": "ANNOTATION_\xff\xfeCREATED"}',  # not UTF-8
        b"\xef\xbb\xbf" + b'{"action": "ANNOTATION_CREATED"}'[:-1],  # BOM and truncated
        b'{"action": "ANNOTATION_CREATED", "n": ' + b"9" * 5000 + b"}",  # an integer Python refuses to read
        b'"ANNOTATION_CREATED"',
        b"null",
        b"12",
        b"[]",  # JSON, not an object
        b'{"action": ["ANNOTATION_CREATED"]}',
        b'{"action": ""}',
    ],
)
def test_any_body_that_does_not_parse_is_400(served, capfd, body):
    server, sync, db, url = served
    assert len(body) < MAX_BODY
    before = _dump(db)
    code, answer = _post(url, body, SECRET)
    assert code == 400 and isinstance(answer["error"], str) and "\n" not in answer["error"]
    assert server.wait_idle(10) and sync.calls == 0 and _dump(db) == before
    assert _get(url + "/health") == (200, {"status": "ok"})  # still serving
    assert "Traceback" not in capfd.readouterr().err


def test_a_deep_body_is_refused_by_the_parser_not_by_the_stack():
    from bayeseval.campaign.labels.serve import _check_webhook

    action, why = _check_webhook(b"[" * DEEP + b"]" * DEEP)
    assert action is None and "nested too deep" in why
    assert _check_webhook(b'{"action": "ANNOTATION_CREATED", "a": [[[1]]]}') == ("ANNOTATION_CREATED", None)


@pytest.mark.parametrize("length", ["", "abc", "-5", "0", str(MAX_BODY + 1), "1e3"])
def test_a_bad_content_length_is_400(served, length):
    server, sync, db, url = served
    head = f"POST / HTTP/1.1\r\nHost: x\r\n{SECRET_HEADER}: s3cret\r\n"
    head += f"Content-Length: {length}\r\n\r\n" if length else "\r\n"
    answer = _raw(server.port, head.encode() + b'{"action": "ANNOTATION_CREATED"}')
    assert answer.startswith(b"HTTP/1.0 400") and b"Content-Length" in answer
    assert server.wait_idle(10) and sync.calls == 0


def test_a_body_shorter_than_declared_is_400(served):
    server, sync, db, url = served
    body = b'{"action": "ANNOTATION_CREATED"}'
    head = f"POST / HTTP/1.1\r\nHost: x\r\n{SECRET_HEADER}: s3cret\r\nContent-Length: {len(body) + 10}\r\n\r\n"
    answer = _raw(server.port, head.encode() + body)  # then half-closes: no more bytes will come
    assert answer.startswith(b"HTTP/1.0 400") and b"ended after 32 of its 42 bytes" in answer
    assert server.wait_idle(10) and sync.calls == 0


# -- clients that stall, drip or leave ------------------------------------------------------------
@pytest.fixture
def quick(tmp_path):
    server = CampaignServer(_campaign(tmp_path), CountingSync(), secret="k", initial_sync=False, timeout=0.5)
    server.start()
    try:
        yield server
    finally:
        server.shutdown()


def _until_closed(sock, limit=8.0):
    """Seconds until the server closes ``sock`` (what it sent meanwhile is dropped); fails after ``limit``."""
    start = time.monotonic()
    sock.settimeout(limit)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - start


@pytest.mark.parametrize(
    "sent",
    [
        b'POST / HTTP/1.1\r\nHost: x\r\nX-Bayeseval-Secret: k\r\nContent-Length: 100\r\n\r\n{"action"',  # short body
        b"GET /status HTTP/1.1\r\nHost: x\r\n",  # headers never finished
        b"GET /sta",  # request line never finished
        b"",  # nothing at all
    ],
)
def test_a_stalled_client_is_disconnected_after_the_timeout(quick, sent, capfd):
    with socket.create_connection(("127.0.0.1", quick.port), timeout=10) as s:
        s.sendall(sent)
        waited = _until_closed(s)
    assert waited < 8.0  # disconnected by the server (0.5 s timeout), not by this test's limit
    assert quick.wait_idle(10) and quick.syncs == 0
    assert _get(f"http://127.0.0.1:{quick.port}/health") == (200, {"status": "ok"})
    assert "Traceback" not in capfd.readouterr().err


def test_a_dripping_client_is_disconnected_too(quick):
    """One byte every 0.1 s never trips a per-read timeout of 0.5 s; the request's deadline does."""
    request = b"GET /status HTTP/1.1\r\nHost: x\r\nX-Bayeseval-Secret: k\r\n" + b"X-Pad: " + b"p" * 500
    with socket.create_connection(("127.0.0.1", quick.port), timeout=10) as s:
        start, closed = time.monotonic(), False
        for byte in request:  # bounded: at most len(request) * 0.1 s, and ends at the first refusal
            try:
                s.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
            if time.monotonic() - start > 8:
                break
        if not closed:
            _until_closed(s, limit=2.0)
        assert time.monotonic() - start < 8.0


def test_a_client_that_leaves_mid_answer_leaves_no_traceback(quick, capfd):
    get = b"GET /status HTTP/1.1\r\nHost: x\r\nX-Bayeseval-Secret: k\r\n\r\n"
    post = (
        b"POST / HTTP/1.1\r\nHost: x\r\nX-Bayeseval-Secret: k\r\nContent-Length: 32\r\n\r\n"
        b'{"action": "ANNOTATION_CREATED"}'
    )
    for request in (get, post) * 10:
        s = socket.create_connection(("127.0.0.1", quick.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset on close
        s.sendall(request)
        s.close()
    assert _get(f"http://127.0.0.1:{quick.port}/health") == (200, {"status": "ok"})
    assert quick.wait_idle(20)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    "exc", [BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset"), TimeoutError("timed out")]
)
def test_a_client_gone_is_not_reported(quick, capfd, exc):
    try:
        raise exc
    except OSError:
        quick.httpd.handle_error(None, ("127.0.0.1", 5))
    assert capfd.readouterr().err == ""


def test_another_answering_error_is_one_line(quick, capfd):
    try:
        raise ZeroDivisionError("x\ny")
    except ZeroDivisionError:
        quick.httpd.handle_error(None, ("127.0.0.1", 5))
    err = capfd.readouterr().err
    assert err == "bayeseval campaign serve: error answering 127.0.0.1: ZeroDivisionError: x y\n"


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf"), "10", True])
def test_a_bad_timeout_is_refused(tmp_path, timeout):
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        CampaignServer(tmp_path / "c.db", print, timeout=timeout)


# -- bursts -------------------------------------------------------------------------------------
def _burst(n, request):
    """``n`` clients send ``request`` at once (loopback); their status codes, or the error each got."""
    gate, out = threading.Barrier(n, timeout=30), [None] * n

    def one(i):
        try:
            gate.wait()
            out[i] = request()
        except Exception as exc:  # noqa: BLE001 - what the client saw is the result
            out[i] = repr(exc)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_a_burst_of_webhooks_is_answered_in_full(served):
    server, sync, db, url = served
    assert server.httpd.request_queue_size == BACKLOG >= 200
    codes = _burst(200, lambda: _post(url, {"action": "ANNOTATION_CREATED"}, SECRET)[0])
    assert codes == [202] * 200
    assert server.wait_idle(60)
    assert 1 <= sync.calls <= 200  # webhooks during a sync share the next one
    with Campaign.open(db) as c:
        assert len(c.pending) == 2 * sync.calls


def test_a_burst_of_status_reads_is_answered_in_full(served):
    server, sync, db, url = served
    codes = _burst(200, lambda: _get(url + "/status", SECRET)[0])
    assert codes == [200] * 200


def test_the_listen_queue_takes_a_burst_the_server_has_not_accepted(tmp_path):
    """Connections made while the server accepts none all wait in the queue (none refused or reset)."""
    server = CampaignServer(_campaign(tmp_path), CountingSync(), initial_sync=False)
    socks, answers = [], []
    try:
        for _ in range(200):  # the server is bound and listening, but not accepting yet
            try:
                socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=2))
            except OSError:  # a full queue drops the connection: stop at the first one
                break
        for s in socks:
            s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
        server.start()
        answers = [_raw_read(s) for s in socks]
    finally:
        for s in socks:
            s.close()
        server.shutdown()
    assert len(answers) == 200 and all(a.startswith(b"HTTP/1.0 200") for a in answers)


def _raw_read(sock):
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_an_ignored_action_is_not_echoed_whole(served):
    server, sync, db, url = served
    code, body = _post(url, {"action": "X" * 100_000}, SECRET)
    assert (code, body) == (200, {"ignored": "X" * 100}) and sync.calls == 0


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


def _status(url, secret="webhook-secret"):
    """GET /status, with the secret every endpoint but /health needs when one is set."""
    import urllib.request

    from bayeseval.campaign.labels.serve import SECRET_HEADER

    request = urllib.request.Request(url + "/status", headers={SECRET_HEADER: secret})
    with urllib.request.urlopen(request, timeout=30) as resp:
        return json.loads(resp.read())


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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
