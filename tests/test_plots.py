"""Tests for bayeseval.plots: each function returns an Axes whose artists match its input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from bayeseval import plots  # noqa: E402
from bayeseval.counts.counts import Counts  # noqa: E402
from bayeseval.models import fit_hierarchical  # noqa: E402
from bayeseval.plan import allocate, sample_size  # noqa: E402
from bayeseval.report import evaluate  # noqa: E402

STRATA = ["north", "south", "east", "west", "centre"]


@pytest.fixture(scope="module")
def post():
    counts = Counts.from_arrays([2, 5, 9, 30, 0], [40, 50, 60, 70, 25], strata=STRATA,
                                weights=[0.3, 0.2, 0.2, 0.2, 0.1])
    return fit_hierarchical(counts, random_seed=0)


@pytest.fixture(autouse=True)
def _close_and_check_rcparams():
    before = dict(matplotlib.rcParams)
    yield
    assert dict(matplotlib.rcParams) == before, "a plot function changed rcParams"
    plt.close("all")


def _errorbars(ax):
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def _n_bars(container):
    # barlinecols[0] is the LineCollection of the error bars: one segment per point
    return len(container.lines[2][0].get_segments())


def test_forest_from_posterior(post):
    ax = plots.forest(post)
    assert [t.get_text() for t in ax.get_yticklabels()] == STRATA
    bars = _errorbars(ax)
    # raw and pooled intervals for every stratum, then the adaptive interval of the strata
    # whose summary says to read it
    reads = post.summary(read=True)["read"].to_numpy() == "adaptive"
    assert len(bars) == 2 + bool(reads.any()) and all(_n_bars(c) == len(STRATA) for c in bars[:2])
    if reads.any():
        assert _n_bars(bars[2]) == int(reads.sum())
    # raw points at the observed rates; marker area grows with trials
    raw_pts, post_pts = [c for c in ax.collections if isinstance(c, PathCollection)][:2]
    np.testing.assert_allclose(raw_pts.get_offsets()[:, 0], post.counts.rates.to_numpy())
    means = post.summary()["mean"].to_numpy()
    np.testing.assert_allclose(post_pts.get_offsets()[:, 0], means)
    sizes = raw_pts.get_sizes()
    assert np.argmax(sizes) == int(np.argmax(post.counts.trials))
    assert np.argmin(sizes) == int(np.argmin(post.counts.trials))
    # the overall line is the population-weighted posterior mean
    w = post.counts.weights
    expected = float(np.asarray(post.weighted(w)).mean())
    vlines = [ln for ln in ax.lines if len(set(ln.get_xdata())) == 1]
    assert any(np.isclose(ln.get_xdata()[0], expected) for ln in vlines)
    assert "population-weighted" in " ".join(t.get_text() for t in ax.get_legend().get_texts())


def test_forest_from_report_and_frame_with_given_ax():
    counts = Counts.from_arrays([3, 8, 1], [60, 80, 20], strata=["a", "b", "c"])
    rep = evaluate(counts, random_seed=0)
    fig, ax0 = plt.subplots()
    ax = plots.forest(rep, ax=ax0)
    assert ax is ax0
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    # the overall line is the unweighted rate when no weights are known: 12 / 160
    assert any(np.isclose(ln.get_xdata()[0], 12 / 160) for ln in ax.lines)
    ax2 = plots.forest(rep.table)
    assert all(_n_bars(c) == 3 for c in _errorbars(ax2))
    with pytest.raises(ValueError, match="posterior upper bound"):
        plots.forest(rep.table.drop(columns="pooled_upper"))
    # side-by-side layout: wilson_* are frequentist, mean/lower/upper the posterior
    side = pd.DataFrame({"trials": [10, 20], "raw_rate": [0.1, 0.2], "wilson_lower": [0.02, 0.08],
                         "wilson_upper": [0.4, 0.42], "mean": [0.15, 0.19], "lower": [0.05, 0.09],
                         "upper": [0.3, 0.33]}, index=["x", "y"])
    ax3 = plots.forest(side)
    raw_pts, post_pts = [c for c in ax3.collections if isinstance(c, PathCollection)]
    np.testing.assert_allclose(post_pts.get_offsets()[:, 0], [0.15, 0.19])
    seg = _errorbars(ax3)[1].lines[2][0].get_segments()[0]  # posterior bar of stratum x
    np.testing.assert_allclose(sorted(seg[:, 0]), [0.05, 0.3])
    with pytest.raises(TypeError):
        plots.forest([1, 2, 3])


def test_halfwidth_curve_rules_repeats_and_forecast():
    rows = [(rule, r, lab, 0.3 / np.sqrt(1 + lab / 50) + 0.01 * r)
            for rule in ("expected_width", "uniform") for r in range(5) for lab in (0, 100, 200, 300)]
    tr = pd.DataFrame(rows, columns=["rule", "repeat", "labels", "halfwidth"])
    fc = pd.DataFrame({"rule": "expected_width", "labels": [300, 400], "halfwidth": [0.1, 0.08],
                       "kind": "forecast"})
    ax = plots.halfwidth_curve(pd.concat([tr.assign(kind="observed"), fc]), target=0.05)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["expected_width", "expected_width (forecast)", "uniform", "target 0.05"]
    # each rule's line is the median over repeats at each label count
    med = tr[tr["rule"] == "uniform"].groupby("labels")["halfwidth"].median()
    line = [ln for ln in ax.lines if ln.get_label() == "uniform"][0]
    np.testing.assert_allclose(line.get_ydata(), med.to_numpy())
    assert [ln for ln in ax.lines if ln.get_label() == "expected_width (forecast)"][0].get_linestyle() == "--"
    assert len(ax.collections) == 2  # one band per rule with repeats
    target = [ln for ln in ax.lines if ln.get_label() == "target 0.05"][0]
    assert target.get_ydata()[0] == 0.05
    with pytest.raises(ValueError, match="halfwidth"):
        plots.halfwidth_curve(pd.DataFrame({"labels": [1]}))


def test_allocation_bars_equal_allocate():
    # pi = (0.8, 0.2), r = (0.05, 0.30), n = 500 -> optimal (328, 172)
    w, r = {"a": 0.8, "b": 0.2}, {"a": 0.05, "b": 0.30}
    ax = plots.allocation(total=500, weights=w, rates=r, minimum=200)
    heights = [p.get_height() for p in ax.patches]
    expected = (list(allocate(500, w, r, method="proportional"))
                + list(allocate(500, w, r, method="optimal"))
                + list(allocate(500, w, r, method="optimal", minimum=200)))
    assert heights == expected
    assert heights[2:4] == [328, 172]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "proportional", "optimal", "optimal + minimum"]
    frame = pd.DataFrame({"x": [1, 2, 3], "y": [3, 2, 1]}, index=["p", "q", "r"])
    assert len(plots.allocation(frame).patches) == 6


def test_sample_size_curve_values():
    rates = [0.5, 0.9]
    ax = plots.sample_size_curve(rates, halfwidths=[0.1, 0.05, 0.03, 0.02])
    assert len(ax.lines) == 2 and ax.get_yscale() == "log"
    # normal-formula table: 0.50 -> 97, 385, 1068, 2401; 0.90 -> 35, 139, 385, 865
    assert ax.lines[0].get_ydata().tolist() == [97, 385, 1068, 2401]
    assert ax.lines[1].get_ydata().tolist() == [35, 139, 385, 865]
    assert ax.lines[1].get_ydata()[0] == sample_size(halfwidth=0.1, rate=0.9)


def test_ppc_from_posterior_and_frame(post):
    ax = plots.ppc(post, random_seed=1)
    assert [t.get_text() for t in ax.get_xticklabels()] == STRATA
    bars = _errorbars(ax)
    assert len(bars) == 1 and _n_bars(bars[0]) == len(STRATA)
    frame = pd.DataFrame({"observed": [0.1, 0.5], "lower": [0.05, 0.1], "upper": [0.2, 0.3]},
                         index=["in", "out"])
    ax2 = plots.ppc(frame)
    pts = [c for c in ax2.collections if isinstance(c, PathCollection)][0]
    colors = [tuple(np.round(c, 3)) for c in pts.get_facecolors()]
    assert colors[0] != colors[1]  # the stratum outside its interval is drawn in another colour
    assert "outside the interval" in [t.get_text() for t in ax2.get_legend().get_texts()]


def test_coverage_nominal_line_and_groups():
    res = pd.DataFrame({"method": ["wald", "wilson", "jeffreys"] * 2,
                        "coverage": [0.90, 0.95, 0.94, 0.86, 0.94, 0.95],
                        "n_sims": 1000, "scenario": ["n=50"] * 3 + ["n=10"] * 3})
    ax = plots.coverage(res, by="scenario", nominal=0.95)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["wald", "wilson", "jeffreys"]
    nominal = [ln for ln in ax.lines if ln.get_label() == "nominal 0.95"]
    assert len(nominal) == 1 and nominal[0].get_ydata()[0] == 0.95
    bars = _errorbars(ax)
    assert len(bars) == 2 and all(_n_bars(c) == 3 for c in bars)
    # error bars are +/- 1.96 binomial SE: wald n=50 is 0.90 +/- 1.96 sqrt(0.09/1000)
    seg = bars[0].lines[2][0].get_segments()[0]
    assert seg[:, 1].min() == pytest.approx(0.90 - 1.96 * np.sqrt(0.09 / 1000))
    with pytest.raises(ValueError, match="coverage"):
        plots.coverage(pd.DataFrame({"method": ["a"]}))


def test_halfwidth_curve_accepts_simulation_results():
    from bayeseval.campaign.simulation import SimulationResult

    # runs stop at different label counts: each is held at its last value afterwards
    trace = pd.DataFrame({"rule": "uniform", "repeat": [0, 0, 0, 1, 1],
                          "labels": [0, 10, 20, 0, 10], "max_halfwidth": [0.5, 0.2, 0.1, 0.5, 0.3]})
    res = SimulationResult(table=pd.DataFrame(), trace=trace, true_rates=pd.Series(dtype=float),
                           intervals=pd.DataFrame(), settings={"target_halfwidth": 0.1})
    ax = plots.halfwidth_curve(res, logx=True)
    line = [ln for ln in ax.lines if ln.get_label() == "uniform"][0]
    # medians across the two runs: (0.5, 0.5), (0.2, 0.3), (0.1, 0.3 held)
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.25, 0.2])
    assert [ln for ln in ax.lines if ln.get_label() == "target 0.1"]
    assert ax.get_xscale() == "symlog"


def test_halfwidth_curve_from_a_campaign(tmp_path):
    from bayeseval.campaign.campaign import Campaign
    from bayeseval.datasets import make_pool

    pool = make_pool(4000, 3, rates=[0.05, 0.1, 0.2], random_seed=0)
    camp = Campaign.create(tmp_path / "c.db", pool.drop(columns=["y_true", "error"]),
                           strata="stratum", y_pred="y_pred", target_halfwidth=0.05,
                           random_seed=0)
    for _ in range(2):
        prop = camp.propose(60)
        camp.ingest(pd.Series(pool.loc[prop.index, "y_true"].to_numpy(), index=prop.index))
    ax = plots.halfwidth_curve(camp)
    observed = [ln for ln in ax.lines if ln.get_label() == "expected_width"][0]
    forecast = [ln for ln in ax.lines if ln.get_label().endswith("(forecast)")][0]
    assert observed.get_xdata().tolist() == [0, 60, 120]
    assert observed.get_ydata()[-1] == pytest.approx(camp.status()["halfwidth"].max())
    assert forecast.get_xdata()[-1] == 120 + int(camp.forecast().sum())
    assert forecast.get_ydata()[-1] == 0.05
    camp.close()


def test_ppc_from_checks_result():
    import warnings

    from bayeseval import checks

    post = fit_hierarchical([4, 6, 5, 40], [50, 50, 50, 50], random_seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = checks.posterior_predictive_check(post, random_seed=1)
    ax = plots.ppc(res)
    bars = _errorbars(ax)
    assert _n_bars(bars[0]) == 4
    # the bars span the predictive interval of the count divided by the trials
    segs = bars[0].lines[2][0].get_segments()
    np.testing.assert_allclose([s[:, 1].min() for s in segs], res.table["pred_lower"] / 50)
    np.testing.assert_allclose([s[:, 1].max() for s in segs], res.table["pred_upper"] / 50)
    pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    colors = [tuple(c) for c in pts.get_facecolors()]
    assert colors[3] != colors[0]  # the flagged stratum (40 of 50) is drawn in red
    assert "flagged by the check" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_coverage_reads_calibration_study_layout():
    # layout of checks.calibration_study: configuration, method, coverage, mean_width, mc_se
    res = pd.DataFrame({"configuration": ["exch"] * 2 + ["outlier"] * 2,
                        "method": ["wilson", "wald"] * 2, "coverage": [0.95, 0.88, 0.99, 0.86],
                        "mean_width": 0.2, "mc_se": [0.01, 0.015, 0.02, 0.015]})
    ax = plots.coverage(res)
    bars = _errorbars(ax)
    assert len(bars) == 2  # grouped by configuration without being told
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"exch", "outlier", "nominal 0.95"} <= set(labels)
    seg = bars[0].lines[2][0].get_segments()[1]  # wald, exch: 0.88 +/- 1.96 * 0.015
    assert seg[:, 1].min() == pytest.approx(0.88 - 1.96 * 0.015)
    top = bars[1].lines[2][0].get_segments()[0]  # wilson, outlier: 0.99 + 0.039 clipped at 1
    assert top[:, 1].max() == pytest.approx(1.0)


def test_forest_from_compare_frequentist(post):
    import warnings

    from bayeseval import checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        side = checks.compare_frequentist(post, weights=post.counts.weights, random_seed=0)
    ax = plots.forest(side)
    # the "weighted overall" row becomes the vertical line, not a stratum
    assert [t.get_text() for t in ax.get_yticklabels()] == STRATA
    assert any(np.isclose(ln.get_xdata()[0], side.loc["weighted overall", "pooled_mean"])
               for ln in ax.lines)
    raw_pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    np.testing.assert_allclose(raw_pts.get_offsets()[:, 0], side["raw_rate"].iloc[:-1])


def test_ppc_separates_flagged_from_merely_outside():
    # "b" is outside its interval but not flagged (the check corrects for K strata); "c" is flagged
    frame = pd.DataFrame({"successes": [5, 40, 45], "trials": [50, 50, 50],
                          "pred_lower": [2, 10, 10], "pred_upper": [10, 35, 35],
                          "flag": [False, False, True]}, index=["a", "b", "c"])
    ax = plots.ppc(frame)
    pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    np.testing.assert_allclose(pts.get_offsets()[:, 1], [0.1, 0.8, 0.9])
    colors = [tuple(np.round(c, 3)) for c in pts.get_facecolors()]
    assert len(set(colors)) == 3
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"observed rate", "flagged by the check", "outside the interval, not flagged"} <= set(labels)
