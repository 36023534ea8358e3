"""``bayeseval campaign sync`` and ``bayeseval campaign serve``: a campaign run in Label Studio.

``sync`` runs one :meth:`~bayeseval.campaign.Campaign.sync_labelstudio`
(:func:`~bayeseval.campaign.labels.labelstudio.sync`) and prints what it did; ``serve`` runs
:class:`~bayeseval.campaign.labels.serve.CampaignServer`, which syncs on every Label Studio webhook. Both need PyPI ``label-studio-sdk`` (``pip install
"bayeseval[labelstudio]"``; without it they say so in one line and exit 2) and take the API
token from ``--token`` or the ``LABEL_STUDIO_API_KEY`` environment variable. ``serve`` first
makes one call to the server (the project), so a wrong URL, token or project ends it at once
(exit 2); a sync that fails later is printed on standard error, one line each.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["COMMANDS", "INSTALL", "add_parsers"]

#: the command that installs what ``sync`` and ``serve`` need
INSTALL = 'pip install "bayeseval[labelstudio]"'


def _client(args: argparse.Namespace) -> Any:
    from bayeseval.campaign.labels.labelstudio import LabelStudioClient

    token = args.token if args.token is not None else os.environ.get("LABEL_STUDIO_API_KEY", "")
    if not token.strip():
        raise ValueError("--token: no Label Studio API token (pass --token or set LABEL_STUDIO_API_KEY)")
    try:
        return LabelStudioClient(args.url, token, timeout=args.timeout)
    except ImportError as exc:  # the extra is not installed (or its client is broken)
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        raise ValueError(
            f"needs the labelstudio extra (label-studio-sdk: {' '.join(str(cause).split())}); "
            f"install it with: {INSTALL}"
        ) from None
    except ValueError as exc:
        raise ValueError(f"--url: {exc}") from exc


def _call(args: argparse.Namespace, call: Callable[..., Any], *params: Any, **options: Any) -> Any:
    """``call(*params, **options)``, with the server's errors as one ValueError naming the URL."""
    try:
        return call(*params, **options)
    except (ValueError, TypeError):
        raise
    except Exception as exc:  # the SDK's ApiError, httpx's transport errors
        status = getattr(exc, "status_code", None)
        body = " ".join(str(getattr(exc, "body", "")).split())[:200]
        what = f"HTTP {status}: {body}" if status is not None else " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ValueError(f"Label Studio at {args.url} (project {args.project}): {what}") from exc


def _sync_once(campaign: Any, client: Any, args: argparse.Namespace, create_config: bool) -> Any:
    """One sync (:meth:`~bayeseval.campaign.Campaign.sync_labelstudio`), with the server's errors as
    ValueError naming the URL."""
    return _call(
        args,
        campaign.sync_labelstudio,
        url=args.url,
        project=args.project,
        client=client,
        create_config=create_config,
        batch_size=args.batch_size,
        min_open=args.min_open,
        relabel=not args.no_relabel,
    )


def _sync(args: argparse.Namespace) -> int:
    from bayeseval.campaign import Campaign

    client = _client(args)
    try:
        campaign = Campaign.open(args.db)
    except ValueError as exc:
        raise ValueError(f"--db: {exc}") from exc
    with campaign:
        report = _sync_once(campaign, client, args, args.create_config)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        r = report
        print(
            f"{r.project}: {r.created} tasks created, {r.adopted} adopted, {r.deleted} deleted, "
            f"{r.released} rows released; {r.annotations} annotations, {r.labels} labels, "
            f"{r.relabelled} relabelled, {len(r.rejected)} rejected; {r.proposed} rows proposed, "
            f"{r.scores} scores set; {r.open} tasks open; {'done' if r.done else 'not done'}"
        )
        for why in r.rejected:
            print(f"rejected: {why}", file=sys.stderr)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from bayeseval.campaign import Campaign
    from bayeseval.campaign.labels.serve import CampaignServer

    client = _client(args)
    try:
        Campaign.open(args.db).close()
    except ValueError as exc:
        raise ValueError(f"--db: {exc}") from exc
    _call(args, client.check, args.project)  # a wrong URL, token or project ends here, before serving
    first = [args.create_config]

    def run_sync(campaign: Any) -> Any:
        report = _sync_once(campaign, client, args, first[0])
        first[0] = False
        return report

    server = CampaignServer(
        args.db,
        run_sync,
        host=args.host,
        port=args.port,
        secret=args.secret,
        timeout=args.client_timeout,
        on_error=_print_error,
    )
    signal.signal(signal.SIGTERM, _stopper(server))  # a terminated server stops serving cleanly
    print(
        json.dumps({"url": f"http://{args.host}:{server.port}", "db": str(args.db), "project": args.project})
        if args.json
        else f"serving campaign {args.db} on http://{args.host}:{server.port} (webhooks: POST /, status: GET /status)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _print_error(line: str) -> None:
    print(f"bayeseval campaign serve: {line}", file=sys.stderr, flush=True)


def _stopper(server: Any) -> Callable[[int, Any], None]:
    """A signal handler that stops ``server`` (from another thread: the main one is serving)."""

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, name="campaign-server-stop", daemon=True).start()

    return stop


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"sync": _sync, "serve": _serve}


