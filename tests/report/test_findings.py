"""Tests of ``bayeseval.report.findings``."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pandas as pd

from bayeseval import Counts, evaluate
from bayeseval._api.results import Result
from bayeseval.report import Finding, Report
from bayeseval.report.findings import model_findings
from bayeseval.report.sections import Pooled
from tests.helpers import _close_figures  # noqa: F401

matplotlib.use("Agg")


def _table(rows):
    cols = ["lower", "upper", "pooled_lower", "pooled_upper", "shrinkage"]
    return pd.DataFrame(rows, columns=cols, index=pd.Index(list("abcd")[: len(rows)]))


def _findings(table, flagged=None):
    flagged = np.zeros(len(table), bool) if flagged is None else np.asarray(flagged)
    pooled = Pooled(post=object(), flagged=flagged)
    own = (table["lower"].to_numpy(), table["upper"].to_numpy())
    return {f.flag: f.strata for f in model_findings(table, own, pooled)}


def test_findings_are_data_and_drive_warnings_and_flags():
    # a: rate 0; b: ordinary; c: empty; d: rate 1
    s, n = [0, 7, 0, 12], [60, 80, 0, 12]
    rep = evaluate(Counts.from_arrays(s, n, strata=list("abcd")), random_seed=0)
    assert all(isinstance(f, Finding) for f in rep.findings)
    assert rep.warnings == [f.message for f in rep.findings if f.severity == "warning"]
    assert rep.notes == [f.message for f in rep.findings if f.severity == "note"]
    by_flag = {f.flag: f.strata for f in rep.findings}
    # independent reference: the counts themselves
    assert by_flag["empty"] == tuple(k for k, nk in zip("abcd", n, strict=True) if nk == 0)
    rate0 = {f.strata for f in rep.findings if f.flag == "rate 0"}
    rate1 = {f.strata for f in rep.findings if f.flag == "rate 1"}
    assert rate0 == {(k,) for k, sk, nk in zip("abcd", s, n, strict=True) if nk and sk == 0}
    assert rate1 == {(k,) for k, sk, nk in zip("abcd", s, n, strict=True) if nk and sk == nk}
    for k in "abcd":
        expected = [f.flag for f in rep.findings if k in f.strata]
        assert sorted(filter(None, rep.table.loc[k, "flags"].split(", "))) == sorted(expected)
    d = json.loads(json.dumps(rep.to_dict()))
    assert [f["message"] for f in d["findings"]] == [f.message for f in rep.findings]


def test_estimates_disagree_fires_exactly_when_the_intervals_do_not_overlap():
    table = _table(
        [
            [0.30, 0.80, 0.05, 0.25, 0.9],  # credible interval entirely below: disagree
            [0.30, 0.80, 0.05, 0.50, 0.9],  # overlap, posterior mean may be outside: agree
            [0.01, 0.10, 0.12, 0.20, 0.1],  # credible interval entirely above: disagree
            [0.30, 0.80, 0.80, 0.90, 0.1],  # touching at 0.80: overlap, agree
        ]
    )
    assert _findings(table)["estimates disagree"] == ("a", "c")


def test_strong_shrinkage_needs_half_the_weight_and_half_the_width():
    table = _table(
        [
            [0.2, 0.6, 0.30, 0.39, 0.50],  # shrinkage 0.5, width ratio 0.225: fires
            [0.2, 0.6, 0.30, 0.39, 0.49],  # shrinkage below 0.5: no
            [0.2, 0.6, 0.30, 0.50, 0.90],  # width ratio exactly 0.5: no
            [0.2, 0.6, 0.30, 0.49, 0.99],  # width ratio 0.475: fires
        ]
    )
    assert _findings(table)["strong shrinkage"] == ("a", "d")


def test_model_check_flags_the_strata_the_check_singles_out():
    table = _table([[0.2, 0.6, 0.3, 0.5, 0.1]] * 3)
    assert _findings(table, [False, True, False])["model check"] == ("b",)


def test_report_and_finding_are_results():
    rep = evaluate(Counts.from_arrays([0, 5], [40, 50], strata=["a", "b"]), random_seed=0)
    assert isinstance(rep, Report) and isinstance(rep, Result)
    assert rep.to_frame()["stratum"].tolist() == ["a", "b"]  # the report's own tidy frame
    finding = next(f for f in rep.findings if f.flag == "rate 0")
    assert isinstance(finding, Finding) and isinstance(finding, Result)
    assert finding.table.to_dict("list") == {
        "flag": ["rate 0"],
        "stratum": ["a"],
        "message": [finding.message],
        "severity": [finding.severity],
    }
    general = Finding("composition", (), "text", "note")
    assert general.table["stratum"].tolist() == [None]
    assert "composition" in repr(general)


def test_no_model_check_for_ordinary_strata_of_many_trials():
    # five ordinary strata (rates 0.67-0.84): the cross-validated predictive check used to
    # give the third (1,180 of 1,411) a predictive of 76-114 and p = 0, and the report told
    # the user to distrust the pooled model; the check itself is tested against a brute-force
    # leave-one-out fit in tests/checks/test_predictive.py. Same counts times 10.
    s, n = np.array([755, 8, 1180, 1418, 325]), np.array([1018, 12, 1411, 1764, 449])
    for factor in (1, 10):
        rep = evaluate(Counts.from_arrays(s * factor, n * factor), random_seed=0)
        assert "model check" not in [f.flag for f in rep.findings]
        assert not rep.table["flags"].str.contains("model check").any()
