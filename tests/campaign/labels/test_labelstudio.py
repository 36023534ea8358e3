"""The Label Studio sync: against an in-memory project (default tier) and a real server (labelstudio)."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter

import pandas as pd
import pytest

from bayeseval.campaign import Campaign
from bayeseval.campaign.labels.annotations import ROW_ID_KEY
from bayeseval.campaign.labels.labelstudio import (
    CAMPAIGN_KEY,
    MODEL_VERSION,
    SyncReport,
    task_priorities,
)
from tests.campaign.helpers import Team, _check_against_truth, _choice, _truth_campaign
from tests.helpers import ROOT, _campaign

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def sync(c, client, project, **options):
    """One sync of campaign ``c`` with ``client`` through the campaign's method."""
    return c.sync_labelstudio(url=getattr(client, "url", "http://fake"), project=project, client=client, **options)


def priorities(c):
    """The task priorities of campaign ``c``'s pending rows, from its store and its state."""
    return task_priorities(c._ctx, c.state(), c._design)


class FakeProject:
    """An in-memory Label Studio project with the methods a sync calls (one project)."""

    def __init__(self, users=None, *, crash_after_creates=None):
        self.url = "http://fake"
        self.task = {}
        self.next_id = {"task": 1, "ann": 1, "pred": 1}
        self.users_ = users or {1: "ann@example.org", 2: "bo@example.org"}
        self.crash_after_creates = crash_after_creates
        self.creates = 0
        self.config = None
        self.calls = Counter()
        self.clock = 0
        self.pulled = []

    def _id(self, kind):
        self.next_id[kind] += 1
        return self.next_id[kind] - 1

    # the client interface
    def set_label_config(self, project, xml):
        self.config = xml

    def show_scores(self, project):
        self.model_version = MODEL_VERSION

    def _touch(self, tid):
        self.clock += 1000  # seconds: well past the sync's margin
        self.task[tid]["updated_at"] = (
            f"{pd.Timestamp('2026-01-01', tz='UTC') + pd.Timedelta(seconds=self.clock):%Y-%m-%dT%H:%M:%S.%fZ}"
        )

    def tasks(self, project, ids=None, page_size=100):
        self.calls["list" if ids is None else "pull"] += 1
        for tid in sorted(self.task):
            task = copy.deepcopy(self.task[tid])
            if ids is None:  # a listing: counts, not bodies
                task["total_annotations"] = len(task.pop("annotations"))
                task.pop("predictions")
                yield task
            elif tid in ids:
                self.pulled.append(tid)
                yield task

    def create_task(self, project, data, meta):
        tid = self._id("task")
        self.task[tid] = {"id": tid, "data": dict(data), "meta": dict(meta), "annotations": [], "predictions": []}
        self._touch(tid)
        self.creates += 1
        if self.crash_after_creates is not None and self.creates >= self.crash_after_creates:
            self.crash_after_creates = None
            raise ConnectionError("connection lost after the server created the task")
        return tid

    def delete_task(self, task_id):
        self.task.pop(int(task_id))

    def set_score(self, project, task_id, prediction_id, score):
        self.calls["score"] += 1
        preds = self.task[int(task_id)]["predictions"]
        if prediction_id is None:
            preds.append({"id": self._id("pred"), "score": float(score), "model_version": MODEL_VERSION})
        else:
            next(p for p in preds if p["id"] == prediction_id)["score"] = float(score)

    def users(self):
        return dict(self.users_)

    # what annotators do
    def annotate(self, tid, user, label):
        anns = self.task[tid]["annotations"]
        mine = [a for a in anns if a["completed_by"] == user]
        if mine:
            mine[0]["result"] = _choice(label)
        else:
            anns.append({"id": self._id("ann"), "completed_by": user, "result": _choice(label), "was_cancelled": False})
        self._touch(tid)

    def row_tasks(self):
        return Counter(t["meta"][ROW_ID_KEY] for t in self.task.values())


