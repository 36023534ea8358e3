"""Fixtures shared by the test modules of this folder."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request

import pandas as pd
import pytest

from bayeseval.datasets import make_pool as make_pool_campaign_metrics


@pytest.fixture(scope="module")
def pool_campaign_metrics() -> pd.DataFrame:
    return make_pool_campaign_metrics(8_000, 3, rates=[0.05, 0.1, 0.2], random_seed=0).set_index("row_id")[
        ["stratum", "y_true", "y_pred"]
    ]


#: seconds Label Studio may take to start (a fresh data directory runs its migrations first;
#: about two minutes on a loaded two-core machine)
LABEL_STUDIO_START_TIMEOUT = float(os.environ.get("BAYESEVAL_LABEL_STUDIO_TIMEOUT", "420"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _label_studio_env(data_dir: str, token: str) -> dict[str, str]:
    """Label Studio's settings for a private test server: one user and token, no outside traffic."""
    env = dict(os.environ)
    env.update(
        LABEL_STUDIO_BASE_DATA_DIR=data_dir,
        LABEL_STUDIO_USERNAME="admin@example.org",
        LABEL_STUDIO_PASSWORD=secrets.token_hex(12),
        LABEL_STUDIO_USER_TOKEN=token,
        LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",  # the token above is a legacy token
        SSRF_PROTECTION_ENABLED="false",  # lets webhooks call 127.0.0.1
        LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true",
        LATEST_VERSION_CHECK="false",
        COLLECT_ANALYTICS="false",
        SENTRY_DSN="",
        FRONTEND_SENTRY_DSN="",
        DJANGO_DB="sqlite",
    )
    return env


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Label Studio exited with code {proc.returncode} before answering {url}/health")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise RuntimeError(f"Label Studio did not answer {url}/health within {timeout:g} s")


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server's whole process group: SIGTERM, then SIGKILL after 15 s."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    """A Label Studio server on 127.0.0.1 for the tests marked ``labelstudio``: ``(url, token)``.

    ``BAYESEVAL_LABEL_STUDIO`` names the ``label-studio`` executable (installed in its own
    virtual environment); the tests are skipped when it is unset. The server gets a temporary
    data directory, a user and an API token from its environment variables, and is stopped
    at the end of the session, whatever happens.
    """
    running = os.environ.get("BAYESEVAL_LABEL_STUDIO_URL")
    if running:  # a server started by hand (with the settings of _label_studio_env)
        pytest.importorskip("label_studio_sdk")
        yield running.rstrip("/"), os.environ.get("BAYESEVAL_LABEL_STUDIO_TOKEN", "")
        return
    exe = os.environ.get("BAYESEVAL_LABEL_STUDIO")
    if not exe:
        pytest.skip("BAYESEVAL_LABEL_STUDIO is unset: set it to a label-studio executable to run these tests")
    if not os.access(exe, os.X_OK):
        pytest.fail(f"BAYESEVAL_LABEL_STUDIO={exe!r} is not an executable file")
    pytest.importorskip("label_studio_sdk")
    data_dir = tmp_path_factory.mktemp("label-studio")
    token = secrets.token_hex(20)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(data_dir / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            exe,
            "start",
            "--no-browser",
            "--internal-host",
            "127.0.0.1",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        env=_label_studio_env(str(data_dir), token),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    pidfile = os.environ.get("BAYESEVAL_LABEL_STUDIO_PIDFILE")
    if pidfile:  # lets a supervising script stop the server's process group if pytest is killed
        with open(pidfile, "w") as fh:
            fh.write(str(proc.pid))
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a terminated run still stops the server
    try:
        _wait_healthy(url, proc, LABEL_STUDIO_START_TIMEOUT)
        yield url, token
    finally:
        _stop(proc)
        log.close()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")
