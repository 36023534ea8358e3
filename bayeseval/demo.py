"""The end-to-end example behind ``bayeseval demo``.

The story, on bundled data, with progress printed at every step:

1. fit a logistic regression on German credit with out-of-fold predictions;
2. evaluate it per age group x sex with per-group intervals that cover every group and the pooled model;
3. evaluate the COMPAS score's false positive rate per race (small groups) and
   pool them, with a posterior predictive check, a side-by-side table against
   the frequentist intervals and a PSIS-LOO comparison of pooling choices;
4. plan: labels needed for a target width, a budget allocation, and the split
   decision on the fraud-scale example;
5. a short simulated labelling campaign comparing proposal rules;
6. an HTML page with every section and its plots inline, and the German credit
   report as Markdown, written to the output folder (the demo lists both).
"""

from __future__ import annotations

import base64
import html
import json
import time
import warnings
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

import pandas as pd

from bayeseval import checks, plan, plots
from bayeseval._api.validation import check_method, check_positive_int
from bayeseval._api.version import VERSION
from bayeseval._render.html_page import page
from bayeseval.campaign import Budget
from bayeseval.campaign.goals.each import Each
from bayeseval.campaign.simulation import simulate, synthetic_pool
from bayeseval.counts.counts import Counts
from bayeseval.datasets import load_compas, load_german_credit
from bayeseval.plots.base import figure_png
from bayeseval.report import Report, evaluate

__all__ = ["run_demo"]


class _Progress:
    """Numbered step headers; each step's own duration is printed when it ends."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total, self.step, self.quiet = total, 0, quiet
        self.start = self.step_start = time.perf_counter()
        self.times: list[float] = []

    def _end_step(self) -> None:
        if self.step:
            took = time.perf_counter() - self.step_start
            self.times.append(took)
            if not self.quiet:
                print(f"  (step {self.step} took {took:.1f} s)", flush=True)

    def __call__(self, message: str) -> None:
        self._end_step()
        self.step += 1
        self.step_start = time.perf_counter()
        if not self.quiet:
            print(f"\n[{self.step}/{self.total}] {message}", flush=True)

    def done(self) -> None:
        """End the last step; print the total time."""
        self._end_step()
        if not self.quiet:
            print(f"\nall {self.step} steps took {time.perf_counter() - self.start:.1f} s", flush=True)


def _say(text: str, quiet: bool) -> None:
    if not quiet:
        print(text, flush=True)


def _fmt(frame: pd.DataFrame, digits: int = 3) -> str:
    return frame.to_string(float_format=lambda v: f"{v:.{digits}f}")


def german_credit_predictions(*, random_seed: int = 0, features: str = "numeric") -> pd.DataFrame:
    """Out-of-fold predictions of a logistic regression on German credit.

    Returns the bundled data with a ``predicted`` column (1 = good credit),
    from 10-fold stratified cross-validation, so every prediction is made by a
    model that did not see the row.

    Parameters
    ----------
    random_seed : int
        Seed of the fold assignment.
    features : {"numeric", "all"}
        ``numeric`` (default) uses the seven numeric attributes, scaled
        (accuracy about 0.71 overall and 0.67 for the 371 under-30s). ``all`` adds the one-hot encoded categorical attributes
        (accuracy about 0.75).

    Returns
    -------
    pandas.DataFrame
        The German credit data with the ``predicted`` column added.

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

    features = check_method(features, ("numeric", "all"), name="features")
    random_seed = _check_seed(random_seed)
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