def _int_in(low: int, high: int | None, expected: str) -> Callable[[str], int]:
    """An argparse type: an integer in ``low..high`` (no upper bound when None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_positive = _int_in(1, None, "a positive integer")
_port = _int_in(0, 65535, "a port number 0..65535")
_count = _int_in(0, None, "a whole number >= 0")


def _seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="the Label Studio server, e.g. http://localhost:8080")
    p.add_argument("--project", required=True, type=_positive, help="the Label Studio project id")
    p.add_argument("--token", default=None, help="API token (default: the LABEL_STUDIO_API_KEY environment variable)")
    p.add_argument(
        "--create-config", action="store_true", help="set the project's labelling configuration from the campaign first"
    )
    p.add_argument(
        "--batch-size",
        type=_positive,
        default=None,
        help="rows proposed when the open tasks run low (default: the campaign's batch size)",
    )
    p.add_argument(
        "--min-open",
        type=_count,
        default=None,
        help="propose when at most this many tasks are open (default: half the batch size)",
    )
    p.add_argument(
        "--no-relabel",
        action="store_true",
        help="reject an annotator's updated annotation instead of replacing the stored one",
    )
    p.add_argument("--timeout", type=_seconds, default=30.0, help="seconds per Label Studio request (default 30)")


def add_parsers(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``sync`` and ``serve`` to the ``campaign`` sub-commands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``campaign`` sub-parsers.
    add : callable
        The campaign CLI's parser factory ``add(sub, name, help, description, example)``
        (it adds ``--db`` and ``--json``).
    """
    p = add(
        sub,
        "sync",
        "sync with a Label Studio project",
        "One sync with a Label Studio project: ingest new and changed annotations, release rows "
        "whose task was deleted, propose rows when few tasks are open, create one task per pending "
        "row and set every open task's prediction score to the row's priority (sort the Data "
        "Manager by prediction score). Safe to repeat and to interrupt.",
        "bayeseval campaign sync --db camp.db --url http://localhost:8080 --project 1 --create-config",
    )
    _common(p)
    p = add(
        sub,
        "serve",
        "sync on every Label Studio webhook",
        "Serve Label Studio webhooks (ANNOTATION_CREATED, ANNOTATION_UPDATED, ANNOTATIONS_DELETED, "
        "TASKS_DELETED) on POST and sync after each, one at a time; GET /status answers the "
        "campaign's status (JSON), GET /health answers ok. With --secret, every request but "
        "GET /health must carry it. Binds to 127.0.0.1 unless --host. Checks the URL, token and "
        "project first (exit 2 when Label Studio refuses); a failed sync is printed on stderr.",
        "bayeseval campaign serve --db camp.db --url http://localhost:8080 --project 1 --port 8765",
    )
    _common(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8765, help="port to listen on (default 8765; 0: any free port)")
    p.add_argument(
        "--secret",
        default=None,
        help="shared secret every request but GET /health (webhooks, /status) must carry in "
        "the X-Bayeseval-Secret header",
    )
    p.add_argument(
        "--client-timeout",
        type=_seconds,
        default=10.0,
        help="seconds a client has to send its request and read the answer; then it is disconnected (default 10)",
    )
