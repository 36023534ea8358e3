"""Running a campaign inside a Label Studio project: one sync step, safe to repeat.

:func:`sync` (and :meth:`bayeseval.campaign.Campaign.sync_labelstudio`) brings a campaign and a
Label Studio project (https://labelstud.io) into step, in this order (it reads the campaign's
store, label set and settings from a :class:`~bayeseval.campaign.labels.context.LabelContext`,
and asks the campaign's loop, a :class:`SyncLoop`, for its state and its proposals):

1. **lists the project's tasks** (paged; ids, ``meta``, update times and annotation counts),
   each once, every one with an integer id; paging ends at an empty page, a page that brings
   no new task or a bound from the reported total, and a listing that ends short of its total
   stops the sync before it acts (:func:`_paged_tasks`);
2. **reconciles** them with the campaign file's ``tasks`` table: a task of this campaign
   (its ``meta`` carries :data:`~bayeseval.campaign.labels.annotations.ROW_ID_KEY` and
   :data:`CAMPAIGN_KEY`) that the file does not know yet is adopted for its pending row
   (this is how a task created just before a crash is found again); a recorded task that is
   gone from the project is forgotten and its row, if still pending, released; a second task
   of the same row that nobody annotated is deleted; the task of a row the campaign released
   is deleted when nobody annotated it;
3. **pulls** in full (paged) the tasks updated since the last sync (a task's ``updated_at``
   moves when one of its annotations is created or updated) and the open ones, and
   **ingests their annotations** (a task whose ``data`` names another row than its ``meta``
   gives none, and is reported; the Label Studio user is
   named by e-mail, :func:`~bayeseval.campaign.labels.annotations.annotator_identity`), with the
   campaign's rules (several annotators, resolution; an annotator's corrected annotation
   replaces the earlier one unless ``relabel=False``); annotations the campaign rejects are
   reported and left out, the others are recorded;
4. **proposes** the next rows when the open tasks are at most ``min_open`` (the campaign's
   rule decides which), and **creates a task** per pending row without one, recording its
   id in the same file right after;
5. **scores** every open task: ``predictions[].score`` (model version
   :data:`MODEL_VERSION`, which the sync also makes the project's ``model_version``, the one
   whose scores the Data Manager shows) is the row's priority (:func:`task_priorities`), so a
   Data Manager sorted by prediction score shows the rows in the order the campaign wants
   them labelled; scores are updated when the priorities change, and a labelled row's task
   scores 0.

A task is never created twice for a row: a row gets a task only when the project holds no
task of this campaign for it (step 2 reads the whole project first), and syncs of one
campaign file are serialised by a lock file next to it (``<db>.sync-lock``), so two processes
never create tasks at once. A process killed at any moment leaves the file consistent (every
write is one SQLite transaction) and at most tasks the file does not know, which the next
sync adopts.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._api.validation import short_repr
from bayeseval.campaign.labels.annotating import labelstudio_view
from bayeseval.campaign.labels.annotations import ROW_ID_KEY, read_labelstudio, to_labelstudio
from bayeseval.campaign.labels.context import LabelContext
from bayeseval.campaign.labels.ingest import IngestResult, ingest_labels
from bayeseval.campaign.loop.metric_states import MetricStates
from bayeseval.campaign.loop.pool import StrataDesign
from bayeseval.campaign.loop.rounds import allocate
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.campaign.store.store import CampaignStore

__all__ = [
    "CAMPAIGN_KEY",
    "MODEL_VERSION",
    "LabelStudioClient",
    "SyncLoop",
    "SyncReport",
    "sync",
    "task_priorities",
]

#: key of the campaign's identity in the ``meta`` of the tasks a sync creates
CAMPAIGN_KEY = "bayeseval_campaign"
#: ``model_version`` of the predictions that carry the campaign's priority
MODEL_VERSION = "bayeseval-priority"
#: seconds a sync waits for another sync of the same campaign file
LOCK_TIMEOUT = 120.0
#: the pull mark trails the latest task update seen by this much
PULL_MARGIN = datetime.timedelta(seconds=120)
#: scores closer than this are not updated
SCORE_TOLERANCE = 1e-9


@dataclass(repr=False)
class SyncReport(Result):
    """What one :func:`sync` did.

    Attributes
    ----------
    project : str
        The project (URL and id).
    created, adopted : int
        Tasks created, and tasks found in the project for pending rows the file had not
        recorded (created by a sync that was interrupted).
    deleted : int
        Tasks this sync deleted: second tasks of a row, tasks of released rows (none annotated).
    released : int
        Pending rows released because their task was deleted in Label Studio.
    annotations, labels, relabelled, unresolved : int
        Annotations newly stored or replaced, labels newly recorded, labels replaced, and
        annotated rows still waiting for more annotations.
    rejected : list of str
        Annotations the campaign refused, one reason each (they are not recorded).
    pulled : int
        Tasks read in full: changed since the last sync, or open.
    proposed : int
        Rows proposed by this sync.
    scores : int
        Task scores created or updated.
    open : int
        Open tasks (pending rows with a task) after the sync.
    done : bool
        The campaign's goal is met.
    duplicates : list of int
        Task ids of second tasks of a row left in place because they hold annotations.

    Examples
    --------
    >>> SyncReport(project="http://localhost:8080#1", created=3).to_dict()["created"]
    3
    """

    project: str
    created: int = 0
    adopted: int = 0
    deleted: int = 0
    released: int = 0
    annotations: int = 0
    labels: int = 0
    relabelled: int = 0
    unresolved: int = 0
    rejected: list[str] = field(default_factory=list)
    pulled: int = 0
    proposed: int = 0
    scores: int = 0
    open: int = 0
    done: bool = False
    duplicates: list[int] = field(default_factory=list)
    title = "SyncReport"

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict.

        Returns
        -------
        dict
            Every attribute.
        """
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()}

    @property
    def table(self) -> pd.DataFrame:
        """One row: the counts."""
        row = {k: v for k, v in self.to_dict().items() if not isinstance(v, list)}
        row["rejected"] = len(self.rejected)
        return pd.DataFrame([row])


