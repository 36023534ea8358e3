"""Results protocol, plot dispatch on result types, vocabulary shims and the command line's
start-up and help text (reports, plots, gate, CLI, datasets, PyMC diagnostics)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

import bayeseval  # noqa: E402
from bayeseval import Counts, datasets, plots  # noqa: E402
from bayeseval._api.results import Result  # noqa: E402
from bayeseval._api.warnings import ConvergenceWarning  # noqa: E402
from bayeseval.cli import io as cli_io  # noqa: E402
from bayeseval.cli import main as cli
from bayeseval.models import Posterior, fit_hierarchical  # noqa: E402
from bayeseval.report import Finding, Report, evaluate  # noqa: E402
from bayeseval.report.gates import GateResult, gate  # noqa: E402

ROOT = Path(bayeseval.__file__).resolve().parent.parent
COUNTS = Counts.from_arrays([3, 5, 9], [40, 50, 60], strata=["a", "b", "<c>"], weights=[0.5, 0.3, 0.2])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


# -- results protocol -----------------------------------------------------------------------------
def test_gate_result_has_a_tidy_table_and_text():
    res = gate(COUNTS, max_halfwidth=0.087, guarantee="average")
    assert isinstance(res, Result) and isinstance(res, GateResult)
    # the half-widths are the Wilson intervals of statsmodels (the default under "average")
    lo, hi = proportion_confint([3, 5, 9], [40, 50, 60], alpha=0.05, method="wilson")
    np.testing.assert_allclose(res.table["halfwidth"], (hi - lo) / 2, rtol=1e-10)
    expected = (hi - lo) / 2 <= 0.087
    assert expected.tolist() == [True, True, False]
    assert res.table["passed"].tolist() == expected.tolist()
    assert res.to_frame().equals(res.table) and res.to_frame() is not res.table
    text = res.to_text()
    assert text.startswith(f"FAILED: {int((~expected).sum())} of 3 strata")
    assert str(res) == text
    # user text is escaped in the notebook display
    html = res._repr_html_()
    assert "&lt;c&gt;" in html and "<c>" not in html
    assert "failed (" in repr(res).splitlines()[0]


def test_report_and_finding_are_results():
    rep = evaluate(Counts.from_arrays([0, 5], [40, 50], strata=["a", "b"]), random_seed=0)
    assert isinstance(rep, Report) and isinstance(rep, Result)
    assert rep.to_frame()["stratum"].tolist() == ["a", "b"]  # the report's own tidy frame
    finding = next(f for f in rep.findings if f.flag == "rate 0")
    assert isinstance(finding, Finding) and isinstance(finding, Result)
    assert finding.table.to_dict("list") == {
        "flag": ["rate 0"], "stratum": ["a"], "message": [finding.message], "severity": [finding.severity]
    }
    general = Finding("composition", (), "text", "note")
    assert general.table["stratum"].tolist() == [None]
    assert "composition" in repr(general)


def test_a_dataclass_field_can_be_the_table():
    from dataclasses import dataclass

    @dataclass(repr=False)
    class Rates(Result):
        table: pd.DataFrame
        level: float

    r = Rates(pd.DataFrame({"rate": [0.25]}), 0.9)
    assert r.to_frame()["rate"].tolist() == [0.25] and r.level == 0.9

    class Missing(Result):
        pass

    with pytest.raises(NotImplementedError, match="Missing"):
        Missing().to_frame()


# -- plots dispatch on types --------------------------------------------------------------------
def _post() -> Posterior:
    return fit_hierarchical(COUNTS, random_seed=0, draws=800)


def test_plot_of_a_posterior_is_its_forest():
    post = _post()
    ax = plots.plot(post)
    diamonds = [c for c in ax.collections if c.get_label().startswith("pooled posterior")][0]
    np.testing.assert_allclose(np.sort(diamonds.get_offsets()[:, 0]), np.sort(post.summary()["mean"]))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "<c>"]
    # the overall line is the population-weighted posterior mean
    line = [ln for ln in ax.lines if ln.get_label().startswith("population-weighted")][0]
    assert line.get_xdata()[0] == pytest.approx(float(np.mean(post.weighted(COUNTS.weights))))


def test_plot_of_a_stratified_risk_marks_the_population_estimate():
    risk = bayeseval.stratified_risk(COUNTS)
    ax = plots.plot(risk)
    by_hand = 0.5 * 3 / 40 + 0.3 * 5 / 50 + 0.2 * 9 / 60
    line = [ln for ln in ax.lines if ln.get_label().startswith("population estimate")][0]
    assert line.get_xdata()[0] == pytest.approx(by_hand)
    points = ax.collections[-1].get_offsets()[:, 0]
    np.testing.assert_allclose(points, [3 / 40, 5 / 50, 9 / 60])


def test_plot_of_a_ppc_result_and_of_a_report():
    from bayeseval.checks import posterior_predictive_check

    post = _post()
    res = posterior_predictive_check(post, random_seed=0)
    ax = plots.plot(res)
    assert ax.get_title() == "posterior predictive check"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "<c>"]
    rep = evaluate(COUNTS, random_seed=0)
    ax2 = rep.plot()
    assert [t.get_text() for t in ax2.get_yticklabels()] == ["a", "b", "<c>"]
    with pytest.raises(ValueError, match="'bars'"):
        rep.plot(kind="bars")


def test_plot_of_a_simulation_result_is_its_halfwidth_curve():
    from bayeseval.campaign.simulation import SimulationResult

    trace = pd.DataFrame({"rule": "uniform", "repeat": 0, "labels": [0, 10, 20],
                          "max_halfwidth": [0.5, 0.2, 0.1]})
    res = SimulationResult(table=pd.DataFrame(), trace=trace, true_rates=pd.Series(dtype=float),
                           intervals=pd.DataFrame(), settings={"target_halfwidth": 0.15})
    ax = plots.plot(res)
    line = [ln for ln in ax.lines if ln.get_label() == "uniform"][0]
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.2, 0.1])
    assert [ln for ln in ax.lines if ln.get_label() == "target 0.15"]


def test_unregistered_types_are_refused_and_new_types_can_register():
    class Duck:  # looks like a Posterior to attribute sniffing, but is not one
        counts = COUNTS

        def summary(self, level=0.95):
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="Duck"):
        plots.plot(Duck())
    with pytest.raises(TypeError, match="Duck"):
        plots.forest(Duck())
    with pytest.raises(TypeError, match="Duck"):
        plots.ppc(Duck())

    class Custom:
        pass

    @plots.plot.register(Custom)
    def _draw(obj, ax=None):
        return "drawn"

    assert plots.plot(Custom()) == "drawn"


def test_a_subclass_of_a_result_type_dispatches_like_its_base():
    post = _post()

    class MyPosterior(Posterior):
        pass

    post.__class__ = MyPosterior
    ax = plots.plot(post)
    assert len(ax.get_yticklabels()) == 3


def test_importing_plots_loads_no_result_module():
    out = _run(
        "import sys, bayeseval.plots; "
        "print(sorted(m for m in ('bayeseval.report.report', 'bayeseval.checks', 'bayeseval.campaign', "
        "'bayeseval.estimate.stratified', 'bayeseval.models', 'matplotlib.pyplot') if m in sys.modules))"
    )
    assert out == "[]"


# -- command line --------------------------------------------------------------------------------
def _all_parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_parsers(sub)


def test_help_never_shows_a_none_default_nor_two_defaults():
    parsers = list(_all_parsers(cli.build_parser()))
    assert len(parsers) > 8  # every command and the campaign sub-commands
    for parser in parsers:
        text = parser.format_help()
        assert "(default: None)" not in text, parser.prog
        assert "(default: False)" not in text, parser.prog
        for action in parser._actions:
            if action.help and action.option_strings:
                rendered = parser._get_formatter()._expand_help(action)
                # a default is stated once: "(default: X)" or "default X" in the text, not both
                stated = rendered.lower().count("(default:") + rendered.lower().count("default ")
                assert stated <= 1, (parser.prog, rendered)
    plan = cli.build_parser().parse_args(["plan", "--halfwidth", "0.1"])
    assert plan.rate is None  # the rate's default is stated once, in words
    level_help = [a for a in parsers[2]._actions if "--level" in a.option_strings][0]
    assert "(default: 0.95)" in parsers[2]._get_formatter()._expand_help(level_help)


def test_gate_methods_of_the_parser_are_proportion_cis():
    from bayeseval.estimate.intervals import PROPORTION_METHODS

    assert cli.PROPORTION_METHODS == PROPORTION_METHODS


def test_help_and_import_load_neither_pandas_nor_scipy():
    out = _run(
        "import sys, contextlib, io\n"
        "import bayeseval\n"
        "before = sorted(m for m in ('pandas', 'scipy', 'numpy') if m in sys.modules)\n"
        "from bayeseval.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as buf:\n"
        "    code = main(['--help'])\n"
        "after = sorted(m for m in ('pandas', 'scipy', 'bayeseval.campaign') if m in sys.modules)\n"
        "print(before, code, 'campaign' in buf.getvalue(), after)"
    )
    assert out == "[] 0 True []"


def test_the_campaign_command_is_registered_when_it_is_called(capsys):
    assert cli.main(["campaign", "--help"]) == 0
    assert "propose" in capsys.readouterr().out
    assert cli.main(["campaign", "no-such-step"]) == 2
    assert "no-such-step" in capsys.readouterr().err


def test_read_table_names_the_option_and_the_file(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"--pool file .*e\.csv.* is empty"):
        cli_io.read_table(str(empty), name="--pool")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match=r"data file .*x\.json.* unsupported file type '\.json'"):
        cli_io.read_table(str(tmp_path / "x.json"), name="data")


def test_make_pool_draws_the_strata_with_the_given_weights():
    new = datasets.make_pool(3000, 3, rates=[0.1, 0.2, 0.3], weights=[0.6, 0.3, 0.1], random_seed=4)
    assert new.attrs["weights"] == {"s1": 0.6, "s2": 0.3, "s3": 0.1}
    # the strata are drawn with these shares: 3000 rows, binomial sd about 27 for s1
    assert abs(int((new["stratum"] == "s1").sum()) - 1800) < 5 * np.sqrt(3000 * 0.6 * 0.4)
    with pytest.raises(ValueError, match=r"weights must be 2 non-negative shares.*\[0.9, 0.9\]"):
        datasets.make_pool(100, 2, weights=[0.9, 0.9])


def test_random_seed_is_keyword_only_in_the_generators():
    with pytest.raises(TypeError):
        datasets.make_fraud_scenario(1000, 0.01, 2, 7)
    a = datasets.make_fraud_scenario(1000, 0.01, 2, random_seed=7)
    pd.testing.assert_frame_equal(a, datasets.make_fraud_scenario(1000, share=0.01, n_groups=2, random_seed=7))


# -- PyMC diagnostics, against ArviZ ------------------------------------------------------------
def test_check_convergence_matches_arviz_and_names_each_failure():
    import arviz as az

    from bayeseval.models.pymc import check_convergence

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 300)) + np.array([[0.0], [0.6]])  # two chains that disagree
    diverging = np.zeros((2, 300), dtype=bool)
    diverging[0, :7] = True
    idata = az.from_dict(posterior={"x": x}, sample_stats={"diverging": diverging})
    with pytest.warns(ConvergenceWarning) as caught:
        d = check_convergence(idata, model="logit_normal")
    assert d["rhat_max"] == pytest.approx(float(az.rhat(idata)["x"]))
    assert d["ess_bulk_min"] == pytest.approx(float(az.ess(idata, method="bulk")["x"]))
    assert d["divergences"] == 7 and d["ess_threshold"] == 200
    assert "rhat" in d["failed"] and "divergences" in d["failed"] and d["ok"] is False
    messages = [str(w.message) for w in caught]
    assert any("R-hat" in m and "'x'" in m for m in messages)
    assert any("7 divergent transitions out of 600 draws" in m and "parametrization='centered'" in m
               for m in messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        good = check_convergence(az.from_dict(posterior={"x": rng.normal(size=(2, 1000))}))
    assert good["ok"] and good["failed"] == []
