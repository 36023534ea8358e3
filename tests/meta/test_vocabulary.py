"""The one metric vocabulary: every help and error lists the same table."""

from __future__ import annotations

import pandas as pd
import pytest

from bayeseval import get_metric
from bayeseval.cli.campaign import main as campaign_main
from bayeseval.cli.main import main as main_audit_report
from bayeseval.fairness import audit
from tests.helpers import AUDIT_LIST, REPORT_LIST, _flat


@pytest.mark.parametrize("argv, listed", [
    (["report", "--help"], REPORT_LIST),
    (["gate", "--help"], REPORT_LIST),
    (["audit", "--help"], AUDIT_LIST),
])
def test_every_help_prints_the_list_of_the_table(argv, listed, capsys):
    assert main_audit_report(argv) == 0
    assert listed in _flat(capsys.readouterr().out)


def test_campaign_help_prints_the_list_of_the_table(capsys):
    assert campaign_main(["campaign", "create", "--help"]) == 0
    assert REPORT_LIST in _flat(capsys.readouterr().out)


def test_every_error_prints_the_list_of_the_table(preds_core_metric_names, tmp_path, capsys):
    _, path = preds_core_metric_names
    base = [str(path), "--y-true", "y", "--y-pred", "p"]
    for argv, listed in ((["report", *base, "--metric", "f1"], REPORT_LIST),
                         (["gate", *base, "--metric", "f1", "--min-trials", "5"], REPORT_LIST),
                         (["audit", *base, "--groups", "g", "--metrics", "f1"], AUDIT_LIST)):
        assert main_audit_report(argv) == 2
        err = _flat(capsys.readouterr().err)
        assert "unknown metric 'f1'" in err and f"valid choices are {listed}" in err
    pool = tmp_path / "pool.csv"
    pd.DataFrame({"g": ["a", "b"] * 20, "p": [0, 1] * 20}).to_csv(pool, index=False)
    code = campaign_main(["campaign", "create", "--pool", str(pool), "--strata", "g", "--y-pred", "p",
                          "--metric", "f1", "--db", str(tmp_path / "c.db")])
    assert code == 2 and f"valid choices are {REPORT_LIST}" in _flat(capsys.readouterr().err)
    with pytest.raises(ValueError, match="valid choices are") as err:
        get_metric("f1")
    assert str(err.value).endswith(REPORT_LIST)
    with pytest.raises(ValueError) as err:
        audit(preds_core_metric_names[0], y_true="y", y_pred="p", groups="g", metrics="f1")
    assert str(err.value).endswith(AUDIT_LIST)
