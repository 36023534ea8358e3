"""Results protocol, plot dispatch on result types, vocabulary shims and the command line's
start-up and help text (reports, plots, gate, CLI, datasets, PyMC diagnostics).
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

import bayeseval
from bayeseval import evaluate, fit_hierarchical, plots
from bayeseval.models import Posterior
from tests.helpers import (
    COUNTS_results_protocol_plots_cli,
    _close_figures,  # noqa: F401
)

matplotlib.use("Agg")


def _post() -> Posterior:
    return fit_hierarchical(COUNTS_results_protocol_plots_cli, random_seed=0, draws=800)


def test_plot_of_a_posterior_is_its_forest():
    post = _post()
    ax = plots.plot(post)
    diamonds = [c for c in ax.collections if c.get_label().startswith("pooled posterior")][0]
    np.testing.assert_allclose(np.sort(diamonds.get_offsets()[:, 0]), np.sort(post.summary()["mean"]))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "<c>"]
    # the overall line is the population-weighted posterior mean
    line = [ln for ln in ax.lines if ln.get_label().startswith("population-weighted")][0]
    assert line.get_xdata()[0] == pytest.approx(
        float(np.mean(post.weighted(COUNTS_results_protocol_plots_cli.weights)))
    )


def test_plot_of_a_stratified_risk_marks_the_population_estimate():
    risk = bayeseval.stratified_risk(COUNTS_results_protocol_plots_cli)
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
    rep = evaluate(COUNTS_results_protocol_plots_cli, random_seed=0)
    ax2 = rep.plot()
    assert [t.get_text() for t in ax2.get_yticklabels()] == ["a", "b", "<c>"]
    with pytest.raises(ValueError, match="'bars'"):
        rep.plot(kind="bars")


def test_plot_of_a_simulation_result_is_its_halfwidth_curve():
    from bayeseval.campaign.simulation import SimulationResult

    trace = pd.DataFrame({"rule": "uniform", "repeat": 0, "labels": [0, 10, 20], "max_halfwidth": [0.5, 0.2, 0.1]})
    res = SimulationResult(
        table=pd.DataFrame(),
        trace=trace,
        true_rates=pd.Series(dtype=float),
        intervals=pd.DataFrame(),
        settings={"target_halfwidth": 0.15},
    )
    ax = plots.plot(res)
    line = [ln for ln in ax.lines if ln.get_label() == "uniform"][0]
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.2, 0.1])
    assert [ln for ln in ax.lines if ln.get_label() == "target 0.15"]


def test_unregistered_types_are_refused_and_new_types_can_register():
    class Duck:  # looks like a Posterior to attribute sniffing, but is not one
        counts = COUNTS_results_protocol_plots_cli

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