def test_sync_creates_one_task_per_row_with_content_and_dhondt_scores(tmp_path):
    c, pool = _campaign(tmp_path, batch_size=6)
    fake = FakeProject()
    report = sync(c, fake, 1, create_config=True)
    assert report.created == report.proposed == 6 == len(fake.task)
    assert '<Choices name="label"' in fake.config
    by_stratum = Counter()
    for t in sorted(fake.task.values(), key=lambda t: t["id"]):
        rid = t["meta"][ROW_ID_KEY]
        assert t["data"]["text"] == pool.loc[rid, "text"]  # the content travels with the task
        assert "pred" not in t["data"]
        by_stratum[t["data"]["g"]] += 1
    # the uniform rule splits the batch evenly: each stratum's share is 1/2 and its k-th open
    # row scores 1/(2k) (the highest-averages order), hand-computed
    pend = c._store.pending()
    for g in ("a", "b"):
        code = list(c.strata).index(g)
        rows = pend.index[pend["stratum"] == code]
        want = [0.5 / k for k in range(1, len(rows) + 1)]
        got = [
            next(t for t in fake.task.values() if t["meta"][ROW_ID_KEY] == r)["predictions"][0]["score"] for r in rows
        ]
        assert got == pytest.approx(want)
    assert by_stratum == {"a": 3, "b": 3}


def test_a_second_sync_without_changes_does_nothing(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=6)
    fake = FakeProject()
    sync(c, fake, 1)
    again = sync(c, fake, 1)
    assert (again.created, again.proposed, again.scores, again.annotations, again.adopted) == (0, 0, 0, 0, 0)
    assert len(fake.task) == 6


def test_a_crash_after_the_server_created_a_task_adopts_it_on_the_next_sync(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=6)
    fake = FakeProject(crash_after_creates=3)
    with pytest.raises(ConnectionError):
        sync(c, fake, 1)
    assert len(fake.task) == 3 and len(c._store.tasks("http://fake#1")) == 2  # the third is unknown to the file
    report = sync(c, fake, 1)
    assert report.adopted == 1 and report.created == 3
    assert set(fake.row_tasks().values()) == {1} and len(fake.task) == 6
    recorded = c._store.tasks("http://fake#1")
    assert {t["meta"][ROW_ID_KEY]: tid for tid, t in fake.task.items()} == recorded


def test_a_second_task_of_a_row_is_deleted_unless_annotated(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4)
    fake = FakeProject()
    sync(c, fake, 1)
    first = fake.task[min(fake.task)]
    tid = fake.create_task(1, first["data"], first["meta"])  # e.g. imported twice by hand
    report = sync(c, fake, 1)
    assert report.deleted == 1 and tid not in fake.task and set(fake.row_tasks().values()) == {1}


def test_annotations_are_ingested_by_email_and_resolved_by_the_campaign_rule(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4, annotators=2)
    fake = FakeProject()
    sync(c, fake, 1)
    tids = sorted(fake.task)
    truth = {}
    for i, tid in enumerate(tids):
        rid = fake.task[tid]["meta"][ROW_ID_KEY]
        fake.annotate(tid, 1, 1)
        fake.annotate(tid, 2, 1 if i != 0 else 0)  # the first task: the annotators disagree
        truth[rid] = None if i == 0 else 1
    report = sync(c, fake, 1)
    assert report.annotations == 8 and report.labels == 3 and report.unresolved == 1
    ann = c.annotations()
    assert set(ann["annotator"]) == {"ann@example.org", "bo@example.org"}
    labels = c.labels()
    assert {r: int(v) for r, v in labels["label"].items()} == {r: v for r, v in truth.items() if v is not None}
    for tid in tids:  # a labelled row's task sinks to score 0; the unresolved one keeps its priority
        rid = fake.task[tid]["meta"][ROW_ID_KEY]
        want = 0.0 if truth[rid] is not None else priorities(c)[rid]
        assert fake.task[tid]["predictions"][0]["score"] == pytest.approx(want)
    again = sync(c, fake, 1)
    assert again.annotations == 0 and again.labels == 0  # idempotent


