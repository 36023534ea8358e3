"""A Modin frame through the narwhals back end: ``tabulate``, ``evaluate`` and ``audit`` give the pandas frame's
Counts, units, reports and audits on the same rows, and its messages.

Modin pins pandas below 2.4, so it cannot be installed beside the pandas 3 of the ``dev`` extra: these tests
are skipped there and run where Modin is installed (with pandas 2.x; Modin's single-process ``python``
engine, no Ray or Dask cluster). Self-contained (no polars), so that such an environment needs only the
package's own dependencies and Modin.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest

import bayeseval
from bayeseval import Design, tabulate
from bayeseval._backends.dispatch import backend_for

os.environ.setdefault("MODIN_ENGINE", "python")  # one process: no Ray, no Dask cluster
mpd = pytest.importorskip("modin.pandas")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # Modin's "defaulting to pandas" notes


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(29)
    n = 1500
    y = rng.integers(0, 2, n)
    df = pd.DataFrame(
        {
            "y": y,
            "p": np.where(rng.random(n) < 0.25, 1 - y, y),
            "g": rng.choice(["north", "south", "o'hara"], n),
            "h": rng.integers(0, 3, n),
            "yc": rng.choice(["cat", "dog", "eel"], n),
            "pc": rng.choice(["cat", "dog", "eel"], n),
            "cl": rng.integers(0, 200, n),
            "graded": np.round(rng.random(n), 2),
        }
    )
    df.loc[df["g"] == "o'hara", "y"] = 0  # a stratum without positives: zero trials for recall
    df["ya"] = np.where(df["y"] == 1, "cat", "dog")
    df["pa"] = np.where(df["p"] == 1, "cat", "dog")
    return df


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _error(fn) -> str:
    with pytest.raises((ValueError, TypeError)) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()
    return f"{type(err.value).__name__}: {err.value}"


def test_a_modin_frame_goes_to_the_narwhals_back_end(frame):
    backend = backend_for(mpd.DataFrame(frame))
    assert (backend.engine, backend.implementation) == ("narwhals", "modin")


@pytest.mark.parametrize(
    "kw",
    [
        {"y_true": "y", "y_pred": "p", "strata": ["g", "h"], "metric": "recall"},
        {"y_true": "ya", "y_pred": "pa", "strata": "g", "metric": "precision", "pos_label": "cat"},
        {"y_true": "yc", "y_pred": "pc", "strata": "h", "metric": "recall"},  # one-vs-rest
        {"y_true": "y", "y_pred": "p", "strata": "g", "design": Design(cluster="cl")},
        {"outcome": "graded", "strata": "g", "design": Design(cluster="cl")},
    ],
    ids=lambda kw: "-".join(str(v) for v in kw.values()),
)
def test_counts_and_units_match_pandas(frame, kw):
    got = _quiet(lambda: tabulate(mpd.DataFrame(frame), **kw))
    expected = _quiet(lambda: tabulate(frame, **kw))
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())
    if expected.units is not None:
        pd.testing.assert_frame_equal(got.units, expected.units)


def test_evaluate_and_audit_match_pandas(frame):
    data = mpd.DataFrame(frame)
    kw = dict(y_true="y", y_pred="p", strata="h", metric="accuracy", design=Design(), random_seed=0)
    pd.testing.assert_frame_equal(bayeseval.evaluate(data, **kw).to_frame(), bayeseval.evaluate(frame, **kw).to_frame())
    kw = dict(y_true="y", y_pred="p", groups="g", metrics="selection_rate", random_seed=0)
    pd.testing.assert_frame_equal(bayeseval.audit(data, **kw).to_frame(), bayeseval.audit(frame, **kw).to_frame())


def test_errors_match_pandas(frame):
    kw = dict(y_true="ya", y_pred="pa", strata="g", metric="recall", pos_label="bird")
    assert _error(lambda: tabulate(mpd.DataFrame(frame), **kw)) == _error(lambda: tabulate(frame, **kw))
    missing = frame.astype({"y": "Int64"})
    missing.loc[[3, 8], "y"] = pd.NA
    kw = dict(y_true="y", y_pred="p", strata="g")
    assert _error(lambda: tabulate(mpd.DataFrame(missing), **kw)) == _error(lambda: tabulate(missing, **kw))
