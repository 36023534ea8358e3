"""A small HTTP server that keeps a campaign in step with Label Studio as annotators work.

:class:`CampaignServer` (``bayeseval campaign serve``) receives Label Studio webhooks and
runs :func:`~bayeseval.campaign.labels.labelstudio.sync` after each, one sync at a time, in a worker
thread: a webhook is answered at once (``202``; Label Studio waits only about a second for
an answer), and webhooks that arrive while a sync runs are served by one more sync after it.
It answers:

``POST /`` (or any path)
    A webhook: a JSON object whose ``action`` is one of :data:`ACTIONS`; any body that does not
    parse as such (not UTF-8, not JSON, nested too deep, not an object, no ``action``) is
    ``400`` and changes nothing (other actions are acknowledged and ignored).
``GET /status``
    The campaign's status as JSON: ``done``, ``labels_used``, the forecast of labels still
    needed (in total and per stratum), the strata, and the last sync's report. It is the
    snapshot the last sync published (``as_of``), so reading it never waits for a sync.
``GET /health``
    ``{"status": "ok"}``.

With a shared secret, every request but ``GET /health`` must carry it in the header
:data:`SECRET_HEADER` (``401`` otherwise; compared in constant time). A client has
``timeout`` seconds to send its request (headers and body) and read the answer; then it is
disconnected. A client that leaves early costs nothing but its connection; the console shows
no traceback.

It binds to 127.0.0.1 unless told otherwise, and uses only the standard library's
``http.server``.
"""

from __future__ import annotations

import contextlib
import datetime
import hmac
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ACTIONS", "BACKLOG", "SECRET_HEADER", "TIMEOUT", "CampaignServer", "StatusSnapshot", "status_payload"]

#: webhook actions that trigger a sync
ACTIONS = frozenset(
    {"ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED", "TASKS_DELETED"}
)
#: header carrying the shared secret
SECRET_HEADER = "X-Bayeseval-Secret"
#: largest webhook body read (bytes)
MAX_BODY = 4 * 1024 * 1024
#: seconds a client has, by default, to send its request and read the answer
TIMEOUT = 10.0
#: connections the operating system queues while the server accepts others (bursts of webhooks)
BACKLOG = 1024


@dataclass(frozen=True)
class StatusSnapshot:
    """A campaign's status as read at one moment: what :func:`status_payload` turns into JSON.

    Parameters
    ----------
    status : pandas.DataFrame
        :meth:`Campaign.status <bayeseval.campaign.Campaign.status>`.
    forecast : pandas.DataFrame
        :meth:`Campaign.forecast(cost=True) <bayeseval.campaign.Campaign.forecast>`.
    done, goal_met : bool
        :attr:`~bayeseval.campaign.Campaign.done` and :attr:`~bayeseval.campaign.Campaign.goal_met`.
    outcome : str
        :attr:`~bayeseval.campaign.Campaign.outcome`.
    labels_used : int
        :attr:`~bayeseval.campaign.Campaign.labels_used`.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from bayeseval.campaign import Campaign
    >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
    >>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
    ...                     y_pred="pred", random_seed=0)
    >>> snap = StatusSnapshot.read(c)
    >>> snap.done, snap.labels_used, len(snap.status)
    (False, 0, 2)
    """

    status: pd.DataFrame
    forecast: pd.DataFrame
    done: bool
    goal_met: bool
    outcome: str
    labels_used: int

    @classmethod
    def read(cls, campaign: Any) -> StatusSnapshot:
        """The snapshot of an open campaign, read through its public methods.

        Parameters
        ----------
        campaign : Campaign
            The open campaign (any object with its ``status``, ``forecast``, ``done``,
            ``goal_met``, ``outcome`` and ``labels_used``).

        Returns
        -------
        StatusSnapshot
            Its status now.
        """
        return cls(
            status=campaign.status(),
            forecast=campaign.forecast(cost=True),
            done=bool(campaign.done),
            goal_met=bool(campaign.goal_met),
            outcome=str(campaign.outcome),
            labels_used=int(campaign.labels_used),
        )


