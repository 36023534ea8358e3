"""Cross-checks against other tools on the same inputs (statsmodels, scikit-learn, fairlearn, ppi_py, PyMC) and against published figures (BDA3)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    false_negative_rate,
    false_positive_rate,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)
from scipy.special import expit
from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_score, zero_one_loss
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

from bayeseval import Counts, fit_hierarchical, proportion_ci, proxy_ci, stratified_risk, tabulate
from bayeseval._api.warnings import BayesevalWarning
from bayeseval._kernels.proxy import cells_interval, proxy_interval
from bayeseval.demo import german_credit_predictions
from bayeseval.estimate.compare import mcnemar
from bayeseval.models.exact import ExactFit
from tests.helpers import RATS_N, RATS_Y, _judged_pool, load_result


def _npv(y_true, y_pred):
    neg = np.asarray(y_pred) == 0
    return float(np.mean(np.asarray(y_true)[neg] == 0))


FAIRLEARN = {
    "selection_rate": selection_rate,
    "tpr": true_positive_rate,
    "fnr": false_negative_rate,
    "fpr": false_positive_rate,
    "tnr": true_negative_rate,
    "ppv": precision_score,
    "npv": _npv,
    "error_rate": zero_one_loss,
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
}


SM_METHOD = {
    "wald": "normal",
    "wilson": "wilson",
    "agresti_coull": "agresti_coull",
    "clopper_pearson": "beta",
    "jeffreys": "jeffreys",
}


def all_counts(max_n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    ns = np.arange(1, max_n + 1)
    x = np.concatenate([np.arange(k + 1) for k in ns])
    n = np.concatenate([np.full(k + 1, k) for k in ns])
    return x, n


def random_pairs(rng, n):
    a = rng.random(n) < rng.uniform(0.5, 0.95)
    b = np.where(rng.random(n) < rng.uniform(0.0, 0.3), ~a, a)
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    return a, b, table


def grouped_frame(seed: int = 3, n: int = 5000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.15, 0.05])
    y = (rng.random(n) < np.where(g == "d", 0.4, 0.2)).astype(int)
    flip = rng.random(n) < np.where(g == "c", 0.25, 0.1)
    return pd.DataFrame({"y": y, "p": np.where(flip, 1 - y, y), "g": g})


SK_METRICS = ["recall", "precision", "accuracy"]


# Rat tumour data, Gelman et al., Bayesian Data Analysis 3rd ed., Table 5.1 (Tarone 1982):
# tumours y_j out of n_j rats in 71 historical control groups (the 71st is the current one).
RAT_Y = [0] * 14 + [1] * 8 + [2] * 9 + [1, 5, 2, 5, 3, 2, 7, 7, 3, 3, 2, 9, 10]
RAT_Y += [4] * 7 + [10, 4, 4, 4, 5, 11, 12, 5, 5, 6, 5, 6, 6, 6, 6, 16, 15, 15, 9, 4]


RAT_N = [20] * 7 + [19] * 4 + [18, 18, 17] + [20] * 4 + [19, 19, 18, 18, 25, 24, 23]
RAT_N += [20] * 6 + [10, 49, 19, 46, 27, 17, 49, 47, 20, 20, 13, 48, 50] + [20] * 7
RAT_N += [48, 19, 19, 19, 22, 46, 49, 20, 20, 23, 19, 22, 20, 20, 20, 52, 46, 47, 24, 14]


def test_point_estimates_equal_fairlearn_metricframe(data, crossed):
    mf = MetricFrame(metrics=FAIRLEARN, y_true=data["y"], y_pred=data["p"], sensitive_features=data[["race", "sex"]])
    table = crossed.groups.set_index(["group", "metric"])["rate"]
    for (race, sex), row in mf.by_group.iterrows():
        for metric, value in row.items():
            assert table[(f"{race} | {sex}", metric)] == pytest.approx(value, abs=1e-12), (race, sex, metric)


def test_fast_preset_rats_bda_prior_matches_bda3():
    # BDA3 section 5.3: the posterior of (alpha, beta) centred near alpha = 2.4, beta = 14.3
    ref = load_result("bda3_rats_hyper").set_index("quantity")
    fit = ExactFit(Counts.from_arrays(RATS_Y, RATS_N), prior="bda", preset="fast")
    kappa = np.exp(fit.grid_v)
    for name, mean in (("alpha", expit(fit.grid_u) * kappa), ("beta", expit(-fit.grid_u) * kappa)):
        assert fit.weights @ mean == pytest.approx(ref.loc[name, "value"], abs=ref.loc[name, "tolerance"])


def test_post_stratified_estimate_is_ppi_with_cell_rate_proxy():
    """PPI (lambda = 1) with the cell's labelled rate as the proxy is post-stratification."""
    from ppi_py import ppi_mean_pointestimate

    rng = np.random.default_rng(5)
    cell_lab = rng.integers(0, 3, 60)
    y = (rng.random(60) < np.array([0.2, 0.5, 0.9])[cell_lab]).astype(float)
    cell_unl = rng.integers(0, 3, 5000)
    n = np.bincount(cell_lab, minlength=3)
    s = np.bincount(cell_lab, weights=y, minlength=3)
    rate = s / n
    ppi = ppi_mean_pointestimate(y, rate[cell_lab], rate[cell_unl], lam=1)
    shares = np.bincount(cell_unl, minlength=3) / 5000
    est, _, _ = cells_interval(s, n, shares, 0.95)
    assert float(np.ravel(ppi)[0]) == pytest.approx(float(est), abs=1e-12)