def test_only_tasks_updated_since_the_last_sync_or_open_are_pulled(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4, budget=4)
    fake = FakeProject()
    sync(c, fake, 1)
    tids = sorted(fake.task)
    for tid in tids:
        fake.annotate(tid, 1, 1)
    sync(c, fake, 1)  # labels all four: the budget is spent, nothing more is proposed
    assert c.labels_used == 4 and len(c.pending) == 0
    fake.pulled.clear()
    fake.annotate(tids[2], 1, 0)  # one annotator corrects one task
    report = sync(c, fake, 1)
    # the corrected task, and the one updated within PULL_MARGIN of the last sync's latest update
    assert fake.pulled == [tids[2], tids[3]] and report.pulled == 2 and report.relabelled == 1
    fake.pulled.clear()
    again = sync(c, fake, 1)
    assert fake.pulled == [tids[2]] and again.annotations == 0 and again.relabelled == 0


def test_an_updated_annotation_replaces_the_label(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=2)
    fake = FakeProject()
    sync(c, fake, 1)
    tid = min(fake.task)
    rid = fake.task[tid]["meta"][ROW_ID_KEY]
    fake.annotate(tid, 1, 0)
    sync(c, fake, 1)
    fake.annotate(tid, 1, 1)
    report = sync(c, fake, 1)
    assert report.relabelled == 1 and int(c.labels().loc[rid, "label"]) == 1
    fake.annotate(tid, 1, 0)
    refused = sync(c, fake, 1, relabel=False)
    assert refused.relabelled == 0 and len(refused.rejected) == 1 and int(c.labels().loc[rid, "label"]) == 1


def test_a_task_deleted_in_label_studio_releases_its_row(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4)
    fake = FakeProject()
    sync(c, fake, 1)
    tid = min(fake.task)
    rid = fake.task[tid]["meta"][ROW_ID_KEY]
    fake.delete_task(tid)
    report = sync(c, fake, 1, min_open=0)
    assert report.released == 1 and report.proposed == 0
    assert rid not in set(c.pending.index) and rid not in c._store.tasks("http://fake#1")
    assert report.open == 3


def test_a_released_row_loses_its_unannotated_task(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4)
    fake = FakeProject()
    sync(c, fake, 1)
    rid = next(iter(c.pending.index))
    c.release([rid])
    report = sync(c, fake, 1, min_open=0)
    assert report.deleted == 1 and rid not in fake.row_tasks()


def test_annotations_of_a_label_outside_the_known_labels_are_reported_not_recorded(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=2)
    fake = FakeProject()
    sync(c, fake, 1)
    a, b = sorted(fake.task)
    fake.annotate(a, 1, "maybe")
    fake.annotate(b, 1, 1)
    report = sync(c, fake, 1)
    assert report.labels == 1 and len(report.rejected) == 1 and "maybe" in report.rejected[0]


def test_tasks_of_another_campaign_in_the_project_are_left_alone(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=2)
    fake = FakeProject()
    other = fake.create_task(1, {"text": "x", ROW_ID_KEY: 0}, {ROW_ID_KEY: 0, CAMPAIGN_KEY: "someone-else"})
    sync(c, fake, 1)
    assert other in fake.task and len(fake.task) == 3


def test_bad_arguments_are_named(tmp_path):
    c, _ = _campaign(tmp_path)
    with pytest.raises(ValueError, match="project must be"):
        sync(c, FakeProject(), 0)
    with pytest.raises(ValueError, match="batch_size"):
        sync(c, FakeProject(), 1, batch_size=0)


def test_report_table_counts_rejections():
    r = SyncReport(project="p", rejected=["a", "b"], created=2)
    assert r.table.loc[0, "rejected"] == 2 and r.to_dict()["rejected"] == ["a", "b"]


def test_priorities_follow_the_rule_allocation_for_neyman(tmp_path):
    """Neyman gives a stratum a share proportional to w * sqrt(p (1 - p)); with no labels the
    shares are equal (both rates at the prior mean), so the scores are 1/(2k) again."""
    c, _ = _campaign(tmp_path, rule="neyman", batch_size=4)
    c.propose(4)
    scores = sorted(priorities(c).values(), reverse=True)
    assert scores == pytest.approx([0.5, 0.5, 0.25, 0.25])


def test_a_campaign_on_several_metrics_syncs_with_equal_stratum_shares(tmp_path):
    """Several metrics have no single allocation: every stratum's share is 1/K, so the k-th open
    row of a stratum scores 1/(2k) with two strata (hand-computed), and the sync sends them."""
    c, _ = _campaign(tmp_path, metric=["recall", "fpr"], rule="expected_width", batch_size=6)
    fake = FakeProject()
    report = sync(c, fake, 1, create_config=True)
    assert report.created == 6
    scores = sorted((t["predictions"][0]["score"] for t in fake.task.values()), reverse=True)
    assert scores == pytest.approx([0.5, 0.5, 0.25, 0.25, 1 / 6, 1 / 6])


