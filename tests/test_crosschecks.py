"""Cross-checks against other tools on the same inputs (the fast part of benchmarks/validate.py).

References: statsmodels ``proportion_confint`` and ``mcnemar``; scikit-learn
``recall_score`` / ``precision_score`` / ``accuracy_score`` on each group's rows;
fairlearn ``MetricFrame(...).by_group``; ppi_py ``classical_mean_ci`` (the Wald interval).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from bayeseval import BayesevalWarning, Counts, mcnemar, proportion_ci, stratified_risk, tabulate

SM_METHOD = {"wald": "normal", "wilson": "wilson", "agresti_coull": "agresti_coull",
             "clopper_pearson": "beta", "jeffreys": "jeffreys"}


def all_counts(max_n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    ns = np.arange(1, max_n + 1)
    x = np.concatenate([np.arange(k + 1) for k in ns])
    n = np.concatenate([np.full(k + 1, k) for k in ns])
    return x, n


@pytest.mark.parametrize("method", list(SM_METHOD))
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_proportion_ci_matches_statsmodels_for_every_count(method, level):
    x, n = all_counts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        lo, hi = proportion_ci(x, n, level=level, method=method)
    slo, shi = proportion_confint(x, n, alpha=1 - level, method=SM_METHOD[method])
    slo, shi = np.clip(slo, 0, 1), np.clip(shi, 0, 1)
    if method == "jeffreys":
        # by design (Brown, Cai & DasGupta 2001): lower = 0 at x = 0 and upper = 1 at x = n;
        # statsmodels returns the plain Beta(x + 1/2, n - x + 1/2) quantile there
        inner = (x > 0) & (x < n)
        np.testing.assert_allclose(lo[inner], slo[inner], atol=1e-10, rtol=0)
        np.testing.assert_allclose(hi[inner], shi[inner], atol=1e-10, rtol=0)
        assert np.all(lo[x == 0] == 0) and np.all(hi[x == n] == 1)
        np.testing.assert_allclose(hi[x == 0], shi[x == 0], atol=1e-10, rtol=0)
        np.testing.assert_allclose(lo[x == n], slo[x == n], atol=1e-10, rtol=0)
    else:
        np.testing.assert_allclose(lo, slo, atol=1e-10, rtol=0)
        np.testing.assert_allclose(hi, shi, atol=1e-10, rtol=0)


def test_proportion_ci_matches_statsmodels_at_large_counts():
    rng = np.random.default_rng(0)
    n = rng.integers(1, 10**9, 500)
    x = rng.binomial(n, rng.random(500))
    for method in SM_METHOD:
        lo, hi = proportion_ci(x, n, method=method)
        slo, shi = proportion_confint(x, n, alpha=0.05, method=SM_METHOD[method])
        np.testing.assert_allclose(lo, np.clip(slo, 0, 1), atol=1e-10, rtol=0)
        np.testing.assert_allclose(hi, np.clip(shi, 0, 1), atol=1e-10, rtol=0)


def random_pairs(rng, n):
    a = rng.random(n) < rng.uniform(0.5, 0.95)
    b = np.where(rng.random(n) < rng.uniform(0.0, 0.3), ~a, a)
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    return a, b, table


def test_mcnemar_matches_statsmodels():
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(150):
        a, b, table = random_pairs(rng, int(rng.integers(5, 400)))
        ours = mcnemar(a, b, method="exact")
        theirs = sm_mcnemar(table, exact=True)
        assert ours.b == table[0][1] and ours.c == table[1][0]
        assert ours.pvalue == pytest.approx(min(1.0, theirs.pvalue), abs=1e-12)
        if table[0][1] + table[1][0] > 0:  # statsmodels' chi-square is NaN without discordant pairs
            ours = mcnemar(a, b, method="asymptotic")
            theirs = sm_mcnemar(table, exact=False, correction=True)
            assert ours.statistic == pytest.approx(theirs.statistic, abs=1e-12)
            assert ours.pvalue == pytest.approx(theirs.pvalue, abs=1e-12)
            checked += 1
    assert checked > 100


def grouped_frame(seed: int = 3, n: int = 5000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.15, 0.05])
    y = (rng.random(n) < np.where(g == "d", 0.4, 0.2)).astype(int)
    flip = rng.random(n) < np.where(g == "c", 0.25, 0.1)
    return pd.DataFrame({"y": y, "p": np.where(flip, 1 - y, y), "g": g})


SK_METRICS = ["recall", "precision", "accuracy"]


@pytest.mark.parametrize("metric", SK_METRICS)
def test_tabulate_rates_match_sklearn_per_group(metric):
    import sklearn.metrics as sklearn_metrics
    fn = getattr(sklearn_metrics, f"{metric}_score")
    df = grouped_frame()
    rates = tabulate(df, y_true="y", y_pred="p", strata="g", metric=metric).rates
    for g, rows in df.groupby("g"):
        assert rates.loc[g] == pytest.approx(fn(rows.y, rows.p), abs=1e-15)


def test_error_rate_is_one_minus_sklearn_accuracy_and_counts_are_exact():
    from sklearn.metrics import accuracy_score, confusion_matrix

    df = grouped_frame(seed=4)
    c = tabulate(df, y_true="y", y_pred="p", strata="g", metric="error_rate")
    rec = tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall")
    for g, rows in df.groupby("g"):
        tn, fp, fn, tp = confusion_matrix(rows.y, rows.p, labels=[0, 1]).ravel()
        assert c.successes.loc[g] == fp + fn and c.trials.loc[g] == len(rows)
        assert rec.successes.loc[g] == tp and rec.trials.loc[g] == tp + fn
        assert c.rates.loc[g] == pytest.approx(1 - accuracy_score(rows.y, rows.p), abs=1e-15)


@pytest.mark.parametrize("metric", SK_METRICS)
def test_tabulate_rates_match_fairlearn_metricframe(metric):
    import fairlearn.metrics as fairlearn_metrics
    import sklearn.metrics

    df = grouped_frame(seed=6)
    mf = fairlearn_metrics.MetricFrame(metrics=getattr(sklearn.metrics, f"{metric}_score"),
                                       y_true=df.y, y_pred=df.p, sensitive_features=df.g)
    rates = tabulate(df, y_true="y", y_pred="p", strata="g", metric=metric).rates
    np.testing.assert_allclose(rates.to_numpy(), mf.by_group.loc[rates.index].to_numpy(), atol=1e-15, rtol=0)


def test_stratified_risk_matches_fairlearn_weighted_by_group():
    import fairlearn.metrics as fairlearn_metrics
    from sklearn.metrics import recall_score

    df = grouped_frame(seed=7)
    shares = {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}
    mf = fairlearn_metrics.MetricFrame(metrics=recall_score, y_true=df.y, y_pred=df.p, sensitive_features=df.g)
    counts = tabulate(df, y_true="y", y_pred="p", strata="g", metric="recall")
    res = stratified_risk(counts, weights=shares)
    expected = sum(shares[g] * mf.by_group.loc[g] for g in shares)
    assert res.estimate == pytest.approx(expected, abs=1e-14)


def test_ppi_classical_interval_is_bayeseval_wald():
    import ppi_py
    rng = np.random.default_rng(8)
    for n in (30, 300, 3000):
        y = (rng.random(n) < 0.8).astype(float)
        lo, hi = ppi_py.classical_mean_ci(y, alpha=0.05)
        wlo, whi = proportion_ci(int(y.sum()), n, method="wald")
        # ppi_py uses the sample SD with ddof=0 over sqrt(n): identical to Wald
        assert float(np.ravel(lo)[0]) == pytest.approx(wlo, abs=1e-12)
        assert float(np.ravel(hi)[0]) == pytest.approx(whi, abs=1e-12)


def test_ppi_with_uninformative_predictions_falls_back_to_the_labelled_only_width():
    import ppi_py
    rng = np.random.default_rng(9)
    n, big = 400, 200_000
    y = (rng.random(n) < 0.7).astype(float)
    # scores independent of correctness (a constant score would make ppi_py's power tuning 0/0 = NaN)
    yhat, yhat_u = rng.uniform(0.5, 1.0, n), rng.uniform(0.5, 1.0, big)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
    lo, hi = float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
    wlo, whi = proportion_ci(int(y.sum()), n, method="wald")
    # the tuned lambda = Cov(Y, Yhat)/Var(Yhat) (1 + n/N) is close to 0, so PPI is the Wald interval up to the
    # sampling noise of the estimated covariance (a few percent at n = 400)
    assert hi - lo == pytest.approx(whi - wlo, rel=0.05)
    assert hi - lo <= (whi - wlo) * 1.01  # power tuning never makes it wider than the classical interval
    assert lo <= Counts.from_arrays([int(y.sum())], [n]).rates.iloc[0] <= hi
