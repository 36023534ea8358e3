"""Benchmark: one sync of ``bayeseval campaign serve`` while clients loop on ``GET /status``.

Target: status reads never wait for a sync, so a sync with 100 clients looping on ``/status``
takes about as long as the same sync alone (ratio under 3; it was about 400 when each read
took the sync's lock). The campaign: 20,000 rows in 10 strata; the sync proposes 20 rows and
publishes the status. Only 127.0.0.1 is used.

Usage::

    .venv/bin/python benchmarks/bench_serve.py [--readers 100] [--secret S]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

from bayeseval.campaign import Campaign
from bayeseval.campaign.labels.serve import SECRET_HEADER, CampaignServer


class Sync:
    def __call__(self, campaign):
        campaign.propose(20)

        class R:
            def to_dict(self):
                return {}

        return R()


def one_run(db, readers, secret):
    server = CampaignServer(db, Sync(), port=0, secret=secret, initial_sync=False)
    server.start()
    url = f"http://127.0.0.1:{server.port}"
    headers = {SECRET_HEADER: secret} if secret else {}
    stop = threading.Event()
    reads = [0]

    def reader():
        while not stop.is_set():
            try:
                req = urllib.request.Request(url + "/status", headers=headers)
                with urllib.request.urlopen(req, timeout=60) as r:
                    r.read()
                reads[0] += 1
            except OSError:  # a refused or reset read counts as no answer
                pass

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(readers)]
    for t in threads:
        t.start()
    time.sleep(1.0 if readers else 0)
    t0 = time.perf_counter()
    req = urllib.request.Request(
        url + "/",
        data=b'{"action": "ANNOTATION_CREATED"}',
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    urllib.request.urlopen(req, timeout=60).read()
    # the sync is done when the server has run one
    deadline = time.monotonic() + 120
    while server.syncs < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    elapsed = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join(timeout=70)
    server.shutdown()
    return elapsed, reads[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--readers", type=int, default=100)
    ap.add_argument("--secret", default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({"g": rng.choice(list("abcdefghij"), 20000), "pred": rng.integers(0, 2, 20000)})
    db = tmp / "c.db"
    Campaign.create(db, pool, strata="g", y_pred="pred", random_seed=0).close()
    alone, _ = one_run(db, 0, args.secret)
    busy, reads = one_run(db, args.readers, args.secret)
    ratio = busy / alone
    print(
        f"sync alone: {alone:.2f} s; with {args.readers} status readers looping: {busy:.2f} s "
        f"({reads} status answers meanwhile); ratio {ratio:.1f} (target < 3)"
    )
    return 0 if ratio < 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
