"""The vocabularies: every help and error lists the same metric table, and every result table
names a count or an estimate with the words of :mod:`bayeseval._api.table_names`."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from bayeseval import (
    evaluate,
    get_metric,
    proportion_ci,
    proxy_ci,
    simulate,
    stratified_risk,
    tabulate,
)
from bayeseval._api.table_names import COLUMNS, synonyms_in
from bayeseval.campaign import Budget, Campaign
from bayeseval.cli.campaign import main as campaign_main
from bayeseval.cli.main import main as main_audit_report
from bayeseval.fairness import audit
from tests.helpers import AUDIT_LIST, REPORT_LIST, ROOT, _flat


@pytest.mark.parametrize(
    "argv, listed",
    [
        (["report", "--help"], REPORT_LIST),
        (["gate", "--help"], REPORT_LIST),
        (["audit", "--help"], AUDIT_LIST),
    ],
)
def test_every_help_prints_the_list_of_the_table(argv, listed, capsys):
    assert main_audit_report(argv) == 0
    assert listed in _flat(capsys.readouterr().out)


def test_campaign_help_prints_the_list_of_the_table(capsys):
    assert campaign_main(["campaign", "create", "--help"]) == 0
    assert REPORT_LIST in _flat(capsys.readouterr().out)


def test_every_error_prints_the_list_of_the_table(preds_core_metric_names, tmp_path, capsys):
    _, path = preds_core_metric_names
    base = [str(path), "--y-true", "y", "--y-pred", "p"]
    for argv, listed in (
        (["report", *base, "--metric", "f1"], REPORT_LIST),
        (["gate", *base, "--metric", "f1", "--min-trials", "5"], REPORT_LIST),
        (["audit", *base, "--groups", "g", "--metrics", "f1"], AUDIT_LIST),
    ):
        assert main_audit_report(argv) == 2
        err = _flat(capsys.readouterr().err)
        assert "unknown metric 'f1'" in err and f"valid choices are {listed}" in err
    pool = tmp_path / "pool.csv"
    pd.DataFrame({"g": ["a", "b"] * 20, "p": [0, 1] * 20}).to_csv(pool, index=False)
    code = campaign_main(
        [
            "campaign",
            "create",
            "--pool",
            str(pool),
            "--strata",
            "g",
            "--y-pred",
            "p",
            "--metric",
            "f1",
            "--db",
            str(tmp_path / "c.db"),
        ]
    )
    assert code == 2 and f"valid choices are {REPORT_LIST}" in _flat(capsys.readouterr().err)
    with pytest.raises(ValueError, match="valid choices are") as err:
        get_metric("f1")
    assert str(err.value).endswith(REPORT_LIST)
    with pytest.raises(ValueError) as err:
        audit(preds_core_metric_names[0], y_true="y", y_pred="p", groups="g", metrics="f1")
    assert str(err.value).endswith(AUDIT_LIST)


# -- the table vocabulary: one name per quantity in every result table -----------------------

#: words that name a count or an estimate: a column holding one must use the vocabulary
COUNT_OR_ESTIMATE = re.compile(
    r"(^|_)(pool|label|labels|labelled|trial|trials|success|successes|mean|"
    r"estimate|rate|lower|upper|rows|n)($|_)"
)
#: prefixes that name which interval or which sum a canonical column belongs to
PREFIXES = ("adaptive_", "wilson_", "posterior_", "ipw_", "ipw2_", "true_", "max_", "extra_")


def _proxy_rows(size=3000, seed=3):
    """Three groups, predicted positives about half the rows, about 15% labelled; a judge."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size)
    p = (rng.random(size) < 0.5).astype(int)
    y = np.where(p == 1, rng.random(size) < 0.8, rng.random(size) < 0.2).astype(int)
    judge = np.where(rng.random(size) < 0.9, y, 1 - y)
    df = pd.DataFrame({"g": g, "p": p, "j": judge, "y": y.astype(float)})
    df.loc[rng.random(size) > 0.15, "y"] = np.nan
    return df


def _campaign(tmp, rows, truth, **kwargs):
    c = Campaign.create(tmp / f"c{len(list(tmp.iterdir()))}.db", rows, strata="g", y_pred="p", random_seed=0, **kwargs)
    for _ in range(3):
        batch = c.propose(60)
        c.ingest(truth.loc[batch.index])
    return c