@dataclass(frozen=True)
class SyncLoop:
    """What a sync asks of the campaign's loop; the rest it reads from a :class:`LabelContext`.

    Parameters
    ----------
    state : callable
        No arguments: the campaign's current state (:meth:`Campaign.state
        <bayeseval.campaign.Campaign.state>`), from which the task priorities are allocated.
    done : callable
        No arguments: whether the campaign is done (:attr:`Campaign.done <bayeseval.campaign.Campaign.done>`).
    propose : callable
        Called with a number of rows: proposes and records them (:meth:`Campaign.propose
        <bayeseval.campaign.Campaign.propose>`), returning the batch.
    design : StrataDesign, optional
        The campaign's strata design, passed to the allocation of the priorities.

    Examples
    --------
    >>> loop = SyncLoop(state=lambda: None, done=lambda: True, propose=lambda n: pd.DataFrame())
    >>> loop.done(), loop.design
    (True, None)
    """

    state: Callable[[], RuleState | MetricStates]
    done: Callable[[], bool]
    propose: Callable[[int], pd.DataFrame]
    design: StrataDesign | None = None


class LabelStudioClient:
    """The Label Studio API calls a sync makes, over PyPI ``label-studio-sdk``.

    Any object with these methods can stand in for it (tests use one without a server).

    Parameters
    ----------
    url : str
        The server, e.g. ``http://localhost:8080``.
    token : str
        A user's API token (legacy token or personal access token).
    timeout : float
        Seconds per request.

    Examples
    --------
    >>> LabelStudioClient("localhost:8080", "t")
    Traceback (most recent call last):
    ...
    ValueError: url must start with http:// or https://, got 'localhost:8080'
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        if not isinstance(token, str) or not token.strip():
            raise ValueError("token must be a Label Studio API token (or set LABEL_STUDIO_API_KEY), got none")
        try:
            from label_studio_sdk import LabelStudio
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "a Label Studio sync needs label-studio-sdk: pip install 'bayeseval[labelstudio]'"
            ) from exc
        # no automatic retries: a retried POST could create a task twice
        self._ls = LabelStudio(base_url=url.rstrip("/"), api_key=token.strip(), timeout=timeout, max_retries=0)
        self.url = url.rstrip("/")

    def check(self, project: int) -> str:
        """One call to the server: the project's title (the server's error when the URL, token or project is wrong)."""
        return str(self._ls.projects.get(id=int(project)).title)

    def set_label_config(self, project: int, xml: str) -> None:
        """Replace the project's labelling configuration."""
        self._ls.projects.update(id=int(project), label_config=xml)

    def show_scores(self, project: int) -> None:
        """Make the project's Data Manager show the scores of :data:`MODEL_VERSION`.

        The Data Manager's *Prediction score* averages the predictions of the project's
        ``model_version`` only (none when it is empty), so the project is set to ours.
        """
        if self._ls.projects.get(id=int(project)).model_version != MODEL_VERSION:
            self._ls.projects.update(id=int(project), model_version=MODEL_VERSION)

    def tasks(
        self, project: int, *, ids: Sequence[int] | None = None, page_size: int = 100
    ) -> Iterator[dict[str, Any]]:
        """The project's tasks, paged.

        Without ``ids``: every task, without annotation and prediction bodies (``id``,
        ``data``, ``meta``, ``updated_at``, ``total_annotations``, ...). With ``ids``: those
        tasks in full, with their ``annotations`` and ``predictions``. Each task comes once,
        and the paging ends however the server pages (:func:`_paged_tasks`): a listing that
        ends short of the tasks it should hold is a ValueError.
        """
        what = f"the listing of project {int(project)}"
        if ids is None:
            pager = self._ls.tasks.list(project=int(project), fields="task_only", page_size=page_size)
            yield from _paged_tasks(_pages(pager), what)
            return
        for chunk in _chunks([int(i) for i in ids], 500):
            pager = self._ls.tasks.list(
                project=int(project),
                fields="all",
                page_size=page_size,
                query=json.dumps({"selectedItems": {"all": False, "included": chunk}}),
            )
            yield from _paged_tasks(_pages(pager), what, wanted=chunk)

    def create_task(self, project: int, data: Mapping[str, Any], meta: Mapping[str, Any]) -> int:
        """Create one task; its id."""
        return int(self._ls.tasks.create(project=int(project), data=dict(data), meta=dict(meta)).id)

    def delete_task(self, task_id: int) -> None:
        """Delete one task."""
        self._ls.tasks.delete(id=str(int(task_id)))

    def set_score(self, project: int, task_id: int, prediction_id: int | None, score: float) -> None:
        """Give a task the score ``score`` (a new prediction, or an update of ``prediction_id``)."""
        if prediction_id is None:
            self._ls.predictions.create(
                task=int(task_id), project=int(project), result=[], score=float(score), model_version=MODEL_VERSION
            )
        else:
            self._ls.predictions.update(id=int(prediction_id), score=float(score))

    def users(self) -> dict[int, str]:
        """User id -> e-mail of the server's users."""
        return {int(u.id): str(u.email) for u in self._ls.users.list() if u.email}


