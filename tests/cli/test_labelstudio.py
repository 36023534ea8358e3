"""``bayeseval campaign sync|serve``: a missing extra, Label Studio refusing at start-up, failed syncs.

Label Studio's client is replaced by a stand-in package ``label_studio_sdk`` (written to a
temporary folder put first on the path, or placed in ``sys.modules``), so these tests need
neither the ``labelstudio`` extra nor a server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import types

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.cli.main import main
from tests.helpers import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")

INSTALL = 'pip install "bayeseval[labelstudio]"'

#: a stand-in for label-studio-sdk: FAKE_LS picks how the server answers
FAKE_SDK = textwrap.dedent("""
    import os


    class ApiError(Exception):
        def __init__(self, status_code, body):
            super().__init__(f"status_code: {status_code}, body: {body}")
            self.status_code, self.body = status_code, body


    class _Projects:
        def get(self, id):
            mode = os.environ.get("FAKE_LS", "ok")
            if mode == "unauthorised":
                raise ApiError(401, {"detail": "Invalid token."})
            if mode == "no-project":
                raise ApiError(404, {"detail": "Not found."})
            if mode == "unreachable":
                raise ConnectionRefusedError(111, "Connection refused")
            return type("Project", (), {"title": "fake", "model_version": ""})()


    class _Tasks:
        def list(self, **options):
            raise ApiError(503, "listing refused\\nby the stand-in")


    class LabelStudio:
        def __init__(self, base_url, api_key, timeout, max_retries):
            self.projects, self.tasks = _Projects(), _Tasks()
""")


@pytest.fixture
def db(tmp_path):
    pool = pd.DataFrame({"g": np.repeat(["a", "b"], 600), "pred": [0, 1] * 600})  # no precision warning
    path = tmp_path / "c.db"
    Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0).close()
    return str(path)


def _sdk_dir(tmp_path, source):
    pkg = tmp_path / "fake" / "label_studio_sdk"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(source)
    return str(tmp_path / "fake")


def _args(command, db, *extra):
    return ["campaign", command, "--db", db, "--url", "http://127.0.0.1:9", "--project", "1", "--token", "t", *extra]


# -- without the extra ----------------------------------------------------------------------
@pytest.mark.parametrize("command", ["sync", "serve"])
def test_without_the_extra_one_line_and_exit_2(db, command, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "label_studio_sdk", None)  # import fails as if not installed
    assert main(_args(command, db, "--port", "0") if command == "serve" else _args(command, db)) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.out == ""
    assert f"bayeseval campaign {command}: error: needs the labelstudio extra" in captured.err
    assert captured.err.rstrip().endswith(INSTALL)


@pytest.mark.parametrize(
    "source, cause",
    [
        (
            "raise ModuleNotFoundError(\"No module named 'label_studio_sdk'\", name='label_studio_sdk')\n",
            "No module named 'label_studio_sdk'",
        ),
        ("VERSION = '0.0.1'  # an old client without LabelStudio\n", "cannot import name 'LabelStudio'"),
    ],
)
@pytest.mark.parametrize("command", ["sync", "serve"])
def test_without_the_extra_the_command_line_exits_2(tmp_path, db, command, source, cause):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_sdk_dir(tmp_path, source), str(ROOT)])}
    r = subprocess.run(
        [sys.executable, "-m", "bayeseval", *_args(command, db)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "labelstudio extra" in r.stderr and cause in r.stderr and INSTALL in r.stderr


# -- serve checks Label Studio before it serves ------------------------------------------------
@pytest.fixture
def fake_sdk(tmp_path, monkeypatch):
    module = types.ModuleType("label_studio_sdk")
    exec(compile(FAKE_SDK, "label_studio_sdk", "exec"), module.__dict__)  # noqa: S102 - the stand-in above
    monkeypatch.setitem(sys.modules, "label_studio_sdk", module)
    return module


@pytest.mark.parametrize(
    "mode, says",
    [
        ("unauthorised", "HTTP 401: {'detail': 'Invalid token.'}"),
        ("no-project", "HTTP 404: {'detail': 'Not found.'}"),
        ("unreachable", "ConnectionRefusedError: [Errno 111] Connection refused"),
    ],
)
def test_serve_stops_at_start_when_label_studio_refuses(db, fake_sdk, monkeypatch, capsys, mode, says):
    from bayeseval.campaign.labels import serve

    monkeypatch.setenv("FAKE_LS", mode)
    started = []
    monkeypatch.setattr(serve.CampaignServer, "__init__", lambda *a, **k: started.append(1) or None)
    assert main(_args("serve", db, "--port", "0")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == f"bayeseval campaign serve: error: Label Studio at http://127.0.0.1:9 (project 1): {says}\n"
    assert not started  # nothing was bound


def test_a_failed_background_sync_is_printed_on_stderr(tmp_path, db):
    env = {**os.environ, "FAKE_LS": "ok", "PYTHONPATH": os.pathsep.join([_sdk_dir(tmp_path, FAKE_SDK), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bayeseval", *_args("serve", db, "--port", "0")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        assert proc.stdout.readline().startswith(f"serving campaign {db} on http://127.0.0.1:")
        for _ in range(600):  # bounded: up to 60 s for the start-up sync to fail
            if any("failed" in line for line in lines) or proc.poll() is not None:
                break
            threading.Event().wait(0.1)
        assert proc.poll() is None  # still serving
    finally:
        proc.terminate()
        code = proc.wait(timeout=60)
        reader.join(10)
    assert code == 0, "".join(lines)  # stopped cleanly by SIGTERM
    assert lines == [
        "bayeseval campaign serve: sync 1 failed: ValueError: Label Studio at http://127.0.0.1:9 "
        "(project 1): HTTP 503: listing refused by the stand-in\n"
    ]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
@pytest.mark.parametrize("flag", ["--client-timeout", "--timeout"])
def test_timeouts_must_be_positive_seconds(db, capsys, flag, value):
    assert main([*_args("serve", db), flag, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err and f"expected a positive number of seconds, got {value!r}" in err
