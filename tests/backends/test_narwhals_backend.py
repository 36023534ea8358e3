"""The narwhals back end: polars (eager and lazy), pyarrow and Dask frames give the Counts, intervals,
errors and warnings of the pandas back end on the same rows.

The pandas result is the reference; it is itself checked against counts written out by hand.
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
from bayeseval._backends.narwhals_backend import NarwhalsBackend, pandas_frame
from bayeseval.plan.split import dual_constraint_split
from tests.backends.frames import ENGINES, pl

#: Dask warns that its narwhals support moves to a separate package: not ours to change
pytestmark = pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning")


@pytest.fixture(params=list(ENGINES))
def engine(request):
    return ENGINES[request.param]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 2400
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
            "yf": y.astype(float),  # binary labels stored as floats
            "score": np.round(rng.random(n), 3),  # ties within strata
            "cl": rng.integers(0, 400, n),  # clusters within... and across strata
            "graded": np.round(rng.random(n), 2),
            "id": rng.permutation(n) * 7 + 3,
        }
    )
    df["judge"] = np.where(rng.random(n) < 0.85, df["y"], 1 - df["y"])
    df.loc[df["g"] == "o'hara", "y"] = 0  # a stratum without positives: zero trials for recall
    return df


CASES = [
    {"metric": "error_rate"},
    {"metric": "accuracy", "strata": "g"},
    {"metric": "recall", "strata": ["g", "h"]},
    {"metric": "precision", "strata": ["h", "g"], "pos_label": 0},
    {"metric": "specificity", "y_true": "yb", "y_pred": "pb", "strata": "g"},
    {"metric": "recall", "y_true": "yc", "y_pred": "pc", "strata": "g"},  # one-vs-rest
    {"metric": "precision", "y_true": "yf", "y_pred": "p", "strata": "h"},
    {"outcome": "graded", "strata": "g"},  # graded outcomes
    {"outcome": "graded", "strata": ["g", "h"], "design": Design(cluster="cl")},
    {"metric": "error_rate", "strata": "g", "design": Design(cluster="cl")},
    {"metric": "recall", "y_true": "yc", "y_pred": "pc", "strata": "h", "design": Design(cluster="cl")},
    {"outcome": "graded", "design": Design(cluster="cl")},
]


def _tabulate(data, **kw):
    kw = kw if "outcome" in kw else {"y_true": "y", "y_pred": "p", **kw}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = tabulate(data, **kw)
    return counts, [str(w.message) for w in caught if w.category.__module__.startswith("bayeseval")]


def _error(call, *args, **kw) -> str:
    with pytest.raises((ValueError, TypeError)) as err:
        call(*args, **kw)
    return f"{type(err.value).__name__}: {err.value}"


def test_pandas_reference_matches_a_hand_count(frame):
    """The reference itself: recall per (g, h) and the units of a clustered error rate, by hand."""
    counts, _ = _tabulate(frame, metric="recall", strata=["g", "h"])
    pos = frame[frame["y"] == 1]
    for (g, h), row in counts.to_frame().iterrows():
        cell = pos[(pos["g"] == g) & (pos["h"] == h)]
        assert (row["successes"], row["trials"]) == ((cell["p"] == 1).sum(), len(cell))
    clustered, _ = _tabulate(frame, metric="error_rate", strata="g", design=Design(cluster="cl"))
    units = frame.assign(e=(frame["y"] != frame["p"]).astype(int)).groupby(["g", "cl"])["e"].agg(["sum", "size"])
    hist = units.groupby(["g", "sum", "size"]).size()
    got = clustered.units.set_index(["g", "unit_successes", "unit_trials"])["units"]
    assert sorted(zip(got.index.tolist(), got.tolist(), strict=True)) == sorted(
        ((g, float(s), int(t)), int(n)) for (g, s, t), n in hist.items()
    )


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_counts_units_and_warnings_match_pandas(frame, engine, kw):
    expected, w_expected = _tabulate(frame, **kw)
    got, w_got = _tabulate(engine(frame), **kw)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())
    assert got.metric == expected.metric
    if expected.units is None:
        assert got.units is None
    else:
        pd.testing.assert_frame_equal(got.units, expected.units)
        assert got.clusters_span_strata == expected.clusters_span_strata
    assert w_got == w_expected


def test_intervals_match_pandas(frame, engine):
    expected, _ = _tabulate(frame, metric="recall", strata="h")
    got, _ = _tabulate(engine(frame), metric="recall", strata="h")
    for method in ("wilson", "clopper_pearson"):
        lo_e, hi_e = bayeseval.proportion_ci(expected.successes, expected.trials, method=method)
        lo_g, hi_g = bayeseval.proportion_ci(got.successes, got.trials, method=method)
        np.testing.assert_array_equal(np.asarray(lo_g), np.asarray(lo_e))
        np.testing.assert_array_equal(np.asarray(hi_g), np.asarray(hi_e))


@pytest.mark.parametrize("proxy", ["judge", "score"])
def test_proxy_ci_matches_pandas(frame, engine, proxy):
    data = frame.assign(y=frame["y"].where(np.arange(len(frame)) % 4 == 0)).astype({"y": float})
    data["pi"] = 0.25
    kw = dict(y_true="y", y_pred="p", proxy=proxy, strata="g", n_cells=4)
    expected = bayeseval.proxy_ci(data, **kw).to_frame()
    got = bayeseval.proxy_ci(engine(data), **kw).to_frame()
    pd.testing.assert_frame_equal(got, expected)
    weighted = {**kw, "design": Design(inclusion="pi")}
    pd.testing.assert_frame_equal(
        bayeseval.proxy_ci(engine(data), **weighted).to_frame(), bayeseval.proxy_ci(data, **weighted).to_frame()
    )


def test_score_bins_are_the_pandas_bins(frame, engine):
    """The bins themselves (edges at order statistics, ties at an edge), not only the intervals."""
    query = bayeseval._backends.interface.CellQuery(["g"], "y", "p", "score", 5, None)
    data = frame.assign(score=np.where(np.arange(len(frame)) % 50 == 0, np.nan, frame["score"]))
    expected = backend_for(data).proxy_cells(query)
    got = NarwhalsBackend(engine(data)).proxy_cells(query)
    key = [0, "c", "t", "p"]
    expected = expected.sort_values(key).reset_index(drop=True)
    got = got.sort_values(key).reset_index(drop=True)
    np.testing.assert_array_equal(got["c"].to_numpy(float), expected["c"].to_numpy(float))
    np.testing.assert_array_equal(got["n"].to_numpy(), expected["n"].to_numpy())
    assert got[0].tolist() == expected[0].tolist()


def test_fractional_labels_refused_with_the_pandas_message(frame, engine):
    data = frame.assign(p=np.where(np.arange(len(frame)) == 17, 0.73, frame["p"]))
    data.loc[5, "p"] = 0.41  # the first in row order is named, as pandas does
    expected = _error(tabulate, data, y_true="y", y_pred="p")
    assert "y_pred column 'p' holds the fractional value 0.41" in expected
    assert _error(tabulate, engine(data), y_true="y", y_pred="p") == expected


def test_missing_labels_counted_with_the_pandas_message(frame, engine):
    data = frame.astype({"y": float})
    data.loc[[3, 9, 40], "y"] = np.nan
    expected = _error(tabulate, data, y_true="y", y_pred="p", strata="g")
    assert "has missing labels in 3 rows" in expected
    assert _error(tabulate, engine(data), y_true="y", y_pred="p", strata="g") == expected


def test_infinite_scores_in_a_proxy_refused_with_the_pandas_message(frame, engine):
    data = frame.astype({"y": float})
    data.loc[data.index % 3 != 0, "y"] = np.nan
    data.loc[[8, 30], "score"] = [-np.inf, np.inf]
    kw = dict(y_true="y", y_pred="p", proxy="score", strata="g")
    expected = _error(bayeseval.proxy_ci, data, **kw)
    assert "holds -inf in 2 rows" in expected
    assert _error(bayeseval.proxy_ci, engine(data), **kw) == expected


def test_bad_outcomes_refused_with_the_pandas_message(frame, engine):
    data = frame.copy()
    data.loc[[2, 3], "graded"] = [1.5, np.nan]
    for bad in (data.assign(graded=data["graded"].fillna(0.5)), data):
        expected = _error(tabulate, bad, outcome="graded", strata="g")
        assert _error(tabulate, engine(bad), outcome="graded", strata="g") == expected


def test_repeated_ids_warned_as_pandas(frame, engine):
    data = frame.rename(columns={"cl": "item_id"})
    _, expected = _tabulate(data, metric="error_rate", strata="g")
    assert any("rows look clustered: column 'item_id'" in m for m in expected)
    _, got = _tabulate(engine(data), metric="error_rate", strata="g")
    assert got == expected
    assert NarwhalsBackend(engine(data)).repeated_columns(["item_id", "id"]) == {
        "item_id": len(data) - data["item_id"].nunique(),
        "id": 0,
    }


def test_split_selects_the_pandas_test_rows(frame, engine):
    kw = dict(label="y", groups="g", test_size=0.2, n_min=40, id_column="id", random_seed=3)
    expected = dual_constraint_split(frame, **kw)
    got = dual_constraint_split(engine(frame), **kw)
    assert got.engine == "narwhals"
    pd.testing.assert_frame_equal(got.table, expected.table)
    test = pandas_frame(got.test)
    assert sorted(test["id"]) == sorted(expected.test["id"])
    assert len(pandas_frame(got.train)) + len(test) == len(frame)
    assert type(got.test) is type(engine(frame.head(2)))  # the input's own frame type
    pd.testing.assert_series_equal(got.test_weights.sort_index(), expected.test_weights.sort_index())
    assert "id_column is required" in _error(dual_constraint_split, engine(frame), label="y")


def test_dispatch_keeps_pandas_and_sends_other_frames_to_narwhals(frame):
    assert backend_for(frame).engine == "pandas"
    assert backend_for(pl.from_pandas(frame)).engine == "narwhals"
    assert backend_for(pl.from_pandas(frame).lazy()).engine == "narwhals"
    with pytest.raises(TypeError, match=r"data must be .*narwhals reads.* got list"):
        backend_for([1, 2])


def test_impact_ratio_report_takes_a_polars_frame(frame):
    kw = dict(groups=["g", "h"], selected="p")
    expected = bayeseval.impact_ratio_report(frame, **kw).to_frame()
    got = bayeseval.impact_ratio_report(pl.from_pandas(frame), **kw).to_frame()
    pd.testing.assert_frame_equal(got, expected)


def test_campaign_create_takes_a_polars_pool(frame, tmp_path):
    from bayeseval.campaign import Campaign

    pool = frame[["g", "p"]]
    with Campaign.create(os.path.join(tmp_path, "a.db"), pool, strata="g", y_pred="p", random_seed=1) as a:
        expected = a.propose(50)
    with Campaign.create(
        os.path.join(tmp_path, "b.db"), pl.from_pandas(pool).lazy(), strata="g", y_pred="p", random_seed=1
    ) as b:
        got = b.propose(50)
    pd.testing.assert_frame_equal(got, expected)


@pytest.mark.slow
def test_simulate_takes_a_polars_frame(frame):
    kw = dict(strata="g", y_pred="p", y_true="y", n_repeats=1, budget=200, random_seed=0, progress=False)
    expected = bayeseval.simulate(frame, **kw).table.drop(columns="wall_time")
    got = bayeseval.simulate(pl.from_pandas(frame), **kw).table.drop(columns="wall_time")
    pd.testing.assert_frame_equal(got, expected)


def test_evaluate_and_audit_take_a_polars_lazy_frame(frame):
    lazy = pl.from_pandas(frame).lazy()
    kw = dict(y_true="y", y_pred="p", strata="h", metric="accuracy", design=Design(), random_seed=0)
    pd.testing.assert_frame_equal(bayeseval.evaluate(lazy, **kw).to_frame(), bayeseval.evaluate(frame, **kw).to_frame())
    kw = dict(y_true="y", y_pred="p", groups="g", metrics="accuracy", random_seed=0)
    pd.testing.assert_frame_equal(bayeseval.audit(lazy, **kw).to_frame(), bayeseval.audit(frame, **kw).to_frame())


def test_campaign_create_takes_polars_labels(frame, tmp_path):
    from bayeseval.campaign import Campaign

    pool = frame[["g", "p"]]
    known = pd.DataFrame({"row": [0, 1, 2, 5], "label": frame["y"].iloc[[0, 1, 2, 5]].to_numpy()})
    kw = dict(strata="g", y_pred="p", random_seed=1)
    with Campaign.create(os.path.join(tmp_path, "a.db"), pool, labels=known, **kw) as a:
        expected = a.status()
    with Campaign.create(os.path.join(tmp_path, "b.db"), pl.from_pandas(pool), labels=pl.from_pandas(known), **kw) as b:
        got = b.status()
    pd.testing.assert_frame_equal(got, expected)
    assert int(got["labelled"].sum()) == 4


def test_object_labels_checked_as_pandas_does():
    """A column of Python objects (a pandas-like engine, here pandas itself through narwhals)."""
    data = pd.DataFrame({"y": pd.Series([1, 0, 1, 0], dtype=object), "p": pd.Series([1, 0.5, 0.25, 0], dtype=object)})
    expected = _error(backend_for(data).check_labels, [("y_true", "y"), ("y_pred", "p")])
    assert "y_pred column 'p' holds the fractional value 0.5" in expected
    assert _error(NarwhalsBackend(data).check_labels, [("y_true", "y"), ("y_pred", "p")]) == expected
    NarwhalsBackend(data).check_labels([("y_true", "y")])  # whole numbers pass
