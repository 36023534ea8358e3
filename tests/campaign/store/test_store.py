"""Tests of ``bayeseval.campaign.store.store``."""

from __future__ import annotations

import os

import pytest

from bayeseval.campaign.store import store as store_module
from tests.campaign.helpers import new_campaign
from tests.helpers import make_pool_hardening_campaign

pytestmark = pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")


def test_failure_between_build_and_publish_leaves_no_file(tmp_path, monkeypatch):
    def boom(tmp, path):
        assert tmp.exists() and not path.exists()  # the database is complete, not yet published
        raise OSError("injected failure")

    monkeypatch.setattr(store_module, "publish", boom)  # the store module publishes the built file
    with pytest.raises(OSError, match="injected"):
        new_campaign(tmp_path)
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    c, _ = new_campaign(tmp_path)  # and the same create then works
    assert c.labels_used == 0
    c.close()


def test_interrupt_during_pool_insert_leaves_no_file(tmp_path):
    pool = make_pool_hardening_campaign()

    class Interrupt(BaseException):
        pass

    def rows():
        yield (1, 0, 0, None, 1, 0)
        raise Interrupt

    with pytest.raises(Interrupt):
        store_module.CampaignStore.initialise(
            tmp_path / "c.db", meta={"config": "{}"}, rid_type="INTEGER", strata_keys=[["a"]], pool_rows=rows()
        )
    assert os.listdir(tmp_path) == []
    new_campaign(tmp_path, pool=pool)[0].close()


def test_the_store_is_the_only_campaign_module_that_runs_sql():
    """Outside ``campaign/store/`` no campaign module calls ``execute`` on a connection."""
    import ast
    from pathlib import Path

    import bayeseval.campaign

    root = Path(bayeseval.campaign.__file__).parent
    calls = []
    for path in sorted(root.rglob("*.py")):
        if path.parent.name == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
            ):
                calls.append(f"{path.relative_to(root)}:{node.lineno}")
    assert calls == []
    # the scan sees a call where there is one
    assert any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "execute"
        for n in ast.walk(ast.parse((root / "store" / "store.py").read_text()))
    )
