"""The sampling design object and counting under it (clusters, graded outcomes)."""

from __future__ import annotations

import inspect
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

import bayeseval as be
from bayeseval import Counts, tabulate
from bayeseval._api.warnings import ClusteredRowsWarning, EmptyStratumWarning
from bayeseval._backends import pandas_backend
from bayeseval.counts.design import Design, as_design
from bayeseval.counts.units import looks_clustered
from bayeseval.io.records import implied_design


def test_design_defaults_repr_and_equality() -> None:
    assert Design() == Design(cluster=None, inclusion=None, population="process")
    assert repr(Design()) == "Design()"
    assert repr(Design(cluster="item", population="pool")) == "Design(cluster='item', population='pool')"
    assert be.Design is Design
    assert hash(Design(cluster="item")) == hash(Design(cluster="item"))
    with pytest.raises(AttributeError):
        Design().cluster = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"cluster": 3}, TypeError, ["design.cluster", "3"]),
        ({"cluster": ""}, ValueError, ["design.cluster", "''"]),
        ({"inclusion": ["pi"]}, TypeError, ["design.inclusion", "['pi']"]),
        ({"population": "finite"}, ValueError, ["design.population", "'finite'", "'pool'"]),
    ],
)
def test_design_refuses_bad_fields_naming_them(kwargs, error, words) -> None:
    with pytest.raises(error) as info:
        Design(**kwargs)
    for w in words:
        assert w in str(info.value)


def test_as_design_accepts_none_design_and_dict_only() -> None:
    assert as_design(None) == Design()
    d = Design(cluster="item")
    assert as_design(d) is d
    assert as_design({"cluster": "item", "population": "pool"}) == Design(cluster="item", population="pool")
    with pytest.raises(TypeError, match=r"design must be a Design.*'item'"):
        as_design("item")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"design has unknown field 'clusters'"):
        as_design({"clusters": "item"})


def test_readers_imply_a_design() -> None:
    once = pd.DataFrame({"model": ["m", "m"], "task": ["t", "t"], "item": [1, 2]})
    twice = pd.DataFrame({"model": ["m", "m"], "task": ["t", "t"], "item": [1, 1]})
    assert implied_design(once) == Design()
    assert implied_design(twice) == Design(cluster="item")


# -- counting by unit ------------------------------------------------------------------------


def _answers(seed: int = 0, items: int = 300, graded: bool = False) -> pd.DataFrame:
    """Items in strata, answered 1-6 times each, with item-level accuracy (correlated answers)."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 7, items)
    item = np.repeat(np.arange(items), size)
    p_item = rng.beta(2.0, 1.0, items)[item]
    ok = (rng.random(len(item)) < p_item).astype(np.int64)
    frame = pd.DataFrame(
        {
            "item": item,
            "g": np.array(["a", "b", "c"])[item % 3],
            "h": (item // 3) % 2,
            "y": rng.integers(0, 2, len(item)),
        }
    )
    frame["p"] = np.where(ok == 1, frame["y"], 1 - frame["y"])
    frame["ok"] = rng.choice([0.0, 0.5, 1.0], len(item)) if graded else ok.astype(float)
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _reference(
    frame: pd.DataFrame, strata: list[str], cluster: str, value: pd.Series, trial: pd.Series
) -> pd.DataFrame:
    """The units' histogram by a plain pandas groupby over the rows."""
    work = frame[strata + [cluster]].assign(_v=value.to_numpy(float), _t=trial.to_numpy(np.int64))
    per = work.groupby(strata + [cluster])[["_v", "_t"]].sum()
    per = per[per["_t"] > 0].round({"_v": 9})
    hist = per.groupby(strata + ["_v", "_t"]).size().rename("units").reset_index()
    hist = hist.rename(columns={"_v": "unit_successes", "_t": "unit_trials"})
    hist["unit_trials"] = hist["unit_trials"].astype(np.int64)
    return hist.sort_values(strata + ["unit_trials", "unit_successes"]).reset_index(drop=True)


def _engines(frame: pd.DataFrame, tmp_path) -> dict:
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)
    return {"pandas": frame, "relation": duckdb.from_df(frame), "parquet": str(path)}


