"""Results protocol of the split and comparison results, and the keyword-only random_seed shims."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayeseval
from bayeseval._api.results import Result
from bayeseval._backends.dispatch import backend_for
from bayeseval.estimate.compare import McNemarResult, PairedBootstrap, mcnemar, paired_bootstrap
from bayeseval.plan.split import (
    DualConstraintSplit,
    RepeatedDualConstraintSplit,
    SplitResult,
    dual_constraint_split,
    key_salt,
)


def _split():
    df = pd.DataFrame({"y": np.r_[np.ones(40, int), np.zeros(360, int)]}, index=np.arange(400) * 3)
    return dual_constraint_split(df, label="y", test_size=0.25, random_seed=5)


def test_split_result_is_a_result_with_its_per_key_table():
    res = _split()
    assert isinstance(res, SplitResult) and isinstance(res, Result)
    # 25% of 40 and of 360 rows, proportional
    assert res.table["test"].to_dict() == {0: 90, 1: 10}
    frame = res.to_frame()
    frame.loc[0, "test"] = -1
    assert res.table.loc[0, "test"] == 90
    assert repr(res).splitlines()[0] == "Dual-constraint split"
    assert "<strong>Dual-constraint split</strong>" in res._repr_html_()
    assert str(res).startswith("Dual-constraint split (pandas, random_seed=5): 400 rows -> test 100")
    assert "table" in {f.name for f in dataclasses.fields(res)}
    train, test = res.train, res.test  # attributes kept
    assert len(train) + len(test) == 400


def test_mcnemar_result_table_matches_scipy_binomial_test():
    rng = np.random.default_rng(0)
    a = rng.random(300) < 0.8
    b = np.where(rng.random(300) < 0.15, ~a, a)
    res = mcnemar(a, b)
    n01, n10 = int((a & ~b).sum()), int((~a & b).sum())
    ref = stats.binomtest(n01, n01 + n10, 0.5).pvalue
    assert isinstance(res, McNemarResult) and isinstance(res, Result)
    row = res.table.loc["exact"]
    assert (row["b"], row["c"], row["n"]) == (n01, n10, 300)
    assert row["pvalue"] == pytest.approx(ref, rel=1e-12)
    assert row["difference"] == pytest.approx(a.mean() - b.mean())
    assert res.table.index.name == "test"
    assert "McNemar test" in repr(res)


def test_paired_bootstrap_is_a_frozen_result_with_its_table():
    y = np.array([1, 0] * 100)
    a, b = y.copy(), y.copy()
    a[:20] = 1 - a[:20]
    b[:30] = 1 - b[:30]
    res = paired_bootstrap(y, a, b, metric="accuracy", n_resamples=500, random_seed=0)
    assert isinstance(res, PairedBootstrap) and isinstance(res, Result)
    est = res.table["estimate"]
    assert est.to_dict() == pytest.approx({"model_a": 0.9, "model_b": 0.85, "difference": 0.05})
    assert res.to_frame().columns.tolist() == ["estimate", "lower", "upper", "width"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.table = None
    assert str(res) == res.sentence
    assert repr(res).splitlines()[0] == "Paired bootstrap"


def test_bootstrap_interval_keeps_tuple_unpacking_and_gets_a_table():
    data = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    ci = bayeseval.bootstrap_ci(data, np.mean, method="percentile", n_resamples=999, random_seed=0)
    lo, hi = ci
    assert isinstance(ci, tuple) and isinstance(ci, Result)
    row = ci.table.loc["statistic"]
    assert row["estimate"] == pytest.approx(0.7)
    assert (row["lower"], row["upper"]) == (lo, hi)
    assert row["n_resamples"] == ci.distribution.size


def test_key_salt_takes_random_seed_by_keyword_only():
    with pytest.raises(TypeError):
        key_salt((1, "north"), 42)
    assert key_salt((1, "north"), random_seed=42) != key_salt((1, "north"), random_seed=43)


def test_splitters_take_random_seed_by_keyword():
    y = np.r_[np.ones(50, int), np.zeros(450, int)]
    X = np.zeros((500, 1))
    new = DualConstraintSplit(0.2, 10, random_seed=7)
    with pytest.raises(TypeError):
        DualConstraintSplit(0.2, 10, 0.3, 5.0, None, None, None, "raise", 7)
    again = DualConstraintSplit(0.2, 10, random_seed=7)
    np.testing.assert_array_equal(next(again.split(X, y))[1], next(new.split(X, y))[1])
    rep = RepeatedDualConstraintSplit(2, 0.2, 10, random_seed=7)
    assert rep.random_seed == 7 and rep.get_n_splits() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = repr(new)  # scikit-learn's repr reads the parameters through the signature
    assert "random_seed=7" in text and "n_min=10" in text


def test_backend_dispatch_refuses_other_types_naming_them():
    with pytest.raises(TypeError, match=r"data must be .* got list"):
        backend_for([1, 2])