def status_payload(snapshot: StatusSnapshot) -> dict[str, Any]:
    """A campaign's status as a JSON-ready dict (what ``GET /status`` answers).

    Parameters
    ----------
    snapshot : StatusSnapshot
        The campaign's status, forecast and totals.

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
    >>> import pandas as pd
    >>> status = pd.DataFrame({"labelled": [5, 2]}, index=pd.Index(["a", "b"], name="g"))
    >>> forecast = pd.DataFrame({"labels": pd.array([4, 6], dtype="Int64"), "note": [None, None]},
    ...                         index=status.index)
    >>> p = status_payload(StatusSnapshot(status, forecast, False, False, "running", 7))
    >>> p["forecast"], [(s["stratum"], s["forecast"]) for s in p["strata"]]
    (10, [('a', 4), ('b', 6)])
    """
    from bayeseval.campaign.loop.forecast import forecast_text, forecast_total

    st = snapshot.status
    forecast = snapshot.forecast
    labels = forecast["labels"]
    table = st.reset_index()
    first = table.columns[0]
    if first != "stratum" and "stratum" not in table.columns:
        table = table.rename(columns={first: "stratum"})
    if len(labels) == len(table):  # null where the forecast cannot be made yet
        table["forecast"] = [
            None if v is None or v != v else int(v) for v in labels.to_numpy(dtype=object, na_value=None)
        ]
    strata = json.loads(table.to_json(orient="records", default_handler=str))
    total = forecast_total(labels)
    return {
        "done": snapshot.done,
        "goal_met": snapshot.goal_met,
        "outcome": snapshot.outcome,
        "labels_used": snapshot.labels_used,
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
        Shared secret every request but ``GET /health`` must carry in :data:`SECRET_HEADER`.
    initial_sync : bool
        Sync once at start (pushes the first tasks).
    timeout : float
        Seconds a client has to send its request and read the answer (default :data:`TIMEOUT`);
        a client still connected after it is disconnected.
    on_error : callable, optional
        Called with one line when a sync fails (default: print it on standard error).

    Examples
    --------
    >>> CampaignServer("c.db", print, port=-1)
    Traceback (most recent call last):
    ...
    ValueError: port must be an integer in 0..65535, got -1
    """

    def __init__(
        self,
        db: str | PathLike[str],
        sync: Callable[[Any], Any],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        secret: str | None = None,
        initial_sync: bool = True,
        timeout: float = TIMEOUT,
        on_error: Callable[[str], Any] | None = None,
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        if secret is not None and (not isinstance(secret, str) or not secret):
            raise ValueError(f"secret must be a non-empty string, got {secret!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.db, self._sync, self.secret, self.timeout = db, sync, secret, float(timeout)
        self._on_error = on_error
        self._lock = threading.Lock()  # one sync at a time; status reads never take it
        self._wake = threading.Condition()
        self._requests = 1 if initial_sync else 0
        self._stopping = False
        self.syncs = 0
        self.last_report: dict[str, Any] | None = None
        self.last_error: str | None = None
        self._published = self._publish(self._read_status(None))  # replaced whole, never changed
        self.httpd = _Server((host, port), _handler(self))
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
            error, payload = None, None
            try:
                with Campaign.open(self.db) as c:
                    report = self._sync(c).to_dict()
                    payload = self._read_status(c)
                self.last_report = report
            except Exception as exc:  # noqa: BLE001 - reported on the console and by /status; serving goes on
                error = _one_line(exc)
            self.last_error = error
            self.syncs += 1
            # publish the status as this sync left it: readers take the new dict, never a half-made one
            self._published = self._publish(payload if payload is not None else self._read_status(None))
        if error is not None:
            self._report_error(f"sync {self.syncs} failed: {error}")

    def _report_error(self, line: str) -> None:
        try:
            if self._on_error is not None:
                self._on_error(line)
            else:
                print(f"bayeseval campaign serve: {line}", file=sys.stderr, flush=True)
        except Exception:  # noqa: BLE001, S110 - a broken console never stops the server
            pass

    def _read_status(self, campaign: Any) -> dict[str, Any]:
        """:func:`status_payload` of ``campaign`` (None: open the file), or ``{"error": ...}``."""
        from bayeseval.campaign.campaign import Campaign

        try:
            if campaign is None:
                with Campaign.open(self.db) as c:
                    return status_payload(StatusSnapshot.read(c))
            return status_payload(StatusSnapshot.read(campaign))
        except Exception as exc:  # noqa: BLE001 - a broken file is an answer (500), not a crash
            return {"error": _one_line(exc)}

    def _publish(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` with the sync counters and the time: the dict ``/status`` answers until the next sync."""
        return {
            **payload,
            "syncs": self.syncs,
            "last_sync": self.last_report,
            "last_error": self.last_error,
            "as_of": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }

    def status(self) -> dict[str, Any]:
        """The status the last sync published, plus the syncs queued now (never waits for a sync).

        Returns
        -------
        dict
            :func:`status_payload` as of the last sync (``as_of``), with ``syncs``, ``queued``,
            ``last_sync`` and ``last_error``; or ``error`` when the campaign could not be read.
        """
        out = dict(self._published)
        with self._wake:
            out["queued"] = self._requests
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

    def authorised(self, headers: Any) -> bool:
        """True when no secret is set or ``headers`` carry it (compared in constant time)."""
        if self.secret is None:
            return True
        given = headers.get(SECRET_HEADER, "") or ""
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self.secret.encode("utf-8"))


def _one_line(exc: BaseException | None) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


#: what a client that stalls or leaves raises while the server reads or writes its socket
_CLIENT_GONE = (ConnectionError, TimeoutError)