def test_the_sync_command_prints_its_report_as_json(tmp_path, monkeypatch, capsys):
    import bayeseval.campaign.labels.labelstudio as mod
    from bayeseval.cli.campaign import main

    c, _ = _campaign(tmp_path, batch_size=4)
    db = str(c._store.path)
    c.close()
    fake = FakeProject()
    monkeypatch.setattr(mod, "LabelStudioClient", lambda url, token, timeout: fake)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "from-the-environment")
    assert main(["campaign", "sync", "--db", db, "--url", "http://fake", "--project", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["created"] == 4 == len(fake.task) and report["open"] == 4 and report["done"] is False


@pytest.mark.labelstudio
def test_a_campaign_runs_to_done_through_sync(label_studio, tmp_path):
    url, token = label_studio
    team = Team(url, token, "sync run", seed=5)
    c, truth = _truth_campaign(tmp_path, "sync.db")
    first = c.sync_labelstudio(url=url, token=token, project=team.project, create_config=True)
    assert first.created == 6
    deleted = team.tasks()[0]
    team.ls.tasks.delete(id=str(deleted["id"]))  # someone deletes a task before it is labelled
    released = 0
    for _ in range(12):
        report = c.sync_labelstudio(url=url, token=token, project=team.project)
        released += report.released
        assert not report.rejected
        if report.done:
            break
        team.label_open_tasks(truth)
    assert released == 1 and team.flipped > 0
    assert c.agreement()["rows"].sum() > 0
    _check_against_truth(c, team, truth, 16)
    # the open tasks carry the campaign's score, and the Data Manager's "Prediction score" is it
    want = priorities(c)
    tasks = {t["meta"][ROW_ID_KEY]: t for t in team.tasks()}
    for rid, score in want.items():
        assert tasks[int(rid)]["predictions_score"] == pytest.approx(score)
    for rid in c.labels().index:
        assert tasks[int(rid)]["predictions_score"] == pytest.approx(0.0)


@pytest.mark.labelstudio
def test_kill_9_of_sync_at_random_moments_loses_and_duplicates_nothing(label_studio, tmp_path):
    url, token = label_studio
    team = Team(url, token, "kill run", seed=7)
    c, truth = _truth_campaign(tmp_path, "kill.db", budget=24, batch_size=8)
    db = c._store.path
    c.close()
    env = dict(os.environ, LABEL_STUDIO_API_KEY=token, PYTHONPATH=str(ROOT))
    cmd = [
        sys.executable,
        "-m",
        "bayeseval",
        "campaign",
        "sync",
        "--db",
        str(db),
        "--url",
        url,
        "--project",
        str(team.project),
        "--json",
    ]
    rng = random.Random(13)
    killed = 0
    for _ in range(8):
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            proc.wait(timeout=rng.uniform(1.5, 6.0))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            killed += 1
        team.label_open_tasks(truth, limit=3)
    assert killed >= 3
    for _ in range(12):  # then syncs that finish
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["deleted"] == 0 and not report["rejected"]
        if report["done"]:
            break
        team.label_open_tasks(truth)
    with Campaign.open(db) as c:
        _check_against_truth(c, team, truth, 24)
        project = f"{url}#{team.project}"
        ours = {t["meta"][ROW_ID_KEY]: t["id"] for t in team.tasks() if (t.get("meta") or {}).get(CAMPAIGN_KEY)}
        assert c._store.tasks(project) == ours
    # nothing else creates tasks on the server meanwhile and nothing here deletes one: task ids
    # without a gap mean no sync ever created a second task of a row (and then deleted it)
    ids = sorted(ours.values())
    assert ids == list(range(ids[0], ids[0] + len(ids)))


def test_syncs_of_one_campaign_file_take_turns(tmp_path):
    """The lock file admits one sync at a time; the second gives up after its timeout, naming it."""
    from bayeseval.campaign.labels.labelstudio import _sync_lock

    path = tmp_path / "c.db"
    with _sync_lock(path), pytest.raises(ValueError, match="another sync has held its lock for 0.2 s"):
        with _sync_lock(path, timeout=0.2):
            pass
    with _sync_lock(path, timeout=0.2):  # released when the first one ends
        pass


@pytest.mark.labelstudio
def test_a_task_created_just_before_a_crash_is_adopted_by_the_real_server(label_studio, tmp_path):
    """A sync killed between creating a task and recording it leaves a task the file does not
    know; the next sync finds it by its meta and creates none for that row."""
    from bayeseval.campaign.labels.labelstudio import campaign_key

    url, token = label_studio
    team = Team(url, token, "adoption run", seed=8)
    c, _ = _truth_campaign(tmp_path, "adopt.db")
    batch = c.propose(6)
    rid = int(batch.index[0])
    orphan = team.ls.tasks.create(
        project=team.project,
        data={"text": "as a crashed sync left it", ROW_ID_KEY: rid},
        meta={ROW_ID_KEY: rid, CAMPAIGN_KEY: campaign_key(c._store)},
    ).id
    report = c.sync_labelstudio(url=url, token=token, project=team.project)
    assert report.adopted == 1 and report.created == 5 and report.proposed == 0
    per_row = Counter(t["meta"][ROW_ID_KEY] for t in team.tasks())
    assert per_row == Counter({int(r): 1 for r in batch.index})
    assert c._store.tasks(f"{url}#{team.project}")[rid] == orphan


# -- paging, task identity and listing checks -------------------------------------------------
def _within(seconds, fn):
    """Run ``fn`` in a thread; its result or exception, failing the test if it has not ended in time."""
    import threading

    out = {}

    def target():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return out


class _Http:
    """An HTTP response: its JSON body."""

    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


class _Page:
    """A page as label-studio-sdk's pager gives it: ``items``, and the HTTP response under ``response``."""

    def __init__(self, items, total):
        self.items = items
        self.response = type("HttpResponse", (), {"response": _Http({"total": total, "tasks": items})})()


class _Pager:
    """An SDK pager over a project's tasks: ``iter_pages`` as label-studio-sdk's, with a total."""

    def __init__(self, tasks, page_size, mode):
        self.tasks, self.page_size, self.mode = tasks, page_size, mode

    def iter_pages(self):
        size, total = self.page_size, len(self.tasks)
        if self.mode == "ignores page":  # the first page again and again, as a server ignoring ?page=
            while True:
                yield _Page(self.tasks[:size], total)
        if self.mode == "endless":  # a full page, then one new made-up task a page for ever
            yield _Page(self.tasks[:size], total)
            k = 10_000
            while True:
                k += 1
                yield _Page([{"id": k}], total)
        for start in range(0, total, size):
            yield _Page(self.tasks[start : start + size], total)
        yield _Page([], total)


class _FakeSDK:
    def __init__(self, project, mode):
        self.project, self.mode = project, mode
        self.tasks = self

    def list(self, project, fields, page_size, query=None):
        ids = None if query is None else set(json.loads(query)["selectedItems"]["included"])
        if self.mode.endswith("query"):  # a server that ignores the selection: the whole project
            ids = None
        tasks = list(self.project.tasks(project, ids=ids))
        return _Pager(tasks, page_size, self.mode.split(",")[0])


def _sdk_client(project, mode, page_size=3):
    """The real LabelStudioClient over an SDK stand-in serving ``project``'s tasks in pages."""
    from bayeseval.campaign.labels.labelstudio import LabelStudioClient

    client = LabelStudioClient.__new__(LabelStudioClient)
    client._ls, client.url = _FakeSDK(project, mode), project.url
    tasks = client.tasks
    client.tasks = lambda p, ids=None: tasks(p, ids=ids, page_size=page_size)
    return client


class _PagedProject(FakeProject):
    """A FakeProject whose listings go through LabelStudioClient's paging over an SDK stand-in."""

    def __init__(self, mode="pages", **kw):
        super().__init__(**kw)
        self.paging = mode

    def tasks(self, project, ids=None, page_size=100):
        if getattr(self, "_raw", False):
            yield from FakeProject.tasks(self, project, ids=ids)
            return
        self._raw = True
        try:
            yield from _sdk_client(self, self.paging).tasks(project, ids=ids)
        finally:
            self._raw = False


def test_a_server_that_ignores_page_ends_the_listing_without_changing_anything(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=8)
    fake = _PagedProject()
    first = sync(c, fake, 1)  # pages of 3 tasks read to the end
    assert first.created == 8 and set(fake.row_tasks().values()) == {1}
    fake.paging = "ignores page"
    before, tasks = c._store.dump(), copy.deepcopy(fake.task)

    def in_thread():  # a campaign's SQLite connection belongs to the thread that opened it
        with Campaign.open(tmp_path / "c.db") as mine:
            return sync(mine, fake, 1)

    got = _within(20, in_thread)
    # 3 of 8 tasks listed, then page 2 repeats page 1: the listing is incomplete, and the sync
    # acts on nothing (it would take the 5 unseen tasks for deleted ones and release their rows)
    assert isinstance(got.get("error"), ValueError), got
    assert "3 of 8 tasks" in str(got["error"]) and "page 2 brought no new task" in str(got["error"])
    assert c._store.dump() == before and fake.task == tasks
    # the sync's lock was released: a normal listing syncs again at once
    fake.paging = "pages"
    assert sync(c, fake, 1).deleted == 0


@pytest.mark.parametrize(
    "mode, n_tasks, want",
    [
        ("ignores page", 3, 3),  # a repeated page with the total already seen: complete
        ("ignores page", 2, 2),  # one short page, repeated
        # ever new ids, one a page: the bound from the total (50 tasks at 3 a page: 17 + 2 pages) ends it
        ("endless", 50, "incomplete"),
        ("pages", 7, 7),
    ],
)
def test_paging_ends_on_a_repeat_or_the_bound_from_the_total(mode, n_tasks, want):
    project = FakeProject()
    for i in range(n_tasks):
        project.create_task(1, {"text": str(i)}, {})
    got = _within(20, lambda: [t["id"] for t in _sdk_client(project, mode).tasks(1)])
    if want == "incomplete":
        assert isinstance(got.get("error"), ValueError), got
        assert "21 of 50 tasks" in str(got["error"]) and "after 19 pages" in str(got["error"])
    else:
        assert got["value"] == sorted(project.task)[:want]


def test_a_task_whose_data_and_meta_name_different_rows_gives_no_label(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4)
    fake = FakeProject()
    sync(c, fake, 1)
    a, b, d, e = sorted(fake.task)
    row_a, row_b = (fake.task[t]["meta"][ROW_ID_KEY] for t in (a, b))
    fake.task[a]["data"][ROW_ID_KEY] = row_b  # the data names another pending row
    fake.task[d]["data"][ROW_ID_KEY] = 999_999  # ... or a row that is not in the pool
    for tid in (a, d, e):
        fake.annotate(tid, 1, 1)
    report = sync(c, fake, 1)
    assert report.labels == 1  # task e only
    assert set(c.labels().index) == {fake.task[e]["meta"][ROW_ID_KEY]}
    assert {row_a, row_b} <= set(c.pending.index)
    for tid in (a, d):
        assert sum(r.startswith(f"task {tid}:") and "meta" in r and "data" in r for r in report.rejected) == 1
    assert report.deleted == 0 and report.created == 0  # reconciled by meta: no task made or lost
    again = sync(c, fake, 1)
    assert again.labels == 0 and again.created == 0


def test_a_task_listed_twice_is_kept_once(tmp_path):
    c, _ = _campaign(tmp_path, batch_size=4)

    class Twice(FakeProject):
        def tasks(self, project, ids=None, page_size=100):
            listed = list(super().tasks(project, ids=ids))
            yield from listed + copy.deepcopy(listed[:2])  # the first two again, as an overlapping page gives them

    fake = Twice()
    sync(c, fake, 1)
    ids = sorted(fake.task)
    fake.annotate(ids[0], 1, 1)  # an annotated task listed twice too
    report = sync(c, fake, 1)
    assert report.deleted == 0 and report.created == 0 and report.duplicates == []
    assert sorted(fake.task) == ids and report.labels == 1


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.pop("id"), r"task #2 \(row \d+\) has no 'id'"),
        (lambda t: t.update(id="7"), r"task #2 \(row \d+\) has id '7', not an integer task id"),
        (lambda t: t.update(id=2.5), r"task #2 \(row \d+\) has id 2.5, not an integer task id"),
        (lambda t: t.update(id=True), r"task #2 \(row \d+\) has id True, not an integer task id"),
    ],
)
def test_a_listed_task_without_an_integer_id_is_named(tmp_path, change, message):
    c, _ = _campaign(tmp_path, batch_size=3)
    fake = FakeProject()
    sync(c, fake, 1)
    before, tasks = c._store.dump(), copy.deepcopy(fake.task)

    class Broken(FakeProject):
        def tasks(self, project, ids=None, page_size=100):
            for i, t in enumerate(FakeProject.tasks(self, project, ids=ids)):
                if i == 1:
                    change(t)
                yield t

    fake.__class__ = Broken
    with pytest.raises(ValueError, match=message) as err:
        sync(c, fake, 1)
    assert str(err.value).count("\n") == 0 and "http://fake#1" in str(err.value)
    assert c._store.dump() == before and fake.task == tasks


