"""Tests of ``bayeseval.counts.proxy``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval import proxy_ci, tabulate
from bayeseval._backends.pandas_backend import PandasBackend
from bayeseval.counts.proxy import tabulate_proxy
from tests.helpers import _pool, _small


def test_a_back_end_without_proxy_cells_raises_type_error():
    class NoProxy(PandasBackend):
        engine = "spark"

        def proxy_cells(self, *args, **kwargs):
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"proxy='judge' is not supported for spark data"):
        tabulate_proxy(
            NoProxy(_small()),
            y_true="y_true",
            y_pred="y_pred",
            proxy="judge",
            strata=None,
            metric="accuracy",
            pos_label=None,
        )


# -- the proxy column: one check on every path ------------------------------------------------
def _engines(df):
    import duckdb

    return {"pandas": df, "duckdb": duckdb.from_df(df)}


def _tab(data, **kw):
    args = {"y_true": "y_true", "y_pred": "y_pred", "proxy": "judge", "strata": "g", "metric": "accuracy"}
    return tabulate(data, **{**args, **kw})


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
@pytest.mark.parametrize(
    ("values", "shown", "hint"),
    [
        (lambda d: d["judge"].astype(str), "'0', '1'", "numbers stored as text"),  # "1"/"0"
        (lambda d: (0.1 + 0.8 * d["judge"]).round(1).astype(str), "'0.1', '0.9'", "numbers stored as text"),
        (lambda d: d["judge"].map({1: "yes", 0: "no"}), "'no', 'yes'", "map them to the labels"),
        (lambda d: d["judge"].map({1: "right", 0: "wrong"}), "'right', 'wrong'", "map them to the labels"),
    ],
)
def test_a_text_proxy_is_refused_naming_proxy_the_column_and_the_values(engine, values, shown, hint):
    df = _small().assign(judge=values)
    with pytest.raises(ValueError, match=r"^proxy column 'judge' holds values") as err:
        _tab(_engines(df)[engine])
    assert shown in str(err.value) and hint in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
@pytest.mark.parametrize("bad", [-np.inf, np.inf])
def test_an_infinite_score_is_refused_on_every_engine(engine, bad):
    df = _pool(size=600, seed=3)
    df.loc[df.index[[5, 40]], "score"] = bad
    with pytest.raises(
        ValueError,
        match=rf"^proxy column 'score' holds {bad} in 2 rows; a score proxy must be "
        "a finite number",
    ):
        _tab(_engines(df)[engine], proxy="score")


def _exact_cells(values, n_cells):
    """Cells of a score, by the linear-interpolation quantile edges computed in exact arithmetic."""
    from fractions import Fraction

    x = [Fraction(v) for v in values]
    xs = sorted(x)
    m = len(xs)
    edges = set()
    for k in range(1, n_cells):
        vi = Fraction((m - 1) * k, n_cells)
        lo = int(vi)  # floor: vi >= 0
        hi = min(lo + 1, m - 1)
        edges.add(xs[lo] + (xs[hi] - xs[lo]) * (vi - lo))
    below = [sum(e < v for e in edges) for v in x]
    ranks = {b: i for i, b in enumerate(sorted(set(below)))}
    return np.array([ranks[b] for b in below])


def _tricky_pool():
    big = 1.7976931348623157e308
    rng = np.random.default_rng(5)
    parts = {
        # ties on every edge: 20 rows of three values
        "ties": [0.0] * 7 + [0.5] * 6 + [1.0] * 7,
        # the float range's ends, subnormals, signed zeros: interpolation overflows
        "extremes": [-big, -big, -1e300, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 1.0, 1e300, big, big, 3.0],
        # neighbours whose interpolated edge rounds onto one of them
        "rounding": [1e16, 1e16 + 2, 1e16 + 4, 1e16 + 6, 1e16 + 8, 1e16 + 10, 1e16 + 12],
        # values a few ulps apart, where NumPy's and DuckDB's interpolated quantiles differ
        "ulps": [
            1.0000000000000007,
            1.0000000000000009,
            1.0000000000000002,
            1.0,
            1.0000000000000002,
            1.0000000000000004,
            1.0000000000000004,
            1.0,
            1.0000000000000007,
            1.0,
            1.0000000000000007,
            1.0000000000000009,
            1.0,
            1.0000000000000007,
            1.0,
            1.0000000000000004,
            1.0000000000000007,
            1.0000000000000002,
            1.0000000000000007,
            1.0000000000000004,
        ],
        # many rows, rounded scores with duplicates
        "random": np.round(rng.random(997), 2).tolist(),
    }
    g = np.repeat(list(parts), [len(v) for v in parts.values()])
    score = np.concatenate([np.asarray(v, dtype=float) for v in parts.values()])
    y_pred = rng.integers(0, 2, len(g))
    y_true = np.where(rng.random(len(g)) < 0.8, y_pred, 1 - y_pred).astype(float)
    y_true[rng.random(len(g)) < 0.5] = np.nan
    y_true[np.flatnonzero(g != "random")[::2]] = np.where(y_pred[np.flatnonzero(g != "random")[::2]] == 1, 1, 0)
    return pd.DataFrame({"g": g, "score": score, "y_pred": y_pred, "y_true": y_true}), parts


def test_score_cells_are_the_same_on_every_engine_and_match_exact_quantiles():
    df, parts = _tricky_pool()
    tables = {name: _tab(data, proxy="score").table for name, data in _engines(df).items()}
    pd.testing.assert_frame_equal(tables["pandas"], tables["duckdb"])
    for g in parts:
        part = df[df["g"] == g]
        cells = _exact_cells(part["score"].to_numpy(), 5)
        lab = part["y_true"].notna().to_numpy()
        right = (part["y_true"] == part["y_pred"]).to_numpy() & lab
        k = cells.max() + 1
        got = tables["pandas"].loc[g]
        assert got["pool_trials"].tolist() == np.bincount(cells, minlength=k).tolist(), g
        assert got["trials"].tolist() == np.bincount(cells[lab], minlength=k).tolist(), g
        assert got["successes"].tolist() == np.bincount(cells[right], minlength=k).tolist(), g


# -- a true label that no prediction or proxy takes -------------------------------------------
def _sentinel_pool(sentinel, size=2000, seed=4):
    """Accuracy about 0.89, a judge right 90% of the time, 10% labelled; the rest hold ``sentinel``."""
    rng = np.random.default_rng(seed)
    y_pred = rng.integers(0, 2, size)
    truth = np.where(rng.random(size) < 0.89, y_pred, 1 - y_pred)
    judge = np.where(rng.random(size) < 0.9, truth, 1 - truth)
    labelled = rng.random(size) < 0.1
    df = pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], size),
            "y_pred": y_pred,
            "judge": judge,
            "y_true": np.where(labelled, truth, sentinel),
        }
    )
    return df, labelled, truth


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
@pytest.mark.parametrize("sentinel", [-1, 9])
def test_a_numeric_sentinel_for_unlabelled_rows_is_refused(engine, sentinel):
    df, labelled, _ = _sentinel_pool(sentinel)
    rows = int((~labelled).sum())
    with pytest.raises(
        ValueError,
        match=rf"^y_true column 'y_true' holds {sentinel} in {rows} rows, a label that "
        r"neither y_pred 'y_pred' nor the proxy 'judge' ever takes; .*NaN",
    ):
        _tab(_engines(df)[engine])


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_text_sentinel_for_unlabelled_rows_is_refused(engine):
    df, labelled, _ = _sentinel_pool(-1)
    names = {0: "dog", 1: "cat", -1: "unlabelled"}
    df = df.assign(**{c: df[c].map(names) for c in ("y_pred", "judge", "y_true")})
    with pytest.raises(ValueError, match=rf"holds 'unlabelled' in {int((~labelled).sum())} rows.*label_set"):
        _tab(_engines(df)[engine], pos_label="cat")


def test_a_score_proxy_does_not_vouch_for_a_sentinel():
    df, labelled, _ = _sentinel_pool(-1)
    df["score"] = np.where(labelled, 0.5, -1.0)  # the score takes -1 too: still not a label
    with pytest.raises(ValueError, match=r"holds -1 in \d+ rows, a label that y_pred 'y_pred' never takes"):
        _tab(df, proxy="score")


def test_a_declared_class_is_counted_as_a_label():
    df, labelled, truth = _sentinel_pool(2)  # class 2: real, but never predicted nor judged
    pc = _tab(df, label_set=[0, 1, 2], strata=None)
    lab = df[labelled]
    right = lab["y_true"] == lab["y_pred"]
    cell = lab["judge"] == lab["y_pred"]  # cell 1: the judge says the prediction is right
    table = pc.table.droplevel(0)
    assert table["trials"].sum() == len(df)  # every row counted as labelled, class 2 included
    assert table.loc[1, "successes"] == int((right & cell).sum())
    assert table.loc[0, "successes"] == int((right & ~cell).sum())


def test_zero_one_labels_are_known_together():
    # a model that always predicts 1 and a judge that always says 1: a true 0 is still a label
    df = pd.DataFrame({"y_pred": 1, "judge": 1, "y_true": [1.0, 0.0, 1.0, np.nan, np.nan]})
    pc = tabulate(df, y_true="y_true", y_pred="y_pred", proxy="judge", metric="accuracy")
    assert pc.table[["successes", "trials", "pool_trials"]].sum().tolist() == [2, 3, 5]


def test_label_set_needs_a_proxy_and_a_sequence():
    with pytest.raises(TypeError, match="label_set declares.*give proxy too"):
        tabulate(_small(), y_true="y_true", y_pred="y_pred", label_set=[0, 1])
    with pytest.raises(TypeError, match="label_set must be a sequence of labels, got 'ab'"):
        _tab(_small(), label_set="ab")


@pytest.mark.parametrize("design", [{"population": "pool"}, {"cluster": "g", "population": "pool"}])
def test_a_proxy_refuses_the_pool_on_every_entry(design):
    df = _small()
    with pytest.raises(ValueError, match=r"design=Design\("):
        tabulate(df, y_true="y_true", y_pred="y_pred", proxy="judge", design=design)
    with pytest.raises(ValueError, match=r"design=Design\("):
        proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge", design=design)