def test_agrees_with_ppi_mean_ci_at_large_counts():
    """Binary proxy, lambda tuned by ppi_py: at 4,000 labels the intervals coincide."""
    from ppi_py import ppi_mean_ci

    rng = np.random.default_rng(11)
    big = 400_000
    right = rng.random(big) < 0.7
    judge = np.where(rng.random(big) < 0.85, right, ~right).astype(float)
    lab = np.zeros(big, dtype=bool)
    lab[rng.choice(big, 4000, replace=False)] = True
    y, z = right[lab].astype(float), judge[lab]
    lo_p, hi_p = (float(np.ravel(v)[0]) for v in ppi_mean_ci(y, z, judge[~lab], alpha=0.05))
    n = np.array([(z == 0).sum(), (z == 1).sum()])
    s = np.array([y[z == 0].sum(), y[z == 1].sum()])
    shares = np.array([(judge == 0).mean(), (judge == 1).mean()])
    b = proxy_interval(s, n, shares, 0.95)
    assert bool(b.uses_proxy)
    assert float(b.estimate) == pytest.approx((lo_p + hi_p) / 2, abs=1.5e-3)
    assert float(b.upper - b.lower) == pytest.approx(hi_p - lo_p, rel=0.03)


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
    mf = fairlearn_metrics.MetricFrame(
        metrics=getattr(sklearn.metrics, f"{metric}_score"), y_true=df.y, y_pred=df.p, sensitive_features=df.g
    )
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


@pytest.mark.slow
def test_cell_means_and_interval_ends_agree_with_nuts(comparison):
    diag = comparison["nuts_diagnostics"]
    assert diag["rhat_max"] < 1.01 and diag["ess_tail_min"] > 400  # a trustworthy reference
    d = comparison["max_abs_diff"]
    assert d["mean"] < 0.01, comparison["table"]
    assert d["lower"] < 0.02, comparison["table"]
    assert d["upper"] < 0.02, comparison["table"]
    table = comparison["table"]
    empty = table[table["trials"] == 0]
    assert len(empty) == 2  # the predictions for the empty cells agree too
    assert (abs(empty["nuts_mean"] - empty["laplace_mean"]) < 0.01).all()