@pytest.fixture(scope="module")
def result_tables(tmp_path_factory):
    """The result tables of the main entry points, with the data they were computed from."""
    tmp = tmp_path_factory.mktemp("vocab")
    df = _proxy_rows()
    full = df.assign(y=np.where(df["y"].isna(), 1 - df["p"], df["y"]).astype(int))
    ones = pd.Series([3, 5, 9], index=pd.Index(["a", "b", "c"], name="g"))
    out = {
        "proportion_ci": pd.concat(proportion_ci(ones, ones * 4), axis=1),
        "stratified_risk": stratified_risk(ones, ones * 4, {"a": 0.2, "b": 0.3, "c": 0.5}).table,
        "evaluate": evaluate(full, y_true="y", y_pred="p", strata="g", metric="precision").table,
        "evaluate_proxy": evaluate(df, y_true="y", y_pred="p", strata="g", proxy="j", metric="precision").table,
        "proxy_ci": proxy_ci(df, y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table,
        "ProxyCounts": tabulate(df, y_true="y", y_pred="p", proxy="j", strata="g", metric="precision").table,
        "audit": audit(full, y_true="y", y_pred="p", groups="g", metrics=["ppv"], random_seed=0).groups,
        "audit_proxy": audit(df, y_true="y", y_pred="p", groups="g", proxy="j", metrics=["ppv"], random_seed=0).groups,
    }
    pool = full.drop(columns=["y"]).rename_axis("row_id")
    truth = full["y"].rename_axis("row_id")
    recall = _campaign(tmp, pool, truth, metric="recall")
    out["status"] = recall.status()
    out["status_average"] = _campaign(tmp, pool, truth, metric="recall", guarantee="average").status()
    out["status_proxy"] = _campaign(tmp, pool, truth, proxy="j").status()
    sim = simulate(
        full,
        strata="g",
        y_pred="p",
        y_true="y",
        n_repeats=1,
        budget=Budget(300, batch_size=100),
        random_seed=0,
        progress=False,
    )
    out.update({"simulate": sim.table, "simulate_trace": sim.trace, "simulate_intervals": sim.intervals})
    return out, df, full, recall


TABLES = [
    "proportion_ci",
    "stratified_risk",
    "evaluate",
    "evaluate_proxy",
    "proxy_ci",
    "ProxyCounts",
    "audit",
    "audit_proxy",
    "status",
    "status_average",
    "status_proxy",
    "simulate",
    "simulate_trace",
    "simulate_intervals",
]


def _off_vocabulary(columns) -> list[str]:
    """Columns that name a count or an estimate with a word outside :data:`COLUMNS`."""
    out = []
    for col in map(str, columns):
        base = next((col[len(p) :] for p in PREFIXES if col.startswith(p)), col)
        if COUNT_OR_ESTIMATE.search(col) and base not in COLUMNS and col not in COLUMNS:
            out.append(col)
    return out


@pytest.mark.parametrize("name", TABLES)
def test_result_tables_keep_to_the_table_vocabulary(result_tables, name):
    table = result_tables[0][name]
    assert synonyms_in(table.columns) == {}, name
    known = {
        "labels_used",
        "labels_mean",
        "labels_sd",
        "p_meets",
        "true_rate",
        "max_halfwidth",
        "max_trials",
        "zero_successes",
    }  # documented derived names of their own tables
    assert [c for c in _off_vocabulary(table.columns) if c not in known] == [], name
    if "trials" in table.columns:  # a stratum's point estimate is rate or mean, never estimate
        assert "estimate" not in table.columns, name


@pytest.mark.parametrize(
    "columns, bad",
    [
        (["successes", "labelled", "pool"], {"pool": "pool_trials"}),  # ProxyCounts before
        (["rate", "lo", "hi", "n"], {"lo": "lower", "hi": "upper", "n": "trials"}),
    ],
)
def test_synonyms_are_refused(columns, bad):
    assert synonyms_in(columns) == bad


def test_off_vocabulary_names_are_caught():
    assert _off_vocabulary(["labelled_trials", "pool_count", "rate", "adaptive_lower", "group"]) == [
        "labelled_trials",
        "pool_count",
    ]


def test_the_api_page_lists_the_table_vocabulary():
    text = (ROOT / "docs" / "api.md").read_text()
    assert [name for name in COLUMNS if f"| `{name}` |" not in text] == []


def _by_hand(df):
    """Per group, counted with pandas: labelled predicted positives, their true positives, and
    the predicted positives of the whole pool (the trials of precision)."""
    lab = df[df["y"].notna()]
    trials = lab.groupby("g")["p"].sum()
    successes = lab[lab["p"] == 1].groupby("g")["y"].sum().astype(int)
    return successes, trials, df.groupby("g")["p"].sum()


@pytest.mark.parametrize("name", ["evaluate_proxy", "proxy_ci", "audit_proxy"])
def test_proxy_tables_count_labelled_trials_and_pool_trials_alike(result_tables, name):
    tables, df, _, _ = result_tables
    table = tables[name]
    if "group" in table.columns:
        table = table.set_index("group")
    successes, trials, pool_trials = _by_hand(df)
    assert table["trials"].astype(int).to_dict() == trials.to_dict()
    assert table["pool_trials"].astype(int).to_dict() == pool_trials.to_dict()
    if "successes" in table.columns:
        assert table["successes"].astype(int).to_dict() == successes.to_dict()
    # one estimate under one name: every proxy table gives the proxy_ci estimate as rate
    ref = tables["proxy_ci"]["rate"]
    np.testing.assert_allclose(table["rate"].reindex(ref.index).to_numpy(float), ref.to_numpy(float))


def test_proxy_counts_sum_to_the_same_counts(result_tables):
    tables, df, _, _ = result_tables
    cells = tables["ProxyCounts"].groupby(level="g")[["successes", "trials", "pool_trials"]].sum()
    successes, trials, pool_trials = _by_hand(df)
    assert cells["successes"].to_dict() == successes.to_dict()
    assert cells["trials"].to_dict() == trials.to_dict() and cells["pool_trials"].to_dict() == pool_trials.to_dict()


@pytest.mark.parametrize("name", ["evaluate", "stratified_risk", "audit"])
def test_rate_is_successes_over_trials(result_tables, name):
    table = result_tables[0][name]
    np.testing.assert_allclose(
        table["rate"].to_numpy(float), table["successes"].to_numpy(float) / table["trials"].to_numpy(float)
    )


def test_status_counts_rows_and_trials_by_hand(result_tables):
    tables, _, full, recall = result_tables
    st = tables["status"]
    lab = recall.labels()
    rows = full.loc[lab.index]
    assert st["pool_rows"].to_dict() == full.groupby("g").size().to_dict()
    assert st["labelled"].to_dict() == rows.groupby("g").size().reindex(st.index, fill_value=0).to_dict()
    trials = rows[rows["y"] == 1].groupby("g").size().reindex(st.index, fill_value=0)  # recall: actual positives
    assert st["trials"].to_dict() == trials.to_dict()
    assert (st["trials"] < st["labelled"]).any()  # rows and trials differ, and are told apart


def test_status_mean_is_the_point_estimate_of_its_interval(result_tables):
    tables = result_tables[0]
    st = tables["status"]  # guarantee="stratum": the stratum's own interval, its own rate
    assert (st["read"] == "guaranteed").all()
    np.testing.assert_allclose(st["mean"], st["successes"] / st["trials"])
    assert ((st["lower"] <= st["mean"]) & (st["mean"] <= st["upper"])).all()
    assert ((st["pooled_lower"] <= st["pooled_mean"]) & (st["pooled_mean"] <= st["pooled_upper"])).all()
    avg = tables["status_average"]  # the pooled interval is read: its mean is the pooled posterior's
    assert (avg["read"] == "pooled").all() and "pooled_mean" not in avg.columns
    assert ((avg["lower"] <= avg["mean"]) & (avg["mean"] <= avg["upper"])).all()
    px = tables["status_proxy"]
    assert (px["read"] == "proxy").all() and "estimate" not in px.columns
    assert ((px["lower"] <= px["mean"]) & (px["mean"] <= px["upper"])).all()
    sim = tables["simulate_intervals"]  # simulate's final intervals carry the same columns
    assert {"mean", "lower", "upper", "pooled_mean"} <= set(sim.columns)
    assert ((sim["lower"] <= sim["mean"]) & (sim["mean"] <= sim["upper"])).all()