def _check_demo_arguments(out: Any, quick: Any, random_seed: Any, as_json: Any) -> Path:
    """Check every argument of :func:`run_demo` before any work; return ``out`` as a Path."""
    if not isinstance(out, (str, PathLike)):
        raise TypeError(f"out must be a folder path, got {out!r}")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"out must be a folder, but {str(path)!r} is an existing file")
    for name, flag in (("quick", quick), ("as_json", as_json)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    _check_seed(random_seed)
    return path


def _check_seed(random_seed: Any) -> int:
    """A seed for numpy and scikit-learn alike: an integer in [0, 2**32)."""
    seed = check_positive_int(random_seed, "random_seed", minimum=0)
    if seed >= 2**32:  # scikit-learn's fold assignment takes seeds below 2**32
        raise ValueError(f"random_seed must be below 2**32, got {seed}")
    return seed


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
        Folder for ``report.html`` (every section with its plots inline) and
        ``german_credit.md`` (created if missing); the demo lists every file it wrote.
    quick : bool
        A wider target (half-width 0.1 instead of 0.08) in the simulated campaign, for a
        fast look.
    random_seed : int
        Seed of every random step.
    as_json : bool
        Print a JSON summary at the end instead of the text tables.

    Returns
    -------
    int
        0 on success (the exit code of ``bayeseval demo``).

    Raises
    ------
    ValueError
        If ``out`` is an existing file, or ``random_seed`` is negative or 2**32 or more.
    TypeError
        If ``random_seed`` is not an integer, or ``quick``/``as_json`` are not booleans.

    Examples
    --------
    >>> run_demo("demo-out", quick=True)  # doctest: +SKIP
    0
    """
    out = _check_demo_arguments(out, quick, random_seed, as_json)
    out.mkdir(parents=True, exist_ok=True)
    demo = _Demo(random_seed=random_seed, quick=quick, quiet=as_json)
    progress = _Progress(6, quiet=demo.quiet)
    progress("German credit: logistic regression (numeric attributes), 10-fold out-of-fold predictions")
    credit = _credit_predictions(demo)
    progress("Per group (age group x sex): per-group intervals, pooled posterior, checks")
    credit_report = _credit_section(demo, credit)
    progress("COMPAS: false positive rate per race, pooled and checked against the data")
    _compas_section(demo)
    progress("Planning: labels for a target width, allocation, and the split decision")
    _planning_section(demo, credit, credit_report)
    progress("A simulated labelling campaign: labels needed per proposal rule")
    _campaign_section(demo)
    progress(f"Writing the reports to {out}")
    _write_report(demo, out, credit_report)
    progress.done()
    demo.summary["step_seconds"] = [round(t, 2) for t in progress.times]
    if as_json:
        print(json.dumps(demo.summary, indent=2, default=str))
    else:
        print("\nfiles written:")
        for path, what in demo.files:
            print(f"  {path}  ({what})")
    return 0


class _Demo:
    """What the demo's sections share: settings, the JSON summary and the report's HTML parts."""

    def __init__(self, *, random_seed: int, quick: bool, quiet: bool) -> None:
        self.random_seed, self.quick, self.quiet = random_seed, quick, quiet
        self.summary: dict[str, Any] = {}
        self.sections: list[str] = []
        self.files: list[tuple[Path, str]] = []

    def say(self, text: str) -> None:
        _say(text, self.quiet)

    def section(self, *parts: str) -> None:
        """One section of the page: its heading, tables and figures together."""
        self.sections.append("<section>" + "".join(parts) + "</section>")

    @staticmethod
    def figure(title: str, draw: Any) -> str:
        """Draw with ``draw(ax)`` on a new figure; return it as an inline HTML figure."""
        png = base64.b64encode(figure_png(draw)).decode("ascii")
        esc = html.escape(title)
        return f"<figure><figcaption>{esc}</figcaption><img alt='{esc}' src='data:image/png;base64,{png}'/></figure>"


def _credit_predictions(demo: _Demo) -> pd.DataFrame:
    """Step 1: out-of-fold predictions on German credit and the accuracy overall and under 30."""
    credit = german_credit_predictions(random_seed=demo.random_seed)
    correct = credit["predicted"] == credit["good_credit"]
    under30 = credit["age"] < 30
    acc_all, acc_u30 = float(correct.mean()), float(correct[under30].mean())
    demo.say(f"accuracy {acc_all:.3f} on all 1,000 applicants, {acc_u30:.3f} on the {int(under30.sum())} under 30")
    demo.summary["german_credit"] = {"accuracy": acc_all, "accuracy_under_30": acc_u30}
    return credit


def _credit_section(demo: _Demo, credit: pd.DataFrame) -> Report:
    """Step 2: the per-group report of the German credit classifier."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        credit_report = evaluate(
            credit,
            y_true="good_credit",
            y_pred="predicted",
            strata=["age_group", "sex"],
            metric="accuracy",
            target_halfwidth=0.05,
            random_seed=demo.random_seed,
        )
    demo.say(str(credit_report))
    demo.summary["german_credit"]["per_group"] = json.loads(
        credit_report.table[["trials", "rate", "lower", "upper", "pooled_mean"]]
        .reset_index()
        .astype({"age_group": str, "sex": str})
        .to_json(orient="records")
    )
    demo.section("<h2>German credit: accuracy per age group and sex</h2>", credit_report.to_html(plot=True))
    return credit_report


