"""Budget, Score and Annotation, and the folded keywords of Campaign.create and simulate.

References: a CampaignSpec built with the flat fields (as a campaign file stores them) and
``simulate_spec`` called with it directly, against the folded keywords of the public entry points;
the messages' argument names written out.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Guarantee, PooledModel
from bayeseval.campaign import Annotation, Budget, Campaign, CampaignSpec, Decide, Each, Score, simulate
from bayeseval.campaign.settings import flat_settings, fold_settings
from bayeseval.campaign.simulation import simulate_spec, synthetic_pool


# -- the objects -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, exc, text",
    [
        (lambda: Budget(0), ValueError, "budget.labels must be an integer >= 1, got 0"),
        (lambda: Budget(True), TypeError, "budget.labels must be an integer >= 1, got True"),
        (lambda: Budget(batch_size=0), ValueError, "budget.batch_size must be an integer >= 1, got 0"),
        (lambda: Budget(costs="cheap"), TypeError, "budget.costs must be a dict"),
        (lambda: Score(3), TypeError, "score.column must be a column name (str), got 3"),
        (lambda: Score("s", bins=0), ValueError, "score.bins must be a number of bins >= 1"),
        (lambda: Score("s", bins=[0.9, 0.5]), ValueError, "score.bins edges must be at least two"),
        (lambda: Score("s", bins="3"), TypeError, "score.bins must be an int >= 1"),
        (lambda: Annotation(annotators=0), ValueError, "annotation.annotators must be an integer >= 1, got 0"),
        (lambda: Annotation(resolve="vote"), ValueError, "annotation.resolve must be 'majority' or 'annotator:NAME'"),
        (lambda: Annotation(resolve=2), TypeError, "annotation.resolve"),
        (lambda: Annotation(content=["text", 3]), TypeError, "annotation.content must be a column name"),
    ],
)
def test_validation_names_the_argument_and_the_field(make, exc, text):
    with pytest.raises(exc) as err:
        make()
    assert text in str(err.value)


def test_repr_and_equality():
    assert repr(Budget()) == "Budget(None)"
    assert repr(Budget(200, batch_size=20, costs=[1, 4])) == "Budget(200, batch_size=20, costs=(1.0, 4.0))"
    assert repr(Score("conf", bins=4)) == "Score('conf', bins=4)"
    assert repr(Annotation()) == "Annotation()"
    assert (
        repr(Annotation(annotators=2, resolve="annotator:lead")) == "Annotation(annotators=2, resolve='annotator:lead')"
    )
    # costs as a mapping or a Series compare by their items
    assert Budget(costs={"a": 1, "b": 4}) == Budget(costs=pd.Series({"b": 4.0, "a": 1.0}))
    assert Budget(costs={"a": 1}) != Budget(costs={"a": 2})
    assert Annotation(content=["t", "u"]) == Annotation(content=("t", "u"))
    with pytest.raises(AttributeError):
        Budget().labels = 3  # type: ignore[misc]


def test_flat_settings_and_fold_settings_are_inverse():
    flat = {
        "model": "auto",
        "prior": "bda",
        "budget": 300,
        "batch_size": 30,
        "costs": (1.0, 2.0),
        "score": "conf",
        "score_bins": (0.5, 0.8, 1.0),
        "annotators": 3,
        "resolve": "annotator:lead",
    }
    folded = fold_settings(flat, content="text")
    assert folded == {
        "model": PooledModel("auto", prior="bda"),
        "budget": Budget(300, batch_size=30, costs=[1, 2]),
        "score": Score("conf", bins=[0.5, 0.8, 1.0]),
        "annotation": Annotation(annotators=3, resolve="annotator:lead", content="text"),
    }
    back = flat_settings(**folded)
    assert back == {**flat, "content": "text"}
    # plain values keep the other fields at their defaults
    assert flat_settings(model="robust", budget=50, score=None) == {
        "model": "robust",
        "prior": "default",
        "budget": 50,
        "batch_size": None,
        "costs": None,
        "score": None,
        "score_bins": None,
    }


def test_a_campaign_refuses_the_pymc_engine_and_a_prior_that_is_no_name():
    with pytest.raises(ValueError, match=r"model.engine='pymc': campaigns fit their pooled model with the exact"):
        flat_settings(model=PooledModel("robust", engine="pymc"), budget=None, score=None)
    with pytest.raises(TypeError, match=r"model.prior must be a prior name"):
        flat_settings(model=PooledModel("robust", prior={}), budget=None, score=None)
    with pytest.raises(TypeError, match=r"annotation must be an Annotation, got 2"):
        flat_settings(model="robust", budget=None, score=None, annotation=2)


# -- the folded keywords give the spec of the flat fields ------------------------------------------
def _pool(n=2000, seed=0):
    pool = synthetic_pool(n_rows=n, n_strata=3, random_seed=seed)
    return pool


def test_create_with_the_objects_stores_the_spec_of_the_flat_fields(tmp_path):
    pool = _pool()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = Campaign.create(
            tmp_path / "c.db",
            pool.drop(columns="truth").assign(text=lambda d: [f"item {i}" for i in range(len(d))]),
            strata="stratum",
            y_pred="pred",
            goal=Decide(0.2),
            model=PooledModel("auto", prior="bda"),
            budget=Budget(400, batch_size=25, costs=[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]),
            score=Score("score", bins=2),
            annotation=Annotation(annotators=2, resolve="annotator:lead", content="text"),
            random_seed=3,
        )
    flat = CampaignSpec(
        y_pred="pred",
        strata="stratum",
        goal=Decide(0.2),
        model="auto",
        prior="bda",
        budget=400,
        batch_size=25,
        costs=[1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
        score="score",
        score_bins=2,
        annotators=2,
        resolve="annotator:lead",
        random_seed=3,
        label_set=[0, 1],  # resolved on the pool at create
    )
    want = {**flat.to_config(), "threshold": [0.2] * 6}  # the campaign stores the threshold per stratum
    with c:
        assert c.spec.to_config() == want
        assert c.config["content"] == ["text"]
        assert c.label_costs.tolist() == [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]  # 3 strata x 2 score bins
    with Campaign.open(tmp_path / "c.db") as again:  # what the file stores reads back the same
        assert again.spec.to_config() == want


def test_simulate_with_the_objects_gives_the_table_of_the_flat_spec():
    pool = _pool(3000, seed=1)
    kw = {"strata": "stratum", "y_pred": "pred", "goal": Each(0.1), "random_seed": 5}
    folded = simulate(
        pool,
        y_true="truth",
        budget=Budget(300, batch_size=30, costs=[1.0, 2.0, 1.0, 1.0, 2.0, 1.0]),
        model=PooledModel("beta_binomial", prior="bda"),
        score=Score("score", bins=2),
        n_repeats=2,
        progress=False,
        **kw,
    )
    spec = CampaignSpec(
        **kw,
        budget=300,
        batch_size=30,
        costs=[1.0, 2.0, 1.0, 1.0, 2.0, 1.0],
        model="beta_binomial",
        prior="bda",
        score="score",
        score_bins=2,
    )
    direct = simulate_spec(pool, spec, y_true="truth", n_repeats=2, progress=False)
    pd.testing.assert_frame_equal(folded.table.drop(columns="wall_time"), direct.table.drop(columns="wall_time"))
    pd.testing.assert_frame_equal(folded.intervals, direct.intervals)
    assert folded.settings == direct.settings
    # and the settings took effect: the prior and the bins differ from the defaults' run
    plain = simulate(pool, y_true="truth", budget=Budget(300, batch_size=30), n_repeats=2, progress=False, **kw)
    assert not plain.intervals[["lower", "upper"]].equals(folded.intervals[["lower", "upper"]])


# -- **spec.keywords() reproduces a spec --------------------------------------------------------------
SPECS = [
    {"goal": Each(0.08)},
    {
        "goal": Decide(0.1, margin=0.02),
        "batch_size": 40,
        "budget": 500,
        "model": "beta_binomial",
        "prior": "bda",
        "level": 0.9,
        "rule": "independent_beta",
        "costs": [1.0, 3.0, 1.0],
    },
    {"goal": Each(0.1), "guarantee": Guarantee.anytime(), "score": "score", "score_bins": [0.5, 0.8, 1.0]},
    {"goal": Each(0.1), "metric": ["tpr", "fpr"], "batch_size": 60, "annotators": 2, "resolve": "majority"},
]


@pytest.mark.parametrize("settings", SPECS, ids=["default", "decide", "anytime-score", "metrics"])
def test_keywords_round_trip_through_create_and_simulate(settings, tmp_path):
    pool = _pool(3000, seed=2)
    spec = CampaignSpec(y_pred="pred", strata="stratum", random_seed=7, label_set=[0, 1], **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = Campaign.create(tmp_path / "c.db", pool.drop(columns="truth"), **spec.keywords())
        reference = Campaign._from_spec(tmp_path / "ref.db", pool.drop(columns="truth"), spec)  # the spec itself
    with c, reference:
        assert c.spec == reference.spec and c.config == reference.config
    folded = simulate(pool, y_true="truth", n_repeats=1, progress=False, **spec.keywords("simulate"))
    direct = simulate_spec(pool, spec, y_true="truth", n_repeats=1, progress=False)
    pd.testing.assert_frame_equal(folded.table.drop(columns="wall_time"), direct.table.drop(columns="wall_time"))
    pd.testing.assert_frame_equal(folded.intervals, direct.intervals)


def test_keywords_are_the_entry_points_keywords():
    spec = CampaignSpec(y_pred="pred", strata="stratum", budget=100, batch_size=10, score="s", annotators=2)
    kw = spec.keywords()
    assert kw["budget"] == Budget(100, batch_size=10)
    assert kw["score"] == Score("s")
    assert kw["annotation"] == Annotation(annotators=2)
    assert kw["model"] == PooledModel("robust") and kw["guarantee"] == Guarantee.stratum()
    assert "rules" not in kw and kw["rule"] == "expected_width"
    sim = spec.keywords("simulate")
    assert "annotation" not in sim and "rule" not in sim and sim["rules"] == ["expected_width"]
    with pytest.raises(ValueError, match="entry must be 'create' or 'simulate', got 'open'"):
        spec.keywords("open")
    np.testing.assert_array_equal(kw["strata"], ["stratum"])