@pytest.mark.parametrize("mode, want", [("pages,ignores query", [7, 2]), ("ignores page,ignores query", "error")])
def test_a_pull_reads_on_until_the_tasks_asked_for(mode, want):
    project = FakeProject()
    for i in range(7):
        project.create_task(1, {"text": str(i)}, {})
    got = _within(20, lambda: [t["id"] for t in _sdk_client(project, mode).tasks(1, ids=[7, 2])])
    if want == "error":  # page 1 (tasks 1-3) again and again: task 7 never comes
        assert isinstance(got.get("error"), ValueError) and "1 of 2 tasks" in str(got["error"]), got
    else:  # a server listing the whole project: read on to task 7 (every task is yielded, the sync keeps its own)
        assert set(want) <= set(got["value"]) and got["value"] == sorted(project.task)


def test_the_reported_total_is_read_wherever_the_sdk_keeps_it():
    from types import SimpleNamespace as NS

    from bayeseval.campaign.labels.labelstudio import _reported_total

    body = _Http({"total": 12, "tasks": []})
    assert _reported_total(NS(items=[], response=NS(response=body))) == 12
    assert _reported_total(NS(items=[], response=NS(_response=body))) == 12
    assert _reported_total(NS(items=[], response=NS(total=5))) == 5  # a parsed response
    assert _reported_total(NS(items=[], response=NS(response=_Http({"tasks": []})))) is None
    assert _reported_total(NS(items=[])) is None


