"""A small HTTP server that keeps a campaign in step with Label Studio as annotators work.

:class:`CampaignServer` (``bayeseval campaign serve``) receives Label Studio webhooks and
runs :func:`~bayeseval.campaign.labelstudio.sync` after each, one sync at a time, in a worker
thread: a webhook is answered at once (``202``; Label Studio waits only about a second for
an answer), and webhooks that arrive while a sync runs are served by one more sync after it.
It answers:

``POST /`` (or any path)
    A webhook: a JSON object whose ``action`` is one of :data:`ACTIONS`; anything else is
    ``400`` and changes nothing (other actions are acknowledged and ignored). With a shared
    secret, the header :data:`SECRET_HEADER` must carry it (``401`` otherwise).
``GET /status``
    The campaign's status as JSON: ``done``, ``labels_used``, the forecast of labels still
    needed (in total and per stratum), the strata, and the last sync's report.
``GET /health``
    ``{"status": "ok"}``.

It binds to 127.0.0.1 unless told otherwise, and uses only the standard library's
``http.server``.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from typing import Any

__all__ = ["ACTIONS", "SECRET_HEADER", "CampaignServer", "status_payload"]

#: webhook actions that trigger a sync
ACTIONS = frozenset({"ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED",
                     "TASKS_DELETED"})
#: header carrying the shared secret
SECRET_HEADER = "X-Bayeseval-Secret"
#: largest webhook body read (bytes)
MAX_BODY = 4 * 1024 * 1024


def status_payload(campaign: Any) -> dict[str, Any]:
    """The campaign's status as a JSON-ready dict (what ``GET /status`` answers).

    Parameters
    ----------
    campaign : Campaign
        The campaign.

    Returns
    -------
    dict
        ``done``, ``goal_met`` and ``outcome`` (:attr:`~bayeseval.campaign.Campaign.outcome`),
        ``labels_used``, ``pending``, ``forecast`` (labels still needed, in total; null when
        some stratum's forecast cannot be made yet, and ``forecast_note`` then says why) and
        ``strata`` (one record per stratum: the columns of
        :meth:`~bayeseval.campaign.Campaign.status` and its ``forecast``).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from bayeseval.campaign import Campaign
    >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
    >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
    ...                     y_pred="pred", random_seed=0)
    >>> p = status_payload(c)
    >>> p["done"], p["labels_used"], [s["stratum"] for s in p["strata"]]
    (False, 0, ['a', 'b'])
    """
    from bayeseval.campaign.forecast import forecast_text, forecast_total

    st = campaign.status()
    forecast = campaign.forecast(cost=True)
    labels = forecast["labels"]
    table = st.reset_index()
    first = table.columns[0]
    if first != "stratum" and "stratum" not in table.columns:
        table = table.rename(columns={first: "stratum"})
    if len(labels) == len(table):  # null where the forecast cannot be made yet
        table["forecast"] = [None if v is None or v != v else int(v) for v in labels.to_numpy(dtype=object, na_value=None)]
    strata = json.loads(table.to_json(orient="records", default_handler=str))
    total = forecast_total(labels)
    return {
        "done": bool(campaign.done),
        "goal_met": bool(campaign.goal_met),
        "outcome": campaign.outcome,
        "labels_used": int(campaign.labels_used),
        "pending": int(st["pending"].sum()) if "pending" in st else None,
        "forecast": total,
        "forecast_note": None if total is not None else forecast_text(forecast),
        "strata": strata,
    }


class CampaignServer:
    """Serve webhooks and the status of one campaign (see the module's description).

    Parameters
    ----------
    db : str or path-like
        The campaign file.
    sync : callable
        Called with the open campaign to sync it; returns a report with ``to_dict()``.
    host : str
        Address to bind (default 127.0.0.1: this machine only).
    port : int
        Port (0: any free port; see :attr:`port`).
    secret : str, optional
        Shared secret a webhook must carry in :data:`SECRET_HEADER`.
    initial_sync : bool
        Sync once at start (pushes the first tasks).

    Examples
    --------
    >>> CampaignServer("c.db", print, port=-1)
    Traceback (most recent call last):
    ...
    ValueError: port must be an integer in 0..65535, got -1
    """

    def __init__(self, db: str | PathLike[str], sync: Callable[[Any], Any], *, host: str = "127.0.0.1",
                 port: int = 0, secret: str | None = None, initial_sync: bool = True) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        if secret is not None and (not isinstance(secret, str) or not secret):
            raise ValueError(f"secret must be a non-empty string, got {secret!r}")
        self.db, self._sync, self.secret = db, sync, secret
        self._lock = threading.Lock()  # one campaign access at a time (syncs and status reads)
        self._wake = threading.Condition()
        self._requests = 1 if initial_sync else 0
        self._stopping = False
        self.syncs = 0
        self.last_report: dict[str, Any] | None = None
        self.last_error: str | None = None
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._worker = threading.Thread(target=self._work, name="campaign-sync", daemon=True)

    # -- syncing -----------------------------------------------------------------------
    def request_sync(self) -> None:
        """Ask for one more sync (webhooks that arrive during a sync share the next one)."""
        with self._wake:
            self._requests += 1
            self._wake.notify()

    def _work(self) -> None:
        while True:
            with self._wake:
                while not self._requests and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                self._requests = 0
            self._run_sync()

    def _run_sync(self) -> None:
        from bayeseval.campaign.campaign import Campaign

        with self._lock:
            try:
                with Campaign.open(self.db) as c:
                    self.last_report = self._sync(c).to_dict()
                self.last_error = None
            except Exception as exc:  # noqa: BLE001 - reported by /status; the server keeps serving
                self.last_error = f"{type(exc).__name__}: {exc}"
            self.syncs += 1

    def status(self) -> dict[str, Any]:
        """The status payload plus the server's sync counters."""
        from bayeseval.campaign.campaign import Campaign

        with self._lock:
            with Campaign.open(self.db) as c:
                out = status_payload(c)
        with self._wake:
            queued = self._requests
        out.update(syncs=self.syncs, queued=queued, last_sync=self.last_report, last_error=self.last_error)
        return out

    # -- running -----------------------------------------------------------------------
    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (or an interrupt)."""
        self._worker.start()
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self._stop_worker()
            self.httpd.server_close()

    def start(self) -> threading.Thread:
        """Serve in a background thread; returns it."""
        thread = threading.Thread(target=self.serve_forever, name="campaign-server", daemon=True)
        thread.start()
        return thread

    def shutdown(self) -> None:
        """Stop serving (the sync running, if any, finishes first)."""
        self.httpd.shutdown()
        self._stop_worker()

    def _stop_worker(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._worker.is_alive():
            self._worker.join(timeout=300)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Wait until no sync is queued or running; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._wake:
                queued = self._requests
            if not queued and not self._lock.locked():
                return True
            time.sleep(0.05)
        return False


def _check_webhook(body: bytes) -> tuple[str | None, str | None]:
    """``(action, None)`` of a well-formed webhook, or ``(None, why)``."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"the body is not JSON: {exc}"
    if not isinstance(payload, dict):
        return None, f"the body must be a JSON object, got {type(payload).__name__}"
    action = payload.get("action")
    if not isinstance(action, str) or not action:
        return None, "the body has no 'action' string"
    return action, None


def _answer_webhook(server: CampaignServer, headers: Any, rfile: Any) -> tuple[int, dict[str, Any]]:
    """The answer to a webhook POST; a sync is queued only for a well-formed one."""
    if server.secret is not None:
        given = headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), server.secret.encode()):
            return 401, {"error": f"missing or wrong {SECRET_HEADER} header"}
    try:
        length = int(headers.get("Content-Length", ""))
    except ValueError:
        return 400, {"error": "a webhook needs a Content-Length header"}
    if not 0 < length <= MAX_BODY:
        return 400, {"error": f"Content-Length must be 1..{MAX_BODY}, got {length}"}
    action, why = _check_webhook(rfile.read(length))
    if action is None:
        return 400, {"error": why}
    if action not in ACTIONS:
        return 200, {"ignored": action}
    server.request_sync()
    return 202, {"queued": action}


def _handler(server: CampaignServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "bayeseval-campaign"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload, default=str).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?")[0].rstrip("/")
            if path == "/health":
                self._send(200, {"status": "ok"})
            elif path == "/status":
                try:
                    self._send(200, server.status())
                except Exception as exc:  # noqa: BLE001 - a broken file is an answer, not a crash
                    self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
            else:
                self._send(404, {"error": f"no such path {path!r}; try /status or /health"})

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self._send(*_answer_webhook(server, self.headers, self.rfile))

    return Handler
