"""``bayeseval campaign sync`` and ``bayeseval campaign serve``: a campaign run in Label Studio.

``sync`` runs one :func:`~bayeseval.campaign.labelstudio.sync` and prints what it did;
``serve`` runs :class:`~bayeseval.campaign.serve.CampaignServer`, which syncs on
every Label Studio webhook. Both need PyPI ``label-studio-sdk`` (``pip install
'bayeseval[labelstudio]'``) and take the API token from ``--token`` or the
``LABEL_STUDIO_API_KEY`` environment variable.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["COMMANDS", "add_parsers"]


def _client(args: argparse.Namespace) -> Any:
    from bayeseval.campaign.labelstudio import LabelStudioClient

    token = args.token if args.token is not None else os.environ.get("LABEL_STUDIO_API_KEY", "")
    if not token.strip():
        raise ValueError("--token: no Label Studio API token (pass --token or set LABEL_STUDIO_API_KEY)")
    try:
        return LabelStudioClient(args.url, token, timeout=args.timeout)
    except ValueError as exc:
        raise ValueError(f"--url: {exc}") from exc


def _sync_once(campaign: Any, client: Any, args: argparse.Namespace, create_config: bool) -> Any:
    """One sync, with the server's errors as ValueError naming the URL."""
    from bayeseval.campaign.labelstudio import sync

    try:
        return sync(campaign, client, args.project, create_config=create_config, batch_size=args.batch_size,
                    min_open=args.min_open, relabel=not args.no_relabel)
    except (ValueError, TypeError):
        raise
    except Exception as exc:  # the SDK's ApiError, httpx's transport errors
        status = getattr(exc, "status_code", None)
        what = f"HTTP {status}: {getattr(exc, 'body', '')}" if status is not None else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"Label Studio at {args.url} (project {args.project}): {what}") from exc


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
        print(f"{r.project}: {r.created} tasks created, {r.adopted} adopted, {r.deleted} deleted, "
              f"{r.released} rows released; {r.annotations} annotations, {r.labels} labels, "
              f"{r.relabelled} relabelled, {len(r.rejected)} rejected; {r.proposed} rows proposed, "
              f"{r.scores} scores set; {r.open} tasks open; {'done' if r.done else 'not done'}")
        for why in r.rejected:
            print(f"rejected: {why}", file=sys.stderr)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from bayeseval.campaign import Campaign
    from bayeseval.campaign.serve import CampaignServer

    client = _client(args)
    try:
        Campaign.open(args.db).close()
    except ValueError as exc:
        raise ValueError(f"--db: {exc}") from exc
    first = [args.create_config]

    def run_sync(campaign: Any) -> Any:
        report = _sync_once(campaign, client, args, first[0])
        first[0] = False
        return report

    server = CampaignServer(args.db, run_sync, host=args.host, port=args.port, secret=args.secret)
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated server stops serving cleanly
    print(json.dumps({"url": f"http://{args.host}:{server.port}", "db": str(args.db), "project": args.project})
          if args.json else f"serving campaign {args.db} on http://{args.host}:{server.port} "
          f"(webhooks: POST /, status: GET /status)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


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


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="the Label Studio server, e.g. http://localhost:8080")
    p.add_argument("--project", required=True, type=_positive, help="the Label Studio project id")
    p.add_argument("--token", default=None, help="API token (default: the LABEL_STUDIO_API_KEY environment variable)")
    p.add_argument("--create-config", action="store_true",
                   help="set the project's labelling configuration from the campaign first")
    p.add_argument("--batch-size", type=_positive, default=None,
                   help="rows proposed when the open tasks run low (default: the campaign's batch size)")
    p.add_argument("--min-open", type=_count, default=None,
                   help="propose when at most this many tasks are open (default: half the batch size)")
    p.add_argument("--no-relabel", action="store_true",
                   help="reject an annotator's updated annotation instead of replacing the stored one")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per Label Studio request (default 30)")


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
    p = add(sub, "sync", "sync with a Label Studio project",
            "One sync with a Label Studio project: ingest new and changed annotations, release rows "
            "whose task was deleted, propose rows when few tasks are open, create one task per pending "
            "row and set every open task's prediction score to the row's priority (sort the Data "
            "Manager by prediction score). Safe to repeat and to interrupt.",
            "bayeseval campaign sync --db camp.db --url http://localhost:8080 --project 1 --create-config")
    _common(p)
    p = add(sub, "serve", "sync on every Label Studio webhook",
            "Serve Label Studio webhooks (ANNOTATION_CREATED, ANNOTATION_UPDATED, ANNOTATIONS_DELETED, "
            "TASKS_DELETED) on POST and sync after each, one at a time; GET /status answers the "
            "campaign's status (JSON), GET /health answers ok. Binds to 127.0.0.1 unless --host.",
            "bayeseval campaign serve --db camp.db --url http://localhost:8080 --project 1 --port 8765")
    _common(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8765, help="port to listen on (default 8765; 0: any free port)")
    p.add_argument("--secret", default=None,
                   help="shared secret every webhook must carry in the X-Bayeseval-Secret header")