def test_a_campaign_over_units_proposes_when_few_units_are_open(tmp_path):
    import warnings

    import numpy as np

    from bayeseval import Design
    from bayeseval.campaign import Budget, Each

    # 2 strata x 30 items x 3 answers; batches of 4 items, so min_open is 2 items (6 rows)
    frame = pd.DataFrame(
        {
            "g": np.repeat(["a", "b"], 90),
            "item": np.repeat([f"i{k}" for k in range(60)], 3),
            "pred": np.tile([0, 1, 1], 60),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = Campaign.create(
            tmp_path / "u.db",
            frame,
            strata="g",
            y_pred="pred",
            goal=Each(0.05),
            design=Design(cluster="item"),
            budget=Budget(batch_size=4),
            random_seed=1,
        )
    fake = FakeProject()
    first = sync(c, fake, 1)
    assert first.proposed == 12 and len(fake.task) == 12  # 4 whole items
    by_item = {}
    for tid, t in fake.task.items():
        by_item.setdefault(frame.loc[t["meta"][ROW_ID_KEY], "item"], []).append(tid)
    done = sorted(by_item)[:2]
    for item in done:  # two items labelled in full: 2 items (6 rows) stay open
        for tid in by_item[item]:
            fake.annotate(tid, 1, 1)
    second = sync(c, fake, 1)
    # 2 open items <= min_open 2: the sync tops the open items up to the batch, 2 more items (6 rows);
    # counted in rows (6 open > 2) it proposed nothing
    assert second.annotations == 6
    assert second.proposed == 6
    assert len(fake.task) == 18
    assert frame.loc[[t["meta"][ROW_ID_KEY] for t in fake.task.values()], "item"].nunique() == 6