@pytest.mark.parametrize("graded", [False, True])
def test_outcome_units_match_a_groupby_reference_on_every_engine(tmp_path, graded) -> None:
    df = _answers(seed=1, graded=graded)
    ref = _reference(df, ["g", "h"], "item", df["ok"], pd.Series(np.ones(len(df))))
    design = Design(cluster="item")
    results = {
        name: tabulate(data, outcome="ok", strata=["g", "h"], design=design)
        for name, data in _engines(df, tmp_path).items()
    }
    for name, c in results.items():
        got = c.units.astype({"h": df["h"].dtype})
        pd.testing.assert_frame_equal(got, ref, check_dtype=False, obj=name)
        assert c.design == design and c.metric == "accuracy"
        sums = df.groupby(["g", "h"])["ok"].agg(["sum", "size"])
        np.testing.assert_allclose(c.successes.to_numpy(float), sums["sum"].to_numpy())
        assert c.trials.tolist() == sums["size"].tolist()
        assert c.n_units.tolist() == df.groupby(["g", "h"])["item"].nunique().tolist()
    pd.testing.assert_frame_equal(results["pandas"].table, results["parquet"].table, check_dtype=False)
    assert (results["pandas"].successes.dtype.kind == "f") == graded


def test_error_rate_of_outcomes_is_one_minus_the_outcome(tmp_path) -> None:
    df = _answers(seed=2, graded=True)
    for data in _engines(df, tmp_path).values():
        c = tabulate(data, outcome="ok", strata="g", metric="error_rate", design=Design(cluster="item"))
        ref = _reference(df, ["g"], "item", 1.0 - df["ok"], pd.Series(np.ones(len(df))))
        pd.testing.assert_frame_equal(c.units, ref, check_dtype=False)
        np.testing.assert_allclose(c.rates.to_numpy(), 1 - df.groupby("g")["ok"].mean().to_numpy())


@pytest.mark.parametrize("metric", ["recall", "precision", "error_rate"])
def test_label_units_match_a_groupby_reference_on_every_engine(tmp_path, metric) -> None:
    df = _answers(seed=3)
    plain = tabulate(df, y_true="y", y_pred="p", strata="g", metric=metric, design=Design())
    m = be.get_metric(metric)
    trial, success = m.masks(df["y"].to_numpy(), df["p"].to_numpy(), 1)
    ref = _reference(df, ["g"], "item", pd.Series(success), pd.Series(trial))
    for name, data in _engines(df, tmp_path).items():
        c = tabulate(data, y_true="y", y_pred="p", strata="g", metric=metric, design=Design(cluster="item"))
        pd.testing.assert_frame_equal(c.to_frame(), plain.to_frame(), obj=name)
        pd.testing.assert_frame_equal(c.units, ref, check_dtype=False, obj=name)


@pytest.mark.parametrize("metric", ["recall", "accuracy"])
def test_units_without_strata_match_a_groupby_reference(tmp_path, metric) -> None:
    """No strata: one histogram over every unit, also when the metric leaves rows out (recall)."""
    df = _answers(seed=4).assign(one=1)
    m = be.get_metric(metric)
    trial, success = m.masks(df["y"].to_numpy(), df["p"].to_numpy(), 1)
    ref = _reference(df, ["one"], "item", pd.Series(success), pd.Series(trial)).drop(columns="one")
    for name, data in _engines(df, tmp_path).items():
        c = tabulate(data, y_true="y", y_pred="p", metric=metric, design=Design(cluster="item"))
        got = c.units[["unit_successes", "unit_trials", "units"]].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, ref, check_dtype=False, obj=name)