@pytest.mark.slow
def test_agrees_with_an_importance_sampling_reference(comparison):
    # 40,000 weighted draws of the exact posterior (ESS about 20,000): no sampler noise to
    # speak of on the interval ends, so the tolerance is tighter
    assert comparison["importance_ess"] > 5000
    d = comparison["importance_max_abs_diff"]
    assert d["mean"] < 0.005 and d["lower"] < 0.01 and d["upper"] < 0.01, d


def test_out_of_fold_accuracy_matches_the_published_figures():
    df = german_credit_predictions(random_seed=0)
    under30 = df["age"] < 30
    assert int(under30.sum()) == 371  # 371 under-30s
    overall = accuracy_score(df["good_credit"], df["predicted"])
    young = accuracy_score(df.loc[under30, "good_credit"], df.loc[under30, "predicted"])
    # accuracy 0.709 overall and 0.663 for the under-30s (one seed of 10-fold CV)
    assert abs(overall - 0.709) < 0.01
    assert abs(young - 0.663) < 0.015


def test_rats_bda_prior_matches_bda3():
    # BDA3 section 5.3 reports the posterior of (alpha, beta) centred near alpha = 2.4, beta = 14.3
    ref = load_result("bda3_rats_hyper").set_index("quantity")
    fit = ExactFit(Counts.from_arrays(RATS_Y, RATS_N), prior="bda")
    a = fit.weights @ (expit(fit.grid_u) * np.exp(fit.grid_v))
    b = fit.weights @ (expit(-fit.grid_u) * np.exp(fit.grid_v))
    assert a == pytest.approx(ref.loc["alpha", "value"], abs=ref.loc["alpha", "tolerance"])
    assert b == pytest.approx(ref.loc["beta", "value"], abs=ref.loc["beta", "tolerance"])
    assert fit.diagnostics["edge_mass"] < 1e-6


def test_label_proxy_agrees_with_ppi_mean_ci_at_large_counts():
    from ppi_py import ppi_mean_ci

    df, keep = _judged_pool()
    res = proxy_ci(df, y_true="y_true", y_pred="y_pred", proxy="judge_label", metric="accuracy")
    row = res.table.loc["all"]
    y = (df["y_true"][keep] == df["y_pred"][keep]).to_numpy(float)
    z = (df["judge_label"] == df["y_pred"]).to_numpy(float)
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_mean_ci(y, z[keep], z[~keep], alpha=0.05))
    assert row["proxy_used"]
    assert row["rate"] == pytest.approx((lo + hi) / 2, abs=2e-3)
    assert row["upper"] - row["lower"] == pytest.approx(hi - lo, rel=0.04)
    assert row["agreement"] == pytest.approx(np.mean(y == z[keep]))


@pytest.mark.slow
def test_bda_prior_agrees_with_exact_engine_on_rat_tumours():
    counts = Counts.from_arrays(RAT_Y, RAT_N)
    post = fit_hierarchical(counts, engine="pymc", prior="bda", draws=4000, random_seed=3)
    exact = fit_hierarchical(counts, engine="exact", prior="bda", draws=4000, random_seed=3)
    sp, se = post.summary(), exact.summary()
    mcse = az.mcse(post.idata, var_names=["theta"])["theta"].to_numpy()
    assert np.all(np.abs(sp["mean"] - se["mean"]).to_numpy() < np.maximum(4 * mcse, 0.002))
    assert np.max(np.abs(sp["lower"] - se["lower"])) < 0.01
    assert np.max(np.abs(sp["upper"] - se["upper"])) < 0.01
    # BDA3 section 5.3 reports the posterior of (alpha, beta) concentrated around
    # alpha ~ 2.4, beta ~ 14 (mean rate alpha / (alpha + beta) ~ 0.14)
    assert 0.12 < post.draws("mu").mean() < 0.16
    assert post.diagnostics["ok"]
