"""Command line: plan states its rate and warns at the edge, plan allocate / split, --json on
every command that prints a result, report --out in every format Report.save writes."""

from __future__ import annotations

import argparse
import json
import math

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bayeseval import __version__
from bayeseval.cli import main as cli
from bayeseval.cli.main import main
from bayeseval.report.report import _WRITERS


def _wilson_halfwidth(rate, n):
    lo, hi = proportion_confint(rate * n, n, alpha=0.05, method="wilson")
    return (hi - lo) / 2


def test_plan_warns_near_the_edge_and_offers_the_wilson_size(capsys):
    assert main(["plan", "--halfwidth", "0.03", "--rate", "0.03"]) == 0
    out = capsys.readouterr().out
    # hand computation: z^2 r (1 - r) / e^2 = 1.959964^2 * 0.0291 / 0.0009 = 124.2 -> 125
    z = 1.959963984540054
    assert math.ceil(z * z * 0.03 * 0.97 / 0.03**2) == 125
    assert "trials needed per stratum: 125" in out
    # the Wilson search: the smallest n whose Wilson half-width at rate 0.03 is <= 0.03 (statsmodels)
    assert _wilson_halfwidth(0.03, 144) > 0.03 >= _wilson_halfwidth(0.03, 145)
    assert _wilson_halfwidth(0.03, 125) > 0.03
    assert "planning rate: 0.03 (from --rate)" in out
    assert "warning:" in out and "Wilson search needs 145" in out and "--method wilson" in out
    assert main(["plan", "--halfwidth", "0.03", "--rate", "0.03", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["n_per_stratum"], d["wilson_n_per_stratum"], d["assumed_rate"]) == (125, 145, 0.03)


def test_plan_states_the_assumed_rate_and_is_quiet_in_the_middle(capsys):
    assert main(["plan", "--halfwidth", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "trials needed per stratum: 385" in out  # 1.96^2 / 4 / 0.05^2 = 384.1 -> 385
    assert "planning rate: 0.5 (assumed: no --rate given" in out and "warning" not in out
    assert _wilson_halfwidth(0.5, 385) <= 0.05  # the normal size is enough for Wilson here
    assert main(["plan", "--halfwidth", "0.05", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["assumed_rate"] == 0.5 and d["rate"] is None and "warning" not in d


def test_plan_without_a_target_names_the_options(capsys):
    assert main(["plan"]) == 2
    err = capsys.readouterr().err
    assert "--halfwidth" in err and "--se" in err and len(err.strip().splitlines()) == 1


def test_plan_allocate_is_neyman_allocation(capsys):
    args = ["plan", "allocate", "--budget", "400", "--weights", '{"a": 0.7, "b": 0.3}',
            "--rates", '{"a": 0.1, "b": 0.4}', "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    # n_k proportional to pi_k sqrt(r_k (1 - r_k)): 0.7 * 0.3 = 0.21, 0.3 * sqrt(0.24) = 0.1470
    share_a = 0.21 / (0.21 + 0.3 * math.sqrt(0.24))
    assert d["allocation"] == {"a": round(400 * share_a), "b": 400 - round(400 * share_a)}
    assert d["allocation"] == {"a": 235, "b": 165}
    assert main(args[:-1]) == 0
    out = capsys.readouterr().out
    assert "a        235" in out and "b        165" in out


def test_plan_allocate_refuses_rates_keyed_unlike_weights(capsys):
    assert main(["plan", "allocate", "--budget", "10", "--weights", '{"a": 0.5, "b": 0.5}',
                 "--rates", '{"a": 0.1, "c": 0.4}']) == 2
    err = capsys.readouterr().err
    assert "--rates keys ['a', 'c']" in err and "['a', 'b']" in err
    assert main(["plan", "allocate", "--budget", "10", "--weights", '{"a": 1}',
                 "--rates", "oops"]) == 2
    assert "--rates" in capsys.readouterr().err


def test_plan_split_follows_the_decision_rule(capsys):
    base = ["plan", "split", "--n-total", "300000", "--n-test", "60000", "--share", "0.0042",
            "--n-min", "323", "--json"]
    assert main(base) == 0
    d = json.loads(capsys.readouterr().out)
    # 0.0042 * 60,000 = 252 < 323 minority rows: grow the test set to ceil(323 / 0.0042) rows,
    # 25.6% of the data, under the 30% cap
    assert d["n_minority_proportional"] == 252
    assert d["branch"] == "grow_test" and d["n_test"] == math.ceil(323 / 0.0042) == 76905
    assert main(base + ["--groups", "8"]) == 0
    d = json.loads(capsys.readouterr().out)
    # 8 x 323 = 2,584 minority rows requested, but only 0.0042 * 300,000 = 1,260 exist
    assert d["n_min_total"] == 2584 and d["n_minority_available"] == 1260
    assert d["branch"] == "degraded"
    assert main(base[:-1]) == 0
    assert "decision: grow_test" in capsys.readouterr().out
    for alias in ("split-decision", "split_decision"):
        assert main(["plan", alias, *base[2:]]) == 0
        assert json.loads(capsys.readouterr().out)["branch"] == "grow_test"


def _parsers(parser, prog=()):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for sub in action.choices.values():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from _parsers(sub)


def test_every_result_command_outside_campaign_has_json():
    parser = cli.build_parser(campaign=False)
    progs = {p.prog: p for p in _parsers(parser)}
    for prog in ("bayeseval demo", "bayeseval plan", "bayeseval plan allocate",
                 "bayeseval plan split", "bayeseval report", "bayeseval gate"):
        assert any("--json" in a.option_strings for a in progs[prog]._actions), prog


def test_version_flag(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bayeseval {__version__}"


def test_report_out_suffixes_are_the_report_writers():
    assert set(cli._REPORT_SUFFIXES) == set(_WRITERS)


@pytest.fixture
def preds(tmp_path):
    df = pd.DataFrame({"y": [1, 0] * 60, "p": [1, 0, 0, 0] * 30, "g": ["a"] * 60 + ["b"] * 60})
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".json", ".tex", ".md", ".html"])
def test_report_out_writes_every_format(preds, tmp_path, suffix, capsys):
    out = tmp_path / f"r{suffix}"
    assert main(["report", str(preds), "--y-true", "y", "--y-pred", "p", "--strata", "g",
                 "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    # reference: errors per group counted with pandas
    df = pd.read_csv(preds)
    errors = (df["y"] != df["p"]).groupby(df["g"]).sum().tolist()
    assert [r["successes"] for r in d["strata"]] == errors
    text = out.read_text()
    if suffix == ".csv":
        assert pd.read_csv(out)["successes"].tolist() == errors
    elif suffix == ".json":
        assert [r["successes"] for r in json.loads(text)["strata"]] == errors
    else:
        assert str(preds) in text.replace("\\_", "_")  # the header names the data file
