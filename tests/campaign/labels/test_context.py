"""Tests of ``bayeseval.campaign.labels.context``: the label functions read a store, never a campaign."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pandas as pd
import pytest

from bayeseval.campaign import Annotation, Campaign
from bayeseval.campaign.labels import annotating, context, ingest, labelstudio
from bayeseval.campaign.labels.annotating import agreement_table, annotation_table, labelstudio_view
from bayeseval.campaign.labels.context import LabelContext
from bayeseval.campaign.labels.ingest import ingest_labels
from bayeseval.campaign.store.store import CampaignStore

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def _pool(str_ids=False):
    pool = pd.DataFrame(
        {"g": np.repeat(["north", "south"], 300), "pred": [0, 1, 1] * 200, "text": [f"t{i}" for i in range(600)]}
    )
    if str_ids:
        pool.index = pd.Index([f"r{i}" for i in range(600)], name="item")
    return pool


@pytest.mark.parametrize("str_ids", [False, True])
def test_a_context_read_from_the_store_alone_matches_the_pool(tmp_path, str_ids):
    pool = _pool(str_ids)
    Campaign.create(
        tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=1, annotation=Annotation(content="text")
    ).close()
    store = CampaignStore(tmp_path / "c.db")
    try:
        ctx = LabelContext.from_store(store)
        assert list(ctx.strata) == ["north", "south"] and ctx.strata.name == "g"
        assert ctx.label_set.values == [0, 1] and ctx.content == ["text"]
        assert ctx.rid_int is not str_ids and ctx.metric.name == "error_rate"
        ids = ctx.rid_index(pool.index[[5, 2]])
        assert ids.equals(pool.index[[5, 2]]) and ids.name == pool.index.name
        assert ctx.norm_rid(str(pool.index[7])) == pool.index[7]
        assert ctx.norm_rid("no such id" if not str_ids else None) is None
    finally:
        store.close()


def test_the_label_functions_on_a_bare_store_give_what_the_campaign_methods_give(tmp_path):
    """Ingest through the context of a second connection; the campaign reads the same labels,
    annotations and agreement, and the pool's own values come back in the batch."""
    pool = _pool()
    c = Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="g",
        y_pred="pred",
        random_seed=2,
        annotation=Annotation(annotators=2, content="text"),
    )
    b = c.propose(8)
    store = CampaignStore(tmp_path / "c.db")
    try:
        ctx = LabelContext.from_store(store)
        votes = pd.DataFrame({"row": list(b.index) * 2, "who": ["x"] * 8 + ["y"] * 8, "label": [1, 0] * 4 + [1, 1] * 4})
        r = ingest_labels(ctx, votes, id_column="row", annotator_column="who")
        assert (int(r), r.annotations, r.unresolved) == (4, 16, 4)  # the rows the two agree on: 1, 1
        assert set(c.labels().index) == set(b.index[::2])
        pd.testing.assert_frame_equal(annotation_table(ctx), c.annotations())
        pd.testing.assert_frame_equal(agreement_table(ctx), c.agreement())
        assert labelstudio_view(ctx) == c.labelstudio_config()
        batch = ctx.pending_batch()
        assert list(batch.index) == list(b.index[1::2])
        assert list(batch["text"]) == list(pool.loc[b.index[1::2], "text"])
        assert list(batch["g"]) == list(pool.loc[b.index[1::2], "g"])
    finally:
        store.close()
        c.close()


def test_campaign_has_no_mixin_and_no_label_function_takes_a_campaign():
    assert Campaign.__mro__ == (Campaign, object)
    for module in (annotating, context, ingest, labelstudio):
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if func.__module__ == module.__name__:
                assert "campaign" not in inspect.signature(func).parameters, f"{module.__name__}.{name}"
        tree = ast.parse(inspect.getsource(module))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "bayeseval.campaign.campaign" not in imported and "bayeseval.campaign" not in imported