class _Server(ThreadingHTTPServer):
    """The threading HTTP server with a long listen queue and one-line errors."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, _CLIENT_GONE):
            return  # the client stalled or left: nothing to report
        host = client_address[0] if isinstance(client_address, tuple) else client_address
        print(f"bayeseval campaign serve: error answering {host}: {_one_line(exc)}", file=sys.stderr, flush=True)


class _BadBody(ValueError):
    """A webhook body that is not a JSON object with an ``action``."""


def _parse_webhook(body: bytes) -> str:
    """The ``action`` of a well-formed webhook body; :class:`_BadBody` for any other body."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _BadBody(f"the body is not UTF-8 text: {exc}") from None
    except RecursionError:
        raise _BadBody("the body is not JSON this server reads: it is nested too deep") from None
    except ValueError as exc:  # JSONDecodeError, and integers too long to convert
        raise _BadBody(f"the body is not JSON: {' '.join(str(exc).split())}") from None
    if not isinstance(payload, dict):
        raise _BadBody(f"the body must be a JSON object, got {type(payload).__name__}")
    action = payload.get("action")
    if not isinstance(action, str) or not action:
        raise _BadBody("the body has no 'action' string")
    return action


def _check_webhook(body: bytes) -> tuple[str | None, str | None]:
    """``(action, None)`` of a well-formed webhook, or ``(None, why)``."""
    try:
        return _parse_webhook(body), None
    except _BadBody as exc:
        return None, str(exc)


def _body_length(headers: Any) -> int:
    """The declared body length, 1..MAX_BODY; :class:`_BadBody` otherwise."""
    text = headers.get("Content-Length", "")
    try:
        length = int(text)
    except (TypeError, ValueError):
        raise _BadBody(f"a webhook needs a Content-Length header, got {text!r}") from None
    if not 0 < length <= MAX_BODY:
        raise _BadBody(f"Content-Length must be 1..{MAX_BODY}, got {length}")
    return length


def _drain(headers: Any, rfile: Any) -> None:
    """Read (and drop) a refused request's body, so the answer is not lost to a reset connection."""
    try:
        rfile.read(_body_length(headers))
    except (_BadBody, OSError):
        pass


def _answer_webhook(server: CampaignServer, headers: Any, rfile: Any) -> tuple[int, dict[str, Any]]:
    """The answer to a webhook POST; a sync is queued only for a well-formed one."""
    if not server.authorised(headers):
        _drain(headers, rfile)
        return 401, {"error": f"missing or wrong {SECRET_HEADER} header"}
    try:
        length = _body_length(headers)
        body = rfile.read(length)
        if len(body) < length:
            raise _BadBody(f"the body ended after {len(body)} of its {length} bytes (Content-Length)")
        action = _parse_webhook(body)
    except _BadBody as exc:
        return 400, {"error": str(exc)}
    if action not in ACTIONS:
        return 200, {"ignored": action[:100]}
    server.request_sync()
    return 202, {"queued": action}


def _answer_get(server: CampaignServer, path: str, headers: Any) -> tuple[int, dict[str, Any]]:
    """The answer to a GET of ``path``."""
    if path == "/health":
        return 200, {"status": "ok"}
    if not server.authorised(headers):
        return 401, {"error": f"missing or wrong {SECRET_HEADER} header"}
    if path == "/status":
        status = server.status()
        return (500 if "error" in status else 200), status
    return 404, {"error": f"no such path {path!r}; try /status or /health"}


def _handler(server: CampaignServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class of ``server``."""
    return type("Handler", (_Handler,), {"campaign": server, "timeout": server.timeout})


class _Handler(BaseHTTPRequestHandler):
    """Answers one connection of a :class:`CampaignServer` (set as ``campaign``)."""

    server_version = "bayeseval-campaign"
    campaign: CampaignServer
    timeout: ClassVar[float]  # each read and write of the socket

    def setup(self) -> None:
        # the whole exchange has `timeout` seconds: a client that drips its request is cut off too
        self._deadline = threading.Timer(self.campaign.timeout, self._expire)
        self._deadline.daemon = True
        self._deadline.start()
        super().setup()

    def _expire(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        self._deadline.cancel()
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _send(self, code: int, payload: dict[str, Any]) -> None:
        body = b"" if self.command == "HEAD" else json.dumps(payload, default=str).encode("utf-8")
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client left (or timed out) before the answer
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._send(*_answer_get(self.campaign, self.path.split("?")[0].rstrip("/"), self.headers))

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        try:
            answer = _answer_webhook(self.campaign, self.headers, self.rfile)
        except _CLIENT_GONE:  # the body never came: drop the connection, change nothing
            self.close_connection = True
            return
        self._send(*answer)

    def _other(self) -> None:
        """Any other method: the secret first, like every endpoint, then 405."""
        if self.command != "HEAD":
            _drain(self.headers, self.rfile)
        if not self.campaign.authorised(self.headers):
            self._send(401, {"error": f"missing or wrong {SECRET_HEADER} header"})
        else:
            self._send(405, {"error": f"{self.command} is not served; GET /status or /health, POST a webhook"})

    do_HEAD = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _other  # noqa: N815 - http.server's names
