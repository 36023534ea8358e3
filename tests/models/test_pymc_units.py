"""Tests of the pooled model over units sampled by PyMC (bayeseval.models.pymc_units).

Reference: the exact engine (:mod:`bayeseval.models.exact_units`), which integrates the same
posterior on grids, an independent computation of the same model.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayeseval as be
from bayeseval.models.exact_units import fit_exact_units
from bayeseval.models.pymc_units import fit_pymc_units
from tests.helpers import assert_raises_naming


def _answers(seed: int = 0) -> pd.DataFrame:
    """6 strata of 20 items answered 4 times; item accuracy Beta around the stratum's rate (correlation 0.25)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(6):
        p = 0.7 + 0.04 * s
        for i in range(20):
            q = rng.beta(p * 3, (1 - p) * 3)
            rows += [(f"s{s}", f"{s}_{i}", int(rng.random() < q)) for _ in range(4)]
    return pd.DataFrame(rows, columns=["cat", "item", "ok"])


@pytest.mark.slow
def test_pymc_samples_the_posterior_the_exact_engine_integrates():
    counts = be.tabulate(_answers(), outcome="ok", strata="cat", design=be.Design(cluster="item"))
    exact = fit_exact_units(counts, random_seed=0).summary()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fit_pymc_units(counts, random_seed=0)
    sampled = post.summary()
    assert post.engine == "pymc" and post.model == "units"
    assert post.diagnostics["ok"], post.diagnostics
    # 4,000 draws: Monte Carlo error of a mean about 0.001, of a 2.5% quantile about 0.004
    np.testing.assert_allclose(sampled["mean"], exact["mean"], atol=0.004)
    np.testing.assert_allclose(sampled["lower"], exact["lower"], atol=0.012)
    np.testing.assert_allclose(sampled["upper"], exact["upper"], atol=0.012)
    rho = fit_exact_units(counts, random_seed=0).diagnostics["correlation"]
    assert post.diagnostics["correlation"] == pytest.approx(rho, abs=0.02)
    # through evaluate: engine="pymc" under units reads this model, and says so
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = be.evaluate(
            _answers(),
            outcome="ok",
            strata="cat",
            metric="accuracy",
            guarantee="average",
            model=be.PooledModel("beta_binomial", engine="pymc"),
            design=be.Design(cluster="item"),
            random_seed=0,
        )
    np.testing.assert_allclose(rep.table["pooled_mean"], exact["mean"].to_numpy(), atol=0.004)
    assert any("sampled by PyMC" in n for n in rep.notes)


def test_an_improper_prior_and_other_objects_are_refused():
    counts = be.tabulate(_answers(), outcome="ok", strata="cat", design=be.Design(cluster="item"))
    with pytest.raises(ValueError, match="prior='bda' is improper"):
        fit_pymc_units(counts, prior="bda")
    assert_raises_naming(fit_pymc_units, "counts", "not counts")