def test_clusters_of_size_one_give_todays_counts(tmp_path) -> None:
    df = _answers(seed=4).assign(row=lambda f: np.arange(len(f)))
    today = tabulate(df, y_true="y", y_pred="p", strata=["g", "h"], design=Design())
    for data in _engines(df, tmp_path).values():
        c = tabulate(data, y_true="y", y_pred="p", strata=["g", "h"], design=Design(cluster="row"))
        pd.testing.assert_frame_equal(c.to_frame(), today.to_frame())
        assert c.successes.dtype == today.successes.dtype == np.int64
        assert set(c.units["unit_trials"]) == {1}
        assert c.n_units.tolist() == today.trials.tolist()
        assert not c.clusters_span_strata
    # the rows of an outcome column, each its own unit, count as the labels do
    rows = tabulate(df.assign(ok=(df["y"] == df["p"]).astype(int)), outcome="ok", strata=["g", "h"], design=Design())
    acc = tabulate(df, y_true="y", y_pred="p", strata=["g", "h"], metric="accuracy", design=Design())
    pd.testing.assert_frame_equal(rows.to_frame(), acc.to_frame())


def test_multiclass_one_vs_rest_units_carry_the_class_level(tmp_path) -> None:
    df = _answers(seed=5)
    rng = np.random.default_rng(5)
    df["y"] = rng.choice(["cat", "dog", "eel"], len(df))
    df["p"] = np.where(rng.random(len(df)) < 0.7, df["y"], rng.choice(["cat", "dog", "eel"], len(df)))
    for data in _engines(df, tmp_path).values():
        c = tabulate(data, y_true="y", y_pred="p", strata="g", metric="recall", design=Design(cluster="item"))
        assert list(c.units.columns[:2]) == ["g", "class"]
        for cls in ["cat", "dog", "eel"]:
            ref = _reference(df, ["g"], "item", df["y"].eq(cls) & df["p"].eq(cls), df["y"].eq(cls))
            got = c.units[c.units["class"] == cls].drop(columns="class").reset_index(drop=True)
            pd.testing.assert_frame_equal(got, ref, check_dtype=False)


def test_large_frames_count_units_in_place_as_small_ones(monkeypatch) -> None:
    df = _answers(seed=6, graded=True)
    small = tabulate(df, outcome="ok", strata=["g", "h"], design=Design(cluster="item"))
    monkeypatch.setattr(pandas_backend, "DUCKDB_MIN_ROWS", 1)
    large = tabulate(df, outcome="ok", strata=["g", "h"], design=Design(cluster="item"))
    pd.testing.assert_frame_equal(small.units, large.units)
    pd.testing.assert_frame_equal(small.table, large.table)


