"""The end-to-end example behind ``bayeseval demo``.

The story, on bundled data, with progress printed at every step:

1. fit a logistic regression on German credit with out-of-fold predictions;
2. evaluate it per age group x sex with Wilson intervals and the pooled model;
3. evaluate the COMPAS score's false positive rate per race (small groups) and
   pool them, with a posterior predictive check, a side-by-side table against
   the frequentist intervals and a PSIS-LOO comparison of pooling choices;
4. plan: labels needed for a target width, a budget allocation, and the split
   decision on the fraud-scale example;
5. a short simulated labelling campaign comparing proposal rules;
6. an HTML report with the plots, written to the output folder.
"""

from __future__ import annotations

import base64
import html
import io
import json
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["run_demo"]


class _Progress:
    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total, self.step, self.start, self.quiet = total, 0, time.perf_counter(), quiet

    def __call__(self, message: str) -> None:
        self.step += 1
        if not self.quiet:
            elapsed = time.perf_counter() - self.start
            print(f"\n[{self.step}/{self.total}] {message}  ({elapsed:.1f} s)", flush=True)


def _say(text: str, quiet: bool) -> None:
    if not quiet:
        print(text, flush=True)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _fmt(frame: pd.DataFrame, digits: int = 3) -> str:
    return frame.to_string(float_format=lambda v: f"{v:.{digits}f}")