_SIDE_COLUMNS = [
    "trials",
    "raw_rate",
    "wilson_lower",
    "wilson_upper",
    "pooled_mean",
    "pooled_lower",
    "pooled_upper",
    "reason",
]


def _compas_section(demo: _Demo) -> None:
    """Step 3: COMPAS's false positive rate per race, pooled, checked and compared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compas_report = evaluate(
            load_compas(),
            y_true="two_year_recid",
            y_pred="predicted_recid",
            strata="race",
            metric="fpr",
            random_seed=demo.random_seed,
        )
        post = compas_report.posterior
        side = checks.compare_frequentist(post)
        ppc = checks.posterior_predictive_check(post, random_seed=demo.random_seed)
        pooling = checks.compare_pooling(compas_report.counts, random_seed=demo.random_seed)
    demo.say("raw rate with its Wilson interval next to the pooled posterior:")
    demo.say(_fmt(side[_SIDE_COLUMNS]))
    verdict = pooling.verdict
    demo.say(f"pooling choice (PSIS-LOO): {verdict}")
    demo.say("posterior predictive checks:\n" + _fmt(ppc.global_table))
    demo.summary["compas"] = {
        "pooled": json.loads(post.summary(read=True).reset_index().to_json(orient="records")),
        "pooling_verdict": verdict,
        "ppc_outliers": [str(s) for s in ppc.outliers],
    }
    demo.section(
        "<h2>COMPAS: false positive rate per race</h2>",
        compas_report.to_html(plot=True),
        "<h3>Frequentist and Bayesian side by side</h3><div class='bv-wide'>",
        side[_SIDE_COLUMNS].to_html(float_format=lambda v: f"{v:.3f}"),
        f"</div><p><b>Pooling choice (PSIS-LOO):</b> {html.escape(verdict)}</p>",
        demo.figure("Posterior predictive check (COMPAS)", lambda ax: plots.ppc(ppc, ax=ax)),
    )


def _allocations(counts: Counts, budget: int) -> pd.DataFrame:
    """``budget`` labels across the strata of ``counts``: proportional, optimal, optimal with 60."""
    shares = (counts.trials / counts.total_trials).to_numpy()
    rates = counts.rates.clip(0.01, 0.99).to_numpy()
    return pd.DataFrame(
        {
            "proportional": plan.allocate(budget, shares, method="proportional").to_numpy(),
            "optimal": plan.allocate(budget, shares, rates, method="optimal").to_numpy(),
            "minimum 60": plan.allocate(budget, shares, rates, method="optimal", minimum=60).to_numpy(),
        },
        index=[" | ".join(map(str, k)) for k in counts.strata],
    )


def _planning_section(demo: _Demo, credit: pd.DataFrame, credit_report: Report) -> None:
    """Step 4: labels for a target width, an allocation of 400 labels, the fraud-scale split."""
    under30 = credit["age"] < 30
    rate_u30 = demo.summary["german_credit"]["accuracy_under_30"]
    n_u30 = plan.sample_size(halfwidth=0.05, rate=rate_u30)
    demo.say(
        f"to know under-30 accuracy (about {rate_u30:.2f}) within +/-0.05 you need {n_u30} "
        f"labelled under-30 applicants; the data set has {int(under30.sum())}"
    )
    budget = 400
    alloc = _allocations(credit_report.counts, budget)
    demo.say(f"allocating {budget} labels across the groups:\n{alloc.to_string()}")
    fraud = plan.split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    fraud8 = plan.split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323, n_groups=8)
    demo.say(
        f"fraud-scale split (300,000 rows, 0.42% positive, 60,000 test rows, 323 positives needed): "
        f"{fraud.branch}, test set of {fraud.n_test:,} rows; with 8 groups: {fraud8.branch}"
    )
    demo.summary["planning"] = {
        "under_30_labels_needed": n_u30,
        "allocation": alloc.to_dict(),
        "fraud_split": fraud.branch,
        "fraud_split_test_rows": int(fraud.n_test),
        "fraud_split_8_groups": fraud8.branch,
    }
    demo.section(
        "<h2>Planning</h2>",
        f"<p>Under-30 accuracy within &plusmn;0.05 needs {n_u30} labelled rows.</p>",
        f"<h3>Allocating {budget} labels across the groups</h3><div class='bv-wide'>",
        alloc.to_html(),
        "</div>",
        demo.figure(f"Allocation of {budget} labels", lambda ax: plots.allocation(alloc, ax=ax)),
        f"<p>Fraud-scale split: <b>{fraud.branch}</b> ({html.escape(fraud.reason)}); "
        f"with 8 groups: <b>{fraud8.branch}</b> ({html.escape(fraud8.reason)}).</p>",
    )


def _campaign_section(demo: _Demo) -> None:
    """Step 5: a short simulated labelling campaign comparing two proposal rules."""
    pool = synthetic_pool(n_rows=50_000, n_strata=10, random_seed=demo.random_seed)
    target = 0.1 if demo.quick else 0.08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate(
            pool,
            strata="stratum",
            y_pred="pred",
            y_true="truth",
            goal=Each(target),
            rules=("expected_width", "proportional"),
            n_repeats=1,
            random_seed=demo.random_seed,
            progress=not demo.quiet,
            budget=Budget(batch_size=200),
        )
    sim_summary = sim.summary()
    demo.say(_fmt(sim_summary, 2))
    demo.summary["campaign"] = json.loads(sim_summary.reset_index().to_json(orient="records"))
    demo.section(
        f"<h2>Simulated labelling campaign (target half-width {target:g}, 10 strata)</h2><div class='bv-wide'>",
        sim_summary.to_html(float_format=lambda v: f"{v:.2f}"),
        "</div>",
        demo.figure("Half-width against labels", lambda ax: plots.plot(sim, ax=ax)),
    )


def _write_report(demo: _Demo, out: Path, credit_report: Report) -> None:
    """Step 6: the HTML page (every section with its own figures) and the German credit report."""
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    meta = (
        f"<ul class='bv-meta'><li><b>bayeseval</b> {html.escape(VERSION)}</li>"
        f"<li><b>created</b> {created}</li><li><b>data</b> bundled German credit and COMPAS "
        f"data, a synthetic labelling pool</li><li><b>random seed</b> {demo.random_seed}</li>"
        "</ul>"
    )
    body = f"<h1>bayeseval demo</h1><div class='bayeseval-report'>{meta}</div>" + "\n".join(demo.sections)
    report_path = out / "report.html"
    report_path.write_text(page("bayeseval demo", body), encoding="utf-8")
    demo.files.append((report_path, "the whole demo as one self-contained HTML page"))
    md_path = credit_report.save(out / "german_credit.md")
    demo.files.append((md_path, "the German credit report of step 2, as Markdown"))
    demo.summary["report"] = str(report_path)
    demo.summary["files"] = [str(path) for path, _ in demo.files]