def test_a_cluster_spanning_strata_is_one_unit_per_stratum_and_recorded(tmp_path) -> None:
    df = pd.DataFrame({"item": [1, 1, 1, 2, 2], "g": ["a", "a", "b", "b", "b"], "ok": [1, 0, 1, 1, 1]})
    for data in _engines(df, tmp_path).values():
        c = tabulate(data, outcome="ok", strata="g", design=Design(cluster="item"))
        assert c.clusters_span_strata
        assert c.n_units.to_dict() == {"a": 1, "b": 2}
        assert c.units.to_dict("list") == {
            "g": ["a", "b", "b"],
            "unit_successes": [1.0, 1.0, 2.0],
            "unit_trials": [2, 1, 2],
            "units": [1, 1, 1],
        }
        assert "span strata" in c.design.describe(c)
    apart = tabulate(df.assign(item=[1, 1, 3, 2, 2]), outcome="ok", strata="g", design=Design(cluster="item"))
    assert not apart.clusters_span_strata


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("form", ["graded", "recall", "error_rate"])
def test_units_grouped_by_cluster_in_sql_match_the_reference_when_clusters_span_strata(
    tmp_path, monkeypatch, ids, form
) -> None:
    """DuckDB groups by the cluster alone and falls back to (stratum, cluster) pairs when some
    cluster's trial rows lie in two strata: both give the groupby reference."""
    df = _answers(seed=21, graded=form == "graded")
    if ids == "str":
        df["item"] = "q" + df["item"].astype(str)
    monkeypatch.setattr(pandas_backend, "DUCKDB_MIN_ROWS", 1)  # the frame is counted in place by DuckDB too
    if form == "graded":
        kw, value, trial = {"outcome": "ok"}, df["ok"], pd.Series(np.ones(len(df)))
    else:
        trial_mask, success = be.get_metric(form).masks(df["y"].to_numpy(), df["p"].to_numpy(), 1)
        kw, value, trial = {"y_true": "y", "y_pred": "p", "metric": form}, pd.Series(success), pd.Series(trial_mask)
    apart = df.copy()
    # one cluster moves only its rows that are not trials (none when every row is one) to another stratum
    first = apart["item"] == apart["item"].iloc[0]
    apart.loc[first & ~trial.to_numpy(bool), "g"] = "z"
    spans = df.copy()
    rows = spans.index[spans["item"].isin(spans["item"].drop_duplicates().iloc[:20])]
    spans.loc[rows[::2], "g"] = "z"  # twenty clusters, most with trials in two strata
    for frame, spanning in ((apart, False), (spans, True)):
        ref = _reference(frame, ["g", "h"], "item", value, trial)
        for name, data in _engines(frame, tmp_path).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EmptyStratumWarning)  # stratum 'z' of non-trials only
                c = tabulate(data, strata=["g", "h"], design=Design(cluster="item"), **kw)
            got = c.units.astype({"h": frame["h"].dtype})
            pd.testing.assert_frame_equal(got, ref, check_dtype=False, obj=f"{name}, spanning={spanning}")
            assert c.clusters_span_strata == spanning, name
    # a cluster with a row of no stratum: refused with that row's count, as by pairs
    gap = df.assign(g=df["g"].where(df.index != df.index[df["item"] == df["item"].iloc[0]][0]))
    for name, data in _engines(gap, tmp_path).items():
        if name == "pandas":
            continue  # an object column with None is not counted in SQL
        with pytest.raises(ValueError, match=r"strata column 'g' has missing values in 1 row\b"):
            tabulate(data, outcome="ok", strata=["g", "h"], design=Design(cluster="item"))


@pytest.mark.parametrize("metric", ["error_rate", "accuracy"])
@pytest.mark.parametrize("kinds", [("int", "int"), ("bool", "uint8")])
def test_counts_of_numeric_labels_from_their_units_match_the_counts_by_stratum(metric, kinds) -> None:
    """Every row a trial and NumPy columns: the strata's counts are their units' sums, as counted by stratum."""
    df = _answers(seed=22)
    label, stratum = kinds
    df = df.astype({"y": label, "p": label, "h": stratum}).assign(k=lambda f: (f["item"] // 7) % 4)
    df.loc[df.index[::9], "k"] = 5  # clusters spanning strata of k
    m = be.get_metric(metric)
    trial, success = m.masks(df["y"].to_numpy(), df["p"].to_numpy(), 1)
    for strata in (["h", "k"], ["k"], []):
        plain = tabulate(df, y_true="y", y_pred="p", strata=strata or None, metric=metric, design=Design())
        c = tabulate(df, y_true="y", y_pred="p", strata=strata or None, metric=metric, design=Design(cluster="item"))
        pd.testing.assert_frame_equal(c.to_frame(), plain.to_frame(), obj=str(strata))
        assert c.successes.dtype == plain.successes.dtype == np.int64
        ref = _reference(df.assign(one=1), strata or ["one"], "item", pd.Series(success), pd.Series(trial))
        got = c.units.drop(columns=[] if strata else [c.units.columns[0]])
        pd.testing.assert_frame_equal(got, ref.drop(columns=[] if strata else ["one"]), check_dtype=False)
        assert c.clusters_span_strata == ("k" in strata)
    # a label that is not 0/1: counted by stratum, then by unit, as before
    bad = df.astype({"y": np.int64}).assign(y=lambda f: f["y"].where(f.index != f.index[0], 2))
    two = tabulate(bad, y_true="y", y_pred="p", strata="k", metric=metric, design=Design(cluster="item"))
    pd.testing.assert_frame_equal(
        two.to_frame(), tabulate(bad, y_true="y", y_pred="p", strata="k", metric=metric, design=Design()).to_frame()
    )


def test_describe_gives_the_design_in_words() -> None:
    df = _answers(seed=7)
    c = tabulate(df, outcome="ok", strata=["g", "h"], design=Design(cluster="item"))
    size = df.groupby("item").size()
    text = c.design.describe(c)
    assert text.startswith(f"{df['item'].nunique()} items in 6 strata, 1-6 rows each (mean {size.mean():.1f})")
    assert text.endswith("intervals treat the item as the unit")
    doc = tabulate(
        df.rename(columns={"item": "doc_id"}), outcome="ok", design=Design(cluster="doc_id", population="pool")
    )
    assert doc.design.describe(doc).startswith(f"{df['item'].nunique()} 'doc_id' clusters in 1 stratum")
    assert doc.design.describe(doc).endswith("the population is the pool of rows itself")


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"outcome": "ok", "y_true": "y"}, TypeError, ["outcome='ok'", "y_true='y'", "not both"]),
        ({"y_true": "y"}, TypeError, ["y_pred=None", "outcome"]),
        ({"outcome": "ok", "metric": "recall"}, ValueError, ["metric='recall'", "'accuracy'", "'error_rate'"]),
        ({"outcome": "ok", "pos_label": 1}, ValueError, ["pos_label"]),
        ({"outcome": "nope"}, ValueError, ["outcome column 'nope'"]),
        ({"outcome": "ok", "design": Design(cluster="nope")}, ValueError, ["design.cluster column 'nope'"]),
        ({"outcome": "ok", "design": "item"}, TypeError, ["design must be a Design"]),
        ({"outcome": "ok", "proxy": "p"}, ValueError, ["outcome", "proxy"]),
    ],
)
def test_bad_outcome_and_design_arguments_are_refused_by_name(kwargs, error, words) -> None:
    with pytest.raises(error) as info:
        tabulate(_answers(seed=8), strata="g", **kwargs)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("engine", ["pandas", "relation", "parquet"])
