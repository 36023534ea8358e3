"""The goals read a campaign's state through :class:`GoalState` and import nothing of the loop.

References: the members the goals' source reads from ``state`` (parsed with ``ast``), the imports
of the goals' modules (parsed likewise), and a :class:`RuleState` built from counts.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import bayeseval.campaign.goals as goals_package
from bayeseval.campaign.goals.decide import own_binding
from bayeseval.campaign.goals.state import GoalState
from bayeseval.campaign.loop.rule_state import RuleState
from tests.campaign.helpers import atypical_state

GOALS_DIR = Path(goals_package.__file__).parent
MODULES = sorted(GOALS_DIR.glob("*.py"))


def protocol_members() -> dict[str, bool]:
    """Member name -> whether it is a method (else a property) of :class:`GoalState`."""
    return {
        name: inspect.isfunction(member)
        for name, member in vars(GoalState).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    }


def members_read() -> set[str]:
    """The attributes the goals' modules read from a name ``state``."""
    read = set()
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "state":
                read.add(node.attr)
    return read


def test_the_protocol_lists_exactly_the_members_the_goals_read():
    assert len(MODULES) >= 8  # goal, gains, each, overall, decide, gap, registry, state, ...
    read = members_read()
    assert {"stop_halfwidths", "posterior", "gap", "decisions", "target_halfwidth"} <= read
    assert set(protocol_members()) == read


def test_the_goals_import_nothing_from_the_loop():
    """Not at module level, not under ``TYPE_CHECKING``, not inside a function."""
    imported = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.append(node.module)
            elif isinstance(node, ast.Import):
                imported.extend(alias.name for alias in node.names)
    assert "bayeseval.campaign.goals.gains" in imported  # the scan sees the goals' own imports
    outside = {
        m for m in imported if m.startswith("bayeseval.campaign") and not m.startswith("bayeseval.campaign.goals")
    }
    assert outside == {"bayeseval.campaign.fields"}  # the goals' defaults, below the loop


def test_a_rule_state_has_every_member_of_the_protocol_in_its_kind():
    state = RuleState.from_counts([1, 5], [400, 10], available=[0, 3], target_halfwidth=0.05)
    for name, is_method in protocol_members().items():
        assert hasattr(state, name), name
        assert callable(getattr(state, name)) == is_method, name
    # the count views read the counts a state was built from
    assert state.trials.tolist() == [400, 10] and state.available.tolist() == [0, 3]
    assert state.exhausted().tolist() == [True, False]


@pytest.mark.parametrize("model", ["auto", "independent"])
def test_own_binding_holds_where_the_pooled_decision_runs_ahead_of_the_own(model):
    """No error in 30 trials among nine strata of 3 in 60: pooled, every stratum meets 0.1 at 0.95.

    Under ``guarantee="stratum"`` the anytime test on the stratum's own counts has not decided
    any of them, so each is planned on its own data; the independent model has no pooled
    decision to run ahead.
    """
    st = atypical_state(0, 30, 3, 0.1, guarantee="stratum", model=model)
    assert (st.decisions() == "undecided").all()
    if model == "auto":
        assert (st.p_meets() >= 0.95).all()
        assert own_binding(st).tolist() == [True] * 10
    else:
        assert own_binding(st).tolist() == [False] * 10


def test_own_binding_is_false_for_a_goal_without_threshold():
    st = RuleState.from_counts([0] + [3] * 9, [30] + [60] * 9, available=[500] * 10, goal="each", guarantee="stratum")
    assert st.threshold is None
    assert own_binding(st).tolist() == [False] * 10
    with pytest.raises(ValueError, match="threshold"):
        st.p_meets()  # what own_binding must not ask of such a state
