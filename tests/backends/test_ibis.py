"""An Ibis table (its DuckDB back end) through the narwhals back end: ``tabulate``, ``evaluate`` and ``audit``
give the pandas frame's Counts, units, warnings, reports and audits on the same rows, and its messages.

The pandas result is the reference; test_narwhals_backend.py checks it against counts written out by hand.
Ibis is optional (the ``dev`` extra installs it): without it these tests are skipped.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayeseval
from bayeseval import Design, tabulate
from bayeseval._backends.dispatch import backend_for
from bayeseval._backends.narwhals_backend import NarwhalsBackend
from tests.backends.test_narwhals_backend import CASES, _error, _tabulate

ibis = pytest.importorskip("ibis")

#: Ibis reads a pandas option that pandas 3 deprecates: not ours to change
pytestmark = pytest.mark.filterwarnings("ignore:The 'future.infer_string' option:DeprecationWarning")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(23)
    n = 1800
    y = rng.integers(0, 2, n)
    df = pd.DataFrame(
        {
            "y": y,
            "p": np.where(rng.random(n) < 0.25, 1 - y, y),
            "g": rng.choice(["north", "south", "o'hara"], n),
            "h": rng.integers(0, 3, n),
            "yc": rng.choice(["cat", "dog", "eel"], n),
            "pc": rng.choice(["cat", "dog", "eel"], n),
            "yb": rng.integers(0, 2, n).astype(bool),
            "pb": rng.integers(0, 2, n).astype(bool),
            "yf": y.astype(float),
            "cl": rng.integers(0, 300, n),
            "graded": np.round(rng.random(n), 2),
        }
    )
    df.loc[df["g"] == "o'hara", "y"] = 0  # a stratum without positives: zero trials for recall
    df["ya"] = np.where(df["y"] == 1, "cat", "dog")  # two class names, counted with pos_label
    df["pa"] = np.where(df["p"] == 1, "cat", "dog")
    return df


def table(df: pd.DataFrame):
    return ibis.memtable(df)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def test_an_ibis_table_goes_to_the_narwhals_back_end(frame):
    backend = backend_for(table(frame))
    assert (backend.engine, backend.implementation, backend.lazy) == ("narwhals", "ibis", True)


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_counts_units_and_warnings_match_pandas(frame, kw):
    expected, w_expected = _tabulate(frame, **kw)
    got, w_got = _tabulate(table(frame), **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())
    if expected.units is None:
        assert got.units is None
    else:
        pd.testing.assert_frame_equal(got.units, expected.units)
    assert w_got == w_expected


def test_class_names_with_pos_label_match_pandas_and_the_zero_one_labels(frame, monkeypatch):
    kw = dict(y_true="ya", y_pred="pa", strata=["g", "h"], metric="recall", pos_label="cat")
    calls = []
    original = NarwhalsBackend.confusion
    monkeypatch.setattr(NarwhalsBackend, "confusion", lambda self, *a: calls.append(a) or original(self, *a))
    got = _quiet(lambda: tabulate(table(frame), **kw)).to_frame()
    assert calls == [], "the labels were not counted in one pass"
    monkeypatch.undo()
    pd.testing.assert_frame_equal(got, _quiet(lambda: tabulate(frame, **kw)).to_frame())
    zero_one = _quiet(lambda: tabulate(frame, y_true="y", y_pred="p", strata=["g", "h"], metric="recall"))
    pd.testing.assert_frame_equal(got, zero_one.to_frame())
    assert _error(tabulate, table(frame), **{**kw, "pos_label": "bird"}) == _error(
        tabulate, frame, **{**kw, "pos_label": "bird"}
    )


def test_evaluate_matches_pandas(frame):
    kw = dict(y_true="y", y_pred="p", strata="h", metric="accuracy", design=Design(), random_seed=0)
    got = bayeseval.evaluate(table(frame), **kw)
    expected = bayeseval.evaluate(frame, **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())
    named = dict(kw, y_true="ya", y_pred="pa", metric="recall", pos_label="cat", strata="g")
    got = _quiet(lambda: bayeseval.evaluate(table(frame), **named))
    pd.testing.assert_frame_equal(got.to_frame(), _quiet(lambda: bayeseval.evaluate(frame, **named)).to_frame())


def test_audit_matches_pandas(frame):
    kw = dict(y_true="y", y_pred="p", groups="g", metrics="selection_rate", random_seed=0)
    pd.testing.assert_frame_equal(
        bayeseval.audit(table(frame), **kw).to_frame(), bayeseval.audit(frame, **kw).to_frame()
    )


def test_errors_match_pandas(frame):
    missing = frame.astype({"y": "Int64"})
    missing.loc[[3, 8], "y"] = pd.NA
    assert _error(tabulate, table(missing), y_true="y", y_pred="p", strata="g") == _error(
        tabulate, missing, y_true="y", y_pred="p", strata="g"
    )
    fractional = frame.assign(p=np.where(frame.index == 4, 0.5, frame["p"]))
    assert _error(tabulate, table(fractional), y_true="y", y_pred="p") == _error(
        tabulate, fractional, y_true="y", y_pred="p"
    )
