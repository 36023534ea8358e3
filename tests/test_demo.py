"""The end-to-end demo: runs on bundled data and reproduces the published worked figures."""

import json

import pytest
from sklearn.metrics import accuracy_score

from bayeseval.cli.main import main
from bayeseval.demo import german_credit_predictions


@pytest.fixture(scope="module")
def demo_summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["demo", "--quick", "--json", "--out", str(out)])
    assert code == 0
    return json.loads(buf.getvalue()), out


def test_out_of_fold_accuracy_matches_the_published_figures():
    df = german_credit_predictions(random_seed=0)
    under30 = df["age"] < 30
    assert int(under30.sum()) == 371  # 371 under-30s
    overall = accuracy_score(df["good_credit"], df["predicted"])
    young = accuracy_score(df.loc[under30, "good_credit"], df.loc[under30, "predicted"])
    # accuracy 0.709 overall and 0.663 for the under-30s (one seed of 10-fold CV)
    assert abs(overall - 0.709) < 0.01
    assert abs(young - 0.663) < 0.015


@pytest.mark.slow
def test_demo_reports_the_same_accuracy_and_the_split_decisions(demo_summary):
    summary, _ = demo_summary
    df = german_credit_predictions(random_seed=0)
    assert summary["german_credit"]["accuracy"] == pytest.approx(accuracy_score(df["good_credit"], df["predicted"]))
    groups = summary["german_credit"]["per_group"]
    assert sum(g["trials"] for g in groups) == 1000
    for g in groups:
        assert g["lower"] <= g["rate"] <= g["upper"]
    plan = summary["planning"]
    # n_min 323 at 0.42% grows the test set to about 76,900 rows; 8 groups degrade
    assert plan["fraud_split"] == "grow_test"
    assert abs(plan["fraud_split_test_rows"] - 76_905) <= 5
    assert plan["fraud_split_8_groups"] == "degraded"


@pytest.mark.slow
def test_demo_campaign_rule_beats_proportional_and_pooling_keeps_small_groups_sane(demo_summary):
    summary, _ = demo_summary
    labels = {row["rule"]: row["labels_mean"] for row in summary["campaign"]}
    assert labels["expected_width"] < labels["proportional"]
    pooled = {row["race"]: row for row in summary["compas"]["pooled"]}
    # the 8 Native American defendants: pooled interval is narrower than the raw range [0, 1]
    small = pooled["Native American"]
    assert small["trials"] < 30
    assert 0 < small["lower"] < small["mean"] < small["upper"] < 1


@pytest.mark.slow
def test_demo_writes_an_html_report_with_plots(demo_summary):
    summary, out = demo_summary
    html = (out / "report.html").read_text()
    assert "German credit" in html and "COMPAS" in html
    assert html.count("data:image/png;base64,") >= 3
    assert (out / "german_credit.md").exists()
