"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pandas as pd

from bayeseval.campaign import Annotation, Budget, Campaign, Each
from bayeseval.campaign.labels.annotations import ROW_ID_KEY
from bayeseval.campaign.labels.labelstudio import CAMPAIGN_KEY
from bayeseval.campaign.loop.rule_state import RuleState
from tests.helpers import make_pool_hardening_campaign

RNG = np.random.default_rng


def _twin_pool(n=2000):
    """Two identical strata: same size, same predictions, same true labels."""
    half = pd.DataFrame({"pred": [0, 1] * (n // 4), "truth": [0, 1, 1, 0] * (n // 8)})
    both = pd.concat([half.assign(g="cheap"), half.assign(g="dear")], ignore_index=True)
    return both


def atypical_state(s0, n0, others, threshold, **kw) -> RuleState:
    """Stratum 0 with s0 errors in n0 among nine strata with ``others`` errors in 60."""
    return RuleState.from_counts(
        [s0] + [others] * 9,
        [n0] + [60] * 9,
        available=[500] * 10,
        goal="decide",
        threshold=np.full(10, threshold),
        **kw,
    )


def new_campaign(tmp_path, name="c.db", pool=None, **kw):
    pool = make_pool_hardening_campaign() if pool is None else pool
    kw.setdefault("random_seed", 1)
    kw.setdefault("goal", Each(0.01))
    return Campaign.create(tmp_path / name, pool, strata="g", y_pred="pred", **kw), pool


def _choice(label):
    return [{"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": [str(label)]}}]


ADMIN = "admin@example.org"


#: the second simulated annotator (Label Studio keeps the case; the campaign lower-cases it)
BO = "Bo@Example.org"


class Team:
    """A Label Studio project and two simulated annotators who post annotations through the API.

    ``ann`` (the server's admin user) labels every row with its true label; ``bo`` flips it with
    probability 0.25 (seeded), so they disagree on some rows and the campaign, resolving by
    ``annotator:admin@example.org``, must end with exactly the true labels.
    """

    def __init__(self, url, token, title, seed):
        from label_studio_sdk import LabelStudio

        self.ls = LabelStudio(base_url=url, api_key=token, max_retries=0, timeout=60)
        self.project = int(self.ls.projects.create(title=title).id)
        users = {u.email: int(u.id) for u in self.ls.users.list()}
        self.ann = users[ADMIN]
        self.bo = users.get(BO) or int(self.ls.users.create(username="bo", email=BO, password="pw-" + title).id)
        self.rng = random.Random(seed)
        self.flipped = 0

    def tasks(self):
        return [
            t.model_dump(mode="json") for t in self.ls.tasks.list(project=self.project, fields="all", page_size=100)
        ]

    def label_open_tasks(self, truth, limit=None):
        """Both annotators label tasks they have not labelled yet; the number of tasks labelled."""
        done = 0
        for t in self.tasks():
            if limit is not None and done >= limit:
                break
            have = {a["completed_by"] for a in t["annotations"]}
            rid = t["meta"][ROW_ID_KEY]
            for user in (self.ann, self.bo):
                if user in have:
                    continue
                label = truth[rid]
                if user == self.bo and self.rng.random() < 0.25:
                    label, self.flipped = 1 - label, self.flipped + 1
                self.ls.annotations.create(id=t["id"], completed_by=user, result=_choice(label))
            done += bool({self.ann, self.bo} - have)
        return done


def _truth_campaign(tmp_path, name, *, budget=16, batch_size=6):
    rng = np.random.default_rng(11)
    n = 80
    pool = pd.DataFrame(
        {
            "g": np.repeat(["a", "b"], n // 2),
            "pred": np.ones(n, dtype=int),
            "text": [f"sentence {i}" for i in range(n)],
        }
    )
    truth = dict(enumerate(rng.binomial(1, np.repeat([0.3, 0.6], n // 2)).tolist()))
    c = Campaign.create(
        tmp_path / name,
        pool,
        strata="g",
        y_pred="pred",
        budget=Budget(budget, batch_size=batch_size),
        random_seed=2,
        annotation=Annotation(annotators=2, resolve=f"annotator:{ADMIN}", content="text"),
    )
    return c, truth


def _check_against_truth(c, team, truth, budget):
    """The campaign ends done with exactly the admin's (true) labels, one task per proposed row."""
    assert c.done and c.labels_used == budget
    labels = c.labels()
    assert {int(r): int(v) for r, v in labels["label"].items()} == {int(r): truth[int(r)] for r in labels.index}
    ours = [t for t in team.tasks() if (t.get("meta") or {}).get(CAMPAIGN_KEY)]
    per_row = Counter(t["meta"][ROW_ID_KEY] for t in ours)
    assert set(per_row.values()) == {1}
    proposed = set(labels.index) | set(c.pending.index)
    assert set(per_row) == {int(r) for r in proposed}
    # every annotation posted is stored under the annotator's e-mail (bo's lower-cased)
    posted = {(t["meta"][ROW_ID_KEY], a["completed_by"]) for t in ours for a in t["annotations"]}
    ann = c.annotations()
    stored = {(int(r), w) for r, w in zip(ann["row"], ann["annotator"], strict=True)}
    names = {team.ann: ADMIN, team.bo: BO.lower()}
    assert stored == {(r, names[u]) for r, u in posted}
    # the per-stratum error counts are the hand counts of the true labels (every prediction is 1)
    counts = c.counts()
    for g in ("a", "b"):
        rows = [int(r) for r in labels.index if (int(r) < 40) == (g == "a")]
        assert int(counts.trials.loc[g]) == len(rows)
        assert int(counts.successes.loc[g]) == sum(truth[r] != 1 for r in rows)


def make_pool(n=3000, k=6, seed=0, str_ids=False):
    """``n`` rows in ``k`` strata of Dirichlet sizes, random predictions, ids 1, 4, 7, ... (or "r0", "r1", ...)."""
    rng = np.random.default_rng(seed)
    sizes = rng.dirichlet(np.ones(k) * 0.7)
    g = rng.choice([f"g{i}" for i in range(k)], size=n, p=sizes)
    pred = rng.integers(0, 2, n)
    index = pd.Index([f"r{i}" for i in range(n)], name="rid") if str_ids else pd.Index(np.arange(n) * 3 + 1, name="rid")
    return pd.DataFrame({"g": g, "pred": pred, "other": rng.normal(size=n)}, index=index)


def truth_of(rid) -> int:
    # deterministic oracle: a hash of the id
    return int(sum(map(ord, str(rid))) % 4 == 0)


def oracle(batch: pd.DataFrame) -> pd.Series:
    """The true labels of a batch by :func:`truth_of`."""
    return pd.Series([truth_of(r) for r in batch.index], index=batch.index)


def _run(c: Campaign, truth: pd.Series, rounds: int, size: int = 40) -> list[list[int]]:
    """Propose ``size`` rows and ingest their true labels ``rounds`` times; the row ids of each batch."""
    out = []
    for _ in range(rounds):
        batch = c.propose(size)
        out.append(batch.index.tolist())
        if len(batch):
            c.ingest(truth.loc[batch.index])
    return out