def _chunks(items: list[int], size: int) -> list[list[int]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _pages(pager: Any) -> Iterator[tuple[list[Any], int | None]]:
    """``(items, reported total)`` of each page of an SDK pager (its ``iter_pages``)."""
    pages = pager.iter_pages() if hasattr(pager, "iter_pages") else [pager]
    for page in pages:
        items = getattr(page, "items", None)
        yield (list(page) if items is None else list(items)), _reported_total(page)


def _reported_total(page: Any) -> int | None:
    """The task count a page reports (``total`` of Label Studio's task list), when it has one."""
    resp = getattr(page, "response", None)
    # the HTTP response, whose JSON body has the total (label-studio-sdk's BaseHttpResponse
    # keeps it as ``_response`` in some versions)
    raw = getattr(resp, "response", None) or getattr(resp, "_response", None)
    try:
        read_json = getattr(raw, "json", None)
        body = read_json() if callable(read_json) else None
    except ValueError:
        body = None
    for total in (
        *(getattr(obj, "total", None) for obj in (page, resp, getattr(resp, "data", None))),
        body.get("total") if isinstance(body, Mapping) else None,
    ):
        if isinstance(total, int | np.integer) and not isinstance(total, bool):
            return int(total)
    return None


def _id_key(task: Any) -> str:
    """A hashable key of a listed task's id, whatever it holds (checked later, by the sync)."""
    tid = task.get("id") if isinstance(task, Mapping) else None
    return repr(tid)


def _paged_tasks(pages: Any, what: str, *, wanted: Sequence[int] | None = None) -> Iterator[dict[str, Any]]:
    """The tasks of a paged listing, each once, ending however the server pages.

    The listing ends at the first of: an empty page; a page that brings no task not seen on an
    earlier page (a server that ignores ``page`` repeats its first page for ever); every task
    it should hold seen (the ``wanted`` ids, else as many tasks as the total the pages
    report); more pages than the reported total (else the number wanted) needs at the first
    page's size, plus two. Ended by a repeated page or by that bound before every task it
    should hold was seen, the listing is incomplete, which a sync must not act on (it would
    take the tasks it missed for deleted ones): ValueError.

    Parameters
    ----------
    pages : iterable
        ``(tasks, reported total or None)`` per page, in order.
    what : str
        How an error names the listing.
    wanted : sequence of int, optional
        The task ids asked for (a pull of known tasks; a server that ignores the query and
        lists others does not end the pull early).

    Yields
    ------
    dict
        Each task once (a task on several pages: its first copy).

    Examples
    --------
    >>> import itertools
    >>> page = ([{"id": 1}, {"id": 2}], 2)
    >>> [t["id"] for t in _paged_tasks(itertools.repeat(page), "a listing")]
    [1, 2]
    >>> list(_paged_tasks(itertools.repeat(([{"id": 1}], 3)), "the listing of project 1"))
    Traceback (most recent call last):
    ...
    ValueError: the listing of project 1 is incomplete: 1 of 3 tasks, and page 2 brought no new task (does the server ignore 'page'?); the sync stops before acting on it, retry
    """
    seen: set[str] = set()
    want = None if wanted is None else {repr(int(i)) for i in wanted}
    bound = None
    for number, (items, reported) in enumerate(pages, start=1):
        if not items:
            return
        items = [_plain_dict(t) for t in items]
        total = reported if reported is not None else (None if want is None else len(want))
        if bound is None and total is not None:
            bound = -(-total // len(items)) + 2
        fresh = [t for t in items if _id_key(t) not in seen]
        if not fresh:
            _incomplete(seen, want, total, what, f"page {number} brought no new task (does the server ignore 'page'?)")
            return
        for task in fresh:
            seen.add(_id_key(task))
            yield task
        if _missing(seen, want, total) == 0:
            return
        if bound is not None and number >= bound:
            _incomplete(seen, want, total, what, f"it stopped after {number} pages, more than the total needs")
            return


def _missing(seen: set[str], want: set[str] | None, total: int | None) -> int | None:
    """Tasks a listing should hold and has not given yet (None when it cannot be told)."""
    if want is not None:
        return len(want - seen)
    return None if total is None else max(total - len(seen), 0)


def _incomplete(seen: set[str], want: set[str] | None, total: int | None, what: str, why: str) -> None:
    missing = _missing(seen, want, total)
    if missing:
        of = len(want) if want is not None else total if total is not None else 0  # one is set when missing > 0
        raise ValueError(
            f"{what} is incomplete: {of - missing} of {of} tasks, and {why}; the sync stops before acting on it, retry"
        )


def _plain_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None) or obj.dict
    return dump(mode="json") if getattr(obj, "model_dump", None) else dump()


# -- priorities ------------------------------------------------------------------------------
def task_priorities(
    ctx: LabelContext, state: RuleState | MetricStates, design: StrataDesign | None = None
) -> dict[Any, float]:
    """The priority of every pending row: the score its task carries in Label Studio.

    The rule: the campaign's rule allocates a batch as large as the open rows, from the
    labels recorded so far, as if none of those rows had been proposed (a fixed random seed,
    so the same state gives the same scores); stratum ``j`` gets the share ``p_j`` of that
    batch, and its ``k``-th open row in proposal order (``k = 1, 2, ...``) the score
    ``p_j / k``. Labelling in decreasing score order labels every stratum, at every point, in
    the proportions the rule would choose now (the highest-averages order of D'Hondt); a
    stratum the rule no longer asks for scores 0. A campaign on several metrics gives every
    stratum the same share.

    Parameters
    ----------
    ctx : LabelContext
        The campaign's store, label set and settings.
    state : RuleState or MetricStates
        The campaign's current state (:meth:`Campaign.state <bayeseval.campaign.Campaign.state>`).
    design : StrataDesign, optional
        The campaign's strata design, passed to the allocation.

    Returns
    -------
    dict
        Row id -> score in ``[0, 1]``.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> from bayeseval.campaign import Campaign
    >>> path = os.path.join(tempfile.mkdtemp(), "c.db")
    >>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
    >>> c = Campaign.create(path, pool, strata="g", y_pred="pred", rule="uniform", random_seed=0)
    >>> b = c.propose(4)
    >>> ctx = LabelContext.from_store(CampaignStore(Path(path)))
    >>> sorted(task_priorities(ctx, c.state()).values())
    [0.25, 0.25, 0.5, 0.5]
    >>> ctx.store.close()
    """
    pend = ctx.store.pending()
    if pend.empty:
        return {}
    share = _stratum_shares(ctx, state, design, len(pend))
    out: dict[Any, float] = {}
    rank: dict[int, int] = {}
    for rid, code in zip(pend.index, pend["stratum"].to_numpy(dtype=np.int64), strict=True):
        rank[int(code)] = rank.get(int(code), 0) + 1
        out[rid] = float(share[int(code)] / rank[int(code)])
    return out


def _stratum_shares(ctx: LabelContext, st: RuleState | MetricStates, design: StrataDesign | None, n: int) -> np.ndarray:
    """Each stratum's share of a batch of ``n`` the rule would allocate with nothing pending."""
    k = len(ctx.strata)
    if not isinstance(st, RuleState):  # several metrics (MetricStates): equal shares
        return np.full(k, 1.0 / k)
    free = st.with_counts(pending=np.zeros_like(st.pending), available=st.available + st.pending)
    alloc = np.asarray(allocate(ctx.spec, free, n, random_seed=np.random.default_rng(0), design=design), dtype=float)
    total = alloc.sum()
    return alloc / total if total > 0 else np.full(k, 1.0 / k)


# -- the sync --------------------------------------------------------------------------------
def campaign_key(store: CampaignStore) -> str:
    """The identity of a campaign file written into its tasks' ``meta`` (from its creation).

    Parameters
    ----------
    store : CampaignStore
        The open campaign file.

    Returns
    -------
    str
        16 hexadecimal digits.
    """
    created = store.get_meta("created") or ""
    return hashlib.sha256(f"bayeseval campaign {created}".encode()).hexdigest()[:16]


@contextlib.contextmanager
def _sync_lock(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive lock on ``<path>.sync-lock`` (released by the OS if the process dies)."""
    import fcntl

    fd = os.open(str(path) + ".sync-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ValueError(
                        f"campaign database {str(path)!r}: another sync has held its lock for "
                        f"{timeout:g} s; retry when it is done"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def sync(
    ctx: LabelContext,
    loop: SyncLoop,
    client: Any,
    project: int,
    *,
    create_config: bool = False,
    batch_size: int | None = None,
    min_open: int | None = None,
    relabel: bool = True,
    from_name: str | None = None,
) -> SyncReport:
    """One sync of a campaign with a Label Studio project (see the module's description).

    Parameters
    ----------
    ctx : LabelContext
        The open campaign's store, label set and settings.
    loop : SyncLoop
        The campaign's state, its ``done`` and its proposals.
    client : LabelStudioClient
        The server (or an object with the same methods).
    project : int
        The project id.
    create_config : bool
        First set the project's labelling configuration to
        :meth:`~bayeseval.campaign.Campaign.labelstudio_config`.
    batch_size : int, optional
        Rows proposed when the open tasks run low; default the campaign's batch size. In a
        campaign over units (``design.cluster``) it counts units, as the campaign's does.
    min_open : int, optional
        Propose when at most this many tasks are open; default half of ``batch_size``. In a
        campaign over units it counts the proposed units not yet complete.
    relabel : bool
        An annotator's updated annotation replaces the stored one (default True); False
        rejects it (reported).
    from_name : str, optional
        The ``Choices`` control holding the label (default: the only one).

    Returns
    -------
    SyncReport
        What was done.

    Examples
    --------
    >>> sync(None, None, None, 0)
    Traceback (most recent call last):
    ...
    TypeError: ctx must be a LabelContext (an open campaign's), got NoneType
    """
    if not isinstance(ctx, LabelContext):
        raise TypeError(f"ctx must be a LabelContext (an open campaign's), got {type(ctx).__name__}")
    if not isinstance(loop, SyncLoop):
        raise TypeError(f"loop must be a SyncLoop, got {type(loop).__name__}")
    if isinstance(project, bool) or not isinstance(project, (int, np.integer)) or int(project) < 1:
        raise ValueError(f"project must be a Label Studio project id (a positive integer), got {project!r}")
    chosen = ctx.spec.batch_size if batch_size is None else batch_size
    batch = 0 if chosen is None else int(chosen)  # a stored spec always has its batch size
    if batch < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    low = batch // 2 if min_open is None else int(min_open)
    name = f"{getattr(client, 'url', '')}#{int(project)}"
    with _sync_lock(ctx.store.path):
        return _Sync(ctx, loop, client, int(project), name).run(create_config, batch, low, relabel, from_name)


class _Sync:
    """The steps of one sync, sharing the campaign's context and loop, the client and the report."""

    def __init__(self, ctx: LabelContext, loop: SyncLoop, client: Any, project: int, name: str) -> None:
        self.ctx, self.loop, self.client, self.project, self.name = ctx, loop, client, project, name
        self.store = ctx.store
        self.key = campaign_key(ctx.store)
        self.report = SyncReport(project=name)
        self.conflicts: set[int] = set()  # tasks whose data and meta name different rows

    def run(self, create_config: bool, batch: int, low: int, relabel: bool, from_name: str | None) -> SyncReport:
        if create_config:
            self.client.set_label_config(self.project, labelstudio_view(self.ctx))
        tasks = _checked_tasks(self.client.tasks(self.project), f"Label Studio project {self.name}")
        kept = self._reconcile(tasks)
        kept, mark = self._pull(kept)
        self._ingest(kept, relabel, from_name)
        if mark is not None:
            with self.store.transaction("record the Label Studio sync time") as conn:
                self.store.set_meta(conn, self._mark_key, mark)
        self._propose(batch, low)
        scores = self._push()
        self._score(kept, scores)
        if self.report.scores or any(_our_prediction(t) for t in kept.values()):
            # Label Studio accepts a model version only once predictions of it exist
            self.client.show_scores(self.project)
        self.report.done = bool(self.loop.done())
        self.report.open = len(set(self.store.tasks(self.name)) & set(self.store.pending_ids()))
        return self.report

    # step 2
    def _ours(self, tasks: Sequence[Mapping[str, Any]]) -> dict[Any, list[Mapping[str, Any]]]:
        """This campaign's tasks by row id, oldest task first."""
        by_row: dict[Any, list[Mapping[str, Any]]] = {}
        for t in sorted(tasks, key=lambda t: int(t["id"])):
            meta = t.get("meta") or {}
            if isinstance(meta, Mapping) and meta.get(CAMPAIGN_KEY) == self.key and ROW_ID_KEY in meta:
                rid = self.ctx.norm_rid(meta[ROW_ID_KEY])
                if rid is not None:
                    by_row.setdefault(rid, []).append(t)
                    self._check_identity(t, rid)
        return by_row

    def _check_identity(self, task: Mapping[str, Any], rid: Any) -> None:
        """A task names one row: its ``data`` row id, when it has one, must be its ``meta`` one."""
        data = task.get("data")
        if isinstance(data, Mapping) and ROW_ID_KEY in data and self.ctx.norm_rid(data[ROW_ID_KEY]) != rid:
            self.conflicts.add(int(task["id"]))
            self.report.rejected.append(
                f"task {int(task['id'])}: its data names row {short_repr(data[ROW_ID_KEY], limit=60)} but its meta row "
                f"{short_repr(task['meta'][ROW_ID_KEY], limit=60)}; no label is recorded from it (fix or delete the task)"
            )

    def _reconcile(self, tasks: Sequence[Mapping[str, Any]]) -> dict[Any, Mapping[str, Any]]:
        """Adopt, forget, release and de-duplicate; the one task kept per row."""
        present = {int(t["id"]) for t in tasks}
        recorded = self.store.tasks(self.name)
        by_row = self._ours(tasks)
        with self.store.transaction("reconcile its Label Studio tasks") as conn:
            status = self.store.proposal_status(conn, list(set(recorded) | set(by_row)))
            gone = [r for r, tid in recorded.items() if tid not in present]
            self.store.forget_tasks(conn, self.name, gone)
            self.report.released = self.store.release(conn, [r for r in gone if r not in by_row])
            kept, adopt, drop = self._choose(by_row, recorded, status)
            self.store.forget_tasks(conn, self.name, [r for r, t in drop if recorded.get(r) == int(t["id"])])
            self.store.record_tasks(conn, self.name, adopt)
        self.report.adopted = sum(status.get(r) == "pending" for r, _ in adopt)
        for _, t in drop:  # after the commit: a crash here leaves a task the next sync deletes
            self.client.delete_task(int(t["id"]))
            self.report.deleted += 1
        return kept

    def _choose(
        self, by_row: Mapping[Any, list[Mapping[str, Any]]], recorded: Mapping[Any, int], status: Mapping[Any, str]
    ) -> tuple[dict[Any, Mapping[str, Any]], list[tuple[Any, int]], list[tuple[Any, Mapping[str, Any]]]]:
        kept: dict[Any, Mapping[str, Any]] = {}
        adopt: list[tuple[Any, int]] = []
        drop: list[tuple[Any, Mapping[str, Any]]] = []
        for rid, group in by_row.items():
            first = next((t for t in group if int(t["id"]) == recorded.get(rid)), group[0])
            if status.get(rid) is None and not _annotated(first):  # a released row: withdraw its task
                drop.append((rid, first))
                continue
            kept[rid] = first
            if recorded.get(rid) != int(first["id"]):
                adopt.append((rid, int(first["id"])))
            for t in group:
                if int(t["id"]) != int(first["id"]):
                    (self.report.duplicates.append(int(t["id"])) if _annotated(t) else drop.append((rid, t)))
        return kept, adopt, drop

    # step 3
    @property
    def _mark_key(self) -> str:
        return f"labelstudio_pulled:{self.name}"

    def _pull(self, kept: Mapping[Any, Mapping[str, Any]]) -> tuple[dict[Any, Mapping[str, Any]], str | None]:
        """The full tasks (annotations, predictions) changed since the last sync or still open.

        A task's ``updated_at`` moves when an annotation of it is created or updated; the
        mark kept in the file is the latest ``updated_at`` seen, less :data:`PULL_MARGIN`
        seconds (a save in flight during the listing may carry an earlier time), so a few
        tasks are read twice, which the idempotent ingest makes harmless.
        """
        since = _parse_time(self.store.get_meta(self._mark_key))
        pending = set(self.store.pending_ids())
        want = [
            int(t["id"])
            for r, t in kept.items()
            if r in pending
            or (_annotated(t) and (since is None or (_parse_time(t.get("updated_at")) or since) > since))
        ]
        pulled = self.client.tasks(self.project, ids=want) if want else []
        full = {int(t["id"]): t for t in _checked_tasks(pulled, f"Label Studio project {self.name} (full tasks)")}
        self.report.pulled = len(full)
        stamps = [x for x in (_parse_time(t.get("updated_at")) for t in kept.values()) if x is not None]
        mark = (max(stamps) - PULL_MARGIN).isoformat() if stamps else None
        return {r: full[int(t["id"])] for r, t in kept.items() if int(t["id"]) in full}, mark

    def _ingest(self, kept: Mapping[Any, Mapping[str, Any]], relabel: bool, from_name: str | None) -> None:
        annotated = [t for t in kept.values() if _annotated(t) and int(t["id"]) not in self.conflicts]
        if not annotated:
            return
        users = self.client.users()
        frame = _annotation_frame(annotated, users, from_name, self.report.rejected)
        status = self.store.proposal_status(self.store.conn, list(kept))
        ok = frame["row"].map(lambda r: status.get(self.ctx.norm_rid(r)) is not None)
        for rid in frame.loc[~ok, "row"].unique():
            self.report.rejected.append(f"row {rid!r}: not proposed by the campaign (released?)")
        frame = frame[ok]
        if frame.empty:
            return
        try:
            self._add(
                ingest_labels(
                    self.ctx,
                    frame,
                    id_column="row",
                    label_column="label",
                    annotator_column="annotator",
                    relabel=relabel,
                )
            )
        except ValueError:  # some annotation is refused: record the others, row by row
            for rid, part in frame.groupby("row", sort=False):
                try:
                    self._add(
                        ingest_labels(
                            self.ctx,
                            part,
                            id_column="row",
                            label_column="label",
                            annotator_column="annotator",
                            relabel=relabel,
                        )
                    )
                except ValueError as exc:
                    self.report.rejected.append(f"row {rid!r}: {exc}")

    def _add(self, res: IngestResult) -> None:
        r = self.report
        r.annotations += res.annotations
        r.labels += res.new
        r.relabelled += res.relabelled
        r.unresolved += res.unresolved

    # step 4
    def _open(self) -> int:
        """What is open, in what the batch size counts: pending rows, or, in a campaign over units
        (``design.cluster``), the proposed units not yet complete (the state's ``pending``)."""
        design = self.ctx.spec.design
        if design is not None and design.cluster is not None:
            return int(np.sum(self.loop.state().pending))
        return len(self.store.pending_ids())

    def _propose(self, batch: int, low: int) -> None:
        open_now = self._open()
        if open_now <= low and not self.loop.done():
            self.report.proposed = len(self.loop.propose(max(batch - open_now, 1)))

    def _push(self) -> dict[Any, float]:
        """Create a task for every pending row without one; the priorities of the pending rows."""
        recorded = self.store.tasks(self.name)
        pending = self.store.pending_ids()
        scores = task_priorities(self.ctx, self.loop.state(), self.loop.design)
        todo = sorted((r for r in pending if r not in recorded), key=lambda r: -scores.get(r, 0.0))
        if not todo:
            return scores
        batch = self.ctx.pending_batch().loc[self.ctx.rid_index(todo)]
        for task in to_labelstudio(batch):
            rid = self.ctx.norm_rid(task["meta"][ROW_ID_KEY])
            task["meta"][CAMPAIGN_KEY] = self.key
            tid = self.client.create_task(self.project, task["data"], task["meta"])
            with self.store.transaction("record a Label Studio task") as conn:
                self.store.record_tasks(conn, self.name, [(rid, tid)])
            self.report.created += 1
            self.client.set_score(self.project, tid, None, scores.get(rid, 0.0))
            self.report.scores += 1
        return scores

    # step 5
    def _score(self, kept: Mapping[Any, Mapping[str, Any]], scores: Mapping[Any, float]) -> None:
        for rid, task in kept.items():
            pred = _our_prediction(task)
            if pred is None and rid not in scores:
                continue
            target = scores.get(rid, 0.0)  # a row no longer pending (labelled) sinks to 0
            old = None if pred is None else pred.get("score")
            if old is None or abs(float(old) - target) > SCORE_TOLERANCE:
                self.client.set_score(self.project, int(task["id"]), None if pred is None else int(pred["id"]), target)
                self.report.scores += 1


def _checked_tasks(tasks: Any, what: str) -> list[dict[str, Any]]:
    """The listed tasks, each once: a task listed twice is one task (its first copy).

    Parameters
    ----------
    tasks : iterable of mapping
        Tasks as a client lists them.
    what : str
        How an error names the listing.

    Returns
    -------
    list of dict
        The tasks, in listing order, without repeats.

    Raises
    ------
    ValueError
        Naming the task (its position, and its row id when its ``meta`` has one) for a task
        that is not an object, has no ``id`` or an id that is not an integer.

    Examples
    --------
    >>> [t["id"] for t in _checked_tasks([{"id": 2}, {"id": 1}, {"id": 2}], "project 1")]
    [2, 1]
    >>> _checked_tasks([{"id": "7", "meta": {"bayeseval_row_id": 3}}], "project 1")
    Traceback (most recent call last):
    ...
    ValueError: project 1: task #1 (row 3) has id '7', not an integer task id
    """
    out: dict[int, dict[str, Any]] = {}
    for i, task in enumerate(tasks, start=1):
        if not isinstance(task, Mapping):
            raise ValueError(f"{what}: task #{i} is not a task object, got {short_repr(task, limit=60)}")
        tid = task.get("id")
        if isinstance(tid, bool) or not isinstance(tid, int | np.integer):
            meta = task.get("meta")
            row = (
                f" (row {short_repr(meta[ROW_ID_KEY], limit=60)})"
                if isinstance(meta, Mapping) and ROW_ID_KEY in meta
                else ""
            )
            got = "has no 'id'" if tid is None else f"has id {short_repr(tid, limit=60)}, not an integer task id"
            raise ValueError(f"{what}: task #{i}{row} {got}")
        out.setdefault(int(tid), dict(task))
    return list(out.values())


def _annotated(task: Mapping[str, Any]) -> bool:
    """The task holds annotations (the full task's list, or a listing's counts)."""
    anns = task.get("annotations")
    if isinstance(anns, list):
        return len(anns) > 0
    return bool(task.get("total_annotations") or task.get("cancelled_annotations") or task.get("annotations_ids"))


def _parse_time(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        stamp = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=datetime.UTC)


def _our_prediction(task: Mapping[str, Any]) -> Mapping[str, Any] | None:
    preds = task.get("predictions")
    for p in preds if isinstance(preds, list) else []:
        if isinstance(p, Mapping) and p.get("model_version") == MODEL_VERSION:
            return p
    return None


def _annotation_frame(
    tasks: Sequence[Mapping[str, Any]], users: Mapping[int, str], from_name: str | None, rejected: list[str]
) -> pd.DataFrame:
    """Every annotation of the tasks (row, annotator e-mail, label); malformed tasks reported."""
    users_map = {int(k): v for k, v in users.items()}
    try:
        return read_labelstudio([dict(t) for t in tasks], from_name=from_name, annotator_map=users_map)
    except ValueError:
        parts = []
        for t in tasks:
            try:
                parts.append(read_labelstudio([dict(t)], from_name=from_name, annotator_map=users_map))
            except ValueError as exc:
                rejected.append(f"task {t.get('id')!r}: {exc}")
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["row", "annotator", "label"])
