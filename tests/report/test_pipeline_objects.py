"""evaluate's settings given as objects give exactly what the lower-level functions give.

References: ``fit_hierarchical`` with the prior and engine, ``audit`` with the tolerance and minimum
trials, and ``proxy_ci`` with the label set, each called directly on the same data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import Counts, Groups, PooledModel, Proxy, audit, evaluate, fit_hierarchical, proxy_ci


def _rows(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    race = rng.choice(["x", "y"], n)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < np.where(g == "c", 0.3, 0.1), 1 - y, y)
    return pd.DataFrame({"g": g, "race": race, "y": y, "p": p})


@pytest.mark.parametrize("prior", ["bda", "default"])
def test_a_pooled_model_object_fits_the_prior_fit_hierarchical_fits(prior):
    counts = Counts.from_arrays([3, 9, 30, 5], [60, 80, 90, 40], strata=["a", "b", "c", "d"])
    rep = evaluate(counts, model=PooledModel("beta_binomial", prior=prior), level=0.9, random_seed=4)
    post = fit_hierarchical(counts, model="beta_binomial", prior=prior, engine="exact", random_seed=4)
    want = post.summary(level=0.9)
    np.testing.assert_allclose(rep.table["pooled_mean"], want["mean"].to_numpy())
    np.testing.assert_allclose(rep.table["pooled_lower"], want["lower"].to_numpy())
    np.testing.assert_allclose(rep.table["pooled_upper"], want["upper"].to_numpy())
    # a name alone is the default prior and engine
    pd.testing.assert_frame_equal(
        evaluate(counts, model="robust", random_seed=4).table,
        evaluate(counts, model=PooledModel("robust"), random_seed=4).table,
    )


def test_the_pymc_engine_is_named_with_logit_normal():
    counts = Counts.from_arrays([3, 9], [60, 80])
    with pytest.raises(ValueError, match=r"needs engine='pymc' \(model=PooledModel\('logit_normal', engine='pymc'\)\)"):
        evaluate(counts, model=PooledModel("logit_normal"))


def test_groups_object_runs_the_audit_with_its_tolerance_and_minimum_trials():
    df = _rows()
    rep = evaluate(
        df, y_true="y", y_pred="p", strata="g", groups=Groups("race", tolerance=0.04, min_trials=50), random_seed=2
    )
    direct = audit(
        df,
        y_true="y",
        y_pred="p",
        groups="race",
        metrics=["selection_rate", "tpr", "fpr", "ppv"],
        tolerance=0.04,
        min_trials=50,
        random_seed=2,
    )
    assert rep.audit.tolerance == 0.04 and rep.audit.min_trials == 50
    pd.testing.assert_frame_equal(rep.audit.verdicts, direct.verdicts)
    pd.testing.assert_frame_equal(rep.audit.groups, direct.groups)
    # the columns alone: the audit's defaults
    plain = evaluate(df, y_true="y", y_pred="p", strata="g", groups="race", random_seed=2)
    pd.testing.assert_frame_equal(
        plain.audit.verdicts,
        evaluate(df, y_true="y", y_pred="p", strata="g", groups=Groups("race"), random_seed=2).audit.verdicts,
    )


def test_a_proxy_object_carries_the_label_set_proxy_ci_takes():
    df = _rows(1500, seed=3)
    rng = np.random.default_rng(3)
    df["judge"] = np.where(rng.random(len(df)) < 0.9, df["y"], 1 - df["y"])
    df["y"] = df["y"].astype(float)
    df.loc[rng.random(len(df)) < 0.7, "y"] = np.nan  # 30% labelled
    df.loc[df.index[:2], "y"] = 2.0  # a class neither the model nor the judge gives
    with pytest.raises(ValueError, match="label_set"):
        evaluate(df, y_true="y", y_pred="p", strata="g", proxy="judge", random_seed=0)
    rep = evaluate(df, y_true="y", y_pred="p", strata="g", proxy=Proxy("judge", label_set=[0, 1, 2]), random_seed=0)
    direct = proxy_ci(df, y_true="y", y_pred="p", proxy="judge", strata="g", label_set=[0, 1, 2])
    np.testing.assert_allclose(rep.table["lower"], direct.table["lower"].to_numpy())
    np.testing.assert_allclose(rep.table["upper"], direct.table["upper"].to_numpy())


def test_audit_takes_a_proxy_object_and_a_pooled_model_with_the_defaults():
    df = _rows()
    kw = {"y_true": "y", "y_pred": "p", "groups": "race", "metrics": ["selection_rate"], "random_seed": 1}
    pd.testing.assert_frame_equal(
        audit(df, model=PooledModel("beta_binomial"), **kw).groups, audit(df, model="beta_binomial", **kw).groups
    )
    with pytest.raises(ValueError, match=r"model.prior='bda': the audit fits its pooled models with their default"):
        audit(df, model=PooledModel("robust", prior="bda"), **kw)
    with pytest.raises(ValueError, match=r"model.engine='pymc'"):
        audit(df, model=PooledModel("robust", engine="pymc"), **kw)
    with pytest.raises(TypeError, match="label_set given twice"):
        audit(df, proxy=Proxy("p", label_set=[0, 1]), label_set=[0, 1], **kw)