def test_outcomes_outside_zero_one_or_missing_are_refused(tmp_path, engine) -> None:
    df = _answers(seed=9)
    bad = df.assign(ok=df["ok"].where(df.index >= 3, 1.5))
    with pytest.raises(ValueError, match=r"outcome column 'ok' must hold outcomes in \[0, 1\], got 1.5 \(3 rows"):
        tabulate(_engines(bad, tmp_path)[engine], outcome="ok", design=Design())
    gap = df.assign(ok=df["ok"].where(df.index >= 2))
    with pytest.raises(ValueError, match=r"outcome column 'ok' has missing values in 2 rows"):
        tabulate(_engines(gap, tmp_path)[engine], outcome="ok", design=Design())
    lost = df.assign(item=df["item"].astype(float).where(df.index >= 1))
    with pytest.raises(ValueError, match=r"design.cluster column 'item' has missing values in 1 row\b"):
        tabulate(_engines(lost, tmp_path)[engine], outcome="ok", design=Design(cluster="item"))
    text = df.assign(ok="yes")
    with pytest.raises(TypeError, match=r"outcome column 'ok' must hold numbers"):
        tabulate(_engines(text, tmp_path)[engine], outcome="ok", design=Design())


def test_counts_check_their_units_and_keep_them_through_views() -> None:
    c = tabulate(_answers(seed=10, graded=True), outcome="ok", strata="g", design=Design(cluster="item"))
    w = c.with_weights({"a": 0.2, "b": 0.3, "c": 0.5})
    pd.testing.assert_frame_equal(w.units, c.units)
    sub = c.subset(["c", "a"])
    assert set(sub.units["g"]) == {"a", "c"} and sub.n_units.tolist() == c.n_units[["c", "a"]].tolist()
    both = c + c
    assert both.n_units.tolist() == (2 * c.n_units).tolist()
    np.testing.assert_allclose(both.successes.to_numpy(), 2 * c.successes.to_numpy())
    plain = Counts.from_arrays([1, 2, 3], [5, 5, 5], strata=pd.Index(["a", "b", "c"], name="g"))
    with pytest.raises(ValueError, match="different designs"):
        c + plain
    broken = c.units.assign(units=c.units["units"] + 1)
    with pytest.raises(ValueError, match="do not add up"):
        Counts(c.successes, c.trials, units=broken)
    with pytest.raises(ValueError, match="successes must be whole numbers|whole"):
        Counts(c.successes + 0.25, c.trials)  # fractional successes only with units


