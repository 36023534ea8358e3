"""The audit's pooled model for crossed groups, and groups left out of the max-min gap.

References: the crossed fit called directly (:func:`bayeseval.fit_crossed`), the exchangeable
fit (:func:`bayeseval.fit_hierarchical`), an additive logistic regression of the other cells
(statsmodels) for the direction a small cell should move, Clopper-Pearson intervals from
statsmodels for the gap among the groups kept, and seeded Monte Carlo tolerances for draws.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.stats.proportion import proportion_confint

from bayeseval import fit_crossed, fit_hierarchical, tabulate
from bayeseval._api.warnings import EmptyStratumWarning
from bayeseval.cli.audit import run_audit
from bayeseval.datasets import load_compas
from bayeseval.fairness.audits import audit

SMALL = ("a4", "b1")


def _logit_cells(small: tuple[int, int]) -> pd.DataFrame:
    """4 x 3 cells, 60 rows each, logit = -1.5 + 1.5 [A = a4] + 1.5 [B = b1]; (a4, b1) small.

    Row a4 and column b1 are high (0.5), the other cells low (0.18), so the additive
    prediction for (a4, b1) is high (0.82) while the overall rate is about 0.33.
    """
    rows = []
    for a in ("a1", "a2", "a3", "a4"):
        for b in ("b1", "b2", "b3"):
            eta = -1.5 + 1.5 * (a == "a4") + 1.5 * (b == "b1")
            s, n = small if (a, b) == SMALL else (int(round(60 / (1 + np.exp(-eta)))), 60)
            rows += [(a, b, 1, 1)] * s + [(a, b, 0, 0)] * (n - s)
    return pd.DataFrame(rows, columns=["A", "B", "y", "p"])


def _additive_prediction(df: pd.DataFrame) -> float:
    """Main-effects logistic regression on the other cells, predicted at (a4, b1)."""
    rest = df[~((df["A"] == SMALL[0]) & (df["B"] == SMALL[1]))]
    glm = smf.glm("p ~ A + B", data=rest, family=sm.families.Binomial()).fit()
    return float(glm.predict(pd.DataFrame({"A": [SMALL[0]], "B": [SMALL[1]]})).iloc[0])


def _audit(df, **kw):
    return audit(df, y_true="y", y_pred="p", groups=["A", "B"], metrics="selection_rate",
                 random_seed=0, **kw)


@pytest.fixture(scope="module")
def compas():
    return load_compas()


def test_compas_pooled_column_is_fit_crossed(compas):
    cols = ["race", "sex", "age_cat"]
    res = audit(compas, y_true="two_year_recid", y_pred="predicted_recid", groups=cols,
                metrics="tpr", random_seed=0)
    assert res.model == "crossed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyStratumWarning)
        counts = tabulate(compas, y_true="two_year_recid", y_pred="predicted_recid", strata=cols,
                          metric="recall")
    direct = fit_crossed(counts, factors=cols, random_seed=1).table
    direct.index = [" | ".join(k) for k in direct.index]
    got = res.groups.set_index("group")
    assert len(got) == len(direct) == 36   # 6 races x 2 sexes x 3 ages, empty cells included
    for ours, theirs in (("pooled_mean", "mean"), ("pooled_lower", "lower"), ("pooled_upper", "upper")):
        assert np.allclose(got.loc[direct.index, ours], direct[theirs], atol=1e-12, rtol=0), ours
    assert (got.loc[direct.index, "predicted"].to_numpy() == direct["predicted"].to_numpy()).all()
    # the young Asian men (3 of 3 positives flagged): the crossed fit is not pulled to the
    # overall TPR (0.63 over all defendants) but follows the young cells of every race
    young = got.loc["Asian | Male | Less than 25"]
    overall = float(compas.loc[compas["two_year_recid"] == 1, "predicted_recid"].mean())
    assert young["pooled_mean"] > overall + 0.05


def test_small_cell_borrows_from_its_levels_not_the_grand_mean():
    df = _logit_cells((2, 4))                       # raw 0.5 in a high row and a high column
    crossed, exchangeable = _audit(df), _audit(df, model="robust")
    assert (crossed.model, exchangeable.model) == ("crossed", "robust")
    additive = _additive_prediction(df)             # 0.82
    overall = float(df["p"].mean())                 # 0.33
    c = crossed.groups.set_index("group").loc["a4 | b1"]
    e = exchangeable.groups.set_index("group").loc["a4 | b1"]
    assert c["rate"] == 0.5 and overall < 0.4 and additive > 0.75
    # pulled up, toward the additive prediction of its row and column ...
    assert c["rate"] + 0.1 < c["pooled_mean"] < additive
    # ... where the exchangeable model pulls it down, toward the overall rate
    assert overall < e["pooled_mean"] < c["rate"]


def test_empty_cell_prediction_follows_its_levels_and_is_labelled():
    df = _logit_cells((0, 0))
    crossed, exchangeable = _audit(df), _audit(df, model="robust")
    c = crossed.groups.set_index("group").loc["a4 | b1"]
    e = exchangeable.groups.set_index("group").loc["a4 | b1"]
    assert c["empty"] and c["predicted"] and not c["in_gap"] and np.isnan(c["rate"])
    assert c["pooled_mean"] > 0.6 and e["pooled_mean"] < 0.45
    diff = crossed.disparities.set_index(["measure", "group"]).loc[("difference", "a4 | b1")]
    assert diff["predicted"] and np.isnan(diff["estimate"]) and diff["posterior_mean"] > 0.15


def test_plot_draws_the_crossed_prediction_distinctly():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    res = _audit(_logit_cells((0, 0)))
    ax = disparities(res)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert f"selection_rate: a4 | b1 - {res.reference['selection_rate']} (predicted, no data)" in labels
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    row = res.disparities.set_index(["measure", "group"]).loc[("difference", "a4 | b1")]
    assert len(dashed) == 1
    assert tuple(dashed[0].get_xdata()) == (row["posterior_lower"], row["posterior_upper"])


def test_posterior_disparities_come_from_the_crossed_draws():
    df = _logit_cells((2, 4))
    res = _audit(df, tolerance=0.2, min_trials=1)
    counts = tabulate(df, y_true="y", y_pred="p", strata=["A", "B"], metric="selection_rate")
    fit = fit_crossed(counts, factors=["A", "B"], random_seed=123, draws=20_000)
    labels = [" | ".join(k) for k in fit.table.index]
    theta = fit.posterior.theta
    diff = theta[:, labels.index("a4 | b1")] - theta[:, labels.index(res.reference["selection_rate"])]
    gap = theta.max(axis=1) - theta.min(axis=1)
    d = res.disparities.set_index(["measure", "group"])
    # 4,000 draws in the audit: Monte Carlo error of a 2.5% quantile about 0.01
    for key, draws in ((("difference", "a4 | b1"), diff), (("max-min gap", "all measured"), gap)):
        row = d.loc[key]
        lo, hi = np.quantile(draws, [0.025, 0.975])
        assert row["posterior_mean"] == pytest.approx(draws.mean(), abs=0.01)
        assert (row["posterior_lower"], row["posterior_upper"]) == pytest.approx((lo, hi), abs=0.03)
    assert d.loc[("max-min gap", "all measured"), "p_exceeds"] == pytest.approx(np.mean(gap > 0.2), abs=0.02)
    # the exchangeable fit gives a clearly different difference (not the same draws)
    other = _audit(df, model="robust").disparities.set_index(["measure", "group"])
    assert abs(other.loc[("difference", "a4 | b1"), "posterior_mean"] - diff.mean()) > 0.2


def test_one_group_column_keeps_the_robust_exchangeable_model():
    df = _logit_cells((2, 4))
    res = audit(df, y_true="y", y_pred="p", groups="A", metrics="selection_rate", random_seed=0)
    assert res.model == "robust"
    counts = tabulate(df, y_true="y", y_pred="p", strata="A", metric="selection_rate")
    direct = fit_hierarchical(counts, model="robust", random_seed=5).summary(0.95)
    got = res.groups.set_index("group")
    # exact-engine summaries: the same up to the quadrature (no draws involved)
    assert np.allclose(got.loc[direct.index.astype(str), "pooled_mean"], direct["mean"], atol=2e-3)
    assert "robust Beta-binomial" in res.settings and "crossed" in _audit(df).settings


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"model": "bogus"}, ValueError, "unknown model 'bogus'"),
        ({"model": 3}, TypeError, "model must be a string.*got 3"),
        ({"min_trials": 0}, ValueError, "min_trials must be an integer >= 1, got 0"),
        ({"min_trials": 2.5}, TypeError, "min_trials must be an integer >= 1, got 2.5"),
    ],
)
def test_bad_model_and_min_trials(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        _audit(_logit_cells((2, 4)), **kwargs)


def test_crossed_model_needs_two_group_columns():
    with pytest.raises(ValueError, match="model='crossed'.*needs at least two; got 1 group column"):
        audit(_logit_cells((2, 4)), y_true="y", y_pred="p", groups="A", model="crossed")


# --------------------------------------------------------------------------- min_trials


def _three_groups() -> pd.DataFrame:
    """a: 150 of 500 selected, b: 175 of 500, c: 3 of 3 (a tiny group at the edge)."""
    rows = []
    for g, s, n in (("a", 150, 500), ("b", 175, 500), ("c", 3, 3)):
        rows += [(g, 1, 1)] * s + [(g, 0, 0)] * (n - s)
    return pd.DataFrame(rows, columns=["g", "y", "p"])


def _cp_gap(groups, level=0.95):
    """Gap interval projected from Bonferroni Clopper-Pearson intervals (statsmodels)."""
    alpha = (1 - level) / len(groups)
    bounds = [proportion_confint(s, n, alpha=alpha, method="beta") for s, n in groups]
    lo, hi = np.array(bounds).T
    return max(0.0, lo.max() - hi.min()), hi.max() - lo.min()


def test_min_trials_leaves_tiny_groups_out_of_the_gap_and_the_verdict():
    df = _three_groups()
    kw = dict(y_true="y", y_pred="p", groups="g", metrics="selection_rate", tolerance=0.2,
              random_seed=0, method="bonferroni")
    every, kept = audit(df, min_trials=1, **kw), audit(df, min_trials=10, **kw)
    gap_all = every.disparities.set_index("measure").loc["max-min gap"]
    gap_kept = kept.disparities.set_index("measure").loc["max-min gap"]
    # every group: c (3 of 3) sets the gap, and its interval reaches far up
    assert gap_all["estimate"] == pytest.approx(0.7)
    assert (gap_all["lower"], gap_all["upper"]) == pytest.approx(
        _cp_gap([(150, 500), (175, 500), (3, 3)]), abs=1e-9)
    assert every.verdicts["verdict"].tolist() == ["undecided"]
    # the headline gap is set by a group under 30 trials: the verdict says so
    assert every.verdicts["high"].tolist() == ["c"] and every.verdicts["low"].tolist() == ["a"]
    assert "fewer than 30 trials: 'c' (3 trials)" in every.verdicts["note"].iloc[0]
    # min_trials=10: the gap between a and b, decided within 0.2
    assert gap_kept["estimate"] == pytest.approx(0.05)
    assert (gap_kept["lower"], gap_kept["upper"]) == pytest.approx(
        _cp_gap([(150, 500), (175, 500)]), abs=1e-9)
    assert gap_kept["group"] == "2 of 3 measured (>= 10 trials)"
    assert kept.verdicts["verdict"].tolist() == ["within tolerance"]
    # c stays in the groups table, flagged, and a note names it
    table = kept.groups.set_index("group")
    assert table.loc["c", "trials"] == 3 and not table.loc["c", "in_gap"]
    assert table.loc[["a", "b"], "in_gap"].all()
    assert kept.notes == ["selection_rate: 1 group(s) with fewer than 10 trials are reported but "
                          "left out of the max-min gap and the verdicts (min_trials=10): 'c' (3 trials)."]
    # the posterior gap is over the same two groups: |theta_a - theta_b|, about 0.05
    assert gap_kept["posterior_mean"] == pytest.approx(0.05, abs=0.03)
    assert gap_kept["posterior_upper"] < 0.2 < gap_all["posterior_upper"]


def test_min_trials_and_model_on_the_command_line(tmp_path):
    path = tmp_path / "p.csv"
    _three_groups().to_csv(path, index=False)
    args = argparse.Namespace(data=str(path), y_true="y", y_pred="p", groups="g",
                              metrics="selection_rate", reference=None, tolerance=0.2, level=0.95,
                              pos_label=None, seed=0, json=True, model="beta_binomial", min_trials=10)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_audit(args)
    got = json.loads(out.getvalue())
    assert code == 0 and got["model"] == "beta_binomial" and got["min_trials"] == 10
    assert [v["verdict"] for v in got["verdicts"]] == ["within tolerance"]


def test_plot_labels_the_gap_over_the_groups_kept():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval.plots import disparities

    res = audit(_three_groups(), y_true="y", y_pred="p", groups="g", metrics="selection_rate",
                min_trials=10, random_seed=0)
    labels = [t.get_text() for t in disparities(res).get_yticklabels()]
    assert labels[-1] == "selection_rate: max-min gap, 2 of 3 measured (>= 10 trials)"
    assert "selection_rate: c - a" in labels   # c stays among the differences