def german_credit_predictions(random_seed: int = 0, *, features: str = "numeric") -> pd.DataFrame:
    """Out-of-fold predictions of a logistic regression on German credit.

    Returns the bundled data with a ``predicted`` column (1 = good credit),
    from 10-fold stratified cross-validation, so every prediction is made by a
    model that did not see the row.

    Parameters
    ----------
    random_seed : int
        Seed of the fold assignment.
    features : {"numeric", "all"}
        ``numeric`` (default) uses the seven numeric attributes, scaled; this is
        the model of SPEC section 11 (accuracy about 0.71 overall and 0.67 for
        the under-30s). ``all`` adds the one-hot encoded categorical attributes
        (accuracy about 0.75).

    Examples
    --------
    >>> df = german_credit_predictions(random_seed=0)
    >>> len(df), round(float((df["predicted"] == df["good_credit"]).mean()), 2)
    (1000, 0.71)
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from bayeseval._validation import check_method
    from bayeseval.datasets import load_german_credit

    features = check_method(features, ("numeric", "all"), name="features")
    data = load_german_credit()
    label = "good_credit"
    drop = {label, "credit", "sex", "age_group"}
    columns = [c for c in data.columns if c not in drop]
    numeric = [c for c in columns if pd.api.types.is_numeric_dtype(data[c])]
    categorical = [c for c in columns if c not in numeric] if features == "all" else []
    transformers: list[tuple[str, Any, list[str]]] = [("num", StandardScaler(), numeric)]
    if categorical:
        transformers.append(("cat", OneHotEncoder(handle_unknown="ignore"), categorical))
    model = make_pipeline(ColumnTransformer(transformers), LogisticRegression(max_iter=2000))
    cv = StratifiedKFold(n_splits=10, shuffle=True, random_state=random_seed)
    out = data.copy()
    out["predicted"] = cross_val_predict(model, data[numeric + categorical], data[label], cv=cv)
    return out


def run_demo(
    out: str | Path = "bayeseval-report",
    *,
    quick: bool = False,
    random_seed: int = 0,
    as_json: bool = False,
) -> int:
    """Run the whole bayeseval story on bundled data and write an HTML report.

    Parameters
    ----------
    out : str or Path
        Folder for ``report.html`` and the plots (created if missing).
    quick : bool
        Fewer simulated campaigns, for a fast look.
    random_seed : int
        Seed of every random step.
    as_json : bool
        Print a JSON summary at the end instead of the text tables.

    Returns
    -------
    int
        0 on success (the exit code of ``bayeseval demo``).

    Examples
    --------
    >>> run_demo("demo-out", quick=True)  # doctest: +SKIP
    0
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from bayeseval import checks, planning, plots
    from bayeseval.active import simulate
    from bayeseval.active.simulate import synthetic_pool
    from bayeseval.datasets import load_compas
    from bayeseval.report import evaluate

    quiet = as_json
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    progress = _Progress(6, quiet=quiet)
    summary: dict[str, Any] = {}
    sections: list[str] = []
    figures: list[tuple[str, str]] = []

    # 1. classifier with out-of-fold predictions ---------------------------------------------
    progress("German credit: logistic regression (numeric attributes), 10-fold out-of-fold predictions")
    credit = german_credit_predictions(random_seed)
    correct = credit["predicted"] == credit["good_credit"]
    under30 = credit["age"] < 30
    acc_all, acc_u30 = float(correct.mean()), float(correct[under30].mean())
    _say(
        f"accuracy {acc_all:.3f} on all 1,000 applicants, {acc_u30:.3f} on the "
        f"{int(under30.sum())} under 30",
        quiet,
    )
    summary["german_credit"] = {"accuracy": acc_all, "accuracy_under_30": acc_u30}

    # 2. per-group evaluation ------------------------------------------------------------------
    progress("Per group (age group x sex): Wilson intervals, pooled posterior, checks")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        credit_report = evaluate(
            credit,
            y_true="good_credit",
            y_pred="predicted",
            strata=["age_group", "sex"],
            metric="accuracy",
            target_halfwidth=0.05,
            random_seed=random_seed,
        )
    _say(str(credit_report), quiet)
    summary["german_credit"]["per_group"] = json.loads(
        credit_report.table[["trials", "rate", "lower", "upper", "post_mean"]]
        .reset_index()
        .astype({"age_group": str, "sex": str})
        .to_json(orient="records")
    )
    sections.append(
        "<h2>German credit: accuracy per age group and sex</h2>" + credit_report.to_html(plot=True)
    )

    # 3. small groups, pooled and checked ------------------------------------------------------
    progress("COMPAS: false positive rate per race, pooled and checked against the data")
    compas = load_compas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compas_report = evaluate(
            compas,
            y_true="two_year_recid",
            y_pred="predicted_recid",
            strata="race",
            metric="fpr",
            random_seed=random_seed,
        )
        post = compas_report.posterior
        side = checks.compare_frequentist(post)
        ppc = checks.posterior_predictive_check(post, random_seed=random_seed)
        pooling = checks.compare_pooling(compas_report.counts, random_seed=random_seed)
    cols = ["trials", "raw_rate", "wilson_lower", "wilson_upper", "post_mean", "post_lower", "post_upper", "reason"]
    _say("raw rate with its Wilson interval next to the pooled posterior:", quiet)
    _say(_fmt(side[cols]), quiet)
    verdict = pooling.verdict
    _say(f"pooling choice (PSIS-LOO): {verdict}", quiet)
    _say("posterior predictive checks:\n" + _fmt(ppc.global_table), quiet)
    summary["compas"] = {
        "pooled": json.loads(post.summary().reset_index().to_json(orient="records")),
        "pooling_verdict": verdict,
        "ppc_outliers": [str(s) for s in ppc.outliers],
    }
    sections.append(
        "<h2>COMPAS: false positive rate per race</h2>"
        + compas_report.to_html(plot=True)
        + "<h3>Frequentist and Bayesian side by side</h3>"
        + side[cols].to_html(float_format=lambda v: f"{v:.3f}")
        + f"<p><b>Pooling choice (PSIS-LOO):</b> {html.escape(verdict)}</p>"
    )
    fig, ax = plt.subplots(figsize=(7, 4))
    plots.ppc(ppc, ax=ax)
    figures.append(("Posterior predictive check (COMPAS)", _png(fig)))
    plt.close(fig)

    # 4. planning ------------------------------------------------------------------------------
    progress("Planning: labels for a target width, allocation, and the split decision")
    rate_u30 = acc_u30
    n_u30 = planning.sample_size(halfwidth=0.05, rate=rate_u30)
    _say(
        f"to know under-30 accuracy (about {rate_u30:.2f}) within +/-0.05 you need {n_u30} "
        f"labelled under-30 applicants; the data set has {int(under30.sum())}",
        quiet,
    )
    counts = credit_report.counts
    shares = counts.trials / counts.total_trials
    rates = counts.rates.clip(0.01, 0.99)
    budget = 400
    alloc = pd.DataFrame(
        {
            "proportional": planning.allocate(budget, shares.to_numpy(), method="proportional").to_numpy(),
            "optimal": planning.allocate(budget, shares.to_numpy(), rates.to_numpy(), method="optimal").to_numpy(),
            "minimum 60": planning.allocate(
                budget, shares.to_numpy(), rates.to_numpy(), method="optimal", minimum=60
            ).to_numpy(),
        },
        index=[" | ".join(map(str, k)) for k in counts.strata],
    )
    _say(f"allocating {budget} labels across the groups:\n{alloc.to_string()}", quiet)
    fraud = planning.split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    fraud8 = planning.split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323, n_groups=8)
    _say(
        f"fraud-scale split (300,000 rows, 0.42% positive, 60,000 test rows, 323 positives needed): "
        f"{fraud.branch}, test set of {fraud.n_test:,} rows; with 8 groups: {fraud8.branch}",
        quiet,
    )
    summary["planning"] = {
        "under_30_labels_needed": n_u30,
        "allocation": alloc.to_dict(),
        "fraud_split": fraud.branch,
        "fraud_split_test_rows": int(fraud.n_test),
        "fraud_split_8_groups": fraud8.branch,
    }
    sections.append(
        "<h2>Planning</h2>"
        f"<p>Under-30 accuracy within &plusmn;0.05 needs {n_u30} labelled rows.</p>"
        + alloc.to_html()
        + f"<p>Fraud-scale split: <b>{fraud.branch}</b> ({html.escape(fraud.reason)}); "
        f"with 8 groups: <b>{fraud8.branch}</b> ({html.escape(fraud8.reason)}).</p>"
    )
    fig, ax = plt.subplots(figsize=(7, 4))
    plots.allocation(alloc, ax=ax)
    figures.append(("Allocation of 400 labels", _png(fig)))
    plt.close(fig)

    # 5. simulated campaign --------------------------------------------------------------------
    progress("A simulated labelling campaign: labels needed per proposal rule")
    pool = synthetic_pool(n_rows=50_000, n_strata=10, random_seed=random_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate(
            pool,
            strata="stratum",
            y_pred="pred",
            y_true="truth",
            target_halfwidth=0.08,
            rules=("expected_width", "proportional"),
            n_repeats=1 if quick else 3,
            batch_size=20,
            random_seed=random_seed,
            progress=not quiet,
        )
    sim_summary = sim.summary()
    _say(_fmt(sim_summary, 2), quiet)
    summary["campaign"] = json.loads(sim_summary.reset_index().to_json(orient="records"))
    sections.append(
        "<h2>Simulated labelling campaign (target half-width 0.08, 10 strata)</h2>"
        + sim_summary.to_html(float_format=lambda v: f"{v:.2f}")
    )
    fig, ax = plt.subplots(figsize=(7, 4))
    sim.plot(ax=ax)
    figures.append(("Half-width against labels", _png(fig)))
    plt.close(fig)

    # 6. report --------------------------------------------------------------------------------
    progress(f"Writing the HTML report to {out}")
    body = "\n".join(sections)
    body += "".join(
        f'<h3>{html.escape(title)}</h3><img alt="{html.escape(title)}" src="data:image/png;base64,{b64}"/>'
        for title, b64 in figures
    )
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>bayeseval demo</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
        f"</head><body><h1>bayeseval demo</h1>{body}</body></html>"
    )
    report_path = out / "report.html"
    report_path.write_text(page, encoding="utf-8")
    credit_report.save(out / "german_credit.md")
    summary["report"] = str(report_path)
    if as_json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"\nreport written to {report_path}")
    return 0