# -- detection ---------------------------------------------------------------------------------
def test_the_detector_finds_a_repeating_identifier_and_nothing_else(tmp_path) -> None:
    df = _answers(seed=11)
    for data in _engines(df, tmp_path).values():
        found = looks_clustered(data, strata="g")
        assert found == ("item", len(df) - df["item"].nunique())
    unique = df.drop_duplicates("item")
    for data in _engines(unique, tmp_path).values():
        assert looks_clustered(data, strata="g") is None
    assert looks_clustered(df.rename(columns={"item": "sample"}), strata="g") is None  # not identifier-like
    assert looks_clustered(df.rename(columns={"item": "Doc_ID"})) == ("Doc_ID", len(df) - df["item"].nunique())
    assert looks_clustered(df.rename(columns={"item": "id"}), strata="id") is None  # a stratum is never a unit


def test_tabulate_warns_once_at_the_callers_line_unless_a_design_is_given() -> None:
    df = _answers(seed=12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tabulate(df, y_true="y", y_pred="p", strata="g")
        line = inspect.currentframe().f_lineno - 1
        tabulate(df, outcome="ok", strata="g")
    clustered = [w for w in caught if issubclass(w.category, ClusteredRowsWarning)]
    assert len(clustered) == 2
    assert clustered[0].filename == __file__ and clustered[0].lineno == line
    assert "design=Design(cluster='item')" in str(clustered[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tabulate(df, y_true="y", y_pred="p", strata="g", design=Design())
        tabulate(df, y_true="y", y_pred="p", strata="g", design=Design(cluster="item"))
        tabulate(df.drop(columns="item"), y_true="y", y_pred="p", strata="g")


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("metric", [None, "recall"])
def test_integer_and_categorical_columns_count_by_bincount_as_the_reference(graded, metric) -> None:
    df = _answers(seed=13, graded=graded).astype({"g": "category", "ok": float if graded else np.int8})
    df["item"] = df["item"] * 7 + 1_000  # codes from values, not positions
    kw = {"outcome": "ok"} if metric is None else {"y_true": "y", "y_pred": "p", "metric": metric}
    c = tabulate(df, strata=["g", "h"], design=Design(cluster="item"), **kw)
    if metric is None:
        value, trial = df["ok"].astype(float), pd.Series(np.ones(len(df)))
    else:
        trial_mask, success = be.get_metric(metric).masks(df["y"].to_numpy(), df["p"].to_numpy(), 1)
        value, trial = pd.Series(success), pd.Series(trial_mask)
    ref = _reference(df.astype({"g": str}), ["g", "h"], "item", value, trial)
    pd.testing.assert_frame_equal(c.units.astype({"g": str}), ref, check_dtype=False)
    assert isinstance(c.units["g"].dtype, pd.CategoricalDtype)
    # a cluster in two strata: the general path counts each part as a unit
    sizes = df.groupby("item").size()
    rows = df.index[df["item"] == sizes[sizes > 1].index[0]]
    spans = df.copy()
    spans.loc[rows[0], "h"] = 1 - spans.loc[rows[1], "h"]
    c2 = tabulate(spans, strata=["g", "h"], design=Design(cluster="item"), **kw)
    ref2 = _reference(spans.astype({"g": str}), ["g", "h"], "item", value, trial)
    pd.testing.assert_frame_equal(c2.units.astype({"g": str}), ref2, check_dtype=False)
    assert c2.clusters_span_strata == (ref2["units"].sum() > ref["units"].sum())


def test_an_audit_counting_several_times_warns_once_at_the_callers_line() -> None:
    df = _answers(seed=14)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        be.audit(df, y_true="y", y_pred="p", groups="g")
        line = inspect.currentframe().f_lineno - 1
    clustered = [w for w in caught if issubclass(w.category, ClusteredRowsWarning)]
    assert [(w.filename, w.lineno) for w in clustered] == [(__file__, line)]
