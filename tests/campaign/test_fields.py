"""The table of campaign settings is the one place their names, defaults and flags are defined.

References: the signatures of CampaignSpec, Campaign.create and simulate as Python reports them
(``inspect.signature``, ``dataclasses.fields``), the text of ``bayeseval campaign create --help``,
and the goal objects built by hand.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from bayeseval import PooledModel
from bayeseval.campaign import Annotation, Budget, Campaign, CampaignSpec, Decide, Each, Gap, Overall, Score, simulate
from bayeseval.campaign.fields import DEFAULTS, FIELDS, GOAL_DEFAULTS, GOAL_FIELDS
from bayeseval.campaign.goals.registry import goal_settings
from bayeseval.cli.campaign import main
from tests.helpers import exact_pool

SPEC_FIELDS = {f.name: f for f in dataclasses.fields(CampaignSpec)}


def _default(field: dataclasses.Field):
    return dataclasses.MISSING if field.default is dataclasses.MISSING else field.default


def test_every_setting_of_the_table_is_a_spec_field_in_the_same_order_with_its_default():
    assert list(SPEC_FIELDS) == [f.name for f in FIELDS]
    for f in FIELDS:
        if f.name != "y_pred":  # the spec requires it
            assert _default(SPEC_FIELDS[f.name]) == f.default, f.name


#: settings simulate does not take one by one: it compares ``rules``, and its oracle answers each row once
NOT_SIMULATED = {"rule", "annotators", "resolve"}


#: settings the entry points take inside another: ``anytime`` is ``guarantee="anytime"`` (the spec keeps the older
#: spelling); the others are fields of the object the keyword takes (keyword, class, field)
FOLDED = {
    "anytime": None,
    "prior": ("model", PooledModel, "prior"),
    "batch_size": ("budget", Budget, "batch_size"),
    "costs": ("budget", Budget, "costs"),
    "score_bins": ("score", Score, "bins"),
    "annotators": ("annotation", Annotation, "annotators"),
    "resolve": ("annotation", Annotation, "resolve"),
}


@pytest.mark.parametrize("func", [Campaign.create, simulate], ids=["create", "simulate"])
def test_every_setting_is_a_keyword_of_create_and_simulate_with_the_same_default(func):
    params = inspect.signature(func).parameters
    for f in FIELDS:
        if f.name in FOLDED or (func is simulate and f.name in NOT_SIMULATED):
            assert f.name not in params
            folded = FOLDED.get(f.name)
            if folded is not None and not (func is simulate and f.name in NOT_SIMULATED):
                keyword, cls, attribute = folded
                assert keyword in params, f.name
                default = {x.name: x.default for x in dataclasses.fields(cls)}[attribute]
                assert default == f.default, f.name
            continue
        assert f.name in params, f.name
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY, f.name
        if f.name not in ("y_pred", "strata"):  # None (required) and None (no strata) in the signatures
            assert params[f.name].default == f.default, f.name


@pytest.mark.parametrize("func", [CampaignSpec, Campaign.create, simulate], ids=["spec", "create", "simulate"])
def test_goal_parameters_are_arguments_of_the_goals_not_of_the_campaign(func):
    params = inspect.signature(func).parameters
    for f in GOAL_FIELDS:
        assert f.name not in params and f.key not in params


def test_goal_fields_are_the_arguments_of_the_goal_classes_with_their_defaults():
    classes = {"each": Each, "overall": Overall, "decide": Decide, "gap": Gap}
    for f in GOAL_FIELDS:
        for name in f.goals:
            param = inspect.signature(classes[name]).parameters[f.name]
            want = inspect.Parameter.empty if f.required else f.default
            assert param.default == want, (name, f.name)
    for name, cls in classes.items():  # and no goal takes an argument the table does not list
        listed = {f.name for f in GOAL_FIELDS if name in f.goals}
        assert set(inspect.signature(cls).parameters) == listed, name
    # the keys a campaign file stores, with the defaults of the goals that do not use them
    assert goal_settings(Each(0.02)) == {
        "target_halfwidth": 0.02,
        "threshold": None,
        "direction": None,
        "margin": 0.0,
        "tolerance": None,
    }
    assert GOAL_DEFAULTS["halfwidth"] == Each().halfwidth == 0.05


def test_every_flag_of_the_tables_is_in_the_create_help(capsys):
    assert main(["campaign", "create", "--help"]) == 0
    out = capsys.readouterr().out
    flags = [f.flag for f in FIELDS if f.flag is not None] + [f.flag for f in GOAL_FIELDS]
    assert len(flags) == len(set(flags))
    for flag in flags:
        assert f"{flag} " in out, flag


@pytest.fixture
def pool_csv(tmp_path):
    path = tmp_path / "pool.csv"
    exact_pool([0.05, 0.2], [300, 300]).to_csv(path, index_label="id")
    return str(path)


def _create(tmp_path, pool_csv, *extra):
    return main(
        [
            "campaign",
            "create",
            "--pool",
            pool_csv,
            "--id-column",
            "id",
            "--strata",
            "stratum",
            "--y-pred",
            "pred",
            "--db",
            str(tmp_path / "c.db"),
            "--seed",
            "1",
            *extra,
        ]
    )


# PrecisionLimitedWarning expected: strata of 300 rows cannot reach the default half-width 0.05
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    ("flags", "goal"),
    [
        ([], Each(0.05)),
        (["--target-halfwidth", "0.1"], Each(0.1)),
        (["--goal", "overall", "--target-halfwidth", "0.02"], Overall(0.02)),
        (["--goal", "decide", "--threshold", "0.1"], Decide((0.1, 0.1), "below")),  # one threshold per stratum
        (
            ["--goal", "decide", "--threshold", "s0=0.1,s1=0.3", "--direction", "above", "--margin", "0.02"],
            Decide((0.1, 0.3), "above", margin=0.02),
        ),
        (["--goal", "gap", "--tolerance", "0.05"], Gap(0.05)),
    ],
)
def test_goal_flags_build_the_goal_object(tmp_path, pool_csv, capsys, flags, goal):
    assert _create(tmp_path, pool_csv, *flags) == 0, capsys.readouterr().err
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.spec.goal == goal and type(c.spec.goal) is type(goal)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--threshold", "0.1"], ["--threshold", "--goal decide", "--goal each"]),
        (
            ["--goal", "decide", "--threshold", "0.1", "--target-halfwidth", "0.1"],
            ["--target-halfwidth", "--goal decide"],
        ),
        (["--goal", "decide", "--threshold", "0.1", "--tolerance", "0.1"], ["--tolerance", "--goal gap"]),
        (["--goal", "gap", "--tolerance", "0.1", "--margin", "0.01"], ["--margin", "--goal decide"]),
        (["--goal", "overall", "--direction", "below"], ["--direction", "--goal overall"]),
        (["--goal", "decide"], ["--goal decide needs --threshold"]),
        (["--goal", "gap"], ["--goal gap needs --tolerance"]),
    ],
)
def test_a_goal_flag_of_another_goal_exits_2_naming_the_flag(tmp_path, pool_csv, capsys, flags, named):
    assert _create(tmp_path, pool_csv, *flags) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    for text in named:
        assert text in err, err
    assert not (tmp_path / "c.db").exists()


def test_default_of_the_goal_setting_is_the_width_goal_with_the_default_halfwidth():
    assert DEFAULTS["goal"] == "each"
    spec = CampaignSpec(y_pred="pred")
    assert type(spec.goal) is Each and spec.goal.halfwidth == GOAL_DEFAULTS["halfwidth"]
